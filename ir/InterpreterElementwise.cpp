// The reference interpreter's elementwise ops, leaves and conversions: each
// element computed in fp32 (floats) or int64 (integers), then rounded or
// wrapped to the result dtype. One loop per op kind, no per-element dispatch.
#include "ir/InterpreterKernels.h"

#include <llvm/ADT/Twine.h>

#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace lpu::ir::interp {

using tensor::DType;

Value makeFloat(Type type, std::vector<float> data) {
  Value v;
  v.type = std::move(type);
  v.f = std::make_shared<const std::vector<float>>(std::move(data));
  return v;
}

Value makeInt(Type type, std::vector<int32_t> data) {
  Value v;
  v.type = std::move(type);
  v.i = std::make_shared<const std::vector<int32_t>>(std::move(data));
  return v;
}

llvm::Error opError(const Op &op, const llvm::Twine &message) {
  std::string where;
  if (op.loc().known())
    where = op.loc().file + ":" + std::to_string(op.loc().line) + ":" +
            std::to_string(op.loc().col) + ": ";
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 where + "'" + mnemonic(op.kind()).str() + "': " + message.str());
}

int64_t normalizeAxis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {
#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void roundToHalfF16C(float *data, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(data + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(data + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i)
    data[i] = tensor::halfBitsToFloat(tensor::floatToHalfBits(data[i]));
}

bool hasF16C() {
  static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return has;
}
#endif
} // namespace

void roundTo(DType dtype, float *data, size_t n) {
  if (dtype == DType::F16) {
#if defined(__x86_64__)
    if (hasF16C()) {
      roundToHalfF16C(data, n);
      return;
    }
#endif
    for (size_t i = 0; i < n; ++i)
      data[i] = tensor::halfBitsToFloat(tensor::floatToHalfBits(data[i]));
  } else if (dtype == DType::BF16) {
    for (size_t i = 0; i < n; ++i)
      data[i] = tensor::bf16BitsToFloat(tensor::floatToBF16Bits(data[i]));
  }
}

int32_t wrapInt(DType dtype, int64_t v) {
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

namespace {
/// float -> integer: toward zero (as numpy's astype), saturating, NaN -> 0.
int32_t floatToInt(DType dtype, float x) {
  if (dtype == DType::Bool)
    return x != 0.0f; // NaN is true, as in numpy
  if (std::isnan(x))
    return 0;
  double lo = dtype == DType::I8 ? -128.0 : dtype == DType::I16 ? -32768.0 : -2147483648.0;
  double hi = dtype == DType::I8 ? 127.0 : dtype == DType::I16 ? 32767.0 : 2147483647.0;
  double t = std::trunc(static_cast<double>(x));
  return static_cast<int32_t>(t < lo ? lo : t > hi ? hi : t);
}

/// numpy's remainder: the sign of the divisor.
float floatRem(float a, float b) {
  float r = std::fmod(a, b);
  if (r != 0.0f && ((r < 0.0f) != (b < 0.0f)))
    r += b;
  return r;
}

int64_t floorDiv(int64_t a, int64_t b) {
  if (b == 0)
    return 0; // as numpy, without the warning
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

int64_t floorRem(int64_t a, int64_t b) { return b == 0 ? 0 : a - floorDiv(a, b) * b; }

int64_t intPow(int64_t base, int64_t exp) {
  if (exp < 0)
    return base == 1 ? 1 : base == -1 ? (exp % 2 ? -1 : 1) : 0;
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  for (; exp; exp >>= 1, b *= b)
    if (exp & 1)
      result *= b; // wraps, as integer arithmetic on the machine
  return static_cast<int64_t>(result);
}

// NaN wins; on ties (0 and -0) the first operand.
float nanMax(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : (b > a ? b : a); }
float nanMin(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : (b < a ? b : a); }

template <typename F> void mapUnary(const float *x, float *y, size_t n, F f) {
  for (size_t i = 0; i < n; ++i)
    y[i] = f(x[i]);
}

template <typename F> void mapBinary(const float *a, const float *b, float *y, size_t n, F f) {
  for (size_t i = 0; i < n; ++i)
    y[i] = f(a[i], b[i]);
}

template <typename T, typename F>
void compare(const T *a, const T *b, int32_t *y, size_t n, F f) {
  for (size_t i = 0; i < n; ++i)
    y[i] = f(a[i], b[i]) ? 1 : 0;
}

template <typename T> llvm::Expected<Value> compareOp(const Op &op, const T *a, const T *b, size_t n) {
  std::vector<int32_t> y(n);
  switch (op.kind()) {
  case OpKind::Eq: compare(a, b, y.data(), n, [](T p, T q) { return p == q; }); break;
  case OpKind::Ne: compare(a, b, y.data(), n, [](T p, T q) { return p != q; }); break;
  case OpKind::Lt: compare(a, b, y.data(), n, [](T p, T q) { return p < q; }); break;
  case OpKind::Le: compare(a, b, y.data(), n, [](T p, T q) { return p <= q; }); break;
  case OpKind::Gt: compare(a, b, y.data(), n, [](T p, T q) { return p > q; }); break;
  case OpKind::Ge: compare(a, b, y.data(), n, [](T p, T q) { return p >= q; }); break;
  default: return opError(op, "not a comparison");
  }
  return makeInt(op.type(), std::move(y));
}

bool isComparison(OpKind k) {
  return k == OpKind::Eq || k == OpKind::Ne || k == OpKind::Lt || k == OpKind::Le ||
         k == OpKind::Gt || k == OpKind::Ge;
}

llvm::Expected<Value> unaryFloat(const Op &op, const Value &x) {
  size_t n = x.f->size();
  std::vector<float> y(n);
  const float *in = x.floats();
  float *out = y.data();
  switch (op.kind()) {
  case OpKind::Neg: mapUnary(in, out, n, [](float v) { return -v; }); break;
  case OpKind::Abs: mapUnary(in, out, n, [](float v) { return std::fabs(v); }); break;
  case OpKind::Relu:
    mapUnary(in, out, n, [](float v) { return std::isnan(v) || v > 0.0f ? v : 0.0f; });
    break;
  case OpKind::Gelu:
    mapUnary(in, out, n, [](float v) {
      return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    });
    break;
  case OpKind::GeluTanh:
    mapUnary(in, out, n, [](float v) {
      return 0.5f * v * (1.0f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    });
    break;
  case OpKind::Silu: mapUnary(in, out, n, [](float v) { return v / (1.0f + std::exp(-v)); }); break;
  case OpKind::Sigmoid:
    mapUnary(in, out, n, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
    break;
  case OpKind::Tanh: mapUnary(in, out, n, [](float v) { return std::tanh(v); }); break;
  case OpKind::Exp: mapUnary(in, out, n, [](float v) { return std::exp(v); }); break;
  case OpKind::Log: mapUnary(in, out, n, [](float v) { return std::log(v); }); break;
  case OpKind::Sqrt: mapUnary(in, out, n, [](float v) { return std::sqrt(v); }); break;
  case OpKind::Rsqrt: mapUnary(in, out, n, [](float v) { return 1.0f / std::sqrt(v); }); break;
  default:
    return opError(op, "not defined on " + tensor::dtypeName(x.type.dtype));
  }
  roundTo(op.type().dtype, out, n);
  return makeFloat(op.type(), std::move(y));
}

llvm::Expected<Value> unaryInt(const Op &op, const Value &x) {
  size_t n = x.i->size();
  DType dt = op.type().dtype;
  std::vector<int32_t> y(n);
  const int32_t *in = x.ints();
  switch (op.kind()) {
  case OpKind::Neg:
    for (size_t k = 0; k < n; ++k) y[k] = wrapInt(dt, -int64_t(in[k]));
    break;
  case OpKind::Abs:
    for (size_t k = 0; k < n; ++k) y[k] = wrapInt(dt, in[k] < 0 ? -int64_t(in[k]) : in[k]);
    break;
  case OpKind::Relu:
    for (size_t k = 0; k < n; ++k) y[k] = in[k] > 0 ? in[k] : 0;
    break;
  case OpKind::Not:
    for (size_t k = 0; k < n; ++k) y[k] = dt == DType::Bool ? !in[k] : wrapInt(dt, ~int64_t(in[k]));
    break;
  default:
    return opError(op, "not defined on " + tensor::dtypeName(x.type.dtype));
  }
  return makeInt(op.type(), std::move(y));
}

llvm::Expected<Value> binaryFloat(const Op &op, const Value &a, const Value &b) {
  size_t n = a.f->size();
  const float *p = a.floats(), *q = b.floats();
  if (isComparison(op.kind()))
    return compareOp(op, p, q, n);
  std::vector<float> y(n);
  float *out = y.data();
  switch (op.kind()) {
  case OpKind::Add: mapBinary(p, q, out, n, [](float u, float v) { return u + v; }); break;
  case OpKind::Sub: mapBinary(p, q, out, n, [](float u, float v) { return u - v; }); break;
  case OpKind::Mul: mapBinary(p, q, out, n, [](float u, float v) { return u * v; }); break;
  case OpKind::Div: mapBinary(p, q, out, n, [](float u, float v) { return u / v; }); break;
  case OpKind::Rem: mapBinary(p, q, out, n, floatRem); break;
  case OpKind::Pow: mapBinary(p, q, out, n, [](float u, float v) { return std::pow(u, v); }); break;
  case OpKind::Maximum: mapBinary(p, q, out, n, nanMax); break;
  case OpKind::Minimum: mapBinary(p, q, out, n, nanMin); break;
  default:
    return opError(op, "not defined on " + tensor::dtypeName(a.type.dtype));
  }
  roundTo(op.type().dtype, out, n);
  return makeFloat(op.type(), std::move(y));
}

llvm::Expected<Value> binaryInt(const Op &op, const Value &a, const Value &b) {
  size_t n = a.i->size();
  const int32_t *p = a.ints(), *q = b.ints();
  if (isComparison(op.kind()))
    return compareOp(op, p, q, n);
  DType dt = op.type().dtype;
  bool isBool = dt == DType::Bool;
  std::vector<int32_t> y(n);
  auto map = [&](auto f) {
    for (size_t k = 0; k < n; ++k)
      y[k] = wrapInt(dt, f(int64_t(p[k]), int64_t(q[k])));
  };
  switch (op.kind()) {
  case OpKind::And: map([&](int64_t u, int64_t v) { return isBool ? (u && v) : (u & v); }); break;
  case OpKind::Or: map([&](int64_t u, int64_t v) { return isBool ? (u || v) : (u | v); }); break;
  default:
    if (isBool)
      return opError(op, "not defined on bool");
    switch (op.kind()) {
    case OpKind::Add: map([](int64_t u, int64_t v) { return u + v; }); break;
    case OpKind::Sub: map([](int64_t u, int64_t v) { return u - v; }); break;
    case OpKind::Mul: map([](int64_t u, int64_t v) { return u * v; }); break;
    case OpKind::Div: map(floorDiv); break;
    case OpKind::Rem: map(floorRem); break;
    case OpKind::Pow: map(intPow); break;
    case OpKind::Maximum: map([](int64_t u, int64_t v) { return v > u ? v : u; }); break;
    case OpKind::Minimum: map([](int64_t u, int64_t v) { return v < u ? v : u; }); break;
    default:
      return opError(op, "not defined on " + tensor::dtypeName(a.type.dtype));
    }
  }
  return makeInt(op.type(), std::move(y));
}

Value convert(const Op &op, const Value &x) {
  DType to = op.type().dtype;
  if (tensor::isFloat(to)) {
    std::vector<float> y;
    if (x.isFloat()) {
      y = *x.f;
    } else {
      y.resize(x.i->size());
      for (size_t k = 0; k < y.size(); ++k)
        y[k] = static_cast<float>((*x.i)[k]);
    }
    roundTo(to, y.data(), y.size());
    return makeFloat(op.type(), std::move(y));
  }
  std::vector<int32_t> y;
  if (x.isFloat()) {
    y.resize(x.f->size());
    for (size_t k = 0; k < y.size(); ++k)
      y[k] = floatToInt(to, (*x.f)[k]);
  } else {
    y.resize(x.i->size());
    for (size_t k = 0; k < y.size(); ++k)
      y[k] = wrapInt(to, (*x.i)[k]);
  }
  return makeInt(op.type(), std::move(y));
}

template <typename T>
std::vector<T> selectData(const int32_t *c, const T *a, const T *b, size_t n) {
  std::vector<T> y(n);
  for (size_t k = 0; k < n; ++k)
    y[k] = c[k] ? a[k] : b[k];
  return y;
}
} // namespace

llvm::Expected<Value> evalElementwise(const Op &op, llvm::ArrayRef<const Value *> args) {
  if (op.kind() == OpKind::Convert)
    return convert(op, *args[0]);
  if (op.kind() == OpKind::Select) {
    const Value &c = *args[0], &a = *args[1], &b = *args[2];
    if (c.isFloat())
      return opError(op, "the condition must be bool");
    size_t n = c.i->size();
    if (a.isFloat())
      return makeFloat(op.type(), selectData(c.ints(), a.floats(), b.floats(), n));
    return makeInt(op.type(), selectData(c.ints(), a.ints(), b.ints(), n));
  }
  for (const Value *v : args)
    if (v->type.shape != args[0]->type.shape || v->isFloat() != args[0]->isFloat())
      return opError(op, "operands differ in shape or kind: " + args[0]->type.str() + " and " +
                             v->type.str());
  if (args.size() == 1)
    return args[0]->isFloat() ? unaryFloat(op, *args[0]) : unaryInt(op, *args[0]);
  return args[0]->isFloat() ? binaryFloat(op, *args[0], *args[1])
                            : binaryInt(op, *args[0], *args[1]);
}

llvm::Expected<Value> evalLeaf(const Op &op) {
  const Type &t = op.type();
  size_t n = static_cast<size_t>(t.numElements());
  bool isFloat = tensor::isFloat(t.dtype);
  if (op.kind() == OpKind::Constant) {
    std::optional<double> value = op.floatAttr("value");
    if (!value) {
      std::optional<bool> b = op.boolAttr("value");
      if (!b)
        return opError(op, "needs a numeric 'value' attribute");
      value = *b ? 1.0 : 0.0;
    }
    if (isFloat) {
      std::vector<float> y(n, static_cast<float>(*value));
      roundTo(t.dtype, y.data(), n);
      return makeFloat(t, std::move(y));
    }
    std::optional<int64_t> iv = op.intAttr("value");
    int32_t v = iv ? wrapInt(t.dtype, *iv) : floatToInt(t.dtype, static_cast<float>(*value));
    return makeInt(t, std::vector<int32_t>(n, v));
  }
  if (op.kind() == OpKind::Iota) {
    int64_t axis = normalizeAxis(op.intAttr("axis").value_or(0), t.rank());
    if (t.rank() == 0 || axis < 0 || axis >= static_cast<int64_t>(t.rank()))
      return opError(op, "axis out of range for " + t.str());
    std::vector<int64_t> strides = stridesOf(t.shape);
    int64_t stride = strides[axis], size = t.shape[axis];
    if (isFloat) {
      std::vector<float> y(n);
      for (size_t k = 0; k < n; ++k)
        y[k] = static_cast<float>((static_cast<int64_t>(k) / stride) % size);
      roundTo(t.dtype, y.data(), n);
      return makeFloat(t, std::move(y));
    }
    std::vector<int32_t> y(n);
    for (size_t k = 0; k < n; ++k)
      y[k] = wrapInt(t.dtype, (static_cast<int64_t>(k) / stride) % size);
    return makeInt(t, std::move(y));
  }
  return opError(op, "is not a constant leaf");
}

} // namespace lpu::ir::interp
