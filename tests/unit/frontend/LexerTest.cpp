// The compiler's hand-written lexer against the lexer ANTLR generates from
// grammar/LPU.g4 (the specification): the same tokens (type, channel,
// position, line, column) on every .lpu file in the repository and on
// random input, whitespace aside (the compiler's lexer skips it).
#include "frontend/ParserInternals.h"

#include "LPULexer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace {

using lpu::detail::SourceText;
using lpu_antlr::LPULexer;

struct Tok {
  size_t type, channel, start, stop, line, column;
  bool operator==(const Tok &) const = default;
};

std::ostream &operator<<(std::ostream &os, const Tok &t) {
  return os << "{type " << t.type << ", channel " << t.channel << ", " << t.start << ".."
            << t.stop << ", " << t.line << ":" << t.column << "}";
}

class Input : public antlr4::ANTLRInputStream {
public:
  explicit Input(const std::u32string &cps) { _data = cps; }
};

std::vector<Tok> collect(antlr4::TokenSource &source, bool dropWhitespace) {
  std::vector<Tok> out;
  for (;;) {
    std::unique_ptr<antlr4::Token> t = source.nextToken();
    size_t type = t->getType();
    if (!dropWhitespace || (type != LPULexer::WS && type != LPULexer::NEWLINE))
      out.push_back({type, t->getChannel(), t->getStartIndex(), t->getStopIndex(), t->getLine(),
                     t->getCharPositionInLine()});
    if (type == antlr4::Token::EOF)
      return out;
  }
}

void expectSameTokens(const std::string &bytes, const std::string &what) {
  SourceText text(bytes);
  Input generatedInput(text.codePoints());
  LPULexer generated(&generatedInput);
  generated.removeErrorListeners();
  Input fastInput(text.codePoints());
  lpu::grammar::FastLexer fast(text.codePoints(), &fastInput);
  std::vector<Tok> want = collect(generated, /*dropWhitespace=*/true);
  std::vector<Tok> got = collect(fast, /*dropWhitespace=*/false);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << what << ", token " << i;
}

TEST(LexerTest, AgreesWithTheGrammarOnEveryRepositoryFile) {
  std::filesystem::path root(LPU_SOURCE_DIR);
  int files = 0;
  for (const char *dir : {"examples", "stdlib", "tests/lit", "bench"})
    for (const auto &entry : std::filesystem::recursive_directory_iterator(root / dir)) {
      if (entry.path().extension() != ".lpu")
        continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      expectSameTokens(ss.str(), entry.path().string());
      ++files;
    }
  EXPECT_GT(files, 40);
}

TEST(LexerTest, AgreesWithTheGrammarOnTrickyNumbersStringsAndComments) {
  const char *cases[] = {
      "0..L 1.5e3 1.5x 1.x 1._x 1e 1e+ 1.5E- 0x 0x1F 0xG 0x_1 12ab 1__0 1_ 2D 007 1e5e6",
      "\"a\\\"b\" \"unterminated\n\"back\\\n\"x\\q\" \"\"",
      "/* a */ b /* c ** d **/ e /*/ f */ /* open",
      "/// doc\n//// four\n// line\n/**/ x /* \n multi \n line */ y",
      "-> - .. . == = != ! <= < >= > || | && & ** * / % @ , : + ( ) [ ] { } # $ ? ; \\ ~ `",
      "\r\n\t\f \v x\ry",
      "caf\xc3\xa9 na\xc3\xafve \xe2\x80\x94 \xff\xfe",
      "importx import as asx model param fn let var return for in if else entry where const "
      "assert true false dtype f16",
  };
  for (const char *c : cases)
    expectSameTokens(c, c);
}

TEST(LexerTest, AgreesWithTheGrammarOnRandomInput) {
  const std::string alphabet = "ab_Z09xXeE.+-*/\"\\\n\r\t =!<>|&@%,:()[]{}#;\xc3\xa9";
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> length(0, 40);
  for (int round = 0; round < 3000; ++round) {
    std::string s;
    for (int i = length(rng); i > 0; --i)
      s += alphabet[pick(rng)];
    expectSameTokens(s, "random input " + std::to_string(round));
  }
}

} // namespace
