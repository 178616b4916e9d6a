// Small helpers the passes share: reading and making splat constants, and
// the users of every op.
#pragma once

#include "ir/IR.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>

#include <optional>
#include <vector>

namespace lpu::ir {

/// The value of a `constant` op, widened to double (exact for every dtype of
/// the language: bool as 0 or 1, integers up to i32, floats up to f32);
/// nullopt for any other op.
std::optional<double> splatValue(const Op *op);

/// The attribute a splat of `dtype` holding `value` carries: a float for
/// float dtypes, an integer for integer ones, a bool for bool.
Attr splatAttr(DType dtype, double value);

/// Makes `constant {value} : type` just before `before`, at `loc`.
Op *makeSplat(Function &fn, const Op *before, const Type &type, double value, Location loc);

/// Whether `op` is a splat constant equal to `value` (bit-exact for floats,
/// so -0.0 and 0.0 differ).
bool isSplatOf(const Op *op, double value);

/// For every op, the ops reading it (once per operand slot).
using UserMap = llvm::DenseMap<const Op *, std::vector<Op *>>;
UserMap computeUsers(const Function &fn);

/// Replacements made during one walk in program order. Each op of the walk
/// first reads through the replacements made so far (apply), so a later op
/// never sees a replaced value; one sweep instead of a replaceAllUsesWith
/// (a scan of the whole function) per replaced op.
class Replacements {
public:
  /// `to` must already read through earlier replacements.
  void replace(const Op *from, Op *to) {
    map_[from] = to;
    dead_.insert(from);
  }
  void apply(Op &op) const {
    if (map_.empty())
      return;
    for (size_t i = 0; i < op.operands().size(); ++i)
      if (Op *to = map_.lookup(op.operand(i)))
        op.setOperand(i, to);
  }
  /// The replaced ops, for eraseOps once the walk is done.
  const llvm::DenseSet<const Op *> &replaced() const { return dead_; }
  bool empty() const { return map_.empty(); }

private:
  llvm::DenseMap<const Op *, Op *> map_;
  llvm::DenseSet<const Op *> dead_;
};

/// Erases the ops in `dead` (nothing may still read them); the passes
/// collect what they replaced and erase it in one sweep.
void eraseOps(Function &fn, const llvm::DenseSet<const Op *> &dead);

} // namespace lpu::ir
