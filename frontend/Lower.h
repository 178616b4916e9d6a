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

/// Checks `module` and lowers every entry bucket: the checker's concrete
/// instantiation of each bucket calls the lowering hooks, so checking and
/// lowering are one walk. Errors (of the program, or of lowering itself) go
/// to `diags`; the module is null if there were any. The result is not
/// verified: see verifyLowered. The checker's figures go to `checked` when
/// given.
std::unique_ptr<ir::Module> lowerProgram(const ast::Module &module, DiagnosticEngine &diags,
                                         CheckOptions options, CheckResult *checked = nullptr);

/// Reports an internal error of the compiler at the source `loc` names (or
/// nowhere, when it names none): E0701, for an IR that a stage after the
/// checker finds broken.
void reportInternalError(DiagnosticEngine &diags, const ir::Location &loc,
                         const std::string &message);

/// Runs the IR verifier on every function; each failure is reported into
/// `diags` as an internal error at the source the bad op was lowered from.
/// True when the module is valid.
bool verifyLowered(const ir::Module &module, DiagnosticEngine &diags);

/// One state is one tensor in every entry and bucket of a program (lpurun
/// hands it from a call of one entry to the next call of any): each state
/// path whose dtype or shape differs between two of the module's functions
/// is reported (E0702) at the second's declaration, once. True when all
/// agree. Run on the entries and buckets compiled together.
bool statesAgree(const ir::Module &module, DiagnosticEngine &diags);

/// The source position an IR location names (an op's `loc`), so that later
/// stages report at the user's source; empty when the file is not among
/// `sources`.
llvm::SMRange sourceRange(llvm::SourceMgr &sources, const ir::Location &loc);

} // namespace lpu
