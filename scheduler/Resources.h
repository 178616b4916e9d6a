// Reservation tables: which cycles every queue, MEM port and stream register
// of one chip is taken. The scheduler only ever places an instruction where
// these say it is free, so a finished schedule passes the simulator's checks
// by construction (docs/scheduler.md, "Resources").
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Isa.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace lpu::scheduler {

/// A set of cycles, as a growable bitmap.
class CycleSet {
public:
  bool test(int64_t cycle) const {
    if (cycle < 0)
      return false;
    const size_t word = size_t(cycle) / 64;
    return word >= first_ && word - first_ < bits_.size() &&
           (bits_[word - first_] >> (size_t(cycle) % 64)) & 1;
  }
  void set(int64_t cycle, bool value);
  /// Whether any cycle of [first, first + count) is in the set.
  bool any(int64_t first, int64_t count) const;

private:
  /// Bits from word first_ on: a chip whose work starts late in a long
  /// pipeline (Llama-2-70B's last node, after 19 million cycles) holds
  /// its own span, not every cycle before it.
  size_t first_ = 0;
  std::vector<uint64_t> bits_;
};

/// One byte plane of a value on a stream: put on the stream at `emitPos` in
/// `emitCycle`, read downstream until `lastCycle`. It lies on the diagonal
/// pos -/+ cycle, and another value put on the same stream on that diagonal
/// between its emission and its last read would shadow it (docs/isa.md).
struct StreamSegment {
  uint8_t dir = backend::StreamRef::East;
  int64_t emitCycle = 0;
  unsigned emitPos = 0;
  int64_t lastCycle = 0;
  int64_t diagonal() const {
    return dir == backend::StreamRef::East ? int64_t(emitPos) - emitCycle
                                           : int64_t(emitPos) + emitCycle;
  }
};

class Resources {
public:
  explicit Resources(const backend::ChipDescription &chip);
  const backend::ChipDescription &chip() const { return chip_; }

  /// Queue `index` of `unit` is busy in [cycle, cycle + issue).
  bool queueFree(backend::UnitKind unit, unsigned index, int64_t cycle, unsigned issue) const;
  void setQueue(backend::UnitKind unit, unsigned index, int64_t cycle, unsigned issue, bool busy);

  bool portFree(unsigned slice, bool write, int64_t cycle) const;
  void setPort(unsigned slice, bool write, int64_t cycle, bool busy);

  /// Whether stream `id` of the segment's direction can carry it.
  bool streamFree(unsigned id, const StreamSegment &seg) const;
  void reserveStream(unsigned id, const StreamSegment &seg);
  void releaseStream(unsigned id, const StreamSegment &seg);

  /// A cycle after which nothing is reserved: every table is free from
  /// horizon() + 1 on. Releasing does not lower it; a caller that undoes
  /// what it tried (the placer) puts back the horizon it had before.
  int64_t horizon() const { return horizon_; }
  void restoreHorizon(int64_t horizon) { horizon_ = horizon; }

private:
  struct Emission {
    int64_t emitCycle;
    int64_t lastCycle;
  };
  /// The values put on one stream: their emission cycles (one write per
  /// cycle), and by diagonal, since only a value on the same diagonal can
  /// shadow another (where a scan of every value emitted within a chip's
  /// width of cycles took a fifth of a compile). A diagonal nearly always
  /// holds one value (ResNet-50 at N=1: 46,466 of 3,439,072 hold two), so
  /// the first is kept in the map's own bucket and the others apart: a
  /// bucket of a small vector each took 387 MB there, most of lpuc's memory
  /// and a sixth of its time growing the maps.
  struct StreamUse {
    CycleSet emitted;
    llvm::DenseMap<int64_t, Emission> byDiagonal;
    llvm::DenseMap<int64_t, llvm::SmallVector<Emission, 1>> more;
  };
  /// The accesses of one slice's read (or write) ports per cycle: a bit a
  /// cycle when the slice has one such port (a byte a cycle took 232 MB
  /// for ResNet-50 at N=1), a count otherwise.
  struct PortUse {
    CycleSet one;
    std::vector<uint8_t> count;
  };
  const backend::ChipDescription &chip_;
  std::vector<std::vector<CycleSet>> queues_;   // [unit][index]
  std::vector<PortUse> reads_, writes_;         // [slice]
  std::vector<std::vector<StreamUse>> streams_; // [dir - 1][id]
  int64_t horizon_ = -1;
};

} // namespace lpu::scheduler
