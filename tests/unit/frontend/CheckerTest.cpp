// The checker through its library interface: results of entries, bucket
// order, stdlib search paths, and diagnostics as values.
#include "frontend/Checker.h"
#include "frontend/Parser.h"

#include <llvm/Support/MemoryBuffer.h>

#include <gtest/gtest.h>

using namespace lpu;

namespace {

struct Checked {
  llvm::SourceMgr sources;
  DiagnosticEngine diags{sources};
  CollectingConsumer collected;
  std::unique_ptr<ast::Module> module;
  CheckResult result;

  explicit Checked(llvm::StringRef text, CheckOptions options = {}) {
    diags.setConsumer(&collected);
    unsigned id = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "t.lpu"),
                                             llvm::SMLoc());
    module = parseModule(diags, id);
    options.importPaths.push_back(LPU_SOURCE_DIR "/stdlib");
    result = checkProgram(*module, diags, options);
  }
  std::vector<std::string> codes() const {
    std::vector<std::string> out;
    for (const Diagnostic &d : collected.diagnostics)
      out.push_back(d.code());
    return out;
  }
};

} // namespace

TEST(CheckerTest, EntryBucketsInOrderWithFigures) {
  Checked c(R"(
import std.nn
model M<D = 4> {
  param fc: nn.Linear<D, 2 * D>
  fn forward<B, S>(x: f16[B, S, D]) -> f16[B, S, 2 * D] { return fc(x) }
}
entry e = M.forward<B in {1, 2}, S in {3, 5}>
)");
  ASSERT_TRUE(c.collected.diagnostics.empty());
  ASSERT_EQ(c.result.entries.size(), 1u);
  const EntryReport &e = c.result.entries[0];
  EXPECT_EQ(e.target, "M<D = 4>.forward");
  ASSERT_EQ(e.buckets.size(), 4u);
  // The last set varies fastest.
  EXPECT_EQ(e.buckets[1].sizes[0], (std::pair<std::string, int64_t>{"B", 1}));
  EXPECT_EQ(e.buckets[1].sizes[1], (std::pair<std::string, int64_t>{"S", 5}));
  EXPECT_EQ(e.buckets[3].signature, "(x: f16[2, 5, 4]) -> f16[2, 5, 8]");
  for (const BucketReport &b : e.buckets) {
    EXPECT_EQ(b.params, 4u * 8u + 8u);
    EXPECT_EQ(b.paramBytes, 2 * b.params);
    int64_t rows = b.sizes[0].second * b.sizes[1].second;
    // 2 * rows * 4 * 8 for the matmul, rows * 8 for the bias.
    EXPECT_EQ(b.flops, static_cast<uint64_t>(2 * rows * 4 * 8 + rows * 8));
  }
}

TEST(CheckerTest, ErrorsAreValuesWithCodes) {
  Checked c(R"(
fn f<N>(x: f16[N], y: f16[2 * N]) -> f16[N] { return x + y }
fn g<N>(x: f16[N]) -> f16[N] { return unknown(x) }
)");
  EXPECT_EQ(c.codes(), (std::vector<std::string>{"E0302", "E0200"}));
  EXPECT_TRUE(c.result.entries.empty());
}

TEST(CheckerTest, DeferredCheckFailsOnlyInTheBucketThatBreaksIt) {
  Checked c(R"(
fn half<N>(x: f16[N]) -> f16[2, N / 2] { return reshape(x, [2, N / 2]) }
entry e = half<N in {4, 5, 6}>
)");
  EXPECT_EQ(c.codes(), (std::vector<std::string>{"E0402"}));
  ASSERT_EQ(c.result.entries.size(), 1u);
  ASSERT_EQ(c.result.entries[0].buckets.size(), 2u); // N = 5 failed
  EXPECT_EQ(c.result.entries[0].buckets[1].sizes[0].second, 6);
  bool named = false;
  for (const DiagNote &n : c.collected.diagnostics[0].notes)
    named |= n.message == "while checking entry 'e' with N = 5";
  EXPECT_TRUE(named);
}

TEST(CheckerTest, UnrollLimitIsAnOption) {
  const char *text = R"(
fn f(x: f16[2]) -> f16[2] {
  var h = x
  for i in 0..10 { h = h + 1 }
  return h
}
entry e = f
)";
  CheckOptions small;
  small.maxUnroll = 9;
  EXPECT_EQ(Checked(text, small).codes(), (std::vector<std::string>{"E0504"}));
  Checked ok(text);
  EXPECT_TRUE(ok.codes().empty());
  EXPECT_EQ(ok.result.entries[0].buckets[0].flops, 20u);
}

TEST(CheckerTest, StdlibPathsAreRelativeToTheBinary) {
  auto paths = defaultStdlibPaths("/opt/lpu/build/bin");
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0], "/opt/lpu/build/stdlib");
  EXPECT_EQ(paths[1], "/opt/lpu/stdlib");
  EXPECT_EQ(paths[2], "/opt/lpu/build/share/lpu/stdlib");
}
