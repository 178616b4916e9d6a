// One chip's machine state and its cycle-by-cycle execution: the instruction
// queues, the stream registers (values move one slice per cycle along their
// direction), SRAM with its ports, the MXM planes, and the C2C links' send
// side. Machine.h drives several chips and carries C2C traffic between them.
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Program.h"
#include "backend/Topology.h"
#include "sim/MxmPlane.h"
#include "sim/Violation.h"

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <vector>

namespace lpu::sim {

struct C2cMessage {
  int64_t arrival = 0; // first cycle a receive may take it
  unsigned srcChip = 0, srcLink = 0, dstChip = 0, dstLink = 0;
  unsigned width = 0;        // streams
  std::vector<uint8_t> data; // width * lanes bytes (empty in timing-only runs)
  /// The send that put it on the wire, to name it when no recv takes it:
  /// its queue, instruction index and repetition on srcChip, and its cycle.
  uint32_t srcQueue = 0, srcInstr = 0, srcRepetition = 0;
  int64_t sent = 0;
  /// The how-manieth send on srcChip's srcLink (from 0): with the link, it
  /// names the message in traces.
  uint64_t sequence = 0;
};

/// A send or recv in the trace: the link's far end, when the value was
/// sent and arrives, and its sequence number on the sending link.
struct C2cTraceEvent {
  bool send = false;
  unsigned link = 0;
  backend::LinkEnd peer;
  int64_t sent = 0, arrival = 0;
  uint64_t sequence = 0;
};

struct TraceEvent {
  uint32_t queue;
  uint32_t duration;
  int64_t cycle;
  backend::Opcode op;
  int32_t c2c = -1; // its C2cTraceEvent (sends and recvs), else -1
};

struct ChipStats {
  std::array<uint64_t, backend::kNumUnitKinds> busyCycles{};
  std::array<uint64_t, backend::kNumUnitKinds> instructions{};
  std::vector<uint64_t> queueBusy;     // per queue of the chip's code
  std::vector<uint64_t> linkBytesSent; // per link
  uint64_t sramVectorsInUse = 0;
  int64_t lastCycle = -1; // the last cycle anything happened
};

struct ChipOptions {
  bool timingOnly = false;
  bool trace = false;
  unsigned matmulThreads = 1;
};

class ChipSim {
public:
  ChipSim(const backend::ChipDescription &chip, const backend::Topology &topology, unsigned index,
          const backend::ChipCode &code, ChipOptions options,
          const backend::SharedCode *shared = nullptr);
  ~ChipSim();
  ChipSim(const ChipSim &) = delete;
  ChipSim &operator=(const ChipSim &) = delete;

  /// The bytes of one SRAM vector (nullptr in timing-only runs).
  uint8_t *sramVector(unsigned slice, unsigned addr);
  void markInUse(unsigned slice, unsigned addr);

  /// Runs every event before cycle `limit`. Returns false once a violation
  /// has stopped the chip (see violation()).
  bool runUntil(int64_t limit);
  /// No instruction left to issue (parked queues count as not done).
  bool idle() const { return events_.empty(); }
  int64_t nextEventCycle() const { return events_.empty() ? INT64_MAX : events_.top().first; }

  /// End-of-run checks and the MXM's pending work: parked queues, values
  /// left on the streams, weight rows never installed. Data sent to this
  /// chip that nobody received is Machine's check (it names the send).
  bool finish();

  /// The values left on this chip's links at the end of the run: the
  /// earliest to arrive (nullptr if none) and how many share its link.
  const C2cMessage *firstUnreceived(size_t &onItsLink) const;
  /// Records a violation at instruction `instr` (repetition `repetition`)
  /// of `queue`, issued in `cycle`, as the checks during the run do.
  void failAt(uint32_t queue, uint32_t instr, uint32_t repetition, int64_t cycle,
              const llvm::Twine &detail);

  const std::optional<Violation> &violation() const { return violation_; }
  std::vector<C2cMessage> takeOutbox() { return std::move(outbox_); }
  const std::vector<C2cMessage> &outbox() const { return outbox_; }
  void deliver(C2cMessage message);

  const ChipStats &stats() const { return stats_; }
  const std::vector<TraceEvent> &trace() const { return trace_; }
  const std::vector<C2cTraceEvent> &c2cTrace() const { return c2cTrace_; }
  const backend::ChipCode &code() const { return code_; }

private:
  /// One stream's part of a value: put there in `cycle` at `pos` by an
  /// instruction issued in `issue`, whose result takes streams first ..
  /// first + width - 1. A value of which no instruction reads any stream is
  /// a violation (the schedule lost it: a consumer moved off its diagonal
  /// reads another value there, and the only sign left is this one
  /// unread). Every stream of a value must be read, but for a typed read
  /// narrower than the value from its first stream (a map read as u16
  /// from an i32 result), which reads the whole value.
  struct StreamSlot {
    int64_t cycle = -1;
    uint32_t pos = 0;
    uint32_t queue = 0, instr = 0, repetition = 0;
    int64_t issue = -1;
    uint8_t first = 0, width = 0;
    bool read = false;
  };
  bool failUnread(const StreamSlot &slot, unsigned dir, unsigned id);
  struct QueueState {
    size_t pc = 0;
    int64_t lastIssue = -1;
    bool parked = false;
    uint32_t repeatDone = 0; // repetitions issued of the current repeat
    bool inRepeat = false;
  };
  struct Ctx {
    uint32_t queue;
    uint32_t instr;
    uint32_t repetition; // 0 for a plain issue
    int64_t cycle;
  };

  void issue(uint32_t queue, int64_t cycle);
  bool execute(const backend::Instr &in, const Ctx &ctx, int64_t j);
  bool fail(const Ctx &ctx, const llvm::Twine &detail);
  static MxmSite site(const Ctx &ctx) { return {ctx.queue, ctx.instr, ctx.repetition, ctx.cycle}; }
  void endCycle(int64_t cycle);

  /// The value of stream `id` (direction dir) at position pos and cycle, or
  /// nullptr after recording a violation.
  /// Stream s.id + offset at `pos`, read as part of a group of `groupWidth`
  /// streams (readGroup).
  const uint8_t *readStream(const Ctx &ctx, backend::StreamRef s, unsigned offset, unsigned groupWidth,
                            unsigned pos);
  bool readGroup(const Ctx &ctx, backend::StreamRef s, unsigned width, unsigned pos,
                 const uint8_t **planes);
  /// Reserves stream slots for a result at `cycle`; fills `planes` with
  /// where to write it (a scratch buffer in timing-only runs).
  bool emitGroup(const Ctx &ctx, backend::StreamRef s, unsigned width, unsigned pos,
                 int64_t cycle, uint8_t **planes);
  size_t slotIndex(unsigned dir, unsigned id, int64_t cycle) const;

  bool memPort(const Ctx &ctx, unsigned slice, bool write);
  bool checkAddr(const Ctx &ctx, unsigned slice, int64_t addr);

  const backend::ChipDescription &chip_;
  const backend::Topology &topology_;
  unsigned index_;
  const backend::ChipCode &code_;
  ChipOptions options_;

  std::vector<QueueState> queues_;
  using Event = std::pair<int64_t, uint32_t>; // (cycle, queue)
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int64_t currentCycle_ = -1;
  bool notifyThisCycle_ = false;
  std::vector<uint32_t> parked_;

  std::unique_ptr<uint8_t, void (*)(void *)> sram_;
  /// calloc's untouched zero pages: a chip pays only for the SRAM it uses.
  void allocateSram();
  std::vector<bool> inUse_;
  std::vector<int64_t> portCycle_; // per slice: cycle of the counts below
  std::vector<uint8_t> portReads_, portWrites_;
  struct PendingWrite {
    unsigned slice, addr;
    std::vector<uint8_t> data;
    bool whole; // a whole vector (write) or per-lane bytes (scatter)
    std::vector<uint32_t> addrs;
  };
  std::vector<PendingWrite> pendingWrites_;

  static constexpr unsigned kRing = 256;
  std::vector<StreamSlot> slots_;
  /// Per stream and diagonal (x - t eastward, x + t westward, mod kRing):
  /// the latest cycle a value was put on it (-1: none). A read looks
  /// there first instead of walking every position upstream; when that
  /// value is not the one (a later value on a diagonal kRing apart, or one
  /// put for a cycle still to come), it walks as before.
  std::vector<int64_t> diagonals_;
  size_t diagonalIndex(unsigned dir, unsigned id, int64_t pos, int64_t cycle) const;
  std::vector<uint8_t> slotData_;
  std::vector<uint8_t> scratch_;

  std::vector<std::unique_ptr<MxmPlane>> planes_;
  /// The link a send or recv names in the code -> the link it uses (the
  /// identity but for a chip running another's code).
  std::vector<uint16_t> linkMap_;
  std::vector<int64_t> linkBusyUntil_;
  std::vector<uint64_t> linkSends_; // per link: sends so far
  std::vector<std::deque<C2cMessage>> inbox_;
  std::vector<C2cMessage> outbox_;

  /// The chip file's timing, flattened: [opcode][dtype] (the hot path).
  std::vector<backend::ChipDescription::Timing> timing_;
  const backend::ChipDescription::Timing &timingOf(backend::Opcode op, backend::DType t) const {
    return timing_[unsigned(op) * 8 + unsigned(t)];
  }

  std::optional<Violation> violation_;
  ChipStats stats_;
  std::vector<TraceEvent> trace_;
  std::vector<C2cTraceEvent> c2cTrace_;
};

} // namespace lpu::sim
