// Reductions on the chip (reduce_sum, reduce_mean, reduce_max, reduce_min).
// Over the last axis a row is folded across its lanes in one or two steps
// of SXM distributes and VXM combines (see acrossLanes); the result holds
// the row's value in every lane. Over
// leading axes the reduced rows are combined vector by vector on the VXM in
// the reference's order (row-major over the reduced indices), so sums are
// bit-exact there. Floats are reduced in f32 and rounded once at the end.
#include "scheduler/lower/Reduce.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

namespace lpu::scheduler::reduce {

using namespace backend;

Instr sxm(Opcode code, DType type, unsigned count, bool east) {
  Instr in;
  in.op = code;
  in.dtype = type;
  in.count = count;
  in.unit = east ? 1 : 0;
  return in;
}

Instr vxm(Opcode code, DType type, DType type2) {
  Instr in;
  in.op = code;
  in.dtype = type;
  in.dtype2 = type2;
  return in;
}

Opcode combineOpcode(Combine how) {
  switch (how) {
  case Combine::Sum: return Opcode::Add;
  case Combine::Max: return Opcode::Max;
  case Combine::Min: return Opcode::Min;
  }
  return Opcode::Add;
}

bool shareSlice(const TensorView &a, const TensorView &b) {
  for (uint16_t s : a.allSlices())
    if (std::find(b.allSlices().begin(), b.allSlices().end(), s) != b.allSlices().end())
      return true;
  return false;
}

bool eastOf(const LoweringContext &ctx, const TensorView &view) {
  return ctx.chip().isEastSlice(view.allSlices().front());
}



namespace {

/// How a row of `n` elements (`vpr` vectors) is folded across lanes. One
/// step: every leaf is an SXM `distribute` of a vector with a constant lane
/// map, and the leaves meet on the VXM in a chain of combines. Each step
/// costs a trip from the data to the SXM, to the VXM and back (about 100
/// cycles on groqchip1), so there are at most four:
///  - one step (`spacing == 0`): leaf j broadcasts lane j (map: all j);
///  - two steps: leaf (v, j) of the first gives lane i < spacing element
///    i + j * spacing of vector v, so lane i of the partial holds the
///    elements congruent to i; the second broadcasts lanes 0..spacing-1 of
///    the partial and combines them;
///  - three steps: between them a middle step whose leaves rotate the
///    partial by multiples of `middle` (a divisor of the spacing), leaving
///    in lane i < middle the partial's lanes congruent to i; the last step
///    broadcasts those. Fewer leaves (and values on the streams) per row
///    for a trip more: for many rows;
///  - four steps: two such middle steps, the second's spacing a divisor of
///    the first's.
/// Leaves of one vector go in bundles of kBundle, combined in a balanced
/// tree, so their distributes issue in one cycle and share one read of the
/// vector (their maps come from kBundle copies on different slices): a
/// row's step reads its data once per bundle, which is what bounds the
/// throughput over many rows.
constexpr int64_t kBundle = 4;

struct FoldPlan {
  unsigned spacing = 0;
  /// Middle steps (none: two steps), each a spacing that divides the one
  /// before (the first: `spacing`): leaf j rotates the partial by j * that
  /// spacing, so lane i below it sums the partial's lanes congruent to i;
  /// the last step then broadcasts the last spacing's lanes.
  std::vector<unsigned> middles;
  int64_t leaves1 = 0, leaves2 = 0;
};

// One step's fixed latency: out to the SXM, over to the VXM, back.
int64_t stepTrip(const ChipDescription &chip, bool east) {
  const int64_t vxm = chip.vxmPosition(), sxm = chip.sxmPosition(east);
  return 2 * (vxm > sxm ? vxm - sxm : sxm - vxm) + 16;
}

FoldPlan planFold(const ChipDescription &chip, int64_t rows, int64_t n, int64_t vpr, bool east,
                  unsigned bytes) {
  const int64_t lanes = chip.lanes;
  const int64_t trip = stepTrip(chip, east);
  // The chain issues a combine every 2 cycles per bundle; with many rows
  // the reads of the busiest operand (one per bundle) bound the throughput.
  auto bundles = [](int64_t leaves) { return (leaves + kBundle - 1) / kBundle; };
  // Streams bound it too: a stream takes one value per cycle anywhere on
  // the chip (2 * streams_per_direction values a cycle), and a leaf puts
  // about three values of `bytes` streams on them: its own, a combine's,
  // and its share of the reads and maps. (With two, the transformer's
  // softmax over 256 rows of 64 kept two steps of 8 + 8 leaves where
  // three of 4 + 4 + 4 are faster, and std.nn.LayerNorm over 64 rows of
  // 256 f32 took 1,725 cycles in two steps where three take 1,317.)
  const int64_t perCycle = 2 * int64_t(chip.streamsPerDirection);
  auto cost = [&](int64_t steps, int64_t b1, int64_t b2, int64_t leaves, int64_t bm = 0) {
    return steps * trip + 2 * (b1 + b2 + bm) +
           std::max((rows - 1) * std::max({b1, b2, bm}),
                    (rows - 1) * 3 * leaves * int64_t(bytes) / perCycle);
  };
  FoldPlan best;
  int64_t bestCost = std::numeric_limits<int64_t>::max();
  if (vpr == 1) {
    best.leaves1 = n;
    bestCost = cost(1, bundles(n), 0, n);
  }
  const int64_t width = vpr == 1 ? n : lanes;
  for (int64_t s = 2; s < width; ++s) {
    // Only the last bundle of a tree may be partial: a shallower bundle
    // before a full one would need the data's (or a map copy's) read port
    // in the cycle a later bundle needs it. So a full vector's leaves fill
    // whole bundles.
    if (vpr > 1 && ((lanes + s - 1) / s) % kBundle != 0)
      continue;
    int64_t l1 = 0, b1 = 0;
    for (int64_t v = 0; v < vpr; ++v) {
      int64_t valid = std::min(lanes, n - v * lanes);
      l1 += (valid + s - 1) / s;
      b1 += bundles((valid + s - 1) / s);
    }
    int64_t c = cost(2, b1, bundles(s), l1 + s);
    if (c < bestCost) {
      bestCost = c;
      best = FoldPlan{unsigned(s), {}, l1, s};
    }
    // Three steps: a trip more, fewer leaves (rows of 128 f32: 8 + 4 + 4
    // instead of 12 + 11).
    for (int64_t m = 2; m < s; ++m) {
      if (s % m)
        continue;
      int64_t c3 = cost(3, b1, bundles(m), l1 + s / m + m, bundles(s / m));
      if (c3 < bestCost) {
        bestCost = c3;
        best = FoldPlan{unsigned(s), {unsigned(m)}, l1, m};
      }
      // Four steps: two middles, another trip for fewer leaves (512 rows
      // of 256 f32: 4 + 4 + 4 + 4, a bundle each, instead of 8 + 8 + 4).
      for (int64_t m2 = 2; m2 < m; ++m2) {
        if (m % m2)
          continue;
        int64_t c4 = cost(4, b1, bundles(m2), l1 + s / m + m / m2 + m2, bundles(s / m) + bundles(m / m2));
        if (c4 < bestCost) {
          bestCost = c4;
          best = FoldPlan{unsigned(s), {unsigned(m), unsigned(m2)}, l1, m2};
        }
      }
    }
  }
  return best;
}

void putU16(std::vector<uint8_t> &out, unsigned value) {
  out.push_back(uint8_t(value & 0xff));
  out.push_back(uint8_t(value >> 8));
}

} // namespace

llvm::Expected<TensorView> acrossLanes(const ir::Op &op, LoweringContext &ctx, const TensorView &in,
                                       Combine how, DType work, const LaneFinish *finish,
                                       int64_t segment, int64_t *path, FoldRate *rate) {
  const unsigned lanes = ctx.chip().lanes;
  const int64_t vpr = segment ? 1 : in.vecsPerRow, n = segment ? segment : in.cols;
  const FoldPlan plan =
      planFold(ctx.chip(), in.rows, n, vpr, eastOf(ctx, in), tensor::dtypeSize(work));
  // Halved partials (PlacementHeuristics): only for a fold of many rows
  // whose partials nobody reads after it (its last step writes the
  // result), and not striped (the partials are cut over slice groups then).
  const bool canHalve = finish && plan.spacing && in.rows >= ctx.knobs.halvedRows && !ctx.striped;
  ctx.heuristicsDecided.halvedPartials |= canHalve;
  const bool halves = canHalve && ctx.heuristics.halvedPartials;
  auto T = ctx.scratch(op, work, halves ? (in.rows + 1) / 2 : in.rows, lanes);
  if (!T)
    return T.takeError();
  std::optional<TensorView> TB;
  if (halves) {
    std::vector<uint16_t> avoid = T->allSlices();
    for (unsigned sl = 0; sl < ctx.chip().memSlices; ++sl)
      if (ctx.chip().isEastSlice(sl) != eastOf(ctx, *T))
        avoid.push_back(uint16_t(sl));
    auto tb = ctx.scratch(op, work, in.rows / 2, lanes, avoid);
    if (!tb)
      return tb.takeError();
    TB = *tb;
  }
  // Row r's partial: odd rows' in TB when halved.
  auto part = [&](int64_t r) -> std::pair<const TensorView *, int64_t> {
    if (!halves)
      return {&*T, r};
    return {r % 2 ? &*TB : &*T, r / 2};
  };
  auto partReady = [&](int64_t r) { return part(r).first->readyAt(part(r).second, 0); };
  // With segments, lane i belongs to the row from lane base(i) on; lanes
  // past the last whole segment fold with the first (their results are
  // never read).
  const int64_t segments = segment ? lanes / segment : 1;
  auto base = [&](int64_t i) { return segment && i < segments * segment ? i / segment * segment : 0; };
  const unsigned s = plan.spacing;
  const std::vector<unsigned> &mids = plan.middles;
  // The lanes the last step broadcasts.
  const unsigned lastSpacing = mids.empty() ? s : mids.back();
  // The lane maps, one vector each, as constants in the hemisphere of the
  // data they go with (a map and its data meet at that side's SXM in one
  // cycle; from the far hemisphere a map would take ~80 cycles longer):
  // the broadcasts of lanes 0..B-1 (B = n for one step, the spacing for
  // two; the second step's maps), and for two steps the first step's maps
  // of a full vector and of the last one. A lane that must not count gives
  // 0 for a sum (map 320) and a duplicate of a counted lane for max and min
  // (which is harmless there).
  auto fill = [&](int64_t i) { return how == Combine::Sum ? unsigned(lanes) : unsigned(base(i)); };
  // kBundle copies, each on slices of its own.
  auto mapsNear = [&](const TensorView &data,
                      const std::vector<uint8_t> &bytes) -> llvm::Expected<std::vector<TensorView>> {
    std::vector<uint16_t> avoid = in.allSlices();
    avoid.insert(avoid.end(), T->allSlices().begin(), T->allSlices().end());
    if (TB)
      avoid.insert(avoid.end(), TB->allSlices().begin(), TB->allSlices().end());
    const bool eastData = eastOf(ctx, data);
    for (unsigned sl = 0; sl < ctx.chip().memSlices; ++sl)
      if (ctx.chip().isEastSlice(sl) != eastData)
        avoid.push_back(uint16_t(sl));
    const int64_t count = int64_t(bytes.size()) / (2 * lanes);
    std::vector<TensorView> copies;
    for (int64_t k = 0; k < kBundle; ++k) {
      auto c = ctx.constant(op, DType::I16, count, lanes, bytes, avoid);
      if (!c)
        return c.takeError();
      avoid.insert(avoid.end(), c->allSlices().begin(), c->allSlices().end());
      copies.push_back(*c);
    }
    return copies;
  };
  auto broadcastMaps = [&](int64_t count) {
    std::vector<uint8_t> bytes;
    for (int64_t j = 0; j < count; ++j)
      for (unsigned i = 0; i < lanes; ++i)
        putU16(bytes, unsigned(base(i) + j));
    return bytes;
  };
  const int64_t lastValid = n - (vpr - 1) * int64_t(lanes);
  std::vector<uint8_t> first;
  auto firstStepMaps = [&](int64_t valid) {
    for (int64_t j = 0; j * s < valid; ++j)
      for (unsigned i = 0; i < lanes; ++i) {
        const int64_t o = int64_t(i) - base(i);
        putU16(first, o < s && o + j * s < valid ? unsigned(base(i) + o + j * s) : fill(i));
      }
  };
  int64_t fullMaps = 0, lastMaps = 0;
  if (s) {
    if (vpr > 1) {
      firstStepMaps(lanes);
      lastMaps = (lanes + s - 1) / s;
    }
    firstStepMaps(lastValid);
  } else {
    first = broadcastMaps(n);
  }
  // Only a group of lanes that runs past the row's end needs a first-step
  // map (the others are rotations, below).
  const bool partialGroups = !s || (vpr > 1 && lanes % s) || lastValid % s;
  auto maps1 = partialGroups ? mapsNear(in, first) : std::vector<TensorView>{};
  if (!maps1)
    return maps1.takeError();
  std::vector<TensorView> maps2;
  if (s) {
    auto m = mapsNear(*T, broadcastMaps(lastSpacing));
    if (!m)
      return m.takeError();
    maps2 = std::move(*m);
  }
  const Opcode combine = combineOpcode(how);

  // One tree per row and step: leaves distributed on the SXM next to their
  // data, a bundle's leaves (of one vector, maps from copies 0..) combined
  // in a balanced tree, the bundles in a chain on the VXM (the first
  // through a copy, so that no two bundles read a map copy in one cycle).
  // A first-step leaf whose whole group of lanes lies inside the row
  // (element i + j * s valid for every i < s) is an SXM `rotate` by j * s
  // instead: lanes 0..s-1 get the same elements as the map would give them,
  // and no map travels to the SXM (two streams and a map copy's read port
  // per leaf). Its lanes from s on hold other sums (of lanes past the row's
  // end too), which the second step never reads.
  struct Leaf {
    const TensorView *from;
    int64_t row, vec, map;
    int64_t rotate = -1; // the rotation's count, or -1: a distribute by `map`
  };
  auto step = [&](Builder &b, const std::vector<Leaf> &leaves, const std::vector<TensorView> &maps,
                  size_t bundleSize) {
    std::vector<int> sums;
    for (size_t k = 0; k < leaves.size();) {
      std::vector<int> bundle;
      for (size_t m = 0; m < bundleSize && k < leaves.size() && leaves[k].vec == leaves[k - m].vec;
           ++m, ++k) {
        const Leaf &l = leaves[k];
        const bool east = ctx.chip().isEastSlice(l.from->slices(l.row).front());
        int node = l.rotate >= 0
                       ? b.add(sxm(Opcode::Rotate, l.from->dtype, unsigned(l.rotate), east),
                               {b.read(*l.from, l.row, l.vec)})
                       : b.add(sxm(Opcode::Distribute, l.from->dtype, 0, east),
                               {b.read(*l.from, l.row, l.vec), b.read(maps[m], l.map, 0)});
        if (l.from->dtype != work)
          node = b.add(vxm(Opcode::Cvt, l.from->dtype, work), {node});
        bundle.push_back(node);
      }
      while (bundle.size() > 1) {
        std::vector<int> next;
        for (size_t i = 0; i + 1 < bundle.size(); i += 2)
          next.push_back(b.add(vxm(combine, work), {bundle[i], bundle[i + 1]}));
        if (bundle.size() % 2)
          next.push_back(bundle.back());
        bundle = std::move(next);
      }
      sums.push_back(bundle[0]);
    }
    // The chain's adds are two cycles apart, and so are the bundles' reads
    // but the first two. Bundle 0's sum goes through a copy so that no map
    // copy is read twice in a cycle; in a fold of two or three steps
    // through two, which puts every read two cycles after the previous one
    // and lets the next row's tree take the cycles between (two rows in
    // 2 * bundles cycles). With one copy the reads of four bundles fell at
    // 0, 1, 3 and 5, and no shift below six cleared them: the transformer's
    // layer norms went six cycles a row per step where four do. A one-step
    // fold (short rows) keeps one copy: there the cycle of latency was not
    // paid back (mlp's softmax over 10 classes).
    int acc = sums[0];
    if (sums.size() > 1) {
      acc = b.add(vxm(Opcode::Copy, work), {acc});
      if (s)
        acc = b.add(vxm(Opcode::Copy, work), {acc});
    }
    for (size_t k = 1; k < sums.size(); ++k)
      acc = b.add(vxm(combine, work), {acc, sums[k]});
    return acc;
  };
  // Rows pipeline: each row's tree of a step no earlier than the previous
  // row's first cycle of that step. A bundled tree that finds no cycle (at
  // the VXM, the values of several bundles in one cycle can take every
  // stream of a direction) falls back to a plain chain for the rest of the
  // step.
  struct StepState {
    int64_t prev = 0;
    size_t bundleSize = size_t(kBundle);
    ShortestSpan span; // of its trees
  };
  auto placeRow = [&](int64_t r, const std::vector<Leaf> &leaves, const std::vector<TensorView> &maps,
                      bool last, StepState &st) -> llvm::Error {
    const bool finishing = last && finish;
    for (;;) {
      Builder b(ctx, finishing ? *finish->dest : *part(r).first, finishing ? r : part(r).second, 0);
      int value = step(b, leaves, maps, st.bundleSize);
      if (finishing)
        value = finish->value(b, value);
      if (auto p = b.finish(value, st.prev)) {
        st.prev = p->firstCycle;
        st.span.note(*p);
        return llvm::Error::success();
      }
      if (st.bundleSize == 1)
        return cannotPlace(op, ctx);
      st.bundleSize = 1;
    }
  };
  auto firstLeaves = [&](int64_t r) {
    std::vector<Leaf> leaves;
    if (!s) {
      for (int64_t j = 0; j < n; ++j)
        leaves.push_back({&in, r, 0, j});
      return leaves;
    }
    for (int64_t v = 0; v < vpr; ++v) {
      int64_t valid = std::min<int64_t>(lanes, n - v * lanes);
      int64_t base = v == vpr - 1 ? lastMaps : fullMaps;
      for (int64_t j = 0; j * s < valid; ++j) {
        // out[i] = in[(i - count) mod lanes]: lane i gets element i + j * s.
        int64_t rotate = (j + 1) * s <= valid ? (lanes - j * s % lanes) % lanes : -1;
        leaves.push_back({&in, r, v, base + j, rotate});
      }
    }
    return leaves;
  };
  // The second step works in place: a row's tree reads its partial before
  // writing.
  auto secondLeaves = [&](int64_t r) {
    std::vector<Leaf> leaves;
    for (unsigned j = 0; j < lastSpacing; ++j)
      leaves.push_back({part(r).first, part(r).second, 0, j});
    return leaves;
  };
  // The i-th middle step, in place too: rotations of the partial (its
  // lanes below the spacing before hold sums, whole groups of `mid`).
  auto middleLeaves = [&](size_t i, int64_t r) {
    std::vector<Leaf> leaves;
    const unsigned before = i == 0 ? s : mids[i - 1], mid = mids[i];
    for (unsigned j = 0; j * mid < before; ++j)
      leaves.push_back({part(r).first, part(r).second, 0, 0, int64_t((lanes - j * mid % lanes) % lanes)});
    return leaves;
  };
  // The steps' trees are placed in about the order of the cycles they take:
  // a row's second step once the first step's rows have gone past the cycle
  // its partial is written in. Placed after every row's first step, the
  // second would find the tables full until the first ends; placed right
  // after its own row's first step, it would take the cycles the next rows'
  // first steps need (their reads of the data come a few cycles apart).
  // With a middle step, each step's rows follow the one before's the same
  // way.
  // A row's last step waits until the middle steps have been placed half
  // a trip past its partial: the trees of a step upstream take their
  // cycles first, since a middle step that slips holds up every row after
  // it and a last step only its own (the transformer's layer norms: 8,771
  // cycles at S=64 went to 8,516, BERT's 421,865 to 420,532).
  const int64_t lead = stepTrip(ctx.chip(), eastOf(ctx, in)) / 2;
  StepState one, two;
  std::vector<StepState> middle(mids.size());
  int64_t next = 0; // the next row whose last step is to be placed
  // The next row whose i-th middle step is to be placed.
  std::vector<int64_t> nextMid(mids.size(), 0);
  int64_t placed = 0; // rows whose first step is placed
  // Middle steps from the i-th on, then last steps, for the rows the step
  // before has gone past.
  auto cascade = [&](size_t from) -> llvm::Error {
    for (size_t i = from; i < mids.size(); ++i) {
      const int64_t upTo = i == 0 ? placed : nextMid[i - 1];
      const StepState &before = i == 0 ? one : middle[i - 1];
      for (; nextMid[i] < upTo && partReady(nextMid[i]) <= before.prev; ++nextMid[i])
        if (auto e = placeRow(nextMid[i], middleLeaves(i, nextMid[i]), maps2, false, middle[i]))
          return e;
    }
    if (mids.empty()) {
      for (; s && next < placed && partReady(next) <= one.prev; ++next)
        if (auto e = placeRow(next, secondLeaves(next), maps2, true, two))
          return e;
      return llvm::Error::success();
    }
    for (; next < nextMid.back() && partReady(next) + lead <= middle.back().prev; ++next)
      if (auto e = placeRow(next, secondLeaves(next), maps2, true, two))
        return e;
    return llvm::Error::success();
  };
  for (int64_t r = 0; r < in.rows; ++r) {
    if (auto e = placeRow(r, firstLeaves(r), *maps1, !s, one))
      return e;
    placed = r + 1;
    if (auto e = cascade(0))
      return e;
  }
  for (size_t i = 0; i < mids.size(); ++i)
    for (; nextMid[i] < in.rows; ++nextMid[i]) {
      if (auto e = placeRow(nextMid[i], middleLeaves(i, nextMid[i]), maps2, false, middle[i]))
        return e;
      if (auto e = cascade(i + 1))
        return e;
    }
  for (; s && next < in.rows; ++next)
    if (auto e = placeRow(next, secondLeaves(next), maps2, true, two))
      return e;
  // A row's steps follow one another: their trees' spans add up.
  if (path) {
    *path = one.span.get() + two.span.get();
    for (const StepState &m : middle)
      *path += m.span.get();
  }
  // The partials' reads: a bundle's leaves share one (leaves alone, after
  // a bundled tree found no cycle, read more).
  auto bundles = [](int64_t leaves) { return (leaves + kBundle - 1) / kBundle; };
  bool oneGroup = true;
  for (const TensorView *t : {&*T, TB ? &*TB : &*T})
    for (int64_t r = 1; r < t->rows && oneGroup; ++r)
      oneGroup = t->slices(r) == t->slices(0);
  int64_t reads = bundles(lastSpacing);
  for (size_t i = 0; i < mids.size(); ++i)
    reads += bundles((i == 0 ? s : mids[i - 1]) / mids[i]);
  if (TB)
    ctx.releaseScratch(*TB);
  if (rate && s && oneGroup)
    *rate = FoldRate{one.span.get(), reads, two.span.get(), halves ? 2 : 1};
  return *T;
}

} // namespace lpu::scheduler::reduce

namespace lpu::scheduler {

using namespace backend;
using namespace reduce;

namespace {

/// Whether a float sum across lanes sums the squares of one value (a layer
/// norm's variance) over enough rows for the MXM, and the heuristics put
/// it there (PlacementHeuristics::squaresOnMxm). Every term is >= 0, so
/// splitting each into two f16 (at most 2^-22 of it off) leaves the sum
/// at most about 2^-22 of itself off.
bool sumOfSquares(Combine how, DType work, const ir::Op &src, const TensorView &in,
                  const LoweringContext &ctx) {
  if (how != Combine::Sum || work != DType::F32 || src.kind() != ir::OpKind::Mul ||
      src.operand(0) != src.operand(1) || in.rows < ctx.knobs.mxmSquareRows || in.packed())
    return false;
  ctx.heuristicsDecided.squaresOnMxm = true;
  return ctx.heuristics.squaresOnMxm;
}

/// f32 bytes of `value` repeated over one vector.
std::vector<uint8_t> splatF32(float value, unsigned lanes) {
  std::vector<uint8_t> out(size_t(lanes) * 4);
  for (unsigned i = 0; i < lanes; ++i)
    std::memcpy(&out[size_t(i) * 4], &value, 4);
  return out;
}

/// argmax across lanes: the row's max M (acrossLanes), then per vector the
/// lane's index where x == M (or x is NaN: M is NaN then, and the first NaN
/// wins) and INT32_MAX elsewhere, then the smallest index (acrossLanes).
/// Exact. Returns i32 scratch [rows, 1 vector], every lane the index.
llvm::Expected<TensorView> argmaxLanes(const ir::Op &op, LoweringContext &ctx, const TensorView &in,
                                       DType work) {
  const unsigned lanes = ctx.chip().lanes;
  const int64_t vpr = in.vecsPerRow;
  auto M = acrossLanes(op, ctx, in, Combine::Max, work);
  if (!M)
    return M.takeError();
  std::vector<uint8_t> iotaBytes, bigBytes;
  auto put = [](std::vector<uint8_t> &out, int32_t value) {
    uint8_t b[4];
    std::memcpy(b, &value, 4);
    out.insert(out.end(), b, b + 4);
  };
  for (int64_t v = 0; v < vpr; ++v)
    for (unsigned i = 0; i < lanes; ++i) {
      int64_t idx = v * lanes + i;
      put(iotaBytes, idx < in.cols ? int32_t(idx) : std::numeric_limits<int32_t>::max());
    }
  for (unsigned i = 0; i < lanes; ++i)
    put(bigBytes, std::numeric_limits<int32_t>::max());
  auto iota = ctx.constant(op, DType::I32, vpr, lanes, std::move(iotaBytes));
  if (!iota)
    return iota.takeError();
  auto big = ctx.constant(op, DType::I32, 1, lanes, std::move(bigBytes));
  if (!big)
    return big.takeError();
  auto idx = ctx.scratch(op, DType::I32, in.rows, vpr * lanes);
  if (!idx)
    return idx.takeError();
  int64_t prev = 0;
  for (int64_t r = 0; r < in.rows; ++r)
    for (int64_t v = 0; v < vpr; ++v) {
      Builder b(ctx, *idx, r, v);
      auto x = [&] {
        int n = b.read(in, r, v);
        if (in.dtype != work)
          n = b.add(vxm(Opcode::Cvt, in.dtype, work), {n});
        return n;
      };
      int cond = b.add(vxm(Opcode::CmpEq, work), {x(), b.readBeside(*M, r, 0, in)});
      if (tensor::isFloat(work)) {
        int xn = x();
        int nan = b.add(vxm(Opcode::CmpNe, work), {xn, xn});
        cond = b.add(vxm(Opcode::Or, DType::Bool), {cond, nan});
      }
      int pick = b.add(vxm(Opcode::Select, DType::I32),
                       {cond, b.read(*iota, v, 0), b.readBeside(*big, 0, 0, *iota)});
      auto p = b.finish(pick, prev);
      if (!p)
        return cannotPlace(op, ctx);
      prev = p->firstCycle;
    }
  ctx.releaseScratch(*M);
  auto T = acrossLanes(op, ctx, *idx, Combine::Min, DType::I32);
  if (!T)
    return T.takeError();
  ctx.releaseScratch(*idx);
  return *T;
}

} // namespace

llvm::Error lowerReduce(const ir::Op &op, LoweringContext &ctx) {
  const ir::Op &src = *op.operand(0);
  const std::vector<int64_t> &shape = src.type().shape;
  const int64_t rank = int64_t(shape.size());
  const bool argmax = op.kind() == ir::OpKind::Argmax;
  std::vector<int64_t> axes = op.intsAttr("axes").value_or(std::vector<int64_t>{});
  if (argmax) {
    int64_t axis = op.intAttr("axis").value_or(rank - 1);
    axes = {axis < 0 ? axis + rank : axis};
  }
  const DType inType = src.type().dtype, outType = op.type().dtype;
  if (inType == DType::Bool)
    return refuse<Refusal::OperandDtype>(op, inType);
  const DType work = tensor::isFloat(inType) ? DType::F32 : inType;
  Combine how = op.kind() == ir::OpKind::ReduceMax   ? Combine::Max
                : op.kind() == ir::OpKind::ReduceMin ? Combine::Min
                                                     : Combine::Sum;
  const bool mean = op.kind() == ir::OpKind::ReduceMean;
  int64_t count = 1;
  for (int64_t a : axes)
    count *= shape[size_t(a)];
  if (rank == 0 || axes.empty() || count == 0)
    return refuse<Refusal::EmptyReduction>(op);
  // f16 widened on read (LoweringContext::widenedOnRead): the reduction
  // reads the f16 values; its leaves widen them (the sums on the MXM take
  // them as they are).
  const TensorView &in = ctx.view(ctx.widenedOnRead(&src) ? src.operand(0) : &src);
  const unsigned lanes = ctx.chip().lanes;
  std::optional<TensorView> divisor;
  if (mean) {
    auto d = ctx.constant(op, DType::F32, 1, lanes, splatF32(float(count), lanes));
    if (!d)
      return d.takeError();
    divisor = *d;
  }
  // The finishing ops on a reduced f32/int vector: mean's division, the
  // result type.
  // `from`: the tensor the value was read from, when it was just read.
  auto finishValue = [&](auto &b, int value, const TensorView *from = nullptr) {
    if (mean)
      value = b.add(vxm(Opcode::Div, work),
                    {value, from ? b.readBeside(*divisor, 0, 0, *from) : b.read(*divisor, 0, 0)});
    DType have = argmax ? DType::I32 : work;
    if (have != outType)
      value = b.add(vxm(Opcode::Cvt, have, outType), {value});
    return value;
  };

  bool lastAxis = std::find(axes.begin(), axes.end(), rank - 1) != axes.end();
  if (lastAxis) {
    if (axes.size() != 1)
      return refuse<Refusal::AxisNotLast>(op, *std::min_element(axes.begin(), axes.end()), rank);
    auto [outRows, outCols] = LoweringContext::rowsAndCols(op.type());
    if (outRows * outCols != in.rows)
      return refuse<Refusal::ResultLayout>(op);
    if (outCols == 1 && !argmax) {
      // keep = true (or one row): row r's result is row r's vector, which
      // the reduction's last step writes, finished. Elementwise work on it
      // (a layer norm's rsqrt(variance + eps)) runs in that step's trees.
      const ir::Op *epilogue = epilogueRoot(op, ctx);
      auto out = ctx.define(epilogue ? epilogue : &op);
      if (!out)
        return out.takeError();
      LaneFinish fin{*out, [&](Builder &b, int value) {
                       value = finishValue(b, value);
                       if (epilogue) {
                         std::vector<const TensorView *> reads;
                         value = buildEpilogue(b.tree, *epilogue, op, value, b.row(), 0, ctx, reads);
                         b.alsoReads(reads);
                       }
                       return value;
                     }};
      int64_t path = 0;
      FoldRate rate;
      if (how == Combine::Sum && work == DType::F32 && exactInF16(src) && !in.packed()) {
        if (auto e = sumRowsOnMxm(op, ctx, in, fin, &path))
          return e;
      } else if (sumOfSquares(how, work, src, in, ctx)) {
        // On two planes: its mean's, which hold the ones already.
        if (auto e = sumRowsOnMxm(op, ctx, in, fin, &path, MxmSum{0, true, 2}))
          return e;
      } else {
        auto T = acrossLanes(op, ctx, in, how, work, &fin, 0, &path, &rate);
        if (!T)
          return T.takeError();
        ctx.releaseScratch(*T);
      }
      ctx.notePath(op, path);
      ctx.notePaceVia(op, src, path); // row r folds row r
      if (rate.reads > 0)
        ctx.noteRowPace(op, {ctx.pathOf(src) + rate.first + rate.reads - 1 + rate.last, rate.reads, in.rows,
                             rate.perRows});
      if (epilogue) {
        ctx.notePathVia(*epilogue, op, 0);
        ctx.notePaceVia(*epilogue, op, 0);
      }
      return llvm::Error::success();
    }
    int64_t path = 0;
    auto T = argmax ? argmaxLanes(op, ctx, in, work) : acrossLanes(op, ctx, in, how, work, nullptr, 0, &path);
    if (!T)
      return T.takeError();
    auto out = ctx.define(&op);
    if (!out)
      return out.takeError();
    TensorView &view = **out;
    int64_t prev = 0;
    if (outCols == 1) {
      // keep = true (or one row): row r's result is row r's vector.
      for (int64_t r = 0; r < in.rows; ++r) {
        Builder b(ctx, view, r, 0);
        int value = finishValue(b, b.read(*T, r, 0), &*T);
        auto p = b.finish(value, prev);
        if (!p)
          return cannotPlace(op, ctx);
        prev = p->firstCycle;
      }
    } else {
      // Without keep the results of consecutive rows go into one vector's
      // lanes: a chain of selects, lane k from row base + k (a constant
      // identity of bools gives the lane masks).
      std::vector<uint8_t> eye(size_t(lanes) * lanes, 0);
      for (unsigned k = 0; k < lanes; ++k)
        eye[size_t(k) * lanes + k] = 1;
      // Off T's slices: the chain's reads of T and of the masks step a
      // cycle a select, so where the two share a slice the copy that takes
      // T's read a cycle earlier (readBeside) lands it on the mask's read
      // of the select before, at any cycle (argmax(sqrt(x), axis = 0) over
      // [9, 5] found no cycle so).
      auto masks = ctx.constant(op, DType::Bool, lanes, lanes, std::move(eye), T->allSlices());
      if (!masks)
        return masks.takeError();
      for (int64_t o = 0; o < view.rows; ++o)
        for (int64_t v = 0; v < view.vecsPerRow; ++v) {
          Builder b(ctx, view, o, v);
          int64_t base = o * outCols + v * lanes;
          int64_t n = std::min<int64_t>(lanes, outCols - v * lanes);
          int acc = b.read(*T, base, 0);
          if (n > 1)
            acc = b.add(vxm(Opcode::Copy, work), {acc});
          for (int64_t k = 1; k < n; ++k)
            acc = b.add(vxm(Opcode::Select, work),
                        {b.read(*masks, k, 0), b.readBeside(*T, base + k, 0, *masks), acc});
          auto p = b.finish(finishValue(b, acc), prev);
          if (!p)
            return cannotPlace(op, ctx);
          prev = p->firstCycle;
        }
    }
    ctx.releaseScratch(*T);
    ctx.notePath(op, path);
    if (outCols == 1)
      ctx.notePaceVia(op, src, path); // row r folds row r
    return llvm::Error::success();
  }

  if (argmax)
    return refuse<Refusal::AxisNotLast>(op, axes.front(), rank);
  // Leading axes: every output row combines whole input rows.
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t a : axes)
    reduced[size_t(a)] = true;
  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  const int64_t lead = rank - 1;
  // Kept and reduced leading dims, each with its row stride in the input.
  std::vector<int64_t> stride(size_t(lead), 1);
  for (int64_t d = lead - 2; d >= 0; --d)
    stride[size_t(d)] = stride[size_t(d + 1)] * shape[size_t(d + 1)];
  std::vector<int64_t> keptDims, redDims;
  for (int64_t d = 0; d < lead; ++d)
    (reduced[size_t(d)] ? redDims : keptDims).push_back(d);
  auto rowsOf = [&](const std::vector<int64_t> &dims) {
    // Input row offsets over `dims` in row-major order.
    std::vector<int64_t> offs{0};
    for (int64_t d : dims) {
      std::vector<int64_t> next;
      for (int64_t o : offs)
        for (int64_t i = 0; i < shape[size_t(d)]; ++i)
          next.push_back(o + i * stride[size_t(d)]);
      offs = std::move(next);
    }
    return offs;
  };
  std::vector<int64_t> outOffs = rowsOf(keptDims), redOffs = rowsOf(redDims);
  if (int64_t(outOffs.size()) != view.rows)
    return refuse<Refusal::ResultLayout>(op);
  int64_t prev = 0;
  for (int64_t o = 0; o < view.rows; ++o)
    for (int64_t v = 0; v < view.vecsPerRow; ++v) {
      Builder b(ctx, view, o, v);
      auto leaf = [&](int64_t k) {
        int node = b.read(in, outOffs[size_t(o)] + redOffs[size_t(k)], v);
        if (in.dtype != work)
          node = b.add(vxm(Opcode::Cvt, in.dtype, work), {node});
        return node;
      };
      int acc = leaf(0);
      if (redOffs.size() > 1)
        acc = b.add(vxm(Opcode::Copy, work), {acc});
      for (size_t k = 1; k < redOffs.size(); ++k)
        acc = b.add(vxm(combineOpcode(how), work), {acc, leaf(int64_t(k))});
      auto p = b.finish(finishValue(b, acc), prev);
      if (!p)
        return cannotPlace(op, ctx);
      prev = p->firstCycle;
    }
  ctx.notePath(op, 0);
  return llvm::Error::success();
}

} // namespace lpu::scheduler
