#include "format/engine/FormatContext.h"

#include <llvm/ADT/Twine.h>

namespace lpu::format {

FormatContext::FormatContext(const SyntaxTree &tree, const RuleTable &rules, DocArena &arena)
    : tree_(tree), rules_(rules), arena_(arena), tokenUses_(tree.tokens.size(), 0),
      commentUses_(tree.comments.size(), 0), trailingDeferred_(tree.tokens.size(), 0) {
  for (uint32_t c = 0; c < tree.comments.size(); ++c) {
    bool open = !regions_.empty() && regions_.back().on == UINT32_MAX;
    if (!open && isOffComment(c))
      regions_.push_back({c, UINT32_MAX});
    else if (open && isOnComment(c))
      regions_.back().on = c;
  }
  // Rules make about three documents a token.
  arena_.reserve(arena_.size() + tree.tokens.size() * 3 + tree.comments.size() * 2);
  for (const auto &[kind, rule] : rules.byKind)
    if (kind >= 0 && kind < 4096) {
      if (ruleByKind_.size() <= static_cast<size_t>(kind))
        ruleByKind_.resize(kind + 1, nullptr);
      ruleByKind_[kind] = rule;
    }
}

Doc FormatContext::node(uint32_t index) {
  const SyntaxNode &n = tree_.nodes[index];
  Rule rule = nullptr;
  if (n.kind >= 0 && static_cast<size_t>(n.kind) < ruleByKind_.size())
    rule = ruleByKind_[n.kind];
  else if (auto it = rules_.byKind.find(n.kind); it != rules_.byKind.end())
    rule = it->second;
  if (!rule)
    rule = rules_.fallback;
  bool defer = n.firstToken <= n.lastToken && !trailingDeferred_[n.lastToken] &&
               tree_.tokens[n.lastToken].trailEnd > tree_.tokens[n.lastToken].trailBegin;
  if (!defer)
    return rule(*this, index);
  trailingDeferred_[n.lastToken] = 1;
  Doc body = rule(*this, index);
  return arena_.concat({body, trailingComments(n.lastToken)});
}

Doc FormatContext::child(SyntaxChild c) { return c.isNode ? node(c.index) : token(c.index); }

uint32_t FormatContext::firstToken(SyntaxChild c) const {
  return c.isNode ? tree_.nodes[c.index].firstToken : c.index;
}

uint32_t FormatContext::lastToken(SyntaxChild c) const {
  return c.isNode ? tree_.nodes[c.index].lastToken : c.index;
}

int FormatContext::kindOf(SyntaxChild c) const {
  return c.isNode ? tree_.nodes[c.index].kind : tree_.tokens[c.index].kind;
}

llvm::ArrayRef<SyntaxChild> FormatContext::childrenOf(uint32_t node) const {
  return llvm::ArrayRef<SyntaxChild>(tree_.childrenOf(node), tree_.nodes[node].childCount);
}

Doc FormatContext::commentText(uint32_t comment) {
  ++commentUses_[comment];
  if (hasOffRegions())
    return arena_.markedText(tree_.text(tree_.comments[comment]), commentMark(comment));
  return arena_.text(tree_.text(tree_.comments[comment]));
}

Doc FormatContext::commentSuffix(uint32_t comment) {
  ++commentUses_[comment];
  std::string text = (" " + tree_.text(tree_.comments[comment])).str();
  if (hasOffRegions())
    return arena_.markedLineSuffix(text, commentMark(comment));
  return arena_.lineSuffix(text);
}

bool FormatContext::endsWithLineComment(uint32_t index) const {
  const Token &t = tree_.tokens[index];
  for (uint32_t c = t.trailBegin; c < t.trailEnd; ++c)
    if (tree_.comments[c].isLine) // a block comment may be followed by anything
      return true;
  return false;
}

Doc FormatContext::gapAfter(uint32_t prev, Doc normal) {
  if (prev != UINT32_MAX && endsWithLineComment(prev))
    return arena_.indent(arena_.hardline());
  return normal;
}

bool FormatContext::hasLeadingComments(uint32_t index) const {
  const Token &t = tree_.tokens[index];
  for (uint32_t c = t.leadBegin; c < t.trailBegin; ++c)
    if (!commentUses_[c])
      return true;
  return false;
}

Doc FormatContext::leadingComments(uint32_t index) {
  const Token &t = tree_.tokens[index];
  llvm::SmallVector<Doc, 16> parts;
  int prev = -1;
  for (uint32_t c = t.leadBegin; c < t.trailBegin; ++c) {
    if (commentUses_[c])
      continue;
    const Comment &cm = tree_.comments[c];
    if (prev < 0) {
      // A comment on its own line stays on its own line, even where the
      // rule put no line break before the token.
      if (cm.ownLine)
        parts.push_back(arena_.freshline());
    } else if (tree_.comments[prev].newlineAfter || cm.ownLine) {
      parts.push_back(arena_.hardline());
      if (cm.blankBefore)
        parts.push_back(arena_.hardline());
    } else {
      parts.push_back(arena_.text(" "));
    }
    parts.push_back(commentText(c));
    prev = static_cast<int>(c);
  }
  return arena_.concat(parts);
}

Doc FormatContext::avoidSharedLine(uint32_t index) {
  // A comment printed while another is held for the end of the line would
  // come out of order, or merge into a line comment (`x // a // b`): before
  // a token with comments, a boundary ends the line if something is held.
  // It costs nothing where the layout breaks the line anyway.
  const Token &t = tree_.tokens[index];
  return t.trailEnd > t.leadBegin ? arena_.lineSuffixBoundary() : Doc{};
}

Doc FormatContext::token(uint32_t index) {
  const Token &t = tree_.tokens[index];
  if (t.leadBegin == t.trailEnd && !hasOffRegions()) { // most tokens: no comments
    ++tokenUses_[index];
    return arena_.text(tree_.text(t));
  }
  llvm::SmallVector<Doc, 16> parts{avoidSharedLine(index)};
  // The last leading comment decides how the token follows it.
  int last = -1;
  for (uint32_t c = t.leadBegin; c < t.trailBegin; ++c)
    if (!commentUses_[c])
      last = static_cast<int>(c);
  if (last >= 0) {
    bool lineAfter = tree_.comments[last].newlineAfter;
    parts.push_back(leadingComments(index));
    if (lineAfter) {
      parts.push_back(arena_.hardline());
      if (t.blankBefore)
        parts.push_back(arena_.hardline());
    } else {
      parts.push_back(arena_.text(" "));
    }
  }
  parts.push_back(hasOffRegions() && t.length ? arena_.markedText(tree_.text(t), tokenMark(index))
                                              : arena_.text(tree_.text(t)));
  ++tokenUses_[index];
  if (!trailingDeferred_[index])
    parts.push_back(trailingComments(index));
  return arena_.concat(parts);
}

Doc FormatContext::trailingComments(uint32_t index) {
  const Token &t = tree_.tokens[index];
  llvm::SmallVector<Doc, 16> parts;
  for (uint32_t c = t.trailBegin; c < t.trailEnd; ++c) {
    if (commentUses_[c])
      continue;
    const Comment &cm = tree_.comments[c];
    // A block comment stays in the text whatever follows it in the input:
    // treating one that ended its line differently would make the result
    // depend on the previous layout, and a second pass differ.
    if (!cm.isLine) {
      parts.push_back(arena_.text(" "));
      parts.push_back(commentText(c));
    } else {
      parts.push_back(commentSuffix(c));
      parts.push_back(arena_.breakParent());
    }
  }
  return arena_.concat(parts);
}

Doc FormatContext::dropToken(uint32_t index) {
  // Printing the token and then taking its text back out would be fragile;
  // instead print its comments around an empty text.
  const Token &t = tree_.tokens[index];
  llvm::SmallVector<Doc, 16> parts{avoidSharedLine(index)};
  if (hasLeadingComments(index)) {
    parts.push_back(leadingComments(index));
    parts.push_back(arena_.breakParent());
    // With no token text between them, the trailing comments would be held
    // for the end of the last leading comment's line, inside it if it is a
    // line comment.
    if (t.trailEnd > t.trailBegin)
      parts.push_back(arena_.hardline());
  }
  ++tokenUses_[index];
  for (uint32_t c = t.trailBegin; c < t.trailEnd; ++c) {
    if (commentUses_[c])
      continue;
    parts.push_back(commentSuffix(c));
    parts.push_back(arena_.breakParent());
  }
  return arena_.concat(parts);
}

static llvm::StringRef commentBody(llvm::StringRef text) {
  return text.ltrim("/*# \t").rtrim("*/ \t");
}

bool FormatContext::isOffComment(uint32_t comment) const {
  return commentBody(tree_.text(tree_.comments[comment])) == "lpufmt: off";
}

bool FormatContext::isOnComment(uint32_t comment) const {
  return commentBody(tree_.text(tree_.comments[comment])) == "lpufmt: on";
}

Doc FormatContext::lines(llvm::ArrayRef<SyntaxChild> items, uint32_t closeToken,
                         const std::vector<uint32_t> *separators) {
  llvm::SmallVector<Doc, 16> parts;
  auto firstPieceBlank = [&](uint32_t tok) {
    const Token &t = tree_.tokens[tok];
    for (uint32_t c = t.leadBegin; c < t.trailBegin; ++c)
      if (!commentUses_[c])
        return tree_.comments[c].blankBefore;
    return t.blankBefore;
  };
  auto separate = [&](uint32_t tok) {
    if (parts.empty())
      return;
    parts.push_back(arena_.hardline());
    if (firstPieceBlank(tok))
      parts.push_back(arena_.hardline());
  };
  for (size_t i = 0; i < items.size(); ++i) {
    uint32_t first = firstToken(items[i]);
    if (first == UINT32_MAX) {
      parts.push_back(child(items[i]));
      continue;
    }
    separate(first);
    parts.push_back(child(items[i]));
    if (separators && (*separators)[i] != UINT32_MAX)
      parts.push_back(token((*separators)[i]));
  }
  if (closeToken != UINT32_MAX && hasLeadingComments(closeToken)) {
    separate(closeToken);
    parts.push_back(leadingComments(closeToken));
  }
  return arena_.concat(parts);
}

bool FormatContext::spliceOffRegions(std::string &output, const std::vector<uint32_t> &markEnds,
                                     std::string &details) const {
  // Every printed token and comment in source order, with where it landed.
  struct Item {
    uint32_t offset, length; // in the source
    uint32_t outBegin, outEnd;
    bool isComment;
    uint32_t index;
  };
  std::vector<Item> items;
  items.reserve(tree_.tokens.size() + tree_.comments.size());
  auto add = [&](uint32_t offset, uint32_t length, uint32_t mark, bool isComment, uint32_t index) {
    uint32_t end = mark < markEnds.size() ? markEnds[mark] : UINT32_MAX;
    if (end != UINT32_MAX && end >= length) // dropped tokens were not printed
      items.push_back({offset, length, end - length, end, isComment, index});
  };
  size_t c = 0;
  for (uint32_t t = 0; t < tree_.tokens.size(); ++t) {
    const Token &tok = tree_.tokens[t];
    for (; c < tree_.comments.size() && tree_.comments[c].offset < tok.offset; ++c)
      add(tree_.comments[c].offset, tree_.comments[c].length, commentMark(c), true, c);
    if (tok.length)
      add(tok.offset, tok.length, tokenMark(t), false, t);
  }
  for (; c < tree_.comments.size(); ++c)
    add(tree_.comments[c].offset, tree_.comments[c].length, commentMark(c), true, c);
  std::vector<size_t> itemOfComment(tree_.comments.size(), items.size());
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].isComment)
      itemOfComment[items[i].index] = i;
  auto find = [&](uint32_t comment) { return itemOfComment[comment]; };

  // A region is items [first, last]. The style may move a token across a
  // region's edge (`x // lpufmt: on` then `, y` prints as `x, // ...`): the
  // region then grows until no item outside it lands inside its output.
  struct Span {
    size_t first, last;
    uint32_t outBegin, outEnd;
    bool toEnd;
  };
  std::vector<Span> spans;
  for (const OffRegion &r : regions_) {
    size_t first = find(r.off);
    size_t last = r.on == UINT32_MAX ? items.size() - 1 : find(r.on);
    if (first >= items.size() || last >= items.size()) {
      details = "an 'lpufmt: off' or 'lpufmt: on' comment was not printed";
      return false;
    }
    Span s{first, last, UINT32_MAX, 0, r.on == UINT32_MAX};
    if (!spans.empty() && s.first <= spans.back().last) { // grown into the previous one
      spans.back().last = std::max(spans.back().last, s.last);
      spans.back().toEnd |= s.toEnd;
    } else {
      spans.push_back(s);
    }
    for (bool grown = true; grown;) {
      Span &sp = spans.back();
      grown = false;
      for (size_t i = sp.first; i <= sp.last; ++i) {
        sp.outBegin = std::min(sp.outBegin, items[i].outBegin);
        sp.outEnd = std::max(sp.outEnd, items[i].outEnd);
      }
      while (sp.first > 0 && items[sp.first - 1].outEnd > sp.outBegin) {
        --sp.first;
        grown = true;
      }
      while (sp.last + 1 < items.size() && items[sp.last + 1].outBegin < sp.outEnd) {
        ++sp.last;
        grown = true;
      }
      if (grown && spans.size() > 1 && sp.first <= spans[spans.size() - 2].last) {
        Span &prev = spans[spans.size() - 2];
        prev.last = std::max(prev.last, sp.last);
        prev.toEnd |= sp.toEnd;
        prev.outBegin = std::min(prev.outBegin, sp.outBegin);
        prev.outEnd = std::max(prev.outEnd, sp.outEnd);
        spans.pop_back();
      }
    }
  }

  std::string result;
  result.reserve(output.size());
  uint32_t done = 0; // output copied so far
  for (const Span &sp : spans) {
    uint32_t sourceBegin = items[sp.first].offset;
    uint32_t sourceEnd = sp.toEnd ? static_cast<uint32_t>(tree_.source.size())
                                  : items[sp.last].offset + items[sp.last].length;
    uint32_t outEnd = sp.toEnd ? static_cast<uint32_t>(output.size()) : sp.outEnd;
    if (sp.outBegin < done || outEnd < sp.outBegin) {
      details = "an 'lpufmt: off' region was not printed in order";
      return false;
    }
    result.append(output, done, sp.outBegin - done);
    result.append(tree_.source, sourceBegin, sourceEnd - sourceBegin);
    done = outEnd;
  }
  result.append(output, done, std::string::npos);
  output = std::move(result);
  return true;
}

bool FormatContext::verifyAllPrintedOnce(std::string &details) const {
  unsigned reported = 0;
  for (size_t i = 0; i < tokenUses_.size() && reported < 5; ++i)
    if (tokenUses_[i] != 1) {
      const Token &t = tree_.tokens[i];
      details += (llvm::Twine("token '") + tree_.text(t) + "' at " + llvm::Twine(t.line) + ":" +
                  llvm::Twine(t.column) + " printed " + llvm::Twine(unsigned(tokenUses_[i])) +
                  " times\n")
                     .str();
      ++reported;
    }
  for (size_t i = 0; i < commentUses_.size() && reported < 5; ++i)
    if (commentUses_[i] != 1) {
      details += (llvm::Twine("comment '") + tree_.text(tree_.comments[i]) + "' printed " +
                  llvm::Twine(unsigned(commentUses_[i])) + " times\n")
                     .str();
      ++reported;
    }
  return reported == 0;
}

} // namespace lpu::format
