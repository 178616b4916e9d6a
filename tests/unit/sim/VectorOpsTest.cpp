#include "sim/VectorOps.h"

#include "backend/tensor/DType.h"

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
  vxmConvert(DType::F32, DType::I8, in.in.data(), out.out.data(), kLanes);
  EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), 0), 127);
  EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), 1), -128);
  EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), 2), 0);
  EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), 3), 2);
  EXPECT_EQ(elementAsInt(DType::I8, out.in.data(), 4), -4);
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
