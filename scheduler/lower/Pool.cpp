// max_pool2d and avg_pool2d on the SXM and VXM, in the rows layout (W in
// lanes). One vector tree per output row (n, c, ho): for every window row
// kh inside the input and every kw, the input row goes through the SXM's
// distribute with the lane map of kw (lane wo gets column
// wo * sw + kw - pw), and the VXM folds the copies in the window's
// row-major order: max, or an fp32 sum divided by KH * KW and rounded once
// (padding adds nothing and counts in the divisor). A max map repeats the
// nearest column inside instead of padding. docs/scheduler.md, "Pooling".
#include "scheduler/LayoutAssignment.h"
#include "scheduler/Lowering.h"
#include "scheduler/lower/ConvMaps.h"

#include <llvm/ADT/ScopeExit.h>

#include <algorithm>
#include <cstring>

namespace lpu::scheduler {

using namespace backend;
using convmaps::Pair;

namespace {

/// Folds vectors of one dtype on the VXM as they are added to a tree: max
/// in that dtype, or an fp32 sum (each vector converted first); finish()
/// divides a sum by a divisor vector and converts to the result type.
class RowFold {
public:
  RowFold(WorkTree &tree, DType dtype, bool isMax)
      : tree_(tree), dtype_(dtype), work_(isMax ? dtype : DType::F32), isMax_(isMax) {}

  void add(int v) {
    if (work_ != dtype_) {
      Instr cvt;
      cvt.op = Opcode::Cvt;
      cvt.dtype = dtype_;
      cvt.dtype2 = work_;
      v = tree_.add(cvt, {v});
    }
    if (value_ < 0) {
      // The first fold's operands would read the same slices in the same
      // cycle: a copy delays one of them by its latency.
      Instr copy;
      copy.op = Opcode::Copy;
      copy.dtype = work_;
      value_ = tree_.add(copy, {v});
      return;
    }
    Instr fold;
    fold.op = isMax_ ? Opcode::Max : Opcode::Add;
    fold.dtype = work_;
    value_ = tree_.add(fold, {value_, v});
  }

  /// The result's node: for a sum, divided by `divisor`'s first vector.
  int finish(const TensorView *divisor, DType outType) {
    if (!isMax_) {
      Instr div;
      div.op = Opcode::Div;
      div.dtype = DType::F32;
      value_ = tree_.add(div, {value_, tree_.read(divisor->slices(0), divisor->address(0, 0))});
    }
    if (outType != work_) {
      Instr cvt;
      cvt.op = Opcode::Cvt;
      cvt.dtype = work_;
      cvt.dtype2 = outType;
      value_ = tree_.add(cvt, {value_});
    }
    return value_;
  }

private:
  WorkTree &tree_;
  DType dtype_, work_;
  bool isMax_;
  int value_ = -1;
};

/// An f32 vector of `value` in every lane, stored with the program.
llvm::Expected<TensorView> splatF32(const ir::Op &op, LoweringContext &ctx, float value,
                                    const std::vector<uint16_t> &avoid) {
  const unsigned lanes = ctx.chip().lanes;
  std::vector<uint8_t> bytes(size_t(lanes) * 4);
  for (unsigned j = 0; j < lanes; ++j)
    std::memcpy(&bytes[size_t(j) * 4], &value, 4);
  return ctx.constant(op, DType::F32, 1, lanes, bytes, avoid);
}

} // namespace

llvm::Error lowerPool(const ir::Op &op, LoweringContext &ctx) {
  const ChipDescription &chip = ctx.chip();
  const ir::Op &xin = *op.operand(0);
  const bool isMax = op.kind() == ir::OpKind::MaxPool2d;
  const std::vector<int64_t> &xs = xin.type().shape, &ys = op.type().shape;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t Ho = ys[2], Wo = ys[3];
  const Pair kernel = convmaps::pairAttr(op, "kernel", {1, 1});
  const Pair stride = convmaps::pairAttr(op, "stride", kernel);
  const Pair pad = convmaps::pairAttr(op, "padding", {0, 0});
  const unsigned lanes = chip.lanes;
  const DType dtype = xin.type().dtype;
  if (W > int64_t(lanes) || Wo > int64_t(lanes))
    return refuse<Refusal::RowsWiderThanVector>(op, lanes);
  const DType work = isMax ? dtype : DType::F32;
  if (!dtypeAllowed(isMax ? Opcode::Max : Opcode::Add, work) || (!isMax && !tensor::isFloat(dtype)))
    return refuse<Refusal::OperandDtype>(op, dtype);

  const TensorView &X = ctx.view(&xin);
  std::vector<uint16_t> avoid = X.allSlices();
  // Every distribute reads a lane map: with X's rows dealt over chunks
  // ("Window reads"), one copy of the maps a chunk, on slices of its own,
  // so that output rows read them through as many ports.
  const int64_t copies = X.rowMap.empty() ? 1 : int64_t(X.storage->chunkSlices.size());
  std::vector<TensorView> maps;
  for (int64_t m = 0; m < copies; ++m) {
    auto copy =
        ctx.constant(op, DType::I16, kernel.w, lanes,
                     convmaps::laneMaps(kernel.w, stride.w, 1, pad.w, W, Wo, lanes, isMax), avoid);
    if (!copy)
      return copy.takeError();
    for (uint16_t s : copy->allSlices())
      avoid.push_back(s);
    maps.push_back(std::move(*copy));
  }
  std::optional<TensorView> divisor;
  if (!isMax) {
    auto v = splatF32(op, ctx, float(kernel.h * kernel.w), avoid);
    if (!v)
      return v.takeError();
    divisor = *v;
  }
  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &Y = **out;

  int64_t prev = 0;
  bool first = true;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ho = 0; ho < Ho; ++ho) {
        const int64_t yrow = (n * C + c) * Ho + ho;
        const bool east = yrow % 2; // spread the rows over both SXMs
        WorkTree tree;
        tree.write(Y.slices(yrow), Y.address(yrow, 0), -1);
        int64_t notBefore = Y.storage->block.writableFrom;
        RowFold fold(tree, dtype, isMax);
        for (int64_t kh = 0; kh < kernel.h; ++kh) {
          const int64_t hi = ho * stride.h + kh - pad.h;
          if (hi < 0 || hi >= H)
            continue;
          const int64_t xrow = (n * C + c) * H + hi;
          notBefore = std::max(notBefore, X.readyAt(xrow, 0));
          for (int64_t kw = 0; kw < kernel.w; ++kw)
            fold.add(convmaps::distribute(tree, X, xrow, maps[size_t(yrow % copies)], kw, east));
        }
        int value = fold.finish(divisor ? &*divisor : nullptr, dtype);
        tree.nodes[0].inputs = {value};
        auto placed = ctx.placer().place(std::move(tree), std::max(prev, notBefore));
        if (!placed)
          return cannotPlace(op, ctx);
        prev = placed->firstCycle;
        ctx.written(Y, yrow, 0, placed->doneCycle - 1);
        ctx.read(X, placed->doneCycle);
        if (first)
          ctx.notePath(op, placed->span());
        first = false;
      }
  return llvm::Error::success();
}

namespace {


/// Folds the vectors (row, vec) of `X` for `rows` on the VXM in the given
/// order into `tree`: max in `dtype`, or an fp32 sum (converted first);
/// then, for a sum, the division by `divisor` and the conversion to
/// `outType`. Returns the value's node; `notBefore` grows to the reads'.
int foldRows(WorkTree &tree, const TensorView &X, const std::vector<int64_t> &rows, int64_t vec,
             bool isMax, const TensorView *divisor, DType outType, int64_t &notBefore) {
  RowFold fold(tree, X.dtype, isMax);
  for (int64_t row : rows) {
    notBefore = std::max(notBefore, X.readyAt(row, vec));
    fold.add(tree.read(X.slices(row), X.address(row, vec)));
  }
  return fold.finish(divisor, outType);
}

/// Places one tree that folds `rows`' vector `vec` of `X` (foldRows) and
/// writes it as vector `vec` of `Y`'s row `yrow`, after the previous one
/// (`prev`); the first placement sets `op`'s critical path.
llvm::Error placeFold(const ir::Op &op, LoweringContext &ctx, const TensorView &X, const TensorView &Y,
                      int64_t yrow, int64_t vec, const std::vector<int64_t> &rows, bool isMax,
                      const TensorView *divisor, DType outType, int64_t &prev, bool &first) {
  WorkTree tree;
  tree.write(Y.slices(yrow), Y.address(yrow, vec), -1);
  int64_t notBefore = Y.storage->block.writableFrom;
  tree.nodes[0].inputs = {foldRows(tree, X, rows, vec, isMax, divisor, outType, notBefore)};
  auto placed = ctx.placer().place(std::move(tree), std::max(prev, notBefore));
  if (!placed)
    return cannotPlace(op, ctx);
  prev = placed->firstCycle;
  ctx.written(Y, yrow, vec, placed->doneCycle - 1);
  ctx.read(X, placed->doneCycle);
  if (first)
    ctx.notePath(op, placed->span());
  first = false;
  return llvm::Error::success();
}

} // namespace

// Channels-last pooling: X is [N*H*W pixel rows, C], Y [N*Ho*Wo, C]. One
// vector tree per output pixel (and vector of channels) folds the input
// pixel rows of its window in row-major order on the VXM, as the rows
// layout does lane by lane: max (padding pixels are skipped, which leaves
// the max unchanged), or an fp32 sum divided by KH * KW (padding counts in
// the divisor). No lane moves at all.
llvm::Error lowerPoolChannelsLast(const ir::Op &op, LoweringContext &ctx) {
  const ir::Op &xin = *op.operand(0);
  const bool isMax = op.kind() == ir::OpKind::MaxPool2d;
  const std::vector<int64_t> &xs = xin.type().shape, &ys = op.type().shape;
  const int64_t N = xs[0], H = xs[2], W = xs[3];
  const int64_t Ho = ys[2], Wo = ys[3];
  const Pair kernel = convmaps::pairAttr(op, "kernel", {1, 1});
  const Pair stride = convmaps::pairAttr(op, "stride", kernel);
  const Pair pad = convmaps::pairAttr(op, "padding", {0, 0});
  const DType dtype = xin.type().dtype;
  const DType work = isMax ? dtype : DType::F32;
  if (!dtypeAllowed(isMax ? Opcode::Max : Opcode::Add, work) || (!isMax && !tensor::isFloat(dtype)))
    return refuse<Refusal::OperandDtype>(op, dtype);
  auto staged = stageWindowInput(op, ctx, ctx.view(&xin), N * Ho * Wo * kernel.h * kernel.w,
                                 windowDeal(op, ctx.knobs));
  if (!staged)
    return staged.takeError();
  const TensorView &X = *staged ? **staged : ctx.view(&xin);
  auto release = llvm::make_scope_exit([&] {
    if (*staged)
      ctx.releaseScratch(**staged);
  });
  std::optional<TensorView> divisor;
  if (!isMax) {
    auto d = splatF32(op, ctx, float(kernel.h * kernel.w), X.allSlices());
    if (!d)
      return d.takeError();
    divisor = *d;
  }
  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &Y = **out;

  int64_t prev = 0;
  bool first = true;
  std::vector<int64_t> window;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ho = 0; ho < Ho; ++ho)
      for (int64_t wo = 0; wo < Wo; ++wo) {
        window.clear();
        for (int64_t kh = 0; kh < kernel.h; ++kh)
          for (int64_t kw = 0; kw < kernel.w; ++kw) {
            const int64_t hi = ho * stride.h + kh - pad.h, wi = wo * stride.w + kw - pad.w;
            if (hi >= 0 && hi < H && wi >= 0 && wi < W)
              window.push_back((n * H + hi) * W + wi);
          }
        const int64_t yrow = (n * Ho + ho) * Wo + wo;
        for (int64_t v = 0; v < Y.vecsPerRow; ++v)
          if (auto e = placeFold(op, ctx, X, Y, yrow, v, window, isMax, divisor ? &*divisor : nullptr,
                                 dtype, prev, first))
            return e;
      }
  return llvm::Error::success();
}

llvm::Expected<TensorView> globalPoolDivisor(const ir::Op &op, LoweringContext &ctx) {
  // A sum is a mean's fold without the division: divide by 1 (exact).
  const std::vector<int64_t> &xs = op.operand(0)->type().shape;
  const bool mean = op.kind() == ir::OpKind::ReduceMean;
  return splatF32(op, ctx, mean ? float(xs[2] * xs[3]) : 1.0f, {});
}

// Global pooling of a channels-last [N, C, H, W] into [N, C]: the H * W
// pixel rows of each image folded in row-major order, as the reference
// reduces, in fp32 (an f16 operand is converted first), then divided by
// H * W for a mean.
llvm::Error lowerGlobalPool(const ir::Op &op, LoweringContext &ctx) {
  const ir::Op &xin = *op.operand(0);
  const std::vector<int64_t> &xs = xin.type().shape;
  const int64_t N = xs[0], pixels = xs[2] * xs[3];
  const DType dtype = xin.type().dtype;
  if (!tensor::isFloat(dtype))
    return refuse<Refusal::OperandDtype>(op, dtype);
  const TensorView &X = ctx.view(&xin);
  auto divisor = globalPoolDivisor(op, ctx);
  if (!divisor)
    return divisor.takeError();
  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &Y = **out;
  if (Y.rows != N || Y.vecsPerRow != X.vecsPerRow)
    return refuse<Refusal::ResultLayout>(op);

  int64_t prev = 0;
  bool first = true;
  std::vector<int64_t> rows;
  for (int64_t n = 0; n < N; ++n) {
    rows.clear();
    for (int64_t i = 0; i < pixels; ++i)
      rows.push_back(n * pixels + i);
    for (int64_t v = 0; v < Y.vecsPerRow; ++v)
      if (auto e = placeFold(op, ctx, X, Y, n, v, rows, false, &*divisor, op.type().dtype, prev, first))
        return e;
  }
  return llvm::Error::success();
}

} // namespace lpu::scheduler
