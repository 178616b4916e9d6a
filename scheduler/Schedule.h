// A finished schedule of one function on one chip: where every tensor the
// program names lives, every instruction with the cycle it issues in, and
// the figures lpuc --report prints. encodeBucket() turns it into a program
// bucket.
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Isa.h"
#include "backend/Program.h"
#include "scheduler/PhysicalBound.h"
#include "ir/IR.h"

#include <llvm/Support/Error.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace lpu::scheduler {

struct TimedInstr {
  int64_t cycle = 0;
  backend::Instr instr;
};

struct QueueId {
  backend::UnitKind unit = backend::UnitKind::Mem;
  unsigned index = 0;
  unsigned chip = 0; // in a multi-chip schedule
  auto operator<=>(const QueueId &) const = default;
};

/// Where one op's work went (lpuc --report-ops): the issue cycles of the
/// first and last instruction placed for it, and the cycles the first and
/// last rows of the result it wrote are ready in SRAM (its own, an
/// epilogue's root's, an attention's merged heads'; -1: none), with the
/// earliest the critical path allows for those two rows: the gap between
/// the two is what the schedule lost there against the lower bound.
/// The instructions one op placed on one queue: indices [begin, end) of
/// the queue's list in Schedule::queues (a lowering appends to a queue's
/// list, so an op's instructions on it are one run of indices).
struct QueueRange {
  backend::UnitKind unit = backend::UnitKind::Mem;
  unsigned index = 0;
  uint32_t begin = 0, end = 0;
};

struct OpTiming {
  std::string op;   // the IR mnemonic
  std::string type; // the result type as the IR prints it
  ir::Location loc;
  int64_t firstCycle = 0, lastCycle = 0;
  int64_t firstRowReady = -1, lastRowReady = -1;
  int64_t firstRowBound = -1, lastRowBound = -1;
  /// The chip whose queues it placed on (a multi-chip schedule).
  unsigned chip = 0;
  /// The transfer (its IR id) whose vectors it sent or received; -1: none.
  int64_t sends = -1, receives = -1;
  /// Its instructions, queue by queue (lpuc --report-html's timeline).
  std::vector<QueueRange> ranges;
  /// The ops (indices into Schedule::ops) whose results it reads, looked
  /// up through the ops that placed nothing (views, values computed in
  /// their readers' trees): the edges of the schedule's critical path.
  std::vector<uint32_t> inputs;
};

/// One SRAM block's life: its bytes count from `from` (the later of the
/// cycle its space became free and the cycle the work that allocated it
/// could start) to `to` (its last read; the schedule's end for parameters
/// and other blocks never freed).
struct SramLife {
  int64_t from = 0, to = 0;
  uint64_t bytes = 0;
  unsigned chip = 0;
};

/// One choice the scheduler made for an op or a value (lpuc --emit=plan,
/// docs/scheduler.md "The plan"): how it is stored or lowered.
struct PlanStep {
  std::string op;   // the IR mnemonic
  std::string type; // the result type as the IR prints it
  ir::Location loc;
  unsigned chip = 0; // in a multi-chip schedule
  std::string what;
};

/// The choices behind a schedule, in one place: the knobs' values, the
/// sets of placement heuristics scheduled and the one kept, how the
/// parameters are stored, and each op's and value's own choices in the
/// order they were made.
/// One chip's own choices in a multi-chip schedule: each chip searches its
/// heuristic sets and stores its parameters for itself.
struct ChipPlan {
  unsigned chip = 0;
  std::optional<unsigned> shares; // the chip whose schedule it runs
  std::string parameters;
  std::vector<std::string> heuristics;
  std::vector<std::pair<std::string, int64_t>> tried;
};

struct Plan {
  std::string parameters; // rows, packed or striped (ParamStorage)
  std::vector<std::string> heuristics; // the set kept, by name
  /// Every set scheduled (names joined by ',', or "none") and its cycles,
  /// in the order tried (-1: it failed).
  std::vector<std::pair<std::string, int64_t>> tried;
  std::vector<std::string> knobs; // every knob as name=value (knobTable's order)
  std::vector<PlanStep> steps;
  /// A multi-chip schedule's choices chip by chip (the fields above are
  /// then chip 0's); empty on one chip.
  std::vector<ChipPlan> chips;
};

/// A value one chip sends another over a C2C link: its vectors in row-major
/// order of the stored view, each arriving at the far end in the cycle
/// given (the first cycle a `recv` may take it).
struct LinkTransfer {
  int64_t id = 0; // the IR transfer's number (its input name on the far chip)
  unsigned fromChip = 0, toChip = 0;
  unsigned link = 0, farLink = 0;
  std::vector<uint8_t> perm; // the stored order of the sent rows
  /// Rows whose last vectors each sent vector of tails carries
  /// (Transfers.h, tailRows): the receiver's must be the same.
  int64_t tailRows = 1;
  std::vector<int64_t> arrivals;
  uint64_t bytes = 0;
};

/// One chip's figures in a multi-chip schedule.
struct ChipFigures {
  unsigned chip = 0;
  /// The cycle the first vector it receives arrives (0 for a chip that
  /// receives nothing): before it, the chip only loads weights.
  int64_t firstCycle = 0;
  int64_t cycles = 0;
  std::array<int64_t, backend::kNumUnitKinds> busy{};
  uint64_t sramBytes = 0;
  uint64_t linkBytesSent = 0;
  int64_t lowerBound = 0;
  std::string lowerBoundReason;
  /// Lockstep: the chip's group, in the order the groups run.
  unsigned group = 0;
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
  /// The fewest cycles any schedule could take (PhysicalBound.h).
  PhysicalBound physical;
  /// The choices that made it (lpuc --emit=plan).
  Plan plan;
  /// The ops that placed instructions, in the order they were lowered (an
  /// attention lowered as a whole at its scores counts there).
  std::vector<OpTiming> ops;
  /// Every SRAM block's life (lpuc --report-html's SRAM over time).
  std::vector<SramLife> sram;
  /// What this chip sends (a multi-chip function's chips, before merging).
  std::vector<LinkTransfer> sent;
  /// Per chip, for a multi-chip schedule (empty for one chip), and the
  /// chips of the topology the program runs on.
  std::vector<ChipFigures> chips;
  std::string topology = "single";
  unsigned topologyChips = 1;
  /// How many of the chips were scheduled; the others share one of their
  /// schedules, shifted in time (a chip's own: `sharedFrom`).
  unsigned distinctChips = 1;
  bool sharedFrom = false;
  /// A chip's own schedule that runs another chip's queues, later by a
  /// delay (and its `queues` empty): `shares`, the other chip numbered as
  /// the chips scheduled together are. In a merged schedule, per topology
  /// chip, those that do.
  std::optional<backend::SharedCode> shares;
  std::map<unsigned, backend::SharedCode> sharedCode;
  /// The chips send to each other both ways and were scheduled in
  /// lockstep (docs/partitioning.md): not a pipeline of stages.
  bool lockstep = false;
  /// Lockstep: the groups of chips scheduled one after the other (a
  /// hybrid partition's nodes, each a pipeline stage; ChipFigures::group).
  unsigned groups = 1;

  void add(QueueId queue, int64_t cycle, const backend::Instr &instr);
};

/// The bucket for `schedule`: placements, and per queue the instructions
/// with gaps as nops and regular runs as repeats.
llvm::Expected<backend::Bucket> encodeBucket(const Schedule &schedule,
                                             const backend::ChipDescription &chip,
                                             std::vector<backend::BucketDim> dims);

} // namespace lpu::scheduler
