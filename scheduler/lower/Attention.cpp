// Multi-head attention with the heads packed into lanes (docs/scheduler.md,
// "Attention"). Split into heads, a head's score row of S keys fills only S
// of a vector's 320 lanes; the head split and merge are copies, every
// head's matmuls stream S rows, and the softmax folds one short row per
// vector. When several heads' rows fit one vector, the heads of a group
// share it instead:
//  - scores: Q (rows of H * dh lanes, as the projection wrote them) times
//    a block-diagonal weight whose row (h, d) holds K's column (h, d) at
//    lane offset (h mod group) * S: row i of the product holds, per head of
//    the group, its scores from that head's offset (zeros elsewhere add
//    nothing), one mm per row and group instead of one per row and head;
//  - the scale and the softmax run on those vectors, by segments of S
//    lanes (acrossLanes' and sumRowsOnMxm's `segment`);
//  - context: P's row (all the group's heads) times a block-diagonal V
//    whose row (h, j) is V's row j with only head h's lanes kept: the heads'
//    contexts land in their own lanes of one accumulator row, which is the
//    merged [S, H * dh] row the output projection reads. No copy splits or
//    merges heads.
// Each product adds a head's terms in the order one head's matmul would,
// among exact zeros: bit-identical to the per-head matmuls for finite data.
#include "scheduler/lower/Reduce.h"

#include <cmath>
#include <functional>
#include <set>

namespace lpu::scheduler {

using namespace backend;
using namespace reduce;

namespace {

bool isTransposeWith(const ir::Op &op, std::vector<int64_t> perm) {
  return op.kind() == ir::OpKind::Transpose && op.intsAttr("perm") == perm;
}

/// The one user of `op`, or null.
const ir::Op *onlyUser(const ir::Op &op, const LoweringContext &ctx) {
  auto it = ctx.users.find(&op);
  if (it == ctx.users.end() || it->second.size() != 1 || ctx.returned.count(&op))
    return nullptr;
  return it->second[0];
}

/// `reshape` of [B, S, H, dh] from a [B, S, H * dh] (or [B * S, H * dh])
/// f16 tensor: that tensor.
const ir::Op *headSplitSource(const ir::Op &reshape, int64_t B, int64_t S, int64_t H, int64_t dh) {
  if (reshape.kind() != ir::OpKind::Reshape || reshape.type().shape != std::vector<int64_t>{B, S, H, dh})
    return nullptr;
  const ir::Op *src = reshape.operand(0);
  const std::vector<int64_t> &shape = src->type().shape;
  if (src->type().dtype != ir::DType::F16 || shape.empty() || shape.back() != H * dh)
    return nullptr;
  if (shape != std::vector<int64_t>{B, S, H * dh} && shape != std::vector<int64_t>{B * S, H * dh})
    return nullptr;
  return src;
}

bool identityOrder(const ir::Op &op, const LoweringContext &ctx) {
  auto it = ctx.storedOrder.find(&op);
  if (it == ctx.storedOrder.end())
    return true;
  for (size_t i = 0; i < it->second.size(); ++i)
    if (it->second[i] != i)
      return false;
  return true;
}

std::optional<AttentionPlan> matchAttention(const ir::Op &sm, LoweringContext &ctx) {
  const unsigned lanes = ctx.chip().lanes;
  const std::vector<int64_t> &shape = sm.type().shape;
  if (shape.size() != 4)
    return std::nullopt;
  int64_t axis = sm.intAttr("axis").value_or(3);
  if (axis != 3 && axis != -1)
    return std::nullopt;
  AttentionPlan a;
  a.batches = shape[0];
  a.heads = shape[1];
  a.sq = shape[2];
  a.sk = shape[3];
  a.softmax = &sm;
  std::vector<const ir::Op *> absorbed;
  // The scores and the scale between them and the softmax: a chain of
  // elementwise ops inside one fusion group whose other operands are splat
  // constants (each vector of theirs is the same).
  const ir::Op *x = sm.operand(0);
  const ir::Op *cur = x;
  while (ir::isElementwise(cur->kind())) {
    if (cur != x && ctx.materialized(cur))
      return std::nullopt;
    const ir::Op *next = nullptr;
    for (const ir::Op *operand : cur->operands()) {
      if (operand->kind() == ir::OpKind::Constant)
        continue;
      if (next)
        return std::nullopt;
      next = operand;
    }
    if (!next || onlyUser(*next, ctx) != cur)
      return std::nullopt;
    absorbed.push_back(cur);
    cur = next;
  }
  if (cur->kind() != ir::OpKind::Matmul || onlyUser(*cur, ctx) == nullptr)
    return std::nullopt;
  a.scores = cur;
  if (cur != x) {
    if (epilogueRoot(*cur, ctx) != x)
      return std::nullopt;
    a.scale = x;
  }
  if (onlyUser(*x, ctx) != &sm)
    return std::nullopt;
  // Q K^T from the projections, split into heads.
  const ir::Op &qt = *a.scores->operand(0), &kt = *a.scores->operand(1);
  if (!isTransposeWith(qt, {0, 2, 1, 3}) || !isTransposeWith(kt, {0, 2, 3, 1}) ||
      onlyUser(qt, ctx) != a.scores || onlyUser(kt, ctx) != a.scores)
    return std::nullopt;
  const ir::Op &rq = *qt.operand(0), &rk = *kt.operand(0);
  if (rq.type().shape.size() != 4 || onlyUser(rq, ctx) != &qt || onlyUser(rk, ctx) != &kt)
    return std::nullopt;
  a.dh = rq.type().shape[3];
  a.q = headSplitSource(rq, a.batches, a.sq, a.heads, a.dh);
  a.k = headSplitSource(rk, a.batches, a.sk, a.heads, a.dh);
  if (!a.q || !a.k || a.scores->type().shape != shape)
    return std::nullopt;
  // P: the softmax rounded to f16.
  const ir::Op *probs = &sm;
  if (sm.type().dtype == ir::DType::F32) {
    probs = onlyUser(sm, ctx);
    if (!probs || probs->kind() != ir::OpKind::Convert || probs->type().dtype != ir::DType::F16 ||
        !ctx.materialized(probs))
      return std::nullopt;
  } else if (sm.type().dtype != ir::DType::F16) {
    return std::nullopt;
  }
  a.probs = probs;
  // P V, merged back into rows of H * dh.
  const ir::Op *context = onlyUser(*probs, ctx);
  if (!context || context->kind() != ir::OpKind::Matmul || context->operand(0) != probs ||
      context->type().dtype != ir::DType::F16)
    return std::nullopt;
  a.context = context;
  const ir::Op &vt = *context->operand(1);
  if (!isTransposeWith(vt, {0, 2, 1, 3}) || onlyUser(vt, ctx) != context)
    return std::nullopt;
  const ir::Op &rv = *vt.operand(0);
  if (onlyUser(rv, ctx) != &vt)
    return std::nullopt;
  a.v = headSplitSource(rv, a.batches, a.sk, a.heads, a.dh);
  if (!a.v)
    return std::nullopt;
  const ir::Op *back = onlyUser(*context, ctx);
  if (!back || !isTransposeWith(*back, {0, 2, 1, 3}))
    return std::nullopt;
  const ir::Op *merged = onlyUser(*back, ctx);
  const int64_t D = a.heads * a.dh;
  if (!merged || merged->kind() != ir::OpKind::Reshape ||
      (merged->type().shape != std::vector<int64_t>{a.batches, a.sq, D} &&
       merged->type().shape != std::vector<int64_t>{a.batches * a.sq, D}) ||
      (a.heads > 1 && aliasesOperand(*merged, lanes)))
    return std::nullopt;
  a.merged = merged;
  // Score rows of at most half a vector (the lowering's segments). One
  // head too: its merge is then a view of the context (a reshape that keeps
  // the rows' lanes), which the context's rows are written into as they
  // would be for several heads; the f16 scores with the scale on the
  // softmax's reads and the rows in the output projection's turns are what
  // a chip of one head gains over the op-by-op path (docs/scheduler.md,
  // "Attention").
  if (a.sk * 2 > int64_t(lanes))
    return std::nullopt;
  for (const ir::Op *op : {a.q, a.k, a.v, merged})
    if (!identityOrder(*op, ctx))
      return std::nullopt;
  for (const ir::Op *op : {&rq, &qt, &rk, &kt, a.scores, &rv, &vt, &sm, probs, context, back, merged})
    absorbed.push_back(op);
  std::set<const ir::Op *> seen;
  for (const ir::Op *op : absorbed)
    if (seen.insert(op).second)
      a.absorbed.push_back(op);
  return a;
}

/// Whether the scale between the scores and the softmax (converts, and
/// multiplications, divisions, additions and subtractions by constants, a
/// factor or divisor above 0) never lowers a larger value below a smaller
/// one: the max of the scaled scores is then the scaled max of the stored
/// ones.
bool monotoneScale(const ir::Op *op, const ir::Op &scores) {
  while (op != &scores) {
    auto constant = [&](int i, bool positive) {
      const ir::Op *c = op->operand(size_t(i));
      if (c->kind() != ir::OpKind::Constant)
        return false;
      auto v = c->floatAttr("value");
      return v && std::isfinite(*v) && (!positive || *v >= 1e-3);
    };
    const ir::Op *next = nullptr;
    switch (op->kind()) {
    case ir::OpKind::Convert:
      if (!tensor::isFloat(op->type().dtype) || !tensor::isFloat(op->operand(0)->type().dtype))
        return false;
      next = op->operand(0);
      break;
    case ir::OpKind::Div:
    case ir::OpKind::Sub:
      if (!constant(1, op->kind() == ir::OpKind::Div))
        return false;
      next = op->operand(0);
      break;
    case ir::OpKind::Mul:
    case ir::OpKind::Add: {
      const bool positive = op->kind() == ir::OpKind::Mul;
      if (constant(1, positive))
        next = op->operand(0);
      else if (constant(0, positive))
        next = op->operand(1);
      else
        return false;
      break;
    }
    default:
      return false;
    }
    op = next;
  }
  return true;
}

} // namespace

std::vector<AttentionPlan> findAttention(const ir::Function &fn, LoweringContext &ctx,
                                         const std::map<const ir::Op *, size_t> &index) {
  std::vector<AttentionPlan> plans;
  for (const auto &op : fn.ops()) {
    if (op->kind() != ir::OpKind::Softmax)
      continue;
    std::optional<AttentionPlan> plan = matchAttention(*op, ctx);
    // Everything is lowered at the scores: V must be computed by then.
    if (plan && index.at(plan->v) < index.at(plan->scores))
      plans.push_back(std::move(*plan));
  }
  return plans;
}

llvm::Error lowerAttention(const AttentionPlan &a, LoweringContext &ctx) {
  const ChipDescription &chip = ctx.chip();
  const int64_t lanes = chip.lanes, dim = chip.mxmDim;
  const unsigned planes = chip.mxmPlanes;
  const ir::Op &op = *a.scores;
  const int64_t B = a.batches, Sq = a.sq, Sk = a.sk, H = a.heads, dh = a.dh, D = H * dh;
  // Groups of heads whose rows share a vector, as even as they go.
  const int64_t fit = lanes / Sk, groups = (H + fit - 1) / fit, per = (H + groups - 1) / groups;
  auto headsOf = [&](int64_t g) { return std::min(per, H - g * per); };
  const TensorView &Q = ctx.view(a.q), &K = ctx.view(a.k), &V = ctx.view(a.v);
  if (Q.packed() || K.packed() || V.packed())
    return refuse<Refusal::PackedOperand>(op, "attention operands");
  auto zeros = ctx.constant(op, DType::F16, 1, lanes, std::vector<uint8_t>(size_t(lanes) * 2, 0));
  if (!zeros)
    return zeros.takeError();
  auto readZeros = [&](WorkTree &tree) { return tree.read(zeros->slices(0), zeros->address(0, 0)); };

  // K^T [B, D, Sk], row (b, h, d) from lane (h mod per) * Sk on.
  std::optional<TensorView> kt;
  int64_t ktPath = 0;
  TransposeTarget target{[&]() -> llvm::Expected<TensorView *> {
                           auto s = ctx.scratch(op, DType::F16, B * D, lanes);
                           if (!s)
                             return s.takeError();
                           kt = std::move(*s);
                           return &*kt;
                         },
                         [&](int64_t o) { return (o % D) / dh % per * Sk; }, &ktPath};
  std::optional<llvm::Error> transposed = transposeByGather(op, ctx, K, {B, Sk, D}, {0, 2, 1}, target);
  if (!transposed)
    return refuse<Refusal::TransposeMaps>(op);
  if (*transposed)
    return std::move(*transposed);

  // The critical path through the whole: a query's scores, its softmax,
  // its context row.
  const int64_t iwLatency = chip.timingOf(Opcode::InstallWeights, DType::F16).latency;
  const int64_t mmLatency = chip.timingOf(Opcode::MatMul, DType::F16).latency;
  int64_t scoresPath = 0;
  // Scores, one row per (batch, group, query). f16 scores under a monotone
  // scale are stored as they are and scaled on the softmax's reads: its
  // max folds f16 leaves (two streams each, not four). Otherwise they are
  // stored scaled, as the IR says.
  const bool rawScores = op.type().dtype == DType::F16 && (!a.scale || monotoneScale(a.scale, op));
  const DType scoreType = rawScores ? DType::F16 : a.softmax->operand(0)->type().dtype;
  // The softmax reads the scale's constants with every score vector: off
  // their slices.
  std::vector<uint16_t> scaleSlices;
  std::function<void(const ir::Op *)> constantsOf = [&](const ir::Op *at) {
    for (const ir::Op *operand : at->operands()) {
      if (operand == &op)
        continue;
      if (ctx.hasView(operand)) {
        const std::vector<uint16_t> &sl = ctx.view(operand).allSlices();
        scaleSlices.insert(scaleSlices.end(), sl.begin(), sl.end());
      } else {
        constantsOf(operand);
      }
    }
  };
  if (rawScores && a.scale && ctx.heuristics.scoresOffScale)
    constantsOf(a.scale);
  ctx.heuristicsDecided.scoresOffScale |= !scaleSlices.empty();
  // A chunk of slices per group (a group's Sq rows): the softmax reads a
  // score vector once per bundle of its max's first-step leaves and once
  // for its e, and the groups' rows, from planes of their own, come side
  // by side. In one slice group their reads took turns at its port (the
  // transformer at S=128: 11,287 cycles, 11,038 so).
  auto sc = ctx.scratch(op, scoreType, B * groups * Sq, lanes, scaleSlices, Sq, groups);
  if (!sc)
    return sc.takeError();
  {
    MatmulWork work;
    work.batches = B * groups;
    work.rows = Sq;
    work.K = D;
    work.N = per * Sk;
    // The queries' rows in the turns the output projection takes them in
    // (a reduce-scatter's chunks), as the context's below.
    if (work.batches == 1 && (work.rowChunk = turnChunk(*a.merged, ctx)))
      work.rowReady = [&](int64_t, int64_t m, int64_t t) { return Q.readyAt(m, t); };
    // Group g's lanes of Q: [lo, hi).
    auto lo = [&](int64_t bg) { return bg % groups * per * dh; };
    auto hi = [&](int64_t bg) { return lo(bg) + headsOf(bg % groups) * dh; };
    work.tileUsed = [&](int64_t bg, int64_t t, int64_t) { return lo(bg) < (t + 1) * dim && t * dim < hi(bg); };
    work.rowsLoaded = [&](int64_t bg, int64_t t, int64_t) { return std::min(dim, hi(bg) - t * dim); };
    work.weightRow = [&](WorkTree &tree, int64_t bg, int64_t t, int64_t r, int64_t, unsigned, int,
                         std::vector<const TensorView *> &reads) {
      const int64_t k = t * dim + r;
      if (k < lo(bg))
        return readZeros(tree);
      const int64_t row = bg / groups * D + k;
      reads.push_back(&*kt);
      int n = tree.read(kt->slices(row), kt->address(row, 0));
      tree.nodes[size_t(n)].notBefore = kt->readyAt(row, 0);
      return n;
    };
    work.aVector = [&](WorkTree &tree, int64_t bg, int64_t m, int64_t t, unsigned p, int,
                       std::vector<const TensorView *> &reads) {
      const int64_t row = bg / groups * Sq + m;
      reads.push_back(&Q);
      int x = tree.read(Q.slices(row), Q.address(row, t));
      tree.nodes[size_t(x)].notBefore = Q.readyAt(row, t);
      const int64_t valid = std::min(lanes, D - t * lanes);
      if (valid < lanes)
        x = zeroTail(tree, x, unsigned(valid), p, planes, unsigned(lanes));
      return x;
    };
    work.finish = [&](WorkTree &tree, int value, int64_t, int64_t, std::vector<const TensorView *> &reads) {
      if (op.type().dtype == DType::F16)
        value = tree.add(vxm(Opcode::Cvt, DType::F32, DType::F16), {value});
      // The scale's other operands are splat constants: any vector will do.
      if (a.scale && !rawScores)
        value = buildEpilogue(tree, *a.scale, op, value, 0, 0, ctx, reads);
      return value;
    };
    auto spans = runMatmul(op, ctx, work, *sc);
    if (!spans)
      return spans.takeError();
    // K^T's rows (batch 0's) each read all of K's first Sk rows; a plane
    // loads a tile's rows of them one a cycle (after the zeros below the
    // group's lanes, which wait for nothing) before it installs them.
    int64_t loads = dim;
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t t = 0; t * dim < D; ++t)
        if (work.tileUsed(g, t, 0))
          loads = std::min(loads, std::min(hi(g), (t + 1) * dim) - std::max(lo(g), t * dim));
    const int64_t firstMm = ctx.startOnPlanes(
        spans->planes, std::max(ctx.pathOf(*a.q) + spans->mm.get() - mmLatency,
                                ctx.pathOfRows(*a.k, Sk) + ktPath + loads - 1 +
                                    spans->pathFromB(iwLatency, mmLatency) - mmLatency - spans->acc.get()));
    scoresPath = firstMm + mmLatency + spans->acc.get();
  }
  ctx.releaseScratch(*kt);

  // P = softmax by segments of Sk lanes, rounded to f16; e overwrites the
  // scores.
  auto probs = ctx.scratch(*a.softmax, DType::F16, B * groups * Sq, lanes);
  if (!probs)
    return probs.takeError();
  auto toF16 = [&](Builder &b, int q, int64_t, int64_t) {
    return b.add(vxm(Opcode::Cvt, DType::F32, DType::F16), {q});
  };
  SoftmaxPrologue scaled;
  if (rawScores)
    scaled = [&](Builder &b, int value) {
      if (!a.scale)
        return b.add(vxm(Opcode::Cvt, DType::F16, DType::F32), {value});
      std::vector<const TensorView *> reads;
      value = buildEpilogue(b.tree, *a.scale, op, value, 0, 0, ctx, reads);
      b.alsoReads(reads);
      // The softmax computes in f32: a scale that ends in f16 (`* 0.125`
      // on f16 scores) is rounded there as the IR says, then widened.
      const DType scaleType = a.scale->type().dtype;
      if (scaleType != DType::F32)
        value = b.add(vxm(Opcode::Cvt, scaleType, DType::F32), {value});
      return value;
    };
  // The sums of e keep off the planes the context's matmul takes (a job
  // per column tile of D, each cut into parts by groups when planes are
  // left): it then installs V while the softmax runs, and multiplies each
  // row of P as it comes, instead of after the last sum.
  const int64_t contextJobs = B * ((D + dim - 1) / dim);
  const int64_t contextParts =
      contextJobs < int64_t(planes) && groups > 1 ? std::min<int64_t>(groups, int64_t(planes) / contextJobs) : 1;
  const unsigned sumPlanes =
      unsigned(std::max<int64_t>(2, int64_t(planes) - std::min<int64_t>(planes, contextJobs * contextParts)));
  int64_t softmaxPath = 0;
  if (auto e = softmaxRows(*a.softmax, ctx, *sc, *probs, SoftmaxHow{true, Sk, true, sumPlanes, scaled, scoresPath},
                           toF16, &softmaxPath))
    return e;
  ctx.releaseScratch(*sc);

  // Context: per group a K-tile of P's lanes against V's rows, each kept
  // to its head's lanes; the groups add into one accumulator row.
  auto out = ctx.define(a.merged);
  if (!out)
    return out.takeError();
  {
    MatmulWork work;
    work.batches = B;
    work.rows = Sq;
    work.K = groups * dim;
    work.N = D;
    if (B == 1 && (work.rowChunk = turnChunk(*a.merged, ctx)))
      work.rowReady = [&](int64_t, int64_t m, int64_t g) { return probs->readyAt(g * Sq + m, 0); };
    // Group g's heads' lanes of the merged row, [g * per * dh, ... +
    // headsOf(g) * dh): a column tile they miss gets nothing from it, and
    // its weights would be zeros only.
    work.tileUsed = [&](int64_t, int64_t g, int64_t j) {
      return g * per * dh < (j + 1) * lanes && j * lanes < (g * per + headsOf(g)) * dh;
    };
    work.rowsLoaded = [&](int64_t, int64_t g, int64_t) { return headsOf(g) * Sk; };
    work.weightRow = [&](WorkTree &tree, int64_t b, int64_t g, int64_t r, int64_t j, unsigned p, int,
                         std::vector<const TensorView *> &reads) {
      const int64_t h = g * per + r / Sk, row = b * Sk + r % Sk;
      // Head h's lanes within column tile j: [l, u).
      const int64_t l = std::max<int64_t>(0, h * dh - j * lanes);
      const int64_t u = std::min<int64_t>(lanes, (h + 1) * dh - j * lanes);
      if (l >= u)
        return readZeros(tree);
      reads.push_back(&V);
      int x = tree.read(V.slices(row), V.address(row, j));
      tree.nodes[size_t(x)].notBefore = V.readyAt(row, j);
      auto move = [&](Opcode code, int64_t count, int value) {
        Instr in = sxm(code, DType::F16, unsigned(count), p >= planes / 2);
        return tree.add(in, {value});
      };
      // Lanes below l: rotated to the top and shifted out; lanes from u on:
      // shifted out at the top and the rest rotated back.
      if (l > 0)
        x = move(Opcode::Shift, l, move(Opcode::Rotate, lanes - l, x));
      if (u < lanes)
        x = move(Opcode::Rotate, u, move(Opcode::Shift, lanes - u, x));
      return x;
    };
    work.aVector = [&](WorkTree &tree, int64_t b, int64_t m, int64_t g, unsigned p, int,
                       std::vector<const TensorView *> &reads) {
      const int64_t row = (b * groups + g) * Sq + m;
      reads.push_back(&*probs);
      int x = tree.read(probs->slices(row), probs->address(row, 0));
      tree.nodes[size_t(x)].notBefore = probs->readyAt(row, 0);
      // Past the group's rows the softmax left whatever its folds made.
      const int64_t valid = headsOf(g) * Sk;
      if (valid < lanes)
        x = zeroTail(tree, x, unsigned(valid), p, planes, unsigned(lanes));
      return x;
    };
    work.finish = [&](WorkTree &tree, int value, int64_t, int64_t, std::vector<const TensorView *> &) {
      return tree.add(vxm(Opcode::Cvt, DType::F32, DType::F16), {value});
    };
    auto spans = runMatmul(*a.context, ctx, work, **out);
    if (!spans)
      return spans.takeError();
    // V's first Sk rows are in every group's weights, loaded one a cycle.
    int64_t loads = lanes;
    for (int64_t g = 0; g < groups; ++g)
      loads = std::min(loads, headsOf(g) * Sk);
    // With one batch every plane's jobs are column tiles (or K parts) of
    // every query's row, taken a group's K-tile per pass: the first row
    // waits for the latest plane and is done in each plane's last pass,
    // as a matmul's (lowerMatmul).
    const bool everyPlane = B == 1 && Sq <= int64_t(chip.mxmAccRows);
    const int64_t issue = chip.timingOf(Opcode::MatMul, DType::F16).issue;
    const int64_t firstMm = ctx.startOnPlanes(
        spans->planes,
        std::max(scoresPath + softmaxPath + spans->mm.get() - mmLatency,
                 std::max(ctx.pathOf(*a.v) + loads - 1, ctx.pathOfRows(*a.v, Sk)) +
                     spans->pathFromB(iwLatency, mmLatency) - mmLatency - spans->acc.get()),
        everyPlane ? Sq : 0);
    ctx.notePathEnd(*a.merged, firstMm + mmLatency + spans->acc.get());
    if (everyPlane)
      ctx.notePace(*a.merged, issue, Sq);
  }
  ctx.releaseScratch(*probs);
  return llvm::Error::success();
}

} // namespace lpu::scheduler
