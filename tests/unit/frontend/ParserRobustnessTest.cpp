// Whatever the input, the parser reports and returns: no crash, no hang, and
// an error for input that is not a program. Inputs are generated from a
// fixed seed so a failure reproduces.
#include "ParseHelpers.h"

#include <gtest/gtest.h>

#include <random>

using lpu::test::parse;

namespace {

const char *const kFragments[] = {
    "fn", "model", "param", "let", "var", "return", "for", "in", "if", "else", "entry",
    "where", "const", "assert", "import", "as", "true", "x", "f16", "N", "[", "]", "(", ")",
    "{", "}", "<", ">", ",", ":", "=", "==", "->", "..", ".", "+", "-", "*", "/", "%", "@",
    "**", "&&", "||", "!", "1", "0x1F", "2.5e3", "12ab", "\"s\"", "\"open", "/*", "*/",
    "//", "///", "#", "\n", " ", "\t", "\xff", "\xc3\xa9"};

TEST(ParserRobustnessTest, RandomTokenSoupNeverCrashes) {
  std::mt19937 rng(20261129);
  std::uniform_int_distribution<size_t> pick(0, std::size(kFragments) - 1);
  std::uniform_int_distribution<int> length(0, 60);
  for (int round = 0; round < 400; ++round) {
    std::string text;
    int n = length(rng);
    for (int i = 0; i < n; ++i) {
      text += kFragments[pick(rng)];
      text += ' ';
    }
    auto p = parse(text);
    ASSERT_TRUE(p->module) << text;
    for (const lpu::Diagnostic &d : p->diagnostics.diagnostics)
      ASSERT_TRUE(d.primary.Start.isValid()) << "diagnostic without a location for: " << text;
  }
}

TEST(ParserRobustnessTest, EveryTruncationOfADeclarationIsAnError) {
  const std::string model = "model M<D> {\n  param w: f16[D, D]\n"
                            "  fn forward<B>(x: f16[B, D]) -> f16[B, D] {\n"
                            "    return relu(x @ w)\n  }\n}\n";
  ASSERT_EQ(parse(model)->codes(), "");
  // Cutting anywhere before the final '}' leaves something unfinished.
  for (size_t cut = 1; cut + 2 < model.size(); ++cut) {
    auto p = parse(model.substr(0, cut));
    EXPECT_FALSE(p->diagnostics.diagnostics.empty()) << "no error for:\n" << model.substr(0, cut);
  }
}

TEST(ParserRobustnessTest, DeepNestingDoesNotOverflow) {
  auto nested = [](size_t depth) {
    return "fn f() -> f32 { return " + std::string(depth, '(') + "x" + std::string(depth, ')') + " }\n";
  };
  // The function's braces are a level: 127 parentheses inside them fit.
  EXPECT_EQ(parse(nested(127))->codes(), "");
  // Deeper is refused before the parser recurses, however deep.
  EXPECT_EQ(parse(nested(128))->codes(), "E0011");
  EXPECT_EQ(parse(nested(100000))->codes(), "E0011");
  EXPECT_EQ(parse("fn f(x: f32) -> f32 { return " + std::string(100000, '-') + "x }\n")->codes(), "E0011");
}

} // namespace
