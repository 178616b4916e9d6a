#include "format/engine/LineDiff.h"

#include <gtest/gtest.h>

namespace lpu::format {
namespace {

TEST(LineDiff, EqualTextsGiveNothing) { EXPECT_EQ(unifiedDiff("a\nb\n", "a\nb\n", "x", "y"), ""); }

TEST(LineDiff, OneChangedLine) {
  EXPECT_EQ(unifiedDiff("a\nb\nc\n", "a\nB\nc\n", "old", "new"),
            "--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
}

TEST(LineDiff, SeparateHunksKeepThreeLinesOfContext) {
  std::string before, after;
  for (int i = 0; i < 20; ++i) {
    before += std::to_string(i) + "\n";
    after += (i == 2 || i == 15 ? "x" : std::to_string(i)) + "\n";
  }
  std::string diff = unifiedDiff(before, after, "a", "b");
  EXPECT_NE(diff.find("@@ -1,6 +1,6 @@\n 0\n 1\n-2\n+x\n 3\n 4\n 5\n"), std::string::npos) << diff;
  EXPECT_NE(diff.find("@@ -13,7 +13,7 @@\n 12\n 13\n 14\n-15\n+x\n 16\n 17\n 18\n"),
            std::string::npos)
      << diff;
}

TEST(LineDiff, InsertionAndDeletion) {
  EXPECT_EQ(unifiedDiff("a\nc\n", "a\nb\nc\n", "o", "n"), "--- o\n+++ n\n@@ -1,2 +1,3 @@\n a\n+b\n c\n");
  EXPECT_EQ(unifiedDiff("a\nb\n", "", "o", "n"), "--- o\n+++ n\n@@ -1,2 +0,0 @@\n-a\n-b\n");
}

TEST(LineDiff, MissingFinalNewlineIsShown) {
  EXPECT_EQ(unifiedDiff("a", "a\n", "o", "n"),
            "--- o\n+++ n\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+a\n");
}

} // namespace
} // namespace lpu::format
