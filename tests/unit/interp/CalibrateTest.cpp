// Calibration's choice of scale and zero point from a range, at the edges
// a calibration over data rarely reaches (tests/lit/lpurun/reference/
// calibrate.test checks whole models against NumPy), and its own checks
// of the `observe` tags on IR the verifier has not seen.
#include "interp/Calibrate.h"

#include "ir/Text.h"

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

/// Calibrates `x / s` (x: f32[4] = 0, 1, 2, 3; s: a param f32[]), the
/// division carrying `tags`, never verified; the error, or "" on success.
std::string calibrateWith(const std::string &tags, const std::string &divisor = "%2",
                          const std::string &extra = "") {
  std::string text = "func @f {\n"
                     "  %0 = input {name = \"x\"} : f32[4]\n"
                     "  %1 = param {path = \"s\"} : f32[]\n"
                     "  %2 = broadcast %1 : f32[4]\n"
                     "  %3 = constant {value = 2.0} : f32[4]\n"
                     "  %4 = input {name = \"n\"} : i32[4]\n" +
                     extra + "  %9 = div %0, " + divisor + " {" + tags + "} : f32[4]\n" +
                     "  return %9 {names = [\"out\"]}\n}\n";
  auto module = ir::parseModule(text, "");
  if (!module)
    return "parse: " + llvm::toString(module.takeError());
  tensor::Tensor x(ir::DType::F32, std::vector<int64_t>{4});
  tensor::Tensor n(ir::DType::I32, std::vector<int64_t>{4});
  for (int64_t i = 0; i < 4; ++i)
    x.setFloat(i, float(i));
  std::vector<std::map<std::string, tensor::Tensor>> samples{{{"x", x}, {"n", n}}};
  auto result = calibrate(*(*module)->functions[0], samples, {}, Observer{});
  return result ? "" : llvm::toString(result.takeError());
}

TEST(Calibrate, WellFormedTagsCalibrate) {
  EXPECT_EQ(calibrateWith("observe = [\"s\"]"), "");
  EXPECT_EQ(calibrateWith("observe = [\"s\"], observe_zero = -5"), "");
}

TEST(Calibrate, RefusesTagsNamingNoParam) {
  EXPECT_EQ(calibrateWith("observe = [\"nope\"]"),
            "cannot calibrate the div %5 of @f: its scale 'nope' is not a param of @f");
  EXPECT_EQ(calibrateWith("observe = [\"s\", \"x\"]"),
            "cannot calibrate the div %5 of @f: its zero point 'x' is not a param of @f");
  EXPECT_EQ(calibrateWith("observe = []"), "cannot calibrate the div %5 of @f: 'observe' must be "
                                          "one or two param paths (the scale, then the zero point)");
  EXPECT_EQ(calibrateWith("observe = \"s\""), "cannot calibrate the div %5 of @f: 'observe' must "
                                               "be one or two param paths (the scale, then the "
                                               "zero point)");
}

TEST(Calibrate, RefusesADivisionNotByItsScale) {
  // Such a division runs before its scale is known: its dividend was
  // freed once it ran.
  const std::string problem = "it does not divide by its scale 's'";
  EXPECT_EQ(calibrateWith("observe = [\"s\"]", "%3"), "cannot calibrate the div %5 of @f: " + problem);
  EXPECT_EQ(calibrateWith("observe = [\"s\"], observe_axis = 0", "%3"),
            "cannot calibrate the div %5 of @f: " + problem);
  EXPECT_EQ(calibrateWith("observe = [\"s\"]", "%5", "  %5 = convert %4 : f32[4]\n"),
            "cannot calibrate the div %6 of @f: " + problem);
}

TEST(Calibrate, RefusesAZeroPointOutsideI8) {
  const std::string problem = "cannot calibrate the div %5 of @f: 'observe_zero' must be an "
                              "integer from -128 to 127 (an i8 zero point)";
  EXPECT_EQ(calibrateWith("observe = [\"s\"], observe_zero = 1000"), problem);
  EXPECT_EQ(calibrateWith("observe = [\"s\"], observe_zero = -129"), problem);
  EXPECT_EQ(calibrateWith("observe = [\"s\"], observe_zero = \"a\""), problem);
}

TEST(Calibrate, RefusesAnAxisOutsideTheDividend) {
  EXPECT_EQ(calibrateWith("observe = [\"s\"], observe_axis = 1"),
            "cannot calibrate the div %5 of @f: 'observe_axis' must be an axis of its dividend, "
            "f32[4]");
  // An axis of the dividend, but the scale is one f32.
  EXPECT_EQ(calibrateWith("observe = [\"s\"], observe_axis = 0"),
            "the scale 's' is f32[]; calibration computes an f32 per channel (f32[4])");
}

TEST(Calibrate, RefusesAPerChannelScaleOfAnotherLength) {
  // c: f32[3], for the 2 channels along axis 0 of y: f32[2, 3].
  EXPECT_EQ(calibrateWith("observe = [\"s\"]", "%2",
                          "  %5 = param {path = \"c\"} : f32[3]\n"
                          "  %6 = input {name = \"y\"} : f32[2, 3]\n"
                          "  %7 = broadcast %5 : f32[2, 3]\n"
                          "  %8 = div %6, %7 {observe = [\"c\"], observe_axis = 0} : f32[2, 3]\n"),
            "the scale 'c' is f32[3]; calibration computes an f32 per channel (f32[2])");
}

TEST(Calibrate, ErrorsLeaveOutAnUnknownLocation) {
  // Two quantize ops of one scale that differ in their zero point.
  std::string error =
      calibrateWith("observe = [\"s\"]", "%2",
                    "  %5 = div %0, %2 {observe = [\"s\"], observe_zero = 3} : f32[4]\n");
  EXPECT_EQ(error, "the scale 's' is used by quantize ops that differ in their zero point or "
                   "axis");
}

} // namespace
} // namespace lpu::interp
