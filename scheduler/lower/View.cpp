// Reshapes and broadcasts that move no data: a reshape that keeps the rows
// (the last dimension, or whole vectors) is the same storage seen with
// another shape; a broadcast that repeats whole rows reads the same stored
// row again (MEM addressing, no copy).
#include "scheduler/Lowering.h"

namespace lpu::scheduler {

llvm::Error lowerView(const ir::Op &op, LoweringContext &ctx) {
  const ir::Op &src = *op.operand(0);
  const TensorView &in = ctx.view(&src);
  auto [rows, cols] = LoweringContext::rowsAndCols(op.type());
  TensorView out = in;
  out.rows = rows;
  out.cols = cols;
  out.vecsPerRow = ctx.vecsPerRow(cols);
  unsigned lanes = ctx.chip().lanes;
  if (op.kind() == ir::OpKind::Reshape) {
    if (cols == in.cols) {
      // Same rows, regrouped leading dimensions.
    } else if (in.rowMap.empty() && cols % lanes == 0 && in.cols % lanes == 0 &&
               (!in.chunked() || (in.storage->chunkRows * in.storage->vecsPerRow) % out.vecsPerRow == 0)) {
      // Whole vectors in the same order (each row inside one chunk).
    } else {
      return moveLanes(op, ctx); // lanes regroup (lower/Layout.cpp)
    }
    ctx.setView(&op, std::move(out));
    ctx.notePath(op, 0);
    return llvm::Error::success();
  }
  // Broadcast: NumPy trailing alignment; only the leading dimensions may
  // grow, so every target row is a whole source row.
  const std::vector<int64_t> &to = op.type().shape, &from = src.type().shape;
  if (to.empty() || from.empty() || to.back() != from.back())
    return moveLanes(op, ctx); // along the last dimension (lower/Layout.cpp)
  size_t lead = to.size() - from.size();
  std::vector<int64_t> map(static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r) {
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
    map[size_t(r)] = in.storageRow(srcRow);
  }
  out.rowMap = std::move(map);
  ctx.setView(&op, std::move(out));
  ctx.notePath(op, 0);
  return llvm::Error::success();
}

} // namespace lpu::scheduler
