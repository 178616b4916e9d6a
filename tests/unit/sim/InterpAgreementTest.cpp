// The reference interpreter and the simulator's VXM give identical bits for
// every IR elementwise op, every dtype the IR allows it on, on tricky inputs
// (NaN with payloads, infinities, -0, subnormals, rounding ties, the largest
// values, integer extremes). Both sides go through their own data paths:
// the interpreter runs an IR function on tensors, the VXM works on byte
// planes decoded from the same tensor bytes.
#include "sim/VectorOps.h"

#include "backend/Isa.h"
#include "support/Tensor.h"
#include "ir/IR.h"
#include "tests/unit/interp/InterpTestSupport.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

namespace lpu {
namespace {

using backend::Opcode;
using ir::OpKind;
using tensor::DType;

constexpr DType kAllTypes[] = {DType::Bool, DType::I8,   DType::I16, DType::I32,
                               DType::F16,  DType::BF16, DType::F32};

/// The tricky values of a dtype, each exactly representable in it.
std::vector<tensor::Tensor> specials(DType t) {
  std::vector<tensor::Tensor> out;
  if (t == DType::Bool) {
    tensor::Tensor x(t, {2});
    x.setInt(0, 0);
    x.setInt(1, 1);
    return {x};
  }
  if (!tensor::isFloat(t)) {
    int64_t lo = t == DType::I8 ? -128 : t == DType::I16 ? -32768 : INT32_MIN;
    int64_t hi = t == DType::I8 ? 127 : t == DType::I16 ? 32767 : INT32_MAX;
    std::vector<int64_t> v = {lo, lo + 1, -100, -7, -3, -2, -1, 0, 1, 2, 3, 5, 7, 31, 100, hi - 1, hi};
    tensor::Tensor x(t, {int64_t(v.size())});
    for (size_t i = 0; i < v.size(); ++i)
      x.setInt(int64_t(i), v[i]);
    return {x};
  }
  float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {
      std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
      std::bit_cast<float>(0x7fc12345u), inf, -inf, 0.0f, -0.0f,
      1.0f, -1.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 3.0f, -7.0f, 0.1f, -0.3f, 2.0f,
      1.0f + 0x1p-11f, 1.0f + 0x1p-8f,          // f16 / bf16 rounding ties
      0x1p-24f, -0x1p-24f, 0x1p-14f, 0x1p-126f, // subnormal and smallest normal
      1e-40f, -1e-40f,                          // f32 subnormals
      65504.0f, -65504.0f, 65519.0f, 60000.0f, 1e5f, 2.0e9f, -3.0e9f, 1e30f, -1e30f,
      3.0e38f, -3.0e38f, 10.0f, -10.0f, 88.0f, -88.0f, 100.0f, -100.0f};
  tensor::Tensor x(t, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    x.setFloat(int64_t(i), v[i]); // rounds to the dtype
  return {x};
}

/// Every pair of specials: a[i * n + j] = s[i], b[i * n + j] = s[j].
std::pair<tensor::Tensor, tensor::Tensor> pairs(DType t) {
  tensor::Tensor s = specials(t)[0];
  int64_t n = s.numElements();
  unsigned w = tensor::dtypeSize(t);
  tensor::Tensor a(t, {n * n}), b(t, {n * n});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (unsigned k = 0; k < w; ++k) {
        a.bytes()[(i * n + j) * w + k] = s.bytes()[i * w + k];
        b.bytes()[(i * n + j) * w + k] = s.bytes()[j * w + k];
      }
  return {a, b};
}

/// A tensor as byte planes (plane b holds byte b of every element) and back.
struct PlaneSet {
  std::vector<std::vector<uint8_t>> planes;
  std::vector<const uint8_t *> in;
  std::vector<uint8_t *> out;
  PlaneSet(unsigned width, size_t lanes) : planes(width, std::vector<uint8_t>(lanes)) {
    for (auto &p : planes) {
      in.push_back(p.data());
      out.push_back(p.data());
    }
  }
  static PlaneSet of(const tensor::Tensor &t) {
    unsigned w = tensor::dtypeSize(t.dtype());
    PlaneSet s(w, size_t(t.numElements()));
    for (int64_t i = 0; i < t.numElements(); ++i)
      for (unsigned b = 0; b < w; ++b)
        s.planes[b][i] = t.bytes()[i * w + b];
    return s;
  }
  tensor::Tensor toTensor(DType t) const {
    tensor::Tensor r(t, {int64_t(planes[0].size())});
    unsigned w = tensor::dtypeSize(t);
    for (size_t i = 0; i < planes[0].size(); ++i)
      for (unsigned b = 0; b < w; ++b)
        r.bytes()[i * w + b] = planes[b][i];
    return r;
  }
};

struct Case {
  Opcode op;
  OpKind kind;
};
/// Every row of support/Elementwise.def with `arity` operands.
std::vector<Case> casesOfArity(unsigned arity) {
  std::vector<Case> out;
  for (const tensor::ElementwiseInfo &info : tensor::elementwiseOps())
    if (info.arity == arity)
      out.push_back({backend::vxmOpcode(info.op), ir::elementwiseKind(info.op)});
  return out;
}
bool irAllows(OpKind kind, std::vector<ir::Type> operands, const ir::Type *declared = nullptr) {
  return std::holds_alternative<ir::Type>(ir::inferType(kind, operands, {}, declared));
}

/// The first differing element, for the failure message.
std::string firstDifference(const tensor::Tensor &got, const tensor::Tensor &want,
                            const tensor::Tensor &a, const tensor::Tensor *b) {
  unsigned w = tensor::dtypeSize(got.dtype());
  for (int64_t i = 0; i < got.numElements(); ++i)
    for (unsigned k = 0; k < w; ++k)
      if (got.bytes()[i * w + k] != want.bytes()[i * w + k])
        return "element " + std::to_string(i) + ": a = " + std::to_string(a.getFloat(i)) +
               (b ? ", b = " + std::to_string(b->getFloat(i)) : std::string()) + ": simulator " +
               std::to_string(got.getFloat(i)) + ", interpreter " + std::to_string(want.getFloat(i));
  return "";
}

TEST(InterpAgreement, UnaryOpsEveryDtype) {
  int checked = 0;
  for (DType t : kAllTypes) {
    tensor::Tensor x = specials(t)[0];
    for (const Case &c : casesOfArity(1)) {
      if (!irAllows(c.kind, {ir::testing::T(t, {x.numElements()})}))
        continue;
      ASSERT_TRUE(backend::dtypeAllowed(c.op, t))
          << backend::opcodeInfo(c.op).mnemonic.str() << " " << tensor::dtypeName(t).str()
          << ": the IR allows it, the VXM does not";
      ir::testing::FnBuilder fb;
      ir::Op *in = fb.input("x", ir::testing::T(t, {x.numElements()}));
      fb.ret({fb.op(c.kind, {in})}, {"y"});
      tensor::Tensor want = ir::testing::runOk(fb.fn(), {{"x", x}}).at("y");

      PlaneSet px = PlaneSet::of(x), py(tensor::dtypeSize(t), size_t(x.numElements()));
      sim::vxmUnary(c.op, t, px.in.data(), py.out.data(), unsigned(x.numElements()));
      tensor::Tensor got = py.toTensor(t);
      EXPECT_EQ(got, want) << backend::opcodeInfo(c.op).mnemonic.str() << " "
                           << tensor::dtypeName(t).str() << ": " << firstDifference(got, want, x, nullptr);
      ++checked;
    }
  }
  EXPECT_GE(checked, 13 * 3); // every float op on f16, bf16, f32 at least
}

TEST(InterpAgreement, BinaryOpsEveryDtype) {
  int checked = 0;
  for (DType t : kAllTypes) {
    auto [a, b] = pairs(t);
    int64_t n = a.numElements();
    for (const Case &c : casesOfArity(2)) {
      if (!irAllows(c.kind, {ir::testing::T(t, {n}), ir::testing::T(t, {n})}))
        continue;
      ASSERT_TRUE(backend::dtypeAllowed(c.op, t))
          << backend::opcodeInfo(c.op).mnemonic.str() << " " << tensor::dtypeName(t).str();
      ir::testing::FnBuilder fb;
      ir::Op *x = fb.input("a", ir::testing::T(t, {n}));
      ir::Op *y = fb.input("b", ir::testing::T(t, {n}));
      fb.ret({fb.op(c.kind, {x, y})}, {"z"});
      tensor::Tensor want = ir::testing::runOk(fb.fn(), {{"a", a}, {"b", b}}).at("z");

      DType rt = want.dtype();
      PlaneSet pa = PlaneSet::of(a), pb = PlaneSet::of(b), pz(tensor::dtypeSize(rt), size_t(n));
      sim::vxmBinary(c.op, t, pa.in.data(), pb.in.data(), pz.out.data(), unsigned(n));
      tensor::Tensor got = pz.toTensor(rt);
      EXPECT_EQ(got, want) << backend::opcodeInfo(c.op).mnemonic.str() << " "
                           << tensor::dtypeName(t).str() << ": " << firstDifference(got, want, a, &b);
      ++checked;
    }
  }
  EXPECT_GE(checked, 14 * 3 + 13 * 3); // floats and ints
}

TEST(InterpAgreement, ConvertIsCvtTruncForEveryPair) {
  int checked = 0;
  for (DType from : kAllTypes)
    for (DType to : kAllTypes) {
      tensor::Tensor x = specials(from)[0];
      ir::Type declared = ir::testing::T(to, {x.numElements()});
      if (!irAllows(OpKind::Convert, {ir::testing::T(from, {x.numElements()})}, &declared))
        continue;
      ir::testing::FnBuilder fb;
      ir::Op *in = fb.input("x", ir::testing::T(from, {x.numElements()}));
      fb.ret({fb.op(OpKind::Convert, {in}, {}, declared)}, {"y"});
      tensor::Tensor want = ir::testing::runOk(fb.fn(), {{"x", x}}).at("y");

      PlaneSet px = PlaneSet::of(x), py(tensor::dtypeSize(to), size_t(x.numElements()));
      sim::vxmConvert(from, to, /*truncate=*/true, px.in.data(), py.out.data(),
                      unsigned(x.numElements()));
      tensor::Tensor got = py.toTensor(to);
      EXPECT_EQ(got, want) << "convert " << tensor::dtypeName(from).str() << " -> "
                           << tensor::dtypeName(to).str() << ": " << firstDifference(got, want, x, nullptr);
      ++checked;
    }
  EXPECT_EQ(checked, 49);
}

TEST(InterpAgreement, SelectEveryDtype) {
  for (DType t : kAllTypes) {
    auto [a, b] = pairs(t);
    int64_t n = a.numElements();
    tensor::Tensor cond(DType::Bool, {n});
    for (int64_t i = 0; i < n; ++i)
      cond.setInt(i, (i * 7 + i / 3) % 2);
    ir::testing::FnBuilder fb;
    ir::Op *c = fb.input("c", ir::testing::T(DType::Bool, {n}));
    ir::Op *x = fb.input("a", ir::testing::T(t, {n}));
    ir::Op *y = fb.input("b", ir::testing::T(t, {n}));
    fb.ret({fb.op(OpKind::Select, {c, x, y})}, {"z"});
    tensor::Tensor want =
        ir::testing::runOk(fb.fn(), {{"c", cond}, {"a", a}, {"b", b}}).at("z");

    PlaneSet pc = PlaneSet::of(cond), pa = PlaneSet::of(a), pb = PlaneSet::of(b),
             pz(tensor::dtypeSize(t), size_t(n));
    sim::vxmSelect(t, pc.in.data(), pa.in.data(), pb.in.data(), pz.out.data(), unsigned(n));
    tensor::Tensor got = pz.toTensor(t);
    EXPECT_EQ(got, want) << "select " << tensor::dtypeName(t).str() << ": "
                         << firstDifference(got, want, a, &b);
  }
}

} // namespace
} // namespace lpu
