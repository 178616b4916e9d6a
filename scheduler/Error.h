// The errors scheduling reports to its caller as values: each carries the
// source location it is about, so that lpuc renders it as a diagnostic at
// the user's code.
#pragma once

#include "ir/IR.h"

#include <llvm/Support/Error.h>

#include <string>
#include <utility>
#include <vector>

namespace lpu::scheduler {

class ScheduleError : public llvm::ErrorInfo<ScheduleError> {
public:
  enum class Kind {
    Unsupported, // an op the scheduler cannot lower yet
    DoesNotFit,  // SRAM is full
  };
  static char ID;
  ScheduleError(Kind kind, std::string message, ir::Location loc,
                std::vector<std::pair<ir::Location, std::string>> notes = {})
      : kind(kind), message(std::move(message)), loc(std::move(loc)), notes(std::move(notes)) {}

  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

  Kind kind;
  std::string message;
  ir::Location loc;
  /// Secondary locations with their labels (the largest live tensors).
  std::vector<std::pair<ir::Location, std::string>> notes;
};

/// Whether `err` is SRAM being full (a DoesNotFit ScheduleError): then it
/// is consumed, for a caller that tries again another way; any other error
/// stays in `err` to be returned.
bool takeDoesNotFit(llvm::Error &err);

} // namespace lpu::scheduler
