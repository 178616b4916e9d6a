#include "driver/Pipeline.h"

#include "backend/ProgramBinary.h"
#include "backend/ProgramText.h"
#include "frontend/ASTPrinter.h"
#include "frontend/Lower.h"
#include "frontend/Parser.h"
#include "backend/Topology.h"
#include "ir/Pass.h"
#include "ir/passes/Partition.h"
#include "ir/Text.h"
#include "scheduler/Error.h"
#include "scheduler/Scheduler.h"

#include <llvm/ADT/STLExtras.h>

#include <chrono>
#include <map>
#include <set>
#include <ctime>

namespace lpu::driver {

namespace {

constexpr Phase kPhases[] = {Phase::Parse,     Phase::Check,    Phase::Lower, Phase::Passes,
                             Phase::Partition, Phase::Schedule, Phase::Emit};

/// The fault --inject-ir-fault makes: an extra axis on the result of the
/// first elementwise op, which its operands do not have.
void breakFirstElementwiseOp(ir::Module &module) {
  for (const auto &fn : module.functions)
    for (const auto &op : fn->ops())
      if (ir::isElementwise(op->kind())) {
        ir::Type t = op->type();
        t.shape.push_back(2);
        op->setType(t);
        return;
      }
}

std::string printed(const ir::Module &module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  ir::print(module, os);
  return os.str();
}

bool runPasses(ir::Module &module, DiagnosticEngine &diags, const IROptions &options,
               const support::Progress &progress, const support::Timing &timing) {
  if (options.passes == "none")
    return true;
  ir::PassManagerOptions pm;
  pm.progress = progress;
  pm.timing = timing;
  pm.printBefore = options.printBefore;
  pm.printAfter = options.printAfter;
  pm.dumpStream = options.passDumps ? options.passDumps : &llvm::errs();
  ir::PassManager passes(pm);
  if (llvm::Error e = passes.addPipeline(options.passes)) {
    reportInternalError(diags, {}, llvm::toString(std::move(e)));
    return false;
  }
  llvm::Expected<bool> changed = passes.run(module);
  if (!changed) {
    reportInternalError(diags, {}, llvm::toString(changed.takeError()));
    return false;
  }
  return true;
}

/// The printed module parses back and prints the same (--verify-roundtrip).
bool roundTrips(const ir::Module &module, DiagnosticEngine &diags) {
  std::string text = printed(module);
  auto parsed = ir::parseModule(text, "<lowered IR>");
  if (!parsed) {
    reportInternalError(diags, {}, "the printed IR does not parse back: " +
                                       llvm::toString(parsed.takeError()));
    return false;
  }
  if (printed(**parsed) != text) {
    reportInternalError(diags, {}, "the printed IR prints differently after parsing it back");
    return false;
  }
  return true;
}

/// The catalogued diagnostic of a scheduler refusal: the DIAG of the same
/// name (scheduler/Refusals.def; a refusal without one does not compile).
DiagID refusalDiagnostic(scheduler::Refusal refusal) {
  switch (refusal) {
#define REFUSAL(name, ...)                                                                         \
  case scheduler::Refusal::name:                                                                   \
    return DiagID::name;
#include "scheduler/Refusals.def"
  }
  return DiagID::ScheduleInternalError;
}

/// A scheduling error as the diagnostic it becomes, kept to be reported
/// later (a candidate partition's, reported only when every one fails).
struct ScheduleFailure {
  DiagID id = DiagID::ScheduleInternalError;
  std::vector<std::string> args;
  ir::Location loc;
  std::vector<std::pair<ir::Location, std::string>> notes;
  std::string message; // the error's text
};

ScheduleFailure scheduleFailure(llvm::Error error) {
  ScheduleFailure f;
  llvm::handleAllErrors(
      std::move(error),
      [&](const scheduler::ScheduleError &e) {
        f.id = refusalDiagnostic(e.refusal);
        f.args = e.args;
        f.loc = e.loc;
        f.notes = e.notes;
        f.message = e.message();
      },
      [&](const llvm::ErrorInfoBase &e) {
        // The encoder refusing the scheduler's instructions.
        f.args = {e.message()};
        f.message = e.message();
      });
  return f;
}

void report(DiagnosticEngine &diags, const ScheduleFailure &f) {
  auto d = diags.reportArgs(f.id, sourceRange(diags.sources(), f.loc), f.args);
  for (const auto &[loc, label] : f.notes)
    d.note(label, sourceRange(diags.sources(), loc));
}

/// `known`: schedules made already, by function (Compilation::schedules);
/// `choices`: what `--partition auto` chose, by function.
std::optional<CompiledProgram> schedule(ir::Module &module, DiagnosticEngine &diags,
                                        const backend::ChipDescription &chip,
                                        const scheduler::ScheduleOptions &options,
                                        std::vector<std::optional<scheduler::Schedule>> &known,
                                        const std::vector<std::optional<PartitionChoice>> &choices) {
  std::vector<scheduler::Schedule> schedules;
  auto program = scheduler::compileModule(module, chip, &schedules, options, &known);
  if (!program) {
    report(diags, scheduleFailure(program.takeError()));
    return std::nullopt;
  }
  CompiledProgram out;
  out.program = std::move(*program);
  size_t k = 0;
  for (const backend::Entry &e : out.program.entries)
    for (const backend::Bucket &b : e.buckets) {
      out.buckets.push_back({e.name, b.dims, std::move(schedules[k]), std::nullopt});
      if (k < choices.size())
        out.buckets.back().partition = choices[k];
      ++k;
    }
  return out;
}

ir::PartitionCosts partitionCosts(const backend::ChipDescription &chip) {
  ir::PartitionCosts costs;
  // f16 multiplies at a quarter of the int8 rate: a plane's 320 x 320 MACs
  // every fourth cycle.
  costs.macsPerCycle = double(chip.mxmPlanes) * chip.mxmDim * chip.mxmDim / 4;
  costs.elementsPerCycle = double(chip.lanes) * chip.vxmAlusPerLane;
  costs.sramBytesPerChip = chip.sramBytes();
  costs.lanes = chip.lanes;
  costs.sliceVectors = chip.memVectors;
  return costs;
}

constexpr PartitionKindName kPartitionKinds[] = {
    // The default first: its error is the one reported when every kind fails.
    {ir::PartitionKind::Pipeline, "pipeline"},
    {ir::PartitionKind::Tensor, "tensor"},
    {ir::PartitionKind::Hybrid, "hybrid"},
};

/// A copy of `fn`, op for op.
std::unique_ptr<ir::Function> cloneFunction(const ir::Function &fn) {
  auto out = std::make_unique<ir::Function>(fn.name(), fn.bucket());
  std::map<const ir::Op *, ir::Op *> copies;
  for (const auto &op : fn.ops()) {
    std::vector<ir::Op *> operands;
    for (const ir::Op *operand : op->operands())
      operands.push_back(copies.at(operand));
    ir::Op *copy = out->append(op->kind(), op->type(), std::move(operands), op->loc());
    for (const auto &[name, value] : op->attrs())
      copy->setAttr(name, value);
    copies[op.get()] = copy;
  }
  return out;
}

/// The param a matmul's weight operand is a view of, or null.
const ir::Op *matmulWeight(const ir::Op *op) {
  while (op->kind() == ir::OpKind::Reshape || op->kind() == ir::OpKind::Transpose ||
         op->kind() == ir::OpKind::Broadcast || op->kind() == ir::OpKind::Convert)
    op = op->operand(0);
  return op->kind() == ir::OpKind::Param ? op : nullptr;
}

/// Partitions `fn` as `kind` with the pins that concern it; an error as the
/// pass gives it, or one naming a `split` pin whose matmul weights stay
/// whole.
llvm::Error partitionAs(ir::Function &fn, ir::PartitionOptions po, ir::PartitionKind kind,
                        const std::vector<ir::PartitionPin> &pins) {
  po.kind = kind;
  po.pins.clear();
  for (const ir::PartitionPin &pin : pins)
    if (pinAppliesTo(pin, kind))
      po.pins.push_back(pin);
  // The matmul weights each split pin must see split.
  std::vector<std::pair<const ir::PartitionPin *, std::set<std::string>>> mustSplit;
  for (const ir::PartitionPin &pin : po.pins)
    if (pin.action == ir::PartitionPin::Action::Split) {
      std::set<std::string> paths;
      for (const auto &op : fn.ops())
        if (op->kind() == ir::OpKind::Matmul)
          if (const ir::Op *w = matmulWeight(op->operand(1)); w && ir::pinMatches(pin, ir::paramPath(*w)))
            paths.insert(ir::paramPath(*w));
      mustSplit.push_back({&pin, std::move(paths)});
    }
  if (llvm::Error e = ir::partitionFunction(fn, po))
    return e;
  std::set<std::string> sharded;
  for (const auto &op : fn.ops())
    if (op->kind() == ir::OpKind::Param && ir::shardOf(*op))
      sharded.insert(ir::paramPath(*op));
  for (const auto &[pin, paths] : mustSplit)
    for (const std::string &path : paths)
      if (!sharded.count(path))
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "pin '" + pin->text + "': the matmul weight '" + path + "' stays whole (no split of it " +
                "closes over " + std::to_string(po.chips) +
                " chips: its split would reach something that reads it whole)");
  return llvm::Error::success();
}

/// The fewest chips the pipeline pins matching `fn`'s weights ask for
/// (`--chips auto`): `chip:N` needs N+1, and each pin may start a stage
/// of its own, so one more chip than the pins (pins that land on one cut
/// leave the extra chips to the balance of the stages).
unsigned pinnedChips(const ir::Function &fn, llvm::ArrayRef<ir::PartitionPin> pins) {
  unsigned most = 1, stages = 0;
  for (const ir::PartitionPin &pin : pins) {
    if (pin.tensor())
      continue;
    const bool matches = llvm::any_of(fn.ops(), [&](const auto &op) {
      return op->kind() == ir::OpKind::Param && ir::pinMatches(pin, ir::paramPath(*op));
    });
    if (!matches)
      continue;
    ++stages;
    if (pin.action == ir::PartitionPin::Action::Chip)
      most = std::max(most, pin.chip + 1);
  }
  return std::max(most, stages + 1);
}

/// Every pin names some weight of the module and, when the kind is given,
/// concerns it (E0602).
bool checkPins(Compilation &c, const ChipsOptions &chips) {
  bool ok = true;
  for (const ir::PartitionPin &pin : chips.pins) {
    bool matched = false;
    std::set<std::string> paths;
    for (const auto &fn : c.ir->functions)
      for (const auto &op : fn->ops())
        if (op->kind() == ir::OpKind::Param) {
          paths.insert(ir::paramPath(*op));
          matched |= ir::pinMatches(pin, ir::paramPath(*op));
        }
    if (!matched) {
      std::string some;
      size_t n = 0;
      for (const std::string &p : paths)
        if (n++ < 6)
          some += (some.empty() ? "" : ", ") + p;
      if (paths.size() > 6)
        some += ", ...";
      c.diags.report(DiagID::PinInvalid, {}, pin.text,
                     "its glob matches no weight of the entries compiled (weights: " +
                         (some.empty() ? std::string("none") : some) + "; lpuc --emit=params lists them)");
      ok = false;
      continue;
    }
    std::optional<ir::PartitionKind> kind = chips.kind;
    if (chips.fewest && !kind)
      kind = ir::PartitionKind::Pipeline;
    if (kind && !pinAppliesTo(pin, *kind)) {
      c.diags.report(DiagID::PinInvalid, {}, pin.text,
                     std::string("it is about ") +
                         (pin.tensor() ? "tensor splits (whole, split)" : "pipeline stages (stage, chip:N)") +
                         ", and the partition is " + partitionKindName(*kind).str());
      ok = false;
    }
  }
  return ok;
}

/// Every function onto its chips (ChipsOptions), the topology chosen. With
/// `--partition auto`, every kind of autoPartitionKinds() is partitioned
/// and scheduled, and the one with the fewest predicted cycles is kept
/// with its schedule (Compilation::schedules).
bool partition(Compilation &c, const PipelineOptions &options, const support::Timing &timing) {
  DiagnosticEngine &diags = c.diags;
  const ChipsOptions &chips = options.chips;
  c.partitionChoices.assign(c.ir->functions.size(), std::nullopt);
  std::set<std::string> warned; // W0601s reported
  std::set<std::string> warnedPartitioned; // W0602s reported
  c.schedules.clear();
  c.schedules.resize(c.ir->functions.size());
  // Functions partitioned already (IR text, lpuc FILE.ir) stay as they
  // are; the topology has their chips.
  unsigned given = 1;
  for (const auto &fn : c.ir->functions)
    for (const auto &op : fn->ops())
      given = std::max(given, unsigned(op->chip()) + 1);
  if (!chips.fewest && chips.chips <= 1 && chips.topology.empty()) {
    c.topology = smallestTopology(given);
    return true;
  }
  if (!options.chip) {
    diags.report(DiagID::ScheduleInternalError, {}, "no chip to partition for");
    return false;
  }
  if (!checkPins(c, chips))
    return false;
  ir::PartitionOptions po;
  po.costs = partitionCosts(*options.chip);
  const bool automatic = !chips.kind && !chips.fewest;
  const ir::PartitionKind kind = chips.kind.value_or(ir::PartitionKind::Pipeline);
  po.kind = kind;
  unsigned most = std::max(given, chips.fewest ? 1 : chips.chips);
  // The candidates of `auto` are scheduled for the topology the program
  // will have (known before partitioning: the chips are given).
  auto topologyHolds = [&](const std::string &name, unsigned needed) {
    auto topology = backend::Topology::parse(name, options.chip->c2cLinks);
    if (!topology) {
      c.selectionError = llvm::toString(topology.takeError());
      return false;
    }
    if (topology->numChips() < needed) {
      c.selectionError = "topology '" + name + "' has " + std::to_string(topology->numChips()) +
                         " chips, the program needs " + std::to_string(needed);
      return false;
    }
    return true;
  };
  scheduler::ScheduleOptions scheduling = options.schedule;
  scheduling.topology = chips.topology.empty() ? smallestTopology(most) : chips.topology;
  if (automatic && !topologyHolds(scheduling.topology, most))
    return false;
  for (size_t index = 0; index < c.ir->functions.size(); ++index) {
    std::unique_ptr<ir::Function> &fn = c.ir->functions[index];
    if (scheduler::isPartitioned(*fn)) {
      // Its own partition is scheduled: the flags that would partition it
      // are said to do nothing, once an entry.
      if ((chips.chips > 1 || chips.fewest || chips.kind || !chips.pins.empty()) &&
          warnedPartitioned.insert(fn->name()).second) {
        unsigned placed = 1;
        for (const auto &op : fn->ops())
          placed = std::max(placed, unsigned(op->chip()) + 1);
        const ir::Op *ret = fn->terminator();
        diags.report(DiagID::PartitionedAlready,
                     ret ? sourceRange(diags.sources(), ret->loc()) : llvm::SMRange{}, fn->name(),
                     std::to_string(placed), "--chips, --partition and --pin");
      }
      continue;
    }
    const std::string title = scheduler::bucketTitle(*fn);
    const support::Progress progress = options.progress.inner();
    progress.status(title + " (" + llvm::Twine(index + 1) + " of " +
                    llvm::Twine(c.ir->functions.size()) + ")");
    support::TimedScope timedFunction(timing, title);
    const ir::Op *ret = fn->terminator();
    llvm::SMRange at = ret ? sourceRange(diags.sources(), ret->loc()) : llvm::SMRange{};
    po.chips = chips.chips;
    po.fewest = chips.fewest && kind == ir::PartitionKind::Hybrid;
    if (po.fewest) {
      // Hybrid: the fewest groups (nodes) whose chips hold the weights,
      // found on the function split over a group.
      po.chips = po.groupSize;
    } else if (chips.fewest) {
      auto fewest = ir::minimumChips(*fn, po.costs);
      if (!fewest) {
        diags.report(DiagID::PartitionFails, at, fn->name(), "any number of",
                     llvm::toString(fewest.takeError()));
        return false;
      }
      // Pins of stages ask for chips of their own even where one chip
      // holds the weights.
      po.chips = std::max(*fewest, pinnedChips(*fn, chips.pins));
      most = std::max(most, po.chips);
    }
    if (po.chips <= 1)
      continue;
    auto verified = [&](ir::Function &f) {
      std::vector<ir::VerifyError> errors = ir::verify(f);
      if (errors.empty())
        return true;
      reportInternalError(diags, {}, "the partitioned IR does not verify:\n" +
                                         ir::describeVerifyErrors(f, errors));
      return false;
    };
    if (!automatic) {
      if (llvm::Error e = partitionAs(*fn, po, kind, chips.pins)) {
        diags.report(DiagID::PartitionFails, at, fn->name(),
                     po.fewest ? "any number of" : std::to_string(po.chips),
                     llvm::toString(std::move(e)));
        return false;
      }
      for (const auto &op : fn->ops())
        most = std::max(most, unsigned(op->chip()) + 1);
      if (!verified(*fn))
        return false;
      continue;
    }
    // Each kind on a copy, scheduled; the fewest cycles win (the first
    // kind on a tie).
    PartitionChoice choice;
    // Kinds that failed with pins of theirs given: the pins were meant for
    // them, so another kind winning is worth a warning.
    std::vector<std::pair<std::string, std::string>> pinnedFailures;
    std::unique_ptr<ir::Function> best;
    std::optional<scheduler::Schedule> bestSchedule;
    std::string defaultPartitionError;
    std::unique_ptr<ir::Function> defaultPartitioned;
    for (const PartitionKindName &k : autoPartitionKinds()) {
      const bool isDefault = &k == &autoPartitionKinds().front();
      // Hybrid on one group is the tensor partition.
      if (k.kind == ir::PartitionKind::Hybrid && po.chips <= po.groupSize)
        continue;
      PartitionChoice::Candidate candidate;
      candidate.kind = k.name.str();
      progress.inner().status(k.name);
      support::TimedScope timedKind(timedFunction.timing(), k.name);
      std::unique_ptr<ir::Function> copy = cloneFunction(*fn);
      if (llvm::Error e = partitionAs(*copy, po, k.kind, chips.pins)) {
        candidate.error = diagKindInfo(DiagID::PartitionFails).code;
        candidate.message = llvm::toString(std::move(e));
        if (isDefault)
          defaultPartitionError = candidate.message;
        if (llvm::any_of(chips.pins, [&](const ir::PartitionPin &pin) { return pinAppliesTo(pin, k.kind); }))
          pinnedFailures.push_back({k.name.str(), candidate.message});
        choice.candidates.push_back(std::move(candidate));
        continue;
      }
      if (!verified(*copy))
        return false;
      scheduler::ScheduleOptions candidateScheduling = scheduling;
      candidateScheduling.progress = progress.inner().inner();
      candidateScheduling.timing = timedKind.timing();
      auto scheduled = scheduler::scheduleMultiChip(*copy, *options.chip, candidateScheduling);
      if (!scheduled) {
        ScheduleFailure failure = scheduleFailure(scheduled.takeError());
        candidate.error = diagKindInfo(failure.id).code;
        candidate.message = failure.message;
        if (isDefault)
          defaultPartitioned = std::move(copy);
        choice.candidates.push_back(std::move(candidate));
        continue;
      }
      candidate.cycles = scheduled->cycles;
      choice.candidates.push_back(std::move(candidate));
      if (!bestSchedule || scheduled->cycles < bestSchedule->cycles) {
        choice.chosen = k.name.str();
        best = std::move(copy);
        bestSchedule = std::move(*scheduled);
      }
    }
    if (!best && !defaultPartitioned) {
      diags.report(DiagID::PartitionFails, at, fn->name(), std::to_string(po.chips),
                   defaultPartitionError);
      return false;
    }
    if (!best) {
      // No kind schedules, the default partitions: it is the partition
      // (what --emit=ir prints), and `schedule` reports its error.
      fn = std::move(defaultPartitioned);
      continue;
    }
    // Once an entry (its buckets fail alike).
    for (const auto &[kind, message] : pinnedFailures)
      if (warned.insert(fn->name() + "\n" + kind + "\n" + message + "\n" + choice.chosen).second)
        diags.report(DiagID::PinnedKindFails, at, fn->name(), kind, message, choice.chosen);
    fn = std::move(best);
    c.partitionChoices[index] = std::move(choice);
    c.schedules[index] = std::move(bestSchedule);
  }
  c.topology = chips.topology.empty() ? smallestTopology(most) : chips.topology;
  return topologyHolds(c.topology, most);
}

/// Runs one phase; false when it reported an error.
bool runPhase(Compilation &c, Phase phase, const PipelineOptions &options,
              const support::Timing &timing) {
  DiagnosticEngine &diags = c.diags;
  unsigned errors = diags.errorCount();
  switch (phase) {
  case Phase::Parse: {
    const llvm::MemoryBuffer &buffer = *diags.sources().getMemoryBuffer(c.bufferId);
    if (buffer.getBufferSize() == 0) {
      llvm::SMLoc start = llvm::SMLoc::getFromPointer(buffer.getBufferStart());
      diags.report(DiagID::EmptyFile, {start, start}, buffer.getBufferIdentifier());
    }
    c.ast = parseModule(diags, c.bufferId, options.check.parse);
    return c.ast && diags.errorCount() == errors;
  }
  case Phase::Check: {
    CheckOptions check = options.check;
    check.recordTypes |= llvm::is_contained(options.dumpAfter, Phase::Check);
    // Past `check`, the checker lowers as it instantiates: one walk.
    if (options.last == Phase::Check)
      c.checked = checkProgram(*c.ast, diags, check);
    else
      c.ir = lowerProgram(*c.ast, diags, check, &c.checked);
    if (diags.errorCount() != errors || (options.last != Phase::Check && !c.ir))
      return false;
    // --entry names entries that exist, however far the run goes (a plain
    // check, --emit=types, -o): a name that is none is refused here.
    std::vector<std::string> names;
    for (const EntryReport &e : c.checked.entries)
      names.push_back(e.name);
    if (llvm::Error e = entriesExist(names, options.select.entries)) {
      c.selectionError = llvm::toString(std::move(e));
      return false;
    }
    return true;
  }
  case Phase::Lower:
    if (options.ir.injectFault)
      breakFirstElementwiseOp(*c.ir);
    if (!verifyLowered(*c.ir, diags))
      return false;
    // A plain check ends here: the entries and buckets selected must still
    // agree on their states (E0702), as they do when compiled.
    if (options.last == Phase::Lower && options.statesAgree) {
      if (llvm::Error e = selectBuckets(*c.ir, options.select)) {
        c.selectionError = llvm::toString(std::move(e));
        return false;
      }
      return statesAgree(*c.ir, diags);
    }
    return true;
  case Phase::Passes:
    if (llvm::Error e = selectBuckets(*c.ir, options.select)) {
      c.selectionError = llvm::toString(std::move(e));
      return false;
    }
    if (!statesAgree(*c.ir, diags))
      return false;
    if (!runPasses(*c.ir, diags, options.ir, options.progress.inner(), timing))
      return false;
    return !options.ir.roundTrip || roundTrips(*c.ir, diags);
  case Phase::Partition:
    return partition(c, options, timing);
  case Phase::Schedule: {
    if (!options.chip) {
      diags.report(DiagID::ScheduleInternalError, {}, "no chip to schedule for");
      return false;
    }
    scheduler::ScheduleOptions scheduling = options.schedule;
    scheduling.topology = c.topology;
    scheduling.progress = options.progress.inner();
    scheduling.timing = timing;
    c.compiled = schedule(*c.ir, diags, *options.chip, scheduling, c.schedules, c.partitionChoices);
    return c.compiled.has_value();
  }
  case Phase::Emit:
    c.binary = backend::writeProgramBinary(c.compiled->program);
    return true;
  }
  return false;
}

} // namespace

llvm::ArrayRef<Phase> allPhases() { return kPhases; }

llvm::ArrayRef<PartitionKindName> autoPartitionKinds() { return kPartitionKinds; }

llvm::StringRef partitionKindName(ir::PartitionKind kind) {
  for (const PartitionKindName &k : kPartitionKinds)
    if (k.kind == kind)
      return k.name;
  return "?";
}

bool pinAppliesTo(const ir::PartitionPin &pin, ir::PartitionKind kind) {
  switch (kind) {
  case ir::PartitionKind::Pipeline:
    return !pin.tensor();
  case ir::PartitionKind::Tensor:
    return pin.tensor();
  default:
    return true;
  }
}

llvm::StringRef phaseName(Phase phase) {
  switch (phase) {
  case Phase::Parse: return "parse";
  case Phase::Check: return "check";
  case Phase::Lower: return "lower";
  case Phase::Passes: return "passes";
  case Phase::Partition: return "partition";
  case Phase::Schedule: return "schedule";
  case Phase::Emit: return "emit";
  }
  return "?";
}

std::optional<Phase> parsePhase(llvm::StringRef name) {
  for (Phase p : kPhases)
    if (phaseName(p) == name)
      return p;
  return std::nullopt;
}

std::string smallestTopology(unsigned chips) {
  if (chips <= 1)
    return "single";
  if (chips <= 8)
    return "node";
  return "dragonfly:" + std::to_string((chips + 7) / 8);
}

std::string phaseList() {
  std::string out;
  for (Phase p : kPhases)
    out += (out.empty() ? "" : ", ") + phaseName(p).str();
  return out;
}

bool runPipeline(Compilation &c, const PipelineOptions &options) {
  using Clock = std::chrono::steady_clock;
  for (Phase phase : kPhases) {
    if (phase > options.last)
      break;
    if (phase < options.first)
      continue;
    options.progress.status(phaseName(phase));
    support::TimedScope timed(options.timing, phaseName(phase));
    auto wall = Clock::now();
    std::clock_t cpu = std::clock();
    bool ok = runPhase(c, phase, options, timed.timing());
    c.times.push_back({phase, std::chrono::duration<double>(Clock::now() - wall).count(),
                       double(std::clock() - cpu) / CLOCKS_PER_SEC});
    timed.stop();
    if (!ok)
      return false;
    c.done = phase;
    if (llvm::is_contained(options.dumpAfter, phase))
      dumpPhase(c, phase, options, options.dumps ? *options.dumps : llvm::errs());
  }
  return true;
}

void dumpPhase(const Compilation &c, Phase phase, const PipelineOptions &options,
               llvm::raw_ostream &os) {
  if (!c.done || *c.done < phase)
    return;
  switch (phase) {
  case Phase::Parse:
    printAST(*c.ast, c.diags.sources(), os);
    return;
  case Phase::Check:
    printTypes(c.checked, os);
    return;
  case Phase::Lower:
  case Phase::Passes:
  case Phase::Partition:
    // After `partition`, the IR the scheduler gets; after `lower`, the IR
    // as lowered (dumped before the passes change it).
    ir::print(*c.ir, os);
    return;
  case Phase::Schedule:
    printScheduleReport(*c.compiled, *options.chip, os);
    return;
  case Phase::Emit:
    os << backend::printProgramText(c.compiled->program);
    return;
  }
}

} // namespace lpu::driver
