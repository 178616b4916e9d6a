#include "sim/ShiftCheck.h"

#include "backend/ProgramText.h"
#include "support/RandomTensor.h"

#include <llvm/ADT/StringExtras.h>

#include <cctype>
#include <cmath>

namespace lpu::sim {

using namespace backend;

namespace {

struct Site {
  unsigned chip, queue, instr;
};

/// The change of one shift to a queue, undone by restoring `saved`.
struct Shift {
  Site site;
  int delta;
};

/// Applies `shift` to `instrs`; false when it is not possible (-1 with no
/// nop before the instruction, a repeat's delay below its instruction's
/// issue interval).
bool applyShift(std::vector<Instr> &instrs, unsigned index, int delta, const ChipDescription &chip) {
  Instr &in = instrs[index];
  if (in.op == Opcode::Repeat) {
    const Instr &prev = instrs[index - 1];
    if (delta < 0 && in.delay <= chip.timingOf(prev.op, prev.dtype).issue)
      return false;
    in.delay = uint32_t(int64_t(in.delay) + delta);
    return true;
  }
  const bool nopBefore = index > 0 && instrs[index - 1].op == Opcode::Nop;
  if (delta > 0) {
    if (nopBefore) {
      ++instrs[index - 1].count;
    } else {
      Instr nop;
      nop.op = Opcode::Nop;
      nop.count = 1;
      instrs.insert(instrs.begin() + index, nop);
    }
    return true;
  }
  if (!nopBefore)
    return false;
  if (--instrs[index - 1].count == 0)
    instrs.erase(instrs.begin() + index - 1);
  return true;
}

/// "plane 0: install before ..." from "schedule violation: chip 0, ...,
/// cycle 12: plane 0: install before ...", digits dropped.
std::string violationKind(llvm::StringRef message) {
  size_t at = message.find(", cycle ");
  if (at != llvm::StringRef::npos) {
    size_t colon = message.find(": ", at);
    if (colon != llvm::StringRef::npos)
      message = message.substr(colon + 2);
  }
  std::string kind;
  for (char c : message)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      kind += c;
  return kind;
}

using Outputs = std::vector<std::pair<std::string, std::vector<uint8_t>>>;

/// Runs `bucket` to its outputs' bytes; an llvm::Error is a violation.
llvm::Expected<Outputs> runToOutputs(const ChipDescription &chip, const Program &program,
                                     const Bucket &bucket, const SessionPlan &plan,
                                     const RunOptions &run, int64_t *cycles) {
  auto machine = placeSession(chip, program, bucket, plan, run);
  if (!machine)
    return machine.takeError();
  if (auto e = (*machine)->run())
    return e;
  if (cycles)
    *cycles = (*machine)->report().cycles;
  Outputs outputs;
  if (run.timingOnly)
    return outputs;
  for (const TensorPlacement &t : bucket.tensors)
    if (t.role == TensorRole::Output) {
      auto bytes = (*machine)->readTensor(t);
      if (!bytes)
        return bytes.takeError();
      outputs.push_back({t.name, std::move(*bytes)});
    }
  return outputs;
}

} // namespace

llvm::Expected<ShiftCheckReport> checkShifts(const Program &program, const ChipDescription &chip,
                                             const ShiftCheckOptions &options) {
  // The entry first (a timing-only plan loads nothing), then inputs at the
  // shapes of the bucket asked for.
  SessionOptions session = options.session;
  {
    SessionOptions probe = session;
    probe.run.timingOnly = true;
    probe.inputs.clear();
    auto entry = planSession(program, probe);
    if (!entry)
      return entry.takeError();
    if (options.bucket >= entry->entry->buckets.size())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "entry '" + entry->entry->name + "' has " +
                                         llvm::Twine(entry->entry->buckets.size()) +
                                         " bucket(s), no bucket " + llvm::Twine(options.bucket));
    const Bucket &bucket = entry->entry->buckets[options.bucket];
    for (const TensorPlacement &t : bucket.tensors)
      if (t.role == TensorRole::Input && !session.inputs.count(t.name))
        session.inputs.emplace(
            t.name, tensor::randomTensor(options.inputSeed, t.name, t.dtype, bucket.fullShape(t)));
  }
  session.run.timingOnly = false;
  session.run.trace = false;
  auto plan = planSession(program, session);
  if (!plan)
    return plan.takeError();

  ShiftCheckReport report;
  RunOptions data = session.run, timing = session.run;
  timing.timingOnly = true;
  Bucket work = plan->bucket();
  auto baseline = runToOutputs(chip, program, work, *plan, data, &report.cycles);
  if (!baseline)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the unshifted program does not run: " +
                                       llvm::toString(baseline.takeError()));
  for (const TensorPlacement &t : work.tensors)
    if (t.role == TensorRole::Output && tensor::isFloat(t.dtype))
      for (const auto &[name, bytes] : *baseline)
        if (name == t.name) {
          auto value = tensor::Tensor::fromBytes(t.dtype, work.concreteShape(t), bytes);
          if (!value)
            return value.takeError();
          for (int64_t i = 0; i < value->numElements(); ++i)
            report.nonFinite += !std::isfinite(value->getFloat(i));
          report.elements += size_t(value->numElements());
        }

  std::vector<Site> sites;
  for (unsigned c = 0; c < work.chips.size(); ++c)
    for (unsigned q = 0; q < work.chips[c].queues.size(); ++q)
      for (unsigned i = 0; i < work.chips[c].queues[q].instrs.size(); ++i)
        if (work.chips[c].queues[q].instrs[i].op != Opcode::Nop)
          sites.push_back({c, q, i});
  report.instructions = sites.size();
  std::vector<Site> sample;
  if (options.sample == 0 || options.sample >= sites.size()) {
    sample = sites;
  } else {
    for (size_t k = 0; k < options.sample; ++k)
      sample.push_back(sites[k * sites.size() / options.sample]);
  }
  report.sampled = sample.size();

  for (const Site &s : sample)
    for (int delta : {+1, -1}) {
      std::vector<Instr> &instrs = work.chips[s.chip].queues[s.queue].instrs;
      const std::vector<Instr> saved = instrs;
      const Instr shifted = instrs[s.instr];
      if (!applyShift(instrs, s.instr, delta, chip)) {
        instrs = saved;
        continue;
      }
      ++report.shifts;
      auto refusal = [&](llvm::Error e) {
        ++report.refused;
        ++report.refusedBy[violationKind(llvm::toString(std::move(e)))];
      };
      auto timed = runToOutputs(chip, program, work, *plan, timing, nullptr);
      if (!timed) {
        refusal(timed.takeError());
      } else if (auto outputs = runToOutputs(chip, program, work, *plan, data, nullptr); !outputs) {
        refusal(outputs.takeError());
      } else {
        std::string differs;
        for (size_t o = 0; o < outputs->size(); ++o) {
          const std::vector<uint8_t> &a = (*outputs)[o].second, &b = (*baseline)[o].second;
          size_t n = 0;
          for (size_t k = 0; k < a.size(); ++k)
            n += a[k] != b[k];
          if (n)
            differs += (differs.empty() ? "" : ", ") + ("output '" + (*outputs)[o].first +
                                                        "' differs in " + std::to_string(n) + " bytes");
        }
        if (differs.empty())
          ++report.identical;
        else
          report.different.push_back(
              "chip " + std::to_string(s.chip) + " queue " +
              queueName(work.chips[s.chip].queues[s.queue]) + " instruction " +
              std::to_string(s.instr) + " (" + printInstr(shifted) + ") " +
              (delta > 0 ? "+1" : "-1") + ": " + differs);
      }
      instrs = saved;
    }
  return report;
}

std::string formatShiftReport(const ShiftCheckReport &r, bool verbose) {
  std::string out = "shifts: " + std::to_string(r.refused) + " refused, " +
                    std::to_string(r.identical) + " identical, " +
                    std::to_string(r.different.size()) + " different (" +
                    std::to_string(r.shifts) + " shifts of " + std::to_string(r.sampled) +
                    " sampled instructions of " + std::to_string(r.instructions) + "; " +
                    std::to_string(r.cycles) + " cycles unshifted; " +
                    std::to_string(r.nonFinite) + " of " + std::to_string(r.elements) +
                    " output elements not finite)\n";
  if (verbose)
    for (const auto &[kind, n] : r.refusedBy)
      out += "  refused " + std::to_string(n) + "x: " + kind + "\n";
  for (const std::string &d : r.different)
    out += "different: " + d + "\n";
  return out;
}

} // namespace lpu::sim
