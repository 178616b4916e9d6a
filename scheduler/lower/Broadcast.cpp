// Broadcasts. Along leading dimensions only: a view (lowerView). From a
// last dimension of 1 ([.., 1] -> [.., D], or a scalar): every output
// vector is the source row's lane 0 repeated across the lanes by an SXM
// permute with an all-zero map (leading dimensions broadcast by reading the
// same source row again).
#include "scheduler/lower/Reduce.h"

namespace lpu::scheduler {

using namespace backend;
using namespace reduce;

llvm::Error lowerBroadcast(const ir::Op &op, LoweringContext &ctx) {
  const ir::Op &src = *op.operand(0);
  const std::vector<int64_t> &to = op.type().shape, &from = src.type().shape;
  if (to.empty() || (!from.empty() && from.back() == to.back()))
    return lowerView(op, ctx);
  if (!from.empty() && from.back() != 1)
    return unsupported(op, "a broadcast along the last dimension from a size other than 1");
  const TensorView &in = ctx.view(&src);
  auto map = laneMap(op, ctx, 0, 0);
  if (!map)
    return map.takeError();
  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  const size_t lead = to.size() - from.size();
  const bool east = eastOf(ctx, in);
  int64_t prev = 0;
  for (int64_t r = 0; r < view.rows; ++r) {
    // Unravel r over the target's leading dims, map each onto the source.
    int64_t rest = r, srcRow = 0, stride = 1;
    for (size_t d = to.size() - 1; d-- > 0;) {
      int64_t idx = rest % to[d];
      rest /= to[d];
      if (d >= lead) {
        int64_t fd = from[d - lead];
        srcRow += (fd == 1 ? 0 : idx) * stride;
        stride *= fd;
      }
    }
    for (int64_t v = 0; v < view.vecsPerRow; ++v) {
      Builder b(ctx, view, r, v);
      int x = b.read(in, srcRow, 0);
      if (shareSlice(in, *map))
        x = b.add(vxm(Opcode::Copy, in.dtype), {x});
      int spread = b.add(sxm(Opcode::Permute, in.dtype, 0, east), {x, b.read(*map, 0, 0)});
      auto p = b.finish(spread, prev);
      if (!p)
        return cannotPlace(op);
      prev = p->firstCycle;
    }
  }
  ctx.notePath(op, 0);
  return llvm::Error::success();
}

} // namespace lpu::scheduler
