// canonicalize: one spelling for equivalent IR, so the other passes match
// fewer patterns. Rules (docs/passes.md):
//   - a commutative binary op with a constant first and a non-constant
//     second operand swaps them (constants second);
//   - reshape, broadcast and convert to the operand's own type, transpose by
//     the identity permutation, a slice of the full range and a concat of
//     one operand are replaced by their operand.
#include "ir/passes/PassUtil.h"
#include "ir/passes/Passes.h"

namespace lpu::ir {

namespace {

bool isCommutative(OpKind kind) {
  switch (kind) {
  case OpKind::Add:
  case OpKind::Mul:
  case OpKind::Maximum:
  case OpKind::Minimum:
  case OpKind::Eq:
  case OpKind::Ne:
  case OpKind::And:
  case OpKind::Or:
    return true;
  default:
    return false;
  }
}

/// The operand `op` is a no-op on, or null.
Op *identityOperand(const Op &op) {
  if (op.operands().empty())
    return nullptr;
  Op *input = op.operand(0);
  bool sameType = input->type() == op.type();
  switch (op.kind()) {
  case OpKind::Reshape:
  case OpKind::Broadcast:
  case OpKind::Convert:
    return sameType ? input : nullptr;
  case OpKind::Transpose: {
    // A transpose of a square matrix keeps the type but not the values.
    auto perm = op.intsAttr("perm");
    return sameType && perm && isIdentityPerm(*perm) ? input : nullptr;
  }
  case OpKind::Slice: {
    auto start = op.intsAttr("start");
    auto limit = op.intsAttr("limit");
    if (!sameType || !start || !limit || *limit != input->type().shape)
      return nullptr;
    for (int64_t s : *start)
      if (s != 0)
        return nullptr;
    return input;
  }
  case OpKind::Concat:
    return op.operands().size() == 1 && sameType ? input : nullptr;
  default:
    return nullptr;
  }
}

class Canonicalize : public Pass {
public:
  llvm::StringRef name() const override { return "canonicalize"; }

  bool run(Function &fn) override {
    return rewriteOps(fn, [](Op &op, bool &changed) -> Op * {
      if (isCommutative(op.kind()) && op.operand(0)->kind() == OpKind::Constant &&
          op.operand(1)->kind() != OpKind::Constant) {
        Op *first = op.operand(0);
        op.setOperand(0, op.operand(1));
        op.setOperand(1, first);
        changed = true;
        return nullptr;
      }
      return identityOperand(op);
    });
  }
};

} // namespace

std::unique_ptr<Pass> createCanonicalizePass() { return std::make_unique<Canonicalize>(); }

} // namespace lpu::ir
