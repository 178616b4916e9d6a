#include "format/json/JsonLanguage.h"

#include <llvm/ADT/StringExtras.h>

#include <cstdio>
#include <cstring>

namespace lpu::format {
namespace {

using namespace json;

struct Lexer {
  llvm::StringRef src;
  size_t pos = 0;
  std::vector<RawToken> raw;
  std::vector<SyntaxError> &errors;

  void error(size_t offset, const std::string &message) {
    SyntaxError e;
    e.line = 1;
    e.column = 1;
    for (size_t k = 0; k < offset; ++k) {
      if (src[k] == '\n') {
        ++e.line;
        e.column = 1;
      } else {
        ++e.column;
      }
    }
    e.message = message;
    errors.push_back(e);
  }

  void push(int kind, RawToken::Category cat, size_t begin) {
    raw.push_back({kind, cat, static_cast<uint32_t>(begin), static_cast<uint32_t>(pos - begin)});
  }

  bool number(size_t begin) {
    // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    auto digits = [&] {
      size_t s = pos;
      while (pos < src.size() && llvm::isDigit(src[pos]))
        ++pos;
      return pos > s;
    };
    if (src[pos] == '-')
      ++pos;
    if (pos < src.size() && src[pos] == '0')
      ++pos;
    else if (!digits())
      return false;
    if (pos < src.size() && src[pos] == '.') {
      ++pos;
      if (!digits())
        return false;
    }
    if (pos < src.size() && (src[pos] == 'e' || src[pos] == 'E')) {
      ++pos;
      if (pos < src.size() && (src[pos] == '+' || src[pos] == '-'))
        ++pos;
      if (!digits())
        return false;
    }
    // A number run into letters or digits ("01", "1x") is malformed.
    if (pos < src.size() && (llvm::isAlnum(src[pos]) || src[pos] == '.'))
      return false;
    push(Number, RawToken::Significant, begin);
    return true;
  }

  bool run() {
    while (pos < src.size()) {
      size_t begin = pos;
      char c = src[pos];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        while (pos < src.size() && llvm::StringRef(" \t\n\r").contains(src[pos]))
          ++pos;
        push(0, RawToken::Whitespace, begin);
      } else if (src.substr(pos).startswith("//")) {
        while (pos < src.size() && src[pos] != '\n' && src[pos] != '\r')
          ++pos;
        push(0, RawToken::LineComment, begin);
      } else if (src.substr(pos).startswith("/*")) {
        size_t end = src.find("*/", pos + 2);
        if (end == llvm::StringRef::npos) {
          error(begin, "unterminated block comment");
          return false;
        }
        pos = end + 2;
        push(0, RawToken::BlockComment, begin);
      } else if (c == '"') {
        ++pos;
        while (pos < src.size() && src[pos] != '"') {
          if (static_cast<unsigned char>(src[pos]) < 0x20) {
            error(pos, "control character in a string");
            return false;
          }
          pos += src[pos] == '\\' ? 2 : 1;
        }
        if (pos >= src.size()) {
          error(begin, "unterminated string");
          return false;
        }
        ++pos;
        push(String, RawToken::Significant, begin);
      } else if (c == '-' || llvm::isDigit(c)) {
        if (!number(begin)) {
          error(begin, "malformed number");
          return false;
        }
      } else if (llvm::isAlpha(c)) {
        while (pos < src.size() && llvm::isAlnum(src[pos]))
          ++pos;
        llvm::StringRef word = src.slice(begin, pos);
        if (word != "true" && word != "false" && word != "null") {
          error(begin, "unexpected word '" + word.str() + "'");
          return false;
        }
        push(Keyword, RawToken::Significant, begin);
      } else {
        static const char punct[] = "{}[]:,";
        const char *p = std::strchr(punct, c);
        if (!p || c == 0) {
          char shown[8];
          std::snprintf(shown, sizeof shown, llvm::isPrint(c) ? "%c" : "\\x%02X",
                        static_cast<unsigned char>(c));
          error(begin, std::string("unexpected character '") + shown + "'");
          return false;
        }
        ++pos;
        push(LBrace + static_cast<int>(p - punct), RawToken::Significant, begin);
      }
    }
    push(Eof, RawToken::Significant, pos);
    return true;
  }
};

class Parser {
public:
  Parser(SyntaxTree &tree, std::vector<SyntaxError> &errors)
      : tree_(tree), build_(tree), errors_(errors) {}

  bool document() {
    size_t mark = build_.start();
    if (!value())
      return false;
    if (peek() != Eof)
      return fail("expected the end of the file after the value");
    build_.addToken(next_++);
    tree_.root = build_.finish(mark, Document);
    return true;
  }

private:
  int peek() const { return tree_.tokens[next_].kind; }

  bool fail(const std::string &message) {
    const Token &t = tree_.tokens[next_];
    errors_.push_back({t.line, t.column, message});
    return false;
  }

  bool expect(int kind, const char *what) {
    if (peek() != kind)
      return fail(std::string("expected ") + what);
    build_.addToken(next_++);
    return true;
  }

  bool value() {
    if (++depth_ > 512)
      return fail("nesting is too deep");
    bool ok = valueBody();
    --depth_;
    return ok;
  }

  bool valueBody() {
    switch (peek()) {
    case String:
    case Number:
    case Keyword:
      build_.addToken(next_++);
      return true;
    case LBrace: {
      size_t mark = build_.start();
      build_.addToken(next_++);
      if (peek() != RBrace) {
        do {
          size_t member = build_.start();
          if (!expect(String, "a string key") || !expect(Colon, "':'") || !value())
            return false;
          build_.finish(member, Member);
        } while (peek() == Comma && (build_.addToken(next_++), true));
      }
      if (!expect(RBrace, "',' or '}'"))
        return false;
      build_.finish(mark, Object);
      return true;
    }
    case LBrack: {
      size_t mark = build_.start();
      build_.addToken(next_++);
      if (peek() != RBrack) {
        do {
          if (!value())
            return false;
        } while (peek() == Comma && (build_.addToken(next_++), true));
      }
      if (!expect(RBrack, "',' or ']'"))
        return false;
      build_.finish(mark, Array);
      return true;
    }
    default:
      return fail("expected a value");
    }
  }

  SyntaxTree &tree_;
  SyntaxTreeBuilder build_;
  std::vector<SyntaxError> &errors_;
  uint32_t next_ = 0;
  int depth_ = 0;
};

bool parseJson(SyntaxTree &tree, std::vector<SyntaxError> &errors) {
  Lexer lexer{tree.source, 0, {}, errors};
  if (!lexer.run())
    return false;
  attachTrivia(tree, lexer.raw);
  tree.nodes.clear();
  tree.children.clear();
  return Parser(tree, errors).document();
}

// ---------------------------------------------------------------- rules

Doc documentRule(FormatContext &cx, uint32_t node) {
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  uint32_t eof = kids.back().index;
  DocArena &d = cx.doc();
  return d.concat({cx.lines({kids[0]}, eof), cx.token(eof), d.hardline()});
}

/// Objects and arrays: the elements (every other child, commas between).
Doc containerRule(FormatContext &cx, uint32_t node, bool alwaysBreak) {
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  DocArena &d = cx.doc();
  uint32_t open = kids.front().index, close = kids.back().index;
  if (kids.size() == 2 && !cx.hasLeadingComments(close) && !cx.endsWithLineComment(open))
    return d.concat({cx.token(open), cx.token(close)});
  std::vector<SyntaxChild> items;
  std::vector<uint32_t> commas;
  for (size_t k = 1; k + 1 < kids.size(); k += 2) {
    items.push_back(kids[k]);
    commas.push_back(k + 2 < kids.size() ? kids[k + 1].index : UINT32_MAX);
  }
  Doc body;
  if (alwaysBreak) {
    body = cx.lines(items, close, &commas);
  } else {
    llvm::SmallVector<Doc, 16> parts;
    for (size_t k = 0; k < items.size(); ++k) {
      parts.push_back(cx.child(items[k]));
      if (commas[k] != UINT32_MAX)
        parts.push_back(d.concat({cx.token(commas[k]), d.line()}));
    }
    if (cx.hasLeadingComments(close))
      parts.push_back(cx.leadingComments(close));
    body = d.concat(parts);
  }
  Doc open0 = cx.token(open);
  Doc line = alwaysBreak ? d.hardline() : d.softline();
  return d.group(d.concat({open0, d.indent(d.concat({line, body})), line, cx.token(close)}));
}

Doc objectRule(FormatContext &cx, uint32_t node) { return containerRule(cx, node, true); }
Doc arrayRule(FormatContext &cx, uint32_t node) { return containerRule(cx, node, false); }

Doc memberRule(FormatContext &cx, uint32_t node) {
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  DocArena &d = cx.doc();
  return d.concat({cx.child(kids[0]), cx.gapAfter(kids[0].index, Doc{}), cx.child(kids[1]),
                   cx.gapAfter(kids[1].index, d.text(" ")), cx.child(kids[2])});
}

Doc fallbackRule(FormatContext &cx, uint32_t node) {
  llvm::SmallVector<Doc, 16> parts;
  for (SyntaxChild c : cx.childrenOf(node))
    parts.push_back(cx.child(c));
  return cx.doc().concat(parts);
}

const RuleTable &jsonRules() {
  static const RuleTable table{
      {{Document, documentRule}, {Object, objectRule}, {Array, arrayRule}, {Member, memberRule}},
      fallbackRule};
  return table;
}

} // namespace

const Language &jsonLanguage() {
  static const Language language{"json", {"json", "jsonc"}, parseJson, jsonRules, nullptr};
  return language;
}

} // namespace lpu::format
