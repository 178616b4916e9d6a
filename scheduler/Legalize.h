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

} // namespace lpu::scheduler
