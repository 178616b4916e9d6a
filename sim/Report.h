// The run report: cycles and time at the chip clock, busy cycles and
// instructions per unit kind, SRAM in use and C2C link traffic, per chip; as
// text for people or JSON for scripts.
#pragma once

#include "sim/Machine.h"

#include <string>

namespace lpu::sim {

struct ReportContext {
  std::string entry;
  unsigned bucket = 0;
  std::string bucketDims;  // "n=4 m=8"
  double paddingFraction = 0;
  bool timingOnly = false;
};

std::string formatReportText(const RunReport &report, const ReportContext &context);
std::string formatReportJson(const RunReport &report, const ReportContext &context);

} // namespace lpu::sim
