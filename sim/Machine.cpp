#include "sim/Machine.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/ThreadPool.h>
#include <llvm/Support/raw_ostream.h>

#include <llvm/ADT/ScopeExit.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace lpu::sim {

using namespace backend;

llvm::Expected<std::unique_ptr<Machine>> Machine::create(const ChipDescription &chip,
                                                         const Program &program,
                                                         const Bucket &bucket, RunOptions options) {
  auto topology = Topology::parse(program.topology, chip.c2cLinks);
  if (!topology)
    return topology.takeError();
  std::unique_ptr<Machine> m(new Machine(chip, bucket, std::move(*topology), options));
  ChipOptions chipOptions;
  chipOptions.timingOnly = options.timingOnly;
  chipOptions.trace = options.trace;
  // With one chip the threads go to its matmuls; with several, to chips.
  chipOptions.matmulThreads = bucket.chips.size() == 1 ? std::max(1u, options.threads) : 1;
  for (unsigned c = 0; c < bucket.chips.size(); ++c)
    m->chips_.push_back(std::make_unique<ChipSim>(chip, m->topology_, c, bucket.codeOf(c), chipOptions,
                                                  bucket.chips[c].shares ? &*bucket.chips[c].shares
                                                                         : nullptr));
  // Placed tensors count as SRAM in use from the start.
  for (const TensorPlacement &t : bucket.tensors) {
    auto g = placementGeometry(t, bucket.concreteShape(t), chip.lanes, chip.memVectors);
    if (!g)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "tensor '" + t.name + "' " + llvm::toString(g.takeError()));
    for (int64_t j = 0; j < g->chunks; ++j)
      for (unsigned b = 0; b < g->planes; ++b)
        for (int64_t v = 0; v < g->chunkVectors(j); ++v)
          m->chips_[t.chip]->markInUse(t.slices[size_t(j) * g->planes + b], unsigned(t.addr + v));
  }
  return m;
}

llvm::Expected<PlacementGeometry> Machine::geometry(const TensorPlacement &t) const {
  auto g = placementGeometry(t, bucket_.concreteShape(t), chip_.lanes, chip_.memVectors);
  if (!g)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tensor '" + t.name + "' " + llvm::toString(g.takeError()));
  return g;
}

namespace {
/// Calls fn(chunk, address, first, count) for every SRAM vector `g` holds:
/// its lanes 0..count-1 hold the stored (perm-ordered, C-order) elements
/// first..first+count-1 and the rest are zero. Whole runs of elements, so
/// that placing BERT's 23M-element table costs a copy, not a locate() each.
template <typename Fn> void forEachVector(const PlacementGeometry &g, Fn fn) {
  const int64_t lanes = g.lanes;
  if (g.packed) {
    // A chunk's elements are contiguous in the stored order, and so are its
    // vectors: flat element f of chunk j is at addr + f / lanes.
    for (int64_t j = 0; j < g.chunks; ++j) {
      int64_t first = j * g.chunkRows * g.cols;
      int64_t elements = std::min(g.chunkRows, g.rows - j * g.chunkRows) * g.cols;
      for (int64_t v = 0; v < g.chunkVectors(j); ++v)
        fn(j, uint32_t(g.addr + v), first + v * lanes, std::min(lanes, elements - v * lanes));
    }
    return;
  }
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t v = 0; v < g.perRow; ++v)
      fn(g.chunkOf(r), g.address(r, v), r * g.cols + v * lanes, std::min(lanes, g.cols - v * lanes));
}
} // namespace

llvm::Error Machine::writeTensor(const TensorPlacement &t, llvm::ArrayRef<uint8_t> bytes) {
  auto g = geometry(t);
  if (!g)
    return g.takeError();
  unsigned w = g->planes;
  if (uint64_t(bytes.size()) != uint64_t(g->rows * g->cols * w))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tensor '" + t.name + "' has " + llvm::Twine(bytes.size()) +
                                       " bytes, its placement holds " +
                                       llvm::Twine(g->rows * g->cols * w));
  ChipSim &chip = *chips_[t.chip];
  if (options_.timingOnly)
    return llvm::Error::success();
  std::vector<uint8_t> stored = permuteElements(bytes, bucket_.concreteShape(t), t.perm, w, false);
  forEachVector(*g, [&](int64_t chunk, uint32_t addr, int64_t first, int64_t count) {
    const uint8_t *src = stored.data() + first * w;
    for (unsigned b = 0; b < w; ++b) {
      uint8_t *dst = chip.sramVector(t.slices[size_t(chunk) * w + b], addr);
      std::memset(dst, 0, chip_.lanes);
      for (int64_t i = 0; i < count; ++i)
        dst[i] = src[i * w + b];
    }
  });
  return llvm::Error::success();
}

llvm::Expected<std::vector<uint8_t>> Machine::readTensor(const TensorPlacement &t) {
  auto g = geometry(t);
  if (!g)
    return g.takeError();
  unsigned w = g->planes;
  std::vector<uint8_t> stored(size_t(g->rows * g->cols * w), 0);
  ChipSim &chip = *chips_[t.chip];
  if (options_.timingOnly)
    return stored;
  forEachVector(*g, [&](int64_t chunk, uint32_t addr, int64_t first, int64_t count) {
    uint8_t *dst = stored.data() + first * w;
    for (unsigned b = 0; b < w; ++b) {
      const uint8_t *src = chip.sramVector(t.slices[size_t(chunk) * w + b], addr);
      for (int64_t i = 0; i < count; ++i)
        dst[i * w + b] = src[i];
    }
  });
  return permuteElements(stored, bucket_.concreteShape(t), t.perm, w, true);
}

llvm::Error Machine::run() {
  auto started = std::chrono::steady_clock::now();
  auto stopClock = llvm::make_scope_exit([&] {
    hostRunSeconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  });
  // Nothing sent in a window can arrive before the window ends: a vector
  // takes at least one serialisation time plus the hop latency. One chip
  // runs in windows too, long ones, only so that the cycles simulated can
  // be counted as it goes (RunOptions::progress); a chip runs the same in
  // windows as at once, which is what windows of several chips rely on.
  bool single = chips_.size() == 1;
  const int64_t window =
      single ? int64_t(1) << 16
             : std::max<int64_t>(1, int64_t(chip_.c2cHopCycles) + chip_.c2cCyclesPerVector);
  options_.progress.count("cycles", 0);
  std::unique_ptr<llvm::ThreadPool> pool;
  unsigned threads = std::min<unsigned>(options_.threads, unsigned(chips_.size()));
  if (threads > 1)
    pool = std::make_unique<llvm::ThreadPool>(llvm::hardware_concurrency(threads));
  int64_t start = 0;
  for (;;) {
    // Skip windows where nothing happens.
    int64_t next = INT64_MAX;
    for (auto &c : chips_)
      next = std::min(next, c->nextEventCycle());
    if (next == INT64_MAX)
      break;
    if (next >= start + window)
      start = next - next % window;
    int64_t limit = start + window;
    // Only the chips with something to do in the window, a task per
    // thread (not per chip): a deep pipeline has most of its chips idle
    // in most windows. A chip's window depends on nothing another chip
    // does in it, so any order gives the same result.
    std::vector<ChipSim *> active;
    for (auto &c : chips_)
      if (c->nextEventCycle() < limit)
        active.push_back(c.get());
    const size_t tasks = pool ? std::min<size_t>(threads, active.size()) : 1;
    if (tasks > 1) {
      for (size_t t = 0; t < tasks; ++t)
        pool->async([&active, tasks, t, limit] {
          for (size_t i = t; i < active.size(); i += tasks)
            active[i]->runUntil(limit);
        });
      pool->wait();
    } else {
      for (ChipSim *c : active)
        c->runUntil(limit);
    }
    // The earliest violation wins, whatever order the chips ran in.
    const Violation *first = nullptr;
    for (auto &c : chips_)
      if (c->violation() &&
          (!first || std::make_pair(c->violation()->cycle, c->violation()->chip) <
                         std::make_pair(first->cycle, first->chip)))
        first = &*c->violation();
    if (first) {
      Violation v = *first;
      // A recv that found nothing, while a value for it is on the wire
      // already (sent in this window, so not delivered yet): say when it
      // arrives, as when it had been delivered.
      if (v.awaitedLink) {
        int64_t next = INT64_MAX;
        for (auto &c : chips_)
          for (const C2cMessage &m : c->outbox())
            if (m.dstChip == v.chip && m.dstLink == *v.awaitedLink)
              next = std::min(next, m.arrival);
        if (next != INT64_MAX)
          v.message += " (the next vector arrives at cycle " + std::to_string(next) + ")";
      }
      return toError(v);
    }
    // Deliver this window's C2C traffic in a fixed order.
    std::vector<C2cMessage> traffic;
    for (auto &c : chips_)
      for (C2cMessage &m : c->takeOutbox())
        traffic.push_back(std::move(m));
    std::stable_sort(traffic.begin(), traffic.end(), [](const C2cMessage &a, const C2cMessage &b) {
      return std::make_tuple(a.arrival, a.dstChip, a.dstLink, a.srcChip) <
             std::make_tuple(b.arrival, b.dstChip, b.dstLink, b.srcChip);
    });
    for (C2cMessage &m : traffic)
      chips_[m.dstChip]->deliver(std::move(m));
    start = limit;
    if (options_.progress) {
      int64_t reached = 0;
      for (auto &c : chips_)
        reached = std::max(reached, c->stats().lastCycle + 1);
      options_.progress.count("cycles", uint64_t(reached));
    }
  }
  for (auto &c : chips_)
    if (!c->finish())
      return toError(*c->violation());
  // A value sent that no recv took: named by its send (the receiving side
  // has no instruction to name), the earliest to arrive first.
  const C2cMessage *lost = nullptr;
  size_t left = 0;
  for (auto &c : chips_) {
    size_t n = 0;
    const C2cMessage *m = c->firstUnreceived(n);
    if (m && (!lost || m->arrival < lost->arrival)) {
      lost = m;
      left = n;
    }
  }
  if (lost) {
    ChipSim &sender = *chips_[lost->srcChip];
    sender.failAt(lost->srcQueue, lost->srcInstr, lost->srcRepetition, lost->sent,
                  "no recv takes the value it sent: it arrives at chip " +
                      llvm::Twine(lost->dstChip) + ", link l" + llvm::Twine(lost->dstLink) +
                      ", in cycle " + llvm::Twine(lost->arrival) + " (" + llvm::Twine(left) +
                      " value(s) left on that link at the end of the run)");
    return toError(*sender.violation());
  }
  cycles_ = 0;
  for (auto &c : chips_)
    cycles_ = std::max(cycles_, c->stats().lastCycle + 1);
  options_.progress.count("cycles", uint64_t(cycles_));
  return llvm::Error::success();
}

llvm::MutableArrayRef<uint8_t> Machine::sramVector(unsigned chip, unsigned slice, unsigned addr) {
  uint8_t *v = chips_.at(chip)->sramVector(slice, addr); // none in timing-only runs
  return v ? llvm::MutableArrayRef<uint8_t>(v, chip_.lanes) : llvm::MutableArrayRef<uint8_t>();
}

RunReport Machine::report() const {
  RunReport r;
  r.cycles = cycles_;
  r.hostRunSeconds = hostRunSeconds_;
  r.clockMHz = chip_.clockMHz;
  r.lanes = chip_.lanes;
  for (auto &c : chips_) {
    r.chips.push_back(c->stats());
    std::vector<std::string> names;
    for (const Queue &q : c->code().queues)
      names.push_back(queueName(q));
    r.queueNames.push_back(std::move(names));
  }
  return r;
}

namespace {
std::string linkEndName(unsigned chip, unsigned link) {
  return "chip " + std::to_string(chip) + " l" + std::to_string(link);
}
} // namespace

std::string Machine::traceJson() const {
  llvm::json::Array events;
  for (unsigned c = 0; c < chips_.size(); ++c) {
    const ChipSim &chip = *chips_[c];
    const unsigned queues = unsigned(chip.code().queues.size());
    events.push_back(llvm::json::Object{{"name", "process_name"}, {"ph", "M"}, {"pid", c},
                                        {"args", llvm::json::Object{{"name", "chip " + std::to_string(c)}}}});
    for (unsigned q = 0; q < queues; ++q)
      events.push_back(llvm::json::Object{
          {"name", "thread_name"}, {"ph", "M"}, {"pid", c}, {"tid", q},
          {"args", llvm::json::Object{{"name", queueName(chip.code().queues[q])}}}});
    std::vector<bool> linkTrack(chip_.c2cLinks, false);
    for (const TraceEvent &e : chip.trace()) {
      llvm::json::Object event{{"name", opcodeInfo(e.op).mnemonic},
                               {"ph", "X"},
                               {"pid", c},
                               {"tid", e.queue},
                               {"ts", e.cycle},
                               {"dur", e.duration}};
      if (e.c2c < 0) {
        events.push_back(std::move(event));
        continue;
      }
      // A send and its recv: the far end and the cycles in the event's
      // args, an arrow (a flow event) from the send to the recv, and the
      // time the value is on the wire as an event on the sender's link
      // track.
      const C2cTraceEvent &t = chip.c2cTrace()[size_t(e.c2c)];
      // The flow's id names the value by its sending link and sequence.
      const LinkEnd from = t.send ? LinkEnd{c, t.link} : t.peer;
      const uint64_t flow = (uint64_t(from.chip) * chip_.c2cLinks + from.link) << 32 | t.sequence;
      llvm::json::Object args{{"link", "l" + std::to_string(t.link)},
                              {"sent", t.sent},
                              {"arrival", t.arrival}};
      args[t.send ? "to" : "from"] = linkEndName(t.peer.chip, t.peer.link);
      event["args"] = std::move(args);
      events.push_back(std::move(event));
      llvm::json::Object arrow{{"name", "c2c"}, {"cat", "c2c"}, {"ph", t.send ? "s" : "f"},
                               {"id", int64_t(flow)}, {"pid", c},   {"tid", e.queue},
                               {"ts", e.cycle}};
      if (!t.send)
        arrow["bp"] = "e"; // ends at the recv's own event, not the next one
      events.push_back(std::move(arrow));
      if (t.send) {
        unsigned tid = queues + t.link;
        linkTrack[t.link] = true;
        events.push_back(llvm::json::Object{
            {"name", "to " + linkEndName(t.peer.chip, t.peer.link)},
            {"ph", "X"},
            {"pid", c},
            {"tid", tid},
            {"ts", t.sent},
            {"dur", t.arrival - chip_.c2cHopCycles - t.sent}});
      }
    }
    for (unsigned l = 0; l < linkTrack.size(); ++l)
      if (linkTrack[l])
        events.push_back(llvm::json::Object{
            {"name", "thread_name"}, {"ph", "M"}, {"pid", c}, {"tid", queues + l},
            {"args", llvm::json::Object{{"name", "link l" + std::to_string(l)}}}});
  }
  llvm::json::Object root{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::json::Value(std::move(root)) << "\n";
  return os.str();
}

} // namespace lpu::sim
