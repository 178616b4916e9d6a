#include "driver/HtmlReport.h"

#include "backend/Bucketing.h"

#include <llvm/ADT/STLExtras.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace lpu::driver {

// The page's markup, style and script (HtmlReportPage.cpp): the data goes
// between the two halves.
extern const char *const kHtmlReportHead;
extern const char *const kHtmlReportTail;

void timelineOf(const scheduler::Schedule &s, const backend::ChipDescription &chip, int64_t gap,
                std::vector<TimelineRow> &rows, std::vector<TimelineSpan> &spans) {
  using Key = std::tuple<unsigned, unsigned, unsigned>; // chip, unit, index
  std::map<Key, std::vector<TimelineSpan>> byQueue;
  std::vector<std::pair<int64_t, int64_t>> issued; // cycle, issue interval
  for (uint32_t o = 0; o < s.ops.size(); ++o) {
    const scheduler::OpTiming &t = s.ops[o];
    // A chip that runs another's queues later: that chip's instructions.
    unsigned source = t.chip;
    int64_t delay = 0;
    const backend::SharedCode *shared = nullptr;
    if (auto it = s.sharedCode.find(t.chip); it != s.sharedCode.end()) {
      shared = &it->second;
      source = it->second.chip;
      delay = int64_t(it->second.delay);
    }
    for (const scheduler::QueueRange &r : t.ranges) {
      auto list = s.queues.find(scheduler::QueueId{r.unit, r.index, source});
      if (list == s.queues.end() || r.end > list->second.size())
        continue;
      issued.clear();
      for (uint32_t i = r.begin; i < r.end; ++i) {
        const scheduler::TimedInstr &ti = list->second[i];
        issued.push_back({ti.cycle + delay, chip.timingOf(ti.instr.op, ti.instr.dtype).issue});
      }
      std::sort(issued.begin(), issued.end());
      unsigned index = r.index;
      if (shared && r.unit == backend::UnitKind::C2c)
        index = shared->link(uint16_t(r.index));
      std::vector<TimelineSpan> &out = byQueue[Key{t.chip, unsigned(r.unit), index}];
      TimelineSpan span;
      bool open = false;
      for (const auto &[cycle, issue] : issued) {
        if (open && cycle <= span.end + gap) {
          span.end = std::max(span.end, cycle + issue);
          span.busy += issue;
          continue;
        }
        if (open)
          out.push_back(span);
        span = TimelineSpan{0, cycle, cycle + issue, issue, o};
        open = true;
      }
      if (open)
        out.push_back(span);
    }
  }
  rows.clear();
  spans.clear();
  // Per chip the units that compute first, then C2C and MEM.
  auto rank = [](unsigned unit) {
    switch (backend::UnitKind(unit)) {
    case backend::UnitKind::Mxm: return 0;
    case backend::UnitKind::Vxm: return 1;
    case backend::UnitKind::Sxm: return 2;
    case backend::UnitKind::C2c: return 3;
    default: return 4;
    }
  };
  std::vector<std::pair<Key, std::vector<TimelineSpan> *>> ordered;
  for (auto &[key, list] : byQueue)
    ordered.push_back({key, &list});
  std::stable_sort(ordered.begin(), ordered.end(), [&](const auto &a, const auto &b) {
    return std::make_tuple(std::get<0>(a.first), rank(std::get<1>(a.first)), std::get<2>(a.first)) <
           std::make_tuple(std::get<0>(b.first), rank(std::get<1>(b.first)), std::get<2>(b.first));
  });
  for (auto &[key, listPtr] : ordered) {
    std::vector<TimelineSpan> &list = *listPtr;
    const uint32_t row = uint32_t(rows.size());
    rows.push_back({std::get<0>(key), backend::UnitKind(std::get<1>(key)), std::get<2>(key)});
    std::sort(list.begin(), list.end(), [](const TimelineSpan &a, const TimelineSpan &b) {
      return std::tie(a.start, a.op) < std::tie(b.start, b.op);
    });
    for (TimelineSpan &span : list) {
      span.row = row;
      spans.push_back(span);
    }
  }
}

std::vector<uint32_t> criticalPath(const scheduler::Schedule &s) {
  std::vector<uint32_t> path;
  if (s.ops.empty())
    return path;
  auto done = [&](uint32_t o) {
    const scheduler::OpTiming &t = s.ops[o];
    return t.lastRowReady >= 0 ? t.lastRowReady : t.lastCycle;
  };
  uint32_t at = 0;
  for (uint32_t o = 1; o < s.ops.size(); ++o)
    if (s.ops[o].lastCycle > s.ops[at].lastCycle)
      at = o;
  std::vector<bool> seen(s.ops.size(), false);
  while (!seen[at]) {
    seen[at] = true;
    path.push_back(at);
    std::vector<uint32_t> inputs = s.ops[at].inputs;
    // A received value's inputs are its sender's.
    if (s.ops[at].receives >= 0)
      for (uint32_t o = 0; o < s.ops.size(); ++o)
        if (s.ops[o].sends == s.ops[at].receives)
          inputs.push_back(o);
    if (inputs.empty())
      break;
    uint32_t next = inputs.front();
    for (uint32_t i : inputs)
      if (i < s.ops.size() && done(i) > done(next))
        next = i;
    if (next >= s.ops.size())
      break;
    at = next;
  }
  return path;
}

std::vector<std::pair<int64_t, uint64_t>> sramOverTime(const scheduler::Schedule &s,
                                                       unsigned chipIndex, size_t points) {
  std::vector<std::pair<int64_t, int64_t>> events; // cycle, change
  for (const scheduler::SramLife &l : s.sram)
    if (l.chip == chipIndex) {
      events.push_back({l.from, int64_t(l.bytes)});
      events.push_back({l.to + 1, -int64_t(l.bytes)});
    }
  std::sort(events.begin(), events.end());
  std::vector<std::pair<int64_t, uint64_t>> steps;
  int64_t live = 0;
  for (size_t i = 0; i < events.size();) {
    const int64_t cycle = events[i].first;
    for (; i < events.size() && events[i].first == cycle; ++i)
      live += events[i].second;
    steps.push_back({cycle, uint64_t(std::max<int64_t>(live, 0))});
  }
  if (points == 0 || steps.size() <= points)
    return steps;
  // The most bytes of each stretch, at the stretch's first cycle.
  const int64_t first = steps.front().first, last = steps.back().first;
  const int64_t stretch = std::max<int64_t>(1, (last - first + int64_t(points)) / int64_t(points));
  std::vector<std::pair<int64_t, uint64_t>> out;
  uint64_t carried = 0; // the bytes in use as a stretch starts
  for (size_t i = 0; i < steps.size();) {
    const int64_t begin = first + (steps[i].first - first) / stretch * stretch;
    uint64_t most = carried;
    for (; i < steps.size() && steps[i].first < begin + stretch; ++i) {
      most = std::max(most, steps[i].second);
      carried = steps[i].second;
    }
    out.push_back({begin, most});
  }
  return out;
}

namespace {

/// Spans bridge gaps of up to this share of the schedule's cycles: at the
/// page's full width a pixel holds more cycles than that, and a large
/// schedule's spans stay in the millions, not tens of millions.
constexpr int64_t kSpanGapFraction = 100000;

void writeBucket(llvm::json::OStream &j, const CompiledProgram::BucketInfo &b,
                 const backend::ChipDescription &chip) {
  const scheduler::Schedule &s = b.schedule;
  j.objectBegin();
  j.attribute("label", b.entry + " " + backend::bucketLabel(b.dims));
  j.attribute("figures", reportFigures(b, chip));
  if (b.partition)
    j.attribute("partition_text", describePartitionChoice(*b.partition));
  const int64_t gap = s.cycles / kSpanGapFraction;
  j.attribute("span_gap", gap);
  std::vector<TimelineRow> rows;
  std::vector<TimelineSpan> spans;
  timelineOf(s, chip, gap, rows, spans);
  j.attributeArray("rows", [&] {
    for (const TimelineRow &r : rows)
      j.object([&] {
        j.attribute("chip", int64_t(r.chip));
        j.attribute("unit", backend::unitKindName(r.unit));
        j.attribute("name", (backend::unitKindName(r.unit) + llvm::Twine(r.index)).str());
      });
  });
  // Five numbers a span: row, start, end, busy cycles, op.
  j.attributeArray("spans", [&] {
    for (const TimelineSpan &sp : spans) {
      j.value(int64_t(sp.row));
      j.value(sp.start);
      j.value(sp.end);
      j.value(sp.busy);
      j.value(int64_t(sp.op));
    }
  });
  const std::vector<uint32_t> critical = criticalPath(s);
  j.attributeArray("critical", [&] {
    for (uint32_t o : critical)
      j.value(int64_t(o));
  });
  j.attributeArray("ops", [&] {
    for (const scheduler::OpTiming &t : s.ops)
      j.object([&] {
        j.attribute("op", t.op);
        j.attribute("type", t.type);
        j.attribute("loc", locationText(t.loc));
        j.attribute("chip", int64_t(t.chip));
        j.attribute("first", t.firstCycle);
        j.attribute("last", t.lastCycle);
        if (t.lastRowReady >= 0) {
          j.attribute("ready", t.lastRowReady);
          j.attribute("bound", t.lastRowBound);
        }
      });
  });
  // The chips with work or SRAM, each with its SRAM over time.
  std::vector<unsigned> chips;
  for (const TimelineRow &r : rows)
    if (!llvm::is_contained(chips, r.chip))
      chips.push_back(r.chip);
  for (const scheduler::SramLife &l : s.sram)
    if (!llvm::is_contained(chips, l.chip))
      chips.push_back(l.chip);
  llvm::sort(chips);
  j.attribute("sram_capacity", int64_t(chip.sramBytes()));
  j.attributeArray("sram", [&] {
    for (unsigned c : chips)
      j.object([&] {
        j.attribute("chip", int64_t(c));
        j.attributeArray("steps", [&] {
          for (const auto &[cycle, bytes] : sramOverTime(s, c, 4000)) {
            j.value(cycle);
            j.value(int64_t(bytes));
          }
        });
      });
  });
  // Each value one chip sends another: on its sending link from its first
  // vector's departure to its last's.
  j.attributeArray("links", [&] {
    for (const scheduler::LinkTransfer &t : s.sent) {
      if (t.arrivals.empty())
        continue;
      j.object([&] {
        j.attribute("from", int64_t(t.fromChip));
        j.attribute("to", int64_t(t.toChip));
        j.attribute("link", int64_t(t.link));
        j.attribute("far_link", int64_t(t.farLink));
        j.attribute("start", t.arrivals.front() - int64_t(chip.c2cHopCycles) -
                                 int64_t(chip.c2cCyclesPerVector));
        j.attribute("end", t.arrivals.back() - int64_t(chip.c2cHopCycles));
        j.attribute("bytes", int64_t(t.bytes));
      });
    }
  });
  j.objectEnd();
}

} // namespace

void writeHtmlReportData(const CompiledProgram &compiled, const backend::ChipDescription &chip,
                         llvm::StringRef title, llvm::raw_ostream &os) {
  llvm::json::OStream j(os);
  j.object([&] {
    j.attribute("title", title);
    j.attribute("chip", chip.name);
    j.attribute("clock_mhz", chip.clockMHz);
    j.attributeArray("units", [&] {
      for (unsigned u = 0; u < backend::kNumUnitKinds; ++u)
        j.value(backend::unitKindName(backend::UnitKind(u)));
    });
    j.attributeArray("buckets", [&] {
      for (const CompiledProgram::BucketInfo &b : compiled.buckets)
        writeBucket(j, b, chip);
    });
  });
}

void writeHtmlReport(const CompiledProgram &compiled, const backend::ChipDescription &chip,
                     llvm::StringRef title, llvm::raw_ostream &os) {
  std::string data;
  llvm::raw_string_ostream dataStream(data);
  writeHtmlReportData(compiled, chip, title, dataStream);
  dataStream.flush();
  os << kHtmlReportHead;
  // In a <script> element only "</" could end it early; JSON may spell
  // the slash "\/".
  size_t from = 0;
  for (size_t at = data.find("</"); at != std::string::npos; at = data.find("</", from)) {
    os << llvm::StringRef(data).slice(from, at) << "<\\/";
    from = at + 2;
  }
  os << llvm::StringRef(data).substr(from);
  os << kHtmlReportTail;
}

} // namespace lpu::driver
