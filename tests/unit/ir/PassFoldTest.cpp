// The fold pass's arithmetic: f16/bf16 rounding, the cases it must leave
// alone, and reductions of splats. Expected values come from NumPy (the
// python line is given beside each) or, for bfloat16, which NumPy lacks,
// from rounding the f32 bit pattern by hand in Python.
#include "ir/passes/Passes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace lpu::ir {
namespace {

Type t(DType dtype, std::vector<int64_t> shape = {2, 3}) { return Type{dtype, std::move(shape)}; }

Op *constant(Function &fn, const Type &type, Attr value) {
  Op *op = fn.append(OpKind::Constant, type, {});
  op->setAttr("value", std::move(value));
  return op;
}

void finish(Function &fn, Op *result) {
  Op *ret = fn.append(OpKind::Return, Type{}, {result});
  ret->setAttr("names", std::vector<std::string>{"out"});
}

/// Runs fold; returns the value the function returns if it became a
/// constant.
std::optional<double> foldedResult(Function &fn) {
  createFoldPass()->run(fn);
  const Op *out = fn.terminator()->operand(0);
  if (out->kind() != OpKind::Constant)
    return std::nullopt;
  EXPECT_EQ(out->type(), fn.terminator()->operand(0)->type());
  if (auto v = out->floatAttr("value"))
    return *v;
  if (auto b = out->boolAttr("value"))
    return *b ? 1.0 : 0.0;
  return std::nullopt;
}

std::optional<double> foldBinary(OpKind kind, DType dtype, Attr a, Attr b,
                                 std::optional<DType> resultDType = std::nullopt) {
  Function fn("f");
  Op *x = constant(fn, t(dtype), std::move(a));
  Op *y = constant(fn, t(dtype), std::move(b));
  finish(fn, fn.append(kind, t(resultDType.value_or(dtype)), {x, y}));
  return foldedResult(fn);
}

std::optional<double> foldUnary(OpKind kind, DType from, Attr a, DType to) {
  Function fn("f");
  Op *x = constant(fn, t(from), std::move(a));
  finish(fn, fn.append(kind, t(to), {x}));
  return foldedResult(fn);
}

TEST(PassFoldTest, F16AddRoundsTiesToEven) {
  // np.float16(1) + np.float16(2**-11) == 1.0 (halfway, the even neighbour)
  EXPECT_EQ(foldBinary(OpKind::Add, DType::F16, 1.0, std::ldexp(1.0, -11)), 1.0);
  // np.float16(np.float32(1) + np.float32(3 * 2**-11)) == 1.001953125
  EXPECT_EQ(foldBinary(OpKind::Add, DType::F16, 1.0, 3 * std::ldexp(1.0, -11)), 1.001953125);
}

TEST(PassFoldTest, F16OperandsAreRoundedFirst) {
  // The constant 0.1 is held as np.float16(0.1); times 3 in f32, then to f16:
  // np.float16(np.float32(np.float16(0.1)) * np.float32(3)) == 0.2998046875
  EXPECT_EQ(foldBinary(OpKind::Mul, DType::F16, 0.1, 3.0), 0.2998046875);
  // np.float16(np.float32(1) / np.float32(3)) == 0.333251953125
  EXPECT_EQ(foldBinary(OpKind::Div, DType::F16, 1.0, 3.0), 0.333251953125);
}

TEST(PassFoldTest, BF16RoundsTheF32Result) {
  // f32(1/3) = 0x3EAAAAAB; the low half 0xAAAB rounds up: 0x3EAB0000 = 0.333984375
  EXPECT_EQ(foldBinary(OpKind::Div, DType::BF16, 1.0, 3.0), 0.333984375);
  // 1 + 2^-8 is halfway between bf16 neighbours: ties to even gives 1.0
  EXPECT_EQ(foldBinary(OpKind::Add, DType::BF16, 1.0, std::ldexp(1.0, -8)), 1.0);
}

TEST(PassFoldTest, OverflowToInfinityIsNotFolded) {
  // np.float16(np.float32(300) * np.float32(300)) is inf
  EXPECT_EQ(foldBinary(OpKind::Mul, DType::F16, 300.0, 300.0), std::nullopt);
  EXPECT_EQ(foldBinary(OpKind::Div, DType::F32, 1.0, 0.0), std::nullopt);
  EXPECT_EQ(foldUnary(OpKind::Log, DType::F32, -1.0, DType::F32), std::nullopt);
}

TEST(PassFoldTest, TranscendentalsInF16) {
  // np.float16(np.exp(np.float32(1))) == 2.71875
  EXPECT_EQ(foldUnary(OpKind::Exp, DType::F16, 1.0, DType::F16), 2.71875);
  // np.float16(0.5 * (1 + math.erf(1 / math.sqrt(2)))) == 0.84130859375
  EXPECT_EQ(foldUnary(OpKind::Gelu, DType::F16, 1.0, DType::F16), 0.84130859375);
}

TEST(PassFoldTest, ConvertRoundsToTheTarget) {
  // np.float16(np.float32(0.1)) == 0.0999755859375
  EXPECT_EQ(foldUnary(OpKind::Convert, DType::F32, 0.1, DType::F16), 0.0999755859375);
  EXPECT_EQ(foldUnary(OpKind::Convert, DType::F32, 3.0, DType::I32), 3.0);
  // float -> int truncates toward zero and saturates (docs/ir.md)
  EXPECT_EQ(foldUnary(OpKind::Convert, DType::F32, 2.5, DType::I32), 2.0);
  EXPECT_EQ(foldUnary(OpKind::Convert, DType::F32, -2.5, DType::I32), -2.0);
  EXPECT_EQ(foldUnary(OpKind::Convert, DType::F32, 300.0, DType::I8), 127.0);
  // int -> int keeps the low bits: np.int32(300).astype(np.int8) == 44
  EXPECT_EQ(foldUnary(OpKind::Convert, DType::I32, int64_t{300}, DType::I8), 44.0);
  EXPECT_EQ(foldUnary(OpKind::Convert, DType::F32, -2.0, DType::Bool), 1.0);
  // int -> bf16 goes through f32 (docs/ir.md), as the interpreter does:
  // np.float32(16842753) == 16842752 = 2^24 + 2^16, a bf16 tie that goes to
  // the even 2^24 (rounding 16842753 once would give 2^24 + 2^17).
  EXPECT_EQ(foldUnary(OpKind::Convert, DType::I32, int64_t{(1 << 24) + (1 << 16) + 1},
                      DType::BF16),
            16777216.0);
  EXPECT_EQ(foldUnary(OpKind::Convert, DType::I32, int64_t{(1 << 24) + (1 << 16) + 1},
                      DType::F32),
            16842752.0); // np.float32(16842753)
}

TEST(PassFoldTest, IntegersWrapAndDivisionFloors) {
  // (100 + 28) wraps in i8: np.int8(-128)
  EXPECT_EQ(foldBinary(OpKind::Add, DType::I8, int64_t{100}, int64_t{28}), -128.0);
  EXPECT_EQ(foldBinary(OpKind::Add, DType::I8, int64_t{100}, int64_t{27}), 127.0);
  EXPECT_EQ(foldBinary(OpKind::Div, DType::I32, int64_t{7}, int64_t{2}), 3.0);
  // Python: -7 // 2 == -4, -7 % 3 == 2, 7 % -2 == -1
  EXPECT_EQ(foldBinary(OpKind::Div, DType::I32, int64_t{-7}, int64_t{2}), -4.0);
  EXPECT_EQ(foldBinary(OpKind::Rem, DType::I32, int64_t{-7}, int64_t{3}), 2.0);
  EXPECT_EQ(foldBinary(OpKind::Rem, DType::I32, int64_t{7}, int64_t{-2}), -1.0);
  // Division and remainder by zero give 0 (docs/ir.md).
  EXPECT_EQ(foldBinary(OpKind::Div, DType::I32, int64_t{1}, int64_t{0}), 0.0);
  EXPECT_EQ(foldBinary(OpKind::Rem, DType::I32, int64_t{1}, int64_t{0}), 0.0);
  // abs(-128) and -(-128) wrap to -128 in i8.
  EXPECT_EQ(foldUnary(OpKind::Abs, DType::I8, int64_t{-128}, DType::I8), -128.0);
  EXPECT_EQ(foldUnary(OpKind::Neg, DType::I8, int64_t{-128}, DType::I8), -128.0);
  EXPECT_EQ(foldBinary(OpKind::Pow, DType::I32, int64_t{3}, int64_t{4}), 81.0);
  // 2**15 wraps in i16: -32768
  EXPECT_EQ(foldBinary(OpKind::Pow, DType::I16, int64_t{2}, int64_t{15}), -32768.0);
  EXPECT_EQ(foldBinary(OpKind::Pow, DType::I32, int64_t{2}, int64_t{-1}), 0.0);
  EXPECT_EQ(foldBinary(OpKind::Pow, DType::I32, int64_t{-1}, int64_t{-3}), -1.0);
  // A constant's integer value is wrapped to its dtype first: 300 in i8 is 44.
  EXPECT_EQ(foldBinary(OpKind::Add, DType::I8, int64_t{300}, int64_t{0}), 44.0);
}

TEST(PassFoldTest, FloatRemainderHasTheDivisorsSign) {
  // np.remainder(np.float32(-7), np.float32(2)) == 1.0; (7, -2) -> -1.0
  EXPECT_EQ(foldBinary(OpKind::Rem, DType::F32, -7.0, 2.0), 1.0);
  EXPECT_EQ(foldBinary(OpKind::Rem, DType::F32, 7.0, -2.0), -1.0);
  EXPECT_EQ(foldBinary(OpKind::Rem, DType::F32, 7.5, 2.0), 1.5);
  EXPECT_EQ(foldBinary(OpKind::Rem, DType::F32, 1.0, 0.0), std::nullopt); // NaN
}

TEST(PassFoldTest, ComparisonsGiveBool) {
  EXPECT_EQ(foldBinary(OpKind::Lt, DType::F16, 1.0, 2.0, DType::Bool), 1.0);
  EXPECT_EQ(foldBinary(OpKind::Eq, DType::I32, int64_t{3}, int64_t{4}, DType::Bool), 0.0);
  // 0.1 and 0.10000001 are the same f16 value
  EXPECT_EQ(foldBinary(OpKind::Eq, DType::F16, 0.1, 0.10000001, DType::Bool), 1.0);
}

TEST(PassFoldTest, SignedZeros) {
  // maximum and minimum keep the first operand on ties (docs/ir.md).
  for (OpKind kind : {OpKind::Maximum, OpKind::Minimum}) {
    auto first = foldBinary(kind, DType::F32, -0.0, 0.0);
    ASSERT_TRUE(first);
    EXPECT_TRUE(std::signbit(*first));
    auto second = foldBinary(kind, DType::F32, 0.0, -0.0);
    ASSERT_TRUE(second);
    EXPECT_FALSE(std::signbit(*second));
  }
  // Float rem: a zero result takes the divisor's sign, as NumPy's remainder:
  // np.remainder(np.float32(-4), np.float32(2)) is 0.0, (4, -2) gives -0.0.
  auto plus = foldBinary(OpKind::Rem, DType::F32, -4.0, 2.0);
  ASSERT_TRUE(plus);
  EXPECT_FALSE(std::signbit(*plus));
  auto minus = foldBinary(OpKind::Rem, DType::F32, 4.0, -2.0);
  ASSERT_TRUE(minus);
  EXPECT_TRUE(std::signbit(*minus));
  // relu is x > 0 ? x : 0, so relu(-0.0) is +0.0.
  auto relu = foldUnary(OpKind::Relu, DType::F32, -0.0, DType::F32);
  ASSERT_TRUE(relu);
  EXPECT_FALSE(std::signbit(*relu));
  EXPECT_EQ(foldUnary(OpKind::Relu, DType::F32, -2.0, DType::F32), 0.0);
}

std::optional<double> foldReduce(OpKind kind, DType dtype, Attr value, int64_t n,
                                 DType resultDType) {
  Function fn("f");
  Op *x = constant(fn, t(dtype, {4, n}), std::move(value));
  Op *r = fn.append(kind, t(resultDType, {4}), {x});
  r->setAttr("axes", std::vector<int64_t>{1});
  r->setAttr("keep", false);
  finish(fn, r);
  return foldedResult(fn);
}

TEST(PassFoldTest, SumOfASplatAccumulatesSequentiallyInF32) {
  EXPECT_EQ(foldReduce(OpKind::ReduceSum, DType::F32, 0.5, 1024, DType::F32), 512.0);
  EXPECT_EQ(foldReduce(OpKind::ReduceSum, DType::F16, 1.0, 4096, DType::F16), 4096.0);
  // acc = np.float32(0); 1000 times: acc = np.float32(acc + np.float32(0.1))
  // gives 99.9990463256836; divided by 1000 in f32: 0.09999904781579971.
  EXPECT_EQ(foldReduce(OpKind::ReduceSum, DType::F32, 0.1, 1000, DType::F32), 99.9990463256836);
  EXPECT_EQ(foldReduce(OpKind::ReduceMean, DType::F32, 0.1, 1000, DType::F32),
            0.09999904781579971);
  EXPECT_EQ(foldReduce(OpKind::ReduceMean, DType::F32, 0.75, 100, DType::F32), 0.75);
  EXPECT_EQ(foldReduce(OpKind::ReduceSum, DType::I32, int64_t{3}, 100, DType::I32), 300.0);
  // 300 wraps in i8: 44
  EXPECT_EQ(foldReduce(OpKind::ReduceSum, DType::I8, int64_t{3}, 100, DType::I8), 44.0);
  EXPECT_EQ(foldReduce(OpKind::ReduceMax, DType::F32, -3.5, 7, DType::F32), -3.5);
  // The accumulator starts at +0.0: a sum of -0.0 is +0.0.
  auto zero = foldReduce(OpKind::ReduceSum, DType::F32, -0.0, 8, DType::F32);
  ASSERT_TRUE(zero);
  EXPECT_FALSE(std::signbit(*zero));
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(foldReduce(OpKind::ReduceSum, DType::F32, inf, 8, DType::F32), std::nullopt);
  EXPECT_EQ(foldReduce(OpKind::ReduceMax, DType::F32, -inf, 8, DType::F32), -inf);
  // In f32, 2^24 + 1 is a tie that goes back to the even 2^24: a sequential
  // sum of ones stops there, however many follow.
  EXPECT_EQ(foldReduce(OpKind::ReduceSum, DType::F32, 1.0, (int64_t{1} << 24) + 8, DType::F32),
            16777216.0);
  // An empty reduction gives the reduction's identity, not the splat: left alone.
  EXPECT_EQ(foldReduce(OpKind::ReduceMax, DType::F32, 2.0, 0, DType::F32), std::nullopt);
}

TEST(PassFoldTest, SoftmaxOfASplatIsOneOverTheAxisLength) {
  Function fn("f");
  Op *x = constant(fn, t(DType::F16, {2, 3}), 5.0);
  Op *s = fn.append(OpKind::Softmax, t(DType::F16, {2, 3}), {x});
  s->setAttr("axis", int64_t{-1});
  finish(fn, s);
  // np.float16(np.float32(1) / np.float32(3)) == 0.333251953125
  EXPECT_EQ(foldedResult(fn), 0.333251953125);

  // exp(inf - inf) is NaN: a splat of inf does not fold.
  Function g("g");
  Op *inf = constant(g, t(DType::F32, {2, 3}), std::numeric_limits<double>::infinity());
  Op *s2 = g.append(OpKind::Softmax, t(DType::F32, {2, 3}), {inf});
  s2->setAttr("axis", int64_t{1});
  finish(g, s2);
  EXPECT_EQ(foldedResult(g), std::nullopt);
}

TEST(PassFoldTest, ChainsFoldInOneRunAndKeepTheLocation) {
  Function fn("f");
  Op *x = constant(fn, t(DType::F32), 2.0);
  Op *y = constant(fn, t(DType::F32), 3.0);
  Op *sum = fn.append(OpKind::Add, t(DType::F32), {x, y}, Location{"m.lpu", 4, 9});
  Op *neg = fn.append(OpKind::Neg, t(DType::F32), {sum}, Location{"m.lpu", 5, 3});
  finish(fn, neg);
  EXPECT_EQ(foldedResult(fn), -5.0);
  EXPECT_EQ(fn.terminator()->operand(0)->loc(), (Location{"m.lpu", 5, 3}));
}

TEST(PassFoldTest, IotaIsNotFolded) {
  Function fn("f");
  Op *iota = fn.append(OpKind::Iota, t(DType::I32, {8}), {});
  iota->setAttr("axis", int64_t{0});
  Op *one = constant(fn, t(DType::I32, {8}), int64_t{1});
  finish(fn, fn.append(OpKind::Add, t(DType::I32, {8}), {iota, one}));
  EXPECT_EQ(foldedResult(fn), std::nullopt);
  EXPECT_EQ(fn.terminator()->operand(0)->kind(), OpKind::Add);
}

} // namespace
} // namespace lpu::ir
