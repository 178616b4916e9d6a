// Name resolution, the size/shape type checker, the static rules of the
// machine and entry instantiation: everything between the AST and the IR.
//
// checkProgram loads the imports of a parsed module, checks every generic
// definition once with symbolic sizes, then instantiates every entry for
// every bucket combination with numbers and checks it again. All problems go
// into the diagnostics engine; the result describes the instantiated entries.
#pragma once

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"

#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lpu {

namespace ir {
struct Module;
}

struct CheckOptions {
  /// Directories searched, in order, for `import std.nn` (std/nn.lpu).
  std::vector<std::string> importPaths;
  unsigned maxUnroll = 4096;
  /// The SRAM rule (E0600): an entry's parameters must fit in the SRAM of
  /// `chips` chips. Off where the model runs on the host, not on chips
  /// (lpurun --reference).
  bool sramRule = true;
  /// The entries the SRAM rule applies to (the ones compiled: lpuc
  /// --entry); empty: every entry.
  std::vector<std::string> sramRuleEntries;
  unsigned chips = 1;
  uint64_t sramBytesPerChip = 220ull << 20;
  /// Record the type of every expression of every instantiation.
  bool recordTypes = false;
  /// Record the path and type of every weight (`layers.3.up.w`).
  bool recordParams = false;
  /// How imported modules are parsed.
  ParseOptions parse;
  /// When set, every entry bucket is also lowered into this module, one
  /// function each (frontend/Lower.h drives it).
  ir::Module *lowerInto = nullptr;
};

/// One instantiation of an entry: its bucket sizes and its figures.
struct BucketReport {
  std::vector<std::pair<std::string, int64_t>> sizes; // bucketed sizes, in order
  std::string signature;                              // `(x: f16[1, 784]) -> f32[1, 10]`
  uint64_t params = 0;
  uint64_t paramBytes = 0;
  uint64_t stateBytes = 0; // `state` members: in memory, not weights
  uint64_t flops = 0;
  uint64_t peakActivationBytes = 0;
  /// `line:col  source  : type`, when CheckOptions::recordTypes.
  std::vector<std::string> typeLines;
  /// `layers.3.up.w: f16[768, 3072]`, when CheckOptions::recordParams.
  std::vector<std::string> paramPaths;
};

struct EntryReport {
  std::string name;
  std::string target; // `Mlp<D = 784, H = 256, C = 10>.forward`
  std::vector<BucketReport> buckets;
};

struct CheckResult {
  std::vector<EntryReport> entries;
};

/// Checks `module` (parsed from a buffer of `diags.sources()`), loading its
/// imports into the same SourceMgr. Errors are reported into `diags`.
CheckResult checkProgram(const ast::Module &module, DiagnosticEngine &diags,
                         const CheckOptions &options);

/// The stdlib directories to search for a given lpuc binary location:
/// <bindir>/../stdlib, <bindir>/../../stdlib, <bindir>/../share/lpu/stdlib.
std::vector<std::string> defaultStdlibPaths(llvm::StringRef bindir);

/// `lpuc --stats` in text and JSON; `lpuc --emit=types`.
void printStats(const CheckResult &result, llvm::raw_ostream &os);
void printStatsJson(const CheckResult &result, llvm::raw_ostream &os);
/// `only`: the entries to print (lpuc --entry), every one when empty.
void printTypes(const CheckResult &result, llvm::raw_ostream &os, llvm::ArrayRef<std::string> only = {});
/// `lpuc --emit=params`: the weights of each entry by their paths.
void printParams(const CheckResult &result, llvm::raw_ostream &os, llvm::ArrayRef<std::string> only = {});

} // namespace lpu
