// JSON (with `//` and `/* */` comments, as JSONC allows) for the formatter:
// a small tokenizer and recursive-descent parser into the engine's syntax
// tree, and the rules that lay it out. It exists to keep the engine honest
// about knowing no language, and because JSON files sit next to models.
#pragma once

#include "format/engine/Pipeline.h"

namespace lpu::format {

namespace json {
/// The kinds of JSON tokens and syntax-tree nodes (for rules and tests).
enum TokenKind : int { LBrace = 1, RBrace, LBrack, RBrack, Colon, Comma, String, Number, Keyword, Eof };
enum NodeKind : int { Document = 1, Object, Member, Array };
} // namespace json

const Language &jsonLanguage();

} // namespace lpu::format
