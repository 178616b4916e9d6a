// Data movement: transpose, slice, concat, iota, and the reshapes and
// broadcasts that move elements across lanes (docs/scheduler.md, "Data
// movement").
//
// Where every output row is one whole source row (a slice or a transpose
// that keeps the last axis), the op is a view: the output's rows map onto
// the operand's stored rows (MEM addressing, no copy). Everything else moves
// lanes: each output vector is assembled from the source vectors its lanes
// come from. Each such piece is read from SRAM and put through the SXM's
// `distribute` with a constant lane map (entries of 320 or more give 0, so
// the lanes another piece fills and the lanes past the end of the row stay
// 0); the pieces meet on the VXM in a chain of bitwise `or`s on the
// element's integer type of the same width (exact for every dtype: a lane
// is non-zero in at most one piece) and the vector is written back. Only
// bits move, so the result is bit-exact.
#include "scheduler/Lowering.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace lpu::scheduler {

using namespace backend;

namespace {

using Shape = std::vector<int64_t>;

/// Where an output element comes from: operand `operand`, row-major index
/// `flat` in that operand.
struct Source {
  int operand = 0;
  int64_t flat = 0;
};

void unravel(int64_t flat, const Shape &shape, Shape &idx) {
  idx.assign(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
}

int64_t ravel(const Shape &idx, const Shape &shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + idx[d];
  return flat;
}

/// The source of every output element of a layout op, or an error for a
/// form the op cannot have (the verifier should have caught it).
class SourceMap {
public:
  explicit SourceMap(const ir::Op &op) : op_(op), out_(op.type().shape) {
    for (const ir::Op *operand : op.operands())
      in_.push_back(operand->type().shape);
  }

  Source operator()(int64_t flat) {
    const Shape &from = in_[0];
    switch (op_.kind()) {
    case ir::OpKind::Reshape:
      return {0, flat};
    case ir::OpKind::Broadcast: {
      unravel(flat, out_, o_);
      size_t lead = out_.size() - from.size();
      i_.assign(from.size(), 0);
      for (size_t d = 0; d < from.size(); ++d)
        i_[d] = from[d] == 1 ? 0 : o_[d + lead];
      return {0, ravel(i_, from)};
    }
    case ir::OpKind::Transpose: {
      unravel(flat, out_, o_);
      std::vector<int64_t> perm = op_.intsAttr("perm").value_or(std::vector<int64_t>{});
      i_.assign(from.size(), 0);
      for (size_t k = 0; k < perm.size() && k < o_.size(); ++k)
        i_[size_t(perm[k])] = o_[k];
      return {0, ravel(i_, from)};
    }
    case ir::OpKind::Slice: {
      unravel(flat, out_, o_);
      std::vector<int64_t> start = op_.intsAttr("start").value_or(std::vector<int64_t>{});
      for (size_t k = 0; k < o_.size() && k < start.size(); ++k)
        o_[k] += start[k];
      return {0, ravel(o_, from)};
    }
    case ir::OpKind::Concat: {
      unravel(flat, out_, o_);
      int64_t axis = op_.intAttr("axis").value_or(0);
      if (axis < 0)
        axis += int64_t(out_.size());
      int k = 0;
      while (size_t(k) + 1 < in_.size() && o_[size_t(axis)] >= in_[size_t(k)][size_t(axis)]) {
        o_[size_t(axis)] -= in_[size_t(k)][size_t(axis)];
        ++k;
      }
      return {k, ravel(o_, in_[size_t(k)])};
    }
    default:
      return {0, flat};
    }
  }

private:
  const ir::Op &op_;
  Shape out_;
  std::vector<Shape> in_;
  Shape o_, i_;
};

/// The integer type of `t`'s width: the VXM's bitwise ops on it pass any
/// element's bits through.
DType bitsType(DType t) {
  switch (tensor::dtypeSize(t)) {
  case 1: return t == DType::Bool ? DType::Bool : DType::I8;
  case 2: return DType::I16;
  default: return DType::I32;
  }
}

/// A row view of `src` for an op whose every output row is a whole row of
/// its (single) operand, in order.
llvm::Error rowView(const ir::Op &op, LoweringContext &ctx) {
  const TensorView &in = ctx.view(op.operand(0));
  auto [rows, cols] = LoweringContext::rowsAndCols(op.type());
  TensorView out = in;
  out.rows = rows;
  out.cols = cols;
  out.vecsPerRow = ctx.vecsPerRow(cols);
  out.rowMap.assign(size_t(rows), 0);
  SourceMap source(op);
  for (int64_t r = 0; r < rows; ++r)
    out.rowMap[size_t(r)] = in.storageRow(source(r * cols).flat / in.cols);
  ctx.setView(&op, std::move(out));
  ctx.notePath(op, 0);
  return llvm::Error::success();
}

/// One source vector's share of an output vector.
struct Piece {
  int operand;
  int64_t row, vec;
  int64_t map; // row of the lane-map constant
  bool identity;
};

} // namespace

bool aliasesOperand(const ir::Op &op, unsigned lanes) {
  if (op.operands().size() != 1)
    return false;
  const Shape &to = op.type().shape, &from = op.operand(0)->type().shape;
  switch (op.kind()) {
  case ir::OpKind::Reshape: {
    int64_t a = to.empty() ? 1 : to.back(), b = from.empty() ? 1 : from.back();
    return a == b || (a % lanes == 0 && b % lanes == 0);
  }
  case ir::OpKind::Broadcast:
    return !to.empty() && !from.empty() && (to.back() == from.back() || splatAcrossLanes(op, lanes));
  case ir::OpKind::Slice: {
    auto start = op.intsAttr("start"), limit = op.intsAttr("limit");
    return !from.empty() && start && limit && start->size() == from.size() &&
           limit->size() == from.size() && start->back() == 0 && limit->back() == from.back();
  }
  case ir::OpKind::Transpose: {
    auto perm = op.intsAttr("perm");
    return !from.empty() && perm && perm->size() == from.size() &&
           perm->back() == int64_t(from.size()) - 1;
  }
  default:
    return false;
  }
}

llvm::Error moveLanes(const ir::Op &op, LoweringContext &ctx) {
  const ChipDescription &chip = ctx.chip();
  const int64_t lanes = chip.lanes;
  std::vector<const TensorView *> ins;
  std::vector<uint16_t> inSlices;
  for (const ir::Op *operand : op.operands()) {
    ins.push_back(&ctx.view(operand));
    for (uint16_t s : ins.back()->allSlices())
      inSlices.push_back(s);
  }
  DType dtype = op.type().dtype;
  if (!dtypeAllowed(Opcode::Distribute, dtype) || !dtypeAllowed(Opcode::Or, bitsType(dtype)))
    return unsupported(op, "no lane moves for " + tensor::dtypeName(dtype).str());
  auto [rows, cols] = LoweringContext::rowsAndCols(op.type());
  const int64_t vpr = ctx.vecsPerRow(cols);

  // Pass 1: the pieces of every output vector and the distinct lane maps.
  std::map<std::vector<uint16_t>, int64_t> mapIndex;
  std::vector<std::vector<Piece>> pieces(size_t(rows * vpr));
  SourceMap source(op);
  const int64_t maxMaps = chip.memVectors; // one slice's depth
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t v = 0; v < vpr; ++v) {
      int64_t valid = std::min(lanes, cols - v * lanes);
      std::map<std::tuple<int, int64_t, int64_t>, std::vector<uint16_t>> byVector;
      std::vector<std::tuple<int, int64_t, int64_t>> order;
      for (int64_t i = 0; i < valid; ++i) {
        Source s = source(r * cols + v * lanes + i);
        const TensorView &in = *ins[size_t(s.operand)];
        int64_t col = s.flat % in.cols;
        auto key = std::make_tuple(s.operand, s.flat / in.cols, col / lanes);
        auto [it, fresh] = byVector.try_emplace(key, std::vector<uint16_t>(size_t(lanes), uint16_t(lanes)));
        if (fresh)
          order.push_back(key);
        it->second[size_t(i)] = uint16_t(col % lanes);
      }
      for (const auto &key : order) {
        const std::vector<uint16_t> &map = byVector[key];
        const TensorView &in = *ins[size_t(std::get<0>(key))];
        // The whole source vector, lane for lane, and nothing else: a copy
        // (its lanes past the row's end are 0 as the output's must be).
        int64_t srcValid = std::min(lanes, in.cols - std::get<2>(key) * lanes);
        bool identity = order.size() == 1 && srcValid == valid;
        for (int64_t i = 0; identity && i < valid; ++i)
          identity = map[size_t(i)] == i;
        int64_t m = -1;
        if (!identity) {
          auto [it, fresh] = mapIndex.try_emplace(map, int64_t(mapIndex.size()));
          m = it->second;
          if (fresh && int64_t(mapIndex.size()) > maxMaps)
            return unsupported(op, "it needs more than " + std::to_string(maxMaps) +
                                       " distinct lane maps");
        }
        pieces[size_t(r * vpr + v)].push_back(
            {std::get<0>(key), std::get<1>(key), std::get<2>(key), m, identity});
      }
    }

  // The lane maps, one u16 vector each.
  std::optional<TensorView> maps;
  if (!mapIndex.empty()) {
    std::vector<uint8_t> data(mapIndex.size() * size_t(lanes) * 2);
    for (const auto &[map, row] : mapIndex)
      std::memcpy(&data[size_t(row * lanes * 2)], map.data(), size_t(lanes) * 2);
    auto view = ctx.constant(op, DType::I16,
                             int64_t(mapIndex.size()), lanes, std::move(data), inSlices);
    if (!view)
      return view.takeError();
    maps = std::move(*view);
  }

  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  const DType bits = bitsType(dtype);
  int64_t prev = 0;
  bool first = true;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t v = 0; v < vpr; ++v) {
      const std::vector<Piece> &ps = pieces[size_t(r * vpr + v)];
      WorkTree tree;
      tree.write(view.slices(r), view.address(r, v), -1);
      int64_t ready = view.storage->block.writableFrom;
      int acc = -1;
      for (size_t j = 0; j < ps.size(); ++j) {
        const Piece &p = ps[j];
        const TensorView &in = *ins[size_t(p.operand)];
        ready = std::max(ready, in.readyAt(p.row, p.vec));
        int data = tree.read(in.slices(p.row), in.address(p.row, p.vec));
        Instr move;
        int moved;
        if (p.identity) {
          move.op = Opcode::Copy;
          move.dtype = dtype;
          moved = tree.add(move, {data});
        } else {
          move.op = Opcode::Distribute;
          move.dtype = dtype;
          move.unit = chip.isEastSlice(in.allSlices().front()) ? 1 : 0;
          int map = tree.read(maps->slices(p.map), maps->address(p.map, 0));
          moved = tree.add(move, {data, map});
        }
        if (j == 0) {
          acc = moved;
          if (ps.size() > 1) {
            // One cycle apart from the next piece, so that two pieces of
            // one tensor never need its read port in the same cycle.
            Instr copy;
            copy.op = Opcode::Copy;
            copy.dtype = bits;
            acc = tree.add(copy, {moved});
          }
          continue;
        }
        Instr orI;
        orI.op = Opcode::Or;
        orI.dtype = bits;
        acc = tree.add(orI, {acc, moved});
      }
      tree.nodes[0].inputs = {acc};
      std::optional<Placement> placed = ctx.placer().place(std::move(tree), std::max(prev, ready));
      if (!placed)
        return cannotPlace(op);
      Placement p = *placed;
      prev = p.firstCycle;
      ctx.written(view, r, v, p.doneCycle - 1);
      for (const TensorView *in : ins)
        ctx.read(*in, p.doneCycle);
      if (first)
        ctx.notePath(op, p.doneCycle - p.firstCycle);
      first = false;
    }
  return llvm::Error::success();
}

llvm::Error lowerLayout(const ir::Op &op, LoweringContext &ctx) {
  switch (op.kind()) {
  case ir::OpKind::Slice:
  case ir::OpKind::Transpose:
    if (aliasesOperand(op, ctx.chip().lanes))
      return rowView(op, ctx);
    return moveLanes(op, ctx);
  case ir::OpKind::Concat:
    return moveLanes(op, ctx);
  default:
    return unsupported(op);
  }
}

llvm::Error lowerIota(const ir::Op &op, LoweringContext &ctx) {
  const ir::Type &type = op.type();
  int64_t axis = op.intAttr("axis").value_or(0);
  if (axis < 0)
    axis += int64_t(type.shape.size());
  auto [rows, cols] = LoweringContext::rowsAndCols(type);
  unsigned size = tensor::dtypeSize(type.dtype);
  std::vector<uint8_t> data(size_t(rows * cols) * size);
  Shape idx;
  for (int64_t f = 0; f < rows * cols; ++f) {
    int64_t value = 0;
    if (!type.shape.empty()) {
      unravel(f, type.shape, idx);
      value = idx[size_t(axis)];
    }
    encodeElement(type.dtype, double(value), &data[size_t(f) * size]);
  }
  auto view = ctx.constant(op, type.dtype, rows, cols, std::move(data));
  if (!view)
    return view.takeError();
  ctx.setView(&op, std::move(*view));
  ctx.notePath(op, 0);
  return llvm::Error::success();
}

} // namespace lpu::scheduler
