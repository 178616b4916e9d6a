// Statements and expressions: scopes and names, compile-time control flow
// (if, for with unrolling, assert), operators with broadcasting and dtype
// rules, calls, indexing and members.
#include "frontend/ASTPrinter.h"
#include "frontend/CheckerImpl.h"
#include "frontend/LowerImpl.h"
#include "support/DType.h"

#include <cmath>
#include <utility>

namespace lpu::check {

namespace {

bool isStorable(const Value &v) {
  switch (v.kind) {
  case Value::Kind::Function:
  case Value::Kind::Module:
  case Value::Kind::Dtype:
  case Value::Kind::Builtin:
  case Value::Kind::Type:
    return false;
  default:
    return true;
  }
}

std::optional<bool> compareSizes(ast::BinaryOp op, const Size &a, const Size &b) {
  auto d = (a - b).constantValue();
  if (!d)
    return op == ast::BinaryOp::Ne && sizesEqual(a, b) == Decision::No ? std::optional<bool>(true)
           : op == ast::BinaryOp::Eq && sizesEqual(a, b) == Decision::No
               ? std::optional<bool>(false)
               : std::nullopt;
  switch (op) {
  case ast::BinaryOp::Eq: return *d == 0;
  case ast::BinaryOp::Ne: return *d != 0;
  case ast::BinaryOp::Lt: return *d < 0;
  case ast::BinaryOp::Le: return *d <= 0;
  case ast::BinaryOp::Gt: return *d > 0;
  case ast::BinaryOp::Ge: return *d >= 0;
  default: return std::nullopt;
  }
}

/// `layers.3` + `up`: a parameter path one level down.
std::string childPath(const std::string &prefix, const std::string &name) {
  return prefix.empty() ? name : prefix + "." + name;
}

bool isComparison(ast::BinaryOp op) {
  return op == ast::BinaryOp::Eq || op == ast::BinaryOp::Ne || op == ast::BinaryOp::Lt ||
         op == ast::BinaryOp::Le || op == ast::BinaryOp::Gt || op == ast::BinaryOp::Ge;
}
} // namespace

Local *Checker::findLocal(Frame &f, const std::string &name) {
  for (auto it = f.scopes.rbegin(); it != f.scopes.rend(); ++it)
    if (auto l = it->find(name); l != it->end())
      return &l->second;
  return nullptr;
}

void Checker::declareLocal(Frame &f, const ast::Ident &name, Value v, bool isVar) {
  llvm::SMRange previous;
  if (Local *l = findLocal(f, name.name))
    previous = l->decl;
  else if (f.fn)
    for (const ast::GenericParam &g : f.fn->generics)
      if (g.name.name == name.name)
        previous = g.name.range;
  if (previous.isValid()) {
    error(DiagID::ShadowedLocal, name.range, name.name)
        .note("'" + name.name + "' is declared here", previous)
        .help("choose another name, or use 'var' and assign to it");
  }
  f.scopes.back()[name.name] = Local{std::move(v), name.range, isVar};
}

void Checker::addFlops(Frame &f, const Size &work) {
  if (auto c = work.constantValue(); c && *c > 0)
    f.flops += static_cast<uint64_t>(*c);
}

void Checker::notePeak(Frame &f, const std::vector<const Value *> &values, const Value &result) {
  if (!f.env.concrete)
    return;
  uint64_t bytes = 0;
  auto add = [&](const Value &v) {
    if (!v.isTensor())
      return;
    if (auto n = v.tensor.elements().constantValue())
      bytes += static_cast<uint64_t>(*n) * dtypeBytes(v.tensor.dtype);
  };
  for (const Value *v : values)
    add(*v);
  add(result);
  f.peakBytes = std::max(f.peakBytes, bytes);
}

void Checker::logType(Frame &f, const ast::Expr &e, const Value &v) {
  if (!f.typeLog || !f.env.concrete || !v.isTensor())
    return;
  std::string text = sourceText(e.range);
  if (size_t nl = text.find('\n'); nl != std::string::npos)
    text = text.substr(0, nl) + " ...";
  if (text.size() > 48)
    text = text.substr(0, 45) + "...";
  f.typeLog->push_back(std::string(2 * f.depth, ' ') + here(e.range.Start) + "  " + text + " : " +
                       v.tensor.str());
}

void Checker::noteOrigin(DiagnosticBuilder &b, const ast::Expr *e, const Value &v) {
  auto *n = llvm::dyn_cast_or_null<ast::NameExpr>(e);
  // A parameter's shape is in plain sight in the signature: no note.
  if (!n || !v.isTensor() || !v.origin.isValid() || v.originWhat.empty() ||
      llvm::StringRef(v.originWhat).startswith("parameter"))
    return;
  b.note("'" + n->name + "' has shape " + v.tensor.str() + " from " + v.originWhat + " at " +
         here(v.origin.Start));
}

void Checker::noteSources(DiagnosticBuilder &b, const Value &v) {
  if (!v.isTensor())
    return;
  // In the order the message names them (describeSources): inputs first.
  for (auto kind : {RuntimeSource::Kind::Input, RuntimeSource::Kind::Weight})
    for (size_t i = 0; i < v.sources.size() && i < 3; ++i) {
      const RuntimeSource &s = v.sources[i];
      if (s.kind == kind && s.decl.isValid())
        b.note(s.note, s.decl);
    }
}

void Checker::notASize(const Value &v, llvm::SMRange at) {
  auto b = error(DiagID::NotASize, at, sourceText(at));
  if (v.isTensor() && !v.sources.empty())
    noteSources(b, v);
  else
    b.note("it is " + v.describeNotStatic("an integer"));
}

Value Checker::checkBlock(const ast::Block &block, Frame &f) {
  f.scopes.emplace_back();
  for (const ast::StmtPtr &s : block.stmts)
    if (s && !f.ended)
      checkStmt(*s, f);
  f.scopes.pop_back();
  return Value();
}

/// `let x: T = e` and `const X: T = e`: the value must have the declared
/// type; a number literal takes a declared rank-0 type.
Value Checker::annotated(const ast::TypeExpr &type, const ast::Expr &value, Value v, Frame &f) {
  if (v.isError())
    return v;
  auto t = tensorType(type, f.env);
  if (!t)
    return v;
  if (adoptsType(v, *t)) {
    Value r = Value::ofTensor(*t);
    if (lowering())
      r.op = lower_->materialize(v, *t, value.range);
    return r;
  }
  if (!v.isTensor() || !mayEqual(v.tensor, *t)) {
    error(DiagID::TypeMismatch, value.range, t->str(), v.describe())
        .label(type.range, "declared here");
    return Value::error();
  }
  return v;
}

void Checker::assignState(const ast::AssignStmt &as, const ast::ParamDecl &p, const Value &v,
                          Frame &f) {
  if (!p.isState) {
    error(DiagID::AssignToParam, as.name.range, as.name.name)
        .note("'" + as.name.name + "' is declared here", p.name.range)
        .help("declare it with 'state' to keep a value between calls");
    return;
  }
  Value st = paramValue(*f.env.self, p);
  if (v.isError() || !st.isTensor())
    return;
  if (!adoptsType(v, st.tensor) && (!v.isTensor() || !mayEqual(v.tensor, st.tensor))) {
    auto b = error(DiagID::TypeMismatch, as.value->range, st.tensor.str(), v.describe());
    b.label(p.range, "state declared here");
    noteOrigin(b, as.value.get(), v);
    return;
  }
  if (lowering())
    lower_->stateWrite(childPath(f.env.selfPath, p.name.name),
                       lower_->materialize(v, st.tensor, as.value->range), as.range);
}

void Checker::checkStmt(const ast::Stmt &s, Frame &f) {
  if (auto *let = llvm::dyn_cast<ast::LetStmt>(&s)) {
    Value v = let->value ? expr(*let->value, f) : Value::error();
    if (!isStorable(v)) {
      error(DiagID::NotFirstClass, let->value->range, v.describe());
      v = Value::error();
    }
    if (!let->names.empty()) {
      // `let (a, b) = f(x)`: one local per value of the tuple.
      size_t n = let->names.size();
      if (!v.isError() && (v.kind != Value::Kind::List || !v.tuple || v.elements.size() != n)) {
        error(DiagID::TypeMismatch, let->value->range,
              "a tuple of " + std::to_string(n) + " values", v.describe());
        v = Value::error();
      }
      for (size_t i = 0; i < n; ++i)
        declareLocal(f, let->names[i], v.isError() ? Value::error() : v.elements[i], let->isVar);
      return;
    }
    if (let->type)
      v = annotated(*let->type, *let->value, v, f);
    declareLocal(f, let->name, v, let->isVar);
    return;
  }
  if (auto *as = llvm::dyn_cast<ast::AssignStmt>(&s)) {
    Value v = as->value ? expr(*as->value, f) : Value::error();
    Local *l = findLocal(f, as->name.name);
    if (!l && f.env.self) {
      // `cache = update(cache, pos, k)`: a state of this fn's own model.
      auto *p = llvm::dyn_cast_or_null<ast::ParamDecl>(findMember(*f.env.self->decl, as->name.name));
      if (p) {
        assignState(*as, *p, v, f);
        return;
      }
    }
    if (!l) {
      error(DiagID::UnknownName, as->name.range, as->name.name);
      return;
    }
    if (!l->isVar) {
      error(DiagID::AssignToImmutable, as->name.range, as->name.name)
          .note("'" + as->name.name + "' is declared here", l->decl)
          .help("declare it with 'var'");
      return;
    }
    l->value = v;
    return;
  }
  if (auto *ret = llvm::dyn_cast<ast::ReturnStmt>(&s)) {
    Value v = ret->value ? expr(*ret->value, f) : Value::error();
    if (!isStorable(v)) {
      error(DiagID::NotFirstClass, ret->value->range, v.describe());
      v = Value::error();
    }
    if (!f.hasReturned)
      f.returned = v;
    f.hasReturned = true;
    f.ended = true;
    if (v.isError() || !f.returnType)
      return;
    const ResultType &rt = *f.returnType;
    auto mismatch = [&](llvm::SMRange at, const std::string &expected, const Value &found,
                        const ast::Expr *origin) {
      auto b = error(DiagID::TypeMismatch, at, expected, found.describe());
      if (f.fn && f.fn->resultRange.Start.isValid())
        b.label(f.fn->resultRange, "return type declared here");
      noteOrigin(b, origin, found);
    };
    if (!rt.tuple) {
      const TensorType &t = rt.types[0];
      if (adoptsType(v, t))
        return;
      if (!v.isTensor() || !mayEqual(v.tensor, t))
        mismatch(ret->value->range, t.str(), v, ret->value.get());
      return;
    }
    if (v.kind != Value::Kind::List || !v.tuple || v.elements.size() != rt.types.size()) {
      mismatch(ret->value->range, rt.str(), v, ret->value.get());
      return;
    }
    // Each value against its field, at the value when it is written out.
    auto *written = llvm::dyn_cast<ast::TupleExpr>(ret->value.get());
    for (size_t i = 0; i < rt.types.size(); ++i) {
      const Value &el = v.elements[i];
      if (adoptsType(el, rt.types[i]) || (el.isTensor() && mayEqual(el.tensor, rt.types[i])))
        continue;
      const ast::Expr *at = written && i < written->elements.size() ? written->elements[i].get()
                                                                   : ret->value.get();
      mismatch(at->range, rt.types[i].str(), el, at);
    }
    return;
  }
  if (auto *as = llvm::dyn_cast<ast::AssertStmt>(&s)) {
    Value c = as->cond ? expr(*as->cond, f) : Value::error();
    if (c.isError())
      return;
    if (c.kind != Value::Kind::Bool) {
      auto b = error(DiagID::AssertNotStatic, as->cond->range, c.describeNotStatic("a bool"));
      noteSources(b, c);
      return;
    }
    if (c.boolean && !*c.boolean)
      error(DiagID::AssertFailed, as->cond->range,
            as->message ? *as->message : sourceText(as->cond->range));
    return;
  }
  if (auto *loop = llvm::dyn_cast<ast::ForStmt>(&s)) {
    Value lo = loop->lo ? expr(*loop->lo, f) : Value::error();
    Value hi = loop->hi ? expr(*loop->hi, f) : Value::error();
    if (lo.isError() || hi.isError())
      return;
    for (const auto *bound : {&lo, &hi})
      if (bound->kind != Value::Kind::Int) {
        const ast::Expr *e = bound == &lo ? loop->lo.get() : loop->hi.get();
        auto b =
            error(DiagID::LoopBoundNotStatic, e->range, bound->describeNotStatic("an integer"));
        noteSources(b, *bound);
        if (bound->isTensor())
          b.help("per-element choices use select(cond, a, b); loops need sizes");
        return;
      }
    llvm::SMRange bounds(loop->lo->range.Start, loop->hi->range.End);
    auto count = (hi.size - lo.size).constantValue();
    auto start = lo.size.constantValue();
    if (count && *count > static_cast<int64_t>(options_.maxUnroll)) {
      error(DiagID::UnrollLimit, bounds, *count, options_.maxUnroll)
          .help("raise the limit with --max-unroll " + std::to_string(*count));
      return;
    }
    if (count && start) {
      for (int64_t i = 0; i < *count; ++i) {
        f.scopes.emplace_back();
        f.scopes.back()[loop->var.name] =
            Local{Value::ofInt(Size::constant(*start + i)), loop->var.range, false};
        checkBlock(loop->body, f);
        f.scopes.pop_back();
        if (f.ended || diags_.errorLimitReached())
          break;
      }
      return;
    }
    // Bounds still symbolic: check the body once for every iteration.
    f.scopes.emplace_back();
    declareLocal(f, loop->var, Value::ofInt(Size::name(loop->var.name)), false);
    checkBlock(loop->body, f);
    f.scopes.pop_back();
    f.ended = false; // the range may be empty
    return;
  }
  if (auto *cond = llvm::dyn_cast<ast::IfStmt>(&s)) {
    Value c = cond->cond ? expr(*cond->cond, f) : Value::error();
    if (c.isError())
      return;
    if (c.kind != Value::Kind::Bool) {
      auto b =
          error(DiagID::DataDependentControl, cond->cond->range, c.describeNotStatic("a bool"));
      noteSources(b, c);
      if (c.isTensor())
        b.help("choose per element with select(" + sourceText(cond->cond->range) + ", a, b)");
      return;
    }
    // A branch not taken ends nothing; one checked both ways ends the
    // body only when both branches do.
    bool thenEnds = false, elseEnds = false;
    if (!c.boolean || *c.boolean) {
      checkBlock(cond->then, f);
      thenEnds = std::exchange(f.ended, false);
    }
    if (cond->otherwise && (!c.boolean || !*c.boolean)) {
      checkBlock(*cond->otherwise, f);
      elseEnds = std::exchange(f.ended, false);
    }
    f.ended = !c.boolean ? thenEnds && elseEnds : *c.boolean ? thenEnds : elseEnds;
    return;
  }
  if (auto *es = llvm::dyn_cast<ast::ExprStmt>(&s))
    if (es->expr)
      expr(*es->expr, f);
}

std::vector<std::string> Checker::namesInScope(const Frame &f) const {
  std::vector<std::string> names;
  for (const auto &scope : f.scopes)
    for (const auto &[k, v] : scope)
      names.push_back(k);
  for (const auto &[k, v] : f.env.sizes)
    names.push_back(k);
  if (f.env.self)
    for (const ast::DeclPtr &m : f.env.self->decl->members)
      if (m)
        names.push_back(m->name.name);
  if (f.env.module)
    for (const auto &[k, v] : f.env.module->globals)
      names.push_back(k);
  return names;
}

Value Checker::lookupName(const std::string &name, llvm::SMRange range, Frame &f) {
  if (Local *l = findLocal(f, name))
    return l->value;
  if (auto it = f.env.sizes.find(name); it != f.env.sizes.end())
    return Value::ofInt(it->second);
  if (auto d = dtypeOf(name, f.env)) {
    Value v;
    v.kind = Value::Kind::Dtype;
    v.text = *d;
    return v;
  }
  if (f.env.packs.count(name)) {
    error(DiagID::WrongKindOfName, range, name, "a batch pack", "a value");
    return Value::error();
  }
  auto declValue = [&](const ast::Decl *d, ModuleInfo *m, ModelInstPtr self) -> Value {
    if (auto *p = llvm::dyn_cast<ast::ParamDecl>(d)) {
      Value v = paramValue(*self, *p);
      v.path = childPath(f.env.selfPath, p->name.name);
      if (v.isTensor())
        v.sources = {p->isState
                         ? RuntimeSource::state(p->name.name, self->decl->name.name, p->name.range)
                         : RuntimeSource::weight(p->name.name, self->decl->name.name, p->name.range)};
      if (v.isTensor() && lowering())
        v.op = p->isState ? lower_->stateRead(v.path, v.tensor, p->name.range)
                          : lower_->param(v.path, v.tensor, p->name.range);
      return v;
    }
    if (auto *fn = llvm::dyn_cast<ast::FnDecl>(d)) {
      Value v;
      v.kind = Value::Kind::Function;
      v.fn = fn;
      v.module = m;
      v.model = self;
      v.path = self ? f.env.selfPath : "";
      return v;
    }
    if (auto *c = llvm::dyn_cast<ast::ConstDecl>(d)) {
      Frame cf;
      cf.env.module = m;
      cf.scopes.emplace_back();
      Value v = c->value ? expr(*c->value, cf) : Value::error();
      return c->type && c->value ? annotated(*c->type, *c->value, v, cf) : v;
    }
    if (auto *md = llvm::dyn_cast<ast::ModelDecl>(d)) {
      Value v;
      v.kind = Value::Kind::Type;
      v.modelDecl = md;
      v.module = m;
      return v;
    }
    if (llvm::isa<ast::ImportDecl>(d)) {
      auto it = m->imports.find(d->name.name);
      if (it == m->imports.end())
        return Value::error(); // not found: reported at the import
      Value v;
      v.kind = Value::Kind::Module;
      v.module = it->second;
      return v;
    }
    return Value::error();
  };
  if (f.env.self)
    if (const ast::Decl *d = findMember(*f.env.self->decl, name))
      return declValue(d, f.env.self->module, f.env.self);
  if (f.env.module)
    if (auto it = f.env.module->globals.find(name); it != f.env.module->globals.end())
      return declValue(it->second, f.env.module, nullptr);
  if (isBuiltin(name)) {
    Value v;
    v.kind = Value::Kind::Builtin;
    v.text = name;
    return v;
  }
  auto b = error(DiagID::UnknownName, range, name);
  std::string s = didYouMean(name, namesInScope(f));
  if (!s.empty())
    b.help("did you mean '" + s + "'?");
  return Value::error();
}

Value Checker::expr(const ast::Expr &e, Frame &f) {
  std::vector<RuntimeSource> operands;
  std::vector<RuntimeSource> *outer = std::exchange(f.sources, &operands);
  Value v = exprOf(e, f);
  f.sources = outer;
  if (v.isTensor())
    mergeSources(v.sources, operands);
  if (outer) {
    mergeSources(*outer, operands);
    mergeSources(*outer, v.sources);
  }
  return v;
}

Value Checker::exprOf(const ast::Expr &e, Frame &f) {
  Value v;
  switch (e.kind()) {
  case ast::Expr::Kind::Int:
    v = Value::ofInt(Size::constant(llvm::cast<ast::IntLit>(e).value));
    v.origin = e.range; // where a literal that does not fit its dtype is shown (E0318)
    break;
  case ast::Expr::Kind::Float: v = Value::ofFloat(llvm::cast<ast::FloatLit>(e).value); break;
  case ast::Expr::Kind::Bool: v = Value::ofBool(llvm::cast<ast::BoolLit>(e).value); break;
  case ast::Expr::Kind::String:
    v.kind = Value::Kind::String;
    v.text = llvm::cast<ast::StringLit>(e).value;
    break;
  case ast::Expr::Kind::Name: v = lookupName(llvm::cast<ast::NameExpr>(e).name, e.range, f); break;
  case ast::Expr::Kind::Unary: {
    auto &u = llvm::cast<ast::UnaryExpr>(e);
    Value x = u.operand ? expr(*u.operand, f) : Value::error();
    if (x.isError())
      return x;
    if (u.op == ast::UnaryOp::Neg) {
      if (x.kind == Value::Kind::Int) {
        v = Value::ofInt(-x.size);
        v.origin = e.range;
      } else if (x.kind == Value::Kind::Float)
        v = Value::ofFloat(-x.number);
      else if (x.isTensor()) {
        v = x;
        addFlops(f, x.tensor.elements());
        if (lowering())
          lower_->unary(u, x, v);
      } else {
        error(DiagID::ExpectedTensor, u.operand->range, x.describe());
        return Value::error();
      }
    } else {
      if (x.kind == Value::Kind::Bool)
        v = Value::ofBool(x.boolean ? std::optional<bool>(!*x.boolean) : std::nullopt);
      else if (x.isTensor() && x.tensor.dtype == "bool") {
        v = x;
        if (lowering())
          lower_->unary(u, x, v);
      } else {
        error(DiagID::WrongDtypeKind, u.opRange, "!", "a bool", x.describe());
        return Value::error();
      }
    }
    break;
  }
  case ast::Expr::Kind::Binary: v = binary(llvm::cast<ast::BinaryExpr>(e), f); break;
  case ast::Expr::Kind::Call: v = call(llvm::cast<ast::CallExpr>(e), f); break;
  case ast::Expr::Kind::Index: v = index(llvm::cast<ast::IndexExpr>(e), f); break;
  case ast::Expr::Kind::Member: v = member(llvm::cast<ast::MemberExpr>(e), f); break;
  case ast::Expr::Kind::List: {
    v.kind = Value::Kind::List;
    for (const ast::ExprPtr &el : llvm::cast<ast::ListExpr>(e).elements) {
      Value x = el ? expr(*el, f) : Value::error();
      if (x.isError())
        return x;
      v.elements.push_back(std::move(x));
    }
    break;
  }
  case ast::Expr::Kind::Tuple: {
    // Values of any first-class kind but tuples themselves (no nesting).
    v.kind = Value::Kind::List;
    v.tuple = true;
    for (const ast::ExprPtr &el : llvm::cast<ast::TupleExpr>(e).elements) {
      Value x = el ? expr(*el, f) : Value::error();
      if (x.isError())
        return x;
      if (!isStorable(x) || x.kind == Value::Kind::List) {
        error(DiagID::ExpectedTensor, el->range, x.describe());
        return Value::error();
      }
      v.elements.push_back(std::move(x));
    }
    break;
  }
  }
  logType(f, e, v);
  return v;
}

bool Checker::unifyDtypes(Value &a, Value &b, Frame &f, llvm::SMRange at, llvm::StringRef op) {
  // A compile-time bool meeting a tensor is a rank-0 bool tensor.
  for (Value *v : {&a, &b})
    if (v->kind == Value::Kind::Bool && (a.isTensor() || b.isTensor()))
      *v = Value::ofTensor(TensorType{"bool", std::nullopt, {}});
  if (a.isTensor() && b.isTensor() && a.tensor.dtype != b.tensor.dtype) {
    error(DiagID::DtypeMismatch, at, op.str(), a.tensor.dtype, b.tensor.dtype)
        .help("convert one side explicitly, e.g. " + b.tensor.dtype + "(...) or " +
              a.tensor.dtype + "(...)");
    return false;
  }
  // A literal takes the dtype of the tensor it meets; an integer one must
  // fit an integer dtype's range (it would wrap).
  for (auto [t, n] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    if (!t->isTensor() || n->kind != Value::Kind::Int)
      continue;
    const std::string &dt = t->tensor.dtype;
    const std::optional<tensor::DType> type = tensor::parseDTypeName(dt);
    std::optional<int64_t> v = n->size.constantValue();
    if (!type || !tensor::isInteger(*type) || !v)
      continue;
    const auto [lo, hi] = tensor::integerRange(*type);
    if (*v < lo || *v > hi) {
      error(DiagID::LiteralRange, n->origin.isValid() ? n->origin : at, *v, dt, lo, hi)
          .help("convert the tensor to a wider dtype first, e.g. i32(...)");
      return false;
    }
  }
  // A literal takes the dtype of the tensor it meets.
  if (a.isTensor() && b.isNumber())
    b = Value::ofTensor(TensorType{a.tensor.dtype, std::nullopt, {}});
  else if (b.isTensor() && a.isNumber())
    a = Value::ofTensor(TensorType{b.tensor.dtype, std::nullopt, {}});
  return true;
}

std::optional<TensorType> Checker::broadcast(const TensorType &a, const TensorType &b, Frame &f,
                                             llvm::SMRange at, llvm::StringRef op,
                                             const ast::Expr *le, const ast::Expr *re,
                                             const Value *lv, const Value *rv) {
  auto mismatch = [&](DiagID id) {
    auto d = id == DiagID::ShapeMismatch ? error(id, at, op.str(), a.str(), b.str())
                                         : error(id, at, a.str(), b.str());
    if (le)
      d.label(le->range, a.str());
    if (re)
      d.label(re->range, b.str());
    if (lv)
      noteOrigin(d, le, *lv);
    if (rv)
      noteOrigin(d, re, *rv);
    // Only the feature widths differ: the usual fix is a projection.
    bool lastOnly = id == DiagID::ShapeMismatch && a.dims.size() == b.dims.size() &&
                    !a.dims.empty() && a.pack == b.pack;
    for (size_t i = 0; lastOnly && i + 1 < a.dims.size(); ++i)
      lastOnly = a.dims[i] == b.dims[i];
    if (lastOnly) {
      bool rhsName = llvm::isa_and_nonnull<ast::NameExpr>(re);
      const ast::Expr *odd = rhsName ? re : le;
      if (auto *n = llvm::dyn_cast_or_null<ast::NameExpr>(odd)) {
        const Size &want = rhsName ? a.dims.back() : b.dims.back();
        const Size &have = rhsName ? b.dims.back() : a.dims.back();
        d.help("project '" + n->name + "' back to " + want.str() + ", e.g. with nn.Linear<" +
               have.str() + ", " + want.str() + ">");
      }
    }
    return std::optional<TensorType>();
  };
  TensorType out;
  out.dtype = a.dtype;
  if (a.pack && b.pack && a.pack != b.pack)
    return mismatch(DiagID::PackMismatch);
  if ((a.pack && b.dims.size() > a.dims.size()) || (b.pack && a.dims.size() > b.dims.size()))
    return mismatch(DiagID::PackMismatch);
  out.pack = a.pack ? a.pack : b.pack;
  size_t n = std::max(a.dims.size(), b.dims.size());
  out.dims.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Size *da = i < a.dims.size() ? &a.dims[a.dims.size() - 1 - i] : nullptr;
    const Size *db = i < b.dims.size() ? &b.dims[b.dims.size() - 1 - i] : nullptr;
    Size &o = out.dims[n - 1 - i];
    if (!da || !db) {
      o = da ? *da : *db;
      continue;
    }
    Decision d = sizesEqual(*da, *db);
    if (d == Decision::Yes || d == Decision::Unknown)
      o = *da;
    else if (da->constantValue() == 1)
      o = *db;
    else if (db->constantValue() == 1)
      o = *da;
    else
      return mismatch(DiagID::ShapeMismatch);
  }
  return out;
}

Value Checker::binary(const ast::BinaryExpr &e, Frame &f) {
  Value l = e.lhs ? expr(*e.lhs, f) : Value::error();
  Value r = e.rhs ? expr(*e.rhs, f) : Value::error();
  if (l.isError() || r.isError())
    return Value::error();
  std::string op = ast::spelling(e.op).str();
  if (e.op == ast::BinaryOp::MatMul)
    return matmul(l, r, f, e);
  for (const Value *x : {&l, &r})
    if (!x->isTensor() && !x->isNumber() && x->kind != Value::Kind::Bool) {
      error(DiagID::ExpectedTensor, (x == &l ? e.lhs : e.rhs)->range, x->describe());
      return Value::error();
    }
  bool logical = e.op == ast::BinaryOp::And || e.op == ast::BinaryOp::Or;
  if (l.kind == Value::Kind::Bool && r.kind == Value::Kind::Bool && logical) {
    if (l.boolean && r.boolean)
      return Value::ofBool(e.op == ast::BinaryOp::And ? (*l.boolean && *r.boolean)
                                                      : (*l.boolean || *r.boolean));
    return Value::ofBool(std::nullopt);
  }
  // Compile-time integers are sizes: the arithmetic of the normal form.
  if (l.kind == Value::Kind::Int && r.kind == Value::Kind::Int) {
    if (isComparison(e.op))
      return Value::ofBool(compareSizes(e.op, l.size, r.size));
    switch (e.op) {
    case ast::BinaryOp::Add: return Value::ofInt(l.size + r.size);
    case ast::BinaryOp::Sub: return Value::ofInt(l.size - r.size);
    case ast::BinaryOp::Mul: return Value::ofInt(l.size * r.size);
    case ast::BinaryOp::Div:
      checkExactDivision(l.size, r.size, f.env, e.range);
      return r.size.isZero() ? Value::error() : Value::ofInt(sizes::div(l.size, r.size));
    case ast::BinaryOp::Mod:
      if (r.size.isZero()) {
        error(DiagID::DivisionByZero, e.range, "'" + sourceText(e.range) + "'");
        return Value::error();
      }
      return Value::ofInt(sizes::mod(l.size, r.size));
    case ast::BinaryOp::Pow:
      if (auto k = r.size.constantValue(); k && *k >= 0 && *k < 64) {
        Size p = Size::constant(1);
        for (int64_t i = 0; i < *k; ++i)
          p = p * l.size;
        return Value::ofInt(p);
      }
      break;
    default: break;
    }
  }
  if (l.isNumber() && r.isNumber()) {
    double a = l.number, b = r.number;
    bool known = true;
    for (auto [x, out] : {std::pair{&l, &a}, std::pair{&r, &b}})
      if (x->kind == Value::Kind::Int) {
        auto c = x->size.constantValue();
        known &= c.has_value();
        *out = c ? static_cast<double>(*c) : 0.0;
      }
    if (!known)
      return isComparison(e.op) ? Value::ofBool(std::nullopt) : Value::ofFloat(0);
    switch (e.op) {
    case ast::BinaryOp::Add: return Value::ofFloat(a + b);
    case ast::BinaryOp::Sub: return Value::ofFloat(a - b);
    case ast::BinaryOp::Mul: return Value::ofFloat(a * b);
    case ast::BinaryOp::Div: return Value::ofFloat(a / b);
    case ast::BinaryOp::Mod: return Value::ofFloat(std::fmod(a, b));
    case ast::BinaryOp::Pow: return Value::ofFloat(std::pow(a, b));
    case ast::BinaryOp::Eq: return Value::ofBool(a == b);
    case ast::BinaryOp::Ne: return Value::ofBool(a != b);
    case ast::BinaryOp::Lt: return Value::ofBool(a < b);
    case ast::BinaryOp::Le: return Value::ofBool(a <= b);
    case ast::BinaryOp::Gt: return Value::ofBool(a > b);
    case ast::BinaryOp::Ge: return Value::ofBool(a >= b);
    default: break;
    }
  }
  if (!l.isTensor() && !r.isTensor()) {
    error(DiagID::ExpectedTensor, e.opRange, l.describe() + " " + op + " " + r.describe());
    return Value::error();
  }
  // A compile-time bool meeting a tensor is a rank-0 bool tensor.
  Value lt = l.kind == Value::Kind::Bool ? Value::ofTensor(TensorType{"bool", std::nullopt, {}}) : l;
  Value rt = r.kind == Value::Kind::Bool ? Value::ofTensor(TensorType{"bool", std::nullopt, {}}) : r;
  if (!unifyDtypes(lt, rt, f, e.opRange, op))
    return Value::error();
  const std::string &dtype = lt.tensor.dtype;
  if (logical && dtype != "bool") {
    error(DiagID::WrongDtypeKind, e.opRange, op, "bool tensors", lt.tensor.str());
    return Value::error();
  }
  if (!logical && !isComparison(e.op) && dtype == "bool") {
    error(DiagID::WrongDtypeKind, e.opRange, op, "numbers", lt.tensor.str());
    return Value::error();
  }
  auto t = broadcast(lt.tensor, rt.tensor, f, e.opRange, op, e.lhs.get(), e.rhs.get(), &l, &r);
  if (!t)
    return Value::error();
  if (isComparison(e.op))
    t->dtype = "bool";
  Value v = Value::ofTensor(*t);
  addFlops(f, t->elements());
  notePeak(f, {&lt, &rt}, v);
  if (lowering())
    lower_->binary(e, l, r, v);
  v.origin = e.range;
  v.originWhat = "'" + op + "'";
  return v;
}

Value Checker::call(const ast::CallExpr &e, Frame &f) {
  Value callee = e.callee ? expr(*e.callee, f) : Value::error();
  std::vector<Arg> args;
  bool failed = callee.isError();
  for (const ast::CallArg &a : e.args) {
    Value v = a.value ? expr(*a.value, f) : Value::error();
    failed |= v.isError();
    if (!isStorable(v) && !v.isError()) {
      error(DiagID::NotFirstClass, a.value->range, v.describe());
      failed = true;
    }
    // Errors about an argument point at its value, the smallest span.
    llvm::SMRange at = a.value ? a.value->range : a.range;
    args.push_back(Arg{std::move(v), at, a.name.name, a.value.get(), a.name.range});
  }
  if (failed)
    return Value::error();
  switch (callee.kind) {
  case Value::Kind::Builtin: {
    std::vector<Arg> kept = lowering() ? args : std::vector<Arg>();
    Value v = callBuiltin(callee.text, e, std::move(args), f);
    if (lowering())
      lower_->builtin(callee.text, e, kept, v);
    return v;
  }
  case Value::Kind::Dtype: {
    if (args.size() != 1 || !args[0].name.empty()) {
      error(DiagID::BadBuiltinArgument, e.range, callee.text, "a conversion takes one tensor");
      return Value::error();
    }
    const Value &x = args[0].value;
    Value v;
    if (x.isTensor())
      v = Value::ofTensor(TensorType{callee.text, x.tensor.pack, x.tensor.dims});
    else if (x.isNumber() || x.kind == Value::Kind::Bool)
      v = Value::ofTensor(TensorType{callee.text, std::nullopt, {}});
    else {
      error(DiagID::ExpectedTensor, args[0].range, x.describe());
      return Value::error();
    }
    notePeak(f, {&x}, v);
    if (lowering())
      lower_->convert(e, x, v);
    v.origin = e.range;
    v.originWhat = "'" + callee.text + "'";
    return v;
  }
  case Value::Kind::Function: {
    llvm::SMRange saved = std::exchange(calleeOrigin_, llvm::SMRange());
    Value v = callFunction(*callee.fn, callee.module, callee.model,
                           e.hasGenericArgs ? &e.genericArgs : nullptr, std::move(args), f,
                           e.range, callee.path);
    calleeOrigin_ = saved;
    return v;
  }
  case Value::Kind::Model: {
    auto *fwd = llvm::dyn_cast_or_null<ast::FnDecl>(findMember(*callee.model->decl, "forward"));
    if (!fwd) {
      error(DiagID::NotCallable, e.callee->range, callee.describe())
          .note("'" + callee.model->decl->name.name + "' declares no 'forward'",
                callee.model->decl->name.range);
      return Value::error();
    }
    std::string savedText = std::exchange(calleeText_, sourceText(e.callee->range));
    llvm::SMRange saved = std::exchange(calleeOrigin_, callee.origin);
    Value v = callFunction(*fwd, callee.model->module, callee.model,
                           e.hasGenericArgs ? &e.genericArgs : nullptr, std::move(args), f,
                           e.range, callee.path);
    calleeOrigin_ = saved;
    calleeText_ = savedText;
    if (v.isTensor()) {
      v.originWhat = "'" + sourceText(e.callee->range) + "'";
    }
    return v;
  }
  default:
    error(DiagID::NotCallable, e.callee->range, callee.describe());
    return Value::error();
  }
}

Value Checker::index(const ast::IndexExpr &e, Frame &f) {
  Value base = e.base ? expr(*e.base, f) : Value::error();
  if (base.isError())
    return base;
  std::vector<Value> idx;
  for (const ast::IndexItem &it : e.items) {
    for (const ast::Expr *x : {it.index.get(), it.lo.get(), it.hi.get()}) {
      if (!x)
        continue;
      Value v = expr(*x, f);
      if (v.isError())
        return v;
      if (v.kind != Value::Kind::Int) {
        auto b = error(DiagID::IndexNotStatic, x->range, v.describeNotStatic("an integer"));
        noteSources(b, v);
        if (v.isTensor())
          b.help("index with run-time values using gather(" + sourceText(e.base->range) + ", " +
                 sourceText(x->range) + ", axis = 0)");
        return Value::error();
      }
      idx.push_back(v);
    }
  }
  // What is indexed, for E0307: "a dimension of size 4", "a tuple of 2 values".
  const std::string indexed = base.kind == Value::Kind::List
                                  ? (base.tuple ? "a tuple of " : "a list of ")
                                  : base.kind == Value::Kind::ModelArray ? "an array of " : "";
  auto checkIndex = [&](const Size &i, const Size &n, llvm::SMRange at, bool inclusive) {
    auto ci = i.constantValue();
    auto over = (i - n).constantValue();
    if ((ci && *ci < 0) || (over && (inclusive ? *over > 0 : *over >= 0))) {
      error(DiagID::IndexOutOfBounds, at, i.str(),
            indexed.empty() ? "a dimension of size " + n.str()
                            : indexed + n.str() +
                                  (base.kind == Value::Kind::ModelArray ? " models" : " values"));
      return false;
    }
    return true;
  };
  if (base.kind == Value::Kind::ModelArray || base.kind == Value::Kind::List) {
    if (e.items.size() != 1 || e.items[0].isSlice) {
      error(DiagID::BadBuiltinArgument, e.range, "[]",
            base.kind == Value::Kind::ModelArray ? "an array of models is indexed by one integer"
            : base.tuple                          ? "a tuple is indexed by one integer"
                                                  : "a list is indexed by one integer");
      return Value::error();
    }
    Size n = base.kind == Value::Kind::List ? Size::constant(base.elements.size()) : base.size;
    if (!checkIndex(idx[0].size, n, e.items[0].range, false))
      return Value::error();
    if (base.kind == Value::Kind::List) {
      auto c = idx[0].size.constantValue();
      if (!c)
        return Value::error();
      return base.elements[*c];
    }
    Value v;
    v.kind = Value::Kind::Model;
    v.model = base.model;
    if (auto c = idx[0].size.constantValue())
      v.path = childPath(base.path, std::to_string(*c));
    return v;
  }
  if (!base.isTensor()) {
    error(DiagID::ExpectedTensor, e.base->range, base.describe());
    return Value::error();
  }
  const TensorType &t = base.tensor;
  if (t.pack) {
    error(DiagID::AxisOutOfRange, e.range, "0", t.str())
        .note("the leading dimensions of a batch pack are not known here");
    return Value::error();
  }
  if (e.items.size() > t.dims.size()) {
    error(DiagID::AxisOutOfRange, e.items[t.dims.size()].range, t.dims.size(), t.str());
    return Value::error();
  }
  TensorType out{t.dtype, std::nullopt, {}};
  size_t k = 0;
  for (size_t i = 0; i < e.items.size(); ++i) {
    const ast::IndexItem &it = e.items[i];
    const Size &n = t.dims[i];
    if (!it.isSlice) {
      if (!checkIndex(idx[k++].size, n, it.range, false))
        return Value::error();
      continue;
    }
    Size lo = it.lo ? idx[k++].size : Size();
    Size hi = it.hi ? idx[k++].size : n;
    if (!checkIndex(lo, n, it.range, false) || !checkIndex(hi, n, it.range, true))
      return Value::error();
    if (auto d = (hi - lo).constantValue(); d && *d <= 0) {
      error(DiagID::IndexOutOfBounds, it.range, sourceText(it.range), "a dimension of size " + n.str());
      return Value::error();
    }
    out.dims.push_back(hi - lo);
  }
  out.dims.insert(out.dims.end(), t.dims.begin() + e.items.size(), t.dims.end());
  Value v = Value::ofTensor(out);
  if (lowering())
    lower_->index(e, base, idx, v);
  v.origin = e.range;
  v.originWhat = "indexing";
  return v;
}

Value Checker::member(const ast::MemberExpr &e, Frame &f) {
  Value base = e.base ? expr(*e.base, f) : Value::error();
  if (base.isError())
    return base;
  const std::string &name = e.member.name;
  if (base.kind == Value::Kind::Module) {
    ModuleInfo *m = base.module;
    auto it = m->globals.find(name);
    if (it == m->globals.end() || llvm::isa<ast::ImportDecl>(it->second)) {
      std::vector<std::string> cands;
      for (const auto &[k, v] : m->globals)
        cands.push_back(k);
      auto b = error(DiagID::UnknownMember, e.member.range, "module '" + m->name + "'", name);
      std::string s = didYouMean(name, cands);
      if (!s.empty())
        b.help("did you mean '" + s + "'?");
      return Value::error();
    }
    Frame mf;
    mf.env.module = m;
    mf.scopes.emplace_back();
    return lookupName(name, e.member.range, mf);
  }
  if (base.kind == Value::Kind::Model) {
    const ast::Decl *d = findMember(*base.model->decl, name);
    if (!d) {
      std::vector<std::string> cands;
      for (const ast::DeclPtr &m : base.model->decl->members)
        if (m)
          cands.push_back(m->name.name);
      auto b = error(DiagID::UnknownMember, e.member.range, "model " + base.model->name, name);
      std::string s = didYouMean(name, cands);
      if (!s.empty())
        b.help("did you mean '" + s + "'?");
      return Value::error();
    }
    Frame mf;
    mf.env.module = base.model->module;
    mf.env.self = base.model;
    mf.env.sizes = base.model->sizes;
    mf.env.dtypes = base.model->dtypes;
    mf.env.concrete = f.env.concrete;
    mf.env.selfPath = base.path;
    mf.scopes.emplace_back();
    Value v = lookupName(name, e.member.range, mf);
    // A weight reached through a model reads as written: `fc1.w`.
    for (RuntimeSource &s : v.sources)
      if (s.kind == RuntimeSource::Kind::Weight)
        s.name = sourceText(e.range);
    return v;
  }
  error(DiagID::UnknownMember, e.member.range, base.describe(), name);
  return Value::error();
}

} // namespace lpu::check
