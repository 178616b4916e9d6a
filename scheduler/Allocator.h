// Static SRAM allocation. A tensor takes the same address range in one
// slice per byte plane, all in one hemisphere (its byte planes travel on one
// stream group, in one direction). A tensor longer than a slice is cut into
// chunks of rows, each chunk in its own slices at the same address range
// (docs/program-file.md), all in one hemisphere. Space is reused once a tensor is dead:
// a block freed at cycle C may be written again from C + 1, which the
// allocation returns as `writableFrom`. Successive tensors go to different
// slices so that operands read together do not share a read port.
#pragma once

#include "backend/ChipDescription.h"
#include "scheduler/Schedule.h"
#include "ir/IR.h"

#include <llvm/Support/Error.h>

#include <cstdint>
#include <limits>
#include <string>
#include <functional>
#include <vector>

namespace lpu::scheduler {

struct SramBlock {
  std::vector<uint16_t> slices; // one per byte plane, per chunk (chunk 0's planes first)
  uint32_t addr = 0;
  uint32_t vectors = 0;         // in each chunk's slices
  int64_t writableFrom = 0;     // the first cycle a write may land in it
  int id = -1;                  // the allocator's handle
};

/// What a block holds, for the does-not-fit diagnostic.
struct SramOwner {
  std::string what;   // "tensor f16[128, 768]"
  ir::Location loc;
};

class SramAllocator {
public:
  explicit SramAllocator(const backend::ChipDescription &chip);

  /// A block of `vectors` vectors per byte plane, `width` byte planes, in
  /// `chunks` groups of slices (all at the same addresses, in one
  /// hemisphere). Fails (a DoesNotFit ScheduleError) when SRAM is full.
  /// `accept`, when given, must take a group of slices and the cycle its
  /// space would be writable from, or the group is passed over there.
  using Accept = std::function<bool(const std::vector<uint16_t> &slices, int64_t writable)>;
  llvm::Expected<SramBlock> allocate(unsigned width, uint32_t vectors, SramOwner owner,
                                     unsigned chunks = 1, const Accept &accept = {});
  /// The block is dead after `lastRead`: its space may be written from
  /// lastRead + 1 on.
  void release(int id, int64_t lastRead);

  /// The most bytes live at once so far.
  uint64_t peakBytes() const { return peakBytes_; }
  /// Every block's life so far; blocks never released live until `end`.
  std::vector<SramLife> lives(int64_t end) const;

  /// Chunked blocks go to the hemisphere where they sit lowest, not to the
  /// cursor's first: stripes across a whole hemisphere then fill both
  /// hemispheres evenly, leaving the same room atop each.
  bool balance = false;
  /// A block of more chunks than a hemisphere has slice groups may take
  /// groups of both hemispheres (each chunk still in one: a row's byte
  /// planes travel together). Only for parameters whose every reader takes
  /// a row from its own chunk's slices: matmul weights.
  bool acrossHemispheres = false;
  /// Blocks go as high in a slice as they fit, not as low: constants made
  /// during the run then stay atop the room the run's tensors share.
  bool fromTop = false;
  /// Space writable by this cycle is as good as any (the writer cannot
  /// write sooner): the first place in the usual order that is writable by
  /// then wins. When none is, a block of several chunks takes the place
  /// writable earliest (lowest address among equals) rather than the
  /// lowest, which may hold a tensor read until much later.
  int64_t wantedBy = std::numeric_limits<int64_t>::max();

private:
  /// Whether [a, a + vectors) is free in `slices` (blocks freed earlier may
  /// be overwritten: `writable` is raised to the first cycle that may).
  bool isFree(const std::vector<uint16_t> &slices, uint32_t a, uint32_t vectors,
              int64_t &writable) const;
  SramBlock take(std::vector<uint16_t> slices, uint32_t a, uint32_t vectors, int64_t writable,
                 SramOwner owner);
  struct Live {
    SramBlock block;
    SramOwner owner;
    int64_t freeAfter; // max while live
    int64_t wanted;    // wantedBy when it was allocated
    uint64_t bytes() const { return uint64_t(block.vectors) * block.slices.size(); }
  };
  const backend::ChipDescription &chip_;
  std::vector<Live> blocks_;
  std::vector<std::vector<int>> bySlice_; // block ids touching each slice
  unsigned cursor_ = 0;
  uint64_t liveBytes_ = 0, peakBytes_ = 0;
};

} // namespace lpu::scheduler
