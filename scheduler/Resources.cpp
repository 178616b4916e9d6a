#include "scheduler/Resources.h"

#include <algorithm>
#include <cassert>

namespace lpu::scheduler {

using namespace backend;

void CycleSet::set(int64_t cycle, bool value) {
  assert(cycle >= 0);
  const size_t word = size_t(cycle) / 64;
  const uint64_t bit = uint64_t(1) << (size_t(cycle) % 64);
  if (!value) {
    if (word >= first_ && word - first_ < bits_.size())
      bits_[word - first_] &= ~bit;
    return;
  }
  if (bits_.empty())
    first_ = word;
  if (word < first_) {
    // Earlier than any cycle set so far: room before, half as much again.
    const size_t grow = first_ - word + bits_.size() / 2;
    const size_t before = std::min(grow, first_);
    bits_.insert(bits_.begin(), before, 0);
    first_ -= before;
  }
  if (word - first_ >= bits_.size())
    bits_.resize(word - first_ + 1 + bits_.size() / 2, 0);
  bits_[word - first_] |= bit;
}

bool CycleSet::any(int64_t first, int64_t count) const {
  for (int64_t c = first; c < first + count; ++c)
    if (test(c))
      return true;
  return false;
}

Resources::Resources(const ChipDescription &chip) : chip_(chip) {
  queues_.resize(kNumUnitKinds);
  for (unsigned u = 0; u < kNumUnitKinds; ++u)
    queues_[u].resize(chip.queues[u]);
  reads_.resize(chip.memSlices);
  writes_.resize(chip.memSlices);
  streams_.assign(2, std::vector<StreamUse>(chip.streamsPerDirection));
}

bool Resources::queueFree(UnitKind unit, unsigned index, int64_t cycle, unsigned issue) const {
  return cycle >= 0 && !queues_[unsigned(unit)][index].any(cycle, issue);
}

void Resources::setQueue(UnitKind unit, unsigned index, int64_t cycle, unsigned issue, bool busy) {
  if (busy)
    horizon_ = std::max(horizon_, cycle + int64_t(issue) - 1);
  for (unsigned i = 0; i < issue; ++i)
    queues_[unsigned(unit)][index].set(cycle + i, busy);
}

bool Resources::portFree(unsigned slice, bool write, int64_t cycle) const {
  if (cycle < 0)
    return false;
  const PortUse &use = (write ? writes_ : reads_)[slice];
  const unsigned limit = write ? chip_.memWritePorts : chip_.memReadPorts;
  if (limit == 1)
    return !use.one.test(cycle);
  return size_t(cycle) >= use.count.size() || use.count[size_t(cycle)] < limit;
}

void Resources::setPort(unsigned slice, bool write, int64_t cycle, bool busy) {
  if (busy)
    horizon_ = std::max(horizon_, cycle);
  PortUse &use = (write ? writes_ : reads_)[slice];
  if ((write ? chip_.memWritePorts : chip_.memReadPorts) == 1) {
    use.one.set(cycle, busy);
    return;
  }
  if (size_t(cycle) >= use.count.size())
    use.count.resize(size_t(cycle) + 1 + use.count.size() / 2, 0);
  use.count[size_t(cycle)] += busy ? 1 : -1;
}

bool Resources::streamFree(unsigned id, const StreamSegment &seg) const {
  if (seg.emitCycle < 0)
    return false;
  const StreamUse &use = streams_[seg.dir - 1][id];
  // One write of a stream per cycle, anywhere on the chip.
  if (use.emitted.test(seg.emitCycle))
    return false;
  // Another value on the same diagonal whose span [emit, last read]
  // overlaps this one's: the later emission shadows the earlier value.
  // (Two values on one diagonal are emitted less than a chip's width of
  // cycles apart, so that is as far back as an earlier one may be.)
  const int64_t span = chip_.width();
  auto clashes = [&](const Emission &e) {
    return e.emitCycle >= seg.emitCycle - span && e.emitCycle <= seg.lastCycle && e.lastCycle >= seg.emitCycle;
  };
  auto on = use.byDiagonal.find(seg.diagonal());
  if (on == use.byDiagonal.end())
    return true;
  if (clashes(on->second))
    return false;
  auto rest = use.more.find(seg.diagonal());
  if (rest != use.more.end())
    for (const Emission &e : rest->second)
      if (clashes(e))
        return false;
  return true;
}

void Resources::reserveStream(unsigned id, const StreamSegment &seg) {
  StreamUse &use = streams_[seg.dir - 1][id];
  horizon_ = std::max({horizon_, seg.emitCycle, seg.lastCycle});
  use.emitted.set(seg.emitCycle, true);
  const Emission e{seg.emitCycle, seg.lastCycle};
  if (!use.byDiagonal.try_emplace(seg.diagonal(), e).second)
    use.more[seg.diagonal()].push_back(e);
}

void Resources::releaseStream(unsigned id, const StreamSegment &seg) {
  StreamUse &use = streams_[seg.dir - 1][id];
  if (!use.emitted.test(seg.emitCycle))
    return;
  use.emitted.set(seg.emitCycle, false);
  auto on = use.byDiagonal.find(seg.diagonal());
  if (on == use.byDiagonal.end())
    return;
  auto rest = use.more.find(seg.diagonal());
  if (on->second.emitCycle == seg.emitCycle) {
    // The first goes: another of the diagonal's values takes its place.
    if (rest == use.more.end()) {
      use.byDiagonal.erase(on);
      return;
    }
    on->second = rest->second.back();
    rest->second.pop_back();
  } else if (rest != use.more.end()) {
    llvm::SmallVector<Emission, 1> &list = rest->second;
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i].emitCycle == seg.emitCycle) {
        list.erase(list.begin() + std::ptrdiff_t(i));
        break;
      }
  }
  if (rest != use.more.end() && rest->second.empty())
    use.more.erase(rest);
}

} // namespace lpu::scheduler
