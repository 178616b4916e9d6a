// The built-in operations of docs/language.md, each typed by its real rule, and
// their work in FLOPs (docs/language.md, "Statistics").
#include "frontend/CheckerImpl.h"
#include "frontend/LowerImpl.h"
#include "support/DType.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lpu::check {

namespace {

// The elementwise built-ins (relu, silu, maximum, ...) are the Builtin rows
// of support/Elementwise.def; these are the others.
const char *const kOthers[] = {"select",     "sum",        "mean",
                               "max",     "min",       "argmax",     "softmax",    "reshape",
                               "transpose", "concat",  "split",      "broadcast_to", "gather",
                               "iota",    "zeros",     "ones",       "full",       "conv2d",
                               "max_pool2d", "avg_pool2d", "floordiv", "ceildiv", "quantize",
                               "dequantize", "update"};

/// The dtype a contraction (`@`, conv2d) of two `dtype` operands gives:
/// i8 sums in i32 (the MXM's int8 mode), every other dtype keeps its own.
std::string contractionDtype(const std::string &dtype) { return dtype == "i8" ? "i32" : dtype; }

/// The elementwise built-in `n` names with `arity` operands.
std::optional<tensor::ElementwiseOp> elementwiseBuiltin(llvm::StringRef n, unsigned arity) {
  std::optional<tensor::ElementwiseOp> e = tensor::elementwiseBuiltin(n);
  if (e && tensor::elementwiseInfo(*e).arity == arity)
    return e;
  return std::nullopt;
}

} // namespace

bool Checker::isBuiltin(llvm::StringRef n) const {
  return tensor::elementwiseBuiltin(n) ||
         std::find(std::begin(kOthers), std::end(kOthers), n) != std::end(kOthers);
}

std::optional<int64_t> Checker::constInt(const Value &v) const {
  if (v.kind != Value::Kind::Int)
    return std::nullopt;
  return v.size.constantValue();
}

std::optional<int64_t> Checker::normaliseAxis(int64_t axis, const TensorType &t, Frame &f,
                                              llvm::SMRange at) {
  int64_t rank = static_cast<int64_t>(t.dims.size());
  if ((axis < 0 && -axis <= rank) || (!t.pack && axis >= 0 && axis < rank))
    return axis < 0 ? axis + rank : axis;
  auto b = error(DiagID::AxisOutOfRange, at, axis, t.str());
  if (t.pack && axis >= 0)
    b.help("count the axis from the end, e.g. axis = " + std::to_string(axis - rank));
  return std::nullopt;
}

Value Checker::matmul(const Value &a, const Value &b, Frame &f, const ast::BinaryExpr &e) {
  for (const Value *x : {&a, &b})
    if (!x->isTensor()) {
      error(DiagID::ExpectedTensor, (x == &a ? e.lhs : e.rhs)->range, x->describe());
      return Value::error();
    }
  const TensorType &x = a.tensor, &y = b.tensor;
  if (x.dtype != y.dtype) {
    error(DiagID::DtypeMismatch, e.opRange, "@", x.dtype, y.dtype)
        .help("convert one side explicitly, e.g. " + y.dtype + "(...)");
    return Value::error();
  }
  auto bad = [&]() {
    auto d = error(DiagID::MatmulMismatch, e.opRange, x.str(), y.str());
    d.label(e.lhs->range, x.str()).label(e.rhs->range, y.str());
    noteOrigin(d, e.lhs.get(), a);
    noteOrigin(d, e.rhs.get(), b);
    return Value::error();
  };
  if (x.dims.empty() || y.dims.empty() || y.pack)
    return bad();
  TensorType out{contractionDtype(x.dtype), std::nullopt, {}};
  const Size &k1 = x.dims.back();
  const Size &k2 = y.dims.size() == 1 ? y.dims[0] : y.dims[y.dims.size() - 2];
  if (sizesEqual(k1, k2) == Decision::No)
    return bad();
  if (y.dims.size() == 1) {
    out.pack = x.pack;
    out.dims.assign(x.dims.begin(), x.dims.end() - 1);
  } else if (x.dims.size() == 1 && !x.pack) {
    out.dims.assign(y.dims.begin(), y.dims.end() - 2);
    out.dims.push_back(y.dims.back());
  } else if (y.dims.size() == 2) {
    // [..B, M, K] @ [K, N]: the leading dimensions of x pass through.
    out.pack = x.pack;
    out.dims.assign(x.dims.begin(), x.dims.end() - 1);
    out.dims.push_back(y.dims.back());
  } else {
    if (x.dims.size() < 2)
      return bad();
    TensorType bx{x.dtype, x.pack, {x.dims.begin(), x.dims.end() - 2}};
    TensorType by{y.dtype, std::nullopt, {y.dims.begin(), y.dims.end() - 2}};
    auto batch = broadcast(bx, by, f, e.opRange, "@", e.lhs.get(), e.rhs.get());
    if (!batch)
      return Value::error();
    out = *batch;
    out.dtype = contractionDtype(x.dtype);
    out.dims.push_back(x.dims[x.dims.size() - 2]);
    out.dims.push_back(y.dims.back());
  }
  Value v = Value::ofTensor(out);
  addFlops(f, Size::constant(2) * out.elements() * k1);
  notePeak(f, {&a, &b}, v);
  if (lowering())
    lower_->matmul(e, a, b, v);
  v.origin = e.range;
  v.originWhat = "'@'";
  return v;
}

Value Checker::callBuiltin(const std::string &name, const ast::CallExpr &e, std::vector<Arg> args,
                           Frame &f) {
  // Binds arguments to the builtin's parameter names: positional, then named.
  auto bind = [&](std::initializer_list<const char *> params,
                  size_t required) -> std::optional<std::vector<const Arg *>> {
    std::vector<const char *> names(params);
    std::vector<const Arg *> out(names.size(), nullptr);
    size_t pos = 0;
    for (const Arg &a : args) {
      if (a.name.empty()) {
        if (pos >= names.size()) {
          error(DiagID::ArgumentCount, e.range, name, names.size(), args.size());
          return std::nullopt;
        }
        out[pos++] = &a;
        continue;
      }
      auto it = std::find(names.begin(), names.end(), a.name);
      if (it == names.end()) {
        error(DiagID::UnknownArgument, a.nameRange, name, a.name);
        return std::nullopt;
      }
      if (const Arg *earlier = out[it - names.begin()]) {
        error(DiagID::DuplicateArgument, a.nameRange, name, a.name)
            .note("first given here", earlier->name.empty() ? earlier->range : earlier->nameRange);
        return std::nullopt;
      }
      out[it - names.begin()] = &a;
    }
    for (size_t i = 0; i < required; ++i)
      if (!out[i]) {
        error(DiagID::BadBuiltinArgument, e.range, name,
              std::string("missing argument '") + names[i] + "'");
        return std::nullopt;
      }
    return out;
  };
  auto tensorArg = [&](const Arg *a) -> const TensorType * {
    if (a->value.isTensor())
      return &a->value.tensor;
    error(DiagID::ExpectedTensor, a->range, a->value.describe());
    return nullptr;
  };
  auto intArg = [&](const Arg *a, int64_t dflt) -> std::optional<int64_t> {
    if (!a)
      return dflt;
    if (auto c = constInt(a->value))
      return c;
    if (a->value.kind == Value::Kind::Int)
      error(DiagID::BadBuiltinArgument, a->range, name,
            "this argument must be a number, found the size " + a->value.size.str());
    else
      notASize(a->value, a->range);
    return std::nullopt;
  };
  auto sizeArg = [&](const Arg *a, int64_t dflt) -> std::optional<Size> {
    if (!a)
      return Size::constant(dflt);
    if (a->value.kind == Value::Kind::Int)
      return a->value.size;
    notASize(a->value, a->range);
    return std::nullopt;
  };
  // Element `i` of a list argument, where it is written (the whole
  // argument when it is not written as a list).
  auto elementRange = [](const Arg &a, size_t i) {
    auto *list = llvm::dyn_cast_or_null<ast::ListExpr>(a.expr);
    return list && i < list->elements.size() && list->elements[i] ? list->elements[i]->range
                                                                   : a.range;
  };
  auto result = [&](TensorType t, Size work, std::vector<const Value *> inputs) {
    Value v = Value::ofTensor(std::move(t));
    addFlops(f, work);
    notePeak(f, inputs, v);
    v.origin = e.range;
    v.originWhat = "'" + name + "'";
    return v;
  };

  // min, max, floordiv and ceildiv of two sizes are size arithmetic.
  if ((name == "floordiv" || name == "ceildiv" || name == "min" || name == "max") &&
      args.size() == 2 && args[0].name.empty() && args[1].name.empty() &&
      (args[0].value.kind == Value::Kind::Int || name == "floordiv" || name == "ceildiv")) {
    for (const Arg &a : args)
      if (a.value.kind != Value::Kind::Int) {
        notASize(a.value, a.range);
        return Value::error();
      }
    const Size &x = args[0].value.size, &y = args[1].value.size;
    if ((name == "floordiv" || name == "ceildiv") && y.isZero()) {
      error(DiagID::DivisionByZero, e.range, "'" + name + "'");
      return Value::error();
    }
    return Value::ofInt(name == "floordiv"  ? sizes::floordiv(x, y)
                        : name == "ceildiv" ? sizes::ceildiv(x, y)
                        : name == "min"     ? sizes::min(x, y)
                                            : sizes::max(x, y));
  }
  if (std::optional<tensor::ElementwiseOp> unary = elementwiseBuiltin(name, 1)) {
    auto a = bind({"x"}, 1);
    if (!a)
      return Value::error();
    if (const Value &x = (*a)[0]->value; x.isNumber()) {
      // A symbolic size (in a generic definition) has no value yet.
      std::optional<double> n = x.number;
      if (x.kind == Value::Kind::Int) {
        auto c = x.size.constantValue();
        n = c ? std::optional<double>(static_cast<double>(*c)) : std::nullopt;
      }
      return Value::ofFloat(n ? tensor::foldUnary(*unary, *n).value_or(0.0) : 0.0);
    }
    const TensorType *t = tensorArg((*a)[0]);
    if (!t)
      return Value::error();
    bool anyNumber = tensor::elementwiseInfo(*unary).rule == tensor::ElementwiseRule::Number;
    if (!isFloatDtype(t->dtype) && !(anyNumber && isIntDtype(t->dtype))) {
      error(DiagID::WrongDtypeKind, (*a)[0]->range, name, "a float tensor", t->str())
          .help("convert first, e.g. " + name + "(f32(...))");
      return Value::error();
    }
    return result(*t, t->elements(), {&(*a)[0]->value});
  }
  if (std::optional<tensor::ElementwiseOp> binary = elementwiseBuiltin(name, 2)) {
    auto a = bind({"a", "b"}, 2);
    if (!a)
      return Value::error();
    Value x = (*a)[0]->value, y = (*a)[1]->value;
    if (!x.isTensor() && !y.isTensor()) {
      error(DiagID::ExpectedTensor, e.range, x.describe());
      return Value::error();
    }
    if (!unifyDtypes(x, y, f, e.range, name))
      return Value::error();
    auto t = broadcast(x.tensor, y.tensor, f, e.range, name, (*a)[0]->expr, (*a)[1]->expr);
    // A built-in binary row is Number or Float (support/Elementwise.def).
    bool floatOnly = tensor::elementwiseInfo(*binary).rule == tensor::ElementwiseRule::Float;
    if (t && floatOnly && !isFloatDtype(t->dtype)) {
      error(DiagID::WrongDtypeKind, e.range, name, "float tensors", t->str());
      return Value::error();
    }
    if (t && t->dtype == "bool") {
      auto d = error(DiagID::WrongDtypeKind, e.range, name, "number tensors", t->str());
      // Bools have no order: `&&` and `||` are their minimum and maximum.
      if (*binary == tensor::ElementwiseOp::Maximum || *binary == tensor::ElementwiseOp::Minimum)
        d.help(std::string("write '") + (name == "maximum" ? "||" : "&&") + "' for bools");
      return Value::error();
    }
    return t ? result(*t, t->elements(), {&x, &y}) : Value::error();
  }
  if (name == "select") {
    auto a = bind({"cond", "a", "b"}, 3);
    if (!a)
      return Value::error();
    // A compile-time bool (`true`, `N > 4`) is a rank-0 bool tensor here.
    auto asTensor = [](Value v) {
      return v.kind == Value::Kind::Bool ? Value::ofTensor(TensorType{"bool", std::nullopt, {}})
                                         : v;
    };
    Value cond = asTensor((*a)[0]->value);
    const TensorType *c = cond.isTensor() ? &cond.tensor : tensorArg((*a)[0]);
    if (!c)
      return Value::error();
    if (c->dtype != "bool") {
      error(DiagID::WrongDtypeKind, (*a)[0]->range, "select", "a bool condition", c->str());
      return Value::error();
    }
    Value x = asTensor((*a)[1]->value), y = asTensor((*a)[2]->value);
    if (!x.isTensor() && !y.isTensor()) {
      error(DiagID::ExpectedTensor, (*a)[1]->range, x.describe());
      return Value::error();
    }
    if (!unifyDtypes(x, y, f, e.range, name))
      return Value::error();
    auto xy = broadcast(x.tensor, y.tensor, f, e.range, name, (*a)[1]->expr, (*a)[2]->expr);
    if (!xy)
      return Value::error();
    auto t = broadcast(*xy, *c, f, e.range, name, nullptr, (*a)[0]->expr);
    if (!t)
      return Value::error();
    t->dtype = x.tensor.dtype;
    return result(*t, t->elements(), {&cond, &x, &y});
  }
  if (name == "sum" || name == "mean" || name == "max" || name == "min" || name == "argmax" ||
      name == "softmax") {
    bool single = name == "argmax" || name == "softmax";
    auto a = single ? bind({"x", "axis"}, 2) : bind({"x", "axis", "keep"}, 1);
    if (!a)
      return Value::error();
    const TensorType *t = tensorArg((*a)[0]);
    if (!t)
      return Value::error();
    if ((name == "mean" || name == "softmax") && !isFloatDtype(t->dtype)) {
      error(DiagID::WrongDtypeKind, (*a)[0]->range, name, "a float tensor", t->str());
      return Value::error();
    }
    if (t->dtype == "bool") {
      error(DiagID::WrongDtypeKind, (*a)[0]->range, name, "a number tensor", t->str())
          .help("convert first, e.g. " + name + "(i32(...))");
      return Value::error();
    }
    std::vector<int64_t> axes;
    const Arg *ax = (*a)[1];
    if (!ax) {
      if (t->pack) {
        error(DiagID::BadBuiltinArgument, e.range, name, "give 'axis' for a tensor with a pack");
        return Value::error();
      }
      for (size_t i = 0; i < t->dims.size(); ++i)
        axes.push_back(static_cast<int64_t>(i));
    } else if (ax->value.kind == Value::Kind::List && !single) {
      for (size_t i = 0; i < ax->value.elements.size(); ++i) {
        const Value &el = ax->value.elements[i];
        auto c = constInt(el);
        if (!c) {
          notASize(el, elementRange(*ax, i));
          return Value::error();
        }
        auto n = normaliseAxis(*c, *t, f, ax->range);
        if (!n)
          return Value::error();
        // As NumPy and PyTorch: an axis reduced twice is a mistake.
        if (llvm::is_contained(axes, *n)) {
          error(DiagID::BadBuiltinArgument, elementRange(*ax, i), name,
                "axis " + std::to_string(*n) + " is listed twice");
          return Value::error();
        }
        axes.push_back(*n);
      }
    } else {
      auto c = intArg(ax, 0);
      if (!c)
        return Value::error();
      auto n = normaliseAxis(*c, *t, f, ax->range);
      if (!n)
        return Value::error();
      axes.push_back(*n);
    }
    if (name == "softmax")
      return result(*t, Size::constant(5) * t->elements(), {&(*a)[0]->value});
    bool keep = false;
    if (!single && (*a)[2]) {
      const Value &k = (*a)[2]->value;
      if (k.kind != Value::Kind::Bool || !k.boolean) {
        error(DiagID::BadBuiltinArgument, (*a)[2]->range, name, "'keep' is true or false");
        return Value::error();
      }
      keep = *k.boolean;
    }
    TensorType out{name == "argmax" ? "i32" : t->dtype, t->pack, {}};
    for (size_t i = 0; i < t->dims.size(); ++i) {
      bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
      if (!reduced)
        out.dims.push_back(t->dims[i]);
      else if (keep)
        out.dims.push_back(Size::constant(1));
    }
    return result(out, t->elements(), {&(*a)[0]->value});
  }
  if (name == "reshape" || name == "broadcast_to") {
    auto a = bind({"x", "shape"}, 2);
    if (!a)
      return Value::error();
    const TensorType *t = tensorArg((*a)[0]);
    if (!t)
      return Value::error();
    const Value &shape = (*a)[1]->value;
    if (shape.kind != Value::Kind::List) {
      error(DiagID::BadBuiltinArgument, (*a)[1]->range, name, "the shape is a list [d0, d1, ...]");
      return Value::error();
    }
    TensorType out{t->dtype, std::nullopt, {}};
    for (size_t i = 0; i < shape.elements.size(); ++i) {
      const Value &d = shape.elements[i];
      if (d.kind != Value::Kind::Int) {
        notASize(d, elementRange(*(*a)[1], i));
        return Value::error();
      }
      if (auto c = d.size.constantValue(); c && *c < 1 && f.env.concrete) {
        error(DiagID::NonPositiveSize, (*a)[1]->range, d.size.str(), *c);
        return Value::error();
      }
      out.dims.push_back(d.size);
    }
    if (t->pack) {
      error(DiagID::PackMismatch, (*a)[0]->range, t->str(), out.str())
          .note("'" + name + "' needs every dimension of its input");
      return Value::error();
    }
    if (name == "reshape") {
      if (sizesEqual(t->elements(), out.elements()) == Decision::No) {
        error(DiagID::ReshapeCount, e.range, t->str() + " (" + t->elements().str() + ")",
              out.str() + " (" + out.elements().str() + ")")
            .label((*a)[0]->range, t->str());
        return Value::error();
      }
      return result(out, Size(), {&(*a)[0]->value});
    }
    auto b = broadcast(*t, out, f, e.range, name, (*a)[0]->expr, (*a)[1]->expr);
    if (!b)
      return Value::error();
    if (b->dims.size() != out.dims.size() ||
        !std::equal(b->dims.begin(), b->dims.end(), out.dims.begin(),
                    [](const Size &x, const Size &y) { return sizesEqual(x, y) != Decision::No; })) {
      error(DiagID::ShapeMismatch, e.range, name, t->str(), out.str());
      return Value::error();
    }
    return result(out, Size(), {&(*a)[0]->value});
  }
  if (name == "transpose") {
    auto a = bind({"x", "perm"}, 2);
    if (!a)
      return Value::error();
    const TensorType *t = tensorArg((*a)[0]);
    if (!t)
      return Value::error();
    const Value &perm = (*a)[1]->value;
    std::vector<int64_t> p;
    for (const Value &el : perm.elements)
      if (auto c = constInt(el))
        p.push_back(*c);
    std::vector<int64_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    bool ok = perm.kind == Value::Kind::List && !t->pack && p.size() == perm.elements.size() &&
              p.size() == t->dims.size();
    for (size_t i = 0; ok && i < sorted.size(); ++i)
      ok = sorted[i] == static_cast<int64_t>(i);
    if (!ok) {
      std::string text = "[";
      for (size_t i = 0; i < p.size(); ++i)
        text += (i ? ", " : "") + std::to_string(p[i]);
      error(DiagID::BadPermutation, (*a)[1]->range, text + "]", t->str());
      return Value::error();
    }
    TensorType out{t->dtype, std::nullopt, {}};
    for (int64_t i : p)
      out.dims.push_back(t->dims[i]);
    return result(out, Size(), {&(*a)[0]->value});
  }
  if (name == "concat") {
    auto a = bind({"xs", "axis"}, 1);
    if (!a)
      return Value::error();
    const Value &xs = (*a)[0]->value;
    if (xs.kind != Value::Kind::List || xs.elements.empty()) {
      error(DiagID::BadBuiltinArgument, (*a)[0]->range, name, "the tensors are a list [a, b, ...]");
      return Value::error();
    }
    for (const Value &x : xs.elements)
      if (!x.isTensor()) {
        error(DiagID::ExpectedTensor, (*a)[0]->range, x.describe());
        return Value::error();
      }
    const TensorType &first = xs.elements[0].tensor;
    auto axisValue = intArg((*a)[1], 0);
    if (!axisValue)
      return Value::error();
    auto axis = normaliseAxis(*axisValue, first, f, (*a)[1] ? (*a)[1]->range : e.range);
    if (!axis)
      return Value::error();
    TensorType out = first;
    std::vector<const Value *> inputs;
    for (size_t i = 1; i < xs.elements.size(); ++i) {
      const TensorType &t = xs.elements[i].tensor;
      inputs.push_back(&xs.elements[i]);
      if (t.dtype != first.dtype) {
        error(DiagID::DtypeMismatch, (*a)[0]->range, name, first.dtype, t.dtype);
        return Value::error();
      }
      if (t.dims.size() != first.dims.size() || t.pack != first.pack) {
        error(DiagID::RankMismatch, (*a)[0]->range, name, first.str(), t.str());
        return Value::error();
      }
      for (size_t d = 0; d < t.dims.size(); ++d) {
        if (static_cast<int64_t>(d) == *axis)
          continue;
        if (sizesEqual(t.dims[d], first.dims[d]) == Decision::No) {
          error(DiagID::ShapeMismatch, (*a)[0]->range, name, first.str(), t.str())
              .note("all dimensions but axis " + std::to_string(*axis) + " must agree");
          return Value::error();
        }
      }
      out.dims[*axis] = out.dims[*axis] + t.dims[*axis];
    }
    inputs.push_back(&xs.elements[0]);
    return result(out, Size(), inputs);
  }
  if (name == "split") {
    auto a = bind({"x", "n", "axis"}, 2);
    if (!a)
      return Value::error();
    const TensorType *t = tensorArg((*a)[0]);
    auto n = intArg((*a)[1], 1);
    auto axisValue = intArg((*a)[2], 0);
    if (!t || !n || !axisValue)
      return Value::error();
    if (*n < 1) {
      error(DiagID::BadBuiltinArgument, (*a)[1]->range, name, "split into at least 1 part");
      return Value::error();
    }
    auto axis = normaliseAxis(*axisValue, *t, f, (*a)[2] ? (*a)[2]->range : e.range);
    if (!axis)
      return Value::error();
    TensorType part = *t;
    size_t at = static_cast<size_t>(*axis);
    checkExactDivision(t->dims[at], Size::constant(*n), f.env, e.range);
    part.dims[at] = sizes::div(t->dims[at], Size::constant(*n));
    Value list;
    list.kind = Value::Kind::List;
    for (int64_t i = 0; i < *n; ++i) {
      Value p = Value::ofTensor(part);
      p.origin = e.range;
      p.originWhat = "'split'";
      list.elements.push_back(p);
    }
    return list;
  }
  if (name == "gather") {
    auto a = bind({"table", "ids", "axis"}, 2);
    if (!a)
      return Value::error();
    const TensorType *table = tensorArg((*a)[0]);
    const TensorType *ids = table ? tensorArg((*a)[1]) : nullptr;
    auto axisValue = intArg((*a)[2], 0);
    if (!table || !ids || !axisValue)
      return Value::error();
    if (!isIntDtype(ids->dtype)) {
      error(DiagID::WrongDtypeKind, (*a)[1]->range, name, "integer ids", ids->str())
          .help("convert with i32(...)");
      return Value::error();
    }
    auto axis = normaliseAxis(*axisValue, *table, f, (*a)[2] ? (*a)[2]->range : e.range);
    if (!axis)
      return Value::error();
    if (table->pack || (ids->pack && *axis != 0)) {
      error(DiagID::PackMismatch, e.range, table->str(), ids->str());
      return Value::error();
    }
    TensorType out{table->dtype, ids->pack, {}};
    out.dims.assign(table->dims.begin(), table->dims.begin() + *axis);
    out.dims.insert(out.dims.end(), ids->dims.begin(), ids->dims.end());
    out.dims.insert(out.dims.end(), table->dims.begin() + *axis + 1, table->dims.end());
    return result(out, Size(), {&(*a)[1]->value});
  }
  if (name == "update") {
    // update(x, pos, rows, axis = 0): x with rows written from index pos
    // of axis on; pos is known only at run time, so it is clamped there.
    auto a = bind({"x", "pos", "rows", "axis"}, 3);
    if (!a)
      return Value::error();
    const TensorType *x = tensorArg((*a)[0]);
    if (!x)
      return Value::error();
    const Value &posValue = (*a)[1]->value;
    if (posValue.isTensor()) {
      const TensorType &p = posValue.tensor;
      auto n = p.elements().constantValue();
      if (!isIntDtype(p.dtype) || p.pack || p.dims.size() > 1 || !n || *n != 1) {
        error(DiagID::BadBuiltinArgument, (*a)[1]->range, name,
              "the position is one integer (i32[] or i32[1]), not " + p.str());
        return Value::error();
      }
    } else if (posValue.kind != Value::Kind::Int) {
      // Else a number or a size (`P - 1`, a bucket's `S`), which each
      // instantiation knows.
      error(DiagID::BadBuiltinArgument, (*a)[1]->range, name,
            "the position is one integer (i32[] or i32[1]), not " + posValue.describe());
      return Value::error();
    }
    const TensorType *rows = tensorArg((*a)[2]);
    auto axisValue = intArg((*a)[3], 0);
    if (!rows || !axisValue)
      return Value::error();
    if (rows->dtype != x->dtype) {
      error(DiagID::DtypeMismatch, e.range, name, x->dtype, rows->dtype);
      return Value::error();
    }
    auto axis = normaliseAxis(*axisValue, *x, f, (*a)[3] ? (*a)[3]->range : e.range);
    if (!axis)
      return Value::error();
    if (x->pack || rows->pack) {
      error(DiagID::PackMismatch, e.range, x->str(), rows->str());
      return Value::error();
    }
    if (rows->dims.size() != x->dims.size()) {
      error(DiagID::RankMismatch, (*a)[2]->range, "'update'", x->str(), rows->str());
      return Value::error();
    }
    for (size_t d = 0; d < x->dims.size(); ++d) {
      bool fits;
      if (static_cast<int64_t>(d) == *axis) {
        auto have = x->dims[d].constantValue(), want = rows->dims[d].constantValue();
        fits = !have || !want || *want <= *have;
      } else {
        fits = sizesEqual(x->dims[d], rows->dims[d]) != Decision::No;
      }
      if (!fits) {
        error(DiagID::ShapeMismatch, (*a)[2]->range, name, x->str(), rows->str())
            .note("the rows must match every dimension but axis " + std::to_string(*axis) +
                      ", and be no longer along it",
                  (*a)[3] ? (*a)[3]->range : e.range);
        return Value::error();
      }
    }
    return result(*x, Size(), {&(*a)[0]->value, &(*a)[2]->value});
  }
  if (name == "iota" || name == "zeros" || name == "ones" || name == "full") {
    auto a = name == "full" ? bind({"value"}, 1) : bind({}, 0);
    if (!a)
      return Value::error();
    if (e.genericArgs.size() != 1) {
      error(DiagID::BadBuiltinArgument, e.range, name,
            name == "iota" ? "write the length as iota<N>()" : "write the type as " + name + "<f16[...]>()");
      return Value::error();
    }
    const ast::GenericArg &g = e.genericArgs[0];
    if (name == "iota") {
      auto n = g.size ? sizeOf(*g.size, f.env, &f) : std::nullopt;
      if (!n)
        return Value::error();
      return result(TensorType{"i32", std::nullopt, {*n}}, Size(), {});
    }
    std::optional<TensorType> t;
    if (g.type)
      t = tensorType(*g.type, f.env);
    else if (auto *n = llvm::dyn_cast_or_null<ast::SizeName>(g.size.get()); n && dtypeOf(n->name, f.env))
      t = TensorType{*dtypeOf(n->name, f.env), std::nullopt, {}};
    else
      error(DiagID::BadBuiltinArgument, g.range, name, "the generic argument is a tensor type");
    if (!t)
      return Value::error();
    if (name == "full" && !(*a)[0]->value.isNumber() && (*a)[0]->value.kind != Value::Kind::Bool) {
      error(DiagID::BadBuiltinArgument, (*a)[0]->range, name, "the value is a compile-time number");
      return Value::error();
    }
    return result(*t, Size(), {});
  }
  if (name == "quantize" || name == "dequantize") {
    // quantize(x, scale, zero_point = 0, axis = k): float -> i8;
    // dequantize(q, scale, zero_point = 0, axis = k): i8 or i32 -> f32.
    // A scale and a zero point are per tensor (rank 0, or a number) or
    // per channel along `axis` (rank 1, the axis's length).
    const bool quant = name == "quantize";
    auto a = bind({"x", "scale", "zero_point", "axis"}, 2);
    if (!a)
      return Value::error();
    const TensorType *x = tensorArg((*a)[0]);
    if (!x)
      return Value::error();
    if (quant ? !isFloatDtype(x->dtype) : (x->dtype != "i8" && x->dtype != "i32")) {
      error(DiagID::WrongDtypeKind, (*a)[0]->range, name,
            quant ? "a float tensor" : "an i8 or i32 tensor", x->str())
          .help(quant ? "quantize a float tensor; convert it first, e.g. f32(...)"
                      : "dequantize the i8 values, or the i32 sums of an i8 matmul");
      return Value::error();
    }
    std::optional<int64_t> axis;
    if (const Arg *ax = (*a)[3]) {
      auto n = intArg(ax, 0);
      if (!n)
        return Value::error();
      axis = normaliseAxis(*n, *x, f, ax->range);
      if (!axis)
        return Value::error();
    }
    const std::string zpType = quant ? "i8" : x->dtype;
    // Checks one of scale (`dtype` f32) and zero point (`dtype` zpType).
    auto perAxis = [&](const Arg *arg, const std::string &dtype, const char *what) -> bool {
      if (!arg)
        return true;
      const Value &v = arg->value;
      if (v.isNumber()) {
        if (dtype == "f32")
          return true;
        if (v.kind != Value::Kind::Int) {
          error(DiagID::BadBuiltinArgument, arg->range, name,
                std::string("the ") + what + " is an integer, found " + v.describe());
          return false;
        }
        const auto [lo, hi] = tensor::integerRange(*tensor::parseDTypeName(dtype));
        if (std::optional<int64_t> n = v.size.constantValue(); n && (*n < lo || *n > hi)) {
          error(DiagID::ZeroPointRange, arg->range, *n, dtype, lo, hi);
          return false;
        }
        return true;
      }
      const TensorType *t = tensorArg(arg);
      if (!t)
        return false;
      if (t->dtype != dtype) {
        error(DiagID::WrongDtypeKind, arg->range, name, std::string("an ") + dtype + " " + what, t->str())
            .help("convert it, e.g. " + dtype + "(...)");
        return false;
      }
      if (t->pack || t->dims.size() > 1 || (t->dims.size() == 1 && !axis)) {
        auto d = error(DiagID::QuantScaleShape, arg->range, what, t->str(), x->str(),
                       axis ? "axis " + std::to_string(*axis) + " of length " + x->dims[*axis].str()
                            : std::string("a channel axis (none given)"));
        if (!axis && t->dims.size() == 1 && !t->pack)
          d.help("a per-channel " + std::string(what) + " needs the channel axis, e.g. axis = 0");
        return false;
      }
      if (t->dims.size() == 1 && sizesEqual(t->dims[0], x->dims[*axis]) == Decision::No) {
        error(DiagID::QuantScaleShape, arg->range, what, t->str(), x->str(),
              "axis " + std::to_string(*axis) + " of length " + x->dims[*axis].str());
        return false;
      }
      return true;
    };
    if (!perAxis((*a)[1], "f32", "scale") || !perAxis((*a)[2], zpType, "zero point"))
      return Value::error();
    TensorType out = *x;
    out.dtype = quant ? "i8" : "f32";
    std::vector<const Value *> inputs{&(*a)[0]->value, &(*a)[1]->value};
    if ((*a)[2])
      inputs.push_back(&(*a)[2]->value);
    return result(out, x->elements(), inputs);
  }
  if (name == "conv2d") {
    auto a = bind({"x", "w", "stride", "padding", "dilation", "groups"}, 2);
    if (!a)
      return Value::error();
    const TensorType *x = tensorArg((*a)[0]);
    const TensorType *w = x ? tensorArg((*a)[1]) : nullptr;
    auto stride = sizeArg((*a)[2], 1), pad = sizeArg((*a)[3], 0), dil = sizeArg((*a)[4], 1);
    auto groups = sizeArg((*a)[5], 1);
    if (!x || !w || !stride || !pad || !dil || !groups)
      return Value::error();
    if (x->dims.size() != 4 || x->pack || w->dims.size() != 4 || w->pack) {
      error(DiagID::ConvShape, e.range, name,
            "x must be [N, C, H, W] and w [O, C / groups, KH, KW], found " + x->str() + " and " +
                w->str());
      return Value::error();
    }
    if (x->dtype != w->dtype) {
      error(DiagID::DtypeMismatch, e.range, name, x->dtype, w->dtype);
      return Value::error();
    }
    auto below = [](const Size &s, int64_t min) {
      auto c = s.constantValue();
      return c && *c < min;
    };
    if (below(*stride, 1) || below(*dil, 1) || below(*groups, 1) || below(*pad, 0)) {
      error(DiagID::ConvShape, e.range, name, "stride, dilation and groups are at least 1, padding at least 0");
      return Value::error();
    }
    // groups may be a size of the model (depthwise: groups = C); its
    // divisions are then checked once it is a number, as any other.
    const Size &g = *groups;
    const Size &C = x->dims[1], &O = w->dims[0], &KH = w->dims[2], &KW = w->dims[3];
    Size perGroup = sizes::div(C, g);
    bool grouped = g.constantValue() != std::optional<int64_t>(1);
    if (grouped) {
      // At the groups argument: the channels of both sides split into groups.
      llvm::SMRange at = (*a)[5] ? (*a)[5]->range : e.range;
      checkExactDivision(C, g, f.env, at, "channels / groups");
      checkExactDivision(O, g, f.env, at, "output channels / groups");
    }
    if (sizesEqual(perGroup, w->dims[1]) == Decision::No) {
      error(DiagID::ConvShape, e.range, name,
            "the input has " + C.str() + " channels, the weights expect " + w->dims[1].str() +
                (grouped ? " per group" : ""))
          .label((*a)[0]->range, x->str())
          .label((*a)[1]->range, w->str());
      return Value::error();
    }
    auto outDim = [&](const Size &in, const Size &k) {
      return sizes::floordiv(in + Size::constant(2) * *pad - *dil * (k - Size::constant(1)) -
                                 Size::constant(1),
                             *stride) +
             Size::constant(1);
    };
    TensorType out{contractionDtype(x->dtype), std::nullopt,
                   {x->dims[0], O, outDim(x->dims[2], KH), outDim(x->dims[3], KW)}};
    for (size_t i = 2; i < 4; ++i)
      if (auto c = out.dims[i].constantValue(); c && *c < 1) {
        error(DiagID::NonPositiveSize, e.range, "of the conv2d output", *c)
            .note("the input " + x->str() + " is smaller than the kernel " + w->str());
        return Value::error();
      }
    Size work = Size::constant(2) * out.elements() * perGroup * KH * KW;
    return result(out, work, {&(*a)[0]->value, &(*a)[1]->value});
  }
  if (name == "max_pool2d" || name == "avg_pool2d") {
    auto a = bind({"x", "kernel", "stride", "padding"}, 2);
    if (!a)
      return Value::error();
    const TensorType *x = tensorArg((*a)[0]);
    auto k = sizeArg((*a)[1], 1);
    auto s = k ? ((*a)[2] ? sizeArg((*a)[2], 1) : k) : std::nullopt;
    auto p = sizeArg((*a)[3], 0);
    if (!x || !k || !s || !p)
      return Value::error();
    if (x->dims.size() != 4 || x->pack) {
      error(DiagID::ConvShape, (*a)[0]->range, name, "needs [N, C, H, W], found " + x->str());
      return Value::error();
    }
    auto below = [](const Size &v, int64_t min) {
      auto c = v.constantValue();
      return c && *c < min;
    };
    if (below(*k, 1) || below(*s, 1) || below(*p, 0)) {
      error(DiagID::ConvShape, e.range, name, "kernel and stride are at least 1, padding at least 0");
      return Value::error();
    }
    auto outDim = [&](const Size &in) {
      return sizes::floordiv(in + Size::constant(2) * *p - *k, *s) + Size::constant(1);
    };
    TensorType out{x->dtype, std::nullopt, {x->dims[0], x->dims[1], outDim(x->dims[2]), outDim(x->dims[3])}};
    for (size_t i = 2; i < 4; ++i)
      if (auto c = out.dims[i].constantValue(); c && *c < 1) {
        error(DiagID::NonPositiveSize, e.range, "of the " + name + " output", *c);
        return Value::error();
      }
    return result(out, out.elements() * *k * *k, {&(*a)[0]->value});
  }
  error(DiagID::NotCallable, e.range, "'" + name + "'");
  return Value::error();
}

} // namespace lpu::check
