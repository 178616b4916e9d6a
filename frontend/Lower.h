// Lowering the checked program to the dataflow IR (ir/IR.h): one function
// per entry and bucket, with generics instantiated, every call and model
// call inlined, loops unrolled, `if`s decided, weights named by their
// parameter paths (`layers.3.up.w`) and compile-time values folded. Every
// op carries the source location of the expression it came from.
#pragma once

#include "frontend/Checker.h"
#include "ir/IR.h"

#include <memory>
#include <string>
#include <vector>

namespace lpu {

/// Checks `module` and lowers every entry bucket. Errors (of the program,
/// or of lowering itself) go to `diags`; the module is null if there were
/// any. The result is not verified: see verifyLowered.
std::unique_ptr<ir::Module> lowerProgram(const ast::Module &module, DiagnosticEngine &diags,
                                         CheckOptions options);

/// Runs the IR verifier on every function; each failure is reported into
/// `diags` as an internal error at the source the bad op was lowered from.
/// True when the module is valid.
bool verifyLowered(const ir::Module &module, DiagnosticEngine &diags);

struct EmitIROptions {
  /// Also parse the printed text back and check it prints identically
  /// (reported as an internal error if not).
  bool roundTrip = false;
  /// Testing the internal-error path end to end: break the first
  /// elementwise op's type before the verifier runs.
  bool injectFault = false;
  /// The passes run after lowering, as `lpu-opt --passes` spells them:
  /// "default" is the pipeline the scheduler gets, "none" prints the IR as
  /// lowered.
  std::string passes = "default";
  /// Pass names (or "all") whose input or output is dumped to `dumps`.
  std::vector<std::string> printBefore, printAfter;
  llvm::raw_ostream *dumps = nullptr;
};

/// The source position an IR location names (an op's `loc`), so that later
/// stages report at the user's source; empty when the file is not among
/// `sources`.
llvm::SMRange sourceRange(llvm::SourceMgr &sources, const ir::Location &loc);

/// Runs the pipeline `options.passes` over a verified module, verifying
/// after every pass. A failure (an unknown pass name, a pass that breaks
/// the IR) is reported into `diags`; false then.
bool runPasses(ir::Module &module, DiagnosticEngine &diags, const EmitIROptions &options);

/// `lpuc --emit=ir`: lowers, verifies, runs the passes and prints the
/// module. False on any error.
bool emitIR(const ast::Module &module, DiagnosticEngine &diags, const CheckOptions &options,
            llvm::raw_ostream &os, const EmitIROptions &emitOptions = {});

} // namespace lpu
