// Matmuls on the MXM planes. The result is cut into jobs of (batch, column
// tile of 320, up to mxm_acc_rows rows); jobs go to the planes in turn. For
// each K-tile of 320 a job loads the weight rows (lw, one B row vector per
// cycle), installs them (iw) and streams the A vectors through the plane
// (mm, accumulating in fp32 in ascending k-tile order); the next K-tile's
// weights load while this one multiplies (the buffer is free once iw has
// issued). The accumulator rows are then read out (acc), converted to the
// result dtype on the VXM when it is f16, and written to SRAM. With fewer
// jobs than planes a job's K-tiles are split over several planes and the
// parts' accumulators added on the VXM as they are read.
#include "scheduler/Lowering.h"

#include <algorithm>

namespace lpu::scheduler {

using namespace backend;

MxmPlanes::MxmPlanes(LoweringContext &ctx)
    : ctx_(ctx), count_(ctx.chip().mxmPlanes), accRows_(ctx.chip().mxmAccRows),
      iwLatency_(ctx.chip().timingOf(Opcode::InstallWeights, DType::F16).latency),
      mmLatency_(ctx.chip().timingOf(Opcode::MatMul, DType::F16).latency) {
  if (ctx.planes.empty())
    for (unsigned p = 0; p < count_; ++p)
      ctx.planes.push_back(PlaneState{-1, -1, std::vector<int64_t>(size_t(accRows_), 0)});
  for (unsigned p = 0; p < count_; ++p)
    order_.push_back(p);
  std::stable_sort(order_.begin(), order_.end(),
                   [&](unsigned a, unsigned b) { return ctx.planes[a].lastMm < ctx.planes[b].lastMm; });
}

unsigned MxmPlanes::mmQueue(unsigned p) const {
  unsigned half = ctx_.chip().queues[unsigned(UnitKind::Mxm)] / 2;
  bool east = p >= count_ / 2;
  return (east ? half : 0) + 2 * (p % (count_ / 2));
}

unsigned MxmPlanes::accQueue(unsigned p) const {
  // A third queue per plane when the hemisphere has one (groqchip1: 6
  // queues for 2 planes), so that reading rows out does not wait for the
  // plane's matmuls to end: an f16 mm keeps its queue busy 4 cycles.
  const unsigned half = ctx_.chip().queues[unsigned(UnitKind::Mxm)] / 2, perSide = count_ / 2;
  if (half < 3 * perSide)
    return mmQueue(p);
  const bool east = p >= perSide;
  return (east ? half : 0) + 2 * perSide + p % perSide;
}

WorkTree MxmPlanes::loadWeights(unsigned p) const {
  WorkTree tree;
  Instr lw;
  lw.op = Opcode::LoadWeights;
  lw.dtype = DType::F16;
  lw.unit = uint16_t(p);
  tree.add(lw, {}, int(mmQueue(p) + 1));
  return tree;
}

int64_t MxmPlanes::install(unsigned p, int64_t lastLw) {
  PlaneState &st = state(p);
  Instr iw;
  iw.op = Opcode::InstallWeights;
  iw.unit = uint16_t(p);
  // The buffer's last row lands at the end of cycle lastLw + latency - 1:
  // the install takes the buffer after that.
  const int64_t landed = lastLw + ctx_.chip().timingOf(Opcode::LoadWeights, DType::F16).latency;
  st.lastIw = ctx_.placer().placeAlone(iw, mmQueue(p), std::max(landed, st.lastMm + 1));
  st.heldOnes = 0;
  return st.lastIw;
}

WorkTree MxmPlanes::matmul(unsigned p, int64_t m) const {
  WorkTree tree;
  Instr mm;
  mm.op = Opcode::MatMul;
  mm.dtype = DType::F16;
  mm.unit = uint16_t(p);
  mm.addr = uint32_t(m);
  tree.add(mm, {}, int(mmQueue(p)));
  return tree;
}

int MxmPlanes::accRead(WorkTree &tree, unsigned p, int64_t m) const {
  Instr acc;
  acc.op = Opcode::AccRead;
  acc.dtype = DType::F32;
  acc.unit = uint16_t(p);
  acc.addr = uint32_t(m);
  return tree.add(acc, {}, int(accQueue(p)));
}

// A shift up by the padding's width, then a rotation back. The SXM stands
// next to the MXM, so this costs no detour and no SRAM read of a mask.
int zeroTail(WorkTree &tree, int value, unsigned valid, unsigned p, unsigned planes, unsigned lanes) {
  Instr shift;
  shift.op = Opcode::Shift;
  shift.dtype = DType::F16;
  shift.count = lanes - valid;
  shift.unit = p >= planes / 2 ? 1 : 0;
  Instr rotate = shift;
  rotate.op = Opcode::Rotate;
  rotate.count = valid;
  return tree.add(rotate, {tree.add(shift, {value})});
}

namespace {
/// Whether the lanes past K of `lhs`'s rows are known to hold zeros: the
/// program file guarantees it for inputs and parameters. Any other value's
/// padding lanes hold whatever its lowering computed there (0 / 0 in a
/// division by a splat is NaN), and the MXM multiplies all 320 lanes: a
/// NaN times an unloaded weight row's 0 is still NaN.
bool zeroPadded(const ir::Op &lhs) {
  return lhs.kind() == ir::OpKind::Input || lhs.kind() == ir::OpKind::Param;
}

/// Weight row `brow`'s vector `j` from packed storage (docs/scheduler.md,
/// "Packed parameters"), as the rows layout holds it: its `valid` elements
/// from lane 0, zeros past them (so the product's padding lanes are what
/// they are with rows). The segment starts at lane L of one stored vector
/// and may end in the next; SXM shifts and rotations on plane `p`'s side
/// move the bits (they never change them), a VXM `or` joins two halves.
int packedWeight(WorkTree &tree, const TensorView &B, int64_t brow, int64_t j, unsigned p,
                 unsigned planes, unsigned lanes) {
  const TensorView::PackedSegment seg = B.segment(brow, j, lanes);
  const std::vector<uint16_t> &slices = B.slices(brow);
  const unsigned W = lanes, L = seg.lane, V = seg.valid;
  auto sxm = [&](Opcode op, unsigned count, int value) {
    if (count % W == 0)
      return value;
    Instr in;
    in.op = op;
    in.dtype = DType::F16;
    in.count = count % W;
    in.unit = p >= planes / 2 ? 1 : 0;
    return tree.add(in, {value});
  };
  // Lanes below L zeroed, then the segment rotated down to lane 0: a
  // rotation puts lane L at 0, a shift by L zeros what came from below L
  // (it shifts the kept lanes back up), a rotation brings them down again.
  auto lowPart = [&](int value) {
    if (L == 0)
      return value;
    return sxm(Opcode::Rotate, W - L, sxm(Opcode::Shift, L, sxm(Opcode::Rotate, W - L, value)));
  };
  int first = tree.read(slices, seg.addr);
  if (!seg.straddles) {
    int low = lowPart(first);
    // Zeros past V: shifted to the top (lanes below fill with zeros), and
    // rotated back.
    if (V < W)
      low = sxm(Opcode::Rotate, V, sxm(Opcode::Shift, W - V, low));
    return low;
  }
  // Straddling: W - L elements from the first vector, b = V - (W - L) from
  // the second's low lanes, which a shift puts at the top (zeros below)
  // and a rotation by V puts after the first part (zeros past V).
  const unsigned b = V - (W - L);
  int high = sxm(Opcode::Rotate, V, sxm(Opcode::Shift, W - b, tree.read(slices, seg.addr + 1)));
  Instr join;
  join.op = Opcode::Or;
  join.dtype = DType::I16; // bitwise: the f16 bits as they are
  return tree.add(join, {lowPart(first), high});
}
} // namespace

llvm::Expected<MatmulSpans> runMatmul(const ir::Op &op, LoweringContext &ctx, const MatmulWork &work,
                                      const TensorView &C) {
  const ChipDescription &chip = ctx.chip();
  MxmPlanes mxm(ctx);
  const unsigned dim = chip.mxmDim;
  const int64_t K = work.K, N = work.N, batches = work.batches, mPerBatch = work.rows;
  const int64_t kt = (K + dim - 1) / dim, nt = (N + dim - 1) / dim;
  const int64_t accRows = mxm.accRows(), iwLatency = mxm.iwLatency(), mmLatency = mxm.mmLatency();
  // The K-tiles a job multiplies (all of them unless work.tileUsed says).
  auto used = [&](int64_t b, int64_t t, int64_t j) { return !work.tileUsed || work.tileUsed(b, t, j); };

  // Jobs and their parts: a part is a run of a job's K-tiles on one plane,
  // and a job's parts' accumulators are added on the VXM (in part order)
  // as they are read. Whole jobs go to the planes in turn; with fewer jobs
  // than planes, each job's K-tiles are cut into up to planes / jobs
  // contiguous parts on planes of their own (the transformer's FFN
  // down-projection, [S, 1024] x [1024, 256]: one job of four K-tiles,
  // multiplied 4 * S rows on one plane at the f16 rate of one row per 4
  // cycles while three planes idled). When that still leaves some plane
  // more K-tiles than an even share (BERT-base's down-projection: three
  // jobs of ten K-tiles on three of four planes), the K-tiles of all jobs,
  // in job order, are dealt in contiguous runs of an even share instead. A
  // plane then holds one job's partial sums while it multiplies the next,
  // so its consecutive jobs accumulate into rows of their own
  // (mxm_acc_rows allowing).
  const int64_t blocks = (mPerBatch + accRows - 1) / accRows;
  const int64_t jobs = batches * nt * blocks, P = mxm.count();
  const int64_t cut = jobs < P && kt > 1 ? std::min<int64_t>(kt, P / jobs) : 1;
  struct Part {
    unsigned plane;
    std::vector<int64_t> tiles;
  };
  auto assign = [&](bool dealt, int64_t units) {
    std::vector<std::vector<Part>> partsOf(static_cast<size_t>(jobs));
    int64_t unit = 0;
    for (int64_t job = 0; job < jobs; ++job) {
      const int64_t b = job / (nt * blocks), j = job / blocks % nt;
      std::vector<Part> &parts = partsOf[size_t(job)];
      for (int64_t t = 0; t < kt; ++t) {
        if (!used(b, t, j))
          continue;
        int64_t q = 0; // the cut part t falls in
        while (q + 1 < cut && (q + 1) * kt / cut <= t)
          ++q;
        const int64_t k = dealt ? unit * P / units : job * cut + q;
        ++unit;
        if (parts.empty() || parts.back().plane != mxm.plane(unsigned(k)))
          parts.push_back(Part{mxm.plane(unsigned(k)), {}});
        parts.back().tiles.push_back(t);
      }
    }
    return partsOf;
  };
  std::vector<std::vector<Part>> partsOf = assign(false, 0);
  std::vector<int64_t> load(static_cast<size_t>(mxm.count()), 0);
  int64_t units = 0;
  for (const std::vector<Part> &parts : partsOf)
    for (const Part &part : parts) {
      load[part.plane] += int64_t(part.tiles.size());
      units += int64_t(part.tiles.size());
    }
  const bool dealt = *std::max_element(load.begin(), load.end()) > (units + P - 1) / P;
  if (dealt)
    partsOf = assign(true, units);
  const int64_t accBlock = std::min(accRows, mPerBatch);
  unsigned job = 0;
  std::vector<const TensorView *> reads;
  MatmulSpans spans;
  spans.planes.resize(mxm.count());
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t j = 0; j < nt; ++j)
      for (int64_t m0 = 0; m0 < mPerBatch; m0 += accRows, ++job) {
        int64_t mRows = std::min(accRows, mPerBatch - m0);
        const std::vector<Part> &parts = partsOf[job];
        // The job's accumulator rows: from 0, or when dealt a block of
        // their own.
        const int64_t acc0 = dealt ? int64_t(job) % (accRows / accBlock) * accBlock : 0;
        // mmDone[q][m]: when row m's last mm of part q has landed (-1: the
        // part multiplied nothing).
        std::vector<std::vector<int64_t>> mmDone;
        for (size_t q = 0; q < parts.size(); ++q) {
          const unsigned p = parts[q].plane;
          mmDone.emplace_back(size_t(mRows), -1);
          PlaneState &st = mxm.state(p);
          bool firstTile = true;
          for (int64_t t : parts[q].tiles) {
            int64_t rowsK = std::min<int64_t>(dim, K - t * dim);
            // Weight rows of this K-tile into the buffer, in row order.
            int64_t lastLw = st.lastIw;
            const int64_t loads = work.rowsLoaded ? work.rowsLoaded(b, t, j) : rowsK;
            for (int64_t r = 0; r < loads; ++r) {
              WorkTree tree = mxm.loadWeights(p);
              reads.clear();
              tree.nodes[0].inputs = {work.weightRow(tree, b, t, r, j, p, reads)};
              std::optional<Placement> placed = ctx.placer().place(std::move(tree), 0, lastLw + 1);
              if (!placed)
                return cannotPlace(op, ctx);
              Placement pl = *placed;
              lastLw = pl.rootCycle;
              spans.lw.note(pl);
              for (const TensorView *v : reads)
                ctx.read(*v, pl.doneCycle);
            }
            // Install once the rows are in and the previous tile's matmuls
            // have issued (they use the old weights).
            int64_t iwCycle = mxm.install(p, lastLw);
            spans.planes[p].installs += 1;
            spans.planes[p].mms += mRows;
            for (int64_t m = 0; m < mRows; ++m) {
              WorkTree tree = mxm.matmul(p, acc0 + m);
              reads.clear();
              tree.nodes[0].inputs = {work.aVector(tree, b, m0 + m, t, p, reads)};
              int64_t rootNotBefore = std::max({iwCycle + iwLatency, st.lastMm + 1,
                                                firstTile ? st.accFree[size_t(acc0 + m)] : 0});
              std::optional<Placement> placed = ctx.placer().place(std::move(tree), 0, rootNotBefore);
              if (!placed)
                return cannotPlace(op, ctx);
              Placement pl = *placed;
              st.lastMm = std::max(st.lastMm, pl.rootCycle);
              spans.mm.note(pl);
              mmDone[q][size_t(m)] = pl.rootCycle + mmLatency;
              for (const TensorView *v : reads)
                ctx.read(*v, pl.doneCycle);
            }
            firstTile = false;
          }
        }
        // Read the accumulators out into C.
        for (int64_t m = 0; m < mRows; ++m) {
          int64_t crow = b * mPerBatch + m0 + m;
          WorkTree tree;
          tree.write(C.slices(crow), C.address(crow, j), -1);
          std::vector<int> accs;
          std::vector<size_t> accPart;
          for (size_t q = 0; q < parts.size(); ++q)
            if (mmDone[q][size_t(m)] >= 0) {
              accs.push_back(mxm.accRead(tree, parts[q].plane, acc0 + m));
              accPart.push_back(q);
            }
          int value = accs[0];
          for (size_t q = 1; q < accs.size(); ++q) {
            Instr add;
            add.op = Opcode::Add;
            add.dtype = DType::F32;
            value = tree.add(add, {value, accs[q]});
          }
          reads.clear();
          value = work.finish(tree, value, crow, j, reads);
          tree.nodes[0].inputs = {value};
          tree.nodes[0].notBefore = C.storage->block.writableFrom;
          // Each acc no earlier than its part's last mm of the row landed.
          for (size_t k = 0; k < accs.size(); ++k)
            tree.nodes[size_t(accs[k])].notBefore = mmDone[accPart[k]][size_t(m)];
          std::optional<Placement> placed = ctx.placer().place(std::move(tree), 0);
          if (!placed)
            return cannotPlace(op, ctx);
          Placement pl = *placed;
          spans.acc.note(pl);
          // The accs have issued by the root's cycle (the tree's first
          // cycle may be an epilogue's read of a bias, before them).
          for (size_t q : accPart)
            mxm.state(parts[q].plane).accFree[size_t(acc0 + m)] = pl.rootCycle + 1;
          ctx.written(C, crow, j, pl.doneCycle - 1);
          for (const TensorView *v : reads)
            ctx.read(*v, pl.doneCycle);
        }
      }
  return spans;
}

llvm::Error lowerMatmul(const ir::Op &op, LoweringContext &ctx) {
  const ChipDescription &chip = ctx.chip();
  const ir::Op &lhs = *op.operand(0), &rhs = *op.operand(1);
  if (lhs.type().dtype != DType::F16)
    return unsupported(op, "matmul of " + tensor::dtypeName(lhs.type().dtype).str() +
                               " operands: the MXM multiplies f16");
  if (op.type().dtype != DType::F16 && op.type().dtype != DType::F32)
    return unsupported(op);
  const std::vector<int64_t> &as = lhs.type().shape, &bs = rhs.type().shape;
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < bs.size(); ++i)
    batches *= bs[i];
  int64_t rowsA = 1;
  for (size_t i = 0; i + 1 < as.size(); ++i)
    rowsA *= as[i];
  int64_t mPerBatch = batches > 1 ? M : rowsA; // rows of A per batch
  const TensorView &A = ctx.view(&lhs), &B = ctx.view(&rhs);
  // The policy packs only weights (scheduler/Scheduler.cpp, packable): A
  // is read a row vector at a time as rows.
  if (A.packed())
    return unsupported(op, "a left operand stored packed");
  // Elementwise work on the result (a bias, an activation) runs in the
  // accumulator reads' trees, and its result is what gets written.
  const ir::Op *epilogue = epilogueRoot(op, ctx);
  auto out = ctx.define(epilogue ? epilogue : &op);
  if (!out)
    return out.takeError();
  TensorView &C = **out;
  const unsigned dim = chip.mxmDim, planes = chip.mxmPlanes, lanes = chip.lanes;

  MatmulWork work;
  work.batches = batches;
  work.rows = mPerBatch;
  work.K = K;
  work.N = N;
  work.weightRow = [&](WorkTree &tree, int64_t b, int64_t t, int64_t r, int64_t j, unsigned p,
                       std::vector<const TensorView *> &reads) {
    int64_t brow = b * K + t * dim + r;
    reads.push_back(&B);
    int x = B.packed() ? packedWeight(tree, B, brow, j, p, planes, lanes)
                       : tree.read(B.slices(brow), B.address(brow, j));
    // The first read node (packed: the segment's first vector) waits for
    // the row to be written.
    for (WorkNode &node : tree.nodes)
      if (node.instr.op == Opcode::Read)
        node.notBefore = std::max(node.notBefore, B.readyAt(brow, j));
    return x;
  };
  work.aVector = [&](WorkTree &tree, int64_t b, int64_t m, int64_t t, unsigned p,
                     std::vector<const TensorView *> &reads) {
    int64_t arow = b * mPerBatch + m;
    int64_t rowsK = std::min<int64_t>(dim, K - t * dim);
    reads.push_back(&A);
    int x = tree.read(A.slices(arow), A.address(arow, t));
    tree.nodes[size_t(x)].notBefore = A.readyAt(arow, t);
    if (rowsK < int64_t(lanes) && !zeroPadded(lhs))
      x = zeroTail(tree, x, unsigned(rowsK), p, planes, lanes);
    return x;
  };
  work.finish = [&](WorkTree &tree, int value, int64_t crow, int64_t j,
                    std::vector<const TensorView *> &reads) {
    if (op.type().dtype == DType::F16) {
      Instr cvt;
      cvt.op = Opcode::Cvt;
      cvt.dtype = DType::F32;
      cvt.dtype2 = DType::F16;
      value = tree.add(cvt, {value});
    }
    if (epilogue)
      value = buildEpilogue(tree, *epilogue, op, value, crow, j, ctx, reads);
    return value;
  };
  auto spans = runMatmul(op, ctx, work, C);
  if (!spans)
    return spans.takeError();
  // A row of the result needs its A row through the plane, and the
  // weights loaded and installed: every row of a K-tile (B's first
  // min(K, dim) rows for the first tile of batch 0), loaded one a cycle on
  // the plane's queue, the shortest tile's count at least.
  const ir::Op &result = epilogue ? *epilogue : op;
  const int64_t iwLatency = chip.timingOf(Opcode::InstallWeights, DType::F16).latency;
  const int64_t mmLatency = chip.timingOf(Opcode::MatMul, DType::F16).latency;
  const int64_t tileRows = std::min<int64_t>(K, dim), shortest = K - (K - 1) / dim * dim;
  // The first row's last mm at the earliest: A's row through the mm's
  // tree, the weights loaded and installed, the planes done with earlier
  // ops. With one batch of rows that fit the accumulators every job is a
  // column tile (or K part) of all the rows, and each weight set on a
  // plane multiplies every row in row order: the first row waits for every
  // plane the matmul takes and is done in each plane's last pass
  // (BERT-base's FFN down-projection passes seven or eight K-tiles on each
  // plane).
  const bool everyPlane = batches == 1 && mPerBatch <= int64_t(chip.mxmAccRows);
  const int64_t issue = chip.timingOf(Opcode::MatMul, DType::F16).issue;
  const int64_t firstMm = ctx.startOnPlanes(
      spans->planes,
      std::max(ctx.pathOf(lhs) + spans->mm.get() - mmLatency,
               std::max(ctx.pathOf(rhs) + shortest - 1, ctx.pathOfRows(rhs, tileRows)) +
                   spans->pathFromB(iwLatency, mmLatency) - mmLatency - spans->acc.get()),
      everyPlane ? mPerBatch : 0);
  ctx.notePathEnd(result, firstMm + mmLatency + spans->acc.get());
  // One job's rows (per column tile) go through one plane's mm queue in
  // row order.
  if (everyPlane)
    ctx.notePace(result, issue, mPerBatch);
  return llvm::Error::success();
}

} // namespace lpu::scheduler
