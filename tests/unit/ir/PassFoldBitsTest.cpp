// fold against the reference interpreter, bit for bit: for every elementwise
// op, every dtype it is defined on and a set of tricky values (NaN, ±inf,
// ±0, subnormals of each float dtype, rounding ties, the integers' edges),
// a tiny function is folded, printed and parsed back (the constant's text
// must carry every bit), and run through interp/Interpreter.h; so is the same
// function unfolded. The outputs must have the same bytes. What fold leaves
// alone must be what docs/passes.md allows: a NaN operand or a computed
// float result that is NaN or infinite.
#include "interp/Interpreter.h"
#include "ir/Text.h"
#include "ir/Verifier.h"
#include "ir/passes/PassUtil.h"
#include "ir/passes/Passes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

namespace lpu::ir {
namespace {

using namespace lpu::interp;

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<DType> kFloats = {DType::F32, DType::F16, DType::BF16};
const std::vector<DType> kInts = {DType::I8, DType::I16, DType::I32};

/// Read as f32, f16 and bf16 constants: each dtype's own subnormals and
/// ties land in the list, the other dtypes' round (or flush) on the way in.
const std::vector<double> kFloatValues = {
    std::numeric_limits<double>::quiet_NaN(),
    kInf,
    -kInf,
    0.0,
    -0.0,
    std::ldexp(1.0, -149),  // the least f32 subnormal
    -std::ldexp(3.0, -140), // an f32 subnormal
    std::ldexp(1.0, -126),  // the least normal f32
    std::ldexp(1.0, -24),   // the least f16 subnormal
    -std::ldexp(1.0, -25),  // half of it: a tie to zero in f16
    std::ldexp(1.0, -133),  // a bf16 subnormal
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.5, // a tie for rounding to an integer
    -3.5,
    1.0 + std::ldexp(1.0, -11), // a tie in f16
    1.0 + std::ldexp(1.0, -8),  // a tie in bf16
    1.0 + std::ldexp(3.0, -24), // rounds differently to f16 and f32
    0.1,
    3.0,
    -7.0,
    88.5,    // exp overflows f32
    65504.0, // the largest f16
    65520.0, // the f16 overflow tie
    3.0e38,
    -200.0,
};

const std::vector<double> kIntValues = {0,    1,       -1,    2,      -2,         3,
                                        -7,   7,       15,    31,     127,        -128,
                                        128,  300,     32767, -32768, 2147483647, -2147483647 - 1,
                                        -300, 16842753};

const std::vector<OpKind> kFloatUnary = {
    OpKind::Neg,     OpKind::Abs,  OpKind::Relu, OpKind::Gelu, OpKind::GeluTanh, OpKind::Silu,
    OpKind::Sigmoid, OpKind::Tanh, OpKind::Exp,  OpKind::Log,  OpKind::Sqrt,     OpKind::Rsqrt};
const std::vector<OpKind> kIntUnary = {OpKind::Neg, OpKind::Abs, OpKind::Relu};
const std::vector<OpKind> kNumberBinary = {OpKind::Add,     OpKind::Sub,    OpKind::Mul,
                                           OpKind::Div,     OpKind::Rem,    OpKind::Pow,
                                           OpKind::Maximum, OpKind::Minimum};
const std::vector<OpKind> kComparisons = {OpKind::Eq, OpKind::Ne, OpKind::Lt,
                                          OpKind::Le, OpKind::Gt, OpKind::Ge};

Type t(DType dtype) { return Type{dtype, {2}}; }

/// A value for a failure message, every bit shown.
std::string show(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

/// `constant`s of the given dtypes and values, one op of `kind` reading
/// them, and the return of its value.
using Operands = std::vector<std::pair<DType, double>>;
void build(Function &fn, OpKind kind, const Operands &operands, DType result) {
  std::vector<Op *> args;
  for (auto [dtype, v] : operands) {
    Op *c = fn.append(OpKind::Constant, t(dtype), {});
    c->setAttr("value", splatAttr(dtype, v));
    args.push_back(c);
  }
  Op *op = fn.append(kind, t(result), args);
  Op *ret = fn.append(OpKind::Return, Type{}, {op});
  ret->setAttr("names", std::vector<std::string>{"out"});
}

tensor::Tensor run(const Function &fn) {
  auto out = interpret(fn, {}, {});
  if (!out) {
    ADD_FAILURE() << llvm::toString(out.takeError()) << "\n" << toString(fn);
    return {};
  }
  return (*out)[0].second;
}

bool anyNaN(const tensor::Tensor &x) {
  if (!tensor::isFloat(x.dtype()))
    return false;
  for (float v : x.toFloats())
    if (std::isnan(v))
      return true;
  return false;
}

bool allFinite(const tensor::Tensor &x) {
  if (!tensor::isFloat(x.dtype()))
    return true;
  for (float v : x.toFloats())
    if (!std::isfinite(v))
      return false;
  return true;
}

struct Tally {
  int folded = 0, kept = 0;
};

/// The tricky values for a dtype.
const std::vector<double> &valuesOf(DType dtype) {
  static const std::vector<double> kBools = {0.0, 1.0};
  return tensor::isFloat(dtype) ? kFloatValues : dtype == DType::Bool ? kBools : kIntValues;
}

/// Folds one op on splats and checks it against the interpreter.
void check(OpKind kind, const Operands &operands, DType result, Tally &tally) {
  Function reference("f"), folded("f");
  build(reference, kind, operands, result);
  build(folded, kind, operands, result);
  std::string what = mnemonic(kind).str() + " on";
  for (auto [dtype, v] : operands)
    what += " " + tensor::dtypeName(dtype).str() + " " + show(v);
  ASSERT_TRUE(verify(reference).empty()) << what << "\n" << formatErrors(verify(reference));

  createFoldPass()->run(folded);
  tensor::Tensor expected = run(reference);
  const Op *out = folded.terminator()->operand(0);
  if (out->kind() != OpKind::Constant) {
    ++tally.kept;
    bool nanOperand = false;
    for (const Op *c : reference.terminator()->operand(0)->operands())
      nanOperand |= tensor::isFloat(c->type().dtype) && std::isnan(*c->floatAttr("value"));
    EXPECT_TRUE(nanOperand || !allFinite(expected))
        << what << ": not folded, but the interpreter gives a finite value";
    return;
  }
  ++tally.folded;
  EXPECT_FALSE(anyNaN(expected)) << what << ": a NaN was folded";
  // Through the text form, as lpu-opt hands it on.
  auto parsed = parseModule(toString(folded), "folded");
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  tensor::Tensor actual = run(*(*parsed)->functions.at(0));
  EXPECT_TRUE(actual == expected) << what << ": folded " << toString(folded) << "interpreter "
                                  << expected.getFloat(0) << ", fold " << actual.getFloat(0);
}

/// `kind` on every pair of `dtype`'s tricky values.
void checkPairs(OpKind kind, DType dtype, DType result, Tally &tally) {
  for (double a : valuesOf(dtype))
    for (double b : valuesOf(dtype))
      check(kind, {{dtype, a}, {dtype, b}}, result, tally);
}

TEST(PassFoldBitsTest, UnaryOpsMatchTheInterpreter) {
  Tally tally;
  for (DType d : kFloats)
    for (OpKind kind : kFloatUnary)
      for (double v : kFloatValues)
        check(kind, {{d, v}}, d, tally);
  for (DType d : kInts)
    for (OpKind kind : kIntUnary)
      for (double v : kIntValues)
        check(kind, {{d, v}}, d, tally);
  for (double v : valuesOf(DType::Bool))
    check(OpKind::Not, {{DType::Bool, v}}, DType::Bool, tally);
  // Most of these fold; NaN operands, log(-1), exp(88.5), ... do not.
  EXPECT_GT(tally.folded, 3 * tally.kept);
}

TEST(PassFoldBitsTest, BinaryOpsMatchTheInterpreter) {
  Tally tally;
  for (OpKind kind : kNumberBinary) {
    for (DType d : kFloats)
      checkPairs(kind, d, d, tally);
    for (DType d : kInts)
      checkPairs(kind, d, d, tally);
  }
  checkPairs(OpKind::And, DType::Bool, DType::Bool, tally);
  checkPairs(OpKind::Or, DType::Bool, DType::Bool, tally);
  EXPECT_GT(tally.folded, 2 * tally.kept);
}

TEST(PassFoldBitsTest, ComparisonsMatchTheInterpreter) {
  Tally tally;
  for (OpKind kind : kComparisons) {
    for (DType d : kFloats)
      checkPairs(kind, d, DType::Bool, tally);
    for (DType d : kInts)
      checkPairs(kind, d, DType::Bool, tally);
  }
  checkPairs(OpKind::Eq, DType::Bool, DType::Bool, tally);
  checkPairs(OpKind::Ne, DType::Bool, DType::Bool, tally);
  EXPECT_GT(tally.folded, 2 * tally.kept);
}

TEST(PassFoldBitsTest, SelectMatchesTheInterpreter) {
  Tally tally;
  for (double cond : valuesOf(DType::Bool))
    for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I8, DType::I16, DType::I32})
      for (double a : valuesOf(d)) {
        check(OpKind::Select, {{DType::Bool, cond}, {d, a}, {d, -0.0}}, d, tally);
        check(OpKind::Select, {{DType::Bool, cond}, {d, 5.0}, {d, a}}, d, tally);
      }
  EXPECT_GT(tally.folded, 4 * tally.kept);
}

TEST(PassFoldBitsTest, ConvertMatchesTheInterpreter) {
  Tally tally;
  std::vector<DType> all = {DType::F32, DType::F16, DType::BF16, DType::I8,
                            DType::I16, DType::I32, DType::Bool};
  for (DType from : all)
    for (DType to : all)
      for (double v : valuesOf(from))
        check(OpKind::Convert, {{from, v}}, to, tally);
  EXPECT_GT(tally.folded, 4 * tally.kept);
}

/// Reductions and softmax of a splat: the interpreter adds in f32 one
/// element at a time; fold must land on the same bits.
TEST(PassFoldBitsTest, ReductionsOfSplatsMatchTheInterpreter) {
  Tally tally;
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I8, DType::I32})
    for (int64_t n : {1, 3, 1000, 70000})
      for (OpKind kind : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax,
                          OpKind::ReduceMin, OpKind::Argmax, OpKind::Softmax}) {
        bool isFloat = tensor::isFloat(d);
        if (!isFloat && (kind == OpKind::ReduceMean || kind == OpKind::Softmax))
          continue;
        std::vector<double> values =
            isFloat ? kFloatValues : std::vector<double>{0.0, 3.0, -128.0, 127.0, -7.0};
        for (double v : values) {
          auto make = [&](Function &fn) {
            Op *c = fn.append(OpKind::Constant, Type{d, {2, n}}, {});
            c->setAttr("value", splatAttr(d, v));
            Type type{kind == OpKind::Argmax ? DType::I32 : d, kind == OpKind::Softmax
                                                                   ? std::vector<int64_t>{2, n}
                                                                   : std::vector<int64_t>{2}};
            Op *r = fn.append(kind, type, {c});
            if (kind == OpKind::Softmax || kind == OpKind::Argmax) {
              r->setAttr("axis", int64_t{1});
            } else {
              r->setAttr("axes", std::vector<int64_t>{1});
              r->setAttr("keep", false);
            }
            Op *ret = fn.append(OpKind::Return, Type{}, {r});
            ret->setAttr("names", std::vector<std::string>{"out"});
          };
          Function reference("f"), folded("f");
          make(reference);
          make(folded);
          ASSERT_TRUE(verify(reference).empty()) << formatErrors(verify(reference));
          createFoldPass()->run(folded);
          tensor::Tensor expected = run(reference);
          std::string what = mnemonic(kind).str() + " of " + std::to_string(n) + " " +
                             tensor::dtypeName(d).str() + " " + show(v);
          if (folded.terminator()->operand(0)->kind() != OpKind::Constant) {
            ++tally.kept;
            EXPECT_TRUE(std::isnan(v) || !allFinite(expected)) << what << ": not folded";
            continue;
          }
          ++tally.folded;
          EXPECT_TRUE(run(folded) == expected) << what << ": interpreter " << expected.getFloat(0)
                                               << ", fold " << run(folded).getFloat(0);
        }
      }
  EXPECT_GT(tally.folded, 4 * tally.kept);
}

} // namespace
} // namespace lpu::ir
