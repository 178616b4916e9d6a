// Shared by the reductions and softmax: a row's reduction across lanes.
#pragma once

#include "scheduler/Lowering.h"

#include <algorithm>
#include <functional>
#include <optional>

namespace lpu::scheduler::reduce {

enum class Combine { Sum, Max, Min };

/// The VXM opcode combining two partial results.
backend::Opcode combineOpcode(Combine how);

/// Reduces every row of `in` (its `cols` valid lanes) with `how`, computing
/// in `work` (f32 for floats, the input's own type for integers). The
/// result is scratch SRAM [rows, 1 vector] of `work` whose every lane holds
/// the row's result (so it serves as a lane broadcast too); the caller
/// releases it with ctx.releaseScratch(). One or two steps, each an SXM
/// distribute per leaf (constant lane maps that also drop the lanes past
/// the row's end) and VXM combines (docs/scheduler.md, "Reductions").
class Builder;
/// Where acrossLanes' last step writes instead of its scratch (row r into
/// row r of `dest`), with the work that finishes a row's value on the way
/// (mean's division, the result type): no separate pass for them.
struct LaneFinish {
  const TensorView *dest;
  std::function<int(Builder &, int)> value;
};
/// `segment` > 0: every vector of `in` (one per row) holds several rows of
/// `segment` lanes, from lanes 0, segment, 2 segment, ...; each is reduced
/// on its own and its result fills its lanes.
/// For the critical path: how fast a fold of several steps can give its
/// rows. Every step after the first reads each row's partial from one
/// slice group, `reads` times a row (once per bundle), so the first n rows
/// are all done no sooner than the input's first row plus `first` (the
/// first step's shortest span: the earliest partial), n * reads - 1 cycles
/// of that slice's read port (ceil(n / perRows) rows' reads), and `last`
/// (the last step's shortest span, from its read to its result). reads ==
/// 0: no such bound (one step, or partials in chunks of several slice
/// groups).
struct FoldRate {
  int64_t first = 0, reads = 0, last = 0;
  /// Rows whose partials share a slice group's port: 2 when odd rows'
  /// are in a group of their own (PlacementHeuristics).
  int64_t perRows = 1;
};
llvm::Expected<TensorView> acrossLanes(const ir::Op &op, LoweringContext &ctx, const TensorView &in,
                                       Combine how, backend::DType work,
                                       const LaneFinish *finish = nullptr, int64_t segment = 0,
                                       int64_t *path = nullptr, FoldRate *rate = nullptr);

/// How softmaxRows goes about its rows.
using SoftmaxPrologue = std::function<int(Builder &, int)>;
struct SoftmaxHow {
  /// e may overwrite an f32 `in` (nothing reads it after).
  bool inPlace = false;
  /// > 0: every vector of `in` holds several rows of `segment` lanes, as
  /// for acrossLanes, each its own softmax.
  int64_t segment = 0;
  /// The result is rounded to f16 and nothing else is done with it: the
  /// sum of e then takes each e as one f16, whose error stays below that
  /// rounding (docs/scheduler.md, "Softmax"), in half the MXM work.
  bool roundedToF16 = false;
  /// The most MXM planes the sum of e takes (0: as many as suit it).
  unsigned sumPlanes = 0;
  /// When set, turns a stored vector of `in` into the softmax's f32 input
  /// (attention's f16 scores into scaled f32 ones); it must be monotone
  /// (non-decreasing), as the max is taken of the stored values.
  SoftmaxPrologue prologue;
  /// For the critical path: when `in`'s first row can be ready at the
  /// earliest (-1: not known).
  int64_t inputPath = -1;
};

/// Softmax of every row of `in` (f16 or f32) into `out`, computed in f32
/// as the reference does; `finish` turns a row vector's f32 result into
/// what is written (the result type, an epilogue).
using SoftmaxFinish = std::function<int(Builder &, int, int64_t, int64_t)>;
llvm::Error softmaxRows(const ir::Op &op, LoweringContext &ctx, const TensorView &in, const TensorView &out,
                        const SoftmaxHow &how, const SoftmaxFinish &finish, int64_t *path = nullptr);

/// Whether every value of `src` is one f16 holds exactly (f16 itself, or
/// f16 widened to f32): its sums can run on the MXM.
bool exactInF16(const ir::Op &src);
/// Sums every row of `in` (whose values f16 holds exactly) across its lanes
/// on the MXM, bit-exact to the reference's sequential f32 sum, and writes
/// row r's finished value into row r of `finish.dest` (every lane holds it).
/// `segment` > 0: every vector holds rows of that many lanes, as for
/// acrossLanes, each summed on its own. `split`: the values are f32 that f16
/// need not hold: each goes in as two f16 (the nearest, then the nearest to
/// the rest), which keeps about 22 bits of it (docs/scheduler.md, "Softmax").
/// `planes`: the most planes the sums take (0: as many as suit them).
struct MxmSum {
  int64_t segment = 0;
  bool split = false;
  unsigned planes = 0;
  /// For the critical path: when `in`'s first row can be ready at the
  /// earliest, where the caller knows better than `op`'s operand's path
  /// (-1: it does not).
  int64_t inputPath = -1;
};
llvm::Error sumRowsOnMxm(const ir::Op &op, LoweringContext &ctx, const TensorView &in,
                         const LaneFinish &finish, int64_t *path = nullptr, const MxmSum &how = {});

/// An instruction with just an opcode and a dtype.
backend::Instr vxm(backend::Opcode code, backend::DType type, backend::DType type2 = backend::DType::Bool);

/// An SXM instruction on the western (east = false) or eastern SXM.
backend::Instr sxm(backend::Opcode code, backend::DType type, unsigned count, bool east);

/// Whether two views share a MEM slice: reads of both for one SXM
/// instruction would then need that slice's read port in one cycle, so one
/// of them takes a detour through the VXM (a copy).
bool shareSlice(const TensorView &a, const TensorView &b);

/// One vector's tree written into dest(row, vec): reads record their
/// readiness and are marked read once placed.
class Builder {
public:
  Builder(LoweringContext &ctx, const TensorView &dest, int64_t row, int64_t vec)
      : ctx_(ctx), dest_(dest), row_(row), vec_(vec) {
    tree.write(dest.slices(row), dest.address(row, vec), -1);
    tree.nodes[0].notBefore = dest.storage->block.writableFrom;
  }
  int read(const TensorView &v, int64_t row, int64_t vec) {
    reads_.push_back(&v);
    int n = tree.read(v.slices(row), v.address(row, vec));
    tree.nodes[size_t(n)].notBefore = v.readyAt(row, vec);
    return n;
  }
  /// A read of `v` that meets a read of `other` at one consumer: through a
  /// VXM copy (a cycle earlier) when the two share a slice.
  int readBeside(const TensorView &v, int64_t row, int64_t vec, const TensorView &other) {
    int n = read(v, row, vec);
    if (shareSlice(v, other))
      n = add(vxm(backend::Opcode::Copy, v.dtype), {n});
    return n;
  }
  int add(backend::Instr in, std::vector<int> inputs) { return tree.add(in, std::move(inputs)); }
  /// The row of dest the tree writes.
  int64_t row() const { return row_; }
  /// Views an epilogue built into the tree reads (marked read once placed).
  void alsoReads(const std::vector<const TensorView *> &views) {
    reads_.insert(reads_.end(), views.begin(), views.end());
  }
  /// Places the tree with `value` as what is written; nullopt: no cycle.
  std::optional<Placement> finish(int value, int64_t lowerBound) {
    if (tree.nodes[size_t(value)].instr.op == backend::Opcode::Read)
      value = tree.add(vxm(backend::Opcode::Copy, dest_.dtype), {value});
    tree.nodes[0].inputs = {value};
    std::optional<Placement> p = ctx_.placer().place(std::move(tree), std::max(notBefore_, lowerBound));
    if (!p)
      return p;
    ctx_.written(dest_, row_, vec_, p->doneCycle - 1);
    for (const TensorView *v : reads_)
      ctx_.read(*v, p->doneCycle);
    return p;
  }
  WorkTree tree;

private:
  LoweringContext &ctx_;
  const TensorView &dest_;
  int64_t row_, vec_;
  int64_t notBefore_ = 0;
  std::vector<const TensorView *> reads_;
};


/// Whether the SXM near `view`'s slices is the eastern one.
bool eastOf(const LoweringContext &ctx, const TensorView &view);

} // namespace lpu::scheduler::reduce
