#include "scheduler/Scheduler.h"

#include "scheduler/Error.h"
#include "scheduler/LayoutAssignment.h"
#include "scheduler/Legalize.h"
#include "scheduler/Lowering.h"
#include "scheduler/Transfers.h"

#include "backend/Bucketing.h"
#include "backend/Topology.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/ScopeExit.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <optional>
#include <set>
#include <thread>

namespace lpu::scheduler {

using namespace backend;

namespace {

std::vector<Dim> placementShape(const ir::Type &type) {
  std::vector<Dim> out;
  for (int64_t d : type.shape)
    out.push_back(Dim{d, ""});
  return out;
}

/// When `op`'s operands' first vectors are all ready (an operand computed
/// in `op`'s fusion group: its own operands'): `op` writes nothing sooner.
int64_t firstOperandsReady(const ir::Op &op, const LoweringContext &ctx) {
  int64_t at = 0;
  for (const ir::Op *operand : op.operands()) {
    if (!ctx.hasView(operand)) {
      at = std::max(at, firstOperandsReady(*operand, ctx));
      continue;
    }
    const TensorView &v = ctx.view(operand);
    if (v.rows > 0 && v.vecsPerRow > 0)
      at = std::max(at, v.readyAt(0, 0));
  }
  return at;
}

/// The bytes of one row of a splat constant (C elements of `type`).
std::vector<uint8_t> splatBytes(const ir::Op &op, int64_t cols) {
  double value = 0;
  if (auto f = op.floatAttr("value"))
    value = *f;
  else if (auto b = op.boolAttr("value"))
    value = *b ? 1.0 : 0.0;
  DType type = op.type().dtype;
  unsigned size = tensor::dtypeSize(type);
  uint8_t elem[8] = {};
  encodeElement(type, value, elem);
  std::vector<uint8_t> out;
  for (int64_t c = 0; c < cols; ++c)
    out.insert(out.end(), elem, elem + size);
  return out;
}

int64_t latencyOf(const ChipDescription &chip, const Instr &in) {
  return chip.timingOf(in.op, in.dtype).latency;
}

std::map<QueueId, size_t> queueLengths(const Schedule &schedule) {
  std::map<QueueId, size_t> lengths;
  for (const auto &[q, list] : schedule.queues)
    lengths[q] = list.size();
  return lengths;
}

/// Records what lowering `op` placed: the instructions past `before` on
/// every queue, and its rows' readiness when it has rows of its own.
/// `result`: the op whose rows the lowering wrote (`op`, an epilogue's
/// root, an attention's merged heads).
/// The timings (indices into Schedule::ops) of the ops whose results `v`
/// is: its own, or through an op that placed nothing (a view, a value
/// computed in its readers' trees), its operands'.
void producersOf(const ir::Op *v, const std::map<const ir::Op *, uint32_t> &timed,
                 std::set<const ir::Op *> &seen, std::vector<uint32_t> &out) {
  if (!seen.insert(v).second)
    return;
  if (auto it = timed.find(v); it != timed.end()) {
    if (llvm::find(out, it->second) == out.end())
      out.push_back(it->second);
    return;
  }
  for (const ir::Op *operand : v->operands())
    producersOf(operand, timed, seen, out);
}

OpTiming *noteOpTiming(Schedule &schedule, const std::map<QueueId, size_t> &before,
                       const ir::Op &op, const ir::Op &result, const LoweringContext &ctx,
                       std::map<const ir::Op *, uint32_t> &timed) {
  OpTiming t;
  bool any = false;
  for (const auto &[q, list] : schedule.queues) {
    auto it = before.find(q);
    const size_t from = it == before.end() ? 0 : it->second;
    if (from < list.size())
      t.ranges.push_back({q.unit, q.index, uint32_t(from), uint32_t(list.size())});
    for (size_t i = from; i < list.size(); ++i) {
      t.firstCycle = any ? std::min(t.firstCycle, list[i].cycle) : list[i].cycle;
      t.lastCycle = any ? std::max(t.lastCycle, list[i].cycle) : list[i].cycle;
      any = true;
    }
  }
  if (!any)
    return nullptr;
  std::set<const ir::Op *> seen{&op};
  for (const ir::Op *operand : op.operands())
    producersOf(operand, timed, seen, t.inputs);
  timed[&op] = timed[&result] = uint32_t(schedule.ops.size());
  t.op = ir::mnemonic(op.kind()).str();
  t.type = op.type().str();
  t.loc = op.loc();
  if (ctx.hasView(&result)) {
    const TensorView &v = ctx.view(&result);
    // A row is ready once its every vector is.
    for (int64_t r = 0; r < v.rows; ++r) {
      int64_t ready = 0;
      for (int64_t k = 0; k < v.vecsPerRow; ++k)
        ready = std::max(ready, v.readyAt(r, k));
      t.firstRowReady = t.firstRowReady < 0 ? ready : std::min(t.firstRowReady, ready);
      t.lastRowReady = std::max(t.lastRowReady, ready);
    }
    t.firstRowBound = ctx.pathOf(result);
    t.lastRowBound = ctx.pathOfRows(result, v.rows);
  }
  schedule.ops.push_back(std::move(t));
  return &schedule.ops.back();
}

} // namespace

namespace {
/// How the plan names a stored order (LayoutAssignment.h).
std::string storedOrderName(const std::vector<uint8_t> &perm) {
  if (perm == kChannelsLast)
    return "channels-last: [N, H, W, C], a pixel's channels to a row";
  if (perm == kConvWeightOrder)
    return "as convolution weight rows: [KH, KW, C, O]";
  if (perm == kPerChannelOrder)
    return "per channel: [1, 1, C]";
  if (perm == kTransposed)
    return "transposed: [D, V]";
  std::string s = "in the order";
  for (uint8_t d : perm)
    s += " " + std::to_string(d);
  return s;
}
} // namespace

/// Whether parameter `op` may be stored packed: its rows leave padding
/// lanes, it is stored as declared, and its every use reads it through a
/// lowering that understands packed storage (a matmul's f16 weights, a
/// gather's table); any other reader sees rows. f32 and bf16 weights are
/// cut into scaled f16 pieces column by column (lower/Matmul.cpp), which
/// reads them as rows.
bool packable(const ir::Op &op, const LayoutAssignment &layouts, const LoweringContext &ctx,
              unsigned lanes) {
  if (op.kind() != ir::OpKind::Param || layouts.order.count(&op) || layouts.relayout.count(&op))
    return false;
  auto [rows, cols] = LoweringContext::rowsAndCols(op.type());
  (void)rows;
  if (cols % lanes == 0)
    return false;
  auto users = ctx.users.find(&op);
  if (users == ctx.users.end() || users->second.empty())
    return false;
  for (const ir::Op *user : users->second)
    for (size_t i = 0; i < user->operands().size(); ++i) {
      if (user->operand(i) != &op)
        continue;
      bool weights = user->kind() == ir::OpKind::Matmul && i == 1 &&
                     op.type().dtype == DType::F16;
      bool table = user->kind() == ir::OpKind::Gather && i == 0;
      if (!weights && !table)
        return false;
    }
  return true;
}

namespace {
/// Whether every use of `op` is a matmul's weights (operand 1): the
/// matmul reads each weight row from its own chunk's slices, so a stripe
/// may put chunks in both hemispheres.
bool onlyMatmulWeights(const ir::Op &op, const LoweringContext &ctx) {
  auto users = ctx.users.find(&op);
  if (users == ctx.users.end() || users->second.empty())
    return false;
  for (const ir::Op *user : users->second)
    for (size_t i = 0; i < user->operands().size(); ++i)
      if (user->operand(i) == &op && !(user->kind() == ir::OpKind::Matmul && i == 1))
        return false;
  return true;
}

/// The rows of each chunk a matmul's weight parameter is cut into, or 0 to
/// store it whole (PlacementHeuristics::weightsByKTile): it has more rows
/// than a K-tile, its every use is a matmul's weights (operand 1) whose
/// jobs runMatmul cuts over planes (split K or dealt K-tiles), and it is
/// stored as declared. A chunk is a K-tile (mxm_dim rows) in slices of its
/// own, or the rows of a balanced cut's range when that is fewer, so the
/// planes that multiply a job's K-tiles side by side load them at once,
/// through a read port each, where a weight stored whole loaded every
/// plane's rows through one port (mlp's [784, 256]: 784 reads one after
/// another before the first plane could install). Whole jobs on planes of
/// their own (a column tile each) read every row side by side: such a
/// weight is cut into knobs.wavefrontChunks chunks a plane, so that the
/// planes load in a wavefront, each a chunk behind the one before in
/// another chunk's port, instead of each waiting for all the rows of the
/// planes before it at one port.
int64_t weightChunkRows(const ir::Op &op, const LayoutAssignment &layouts,
                        const LoweringContext &ctx, const backend::ChipDescription &chip) {
  if (auto order = layouts.order.find(&op);
      op.kind() == ir::OpKind::Param && order != layouts.order.end() &&
      order->second == kConvWeightOrder && chip.mxmPlanes > 1) {
    // A channels-last convolution's weights [KH, KW, C, O] in rows
    // (kh, kw, c): a chunk per K-tile (an offset's tile of input channels)
    // when every convolution reading them cuts its K-tiles over the planes.
    auto users = ctx.users.find(&op);
    if (users == ctx.users.end() || users->second.empty())
      return 0;
    for (const ir::Op *user : users->second)
      if (user->kind() != ir::OpKind::Conv2d || user->operand(1) != &op ||
          user->operand(0) == &op || !layouts.order.count(user) ||
          !channelsLastConvCutsK(*user, chip, ctx.knobs.packedOffsets) ||
          convOffsetsPerTile(*user, chip, ctx.knobs.packedOffsets) !=
              convOffsetsPerTile(*users->second.front(), chip, ctx.knobs.packedOffsets))
        return 0;
    const std::vector<int64_t> &ws = op.type().shape;
    // A K-tile: an offset's tile of input channels, or several offsets'
    // channels packed.
    const int64_t perTile = convOffsetsPerTile(*users->second.front(), chip, ctx.knobs.packedOffsets);
    const int64_t chunk = std::min<int64_t>(ws[1] * perTile, chip.mxmDim), rows = ws[1] * ws[2] * ws[3];
    return ctx.heuristics.weightsByKTile && rows > chunk ? chunk : 0;
  }
  if (op.kind() != ir::OpKind::Param || layouts.order.count(&op) || layouts.relayout.count(&op) ||
      op.type().shape.size() != 2 || chip.mxmPlanes < 2)
    return 0;
  auto users = ctx.users.find(&op);
  if (users == ctx.users.end() || users->second.empty())
    return 0;
  const int64_t rows = op.type().shape[0], dim = chip.mxmDim, planes = chip.mxmPlanes;
  int64_t chunk = dim;
  bool cuts = false;
  int64_t side = 1; // planes that read every row of the weight, side by side
  for (const ir::Op *user : users->second)
    for (size_t i = 0; i < user->operands().size(); ++i) {
      if (user->operand(i) != &op)
        continue;
      if (!(user->kind() == ir::OpKind::Matmul && i == 1))
        return 0;
      // runMatmul's jobs (column tiles times blocks of accumulator rows),
      // cut into parts read side by side or dealt by K-tile (planeShare).
      const std::vector<int64_t> &as = user->operand(0)->type().shape;
      int64_t m = 1;
      for (size_t d = 0; d + 1 < as.size(); ++d)
        m *= as[d];
      const int64_t n = op.type().shape[1];
      const int64_t jobs = (n + dim - 1) / dim * ((m + chip.mxmAccRows - 1) / chip.mxmAccRows);
      const int64_t kt = (rows + dim - 1) / dim;
      const PlaneShare share = planeShare(jobs, kt, planes);
      cuts |= share.cut > 1 || share.dealt;
      if (share.cut > 1)
        chunk = std::min(chunk, rows / share.cut);
      else if (!share.dealt)
        side = std::max(side, std::min(jobs, planes));
    }
  if (!ctx.heuristics.weightsByKTile)
    return 0;
  if (cuts)
    return rows > dim ? std::max<int64_t>(chunk, 1) : 0;
  const int64_t wave = side * ctx.knobs.wavefrontChunks;
  return side > 1 && wave > 0 && rows >= wave ? (rows + wave - 1) / wave : 0;
}

/// The order the ops are lowered in: program order, except that a matmul
/// whose product becomes the right operand of another matmul (through
/// reshapes, transposes, converts and elementwise ops with constants or
/// parameters: attention's keys, `q @ transpose(k)`) goes just before the
/// matmul whose product becomes that matmul's left operand (the queries)
/// when it comes after it and reads only what is defined before it. The
/// right operand is loaded into the planes whole before the first row goes
/// through, while the left one's rows stream through as they are written:
/// the keys computed first are transposed and loaded while the queries are
/// multiplied, instead of after them. Only for a chip of a lockstep group
/// (`reorder`), where it was measured to help (docs/scheduler.md, "Lowering
/// order").
std::vector<const ir::Op *> loweringOrder(const ir::Function &fn, bool reorder) {
  std::vector<const ir::Op *> order;
  std::map<const ir::Op *, size_t> at;
  for (const auto &op : fn.ops()) {
    at[op.get()] = order.size();
    order.push_back(op.get());
  }
  if (!reorder)
    return order;
  // The matmul a value is the product of, through ops that carry it alone.
  auto productOf = [](const ir::Op *v) -> const ir::Op * {
    for (int steps = 0; v && steps < 16; ++steps) {
      if (v->kind() == ir::OpKind::Matmul)
        return v;
      const ir::Op *next = nullptr;
      const bool carries = v->kind() == ir::OpKind::Reshape || v->kind() == ir::OpKind::Transpose ||
                           v->kind() == ir::OpKind::Convert || ir::isElementwise(v->kind());
      if (!carries)
        return nullptr;
      for (const ir::Op *operand : v->operands()) {
        const ir::OpClass c = ir::opClass(operand->kind());
        if (c == ir::OpClass::Leaf || operand->kind() == ir::OpKind::Broadcast)
          continue;
        if (next)
          return nullptr;
        next = operand;
      }
      v = next;
    }
    return nullptr;
  };
  std::map<const ir::Op *, const ir::Op *> before; // moved matmul -> the one it goes before
  for (const ir::Op *op : order) {
    if (op->kind() != ir::OpKind::Matmul)
      continue;
    const ir::Op *left = productOf(op->operand(0)), *right = productOf(op->operand(1));
    if (!left || !right || left == right || at[right] < at[left] || before.count(right) ||
        before.count(left))
      continue;
    // (Parameters and constants are placed before any op is lowered.)
    if (llvm::all_of(right->operands(), [&](const ir::Op *o) {
          return at[o] < at[left] || o->kind() == ir::OpKind::Param || o->kind() == ir::OpKind::Constant;
        }))
      before[right] = left;
  }
  if (before.empty())
    return order;
  std::vector<const ir::Op *> moved;
  for (const ir::Op *op : order) {
    if (before.count(op))
      continue;
    for (const auto &[m, target] : before)
      if (target == op)
        moved.push_back(m);
    moved.push_back(op);
  }
  // (A matmul another goes before is never moved itself.)
  return moved.size() == order.size() ? moved : order;
}

/// Why a chip of a lockstep group stops without an error of its own.
llvm::Error abortedBy(const ChipTraffic::Incoming &in, unsigned chip) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "chip " + std::to_string(chip) + " waits for " + in.name +
                                     " from chip " + std::to_string(in.fromChip) +
                                     ", which failed");
}
} // namespace

/// One attempt with the parameters stored as `storage` says.
/// `packedAny`: whether any parameter qualified for packing.
/// `heuristics`: the set to schedule with; `decided`: which of them decided
/// anything.
llvm::Expected<Schedule> scheduleOnce(const ir::Function &fn, const ChipDescription &chip,
                                      ParamStorage storage, bool &packedAny,
                                      const PlacementHeuristics &heuristics,
                                      PlacementHeuristics &decided, const ChipTraffic *traffic,
                                      const TuningKnobs &knobs) {
  const bool pack = storage != ParamStorage::Rows;
  Schedule schedule;
  Placer placer(chip, schedule);
  placer.portDetours = unsigned(knobs.portDetours);
  SramAllocator sram(chip);
  LoweringContext ctx(chip, placer, sram);
  ctx.heuristics = heuristics;
  ctx.knobs = knobs;
  auto noteDecided = llvm::make_scope_exit([&] { decided = ctx.heuristicsDecided; });
  // One of a lockstep group (MultiChip.cpp): sends at the `transfer` ops,
  // recvs at the received inputs, in program order; per link, the first
  // cycle it is free to send and its last recv, across all transfers.
  const bool lockstep = traffic && traffic->mailbox;
  std::map<unsigned, int64_t> linkFree, lastRecv;
  const bool striping = storage == ParamStorage::Striped || storage == ParamStorage::StripedBySize;
  ctx.striped = sram.balance = striping;
  // A value another chip sends stored as declared is received so.
  std::set<const ir::Op *> receivedDeclared;
  if (traffic)
    for (const auto &owned : fn.ops())
      if (owned->kind() == ir::OpKind::Input)
        for (const ChipTraffic::Incoming &in : traffic->incoming)
          if (in.perm.empty() && owned->stringAttr("name") == in.name)
            receivedDeclared.insert(owned.get());
  const LayoutAssignment layouts = assignLayouts(fn, chip, knobs, receivedDeclared);
  ctx.storedOrder = layouts.order;
  ctx.convRowWeights = layouts.convRows;
  for (const auto &owned : fn.ops())
    if (auto it = layouts.order.find(owned.get()); it != layouts.order.end())
      ctx.decide(*owned, "stored " + storedOrderName(it->second));
  for (const auto &[operand, copy] : layouts.relayout)
    ctx.decide(*operand, "read channels-last through a copy, made for its first channels-last reader");
  auto orderOf = [&](const ir::Op &op) {
    auto it = layouts.order.find(&op);
    return it == layouts.order.end() ? std::vector<uint8_t>{} : it->second;
  };

  const std::vector<const ir::Op *> lowering = loweringOrder(fn, lockstep);
  std::map<const ir::Op *, size_t> index;
  for (const ir::Op *op : lowering)
    index[op] = index.size();
  // The op whose timing (Schedule::ops) each lowered result is in.
  std::map<const ir::Op *, uint32_t> timed;
  // A transfer's sends or recvs as an op of their own ("send", "recv"),
  // with the transfer they are.
  auto noteTransfer = [&](bool send) -> AroundTransfer {
    return [&, send](const ir::Op &op, int64_t id,
                      const std::function<llvm::Error()> &place) -> llvm::Error {
      const std::map<QueueId, size_t> before = queueLengths(schedule);
      if (llvm::Error e = place())
        return e;
      if (OpTiming *t = noteOpTiming(schedule, before, op, op, ctx, timed)) {
        t->op = send ? "send" : "recv";
        (send ? t->sends : t->receives) = id;
      }
      return llvm::Error::success();
    };
  };
  for (const auto &op : fn.ops())
    for (const ir::Op *operand : op->operands())
      ctx.users[operand].push_back(op.get());
  const ir::Op *ret = fn.terminator();
  if (ret)
    for (const ir::Op *v : ret->operands())
      ctx.returned[v] = true;

  // Reshapes alias their operand: uses of an alias are uses of its storage.
  // So does an update left after legalisation: it is written in place.
  auto storageRoot = [&](const ir::Op *op) {
    while (aliasesOperand(*op, layouts, chip.lanes) || op->kind() == ir::OpKind::Update)
      op = op->operand(0);
    return op;
  };
  // The state inputs updated in place, with the rows of one index of the
  // axes before the update's: their storage is chunked on those
  // boundaries, so that one index's rows are at consecutive addresses.
  // One updated along its last axis (a cache stored transposed, written a
  // column a step) is chunked on its matrices (its last two axes) instead.
  // Either is cut into a chunk an index of the axes before the update's
  // (a head's keys or values) over the slice groups: the matrices a
  // batched matmul loads as weights, each plane through its own read
  // port.
  std::map<const ir::Op *, int64_t> updatedBlock, updatedChunks;
  for (const auto &owned : fn.ops())
    if (owned->kind() == ir::OpKind::Update) {
      const ir::Type &t = owned->type();
      const int64_t rank = int64_t(t.rank());
      int64_t k = owned->intAttr("axis").value_or(0);
      k = k < 0 ? k + rank : k;
      int64_t block = 1;
      for (int64_t d = k; d + 1 < rank; ++d)
        block *= t.shape[size_t(d)];
      if (k == rank - 1 && rank >= 2)
        block = t.shape[size_t(rank - 2)];
      updatedBlock[owned->operand(0)] = block;
      updatedChunks[owned->operand(0)] = t.numElements() / std::max<int64_t>(1, t.shape.back() * block);
    }
  // Outputs computed into their own block keep it (no copy); others copy.
  std::set<const ir::Op *> outputRoots;
  if (ret)
    for (const ir::Op *v : ret->operands()) {
      const ir::Op *root = storageRoot(v);
      bool leaf = ir::opClass(root->kind()) == ir::OpClass::Leaf;
      if (!leaf && v->kind() != ir::OpKind::Broadcast && !outputRoots.count(root)) {
        outputRoots.insert(root);
        ctx.persistentResult[root] = true;
      }
    }
  std::map<std::string, TensorView> sentViews;
  std::vector<const ir::Op *> leaves;
  for (const auto &owned : fn.ops())
    if (owned->kind() == ir::OpKind::Input || owned->kind() == ir::OpKind::Param)
      leaves.push_back(owned.get());
  std::vector<TensorPlacement> inputs, params, consts, outputs;
  auto leafView = [&](const ir::Op &op, int64_t storedRows) -> llvm::Expected<TensorView> {
    auto [rows, cols] = LoweringContext::rowsAndCols(LoweringContext::storedType(op.type(), orderOf(op)));
    std::string what = std::string(ir::mnemonic(op.kind()));
    if (auto name = op.stringAttr(op.kind() == ir::OpKind::Param ? "path" : "name"))
      what += " '" + *name + "'";
    what += " " + op.type().str();
    const ir::Type stored = LoweringContext::storedType(op.type(), orderOf(op));
    int64_t align = stored.shape.size() >= 2 && stored.shape[0] > 0 ? rows / stored.shape[0] : 1;
    if (auto b = updatedBlock.find(&op); b != updatedBlock.end())
      align = b->second;
    const bool packed = pack && storedRows == rows && packable(op, layouts, ctx, chip.lanes);
    packedAny |= packed;
    // Striped: a packed parameter is cut into a chunk per slice group of a
    // hemisphere, at one address. Stripes stack with no room lost between
    // them, where whole tensors leave a sliver atop most slices that no
    // later tensor fits in (BERT-base: 0.44 of a [768, 768] weight per
    // slice, over 4 MB in all, in SRAM that is 95% parameters).
    const bool stripe = packed && striping;
    const int64_t groups = chip.memSlices / 2 / tensor::dtypeSize(op.type().dtype);
    int64_t chunks = stripe ? groups : 1;
    if (auto c = updatedChunks.find(&op); c != updatedChunks.end() && !stripe && c->second > 1) {
      chunks = std::min(groups, c->second);
      ctx.decide(op, "updated in place, an index of the axes before the update's to a chunk of slices, over " +
                         std::to_string(chunks) + " chunks");
    }
    if (stripe)
      ctx.decide(op, "packed and striped over " + std::to_string(chunks) + " slice groups");
    else if (packed)
      ctx.decide(op, "packed: no padding lanes between rows");
    if (const int64_t chunkRows = stripe || storedRows != rows ? 0 : weightChunkRows(op, layouts, ctx, chip)) {
      ctx.decide(op, "weights by K-tile: stored " + std::to_string(chunkRows) + " rows to a chunk of slices");
      // A conv weight's chunks are its K-tiles (the rows per kh, which
      // only a gather's ids need together, do not matter).
      align = orderOf(op) == kConvWeightOrder ? chunkRows : std::lcm(std::max<int64_t>(align, 1), chunkRows);
      chunks = std::min(groups, (rows + chunkRows - 1) / chunkRows);
    }
    auto storage = ctx.allocateStorage(op.type().dtype, storedRows, cols, SramOwner{what, op.loc()},
                                       align, {}, packed, chunks, stripe && onlyMatmulWeights(op, ctx));
    if (!storage)
      return storage.takeError();
    // In SRAM before the run: every stored vector is ready at 0.
    (*storage)->ready.assign((*storage)->ready.size(), 0);
    (*storage)->persistent = true;
    TensorView view = LoweringContext::viewOf(std::move(*storage), op.type().dtype, rows, cols);
    view.perm = orderOf(op);
    if (storedRows != rows)
      view.rowMap.assign(size_t(rows), 0);
    return view;
  };
  auto placementOf = [&](TensorRole role, std::string name, const ir::Type &type,
                         const TensorView &view) {
    TensorPlacement t;
    t.role = role;
    t.name = std::move(name);
    t.dtype = type.dtype;
    t.shape = placementShape(type);
    t.slices = view.allSlices();
    t.addr = view.storage->block.addr;
    t.perm = view.perm;
    t.chunkRows = uint32_t(view.chunkRows());
    t.layout = view.packed() ? Layout::Packed : Layout::Rows;
    return t;
  };

  // Inputs, parameters and constants first: they are in SRAM before the run
  // starts, so they must not take space that a block freed during the run
  // (and written in it) held. Conv weights stored channels-last go first,
  // largest first, while whole slices are free: the biggest need most of a
  // slice group.
  auto weight = [&](const ir::Op *op) { return orderOf(*op) == kConvWeightOrder; };
  // Stripes go first: each needs every slice group of a hemisphere free
  // at its address.
  auto striped = [&](const ir::Op *op) {
    return striping && packable(*op, layouts, ctx, chip.lanes);
  };
  // The largest stripes first (the last attempt): one no hemisphere holds
  // goes across both while they are equally empty, and the others fill
  // the hemispheres evenly above it.
  auto bytes = [](const ir::Op *op) {
    return op->type().numElements() * int64_t(tensor::dtypeSize(op->type().dtype));
  };
  // Then the states updated in place, while whole runs of a slice are
  // free: each needs its heads' positions in one chunk (updatedBlock).
  auto inPlace = [&](const ir::Op *op) { return updatedBlock.count(op) != 0; };
  std::stable_sort(leaves.begin(), leaves.end(), [&](const ir::Op *a, const ir::Op *b) {
    if (striped(a) != striped(b))
      return striped(a);
    if (inPlace(a) != inPlace(b))
      return inPlace(a);
    if (striped(a) && storage == ParamStorage::StripedBySize)
      return bytes(a) > bytes(b);
    if (weight(a) != weight(b))
      return weight(a);
    if (weight(a))
      return a->type().numElements() > b->type().numElements();
    // The last attempt places the other parameters largest first too: a
    // large one (an LM head of int8 weights) needs long runs of free
    // vectors in its slices, which the small ones placed before it break.
    return storage == ParamStorage::StripedBySize && bytes(a) > bytes(b);
  });
  for (const ir::Op *leafOp : leaves) {
    const ir::Op &leaf = *leafOp;
    auto [rows, cols] = LoweringContext::rowsAndCols(LoweringContext::storedType(leaf.type(), orderOf(leaf)));
    (void)cols;
    auto view = leafView(leaf, rows);
    if (!view)
      return view.takeError();
    ctx.setView(&leaf, std::move(*view));
  }
  for (const auto &owned : fn.ops()) {
    const ir::Op &op = *owned;
    switch (op.kind()) {
    case ir::OpKind::Input:
    case ir::OpKind::Param: {
      bool input = op.kind() == ir::OpKind::Input;
      std::string name = op.stringAttr(input ? "name" : "path").value_or("");
      if (input && received(traffic, name)) {
        // Written by recvs during the run, not by the host. In lockstep
        // its recvs are placed where the program reaches it: until then
        // nothing may read it (an epilogue of an earlier producer).
        if (lockstep) {
          const TensorView &v = ctx.view(&op);
          std::fill(v.storage->ready.begin(), v.storage->ready.end(), kNotWrittenYet);
        }
        break;
      }
      (input ? inputs : params)
          .push_back(placementOf(input ? TensorRole::Input : TensorRole::Param, name, op.type(), ctx.view(&op)));
      // A param that holds a slice of its weight says which (the host
      // writes it that slice of the whole weight).
      if (std::optional<ir::Shard> shard = ir::shardOf(op); shard && !input)
        params.back().shard = {shard->axis, shard->start, shard->full};
      // A state's value when the call starts (docs/generation.md), or its
      // slice on this chip.
      if (input) {
        inputs.back().state = op.boolAttr("state").value_or(false);
        if (std::optional<ir::Shard> shard = ir::shardOf(op); shard && inputs.back().state)
          inputs.back().shard = {shard->axis, shard->start, shard->full};
      }
      break;
    }
    case ir::OpKind::Constant: {
      // A splat: one stored row, every view row maps onto it. Through
      // ctx.constant: a constant is loaded before the run, so it must not
      // take SRAM that a block freed earlier is written in during the run.
      // Stored over whole vectors, every lane the value, so that a value
      // with one column computed from it stays the same in every lane
      // (laneSplat: broadcasting it along the last axis is a view).
      auto [rows, cols] = LoweringContext::rowsAndCols(LoweringContext::storedType(op.type(), orderOf(op)));
      int64_t stored = ctx.vecsPerRow(cols) * chip.lanes;
      auto view = ctx.constant(op, op.type().dtype, 1, stored, splatBytes(op, stored));
      if (!view)
        return view.takeError();
      TensorView v = *view;
      v.rows = rows;
      v.perm = orderOf(op);
      v.cols = cols;
      if (rows != 1)
        v.rowMap.assign(size_t(rows), 0);
      ctx.setView(&op, std::move(v));
      break;
    }
    default:
      if (isGlobalPool(op, layouts))
        if (auto divisor = globalPoolDivisor(op, ctx); !divisor)
          return divisor.takeError();
      break;
    }
  }

  // Values from other chips: each vector written as it arrives.
  if (traffic && !lockstep)
    if (auto e = receiveAll(fn, *traffic, ctx, noteTransfer(false)))
      return e;

  // Attentions lowered as a whole where their scores are: the ops they
  // take in read there. (Matched once the leaves have views: the scale's
  // group is checked, and it reads constants.)
  std::vector<AttentionPlan> attentions = findAttention(fn, ctx, index);
  std::map<const ir::Op *, const AttentionPlan *> absorbedBy;
  for (const AttentionPlan &plan : attentions)
    for (const ir::Op *op : plan.absorbed)
      absorbedBy[op] = &plan;
  // An op inside a fusion group is computed when its group's materialized
  // ops are lowered (later in program order): its reads happen there.
  std::map<const ir::Op *, size_t> readsAt;
  for (auto it = lowering.rbegin(); it != lowering.rend(); ++it) {
    const ir::Op *op = *it;
    size_t at = index[op];
    if (auto a = absorbedBy.find(op); a != absorbedBy.end())
      at = index[a->second->scores];
    else if (!ctx.materialized(op))
      for (const ir::Op *user : ctx.users[op])
        at = std::max(at, readsAt[user]);
    readsAt[op] = at;
  }
  // The storage roots whose last reader is lowered at each op index.
  std::map<const ir::Op *, size_t> lastUse;
  for (const auto &op : fn.ops())
    for (const ir::Op *operand : op->operands()) {
      size_t &last = lastUse[storageRoot(operand)];
      last = std::max(last, readsAt[op.get()]);
    }
  std::map<size_t, std::vector<const ir::Op *>> releaseAfter;
  for (const auto &[root, at] : lastUse)
    releaseAfter[at].push_back(root);

  for (const ir::Op *lowered : lowering) {
    const ir::Op &op = *lowered;
    switch (op.kind()) {
    case ir::OpKind::Input: {
      // Lockstep: a value from another chip, received in its turn once its
      // sender has placed the sends (it has reached this point of the
      // program, or failed).
      if (!lockstep)
        break;
      auto in = llvm::find_if(traffic->incoming, [&](const ChipTraffic::Incoming &i) {
        return op.stringAttr("name") == i.name;
      });
      if (in == traffic->incoming.end())
        break;
      std::optional<LinkTransfer> sent = traffic->mailbox->await(in->id, in->fromChip, traffic->chip);
      if (!sent)
        return abortedBy(*in, traffic->chip);
      ChipTraffic::Incoming arrived = *in;
      arrived.perm = sent->perm;
      arrived.arrivals = sent->arrivals;
      arrived.tailRows = sent->tailRows;
      const std::map<QueueId, size_t> before = queueLengths(schedule);
      if (auto e = receiveOne(op, arrived, traffic->chip, lastRecv, ctx))
        return e;
      if (OpTiming *t = noteOpTiming(schedule, before, op, op, ctx, timed))
        t->receives = in->id;
      break;
    }
    case ir::OpKind::Param:
    case ir::OpKind::Constant:
      break; // placed above
    case ir::OpKind::Transfer: {
      // Lockstep: the value sent where the sender's transfer op is, and the
      // arrivals published for the receiver.
      if (!lockstep)
        return refuse<Refusal::NoLowering>(op);
      auto out = llvm::find_if(traffic->outgoing, [&](const ChipTraffic::Outgoing &o) {
        return op.stringAttr("name") == o.name;
      });
      const ir::Op *value = op.operand(0);
      if (out == traffic->outgoing.end() || !ctx.hasView(value))
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "no value to send for " +
                                           op.stringAttr("name").value_or("a transfer"));
      const std::map<QueueId, size_t> before = queueLengths(schedule);
      TensorView view = ctx.view(value);
      // A view that repeats rows or vectors (a broadcast) is sent from a
      // copy of its own, freed once sent.
      bool copied = false;
      if (!view.rowMap.empty() || view.repeatVector) {
        ctx.storedOrder[&op] = view.perm;
        if (auto e = lowerCopy(op, value->type(), view, ctx))
          return e;
        view = ctx.view(&op);
        copied = true;
      }
      auto sent = sendOne(op, view, *out, traffic->chip, linkFree, ctx);
      if (!sent)
        return sent.takeError();
      if (copied && !view.storage->persistent)
        sram.release(view.storage->block.id, view.storage->lastUse());
      schedule.sent.push_back(*sent);
      const int64_t id = sent->id;
      traffic->mailbox->publish(std::move(*sent));
      if (OpTiming *t = noteOpTiming(schedule, before, op, op, ctx, timed))
        t->sends = id;
      break;
    }
    case ir::OpKind::Return: {
      // Outputs that need a block of their own are copied here.
      const std::map<QueueId, size_t> before = queueLengths(schedule);
      auto noteCopies = llvm::make_scope_exit([&] { noteOpTiming(schedule, before, op, op, ctx, timed); });
      std::vector<std::string> names = op.stringsAttr("names").value_or(std::vector<std::string>{});
      std::set<const ir::Op *> used;
      // Outputs that are a state's value when the call ends.
      const std::vector<std::string> states =
          op.stringsAttr("states").value_or(std::vector<std::string>{});
      auto isState = [&](const std::string &name) { return llvm::is_contained(states, name); };
      const std::vector<std::optional<ir::Shard>> shards = ir::outputShards(op);
      auto mark = [&](size_t i, const std::string &name) {
        outputs.back().state = isState(name);
        if (shards[i])
          outputs.back().shard = {shards[i]->axis, shards[i]->start, shards[i]->full};
      };
      for (size_t i = 0; i < op.operands().size(); ++i) {
        const ir::Op *v = op.operand(i);
        std::string name = i < names.size() ? names[i] : "out" + std::to_string(i);
        const ir::Op *root = storageRoot(v);
        // The program ends once every row of every output is written.
        if (ctx.hasView(v))
          ctx.criticalPath = std::max(ctx.criticalPath, ctx.pathOfRows(*v, ctx.view(v).rows));
        const bool sent = sentBy(traffic, name);
        // A state written in place (or not written) leaves where its input
        // came in: the same storage, no copy.
        if (!sent && isState(name) && root->kind() == ir::OpKind::Input &&
            root->boolAttr("state").value_or(false) && root->stringAttr("name") == name &&
            ctx.hasView(v) && ctx.view(v).rowMap.empty() && !ctx.view(v).repeatVector) {
          outputs.push_back(placementOf(TensorRole::Output, name, v->type(), ctx.view(v)));
          mark(i, name);
          continue;
        }
        if (outputRoots.count(root) && !used.count(root) && ctx.hasView(v) &&
            ctx.view(v).rowMap.empty() && !ctx.view(v).repeatVector) {
          used.insert(root);
          if (sent) {
            sentViews[name] = ctx.view(v);
          } else {
            outputs.push_back(placementOf(TensorRole::Output, name, v->type(), ctx.view(v)));
            mark(i, name);
          }
          continue;
        }
        // An output that is an input, a parameter, a constant, a broadcast
        // or another output's storage: copy it into a block of its own.
        ctx.persistentResult[&op] = true;
        ctx.storedOrder[&op] = ctx.view(v).perm; // the copy keeps the stored order
        if (auto e = lowerCopy(op, v->type(), ctx.view(v), ctx))
          return e;
        TensorView copy = ctx.view(&op);
        if (sent)
          sentViews[name] = copy;
        else {
          outputs.push_back(placementOf(TensorRole::Output, name, v->type(), copy));
          mark(i, name);
        }
      }
      break;
    }
    default: {
      const std::map<QueueId, size_t> before = queueLengths(schedule);
      if (auto a = absorbedBy.find(&op); a != absorbedBy.end()) {
        if (&op == a->second->scores) {
          const AttentionPlan &at = *a->second;
          ctx.decide(op, "attention lowered whole here: " + std::to_string(at.heads) + " heads of " +
                             std::to_string(at.dh) + ", " + std::to_string(at.sq) + " x " +
                             std::to_string(at.sk) + " scores per head and batch");
          sram.wantedBy = firstOperandsReady(op, ctx);
          if (auto e = lowerAttention(*a->second, ctx))
            return e;
          noteOpTiming(schedule, before, op, *a->second->merged, ctx, timed);
        }
        break;
      }
      if (!ctx.materialized(&op) || ctx.hasView(&op))
        break; // computed in its users' trees, or in its producer's (epilogue)
      if (op.kind() == ir::OpKind::Reshape && !ctx.hasView(op.operand(0)))
        break; // between a producer and its epilogue (epilogueInput)
      LoweringFn lower = storedOrderLowering(op, ctx);
      if (!lower)
        lower = loweringFor(op.kind());
      if (!lower)
        return refuse<Refusal::NoLowering>(op);
      sram.wantedBy = firstOperandsReady(op, ctx);
      if (auto e = lowerWithRelayouts(op, lower, layouts, ctx))
        return e;
      // A result written by an epilogue is its root's (asking again
      // lowers nothing: the views it needs exist now).
      const ir::Op *epilogue = ctx.hasView(&op) ? nullptr : epilogueRoot(op, ctx);
      noteOpTiming(schedule, before, op, epilogue ? *epilogue : op, ctx, timed);
      break;
    }
    }
    // Free every block whose last reader this was (in index order, so that
    // allocation stays a function of the program).
    std::vector<const ir::Op *> dead = releaseAfter[index[&op]];
    std::sort(dead.begin(), dead.end(),
              [&](const ir::Op *a, const ir::Op *b) { return index[a] < index[b]; });
    for (const ir::Op *root : dead) {
      if (!ctx.hasView(root))
        continue;
      const TensorView &v = ctx.view(root);
      if (!v.storage->persistent)
        sram.release(v.storage->block.id, v.storage->lastUse());
    }
  }

  // Values for other chips: each vector sent once it is written.
  if (traffic && !lockstep)
    if (auto e = sendAll(fn, *traffic, sentViews, ctx, schedule, noteTransfer(true)))
      return e;

  // Constants the lowerings made (lane masks, divisors).
  for (TensorPlacement &t : ctx.constants) {
    t.name = "const" + std::to_string(consts.size());
    consts.push_back(std::move(t));
  }
  schedule.tensors = inputs;
  schedule.tensors.insert(schedule.tensors.end(), params.begin(), params.end());
  schedule.tensors.insert(schedule.tensors.end(), consts.begin(), consts.end());
  schedule.tensors.insert(schedule.tensors.end(), outputs.begin(), outputs.end());

  // The figures: cycles as the simulator counts them, and the lower bound.
  int64_t last = -1;
  std::vector<int64_t> readsPerSlice(chip.memSlices, 0), writesPerSlice(chip.memSlices, 0);
  // A queue issues one instruction at a time: its issue cycles bound the
  // schedule (an MXM plane's matmul queue, for instance).
  std::map<QueueId, int64_t> queueBusy;
  for (const auto &[q, list] : schedule.queues)
    for (const TimedInstr &t : list) {
      queueBusy[q] += chip.timingOf(t.instr.op, t.instr.dtype).issue;
      last = std::max(last, t.cycle + latencyOf(chip, t.instr));
      if (t.instr.op == Opcode::Read)
        ++readsPerSlice[t.instr.unit];
      if (t.instr.op == Opcode::Write)
        ++writesPerSlice[t.instr.unit];
    }
  schedule.cycles = last + 1;
  schedule.sramBytes = sram.peakBytes();
  schedule.sram = sram.lives(schedule.cycles);
  auto bound = [&](int64_t value, std::string why) {
    if (value > schedule.lowerBound) {
      schedule.lowerBound = value;
      schedule.lowerBoundReason = std::move(why);
    }
  };
  for (unsigned s = 0; s < chip.memSlices; ++s) {
    bound((readsPerSlice[s] + chip.memReadPorts - 1) / chip.memReadPorts,
          "MEM slice " + std::to_string(s) + " reads");
    bound((writesPerSlice[s] + chip.memWritePorts - 1) / chip.memWritePorts,
          "MEM slice " + std::to_string(s) + " writes");
  }
  // MXM work names its plane's queue, so one queue's issue cycles bound
  // the schedule; VXM work may go to any VXM queue, and MEM and SXM work to
  // any queue of its hemisphere: those bound it only pooled.
  std::map<std::pair<UnitKind, bool>, int64_t> pooled;
  for (const auto &[q, busy] : queueBusy) {
    if (q.unit == UnitKind::Mxm || q.unit == UnitKind::C2c)
      bound(busy, "queue " + unitKindName(q.unit).str() + std::to_string(q.index));
    else if (q.unit == UnitKind::Mem || q.unit == UnitKind::Sxm)
      pooled[{q.unit, q.index >= chip.queues[unsigned(q.unit)] / 2}] += busy;
  }
  for (const auto &[side, busy] : pooled) {
    int64_t half = chip.queues[unsigned(side.first)] / 2;
    bound((busy + half - 1) / half, unitKindName(side.first).str() + (side.second ? " east" : " west"));
  }
  unsigned vxmQueues = chip.queues[unsigned(UnitKind::Vxm)];
  bound((schedule.busy[unsigned(UnitKind::Vxm)] + vxmQueues - 1) / vxmQueues, "VXM");
  bound(ctx.criticalPath, "critical path");

  // The plan: the knobs, the heuristics, the storage, and every choice the
  // layouts and lowerings made, in order.
  Plan &plan = schedule.plan;
  plan.parameters = storage == ParamStorage::Rows      ? "rows"
                    : storage == ParamStorage::Packed  ? "packed where it qualifies"
                    : storage == ParamStorage::Striped ? "packed and striped where it qualifies"
                                                       : "packed and striped where it qualifies, largest first";
  for (const PlacementHeuristic &h : placementHeuristicTable())
    if (heuristics.*h.flag)
      plan.heuristics.push_back(h.name.str());
  plan.knobs = knobValues(heuristics, knobs);
  for (auto &[op, what] : ctx.decisions) {
    std::string name(ir::mnemonic(op->kind()));
    if (auto named = op->stringAttr(op->kind() == ir::OpKind::Param ? "path" : "name"))
      name += " '" + *named + "'";
    plan.steps.push_back(PlanStep{std::move(name), op->type().str(), op->loc(), 0, std::move(what)});
  }
  return schedule;
}

llvm::Error refuseImpossibleValues(const ir::Function &fn, const ChipDescription &chip) {
  for (const auto &op : fn.ops()) {
    if (llvm::is_contained(op->type().shape, 0))
      return refuse<Refusal::EmptyValue>(*op, op->type().str());
    // A weight or an input too large gets placement's own account (E0821,
    // E0822: how many chunks, which hemisphere); a computed value is
    // streamed vector by vector first, which could take hours.
    if (op->kind() == ir::OpKind::Param || op->kind() == ir::OpKind::Input)
      continue;
    // Element counts are at most 2^48 (the IR's rule), so bytes fit.
    const int64_t bytes = op->type().numElements() * int64_t(tensor::dtypeSize(op->type().dtype));
    if (bytes > int64_t(chip.sramBytes()))
      return refuse<Refusal::ValueLargerThanSram>(*op, op->type().str(), bytes, int64_t(chip.sramBytes()));
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<ir::Function>> legalizedForScheduling(const ir::Function &declared,
                                                                     const ChipDescription &chip,
                                                                     const TuningKnobs &knobs) {
  if (auto e = refuseImpossibleValues(declared, chip))
    return e;
  // Forms the lowerings take along one axis only, rewritten with layout
  // moves (docs/scheduler.md, "Legalisation"); but a mean over H and W of
  // a channels-last activation, which the global pool takes as it is.
  const LayoutAssignment layouts = assignLayouts(declared, chip, knobs);
  // And an update of a state written in place, which its own lowering
  // takes (lower/Gather.cpp, lowerUpdate).
  return legalize(declared, [&](const ir::Op &op) {
    return isGlobalPool(op, layouts) || updatesInPlace(op, declared, chip.lanes, chip.memVectors);
  });
}

llvm::ArrayRef<PlacementHeuristics> heuristicVariants() {
  static const PlacementHeuristics variants[] = {
      PlacementHeuristics{true, false, false, false, true},
      PlacementHeuristics{false, false, false, false, true},
      PlacementHeuristics{true, true, true, false, true},
      PlacementHeuristics{true, false, false, true, true},
      PlacementHeuristics{true, true, false, false, false, false},
      PlacementHeuristics{true, false, false, true, false, false},
      PlacementHeuristics{true, true, false, false, true, false},
      PlacementHeuristics{true, true, false, false, true, true, true},
      PlacementHeuristics{true, false, false, false, true, true, true},
  };
  return variants;
}

std::vector<PlacementHeuristics> variantsToTry(const PlacementHeuristics &decided,
                                               const PlacementHeuristics &first) {
  auto differs = [&](const PlacementHeuristics &a, const PlacementHeuristics &b) {
    return llvm::any_of(placementHeuristicTable(), [&](const PlacementHeuristic &p) {
      return decided.*p.flag && a.*p.flag != b.*p.flag;
    });
  };
  std::vector<PlacementHeuristics> tried{first}, variants;
  for (const PlacementHeuristics &h : heuristicVariants())
    if (llvm::all_of(tried, [&](const PlacementHeuristics &t) { return differs(h, t); })) {
      tried.push_back(h);
      variants.push_back(h);
    }
  return variants;
}

std::string heuristicSetName(const PlacementHeuristics &h) {
  std::string names;
  for (const PlacementHeuristic &p : placementHeuristicTable())
    if (h.*p.flag)
      names += (names.empty() ? "" : ",") + p.name.str();
  return names.empty() ? std::string("none") : names;
}

std::string storageName(ParamStorage storage) {
  switch (storage) {
  case ParamStorage::Rows: return "rows";
  case ParamStorage::Packed: return "packed";
  case ParamStorage::Striped: return "striped";
  case ParamStorage::StripedBySize: return "striped by size";
  }
  return "?";
}

std::vector<ParamStorage> storageAttempts(ParamPacking packing) {
  // Rows first: reading packed weights costs a second read and lane moves
  // per vector that straddles two. Only a function that does not fit in
  // SRAM that way is scheduled again with its parameters packed, and then
  // striped; the last attempt's error is the one reported.
  switch (packing) {
  case ParamPacking::Never: return {ParamStorage::Rows};
  case ParamPacking::Always: return {ParamStorage::Packed, ParamStorage::Striped, ParamStorage::StripedBySize};
  case ParamPacking::Striped: return {ParamStorage::Striped, ParamStorage::StripedBySize};
  case ParamPacking::Auto: break;
  }
  return {ParamStorage::Rows, ParamStorage::Packed, ParamStorage::Striped, ParamStorage::StripedBySize};
}

llvm::Expected<Schedule> scheduleFunction(const ir::Function &declared, const ChipDescription &chip,
                                          const ScheduleOptions &options,
                                          const ChipTraffic *traffic) {
  auto legal = legalizedForScheduling(declared, chip, options.knobs);
  if (!legal)
    return legal.takeError();
  const ir::Function &fn = *legal ? **legal : declared;
  const std::vector<ParamStorage> attempts = storageAttempts(options.packing);
  for (size_t i = 0;; ++i) {
    // An attempt that packs nothing fails as rows did: no further one.
    bool packedAny = false;
    const PlacementHeuristics first = options.heuristics.value_or(PlacementHeuristics{});
    PlacementHeuristics decided;
    // Reported as variant 1; its time on this thread's CPU clock, as the
    // others' on theirs.
    const std::string attempt = i ? " (" + storageName(attempts[i]) + ")" : "";
    options.progress.status("variant 1" + attempt);
    support::TimedScope firstTimed(options.timing,
                                   "variant 1" + attempt + ": " + heuristicSetName(first),
                                   support::CpuClock::Thread);
    auto schedule = scheduleOnce(fn, chip, attempts[i], packedAny, first, decided, traffic, options.knobs);
    firstTimed.stop();
    if (schedule) {
      // The other sets of heuristics, with the storage that fits: the
      // fewest cycles win, the default on a tie (docs/scheduler.md,
      // "Variants"). A set that differs from the default, or from a set
      // tried before it, only in choices that never came up is the same
      // schedule (variantsToTry); one that fails is passed over. The sets
      // are independent schedules of one function: they run on
      // `options.threads` threads (one per core by default), and the
      // fewest cycles win in the sets' order whatever order they finish
      // in, so the program is the same for any count.
      std::vector<std::pair<std::string, int64_t>> tried{{heuristicSetName(first), schedule->cycles}};
      if (!options.tune || options.heuristics) {
        schedule->plan.tried = std::move(tried);
        return schedule;
      }
      const std::vector<PlacementHeuristics> variants = variantsToTry(decided, first);
      std::vector<std::optional<llvm::Expected<Schedule>>> others(variants.size());
      // The rows in the sets' order, whatever order the threads take them.
      std::vector<support::Timing> rows;
      for (size_t k = 0; k < variants.size(); ++k)
        rows.push_back(options.timing.add("variant " + llvm::Twine(k + 2) + attempt + ": " +
                                          heuristicSetName(variants[k])));
      std::atomic<size_t> next{0};
      auto work = [&] {
        for (size_t k = next++; k < variants.size(); k = next++) {
          options.progress.status("variant " + llvm::Twine(k + 2) + " of " +
                                  llvm::Twine(variants.size() + 1) + attempt);
          support::TimedScope timed(rows[k], support::CpuClock::Thread);
          bool packed = false;
          PlacementHeuristics unused;
          others[k].emplace(
              scheduleOnce(fn, chip, attempts[i], packed, variants[k], unused, traffic, options.knobs));
        }
      };
      const unsigned threads =
          options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
      const size_t workers = std::min<size_t>(variants.size(), threads);
      std::vector<std::thread> pool;
      for (size_t w = 1; w < workers; ++w)
        pool.emplace_back(work);
      work();
      for (std::thread &t : pool)
        t.join();
      for (size_t k = 0; k < others.size(); ++k) {
        std::optional<llvm::Expected<Schedule>> &other = others[k];
        tried.push_back({heuristicSetName(variants[k]), *other ? (*other)->cycles : -1});
        if (!*other)
          llvm::consumeError(other->takeError());
        else if ((*other)->cycles < schedule->cycles)
          schedule = std::move(**other);
      }
      schedule->plan.tried = std::move(tried);
      return schedule;
    }
    if (i + 1 == attempts.size() || (attempts[i] == ParamStorage::Packed && !packedAny))
      return schedule;
    llvm::Error err = schedule.takeError();
    if (!takeDoesNotFit(err))
      return err;
  }
}

llvm::ArrayRef<PlacementHeuristic> placementHeuristicTable() {
  static const PlacementHeuristic table[] = {
      {"epilogues-through-reshapes", &PlacementHeuristics::epilogueThroughReshapes,
       "epilogues read a producer's value through the reshapes after it that keep its rows"},
      {"scores-off-scale", &PlacementHeuristics::scoresOffScale,
       "attention's scores stay off the slices of the scale's constants"},
      {"halved-partials", &PlacementHeuristics::halvedPartials,
       "a fold across lanes of many rows keeps odd rows' partials in a second slice group"},
      {"squares-on-mxm", &PlacementHeuristics::squaresOnMxm,
       "a layer norm's sum of squares runs on the MXM, each term as two f16"},
      {"weights-by-k-tile", &PlacementHeuristics::weightsByKTile,
       "a matmul's (or channels-last convolution's) weights cut over planes are stored a K-tile "
       "to a chunk of slices, and weights that planes read whole side by side in "
       "wavefront-chunks chunks a plane"},
      {"balanced-k-ranges", &PlacementHeuristics::balancedKRanges,
       "a matmul job with few rows cut over planes by K takes ranges of equal rows, not whole "
       "K-tiles, where that shortens the longest plane's work"},
      {"earliest-planes", &PlacementHeuristics::earliestPlanes,
       "a matmul's K-tiles go, job by job, to the planes that would finish them first, where "
       "that is estimated to end sooner than the planes in turn"},
  };
  return table;
}

llvm::ArrayRef<Knob> knobTable() {
  static const std::vector<Knob> table = [] {
    const PlacementHeuristics defaults;
    std::vector<Knob> out;
    for (const PlacementHeuristic &h : placementHeuristicTable())
      out.push_back(Knob{h.name, h.meaning, h.flag, nullptr, (defaults.*h.flag) ? 1 : 0, 0, 1});
#define LPU_KNOB(member, name, dflt, min, max, meaning)                                            \
  out.push_back(Knob{name, meaning, nullptr, &TuningKnobs::member, dflt, min, max});
#include "scheduler/Knobs.def"
#undef LPU_KNOB
    return out;
  }();
  return table;
}

llvm::Error setKnob(llvm::StringRef spec, TuningKnobs &knobs) {
  auto [name, value] = spec.split('=');
  auto fail = [](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), why.str());
  };
  if (!spec.contains('='))
    return fail("--knob wants NAME=VALUE, not '" + spec + "'");
  for (const Knob &k : knobTable()) {
    if (k.name != name)
      continue;
    if (k.flag)
      return fail("'" + name + "' is a placement heuristic: --heuristics sets those");
    int64_t v = 0;
    if (value.getAsInteger(10, v) || v < k.min || v > k.max)
      return fail("knob '" + name + "' takes a whole number from " + llvm::Twine(k.min) + " to " +
                  llvm::Twine(k.max) + ", not '" + value + "'");
    knobs.*k.number = v;
    return llvm::Error::success();
  }
  std::string list;
  for (const Knob &k : knobTable())
    if (k.number)
      list += (list.empty() ? "" : ", ") + k.name.str();
  return fail("unknown knob '" + name + "' (known: " + list + ")");
}

std::vector<std::string> knobValues(const PlacementHeuristics &heuristics, const TuningKnobs &knobs) {
  std::vector<std::string> out;
  for (const Knob &k : knobTable())
    out.push_back(k.name.str() + "=" +
                  (k.flag ? std::string(heuristics.*k.flag ? "on" : "off")
                          : std::to_string(knobs.*k.number)));
  return out;
}

llvm::Expected<PlacementHeuristics> parsePlacementHeuristics(llvm::ArrayRef<std::string> names) {
  PlacementHeuristics h;
  for (const PlacementHeuristic &p : placementHeuristicTable())
    h.*p.flag = false;
  for (const std::string &name : names) {
    if (name == "none")
      continue;
    const PlacementHeuristic *known = nullptr;
    for (const PlacementHeuristic &p : placementHeuristicTable())
      if (p.name == name)
        known = &p;
    if (!known) {
      std::string list = "none";
      for (const PlacementHeuristic &p : placementHeuristicTable())
        list += ", " + p.name.str();
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "unknown placement heuristic '" + name + "' (known: " +
                                         list + ")");
    }
    h.*known->flag = true;
  }
  return h;
}


llvm::Expected<Program> compileModule(const ir::Module &module, const ChipDescription &chip,
                                       std::vector<Schedule> *schedules,
                                       const ScheduleOptions &options,
                                       std::vector<std::optional<Schedule>> *known) {
  Program program;
  program.chipName = chip.name;
  program.chipFingerprint = chip.fingerprint();
  auto topology = Topology::parse(options.topology, chip.c2cLinks);
  if (!topology)
    return topology.takeError();
  program.topology = options.topology;
  program.numChips = topology->numChips();
  for (size_t i = 0; i < module.functions.size(); ++i) {
    const auto &fn = module.functions[i];
    llvm::Expected<Schedule> schedule = Schedule{};
    if (known && i < known->size() && (*known)[i]) {
      *schedule = std::move(*(*known)[i]);
    } else {
      const std::string title = bucketTitle(*fn);
      options.progress.status(title + " (" + llvm::Twine(i + 1) + " of " +
                              llvm::Twine(module.functions.size()) + ")");
      support::TimedScope timed(options.timing, title);
      ScheduleOptions inner = options;
      inner.progress = options.progress.inner();
      inner.timing = timed.timing();
      schedule = isPartitioned(*fn) ? scheduleMultiChip(*fn, chip, inner)
                                    : scheduleFunction(*fn, chip, inner);
    }
    if (!schedule)
      return schedule.takeError();
    schedule->physical = physicalBound(*fn, chip, &*topology);
    schedule->topology = options.topology;
    schedule->topologyChips = topology->numChips();
    std::vector<BucketDim> dims;
    for (const auto &[name, value] : fn->bucket())
      dims.push_back({name, value});
    auto bucket = encodeBucket(*schedule, chip, std::move(dims));
    if (!bucket)
      return bucket.takeError();
    if (program.entries.empty() || program.entries.back().name != fn->name())
      program.entries.push_back(Entry{fn->name(), {}});
    program.entries.back().buckets.push_back(std::move(*bucket));
    // The program holds the instructions now; the report needs only the
    // figures (a Llama-2-13B's are gigabytes), its timeline them too.
    if (!options.keepInstructions)
      schedule->queues.clear();
    if (schedules)
      schedules->push_back(std::move(*schedule));
  }
  for (Entry &entry : program.entries) {
    backend::SourceDims source;
    for (const auto &fn : module.functions)
      if (fn->name() == entry.name) {
        ir::SourceBucketDims dims = ir::sourceBucketDims(*fn);
        source.inputs.merge(dims.inputs);
        source.outputs.merge(dims.outputs);
      }
    backend::nameBucketDims(entry, source);
  }
  return program;
}

std::string bucketTitle(const ir::Function &fn) {
  std::string title = fn.name();
  for (const auto &[name, value] : fn.bucket())
    title += " " + name + "=" + std::to_string(value);
  return title;
}

} // namespace lpu::scheduler
