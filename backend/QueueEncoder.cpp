#include "backend/QueueEncoder.h"

#include "backend/ProgramText.h"

#include <algorithm>

namespace lpu::backend {

namespace {
// Equal but for the address and its step, which a repeat steps.
bool sameShape(Instr a, Instr b) {
  a.addr = b.addr = 0;
  a.step = b.step = 0;
  return a == b;
}
} // namespace

llvm::Error QueueEncoder::add(int64_t cycle, const Instr &in) {
  if (!opcodeInfo(in.op).unit)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the encoder makes nops and repeats itself; got '" +
                                       opcodeInfo(in.op).mnemonic + "'");
  if (cycle < nextFree_)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "'" + printInstr(in) + "' at cycle " + llvm::Twine(cycle) +
                                       ", but the queue cannot issue before cycle " +
                                       llvm::Twine(nextFree_));
  Instr copy = in;
  copy.step = 0;
  issues_.push_back({cycle, copy});
  nextFree_ = cycle + chip_.timingOf(in.op, in.dtype).issue;
  return llvm::Error::success();
}

std::vector<Instr> QueueEncoder::finish() const {
  std::vector<Instr> out;
  int64_t next = 0; // the first cycle the queue may issue again
  for (size_t i = 0; i < issues_.size();) {
    const Issue &first = issues_[i];
    unsigned interval = chip_.timingOf(first.instr.op, first.instr.dtype).issue;
    size_t j = i + 1;
    int64_t delay = 0, step = 0;
    if (j < issues_.size() && sameShape(issues_[j].instr, first.instr)) {
      delay = issues_[j].cycle - first.cycle;
      step = int64_t(issues_[j].instr.addr) - int64_t(first.instr.addr);
      while (j < issues_.size() && sameShape(issues_[j].instr, first.instr) &&
             issues_[j].cycle - issues_[j - 1].cycle == delay &&
             int64_t(issues_[j].instr.addr) - int64_t(issues_[j - 1].instr.addr) == step &&
             j - i <= UINT32_MAX)
        ++j;
      if (step < INT32_MIN || step > INT32_MAX || delay < int64_t(interval) || delay > UINT32_MAX)
        j = i + 1;
    }
    // Fill the gap before the first instruction of the run with nops.
    for (int64_t gap = first.cycle - next; gap > 0;) {
      Instr nop;
      nop.op = Opcode::Nop;
      nop.count = uint32_t(std::min<int64_t>(gap, UINT32_MAX));
      gap -= nop.count;
      out.push_back(nop);
    }
    Instr head = first.instr;
    if (j - i > 1)
      head.step = int32_t(step);
    out.push_back(head);
    if (j - i > 1) {
      Instr repeat;
      repeat.op = Opcode::Repeat;
      repeat.count = uint32_t(j - i - 1);
      repeat.delay = uint32_t(delay);
      out.push_back(repeat);
    }
    next = issues_[j - 1].cycle + interval;
    i = j;
  }
  return out;
}

} // namespace lpu::backend
