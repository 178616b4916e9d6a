// Lowering: check with lowering switched on, and verify the result.
// The per-operation work is in LowerOps.cpp, called from the checker.
#include "frontend/Lower.h"

#include "frontend/LowerImpl.h"
#include "ir/Verifier.h"

namespace lpu {

namespace check {
bool Checker::lowering() const { return lower_ && lower_->active(); }
} // namespace check

llvm::SMRange sourceRange(llvm::SourceMgr &sources, const ir::Location &loc) {
  if (!loc.known())
    return {};
  for (unsigned id = 1; id <= sources.getNumBuffers(); ++id) {
    if (sources.getMemoryBuffer(id)->getBufferIdentifier() != loc.file)
      continue;
    llvm::SMLoc at = sources.FindLocForLineAndColumn(id, loc.line, loc.col);
    return {at, at};
  }
  return {};
}

void reportInternalError(DiagnosticEngine &diags, const ir::Location &loc,
                         const std::string &message) {
  llvm::SMRange at = sourceRange(diags.sources(), loc);
  if (at.isValid()) {
    diags.report(DiagID::InvalidLoweredIR, at, message);
    return;
  }
  // No source to point at: the message carries what is known.
  diags.report(DiagID::InvalidLoweredIR, {}, message);
}


std::unique_ptr<ir::Module> lowerProgram(const ast::Module &module, DiagnosticEngine &diags,
                                         CheckOptions options, CheckResult *checked) {
  auto out = std::make_unique<ir::Module>();
  options.lowerInto = out.get();
  unsigned before = diags.errorCount();
  CheckResult result = checkProgram(module, diags, options);
  if (checked)
    *checked = std::move(result);
  if (diags.errorCount() != before)
    return nullptr;
  return out;
}

bool verifyLowered(const ir::Module &module, DiagnosticEngine &diags) {
  bool ok = true;
  for (const auto &fn : module.functions)
    for (const ir::VerifyError &e : ir::verify(*fn)) {
      ok = false;
      reportInternalError(diags, e.loc, e.message + " (in func @" + fn->name() + ")");
    }
  return ok;
}

} // namespace lpu
