#include "ir/passes/PassUtil.h"

#include <bit>
#include <cstring>

namespace lpu::ir {

std::optional<double> splatValue(const Op *op) {
  if (!op || op->kind() != OpKind::Constant)
    return std::nullopt;
  const Attr *value = op->attr("value");
  if (!value)
    return std::nullopt;
  if (const bool *b = std::get_if<bool>(value))
    return *b ? 1.0 : 0.0;
  if (const int64_t *i = std::get_if<int64_t>(value))
    return static_cast<double>(*i);
  if (const double *d = std::get_if<double>(value))
    return *d;
  return std::nullopt;
}

Attr splatAttr(DType dtype, double value) {
  if (dtype == DType::Bool)
    return Attr(value != 0);
  if (tensor::isInteger(dtype))
    return Attr(static_cast<int64_t>(value));
  return Attr(value);
}

void keepChip(Op *made, const Op *from) {
  if (std::optional<int64_t> chip = from->intAttr("chip"))
    made->setAttr("chip", *chip);
}

Op *makeSplat(Function &fn, const Op *before, const Type &type, double value, Location loc) {
  Op *op = fn.insertBefore(before, OpKind::Constant, type, {}, std::move(loc));
  op->setAttr("value", splatAttr(type.dtype, value));
  keepChip(op, before);
  return op;
}

bool isSplatOf(const Op *op, double value) {
  std::optional<double> v = splatValue(op);
  return v && std::bit_cast<uint64_t>(*v) == std::bit_cast<uint64_t>(value);
}

UserMap computeUsers(const Function &fn) {
  UserMap users;
  for (const std::unique_ptr<Op> &op : fn.ops())
    for (Op *operand : op->operands())
      users[operand].push_back(op.get());
  return users;
}

bool rewriteOps(Function &fn, llvm::function_ref<Op *(Op &op, bool &changed)> rewrite) {
  // A snapshot: a rewrite may insert ops.
  std::vector<Op *> order;
  for (const std::unique_ptr<Op> &op : fn.ops())
    order.push_back(op.get());
  llvm::DenseMap<const Op *, Op *> replacement;
  llvm::DenseSet<const Op *> replaced;
  bool changed = false;
  for (Op *op : order) {
    for (size_t i = 0; i < op->operands().size(); ++i)
      if (Op *to = replacement.lookup(op->operand(i)))
        op->setOperand(i, to);
    if (Op *to = rewrite(*op, changed)) {
      replacement[op] = to;
      replaced.insert(op);
      changed = true;
    }
  }
  eraseOps(fn, replaced);
  return changed;
}

bool isIdentityPerm(const std::vector<int64_t> &perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i))
      return false;
  return true;
}

void eraseOps(Function &fn, const llvm::DenseSet<const Op *> &dead) {
  if (!dead.empty())
    fn.eraseIf([&](const Op &op) { return dead.contains(&op); });
}

} // namespace lpu::ir
