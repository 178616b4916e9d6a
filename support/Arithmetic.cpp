// Compiled with -ffp-contract=off (CMakeLists.txt): a fused multiply-add
// would round differently from the separate fp32 operations docs/ir.md
// specifies, and differently between hosts.
#include "support/Arithmetic.h"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace lpu::tensor {

using Op = ElementwiseOp;

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
    data[i] = halfBitsToFloat(floatToHalfBits(data[i]));
}

bool hasF16C() {
  static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return has;
}
#endif

/// NumPy's remainder: fmod, moved to the sign of the divisor; a zero
/// result is a zero of the divisor's sign (as npy_divmod: -4 % 2 is +0).
float floatRem(float a, float b) {
  float r = std::fmod(a, b);
  if (r == 0.0f)
    return b == 0.0f ? r : std::copysign(0.0f, b);
  if ((r < 0.0f) != (b < 0.0f))
    r += b;
  return r;
}

/// Floor division (NumPy //); by 0 gives 0. Operands are int32 values, so
/// MIN / -1 does not overflow int64 and wraps later.
int64_t floorDiv(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
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
      result *= b; // wraps; the low bits are those of the wrapped product
  return static_cast<int64_t>(result);
}

// NaN if either is NaN (the first NaN operand, as NumPy); the first operand
// on ties (0 and -0).
inline float nanMax(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) ? a : b;
  return b > a ? b : a;
}
inline float nanMin(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) ? a : b;
  return b < a ? b : a;
}

template <typename F> inline void mapUnary(const float *x, float *y, size_t n, F f) {
  for (size_t i = 0; i < n; ++i)
    y[i] = f(x[i]);
}

template <typename F>
inline void mapBinary(const float *a, const float *b, float *y, size_t n, F f) {
  for (size_t i = 0; i < n; ++i)
    y[i] = f(a[i], b[i]);
}

template <typename T, typename F>
inline void compare(const T *a, const T *b, int32_t *y, size_t n, F f) {
  for (size_t i = 0; i < n; ++i)
    y[i] = f(a[i], b[i]) ? 1 : 0;
}

template <typename T> bool compareAny(Op op, const T *a, const T *b, int32_t *y, size_t n) {
  switch (op) {
  case Op::Eq: compare(a, b, y, n, [](T p, T q) { return p == q; }); return true;
  case Op::Ne: compare(a, b, y, n, [](T p, T q) { return p != q; }); return true;
  case Op::Lt: compare(a, b, y, n, [](T p, T q) { return p < q; }); return true;
  case Op::Le: compare(a, b, y, n, [](T p, T q) { return p <= q; }); return true;
  case Op::Gt: compare(a, b, y, n, [](T p, T q) { return p > q; }); return true;
  case Op::Ge: compare(a, b, y, n, [](T p, T q) { return p >= q; }); return true;
  default: return false;
  }
}
} // namespace

int32_t wrapInt(DType type, int64_t v) {
  switch (type) {
  case DType::Bool: return v != 0;
  case DType::I8: return static_cast<int8_t>(static_cast<uint8_t>(v));
  case DType::I16: return static_cast<int16_t>(static_cast<uint16_t>(v));
  default: return static_cast<int32_t>(static_cast<uint32_t>(v));
  }
}

void roundTo(DType type, float *data, size_t n) {
  if (type == DType::F16) {
#if defined(__x86_64__)
    if (hasF16C()) {
      roundToHalfF16C(data, n);
      return;
    }
#endif
    for (size_t i = 0; i < n; ++i)
      data[i] = halfBitsToFloat(floatToHalfBits(data[i]));
  } else if (type == DType::BF16) {
    for (size_t i = 0; i < n; ++i)
      data[i] = bf16BitsToFloat(floatToBF16Bits(data[i]));
  }
}

int32_t floatToInt(DType to, float x, FloatToIntRounding rounding) {
  if (to == DType::Bool)
    return x != 0.0f; // NaN is true, as in NumPy
  if (std::isnan(x))
    return 0;
  const double lo = double(integerRange(to).first), hi = double(integerRange(to).second);
  double t = rounding == FloatToIntRounding::TowardZero ? std::trunc(double(x))
                                                        : std::nearbyint(double(x));
  return static_cast<int32_t>(t < lo ? lo : t > hi ? hi : t);
}

bool unaryFloat(Op op, DType result, const float *in, float *out, size_t n) {
  switch (op) {
  case Op::Neg: mapUnary(in, out, n, [](float v) { return -v; }); break;
  case Op::Abs: mapUnary(in, out, n, [](float v) { return std::fabs(v); }); break;
  case Op::Relu:
    mapUnary(in, out, n, [](float v) { return std::isnan(v) || v > 0.0f ? v : 0.0f; });
    break;
  case Op::Gelu:
    mapUnary(in, out, n, [](float v) {
      return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    });
    break;
  case Op::GeluTanh:
    mapUnary(in, out, n, [](float v) {
      return 0.5f * v * (1.0f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    });
    break;
  case Op::Silu: mapUnary(in, out, n, [](float v) { return v / (1.0f + std::exp(-v)); }); break;
  case Op::Sigmoid:
    mapUnary(in, out, n, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
    break;
  case Op::Tanh: mapUnary(in, out, n, [](float v) { return std::tanh(v); }); break;
  case Op::Exp: mapUnary(in, out, n, [](float v) { return std::exp(v); }); break;
  case Op::Log: mapUnary(in, out, n, [](float v) { return std::log(v); }); break;
  case Op::Sqrt: mapUnary(in, out, n, [](float v) { return std::sqrt(v); }); break;
  case Op::Rsqrt: mapUnary(in, out, n, [](float v) { return 1.0f / std::sqrt(v); }); break;
  case Op::Softplus: // log(1 + exp(v)), without exp's overflow past v = 88
    mapUnary(in, out, n, [](float v) {
      return v > 0.0f ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
    });
    break;
  default: return false;
  }
  roundTo(result, out, n);
  return true;
}

bool binaryFloat(Op op, DType result, const float *p, const float *q, float *out, size_t n) {
  switch (op) {
  case Op::Add: mapBinary(p, q, out, n, [](float u, float v) { return u + v; }); break;
  case Op::Sub: mapBinary(p, q, out, n, [](float u, float v) { return u - v; }); break;
  case Op::Mul: mapBinary(p, q, out, n, [](float u, float v) { return u * v; }); break;
  case Op::Div: mapBinary(p, q, out, n, [](float u, float v) { return u / v; }); break;
  case Op::Rem: mapBinary(p, q, out, n, floatRem); break;
  case Op::Pow: mapBinary(p, q, out, n, [](float u, float v) { return std::pow(u, v); }); break;
  case Op::Maximum: mapBinary(p, q, out, n, nanMax); break;
  case Op::Minimum: mapBinary(p, q, out, n, nanMin); break;
  default: return false;
  }
  roundTo(result, out, n);
  return true;
}

bool unaryInt(Op op, DType type, const int32_t *in, int32_t *y, size_t n) {
  if (!elementwiseDefinedOn(op, type) || !isUnary(op))
    return false;
  switch (op) {
  case Op::Neg:
    for (size_t k = 0; k < n; ++k) y[k] = wrapInt(type, -int64_t(in[k]));
    break;
  case Op::Abs:
    for (size_t k = 0; k < n; ++k) y[k] = wrapInt(type, in[k] < 0 ? -int64_t(in[k]) : in[k]);
    break;
  case Op::Relu:
    for (size_t k = 0; k < n; ++k) y[k] = in[k] > 0 ? in[k] : 0;
    break;
  case Op::Not:
    if (type == DType::Bool)
      for (size_t k = 0; k < n; ++k) y[k] = !in[k];
    else
      for (size_t k = 0; k < n; ++k) y[k] = wrapInt(type, ~int64_t(in[k]));
    break;
  default: return false;
  }
  return true;
}

bool binaryInt(Op op, DType type, const int32_t *p, const int32_t *q, int32_t *y, size_t n) {
  if (!elementwiseDefinedOn(op, type) || isUnary(op) || isComparison(op))
    return false;
  bool isBool = type == DType::Bool;
  auto map = [&](auto f) {
    for (size_t k = 0; k < n; ++k)
      y[k] = wrapInt(type, f(int64_t(p[k]), int64_t(q[k])));
  };
  switch (op) {
  case Op::And:
    if (isBool) map([](int64_t u, int64_t v) -> int64_t { return u && v; });
    else map([](int64_t u, int64_t v) { return u & v; });
    break;
  case Op::Or:
    if (isBool) map([](int64_t u, int64_t v) -> int64_t { return u || v; });
    else map([](int64_t u, int64_t v) { return u | v; });
    break;
  case Op::Add: map([](int64_t u, int64_t v) { return u + v; }); break;
  case Op::Sub: map([](int64_t u, int64_t v) { return u - v; }); break;
  case Op::Mul: map([](int64_t u, int64_t v) { return u * v; }); break;
  case Op::Div: map(floorDiv); break;
  case Op::Rem: map(floorRem); break;
  case Op::Pow: map(intPow); break;
  case Op::Maximum: map([](int64_t u, int64_t v) { return v > u ? v : u; }); break;
  case Op::Minimum: map([](int64_t u, int64_t v) { return v < u ? v : u; }); break;
  default: return false;
  }
  return true;
}

std::optional<double> foldUnary(Op op, double x) {
  switch (op) {
  case Op::Abs: return std::fabs(x);
  case Op::Relu: return x > 0 ? x : 0;
  case Op::Gelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case Op::GeluTanh:
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  case Op::Silu: return x / (1 + std::exp(-x));
  case Op::Sigmoid: return 1 / (1 + std::exp(-x));
  case Op::Tanh: return std::tanh(x);
  case Op::Exp: return std::exp(x);
  case Op::Log: return std::log(x);
  case Op::Sqrt: return std::sqrt(x);
  case Op::Rsqrt: return 1 / std::sqrt(x);
  case Op::Softplus: return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  default: return std::nullopt;
  }
}

bool compareFloat(Op op, const float *a, const float *b, int32_t *y, size_t n) {
  return compareAny(op, a, b, y, n);
}

bool compareInt(Op op, const int32_t *a, const int32_t *b, int32_t *y, size_t n) {
  return compareAny(op, a, b, y, n);
}

void convertFloatToFloat(DType to, const float *x, float *y, size_t n) {
  if (y != x)
    for (size_t k = 0; k < n; ++k)
      y[k] = x[k];
  roundTo(to, y, n);
}

void convertIntToFloat(DType to, const int32_t *x, float *y, size_t n) {
  for (size_t k = 0; k < n; ++k)
    y[k] = static_cast<float>(x[k]);
  roundTo(to, y, n);
}

void convertFloatToInt(DType to, FloatToIntRounding rounding, const float *x, int32_t *y,
                       size_t n) {
  for (size_t k = 0; k < n; ++k)
    y[k] = floatToInt(to, x[k], rounding);
}

void convertIntToInt(DType to, const int32_t *x, int32_t *y, size_t n) {
  for (size_t k = 0; k < n; ++k)
    y[k] = wrapInt(to, x[k]);
}

} // namespace lpu::tensor
