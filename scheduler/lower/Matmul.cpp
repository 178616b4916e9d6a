// Matmuls on the MXM planes. The result is cut into jobs of (batch, column
// tile of 320, up to mxm_acc_rows rows); jobs go to the planes in turn. For
// each K-tile of 320 a job loads the weight rows (lw, one B row vector per
// cycle), installs them (iw) and streams the A vectors through the plane
// (mm, accumulating in fp32 in ascending k-tile order); the next K-tile's
// weights load while this one multiplies (the buffer is free once iw has
// issued). The accumulator rows are then read out (acc), converted to the
// result dtype on the VXM when it is not f32, and written to SRAM (i8
// operands: lw/mm i8 at the int8 rate into i32 sums, the result). With fewer
// jobs than planes a job's K-tiles are split over several planes and the
// parts' accumulators added on the VXM as they are read. f32 and bf16
// operands are scaled by powers of two per row of A and column of B and
// go in as f16 pieces, each piece of B a weight set of its own, and the
// product is scaled back as it is read (docs/scheduler.md, "f32 and bf16
// matmuls").
#include "scheduler/Lowering.h"
#include "scheduler/lower/Reduce.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <set>

namespace lpu::scheduler {

using namespace backend;

MxmPlanes::MxmPlanes(LoweringContext &ctx, DType dtype)
    : ctx_(ctx), dtype_(dtype), count_(ctx.chip().mxmPlanes), accRows_(ctx.chip().mxmAccRows),
      iwLatency_(ctx.chip().timingOf(Opcode::InstallWeights, dtype).latency),
      mmLatency_(ctx.chip().timingOf(Opcode::MatMul, dtype).latency),
      mmIssue_(ctx.chip().timingOf(Opcode::MatMul, dtype).issue) {
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
  lw.dtype = dtype_;
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
  const int64_t landed = lastLw + ctx_.chip().timingOf(Opcode::LoadWeights, dtype_).latency;
  st.lastIw = ctx_.placer().placeAlone(iw, mmQueue(p), std::max(landed, st.lastMm + 1));
  st.heldOnes = 0;
  return st.lastIw;
}

WorkTree MxmPlanes::matmul(unsigned p, int64_t m) const {
  WorkTree tree;
  Instr mm;
  mm.op = Opcode::MatMul;
  mm.dtype = dtype_;
  mm.unit = uint16_t(p);
  mm.addr = uint32_t(m);
  tree.add(mm, {}, int(mmQueue(p)));
  return tree;
}

int MxmPlanes::accRead(WorkTree &tree, unsigned p, int64_t m) const {
  Instr acc;
  acc.op = Opcode::AccRead;
  acc.dtype = accType();
  acc.unit = uint16_t(p);
  acc.addr = uint32_t(m);
  return tree.add(acc, {}, int(accQueue(p)));
}

// A shift up by the padding's width, then a rotation back. The SXM stands
// next to the MXM, so this costs no detour and no SRAM read of a mask.
int zeroTail(WorkTree &tree, int value, unsigned valid, unsigned p, unsigned planes, unsigned lanes,
             DType dtype) {
  Instr shift;
  shift.op = Opcode::Shift;
  shift.dtype = dtype;
  shift.count = lanes - valid;
  shift.unit = p >= planes / 2 ? 1 : 0;
  Instr rotate = shift;
  rotate.op = Opcode::Rotate;
  rotate.count = valid;
  return tree.add(rotate, {tree.add(shift, {value})});
}

namespace {
/// Lanes r0..r0+rows-1 of `value` rotated down to lane 0 and every other
/// lane zeroed, on the SXM on plane p's side (a piece of a K-tile in a
/// balanced cut: the weight rows it loads are the buffer's first).
int subTile(WorkTree &tree, int value, unsigned r0, unsigned rows, unsigned p, unsigned planes,
            unsigned lanes, DType dtype) {
  if (r0 % lanes) {
    Instr rotate;
    rotate.op = Opcode::Rotate;
    rotate.dtype = dtype;
    rotate.count = lanes - r0 % lanes;
    rotate.unit = p >= planes / 2 ? 1 : 0;
    value = tree.add(rotate, {value});
  }
  return rows < lanes ? zeroTail(tree, value, rows, p, planes, lanes, dtype) : value;
}

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

/// The f16 pieces a matmul operand goes into the MXM as (MatmulWork::
/// aPieces): one for f16, for f16 widened to f32 (exact) and for bf16 (its
/// 8 bits of precision fit f16's 11); two for any other f32.
int piecesOf(const ir::Op &operand) {
  return operand.type().dtype == DType::F32 && !reduce::exactInF16(operand) ? 2 : 1;
}

/// Piece `piece` of a value of `type` as f16 (docs/scheduler.md, "f32 and
/// bf16 matmuls"): the f16 nearest it, or the f16 nearest what that leaves
/// (the subtraction is exact in f32). `value` builds the value, a node of
/// its own each call (the second piece reads it twice).
int f16Piece(WorkTree &tree, DType type, int piece, const std::function<int()> &value) {
  // i8 goes in as it is: an i8 matmul multiplies it at the int8 rate.
  if (type == DType::F16 || type == DType::I8)
    return value();
  auto cvt = [&](DType from, DType to, int x) {
    Instr in;
    in.op = Opcode::Cvt;
    in.dtype = from;
    in.dtype2 = to;
    return tree.add(in, {x});
  };
  int hi = cvt(type, DType::F16, value());
  if (piece == 0)
    return hi;
  Instr sub;
  sub.op = Opcode::Sub;
  sub.dtype = type;
  return cvt(type, DType::F16, tree.add(sub, {value(), cvt(DType::F16, type, hi)}));
}

/// Whether an operand is scaled before it is cut into f16 pieces: f32
/// (but f16 widened) and bf16, whose ranges exceed f16's.
bool scaledOperand(const ir::Op &operand) {
  const DType t = operand.type().dtype;
  return t == DType::BF16 || (t == DType::F32 && !reduce::exactInF16(operand));
}

/// A scaled operand's largest |value| in a row of A (a column of B) is
/// brought into [2^kScaleExponent, 2^(kScaleExponent + 1)): f16's largest
/// is 65504 (just below 2^16), and a binade to spare keeps the nearest f16
/// of every scaled value finite; as high as that, so that small values
/// stay clear of f16's subnormals (below 2^-14) as far as they can.
constexpr int kScaleExponent = 14;

/// The i32 constants the scale of a largest |value| m is computed from
/// (scaleOf), k being kScaleExponent: the f32 bits of 2^(k - 127), the
/// exponent field's mask, and (k + 254) << 23, from which m's exponent
/// field E taken leaves (k + 254 - E) << 23, the bits of 2^(k - e).
std::vector<uint8_t> scaleConstants(unsigned lanes) {
  const uint32_t words[3] = {uint32_t(kScaleExponent) << 23, 0x7F800000u,
                             uint32_t(kScaleExponent + 254) << 23};
  std::vector<uint8_t> bytes;
  for (uint32_t w : words)
    for (unsigned i = 0; i < lanes; ++i)
      for (int b = 0; b < 4; ++b)
        bytes.push_back(uint8_t(w >> (8 * b)));
  return bytes;
}

/// The power of two s = 2^(k - e) for a largest |value| m = 2^e * (1 + f)
/// (node `m`, f32): the exponent field of max(m, 2^(k - 127)) taken from
/// (k + 254) << 23 (i32 arithmetic on the f32 bits, wrapping). m * s
/// is in [2^k, 2^(k + 1)); the floor on m keeps s at most 2^127 (a row of
/// zeros, or of values below 2^(k - 127), gets 2^127); m infinite or NaN
/// gives 2^(k - 128), finite, and the non-finite values stay what they
/// are.
int scaleOf(reduce::Builder &b, int m, const TensorView &consts) {
  m = b.add(reduce::vxm(Opcode::Max, DType::F32), {m, b.read(consts, 0, 0)});
  const int e = b.add(reduce::vxm(Opcode::And, DType::I32), {m, b.read(consts, 1, 0)});
  return b.add(reduce::vxm(Opcode::Sub, DType::I32), {b.read(consts, 2, 0), e});
}

/// Every row's scale of A (rows of f32 or bf16): |A| into scratch, folded
/// across lanes with max (reduce::acrossLanes), whose last step turns the
/// row's largest |value| into its scale. Scratch [rows, one vector] f32,
/// every lane the row's scale, off A's slices.
llvm::Expected<TensorView> rowScales(const ir::Op &op, LoweringContext &ctx, const TensorView &A,
                                     const TensorView &consts) {
  auto absA = ctx.scratch(op, DType::F32, A.rows, A.cols, A.allSlices());
  if (!absA)
    return absA.takeError();
  int64_t prev = 0;
  for (int64_t r = 0; r < A.rows; ++r)
    for (int64_t v = 0; v < A.vecsPerRow; ++v) {
      reduce::Builder b(ctx, *absA, r, v);
      int x = b.read(A, r, v);
      if (A.dtype != DType::F32)
        x = b.add(reduce::vxm(Opcode::Cvt, A.dtype, DType::F32), {x});
      auto placed = b.finish(b.add(reduce::vxm(Opcode::Abs, DType::F32), {x}), prev);
      if (!placed)
        return cannotPlace(op, ctx);
      prev = placed->firstCycle;
    }
  auto scales = ctx.scratch(op, DType::F32, A.rows, ctx.chip().lanes, A.allSlices());
  if (!scales)
    return scales.takeError();
  reduce::LaneFinish finish{&*scales, [&](reduce::Builder &b, int m) { return scaleOf(b, m, consts); }};
  auto T = reduce::acrossLanes(op, ctx, *absA, reduce::Combine::Max, DType::F32, &finish);
  if (!T)
    return T.takeError();
  ctx.releaseScratch(*T);
  ctx.releaseScratch(*absA);
  return *scales;
}

/// Every column's scale of B (`batches` of [K, N], rows of f32 or bf16):
/// per batch and column tile one tree, the max of |B| down the K rows in a
/// chain (its reads of B's slices each in a cycle of their own, one a
/// cycle), then the scale. Scratch [batches, N] f32, off `avoid`.
llvm::Expected<TensorView> columnScales(const ir::Op &op, LoweringContext &ctx, const TensorView &B,
                                        int64_t batches, int64_t K, int64_t N, const TensorView &consts,
                                        const std::vector<uint16_t> &avoid) {
  auto scales = ctx.scratch(op, DType::F32, batches, N, avoid);
  if (!scales)
    return scales.takeError();
  int64_t prev = 0;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t j = 0; j < B.vecsPerRow; ++j) {
      reduce::Builder bl(ctx, *scales, b, j);
      auto leaf = [&](int64_t k) {
        int x = bl.read(B, b * K + k, j);
        if (B.dtype != DType::F32)
          x = bl.add(reduce::vxm(Opcode::Cvt, B.dtype, DType::F32), {x});
        return bl.add(reduce::vxm(Opcode::Abs, DType::F32), {x});
      };
      // Two leaves a combine, the first through a copy: their reads fall a
      // cycle apart, and the next pair's two cycles later (a max's
      // latency), so the reads take every cycle of B's read port. The
      // first pair goes through two copies more, to meet the second.
      auto copy = [&](int x) { return bl.add(reduce::vxm(Opcode::Copy, DType::F32), {x}); };
      auto pair = [&](int64_t k) {
        if (k + 1 == K)
          return leaf(k);
        int first = copy(leaf(k));
        return bl.add(reduce::vxm(Opcode::Max, DType::F32), {first, leaf(k + 1)});
      };
      int m = pair(0);
      if (K > 2)
        m = copy(copy(m));
      for (int64_t k = 2; k < K; k += 2)
        m = bl.add(reduce::vxm(Opcode::Max, DType::F32), {m, pair(k)});
      auto placed = bl.finish(scaleOf(bl, m, consts), prev);
      if (!placed)
        return cannotPlace(op, ctx);
      prev = placed->firstCycle;
    }
  return *scales;
}
} // namespace

namespace {
/// A pass's order when the rows go to other chips in chunks: from `start`
/// (when the plane can take the first row), one row per `pace` cycles, the
/// ready row whose place in its chunk is lowest (then the chunk), or when
/// none is ready the next to be. Every link then starts with its chunk's
/// first rows instead of the last chunk's waiting behind all the others.
std::vector<int64_t> inTurns(const MatmulWork &work, int64_t b, int64_t m0, int64_t t, int64_t start,
                             int64_t pace, const std::vector<int64_t> &order) {
  std::vector<int64_t> ready(order.size()), byReady = order, turns;
  for (size_t m = 0; m < order.size(); ++m)
    ready[m] = work.rowReady(b, m0 + int64_t(m), t);
  std::stable_sort(byReady.begin(), byReady.end(),
                   [&](int64_t x, int64_t y) { return ready[size_t(x)] < ready[size_t(y)]; });
  auto key = [&](int64_t m) {
    const int64_t r = b * work.rows + m0 + m;
    return std::make_pair(r % work.rowChunk, r / work.rowChunk);
  };
  auto later = [&](int64_t x, int64_t y) { return key(y) < key(x); };
  std::priority_queue<int64_t, std::vector<int64_t>, decltype(later)> waiting(later);
  size_t next = 0;
  int64_t now = start;
  while (turns.size() < order.size()) {
    if (waiting.empty())
      now = std::max(now, ready[size_t(byReady[next])]);
    while (next < byReady.size() && ready[size_t(byReady[next])] <= now)
      waiting.push(byReady[next++]);
    turns.push_back(waiting.top());
    waiting.pop();
    now += pace;
  }
  return turns;
}
} // namespace

PlaneShare planeShare(int64_t jobs, int64_t kt, int64_t planes) {
  PlaneShare share;
  share.cut = jobs < planes && kt > 1 ? std::min(kt, planes / jobs) : 1;
  share.dealt = share.cut == 1 && kt * ((jobs + planes - 1) / planes) > (jobs * kt + planes - 1) / planes;
  return share;
}

llvm::Expected<MatmulSpans> runMatmul(const ir::Op &op, LoweringContext &ctx, const MatmulWork &work,
                                      const TensorView &C) {
  const ChipDescription &chip = ctx.chip();
  MxmPlanes mxm(ctx, work.dtype);
  const unsigned dim = chip.mxmDim;
  const int64_t K = work.K, N = work.N, batches = work.batches, mPerBatch = work.rows;
  const int64_t kt = (K + dim - 1) / dim, nt = (N + dim - 1) / dim;
  const int64_t accRows = mxm.accRows(), iwLatency = mxm.iwLatency(), mmLatency = mxm.mmLatency();
  const int64_t mmIssue = mxm.mmIssue();
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
  // Rows per job: up to the accumulator rows, or fewer when the work says
  // (a convolution's bands of output pixels, one per plane).
  const int64_t blockRows = work.rowBlock > 0 ? std::min(work.rowBlock, accRows) : accRows;
  const int64_t blocks = (mPerBatch + blockRows - 1) / blockRows;
  const int64_t jobs = batches * nt * blocks, P = mxm.count();
  const int64_t cut = planeShare(jobs, kt, P).cut;
  // A piece: rows r0..r0+rows-1 of K-tile t (all of them but in a
  // balanced cut, below).
  struct Piece {
    int64_t t, r0, rows;
  };
  auto tileRows = [&](int64_t t) { return std::min<int64_t>(dim, K - t * dim); };
  struct Part {
    unsigned plane;
    std::vector<Piece> tiles;
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
        const int64_t k = dealt                                   ? unit * P / units
                          : work.batchesInBlocks && cut == 1 ? b * P / batches
                                                             : job * cut + q;
        ++unit;
        if (parts.empty() || parts.back().plane != mxm.plane(unsigned(k)))
          parts.push_back(Part{mxm.plane(unsigned(k)), {}});
        parts.back().tiles.push_back(Piece{t, 0, tileRows(t)});
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
  // A balanced cut (work.balancedCut): a job cut over planes by whole
  // K-tiles loads a full tile's rows on most of them (784 = 320 + 320 +
  // 144 on three planes), one row a cycle. Cut into as many ranges of
  // equal rows instead, each broken at the tiles' edges into pieces, every
  // plane loads about K / cut rows (261 or 262); a piece that starts
  // inside its tile takes A's vector rotated down to its first row. Each
  // piece is a pass of the job's rows through the plane, so this is chosen
  // only when it shortens the longest plane's loads and passes (rows
  // loaded plus passes times the rows' mm's).
  if (work.balancedCut && ctx.heuristics.balancedKRanges && !dealt && cut > 1) {
    const int64_t passCycles = mPerBatch * mmIssue;
    auto longest = [&](const std::vector<std::vector<Part>> &all) {
      int64_t most = 0;
      for (const std::vector<Part> &parts : all)
        for (const Part &part : parts) {
          int64_t c = 0;
          for (const Piece &piece : part.tiles)
            c += piece.rows + passCycles;
          most = std::max(most, c);
        }
      return most;
    };
    std::vector<std::vector<Part>> balanced(static_cast<size_t>(jobs));
    for (int64_t job = 0; job < jobs; ++job)
      for (int64_t q = 0; q < cut; ++q) {
        const int64_t k0 = q * K / cut, k1 = (q + 1) * K / cut;
        Part part{mxm.plane(unsigned(job * cut + q)), {}};
        for (int64_t k = k0; k < k1;) {
          const int64_t t = k / dim, end = std::min(k1, (t + 1) * dim);
          part.tiles.push_back(Piece{t, k - t * dim, end - k});
          k = end;
        }
        balanced[size_t(job)].push_back(std::move(part));
      }
    if (longest(balanced) < longest(partsOf)) {
      partsOf = std::move(balanced);
      ctx.heuristicsDecided.balancedKRanges = true;
    }
  }
  // Earliest finish: the planes are not equally free when a matmul starts
  // (a feed-forward block's down-projection follows its up-projection,
  // whose last passes hold two planes while the other two idle), and the
  // assignments above deal the K-tiles as if they were. Each K-tile of
  // each job, in order, goes instead to the plane that would finish its
  // pass first, estimated from the plane's last mm and when A's rows are
  // ready; the assignment is kept when that estimate ends sooner. The
  // estimate sees neither the weights' read ports nor what the passes'
  // rows wait for, so this is a variant (earliest-planes), not the
  // default: ResNet-50's convolutions were slower with it, BERT's feed-
  // forward blocks faster.
  bool earliest = false;
  const bool wholeTiles = llvm::all_of(partsOf, [&](const std::vector<Part> &parts) {
    return llvm::all_of(parts, [&](const Part &part) {
      return llvm::all_of(part.tiles, [&](const Piece &piece) { return piece.rows == tileRows(piece.t); });
    });
  });
  if (wholeTiles) {
    const int64_t passes = int64_t(work.aPieces) + work.bPieces - 1;
    std::vector<std::pair<int64_t, int64_t>> ready(size_t(jobs * kt), {0, 0});
    for (int64_t job = 0; job < jobs; ++job) {
      const int64_t b = job / (nt * blocks), m0 = job % blocks * blockRows,
                    mRows = std::min(blockRows, mPerBatch - m0);
      for (int64_t t = 0; t < kt && work.rowReady; ++t) {
        int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
        for (int64_t m = 0; m < mRows; ++m) {
          const int64_t at = work.rowReady(b, m0 + m, t);
          first = std::min(first, at);
          last = std::max(last, at);
        }
        ready[size_t(job * kt + t)] = {first, last};
      }
    }
    struct Planes {
      std::vector<int64_t> free, lastStart;
    };
    auto fresh = [&] {
      Planes s;
      for (unsigned p = 0; p < P; ++p) {
        s.free.push_back(mxm.state(p).lastMm + 1);
        s.lastStart.push_back(mxm.state(p).lastIw);
      }
      return s;
    };
    // When plane p would end a pass of K-tile t of `job` (its weights
    // loaded while the plane's pass before runs, a row a cycle), and when
    // it would start it.
    auto pass = [&](const Planes &s, unsigned p, int64_t job, int64_t t) {
      const int64_t m0 = job % blocks * blockRows, mRows = std::min(blockRows, mPerBatch - m0);
      const auto [first, last] = ready[size_t(job * kt + t)];
      const int64_t start = std::max({s.free[p], first, s.lastStart[p] + tileRows(t) + iwLatency});
      return std::make_pair(std::max(start + mRows * passes * mmIssue, last + mmIssue), start);
    };
    auto estimate = [&](const std::vector<std::vector<Part>> &all) {
      Planes s = fresh();
      int64_t end = 0;
      for (int64_t job = 0; job < jobs; ++job)
        for (const Part &part : all[size_t(job)])
          for (const Piece &piece : part.tiles) {
            const auto [done, start] = pass(s, part.plane, job, piece.t);
            s.free[part.plane] = done;
            s.lastStart[part.plane] = start;
            end = std::max(end, done);
          }
      return end;
    };
    std::vector<std::vector<Part>> first(static_cast<size_t>(jobs));
    Planes s = fresh();
    for (int64_t job = 0; job < jobs; ++job) {
      const int64_t b = job / (nt * blocks), j = job / blocks % nt;
      std::vector<Part> &parts = first[size_t(job)];
      for (int64_t t = 0; t < kt; ++t) {
        if (!used(b, t, j))
          continue;
        // A plane that holds an earlier part of the job is not taken
        // again: each part accumulates into the job's rows on its plane.
        std::optional<unsigned> best;
        int64_t bestDone = 0, bestStart = 0;
        for (unsigned k = 0; k < P; ++k) {
          const unsigned p = mxm.plane(k);
          const bool last = !parts.empty() && parts.back().plane == p;
          if (!last && llvm::any_of(parts, [&](const Part &q) { return q.plane == p; }))
            continue;
          const auto [done, start] = pass(s, p, job, t);
          if (!best || done < bestDone || (done == bestDone && last)) {
            best = p;
            bestDone = done;
            bestStart = start;
          }
        }
        s.free[*best] = bestDone;
        s.lastStart[*best] = bestStart;
        if (parts.empty() || parts.back().plane != *best)
          parts.push_back(Part{*best, {}});
        parts.back().tiles.push_back(Piece{t, 0, tileRows(t)});
      }
    }
    if (estimate(first) < estimate(partsOf)) {
      ctx.heuristicsDecided.earliestPlanes = true;
      if (ctx.heuristics.earliestPlanes) {
        partsOf = std::move(first);
        earliest = true;
      }
    }
  }
  {
    // The plan: how the planes share the jobs.
    bool balancedParts = false;
    for (const std::vector<Part> &parts : partsOf)
      for (const Part &part : parts)
        for (const Piece &piece : part.tiles)
          balancedParts |= piece.rows < tileRows(piece.t);
    std::string how = std::to_string(jobs) + (jobs == 1 ? " job" : " jobs") + " of " + std::to_string(kt) +
                      " K-tile" + (kt == 1 ? "" : "s") + " (";
    const int64_t jobRows = std::min(blockRows, mPerBatch);
    how += std::to_string(jobRows) + (jobRows == 1 ? " row" : " rows") + " each) on " + std::to_string(P) +
           " planes: ";
    if (earliest)
      how += "K-tiles to the planes that finish them first";
    else if (dealt)
      how += "K-tiles dealt in turn";
    else if (cut > 1)
      how += "K cut in " + std::to_string(cut) + (balancedParts ? " ranges of equal rows" : " parts");
    else if (work.batchesInBlocks)
      how += "whole jobs, each plane a block of batches";
    else
      how += "whole jobs";
    // K-tiles that would add only zeros (work.tileUsed) are left out.
    int64_t multiplied = 0;
    for (const std::vector<Part> &parts : partsOf)
      for (const Part &part : parts)
        multiplied += int64_t(part.tiles.size());
    if (multiplied < jobs * kt)
      how += ", " + std::to_string(multiplied) + " of the " + std::to_string(jobs * kt) +
             " job K-tiles multiplied (the rest add only zeros)";
    ctx.decide(op, std::move(how));
  }
  const int64_t accBlock = std::min(blockRows, mPerBatch);
  unsigned job = 0;
  std::vector<const TensorView *> reads;
  MatmulSpans spans;
  spans.planes.resize(mxm.count());
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t j = 0; j < nt; ++j)
      for (int64_t m0 = 0; m0 < mPerBatch; m0 += blockRows, ++job) {
        int64_t mRows = std::min(blockRows, mPerBatch - m0);
        const std::vector<Part> &parts = partsOf[job];
        spans.cutJobs |= parts.size() > 1;
        // The order the rows go through the planes and out of the
        // accumulators.
        std::vector<int64_t> order;
        if (work.rowOrder)
          order = work.rowOrder(b, m0, mRows);
        else
          for (int64_t m = 0; m < mRows; ++m)
            order.push_back(m);
        // The job's accumulator rows: from 0, or when dealt (or given to
        // the planes that finish first) a block of their own.
        const int64_t acc0 = dealt || earliest ? int64_t(job) % (accRows / accBlock) * accBlock : 0;
        // mmDone[q][m]: when row m's last mm of part q has landed (-1: the
        // part multiplied nothing).
        std::vector<std::vector<int64_t>> mmDone;
        for (size_t q = 0; q < parts.size(); ++q) {
          const unsigned p = parts[q].plane;
          mmDone.emplace_back(size_t(mRows), -1);
          PlaneState &st = mxm.state(p);
          for (const Piece &piece : parts[q].tiles)
            for (int wp = 0; wp < work.bPieces; ++wp) {
              const int64_t t = piece.t;
              // Weight rows of this K-tile (its piece wp) into the buffer,
              // in row order.
              int64_t lastLw = st.lastIw;
              const int64_t loads = work.rowsLoaded ? work.rowsLoaded(b, t, j) : piece.rows;
              spans.fewestRows = spans.fewestRows ? std::min(spans.fewestRows, loads) : loads;
              for (int64_t r = 0; r < loads; ++r) {
                WorkTree tree = mxm.loadWeights(p);
                reads.clear();
                tree.nodes[0].inputs = {work.weightRow(tree, b, t, piece.r0 + r, j, p, wp, reads)};
                std::optional<Placement> placed = ctx.placer().place(std::move(tree), 0, lastLw + 1);
                if (!placed)
                  return cannotPlace(op, ctx);
                Placement pl = *placed;
                lastLw = pl.rootCycle;
                spans.lw.note(pl);
                for (const TensorView *v : reads)
                  ctx.read(*v, pl.doneCycle);
              }
              // Install once the rows are in and the previous weight set's
              // matmuls have issued (they use the old weights).
              int64_t iwCycle = mxm.install(p, lastLw);
              // A's pieces through this weight piece: all through the first,
              // the first through the second.
              const int aPieces = wp == 0 ? work.aPieces : 1;
              spans.planes[p].installs += 1;
              spans.planes[p].mms += mRows * aPieces;
              const std::vector<int64_t> &passOrder =
                  work.rowChunk ? inTurns(work, b, m0, t, std::max(iwCycle + iwLatency, st.lastMm + 1),
                                          aPieces * mmIssue, order)
                                : order;
              for (int64_t m : passOrder)
                for (int ap = 0; ap < aPieces; ++ap) {
                  if (work.rowUsed && !work.rowUsed(b, m0 + m, t))
                    continue;
                  WorkTree tree = mxm.matmul(p, acc0 + m);
                  reads.clear();
                  int a = work.aVector(tree, b, m0 + m, t, p, ap, reads);
                  if (piece.rows < tileRows(t))
                    a = subTile(tree, a, unsigned(piece.r0), unsigned(piece.rows), p, mxm.count(),
                                chip.lanes, work.dtype);
                  tree.nodes[0].inputs = {a};
                  int64_t rootNotBefore = std::max({iwCycle + iwLatency, st.lastMm + 1,
                                                    mmDone[q][size_t(m)] < 0 ? st.accFree[size_t(acc0 + m)] : 0});
                  std::optional<Placement> placed = ctx.placer().place(std::move(tree), 0, rootNotBefore);
                  if (!placed)
                    return cannotPlace(op, ctx);
                  Placement pl = *placed;
                  st.lastMm = std::max(st.lastMm, pl.rootCycle);
                  spans.mm.note(pl);
                  mmDone[q][size_t(m)] = std::max(mmDone[q][size_t(m)], pl.rootCycle + mmLatency);
                  for (const TensorView *v : reads)
                    ctx.read(*v, pl.doneCycle);
                }
            }
        }
        // Read the accumulators out into C (in turns: as the rows are done).
        std::vector<int64_t> outOrder = order;
        if (work.rowChunk) {
          auto doneAt = [&](int64_t m) {
            int64_t at = 0;
            for (const std::vector<int64_t> &d : mmDone)
              at = std::max(at, d[size_t(m)]);
            return at;
          };
          std::stable_sort(outOrder.begin(), outOrder.end(),
                           [&](int64_t x, int64_t y) { return doneAt(x) < doneAt(y); });
        }
        for (int64_t m : outOrder) {
          int64_t crow = b * mPerBatch + m0 + m;
          const int64_t yrow = work.cRow ? work.cRow(crow) : crow;
          WorkTree tree;
          tree.write(C.slices(yrow), C.address(yrow, j), -1);
          std::vector<int> accs;
          std::vector<size_t> accPart;
          for (size_t q = 0; q < parts.size(); ++q)
            if (mmDone[q][size_t(m)] >= 0) {
              accs.push_back(mxm.accRead(tree, parts[q].plane, acc0 + m));
              accPart.push_back(q);
            }
          if (accs.empty()) {
            // No mm touched the row (work.rowUsed): its cleared
            // accumulator reads 0, once the row's last reader has read it.
            accs.push_back(mxm.accRead(tree, parts[0].plane, acc0 + m));
            accPart.push_back(0);
            mmDone[0][size_t(m)] = mxm.state(parts[0].plane).accFree[size_t(acc0 + m)];
          }
          int value = accs[0];
          for (size_t q = 1; q < accs.size(); ++q) {
            Instr add;
            add.op = Opcode::Add;
            add.dtype = mxm.accType();
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
          ctx.written(C, yrow, j, pl.doneCycle - 1);
          for (const TensorView *v : reads)
            ctx.read(*v, pl.doneCycle);
        }
      }
  return spans;
}

namespace {
/// The rows of each of `op`'s row slices when its every use is a slice of
/// whole rows and they cut it into chunks of one size (a partial sum cut
/// for the chips of a reduce-scatter); 0 otherwise.
int64_t sliceChunk(const ir::Op &op, const LoweringContext &ctx) {
  auto it = ctx.users.find(&op);
  if (it == ctx.users.end() || it->second.size() < 2 || op.type().shape.size() != 2)
    return 0;
  int64_t chunk = 0;
  for (const ir::Op *u : it->second) {
    if (u->kind() != ir::OpKind::Slice || u->type().shape.back() != op.type().shape.back())
      return 0;
    const int64_t rows = u->type().shape.front();
    auto start = u->intsAttr("start");
    if (!start || start->empty() || (*start)[0] % rows != 0 || (chunk && rows != chunk))
      return 0;
    chunk = rows;
  }
  return chunk;
}


/// The order of A's rows first..first+rows-1 through the planes (as
/// offsets from `first`): as they become ready, every K-tile of the row,
/// row order on a tie. Rows received from other chips, a chunk per link,
/// are multiplied as they land rather than in row order behind the last
/// chunk to arrive.
std::vector<int64_t> streamOrder(const ir::Op &op, const TensorView &A, int64_t first, int64_t rows,
                                 const LoweringContext &ctx) {
  const int64_t kt = (op.operand(0)->type().shape.back() + ctx.chip().mxmDim - 1) / ctx.chip().mxmDim;
  std::vector<int64_t> ready(size_t(rows), 0), order;
  for (int64_t m = 0; m < rows; ++m) {
    order.push_back(m);
    for (int64_t t = 0; t < kt; ++t)
      ready[size_t(m)] = std::max(ready[size_t(m)], A.readyAt(first + m, t));
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return ready[size_t(x)] < ready[size_t(y)]; });
  return order;
}
} // namespace

/// The rows of the chunks `op`'s rows are taken in turns by (sliceChunk),
/// or, when its one use leads through ops that keep each row its own (a
/// reshape or transpose that keeps the last axis and the rows, a convert,
/// an elementwise op, a softmax over the last axis) to the rows of a
/// matmul that takes them in turns, that matmul's chunks: the scores and
/// context of a head on a chip feed an output projection whose sums go
/// out a chunk per link, and a pass in row order there leaves the last
/// chunk's link waiting for the last rows of attention.
int64_t turnChunk(const ir::Op &op, const LoweringContext &ctx, int depth) {
  if (const int64_t chunk = sliceChunk(op, ctx))
    return chunk;
  auto flatRows = [](const ir::Type &t) {
    const int64_t cols = t.shape.empty() ? 1 : t.shape.back();
    return cols > 0 ? t.numElements() / cols : 0;
  };
  const int64_t rows = flatRows(op.type());
  const ir::Op *cur = &op;
  for (int steps = 0; steps < 16 && depth < 4; ++steps) {
    auto it = ctx.users.find(cur);
    if (it == ctx.users.end() || it->second.size() != 1 || ctx.returned.count(cur))
      return 0;
    const ir::Op *u = it->second.front();
    if (u->kind() == ir::OpKind::Matmul) {
      if (u->operand(0) != cur || u->operand(1) == cur || flatRows(u->type()) != rows)
        return 0;
      return turnChunk(*u, ctx, depth + 1);
    }
    const bool rowWise = u->kind() == ir::OpKind::Reshape || u->kind() == ir::OpKind::Transpose ||
                         u->kind() == ir::OpKind::Convert || u->kind() == ir::OpKind::Softmax ||
                         ir::isElementwise(u->kind());
    if (!rowWise || u->type().shape.empty() || cur->type().shape.empty() ||
        u->type().shape.back() != cur->type().shape.back() || flatRows(u->type()) != rows)
      return 0;
    if (u->kind() == ir::OpKind::Transpose) {
      // Only axes of one element move: every row stays where it was.
      std::vector<int64_t> before, after;
      for (int64_t d : cur->type().shape)
        if (d != 1)
          before.push_back(d);
      for (int64_t d : u->type().shape)
        if (d != 1)
          after.push_back(d);
      if (before != after)
        return 0;
    }
    cur = u;
  }
  return 0;
}

llvm::Error lowerMatmul(const ir::Op &op, LoweringContext &ctx) {
  const ChipDescription &chip = ctx.chip();
  const ir::Op &lhs = *op.operand(0), &rhs = *op.operand(1);
  const DType inType = lhs.type().dtype, outType = op.type().dtype;
  // i8 x i8 runs at the int8 rate into i32 sums, which are the result.
  const bool int8 = inType == DType::I8 && outType == DType::I32;
  if (!tensor::isFloat(inType) && !int8)
    return refuse<Refusal::MatmulOperandDtype>(op, inType);
  if (!tensor::isFloat(outType) && !int8)
    return refuse<Refusal::OperandDtype>(op, outType);
  const DType mxmType = int8 ? DType::I8 : DType::F16;
  const std::vector<int64_t> &as = lhs.type().shape, &bs = rhs.type().shape;
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < bs.size(); ++i)
    batches *= bs[i];
  int64_t rowsA = 1;
  for (size_t i = 0; i + 1 < as.size(); ++i)
    rowsA *= as[i];
  int64_t mPerBatch = batches > 1 ? M : rowsA; // rows of A per batch
  // f16 widened to f32 (LoweringContext::widenedOnRead) is read as the
  // f16 it is: one piece, neither stored twice nor scaled.
  auto stored = [&](const ir::Op &x) -> const ir::Op & {
    return ctx.widenedOnRead(&x) ? *x.operand(0) : x;
  };
  // Weights computed from parameters on the way into the MXM (an i8
  // weight dequantized: LoweringContext::weightPrologue) have no view:
  // each weight row is its group's tree.
  const bool prologue = ctx.weightPrologue(&rhs);
  // (B stands for A then, and is never read.)
  const TensorView &A = ctx.view(&stored(lhs)), &B = ctx.view(prologue ? &lhs : &stored(rhs));
  if (prologue) {
    WorkTree probe;
    std::vector<const TensorView *> probeReads;
    if (auto n = buildGroup(probe, rhs, 0, 0, ctx, probeReads); !n)
      return n.takeError();
  }
  // The policy packs only weights (scheduler/Scheduler.cpp, packable): A
  // is read a row vector at a time as rows.
  if (A.packed())
    return refuse<Refusal::PackedOperand>(op, "a left operand");
  if (int8 && B.packed())
    return refuse<Refusal::PackedOperand>(op, "i8 weights");
  // Elementwise work on the result (a bias, an activation) runs in the
  // accumulator reads' trees, and its result is what gets written.
  const ir::Op *epilogue = epilogueRoot(op, ctx);
  auto out = ctx.define(epilogue ? epilogue : &op);
  if (!out)
    return out.takeError();
  TensorView &C = **out;
  const unsigned dim = chip.mxmDim, planes = chip.mxmPlanes, lanes = chip.lanes;

  // f32 and bf16 operands: every row of A and column of B scaled by a power
  // of two into f16's range before it is cut into pieces, the product
  // scaled back as it is read out (docs/scheduler.md, "f32 and bf16
  // matmuls").
  const bool scaleA = scaledOperand(lhs), scaleB = scaledOperand(rhs);
  if (scaleB && B.packed())
    return refuse<Refusal::PackedOperand>(op, "f32 or bf16 weights");
  std::optional<TensorView> consts, rowScale, colScale;
  if (scaleA || scaleB) {
    std::vector<uint16_t> avoid = A.allSlices();
    avoid.insert(avoid.end(), B.allSlices().begin(), B.allSlices().end());
    auto c = ctx.constant(op, DType::I32, 3, lanes, scaleConstants(lanes), avoid);
    if (!c)
      return c.takeError();
    consts = *c;
    // B's first: its chain reads B's slices every cycle for K cycles, a
    // window A's fold would break into.
    if (scaleB) {
      auto sb = columnScales(op, ctx, B, batches, K, N, *consts, avoid);
      if (!sb)
        return sb.takeError();
      colScale = *sb;
    }
    if (scaleA) {
      auto sa = rowScales(op, ctx, A, *consts);
      if (!sa)
        return sa.takeError();
      rowScale = *sa;
    }
  }
  // An operand's vector as it goes into f16Piece: scaled (f32), or as it
  // is stored. `read` reads the stored vector.
  auto scaled = [&](WorkTree &tree, const TensorView &X, const std::optional<TensorView> &scale,
                    int64_t srow, int64_t svec, const std::function<int()> &read) {
    int x = read();
    if (!scale)
      return x;
    if (X.dtype != DType::F32)
      x = tree.add(reduce::vxm(Opcode::Cvt, X.dtype, DType::F32), {x});
    int s = tree.read(scale->slices(srow), scale->address(srow, svec));
    tree.nodes[size_t(s)].notBefore = scale->readyAt(srow, svec);
    return tree.add(reduce::vxm(Opcode::Mul, DType::F32), {x, s});
  };

  MatmulWork work;
  work.dtype = mxmType;
  work.batches = batches;
  work.rows = mPerBatch;
  work.K = K;
  work.N = N;
  work.aPieces = piecesOf(lhs);
  work.bPieces = piecesOf(rhs);
  work.weightRow = [&](WorkTree &tree, int64_t b, int64_t t, int64_t r, int64_t j, unsigned p, int piece,
                       std::vector<const TensorView *> &reads) {
    int64_t brow = b * K + t * dim + r;
    if (prologue) {
      // Checked above (the probe): the group builds for every row.
      return llvm::cantFail(buildGroup(tree, rhs, brow, j, ctx, reads));
    }
    reads.push_back(&B);
    if (colScale)
      reads.push_back(&*colScale);
    int x = f16Piece(tree, colScale ? DType::F32 : B.dtype, piece, [&] {
      return scaled(tree, B, colScale, b, j, [&] {
        const size_t first = tree.nodes.size();
        int v = B.packed() ? packedWeight(tree, B, brow, j, p, planes, lanes)
                           : tree.read(B.slices(brow), B.address(brow, j));
        // The read nodes (packed: the segment's vectors) wait for the row
        // to be written.
        for (size_t n = first; n < tree.nodes.size(); ++n)
          if (tree.nodes[n].instr.op == Opcode::Read)
            tree.nodes[n].notBefore = std::max(tree.nodes[n].notBefore, B.readyAt(brow, j));
        return v;
      });
    });
    return x;
  };
  work.aVector = [&](WorkTree &tree, int64_t b, int64_t m, int64_t t, unsigned p, int piece,
                     std::vector<const TensorView *> &reads) {
    int64_t arow = b * mPerBatch + m;
    int64_t rowsK = std::min<int64_t>(dim, K - t * dim);
    reads.push_back(&A);
    if (rowScale)
      reads.push_back(&*rowScale);
    int x = f16Piece(tree, rowScale ? DType::F32 : A.dtype, piece, [&] {
      return scaled(tree, A, rowScale, arow, 0, [&] {
        int read = tree.read(A.slices(arow), A.address(arow, t));
        tree.nodes[size_t(read)].notBefore = A.readyAt(arow, t);
        return read;
      });
    });
    if (rowsK < int64_t(lanes) && !zeroPadded(stored(lhs)))
      x = zeroTail(tree, x, unsigned(rowsK), p, planes, lanes, mxmType);
    return x;
  };
  work.rowOrder = [&](int64_t b, int64_t m0, int64_t rows) {
    return streamOrder(op, A, b * mPerBatch + m0, rows, ctx);
  };
  work.rowChunk = batches == 1 ? turnChunk(op, ctx) : 0;
  work.balancedCut = batches == 1 && work.rowChunk == 0 && work.aPieces == 1 && work.bPieces == 1;
  if (batches >= int64_t(planes) && !prologue && !B.packed()) {
    std::set<int64_t> chunks;
    bool whole = true;
    for (int64_t b = 0; b < batches && whole; ++b) {
      whole = B.chunkOf(b * K) == B.chunkOf(b * K + K - 1);
      chunks.insert(B.chunkOf(b * K));
    }
    work.batchesInBlocks = whole && chunks.size() > 1;
  }
  work.rowReady = [&](int64_t b, int64_t m, int64_t t) { return A.readyAt(b * mPerBatch + m, t); };
  work.finish = [&](WorkTree &tree, int value, int64_t crow, int64_t j,
                    std::vector<const TensorView *> &reads) {
    // Scaled back: divisions by powers of two, exact (but past f32's
    // range), A's row's and then B's column's.
    auto unscale = [&](const std::optional<TensorView> &scale, int64_t srow, int64_t svec) {
      if (!scale)
        return;
      reads.push_back(&*scale);
      int s = tree.read(scale->slices(srow), scale->address(srow, svec));
      tree.nodes[size_t(s)].notBefore = scale->readyAt(srow, svec);
      value = tree.add(reduce::vxm(Opcode::Div, DType::F32), {value, s});
    };
    unscale(rowScale, crow, 0);
    unscale(colScale, crow / mPerBatch, j);
    if (outType != DType::F32 && !int8) {
      Instr cvt;
      cvt.op = Opcode::Cvt;
      cvt.dtype = DType::F32;
      cvt.dtype2 = outType;
      value = tree.add(cvt, {value});
    }
    if (epilogue)
      value = buildEpilogue(tree, *epilogue, op, value, crow, j, ctx, reads);
    return value;
  };
  auto spans = runMatmul(op, ctx, work, C);
  if (!spans)
    return spans.takeError();
  // Weights of several K-tiles stored a K-tile to a chunk or not matter
  // when a job's K-tiles went to several planes (Scheduler.cpp,
  // weightChunkRows; striped weights are cut finer already).
  ctx.heuristicsDecided.weightsByKTile |= spans->cutJobs && !ctx.striped &&
                                          rhs.kind() == ir::OpKind::Param && bs.size() == 2 &&
                                          K > int64_t(dim);
  for (const std::optional<TensorView> &scale : {rowScale, colScale})
    if (scale)
      ctx.releaseScratch(*scale);
  // A row of the result needs its A row through the plane, and the
  // weights loaded and installed: every row of a K-tile (B's first
  // min(K, dim) rows for the first tile of batch 0), loaded one a cycle on
  // the plane's queue, the shortest tile's count at least.
  const ir::Op &result = epilogue ? *epilogue : op;
  const int64_t iwLatency = chip.timingOf(Opcode::InstallWeights, mxmType).latency;
  const int64_t mmLatency = chip.timingOf(Opcode::MatMul, mxmType).latency;
  // A balanced cut's pieces load fewer rows than a K-tile.
  const int64_t fewest = spans->fewestRows > 0 ? spans->fewestRows : int64_t(dim);
  const int64_t tileRows = std::min<int64_t>({K, dim, fewest}),
                shortest = std::min(K - (K - 1) / dim * dim, fewest);
  // The first row's last mm at the earliest: A's row through the mm's
  // tree, the weights loaded and installed, the planes done with earlier
  // ops. With one batch of rows that fit the accumulators every job is a
  // column tile (or K part) of all the rows, and each weight set on a
  // plane multiplies every row in row order: the first row waits for every
  // plane the matmul takes and is done in each plane's last pass
  // (BERT-base's FFN down-projection passes seven or eight K-tiles on each
  // plane).
  const bool everyPlane = batches == 1 && mPerBatch <= int64_t(chip.mxmAccRows);
  const int64_t issue = chip.timingOf(Opcode::MatMul, mxmType).issue;
  // A plane's last pass is B's last piece, which takes this many of A's
  // pieces per row, each an mm.
  const int64_t lastPieces = work.bPieces > 1 ? 1 : work.aPieces;
  const int64_t firstMm = ctx.startOnPlanes(
      spans->planes,
      std::max(ctx.pathOf(lhs) + spans->mm.get() - mmLatency,
               std::max(ctx.pathOf(rhs) + shortest - 1, ctx.pathOfRows(rhs, tileRows)) +
                   spans->pathFromB(iwLatency, mmLatency) - mmLatency - spans->acc.get()),
      everyPlane ? (mPerBatch - 1) * lastPieces + 1 : 0);
  ctx.notePathEnd(result, firstMm + mmLatency + spans->acc.get());
  // One job's rows (per column tile) go through one plane's mm queue in
  // row order.
  if (everyPlane)
    ctx.notePace(result, issue * lastPieces, mPerBatch);
  return llvm::Error::success();
}

} // namespace lpu::scheduler
