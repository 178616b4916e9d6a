// The .lpu language for the formatter: tokens with comments as trivia, and
// the ANTLR parse tree's shape as the concrete syntax tree, whose node kinds
// are the grammar's rule indices (rule contexts with a single child are
// folded into that child). The hand-written parser of LpuParser.h builds it;
// the ANTLR lexer and parser take over for input it rejects, and report the
// syntax errors.
#pragma once

#include "format/engine/Pipeline.h"

namespace lpu::format {

const Language &lpuLanguage();

/// The rules table for .lpu (LpuRules.cpp).
const RuleTable &lpuRules();

/// A comma the style may drop or add: one right before a closing bracket.
bool lpuIsOptionalToken(const SyntaxTree &tree, uint32_t token);

} // namespace lpu::format
