// Entry points: every bucket combination instantiated with numbers and
// checked; parameter counts and bytes, FLOPs, a first activation estimate,
// and the SRAM check against the requested chips.
#include "frontend/ASTPrinter.h"
#include "frontend/CheckerImpl.h"
#include "frontend/LowerImpl.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/JSON.h>

#include <algorithm>
#include <map>
#include <set>

namespace lpu::check {

namespace {

std::string mib(uint64_t bytes) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

/// One bucketed size of an entry: its name, its values and where it is bound.
struct BucketVar {
  std::string name;
  std::vector<int64_t> values;
};
} // namespace

void Checker::countParams(const ModelInst &inst, const std::string &prefix, BucketReport &out,
                          std::map<const ast::ParamDecl *, uint64_t> &bytesByDecl,
                          const ast::ParamDecl *top) {
  for (const ast::DeclPtr &mem : inst.decl->members) {
    auto *p = llvm::dyn_cast_or_null<ast::ParamDecl>(mem.get());
    if (!p)
      continue;
    // Bytes are charged to the entry model's own declaration, the one the
    // user can change.
    const ast::ParamDecl *owner = top ? top : p;
    Value v = paramValue(inst, *p);
    if (v.isTensor()) {
      auto n = v.tensor.elements().constantValue();
      if (!n)
        continue;
      uint64_t bytes = static_cast<uint64_t>(*n) * dtypeBytes(v.tensor.dtype);
      if (p->isState) {
        out.stateBytes += bytes;
      } else {
        out.params += static_cast<uint64_t>(*n);
        out.paramBytes += bytes;
      }
      bytesByDecl[owner] += bytes;
    } else if (v.kind == Value::Kind::Model) {
      countParams(*v.model, prefix + p->name.name + ".", out, bytesByDecl, owner);
    } else if (v.kind == Value::Kind::ModelArray) {
      auto n = v.size.constantValue();
      if (!n || *n <= 0)
        continue;
      BucketReport one;
      std::map<const ast::ParamDecl *, uint64_t> oneBytes;
      countParams(*v.model, prefix + p->name.name + ".0.", one, oneBytes, owner);
      out.params += one.params * static_cast<uint64_t>(*n);
      out.paramBytes += one.paramBytes * static_cast<uint64_t>(*n);
      out.stateBytes += one.stateBytes * static_cast<uint64_t>(*n);
      for (const auto &[d, b] : oneBytes)
        bytesByDecl[d] += b * static_cast<uint64_t>(*n);
    }
  }
}

void Checker::listParams(const ModelInst &inst, const std::string &prefix,
                         std::vector<std::string> &out) {
  for (const ast::DeclPtr &mem : inst.decl->members) {
    auto *p = llvm::dyn_cast_or_null<ast::ParamDecl>(mem.get());
    if (!p)
      continue;
    Value v = paramValue(inst, *p);
    std::string path = prefix + p->name.name;
    if (p->isState)
      continue; // not a weight
    if (v.isTensor())
      out.push_back(path + ": " + v.tensor.str());
    else if (v.kind == Value::Kind::Model)
      listParams(*v.model, path + ".", out);
    else if (v.kind == Value::Kind::ModelArray)
      if (auto n = v.size.constantValue())
        for (int64_t i = 0; i < *n; ++i)
          listParams(*v.model, path + "." + std::to_string(i) + ".", out);
  }
}

void Checker::checkEntries(ModuleInfo &m, CheckResult &result) {
  for (const ast::DeclPtr &d : m.ast->items)
    if (auto *entry = llvm::dyn_cast_or_null<ast::EntryDecl>(d.get()))
      checkEntry(m, *entry, result);
}

void Checker::checkEntry(ModuleInfo &m, const ast::EntryDecl &entry, CheckResult &result) {
  const std::string &entryName = entry.name.name;
  // Resolve MODULE? MODEL? FN.
  ModuleInfo *mod = &m;
  size_t i = 0;
  const auto &segs = entry.target;
  if (segs.size() > 1)
    if (auto it = mod->imports.find(segs[0].name.name); it != mod->imports.end()) {
      mod = it->second;
      i = 1;
    }
  if (i >= segs.size())
    return;
  const ast::ModelDecl *model = nullptr;
  const ast::PathSegment *modelSeg = nullptr;
  const ast::FnDecl *fn = nullptr;
  const ast::PathSegment *fnSeg = nullptr;
  auto git = mod->globals.find(segs[i].name.name);
  if (git == mod->globals.end()) {
    std::vector<std::string> cands;
    for (const auto &[k, v] : mod->globals)
      cands.push_back(k);
    auto b = error(DiagID::UnknownName, segs[i].name.range, segs[i].name.name);
    std::string s = didYouMean(segs[i].name.name, cands);
    if (!s.empty())
      b.help("did you mean '" + s + "'?");
    return;
  }
  if ((model = llvm::dyn_cast<ast::ModelDecl>(git->second))) {
    modelSeg = &segs[i];
    if (i + 2 != segs.size()) {
      error(DiagID::BadEntryTarget, segs[i].range, entryName,
            "name the fn to compile, e.g. " + segs[i].name.name + ".forward");
      return;
    }
    fnSeg = &segs[i + 1];
    fn = llvm::dyn_cast_or_null<ast::FnDecl>(findMember(*model, fnSeg->name.name));
    if (!fn) {
      error(DiagID::UnknownMember, fnSeg->name.range, "model '" + model->name.name + "'",
            fnSeg->name.name)
          .note("'" + model->name.name + "' is declared here", model->name.range);
      return;
    }
  } else if ((fn = llvm::dyn_cast<ast::FnDecl>(git->second))) {
    fnSeg = &segs[i];
    if (i + 1 != segs.size()) {
      error(DiagID::BadEntryTarget, segs[i + 1].range, entryName, "a fn has no members");
      return;
    }
  } else {
    error(DiagID::BadEntryTarget, segs[i].name.range, entryName,
          "'" + segs[i].name.name + "' is neither a model nor a fn");
    return;
  }
  // A model that holds a self-containing one, at any depth, has no finite
  // parameter list either; that error is reported at the cycle.
  std::set<const ast::ModelDecl *> seen;
  std::function<bool(const ast::ModelDecl *)> infinite = [&](const ast::ModelDecl *md) {
    if (selfContaining_.count(md))
      return true;
    if (!seen.insert(md).second)
      return false;
    for (const auto &[held, site] : containment_[md])
      if (infinite(held))
        return true;
    return false;
  };
  if (failedDefinitions_.count(fn) || recursive_.count(fn) || (model && infinite(model)))
    return; // its errors are reported already

  // The bucketed sizes, in the order written.
  std::vector<BucketVar> vars;
  Env constEnv;
  constEnv.module = mod;
  constEnv.concrete = true;
  for (const ast::PathSegment *seg : {modelSeg, fnSeg}) {
    if (!seg)
      continue;
    for (const ast::GenericArg &a : seg->genericArgs) {
      if (a.kind != ast::GenericArg::Kind::Bucket)
        continue;
      BucketVar v{a.name.name, {}};
      for (const ast::SizeExprPtr &s : a.bucket) {
        auto size = s ? sizeOf(*s, constEnv) : std::nullopt;
        auto c = size ? size->constantValue() : std::nullopt;
        if (!c) {
          if (size)
            error(DiagID::NotASize, s->range, sourceText(s->range));
          return;
        }
        if (*c < 1) {
          error(DiagID::NonPositiveSize, s->range, a.name.name, *c);
          return;
        }
        if (llvm::is_contained(v.values, *c)) {
          error(DiagID::DuplicateBucket, s->range, a.name.name, *c);
          return;
        }
        v.values.push_back(*c);
      }
      vars.push_back(std::move(v));
    }
  }

  EntryReport report;
  report.name = entryName;
  size_t combos = 1;
  for (const BucketVar &v : vars)
    combos *= std::max<size_t>(1, v.values.size());
  for (size_t combo = 0; combo < combos; ++combo) {
    BucketReport bucket;
    std::map<std::string, Size> chosen;
    size_t rest = combo;
    for (size_t k = vars.size(); k-- > 0;) {
      size_t n = vars[k].values.size();
      int64_t value = vars[k].values[rest % n];
      rest /= n;
      chosen[vars[k].name] = Size::constant(value);
    }
    for (const BucketVar &v : vars)
      bucket.sizes.push_back({v.name, *chosen[v.name].constantValue()});
    std::string withSizes;
    for (const auto &[n, v] : bucket.sizes)
      withSizes += (withSizes.empty() ? " with " : ", ") + n + " = " + std::to_string(v);
    context_.context.push_back({"while checking entry '" + entryName + "'" + withSizes,
                                entry.name.range});
    unsigned before = inner_.errorCount();
    auto done = [&]() { context_.context.pop_back(); };

    // Binds the generic arguments of one segment, buckets by their chosen value.
    auto bindArgs = [&](const ast::PathSegment &seg, const std::vector<ast::GenericParam> &params,
                        Env &into, const std::string &owner) -> bool {
      auto bindings = matchGenericArgs(seg.genericArgs, params, owner);
      if (!bindings)
        return false;
      for (const auto &[aPtr, target] : *bindings) {
        const ast::GenericArg &a = *aPtr;
        if (target->kind == ast::GenericParam::Kind::Dtype) {
          auto *n = llvm::dyn_cast_or_null<ast::SizeName>(a.size.get());
          if (!n || !isDtypeName(n->name)) {
            error(DiagID::WrongKindOfName, a.range, sourceText(a.range), "not a dtype",
                  "a dtype for '" + target->name.name + "'");
            return false;
          }
          into.dtypes[target->name.name] = n->name;
        } else if (target->kind == ast::GenericParam::Kind::Pack) {
          error(DiagID::BadEntryTarget, a.range, entryName,
                "a batch pack cannot be bound by an entry; write the dimensions out");
          return false;
        } else if (a.kind == ast::GenericArg::Kind::Bucket) {
          into.sizes[target->name.name] = chosen[a.name.name];
        } else if (a.size) {
          auto s = sizeOf(*a.size, into);
          if (!s)
            return false;
          into.sizes[target->name.name] = *s;
        }
      }
      return true;
    };

    Env fenv;
    fenv.concrete = true;
    ModelInstPtr self;
    std::string target;
    if (model) {
      Env menv;
      menv.module = mod;
      menv.concrete = true;
      if (!bindArgs(*modelSeg, model->generics, menv, model->name.name)) {
        done();
        return;
      }
      // Defaults may refer to earlier sizes.
      for (const ast::GenericParam &g : model->generics) {
        if (g.kind != ast::GenericParam::Kind::Size || menv.sizes.count(g.name.name))
          continue;
        if (!g.defaultValue) {
          error(DiagID::EntrySizeUnbound, modelSeg->range, entryName, g.name.name)
              .note("'" + g.name.name + "' is declared here without a default", g.name.range)
              .help("give it a value or a bucket set: " + model->name.name + "<" + g.name.name +
                    " = ...>");
          done();
          return;
        }
        auto s = sizeOf(*g.defaultValue, menv);
        if (!s) {
          done();
          return;
        }
        menv.sizes[g.name.name] = *s;
      }
      auto inst = std::make_shared<ModelInst>();
      inst->decl = model;
      inst->module = mod;
      inst->sizes = menv.sizes;
      inst->dtypes = menv.dtypes;
      // The model as the entry names it: bucketed sizes show their set.
      std::string args;
      for (const ast::GenericParam &g : model->generics) {
        std::string value = g.kind == ast::GenericParam::Kind::Dtype
                                ? " = " + menv.dtypes[g.name.name]
                                : " = " + menv.sizes[g.name.name].str();
        for (const ast::GenericArg &a : modelSeg->genericArgs)
          if (a.kind == ast::GenericArg::Kind::Bucket && a.name.name == g.name.name)
            value = " in {" + sourceText(a.range).substr(sourceText(a.range).find('{') + 1);
        args += (args.empty() ? "" : ", ") + g.name.name + value;
      }
      inst->name = model->name.name + (args.empty() ? "" : "<" + args + ">");
      inst->key = std::to_string(reinterpret_cast<uintptr_t>(model)) + "<";
      for (const auto &[k, v] : inst->sizes)
        inst->key += k + "=" + v.key() + ",";
      self = inst;
      fenv.sizes = menv.sizes;
      fenv.dtypes = menv.dtypes;
      target = inst->name + ".";
    }
    fenv.module = mod;
    fenv.self = self;
    if (!bindArgs(*fnSeg, fn->generics, fenv, fn->name.name)) {
      done();
      return;
    }
    for (const ast::GenericParam &g : fn->generics) {
      bool bound = g.kind == ast::GenericParam::Kind::Dtype ? fenv.dtypes.count(g.name.name) > 0
                                                            : fenv.sizes.count(g.name.name) > 0;
      if (!bound && g.kind == ast::GenericParam::Kind::Size && g.defaultValue)
        if (auto s = sizeOf(*g.defaultValue, fenv)) {
          fenv.sizes[g.name.name] = *s;
          bound = true;
        }
      if (!bound) {
        error(DiagID::EntrySizeUnbound, fnSeg->range, entryName,
              (g.kind == ast::GenericParam::Kind::Pack ? ".." : "") + g.name.name)
            .note("'" + g.name.name + "' is declared here", g.name.range)
            .help("give it a value or a bucket set: " + fn->name.name + "<" + g.name.name +
                  " in {...}>");
        done();
        return;
      }
    }
    target += fn->name.name;
    report.target = target;
    for (const ast::WhereConstraint &w : fn->where) {
      auto holds = decideWhere(w, fenv);
      if (holds && !*holds) {
        std::string values;
        for (const ast::GenericParam &g : fn->generics)
          if (fenv.sizes.count(g.name.name))
            values += (values.empty() ? "" : ", ") + g.name.name + " = " +
                      fenv.sizes[g.name.name].str();
        error(DiagID::WhereViolated, entry.name.range, sourceText(w.range), values)
            .note("required by '" + fn->name.name + "' here", w.range);
        done();
        return;
      }
    }
    std::vector<Value> args;
    std::string sig = "(";
    bool ok = true;
    for (const ast::FnParam &p : fn->params) {
      auto t = p.type ? tensorType(*p.type, fenv) : std::nullopt;
      if (!t) {
        ok = false;
        break;
      }
      sig += (args.empty() ? "" : ", ") + p.name.name + ": " + t->str();
      args.push_back(Value::ofTensor(*t));
    }
    auto ret = ok ? resultType(*fn, fenv) : std::nullopt;
    if (!ret) {
      done();
      return;
    }
    bucket.signature = sig + ") -> " + ret->str();
    Frame top;
    top.env = fenv;
    top.typeLog = options_.recordTypes ? &bucket.typeLines : nullptr;
    // Which axes of the inputs and results are bucket dimensions, as the
    // source writes them (`x: f16[B, D]` with B bucketed), so that a run
    // pads those and no axis that only happens to have a bucket's size.
    std::set<std::string> bucketed;
    for (const ast::GenericArg &a : fnSeg->genericArgs)
      if (a.kind == ast::GenericArg::Kind::Bucket)
        bucketed.insert(a.name.name);
    if (model)
      for (const ast::GenericArg &a : modelSeg->genericArgs)
        if (a.kind == ast::GenericArg::Kind::Bucket &&
            llvm::none_of(fn->generics, [&](const ast::GenericParam &g) { return g.name.name == a.name.name; }))
          bucketed.insert(a.name.name);
    auto axesOf = [&](const ast::TypeExpr *type) {
      std::vector<std::string> axes;
      if (auto *named = llvm::dyn_cast_or_null<ast::NamedType>(type))
        for (const ast::Dim &d : named->dims) {
          auto *n = llvm::dyn_cast_or_null<ast::SizeName>(d.size.get());
          axes.push_back(n && bucketed.count(n->name) ? n->name : "");
        }
      return axes;
    };
    if (lower_) {
      lower_->beginFunction(entryName, bucket.sizes);
      for (size_t k = 0; k < args.size(); ++k)
        args[k].op = lower_->input(fn->params[k].name.name, args[k].tensor, fn->params[k].name.range,
                                   bucketed.empty() ? std::vector<std::string>{} : axesOf(fn->params[k].type.get()));
    }
    std::vector<std::vector<std::string>> resultAxes;
    if (!bucketed.empty()) {
      if (fn->tupleResult)
        for (const ast::FnDecl::ResultField &field : fn->results)
          resultAxes.push_back(axesOf(field.type.get()));
      else
        resultAxes.push_back(axesOf(fn->returnType.get()));
    }
    Value returned;
    bool instantiated = instantiateBody(*fn, fenv, args, top, entry.name.range, "", &returned);
    if (lower_ && instantiated && !returned.isError() && inner_.errorCount() == before)
      lower_->finishFunction(returned, *ret, entry.name.range, resultAxes);
    else if (lower_)
      lower_->abandonFunction();
    bucket.flops = top.flops;
    uint64_t ioBytes = 0;
    for (const Value &a : args)
      if (auto n = a.tensor.elements().constantValue())
        ioBytes += static_cast<uint64_t>(*n) * dtypeBytes(a.tensor.dtype);
    bucket.peakActivationBytes = std::max(top.peakBytes, ioBytes);
    std::map<const ast::ParamDecl *, uint64_t> bytesByDecl;
    if (self)
      countParams(*self, "", bucket, bytesByDecl);
    if (self && options_.recordParams)
      listParams(*self, "", bucket.paramPaths);
    done();
    uint64_t capacity = options_.sramBytesPerChip * options_.chips;
    const bool compiled = options_.sramRuleEntries.empty() ||
                          llvm::is_contained(options_.sramRuleEntries, entryName);
    const uint64_t held = bucket.paramBytes + bucket.stateBytes;
    if (options_.sramRule && compiled && held > capacity) {
      std::vector<std::pair<uint64_t, const ast::ParamDecl *>> largest;
      for (const auto &[d, bytes] : bytesByDecl)
        largest.push_back({bytes, d});
      std::sort(largest.rbegin(), largest.rend());
      // The error sits at the largest parameter's declaration, labelled with
      // its size; the next few large ones are secondary spans, and a note
      // points back at the entry that asked for them all.
      auto describe = [&](size_t k) {
        return "'" + largest[k].second->name.name + "' (" + toString(*largest[k].second->type) +
               ") holds " + mib(largest[k].first) + " in all";
      };
      llvm::SMRange at = largest.empty() ? entry.name.range : largest[0].second->range;
      auto b = error(DiagID::ParamsExceedSram, at, entryName, mib(held),
                     mib(capacity), options_.chips);
      if (!largest.empty())
        b.primaryLabel(describe(0));
      // The few largest, and none too small to matter.
      for (size_t k = 1; k < largest.size() && k < 3; ++k)
        if (largest[k].first * 100 >= held)
          b.note(describe(k), largest[k].second->range);
      if (!largest.empty())
        b.note("entry '" + entryName + "' needs all of them", entry.name.range);
      uint64_t need = (held + options_.sramBytesPerChip - 1) / options_.sramBytesPerChip;
      b.help("compile for " + std::to_string(need) + " chips with --chips " + std::to_string(need));
    }
    if (inner_.errorCount() > before)
      continue;
    report.buckets.push_back(std::move(bucket));
  }
  result.entries.push_back(std::move(report));
}

} // namespace lpu::check

namespace lpu {

void printStats(const CheckResult &result, llvm::raw_ostream &os) {
  for (const EntryReport &e : result.entries) {
    os << "entry " << e.name << " = " << e.target << "\n";
    for (const BucketReport &b : e.buckets) {
      std::string sizes;
      for (const auto &[n, v] : b.sizes)
        sizes += (sizes.empty() ? "" : ", ") + n + " = " + std::to_string(v);
      os << "  bucket " << (sizes.empty() ? "(no buckets)" : sizes) << "\n";
      os << "    signature: " << b.signature << "\n";
      os << "    params: " << b.params << "\n";
      os << "    param_bytes: " << b.paramBytes << "\n";
      if (b.stateBytes)
        os << "    state_bytes: " << b.stateBytes << "\n";
      os << "    flops: " << b.flops << "\n";
      os << "    peak_activation_bytes: " << b.peakActivationBytes << "\n";
    }
  }
}

void printStatsJson(const CheckResult &result, llvm::raw_ostream &os) {
  llvm::json::Array entries;
  for (const EntryReport &e : result.entries) {
    llvm::json::Array buckets;
    for (const BucketReport &b : e.buckets) {
      llvm::json::Object sizes;
      for (const auto &[n, v] : b.sizes)
        sizes[n] = v;
      llvm::json::Object bucket{
          {"sizes", std::move(sizes)},
          {"signature", b.signature},
          {"params", static_cast<int64_t>(b.params)},
          {"param_bytes", static_cast<int64_t>(b.paramBytes)},
          {"flops", static_cast<int64_t>(b.flops)},
          {"peak_activation_bytes", static_cast<int64_t>(b.peakActivationBytes)}};
      if (b.stateBytes)
        bucket["state_bytes"] = static_cast<int64_t>(b.stateBytes);
      buckets.push_back(std::move(bucket));
    }
    entries.push_back(llvm::json::Object{
        {"name", e.name}, {"target", e.target}, {"buckets", std::move(buckets)}});
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{{"entries", std::move(entries)}}))
     << "\n";
}

void printTypes(const CheckResult &result, llvm::raw_ostream &os, llvm::ArrayRef<std::string> only) {
  for (const EntryReport &e : result.entries)
    for (const BucketReport &b : e.buckets) {
      if (!only.empty() && !llvm::is_contained(only, e.name))
        continue;
      std::string sizes;
      for (const auto &[n, v] : b.sizes)
        sizes += (sizes.empty() ? " with " : ", ") + n + " = " + std::to_string(v);
      os << "entry " << e.name << sizes << ": " << e.target << b.signature << "\n";
      for (const std::string &line : b.typeLines)
        os << "  " << line << "\n";
    }
}

void printParams(const CheckResult &result, llvm::raw_ostream &os, llvm::ArrayRef<std::string> only) {
  for (const EntryReport &e : result.entries) {
    if (e.buckets.empty() || (!only.empty() && !llvm::is_contained(only, e.name)))
      continue;
    // Buckets share the weights unless a model size is bucketed.
    std::vector<std::string> last;
    for (const BucketReport &b : e.buckets) {
      if (b.paramPaths == last)
        continue;
      std::string sizes;
      for (const auto &[n, v] : b.sizes)
        sizes += (sizes.empty() ? " with " : ", ") + n + " = " + std::to_string(v);
      os << "entry " << e.name << sizes << ": " << e.target << "\n";
      for (const std::string &p : b.paramPaths)
        os << "  " << p << "\n";
      last = b.paramPaths;
    }
  }
}

} // namespace lpu
