// simplify: algebraic rewrites that keep every value bit for bit (NaN
// payloads aside). The rules, each in docs/passes.md:
//   transpose(transpose(x, p), q)  -> transpose(x, p[q[i]]), or x if identity
//   reshape(reshape(x))            -> reshape(x), or x if the types agree
//   convert(convert(x: A) to B) to C, when A -> B is exact for every value
//                                  -> convert(x) to C, or x when C == A
//     (f16 -> f32 -> f16 cancels; f32 -> f16 -> f32 does not: it rounds)
//   x + 0, x - 0 (integers); x + (-0.0), x - (+0.0) (floats: -0.0 + 0.0 is
//   +0.0, so x + 0.0 is not x)     -> x
//   x * 1, x / 1                   -> x
//   x * 0 (integers only; for floats NaN * 0 and inf * 0 are NaN) -> 0
//   select(c, a, b), c a splat constant -> a when c is true, else b
//   select(c, a, a)                -> a
//   gather(t, iota) along axis k, the ids a rank-1 iota no longer than t's
//   axis k                         -> slice of t's first entries along k
// A rewritten op keeps its location; the ops it no longer reads are left
// for dce.
#include "ir/passes/PassUtil.h"
#include "ir/passes/Passes.h"

namespace lpu::ir {

namespace {

/// Whether converting any value of `from` to `to` is exact, so that a
/// conversion back (or onward) sees the original value.
bool convertIsExact(DType from, DType to) {
  if (from == to || from == DType::Bool)
    return true;
  switch (from) {
  case DType::I8:
    return to == DType::I16 || to == DType::I32 || to == DType::F16 || to == DType::BF16 ||
           to == DType::F32;
  case DType::I16:
    return to == DType::I32 || to == DType::F32;
  case DType::F16:
  case DType::BF16:
    return to == DType::F32;
  default:
    return false;
  }
}

/// The value `op` can be replaced by, after rewriting `op` in place when a
/// shorter form of it exists. Null when `op` stays.
Op *simplifyLayoutChain(Op &op, bool &rewrote) {
  if (op.operands().size() != 1 || op.operand(0)->kind() != op.kind())
    return nullptr;
  Op *inner = op.operand(0);
  Op *x = inner->operand(0);
  switch (op.kind()) {
  case OpKind::Transpose: {
    auto outerPerm = op.intsAttr("perm");
    auto innerPerm = inner->intsAttr("perm");
    if (!outerPerm || !innerPerm || outerPerm->size() != innerPerm->size())
      return nullptr;
    std::vector<int64_t> perm(outerPerm->size());
    for (size_t i = 0; i < perm.size(); ++i) {
      int64_t q = (*outerPerm)[i];
      if (q < 0 || q >= static_cast<int64_t>(innerPerm->size()))
        return nullptr;
      perm[i] = (*innerPerm)[q];
    }
    if (isIdentityPerm(perm))
      return x;
    op.setOperand(0, x);
    op.setAttr("perm", perm);
    rewrote = true;
    return nullptr;
  }
  case OpKind::Reshape:
    if (x->type() == op.type())
      return x;
    op.setOperand(0, x);
    rewrote = true;
    return nullptr;
  case OpKind::Convert:
    if (!convertIsExact(x->type().dtype, inner->type().dtype))
      return nullptr;
    if (x->type() == op.type())
      return x;
    op.setOperand(0, x);
    rewrote = true;
    return nullptr;
  default:
    return nullptr;
  }
}

/// x op c (or c op x for the commutative ones) with an identity constant.
Op *simplifyArithmetic(Op &op) {
  if (op.operands().size() != 2)
    return nullptr;
  bool isFloat = tensor::isFloat(op.type().dtype);
  bool isInt = tensor::isInteger(op.type().dtype);
  if (!isFloat && !isInt)
    return nullptr;
  Op *lhs = op.operand(0), *rhs = op.operand(1);
  auto pick = [&](Op *x) { return x->type() == op.type() ? x : nullptr; };
  double zeroThatAddsNothing = isFloat ? -0.0 : 0.0;
  switch (op.kind()) {
  case OpKind::Add:
    if (isSplatOf(rhs, zeroThatAddsNothing))
      return pick(lhs);
    if (isSplatOf(lhs, zeroThatAddsNothing))
      return pick(rhs);
    return nullptr;
  case OpKind::Sub:
    return isSplatOf(rhs, 0.0) ? pick(lhs) : nullptr;
  case OpKind::Mul:
    if (isSplatOf(rhs, 1.0))
      return pick(lhs);
    if (isSplatOf(lhs, 1.0))
      return pick(rhs);
    if (isInt && isSplatOf(rhs, 0.0))
      return pick(rhs);
    if (isInt && isSplatOf(lhs, 0.0))
      return pick(lhs);
    return nullptr;
  case OpKind::Div:
    return isSplatOf(rhs, 1.0) ? pick(lhs) : nullptr;
  default:
    return nullptr;
  }
}

/// select(c, a, b) whose condition is a splat constant (a `bool`
/// argument of a helper fn, a configuration flag), or whose branches are
/// one value: the branch it picks everywhere. Null otherwise.
Op *simplifySelect(Op &op) {
  if (op.kind() != OpKind::Select || op.operands().size() != 3)
    return nullptr;
  Op *a = op.operand(1), *b = op.operand(2);
  auto pick = [&](Op *x) { return x->type() == op.type() ? x : nullptr; };
  if (a == b)
    return pick(a);
  std::optional<double> c = splatValue(op.operand(0));
  if (!c)
    return nullptr;
  return pick(*c != 0 ? a : b);
}

/// gather(table, ids) whose ids are a rank-1 iota (0, 1, .., S - 1) with
/// S at most the table's extent along the axis: every id is in range (the
/// gather clamps nothing) and picks its own index, so the result is the
/// table's first S entries along the axis, a slice. A position embedding
/// (`positions(iota<S>())`) then reads its table in place instead of
/// gathering it at run time. Null when `op` is no such gather.
Op *simplifyGather(Function &fn, Op &op) {
  if (op.kind() != OpKind::Gather || op.operands().size() != 2)
    return nullptr;
  Op *table = op.operand(0), *ids = op.operand(1);
  if (ids->kind() != OpKind::Iota || ids->type().shape.size() != 1 || ids->intAttr("axis").value_or(0) != 0 ||
      !tensor::isInteger(ids->type().dtype))
    return nullptr;
  const auto &dims = table->type().shape;
  const int64_t axis = op.intAttr("axis").value_or(0);
  if (axis < 0 || axis >= int64_t(dims.size()) || ids->type().shape[0] > dims[size_t(axis)] ||
      op.type().dtype != table->type().dtype)
    return nullptr;
  std::vector<int64_t> start(dims.size(), 0), limit(dims.begin(), dims.end());
  limit[size_t(axis)] = ids->type().shape[0];
  Op *slice = fn.insertBefore(&op, OpKind::Slice, op.type(), {table}, op.loc());
  keepChip(slice, &op);
  slice->setAttr("start", start);
  slice->setAttr("limit", limit);
  return slice;
}

class Simplify : public Pass {
public:
  llvm::StringRef name() const override { return "simplify"; }

  bool run(Function &fn) override {
    return rewriteOps(fn, [&fn](Op &op, bool &changed) -> Op * {
      bool rewrote = false;
      Op *replacement = simplifyLayoutChain(op, rewrote);
      changed |= rewrote;
      if (!replacement && !rewrote)
        replacement = simplifyArithmetic(op);
      if (!replacement && !rewrote)
        replacement = simplifySelect(op);
      if (!replacement && !rewrote)
        replacement = simplifyGather(fn, op);
      return replacement;
    });
  }
};

} // namespace

std::unique_ptr<Pass> createSimplifyPass() { return std::make_unique<Simplify>(); }

} // namespace lpu::ir
