// A finished schedule of one function on one chip: where every tensor the
// program names lives, every instruction with the cycle it issues in, and
// the figures lpuc --report prints. encodeBucket() turns it into a program
// bucket.
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Isa.h"
#include "backend/Program.h"
#include "ir/IR.h"

#include <llvm/Support/Error.h>

#include <array>
#include <cstdint>
#include <map>
#include <vector>

namespace lpu::scheduler {

struct TimedInstr {
  int64_t cycle = 0;
  backend::Instr instr;
};

struct QueueId {
  backend::UnitKind unit = backend::UnitKind::Mem;
  unsigned index = 0;
  auto operator<=>(const QueueId &) const = default;
};

/// Where one op's work went (lpuc --report-ops): the issue cycles of the
/// first and last instruction placed for it, and the cycles the first and
/// last rows of the result it wrote are ready in SRAM (its own, an
/// epilogue's root's, an attention's merged heads'; -1: none), with the
/// earliest the critical path allows for those two rows: the gap between
/// the two is what the schedule lost there against the lower bound.
struct OpTiming {
  std::string op;   // the IR mnemonic
  std::string type; // the result type as the IR prints it
  ir::Location loc;
  int64_t firstCycle = 0, lastCycle = 0;
  int64_t firstRowReady = -1, lastRowReady = -1;
  int64_t firstRowBound = -1, lastRowBound = -1;
};

struct Schedule {
  /// Inputs, outputs, parameters and constants, in the program's order.
  std::vector<backend::TensorPlacement> tensors;
  std::map<QueueId, std::vector<TimedInstr>> queues;

  /// The cycle count the simulator will report: the last result's cycle
  /// plus one.
  int64_t cycles = 0;
  /// Issue cycles per unit kind (as the simulator counts busy cycles).
  std::array<int64_t, backend::kNumUnitKinds> busy{};
  /// SRAM bytes allocated at the peak.
  uint64_t sramBytes = 0;
  /// A bound no schedule can beat: the largest of each resource's work over
  /// its throughput, and the critical path.
  int64_t lowerBound = 0;
  std::string lowerBoundReason; // which resource or "critical path"
  /// The ops that placed instructions, in the order they were lowered (an
  /// attention lowered as a whole at its scores counts there).
  std::vector<OpTiming> ops;

  void add(QueueId queue, int64_t cycle, const backend::Instr &instr);
};

/// The bucket for `schedule`: placements, and per queue the instructions
/// with gaps as nops and regular runs as repeats.
llvm::Expected<backend::Bucket> encodeBucket(const Schedule &schedule,
                                             const backend::ChipDescription &chip,
                                             std::vector<backend::BucketDim> dims);

} // namespace lpu::scheduler
