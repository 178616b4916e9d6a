// Shared by Parser.cpp and ParseTreeAdapter.cpp only: the bridge between
// ANTLR's positions (code-point indices) and ours (pointers into the
// llvm::SourceMgr buffer). Not part of the frontend's interface.
#pragma once

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"

#include <antlr4-runtime.h>

#include "LPUFastLexer.h"

#include <set>
#include <string>
#include <vector>

namespace lpu::detail {

/// The deepest nesting the parser and the checker take (E0011): brackets,
/// chains of right-recursive operators, and expressions in the AST. They
/// recurse a level at a time; this keeps them far inside the main
/// thread's stack, sanitizers' larger frames included.
constexpr unsigned kMaxNesting = 128;

/// The buffer decoded to UTF-32 for ANTLR, with a map from each code-point
/// index back to its byte in the buffer.
class SourceText {
public:
  /// Decodes; invalid UTF-8 becomes U+FFFD and its offsets land in
  /// `invalidOffsets`.
  explicit SourceText(llvm::StringRef buffer);

  const std::u32string &codePoints() const { return codePoints_; }
  const std::vector<size_t> &invalidOffsets() const { return invalidOffsets_; }

  /// The location of code point `index` (index == size() is the end).
  llvm::SMLoc loc(size_t index) const {
    if (index > codePoints_.size())
      index = codePoints_.size();
    size_t byte = byteOffsets_.empty() ? index : byteOffsets_[index];
    return llvm::SMLoc::getFromPointer(buffer_.data() + byte);
  }
  llvm::StringRef buffer() const { return buffer_; }

private:
  llvm::StringRef buffer_;
  std::u32string codePoints_;
  std::vector<size_t> byteOffsets_; // empty when the buffer is pure ASCII
  std::vector<size_t> invalidOffsets_;
};

/// Source ranges of tokens and parse-tree nodes.
class Locator {
public:
  explicit Locator(const SourceText &text) : text_(text) {}

  bool isReal(const antlr4::Token *t) const {
    return t && t->getStartIndex() != INVALID_INDEX && t->getTokenIndex() != INVALID_INDEX;
  }
  llvm::SMRange range(const antlr4::Token *t) const {
    if (!isReal(t))
      return {};
    if (t->getType() == antlr4::Token::EOF)
      return {text_.loc(t->getStartIndex()), text_.loc(t->getStartIndex())};
    return {text_.loc(t->getStartIndex()), text_.loc(t->getStopIndex() + 1)};
  }
  llvm::SMRange range(antlr4::tree::TerminalNode *node) const {
    return node ? range(node->getSymbol()) : llvm::SMRange();
  }
  llvm::SMRange range(antlr4::ParserRuleContext *ctx) const {
    if (!ctx || !isReal(ctx->getStart()))
      return {};
    llvm::SMLoc begin = text_.loc(ctx->getStart()->getStartIndex());
    const antlr4::Token *stop = ctx->getStop();
    if (!isReal(stop) || stop->getTokenIndex() < ctx->getStart()->getTokenIndex())
      return {begin, begin};
    if (stop->getType() == antlr4::Token::EOF)
      return {begin, text_.loc(stop->getStartIndex())};
    return {begin, text_.loc(stop->getStopIndex() + 1)};
  }
  /// The source text of a token, straight from the buffer.
  llvm::StringRef text(const antlr4::Token *t) const {
    llvm::SMRange r = range(t);
    if (!r.Start.isValid())
      return "";
    return llvm::StringRef(r.Start.getPointer(), r.End.getPointer() - r.Start.getPointer());
  }

private:
  const SourceText &text_;
};

/// Converts the parse tree to the AST. Reports the syntax rules the grammar
/// leaves to it (chained comparisons, size functions, packs, doc comments).
/// `lexicallyBad` holds token indices already reported by the lexical pass;
/// `wellFormed` says the parse had no syntax error (the tree is complete).
std::unique_ptr<ast::Module> buildModule(antlr4::ParserRuleContext *moduleCtx,
                                         antlr4::BufferedTokenStream &tokens,
                                         const Locator &locator, DiagnosticEngine &diags,
                                         const std::set<size_t> &lexicallyBad, bool wellFormed);

/// Decodes the escapes of a string token's text (quotes included). Unknown
/// escapes are kept as written (the lexical pass reported them).
std::string decodeStringLiteral(llvm::StringRef quoted);

} // namespace lpu::detail
