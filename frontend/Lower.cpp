// Lowering: check with lowering switched on, and verify the result.
// The per-operation work is in LowerOps.cpp, called from the checker.
#include "frontend/Lower.h"

#include "frontend/LowerImpl.h"
#include "ir/Verifier.h"

#include <map>

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


bool statesAgree(const ir::Module &module, DiagnosticEngine &diags) {
  struct Seen {
    ir::Type type;
    ir::Location loc;
    std::string fn;
    bool reported = false;
  };
  std::map<std::string, Seen> seen;
  bool ok = true;
  for (const auto &fn : module.functions)
    for (const auto &op : fn->ops()) {
      if (op->kind() != ir::OpKind::Input || !op->boolAttr("state").value_or(false))
        continue;
      const std::string name = op->stringAttr("name").value_or("");
      const ir::Type type = ir::fullType(*op);
      auto [it, fresh] = seen.try_emplace(name, Seen{type, op->loc(), fn->name()});
      if (fresh || it->second.type == type || it->second.reported)
        continue;
      ok = false;
      it->second.reported = true;
      diags
          .report(DiagID::StateTypeDiffers, sourceRange(diags.sources(), op->loc()), name, type.str(), fn->name(),
                  it->second.type.str(), it->second.fn)
          .note("entry '" + it->second.fn + "' declares it here", sourceRange(diags.sources(), it->second.loc));
    }
  return ok;
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
