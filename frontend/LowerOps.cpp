// Lowering of the checked operations to IR ops: the checker has computed
// every result type with numbers; these hooks make the ops that compute it.
// Broadcasting becomes explicit `broadcast` ops, literals constants of the
// type they meet, indexing slices and reshapes, 1-D or batched matmuls
// reshapes and broadcasts around an IR matmul of rank >= 2.
#include "frontend/LowerImpl.h"
#include "support/Tensor.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

#include <numeric>

namespace lpu::check {

namespace {

std::vector<int64_t> twice(int64_t v) { return {v, v}; }

/// The IR op of the elementwise built-in `name` with `arity` operands
/// (support/Elementwise.def).
std::optional<ir::OpKind> builtinKind(llvm::StringRef name, unsigned arity) {
  std::optional<tensor::ElementwiseOp> e = tensor::elementwiseBuiltin(name);
  if (!e || tensor::elementwiseInfo(*e).arity != arity)
    return std::nullopt;
  return ir::elementwiseKind(*e);
}

/// The value of a compile-time number or bool.
std::optional<double> numberOf(const Value &v) {
  if (v.kind == Value::Kind::Int)
    if (auto c = v.size.constantValue())
      return static_cast<double>(*c);
  if (v.kind == Value::Kind::Float)
    return v.number;
  if (v.kind == Value::Kind::Bool && v.boolean)
    return *v.boolean ? 1.0 : 0.0;
  return std::nullopt;
}

std::optional<int64_t> intOf(const Value &v) {
  return v.kind == Value::Kind::Int ? v.size.constantValue() : std::nullopt;
}

/// NumPy's broadcast of two shapes (already checked to be compatible).
std::vector<int64_t> broadcastShapes(const std::vector<int64_t> &a,
                                     const std::vector<int64_t> &b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[n - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

} // namespace

// ---------------------------------------------------------------- functions

void Lowering::beginFunction(const std::string &name,
                             std::vector<std::pair<std::string, int64_t>> bucket) {
  building_ = std::make_unique<ir::Function>(name, std::move(bucket));
  fn_ = building_.get();
  failed_ = false;
  errorsAtStart_ = diags_.errorCount();
  ownErrors_ = 0;
  params_.clear();
  states_.clear();
  written_.clear();
}

void Lowering::abandonFunction() {
  building_.reset();
  fn_ = nullptr;
  params_.clear();
  states_.clear();
  written_.clear();
}

void Lowering::finishFunction(const Value &returned, const ResultType &ret, llvm::SMRange at,
                              const std::vector<std::vector<std::string>> &bucketDims) {
  if (!fn_)
    return;
  std::vector<ir::Op *> outs;
  std::vector<std::string> names;
  for (size_t i = 0; i < ret.types.size(); ++i) {
    const Value *v = !ret.tuple ? &returned
                     : i < returned.elements.size() ? &returned.elements[i]
                                                    : nullptr;
    ir::Op *out = v ? materialize(*v, ret.types[i], at) : nullptr;
    if (!out) {
      // The checker reported why, or a hook did; say so only if neither did.
      if (!failed_)
        cannotLower(at, "the entry", "its result has no IR value");
      abandonFunction();
      return;
    }
    outs.push_back(out);
    names.push_back(!ret.tuple               ? std::string("out")
                    : !ret.names[i].empty() ? ret.names[i]
                                            : "out" + std::to_string(i));
  }
  // The states this call wrote, after the results: each named by its path.
  for (const std::string &path : written_) {
    if (llvm::is_contained(names, path)) {
      cannotLower(at, "state '" + path + "'", "a result of the entry has the same name");
      abandonFunction();
      return;
    }
    outs.push_back(states_.at(path));
    names.push_back(path);
  }
  ir::Op *r = fn_->append(ir::OpKind::Return, ir::Type{}, outs, location(at.Start));
  r->setAttr("names", names);
  if (!bucketDims.empty()) {
    std::vector<std::string> fields;
    for (size_t i = 0; i < bucketDims.size() && i < ret.types.size(); ++i)
      fields.push_back(names[i] + "=" + llvm::join(bucketDims[i], ","));
    r->setAttr("bucket_dims", std::move(fields));
  }
  if (!written_.empty())
    r->setAttr("states", written_);
  module_.functions.push_back(std::move(building_));
  fn_ = nullptr;
  params_.clear();
  states_.clear();
  written_.clear();
}

// ---------------------------------------------------------------- helpers

void Lowering::cannotLower(llvm::SMRange at, const std::string &what, const std::string &why) {
  failed_ = true;
  // One error per root cause: after a checker error here, a value that
  // cannot be lowered is most likely its consequence.
  if (diags_.errorCount() != errorsAtStart_ + ownErrors_)
    return;
  diags_.report(DiagID::CannotLower, at, what, why);
  ++ownErrors_;
}

std::optional<ir::Type> Lowering::irType(const TensorType &t, llvm::SMRange at) {
  auto dtype = tensor::parseDTypeName(t.dtype);
  if (!dtype || t.pack) {
    cannotLower(at, "a value of type " + t.str(),
                t.pack ? "the dimensions of its batch pack are not known"
                       : "its dtype is not known");
    return std::nullopt;
  }
  ir::Type out{*dtype, {}};
  constexpr int64_t kMaxElements = tensor::kMaxShapeElements;
  int64_t elements = 1;
  for (const Size &s : t.dims) {
    auto c = s.constantValue();
    if (!c || *c < 1) {
      cannotLower(at, "a value of type " + t.str(), "a dimension is not a positive number");
      return std::nullopt;
    }
    if (*c > kMaxElements / elements) {
      cannotLower(at, "a value of type " + t.str(),
                  "it has more than 2^48 elements, far more than any memory holds");
      return std::nullopt;
    }
    elements *= *c;
    out.shape.push_back(*c);
  }
  return out;
}

ir::Location Lowering::location(llvm::SMLoc at) const {
  if (!at.isValid())
    return {};
  const llvm::SourceMgr &sm = diags_.sources();
  unsigned id = sm.FindBufferContainingLoc(at);
  if (!id)
    return {};
  LineColumn lc = lineColumn(sm, at);
  return {sm.getMemoryBuffer(id)->getBufferIdentifier().str(), lc.line, lc.column};
}

ir::Op *Lowering::emit(ir::OpKind kind, ir::Type type, std::vector<ir::Op *> operands,
                       llvm::SMRange at, std::vector<std::pair<std::string, ir::Attr>> attrs) {
  std::vector<ir::Type> types;
  for (ir::Op *o : operands) {
    if (!o)
      return nullptr; // an operand failed to lower: reported already
    types.push_back(o->type());
  }
  // The checker's rules and the IR's differ in places (a `<` of bools, a
  // conv2d of integers): such a program is reported at its source.
  auto inferred = ir::inferType(kind, types, attrs, &type);
  if (auto *why = std::get_if<std::string>(&inferred)) {
    std::string text = sourceText(at);
    if (text.size() > 40)
      text = text.substr(0, 37) + "...";
    // The IR names its op first ("lt: ..."); the user wrote `<`.
    llvm::StringRef reason(*why);
    reason.consume_front((ir::mnemonic(kind) + ": ").str());
    cannotLower(at, "'" + text + "'", reason.str());
    return nullptr;
  }
  ir::Op *op = fn_->append(kind, std::move(type), std::move(operands), location(at.Start));
  for (auto &[name, value] : attrs)
    op->setAttr(name, std::move(value));
  return op;
}

ir::Op *Lowering::constant(double value, const ir::Type &type, llvm::SMRange at) {
  ir::Attr attr;
  if (type.dtype == ir::DType::Bool)
    attr = value != 0;
  else if (tensor::isInteger(type.dtype))
    attr = static_cast<int64_t>(value);
  else
    attr = value;
  return emit(ir::OpKind::Constant, type, {}, at, {{"value", attr}});
}

ir::Op *Lowering::broadcastTo(ir::Op *x, const std::vector<int64_t> &shape, llvm::SMRange at) {
  if (!x || x->type().shape == shape)
    return x;
  return emit(ir::OpKind::Broadcast, ir::Type{x->type().dtype, shape}, {x}, at);
}

ir::Op *Lowering::reshapeTo(ir::Op *x, const std::vector<int64_t> &shape, llvm::SMRange at) {
  if (!x || x->type().shape == shape)
    return x;
  return emit(ir::OpKind::Reshape, ir::Type{x->type().dtype, shape}, {x}, at);
}

ir::Op *Lowering::input(const std::string &name, const TensorType &t, llvm::SMRange at,
                        const std::vector<std::string> &bucketDims) {
  auto type = irType(t, at);
  if (!type)
    return nullptr;
  ir::Op *op = emit(ir::OpKind::Input, *type, {}, at, {{"name", name}});
  if (op && !bucketDims.empty())
    op->setAttr("bucket_dims", bucketDims);
  return op;
}

ir::Op *Lowering::param(const std::string &path, const TensorType &t, llvm::SMRange at) {
  if (auto it = params_.find(path); it != params_.end())
    return it->second;
  auto type = irType(t, at);
  ir::Op *op = type ? emit(ir::OpKind::Param, *type, {}, at, {{"path", path}}) : nullptr;
  params_[path] = op;
  return op;
}

ir::Op *Lowering::stateRead(const std::string &path, const TensorType &t, llvm::SMRange at) {
  if (auto it = states_.find(path); it != states_.end())
    return it->second;
  for (const auto &op : fn_->ops())
    if (op->kind() == ir::OpKind::Input && op->stringAttr("name") == path) {
      cannotLower(at, "state '" + path + "'", "a parameter of the entry has the same name");
      states_[path] = nullptr;
      return nullptr;
    }
  auto type = irType(t, at);
  ir::Op *op = type ? emit(ir::OpKind::Input, *type, {}, at, {{"name", path}, {"state", true}})
                    : nullptr;
  states_[path] = op;
  return op;
}

void Lowering::stateWrite(const std::string &path, ir::Op *value, llvm::SMRange at) {
  if (!value) {
    if (!failed_)
      cannotLower(at, "state '" + path + "'", "its new value has no IR value");
    return;
  }
  states_[path] = value;
  if (!llvm::is_contained(written_, path))
    written_.push_back(path);
}

ir::Op *Lowering::materialize(const Value &v, const TensorType &t, llvm::SMRange at) {
  if (v.isTensor()) {
    if (!v.op)
      return nullptr;
    auto type = irType(t, at);
    return type ? broadcastTo(v.op, type->shape, at) : nullptr;
  }
  auto n = numberOf(v);
  if (!n)
    return nullptr;
  auto type = irType(t, at);
  return type ? constant(*n, *type, at) : nullptr;
}

std::vector<ir::Op *> Lowering::elementwiseOperands(const std::vector<const Value *> &values,
                                                    const std::string &dtype,
                                                    const std::vector<int64_t> &shape,
                                                    llvm::SMRange at) {
  std::vector<ir::Op *> out;
  for (const Value *v : values) {
    if (v->isTensor()) {
      out.push_back(broadcastTo(v->op, shape, at));
      continue;
    }
    auto n = numberOf(*v);
    auto d = tensor::parseDTypeName(v->kind == Value::Kind::Bool ? "bool" : dtype);
    out.push_back(n && d ? constant(*n, ir::Type{*d, shape}, at) : nullptr);
  }
  return out;
}

// ---------------------------------------------------------------- operators

void Lowering::unary(const ast::UnaryExpr &e, const Value &x, Value &result) {
  if (!result.isTensor() || !x.isTensor())
    return;
  auto type = irType(result.tensor, e.range);
  if (type)
    result.op = emit(e.op == ast::UnaryOp::Neg ? ir::OpKind::Neg : ir::OpKind::Not, *type, {x.op},
                     e.opRange);
}

void Lowering::binary(const ast::BinaryExpr &e, const Value &l, const Value &r, Value &result) {
  if (!result.isTensor())
    return;
  using B = ast::BinaryOp;
  ir::OpKind kind = ir::OpKind::Add;
  switch (e.op) {
  case B::Or: kind = ir::OpKind::Or; break;
  case B::And: kind = ir::OpKind::And; break;
  case B::Eq: kind = ir::OpKind::Eq; break;
  case B::Ne: kind = ir::OpKind::Ne; break;
  case B::Lt: kind = ir::OpKind::Lt; break;
  case B::Le: kind = ir::OpKind::Le; break;
  case B::Gt: kind = ir::OpKind::Gt; break;
  case B::Ge: kind = ir::OpKind::Ge; break;
  case B::Add: kind = ir::OpKind::Add; break;
  case B::Sub: kind = ir::OpKind::Sub; break;
  case B::Mul: kind = ir::OpKind::Mul; break;
  case B::Div: kind = ir::OpKind::Div; break;
  case B::Mod: kind = ir::OpKind::Rem; break;
  case B::Pow: kind = ir::OpKind::Pow; break;
  case B::MatMul: return; // matmul()
  }
  auto type = irType(result.tensor, e.opRange);
  if (!type)
    return;
  const std::string &dtype = l.isTensor() ? l.tensor.dtype : r.isTensor() ? r.tensor.dtype : "bool";
  auto operands = elementwiseOperands({&l, &r}, dtype, type->shape, e.opRange);
  result.op = emit(kind, *type, operands, e.opRange);
}

ir::Op *Lowering::matmulOps(ir::Op *a, ir::Op *b, const ir::Type &out, llvm::SMRange at) {
  if (!a || !b)
    return nullptr;
  std::vector<int64_t> x = a->type().shape, y = b->type().shape;
  // 1-D operands become a row (lhs) or a column (rhs).
  if (y.size() == 1)
    b = reshapeTo(b, y = {y[0], 1}, at);
  if (x.size() == 1)
    a = reshapeTo(a, x = {1, x[0]}, at);
  ir::Type type{out.dtype, {}};
  if (y.size() == 2 && x.size() > 2) {
    // [..B, M, K] @ [K, N]: the leading dimensions fold into the rows, so
    // the weights are not copied per batch.
    int64_t rows = std::accumulate(x.begin(), x.end() - 1, int64_t{1}, std::multiplies<>());
    a = reshapeTo(a, {rows, x.back()}, at);
    type.shape = {rows, y[1]};
  } else {
    std::vector<int64_t> bx(x.begin(), x.end() - 2), by(y.begin(), y.end() - 2);
    std::vector<int64_t> batch = broadcastShapes(bx, by);
    std::vector<int64_t> xs = batch, ys = batch;
    xs.insert(xs.end(), x.end() - 2, x.end());
    ys.insert(ys.end(), y.end() - 2, y.end());
    a = broadcastTo(a, xs, at);
    b = broadcastTo(b, ys, at);
    type.shape = batch;
    type.shape.push_back(x[x.size() - 2]);
    type.shape.push_back(y.back());
  }
  ir::Op *m = emit(ir::OpKind::Matmul, type, {a, b}, at);
  return reshapeTo(m, out.shape, at);
}

void Lowering::matmul(const ast::BinaryExpr &e, const Value &a, const Value &b, Value &result) {
  if (!result.isTensor())
    return;
  if (auto type = irType(result.tensor, e.opRange))
    result.op = matmulOps(a.op, b.op, *type, e.opRange);
}

void Lowering::convert(const ast::CallExpr &e, const Value &x, Value &result) {
  if (!result.isTensor())
    return;
  auto type = irType(result.tensor, e.range);
  if (!type)
    return;
  if (!x.isTensor()) {
    auto n = numberOf(x);
    result.op = n ? constant(*n, *type, e.range) : nullptr;
    return;
  }
  if (x.op && x.op->type() == *type)
    result.op = x.op; // f32(x) of an f32 x
  else
    result.op = emit(ir::OpKind::Convert, *type, {x.op}, e.range);
}

void Lowering::index(const ast::IndexExpr &e, const Value &base, const std::vector<Value> &idx,
                     Value &result) {
  if (!result.isTensor() || !base.isTensor() || !base.op)
    return;
  auto type = irType(result.tensor, e.range);
  if (!type)
    return;
  const std::vector<int64_t> &in = base.op->type().shape;
  std::vector<int64_t> start(in.size(), 0), limit = in;
  size_t k = 0;
  for (size_t i = 0; i < e.items.size() && i < in.size(); ++i) {
    const ast::IndexItem &it = e.items[i];
    if (!it.isSlice) {
      auto at = intOf(idx[k++]);
      start[i] = at.value_or(0);
      limit[i] = start[i] + 1;
      continue;
    }
    if (it.lo)
      start[i] = intOf(idx[k++]).value_or(0);
    if (it.hi)
      limit[i] = intOf(idx[k++]).value_or(in[i]);
  }
  ir::Op *x = base.op;
  if (start != std::vector<int64_t>(in.size(), 0) || limit != in) {
    std::vector<int64_t> shape(in.size());
    for (size_t i = 0; i < in.size(); ++i)
      shape[i] = limit[i] - start[i];
    x = emit(ir::OpKind::Slice, ir::Type{type->dtype, shape}, {x}, e.range,
             {{"limit", limit}, {"start", start}});
  }
  result.op = reshapeTo(x, type->shape, e.range);
}

// ---------------------------------------------------------------- built-ins

void Lowering::builtin(const std::string &name, const ast::CallExpr &e,
                       const std::vector<Arg> &args, Value &result) {
  // The arguments by the built-in's parameter names (the checker has
  // already bound and checked them the same way).
  auto bind = [&](std::initializer_list<const char *> params) {
    std::vector<const char *> names(params);
    std::vector<const Value *> out(names.size(), nullptr);
    size_t pos = 0;
    for (const Arg &a : args) {
      if (a.name.empty()) {
        if (pos < out.size())
          out[pos++] = &a.value;
        continue;
      }
      for (size_t i = 0; i < names.size(); ++i)
        if (a.name == names[i])
          out[i] = &a.value;
    }
    return out;
  };
  llvm::SMRange at = e.range;

  if (auto kind = builtinKind(name, 1)) {
    auto a = bind({"x"});
    if (result.isTensor() && a[0])
      if (auto type = irType(result.tensor, at))
        result.op = emit(*kind, *type, {a[0]->op}, at);
    return;
  }
  if (result.kind == Value::Kind::List && name == "split") {
    auto a = bind({"x", "n", "axis"});
    if (!a[0] || !a[0]->op)
      return;
    ir::Op *x = a[0]->op;
    int64_t rank = static_cast<int64_t>(x->type().rank());
    int64_t axis = a[2] ? intOf(*a[2]).value_or(0) : 0;
    if (axis < 0)
      axis += rank;
    std::vector<int64_t> start(rank, 0), limit = x->type().shape;
    int64_t n = static_cast<int64_t>(result.elements.size());
    int64_t part = x->type().shape[axis] / n;
    for (int64_t i = 0; i < n; ++i) {
      start[axis] = i * part;
      limit[axis] = (i + 1) * part;
      std::vector<int64_t> shape = x->type().shape;
      shape[axis] = part;
      result.elements[i].op = emit(ir::OpKind::Slice, ir::Type{x->type().dtype, shape}, {x}, at,
                                   {{"limit", limit}, {"start", start}});
    }
    return;
  }
  if (!result.isTensor())
    return; // size arithmetic (floordiv, min of sizes, ...): folded already
  auto type = irType(result.tensor, at);
  if (!type)
    return;
  auto axisOf = [&](const Value *v, int64_t rank) {
    int64_t axis = v ? intOf(*v).value_or(0) : 0;
    return axis < 0 ? axis + rank : axis;
  };

  if (auto kind = builtinKind(name, 2)) {
    auto a = bind({"a", "b"});
    auto ops = elementwiseOperands({a[0], a[1]}, result.tensor.dtype, type->shape, at);
    result.op = emit(*kind, *type, ops, at);
    return;
  }
  if (name == "quantize" || name == "dequantize") {
    // Spelled in the IR's own ops (docs/language.md, "Quantization"), so
    // that the interpreter and the chip compute them with the arithmetic
    // they already agree on bit for bit:
    //   quantize:   v = clamp(f32(x) / scale, -1024, 1024)
    //               r = (v + 1.5 * 2^23) - 1.5 * 2^23   (round half to even)
    //               q = i8(clamp(r + f32(zero_point), -128, 127))
    //   dequantize: f32(i32(q) - i32(zero_point)) * scale
    // With a zero point known here (a number, or none: 0), quantize clamps
    // once, before rounding, to the integers that stay in range:
    //               v = clamp(f32(x) / scale, -128 - z, 127 - z)
    //               q = i8(((v + 1.5 * 2^23) - 1.5 * 2^23) + z)   (no add for z = 0)
    // the same value (rounding is monotonic and keeps integers, so it
    // commutes with a clamp to integers; NaN still gives 0), in 7 VXM ops
    // of every element instead of 10.
    auto a = bind({"x", "scale", "zero_point", "axis"});
    if (!a[0] || !a[0]->op)
      return;
    ir::Op *x = a[0]->op;
    const std::vector<int64_t> shape = x->type().shape;
    const int64_t axis = axisOf(a[3], int64_t(shape.size()));
    // A value of a scale's or zero point's shape ([] or [x.shape[axis]])
    // broadcast to x's shape.
    auto spreadOp = [&](ir::Op *t) -> ir::Op * {
      if (!t)
        return nullptr;
      if (t->type().rank() == 1) {
        std::vector<int64_t> lined(shape.size(), 1);
        lined[size_t(axis)] = t->type().shape[0];
        t = reshapeTo(t, lined, at);
      }
      return broadcastTo(t, shape, at);
    };
    // A scale or zero point as a tensor of x's shape in `dtype`.
    auto spread = [&](const Value *v, ir::DType dtype, double dflt) -> ir::Op * {
      ir::Type full{dtype, shape};
      if (!v)
        return constant(dflt, full, at);
      if (!v->isTensor()) {
        auto n = numberOf(*v);
        return n ? constant(*n, full, at) : nullptr;
      }
      ir::Op *t = v->op;
      if (!t)
        return nullptr;
      if (t->type().dtype != dtype)
        t = emit(ir::OpKind::Convert, ir::Type{dtype, t->type().shape}, {t}, at);
      return spreadOp(t);
    };
    auto splat = [&](double value, ir::DType dtype) { return constant(value, ir::Type{dtype, shape}, at); };
    auto op2 = [&](ir::OpKind kind, ir::Op *l, ir::Op *r) {
      return l && r ? emit(kind, ir::Type{l->type().dtype, shape}, {l, r}, at) : nullptr;
    };
    auto to = [&](ir::Op *v, ir::DType dtype) {
      return !v || v->type().dtype == dtype ? v : emit(ir::OpKind::Convert, ir::Type{dtype, shape}, {v}, at);
    };
    ir::Op *scale = spread(a[1], ir::DType::F32, 1.0);
    if (name == "quantize") {
      ir::Op *v = op2(ir::OpKind::Div, to(x, ir::DType::F32), scale);
      // A scale that is a parameter can be calibrated: the division is
      // tagged with the parameters' paths (and a fixed zero point, or the
      // axis of a per-channel scale), so that `lpurun --reference
      // --calibrate` observes its dividend (docs/quantization.md).
      auto paramOf = [](const Value *value) -> const ir::Op * {
        return value && value->isTensor() && value->op && value->op->kind() == ir::OpKind::Param
                   ? value->op
                   : nullptr;
      };
      const ir::Op *scaleParam = paramOf(a[1]), *zeroParam = paramOf(a[2]);
      std::optional<double> fixedZero = a[2] ? numberOf(*a[2]) : 0.0;
      if (scaleParam && v && (zeroParam || fixedZero)) {
        std::vector<std::string> paths{scaleParam->stringAttr("path").value_or("")};
        if (zeroParam)
          paths.push_back(zeroParam->stringAttr("path").value_or(""));
        else if (*fixedZero != 0)
          v->setAttr("observe_zero", static_cast<int64_t>(*fixedZero));
        v->setAttr("observe", paths);
        if (scaleParam->type().rank() == 1 || (zeroParam && zeroParam->type().rank() == 1))
          v->setAttr("observe_axis", axis);
      }
      constexpr double kRound = 12582912.0; // 1.5 * 2^23: adding it rounds to an integer
      std::optional<double> z = a[2] ? numberOf(*a[2]) : std::optional<double>(0.0);
      if (a[2] && a[2]->isTensor())
        z.reset();
      if (z && *z >= -128 && *z <= 127 && *z == double(int64_t(*z))) {
        v = op2(ir::OpKind::Minimum, op2(ir::OpKind::Maximum, v, splat(-128 - *z, ir::DType::F32)),
                splat(127 - *z, ir::DType::F32));
        v = op2(ir::OpKind::Sub, op2(ir::OpKind::Add, v, splat(kRound, ir::DType::F32)),
                splat(kRound, ir::DType::F32));
        if (*z != 0)
          v = op2(ir::OpKind::Add, v, splat(*z, ir::DType::F32));
        result.op = to(v, ir::DType::I8);
        return;
      }
      // A zero point as a tensor: the same single clamp, its bounds
      // -128 - z and 127 - z computed once on the zero point's own shape
      // and broadcast.
      ir::Op *zt = a[2] && a[2]->isTensor() ? a[2]->op : nullptr;
      if (zt && zt->type().dtype == ir::DType::I8 && zt->type().rank() <= 1) {
        ir::Type zf{ir::DType::F32, zt->type().shape};
        ir::Op *z32 = emit(ir::OpKind::Convert, zf, {zt}, at);
        ir::Op *lo = z32 ? emit(ir::OpKind::Sub, zf, {constant(-128, zf, at), z32}, at) : nullptr;
        ir::Op *hi = z32 ? emit(ir::OpKind::Sub, zf, {constant(127, zf, at), z32}, at) : nullptr;
        v = op2(ir::OpKind::Minimum, op2(ir::OpKind::Maximum, v, spreadOp(lo)), spreadOp(hi));
        v = op2(ir::OpKind::Sub, op2(ir::OpKind::Add, v, splat(kRound, ir::DType::F32)),
                splat(kRound, ir::DType::F32));
        v = op2(ir::OpKind::Add, v, spreadOp(z32));
        result.op = to(v, ir::DType::I8);
        return;
      }
      v = op2(ir::OpKind::Minimum, op2(ir::OpKind::Maximum, v, splat(-1024, ir::DType::F32)),
              splat(1024, ir::DType::F32));
      v = op2(ir::OpKind::Sub, op2(ir::OpKind::Add, v, splat(kRound, ir::DType::F32)),
              splat(kRound, ir::DType::F32));
      v = op2(ir::OpKind::Add, v, to(spread(a[2], ir::DType::I8, 0), ir::DType::F32));
      v = op2(ir::OpKind::Minimum, op2(ir::OpKind::Maximum, v, splat(-128, ir::DType::F32)),
              splat(127, ir::DType::F32));
      result.op = to(v, ir::DType::I8);
      return;
    }
    // i8 less its zero point is an integer of at most 255 in magnitude,
    // exact in f32: subtracted there, one conversion of each instead of
    // two (the same value).
    if (x->type().dtype == ir::DType::I8 && a[2] && a[2]->isTensor()) {
      ir::Op *d = op2(ir::OpKind::Sub, to(x, ir::DType::F32), spread(a[2], ir::DType::F32, 0));
      result.op = op2(ir::OpKind::Mul, d, scale);
      return;
    }
    ir::Op *d = op2(ir::OpKind::Sub, to(x, ir::DType::I32),
                    to(spread(a[2], x->type().dtype, 0), ir::DType::I32));
    result.op = op2(ir::OpKind::Mul, to(d, ir::DType::F32), scale);
    return;
  }
  if (name == "select") {
    auto a = bind({"cond", "a", "b"});
    auto ops = elementwiseOperands({a[0], a[1], a[2]}, result.tensor.dtype, type->shape, at);
    result.op = emit(ir::OpKind::Select, *type, ops, at);
    return;
  }
  if (name == "sum" || name == "mean" || name == "max" || name == "min" || name == "argmax" ||
      name == "softmax") {
    bool single = name == "argmax" || name == "softmax";
    auto a = single ? bind({"x", "axis"}) : bind({"x", "axis", "keep"});
    if (!a[0] || !a[0]->op)
      return;
    ir::Op *x = a[0]->op;
    int64_t rank = static_cast<int64_t>(x->type().rank());
    std::vector<int64_t> axes;
    if (!a[1]) {
      for (int64_t i = 0; i < rank; ++i)
        axes.push_back(i);
    } else if (a[1]->kind == Value::Kind::List) {
      for (const Value &el : a[1]->elements)
        axes.push_back(axisOf(&el, rank));
      // The IR's normal form: sorted, each axis once.
      std::sort(axes.begin(), axes.end());
      axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
    } else {
      axes.push_back(axisOf(a[1], rank));
    }
    if (name == "softmax") {
      result.op = emit(ir::OpKind::Softmax, *type, {x}, at, {{"axis", axes[0]}});
      return;
    }
    if (name == "argmax") {
      result.op = emit(ir::OpKind::Argmax, *type, {x}, at, {{"axis", axes[0]}, {"keep", false}});
      return;
    }
    bool keep = a[2] && a[2]->boolean.value_or(false);
    ir::OpKind kind = name == "sum"    ? ir::OpKind::ReduceSum
                      : name == "mean" ? ir::OpKind::ReduceMean
                      : name == "max"  ? ir::OpKind::ReduceMax
                                       : ir::OpKind::ReduceMin;
    result.op = emit(kind, *type, {x}, at, {{"axes", axes}, {"keep", keep}});
    return;
  }
  if (name == "reshape" || name == "broadcast_to") {
    auto a = bind({"x", "shape"});
    if (!a[0] || !a[0]->op)
      return;
    result.op = emit(name == "reshape" ? ir::OpKind::Reshape : ir::OpKind::Broadcast, *type,
                     {a[0]->op}, at);
    return;
  }
  if (name == "transpose") {
    auto a = bind({"x", "perm"});
    std::vector<int64_t> perm;
    for (const Value &el : a[1]->elements)
      perm.push_back(intOf(el).value_or(0));
    result.op = emit(ir::OpKind::Transpose, *type, {a[0]->op}, at, {{"perm", perm}});
    return;
  }
  if (name == "concat") {
    auto a = bind({"xs", "axis"});
    std::vector<ir::Op *> parts;
    for (const Value &el : a[0]->elements)
      parts.push_back(el.op);
    int64_t axis = axisOf(a[1], static_cast<int64_t>(type->rank()));
    result.op = parts.size() == 1 ? parts[0]
                                  : emit(ir::OpKind::Concat, *type, parts, at, {{"axis", axis}});
    return;
  }
  if (name == "gather") {
    auto a = bind({"table", "ids", "axis"});
    if (!a[0]->op || !a[1]->op)
      return;
    int64_t axis = axisOf(a[2], static_cast<int64_t>(a[0]->op->type().rank()));
    // The IR gathers by i32 ids; narrower integer ids widen first.
    ir::Op *ids = a[1]->op;
    if (ids->type().dtype != ir::DType::I32)
      ids = emit(ir::OpKind::Convert, ir::Type{ir::DType::I32, ids->type().shape}, {ids}, at);
    result.op = emit(ir::OpKind::Gather, *type, {a[0]->op, ids}, at, {{"axis", axis}});
    return;
  }
  if (name == "update") {
    auto a = bind({"x", "pos", "rows", "axis"});
    if (!a[0]->op || !a[2]->op)
      return;
    int64_t axis = axisOf(a[3], static_cast<int64_t>(a[0]->op->type().rank()));
    // The position as i32: a number becomes a constant, a narrower integer
    // widens.
    ir::Op *pos = a[1]->op;
    if (!a[1]->isTensor())
      pos = constant(double(intOf(*a[1]).value_or(0)), ir::Type{ir::DType::I32, {}}, at);
    else if (pos && pos->type().dtype != ir::DType::I32)
      pos = emit(ir::OpKind::Convert, ir::Type{ir::DType::I32, pos->type().shape}, {pos}, at);
    result.op = emit(ir::OpKind::Update, *type, {a[0]->op, pos, a[2]->op}, at, {{"axis", axis}});
    return;
  }
  if (name == "iota") {
    result.op = emit(ir::OpKind::Iota, *type, {}, at, {{"axis", int64_t{0}}});
    return;
  }
  if (name == "zeros" || name == "ones" || name == "full") {
    double value = name == "ones" ? 1 : 0;
    if (name == "full") {
      auto a = bind({"value"});
      value = a[0] ? numberOf(*a[0]).value_or(0) : 0;
    }
    result.op = constant(value, *type, at);
    return;
  }
  if (name == "conv2d") {
    auto a = bind({"x", "w", "stride", "padding", "dilation", "groups"});
    auto num = [&](const Value *v, int64_t dflt) { return v ? intOf(*v).value_or(dflt) : dflt; };
    result.op = emit(ir::OpKind::Conv2d, *type, {a[0]->op, a[1]->op}, at,
                     {{"dilation", twice(num(a[4], 1))},
                      {"groups", num(a[5], 1)},
                      {"padding", twice(num(a[3], 0))},
                      {"stride", twice(num(a[2], 1))}});
    return;
  }
  if (name == "max_pool2d" || name == "avg_pool2d") {
    auto a = bind({"x", "kernel", "stride", "padding"});
    auto num = [&](const Value *v, int64_t dflt) { return v ? intOf(*v).value_or(dflt) : dflt; };
    int64_t kernel = num(a[1], 1), padding = num(a[3], 0);
    if (2 * padding > kernel) {
      cannotLower(at, "'" + name + "'",
                  "padding " + std::to_string(padding) + " is more than half the kernel " +
                      std::to_string(kernel));
      return;
    }
    result.op = emit(name == "max_pool2d" ? ir::OpKind::MaxPool2d : ir::OpKind::AvgPool2d, *type,
                     {a[0]->op}, at,
                     {{"kernel", twice(kernel)},
                      {"padding", twice(num(a[3], 0))},
                      {"stride", twice(num(a[2], kernel))}});
    return;
  }
  cannotLower(at, "'" + name + "'", "the IR has no operation for it");
}

} // namespace lpu::check
