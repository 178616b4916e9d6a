#include "support/Literal.h"

#include "support/Npy.h"
#include "support/RandomTensor.h"
#include "tests/unit/support/TestFiles.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lpu::tensor {
namespace {

using testing::errorText;
using testing::TempDir;

Tensor literal(llvm::StringRef text) {
  auto t = parseTensorLiteral(text);
  EXPECT_TRUE(bool(t)) << text.str() << ": " << errorText(t.takeError());
  return t ? std::move(*t) : Tensor();
}

std::string literalError(llvm::StringRef text) {
  auto t = parseTensorLiteral(text);
  return errorText(t);
}

TEST(Literal, ShapedValues) {
  Tensor t = literal("2x3xf32=1,2,3,4,5,6");
  EXPECT_EQ(formatIree(t), "2x3xf32=[1 2 3][4 5 6]");
  EXPECT_EQ(literal("3xi8=-128, 0, 127"), Tensor::fromFloats(DType::I8, {3}, {-128, 0, 127}));
  EXPECT_EQ(literal("2xi32=2147483647,-2147483648").getInt(1), INT32_MIN);
  EXPECT_EQ(literal("4xbool=true,false,1,0"), Tensor::fromFloats(DType::Bool, {4}, {1, 0, 1, 0}));
  EXPECT_EQ(literal("2xf16=0.1,-65504").getFloat(1), -65504.0f);
  EXPECT_EQ(literal("3xf32=1e3 .5 +2.").toFloats(), (std::vector<float>{1000, 0.5f, 2}));
  EXPECT_EQ(literal("0x3xf32=").numElements(), 0);
}

TEST(Literal, ScalarAndSplat) {
  Tensor s = literal("f32=3.5");
  EXPECT_EQ(s.rank(), 0u);
  EXPECT_EQ(s.getFloat(0), 3.5f);
  Tensor splat = literal("2x3xbf16=1.5");
  EXPECT_EQ(splat.toFloats(), std::vector<float>(6, 1.5f));
  EXPECT_EQ(literal("4xi16=-7").toFloats(), std::vector<float>(4, -7));
}

TEST(Literal, ReadsBackFormattedOutput) {
  for (const char *text : {"2x3xf32=[1 2 3][4 5 6]", "2x2x2xi8=[[1 2][3 4]][[5 6][7 -8]]",
                           "3xf16=0.1 -inf nan", "2xbool=1 0", "bf16=0.1"}) {
    Tensor t = literal(text);
    EXPECT_EQ(formatIree(t), text);
  }
}

TEST(Literal, SpecialFloatValues) {
  Tensor t = literal("4xf32=inf,-inf,nan,-0");
  EXPECT_TRUE(std::isinf(t.getFloat(0)) && t.getFloat(0) > 0);
  EXPECT_TRUE(std::isinf(t.getFloat(1)) && t.getFloat(1) < 0);
  EXPECT_TRUE(std::isnan(t.getFloat(2)));
  EXPECT_TRUE(std::signbit(t.getFloat(3)));
}

TEST(Literal, RoundsOnceForHalfPrecision) {
  // 1 + 2^-11 + 2^-40 is just above the tie between two halves; going
  // through float first would drop the 2^-40 and round down to 1.
  EXPECT_EQ(literal("f16=1.00048828125000090949470177292823791503906250").bytes()[0], 0x01);
  EXPECT_EQ(literal("f16=1.00048828125").bytes()[0], 0x00);
  EXPECT_EQ(literal("f16=65519.99").getFloat(0), 65504.0f);
}

TEST(Literal, Errors) {
  EXPECT_EQ(literalError("2x3xf64=1"),
            "unknown dtype 'f64'; expected one of bool i8 i16 i32 f16 bf16 f32");
  EXPECT_EQ(literalError("2x3xf32=1,2,3,4,5"),
            "expected 6 values for 2x3xf32 (or 1 to fill every element), got 5");
  EXPECT_EQ(literalError("2xf32="),
            "expected 2 values for 2xf32 (or 1 to fill every element), got 0");
  EXPECT_EQ(literalError("f32=1,2"),
            "expected 1 values for f32 (or 1 to fill every element), got 2");
  EXPECT_EQ(literalError("2xf32=1,abc"), "value 2 ('abc') is not a number");
  EXPECT_EQ(literalError("2xf32=1,1.5.5"), "value 2 ('1.5.5') is not a number");
  EXPECT_EQ(literalError("2xi8=1,2.5"), "value 2 ('2.5') is not an integer");
  EXPECT_EQ(literalError("2xi8=1,128"), "value 2 ('128') is out of range for i8 [-128, 127]");
  EXPECT_EQ(literalError("i16=-40000"),
            "value 1 ('-40000') is out of range for i16 [-32768, 32767]");
  EXPECT_EQ(
      literalError("i32=99999999999999999999999"),
      "value 1 ('99999999999999999999999') is out of range for i32 [-2147483648, 2147483647]");
  EXPECT_EQ(literalError("bool=2"), "value 1 ('2') is not a bool (true, false, 1 or 0)");
  EXPECT_EQ(literalError("f16=70000"), "value 1 ('70000') is out of range for f16");
  EXPECT_EQ(literalError("f32=1e39"), "value 1 ('1e39') is out of range for f32");
  EXPECT_EQ(literalError("f32=1e99999"), "value 1 ('1e99999') is out of range for f32");
  EXPECT_EQ(literalError("f16=-1e99999"), "value 1 ('-1e99999') is out of range for f16");
  EXPECT_EQ(literalError("bf16=1e39"), "value 1 ('1e39') is out of range for bf16");
  EXPECT_EQ(literalError("1,2,3"), "expected a type such as 2x3xf32= or f32= before the values");
  EXPECT_EQ(literalError("-2x3xf32=1"), "negative dimension -2 in shape [-2, 3]");
  // A dimension past 64 bits is said to be too large (it once read as
  // part of an unknown dtype's name).
  EXPECT_EQ(literalError("99999999999999999999x4xf32=1"),
            "dimension 99999999999999999999 is too large");
  EXPECT_EQ(literalError("2x3f32=1"), "unknown dtype '3f32'; expected one of bool i8 i16 i32 f16 bf16 f32");
  EXPECT_EQ(literalError("1000x1000x1000xf32=1"),
            "1000x1000x1000xf32 is too large for a literal; use a .npy file");
  EXPECT_EQ(literalError("100000x100000x100000xf32=1"),
            "shape [100000, 100000, 100000] is too large (over 1099511627776 bytes)");
}

TEST(Literal, InputArguments) {
  auto in = parseInputArgument("x=2x2xi32=1,2,3,4");
  ASSERT_TRUE(bool(in)) << errorText(in.takeError());
  EXPECT_EQ(in->name, "x");
  EXPECT_EQ(in->tensor.typeString(), "2x2xi32");

  TempDir dir;
  Tensor t = Tensor::fromFloats(DType::F16, {3}, {1, 2, 3});
  ASSERT_FALSE(writeNpyFile(dir.file("in.npy"), t));
  auto fromFile = parseInputArgument("tokens_1=" + dir.file("in.npy"));
  ASSERT_TRUE(bool(fromFile)) << errorText(fromFile.takeError());
  EXPECT_EQ(fromFile->name, "tokens_1");
  EXPECT_EQ(fromFile->tensor, t);

  auto missing = parseInputArgument("x=" + dir.file("none.npy"));
  EXPECT_EQ(errorText(missing),
            "input 'x': " + dir.file("none.npy") + ": cannot read: No such file or directory");
  auto bad = parseInputArgument("x=2xf32=1,2,3");
  EXPECT_EQ(errorText(bad),
            "input 'x': expected 2 values for 2xf32 (or 1 to fill every element), got 3");
  auto badType = parseInputArgument("x=2xu8=1");
  EXPECT_EQ(errorText(badType),
            "input 'x': unknown dtype 'u8'; expected one of bool i8 i16 i32 f16 bf16 f32");
  for (const char *text : {"=2xf32=1", "x", "1x=f32=1", ""}) {
    auto noName = parseInputArgument(text);
    EXPECT_NE(errorText(noName).find("expected NAME=FILE.npy or NAME=TYPE=VALUES"),
              std::string::npos)
        << text;
  }
}

// Random text from the literal alphabet: a value or an error, never a crash
// (the sanitizer build runs this too).
TEST(Literal, NeverCrashesOnGarbage) {
  const std::string alphabet = "0123456789xX=,.[]-+eEinfatrubl f16i8";
  Xoshiro256 rng(99);
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    const size_t length = rng.next() % 24;
    for (size_t i = 0; i < length; ++i)
      text += alphabet[rng.next() % alphabet.size()];
    auto t = parseTensorLiteral(text);
    if (!t)
      llvm::consumeError(t.takeError());
    auto in = parseInputArgument("x=" + text);
    if (!in)
      llvm::consumeError(in.takeError());
  }
}

} // namespace
} // namespace lpu::tensor
