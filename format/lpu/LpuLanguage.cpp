#include "format/lpu/LpuLanguage.h"

#include "format/lpu/LpuParser.h"

#include "LPUFastLexer.h"
#include "LPULexer.h"
#include "LPUParser.h"

#include <antlr4-runtime.h>

#include <typeinfo>

namespace lpu::format {
namespace {

using lpu_antlr::LPULexer;
using lpu_antlr::LPUParser;

constexpr unsigned kMaxBracketDepth = 1000;

/// Collects syntax errors instead of printing them (ANTLR's default).
class ErrorCollector : public antlr4::BaseErrorListener {
public:
  explicit ErrorCollector(std::vector<SyntaxError> &errors) : errors_(errors) {}
  void syntaxError(antlr4::Recognizer *, antlr4::Token *, size_t line, size_t column,
                   const std::string &message, std::exception_ptr) override {
    errors_.push_back({static_cast<uint32_t>(line), static_cast<uint32_t>(column + 1), message});
  }

private:
  std::vector<SyntaxError> &errors_;
};

/// ANTLR counts code points; the syntax tree counts bytes.
std::vector<uint32_t> codePointOffsets(llvm::StringRef src) {
  std::vector<uint32_t> offsets;
  offsets.reserve(src.size() + 1);
  for (uint32_t i = 0; i < src.size(); ++i)
    if ((static_cast<unsigned char>(src[i]) & 0xC0) != 0x80)
      offsets.push_back(i);
  offsets.push_back(static_cast<uint32_t>(src.size()));
  return offsets;
}

const char *lexicalError(size_t type) {
  switch (type) {
  case LPULexer::STRAY: return "unexpected character";
  case LPULexer::BAD_NUMBER: return "malformed number";
  case LPULexer::UNTERMINATED_STRING: return "unterminated string";
  case LPULexer::UNTERMINATED_BLOCK_COMMENT: return "unterminated block comment";
  default: return nullptr;
  }
}

/// Control characters shown as \xNN, so that a message stays readable.
std::string printable(llvm::StringRef text) {
  std::string out;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7F) {
      const char *hex = "0123456789ABCDEF";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

RawToken::Category categoryOf(size_t type) {
  switch (type) {
  case LPULexer::LINE_COMMENT:
  case LPULexer::DOC_COMMENT: return RawToken::LineComment;
  case LPULexer::BLOCK_COMMENT:
  case LPULexer::UNTERMINATED_BLOCK_COMMENT: return RawToken::BlockComment;
  case LPULexer::NEWLINE:
  case LPULexer::WS: return RawToken::Whitespace;
  default: return RawToken::Significant;
  }
}

/// The source decoded by ANTLR's own UTF-8 reader, with the code points
/// kept for the lexer. The reader drops a leading byte order mark; it is
/// put back, so that code point i stays byte offset offsets[i] and the
/// mark is an unexpected character, as the compiler reports it.
class CodePoints : public antlr4::ANTLRInputStream {
public:
  explicit CodePoints(const std::string &source) : antlr4::ANTLRInputStream(source) {
    if (llvm::StringRef(source).startswith("\xEF\xBB\xBF") && (_data.empty() || _data.front() != U'\uFEFF'))
      _data.insert(_data.begin(), U'\uFEFF');
  }
  const std::u32string &codePoints() const { return _data; }
};

class TreeConverter {
public:
  TreeConverter(SyntaxTree &tree, const std::vector<uint32_t> &tokenMap)
      : build_(tree), tokenMap_(tokenMap) {}

  /// Converts `ctx`; returns its node index, or UINT32_MAX if it was folded.
  /// A rule context with exactly one child (other than the root) becomes
  /// that child: every rule prints such a node as its child, and the
  /// expression grammar nests ten of them around each operand, which would
  /// otherwise dominate the tree. Kinds of the remaining nodes are rule
  /// indices.
  uint32_t convert(antlr4::ParserRuleContext *ctx, bool root = true) {
    if (!root && ctx->children.size() == 1) {
      addChild(ctx->children[0]);
      return UINT32_MAX;
    }
    size_t mark = build_.start();
    for (antlr4::tree::ParseTree *child : ctx->children)
      addChild(child);
    return build_.finish(mark, static_cast<int>(ctx->getRuleIndex()));
  }

private:
  void addChild(antlr4::tree::ParseTree *child) {
      // The tree holds only rule contexts and TerminalNodeImpl leaves (error
      // nodes never reach here: a parse with errors is rejected). Comparing
      // the exact type first is much cheaper than a dynamic_cast across the
      // shared runtime for the many rule contexts of the deep expression
      // rules (a terminal still needs the cast: its base is virtual).
      if (typeid(*child) == typeid(antlr4::tree::TerminalNodeImpl))
        build_.addToken(tokenMap_[dynamic_cast<antlr4::tree::TerminalNode *>(child)
                                      ->getSymbol()
                                      ->getTokenIndex()]);
      else
        convert(static_cast<antlr4::ParserRuleContext *>(child), /*root=*/false);
  }

  SyntaxTreeBuilder build_;
  const std::vector<uint32_t> &tokenMap_;
};

} // namespace

bool parseLpuWithAntlr(SyntaxTree &tree, std::vector<SyntaxError> &errors) {
  try {
    // The compiler's lexer; whitespace is what lies between its tokens.
    CodePoints input(tree.source);
    lpu::grammar::FastLexer lexer(input.codePoints(), &input);
    ErrorCollector collector(errors);
    antlr4::CommonTokenStream stream(&lexer);
    stream.fill();

    std::vector<uint32_t> offsets = codePointOffsets(tree.source);
    std::vector<RawToken> raw;
    std::vector<uint32_t> tokenMap(stream.size(), UINT32_MAX); // ANTLR index -> ours
    uint32_t significant = 0;
    uint32_t previousEnd = 0;
    unsigned depth = 0;
    for (antlr4::Token *t : stream.getTokens()) {
      size_t type = t->getType();
      uint32_t begin = offsets[std::min(t->getStartIndex(), offsets.size() - 1)];
      uint32_t end = type == antlr4::Token::EOF ? begin : offsets[t->getStopIndex() + 1];
      if (begin > previousEnd)
        raw.push_back({0, RawToken::Whitespace, previousEnd, begin - previousEnd});
      previousEnd = end;
      if (const char *what = lexicalError(type)) {
        errors.push_back({static_cast<uint32_t>(t->getLine()),
                          static_cast<uint32_t>(t->getCharPositionInLine() + 1),
                          std::string(what) + " '" +
                              printable(llvm::StringRef(tree.source).slice(begin, end)) + "'"});
        continue;
      }
      RawToken r;
      r.kind = static_cast<int>(type);
      r.category = type == antlr4::Token::EOF ? RawToken::Significant : categoryOf(type);
      r.offset = begin;
      r.length = end - begin;
      if (r.category == RawToken::Significant)
        tokenMap[t->getTokenIndex()] = significant++;
      // The parser recurses a dozen frames per bracket: refuse absurd
      // nesting rather than overflow the stack.
      if (type == LPULexer::LPAREN || type == LPULexer::LBRACK || type == LPULexer::LBRACE) {
        if (++depth > kMaxBracketDepth) {
          errors.push_back({static_cast<uint32_t>(t->getLine()),
                            static_cast<uint32_t>(t->getCharPositionInLine() + 1),
                            "brackets nested more than " + std::to_string(kMaxBracketDepth) +
                                " deep"});
          return false;
        }
      } else if (type == LPULexer::RPAREN || type == LPULexer::RBRACK || type == LPULexer::RBRACE) {
        depth = depth > 0 ? depth - 1 : 0;
      }
      raw.push_back(r);
    }
    if (!errors.empty())
      return false;
    attachTrivia(tree, raw);

    // Two-stage parsing: the fast SLL prediction first; full LL with error
    // reporting only when SLL fails.
    LPUParser parser(&stream);
    parser.removeErrorListeners();
    parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
        antlr4::atn::PredictionMode::SLL);
    LPUParser::ModuleContext *module = nullptr;
    try {
      module = parser.module();
    } catch (const antlr4::ParseCancellationException &) {
      stream.seek(0);
      parser.reset();
      parser.addErrorListener(&collector);
      parser.setErrorHandler(std::make_shared<antlr4::DefaultErrorStrategy>());
      parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
          antlr4::atn::PredictionMode::LL);
      module = parser.module();
    }
    if (!errors.empty() || parser.getNumberOfSyntaxErrors() > 0) {
      if (errors.empty())
        errors.push_back({1, 1, "syntax error"});
      return false;
    }
    tree.nodes.clear();
    tree.children.clear();
    tree.root = TreeConverter(tree, tokenMap).convert(module);
    return true;
  } catch (const std::exception &e) {
    errors.push_back({1, 1, std::string("parser failure: ") + e.what()});
    return false;
  }
}

namespace {

/// The hand-written parser first; ANTLR for what it rejects, which is
/// where every syntax error is found and reported.
bool parseLpu(SyntaxTree &tree, std::vector<SyntaxError> &errors) {
  if (parseLpuFast(tree))
    return true;
  tree.tokens.clear();
  tree.comments.clear();
  tree.nodes.clear();
  tree.children.clear();
  return parseLpuWithAntlr(tree, errors);
}

} // namespace

bool lpuIsOptionalToken(const SyntaxTree &tree, uint32_t token) {
  if (tree.tokens[token].kind != LPULexer::COMMA || token + 1 >= tree.tokens.size())
    return false;
  int next = tree.tokens[token + 1].kind;
  return next == LPULexer::RPAREN || next == LPULexer::RBRACK || next == LPULexer::RBRACE ||
         next == LPULexer::GT;
}

const Language &lpuLanguage() {
  static const Language language{"lpu", {"lpu"}, parseLpu, lpuRules, lpuIsOptionalToken};
  return language;
}

} // namespace lpu::format
