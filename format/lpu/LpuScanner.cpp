// The byte-level lexer of the formatter's fast path (LpuScanner.h says why).
// It follows grammar/LPUFastLexer.cpp rule for rule; LpuParserTest compares
// the trees built from its tokens with the ANTLR path's on every repository
// file and on random inputs.
#include "format/lpu/LpuScanner.h"

#include "LPULexer.h"

namespace lpu::format {
namespace {

using L = lpu_antlr::LPULexer;

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isHex(char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

int keywordOrIdent(llvm::StringRef word) {
  static const struct {
    llvm::StringRef text;
    int type;
  } kKeywords[] = {
      {"import", L::IMPORT}, {"as", L::AS},         {"model", L::MODEL}, {"param", L::PARAM},
      {"fn", L::FN},         {"let", L::LET},       {"var", L::VAR},     {"return", L::RETURN},
      {"for", L::FOR},       {"in", L::IN},         {"if", L::IF},       {"else", L::ELSE},
      {"entry", L::ENTRY},   {"where", L::WHERE},   {"const", L::CONST}, {"assert", L::ASSERT},
      {"true", L::TRUE},     {"false", L::FALSE},   {"state", L::STATE},
  };
  if (word.size() < 2 || word.size() > 6)
    return L::IDENT;
  for (const auto &k : kKeywords)
    if (k.text == word)
      return k.type;
  return L::IDENT;
}

/// Whether `s` is well-formed UTF-8 (what ANTLR's decoder accepts without
/// complaint); anything else goes to the ANTLR path.
bool wellFormedUtf8(llvm::StringRef s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (n == 0 || c >= 0xF8 || i + n > s.size())
      return false;
    uint32_t cp = c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n;
  }
  return true;
}

class Scanner {
public:
  explicit Scanner(llvm::StringRef s) : s_(s) {}

  char at(size_t i) const { return i < s_.size() ? s_[i] : 0; }

  size_t digitsEnd(size_t i) const {
    if (!isDigit(at(i)))
      return 0;
    while (isDigit(at(i)) || at(i) == '_')
      ++i;
    return i;
  }

  size_t exponentEnd(size_t i) const {
    if (at(i) != 'e' && at(i) != 'E')
      return 0;
    ++i;
    if (at(i) == '+' || at(i) == '-')
      ++i;
    return digitsEnd(i);
  }

  /// FLOAT, HEX_INT, INT or BAD_NUMBER at `p`, longest match, ties to the
  /// rule written first (as FastLexer::number).
  std::pair<int, size_t> number(size_t p) const {
    size_t d1 = digitsEnd(p);
    size_t fl = 0;
    if (at(d1) == '.' && isDigit(at(d1 + 1))) {
      size_t d2 = digitsEnd(d1 + 1);
      size_t e = exponentEnd(d2);
      fl = e ? e : d2;
    }
    fl = std::max(fl, exponentEnd(d1));
    size_t hex = 0;
    if (at(p) == '0' && (at(p + 1) == 'x' || at(p + 1) == 'X') && isHex(at(p + 2))) {
      hex = p + 3;
      while (isHex(at(hex)) || at(hex) == '_')
        ++hex;
    }
    size_t bad = 0;
    auto signedE = [&](size_t i) -> size_t {
      if (at(i) != 'e' && at(i) != 'E')
        return 0;
      return (at(i + 1) == '+' || at(i + 1) == '-') ? i + 2 : i + 1;
    };
    bad = signedE(d1);
    if (at(d1) == '.' && isDigit(at(d1 + 1)))
      bad = std::max(bad, signedE(digitsEnd(d1 + 1)));
    auto identEnd = [&](size_t i) {
      while (isIdentChar(at(i)))
        ++i;
      return i;
    };
    if (isIdentStart(at(d1)))
      bad = std::max(bad, identEnd(d1));
    if (at(d1) == '.' && (isDigit(at(d1 + 1)) || at(d1 + 1) == '_')) {
      size_t b = d1 + 1;
      while (isDigit(at(b)) || at(b) == '_')
        ++b;
      if (isIdentStart(at(b)))
        bad = std::max(bad, identEnd(b));
    }
    std::pair<int, size_t> best{L::FLOAT, fl};
    if (hex > best.second)
      best = {L::HEX_INT, hex};
    if (d1 > best.second)
      best = {L::INT, d1};
    if (bad > best.second)
      best = {L::BAD_NUMBER, bad};
    return best;
  }

  /// The token at `p` (not whitespace): {type, end}; type 0 for an error.
  std::pair<int, size_t> token(size_t p) const {
    char c = s_[p];
    char n = at(p + 1);
    if (isIdentStart(c)) {
      size_t e = p + 1;
      while (isIdentChar(at(e)))
        ++e;
      return {keywordOrIdent(s_.slice(p, e)), e};
    }
    if (isDigit(c)) {
      auto [type, end] = number(p);
      return {type == L::BAD_NUMBER ? 0 : type, end};
    }
    switch (c) {
    case '"':
      for (size_t e = p + 1; e < s_.size();) {
        char d = s_[e];
        if (d == '"')
          return {L::STRING, e + 1};
        if (d == '\r' || d == '\n')
          break;
        if (d == '\\') {
          if (e + 1 >= s_.size() || s_[e + 1] == '\r' || s_[e + 1] == '\n')
            break;
          e += 2;
          continue;
        }
        ++e;
      }
      return {0, p};
    case '/':
      if (n == '/') {
        size_t e = p + 2;
        while (e < s_.size() && s_[e] != '\n' && s_[e] != '\r')
          ++e;
        return {at(p + 2) == '/' ? L::DOC_COMMENT : L::LINE_COMMENT, e};
      }
      if (n == '*') {
        size_t close = s_.find("*/", p + 2);
        return close == llvm::StringRef::npos ? std::pair<int, size_t>{0, p}
                                              : std::pair<int, size_t>{L::BLOCK_COMMENT, close + 2};
      }
      return {L::SLASH, p + 1};
    case '-': return n == '>' ? std::pair<int, size_t>{L::ARROW, p + 2} : std::pair<int, size_t>{L::MINUS, p + 1};
    case '.': return n == '.' ? std::pair<int, size_t>{L::DOTDOT, p + 2} : std::pair<int, size_t>{L::DOT, p + 1};
    case '=': return n == '=' ? std::pair<int, size_t>{L::EQ, p + 2} : std::pair<int, size_t>{L::ASSIGN, p + 1};
    case '!': return n == '=' ? std::pair<int, size_t>{L::NE, p + 2} : std::pair<int, size_t>{L::BANG, p + 1};
    case '<': return n == '=' ? std::pair<int, size_t>{L::LE, p + 2} : std::pair<int, size_t>{L::LT, p + 1};
    case '>': return n == '=' ? std::pair<int, size_t>{L::GE, p + 2} : std::pair<int, size_t>{L::GT, p + 1};
    case '*': return n == '*' ? std::pair<int, size_t>{L::POW, p + 2} : std::pair<int, size_t>{L::STAR, p + 1};
    case '|': return {n == '|' ? L::OROR : 0, p + 2};
    case '&': return {n == '&' ? L::ANDAND : 0, p + 2};
    case ',': return {L::COMMA, p + 1};
    case ':': return {L::COLON, p + 1};
    case '+': return {L::PLUS, p + 1};
    case '%': return {L::PERCENT, p + 1};
    case '@': return {L::AT, p + 1};
    case '(': return {L::LPAREN, p + 1};
    case ')': return {L::RPAREN, p + 1};
    case '[': return {L::LBRACK, p + 1};
    case ']': return {L::RBRACK, p + 1};
    case '{': return {L::LBRACE, p + 1};
    case '}': return {L::RBRACE, p + 1};
    default: return {0, p}; // a stray character
    }
  }

private:
  llvm::StringRef s_;
};

RawToken::Category categoryOf(int type) {
  switch (type) {
  case L::LINE_COMMENT:
  case L::DOC_COMMENT: return RawToken::LineComment;
  case L::BLOCK_COMMENT: return RawToken::BlockComment;
  default: return RawToken::Significant;
  }
}

} // namespace

bool scanLpu(llvm::StringRef source, llvm::function_ref<bool(const RawToken &)> emit) {
  if (!wellFormedUtf8(source))
    return false;
  Scanner scanner(source);
  size_t p = 0;
  while (p < source.size()) {
    size_t ws = p;
    while (p < source.size() &&
           (source[p] == ' ' || source[p] == '\t' || source[p] == '\f' || source[p] == '\r' ||
            source[p] == '\n'))
      ++p;
    if (p > ws &&
        !emit({0, RawToken::Whitespace, static_cast<uint32_t>(ws), static_cast<uint32_t>(p - ws)}))
      return false;
    if (p >= source.size())
      break;
    auto [type, end] = scanner.token(p);
    if (type == 0 ||
        !emit({type, categoryOf(type), static_cast<uint32_t>(p), static_cast<uint32_t>(end - p)}))
      return false;
    p = end;
  }
  return emit({-1, RawToken::Significant, static_cast<uint32_t>(source.size()), 0});
}

bool scanLpu(llvm::StringRef source, std::vector<RawToken> &raw) {
  return scanLpu(source, [&](const RawToken &r) {
    raw.push_back(r);
    return true;
  });
}

} // namespace lpu::format
