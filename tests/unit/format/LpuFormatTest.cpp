// .lpu formatting: spec pairs, fixpoints, whitespace perturbation, extreme
// widths, comments, blank lines, `lpufmt: off` regions and syntax errors.
#include "FormatTestSupport.h"
#include "format/lpu/LpuLanguage.h"

#include <gtest/gtest.h>

#include <random>

namespace lpu::format {
namespace {

using testing::format;
using testing::readSpec;

const Language &lpu() { return lpuLanguage(); }

std::string formatted(const std::string &source, unsigned width = 100) {
  FormatResult r = format(lpu(), source, width);
  EXPECT_EQ(r.status, FormatResult::Formatted) << r.details;
  return r.output;
}

const char *const kSpecs[] = {"decls",   "stmts",  "comments",    "offregion",
                              "offexpr", "offeof", "exprcomments", "breaking"};

/// Spec files whose `lpufmt: off` regions are meant to keep their
/// whitespace and comments as they are.
bool hasOffRegions(const std::string &name) { return name.rfind("off", 0) == 0; }

TEST(LpuFormat, SpecInputsGiveExpectedOutputs) {
  for (const char *name : kSpecs) {
    SCOPED_TRACE(name);
    std::string input = readSpec(std::string(name) + ".lpu");
    ASSERT_FALSE(input.empty());
    EXPECT_EQ(formatted(input), readSpec(std::string(name) + ".expected.lpu"));
  }
}

TEST(LpuFormat, ExpectedOutputsAreFixpoints) {
  for (const char *name : kSpecs) {
    SCOPED_TRACE(name);
    std::string expected = readSpec(std::string(name) + ".expected.lpu");
    EXPECT_EQ(formatted(expected), expected);
  }
}

TEST(LpuFormat, WhitespacePerturbationDoesNotChangeTheResult) {
  for (const char *name : kSpecs) {
    if (hasOffRegions(name))
      continue;
    std::string expected = readSpec(std::string(name) + ".expected.lpu");
    for (unsigned seed = 1; seed <= 25; ++seed) {
      SCOPED_TRACE(std::string(name) + " seed " + std::to_string(seed));
      std::string perturbed = testing::perturb(lpu(), expected, seed);
      ASSERT_NE(perturbed, "<does not parse>");
      EXPECT_EQ(formatted(perturbed), expected) << "perturbed input:\n" << perturbed;
    }
  }
}

TEST(LpuFormat, EveryWidthIsIdempotentAndSafe) {
  // formatSource itself formats its output again and compares; a failure
  // there shows as InternalError.
  for (const char *name : kSpecs)
    for (unsigned width : {1u, 2u, 3u, 5u, 8u, 13u, 21u, 34u, 55u, 80u, 100u, 120u, 10000u})
      for (unsigned indent : {2u, 4u}) {
        SCOPED_TRACE(std::string(name) + " width " + std::to_string(width) + " indent " +
                     std::to_string(indent));
        FormatResult r = format(lpu(), readSpec(std::string(name) + ".lpu"), width, indent);
        EXPECT_EQ(r.status, FormatResult::Formatted) << r.details;
      }
}

TEST(LpuFormat, WideWidthKeepsListsOnOneLine) {
  std::string out = formatted(readSpec("breaking.lpu"), 10000);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 5) << out;
}

TEST(LpuFormat, EmptyAndCommentOnlyFiles) {
  EXPECT_EQ(formatted(""), "");
  // Only a file with no bytes stays empty: lpuc rejects it (E0007) but
  // compiles a file of blanks, and formatting must not change that.
  EXPECT_EQ(formatted("\n"), "\n");
  EXPECT_EQ(formatted("\n\n  \n"), "\n");
  EXPECT_EQ(formatted(" "), "\n");
  EXPECT_EQ(formatted("\n// only a comment   \n\n"), "// only a comment\n");
  EXPECT_EQ(formatted("/* a */ /* b */"), "/* a */ /* b */\n");
}

TEST(LpuFormat, BlankLinesKeptOnceAndDroppedAtBlockEdges) {
  EXPECT_EQ(formatted("const A = 1\n\n\n\nconst B = 2\nconst C = 3\n"),
            "const A = 1\n\nconst B = 2\nconst C = 3\n");
  EXPECT_EQ(formatted("fn f() -> bool {\n\n\n  let a = 1\n\n\n  return a\n\n}\n"),
            "fn f() -> bool {\n  let a = 1\n\n  return a\n}\n");
}

TEST(LpuFormat, WindowsLineEndingsBecomeNewlines) {
  EXPECT_EQ(formatted("const A = 1\r\n\r\nconst B = 2 // x\r\n"),
            "const A = 1\n\nconst B = 2 // x\n");
}

TEST(LpuFormat, BlockCommentFollowedByCode) {
  // The grammar's UNTERMINATED_BLOCK_COMMENT rule would swallow the rest of
  // the file; the language adapter cuts it at the first `*/`.
  EXPECT_EQ(formatted("/* one */ const A = 1 /* two */\n/* three\n */ const B = 2\n"),
            "/* one */ const A = 1 /* two */\n/* three\n */ const B = 2\n");
}

TEST(LpuFormat, UnicodeInCommentsAndStrings) {
  EXPECT_EQ(formatted("fn f() -> bool {\n  assert true, \"\xC3\xA9t\xC3\xA9\" // \xE2\x9C\x93\n}\n"),
            "fn f() -> bool {\n  assert true, \"\xC3\xA9t\xC3\xA9\" // \xE2\x9C\x93\n}\n");
}

TEST(LpuFormat, TrailingCommasFollowTheLayout) {
  EXPECT_EQ(formatted("const A = f(1, 2,)\n"), "const A = f(1, 2)\n");
  EXPECT_EQ(formatted("const A = f(aaaa, bbbb)\n", 12), "const A = f(\n  aaaa,\n  bbbb,\n)\n");
}

TEST(LpuFormat, OffRegionWithoutOnRunsToTheEndOfTheFile) {
  std::string in = "fn f() -> bool {\n  let a  = 1\n  // lpufmt: off\n  let b  = 2\n     return  b\n}\n";
  EXPECT_EQ(formatted(in), "fn f() -> bool {\n  let a = 1\n  // lpufmt: off\n  let b  = 2\n     return  b\n}\n");
  EXPECT_EQ(formatted("const A = f(x,   /* lpufmt: off */ y)\nconst   B  =  1"),
            "const A = f(x, /* lpufmt: off */ y)\nconst   B  =  1");
}

TEST(LpuFormat, OffRegionsInsideListsAtEveryWidth) {
  std::string in = readSpec("offlist.lpu");
  EXPECT_EQ(formatted(in, 1), readSpec("offlist.w1.expected.lpu"));
  EXPECT_EQ(formatted(in, 10000), readSpec("offlist.w10000.expected.lpu"));
  for (unsigned width : {1u, 10000u}) {
    std::string out = readSpec("offlist.w" + std::to_string(width) + ".expected.lpu");
    EXPECT_EQ(formatted(out, width), out) << width;
  }
}

/// Whether `out` holds each `lpufmt: off` region of `in` byte for byte:
/// from an `off` comment to the next `on` comment (or the end).
bool keepsRegions(const std::string &in, const std::string &out) {
  size_t at = 0;
  for (;;) {
    size_t off = std::min(in.find("/* lpufmt: off */", at), in.find("// lpufmt: off", at));
    if (off == std::string::npos)
      return true;
    size_t on = std::min(in.find("/* lpufmt: on */", off), in.find("// lpufmt: on", off));
    size_t end = on == std::string::npos ? in.size()
                                         : on + (in[on + 1] == '*' ? 16 : 13);
    if (out.find(in.substr(off, end - off)) == std::string::npos)
      return false;
    if (on == std::string::npos)
      return true;
    at = end;
  }
}

TEST(LpuFormat, OffRegionsAnywhereKeepTheirBytes) {
  // `off` and `on` comments (block or line) after random tokens of every
  // spec file: the result passes the safety checks at every width and holds
  // each region's source unchanged.
  for (const char *name : {"decls", "stmts", "breaking", "exprcomments"}) {
    std::string input = readSpec(std::string(name) + ".lpu");
    SyntaxTree tree;
    tree.source = input;
    std::vector<SyntaxError> errors;
    ASSERT_TRUE(lpu().parse(tree, errors));
    std::mt19937 rng(11);
    for (int round = 0; round < 40; ++round) {
      size_t n = tree.tokens.size() - 1;
      uint32_t a = rng() % n, b = rng() % n;
      if (a > b)
        std::swap(a, b);
      const Token &ta = tree.tokens[a], &tb = tree.tokens[b];
      std::string offText = rng() % 2 ? " /* lpufmt: off */ " : " // lpufmt: off\n";
      std::string onText = rng() % 3 == 0 ? "" : rng() % 2 ? " /* lpufmt: on */ " : " // lpufmt: on\n";
      std::string s = input;
      s.insert(tb.offset + tb.length, onText);
      s.insert(ta.offset + ta.length, offText);
      for (unsigned width : {1u, 20u, 100u, 10000u}) {
        FormatResult r = format(lpu(), s, width);
        ASSERT_EQ(r.status, FormatResult::Formatted)
            << name << " round " << round << " width " << width << ": " << r.details << "\n" << s;
        EXPECT_TRUE(keepsRegions(s, r.output))
            << name << " round " << round << " width " << width << "\n" << s << "\n---\n" << r.output;
      }
    }
  }
}

TEST(LpuFormat, OwnLineCommentBeforeAValueStaysOnItsLine) {
  EXPECT_EQ(formatted("const A =\n// why\n5\n"), "const A =\n  // why\n  5\n");
  EXPECT_EQ(formatted("fn f() -> bool {\n  return\n    // why\n    g(1, 2)\n}\n"),
            "fn f() -> bool {\n  return\n    // why\n    g(1, 2)\n}\n");
}

TEST(LpuFormat, CommentsAnywhereAreFormattedSafely) {
  // Every comment placement must pass the safety checks (printed once,
  // same comments, idempotent) at any width.
  for (const char *name : kSpecs) {
    if (hasOffRegions(name))
      continue;
    std::string input = readSpec(std::string(name) + ".lpu");
    for (unsigned seed = 1; seed <= 60; ++seed) {
      std::string commented = testing::insertComments(lpu(), input, seed);
      for (unsigned width : {1u, 20u, 100u}) {
        FormatResult r = format(lpu(), commented, width);
        ASSERT_EQ(r.status, FormatResult::Formatted)
            << name << " seed " << seed << " width " << width << ": " << r.details << "\n"
            << commented;
      }
    }
  }
}

TEST(LpuFormat, LineCommentsNeverShareALine) {
  // Found by inserting comments at random places: each of these once made a
  // second pass differ or merged two comments into one.
  const char *cases[] = {
      "fn g( // a\n) -> /* b */ bool {\n  return x\n}\n",
      "fn f() -> // a\n bool {\n  return // b\n  x // c\n}\n",
      "const A = f(\n  x,\n  y // a\n  // b\n  , // c\n)\n",
      "const A = f(x // a\n, // b\ny)\n",
      "const A = x @ w /* a */\nconst B = x @\n  w /* b */\n",
      "model M { // a\n}\n",
  };
  for (const char *source : cases)
    for (unsigned width : {1u, 20u, 10000u}) {
      SCOPED_TRACE(std::string(source) + " at width " + std::to_string(width));
      FormatResult r = format(lpu(), source, width);
      EXPECT_EQ(r.status, FormatResult::Formatted) << r.details;
    }
}

TEST(LpuFormat, CommentAfterAMultiLineBlockCommentStaysBehindIt) {
  // A comment starting on the line where a multi-line block comment
  // trailing a token ends trails that token as well; it once led the next
  // token and was printed before the block comment (`b,// z /* x`) or after
  // an added comma (`y */,// z`, which a second pass changed).
  const char *withComma = "fn f(a: f32[4], b: f32[4]) -> f32[4] {\n"
                          "  return maximum(\n    a,\n    b, /* x\n y */ // z\n  )\n}\n"
                          "entry e = f\n";
  EXPECT_EQ(formatted(withComma), withComma);
  EXPECT_EQ(formatted("fn f(a: f32[4], b: f32[4]) -> f32[4] {\n"
                      "  return maximum(a, b /* x\n y */ // z\n  )\n}\n"
                      "entry e = f\n"),
            "fn f(a: f32[4], b: f32[4]) -> f32[4] {\n"
            "  return maximum(\n    a,\n    b /* x\n y */, // z\n  )\n}\n"
            "entry e = f\n");
  EXPECT_EQ(formatted("const A = 1 /* x\n y */ // z\nconst B = 2\n"),
            "const A = 1 /* x\n y */ // z\nconst B = 2\n");
  const char *cases[] = {
      "const A = f(x, /* a\n b */ /* c */ // d\n y)\n",
      "const A = [1, /* a\n b */ /* c */\n 2, /* d\n e */\n]\n",
      "model M { /* a\n b */ // c\n}\n",
  };
  for (const char *source : cases)
    for (unsigned width : {1u, 20u, 10000u}) {
      SCOPED_TRACE(std::string(source) + " at width " + std::to_string(width));
      FormatResult r = format(lpu(), source, width);
      EXPECT_EQ(r.status, FormatResult::Formatted) << r.details;
    }
}

struct ErrorCase {
  const char *source;
  uint32_t line, column;
  const char *messagePart;
};

TEST(LpuFormat, SyntaxErrorsPointAtTheLine) {
  const ErrorCase cases[] = {
      {"fn f( -> bool {}\n", 1, 7, "input '->'"}, // ANTLR's wording varies with its cache
      {"const A = 1\nconst B = $\n", 2, 11, "unexpected character '$'"},
      {"const A = 12ab\n", 1, 11, "malformed number '12ab'"},
      {"fn f() -> bool {\n  assert true, \"open\n}\n", 2, 16, "unterminated string"},
      {"const A = 1 /* open\n", 1, 13, "unterminated block comment"},
      {"let x = 1\n", 1, 1, "input 'let'"},
  };
  for (const ErrorCase &c : cases) {
    SCOPED_TRACE(c.source);
    FormatResult r = format(lpu(), c.source);
    ASSERT_EQ(r.status, FormatResult::SyntaxErrors);
    ASSERT_FALSE(r.errors.empty());
    EXPECT_EQ(r.errors[0].line, c.line);
    EXPECT_EQ(r.errors[0].column, c.column);
    EXPECT_NE(r.errors[0].message.find(c.messagePart), std::string::npos) << r.errors[0].message;
  }
}

TEST(LpuFormat, AbsurdNestingIsASyntaxErrorNotACrash) {
  std::string deep = "const A = " + std::string(20000, '(') + "1" + std::string(20000, ')') + "\n";
  FormatResult r = format(lpu(), deep);
  ASSERT_EQ(r.status, FormatResult::SyntaxErrors);
  EXPECT_EQ(r.errors[0].message, "brackets nested more than 1000 deep");
  EXPECT_EQ(r.errors[0].column, 1011u);
  std::string over = "const A = " + std::string(1001, '(') + "1" + std::string(1001, ')') + "\n";
  r = format(lpu(), over);
  ASSERT_EQ(r.status, FormatResult::SyntaxErrors);
  EXPECT_EQ(r.errors[0].message, "brackets nested more than 1000 deep");
  std::string fine = "const A = " + std::string(500, '[') + "1" + std::string(500, ']') + "\n";
  EXPECT_EQ(format(lpu(), fine).status, FormatResult::Formatted);
}

TEST(LpuFormat, OptionalTokensAreTrailingCommasOnly) {
  SyntaxTree tree;
  tree.source = "const A = f(1, 2,)\n";
  std::vector<SyntaxError> errors;
  ASSERT_TRUE(lpu().parse(tree, errors));
  unsigned optional = 0;
  for (uint32_t i = 0; i < tree.tokens.size(); ++i)
    optional += lpuIsOptionalToken(tree, i);
  EXPECT_EQ(optional, 1u);
}

} // namespace
} // namespace lpu::format
