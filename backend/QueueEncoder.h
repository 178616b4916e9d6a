// Encoding from a finished schedule: the compiler decides the cycle in
// which every instruction issues; this turns one queue's (cycle,
// instruction) list into queue code. Gaps become `nop n`, and runs of one
// instruction at a constant distance whose address (or accumulator row)
// moves by a constant step become the instruction plus `repeat n d`.
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Isa.h"

#include <llvm/Support/Error.h>

#include <cstdint>
#include <vector>

namespace lpu::backend {

class QueueEncoder {
public:
  explicit QueueEncoder(const ChipDescription &chip) : chip_(chip) {}

  /// Adds a unit instruction issuing in `cycle`. Cycles must increase and
  /// respect the previous instruction's issue interval; the instruction's
  /// step field is ignored (the encoder sets it for repeats).
  llvm::Error add(int64_t cycle, const Instr &in);

  /// The queue code for everything added so far.
  std::vector<Instr> finish() const;

private:
  struct Issue {
    int64_t cycle;
    Instr instr;
  };
  const ChipDescription &chip_;
  std::vector<Issue> issues_;
  int64_t nextFree_ = 0;
};

} // namespace lpu::backend
