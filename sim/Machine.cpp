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
  auto owners = chipOwners(options.ranks, bucket);
  if (!owners)
    return owners.takeError();
  m->owners_ = std::move(*owners);
  for (unsigned c = 0; c < bucket.chips.size(); ++c)
    m->chips_.push_back(ownsChip(options.ranks, m->owners_, c)
                            ? std::make_unique<ChipSim>(chip, m->topology_, c, bucket.codeOf(c),
                                                        chipOptions,
                                                        bucket.chips[c].shares
                                                            ? &*bucket.chips[c].shares
                                                            : nullptr)
                            : nullptr);
  // Placed tensors count as SRAM in use from the start.
  for (const TensorPlacement &t : bucket.tensors) {
    auto g = placementGeometry(t, bucket.concreteShape(t), chip.lanes, chip.memVectors);
    if (!g)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "tensor '" + t.name + "' " + llvm::toString(g.takeError()));
    if (!m->chips_[t.chip])
      continue;
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
  if (!chips_[t.chip])
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tensor '" + t.name + "' is on chip " + llvm::Twine(t.chip) +
                                       ", which another rank simulates");
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
  if (!chips_[t.chip])
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tensor '" + t.name + "' is on chip " + llvm::Twine(t.chip) +
                                       ", which another rank simulates");
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

namespace {
/// Runs every chip of `chips` (the null ones are other ranks') with an
/// event before `limit` up to it: a task per thread, not per chip (a deep
/// pipeline has most of its chips idle in most windows). A chip's window
/// depends on nothing another chip does in it, so any order gives the
/// same result.
void runWindow(llvm::ArrayRef<std::unique_ptr<ChipSim>> chips, int64_t limit, llvm::ThreadPool *pool,
               unsigned threads) {
  std::vector<ChipSim *> active;
  for (auto &c : chips)
    if (c && c->nextEventCycle() < limit)
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
}

/// The window the next one starts at, from `start` (the end of the last
/// run): windows where nothing happens up to `next` are skipped.
int64_t windowFor(int64_t next, int64_t start, int64_t window) {
  return next >= start + window ? next - next % window : start;
}

/// The earliest event of `chips` (the null ones are other ranks').
int64_t nextEvent(llvm::ArrayRef<std::unique_ptr<ChipSim>> chips) {
  int64_t next = INT64_MAX;
  for (auto &c : chips)
    if (c)
      next = std::min(next, c->nextEventCycle());
  return next;
}

/// The earliest value of `chips` that no recv took (the first chip's on a
/// tie), or null; `left`: how many are left on its link.
const C2cMessage *firstUnreceived(llvm::ArrayRef<std::unique_ptr<ChipSim>> chips, size_t &left) {
  const C2cMessage *lost = nullptr;
  for (auto &c : chips) {
    size_t n = 0;
    const C2cMessage *m = c ? c->firstUnreceived(n) : nullptr;
    if (m && (!lost || m->arrival < lost->arrival)) {
      lost = m;
      left = n;
    }
  }
  return lost;
}

/// The earliest violation of `chips` by (cycle, chip), or null.
const Violation *earliestViolation(llvm::ArrayRef<std::unique_ptr<ChipSim>> chips) {
  const Violation *first = nullptr;
  for (auto &c : chips)
    if (c && c->violation() &&
        (!first || std::make_pair(c->violation()->cycle, c->violation()->chip) <
                       std::make_pair(first->cycle, first->chip)))
      first = &*c->violation();
  return first;
}

/// The order a window's traffic is delivered in, whatever the order the
/// chips (or ranks) produced it in.
void sortTraffic(std::vector<C2cMessage> &traffic) {
  std::stable_sort(traffic.begin(), traffic.end(), [](const C2cMessage &a, const C2cMessage &b) {
    return std::make_tuple(a.arrival, a.dstChip, a.dstLink, a.srcChip, a.srcLink, a.sequence) <
           std::make_tuple(b.arrival, b.dstChip, b.dstLink, b.srcChip, b.srcLink, b.sequence);
  });
}

/// " (the next vector arrives at cycle N)" for a recv on `v`'s chip and
/// awaited link that found nothing while a value for it was on the wire
/// (sent in this window, so not delivered yet); else empty.
std::string nextArrival(const Violation &v, llvm::ArrayRef<const C2cMessage *> traffic) {
  if (!v.awaitedLink)
    return "";
  int64_t next = INT64_MAX;
  for (const C2cMessage *m : traffic)
    if (m->dstChip == v.chip && m->dstLink == *v.awaitedLink)
      next = std::min(next, m->arrival);
  return next == INT64_MAX ? "" : " (the next vector arrives at cycle " + std::to_string(next) + ")";
}

void putMessage(ByteWriter &w, const C2cMessage &m) {
  w.put(m.arrival);
  w.put(m.srcChip);
  w.put(m.srcLink);
  w.put(m.dstChip);
  w.put(m.dstLink);
  w.put(m.width);
  w.putBytes(llvm::StringRef(reinterpret_cast<const char *>(m.data.data()), m.data.size()));
  w.put(m.srcQueue);
  w.put(m.srcInstr);
  w.put(m.srcRepetition);
  w.put(m.sent);
  w.put(m.sequence);
}

C2cMessage getMessage(ByteReader &r) {
  C2cMessage m;
  m.arrival = r.get<int64_t>();
  m.srcChip = r.get<unsigned>();
  m.srcLink = r.get<unsigned>();
  m.dstChip = r.get<unsigned>();
  m.dstLink = r.get<unsigned>();
  m.width = r.get<unsigned>();
  llvm::StringRef data = r.getBytes();
  m.data.assign(data.bytes_begin(), data.bytes_end());
  m.srcQueue = r.get<uint32_t>();
  m.srcInstr = r.get<uint32_t>();
  m.srcRepetition = r.get<uint32_t>();
  m.sent = r.get<int64_t>();
  m.sequence = r.get<uint64_t>();
  return m;
}

void putViolation(ByteWriter &w, const Violation *v) {
  w.put<uint8_t>(v != nullptr);
  if (!v)
    return;
  w.put(v->cycle);
  w.put(v->chip);
  w.putBytes(v->message);
  w.put<uint8_t>(v->awaitedLink.has_value());
  w.put<unsigned>(v->awaitedLink.value_or(0));
}

std::optional<Violation> getViolation(ByteReader &r) {
  if (!r.get<uint8_t>())
    return std::nullopt;
  Violation v;
  v.cycle = r.get<int64_t>();
  v.chip = r.get<unsigned>();
  v.message = r.getBytes().str();
  bool awaited = r.get<uint8_t>();
  unsigned link = r.get<unsigned>();
  if (awaited)
    v.awaitedLink = link;
  return v;
}

void putVector(ByteWriter &w, const std::vector<uint64_t> &v) {
  w.put<uint64_t>(v.size());
  for (uint64_t x : v)
    w.put(x);
}

std::vector<uint64_t> getVector(ByteReader &r) {
  std::vector<uint64_t> v(std::min<uint64_t>(r.get<uint64_t>(), 1u << 20));
  for (uint64_t &x : v)
    x = r.get<uint64_t>();
  return v;
}

void putStats(ByteWriter &w, const ChipStats &s) {
  for (uint64_t x : s.busyCycles)
    w.put(x);
  for (uint64_t x : s.instructions)
    w.put(x);
  putVector(w, s.queueBusy);
  putVector(w, s.linkBytesSent);
  w.put(s.sramVectorsInUse);
  w.put(s.lastCycle);
}

ChipStats getStats(ByteReader &r) {
  ChipStats s;
  for (uint64_t &x : s.busyCycles)
    x = r.get<uint64_t>();
  for (uint64_t &x : s.instructions)
    x = r.get<uint64_t>();
  s.queueBusy = getVector(r);
  s.linkBytesSent = getVector(r);
  s.sramVectorsInUse = r.get<uint64_t>();
  s.lastCycle = r.get<int64_t>();
  return s;
}

llvm::Error cutShort() {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "a message between ranks was cut short");
}
} // namespace

llvm::Error Machine::run() {
  auto started = std::chrono::steady_clock::now();
  auto stopClock = llvm::make_scope_exit([&] {
    hostRunSeconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  });
  if (distributed())
    return runRanks();
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
    int64_t next = nextEvent(chips_);
    if (next == INT64_MAX)
      break;
    start = windowFor(next, start, window);
    int64_t limit = start + window;
    runWindow(chips_, limit, pool.get(), threads);
    // The earliest violation wins, whatever order the chips ran in.
    if (const Violation *first = earliestViolation(chips_)) {
      Violation v = *first;
      std::vector<const C2cMessage *> sent;
      for (auto &c : chips_)
        for (const C2cMessage &m : c->outbox())
          sent.push_back(&m);
      v.message += nextArrival(v, sent);
      return toError(v);
    }
    // Deliver this window's C2C traffic in a fixed order.
    std::vector<C2cMessage> traffic;
    for (auto &c : chips_)
      for (C2cMessage &m : c->takeOutbox())
        traffic.push_back(std::move(m));
    sortTraffic(traffic);
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
  size_t left = 0;
  if (const C2cMessage *lost = firstUnreceived(chips_, left))
    return toError(unreceived(*lost, left));
  stats_.clear();
  for (auto &c : chips_)
    stats_.push_back(c->stats());
  cycles_ = 0;
  for (const ChipStats &s : stats_)
    cycles_ = std::max(cycles_, s.lastCycle + 1);
  options_.progress.count("cycles", uint64_t(cycles_));
  return llvm::Error::success();
}

Violation Machine::unreceived(const C2cMessage &lost, size_t left) {
  ChipSim &sender = *chips_[lost.srcChip];
  sender.failAt(lost.srcQueue, lost.srcInstr, lost.srcRepetition, lost.sent,
                "no recv takes the value it sent: it arrives at chip " + llvm::Twine(lost.dstChip) +
                    ", link l" + llvm::Twine(lost.dstLink) + ", in cycle " +
                    llvm::Twine(lost.arrival) + " (" + llvm::Twine(left) +
                    " value(s) left on that link at the end of the run)");
  return *sender.violation();
}

llvm::Error Machine::runRanks() {
  Ranks &ranks = *options_.ranks;
  const unsigned me = ranks.rank(), n = ranks.size();
  const int64_t window =
      std::max<int64_t>(1, int64_t(chip_.c2cHopCycles) + chip_.c2cCyclesPerVector);
  options_.progress.count("cycles", 0);
  std::unique_ptr<llvm::ThreadPool> pool;
  unsigned local = 0;
  for (auto &c : chips_)
    local += c != nullptr;
  unsigned threads = std::min<unsigned>(options_.threads, std::max(1u, local));
  if (threads > 1)
    pool = std::make_unique<llvm::ThreadPool>(llvm::hardware_concurrency(threads));
  auto localReached = [&] {
    int64_t reached = 0;
    for (auto &c : chips_)
      if (c)
        reached = std::max(reached, c->stats().lastCycle + 1);
    return reached;
  };
  // Every rank runs the same windows: the earliest event of any chip,
  // known to each rank from the one exchange per window.
  int64_t next = INT64_MAX;
  {
    ByteWriter w;
    w.put(nextEvent(chips_));
    auto all = ranks.allGather(w.take());
    if (!all)
      return all.takeError();
    for (const std::string &blob : *all) {
      ByteReader r(blob);
      next = std::min(next, r.get<int64_t>());
      if (r.bad())
        return cutShort();
    }
  }
  int64_t start = 0;
  for (;;) {
    if (next == INT64_MAX)
      break;
    start = windowFor(next, start, window);
    int64_t limit = start + window;
    runWindow(chips_, limit, pool.get(), threads);
    // One message to each rank: this rank's next event, how far it got,
    // its earliest violation, and the traffic for that rank's chips.
    const Violation *mine = earliestViolation(chips_);
    std::vector<C2cMessage> kept;
    std::vector<std::vector<C2cMessage>> toRank(n);
    for (auto &c : chips_)
      if (c)
        for (C2cMessage &m : c->takeOutbox())
          (owners_[m.dstChip] == me ? kept : toRank[owners_[m.dstChip]]).push_back(std::move(m));
    const int64_t myNext = nextEvent(chips_), myReached = localReached();
    std::vector<std::string> out(n);
    for (unsigned r = 0; r < n; ++r) {
      ByteWriter w;
      w.put(myNext);
      w.put(myReached);
      putViolation(w, mine);
      w.put<uint64_t>(toRank[r].size());
      for (const C2cMessage &m : toRank[r])
        putMessage(w, m);
      out[r] = w.take();
    }
    auto in = ranks.allToAll(std::move(out));
    if (!in)
      return in.takeError();
    next = INT64_MAX;
    int64_t reached = 0;
    std::optional<Violation> first;
    for (unsigned r = 0; r < n; ++r) {
      ByteReader rd((*in)[r]);
      next = std::min(next, rd.get<int64_t>());
      reached = std::max(reached, rd.get<int64_t>());
      std::optional<Violation> v = getViolation(rd);
      if (v && (!first || std::make_pair(v->cycle, v->chip) < std::make_pair(first->cycle, first->chip)))
        first = std::move(v);
      uint64_t count = rd.get<uint64_t>();
      for (uint64_t i = 0; i < count && !rd.bad(); ++i)
        kept.push_back(getMessage(rd));
      if (rd.bad() || !rd.done())
        return cutShort();
    }
    if (first) {
      // The rank of the violating chip has every value sent to it in this
      // window: it names the next to arrive, and tells the others.
      std::string said;
      if (owners_[first->chip] == me) {
        std::vector<const C2cMessage *> sent;
        for (const C2cMessage &m : kept)
          sent.push_back(&m);
        said = first->message + nextArrival(*first, sent);
      }
      auto all = ranks.allGather(said);
      if (!all)
        return all.takeError();
      first->message = (*all)[owners_[first->chip]];
      ranks.settled = true;
      return toError(*first);
    }
    sortTraffic(kept);
    for (C2cMessage &m : kept)
      chips_[m.dstChip]->deliver(std::move(m));
    start = limit;
    options_.progress.count("cycles", uint64_t(reached));
  }
  // The end-of-run checks, as one process makes them: the first chip
  // that fails its own, then the earliest value nobody received.
  {
    const Violation *failed = nullptr;
    for (auto &c : chips_)
      if (c && !c->finish()) {
        failed = &*c->violation();
        break;
      }
    ByteWriter w;
    putViolation(w, failed);
    auto all = ranks.allGather(w.take());
    if (!all)
      return all.takeError();
    for (const std::string &blob : *all) {
      ByteReader r(blob);
      if (auto v = getViolation(r)) {
        ranks.settled = true;
        return toError(*v);
      }
    }
  }
  {
    size_t left = 0;
    const C2cMessage *lost = firstUnreceived(chips_, left);
    ByteWriter w;
    w.put<uint8_t>(lost != nullptr);
    if (lost) {
      w.put<uint64_t>(left);
      putMessage(w, *lost);
    }
    auto all = ranks.allGather(w.take());
    if (!all)
      return all.takeError();
    std::optional<C2cMessage> earliest;
    uint64_t earliestLeft = 0;
    for (const std::string &blob : *all) {
      ByteReader r(blob);
      if (!r.get<uint8_t>())
        continue;
      uint64_t k = r.get<uint64_t>();
      C2cMessage m = getMessage(r);
      if (r.bad())
        return cutShort();
      if (!earliest || m.arrival < earliest->arrival) {
        earliest = std::move(m);
        earliestLeft = k;
      }
    }
    if (earliest) {
      // Named by its send, on the sender's rank.
      std::string said;
      if (owners_[earliest->srcChip] == me)
        said = unreceived(*earliest, earliestLeft).message;
      auto texts = ranks.allGather(said);
      if (!texts)
        return texts.takeError();
      ranks.settled = true;
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     (*texts)[owners_[earliest->srcChip]]);
    }
  }
  // Every chip's figures, on every rank.
  ByteWriter w;
  for (unsigned c = 0; c < chips_.size(); ++c)
    if (chips_[c]) {
      w.put(c);
      putStats(w, chips_[c]->stats());
    }
  auto all = ranks.allGather(w.take());
  if (!all)
    return all.takeError();
  stats_.assign(chips_.size(), ChipStats{});
  for (const std::string &blob : *all) {
    ByteReader r(blob);
    while (!r.done() && !r.bad()) {
      unsigned c = r.get<unsigned>();
      ChipStats s = getStats(r);
      if (c < stats_.size())
        stats_[c] = std::move(s);
    }
    if (r.bad())
      return cutShort();
  }
  cycles_ = 0;
  for (const ChipStats &s : stats_)
    cycles_ = std::max(cycles_, s.lastCycle + 1);
  options_.progress.count("cycles", uint64_t(cycles_));
  return llvm::Error::success();
}

llvm::MutableArrayRef<uint8_t> Machine::sramVector(unsigned chip, unsigned slice, unsigned addr) {
  if (!chips_.at(chip))
    return {}; // another rank's chip
  uint8_t *v = chips_[chip]->sramVector(slice, addr); // none in timing-only runs
  return v ? llvm::MutableArrayRef<uint8_t>(v, chip_.lanes) : llvm::MutableArrayRef<uint8_t>();
}

RunReport Machine::report() const {
  RunReport r;
  r.cycles = cycles_;
  r.hostRunSeconds = hostRunSeconds_;
  r.clockMHz = chip_.clockMHz;
  r.lanes = chip_.lanes;
  for (unsigned c = 0; c < chips_.size(); ++c) {
    // Before run() has gathered them: this rank's chips as they stand.
    r.chips.push_back(c < stats_.size() ? stats_[c] : chips_[c] ? chips_[c]->stats() : ChipStats{});
    std::vector<std::string> names;
    for (const Queue &q : bucket_.codeOf(c).queues)
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

std::string Machine::chipTraceEvents(unsigned c) const {
  // Printed as they are made: a big program's trace is millions of events.
  std::string out;
  llvm::raw_string_ostream os(out);
  bool any = false;
  auto push = [&](llvm::json::Value event) {
    os << (any ? "," : "") << event;
    any = true;
  };
  {
    const ChipSim &chip = *chips_[c];
    const unsigned queues = unsigned(chip.code().queues.size());
    push(llvm::json::Object{{"name", "process_name"}, {"ph", "M"}, {"pid", c},
                                        {"args", llvm::json::Object{{"name", "chip " + std::to_string(c)}}}});
    for (unsigned q = 0; q < queues; ++q)
      push(llvm::json::Object{
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
        push(std::move(event));
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
      push(std::move(event));
      llvm::json::Object arrow{{"name", "c2c"}, {"cat", "c2c"}, {"ph", t.send ? "s" : "f"},
                               {"id", int64_t(flow)}, {"pid", c},   {"tid", e.queue},
                               {"ts", e.cycle}};
      if (!t.send)
        arrow["bp"] = "e"; // ends at the recv's own event, not the next one
      push(std::move(arrow));
      if (t.send) {
        unsigned tid = queues + t.link;
        linkTrack[t.link] = true;
        push(llvm::json::Object{
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
        push(llvm::json::Object{
            {"name", "thread_name"}, {"ph", "M"}, {"pid", c}, {"tid", queues + l},
            {"args", llvm::json::Object{{"name", "link l" + std::to_string(l)}}}});
  }
  return os.str();
}

llvm::Expected<std::string> Machine::traceJson() const {
  // Each chip's events, gathered to rank 0 from the rank that ran it.
  std::vector<std::string> perChip(chips_.size());
  if (distributed()) {
    ByteWriter w;
    for (unsigned c = 0; c < chips_.size(); ++c)
      if (chips_[c]) {
        w.put(c);
        w.putBytes(chipTraceEvents(c));
      }
    auto all = options_.ranks->gather(w.take());
    if (!all)
      return all.takeError();
    if (options_.ranks->rank() != 0)
      return std::string();
    for (const std::string &blob : *all) {
      ByteReader r(blob);
      while (!r.done() && !r.bad()) {
        unsigned c = r.get<unsigned>();
        llvm::StringRef events = r.getBytes();
        if (c < perChip.size())
          perChip[c] = events.str();
      }
      if (r.bad())
        return cutShort();
    }
  } else {
    for (unsigned c = 0; c < chips_.size(); ++c)
      perChip[c] = chipTraceEvents(c);
  }
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool any = false;
  for (const std::string &events : perChip) {
    if (events.empty())
      continue;
    out += any ? "," : "";
    out += events;
    any = true;
  }
  out += "]}\n";
  return out;
}

} // namespace lpu::sim
