// Sends and receives of one chip of a multi-chip function (docs/partitioning.md,
// "The C2C schedule"). A received value is an input the host never writes:
// each of its vectors is taken off its link by a `recv` no earlier than the
// cycle it arrives and written to SRAM, so the chip's work on it starts on
// the first rows. A sent value is an output the host never reads: each vector
// is read and sent as soon as it is written, one vector per link every
// c2c_cycles_per_vector cycles per stream.
#include "scheduler/Transfers.h"

#include <llvm/ADT/STLExtras.h>

#include <algorithm>
#include <limits>

namespace lpu::scheduler {

using namespace backend;

bool received(const ChipTraffic *traffic, llvm::StringRef name) {
  return traffic && llvm::any_of(traffic->incoming, [&](const ChipTraffic::Incoming &in) {
           return in.name == name;
         });
}

bool sentBy(const ChipTraffic *traffic, llvm::StringRef name) {
  return traffic && llvm::any_of(traffic->outgoing, [&](const ChipTraffic::Outgoing &out) {
           return out.name == name;
         });
}

namespace {

llvm::Error internal(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

std::string orderName(const std::vector<uint8_t> &perm) {
  if (perm.empty())
    return "as declared";
  std::string out = "in the order [";
  for (size_t i = 0; i < perm.size(); ++i)
    out += (i ? ", " : "") + std::to_string(perm[i]);
  return out + "]";
}

} // namespace

llvm::Error receiveOne(const ir::Op &input, const ChipTraffic::Incoming &in, unsigned chip,
                       std::map<unsigned, int64_t> &lastRecv, LoweringContext &ctx) {
  if (!ctx.hasView(&input))
    return internal("no input " + in.name + " for a received value");
  TensorView &view = const_cast<TensorView &>(ctx.view(&input));
  if (view.perm != in.perm)
    return refuse<Refusal::TransferOrder>(input, int64_t(in.fromChip), orderName(in.perm),
                                          int64_t(chip), orderName(view.perm));
  std::fill(view.storage->ready.begin(), view.storage->ready.end(), kNotWrittenYet);
  size_t k = 0;
  for (int64_t r = 0; r < view.rows; ++r)
    for (int64_t v = 0; v < view.vecsPerRow; ++v, ++k) {
      if (k >= in.arrivals.size())
        return internal("fewer vectors sent than received for " + in.name);
      WorkTree tree;
      tree.write(view.slices(r), view.address(r, v), -1);
      Instr recv;
      recv.op = Opcode::Receive;
      recv.dtype = view.dtype;
      recv.unit = uint16_t(in.link);
      int value = tree.add(recv);
      tree.nodes[0].inputs = {value};
      int64_t after = lastRecv.count(in.link) ? lastRecv[in.link] + 1 : 0;
      int64_t notBefore = std::max({in.arrivals[k], after, view.storage->block.writableFrom});
      std::optional<Placement> placed = ctx.placer().place(std::move(tree), notBefore);
      if (!placed)
        return cannotPlace(input, ctx);
      lastRecv[in.link] = placed->firstCycle;
      ctx.written(view, r, v, placed->doneCycle - 1);
    }
  return llvm::Error::success();
}

llvm::Error receiveAll(const ir::Function &fn, const ChipTraffic &traffic, LoweringContext &ctx) {
  // A link delivers in the order sent: its recvs issue in that order.
  std::map<unsigned, int64_t> lastRecv;
  for (const ChipTraffic::Incoming &in : traffic.incoming) {
    const ir::Op *input = nullptr;
    for (const ir::Op *op : fn.inputs())
      if (op->stringAttr("name") == in.name)
        input = op;
    if (!input)
      return internal("no input " + in.name + " for a received value");
    if (auto e = receiveOne(*input, in, traffic.chip, lastRecv, ctx))
      return e;
  }
  return llvm::Error::success();
}

llvm::Expected<LinkTransfer> sendOne(const TensorView &view, const ChipTraffic::Outgoing &out,
                                      unsigned chip, std::map<unsigned, int64_t> &linkFree,
                                      LoweringContext &ctx) {
  const ChipDescription &desc = ctx.chip();
  LinkTransfer sent;
  sent.id = out.id;
  sent.fromChip = chip;
  sent.toChip = out.toChip;
  sent.link = out.link;
  sent.farLink = out.farLink;
  sent.perm = view.perm;
  const int64_t serial = int64_t(streamWidth(view.dtype)) * desc.c2cCyclesPerVector;
  for (int64_t r = 0; r < view.rows; ++r)
    for (int64_t v = 0; v < view.vecsPerRow; ++v) {
      WorkTree tree;
      Instr send;
      send.op = Opcode::Send;
      send.dtype = view.dtype;
      send.unit = uint16_t(out.link);
      tree.add(send);
      tree.nodes[0].inputs = {tree.read(view.slices(r), view.address(r, view.storedVec(v)))};
      int64_t ready = view.readyAt(r, view.storedVec(v));
      std::optional<Placement> placed =
          ctx.placer().place(std::move(tree), ready, linkFree[out.link]);
      if (!placed)
        return internal("no cycle to send " + out.name);
      linkFree[out.link] = placed->rootCycle + serial;
      sent.arrivals.push_back(placed->rootCycle + serial + desc.c2cHopCycles);
      sent.bytes += uint64_t(streamWidth(view.dtype)) * desc.lanes;
      ctx.read(view, placed->rootCycle);
    }
  return sent;
}

llvm::Error sendAll(const ir::Function &fn, const ChipTraffic &traffic,
                    const std::map<std::string, TensorView> &views, LoweringContext &ctx,
                    Schedule &schedule) {
  std::map<unsigned, int64_t> linkFree;
  for (const ChipTraffic::Outgoing &out : traffic.outgoing) {
    auto it = views.find(out.name);
    if (it == views.end())
      return internal("no value to send for " + out.name);
    auto sent = sendOne(it->second, out, traffic.chip, linkFree, ctx);
    if (!sent)
      return sent.takeError();
    schedule.sent.push_back(std::move(*sent));
  }
  return llvm::Error::success();
}

void TransferMailbox::publish(LinkTransfer sent) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t id = sent.id;
    sent_.emplace(id, std::move(sent));
  }
  changed_.notify_all();
}

std::optional<LinkTransfer> TransferMailbox::await(int64_t id, unsigned from, unsigned waiter) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return sent_.count(id) || closed_[from]; });
  if (auto it = sent_.find(id); it != sent_.end())
    return it->second;
  aborted_[waiter] = true;
  return std::nullopt;
}

void TransferMailbox::close(unsigned chip) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_[chip] = true;
  }
  changed_.notify_all();
}

bool TransferMailbox::aborted(unsigned chip) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return aborted_[chip];
}

} // namespace lpu::scheduler
