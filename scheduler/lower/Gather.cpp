// gather(table, ids, axis = 0), an embedding lookup with ids known only at
// run time, on the MEM's `gather` (docs/scheduler.md, "Gather"). Output
// row r is table row ids[r], so each output vector is one table vector
// whose address is only known at run time: the id's lane is spread to every
// lane by the SXM (`permute` with a constant map), scaled to a vector
// offset on the VXM (times the vectors per table row, when more than one),
// and its low 16 bits are the map of one `gather` per byte plane, which
// reads the table's slice at `row address + map[i]` in every lane and
// streams the bytes to the output's slice. Only bits move: bit-exact.
//
// A table longer than a slice is stored in chunks of rows, each in its own
// slices at the same addresses; which chunk an id is in is only known at run
// time. Per id, a first pass writes the id's address inside its chunk (id
// mod ids-per-chunk, scaled) and, for every chunk but the first, whether the
// id is in it (id div ids-per-chunk == j); then each output vector gathers
// at that address from every chunk and keeps the right one (a chain of
// selects on those flags).
//
// A packed table (rows with no padding) is read the same way, with maps
// computed per id: a row's vector starts inside a stored vector, so the
// gather reads each lane from the vector that holds that lane's element
// and an SXM permute puts the elements in order (lowerPackedGather).
//
// update(x, pos, rows) in place is the gather's inverse on the MEM's
// `scatter` (lowerUpdate, at the end).
#include "scheduler/Lowering.h"

#include <llvm/ADT/ScopeExit.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>

namespace lpu::scheduler {

using namespace backend;

namespace {


/// Constant maps for the SXM: row k spreads lane k to every lane.
llvm::Expected<TensorView> spreadMaps(const ir::Op &op, LoweringContext &ctx, const TensorView &ids) {
  const int64_t lanes = ctx.chip().lanes;
  int64_t spreadRows = std::min<int64_t>(lanes, std::max<int64_t>(ids.cols, 1));
  std::vector<uint8_t> spread(size_t(spreadRows * lanes) * 2);
  for (int64_t k = 0; k < spreadRows; ++k)
    for (int64_t i = 0; i < lanes; ++i) {
      uint16_t m = uint16_t(k);
      std::memcpy(&spread[size_t((k * lanes + i) * 2)], &m, 2);
    }
  return ctx.constant(op, DType::I16, spreadRows, lanes, std::move(spread), ids.allSlices());
}

/// The bytes of an i8 [chunks, lanes] constant whose row j is j in every
/// lane: what an id's chunk is compared with.
std::vector<uint8_t> chunkIndices(int64_t chunks, int64_t lanes) {
  std::vector<uint8_t> data(size_t(chunks * lanes));
  for (int64_t j = 0; j < chunks; ++j)
    std::fill_n(data.begin() + j * lanes, lanes, uint8_t(j));
  return data;
}

/// A constant [rows, lanes] i32 whose row k holds value(k) in every lane.
llvm::Expected<TensorView> splatRows(const ir::Op &op, LoweringContext &ctx, int64_t rows,
                                     int64_t (*value)(int64_t, int64_t), int64_t arg) {
  const int64_t lanes = ctx.chip().lanes;
  std::vector<uint8_t> data(size_t(rows * lanes) * 4);
  for (int64_t k = 0; k < rows; ++k) {
    int32_t v = int32_t(value(k, arg));
    for (int64_t i = 0; i < lanes; ++i)
      std::memcpy(&data[size_t((k * lanes + i) * 4)], &v, 4);
  }
  return ctx.constant(op, DType::I32, rows, lanes, std::move(data));
}

/// Adds to `tree` the id of output id `n` in every lane (i32): the ids'
/// vector read and spread by the SXM.
int spreadId(WorkTree &tree, const ChipDescription &chip, const TensorView &ids,
             const TensorView &spread, int64_t n) {
  const int64_t lanes = chip.lanes;
  int64_t idRow = n / ids.cols, idCol = n % ids.cols;
  Instr permute;
  permute.op = Opcode::Permute;
  permute.dtype = DType::I32;
  permute.unit = chip.isEastSlice(ids.allSlices().front()) ? 1 : 0;
  int idValue = tree.read(ids.slices(idRow), ids.address(idRow, idCol / lanes));
  int map = tree.read(spread.slices(idCol % lanes), spread.address(idCol % lanes, 0));
  return tree.add(permute, {idValue, map});
}

int vxm(WorkTree &tree, Opcode opcode, DType dtype, std::vector<int> inputs) {
  Instr in;
  in.op = opcode;
  in.dtype = dtype;
  return tree.add(in, std::move(inputs));
}

llvm::Error lowerChunkedGather(const ir::Op &op, LoweringContext &ctx, const TensorView &table,
                               const TensorView &ids, int64_t perId) {
  const ChipDescription &chip = ctx.chip();
  const int64_t lanes = chip.lanes;
  const int64_t vpr = table.vecsPerRow;
  const int64_t chunks = int64_t(table.storage->chunkSlices.size());
  const int64_t idsPerChunk = table.chunkRows() / std::max<int64_t>(perId, 1);

  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  const int64_t idCount = view.rows / std::max<int64_t>(perId, 1);

  auto spread = spreadMaps(op, ctx, ids);
  if (!spread)
    return spread.takeError();
  auto perChunk = splatRows(op, ctx, 1, [](int64_t, int64_t a) { return a; }, idsPerChunk);
  if (!perChunk)
    return perChunk.takeError();
  std::optional<TensorView> scale;
  if (vpr * perId > 1) {
    auto v = splatRows(op, ctx, 1, [](int64_t, int64_t a) { return a; }, vpr * perId);
    if (!v)
      return v.takeError();
    scale = std::move(*v);
  }
  auto shift = splatRows(op, ctx, 1, [](int64_t, int64_t a) { return a; }, 65536);
  if (!shift)
    return shift.takeError();
  // Per id, in one i32 vector: its vector offset inside its chunk in the
  // low two bytes (a gather takes the low 16 bits of its map) and its chunk
  // in the third (compared with a chunk index). A tree of the second pass
  // selects among a group of chunks (knobs.gatherChunkGroup): it gathers
  // from each and reads each one's offset and chunk, so a group of G needs
  // G copies of those, and of the chunk indices, in slices of their own
  // (a slice's port serves one read a cycle); byte planes alternate
  // between two sets of them (`copies`). Fewer groups are fewer round
  // trips of every output vector through SRAM: a few rows cost the chain
  // of groups' latency (BERT-base's word table of 12 chunks, 16 rows a
  // chip: 12 trees in a chain each vector, one a group of 4: 3).
  const size_t planes = tensor::dtypeSize(view.dtype);
  const size_t copies = std::min<size_t>(planes, 2);
  std::vector<TensorView> where, indices; // [parity * group + k]
  int64_t group = std::clamp<int64_t>(ctx.knobs.gatherChunkGroup, 1, chunks);
  auto release = [&] {
    for (const TensorView &t : where)
      ctx.releaseScratch(t);
    where.clear();
    indices.clear();
  };
  // The copies for groups of `g`; false (and nothing kept) when the
  // slices run out, so that a smaller group is tried.
  auto allocate = [&](int64_t g) -> llvm::Expected<bool> {
    std::vector<uint16_t> avoid = table.allSlices();
    avoid.insert(avoid.end(), view.allSlices().begin(), view.allSlices().end());
    for (size_t k = 0; k < copies * size_t(g); ++k) {
      auto t = ctx.scratch(op, DType::I32, idCount, lanes, avoid);
      if (!t) {
        release();
        if (g == 1)
          return t.takeError(); // no room even for one copy: the allocator's refusal
        llvm::consumeError(t.takeError());
        return false;
      }
      avoid.insert(avoid.end(), t->allSlices().begin(), t->allSlices().end());
      where.push_back(std::move(*t));
    }
    for (size_t k = 0; k < copies * size_t(g) && chunks > 1; ++k) {
      auto c = ctx.constant(op, DType::I8, chunks, lanes, chunkIndices(chunks, lanes), avoid);
      if (!c)
        return c.takeError();
      const bool shares = std::any_of(c->allSlices().begin(), c->allSlices().end(), [&](uint16_t sl) {
        return std::find(avoid.begin(), avoid.end(), sl) != avoid.end();
      });
      if (shares && g > 1) {
        release();
        return false;
      }
      avoid.insert(avoid.end(), c->allSlices().begin(), c->allSlices().end());
      indices.push_back(std::move(*c));
    }
    return true;
  };
  for (;; group = std::max<int64_t>(1, group / 2)) {
    auto ok = allocate(group);
    if (!ok)
      return ok.takeError();
    if (*ok)
      break;
  }
  auto copyOf = [&](size_t b, int64_t k) -> size_t { return b % copies * size_t(group) + size_t(k); };

  // One vector's path: a first-pass tree, then a tree per group.
  int64_t firstPass = -1, perGroupTree = -1;
  int64_t prev = 0;
  auto place = [&](WorkTree tree, int64_t ready, int64_t &length) -> llvm::Expected<Placement> {
    std::optional<Placement> placed = ctx.placer().place(std::move(tree), std::max(prev, ready));
    if (!placed)
      return cannotPlace(op, ctx);
    prev = placed->firstCycle;
    if (length < 0)
      length = placed->span();
    return *placed;
  };
  int64_t unused = 0;
  for (int64_t n = 0; n < idCount; ++n) {
    int64_t idRow = n / ids.cols, idVec = (n % ids.cols) / lanes;
    for (const TensorView &dest : where) {
      // (id mod ids-per-chunk) * scale + (id div ids-per-chunk) * 65536:
      // the id read twice (a clash on its port is the placer's to detour).
      WorkTree tree;
      tree.write(dest.slices(n), dest.address(n, 0), -1);
      int value = vxm(tree, Opcode::Rem, DType::I32,
                      {spreadId(tree, chip, ids, *spread, n),
                       tree.read(perChunk->slices(0), perChunk->address(0, 0))});
      if (scale)
        value = vxm(tree, Opcode::Mul, DType::I32, {value, tree.read(scale->slices(0), scale->address(0, 0))});
      int chunk = vxm(tree, Opcode::Div, DType::I32,
                      {spreadId(tree, chip, ids, *spread, n),
                       tree.read(perChunk->slices(0), perChunk->address(0, 0))});
      chunk = vxm(tree, Opcode::Mul, DType::I32, {chunk, tree.read(shift->slices(0), shift->address(0, 0))});
      tree.nodes[0].inputs = {vxm(tree, Opcode::Add, DType::I32, {value, chunk})};
      int64_t ready = std::max(dest.storage->block.writableFrom, ids.readyAt(idRow, idVec));
      auto placed = place(std::move(tree), ready, &dest == &where.front() ? firstPass : unused);
      if (!placed)
        return placed.takeError();
      ctx.read(ids, placed->doneCycle);
      ctx.written(dest, n, 0, placed->doneCycle - 1);
    }
  }

  // Any table row may be read: wait for all of it.
  int64_t tableReady = 0;
  for (int64_t t : table.storage->ready)
    tableReady = std::max(tableReady, t);
  // Group by group: every output vector's byte plane takes chunk j's bytes
  // where the id is in chunk j of the group, and keeps what it has
  // elsewhere (the first group starts from chunk 0's). Groups outer, so
  // that the trees of one group are independent and overlap.
  const int64_t outVectors = idCount * perId * vpr;
  std::vector<int64_t> planeReady(size_t(outVectors) * planes, view.storage->block.writableFrom);
  for (int64_t j0 = 0; j0 < chunks; j0 += group) {
    const int64_t j1 = std::min(chunks, j0 + group);
    prev = 0;
    for (int64_t n = 0; n < idCount; ++n)
      for (int64_t a = 0; a < perId; ++a)
        for (int64_t v = 0; v < vpr; ++v) {
          const int64_t r = n * perId + a;
          int64_t done = 0;
          for (size_t b = 0; b < planes; ++b) {
            int64_t &ready = planeReady[size_t(r * vpr + v) * planes + b];
            WorkTree tree;
            tree.write({view.slices(r)[b]}, view.address(r, v), -1);
            int value = j0 > 0 ? tree.read({view.slices(r)[b]}, view.address(r, v)) : -1;
            int64_t after = std::max(ready, tableReady);
            for (int64_t j = j0; j < j1; ++j) {
              const TensorView &w = where[copyOf(b, j - j0)];
              const std::vector<uint16_t> &sl = w.slices(n);
              int offset = tree.read({sl[0], sl[1]}, w.address(n, 0));
              Instr gather;
              gather.op = Opcode::Gather;
              gather.dtype = DType::I8; // one byte plane
              gather.unit = table.storage->chunkSlices[size_t(j)][b];
              gather.addr = table.address(a, v); // row a of the id's chunk
              int got = tree.add(gather, {offset, offset});
              if (value < 0) {
                value = got;
              } else {
                const TensorView &index = indices[copyOf(b, j - j0)];
                int q = tree.read({sl[2]}, w.address(n, 0));
                int cond = vxm(tree, Opcode::CmpEq, DType::I8,
                               {q, tree.read(index.slices(j), index.address(j, 0))});
                value = vxm(tree, Opcode::Select, DType::I8, {cond, got, value});
              }
              after = std::max(after, w.readyAt(n, 0));
            }
            tree.nodes[0].inputs = {value};
            auto placed = place(std::move(tree), after, j0 == 0 ? perGroupTree : unused);
            if (!placed)
              return placed.takeError();
            ready = placed->doneCycle;
            done = std::max(done, placed->doneCycle);
            ctx.read(table, placed->doneCycle);
            for (int64_t j = j0; j < j1; ++j)
              ctx.read(where[copyOf(b, j - j0)], placed->doneCycle);
            ctx.read(view, placed->doneCycle);
          }
          if (j1 == chunks)
            ctx.written(view, r, v, done - 1);
        }
  }
  const int64_t groups = (chunks + group - 1) / group;
  ctx.notePath(op, std::max<int64_t>(firstPass, 0) + groups * std::max<int64_t>(perGroupTree, 0));
  release();
  return llvm::Error::success();
}

/// A table stored packed (docs/scheduler.md, "Gather"): rows follow each
/// other with no padding, so output vector v of (id t, row a) is the
/// elements from flat u + 320 v on, where u = (t mod ids per chunk) * A * C
/// + a * C is the row's start inside its chunk, and they start at lane
/// o = u mod 320 (the same for every v). A gather whose map in lane s is
/// floor(u / 320) + (s < o) (floor((u + 319 - s) / 320), one div) reads,
/// at address `chunk + v`, in lane s the element that belongs in output
/// lane (s - o) mod 320; an SXM permute with map (l + o) mod 320 (= (u + l)
/// mod 320) puts it there, and 320 past the row's end zeroes the padding.
/// Both maps are computed per (id, row) from the id in a first pass; the
/// last vector's have their own (the padding, and the gather map clamped to
/// the chunk: its lanes past the row's end would read one vector beyond it,
/// past the slice for a chunk that ends there).
llvm::Error lowerPackedGather(const ir::Op &op, LoweringContext &ctx, const TensorView &table,
                              const TensorView &ids, int64_t perId) {
  const ChipDescription &chip = ctx.chip();
  const int64_t lanes = chip.lanes;
  const int64_t cols = table.cols, vpr = table.vecsPerRow;
  const bool chunked = table.chunked();
  const int64_t chunks = int64_t(table.storage->chunkSlices.size());
  const int64_t idsPerChunk = chunked ? table.chunkRows() / perId : 0;
  // Every chunk's slices hold a block of this many vectors at block.addr.
  const int64_t blockVectors =
      chunked ? table.chunkRows() * cols / lanes : (table.rows * cols + lanes - 1) / lanes;
  if (blockVectors > 0xffff)
    return refuse<Refusal::GatherMapRange>(op, "table chunk", 0xffff);
  const int64_t lastValid = cols - (vpr - 1) * lanes;

  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  const int64_t idCount = view.rows / perId;

  // The first pass's constants, apart from the ids and each other (one
  // tree reads several of them).
  std::vector<uint16_t> avoid = ids.allSlices();
  auto keep = [&](llvm::Expected<TensorView> v) -> llvm::Expected<TensorView> {
    if (v)
      avoid.insert(avoid.end(), v->allSlices().begin(), v->allSlices().end());
    return v;
  };
  auto spread = keep(spreadMaps(op, ctx, ids));
  if (!spread)
    return spread.takeError();
  auto splat = [&](int64_t value) {
    std::vector<uint8_t> data(size_t(lanes) * 4);
    int32_t v = int32_t(value);
    for (int64_t i = 0; i < lanes; ++i)
      std::memcpy(&data[size_t(i * 4)], &v, 4);
    return keep(ctx.constant(op, DType::I32, 1, lanes, std::move(data), avoid));
  };
  // Per lane i32 rows: `rowBias` row 2a is a * C + 319 - s (the gather
  // map's numerator), row 2a + 1 is a * C + l (the permute map's);
  // `bounds` row 0 the last vector's highest map, row 1 0 in its valid
  // lanes and 320 past them (a max with it gives 320 there).
  auto lanesRows = [&](int64_t rows, auto value) {
    std::vector<uint8_t> data(size_t(rows * lanes) * 4);
    for (int64_t k = 0; k < rows; ++k)
      for (int64_t i = 0; i < lanes; ++i) {
        int32_t v = int32_t(value(k, i));
        std::memcpy(&data[size_t((k * lanes + i) * 4)], &v, 4);
      }
    return keep(ctx.constant(op, DType::I32, rows, lanes, std::move(data), avoid));
  };
  std::optional<TensorView> perChunk;
  if (chunked) {
    auto v = splat(idsPerChunk);
    if (!v)
      return v.takeError();
    perChunk = std::move(*v);
  }
  auto rowScale = splat(perId * cols);
  if (!rowScale)
    return rowScale.takeError();
  auto laneCount = splat(lanes);
  if (!laneCount)
    return laneCount.takeError();
  auto rowBias = lanesRows(2 * perId, [&](int64_t k, int64_t i) {
    return (k / 2) * cols + (k % 2 == 0 ? lanes - 1 - i : i);
  });
  if (!rowBias)
    return rowBias.takeError();
  auto bounds = lanesRows(2, [&](int64_t k, int64_t i) {
    return k == 0 ? blockVectors - vpr : (i < lastValid ? 0 : lanes);
  });
  if (!bounds)
    return bounds.takeError();

  // Per output row r = n * A + a: gather maps (row 2r for vectors before
  // the last, 2r + 1 for the last) and permute maps (likewise); per id its
  // chunk. A second-pass tree reads one of each, a chunk index, the output
  // and the table: in slices of their own.
  // Every tree of every chunk reads a gather map (and, chunked, the chunk
  // and a chunk index): one slice's read port would bound the op at one
  // tree a cycle, so byte planes alternate between two copies of those
  // (scratch[k] for k < copies: gather maps, then the permute maps, then
  // the chunks).
  const size_t planes = tensor::dtypeSize(view.dtype);
  const size_t copies = std::min<size_t>(planes, 2);
  std::vector<uint16_t> apart = table.allSlices();
  apart.insert(apart.end(), view.allSlices().begin(), view.allSlices().end());
  std::vector<TensorView> scratch;
  for (size_t k = 0; k < 1 + (chunked ? 2 : 1) * copies; ++k) {
    auto s = ctx.scratch(op, DType::I32, k <= copies ? 2 * idCount * perId : idCount, lanes, apart);
    if (!s)
      return s.takeError();
    apart.insert(apart.end(), s->allSlices().begin(), s->allSlices().end());
    scratch.push_back(std::move(*s));
  }
  const TensorView &pmaps = scratch[copies];
  auto gmaps = [&](size_t b) -> const TensorView & { return scratch[b % copies]; };
  auto chunkOf = [&](size_t b) -> const TensorView & { return scratch[copies + 1 + b % copies]; };
  // The chunk indices: every tree of chunk j reads row j, and the chunks'
  // trees overlap (each gathers from slices of its own), so one copy per
  // parity paced the op at its slice's read port (BERT-base's word
  // embedding, 22 chunks striped: 8,064 reads a copy). Up to
  // knobs.indexCopies per parity, chunk j's in copy j mod their count; a copy
  // that could only share a slice with another read of the op is dropped,
  // since a tree reading both in one cycle could not be placed.
  std::vector<TensorView> chunkIndex;
  for (size_t c = 0; chunked && c < copies * size_t(ctx.knobs.indexCopies); ++c) {
    auto v = ctx.constant(op, DType::I8, chunks, lanes, chunkIndices(chunks, lanes), apart);
    if (!v)
      return v.takeError();
    const bool shares = std::any_of(v->allSlices().begin(), v->allSlices().end(), [&](uint16_t s) {
      return std::find(apart.begin(), apart.end(), s) != apart.end();
    });
    if (c >= copies && shares)
      break;
    apart.insert(apart.end(), v->allSlices().begin(), v->allSlices().end());
    chunkIndex.push_back(std::move(*v));
  }
  // Copies per parity (whole sets only).
  const size_t indexSets = std::max<size_t>(1, chunkIndex.size() / copies);

  // The critical path: the first id's longest first-pass tree, then its
  // first vector's tree of every chunk in turn.
  int64_t firstPass = 0, prev = 0;
  std::vector<int64_t> chunkPath(size_t(chunks), -1);
  auto place = [&](WorkTree tree, int64_t ready) -> llvm::Expected<Placement> {
    std::optional<Placement> placed = ctx.placer().place(std::move(tree), std::max(prev, ready));
    if (!placed)
      return cannotPlace(op, ctx);
    prev = placed->firstCycle;
    return *placed;
  };
  auto read = [](WorkTree &tree, const TensorView &v, int64_t row) {
    return tree.read(v.slices(row), v.address(row, 0));
  };
  // A first-pass tree writes one of: a gather map, a permute map (of row
  // a, for the vectors before the last or the last), the id's chunk.
  enum Kind { GatherMap, PermuteMap, Chunk };
  auto firstTree = [&](int64_t n, Kind kind, int64_t a, bool last, size_t copy) -> llvm::Error {
    const TensorView &dest = kind == Chunk ? chunkOf(copy) : kind == GatherMap ? gmaps(copy) : pmaps;
    const int64_t row = kind == Chunk ? n : 2 * (n * perId + a) + (last ? 1 : 0);
    WorkTree tree;
    tree.write(dest.slices(row), dest.address(row, 0), -1);
    int x = spreadId(tree, chip, ids, *spread, n);
    if (kind == Chunk) {
      x = vxm(tree, Opcode::Div, DType::I32, {x, read(tree, *perChunk, 0)});
    } else {
      if (chunked)
        x = vxm(tree, Opcode::Rem, DType::I32, {x, read(tree, *perChunk, 0)});
      x = vxm(tree, Opcode::Mul, DType::I32, {x, read(tree, *rowScale, 0)});
      x = vxm(tree, Opcode::Add, DType::I32, {x, read(tree, *rowBias, 2 * a + (kind == GatherMap ? 0 : 1))});
      x = vxm(tree, kind == GatherMap ? Opcode::Div : Opcode::Rem, DType::I32, {x, read(tree, *laneCount, 0)});
      if (last)
        x = vxm(tree, kind == GatherMap ? Opcode::Min : Opcode::Max, DType::I32,
                {x, read(tree, *bounds, kind == GatherMap ? 0 : 1)});
    }
    tree.nodes[0].inputs = {x};
    int64_t idRow = n / ids.cols, idVec = (n % ids.cols) / lanes;
    int64_t ready = std::max(dest.storage->block.writableFrom, ids.readyAt(idRow, idVec));
    auto placed = place(std::move(tree), ready);
    if (!placed)
      return placed.takeError();
    if (n == 0)
      firstPass = std::max(firstPass, placed->span());
    ctx.read(ids, placed->doneCycle);
    ctx.written(dest, row, 0, placed->doneCycle - 1);
    return llvm::Error::success();
  };
  for (int64_t n = 0; n < idCount; ++n) {
    for (size_t c = 0; chunked && c < copies; ++c)
      if (llvm::Error e = firstTree(n, Chunk, 0, false, c))
        return e;
    for (int64_t a = 0; a < perId; ++a)
      for (Kind kind : {GatherMap, PermuteMap})
        for (bool last : {false, true})
          for (size_t c = 0; c < (kind == GatherMap ? copies : 1); ++c)
            if (last || vpr > 1)
              if (llvm::Error e = firstTree(n, kind, a, last, c))
                return e;
  }

  // Any table row may be read: wait for all of it.
  int64_t tableReady = 0;
  for (int64_t t : table.storage->ready)
    tableReady = std::max(tableReady, t);
  // Chunk by chunk (as for rows): chunk j's bytes where the id is in chunk
  // j, over what the output vector holds; the last chunk's trees permute
  // the result into place (the maps are the same for every chunk).
  std::vector<int64_t> planeReady(size_t(view.rows * vpr) * planes, view.storage->block.writableFrom);
  for (int64_t j = 0; j < chunks; ++j) {
    const std::vector<uint16_t> &tableSlices = table.storage->chunkSlices[size_t(j)];
    prev = 0;
    for (int64_t r = 0; r < view.rows; ++r)
      for (int64_t v = 0; v < vpr; ++v) {
        const int64_t n = r / perId, mapRow = 2 * r + (v == vpr - 1 ? 1 : 0);
        int64_t done = 0;
        for (size_t b = 0; b < planes; ++b) {
          int64_t &ready = planeReady[size_t(r * vpr + v) * planes + b];
          const uint16_t outSlice = view.slices(r)[b];
          WorkTree tree;
          tree.write({outSlice}, view.address(r, v), -1);
          // The maps are i32; gather and permute take their low 16 bits.
          const TensorView &gmap = gmaps(b);
          const std::vector<uint16_t> &g = gmap.slices(mapRow);
          int offset = tree.read({g[0], g[1]}, gmap.address(mapRow, 0));
          Instr gather;
          gather.op = Opcode::Gather;
          gather.dtype = DType::I8; // one byte plane
          gather.unit = tableSlices[b];
          gather.addr = uint32_t(table.storage->block.addr + v);
          int value = tree.add(gather, {offset, offset}); // the map is src1
          if (j > 0) {
            const TensorView &which = chunkOf(b);
            int q = tree.read({which.slices(n)[0]}, which.address(n, 0));
            const size_t index = size_t(j) % indexSets * copies + b % copies;
            int cond = vxm(tree, Opcode::CmpEq, DType::I8, {q, read(tree, chunkIndex[index], j)});
            int kept = tree.read({outSlice}, view.address(r, v));
            value = vxm(tree, Opcode::Select, DType::I8, {cond, value, kept});
          }
          if (j == chunks - 1) {
            const std::vector<uint16_t> &p = pmaps.slices(mapRow);
            Instr permute;
            permute.op = Opcode::Permute;
            permute.dtype = DType::I8;
            permute.unit = chip.isEastSlice(outSlice) ? 1 : 0;
            value = tree.add(permute, {value, tree.read({p[0], p[1]}, pmaps.address(mapRow, 0))});
          }
          tree.nodes[0].inputs = {value};
          int64_t after = std::max({ready, tableReady, gmap.readyAt(mapRow, 0), pmaps.readyAt(mapRow, 0)});
          if (chunked)
            after = std::max(after, chunkOf(b).readyAt(n, 0));
          auto placed = place(std::move(tree), after);
          if (!placed)
            return placed.takeError();
          if (chunkPath[size_t(j)] < 0)
            chunkPath[size_t(j)] = placed->span();
          ready = placed->doneCycle;
          done = std::max(done, placed->doneCycle);
          ctx.read(table, placed->doneCycle);
          for (const TensorView &s : scratch)
            ctx.read(s, placed->doneCycle);
          ctx.read(view, placed->doneCycle);
        }
        if (j == chunks - 1)
          ctx.written(view, r, v, done - 1);
      }
  }
  for (int64_t length : chunkPath)
    firstPass += std::max<int64_t>(length, 0);
  ctx.notePath(op, firstPass);
  for (const TensorView &s : scratch)
    ctx.releaseScratch(s);
  return llvm::Error::success();
}

} // namespace

namespace {

/// Every vector of `in` through `value` (the read's node in, the result's
/// node out) into the same vector of `out`: a tree a vector, pipelined.
llvm::Error eachVector(const ir::Op &op, LoweringContext &ctx, const TensorView &in, const TensorView &out,
                       const std::function<int(WorkTree &, int)> &value) {
  int64_t prev = 0;
  for (int64_t r = 0; r < in.rows; ++r)
    for (int64_t v = 0; v < in.vecsPerRow; ++v) {
      WorkTree tree;
      tree.write(out.slices(r), out.address(r, v), -1);
      const int result = value(tree, tree.read(in.slices(r), in.address(r, v)));
      tree.nodes[0].inputs = {result};
      int64_t ready = std::max(out.storage->block.writableFrom, in.readyAt(r, v));
      std::optional<Placement> placed = ctx.placer().place(std::move(tree), std::max(prev, ready));
      if (!placed)
        return cannotPlace(op, ctx);
      prev = placed->firstCycle;
      ctx.written(out, r, v, placed->doneCycle - 1);
      ctx.read(in, placed->doneCycle);
    }
  return llvm::Error::success();
}

/// The ids clamped into [0, rows), as the IR defines a gather (docs/ir.md):
/// the gathers then read a row of the table whatever the data says, never
/// past it. One VXM tree (max with 0, min with rows - 1) per ids vector,
/// into scratch.
llvm::Expected<TensorView> clampIds(const ir::Op &op, LoweringContext &ctx, const TensorView &ids,
                                    int64_t rows) {
  const int64_t lanes = ctx.chip().lanes;
  std::vector<uint16_t> avoid = ids.allSlices();
  auto splat = [&](int32_t value) {
    std::vector<uint8_t> data(size_t(lanes) * 4);
    for (int64_t i = 0; i < lanes; ++i)
      std::memcpy(&data[size_t(i * 4)], &value, 4);
    auto c = ctx.constant(op, DType::I32, 1, lanes, std::move(data), avoid);
    if (c)
      avoid.insert(avoid.end(), c->allSlices().begin(), c->allSlices().end());
    return c;
  };
  auto low = splat(0);
  if (!low)
    return low.takeError();
  auto high = splat(int32_t(std::max<int64_t>(rows - 1, 0)));
  if (!high)
    return high.takeError();
  auto out = ctx.scratch(op, DType::I32, ids.rows, ids.cols, avoid);
  if (!out)
    return out.takeError();
  if (auto e = eachVector(op, ctx, ids, *out, [&](WorkTree &tree, int x) {
        x = vxm(tree, Opcode::Max, DType::I32, {x, tree.read(low->slices(0), low->address(0, 0))});
        return vxm(tree, Opcode::Min, DType::I32, {x, tree.read(high->slices(0), high->address(0, 0))});
      }))
    return e;
  return out;
}

llvm::Error gatherClamped(const ir::Op &op, LoweringContext &ctx, const TensorView &ids);

/// `view`'s rows copied in order into scratch of their own, chunked (if it
/// must be) on multiples of `align` rows: one VXM copy per vector.
llvm::Expected<TensorView> copyRows(const ir::Op &op, LoweringContext &ctx, const TensorView &view,
                                    int64_t align) {
  auto out = ctx.scratch(op, view.dtype, view.rows, view.cols, {}, align);
  if (!out)
    return out.takeError();
  if (auto e = eachVector(op, ctx, view, *out, [&](WorkTree &tree, int x) {
        return vxm(tree, Opcode::Copy, view.dtype, {x});
      }))
    return e;
  return out;
}

/// The stored rows between id i's rows and id i + 1's in `table` (`ids`
/// ids of `perId` rows each): perId for a tensor of its own; for a row view
/// (rowMap), the one stride every id's rows keep from id 0's, if there is
/// one, in a view of whole stored vectors in one chunk; else nullopt.
std::optional<int64_t> rowsPerIdStride(const TensorView &table, int64_t ids, int64_t perId) {
  if (table.rowMap.empty())
    return perId;
  if (table.chunked() || table.packed() || table.repeatVector || ids < 1 || perId < 1)
    return std::nullopt;
  const int64_t stride = ids > 1 ? table.storageRow(perId) - table.storageRow(0) : perId;
  if (stride < 1)
    return std::nullopt;
  for (int64_t i = 0; i < ids; ++i)
    for (int64_t a = 0; a < perId; ++a)
      if (table.storageRow(i * perId + a) != table.storageRow(a) + i * stride)
        return std::nullopt;
  return stride;
}

} // namespace

llvm::Error lowerGather(const ir::Op &op, LoweringContext &ctx) {
  const ir::Op &tableOp = *op.operand(0), &idsOp = *op.operand(1);
  if (idsOp.type().dtype != ir::DType::I32)
    return refuse<Refusal::OperandDtype>(op, idsOp.type().dtype);
  const int64_t rows = tableOp.type().shape.empty() ? 1 : tableOp.type().shape[0];
  auto clamped = clampIds(op, ctx, ctx.view(&idsOp), rows);
  if (!clamped)
    return clamped.takeError();
  llvm::Error e = gatherClamped(op, ctx, *clamped);
  ctx.releaseScratch(*clamped);
  return e;
}

namespace {

llvm::Error gatherClamped(const ir::Op &op, LoweringContext &ctx, const TensorView &ids) {
  const ChipDescription &chip = ctx.chip();
  const int64_t lanes = chip.lanes;
  const ir::Op &tableOp = *op.operand(0);
  const ir::Type &tableType = tableOp.type();
  int64_t axis = op.intAttr("axis").value_or(0);
  if (axis < 0)
    axis += int64_t(tableType.shape.size());
  if (axis != 0 || tableType.shape.size() < 2)
    return refuse<Refusal::GatherNotRows>(op, axis, tableType.shape.size());
  const TensorView &declared = ctx.view(&tableOp);
  // Rows of the table per id (a [V, A, D] table has A), and vectors per row.
  const int64_t perId = declared.rows / std::max<int64_t>(tableType.shape[0], 1);
  const int64_t vpr = declared.vecsPerRow;
  // Stored rows from one id's rows to the next's: perId, or for a view
  // whose every id's rows lie at one stride (a transpose that brings
  // another axis first, as a gather along it is legalised), that stride.
  std::optional<int64_t> idStride = rowsPerIdStride(declared, tableType.shape[0], perId);
  // Any other view (one in chunks) is copied into rows of its own first.
  std::optional<TensorView> copy;
  if (!idStride) {
    auto c = copyRows(op, ctx, declared, std::max<int64_t>(perId, 1));
    if (!c)
      return c.takeError();
    copy = std::move(*c);
    idStride = perId;
  }
  auto releaseCopy = llvm::make_scope_exit([&] {
    if (copy)
      ctx.releaseScratch(*copy);
  });
  const TensorView &table = copy ? *copy : declared;
  if (table.packed()) {
    if (perId < 1 || (table.chunked() && table.chunkRows() % perId != 0))
      return refuse<Refusal::TableChunksSplitRows>(op, "packed");
    return lowerPackedGather(op, ctx, table, ids, perId);
  }
  if (table.chunked()) {
    if (table.chunkRows() % std::max<int64_t>(perId, 1) != 0 || table.vecsPerRow != table.storage->vecsPerRow)
      return refuse<Refusal::TableChunksSplitRows>(op, "chunked");
    return lowerChunkedGather(op, ctx, table, ids, perId);
  }
  if (int64_t(table.storage->ready.size()) > 0xffff)
    return refuse<Refusal::GatherMapRange>(op, "table", 0xffff);

  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  const int64_t idCount = view.rows / std::max<int64_t>(perId, 1);

  auto spreadView = spreadMaps(op, ctx, ids);
  if (!spreadView)
    return spreadView.takeError();
  std::optional<TensorView> scale;
  if (vpr * *idStride > 1) {
    std::vector<uint8_t> data(size_t(lanes) * 4);
    int32_t s = int32_t(vpr * *idStride);
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
            return cannotPlace(op, ctx);
          Placement p = *placed;
          prev = p.firstCycle;
          done = std::max(done, p.doneCycle);
          ctx.read(ids, p.doneCycle);
          ctx.read(table, p.doneCycle);
          if (first)
            ctx.notePath(op, p.span());
          first = false;
        }
        ctx.written(view, r, v, done - 1);
      }
  }
  return llvm::Error::success();
}

} // namespace

/// update(x, pos, rows, axis = k) written in place (Legalize.h,
/// updatesInPlace): the result is x's storage, and each vector of the new
/// rows goes to it with a MEM `scatter`, at the address of its row for a
/// start of 0 plus a map that is start * (rows per index of axis k) *
/// (vectors per row) in every lane (start = pos clamped into [0, dim - n],
/// computed once on the VXM from the position spread to every lane). Only
/// the new rows move: a decode step writes a key and a value, not the
/// cache. The state is chunked on the boundaries of one index of the axes
/// before k (a head's positions, Scheduler.cpp) where SRAM allows, so one
/// map serves every vector. Where a chunk boundary splits one index's
/// positions anyway (SRAM too full for aligned chunks), each row of the
/// update is written into every chunk its positions reach: at the start
/// clamped into that chunk's positions, the new row where the start is
/// among them and the row's old value (a `gather` at the same address)
/// where it is not. Bit-exact: only bits move. One column along the last
/// axis (a cache of keys stored transposed) is written a tree per byte
/// plane of each row instead: the row's vector at the start gathered, the
/// new element spread to every lane and chosen in the start's lane, the
/// vector scattered back.
llvm::Error lowerUpdate(const ir::Op &op, LoweringContext &ctx) {
  const ChipDescription &chip = ctx.chip();
  const int64_t lanes = chip.lanes;
  const TensorView x = ctx.view(op.operand(0));
  const TensorView &pos = ctx.view(op.operand(1));
  const TensorView &rows = ctx.view(op.operand(2));
  const ir::Type &type = op.type();
  const int64_t rank = int64_t(type.rank());
  int64_t k = op.intAttr("axis").value_or(0);
  k = k < 0 ? k + rank : k;
  auto internal = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "update " + type.str() + " written in place: " + why);
  };
  if (k < 0 || k >= rank)
    return internal("the axis is not one of the tensor's");
  // The last axis: one column, a lane of each row (ir::updatesInPlace).
  const bool column = k == rank - 1;
  const int64_t dim = type.shape[size_t(k)], n = op.operand(2)->type().shape[size_t(k)];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < k; ++d)
    outer *= type.shape[size_t(d)];
  for (int64_t d = k + 1; d + 1 < rank; ++d)
    inner *= type.shape[size_t(d)];
  const int64_t vpr = x.vecsPerRow, block = column ? 1 : dim * inner;
  if (x.packed() || rows.packed() || !x.rowMap.empty() || x.repeatVector || rows.repeatVector ||
      !x.perm.empty() || !rows.perm.empty() || rows.vecsPerRow != (column ? 1 : vpr) ||
      x.rows != outer * block || (column && (n != 1 || rows.rows != outer)))
    return internal("the cache or the rows are not stored as plain rows");
  if (column ? vpr - 1 > 0xffff : (dim - n) * inner * vpr > 0xffff)
    return internal("a position's offset needs more than the scatter map's 16 bits");
  // Whether view rows [first, last] are in one chunk at consecutive
  // addresses.
  auto together = [&](int64_t first, int64_t last) {
    return x.chunkOf(first) == x.chunkOf(last) &&
           int64_t(x.address(last, vpr - 1)) - int64_t(x.address(first, 0)) == (last - first + 1) * vpr - 1;
  };
  // A run of starts [lo, hi] whose row j of index o is in one chunk: one
  // map and flag of its own (a split index's).
  struct Piece {
    int64_t o, j, lo, hi;
  };
  std::vector<Piece> pieces;
  std::vector<bool> whole(size_t(outer), true);
  for (int64_t o = 0; o < outer && !column; ++o) {
    if (together(o * block, o * block + block - 1))
      continue;
    if (inner != 1)
      return internal("a chunk of the cache splits the positions of one index");
    whole[size_t(o)] = false;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t lo = 0; lo <= dim - n;) {
        int64_t hi = lo;
        while (hi + 1 <= dim - n && together(o * dim + lo + j, o * dim + hi + 1 + j))
          ++hi;
        pieces.push_back({o, j, lo, hi});
        lo = hi + 1;
      }
  }

  // The start, clamped, in every lane; then each map: the offset of the
  // start inside its run (and whether it is in it), times the vectors a
  // start moves a row by.
  auto spread = spreadMaps(op, ctx, pos);
  if (!spread)
    return spread.takeError();
  auto splat = [&](int64_t value) { return splatRows(op, ctx, 1, [](int64_t, int64_t a) { return a; }, value); };
  std::vector<uint16_t> avoid = x.allSlices();
  avoid.insert(avoid.end(), rows.allSlices().begin(), rows.allSlices().end());
  std::vector<TensorView> scratches;
  auto scratch = [&](DType dtype) -> llvm::Expected<TensorView> {
    auto v = ctx.scratch(op, dtype, 1, lanes, avoid);
    if (v) {
      avoid.insert(avoid.end(), v->allSlices().begin(), v->allSlices().end());
      scratches.push_back(*v);
    }
    return v;
  };
  int64_t prev = 0;
  auto placeTree = [&](WorkTree tree, int64_t ready) -> llvm::Expected<Placement> {
    std::optional<Placement> placed = ctx.placer().place(std::move(tree), std::max(prev, ready));
    if (!placed)
      return cannotPlace(op, ctx);
    prev = placed->firstCycle;
    return *placed;
  };
  // Writes f(start) into `dest` (one vector), start read from `start` or,
  // for the first, computed from the position.
  auto compute = [&](const TensorView &dest, const std::function<int(WorkTree &, int)> &f,
                     const TensorView *start) -> llvm::Expected<int64_t> {
    WorkTree tree;
    tree.write(dest.slices(0), dest.address(0, 0), -1);
    int s = start ? tree.read(start->slices(0), start->address(0, 0)) : spreadId(tree, chip, pos, *spread, 0);
    tree.nodes[0].inputs = {f(tree, s)};
    const int64_t ready = std::max(dest.storage->block.writableFrom, start ? start->readyAt(0, 0) : pos.readyAt(0, 0));
    auto placed = placeTree(std::move(tree), ready);
    if (!placed)
      return placed.takeError();
    if (start)
      ctx.read(*start, placed->doneCycle);
    else
      ctx.read(pos, placed->doneCycle);
    ctx.written(dest, 0, 0, placed->doneCycle - 1);
    return placed->doneCycle;
  };
  auto constant = [&](WorkTree &tree, const TensorView &c) { return tree.read(c.slices(0), c.address(0, 0)); };
  // A scratch vector of `dtype` computed by f from the clamped start (once
  // that is stored), and when it is done.
  struct Derived {
    TensorView view;
    int64_t done;
  };
  auto derived = [&](DType dtype, const TensorView &from,
                     const std::function<int(WorkTree &, int)> &f) -> llvm::Expected<Derived> {
    auto v = scratch(dtype);
    if (!v)
      return v.takeError();
    auto done = compute(*v, f, &from);
    if (!done)
      return done.takeError();
    return Derived{*v, *done};
  };
  auto zero = splat(0), top = splat(dim - n), step = splat(inner * vpr);
  if (!zero || !top || !step)
    return !zero ? zero.takeError() : !top ? top.takeError() : step.takeError();
  auto start = scratch(DType::I32);
  if (!start)
    return start.takeError();
  auto startDone = compute(*start, [&](WorkTree &tree, int s) {
    s = vxm(tree, Opcode::Max, DType::I32, {s, constant(tree, *zero)});
    return vxm(tree, Opcode::Min, DType::I32, {s, constant(tree, *top)});
  }, nullptr);
  if (!startDone)
    return startDone.takeError();
  ctx.notePath(op, 0);
  if (column) {
    // The start's vector in its row (the gather's and scatter's map) and
    // its lane (the flag that picks the new element over the old).
    auto perVector = splat(lanes);
    if (!perVector)
      return perVector.takeError();
    std::vector<uint8_t> laneData(size_t(lanes) * 4);
    for (int64_t i = 0; i < lanes; ++i) {
      const int32_t v = int32_t(i);
      std::memcpy(&laneData[size_t(i) * 4], &v, 4);
    }
    auto laneIndex = ctx.constant(op, DType::I32, 1, lanes, std::move(laneData));
    if (!laneIndex)
      return laneIndex.takeError();
    // The rows of the matrices (the last two axes: a chunk of slices each
    // where the state is stored so) go in turn, so that their slices'
    // ports work side by side; each tree reads the map twice and the flag
    // and the permute's map once, so the matrices in turn read copies of
    // them in slices of their own.
    const int64_t matrixRows = std::max<int64_t>(1, type.shape[size_t(rank - 2)]);
    const int64_t matrices = x.rows / matrixRows;
    const int64_t copies = std::clamp<int64_t>(matrices, 1, ctx.knobs.indexCopies);
    std::vector<TensorView> maps, flags, zeros{*zero};
    int64_t mapsReady = 0;
    for (int64_t c = 0; c < copies; ++c) {
      auto map = derived(DType::I32, *start, [&](WorkTree &tree, int s) {
        return vxm(tree, Opcode::Div, DType::I32, {s, constant(tree, *perVector)});
      });
      if (!map)
        return map.takeError();
      auto flag = derived(DType::Bool, *start, [&](WorkTree &tree, int s) {
        int lane = vxm(tree, Opcode::Rem, DType::I32, {s, constant(tree, *perVector)});
        return vxm(tree, Opcode::CmpEq, DType::I32, {constant(tree, *laneIndex), lane});
      });
      if (!flag)
        return flag.takeError();
      mapsReady = std::max({mapsReady, map->done, flag->done});
      maps.push_back(map->view);
      flags.push_back(flag->view);
      if (c > 0) {
        std::optional<TensorView> z = ctx.constantElsewhere(op, *zero, avoid);
        zeros.push_back(z ? ctx.keep(*z) : *zero);
        if (z)
          avoid.insert(avoid.end(), z->allSlices().begin(), z->allSlices().end());
      }
    }
    ctx.decide(op, "one column written in place: each of " + std::to_string(x.rows) +
                       " rows' vectors at the position gathered, the new lane chosen, scattered back (" +
                       std::to_string(copies) + (copies == 1 ? " copy" : " copies") + " of the maps)");
    // Each byte plane of a row: its new element spread to every lane (the
    // SXM, with the zero splat's low bytes as the map), its old vector at
    // the start gathered, the new lane chosen, the vector scattered back.
    const size_t planes = tensor::dtypeSize(x.dtype);
    int64_t done = 0;
    prev = 0;
    for (int64_t i = 0; i < x.rows; ++i) {
      const int64_t r = i % matrices * matrixRows + i / matrices;
      const TensorView &map = maps[size_t(i % copies)], &flag = flags[size_t(i % copies)],
                       &zeroMap = zeros[size_t(i % copies)];
      int64_t rowReady = 0, rowDone = 0;
      for (int64_t v = 0; v < vpr; ++v)
        rowReady = std::max(rowReady, x.readyAt(r, v));
      for (size_t b = 0; b < planes; ++b) {
        WorkTree tree;
        Instr scatter;
        scatter.op = Opcode::Scatter;
        scatter.dtype = DType::I8; // one byte plane
        scatter.unit = x.slices(r)[b];
        scatter.addr = x.address(r, 0);
        tree.add(scatter);
        Instr permute;
        permute.op = Opcode::Permute;
        permute.dtype = DType::I8;
        permute.unit = chip.isEastSlice(rows.slices(r)[b]) ? 1 : 0;
        int value = tree.read({rows.slices(r)[b]}, rows.address(r, 0));
        int zeroes = tree.read({zeroMap.slices(0)[0], zeroMap.slices(0)[1]}, zeroMap.address(0, 0));
        int spread = tree.add(permute, {value, zeroes});
        Instr gather = scatter;
        gather.op = Opcode::Gather;
        int at = tree.read({map.slices(0)[0], map.slices(0)[1]}, map.address(0, 0));
        int old = tree.add(gather, {at, at});
        int cond = tree.read({flag.slices(0)[0]}, flag.address(0, 0));
        int chosen = vxm(tree, Opcode::Select, DType::I8, {cond, spread, old});
        int offset = tree.read({map.slices(0)[0], map.slices(0)[1]}, map.address(0, 0));
        tree.nodes[0].inputs = {chosen, offset};
        auto placed = placeTree(std::move(tree), std::max({rows.readyAt(r, 0), mapsReady, rowReady}));
        if (!placed)
          return placed.takeError();
        rowDone = std::max(rowDone, placed->doneCycle);
        ctx.read(rows, placed->doneCycle);
        ctx.read(map, placed->doneCycle);
        ctx.read(flag, placed->doneCycle);
        ctx.read(x, placed->doneCycle);
      }
      for (int64_t v = 0; v < vpr; ++v)
        ctx.written(x, r, v, rowDone - 1);
      done = std::max(done, rowDone);
    }
    ctx.setView(&op, x);
    ctx.notePathEnd(op, done);
    for (const TensorView &t : scratches)
      ctx.releaseScratch(t);
    return llvm::Error::success();
  }
  int64_t mapsReady = *startDone;
  auto mapMade = derived(DType::I32, *start, [&](WorkTree &tree, int s) {
    return vxm(tree, Opcode::Mul, DType::I32, {s, constant(tree, *step)});
  });
  if (!mapMade)
    return mapMade.takeError();
  const TensorView *map = &mapMade->view;
  mapsReady = std::max(mapsReady, mapMade->done);
  std::vector<TensorView> pieceMaps, pieceFlags;
  for (const Piece &p : pieces) {
    auto lo = splat(p.lo), hi = splat(p.hi), vectors = splat(vpr);
    if (!lo || !hi || !vectors)
      return !lo ? lo.takeError() : !hi ? hi.takeError() : vectors.takeError();
    auto m = scratch(DType::I32);
    if (!m)
      return m.takeError();
    auto mDone = compute(*m, [&](WorkTree &tree, int s) {
      s = vxm(tree, Opcode::Max, DType::I32, {s, constant(tree, *lo)});
      s = vxm(tree, Opcode::Min, DType::I32, {s, constant(tree, *hi)});
      s = vxm(tree, Opcode::Sub, DType::I32, {s, constant(tree, *lo)});
      return vxm(tree, Opcode::Mul, DType::I32, {s, constant(tree, *vectors)});
    }, &*start);
    if (!mDone)
      return mDone.takeError();
    auto f = scratch(DType::Bool);
    if (!f)
      return f.takeError();
    auto fDone = compute(*f, [&](WorkTree &tree, int s) {
      int low = vxm(tree, Opcode::CmpGe, DType::I32, {s, constant(tree, *lo)});
      int high = vxm(tree, Opcode::CmpLe, DType::I32,
                     {tree.read(start->slices(0), start->address(0, 0)), constant(tree, *hi)});
      return vxm(tree, Opcode::And, DType::Bool, {low, high});
    }, &*start);
    if (!fDone)
      return fDone.takeError();
    mapsReady = std::max({mapsReady, *mDone, *fDone});
    pieceMaps.push_back(*m);
    pieceFlags.push_back(*f);
  }

  // Every old vector landed before any is overwritten (the update is the
  // cache's one reader: Legalize.h).
  int64_t cacheReady = 0;
  for (int64_t t : x.storage->ready)
    cacheReady = std::max(cacheReady, t);
  const size_t planes = tensor::dtypeSize(x.dtype);
  int64_t done = 0;
  prev = 0;
  // One scatter a byte plane of a vector: to row `dest` (its address for
  // the run's first start) plus `m`; with a flag, the new bits where it
  // holds and the old (gathered at the same address) where not.
  auto write = [&](int64_t dest, int64_t src, int64_t v, size_t b, const TensorView &m,
                   const TensorView *flag) -> llvm::Error {
    WorkTree tree;
    Instr scatter;
    scatter.op = Opcode::Scatter;
    scatter.dtype = DType::I8; // one byte plane
    scatter.unit = x.slices(dest)[b];
    scatter.addr = x.address(dest, v);
    tree.add(scatter);
    int value = tree.read({rows.slices(src)[b]}, rows.address(src, v));
    if (flag) {
      Instr gather = scatter;
      gather.op = Opcode::Gather;
      int at = tree.read({m.slices(0)[0], m.slices(0)[1]}, m.address(0, 0));
      int old = tree.add(gather, {at, at});
      int cond = tree.read({flag->slices(0)[0]}, flag->address(0, 0));
      value = vxm(tree, Opcode::Select, DType::I8, {cond, value, old});
    }
    int offset = tree.read({m.slices(0)[0], m.slices(0)[1]}, m.address(0, 0));
    tree.nodes[0].inputs = {value, offset};
    auto placed = placeTree(std::move(tree), std::max({rows.readyAt(src, v), mapsReady, cacheReady}));
    if (!placed)
      return placed.takeError();
    done = std::max(done, placed->doneCycle);
    ctx.read(rows, placed->doneCycle);
    ctx.read(m, placed->doneCycle);
    if (flag) {
      ctx.read(*flag, placed->doneCycle);
      ctx.read(x, placed->doneCycle);
    }
    return llvm::Error::success();
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; whole[size_t(o)] && j < n; ++j)
      for (int64_t q = 0; q < inner; ++q)
        for (int64_t v = 0; v < vpr; ++v)
          for (size_t b = 0; b < planes; ++b)
            if (auto e = write((o * dim + j) * inner + q, (o * n + j) * inner + q, v, b, *map, nullptr))
              return e;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece &p = pieces[i];
    for (int64_t v = 0; v < vpr; ++v)
      for (size_t b = 0; b < planes; ++b)
        if (auto e = write(p.o * dim + p.lo + p.j, p.o * n + p.j, v, b, pieceMaps[i], &pieceFlags[i]))
          return e;
  }
  // Any vector of the cache may have been written: every one is ready
  // after the last scatter lands.
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t v = 0; v < vpr; ++v)
      ctx.written(x, r, v, done - 1);
  ctx.setView(&op, x);
  ctx.notePathEnd(op, done);
  for (const TensorView &t : scratches)
    ctx.releaseScratch(t);
  return llvm::Error::success();
}

} // namespace lpu::scheduler
