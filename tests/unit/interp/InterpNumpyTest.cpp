// Every op class of the reference interpreter against numpy (python3-numpy
// from Debian, run as /usr/bin/python3): the script computes in float32 and
// rounds to the result dtype, as the interpreter's arithmetic is defined.
// Exact arithmetic (add, compare, data movement) must match bit for bit;
// transcendental functions may differ by 1 ulp of the result dtype (libm
// against numpy), accumulations (matmul, conv, reductions) by a few, since
// the order of the fp32 sums differs.
#include "tests/unit/interp/InterpTestSupport.h"

#include <gtest/gtest.h>

namespace lpu::ir {
namespace {

using namespace lpu::interp;

using namespace testing;
using tensor::Tensor;

TEST(InterpNumpy, UnaryF16) {
  struct Case {
    OpKind kind;
    const char *numpy; // in terms of v (float32)
    int ulps;
  };
  const Case cases[] = {
      {OpKind::Neg, "-v", 0},
      {OpKind::Abs, "np.abs(v)", 0},
      {OpKind::Relu, "np.maximum(v, 0)", 0},
      {OpKind::Gelu, "0.5 * v * (1 + np.vectorize(math.erf)(v.astype(np.float64) / math.sqrt(2)))",
       1},
      {OpKind::GeluTanh,
       "0.5 * v * (1 + np.tanh(np.float32(math.sqrt(2 / math.pi)) * (v + np.float32(0.044715) * v "
       "** 3)))",
       1},
      {OpKind::Silu, "v / (1 + np.exp(-v))", 1},
      {OpKind::Sigmoid, "1 / (1 + np.exp(-v))", 1},
      {OpKind::Tanh, "np.tanh(v)", 1},
      {OpKind::Exp, "np.exp(v)", 1},
      // On the positive domain w = |x| + 0.5, computed by the IR too.
      {OpKind::Log, "np.log(w)", 1},
      {OpKind::Sqrt, "np.sqrt(w)", 1},
      {OpKind::Rsqrt, "1 / np.sqrt(w)", 1},
  };
  Tensor x = random(DType::F16, {4, 257}, "x");
  for (const Case &c : cases) {
    FnBuilder b;
    Op *in = b.input("x", T(DType::F16, {4, 257}));
    Op *arg = in;
    bool positive = std::string(c.numpy).find("(w)") != std::string::npos;
    if (positive) {
      Op *half = b.op(OpKind::Constant, {}, {{"value", 0.5}}, T(DType::F16, {4, 257}));
      arg = b.op(OpKind::Add, {b.op(OpKind::Abs, {in}), half});
    }
    b.ret({b.op(c.kind, {arg})}, {"y"});
    auto got = runOk(b.fn(), {{"x", x}});
    auto want =
        numpy({{"x", x}}, std::string("import math\nv = x.astype(np.float32)\n"
                                      "w = (np.abs(x) + np.float16(0.5)).astype(np.float32)\n") +
                              "out['y'] = (" + c.numpy + ").astype(np.float16)\n");
    expectNear(got["y"], want["y"], c.ulps, mnemonic(c.kind).str());
  }
}

TEST(InterpNumpy, BinaryAndCompareF16) {
  Tensor a = random(DType::F16, {3, 100}, "a"), bb = random(DType::F16, {3, 100}, "b");
  struct Case {
    OpKind kind;
    const char *numpy;
    int ulps;
  };
  const Case cases[] = {
      {OpKind::Add, "p + q", 0},
      {OpKind::Sub, "p - q", 0},
      {OpKind::Mul, "p * q", 0},
      {OpKind::Div, "p / q", 0},
      {OpKind::Rem, "np.remainder(p, q)", 0},
      {OpKind::Pow, "np.power(np.abs(p), q)", 1},
      {OpKind::Maximum, "np.maximum(p, q)", 0},
      {OpKind::Minimum, "np.minimum(p, q)", 0},
      {OpKind::Eq, "p == q", 0},
      {OpKind::Ne, "p != q", 0},
      {OpKind::Lt, "p < q", 0},
      {OpKind::Le, "p <= q", 0},
      {OpKind::Gt, "p > q", 0},
      {OpKind::Ge, "p >= q", 0},
  };
  for (const Case &c : cases) {
    FnBuilder b;
    Op *p = b.input("a", T(DType::F16, {3, 100}));
    Op *q = b.input("b", T(DType::F16, {3, 100}));
    if (c.kind == OpKind::Pow)
      p = b.op(OpKind::Abs, {p});
    // Equal operands somewhere, so == and <= see ties.
    if (c.kind >= OpKind::Eq)
      q = b.op(OpKind::Select, {b.op(OpKind::Gt, {p, q}), p, q});
    b.ret({b.op(c.kind, {p, q})}, {"y"});
    auto got = runOk(b.fn(), {{"a", a}, {"b", bb}});
    std::string setup = "p = a.astype(np.float32)\nq = b.astype(np.float32)\n";
    if (c.kind >= OpKind::Eq)
      setup += "q = np.where(p > q, p, q)\n";
    bool isCompare = c.kind >= OpKind::Eq;
    auto want = numpy({{"a", a}, {"b", bb}}, setup + "out['y'] = (" + c.numpy + ")" +
                                                 (isCompare ? "" : ".astype(np.float16)") + "\n");
    expectNear(got["y"], want["y"], c.ulps, mnemonic(c.kind).str());
  }
}

TEST(InterpNumpy, Reductions) {
  Tensor x = random(DType::F16, {3, 4, 50}, "x");
  struct Case {
    OpKind kind;
    std::vector<int64_t> axes;
    bool keep;
    const char *numpy;
  };
  const Case cases[] = {
      {OpKind::ReduceSum, {2}, false, "v.sum(axis=2)"},
      {OpKind::ReduceSum, {0, 2}, true, "v.sum(axis=(0, 2), keepdims=True)"},
      {OpKind::ReduceMean, {1, 2}, false, "v.mean(axis=(1, 2))"},
      {OpKind::ReduceMax, {0}, false, "v.max(axis=0)"},
      {OpKind::ReduceMin, {1}, true, "v.min(axis=1, keepdims=True)"},
  };
  for (const Case &c : cases) {
    FnBuilder b;
    Op *in = b.input("x", T(DType::F16, {3, 4, 50}));
    Op *wide = b.op(OpKind::Convert, {in}, {}, T(DType::F32, {3, 4, 50}));
    b.ret({b.op(c.kind, {in}, {{"axes", c.axes}, {"keep", c.keep}}),
           b.op(c.kind, {wide}, {{"axes", c.axes}, {"keep", c.keep}})},
          {"h", "f"});
    auto got = runOk(b.fn(), {{"x", x}});
    auto want = numpy({{"x", x}}, std::string("v = x.astype(np.float64)\n") + "out['f'] = (" +
                                      c.numpy + ").astype(np.float32)\n" + "out['h'] = (" +
                                      c.numpy + ").astype(np.float16)\n");
    // f32 sums of 200 values in another order: a few ulps of f32.
    expectNear(got["f"], want["f"], 1, mnemonic(c.kind).str() + " f32", 1e-5);
    expectNear(got["h"], want["h"], 1, mnemonic(c.kind).str() + " f16");
  }
  FnBuilder b;
  Op *in = b.input("x", T(DType::F16, {3, 4, 50}));
  b.ret({b.op(OpKind::Argmax, {in}, {{"axis", int64_t(2)}, {"keep", false}}),
         b.op(OpKind::Argmax, {in}, {{"axis", int64_t(0)}, {"keep", true}})},
        {"a2", "a0"});
  auto got = runOk(b.fn(), {{"x", x}});
  auto want = numpy({{"x", x}}, "out['a2'] = x.argmax(axis=2).astype(np.int32)\n"
                                "out['a0'] = x.argmax(axis=0)[None].astype(np.int32)\n");
  expectNear(got["a2"], want["a2"], 0, "argmax axis 2");
  expectNear(got["a0"], want["a0"], 0, "argmax axis 0");
}

TEST(InterpNumpy, Softmax) {
  Tensor x = random(DType::F32, {2, 5, 33}, "x");
  FnBuilder b;
  Op *in = b.input("x", T(DType::F32, {2, 5, 33}));
  Op *scaled = b.op(OpKind::Mul,
                    {in, b.op(OpKind::Constant, {}, {{"value", 8.0}}, T(DType::F32, {2, 5, 33}))});
  Op *last = b.op(OpKind::Softmax, {scaled}, {{"axis", int64_t(2)}});
  Op *middle = b.op(OpKind::Softmax, {scaled}, {{"axis", int64_t(1)}});
  Op *half = b.op(OpKind::Softmax, {b.op(OpKind::Convert, {scaled}, {}, T(DType::F16, {2, 5, 33}))},
                  {{"axis", int64_t(2)}});
  b.ret({last, middle, half}, {"last", "middle", "half"});
  auto got = runOk(b.fn(), {{"x", x}});
  auto want = numpy({{"x", x}}, R"PY(
def softmax(v, axis):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
v = x.astype(np.float64) * 8
out['last'] = softmax(v, 2).astype(np.float32)
out['middle'] = softmax(v, 1).astype(np.float32)
out['half'] = softmax((x * np.float32(8)).astype(np.float16).astype(np.float64), 2).astype(np.float16)
)PY");
  expectNear(got["last"], want["last"], 1, "softmax axis 2", 1e-6);
  expectNear(got["middle"], want["middle"], 1, "softmax axis 1", 1e-6);
  expectNear(got["half"], want["half"], 1, "softmax f16");
}

TEST(InterpNumpy, DataMovement) {
  Tensor x = random(DType::F16, {2, 3, 4, 5}, "x");
  Tensor row = random(DType::F16, {3, 1, 5}, "row");
  Tensor ids = Tensor(DType::I32, {2, 3});
  const int32_t idValues[] = {3, 0, 2, 2, 1, 3};
  for (int k = 0; k < 6; ++k)
    ids.setInt(k, idValues[k]);
  FnBuilder b;
  Op *in = b.input("x", T(DType::F16, {2, 3, 4, 5}));
  Op *r = b.input("row", T(DType::F16, {3, 1, 5}));
  Op *i = b.input("ids", T(DType::I32, {2, 3}));
  Op *tr = b.op(OpKind::Transpose, {in}, {{"perm", std::vector<int64_t>{2, 0, 3, 1}}});
  Op *tr2 = b.op(OpKind::Transpose, {in}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  Op *bc = b.op(OpKind::Broadcast, {r}, {}, T(DType::F16, {2, 3, 4, 5}));
  Op *sl = b.op(
      OpKind::Slice, {in},
      {{"start", std::vector<int64_t>{1, 0, 1, 2}}, {"limit", std::vector<int64_t>{2, 3, 4, 5}}});
  Op *cc = b.op(OpKind::Concat, {in, bc, in}, {{"axis", int64_t(2)}});
  Op *g0 = b.op(OpKind::Gather, {b.op(OpKind::Reshape, {in}, {}, T(DType::F16, {6, 4, 5})), i},
                {{"axis", int64_t(1)}});
  Op *rs = b.op(OpKind::Reshape, {tr}, {}, T(DType::F16, {20, 6}));
  b.ret({tr, tr2, bc, sl, cc, g0, rs}, {"tr", "tr2", "bc", "sl", "cc", "g", "rs"});
  auto got = runOk(b.fn(), {{"x", x}, {"row", row}, {"ids", ids}});
  auto want = numpy({{"x", x}, {"row", row}, {"ids", ids}}, R"PY(
out['tr'] = x.transpose(2, 0, 3, 1)
out['tr2'] = x.transpose(0, 1, 3, 2)
out['bc'] = np.broadcast_to(row, (2, 3, 4, 5))
out['sl'] = x[1:2, 0:3, 1:4, 2:5]
out['cc'] = np.concatenate([x, out['bc'], x], axis=2)
out['g'] = np.take(x.reshape(6, 4, 5), ids, axis=1)
out['rs'] = x.transpose(2, 0, 3, 1).reshape(20, 6)
)PY");
  for (const char *name : {"tr", "tr2", "bc", "sl", "cc", "g", "rs"})
    expectNear(got[name], want[name], 0, name);
}

TEST(InterpNumpy, Matmul) {
  Tensor a = random(DType::F16, {2, 3, 7, 40}, "a"), w = random(DType::F16, {2, 3, 40, 9}, "w");
  Tensor x = random(DType::F16, {130, 64}, "x"), v = random(DType::F16, {64, 70}, "v");
  FnBuilder b;
  Op *pa = b.input("a", T(DType::F16, {2, 3, 7, 40}));
  Op *pw = b.input("w", T(DType::F16, {2, 3, 40, 9}));
  Op *px = b.input("x", T(DType::F16, {130, 64}));
  Op *pv = b.param("v", T(DType::F16, {64, 70}));
  Op *wide = b.op(OpKind::Matmul, {b.op(OpKind::Convert, {px}, {}, T(DType::F32, {130, 64})),
                                   b.op(OpKind::Convert, {pv}, {}, T(DType::F32, {64, 70}))});
  b.ret({b.op(OpKind::Matmul, {pa, pw}), b.op(OpKind::Matmul, {px, pv}), wide},
        {"batched", "plain", "wide"});
  auto got = runOk(b.fn(), {{"a", a}, {"w", w}, {"x", x}}, {{"v", v}});
  auto want = numpy({{"a", a}, {"w", w}, {"x", x}, {"v", v}}, R"PY(
f = lambda t: t.astype(np.float64)
out['batched'] = (f(a) @ f(w)).astype(np.float16)
out['plain'] = (f(x) @ f(v)).astype(np.float16)
out['wide'] = (f(x) @ f(v)).astype(np.float32)
)PY");
  // fp32 accumulation in sgemm's order against exact float64 sums: the f16
  // results may sit on the other side of a rounding boundary (1 ulp).
  expectNear(got["batched"], want["batched"], 1, "batched matmul");
  expectNear(got["plain"], want["plain"], 1, "matmul");
  expectNear(got["wide"], want["wide"], 1, "f32 matmul", 1e-5);
}

TEST(InterpNumpy, ConvolutionAndPooling) {
  Tensor x = random(DType::F16, {2, 4, 11, 9}, "x"), w = random(DType::F16, {6, 2, 3, 3}, "w");
  FnBuilder b;
  Op *px = b.input("x", T(DType::F16, {2, 4, 11, 9}));
  Op *pw = b.param("w", T(DType::F16, {6, 2, 3, 3}));
  Op *conv = b.op(OpKind::Conv2d, {px, pw},
                  {{"stride", std::vector<int64_t>{2, 1}},
                   {"padding", std::vector<int64_t>{1, 2}},
                   {"dilation", std::vector<int64_t>{1, 2}},
                   {"groups", int64_t(2)}});
  Op *maxp = b.op(OpKind::MaxPool2d, {px},
                  {{"kernel", std::vector<int64_t>{3, 3}},
                   {"stride", std::vector<int64_t>{2, 2}},
                   {"padding", std::vector<int64_t>{1, 1}}});
  Op *avgp = b.op(OpKind::AvgPool2d, {px},
                  {{"kernel", std::vector<int64_t>{2, 3}},
                   {"stride", std::vector<int64_t>{2, 3}},
                   {"padding", std::vector<int64_t>{1, 0}}});
  b.ret({conv, maxp, avgp}, {"conv", "maxp", "avgp"});
  auto got = runOk(b.fn(), {{"x", x}}, {{"w", w}});
  // torch (python3-torch) as the independent convolution.
  auto want = numpy({{"x", x}, {"w", w}}, R"PY(
import torch
import torch.nn.functional as F
tx = torch.from_numpy(x.astype(np.float64))
tw = torch.from_numpy(w.astype(np.float64))
out['conv'] = F.conv2d(tx, tw, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2).numpy().astype(np.float16)
out['maxp'] = F.max_pool2d(tx, 3, stride=2, padding=1).numpy().astype(np.float16)
out['avgp'] = F.avg_pool2d(tx, (2, 3), stride=(2, 3), padding=(1, 0), count_include_pad=True).numpy().astype(np.float16)
)PY");
  expectNear(got["conv"], want["conv"], 1, "conv2d");
  expectNear(got["maxp"], want["maxp"], 0, "max_pool2d");
  expectNear(got["avgp"], want["avgp"], 1, "avg_pool2d");
}

TEST(InterpNumpy, Conversions) {
  std::vector<float> values;
  for (int k = 0; k < 400; ++k)
    values.push_back((k - 200) * 0.37f + (k % 7) * 1e-3f);
  values.insert(values.end(), {65519.0f, 65520.0f, 1e6f, -1e6f, 3e9f, -3e9f, 0.0f, -0.0f});
  int64_t n = static_cast<int64_t>(values.size());
  Tensor x = Tensor::fromFloats(DType::F32, {n}, values);
  FnBuilder b;
  Op *in = b.input("x", T(DType::F32, {n}));
  b.ret({b.op(OpKind::Convert, {in}, {}, T(DType::F16, {n})),
         b.op(OpKind::Convert, {in}, {}, T(DType::I32, {n})),
         b.op(OpKind::Convert, {in}, {}, T(DType::Bool, {n})),
         b.op(OpKind::Convert, {b.op(OpKind::Convert, {in}, {}, T(DType::F16, {n}))}, {},
              T(DType::I8, {n}))},
        {"h", "i", "z", "c"});
  auto got = runOk(b.fn(), {{"x", x}});
  auto want = numpy({{"x", x}}, R"PY(
out['h'] = x.astype(np.float16)
t = np.trunc(x.astype(np.float64))
out['i'] = np.clip(t, -2**31, 2**31 - 1).astype(np.int32)
out['z'] = x != 0
h = np.trunc(x.astype(np.float16).astype(np.float64))
out['c'] = np.where(np.isfinite(h), np.clip(h, -128, 127), np.where(h > 0, 127, -128)).astype(np.int8)
)PY");
  expectNear(got["h"], want["h"], 0, "f32 -> f16");
  expectNear(got["i"], want["i"], 0, "f32 -> i32");
  expectNear(got["z"], want["z"], 0, "f32 -> bool");
  expectNear(got["c"], want["c"], 0, "f16 -> i8");
}

} // namespace
} // namespace lpu::ir
