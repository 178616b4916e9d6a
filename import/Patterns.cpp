// Node groups that become one std.nn layer or one built-in, so that the
// imported source reads like a hand-written one and gets the scheduler's
// fused lowerings: Linear (MatMul + Add of a bias), ConvNorm (a convolution
// without bias and the batch norm after it), GELU's erf form, layer
// normalisation written out (before opset 17), and self-attention. A group
// is taken only when its inner values have no other readers; its root (the
// last node) emits it, and the other nodes are skipped. A root that finds
// at import that its group is not what it looked like converts the nodes
// one by one instead.
#include "import/ImporterImpl.h"

#include "support/Tensor.h"


#include <cmath>

namespace lpu::import::detail {

namespace {

/// Input `i` of `n`, or "" when the node has fewer (a malformed graph).
const std::string &arg(const OnnxNode &n, size_t i) {
  static const std::string none;
  return i < n.inputs.size() ? n.inputs.at(i) : none;
}

const OnnxNode *only(Importer &im, const std::string &value, const char *opType) {
  const OnnxNode *n = im.producerOf(value);
  return n && n->opType == opType ? n : nullptr;
}

bool singleUse(Importer &im, const std::string &value) {
  auto it = im.uses.find(value);
  return it != im.uses.end() && it->second == 1;
}

const OnnxTensor *initializer(Importer &im, const std::string &value) {
  std::string name = im.throughIdentity(value);
  for (const OnnxTensor &t : im.graph.initializers)
    if (t.name == name)
      return &t;
  return nullptr;
}

/// A one-element constant's value, from an initializer or a Constant node.
std::optional<double> scalar(Importer &im, const std::string &value) {
  std::string name = im.throughIdentity(value);
  if (const OnnxTensor *t = initializer(im, name)) {
    if (t->numElements() != 1)
      return std::nullopt;
    return t->floats.empty() ? double(t->ints[0]) : double(t->floats[0]);
  }
  const OnnxNode *n = only(im, name, "Constant");
  if (!n)
    return std::nullopt;
  const OnnxAttribute *a = n->attribute("value");
  if (a && a->t && a->t->numElements() == 1)
    return a->t->floats.empty() ? double(a->t->ints[0]) : double(a->t->floats[0]);
  if (const OnnxAttribute *f = n->attribute("value_float"))
    return f->f;
  return std::nullopt;
}

bool near(std::optional<double> v, double want, double rel = 1e-3) {
  return v && std::fabs(*v - want) <= rel * std::fabs(want);
}

size_t indexOf(Importer &im, const OnnxNode *n) { return size_t(n - im.graph.nodes.data()); }

/// The other operand of a two-input node, given one of them.
std::optional<std::string> other(const OnnxNode &n, const std::string &one) {
  if (n.inputs.size() != 2)
    return std::nullopt;
  if (arg(n, 0) == one)
    return arg(n, 1);
  if (arg(n, 1) == one)
    return arg(n, 0);
  return std::nullopt;
}

/// The single reader of `value`, when it has exactly one.
const OnnxNode *reader(Importer &im, const std::string &value) {
  if (!singleUse(im, value))
    return nullptr;
  for (const OnnxNode &n : im.graph.nodes)
    for (const std::string &in : n.inputs)
      if (in == value)
        return &n;
  return nullptr;
}

/// Registers a group: `members` are skipped, `root` emits; when `emit`
/// declines (returns false), the members and the root convert one by one.
void registerGroup(Importer &im, std::vector<const OnnxNode *> members, const OnnxNode *root,
                   std::function<llvm::Expected<bool>()> emit) {
  size_t rootIndex = indexOf(im, root);
  if (im.patternRoots.count(rootIndex) || im.absorbed.count(rootIndex))
    return;
  for (const OnnxNode *m : members)
    if (im.absorbed.count(indexOf(im, m)) || im.patternRoots.count(indexOf(im, m)))
      return;
  std::vector<size_t> indices;
  for (const OnnxNode *m : members) {
    indices.push_back(indexOf(im, m));
    im.absorbed.insert(indexOf(im, m));
  }
  std::sort(indices.begin(), indices.end());
  im.patternRoots[rootIndex] = [&im, indices, root, emit]() -> llvm::Error {
    auto done = emit();
    if (!done)
      return done.takeError();
    if (*done)
      return llvm::Error::success();
    for (size_t i : indices)
      if (llvm::Error e = convertOperator(im, im.graph.nodes[i]))
        return e;
    return convertOperator(im, *root);
  };
}

// --- Linear: MatMul(x, W) + b ------------------------------------------------

void findLinear(Importer &im, const OnnxNode &mm) {
  const OnnxTensor *w = initializer(im, mm.inputs.size() == 2 ? arg(mm, 1) : "");
  if (!w || w->dims.size() != 2 || !isOnnxFloat(w->type) || initializer(im, arg(mm, 0)))
    return;
  const OnnxNode *add = reader(im, mm.outputs[0]);
  if (!add || add->opType != "Add")
    return;
  auto biasName = other(*add, mm.outputs[0]);
  const OnnxTensor *b = biasName ? initializer(im, *biasName) : nullptr;
  if (!b || b->dims.size() != 1 || b->dims[0] != w->dims[1] || !isOnnxFloat(b->type))
    return;
  registerGroup(im, {&mm}, add, [&im, &mm, add, w, b]() -> llvm::Expected<bool> {
    auto x = im.value(arg(mm, 0));
    if (!x)
      return x.takeError();
    if (!(*x)->runtime || (*x)->shape.empty() || !(*x)->shape.back().value() ||
        *(*x)->shape.back().value() != w->dims[0])
      return false;
    std::string name = im.addParam(
        im.layerName(*add, b->name),
        "nn.Linear<" + joinNumbers({w->dims[0], w->dims[1]}) + ">", w->name + ", " + b->name,
        {{"w", im.toTensor(Const{w->type, w->dims, {}, {}, w, w->name})},
         {"b", im.toTensor(Const{b->type, b->dims, {}, {}, b, b->name})}});
    im.useStdNn();
    std::vector<Size> shape = (*x)->shape;
    shape.back() = Size::of(w->dims[1]);
    std::string out = im.emit(*add, name + "(" + (*x)->ref + ")", name + "_out");
    im.defineRuntime(add->outputs[0], out, tensor::DType::F16, shape);
    return true;
  });
}

// --- ConvNorm: a convolution without bias, then batch norm -------------------

void findConvNorm(Importer &im, const OnnxNode &conv) {
  if (conv.inputs.size() > 2 && !arg(conv, 2).empty())
    return;
  const OnnxTensor *w = initializer(im, conv.inputs.size() > 1 ? arg(conv, 1) : "");
  if (!w || w->dims.size() != 4 || w->dims[2] != w->dims[3] || !isOnnxFloat(w->type) ||
      conv.intAttr("group", 1) != 1)
    return;
  const OnnxNode *bn = reader(im, conv.outputs[0]);
  if (!bn || bn->opType != "BatchNormalization" || bn->inputs.size() < 5 ||
      std::fabs(bn->floatAttr("epsilon", 1e-5f) - 1e-5f) > 1e-9f)
    return;
  std::vector<const OnnxTensor *> stats;
  for (size_t i = 1; i < 5; ++i) {
    const OnnxTensor *t = initializer(im, arg(*bn, i));
    if (!t || t->dims != std::vector<int64_t>{w->dims[0]})
      return;
    stats.push_back(t);
  }
  registerGroup(im, {&conv}, bn, [&im, &conv, bn, w, stats]() -> llvm::Expected<bool> {
    auto x = im.value(arg(conv, 0));
    if (!x)
      return x.takeError();
    auto dilations = conv.intsAttr("dilations").value_or(std::vector<int64_t>{1, 1});
    auto strides = conv.intsAttr("strides").value_or(std::vector<int64_t>{1, 1});
    auto pads = conv.intsAttr("pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
    std::string autoPad = conv.attribute("auto_pad") ? conv.attribute("auto_pad")->s : "";
    const Value &xv = **x;
    if (!xv.runtime || xv.shape.size() != 4 || !xv.shape[1].value() ||
        *xv.shape[1].value() != w->dims[1] || !xv.shape[2].value() || !xv.shape[3].value() ||
        (!autoPad.empty() && autoPad != "NOTSET") || dilations != std::vector<int64_t>{1, 1} ||
        strides.size() != 2 || strides[0] != strides[1] || pads.size() != 4 ||
        !std::all_of(pads.begin(), pads.end(), [&](int64_t p) { return p == pads[0]; }))
      return false;
    int64_t c = w->dims[1], o = w->dims[0], k = w->dims[2], stride = strides[0], pad = pads[0];
    std::string args = joinNumbers({c, o, k});
    if (stride != 1 || pad != 0)
      args += ", " + joinNumbers({stride, pad});
    auto tensorOf = [&](const OnnxTensor *t) {
      return im.toTensor(Const{t->type, t->dims, {}, {}, t, t->name});
    };
    std::string name = im.addParam(
        im.layerName(conv, w->name), "nn.ConvNorm<" + args + ">",
        w->name + ", " + stats[0]->name + ", " + stats[1]->name + ", " + stats[2]->name + ", " +
            stats[3]->name,
        {{"w", tensorOf(w)},
         {"bn.gamma", tensorOf(stats[0])},
         {"bn.beta", tensorOf(stats[1])},
         {"bn.running_mean", tensorOf(stats[2])},
         {"bn.running_var", tensorOf(stats[3])}});
    im.useStdNn();
    auto out = [&](int64_t n) { return (n + 2 * pad - k) / stride + 1; };
    std::vector<Size> shape = {xv.shape[0], Size::of(o), Size::of(out(*xv.shape[2].value())),
                               Size::of(out(*xv.shape[3].value()))};
    std::string local = im.emit(*bn, name + "(" + xv.ref + ")", name + "_out");
    im.defineRuntime(bn->outputs[0], local, tensor::DType::F16, shape);
    return true;
  });
}

// --- GELU: x * 0.5 * (1 + erf(x / sqrt(2))) ---------------------------------

void findGelu(Importer &im, const OnnxNode &erf) {
  const OnnxNode *scaled = im.producerOf(arg(erf, 0));
  if (!scaled || !singleUse(im, arg(erf, 0)))
    return;
  std::string x;
  if (scaled->opType == "Div" && near(scalar(im, arg(*scaled, 1)), std::sqrt(2.0)))
    x = arg(*scaled, 0);
  else if (scaled->opType == "Mul") {
    for (int k = 0; k < 2; ++k)
      if (near(scalar(im, arg(*scaled, k)), std::sqrt(0.5)))
        x = arg(*scaled, 1 - k);
  }
  if (x.empty())
    return;
  const OnnxNode *plus = reader(im, erf.outputs[0]);
  if (!plus || plus->opType != "Add")
    return;
  auto one = other(*plus, erf.outputs[0]);
  if (!one || !near(scalar(im, *one), 1.0))
    return;
  const OnnxNode *m1 = reader(im, plus->outputs[0]);
  if (!m1 || m1->opType != "Mul")
    return;
  auto m1other = other(*m1, plus->outputs[0]);
  if (!m1other)
    return;
  // Either (x * (1 + erf)) * 0.5 or (x * 0.5) * (1 + erf).
  std::vector<const OnnxNode *> members = {scaled, &erf, plus};
  const OnnxNode *root = nullptr;
  if (*m1other == x) {
    const OnnxNode *m2 = reader(im, m1->outputs[0]);
    auto half = m2 && m2->opType == "Mul" ? other(*m2, m1->outputs[0]) : std::nullopt;
    if (!half || !near(scalar(im, *half), 0.5))
      return;
    members.push_back(m1);
    root = m2;
  } else {
    const OnnxNode *h = im.producerOf(*m1other);
    if (!h || h->opType != "Mul" || !singleUse(im, *m1other))
      return;
    auto hx = other(*h, x);
    if (!hx || !near(scalar(im, *hx), 0.5))
      return;
    members.push_back(h);
    root = m1;
  }
  // x itself is read by the scaling and by the product: other readers are fine.
  registerGroup(im, members, root, [&im, root, x]() -> llvm::Expected<bool> {
    auto v = im.value(x);
    if (!v)
      return v.takeError();
    if (!(*v)->runtime)
      return false;
    std::string out = im.emit(*root, "gelu(" + (*v)->ref + ")", "gelu");
    im.defineRuntime(root->outputs[0], out, (*v)->dtype, (*v)->shape);
    return true;
  });
}

// --- layer norm written out (torch before opset 17) ---------------------------

/// One axis; that it is the last is checked at import, when ranks are known.
bool lastAxis(const OnnxNode &reduce) {
  auto axes = reduce.intsAttr("axes");
  return axes && axes->size() == 1;
}

bool reducesLast(const OnnxNode &reduce, size_t rank) {
  auto axes = reduce.intsAttr("axes");
  return axes && axes->size() == 1 && ((*axes)[0] == -1 || (*axes)[0] == int64_t(rank) - 1);
}

void findLayerNorm(Importer &im, const OnnxNode &div) {
  // div = (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)
  const OnnxNode *sub = only(im, arg(div, 0), "Sub");
  const OnnxNode *sqrt = only(im, arg(div, 1), "Sqrt");
  if (!sub || !sqrt)
    return;
  const OnnxNode *rm1 = only(im, arg(*sub, 1), "ReduceMean");
  if (!rm1 || arg(*rm1, 0) != arg(*sub, 0) || !lastAxis(*rm1))
    return;
  const OnnxNode *addEps = only(im, arg(*sqrt, 0), "Add");
  if (!addEps)
    return;
  const OnnxNode *rm2 = nullptr;
  std::optional<double> eps;
  for (int k = 0; k < 2; ++k)
    if (const OnnxNode *r = only(im, arg(*addEps, k), "ReduceMean")) {
      rm2 = r;
      eps = scalar(im, arg(*addEps, 1 - k));
    }
  if (!rm2 || !eps || !lastAxis(*rm2))
    return;
  const OnnxNode *pow = im.producerOf(arg(*rm2, 0));
  if (!pow || arg(*pow, 0) != sub->outputs[0])
    return;
  if (!((pow->opType == "Pow" && near(scalar(im, arg(*pow, 1)), 2.0)) ||
        (pow->opType == "Mul" && arg(*pow, 1) == sub->outputs[0])))
    return;
  // sub is read by pow (once or twice) and div only.
  int subUses = im.uses[sub->outputs[0]];
  if (subUses != (pow->opType == "Mul" ? 3 : 2))
    return;
  for (const std::string *v : {&rm1->outputs[0], &rm2->outputs[0], &pow->outputs[0],
                               &addEps->outputs[0], &sqrt->outputs[0], &div.outputs[0]})
    if (!singleUse(im, *v))
      return;
  const OnnxNode *mul = reader(im, div.outputs[0]);
  if (!mul || mul->opType != "Mul")
    return;
  auto gammaName = other(*mul, div.outputs[0]);
  const OnnxTensor *gamma = gammaName ? initializer(im, *gammaName) : nullptr;
  const OnnxNode *add = reader(im, mul->outputs[0]);
  auto betaName = add && add->opType == "Add" ? other(*add, mul->outputs[0]) : std::nullopt;
  const OnnxTensor *beta = betaName ? initializer(im, *betaName) : nullptr;
  if (!gamma || !beta || gamma->numElements() != beta->numElements())
    return;
  std::string x = arg(*sub, 0);
  float e = float(*eps);
  registerGroup(im, {rm1, sub, pow, rm2, addEps, sqrt, &div, mul}, add,
                [&im, add, x, gamma, beta, e, rm1, rm2]() -> llvm::Expected<bool> {
                  auto v = im.value(x);
                  if (!v)
                    return v.takeError();
                  if (!(*v)->runtime || (*v)->shape.empty() || !(*v)->shape.back().value() ||
                      *(*v)->shape.back().value() != gamma->numElements() ||
                      !reducesLast(*rm1, (*v)->shape.size()) ||
                      !reducesLast(*rm2, (*v)->shape.size()))
                    return false;
                  Const g{gamma->type, gamma->dims, {}, {}, gamma, gamma->name};
                  Const b{beta->type, beta->dims, {}, {}, beta, beta->name};
                  if (llvm::Error err = emitLayerNorm(im, *add, **v, g, b, e, add->outputs[0]))
                    return err;
                  return true;
                });
}

// --- self-attention: softmax(q k^T / sqrt(E)) v ------------------------------

void findAttention(Importer &im, const OnnxNode &softmax) {
  const OnnxNode *pv = reader(im, softmax.outputs[0]);
  if (!pv || pv->opType != "MatMul" || arg(*pv, 0) != softmax.outputs[0])
    return;
  int64_t axis = softmax.intAttr("axis", -1);
  if (axis != -1 && axis != 3)
    return;
  const OnnxNode *scale = im.producerOf(arg(softmax, 0));
  if (!scale || (scale->opType != "Div" && scale->opType != "Mul") ||
      !singleUse(im, arg(softmax, 0)))
    return;
  const OnnxNode *qk = only(im, arg(*scale, 0), "MatMul");
  if (!qk || !singleUse(im, arg(*scale, 0)))
    return;
  const OnnxNode *kt = only(im, arg(*qk, 1), "Transpose");
  if (!kt || !singleUse(im, arg(*qk, 1)))
    return;
  auto perm = kt->intsAttr("perm");
  bool fromHeads = perm && *perm == std::vector<int64_t>{0, 1, 3, 2};
  bool fromRows = perm && *perm == std::vector<int64_t>{0, 2, 3, 1};
  if (!fromHeads && !fromRows)
    return;
  bool divide = scale->opType == "Div";
  registerGroup(
      im, {kt, qk, scale, &softmax}, pv,
      [&im, pv, qk, kt, scale, fromRows, divide]() -> llvm::Expected<bool> {
        // The scale is often computed from shapes (sqrt of a dimension):
        // folded by now.
        auto factor = im.value(arg(*scale, 1));
        if (!factor)
          return factor.takeError();
        if ((*factor)->runtime || (*factor)->c.numElements() != 1 || !(*factor)->c.isFloat())
          return false;
        double f = (*factor)->c.floatAt(0);
        auto q = im.value(arg(*qk, 0));
        auto k = im.value(arg(*kt, 0));
        auto v = im.value(arg(*pv, 1));
        if (!q || !k || !v) {
          llvm::consumeError(q.takeError());
          llvm::consumeError(k.takeError());
          llvm::consumeError(v.takeError());
          return false;
        }
        Value &qv = **q, &kv = **k, &vv = **v;
        if (!qv.runtime || !kv.runtime || !vv.runtime || qv.shape.size() != 4 ||
            kv.shape.size() != 4 || vv.shape != qv.shape || !qv.shape[3].value())
          return false;
        std::vector<Size> kHeads = fromRows ? std::vector<Size>{kv.shape[0], kv.shape[2],
                                                                kv.shape[1], kv.shape[3]}
                                            : kv.shape;
        if (kHeads != qv.shape)
          return false;
        double e = double(*qv.shape[3].value());
        if (divide ? !near(f, std::sqrt(e)) : !near(f, 1 / std::sqrt(e)))
          return false;
        std::string kref = kv.ref;
        if (fromRows)
          kref = im.emit(*kt, "transpose(" + kv.ref + ", [0, 2, 1, 3])", "k_heads");
        std::string out = im.emit(*pv, "nn.attention(" + qv.ref + ", " + kref + ", " + vv.ref + ")",
                                  "attention");
        im.useStdNn();
        im.defineRuntime(pv->outputs[0], out, tensor::DType::F16, qv.shape);
        return true;
      });
}

} // namespace

void findPatterns(Importer &im) {
  for (const OnnxNode &n : im.graph.nodes) {
    if (n.outputs.empty() || n.outputs[0].empty())
      continue; // refused when it is converted
    if (n.opType == "MatMul")
      findLinear(im, n);
    else if (n.opType == "Conv")
      findConvNorm(im, n);
    else if (n.opType == "Erf")
      findGelu(im, n);
    else if (n.opType == "Div")
      findLayerNorm(im, n);
    else if (n.opType == "Softmax")
      findAttention(im, n);
  }
}

} // namespace lpu::import::detail
