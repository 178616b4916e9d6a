// The diagnostics engine: the catalogue, the error limit, source-ordered
// batches, and both renderers.
#include "frontend/DiagnosticRender.h"
#include "frontend/Diagnostics.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace lpu;

namespace {

struct Fixture {
  llvm::SourceMgr sources;
  unsigned id;
  const char *text;
  explicit Fixture(llvm::StringRef source) {
    id = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, "m.lpu"),
                                    llvm::SMLoc());
    text = sources.getMemoryBuffer(id)->getBufferStart();
  }
  llvm::SMRange at(size_t begin, size_t end) const {
    return {llvm::SMLoc::getFromPointer(text + begin), llvm::SMLoc::getFromPointer(text + end)};
  }
};

TEST(DiagnosticsTest, CatalogueCodesAreUniqueAndWellFormed) {
  std::set<std::string> seen;
  for (const DiagKindInfo &info : allDiagKinds()) {
    EXPECT_TRUE(seen.insert(info.code).second) << info.code;
    llvm::StringRef code(info.code);
    EXPECT_EQ(code.size(), 5u) << code.str();
    EXPECT_TRUE(code.startswith("E") || code.startswith("W")) << code.str();
    EXPECT_FALSE(llvm::StringRef(info.explanation).trim().empty()) << code.str();
  }
  ASSERT_NE(findDiagKind("e0101"), nullptr);
  EXPECT_STREQ(findDiagKind("e0101")->name, "UnclosedDelimiter");
  EXPECT_EQ(findDiagKind("E9999"), nullptr);
}

TEST(DiagnosticsTest, MessagesAreFormattedFromTheCatalogue) {
  Fixture f("const A = 1\n");
  DiagnosticEngine diags(f.sources);
  CollectingConsumer sink;
  diags.setConsumer(&sink);
  diags.report(DiagID::UnclosedDelimiter, f.at(0, 1), ")", "(", "3:14");
  diags.report(DiagID::SizeFunctionArity, f.at(0, 1), "min", size_t(3));
  ASSERT_EQ(sink.diagnostics.size(), 2u);
  EXPECT_EQ(sink.diagnostics[0].message, "expected ')' to close '(' opened at 3:14");
  EXPECT_EQ(sink.diagnostics[1].message, "'min' takes 2 arguments, but 3 were given");
  EXPECT_EQ(diags.errorCount(), 2u);
}

TEST(DiagnosticsTest, RuntimeArgumentsFormatAsReportDoes) {
  Fixture f("const A = 1\n");
  DiagnosticEngine diags(f.sources);
  CollectingConsumer sink;
  diags.setConsumer(&sink);
  diags.reportArgs(DiagID::UnclosedDelimiter, f.at(0, 1), {")", "(", "3:14"});
  diags.reportArgs(DiagID::KernelWiderThanMxm, f.at(0, 1), {"conv2d", "321", "320"});
  ASSERT_EQ(sink.diagnostics.size(), 2u);
  EXPECT_EQ(sink.diagnostics[0].message, "expected ')' to close '(' opened at 3:14");
  EXPECT_EQ(sink.diagnostics[1].message,
            "cannot compile 'conv2d' onto the chip yet (a kernel 321 wide, wider than the MXM's 320)");
  EXPECT_STREQ(sink.diagnostics[1].code(), "E0807");
}

TEST(DiagnosticsTest, ABugOfLpucSaysSoInItsMessage) {
  // A refusal that only a bug of lpuc can cause tells the user at once,
  // not only in its --explain text: the message starts "internal error".
  for (const DiagKindInfo &k : allDiagKinds()) {
    std::string explanation = k.explanation;
    std::replace(explanation.begin(), explanation.end(), '\n', ' ');
    bool bug = explanation.find("a bug in lpuc") != std::string::npos ||
               explanation.find("is lpuc's, not the program's") != std::string::npos;
    EXPECT_EQ(bug, llvm::StringRef(k.format).startswith("internal error"))
        << k.code << ": " << k.format;
  }
  Fixture f("const A = 1\n");
  DiagnosticEngine diags(f.sources);
  CollectingConsumer sink;
  diags.setConsumer(&sink);
  diags.reportArgs(DiagID::ResultLayout, f.at(0, 1), {"sum"});
  ASSERT_EQ(sink.diagnostics.size(), 1u);
  EXPECT_EQ(sink.diagnostics[0].message,
            "internal error: cannot compile 'sum' onto the chip (this sum's result layout)");
}

TEST(DiagnosticsTest, ErrorLimitStopsErrorsButNotWarnings) {
  Fixture f("x\n");
  DiagnosticEngine diags(f.sources);
  struct Sink : CollectingConsumer {
    unsigned told = 0;
    void errorLimitReached(unsigned) override { ++told; }
  } sink;
  diags.setConsumer(&sink);
  diags.setErrorLimit(2);
  for (int i = 0; i < 5; ++i)
    diags.report(DiagID::StrayCharacter, f.at(0, 1), "'x'");
  EXPECT_EQ(sink.diagnostics.size(), 2u);
  EXPECT_EQ(sink.told, 1u);
  EXPECT_EQ(diags.errorCount(), 5u); // still counted, so the exit code is right
}

TEST(DiagnosticsTest, BatchesComeOutInSourceOrder) {
  Fixture f("abcdef\n");
  DiagnosticEngine diags(f.sources);
  CollectingConsumer sink;
  diags.setConsumer(&sink);
  diags.beginBatch();
  diags.report(DiagID::StrayCharacter, f.at(4, 5), "'e'");
  diags.report(DiagID::StrayCharacter, f.at(1, 2), "'b'");
  diags.report(DiagID::StrayCharacter, f.at(4, 5), "'E'");
  EXPECT_TRUE(sink.diagnostics.empty());
  diags.endBatch();
  ASSERT_EQ(sink.diagnostics.size(), 3u);
  EXPECT_EQ(sink.diagnostics[0].message, "unexpected character 'b'");
  EXPECT_EQ(sink.diagnostics[1].message, "unexpected character 'e'"); // stable among equals
  EXPECT_EQ(sink.diagnostics[2].message, "unexpected character 'E'");
}

TEST(DiagnosticsTest, TextRendererDrawsSpansLabelsNotesAndHelp) {
  Fixture f("fn f() -> f16 {\n    let y = x + h\n}\n");
  std::string out;
  llvm::raw_string_ostream os(out);
  TextDiagnosticRenderer renderer(f.sources, os, /*color=*/false);
  DiagnosticEngine diags(f.sources);
  diags.setConsumer(&renderer);
  // Columns: 'x' at 13, '+' at 15, 'h' at 17 on line 2 (offsets 28, 30, 32).
  diags.report(DiagID::ChainedComparison, f.at(30, 31))
      .label(f.at(28, 29), "f16[B, S, D]")
      .label(f.at(32, 33), "f16[B, S, 2 * D]")
      .note("'h' comes from here", f.at(5, 6))
      .help("join them");
  os.flush();
  EXPECT_EQ(out, "m.lpu:2:15: error[E0104]: comparison operators cannot be chained\n"
                 "    2 |     let y = x + h\n"
                 "      |             ~ ^ ~ f16[B, S, 2 * D]\n"
                 "      |             |\n"
                 "      |             f16[B, S, D]\n"
                 "m.lpu:1:6: note: 'h' comes from here\n"
                 "    1 | fn f() -> f16 {\n"
                 "      |      ^\n"
                 "help: join them\n");
}

TEST(DiagnosticsTest, JsonRendererWritesOneObjectPerLine) {
  Fixture f("const A = 1 # 2\n");
  std::string out;
  llvm::raw_string_ostream os(out);
  JsonDiagnosticRenderer renderer(f.sources, os);
  DiagnosticEngine diags(f.sources);
  diags.setConsumer(&renderer);
  diags.report(DiagID::StrayCharacter, f.at(12, 13), "'#'").help("remove it");
  diags.report(DiagID::StrayCharacter, f.at(12, 13), "'#'");
  os.flush();
  llvm::StringRef rest(out);
  int objects = 0;
  while (!rest.empty()) {
    auto [line, tail] = rest.split('\n');
    rest = tail;
    auto value = llvm::json::parse(line);
    ASSERT_TRUE(bool(value)) << llvm::toString(value.takeError());
    const llvm::json::Object *obj = value->getAsObject();
    ASSERT_TRUE(obj);
    EXPECT_EQ(obj->getString("code"), llvm::Optional<llvm::StringRef>("E0001"));
    EXPECT_EQ(obj->getInteger("line"), llvm::Optional<int64_t>(1));
    EXPECT_EQ(obj->getInteger("column"), llvm::Optional<int64_t>(13));
    EXPECT_EQ(obj->getInteger("end_column"), llvm::Optional<int64_t>(14));
    ++objects;
  }
  EXPECT_EQ(objects, 2);
}

TEST(DiagnosticsTest, ExplanationsPrintForKnownCodesOnly) {
  std::string out;
  llvm::raw_string_ostream os(out);
  EXPECT_TRUE(printExplanation("E0104", os));
  os.flush();
  EXPECT_NE(out.find("a < b && b < c"), std::string::npos);
  EXPECT_FALSE(printExplanation("E0000", os));
}

} // namespace
