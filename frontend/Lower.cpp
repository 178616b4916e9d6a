// The lowering driver: check with lowering switched on, verify, print.
// The per-operation work is in LowerOps.cpp, called from the checker.
#include "frontend/Lower.h"

#include "frontend/LowerImpl.h"
#include "ir/Pass.h"
#include "ir/Text.h"
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

namespace {

void reportInternal(DiagnosticEngine &diags, const ir::Location &loc, const std::string &message) {
  llvm::SMRange at = sourceRange(diags.sources(), loc);
  if (at.isValid()) {
    diags.report(DiagID::InvalidLoweredIR, at, message);
    return;
  }
  // No source to point at: the message carries what is known.
  diags.report(DiagID::InvalidLoweredIR, {}, message);
}

/// The fault --inject-ir-fault makes: an extra axis on the result of the
/// first elementwise op, which its operands do not have.
void breakFirstElementwiseOp(ir::Module &module) {
  for (const auto &fn : module.functions)
    for (const auto &op : fn->ops())
      if (ir::isElementwise(op->kind())) {
        ir::Type t = op->type();
        t.shape.push_back(2);
        op->setType(t);
        return;
      }
}

} // namespace

std::unique_ptr<ir::Module> lowerProgram(const ast::Module &module, DiagnosticEngine &diags,
                                         CheckOptions options) {
  auto out = std::make_unique<ir::Module>();
  options.lowerInto = out.get();
  unsigned before = diags.errorCount();
  checkProgram(module, diags, options);
  if (diags.errorCount() != before)
    return nullptr;
  return out;
}

bool verifyLowered(const ir::Module &module, DiagnosticEngine &diags) {
  bool ok = true;
  for (const auto &fn : module.functions)
    for (const ir::VerifyError &e : ir::verify(*fn)) {
      ok = false;
      reportInternal(diags, e.loc, e.message + " (in func @" + fn->name() + ")");
    }
  return ok;
}

bool runPasses(ir::Module &module, DiagnosticEngine &diags, const EmitIROptions &options) {
  if (options.passes == "none")
    return true;
  ir::PassManagerOptions pm;
  pm.printBefore = options.printBefore;
  pm.printAfter = options.printAfter;
  pm.dumpStream = options.dumps ? options.dumps : &llvm::errs();
  ir::PassManager passes(pm);
  if (llvm::Error e = passes.addPipeline(options.passes)) {
    reportInternal(diags, {}, llvm::toString(std::move(e)));
    return false;
  }
  llvm::Expected<bool> changed = passes.run(module);
  if (!changed) {
    reportInternal(diags, {}, llvm::toString(changed.takeError()));
    return false;
  }
  return true;
}

bool emitIR(const ast::Module &module, DiagnosticEngine &diags, const CheckOptions &options,
            llvm::raw_ostream &os, const EmitIROptions &emitOptions) {
  auto lowered = lowerProgram(module, diags, options);
  if (lowered && emitOptions.injectFault)
    breakFirstElementwiseOp(*lowered);
  if (!lowered || !verifyLowered(*lowered, diags) || !runPasses(*lowered, diags, emitOptions))
    return false;
  std::string text;
  llvm::raw_string_ostream printed(text);
  ir::print(*lowered, printed);
  printed.flush();
  if (emitOptions.roundTrip) {
    auto parsed = ir::parseModule(text, "<lowered IR>");
    if (!parsed) {
      reportInternal(diags, {}, "the printed IR does not parse back: " +
                                    llvm::toString(parsed.takeError()));
      return false;
    }
    std::string again;
    llvm::raw_string_ostream reprinted(again);
    ir::print(**parsed, reprinted);
    reprinted.flush();
    if (again != text) {
      reportInternal(diags, {}, "the printed IR prints differently after parsing it back");
      return false;
    }
  }
  os << text;
  return true;
}

} // namespace lpu
