// sink-slices: a slice of rows of a value computed row by row is computed
// from the slices of its operands instead, so that only the rows read are
// computed. BERT's pooler reads token 0 of the last layer: the layer's
// norms, its feed-forward block, its output projection and its attention's
// queries then work on one row instead of 128 (the keys and values, which
// every query reads, stay whole). Each row is the same arithmetic as
// before, in the same order: a row of a matmul is the same dot products,
// a norm over the features the same sums.
//
// A slice moves into its operand only when everything that reads the
// operand is that same slice (after CSE, one op), so no work is done twice;
// and only a slice whose last axis is whole (rows, not lanes: slices of
// columns, such as the q, k and v blocks of a fused projection, stay where
// they are). It moves through elementwise ops, converts and selects,
// broadcasts, transposes, reshapes that only add or drop axes of size 1,
// reductions and softmaxes over other axes, splat constants, and the rows
// (and batch axes) of a matmul's left operand, never its columns. The slices
// it leaves on operands move on in the next round; what they replace goes
// with DCE.
#include "ir/passes/PassUtil.h"
#include "ir/passes/Passes.h"

#include <llvm/ADT/STLExtras.h>

namespace lpu::ir {

namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>; // per axis: start, limit

Ranges rangesOf(const Op &slice) {
  auto lo = slice.intsAttr("start").value_or(std::vector<int64_t>{});
  auto hi = slice.intsAttr("limit").value_or(std::vector<int64_t>{});
  Ranges r;
  for (size_t i = 0; i < lo.size() && i < hi.size(); ++i)
    r.push_back({lo[i], hi[i]});
  return r;
}

Ranges whole(const Type &type) {
  Ranges r;
  for (int64_t d : type.shape)
    r.push_back({0, d});
  return r;
}

bool isWhole(const Ranges &r, const Type &type) { return r == whole(type); }

class Sinker {
public:
  explicit Sinker(Function &fn) : fn_(fn) {}

  /// `o` computed on `r` of its result (one range per axis), inserted just
  /// before `at`; null when `o` cannot be.
  Op *sink(Op *o, const Ranges &r, const Op *at) {
    const Type &t = o->type();
    Type type = t;
    for (size_t i = 0; i < r.size(); ++i)
      type.shape[i] = r[i].second - r[i].first;
    auto clone = [&](std::vector<Op *> operands) {
      Op *n = fn_.insertBefore(at, o->kind(), type, std::move(operands), o->loc());
      for (const auto &[name, value] : o->attrs())
        n->setAttr(name, value);
      return n;
    };
    switch (o->kind()) {
    case OpKind::Constant:
      return splatValue(o) ? clone({}) : nullptr;
    case OpKind::Broadcast: {
      const Op *x = o->operand(0);
      const size_t offset = t.rank() - x->type().rank();
      Ranges xr;
      for (size_t i = 0; i < x->type().rank(); ++i)
        xr.push_back(x->type().shape[i] == 1 ? std::pair<int64_t, int64_t>{0, 1} : r[offset + i]);
      return clone({slice(o->operand(0), xr, at)});
    }
    case OpKind::Transpose: {
      auto perm = o->intsAttr("perm").value_or(std::vector<int64_t>{});
      if (perm.size() != t.rank())
        return nullptr;
      Ranges xr(t.rank());
      for (size_t i = 0; i < perm.size(); ++i)
        xr[size_t(perm[i])] = r[i];
      return clone({slice(o->operand(0), xr, at)});
    }
    case OpKind::Reshape: {
      // The leading axes the reshape keeps (axes of size 1 aside) pair up
      // in order, each with its range; past the first axis it regroups
      // (heads merged into features), every range must be whole.
      const Type &x = o->operand(0)->type();
      Ranges xr;
      size_t i = 0, j = 0;
      for (;;) {
        if (i < x.rank() && x.shape[i] == 1) {
          xr.push_back({0, 1});
          ++i;
          continue;
        }
        if (j < t.rank() && t.shape[j] == 1) {
          ++j; // its range is [0, 1): no range is empty here
          continue;
        }
        if (i == x.rank() || j == t.rank() || x.shape[i] != t.shape[j])
          break;
        xr.push_back(r[j++]);
        ++i;
      }
      for (; j < t.rank(); ++j)
        if (r[j] != std::pair<int64_t, int64_t>{0, t.shape[j]})
          return nullptr;
      for (; i < x.rank(); ++i)
        xr.push_back({0, x.shape[i]});
      return clone({slice(o->operand(0), xr, at)});
    }
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin: {
      auto axes = o->intsAttr("axes").value_or(std::vector<int64_t>{});
      const bool keep = o->boolAttr("keep").value_or(false);
      const Type &x = o->operand(0)->type();
      Ranges xr;
      size_t j = 0;
      for (size_t i = 0; i < x.rank(); ++i) {
        if (llvm::is_contained(axes, int64_t(i))) {
          xr.push_back({0, x.shape[i]});
          j += keep;
        } else {
          xr.push_back(r[j++]);
        }
      }
      return clone({slice(o->operand(0), xr, at)});
    }
    case OpKind::Softmax: {
      int64_t axis = o->intAttr("axis").value_or(-1);
      if (axis < 0)
        axis += int64_t(t.rank());
      if (axis < 0 || size_t(axis) >= t.rank() || r[size_t(axis)] != std::pair<int64_t, int64_t>{0, t.shape[size_t(axis)]})
        return nullptr;
      return clone({slice(o->operand(0), r, at)});
    }
    case OpKind::Matmul: {
      // The rows of the left operand (and the batch axes of both); the
      // columns stay whole.
      const size_t n = t.rank();
      if (r[n - 1] != std::pair<int64_t, int64_t>{0, t.shape[n - 1]})
        return nullptr;
      const Type &a = o->operand(0)->type(), &b = o->operand(1)->type();
      if (a.rank() != n || b.rank() != n)
        return nullptr;
      Ranges ar = r, br = whole(b);
      ar[n - 1] = {0, a.shape[n - 1]};
      for (size_t i = 0; i + 2 < n; ++i)
        br[i] = r[i];
      return clone({slice(o->operand(0), ar, at), slice(o->operand(1), br, at)});
    }
    default:
      break;
    }
    if (isElementwise(o->kind())) {
      std::vector<Op *> operands;
      for (Op *x : o->operands()) {
        if (x->type().shape != t.shape)
          return nullptr;
        operands.push_back(slice(x, r, at));
      }
      return clone(std::move(operands));
    }
    return nullptr;
  }

private:
  /// `x` on `r` (itself when `r` is all of it), a slice inserted before `at`.
  Op *slice(Op *x, const Ranges &r, const Op *at) {
    if (isWhole(r, x->type()))
      return x;
    Type type = x->type();
    std::vector<int64_t> lo, hi;
    for (size_t i = 0; i < r.size(); ++i) {
      lo.push_back(r[i].first);
      hi.push_back(r[i].second);
      type.shape[i] = r[i].second - r[i].first;
    }
    // A slice of a splat constant (one many layers share, such as
    // attention's scale) is a splat of the slice's shape: what reads it
    // still sees a constant (the attention lowering, the partition).
    if (splatValue(x)) {
      Op *k = fn_.insertBefore(at, OpKind::Constant, type, {}, x->loc());
      for (const auto &[name, value] : x->attrs())
        k->setAttr(name, value);
      return k;
    }
    Op *s = fn_.insertBefore(at, OpKind::Slice, type, {x}, x->loc());
    keepChip(s, at);
    s->setAttr("start", lo);
    s->setAttr("limit", hi);
    return s;
  }

  Function &fn_;
};

class SinkSlices : public Pass {
public:
  llvm::StringRef name() const override { return "sink-slices"; }

  bool run(Function &fn) override {
    bool any = false;
    auto cse = createCSEPass(), dce = createDCEPass();
    // One step per round: the slices a round leaves on operands are the
    // next round's (after CSE has merged equal ones).
    for (;;) {
      cse->run(fn);
      UserMap users = computeUsers(fn);
      std::vector<Op *> slices;
      for (const auto &op : fn.ops())
        if (op->kind() == OpKind::Slice)
          slices.push_back(op.get());
      Sinker sinker(fn);
      std::vector<std::pair<Op *, Op *>> replaced;
      llvm::DenseSet<const Op *> taken;
      for (Op *s : slices) {
        Op *o = s->operand(0);
        const Type &t = o->type();
        const Ranges r = rangesOf(*s);
        if (r.size() != t.rank() || t.rank() == 0 || taken.count(o) ||
            llvm::any_of(r, [](auto range) { return range.first >= range.second; }) ||
            r.back() != std::pair<int64_t, int64_t>{0, t.shape.back()} || isWhole(r, t))
          continue;
        // Everything that reads `o` is this slice.
        auto it = users.find(o);
        if (it == users.end() || it->second.size() != 1 || it->second[0] != s)
          continue;
        Op *n = sinker.sink(o, r, s);
        if (!n)
          continue;
        taken.insert(o);
        replaced.push_back({s, n});
      }
      if (replaced.empty())
        break;
      for (auto [from, to] : replaced)
        fn.replaceAllUsesWith(from, to);
      dce->run(fn);
      any = true;
    }
    return any;
  }
};

} // namespace

std::unique_ptr<Pass> createSinkSlicesPass() { return std::make_unique<SinkSlices>(); }

} // namespace lpu::ir
