// The verifier: each invariant is caught, at the offending op's location.
#include "ir/Text.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

using namespace lpu::ir;

namespace {

Type f32(std::vector<int64_t> shape) { return Type{DType::F32, std::move(shape)}; }
Location at(unsigned line) { return Location{"m.lpu", line, 5}; }

/// x: f32[2, 3], w: f32[3, 4]; y = x @ w; return y. Op i sits on line i+1.
struct Sample {
  Function fn{"f", {{"B", 2}}};
  Op *x, *w, *y, *ret;
  Sample() {
    x = fn.append(OpKind::Input, f32({2, 3}), {}, at(1));
    x->setAttr("name", std::string("x"));
    w = fn.append(OpKind::Param, f32({3, 4}), {}, at(2));
    w->setAttr("path", std::string("w"));
    y = fn.append(OpKind::Matmul, f32({2, 4}), {x, w}, at(3));
    ret = fn.append(OpKind::Return, Type{}, {y}, at(4));
    ret->setAttr("names", std::vector<std::string>{"y"});
  }
};

/// The one error expected, at `loc`, containing `text`.
void expectOne(const Function &fn, const Location &loc, const std::string &text) {
  auto errors = verify(fn);
  ASSERT_EQ(errors.size(), 1u) << formatErrors(errors, &fn);
  EXPECT_EQ(errors[0].loc, loc);
  EXPECT_NE(errors[0].message.find(text), std::string::npos) << errors[0].message;
}

TEST(Verifier, AcceptsAWellFormedFunction) {
  Sample s;
  EXPECT_TRUE(verify(s.fn).empty()) << formatErrors(verify(s.fn));
  auto m = parseModule("func @g {\n  %0 = input {name = \"a\"} : bool[3]\n"
                       "  %1 = constant {value = true} : bool[3]\n"
                       "  %2 = and %0, %1 {fusion = 0} : bool[3]\n"
                       "  return %2 {names = [\"o\"]}\n}\n",
                       "g.ir");
  ASSERT_TRUE(static_cast<bool>(m));
  EXPECT_TRUE(verify(**m).empty()) << formatErrors(verify(**m));
}

TEST(Verifier, StoredTypeMustMatchInferred) {
  Sample s;
  s.y->setType(f32({2, 5}));
  expectOne(s.fn, at(3), "result type f32[2, 5] differs from the inferred f32[2, 4]");
}

TEST(Verifier, TypeRuleErrors) {
  Sample s;
  s.w->setType(f32({5, 4}));
  expectOne(s.fn, at(3), "matmul: contracting dimensions differ: 3 and 5");
}

TEST(Verifier, OperandCount) {
  Sample s;
  s.y->setOperands({s.x});
  expectOne(s.fn, at(3), "expected 2 operands, got 1");
}

TEST(Verifier, Dominance) {
  Sample s;
  Op *late = s.fn.insertBefore(s.ret, OpKind::Neg, f32({2, 4}), {s.y}, at(9));
  s.y->setOperand(0, late);
  auto errors = verify(s.fn);
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].loc, at(3));
  EXPECT_NE(errors[0].message.find("defined after its use"), std::string::npos);

  Sample self;
  Op *neg = self.fn.insertBefore(self.ret, OpKind::Neg, f32({2, 4}), {self.y}, at(7));
  neg->setOperand(0, neg);
  expectOne(self.fn, at(7), "own result");

  Sample other, here;
  here.y->setOperand(0, other.x);
  expectOne(here.fn, at(3), "not defined in func @f");
}

TEST(Verifier, ReturnExactlyOnceAndLast) {
  Sample missing;
  missing.fn.eraseIf([&](const Op &op) { return op.kind() == OpKind::Return; });
  auto errors = verify(missing.fn);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].op, nullptr);
  EXPECT_NE(errors[0].message.find("does not end with a return"), std::string::npos);

  Sample early;
  early.fn.append(OpKind::Neg, f32({2, 4}), {early.y}, at(8));
  auto e2 = verify(early.fn);
  ASSERT_EQ(e2.size(), 2u) << formatErrors(e2);
  EXPECT_EQ(e2[0].loc, at(4));
  EXPECT_NE(e2[0].message.find("last op"), std::string::npos);

  Sample twice;
  Op *r2 = twice.fn.append(OpKind::Return, Type{}, {twice.y}, at(6));
  r2->setAttr("names", std::vector<std::string>{"z"});
  expectOne(twice.fn, at(4), "must be the last op");

  Sample names;
  names.ret->setAttr("names", std::vector<std::string>{"a", "b"});
  expectOne(names.fn, at(4), "2 names for 1 operands");

  // A return has no result to read.
  Sample use;
  Op *inner = use.fn.insertBefore(use.ret, OpKind::Return, Type{}, {}, at(5));
  inner->setAttr("names", std::vector<int64_t>{});
  use.ret->setOperand(0, inner);
  auto e3 = verify(use.fn);
  ASSERT_EQ(e3.size(), 2u) << formatErrors(e3);
  EXPECT_EQ(e3[0].loc, at(5));
  EXPECT_NE(e3[0].message.find("must be the last op"), std::string::npos);
  EXPECT_EQ(e3[1].loc, at(4));
  EXPECT_NE(e3[1].message.find("operand 0 is a return"), std::string::npos);
}

TEST(Verifier, InputNamesAndParamPaths) {
  Sample missing;
  missing.x->removeAttr("name");
  expectOne(missing.fn, at(1), "missing string attribute 'name'");

  Sample empty;
  empty.w->setAttr("path", std::string(""));
  expectOne(empty.fn, at(2), "attribute 'path' is empty");

  Sample wrongKind;
  wrongKind.w->setAttr("path", int64_t(3));
  expectOne(wrongKind.fn, at(2), "missing string attribute 'path'");

  Sample dup;
  Op *x2 = dup.fn.insertBefore(dup.y, OpKind::Input, f32({1}), {}, at(6));
  x2->setAttr("name", std::string("x"));
  expectOne(dup.fn, at(6), "name \"x\" is used twice");

  Sample dupParam;
  Op *w2 = dupParam.fn.insertBefore(dupParam.y, OpKind::Param, f32({1}), {}, at(7));
  w2->setAttr("path", std::string("w"));
  expectOne(dupParam.fn, at(7), "path \"w\" is used twice");
}

TEST(Verifier, ParamShards) {
  // w: f32[3, 4] as columns 4..7 of a [3, 10] weight.
  Sample ok;
  setShard(*ok.w, {1, 4, 10});
  EXPECT_TRUE(verify(ok.fn).empty()) << formatErrors(verify(ok.fn));
  EXPECT_EQ(shardOf(*ok.w), (Shard{1, 4, 10}));
  EXPECT_EQ(fullType(*ok.w), f32({3, 10}));
  EXPECT_EQ(fullType(*ok.x), f32({2, 3}));
  EXPECT_EQ(shardOf(*ok.x), std::nullopt);
  // The last slice, and the whole weight as a slice of itself.
  setShard(*ok.w, {1, 6, 10});
  EXPECT_TRUE(verify(ok.fn).empty()) << formatErrors(verify(ok.fn));
  setShard(*ok.w, {0, 0, 3});
  EXPECT_TRUE(verify(ok.fn).empty()) << formatErrors(verify(ok.fn));

  Sample notParam;
  notParam.x->setAttr("shard", std::vector<int64_t>{1, 0, 6});
  expectOne(notParam.fn, at(1), "input: only a param or a state input has a shard (attribute 'shard')");

  Sample bad;
  for (Attr attr : {Attr(int64_t(1)), Attr(std::vector<int64_t>{1, 0}),
                    Attr(std::vector<int64_t>{1, 0, 4, 4}), Attr(std::vector<std::string>{"a"})}) {
    bad.w->setAttr("shard", attr);
    expectOne(bad.fn, at(2), "param: attribute 'shard' must be three integers [axis, start, full]");
  }
  bad.w->setAttr("shard", std::vector<int64_t>{2, 0, 8});
  expectOne(bad.fn, at(2), "param: shard [2, 0, 8]: axis 2 is not an axis of f32[3, 4]");
  bad.w->setAttr("shard", std::vector<int64_t>{-1, 0, 8});
  expectOne(bad.fn, at(2), "axis -1 is not an axis of f32[3, 4]");
  bad.w->setAttr("shard", std::vector<int64_t>{1, -4, 8});
  expectOne(bad.fn, at(2), "param: shard [1, -4, 8]: the start -4 is negative");
  bad.w->setAttr("shard", std::vector<int64_t>{1, 5, 8});
  expectOne(bad.fn, at(2),
            "param: shard [1, 5, 8]: elements 5 to 5 + 4 of axis 1 are not inside the weight's 8");
  bad.w->setAttr("shard", std::vector<int64_t>{1, 0, 3});
  expectOne(bad.fn, at(2), "elements 0 to 0 + 4 of axis 1 are not inside the weight's 3");
  bad.w->setAttr("shard", std::vector<int64_t>{1, INT64_MAX, INT64_MAX});
  expectOne(bad.fn, at(2), "are not inside the weight's");
  bad.w->setAttr("shard", std::vector<int64_t>{1, 0, int64_t(1) << 60});
  expectOne(bad.fn, at(2), "the weight f32[3, 1152921504606846976] is too large");

  // Every param of a path reads the same weight (each chip its slice).
  Sample two;
  setShard(*two.w, {1, 0, 8});
  Op *w2 = two.fn.insertBefore(two.y, OpKind::Param, f32({3, 4}), {}, at(7));
  w2->setAttr("path", std::string("w"));
  w2->setAttr("chip", int64_t(1));
  setShard(*w2, {1, 4, 8});
  EXPECT_TRUE(verify(two.fn).empty()) << formatErrors(verify(two.fn));
  // Two slices of one weight on one chip (by columns for one matmul, by
  // rows for another): fine; the same slice twice: not.
  w2->setAttr("chip", int64_t(0));
  EXPECT_TRUE(verify(two.fn).empty()) << formatErrors(verify(two.fn));
  setShard(*w2, {1, 0, 8});
  expectOne(two.fn, at(7), "path \"w\" is used twice");
  w2->setAttr("chip", int64_t(1));
  setShard(*w2, {1, 4, 9});
  expectOne(two.fn, at(7),
            "param: path \"w\" is a weight f32[3, 9] here, but f32[3, 8] at %1: the params of "
            "one path read one weight");
  w2->removeAttr("shard");
  expectOne(two.fn, at(7), "path \"w\" is a weight f32[3, 4] here, but f32[3, 8] at %1");
}

TEST(Verifier, ConstantValues) {
  Sample s;
  Op *c = s.fn.insertBefore(s.ret, OpKind::Constant, f32({}), {}, at(10));
  expectOne(s.fn, at(10), "needs a numeric attribute 'value'");
  c->setAttr("value", std::string("1"));
  expectOne(s.fn, at(10), "needs a numeric attribute 'value'");
  c->setAttr("value", true);
  expectOne(s.fn, at(10), "numeric");
  c->setAttr("value", int64_t(2));
  EXPECT_TRUE(verify(s.fn).empty());
  c->setAttr("value", 2.5);
  EXPECT_TRUE(verify(s.fn).empty());
  c->setType(Type{DType::Bool, {}});
  c->setAttr("value", false);
  EXPECT_TRUE(verify(s.fn).empty());
}

TEST(Verifier, FusionOnlyOnElementwise) {
  Sample s;
  s.y->setAttr("fusion", int64_t(1));
  expectOne(s.fn, at(3), "only elementwise ops belong to a fusion group");
  s.y->removeAttr("fusion");
  Op *neg = s.fn.insertBefore(s.ret, OpKind::Neg, f32({2, 4}), {s.y}, at(11));
  neg->setAttr("fusion", int64_t(1));
  EXPECT_TRUE(verify(s.fn).empty());
  neg->setAttr("fusion", std::string("one"));
  expectOne(s.fn, at(11), "'fusion' must be an integer");
}

TEST(Verifier, ObserveTags) {
  // A quantize's division: x / broadcast(s), tagged for calibration.
  auto parse = [](const std::string &tags) {
    return parseModule("func @q {\n  %0 = input {name = \"x\"} : f32[4]\n"
                       "  %1 = param {path = \"s\"} : f32[]\n"
                       "  %2 = broadcast %1 : f32[4]\n"
                       "  %3 = constant {value = 2.0} : f32[4]\n"
                       "  %4 = div %0, " + tags + " : f32[4]\n"
                       "  return %4 {names = [\"o\"]}\n}\n",
                       "q.ir");
  };
  auto errorsOf = [&](const std::string &tags) {
    auto m = parse(tags);
    EXPECT_TRUE(static_cast<bool>(m));
    return m ? formatErrors(verify(**m)) : std::string();
  };
  EXPECT_EQ(errorsOf("%2 {observe = [\"s\"], observe_zero = 127, observe_axis = 0}"), "");
  EXPECT_EQ(errorsOf("%2 {observe = [\"t\"]}"),
            "error: div: observe: the scale \"t\" is not the path of a param (in func @q)\n");
  EXPECT_EQ(errorsOf("%3 {observe = [\"s\"]}"),
            "error: div: observe: the divisor does not read the scale \"s\" (in func @q)\n");
  EXPECT_EQ(errorsOf("%2 {observe = [\"s\"], observe_zero = 128}"),
            "error: div: attribute 'observe_zero' must be an integer from -128 to 127 (an i8 "
            "zero point) (in func @q)\n");
  EXPECT_EQ(errorsOf("%2 {observe = [\"s\"], observe_axis = 1}"),
            "error: div: attribute 'observe_axis' must be an axis of f32[4] (in func @q)\n");
}

TEST(Verifier, FormatErrors) {
  Sample s;
  s.y->setType(f32({2, 5}));
  s.x->setLoc(Location{});
  s.x->removeAttr("name");
  std::string text = formatErrors(verify(s.fn));
  EXPECT_EQ(text, "error: input: missing string attribute 'name' (in func @f<B = 2>)\n"
                  "m.lpu:3:5: error: matmul: result type f32[2, 5] differs from the inferred "
                  "f32[2, 4] (in func @f<B = 2>)\n");
  Module m;
  m.functions.push_back(std::make_unique<Function>("empty"));
  auto errors = verify(m);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(formatErrors(errors), "error: func @empty does not end with a return\n");
}

} // namespace
