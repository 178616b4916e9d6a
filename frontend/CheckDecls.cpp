// Declarations: the checker's driver, definition-time checks of every fn
// (with symbolic sizes), model instances and their params, type
// annotations, and the recursion check over the call graph.
#include "frontend/ASTPrinter.h"
#include "frontend/CheckerImpl.h"
#include "frontend/LowerImpl.h"

#include <llvm/Support/Path.h>

#include <algorithm>
#include <map>

namespace lpu {

CheckResult checkProgram(const ast::Module &module, DiagnosticEngine &diags,
                         const CheckOptions &options) {
  check::Checker checker(diags, options);
  return checker.run(module);
}

namespace check {

namespace {
bool endsInReturn(const ast::Block &block);

/// Whether a statement returns on every path through it: a `return`, or an
/// `if` with an `else` whose branches all do. A loop does not (its range
/// may be empty), nor an `if` without `else` (its condition may be false).
bool endsInReturn(const ast::Stmt &s) {
  if (llvm::isa<ast::ReturnStmt>(s))
    return true;
  if (auto *cond = llvm::dyn_cast<ast::IfStmt>(&s))
    return cond->otherwise && endsInReturn(cond->then) && endsInReturn(*cond->otherwise);
  return false;
}

bool endsInReturn(const ast::Block &block) {
  return std::any_of(block.stmts.begin(), block.stmts.end(),
                     [](const ast::StmtPtr &s) { return s && endsInReturn(*s); });
}

bool containsReturn(const ast::Block &block) {
  for (const ast::StmtPtr &s : block.stmts) {
    if (!s)
      continue;
    if (llvm::isa<ast::ReturnStmt>(*s))
      return true;
    if (auto *cond = llvm::dyn_cast<ast::IfStmt>(s.get()))
      if (containsReturn(cond->then) || (cond->otherwise && containsReturn(*cond->otherwise)))
        return true;
    if (auto *loop = llvm::dyn_cast<ast::ForStmt>(s.get()))
      if (containsReturn(loop->body))
        return true;
  }
  return false;
}

/// The closing brace of a block, where a path through it ends.
llvm::SMRange closingBrace(const ast::Block &block) {
  if (!block.range.End.isValid())
    return block.range;
  llvm::SMLoc last = llvm::SMLoc::getFromPointer(block.range.End.getPointer() - 1);
  return *last.getPointer() == '}' ? llvm::SMRange(last, block.range.End) : block.range;
}

/// For a body that does not end in a return: where a path leaves it, as
/// labels. When its last statement is an `if` that returns on some path,
/// the branch that does not (or the condition of an `if` without `else`);
/// otherwise the closing brace.
void labelFallThrough(DiagnosticBuilder &b, const ast::Block &block, bool branch = false) {
  const ast::Stmt *last = nullptr;
  for (const ast::StmtPtr &s : block.stmts)
    if (s)
      last = s.get();
  auto *cond = llvm::dyn_cast_or_null<ast::IfStmt>(last);
  if (!cond || !(containsReturn(cond->then) ||
                 (cond->otherwise && containsReturn(*cond->otherwise)))) {
    b.label(closingBrace(block), branch ? "this branch ends here without 'return'"
                                        : "the body ends here without 'return'");
    return;
  }
  if (!endsInReturn(cond->then))
    labelFallThrough(b, cond->then, true);
  else if (!cond->otherwise)
    b.label(cond->cond ? cond->cond->range : cond->range,
            "returns only when this holds: the 'if' has no 'else'");
  if (cond->otherwise && !endsInReturn(*cond->otherwise))
    labelFallThrough(b, *cond->otherwise, true);
}
} // namespace

void ContextConsumer::handle(const Diagnostic &diag) {
  if (diag.severity == Severity::Error &&
      !seen_.insert({static_cast<int>(diag.id), diag.primary.Start.getPointer()}).second)
    return;
  // One inexact division is one root cause, wherever it shows up again.
  if (diag.id == DiagID::InexactDivision && !seenMessages_.insert(diag.message).second)
    return;
  Diagnostic d = diag;
  for (auto it = context.rbegin(); it != context.rend(); ++it)
    d.notes.push_back(*it);
  ++forwarded;
  out_.emit(std::move(d));
}

Checker::Checker(DiagnosticEngine &diags, const CheckOptions &options)
    : diags_(diags), inner_(diags.sources()), context_(diags), options_(options) {
  inner_.setConsumer(&context_);
  if (options.lowerInto)
    lower_ = std::make_unique<Lowering>(*options.lowerInto, inner_);
}

Checker::~Checker() = default;

CheckResult Checker::run(const ast::Module &main) {
  CheckResult result;
  ModuleInfo *m = loadMain(main);
  // A module that does not parse is not checked: its AST may have holes.
  if (diags_.errorCount() > context_.forwarded)
    return result;
  for (auto &mod : modules_)
    checkDefinitions(*mod);
  detectRecursion();
  detectSelfContainment();
  checkEntries(*m, result);
  return result;
}

std::string Checker::here(llvm::SMLoc loc) const {
  if (!loc.isValid())
    return "?";
  const llvm::SourceMgr &sm = diags_.sources();
  unsigned id = sm.FindBufferContainingLoc(loc);
  std::string file = llvm::sys::path::filename(sm.getMemoryBuffer(id)->getBufferIdentifier()).str();
  return file + ":" + formatLineColumn(sm, loc);
}

std::string Checker::didYouMean(const std::string &name, const std::vector<std::string> &cands) {
  // Close enough to be a typo: two edits for short names, a third of the
  // length for long ones; never for one- or two-letter names.
  if (name.size() <= 2)
    return "";
  std::string best;
  unsigned bestDist = std::max<size_t>(2, name.size() / 3) + 1;
  for (const std::string &c : cands) {
    if (c == name)
      continue;
    unsigned d = llvm::StringRef(name).edit_distance(c, true, bestDist);
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  return best;
}

const ast::Decl *Checker::findMember(const ast::ModelDecl &model, llvm::StringRef name) const {
  for (const ast::DeclPtr &m : model.members)
    if (m && m->name.name == name)
      return m.get();
  return nullptr;
}

std::optional<ResultType> Checker::resultType(const ast::FnDecl &fn, const Env &env) {
  ResultType r;
  if (!fn.tupleResult) {
    if (!fn.returnType)
      return std::nullopt;
    auto t = tensorType(*fn.returnType, env);
    if (!t)
      return std::nullopt;
    r.types.push_back(std::move(*t));
    r.names.emplace_back();
    return r;
  }
  r.tuple = true;
  bool ok = true;
  for (const ast::FnDecl::ResultField &field : fn.results) {
    auto t = field.type ? tensorType(*field.type, env) : std::nullopt;
    ok &= t.has_value();
    if (t)
      r.types.push_back(std::move(*t));
    r.names.push_back(field.name.name);
  }
  if (!ok)
    return std::nullopt;
  return r;
}

std::optional<TensorType> Checker::tensorType(const ast::TypeExpr &type, const Env &env) {
  auto *nt = llvm::dyn_cast<ast::NamedType>(&type);
  if (!nt || nt->path.size() != 1 || nt->hasGenericArgs) {
    error(DiagID::WrongKindOfName, type.range, toString(type), "not a tensor type",
          "the tensor type needed here");
    return std::nullopt;
  }
  const ast::Ident &name = nt->path[0];
  auto dtype = dtypeOf(name.name, env);
  if (!dtype) {
    if (env.module && env.module->globals.count(name.name))
      error(DiagID::WrongKindOfName, name.range, name.name, "a model", "a tensor type");
    else {
      std::vector<std::string> cands = {"bool", "i8", "i16", "i32", "f16", "bf16", "f32"};
      for (const auto &[k, v] : env.dtypes)
        cands.push_back(k);
      auto b = error(DiagID::UnknownType, name.range, name.name);
      std::string s = didYouMean(name.name, cands);
      if (!s.empty())
        b.help("did you mean '" + s + "'?");
    }
    return std::nullopt;
  }
  TensorType t;
  t.dtype = *dtype;
  for (const ast::Dim &d : nt->dims) {
    if (d.isPack()) {
      auto it = env.packs.find(d.pack.name);
      if (it == env.packs.end()) {
        error(DiagID::UnknownSizeName, d.pack.range, ".." + d.pack.name);
        return std::nullopt;
      }
      t.pack = it->second.pack;
      t.dims.insert(t.dims.end(), it->second.dims.begin(), it->second.dims.end());
      continue;
    }
    if (!d.size)
      return std::nullopt;
    auto s = sizeOf(*d.size, env);
    if (!s)
      return std::nullopt;
    // A constant dimension is known at the definition already.
    if (auto c = s->constantValue();
        c && *c < 1 && !(*c == 0 && llvm::isa<ast::SizeInt>(d.size.get()))) {
        error(DiagID::NonPositiveSize, d.range,
              std::string(d.range.Start.getPointer(), d.range.End.getPointer()), *c);
        return std::nullopt;
      }
    t.dims.push_back(*s);
  }
  return t;
}

ModelInstPtr Checker::symbolicModel(const ast::ModelDecl &model, ModuleInfo &m) {
  auto inst = std::make_shared<ModelInst>();
  inst->decl = &model;
  inst->module = &m;
  for (const ast::GenericParam &g : model.generics) {
    if (g.kind == ast::GenericParam::Kind::Dtype)
      inst->dtypes[g.name.name] = g.name.name;
    else
      inst->sizes[g.name.name] = Size::name(g.name.name);
  }
  inst->name = model.name.name;
  inst->key = "sym:" + std::to_string(reinterpret_cast<uintptr_t>(&model));
  return inst;
}

ModelInstPtr Checker::instantiateModel(const ast::ModelDecl &model, ModuleInfo *m,
                                       const std::vector<ast::GenericArg> &args,
                                       const Env &outer, llvm::SMRange at) {
  Env env;
  env.module = m;
  env.concrete = outer.concrete;
  auto bindings = matchGenericArgs(args, model.generics, model.name.name, &model.name);
  if (!bindings)
    return nullptr;
  for (const auto &[aPtr, target] : *bindings) {
    const ast::GenericArg &a = *aPtr;
    if (a.kind == ast::GenericArg::Kind::Bucket) {
      error(DiagID::BadEntryTarget, a.range, model.name.name, "bucket sets belong in an entry");
      return nullptr;
    }
    if (target->kind == ast::GenericParam::Kind::Dtype) {
      auto *n = llvm::dyn_cast_or_null<ast::SizeName>(a.size.get());
      auto d = n ? dtypeOf(n->name, outer) : std::nullopt;
      if (!d) {
        error(DiagID::WrongKindOfName, a.range, "this argument", "not a dtype",
              "a dtype for '" + target->name.name + "'");
        return nullptr;
      }
      env.dtypes[target->name.name] = *d;
    } else if (a.size) {
      auto s = sizeOf(*a.size, outer);
      if (!s)
        return nullptr;
      env.sizes[target->name.name] = *s;
    }
  }
  for (const ast::GenericParam &g : model.generics) {
    if (g.kind == ast::GenericParam::Kind::Dtype) {
      if (!env.dtypes.count(g.name.name)) {
        error(DiagID::MissingSizeArgument, at, model.name.name, g.name.name)
            .note("'" + g.name.name + "' is declared here", g.name.range);
        return nullptr;
      }
      continue;
    }
    if (env.sizes.count(g.name.name))
      continue;
    if (!g.defaultValue) {
      error(DiagID::MissingSizeArgument, at, model.name.name, g.name.name)
          .note("'" + g.name.name + "' is declared here without a default", g.name.range);
      return nullptr;
    }
    // Defaults may refer to earlier sizes: `F = 4 * D`.
    auto s = sizeOf(*g.defaultValue, env);
    if (!s)
      return nullptr;
    env.sizes[g.name.name] = *s;
  }
  auto inst = std::make_shared<ModelInst>();
  inst->decl = &model;
  inst->module = m;
  inst->sizes = env.sizes;
  inst->dtypes = env.dtypes;
  std::string args2;
  for (const ast::GenericParam &g : model.generics) {
    std::string v = g.kind == ast::GenericParam::Kind::Dtype ? env.dtypes[g.name.name]
                                                            : env.sizes[g.name.name].str();
    args2 += (args2.empty() ? "" : ", ") + v;
  }
  inst->name = model.name.name + (args2.empty() ? "" : "<" + args2 + ">");
  inst->key = std::to_string(reinterpret_cast<uintptr_t>(&model)) + "<";
  for (const auto &[k, v] : inst->sizes)
    inst->key += k + "=" + v.key() + ",";
  for (const auto &[k, v] : inst->dtypes)
    inst->key += k + ":" + v + ",";
  auto [it, fresh] = modelCache_.emplace(inst->key, inst);
  return it->second;
}

Value Checker::resolveParamType(const ast::TypeExpr &type, const Env &env,
                                const std::string &what) {
  if (auto *arr = llvm::dyn_cast<ast::ArrayType>(&type)) {
    auto count = arr->count ? sizeOf(*arr->count, env) : std::nullopt;
    if (!count || !arr->element)
      return Value::error();
    Value elem = resolveParamType(*arr->element, env, what);
    if (elem.kind != Value::Kind::Model) {
      if (!elem.isError())
        error(DiagID::WrongKindOfName, arr->element->range, toString(*arr->element),
              elem.describe(), "a model (arrays hold sub-models)");
      return Value::error();
    }
    Value v;
    v.kind = Value::Kind::ModelArray;
    v.size = *count;
    v.model = elem.model;
    return v;
  }
  auto *nt = llvm::dyn_cast<ast::NamedType>(&type);
  if (!nt || nt->path.empty())
    return Value::error();
  // A model: `Block<D>` or `nn.Linear<D, H>`.
  ModuleInfo *m = env.module;
  size_t i = 0;
  if (nt->path.size() == 2) {
    auto it = m ? m->imports.find(nt->path[0].name) : decltype(m->imports.end()){};
    if (!m || it == m->imports.end()) {
      auto g = m ? m->globals.find(nt->path[0].name) : decltype(m->globals.end()){};
      if (m && g != m->globals.end() && llvm::isa<ast::ImportDecl>(g->second))
        return Value::error(); // the import failed and is reported
      error(DiagID::UnknownName, nt->path[0].range, nt->path[0].name);
      return Value::error();
    }
    m = it->second;
    i = 1;
  } else if (nt->path.size() > 2) {
    error(DiagID::UnknownType, type.range, toString(type));
    return Value::error();
  }
  const ast::Ident &name = nt->path[i];
  if (i == 0 && dtypeOf(name.name, env)) {
    auto t = tensorType(type, env);
    return t ? Value::ofTensor(*t) : Value::error();
  }
  auto it = m->globals.find(name.name);
  auto *model = it == m->globals.end() ? nullptr : llvm::dyn_cast<ast::ModelDecl>(it->second);
  if (!model) {
    if (it != m->globals.end()) {
      error(DiagID::WrongKindOfName, name.range, name.name, "not a model", "a type");
      return Value::error();
    }
    std::vector<std::string> cands;
    for (const auto &[k, d] : m->globals)
      if (llvm::isa<ast::ModelDecl>(d))
        cands.push_back(k);
    auto b = error(DiagID::UnknownType, name.range, name.name);
    std::string s = didYouMean(name.name, cands);
    if (!s.empty())
      b.help("did you mean '" + s + "'?");
    return Value::error();
  }
  auto inst = instantiateModel(*model, m, nt->genericArgs, env, type.range);
  if (!inst)
    return Value::error();
  Value v;
  v.kind = Value::Kind::Model;
  v.model = inst;
  return v;
}

Value Checker::paramValue(const ModelInst &inst, const ast::ParamDecl &param) {
  Env env;
  env.module = inst.module;
  env.sizes = inst.sizes;
  env.dtypes = inst.dtypes;
  if (!param.type)
    return Value::error();
  Value v = resolveParamType(*param.type, env, "parameter");
  v.origin = param.range;
  v.originWhat = "parameter '" + param.name.name + "'";
  return v;
}

void Checker::checkDefinitions(ModuleInfo &m) {
  for (const ast::DeclPtr &d : m.ast->items) {
    if (auto *fn = llvm::dyn_cast_or_null<ast::FnDecl>(d.get()))
      checkFnDefinition(m, *fn, nullptr);
    auto *model = llvm::dyn_cast_or_null<ast::ModelDecl>(d.get());
    if (!model)
      continue;
    ModelInstPtr self = symbolicModel(*model, m);
    for (const ast::DeclPtr &mem : model->members)
      if (auto *p = llvm::dyn_cast_or_null<ast::ParamDecl>(mem.get())) {
        Value v = paramValue(*self, *p);
        if (p->isState && !v.isError() && !v.isTensor())
          error(DiagID::StateNotTensor, p->type ? p->type->range : p->range, p->name.name,
                v.describe());
        else if (v.kind == Value::Kind::Model || v.kind == Value::Kind::ModelArray)
          containment_[model].push_back({v.model->decl, p->range});
      }
    for (const ast::DeclPtr &mem : model->members)
      if (auto *fn = llvm::dyn_cast_or_null<ast::FnDecl>(mem.get()))
        checkFnDefinition(m, *fn, self);
  }
}

void Checker::checkFnDefinition(ModuleInfo &m, const ast::FnDecl &fn, ModelInstPtr self) {
  unsigned before = inner_.errorCount();
  Frame f;
  f.env.module = &m;
  f.env.self = self;
  f.fn = &fn;
  std::map<std::string, llvm::SMRange> declared;
  if (self) {
    f.env.sizes = self->sizes;
    f.env.dtypes = self->dtypes;
    for (const ast::GenericParam &g : self->decl->generics)
      declared[g.name.name] = g.name.range;
  }
  for (const ast::GenericParam &g : fn.generics) {
    auto [it, fresh] = declared.emplace(g.name.name, g.name.range);
    if (!fresh) {
      error(DiagID::DuplicateDefinition, g.name.range, g.name.name)
          .note("first defined here", it->second);
      continue;
    }
    if (g.kind == ast::GenericParam::Kind::Dtype)
      f.env.dtypes[g.name.name] = g.name.name;
    else if (g.kind == ast::GenericParam::Kind::Pack)
      f.env.packs[g.name.name] = PackBinding{g.name.name, {}};
    else
      f.env.sizes[g.name.name] = Size::name(g.name.name);
  }
  for (const ast::GenericParam &g : fn.generics)
    if (g.defaultValue)
      sizeOf(*g.defaultValue, f.env);
  for (const ast::WhereConstraint &w : fn.where) {
    auto l = w.lhs ? sizeOf(*w.lhs, f.env) : std::nullopt;
    auto r = w.rhs ? sizeOf(*w.rhs, f.env) : std::nullopt;
    if (!l || !r || w.op != ast::CompareOp::Eq)
      continue;
    f.env.facts.push_back(*l - *r);
    // `where N == M` (a generic of this fn equal to a size without it):
    // inside the body N *is* M, so the normal forms see it.
    std::vector<std::string> rhsNames;
    r->collectNames(rhsNames);
    auto name = l->asName();
    bool ownGeneric = name && std::any_of(fn.generics.begin(), fn.generics.end(),
                                          [&](const ast::GenericParam &g) {
                                            return g.name.name == *name &&
                                                   g.kind == ast::GenericParam::Kind::Size;
                                          });
    if (ownGeneric && std::find(rhsNames.begin(), rhsNames.end(), *name) == rhsNames.end())
      f.env.sizes[*name] = *r;
  }
  f.scopes.emplace_back();
  std::string fnLabel = (self ? self->decl->name.name + "." : std::string()) + fn.name.name;
  for (const ast::FnParam &p : fn.params) {
    auto [it, fresh] = declared.emplace(p.name.name, p.name.range);
    if (!fresh) {
      error(DiagID::DuplicateDefinition, p.name.range, p.name.name)
          .note("first defined here", it->second);
      continue;
    }
    auto t = p.type ? tensorType(*p.type, f.env) : std::nullopt;
    Value v = t ? Value::ofTensor(*t) : Value::error();
    v.origin = p.range;
    v.originWhat = "parameter '" + p.name.name + "'";
    if (v.isTensor())
      v.sources = {RuntimeSource::input(p.name.name, fnLabel, p.name.range)};
    f.scopes.back()[p.name.name] = Local{v, p.name.range, false};
  }
  // Result fields share one namespace (the outputs of an entry).
  std::map<std::string, llvm::SMRange> resultNames;
  for (const ast::FnDecl::ResultField &field : fn.results) {
    if (field.name.name.empty())
      continue;
    auto [it, fresh] = resultNames.emplace(field.name.name, field.name.range);
    if (!fresh)
      error(DiagID::DuplicateDefinition, field.name.range, field.name.name)
          .note("first defined here", it->second);
  }
  f.returnType = resultType(fn, f.env);
  definingFn_ = &fn;
  checkBlock(fn.body, f);
  definingFn_ = nullptr;
  if (!endsInReturn(fn.body)) {
    auto b = error(DiagID::MissingReturn, fn.name.range, fn.name.name);
    labelFallThrough(b, fn.body);
  }
  if (inner_.errorCount() > before)
    failedDefinitions_.insert(&fn);
}

std::pair<unsigned, const char *> Checker::sourceOrder(llvm::SMLoc at) const {
  return {diags_.sources().FindBufferContainingLoc(at), at.getPointer()};
}

void Checker::detectSelfContainment() {
  // A model that holds itself, directly or through others, would have
  // infinitely many parameters: the same rule as recursion.
  std::map<const ast::ModelDecl *, int> state;
  std::vector<std::pair<const ast::ModelDecl *, llvm::SMRange>> stack;
  std::function<void(const ast::ModelDecl *)> visit = [&](const ast::ModelDecl *m) {
    state[m] = 1;
    for (const auto &[held, site] : containment_[m]) {
      if (state[held] == 1) {
        auto start = std::find_if(stack.begin(), stack.end(),
                                  [&](const auto &e) { return e.first == held; });
        std::string chain;
        for (auto it = start; it != stack.end(); ++it) {
          chain += it->first->name.name + " -> ";
          selfContaining_.insert(it->first);
        }
        auto b = error(DiagID::Recursion, site, chain + held->name.name);
        for (auto it = start + 1; it != stack.end(); ++it)
          b.note("'" + (it - 1)->first->name.name + "' holds '" + it->first->name.name + "' here",
                 it->second);
        continue;
      }
      if (state[held] == 0) {
        stack.push_back({held, site});
        visit(held);
        stack.pop_back();
      }
    }
    state[m] = 2;
  };
  // From the first model in source order, so that a cycle is reported
  // from the same place on every run (the map is ordered by address).
  std::vector<const ast::ModelDecl *> models;
  for (const auto &[m, edges] : containment_)
    models.push_back(m);
  std::sort(models.begin(), models.end(), [&](const auto *a, const auto *b) {
    return sourceOrder(a->name.range.Start) < sourceOrder(b->name.range.Start);
  });
  for (const ast::ModelDecl *m : models)
    if (state[m] == 0) {
      stack.push_back({m, llvm::SMRange()});
      visit(m);
      stack.pop_back();
    }
}

void Checker::detectRecursion() {
  // Depth-first search for back edges; each cycle is reported once, at the
  // call that closes it, with every call of the chain as a note.
  std::map<const ast::FnDecl *, int> state; // 0 new, 1 on stack, 2 done
  std::vector<std::pair<const ast::FnDecl *, llvm::SMRange>> stack;
  std::function<void(const ast::FnDecl *)> visit = [&](const ast::FnDecl *fn) {
    state[fn] = 1;
    for (const auto &[callee, site] : callGraph_[fn]) {
      if (state[callee] == 1) {
        auto start = std::find_if(stack.begin(), stack.end(),
                                  [&](const auto &e) { return e.first == callee; });
        std::string chain;
        std::vector<std::pair<const ast::FnDecl *, llvm::SMRange>> cycle(start, stack.end());
        for (const auto &[f, s] : cycle) {
          chain += f->name.name + " -> ";
          recursive_.insert(f);
        }
        chain += callee->name.name;
        auto b = error(DiagID::Recursion, site, chain);
        for (size_t i = 1; i < cycle.size(); ++i)
          b.note("'" + cycle[i - 1].first->name.name + "' calls '" + cycle[i].first->name.name +
                     "' here",
                 cycle[i].second);
        continue;
      }
      if (state[callee] == 0) {
        stack.push_back({callee, site});
        visit(callee);
        stack.pop_back();
      }
    }
    state[fn] = 2;
  };
  std::vector<const ast::FnDecl *> fns;
  for (const auto &[fn, edges] : callGraph_)
    fns.push_back(fn);
  std::sort(fns.begin(), fns.end(), [&](const auto *a, const auto *b) {
    return sourceOrder(a->name.range.Start) < sourceOrder(b->name.range.Start);
  });
  for (const ast::FnDecl *fn : fns)
    if (state[fn] == 0) {
      stack.push_back({fn, llvm::SMRange()});
      visit(fn);
      stack.pop_back();
    }
}

} // namespace check
} // namespace lpu
