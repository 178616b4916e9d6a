#include "scheduler/Schedule.h"

#include "backend/QueueEncoder.h"

#include <algorithm>

namespace lpu::scheduler {

using namespace backend;

void Schedule::add(QueueId queue, int64_t cycle, const Instr &instr) {
  queues[queue].push_back({cycle, instr});
}

llvm::Expected<Bucket> encodeBucket(const Schedule &schedule, const ChipDescription &chip,
                                    std::vector<BucketDim> dims) {
  Bucket bucket;
  bucket.dims = std::move(dims);
  bucket.tensors = schedule.tensors;
  bucket.chips.resize(schedule.topologyChips);
  for (const auto &[id, list] : schedule.queues) {
    // In cycle order (ties, which the tables never allow, in the order
    // placed): the cycles and indices are sorted, not the instructions
    // (sorting ResNet-50's copied a twentieth of its compile).
    std::vector<std::pair<int64_t, size_t>> order(list.size());
    for (size_t i = 0; i < list.size(); ++i)
      order[i] = {list[i].cycle, i};
    std::sort(order.begin(), order.end());
    QueueEncoder encoder(chip);
    for (const auto &[cycle, i] : order)
      if (auto e = encoder.add(cycle, list[i].instr))
        return e;
    Queue q;
    q.unit = id.unit;
    q.index = uint16_t(id.index);
    q.instrs = encoder.finish();
    bucket.chips[id.chip].queues.push_back(std::move(q));
  }
  for (const auto &[c, shared] : schedule.sharedCode)
    bucket.chips[c].shares = shared;
  return bucket;
}

} // namespace lpu::scheduler
