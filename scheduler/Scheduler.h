// The scheduler's entry point: one verified IR function (after the default
// pass pipeline) onto one chip. docs/scheduler.md describes the method.
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Program.h"
#include "ir/IR.h"
#include "scheduler/Error.h"
#include "scheduler/Schedule.h"

#include <llvm/Support/Error.h>

namespace lpu::scheduler {

/// Schedules `fn`. Errors are ScheduleError values (an op not supported
/// yet, SRAM full) carrying the source location to report.
llvm::Expected<Schedule> scheduleFunction(const ir::Function &fn,
                                          const backend::ChipDescription &chip);

/// Schedules every function of `module` (one bucket per function, grouped
/// into entries by name in order) into a program for `chip`.
llvm::Expected<backend::Program> compileModule(const ir::Module &module,
                                               const backend::ChipDescription &chip,
                                               std::vector<Schedule> *schedules = nullptr);

} // namespace lpu::scheduler
