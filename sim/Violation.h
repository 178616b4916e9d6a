// A schedule violation: the simulator checks the schedule instead of
// trusting it, and the first violation stops the run with an error that
// names the chip, unit, queue, instruction index and cycle.
#pragma once

#include <llvm/Support/Error.h>

#include <cstdint>
#include <optional>
#include <string>

namespace lpu::sim {

struct Violation {
  int64_t cycle = 0;
  unsigned chip = 0;
  std::string message; // the whole text, "chip 0, unit mem, queue mem3, ..."
  /// A recv on this chip's link `awaitedLink` found nothing: a value sent
  /// to it in the same window (not delivered yet) is named by Machine.
  std::optional<unsigned> awaitedLink;
};

inline llvm::Error toError(const Violation &v) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), v.message);
}

} // namespace lpu::sim
