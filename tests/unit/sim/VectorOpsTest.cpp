#include "sim/VectorOps.h"

#include "support/DType.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace lpu::sim;
using lpu::backend::DType;
using lpu::backend::Opcode;

namespace {
constexpr unsigned kLanes = 16;

/// Byte planes holding `values` in `type`.
struct Group {
  std::vector<std::vector<uint8_t>> planes;
  std::vector<const uint8_t *> in;
  std::vector<uint8_t *> out;
  explicit Group(unsigned width) : planes(width, std::vector<uint8_t>(kLanes)) {
    for (auto &p : planes) {
      in.push_back(p.data());
      out.push_back(p.data());
    }
  }
  void setRaw(unsigned lane, uint64_t v) {
    for (unsigned b = 0; b < planes.size(); ++b)
      planes[b][lane] = uint8_t(v >> (8 * b));
  }
};
} // namespace

TEST(VectorOps, HalfAddRoundsOnceToNearestEven) {
  Group a(2), b(2), out(2);
  a.setRaw(0, lpu::tensor::floatToHalfBits(2048.0f));
  b.setRaw(0, lpu::tensor::floatToHalfBits(1.0f)); // 2049 ties to 2048
  a.setRaw(1, lpu::tensor::floatToHalfBits(2048.0f));
  b.setRaw(1, lpu::tensor::floatToHalfBits(3.0f)); // 2051 ties to 2052
  vxmBinary(Opcode::Add, DType::F16, a.in.data(), b.in.data(), out.out.data(), kLanes);
  EXPECT_EQ(elementAsFloat(DType::F16, out.in.data(), 0), 2048.0f);
  EXPECT_EQ(elementAsFloat(DType::F16, out.in.data(), 1), 2052.0f);
}

TEST(VectorOps, IntegersWrapAndCompareToBool) {
  Group a(1), b(1), out(1);
  a.setRaw(0, uint8_t(int8_t(120)));
  b.setRaw(0, uint8_t(int8_t(10)));
  vxmBinary(Opcode::Add, DType::I8, a.in.data(), b.in.data(), out.out.data(), kLanes);
  EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), 0), -126);
  vxmBinary(Opcode::CmpGt, DType::I8, a.in.data(), b.in.data(), out.out.data(), kLanes);
  EXPECT_EQ(out.planes[0][0], 1);
  EXPECT_EQ(out.planes[0][1], 0); // 0 > 0 is false
}

TEST(VectorOps, ConversionsSaturateAndZeroNaN) {
  Group in(4), out(1);
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  in.setRaw(0, bits(300.0f));
  in.setRaw(1, bits(-1e9f));
  in.setRaw(2, bits(NAN));
  in.setRaw(3, bits(2.5f));  // ties to even: 2
  in.setRaw(4, bits(-3.5f)); // ties to even: -4
  vxmConvert(DType::F32, DType::I8, /*truncate=*/false, in.in.data(), out.out.data(), kLanes);
  EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), 0), 127);
  EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), 1), -128);
  EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), 2), 0);
  EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), 3), 2);
  EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), 4), -4);
}

namespace {
uint32_t f32Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float f32At(const Group &g, unsigned lane) { return elementAsFloat(DType::F32, g.in.data(), lane); }
} // namespace

// cvt.trunc is the IR's convert: toward zero, saturating, NaN -> 0, and
// x != 0 for bool (NaN is true).
TEST(VectorOps, CvtTruncTruncatesTowardZero) {
  Group in(4), out(1);
  const float v[] = {2.7f, -2.7f, 2.5f, -3.5f, 300.0f, -1e9f, NAN, 0.0f, -0.0f};
  for (unsigned i = 0; i < 9; ++i)
    in.setRaw(i, f32Bits(v[i]));
  vxmConvert(DType::F32, DType::I8, /*truncate=*/true, in.in.data(), out.out.data(), kLanes);
  const int64_t want[] = {2, -2, 2, -3, 127, -128, 0, 0, 0};
  for (unsigned i = 0; i < 9; ++i)
    EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), i), want[i]) << "lane " << i;
  vxmConvert(DType::F32, DType::Bool, /*truncate=*/true, in.in.data(), out.out.data(), kLanes);
  const int want2[] = {1, 1, 1, 1, 1, 1, 1, 0, 0};
  for (unsigned i = 0; i < 9; ++i)
    EXPECT_EQ(out.planes[0][i], want2[i]) << "lane " << i;
}

// docs/ir.md's examples: floor division, the divisor's sign for rem, by 0
// gives 0, MIN // -1 wraps.
TEST(VectorOps, IntegerDivRemFloor) {
  Group a(1), b(1), q(1), r(1);
  const int8_t x[] = {-7, 7, -7, 7, 5, -128, -128};
  const int8_t y[] = {2, -2, -2, 2, 0, -1, 3};
  for (unsigned i = 0; i < 7; ++i) {
    a.setRaw(i, uint8_t(x[i]));
    b.setRaw(i, uint8_t(y[i]));
  }
  vxmBinary(Opcode::Div, DType::I8, a.in.data(), b.in.data(), q.out.data(), kLanes);
  vxmBinary(Opcode::Rem, DType::I8, a.in.data(), b.in.data(), r.out.data(), kLanes);
  const int64_t wq[] = {-4, -4, 3, 3, 0, -128, -43};
  const int64_t wr[] = {1, -1, -1, 1, 0, 0, 1};
  for (unsigned i = 0; i < 7; ++i) {
    EXPECT_EQ(elementAsInt(DType::I8, q.in.data(), i), wq[i]) << "lane " << i;
    EXPECT_EQ(elementAsInt(DType::I8, r.in.data(), i), wr[i]) << "lane " << i;
  }
}

TEST(VectorOps, FloatRemHasTheDivisorsSignAndPowIsPowf) {
  Group a(4), b(4), out(4);
  const float x[] = {-7.0f, 7.0f, 5.5f, 1.0f, 2.0f, -8.0f, -4.0f, 4.0f};
  const float y[] = {2.0f, -2.0f, 0.0f, 0.0f, 10.0f, 1.0f / 3.0f, 2.0f, -2.0f};
  for (unsigned i = 0; i < 8; ++i) {
    a.setRaw(i, f32Bits(x[i]));
    b.setRaw(i, f32Bits(y[i]));
  }
  vxmBinary(Opcode::Rem, DType::F32, a.in.data(), b.in.data(), out.out.data(), kLanes);
  EXPECT_EQ(f32At(out, 0), 1.0f);
  EXPECT_EQ(f32At(out, 1), -1.0f);
  EXPECT_TRUE(std::isnan(f32At(out, 2)));
  // A zero remainder has the divisor's sign, as NumPy's.
  EXPECT_EQ(f32Bits(f32At(out, 6)), f32Bits(0.0f));
  EXPECT_EQ(f32Bits(f32At(out, 7)), f32Bits(-0.0f));
  vxmBinary(Opcode::Pow, DType::F32, a.in.data(), b.in.data(), out.out.data(), kLanes);
  EXPECT_EQ(f32At(out, 3), 1.0f);    // powf(1, 0)
  EXPECT_EQ(f32At(out, 4), 1024.0f); // exact
  EXPECT_TRUE(std::isnan(f32At(out, 5))); // negative base, non-integer exponent
}

TEST(VectorOps, IntegerPowWrapsAndNegativeExponents) {
  Group a(2), b(2), out(2);
  const int16_t x[] = {3, 2, 1, -1, -1, 2, 0};
  const int16_t y[] = {4, 17, -5, -3, -2, -1, 0};
  for (unsigned i = 0; i < 7; ++i) {
    a.setRaw(i, uint16_t(x[i]));
    b.setRaw(i, uint16_t(y[i]));
  }
  vxmBinary(Opcode::Pow, DType::I16, a.in.data(), b.in.data(), out.out.data(), kLanes);
  const int64_t want[] = {81, 0 /* 2^17 wraps */, 1, -1, 1, 0, 1};
  for (unsigned i = 0; i < 7; ++i)
    EXPECT_EQ(elementAsInt(DType::I16, out.in.data(), i), want[i]) << "lane " << i;
}

// max/min are the IR's maximum/minimum: NaN wins, ties keep the first.
TEST(VectorOps, MaxMinPropagateNaNAndKeepTheFirstOnTies) {
  Group a(4), b(4), mx(4), mn(4);
  a.setRaw(0, f32Bits(NAN));
  b.setRaw(0, f32Bits(1.0f));
  a.setRaw(1, f32Bits(1.0f));
  b.setRaw(1, f32Bits(NAN));
  a.setRaw(2, f32Bits(-0.0f));
  b.setRaw(2, f32Bits(0.0f));
  a.setRaw(3, f32Bits(0.0f));
  b.setRaw(3, f32Bits(-0.0f));
  vxmBinary(Opcode::Max, DType::F32, a.in.data(), b.in.data(), mx.out.data(), kLanes);
  vxmBinary(Opcode::Min, DType::F32, a.in.data(), b.in.data(), mn.out.data(), kLanes);
  for (const Group *g : {&mx, &mn}) {
    EXPECT_TRUE(std::isnan(f32At(*g, 0)));
    EXPECT_TRUE(std::isnan(f32At(*g, 1)));
    EXPECT_TRUE(std::signbit(f32At(*g, 2)));
    EXPECT_FALSE(std::signbit(f32At(*g, 3)));
  }
}

TEST(VectorOps, LogicalOpsAndSelect) {
  Group a(1), b(1), c(1), out(1);
  for (unsigned i = 0; i < 4; ++i) {
    a.setRaw(i, i & 1);
    b.setRaw(i, (i >> 1) & 1);
  }
  vxmBinary(Opcode::And, DType::Bool, a.in.data(), b.in.data(), out.out.data(), kLanes);
  EXPECT_EQ((std::vector<uint8_t>(out.planes[0].begin(), out.planes[0].begin() + 4)),
            (std::vector<uint8_t>{0, 0, 0, 1}));
  vxmBinary(Opcode::Or, DType::Bool, a.in.data(), b.in.data(), out.out.data(), kLanes);
  EXPECT_EQ((std::vector<uint8_t>(out.planes[0].begin(), out.planes[0].begin() + 4)),
            (std::vector<uint8_t>{0, 1, 1, 1}));
  vxmUnary(Opcode::Not, DType::Bool, a.in.data(), out.out.data(), kLanes);
  EXPECT_EQ((std::vector<uint8_t>(out.planes[0].begin(), out.planes[0].begin() + 4)),
            (std::vector<uint8_t>{1, 0, 1, 0}));
  // select picks bits: a NaN payload and -0 pass unchanged.
  Group x(4), y(4), z(4);
  x.setRaw(0, 0x7fc12345u);
  y.setRaw(0, f32Bits(1.0f));
  x.setRaw(1, f32Bits(2.0f));
  y.setRaw(1, f32Bits(-0.0f));
  c.setRaw(0, 1);
  c.setRaw(1, 0);
  vxmSelect(DType::F32, c.in.data(), x.in.data(), y.in.data(), z.out.data(), kLanes);
  EXPECT_EQ(f32Bits(f32At(z, 0)), 0x7fc12345u);
  EXPECT_EQ(f32Bits(f32At(z, 1)), f32Bits(-0.0f));
}

TEST(VectorOps, ActivationsFollowTheirDefinitions) {
  Group in(4), out(4);
  const float v[] = {-3.0f, -0.5f, 0.0f, 0.7f, 2.0f, 10.0f};
  for (unsigned i = 0; i < 6; ++i)
    in.setRaw(i, f32Bits(v[i]));
  // Independent double-precision references. The fp32 formulas add 1 to
  // erf/tanh/exp terms, so the error is a few ulp of 1 scaled by |x|.
  auto near = [&](float got, double want, unsigned i) {
    return std::fabs(got - want) <= 4e-7 * std::fabs(want) + 3e-7 * (std::fabs(v[i]) + 1);
  };
  vxmUnary(Opcode::Gelu, DType::F32, in.in.data(), out.out.data(), kLanes);
  for (unsigned i = 0; i < 6; ++i)
    EXPECT_TRUE(near(f32At(out, i), 0.5 * v[i] * (1 + std::erf(v[i] / std::sqrt(2.0))), i)) << i;
  vxmUnary(Opcode::GeluTanh, DType::F32, in.in.data(), out.out.data(), kLanes);
  for (unsigned i = 0; i < 6; ++i) {
    double x = v[i];
    EXPECT_TRUE(near(f32At(out, i), 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))), i))
        << i;
  }
  vxmUnary(Opcode::Sigmoid, DType::F32, in.in.data(), out.out.data(), kLanes);
  for (unsigned i = 0; i < 6; ++i)
    EXPECT_TRUE(near(f32At(out, i), 1 / (1 + std::exp(-double(v[i]))), i)) << i;
  vxmUnary(Opcode::Silu, DType::F32, in.in.data(), out.out.data(), kLanes);
  for (unsigned i = 0; i < 6; ++i)
    EXPECT_TRUE(near(f32At(out, i), v[i] / (1 + std::exp(-double(v[i]))), i)) << i;
  vxmUnary(Opcode::Sqrt, DType::F32, in.in.data(), out.out.data(), kLanes);
  EXPECT_TRUE(std::isnan(f32At(out, 0)));
  EXPECT_EQ(f32At(out, 4), std::sqrt(2.0f));
  vxmUnary(Opcode::Log, DType::F32, in.in.data(), out.out.data(), kLanes);
  EXPECT_TRUE(std::isnan(f32At(out, 1)));
  EXPECT_EQ(f32At(out, 2), -INFINITY);
}

TEST(VectorOps, ShiftRotateDistribute) {
  Group in(1), out(1), map(2);
  for (unsigned i = 0; i < kLanes; ++i) {
    in.setRaw(i, i + 1);
    map.setRaw(i, i % 2 ? 0xFFFF : kLanes - 1 - i);
  }
  sxmMove(Opcode::Shift, 2, in.in.data(), nullptr, out.out.data(), 1, kLanes);
  EXPECT_EQ(out.planes[0][0], 0);
  EXPECT_EQ(out.planes[0][2], 1);
  sxmMove(Opcode::Rotate, 2, in.in.data(), nullptr, out.out.data(), 1, kLanes);
  EXPECT_EQ(out.planes[0][0], kLanes - 1);
  EXPECT_EQ(out.planes[0][2], 1);
  sxmMove(Opcode::Distribute, 0, in.in.data(), map.in.data(), out.out.data(), 1, kLanes);
  EXPECT_EQ(out.planes[0][0], kLanes);
  EXPECT_EQ(out.planes[0][1], 0);
}
