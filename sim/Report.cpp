#include "sim/Report.h"

#include <llvm/Support/Format.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

namespace lpu::sim {

using namespace backend;

std::string formatReportText(const RunReport &r, const ReportContext &ctx) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "entry " << ctx.entry << ", bucket " << ctx.bucket;
  if (!ctx.bucketDims.empty())
    os << " (" << ctx.bucketDims << ")";
  os << ", padding " << llvm::format("%.1f", ctx.paddingFraction * 100) << "%";
  if (ctx.timingOnly)
    os << ", timing only";
  os << "\n";
  os << "cycles: " << r.cycles << " (" << llvm::format("%.3f", double(r.cycles) / r.clockMHz)
     << " us at " << llvm::format("%g", r.clockMHz) << " MHz)\n";
  for (size_t c = 0; c < r.chips.size(); ++c) {
    const ChipStats &s = r.chips[c];
    os << "chip " << c << ":";
    for (unsigned k = 0; k < kNumUnitKinds; ++k)
      os << " " << unitKindName(UnitKind(k)) << " busy " << s.busyCycles[k];
    os << "\n  sram in use: " << s.sramVectorsInUse * r.lanes << " bytes\n";
    uint64_t total = 0;
    for (uint64_t b : s.linkBytesSent)
      total += b;
    if (total) {
      os << "  link bytes sent:";
      for (size_t l = 0; l < s.linkBytesSent.size(); ++l)
        if (s.linkBytesSent[l])
          os << " l" << l << "=" << s.linkBytesSent[l];
      os << "\n";
    }
  }
  return os.str();
}

std::string formatReportJson(const RunReport &r, const ReportContext &ctx) {
  llvm::json::Array chips;
  for (size_t c = 0; c < r.chips.size(); ++c) {
    const ChipStats &s = r.chips[c];
    llvm::json::Object queues;
    for (size_t q = 0; q < s.queueBusy.size() && c < r.queueNames.size(); ++q)
      queues[r.queueNames[c][q]] = int64_t(s.queueBusy[q]);
    llvm::json::Object busy, instrs;
    for (unsigned k = 0; k < kNumUnitKinds; ++k) {
      busy[unitKindName(UnitKind(k))] = int64_t(s.busyCycles[k]);
      instrs[unitKindName(UnitKind(k))] = int64_t(s.instructions[k]);
    }
    llvm::json::Array links;
    for (uint64_t b : s.linkBytesSent)
      links.push_back(int64_t(b));
    chips.push_back(llvm::json::Object{{"busy_cycles", std::move(busy)},
                                       {"instructions", std::move(instrs)},
                                       {"queue_busy_cycles", std::move(queues)},
                                       {"sram_bytes_in_use", int64_t(s.sramVectorsInUse * r.lanes)},
                                       {"link_bytes_sent", std::move(links)}});
  }
  llvm::json::Object root{{"entry", ctx.entry},
                          {"bucket", int64_t(ctx.bucket)},
                          {"bucket_dims", ctx.bucketDims},
                          {"padding_fraction", ctx.paddingFraction},
                          {"timing_only", ctx.timingOnly},
                          {"cycles", r.cycles},
                          {"clock_mhz", r.clockMHz},
                          {"time_us", double(r.cycles) / r.clockMHz},
                          {"host_run_seconds", r.hostRunSeconds},
                          {"chips", std::move(chips)}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return os.str();
}

} // namespace lpu::sim
