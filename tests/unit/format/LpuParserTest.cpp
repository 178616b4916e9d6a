// The formatter's fast path against the ANTLR path: the hand-written parser
// against the ANTLR parser generated from grammar/LPU.g4 (the
// specification): the same tokens, comments and syntax tree on every .lpu
// file of the repository, and on random mutations of them (tokens deleted,
// duplicated, swapped or inserted), where the hand-written parser must also
// reject everything ANTLR rejects; and the byte-level scanner against the
// compiler's lexer (grammar/LPUFastLexer, itself checked against ANTLR's)
// on random byte soups.
#include "format/lpu/LpuParser.h"
#include "format/lpu/LpuScanner.h"

#include "LPUFastLexer.h"
#include "LPULexer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <array>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace {

using namespace lpu::format;

std::vector<std::string> repositorySources(std::vector<std::string> *names = nullptr) {
  std::vector<std::string> out;
  std::filesystem::path root(LPU_SOURCE_DIR);
  for (const char *dir : {"examples", "stdlib", "tests/lit", "bench"})
    for (const auto &entry : std::filesystem::recursive_directory_iterator(root / dir)) {
      if (entry.path().extension() != ".lpu")
        continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      out.push_back(ss.str());
      if (names)
        names->push_back(entry.path().string());
    }
  return out;
}

/// Empty when the trees are identical, else the first difference.
std::string difference(const SyntaxTree &a, const SyntaxTree &b) {
  if (a.tokens.size() != b.tokens.size())
    return "token count " + std::to_string(a.tokens.size()) + " vs " + std::to_string(b.tokens.size());
  for (size_t i = 0; i < a.tokens.size(); ++i) {
    const Token &x = a.tokens[i], &y = b.tokens[i];
    if (x.kind != y.kind || x.offset != y.offset || x.length != y.length || x.line != y.line ||
        x.column != y.column || x.leadBegin != y.leadBegin || x.trailBegin != y.trailBegin ||
        x.trailEnd != y.trailEnd || x.blankBefore != y.blankBefore)
      return "token " + std::to_string(i) + " '" + a.text(x).str() + "'";
  }
  if (a.comments.size() != b.comments.size())
    return "comment count";
  for (size_t i = 0; i < a.comments.size(); ++i) {
    const Comment &x = a.comments[i], &y = b.comments[i];
    if (x.offset != y.offset || x.length != y.length || x.isLine != y.isLine ||
        x.ownLine != y.ownLine || x.blankBefore != y.blankBefore || x.newlineAfter != y.newlineAfter)
      return "comment " + std::to_string(i);
  }
  if (a.nodes.size() != b.nodes.size())
    return "node count " + std::to_string(a.nodes.size()) + " vs " + std::to_string(b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const SyntaxNode &x = a.nodes[i], &y = b.nodes[i];
    if (x.kind != y.kind || x.childBegin != y.childBegin || x.childCount != y.childCount ||
        x.firstToken != y.firstToken || x.lastToken != y.lastToken)
      return "node " + std::to_string(i) + " (kind " + std::to_string(x.kind) + " vs " +
             std::to_string(y.kind) + ") near token '" +
             a.text(a.tokens[std::min<size_t>(x.firstToken, a.tokens.size() - 1)]).str() + "'";
  }
  if (a.children.size() != b.children.size())
    return "child count";
  for (size_t i = 0; i < a.children.size(); ++i)
    if (a.children[i].isNode != b.children[i].isNode || a.children[i].index != b.children[i].index)
      return "child " + std::to_string(i);
  if (a.root != b.root)
    return "root";
  return "";
}

enum class Outcome { Same, BothReject, FastOnlyRejects, Differ };

Outcome compare(const std::string &source, std::string &details) {
  SyntaxTree slow, fast;
  slow.source = fast.source = source;
  std::vector<SyntaxError> errors;
  bool slowOk = parseLpuWithAntlr(slow, errors);
  bool fastOk = parseLpuFast(fast);
  if (!slowOk && !fastOk)
    return Outcome::BothReject;
  if (slowOk && !fastOk)
    return Outcome::FastOnlyRejects;
  if (!slowOk) {
    details = "accepted what ANTLR rejects: " + (errors.empty() ? "" : errors[0].message);
    return Outcome::Differ;
  }
  details = difference(slow, fast);
  return details.empty() ? Outcome::Same : Outcome::Differ;
}

TEST(LpuParserTest, BuildsTheAntlrTreeForEveryRepositoryFile) {
  std::vector<std::string> names;
  std::vector<std::string> sources = repositorySources(&names);
  ASSERT_GT(sources.size(), 40u);
  size_t accepted = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    std::string details;
    Outcome o = compare(sources[i], details);
    EXPECT_NE(o, Outcome::Differ) << names[i] << ": " << details;
    // Files that do not parse (tests of syntax errors) are rejected by both.
    EXPECT_NE(o, Outcome::FastOnlyRejects) << names[i];
    accepted += o == Outcome::Same;
  }
  EXPECT_GT(accepted, 40u);
}

TEST(LpuParserTest, AgreesOnTrickyChoices) {
  const char *cases[] = {
      "fn f() -> T { let a = f<a>(b) let b = f < a > (b) let c = a < b let d = g(a < b, c > (d)) }",
      "fn f() -> T { let a = nn.f<H = 4>(x) let b = x.y<z let c = a < b > c }",
      "fn f() -> T { let a = b[i].f<B = B>(x) let b = x[0].a < b > (c) let c = x[0].y < z "
      "let d = a.b[1].c<1>(x).d<2, T = f16>() let e = (a).f<B>(x) + g[0].h<N>() "
      "let f = b[i]<B>(x) let g = (a) < b > (c) let h = a.b < c let i = -a < b > (c) "
      "let j = f(x)<T>(y)<U>(z) let k = a.b < c, d > (e) let l = b[i] < c }",
      "fn f() -> T { x\n(y)\n-z\n[1] return -x ** 2 * -a.b ** -c ** d }",
      "fn f() -> T { x\n[]\n}", // ANTLR reads two statements; the fast parser defers to it
      "fn f() -> T { a[:] a[:, 1:] a[1:2, :3, x] a[1,] f(x = 1, y,) }",
      "fn f<A, B = 2 * (A + 1), ..C, T: dtype,>(x: [4] T[A, ..C,], y: a.b<c>[1]) -> f16 "
      "where A % 8 == 0, B >= max(A, 2,) { if a { } else if b { } else { } }",
      "model M<D> { param a: nn.L<D, F = 4 * D, S in {1, 2,}, x.y, [2] T, f16[D],> const c = 1 }",
      "import a.b.c as d\nimport \"x.lpu\" as y\nimport q\nentry e = M<D = 1>.f<B in {1}>.g\n",
      "const x: T = !a || b && c == d != e <= f >= g + h - i * j / k % l @ m",
      "", "// only a comment\n", "/* a */ fn /* b */ f() -> T {} // c\n",
  };
  for (const char *c : cases) {
    std::string details;
    Outcome o = compare(c, details);
    EXPECT_NE(o, Outcome::Differ) << c << ": " << details;
    if (std::string(c).find("x\n[]") == std::string::npos)
      EXPECT_EQ(o, Outcome::Same) << c;
    else
      EXPECT_EQ(o, Outcome::FastOnlyRejects) << c;
  }
}

TEST(LpuParserTest, NestedGenericCallReadingsThatFailLateStayCheap) {
  // Each `f<a>(` is first tried as a generic call; when the input fails at
  // its very end, every level is read both ways. The parser gives up on such
  // input after a bounded amount of work (ANTLR then reports the error).
  std::string s = "const A = ";
  for (int k = 0; k < 40; ++k)
    s += "f<a>(";
  s += "x";
  SyntaxTree tree;
  tree.source = s;
  EXPECT_FALSE(parseLpuFast(tree)); // returns at all: 2^40 readings would not
  std::string ok = s + std::string(40, ')');
  tree = SyntaxTree{};
  tree.source = ok;
  EXPECT_TRUE(parseLpuFast(tree));
}

/// Significant-token-ish pieces of a source: split at blanks and at
/// punctuation, good enough to build mutations from.
std::vector<std::string> pieces(const std::string &s) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty())
      out.push_back(cur);
    cur.clear();
  };
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '"') {
      cur += c;
    } else {
      flush();
      out.push_back(std::string(1, c));
    }
  }
  flush();
  return out;
}

TEST(LpuParserTest, AgreesOnRandomMutationsOfRepositoryFiles) {
  std::vector<std::string> sources = repositorySources();
  std::mt19937 rng(7);
  const char *inserts[] = {"(", ")", "[", "]", "{", "}", "<", ">", ",", ":", "=", "-", "!", "x",
                           "1", "..", ".", "*", "**", "fn", "let", "if", "else", " where ",
                           "\n", "// c\n", "/* c */", "@", "&&", "in", "as", "\"s\"", "f<a>(b)"};
  size_t same = 0, bothReject = 0, fastOnly = 0, runs = 0;
  for (const std::string &src : sources) {
    std::vector<std::string> p = pieces(src);
    if (p.size() < 4)
      continue;
    for (int round = 0; round < 12; ++round) {
      std::vector<std::string> q = p;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        size_t at = rng() % q.size();
        switch (rng() % 4) {
        case 0: q.erase(q.begin() + at); break;
        case 1: q.insert(q.begin() + at, q[at]); break;
        case 2: std::swap(q[at], q[(at + 1) % q.size()]); break;
        default: q.insert(q.begin() + at, inserts[rng() % std::size(inserts)]); break;
        }
        if (q.size() < 2)
          break;
      }
      std::string mutated;
      for (const std::string &s : q)
        mutated += s;
      std::string details;
      Outcome o = compare(mutated, details);
      ASSERT_NE(o, Outcome::Differ) << details << "\n--- input:\n" << mutated;
      same += o == Outcome::Same;
      bothReject += o == Outcome::BothReject;
      fastOnly += o == Outcome::FastOnlyRejects;
      ++runs;
    }
  }
  // Both outcomes must be well represented for the comparison to mean
  // something, and inputs only ANTLR accepts (a greedy choice here that
  // ANTLR's look-ahead avoids) must stay rare: each costs an ANTLR parse.
  EXPECT_GT(same, runs / 10) << runs;
  EXPECT_GT(bothReject, runs / 10) << runs;
  EXPECT_LT(fastOnly * 50, runs) << fastOnly << " of " << runs;
  std::printf("mutations: %zu same, %zu both reject, %zu only ANTLR accepts\n", same, bothReject, fastOnly);
}

/// FastLexer's significant tokens and comments as {type, byte offset, byte
/// length}; false if it produced a lexical error token.
bool fastLexerTokens(const std::string &source, std::vector<std::array<int64_t, 3>> &out) {
  using L = lpu_antlr::LPULexer;
  std::u32string cps;
  std::vector<uint32_t> offsets;
  for (size_t i = 0; i < source.size();) {
    unsigned char c = static_cast<unsigned char>(source[i]);
    size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    char32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(source[i + k]) & 0x3F);
    cps.push_back(cp);
    offsets.push_back(static_cast<uint32_t>(i));
    i += n;
  }
  offsets.push_back(static_cast<uint32_t>(source.size()));
  antlr4::ANTLRInputStream input(source);
  lpu::grammar::FastLexer lexer(cps, &input);
  for (;;) {
    std::unique_ptr<antlr4::Token> t = lexer.nextToken();
    size_t type = t->getType();
    if (type == antlr4::Token::EOF)
      return true;
    if (type == L::STRAY || type == L::BAD_NUMBER || type == L::UNTERMINATED_STRING ||
        type == L::UNTERMINATED_BLOCK_COMMENT)
      return false;
    uint32_t begin = offsets[t->getStartIndex()], end = offsets[t->getStopIndex() + 1];
    out.push_back({static_cast<int64_t>(type), begin, end - begin});
  }
}

TEST(LpuParserTest, ScannerAgreesWithTheCompilersLexerOnByteSoup) {
  const char *lexemes[] = {
      "1", "12", "1_000", "1.5", "1.", ".5", "1e5", "1e", "1E+", "1.5e-3", "0x", "0x1F", "0X_",
      "12ab", "1.2.3", "1..2", "1._5a", "x", "_a1", "fn", "fnx", "in", "import", "\"s\"", "\"",
      "\"a\\\"b\"", "\"a\\", "//c", "///d", "/*b*/", "/*", "*/", "/**/", "/", "*", "**", "->",
      "-", ">", ">=", "<", "<=", "=", "==", "!", "!=", "|", "||", "&", "&&", ".", "..", ",", ":",
      "(", ")", "[", "]", "{", "}", "@", "%", "+", "$", "#", "\xC3\xA9", "\xE2\x9C\x93", " ",
      "\t", "\n", "\r\n", "\r", "\f"};
  std::mt19937 rng(3);
  size_t clean = 0, rejected = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string s;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 12); k < n; ++k)
      s += lexemes[rng() % std::size(lexemes)];
    std::vector<RawToken> raw;
    std::vector<std::array<int64_t, 3>> want;
    bool fastOk = scanLpu(s, raw);
    bool lexerOk = fastLexerTokens(s, want);
    ASSERT_EQ(fastOk, lexerOk) << "input: '" << s << "'";
    if (!fastOk) {
      ++rejected;
      continue;
    }
    std::vector<std::array<int64_t, 3>> got;
    for (const RawToken &r : raw)
      if (r.category != RawToken::Whitespace && r.kind != -1)
        got.push_back({r.kind, r.offset, r.length});
    ASSERT_EQ(got, want) << "input: '" << s << "'";
    ++clean;
  }
  EXPECT_GT(clean, 400u);
  EXPECT_GT(rejected, 400u);
}

} // namespace
