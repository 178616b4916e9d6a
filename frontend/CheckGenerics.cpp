// Sizes and generics: size expressions to normal forms, exact division,
// where clauses, inference of generic sizes by unification at a call, and
// instantiation of a body once every size is a number.
#include "frontend/ASTPrinter.h"
#include "frontend/CheckerImpl.h"
#include "frontend/LowerImpl.h"

#include <algorithm>
#include <map>

namespace lpu::check {

std::optional<std::vector<Checker::GenericBinding>>
Checker::matchGenericArgs(const std::vector<ast::GenericArg> &args, const std::vector<ast::GenericParam> &params,
                          const std::string &owner, const ast::Ident *declared) {
  std::vector<GenericBinding> out;
  size_t pos = 0;
  std::map<const ast::GenericParam *, const ast::GenericArg *> given;
  for (const ast::GenericArg &a : args) {
    const ast::GenericParam *target = nullptr;
    if (a.kind == ast::GenericArg::Kind::Positional) {
      if (pos >= params.size()) {
        error(DiagID::TooManyGenericArgs, a.range, owner, params.size(), args.size());
        return std::nullopt;
      }
      target = &params[pos++];
    } else {
      for (const ast::GenericParam &g : params)
        if (g.name.name == a.name.name)
          target = &g;
      if (!target) {
        auto b = error(DiagID::UnknownArgument, a.name.range, owner, a.name.name);
        if (declared)
          b.note("'" + declared->name + "' is declared here", declared->range);
        return std::nullopt;
      }
    }
    if (auto [it, fresh] = given.try_emplace(target, &a); !fresh) {
      error(DiagID::DuplicateArgument, a.range, owner, target->name.name)
          .note("first given here", it->second->range);
      return std::nullopt;
    }
    out.emplace_back(&a, target);
  }
  return out;
}

std::optional<std::string> Checker::dtypeOf(llvm::StringRef name, const Env &env) {
  if (isDtypeName(name))
    return name.str();
  if (auto it = env.dtypes.find(name.str()); it != env.dtypes.end())
    return it->second;
  return std::nullopt;
}

std::optional<Size> Checker::sizeOf(const ast::SizeExpr &e, const Env &env, const Frame *frame) {
  if (auto *i = llvm::dyn_cast<ast::SizeInt>(&e))
    return Size::constant(i->value);
  if (auto *n = llvm::dyn_cast<ast::SizeName>(&e)) {
    if (auto it = env.sizes.find(n->name); it != env.sizes.end())
      return it->second;
    if (frame)
      if (auto *local = findLocal(const_cast<Frame &>(*frame), n->name)) {
        if (local->value.kind == Value::Kind::Int)
          return local->value.size;
        const Value &v = local->value;
        if (v.isError())
          return std::nullopt;
        auto b = error(DiagID::NotASize, n->range, n->name);
        // A parameter says so where it is declared; a local says what it is.
        bool isSource = v.sources.size() == 1 &&
                        v.sources[0].decl.Start.getPointer() == local->decl.Start.getPointer();
        if (!isSource)
          b.note("'" + n->name + "' is " + v.describeNotStatic("an integer"), local->decl);
        noteSources(b, v);
        return std::nullopt;
      }
    if (env.module)
      if (auto it = env.module->globals.find(n->name); it != env.module->globals.end())
        if (auto *c = llvm::dyn_cast<ast::ConstDecl>(it->second))
          if (auto *lit = llvm::dyn_cast_or_null<ast::IntLit>(c->value.get()))
            return Size::constant(lit->value);
    std::vector<std::string> candidates;
    for (const auto &[k, v] : env.sizes)
      candidates.push_back(k);
    auto b = error(DiagID::UnknownSizeName, n->range, n->name);
    std::string suggestion = didYouMean(n->name, candidates);
    if (!suggestion.empty())
      b.help("did you mean '" + suggestion + "'?");
    return std::nullopt;
  }
  if (auto *b = llvm::dyn_cast<ast::SizeBinary>(&e)) {
    auto l = b->lhs ? sizeOf(*b->lhs, env, frame) : std::nullopt;
    auto r = b->rhs ? sizeOf(*b->rhs, env, frame) : std::nullopt;
    if (!l || !r)
      return std::nullopt;
    switch (b->op) {
    case ast::SizeOp::Add: return *l + *r;
    case ast::SizeOp::Sub: return *l - *r;
    case ast::SizeOp::Mul: return *l * *r;
    case ast::SizeOp::Div:
      checkExactDivision(*l, *r, env, b->range);
      return sizes::div(*l, *r);
    case ast::SizeOp::Mod:
      if (r->isZero()) {
        error(DiagID::DivisionByZero, b->range, "'" + sourceText(b->range) + "'");
        return std::nullopt;
      }
      return sizes::mod(*l, *r);
    }
  }
  if (auto *c = llvm::dyn_cast<ast::SizeCall>(&e)) {
    auto l = c->lhs ? sizeOf(*c->lhs, env, frame) : std::nullopt;
    auto r = c->rhs ? sizeOf(*c->rhs, env, frame) : std::nullopt;
    if (!l || !r)
      return std::nullopt;
    switch (c->fn) {
    case ast::SizeFn::Min: return sizes::min(*l, *r);
    case ast::SizeFn::Max: return sizes::max(*l, *r);
    case ast::SizeFn::FloorDiv:
    case ast::SizeFn::CeilDiv:
      if (r->isZero()) {
        error(DiagID::DivisionByZero, c->range, "'" + sourceText(c->range) + "'");
        return std::nullopt;
      }
      return c->fn == ast::SizeFn::FloorDiv ? sizes::floordiv(*l, *r) : sizes::ceildiv(*l, *r);
    }
  }
  return std::nullopt;
}

void Checker::checkExactDivision(const Size &a, const Size &b, const Env &env,
                                 llvm::SMRange range, const std::string &what) {
  if (b.isZero()) {
    error(DiagID::DivisionByZero, range, "'" + sourceText(range) + "'");
    return;
  }
  if (sizes::exactQuotient(a, b))
    return;
  auto ca = a.constantValue(), cb = b.constantValue();
  if (!ca || !cb) {
    // Proven by a where clause, or repeated once the sizes are numbers.
    return;
  }
  std::string text = what.empty() ? sourceText(range) : what;
  auto d = error(DiagID::InexactDivision, range,
                 "'" + text + "' = " + std::to_string(*ca) + " / " + std::to_string(*cb));
  if (!what.empty())
    return;
  size_t slash = text.find('/');
  if (slash != std::string::npos && !env.concrete)
    d.help("use floordiv or ceildiv to round");
  else if (slash != std::string::npos) {
    std::string lhs = llvm::StringRef(text).substr(0, slash).trim().str();
    std::string rhs = llvm::StringRef(text).substr(slash + 1).trim().str();
    d.help("require it with 'where " + lhs + " % " + rhs +
           " == 0', or round with floordiv/ceildiv");
  }
}

std::optional<bool> Checker::decideWhere(const ast::WhereConstraint &w, const Env &env) {
  if (!w.lhs || !w.rhs)
    return true;
  auto l = sizeOf(*w.lhs, env), r = sizeOf(*w.rhs, env);
  if (!l || !r)
    return true; // already reported
  Size d = *l - *r;
  if (auto c = d.constantValue()) {
    switch (w.op) {
    case ast::CompareOp::Eq: return *c == 0;
    case ast::CompareOp::Ne: return *c != 0;
    case ast::CompareOp::Lt: return *c < 0;
    case ast::CompareOp::Le: return *c <= 0;
    case ast::CompareOp::Gt: return *c > 0;
    case ast::CompareOp::Ge: return *c >= 0;
    }
  }
  if (w.op == ast::CompareOp::Eq)
    for (const Size &fact : env.facts)
      if (fact == d || fact == -d)
        return true;
  return std::nullopt;
}

std::string Checker::describeBindings(const ast::FnDecl &fn, const Env &env) const {
  std::string out;
  for (const ast::GenericParam &g : fn.generics) {
    std::string v;
    if (g.kind == ast::GenericParam::Kind::Pack) {
      auto it = env.packs.find(g.name.name);
      v = it == env.packs.end() ? "?" : it->second.str();
    } else if (g.kind == ast::GenericParam::Kind::Dtype) {
      auto it = env.dtypes.find(g.name.name);
      v = it == env.dtypes.end() ? "?" : it->second;
    } else {
      auto it = env.sizes.find(g.name.name);
      v = it == env.sizes.end() ? "?" : it->second.str();
    }
    out += std::string(out.empty() ? "" : ", ") +
           (g.kind == ast::GenericParam::Kind::Pack ? ".." : "") + g.name.name + " = " + v;
  }
  return out;
}

/// " with N = 4, .." for a generic fn's bindings; "" for a fn with none.
std::string Checker::withBindings(const ast::FnDecl &fn, const Env &env) const {
  std::string bindings = describeBindings(fn, env);
  return bindings.empty() ? "" : " with " + bindings;
}

namespace {
/// Where each generic got its value, for conflict notes.
struct Source {
  llvm::SMRange range;
  std::string what;
};
} // namespace

Value Checker::callFunction(const ast::FnDecl &fn, ModuleInfo *module, ModelInstPtr self,
                            const std::vector<ast::GenericArg> *explicitArgs,
                            std::vector<Arg> args, Frame &caller, llvm::SMRange callRange,
                            const std::string &selfPath) {
  if (definingFn_)
    callGraph_[definingFn_].push_back({&fn, callRange});
  Env env;
  env.module = module;
  env.self = self;
  env.concrete = caller.env.concrete;
  env.facts = caller.env.facts;
  env.selfPath = selfPath;
  if (self) {
    env.sizes = self->sizes;
    env.dtypes = self->dtypes;
  }
  std::string fnName = (self ? self->decl->name.name + "." : std::string()) + fn.name.name;
  std::map<std::string, Source> sources;
  std::set<std::string> generics;
  for (const ast::GenericParam &g : fn.generics)
    generics.insert(g.name.name);

  // Explicit generic arguments.
  if (explicitArgs) {
    auto bindings = matchGenericArgs(*explicitArgs, fn.generics, fnName, &fn.name);
    if (!bindings)
      return Value::error();
    for (const auto &[gaPtr, target] : *bindings) {
      const ast::GenericArg &ga = *gaPtr;
      if (target->kind == ast::GenericParam::Kind::Dtype) {
        auto *n = llvm::dyn_cast_or_null<ast::SizeName>(ga.size.get());
        auto d = n ? dtypeOf(n->name, caller.env) : std::nullopt;
        if (!d) {
          error(DiagID::WrongKindOfName, ga.range, sourceText(ga.range), "not a dtype",
                "a dtype for '" + target->name.name + "'");
          return Value::error();
        }
        env.dtypes[target->name.name] = *d;
      } else if (target->kind == ast::GenericParam::Kind::Pack) {
        // A pack binds to the leading dimensions of an argument; there is
        // no syntax for a list of sizes, so a given value cannot mean it.
        error(DiagID::WrongKindOfName, ga.range, sourceText(ga.range),
              "a value for the batch pack '.." + target->name.name + "'",
              "allowed: a pack is inferred from the argument types");
        return Value::error();
      } else if (ga.size) {
        auto s = sizeOf(*ga.size, caller.env, &caller);
        if (!s)
          return Value::error();
        env.sizes[target->name.name] = *s;
        sources[target->name.name] = {ga.range, "given here"};
      } else {
        error(DiagID::WrongKindOfName, ga.range, sourceText(ga.range), "a type",
              "a size for '" + target->name.name + "'");
        return Value::error();
      }
    }
  }

  // Arguments to parameters: positional first, then by name.
  std::vector<const Arg *> bound(fn.params.size(), nullptr);
  size_t pos = 0;
  for (const Arg &a : args) {
    if (a.name.empty()) {
      if (pos >= fn.params.size()) {
        error(DiagID::ArgumentCount, callRange, fnName, fn.params.size(), args.size())
            .note("'" + fn.name.name + "' is declared here", fn.name.range);
        return Value::error();
      }
      bound[pos++] = &a;
      continue;
    }
    bool found = false;
    for (size_t i = 0; i < fn.params.size(); ++i)
      if (fn.params[i].name.name == a.name) {
        if (const Arg *earlier = bound[i]) {
          error(DiagID::DuplicateArgument, a.nameRange, fnName, a.name)
              .note("first given here", earlier->name.empty() ? earlier->range : earlier->nameRange);
          return Value::error();
        }
        bound[i] = &a;
        found = true;
      }
    if (!found) {
      error(DiagID::UnknownArgument, a.nameRange, fnName, a.name);
      return Value::error();
    }
  }
  for (size_t i = 0; i < fn.params.size(); ++i)
    if (!bound[i]) {
      error(DiagID::ArgumentCount, callRange, fnName, fn.params.size(), args.size())
          .note("'" + fn.name.name + "' is declared here", fn.name.range);
      return Value::error();
    }
  for (const Arg *a : bound)
    if (a->value.isError())
      return Value::error();

  // Unification: bind generic dtypes, packs and bare size names.
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const Arg &a = *bound[i];
    auto *pt = llvm::dyn_cast_or_null<ast::NamedType>(fn.params[i].type.get());
    if (!pt || pt->path.size() != 1)
      continue;
    if (!a.value.isTensor()) {
      if (a.value.isNumber() && pt->dims.empty())
        continue; // a literal adopts the parameter's dtype
      if (a.value.kind == Value::Kind::Bool && pt->dims.empty()) {
        // `true` is a rank-0 bool: it binds a dtype generic `T` to bool.
        const std::string &dn = pt->path[0].name;
        if (generics.count(dn) && !env.dtypes.count(dn))
          env.dtypes[dn] = "bool";
        continue;
      }
      error(DiagID::TypeMismatch, a.range, toString(*pt), a.value.describe())
          .note("parameter '" + fn.params[i].name.name + "' of '" + fnName + "'",
                fn.params[i].range);
      return Value::error();
    }
    const TensorType &at = a.value.tensor;
    const std::string &dn = pt->path[0].name;
    if (generics.count(dn) && !env.dtypes.count(dn))
      env.dtypes[dn] = at.dtype;
    size_t explicitDims = 0;
    bool hasPack = false;
    for (const ast::Dim &d : pt->dims)
      d.isPack() ? (void)(hasPack = true) : (void)++explicitDims;
    if (at.dims.size() < explicitDims || (!hasPack && (at.dims.size() != explicitDims || at.pack))) {
      auto b = error(DiagID::TypeMismatch, a.range, toString(*pt), at.str());
      b.note("parameter '" + fn.params[i].name.name + "' of '" + fnName + "' has rank " +
                 std::to_string(explicitDims) + (hasPack ? " or more" : ""),
             fn.params[i].range);
      if (a.expr)
        noteOrigin(b, a.expr, a.value);
      return Value::error();
    }
    size_t lead = at.dims.size() - explicitDims;
    size_t k = 0;
    for (const ast::Dim &d : pt->dims) {
      if (d.isPack()) {
        PackBinding pb{at.pack, std::vector<Size>(at.dims.begin(), at.dims.begin() + lead)};
        auto it = env.packs.find(d.pack.name);
        if (it == env.packs.end())
          env.packs[d.pack.name] = pb;
        continue;
      }
      const Size &actual = at.dims[lead + k++];
      auto *n = llvm::dyn_cast_or_null<ast::SizeName>(d.size.get());
      if (!n || !generics.count(n->name))
        continue;
      auto it = env.sizes.find(n->name);
      if (it == env.sizes.end()) {
        env.sizes[n->name] = actual;
        sources[n->name] = {a.range, "'" + fn.params[i].name.name + "' has " + at.str()};
      } else if (sizesEqual(it->second, actual) == Decision::No) {
        auto &src = sources[n->name];
        error(DiagID::ConflictingSizes, a.range, n->name, fnName, it->second.str(), actual.str())
            .note(src.what.empty() ? "the first value" : src.what, src.range)
            .note("'" + fn.params[i].name.name + "' has " + at.str(), a.range);
        return Value::error();
      }
    }
  }

  // Defaults, then whatever is still unknown cannot be inferred.
  for (const ast::GenericParam &g : fn.generics) {
    if (g.kind == ast::GenericParam::Kind::Size && !env.sizes.count(g.name.name)) {
      if (g.defaultValue) {
        if (auto s = sizeOf(*g.defaultValue, env))
          env.sizes[g.name.name] = *s;
        continue;
      }
      error(DiagID::CannotInfer, callRange, g.name.name, fnName)
          .note("'" + g.name.name + "' is declared here", g.name.range)
          .help("give it explicitly: " + fn.name.name + "<" + g.name.name + " = ...>(...)");
      return Value::error();
    }
    if (g.kind == ast::GenericParam::Kind::Dtype && !env.dtypes.count(g.name.name)) {
      error(DiagID::CannotInfer, callRange, g.name.name, fnName)
          .note("'" + g.name.name + "' is declared here", g.name.range);
      return Value::error();
    }
    if (g.kind == ast::GenericParam::Kind::Pack && !env.packs.count(g.name.name))
      env.packs[g.name.name] = PackBinding{};
  }

  // Every argument against its parameter, now that the sizes are known.
  std::vector<Value> paramValues;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const Arg &a = *bound[i];
    auto expected = fn.params[i].type ? tensorType(*fn.params[i].type, env) : std::nullopt;
    if (!expected)
      return Value::error();
    if (!a.value.isTensor() && !adoptsType(a.value, *expected)) {
      error(DiagID::TypeMismatch, a.range, expected->str(), a.value.describe())
          .note("parameter '" + fn.params[i].name.name + "' of '" + fnName + "' is declared " +
                    toString(*fn.params[i].type),
                fn.params[i].range);
      return Value::error();
    }
    if (a.value.isTensor()) {
      const TensorType &at = a.value.tensor;
      if (!mayEqual(at, *expected)) {
        auto b = error(DiagID::TypeMismatch, a.range, expected->str(), at.str());
        b.note("parameter '" + fn.params[i].name.name + "' of '" + fnName + "' is declared " +
                   toString(*fn.params[i].type),
               fn.params[i].range);
        if (a.expr)
          noteOrigin(b, a.expr, a.value);
        if (self && calleeOrigin_.isValid())
          b.note("'" + calleeText_ + "' is " + self->name + ", declared here", calleeOrigin_);
        return Value::error();
      }
    }
    paramValues.push_back(Value::ofTensor(*expected));
    if (lowering())
      paramValues.back().op = lower_->materialize(a.value, *expected, a.range);
  }

  for (const ast::WhereConstraint &w : fn.where) {
    auto holds = decideWhere(w, env);
    if (holds && !*holds) {
      std::string values;
      for (const auto &[k, v] : env.sizes)
        if (generics.count(k) || (self && self->sizes.count(k)))
          values += (values.empty() ? "" : ", ") + k + " = " + v.str();
      error(DiagID::WhereViolated, callRange, sourceText(w.range), values)
          .note("required by '" + fnName + "' here", w.range);
      return Value::error();
    }
  }

  auto ret = resultType(fn, env);
  if (!ret)
    return Value::error();
  Value result = ret->value();
  if (env.concrete) {
    std::string label = self ? self->name + "." + fn.name.name : fn.name.name;
    Value returned;
    if (!instantiateBody(fn, env, paramValues, caller, callRange, label, &returned))
      return Value::error();
    // Inlined: the call's value is the body's result (none when the body's
    // `return` failed: that error is reported already).
    if (lowering()) {
      if (returned.isError())
        return Value::error();
      if (!ret->tuple) {
        result.op = lower_->materialize(returned, ret->types[0], callRange);
      } else {
        for (size_t i = 0; i < ret->types.size(); ++i)
          result.elements[i].op =
              i < returned.elements.size()
                  ? lower_->materialize(returned.elements[i], ret->types[i], callRange)
                  : nullptr;
      }
    }
  }
  result.origin = callRange;
  result.originWhat = "'" + fnName + "'";
  return result;
}

bool Checker::instantiateBody(const ast::FnDecl &fn, Env env, const std::vector<Value> &args,
                               Frame &caller, llvm::SMRange callRange, const std::string &label,
                               Value *returned) {
  std::string key = std::to_string(reinterpret_cast<uintptr_t>(&fn)) + "|" +
                    (env.self ? env.self->key : "") + "|";
  for (const auto &[k, v] : env.sizes)
    key += k + "=" + v.key() + ",";
  for (const auto &[k, v] : env.dtypes)
    key += k + ":" + v + ",";
  for (const auto &[k, v] : env.packs)
    key += k + "~" + v.str() + ",";
  Instance &inst = instances_[key];
  // A definition that failed, or a recursive one, has its errors reported
  // already; its calls fail silently (its result has no value to go on).
  if (failedDefinitions_.count(&fn) || recursive_.count(&fn))
    return false;
  // Lowering inlines every call afresh: each has its own operands.
  if ((inst.done && !lowering()) ||
      std::find(activeInstances_.begin(), activeInstances_.end(), &fn) !=
          activeInstances_.end()) {
    caller.flops += inst.flops;
    caller.peakBytes = std::max(caller.peakBytes, inst.peakBytes);
    return !inst.done || inst.ok;
  }
  Frame f;
  f.env = std::move(env);
  f.env.facts.clear();
  f.fn = &fn;
  f.typeLog = caller.typeLog;
  f.depth = label.empty() ? 0 : caller.depth + 1;
  // Each instance's expressions under a line naming it, indented below
  // its caller's, so the log reads as the call tree.
  if (f.typeLog && !label.empty())
    f.typeLog->push_back(std::string(2 * caller.depth, ' ') + "in '" + label + "'" +
                         withBindings(fn, f.env) + ":");
  f.scopes.emplace_back();
  for (size_t i = 0; i < fn.params.size() && i < args.size(); ++i) {
    Value v = args[i];
    v.origin = fn.params[i].range;
    v.originWhat = "parameter '" + fn.params[i].name.name + "'";
    if (v.isTensor())
      v.sources = {RuntimeSource::input(
          fn.params[i].name.name,
          (f.env.self ? f.env.self->decl->name.name + "." : std::string()) + fn.name.name,
          fn.params[i].name.range)};
    f.scopes.back()[fn.params[i].name.name] = Local{v, fn.params[i].name.range, false};
  }
  f.returnType = resultType(fn, f.env);
  // The entry's own body needs no "in ..." note: the entry note says it.
  bool nested = !label.empty();
  if (nested)
    context_.context.push_back(
        {"in '" + label + "'" + withBindings(fn, f.env) + ", called here", callRange});
  activeInstances_.push_back(&fn);
  unsigned before = inner_.errorCount();
  checkBlock(fn.body, f);
  activeInstances_.pop_back();
  if (nested)
    context_.context.pop_back();
  inst.done = true;
  inst.flops = f.flops;
  inst.peakBytes = f.peakBytes;
  inst.ok = inner_.errorCount() == before;
  if (returned)
    *returned = f.returned;
  caller.flops += inst.flops;
  caller.peakBytes = std::max(caller.peakBytes, inst.peakBytes);
  return inst.ok;
}

} // namespace lpu::check
