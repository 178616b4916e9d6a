// JSON through the same engine: the second language.
#include "FormatTestSupport.h"
#include "format/json/JsonLanguage.h"

#include <gtest/gtest.h>

namespace lpu::format {
namespace {

using testing::format;

std::string formatted(const std::string &source, unsigned width = 100) {
  FormatResult r = format(jsonLanguage(), source, width);
  EXPECT_EQ(r.status, FormatResult::Formatted) << r.details;
  return r.output;
}

TEST(JsonFormat, SpecAndFixpoint) {
  std::string expected = testing::readSpec("data.expected.json");
  EXPECT_EQ(formatted(testing::readSpec("data.json")), expected);
  EXPECT_EQ(formatted(expected), expected);
}

TEST(JsonFormat, Perturbation) {
  std::string expected = testing::readSpec("data.expected.json");
  for (unsigned seed = 1; seed <= 25; ++seed) {
    SCOPED_TRACE(seed);
    EXPECT_EQ(formatted(testing::perturb(jsonLanguage(), expected, seed)), expected);
  }
}

TEST(JsonFormat, CommentsAnywhereAreFormattedSafely) {
  std::string input = testing::readSpec("data.json");
  for (unsigned seed = 1; seed <= 60; ++seed) {
    std::string commented = testing::insertComments(jsonLanguage(), input, seed);
    for (unsigned width : {1u, 20u, 100u}) {
      FormatResult r = format(jsonLanguage(), commented, width);
      ASSERT_EQ(r.status, FormatResult::Formatted)
          << "seed " << seed << " width " << width << ": " << r.details << "\n" << commented;
    }
  }
}

TEST(JsonFormat, ExtremeWidths) {
  for (unsigned width : {1u, 7u, 10000u}) {
    FormatResult r = format(jsonLanguage(), testing::readSpec("data.json"), width);
    EXPECT_EQ(r.status, FormatResult::Formatted) << r.details;
  }
}

TEST(JsonFormat, Scalars) {
  EXPECT_EQ(formatted("  42 "), "42\n");
  EXPECT_EQ(formatted("[]"), "[]\n");
  EXPECT_EQ(formatted("{ }"), "{}\n");
  EXPECT_EQ(formatted("{\"a\":[1,{\"b\":null}]}"), "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ]\n}\n");
}

TEST(JsonFormat, SyntaxErrors) {
  const std::pair<const char *, const char *> cases[] = {
      {"{\"a\":}", "1:6: expected a value"},
      {"[1,]", "1:4: expected a value"},
      {"{\"a\" 1}", "1:6: expected ':'"},
      {"[01]", "1:2: malformed number"},
      {"\"open", "1:1: unterminated string"},
      {"[1] 2", "1:5: expected the end of the file after the value"},
      {"nul", "1:1: unexpected word 'nul'"},
      {"[1,\n 2 @]", "2:4: unexpected character '@'"},
      {"[\x01]", "1:2: unexpected character '\\x01'"},
  };
  for (auto [source, expected] : cases) {
    FormatResult r = format(jsonLanguage(), source);
    ASSERT_EQ(r.status, FormatResult::SyntaxErrors) << source;
    std::string got = std::to_string(r.errors[0].line) + ":" + std::to_string(r.errors[0].column) +
                      ": " + r.errors[0].message;
    EXPECT_EQ(got, expected) << source;
  }
}

} // namespace
} // namespace lpu::format
