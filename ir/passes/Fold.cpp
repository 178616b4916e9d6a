// fold: an op whose operands are all splat constants becomes a splat
// constant. Every elementwise value is computed by the arithmetic the
// reference interpreter and the simulator share (support/
// Arithmetic.h) on one element, after reading each constant as the
// interpreter does, so a folded value is the interpreter's bit for bit.
// Left alone:
//   - a NaN operand, and a computed float result that is NaN or infinite (a
//     NaN's payload is not pinned down; an overflow should show where it
//     happens); copies (data movement, select, reduce_max/min) of an
//     infinite splat do fold;
//   - empty reductions (their identity, not the value), softmax of an
//     infinite splat;
//   - contractions (matmul, conv2d, pooling) and anything reading an iota,
//     input or param: only splat constants fold.
// docs/passes.md lists every folded op.
#include "ir/passes/PassUtil.h"
#include "ir/passes/Passes.h"

#include "support/Arithmetic.h"

#include <bit>
#include <cmath>

namespace lpu::ir {

namespace {

using tensor::FloatToIntRounding;

/// One element of a splat, held as the interpreter holds it: an f32 value
/// (exactly representable in the dtype) for the float dtypes, an int32 in
/// the dtype's range (bool: 0 or 1) for the others.
struct Element {
  DType dtype;
  float f = 0.0f;
  int32_t i = 0;

  bool isFloat() const { return tensor::isFloat(dtype); }
  double value() const { return isFloat() ? static_cast<double>(f) : static_cast<double>(i); }
  bool sameBits(const Element &o) const {
    return isFloat() == o.isFloat() &&
           (isFloat() ? std::bit_cast<uint32_t>(f) == std::bit_cast<uint32_t>(o.f) : i == o.i);
  }
};

/// A constant's element: its value converted to its dtype as the
/// interpreter's `constant` does (interp/InterpreterElementwise.cpp, evalLeaf).
std::optional<Element> constantElement(const Op &constant) {
  std::optional<double> value = splatValue(&constant);
  if (!value)
    return std::nullopt;
  Element e{constant.type().dtype};
  if (e.isFloat()) {
    e.f = static_cast<float>(*value);
    tensor::roundTo(e.dtype, &e.f, 1);
  } else if (std::optional<int64_t> i = constant.intAttr("value")) {
    e.i = tensor::wrapInt(e.dtype, *i);
  } else {
    e.i = tensor::floatToInt(e.dtype, static_cast<float>(*value), FloatToIntRounding::TowardZero);
  }
  return e;
}

Element convertElement(const Element &x, DType to) {
  Element y{to};
  if (y.isFloat()) {
    if (x.isFloat())
      tensor::convertFloatToFloat(to, &x.f, &y.f, 1);
    else
      tensor::convertIntToFloat(to, &x.i, &y.f, 1);
  } else if (x.isFloat()) {
    tensor::convertFloatToInt(to, FloatToIntRounding::TowardZero, &x.f, &y.i, 1);
  } else {
    tensor::convertIntToInt(to, &x.i, &y.i, 1);
  }
  return y;
}

/// Unary, binary and comparison ops; nullopt for a kind or dtype the shared
/// arithmetic does not define (the verifier rejects those).
std::optional<Element> arithmeticElement(OpKind kind, llvm::ArrayRef<Element> xs, DType to) {
  std::optional<tensor::ElementwiseOp> e = elementwiseArithmetic(kind);
  if (!e || tensor::isUnary(*e) != (xs.size() == 1))
    return std::nullopt;
  const Element &a = xs.front(), &b = xs.back();
  Element y{to};
  if (a.isFloat() != b.isFloat() || y.isFloat() != (a.isFloat() && !tensor::isComparison(*e)))
    return std::nullopt;
  bool ok;
  if (tensor::isComparison(*e))
    ok = a.isFloat() ? tensor::compareFloat(*e, &a.f, &b.f, &y.i, 1)
                     : tensor::compareInt(*e, &a.i, &b.i, &y.i, 1);
  else if (a.isFloat())
    ok = xs.size() == 1 ? tensor::unaryFloat(*e, to, &a.f, &y.f, 1)
                        : tensor::binaryFloat(*e, to, &a.f, &b.f, &y.f, 1);
  else
    ok = xs.size() == 1 ? tensor::unaryInt(*e, to, &a.i, &y.i, 1)
                        : tensor::binaryInt(*e, to, &a.i, &b.i, &y.i, 1);
  return ok ? std::optional<Element>(y) : std::nullopt;
}

/// A computed float result that is NaN or infinite is left alone.
std::optional<Element> finite(std::optional<Element> y) {
  if (y && y->isFloat() && !std::isfinite(y->f))
    return std::nullopt;
  return y;
}

std::optional<Element> foldElementwise(const Op &op, llvm::ArrayRef<Element> xs) {
  DType to = op.type().dtype;
  if (op.kind() == OpKind::Convert)
    return finite(convertElement(xs[0], to));
  if (op.kind() == OpKind::Select) { // a copy of a or b: an infinity may fold
    const Element &cond = xs[0], &a = xs[1], &b = xs[2];
    Element y{to};
    if (cond.isFloat() || a.isFloat() != y.isFloat() || b.isFloat() != y.isFloat())
      return std::nullopt;
    tensor::selectValues(&cond.i, &a.f, &b.f, &y.f, 1);
    tensor::selectValues(&cond.i, &a.i, &b.i, &y.i, 1);
    return y;
  }
  return finite(arithmeticElement(op.kind(), xs, to));
}

/// n copies of v added one by one in f32 from +0.0, as the interpreter adds
/// the reduced elements (docs/reference-interpreter.md: sequentially in
/// index order; for a splat every order is this one). Once the sum stops
/// changing the remaining additions are no-ops, so at most about 2^25
/// additions run whatever n is.
float splatSum(float v, int64_t n) {
  float acc = 0.0f;
  for (int64_t k = 0; k < n; ++k) {
    float next = acc + v;
    if (std::bit_cast<uint32_t>(next) == std::bit_cast<uint32_t>(acc))
      break;
    acc = next;
  }
  return acc;
}

std::optional<Element> foldReduce(const Op &op, const Element &a) {
  const Type &in = op.operand(0)->type();
  int64_t outCount = op.type().numElements();
  int64_t n = outCount > 0 ? in.numElements() / outCount : 0;
  if (n <= 0)
    return std::nullopt; // an empty reduction: its identity, not the value
  DType to = op.type().dtype;
  Element y{to};
  switch (op.kind()) {
  case OpKind::ReduceMax:
  case OpKind::ReduceMin: // the value itself, infinities included
    if (y.isFloat() != a.isFloat())
      return std::nullopt;
    y.f = a.f;
    y.i = a.i;
    return y;
  case OpKind::Argmax:
    return y; // every element ties; the first index (0) wins
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
    if (y.isFloat() != a.isFloat())
      return std::nullopt;
    if (!a.isFloat()) {
      if (op.kind() == OpKind::ReduceMean)
        return std::nullopt; // integer means are not in the IR
      // The exact sum n * v, wrapped: the low bits of the product mod 2^64.
      uint64_t sum = static_cast<uint64_t>(n) * static_cast<uint64_t>(int64_t{a.i});
      y.i = tensor::wrapInt(to, static_cast<int64_t>(sum));
      return y;
    }
    if (!std::isfinite(a.f))
      return std::nullopt;
    y.f = splatSum(a.f, n);
    if (op.kind() == OpKind::ReduceMean)
      y.f /= static_cast<float>(n);
    tensor::roundTo(to, &y.f, 1);
    return finite(y);
  case OpKind::Softmax: {
    auto axis = op.intAttr("axis");
    if (!y.isFloat() || !a.isFloat() || !axis || !std::isfinite(a.f))
      return std::nullopt; // inf - inf is NaN
    int64_t k = *axis < 0 ? *axis + static_cast<int64_t>(in.rank()) : *axis;
    if (k < 0 || k >= static_cast<int64_t>(in.rank()))
      return std::nullopt;
    // Each exp(v - max) is exactly 1; their f32 sum is the axis length up to
    // 2^24, where it stops growing.
    y.f = 1.0f / splatSum(1.0f, in.shape[k]);
    tensor::roundTo(to, &y.f, 1);
    return finite(y);
  }
  default:
    return std::nullopt;
  }
}

std::optional<Element> foldLayout(const Op &op, llvm::ArrayRef<Element> values) {
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
    for (const Element &v : values)
      if (!v.sameBits(values[0]))
        return std::nullopt;
    return values[0];
  default:
    return std::nullopt;
  }
}

std::optional<Element> foldOp(const Op &op) {
  llvm::SmallVector<Element, 3> values;
  for (const Op *operand : op.operands()) {
    if (operand->kind() != OpKind::Constant)
      return std::nullopt;
    std::optional<Element> value = constantElement(*operand);
    if (!value || (value->isFloat() && std::isnan(value->f)))
      return std::nullopt;
    values.push_back(*value);
  }
  if (values.empty())
    return std::nullopt;
  std::optional<Element> result;
  switch (opClass(op.kind())) {
  case OpClass::Unary:
  case OpClass::Binary:
  case OpClass::Ternary:
    result = foldElementwise(op, values);
    break;
  case OpClass::Reduce:
    result = foldReduce(op, values[0]);
    break;
  case OpClass::Layout:
    result = foldLayout(op, values);
    break;
  default:
    break;
  }
  // An ill-typed op (the verifier rejects it) is left for the verifier.
  if (result && result->isFloat() != tensor::isFloat(op.type().dtype))
    return std::nullopt;
  return result;
}

class Fold : public Pass {
public:
  llvm::StringRef name() const override { return "fold"; }

  bool run(Function &fn) override {
    return rewriteOps(fn, [&](Op &op, bool &) -> Op * {
      if (op.kind() == OpKind::Return)
        return nullptr;
      std::optional<Element> value = foldOp(op);
      return value ? makeSplat(fn, &op, op.type(), value->value(), op.loc()) : nullptr;
    });
  }
};

} // namespace

std::unique_ptr<Pass> createFoldPass() { return std::make_unique<Fold>(); }

} // namespace lpu::ir
