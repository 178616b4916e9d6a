// What several passes share: reading and making splat constants, the users
// of every op, and the one walk that rewrites ops in program order.
#pragma once

#include "ir/IR.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/STLFunctionalExtras.h>

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

/// Gives `made` the chip `from` is on (its `chip` attribute), if any: an op
/// a pass makes in place of or beside another stays on that chip of a
/// partitioned function (the verifier refuses an operand on another).
void keepChip(Op *made, const Op *from);

/// Makes `constant {value} : type` just before `before`, at `loc`.
Op *makeSplat(Function &fn, const Op *before, const Type &type, double value, Location loc);

/// Whether `op` is a splat constant equal to `value` (bit-exact for floats,
/// so -0.0 and 0.0 differ).
bool isSplatOf(const Op *op, double value);

/// For every op, the ops reading it (once per operand slot).
using UserMap = llvm::DenseMap<const Op *, std::vector<Op *>>;
UserMap computeUsers(const Function &fn);

/// Walks `fn` in program order and lets `rewrite` look at each op after its
/// operands have been replaced: `rewrite` may change the op in place (and
/// set `changed`), insert new ops before it, or return the value that takes
/// its place, in which case every later op reads that value instead and the
/// op is erased at the end. Returns whether anything changed. One sweep,
/// instead of a replaceAllUsesWith (a scan of the whole function) per op.
bool rewriteOps(Function &fn, llvm::function_ref<Op *(Op &op, bool &changed)> rewrite);

/// Whether `perm` is 0, 1, 2, ...
bool isIdentityPerm(const std::vector<int64_t> &perm);

/// Erases the ops in `dead` (nothing may still read them); the passes
/// collect what they replaced and erase it in one sweep.
void eraseOps(Function &fn, const llvm::DenseSet<const Op *> &dead);

} // namespace lpu::ir
