// The scheduler's legalisation (scheduler/Legalize.h): the rewritten
// function computes what the declared one does (the reference interpreter
// runs both on the same random inputs and weights), and leaves no form the
// lowerings refuse.
#include "scheduler/Legalize.h"

#include "support/RandomTensor.h"
#include "interp/Interpreter.h"
#include "ir/Text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lpu::scheduler {
namespace {

std::unique_ptr<ir::Module> parse(llvm::StringRef text) {
  auto module = ir::parseModule(text, "test.ir");
  EXPECT_TRUE(bool(module)) << llvm::toString(module.takeError());
  return module ? std::move(*module) : nullptr;
}

/// Runs `a` and `b` on the same random inputs and weights: their outputs,
/// in order.
std::pair<std::vector<interp::NamedTensor>, std::vector<interp::NamedTensor>>
runBoth(const ir::Function &a, const ir::Function &b, uint64_t seed) {
  auto inputs = tensor::randomTensors(seed, interp::inputSpecs(a));
  auto specs = interp::paramSpecs(a);
  EXPECT_TRUE(bool(specs)) << llvm::toString(specs.takeError());
  if (!specs)
    return {};
  auto weights = tensor::randomTensors(seed + 1, *specs);
  auto x = interp::interpret(a, inputs, weights);
  auto y = interp::interpret(b, inputs, weights);
  EXPECT_TRUE(bool(x)) << llvm::toString(x.takeError());
  EXPECT_TRUE(bool(y)) << llvm::toString(y.takeError());
  if (!x || !y)
    return {};
  return {std::move(*x), std::move(*y)};
}

/// Legalises the one function of `text` and checks that it changed and
/// that nothing the lowerings take along one axis only is left.
std::unique_ptr<ir::Function> legalized(const ir::Function &fn) {
  auto out = legalize(fn);
  EXPECT_TRUE(bool(out)) << llvm::toString(out.takeError());
  if (!out)
    return nullptr;
  EXPECT_NE(*out, nullptr) << "nothing rewritten";
  if (!*out)
    return nullptr;
  for (const auto &op : (*out)->ops()) {
    const int64_t rank = op->operands().empty() ? 0 : int64_t(op->operand(0)->type().rank());
    switch (op->kind()) {
    case ir::OpKind::Softmax:
    case ir::OpKind::Argmax:
      EXPECT_EQ(op->intAttr("axis"), rank - 1) << ir::toString(**out);
      break;
    case ir::OpKind::Gather:
      EXPECT_EQ(op->intAttr("axis"), 0) << ir::toString(**out);
      break;
    case ir::OpKind::ReduceSum:
    case ir::OpKind::ReduceMean:
    case ir::OpKind::ReduceMax:
    case ir::OpKind::ReduceMin: {
      auto axes = op->intsAttr("axes").value_or(std::vector<int64_t>{});
      bool last = std::find(axes.begin(), axes.end(), rank - 1) != axes.end();
      EXPECT_TRUE(!last || axes.size() == 1) << ir::toString(**out);
      break;
    }
    default:
      break;
    }
  }
  return std::move(*out);
}

/// Bit for bit: data movement, argmax, softmax (the same arithmetic on
/// the same rows), max and min, integer sums.
TEST(Legalize, RewritesComputeTheSameBits) {
  const char *text = R"(
func @softmax0 {
  %0 = input {name = "x"} : f32[3, 5, 7]
  %1 = softmax %0 {axis = 0} : f32[3, 5, 7]
  return %1 {names = ["out"]}
}
func @softmax2 {
  %0 = input {name = "x"} : f16[2, 3, 5, 7]
  %1 = softmax %0 {axis = -2} : f16[2, 3, 5, 7]
  return %1 {names = ["out"]}
}
func @argmax {
  %0 = input {name = "x"} : f16[3, 5, 7]
  %1 = constant {value = 0.5} : f16[3, 5, 7]
  %2 = minimum %0, %1 : f16[3, 5, 7]
  %3 = argmax %2 {axis = 1} : i32[3, 7]
  return %3 {names = ["out"]}
}
func @argmaxkeep {
  %0 = input {name = "x"} : i32[2, 3, 5, 7]
  %1 = argmax %0 {axis = 0, keep = true} : i32[1, 3, 5, 7]
  return %1 {names = ["out"]}
}
func @gather1 {
  %0 = param {path = "t"} : f16[3, 11, 7]
  %1 = input {name = "ids"} : i32[2, 4]
  %2 = gather %0, %1 {axis = 1} : f16[3, 2, 4, 7]
  return %2 {names = ["out"]}
}
func @gatherlast {
  %0 = input {name = "t"} : f32[2, 3, 5]
  %1 = input {name = "ids"} : i32[6]
  %2 = gather %0, %1 {axis = -1} : f32[2, 3, 6]
  return %2 {names = ["out"]}
}
func @gatherscalar {
  %0 = param {path = "t"} : f32[3, 5, 7]
  %1 = input {name = "ids"} : i32[]
  %2 = gather %0, %1 {axis = 1} : f32[3, 7]
  return %2 {names = ["out"]}
}
func @max {
  %0 = input {name = "x"} : f16[2, 3, 5, 7]
  %1 = reduce_max %0 {axes = [1, 3], keep = true} : f16[2, 1, 5, 1]
  return %1 {names = ["out"]}
}
func @isum {
  %0 = input {name = "x"} : i8[3, 5, 7]
  %1 = reduce_sum %0 {axes = [0, 1, 2]} : i8[]
  return %1 {names = ["out"]}
}
)";
  auto module = parse(text);
  ASSERT_TRUE(module);
  uint64_t seed = 1;
  for (const auto &fn : module->functions) {
    SCOPED_TRACE(fn->name());
    auto out = legalized(*fn);
    ASSERT_TRUE(out);
    auto [want, got] = runBoth(*fn, *out, seed++);
    ASSERT_EQ(want.size(), 1u);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].first, want[0].first);
    EXPECT_TRUE(got[0].second == want[0].second) << ir::toString(*out);
  }
}

/// Float sums and means over the last axis and others add the same terms
/// in f32 in another order, rounded once: within the reordering's bound.
TEST(Legalize, FloatSumsAgreeWithinTheReorderingBound) {
  const char *text = R"(
func @sum {
  %0 = input {name = "x"} : f32[3, 5, 7]
  %1 = reduce_sum %0 {axes = [0, 1, 2]} : f32[]
  return %1 {names = ["out"]}
}
func @mean {
  %0 = input {name = "x"} : f16[3, 5, 7]
  %1 = reduce_mean %0 {axes = [0, 2], keep = true} : f16[1, 5, 1]
  return %1 {names = ["out"]}
}
)";
  auto module = parse(text);
  ASSERT_TRUE(module);
  for (const auto &fn : module->functions) {
    SCOPED_TRACE(fn->name());
    auto out = legalized(*fn);
    ASSERT_TRUE(out);
    auto [want, got] = runBoth(*fn, *out, 7);
    ASSERT_EQ(got.size(), 1u);
    const tensor::Tensor &a = want[0].second, &b = got[0].second;
    ASSERT_EQ(a.dtype(), b.dtype());
    ASSERT_EQ(a.shape(), b.shape());
    for (int64_t i = 0; i < a.numElements(); ++i) {
      float ref = a.getFloat(i), sim = b.getFloat(i);
      // f32 sums of 105 terms under 1 in size; one f16 step of the result.
      float ulp16 = a.dtype() == tensor::DType::F16 ? std::ldexp(1.0f, -10) * std::abs(ref) : 0.0f;
      EXPECT_LE(std::abs(sim - ref), 1e-5f + ulp16) << i;
    }
  }
}

TEST(Legalize, AFunctionWithNothingToRewriteIsScheduledAsItIs) {
  auto module = parse(R"(
func @f {
  %0 = input {name = "x"} : f32[3, 5, 7]
  %1 = softmax %0 {axis = 2} : f32[3, 5, 7]
  %2 = reduce_sum %1 {axes = [0, 1]} : f32[7]
  %3 = argmax %0 {axis = -1} : i32[3, 5]
  return %2, %3 {names = ["a", "b"]}
}
)");
  ASSERT_TRUE(module);
  auto out = legalize(*module->functions[0]);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  EXPECT_EQ(*out, nullptr);
}

// Which updates the scatter lowering writes in place: a state read by its
// update alone, at a run-time position, along a rows' axis, one index's
// positions within a slice (the chip's 320 lanes, 8192 vectors a slice),
// or one column along the last axis.
TEST(Legalize, UpdatesInPlace) {
  auto module = parse(R"(
func @f {
  %0 = input {name = "keys", state = true} : f16[2, 16, 8]
  %1 = input {name = "pos"} : i32[]
  %2 = input {name = "k"} : f16[2, 1, 8]
  %3 = update %0, %1, %2 {axis = 1} : f16[2, 16, 8]
  %4 = input {name = "cols", state = true} : f16[8, 16]
  %5 = input {name = "c"} : f16[8, 1]
  %6 = update %4, %1, %5 {axis = 1} : f16[8, 16]
  %7 = constant {value = 0} : i32[]
  %8 = input {name = "vals", state = true} : f16[2, 16, 8]
  %9 = update %8, %7, %2 {axis = 1} : f16[2, 16, 8]
  %10 = input {name = "read", state = true} : f16[2, 16, 8]
  %11 = update %10, %1, %2 {axis = 1} : f16[2, 16, 8]
  %12 = input {name = "x"} : f16[2, 16, 8]
  %13 = update %12, %1, %2 {axis = 1} : f16[2, 16, 8]
  %14 = input {name = "long", state = true} : f16[2, 9000, 8]
  %15 = update %14, %1, %2 {axis = 1} : f16[2, 9000, 8]
  %16 = input {name = "two", state = true} : f16[8, 16]
  %17 = input {name = "c2"} : f16[8, 2]
  %18 = update %16, %1, %17 {axis = 1} : f16[8, 16]
  return %3, %6, %9, %11, %10, %13, %15, %18 {names = ["keys", "cols", "vals", "read", "old", "y", "long", "two"], states = ["keys", "cols", "vals", "read", "long", "two"]}
}
)");
  ASSERT_TRUE(module);
  const ir::Function &fn = *module->functions[0];
  auto at = [&](size_t i) -> const ir::Op & { return *fn.ops()[i]; };
  EXPECT_TRUE(updatesInPlace(at(3), fn, 320, 8192));
  EXPECT_TRUE(updatesInPlace(at(6), fn, 320, 8192)) << "one column along the last axis";
  EXPECT_FALSE(updatesInPlace(at(18), fn, 320, 8192)) << "two columns along the last axis";
  EXPECT_FALSE(updatesInPlace(at(9), fn, 320, 8192)) << "at a constant position";
  EXPECT_FALSE(updatesInPlace(at(11), fn, 320, 8192)) << "the old value is read too";
  EXPECT_FALSE(updatesInPlace(at(13), fn, 320, 8192)) << "not a state";
  EXPECT_FALSE(updatesInPlace(at(15), fn, 320, 8192)) << "a head's positions exceed a slice";
  EXPECT_TRUE(updatesInPlace(at(15), fn, 320, 16384));
  EXPECT_FALSE(updatesInPlace(at(1), fn, 320, 8192)) << "not an update";
}

} // namespace
} // namespace lpu::scheduler
