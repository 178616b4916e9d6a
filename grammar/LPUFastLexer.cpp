// The hand-coded lexer of LPU.g4 (LPUFastLexer.h says why it exists).
#include "LPUFastLexer.h"

#include "LPULexer.h"
namespace lpu::grammar {

using lpu_antlr::LPULexer;

namespace {

bool isDigit(char32_t c) { return c >= '0' && c <= '9'; }
bool isHex(char32_t c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool isIdentStart(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isIdentChar(char32_t c) { return isIdentStart(c) || isDigit(c); }

/// Keywords by spelling; anything else that looks like a name is IDENT.
size_t keywordOrIdent(const char32_t *s, size_t n) {
  static const struct {
    const char *text;
    size_t type;
  } kKeywords[] = {
      {"import", LPULexer::IMPORT}, {"as", LPULexer::AS},         {"model", LPULexer::MODEL},
      {"param", LPULexer::PARAM},   {"fn", LPULexer::FN},         {"let", LPULexer::LET},
      {"var", LPULexer::VAR},       {"return", LPULexer::RETURN}, {"for", LPULexer::FOR},
      {"in", LPULexer::IN},         {"if", LPULexer::IF},         {"else", LPULexer::ELSE},
      {"entry", LPULexer::ENTRY},   {"where", LPULexer::WHERE},   {"const", LPULexer::CONST},
      {"assert", LPULexer::ASSERT}, {"true", LPULexer::TRUE},     {"false", LPULexer::FALSE},
      {"state", LPULexer::STATE},
  };
  if (n < 2 || n > 6)
    return LPULexer::IDENT;
  for (const auto &k : kKeywords) {
    size_t i = 0;
    while (i < n && k.text[i] && static_cast<char32_t>(k.text[i]) == s[i])
      ++i;
    if (i == n && k.text[i] == 0)
      return k.type;
  }
  return LPULexer::IDENT;
}

} // namespace

FastLexer::FastLexer(const std::u32string &text, antlr4::CharStream *input)
    : text_(text), input_(input) {}

size_t FastLexer::getCharPositionInLine() { return pos_ - lineStart_; }

antlr4::CharStream *FastLexer::getInputStream() { return input_; }

std::string FastLexer::getSourceName() { return input_->getSourceName(); }

antlr4::TokenFactory<antlr4::CommonToken> *FastLexer::getTokenFactory() {
  return antlr4::CommonTokenFactory::DEFAULT.get();
}

char32_t FastLexer::at(size_t i) const { return i < text_.size() ? text_[i] : 0; }

size_t FastLexer::digitsEnd(size_t i) const {
  if (!isDigit(at(i)))
    return 0;
  while (isDigit(at(i)) || at(i) == '_')
    ++i;
  return i;
}

size_t FastLexer::exponentEnd(size_t i) const {
  if (at(i) != 'e' && at(i) != 'E')
    return 0;
  ++i;
  if (at(i) == '+' || at(i) == '-')
    ++i;
  return digitsEnd(i);
}

/// The number rules of LPU.g4, each taken at its longest match; the longest
/// wins, and a tie goes to the rule written first (FLOAT, HEX_INT, INT,
/// BAD_NUMBER), exactly as ANTLR's lexer decides.
std::pair<size_t, size_t> FastLexer::number(size_t p) const {
  size_t d1 = digitsEnd(p);
  auto longer = [](size_t a, size_t b) { return a > b ? a : b; };

  size_t fl = 0; // FLOAT: DIGITS '.' DIGITS EXPONENT? | DIGITS EXPONENT
  if (at(d1) == '.' && isDigit(at(d1 + 1))) {
    size_t d2 = digitsEnd(d1 + 1);
    size_t e = exponentEnd(d2);
    fl = e ? e : d2;
  }
  fl = longer(fl, exponentEnd(d1));

  size_t hex = 0; // HEX_INT: '0' [xX] [0-9a-fA-F] [0-9a-fA-F_]*
  if (at(p) == '0' && (at(p + 1) == 'x' || at(p + 1) == 'X') && isHex(at(p + 2))) {
    hex = p + 3;
    while (isHex(at(hex)) || at(hex) == '_')
      ++hex;
  }

  size_t in = d1; // INT: DIGITS

  size_t bad = 0; // BAD_NUMBER, both alternatives
  auto signedE = [&](size_t i) -> size_t {
    if (at(i) != 'e' && at(i) != 'E')
      return 0;
    return (at(i + 1) == '+' || at(i + 1) == '-') ? i + 2 : i + 1;
  };
  bad = signedE(d1);
  if (at(d1) == '.' && isDigit(at(d1 + 1)))
    bad = longer(bad, signedE(digitsEnd(d1 + 1)));
  auto identEnd = [&](size_t i) {
    while (isIdentChar(at(i)))
      ++i;
    return i;
  };
  if (isIdentStart(at(d1)))
    bad = longer(bad, identEnd(d1));
  if (at(d1) == '.' && (isDigit(at(d1 + 1)) || at(d1 + 1) == '_')) {
    size_t b = d1 + 1;
    while (isDigit(at(b)) || at(b) == '_')
      ++b;
    if (isIdentStart(at(b)))
      bad = longer(bad, identEnd(b));
  }

  size_t best = fl;
  size_t type = LPULexer::FLOAT;
  if (hex > best) {
    best = hex;
    type = LPULexer::HEX_INT;
  }
  if (in > best) {
    best = in;
    type = LPULexer::INT;
  }
  if (bad > best) {
    best = bad;
    type = LPULexer::BAD_NUMBER;
  }
  return {type, best};
}

std::unique_ptr<antlr4::Token> FastLexer::make(size_t type, size_t begin, size_t end,
                                               size_t channel) {
  auto token = std::make_unique<antlr4::CommonToken>(std::make_pair(this, input_), type, channel,
                                                     begin, end - 1);
  token->setLine(line_);
  token->setCharPositionInLine(begin - lineStart_);
  // Block comments and unterminated strings may span lines.
  for (size_t i = begin; i < end; ++i)
    if (text_[i] == '\n') {
      ++line_;
      lineStart_ = i + 1;
    }
  pos_ = end;
  return token;
}

std::unique_ptr<antlr4::Token> FastLexer::nextToken() {
  // WS and NEWLINE: skipped here (the parser never sees them).
  while (pos_ < text_.size()) {
    char32_t c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
      ++pos_;
    } else if (c == '\n') {
      ++pos_;
      ++line_;
      lineStart_ = pos_;
    } else {
      break;
    }
  }
  size_t p = pos_;
  if (p >= text_.size()) {
    auto eof = std::make_unique<antlr4::CommonToken>(std::make_pair(this, input_),
                                                     antlr4::Token::EOF,
                                                     antlr4::Token::DEFAULT_CHANNEL, p, p - 1);
    eof->setLine(line_);
    eof->setCharPositionInLine(p - lineStart_);
    return eof;
  }
  constexpr size_t kHidden = antlr4::Token::HIDDEN_CHANNEL;
  char32_t c = text_[p];
  char32_t n = at(p + 1);

  if (isIdentStart(c)) {
    size_t e = p + 1;
    while (isIdentChar(at(e)))
      ++e;
    return make(keywordOrIdent(text_.data() + p, e - p), p, e);
  }
  if (isDigit(c)) {
    auto [type, end] = number(p);
    return make(type, p, end);
  }
  switch (c) {
  case '"': {
    size_t e = p + 1;
    while (e < text_.size()) {
      char32_t d = text_[e];
      if (d == '"')
        return make(LPULexer::STRING, p, e + 1);
      if (d == '\r' || d == '\n')
        break;
      if (d == '\\') {
        if (e + 1 >= text_.size() || text_[e + 1] == '\r' || text_[e + 1] == '\n')
          break;
        e += 2;
        continue;
      }
      ++e;
    }
    return make(LPULexer::UNTERMINATED_STRING, p, e);
  }
  case '/': {
    if (n == '/') {
      size_t e = p + 2;
      while (e < text_.size() && text_[e] != '\n' && text_[e] != '\r')
        ++e;
      return make(at(p + 2) == '/' ? LPULexer::DOC_COMMENT : LPULexer::LINE_COMMENT, p, e, kHidden);
    }
    if (n == '*') {
      for (size_t e = p + 2; e + 1 < text_.size(); ++e)
        if (text_[e] == '*' && text_[e + 1] == '/')
          return make(LPULexer::BLOCK_COMMENT, p, e + 2, kHidden);
      return make(LPULexer::UNTERMINATED_BLOCK_COMMENT, p, text_.size(), kHidden);
    }
    return make(LPULexer::SLASH, p, p + 1);
  }
  case '-': return n == '>' ? make(LPULexer::ARROW, p, p + 2) : make(LPULexer::MINUS, p, p + 1);
  case '.': return n == '.' ? make(LPULexer::DOTDOT, p, p + 2) : make(LPULexer::DOT, p, p + 1);
  case '=': return n == '=' ? make(LPULexer::EQ, p, p + 2) : make(LPULexer::ASSIGN, p, p + 1);
  case '!': return n == '=' ? make(LPULexer::NE, p, p + 2) : make(LPULexer::BANG, p, p + 1);
  case '<': return n == '=' ? make(LPULexer::LE, p, p + 2) : make(LPULexer::LT, p, p + 1);
  case '>': return n == '=' ? make(LPULexer::GE, p, p + 2) : make(LPULexer::GT, p, p + 1);
  case '*': return n == '*' ? make(LPULexer::POW, p, p + 2) : make(LPULexer::STAR, p, p + 1);
  case '|': return n == '|' ? make(LPULexer::OROR, p, p + 2) : make(LPULexer::STRAY, p, p + 1);
  case '&': return n == '&' ? make(LPULexer::ANDAND, p, p + 2) : make(LPULexer::STRAY, p, p + 1);
  case ',': return make(LPULexer::COMMA, p, p + 1);
  case ':': return make(LPULexer::COLON, p, p + 1);
  case '+': return make(LPULexer::PLUS, p, p + 1);
  case '%': return make(LPULexer::PERCENT, p, p + 1);
  case '@': return make(LPULexer::AT, p, p + 1);
  case '(': return make(LPULexer::LPAREN, p, p + 1);
  case ')': return make(LPULexer::RPAREN, p, p + 1);
  case '[': return make(LPULexer::LBRACK, p, p + 1);
  case ']': return make(LPULexer::RBRACK, p, p + 1);
  case '{': return make(LPULexer::LBRACE, p, p + 1);
  case '}': return make(LPULexer::RBRACE, p, p + 1);
  default: return make(LPULexer::STRAY, p, p + 1);
  }
}

} // namespace lpu::grammar
