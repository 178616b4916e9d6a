// Reshapes and broadcasts that move no data: a reshape that keeps the rows
// (the last dimension, or whole vectors) is the same storage seen with
// another shape; a broadcast that repeats whole rows reads the same stored
// row again (MEM addressing, no copy), and so does a broadcast along the
// last axis of a value whose every lane already holds its row's element.
#include "scheduler/Lowering.h"

namespace lpu::scheduler {

bool laneSplat(const ir::Op &op, unsigned lanes) {
  const ir::Type &type = op.type();
  if (LoweringContext::rowsAndCols(type).second != 1)
    return false;
  switch (op.kind()) {
  case ir::OpKind::Constant:
    return true; // the driver stores splats over whole vectors
  case ir::OpKind::ReduceSum: case ir::OpKind::ReduceMean: case ir::OpKind::ReduceMax:
  case ir::OpKind::ReduceMin: case ir::OpKind::Argmax: {
    // Over the last axis the result is the folded vector (Reduce.cpp),
    // every lane the row's value.
    const std::vector<int64_t> &from = op.operand(0)->type().shape;
    int64_t rank = int64_t(from.size());
    std::vector<int64_t> axes = op.intsAttr("axes").value_or(std::vector<int64_t>{});
    if (op.kind() == ir::OpKind::Argmax) {
      int64_t axis = op.intAttr("axis").value_or(rank - 1);
      axes = {axis < 0 ? axis + rank : axis};
    }
    return rank > 0 && axes.size() == 1 && axes[0] == rank - 1;
  }
  case ir::OpKind::Broadcast: case ir::OpKind::Reshape:
    return aliasesOperand(op, lanes) && laneSplat(*op.operand(0), lanes);
  default:
    break;
  }
  if (!ir::isElementwise(op.kind()))
    return false;
  for (const ir::Op *operand : op.operands())
    if (!laneSplat(*operand, lanes))
      return false;
  return true;
}

bool splatAcrossLanes(const ir::Op &op, unsigned lanes) {
  if (op.kind() != ir::OpKind::Broadcast || op.operands().size() != 1)
    return false;
  const std::vector<int64_t> &to = op.type().shape, &from = op.operand(0)->type().shape;
  return !to.empty() && !from.empty() && from.back() == 1 && laneSplat(*op.operand(0), lanes);
}

int64_t broadcastSourceRow(const std::vector<int64_t> &to, const std::vector<int64_t> &from,
                           int64_t row) {
  // Unravel the row over the target's leading dims, map each onto the source.
  const size_t lead = to.size() - from.size();
  int64_t rest = row, srcRow = 0, stride = 1;
  for (size_t d = to.size() - 1; d-- > 0;) {
    int64_t idx = rest % to[d];
    rest /= to[d];
    if (d >= lead) {
      int64_t fd = from[d - lead];
      srcRow += (fd == 1 ? 0 : idx) * stride;
      stride *= fd;
    }
  }
  return srcRow;
}

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
    if (in.repeatVector && cols != in.cols) {
      return moveLanes(op, ctx); // the row's vectors are not in storage
    } else if (cols == in.cols) {
      // Same rows, regrouped leading dimensions.
    } else if (in.rowMap.empty() && cols % lanes == 0 && in.cols % lanes == 0 &&
               (!in.chunked() || (in.storage->chunkRows * in.storage->vecsPerRow) % out.vecsPerRow == 0)) {
      // Whole vectors in the same order (each row inside one chunk).
    } else {
      return moveLanes(op, ctx); // lanes regroup (lower/Layout.cpp)
    }
    ctx.setView(&op, std::move(out));
    ctx.notePath(op, 0);
    ctx.notePaceVia(op, src, 0);
    return llvm::Error::success();
  }
  // Broadcast: NumPy trailing alignment; only the leading dimensions may
  // grow, so every target row is a whole source row.
  const std::vector<int64_t> &to = op.type().shape, &from = src.type().shape;
  if (to.empty() || from.empty() || (to.back() != from.back() && !splatAcrossLanes(op, lanes)))
    return moveLanes(op, ctx); // along the last dimension (lower/Layout.cpp)
  std::vector<int64_t> map(static_cast<size_t>(rows), 0);
  bool sameRows = rows == in.rows;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t source = broadcastSourceRow(to, from, r);
    sameRows = sameRows && source == r;
    map[size_t(r)] = in.storageRow(source);
  }
  out.rowMap = std::move(map);
  // A lane splat over more than a vector: each vector is the stored one.
  if (out.vecsPerRow > in.storedVecs())
    out.repeatVector = true;
  ctx.setView(&op, std::move(out));
  ctx.notePath(op, 0);
  if (sameRows) // lanes splat: row r is the source's row r
    ctx.notePaceVia(op, src, 0);
  return llvm::Error::success();
}

} // namespace lpu::scheduler
