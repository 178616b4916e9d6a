// One handler per ONNX operator: constants fold at import (shapes, and what
// is computed from them), everything else becomes one `let`.
#include "import/ImporterImpl.h"

#include "support/Tensor.h"

#include <llvm/ADT/StringExtras.h>

#include <cmath>
#include <functional>
#include <numeric>

namespace lpu::import::detail {

namespace {

using tensor::DType;
using Handler = llvm::Error (*)(Importer &, const OnnxNode &);

std::string join(const std::vector<std::string> &parts) { return llvm::join(parts, ", "); }

std::string intList(const std::vector<int64_t> &v) {
  std::vector<std::string> parts;
  for (int64_t x : v)
    parts.push_back(std::to_string(x));
  return "[" + join(parts) + "]";
}

std::optional<int64_t> normAxis(int64_t axis, size_t rank) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

llvm::Expected<int64_t> axisOf(Importer &im, const OnnxNode &node, int64_t axis, size_t rank) {
  auto a = normAxis(axis, rank);
  if (!a)
    return im.nodeError(node, "axis " + std::to_string(axis) + " is outside rank " + std::to_string(rank));
  return *a;
}

/// NumPy broadcasting of two shapes of sizes.
llvm::Expected<std::vector<Size>> broadcast(Importer &im, const OnnxNode &node,
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

std::vector<int64_t> strides(const std::vector<int64_t> &dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = int64_t(dims.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * dims[i + 1];
  return s;
}

/// Element `flat` of the broadcast result, as an index into a constant of
/// `dims` (right-aligned).
int64_t broadcastIndex(int64_t flat, const std::vector<int64_t> &outDims,
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

std::vector<int64_t> numericDims(const std::vector<Size> &shape) {
  std::vector<int64_t> out;
  for (const Size &s : shape)
    out.push_back(s.value().value_or(-1));
  return out;
}

bool allConst(Importer &im, const OnnxNode &node) {
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
llvm::Error define(Importer &im, const OnnxNode &node, const std::string &expr, DType dtype,
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

// --- folding -----------------------------------------------------------------

/// Whether a constant of `dims` may be built at import.
bool foldable(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxFoldedElements)
      return false;
  return true;
}

llvm::Error tooLarge(Importer &im, const OnnxNode &node, const std::vector<int64_t> &dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return im.nodeError(node, "computes a constant of shape " + text +
                                "], more than lpu-import folds (" +
                                std::to_string(kMaxFoldedElements) + " elements)");
}


/// Elementwise folding of constants (shape arithmetic, scales).
llvm::Error foldElementwise(Importer &im, const OnnxNode &node) {
  std::vector<const Const *> in;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    TRY(v, im.input(node, i));
    if (!v)
      return im.nodeError(node, "an input is missing");
    in.push_back(&v->c);
  }
  std::vector<int64_t> dims;
  for (const Const *c : in) {
    std::vector<Size> a, b;
    for (int64_t d : dims)
      a.push_back(Size::of(d));
    for (int64_t d : c->dims)
      b.push_back(Size::of(d));
    TRY(shape, broadcast(im, node, a, b));
    dims = numericDims(shape);
  }
  if (!foldable(dims))
    return tooLarge(im, node, dims);
  Const out;
  out.dims = dims;
  const std::string &op = node.opType;
  bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                 op == "GreaterOrEqual" || op == "Not" || op == "And" || op == "Or";
  bool floatOp = false;
  for (const Const *c : in)
    floatOp |= c->isFloat();
  if (op == "Where")
    floatOp = in[1]->isFloat();
  if (op == "Sqrt" || op == "Exp" || op == "Log" || op == "Erf" || op == "Tanh" ||
      op == "Sigmoid" || op == "Pow")
    floatOp = in[0]->isFloat() || floatOp;
  out.type = compare ? kOnnxBool : op == "Where" ? in[1]->type : in[0]->type;
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  for (int64_t i = 0; i < n; ++i) {
    auto at = [&](size_t k) { return broadcastIndex(i, dims, in[k]->dims); };
    if (floatOp && !compare && op != "Where") {
      double a = in[0]->floatAt(at(0));
      double b = in.size() > 1 ? in[1]->floatAt(at(1)) : 0;
      double r;
      if (op == "Add") r = a + b;
      else if (op == "Sub") r = a - b;
      else if (op == "Mul") r = a * b;
      else if (op == "Div") r = a / b;
      else if (op == "Pow") r = std::pow(a, b);
      else if (op == "Sqrt") r = std::sqrt(a);
      else if (op == "Neg") r = -a;
      else if (op == "Exp") r = std::exp(a);
      else if (op == "Log") r = std::log(a);
      else if (op == "Erf") r = std::erf(a);
      else if (op == "Tanh") r = std::tanh(a);
      else if (op == "Sigmoid") r = 1 / (1 + std::exp(-a));
      else if (op == "Relu") r = a > 0 ? a : 0;
      else if (op == "Abs") r = std::fabs(a);
      else if (op == "Max") r = std::max(a, b);
      else if (op == "Min") r = std::min(a, b);
      else return im.nodeError(node, "cannot fold this operator on constants");
      out.floats.push_back(float(r));
      continue;
    }
    if (op == "Where") {
      bool c = in[0]->intAt(at(0)).value().value_or(0) != 0;
      if (in[1]->isFloat())
        out.floats.push_back(c ? in[1]->floatAt(at(1)) : in[2]->floatAt(at(2)));
      else
        out.ints.push_back(c ? in[1]->intAt(at(1)) : in[2]->intAt(at(2)));
      continue;
    }
    if (compare && floatOp) {
      double a = in[0]->floatAt(at(0)), b = in.size() > 1 ? in[1]->floatAt(at(1)) : 0;
      bool r = op == "Equal" ? a == b : op == "Less" ? a < b : op == "Greater" ? a > b
               : op == "LessOrEqual" ? a <= b : a >= b;
      out.ints.push_back(Size::of(r));
      continue;
    }
    Size a = in[0]->intAt(at(0));
    Size b = in.size() > 1 ? in[1]->intAt(at(1)) : Size::of(0);
    std::optional<int64_t> x = a.value(), y = b.value();
    if (op == "Mul") {
      out.ints.push_back(mulSize(a, b));
    } else if (op == "Add") {
      out.ints.push_back(addSize(a, b));
    } else if (op == "Sub") {
      if (y)
        out.ints.push_back(addSize(a, Size::of(-*y)));
      else if (a == b)
        out.ints.push_back(Size::of(0));
      else
        return im.nodeError(node, "cannot subtract the symbolic size " + b.text());
    } else if (op == "Div") {
      if (x && y && *y != 0) {
        int64_t q = *x / *y;
        if ((*x % *y != 0) && ((*x < 0) != (*y < 0)))
          --q; // ONNX integer division floors like NumPy? it truncates; keep C's
        out.ints.push_back(Size::of(*x / *y));
      } else if (auto d = divSize(a, b))
        out.ints.push_back(*d);
      else
        return im.nodeError(node, "cannot divide the size " + a.text() + " by " + b.text() +
                                      " exactly");
    } else if (op == "Neg" && x) {
      out.ints.push_back(Size::of(-*x));
    } else if (op == "Max" && x && y) {
      out.ints.push_back(Size::of(std::max(*x, *y)));
    } else if (op == "Min" && x && y) {
      out.ints.push_back(Size::of(std::min(*x, *y)));
    } else if (op == "Abs" && x) {
      out.ints.push_back(Size::of(std::abs(*x)));
    } else if (compare) {
      bool r;
      if (op == "Equal")
        r = a == b;
      else if (op == "Not" && x)
        r = *x == 0;
      else if (op == "And" && x && y)
        r = *x && *y;
      else if (op == "Or" && x && y)
        r = *x || *y;
      else if (x && y)
        r = op == "Less" ? *x < *y : op == "Greater" ? *x > *y : op == "LessOrEqual" ? *x <= *y
                                                                                   : *x >= *y;
      else
        return im.nodeError(node, "cannot compare the symbolic sizes " + a.text() + " and " +
                                      b.text() + " at import");
      out.ints.push_back(Size::of(r));
    } else {
      return im.nodeError(node, "cannot fold this operator on symbolic sizes");
    }
  }
  im.defineConst(node.outputs[0], std::move(out));
  return llvm::Error::success();
}

/// Reorders a constant's elements: out[i] = in[source(i)].
Const gatherConst(const Const &in, std::vector<int64_t> dims,
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
llvm::Expected<std::vector<int64_t>> numbersOf(Importer &im, const OnnxNode &node, const Const &c,
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
llvm::Expected<std::optional<std::vector<int64_t>>> axesOf(Importer &im, const OnnxNode &node,
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

// --- shape operators ---------------------------------------------------------

Size product(const std::vector<Size> &shape, size_t from, size_t to);

/// Gives `out` the shape `shape`: an alias when it is the input's.
llvm::Error reshapeTo(Importer &im, const OnnxNode &node, Value &x, std::vector<Size> shape) {
  Size from = product(im.shapeOf(x), 0, im.shapeOf(x).size());
  Size to = product(shape, 0, shape.size());
  if (from.opaque.empty() && to.opaque.empty() && from != to)
    return im.nodeError(node, "reshapes " + shapeText(im.shapeOf(x)) + " (" + from.text() +
                                  " elements) to " + shapeText(shape) + " (" + to.text() + ")");
  if (!x.runtime) {
    std::vector<int64_t> dims = numericDims(shape);
    for (int64_t d : dims)
      if (d < 0)
        return im.nodeError(node, "a constant reshaped to the symbolic shape " + shapeText(shape));
    Const c = x.c;
    c.big = nullptr;
    if (x.c.big) {
      if (x.c.isFloat())
        c.floats = x.c.allFloats();
      else
        for (int64_t i = 0; i < x.c.numElements(); ++i)
          c.ints.push_back(x.c.intAt(i));
    }
    c.dims = dims;
    im.defineConst(node.outputs[0], std::move(c));
    return llvm::Error::success();
  }
  if (shape == x.shape) {
    im.alias(node.outputs[0], x);
    return llvm::Error::success();
  }
  return define(im, node, "reshape(" + x.ref + ", " + shapeText(shape) + ")", x.dtype, shape);
}

Size product(const std::vector<Size> &shape, size_t from, size_t to) {
  Size p = Size::of(1);
  for (size_t i = from; i < to; ++i)
    p = mulSize(p, shape[i]);
  return p;
}

llvm::Error opReshape(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  TRY(target, im.constInput(node, 1, "target shape"));
  std::vector<Size> in = im.shapeOf(*x);
  std::vector<Size> shape;
  int inferred = -1;
  bool allowZero = node.intAttr("allowzero", 0) != 0;
  for (int64_t i = 0; i < target->numElements(); ++i) {
    Size s = target->intAt(i);
    if (s.value() && *s.value() == 0 && !allowZero) {
      if (size_t(i) >= in.size())
        return im.nodeError(node, "a 0 in the target shape copies a dimension the input lacks");
      s = in[i];
    } else if (s.value() && *s.value() == -1) {
      if (inferred >= 0)
        return im.nodeError(node, "the target shape has two -1");
      inferred = int(i);
    } else if (s.value() && *s.value() < 0) {
      return im.nodeError(node, "the target shape holds " + s.text());
    }
    shape.push_back(s);
  }
  if (inferred >= 0) {
    Size known = Size::of(1);
    for (size_t i = 0; i < shape.size(); ++i)
      if (int(i) != inferred)
        known = mulSize(known, shape[i]);
    auto rest = divSize(product(in, 0, in.size()), known);
    if (!rest)
      return im.nodeError(node, "cannot infer the -1 of the target shape: " +
                                    shapeText(in) + " has no exact quotient by " + known.text());
    shape[inferred] = *rest;
  }
  return reshapeTo(im, node, *x, shape);
}

llvm::Error opFlatten(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  std::vector<Size> in = im.shapeOf(*x);
  int64_t axis = node.intAttr("axis", 1);
  if (axis < 0)
    axis += int64_t(in.size());
  if (axis < 0 || axis > int64_t(in.size()))
    return im.nodeError(node, "axis outside the rank");
  return reshapeTo(im, node, *x,
                   {product(in, 0, size_t(axis)), product(in, size_t(axis), in.size())});
}

llvm::Error opSqueeze(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  std::vector<Size> in = im.shapeOf(*x);
  TRY(axes, axesOf(im, node, 1));
  std::vector<bool> drop(in.size(), false);
  if (!axes) {
    for (size_t i = 0; i < in.size(); ++i)
      drop[i] = in[i].isConst() && in[i].coeff == 1;
  } else {
    for (int64_t a : *axes) {
      TRY(ax, axisOf(im, node, a, in.size()));
      drop[ax] = true;
    }
  }
  std::vector<Size> out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i])
      out.push_back(in[i]);
  return reshapeTo(im, node, *x, out);
}

llvm::Error opUnsqueeze(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  std::vector<Size> in = im.shapeOf(*x);
  TRY(axes, axesOf(im, node, 1));
  if (!axes)
    return im.nodeError(node, "has no axes");
  size_t rank = in.size() + axes->size();
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    TRY(ax, axisOf(im, node, a, rank));
    inserted[ax] = true;
  }
  std::vector<Size> out;
  size_t k = 0;
  for (size_t i = 0; i < rank; ++i)
    out.push_back(inserted[i] ? Size::of(1) : in[k++]);
  return reshapeTo(im, node, *x, out);
}

llvm::Error opTranspose(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  std::vector<Size> in = im.shapeOf(*x);
  std::vector<int64_t> perm(in.size());
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (auto p = node.intsAttr("perm"))
    perm = *p;
  if (perm.size() != in.size())
    return im.nodeError(node, "perm does not match the rank");
  std::vector<Size> out;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= int64_t(in.size()))
      return im.nodeError(node, "perm is no permutation");
    out.push_back(in[perm[i]]);
    identity &= perm[i] == int64_t(i);
  }
  if (!x->runtime) {
    std::vector<int64_t> dims = x->c.dims, od = numericDims(out);
    std::vector<int64_t> is = strides(dims), os = strides(od);
    Const c = gatherConst(x->c, od, [&](int64_t flat) {
      int64_t src = 0;
      for (size_t i = 0; i < od.size(); ++i)
        src += ((flat / os[i]) % od[i]) * is[perm[i]];
      return src;
    });
    im.defineConst(node.outputs[0], std::move(c));
    return llvm::Error::success();
  }
  if (identity) {
    im.alias(node.outputs[0], *x);
    return llvm::Error::success();
  }
  return define(im, node, "transpose(" + x->ref + ", " + intList(perm) + ")", x->dtype, out);
}

llvm::Error opShape(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  std::vector<Size> in = im.shapeOf(*x);
  int64_t r = int64_t(in.size());
  int64_t start = node.intAttr("start", 0), end = node.intAttr("end", r);
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  Const c;
  c.type = kOnnxInt64;
  for (int64_t i = start; i < end; ++i)
    c.ints.push_back(in[i]);
  c.dims = {int64_t(c.ints.size())};
  im.defineConst(node.outputs[0], std::move(c));
  return llvm::Error::success();
}

llvm::Error opConstant(Importer &im, const OnnxNode &node) {
  Const c;
  if (const OnnxAttribute *a = node.attribute("value"); a && a->t) {
    c.type = a->t->type;
    c.dims = a->t->dims;
    c.floats = a->t->floats;
    for (int64_t v : a->t->ints)
      c.ints.push_back(Size::of(v));
  } else if (const OnnxAttribute *f = node.attribute("value_float")) {
    c.type = kOnnxFloat;
    c.floats = {f->f};
  } else if (const OnnxAttribute *fs = node.attribute("value_floats")) {
    c.type = kOnnxFloat;
    c.floats = fs->floats;
    c.dims = {int64_t(fs->floats.size())};
  } else if (const OnnxAttribute *i = node.attribute("value_int")) {
    c.type = kOnnxInt64;
    c.ints = {Size::of(i->i)};
  } else if (const OnnxAttribute *is = node.attribute("value_ints")) {
    c.type = kOnnxInt64;
    for (int64_t v : is->ints)
      c.ints.push_back(Size::of(v));
    c.dims = {int64_t(is->ints.size())};
  } else {
    return im.nodeError(node, "has no value lpu-import reads");
  }
  im.defineConst(node.outputs[0], std::move(c));
  return llvm::Error::success();
}

llvm::Error opConstantOfShape(Importer &im, const OnnxNode &node) {
  TRY(shapeC, im.constInput(node, 0, "shape"));
  float fill = 0;
  int32_t type = kOnnxFloat;
  if (const OnnxAttribute *a = node.attribute("value"); a && a->t) {
    type = a->t->type;
    fill = a->t->floats.empty() ? (a->t->ints.empty() ? 0.f : float(a->t->ints[0]))
                                : a->t->floats[0];
  }
  std::vector<Size> shape;
  for (int64_t i = 0; i < shapeC->numElements(); ++i)
    shape.push_back(shapeC->intAt(i));
  std::vector<int64_t> dims = numericDims(shape);
  if (std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; })) {
    if (!foldable(dims))
      return tooLarge(im, node, dims);
    Const c;
    c.type = type;
    c.dims = dims;
    int64_t n = c.numElements();
    if (isOnnxFloat(type))
      c.floats.assign(n, fill);
    else
      c.ints.assign(n, Size::of(int64_t(fill)));
    im.defineConst(node.outputs[0], std::move(c));
    return llvm::Error::success();
  }
  Const proto;
  proto.type = type;
  DType dt = im.dtypeOf(Value{false, "", DType::F16, {}, proto, ""});
  std::string lit = isOnnxFloat(type) ? std::to_string(fill) : std::to_string(int64_t(fill));
  return define(im, node,
                std::string("full<") + std::string(tensor::dtypeName(dt)) + shapeText(shape) +
                    ">(" + lit + ")",
                dt, shape);
}

llvm::Error opRange(Importer &im, const OnnxNode &node) {
  TRY(start, im.constInput(node, 0, "start"));
  TRY(limit, im.constInput(node, 1, "limit"));
  TRY(delta, im.constInput(node, 2, "delta"));
  if (start->isFloat() || limit->isFloat() || delta->isFloat())
    return im.nodeError(node, "a floating-point range is not supported");
  Size s = start->intAt(0), l = limit->intAt(0), d = delta->intAt(0);
  if (s.value() && l.value() && d.value() && *d.value() != 0) {
    double count = std::ceil((double(*l.value()) - double(*s.value())) / double(*d.value()));
    if (count > double(kMaxFoldedElements))
      return tooLarge(im, node, {int64_t(count)});
    Const c;
    c.type = start->type;
    for (int64_t v = *s.value(); *d.value() > 0 ? v < *l.value() : v > *l.value(); v += *d.value())
      c.ints.push_back(Size::of(v));
    c.dims = {int64_t(c.ints.size())};
    im.defineConst(node.outputs[0], std::move(c));
    return llvm::Error::success();
  }
  if (!s.value() || *s.value() != 0 || !d.value() || *d.value() != 1)
    return im.nodeError(node, "a range with a symbolic bound must start at 0 with step 1");
  return define(im, node, "iota<" + l.text() + ">()", DType::I32, {l});
}

llvm::Error opConcat(Importer &im, const OnnxNode &node) {
  std::vector<Value *> in;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    TRY(v, im.input(node, i));
    if (v && !(v->runtime ? v->shape.empty() : false))
      in.push_back(v);
  }
  if (in.empty())
    return im.nodeError(node, "has no inputs");
  std::vector<Size> shape = im.shapeOf(*in[0]);
  TRY(axis, axisOf(im, node, node.intAttr("axis", 0), shape.size()));
  bool constant = allConst(im, node);
  if (constant) {
    // Mostly 1-D shape lists: concatenate along `axis` in general.
    std::vector<int64_t> dims = in[0]->c.dims;
    for (Value *v : in) {
      std::vector<int64_t> d = v->c.dims;
      if (d.size() != dims.size() || v->c.isFloat() != in[0]->c.isFloat())
        return im.nodeError(node, "concatenates constants of different ranks or types");
      for (size_t k = 0; k < d.size(); ++k)
        if (int64_t(k) != axis && d[k] != dims[k])
          return im.nodeError(node, "concatenates constants whose shapes differ off the axis");
    }
    int64_t total = 0;
    for (Value *v : in)
      total += v->c.dims[axis];
    dims[axis] = total;
    Const out;
    out.type = in[0]->c.type;
    out.dims = dims;
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i)
      outer *= dims[i];
    for (size_t i = axis + 1; i < dims.size(); ++i)
      inner *= dims[i];
    for (int64_t o = 0; o < outer; ++o)
      for (Value *v : in) {
        int64_t len = v->c.dims[axis] * inner;
        for (int64_t k = 0; k < len; ++k) {
          if (out.isFloat())
            out.floats.push_back(v->c.floatAt(o * len + k));
          else
            out.ints.push_back(v->c.intAt(o * len + k));
        }
      }
    im.defineConst(node.outputs[0], std::move(out));
    return llvm::Error::success();
  }
  std::vector<std::string> parts;
  Size total = Size::of(0);
  for (Value *v : in) {
    std::vector<Size> vs = im.shapeOf(*v);
    bool same = vs.size() == shape.size();
    for (size_t k = 0; same && k < vs.size(); ++k)
      same = int64_t(k) == axis || vs[k] == shape[k];
    if (!same)
      return im.nodeError(node, "concatenates " + shapeText(shape) + " and " + shapeText(vs) +
                                    " along axis " + std::to_string(axis));
    TRY(e, im.operand(*v, false));
    parts.push_back(e);
    total = addSize(total, im.shapeOf(*v)[axis]);
  }
  if (parts.size() == 1) {
    im.alias(node.outputs[0], *in[0]);
    return llvm::Error::success();
  }
  shape[axis] = total;
  return define(im, node,
                "concat([" + join(parts) + "], axis = " + std::to_string(axis) + ")",
                im.dtypeOf(*in[0]), shape);
}

/// `x[...]` with `a:b` on some axes (a Slice or a Split's part).
llvm::Error sliceRuntime(Importer &im, const OnnxNode &node, Value &in, size_t output,
                         const std::vector<std::pair<Size, Size>> &ranges) {
  Value x = in;
  if (!in.runtime) {
    // A constant sliced to a symbolic size (a buffer of positions cut to
    // the sequence): a parameter, sliced at run time.
    TRY(ref, im.operand(in, false));
    x.runtime = true;
    x.ref = ref;
    x.dtype = im.dtypeOf(in);
    x.shape = im.shapeOf(in);
  }
  std::vector<std::string> idx;
  std::vector<Size> shape;
  bool whole = true;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto &[a, b] = ranges[i];
    bool full = a.isConst() && a.coeff == 0 && b == x.shape[i];
    whole &= full;
    idx.push_back(full ? ":" : (a.isConst() && a.coeff == 0 ? "" : a.text()) + ":" + b.text());
    if (full)
      shape.push_back(x.shape[i]);
    else if (a.isConst() && b.isConst())
      shape.push_back(Size::of(b.coeff - a.coeff));
    else if (a.isConst())
      shape.push_back(addSize(b, Size::of(-a.coeff)));
    else
      return im.nodeError(node, "a slice starting at a symbolic size");
  }
  if (whole) {
    im.alias(node.outputs[output], x);
    return llvm::Error::success();
  }
  while (!idx.empty() && idx.back() == ":")
    idx.pop_back();
  return define(im, node, x.ref + "[" + join(idx) + "]", x.dtype, shape, output);
}

llvm::Error opSlice(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  std::vector<Size> in = im.shapeOf(*x);
  std::vector<int64_t> starts, ends, axes, steps;
  std::vector<Size> endSizes;
  if (node.inputs.size() >= 3) {
    TRY(s, im.constInput(node, 1, "starts"));
    TRY(e, im.constInput(node, 2, "ends"));
    TRY(sv, numbersOf(im, node, *s, "starts"));
    starts = sv;
    for (int64_t i = 0; i < e->numElements(); ++i)
      endSizes.push_back(e->intAt(i));
    if (node.inputs.size() > 3 && !node.inputs[3].empty()) {
      TRY(a, im.constInput(node, 3, "axes"));
      TRY(av, numbersOf(im, node, *a, "axes"));
      axes = av;
    }
    if (node.inputs.size() > 4 && !node.inputs[4].empty()) {
      TRY(st, im.constInput(node, 4, "steps"));
      TRY(stv, numbersOf(im, node, *st, "steps"));
      steps = stv;
    }
  } else {
    starts = node.intsAttr("starts").value_or(std::vector<int64_t>{});
    for (int64_t e : node.intsAttr("ends").value_or(std::vector<int64_t>{}))
      endSizes.push_back(Size::of(e));
    axes = node.intsAttr("axes").value_or(std::vector<int64_t>{});
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  std::vector<std::pair<Size, Size>> ranges;
  for (const Size &d : in)
    ranges.push_back({Size::of(0), d});
  for (size_t k = 0; k < axes.size(); ++k) {
    if (!steps.empty() && steps[k] != 1)
      return im.nodeError(node, "a slice with step " + std::to_string(steps[k]) +
                                    " (the language's slices have step 1)");
    TRY(ax, axisOf(im, node, axes[k], in.size()));
    const Size &dim = in[ax];
    int64_t a = starts[k];
    Size b = endSizes[k];
    if (dim.value()) {
      int64_t n = *dim.value();
      a = std::clamp<int64_t>(a < 0 ? a + n : a, 0, n);
      if (b.value()) {
        int64_t e = *b.value();
        b = Size::of(std::clamp<int64_t>(e < 0 ? e + n : e, 0, n));
      }
    } else {
      if (a < 0)
        return im.nodeError(node, "a negative start on the symbolic dimension " + dim.text());
      if (b.value() && *b.value() >= (int64_t(1) << 30))
        b = dim;
      else if (b.value() && *b.value() < 0)
        b = addSize(dim, b);
    }
    ranges[ax] = {Size::of(a), b};
  }
  if (!x->runtime) {
    std::vector<int64_t> od;
    for (auto &[a, b] : ranges) {
      if (!b.value())
        return sliceRuntime(im, node, *x, 0, ranges); // unreachable for numeric consts
      od.push_back(std::max<int64_t>(0, *b.value() - *a.value()));
    }
    std::vector<int64_t> is = strides(x->c.dims), os = strides(od);
    Const c = gatherConst(x->c, od, [&](int64_t flat) {
      int64_t src = 0;
      for (size_t i = 0; i < od.size(); ++i)
        src += ((flat / os[i]) % od[i] + *ranges[i].first.value()) * is[i];
      return src;
    });
    im.defineConst(node.outputs[0], std::move(c));
    return llvm::Error::success();
  }
  return sliceRuntime(im, node, *x, 0, ranges);
}

llvm::Error opSplit(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  if (!x->runtime)
    return im.nodeError(node, "splitting a constant is not supported");
  TRY(axis, axisOf(im, node, node.intAttr("axis", 0), x->shape.size()));
  std::vector<int64_t> sizes;
  if (auto s = node.intsAttr("split"))
    sizes = *s;
  else if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    TRY(c, im.constInput(node, 1, "split sizes"));
    TRY(v, numbersOf(im, node, *c, "split sizes"));
    sizes = v;
  }
  const Size &dim = x->shape[axis];
  size_t parts = node.outputs.size();
  if (sizes.empty()) {
    if (!dim.value() || *dim.value() % int64_t(parts) != 0)
      return im.nodeError(node, "cannot split " + dim.text() + " into " +
                                    std::to_string(parts) + " equal parts");
    sizes.assign(parts, *dim.value() / int64_t(parts));
  }
  int64_t total = 0;
  for (int64_t n : sizes)
    total = n > 0 ? total + n : -1;
  if (sizes.size() != parts || total < 0 || (dim.value() && *dim.value() != total) ||
      (!dim.value() && parts > 1))
    return im.nodeError(node, "splits " + dim.text() + " into " + intList(sizes) + " for " +
                                  std::to_string(parts) + " outputs");
  int64_t at = 0;
  for (size_t i = 0; i < parts && i < sizes.size(); ++i) {
    std::vector<std::pair<Size, Size>> ranges;
    for (const Size &d : x->shape)
      ranges.push_back({Size::of(0), d});
    ranges[axis] = {Size::of(at), Size::of(at + sizes[i])};
    at += sizes[i];
    if (llvm::Error e = sliceRuntime(im, node, *x, i, ranges))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error opGather(Importer &im, const OnnxNode &node) {
  TRY(data, im.input(node, 0));
  TRY(ids, im.input(node, 1));
  std::vector<Size> dshape = im.shapeOf(*data);
  TRY(axis, axisOf(im, node, node.intAttr("axis", 0), dshape.size()));
  if (!data->runtime && !ids->runtime) {
    std::vector<int64_t> dd = data->c.dims, id = ids->c.dims;
    std::vector<int64_t> od(dd.begin(), dd.begin() + axis);
    od.insert(od.end(), id.begin(), id.end());
    od.insert(od.end(), dd.begin() + axis + 1, dd.end());
    int64_t inner = 1;
    for (size_t i = axis + 1; i < dd.size(); ++i)
      inner *= dd[i];
    int64_t nIds = ids->c.numElements();
    if (!foldable(od))
      return tooLarge(im, node, od);
    TRY(idv, numbersOf(im, node, ids->c, "indices"));
    for (int64_t v : idv)
      if (v < -dd[axis] || v >= dd[axis])
        return im.nodeError(node, "index " + std::to_string(v) + " is outside an axis of " +
                                      std::to_string(dd[axis]));
    Const c = gatherConst(data->c, od, [&](int64_t flat) {
      int64_t in = flat % inner, rest = flat / inner;
      int64_t k = rest % nIds, outer = rest / nIds;
      int64_t idx = idv[k] < 0 ? idv[k] + dd[axis] : idv[k];
      return (outer * dd[axis] + idx) * inner + in;
    });
    im.defineConst(node.outputs[0], std::move(c));
    return llvm::Error::success();
  }
  if (data->runtime && !ids->runtime && ids->c.dims.size() <= 1) {
    TRY(idv, numbersOf(im, node, ids->c, "indices"));
    int64_t n = dshape[axis].value().value_or(-1);
    for (int64_t &v : idv)
      if (v < 0) {
        if (n < 0)
          return im.nodeError(node, "a negative index on a symbolic dimension");
        v += n;
      }
    bool contiguous = !idv.empty();
    for (size_t i = 1; i < idv.size(); ++i)
      contiguous &= idv[i] == idv[i - 1] + 1;
    if (ids->c.dims.empty() || contiguous) {
      std::vector<std::string> idx(axis, ":");
      std::vector<Size> shape = dshape;
      if (ids->c.dims.empty()) {
        idx.push_back(std::to_string(idv[0]));
        shape.erase(shape.begin() + axis);
      } else {
        idx.push_back(std::to_string(idv.front()) + ":" + std::to_string(idv.back() + 1));
        shape[axis] = Size::of(int64_t(idv.size()));
      }
      return define(im, node, data->ref + "[" + join(idx) + "]", data->dtype, shape);
    }
  }
  std::vector<Size> ishape = im.shapeOf(*ids);
  std::vector<Size> shape(dshape.begin(), dshape.begin() + axis);
  shape.insert(shape.end(), ishape.begin(), ishape.end());
  shape.insert(shape.end(), dshape.begin() + axis + 1, dshape.end());
  if (!data->runtime && axis == 0 && data->c.dims.size() == 2 && data->c.isFloat() &&
      data->c.big) {
    // An embedding table: nn.Embedding<V, D>.
    std::string name = im.addParam(
        im.layerName(node, data->c.origin),
        "nn.Embedding<" + joinNumbers({data->c.dims[0], data->c.dims[1]}) + ">",
        data->c.origin, {{"table", im.toTensor(data->c)}});
    data->paramRef = name + ".table";
    im.useStdNn();
    return define(im, node, name + "(" + ids->ref + ")", DType::F16, shape, 0, name + "_out");
  }
  TRY(d, im.operand(*data, false));
  TRY(i, im.operand(*ids, false));
  return define(im, node, "gather(" + d + ", " + i + ", axis = " + std::to_string(axis) + ")",
                im.dtypeOf(*data), shape);
}

llvm::Error opExpand(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  TRY(target, im.constInput(node, 1, "target shape"));
  std::vector<Size> t;
  for (int64_t i = 0; i < target->numElements(); ++i)
    t.push_back(target->intAt(i));
  TRY(shape, broadcast(im, node, im.shapeOf(*x), t));
  if (!x->runtime && x->c.numElements() == 1) {
    std::vector<int64_t> dims = numericDims(shape);
    if (std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; })) {
      if (!foldable(dims))
        return tooLarge(im, node, dims);
      Const c = gatherConst(x->c, dims, [](int64_t) { return int64_t(0); });
      im.defineConst(node.outputs[0], std::move(c));
      return llvm::Error::success();
    }
  }
  if (shape == im.shapeOf(*x)) {
    im.alias(node.outputs[0], *x);
    return llvm::Error::success();
  }
  TRY(e, im.operand(*x, false));
  return define(im, node, "broadcast_to(" + e + ", " + shapeText(shape) + ")", im.dtypeOf(*x),
                shape);
}

// --- elementwise -------------------------------------------------------------

llvm::Error opUnary(Importer &im, const OnnxNode &node) {
  if (node.opType == "Identity" || node.opType == "Dropout") {
    TRY(x, im.input(node, 0));
    if (node.outputs.size() > 1 && !node.outputs[1].empty() && im.uses.count(node.outputs[1]))
      return im.nodeError(node, "its mask output is used; only inference (no mask) is supported");
    im.alias(node.outputs[0], *x);
    return llvm::Error::success();
  }
  if (allConst(im, node))
    return foldElementwise(im, node);
  TRY(x, im.input(node, 0));
  static const std::map<std::string, std::string> names = {
      {"Relu", "relu"}, {"Tanh", "tanh"}, {"Sigmoid", "sigmoid"}, {"Sqrt", "sqrt"},
      {"Exp", "exp"},   {"Log", "log"},   {"Abs", "abs"},         {"Softplus", "softplus"}};
  const std::string &op = node.opType;
  std::string expr;
  DType dtype = x->dtype;
  if (op == "Neg")
    expr = "-" + x->ref;
  else if (op == "Not")
    expr = "!" + x->ref;
  else if (op == "Gelu")
    expr = (node.attribute("approximate") && node.attribute("approximate")->s == "tanh"
                ? "gelu_tanh("
                : "gelu(") +
           x->ref + ")";
  else
    expr = names.at(op) + "(" + x->ref + ")";
  return define(im, node, expr, dtype, x->shape);
}

llvm::Error opBinary(Importer &im, const OnnxNode &node) {
  if (allConst(im, node))
    return foldElementwise(im, node);
  TRY(a, im.input(node, 0));
  TRY(b, im.input(node, 1));
  const std::string &op = node.opType;
  TRY(shape, broadcast(im, node, im.shapeOf(*a), im.shapeOf(*b)));
  DType dtype = a->runtime ? a->dtype : im.dtypeOf(*b);
  if (op == "Pow" && !b->runtime && b->c.numElements() == 1 && a->runtime) {
    float e = b->c.floatAt(0);
    if (e == 1) {
      im.alias(node.outputs[0], *a);
      return llvm::Error::success();
    }
    if (e == 2)
      return define(im, node, a->ref + " * " + a->ref, dtype, shape);
    if (e == 0.5f)
      return define(im, node, "sqrt(" + a->ref + ")", dtype, shape);
  }
  TRY(x, im.operand(*a));
  TRY(y, im.operand(*b));
  static const std::map<std::string, std::string> ops = {
      {"Add", "+"},         {"Sub", "-"},          {"Mul", "*"},          {"Div", "/"},
      {"Pow", "**"},        {"Equal", "=="},       {"Less", "<"},         {"Greater", ">"},
      {"LessOrEqual", "<="}, {"GreaterOrEqual", ">="}, {"And", "&&"},     {"Or", "||"}};
  if (op == "Max" || op == "Min")
    return define(im, node, (op == "Max" ? "maximum(" : "minimum(") + x + ", " + y + ")", dtype,
                  shape);
  bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                 op == "GreaterOrEqual" || op == "And" || op == "Or";
  return define(im, node, x + " " + ops.at(op) + " " + y, compare ? DType::Bool : dtype, shape);
}

llvm::Error opWhere(Importer &im, const OnnxNode &node) {
  if (allConst(im, node))
    return foldElementwise(im, node);
  TRY(c, im.input(node, 0));
  TRY(a, im.input(node, 1));
  TRY(b, im.input(node, 2));
  TRY(s1, broadcast(im, node, im.shapeOf(*c), im.shapeOf(*a)));
  TRY(shape, broadcast(im, node, s1, im.shapeOf(*b)));
  TRY(ce, im.operand(*c, false));
  TRY(ae, im.operand(*a));
  TRY(be, im.operand(*b));
  DType dtype = a->runtime ? a->dtype : im.dtypeOf(*b);
  return define(im, node, "select(" + ce + ", " + ae + ", " + be + ")", dtype, shape);
}

llvm::Error opCast(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  int32_t to = int32_t(node.intAttr("to", kOnnxFloat));
  if (!x->runtime) {
    Const c = x->c;
    c.big = nullptr;
    c.type = to;
    c.floats.clear();
    c.ints.clear();
    for (int64_t i = 0; i < x->c.numElements(); ++i) {
      if (isOnnxFloat(to))
        c.floats.push_back(x->c.floatAt(i));
      else if (x->c.isFloat())
        c.ints.push_back(Size::of(int64_t(std::trunc(x->c.floatAt(i)))));
      else
        c.ints.push_back(to == kOnnxBool ? Size::of(x->c.intAt(i).value().value_or(1) != 0)
                                         : x->c.intAt(i));
    }
    im.defineConst(node.outputs[0], std::move(c));
    return llvm::Error::success();
  }
  Const proto;
  proto.type = to;
  DType dt = im.dtypeOf(Value{false, "", DType::F16, {}, proto, ""});
  if (to == kOnnxString || to == kOnnxUndefined)
    return im.nodeError(node, "casts to " + onnxTypeName(to) + ", which the language lacks");
  if (dt == x->dtype) {
    im.alias(node.outputs[0], *x);
    return llvm::Error::success();
  }
  return define(im, node, std::string(tensor::dtypeName(dt)) + "(" + x->ref + ")", dt, x->shape);
}

// --- compute -----------------------------------------------------------------

llvm::Expected<std::vector<Size>> matmulShape(Importer &im, const OnnxNode &node,
                                              const std::vector<Size> &a,
                                              const std::vector<Size> &b) {
  if (a.size() < 1 || b.size() < 2)
    return im.nodeError(node, "a matmul of ranks " + std::to_string(a.size()) + " and " +
                                  std::to_string(b.size()) + " is not supported");
  if (a.back() != b[b.size() - 2])
    return im.nodeError(node, "contracts " + shapeText(a) + " with " + shapeText(b));
  std::vector<Size> ab(a.begin(), a.end() - std::min<size_t>(a.size(), 2));
  std::vector<Size> bb(b.begin(), b.end() - 2);
  TRY(batch, broadcast(im, node, ab, bb));
  if (a.size() >= 2)
    batch.push_back(a[a.size() - 2]);
  batch.push_back(b.back());
  return batch;
}

llvm::Error opMatMul(Importer &im, const OnnxNode &node) {
  TRY(a, im.input(node, 0));
  TRY(b, im.input(node, 1));
  TRY(shape, matmulShape(im, node, im.shapeOf(*a), im.shapeOf(*b)));
  if (!a->runtime && !b->runtime)
    return im.nodeError(node, "a matmul of two constants is not folded at import");
  TRY(x, im.operand(*a, false));
  TRY(y, im.operand(*b, false));
  return define(im, node, x + " @ " + y, DType::F16, shape);
}

/// The weight of a Gemm or a MatMul as [K, N] (transposed when transB).
tensor::Tensor weightKN(Importer &im, const Const &w, bool transposed) {
  if (!transposed)
    return im.toTensor(w);
  int64_t n = w.dims[0], k = w.dims[1];
  std::vector<float> src = w.allFloats(), dst(src.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j)
      dst[j * n + i] = src[i * k + j];
  tensor::Tensor t(DType::F16, {k, n});
  t.setFloats(dst);
  return t;
}

llvm::Error opGemm(Importer &im, const OnnxNode &node) {
  TRY(a, im.input(node, 0));
  TRY(b, im.input(node, 1));
  TRY(c, im.input(node, 2));
  float alpha = node.floatAttr("alpha", 1), beta = node.floatAttr("beta", 1);
  bool transA = node.intAttr("transA", 0) != 0, transB = node.intAttr("transB", 0) != 0;
  if (!a->runtime || a->shape.size() != 2)
    return im.nodeError(node, "its first operand must be a 2-D value computed at run time");
  if (b->runtime || b->c.dims.size() != 2)
    return im.nodeError(node, "its second operand must be a 2-D constant (the weights)");
  std::string x = a->ref;
  std::vector<Size> as = a->shape;
  if (transA) {
    x = im.emit(node, "transpose(" + x + ", [1, 0])", im.localName(node) + "_t");
    std::swap(as[0], as[1]);
  }
  int64_t k = transB ? b->c.dims[1] : b->c.dims[0], n = transB ? b->c.dims[0] : b->c.dims[1];
  if (!as[1].value() || *as[1].value() != k)
    return im.nodeError(node, "contracts " + shapeText(as) + " with a weight of " +
                                  std::to_string(k) + " rows");
  std::vector<Size> shape = {as[0], Size::of(n)};
  bool biasVector = c && !c->runtime && c->c.dims.size() == 1 && c->c.dims[0] == n;
  if (alpha == 1 && beta == 1 && biasVector) {
    std::string name = im.addParam(
        im.layerName(node, c->c.origin), "nn.Linear<" + joinNumbers({k, n}) + ">",
        b->c.origin + ", " + c->c.origin + (transB ? " (weight transposed)" : ""),
        {{"w", weightKN(im, b->c, transB)}, {"b", im.toTensor(c->c)}});
    im.useStdNn();
    return define(im, node, name + "(" + x + ")", DType::F16, shape, 0, name + "_out");
  }
  std::string w = im.addParam(im.layerName(node, b->c.origin) + "_w",
                              "f16[" + joinNumbers({k, n}) + "]",
                              b->c.origin + (transB ? " (transposed)" : ""),
                              {{"", weightKN(im, b->c, transB)}});
  std::string expr = x + " @ " + w;
  if (alpha != 1)
    expr = "(" + expr + ") * " + std::to_string(alpha);
  if (c) {
    TRY(ce, im.operand(*c));
    TRY(bs, broadcast(im, node, shape, im.shapeOf(*c)));
    (void)bs;
    expr += beta == 1 ? " + " + ce : " + " + ce + " * " + std::to_string(beta);
  }
  return define(im, node, expr, DType::F16, shape);
}

struct Window {
  int64_t kh = 1, kw = 1, stride = 1, pad = 0, dilation = 1;
};

/// Kernel, strides, pads and dilations of a Conv or a pool, as the
/// language takes them (one stride, padding and dilation for both axes).
llvm::Expected<Window> windowOf(Importer &im, const OnnxNode &node,
                                std::optional<std::vector<int64_t>> kernel,
                                const std::vector<Size> &in) {
  Window w;
  if (!kernel || kernel->size() != 2)
    return im.nodeError(node, "only 2-D windows (NCHW) are supported");
  w.kh = (*kernel)[0];
  w.kw = (*kernel)[1];
  auto two = [&](const char *key, int64_t fallback) -> llvm::Expected<int64_t> {
    auto v = node.intsAttr(key).value_or(std::vector<int64_t>{fallback, fallback});
    if (v.empty() || !std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; }))
      return im.nodeError(node, std::string("different ") + key + " per axis (" + intList(v) +
                                    ") are not supported: the language takes one value for both");
    return v[0];
  };
  TRY(stride, two("strides", 1));
  TRY(dilation, two("dilations", 1));
  w.stride = stride;
  w.dilation = dilation;
  std::string autoPad = node.attribute("auto_pad") ? node.attribute("auto_pad")->s : "NOTSET";
  if (autoPad == "NOTSET" || autoPad.empty()) {
    TRY(pad, two("pads", 0));
    w.pad = pad;
  } else if (autoPad == "VALID") {
    w.pad = 0;
  } else {
    // SAME_UPPER/LOWER: symmetric only when the total padding is even.
    if (in.size() != 4 || !in[2].value())
      return im.nodeError(node, "auto_pad " + autoPad + " needs a known height");
    int64_t h = *in[2].value();
    int64_t out = (h + w.stride - 1) / w.stride;
    int64_t total = std::max<int64_t>(0, (out - 1) * w.stride + (w.kh - 1) * w.dilation + 1 - h);
    if (total % 2 != 0 || w.kh != w.kw)
      return im.nodeError(node, "auto_pad " + autoPad + " pads unevenly here, which the "
                                "language's symmetric padding cannot express");
    w.pad = total / 2;
  }
  return w;
}

llvm::Expected<std::vector<Size>> windowShape(Importer &im, const OnnxNode &node,
                                              const std::vector<Size> &in, Size channels,
                                              const Window &w) {
  if (in.size() != 4)
    return im.nodeError(node, "expects an NCHW input, not " + shapeText(in));
  if (!in[2].value() || !in[3].value())
    return im.nodeError(node, "a symbolic height or width (" + shapeText(in) +
                                  ") is not supported here");
  auto out = [&](int64_t n, int64_t k) {
    return (n + 2 * w.pad - w.dilation * (k - 1) - 1) / w.stride + 1;
  };
  return std::vector<Size>{in[0], channels, Size::of(out(*in[2].value(), w.kh)),
                           Size::of(out(*in[3].value(), w.kw))};
}

llvm::Error opConv(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  TRY(wc, im.constInput(node, 1, "weights"));
  TRY(b, im.input(node, 2));
  if (!x->runtime)
    return im.nodeError(node, "a convolution of a constant is not supported");
  if (wc->dims.size() != 4 || x->shape.size() != 4)
    return im.nodeError(node, "only 2-D convolutions (NCHW) are supported");
  auto kernel = node.intsAttr("kernel_shape").value_or(
      std::vector<int64_t>{wc->dims[2], wc->dims[3]});
  TRY(w, windowOf(im, node, kernel, x->shape));
  int64_t groups = node.intAttr("group", 1);
  int64_t o = wc->dims[0], c = wc->dims[1] * groups;
  if (!x->shape[1].value() || *x->shape[1].value() != c)
    return im.nodeError(node, "weights for " + std::to_string(c) + " channels, input " +
                                  shapeText(x->shape));
  TRY(shape, windowShape(im, node, x->shape, Size::of(o), w));
  bool bias = b && !b->runtime && b->c.dims.size() == 1 && b->c.dims[0] == o;
  std::string layer = im.layerName(node, wc->origin);
  if (bias && w.kh == w.kw && w.dilation == 1 && groups == 1) {
    std::string args = joinNumbers({c, o, w.kh});
    if (w.stride != 1 || w.pad != 0)
      args += ", " + joinNumbers({w.stride, w.pad});
    std::string name = im.addParam(layer, "nn.Conv2d<" + args + ">",
                                   wc->origin + ", " + b->c.origin,
                                   {{"w", im.toTensor(*wc)}, {"b", im.toTensor(b->c)}});
    im.useStdNn();
    return define(im, node, name + "(" + x->ref + ")", DType::F16, shape, 0, name + "_out");
  }
  std::string wname = im.addParam(layer + "_w",
                                  "f16[" + joinNumbers({o, wc->dims[1], w.kh, w.kw}) + "]",
                                  wc->origin, {{"", im.toTensor(*wc)}});
  std::string expr = "conv2d(" + x->ref + ", " + wname;
  if (w.stride != 1)
    expr += ", stride = " + std::to_string(w.stride);
  if (w.pad != 0)
    expr += ", padding = " + std::to_string(w.pad);
  if (w.dilation != 1)
    expr += ", dilation = " + std::to_string(w.dilation);
  if (groups != 1)
    expr += ", groups = " + std::to_string(groups);
  expr += ")";
  if (b) {
    TRY(be, im.operand(*b, false));
    expr += " + reshape(" + be + ", [1, " + std::to_string(o) + ", 1, 1])";
  }
  return define(im, node, expr, DType::F16, shape);
}

llvm::Error opPool(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  if (!x->runtime || x->shape.size() != 4)
    return im.nodeError(node, "expects an NCHW value computed at run time");
  if (node.opType == "GlobalAveragePool" || node.opType == "GlobalMaxPool") {
    // Reduced to [N, C], as a hand-written model does (the scheduler keeps
    // the convolutions before it channels-last only then); the [N, C, 1, 1]
    // ONNX has is a reshape, skipped when a Flatten reads it.
    std::vector<Size> flat = {x->shape[0], x->shape[1]};
    std::string expr = node.opType == "GlobalAveragePool"
                           ? "f16(mean(f32(" + x->ref + "), axis = [2, 3]))"
                           : "max(" + x->ref + ", axis = [2, 3])";
    const OnnxNode *flatten = nullptr;
    if (im.uses[node.outputs[0]] == 1)
      for (const OnnxNode &n : im.graph.nodes)
        if (n.opType == "Flatten" && n.inputs[0] == node.outputs[0] && n.intAttr("axis", 1) == 1)
          flatten = &n;
    if (flatten) {
      im.absorbed.insert(size_t(flatten - im.graph.nodes.data()));
      std::string name = im.emit(node, expr);
      im.defineRuntime(flatten->outputs[0], name, x->dtype, flat);
      return llvm::Error::success();
    }
    std::vector<Size> shape = {x->shape[0], x->shape[1], Size::of(1), Size::of(1)};
    return define(im, node, "reshape(" + expr + ", " + shapeText(shape) + ")", x->dtype, shape);
  }
  if (node.intAttr("ceil_mode", 0) != 0)
    return im.nodeError(node, "ceil_mode = 1 is not supported (the language's pools floor)");
  TRY(w, windowOf(im, node, node.intsAttr("kernel_shape"), x->shape));
  if (w.kh != w.kw || w.dilation != 1)
    return im.nodeError(node, "only square windows without dilation are supported");
  if (node.opType == "AveragePool" && w.pad != 0 && node.intAttr("count_include_pad", 0) == 0)
    return im.nodeError(node, "averages over padding with count_include_pad = 0; the language's "
                              "avg_pool2d counts padding as zeros (count_include_pad = 1)");
  if (2 * w.pad > w.kh)
    return im.nodeError(node, "padding more than half the window");
  TRY(shape, windowShape(im, node, x->shape, x->shape[1], w));
  std::string expr = (node.opType == "MaxPool" ? "max_pool2d(" : "avg_pool2d(") + x->ref +
                     ", kernel = " + std::to_string(w.kh);
  if (w.stride != w.kh)
    expr += ", stride = " + std::to_string(w.stride);
  if (w.pad != 0)
    expr += ", padding = " + std::to_string(w.pad);
  return define(im, node, expr + ")", x->dtype, shape);
}

llvm::Error opSoftmax(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  if (!x->runtime)
    return im.nodeError(node, "a softmax of a constant is not folded at import");
  int64_t rank = int64_t(x->shape.size());
  int64_t axis = node.intAttr("axis", im.graph.opset >= 13 ? -1 : 1);
  TRY(ax, axisOf(im, node, axis, x->shape.size()));
  if (im.graph.opset < 13 && ax != rank - 1)
    return im.nodeError(node, "before opset 13 a softmax flattens the axes from its axis on; "
                              "only the last axis is supported");
  return define(im, node,
                "f16(softmax(f32(" + x->ref + "), axis = " + std::to_string(ax) + "))", x->dtype,
                x->shape);
}

} // namespace

/// Layer normalisation over the last axis: nn.LayerNorm<D> when the
/// epsilon is std.nn's, otherwise written out.
llvm::Error emitLayerNorm(Importer &im, const OnnxNode &node, Value &x, const Const &gamma,
                         const Const &beta, float eps, const std::string &output) {
  if (x.shape.empty() || !x.shape.back().value())
    return im.nodeError(node, "normalises over a symbolic axis");
  int64_t d = *x.shape.back().value();
  if (gamma.numElements() != d || beta.numElements() != d)
    return im.nodeError(node, "its scale and bias do not have " + std::to_string(d) + " elements");
  std::string layer = im.layerName(node, beta.origin);
  if (std::fabs(eps - 1e-5f) <= 1e-9f) {
    Const g = gamma, b = beta;
    g.dims = b.dims = {d};
    std::string name = im.addParam(layer, "nn.LayerNorm<" + std::to_string(d) + ">",
                                   gamma.origin + ", " + beta.origin,
                                   {{"gamma", im.toTensor(g)}, {"beta", im.toTensor(b)}});
    im.useStdNn();
    std::string out = im.emit(node, name + "(" + x.ref + ")", name + "_out");
    im.defineRuntime(output, out, tensor::DType::F16, x.shape);
    return llvm::Error::success();
  }
  Const g = gamma, b = beta;
  g.dims = b.dims = {d};
  std::string gname = im.addParam(layer + "_gamma", "f16[" + std::to_string(d) + "]",
                                  gamma.origin, {{"", im.toTensor(g)}});
  std::string bname = im.addParam(layer + "_beta", "f16[" + std::to_string(d) + "]",
                                  beta.origin, {{"", im.toTensor(b)}});
  std::string base = im.localName(node);
  std::string xf = im.freshName(base + "_x"), mu = im.freshName(base + "_mean"),
              c = im.freshName(base + "_centered"), var = im.freshName(base + "_var");
  im.emitLine("let " + xf + " = f32(" + x.ref + ") // " + node.name);
  im.emitLine("let " + mu + " = mean(" + xf + ", axis = -1, keep = true)");
  im.emitLine("let " + c + " = " + xf + " - " + mu);
  im.emitLine("let " + var + " = mean(" + c + " * " + c + ", axis = -1, keep = true)");
  char epsText[32];
  std::snprintf(epsText, sizeof epsText, "%.9g", double(eps));
  std::string e = epsText;
  if (e.find_first_of(".e") == std::string::npos)
    e += ".0";
  else if (e.find('.') == std::string::npos)
    e.insert(e.find('e'), ".0");
  im.emitLine("let " + base + " = f16(" + c + " * rsqrt(" + var + " + " + e + ")) * " + gname +
              " + " + bname);
  im.defineRuntime(output, base, tensor::DType::F16, x.shape);
  return llvm::Error::success();
}

namespace {

llvm::Error opLayerNorm(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  TRY(gamma, im.constInput(node, 1, "scale"));
  if (!x->runtime)
    return im.nodeError(node, "a layer norm of a constant is not folded at import");
  int64_t axis = node.intAttr("axis", -1);
  TRY(ax, axisOf(im, node, axis, x->shape.size()));
  if (ax != int64_t(x->shape.size()) - 1)
    return im.nodeError(node, "normalises over axes " + std::to_string(ax) +
                                  " and on; only the last axis is supported");
  Const beta;
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    TRY(b, im.constInput(node, 2, "bias"));
    beta = *b;
  } else {
    beta.type = kOnnxFloat;
    beta.dims = gamma->dims;
    beta.floats.assign(gamma->numElements(), 0.f);
    beta.origin = node.name + ".bias";
  }
  if (node.outputs.size() > 1)
    for (size_t i = 1; i < node.outputs.size(); ++i)
      if (!node.outputs[i].empty() && im.uses.count(node.outputs[i]))
        return im.nodeError(node, "its mean and inverse deviation outputs are used; only the "
                                  "normalised value is supported");
  return emitLayerNorm(im, node, *x, *gamma, beta, node.floatAttr("epsilon", 1e-5f),
                       node.outputs[0]);
}

llvm::Error opBatchNorm(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  TRY(scale, im.constInput(node, 1, "scale"));
  TRY(bias, im.constInput(node, 2, "bias"));
  TRY(mean, im.constInput(node, 3, "running mean"));
  TRY(var, im.constInput(node, 4, "running variance"));
  if (!x->runtime || x->shape.size() != 4 || !x->shape[1].value())
    return im.nodeError(node, "expects an NCHW value computed at run time");
  if (node.intAttr("training_mode", 0) != 0)
    return im.nodeError(node, "is in training mode; export the model in eval mode");
  int64_t c = *x->shape[1].value();
  float eps = node.floatAttr("epsilon", 1e-5f);
  std::string layer = im.layerName(node, scale->origin);
  std::string origins = scale->origin + ", " + bias->origin + ", " + mean->origin + ", " +
                        var->origin;
  if (std::fabs(eps - 1e-5f) <= 1e-9f) {
    std::string name = im.addParam(layer, "nn.BatchNorm2d<" + std::to_string(c) + ">", origins,
                                   {{"gamma", im.toTensor(*scale)},
                                    {"beta", im.toTensor(*bias)},
                                    {"running_mean", im.toTensor(*mean)},
                                    {"running_var", im.toTensor(*var)}});
    im.useStdNn();
    return define(im, node, name + "(" + x->ref + ")", DType::F16, x->shape, 0, name + "_out");
  }
  // Another epsilon: the scale and shift folded at import.
  std::vector<float> s = scale->allFloats(), b = bias->allFloats(), m = mean->allFloats(),
                     v = var->allFloats();
  std::vector<float> mul(c), add(c);
  for (int64_t i = 0; i < c; ++i) {
    mul[i] = s[i] / std::sqrt(v[i] + eps);
    add[i] = b[i] - m[i] * mul[i];
  }
  tensor::Tensor tm(DType::F16, {1, c, 1, 1}), ta(DType::F16, {1, c, 1, 1});
  tm.setFloats(mul);
  ta.setFloats(add);
  std::string type = "f16[1, " + std::to_string(c) + ", 1, 1]";
  std::string ms = im.addParam(layer + "_scale", type, origins + " (folded)", {{"", std::move(tm)}});
  std::string as = im.addParam(layer + "_shift", type, origins + " (folded)", {{"", std::move(ta)}});
  return define(im, node, x->ref + " * " + ms + " + " + as, DType::F16, x->shape);
}

llvm::Error opReduce(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  if (!x->runtime)
    return im.nodeError(node, "a reduction of a constant is not folded at import");
  TRY(axes, axesOf(im, node, 1));
  bool keep = node.intAttr("keepdims", 1) != 0;
  std::vector<int64_t> list;
  if (!axes || axes->empty()) {
    if (node.intAttr("noop_with_empty_axes", 0) != 0) {
      im.alias(node.outputs[0], *x);
      return llvm::Error::success();
    }
    for (size_t i = 0; i < x->shape.size(); ++i)
      list.push_back(int64_t(i));
  } else {
    for (int64_t a : *axes) {
      TRY(ax, axisOf(im, node, a, x->shape.size()));
      list.push_back(ax);
    }
  }
  std::sort(list.begin(), list.end());
  std::vector<Size> shape;
  for (size_t i = 0; i < x->shape.size(); ++i) {
    bool reduced = std::find(list.begin(), list.end(), int64_t(i)) != list.end();
    if (!reduced)
      shape.push_back(x->shape[i]);
    else if (keep)
      shape.push_back(Size::of(1));
  }
  std::string args = ", axis = " + (list.size() == 1 ? std::to_string(list[0]) : intList(list)) +
                     (keep ? ", keep = true" : "") + ")";
  const std::string &op = node.opType;
  bool isFloat = x->dtype == DType::F16 || x->dtype == DType::BF16;
  std::string expr;
  if (op == "ReduceMean" || op == "ReduceSum")
    expr = isFloat ? "f16(" + std::string(op == "ReduceMean" ? "mean" : "sum") + "(f32(" + x->ref +
                         ")" + args + ")"
                   : std::string(op == "ReduceMean" ? "mean(" : "sum(") + x->ref + args;
  else
    expr = std::string(op == "ReduceMax" ? "max(" : "min(") + x->ref + args;
  return define(im, node, expr, x->dtype, shape);
}

const std::map<std::string, Handler> &handlers() {
  static const std::map<std::string, Handler> table = {
      {"Abs", opUnary},         {"Add", opBinary},
      {"And", opBinary},        {"AveragePool", opPool},
      {"BatchNormalization", opBatchNorm},
      {"Cast", opCast},         {"Concat", opConcat},
      {"Constant", opConstant}, {"ConstantOfShape", opConstantOfShape},
      {"Conv", opConv},         {"Div", opBinary},
      {"Dropout", opUnary},     {"Equal", opBinary},
      {"Exp", opUnary},         {"Expand", opExpand},
      {"Flatten", opFlatten},   {"Gather", opGather},
      {"Gelu", opUnary},        {"Gemm", opGemm},
      {"GlobalAveragePool", opPool}, {"GlobalMaxPool", opPool},
      {"Greater", opBinary},    {"GreaterOrEqual", opBinary},
      {"Identity", opUnary},    {"LayerNormalization", opLayerNorm},
      {"Less", opBinary},       {"LessOrEqual", opBinary},
      {"Log", opUnary},         {"MatMul", opMatMul},
      {"Max", opBinary},        {"MaxPool", opPool},
      {"Min", opBinary},        {"Mul", opBinary},
      {"Neg", opUnary},         {"Not", opUnary},
      {"Or", opBinary},         {"Pow", opBinary},
      {"Range", opRange},       {"ReduceMax", opReduce},
      {"ReduceMean", opReduce}, {"ReduceMin", opReduce},
      {"ReduceSum", opReduce},  {"Relu", opUnary},
      {"Reshape", opReshape},   {"Shape", opShape},
      {"Sigmoid", opUnary},     {"Slice", opSlice},
      {"Softmax", opSoftmax},   {"Softplus", opUnary},
      {"Split", opSplit},       {"Sqrt", opUnary},
      {"Squeeze", opSqueeze},   {"Sub", opBinary},
      {"Tanh", opUnary},        {"Transpose", opTranspose},
      {"Unsqueeze", opUnsqueeze}, {"Where", opWhere},
  };
  return table;
}

} // namespace

bool isSupportedOperator(const std::string &opType) { return handlers().count(opType) != 0; }

/// The inputs an operator cannot do without (optional ones after them).
size_t requiredInputs(const std::string &op) {
  static const std::map<std::string, size_t> counts = {
      {"Constant", 0},   {"Range", 3},     {"Where", 3},      {"BatchNormalization", 5},
      {"Add", 2},        {"Sub", 2},       {"Mul", 2},        {"Div", 2},
      {"Pow", 2},        {"Max", 2},       {"Min", 2},        {"Equal", 2},
      {"Less", 2},       {"Greater", 2},   {"LessOrEqual", 2}, {"GreaterOrEqual", 2},
      {"And", 2},        {"Or", 2},        {"MatMul", 2},     {"Gemm", 2},
      {"Conv", 2},       {"Reshape", 2},   {"Gather", 2},     {"Expand", 2},
      {"LayerNormalization", 2}};
  auto it = counts.find(op);
  return it == counts.end() ? 1 : it->second;
}

llvm::Error convertOperator(Importer &im, const OnnxNode &node) {
  auto it = handlers().find(node.opType);
  if (it == handlers().end())
    return im.nodeError(node, "unsupported operator");
  size_t need = requiredInputs(node.opType);
  bool binary = need == 2 && node.opType != "MatMul" && node.opType != "Gemm" &&
                node.opType != "Conv" && node.opType != "Reshape" && node.opType != "Gather" &&
                node.opType != "Expand" && node.opType != "LayerNormalization";
  if (node.inputs.size() < need || (binary && node.inputs.size() != 2))
    return im.nodeError(node, "has " + std::to_string(node.inputs.size()) +
                                  (node.inputs.size() == 1 ? " input, " : " inputs, ") +
                                  (binary ? "not 2" : "fewer than " + std::to_string(need)));
  for (size_t i = 0; i < need; ++i)
    if (node.inputs[i].empty())
      return im.nodeError(node, "input " + std::to_string(i) + " is missing");
  if (node.outputs.empty() || node.outputs[0].empty())
    return im.nodeError(node, "has no output");
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (!node.inputs[i].empty() && !im.has(node.inputs[i]))
      return im.nodeError(node, "reads '" + node.inputs[i] + "', which nothing defines before it");
  return it->second(im, node);
}

} // namespace lpu::import::detail
