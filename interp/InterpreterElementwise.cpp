// The reference interpreter's elementwise ops, leaves and conversions: each
// element computed in fp32 (floats) or int64 (integers), then rounded or
// wrapped to the result dtype. One loop per op kind, no per-element dispatch.
#include "interp/InterpreterKernels.h"
#include "interp/Interpreter.h"

#include <llvm/ADT/Twine.h>

#include <cmath>
#include <cstring>
#include <optional>

#if defined(__x86_64__)
#include <immintrin.h>
#endif


namespace lpu::interp::detail {

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
    where = op.loc().str() + ": ";
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

// The arithmetic itself is support/Arithmetic.h, shared with the
// simulator's VXM so that both give the same bits.
namespace {
#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void halfToFloatF16C(const uint16_t *in, float *out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i))));
  for (; i < n; ++i)
    out[i] = tensor::halfBitsToFloat(in[i]);
}

bool hasF16C() {
  static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return has;
}
#endif
} // namespace

void halfToFloat(const uint16_t *in, float *out, size_t n) {
#if defined(__x86_64__)
  if (hasF16C()) {
    halfToFloatF16C(in, out, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; ++i)
    out[i] = tensor::halfBitsToFloat(in[i]);
}

namespace {
using tensor::ElementwiseOp;

/// float -> integer: toward zero (as numpy's astype), saturating, NaN -> 0.
int32_t floatToInt(DType dtype, float x) {
  return tensor::floatToInt(dtype, x, tensor::FloatToIntRounding::TowardZero);
}

llvm::Expected<Value> elementwiseOn(const Op &op, llvm::ArrayRef<const Value *> args) {
  std::optional<ElementwiseOp> e = elementwiseArithmetic(op.kind());
  const Value &a = *args[0];
  auto undefined = [&] { return opError(op, "not defined on " + tensor::dtypeName(a.type.dtype)); };
  if (!e || tensor::isUnary(*e) != (args.size() == 1))
    return undefined();
  size_t n = a.isFloat() ? a.f->size() : a.i->size();
  if (tensor::isComparison(*e)) {
    std::vector<int32_t> y(n);
    if (a.isFloat())
      tensor::compareFloat(*e, a.floats(), args[1]->floats(), y.data(), n);
    else
      tensor::compareInt(*e, a.ints(), args[1]->ints(), y.data(), n);
    return makeInt(op.type(), std::move(y));
  }
  DType dt = op.type().dtype;
  if (a.isFloat()) {
    std::vector<float> y(n);
    bool ok = args.size() == 1 ? tensor::unaryFloat(*e, dt, a.floats(), y.data(), n)
                               : tensor::binaryFloat(*e, dt, a.floats(), args[1]->floats(), y.data(), n);
    if (!ok)
      return undefined();
    return makeFloat(op.type(), std::move(y));
  }
  std::vector<int32_t> y(n);
  bool ok = args.size() == 1 ? tensor::unaryInt(*e, dt, a.ints(), y.data(), n)
                             : tensor::binaryInt(*e, dt, a.ints(), args[1]->ints(), y.data(), n);
  if (!ok)
    return undefined();
  return makeInt(op.type(), std::move(y));
}

Value convert(const Op &op, const Value &x) {
  DType to = op.type().dtype;
  if (tensor::isFloat(to)) {
    std::vector<float> y(x.isFloat() ? x.f->size() : x.i->size());
    if (x.isFloat())
      tensor::convertFloatToFloat(to, x.floats(), y.data(), y.size());
    else
      tensor::convertIntToFloat(to, x.ints(), y.data(), y.size());
    return makeFloat(op.type(), std::move(y));
  }
  std::vector<int32_t> y(x.isFloat() ? x.f->size() : x.i->size());
  if (x.isFloat())
    tensor::convertFloatToInt(to, tensor::FloatToIntRounding::TowardZero, x.floats(), y.data(),
                              y.size());
  else
    tensor::convertIntToInt(to, x.ints(), y.data(), y.size());
  return makeInt(op.type(), std::move(y));
}

template <typename T>
std::vector<T> selectData(const int32_t *c, const T *a, const T *b, size_t n) {
  std::vector<T> y(n);
  tensor::selectValues(c, a, b, y.data(), n);
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
  return elementwiseOn(op, args);
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

} // namespace lpu::interp::detail

