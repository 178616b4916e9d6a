// The importer on graphs built in code: shape arithmetic over symbolic
// sizes, the std.nn patterns and when they are declined, and the errors.
#include "import/ImporterImpl.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lpu::import {
namespace {

using detail::Size;

OnnxValueInfo tensorInfo(const std::string &name, int32_t type,
                         std::vector<std::variant<int64_t, std::string>> dims) {
  OnnxValueInfo v;
  v.name = name;
  v.type = type;
  v.hasShape = true;
  for (auto &d : dims) {
    OnnxDim dim;
    if (std::holds_alternative<int64_t>(d))
      dim.value = std::get<int64_t>(d);
    else
      dim.symbol = std::get<std::string>(d);
    v.dims.push_back(dim);
  }
  return v;
}

OnnxTensor floats(const std::string &name, std::vector<int64_t> dims, std::vector<float> values) {
  OnnxTensor t;
  t.name = name;
  t.type = kOnnxFloat;
  t.dims = std::move(dims);
  t.floats = std::move(values);
  return t;
}

OnnxTensor ints(const std::string &name, std::vector<int64_t> dims, std::vector<int64_t> values) {
  OnnxTensor t;
  t.name = name;
  t.type = kOnnxInt64;
  t.dims = std::move(dims);
  t.ints = std::move(values);
  return t;
}

OnnxNode node(const std::string &op, std::vector<std::string> in, std::vector<std::string> out,
              const std::string &name = "") {
  OnnxNode n;
  n.opType = op;
  n.name = name.empty() ? "/" + op : name;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

OnnxAttribute intsAttr(std::vector<int64_t> v) {
  OnnxAttribute a;
  a.kind = OnnxAttribute::Ints;
  a.ints = std::move(v);
  return a;
}

OnnxAttribute intAttr(int64_t v) {
  OnnxAttribute a;
  a.kind = OnnxAttribute::Int;
  a.i = v;
  return a;
}

OnnxAttribute tensorAttr(OnnxTensor t) {
  OnnxAttribute a;
  a.kind = OnnxAttribute::Tensor;
  a.t = std::move(t);
  return a;
}

std::string importOk(const OnnxGraph &g, std::map<std::string, std::vector<int64_t>> buckets = {},
                     ImportResult *out = nullptr) {
  ImportOptions options;
  options.buckets = std::move(buckets);
  auto r = importOnnx(g, options);
  if (!r) {
    ADD_FAILURE() << llvm::toString(r.takeError());
    return "";
  }
  if (out)
    *out = *r;
  return r->source;
}

std::string importError(const OnnxGraph &g, std::map<std::string, std::vector<int64_t>> buckets = {}) {
  ImportOptions options;
  options.buckets = std::move(buckets);
  auto r = importOnnx(g, options);
  if (r) {
    ADD_FAILURE() << "imported:\n" << r->source;
    return "";
  }
  return llvm::toString(r.takeError());
}

TEST(SizeTest, MonomialsMultiplyAndDivideExactly) {
  Size s = Size::symbol("S");
  Size twelveS = detail::mulSize(Size::of(12), s);
  EXPECT_EQ(twelveS.text(), "12 * S");
  auto back = detail::divSize(twelveS, Size::of(4));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->text(), "3 * S");
  EXPECT_EQ(detail::divSize(twelveS, s)->text(), "12");
  EXPECT_FALSE(detail::divSize(twelveS, Size::of(5)));
  EXPECT_FALSE(detail::divSize(twelveS, Size::symbol("B")));
  EXPECT_EQ(detail::addSize(s, Size::of(-1)).text(), "S - 1");
}

TEST(ImporterTest, ReshapeResolvesZeroAndMinusOneOverSymbolicSizes) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(1), std::string("seq"), int64_t(64)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.initializers = {ints("shape", {4}, {0, -1, 4, 16})};
  g.nodes = {node("Reshape", {"x", "shape"}, {"y"})};
  std::string src = importOk(g, {{"seq", {8, 16}}});
  EXPECT_NE(src.find("fn forward<seq>(x: f16[1, seq, 64]) -> f32[1, seq, 4, 16]"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("reshape(x, [1, seq, 4, 16])"), std::string::npos) << src;
  EXPECT_NE(src.find("Imported.forward<seq in {8, 16}>"), std::string::npos) << src;
}

TEST(ImporterTest, ShapeArithmeticFoldsAtImport) {
  // y = reshape(x, [S * 2, 32]) with the target computed from Shape(x).
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(1), std::string("S"), int64_t(64)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.initializers = {ints("one", {}, {1}), ints("two", {}, {2}), ints("axes", {1}, {0}),
                    ints("width", {1}, {32})};
  g.nodes = {node("Shape", {"x"}, {"shape"}), node("Gather", {"shape", "one"}, {"s"}),
             node("Mul", {"s", "two"}, {"s2"}), node("Unsqueeze", {"s2", "axes"}, {"s2v"}),
             node("Concat", {"s2v", "width"}, {"target"}),
             node("Reshape", {"x", "target"}, {"y"})};
  g.nodes[4].attributes["axis"] = intAttr(0);
  std::string src = importOk(g, {{"S", {4}}});
  EXPECT_NE(src.find("reshape(x, [2 * S, 32])"), std::string::npos) << src;
  // Nothing but the reshape is computed at run time.
  EXPECT_EQ(src.find("gather"), std::string::npos) << src;
}

TEST(ImporterTest, RuntimeShapeIsADataDependentError) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(4), int64_t(4)}),
              tensorInfo("shape", kOnnxInt64, {int64_t(2)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.nodes = {node("Reshape", {"x", "shape"}, {"y"}, "reshape_it")};
  std::string e = importError(g);
  EXPECT_NE(e.find("reshape_it"), std::string::npos) << e;
  EXPECT_NE(e.find("data-dependent shape"), std::string::npos) << e;
}

TEST(ImporterTest, EveryUnsupportedOperatorIsListedAtOnce) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(4)})};
  g.outputs = {tensorInfo("z", kOnnxFloat, {})};
  g.nodes = {node("Hardmax", {"x"}, {"a"}, "h1"), node("Foo", {"a"}, {"b"}, "f1"),
             node("Hardmax", {"b"}, {"c"}, "h2"), node("NonZero", {"c"}, {"z"}, "nz")};
  std::string e = importError(g);
  EXPECT_NE(e.find("unsupported operator 'Hardmax' (2 nodes: h1, h2)"), std::string::npos) << e;
  EXPECT_NE(e.find("unsupported operator 'Foo' (1 node: f1)"), std::string::npos) << e;
  EXPECT_NE(e.find("operator 'NonZero' (1 node: nz) gives a data-dependent shape"),
            std::string::npos)
      << e;
}

TEST(ImporterTest, GemmBecomesLinearWithItsWeightTransposed) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(2), int64_t(3)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  // ONNX's B is [N, K] = [2, 3] with transB.
  g.initializers = {floats("fc.weight", {2, 3}, {1, 2, 3, 4, 5, 6}),
                    floats("fc.bias", {2}, {0.5f, -0.5f})};
  g.nodes = {node("Gemm", {"x", "fc.weight", "fc.bias"}, {"y"}, "/fc/Gemm")};
  g.nodes[0].attributes["transB"] = intAttr(1);
  ImportResult r;
  std::string src = importOk(g, {}, &r);
  EXPECT_NE(src.find("param fc: nn.Linear<3, 2>"), std::string::npos) << src;
  EXPECT_NE(src.find("import std.nn"), std::string::npos) << src;
  ASSERT_EQ(r.weights.size(), 2u);
  EXPECT_EQ(r.weights[0].first, "fc.w");
  EXPECT_EQ(r.weights[0].second.shape(), llvm::ArrayRef<int64_t>({3, 2}));
  // w[k][n] = B[n][k]
  EXPECT_EQ(r.weights[0].second.toFloats(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(r.weights[1].first, "fc.b");
}

TEST(ImporterTest, MatMulAddBecomesLinearOnlyWithAVectorBias) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(1), std::string("S"), int64_t(2)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.initializers = {floats("onnx::MatMul_7", {2, 2}, {1, 0, 0, 1}),
                    floats("proj.bias", {2}, {1, 1})};
  g.nodes = {node("MatMul", {"x", "onnx::MatMul_7"}, {"m"}, "/proj/MatMul"),
             node("Add", {"proj.bias", "m"}, {"y"}, "/proj/Add")};
  std::string src = importOk(g, {{"S", {3}}});
  EXPECT_NE(src.find("param proj: nn.Linear<2, 2> // onnx::MatMul_7, proj.bias"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("proj(x)"), std::string::npos) << src;

  // A bias of another shape: a plain matmul and an add.
  g.initializers[1] = floats("proj.bias", {1, 1, 2}, {1, 1});
  src = importOk(g, {{"S", {3}}});
  EXPECT_EQ(src.find("nn.Linear"), std::string::npos) << src;
  EXPECT_NE(src.find("x @ "), std::string::npos) << src;
}

TEST(ImporterTest, ErfGeluBecomesTheBuiltIn) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(8)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.initializers = {floats("sqrt2", {}, {1.4142135f}), floats("one", {}, {1.f}),
                    floats("half", {}, {0.5f})};
  g.nodes = {node("Div", {"x", "sqrt2"}, {"d"}), node("Erf", {"d"}, {"e"}),
             node("Add", {"e", "one"}, {"p"}), node("Mul", {"x", "p"}, {"m"}),
             node("Mul", {"m", "half"}, {"y"}, "/Mul_1")};
  std::string src = importOk(g);
  EXPECT_NE(src.find("gelu(x)"), std::string::npos) << src;
  EXPECT_EQ(src.find("erf"), std::string::npos) << src;

  // Another constant: not GELU, and Erf alone is not supported.
  g.initializers[0] = floats("sqrt2", {}, {2.f});
  std::string e = importError(g);
  EXPECT_NE(e.find("unsupported operator 'Erf'"), std::string::npos) << e;
}

TEST(ImporterTest, AttentionWithAnotherScaleIsWrittenOpByOp) {
  // softmax(q k^T / c) v over [1, 2, 4, 8] heads: nn.attention only when
  // c is sqrt(8).
  auto graph = [](float c) {
    OnnxGraph g;
    g.opset = 13;
    for (const char *n : {"q", "k", "v"})
      g.inputs.push_back(
          tensorInfo(n, kOnnxFloat, {int64_t(1), int64_t(2), int64_t(4), int64_t(8)}));
    g.outputs = {tensorInfo("y", kOnnxFloat, {})};
    g.initializers = {floats("c", {}, {c})};
    g.nodes = {node("Transpose", {"k"}, {"kt"}), node("MatMul", {"q", "kt"}, {"s"}),
               node("Div", {"s", "c"}, {"sc"}), node("Softmax", {"sc"}, {"p"}),
               node("MatMul", {"p", "v"}, {"y"}, "/MatMul_1")};
    g.nodes[0].attributes["perm"] = intsAttr({0, 1, 3, 2});
    g.nodes[3].attributes["axis"] = intAttr(-1);
    return g;
  };
  std::string fused = importOk(graph(std::sqrt(8.f)));
  EXPECT_NE(fused.find("nn.attention(q, k, v)"), std::string::npos) << fused;
  std::string plain = importOk(graph(3.f));
  EXPECT_EQ(plain.find("nn.attention"), std::string::npos) << plain;
  EXPECT_NE(plain.find("softmax(f32("), std::string::npos) << plain;
  EXPECT_NE(plain.find("transpose(k, [0, 1, 3, 2])"), std::string::npos) << plain;
}

TEST(ImporterTest, ConvWindowsTheLanguageCannotExpressAreRefused) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(1), int64_t(2), int64_t(8), int64_t(8)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.initializers = {floats("w", {4, 2, 3, 3}, std::vector<float>(72, 0.1f))};
  g.nodes = {node("Conv", {"x", "w"}, {"y"}, "conv0")};
  g.nodes[0].attributes["pads"] = intsAttr({0, 0, 1, 1});
  std::string e = importError(g);
  EXPECT_NE(e.find("conv0"), std::string::npos) << e;
  EXPECT_NE(e.find("pads"), std::string::npos) << e;

  // Symmetric padding and no bias: the built-in with a weight parameter.
  g.nodes[0].attributes["pads"] = intsAttr({1, 1, 1, 1});
  std::string src = importOk(g);
  EXPECT_NE(src.find("conv2d(x, w_w, padding = 1)"), std::string::npos) << src;
}

TEST(ImporterTest, InputsAndBucketsAreChecked) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {std::string("batch"), int64_t(4)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.nodes = {node("Relu", {"x"}, {"y"})};
  EXPECT_NE(importError(g).find("--bucket batch="), std::string::npos);
  EXPECT_NE(importError(g, {{"batch", {1}}, {"seq", {2}}}).find("'seq'"), std::string::npos);
  g.inputs[0].type = kOnnxDouble;
  EXPECT_NE(importError(g, {{"batch", {1}}}).find("dtype double"), std::string::npos);
}

TEST(ImporterTest, SymbolicDimensionsNamedLikeBuiltInsGetSizesOfTheirOwn) {
  // A dimension called "max" cannot be a size named max (a built-in): it
  // becomes max_1, and --bucket still names it by its ONNX name.
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {std::string("max"), std::string("seq.len")})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.nodes = {node("Relu", {"x"}, {"y"})};
  std::string src = importOk(g, {{"max", {2}}, {"seq_len", {4, 8}}});
  EXPECT_NE(src.find("fn forward<max_1, seq_len>(x: f16[max_1, seq_len])"), std::string::npos)
      << src;
  EXPECT_NE(src.find("Imported.forward<max_1 in {2}, seq_len in {4, 8}>"), std::string::npos)
      << src;
}

TEST(ImporterTest, SliceNormalisesNegativeBoundsAndRefusesSteps) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(2), int64_t(10)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.initializers = {ints("starts", {1}, {-4}), ints("ends", {1}, {INT64_MAX}),
                    ints("axes", {1}, {1})};
  g.nodes = {node("Slice", {"x", "starts", "ends", "axes"}, {"y"})};
  std::string src = importOk(g);
  EXPECT_NE(src.find("x[:, 6:10]"), std::string::npos) << src;
  g.initializers.push_back(ints("steps", {1}, {2}));
  g.nodes[0].inputs.push_back("steps");
  EXPECT_NE(importError(g).find("step 2"), std::string::npos);
  // A slice that keeps nothing (the language has no empty dimension) is
  // refused at its node; it was written with a negative size.
  g.initializers = {ints("starts", {1}, {4}), ints("ends", {1}, {2}), ints("axes", {1}, {1})};
  g.nodes = {node("Slice", {"x", "starts", "ends", "axes"}, {"y"}, "empty_slice")};
  std::string e = importError(g);
  EXPECT_NE(e.find("'empty_slice' (Slice): slices axis 1 of 10 from 4 to 2: an empty result"), std::string::npos)
      << e;
}

TEST(ImporterTest, ReduceAxesAreChecked) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(2), int64_t(3), int64_t(5)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.nodes = {node("ReduceMean", {"x"}, {"y"}, "mean_op")};
  g.nodes[0].attributes["axes"] = intsAttr({1, 1, -1});
  std::string e = importError(g);
  EXPECT_NE(e.find("'mean_op' (ReduceMean): reduces axis 1 twice"), std::string::npos) << e;
  g.nodes[0].attributes["axes"] = intsAttr({1, -1});
  EXPECT_NE(importOk(g).find("axis = [1, 2]"), std::string::npos);
}

TEST(ImporterTest, ConstantNodesFeedLiterals) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(3)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.nodes = {node("Constant", {}, {"c"}), node("Mul", {"x", "c"}, {"y"})};
  g.nodes[0].attributes["value"] = tensorAttr(floats("", {}, {-0.25f}));
  std::string src = importOk(g);
  EXPECT_NE(src.find("x * (-0.25)"), std::string::npos) << src;
}

TEST(ImporterTest, MalformedGraphsAreErrorsNotCrashes) {
  // Nodes short of inputs, where the patterns look for a layer norm and an
  // attention (they read inputs by position) and where the handlers do.
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(2), int64_t(4)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.nodes = {node("Div", {"x"}, {"d"}, "lonely_div"), node("Softmax", {"d"}, {"y"})};
  std::string e = importError(g);
  EXPECT_NE(e.find("'lonely_div' (Div): has 1 input, not 2"), std::string::npos) << e;

  g.nodes = {node("Add", {"x", "x", "x"}, {"y"}, "three")};
  EXPECT_NE(importError(g).find("has 3 inputs, not 2"), std::string::npos);

  // A reshape to another element count.
  g.initializers = {ints("shape", {2}, {3, 3})};
  g.nodes = {node("Reshape", {"x", "shape"}, {"y"}, "bad_reshape")};
  e = importError(g);
  EXPECT_NE(e.find("reshapes [2, 4] (8 elements) to [3, 3] (9)"), std::string::npos) << e;

  // A constant too large to build at import.
  g.initializers = {ints("zero", {}, {0}), ints("big", {}, {int64_t(1) << 40}),
                    ints("one", {}, {1})};
  g.nodes = {node("Range", {"zero", "big", "one"}, {"r"}, "huge"),
             node("Relu", {"x"}, {"y"})};
  e = importError(g);
  EXPECT_NE(e.find("'huge' (Range): computes a constant of shape"), std::string::npos) << e;
}

TEST(ImporterTest, IntegerDivTruncates) {
  // ONNX's integer Div truncates; the language's `/` floors.
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("a", kOnnxInt64, {int64_t(4)}), tensorInfo("b", kOnnxInt64, {int64_t(4)})};
  g.outputs = {tensorInfo("y", kOnnxInt64, {})};
  g.nodes = {node("Div", {"a", "b"}, {"y"})};
  std::string src = importOk(g);
  EXPECT_NE(src.find("select(a % b != 0 && (a < 0) != (b < 0), a / b + 1, a / b)"),
            std::string::npos)
      << src;
  g.initializers = {ints("two", {}, {2})};
  g.nodes = {node("Div", {"a", "two"}, {"y"})};
  src = importOk(g);
  EXPECT_NE(src.find("select(a % 2 != 0 && a < 0, a / 2 + 1, a / 2)"), std::string::npos) << src;
  // Floats divide as they are.
  g.inputs = {tensorInfo("a", kOnnxFloat, {int64_t(4)}), tensorInfo("b", kOnnxFloat, {int64_t(4)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.initializers.clear();
  g.nodes = {node("Div", {"a", "b"}, {"y"})};
  src = importOk(g);
  EXPECT_NE(src.find("= a / b "), std::string::npos) << src;
}

TEST(ImporterTest, GatherIndicesCountFromTheEnd) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(2), int64_t(5)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  auto gather = [&](std::vector<int64_t> dims, std::vector<int64_t> ids) {
    g.initializers = {ints("ids", std::move(dims), std::move(ids))};
    g.nodes = {node("Gather", {"x", "ids"}, {"y"}, "pick")};
    g.nodes[0].attributes["axis"] = intAttr(1);
  };
  // A scalar -1 is the last column; a run of negatives is a slice.
  gather({}, {-1});
  EXPECT_NE(importOk(g).find("x[:, 4]"), std::string::npos);
  gather({2}, {-3, -2});
  EXPECT_NE(importOk(g).find("x[:, 2:4]"), std::string::npos);
  // Otherwise a gather by the indices made non-negative at import.
  gather({3}, {-1, 0, -2});
  ImportResult r;
  std::string src = importOk(g, {}, &r);
  EXPECT_NE(src.find("gather(x, ids, axis = 1)"), std::string::npos) << src;
  ASSERT_EQ(r.weights.size(), 1u);
  EXPECT_EQ(r.weights[0].second.getInt(0), 4);
  EXPECT_EQ(r.weights[0].second.getInt(1), 0);
  EXPECT_EQ(r.weights[0].second.getInt(2), 3);
  // Past the axis, either way: an error naming the node.
  gather({}, {5});
  std::string e = importError(g);
  EXPECT_NE(e.find("'pick' (Gather): index 5 is outside axis 1 of [2, 5]"), std::string::npos)
      << e;
  gather({2}, {0, -6});
  EXPECT_NE(importError(g).find("index -6 is outside axis 1 of [2, 5]"), std::string::npos);

  // Run-time indices: wrapped by a select before the gather.
  g.inputs.push_back(tensorInfo("ids", kOnnxInt64, {int64_t(3)}));
  g.initializers.clear();
  g.nodes = {node("Gather", {"x", "ids"}, {"y"}, "pick")};
  g.nodes[0].attributes["axis"] = intAttr(1);
  src = importOk(g);
  EXPECT_NE(src.find("let ids_wrapped = select(ids < 0, ids + 5, ids)"), std::string::npos)
      << src;
  EXPECT_NE(src.find("gather(x, ids_wrapped, axis = 1)"), std::string::npos) << src;
}

TEST(ImporterTest, IdsInRangeLeavesRunTimeIndicesAsTheyAre) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("ids", kOnnxInt64, {int64_t(3)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.initializers = {floats("table", {4, 2}, std::vector<float>(8, 1.f))};
  g.nodes = {node("Gather", {"table", "ids"}, {"y"}, "lookup")};
  EXPECT_NE(importOk(g).find("select(ids < 0, ids + 4, ids)"), std::string::npos);
  ImportOptions options;
  options.idsInRange = true;
  auto r = importOnnx(g, options);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->source.find("select"), std::string::npos) << r->source;
  EXPECT_NE(r->source.find("(ids)"), std::string::npos) << r->source;
}

// A lookup by ids the model takes as an input is written just before
// its first reader, after what the exporter put between them (BERT's
// position embedding); other nodes keep the exporter's order.
TEST(ImporterTest, ALookupByInputIdsIsWrittenNextToItsUse) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("ids", kOnnxInt64, {int64_t(3)}),
              tensorInfo("x", kOnnxFloat, {int64_t(3), int64_t(2)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.initializers = {floats("tok", {4, 2}, std::vector<float>(8, 1.f))};
  g.nodes = {node("Gather", {"tok", "ids"}, {"t"}, "/tok/Gather"),
             node("Relu", {"x"}, {"r"}, "/Relu"), node("Add", {"t", "r"}, {"y"}, "/Add")};
  std::string src = importOk(g);
  const size_t relu = src.find("// /Relu"), wrap = src.find("select(ids < 0, ids + 4, ids)"),
               add = src.find("// /Add");
  ASSERT_NE(relu, std::string::npos) << src;
  ASSERT_NE(wrap, std::string::npos) << src;
  ASSERT_NE(add, std::string::npos) << src;
  EXPECT_LT(relu, wrap) << src;
  EXPECT_LT(wrap, add) << src;
}

TEST(ImporterTest, WindowAttributesAreChecked) {
  // Strides or dilations of 0 (a division by zero in the output's size),
  // a window of 0, negative pads, and windows past the padded input: each
  // an error naming the node.
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(1), int64_t(2), int64_t(5), int64_t(5)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.initializers = {floats("w", {4, 2, 3, 3}, std::vector<float>(72, 0.1f))};
  auto conv = [&](const char *key, std::vector<int64_t> v) {
    g.nodes = {node("Conv", {"x", "w"}, {"y"}, "conv0")};
    g.nodes[0].attributes[key] = intsAttr(std::move(v));
    return importError(g);
  };
  std::string e = conv("strides", {0, 0});
  EXPECT_NE(e.find("'conv0' (Conv): strides [0, 0] holds 0; each must be at least 1"),
            std::string::npos)
      << e;
  e = conv("dilations", {0, 0});
  EXPECT_NE(e.find("'conv0' (Conv): dilations [0, 0] holds 0"), std::string::npos) << e;
  e = conv("pads", {-1, -1, -1, -1});
  EXPECT_NE(e.find("'conv0' (Conv): pads [-1, -1, -1, -1] holds -1"), std::string::npos) << e;
  e = conv("kernel_shape", {2, 2});
  EXPECT_NE(e.find("'conv0' (Conv): kernel_shape [2, 2] differs from the weights' [3, 3]"),
            std::string::npos)
      << e;
  g.nodes = {node("Conv", {"x", "w"}, {"y"}, "conv0")};
  g.nodes[0].attributes["group"] = intAttr(0);
  e = importError(g);
  EXPECT_NE(e.find("'conv0' (Conv): 4 output channels in 0 groups"), std::string::npos) << e;
  // A dilated 3x3 window spans 9 > 5 rows; padding 2 makes room for it.
  e = conv("dilations", {4, 4});
  EXPECT_NE(e.find("'conv0' (Conv): its window (9 x 9) is larger than the input [1, 2, 5, 5] "
                   "padded by 0"),
            std::string::npos)
      << e;
  g.nodes[0].attributes["pads"] = intsAttr({2, 2, 2, 2});
  EXPECT_NE(importOk(g).find("dilation = 4"), std::string::npos);

  g.initializers.clear();
  auto pool = [&](std::vector<int64_t> kernel, std::vector<int64_t> strides) {
    g.nodes = {node("MaxPool", {"x"}, {"y"}, "pool0")};
    g.nodes[0].attributes["kernel_shape"] = intsAttr(std::move(kernel));
    g.nodes[0].attributes["strides"] = intsAttr(std::move(strides));
    return importError(g);
  };
  e = pool({2, 2}, {0, 0});
  EXPECT_NE(e.find("'pool0' (MaxPool): strides [0, 0] holds 0"), std::string::npos) << e;
  e = pool({0, 0}, {1, 1});
  EXPECT_NE(e.find("'pool0' (MaxPool): a window of [0, 0]: sizes must be at least 1"),
            std::string::npos)
      << e;
  e = pool({6, 6}, {1, 1});
  EXPECT_NE(e.find("'pool0' (MaxPool): its window (6 x 6) is larger than the input"),
            std::string::npos)
      << e;
}

TEST(ImporterTest, AxesAndPermutationsAreChecked) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(2), int64_t(1), int64_t(5)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  auto withAxes = [&](const char *op, std::vector<int64_t> axes) {
    g.initializers = {ints("axes", {int64_t(axes.size())}, axes)};
    g.nodes = {node(op, {"x", "axes"}, {"y"}, "shape_op")};
    return importError(g);
  };
  std::string e = withAxes("Unsqueeze", {0, 0});
  EXPECT_NE(e.find("'shape_op' (Unsqueeze): axes [0, 0] name axis 0 of the result twice"),
            std::string::npos)
      << e;
  e = withAxes("Unsqueeze", {0, -5});
  EXPECT_NE(e.find("'shape_op' (Unsqueeze): axes [0, -5] name axis 0 of the result twice"),
            std::string::npos)
      << e;
  e = withAxes("Unsqueeze", {5});
  EXPECT_NE(e.find("'shape_op' (Unsqueeze): axis 5 is outside rank 4"), std::string::npos) << e;
  e = withAxes("Squeeze", {1, -2});
  EXPECT_NE(e.find("'shape_op' (Squeeze): axes [1, -2] name axis 1 twice"), std::string::npos)
      << e;
  e = withAxes("Squeeze", {0});
  EXPECT_NE(e.find("'shape_op' (Squeeze): squeezes axis 0 of [2, 1, 5], whose size is not 1"),
            std::string::npos)
      << e;
  e = withAxes("Squeeze", {3});
  EXPECT_NE(e.find("'shape_op' (Squeeze): axis 3 is outside rank 3"), std::string::npos) << e;

  g.initializers.clear();
  g.nodes = {node("Transpose", {"x"}, {"y"}, "perm_op")};
  g.nodes[0].attributes["perm"] = intsAttr({0, 0, 2});
  e = importError(g);
  EXPECT_NE(e.find("'perm_op' (Transpose): perm [0, 0, 2] is no permutation of the 3 axes"),
            std::string::npos)
      << e;
  g.nodes[0].attributes["perm"] = intsAttr({0, 3, 1});
  EXPECT_NE(importError(g).find("perm [0, 3, 1] is no permutation"), std::string::npos);
  g.nodes[0].attributes["perm"] = intsAttr({2, 0, 1});
  EXPECT_NE(importOk(g).find("transpose(x, [2, 0, 1])"), std::string::npos);
}

TEST(ImporterTest, InputDimensionsArePositive) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(2), int64_t(-3)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.nodes = {node("Relu", {"x"}, {"y"})};
  std::string e = importError(g);
  EXPECT_NE(e.find("input 'x': dimension 1 is -3; a size must be at least 1"), std::string::npos)
      << e;
  g.inputs[0].dims[1].value = 0;
  EXPECT_NE(importError(g).find("dimension 1 is 0"), std::string::npos);
}

TEST(ImporterTest, IntegerConstantsMustFitI32) {
  // int64 becomes i32: a value past it is refused, naming the tensor, not
  // saturated. Constants used only at import (a slice's end) may be any.
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxInt64, {int64_t(2)})};
  g.outputs = {tensorInfo("y", kOnnxInt64, {})};
  g.initializers = {ints("big", {2}, {int64_t(1) << 40, 5})};
  g.nodes = {node("Add", {"x", "big"}, {"y"})};
  std::string e = importError(g);
  EXPECT_NE(e.find("the int64 constant 'big' holds 1099511627776 (element 0), which does not "
                   "fit i32"),
            std::string::npos)
      << e;
  g.initializers = {ints("low", {}, {INT32_MIN - int64_t(1)})};
  g.nodes = {node("Mul", {"x", "low"}, {"y"})};
  EXPECT_NE(importError(g).find("'low' holds -2147483649"), std::string::npos);
  g.initializers = {ints("edge", {2}, {INT32_MIN, INT32_MAX})};
  g.nodes = {node("Add", {"x", "edge"}, {"y"})};
  ImportResult r;
  importOk(g, {}, &r);
  ASSERT_EQ(r.weights.size(), 1u);
  EXPECT_EQ(r.weights[0].second.getInt(0), INT32_MIN);
  EXPECT_EQ(r.weights[0].second.getInt(1), INT32_MAX);
}

} // namespace
} // namespace lpu::import

namespace lpu::import {
namespace {

// ONNX's Max and Min take any number of inputs: one is the input itself,
// three a chain over their broadcast.
TEST(ImporterTest, MaxAndMinOfAnyNumberOfInputs) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("a", kOnnxFloat, {int64_t(2), int64_t(8)}),
              tensorInfo("b", kOnnxFloat, {int64_t(8)}),
              tensorInfo("c", kOnnxFloat, {int64_t(2), int64_t(1)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.nodes = {node("Max", {"a", "b", "c"}, {"m"}), node("Min", {"m", "c", "a"}, {"n"}, "/Min_3"),
             node("Min", {"n"}, {"y"}, "/Min_1")};
  std::string src = importOk(g);
  EXPECT_NE(src.find("maximum(maximum(a, b), c)"), std::string::npos) << src;
  EXPECT_NE(src.find("minimum(minimum(max_1, c), a)"), std::string::npos) << src;
  EXPECT_NE(src.find("return f32(min_3)"), std::string::npos) << src; // Min of one: its input
}

// PyTorch writes nn.AvgPool2d as a Pad before an AveragePool of no
// padding: a Pad of nothing is its input, one of zeros on every side of H
// and W the pool's padding. Any other is refused, naming the node.
TEST(ImporterTest, APadBeforeAnAveragePoolIsItsPadding) {
  OnnxGraph g;
  g.opset = 13;
  g.inputs = {tensorInfo("x", kOnnxFloat, {int64_t(1), int64_t(2), int64_t(4), int64_t(4)})};
  g.outputs = {tensorInfo("y", kOnnxFloat, {})};
  g.initializers = {ints("pads", {8}, {0, 0, 0, 0, 0, 0, 0, 0})};
  OnnxNode pool = node("AveragePool", {"p"}, {"y"}, "/pool/AveragePool");
  pool.attributes["kernel_shape"] = intsAttr({2, 2});
  pool.attributes["strides"] = intsAttr({2, 2});
  g.nodes = {node("Pad", {"x", "pads"}, {"p"}, "/pool/Pad"), pool};
  std::string src = importOk(g);
  EXPECT_NE(src.find("avg_pool2d(x, kernel = 2"), std::string::npos) << src;

  EXPECT_EQ(src.find("padding"), std::string::npos) << src;

  g.initializers = {ints("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1})};
  src = importOk(g);
  EXPECT_NE(src.find("avg_pool2d(x, kernel = 2, padding = 1)"), std::string::npos) << src;

  g.initializers = {ints("pads", {8}, {0, 0, 1, 0, 0, 0, 1, 0})};
  std::string e = importError(g);
  EXPECT_NE(e.find("/pool/Pad"), std::string::npos) << e;
  EXPECT_NE(e.find("not the same on every side of H and W only"), std::string::npos) << e;

  // Padding with another value: as an input, or (before opset 11) the
  // attribute.
  g.initializers = {ints("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1}), floats("five", {}, {5.f})};
  g.nodes[0].inputs.push_back("five");
  e = importError(g);
  EXPECT_NE(e.find("a constant other than 0"), std::string::npos) << e;
  g.nodes[0].inputs.pop_back();
  OnnxAttribute five;
  five.kind = OnnxAttribute::Float;
  five.f = 5.f;
  g.nodes[0].attributes["value"] = five;
  e = importError(g);
  EXPECT_NE(e.find("a constant other than 0"), std::string::npos) << e;
  g.nodes[0].attributes.erase("value");

  g.nodes[1].opType = "MaxPool";
  e = importError(g);
  EXPECT_NE(e.find("'/pool/AveragePool' (MaxPool) reads it"), std::string::npos) << e;
}

} // namespace
} // namespace lpu::import
