// Forms of ops whose lowerings work along one axis only, rewritten before
// scheduling into that form with the layout moves the scheduler has
// (docs/scheduler.md, "Legalisation"): a softmax or an argmax over a
// leading axis, a gather along an axis other than the first, a reduction
// over the last axis and others at once. The IR's semantics stay; only the
// scheduler sees the rewritten function (other targets and the reference
// interpreter run the IR as it is).
#pragma once

#include "ir/IR.h"

#include <llvm/Support/Error.h>

#include <functional>
#include <memory>

namespace lpu::scheduler {

/// A copy of `fn` with those ops rewritten (each new op at the source
/// location of the op it replaces), or null when `fn` has none: schedule
/// `fn` as it is then. Ops for which `asIs` holds are left as they are (a
/// lowering of their own takes them: a global pool channels-last).
llvm::Expected<std::unique_ptr<ir::Function>>
legalize(const ir::Function &fn, const std::function<bool(const ir::Op &)> &asIs = {});

/// Whether `op`, an update of a state at a run-time position, is written
/// in place with the MEM's `scatter` (lower/Gather.cpp, lowerUpdate)
/// rather than legalised: the state input is read by this update alone
/// (nothing needs its old value after), the axis is one of the rows'
/// (whole rows move), and one index of the axes before it (a head's
/// positions) fits a slice and is addressed within the scatter map's 16
/// bits, on a chip of `lanes` lanes and `memVectors` vectors a slice.
bool updatesInPlace(const ir::Op &op, const ir::Function &fn, unsigned lanes, unsigned memVectors);

} // namespace lpu::scheduler
