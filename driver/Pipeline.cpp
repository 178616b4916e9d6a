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

bool runPasses(ir::Module &module, DiagnosticEngine &diags, const IROptions &options) {
  if (options.passes == "none")
    return true;
  ir::PassManagerOptions pm;
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

std::optional<CompiledProgram> schedule(ir::Module &module, DiagnosticEngine &diags,
                                        const backend::ChipDescription &chip,
                                        const scheduler::ScheduleOptions &options) {
  std::vector<scheduler::Schedule> schedules;
  auto program = scheduler::compileModule(module, chip, &schedules, options);
  if (!program) {
    llvm::handleAllErrors(
        program.takeError(),
        [&](const scheduler::ScheduleError &e) {
          auto d = diags.reportArgs(refusalDiagnostic(e.refusal),
                                    sourceRange(diags.sources(), e.loc), e.args);
          for (const auto &[loc, label] : e.notes)
            d.note(label, sourceRange(diags.sources(), loc));
        },
        [&](const llvm::ErrorInfoBase &e) {
          // The encoder refusing the scheduler's instructions.
          diags.report(DiagID::ScheduleInternalError, {}, e.message());
        });
    return std::nullopt;
  }
  CompiledProgram out;
  out.program = std::move(*program);
  size_t k = 0;
  for (const backend::Entry &e : out.program.entries)
    for (const backend::Bucket &b : e.buckets)
      out.buckets.push_back({e.name, b.dims, std::move(schedules[k++])});
  return out;
}

ir::PartitionCosts partitionCosts(const backend::ChipDescription &chip) {
  ir::PartitionCosts costs;
  // f16 multiplies at a quarter of the int8 rate: a plane's 320 x 320 MACs
  // every fourth cycle.
  costs.macsPerCycle = double(chip.mxmPlanes) * chip.mxmDim * chip.mxmDim / 4;
  costs.elementsPerCycle = double(chip.lanes) * chip.vxmAlusPerLane;
  costs.sramBytesPerChip = chip.sramBytes();
  return costs;
}

/// Every function onto its chips (ChipsOptions), the topology chosen.
bool partition(Compilation &c, const PipelineOptions &options) {
  DiagnosticEngine &diags = c.diags;
  const ChipsOptions &chips = options.chips;
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
  ir::PartitionOptions po;
  po.costs = partitionCosts(*options.chip);
  po.kind = chips.hybrid   ? ir::PartitionKind::Hybrid
            : chips.tensor ? ir::PartitionKind::Tensor
                           : ir::PartitionKind::Pipeline;
  unsigned most = std::max(given, chips.fewest ? 1 : chips.chips);
  for (const auto &fn : c.ir->functions) {
    if (scheduler::isPartitioned(*fn))
      continue;
    const ir::Op *ret = fn->terminator();
    llvm::SMRange at = ret ? sourceRange(diags.sources(), ret->loc()) : llvm::SMRange{};
    po.chips = chips.chips;
    po.fewest = chips.fewest && po.kind == ir::PartitionKind::Hybrid;
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
      po.chips = *fewest;
      most = std::max(most, *fewest);
    }
    if (po.chips <= 1)
      continue;
    if (llvm::Error e = ir::partitionFunction(*fn, po)) {
      diags.report(DiagID::PartitionFails, at, fn->name(),
                   po.fewest ? "any number of" : std::to_string(po.chips),
                   llvm::toString(std::move(e)));
      return false;
    }
    for (const auto &op : fn->ops())
      most = std::max(most, unsigned(op->chip()) + 1);
    std::vector<ir::VerifyError> errors = ir::verify(*fn);
    if (!errors.empty()) {
      reportInternalError(diags, {}, "the partitioned IR does not verify:\n" +
                                         ir::describeVerifyErrors(*fn, errors));
      return false;
    }
  }
  c.topology = chips.topology.empty() ? smallestTopology(most) : chips.topology;
  auto topology = backend::Topology::parse(c.topology, options.chip->c2cLinks);
  if (!topology) {
    c.selectionError = llvm::toString(topology.takeError());
    return false;
  }
  if (topology->numChips() < most) {
    c.selectionError = "topology '" + c.topology + "' has " + std::to_string(topology->numChips()) +
                       " chips, the program needs " + std::to_string(most);
    return false;
  }
  return true;
}

/// Runs one phase; false when it reported an error.
bool runPhase(Compilation &c, Phase phase, const PipelineOptions &options) {
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
    if (options.last == Phase::Check) {
      c.checked = checkProgram(*c.ast, diags, check);
      return diags.errorCount() == errors;
    }
    c.ir = lowerProgram(*c.ast, diags, check, &c.checked);
    return c.ir && diags.errorCount() == errors;
  }
  case Phase::Lower:
    if (options.ir.injectFault)
      breakFirstElementwiseOp(*c.ir);
    return verifyLowered(*c.ir, diags);
  case Phase::Passes:
    if (llvm::Error e = selectBuckets(*c.ir, options.select)) {
      c.selectionError = llvm::toString(std::move(e));
      return false;
    }
    if (!runPasses(*c.ir, diags, options.ir))
      return false;
    return !options.ir.roundTrip || roundTrips(*c.ir, diags);
  case Phase::Partition:
    return partition(c, options);
  case Phase::Schedule: {
    if (!options.chip) {
      diags.report(DiagID::ScheduleInternalError, {}, "no chip to schedule for");
      return false;
    }
    scheduler::ScheduleOptions scheduling = options.schedule;
    scheduling.topology = c.topology;
    c.compiled = schedule(*c.ir, diags, *options.chip, scheduling);
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
    auto wall = Clock::now();
    std::clock_t cpu = std::clock();
    bool ok = runPhase(c, phase, options);
    c.times.push_back({phase, std::chrono::duration<double>(Clock::now() - wall).count(),
                       double(std::clock() - cpu) / CLOCKS_PER_SEC});
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
