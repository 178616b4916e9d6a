// What the operator handlers share (ImportOps.cpp, ShapeOps.cpp): axes,
// broadcasting, constants built at import, one `let` per result, and the
// handlers' declarations for the dispatch table.
#pragma once

#include "import/ImporterImpl.h"

#include "support/Tensor.h"

#include <llvm/ADT/StringExtras.h>

#include <cmath>
#include <functional>
#include <numeric>

namespace lpu::import::detail::ops {

using tensor::DType;
using Handler = llvm::Error (*)(Importer &, const OnnxNode &);

inline std::string join(const std::vector<std::string> &parts) { return llvm::join(parts, ", "); }

inline std::string intList(const std::vector<int64_t> &v) {
  std::vector<std::string> parts;
  for (int64_t x : v)
    parts.push_back(std::to_string(x));
  return "[" + join(parts) + "]";
}

inline std::optional<int64_t> normAxis(int64_t axis, size_t rank) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

inline llvm::Expected<int64_t> axisOf(Importer &im, const OnnxNode &node, int64_t axis, size_t rank) {
  auto a = normAxis(axis, rank);
  if (!a)
    return im.nodeError(node, "axis " + std::to_string(axis) + " is outside rank " + std::to_string(rank));
  return *a;
}

/// NumPy broadcasting of two shapes of sizes.
inline llvm::Expected<std::vector<Size>> broadcast(Importer &im, const OnnxNode &node,
                                            const std::vector<Size> &a,
                                            const std::vector<Size> &b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<Size> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Size *x = i + a.size() >= rank ? &a[i + a.size() - rank] : nullptr;
    const Size *y = i + b.size() >= rank ? &b[i + b.size() - rank] : nullptr;
    if (!x || (x->isConst() && x->coeff == 1))
      out[i] = y ? *y : Size::of(1);
    else if (!y || (y->isConst() && y->coeff == 1) || *x == *y)
      out[i] = *x;
    else
      return im.nodeError(node, "shapes " + shapeText(a) + " and " + shapeText(b) +
                                    " do not broadcast");
  }
  return out;
}

inline std::vector<int64_t> strides(const std::vector<int64_t> &dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = int64_t(dims.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * dims[i + 1];
  return s;
}

/// Element `flat` of the broadcast result, as an index into a constant of
/// `dims` (right-aligned).
inline int64_t broadcastIndex(int64_t flat, const std::vector<int64_t> &outDims,
                       const std::vector<int64_t> &dims) {
  std::vector<int64_t> os = strides(outDims), is = strides(dims);
  int64_t index = 0;
  size_t off = outDims.size() - dims.size();
  for (size_t i = 0; i < outDims.size(); ++i) {
    int64_t coord = (flat / os[i]) % outDims[i];
    if (i >= off && dims[i - off] != 1)
      index += coord * is[i - off];
  }
  return index;
}

inline std::vector<int64_t> numericDims(const std::vector<Size> &shape) {
  std::vector<int64_t> out;
  for (const Size &s : shape)
    out.push_back(s.value().value_or(-1));
  return out;
}

inline bool allConst(Importer &im, const OnnxNode &node) {
  for (const std::string &in : node.inputs) {
    if (in.empty())
      continue;
    auto v = im.value(in);
    if (!v) {
      llvm::consumeError(v.takeError());
      return false;
    }
    if ((*v)->runtime)
      return false;
  }
  return true;
}

/// A runtime result: one `let`.
inline llvm::Error define(Importer &im, const OnnxNode &node, const std::string &expr, DType dtype,
                   std::vector<Size> shape, size_t output = 0, const std::string &hint = "") {
  std::string name = im.emit(node, expr, hint);
  im.defineRuntime(node.outputs[output], name, dtype, std::move(shape));
  return llvm::Error::success();
}

#define TRY(var, expr)                                                                         \
  auto var##OrErr = (expr);                                                                    \
  if (!var##OrErr)                                                                             \
    return var##OrErr.takeError();                                                             \
  auto &var = *var##OrErr;



/// Whether a constant of `dims` may be built at import.
inline bool foldable(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxFoldedElements)
      return false;
  return true;
}

inline llvm::Error tooLarge(Importer &im, const OnnxNode &node, const std::vector<int64_t> &dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return im.nodeError(node, "computes a constant of shape " + text +
                                "], more than lpu-import folds (" +
                                std::to_string(kMaxFoldedElements) + " elements)");
}


/// Elementwise folding of constants (shape arithmetic, scales).
/// Reorders a constant's elements: out[i] = in[source(i)].
inline Const gatherConst(const Const &in, std::vector<int64_t> dims,
                  const std::function<int64_t(int64_t)> &source) {
  Const out;
  out.type = in.type;
  out.dims = std::move(dims);
  int64_t n = out.numElements();
  for (int64_t i = 0; i < n; ++i) {
    if (in.isFloat())
      out.floats.push_back(in.floatAt(source(i)));
    else
      out.ints.push_back(in.intAt(source(i)));
  }
  return out;
}

/// The integers of a constant (for shapes, axes, starts...): numbers only.
inline llvm::Expected<std::vector<int64_t>> numbersOf(Importer &im, const OnnxNode &node, const Const &c,
                                               const char *what) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < c.numElements(); ++i) {
    Size s = c.intAt(i);
    if (!s.value())
      return im.nodeError(node, llvm::Twine(what) + " holds the symbolic size " + s.text() +
                                    ", which must be a number here");
    out.push_back(*s.value());
  }
  return out;
}

/// Axes from the attribute (older opsets) or the second input.
inline llvm::Expected<std::optional<std::vector<int64_t>>> axesOf(Importer &im, const OnnxNode &node,
                                                            size_t inputIndex) {
  if (auto a = node.intsAttr("axes"))
    return std::optional<std::vector<int64_t>>(*a);
  if (inputIndex < node.inputs.size() && !node.inputs[inputIndex].empty()) {
    TRY(c, im.constInput(node, inputIndex, "axes"));
    TRY(v, numbersOf(im, node, *c, "axes"));
    return std::optional<std::vector<int64_t>>(v);
  }
  return std::optional<std::vector<int64_t>>();
}

Size product(const std::vector<Size> &shape, size_t from, size_t to);
/// Gives the node's output the shape `shape`: an alias when it is `x`'s.
llvm::Error reshapeTo(Importer &im, const OnnxNode &node, Value &x, std::vector<Size> shape);
/// Elementwise folding of constants (shape arithmetic, scales).
llvm::Error foldElementwise(Importer &im, const OnnxNode &node);
/// `x[...]` with `a:b` on some axes (a Slice or a Split's part).
llvm::Error sliceRuntime(Importer &im, const OnnxNode &node, Value &in, size_t output,
                         const std::vector<std::pair<Size, Size>> &ranges);

// Shape operators (ShapeOps.cpp).
llvm::Error opReshape(Importer &im, const OnnxNode &node);
llvm::Error opPad(Importer &im, const OnnxNode &node);
llvm::Error opFlatten(Importer &im, const OnnxNode &node);
llvm::Error opSqueeze(Importer &im, const OnnxNode &node);
llvm::Error opUnsqueeze(Importer &im, const OnnxNode &node);
llvm::Error opTranspose(Importer &im, const OnnxNode &node);
llvm::Error opShape(Importer &im, const OnnxNode &node);
llvm::Error opConstant(Importer &im, const OnnxNode &node);
llvm::Error opConstantOfShape(Importer &im, const OnnxNode &node);
llvm::Error opRange(Importer &im, const OnnxNode &node);
llvm::Error opConcat(Importer &im, const OnnxNode &node);
llvm::Error opSlice(Importer &im, const OnnxNode &node);
llvm::Error opSplit(Importer &im, const OnnxNode &node);
llvm::Error opGather(Importer &im, const OnnxNode &node);
llvm::Error opExpand(Importer &im, const OnnxNode &node);

} // namespace lpu::import::detail::ops
