#include "format/Diagnostics.h"

#include "frontend/DiagnosticRender.h"
#include "frontend/Parser.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>

namespace lpu::format {

namespace {
/// The compiler's diagnostics for .lpu source; false when it finds no error
/// (the formatter refused the input for a reason of its own).
bool printCompilerDiagnostics(llvm::raw_ostream &os, llvm::StringRef fileName,
                              llvm::StringRef source, bool colors) {
  llvm::SourceMgr sources;
  unsigned id = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, fileName), llvm::SMLoc());
  DiagnosticEngine diags(sources);
  CollectingConsumer collected;
  diags.setConsumer(&collected);
  parseModule(diags, id);
  if (!diags.hasErrors())
    return false;
  TextDiagnosticRenderer renderer(sources, os, colors);
  for (const Diagnostic &d : collected.diagnostics)
    renderer.handle(d);
  return true;
}
} // namespace

void printSyntaxErrors(llvm::raw_ostream &os, llvm::StringRef language, llvm::StringRef fileName,
                       llvm::StringRef source, const std::vector<SyntaxError> &errors,
                       bool colors) {
  if (language == "lpu" && printCompilerDiagnostics(os, fileName, source, colors))
    return;
  llvm::SourceMgr sm;
  sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, fileName), llvm::SMLoc());
  const char *start = sm.getMemoryBuffer(1)->getBufferStart();
  const char *end = sm.getMemoryBuffer(1)->getBufferEnd();
  for (const SyntaxError &e : errors) {
    // Columns count code points; find the byte they name.
    const char *p = start;
    for (uint32_t line = 1; line < e.line && p < end; ++p)
      if (*p == '\n')
        ++line;
    for (uint32_t col = 1; col < e.column && p < end && *p != '\n';) {
      ++p;
      if ((static_cast<unsigned char>(*p) & 0xC0) != 0x80)
        ++col;
    }
    sm.PrintMessage(os, llvm::SMLoc::getFromPointer(p), llvm::SourceMgr::DK_Error, e.message,
                    {}, {}, colors);
  }
}

} // namespace lpu::format
