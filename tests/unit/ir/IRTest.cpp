// The op table, types, attributes and function editing.
#include "ir/IR.h"

#include <gtest/gtest.h>

using namespace lpu::ir;

namespace {

Type f32(std::vector<int64_t> shape) { return Type{DType::F32, std::move(shape)}; }

struct TableRow {
  OpKind kind;
  const char *mnemonic;
  OpClass cls;
  int operands;
};

constexpr TableRow kTable[] = {
#define LPU_OP(Enum, Mnemonic, Class, Operands) {OpKind::Enum, Mnemonic, OpClass::Class, Operands},
#include "ir/Ops.def"
};

TEST(OpTable, MnemonicsRoundTripAndAreUnique) {
  std::vector<std::string> seen;
  for (const TableRow &row : kTable) {
    EXPECT_EQ(mnemonic(row.kind), row.mnemonic);
    EXPECT_EQ(parseMnemonic(row.mnemonic), row.kind);
    EXPECT_EQ(opClass(row.kind), row.cls);
    EXPECT_EQ(operandCount(row.kind), row.operands);
    seen.push_back(row.mnemonic);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
  EXPECT_FALSE(parseMnemonic("Add"));
  EXPECT_FALSE(parseMnemonic(""));
  EXPECT_FALSE(parseMnemonic("addx"));
}

TEST(OpTable, ElementwiseIsUnaryBinaryTernary) {
  EXPECT_TRUE(isElementwise(OpKind::Add));
  EXPECT_TRUE(isElementwise(OpKind::Gelu));
  EXPECT_TRUE(isElementwise(OpKind::Select));
  EXPECT_TRUE(isElementwise(OpKind::Convert));
  EXPECT_FALSE(isElementwise(OpKind::Matmul));
  EXPECT_FALSE(isElementwise(OpKind::ReduceSum));
  EXPECT_FALSE(isElementwise(OpKind::Reshape));
  EXPECT_FALSE(isElementwise(OpKind::Constant));
  EXPECT_FALSE(isElementwise(OpKind::Return));
}

TEST(TypeTest, StrSizes) {
  Type t{DType::F16, {1, 128, 768}};
  EXPECT_EQ(t.str(), "f16[1, 128, 768]");
  EXPECT_EQ(t.numElements(), 1 * 128 * 768);
  EXPECT_EQ(t.byteSize(), 2u * 128 * 768);
  Type scalar;
  EXPECT_EQ(scalar.str(), "f32[]");
  EXPECT_EQ(scalar.numElements(), 1);
  EXPECT_EQ(scalar.byteSize(), 4u);
  EXPECT_EQ(scalar.rank(), 0u);
  EXPECT_EQ((Type{DType::Bool, {3, 0}}).numElements(), 0);
  EXPECT_EQ((Type{DType::Bool, {3, 5}}).byteSize(), 15u);
  EXPECT_EQ((Type{DType::I32, {7}}).str(), "i32[7]");
  EXPECT_NE((Type{DType::I32, {7}}), (Type{DType::I16, {7}}));
}

TEST(OpAttrs, SortedAndTyped) {
  Function fn("f");
  Op *op = fn.append(OpKind::Constant, f32({}), {});
  op->setAttr("zeta", int64_t(3));
  op->setAttr("alpha", 1.5);
  op->setAttr("mid", std::string("s"));
  op->setAttr("alpha", 2.5); // replaces
  ASSERT_EQ(op->attrs().size(), 3u);
  EXPECT_EQ(op->attrs()[0].first, "alpha");
  EXPECT_EQ(op->attrs()[1].first, "mid");
  EXPECT_EQ(op->attrs()[2].first, "zeta");
  EXPECT_EQ(op->floatAttr("alpha"), 2.5);
  EXPECT_EQ(op->floatAttr("zeta"), 3.0); // ints convert
  EXPECT_EQ(op->intAttr("zeta"), 3);
  EXPECT_FALSE(op->intAttr("alpha"));
  EXPECT_EQ(op->stringAttr("mid"), "s");
  EXPECT_FALSE(op->boolAttr("mid"));
  EXPECT_FALSE(op->attr("nothing"));
  op->setAttr("flag", true);
  EXPECT_EQ(op->boolAttr("flag"), true);
  op->setAttr("axes", std::vector<int64_t>{0, 2});
  EXPECT_EQ(op->intsAttr("axes"), (std::vector<int64_t>{0, 2}));
  op->setAttr("names", std::vector<std::string>{"a", "b"});
  EXPECT_EQ(op->stringsAttr("names"), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(op->intsAttr("names"));
  // An empty list reads as either kind (the text form cannot tell them apart).
  op->setAttr("empty", std::vector<int64_t>{});
  EXPECT_EQ(op->stringsAttr("empty"), std::vector<std::string>{});
  op->removeAttr("alpha");
  op->removeAttr("absent");
  EXPECT_FALSE(op->attr("alpha"));
  for (size_t i = 1; i < op->attrs().size(); ++i)
    EXPECT_LT(op->attrs()[i - 1].first, op->attrs()[i].first);
  op->setAttr("fusion", int64_t(4));
  EXPECT_EQ(op->fusionGroup(), 4);
}

TEST(FunctionTest, Editing) {
  Function fn("f", {{"B", 2}});
  Op *x = fn.append(OpKind::Input, f32({2}), {});
  Op *w = fn.append(OpKind::Param, f32({2}), {});
  Op *y = fn.append(OpKind::Input, f32({2}), {});
  Op *sum = fn.append(OpKind::Add, f32({2}), {x, x});
  EXPECT_EQ(fn.terminator(), nullptr);
  Op *ret = fn.append(OpKind::Return, Type{}, {sum});
  EXPECT_EQ(fn.terminator(), ret);
  EXPECT_EQ(fn.inputs(), (std::vector<Op *>{x, y}));
  EXPECT_EQ(fn.params(), (std::vector<Op *>{w}));
  EXPECT_EQ(x->parent(), &fn);
  EXPECT_EQ(fn.useCount(x), 2u); // repeated operands count twice
  EXPECT_EQ(fn.useCount(w), 0u);

  Op *mul = fn.insertBefore(ret, OpKind::Mul, f32({2}), {sum, w});
  ASSERT_EQ(fn.size(), 6u);
  EXPECT_EQ(fn.ops()[4].get(), mul);
  EXPECT_EQ(fn.ops()[5].get(), ret);
  EXPECT_EQ(mul->parent(), &fn);

  // The replacement keeps reading the value it replaces.
  fn.replaceAllUsesWith(sum, mul);
  EXPECT_EQ(ret->operand(0), mul);
  EXPECT_EQ(mul->operand(0), sum);
  EXPECT_EQ(fn.useCount(sum), 1u);

  fn.replaceAllUsesWith(x, y);
  EXPECT_EQ(sum->operand(0), y);
  EXPECT_EQ(sum->operand(1), y);
  fn.eraseIf([&](const Op &op) { return &op == x; });
  EXPECT_EQ(fn.size(), 5u);
  EXPECT_EQ(fn.inputs(), (std::vector<Op *>{y}));
  EXPECT_EQ(fn.ops()[0].get(), w);
}

TEST(FunctionTest, SortTopologicallyMovesReadersAfterTheirOperands) {
  Function fn("f");
  Op *x = fn.append(OpKind::Input, f32({2}), {});
  Op *a = fn.append(OpKind::Neg, f32({2}), {x});
  Op *b = fn.append(OpKind::Abs, f32({2}), {x});
  Op *ret = fn.append(OpKind::Return, Type{}, {a});
  // c reads b and comes before it; d reads c; a, b and the rest keep
  // their order.
  Op *c = fn.insertBefore(b, OpKind::Add, f32({2}), {a, b});
  Op *d = fn.insertBefore(b, OpKind::Mul, f32({2}), {c, x});
  ret->setOperands({d});
  fn.sortTopologically();
  std::vector<Op *> order;
  for (const auto &op : fn.ops())
    order.push_back(op.get());
  EXPECT_EQ(order, (std::vector<Op *>{x, a, b, c, d, ret}));
  // An order that is already right stays as it is.
  fn.sortTopologically();
  std::vector<Op *> again;
  for (const auto &op : fn.ops())
    again.push_back(op.get());
  EXPECT_EQ(again, order);
}

TEST(ModuleTest, LookupByNameAndBucket) {
  Module m;
  m.functions.push_back(std::make_unique<Function>("enc", std::vector<std::pair<std::string, int64_t>>{{"S", 128}}));
  m.functions.push_back(std::make_unique<Function>("enc", std::vector<std::pair<std::string, int64_t>>{{"S", 256}}));
  m.functions.push_back(std::make_unique<Function>("main"));
  std::vector<std::pair<std::string, int64_t>> b256{{"S", 256}}, b64{{"S", 64}};
  EXPECT_EQ(m.lookup("enc", b256), m.functions[1].get());
  EXPECT_EQ(m.lookup("enc", b64), nullptr);
  EXPECT_EQ(m.lookup("main", {}), m.functions[2].get());
  EXPECT_EQ(m.lookup("enc", {}), nullptr);
  EXPECT_EQ(m.lookup("dec", b256), nullptr);
}

} // namespace
