// partition{kind=tensor}: Megatron-style tensor parallelism over the chips
// of one group (docs/partitioning.md, "Tensor parallel").
//
// The analysis gives every value a sharding: replicated (every chip that
// needs it computes all of it), split along one axis (chip c holds the
// range ranges[c] of it) or partial (every chip holds a full-shape term of
// a sum). It starts from seeds: a matmul of a replicated value by a weight
// (a param seen through views) whose output columns are split, as
// Megatron's column-parallel matmul; the split then flows forward through
// elementwise work, reshapes (heads), transposes, softmaxes and batched
// matmuls, until a matmul contracts over the split axis (Megatron's
// row-parallel matmul), whose result is partial. A partial is summed by an
// all-reduce before anything else reads it. A seed is taken only when
// every path from it closes that way (nothing would have to gather a split
// value). Every seed that closes is taken: the pass does not weigh a split
// against its all-reduces (see docs/partitioning.md, "Not yet"). Then
// vocabulary parallelism (chooseVocabSeeds): a vocabulary head's split is
// gathered where it cannot close, and an embedding gather is split by the
// rows of its result (its table whole on every chip) where the table is
// small enough, else, by a vocabulary-sized table, by the table's rows,
// its result partial.
//
// Before the analysis, a fused projection read in equal blocks of its
// columns (GPT-2's q/k/v) is cut into one matmul per block
// (splitFusedProjections), so that each block splits by heads.
//
// The rewrite then writes the partitioned function explicitly: each split
// op once per chip at its local shape, a weight that a split op reads
// sliced to a `shard` of itself (only that slice is stored on the chip),
// replicated values computed on each chip that reads them, and every
// all-reduce as a reduce-scatter (chip j sums row chunk j of every chip's
// term, in chip order) then an all-gather (chip j sends its sum to every
// other chip, which concatenates the chunks), all of it slices, transfers,
// adds and concats that the reference interpreter and the scheduler know.
#include "ir/passes/Partition.h"
#include "ir/passes/Passes.h"

#include <llvm/ADT/STLExtras.h>

#include <algorithm>
#include <map>
#include <set>

namespace lpu::ir {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

using Ranges = std::vector<std::pair<int64_t, int64_t>>; // per chip: start, size

struct Sharding {
  enum Kind : uint8_t { Rep, Split, Partial } kind = Rep;
  int axis = -1;
  Ranges ranges;
  /// A split left by a reduce-scatter (rows of a sum), which may be
  /// gathered whole wherever a reader needs it; a split from a seed may not.
  bool scattered = false;
  /// A split from a head (a vocabulary-parallel seed, chooseVocabSeeds):
  /// gathered whole onto the chip that reads it where a reader needs it.
  bool gatherable = false;
  bool operator==(const Sharding &) const = default;
};

/// How the rewrite gets an operand of a split or partial op on chip c.
struct Need {
  enum Kind : uint8_t { Full, Local, Slice } kind = Full;
  int axis = -1; // Slice: the axis of the operand's own shape
  Ranges ranges;
};

struct Analysis {
  std::map<const Op *, Sharding> sharding;
  std::map<const Op *, std::vector<Need>> needs;
  /// When the analysis failed on a reshape whose chunks were not whole
  /// heads: the granule (in columns of the seed) that would align them.
  int64_t granule = 0;
  /// Why a seed split into whole heads was not taken (fewer heads than
  /// chips), for the error when no seed is.
  std::string wholeHeads;
  /// The values of heads' splits that are gathered whole (their readers
  /// could not take them split).
  std::set<const Op *> gathered;
  /// Heads by a table that a vocabulary-parallel gather reads too (tied
  /// embeddings): each chip's shard is stored as rows for the gather, so
  /// the head multiplies it as the left operand (Rewriter::tiedHead).
  std::set<const Op *> tiedHeads;
  bool ok = true;
};

/// What a trial takes besides the column seeds: the seeds whose split may
/// be gathered (vocabulary-parallel heads), and ops that read their
/// operands whole (a widening convert of a head's logits, gathered before
/// it so that the links carry the narrower values).
struct VocabSeeds {
  std::set<const Op *> heads;
  std::set<const Op *> wholeReads;
  /// Gathers split by the rows of their result (the axis given): every
  /// chip holds the table whole and gathers its rows' ids alone.
  std::map<const Op *, int> rowGathers;
};

int64_t product(llvm::ArrayRef<int64_t> dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= dims[i];
  return p;
}

/// Units of `granule` columns of `n`, spread over `chips` as evenly as
/// they go; empty when some chip would get none.
Ranges balanced(int64_t n, int64_t granule, unsigned chips) {
  if (granule <= 0 || n % granule)
    return {};
  int64_t units = n / granule;
  if (units < int64_t(chips))
    return {};
  Ranges r;
  for (unsigned c = 0; c < chips; ++c) {
    int64_t a = int64_t(c) * units / chips, b = int64_t(c + 1) * units / chips;
    r.push_back({a * granule, (b - a) * granule});
  }
  return r;
}

bool isElementwiseClass(OpClass c) {
  return c == OpClass::Unary || c == OpClass::Binary || c == OpClass::Ternary;
}

/// The param a weight operand is a view of (through reshapes, transposes,
/// broadcasts and slices), or null. A weight computed elementwise from
/// weights and constants alone (int8 weights dequantized by their scales:
/// `f16(f32(w) * scale)`) is its largest weight's.
const Op *weightOf(const Op *op) {
  auto throughViews = [](const Op *v) {
    while (v->kind() == OpKind::Reshape || v->kind() == OpKind::Transpose ||
           v->kind() == OpKind::Broadcast || v->kind() == OpKind::Convert || v->kind() == OpKind::Slice)
      v = v->operand(0);
    return v;
  };
  op = throughViews(op);
  if (op->kind() == OpKind::Param)
    return op;
  if (!isElementwiseClass(opClass(op->kind())))
    return nullptr;
  const Op *largest = nullptr;
  for (const Op *operand : op->operands()) {
    if (throughViews(operand)->kind() == OpKind::Constant)
      continue;
    const Op *w = weightOf(operand);
    if (!w)
      return nullptr;
    if (!largest || w->type().byteSize() > largest->type().byteSize())
      largest = w;
  }
  return largest;
}

/// The axis a partial value of `type` is reduce-scattered along (its rows:
/// the first axis longer than 1 but the last, with only 1s before it, and
/// at least `chips` long), or -1 when it has none.
int scatterAxis(const Type &type, unsigned chips) {
  for (size_t a = 0; a + 1 < type.rank(); ++a)
    if (type.shape[a] > 1)
      return type.shape[a] >= int64_t(chips) ? int(a) : -1;
  return -1;
}

class Analyzer {
public:
  Analyzer(const Function &fn, unsigned chips) : fn_(fn), chips_(chips) {}

  /// The shardings that follow from taking `seeds` (matmul -> column
  /// ranges).
  Analysis run(const std::map<const Op *, Ranges> &seeds, const VocabSeeds &vocab = {}) const {
    Analysis a;
    vocab_ = &vocab;
    for (const auto &owned : fn_.ops()) {
      const Op &op = *owned;
      if (!step(op, seeds, a)) {
        a.ok = false;
        return a;
      }
    }
    return a;
  }

private:
  Sharding of(const Analysis &a, const Op *op) const {
    auto it = a.sharding.find(op);
    return it == a.sharding.end() ? Sharding{} : it->second;
  }

  bool step(const Op &op, const std::map<const Op *, Ranges> &seeds, Analysis &a) const {
    // A partial operand is reduce-scattered into row chunks (Megatron's
    // sequence parallelism: what reads it works on its chip's rows), or
    // all-reduced when it has no rows to cut.
    std::vector<Sharding> in;
    for (const Op *o : op.operands()) {
      Sharding s = of(a, o);
      if (s.kind == Sharding::Partial) {
        const int axis = scatterAxis(o->type(), chips_);
        s = axis < 0 ? Sharding{}
                     : Sharding{Sharding::Split, axis,
                                balanced(o->type().shape[size_t(axis)], 1, chips_), true};
      }
      in.push_back(s);
    }
    if (vocab_->wholeReads.count(&op))
      gatherHeads(op, in, a);
    if (rule(op, in, seeds, a))
      return true;
    // Rows of a sum (or a head's split) that this op cannot read split:
    // gathered whole first.
    bool gathered = gatherHeads(op, in, a);
    for (Sharding &s : in)
      if (s.scattered) {
        s = {};
        gathered = true;
      }
    return gathered && rule(op, in, seeds, a);
  }

  /// Takes the operands of `op` that are heads' splits whole (recording
  /// them as gathered); whether there were any.
  bool gatherHeads(const Op &op, std::vector<Sharding> &in, Analysis &a) const {
    bool any = false;
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].kind == Sharding::Split && in[i].gatherable) {
        in[i] = {};
        a.gathered.insert(op.operand(i));
        any = true;
      }
    return any;
  }

  bool rule(const Op &op, const std::vector<Sharding> &in, const std::map<const Op *, Ranges> &seeds,
            Analysis &a) const {
    const size_t n = op.operands().size();
    if (auto seed = seeds.find(&op); seed != seeds.end()) {
      if (op.kind() == OpKind::Gather) {
        if (auto rows = vocab_->rowGathers.find(&op); rows != vocab_->rowGathers.end())
          return rowGather(op, in, rows->second, seed->second, a);
        return vocabGather(op, in, seed->second, a);
      }
      // Column-parallel: a replicated input times a weight's columns.
      if (in[0].kind != Sharding::Rep || in[1].kind != Sharding::Rep)
        return false;
      const int r = int(op.type().rank());
      a.sharding[&op] = {Sharding::Split, r - 1, seed->second, false, vocab_->heads.count(&op) != 0};
      a.needs[&op] = {Need{}, Need{Need::Slice, r - 1, seed->second}};
      return true;
    }
    bool anySplit = llvm::any_of(in, [](const Sharding &s) { return s.kind == Sharding::Split; });
    if (!anySplit)
      return true; // replicated
    if (op.kind() == OpKind::Return) {
      // A state's new value may stay split: each chip writes its slice
      // (a shard of the state, Rewriter::run). Any other output would
      // need gathering.
      const std::vector<std::string> names = op.stringsAttr("names").value_or(std::vector<std::string>{});
      const std::vector<std::string> states = op.stringsAttr("states").value_or(std::vector<std::string>{});
      for (size_t i = 0; i < n; ++i)
        if (in[i].kind == Sharding::Split &&
            (in[i].gatherable || i >= names.size() || !llvm::is_contained(states, names[i])))
          return false;
      std::vector<Need> needs;
      for (size_t i = 0; i < n; ++i)
        needs.push_back(in[i].kind == Sharding::Split ? Need{Need::Local, -1, {}} : Need{});
      a.needs[&op] = std::move(needs);
      return true;
    }
    if (opClass(op.kind()) == OpClass::Leaf)
      return false;
    auto needsFor = [&](int axisOfResult, const Ranges &ranges) {
      std::vector<Need> needs;
      for (size_t i = 0; i < n; ++i)
        needs.push_back(in[i].kind == Sharding::Split ? Need{Need::Local, -1, {}}
                                                      : Need{Need::Slice, axisOfResult, ranges});
      return needs;
    };
    const OpClass cls = opClass(op.kind());
    if (isElementwiseClass(cls)) {
      const Sharding *split = nullptr;
      for (const Sharding &s : in)
        if (s.kind == Sharding::Split) {
          if (split && !(*split == s))
            return false;
          split = &s;
        }
      a.sharding[&op] = *split;
      a.needs[&op] = needsFor(split->axis, split->ranges);
      return true;
    }
    const Sharding &s0 = in[0];
    switch (op.kind()) {
    case OpKind::Softmax:
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::Argmax: {
      std::vector<int64_t> axes;
      if (op.kind() == OpKind::Softmax)
        axes = {op.intAttr("axis").value_or(-1)};
      else
        axes = op.intsAttr("axes").value_or(std::vector<int64_t>{op.intAttr("axis").value_or(-1)});
      const int64_t rank = int64_t(op.operand(0)->type().rank());
      for (int64_t &x : axes)
        x = x < 0 ? x + rank : x; // an axis may count from the end
      if (llvm::is_contained(axes, int64_t(s0.axis)))
        return false;
      int axis = s0.axis;
      if (op.kind() != OpKind::Softmax && !op.boolAttr("keep").value_or(false))
        for (int64_t x : axes)
          axis -= x < s0.axis;
      a.sharding[&op] = {Sharding::Split, axis, s0.ranges, s0.scattered, s0.gatherable};
      a.needs[&op] = {Need{Need::Local, -1, {}}};
      return true;
    }
    case OpKind::Transpose: {
      std::vector<int64_t> perm = op.intsAttr("perm").value_or(std::vector<int64_t>{});
      auto it = llvm::find(perm, int64_t(s0.axis));
      if (it == perm.end())
        return false;
      a.sharding[&op] = {Sharding::Split, int(it - perm.begin()), s0.ranges, s0.scattered, s0.gatherable};
      a.needs[&op] = {Need{Need::Local, -1, {}}};
      return true;
    }
    case OpKind::Broadcast: {
      const int offset = int(op.type().rank() - op.operand(0)->type().rank());
      const int axis = s0.axis + offset;
      if (op.type().shape[size_t(axis)] != op.operand(0)->type().shape[size_t(s0.axis)])
        return false;
      a.sharding[&op] = {Sharding::Split, axis, s0.ranges, s0.scattered, s0.gatherable};
      a.needs[&op] = {Need{Need::Local, -1, {}}};
      return true;
    }
    case OpKind::Reshape: {
      auto mapped = mapThroughReshape(op.operand(0)->type().shape, op.type().shape, s0, a);
      if (!mapped)
        return false;
      a.sharding[&op] = *mapped;
      a.needs[&op] = {Need{Need::Local, -1, {}}};
      return true;
    }
    case OpKind::Slice: {
      auto start = op.intsAttr("start").value_or(std::vector<int64_t>{});
      auto limit = op.intsAttr("limit").value_or(std::vector<int64_t>{});
      size_t ax = size_t(s0.axis);
      if (ax >= start.size() || start[ax] != 0 || limit[ax] != op.operand(0)->type().shape[ax])
        return false;
      a.sharding[&op] = s0;
      a.needs[&op] = {Need{Need::Local, -1, {}}};
      return true;
    }
    case OpKind::Concat: {
      int64_t along = op.intAttr("axis").value_or(0);
      if (along < 0)
        along += int64_t(op.type().rank());
      if (along == s0.axis)
        return false;
      for (const Sharding &s : in)
        if (s.kind == Sharding::Split && !(s == s0))
          return false;
      const Sharding *split = &s0;
      for (const Sharding &s : in)
        if (s.kind == Sharding::Split)
          split = &s;
      a.sharding[&op] = *split;
      a.needs[&op] = needsFor(split->axis, split->ranges);
      return true;
    }
    case OpKind::Update: {
      // update(cache, pos, rows, axis = k) split along any other axis than
      // k (a KV cache by heads): each chip writes its rows into its slice
      // of the cache. The position is read whole.
      int64_t along = op.intAttr("axis").value_or(0);
      if (along < 0)
        along += int64_t(op.type().rank());
      const Sharding &split = in[0].kind == Sharding::Split ? in[0] : in[2];
      if (split.axis == along || in[1].kind != Sharding::Rep || split.gatherable)
        return false;
      for (size_t i : {size_t(0), size_t(2)})
        if (in[i].kind == Sharding::Split && !(in[i] == split))
          return false;
      a.sharding[&op] = {Sharding::Split, split.axis, split.ranges, split.scattered, false};
      auto need = [&](const Sharding &s) {
        return s.kind == Sharding::Split ? Need{Need::Local, -1, {}} : Need{Need::Slice, split.axis, split.ranges};
      };
      a.needs[&op] = {need(in[0]), Need{}, need(in[2])};
      return true;
    }
    case OpKind::Matmul: {
      const int r = int(op.type().rank());
      const Sharding &l = in[0], &rt = in[1];
      auto need = [&](const Sharding &s, int axis, const Ranges &ranges) {
        return s.kind == Sharding::Split ? Need{Need::Local, -1, {}} : Need{Need::Slice, axis, ranges};
      };
      // Batch axes: both operands split alike (heads).
      const Sharding &split = l.kind == Sharding::Split ? l : rt;
      if (split.axis < r - 2) {
        for (const Sharding *s : {&l, &rt})
          if (s->kind == Sharding::Split && !(*s == split))
            return false;
        a.sharding[&op] = {Sharding::Split, split.axis, split.ranges, split.scattered, split.gatherable};
        a.needs[&op] = {need(l, split.axis, split.ranges), need(rt, split.axis, split.ranges)};
        return true;
      }
      if (l.kind == Sharding::Split && l.axis == r - 2 && rt.kind == Sharding::Rep) {
        a.sharding[&op] = {Sharding::Split, r - 2, l.ranges, l.scattered, l.gatherable};
        a.needs[&op] = {Need{Need::Local, -1, {}}, Need{}};
        return true;
      }
      if (rt.kind == Sharding::Split && rt.axis == r - 1 && l.kind == Sharding::Rep) {
        a.sharding[&op] = {Sharding::Split, r - 1, rt.ranges, rt.scattered, rt.gatherable};
        a.needs[&op] = {Need{}, Need{Need::Local, -1, {}}};
        return true;
      }
      // Row-parallel: the contracted axis split on both sides, one of them
      // a weight's rows (Megatron's). A product of two computed values
      // contracted over a split (a single head's q k^T split along its
      // features) would round each chip's part of every dot product to
      // the result's dtype before the parts are added, far from one sum;
      // such a split does not close.
      if (!weightOf(op.operand(0)) && !weightOf(op.operand(1)))
        return false;
      const Sharding &k = l.kind == Sharding::Split ? l : rt;
      bool lk = l.kind == Sharding::Rep || (l.axis == r - 1 && l.ranges == k.ranges);
      bool rk = rt.kind == Sharding::Rep || (rt.axis == r - 2 && rt.ranges == k.ranges);
      if ((l.kind == Sharding::Split ? l.axis == r - 1 : rt.axis == r - 2) && lk && rk) {
        a.sharding[&op] = {Sharding::Partial, -1, k.ranges};
        a.needs[&op] = {need(l, r - 1, k.ranges), need(rt, r - 2, k.ranges)};
        return true;
      }
      return false;
    }
    default:
      return false; // gathers, convolutions, pools: replicated inputs only
    }
  }

  /// The split of a reshape's result that holds the same elements as the
  /// split `s` of its operand, if one does.
  std::optional<Sharding> mapThroughReshape(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to,
                                            const Sharding &s, Analysis &a) const {
    const size_t ax = size_t(s.axis);
    const int64_t before = product(from, 0, ax), after = product(from, ax + 1, from.size());
    for (size_t r = 0; r < to.size(); ++r) {
      if (product(to, 0, r) != before)
        continue;
      const int64_t afterTo = product(to, r + 1, to.size());
      if (afterTo == 0 || to[r] * afterTo != from[ax] * after)
        continue;
      Ranges ranges;
      bool whole = true;
      for (auto [start, size] : s.ranges) {
        if ((start * after) % afterTo || (size * after) % afterTo) {
          whole = false;
          break;
        }
        ranges.push_back({start * after / afterTo, size * after / afterTo});
      }
      if (!whole) {
        // Chunks must be whole rows of the result's split axis (whole
        // heads): ask for a granule that makes them so (a sum's rows are
        // gathered instead). An axis of 1 is no candidate: the split lands
        // on a later axis of the same elements ([1, 384] -> [1, 1, 384]).
        if (!s.scattered && to[r] > 1 && after && afterTo % after == 0)
          a.granule = std::max(a.granule, afterTo / after);
        continue;
      }
      return Sharding{Sharding::Split, int(r), ranges, s.scattered, s.gatherable};
    }
    return std::nullopt;
  }

  /// Vocabulary-parallel embedding: chip c gathers from its rows `ranges[c]`
  /// of the table (zero where an id is not among them), so every chip holds
  /// a term of the result: partial.
  bool vocabGather(const Op &op, const std::vector<Sharding> &in, const Ranges &ranges, Analysis &a) const {
    if (in[0].kind != Sharding::Rep || in[1].kind != Sharding::Rep)
      return false;
    a.sharding[&op] = {Sharding::Partial, -1, ranges};
    a.needs[&op] = {Need{Need::Slice, 0, ranges}, Need{}};
    return true;
  }

  /// A gather split by the rows of its result: chip c gathers by its
  /// slice of the ids along `axis` from the whole table. Its result is a
  /// split as a reduce-scatter leaves one, gathered whole where a reader
  /// needs it.
  bool rowGather(const Op &op, const std::vector<Sharding> &in, int axis, const Ranges &ranges,
                 Analysis &a) const {
    if (in[0].kind != Sharding::Rep || in[1].kind != Sharding::Rep)
      return false;
    a.sharding[&op] = {Sharding::Split, axis, ranges, true};
    a.needs[&op] = {Need{}, Need{Need::Slice, axis, ranges}};
    return true;
  }

  const Function &fn_;
  unsigned chips_;
  /// The vocabulary seeds of the trial that run() is analysing.
  mutable const VocabSeeds *vocab_ = nullptr;
};

/// Whether the analysis splits a matmul by a weight pinned whole (its
/// columns, as a seed, or its rows, as the matmul that closes one).
bool shardsPinnedWhole(const Analysis &a, llvm::ArrayRef<PartitionPin> pins) {
  for (const auto &[op, needs] : a.needs)
    for (size_t i = 0; op->kind() == OpKind::Matmul && i < needs.size() && i < op->operands().size(); ++i)
      if (needs[i].kind == Need::Slice)
        if (const Op *w = weightOf(op->operand(i)); w && pinnedAs(pins, *w, PartitionPin::Action::Whole))
          return true;
  return false;
}

/// The seeds taken, greedily in program order: every one whose split
/// closes and holds no shard of a weight pinned whole.
std::map<const Op *, Ranges> chooseSeeds(const Function &fn, unsigned chips, Analysis &result,
                                         llvm::ArrayRef<PartitionPin> pins) {
  Analyzer analyzer(fn, chips);
  std::map<const Op *, Ranges> seeds;
  Analysis current = analyzer.run(seeds);
  for (const auto &owned : fn.ops()) {
    const Op &op = *owned;
    auto had = current.sharding.find(&op);
    if (op.kind() != OpKind::Matmul || !weightOf(op.operand(1)) ||
        (had != current.sharding.end() && !had->second.scattered))
      continue;
    const int64_t n = op.type().shape.back();
    int64_t granule = 1;
    for (int attempt = 0; attempt < 4; ++attempt) {
      Ranges ranges = balanced(n, granule, chips);
      if (ranges.empty()) {
        // Whole heads asked for, fewer of them than chips.
        if (granule > 1 && current.wholeHeads.empty())
          current.wholeHeads = "columns in whole heads of " + std::to_string(granule) +
                               " (a reshape into heads) are " + std::to_string(n / granule) +
                               " heads, fewer than the " + std::to_string(chips) + " chips";
        break;
      }
      auto trial = seeds;
      trial[&op] = ranges;
      Analysis next = analyzer.run(trial);
      if (!next.ok) {
        if (next.granule > granule && next.granule % granule == 0) {
          granule = next.granule;
          continue;
        }
        break;
      }
      if (!pins.empty() && shardsPinnedWhole(next, pins))
        break;
      seeds = std::move(trial);
      current = std::move(next);
      break;
    }
  }
  result = std::move(current);
  return seeds;
}

/// Whether `op` depends on an entry input (ids that are data, not
/// positions computed from constants).
bool readsInput(const Op *op, std::map<const Op *, bool> &memo) {
  if (op->kind() == OpKind::Input)
    return true;
  auto [it, fresh] = memo.try_emplace(op, false);
  if (!fresh)
    return it->second;
  bool any = false;
  for (const Op *o : op->operands())
    any = any || readsInput(o, memo);
  return memo[op] = any;
}

/// The elements that cross the links for a head's split (Analysis::
/// gathered) in bytes.
uint64_t gatheredBytes(const Analysis &a) {
  uint64_t bytes = 0;
  for (const Op *op : a.gathered)
    bytes += op->type().byteSize();
  return bytes;
}

/// Megatron's vocabulary parallelism, after the column seeds are chosen
/// (docs/partitioning.md, "Vocabulary"):
///
/// - Heads: a matmul by a weight's columns whose split cannot close (it
///   reaches the return, or a softmax or argmax over the vocabulary) is
///   split anyway, its split gathered onto the chip that reads it whole, when
///   the weight is a vocabulary projection (at least 4 times as many columns
///   as rows) larger than what crosses for it: the values gathered plus the
///   input every chip then needs whole (`W >= O + N * I`, in bytes). A
///   widening convert of the gathered logits is done after the gather.
/// - Embeddings: a gather along the rows of a weight by ids that are data
///   is split by the table's rows when the table is a vocabulary (at least 4
///   times as many rows as columns, and at least N times the elements it
///   gathers), or when a head holds the same rows of it (a tied table: one
///   shard per chip serves both). Its result is partial.
/// Weights pinned whole (`--pin GLOB=whole`) are neither heads nor tables.
/// A weight at least this many times as wide as deep (columns over rows
/// of a head, rows over columns of an embedding table) is a vocabulary's:
/// GPT-2's 50257 x 768, Llama-2-70B's 32000 x 8192. Whether splitting it
/// pays is then a matter of bytes, checked separately.
constexpr int64_t kVocabularyAspect = 2;

void chooseVocabSeeds(const Function &fn, unsigned chips, std::map<const Op *, Ranges> &seeds,
                      VocabSeeds &vocab, Analysis &current, llvm::ArrayRef<PartitionPin> pins,
                      const PartitionCosts &costs) {
  Analyzer analyzer(fn, chips);
  const uint64_t N = chips;
  for (const auto &owned : fn.ops()) {
    const Op &op = *owned;
    if (op.kind() != OpKind::Matmul || seeds.count(&op) || !weightOf(op.operand(1)) ||
        pinnedAs(pins, *weightOf(op.operand(1)), PartitionPin::Action::Whole))
      continue;
    if (auto had = current.sharding.find(&op); had != current.sharding.end() && !had->second.scattered)
      continue;
    const Type &w = op.operand(1)->type();
    const int64_t cols = w.shape.back(), rows = w.rank() >= 2 ? w.shape[w.rank() - 2] : 1;
    if (cols < kVocabularyAspect * rows)
      continue;
    Ranges ranges = balanced(cols, 1, chips);
    if (ranges.empty())
      continue;
    auto trial = seeds;
    trial[&op] = ranges;
    VocabSeeds next = vocab;
    next.heads.insert(&op);
    Analysis a = analyzer.run(trial, next);
    if (!a.ok || shardsPinnedWhole(a, pins))
      continue;
    // Gather the logits before a widening convert.
    bool narrowed = false;
    for (const Op *g : a.gathered)
      if (g->kind() == OpKind::Convert &&
          tensor::dtypeSize(g->type().dtype) > tensor::dtypeSize(g->operand(0)->type().dtype)) {
        next.wholeReads.insert(g);
        narrowed = true;
      }
    if (narrowed) {
      Analysis b = analyzer.run(trial, next);
      if (b.ok)
        a = std::move(b);
      else
        next.wholeReads = vocab.wholeReads;
    }
    const uint64_t weight = weightOf(op.operand(1))->type().byteSize();
    if (weight < gatheredBytes(a) + N * op.operand(0)->type().byteSize())
      continue;
    seeds = std::move(trial);
    vocab = std::move(next);
    current = std::move(a);
  }
  std::map<const Op *, bool> memo;
  std::set<const Op *> tiedHeads;
  for (const auto &owned : fn.ops()) {
    const Op &op = *owned;
    const Op *table = op.kind() == OpKind::Gather ? op.operand(0) : nullptr;
    if (!table || table->kind() != OpKind::Param || op.intAttr("axis").value_or(0) != 0 ||
        table->type().rank() != 2 || !readsInput(op.operand(1), memo) ||
        current.sharding.count(&op) || pinnedAs(pins, *table, PartitionPin::Action::Whole))
      continue;
    const int64_t rows = table->type().shape[0], cols = table->type().shape[1];
    // Split by the rows of its result, the table whole on every chip, when
    // it takes at most costs.wholeTableFill of a chip's SRAM, no head reads
    // it and no pin holds it split:
    // each chip gathers its own rows' ids, and what reads them takes them
    // as it takes the rows of a reduce-scatter (BERT-base's embeddings:
    // the word table's vocabulary split needs every chip to gather every
    // row and a reduce-scatter of the sum, a gather of an eighth of the
    // rows needs neither).
    const bool readOnlyHere = llvm::none_of(fn.ops(), [&](const auto &user) {
      return user.get() != &op && llvm::is_contained(user->operands(), table);
    });
    const int axis = scatterAxis(op.type(), chips);
    if (readOnlyHere && axis >= 0 && size_t(axis) < op.operand(1)->type().rank() &&
        double(table->type().byteSize()) <= costs.wholeTableFill * double(costs.sramBytesPerChip) &&
        !pinnedAs(pins, *table, PartitionPin::Action::Split)) {
      Ranges byRows = balanced(op.type().shape[size_t(axis)], 1, chips);
      auto trial = seeds;
      trial[&op] = byRows;
      VocabSeeds next = vocab;
      next.rowGathers[&op] = axis;
      Analysis a = analyzer.run(trial, next);
      if (!byRows.empty() && a.ok) {
        seeds = std::move(trial);
        vocab = std::move(next);
        current = std::move(a);
        continue;
      }
    }
    // The rows a head holds of this table (read transposed), if one does;
    // any other reader of the table (whole, or by another slicing) keeps
    // the gather whole, else the chip would hold the table twice.
    Ranges tied;
    std::vector<const Op *> heads;
    bool other = false;
    for (const auto &user : fn.ops()) {
      if (user.get() == &op || !llvm::is_contained(user->operands(), table))
        continue;
      bool head = user->kind() == OpKind::Transpose &&
                  user->intsAttr("perm").value_or(std::vector<int64_t>{}) == std::vector<int64_t>{1, 0};
      for (const auto &reader : fn.ops()) {
        if (!head || !llvm::is_contained(reader->operands(), user.get()))
          continue;
        auto seed = seeds.find(reader.get());
        if (seed == seeds.end() || reader->operand(1) != user.get() || (!tied.empty() && tied != seed->second))
          head = false;
        else {
          tied = seed->second;
          heads.push_back(reader.get());
        }
      }
      other = other || !head;
    }
    if (other)
      continue;
    const bool vocabulary = rows >= kVocabularyAspect * cols && uint64_t(table->type().numElements()) >= N * uint64_t(op.type().numElements());
    if (tied.empty() && !vocabulary)
      continue;
    Ranges ranges = tied.empty() ? balanced(rows, 1, chips) : tied;
    if (ranges.empty())
      continue;
    auto trial = seeds;
    trial[&op] = ranges;
    Analysis a = analyzer.run(trial, vocab);
    if (!a.ok)
      continue;
    seeds = std::move(trial);
    current = std::move(a);
    tiedHeads.insert(heads.begin(), heads.end());
  }
  current.tiedHeads = std::move(tiedHeads);
}

/// Writes the partitioned function (see the file comment).
class Rewriter {
public:
  Rewriter(Function &fn, unsigned chips, const Analysis &a, bool markWhole)
      : fn_(fn), chips_(chips), a_(a), markWhole_(markWhole) {}

  llvm::Error run() {
    std::vector<Op *> old;
    for (const auto &op : fn_.ops())
      old.push_back(op.get());
    Op *ret = fn_.terminator();
    // Every input stays an input (on chip 0 at least, in order), but a
    // state, which is read where its slices are (or whole where it is
    // read whole).
    for (Op *op : old)
      if (op->kind() == OpKind::Input && !op->boolAttr("state").value_or(false))
        rep(op, 0);
    // Split and partial ops in program order, once per chip; the
    // replicated ones when a chip first needs them.
    for (Op *op : old) {
      if (op == ret)
        continue;
      auto s = a_.sharding.find(op);
      if (s == a_.sharding.end() || s->second.kind == Sharding::Rep)
        continue;
      for (unsigned c = 0; c < chips_; ++c)
        local(op, c);
    }
    if (ret) {
      // A split state's new value leaves as one shard per chip, under the
      // state's name (docs/ir.md, "State").
      std::vector<Op *> operands;
      std::vector<std::string> names, declared = ret->stringsAttr("names").value_or(std::vector<std::string>{});
      std::vector<int64_t> shards;
      bool anyShard = false;
      for (size_t i = 0; i < ret->operands().size(); ++i) {
        Op *o = ret->operand(i);
        const std::string name = i < declared.size() ? declared[i] : "out" + std::to_string(i);
        const Sharding s = shardingOf(o);
        auto need = a_.needs.find(ret);
        const bool sharded = need != a_.needs.end() && i < need->second.size() &&
                           need->second[i].kind == Need::Local && s.kind == Sharding::Split;
        if (!sharded) {
          operands.push_back(rep(o, 0));
          names.push_back(name);
          shards.insert(shards.end(), {-1, 0, 0});
          continue;
        }
        anyShard = true;
        for (unsigned c = 0; c < chips_; ++c) {
          operands.push_back(local(o, c));
          names.push_back(name);
          shards.insert(shards.end(), {int64_t(s.axis), s.ranges[c].first, o->type().shape[size_t(s.axis)]});
        }
      }
      Op *r = fn_.append(OpKind::Return, Type{}, std::move(operands), ret->loc());
      for (const auto &[name, value] : ret->attrs())
        r->setAttr(name, value);
      r->setAttr("names", std::move(names));
      if (anyShard)
        r->setAttr("shards", std::move(shards));
    }
    std::set<const Op *> dead(old.begin(), old.end());
    fn_.eraseIf([&](const Op &op) { return dead.count(&op) != 0; });
    return llvm::Error::success();
  }

private:
  Op *make(const Op &like, OpKind kind, Type type, std::vector<Op *> operands, unsigned chip) {
    Op *op = fn_.append(kind, std::move(type), std::move(operands), like.loc());
    for (const auto &[name, value] : like.attrs())
      if (name != "fusion" && name != "chip")
        op->setAttr(name, value);
    op->setAttr("chip", int64_t(chip));
    return op;
  }
  Op *make(const Location &loc, OpKind kind, Type type, std::vector<Op *> operands, unsigned chip) {
    Op *op = fn_.append(kind, std::move(type), std::move(operands), loc);
    op->setAttr("chip", int64_t(chip));
    return op;
  }

  Sharding shardingOf(const Op *op) const {
    auto it = a_.sharding.find(op);
    return it == a_.sharding.end() ? Sharding{} : it->second;
  }

  /// The whole of `op` on chip c.
  Op *rep(Op *op, unsigned c) { return markedWhole(op, wholeOf(op, c)); }

  /// With markWhole_, `whole` (the whole of `op` on some chip) names `op`
  /// (kWholeAttr), so that the copies of one value on the chips can be
  /// found again (partitionHybrid's crossings).
  Op *markedWhole(const Op *op, Op *whole) {
    if (markWhole_ && chips_ > 1 && !whole->intAttr(kWholeAttr)) {
      auto [it, added] = wholeIds_.try_emplace(op, int64_t(wholeIds_.size()));
      (void)added;
      whole->setAttr(kWholeAttr, it->second);
    }
    return whole;
  }

  Op *wholeOf(Op *op, unsigned c) {
    Sharding s = shardingOf(op);
    if (s.kind == Sharding::Partial)
      return allReduced(op, c);
    if (s.kind == Sharding::Split)
      return gather(op, c);
    Op *&there = rep_[{op, c}];
    if (there)
      return there;
    if (Op *fromSome = sliceOfSomeChips(op, c))
      return there = fromSome;
    std::vector<Op *> operands;
    for (Op *o : op->operands())
      operands.push_back(rep(o, c));
    there = make(*op, op->kind(), op->type(), std::move(operands), c);
    return there;
  }

  /// A slice whose range along its operand's split axis lies within some
  /// chips' parts but not all (BERT's pooler reading token 0 of the last
  /// layer's rows, which a reduce-scatter left on chip 0): each of those
  /// chips slices its own part, and only those slices cross to chip c,
  /// concatenated there, instead of every chip's part being gathered whole
  /// for the slice to take a few rows of it. Null when the slice is not
  /// such a one.
  Op *sliceOfSomeChips(Op *op, unsigned c) {
    if (op->kind() != OpKind::Slice)
      return nullptr;
    Op *o = op->operand(0);
    const Sharding s = shardingOf(o);
    int axis = s.axis;
    Ranges ranges = s.ranges;
    if (s.kind == Sharding::Partial) {
      // The rows of the sum a reduce-scatter leaves on each chip.
      axis = scatterAxis(o->type(), chips_);
      if (axis < 0)
        return nullptr;
      ranges = balanced(o->type().shape[size_t(axis)], 1, chips_);
    } else if (s.kind != Sharding::Split) {
      return nullptr;
    }
    auto lo = op->intsAttr("start"), hi = op->intsAttr("limit");
    if (!lo || !hi || lo->size() != o->type().rank() || hi->size() != lo->size() || axis < 0 ||
        ranges.size() != chips_)
      return nullptr;
    const int64_t start = (*lo)[size_t(axis)], limit = (*hi)[size_t(axis)];
    std::vector<unsigned> holders;
    for (unsigned j = 0; j < chips_; ++j)
      if (ranges[j].first < limit && start < ranges[j].first + ranges[j].second)
        holders.push_back(j);
    if (holders.empty() || holders.size() == chips_)
      return nullptr;
    std::vector<Op *> parts;
    for (unsigned j : holders) {
      const auto [first, size] = ranges[j];
      Op *part = s.kind == Sharding::Partial ? scattered(o, j) : local(o, j);
      std::vector<int64_t> from = *lo, to = *hi;
      from[size_t(axis)] = std::max(start, first) - first;
      to[size_t(axis)] = std::min(limit, first + size) - first;
      Type type = op->type();
      type.shape[size_t(axis)] = to[size_t(axis)] - from[size_t(axis)];
      Op *sliced = make(*op, OpKind::Slice, type, {part}, j);
      sliced->setAttr("start", from);
      sliced->setAttr("limit", to);
      parts.push_back(j == c ? sliced : transfer(sliced, j, c));
    }
    if (parts.size() == 1)
      return parts[0];
    Op *joined = make(op->loc(), OpKind::Concat, op->type(), parts, c);
    joined->setAttr("axis", int64_t(axis));
    return joined;
  }

  /// Chip c's part of a split or partial `op`.
  Op *local(Op *op, unsigned c) {
    Op *&there = local_[{op, c}];
    if (there)
      return there;
    const Sharding s = shardingOf(op);
    if (op->kind() == OpKind::Gather && s.kind == Sharding::Partial)
      return there = vocabGather(op, c, s.ranges[c].first, s.ranges[c].second);
    if (a_.tiedHeads.count(op))
      return there = tiedHead(op, c, s.ranges[c].first, s.ranges[c].second);
    const std::vector<Need> &needs = a_.needs.at(op);
    std::vector<Op *> operands;
    for (size_t i = 0; i < op->operands().size(); ++i) {
      Op *o = op->operand(i);
      const Need &need = needs[i];
      if (need.kind == Need::Local && shardingOf(o).kind == Sharding::Partial)
        operands.push_back(scattered(o, c));
      else if (need.kind == Need::Local)
        operands.push_back(local(o, c));
      else if (need.kind == Need::Full)
        operands.push_back(rep(o, c));
      else
        operands.push_back(slice(o, c, need.axis, need.ranges[c].first, need.ranges[c].second));
    }
    Type type = op->type();
    if (s.kind == Sharding::Split)
      type.shape[size_t(s.axis)] = s.ranges[c].second;
    Op *copy = make(*op, op->kind(), type, std::move(operands), c);
    if (op->kind() == OpKind::Slice && s.kind == Sharding::Split) {
      auto limit = op->intsAttr("limit").value_or(std::vector<int64_t>{});
      limit[size_t(s.axis)] = s.ranges[c].second;
      copy->setAttr("limit", limit);
    }
    there = copy;
    return there;
  }

  /// Chip c's slice [start, start+size) along `axis` of a value every chip
  /// could hold whole: a weight's shard, a constant of that shape, or the
  /// slice pushed through views; else a `slice` of the whole.
  Op *slice(Op *op, unsigned c, int axis, int64_t start, int64_t size) {
    if (shardingOf(op).kind != Sharding::Rep) {
      // A partial operand: all-reduced, then sliced.
      return sliceOp(rep(op, c), c, axis, start, size);
    }
    Op *&there = slice_[{op, c, axis, start, size}];
    if (there)
      return there;
    Type type = op->type();
    type.shape[size_t(axis)] = size;
    switch (op->kind()) {
    case OpKind::Param: {
      if (rep_.count({op, c})) {
        // The chip holds the whole weight already (it reads it elsewhere):
        // a second, sliced copy of one path would be placed twice.
        there = sliceOp(rep_[{op, c}], c, axis, start, size);
        return there;
      }
      there = make(*op, OpKind::Param, type, {}, c);
      there->setAttr("shard", std::vector<int64_t>{axis, start, op->type().shape[size_t(axis)]});
      return there;
    }
    case OpKind::Constant:
      there = make(*op, OpKind::Constant, type, {}, c);
      return there;
    case OpKind::Input:
      if (!op->boolAttr("state").value_or(false) || rep_.count({op, c}))
        break;
      // A state read in slices: the chip holds its slice alone.
      there = make(*op, OpKind::Input, type, {}, c);
      there->setAttr("shard", std::vector<int64_t>{axis, start, op->type().shape[size_t(axis)]});
      return there;
    case OpKind::Broadcast: {
      Op *o = op->operand(0);
      const int a = axis - int(op->type().rank() - o->type().rank());
      Op *from = a < 0 || o->type().shape[size_t(a)] == 1 ? rep(o, c) : slice(o, c, a, start, size);
      there = make(*op, OpKind::Broadcast, type, {from}, c);
      return there;
    }
    case OpKind::Transpose: {
      auto perm = op->intsAttr("perm").value_or(std::vector<int64_t>{});
      there = make(*op, OpKind::Transpose, type, {slice(op->operand(0), c, int(perm[size_t(axis)]), start, size)}, c);
      return there;
    }
    case OpKind::Convert:
      there = make(*op, OpKind::Convert, type, {slice(op->operand(0), c, axis, start, size)}, c);
      return there;
    case OpKind::Slice: {
      // A slice of `axis` alone (a block of a fused projection's weight,
      // splitFusedProjections): chip c's part of it is a part of its
      // operand, a shard where that is a weight.
      auto lo = op->intsAttr("start").value_or(std::vector<int64_t>{});
      auto hi = op->intsAttr("limit").value_or(std::vector<int64_t>{});
      const Type &from = op->operand(0)->type();
      bool alone = lo.size() == from.rank() && hi.size() == from.rank();
      for (size_t d = 0; alone && d < from.rank(); ++d)
        alone = d == size_t(axis) || (lo[d] == 0 && hi[d] == from.shape[d]);
      there = alone ? slice(op->operand(0), c, axis, lo[size_t(axis)] + start, size)
                    : sliceOp(rep(op, c), c, axis, start, size);
      return there;
    }
    default:
      // Elementwise work on weights (a dequantization): the same work on
      // each operand's slice, so that no chip holds the whole weight.
      if (isElementwiseClass(opClass(op->kind())) && weightOf(op)) {
        std::vector<Op *> operands;
        for (Op *operand : op->operands())
          operands.push_back(slice(operand, c, axis, start, size));
        there = make(*op, op->kind(), type, std::move(operands), c);
        return there;
      }
      break;
    }
    there = sliceOp(rep(op, c), c, axis, start, size);
    return there;
  }

  /// Chip c's term of a vocabulary-parallel gather: its rows [v0, v0 + n)
  /// of the table (a shard), gathered by the ids (clamped into the table)
  /// shifted by v0 (an id out of them is clamped into them by the gather,
  /// docs/ir.md) and replaced by -0 where the id is not among them. Adding -0 changes no value (not
  /// even a -0), so the sum over chips is the unpartitioned gather, bit for
  /// bit.
  Op *vocabGather(Op *op, unsigned c, int64_t v0, int64_t n) {
    const Location &loc = op->loc();
    Op *table = slice(op->operand(0), c, 0, v0, n);
    Op *ids = rep(op->operand(1), c);
    const Type idType = ids->type();
    auto splat = [&](Type type, Attr value) {
      Op *k = make(loc, OpKind::Constant, std::move(type), {}, c);
      k->setAttr("value", std::move(value));
      return k;
    };
    // Clamped into the whole table first, as the unpartitioned gather
    // clamps them: an id past its ends reads its first or last row.
    const int64_t vocab = op->operand(0)->type().shape[0];
    Op *clamped = make(loc, OpKind::Maximum, idType, {ids, splat(idType, int64_t(0))}, c);
    clamped = make(loc, OpKind::Minimum, idType, {clamped, splat(idType, vocab - 1)}, c);
    // The first chip's rows start at 0 and the last's end at the table's
    // end: one bound each to check, the other holds for every clamped id.
    Op *shifted = v0 == 0 ? clamped : make(loc, OpKind::Sub, idType, {clamped, splat(idType, int64_t(v0))}, c);
    const Type boolType{DType::Bool, idType.shape};
    Op *in = nullptr;
    if (v0 > 0)
      in = make(loc, OpKind::Ge, boolType, {shifted, splat(idType, int64_t(0))}, c);
    if (v0 + n < vocab) {
      Op *high = make(loc, OpKind::Lt, boolType, {shifted, splat(idType, int64_t(n))}, c);
      in = in ? make(loc, OpKind::And, boolType, {in, high}, c) : high;
    }
    Op *rows = make(*op, OpKind::Gather, op->type(), {table, shifted}, c);
    if (!in)
      return rows; // one chip holds the whole table
    // The mask, one flag per id, broadcast along the row.
    Type flagType{DType::Bool, idType.shape};
    flagType.shape.push_back(1);
    Op *flag = make(loc, OpKind::Reshape, flagType, {in}, c);
    Op *mask = make(loc, OpKind::Broadcast, Type{DType::Bool, op->type().shape}, {flag}, c);
    Op *zero = splat(op->type(), -0.0);
    return make(loc, OpKind::Select, op->type(), {mask, rows, zero}, c);
  }

  /// Chip c's columns [v0, v0 + n) of a head `x @ transpose(table)` whose
  /// table a vocabulary-parallel gather reads too: the chip holds rows
  /// [v0, v0 + n) of the table once, stored as rows for the gather, so it
  /// computes `transpose(table_c @ transpose(x))` (the same dot products)
  /// rather than transposing its whole shard at every run; only x and the
  /// result, both as small as the tokens, are transposed.
  Op *tiedHead(Op *op, unsigned c, int64_t v0, int64_t n) {
    const Location &loc = op->loc();
    Op *table = slice(op->operand(1)->operand(0), c, 0, v0, n); // [n, D]
    Op *x = rep(op->operand(0), c);
    const Type &xt = x->type();
    const int64_t d = xt.shape.back(), tokens = xt.numElements() / std::max<int64_t>(d, 1);
    if (xt.rank() != 2)
      x = make(loc, OpKind::Reshape, Type{xt.dtype, {tokens, d}}, {x}, c);
    auto transpose = [&](Op *value) {
      const Type &t = value->type();
      Op *r = make(loc, OpKind::Transpose, Type{t.dtype, {t.shape[1], t.shape[0]}}, {value}, c);
      r->setAttr("perm", std::vector<int64_t>{1, 0});
      return r;
    };
    Op *columns = make(*op, OpKind::Matmul, Type{op->type().dtype, {n, tokens}}, {table, transpose(x)}, c);
    Op *out = transpose(columns);
    Type type = op->type();
    type.shape.back() = n;
    if (type.rank() != 2)
      out = make(loc, OpKind::Reshape, type, {out}, c);
    return out;
  }

  Op *sliceOp(Op *whole, unsigned c, int axis, int64_t start, int64_t size) {
    Type type = whole->type();
    std::vector<int64_t> lo(type.rank(), 0), hi(type.shape.begin(), type.shape.end());
    lo[size_t(axis)] = start;
    hi[size_t(axis)] = start + size;
    type.shape[size_t(axis)] = size;
    Op *op = make(whole->loc(), OpKind::Slice, type, {whole}, c);
    op->setAttr("start", lo);
    op->setAttr("limit", hi);
    return op;
  }

  /// A split `op` whole on chip c: every other chip's part crosses to it,
  /// concatenated along the split axis (an all-gather, made only for the
  /// chips that read it whole).
  Op *gather(Op *op, unsigned c) {
    Op *&there = gathered_[{op, c}];
    if (there)
      return there;
    const Sharding s = shardingOf(op);
    std::vector<Op *> parts;
    for (unsigned j = 0; j < chips_; ++j)
      parts.push_back(j == c ? local(op, j) : transfer(local(op, j), j, c));
    there = parts[0];
    if (parts.size() > 1) {
      there = make(op->loc(), OpKind::Concat, op->type(), parts, c);
      there->setAttr("axis", int64_t(s.axis));
    }
    return there;
  }

  /// Chip c's rows of the sum of a partial `op` (its chunk of the
  /// reduce-scatter), at the shape of those rows.
  Op *scattered(Op *op, unsigned c) {
    const Scattered &rs = reduceScatter(op);
    const int axis = scatterAxis(op->type(), chips_);
    Type type = op->type();
    type.shape[size_t(axis)] = rs.rows[c].second / rs.inner;
    Op *sum = rs.sums[c];
    if (sum->type() == type)
      return sum;
    Op *&there = scatteredShape_[{op, c}];
    if (!there)
      there = make(op->loc(), OpKind::Reshape, type, {sum}, c);
    return there;
  }

  /// The sum over chips of a partial `op`, whole on chip c: the chunks the
  /// reduce-scatter left on their chips, gathered there (an all-gather,
  /// made only for the chips that read the sum).
  Op *allReduced(Op *op, unsigned c) {
    Op *&there = gathered_[{op, c}];
    if (there)
      return there;
    const Scattered &rs = reduceScatter(op);
    std::vector<Op *> parts;
    for (unsigned j = 0; j < rs.sums.size(); ++j)
      parts.push_back(c == j ? rs.sums[j] : transfer(rs.sums[j], j, c));
    Op *all = parts[0];
    if (parts.size() > 1) {
      all = make(op->loc(), OpKind::Concat, rs.flat, parts, c);
      all->setAttr("axis", int64_t(0));
    }
    if (op->type().rank() != 2)
      all = make(op->loc(), OpKind::Reshape, op->type(), {all}, c);
    there = all;
    return there;
  }

  struct Scattered {
    Type flat;
    int64_t inner = 1;                            // flat rows per row of the scatter axis
    std::vector<std::pair<int64_t, int64_t>> rows; // chunk j: first flat row, count
    std::vector<Op *> sums;                        // chunk j of the sum, on chip j
  };

  /// Chip j sums row chunk j of every chip's term of a partial `op`, in
  /// chip order (the terms of the other chips cross to it).
  const Scattered &reduceScatter(Op *op) {
    auto it = scattered_.find(op);
    if (it != scattered_.end())
      return it->second;
    const Type type = op->type();
    const Location &loc = op->loc();
    const int64_t cols = type.rank() ? type.shape.back() : 1;
    const int64_t rows = type.numElements() / std::max<int64_t>(cols, 1);
    Scattered out;
    out.flat = Type{type.dtype, {rows, cols}};
    // Chunks along the scatter axis where there is one (so that chip j's
    // chunk is its rows of a split value), else as many as there are rows.
    if (int axis = scatterAxis(type, chips_); axis >= 0) {
      out.inner = rows / type.shape[size_t(axis)];
      for (auto [start, size] : balanced(type.shape[size_t(axis)], 1, chips_))
        out.rows.push_back({start * out.inner, size * out.inner});
    } else {
      const int64_t q = std::min<int64_t>(chips_, rows);
      for (int64_t j = 0; j < q; ++j)
        out.rows.push_back({j * rows / q, (j + 1) * rows / q - j * rows / q});
    }
    const unsigned q = unsigned(out.rows.size());
    std::vector<std::vector<Op *>> term(chips_, std::vector<Op *>(q));
    for (unsigned c = 0; c < chips_; ++c) {
      Op *x = local(op, c);
      if (type.rank() != 2)
        x = make(loc, OpKind::Reshape, out.flat, {x}, c);
      for (unsigned j = 0; j < q; ++j)
        term[c][j] = q == 1 ? x : sliceOp(x, c, 0, out.rows[j].first, out.rows[j].second);
    }
    std::vector<std::vector<Op *>> arrived(chips_, std::vector<Op *>(q));
    for (unsigned c = 0; c < chips_; ++c)
      for (unsigned j = 0; j < q; ++j)
        arrived[c][j] = c == j ? term[c][j] : transfer(term[c][j], c, j);
    for (unsigned j = 0; j < q; ++j) {
      Op *acc = arrived[0][j];
      for (unsigned c = 1; c < chips_; ++c)
        acc = make(loc, OpKind::Add, acc->type(), {acc, arrived[c][j]}, j);
      out.sums.push_back(acc);
    }
    return scattered_[op] = std::move(out);
  }

  Op *transfer(Op *value, unsigned from, unsigned to) {
    Op *t = fn_.append(OpKind::Transfer, value->type(), {value}, value->loc());
    t->setAttr("from", int64_t(from));
    t->setAttr("to", int64_t(to));
    return t;
  }

  Function &fn_;
  unsigned chips_;
  const Analysis &a_;
  std::map<std::pair<const Op *, unsigned>, Op *> rep_, local_;
  std::map<std::tuple<const Op *, unsigned, int, int64_t, int64_t>, Op *> slice_;
  std::map<const Op *, Scattered> scattered_;
  std::map<std::pair<const Op *, unsigned>, Op *> gathered_, scatteredShape_;
  bool markWhole_;
  std::map<const Op *, int64_t> wholeIds_;
};

/// A fused projection cut into its blocks (docs/partitioning.md, "Fused
/// projections"): a matmul by a 2-D weight whose product, through reshapes
/// that keep its columns, converts and elementwise ops with a bias (a
/// broadcast 1-D param), is read only by slices of equal blocks of its
/// columns (GPT-2's q/k/v, `split(c_attn(x), 3, axis = -1)`) becomes one
/// matmul per block read, by the block's columns of the weight (a slice of
/// it), with the bias's block. Each column is the same dot product and each
/// element the same sum as before, so nothing the function computes
/// changes; but each block's columns can now be split over the chips by
/// heads, as separate q, k and v projections are, where the fused columns
/// could not (chip c needs three ranges of them). Returns how many it cut.
unsigned splitFusedProjections(Function &fn) {
  std::map<const Op *, std::vector<Op *>> users;
  for (const auto &owned : fn.ops())
    for (Op *o : owned->operands())
      users[o].push_back(owned.get());
  auto onlyUser = [&](const Op *op) -> Op * {
    auto it = users.find(op);
    return it != users.end() && it->second.size() == 1 ? it->second[0] : nullptr;
  };
  // A bias operand: a broadcast of a 1-D param as long as the columns.
  auto biasOf = [](const Op *op, int64_t n) -> const Op * {
    if (op->kind() != OpKind::Broadcast)
      return nullptr;
    const Op *p = op->operand(0);
    return p->kind() == OpKind::Param && p->type().rank() == 1 && p->type().shape[0] == n ? p : nullptr;
  };
  struct Cut {
    Op *matmul;
    std::vector<Op *> chain; // from the matmul's user to the sliced value
    std::vector<Op *> slices;
    int64_t width;
  };
  std::vector<Cut> cuts;
  for (const auto &owned : fn.ops()) {
    Op *m = owned.get();
    if (m->kind() != OpKind::Matmul || m->type().rank() != 2 || m->operand(1)->kind() != OpKind::Param ||
        m->operand(1)->type().rank() != 2 || ir::shardOf(*m->operand(1)))
      continue;
    const int64_t n = m->type().shape[1];
    Cut cut{m, {}, {}, 0};
    const Op *cur = m;
    while (Op *u = onlyUser(cur)) {
      const bool keeps = u->type().rank() >= 1 && u->type().shape.back() == n;
      if (!keeps)
        break;
      if (u->kind() == OpKind::Reshape || u->kind() == OpKind::Convert) {
        cut.chain.push_back(u);
        cur = u;
        continue;
      }
      if (opClass(u->kind()) == OpClass::Binary && u->operands().size() == 2) {
        const Op *other = u->operand(0) == cur ? u->operand(1) : u->operand(0);
        if (u->operand(0) != u->operand(1) && biasOf(other, n) && onlyUser(other) == u) {
          cut.chain.push_back(u);
          cur = u;
          continue;
        }
      }
      break;
    }
    auto it = users.find(cur);
    if (it == users.end())
      continue;
    bool ok = !it->second.empty();
    for (Op *s : it->second) {
      if (!ok)
        break;
      auto lo = s->intsAttr("start").value_or(std::vector<int64_t>{});
      auto hi = s->intsAttr("limit").value_or(std::vector<int64_t>{});
      const size_t r = cur->type().rank();
      ok = s->kind() == OpKind::Slice && lo.size() == r && hi.size() == r;
      for (size_t d = 0; ok && d + 1 < r; ++d)
        ok = lo[d] == 0 && hi[d] == cur->type().shape[d];
      if (!ok)
        break;
      const int64_t w = hi[r - 1] - lo[r - 1];
      ok = w > 0 && w < n && n % w == 0 && lo[r - 1] % w == 0 && (cut.width == 0 || cut.width == w);
      cut.width = w;
      cut.slices.push_back(s);
    }
    if (ok)
      cuts.push_back(std::move(cut));
  }
  auto sliceAttrs = [](Op *op, std::vector<int64_t> lo, std::vector<int64_t> hi) {
    op->setAttr("start", std::move(lo));
    op->setAttr("limit", std::move(hi));
  };
  auto copyAttrs = [](const Op &from, Op *to) {
    for (const auto &[name, value] : from.attrs())
      if (name != "fusion")
        to->setAttr(name, value);
  };
  std::set<const Op *> dead;
  for (const Cut &cut : cuts) {
    Op *m = cut.matmul;
    Op *w = m->operand(1);
    const int64_t k = w->type().shape[0], w0 = cut.width;
    std::map<int64_t, Op *> blocks; // first column -> the block's value
    for (Op *s : cut.slices) {
      const int64_t a = s->intsAttr("start")->back();
      Op *&block = blocks[a];
      if (!block) {
        Op *wb = fn.insertBefore(m, OpKind::Slice, Type{w->type().dtype, {k, w0}}, {w}, w->loc());
        sliceAttrs(wb, {0, a}, {k, a + w0});
        Type mt = m->type();
        mt.shape.back() = w0;
        Op *prev = fn.insertBefore(m, OpKind::Matmul, mt, {m->operand(0), wb}, m->loc());
        copyAttrs(*m, prev);
        const Op *old = m;
        for (Op *x : cut.chain) {
          Type t = x->type();
          t.shape.back() = w0;
          std::vector<Op *> operands;
          for (Op *o : x->operands()) {
            if (o == old) {
              operands.push_back(prev);
              continue;
            }
            // The bias's block, broadcast as before.
            Op *p = o->operand(0);
            Op *pb = fn.insertBefore(m, OpKind::Slice, Type{p->type().dtype, {w0}}, {p}, p->loc());
            sliceAttrs(pb, {a}, {a + w0});
            Type bt = o->type();
            bt.shape.back() = w0;
            Op *b = fn.insertBefore(m, OpKind::Broadcast, bt, {pb}, o->loc());
            copyAttrs(*o, b);
            operands.push_back(b);
            dead.insert(o);
          }
          Op *next = fn.insertBefore(m, x->kind(), t, std::move(operands), x->loc());
          copyAttrs(*x, next);
          old = x;
          prev = next;
        }
        block = prev;
      }
      fn.replaceAllUsesWith(s, block);
      dead.insert(s);
    }
    dead.insert(m);
    dead.insert(cut.chain.begin(), cut.chain.end());
  }
  if (cuts.empty())
    return 0;
  fn.eraseIf([&](const Op &op) { return dead.count(&op) != 0; });
  fn.sortTopologically();
  return unsigned(cuts.size());
}

} // namespace

llvm::Error partitionTensor(Function &fn, const PartitionOptions &options) {
  splitFusedProjections(fn);
  Analysis a;
  std::map<const Op *, Ranges> seeds = chooseSeeds(fn, options.chips, a, options.pins);
  VocabSeeds vocab;
  chooseVocabSeeds(fn, options.chips, seeds, vocab, a, options.pins, options.costs);
  if (seeds.empty())
    return error("func @" + fn.name() + " has no matmul that tensor parallelism can split over " +
                 llvm::Twine(options.chips) +
                 " chips (a matmul by a weight's columns whose split ends in a matmul by "
                 "rows before anything reads it whole" +
                 (a.wholeHeads.empty() ? std::string() : "; one matmul's " + a.wholeHeads) +
                 "); use --partition=pipeline");
  if (llvm::Error e = Rewriter(fn, options.chips, a, options.markWhole).run())
    return e;
  // Every split op is written once per chip; a chip's part that nothing
  // reads (the last layer's rows on the chips whose rows no output takes,
  // once a slice reads one chip's part alone) goes.
  createDCEPass()->run(fn);
  // Elementwise groups again, per chip (the all-reduces' sums among them).
  createFuseElementwisePass()->run(fn);
  return llvm::Error::success();
}

} // namespace lpu::ir
