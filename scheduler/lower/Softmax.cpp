// Softmax over the last axis, as the reference computes it in f32: the
// row's max (acrossLanes, left in every lane), e = exp(x - max) into f32
// scratch, the row's sum of e (acrossLanes), then e / sum rounded once to
// the result type. Only the sum's order differs from the reference's.
#include "scheduler/lower/Reduce.h"

namespace lpu::scheduler {

using namespace backend;
using namespace reduce;

llvm::Error lowerSoftmax(const ir::Op &op, LoweringContext &ctx) {
  const ir::Op &src = *op.operand(0);
  const int64_t rank = int64_t(src.type().shape.size());
  int64_t axis = op.intAttr("axis").value_or(rank - 1);
  if (axis < 0)
    axis += rank;
  if (rank == 0 || axis != rank - 1)
    return unsupported(op, "a softmax over an axis other than the last");
  const DType inType = src.type().dtype, outType = op.type().dtype;
  if (!tensor::isFloat(inType))
    return unsupported(op);
  const TensorView &in = ctx.view(&src);
  auto M = acrossLanes(op, ctx, in, Combine::Max, DType::F32);
  if (!M)
    return M.takeError();
  auto E = ctx.scratch(op, DType::F32, in.rows, in.cols);
  if (!E)
    return E.takeError();
  int64_t prev = 0;
  for (int64_t r = 0; r < in.rows; ++r)
    for (int64_t v = 0; v < in.vecsPerRow; ++v) {
      Builder b(ctx, *E, r, v);
      int x = b.read(in, r, v);
      if (inType != DType::F32)
        x = b.add(vxm(Opcode::Cvt, inType, DType::F32), {x});
      int d = b.add(vxm(Opcode::Sub, DType::F32), {x, b.readBeside(*M, r, 0, in)});
      auto p = b.finish(b.add(vxm(Opcode::Exp, DType::F32), {d}), prev);
      if (!p)
        return cannotPlace(op);
      prev = p->firstCycle;
    }
  ctx.releaseScratch(*M);
  auto S = acrossLanes(op, ctx, *E, Combine::Sum, DType::F32);
  if (!S)
    return S.takeError();
  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  prev = 0;
  for (int64_t r = 0; r < in.rows; ++r)
    for (int64_t v = 0; v < in.vecsPerRow; ++v) {
      Builder b(ctx, view, r, v);
      int q = b.add(vxm(Opcode::Div, DType::F32), {b.read(*E, r, v), b.readBeside(*S, r, 0, *E)});
      if (outType != DType::F32)
        q = b.add(vxm(Opcode::Cvt, DType::F32, outType), {q});
      auto p = b.finish(q, prev);
      if (!p)
        return cannotPlace(op);
      prev = p->firstCycle;
    }
  ctx.releaseScratch(*E);
  ctx.releaseScratch(*S);
  ctx.notePath(op, 0);
  return llvm::Error::success();
}

} // namespace lpu::scheduler
