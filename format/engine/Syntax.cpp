#include "format/engine/Syntax.h"

namespace lpu::format {

namespace {
unsigned countLineBreaks(llvm::StringRef s) {
  unsigned n = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == '\n' || (s[i] == '\r' && (i + 1 == s.size() || s[i + 1] != '\n')))
      ++n;
  return n;
}
} // namespace

TriviaBuilder::TriviaBuilder(SyntaxTree &tree, size_t maxTokens) : tree_(tree) {
  tree.tokens.clear();
  tree.comments.clear();
  // An upper bound (untouched capacity costs address space only).
  tree.tokens.reserve(maxTokens);
}

void TriviaBuilder::add(const RawToken &r) {
  SyntaxTree &tree = tree_;
  llvm::StringRef text = llvm::StringRef(tree.source).substr(r.offset, r.length);
  uint32_t startLine = line_, startColumn = column_;
  // Only whitespace and block comments can hold a line break.
  unsigned breaks = r.category == RawToken::Whitespace || r.category == RawToken::BlockComment
                        ? countLineBreaks(text)
                        : 0;
  if (breaks) {
    line_ += breaks;
    size_t last = text.find_last_of("\r\n");
    column_ = static_cast<uint32_t>(text.size() - last);
  } else {
    column_ += static_cast<uint32_t>(text.size());
  }

  switch (r.category) {
  case RawToken::Whitespace:
    if (breaks) {
      newlines_ += breaks;
      lineHasContent_ = false;
      sinceTokenSameLine_ = false;
      if (lastWasComment_)
        tree.comments.back().newlineAfter = true;
    }
    break;
  case RawToken::LineComment:
  case RawToken::BlockComment: {
    Comment c;
    c.offset = r.offset;
    c.isLine = r.category == RawToken::LineComment;
    llvm::StringRef body = c.isLine ? text.rtrim(" \t\f\v") : text;
    c.length = static_cast<uint32_t>(body.size());
    c.ownLine = !lineHasContent_;
    c.blankBefore = newlines_ >= 2;
    c.newlineAfter = c.isLine; // a line comment ends its line by definition
    bool trailing = !tree.tokens.empty() && sinceTokenSameLine_;
    tree.comments.push_back(c);
    if (trailing)
      tree.tokens.back().trailEnd = static_cast<uint32_t>(tree.comments.size());
    // A comment that starts on the line where a trailing comment ends
    // trails the token too, even after a multi-line block comment
    // (`x, /* a` newline `b */ // c`): leading the next token instead, it
    // would be printed after whatever the style puts there (a comma it adds,
    // a dropped comma's comments), no longer next to the comment it
    // followed, and on a second pass it would trail.
    newlines_ = 0;
    lineHasContent_ = true;
    lastWasComment_ = true;
    break;
  }
  case RawToken::Significant: {
    Token t;
    t.kind = r.kind;
    t.offset = r.offset;
    t.length = r.length;
    t.line = startLine;
    t.column = startColumn;
    t.leadBegin = tree.tokens.empty() ? 0 : tree.tokens.back().trailEnd;
    t.trailBegin = t.trailEnd = static_cast<uint32_t>(tree.comments.size());
    t.blankBefore = newlines_ >= 2;
    tree.tokens.push_back(t);
    newlines_ = 0;
    lineHasContent_ = true;
    lastWasComment_ = false;
    sinceTokenSameLine_ = true;
    break;
  }
  }
}

void attachTrivia(SyntaxTree &tree, const std::vector<RawToken> &raw) {
  TriviaBuilder builder(tree, raw.size());
  for (const RawToken &r : raw)
    builder.add(r);
}

uint32_t SyntaxTreeBuilder::finish(size_t mark, int kind) {
  SyntaxNode n;
  n.kind = kind;
  n.childBegin = static_cast<uint32_t>(tree_.children.size());
  n.childCount = static_cast<uint32_t>(pending_.size() - mark);
  n.firstToken = UINT32_MAX;
  n.lastToken = 0;
  for (size_t i = mark; i < pending_.size(); ++i) {
    const SyntaxChild &c = pending_[i];
    uint32_t first = c.isNode ? tree_.nodes[c.index].firstToken : c.index;
    uint32_t last = c.isNode ? tree_.nodes[c.index].lastToken : c.index;
    if (first > last)
      continue; // an empty child
    if (n.firstToken == UINT32_MAX)
      n.firstToken = first;
    n.lastToken = last;
  }
  tree_.children.insert(tree_.children.end(), pending_.begin() + mark, pending_.end());
  pending_.resize(mark);
  tree_.nodes.push_back(n);
  uint32_t index = static_cast<uint32_t>(tree_.nodes.size() - 1);
  pending_.push_back({true, index});
  return index;
}

} // namespace lpu::format
