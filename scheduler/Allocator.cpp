#include "scheduler/Allocator.h"

#include "scheduler/Error.h"

#include <algorithm>
#include <optional>

namespace lpu::scheduler {

SramAllocator::SramAllocator(const backend::ChipDescription &chip)
    : chip_(chip), bySlice_(chip.memSlices) {}

bool SramAllocator::isFree(const std::vector<uint16_t> &slices, uint32_t a, uint32_t vectors,
                           int64_t &writable) const {
  for (uint16_t s : slices)
    for (int id : bySlice_[s]) {
      const Live &l = blocks_[id];
      if (l.block.addr >= a + vectors || l.block.addr + l.block.vectors <= a)
        continue;
      if (l.freeAfter == std::numeric_limits<int64_t>::max())
        return false;
      writable = std::max(writable, l.freeAfter + 1);
    }
  return true;
}

SramBlock SramAllocator::take(std::vector<uint16_t> slices, uint32_t a, uint32_t vectors,
                              int64_t writable, SramOwner owner) {
  SramBlock block{std::move(slices), a, vectors, writable, int(blocks_.size())};
  blocks_.push_back({block, std::move(owner), std::numeric_limits<int64_t>::max(), wantedBy});
  for (uint16_t s : block.slices)
    bySlice_[s].push_back(block.id);
  liveBytes_ += uint64_t(vectors) * block.slices.size() * chip_.lanes;
  peakBytes_ = std::max(peakBytes_, liveBytes_);
  return block;
}

llvm::Expected<SramBlock> SramAllocator::allocate(unsigned width, uint32_t vectors,
                                                  SramOwner owner, unsigned chunks,
                                                  const Accept &accept) {
  const unsigned half = chip_.memSlices / 2;
  const unsigned groups = half / width; // slice groups per hemisphere
  auto groupSlices = [&](unsigned k) {
    unsigned base = (k % 2 ? half : 0) + (k / 2) * width;
    std::vector<uint16_t> slices;
    for (unsigned b = 0; b < width; ++b)
      slices.push_back(uint16_t(base + b));
    return slices;
  };
  // Candidate addresses in `slices`: 0 and the end of every live block
  // (of every block when `accept` may refuse dead space, so that the space
  // past it is tried too); from the top, the top of the slice and the start
  // of every such block less the block's length, highest first.
  auto startsIn = [&](const std::vector<uint16_t> &slices, bool everyBlock) {
    std::vector<uint32_t> starts{fromTop ? chip_.memVectors - std::min(vectors, chip_.memVectors) : 0};
    for (uint16_t s : slices)
      for (int id : bySlice_[s])
        if (everyBlock || blocks_[id].freeAfter == std::numeric_limits<int64_t>::max()) {
          const SramBlock &b = blocks_[id].block;
          if (!fromTop)
            starts.push_back(b.addr + b.vectors);
          else if (b.addr >= vectors)
            starts.push_back(b.addr - vectors);
        }
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    if (fromTop)
      std::reverse(starts.begin(), starts.end());
    return starts;
  };
  if (chunks <= 1) {
    // Try every group, starting at the cursor so that tensors made one
    // after another land in different slices; the first group with room
    // wins (lowest address in it). First only room writable by `wantedBy`
    // (past dead blocks too): space freed later than the writer could
    // start held a layer norm's rows back until the block's last reader.
    for (int pass = wantedBy == std::numeric_limits<int64_t>::max() ? 1 : 0; pass < 2; ++pass)
      for (unsigned g = 0; g < 2 * groups && vectors <= chip_.memVectors; ++g) {
        unsigned k = (cursor_ + g) % (2 * groups);
        std::vector<uint16_t> slices = groupSlices(k);
        for (uint32_t a : startsIn(slices, accept || pass == 0)) {
          if (uint64_t(a) + vectors > chip_.memVectors)
            break;
          int64_t writable = 0;
          if (!isFree(slices, a, vectors, writable) || (pass == 0 && writable > wantedBy) ||
              (accept && !accept(slices, writable)))
            continue;
          cursor_ = (k + 1) % (2 * groups);
          return take(std::move(slices), a, vectors, writable, std::move(owner));
        }
      }
  } else if ((chunks <= groups || (acrossHemispheres && chunks <= 2 * groups)) &&
             vectors <= chip_.memVectors) {
    // Chunks share one address range: in each hemisphere (the cursor's
    // first), the lowest address at which `chunks` groups are free, taken
    // in cursor order so that successive tensors still spread. Balanced,
    // the lower of the two hemispheres' (so that stripes fill both evenly).
    struct Found {
      uint32_t addr;
      std::vector<uint16_t> slices;
      int64_t writable;
      unsigned next; // the cursor after it
    };
    // hemi 2: the groups of both hemispheres (acrossHemispheres).
    auto lowestIn = [&](unsigned hemi) -> std::optional<Found> {
      std::optional<Found> earliest;
      std::vector<uint16_t> all;
      for (unsigned k = hemi % 2; k < 2 * groups; k += hemi == 2 ? 1 : 2)
        for (uint16_t s : groupSlices(k))
          all.push_back(s);
      for (uint32_t a : startsIn(all, bool(accept))) {
        if (uint64_t(a) + vectors > chip_.memVectors)
          break;
        Found f{a, {}, 0, 0};
        unsigned found = 0;
        for (unsigned g = 0; g < 2 * groups && found < chunks; ++g) {
          unsigned k = (cursor_ + g) % (2 * groups);
          if (hemi != 2 && k % 2 != hemi)
            continue;
          std::vector<uint16_t> group = groupSlices(k);
          int64_t w = f.writable;
          if (!isFree(group, a, vectors, w) || (accept && !accept(group, w)))
            continue;
          f.writable = w;
          f.slices.insert(f.slices.end(), group.begin(), group.end());
          if (++found == chunks)
            f.next = (k + 1) % (2 * groups);
        }
        if (found == chunks) {
          if (f.writable <= wantedBy)
            return f;
          if (!earliest || f.writable < earliest->writable)
            earliest = std::move(f);
        }
      }
      return earliest;
    };
    // Writable by `wantedBy` or earliest, then the lowest address.
    auto better = [&](const Found &a, const Found &b) {
      return std::make_pair(std::max(a.writable, wantedBy), a.addr) <
             std::make_pair(std::max(b.writable, wantedBy), b.addr);
    };
    std::optional<Found> best;
    if (chunks > groups)
      best = lowestIn(2);
    for (unsigned h = 0; h < 2 && chunks <= groups && !(best && !balance && best->writable <= wantedBy); ++h) {
      std::optional<Found> f = lowestIn((cursor_ + h) % 2);
      if (f && (!best || better(*f, *best)))
        best = std::move(f);
    }
    if (best) {
      cursor_ = best->next;
      return take(std::move(best->slices), best->addr, vectors, best->writable, std::move(owner));
    }
  }
  if (chunks > (acrossHemispheres ? 2 * groups : groups))
    return refuseAt<Refusal::SramChunksInHemisphere>(owner.loc, owner.what, chunks, vectors,
                                                     chunks * width, groups * width);
  if (vectors > chip_.memVectors)
    return refuseAt<Refusal::SramPlaneDeeperThanSlice>(owner.loc, owner.what, vectors,
                                                       chip_.memVectors);
  // Does not fit: name the largest tensors live now.
  std::vector<const Live *> live;
  for (const Live &l : blocks_)
    if (l.freeAfter == std::numeric_limits<int64_t>::max())
      live.push_back(&l);
  std::stable_sort(live.begin(), live.end(),
                   [](const Live *a, const Live *b) { return a->bytes() > b->bytes(); });
  RefusalNotes notes;
  for (size_t i = 0; i < live.size() && i < 3; ++i)
    notes.push_back({live[i]->owner.loc,
                     live[i]->owner.what + " is live here, taking " +
                         std::to_string(live[i]->bytes() * chip_.lanes) + " bytes of SRAM"});
  // The vectors of every chunk together: the bytes are planes x vectors.
  return refuseWithNotes<Refusal::SramFull>(owner.loc, std::move(notes), owner.what,
                                            uint64_t(vectors) * width * chunks * chip_.lanes,
                                            width, uint64_t(vectors) * chunks, liveBytes_,
                                            chip_.sramBytes());
}

std::vector<SramLife> SramAllocator::lives(int64_t end) const {
  std::vector<SramLife> out;
  out.reserve(blocks_.size());
  for (const Live &l : blocks_) {
    SramLife life;
    life.from = l.block.writableFrom;
    if (l.wanted != std::numeric_limits<int64_t>::max())
      life.from = std::max(life.from, l.wanted);
    life.to = l.freeAfter == std::numeric_limits<int64_t>::max() ? end : l.freeAfter;
    life.from = std::min(life.from, life.to);
    life.bytes = l.bytes() * chip_.lanes;
    out.push_back(life);
  }
  return out;
}

void SramAllocator::release(int id, int64_t lastRead) {
  Live &l = blocks_[id];
  if (l.freeAfter != std::numeric_limits<int64_t>::max())
    return;
  l.freeAfter = lastRead;
  liveBytes_ -= l.bytes() * chip_.lanes;
}

} // namespace lpu::scheduler
