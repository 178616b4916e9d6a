#include "driver/Compile.h"

#include "frontend/Lower.h"
#include "ir/Pass.h"
#include "backend/Bucketing.h"
#include "scheduler/Scheduler.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>

#include <algorithm>
#include <map>

namespace lpu::driver {

/// Issue cycles over cycles x queues, pooled over the chips a multi-chip
/// schedule uses.
double unitUtilisation(const scheduler::Schedule &s, const backend::ChipDescription &chip,
                       unsigned unit) {
  double queues = double(chip.queues[unit]) * double(std::max<size_t>(1, s.chips.size()));
  return s.cycles && queues ? double(s.busy[unit]) / (double(s.cycles) * queues) : 0.0;
}

std::string locationText(const ir::Location &loc) { return loc.known() ? loc.str() : "no source"; }

namespace {

/// The cycles a chip's links are busy sending its bytes.
int64_t linkCycles(const scheduler::ChipFigures &f, const backend::ChipDescription &chip) {
  return int64_t(f.linkBytesSent / chip.lanes) * chip.c2cCyclesPerVector;
}

/// The longest span of one chip's work from the arrival of its first input
/// to its last result: with requests streaming through a pipeline, one
/// inference leaves every that many cycles (an estimate: it assumes that a
/// chip's work before its first input arrives, loading weights, overlaps
/// the previous request's).
/// The pipelined interval: the longest stage's span from its first input
/// to its last result; a stage is a chip, or a lockstep group (0 for a
/// single group: not a pipeline).
int64_t longestSpan(const scheduler::Schedule &s) {
  if (s.lockstep && s.groups < 2)
    return 0;
  std::map<unsigned, std::pair<int64_t, int64_t>> stage; // first input, last result
  for (const scheduler::ChipFigures &f : s.chips) {
    unsigned key = s.lockstep ? f.group : f.chip;
    auto [it, fresh] = stage.try_emplace(key, f.firstCycle, f.cycles);
    it->second.first = std::min(it->second.first, f.firstCycle);
    it->second.second = std::max(it->second.second, f.cycles);
  }
  int64_t span = 0;
  for (const auto &[key, firstLast] : stage)
    span = std::max(span, firstLast.second - firstLast.first);
  return span;
}

} // namespace

llvm::Expected<std::vector<backend::BucketDim>> parseBucketSpec(llvm::StringRef spec) {
  llvm::SmallVector<llvm::StringRef, 4> parts;
  spec.split(parts, ',');
  std::vector<backend::BucketDim> dims;
  for (llvm::StringRef part : parts) {
    auto [name, value] = part.split('=');
    int64_t n = 0;
    if (name.empty() || value.getAsInteger(10, n) || n < 0 ||
        !llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "expected DIM=N[,DIM=N...], got '" + spec + "'");
    // A bucket has one size of a dimension: B=3,B=8 would select none.
    if (llvm::any_of(dims, [&](const backend::BucketDim &d) { return d.name == name; }))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "'" + spec + "' names " + name +
                                         " twice (give each size its own --bucket)");
    dims.push_back({name.str(), n});
  }
  return dims;
}

llvm::Error entriesExist(llvm::ArrayRef<std::string> entries, llvm::ArrayRef<std::string> asked) {
  for (const std::string &e : asked)
    if (!llvm::is_contained(entries, e)) {
      std::vector<std::string> seen;
      std::string known;
      for (const std::string &name : entries)
        if (!llvm::is_contained(seen, name)) {
          seen.push_back(name);
          known += (known.empty() ? "" : ", ") + name;
        }
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "no entry '" + e + "' (entries: " + known + ")");
    }
  return llvm::Error::success();
}

llvm::Error selectBuckets(ir::Module &module, const BucketSelection &select) {
  auto has = [](const ir::Function &fn, const std::vector<backend::BucketDim> &dims) {
    for (const backend::BucketDim &d : dims) {
      bool found = false;
      for (const auto &[name, value] : fn.bucket())
        found |= name == d.name && value == d.value;
      if (!found)
        return false;
    }
    return true;
  };
  // Each once, in program order.
  auto list = [](const std::vector<std::string> &items) {
    std::vector<std::string> seen;
    std::string out;
    for (const std::string &i : items)
      if (std::find(seen.begin(), seen.end(), i) == seen.end()) {
        seen.push_back(i);
        out += (out.empty() ? "" : ", ") + i;
      }
    return out;
  };
  std::vector<std::string> entries, buckets;
  for (const auto &fn : module.functions)
    entries.push_back(fn->name());
  if (llvm::Error e = entriesExist(entries, select.entries))
    return e;
  auto entrySelected = [&](const ir::Function &fn) {
    return select.entries.empty() ||
           std::find(select.entries.begin(), select.entries.end(), fn.name()) != select.entries.end();
  };
  // The buckets a --bucket may choose from: those of the entries selected.
  for (const auto &fn : module.functions) {
    if (!entrySelected(*fn))
      continue;
    std::vector<backend::BucketDim> dims;
    for (const auto &[name, value] : fn->bucket())
      dims.push_back({name, value});
    buckets.push_back(fn->name() + " " + backend::bucketLabel(dims));
  }
  for (const std::vector<backend::BucketDim> &dims : select.buckets) {
    bool any = false;
    for (const auto &fn : module.functions)
      any |= entrySelected(*fn) && has(*fn, dims);
    if (!any)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "no bucket " + backend::bucketLabel(dims) + " (buckets: " + list(buckets) + ")");
  }
  auto keep = [&](const ir::Function &fn) {
    if (!entrySelected(fn))
      return false;
    if (select.buckets.empty())
      return true;
    for (const std::vector<backend::BucketDim> &dims : select.buckets)
      if (has(fn, dims))
        return true;
    return false;
  };
  std::vector<std::unique_ptr<ir::Function>> kept;
  for (auto &fn : module.functions)
    if (keep(*fn))
      kept.push_back(std::move(fn));
  module.functions = std::move(kept);
  return llvm::Error::success();
}

namespace {

/// 469536 -> "469,536".
std::string withCommas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

/// The candidates fastest first, failures after them in the order tried.
std::vector<PartitionChoice::Candidate> ranked(const PartitionChoice &choice) {
  std::vector<PartitionChoice::Candidate> out = choice.candidates;
  std::stable_sort(out.begin(), out.end(), [](const auto &a, const auto &b) {
    if (a.ok() != b.ok())
      return a.ok();
    return a.ok() && a.cycles < b.cycles;
  });
  return out;
}

} // namespace

std::string describePartitionChoice(const PartitionChoice &choice) {
  std::string out = "partition: " + choice.chosen + " (auto:";
  bool first = true;
  for (const PartitionChoice::Candidate &c : ranked(choice)) {
    out += first ? " " : ", ";
    out += c.kind + (c.ok() ? " " + withCommas(c.cycles) + (first ? " cycles" : "")
                            : " failed (" + c.error + ")");
    first = false;
  }
  return out + ")";
}

void printSchedulePlan(const CompiledProgram &compiled, llvm::raw_ostream &os) {
  for (const CompiledProgram::BucketInfo &b : compiled.buckets) {
    const scheduler::Plan &plan = b.schedule.plan;
    os << "entry " << b.entry << ", bucket " << backend::bucketLabel(b.dims) << "\n";
    os << "  knobs: " << llvm::join(plan.knobs, " ") << "\n";
    // Each chip searches and stores for itself: its choices under its
    // number.
    auto choices = [&](const std::string &prefix, const std::vector<std::string> &heuristics,
                       const std::vector<std::pair<std::string, int64_t>> &tried, const std::string &parameters) {
      os << "  " << prefix << "heuristics: "
         << (heuristics.empty() ? std::string("none") : llvm::join(heuristics, ",")) << "\n";
      for (const auto &[set, cycles] : tried) {
        os << "    tried " << set << ": ";
        if (cycles < 0)
          os << "failed";
        else
          os << cycles << " cycles";
        os << "\n";
      }
      os << "  " << prefix << "parameters: " << parameters << "\n";
    };
    if (plan.chips.empty())
      choices("", plan.heuristics, plan.tried, plan.parameters);
    for (const scheduler::ChipPlan &chip : plan.chips) {
      const std::string prefix = "chip " + std::to_string(chip.chip) + ": ";
      if (chip.shares)
        os << "  " << prefix << "runs chip " << *chip.shares << "'s schedule\n";
      else
        choices(prefix, chip.heuristics, chip.tried, chip.parameters);
    }
    const bool chips = !b.schedule.chips.empty();
    for (const scheduler::PlanStep &step : plan.steps) {
      os << "  ";
      if (chips)
        os << "chip " << step.chip << ": ";
      os << step.op << " " << step.type << " at " << locationText(step.loc) << ": " << step.what << "\n";
    }
  }
}

void printScheduleReport(const CompiledProgram &compiled, const backend::ChipDescription &chip,
                         llvm::raw_ostream &os, bool ops) {
  for (const CompiledProgram::BucketInfo &b : compiled.buckets) {
    const scheduler::Schedule &s = b.schedule;
    os << "entry " << b.entry << ", bucket " << backend::bucketLabel(b.dims) << "\n";
    os << "  predicted cycles: " << s.cycles
       << llvm::format(" (%.3f us at %g MHz)\n", double(s.cycles) / chip.clockMHz, chip.clockMHz);
    os << "  lower bound: " << s.lowerBound << " cycles (" << s.lowerBoundReason << ")"
       << llvm::format(", ratio %.2f\n", s.lowerBound ? double(s.cycles) / s.lowerBound : 0.0);
    const scheduler::PhysicalBound &p = s.physical;
    os << "  physical bound: " << p.cycles << " cycles (" << p.resource << ")"
       << llvm::format(", ratio %.2f", p.cycles ? double(s.cycles) / p.cycles : 0.0) << "; MXM " << p.mxm
       << ", weight loads " << p.weights << ", SRAM ports " << p.sram << ", VXM " << p.vxm << ", SXM " << p.sxm;
    if (p.links)
      os << ", links " << p.links;
    os << ", chain " << p.chain << "\n";
    os << "  utilisation:";
    for (unsigned u = 0; u < backend::kNumUnitKinds; ++u) {
      os << " " << backend::unitKindName(backend::UnitKind(u))
         << llvm::format(" %.1f%%", 100 * unitUtilisation(s, chip, u));
    }
    os << "\n";
    os << "  SRAM: " << s.sramBytes << " bytes at the peak"
       << (s.chips.empty() ? "" : " on the fullest chip")
       << llvm::format(" (%.2f%% of ", 100.0 * double(s.sramBytes) / double(chip.sramBytes()))
       << chip.sramBytes() << ")\n";
    if (!s.chips.empty()) {
      os << "  chips: " << s.chips.size() << " of topology " << s.topology << " ("
         << s.topologyChips << "), " << s.distinctChips << " scheduled"
         << (s.distinctChips < s.chips.size() ? ", the others sharing one of their schedules" : "")
         << "\n";
      for (const scheduler::ChipFigures &f : s.chips) {
        if (f.cycles == 0 && f.sramBytes == 0 && f.linkBytesSent == 0) {
          os << "    chip " << f.chip << ": idle\n";
          continue;
        }
        os << "    chip " << f.chip << ": first input at " << f.firstCycle << ", done at " << f.cycles << ", SRAM "
           << f.sramBytes << " bytes, sent " << f.linkBytesSent << " bytes";
        if (f.linkBytesSent)
          os << llvm::format(" (links busy %lld cycles)", (long long)linkCycles(f, chip));
        os << ", lower bound " << f.lowerBound << " (" << f.lowerBoundReason << ")\n";
      }
      int64_t span = longestSpan(s);
      if (s.lockstep && s.groups > 1)
        os << "  lockstep in " << s.groups
           << " groups (the chips of a group send to each other both ways), pipelined across "
              "them: one inference every "
           << span << " cycles (the longest group's span from its first input to its last result)"
           << llvm::format(", %.0f inferences/s at %g MHz\n", chip.clockMHz * 1e6 / double(span),
                           chip.clockMHz);
      else if (s.lockstep)
        os << "  lockstep: the chips send to each other both ways, scheduled together (not a "
              "pipeline)\n";
      else if (span > 0)
        os << "  pipelined: one inference every " << span
           << " cycles (the longest chip's span from its first input to its last result)"
           << llvm::format(", %.0f inferences/s at %g MHz\n", chip.clockMHz * 1e6 / double(span),
                           chip.clockMHz);
    }
    if (b.partition)
      os << "  " << describePartitionChoice(*b.partition) << "\n";
    if (!ops)
      continue;
    os << "  ops, in the order they were scheduled (cycles of their instructions; rows: "
          "when the first and the last is ready, and the earliest the critical path allows):\n";
    for (const scheduler::OpTiming &t : s.ops) {
      os << "    " << t.op << " " << t.type << " at " << locationText(t.loc) << ": cycles "
         << t.firstCycle << ".." << t.lastCycle;
      if (t.firstRowReady >= 0)
        os << ", rows " << t.firstRowReady << ".." << t.lastRowReady << " (bound " << t.firstRowBound << ".."
           << t.lastRowBound << ")";
      os << "\n";
    }
  }
}

llvm::json::Object reportFigures(const CompiledProgram::BucketInfo &b,
                                 const backend::ChipDescription &chip) {
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
  llvm::json::Object bucket{
      {"entry", b.entry},
      {"bucket", std::move(dims)},
      {"cycles", s.cycles},
      {"time_us", double(s.cycles) / chip.clockMHz},
      {"busy_cycles", std::move(busy)},
      {"utilisation", std::move(utilisation)},
      {"sram_bytes", int64_t(s.sramBytes)},
      {"lower_bound", s.lowerBound},
      {"lower_bound_reason", s.lowerBoundReason},
      {"ratio", s.lowerBound ? double(s.cycles) / double(s.lowerBound) : 0.0},
      {"physical_bound", s.physical.cycles},
      {"physical_resource", s.physical.resource},
      {"physical_ratio", s.physical.cycles ? double(s.cycles) / double(s.physical.cycles) : 0.0},
      {"physical_terms", llvm::json::Object{{"mxm", s.physical.mxm},
                                            {"weight_loads", s.physical.weights},
                                            {"sram_ports", s.physical.sram},
                                            {"vxm", s.physical.vxm},
                                            {"sxm", s.physical.sxm},
                                            {"links", s.physical.links},
                                            {"chain", s.physical.chain}}}};
  if (!s.chips.empty()) {
    llvm::json::Array chips;
    for (const scheduler::ChipFigures &f : s.chips)
      chips.push_back(llvm::json::Object{{"chip", int64_t(f.chip)},
                                         {"first_cycle", f.firstCycle},
                                         {"cycles", f.cycles},
                                         {"sram_bytes", int64_t(f.sramBytes)},
                                         {"link_bytes_sent", int64_t(f.linkBytesSent)},
                                         {"link_busy_cycles", linkCycles(f, chip)},
                                         {"lower_bound", f.lowerBound},
                                         {"lower_bound_reason", f.lowerBoundReason}});
    bucket["topology"] = s.topology;
    bucket["chips"] = std::move(chips);
    if (s.lockstep) {
      bucket["lockstep"] = true;
      bucket["lockstep_groups"] = int64_t(s.groups);
    }
    if (!s.lockstep || s.groups > 1)
      bucket["pipelined_interval"] = longestSpan(s);
    bucket["scheduled_chips"] = int64_t(s.distinctChips);
  }
  if (b.partition) {
    llvm::json::Array candidates;
    for (const PartitionChoice::Candidate &c : ranked(*b.partition)) {
      llvm::json::Object o{{"kind", c.kind}};
      if (c.ok())
        o["cycles"] = c.cycles;
      else {
        o["error"] = c.error;
        o["message"] = c.message;
      }
      candidates.push_back(std::move(o));
    }
    bucket["partition"] = b.partition->chosen;
    bucket["partition_auto"] = std::move(candidates);
  }
  return bucket;
}

void printScheduleReportJson(const CompiledProgram &compiled,
                             const backend::ChipDescription &chip, llvm::raw_ostream &os,
                             bool ops) {
  llvm::json::Array buckets;
  for (const CompiledProgram::BucketInfo &b : compiled.buckets) {
    const scheduler::Schedule &s = b.schedule;
    llvm::json::Object bucket = reportFigures(b, chip);
    if (ops) {
      llvm::json::Array opTimings;
      for (const scheduler::OpTiming &t : s.ops) {
        llvm::json::Object o{{"op", t.op},
                             {"type", t.type},
                             {"loc", locationText(t.loc)},
                             {"first_cycle", t.firstCycle},
                             {"last_cycle", t.lastCycle}};
        if (t.firstRowReady >= 0) {
          o["first_row_ready"] = t.firstRowReady;
          o["last_row_ready"] = t.lastRowReady;
          o["first_row_bound"] = t.firstRowBound;
          o["last_row_bound"] = t.lastRowBound;
        }
        opTimings.push_back(std::move(o));
      }
      bucket["ops"] = std::move(opTimings);
    }
    buckets.push_back(std::move(bucket));
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                   {"chip", chip.name},
                                   {"clock_mhz", chip.clockMHz},
                                   {"buckets", std::move(buckets)}}))
     << "\n";
}

} // namespace lpu::driver
