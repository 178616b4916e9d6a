#include "frontend/CompileToIR.h"

#include "frontend/DiagnosticRender.h"
#include "frontend/Lower.h"
#include "frontend/Parser.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>

namespace lpu {

llvm::Expected<std::unique_ptr<ir::Module>> compileFileToIR(llvm::StringRef path,
                                                            const CompileToIROptions &options,
                                                            llvm::raw_ostream &diagnostics) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read '" + path + "': " + buffer.getError().message());
  llvm::SourceMgr sources;
  unsigned bufferId = sources.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  DiagnosticEngine diags(sources);
  TextDiagnosticRenderer text(sources, diagnostics, options.color);
  diags.setConsumer(&text);
  std::unique_ptr<ir::Module> lowered;
  if (auto module = parseModule(diags, bufferId); module && !diags.hasErrors()) {
    CheckOptions check;
    check.importPaths = options.importPaths;
    lowered = lowerProgram(*module, diags, check);
    if (lowered && !verifyLowered(*lowered, diags))
      lowered.reset();
  }
  if (!lowered || diags.hasErrors())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "'" + path + "' does not compile (" +
                                       std::to_string(diags.errorCount()) + " error" +
                                       (diags.errorCount() == 1 ? "" : "s") + ")");
  return lowered;
}

} // namespace lpu
