// The reference interpreter on small hand-derived cases: f16 rounding after
// every op, integer semantics, leaves, and every bad input it must reject
// with a message naming what is wrong.
#include "tests/unit/interp/InterpTestSupport.h"

#include "interp/InterpreterRun.h"

#include "support/SafeTensors.h"
#include "tests/unit/support/TestFiles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace lpu::ir {
namespace {

using namespace lpu::interp;

using namespace testing;
using tensor::Tensor;
using ::testing::HasSubstr;

Tensor f16(std::vector<int64_t> shape, std::vector<float> v) {
  return Tensor::fromFloats(DType::F16, std::move(shape), v);
}

TEST(Interp, EveryOpRoundsToF16) {
  // 1 + 2^-11 is halfway between 1 and the next f16 (1 + 2^-10): ties go to
  // even, so the f16 sum is 1, while in f32 it is exact. Chained, the f16
  // rounding compounds: (1 + e) + e stays 1, whereas rounding once at the
  // end would give 1 + 2^-10.
  FnBuilder b;
  Op *x = b.input("x", T(DType::F16, {2}));
  Op *e = b.op(OpKind::Constant, {}, {{"value", std::ldexp(1.0, -11)}}, T(DType::F16, {2}));
  Op *once = b.op(OpKind::Add, {x, e});
  Op *twice = b.op(OpKind::Add, {once, e});
  Op *wide = b.op(OpKind::Add, {b.op(OpKind::Convert, {x}, {}, T(DType::F32, {2})),
                                b.op(OpKind::Convert, {e}, {}, T(DType::F32, {2}))});
  // 65504 (the largest f16) + 16 = 65520 rounds up to infinity.
  Op *big = b.op(OpKind::Constant, {}, {{"value", 16.0}}, T(DType::F16, {2}));
  Op *overflow = b.op(OpKind::Add, {x, big});
  b.ret({once, twice, wide, overflow}, {"once", "twice", "wide", "overflow"});
  auto out = runOk(b.fn(), {{"x", f16({2}, {1.0f, 65504.0f})}});
  EXPECT_EQ(out["once"].getFloat(0), 1.0f);
  EXPECT_EQ(out["twice"].getFloat(0), 1.0f);
  EXPECT_EQ(out["wide"].getFloat(0), 1.0f + std::ldexp(1.0f, -11));
  EXPECT_EQ(out["wide"].dtype(), DType::F32);
  EXPECT_TRUE(std::isinf(out["overflow"].getFloat(1)));
  EXPECT_EQ(out["overflow"].getFloat(0), 17.0f);
}

TEST(Interp, MatmulAccumulatesInF32AndRoundsOnce) {
  // 2048 + 1 + 1 in f16 steps would stay 2048 (spacing 2 there); with fp32
  // accumulation the dot product [2048, 1, 1] . [1, 1, 1] is exactly 2050.
  FnBuilder b;
  Op *a = b.input("a", T(DType::F16, {1, 3}));
  Op *w = b.param("w", T(DType::F16, {3, 1}));
  b.ret({b.op(OpKind::Matmul, {a, w})}, {"y"});
  auto out = runOk(b.fn(), {{"a", f16({1, 3}, {2048, 1, 1})}}, {{"w", f16({3, 1}, {1, 1, 1})}});
  EXPECT_EQ(out["y"].getFloat(0), 2050.0f);
}

TEST(Interp, ReductionsAccumulateInF32) {
  // The same with a sum: 2048 + 1 + 1 = 2050 (f16 steps would give 2048).
  FnBuilder b;
  Op *x = b.input("x", T(DType::F16, {3}));
  b.ret({b.op(OpKind::ReduceSum, {x}, {{"axes", std::vector<int64_t>{0}}, {"keep", false}})},
        {"s"});
  auto out = runOk(b.fn(), {{"x", f16({3}, {2048, 1, 1})}});
  EXPECT_EQ(out["s"].getFloat(0), 2050.0f);
}

TEST(Interp, IntegerArithmetic) {
  Tensor a(DType::I32, {4}), c(DType::I32, {4});
  const int32_t av[] = {7, -7, 7, -7}, cv[] = {2, 2, -2, -2};
  for (int k = 0; k < 4; ++k) {
    a.setInt(k, av[k]);
    c.setInt(k, cv[k]);
  }
  FnBuilder b;
  Op *pa = b.input("a", T(DType::I32, {4}));
  Op *pc = b.input("c", T(DType::I32, {4}));
  Op *big = b.op(OpKind::Constant, {}, {{"value", int64_t(2147483647)}}, T(DType::I32, {4}));
  b.ret({b.op(OpKind::Div, {pa, pc}), b.op(OpKind::Rem, {pa, pc}), b.op(OpKind::Add, {big, pc}),
         b.op(OpKind::Convert,
              {b.op(OpKind::Mul, {pa, b.op(OpKind::Constant, {}, {{"value", int64_t(40)}},
                                           T(DType::I32, {4}))})},
              {}, T(DType::I8, {4}))},
        {"div", "rem", "wrap", "narrow"});
  auto out = runOk(b.fn(), {{"a", a}, {"c", c}});
  // Floor division and the remainder with the divisor's sign (Python, numpy).
  const int64_t div[] = {3, -4, -4, 3}, rem[] = {1, 1, -1, -1};
  const int64_t wrap[] = {-2147483647, -2147483647, 2147483645, 2147483645};
  const int64_t narrow[] = {24, -24, 24, -24}; // 280 and -280 wrapped to i8
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(out["div"].getInt(k), div[k]) << k;
    EXPECT_EQ(out["rem"].getInt(k), rem[k]) << k;
    EXPECT_EQ(out["wrap"].getInt(k), wrap[k]) << k;
    EXPECT_EQ(out["narrow"].getInt(k), narrow[k]) << k;
  }
}

TEST(Interp, LeavesAndSelect) {
  FnBuilder b;
  Op *rows = b.op(OpKind::Iota, {}, {{"axis", int64_t(0)}}, T(DType::I32, {3, 3}));
  Op *cols = b.op(OpKind::Iota, {}, {{"axis", int64_t(1)}}, T(DType::I32, {3, 3}));
  Op *fcols = b.op(OpKind::Iota, {}, {{"axis", int64_t(1)}}, T(DType::F16, {3, 3}));
  Op *neg = b.op(OpKind::Constant, {}, {{"value", -1e9}}, T(DType::F32, {3, 3}));
  Op *zero = b.op(OpKind::Constant, {}, {{"value", 0.0}}, T(DType::F32, {3, 3}));
  Op *mask = b.op(OpKind::Select, {b.op(OpKind::Le, {cols, rows}), zero, neg});
  b.ret({mask, fcols, b.op(OpKind::Not, {b.op(OpKind::Le, {cols, rows})})},
        {"mask", "fcols", "upper"});
  auto out = runOk(b.fn(), {});
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(out["mask"].getFloat(r * 3 + c), c <= r ? 0.0f : -1e9f);
      EXPECT_EQ(out["fcols"].getFloat(r * 3 + c), float(c));
      EXPECT_EQ(out["upper"].getInt(r * 3 + c), c > r ? 1 : 0);
    }
}

TEST(Interp, ThreadCountDoesNotChangeBits) {
  FnBuilder b;
  Op *a = b.input("a", T(DType::F32, {300, 500}));
  Op *w = b.param("w", T(DType::F32, {500, 400}));
  b.ret({b.op(OpKind::Matmul, {a, w})}, {"y"});
  Tensor ta = random(DType::F32, {300, 500}, "a"), tw = random(DType::F32, {500, 400}, "w");
  auto one = runOk(b.fn(), {{"a", ta}}, {{"w", tw}}, {1, {}, {}});
  auto two = runOk(b.fn(), {{"a", ta}}, {{"w", tw}}, {2, {}, {}});
  EXPECT_TRUE(one["y"] == two["y"]);
}

TEST(Interp, BadInputsAreNamed) {
  FnBuilder b;
  Op *x = b.input("x", T(DType::F16, {2, 3}));
  Op *ids = b.input("ids", T(DType::I32, {2}));
  Op *table = b.param("emb.table", T(DType::F16, {4, 3}));
  b.ret({b.op(OpKind::Add, {x, b.op(OpKind::Gather, {table, ids}, {{"axis", int64_t(0)}})})},
        {"y"});
  Tensor tx = f16({2, 3}, {1, 2, 3, 4, 5, 6}), tid(DType::I32, {2});
  std::map<std::string, Tensor> w = {{"emb.table", Tensor(DType::F16, {4, 3})}};
  EXPECT_EQ(runError(b.fn(), {{"x", tx}, {"ids", tid}}, w), "");
  EXPECT_THAT(runError(b.fn(), {{"x", tx}}, w), HasSubstr("missing input 'ids' (i32[2])"));
  EXPECT_THAT(runError(b.fn(), {{"x", tx}, {"ids", tid}, {"z", tid}}, w),
              HasSubstr("unknown input 'z' (@f takes: x, ids)"));
  EXPECT_THAT(runError(b.fn(), {{"x", tx.convertTo(DType::F32)}, {"ids", tid}}, w),
              HasSubstr("input 'x' is f32[2, 3], but @f takes f16[2, 3]"));
  EXPECT_THAT(runError(b.fn(), {{"x", f16({3, 2}, {1, 2, 3, 4, 5, 6})}, {"ids", tid}}, w),
              HasSubstr("input 'x' is f16[3, 2], but @f takes f16[2, 3]"));
  EXPECT_THAT(runError(b.fn(), {{"x", tx}, {"ids", tid}}, {}), HasSubstr("missing (1): emb.table"));
  EXPECT_THAT(
      runError(b.fn(), {{"x", tx}, {"ids", tid}}, {{"emb.table", Tensor(DType::F32, {4, 3})}}),
      HasSubstr("wrong type (1): emb.table (expected f16[4, 3], given f32[4, 3])"));
}

TEST(Interp, GatherClampsIds) {
  FnBuilder b;
  Op *table = b.input("t", T(DType::F16, {4, 2}));
  Op *ids = b.input("ids", T(DType::I32, {3}));
  b.ret({b.op(OpKind::Gather, {table, ids}, {{"axis", int64_t(0)}})}, {"y"});
  Tensor tids(DType::I32, {3});
  tids.setInt(0, -3);
  tids.setInt(1, 2);
  tids.setInt(2, 9);
  auto out = runOk(b.fn(), {{"t", f16({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})}, {"ids", tids}});
  // Rows 0 (clamped from -3), 2, and 3 (clamped from 9).
  const float want[] = {0, 1, 4, 5, 6, 7};
  for (int k = 0; k < 6; ++k)
    EXPECT_EQ(out["y"].getFloat(k), want[k]) << k;
}

TEST(Interp, WeightsFromFilesAndSeeds) {
  FnBuilder b;
  b.ret({b.param("l.w", T(DType::F16, {2, 2}))}, {"w"});
  auto specsOr = paramSpecs(b.fn());
  ASSERT_TRUE(bool(specsOr)) << llvm::toString(specsOr.takeError());
  std::vector<tensor::TensorSpec> specs = std::move(*specsOr);
  ASSERT_EQ(specs.size(), 1u);
  auto seeded = loadWeights({{}, 3}, specs);
  ASSERT_TRUE(bool(seeded));
  auto out = runOk(b.fn(), {}, *seeded);
  EXPECT_TRUE(out["w"] == seeded->at("l.w"));
  auto again = loadWeights({{}, 3}, specs);
  ASSERT_TRUE(bool(again));
  EXPECT_TRUE(again->at("l.w") == seeded->at("l.w"));

  tensor::testing::TempDir dir;
  std::string path = dir.file("w.safetensors");
  ASSERT_FALSE(bool(tensor::writeSafeTensorsFile(
      path, {{"l.w", f16({2, 2}, {1, 2, 3, 4})}, {"l.extra", f16({1}, {0})}})));
  // A tensor the function does not read (a parameter another entry
  // reads) is left in the file; with a problem, it is listed beside it.
  auto fromFile = loadWeights({{path}, 0}, specs);
  ASSERT_TRUE(bool(fromFile)) << llvm::toString(fromFile.takeError());
  EXPECT_EQ(fromFile->size(), 1u);
  EXPECT_TRUE(fromFile->at("l.w") == f16({2, 2}, {1, 2, 3, 4}));
  std::string misspelt = dir.file("misspelt.safetensors");
  ASSERT_FALSE(bool(tensor::writeSafeTensorsFile(misspelt, {{"l.ww", f16({2, 2}, {1, 2, 3, 4})}})));
  auto wrong = loadWeights({{misspelt}, 0}, specs);
  ASSERT_FALSE(bool(wrong));
  EXPECT_THAT(llvm::toString(wrong.takeError()), HasSubstr("missing (1): l.w\n  extra (1): l.ww"));

  // Several files together hold each weight once; a weight in two is an
  // error naming both files.
  std::string only = dir.file("only.safetensors"), none = dir.file("none.safetensors");
  ASSERT_FALSE(bool(tensor::writeSafeTensorsFile(only, {{"l.w", f16({2, 2}, {1, 2, 3, 4})}})));
  ASSERT_FALSE(bool(tensor::writeSafeTensorsFile(none, {})));
  auto split = loadWeights({{none, only}, 0}, specs);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  EXPECT_TRUE(split->at("l.w") == f16({2, 2}, {1, 2, 3, 4}));
  auto twice = loadWeights({{only, path}, 0}, specs);
  ASSERT_FALSE(bool(twice));
  EXPECT_THAT(llvm::toString(twice.takeError()),
              HasSubstr("in two files (1): l.w (" + only + " and " + path + ")"));
}

// Params that hold slices of one weight (attribute `shard`) ask for the
// whole weight once, and each binds its own slice of it.
TEST(Interp, ShardedParamsBindTheirSlicesOfTheWholeWeight) {
  FnBuilder b;
  Op *left = b.param("w", T(DType::F16, {2, 3}));
  setShard(*left, {1, 0, 5});
  Op *right = b.param("w", T(DType::F16, {2, 2}));
  setShard(*right, {1, 3, 5});
  right->setAttr("chip", int64_t(1));
  Op *rows = b.param("w", T(DType::F16, {1, 5}));
  setShard(*rows, {0, 1, 2});
  rows->setAttr("chip", int64_t(2));
  Op *whole = b.param("w", T(DType::F16, {2, 5}));
  whole->setAttr("chip", int64_t(3));
  b.ret({left, right, rows, whole}, {"left", "right", "rows", "whole"});
  auto specs = paramSpecs(b.fn());
  ASSERT_TRUE(bool(specs)) << llvm::toString(specs.takeError());
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_EQ((*specs)[0].name, "w");
  EXPECT_EQ((*specs)[0].shape, (std::vector<int64_t>{2, 5}));
  auto out = runOk(b.fn(), {}, {{"w", f16({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})}});
  EXPECT_EQ(out["left"].toFloats(), (std::vector<float>{0, 1, 2, 5, 6, 7}));
  EXPECT_EQ(out["right"].toFloats(), (std::vector<float>{3, 4, 8, 9}));
  EXPECT_EQ(out["rows"].toFloats(), (std::vector<float>{5, 6, 7, 8, 9}));
  EXPECT_EQ(out["whole"].toFloats(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // The slice's shape is not what the weights must hold.
  EXPECT_THAT(runError(b.fn(), {}, {{"w", f16({2, 3}, {0, 1, 2, 3, 4, 5})}}),
              HasSubstr("w (expected f16[2, 5], given f16[2, 3])"));
  // Random weights are drawn whole: the slices are of the same tensor.
  auto random = loadWeights({{}, 7}, *specs);
  ASSERT_TRUE(bool(random));
  auto fromRandom = runOk(b.fn(), {}, *random);
  std::vector<float> all = random->at("w").toFloats();
  EXPECT_EQ(fromRandom["whole"].toFloats(), all);
  EXPECT_EQ(fromRandom["right"].toFloats(), (std::vector<float>{all[3], all[4], all[8], all[9]}));
}

TEST(Interp, ParamsOfOnePathMustReadOneWeight) {
  FnBuilder b;
  Op *left = b.param("w", T(DType::F16, {2, 3}));
  setShard(*left, {1, 0, 6});
  Op *right = b.param("w", T(DType::F16, {2, 3}));
  setShard(*right, {1, 3, 7});
  right->setAttr("chip", int64_t(1));
  b.ret({left, right}, {"a", "b"});
  auto specs = paramSpecs(b.fn());
  ASSERT_FALSE(bool(specs));
  EXPECT_EQ(llvm::toString(specs.takeError()),
            "@f: parameter 'w' is a weight f16[2, 6] at %0 and f16[2, 7] at %1 (the params of "
            "one path read one weight)");
}

} // namespace
} // namespace lpu::ir

namespace lpu::ir {
namespace {

using namespace testing;
using tensor::Tensor;
using ::testing::HasSubstr;

/// An entry `double` with buckets S = 4 and S = 8: y = 2 x, x f16[1, S, 3].
std::unique_ptr<Module> doubleEntry() {
  auto module = std::make_unique<Module>();
  for (int64_t s : {4, 8}) {
    auto fn = std::make_unique<Function>("double",
                                         std::vector<std::pair<std::string, int64_t>>{{"S", s}});
    Op *x = fn->append(OpKind::Input, T(DType::F16, {1, s, 3}), {});
    x->setAttr("name", std::string("x"));
    Op *two = fn->append(OpKind::Constant, T(DType::F16, {1, s, 3}), {});
    two->setAttr("value", 2.0);
    Op *y = fn->append(OpKind::Mul, T(DType::F16, {1, s, 3}), {x, two});
    Op *ret = fn->append(OpKind::Return, Type{}, {y});
    ret->setAttr("names", std::vector<std::string>{"y"});
    module->functions.push_back(std::move(fn));
  }
  return module;
}

TEST(InterpRun, SmallestBucketPaddedAndCropped) {
  auto module = doubleEntry();
  std::vector<float> values(5 * 3);
  for (size_t k = 0; k < values.size(); ++k)
    values[k] = float(k);
  Tensor x = Tensor::fromFloats(DType::F16, {1, 5, 3}, values);
  auto run = runEntry(*module, "", {{"x", x}}, {});
  ASSERT_TRUE(bool(run)) << llvm::toString(run.takeError());
  EXPECT_EQ(run->bucketText, "S=8");
  EXPECT_DOUBLE_EQ(run->paddingFraction, 1.0 - 15.0 / 24.0);
  ASSERT_EQ(run->outputs.size(), 1u);
  EXPECT_EQ(run->outputs[0].first, "y");
  EXPECT_EQ(run->outputs[0].second.typeString(), "1x5x3xf16");
  for (size_t k = 0; k < values.size(); ++k)
    EXPECT_EQ(run->outputs[0].second.getFloat(k), 2 * values[k]);

  auto exact = runEntry(*module, "double", {{"x", Tensor(DType::F16, {1, 4, 3})}}, {});
  ASSERT_TRUE(bool(exact));
  EXPECT_EQ(exact->bucketText, "S=4");
  EXPECT_EQ(exact->paddingFraction, 0.0);

  auto tooBig = runEntry(*module, "", {{"x", Tensor(DType::F16, {1, 9, 3})}}, {});
  ASSERT_FALSE(bool(tooBig));
  EXPECT_THAT(llvm::toString(tooBig.takeError()), HasSubstr("no bucket of entry 'double' fits"));
  auto fixedDim = runEntry(*module, "", {{"x", Tensor(DType::F16, {1, 4, 2})}}, {});
  ASSERT_FALSE(bool(fixedDim));
  EXPECT_THAT(llvm::toString(fixedDim.takeError()),
              HasSubstr("dimension 2 is 2, the program needs exactly 3"));
  auto unknown = runEntry(*module, "triple", {{"x", x}}, {});
  ASSERT_FALSE(bool(unknown));
  EXPECT_THAT(llvm::toString(unknown.takeError()),
              HasSubstr("no entry 'triple' in the module (it has: double)"));
}

} // namespace
} // namespace lpu::ir

namespace lpu::ir {
namespace {

using namespace testing;
using tensor::Tensor;

TEST(Interp, BoolLogicBF16RoundingAndIntegerMaxPool) {
  FnBuilder b;
  Op *p = b.input("p", T(DType::Bool, {4}));
  Op *q = b.input("q", T(DType::Bool, {4}));
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie between 1 and
  // 1 + 2^-7 and goes to the even 1; 1 + 3 * 2^-8 goes up to 1 + 2^-6.
  Op *h = b.input("h", T(DType::BF16, {2}));
  Op *small = b.op(OpKind::Constant, {}, {{"value", std::ldexp(1.0, -8)}}, T(DType::BF16, {2}));
  Op *img = b.input("img", T(DType::I32, {1, 1, 2, 3}));
  b.ret({b.op(OpKind::And, {p, q}), b.op(OpKind::Or, {p, q}), b.op(OpKind::Add, {h, small}),
         b.op(OpKind::MaxPool2d, {img},
              {{"kernel", std::vector<int64_t>{2, 2}},
               {"stride", std::vector<int64_t>{1, 1}},
               {"padding", std::vector<int64_t>{0, 0}}})},
        {"and", "or", "sum", "pool"});
  Tensor tp(DType::Bool, {4}), tq(DType::Bool, {4}), timg(DType::I32, {1, 1, 2, 3});
  for (int k = 0; k < 4; ++k) {
    tp.setInt(k, k & 1);
    tq.setInt(k, (k >> 1) & 1);
  }
  const int32_t pixels[] = {-5, 7, -9, 3, -1, 100000000};
  for (int k = 0; k < 6; ++k)
    timg.setInt(k, pixels[k]);
  Tensor th = Tensor::fromFloats(DType::BF16, {2}, {1.0f, 1.0f + 2 * std::ldexp(1.0f, -8)});
  auto out = runOk(b.fn(), {{"p", tp}, {"q", tq}, {"h", th}, {"img", timg}});
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(out["and"].getInt(k), (k & 1) && ((k >> 1) & 1)) << k;
    EXPECT_EQ(out["or"].getInt(k), (k & 1) || ((k >> 1) & 1)) << k;
  }
  EXPECT_EQ(out["sum"].getFloat(0), 1.0f);
  EXPECT_EQ(out["sum"].getFloat(1), 1.0f + std::ldexp(1.0f, -6));
  // Integer max pooling is exact (100000000 is not a float32 value).
  EXPECT_EQ(out["pool"].getInt(0), 7);
  EXPECT_EQ(out["pool"].getInt(1), 100000000);
}

} // namespace
} // namespace lpu::ir
