// support/Elementwise.def is the one table of the elementwise ops; every
// consumer derives its part from it. This walks the table and checks that
// each consumer agrees with each row: the IR (op, mnemonic, class, type
// rule), the shared arithmetic, the ISA (instruction, number, mnemonic,
// dtypes), the frontend (built-in name -> IR op), the reference interpreter
// and the simulator's VXM. InterpAgreementTest then checks, on every row,
// that the last two give the same bits.
#include "sim/VectorOps.h"

#include "backend/Isa.h"
#include "frontend/Lower.h"
#include "frontend/Parser.h"
#include "ir/IR.h"
#include "support/Arithmetic.h"
#include "support/Elementwise.h"
#include "tests/unit/interp/InterpTestSupport.h"

#include <llvm/Support/MemoryBuffer.h>

#include <gtest/gtest.h>

#include <set>

namespace lpu {
namespace {

using tensor::DType;
using tensor::ElementwiseInfo;
using tensor::ElementwiseRule;

constexpr DType kAllTypes[] = {DType::Bool, DType::I8,   DType::I16, DType::I32,
                               DType::F16,  DType::BF16, DType::F32};

/// The IR's type rule of each class (docs/ir.md), written out again.
bool irRuleAllows(ElementwiseRule rule, DType t) {
  switch (rule) {
  case ElementwiseRule::Float: return tensor::isFloat(t);
  case ElementwiseRule::Number:
  case ElementwiseRule::Ordering: return t != DType::Bool;
  case ElementwiseRule::Logical: return t == DType::Bool;
  case ElementwiseRule::Equality: return true;
  }
  return false;
}

std::string what(const ElementwiseInfo &info) { return info.name.str(); }

TEST(ElementwiseTable, RowsAreIndexedByTheirOp) {
  std::set<std::string> names, vxmNames;
  std::set<unsigned> numbers;
  for (size_t i = 0; i < tensor::elementwiseOps().size(); ++i) {
    const ElementwiseInfo &info = tensor::elementwiseOps()[i];
    EXPECT_EQ(unsigned(info.op), i) << what(info);
    EXPECT_EQ(&tensor::elementwiseInfo(info.op), &info) << what(info);
    EXPECT_TRUE(names.insert(info.name.str()).second) << what(info) << ": name twice";
    EXPECT_TRUE(vxmNames.insert(info.vxmMnemonic.str()).second) << what(info);
    EXPECT_TRUE(numbers.insert(info.vxmOpcode).second) << what(info) << ": opcode twice";
    EXPECT_EQ(tensor::isUnary(info.op), info.arity == 1) << what(info);
    EXPECT_EQ(tensor::elementwiseBuiltin(info.name),
              info.surface == tensor::ElementwiseSurface::Builtin ? std::optional(info.op)
                                                                  : std::nullopt)
        << what(info);
  }
}

TEST(ElementwiseTable, EveryRowIsAnIROpWithItsTypeRule) {
  for (const ElementwiseInfo &info : tensor::elementwiseOps()) {
    ir::OpKind kind = ir::elementwiseKind(info.op);
    EXPECT_EQ(ir::elementwiseArithmetic(kind), info.op) << what(info);
    EXPECT_EQ(ir::mnemonic(kind), info.name) << what(info);
    EXPECT_EQ(ir::parseMnemonic(info.name), kind) << what(info);
    EXPECT_EQ(ir::opClass(kind), info.arity == 1 ? ir::OpClass::Unary : ir::OpClass::Binary)
        << what(info);
    EXPECT_EQ(ir::operandCount(kind), int(info.arity)) << what(info);
    for (DType t : kAllTypes) {
      std::vector<ir::Type> operands(info.arity, ir::Type{t, {3}});
      auto result = ir::inferType(kind, operands, {}, nullptr);
      bool allowed = std::holds_alternative<ir::Type>(result);
      EXPECT_EQ(allowed, irRuleAllows(info.rule, t)) << what(info) << " " << tensor::dtypeName(t).str();
      if (!allowed)
        continue;
      DType want = tensor::isComparison(info.op) ? DType::Bool : t;
      EXPECT_EQ(std::get<ir::Type>(result), (ir::Type{want, {3}})) << what(info);
      // The machine computes whatever the IR allows.
      EXPECT_TRUE(tensor::elementwiseDefinedOn(info.op, t))
          << what(info) << " " << tensor::dtypeName(t).str();
    }
  }
}

TEST(ElementwiseTable, EveryRowIsAVxmInstruction) {
  for (const ElementwiseInfo &info : tensor::elementwiseOps()) {
    backend::Opcode op = backend::vxmOpcode(info.op);
    const backend::OpcodeInfo &isa = backend::opcodeInfo(op);
    EXPECT_EQ(unsigned(op), info.vxmOpcode) << what(info);
    EXPECT_LT(unsigned(op), backend::kNumOpcodes) << what(info);
    EXPECT_EQ(isa.op, op) << what(info);
    EXPECT_EQ(isa.mnemonic, info.vxmMnemonic) << what(info);
    EXPECT_EQ(backend::parseMnemonic(info.vxmMnemonic), op) << what(info);
    EXPECT_EQ(isa.unit, backend::UnitKind::Vxm) << what(info);
    EXPECT_EQ(isa.operands.size(), info.arity + 2u) << what(info); // dtype, sources, dst
    EXPECT_EQ(backend::elementwiseOf(op), info.op) << what(info);
    for (DType t : kAllTypes) {
      EXPECT_EQ(backend::dtypeAllowed(op, t), tensor::elementwiseDefinedOn(info.op, t))
          << what(info) << " " << tensor::dtypeName(t).str();
    }
  }
  // And no other instruction claims an elementwise op.
  for (unsigned n = 0; n < backend::kNumOpcodes; ++n) {
    if (auto e = backend::elementwiseOf(backend::Opcode(n))) {
      EXPECT_EQ(unsigned(backend::vxmOpcode(*e)), n);
    }
  }
}

TEST(ElementwiseTable, TheArithmeticComputesEveryRowOnEveryDtypeItAllows) {
  for (const ElementwiseInfo &info : tensor::elementwiseOps()) {
    for (DType t : kAllTypes) {
      if (!tensor::elementwiseDefinedOn(info.op, t))
        continue;
      float fa[2] = {0.5f, 2.0f}, fb[2] = {1.5f, 2.0f}, fy[2];
      int32_t ia[2] = {1, 0}, ib[2] = {1, 1}, iy[2];
      bool isFloat = tensor::isFloat(t);
      bool ok = tensor::isComparison(info.op)
                    ? (isFloat ? tensor::compareFloat(info.op, fa, fb, iy, 2)
                               : tensor::compareInt(info.op, ia, ib, iy, 2))
                : info.arity == 1 ? (isFloat ? tensor::unaryFloat(info.op, t, fa, fy, 2)
                                             : tensor::unaryInt(info.op, t, ia, iy, 2))
                                  : (isFloat ? tensor::binaryFloat(info.op, t, fa, fb, fy, 2)
                                             : tensor::binaryInt(info.op, t, ia, ib, iy, 2));
      EXPECT_TRUE(ok) << what(info) << " " << tensor::dtypeName(t).str();
    }
    if (info.arity == 1 && info.surface == tensor::ElementwiseSurface::Builtin) {
      EXPECT_TRUE(tensor::foldUnary(info.op, 0.5)) << what(info) << ": the checker folds it";
    }
  }
}

TEST(ElementwiseTable, EveryBuiltinLowersToItsOp) {
  for (const ElementwiseInfo &info : tensor::elementwiseOps()) {
    if (info.surface != tensor::ElementwiseSurface::Builtin)
      continue;
    // A Builtin row's rule is Float or Number: the checker knows no other.
    ASSERT_TRUE(info.rule == ElementwiseRule::Float || info.rule == ElementwiseRule::Number)
        << what(info);
    std::string call = info.arity == 1 ? "(x)" : "(x, x)";
    std::string text = "fn f(x: f32[4]) -> f32[4] {\n  return " + info.name.str() + call +
                       "\n}\nentry e = f\n";
    llvm::SourceMgr sources;
    DiagnosticEngine diags{sources};
    CollectingConsumer collected;
    diags.setConsumer(&collected);
    unsigned id = sources.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text, "t.lpu"), llvm::SMLoc());
    std::unique_ptr<ast::Module> module = parseModule(diags, id);
    std::unique_ptr<ir::Module> lowered = lowerProgram(*module, diags, CheckOptions{});
    ASSERT_TRUE(lowered) << what(info) << ": " << collected.diagnostics.size() << " diagnostics";
    int found = 0;
    for (const auto &fn : lowered->functions)
      for (const auto &op : fn->ops())
        found += op->kind() == ir::elementwiseKind(info.op);
    EXPECT_EQ(found, 1) << what(info);
  }
}

TEST(ElementwiseTable, TheInterpreterAndTheVxmRunEveryRow) {
  // Bits agree: InterpAgreementTest. Here: both accept each row on the
  // dtypes the IR allows, and the VXM writes something (not the copy path).
  for (const ElementwiseInfo &info : tensor::elementwiseOps()) {
    for (DType t : kAllTypes) {
      std::vector<ir::Type> operands(info.arity, ir::Type{t, {2}});
      if (!std::holds_alternative<ir::Type>(
              ir::inferType(ir::elementwiseKind(info.op), operands, {}, nullptr)))
        continue;
      ir::testing::FnBuilder fb;
      std::vector<ir::Op *> ins;
      std::map<std::string, tensor::Tensor> inputs;
      for (unsigned k = 0; k < info.arity; ++k) {
        std::string name = "x" + std::to_string(k);
        ins.push_back(fb.input(name, ir::Type{t, {2}}));
        tensor::Tensor v(t, {2});
        v.setInt(0, 1);
        v.setInt(1, 0);
        inputs[name] = v;
      }
      fb.ret({fb.op(ir::elementwiseKind(info.op), ins)}, {"y"});
      EXPECT_EQ(ir::testing::runError(fb.fn(), inputs), "")
          << what(info) << " " << tensor::dtypeName(t).str();
      EXPECT_TRUE(backend::dtypeAllowed(backend::vxmOpcode(info.op), t)) << what(info);
    }
  }
}

} // namespace
} // namespace lpu
