// fold: an op whose operands are all splat constants becomes a splat
// constant, computed with the reference interpreter's arithmetic: operands
// are first rounded to their dtype, float ops compute in f32 and round the
// f32 result to the result dtype (f16 and bf16 through backend/tensor/DType.h,
// ties to even). An op is left alone whenever the language does not pin the
// answer down or the answer would not be a finite constant:
//   - any float operand NaN, or a result that is NaN or infinite;
//   - integer results that overflow their dtype (wrapping is not promised),
//     division or remainder by zero, division with a remainder and
//     operands of different signs (truncating and flooring disagree),
//     rem of a negative operand, pow with a negative exponent;
//   - float -> integer converts of non-integral or out-of-range values;
//   - maximum/minimum of 0.0 and -0.0, relu of -0.0;
//   - reduce_sum and reduce_mean unless every partial sum is exact in f32
//     (then any order of accumulation gives n * v, and mean gives v), the
//     sum of -0.0 (the accumulator's starting zero decides its sign), and
//     integer reduce_mean;
//   - contractions (matmul, conv2d, pooling) and anything reading an iota,
//     input or param: only splat constants fold.
// docs/passes.md lists every folded op.
#include "ir/passes/PassUtil.h"
#include "ir/passes/Passes.h"

#include <bit>
#include <cmath>
#include <limits>

namespace lpu::ir {

namespace {

// The constants and formulas are the reference interpreter's
// (ir/InterpreterElementwise.cpp), so that a folded value is the value the
// interpreter would have computed.
constexpr float kRsqrt2 = 0.70710678118654752f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;

bool fitsIn(DType dtype, double value) {
  switch (dtype) {
  case DType::Bool:
    return value == 0 || value == 1;
  case DType::I8:
    return value >= -128 && value <= 127;
  case DType::I16:
    return value >= -32768 && value <= 32767;
  case DType::I32:
    return value >= -2147483648.0 && value <= 2147483647.0;
  default:
    return true;
  }
}

/// A splat operand's value as the interpreter holds it: rounded to its dtype.
double operandValue(DType dtype, double raw) {
  if (tensor::isFloat(dtype))
    return tensor::roundToFloatType(dtype, static_cast<float>(raw));
  if (dtype == DType::Bool)
    return raw != 0 ? 1 : 0;
  return std::trunc(raw);
}

/// The f32 result of a float op, rounded to `dtype`; nullopt unless finite.
std::optional<double> floatResult(DType dtype, float value) {
  if (!std::isfinite(value))
    return std::nullopt;
  float rounded = tensor::roundToFloatType(dtype, value);
  if (!std::isfinite(rounded))
    return std::nullopt;
  return rounded;
}

std::optional<double> intResult(DType dtype, double value) {
  if (!fitsIn(dtype, value))
    return std::nullopt;
  return value;
}

std::optional<double> foldUnary(OpKind kind, DType to, double a) {
  if (kind == OpKind::Convert) {
    if (tensor::isFloat(to))
      return floatResult(to, static_cast<float>(a));
    if (to == DType::Bool)
      return a != 0 ? 1 : 0;
    if (a != std::trunc(a))
      return std::nullopt;
    return intResult(to, a);
  }
  if (!tensor::isFloat(to)) {
    bool isBool = to == DType::Bool;
    switch (kind) {
    case OpKind::Neg:
      return isBool ? std::nullopt : intResult(to, -a);
    case OpKind::Abs:
      return isBool ? std::nullopt : intResult(to, std::fabs(a));
    case OpKind::Relu:
      return isBool ? std::nullopt : intResult(to, a > 0 ? a : 0);
    case OpKind::Not:
      if (isBool)
        return a != 0 ? 0 : 1;
      return intResult(to, static_cast<double>(~static_cast<int64_t>(a)));
    default:
      return std::nullopt;
    }
  }
  float x = static_cast<float>(a);
  switch (kind) {
  case OpKind::Neg:
    return floatResult(to, -x);
  case OpKind::Abs:
    return floatResult(to, std::fabs(x));
  case OpKind::Relu:
    if (x == 0 && std::signbit(x))
      return std::nullopt; // max(-0.0, 0.0) may give either zero
    return floatResult(to, x > 0 ? x : 0.0f);
  case OpKind::Gelu:
    return floatResult(to, 0.5f * x * (1.0f + std::erf(x * kRsqrt2)));
  case OpKind::GeluTanh:
    return floatResult(to, 0.5f * x *
                               (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x))));
  case OpKind::Silu:
    return floatResult(to, x / (1.0f + std::exp(-x)));
  case OpKind::Sigmoid:
    return floatResult(to, 1.0f / (1.0f + std::exp(-x)));
  case OpKind::Tanh:
    return floatResult(to, std::tanh(x));
  case OpKind::Exp:
    return floatResult(to, std::exp(x));
  case OpKind::Log:
    return floatResult(to, std::log(x));
  case OpKind::Sqrt:
    return floatResult(to, std::sqrt(x));
  case OpKind::Rsqrt:
    return floatResult(to, 1.0f / std::sqrt(x));
  default:
    return std::nullopt;
  }
}

std::optional<double> compare(OpKind kind, double a, double b) {
  switch (kind) {
  case OpKind::Eq:
    return a == b;
  case OpKind::Ne:
    return a != b;
  case OpKind::Lt:
    return a < b;
  case OpKind::Le:
    return a <= b;
  case OpKind::Gt:
    return a > b;
  case OpKind::Ge:
    return a >= b;
  default:
    return std::nullopt;
  }
}

std::optional<double> foldBinary(OpKind kind, DType dtype, DType to, double a, double b) {
  if (to == DType::Bool && dtype != DType::Bool)
    return compare(kind, a, b);
  if (dtype == DType::Bool) {
    if (kind == OpKind::And)
      return a != 0 && b != 0;
    if (kind == OpKind::Or)
      return a != 0 || b != 0;
    return compare(kind, a, b);
  }
  if (tensor::isFloat(dtype)) {
    float x = static_cast<float>(a), y = static_cast<float>(b);
    switch (kind) {
    case OpKind::Add:
      return floatResult(to, x + y);
    case OpKind::Sub:
      return floatResult(to, x - y);
    case OpKind::Mul:
      return floatResult(to, x * y);
    case OpKind::Div:
      return floatResult(to, x / y);
    case OpKind::Rem:
      // fmod truncates, NumPy's remainder floors: equal for x >= 0, y > 0.
      if (!(x >= 0 && y > 0))
        return std::nullopt;
      return floatResult(to, std::fmod(x, y));
    case OpKind::Pow:
      return floatResult(to, std::pow(x, y));
    case OpKind::Maximum:
    case OpKind::Minimum:
      if (x == y && std::bit_cast<uint32_t>(x) != std::bit_cast<uint32_t>(y))
        return std::nullopt; // 0.0 against -0.0
      return floatResult(to, kind == OpKind::Maximum ? std::max(x, y) : std::min(x, y));
    default:
      return std::nullopt;
    }
  }
  auto i = static_cast<int64_t>(a), j = static_cast<int64_t>(b);
  switch (kind) {
  case OpKind::Add:
    return intResult(to, a + b);
  case OpKind::Sub:
    return intResult(to, a - b);
  case OpKind::Mul:
    return intResult(to, a * b);
  case OpKind::Div:
    if (j == 0 || (i % j != 0 && (i < 0) != (j < 0)))
      return std::nullopt;
    return intResult(to, static_cast<double>(i / j));
  case OpKind::Rem:
    if (i < 0 || j <= 0)
      return std::nullopt;
    return intResult(to, static_cast<double>(i % j));
  case OpKind::Pow: {
    if (j < 0)
      return std::nullopt;
    double result = 1;
    for (int64_t k = 0; k < j; ++k) {
      result *= a;
      if (!fitsIn(to, result))
        return std::nullopt;
      if (result == 0 || result == 1)
        break; // stays there (a is 0 or 1)
    }
    return result;
  }
  case OpKind::Maximum:
    return std::max(a, b);
  case OpKind::Minimum:
    return std::min(a, b);
  case OpKind::And:
    return static_cast<double>(i & j);
  case OpKind::Or:
    return static_cast<double>(i | j);
  default:
    return std::nullopt;
  }
}

/// A sum of n copies of v in which every partial sum is exact in f32, so
/// that every order of accumulation gives the same result; nullopt if not.
std::optional<float> exactSplatSum(float v, int64_t n) {
  if (v == 0)
    return std::signbit(v) ? std::nullopt : std::optional<float>(0.0f);
  int exponent = 0;
  double mantissa = std::frexp(static_cast<double>(v), &exponent); // |m| in [0.5, 1)
  // The odd integer significand of v: v = odd * 2^k.
  auto significand = static_cast<uint64_t>(std::ldexp(std::fabs(mantissa), 24));
  while (significand % 2 == 0)
    significand /= 2;
  if (n <= 0 || significand * static_cast<uint64_t>(n) >= (uint64_t{1} << 24))
    return std::nullopt;
  double sum = static_cast<double>(v) * static_cast<double>(n);
  if (!std::isfinite(static_cast<float>(sum)))
    return std::nullopt;
  return static_cast<float>(sum);
}

std::optional<double> foldReduce(const Op &op, DType to, double a) {
  const Type &in = op.operand(0)->type();
  int64_t outCount = op.type().numElements();
  int64_t n = outCount > 0 ? in.numElements() / outCount : 0;
  if (n <= 0)
    return std::nullopt; // reducing nothing: the identity of each reduction
  bool isFloat = tensor::isFloat(to);
  switch (op.kind()) {
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
    return a;
  case OpKind::Argmax:
    return 0.0; // every element ties; the first index wins, as in NumPy
  case OpKind::ReduceSum:
    if (isFloat && !std::isfinite(a))
      return std::nullopt;
    if (isFloat) {
      std::optional<float> sum = exactSplatSum(static_cast<float>(a), n);
      return sum ? floatResult(to, *sum) : std::nullopt;
    }
    return intResult(to, a * static_cast<double>(n));
  case OpKind::ReduceMean:
    if (!isFloat || !std::isfinite(a) || !exactSplatSum(static_cast<float>(a), n))
      return std::nullopt;
    return a; // the exact sum n * v divided by n
  case OpKind::Softmax: {
    auto axis = op.intAttr("axis");
    if (!isFloat || !axis || !std::isfinite(a))
      return std::nullopt; // inf - inf is NaN
    int64_t k = *axis < 0 ? *axis + static_cast<int64_t>(in.rank()) : *axis;
    if (k < 0 || k >= static_cast<int64_t>(in.rank()) || in.shape[k] >= (int64_t{1} << 24))
      return std::nullopt;
    // exp(v - max) is exactly 1, the sum exactly the axis length.
    return floatResult(to, 1.0f / static_cast<float>(in.shape[k]));
  }
  default:
    return std::nullopt;
  }
}

std::optional<double> foldLayout(const Op &op, llvm::ArrayRef<double> values,
                                 llvm::ArrayRef<double> raw) {
  switch (op.kind()) {
  case OpKind::Reshape:
  case OpKind::Transpose:
  case OpKind::Broadcast:
  case OpKind::Slice:
    return raw[0];
  case OpKind::Concat:
    for (double v : values)
      if (std::bit_cast<uint64_t>(v) != std::bit_cast<uint64_t>(values[0]))
        return std::nullopt;
    return raw[0];
  case OpKind::Gather: {
    auto axis = op.intAttr("axis");
    const Type &table = op.operand(0)->type();
    if (!axis)
      return std::nullopt;
    int64_t k = *axis < 0 ? *axis + static_cast<int64_t>(table.rank()) : *axis;
    if (k < 0 || k >= static_cast<int64_t>(table.rank()) || values[1] < 0 ||
        values[1] >= static_cast<double>(table.shape[k]))
      return std::nullopt; // an out-of-range id is the run time's to report
    return raw[0];
  }
  default:
    return std::nullopt;
  }
}

std::optional<double> foldOp(const Op &op) {
  llvm::SmallVector<double, 3> values, raw;
  for (const Op *operand : op.operands()) {
    std::optional<double> v = splatValue(operand);
    if (!v)
      return std::nullopt;
    double value = operandValue(operand->type().dtype, *v);
    if (std::isnan(value))
      return std::nullopt;
    raw.push_back(*v);
    values.push_back(value);
  }
  if (values.empty())
    return std::nullopt;
  DType to = op.type().dtype;
  switch (opClass(op.kind())) {
  case OpClass::Unary:
    return foldUnary(op.kind(), to, values[0]);
  case OpClass::Binary:
    return foldBinary(op.kind(), op.operand(0)->type().dtype, to, values[0], values[1]);
  case OpClass::Ternary: // select(cond, a, b)
    return values[0] != 0 ? values[1] : values[2];
  case OpClass::Reduce:
    return foldReduce(op, to, values[0]);
  case OpClass::Layout:
    return foldLayout(op, values, raw);
  default:
    return std::nullopt;
  }
}

class Fold : public Pass {
public:
  llvm::StringRef name() const override { return "fold"; }

  bool run(Function &fn) override {
    return rewriteOps(fn, [&](Op &op, bool &) -> Op * {
      if (op.kind() == OpKind::Return)
        return nullptr;
      std::optional<double> value = foldOp(op);
      return value ? makeSplat(fn, &op, op.type(), *value, op.loc()) : nullptr;
    });
  }
};

} // namespace

std::unique_ptr<Pass> createFoldPass() { return std::make_unique<Fold>(); }

} // namespace lpu::ir
