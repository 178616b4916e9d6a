// lpuc --report-html: a compiled program's schedules as one self-contained
// HTML page (no network, nothing fetched): per entry and bucket the
// report's figures, a zoomable timeline of every queue that has work (which
// op's instructions occupy it, chip by chip, with the links of a multi-chip
// program), utilisation per unit kind, SRAM in use over time, the schedule's
// critical path and every op with its cycles (docs/report-html.md).
#pragma once

#include "driver/Compile.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <vector>

namespace lpu::driver {

/// A stretch of one queue's time given to one op: its instructions there
/// from `start` to `end` (the last one's issue cycle plus its issue
/// interval), gaps of at most `gap` cycles between them bridged; `busy`
/// counts the issue cycles in it.
struct TimelineSpan {
  uint32_t row = 0; // timelineRows' index
  int64_t start = 0, end = 0, busy = 0;
  uint32_t op = 0; // Schedule::ops' index
};

/// A queue that has work: its chip and name ("mxm3").
struct TimelineRow {
  unsigned chip = 0;
  backend::UnitKind unit = backend::UnitKind::Mem;
  unsigned index = 0;
};

/// The rows (queues with work, by chip, unit kind and index) and the spans
/// of one schedule, spans sorted by row then start. A chip that runs
/// another's queues later (Schedule::sharedCode) shows them so.
void timelineOf(const scheduler::Schedule &s, const backend::ChipDescription &chip, int64_t gap,
                std::vector<TimelineRow> &rows, std::vector<TimelineSpan> &spans);

/// The schedule's critical path, last op first: from the op whose last
/// instruction issues last, each step to the input (OpTiming::inputs) whose
/// last result row was ready last (its last instruction, when it wrote no
/// rows of its own).
std::vector<uint32_t> criticalPath(const scheduler::Schedule &s);

/// SRAM bytes in use over time on `chipIndex`, as (cycle, bytes) steps
/// from the blocks' lives (Schedule::sram), at most `points` of them: past
/// that, each point holds the most bytes of its stretch of cycles.
std::vector<std::pair<int64_t, uint64_t>> sramOverTime(const scheduler::Schedule &s,
                                                       unsigned chipIndex, size_t points);

/// The data the page draws, as JSON: {"title", "chip", "clock_mhz",
/// "buckets": [...]} (docs/report-html.md lists the fields). Streamed: a
/// large schedule has millions of spans.
void writeHtmlReportData(const CompiledProgram &compiled, const backend::ChipDescription &chip,
                         llvm::StringRef title, llvm::raw_ostream &os);

/// The page: htmlReportData embedded in the page's markup and script.
void writeHtmlReport(const CompiledProgram &compiled, const backend::ChipDescription &chip,
                     llvm::StringRef title, llvm::raw_ostream &os);

} // namespace lpu::driver
