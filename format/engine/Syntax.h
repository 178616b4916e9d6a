// How a language presents source to the formatter: a token stream in which
// every comment is attached to exactly one significant token (as leading or
// trailing trivia), and a concrete syntax tree whose nodes carry a
// language-defined kind. The engine never interprets kinds; the language's
// rules table does.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lpu::format {

/// A token as a language's lexer produced it, before trivia is attached.
struct RawToken {
  enum Category : uint8_t { Significant, LineComment, BlockComment, Whitespace };
  int kind = 0; // the language's token kind (ignored for trivia)
  Category category = Significant;
  uint32_t offset = 0, length = 0;
};

/// A comment, attached to the token it belongs to.
struct Comment {
  uint32_t offset = 0, length = 0; // length excludes a line comment's trailing blanks
  bool isLine = false;             // runs to the end of its line
  bool ownLine = false;            // nothing but whitespace before it on its line
  bool blankBefore = false;        // an empty line separates it from what precedes it
  bool newlineAfter = false;       // a line break follows it
};

struct Token {
  int kind = 0;
  uint32_t offset = 0, length = 0;
  uint32_t line = 0, column = 0; // 1-based, for messages
  // Comments leading this token are comments[leadBegin, trailBegin); comments
  // trailing it (same line, after it, or after a trailing comment on the
  // line where that one ends) are comments[trailBegin, trailEnd).
  uint32_t leadBegin = 0, trailBegin = 0, trailEnd = 0;
  bool blankBefore = false; // an empty line right before the token itself
};

/// A child of a syntax node: a token index or a node index.
struct SyntaxChild {
  bool isNode = false;
  uint32_t index = 0;
};

struct SyntaxNode {
  int kind = 0;
  uint32_t childBegin = 0, childCount = 0; // into SyntaxTree::children
  uint32_t firstToken = 0, lastToken = 0;  // inclusive; lastToken < firstToken when empty
};

/// A parsed file. The last token is the end-of-file token (it carries the
/// comments after the last real token).
struct SyntaxTree {
  std::string source;
  std::vector<Token> tokens;
  std::vector<Comment> comments;
  std::vector<SyntaxNode> nodes;
  std::vector<SyntaxChild> children;
  uint32_t root = 0;

  llvm::StringRef text(const Token &t) const { return llvm::StringRef(source).substr(t.offset, t.length); }
  llvm::StringRef text(const Comment &c) const { return llvm::StringRef(source).substr(c.offset, c.length); }
  const SyntaxChild *childrenOf(uint32_t node) const { return children.data() + nodes[node].childBegin; }
};

/// Builds tokens with attached comments from a raw token stream (which must
/// cover the source without gaps, ending with a zero-length end-of-file
/// token; only whitespace and block comments may hold line breaks). A comment on the same line as the previous
/// significant token trails it, and so does one starting on the line where
/// such a comment ends (after a multi-line block comment); every other
/// comment leads the next one.
void attachTrivia(SyntaxTree &tree, const std::vector<RawToken> &raw);

/// attachTrivia one raw token at a time, for a lexer that hands tokens over
/// as it finds them instead of collecting them first.
class TriviaBuilder {
public:
  /// `maxTokens`: an upper bound of the significant tokens, to reserve.
  TriviaBuilder(SyntaxTree &tree, size_t maxTokens);
  void add(const RawToken &r);

private:
  SyntaxTree &tree_;
  unsigned newlines_ = 0;       // line breaks since the last token or comment
  bool lineHasContent_ = false; // something other than blanks on the current line
  bool lastWasComment_ = false;
  bool sinceTokenSameLine_ = false; // no line break since the last significant token
  uint32_t line_ = 1, column_ = 1;
};

/// Builds the tree bottom-up: children are added, then the node closing them.
class SyntaxTreeBuilder {
public:
  explicit SyntaxTreeBuilder(SyntaxTree &tree) : tree_(tree) {}
  /// Opens a node; returns a mark for finish().
  size_t start() { return pending_.size(); }
  void addToken(uint32_t tokenIndex) { pending_.push_back({false, tokenIndex}); }
  /// Closes the node holding everything added since `mark`; returns its index.
  uint32_t finish(size_t mark, int kind);
  /// How many children were added since `mark` (and not closed yet).
  size_t addedSince(size_t mark) const { return pending_.size() - mark; }

  /// The builder's state, to return to when a speculative parse fails.
  struct Checkpoint {
    size_t pending, nodes, children;
  };
  Checkpoint checkpoint() const {
    return {pending_.size(), tree_.nodes.size(), tree_.children.size()};
  }
  void rollback(const Checkpoint &c) {
    pending_.resize(c.pending);
    tree_.nodes.resize(c.nodes);
    tree_.children.resize(c.children);
  }

private:
  SyntaxTree &tree_;
  std::vector<SyntaxChild> pending_;
};

/// A syntax error or lexical error, 1-based position.
struct SyntaxError {
  uint32_t line = 0, column = 0;
  std::string message;
};

} // namespace lpu::format
