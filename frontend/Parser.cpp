// The parser driver: UTF-8 decoding, the lexical pass, ANTLR in two stages
// (fast SLL first, full LL with our error strategy only when that fails), and
// syntax errors in our own words.
#include "frontend/Parser.h"

#include "frontend/ParserInternals.h"

#include "LPULexer.h"
#include "LPUParser.h"

#include <llvm/ADT/APFloat.h>
#include <llvm/ADT/APInt.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/BuryPointer.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

namespace lpu {

using lpu_antlr::LPULexer;
using lpu_antlr::LPUParser;

namespace detail {

SourceText::SourceText(llvm::StringRef buffer) : buffer_(buffer) {
  bool ascii = std::all_of(buffer.begin(), buffer.end(),
                           [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  codePoints_.reserve(buffer.size());
  if (ascii) {
    codePoints_.assign(buffer.begin(), buffer.end());
    return;
  }
  byteOffsets_.reserve(buffer.size() + 1);
  const auto *s = reinterpret_cast<const unsigned char *>(buffer.data());
  size_t n = buffer.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    unsigned len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    char32_t cp = 0xFFFD;
    bool ok = len != 0 && i + len <= n;
    if (ok) {
      cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (unsigned k = 1; k < len; ++k) {
        if ((s[i + k] & 0xC0) != 0x80) {
          ok = false;
          break;
        }
        cp = (cp << 6) | (s[i + k] & 0x3F);
      }
      // Overlong forms, surrogates and values past U+10FFFF are invalid too.
      static const char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      if (ok && (cp < kMin[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF))
        ok = false;
    }
    if (!ok) {
      invalidOffsets_.push_back(i);
      cp = 0xFFFD;
      len = 1;
    }
    codePoints_.push_back(cp);
    byteOffsets_.push_back(i);
    i += len;
  }
  byteOffsets_.push_back(n);
}

std::string decodeStringLiteral(llvm::StringRef quoted) {
  llvm::StringRef body = quoted;
  if (body.startswith("\""))
    body = body.drop_front();
  if (body.endswith("\"") && !body.endswith("\\\""))
    body = body.drop_back();
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out.push_back(body[i]);
      continue;
    }
    char e = body[++i];
    switch (e) {
    case 'n': out.push_back('\n'); break;
    case 't': out.push_back('\t'); break;
    case '\\': out.push_back('\\'); break;
    case '"': out.push_back('"'); break;
    default: out.push_back('\\'); out.push_back(e); break;
    }
  }
  return out;
}

} // namespace detail

namespace {

using detail::Locator;
using detail::SourceText;

/// Feeds ANTLR our own decoding of the buffer, so that invalid UTF-8 is a
/// diagnostic rather than an exception inside the runtime.
class CodePointStream : public antlr4::ANTLRInputStream {
public:
  CodePointStream(const std::u32string &codePoints, std::string sourceName) {
    _data = codePoints;
    name = std::move(sourceName);
  }
};

/// Describes tokens and expected sets for messages.
class TokenWords {
public:
  explicit TokenWords(const antlr4::dfa::Vocabulary &vocabulary) : vocabulary_(vocabulary) {}

  std::string found(const antlr4::Token *t, const Locator &locator) const {
    if (!t || t->getType() == antlr4::Token::EOF)
      return "end of file";
    std::string text = locator.text(t).str();
    switch (t->getType()) {
    case LPULexer::IDENT: return "name '" + text + "'";
    case LPULexer::INT:
    case LPULexer::HEX_INT:
    case LPULexer::FLOAT:
    case LPULexer::BAD_NUMBER: return "number '" + text + "'";
    case LPULexer::STRING:
    case LPULexer::UNTERMINATED_STRING: return "a string";
    default: break;
    }
    if (isKeyword(t->getType()))
      return "keyword '" + text + "'";
    return "'" + text + "'";
  }

  std::string expected(size_t type) const {
    switch (type) {
    case antlr4::Token::EOF: return "end of file";
    case LPULexer::IDENT: return "a name";
    case LPULexer::INT:
    case LPULexer::HEX_INT: return "an integer";
    case LPULexer::FLOAT: return "a float";
    case LPULexer::STRING: return "a string";
    default: return vocabulary_.getLiteralName(type);
    }
  }

  static bool isKeyword(size_t type) { return type >= LPULexer::IMPORT && type <= LPULexer::FALSE; }

private:
  const antlr4::dfa::Vocabulary &vocabulary_;
};

/// What to call the thing a rule was parsing, for "expected X" when the set
/// of expected tokens is too large to list.
const char *ruleWords(size_t rule) {
  switch (rule) {
  case LPUParser::RuleModule:
  case LPUParser::RuleItem: return "a declaration (import, const, fn, model or entry)";
  case LPUParser::RuleModelMember: return "a model member (param, fn or const)";
  case LPUParser::RuleBlock:
  case LPUParser::RuleStmt: return "a statement";
  case LPUParser::RuleTypeExpr:
  case LPUParser::RuleDims:
  case LPUParser::RuleFnDecl: // only its result wants a whole construct
  case LPUParser::RuleResultTuple:
  case LPUParser::RuleResultField: return "a type";
  case LPUParser::RuleDim:
  case LPUParser::RuleSizeExpr:
  case LPUParser::RuleConstraint: return "a size expression";
  case LPUParser::RuleGenericArgs:
  case LPUParser::RuleGenericArg:
  case LPUParser::RuleGenericValue: return "a generic argument";
  case LPUParser::RuleGenericParams:
  case LPUParser::RuleGenericParam: return "a generic parameter";
  case LPUParser::RuleFnParam: return "a parameter";
  case LPUParser::RuleCallArg: return "an argument";
  case LPUParser::RuleIndexItem: return "an index or slice";
  default: return "an expression";
  }
}

/// Reports syntax errors into the diagnostics engine in our words. ANTLR's
/// own recovery (single-token insertion and deletion, resynchronisation) is
/// kept; only the reporting is replaced, plus a guard against a second
/// report at the token of the previous one.
class SyntaxErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
  SyntaxErrorStrategy(DiagnosticEngine &diags, const Locator &locator,
                      antlr4::BufferedTokenStream &tokens, const TokenWords &words,
                      const std::set<size_t> &lexicallyBad)
      : diags_(diags), locator_(locator), tokens_(tokens), words_(words), bad_(lexicallyBad) {}

protected:
  void reportNoViableAlternative(antlr4::Parser *parser,
                                 const antlr4::NoViableAltException &e) override {
    report(parser, e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportInputMismatch(antlr4::Parser *parser,
                           const antlr4::InputMismatchException &e) override {
    report(parser, e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportFailedPredicate(antlr4::Parser *parser,
                             const antlr4::FailedPredicateException &e) override {
    report(parser, e.getOffendingToken(), e.getExpectedTokens());
  }
  void reportUnwantedToken(antlr4::Parser *parser) override {
    antlr4::Token *t = beginReport(parser);
    if (!t || unmatchedCloser(t))
      return;
    // A token ANTLR would delete may still be best explained as a missing
    // closing bracket ("f16[4, 8)"), and end of file never is "unexpected".
    antlr4::misc::IntervalSet expected = getExpectedTokens(parser);
    if (t->getType() == antlr4::Token::EOF || closesInnermost(t, expected)) {
      describe(parser, t, expected);
      return;
    }
    diags_.report(DiagID::UnexpectedToken, locator_.range(t), words_.found(t, locator_));
  }
  void reportMissingToken(antlr4::Parser *parser) override {
    if (antlr4::Token *t = beginReport(parser))
      describe(parser, t, getExpectedTokens(parser));
  }

private:
  /// The single-token hooks start an error condition themselves; returns the
  /// offending token, or null when this error is not to be reported.
  antlr4::Token *beginReport(antlr4::Parser *parser) {
    if (inErrorRecoveryMode(parser))
      return nullptr;
    beginErrorCondition(parser);
    antlr4::Token *t = parser->getCurrentToken();
    return claim(t) ? t : nullptr;
  }

  void report(antlr4::Parser *parser, antlr4::Token *t, const antlr4::misc::IntervalSet &set) {
    // DefaultErrorStrategy::reportError already checked and began the
    // error condition before calling the report* hook.
    if (!claim(t))
      return;
    if (unmatchedCloser(t))
      return;
    describe(parser, t, set);
  }

  /// Decides whether an error is worth reporting. One report per offending
  /// token; and since one slip usually derails the parser for a moment,
  /// nothing more on the same line or within a few tokens of the previous
  /// error, and no complaint about the end of file after an earlier error
  /// (an unbalanced bracket there is the earlier error's echo).
  bool claim(antlr4::Token *t) {
    size_t index = t ? t->getTokenIndex() : 0;
    // A lexical error earlier on the same line is the root cause.
    if (t && lexicalErrorBefore(t))
      return false;
    if (reported_) {
      if (index == lastIndex_)
        return false;
      if (!t || t->getType() == antlr4::Token::EOF)
        return false;
      if (t->getLine() == lastLine_)
        return false;
      size_t between = 0;
      for (size_t i = lastIndex_ + 1; i < index && i < tokens_.size(); ++i)
        if (tokens_.get(i)->getChannel() == antlr4::Token::DEFAULT_CHANNEL)
          ++between;
      if (index > lastIndex_ && between < kQuietTokens)
        return false;
    }
    reported_ = true;
    lastIndex_ = index;
    lastLine_ = t ? t->getLine() : 0;
    return true;
  }

  bool lexicalErrorBefore(antlr4::Token *t) const {
    for (auto it = bad_.begin(); it != bad_.end() && *it < t->getTokenIndex(); ++it)
      if (tokens_.get(*it)->getLine() == t->getLine())
        return true;
    return false;
  }

  /// Does `expected` hold the closer of the innermost open bracket?
  bool closesInnermost(antlr4::Token *t, const antlr4::misc::IntervalSet &expected) {
    const antlr4::Token *open = openBracketBefore(t->getTokenIndex());
    return open && expected.contains(closerOf(open->getType()));
  }

  /// The innermost bracket still open before token `index`.
  const antlr4::Token *openBracketBefore(size_t index) {
    std::vector<const antlr4::Token *> stack;
    for (size_t i = 0; i < index && i < tokens_.size(); ++i) {
      const antlr4::Token *t = tokens_.get(i);
      if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL)
        continue;
      switch (t->getType()) {
      case LPULexer::LPAREN:
      case LPULexer::LBRACK:
      case LPULexer::LBRACE: stack.push_back(t); break;
      case LPULexer::RPAREN:
      case LPULexer::RBRACK:
      case LPULexer::RBRACE:
        if (!stack.empty() && closerOf(stack.back()->getType()) == t->getType())
          stack.pop_back();
        break;
      default: break;
      }
    }
    return stack.empty() ? nullptr : stack.back();
  }

  static size_t closerOf(size_t open) {
    return open == LPULexer::LPAREN   ? LPULexer::RPAREN
           : open == LPULexer::LBRACK ? LPULexer::RBRACK
                                      : LPULexer::RBRACE;
  }

  /// A closing bracket with nothing open of its kind: say exactly that.
  bool unmatchedCloser(antlr4::Token *t) {
    if (!t)
      return false;
    size_t type = t->getType();
    if (type != LPULexer::RPAREN && type != LPULexer::RBRACK && type != LPULexer::RBRACE)
      return false;
    std::vector<size_t> stack;
    for (size_t i = 0; i < t->getTokenIndex(); ++i) {
      const antlr4::Token *u = tokens_.get(i);
      if (u->getChannel() != antlr4::Token::DEFAULT_CHANNEL)
        continue;
      size_t k = u->getType();
      if (k == LPULexer::LPAREN || k == LPULexer::LBRACK || k == LPULexer::LBRACE)
        stack.push_back(k);
      else if ((k == LPULexer::RPAREN || k == LPULexer::RBRACK || k == LPULexer::RBRACE) &&
               !stack.empty() && closerOf(stack.back()) == k)
        stack.pop_back();
    }
    for (size_t open : stack)
      if (closerOf(open) == type)
        return false;
    const char *opener = type == LPULexer::RPAREN ? "(" : type == LPULexer::RBRACK ? "[" : "{";
    diags_.report(DiagID::UnmatchedClosingDelimiter, locator_.range(t), locator_.text(t), opener);
    return true;
  }

  /// The statement before an '=' token when it starts a line's statement
  /// with something other than `let`, `var` or a lone name: its range and
  /// text. Nullopt when the '=' is not such an assignment.
  std::optional<std::pair<llvm::SMRange, std::string>> assignedExpression(const antlr4::Token *eq) {
    // Back to the token that starts the statement: the first on its line,
    // or the first after a brace on it (`for i in 0..2 { c[i] = x }`).
    const antlr4::Token *first = nullptr, *last = nullptr;
    for (size_t i = eq->getTokenIndex(); i-- > 0;) {
      const antlr4::Token *prev = tokens_.get(i);
      if (prev->getChannel() != antlr4::Token::DEFAULT_CHANNEL)
        continue;
      if (prev->getLine() != eq->getLine() || prev->getType() == LPULexer::LBRACE ||
          prev->getType() == LPULexer::RBRACE)
        break;
      if (!last)
        last = prev;
      first = prev;
    }
    if (!first || !last || first == last)
      return std::nullopt; // nothing, or a lone name: the grammar's own case
    const size_t k = first->getType();
    if (k != LPULexer::IDENT && k != LPULexer::LPAREN)
      return std::nullopt; // let, var, keywords: the grammar's own messages
    llvm::SMRange range{locator_.range(first).Start, locator_.range(last).End};
    std::string text(range.Start.getPointer(), size_t(range.End.getPointer() - range.Start.getPointer()));
    return std::pair{range, text};
  }

  /// Where a missing token belongs: just after the previous token when the
  /// offending one is on a later line (a missing ')' at the end of a line is
  /// shown there, not at the start of the next statement).
  llvm::SMRange missingAt(const antlr4::Token *t) {
    llvm::SMRange at = locator_.range(t);
    if (!t || t->getTokenIndex() == 0)
      return at;
    for (size_t i = t->getTokenIndex(); i-- > 0;) {
      const antlr4::Token *prev = tokens_.get(i);
      if (prev->getChannel() != antlr4::Token::DEFAULT_CHANNEL)
        continue;
      if (prev->getLine() != t->getLine() || t->getType() == antlr4::Token::EOF) {
        llvm::SMLoc end = locator_.range(prev).End;
        return {end, end};
      }
      break;
    }
    return at;
  }

  void describe(antlr4::Parser *parser, antlr4::Token *t, const antlr4::misc::IntervalSet &set) {
    std::vector<size_t> types;
    for (ssize_t type : set.toList())
      if (type >= 0 || type == static_cast<ssize_t>(antlr4::Token::EOF))
        types.push_back(static_cast<size_t>(type));
    std::string found = words_.found(t, locator_);

    // '=' after an expression that is not a lone name (`inner.c = x`,
    // `c[0] = x`): an assignment to what only a name can be.
    if (t && t->getType() == LPULexer::ASSIGN) {
      if (auto target = assignedExpression(t)) {
        auto diag = diags_.report(DiagID::AssignToNonName, locator_.range(t), "'" + target->second + "'");
        diag.label(target->first, "not a name");
        diag.help("assign a 'var' or the model's own 'state' by name; 'update(s, pos, rows, axis = ...)' "
                  "writes rows of a state");
        return;
      }
    }

    // A closing bracket that would have been accepted: name the opener.
    if (const antlr4::Token *open = openBracketBefore(t ? t->getTokenIndex() : 0)) {
      size_t closer = closerOf(open->getType());
      if (std::find(types.begin(), types.end(), closer) != types.end()) {
        llvm::SMRange at = missingAt(t);
        std::string closeText = closer == LPULexer::RPAREN   ? ")"
                                : closer == LPULexer::RBRACK ? "]"
                                                             : "}";
        auto diag = diags_.report(DiagID::UnclosedDelimiter, at, closeText,
                                  locator_.text(open), formatLineColumn(diags_.sources(),
                                                                        locator_.range(open).Start));
        diag.label(locator_.range(open), "unclosed delimiter");
        if (at.Start != locator_.range(t).Start)
          diag.note("found " + found + " instead", locator_.range(t));
        else
          diag.primaryLabel("found " + found);
        return;
      }
    }

    // A short list of tokens reads well ("expected ',' or '>'"); once a name
    // is among several choices, what is wanted is a whole construct.
    // A name or a parenthesised list of names (`let (a, b) = ...`) is not
    // a construct.
    const bool nameOrNames = types.size() == 2 &&
                             llvm::is_contained(types, size_t(LPULexer::IDENT)) &&
                             llvm::is_contained(types, size_t(LPULexer::LPAREN));
    bool wantsConstruct =
        !nameOrNames &&
        (types.size() > 3 ||
         (types.size() > 1 &&
          std::find(types.begin(), types.end(), size_t(LPULexer::IDENT)) != types.end()));
    std::string expected;
    if (wantsConstruct) {
      expected = ruleWords(parser->getContext() ? parser->getContext()->getRuleIndex()
                                                : size_t(LPUParser::RuleModule));
    } else {
      for (size_t i = 0; i < types.size(); ++i) {
        if (i)
          expected += i + 1 == types.size() ? " or " : ", ";
        expected += words_.expected(types[i]);
      }
    }
    if (expected.empty())
      expected = ruleWords(LPUParser::RuleModule);
    bool keywordForName = t && TokenWords::isKeyword(t->getType()) &&
                          std::find(types.begin(), types.end(), size_t(LPULexer::IDENT)) != types.end();
    auto diag = diags_.report(DiagID::ExpectedToken, missingAt(t), expected, found);
    if (keywordForName)
      diag.help("'" + locator_.text(t).str() + "' is a keyword and cannot be used as a name");

  }

  DiagnosticEngine &diags_;
  const Locator &locator_;
  antlr4::BufferedTokenStream &tokens_;
  const TokenWords &words_;
  const std::set<size_t> &bad_;
  static constexpr size_t kQuietTokens = 3;
  bool reported_ = false;
  size_t lastIndex_ = 0;
  size_t lastLine_ = 0;
};

/// Refuses nesting the recursive-descent parser and the checker cannot
/// take on their stack (E0011): brackets more than kMaxNesting deep, or
/// more than kMaxNesting right-recursive operators (unary '-' and '!',
/// '**') in one chain at one bracket level. A chain ends at a comma, a
/// left-associative binary operator (parsed in a loop), '=', a keyword or
/// a brace. True when the stream is within the limits.
bool checkNesting(antlr4::CommonTokenStream &tokens, const Locator &locator, DiagnosticEngine &diags) {
  std::vector<unsigned> chains{0}; // one a bracket level
  size_t previous = antlr4::Token::INVALID_TYPE;
  auto operandEnd = [](size_t type) {
    return type == LPULexer::IDENT || type == LPULexer::INT || type == LPULexer::HEX_INT ||
           type == LPULexer::FLOAT || type == LPULexer::STRING || type == LPULexer::TRUE ||
           type == LPULexer::FALSE || type == LPULexer::RPAREN || type == LPULexer::RBRACK;
  };
  for (antlr4::Token *t : tokens.getTokens()) {
    if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL)
      continue;
    const size_t type = t->getType();
    switch (type) {
    case LPULexer::LPAREN:
    case LPULexer::LBRACK:
    case LPULexer::LBRACE:
      if (chains.size() > detail::kMaxNesting) {
        diags.report(DiagID::NestedTooDeep, locator.range(t), "brackets", uint64_t(detail::kMaxNesting));
        return false;
      }
      chains.push_back(0);
      break;
    case LPULexer::RPAREN:
    case LPULexer::RBRACK:
    case LPULexer::RBRACE:
      if (chains.size() > 1)
        chains.pop_back();
      break;
    case LPULexer::POW:
    case LPULexer::BANG:
    case LPULexer::MINUS:
      if (type == LPULexer::MINUS && operandEnd(previous)) {
        chains.back() = 0; // a binary minus
        break;
      }
      if (++chains.back() > detail::kMaxNesting) {
        diags.report(DiagID::NestedTooDeep, locator.range(t), "operators", uint64_t(detail::kMaxNesting));
        return false;
      }
      break;
    default:
      if (!operandEnd(type) && type != LPULexer::DOT)
        chains.back() = 0;
    }
    previous = type;
  }
  return true;
}

/// The lexical pass: reports every lexical error token and repairs the
/// stream so that the parser sees a plausible token instead.
void checkTokens(antlr4::CommonTokenStream &tokens, const Locator &locator,
                 DiagnosticEngine &diags, std::set<size_t> &bad) {
  for (antlr4::Token *t : tokens.getTokens()) {
    size_t type = t->getType();
    if (type != LPULexer::STRAY && type != LPULexer::BAD_NUMBER && type != LPULexer::INT &&
        type != LPULexer::HEX_INT && type != LPULexer::FLOAT && type != LPULexer::STRING &&
        type != LPULexer::UNTERMINATED_STRING && type != LPULexer::UNTERMINATED_BLOCK_COMMENT)
      continue;
    // The lexer's token factory makes CommonTokens, which are writable.
    auto *w = static_cast<antlr4::CommonToken *>(t);
    llvm::StringRef text = locator.text(t);
    llvm::SMRange range = locator.range(t);
    switch (type) {
    case LPULexer::STRAY: {
      std::string shown = text.str();
      if (text == "\xEF\xBB\xBF") {
        shown = "U+FEFF (a byte order mark; save the file as UTF-8 without one)";
      } else if (text.size() == 1 && !llvm::isPrint(text[0])) {
        char code[8];
        std::snprintf(code, sizeof code, "U+%04X", unsigned(static_cast<unsigned char>(text[0])));
        shown = code;
      } else {
        shown = "'" + shown + "'";
      }
      auto diag = diags.report(DiagID::StrayCharacter, range, shown);
      if (text == ";")
        diag.help("statements end at the end of the line; remove the ';'")
            .fixit(range, "");
      bad.insert(t->getTokenIndex());
      w->setChannel(antlr4::Token::HIDDEN_CHANNEL);
      break;
    }
    case LPULexer::BAD_NUMBER: {
      auto diag = diags.report(DiagID::MalformedNumber, range, text);
      // `2D` is most likely a product of a number and a size.
      size_t digits = text.find_first_not_of("0123456789_");
      if (digits != llvm::StringRef::npos && digits > 0 && llvm::isAlpha(text[digits]) &&
          text[digits] != 'e' && text[digits] != 'E' && text[digits] != 'x' && text[digits] != 'X')
        diag.help(("write '" + text.substr(0, digits) + " * " + text.substr(digits) +
                   "' for a product")
                      .str());
      bad.insert(t->getTokenIndex());
      w->setType(text.contains('.') ? size_t(LPULexer::FLOAT) : size_t(LPULexer::INT));
      break;
    }
    case LPULexer::INT:
    case LPULexer::HEX_INT: {
      std::string digits;
      for (char c : text)
        if (c != '_')
          digits.push_back(c);
      bool hex = t->getType() == LPULexer::HEX_INT;
      if (!hex && text.endswith("_")) {
        diags.report(DiagID::MalformedNumber, range, text)
            .help("a number cannot end with '_'");
        bad.insert(t->getTokenIndex());
        break;
      }
      llvm::APInt value;
      if (llvm::StringRef(digits).substr(hex ? 2 : 0).getAsInteger(hex ? 16 : 10, value) ||
          value.getActiveBits() > 63) {
        diags.report(DiagID::IntegerOverflow, range, text);
        bad.insert(t->getTokenIndex());
      }
      break;
    }
    case LPULexer::FLOAT: {
      std::string digits;
      for (char c : text)
        if (c != '_')
          digits.push_back(c);
      errno = 0;
      double v = std::strtod(digits.c_str(), nullptr);
      if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL)) {
        diags.report(DiagID::FloatOutOfRange, range, text);
        bad.insert(t->getTokenIndex());
      }
      break;
    }
    case LPULexer::UNTERMINATED_STRING:
      diags.report(DiagID::UnterminatedString, range).primaryLabel("the string starts here");
      bad.insert(t->getTokenIndex());
      w->setType(LPULexer::STRING);
      break;
    case LPULexer::STRING:
      for (size_t i = 1; i + 1 < text.size(); ++i) {
        if (text[i] != '\\')
          continue;
        char e = text[i + 1];
        if (e != 'n' && e != 't' && e != '\\' && e != '"') {
          const char *at = text.data() + i;
          diags.report(DiagID::InvalidEscape,
                       {llvm::SMLoc::getFromPointer(at), llvm::SMLoc::getFromPointer(at + 2)},
                       std::string(1, e));
        }
        ++i;
      }
      break;
    case LPULexer::UNTERMINATED_BLOCK_COMMENT: {
      llvm::SMRange open{range.Start, llvm::SMLoc::getFromPointer(range.Start.getPointer() + 2)};
      diags.report(DiagID::UnterminatedBlockComment, open)
          .primaryLabel("the comment starts here and runs to the end of the file");
      break;
    }
    default: break;
    }
  }
}

/// Keeps ANTLR from printing to stderr; our strategy reports everything.
class SilentListener : public antlr4::BaseErrorListener {};

} // namespace

namespace {

/// Adds the seconds since the last lap to `*slot` (when timing is wanted).
class PhaseClock {
public:
  explicit PhaseClock(bool on) : on_(on) {}
  void lap(double *slot) {
    if (!on_)
      return;
    auto now = std::chrono::steady_clock::now();
    *slot += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }

private:
  bool on_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

/// Everything ANTLR needs for one parse, in construction order. It is
/// garbage once the AST is built, and freeing it (hundreds of thousands of
/// parse-tree nodes and tokens) costs about a quarter of the parse.
struct ParseMachinery {
  ParseMachinery(llvm::StringRef source, std::string name)
      : text(source), input(text.codePoints(), std::move(name)), lexer(text.codePoints(), &input),
        tokens(&lexer), parser(&tokens) {}
  SourceText text;
  CodePointStream input;
  grammar::FastLexer lexer;
  antlr4::CommonTokenStream tokens;
  LPUParser parser;
  SilentListener silent;
};

std::unique_ptr<ast::Module> parse(DiagnosticEngine &diags, unsigned bufferId,
                                   ParseMachinery &m, ParseStats &stats, PhaseClock &clock) {
  const llvm::MemoryBuffer *buffer = diags.sources().getMemoryBuffer(bufferId);
  for (size_t offset : m.text.invalidOffsets()) {
    const char *p = buffer->getBufferStart() + offset;
    diags.report(DiagID::InvalidUtf8,
                 {llvm::SMLoc::getFromPointer(p), llvm::SMLoc::getFromPointer(p + 1)});
  }
  Locator locator(m.text);
  m.tokens.fill();
  std::set<size_t> bad;
  checkTokens(m.tokens, locator, diags, bad);
  stats.tokens = m.tokens.size();
  clock.lap(&stats.lexSeconds);
  if (!checkNesting(m.tokens, locator, diags)) {
    auto module = std::make_unique<ast::Module>();
    module->fileName = buffer->getBufferIdentifier().str();
    module->bufferId = bufferId;
    return module;
  }

  LPUParser &parser = m.parser;
  parser.removeErrorListeners();
  parser.addErrorListener(&m.silent);

  // Stage 1: SLL prediction, bail out at the first error. Nearly every
  // correct file parses here, and SLL is much faster than full LL.
  LPUParser::ModuleContext *tree = nullptr;
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::SLL);
  try {
    tree = parser.module();
  } catch (const antlr4::ParseCancellationException &) {
    tree = nullptr;
  }

  // Stage 2: full LL with our error strategy, for the real diagnostics.
  TokenWords words(parser.getVocabulary());
  bool wellFormed = tree != nullptr;
  if (!tree) {
    stats.usedFullLL = true;
    m.tokens.seek(0);
    parser.reset();
    parser.setErrorHandler(
        std::make_shared<SyntaxErrorStrategy>(diags, locator, m.tokens, words, bad));
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
        antlr4::atn::PredictionMode::LL);
    tree = parser.module();
  }

  clock.lap(&stats.parseSeconds);
  auto module = detail::buildModule(tree, m.tokens, locator, diags, bad, wellFormed);
  clock.lap(&stats.buildSeconds);
  module->fileName = buffer->getBufferIdentifier().str();
  module->bufferId = bufferId;
  return module;
}

} // namespace

std::unique_ptr<ast::Module> parseModule(DiagnosticEngine &diags, unsigned bufferId) {
  return parseModule(diags, bufferId, ParseOptions{}, nullptr);
}

std::unique_ptr<ast::Module> parseModule(DiagnosticEngine &diags, unsigned bufferId,
                                         ParseStats *stats) {
  return parseModule(diags, bufferId, ParseOptions{}, stats);
}

std::unique_ptr<ast::Module> parseModule(DiagnosticEngine &diags, unsigned bufferId,
                                         const ParseOptions &options, ParseStats *stats) {
  ParseStats ignored;
  PhaseClock clock(stats != nullptr);
  if (!stats)
    stats = &ignored;
  const llvm::MemoryBuffer *buffer = diags.sources().getMemoryBuffer(bufferId);
  // A binary file (a compiled program given as source) is refused whole,
  // without its bytes quoted in source snippets.
  if (size_t nul = buffer->getBuffer().find('\0'); nul != llvm::StringRef::npos) {
    diags.report(DiagID::BinaryFile, {}, buffer->getBufferIdentifier(), uint64_t(nul));
    return nullptr;
  }
  diags.beginBatch();
  auto machinery =
      std::make_unique<ParseMachinery>(buffer->getBuffer(), buffer->getBufferIdentifier().str());
  auto module = parse(diags, bufferId, *machinery, *stats, clock);
  diags.endBatch();
  if (options.freeParseTree)
    machinery.reset();
  else
    llvm::BuryPointer(std::move(machinery)); // as clang's -disable-free does
  clock.lap(&stats->teardownSeconds);
  return module;
}

} // namespace lpu
