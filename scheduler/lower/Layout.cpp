// Data movement: transpose, slice, concat, iota, and the reshapes and
// broadcasts that move elements across lanes (docs/scheduler.md, "Data
// movement").
//
// Where every output row is one whole source row (a slice or a transpose
// that keeps the last axis), the op is a view: the output's rows map onto
// the operand's stored rows (MEM addressing, no copy). A transpose that
// moves the last axis rotates rows and gathers them (transposeByGather
// below). Everything else moves lanes: each output vector is assembled from the source vectors its lanes
// come from. Each such piece is read from SRAM and put through the SXM's
// `distribute` with a constant lane map (entries of 320 or more give 0, so
// the lanes another piece fills and the lanes past the end of the row stay
// 0); the pieces meet on the VXM in a chain of bitwise `or`s on the
// element's integer type of the same width (exact for every dtype: a lane
// is non-zero in at most one piece) and the vector is written back. Only
// bits move, so the result is bit-exact.
#include "scheduler/Lowering.h"

#include <llvm/ADT/Hashing.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

namespace lpu::scheduler {

using namespace backend;

namespace {

/// Distinct lane maps (a vector of u16 each) and the row each is stored
/// at, in the order first seen. Hashed: a map's key is a whole vector of
/// lanes, which an ordered map compared again and again (a twentieth of
/// ResNet-50's compile).
struct LaneMapHash {
  size_t operator()(const std::vector<uint16_t> &map) const {
    return llvm::hash_combine_range(map.begin(), map.end());
  }
};
using LaneMaps = std::unordered_map<std::vector<uint16_t>, int64_t, LaneMapHash>;


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

/// Where logical row-major index `flat` of a value of `shape` is in its
/// stored order `perm` (empty: as declared).
int64_t storedIndex(int64_t flat, const Shape &shape, const std::vector<uint8_t> &perm) {
  if (perm.empty())
    return flat;
  Shape idx;
  unravel(flat, shape, idx);
  int64_t out = 0;
  for (uint8_t d : perm)
    out = out * shape[d] + idx[d];
  return out;
}

/// The logical row-major index of stored index `stored` of a value of
/// `shape` stored in the order `perm` (empty: as declared).
int64_t logicalIndex(int64_t stored, const Shape &shape, const std::vector<uint8_t> &perm) {
  if (perm.empty())
    return stored;
  Shape idx(shape.size(), 0);
  for (size_t i = perm.size(); i-- > 0;) {
    idx[perm[i]] = stored % shape[perm[i]];
    stored /= shape[perm[i]];
  }
  return ravel(idx, shape);
}

/// The source of every output element of a layout op, or an error for a
/// form the op cannot have (the verifier should have caught it).
class SourceMap {
public:
  /// `out`: the shape whose elements are looked up (a broadcast may be
  /// assembled only up to a smaller shape, see moveLanes).
  explicit SourceMap(const ir::Op &op) : SourceMap(op, op.type().shape) {}
  SourceMap(const ir::Op &op, Shape out) : op_(op), out_(std::move(out)) {
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

DType bitsType(DType t) {
  switch (tensor::dtypeSize(t)) {
  case 1: return t == DType::Bool ? DType::Bool : DType::I8;
  case 2: return DType::I16;
  default: return DType::I32;
  }
}

bool uniformBroadcast(const ir::Op &op) {
  if (op.kind() != ir::OpKind::Broadcast || op.operands().size() != 1)
    return false;
  const Shape &from = op.operand(0)->type().shape;
  return std::all_of(from.begin(), from.end(), [](int64_t d) { return d == 1; });
}

bool aliasesOperand(const ir::Op &op, unsigned lanes) {
  if (op.operands().size() != 1)
    return false;
  const Shape &to = op.type().shape, &from = op.operand(0)->type().shape;
  switch (op.kind()) {
  case ir::OpKind::Reshape: {
    int64_t a = to.empty() ? 1 : to.back(), b = from.empty() ? 1 : from.back();
    // A lane splat's broadcast past one vector stores one vector a row
    // (TensorView::repeatVector): regrouping its lanes copies it.
    const bool repeated = b > int64_t(lanes) && splatAcrossLanes(*op.operand(0), lanes);
    return a == b || (a % lanes == 0 && b % lanes == 0 && !repeated);
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

namespace {

/// When the inputs of `op`'s first row can be ready at the earliest: its
/// operands' paths, but for a concat along a leading axis, whose rows
/// each come from one operand, the earliest of them.
int64_t firstRowPath(const ir::Op &op, const LoweringContext &ctx) {
  const int64_t rank = int64_t(op.type().shape.size());
  int64_t axis = op.intAttr("axis").value_or(0);
  if (axis < 0)
    axis += rank;
  const bool byRows = op.kind() == ir::OpKind::Concat && axis + 1 < rank;
  int64_t path = byRows ? std::numeric_limits<int64_t>::max() : 0;
  for (const ir::Op *operand : op.operands())
    path = byRows ? std::min(path, ctx.pathOf(*operand)) : std::max(path, ctx.pathOf(*operand));
  return op.operands().empty() ? 0 : path;
}

/// Every vector of `op`'s result seen as `type` (op.type(), or for a
/// broadcast the shape it is assembled up to) from the lanes of its
/// operands' vectors; the result becomes `op`'s view.
llvm::Error assembleLanes(const ir::Op &op, const ir::Type &type, LoweringContext &ctx) {
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
    return refuse<Refusal::OperandDtype>(op, dtype);
  // The result may itself be stored in another order (a relayout into
  // channels-last): its vectors are assembled in that order.
  auto order = ctx.storedOrder.find(&op);
  const std::vector<uint8_t> outPerm =
      order == ctx.storedOrder.end() ? std::vector<uint8_t>{} : order->second;
  auto [rows, cols] = LoweringContext::rowsAndCols(LoweringContext::storedType(type, outPerm));
  const int64_t vpr = ctx.vecsPerRow(cols);

  // Pass 1: the pieces of every output vector and the distinct lane maps.
  LaneMaps mapIndex;
  std::vector<std::vector<Piece>> pieces(size_t(rows * vpr));
  SourceMap source(op, type.shape);
  const int64_t maxMaps = chip.memVectors; // one slice's depth
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t v = 0; v < vpr; ++v) {
      int64_t valid = std::min(lanes, cols - v * lanes);
      std::map<std::tuple<int, int64_t, int64_t>, std::vector<uint16_t>> byVector;
      std::vector<std::tuple<int, int64_t, int64_t>> order;
      for (int64_t i = 0; i < valid; ++i) {
        Source s = source(logicalIndex(r * cols + v * lanes + i, type.shape, outPerm));
        const TensorView &in = *ins[size_t(s.operand)];
        // An operand stored in another order (channels-last) is read in it.
        int64_t flat = storedIndex(s.flat, op.operand(size_t(s.operand))->type().shape, in.perm);
        int64_t col = flat % in.cols;
        auto key = std::make_tuple(s.operand, flat / in.cols, col / lanes);
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
            return refuse<Refusal::TooManyLaneMaps>(op, maxMaps);
        }
        pieces[size_t(r * vpr + v)].push_back(
            {std::get<0>(key), std::get<1>(key), std::get<2>(key), m, identity});
      }
    }

  // The lane maps, one u16 vector each.
  std::optional<TensorView> maps;
  if (!mapIndex.empty()) {
    auto mapBytes = [&] {
      std::vector<uint8_t> data(mapIndex.size() * size_t(lanes) * 2);
      for (const auto &[map, row] : mapIndex)
        std::memcpy(&data[size_t(row * lanes * 2)], map.data(), size_t(lanes) * 2);
      return data;
    };
    auto view = ctx.constant(op, DType::I16, int64_t(mapIndex.size()), lanes, mapBytes(), inSlices);
    if (!view)
      return view.takeError();
    // Equal constants are stored once, so the split of Q, K and V into
    // heads read one copy of the same maps, one tree per cycle between
    // them: the three ran one after the other (K's, which the attention
    // waits for, second). When an earlier op still reads the copy after
    // this one's operands are ready, take a copy on other slices.
    int64_t from = std::numeric_limits<int64_t>::max();
    for (const TensorView *in : ins)
      from = std::min(from, in->readyAt(0, 0));
    std::vector<uint16_t> avoid = inSlices;
    for (int tries = 0; view->storage->lastRead > from && tries < 4; ++tries) {
      // An earlier copy off the avoided slices is reused: it may be busy
      // too.
      avoid.insert(avoid.end(), view->allSlices().begin(), view->allSlices().end());
      view = ctx.constant(op, DType::I16, int64_t(mapIndex.size()), lanes, mapBytes(), avoid);
      if (!view)
        return view.takeError();
    }
    maps = std::move(*view);
  }

  auto out = ctx.define(&op, type);
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  const DType bits = bitsType(dtype);
  int64_t prev = 0;
  // Trees differ (a vector's pieces, aligned or moved): the path takes the
  // shortest.
  ShortestSpan span;
  // The vectors are placed in the order their pieces become ready (row
  // order on a tie): the rows of a concat whose operands land from other
  // chips at once, a chunk per link, are copied as they land, not each
  // chunk behind the whole of the one before it.
  std::vector<int64_t> readyOf(size_t(rows * vpr), 0), placing(size_t(rows * vpr));
  for (int64_t k = 0; k < rows * vpr; ++k) {
    placing[size_t(k)] = k;
    for (const Piece &p : pieces[size_t(k)])
      readyOf[size_t(k)] = std::max(readyOf[size_t(k)], ins[size_t(p.operand)]->readyAt(p.row, p.vec));
  }
  std::stable_sort(placing.begin(), placing.end(),
                   [&](int64_t x, int64_t y) { return readyOf[size_t(x)] < readyOf[size_t(y)]; });
  for (int64_t k : placing) {
    const int64_t r = k / vpr, v = k % vpr;
    const std::vector<Piece> &ps = pieces[size_t(k)];
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
      return cannotPlace(op, ctx);
    Placement p = *placed;
    prev = p.firstCycle;
    ctx.written(view, r, v, p.doneCycle - 1);
    for (const TensorView *in : ins)
      ctx.read(*in, p.doneCycle);
    if (maps)
      ctx.read(*maps, p.doneCycle); // for the next op's copy check above
    span.note(p);
  }
  ctx.notePathEnd(op, firstRowPath(op, ctx) + span.get());
  return llvm::Error::success();
}

/// The shape a broadcast along the last axis is assembled up to: its
/// operand's with the target's last dimension ([1, C, 1, 1] -> [N, C, H, W]
/// gives [1, C, 1, W], one row per channel). The target's other rows repeat
/// those rows (a view), so the lanes move once per distinct row instead of
/// once per row of a tensor that may be far larger. A single element (a
/// per-tensor scale) is assembled as one stored row of copies in whatever
/// order the result is stored (channels-last: one row of C), which every
/// row repeats. Nullopt when that saves no rows, or when the result is
/// stored in another order and its operand is not a single element (its
/// rows are not whole rows of the declared order).
std::optional<ir::Type> laneFilled(const ir::Op &op, const LoweringContext &ctx) {
  if (op.kind() != ir::OpKind::Broadcast || op.operands().size() != 1)
    return std::nullopt;
  const Shape &to = op.type().shape, &from = op.operand(0)->type().shape;
  auto order = ctx.storedOrder.find(&op);
  const std::vector<uint8_t> perm =
      order == ctx.storedOrder.end() ? std::vector<uint8_t>{} : order->second;
  ir::Type filled = op.type();
  if (uniformBroadcast(op) && !to.empty()) {
    const size_t last = perm.empty() ? to.size() - 1 : size_t(perm.back());
    filled.shape.assign(to.size(), 1);
    filled.shape[last] = to[last];
  } else {
    if (!perm.empty() || to.empty() || from.empty() || from.size() > to.size())
      return std::nullopt;
    filled.shape = from;
    filled.shape.back() = to.back();
  }
  if (LoweringContext::rowsAndCols(LoweringContext::storedType(filled, perm)).first >=
      LoweringContext::rowsAndCols(LoweringContext::storedType(op.type(), perm)).first)
    return std::nullopt;
  return filled;
}

} // namespace

llvm::Error moveLanes(const ir::Op &op, LoweringContext &ctx) {
  std::optional<ir::Type> filled = laneFilled(op, ctx);
  if (!filled)
    return assembleLanes(op, op.type(), ctx);
  if (auto e = assembleLanes(op, *filled, ctx))
    return e;
  // Target row r reads the filled row of its indices along the operand's
  // dimensions (0 where the operand's is 1), as a row-repeating broadcast.
  const Shape &to = op.type().shape, &from = op.operand(0)->type().shape;
  TensorView view = ctx.view(&op);
  auto [rows, cols] = LoweringContext::rowsAndCols(LoweringContext::storedType(op.type(), view.perm));
  view.rows = rows;
  view.cols = cols;
  view.rowMap.assign(size_t(rows), 0);
  if (!uniformBroadcast(op)) // else every row is the one filled row
    for (int64_t r = 0; r < rows; ++r)
      view.rowMap[size_t(r)] = broadcastSourceRow(to, from, r);
  ctx.setView(&op, std::move(view));
  return llvm::Error::success();
}

namespace {

/// A transpose that moves the last axis, by rotation and MEM gather
/// (docs/scheduler.md, "Transposes"). Output row `o` takes one column `c`
/// of the input, from the input rows that vary along the axis `p` that
/// becomes the output's last (the input's last axis sits in the row index).
/// Step 1 writes every input vector of row `r` to a scratch tensor D rotated
/// by `s_r = index of r along p` (mod 320). Step 2, per output vector and
/// byte plane: a MEM `gather` on D's slice picks, in lane `(c + s_r) mod
/// 320`, row `r`'s vector (that lane of D row r is lane `c` of input row r;
/// the lanes are distinct because consecutive output lanes are consecutive
/// indices along p), and an SXM `distribute` puts lane `(c + k) mod 320`
/// into output lane k (entries 320 and up give the padding's zeros). So
/// the work is one tree per input vector plus one per output vector and
/// byte plane, instead of one SXM move per source vector of every output
/// vector. Only bits move: bit-exact. Nullopt when the op does not have
/// that form (the caller falls back to moveLanes).
} // namespace

std::optional<llvm::Error> transposeByGather(const ir::Op &op, LoweringContext &ctx, const TensorView &in,
                                             const std::vector<int64_t> &from,
                                             const std::vector<int64_t> &perm,
                                             const TransposeTarget &target) {
  const ChipDescription &chip = ctx.chip();
  const int64_t lanes = chip.lanes;
  if (from.size() < 2 || perm.size() != from.size())
    return std::nullopt;
  const size_t n = from.size();
  const size_t p = size_t(perm.back());
  if (p >= n - 1)
    return std::nullopt;
  Shape to(n);
  for (size_t k = 0; k < n; ++k)
    to[k] = from[size_t(perm[k])];
  int64_t rows = 1;
  for (size_t k = 0; k + 1 < n; ++k)
    rows *= to[k];
  const int64_t cols = to.back();
  const int64_t outVpr = ctx.vecsPerRow(cols);
  // Output row o's lanes start at laneOffset(o) (a single vector then).
  auto offsetOf = [&](int64_t o) { return target.laneOffset ? target.laneOffset(o) : int64_t(0); };
  if (target.laneOffset)
    for (int64_t o = 0; o < rows; ++o)
      if (outVpr != 1 || offsetOf(o) < 0 || offsetOf(o) + cols > lanes)
        return std::nullopt;
  const int64_t inRows = in.rows, inCols = in.cols, inVpr = in.vecsPerRow;
  // Input row r's index along p.
  int64_t strideP = 1;
  for (size_t d = p + 1; d + 1 < n; ++d)
    strideP *= from[d];
  auto shiftOf = [&](int64_t r) { return (r / strideP) % from[p] % lanes; };
  // D keeps the rows one output vector reads (one index along every other
  // axis, all along p) next to each other: input row r is D row dRow(r).
  // Each run of from[p] rows then stays in one chunk of a long D, and the
  // gather's offsets stay small.
  const int64_t run = from[p];
  auto dRow = [&](int64_t r) {
    int64_t hi = r / (run * strideP), k = r / strideP % run, lo = r % strideP;
    return (hi * strideP + lo) * run + k;
  };

  auto rotated = ctx.scratch(op, in.dtype, inRows, inCols, {}, run);
  if (!rotated)
    return rotated.takeError();
  TensorView D = std::move(*rotated);
  if (strideP > 1) {
    D.rowMap.resize(size_t(inRows));
    for (int64_t r = 0; r < inRows; ++r)
      D.rowMap[size_t(r)] = dRow(r);
  }
  // Per output vector: the column it takes, and per chunk of D its rows
  // lie in (a gather reads one slice; SRAM too full for chunks of whole
  // runs cuts some runs in two) the first of them and the maps. The parts'
  // distributes leave each other's lanes 0, and an `or` joins them.
  struct Part {
    int64_t base, gmap, dmap;
  };
  struct OutVector {
    int64_t vec, last;
    std::vector<Part> parts;
  };
  std::vector<OutVector> work(size_t(rows * outVpr));
  LaneMaps gmaps, dmaps;
  // The input element an output element comes from.
  Shape oIdx, iIdx(n);
  auto source = [&](int64_t flat) {
    unravel(flat, to, oIdx);
    for (size_t k = 0; k < n; ++k)
      iIdx[size_t(perm[k])] = oIdx[k];
    return Source{0, ravel(iIdx, from)};
  };
  auto doesNotApply = [&]() -> std::optional<llvm::Error> {
    ctx.releaseScratch(D);
    return std::nullopt;
  };
  for (int64_t o = 0; o < rows; ++o)
    for (int64_t v = 0; v < outVpr; ++v) {
      int64_t valid = std::min(lanes, cols - v * lanes);
      Source s0 = source(o * cols + v * lanes);
      int64_t c = s0.flat % inCols, cc = c % lanes;
      OutVector &w = work[size_t(o * outVpr + v)];
      w.vec = c / lanes;
      struct Maps {
        int64_t base, chunk;
        std::vector<uint16_t> g, dm;
        std::vector<bool> taken;
      };
      std::vector<Maps> maps;
      for (int64_t k = 0; k < valid; ++k) {
        Source s = source(o * cols + v * lanes + k);
        int64_t r = s.flat / inCols;
        w.last = r;
        if (maps.empty() || maps.back().chunk != D.chunkOf(r))
          maps.push_back({r, D.chunkOf(r), std::vector<uint16_t>(size_t(lanes), 0),
                          std::vector<uint16_t>(size_t(lanes), uint16_t(lanes)),
                          std::vector<bool>(size_t(lanes), false)});
        Maps &m = maps.back();
        int64_t offset = (dRow(r) - dRow(m.base)) * inVpr;
        size_t lane = size_t((cc + shiftOf(r)) % lanes);
        if (s.flat % inCols != c || offset < 0 || offset > 0xffff || m.taken[lane])
          return doesNotApply();
        m.taken[lane] = true;
        m.g[lane] = uint16_t(offset);
        m.dm[size_t(k + offsetOf(o))] = uint16_t(lane);
      }
      for (const Maps &m : maps) {
        auto gi = gmaps.try_emplace(m.g, int64_t(gmaps.size())).first->second;
        auto di = dmaps.try_emplace(m.dm, int64_t(dmaps.size())).first->second;
        w.parts.push_back({m.base, gi, di});
      }
      if (int64_t(std::max(gmaps.size(), dmaps.size())) > chip.memVectors)
        return doesNotApply();
    }
  const size_t width = tensor::dtypeSize(in.dtype);
  auto mapConstant = [&](const LaneMaps &maps,
                         std::vector<uint16_t> avoid) {
    std::vector<uint8_t> data(maps.size() * size_t(lanes) * 2);
    for (const auto &[map, row] : maps)
      std::memcpy(&data[size_t(row * lanes * 2)], map.data(), size_t(lanes) * 2);
    return ctx.constant(op, DType::I16, int64_t(maps.size()), lanes, std::move(data), avoid);
  };
  std::vector<uint16_t> avoid = D.allSlices();
  avoid.insert(avoid.end(), in.allSlices().begin(), in.allSlices().end());
  // One copy of the maps per byte plane: each plane's trees read both maps,
  // and one slice's read port would serve only one tree per cycle.
  std::vector<TensorView> gconsts, dconsts;
  for (size_t b = 0; b < width; ++b)
    for (auto *maps : {&gmaps, &dmaps}) {
      auto view = mapConstant(*maps, avoid);
      if (!view)
        return view.takeError();
      avoid.insert(avoid.end(), view->allSlices().begin(), view->allSlices().end());
      (maps == &gmaps ? gconsts : dconsts).push_back(std::move(*view));
    }

  // Step 1: D row r = input row r rotated by s_r.
  int64_t prev = 0, path = 0;
  for (int64_t r = 0; r < inRows; ++r)
    for (int64_t v = 0; v < inVpr; ++v) {
      WorkTree tree;
      tree.write(D.slices(r), D.address(r, v), -1);
      Instr rot;
      rot.op = Opcode::Rotate;
      rot.dtype = in.dtype;
      rot.count = uint32_t(shiftOf(r));
      rot.unit = chip.isEastSlice(in.allSlices().front()) ? 1 : 0;
      tree.nodes[0].inputs = {tree.add(rot, {tree.read(in.slices(r), in.address(r, v))})};
      int64_t ready = std::max(D.storage->block.writableFrom, in.readyAt(r, v));
      std::optional<Placement> placed = ctx.placer().place(std::move(tree), std::max(prev, ready));
      if (!placed)
        return cannotPlace(op, ctx);
      prev = placed->firstCycle;
      if (r == 0 && v == 0)
        path = placed->span();
      ctx.written(D, r, v, placed->doneCycle - 1);
      ctx.read(in, placed->doneCycle);
    }

  // Step 2: per output vector and byte plane, gather and distribute.
  auto out = target.define();
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  std::vector<int64_t> prevOfPart;
  for (int64_t o = 0; o < rows; ++o)
    for (int64_t v = 0; v < outVpr; ++v) {
      const OutVector &w = work[size_t(o * outVpr + v)];
      int64_t ready = view.storage->block.writableFrom;
      for (int64_t r = w.parts.front().base; r <= w.last; r += strideP)
        ready = std::max(ready, D.readyAt(r, w.vec));
      int64_t done = 0;
      for (size_t b = 0; b < width; ++b) {
        // A part after the first joins what the ones before it wrote (one
        // tree would read the maps' slices, or D's, twice in a cycle).
        int64_t written = 0;
        for (size_t i = 0; i < w.parts.size(); ++i) {
          const Part &part = w.parts[i];
          WorkTree tree;
          tree.write({view.slices(o)[b]}, view.address(o, v), -1);
          Instr gather;
          gather.op = Opcode::Gather;
          gather.dtype = DType::I8; // one byte plane
          gather.unit = D.slices(part.base)[b];
          gather.addr = D.address(part.base, w.vec);
          int g = tree.read(gconsts[b].slices(part.gmap), gconsts[b].address(part.gmap, 0));
          int bytes = tree.add(gather, {g, g}); // the map is src1; src0 unused
          Instr dist;
          dist.op = Opcode::Distribute;
          dist.dtype = DType::I8;
          dist.unit = chip.isEastSlice(D.slices(part.base)[b]) ? 1 : 0;
          int dmap = tree.read(dconsts[b].slices(part.dmap), dconsts[b].address(part.dmap, 0));
          int moved = tree.add(dist, {bytes, dmap});
          if (i > 0) {
            Instr join;
            join.op = Opcode::Or;
            join.dtype = DType::I8;
            int before = tree.read({view.slices(o)[b]}, view.address(o, v));
            tree.nodes[size_t(before)].notBefore = written;
            moved = tree.add(join, {moved, before});
          }
          tree.nodes[0].inputs = {moved};
          // Each part's trees pipeline among themselves.
          if (prevOfPart.size() <= i)
            prevOfPart.resize(i + 1, 0);
          std::optional<Placement> placed = ctx.placer().place(std::move(tree), std::max(prevOfPart[i], ready));
          if (!placed)
            return cannotPlace(op, ctx);
          prevOfPart[i] = placed->firstCycle;
          written = placed->doneCycle;
          done = std::max(done, placed->doneCycle);
          if (o == 0 && v == 0 && b == 0)
            path += placed->span();
          ctx.read(D, placed->doneCycle);
        }
      }
      ctx.written(view, o, v, done - 1);
    }
  ctx.releaseScratch(D);
  if (target.path)
    *target.path = path;
  return llvm::Error::success();
}

llvm::Error lowerLayout(const ir::Op &op, LoweringContext &ctx) {
  switch (op.kind()) {
  case ir::OpKind::Slice:
  case ir::OpKind::Transpose:
    if (aliasesOperand(op, ctx.chip().lanes))
      return rowView(op, ctx);
    if (op.kind() == ir::OpKind::Transpose) {
      std::vector<int64_t> perm = op.intsAttr("perm").value_or(std::vector<int64_t>{});
      int64_t path = 0;
      TransposeTarget target{[&] { return ctx.define(&op); }, nullptr, &path};
      if (std::optional<llvm::Error> done = transposeByGather(op, ctx, ctx.view(op.operand(0)),
                                                              op.operand(0)->type().shape, perm, target)) {
        if (*done)
          return std::move(*done);
        ctx.notePath(op, path);
        return llvm::Error::success();
      }
    }
    return moveLanes(op, ctx);
  case ir::OpKind::Concat:
    return moveLanes(op, ctx);
  default:
    return refuse<Refusal::NoLowering>(op);
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
