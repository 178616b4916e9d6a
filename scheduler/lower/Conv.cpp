// conv2d on the MXM, in the rows layout (NCHW: one input row x[n, c, h, :]
// per vector, W in lanes) without transposing activations: an input row,
// spread by the SXM into KW shifted (and strided, and zero-padded) copies,
// is installed as a KW-row weight block; a weight row w[o, c, kh, :] (KW in
// lanes, the OIHW rows as stored) streamed through it gives
// sum_kw w[o, c, kh, kw] x[n, c, h, wo * sw + kw * dw - pw] in every lane wo:
// the contribution of (c, kh) to output row (n, o, ho). Accumulator rows
// hold output rows (o, ho); installs go in ascending (c, h), so every output
// element adds its products in the im2col order (c, kh, kw), in fp32, and is
// converted to the result dtype on the way out. Groups only change which
// channels an output row reads. docs/scheduler.md, "Convolutions".
#include "scheduler/LayoutAssignment.h"
#include "scheduler/Lowering.h"
#include "scheduler/lower/ConvMaps.h"
#include "scheduler/lower/Reduce.h"

#include <llvm/ADT/ScopeExit.h>

#include <algorithm>

namespace lpu::scheduler {

using namespace backend;
using convmaps::Pair;

namespace {

/// An accumulator row (f32) as a result of `dtype`: converted, unless f32.
int fromAccumulator(WorkTree &tree, int value, DType dtype) {
  if (dtype == DType::F32)
    return value;
  Instr cvt;
  cvt.op = Opcode::Cvt;
  cvt.dtype = DType::F32;
  cvt.dtype2 = dtype;
  return tree.add(cvt, {value});
}

/// Whether the packed rows layout (lowerConvPackedRows) is expected to
/// keep the MXM planes busy for fewer cycles than one install per input
/// row: its `mm` count is O * Ho * ceil(C/groups * KH * KW / 320) per
/// image, one per output row and 320 of the contracted (c, kh, kw) rows,
/// where one install per input row streams one `mm` per (o, ho, c, kh);
/// it loads KH / stride times the rows. Each install also costs its
/// latency on the plane.
bool packedRowsPay(const ir::Op &op, const ChipDescription &chip) {
  const std::vector<int64_t> &xs = op.operand(0)->type().shape, &ws = op.operand(1)->type().shape,
                             &ys = op.type().shape;
  const int64_t N = xs[0], C = xs[1], H = xs[2];
  const int64_t O = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3], Ho = ys[2];
  const int64_t groups = op.intAttr("groups").value_or(1);
  const int64_t dim = chip.mxmDim;
  const int64_t issue = chip.timingOf(Opcode::MatMul, DType::F16).issue;
  const int64_t iw = chip.timingOf(Opcode::InstallWeights, DType::F16).latency;
  const int64_t kt = (Cg * KH * KW + dim - 1) / dim;
  const int64_t packedMm = N * O * Ho * kt, packedLw = N * groups * Ho * Cg * KH * KW;
  const int64_t packedInstalls = N * groups * Ho * kt;
  const int64_t rowMm = N * O * Ho * Cg * KH, rowLw = N * C * H * KW, rowInstalls = N * C * H;
  const int64_t packed = std::max(packedMm * issue, packedLw) + packedInstalls * iw;
  const int64_t rows = std::max(rowMm * issue, rowLw) + rowInstalls * iw;
  return packed <= rows;
}

} // namespace

bool rowsFarCheaperThanChannelsLast(const ir::Op &op, const ChipDescription &chip,
                                    int64_t advantage) {
  const std::vector<int64_t> &xs = op.operand(0)->type().shape, &ws = op.operand(1)->type().shape,
                             &ys = op.type().shape;
  const int64_t N = xs[0], C = xs[1], O = ws[0], KH = ws[2], KW = ws[3], Ho = ys[2], Wo = ys[3];
  const int64_t dim = chip.mxmDim, planes = chip.mxmPlanes;
  // i8 multiplies at the int8 rate in both forms (the rows layout's
  // packed form only).
  const DType mm = op.operand(0)->type().dtype == DType::I8 ? DType::I8 : DType::F16;
  const int64_t issue = chip.timingOf(Opcode::MatMul, mm).issue;
  if (Wo > int64_t(chip.lanes) || xs[3] > int64_t(chip.lanes))
    return false; // the rows layout takes rows of one vector
  // Channels-last: one mm per output pixel, kernel offset and tile of
  // input and of output channels, shared by the planes.
  const int64_t channelsLast =
      N * Ho * Wo * KH * KW * ((C + dim - 1) / dim) * ((O + dim - 1) / dim) * issue / planes;
  // Packed rows: its mm shared by the planes; each installed row a read
  // of the image, which one slice's port serves.
  const int64_t kt = (C * KH * KW + dim - 1) / dim;
  const int64_t rows = std::max(N * O * Ho * kt * issue / planes, N * Ho * C * KH * KW);
  return rows * advantage < channelsLast;
}

namespace {

/// conv2d in the rows layout with the contraction packed: for each output
/// row (n, g, ho) the plane installs, as weight rows, the input rows under
/// it at every (c, kh, kw) of the group's kernel (input row (n, c, hi),
/// hi = ho * sh + kh * dh - ph, spread by the SXM's distribute to put
/// column wo * sw + kw * dw - pw in lane wo; a row in the padding is
/// zeros), 320 rows to a K-tile, and streams each output channel's
/// weights as one vector of those (c, kh, kw) (the reshape of its
/// [C/groups, KH, KW] to one row, `rowWeights`): one `mm` per output row
/// and K-tile gives all Wo columns of output row (n, o, ho). It is a
/// batched matmul (runMatmul): batch (n, g, ho), A the [O/groups, K]
/// weights, B the installed [K, Wo] rows; every output element adds its
/// products in the im2col order (c, kh, kw).
llvm::Error lowerConvPackedRows(const ir::Op &op, LoweringContext &ctx, const ir::Op &rowWeights) {
  const ChipDescription &chip = ctx.chip();
  const ir::Op &xin = *op.operand(0), &win = *op.operand(1);
  const std::vector<int64_t> &xs = xin.type().shape, &ws = win.type().shape, &ys = op.type().shape;
  const int64_t C = xs[1], H = xs[2], W = xs[3];
  const int64_t N = xs[0], O = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t Ho = ys[2], Wo = ys[3];
  const Pair stride = convmaps::pairAttr(op, "stride", {1, 1});
  const Pair pad = convmaps::pairAttr(op, "padding", {0, 0});
  const Pair dil = convmaps::pairAttr(op, "dilation", {1, 1});
  const int64_t groups = op.intAttr("groups").value_or(1), Og = O / groups;
  const unsigned lanes = chip.lanes, dim = chip.mxmDim, planes = chip.mxmPlanes;
  const int64_t K = Cg * KH * KW;
  // i8 input rows installed and i8 weight vectors streamed: the MXM's int8
  // mode, exact i32 sums that are the result ("Int8 matmuls").
  const bool int8 = xin.type().dtype == DType::I8;
  ctx.decide(op, "rows layout, packed: " + std::to_string(K) + " contracted rows (c, kh, kw) per output row, " +
                     std::to_string((K + dim - 1) / dim) + " K-tile(s)");

  // The weights as rows of K, made once (a lane move of the declared
  // [O, C/groups, KH, KW]) and kept.
  if (!ctx.hasView(&rowWeights)) {
    ctx.decide(win, "read as " + rowWeights.type().str() + " rows by the packed rows layout (a copy)");
    if (auto e = moveLanes(rowWeights, ctx))
      return e;
  }
  const TensorView &X = ctx.view(&xin), &Wr = ctx.view(&rowWeights);
  // Map rows 0..KW-1: column kw of the window into every output lane; row
  // KW: all zeros (an input row in the padding).
  std::vector<uint8_t> mapBytes =
      convmaps::laneMaps(KW, stride.w, dil.w, pad.w, W, Wo, lanes, false);
  for (unsigned l = 0; l < lanes; ++l) {
    mapBytes.push_back(uint8_t(lanes & 0xff));
    mapBytes.push_back(uint8_t(lanes >> 8));
  }
  std::vector<uint16_t> avoid = X.allSlices();
  auto maps = ctx.constant(op, DType::I16, KW + 1, lanes, mapBytes, avoid);
  if (!maps)
    return maps.takeError();
  const TensorView &M = *maps;
  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &Y = **out;

  struct Batch {
    int64_t n, g, ho;
  };
  auto batchOf = [&](int64_t b) { return Batch{b / (groups * Ho), b / Ho % groups, b % Ho}; };
  MatmulWork work;
  work.dtype = int8 ? DType::I8 : DType::F16;
  work.batches = N * groups * Ho;
  work.rows = Og;
  work.K = K;
  work.N = Wo;
  work.weightRow = [&](WorkTree &tree, int64_t b, int64_t t, int64_t r, int64_t, unsigned p, int,
                       std::vector<const TensorView *> &reads) {
    const Batch at = batchOf(b);
    const int64_t k = t * dim + r, c = at.g * Cg + k / (KH * KW), kh = k / KW % KH, kw = k % KW;
    const int64_t hi = at.ho * stride.h - pad.h + kh * dil.h;
    const bool inside = hi >= 0 && hi < H;
    // A row in the padding: any row of the image through the zeros' map.
    const int64_t xrow = (at.n * C + c) * H + (inside ? hi : 0), mapRow = inside ? kw : KW;
    const int spread = convmaps::distribute(tree, X, xrow, M, mapRow, p >= planes / 2);
    tree.nodes[size_t(tree.nodes[size_t(spread)].inputs[0])].notBefore = X.readyAt(xrow, 0);
    reads.push_back(&X);
    reads.push_back(&M);
    return spread;
  };
  work.aVector = [&](WorkTree &tree, int64_t b, int64_t m, int64_t t, unsigned, int,
                     std::vector<const TensorView *> &reads) {
    // The reshape's lanes past K are zeros, as the installed rows past
    // the K-tile's are.
    const int64_t o = batchOf(b).g * Og + m;
    const int read = tree.read(Wr.slices(o), Wr.address(o, t));
    tree.nodes[size_t(read)].notBefore = Wr.readyAt(o, t);
    reads.push_back(&Wr);
    return read;
  };
  work.finish = [&](WorkTree &tree, int value, int64_t, int64_t, std::vector<const TensorView *> &) {
    return int8 ? value : fromAccumulator(tree, value, Y.dtype);
  };
  work.cRow = [&](int64_t crow) {
    const Batch at = batchOf(crow / Og);
    return (at.n * O + at.g * Og + crow % Og) * Ho + at.ho;
  };
  auto spans = runMatmul(op, ctx, work, Y);
  if (!spans)
    return spans.takeError();
  ctx.notePath(op, spans->pathFromA());
  return llvm::Error::success();
}

} // namespace

llvm::Error lowerConv(const ir::Op &op, LoweringContext &ctx) {
  const ChipDescription &chip = ctx.chip();
  const ir::Op &xin = *op.operand(0), &win = *op.operand(1);
  // i8 x i8 into i32: the packed form only (the MXM's int8 mode); the
  // install-per-row form multiplies f16.
  const bool int8 = xin.type().dtype == DType::I8 && win.type().dtype == DType::I8 &&
                    op.type().dtype == DType::I32;
  if (!int8 && (xin.type().dtype != DType::F16 || win.type().dtype != DType::F16))
    return refuse<Refusal::ConvOperandDtype>(
        op, xin.type().dtype != DType::F16 ? xin.type().dtype : win.type().dtype);
  const std::vector<int64_t> &xs = xin.type().shape, &ws = win.type().shape, &ys = op.type().shape;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t O = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t Ho = ys[2], Wo = ys[3];
  const Pair stride = convmaps::pairAttr(op, "stride", {1, 1});
  const Pair pad = convmaps::pairAttr(op, "padding", {0, 0});
  const Pair dil = convmaps::pairAttr(op, "dilation", {1, 1});
  const int64_t groups = op.intAttr("groups").value_or(1);
  const unsigned lanes = chip.lanes;
  if (W > int64_t(lanes) || Wo > int64_t(lanes))
    return refuse<Refusal::RowsWiderThanVector>(op, lanes);
  if (KW > int64_t(chip.mxmDim))
    return refuse<Refusal::KernelWiderThanMxm>(op, KW, chip.mxmDim);
  if (groups < 1 || C % groups || O % groups || Cg * groups != C)
    return refuse<Refusal::InconsistentGroups>(op, groups, C, O);
  const int64_t Og = O / groups;

  if (auto packed = ctx.convRowWeights.find(&win);
      packed != ctx.convRowWeights.end() && (int8 || packedRowsPay(op, chip)))
    return lowerConvPackedRows(op, ctx, *packed->second);
  if (int8)
    return refuse<Refusal::ConvOperandDtype>(op, xin.type().dtype);

  ctx.decide(op, "rows layout, an install per input row: KW contracted rows");
  const TensorView &X = ctx.view(&xin), &Wt = ctx.view(&win);
  // A weight row's lanes from KW on meet weight-buffer rows that were not
  // loaded (0): a computed weight's padding lanes may be inf (1 / w).
  const bool zeroWeightTails = KW < int64_t(lanes) && !finitePaddingLanes(win, Wt, ctx);
  std::vector<uint16_t> avoid = X.allSlices();
  auto maps =
      ctx.constant(op, DType::I16, KW, lanes,
                   convmaps::laneMaps(KW, stride.w, dil.w, pad.w, W, Wo, lanes, false), avoid);
  if (!maps)
    return maps.takeError();
  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &Y = **out;

  MxmPlanes mxm(ctx);
  const unsigned planes = mxm.count();
  const int64_t accRows = mxm.accRows(), iwLatency = mxm.iwLatency(), mmLatency = mxm.mmLatency();

  // A job: output rows (o in a chunk, ho in a band) of one image and group,
  // on one plane; bands are cut so that the planes share the work.
  const int64_t oChunk = std::min(Og, accRows);
  const int64_t band = std::max<int64_t>(1, std::min((Ho + planes - 1) / planes, accRows / oChunk));
  unsigned job = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t o0 = 0; o0 < Og; o0 += oChunk)
        for (int64_t ho0 = 0; ho0 < Ho; ho0 += band, ++job) {
          unsigned p = job % planes;
          bool east = p >= planes / 2;
          PlaneState &st = mxm.state(p);
          const int64_t oRows = std::min(oChunk, Og - o0), hRows = std::min(band, Ho - ho0);
          std::vector<int64_t> mmDone(size_t(oRows * hRows), -1); // -1: untouched
          const int64_t hiFirst = std::max<int64_t>(0, ho0 * stride.h - pad.h);
          const int64_t hiLast =
              std::min(H - 1, (ho0 + hRows - 1) * stride.h - pad.h + (KH - 1) * dil.h);
          for (int64_t c = g * Cg; c < (g + 1) * Cg; ++c)
            for (int64_t hi = hiFirst; hi <= hiLast; ++hi) {
              // The (kh, output row of the band) pairs this input row feeds.
              std::vector<std::pair<int64_t, int64_t>> uses;
              for (int64_t kh = 0; kh < KH; ++kh) {
                int64_t t = hi + pad.h - kh * dil.h;
                if (t < 0 || t % stride.h)
                  continue;
                int64_t ho = t / stride.h;
                if (ho >= ho0 && ho < ho0 + hRows)
                  uses.push_back({kh, ho - ho0});
              }
              if (uses.empty())
                continue;
              // The KW shifted copies of the row into the weight buffer.
              const int64_t xrow = (n * C + c) * H + hi;
              int64_t lastLw = st.lastIw;
              for (int64_t kw = 0; kw < KW; ++kw) {
                WorkTree tree = mxm.loadWeights(p);
                tree.nodes[0].inputs = {convmaps::distribute(tree, X, xrow, *maps, kw, east)};
                auto placed = ctx.placer().place(std::move(tree), X.readyAt(xrow, 0), lastLw + 1);
                if (!placed)
                  return cannotPlace(op, ctx);
                lastLw = placed->rootCycle;
                ctx.read(X, placed->doneCycle);
              }
              int64_t iwCycle = mxm.install(p, lastLw);
              for (int64_t ol = 0; ol < oRows; ++ol) {
                const int64_t o = g * Og + o0 + ol;
                for (auto [kh, hl] : uses) {
                  const int64_t m = ol * hRows + hl;
                  const int64_t wrow = (o * Cg + (c - g * Cg)) * KH + kh;
                  WorkTree tree = mxm.matmul(p, m);
                  int w = tree.read(Wt.slices(wrow), Wt.address(wrow, 0));
                  if (zeroWeightTails)
                    w = zeroTail(tree, w, unsigned(KW), p, planes, lanes);
                  tree.nodes[0].inputs = {w};
                  int64_t rootNotBefore =
                      std::max({iwCycle + iwLatency, st.lastMm + 1,
                                mmDone[size_t(m)] < 0 ? st.accFree[size_t(m)] : int64_t(0)});
                  auto placed =
                      ctx.placer().place(std::move(tree), Wt.readyAt(wrow, 0), rootNotBefore);
                  if (!placed)
                    return cannotPlace(op, ctx);
                  st.lastMm = std::max(st.lastMm, placed->rootCycle);
                  mmDone[size_t(m)] = placed->rootCycle + mmLatency;
                  ctx.read(Wt, placed->doneCycle);
                }
              }
            }
          // Read the accumulator rows out into Y (an untouched row reads 0).
          for (int64_t ol = 0; ol < oRows; ++ol)
            for (int64_t hl = 0; hl < hRows; ++hl) {
              const int64_t m = ol * hRows + hl;
              const int64_t yrow = (n * O + g * Og + o0 + ol) * Ho + ho0 + hl;
              WorkTree tree;
              tree.write(Y.slices(yrow), Y.address(yrow, 0), -1);
              int value = mxm.accRead(tree, p, m);
              Instr cvt;
              cvt.op = Opcode::Cvt;
              cvt.dtype = DType::F32;
              cvt.dtype2 = Y.dtype;
              value = tree.add(cvt, {value});
              tree.nodes[0].inputs = {value};
              int64_t ready = std::max(
                  {mmDone[size_t(m)], st.accFree[size_t(m)], Y.storage->block.writableFrom});
              auto placed = ctx.placer().place(std::move(tree), ready);
              if (!placed)
                return cannotPlace(op, ctx);
              st.accFree[size_t(m)] = placed->firstCycle + 1;
              ctx.written(Y, yrow, 0, placed->doneCycle - 1);
            }
        }
  // The input reaches the output through an mm at least; the weights are
  // parameters, installed whenever their plane is free.
  ctx.notePath(op, mmLatency);
  return llvm::Error::success();
}

namespace {
/// The output pixels of a channels-last convolution's band: a band per
/// plane for each tile of output channels.
int64_t pixelBand(const ir::Op &op, const ChipDescription &chip) {
  const std::vector<int64_t> &ys = op.type().shape;
  const int64_t O = ys[1], pixels = ys[0] * ys[2] * ys[3], dim = chip.mxmDim;
  const int64_t oTiles = (O + dim - 1) / dim;
  const int64_t perTile = std::max<int64_t>(1, (int64_t(chip.mxmPlanes) + oTiles - 1) / oTiles);
  // Bands within the accumulator rows, a whole number per plane (25,088
  // pixels in bands of 4,096 would leave one plane one band of seven).
  int64_t bands = perTile;
  const int64_t accRows = std::max<int64_t>(1, chip.mxmAccRows);
  if ((pixels + bands - 1) / bands > accRows)
    bands = ((pixels + accRows - 1) / accRows + perTile - 1) / perTile * perTile;
  return (pixels + bands - 1) / bands;
}
} // namespace

namespace {
/// The `mm` cycles of a multiplication by one install of `op`: a band of
/// output pixels (`pixels` false), or every pixel the accumulators hold.
int64_t passCycles(const ir::Op &op, const ChipDescription &chip, bool pixels) {
  const std::vector<int64_t> &ys = op.type().shape;
  const DType mm = op.operand(0)->type().dtype == DType::I8 ? DType::I8 : DType::F16;
  const int64_t rows = pixels ? std::min<int64_t>(ys[0] * ys[2] * ys[3], std::max<int64_t>(1, chip.mxmAccRows))
                              : pixelBand(op, chip);
  return rows * chip.timingOf(Opcode::MatMul, mm).issue;
}

/// channelsLastConvCutsK with `rows` weight rows an install: when a band's
/// pass is over before they have loaded.
bool cutsFor(const ir::Op &op, const ChipDescription &chip, int64_t rows) {
  return passCycles(op, chip, false) < std::min<int64_t>(rows, chip.mxmDim);
}
} // namespace

int64_t convOffsetsPerTile(const ir::Op &op, const ChipDescription &chip, int64_t most) {
  const int64_t C = op.operand(0)->type().shape[1];
  const std::vector<int64_t> &ws = op.operand(1)->type().shape;
  const int64_t offsets = ws[2] * ws[3];
  int64_t room = chip.mxmDim;
  // An i8 `mm` issues every cycle, so a pass of few pixels is over before
  // a packed K-tile's rows have loaded, and the shifts and joins must keep
  // up with it: i8 packs only as many rows as the pass (a band of output
  // pixels, or every pixel when the planes cut the K-tiles) has `mm`. An
  // f16 `mm` holds its plane 4 cycles, and packs without that limit
  // (docs/scheduler.md, "Kernel offsets packed", has both measured).
  if (op.operand(0)->type().dtype == DType::I8)
    room = std::min(room, passCycles(op, chip, cutsFor(op, chip, C)));
  const int64_t per = std::min({room / std::max<int64_t>(C, 1), most, offsets});
  if (per <= 1)
    return 1;
  // As many K-tiles as `per` offsets a tile need, the offsets spread evenly
  // over them (9 offsets of 40 channels: 5 + 4, not 8 + 1).
  const int64_t tiles = (offsets + per - 1) / per;
  return (offsets + tiles - 1) / tiles;
}

bool channelsLastConvCutsK(const ir::Op &op, const ChipDescription &chip, int64_t mostOffsets) {
  // Packed, an install loads the rows of several offsets, and a single
  // K-tile is never cut: one plane would take it all.
  const int64_t per = convOffsetsPerTile(op, chip, mostOffsets);
  const std::vector<int64_t> &ws = op.operand(1)->type().shape;
  if (per > 1 && (ws[2] * ws[3] + per - 1) / per < 2)
    return false;
  return cutsFor(op, chip, op.operand(0)->type().shape[1] * per);
}

// Channels-last: X is [N*H*W pixel rows, C], the weights [KH*KW*C rows, O]
// (stored [KH, KW, C, O]), Y [N*Ho*Wo, O]. A matmul (runMatmul) of the
// N*Ho*Wo output pixel rows with K-tiles of (kernel offset (kh, kw), tile
// of 320 input channels): for K-tile t the weight rows are those of the
// offset's channels in the tile, and output pixel q streams the input
// pixel row the offset puts under it (none in the padding: that mm is
// skipped). So the planes share a convolution as they share a matmul:
// jobs of output channel tiles and blocks of accumulator rows, and with
// fewer jobs than planes the K-tiles cut over planes (each loading its own
// offsets' weights, the partial sums added as they are read). Every output
// element adds its products in fp32 in the order (kh, kw, c) (c ascending
// inside a tile; a cut adds the parts' sums in part order), where the
// reference's im2col order is (c, kh, kw): the sums agree within the
// matmul tolerance, not bit for bit.
llvm::Error lowerConvChannelsLast(const ir::Op &op, LoweringContext &ctx) {
  const ChipDescription &chip = ctx.chip();
  const ir::Op &xin = *op.operand(0), &win = *op.operand(1);
  const std::vector<int64_t> &xs = xin.type().shape, &ws = win.type().shape, &ys = op.type().shape;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t O = ws[0], KH = ws[2], KW = ws[3];
  const int64_t Ho = ys[2], Wo = ys[3];
  const Pair stride = convmaps::pairAttr(op, "stride", {1, 1});
  const Pair pad = convmaps::pairAttr(op, "padding", {0, 0});
  const Pair dil = convmaps::pairAttr(op, "dilation", {1, 1});
  auto staged = stageWindowInput(op, ctx, ctx.view(&xin), N * Ho * Wo * KH * KW,
                                 windowDeal(op, ctx.knobs));
  if (!staged)
    return staged.takeError();
  const TensorView &X = *staged ? **staged : ctx.view(&xin), &Wt = ctx.view(&win);
  auto release = llvm::make_scope_exit([&] {
    if (*staged)
      ctx.releaseScratch(**staged);
  });
  // i8 x i8 multiplies at the int8 rate into i32 sums, which are the
  // result (docs/scheduler.md, "Int8 matmuls"); its sums are exact, so
  // the order of the kernel offsets does not matter.
  const bool int8 = xin.type().dtype == DType::I8;
  // A pixel row's lanes past the tile's channels meet weight-buffer rows
  // that were not loaded (0): padding lanes computed as inf or NaN (an
  // rsqrt of the zeros there) would make every output NaN. An i8 row's
  // padding lanes are any integer, and times 0 add nothing.
  const bool zeroPixelTails = !int8 && !finitePaddingLanes(xin, X, ctx);
  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &Y = **out;

  const unsigned lanes = chip.lanes, planes = chip.mxmPlanes;
  const int64_t dim = chip.mxmDim;
  const int64_t cTiles = (C + dim - 1) / dim;
  // Kernel offsets packed into a K-tile (few input channels: ResNet-50's
  // 3x3 convolutions of 64 channels fill 64 of 320 weight rows an offset,
  // five offsets' 320): K-tile t holds offsets per * t on, offset
  // per * t + i's channels in lanes [i C, (i + 1) C) of the streamed
  // vector, which is the input pixel rows under the output pixel at those
  // offsets, each shifted up by i C lanes on the SXM and joined by a
  // bitwise `or` on the VXM (each row's lanes past C hold zeros: zeroed on
  // the way unless known to). Without packing (per = 1) K-tile t is
  // offset t / cTiles's tile t % cTiles of input channels.
  const int64_t per = convOffsetsPerTile(op, chip, ctx.knobs.packedOffsets), offsets = KH * KW;
  const int64_t kTiles = per > 1 ? (offsets + per - 1) / per : offsets * cTiles;
  auto firstOffset = [&](int64_t t) { return per > 1 ? t * per : t / cTiles; };
  auto offsetsIn = [&](int64_t t) { return per > 1 ? std::min(per, offsets - t * per) : int64_t(1); };
  auto tileRows = [&](int64_t t) { return per > 1 ? offsetsIn(t) * C : std::min(dim, C - t % cTiles * dim); };
  // The input pixel row under output pixel q at kernel offset o, or -1.
  auto inputRow = [&](int64_t q, int64_t o) -> int64_t {
    const int64_t kh = o / KW, kw = o % KW;
    const int64_t n = q / (Ho * Wo), ho = q / Wo % Ho, wo = q % Wo;
    const int64_t hi = ho * stride.h - pad.h + kh * dil.h, wi = wo * stride.w - pad.w + kw * dil.w;
    if (hi < 0 || hi >= H || wi < 0 || wi >= W)
      return -1;
    return (n * H + hi) * W + wi;
  };

  MatmulWork work;
  work.dtype = int8 ? DType::I8 : DType::F16;
  work.batches = 1;
  work.rows = N * Ho * Wo;
  work.K = kTiles * dim;
  work.N = O;
  // Bands of output pixels, one per plane for each tile of output
  // channels, when a band's mm per install (one per pixel) take as long as
  // loading the next install's weight rows: each plane then loads every
  // weight row of its tile of outputs, hidden under its mm. Else (few
  // pixels, many channels: ResNet-50's late layers) the planes cut the
  // K-tiles among them, each loading only its own offsets' weights.
  const bool cutsK = channelsLastConvCutsK(op, chip, ctx.knobs.packedOffsets);
  if (!cutsK)
    work.rowBlock = pixelBand(op, chip);
  ctx.decide(op, cutsK ? "channels-last, K-tiles (kernel offset, 320 channels) cut over the planes"
                       : "channels-last, a band of " + std::to_string(work.rowBlock) +
                             " output pixels per plane and output tile");
  if (per > 1)
    ctx.decide(op, "kernel offsets packed: " + std::to_string(per) + " offsets of " + std::to_string(C) +
                       " channels to a K-tile, " + std::to_string(kTiles) +
                       (kTiles == 1 ? " K-tile for " : " K-tiles for ") + std::to_string(offsets) + " offsets");
  // Its weights stored a K-tile to a chunk or whole (Scheduler.cpp,
  // weightChunkRows) matter when the planes cut its K-tiles.
  ctx.heuristicsDecided.weightsByKTile |= cutsK && win.kind() == ir::OpKind::Param && !ctx.striped && kTiles > 1;
  work.weightRow = [&](WorkTree &tree, int64_t, int64_t t, int64_t r, int64_t j, unsigned, int,
                       std::vector<const TensorView *> &reads) {
    // Rows (kh, kw, c): a packed K-tile's are its offsets' rows in order.
    const int64_t wrow = per > 1 ? firstOffset(t) * C + r : t / cTiles * C + t % cTiles * dim + r;
    const int read = tree.read(Wt.slices(wrow), Wt.address(wrow, j));
    tree.nodes[size_t(read)].notBefore = Wt.readyAt(wrow, j);
    reads.push_back(&Wt);
    return read;
  };
  work.rowsLoaded = [&](int64_t, int64_t t, int64_t) { return tileRows(t); };
  work.rowUsed = [&](int64_t, int64_t m, int64_t t) {
    for (int64_t o = firstOffset(t); o < firstOffset(t) + offsetsIn(t); ++o)
      if (inputRow(m, o) >= 0)
        return true;
    return false;
  };
  // Packed: a row's lanes past C land on the next offset's lanes, so they
  // must be zeros, not just finite.
  const bool zeroPackedTails = per > 1 && !zeroPaddingLanes(xin, X, ctx);
  const DType xType = X.dtype, bits = int8 ? DType::I8 : DType::I16;
  work.aVector = [&](WorkTree &tree, int64_t, int64_t m, int64_t t, unsigned p, int,
                     std::vector<const TensorView *> &reads) {
    reads.push_back(&X);
    if (per == 1) {
      const int64_t xrow = inputRow(m, firstOffset(t)), v = t % cTiles;
      int x = tree.read(X.slices(xrow), X.address(xrow, v));
      tree.nodes[size_t(x)].notBefore = X.readyAt(xrow, v);
      if (zeroPixelTails && tileRows(t) < int64_t(lanes))
        x = zeroTail(tree, x, unsigned(tileRows(t)), p, planes, lanes);
      return x;
    }
    int joined = -1;
    for (int64_t i = 0; i < offsetsIn(t); ++i) {
      const int64_t xrow = inputRow(m, firstOffset(t) + i);
      if (xrow < 0)
        continue; // padding: its lanes stay zero
      int x = tree.read(X.slices(xrow), X.address(xrow, 0));
      tree.nodes[size_t(x)].notBefore = X.readyAt(xrow, 0);
      if (zeroPackedTails)
        x = zeroTail(tree, x, unsigned(C), p, planes, lanes, xType);
      // Every row takes the same path (offset 0's a shift by 0), so that
      // the chain of joins below spaces the reads of X's slices a join
      // apart: with the first row's read a shift shorter, it can meet
      // another's on the same port in every cycle the placer tries (13
      // offsets of conv-packed-offsets.test's `five` found no cycle).
      x = tree.add(reduce::sxm(Opcode::Shift, xType, unsigned(i * C), p >= planes / 2), {x});
      joined = joined < 0 ? x : tree.add(reduce::vxm(Opcode::Or, bits), {joined, x});
    }
    return joined;
  };
  work.finish = [&](WorkTree &tree, int value, int64_t, int64_t, std::vector<const TensorView *> &) {
    return int8 ? value : fromAccumulator(tree, value, Y.dtype);
  };
  auto spans = runMatmul(op, ctx, work, Y);
  if (!spans)
    return spans.takeError();
  // The input reaches the output through an mm at least; the weights are
  // parameters, installed whenever their plane is free.
  ctx.notePath(op, spans->pathFromA());
  return llvm::Error::success();
}

} // namespace lpu::scheduler
