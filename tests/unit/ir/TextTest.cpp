// The text form: printing, parsing back bit-exactly, parse errors with their
// positions, and robustness against arbitrary bytes.
#include "ir/Text.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

using namespace lpu::ir;

namespace {

Type f16(std::vector<int64_t> shape) { return Type{DType::F16, std::move(shape)}; }

const char *kMlp = R"(func @mlp<B = 1> {
  %0 = input {name = "x"} : f16[1, 784] loc("examples/mlp.lpu":14:22)
  %1 = param {path = "fc1.w"} : f16[784, 256] loc("stdlib/std/nn.lpu":9:9)
  %2 = matmul %0, %1 : f16[1, 256] loc("stdlib/std/nn.lpu":12:12)
  return %2 {names = ["out"]} loc("examples/mlp.lpu":16:5)
}
)";

std::unique_ptr<Module> parseOk(llvm::StringRef text) {
  auto m = parseModule(text, "t.ir");
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError()) << "\n" << text.str();
    return std::make_unique<Module>();
  }
  return std::move(*m);
}

std::string parseError(llvm::StringRef text) {
  auto m = parseModule(text, "t.ir");
  if (m) {
    ADD_FAILURE() << "parsed:\n" << text.str();
    return "";
  }
  return llvm::toString(m.takeError());
}

std::string printed(const Module &m, PrintOptions options = {}) {
  std::string out;
  llvm::raw_string_ostream os(out);
  print(m, os, options);
  return out;
}

TEST(TextPrint, TheHeaderExample) {
  auto m = parseOk(kMlp);
  ASSERT_EQ(m->functions.size(), 1u);
  const Function &fn = *m->functions[0];
  EXPECT_EQ(fn.name(), "mlp");
  EXPECT_EQ(fn.bucket(), (std::vector<std::pair<std::string, int64_t>>{{"B", 1}}));
  ASSERT_EQ(fn.size(), 4u);
  EXPECT_EQ(fn.ops()[2]->kind(), OpKind::Matmul);
  EXPECT_EQ(fn.ops()[2]->operand(0), fn.ops()[0].get());
  EXPECT_EQ(fn.ops()[2]->operand(1), fn.ops()[1].get());
  EXPECT_EQ(fn.ops()[2]->type(), f16({1, 256}));
  EXPECT_EQ(fn.ops()[1]->loc(), (Location{"stdlib/std/nn.lpu", 9, 9}));
  EXPECT_EQ(fn.ops()[0]->stringAttr("name"), "x");
  EXPECT_EQ(fn.terminator()->stringsAttr("names"), std::vector<std::string>{"out"});
  EXPECT_EQ(printed(*m), kMlp);
  EXPECT_EQ(toString(fn), kMlp);
}

TEST(TextPrint, WithoutLocationsAndBuckets) {
  Function fn("f");
  Op *c = fn.append(OpKind::Constant, Type{DType::I32, {}}, {});
  c->setAttr("value", int64_t(-3));
  fn.append(OpKind::Return, Type{}, {c})->setAttr("names", std::vector<std::string>{"y"});
  EXPECT_EQ(toString(fn, {.locations = false}),
            "func @f {\n  %0 = constant {value = -3} : i32[]\n  return %0 {names = [\"y\"]}\n}\n");
  EXPECT_EQ(toString(fn), "func @f {\n  %0 = constant {value = -3} : i32[] loc(unknown)\n"
                          "  return %0 {names = [\"y\"]} loc(unknown)\n}\n");
}

TEST(TextPrint, FloatsShortestAndAlwaysFloats) {
  Function fn("f");
  auto text = [&](double v) {
    Function g("g");
    g.append(OpKind::Constant, Type{}, {})->setAttr("value", v);
    std::string s = toString(g, {.locations = false});
    auto open = s.find("value = ") + 8;
    return s.substr(open, s.find('}', open) - open);
  };
  EXPECT_EQ(text(0.1), "0.1");
  EXPECT_EQ(text(1.0), "1.0");
  EXPECT_EQ(text(-0.0), "-0.0");
  EXPECT_EQ(text(1e-5), "1e-05");
  EXPECT_EQ(text(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(text(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(text(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(text(0.30000000000000004), "0.30000000000000004");
}

TEST(TextRoundTrip, EveryAttrKindAndOddFloats) {
  std::vector<double> floats = {0.1,
                                -0.0,
                                1.0,
                                1e20,
                                1.2345678901234568e+20,
                                5e-324,
                                2.2250738585072014e-308,
                                std::numeric_limits<double>::max(),
                                -std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN(),
                                -std::numeric_limits<double>::quiet_NaN(),
                                std::bit_cast<double>(uint64_t(0x7ff0000000000001)),
                                std::bit_cast<double>(uint64_t(0xfff8000000000123)),
                                double(65504.0f),
                                double(std::bit_cast<float>(uint32_t(0x3f800001)))};
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200; ++i) {
    double v = std::bit_cast<double>(rng());
    floats.push_back(v);
  }
  Module m;
  m.functions.push_back(std::make_unique<Function>(
      "weird name", std::vector<std::pair<std::string, int64_t>>{{"B", 1}, {"S", -128}}));
  Function &fn = *m.functions.back();
  std::vector<Op *> ops;
  for (double v : floats) {
    Op *c = fn.append(OpKind::Constant, Type{DType::F32, {2, 0}}, {}, {"a \"q\"\n.lpu", 3, 4});
    c->setAttr("value", v);
    ops.push_back(c);
  }
  Op *x = fn.append(OpKind::Input, Type{DType::Bool, {}}, {});
  x->setAttr("name", std::string("tab\there \\ \x01 \x7f end"));
  x->setAttr("flag", false);
  x->setAttr("other", true);
  x->setAttr("ints", std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 0,
                                          std::numeric_limits<int64_t>::max()});
  x->setAttr("strs", std::vector<std::string>{"", "b", "\xc3\xa9"});
  x->setAttr("empty", std::vector<int64_t>{});
  x->setAttr("odd key", int64_t(7));
  Op *ret = fn.append(OpKind::Return, Type{}, {ops[0], x, ops[0]});
  ret->setAttr("names", std::vector<std::string>{"a", "b", "c"});
  m.functions.push_back(std::make_unique<Function>("second"));
  m.functions.back()->append(OpKind::Return, Type{}, {})->setAttr("names", std::vector<int64_t>{});

  std::string once = printed(m);
  auto back = parseOk(once);
  EXPECT_EQ(printed(*back), once);
  ASSERT_EQ(back->functions.size(), 2u);
  const Function &fb = *back->functions[0];
  EXPECT_EQ(fb.name(), "weird name");
  EXPECT_EQ(fb.bucket(), fn.bucket());
  ASSERT_EQ(fb.size(), fn.size());
  for (size_t i = 0; i < floats.size(); ++i) {
    auto v = fb.ops()[i]->floatAttr("value");
    ASSERT_TRUE(v);
    EXPECT_EQ(std::bit_cast<uint64_t>(*v), std::bit_cast<uint64_t>(floats[i])) << i;
    EXPECT_EQ(fb.ops()[i]->loc(), fn.ops()[i]->loc());
    EXPECT_EQ(fb.ops()[i]->type(), fn.ops()[i]->type());
  }
  const Op &xb = *fb.ops()[floats.size()];
  EXPECT_EQ(xb.attrs(), x->attrs());
  EXPECT_EQ(fb.terminator()->operand(2), fb.ops()[0].get());
}

TEST(TextParse, CommentsBlankLinesAndNames) {
  auto m = parseOk("// RUN: lpu-opt %s\n\n"
                   "func @a {   // a comment\n"
                   "  %x = input {name = \"x\"} : f32[2]\n"
                   "\n"
                   "  %y.1 = neg %x : f32[2] // trailing\n"
                   "  return %y.1, %x {names = [\"y\", \"x\"]}\n"
                   "}\n"
                   "func @b<N = 3> {\n  return {names = []}\n}");
  ASSERT_EQ(m->functions.size(), 2u);
  EXPECT_EQ(m->functions[0]->ops()[1]->operand(0), m->functions[0]->ops()[0].get());
  EXPECT_EQ(printed(*m, {.locations = false}),
            "func @a {\n  %0 = input {name = \"x\"} : f32[2]\n  %1 = neg %0 : f32[2]\n"
            "  return %1, %0 {names = [\"y\", \"x\"]}\n}\n\nfunc @b<N = 3> {\n"
            "  return {names = []}\n}\n");
  EXPECT_EQ(parseOk("")->functions.size(), 0u);
}

TEST(TextParse, ErrorsWithPositions) {
  EXPECT_EQ(parseError("func @f {\n  %0 = neg %1 : f32[]\n}\n"),
            "t.ir:2:12: error: undefined value %1");
  EXPECT_EQ(parseError("func @f {\n  %0 = input : f32[]\n  %0 = input : f32[]\n}\n"),
            "t.ir:3:3: error: redefinition of %0");
  EXPECT_EQ(parseError("func @f {\n  %0 = frobnicate : f32[]\n}\n"),
            "t.ir:2:8: error: unknown op 'frobnicate'");
  EXPECT_EQ(parseError("func @f {\n  %0 = input : f64[2]\n}\n"),
            "t.ir:2:16: error: unknown dtype 'f64' (expected one of bool i8 i16 i32 f16 bf16 f32)");
  EXPECT_EQ(parseError("func @f {\n  %0 = input : f32[2, -1]\n}\n"),
            "t.ir:2:23: error: negative dimension -1");
  EXPECT_EQ(parseError("func @f {\n  %0 = input : f32[2\n}\n"),
            "t.ir:2:21: error: expected ',' or ']', found end of line");
  EXPECT_EQ(parseError("func @f {\n  %0 = input : f32[]\n  %1 = add %0 : f32[]\n}\n"),
            "t.ir:3:8: error: 'add' takes 2 operands, got 1");
  EXPECT_EQ(parseError("func @f {\n  %0 = input : f32[] garbage\n}\n"),
            "t.ir:2:22: error: unexpected 'garbage' after the op");
  EXPECT_EQ(parseError("func @f {\n  %0 = input : f32[]\n"),
            "t.ir:3:1: error: expected '}' to close func @f");
  EXPECT_EQ(parseError("func @f {\n  return {names = []}\n}\n}"),
            "t.ir:4:1: error: expected 'func', found '}'");
  EXPECT_EQ(parseError("func @f {\n  %0 = input {name = \"x} : f32[]\n}\n"),
            "t.ir:2:22: error: unterminated string");
  EXPECT_EQ(parseError("func @f {\n  %0 = input {name = 1, name = 2} : f32[]\n}\n"),
            "t.ir:2:25: error: attribute 'name' given twice");
  EXPECT_EQ(parseError("func @f {\n  %0 = input {n = 99999999999999999999} : f32[]\n}\n"),
            "t.ir:2:19: error: integer 99999999999999999999 is out of range");
  EXPECT_EQ(parseError("func @f {\n  %0 = input : f32[] loc(\"a\":1)\n}\n"),
            "t.ir:2:31: error: expected ':', found ')'");
  EXPECT_EQ(parseError("func @f {\n  %0 = return\n}\n"),
            "t.ir:2:3: error: 'return' has no result");
  EXPECT_EQ(parseError("func @f {\n  neg\n}\n"),
            "t.ir:2:3: error: 'neg' needs a result (%N = neg ...)");
  EXPECT_EQ(parseError("func @f {\n  %0 = input\n}\n"),
            "t.ir:2:13: error: expected ':', found end of line");
  EXPECT_EQ(parseError("func @f {}\nfunc @f {}\n"), "t.ir:2:1: error: redefinition of func @f");
  EXPECT_EQ(parseError("func @f<B = 1, B = 2> {}"), "t.ir:1:16: error: bucket size 'B' given twice");
  EXPECT_EQ(parseError("func @f {\n  %0 = input {v = [1, \"a\"]} : f32[]\n}\n"),
            "t.ir:2:23: error: expected an integer or a string, found '\"'");
  EXPECT_EQ(parseError("\x01"), "t.ir:1:1: error: expected 'func', found '\\x01'");
  // Different functions may reuse value names; one function may not see
  // another's values.
  EXPECT_EQ(parseError("func @f {\n  %0 = input : f32[]\n}\nfunc @g {\n  return %0 {names = [\"a\"]}\n}\n"),
            "t.ir:5:10: error: undefined value %0");
}

TEST(TextParse, NeverCrashesOnTruncationsOrMutations) {
  std::string text = kMlp;
  text += "func @g<S = 2> {\n  %0 = constant {value = -1.5e-07} : bf16[2, 2]\n"
          "  %1 = reduce_sum %0 {axes = [0], keep = true} : bf16[1, 2]\n"
          "  %2 = constant {value = nan(0x7ff0000000000001)} : f32[] loc(unknown)\n"
          "  return %1 {names = [\"o\\n\"]}\n}\n";
  ASSERT_TRUE(static_cast<bool>(parseModule(text, "t.ir")));
  auto wellFormed = [](llvm::Expected<std::unique_ptr<Module>> m) {
    if (m)
      return true;
    std::string e = llvm::toString(m.takeError());
    return llvm::StringRef(e).startswith("t.ir:") && e.find(": error: ") != std::string::npos;
  };
  for (size_t n = 0; n <= text.size(); ++n)
    EXPECT_TRUE(wellFormed(parseModule(llvm::StringRef(text).take_front(n), "t.ir"))) << n;
  const char replacements[] = {'\0', '%', '"', '{', '}', '[', ']', ',', '\n', '-', '9', 'e', '\\'};
  for (size_t i = 0; i < text.size(); ++i)
    for (char r : replacements) {
      std::string mutated = text;
      mutated[i] = r;
      EXPECT_TRUE(wellFormed(parseModule(mutated, "t.ir"))) << i;
    }
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(rng() % 64, '\0');
    for (char &c : bytes)
      c = char(rng());
    EXPECT_TRUE(wellFormed(parseModule(bytes, "t.ir")));
    // Random bytes spliced into valid text reach deeper.
    std::string spliced = text;
    spliced.insert(rng() % text.size(), bytes);
    EXPECT_TRUE(wellFormed(parseModule(spliced, "t.ir")));
  }
}

} // namespace
