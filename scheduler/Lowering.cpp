#include "scheduler/Lowering.h"

#include <llvm/ADT/STLExtras.h>

#include "scheduler/Error.h"

#include <llvm/ADT/ScopeExit.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <limits>

namespace lpu::scheduler {

// A view addresses its storage's vectors in order (storage row * the view's
// vectors per row + vec), which a reshape keeping whole vectors regroups:
// the chunk is found from that flat vector index.
uint32_t TensorView::address(int64_t row, int64_t vec) const {
  int64_t flat = storageRow(row) * storedVecs() + storedVec(vec);
  if (storage->chunkRows)
    flat %= storage->chunkRows * storage->vecsPerRow;
  return uint32_t(storage->block.addr + flat);
}

int64_t TensorView::chunkOf(int64_t row) const {
  if (!storage->chunkRows)
    return 0;
  return storageRow(row) * storedVecs() / (storage->chunkRows * storage->vecsPerRow);
}

const std::vector<uint16_t> &TensorView::slices(int64_t row) const {
  return storage->chunkSlices[size_t(chunkOf(row))];
}

const std::vector<uint16_t> &TensorView::allSlices() const { return storage->block.slices; }

bool TensorView::chunked() const { return storage->chunkSlices.size() > 1; }

bool TensorView::pending() const {
  return llvm::is_contained(storage->ready, kNotWrittenYet);
}

int64_t TensorView::chunkRows() const {
  return storage->chunkRows ? storage->chunkRows * storage->vecsPerRow / storedVecs() : 0;
}

int64_t TensorView::readyAt(int64_t row, int64_t vec) const {
  if (storage->packed) {
    // The stored vectors the segment covers, numbered by flat element
    // (chunks end on vectors).
    const int64_t lanes = storage->lanes;
    int64_t flat = storageRow(row) * cols + vec * lanes;
    int64_t first = flat / lanes;
    int64_t last = std::min<int64_t>((flat + std::min(lanes, cols - vec * lanes) - 1) / lanes,
                                     int64_t(storage->ready.size()) - 1);
    int64_t ready = 0;
    for (int64_t v = first; v <= last; ++v)
      ready = std::max(ready, storage->ready[size_t(v)]);
    return ready;
  }
  return storage->ready[size_t(storageRow(row) * storedVecs() + storedVec(vec))];
}

bool TensorView::packed() const { return storage && storage->packed; }

TensorView::PackedSegment TensorView::segment(int64_t row, int64_t vec, unsigned lanes) const {
  int64_t r = storageRow(row);
  int64_t inChunk = storage->chunkRows > 0 ? r % storage->chunkRows : r;
  int64_t flat = inChunk * cols + vec * int64_t(lanes);
  PackedSegment s;
  s.addr = uint32_t(storage->block.addr + flat / lanes);
  s.lane = unsigned(flat % lanes);
  s.valid = unsigned(std::min<int64_t>(lanes, cols - vec * int64_t(lanes)));
  s.straddles = s.lane + s.valid > lanes;
  return s;
}

llvm::Expected<std::shared_ptr<Storage>>
LoweringContext::allocateStorage(ir::DType dtype, int64_t rows, int64_t cols, SramOwner owner,
                                 int64_t align, const SramAllocator::Accept &accept, bool packed,
                                 int64_t minChunks, bool acrossHemispheres) {
  const int64_t vpr = vecsPerRow(cols), slice = chip_.memVectors, lanes = chip_.lanes;
  const unsigned width = tensor::dtypeSize(dtype);
  // Packed chunks start on a vector: their rows are a multiple of `unit`
  // (lanes / gcd(cols, lanes)), so that a row starts at lane (row * cols) %
  // lanes in every chunk. A tensor whose rows that makes impossible (a
  // unit of rows longer than a slice while it needs chunks) keeps rows.
  const int64_t unit = lanes / std::gcd(cols, lanes);
  const int64_t rowsPerSliceRows = vpr > 0 ? slice / vpr : 0;
  if (packed && rows * cols > slice * lanes && unit * cols > slice * lanes)
    packed = false;
  if (packed && cols % lanes == 0)
    packed = false; // no padding to save: rows is the same bytes, simpler reads
  const int64_t rowsPerSlice = packed ? slice * lanes / cols : rowsPerSliceRows;
  auto vectorsOf = [&](int64_t chunkRows) {
    return packed ? (chunkRows * cols + lanes - 1) / lanes : chunkRows * vpr;
  };
  if (packed)
    align = std::lcm(std::max<int64_t>(align, 1), unit);
  // `want` chunks of nearly equal rows (so that each leaves room in its
  // slices), a whole number of `align` rows each when that fits a slice.
  int64_t chunkRows = 0, chunks = 1;
  // Packed chunks never go below `unit` (an `align` longer than a slice is
  // dropped to it; rows keep their old rule).
  const int64_t minAlign = packed ? unit : 1;
  auto split = [&](int64_t want) {
    const int64_t a = packed && align > rowsPerSlice ? minAlign : std::max<int64_t>(align, 1);
    chunkRows = (rows + want - 1) / want;
    if (a > 1 && a <= rowsPerSlice)
      chunkRows = (chunkRows + a - 1) / a * a;
    if (chunkRows > rowsPerSlice)
      chunkRows = std::max<int64_t>(1, rowsPerSlice / a * a);
    if (packed && chunkRows > rows)
      chunkRows = rows; // one chunk: its vectors, not those of `a` rows
    chunks = (rows + chunkRows - 1) / chunkRows;
  };
  // The fewest chunks that fit a slice. A single row longer than a slice
  // cannot be chunked: the allocator says so.
  const bool rowTooLong = rowsPerSlice == 0;
  split(rowTooLong ? 1 : std::max((rows + rowsPerSlice - 1) / rowsPerSlice, minChunks));
  if (rowTooLong)
    chunkRows = rows, chunks = 1;
  // Past a hemisphere's slices the allocator refuses; keep the count sane.
  chunks = std::min<int64_t>(chunks, int64_t(1) << 30);
  auto block = sram_.allocate(width, uint32_t(std::min<int64_t>(vectorsOf(chunkRows), UINT32_MAX)),
                              owner, unsigned(chunks), accept);
  // No slice group has that much room at once: SRAM may still have it in
  // pieces, at the same addresses of more slice groups. Cut the tensor into
  // more, shorter chunks until it fits (the first error stands if none does).
  // Chunks of whole `align` rows are tried first; when none fits, the
  // alignment is dropped (it only lets a gather read an id's rows from one
  // chunk, and a gather refuses a table whose chunks split them), since
  // with `align` rows close to a slice no shorter chunk would be tried.
  // Packed chunks keep their `unit` of rows.
  const int64_t groups = chip_.memSlices / 2 / width;
  const bool aligned = align > minAlign;
  // The chunks split() chose, again (the first error stands if none fits).
  auto retry = [&] {
    auto again = sram_.allocate(width, uint32_t(vectorsOf(chunkRows)), owner, unsigned(chunks), accept);
    if (again) {
      llvm::consumeError(block.takeError());
      block = std::move(again);
    } else {
      llvm::consumeError(again.takeError());
    }
  };
  for (int pass = 0; pass < (aligned ? 2 : 1) && !block && !rowTooLong; ++pass) {
    if (pass == 1)
      align = minAlign;
    for (int64_t want = pass == 1 ? 2 : chunks + 1; !block && want <= std::min(groups, rows); ++want) {
      int64_t before = chunkRows;
      split(want);
      if (chunkRows != before)
        retry();
    }
  }
  // A stripe that finds no layer that wide: fewer, taller chunks.
  const int64_t fewest = rowTooLong ? 1 : (rows + rowsPerSlice - 1) / rowsPerSlice;
  for (int64_t want = minChunks - 1; !block && want >= std::max<int64_t>(fewest, 2); --want) {
    split(want);
    retry();
  }
  // A stripe no hemisphere holds: one across both, as many chunks as
  // both have slice groups, then fewer, taller ones.
  if (!block && acrossHemispheres && !rowTooLong) {
    sram_.acrossHemispheres = true;
    for (int64_t want = 2 * groups; !block && want > groups; --want) {
      int64_t before = chunkRows;
      split(want);
      if (chunkRows != before || want == 2 * groups)
        retry();
    }
    sram_.acrossHemispheres = false;
  }
  if (!block)
    return block.takeError();
  if (chunks == 1)
    chunkRows = 0;
  auto storage = std::make_shared<Storage>();
  storage->block = *block;
  storage->vecsPerRow = vpr;
  storage->chunkRows = chunkRows;
  storage->packed = packed;
  storage->lanes = lanes;
  for (int64_t j = 0; j < chunks; ++j)
    storage->chunkSlices.emplace_back(block->slices.begin() + j * width,
                                      block->slices.begin() + (j + 1) * width);
  // Packed: every chunk but the last holds chunkRows * cols / lanes
  // vectors exactly, so the stored vectors are numbered by flat element.
  const int64_t stored = packed ? (rows * cols + lanes - 1) / lanes : rows * vpr;
  storage->ready.assign(size_t(stored), std::numeric_limits<int64_t>::max() / 4);
  return storage;
}

TensorView LoweringContext::viewOf(std::shared_ptr<Storage> storage, ir::DType dtype, int64_t rows,
                                   int64_t cols) {
  TensorView view;
  view.vecsPerRow = storage->vecsPerRow;
  view.storage = std::move(storage);
  view.dtype = dtype;
  view.rows = rows;
  view.cols = cols;
  return view;
}

std::pair<int64_t, int64_t> LoweringContext::rowsAndCols(const ir::Type &type) {
  if (type.shape.empty())
    return {1, 1};
  int64_t cols = type.shape.back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < type.shape.size(); ++i)
    rows *= type.shape[i];
  return {rows, cols};
}

bool LoweringContext::widenedOnRead(const ir::Op *op) const {
  if (op->kind() != ir::OpKind::Convert || op->type().dtype != ir::DType::F32 ||
      op->operand(0)->type().dtype != ir::DType::F16 || returned.count(op))
    return false;
  auto it = users.find(op);
  if (it == users.end() || it->second.empty())
    return false;
  const int64_t rank = int64_t(op->type().shape.size());
  for (const ir::Op *u : it->second) {
    const ir::OpKind k = u->kind();
    // A matmul takes f16 widened as the f16 it is (one piece).
    if (ir::isElementwise(k) || k == ir::OpKind::Matmul)
      continue;
    if (k != ir::OpKind::ReduceSum && k != ir::OpKind::ReduceMean && k != ir::OpKind::ReduceMax &&
        k != ir::OpKind::ReduceMin)
      return false;
    // Over the last axis alone, or over leading axes only (whose leaves
    // widen too: a float sum over several axes, legalised, sums leading
    // ones first); not a global pool over [2, 3], which reads its operand
    // in a stored order of its own.
    std::vector<int64_t> axes = u->intsAttr("axes").value_or(std::vector<int64_t>{});
    auto last = [&](int64_t a) { return (a + rank) % std::max<int64_t>(rank, 1) == rank - 1; };
    const bool lastOnly = axes.size() == 1 && last(axes[0]);
    const bool leadOnly = !axes.empty() && std::none_of(axes.begin(), axes.end(), last) &&
                          !storedOrder.count(op) && !storedOrder.count(op->operand(0));
    if (!lastOnly && !leadOnly)
      return false;
  }
  return true;
}

bool LoweringContext::weightPrologue(const ir::Op *op) const {
  if (!ir::isElementwise(op->kind()) || returned.count(op) || op->type().dtype != ir::DType::F16 ||
      op->type().shape.size() != 2)
    return false;
  auto it = users.find(op);
  if (it == users.end() || it->second.empty())
    return false;
  for (const ir::Op *u : it->second)
    if (u->kind() != ir::OpKind::Matmul || u->operand(0) == op || u->type().shape.size() != 2 ||
        u->operand(0)->type().dtype != ir::DType::F16)
      return false;
  // The group's ops each feed one other op of it; its leaves are values
  // stored before the matmul (a per-column scale and zero point broadcast
  // over the rows, constants), among them an i8 parameter of the weights'
  // shape.
  bool int8 = false, tree = true;
  std::function<void(const ir::Op &)> walk = [&](const ir::Op &x) {
    for (const ir::Op *operand : x.operands()) {
      if (ir::isElementwise(operand->kind()) && operand->fusionGroup() &&
          operand->fusionGroup() == op->fusionGroup()) {
        auto ou = users.find(operand);
        tree &= ou != users.end() && ou->second.size() == 1;
        walk(*operand);
      } else {
        int8 |= operand->kind() == ir::OpKind::Param && operand->type().dtype == ir::DType::I8 &&
                operand->type().shape == op->type().shape;
      }
    }
  };
  walk(*op);
  return tree && int8;
}

bool LoweringContext::materialized(const ir::Op *op) const {
  if (!ir::isElementwise(op->kind()))
    return true;
  if (widenedOnRead(op))
    return false;
  if (weightPrologue(op))
    return false;
  // What a widening convert reads on every use is stored itself.
  if (auto it = users.find(op); it != users.end())
    for (const ir::Op *u : it->second)
      if (widenedOnRead(u))
        return true;
  auto group = op->fusionGroup();
  if (!group || returned.count(op))
    return true;
  auto it = users.find(op);
  if (it == users.end())
    return true;
  for (const ir::Op *u : it->second)
    if (u->fusionGroup() != group)
      return true;
  // Inside its group, each use builds the op's whole tree again. That is
  // cheap for a small tree, but a chain of values used twice (h = h * h + x
  // in a loop) doubles at every step: past a few nodes a value with several
  // uses goes to SRAM once instead.
  int64_t uses = 0;
  for (const ir::Op *u : it->second)
    for (const ir::Op *operand : u->operands())
      uses += operand == op;
  return uses > 1 && inlineNodes(op) > knobs.maxRecomputedNodes;
}

int64_t LoweringContext::inlineNodes(const ir::Op *op) const {
  if (auto it = inlineNodes_.find(op); it != inlineNodes_.end())
    return it->second;
  int64_t nodes = 1;
  for (const ir::Op *operand : op->operands())
    nodes += materialized(operand) ? 1 : inlineNodes(operand);
  inlineNodes_[op] = nodes;
  return nodes;
}

ir::Type LoweringContext::storedType(const ir::Type &type, const std::vector<uint8_t> &perm) {
  if (perm.empty())
    return type;
  ir::Type out = type;
  for (size_t i = 0; i < perm.size(); ++i)
    out.shape[i] = type.shape[perm[i]];
  return out;
}

int64_t RowDeal::chunkOf(int64_t r) const { return (r % width + skew * (r / width)) % chunks; }

int64_t RowDeal::storedRows(int64_t rows) const {
  std::vector<int64_t> count(size_t(chunks), 0);
  for (int64_t r = 0; r < rows; ++r)
    ++count[size_t(chunkOf(r))];
  return chunks * *std::max_element(count.begin(), count.end());
}

bool dealRows(TensorView &view, const RowDeal &deal) {
  const int64_t chunks = int64_t(view.storage->chunkSlices.size()), chunkRows = view.storage->chunkRows;
  if (chunks != deal.chunks || chunkRows * chunks != deal.storedRows(view.rows) || !view.rowMap.empty())
    return false;
  std::vector<int64_t> next(size_t(chunks), 0);
  view.rowMap.resize(size_t(view.rows));
  for (int64_t r = 0; r < view.rows; ++r) {
    const int64_t c = deal.chunkOf(r);
    view.rowMap[size_t(r)] = c * chunkRows + next[size_t(c)]++;
  }
  return true;
}

llvm::Expected<std::optional<TensorView>> stageWindowInput(const ir::Op &op, LoweringContext &ctx,
                                                           const TensorView &X, int64_t reads,
                                                           RowDeal deal) {
  if (!deal.on() || !X.rowMap.empty() || X.packed() || X.repeatVector || X.pending() ||
      X.rows < 2 * deal.chunks || reads < 2 * X.rows ||
      int64_t(X.storage->chunkSlices.size()) >= deal.chunks)
    return std::nullopt;
  const int64_t padded = deal.storedRows(X.rows);
  auto staged = ctx.scratch(op, X.dtype, padded, X.cols, X.allSlices(), 1, deal.chunks);
  if (!staged)
    return staged.takeError();
  TensorView S = std::move(*staged);
  S.rows = X.rows;
  S.perm = X.perm;
  if (!dealRows(S, deal)) {
    ctx.releaseScratch(S);
    return std::nullopt;
  }
  int64_t prev = 0;
  for (int64_t r = 0; r < X.rows; ++r)
    for (int64_t v = 0; v < X.vecsPerRow; ++v) {
      WorkTree tree;
      tree.write(S.slices(r), S.address(r, v), -1);
      // Through a VXM copy of the bits (a read's stream meets the write
      // there, whichever side of the chip the two slices are on).
      backend::Instr copy;
      copy.op = backend::Opcode::Copy;
      copy.dtype = bitsType(X.dtype);
      tree.nodes[0].inputs = {tree.add(copy, {tree.read(X.slices(r), X.address(r, v))})};
      auto placed = ctx.placer().place(std::move(tree), std::max(prev, X.readyAt(r, v)));
      if (!placed)
        return cannotPlace(op, ctx);
      prev = placed->firstCycle;
      ctx.written(S, r, v, placed->doneCycle - 1);
      ctx.read(X, placed->doneCycle);
    }
  ctx.decide(op, "input copied with its rows dealt over " + std::to_string(deal.chunks) +
                     " chunks of slices, for the window's reads");
  return std::optional<TensorView>(std::move(S));
}

RowDeal windowDeal(const ir::Op &window, const TuningKnobs &knobs) {
  RowDeal deal;
  const std::vector<int64_t> &xs = window.operand(0)->type().shape;
  if (knobs.windowInterleave < 2 || xs.size() != 4)
    return deal;
  int64_t kernelWidth = 1, area = 1;
  if (window.kind() == ir::OpKind::MaxPool2d || window.kind() == ir::OpKind::AvgPool2d) {
    const std::optional<std::vector<int64_t>> kernel = window.intsAttr("kernel");
    if (!kernel || kernel->size() != 2)
      return deal;
    kernelWidth = (*kernel)[1], area = (*kernel)[0] * (*kernel)[1];
  } else if (window.kind() == ir::OpKind::Conv2d) {
    const std::vector<int64_t> &ws = window.operand(1)->type().shape;
    if (ws.size() != 4)
      return deal;
    const std::optional<std::vector<int64_t>> dilation = window.intsAttr("dilation");
    kernelWidth = ws[3] * (dilation && dilation->size() == 2 ? (*dilation)[1] : 1), area = ws[2] * ws[3];
  } else {
    return deal;
  }
  if (area < 2)
    return deal;
  deal.chunks = knobs.windowInterleave;
  deal.width = xs[3];
  deal.skew = kernelWidth;
  return deal;
}

RowDeal LoweringContext::windowInterleave(const ir::Op &value, bool channelsLast) const {
  if (returned.count(&value) || persistentResult.count(&value))
    return {};
  auto it = users.find(&value);
  if (it == users.end() || it->second.empty())
    return {};
  RowDeal deal;
  for (const ir::Op *user : it->second) {
    if (user->operand(0) != &value ||
        llvm::is_contained(llvm::drop_begin(user->operands()), &value))
      return {};
    RowDeal mine = windowDeal(*user, knobs);
    // A channels-last window reads this storage only if it is channels-last
    // (else a copy). In the declared order (the rows layout) a pool reads
    // consecutive rows of W pixels: rows dealt in turn.
    if (storedOrder.count(user) != size_t(channelsLast))
      return {};
    if (!channelsLast) {
      if (user->kind() != ir::OpKind::MaxPool2d && user->kind() != ir::OpKind::AvgPool2d)
        return {};
      mine.width = 1, mine.skew = 1;
    }
    if (!mine.on() || (deal.on() && (mine.width != deal.width || mine.skew != deal.skew)))
      return {};
    deal = mine;
  }
  return deal;
}

llvm::Expected<TensorView *> LoweringContext::define(const ir::Op *op, const ir::Type &type,
                                                     RowDeal deal) {
  auto order = storedOrder.find(op);
  const std::vector<uint8_t> perm = order == storedOrder.end() ? std::vector<uint8_t>{} : order->second;
  const ir::Type stored = storedType(type, perm);
  auto [rows, cols] = rowsAndCols(stored);
  std::string what = std::string(ir::mnemonic(op->kind())) + " result " + type.str();
  if (deal.on() && rows >= 2 * deal.chunks && !striped) {
    // Rows dealt over chunks (dealRows), which the allocator cuts into
    // chunks of equal rows (the storage's rows past a chunk's last are
    // padding no row maps to). Cut otherwise (no room for such chunks),
    // the rows stay in order.
    auto storage = allocateStorage(type.dtype, deal.storedRows(rows), cols, SramOwner{what, op->loc()}, 1,
                                   SramAllocator::Accept{}, false, deal.chunks);
    if (!storage)
      return storage.takeError();
    (*storage)->persistent = persistentResult.count(op) > 0;
    views_[op] = viewOf(std::move(*storage), type.dtype, rows, cols);
    views_[op].perm = perm;
    if (dealRows(views_[op], deal))
      decide(*op, "rows dealt over " + std::to_string(deal.chunks) +
                      " chunks of slices, for the windows that read it");
    return &views_[op];
  }
  // Rows per leading index stay in one chunk (a gather reads them together).
  int64_t align = stored.shape.size() >= 2 && stored.shape[0] > 0 ? rows / stored.shape[0] : 1;
  // Striped, the alignment gives way when it is longer than a stripe's
  // chunk (a gather reading the value refuses it then).
  const int64_t stripe = stripeChunks(type.dtype, rows * vecsPerRow(cols));
  if (stripe > 1 && align > (rows + stripe - 1) / stripe)
    align = 1;
  auto storage = allocateStorage(type.dtype, rows, cols, SramOwner{what, op->loc()}, align,
                                 striped ? offMapSlices() : SramAllocator::Accept{}, false, stripe);
  if (!storage)
    return storage.takeError();
  (*storage)->persistent = persistentResult.count(op) > 0;
  views_[op] = viewOf(std::move(*storage), type.dtype, rows, cols);
  views_[op].perm = perm;
  return &views_[op];
}

void LoweringContext::written(const TensorView &view, int64_t row, int64_t vec, int64_t cycle) {
  view.storage->ready[size_t(view.storageRow(row) * view.storedVecs() + view.storedVec(vec))] = cycle + 1;
  view.storage->lastWrite = std::max(view.storage->lastWrite, cycle);
}

void LoweringContext::read(const TensorView &view, int64_t cycle) {
  view.storage->lastRead = std::max(view.storage->lastRead, cycle);
}

llvm::Expected<TensorView> LoweringContext::scratch(const ir::Op &op, ir::DType dtype, int64_t rows,
                                                   int64_t cols, const std::vector<uint16_t> &avoid,
                                                   int64_t align, int64_t chunks) {
  std::string what = std::string(ir::mnemonic(op.kind())) + " intermediate";
  // Striped, into as many chunks as keep whole runs of `align` rows.
  const int64_t stripe =
      std::min(std::max(chunks, stripeChunks(dtype, rows * vecsPerRow(cols))),
               std::max<int64_t>(1, rows / std::max<int64_t>(align, 1)));
  auto shares = [&](const SramBlock &b) {
    for (uint16_t s : b.slices)
      if (std::find(avoid.begin(), avoid.end(), s) != avoid.end())
        return true;
    return false;
  };
  // Blocks in avoided slices are held while the allocator moves on, then
  // given back as they were; past a round of every slice, settle.
  std::vector<SramBlock> skipped;
  auto giveBack = [&] {
    for (const SramBlock &b : skipped)
      sram_.release(b.id, b.writableFrom - 1);
  };
  const SramAllocator::Accept offMaps = striped ? offMapSlices() : SramAllocator::Accept{};
  for (int attempt = 0;; ++attempt) {
    auto storage = allocateStorage(dtype, rows, cols, SramOwner{what, op.loc()}, align, offMaps, false, stripe);
    if (!storage && !skipped.empty()) {
      // The space off the avoided slices ran out while the held blocks
      // took the rest: give them back and settle for one of them (the
      // placer then serialises the reads that share a port).
      llvm::consumeError(storage.takeError());
      giveBack();
      skipped.clear();
      storage = allocateStorage(dtype, rows, cols, SramOwner{what, op.loc()}, align, offMaps, false, stripe);
      if (storage)
        return viewOf(std::move(*storage), dtype, rows, cols);
    }
    if (!storage) {
      giveBack();
      return storage.takeError();
    }
    if (!shares((*storage)->block) || attempt >= int(chip_.memSlices)) {
      giveBack();
      return viewOf(std::move(*storage), dtype, rows, cols);
    }
    skipped.push_back((*storage)->block);
  }
}

SramAllocator::Accept LoweringContext::offMapSlices() const {
  const unsigned half = chip_.memSlices / 2;
  const int64_t kept = knobs.mapSlices;
  return [half, kept](const std::vector<uint16_t> &slices, int64_t) {
    for (uint16_t s : slices)
      if (int64_t(s % half) >= int64_t(half) - kept)
        return false;
    return true;
  };
}

void LoweringContext::releaseScratch(const TensorView &view) {
  sram_.release(view.storage->block.id, view.storage->lastUse());
}

llvm::Expected<TensorView> LoweringContext::constant(const ir::Op &op, ir::DType dtype, int64_t rows,
                                                     int64_t cols, std::vector<uint8_t> data,
                                                     const std::vector<uint16_t> &avoid) {
  auto sharesAvoided = [&](const std::vector<uint16_t> &slices) {
    for (uint16_t s : slices)
      if (std::find(avoid.begin(), avoid.end(), s) != avoid.end())
        return true;
    return false;
  };
  auto key = std::make_pair(std::string(tensor::dtypeName(dtype)) + "x" + std::to_string(rows) + "x" +
                                std::to_string(cols),
                            data);
  // Any copy made before that is off the avoided slices will do (each use
  // may avoid other slices: its data's).
  if (auto it = constantViews_.find(key); it != constantViews_.end())
    for (const TensorView &copy : it->second)
      if (!sharesAvoided(copy.allSlices()))
        return copy;
  // A constant is loaded before the run starts: its space must be SRAM no
  // block written during the run has used (writableFrom 0), on no slice in
  // `avoid` (tensors read in the same cycles as it). Other space is skipped
  // (held meanwhile so the allocator moves on, then given back as it was).
  // A constant longer than a slice is chunked like any tensor.
  // First the lowest such space anywhere (the allocator skips the rest):
  // a lane map or divisor on a slice its data is read from in the same
  // cycle makes a tree no cycle fits.
  std::shared_ptr<Storage> storage;
  // Striped, SRAM's free room is a thin layer atop the stripes: constants
  // go to its top, out of the way of the run's tensors.
  const bool was = sram_.fromTop;
  sram_.fromTop = striped;
  auto restore = llvm::make_scope_exit([&] { sram_.fromTop = was; });
  {
    auto got = allocateStorage(
        dtype, rows, cols, SramOwner{std::string(ir::mnemonic(op.kind())) + " constant", op.loc()}, 1,
        [&](const std::vector<uint16_t> &slices, int64_t writable) {
          return writable == 0 && !sharesAvoided(slices);
        });
    if (got)
      storage = std::move(*got);
    else
      llvm::consumeError(got.takeError());
  }
  std::vector<SramBlock> skipped;
  for (int attempt = 0; !storage; ++attempt) {
    auto got = allocateStorage(dtype, rows, cols,
                               SramOwner{std::string(ir::mnemonic(op.kind())) + " constant", op.loc()});
    if (!got) {
      for (const SramBlock &b : skipped)
        sram_.release(b.id, b.writableFrom - 1);
      return got.takeError();
    }
    // Past a few rounds of every slice, settle for a shared slice (the
    // placer then serialises the reads) but never for reused space.
    const SramBlock &block = (*got)->block;
    bool clash = sharesAvoided(block.slices) && attempt < 2 * int(chip_.memSlices);
    if (block.writableFrom == 0 && !clash) {
      storage = std::move(*got);
      break;
    }
    skipped.push_back(block);
  }
  for (const SramBlock &b : skipped)
    sram_.release(b.id, b.writableFrom - 1);
  std::fill(storage->ready.begin(), storage->ready.end(), 0);
  storage->persistent = true;
  TensorView view = viewOf(storage, dtype, rows, cols);
  backend::TensorPlacement t;
  t.role = backend::TensorRole::Constant;
  t.dtype = dtype;
  t.shape = {backend::Dim{cols, ""}};
  if (rows != 1)
    t.shape.insert(t.shape.begin(), backend::Dim{rows, ""});
  t.slices = storage->block.slices;
  t.addr = storage->block.addr;
  t.chunkRows = uint32_t(storage->chunkRows);
  t.data = std::move(data);
  constants.push_back(std::move(t));
  constantViews_[key].push_back(view);
  return view;
}

std::optional<TensorView> LoweringContext::constantElsewhere(const ir::Op &op, const TensorView &v,
                                                            const std::vector<uint16_t> &avoid) {
  for (const auto &[key, copies] : constantViews_)
    for (const TensorView &copy : copies) {
      if (copy.storage != v.storage)
        continue;
      // key: "<dtype>x<rows>x<cols>" and the data.
      const std::string &shape = key.first;
      const size_t c = shape.rfind('x'), r = shape.rfind('x', c - 1);
      const int64_t rows = std::stoll(shape.substr(r + 1, c - r - 1)), cols = std::stoll(shape.substr(c + 1));
      std::vector<uint8_t> data = key.second;
      auto other = constant(op, copy.dtype, rows, cols, std::move(data), avoid);
      if (!other) {
        llvm::consumeError(other.takeError());
        return std::nullopt;
      }
      TensorView out = v;
      out.storage = other->storage;
      return out;
    }
  return std::nullopt;
}

int64_t LoweringContext::pathOf(const ir::Op &op) const {
  if (auto it = pathEnd.find(&op); it != pathEnd.end())
    return it->second;
  int64_t end = 0;
  if (ir::isElementwise(op.kind()) && !materialized(&op))
    for (const ir::Op *operand : op.operands())
      end = std::max(end, pathOf(*operand));
  return end;
}

void LoweringContext::notePathEnd(const ir::Op &op, int64_t end) {
  int64_t &at = pathEnd[&op];
  at = std::max(at, end);
  criticalPath = std::max(criticalPath, at);
}

void LoweringContext::notePathVia(const ir::Op &op, const ir::Op &from, int64_t latency) {
  notePathEnd(op, pathOf(from) + latency);
}

void LoweringContext::notePace(const ir::Op &op, int64_t interval, int64_t cap) {
  if (interval > 0 && cap > 1)
    rowPace[&op] = RowPace{pathOf(op), interval, cap};
}

std::optional<LoweringContext::RowPace> LoweringContext::paceOf(const ir::Op &op) const {
  if (auto it = rowPace.find(&op); it != rowPace.end())
    return it->second;
  // Computed inside its users' group: row r follows its operands' rows r
  // (those with its rows) through the group's tree, whose latency the
  // group's own pace adds.
  std::optional<RowPace> pace;
  if (ir::isElementwise(op.kind()) && !materialized(&op))
    for (const ir::Op *operand : op.operands())
      if (rowsAndCols(operand->type()).first == rowsAndCols(op.type()).first)
        if (std::optional<RowPace> p = paceOf(*operand); p && (!pace || p->last() > pace->last()))
          pace = p;
  return pace;
}

void LoweringContext::notePaceVia(const ir::Op &op, const ir::Op &from, int64_t latency) {
  std::optional<RowPace> pace = paceOf(from);
  if (!pace || rowsAndCols(op.type()).first != rowsAndCols(from.type()).first)
    return;
  pace->base += latency;
  noteRowPace(op, *pace);
}

void LoweringContext::noteRowPace(const ir::Op &op, RowPace pace) {
  RowPace &have = rowPace[&op];
  if (have.cap == 0 || pace.last() > have.last())
    have = pace;
}

int64_t LoweringContext::pathOfRows(const ir::Op &op, int64_t n) const {
  int64_t end = pathOf(op);
  if (std::optional<RowPace> pace = paceOf(op); pace && n > 1)
    end = std::max(end, pace->at(n));
  return end;
}

void LoweringContext::notePath(const ir::Op &op, int64_t latency) {
  int64_t start = 0;
  for (const ir::Op *operand : op.operands())
    start = std::max(start, pathOf(*operand));
  notePathEnd(op, start + latency);
}

int64_t LoweringContext::startOnPlanes(const std::vector<PlaneWork> &work, int64_t earliest, int64_t passRows) {
  const int64_t iw = chip_.timingOf(backend::Opcode::InstallWeights, ir::DType::F16).latency;
  const int64_t issue = chip_.timingOf(backend::Opcode::MatMul, ir::DType::F16).issue;
  // When plane p is done with the ops before and installed again (or, with
  // no install, its queue has issued their last mm: a row sum on the ones
  // a sum before it left, PlaneState::heldOnes).
  auto freeAt = [&](size_t p) {
    if (planes[p].pathLastMm < 0)
      return int64_t(0);
    return planes[p].pathLastMm + (work[p].installs > 0 ? 1 + iw : issue);
  };
  int64_t free = -1, latest = -1, lastMm = -1;
  for (size_t p = 0; p < work.size() && p < planes.size(); ++p)
    if (work[p].mms > 0) {
      free = free < 0 ? freeAt(p) : std::min(free, freeAt(p));
      latest = std::max(latest, freeAt(p));
    }
  const int64_t start = std::max(earliest, free);
  for (size_t p = 0; p < work.size() && p < planes.size(); ++p) {
    if (work[p].mms == 0)
      continue;
    // Queue order: an mm every issue interval, and between weight sets
    // the last mm, the install after it and its latency.
    const int64_t last = std::max(start, freeAt(p)) + (work[p].mms - 1) * issue +
                         std::max<int64_t>(0, work[p].installs - 1) * std::max<int64_t>(0, 1 + iw - issue);
    planes[p].pathLastMm = std::max(planes[p].pathLastMm, last);
    lastMm = std::max(lastMm, last);
  }
  if (passRows <= 0)
    return start;
  // The first row's last pass on each plane: every pass before it there,
  // then its first row.
  return std::max({earliest, latest, lastMm - (passRows - 1) * issue});
}

void encodeElement(ir::DType dtype, double value, uint8_t *out) {
  switch (dtype) {
  case ir::DType::F32: {
    float f = float(value);
    std::memcpy(out, &f, 4);
    break;
  }
  case ir::DType::F16: {
    uint16_t h = tensor::floatToHalfBits(float(value));
    std::memcpy(out, &h, 2);
    break;
  }
  case ir::DType::BF16: {
    uint16_t h = tensor::floatToBF16Bits(float(value));
    std::memcpy(out, &h, 2);
    break;
  }
  case ir::DType::Bool:
    out[0] = value != 0;
    break;
  default: {
    int64_t i = int64_t(value);
    std::memcpy(out, &i, tensor::dtypeSize(dtype)); // little-endian: the low bytes wrap
    break;
  }
  }
}

llvm::Error cannotPlace(const ir::Op &op, LoweringContext &ctx) {
  const char *why = "";
  switch (ctx.placer().lastFailure()) {
  case Placer::Failure::PortTwice: why = "it needs a MEM port twice in one cycle"; break;
  case Placer::Failure::NoCycle:
    why = "what it needs does not fit together even where nothing else runs";
    break;
  case Placer::Failure::OperandWidth:
    why = "an instruction reads more streams of an operand than its producer gives";
    break;
  }
  return refuse<Refusal::NoCycle>(op, why);
}

LoweringFn loweringFor(ir::OpKind kind) {
  using K = ir::OpKind;
  switch (kind) {
  case K::Matmul:
    return lowerMatmul;
  case K::Conv2d:
    return lowerConv;
  case K::MaxPool2d:
  case K::AvgPool2d:
    return lowerPool;
  case K::Reshape:
  case K::Broadcast:
    return lowerView;
  case K::ReduceSum:
  case K::ReduceMean:
  case K::ReduceMax:
  case K::ReduceMin:
  case K::Argmax:
    return lowerReduce;
  case K::Softmax:
    return lowerSoftmax;
  case K::Transpose:
  case K::Slice:
  case K::Concat:
    return lowerLayout;
  case K::Iota:
    return lowerIota;
  case K::Gather:
    return lowerGather;
  case K::Update:
    return lowerUpdate;
  default:
    return ir::isElementwise(kind) ? lowerElementwise : nullptr;
  }
}

} // namespace lpu::scheduler
