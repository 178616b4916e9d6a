// Calibration's choice of scale and zero point from a range, at the edges
// a calibration over data rarely reaches (tests/lit/lpurun/reference/
// calibrate.test checks whole models against NumPy).
#include "interp/Calibrate.h"

#include <gtest/gtest.h>

namespace lpu::interp {
namespace {

TEST(Calibrate, SymmetricScaleCoversTheWiderSide) {
  // Zero point 0: 127 steps up, 128 down.
  QuantParams q = chooseQuantParams(-2.56, 1.27, /*affine=*/false, 0);
  EXPECT_EQ(q.scale, 0.02f);
  EXPECT_EQ(q.zero, 0);
  q = chooseQuantParams(-1.0, 2.54, false, 0);
  EXPECT_EQ(q.scale, 0.02f);
  // A range that does not hold 0 is widened to it.
  q = chooseQuantParams(1.0, 2.54, false, 0);
  EXPECT_EQ(q.scale, 0.02f);
}

TEST(Calibrate, FixedZeroPointShiftsTheRoom) {
  // z = 27 leaves 100 steps up and 155 down.
  QuantParams q = chooseQuantParams(-1.55, 1.0, false, 27);
  EXPECT_EQ(q.scale, 0.01f);
  EXPECT_EQ(q.zero, 27);
  // z = 127: no room up, so only the low side sets the scale.
  q = chooseQuantParams(-2.55, 5.0, false, 127);
  EXPECT_EQ(q.scale, 0.01f);
  // z = -128: no room down.
  q = chooseQuantParams(-5.0, 2.55, false, -128);
  EXPECT_EQ(q.scale, 0.01f);
}

TEST(Calibrate, AffineMapsTheRangeOntoAllSteps) {
  // [0, 2.55]: the low end at -128.
  QuantParams q = chooseQuantParams(0.0, 2.55, /*affine=*/true, 0);
  EXPECT_EQ(q.scale, 0.01f);
  EXPECT_EQ(q.zero, -128);
  // [-2.55, 0]: the high end at 127.
  q = chooseQuantParams(-2.55, 0.0, true, 0);
  EXPECT_EQ(q.zero, 127);
  // [-1, 1.55]: lo / scale = -100, so zero = -28.
  q = chooseQuantParams(-1.0, 1.55, true, 0);
  EXPECT_EQ(q.scale, 0.01f);
  EXPECT_EQ(q.zero, -28);
}

TEST(Calibrate, EmptyRangeGivesScaleOne) {
  QuantParams q = chooseQuantParams(0.0, 0.0, false, 0);
  EXPECT_EQ(q.scale, 1.0f);
  EXPECT_EQ(q.zero, 0);
  q = chooseQuantParams(0.0, 0.0, true, 0);
  EXPECT_EQ(q.scale, 1.0f);
  EXPECT_EQ(q.zero, -128);
}

} // namespace
} // namespace lpu::interp
