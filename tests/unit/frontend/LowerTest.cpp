// Lowering through its library interface: functions per entry bucket,
// locations on every op, no module for a program with errors, and IR
// verifier failures reported as internal errors at the source.
#include "frontend/Lower.h"
#include "frontend/Parser.h"
#include "ir/Verifier.h"

#include <llvm/Support/MemoryBuffer.h>

#include <gtest/gtest.h>

using namespace lpu;

namespace {

struct Lowered {
  llvm::SourceMgr sources;
  DiagnosticEngine diags{sources};
  CollectingConsumer collected;
  std::unique_ptr<ast::Module> module;
  std::unique_ptr<ir::Module> ir;

  explicit Lowered(llvm::StringRef text) {
    diags.setConsumer(&collected);
    unsigned id = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "t.lpu"),
                                             llvm::SMLoc());
    module = parseModule(diags, id);
    CheckOptions options;
    options.importPaths.push_back(LPU_SOURCE_DIR "/stdlib");
    ir = lowerProgram(*module, diags, options);
  }
  std::vector<std::string> codes() const {
    std::vector<std::string> out;
    for (const Diagnostic &d : collected.diagnostics)
      out.push_back(d.code());
    return out;
  }
};

const char *kLinear = R"(
import std.nn
model M<D = 4> {
  param fc: nn.Linear<D, 2 * D>
  fn forward<B>(x: f16[B, D]) -> f16[B, 2 * D] {
    return fc(x) + 1.0
  }
}
entry e = M.forward<B in {1, 3}>
)";

} // namespace

TEST(LowerTest, OneFunctionPerBucketWithInputsParamsAndOneOutput) {
  Lowered l(kLinear);
  ASSERT_TRUE(l.collected.diagnostics.empty());
  ASSERT_TRUE(l.ir);
  ASSERT_EQ(l.ir->functions.size(), 2u);
  for (int64_t b : {1, 3}) {
    const ir::Function *fn = l.ir->lookup("e", {{"B", b}});
    ASSERT_TRUE(fn) << "B = " << b;
    EXPECT_TRUE(ir::verify(*fn).empty());
    ASSERT_EQ(fn->inputs().size(), 1u);
    EXPECT_EQ(fn->inputs()[0]->stringAttr("name"), "x");
    EXPECT_EQ(fn->inputs()[0]->type(), (ir::Type{ir::DType::F16, {b, 4}}));
    std::vector<std::string> paths;
    for (const ir::Op *p : fn->params())
      paths.push_back(*p->stringAttr("path"));
    EXPECT_EQ(paths, (std::vector<std::string>{"fc.w", "fc.b"}));
    const ir::Op *ret = fn->terminator();
    ASSERT_TRUE(ret);
    ASSERT_EQ(ret->operands().size(), 1u);
    EXPECT_EQ(ret->stringsAttr("names"), (std::vector<std::string>{"out"}));
    EXPECT_EQ(ret->operand(0)->type(), (ir::Type{ir::DType::F16, {b, 8}}));
    // The output is the `+` of `fc(x) + 1.0`, in t.lpu at 6:18.
    EXPECT_EQ(ret->operand(0)->kind(), ir::OpKind::Add);
    EXPECT_EQ(ret->operand(0)->loc(), (ir::Location{"t.lpu", 6, 18}));
    for (const auto &op : fn->ops())
      EXPECT_TRUE(op->loc().known()) << ir::mnemonic(op->kind()).str();
  }
}

TEST(LowerTest, ProgramWithErrorsGivesNoModule) {
  Lowered l(R"(
fn f(x: f32[2]) -> f32[3] { return x }
entry e = f
)");
  EXPECT_FALSE(l.ir);
  EXPECT_EQ(l.codes(), (std::vector<std::string>{"E0300"}));
}

TEST(LowerTest, VerifierFailureIsAnInternalErrorAtTheSource) {
  Lowered l(kLinear);
  ASSERT_TRUE(l.ir);
  // Break the IR the way a lowering bug would: the add's type is wrong.
  ir::Function &fn = *l.ir->functions[0];
  ir::Op *add = fn.terminator()->operand(0);
  add->setType(ir::Type{ir::DType::F32, add->type().shape});
  EXPECT_FALSE(verifyLowered(*l.ir, l.diags));
  ASSERT_FALSE(l.collected.diagnostics.empty());
  const Diagnostic &d = l.collected.diagnostics[0];
  EXPECT_STREQ(d.code(), "E0701");
  EXPECT_NE(d.message.find("in func @e"), std::string::npos) << d.message;
  LineColumn at = lineColumn(l.sources, d.primary.Start);
  EXPECT_EQ(at.line, 6u);
  EXPECT_EQ(at.column, 18u);
}
