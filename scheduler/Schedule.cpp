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
  bucket.chips.resize(1);
  for (const auto &[id, list] : schedule.queues) {
    std::vector<TimedInstr> sorted = list;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const TimedInstr &a, const TimedInstr &b) { return a.cycle < b.cycle; });
    QueueEncoder encoder(chip);
    for (const TimedInstr &t : sorted)
      if (auto e = encoder.add(t.cycle, t.instr))
        return e;
    Queue q;
    q.unit = id.unit;
    q.index = uint16_t(id.index);
    q.instrs = encoder.finish();
    bucket.chips[0].queues.push_back(std::move(q));
  }
  return bucket;
}

} // namespace lpu::scheduler
