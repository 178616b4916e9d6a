// The .lpu concrete syntax tree without ANTLR: a hand-written recursive
// descent parser over a byte-level copy of the hand-written lexer
// (LpuScanner.h, after grammar/LPUFastLexer)
// that builds exactly the tree the ANTLR parse tree converts to (node kinds
// are LPU.g4's rule indices; a rule context with one child is folded into
// it). grammar/LPU.g4 stays the specification: format_unit_tests checks
// both trees are identical on every repository .lpu file and on random and
// perturbed inputs, and the ANTLR parser remains the fallback for anything
// this parser rejects (so syntax errors are always reported by ANTLR).
#pragma once

#include "format/engine/Syntax.h"

#include <vector>

namespace lpu::format {

/// Fills `tree` (whose `source` is set) with tokens, comments and the tree,
/// or returns false (input that does not lex or parse cleanly, or nests
/// too deep); `tree` is then unspecified. Never reports errors: the caller
/// falls back to the ANTLR parser for them.
bool parseLpuFast(SyntaxTree &tree);

/// The same through the ANTLR lexer's token stream and the ANTLR parser;
/// fills `errors` on failure.
bool parseLpuWithAntlr(SyntaxTree &tree, std::vector<SyntaxError> &errors);

} // namespace lpu::format
