// How lpufmt shows input that does not parse: `file:line:col: error: message`,
// then the source line and a caret. One function, so that the compiler's own
// diagnostics engine (frontend/) can take its place in one edit.
#pragma once

#include "format/engine/Syntax.h"

#include <llvm/Support/raw_ostream.h>

#include <vector>

namespace lpu::format {

void printSyntaxErrors(llvm::raw_ostream &os, llvm::StringRef fileName, llvm::StringRef source,
                       const std::vector<SyntaxError> &errors, bool colors);

} // namespace lpu::format
