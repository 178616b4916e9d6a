// The framework an op lowering uses: it describes the work on one vector as
// a small tree of instructions (reads -> VXM/MXM work -> a sink such as a
// write, a matmul or a weight load), and the placer finds the earliest cycle
// from which the whole tree fits the reservation tables, timed exactly: each
// value reaches its consumer's position in the very cycle the consumer
// issues (a value put on a stream at x in cycle t is at y in t + |y - x|).
// It picks the queues and stream registers, reserves everything and records
// the instructions. A loop over vectors is one place() call per vector with
// an increasing lower bound: software pipelining falls out of the tables.
#pragma once

#include "backend/Isa.h"
#include "scheduler/Resources.h"
#include "scheduler/Schedule.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace lpu::scheduler {

/// The `ready` cycle of a vector nothing has been placed to write yet (a
/// received value before its recvs): no read is placed that late.
constexpr int64_t kNotWrittenYet = std::numeric_limits<int64_t>::max() / 4;

/// One instruction of a vector's work tree. Build trees with the Tree
/// helpers below; the placer fills in streams, queues and cycles.
struct WorkNode {
  backend::Instr instr;       // opcode, dtypes, unit (slice/plane), address
  llvm::SmallVector<int, 2> inputs; // nodes whose values this one reads: src0, src1
  /// Read and write: the slice of each byte plane (one read or write per
  /// plane, each timed for its own slice's position); instr.unit unused.
  llvm::SmallVector<uint16_t, 4> planes;
  /// A fixed queue (MXM work: one queue per plane and purpose), or -1 to
  /// let the placer pick any free queue that may drive the unit.
  int queue = -1;
  /// The earliest cycle this node may issue in (a read of a vector written
  /// during the run); the tree's notBefore bounds every node.
  int64_t notBefore = 0;
  // Filled by the placer:
  int64_t offset = 0; // issue cycle relative to the tree's root
};

/// A tree of instructions for one vector: node 0 is the root (the sink).
/// Every node but the root feeds exactly one consumer; a value two
/// consumers need is built twice (two reads), which keeps the timing exact.
class WorkTree {
public:
  /// Adds a node and returns its index. The first node added is the root.
  int add(backend::Instr instr, llvm::ArrayRef<int> inputs = {}, int queue = -1);
  /// A read of one vector of a tensor whose byte planes are in `planes`.
  int read(const std::vector<uint16_t> &planes, uint32_t addr);
  /// A write of node `value` into one vector (byte planes in `planes`).
  int write(const std::vector<uint16_t> &planes, uint32_t addr, int value);
  std::vector<WorkNode> nodes;
};

/// Where a placed tree's instructions went.
struct Placement {
  int64_t rootCycle = 0;  // the root's issue cycle
  int64_t firstCycle = 0; // the earliest instruction's issue cycle
  int64_t doneCycle = 0;  // the last result lands (issue + latency, max)
  /// The latest issue of a leaf (a read, an acc): doneCycle - lastLeafCycle
  /// is at most the tree's latency from any of its inputs, whatever the
  /// cycle (a tree's offsets are fixed), so chains of it bound a critical
  /// path from below.
  int64_t lastLeafCycle = 0;
  int64_t span() const { return doneCycle - lastLeafCycle; }
};

/// The shortest span of some placed trees (of one link of a chain): 0
/// until one is noted.
class ShortestSpan {
public:
  void note(const Placement &p) { min_ = min_ < 0 ? p.span() : std::min(min_, p.span()); }
  int64_t get() const { return min_ < 0 ? 0 : min_; }

private:
  int64_t min_ = -1;
};

class Placer {
public:
  Placer(const backend::ChipDescription &chip, Schedule &schedule);

  /// Places `tree` so that no instruction issues before `notBefore` and
  /// the root issues no earlier than `rootNotBefore`; returns where it went.
  /// Nullopt when no cycle works (the tree needs one slice's read port
  /// twice in one cycle, for instance).
  std::optional<Placement> place(WorkTree tree, int64_t notBefore, int64_t rootNotBefore = 0);
  /// Why the last place() that failed did: the tree needs one slice's
  /// port more often in one cycle than it has, or it does not fit even
  /// where nothing else is reserved, or an instruction reads more streams of
  /// an operand than the node feeding it puts on them (a lowering's bug:
  /// the simulator would find no data there).
  enum class Failure { PortTwice, NoCycle, OperandWidth };
  Failure lastFailure() const { return failure_; }

  /// A single instruction with no stream operands (iw) on a fixed queue.
  int64_t placeAlone(const backend::Instr &instr, unsigned queue, int64_t notBefore);

  const backend::ChipDescription &chip() const { return chip_; }
  Resources &resources() { return resources_; }

  /// The position an instruction works at (its slice, plane or the VXM).
  unsigned position(const backend::Instr &instr) const;
  /// The stream width of the value an instruction produces (0: none).
  unsigned resultWidth(const backend::Instr &instr) const;
  /// The streams an instruction reads of its `i`-th operand, as the
  /// simulator reads them (a write: one, per byte plane).
  static unsigned operandWidth(const backend::Instr &instr, unsigned i);
  /// The queues that may issue `instr`, in the order the placer tries
  /// them: `count` of them, the i-th `base + (start + i) % count`.
  struct QueueRange {
    unsigned base = 0, count = 0, start = 0;
    unsigned at(unsigned i) const { return base + (start + i) % count; }
  };
  QueueRange queueCandidates(const backend::Instr &instr) const;

  /// The most VXM copies place() puts in front of reads that need their
  /// slice's port at one offset with another access (each moves its read
  /// a cycle earlier) before it gives up on the tree (knobs.portDetours).
  unsigned portDetours = 8;

private:
  struct Timed;
  /// Times `tree` relative to its root; false (failure_ set) when it cannot
  /// be timed as it is.
  bool timeTree(const WorkTree &tree, Timed &timed);
  /// A node whose access needs its slice's port at an offset where the
  /// tree already takes all of them (the latest read there, -1 when none
  /// is a read), or nullopt when every access has its port.
  std::optional<int> portClash(const Timed &timed) const;
  /// Puts a VXM copy between `read` and its consumer; false when it cannot.
  bool detour(WorkTree &tree, int read);
  bool tryAt(const WorkTree &tree, const Timed &timed, int64_t root);

  const backend::ChipDescription &chip_;
  Schedule &schedule_;
  Resources resources_;
  Failure failure_ = Failure::NoCycle;
};

} // namespace lpu::scheduler
