#include "support/Tensor.h"

#include "tests/unit/support/TestFiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace lpu::tensor {
namespace {

using testing::errorText;

TEST(Tensor, ShapeAndBytes) {
  Tensor t(DType::F16, {2, 3});
  EXPECT_EQ(t.numElements(), 6);
  EXPECT_EQ(t.byteSize(), 12u);
  EXPECT_EQ(t.typeString(), "2x3xf16");
  EXPECT_EQ(Tensor().typeString(), "f32");
  EXPECT_EQ(Tensor().numElements(), 1);
  EXPECT_EQ(Tensor(DType::I8, {0, 5}).numElements(), 0);
}

TEST(Tensor, CheckedElementCountRejectsBadShapes) {
  auto negative = checkedElementCount({2, -1}, DType::F32);
  EXPECT_EQ(errorText(negative), "negative dimension -1 in shape [2, -1]");
  auto huge = checkedElementCount({1 << 20, 1 << 20, 1 << 20}, DType::F32);
  EXPECT_NE(errorText(huge).find("too large"), std::string::npos);
  // A zero dimension makes the product 0 however large the others are.
  auto zero = checkedElementCount({0, int64_t(1) << 62, int64_t(1) << 62}, DType::F32);
  ASSERT_TRUE(bool(zero));
  EXPECT_EQ(*zero, 0);
  EXPECT_FALSE(Tensor::create(DType::F32, {-3}));
  llvm::consumeError(Tensor::create(DType::F32, {-3}).takeError());
}

TEST(Tensor, FromBytesChecksSize) {
  auto bad = Tensor::fromBytes(DType::I16, {3}, std::vector<uint8_t>(5));
  EXPECT_EQ(errorText(bad), "3xi16 needs 6 bytes of data, got 5");
  auto good = Tensor::fromBytes(DType::I16, {2}, std::vector<uint8_t>{0x01, 0x00, 0xff, 0xff});
  ASSERT_TRUE(bool(good));
  EXPECT_EQ(good->getInt(0), 1);
  EXPECT_EQ(good->getInt(1), -1);
}

TEST(Tensor, SetFloatConvertsPerDType) {
  Tensor i8(DType::I8, {6});
  const float inf = std::numeric_limits<float>::infinity();
  const float values[] = {2.5f, 3.5f, -200.0f, 200.0f, std::nanf(""), -inf};
  for (int i = 0; i < 6; ++i)
    i8.setFloat(i, values[i]);
  // Ties to even, saturation at both ends, NaN -> 0.
  EXPECT_EQ(i8.getInt(0), 2);
  EXPECT_EQ(i8.getInt(1), 4);
  EXPECT_EQ(i8.getInt(2), -128);
  EXPECT_EQ(i8.getInt(3), 127);
  EXPECT_EQ(i8.getInt(4), 0);
  EXPECT_EQ(i8.getInt(5), -128);

  Tensor i32(DType::I32, {2});
  i32.setFloat(0, 3e9f);
  i32.setFloat(1, -3e9f);
  EXPECT_EQ(i32.getInt(0), INT32_MAX);
  EXPECT_EQ(i32.getInt(1), INT32_MIN);

  Tensor b(DType::Bool, {3});
  b.setFloat(0, 0.0f);
  b.setFloat(1, -0.5f);
  b.setFloat(2, std::nanf(""));
  EXPECT_EQ(b.getInt(0), 0);
  EXPECT_EQ(b.getInt(1), 1);
  EXPECT_EQ(b.getInt(2), 1);
  EXPECT_EQ(b.bytes()[1], 1); // stored canonically as 0 or 1

  Tensor h(DType::F16, {1});
  h.setFloat(0, 0.1f);
  EXPECT_EQ(h.bytes()[0], 0x66);
  EXPECT_EQ(h.bytes()[1], 0x2e);
}

TEST(Tensor, BulkConversionsMatchElementwise) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {0.0f,     -0.0f, 1e-8f, 0.1f, -2.5f, 65519.0f,
                               65520.0f, 1e30f, -inf,  inf,  3e9f,  127.5f};
  for (int i = 0; i < 100; ++i)
    values.push_back(static_cast<float>(i * i) * 0.731f - 1000.0f);
  const int64_t n = static_cast<int64_t>(values.size());
  for (DType type : kAllDTypes) {
    Tensor bulk = Tensor::fromFloats(type, {n}, values);
    Tensor single(type, {n});
    for (int64_t i = 0; i < n; ++i)
      single.setFloat(i, values[i]);
    EXPECT_EQ(bulk, single) << dtypeName(type).str();
    const std::vector<float> back = bulk.toFloats();
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(back[i], bulk.getFloat(i)) << dtypeName(type).str() << " " << i;
  }
}

TEST(Tensor, ConvertTo) {
  Tensor a = Tensor::fromFloats(DType::F32, {3}, {1.5f, -2.0f, 1e6f});
  Tensor h = a.convertTo(DType::F16);
  EXPECT_EQ(h.dtype(), DType::F16);
  EXPECT_EQ(h.getFloat(0), 1.5f);
  EXPECT_TRUE(std::isinf(h.getFloat(2)));
  Tensor big(DType::I32, {1});
  big.setInt(0, 16777217); // not representable in float
  EXPECT_EQ(big.convertTo(DType::I32).getInt(0), 16777217);
  EXPECT_EQ(big.convertTo(DType::I16).getInt(0), INT16_MAX);
}

TEST(Tensor, FormatIree) {
  EXPECT_EQ(formatIree(Tensor::fromFloats(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})),
            "2x3xf32=[1 2 3][4 5 6]");
  EXPECT_EQ(formatIree(Tensor::fromFloats(DType::F32, {3}, {0.5f, -1, 0.1f})), "3xf32=0.5 -1 0.1");
  EXPECT_EQ(formatIree(Tensor::fromFloats(DType::F32, {}, {3.5f})), "f32=3.5");
  EXPECT_EQ(formatIree(Tensor::fromFloats(DType::I8, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, -8})),
            "2x2x2xi8=[[1 2][3 4]][[5 6][7 -8]]");
  EXPECT_EQ(formatIree(Tensor::fromFloats(DType::Bool, {2}, {1, 0})), "2xbool=1 0");
  EXPECT_EQ(formatIree(Tensor(DType::F32, {0, 3})), "0x3xf32=");
  // Shortest digits that give back the same f16/bf16 value, not the float's.
  EXPECT_EQ(formatIree(Tensor::fromFloats(DType::F16, {2}, {0.1f, 65504})), "2xf16=0.1 65504");
  EXPECT_EQ(formatIree(Tensor::fromFloats(DType::BF16, {1}, {0.1f})), "1xbf16=0.1");
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(formatIree(Tensor::fromFloats(DType::F32, {3}, {inf, -inf, std::nanf("")})),
            "3xf32=inf -inf nan");
  EXPECT_EQ(formatElement(Tensor::fromFloats(DType::F32, {1}, {0.1f}), 0), "0.1");
  EXPECT_EQ(formatElement(Tensor::fromFloats(DType::F32, {1}, {1.0f / 3}), 0), "0.33333334");
}

// sliceAxis against the element-wise definition: element (i, j, k) of the
// slice is element (.., start + index along axis, ..) of the whole.
TEST(Tensor, SliceAxisTakesTheElementsOfItsRange) {
  const std::vector<int64_t> shape = {3, 4, 5};
  Tensor whole(DType::I16, shape);
  for (int64_t n = 0; n < whole.numElements(); ++n)
    whole.setInt(n, n * 7 - 100);
  for (int64_t axis = 0; axis < 3; ++axis)
    for (int64_t start = 0; start <= shape[axis]; ++start)
      for (int64_t size = 0; start + size <= shape[axis]; ++size) {
        auto slice = sliceAxis(whole, axis, start, size);
        ASSERT_TRUE(bool(slice)) << errorText(slice.takeError());
        std::vector<int64_t> want = shape;
        want[axis] = size;
        ASSERT_EQ(slice->shape().vec(), want);
        ASSERT_EQ(slice->dtype(), DType::I16);
        for (int64_t n = 0; n < slice->numElements(); ++n) {
          int64_t idx[3] = {n / (want[1] * want[2]), n / want[2] % want[1], n % want[2]};
          idx[axis] += start;
          int64_t from = (idx[0] * shape[1] + idx[1]) * shape[2] + idx[2];
          ASSERT_EQ(slice->getInt(n), whole.getInt(from))
              << "axis " << axis << " start " << start << " size " << size << " element " << n;
        }
      }
}

TEST(Tensor, SliceAxisOfTheWholeDimensionIsTheTensor) {
  Tensor t(DType::F16, {2, 6});
  for (int64_t n = 0; n < t.numElements(); ++n)
    t.setFloat(n, float(n) / 4);
  auto same = sliceAxis(t, 1, 0, 6);
  ASSERT_TRUE(bool(same)) << errorText(same.takeError());
  EXPECT_EQ(*same, t);
  auto right = sliceAxis(t, 1, 3, 3);
  ASSERT_TRUE(bool(right)) << errorText(right.takeError());
  EXPECT_EQ(right->toFloats(), (std::vector<float>{0.75f, 1.0f, 1.25f, 2.25f, 2.5f, 2.75f}));
}

TEST(Tensor, SliceAxisRefusesSlicesOutsideTheTensor) {
  Tensor t(DType::F32, {2, 6});
  EXPECT_EQ(errorText(sliceAxis(t, 2, 0, 1).takeError()),
            "cannot slice axis 2 of a tensor of shape [2, 6]");
  EXPECT_EQ(errorText(sliceAxis(t, -1, 0, 1).takeError()),
            "cannot slice axis -1 of a tensor of shape [2, 6]");
  EXPECT_EQ(errorText(sliceAxis(t, 1, 4, 3).takeError()),
            "slice [4, 4 + 3) of axis 1 is outside the tensor's shape [2, 6]");
  EXPECT_FALSE(bool(sliceAxis(t, 1, -1, 1)));
  EXPECT_FALSE(bool(sliceAxis(t, 1, 7, 0)));
  EXPECT_FALSE(bool(sliceAxis(t, 0, 0, -1)));
  // Huge values must not overflow into an accepted slice.
  EXPECT_FALSE(bool(sliceAxis(t, 1, 2, INT64_MAX)));
  EXPECT_FALSE(bool(sliceAxis(Tensor(), 0, 0, 0)));
}

} // namespace
} // namespace lpu::tensor
