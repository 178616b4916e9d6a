// gather(table, ids, axis = 0), an embedding lookup with ids known only at
// run time, on the MEM's `gather` (docs/scheduler.md, "Gather"). Output
// row r is table row ids[r], so each output vector is one table vector
// whose address is only known at run time: the id's lane is spread to every
// lane by the SXM (`permute` with a constant map), scaled to a vector
// offset on the VXM (times the vectors per table row, when more than one),
// and its low 16 bits are the map of one `gather` per byte plane, which
// reads the table's slice at `row address + map[i]` in every lane and
// streams the bytes to the output's slice. Only bits move: bit-exact.
#include "scheduler/Lowering.h"

#include <algorithm>
#include <cstring>

namespace lpu::scheduler {

using namespace backend;

llvm::Error lowerGather(const ir::Op &op, LoweringContext &ctx) {
  const ChipDescription &chip = ctx.chip();
  const int64_t lanes = chip.lanes;
  const ir::Op &tableOp = *op.operand(0), &idsOp = *op.operand(1);
  const ir::Type &tableType = tableOp.type();
  int64_t axis = op.intAttr("axis").value_or(0);
  if (axis < 0)
    axis += int64_t(tableType.shape.size());
  if (axis != 0 || tableType.shape.size() < 2)
    return unsupported(op, "only a gather of whole rows along axis 0 of a table of rank 2 or more");
  if (idsOp.type().dtype != ir::DType::I32)
    return unsupported(op, "ids must be i32");
  const TensorView &table = ctx.view(&tableOp);
  const TensorView &ids = ctx.view(&idsOp);
  if (!table.rowMap.empty())
    return unsupported(op, "a table that is a view of another tensor");
  if (table.chunked())
    return unsupported(op, "a table longer than a slice (stored in chunks)");
  // Rows of the table per id (a [V, A, D] table has A), and vectors per row.
  const int64_t perId = table.rows / std::max<int64_t>(tableType.shape[0], 1);
  const int64_t vpr = table.vecsPerRow;
  if (table.rows * vpr > 0xffff)
    return unsupported(op, "a table of more than 65535 vectors (the gather map is 16 bits)");

  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  const int64_t idCount = view.rows / std::max<int64_t>(perId, 1);

  // Constant maps: row k spreads lane k to every lane.
  int64_t spreadRows = std::min<int64_t>(lanes, std::max<int64_t>(ids.cols, 1));
  std::vector<uint8_t> spread(size_t(spreadRows * lanes) * 2);
  for (int64_t k = 0; k < spreadRows; ++k)
    for (int64_t i = 0; i < lanes; ++i) {
      uint16_t m = uint16_t(k);
      std::memcpy(&spread[size_t((k * lanes + i) * 2)], &m, 2);
    }
  auto spreadView = ctx.constant(op, DType::I16, spreadRows, lanes,
                                 std::move(spread), ids.allSlices());
  if (!spreadView)
    return spreadView.takeError();
  std::optional<TensorView> scale;
  if (vpr * perId > 1) {
    std::vector<uint8_t> data(size_t(lanes) * 4);
    int32_t s = int32_t(vpr * perId);
    for (int64_t i = 0; i < lanes; ++i)
      std::memcpy(&data[size_t(i * 4)], &s, 4);
    auto v = ctx.constant(op, DType::I32, 1, lanes, std::move(data));
    if (!v)
      return v.takeError();
    scale = std::move(*v);
  }

  // Any table row may be read: wait for all of it.
  int64_t tableReady = 0;
  for (int64_t t : table.storage->ready)
    tableReady = std::max(tableReady, t);
  int64_t prev = 0;
  bool first = true;
  for (int64_t n = 0; n < idCount; ++n) {
    int64_t idRow = n / ids.cols, idCol = n % ids.cols;
    int64_t idVec = idCol / lanes, idLane = idCol % lanes;
    for (int64_t a = 0; a < perId; ++a)
      for (int64_t v = 0; v < vpr; ++v) {
        const int64_t r = n * perId + a;
        int64_t done = 0;
        for (size_t b = 0; b < view.slices(r).size(); ++b) {
          WorkTree tree;
          tree.write({view.slices(r)[b]}, view.address(r, v), -1);
          Instr permute;
          permute.op = Opcode::Permute;
          permute.dtype = DType::I32;
          permute.unit = chip.isEastSlice(ids.allSlices().front()) ? 1 : 0;
          int idValue = tree.read(ids.slices(idRow), ids.address(idRow, idVec));
          int map = tree.read(spreadView->slices(idLane), spreadView->address(idLane, 0));
          int offset = tree.add(permute, {idValue, map});
          if (scale) {
            Instr mul;
            mul.op = Opcode::Mul;
            mul.dtype = DType::I32;
            offset = tree.add(mul, {offset, tree.read(scale->slices(0), scale->address(0, 0))});
          }
          Instr gather;
          gather.op = Opcode::Gather;
          gather.dtype = DType::I8; // one byte plane
          gather.unit = table.slices(a)[b];
          gather.addr = table.address(a, v);
          // The map is the offset's low 16 bits (src1); src0 is unused.
          int bytes = tree.add(gather, {offset, offset});
          tree.nodes[0].inputs = {bytes};
          int64_t ready =
              std::max({view.storage->block.writableFrom, ids.readyAt(idRow, idVec), tableReady});
          std::optional<Placement> placed = ctx.placer().place(std::move(tree), std::max(prev, ready));
          if (!placed)
            return cannotPlace(op);
          Placement p = *placed;
          prev = p.firstCycle;
          done = std::max(done, p.doneCycle);
          ctx.read(ids, p.doneCycle);
          ctx.read(table, p.doneCycle);
          if (first)
            ctx.notePath(op, p.doneCycle - p.firstCycle);
          first = false;
        }
        ctx.written(view, r, v, done - 1);
      }
  }
  return llvm::Error::success();
}

} // namespace lpu::scheduler
