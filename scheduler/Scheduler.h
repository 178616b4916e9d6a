// The scheduler's entry point: one verified IR function (after the default
// pass pipeline) onto one chip. docs/scheduler.md describes the method.
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Program.h"
#include "ir/IR.h"
#include "scheduler/Error.h"
#include "scheduler/Schedule.h"
#include "support/Progress.h"
#include "support/TimeReport.h"

#include <llvm/Support/Error.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lpu::scheduler {

/// Which parameters are stored in the packed layout (backend Layout::Packed:
/// no padding lanes between rows). Only parameters whose every use is a
/// matmul's weights or a gather's table and whose rows are not a whole
/// number of vectors qualify; reading them costs a second read and a lane
/// rotation per vector that straddles two.
/// Past packing, striping: each packed parameter cut into a chunk per slice
/// group of a hemisphere, and the run's larger tensors cut likewise
/// (docs/scheduler.md, "Striped SRAM"), for a chip nearly full of
/// parameters.
enum class ParamPacking : uint8_t {
  Auto,    // packed only when the function does not fit with rows, then
           // striped only when it does not fit packed
  Always,  // every parameter that qualifies (then striped if that does not fit)
  Striped, // packed and striped from the start (tests)
  Never,
};

/// Choices that are each sound but move where everything after them is
/// placed, so that none is faster everywhere (docs/scheduler.md,
/// "Variants"). The defaults are the first set scheduleFunction tries.
struct PlacementHeuristics {
  /// Epilogues read a producer's value through the reshapes after it that
  /// keep its rows (a Linear's matmul between its [B, S, D] reshapes).
  bool epilogueThroughReshapes = true;
  /// Attention's scores stay off the slices of the scale's constants,
  /// which the softmax reads with every score vector.
  bool scoresOffScale = true;
  /// A fold across lanes of many rows keeps odd rows' partials in a second
  /// slice group, so each group's read port serves half the rows.
  bool halvedPartials = false;
  /// A float sum across lanes of many rows of squares (a layer norm's
  /// variance) runs on the MXM, each term as two f16, instead of folding
  /// on the SXM and VXM.
  bool squaresOnMxm = false;
  /// A matmul's weight parameter of several K-tiles is stored a K-tile to
  /// a chunk of its own slices, so that the planes multiplying a job's
  /// K-tiles side by side load them through a read port each.
  bool weightsByKTile = true;
  /// A matmul job cut over planes by K with few rows is cut into ranges of
  /// equal rows rather than whole K-tiles when that shortens the longest
  /// plane's loads and passes (each piece inside a tile takes A's vector
  /// rotated on the SXM).
  bool balancedKRanges = true;
  /// A matmul's K-tiles go, job by job, to the planes that would finish
  /// their passes first (from when each plane is free and A's rows are
  /// ready), when that is estimated to end sooner than the planes in turn.
  bool earliestPlanes = false;
};

/// Every placement heuristic once: its name on the command line (lpuc
/// --heuristics), its switch in PlacementHeuristics, and what it does.
/// Anything that lists, parses or compares heuristics walks this table.
struct PlacementHeuristic {
  llvm::StringLiteral name;
  bool PlacementHeuristics::*flag;
  const char *meaning;
};
llvm::ArrayRef<PlacementHeuristic> placementHeuristicTable();
/// The set with exactly the named heuristics on; an unknown name is an
/// error listing the known ones.
llvm::Expected<PlacementHeuristics> parsePlacementHeuristics(llvm::ArrayRef<std::string> names);

/// The numbers the scheduler tunes by (Knobs.def; docs/scheduler.md,
/// "Knobs"), as scheduleFunction uses them.
struct TuningKnobs {
#define LPU_KNOB(member, name, dflt, min, max, meaning) int64_t member = dflt;
#include "scheduler/Knobs.def"
#undef LPU_KNOB
  bool operator==(const TuningKnobs &) const = default;
};

/// Every tuning knob once, placement heuristics first (the variant search
/// searches over those) and then the numbers: its name (lpuc --knob
/// NAME=VALUE, and --heuristics for the heuristics), what it does, its
/// default and range, and its member in PlacementHeuristics or TuningKnobs.
struct Knob {
  llvm::StringLiteral name;
  const char *meaning;
  bool PlacementHeuristics::*flag = nullptr; // a placement heuristic, or
  int64_t TuningKnobs::*number = nullptr;    // a number
  int64_t dflt = 0, min = 0, max = 1;
};
llvm::ArrayRef<Knob> knobTable();
/// Sets one numeric knob from `NAME=VALUE`; an unknown name, a placement
/// heuristic (lpuc --heuristics sets those) or a value out of range is an
/// error naming the known ones or the range.
llvm::Error setKnob(llvm::StringRef spec, TuningKnobs &knobs);
/// Every knob's value as `name=value`, in the table's order.
std::vector<std::string> knobValues(const PlacementHeuristics &heuristics, const TuningKnobs &knobs);

struct ScheduleOptions {
  ParamPacking packing = ParamPacking::Auto;
  /// The numeric knobs (the heuristics are below and searched over).
  TuningKnobs knobs;
  /// Schedule a bucket again with the other sets of placement heuristics
  /// (PlacementHeuristics) when one decided anything, and keep the
  /// fastest; false: the default set only.
  bool tune = true;
  /// Schedule once with exactly these heuristics (no other set is tried).
  std::optional<PlacementHeuristics> heuristics;
  /// Threads for the other sets (0: one per core); the program does not
  /// depend on it.
  unsigned threads = 0;
  /// Keep every schedule's instructions (Schedule::queues) after its
  /// bucket is encoded, for a timeline of them (lpuc --report-html);
  /// otherwise only the figures are kept.
  bool keepInstructions = false;
  /// The topology the program runs on (backend/Topology.h): every bucket
  /// has code for each of its chips.
  std::string topology = "single";
  /// Where scheduling says which bucket, chip and variant it is on, and
  /// records the time of each (a variant's CPU time its own thread's):
  /// lpuc --progress, --time-phases. Neither changes a schedule.
  support::Progress progress;
  support::Timing timing;
};

class TransferMailbox;

/// One chip's traffic in a multi-chip function (scheduler/MultiChip.cpp):
/// the values it receives, as inputs named `transfer.<id>` whose vectors
/// arrive in the cycles given, and the values it sends, as outputs of that
/// name that the scheduler sends over `link` as soon as each vector is
/// written. With `mailbox` (a lockstep group, chips depending on each
/// other both ways), the values it sends are its `transfer` ops' operands
/// instead, each sent where the op is, and the arrivals of the values it
/// receives come from the mailbox when the input's turn comes.
struct ChipTraffic {
  unsigned chip = 0;
  TransferMailbox *mailbox = nullptr;
  struct Incoming {
    std::string name;
    unsigned fromChip = 0;
    unsigned link = 0; // this chip's end
    std::vector<uint8_t> perm;
    std::vector<int64_t> arrivals;
    int64_t id = 0; // the transfer's (lockstep: its mailbox key)
    int64_t tailRows = 1; // the sender's (LinkTransfer::tailRows)
  };
  struct Outgoing {
    std::string name;
    int64_t id = 0;
    unsigned toChip = 0;
    unsigned link = 0, farLink = 0;
    /// Whether rows' part-filled last vectors go packed (Transfers.h,
    /// tailRows): within a lockstep group only, so that what a group sends
    /// the next keeps the timing that lets later groups share schedules.
    bool packTails = false;
  };
  std::vector<Incoming> incoming;
  std::vector<Outgoing> outgoing;
};

/// Schedules `fn`. Errors are ScheduleError values (an op not supported
/// yet, SRAM full) carrying the source location to report. `traffic`: the
/// chip's sends and receives when `fn` is one chip's part of a
/// partitioned function.
llvm::Expected<Schedule> scheduleFunction(const ir::Function &fn,
                                          const backend::ChipDescription &chip,
                                          const ScheduleOptions &options = {},
                                          const ChipTraffic *traffic = nullptr);

/// Schedules a partitioned function (ops carrying `chip`, values crossing
/// through `transfer`; ir/passes/Partition.h): one schedule per chip, the
/// chips in order, each receiving in the cycles its senders' vectors
/// arrive; merged into one schedule whose queues and tensors name their
/// chips, for the topology `topology`.
llvm::Expected<Schedule> scheduleMultiChip(const ir::Function &fn,
                                           const backend::ChipDescription &chip,
                                           const ScheduleOptions &options = {});

/// Whether `fn` is partitioned across chips.
bool isPartitioned(const ir::Function &fn);

/// How progress and time reports name a function: its entry and bucket,
/// `encode S=128` (the entry alone without bucketed sizes).
std::string bucketTitle(const ir::Function &fn);

/// Schedules every function of `module` (one bucket per function, grouped
/// into entries by name in order) into a program for `chip`. `known[i]`,
/// when set, is function i's schedule made already with `options` (the
/// driver's choice between partitions schedules each candidate): taken
/// (moved) instead of scheduling the function again.
llvm::Expected<backend::Program> compileModule(const ir::Module &module,
                                               const backend::ChipDescription &chip,
                                               std::vector<Schedule> *schedules = nullptr,
                                               const ScheduleOptions &options = {},
                                               std::vector<std::optional<Schedule>> *known = nullptr);

} // namespace lpu::scheduler
