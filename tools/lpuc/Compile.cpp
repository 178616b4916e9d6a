#include "tools/lpuc/Compile.h"

#include "frontend/Lower.h"
#include "ir/Pass.h"
#include "scheduler/Scheduler.h"

#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>

namespace lpu {

namespace {

std::string bucketLabel(const std::vector<backend::BucketDim> &dims) {
  std::string out;
  for (const backend::BucketDim &d : dims)
    out += (out.empty() ? "" : " ") + d.name + "=" + std::to_string(d.value);
  return out.empty() ? "(no bucket sizes)" : out;
}

/// Issue cycles over cycles x queues: the fraction of the unit kind's
/// issue slots the schedule uses.
double unitUtilisation(const scheduler::Schedule &s, const backend::ChipDescription &chip,
                       unsigned unit) {
  unsigned queues = chip.queues[unit];
  return s.cycles && queues ? double(s.busy[unit]) / (double(s.cycles) * queues) : 0.0;
}

} // namespace

std::optional<CompiledProgram> compileProgram(const ast::Module &module, DiagnosticEngine &diags,
                                              const CheckOptions &options,
                                              const backend::ChipDescription &chip,
                                              const EmitIROptions &passes,
                                              const scheduler::ScheduleOptions &schedule) {
  auto lowered = lowerProgram(module, diags, options);
  if (!lowered || !verifyLowered(*lowered, diags))
    return std::nullopt;
  if (!runPasses(*lowered, diags, passes))
    return std::nullopt;
  CompiledProgram out;
  std::vector<scheduler::Schedule> schedules;
  auto program = scheduler::compileModule(*lowered, chip, &schedules, schedule);
  if (!program) {
    bool reported = false;
    llvm::handleAllErrors(
        program.takeError(),
        [&](const scheduler::ScheduleError &e) {
          reported = true;
          auto d = diags.report(e.kind == scheduler::ScheduleError::Kind::DoesNotFit
                                    ? DiagID::SramFull
                                    : DiagID::CannotSchedule,
                                sourceRange(diags.sources(), e.loc), e.message);
          for (const auto &[loc, label] : e.notes)
            d.note(label, sourceRange(diags.sources(), loc));
        },
        [&](const llvm::ErrorInfoBase &e) {
          reported = true;
          diags.report(DiagID::CannotSchedule, {}, "internal error: " + e.message());
        });
    (void)reported;
    return std::nullopt;
  }
  out.program = std::move(*program);
  size_t k = 0;
  for (const backend::Entry &e : out.program.entries)
    for (const backend::Bucket &b : e.buckets)
      out.buckets.push_back({e.name, b.dims, std::move(schedules[k++])});
  return out;
}

void printScheduleReport(const CompiledProgram &compiled, const backend::ChipDescription &chip,
                         llvm::raw_ostream &os) {
  for (const CompiledProgram::BucketInfo &b : compiled.buckets) {
    const scheduler::Schedule &s = b.schedule;
    os << "entry " << b.entry << ", bucket " << bucketLabel(b.dims) << "\n";
    os << "  predicted cycles: " << s.cycles
       << llvm::format(" (%.3f us at %g MHz)\n", double(s.cycles) / chip.clockMHz, chip.clockMHz);
    os << "  lower bound: " << s.lowerBound << " cycles (" << s.lowerBoundReason << ")"
       << llvm::format(", ratio %.2f\n", s.lowerBound ? double(s.cycles) / s.lowerBound : 0.0);
    os << "  utilisation:";
    for (unsigned u = 0; u < backend::kNumUnitKinds; ++u) {
      os << " " << backend::unitKindName(backend::UnitKind(u))
         << llvm::format(" %.1f%%", 100 * unitUtilisation(s, chip, u));
    }
    os << "\n";
    os << "  SRAM: " << s.sramBytes << " bytes at the peak"
       << llvm::format(" (%.2f%% of ", 100.0 * double(s.sramBytes) / double(chip.sramBytes()))
       << chip.sramBytes() << ")\n";
  }
}

void printScheduleReportJson(const CompiledProgram &compiled,
                             const backend::ChipDescription &chip, llvm::raw_ostream &os) {
  llvm::json::Array buckets;
  for (const CompiledProgram::BucketInfo &b : compiled.buckets) {
    const scheduler::Schedule &s = b.schedule;
    llvm::json::Object dims;
    for (const backend::BucketDim &d : b.dims)
      dims[d.name] = d.value;
    llvm::json::Object busy, utilisation;
    for (unsigned u = 0; u < backend::kNumUnitKinds; ++u) {
      llvm::StringRef unit = backend::unitKindName(backend::UnitKind(u));
      busy[unit] = s.busy[u];
      utilisation[unit] = unitUtilisation(s, chip, u);
    }
    buckets.push_back(llvm::json::Object{
        {"entry", b.entry},
        {"bucket", std::move(dims)},
        {"cycles", s.cycles},
        {"time_us", double(s.cycles) / chip.clockMHz},
        {"busy_cycles", std::move(busy)},
        {"utilisation", std::move(utilisation)},
        {"sram_bytes", int64_t(s.sramBytes)},
        {"lower_bound", s.lowerBound},
        {"lower_bound_reason", s.lowerBoundReason},
        {"ratio", s.lowerBound ? double(s.cycles) / double(s.lowerBound) : 0.0}});
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                   {"chip", chip.name},
                                   {"clock_mhz", chip.clockMHz},
                                   {"buckets", std::move(buckets)}}))
     << "\n";
}

} // namespace lpu
