// The document algebra and printer on their own, with no language involved.
#include "format/engine/Doc.h"
#include "format/engine/Printer.h"

#include <gtest/gtest.h>

namespace lpu::format {
namespace {

std::string print(DocArena &d, Doc doc, unsigned width = 80, unsigned indent = 2) {
  return printDoc(d, doc, LayoutOptions{width, indent});
}

/// `[a, b, c]` as a group that breaks one element per line.
Doc list(DocArena &d, const std::vector<std::string> &items) {
  std::vector<Doc> parts;
  for (const std::string &s : items)
    parts.push_back(d.text(s));
  Doc body = d.join(d.concat({d.text(","), d.line()}), parts);
  return d.group(d.concat({d.text("["), d.indent(d.concat({d.softline(), body})),
                           d.ifBreak(d.text(","), Doc{}), d.softline(), d.text("]")}));
}

TEST(DocPrinter, GroupStaysFlatWhenItFits) {
  DocArena d;
  EXPECT_EQ(print(d, list(d, {"a", "b", "c"})), "[a, b, c]");
}

TEST(DocPrinter, GroupBreaksWhenTooWide) {
  DocArena d;
  EXPECT_EQ(print(d, list(d, {"aaaa", "bbbb", "cccc"}), 10), "[\n  aaaa,\n  bbbb,\n  cccc,\n]");
}

TEST(DocPrinter, WidthIsExactBoundary) {
  DocArena d;
  Doc doc = list(d, {"ab", "cd"}); // "[ab, cd]" is 8 columns
  EXPECT_EQ(print(d, doc, 8), "[ab, cd]");
  DocArena e;
  EXPECT_EQ(print(e, list(e, {"ab", "cd"}), 7), "[\n  ab,\n  cd,\n]");
}

TEST(DocPrinter, OuterGroupBreaksBeforeInner) {
  DocArena d;
  Doc inner = list(d, {"x", "y"});
  Doc outer = d.group(d.concat({d.text("f("), d.indent(d.concat({d.softline(), inner, d.text(","),
                                                                  d.line(), d.text("zzzzzzzz")})),
                                d.softline(), d.text(")")}));
  EXPECT_EQ(print(d, outer, 12), "f(\n  [x, y],\n  zzzzzzzz\n)");
}

TEST(DocPrinter, HardLineBreaksEnclosingGroups) {
  DocArena d;
  Doc doc = d.group(d.concat({d.text("a"), d.line(), d.text("b"), d.hardline(), d.text("c")}));
  EXPECT_EQ(print(d, doc), "a\nb\nc");
}

TEST(DocPrinter, BreakParentBreaksGroup) {
  DocArena d;
  Doc doc = d.group(d.concat({d.text("a"), d.line(), d.text("b"), d.breakParent()}));
  EXPECT_EQ(print(d, doc), "a\nb");
}

TEST(DocPrinter, IndentAndAlign) {
  DocArena d;
  Doc doc = d.concat({d.text("x"), d.indent(d.concat({d.hardline(), d.text("y"),
                                                       d.align(3, d.concat({d.hardline(), d.text("z")}))}))});
  EXPECT_EQ(print(d, doc, 80, 4), "x\n    y\n       z");
}

TEST(DocPrinter, LineSuffixWaitsForTheNewline) {
  DocArena d;
  Doc doc = d.concat({d.text("a"), d.lineSuffix(" // note"), d.text(";"), d.hardline(), d.text("b")});
  EXPECT_EQ(print(d, doc), "a; // note\nb");
}

TEST(DocPrinter, LineSuffixFlushedAtTheEnd) {
  DocArena d;
  Doc doc = d.concat({d.text("a"), d.lineSuffix(" // end")});
  EXPECT_EQ(print(d, doc), "a // end");
}

TEST(DocPrinter, FillPacksLines) {
  DocArena d;
  std::vector<Doc> parts;
  for (int i = 0; i < 6; ++i) {
    if (i)
      parts.push_back(d.concat({d.text(","), d.line()}));
    parts.push_back(d.text("item" + std::to_string(i)));
  }
  EXPECT_EQ(print(d, d.fill(parts), 20), "item0, item1, item2,\nitem3, item4, item5");
}

TEST(DocPrinter, FreshLineOnlyWhenLineHasContent) {
  DocArena d;
  Doc doc = d.concat({d.text("a"), d.freshline(), d.text("b"), d.hardline(), d.freshline(),
                      d.text("c")});
  EXPECT_EQ(print(d, doc), "a\nb\nc");
}

TEST(DocPrinter, NoTrailingSpacesBeforeNewlines) {
  DocArena d;
  Doc doc = d.concat({d.text("a "), d.indent(d.concat({d.hardline(), d.hardline(), d.text("b")}))});
  EXPECT_EQ(print(d, doc), "a\n\n  b");
}

TEST(DocPrinter, VerbatimTextKeepsItsLines) {
  DocArena d;
  Doc doc = d.group(d.concat({d.text("x"), d.line(), d.text("/* a\n   b */"), d.text(" y")}));
  EXPECT_EQ(print(d, doc), "x\n/* a\n   b */ y");
}

TEST(DocPrinter, WidthCountsCodePointsNotBytes) {
  DocArena d;
  Doc doc = list(d, {"\"\xC3\xA9\xC3\xA9\"", "b"}); // ["éé", b] is 10 columns, 12 bytes
  EXPECT_EQ(print(d, doc, 11), "[\"\xC3\xA9\xC3\xA9\", b]");
}

TEST(DocPrinter, DumpShowsStructure) {
  DocArena d;
  Doc doc = d.group(d.concat({d.text("a"), d.line(), d.text("b")}));
  EXPECT_EQ(dumpDoc(d, doc), "group([([\"a\", line, \"b\"])])");
}

TEST(DocPrinter, LinearInDocumentSize) {
  // Not a timing test: a 200,000-element group must print (and break) at all.
  DocArena d;
  std::vector<std::string> items(200000, "x");
  std::string out = print(d, list(d, items), 100);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 200001);
}

} // namespace
} // namespace lpu::format
