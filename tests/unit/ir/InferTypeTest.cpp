// inferType: the type rules of every op class, accepted and rejected.
#include "ir/IR.h"

#include <gtest/gtest.h>

using namespace lpu::ir;

namespace {

using Attrs = std::vector<std::pair<std::string, Attr>>;
using Ints = std::vector<int64_t>;

Type T(DType d, std::vector<int64_t> shape) { return Type{d, std::move(shape)}; }
Type f32(std::vector<int64_t> shape) { return T(DType::F32, std::move(shape)); }
Type f16(std::vector<int64_t> shape) { return T(DType::F16, std::move(shape)); }
Type i32(std::vector<int64_t> shape) { return T(DType::I32, std::move(shape)); }
Type boolean(std::vector<int64_t> shape) { return T(DType::Bool, std::move(shape)); }

Type ok(OpKind kind, std::vector<Type> in, const Attrs &attrs = {}, const Type *declared = nullptr) {
  auto r = inferType(kind, in, attrs, declared);
  if (auto *e = std::get_if<std::string>(&r)) {
    ADD_FAILURE() << mnemonic(kind).str() << " rejected: " << *e;
    return Type{};
  }
  return std::get<Type>(r);
}

std::string bad(OpKind kind, std::vector<Type> in, const Attrs &attrs = {},
                const Type *declared = nullptr) {
  auto r = inferType(kind, in, attrs, declared);
  if (auto *t = std::get_if<Type>(&r)) {
    ADD_FAILURE() << mnemonic(kind).str() << " accepted, giving " << t->str();
    return "";
  }
  return std::get<std::string>(r);
}

TEST(InferLeaf, TakesDeclared) {
  Type t = f16({2, 3});
  EXPECT_EQ(ok(OpKind::Input, {}, {{"name", std::string("x")}}, &t), t);
  EXPECT_EQ(ok(OpKind::Param, {}, {}, &t), t);
  EXPECT_EQ(ok(OpKind::Constant, {}, {{"value", 1.0}}, &t), t);
  EXPECT_EQ(ok(OpKind::Iota, {}, {{"axis", int64_t(1)}}, &t), t);
  Type it = i32({4});
  EXPECT_EQ(ok(OpKind::Iota, {}, {{"axis", int64_t(0)}}, &it), it);
  EXPECT_NE(bad(OpKind::Input, {}), "");
  EXPECT_NE(bad(OpKind::Iota, {}, {{"axis", int64_t(2)}}, &t).find("out of range"),
            std::string::npos);
  Type b = boolean({4});
  EXPECT_NE(bad(OpKind::Iota, {}, {{"axis", int64_t(0)}}, &b), "");
  EXPECT_NE(bad(OpKind::Iota, {}, {}, &it).find("missing attribute 'axis'"), std::string::npos);
  Type neg = f32({-1});
  EXPECT_NE(bad(OpKind::Input, {}, {}, &neg).find("negative"), std::string::npos);
}

TEST(InferElementwise, Accepts) {
  EXPECT_EQ(ok(OpKind::Add, {f16({2, 3}), f16({2, 3})}), f16({2, 3}));
  EXPECT_EQ(ok(OpKind::Rem, {i32({4}), i32({4})}), i32({4}));
  EXPECT_EQ(ok(OpKind::Lt, {f32({4}), f32({4})}), boolean({4}));
  EXPECT_EQ(ok(OpKind::Eq, {boolean({4}), boolean({4})}), boolean({4}));
  EXPECT_EQ(ok(OpKind::And, {boolean({}), boolean({})}), boolean({}));
  EXPECT_EQ(ok(OpKind::Not, {boolean({5})}), boolean({5}));
  EXPECT_EQ(ok(OpKind::Neg, {i32({5})}), i32({5}));
  EXPECT_EQ(ok(OpKind::Gelu, {T(DType::BF16, {5})}), T(DType::BF16, {5}));
  EXPECT_EQ(ok(OpKind::Select, {boolean({2}), f16({2}), f16({2})}), f16({2}));
  Type to = i32({2, 2});
  EXPECT_EQ(ok(OpKind::Convert, {f32({2, 2})}, {}, &to), to);
}

TEST(InferElementwise, Rejects) {
  EXPECT_EQ(bad(OpKind::Add, {f16({2, 3}), f16({3, 2})}),
            "add: operand shapes differ: [2, 3] and [3, 2]");
  EXPECT_EQ(bad(OpKind::Mul, {f16({2}), f32({2})}), "mul: operand dtypes differ: f16 and f32");
  EXPECT_NE(bad(OpKind::Add, {boolean({2}), boolean({2})}), "");
  EXPECT_NE(bad(OpKind::Exp, {i32({2})}), "");
  EXPECT_NE(bad(OpKind::Not, {f32({2})}), "");
  EXPECT_NE(bad(OpKind::And, {i32({2}), i32({2})}), "");
  EXPECT_NE(bad(OpKind::Lt, {boolean({2}), boolean({2})}), "");
  EXPECT_NE(bad(OpKind::Select, {f32({2}), f16({2}), f16({2})}).find("condition"),
            std::string::npos);
  EXPECT_NE(bad(OpKind::Select, {boolean({2}), f16({2}), f32({2})}), "");
  EXPECT_NE(bad(OpKind::Select, {boolean({3}), f16({2}), f16({2})}), "");
  EXPECT_EQ(bad(OpKind::Add, {f32({2})}), "add: expected 2 operands, got 1");
  Type to = i32({4});
  EXPECT_NE(bad(OpKind::Convert, {f32({2, 2})}, {}, &to), "");
  EXPECT_NE(bad(OpKind::Convert, {f32({2, 2})}), "");
}

TEST(InferReduce, Accepts) {
  Attrs a{{"axes", Ints{0, 2}}, {"keep", false}};
  EXPECT_EQ(ok(OpKind::ReduceSum, {f16({2, 3, 4})}, a), f16({3}));
  a[1].second = true;
  EXPECT_EQ(ok(OpKind::ReduceMax, {f16({2, 3, 4})}, a), f16({1, 3, 1}));
  EXPECT_EQ(ok(OpKind::ReduceMin, {i32({2, 3})}, {{"axes", Ints{1}}}), i32({2})); // keep defaults to false
  EXPECT_EQ(ok(OpKind::ReduceMean, {f32({2, 3})}, {{"axes", Ints{}}}), f32({2, 3}));
  EXPECT_EQ(ok(OpKind::Argmax, {f32({2, 3})}, {{"axis", int64_t(1)}}), i32({2}));
  EXPECT_EQ(ok(OpKind::Argmax, {f16({2, 3})}, {{"axis", int64_t(0)}, {"keep", true}}),
            i32({1, 3}));
  EXPECT_EQ(ok(OpKind::Softmax, {f16({2, 3})}, {{"axis", int64_t(1)}}), f16({2, 3}));
}

TEST(InferReduce, Rejects) {
  EXPECT_NE(bad(OpKind::ReduceSum, {f32({2, 3})}, {{"axes", Ints{1, 0}}}).find("sorted"),
            std::string::npos);
  EXPECT_NE(bad(OpKind::ReduceSum, {f32({2, 3})}, {{"axes", Ints{1, 1}}}), "");
  EXPECT_NE(bad(OpKind::ReduceSum, {f32({2, 3})}, {{"axes", Ints{-1}}}).find("out of range"),
            std::string::npos);
  EXPECT_NE(bad(OpKind::ReduceSum, {f32({2, 3})}, {{"axes", Ints{2}}}), "");
  EXPECT_NE(bad(OpKind::ReduceSum, {f32({2, 3})}, {}).find("missing attribute 'axes'"),
            std::string::npos);
  EXPECT_NE(bad(OpKind::ReduceSum, {f32({2, 3})}, {{"axes", int64_t(1)}}), "");
  EXPECT_NE(bad(OpKind::ReduceSum, {f32({2, 3})}, {{"axes", Ints{1}}, {"keep", int64_t(1)}}), "");
  EXPECT_NE(bad(OpKind::ReduceMean, {i32({2, 3})}, {{"axes", Ints{1}}}), "");
  EXPECT_NE(bad(OpKind::ReduceSum, {boolean({2, 3})}, {{"axes", Ints{1}}}), "");
  EXPECT_NE(bad(OpKind::Argmax, {f32({2, 3})}, {{"axis", int64_t(2)}}), "");
  EXPECT_NE(bad(OpKind::Softmax, {i32({2, 3})}, {{"axis", int64_t(1)}}), "");
  EXPECT_NE(bad(OpKind::Softmax, {f32({2, 3})}, {}), "");
}

TEST(InferLayout, ReshapeBroadcastTranspose) {
  Type r = f16({6, 4});
  EXPECT_EQ(ok(OpKind::Reshape, {f16({2, 3, 4})}, {}, &r), r);
  Type r2 = f16({5, 5});
  EXPECT_NE(bad(OpKind::Reshape, {f16({2, 3, 4})}, {}, &r2).find("element counts differ"),
            std::string::npos);
  Type r3 = f32({6, 4});
  EXPECT_NE(bad(OpKind::Reshape, {f16({2, 3, 4})}, {}, &r3), "");

  Type b = f32({4, 2, 3});
  EXPECT_EQ(ok(OpKind::Broadcast, {f32({2, 1})}, {}, &b), b);
  EXPECT_EQ(ok(OpKind::Broadcast, {f32({3})}, {}, &b), b);
  EXPECT_EQ(ok(OpKind::Broadcast, {f32({})}, {}, &b), b);
  EXPECT_NE(bad(OpKind::Broadcast, {f32({2, 2})}, {}, &b), "");   // 2 -> 3
  EXPECT_NE(bad(OpKind::Broadcast, {f32({3, 1})}, {}, &b), "");   // leading 3 vs 2
  Type small = f32({3});
  EXPECT_NE(bad(OpKind::Broadcast, {f32({2, 3})}, {}, &small), ""); // rank drops
  EXPECT_NE(bad(OpKind::Broadcast, {f32({3})}), "");

  EXPECT_EQ(ok(OpKind::Transpose, {f32({2, 3, 4})}, {{"perm", Ints{2, 0, 1}}}), f32({4, 2, 3}));
  EXPECT_NE(bad(OpKind::Transpose, {f32({2, 3, 4})}, {{"perm", Ints{0, 0, 1}}}), "");
  EXPECT_NE(bad(OpKind::Transpose, {f32({2, 3, 4})}, {{"perm", Ints{0, 1}}}), "");
  EXPECT_NE(bad(OpKind::Transpose, {f32({2, 3, 4})}, {{"perm", Ints{0, 1, 3}}}), "");
}

TEST(InferLayout, SliceConcatGather) {
  Attrs s{{"start", Ints{1, 0}}, {"limit", Ints{3, 4}}};
  EXPECT_EQ(ok(OpKind::Slice, {f32({5, 4})}, s), f32({2, 4}));
  EXPECT_EQ(ok(OpKind::Slice, {f32({5, 4})}, {{"start", Ints{2, 2}}, {"limit", Ints{2, 2}}}),
            f32({0, 0}));
  EXPECT_NE(bad(OpKind::Slice, {f32({5, 4})}, {{"start", Ints{1, 0}}, {"limit", Ints{6, 4}}}), "");
  EXPECT_NE(bad(OpKind::Slice, {f32({5, 4})}, {{"start", Ints{3, 0}}, {"limit", Ints{2, 4}}}), "");
  EXPECT_NE(bad(OpKind::Slice, {f32({5, 4})}, {{"start", Ints{-1, 0}}, {"limit", Ints{2, 4}}}), "");
  EXPECT_NE(bad(OpKind::Slice, {f32({5, 4})}, {{"start", Ints{1}}, {"limit", Ints{2}}}), "");
  Attrs stepped = s;
  stepped.push_back({"step", Ints{1, 1}});
  EXPECT_NE(bad(OpKind::Slice, {f32({5, 4})}, stepped).find("step"), std::string::npos);

  Attrs c{{"axis", int64_t(1)}};
  EXPECT_EQ(ok(OpKind::Concat, {f16({2, 3}), f16({2, 5}), f16({2, 1})}, c), f16({2, 9}));
  EXPECT_EQ(ok(OpKind::Concat, {f16({2, 3})}, c), f16({2, 3}));
  EXPECT_NE(bad(OpKind::Concat, {f16({2, 3}), f16({3, 3})}, c), "");
  EXPECT_NE(bad(OpKind::Concat, {f16({2, 3}), f32({2, 3})}, c), "");
  EXPECT_NE(bad(OpKind::Concat, {f16({2, 3}), f16({2, 3, 1})}, c), "");
  EXPECT_NE(bad(OpKind::Concat, {}, c), "");
  EXPECT_NE(bad(OpKind::Concat, {f16({2, 3})}, {{"axis", int64_t(2)}}), "");

  // NumPy take: table[..axis] + ids.shape + table[axis+1..].
  EXPECT_EQ(ok(OpKind::Gather, {f16({100, 64}), i32({2, 7})}, {{"axis", int64_t(0)}}),
            f16({2, 7, 64}));
  EXPECT_EQ(ok(OpKind::Gather, {f16({3, 100, 64}), i32({5})}, {{"axis", int64_t(1)}}),
            f16({3, 5, 64}));
  EXPECT_EQ(ok(OpKind::Gather, {f16({100, 64}), i32({})}, {{"axis", int64_t(0)}}), f16({64}));
  EXPECT_NE(bad(OpKind::Gather, {f16({100, 64}), f32({5})}, {{"axis", int64_t(0)}}), "");
  EXPECT_NE(bad(OpKind::Gather, {f16({100, 64}), i32({5})}, {{"axis", int64_t(2)}}), "");
}

TEST(InferContract, Matmul) {
  EXPECT_EQ(ok(OpKind::Matmul, {f16({1, 128, 768}), f16({1, 768, 512})}), f16({1, 128, 512}));
  EXPECT_EQ(ok(OpKind::Matmul, {i32({3, 4}), i32({4, 5})}), i32({3, 5}));
  // i8 x i8 sums in i32 (the MXM's int8 mode) and keeps them.
  EXPECT_EQ(ok(OpKind::Matmul, {T(DType::I8, {3, 4}), T(DType::I8, {4, 5})}), i32({3, 5}));
  EXPECT_EQ(bad(OpKind::Matmul, {f16({128, 768}), f16({512, 64})}),
            "matmul: contracting dimensions differ: 768 and 512");
  EXPECT_NE(bad(OpKind::Matmul, {f16({2, 3, 4}), f16({3, 4, 5})}).find("batch"),
            std::string::npos);
  EXPECT_NE(bad(OpKind::Matmul, {f16({4}), f16({4, 5})}), "");
  EXPECT_NE(bad(OpKind::Matmul, {f16({3, 4}), f32({4, 5})}), "");
  EXPECT_NE(bad(OpKind::Matmul, {f16({2, 3, 4}), f16({4, 5})}), "");
}

TEST(InferContract, Conv2dAndPools) {
  Attrs conv{{"stride", Ints{2, 2}}, {"padding", Ints{3, 3}}, {"dilation", Ints{1, 1}},
             {"groups", int64_t(1)}};
  // ResNet's stem: 224 -> 112.
  EXPECT_EQ(ok(OpKind::Conv2d, {f32({1, 3, 224, 224}), f32({64, 3, 7, 7})}, conv),
            f32({1, 64, 112, 112}));
  // floor((10 + 0 - 2*(3-1) - 1)/1) + 1 = 6 rows, floor((9 - 2 - 1)/3) + 1 = 3 columns.
  Attrs dil{{"stride", Ints{1, 3}}, {"padding", Ints{0, 0}}, {"dilation", Ints{2, 1}},
            {"groups", int64_t(2)}};
  EXPECT_EQ(ok(OpKind::Conv2d, {f16({2, 4, 10, 9}), f16({6, 2, 3, 3})}, dil), f16({2, 6, 6, 3}));
  EXPECT_NE(bad(OpKind::Conv2d, {f16({2, 4, 10, 9}), f16({6, 4, 3, 3})}, dil), "");
  Attrs g3 = dil;
  g3[3].second = int64_t(3);
  EXPECT_NE(bad(OpKind::Conv2d, {f16({2, 4, 10, 9}), f16({6, 2, 3, 3})}, g3), "");
  EXPECT_NE(bad(OpKind::Conv2d, {f16({2, 4, 10}), f16({6, 2, 3, 3})}, dil), "");
  Attrs nopad = conv;
  nopad[1].second = Ints{0, 0};
  EXPECT_NE(bad(OpKind::Conv2d, {f16({1, 3, 2, 2}), f16({4, 3, 3, 3})}, nopad).find("larger"),
            std::string::npos);
  Attrs missing{{"stride", Ints{1, 1}}, {"padding", Ints{0, 0}}};
  EXPECT_NE(bad(OpKind::Conv2d, {f16({1, 3, 5, 5}), f16({4, 3, 3, 3})}, missing).find("dilation"),
            std::string::npos);
  Attrs zeroStride = conv;
  zeroStride[0].second = Ints{0, 1};
  EXPECT_NE(bad(OpKind::Conv2d, {f32({1, 3, 224, 224}), f32({64, 3, 7, 7})}, zeroStride), "");

  Attrs huge = conv;
  huge[1].second = Ints{int64_t(1) << 62, 0};
  EXPECT_NE(bad(OpKind::Conv2d, {f32({1, 3, 224, 224}), f32({64, 3, 7, 7})}, huge).find("too large"),
            std::string::npos);

  Attrs pool{{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1}}};
  EXPECT_EQ(ok(OpKind::MaxPool2d, {f32({1, 64, 112, 112})}, pool), f32({1, 64, 56, 56}));
  EXPECT_EQ(ok(OpKind::AvgPool2d, {f16({1, 8, 7, 7})},
               {{"kernel", Ints{7, 7}}, {"stride", Ints{1, 1}}, {"padding", Ints{0, 0}}}),
            f16({1, 8, 1, 1}));
  EXPECT_NE(bad(OpKind::MaxPool2d, {f32({1, 64, 112, 112})},
                {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{2, 2}}}),
            "");
  EXPECT_NE(bad(OpKind::AvgPool2d, {f32({1, 64, 112, 112})}, {{"kernel", Ints{3}}}), "");
  EXPECT_NE(bad(OpKind::AvgPool2d, {i32({1, 64, 112, 112})}, pool), "");
}

TEST(InferTerminator, Return) {
  EXPECT_EQ(ok(OpKind::Return, {f32({2}), i32({})},
               {{"names", std::vector<std::string>{"a", "b"}}}),
            Type{});
  EXPECT_EQ(ok(OpKind::Return, {}, {{"names", Ints{}}}), Type{});
  EXPECT_NE(bad(OpKind::Return, {f32({2})}, {{"names", std::vector<std::string>{"a", "b"}}}), "");
  EXPECT_NE(bad(OpKind::Return, {f32({2})}), "");
}

} // namespace
