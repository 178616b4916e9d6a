// max_pool2d and avg_pool2d on the SXM and VXM, in the rows layout (W in
// lanes). One vector tree per output row (n, c, ho): for every window row
// kh inside the input and every kw, the input row goes through the SXM's
// distribute with the lane map of kw (lane wo gets column
// wo * sw + kw - pw), and the VXM folds the copies in the window's
// row-major order: max, or an fp32 sum divided by KH * KW and rounded once
// (padding adds nothing and counts in the divisor). A max map repeats the
// nearest column inside instead of padding. docs/scheduler.md, "Pooling".
#include "scheduler/Lowering.h"
#include "scheduler/lower/ConvMaps.h"

#include <algorithm>
#include <cstring>

namespace lpu::scheduler {

using namespace backend;
using convmaps::Pair;

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
    return unsupported(op,
                       "pooling rows wider than one vector (" + std::to_string(lanes) + " lanes)");
  const DType work = isMax ? dtype : DType::F32;
  if (!dtypeAllowed(isMax ? Opcode::Max : Opcode::Add, work) || (!isMax && !tensor::isFloat(dtype)))
    return unsupported(op, "pooling of " + tensor::dtypeName(dtype).str());

  const TensorView &X = ctx.view(&xin);
  std::vector<uint16_t> avoid = X.allSlices();
  auto maps =
      ctx.constant(op, DType::I16, kernel.w, lanes,
                   convmaps::laneMaps(kernel.w, stride.w, 1, pad.w, W, Wo, lanes, isMax), avoid);
  if (!maps)
    return maps.takeError();
  std::optional<TensorView> divisor;
  if (!isMax) {
    for (uint16_t s : maps->allSlices())
      avoid.push_back(s);
    float d = float(kernel.h * kernel.w);
    std::vector<uint8_t> bytes(size_t(lanes) * 4);
    for (unsigned j = 0; j < lanes; ++j)
      std::memcpy(&bytes[size_t(j) * 4], &d, 4);
    auto v = ctx.constant(op, DType::F32, 1, lanes, bytes, avoid);
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
        int value = -1;
        for (int64_t kh = 0; kh < kernel.h; ++kh) {
          const int64_t hi = ho * stride.h + kh - pad.h;
          if (hi < 0 || hi >= H)
            continue;
          const int64_t xrow = (n * C + c) * H + hi;
          notBefore = std::max(notBefore, X.readyAt(xrow, 0));
          for (int64_t kw = 0; kw < kernel.w; ++kw) {
            int v = convmaps::distribute(tree, X, xrow, *maps, kw, east);
            if (work != dtype) {
              Instr cvt;
              cvt.op = Opcode::Cvt;
              cvt.dtype = dtype;
              cvt.dtype2 = work;
              v = tree.add(cvt, {v});
            }
            if (value < 0) {
              // The first fold's operands would read the same slices in
              // the same cycle: a copy delays one of them by its latency.
              Instr copy;
              copy.op = Opcode::Copy;
              copy.dtype = work;
              value = tree.add(copy, {v});
              continue;
            }
            Instr fold;
            fold.op = isMax ? Opcode::Max : Opcode::Add;
            fold.dtype = work;
            value = tree.add(fold, {value, v});
          }
        }
        if (!isMax) {
          Instr div;
          div.op = Opcode::Div;
          div.dtype = DType::F32;
          value = tree.add(div, {value, tree.read(divisor->slices(0), divisor->address(0, 0))});
          if (dtype != DType::F32) {
            Instr cvt;
            cvt.op = Opcode::Cvt;
            cvt.dtype = DType::F32;
            cvt.dtype2 = dtype;
            value = tree.add(cvt, {value});
          }
        }
        tree.nodes[0].inputs = {value};
        auto placed = ctx.placer().place(std::move(tree), std::max(prev, notBefore));
        if (!placed)
          return cannotPlace(op);
        prev = placed->firstCycle;
        ctx.written(Y, yrow, 0, placed->doneCycle - 1);
        ctx.read(X, placed->doneCycle);
        if (first)
          ctx.notePath(op, placed->doneCycle - placed->firstCycle);
        first = false;
      }
  return llvm::Error::success();
}

} // namespace lpu::scheduler
