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
#include <cstring>
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

/// The lane maps of packed tails (`tail` lanes a row, `rows` rows a
/// vector), one u16 vector per row of a group: the sender's map i moves a
/// row's lanes [0, tail) to [i * tail, (i + 1) * tail), the receiver's moves
/// them back; every other lane is 0 (a Distribute from lane `lanes`), so
/// no row's padding lanes reach another's.
std::vector<uint8_t> tailMaps(int64_t rows, int64_t tail, unsigned lanes, bool sender) {
  std::vector<uint8_t> data(size_t(rows) * lanes * 2);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t l = 0; l < int64_t(lanes); ++l) {
      uint16_t from = uint16_t(lanes);
      if (sender && l >= i * tail && l < (i + 1) * tail)
        from = uint16_t(l - i * tail);
      if (!sender && l < tail)
        from = uint16_t(l + i * tail);
      std::memcpy(&data[size_t(i * lanes + l) * 2], &from, 2);
    }
  return data;
}

Instr sxmOrVxm(Opcode op, ir::DType dtype, unsigned unit = 0) {
  Instr instr;
  instr.op = op;
  instr.dtype = dtype;
  instr.unit = uint16_t(unit);
  return instr;
}

} // namespace

int64_t tailRows(ir::DType dtype, int64_t cols, unsigned lanes) {
  const int64_t tail = cols % int64_t(lanes);
  if (tail == 0 || 2 * tail > int64_t(lanes) || cols < int64_t(lanes) || !dtypeAllowed(Opcode::Distribute, dtype) ||
      !dtypeAllowed(Opcode::Or, bitsType(dtype)))
    return 1;
  return int64_t(lanes) / tail;
}

llvm::Error receiveOne(const ir::Op &input, const ChipTraffic::Incoming &in, unsigned chip,
                       std::map<unsigned, int64_t> &lastRecv, LoweringContext &ctx) {
  if (!ctx.hasView(&input))
    return internal("no input " + in.name + " for a received value");
  TensorView &view = const_cast<TensorView &>(ctx.view(&input));
  if (view.perm != in.perm)
    return refuse<Refusal::TransferOrder>(input, int64_t(in.fromChip), orderName(in.perm),
                                          int64_t(chip), orderName(view.perm));
  std::fill(view.storage->ready.begin(), view.storage->ready.end(), kNotWrittenYet);
  const ChipDescription &desc = ctx.chip();
  const int64_t vpr = view.vecsPerRow, group = in.tailRows;
  if (group != 1 && group != tailRows(view.dtype, view.cols, desc.lanes))
    return internal("the sender of " + in.name + " packs " + llvm::Twine(in.tailRows) +
                    " rows' tails a vector, its receiver " +
                    llvm::Twine(tailRows(view.dtype, view.cols, desc.lanes)));
  // Groups of two rows or more send their tails packed (a last group of
  // one row sends its tail as it is).
  const int64_t tail = view.cols % int64_t(desc.lanes),
                packed = group > 1 ? view.rows / group + (view.rows % group >= 2 ? 1 : 0) : 0;
  // Packed tails land in scratch, one vector a group of rows, and are
  // moved from there into each row's last vector.
  std::optional<TensorView> landed, maps;
  if (packed > 0) {
    auto scratch = ctx.scratch(input, view.dtype, packed, desc.lanes, view.allSlices());
    if (!scratch)
      return scratch.takeError();
    landed = *scratch;
    std::vector<uint16_t> avoid = view.allSlices();
    avoid.insert(avoid.end(), landed->allSlices().begin(), landed->allSlices().end());
    auto c = ctx.constant(input, ir::DType::I16, group, desc.lanes, tailMaps(group, tail, desc.lanes, false), avoid);
    if (!c)
      return c.takeError();
    maps = *c;
  }
  size_t k = 0;
  // One vector off the link into `planes` at `addr`; the cycle its write
  // lands.
  auto receive = [&](const std::vector<uint16_t> &planes, uint32_t addr, int64_t notBefore) -> std::optional<int64_t> {
    if (k >= in.arrivals.size())
      return std::nullopt;
    WorkTree tree;
    tree.write(planes, addr, -1);
    int value = tree.add(sxmOrVxm(Opcode::Receive, view.dtype, in.link));
    tree.nodes[0].inputs = {value};
    int64_t after = lastRecv.count(in.link) ? lastRecv[in.link] + 1 : 0;
    std::optional<Placement> placed =
        ctx.placer().place(std::move(tree), std::max({in.arrivals[k++], after, notBefore}));
    if (!placed)
      return std::nullopt;
    lastRecv[in.link] = placed->firstCycle;
    return placed->doneCycle - 1;
  };
  for (int64_t r0 = 0; r0 < view.rows; r0 += group) {
    const int64_t r1 = std::min(view.rows, r0 + group), whole = group > 1 ? vpr - 1 : vpr;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t v = 0; v < whole; ++v) {
        if (k >= in.arrivals.size())
          return internal("fewer vectors sent than received for " + in.name);
        std::optional<int64_t> done = receive(view.slices(r), view.address(r, v), view.storage->block.writableFrom);
        if (!done)
          return cannotPlace(input, ctx);
        ctx.written(view, r, v, *done);
      }
    if (group == 1)
      continue;
    if (k >= in.arrivals.size())
      return internal("fewer vectors sent than received for " + in.name);
    if (r1 - r0 == 1) {
      std::optional<int64_t> done =
          receive(view.slices(r0), view.address(r0, vpr - 1), view.storage->block.writableFrom);
      if (!done)
        return cannotPlace(input, ctx);
      ctx.written(view, r0, vpr - 1, *done);
      continue;
    }
    const int64_t g = r0 / group;
    std::optional<int64_t> done = receive(landed->slices(g), landed->address(g, 0), landed->storage->block.writableFrom);
    if (!done)
      return cannotPlace(input, ctx);
    ctx.written(*landed, g, 0, *done);
    for (int64_t r = r0; r < r1; ++r) {
      WorkTree tree;
      tree.write(view.slices(r), view.address(r, vpr - 1), -1);
      int data = tree.read(landed->slices(g), landed->address(g, 0));
      tree.nodes[size_t(data)].notBefore = landed->readyAt(g, 0);
      int map = tree.read(maps->slices(r - r0), maps->address(r - r0, 0));
      const unsigned side = desc.isEastSlice(landed->allSlices().front()) ? 1 : 0;
      tree.nodes[0].inputs = {tree.add(sxmOrVxm(Opcode::Distribute, view.dtype, side), {data, map})};
      std::optional<Placement> placed =
          ctx.placer().place(std::move(tree), std::max(landed->readyAt(g, 0), view.storage->block.writableFrom));
      if (!placed)
        return cannotPlace(input, ctx);
      ctx.written(view, r, vpr - 1, placed->doneCycle - 1);
      ctx.read(*landed, placed->doneCycle);
      ctx.read(*maps, placed->doneCycle);
    }
  }
  if (k != in.arrivals.size())
    return internal("more vectors sent than received for " + in.name);
  if (landed)
    ctx.releaseScratch(*landed);
  return llvm::Error::success();
}

llvm::Error receiveAll(const ir::Function &fn, const ChipTraffic &traffic, LoweringContext &ctx,
                       const AroundTransfer &around) {
  // A link delivers in the order sent: its recvs issue in that order.
  std::map<unsigned, int64_t> lastRecv;
  for (const ChipTraffic::Incoming &in : traffic.incoming) {
    const ir::Op *input = nullptr;
    for (const ir::Op *op : fn.inputs())
      if (op->stringAttr("name") == in.name)
        input = op;
    if (!input)
      return internal("no input " + in.name + " for a received value");
    if (auto e = around(*input, in.id, [&] { return receiveOne(*input, in, traffic.chip, lastRecv, ctx); }))
      return e;
  }
  return llvm::Error::success();
}

llvm::Expected<LinkTransfer> sendOne(const ir::Op &owner, const TensorView &view,
                                      const ChipTraffic::Outgoing &out, unsigned chip,
                                      std::map<unsigned, int64_t> &linkFree, LoweringContext &ctx) {
  const ChipDescription &desc = ctx.chip();
  LinkTransfer sent;
  sent.id = out.id;
  sent.fromChip = chip;
  sent.toChip = out.toChip;
  sent.link = out.link;
  sent.farLink = out.farLink;
  sent.perm = view.perm;
  const int64_t vpr = view.vecsPerRow, group = out.packTails ? tailRows(view.dtype, view.cols, desc.lanes) : 1;
  const int64_t tail = view.cols % int64_t(desc.lanes);
  sent.tailRows = group;
  std::optional<TensorView> maps;
  if (group > 1 && view.rows > 1) {
    auto c = ctx.constant(owner, ir::DType::I16, group, desc.lanes, tailMaps(group, tail, desc.lanes, true),
                          view.allSlices());
    if (!c)
      return c.takeError();
    maps = *c;
  }
  const int64_t serial = int64_t(streamWidth(view.dtype)) * desc.c2cCyclesPerVector;
  // One vector onto the link: `tree` with a send at its root, its value's
  // reads no earlier than `ready`.
  auto send = [&](WorkTree tree, int64_t ready) -> llvm::Error {
    tree.nodes[0].instr = sxmOrVxm(Opcode::Send, view.dtype, out.link);
    std::optional<Placement> placed = ctx.placer().place(std::move(tree), ready, linkFree[out.link]);
    if (!placed)
      return internal("no cycle to send " + out.name);
    linkFree[out.link] = placed->rootCycle + serial;
    sent.arrivals.push_back(placed->rootCycle + serial + desc.c2cHopCycles);
    sent.bytes += uint64_t(streamWidth(view.dtype)) * desc.lanes;
    ctx.read(view, placed->rootCycle);
    if (maps)
      ctx.read(*maps, placed->rootCycle);
    return llvm::Error::success();
  };
  auto stored = [&](int64_t r, int64_t v) {
    WorkTree tree;
    tree.add(Instr{});
    tree.nodes[0].inputs = {tree.read(view.slices(r), view.address(r, view.storedVec(v)))};
    return send(std::move(tree), view.readyAt(r, view.storedVec(v)));
  };
  for (int64_t r0 = 0; r0 < view.rows; r0 += group) {
    const int64_t r1 = std::min(view.rows, r0 + group), whole = group > 1 ? vpr - 1 : vpr;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t v = 0; v < whole; ++v)
        if (auto e = stored(r, v))
          return e;
    if (group == 1)
      continue;
    if (r1 - r0 == 1) {
      if (auto e = stored(r0, vpr - 1))
        return e;
      continue;
    }
    // The group's tails side by side, row i's moved up to lanes
    // [i * tail, (i + 1) * tail) and nothing else of it (the lanes past a
    // row's end need not be 0: a softmax leaves values there), or-ed
    // together.
    WorkTree tree;
    tree.add(Instr{});
    const unsigned side = desc.isEastSlice(view.allSlices().front()) ? 1 : 0;
    const ir::DType bits = bitsType(view.dtype);
    const int64_t last = view.storedVec(vpr - 1);
    int64_t ready = 0;
    int acc = -1;
    for (int64_t r = r0; r < r1; ++r) {
      ready = std::max(ready, view.readyAt(r, last));
      int data = tree.read(view.slices(r), view.address(r, last));
      int map = tree.read(maps->slices(r - r0), maps->address(r - r0, 0));
      int moved = tree.add(sxmOrVxm(Opcode::Distribute, view.dtype, side), {data, map});
      // The first piece one cycle apart from the next, so that two pieces
      // never need the value's read port in the same cycle.
      acc = r == r0 ? tree.add(sxmOrVxm(Opcode::Copy, bits), {moved})
                    : tree.add(sxmOrVxm(Opcode::Or, bits), {acc, moved});
    }
    tree.nodes[0].inputs = {acc};
    if (auto e = send(std::move(tree), ready))
      return e;
  }
  return sent;
}

llvm::Error sendAll(const ir::Function &fn, const ChipTraffic &traffic,
                    const std::map<std::string, TensorView> &views, LoweringContext &ctx,
                    Schedule &schedule, const AroundTransfer &around) {
  std::map<unsigned, int64_t> linkFree;
  // The values sent are what the function returns: its return owns the
  // lane maps of their packed tails.
  const ir::Op *owner = nullptr;
  for (const auto &op : fn.ops())
    if (op->kind() == ir::OpKind::Return)
      owner = op.get();
  for (const ChipTraffic::Outgoing &out : traffic.outgoing) {
    auto it = views.find(out.name);
    if (it == views.end() || !owner)
      return internal("no value to send for " + out.name);
    if (auto e = around(*owner, out.id, [&]() -> llvm::Error {
          auto sent = sendOne(*owner, it->second, out, traffic.chip, linkFree, ctx);
          if (!sent)
            return sent.takeError();
          schedule.sent.push_back(std::move(*sent));
          return llvm::Error::success();
        }))
      return e;
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

std::optional<PatternFit> closestPattern(const GroupArrivals &arrivals,
                                         llvm::ArrayRef<const GroupArrivals *> patterns) {
  std::optional<PatternFit> best;
  for (size_t p = 0; p < patterns.size(); ++p) {
    const GroupArrivals &before = *patterns[p];
    std::optional<int64_t> most, least;
    for (size_t k = 0; k < arrivals.size() && k < before.size(); ++k)
      for (size_t i = 0; i < arrivals[k].size() && i < before[k].size(); ++i)
        for (size_t v = 0; v < arrivals[k][i].size() && v < before[k][i].size(); ++v) {
          const int64_t late = arrivals[k][i][v] - before[k][i][v];
          most = std::max(most.value_or(late), late);
          least = std::min(least.value_or(late), late);
        }
    if (most && (!best || *most - *least < best->skew))
      best = PatternFit{p, *most, *most - *least};
  }
  return best;
}

bool sharesPattern(int64_t skew, int64_t span, size_t patterns, const TuningKnobs &knobs) {
  return int64_t(patterns) >= knobs.sharePatterns ||
         skew <= std::max(knobs.shareSkewFloor, span / knobs.shareSkewShare);
}

} // namespace lpu::scheduler
