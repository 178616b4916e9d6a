// Softmax over the last axis, as the reference computes it in f32: the
// row's max (acrossLanes, left in every lane), e = exp(x - max) into f32
// scratch, the row's sum of e (on the MXM, each e as two f16), then
// e / sum rounded once to the result type. Only the sum differs from the
// reference's: its order, and the split's last bits.
// Elementwise work on the result (the cast back to f16 in attention) runs
// in the last pass's trees, and e overwrites an f32 input that dies here:
// attention's scores then take one f32 copy in SRAM instead of three.
#include "scheduler/Error.h"
#include "scheduler/lower/Reduce.h"

#include <algorithm>

namespace lpu::scheduler {

using namespace backend;
using namespace reduce;

namespace {
// The rows of `v` from r0, n of them.
TensorView rowsOf(const TensorView &v, int64_t r0, int64_t n) {
  if (r0 == 0 && n == v.rows)
    return v;
  TensorView sub = v;
  sub.rows = n;
  sub.rowMap.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i)
    sub.rowMap[size_t(i)] = v.storageRow(r0 + i);
  return sub;
}

// The rows of `v` by the cycle their last vector is ready, ties in index
// order.
std::vector<int64_t> readinessOrder(const TensorView &v) {
  std::vector<int64_t> ready(size_t(v.rows), 0), order(size_t(v.rows));
  for (int64_t r = 0; r < v.rows; ++r) {
    order[size_t(r)] = r;
    for (int64_t k = 0; k < v.vecsPerRow; ++k)
      ready[size_t(r)] = std::max(ready[size_t(r)], v.readyAt(r, k));
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return ready[size_t(a)] < ready[size_t(b)]; });
  return order;
}

// `v` with its row k being v's row order[k].
TensorView inOrder(const TensorView &v, const std::vector<int64_t> &order) {
  if (std::is_sorted(order.begin(), order.end()))
    return v;
  TensorView sorted = v;
  sorted.rowMap.resize(order.size());
  for (size_t k = 0; k < order.size(); ++k)
    sorted.rowMap[k] = v.storageRow(order[k]);
  return sorted;
}

// The rows' sums of e, in every lane of the row (or segment): on the MXM
// against ones, each e as two f16 (`split`) or, for a result rounded to
// f16, as one (docs/scheduler.md, "Softmax"), for many rows; a few short
// rows fold faster than a plane loads its ones (knobs.mxmSumRows).
llvm::Expected<TensorView> sumOfExps(const ir::Op &op, LoweringContext &ctx, const TensorView &e,
                                     int64_t segment, bool split, unsigned planes, int64_t *path,
                                     int64_t inputPath) {
  if (!segment && e.rows < ctx.knobs.mxmSumRows)
    return acrossLanes(op, ctx, e, Combine::Sum, DType::F32, nullptr, 0, path);
  auto S = ctx.scratch(op, DType::F32, e.rows, ctx.chip().lanes);
  if (!S)
    return S.takeError();
  LaneFinish keep{&*S, [](Builder &, int value) { return value; }};
  if (auto err = sumRowsOnMxm(op, ctx, e, keep, path, MxmSum{segment, split, planes, inputPath}))
    return err;
  return *S;
}
} // namespace

llvm::Error reduce::softmaxRows(const ir::Op &op, LoweringContext &ctx, const TensorView &inRows,
                                const TensorView &outRows, const SoftmaxHow &how, const SoftmaxFinish &finish,
                                int64_t *path) {
  // Rows go in the order their inputs become ready: every pass pipelines
  // row after row, so a row that waits holds up all that follow it.
  const std::vector<int64_t> order = readinessOrder(inRows);
  const TensorView in = inOrder(inRows, order), out = inOrder(outRows, order);
  const DType inType = in.dtype;
  const int64_t segment = how.segment;
  const SoftmaxPrologue &prologue = how.prologue;
  // The maxima and the sums take an f32 vector per row of scratch each.
  // When that does not fit for every row at once (SRAM nearly full of
  // parameters), the rows go in blocks, halved until it fits: each block's
  // scratch is given back before the next one's is taken (s reuses m's
  // room). Nothing is placed before the first block's scratch is, so the
  // halving is clean.
  int64_t blockRows = in.rows;
  // A row's way through: its max, its e, its sum, its quotient.
  int64_t maxPath = 0, sumPath = 0;
  ShortestSpan expSpan, divSpan;
  // The rows' maxima, f32 in every lane. With a prologue the max is taken
  // of the stored values (in their own type: fewer streams per leaf) and the
  // prologue, monotone, applied to it on the fold's last step.
  auto maxOf = [&](const TensorView &rows, int64_t *foldPath) -> llvm::Expected<TensorView> {
    if (!prologue)
      return acrossLanes(op, ctx, rows, Combine::Max, DType::F32, nullptr, segment, foldPath);
    auto M = ctx.scratch(op, DType::F32, rows.rows, ctx.chip().lanes);
    if (!M)
      return M.takeError();
    LaneFinish toInput{&*M, [&](Builder &b, int value) { return prologue(b, value); }};
    auto T = acrossLanes(op, ctx, rows, Combine::Max, inType, &toInput, segment, foldPath);
    if (!T) {
      ctx.releaseScratch(*M);
      return T.takeError();
    }
    ctx.releaseScratch(*T);
    return *M;
  };
  // In place: each e vector is written after the max of its row, which
  // read the input vector it replaces, so nothing reads the old value
  // later.
  const bool inPlace = how.inPlace && inType == DType::F32;
  // With one vector a row, a row's e is the max's last step's work: that
  // step writes exp(x - max) instead of the max, so e waits neither for a
  // pass of its own nor for the cycles every row's fold left (attention's
  // e came about 350 cycles after its row's max at S=128).
  const bool expInFold = in.vecsPerRow == 1;
  std::optional<TensorView> early;
  if (expInFold && !inPlace) {
    auto E = ctx.scratch(op, DType::F32, in.rows, in.cols);
    if (!E)
      return E.takeError();
    early = *E;
  }
  // exp(x - m) for a stored vector `stored` of the input and its row's f32
  // max `m`.
  auto expOf = [&](Builder &b, int stored, int m) {
    int x = stored;
    if (prologue)
      x = prologue(b, x);
    else if (inType != DType::F32)
      x = b.add(vxm(Opcode::Cvt, inType, DType::F32), {x});
    return b.add(vxm(Opcode::Exp, DType::F32), {b.add(vxm(Opcode::Sub, DType::F32), {x, m})});
  };
  // e of a block's rows in the max's last step: its scratch is what the
  // block gives back.
  auto expOfMax = [&](const TensorView &rows, const TensorView &erows,
                      int64_t *foldPath) -> llvm::Expected<TensorView> {
    LaneFinish toExp{&erows, [&](Builder &b, int value) {
                       return expOf(b, b.read(rows, b.row(), 0), prologue ? prologue(b, value) : value);
                     }};
    return acrossLanes(op, ctx, rows, Combine::Max, prologue ? inType : DType::F32, &toExp, segment, foldPath);
  };
  const TensorView &eAll = expInFold ? (inPlace ? in : *early) : in;
  auto firstPass = [&](int64_t rows, int64_t *foldPath) {
    return expInFold ? expOfMax(rowsOf(in, 0, rows), rowsOf(eAll, 0, rows), foldPath)
                     : maxOf(rowsOf(in, 0, rows), foldPath);
  };
  llvm::Expected<TensorView> firstM = firstPass(in.rows, &maxPath);
  while (!firstM && blockRows > 1) {
    llvm::Error err = firstM.takeError();
    if (!takeDoesNotFit(err))
      return err;
    blockRows = (blockRows + 1) / 2;
    firstM = firstPass(blockRows, &maxPath);
  }
  if (!firstM)
    return firstM.takeError();
  llvm::Expected<TensorView> E = inPlace || expInFold ? llvm::Expected<TensorView>(eAll)
                                                      : ctx.scratch(op, DType::F32, in.rows, in.cols);
  if (!E)
    return E.takeError();
  int64_t prevE = 0, prevOut = 0;
  for (int64_t r0 = 0; r0 < in.rows; r0 += blockRows) {
    const int64_t n = std::min(blockRows, in.rows - r0);
    auto M = r0 == 0            ? std::move(firstM)
             : expInFold ? expOfMax(rowsOf(in, r0, n), rowsOf(*E, r0, n), nullptr)
                         : maxOf(rowsOf(in, r0, n), nullptr);
    if (!M)
      return M.takeError();
    if (!expInFold)
      for (int64_t r = r0; r < r0 + n; ++r)
        for (int64_t v = 0; v < in.vecsPerRow; ++v) {
          Builder b(ctx, *E, r, v);
          int x = b.read(in, r, v);
          auto p = b.finish(expOf(b, x, b.readBeside(*M, r - r0, 0, in)), prevE);
          if (!p)
            return cannotPlace(op, ctx);
          prevE = p->firstCycle;
          expSpan.note(*p);
        }
    ctx.releaseScratch(*M);
    int64_t blockSum = 0;
    // e's first row: the input's, through the max's fold and the exp.
    const int64_t ePath = how.inputPath < 0 || r0 > 0 ? -1 : how.inputPath + maxPath + expSpan.get();
    llvm::Expected<TensorView> S =
        sumOfExps(op, ctx, rowsOf(*E, r0, n), segment, !how.roundedToF16, how.sumPlanes, &blockSum, ePath);
    if (r0 == 0)
      sumPath = blockSum;
    if (!S)
      return S.takeError();
    for (int64_t r = r0; r < r0 + n; ++r)
      for (int64_t v = 0; v < in.vecsPerRow; ++v) {
        Builder b(ctx, out, r, v);
        int q = b.add(vxm(Opcode::Div, DType::F32), {b.read(*E, r, v), b.readBeside(*S, r - r0, 0, *E)});
        auto p = b.finish(finish(b, q, order[size_t(r)], v), prevOut);
        if (!p)
          return cannotPlace(op, ctx);
        prevOut = p->firstCycle;
        divSpan.note(*p);
      }
    ctx.releaseScratch(*S);
  }
  if (!inPlace)
    ctx.releaseScratch(*E);
  if (path)
    *path = maxPath + expSpan.get() + sumPath + divSpan.get();
  return llvm::Error::success();
}

llvm::Error lowerSoftmax(const ir::Op &op, LoweringContext &ctx) {
  const ir::Op &src = *op.operand(0);
  const int64_t rank = int64_t(src.type().shape.size());
  int64_t axis = op.intAttr("axis").value_or(rank - 1);
  if (axis < 0)
    axis += rank;
  if (rank == 0 || axis != rank - 1)
    return refuse<Refusal::AxisNotLast>(op, axis, rank);
  const DType inType = src.type().dtype, outType = op.type().dtype;
  if (!tensor::isFloat(inType))
    return refuse<Refusal::OperandDtype>(op, inType);
  const TensorView &in = ctx.view(&src);
  // The result first, so that the blocks' size (in softmaxRows) allows for
  // it.
  const ir::Op *epilogue = epilogueRoot(op, ctx);
  auto out = ctx.define(epilogue ? epilogue : &op);
  if (!out)
    return out.takeError();
  // In place only when nothing else reads the input's storage.
  auto users = ctx.users.find(&src);
  const bool inPlace = in.rowMap.empty() && !in.packed() && !in.storage->persistent &&
                       in.storage.use_count() == 1 && !ctx.returned.count(&src) &&
                       users != ctx.users.end() && users->second.size() == 1;
  auto finish = [&](Builder &b, int q, int64_t r, int64_t v) {
    if (outType != DType::F32)
      q = b.add(vxm(Opcode::Cvt, DType::F32, outType), {q});
    if (epilogue) {
      std::vector<const TensorView *> reads;
      q = buildEpilogue(b.tree, *epilogue, op, q, r, v, ctx, reads);
      b.alsoReads(reads);
    }
    return q;
  };
  // Rounded to f16 and nothing more: the result itself, or its cast.
  const bool roundedToF16 = epilogue ? epilogue->kind() == ir::OpKind::Convert &&
                                           epilogue->operand(0) == &op &&
                                           epilogue->type().dtype == DType::F16
                                     : outType == DType::F16;
  int64_t path = 0;
  if (auto e = softmaxRows(op, ctx, in, **out, SoftmaxHow{inPlace, 0, roundedToF16, 0, {}, ctx.pathOf(src)}, finish,
                           &path))
    return e;
  ctx.notePath(op, path);
  ctx.notePaceVia(op, src, path); // row r from row r
  if (epilogue) {
    ctx.notePathVia(*epilogue, op, 0);
    ctx.notePaceVia(*epilogue, op, 0);
  }
  return llvm::Error::success();
}

} // namespace lpu::scheduler
