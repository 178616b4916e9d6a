// Passes over the IR and the manager that runs them. A pass rewrites one
// Function at a time and says whether it changed anything; passes are found
// by name (`createPass("cse")`) so that lpuc, lpu-opt and the tests spell a
// pipeline the same way. The manager verifies the IR after every pass and can
// print it before or after any of them. docs/passes.md describes each pass.
#pragma once

#include "ir/IR.h"
#include "ir/Text.h"
#include "ir/Verifier.h"
#include "support/Progress.h"
#include "support/TimeReport.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <string>
#include <vector>

namespace lpu::ir {

class Pass {
public:
  virtual ~Pass() = default;
  /// The name a pipeline spells it with: "cse", "fuse-elementwise".
  virtual llvm::StringRef name() const = 0;
  /// Rewrites `fn` in place; returns whether anything changed.
  virtual bool run(Function &fn) = 0;
  /// Why the last run() could not do its work (empty: it could); a pass
  /// that can fail on valid IR (partition: weights no chip holds) says so
  /// here, and the manager stops with the message.
  virtual std::string takeError() { return {}; }
};

/// The registered pass called `name`, or null when there is none. A pass
/// with options is spelled `name{key=value ...}` (`partition{chips=4}`).
std::unique_ptr<Pass> createPass(llvm::StringRef name);
/// As createPass, with an error naming an unknown pass or a bad option.
llvm::Expected<std::unique_ptr<Pass>> createPassOrError(llvm::StringRef spec);
/// Every registered pass name, sorted.
std::vector<std::string> passNames();
/// What the pass called `name` does, in one line; empty for unknown names.
std::string passDescription(llvm::StringRef name);

/// Checks the pass flags of a tool before anything runs: a pipeline
/// (comma-separated names, `default`, or `none`) and the names given to
/// --print-ir-before/--print-ir-after (passes or `all`). The error names the
/// flag and lists the known passes, since a typo would otherwise print
/// nothing.
llvm::Error checkPassFlags(llvm::StringRef pipeline, const std::vector<std::string> &printBefore,
                           const std::vector<std::string> &printAfter);

/// lpuc's pipeline, as pass names in order.
std::vector<std::string> defaultPipeline();

/// The verifier's messages (formatErrors), each followed, when the op has
/// no source location (hand-written IR), by a note showing the op as
/// printed, since the message alone would not say which op it is.
std::string describeVerifyErrors(const Function &fn, const std::vector<VerifyError> &errors);

struct PassManagerOptions {
  /// Pass names (or "all") whose input / output is printed.
  std::vector<std::string> printBefore;
  std::vector<std::string> printAfter;
  /// Run the verifier after every pass (off only for debugging).
  bool verifyEach = true;
  /// Where the IR dumps go (lpu-opt: stderr, as mlir-opt does).
  llvm::raw_ostream *dumpStream = nullptr;
  PrintOptions print;
  /// Each pass's name as its status while it runs, and its time as a row
  /// (lpuc --progress, --time-phases).
  support::Progress progress;
  support::Timing timing;
};

class PassManager {
public:
  explicit PassManager(PassManagerOptions options = {});
  ~PassManager();
  PassManager(const PassManager &) = delete;
  PassManager &operator=(const PassManager &) = delete;

  void addPass(std::unique_ptr<Pass> pass);
  /// Adds the passes of a comma-separated list ("canonicalize,cse"), where
  /// `default` stands for defaultPipeline() and `none` for no pass. An unknown name is an error
  /// that lists the known ones.
  llvm::Error addPipeline(llvm::StringRef list);
  llvm::Error addPipeline(const std::vector<std::string> &names);
  size_t size() const { return passes_.size(); }

  /// Runs every pass, in order, over every function of `module` (the whole
  /// module goes through one pass before the next starts). Returns whether
  /// any pass changed anything; a verifier failure after a pass is an error
  /// naming the pass and the function.
  llvm::Expected<bool> run(Module &module);

private:
  bool wants(const std::vector<std::string> &list, llvm::StringRef pass) const;
  void dump(llvm::StringRef when, const Pass &pass, const Function &fn) const;

  PassManagerOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

} // namespace lpu::ir
