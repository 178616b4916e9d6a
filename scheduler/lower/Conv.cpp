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

#include <algorithm>

namespace lpu::scheduler {

using namespace backend;
using convmaps::Pair;

llvm::Error lowerConv(const ir::Op &op, LoweringContext &ctx) {
  const ChipDescription &chip = ctx.chip();
  const ir::Op &xin = *op.operand(0), &win = *op.operand(1);
  if (xin.type().dtype != DType::F16 || win.type().dtype != DType::F16)
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

// Channels-last: X is [N*H*W pixel rows, C], the weights [KH*KW*C rows, O]
// (stored [KH, KW, C, O]), Y [N*Ho*Wo, O]. A job is a band of output
// pixels (up to the accumulator rows) and one tile of 320 output channels,
// on one plane. For each kernel offset (kh, kw) and each tile of 320 input
// channels it installs the weight tile (one lw per input channel) and
// streams, for every output pixel of the band, the input pixel row the
// offset puts under it through the plane into that pixel's accumulator row
// (a pixel in the padding adds nothing: its mm is skipped). Every output
// element adds its products in fp32 in the order (kh, kw, c), where the
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
  const TensorView &X = ctx.view(&xin), &Wt = ctx.view(&win);
  // A pixel row's lanes past the tile's channels meet weight-buffer rows
  // that were not loaded (0): padding lanes computed as inf or NaN (an
  // rsqrt of the zeros there) would make every output NaN.
  const bool zeroPixelTails = !finitePaddingLanes(xin, X, ctx);
  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &Y = **out;

  MxmPlanes mxm(ctx);
  const unsigned planes = mxm.count(), lanes = chip.lanes;
  const int64_t dim = chip.mxmDim, accRows = mxm.accRows();
  const int64_t iwLatency = mxm.iwLatency(), mmLatency = mxm.mmLatency();
  const int64_t cTiles = (C + dim - 1) / dim, oTiles = (O + dim - 1) / dim;
  const int64_t pixels = N * Ho * Wo;
  // Bands: enough jobs for every plane, each within the accumulator rows.
  const int64_t bandsWanted = std::max<int64_t>(1, (int64_t(planes) + oTiles - 1) / oTiles);
  const int64_t band = std::max<int64_t>(1, std::min(accRows, (pixels + bandsWanted - 1) / bandsWanted));

  // The input pixel row under output pixel q at offset (kh, kw), or -1.
  auto inputRow = [&](int64_t q, int64_t kh, int64_t kw) -> int64_t {
    const int64_t n = q / (Ho * Wo), ho = q / Wo % Ho, wo = q % Wo;
    const int64_t hi = ho * stride.h - pad.h + kh * dil.h, wi = wo * stride.w - pad.w + kw * dil.w;
    if (hi < 0 || hi >= H || wi < 0 || wi >= W)
      return -1;
    return (n * H + hi) * W + wi;
  };

  unsigned job = 0;
  for (int64_t j = 0; j < oTiles; ++j)
    for (int64_t q0 = 0; q0 < pixels; q0 += band, ++job) {
      const unsigned p = job % planes;
      PlaneState &st = mxm.state(p);
      const int64_t rowsM = std::min(band, pixels - q0);
      std::vector<int64_t> mmDone(size_t(rowsM), -1); // -1: untouched
      std::vector<int64_t> xrows(static_cast<size_t>(rowsM));
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw) {
          bool any = false;
          for (int64_t m = 0; m < rowsM; ++m) {
            xrows[size_t(m)] = inputRow(q0 + m, kh, kw);
            any |= xrows[size_t(m)] >= 0;
          }
          if (!any)
            continue; // the whole band is in the padding at this offset
          for (int64_t t = 0; t < cTiles; ++t) {
            const int64_t rowsK = std::min(dim, C - t * dim);
            int64_t lastLw = st.lastIw;
            for (int64_t i = 0; i < rowsK; ++i) {
              const int64_t wrow = (kh * KW + kw) * C + t * dim + i;
              WorkTree tree = mxm.loadWeights(p);
              tree.nodes[0].inputs = {tree.read(Wt.slices(wrow), Wt.address(wrow, j))};
              auto placed = ctx.placer().place(std::move(tree), Wt.readyAt(wrow, j), lastLw + 1);
              if (!placed)
                return cannotPlace(op, ctx);
              lastLw = placed->rootCycle;
              ctx.read(Wt, placed->doneCycle);
            }
            const int64_t iwCycle = mxm.install(p, lastLw);
            for (int64_t m = 0; m < rowsM; ++m) {
              const int64_t xrow = xrows[size_t(m)];
              if (xrow < 0)
                continue;
              WorkTree tree = mxm.matmul(p, m);
              int x = tree.read(X.slices(xrow), X.address(xrow, t));
              if (zeroPixelTails && rowsK < int64_t(lanes))
                x = zeroTail(tree, x, unsigned(rowsK), p, planes, lanes);
              tree.nodes[0].inputs = {x};
              const int64_t rootNotBefore =
                  std::max({iwCycle + iwLatency, st.lastMm + 1,
                            mmDone[size_t(m)] < 0 ? st.accFree[size_t(m)] : int64_t(0)});
              auto placed = ctx.placer().place(std::move(tree), X.readyAt(xrow, t), rootNotBefore);
              if (!placed)
                return cannotPlace(op, ctx);
              st.lastMm = std::max(st.lastMm, placed->rootCycle);
              mmDone[size_t(m)] = placed->rootCycle + mmLatency;
              ctx.read(X, placed->doneCycle);
            }
          }
        }
      // Read the accumulator rows out into Y (an untouched row reads 0), in
      // order: each read searches from the previous one's cycle, not from
      // its row's last mm (the plane's queue is busy with the band's mm
      // until the last offset's stream ends, and a search from there would
      // cost the band's length per row).
      int64_t lastRead = -1;
      for (int64_t m = 0; m < rowsM; ++m) {
        const int64_t yrow = q0 + m;
        WorkTree tree;
        tree.write(Y.slices(yrow), Y.address(yrow, j), -1);
        int value = mxm.accRead(tree, p, m);
        if (Y.dtype != DType::F32) {
          Instr cvt;
          cvt.op = Opcode::Cvt;
          cvt.dtype = DType::F32;
          cvt.dtype2 = Y.dtype;
          value = tree.add(cvt, {value});
        }
        tree.nodes[0].inputs = {value};
        const int64_t ready = std::max({mmDone[size_t(m)], st.accFree[size_t(m)],
                                        Y.storage->block.writableFrom, lastRead + 1});
        auto placed = ctx.placer().place(std::move(tree), ready);
        if (!placed)
          return cannotPlace(op, ctx);
        lastRead = placed->firstCycle;
        st.accFree[size_t(m)] = placed->firstCycle + 1;
        ctx.written(Y, yrow, j, placed->doneCycle - 1);
      }
    }
  // The input reaches the output through an mm at least; the weights are
  // parameters, installed whenever their plane is free.
  ctx.notePath(op, mmLatency);
  return llvm::Error::success();
}

} // namespace lpu::scheduler
