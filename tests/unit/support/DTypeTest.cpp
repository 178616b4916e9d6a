// Bit-level checks of the 16-bit float conversions on values whose encodings
// are fixed by IEEE 754 (and by the bfloat16 definition). The exhaustive
// comparison against numpy is in NumpyInteropTest.
#include "support/DType.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

namespace lpu::tensor {
namespace {

float fromBits(uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(DType, NamesRoundTrip) {
  for (DType type : kAllDTypes)
    EXPECT_EQ(parseDTypeName(dtypeName(type)), type);
  EXPECT_FALSE(parseDTypeName("f64"));
  EXPECT_FALSE(parseDTypeName(""));
  EXPECT_EQ(dtypeSize(DType::Bool), 1u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I32), 4u);
}

TEST(DType, FloatToHalfExactValues) {
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(floatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7bff);   // largest finite
  EXPECT_EQ(floatToHalfBits(0x1p-14f), 0x0400);   // smallest normal
  EXPECT_EQ(floatToHalfBits(0x1p-24f), 0x0001);   // smallest subnormal
  EXPECT_EQ(floatToHalfBits(0x3ffp-24f), 0x03ff); // largest subnormal
  EXPECT_EQ(floatToHalfBits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToHalfBits(-std::numeric_limits<float>::infinity()), 0xfc00);
}

TEST(DType, FloatToHalfRoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even 1.
  EXPECT_EQ(floatToHalfBits(1.0f + 0x1p-11f), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between odd 0x3c01 and even 0x3c02.
  EXPECT_EQ(floatToHalfBits(1.0f + 0x3p-11f), 0x3c02);
  EXPECT_EQ(floatToHalfBits(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  // 65519 rounds down to 65504; 65520 is the tie that goes up to infinity.
  EXPECT_EQ(floatToHalfBits(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalfBits(-1e10f), 0xfc00);
  // 2^-25 is the tie between 0 and the smallest subnormal: goes to 0.
  EXPECT_EQ(floatToHalfBits(0x1p-25f), 0x0000);
  EXPECT_EQ(floatToHalfBits(0x1.000002p-25f), 0x0001);
  EXPECT_EQ(floatToHalfBits(0x3p-25f), 0x0002); // 1.5 units: tie to even 2
  EXPECT_EQ(floatToHalfBits(1e-30f), 0x0000);
  // Rounding up out of the subnormals gives the smallest normal.
  EXPECT_EQ(floatToHalfBits(0x1.ffcp-15f + 0x1p-26f), 0x0400);
}

TEST(DType, HalfNaNStaysNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(halfBitsToFloat(floatToHalfBits(nan))));
  // A NaN whose payload lives only in the low bits must not become infinity.
  EXPECT_TRUE(std::isnan(halfBitsToFloat(floatToHalfBits(fromBits(0x7f800001u)))));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(floatToHalfBits(fromBits(0xff800001u)))));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7c01)));
  EXPECT_TRUE(std::isinf(halfBitsToFloat(0x7c00)));
}

TEST(DType, HalfToFloatEveryFiniteValueRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t half = static_cast<uint16_t>(bits);
    if ((half & 0x7c00) == 0x7c00 && (half & 0x3ff))
      continue; // NaN
    EXPECT_EQ(floatToHalfBits(halfBitsToFloat(half)), half) << std::hex << bits;
  }
  EXPECT_EQ(halfBitsToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(halfBitsToFloat(0x3555), 0x1.554p-2f);
  EXPECT_TRUE(std::signbit(halfBitsToFloat(0x8000)));
}

TEST(DType, BFloat16) {
  EXPECT_EQ(floatToBF16Bits(1.0f), 0x3f80);
  EXPECT_EQ(floatToBF16Bits(-2.0f), 0xc000);
  EXPECT_EQ(bf16BitsToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even.
  EXPECT_EQ(floatToBF16Bits(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(floatToBF16Bits(1.0f + 0x3p-8f), 0x3f82);
  EXPECT_EQ(floatToBF16Bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  // The largest float rounds up into infinity; infinity stays.
  EXPECT_EQ(floatToBF16Bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBF16Bits(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(floatToBF16Bits(fromBits(0x7f7f7fffu)), 0x7f7f);
  // Subnormals round like any other value.
  EXPECT_EQ(floatToBF16Bits(fromBits(0x00008000u)), 0x0000);
  EXPECT_EQ(floatToBF16Bits(fromBits(0x00018000u)), 0x0002);
  EXPECT_TRUE(std::isnan(bf16BitsToFloat(floatToBF16Bits(fromBits(0x7f800001u)))));
  EXPECT_TRUE(std::isnan(bf16BitsToFloat(floatToBF16Bits(fromBits(0xffffffffu)))));
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    if ((bits & 0x7f80) == 0x7f80 && (bits & 0x7f))
      continue;
    EXPECT_EQ(floatToBF16Bits(bf16BitsToFloat(static_cast<uint16_t>(bits))), bits);
  }
}

TEST(DType, RoundToFloatType) {
  EXPECT_EQ(roundToFloatType(DType::F32, 0.1f), 0.1f);
  EXPECT_EQ(roundToFloatType(DType::F16, 0.1f), halfBitsToFloat(0x2e66));
  EXPECT_EQ(roundToFloatType(DType::BF16, 0.1f), bf16BitsToFloat(0x3dcd));
}

} // namespace
} // namespace lpu::tensor
