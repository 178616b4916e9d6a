// Deciding size equality (yes, no, or deferred to the instantiation) and
// how tensor types print.
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
