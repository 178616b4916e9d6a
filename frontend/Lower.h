// Lowering the checked program to the dataflow IR (ir/IR.h): one function
// per entry and bucket, with generics instantiated, every call and model
// call inlined, loops unrolled, `if`s decided, weights named by their
// parameter paths (`layers.3.up.w`) and compile-time values folded. Every
// op carries the source location of the expression it came from.
#pragma once

#include "frontend/Checker.h"
#include "ir/IR.h"

#include <memory>

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
};

/// `lpuc --emit=ir`: lowers, verifies and prints the module. False on any
/// error.
bool emitIR(const ast::Module &module, DiagnosticEngine &diags, const CheckOptions &options,
            llvm::raw_ostream &os, const EmitIROptions &emitOptions = {});

} // namespace lpu
