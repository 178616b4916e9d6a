// Deciding size equality (yes, no, or deferred to the instantiation), how
// tensor types print, and how the run-time sources of a value read.
#include "frontend/Types.h"

#include <gtest/gtest.h>

using namespace lpu::check;
using lpu::sizes::Size;

namespace {
Size n(const char *name) { return Size::name(name); }
Size c(int64_t v) { return Size::constant(v); }
} // namespace

TEST(TypesTest, SizeEqualityIsDecidedOrDeferred) {
  EXPECT_EQ(sizesEqual(n("a") + n("b"), n("b") + n("a")), Decision::Yes);
  EXPECT_EQ(sizesEqual(n("a"), c(2) * n("a")), Decision::No);
  EXPECT_EQ(sizesEqual(n("a"), n("a") + c(1)), Decision::No);
  EXPECT_EQ(sizesEqual(c(3), c(4)), Decision::No);
  // Atoms make it undecidable: floordiv(H - 1, S) + 1 is ceildiv(H, S)
  // for every H >= 1, but the normal form cannot see it.
  Size lhs = lpu::sizes::floordiv(n("H") - c(1), n("S")) + c(1);
  EXPECT_EQ(sizesEqual(lhs, lpu::sizes::ceildiv(n("H"), n("S"))), Decision::Unknown);
}

TEST(TypesTest, MayEqualRejectsOnlyProvableDifferences) {
  TensorType a{"f16", std::nullopt, {n("B"), n("D")}};
  TensorType b{"f16", std::nullopt, {n("B"), lpu::sizes::div(n("D") * n("H"), n("H"))}};
  EXPECT_TRUE(mayEqual(a, b));
  EXPECT_FALSE(mayEqual(a, TensorType{"f32", std::nullopt, {n("B"), n("D")}}));
  EXPECT_FALSE(mayEqual(a, TensorType{"f16", std::nullopt, {n("B")}}));
  EXPECT_FALSE(mayEqual(a, TensorType{"f16", std::string("B"), {n("D")}}));
  EXPECT_TRUE(mayEqual(a, TensorType{"f16", std::nullopt, {n("B"), lpu::sizes::div(n("D"), n("K"))}}));
}

TEST(TypesTest, TensorTypesPrintAsWritten) {
  EXPECT_EQ((TensorType{"f16", std::string("B"), {c(2) * n("D")}}.str()), "f16[..B, 2 * D]");
  EXPECT_EQ((TensorType{"bool", std::nullopt, {}}.str()), "bool");
  EXPECT_EQ((TensorType{"f32", std::nullopt, {c(3), c(4)}}.elements().constantValue()), 12);
  EXPECT_EQ(dtypeBytes("bf16"), 2u);
  EXPECT_EQ(dtypeBytes("T"), 0u);
}

namespace {
RuntimeSource input(const char *name) { return RuntimeSource::input(name, "f", {}); }
RuntimeSource weight(const char *name) { return RuntimeSource::weight(name, "M", {}); }
} // namespace

TEST(TypesTest, RuntimeSourcesReadInputsFirstThenParams) {
  EXPECT_EQ(describeSources({input("x")}), "input 'x'");
  EXPECT_EQ(describeSources({input("x"), input("y")}), "inputs 'x' and 'y'");
  EXPECT_EQ(describeSources({input("x"), input("y"), input("z")}), "inputs 'x', 'y' and 'z'");
  EXPECT_EQ(describeSources({weight("fc.w"), input("x")}), "input 'x' and param 'fc.w'");
  EXPECT_EQ(describeSources({input("x"), weight("w"), input("y")}),
            "inputs 'x', 'y' and param 'w'");
  EXPECT_EQ(describeSources({weight("w"), weight("b")}), "params 'w' and 'b'");
  // Past three, the rest are counted.
  EXPECT_EQ(describeSources({input("a"), input("b"), input("c"), input("d"), input("e")}),
            "inputs 'a', 'b', 'c' and 2 more");
  EXPECT_EQ(describeSources({input("a"), weight("w"), input("b"), input("c")}),
            "inputs 'a', 'b', param 'w' and 1 more");
}

TEST(TypesTest, RuntimeSourcesMergeOncePerUse) {
  std::vector<RuntimeSource> into{input("x")};
  mergeSources(into, {input("x"), weight("w"), input("y")});
  mergeSources(into, {weight("w")});
  ASSERT_EQ(into.size(), 3u);
  EXPECT_EQ(into[1].name, "w");
  EXPECT_EQ(into[2].name, "y");
}

TEST(TypesTest, NotStaticSaysWhatTheValueIs) {
  Value v = Value::ofTensor(TensorType{"bool", std::nullopt, {}});
  EXPECT_EQ(v.describeNotStatic("a bool"), "a bool tensor, computed at run time");
  v.sources = {input("x")};
  EXPECT_EQ(v.describeNotStatic("a bool"), "computed at run time from input 'x'");
  EXPECT_EQ(Value::ofFloat(2.5).describeNotStatic("an integer"),
            "a compile-time float, not an integer");
}
