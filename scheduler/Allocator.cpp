#include "scheduler/Allocator.h"

#include "scheduler/Error.h"

#include <algorithm>

namespace lpu::scheduler {

char ScheduleError::ID = 0;

void ScheduleError::log(llvm::raw_ostream &os) const {
  os << message;
  for (const auto &[loc, label] : notes)
    os << "\n  note: " << label;
}

SramAllocator::SramAllocator(const backend::ChipDescription &chip)
    : chip_(chip), bySlice_(chip.memSlices) {}

llvm::Expected<SramBlock> SramAllocator::allocate(unsigned width, uint32_t vectors,
                                                  SramOwner owner) {
  const unsigned half = chip_.memSlices / 2;
  const unsigned groups = half / width; // slice groups per hemisphere
  // Try every group, starting at the cursor so that tensors made one
  // after another land in different slices; the first group with room wins
  // (lowest address in it).
  for (unsigned g = 0; g < 2 * groups && vectors <= chip_.memVectors; ++g) {
    unsigned k = (cursor_ + g) % (2 * groups);
    unsigned base = (k % 2 ? half : 0) + (k / 2) * width;
    std::vector<uint16_t> slices;
    for (unsigned b = 0; b < width; ++b)
      slices.push_back(uint16_t(base + b));
    // Candidate addresses: 0 and the end of every live block in these slices.
    std::vector<uint32_t> starts{0};
    for (uint16_t s : slices)
      for (int id : bySlice_[s])
        if (blocks_[id].freeAfter == std::numeric_limits<int64_t>::max())
          starts.push_back(blocks_[id].block.addr + blocks_[id].block.vectors);
    std::sort(starts.begin(), starts.end());
    for (uint32_t a : starts) {
      if (uint64_t(a) + vectors > chip_.memVectors)
        break;
      bool ok = true;
      int64_t writable = 0;
      for (uint16_t s : slices)
        for (int id : bySlice_[s]) {
          const Live &l = blocks_[id];
          if (l.block.addr >= a + vectors || l.block.addr + l.block.vectors <= a)
            continue;
          if (l.freeAfter == std::numeric_limits<int64_t>::max())
            ok = false;
          else
            writable = std::max(writable, l.freeAfter + 1);
        }
      if (!ok)
        continue;
      SramBlock block{slices, a, vectors, writable, int(blocks_.size())};
      blocks_.push_back({block, std::move(owner), std::numeric_limits<int64_t>::max()});
      for (uint16_t s : slices)
        bySlice_[s].push_back(block.id);
      cursor_ = (k + 1) % (2 * groups);
      liveBytes_ += uint64_t(vectors) * width * chip_.lanes;
      peakBytes_ = std::max(peakBytes_, liveBytes_);
      return block;
    }
  }
  if (vectors > chip_.memVectors)
    return llvm::make_error<ScheduleError>(
        ScheduleError::Kind::DoesNotFit,
        owner.what + " does not fit in SRAM: each of its byte planes needs " +
            std::to_string(vectors) + " vectors, more than the " +
            std::to_string(chip_.memVectors) +
            " of a slice (a tensor keeps each byte plane in one slice)",
        owner.loc);
  // Does not fit: name the largest tensors live now.
  std::vector<const Live *> live;
  for (const Live &l : blocks_)
    if (l.freeAfter == std::numeric_limits<int64_t>::max())
      live.push_back(&l);
  std::stable_sort(live.begin(), live.end(),
                   [](const Live *a, const Live *b) { return a->bytes() > b->bytes(); });
  std::vector<std::pair<ir::Location, std::string>> notes;
  for (size_t i = 0; i < live.size() && i < 3; ++i)
    notes.push_back({live[i]->owner.loc,
                     live[i]->owner.what + " is live here, taking " +
                         std::to_string(live[i]->bytes() * chip_.lanes) + " bytes of SRAM"});
  return llvm::make_error<ScheduleError>(
      ScheduleError::Kind::DoesNotFit,
      owner.what + " does not fit in SRAM: it needs " +
          std::to_string(uint64_t(vectors) * width * chip_.lanes) + " bytes (" +
          std::to_string(width) + " byte planes of " + std::to_string(vectors) +
          " vectors) while " + std::to_string(liveBytes_) + " of the chip's " +
          std::to_string(chip_.sramBytes()) + " bytes are live",
      owner.loc, std::move(notes));
}

void SramAllocator::release(int id, int64_t lastRead) {
  Live &l = blocks_[id];
  if (l.freeAfter != std::numeric_limits<int64_t>::max())
    return;
  l.freeAfter = lastRead;
  liveBytes_ -= l.bytes() * chip_.lanes;
}

} // namespace lpu::scheduler
