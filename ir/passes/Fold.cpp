// fold: an op whose operands are all splat constants becomes a splat
// constant, computed by docs/ir.md's arithmetic (the reference
// interpreter's): a constant's value is first converted to its dtype as
// `convert` does; float ops compute in f32 and round the result once to the
// result dtype (f16 and bf16 through backend/tensor/DType.h, ties to even);
// integers wrap in their width; division floors. Left alone:
//   - a NaN operand, and a float result that is NaN or infinite (a NaN's
//     payload is not pinned down; an overflow should show where it happens);
//   - maximum/minimum of 0.0 against -0.0 (docs/ir.md says the first operand
//     wins a tie, the interpreter returns the second: until they agree);
//   - int -> f16/bf16 converts of integers beyond 2^24 (the interpreter goes
//     through f32 and may round twice);
//   - empty reductions, reduce_sum/reduce_mean over more than 2^24
//     elements (folding simulates the interpreter's sequential f32
//     accumulation), softmax of an infinite splat;
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

// The formulas and constants of docs/ir.md, spelled as the reference
// interpreter spells them (ir/InterpreterElementwise.cpp), so that a folded
// value is bit for bit the interpreter's.
constexpr float kRsqrt2 = 0.70710678118654752f;
constexpr float kSqrt2OverPi = 0.79788456080286536f;

/// The largest count whose sequential f32 sum fold is willing to simulate.
constexpr int64_t kMaxSummed = int64_t{1} << 24;

/// Two's complement in the dtype's width (bool: x != 0).
double wrapInt(DType dtype, int64_t v) {
  switch (dtype) {
  case DType::Bool:
    return v != 0;
  case DType::I8:
    return static_cast<int8_t>(static_cast<uint8_t>(v));
  case DType::I16:
    return static_cast<int16_t>(static_cast<uint16_t>(v));
  default:
    return static_cast<int32_t>(static_cast<uint32_t>(v));
  }
}

/// float -> int: toward zero, saturating at the dtype's range.
double saturateToInt(DType dtype, double v) {
  double lo = dtype == DType::I8 ? -128.0 : dtype == DType::I16 ? -32768.0 : -2147483648.0;
  double hi = dtype == DType::I8 ? 127.0 : dtype == DType::I16 ? 32767.0 : 2147483647.0;
  double t = std::trunc(v);
  return t < lo ? lo : t > hi ? hi : t;
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

/// `convert` of `v` (a value of dtype `from`) to `to`.
std::optional<double> convertValue(DType from, DType to, double v) {
  if (to == DType::Bool)
    return v != 0 ? 1.0 : 0.0;
  if (tensor::isFloat(to)) {
    if (!tensor::isFloat(from) && to != DType::F32 && std::fabs(v) > double(kMaxSummed))
      return std::nullopt; // through f32 first: a second rounding
    return floatResult(to, static_cast<float>(v));
  }
  if (tensor::isFloat(from))
    return saturateToInt(to, v);
  return wrapInt(to, static_cast<int64_t>(v));
}

/// A constant's value converted to its dtype, or nullopt for NaN.
std::optional<double> operandValue(const Op &constant) {
  std::optional<double> raw = splatValue(&constant);
  if (!raw || std::isnan(*raw))
    return std::nullopt;
  DType dtype = constant.type().dtype;
  const Attr *attr = constant.attr("value");
  if (tensor::isInteger(dtype) && std::holds_alternative<int64_t>(*attr))
    return wrapInt(dtype, std::get<int64_t>(*attr));
  if (tensor::isFloat(dtype))
    return tensor::roundToFloatType(dtype, static_cast<float>(*raw)); // may be inf
  return convertValue(DType::F32, dtype, *raw);
}

std::optional<double> foldUnary(OpKind kind, DType from, DType to, double a) {
  if (kind == OpKind::Convert)
    return convertValue(from, to, a);
  if (to == DType::Bool)
    return kind == OpKind::Not ? std::optional<double>(a != 0 ? 0.0 : 1.0) : std::nullopt;
  if (!tensor::isFloat(to)) {
    auto i = static_cast<int64_t>(a);
    switch (kind) {
    case OpKind::Neg:
      return wrapInt(to, -i);
    case OpKind::Abs:
      return wrapInt(to, i < 0 ? -i : i);
    case OpKind::Relu:
      return i > 0 ? a : 0.0;
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
    return floatResult(to, x > 0.0f ? x : 0.0f);
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

int64_t floorDiv(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  int64_t q = a / b;
  if (a % b != 0 && (a < 0) != (b < 0))
    --q;
  return q;
}

/// Integer pow by docs/ir.md: repeated multiplication, wrapping; a negative
/// exponent gives 1 / a^-e truncated.
int64_t intPow(DType dtype, int64_t base, int64_t exponent) {
  if (exponent < 0)
    return base == 1 ? 1 : base == -1 ? (exponent % 2 ? -1 : 1) : 0;
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  for (; exponent; exponent >>= 1, b *= b)
    if (exponent & 1)
      result *= b; // modulo 2^64, then wrapped: the same low bits
  return static_cast<int64_t>(wrapInt(dtype, static_cast<int64_t>(result)));
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
    case OpKind::Rem: {
      // NumPy's remainder: the sign of the divisor.
      float r = std::fmod(x, y);
      if (r != 0.0f && (r < 0.0f) != (y < 0.0f))
        r += y;
      return floatResult(to, r);
    }
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
    return wrapInt(to, i + j);
  case OpKind::Sub:
    return wrapInt(to, i - j);
  case OpKind::Mul:
    return wrapInt(to, i * j);
  case OpKind::Div:
    return wrapInt(to, floorDiv(i, j));
  case OpKind::Rem:
    return wrapInt(to, j == 0 ? 0 : i - floorDiv(i, j) * j);
  case OpKind::Pow:
    return static_cast<double>(intPow(to, i, j));
  case OpKind::Maximum:
    return std::max(a, b);
  case OpKind::Minimum:
    return std::min(a, b);
  default:
    return std::nullopt;
  }
}

/// n copies of v added one by one in f32 from 0.0, as the interpreter adds
/// the reduced elements (for a splat their order does not matter).
std::optional<float> splatSum(float v, int64_t n) {
  if (n > kMaxSummed)
    return std::nullopt;
  float acc = 0.0f;
  for (int64_t k = 0; k < n; ++k)
    acc += v;
  return acc;
}

std::optional<double> foldReduce(const Op &op, DType to, double a) {
  const Type &in = op.operand(0)->type();
  int64_t outCount = op.type().numElements();
  int64_t n = outCount > 0 ? in.numElements() / outCount : 0;
  if (n <= 0)
    return std::nullopt; // an empty reduction: its identity, not the value
  bool isFloat = tensor::isFloat(to);
  switch (op.kind()) {
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
    return a;
  case OpKind::Argmax:
    return 0.0; // every element ties; the first index wins
  case OpKind::ReduceSum:
  case OpKind::ReduceMean: {
    if (!isFloat) {
      if (op.kind() == OpKind::ReduceMean)
        return std::nullopt;
      // i32 accumulation wraps: the low 32 bits of n * v.
      uint64_t sum = static_cast<uint64_t>(n) * static_cast<uint64_t>(static_cast<int64_t>(a));
      return wrapInt(to, static_cast<int64_t>(wrapInt(DType::I32, static_cast<int64_t>(sum))));
    }
    if (!std::isfinite(a))
      return std::nullopt;
    std::optional<float> sum = splatSum(static_cast<float>(a), n);
    if (!sum)
      return std::nullopt;
    if (op.kind() == OpKind::ReduceMean)
      return floatResult(to, *sum / static_cast<float>(n));
    return floatResult(to, *sum);
  }
  case OpKind::Softmax: {
    auto axis = op.intAttr("axis");
    if (!isFloat || !axis || !std::isfinite(a))
      return std::nullopt; // inf - inf is NaN
    int64_t k = *axis < 0 ? *axis + static_cast<int64_t>(in.rank()) : *axis;
    if (k < 0 || k >= static_cast<int64_t>(in.rank()) || in.shape[k] > kMaxSummed)
      return std::nullopt;
    // exp(v - max) is exactly 1, so the sum is exactly the axis length.
    return floatResult(to, 1.0f / static_cast<float>(in.shape[k]));
  }
  default:
    return std::nullopt;
  }
}

std::optional<double> foldLayout(const Op &op, llvm::ArrayRef<double> values) {
  switch (op.kind()) {
  case OpKind::Reshape:
  case OpKind::Transpose:
  case OpKind::Broadcast:
  case OpKind::Slice:
    return values[0];
  case OpKind::Gather: // every id, clamped into range, picks the same value
    if (op.operand(0)->type().numElements() == 0)
      return std::nullopt;
    return values[0];
  case OpKind::Concat:
    for (double v : values)
      if (std::bit_cast<uint64_t>(v) != std::bit_cast<uint64_t>(values[0]))
        return std::nullopt;
    return values[0];
  default:
    return std::nullopt;
  }
}

std::optional<double> foldOp(const Op &op) {
  llvm::SmallVector<double, 3> values;
  for (const Op *operand : op.operands()) {
    if (operand->kind() != OpKind::Constant)
      return std::nullopt;
    std::optional<double> value = operandValue(*operand);
    if (!value)
      return std::nullopt;
    values.push_back(*value);
  }
  if (values.empty())
    return std::nullopt;
  DType to = op.type().dtype;
  switch (opClass(op.kind())) {
  case OpClass::Unary:
    return foldUnary(op.kind(), op.operand(0)->type().dtype, to, values[0]);
  case OpClass::Binary:
    return foldBinary(op.kind(), op.operand(0)->type().dtype, to, values[0], values[1]);
  case OpClass::Ternary: // select(cond, a, b)
    return values[0] != 0 ? values[1] : values[2];
  case OpClass::Reduce:
    return foldReduce(op, to, values[0]);
  case OpClass::Layout:
    return foldLayout(op, values);
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
