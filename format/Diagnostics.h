// How lpufmt shows input that does not parse. For .lpu these are the
// compiler's own diagnostics (codes, carets, notes), exactly as lpuc prints
// them; for other languages, and for the few refusals that are the
// formatter's own (absurd nesting), `file:line:col: error: message` with the
// source line and a caret.
#pragma once

#include "format/engine/Syntax.h"

#include <llvm/Support/raw_ostream.h>

#include <vector>

namespace lpu::format {

void printSyntaxErrors(llvm::raw_ostream &os, llvm::StringRef language, llvm::StringRef fileName,
                       llvm::StringRef source, const std::vector<SyntaxError> &errors,
                       bool colors);

} // namespace lpu::format
