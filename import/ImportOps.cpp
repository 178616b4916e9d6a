// One handler per ONNX operator: constants fold at import (shapes, and what
// is computed from them), everything else becomes one `let`.
#include "import/OpSupport.h"

#include <algorithm>

namespace lpu::import::detail {

namespace ops {

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

llvm::Error opBinary(Importer &im, const OnnxNode &node);

/// Max and Min of any number of inputs (ONNX's are variadic): one is the
/// input itself, more a chain of maximum (minimum) over their broadcast.
llvm::Error opVariadic(Importer &im, const OnnxNode &node) {
  if (node.inputs.size() == 2)
    return opBinary(im, node);
  TRY(first, im.input(node, 0));
  if (node.inputs.size() == 1) {
    im.alias(node.outputs[0], *first);
    return llvm::Error::success();
  }
  if (allConst(im, node))
    return im.nodeError(node, "has " + std::to_string(node.inputs.size()) +
                                  " constant inputs; a constant " + node.opType +
                                  " is folded from 2 only");
  const std::string fn = node.opType == "Max" ? "maximum(" : "minimum(";
  std::vector<Size> shape = im.shapeOf(*first);
  DType dtype = im.dtypeOf(*first);
  bool runtime = first->runtime;
  TRY(expr, im.operand(*first));
  std::string out = expr;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    TRY(v, im.input(node, i));
    TRY(joined, broadcast(im, node, shape, im.shapeOf(*v)));
    shape = joined;
    if (v->runtime && !runtime) {
      dtype = v->dtype;
      runtime = true;
    }
    TRY(y, im.operand(*v));
    out = fn + out + ", " + y + ")";
  }
  return define(im, node, out, dtype, shape);
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
  if (op == "Div" && (dtype == DType::I32 || dtype == DType::I16 || dtype == DType::I8)) {
    // ONNX's integer Div truncates toward zero; the language's `/` floors
    // (docs/ir.md). The floor is one below the truncation exactly when the
    // division is inexact and the operands' signs differ (the remainder
    // is then non-zero); a constant divisor's sign is known here.
    std::string differ = "(" + x + " < 0) != (" + y + " < 0)";
    if (!b->runtime && b->c.numElements() == 1 && b->c.intAt(0).value()) {
      int64_t d = *b->c.intAt(0).value();
      if (d == 1 || d == -1 || d == 0) // exact (x / 0 is 0 in the language)
        return define(im, node, x + " / " + y, dtype, shape);
      differ = x + (d > 0 ? " < 0" : " > 0");
    }
    std::string q = x + " / " + y;
    return define(im, node,
                  "select(" + x + " % " + y + " != 0 && " + differ + ", " + q + " + 1, " + q + ")",
                  dtype, shape);
  }
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
  if (w.kh < 1 || w.kw < 1)
    return im.nodeError(node, "a window of " + intList(*kernel) + ": sizes must be at least 1");
  // `least`: the smallest value the attribute may hold (a stride or a
  // dilation of 0 has no window, a negative padding crops).
  auto two = [&](const char *key, int64_t fallback, int64_t least) -> llvm::Expected<int64_t> {
    auto v = node.intsAttr(key).value_or(std::vector<int64_t>{fallback, fallback});
    for (int64_t x : v)
      if (x < least)
        return im.nodeError(node, std::string(key) + " " + intList(v) + " holds " +
                                      std::to_string(x) + "; each must be at least " +
                                      std::to_string(least));
    if (v.empty() || !std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; }))
      return im.nodeError(node, std::string("different ") + key + " per axis (" + intList(v) +
                                    ") are not supported: the language takes one value for both");
    return v[0];
  };
  TRY(stride, two("strides", 1, 1));
  TRY(dilation, two("dilations", 1, 1));
  w.stride = stride;
  w.dilation = dilation;
  std::string autoPad = node.attribute("auto_pad") ? node.attribute("auto_pad")->s : "NOTSET";
  if (autoPad == "NOTSET" || autoPad.empty()) {
    TRY(pad, two("pads", 0, 0));
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
  int64_t h = *in[2].value(), wd = *in[3].value();
  // The window's extent, dilated, must fit the padded input.
  int64_t spanH = w.dilation * (w.kh - 1) + 1, spanW = w.dilation * (w.kw - 1) + 1;
  if (spanH > h + 2 * w.pad || spanW > wd + 2 * w.pad)
    return im.nodeError(node, "its window (" + std::to_string(spanH) + " x " +
                                  std::to_string(spanW) + ") is larger than the input " +
                                  shapeText(in) + " padded by " + std::to_string(w.pad));
  auto out = [&](int64_t n, int64_t span) { return (n + 2 * w.pad - span) / w.stride + 1; };
  return std::vector<Size>{in[0], channels, Size::of(out(h, spanH)), Size::of(out(wd, spanW))};
}

llvm::Error opConv(Importer &im, const OnnxNode &node) {
  TRY(x, im.input(node, 0));
  TRY(wc, im.constInput(node, 1, "weights"));
  TRY(b, im.input(node, 2));
  if (!x->runtime)
    return im.nodeError(node, "a convolution of a constant is not supported");
  if (wc->dims.size() != 4 || x->shape.size() != 4)
    return im.nodeError(node, "only 2-D convolutions (NCHW) are supported");
  std::vector<int64_t> weightKernel = {wc->dims[2], wc->dims[3]};
  auto kernel = node.intsAttr("kernel_shape").value_or(weightKernel);
  if (kernel != weightKernel)
    return im.nodeError(node, "kernel_shape " + intList(kernel) + " differs from the weights' " +
                                  intList(weightKernel));
  TRY(w, windowOf(im, node, kernel, x->shape));
  int64_t groups = node.intAttr("group", 1);
  int64_t o = wc->dims[0], c = wc->dims[1] * groups;
  if (groups < 1 || o < 1 || o % groups != 0)
    return im.nodeError(node, std::to_string(o) + " output channels in " +
                                  std::to_string(groups) + " groups: the groups must be at "
                                  "least 1 and divide the output channels");
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
  // A Pad of zeros in front (opPad): the pool's own padding, counted.
  bool padded = false;
  if (auto it = im.paddedBy.find(node.inputs[0]); it != im.paddedBy.end()) {
    w.pad = it->second;
    padded = true;
  }
  if (node.opType == "AveragePool" && w.pad != 0 && !padded && node.intAttr("count_include_pad", 0) == 0)
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

} // namespace ops

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
  im.emitLine("let " + xf + " = f32(" + x.ref + ") // " + commentText(node.name));
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

namespace ops {

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
  if (auto twice = std::adjacent_find(list.begin(), list.end()); twice != list.end())
    return im.nodeError(node, "reduces axis " + std::to_string(*twice) + " twice (its axes repeat)");
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
      {"Max", opVariadic},      {"MaxPool", opPool},
      {"Min", opVariadic},      {"Mul", opBinary},
      {"Neg", opUnary},         {"Not", opUnary},
      {"Or", opBinary},         {"Pad", opPad},
      {"Pow", opBinary},
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

} // namespace ops

bool isSupportedOperator(const std::string &opType) { return ops::handlers().count(opType) != 0; }

namespace {

/// The inputs an operator cannot do without (optional ones after them).
size_t requiredInputs(const std::string &op) {
  static const std::map<std::string, size_t> counts = {
      {"Constant", 0},   {"Range", 3},     {"Where", 3},      {"BatchNormalization", 5},
      {"Add", 2},        {"Sub", 2},       {"Mul", 2},        {"Div", 2},
      {"Pow", 2},        {"Equal", 2},
      {"Less", 2},       {"Greater", 2},   {"LessOrEqual", 2}, {"GreaterOrEqual", 2},
      {"And", 2},        {"Or", 2},        {"MatMul", 2},     {"Gemm", 2},
      {"Conv", 2},       {"Reshape", 2},   {"Gather", 2},     {"Expand", 2},
      {"LayerNormalization", 2}};
  auto it = counts.find(op);
  return it == counts.end() ? 1 : it->second;
}

} // namespace

llvm::Error convertOperator(Importer &im, const OnnxNode &node) {
  auto it = ops::handlers().find(node.opType);
  if (it == ops::handlers().end())
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
