#include "ir/Pass.h"

#include "ir/passes/Partition.h"
#include "ir/passes/Passes.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>

namespace lpu::ir {

namespace {

struct PassInfo {
  const char *name;
  const char *description;
  std::unique_ptr<Pass> (*create)();
};

const PassInfo kPasses[] = {
    {"canonicalize", "put constants second in commutative ops; drop identity layout ops",
     createCanonicalizePass},
    {"cse", "merge ops of equal kind, type, operands and attributes", createCSEPass},
    {"dce", "remove ops the return does not need (inputs and params stay)", createDCEPass},
    {"fold", "compute ops whose operands are all splat constants", createFoldPass},
    {"fuse-elementwise", "group chains of elementwise ops into fusion groups",
     createFuseElementwisePass},
    {"simplify", "algebraic rewrites: transpose/reshape/convert chains, x + 0, x * 1",
     createSimplifyPass},
    {"sink-slices", "compute only the rows a slice reads of a value computed row by row",
     createSinkSlicesPass},
    {"test-break-ir", "(tests only) gives the first op with operands a wrong type",
     createTestBreakIRPass},
};

const PassInfo *findPass(llvm::StringRef name) {
  for (const PassInfo &info : kPasses)
    if (name == info.name)
      return &info;
  return nullptr;
}

} // namespace

std::unique_ptr<Pass> createPass(llvm::StringRef name) {
  auto pass = createPassOrError(name);
  if (!pass) {
    llvm::consumeError(pass.takeError());
    return nullptr;
  }
  return std::move(*pass);
}

llvm::Expected<std::unique_ptr<Pass>> createPassOrError(llvm::StringRef spec) {
  spec = spec.trim();
  auto [name, rest] = spec.split('{');
  name = name.trim();
  if (name == "partition") {
    if (!rest.empty() && !rest.endswith("}"))
      return llvm::createStringError(std::errc::invalid_argument,
                                     "pass options must end with '}': '%s'", spec.str().c_str());
    auto options = parsePartitionOptions(rest.drop_back(rest.empty() ? 0 : 1));
    if (!options)
      return options.takeError();
    return createPartitionPass(*options);
  }
  const PassInfo *info = findPass(name);
  if (info && spec.contains('{'))
    return llvm::createStringError(std::errc::invalid_argument, "pass '%s' takes no options",
                                   name.str().c_str());
  if (!info) {
    std::string known;
    for (const std::string &n : passNames())
      known += (known.empty() ? "" : ", ") + n;
    return llvm::createStringError(std::errc::invalid_argument,
                                   "unknown pass '%s'; the passes are: %s", spec.str().c_str(),
                                   known.c_str());
  }
  return info->create();
}

std::vector<std::string> passNames() {
  std::vector<std::string> names;
  for (const PassInfo &info : kPasses)
    names.push_back(info.name);
  names.push_back("partition");
  std::sort(names.begin(), names.end());
  return names;
}

std::string passDescription(llvm::StringRef name) {
  if (name == "partition")
    return "assign every op to a chip, pipeline stages balanced by cost ({chips=N}); values "
           "crossing chips become transfers";
  const PassInfo *info = findPass(name);
  return info ? info->description : "";
}

std::vector<std::string> defaultPipeline() {
  // Canonical forms first so fold and simplify see constants second and no
  // identity ops; simplify's rewrites (a cancelled convert, a merged
  // transpose) can expose more of both, hence the second round. CSE merges
  // the duplicates lowering makes (one constant per use), DCE sweeps what
  // every earlier pass left unused, and fusion looks at the final graph.
  // sink-slices computes only the rows a slice reads (a classifier's first
  // token) once the graph is in its final form, before DCE sweeps the rows
  // no longer computed.
  return {"canonicalize", "fold", "simplify", "cse", "canonicalize", "fold",
          "simplify",     "cse",  "sink-slices", "dce", "fuse-elementwise"};
}

std::string describeVerifyErrors(const Function &fn, const std::vector<VerifyError> &errors) {
  llvm::SmallVector<llvm::StringRef> lines;
  std::string printed = toString(fn, {.locations = false});
  llvm::StringRef(printed).split(lines, '\n');
  std::string out;
  for (const VerifyError &error : errors) {
    out += formatErrors({error}, &fn);
    if (error.loc.known() || !error.op)
      continue;
    // The printer puts one op per line after the `func` line.
    for (size_t i = 0; i < fn.ops().size(); ++i)
      if (fn.ops()[i].get() == error.op && i + 1 < lines.size())
        out += "note: the op: " + lines[i + 1].trim().str() + "\n";
  }
  return out;
}

PassManager::PassManager(PassManagerOptions options) : options_(std::move(options)) {
  if (!options_.dumpStream)
    options_.dumpStream = &llvm::errs();
}

PassManager::~PassManager() = default;

void PassManager::addPass(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }

llvm::Error PassManager::addPipeline(const std::vector<std::string> &names) {
  for (const std::string &name : names) {
    auto pass = createPassOrError(name);
    if (!pass)
      return pass.takeError();
    addPass(std::move(*pass));
  }
  return llvm::Error::success();
}

llvm::Error PassManager::addPipeline(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  list.split(parts, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
  std::vector<std::string> names;
  for (llvm::StringRef part : parts) {
    part = part.trim();
    // "fold,,dce" or "fold,": a name left out, not a shorter pipeline.
    if (part.empty() && parts.size() > 1)
      return llvm::createStringError(std::errc::invalid_argument,
                                     "a pass name is missing in the list '%s' (names are separated by "
                                     "single commas)",
                                     list.str().c_str());
    if (part == "default") {
      std::vector<std::string> pipeline = defaultPipeline();
      names.insert(names.end(), pipeline.begin(), pipeline.end());
    } else if (!part.empty() && part != "none") {
      names.push_back(part.str());
    }
  }
  return addPipeline(names);
}

llvm::Error checkPassFlags(llvm::StringRef pipeline, const std::vector<std::string> &printBefore,
                           const std::vector<std::string> &printAfter) {
  PassManager probe;
  if (llvm::Error e = probe.addPipeline(pipeline))
    return e;
  std::vector<std::string> known = passNames();
  for (auto [names, flag] : {std::pair{&printBefore, "--print-ir-before"},
                             std::pair{&printAfter, "--print-ir-after"}})
    for (const std::string &name : *names)
      if (name != "all" && !llvm::is_contained(known, name))
        return llvm::createStringError(std::make_error_code(std::errc::invalid_argument),
                                       "unknown pass '" + name + "' in " + flag +
                                           "; the passes are: " + llvm::join(known, ", ") +
                                           " (or all)");
  return llvm::Error::success();
}

bool PassManager::wants(const std::vector<std::string> &list, llvm::StringRef pass) const {
  return llvm::any_of(list, [&](const std::string &n) { return n == "all" || n == pass; });
}

void PassManager::dump(llvm::StringRef when, const Pass &pass, const Function &fn) const {
  llvm::raw_ostream &os = *options_.dumpStream;
  os << "// -----// IR Dump " << when << " " << pass.name() << " //----- //\n";
  print(fn, os, options_.print);
  os << "\n";
  os.flush();
}

llvm::Expected<bool> PassManager::run(Module &module) {
  bool changed = false;
  for (const std::unique_ptr<Pass> &pass : passes_) {
    options_.progress.status(pass->name());
    support::TimedScope timed(options_.timing, pass->name());
    for (const std::unique_ptr<Function> &fn : module.functions) {
      if (wants(options_.printBefore, pass->name()))
        dump("Before", *pass, *fn);
      changed |= pass->run(*fn);
      if (std::string why = pass->takeError(); !why.empty())
        return llvm::createStringError(std::errc::invalid_argument, "pass '%s' on func @%s: %s",
                                       pass->name().str().c_str(), fn->name().c_str(),
                                       why.c_str());
      // Printed before verifying, so a broken result can be seen.
      if (wants(options_.printAfter, pass->name()))
        dump("After", *pass, *fn);
      if (!options_.verifyEach)
        continue;
      std::vector<VerifyError> errors = verify(*fn);
      if (errors.empty())
        continue;
      std::string messages = describeVerifyErrors(*fn, errors);
      if (!messages.empty() && messages.back() == '\n')
        messages.pop_back();
      return llvm::createStringError(std::errc::invalid_argument,
                                     "the IR does not verify after pass '%s' on func @%s:\n%s",
                                     pass->name().str().c_str(), fn->name().c_str(),
                                     messages.c_str());
    }
  }
  return changed;
}

} // namespace lpu::ir
