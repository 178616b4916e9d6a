// The compiler's pipeline as named phases, in order:
//
//   parse     source text -> AST (frontend/Parser.h)
//   check     names, sizes, shapes, static rules (frontend/Checker.h)
//   lower     every entry bucket -> one verified IR function (frontend/Lower.h)
//   passes    the IR pass pipeline, verified after every pass (ir/Pass.h)
//   partition every op onto a chip, transfers explicit (ir/passes/Partition.h)
//   schedule  every bucket onto the chip, cycle-exact (scheduler/)
//   emit      the program file (backend/ProgramBinary.h)
//
// lpuc runs it up to the phase its flags need, lpurun --reference up to
// `lower`, and any phase's result can be dumped after it runs (lpuc
// --dump-after). Checking and lowering are one walk of the checker (its
// concrete instantiation of each bucket calls the lowering hooks, so there
// is no second evaluator): when the pipeline goes past `check`, that walk
// is timed as `check` and `lower` is the verification of its result.
#pragma once

#include "driver/Compile.h"
#include "frontend/AST.h"
#include "frontend/Checker.h"
#include "frontend/Diagnostics.h"
#include "ir/IR.h"
#include "ir/passes/Partition.h"
#include "support/Progress.h"
#include "support/TimeReport.h"

#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lpu::driver {

enum class Phase : uint8_t { Parse, Check, Lower, Passes, Partition, Schedule, Emit };

/// Every phase, in pipeline order.
llvm::ArrayRef<Phase> allPhases();
llvm::StringRef phaseName(Phase phase);
/// A phase by name; nullopt for an unknown one.
std::optional<Phase> parsePhase(llvm::StringRef name);
/// "parse, check, lower, passes, partition, schedule, emit": for usage errors.
std::string phaseList();

/// What the IR phases do besides lowering and running the passes.
struct IROptions {
  /// After the passes, print the module, parse the text back and check it
  /// prints identically (reported as an internal error if not).
  bool roundTrip = false;
  /// Testing the internal-error path end to end: break the first
  /// elementwise op's type before the verifier runs.
  bool injectFault = false;
  /// The passes run after lowering, as `lpu-opt --passes` spells them:
  /// "default" is the pipeline the scheduler gets, "none" none.
  std::string passes = "default";
  /// Pass names (or "all") whose input or output is printed to `passDumps`
  /// (stderr when null).
  std::vector<std::string> printBefore, printAfter;
  llvm::raw_ostream *passDumps = nullptr;
};

/// How many chips a program runs on and how they are cabled.
struct ChipsOptions {
  /// The chips each function is partitioned onto (1: not partitioned).
  unsigned chips = 1;
  /// Each function onto the fewest chips whose SRAM holds its weights.
  bool fewest = false;
  /// The topology (backend/Topology.h); empty: the smallest that has the
  /// chips (single, node, dragonfly:N).
  std::string topology;
  /// How each function is cut (ir/passes/Partition.h): pipeline stages,
  /// or Megatron-style splits over all the chips (tensor); nullopt (auto):
  /// every kind of autoPartitionKinds() compiled and scheduled, the fewest
  /// predicted cycles kept (with `fewest`: the pipeline).
  std::optional<ir::PartitionKind> kind;
  /// Per-layer pins (lpuc --pin, ir/passes/PartitionPins.h).
  std::vector<ir::PartitionPin> pins;
};

/// A partition kind with its name, as `--partition` spells it.
struct PartitionKindName {
  ir::PartitionKind kind;
  llvm::StringRef name;
};
/// The kinds `--partition auto` tries, the default first (its error is the
/// one reported when every kind fails).
llvm::ArrayRef<PartitionKindName> autoPartitionKinds();
/// The name of a kind ("pipeline", "tensor").
llvm::StringRef partitionKindName(ir::PartitionKind kind);
/// Whether a pin concerns partitions of `kind` (tensor pins the splits,
/// pipeline pins the stages).
bool pinAppliesTo(const ir::PartitionPin &pin, ir::PartitionKind kind);

/// The smallest topology with `chips` chips: single, node, dragonfly:N.
std::string smallestTopology(unsigned chips);

struct PipelineOptions {
  CheckOptions check;
  ChipsOptions chips;
  IROptions ir;
  scheduler::ScheduleOptions schedule;
  /// Entries and buckets to keep (after lowering; empty lists keep all).
  BucketSelection select;
  /// The chip `schedule` targets: required when the pipeline reaches it.
  const backend::ChipDescription *chip = nullptr;
  /// The first phase to run: Passes when the caller has put the IR in the
  /// Compilation itself (lpuc on a .ir file, parsed and verified).
  Phase first = Phase::Parse;
  /// The last phase to run.
  Phase last = Phase::Emit;
  /// Whether a run that ends at Lower (a plain check) still requires the
  /// entries selected to agree on their states (E0702), as one program
  /// must; the reference interpreter, which runs an entry at a time,
  /// does not.
  bool statesAgree = true;
  /// Phases whose result is printed to `dumps` (stderr when null) right
  /// after they run: parse the AST, check every expression's type, lower
  /// and passes the IR text, schedule the report, emit the program text.
  std::vector<Phase> dumpAfter;
  llvm::raw_ostream *dumps = nullptr;
  /// Where the phases say how far they have got (the phase, the pass, the
  /// entry and bucket, the partition candidate, the variant) and record
  /// their times, a row per phase with the passes, the candidates, the
  /// buckets and the variants under theirs (lpuc --progress,
  /// --time-phases). Neither changes what the phases make.
  support::Progress progress;
  support::Timing timing;
};

/// The wall and CPU time one phase took.
struct PhaseTime {
  Phase phase;
  double wallSeconds = 0, cpuSeconds = 0;
};

/// One source file on its way through the pipeline: the diagnostics engine
/// the phases report to and what each phase has made so far.
struct Compilation {
  Compilation(DiagnosticEngine &diags, unsigned bufferId) : diags(diags), bufferId(bufferId) {}

  DiagnosticEngine &diags;
  unsigned bufferId;
  std::unique_ptr<ast::Module> ast;    // after parse
  CheckResult checked;                 // after check
  std::unique_ptr<ir::Module> ir;      // after lower, then after passes and partition
  std::string topology = "single";     // after partition
  /// After partition with `--partition auto`, per function: what was
  /// chosen and the chosen candidate's schedule (taken by `schedule`).
  std::vector<std::optional<PartitionChoice>> partitionChoices;
  std::vector<std::optional<scheduler::Schedule>> schedules;
  std::optional<CompiledProgram> compiled; // after schedule
  std::string binary;                  // after emit: the program file's bytes
  /// Set when the selection of entries and buckets selects nothing: a usage
  /// error of the command line, not of the source.
  std::string selectionError;
  /// Each phase that ran, in order.
  std::vector<PhaseTime> times;
  /// The last phase that completed without errors.
  std::optional<Phase> done;
};

/// Runs the phases in order up to `options.last`, stopping at the first
/// that reports an error (or a selection error). True when every phase ran.
bool runPipeline(Compilation &c, const PipelineOptions &options);

/// Prints what `phase` made (see PipelineOptions::dumpAfter); nothing when
/// it has not run.
void dumpPhase(const Compilation &c, Phase phase, const PipelineOptions &options,
               llvm::raw_ostream &os);

} // namespace lpu::driver
