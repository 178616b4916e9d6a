#include "sim/ChipSim.h"

#include "backend/ProgramText.h"
#include "sim/HalfConvert.h"
#include "sim/MxmPlane.h"
#include "sim/VectorOps.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace lpu::sim {

using namespace backend;

namespace {
void noFree(void *) {}
} // namespace

ChipSim::ChipSim(const ChipDescription &chip, const Topology &topology, unsigned index,
                 const ChipCode &code, ChipOptions options, const SharedCode *shared)
    : chip_(chip), topology_(topology), index_(index), code_(code), options_(options),
      sram_(nullptr, noFree) {
  // A chip that runs another's code: every queue later by the delay, its
  // sends and recvs on its own links.
  const int64_t start = shared ? int64_t(shared->delay) : 0;
  linkMap_.resize(chip.c2cLinks);
  for (unsigned l = 0; l < chip.c2cLinks; ++l)
    linkMap_[l] = shared ? shared->link(uint16_t(l)) : uint16_t(l);
  queues_.resize(code.queues.size());
  for (uint32_t q = 0; q < code.queues.size(); ++q)
    if (!code.queues[q].instrs.empty())
      events_.push({start, q});
  // A chip with no work (a topology's chips the program leaves idle) never
  // touches its streams or planes: it holds only what a run may ask of any
  // chip (its inbox, its SRAM map, its figures), so a program on 16 chips
  // of a 4,096-chip topology is not simulated at 6 MB a chip.
  if (events_.empty()) {
    // Its SRAM only once a tensor is written there (an input returned as
    // it is): sramVector.
    stats_.queueBusy.assign(code.queues.size(), 0);
    stats_.linkBytesSent.assign(chip.c2cLinks, 0);
    linkBusyUntil_.assign(chip.c2cLinks, 0);
    linkSends_.assign(chip.c2cLinks, 0);
    inbox_.resize(chip.c2cLinks);
    return;
  }
  if (!options.timingOnly) {
    // calloc hands out untouched zero pages: a chip only pays for the SRAM
    // it uses.
    allocateSram();
    slotData_.assign(size_t(2) * chip.streamsPerDirection * kRing * chip.lanes, 0);
  }
  scratch_.assign(size_t(32) * chip.lanes, 0);
  portCycle_.assign(chip.memSlices, -1);
  portReads_.assign(chip.memSlices, 0);
  portWrites_.assign(chip.memSlices, 0);
  slots_.resize(size_t(2) * chip.streamsPerDirection * kRing);
  diagonals_.assign(slots_.size(), -1);
  auto describe = [this](const MxmSite &s) {
    // A repetition's site is its repeat: name the instruction repeated.
    const uint32_t i = s.repetition ? s.instr - 1 : s.instr;
    return "queue " + queueName(code_.queues[s.queue]) + " instruction " + std::to_string(i) +
           " (" + printInstr(code_.queues[s.queue].instrs[i]) +
           (s.repetition ? ", repetition " + std::to_string(s.repetition) : std::string()) +
           ") in cycle " + std::to_string(s.cycle);
  };
  for (unsigned p = 0; p < chip.mxmPlanes; ++p)
    planes_.push_back(std::make_unique<MxmPlane>(chip.mxmDim, chip.mxmAccRows, options.timingOnly,
                                                 options.matmulThreads, describe));
  linkBusyUntil_.assign(chip.c2cLinks, 0);
  linkSends_.assign(chip.c2cLinks, 0);
  inbox_.resize(chip.c2cLinks);
  for (unsigned op = 0; op < kNumOpcodes; ++op)
    for (unsigned t = 0; t < 8; ++t)
      timing_.push_back(chip.timingOf(Opcode(op), DType(t <= unsigned(DType::F32) ? t : 0)));
  stats_.queueBusy.assign(code.queues.size(), 0);
  stats_.linkBytesSent.assign(chip.c2cLinks, 0);
}

ChipSim::~ChipSim() = default;

void ChipSim::allocateSram() {
  sram_ = std::unique_ptr<uint8_t, void (*)(void *)>(static_cast<uint8_t *>(std::calloc(chip_.sramBytes(), 1)),
                                                      std::free);
  // Out of host memory as operator new is: the tools' handler says so and
  // exits 1.
  if (!sram_) {
    if (std::new_handler handler = std::get_new_handler())
      handler();
    throw std::bad_alloc();
  }
}

uint8_t *ChipSim::sramVector(unsigned slice, unsigned addr) {
  if (!sram_ && !options_.timingOnly)
    allocateSram();
  if (!sram_)
    return nullptr;
  return sram_.get() + (size_t(slice) * chip_.memVectors + addr) * chip_.lanes;
}

void ChipSim::markInUse(unsigned slice, unsigned addr) {
  if (inUse_.empty())
    inUse_.assign(size_t(chip_.memSlices) * chip_.memVectors, false);
  size_t i = size_t(slice) * chip_.memVectors + addr;
  if (!inUse_[i]) {
    inUse_[i] = true;
    ++stats_.sramVectorsInUse;
  }
}

bool ChipSim::fail(const Ctx &ctx, const llvm::Twine &detail) {
  if (violation_)
    return false;
  const Queue &q = code_.queues[ctx.queue];
  const Instr &in = q.instrs[ctx.instr];
  std::string what = "instruction " + std::to_string(ctx.instr) + " (" + printInstr(in);
  if (ctx.repetition)
    what += ", repetition " + std::to_string(ctx.repetition) + " of instruction " +
            std::to_string(ctx.instr - 1);
  what += ")";
  violation_ = Violation{ctx.cycle, index_,
                         ("schedule violation: chip " + llvm::Twine(index_) + ", unit " +
                          unitKindName(q.unit) + ", queue " + queueName(q) + ", " + what +
                          ", cycle " + llvm::Twine(ctx.cycle) + ": " + detail)
                             .str(),
                         std::nullopt};
  return false;
}

size_t ChipSim::slotIndex(unsigned dir, unsigned id, int64_t cycle) const {
  return (size_t(dir - 1) * chip_.streamsPerDirection + id) * kRing + size_t(cycle % kRing);
}

size_t ChipSim::diagonalIndex(unsigned dir, unsigned id, int64_t pos, int64_t cycle) const {
  const int64_t d = dir == StreamRef::East ? pos - cycle : pos + cycle;
  return (size_t(dir - 1) * chip_.streamsPerDirection + id) * kRing + size_t(d & (kRing - 1));
}

const uint8_t *ChipSim::readStream(const Ctx &ctx, StreamRef s, unsigned offset, unsigned groupWidth,
                                   unsigned pos) {
  unsigned id = s.id + offset;
  int64_t c = ctx.cycle;
  // A value emitted at position x and cycle t is at position y at cycle
  // t + |y - x| (downstream only). Walking t down from c walks x towards
  // the source, so the first match is the nearest producer upstream: the
  // latest value put on this diagonal no later than c. The diagonal's
  // latest value is that one when it is on this diagonal, no later than c
  // and close enough; else walk.
  unsigned width = chip_.width();
  unsigned from = 0;
  static_assert((kRing & (kRing - 1)) == 0, "diagonals are taken mod kRing by a mask");
  const int64_t latest = diagonals_[diagonalIndex(s.dir, id, pos, c)];
  if (latest >= 0 && latest <= c && c - latest < int64_t(width)) {
    const int64_t dist = c - latest;
    const int64_t x = s.dir == StreamRef::East ? int64_t(pos) - dist : int64_t(pos) + dist;
    const StreamSlot &slot = slots_[slotIndex(s.dir, id, latest)];
    if (x >= 0 && x < int64_t(width) && slot.cycle == latest && slot.pos == uint32_t(x))
      from = unsigned(dist);
  }
  for (unsigned dist = from; dist < width; ++dist) {
    int64_t t = c - dist;
    if (t < 0)
      break;
    int64_t x = s.dir == StreamRef::East ? int64_t(pos) - dist : int64_t(pos) + dist;
    if (x < 0 || x >= int64_t(width))
      break;
    size_t i = slotIndex(s.dir, id, t);
    StreamSlot &slot = slots_[i];
    if (slot.cycle == t && slot.pos == uint32_t(x)) {
      slot.read = true;
      // A typed read narrower than the value from its first stream (a u16
      // map read from an i32 result) reads the value: the bytes above stay
      // unread by design. Byte-wide reads (a write or a send of one byte
      // plane) read their own stream only, so a byte plane moved off its
      // diagonal leaves its own part of the value unread.
      if (offset == 0 && groupWidth >= 2 && id == slot.first && groupWidth < slot.width)
        for (unsigned k = slot.first; k < unsigned(slot.first) + slot.width; ++k) {
          StreamSlot &part = slots_[slotIndex(s.dir, k, t)];
          if (part.cycle == t && part.issue == slot.issue && part.queue == slot.queue &&
              part.instr == slot.instr)
            part.read = true;
        }
      return slotData_.empty() ? scratch_.data() : slotData_.data() + i * chip_.lanes;
    }
  }
  StreamRef one{s.dir, uint8_t(id)};
  fail(ctx, "stream " + streamName(one) + " holds no valid data at position " + llvm::Twine(pos));
  return nullptr;
}

bool ChipSim::readGroup(const Ctx &ctx, StreamRef s, unsigned width, unsigned pos,
                        const uint8_t **planes) {
  for (unsigned b = 0; b < width; ++b)
    if (!(planes[b] = readStream(ctx, s, b, width, pos)))
      return false;
  return true;
}

bool ChipSim::emitGroup(const Ctx &ctx, StreamRef s, unsigned width, unsigned pos, int64_t cycle,
                        uint8_t **planes) {
  for (unsigned b = 0; b < width; ++b) {
    size_t i = slotIndex(s.dir, s.id + b, cycle);
    StreamSlot &slot = slots_[i];
    if (slot.cycle == cycle) {
      const Queue &other = code_.queues[slot.queue];
      StreamRef one{s.dir, uint8_t(s.id + b)};
      return fail(ctx, "two writers of stream " + streamName(one) + " in cycle " +
                           llvm::Twine(cycle) + " (the other is queue " + queueName(other) +
                           " instruction " + llvm::Twine(slot.instr) + ")");
    }
    // The ring's slot last held a value of cycle - kRing, which has left
    // the chip by now: it must have been read.
    if (slot.cycle >= 0 && !slot.read)
      return failUnread(slot, s.dir, s.id + b);
    slot = StreamSlot{cycle, pos, ctx.queue, ctx.instr, ctx.repetition, ctx.cycle,
                      s.id, uint8_t(width), false};
    int64_t &latest = diagonals_[diagonalIndex(s.dir, s.id + b, pos, cycle)];
    latest = std::max(latest, cycle);
    planes[b] = slotData_.empty() ? scratch_.data() + b * chip_.lanes
                                  : slotData_.data() + i * chip_.lanes;
  }
  stats_.lastCycle = std::max(stats_.lastCycle, cycle);
  return true;
}

bool ChipSim::failUnread(const StreamSlot &slot, unsigned dir, unsigned id) {
  StreamRef one{uint8_t(dir), uint8_t(id)};
  return fail(Ctx{slot.queue, slot.instr, slot.repetition, slot.issue},
              "its value on stream " + streamName(one) + " (at position " + llvm::Twine(slot.pos) +
                  " in cycle " + llvm::Twine(slot.cycle) + ") is read by no instruction");
}

bool ChipSim::memPort(const Ctx &ctx, unsigned slice, bool write) {
  if (portCycle_[slice] != ctx.cycle) {
    portCycle_[slice] = ctx.cycle;
    portReads_[slice] = portWrites_[slice] = 0;
  }
  uint8_t &n = write ? portWrites_[slice] : portReads_[slice];
  unsigned limit = write ? chip_.memWritePorts : chip_.memReadPorts;
  if (++n > limit)
    return fail(ctx, "MEM slice " + llvm::Twine(slice) + " " + (write ? "written" : "read") + " " +
                         llvm::Twine(unsigned(n)) + " times in one cycle (it has " +
                         llvm::Twine(limit) + " " + (write ? "write" : "read") + " port(s))");
  return true;
}

bool ChipSim::checkAddr(const Ctx &ctx, unsigned slice, int64_t addr) {
  if (addr < 0 || addr >= int64_t(chip_.memVectors))
    return fail(ctx, "address " + llvm::Twine(addr) + " outside SRAM (slice " +
                         llvm::Twine(slice) + " has " + llvm::Twine(chip_.memVectors) +
                         " vectors)");
  return true;
}

bool ChipSim::runUntil(int64_t limit) {
  for (;;) {
    if (violation_)
      return false;
    bool have = !events_.empty();
    int64_t cycle = have ? events_.top().first : INT64_MAX;
    // Finish a cycle before anything of the next: SRAM writes land and
    // notified queues wake up (possibly in the next cycle, so look again).
    if (currentCycle_ >= 0 && cycle != currentCycle_) {
      endCycle(currentCycle_);
      currentCycle_ = -1;
      continue;
    }
    if (!have || cycle >= limit)
      return true;
    currentCycle_ = cycle;
    uint32_t queue = events_.top().second;
    events_.pop();
    issue(queue, cycle);
  }
}

void ChipSim::endCycle(int64_t cycle) {
  for (PendingWrite &w : pendingWrites_) {
    if (w.whole) {
      std::memcpy(sramVector(w.slice, w.addr), w.data.data(), chip_.lanes);
      continue;
    }
    for (unsigned i = 0; i < chip_.lanes; ++i)
      sramVector(w.slice, w.addrs[i])[i] = w.data[i];
  }
  pendingWrites_.clear();
  if (notifyThisCycle_) {
    for (uint32_t q : parked_) {
      queues_[q].parked = false;
      if (queues_[q].pc < code_.queues[q].instrs.size())
        events_.push({cycle + 1, q});
    }
    parked_.clear();
    notifyThisCycle_ = false;
  }
}

void ChipSim::issue(uint32_t q, int64_t cycle) {
  const Queue &queue = code_.queues[q];
  QueueState &st = queues_[q];
  const Instr &in = queue.instrs[st.pc];
  Ctx ctx{q, uint32_t(st.pc), 0, cycle};
  if (st.inRepeat) {
    // Repetition j of the instruction before the repeat, addresses stepped.
    const Instr &prev = queue.instrs[st.pc - 1];
    uint32_t j = ++st.repeatDone;
    ctx.repetition = j;
    if (!execute(prev, ctx, j))
      return;
    unsigned interval = timingOf(prev.op, prev.dtype).issue;
    if (j < in.count) {
      events_.push({st.lastIssue + int64_t(j + 1) * in.delay, q});
    } else {
      st.inRepeat = false;
      if (++st.pc < queue.instrs.size())
        events_.push({cycle + interval, q});
    }
    return;
  }
  switch (in.op) {
  case Opcode::Nop:
    stats_.lastCycle = std::max(stats_.lastCycle, cycle + int64_t(in.count) - 1);
    if (++st.pc < queue.instrs.size())
      events_.push({cycle + in.count, q});
    return;
  case Opcode::Repeat: {
    const Instr &prev = queue.instrs[st.pc - 1];
    unsigned interval = timingOf(prev.op, prev.dtype).issue;
    if (in.delay < interval) {
      fail(ctx, "repeat every " + llvm::Twine(in.delay) + " cycles, but " +
                    opcodeInfo(prev.op).mnemonic + " issues at most every " +
                    llvm::Twine(interval) + " cycles");
      return;
    }
    st.inRepeat = true;
    st.repeatDone = 0;
    events_.push({st.lastIssue + in.delay, q});
    return;
  }
  case Opcode::Sync:
    st.parked = true;
    parked_.push_back(q);
    ++st.pc; // a trailing sync still waits for its notify
    return;
  case Opcode::Notify:
    notifyThisCycle_ = true;
    stats_.lastCycle = std::max(stats_.lastCycle, cycle);
    if (++st.pc < queue.instrs.size())
      events_.push({cycle + 1, q});
    return;
  default:
    break;
  }
  if (!execute(in, ctx, 0))
    return;
  unsigned interval = timingOf(in.op, in.dtype).issue;
  if (++st.pc < queue.instrs.size())
    events_.push({cycle + interval, q});
}

bool ChipSim::execute(const Instr &in, const Ctx &ctx, int64_t j) {
  const Queue &queue = code_.queues[ctx.queue];
  QueueState &st = queues_[ctx.queue];
  const int64_t c = ctx.cycle;
  ChipDescription::Timing timing = timingOf(in.op, in.dtype);
  const int64_t done = c + timing.latency;
  const unsigned lanes = chip_.lanes;
  const bool data = !options_.timingOnly;
  if (!j)
    st.lastIssue = c;
  stats_.busyCycles[unsigned(queue.unit)] += timing.issue;
  stats_.instructions[unsigned(queue.unit)] += 1;
  stats_.queueBusy[ctx.queue] += timing.issue;
  stats_.lastCycle = std::max(stats_.lastCycle, done);
  if (options_.trace)
    trace_.push_back(TraceEvent{ctx.queue, timing.issue, c, in.op});

  const int64_t addr = int64_t(in.addr) + j * in.step;
  const unsigned w = streamWidth(in.dtype);
  const uint8_t *a[32];
  const uint8_t *b[32];
  uint8_t *out[32];

  if (std::optional<tensor::ElementwiseOp> e = elementwiseOf(in.op)) { // support/Elementwise.def
    unsigned pos = chip_.vxmPosition();
    if (tensor::isUnary(*e)) {
      if (!readGroup(ctx, in.src0, w, pos, a) || !emitGroup(ctx, in.dst, w, pos, done, out))
        return false;
      if (data)
        vxmUnary(in.op, in.dtype, a, out, lanes);
      return true;
    }
    bool compare = tensor::isComparison(*e);
    if (!readGroup(ctx, in.src0, w, pos, a) || !readGroup(ctx, in.src1, w, pos, b) ||
        !emitGroup(ctx, in.dst, compare ? 1 : w, pos, done, out))
      return false;
    if (data)
      vxmBinary(in.op, in.dtype, a, b, out, lanes);
    return true;
  }
  switch (in.op) {
  case Opcode::Read: {
    unsigned pos = chip_.slicePosition(in.unit);
    if (!checkAddr(ctx, in.unit, addr) || !memPort(ctx, in.unit, false) ||
        !emitGroup(ctx, in.dst, 1, pos, done, out))
      return false;
    if (data)
      std::memcpy(out[0], sramVector(in.unit, unsigned(addr)), lanes);
    return true;
  }
  case Opcode::Write: {
    unsigned pos = chip_.slicePosition(in.unit);
    if (!checkAddr(ctx, in.unit, addr) || !memPort(ctx, in.unit, true) ||
        !readGroup(ctx, in.src0, 1, pos, a))
      return false;
    markInUse(in.unit, unsigned(addr));
    if (data)
      pendingWrites_.push_back(
          PendingWrite{in.unit, unsigned(addr), std::vector<uint8_t>(a[0], a[0] + lanes), true, {}});
    return true;
  }
  case Opcode::Gather:
  case Opcode::Scatter: {
    unsigned pos = chip_.slicePosition(in.unit);
    bool scatter = in.op == Opcode::Scatter;
    if (!checkAddr(ctx, in.unit, addr) || !memPort(ctx, in.unit, scatter) ||
        !readGroup(ctx, in.src1, 2, pos, b))
      return false;
    if (scatter && !readGroup(ctx, in.src0, 1, pos, a))
      return false;
    std::vector<uint32_t> addrs(lanes);
    for (unsigned i = 0; i < lanes; ++i) {
      int64_t target = addr + (data ? (b[0][i] | (b[1][i] << 8)) : 0);
      if (!checkAddr(ctx, in.unit, target))
        return false;
      addrs[i] = uint32_t(target);
    }
    if (scatter) {
      for (unsigned i = 0; i < lanes; ++i)
        markInUse(in.unit, addrs[i]);
      if (data)
        pendingWrites_.push_back(PendingWrite{in.unit, 0, std::vector<uint8_t>(a[0], a[0] + lanes),
                                              false, std::move(addrs)});
      return true;
    }
    if (!emitGroup(ctx, in.dst, 1, pos, done, out))
      return false;
    if (data)
      for (unsigned i = 0; i < lanes; ++i)
        out[0][i] = sramVector(in.unit, addrs[i])[i];
    return true;
  }
  case Opcode::Copy: {
    unsigned pos = chip_.vxmPosition();
    if (!readGroup(ctx, in.src0, w, pos, a) || !emitGroup(ctx, in.dst, w, pos, done, out))
      return false;
    if (data)
      vxmUnary(in.op, in.dtype, a, out, lanes);
    return true;
  }
  case Opcode::Select: {
    unsigned pos = chip_.vxmPosition();
    const uint8_t *cond[1];
    if (!readGroup(ctx, in.src0, 1, pos, cond) || !readGroup(ctx, in.src1, w, pos, a) ||
        !readGroup(ctx, in.src2, w, pos, b) || !emitGroup(ctx, in.dst, w, pos, done, out))
      return false;
    if (data)
      vxmSelect(in.dtype, cond, a, b, out, lanes);
    return true;
  }
  case Opcode::Cvt:
  case Opcode::CvtTrunc: {
    unsigned pos = chip_.vxmPosition();
    if (!readGroup(ctx, in.src0, w, pos, a) ||
        !emitGroup(ctx, in.dst, streamWidth(in.dtype2), pos, done, out))
      return false;
    if (data)
      vxmConvert(in.dtype, in.dtype2, in.op == Opcode::CvtTrunc, a, out, lanes);
    return true;
  }
  case Opcode::LoadWeights:
  case Opcode::MatMul: {
    unsigned pos = chip_.planePosition(in.unit);
    if (!readGroup(ctx, in.src0, w, pos, a))
      return false;
    float row[4096];
    if (data) {
      if (in.dtype == DType::F16)
        halfPlanesToFloat(a[0], a[1], row, lanes);
      else
        for (unsigned i = 0; i < lanes; ++i)
          row[i] = float(int8_t(a[0][i]));
    }
    MxmPlane &plane = *planes_[in.unit];
    // A row lands at the end of its last cycle of latency (as an SRAM
    // write lands at the end of its cycle).
    std::string err = in.op == Opcode::LoadWeights
                          ? plane.loadRow(in.dtype, row, site(ctx), done - 1)
                          : plane.multiply(in.dtype, row, uint32_t(std::max<int64_t>(addr, 0)),
                                           site(ctx), done);
    if (addr < 0)
      err = "accumulator row " + std::to_string(addr) + " is negative";
    if (!err.empty())
      return fail(ctx, "plane " + llvm::Twine(in.unit) + ": " + err);
    return true;
  }
  case Opcode::InstallWeights: {
    std::string err = planes_[in.unit]->install(site(ctx), done);
    if (!err.empty())
      return fail(ctx, "plane " + llvm::Twine(in.unit) + ": " + err);
    return true;
  }
  case Opcode::AccRead: {
    unsigned pos = chip_.planePosition(in.unit);
    if (addr < 0)
      return fail(ctx, "accumulator row " + llvm::Twine(addr) + " is negative");
    if (!emitGroup(ctx, in.dst, 4, pos, done, out))
      return false;
    std::string err =
        planes_[in.unit]->readAcc(in.dtype, uint32_t(addr), site(ctx), data ? out : nullptr);
    if (!err.empty())
      return fail(ctx, "plane " + llvm::Twine(in.unit) + ": " + err);
    return true;
  }
  case Opcode::Shift: case Opcode::Rotate: case Opcode::Permute: case Opcode::Distribute: {
    unsigned pos = chip_.sxmPosition(*chip_.queueIsEast(UnitKind::Sxm, queue.index));
    bool mapped = in.op == Opcode::Permute || in.op == Opcode::Distribute;
    if (!readGroup(ctx, in.src0, w, pos, a) || (mapped && !readGroup(ctx, in.src1, 2, pos, b)) ||
        !emitGroup(ctx, in.dst, w, pos, done, out))
      return false;
    if (data)
      sxmMove(in.op, in.count, a, mapped ? b : nullptr, out, w, lanes);
    return true;
  }
  case Opcode::Transpose: {
    unsigned pos = chip_.sxmPosition(*chip_.queueIsEast(UnitKind::Sxm, queue.index));
    if (!readGroup(ctx, in.src0, 16, pos, a) || !emitGroup(ctx, in.dst, 16, pos, done, out))
      return false;
    if (data)
      sxmTranspose(a, out, lanes);
    return true;
  }
  case Opcode::Send: {
    const unsigned link = in.unit < linkMap_.size() ? linkMap_[in.unit] : in.unit;
    unsigned pos = chip_.linkPosition(link);
    if (!readGroup(ctx, in.src0, w, pos, a))
      return false;
    if (c < linkBusyUntil_[link])
      return fail(ctx, "link l" + llvm::Twine(link) + " over bandwidth: it is still sending until cycle " +
                           llvm::Twine(linkBusyUntil_[link]) + " (" +
                           llvm::Twine(chip_.c2cCyclesPerVector) + " cycles per vector)");
    // verifyProgram refuses it first; a program run unverified must not
    // send into nowhere.
    std::optional<LinkEnd> peer = topology_.peer(index_, link);
    if (!peer)
      return fail(ctx, "link l" + llvm::Twine(link) + " is not cabled in topology '" +
                           topology_.spec() + "'");
    int64_t serial = int64_t(w) * chip_.c2cCyclesPerVector;
    linkBusyUntil_[link] = c + serial;
    stats_.linkBytesSent[link] += uint64_t(w) * lanes;
    C2cMessage m{c + serial + chip_.c2cHopCycles, index_, link, peer->chip, peer->link, w, {}};
    m.srcQueue = ctx.queue;
    m.srcInstr = ctx.instr;
    m.srcRepetition = ctx.repetition;
    m.sent = c;
    m.sequence = linkSends_[link]++;
    if (data)
      for (unsigned p = 0; p < w; ++p)
        m.data.insert(m.data.end(), a[p], a[p] + lanes);
    stats_.lastCycle = std::max(stats_.lastCycle, m.arrival);
    if (options_.trace) {
      trace_.back().c2c = int32_t(c2cTrace_.size());
      c2cTrace_.push_back({true, link, *peer, c, m.arrival, m.sequence});
    }
    outbox_.push_back(std::move(m));
    return true;
  }
  case Opcode::Receive: {
    const unsigned link = in.unit < linkMap_.size() ? linkMap_[in.unit] : in.unit;
    unsigned pos = chip_.linkPosition(link);
    std::deque<C2cMessage> &box = inbox_[link];
    if (box.empty() || box.front().arrival > c) {
      std::optional<LinkEnd> peer = topology_.peer(index_, link);
      std::string from = peer ? " (from chip " + std::to_string(peer->chip) + ", link l" +
                                    std::to_string(peer->link) + ")"
                              : std::string();
      fail(ctx, "receive on link l" + llvm::Twine(link) + from + " with no data arrived" +
                    (box.empty() ? std::string()
                                 : " (the next vector arrives at cycle " +
                                       std::to_string(box.front().arrival) + ")"));
      if (box.empty() && violation_)
        violation_->awaitedLink = link;
      return false;
    }
    C2cMessage m = std::move(box.front());
    box.pop_front();
    if (m.width != w)
      return fail(ctx, "received " + llvm::Twine(m.width) + " streams, the instruction takes " +
                           llvm::Twine(w));
    if (options_.trace) {
      trace_.back().c2c = int32_t(c2cTrace_.size());
      c2cTrace_.push_back(
          {false, link, LinkEnd{m.srcChip, m.srcLink}, m.sent, m.arrival, m.sequence});
    }
    if (!emitGroup(ctx, in.dst, w, pos, done, out))
      return false;
    if (data)
      for (unsigned p = 0; p < w; ++p)
        std::memcpy(out[p], m.data.data() + size_t(p) * lanes, lanes);
    return true;
  }
  default:
    return fail(ctx, "not a unit instruction");
  }
}

void ChipSim::deliver(C2cMessage message) { inbox_[message.dstLink].push_back(std::move(message)); }

const C2cMessage *ChipSim::firstUnreceived(size_t &onItsLink) const {
  const C2cMessage *first = nullptr;
  onItsLink = 0;
  for (const std::deque<C2cMessage> &box : inbox_)
    if (!box.empty() && (!first || box.front().arrival < first->arrival)) {
      first = &box.front();
      onItsLink = box.size();
    }
  return first;
}

void ChipSim::failAt(uint32_t queue, uint32_t instr, uint32_t repetition, int64_t cycle,
                     const llvm::Twine &detail) {
  fail(Ctx{queue, instr, repetition, cycle}, detail);
}

bool ChipSim::finish() {
  if (violation_)
    return false;
  for (auto &plane : planes_) {
    plane->flush();
    plane->wait();
  }
  for (uint32_t q : parked_) {
    const Queue &queue = code_.queues[q];
    violation_ = Violation{stats_.lastCycle, index_,
                           "deadlock: chip " + std::to_string(index_) + ", unit " +
                               unitKindName(queue.unit).str() + ", queue " + queueName(queue) +
                               ", instruction " + std::to_string(queues_[q].pc - 1) +
                               " (sync) waits for a notify that never comes",
                           std::nullopt};
    return false;
  }
  // Values still on the streams: the earliest unread one.
  const StreamSlot *unread = nullptr;
  size_t unreadAt = 0;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].cycle >= 0 && !slots_[i].read && (!unread || slots_[i].issue < unread->issue)) {
      unread = &slots_[i];
      unreadAt = i;
    }
  if (unread) {
    const size_t stream = unreadAt / kRing;
    return failUnread(*unread, unsigned(stream / chip_.streamsPerDirection) + 1,
                      unsigned(stream % chip_.streamsPerDirection));
  }
  for (unsigned p = 0; p < planes_.size(); ++p) {
    MxmSite last;
    if (unsigned rows = planes_[p]->uninstalledRows(last))
      return fail(Ctx{last.queue, last.instr, last.repetition, last.cycle},
                  "plane " + llvm::Twine(p) + ": " + llvm::Twine(rows) +
                      " weight row(s) loaded and never installed (the last by this load; the "
                      "run ends at cycle " +
                      llvm::Twine(stats_.lastCycle) + ")");
  }
  return true;
}

} // namespace lpu::sim
