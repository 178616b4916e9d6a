// The shape operators: Reshape and its kin, Shape and what is computed from
// it, slicing and joining, Gather, Expand. Constants fold at import (sizes
// stay symbolic where the inputs' are); the rest is one `let` each.
#include "import/OpSupport.h"

namespace lpu::import::detail::ops {

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
        out.ints.push_back(Size::of(*x / *y)); // truncating, as ONNX's integer Div
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

// --- shape operators ---------------------------------------------------------

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
      if (drop[ax])
        return im.nodeError(node, "axes " + intList(*axes) + " name axis " +
                                      std::to_string(ax) + " twice");
      if (!in[ax].isConst() || in[ax].coeff != 1)
        return im.nodeError(node, "squeezes axis " + std::to_string(ax) + " of " +
                                      shapeText(in) + ", whose size is not 1");
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
    if (inserted[ax])
      return im.nodeError(node, "axes " + intList(*axes) + " name axis " + std::to_string(ax) +
                                    " of the result twice");
    inserted[ax] = true;
  }
  std::vector<Size> out;
  size_t k = 0;
  for (size_t i = 0; i < rank; ++i)
    out.push_back(inserted[i] ? Size::of(1) : in[k++]);
  return reshapeTo(im, node, *x, out);
}

llvm::Error opPad(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  // pads: an input from opset 11 on, an attribute before.
  std::vector<int64_t> pads;
  if (auto a = node.intsAttr("pads")) {
    pads = *a;
  } else if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    TRY(c, im.constInput(node, 1, "pads"));
    TRY(v, numbersOf(im, node, *c, "pads"));
    pads = v;
  }
  if (node.inputs.size() > 3 && !node.inputs[3].empty())
    return im.nodeError(node, "has an axes input; only pads over every axis are supported");
  const size_t rank = im.shapeOf(*x).size();
  if (pads.size() != 2 * rank)
    return im.nodeError(node, "pads " + intList(pads) + " are not two per axis of the rank-" +
                                  std::to_string(rank) + " input");
  // PyTorch writes an AvgPool2d as a Pad before an AveragePool of no
  // padding: of nothing, or of zeros on each side of H and W when the pool
  // pads (count_include_pad, the language's avg_pool2d). The latter is
  // the pool's padding; any other Pad is not supported.
  if (llvm::none_of(pads, [](int64_t p) { return p != 0; })) {
    im.alias(node.outputs[0], *x);
    return llvm::Error::success();
  }
  auto refuse = [&](const std::string &why) {
    return im.nodeError(node, "pads " + intList(pads) + " add elements: " + why +
                                  "; a Pad is supported when it adds nothing, or zeros on every "
                                  "side of H and W alike for AveragePools to read");
  };
  if (rank != 4 || pads[0] || pads[1] || pads[4] || pads[5] || pads[2] != pads[3] ||
      pads[2] != pads[6] || pads[2] != pads[7] || pads[2] < 0)
    return refuse("not the same on every side of H and W only");
  if (auto mode = node.attribute("mode"); mode && mode->s != "constant")
    return refuse("mode '" + mode->s + "'");
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    TRY(c, im.constInput(node, 2, "constant_value"));
    if (c->numElements() != 1 || c->floatAt(0) != 0)
      return refuse("a constant other than 0");
  }
  if (auto value = node.attribute("value"); value && value->f != 0) // before opset 11
    return refuse("a constant other than 0");
  for (const auto &out : im.graph.outputs)
    if (out.name == node.outputs[0])
      return refuse("it is an output of the model");
  for (const OnnxNode &user : im.graph.nodes)
    if (llvm::is_contained(user.inputs, node.outputs[0])) {
      auto own = user.intsAttr("pads");
      if (user.opType != "AveragePool" || user.inputs[0] != node.outputs[0] ||
          (own && llvm::any_of(*own, [](int64_t p) { return p != 0; })))
        return refuse("'" + user.name + "' (" + user.opType +
                      ") reads it, not an AveragePool of no padding");
    }
  im.alias(node.outputs[0], *x);
  im.paddedBy[node.outputs[0]] = pads[2];
  return llvm::Error::success();
}

llvm::Error opTranspose(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  std::vector<Size> in = im.shapeOf(*x);
  std::vector<int64_t> perm(in.size());
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (auto p = node.intsAttr("perm"))
    perm = *p;
  if (perm.size() != in.size())
    return im.nodeError(node, "perm " + intList(perm) + " does not match the rank of " +
                                  shapeText(in));
  std::vector<Size> out;
  std::vector<bool> seen(in.size(), false);
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= int64_t(in.size()) || seen[perm[i]])
      return im.nodeError(node, "perm " + intList(perm) + " is no permutation of the " +
                                    std::to_string(in.size()) + " axes of " + shapeText(in));
    seen[perm[i]] = true;
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
  if (!isOnnxFloat(type) && type != kOnnxBool && (fill < -2147483648.0f || fill >= 2147483648.0f))
    return im.nodeError(node, "fills with " + std::to_string(fill) + ", which does not fit " +
                                  tensor::dtypeName(dt).str());
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
  if (llvm::Error e = define(im, node, "iota<" + l.text() + ">()", DType::I32, {l}))
    return e;
  TRY(r, im.value(node.outputs[0]));
  r->nonNegative = true;
  return llvm::Error::success();
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
    x.nonNegative = !in.c.isFloat();
    for (int64_t i = 0; x.nonNegative && i < in.c.numElements(); ++i)
      x.nonNegative = in.c.intAt(i).value().value_or(-1) >= 0;
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
  if (llvm::Error e = define(im, node, x.ref + "[" + join(idx) + "]", x.dtype, shape, output))
    return e;
  TRY(r, im.value(node.outputs[output]));
  r->nonNegative = x.nonNegative;
  return llvm::Error::success();
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
    // The language has no empty dimension: a slice that keeps nothing (an
    // end at or before its start, after clamping) is refused here, at its
    // node, not as a negative size in what is written.
    if (b.value() && *b.value() <= a)
      return im.nodeError(node, "slices axis " + std::to_string(ax) + " of " + dim.text() + " from " +
                                    std::to_string(a) + " to " + std::to_string(*b.value()) +
                                    ": an empty result, which the language's tensors cannot be");
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
        return im.nodeError(node, "index " + std::to_string(v) + " is outside axis " +
                                      std::to_string(axis) + " of " + shapeText(dshape));
    Const c = gatherConst(data->c, od, [&](int64_t flat) {
      int64_t in = flat % inner, rest = flat / inner;
      int64_t k = rest % nIds, outer = rest / nIds;
      int64_t idx = idv[k] < 0 ? idv[k] + dd[axis] : idv[k];
      return (outer * dd[axis] + idx) * inner + in;
    });
    im.defineConst(node.outputs[0], std::move(c));
    return llvm::Error::success();
  }
  // Indices in [-n, n) count from the end when negative (ONNX), the
  // language's gather clamps: constant ones are checked and made
  // non-negative here, run-time ones by a select before the gather.
  std::optional<Value> wrappedIds;
  if (data->runtime && !ids->runtime) {
    TRY(idv, numbersOf(im, node, ids->c, "indices"));
    int64_t n = dshape[axis].value().value_or(-1);
    bool negative = false;
    for (int64_t &v : idv) {
      if (n >= 0 && (v < -n || v >= n))
        return im.nodeError(node, "index " + std::to_string(v) + " is outside axis " +
                                      std::to_string(axis) + " of " + shapeText(dshape));
      if (v < 0) {
        if (n < 0)
          return im.nodeError(node, "a negative index on a symbolic dimension");
        v += n;
        negative = true;
      }
    }
    bool contiguous = !idv.empty() && ids->c.dims.size() <= 1;
    for (size_t i = 1; i < idv.size(); ++i)
      contiguous &= idv[i] == idv[i - 1] + 1;
    if (negative && !ids->c.dims.empty() && !contiguous) {
      wrappedIds = *ids;
      Const &c = wrappedIds->c;
      c.big = nullptr;
      c.floats.clear();
      c.ints.clear();
      for (int64_t v : idv)
        c.ints.push_back(Size::of(v));
      wrappedIds->paramRef.clear();
    }
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
  if (ids->runtime && !ids->nonNegative && !im.options.idsInRange) {
    const Size &n = dshape[axis];
    std::string i = ids->dtype == DType::I32 ? ids->ref : "i32(" + ids->ref + ")";
    std::string size = n.isConst() || (n.syms.size() == 1 && n.coeff == 1) ? n.text()
                                                                            : "(" + n.text() + ")";
    std::string ref = im.emit(node, "select(" + i + " < 0, " + i + " + " + size + ", " + i + ")",
                              ids->ref + "_wrapped");
    wrappedIds = *ids;
    wrappedIds->ref = ref;
    wrappedIds->dtype = DType::I32;
  }
  if (wrappedIds)
    ids = &*wrappedIds;
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

} // namespace lpu::import::detail::ops
