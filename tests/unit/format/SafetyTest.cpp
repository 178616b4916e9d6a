// The safety net: rules that lose, repeat or reorder things must be caught,
// whatever the language. JSON's rules are bent here on purpose.
#include "FormatTestSupport.h"
#include "format/json/JsonLanguage.h"

#include <gtest/gtest.h>

namespace lpu::format {
namespace {

/// JSON with one rule replaced.
struct BentJson {
  static RuleTable &table() {
    static RuleTable t;
    return t;
  }
  static const RuleTable &rules() { return table(); }
  static Language make(int kind, Rule rule) {
    table() = jsonLanguage().rules();
    table().byKind[kind] = rule;
    Language l = jsonLanguage();
    l.rules = &BentJson::rules;
    return l;
  }
};

FormatResult run(const Language &l, const std::string &source) {
  return formatSource(l, source, FormatOptions{});
}

Doc arrayTwice(FormatContext &cx, uint32_t node) {
  std::vector<Doc> parts;
  for (SyntaxChild c : cx.childrenOf(node))
    parts.push_back(cx.child(c));
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  parts.push_back(cx.child(kids.back())); // the closing bracket again
  return cx.doc().concat(parts);
}

Doc arrayReversed(FormatContext &cx, uint32_t node) {
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  // [a, b] printed as [b, a]: still JSON, but not the same document.
  DocArena &d = cx.doc();
  Doc a = cx.child(kids[1]), comma = cx.child(kids[2]), b = cx.child(kids[3]);
  return d.concat({cx.child(kids[0]), b, comma, a, cx.child(kids[4])});
}

Doc arrayWithoutComments(FormatContext &cx, uint32_t node) {
  std::vector<Doc> parts;
  for (SyntaxChild c : cx.childrenOf(node))
    parts.push_back(cx.doc().text(cx.tree().text(cx.tree().tokens[cx.firstToken(c)])));
  for (SyntaxChild c : cx.childrenOf(node))
    cx.dropToken(c.index); // marks the tokens printed but loses their comments
  return cx.doc().concat(parts);
}

Doc memberBroken(FormatContext &cx, uint32_t node) {
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  DocArena &d = cx.doc();
  return d.concat({cx.child(kids[1]), cx.child(kids[0]), cx.child(kids[2])}); // `:"a" 1`
}

Doc documentNotIdempotent(FormatContext &cx, uint32_t node) {
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  DocArena &d = cx.doc();
  // Indents by whether the input started with a space: a second pass differs.
  Doc lead = cx.tree().source[0] == ' ' ? Doc{} : d.text(" ");
  return d.concat({lead, cx.child(kids[0]), cx.token(kids[1].index), d.hardline()});
}

TEST(Safety, TokenPrintedTwiceIsCaught) {
  FormatResult r = run(BentJson::make(json::Array, arrayTwice), "[1]");
  ASSERT_EQ(r.status, FormatResult::InternalError);
  EXPECT_NE(r.details.find("token ']' at 1:3 printed 2 times"), std::string::npos) << r.details;
  EXPECT_TRUE(r.output.empty());
}

TEST(Safety, LostCommentIsCaught) {
  FormatResult r = run(BentJson::make(json::Array, arrayWithoutComments), "[1 /* c */]");
  ASSERT_EQ(r.status, FormatResult::InternalError);
  // The printed-once bookkeeping is satisfied (dropToken counts the
  // comments); the comparison of comment lists is the net that catches it.
  EXPECT_NE(r.details.find("the output has 0 comments, the input 1"), std::string::npos)
      << r.details;
}

TEST(Safety, ReorderedTokensAreCaught) {
  FormatResult r = run(BentJson::make(json::Array, arrayReversed), "[1, 2]");
  ASSERT_EQ(r.status, FormatResult::InternalError);
  EXPECT_NE(r.details.find("tokens differ"), std::string::npos) << r.details;
}

TEST(Safety, UnparsableOutputIsCaught) {
  FormatResult r = run(BentJson::make(json::Member, memberBroken), "{\"a\": 1}");
  ASSERT_EQ(r.status, FormatResult::InternalError);
  EXPECT_NE(r.details.find("the output does not parse"), std::string::npos) << r.details;
}

TEST(Safety, NonIdempotentRulesAreCaught) {
  FormatResult r = run(BentJson::make(json::Document, documentNotIdempotent), "[1]");
  ASSERT_EQ(r.status, FormatResult::InternalError);
  EXPECT_NE(r.details.find("not idempotent"), std::string::npos) << r.details;
}

TEST(Safety, CorruptedOutputIsCaught) {
  FormatOptions options;
  options.corruptOutputForTesting = true;
  FormatResult r = formatSource(jsonLanguage(), "[1]", options);
  ASSERT_EQ(r.status, FormatResult::InternalError);
  EXPECT_NE(r.details.find("comments differ"), std::string::npos) << r.details;
}

} // namespace
} // namespace lpu::format
