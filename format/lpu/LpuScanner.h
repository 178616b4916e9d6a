// The lexical rules of grammar/LPU.g4 over UTF-8 bytes, for the formatter's
// fast path: the same tokens as grammar/LPUFastLexer (itself checked
// against the ANTLR lexer), without decoding the source into code points or
// allocating a token object each. Only well-formed input is its business:
// a lexical error (stray character, malformed number, unterminated string or
// block comment) or malformed UTF-8 makes it give up, and the caller falls
// back to the ANTLR path, which reports the error.
#pragma once

#include "format/engine/Syntax.h"

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/StringRef.h>

#include <vector>

namespace lpu::format {

/// Hands the raw tokens of `source` to `emit` in order (significant tokens
/// with LPULexer's types, comments, the whitespace between them, and a
/// zero-length end-of-file token of kind -1). Returns false on a lexical
/// error or malformed UTF-8, or as soon as `emit` returns false.
bool scanLpu(llvm::StringRef source, llvm::function_ref<bool(const RawToken &)> emit);

/// The same, collected.
bool scanLpu(llvm::StringRef source, std::vector<RawToken> &raw);

} // namespace lpu::format
