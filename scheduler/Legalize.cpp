#include "scheduler/Legalize.h"

#include "ir/Verifier.h"
#include "scheduler/Lowering.h"

#include <algorithm>
#include <map>
#include <set>

namespace lpu::scheduler {

namespace {

using ir::Op;
using ir::OpKind;
using Perm = std::vector<int64_t>;
using Attrs = std::vector<std::pair<std::string, ir::Attr>>;

int64_t normalAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// The order that puts `axes` (increasing) last and keeps the others' order:
/// the order the reference interpreter reduces in.
Perm axesLast(int64_t rank, const std::vector<int64_t> &axes) {
  Perm perm;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end())
      perm.push_back(d);
  perm.insert(perm.end(), axes.begin(), axes.end());
  return perm;
}

Perm inverse(const Perm &perm) {
  Perm inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[size_t(perm[i])] = int64_t(i);
  return inv;
}

bool isIdentity(const Perm &perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i))
      return false;
  return true;
}

/// A softmax or an argmax along `axis`, which the lowerings take along the
/// last axis only.
std::optional<int64_t> leadingAxis(const Op &op) {
  const int64_t rank = int64_t(op.operand(0)->type().rank());
  int64_t axis = normalAxis(op.intAttr("axis").value_or(rank - 1), rank);
  if (rank < 2 || axis < 0 || axis >= rank - 1)
    return std::nullopt;
  return axis;
}

/// Whether `op` is one of the forms legalize() rewrites.
bool rewritten(const Op &op) {
  const ir::Type &x = op.operands().empty() ? op.type() : op.operand(0)->type();
  const int64_t rank = int64_t(x.rank());
  switch (op.kind()) {
  case OpKind::Softmax:
  case OpKind::Argmax:
    return leadingAxis(op).has_value();
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin: {
    // The last axis and others: the lowerings reduce either leading axes
    // (vector by vector) or the last (across lanes). Bools and empty
    // reductions keep their diagnostics.
    std::vector<int64_t> axes = op.intsAttr("axes").value_or(std::vector<int64_t>{});
    bool last = std::find(axes.begin(), axes.end(), rank - 1) != axes.end();
    return last && axes.size() > 1 && x.dtype != ir::DType::Bool && x.numElements() > 0;
  }
  case OpKind::Gather: {
    int64_t axis = normalAxis(op.intAttr("axis").value_or(0), rank);
    return rank >= 2 && axis > 0 && axis < rank && op.operand(1)->type().dtype == ir::DType::I32;
  }
  case OpKind::Update:
    return true;
  default:
    return false;
  }
}

/// Builds the rewritten function: ops are copied in order, and each op to
/// rewrite becomes the ops that compute it from the mapped operands.
class Rewriter {
public:
  Rewriter(const ir::Function &fn, const std::function<bool(const Op &)> &asIs)
      : asIs_(asIs), out_(std::make_unique<ir::Function>(fn.name(), fn.bucket())) {
    for (const auto &op : fn.ops())
      if (auto group = op->fusionGroup())
        nextGroup_ = std::max(nextGroup_, *group + 1);
  }

  llvm::Error copy(const Op &op) {
    std::vector<Op *> operands;
    for (const Op *operand : op.operands())
      operands.push_back(map_.at(operand));
    if (!rewritten(op) || (asIs_ && asIs_(op))) {
      Op *copy = out_->append(op.kind(), op.type(), std::move(operands), op.loc());
      for (const auto &[name, value] : op.attrs())
        copy->setAttr(name, value);
      map_[&op] = copy;
      return llvm::Error::success();
    }
    auto value = rewrite(op, operands);
    if (!value)
      return value.takeError();
    map_[&op] = *value;
    return llvm::Error::success();
  }

  std::unique_ptr<ir::Function> take() { return std::move(out_); }

private:
  /// A new op for `of` (its location, its errors), its type inferred, or
  /// `declared` for the ops that take theirs as declared.
  llvm::Expected<Op *> emit(const Op &of, OpKind kind, std::vector<Op *> operands, Attrs attrs,
                            const ir::Type *declared = nullptr) {
    std::vector<ir::Type> types;
    for (const Op *operand : operands)
      types.push_back(operand->type());
    auto type = ir::inferType(kind, types, attrs, declared);
    if (auto *why = std::get_if<std::string>(&type))
      return refuseAt<Refusal::InvalidLegalizedIR>(
          of.loc(), "rewriting '" + ir::mnemonic(of.kind()).str() + "' into '" +
                        ir::mnemonic(kind).str() + "': " + *why);
    Op *op = out_->append(kind, std::get<ir::Type>(type), std::move(operands), of.loc());
    for (auto &[name, value] : attrs)
      op->setAttr(name, std::move(value));
    // On the chip of the op it stands for (a function across chips).
    if (const ir::Attr *chip = of.attr("chip"))
      op->setAttr("chip", *chip);
    return op;
  }

  llvm::Expected<Op *> transpose(const Op &of, Op *x, const Perm &perm) {
    if (isIdentity(perm))
      return x;
    return emit(of, OpKind::Transpose, {x}, {{"perm", perm}});
  }

  llvm::Expected<Op *> rewrite(const Op &op, const std::vector<Op *> &operands) {
    Op *x = operands[0];
    const int64_t rank = int64_t(x->type().rank());
    switch (op.kind()) {
    case OpKind::Softmax: {
      // The axis last, the softmax along it, and the axes back.
      const Perm perm = axesLast(rank, {*leadingAxis(op)});
      auto t = transpose(op, x, perm);
      if (!t)
        return t.takeError();
      auto s = emit(op, OpKind::Softmax, {*t}, {{"axis", rank - 1}});
      if (!s)
        return s.takeError();
      return transpose(op, *s, inverse(perm));
    }
    case OpKind::Argmax: {
      // The axis last: the argmax along it leaves the other axes in their
      // order, and keep's 1 goes back in by a reshape of the same rows.
      auto t = transpose(op, x, axesLast(rank, {*leadingAxis(op)}));
      if (!t)
        return t.takeError();
      auto a = emit(op, OpKind::Argmax, {*t}, {{"axis", rank - 1}, {"keep", false}});
      if (!a || !op.boolAttr("keep").value_or(false))
        return a;
      return emit(op, OpKind::Reshape, {*a}, {}, &op.type());
    }
    case OpKind::Gather:
      return gather(op, x, operands[1]);
    case OpKind::Update:
      return update(op, x, operands[1], operands[2]);
    default:
      return reduce(op, x);
    }
  }

  /// gather(table, ids, axis = k): the table's axis k first (a row view
  /// when the last axis stays, which the gather reads in place), the
  /// gather along it, and the ids' axes moved to k.
  llvm::Expected<Op *> gather(const Op &op, Op *table, Op *ids) {
    const int64_t rank = int64_t(table->type().rank());
    const int64_t k = normalAxis(op.intAttr("axis").value_or(0), rank);
    const int64_t m = int64_t(ids->type().rank());
    Perm first{k};
    for (int64_t d = 0; d < rank; ++d)
      if (d != k)
        first.push_back(d);
    auto t = transpose(op, table, first);
    if (!t)
      return t.takeError();
    auto g = emit(op, OpKind::Gather, {*t, ids}, {{"axis", int64_t(0)}});
    if (!g)
      return g.takeError();
    // g is ids' axes, then the table's before k, then those after it.
    Perm back;
    for (int64_t j = 0; j < k; ++j)
      back.push_back(m + j);
    for (int64_t j = 0; j < m; ++j)
      back.push_back(j);
    for (int64_t j = k + m; j < m + rank - 1; ++j)
      back.push_back(j);
    return transpose(op, *g, back);
  }

  /// update(x, pos, rows, axis = k) without a write at a run-time address:
  /// every index i of axis k takes rows[i - start] where start <= i <
  /// start + n (start = pos clamped into [0, dim - n]), else keeps x[i]. A
  /// gather of the rows by the clamped offsets (a broadcast of the one row
  /// when n is 1) and a select by the mask, both computed from pos on the
  /// chip.
  llvm::Expected<Op *> update(const Op &op, Op *x, Op *pos, Op *rows) {
    const ir::Type &xt = x->type();
    const int64_t rank = int64_t(xt.rank());
    const int64_t k = normalAxis(op.intAttr("axis").value_or(0), rank);
    const int64_t dim = xt.shape[size_t(k)], n = rows->type().shape[size_t(k)];
    if (n == dim)
      return rows; // every index is written, wherever pos points
    if (n == 0)
      return x;
    if (pos->kind() == OpKind::Constant) {
      // A position known at compile time (a prefill's 0): x's slices
      // before and after the rows, and the rows between them.
      auto value = pos->attr("value");
      int64_t at = value && std::holds_alternative<int64_t>(*value) ? std::get<int64_t>(*value) : 0;
      at = std::clamp<int64_t>(at, 0, dim - n);
      std::vector<Op *> parts;
      auto piece = [&](int64_t from, int64_t to) -> llvm::Error {
        if (from == to)
          return llvm::Error::success();
        std::vector<int64_t> start(size_t(rank), 0), limit = xt.shape;
        start[size_t(k)] = from;
        limit[size_t(k)] = to;
        auto s = emit(op, OpKind::Slice, {x}, {{"start", start}, {"limit", limit}});
        if (!s)
          return s.takeError();
        parts.push_back(*s);
        return llvm::Error::success();
      };
      if (auto e = piece(0, at))
        return e;
      parts.push_back(rows);
      if (auto e = piece(at + n, dim))
        return e;
      return emit(op, OpKind::Concat, parts, {{"axis", k}});
    }
    const ir::Type one{ir::DType::I32, {1}}, line{ir::DType::I32, {dim}};
    auto constant = [&](int64_t value, const ir::Type &type) {
      return emit(op, OpKind::Constant, {}, {{"value", value}}, &type);
    };
    auto binary = [&](OpKind kind, llvm::Expected<Op *> a, llvm::Expected<Op *> b) -> llvm::Expected<Op *> {
      if (!a)
        return a.takeError();
      if (!b)
        return b.takeError();
      return emit(op, kind, {*a, *b}, {});
    };
    Op *p = pos;
    if (pos->type().rank() == 0) {
      auto r = emit(op, OpKind::Reshape, {pos}, {}, &one);
      if (!r)
        return r.takeError();
      p = *r;
    }
    auto start = binary(OpKind::Minimum, binary(OpKind::Maximum, p, constant(0, one)),
                        constant(dim - n, one));
    if (!start)
      return start.takeError();
    auto starts = emit(op, OpKind::Broadcast, {*start}, {}, &line);
    auto iota = emit(op, OpKind::Iota, {}, {{"axis", int64_t(0)}}, &line);
    auto rel = binary(OpKind::Sub, std::move(iota), std::move(starts));
    if (!rel)
      return rel.takeError();
    auto inside = binary(OpKind::And, binary(OpKind::Ge, *rel, constant(0, line)),
                         binary(OpKind::Lt, *rel, constant(n, line)));
    auto ids = binary(OpKind::Minimum, binary(OpKind::Maximum, *rel, constant(0, line)),
                      constant(n - 1, line));
    if (!inside)
      return inside.takeError();
    if (!ids)
      return ids.takeError();
    // One row (a decode step's key): every index takes it, a broadcast (a
    // view, no work); several: gathered by the clamped offsets.
    auto taken = n == 1 ? emit(op, OpKind::Broadcast, {rows}, {}, &xt)
                 : k == 0 ? emit(op, OpKind::Gather, {rows, *ids}, {{"axis", int64_t(0)}})
                          : gather(op, rows, *ids);
    if (!taken)
      return taken.takeError();
    Op *mask = *inside;
    if (k != rank - 1) {
      ir::Type column{ir::DType::Bool, std::vector<int64_t>(size_t(rank - k), 1)};
      column.shape[0] = dim;
      auto r = emit(op, OpKind::Reshape, {mask}, {}, &column);
      if (!r)
        return r.takeError();
      mask = *r;
    }
    const ir::Type full{ir::DType::Bool, xt.shape};
    auto masks = emit(op, OpKind::Broadcast, {mask}, {}, &full);
    if (!masks)
      return masks.takeError();
    return emit(op, OpKind::Select, {*masks, *taken, x}, {});
  }

  /// A reduction over the last axis and others: over the others first
  /// (vector by vector, in their row-major order), then over the last
  /// (across lanes). A float sum or mean adds in f32 throughout and rounds
  /// once, as the reference does (its terms in another order: the
  /// tolerance of a sum across lanes); max, min and integer sums (wrapping)
  /// are the same in any order.
  llvm::Expected<Op *> reduce(const Op &op, Op *x) {
    const bool keep = op.boolAttr("keep").value_or(false);
    std::vector<int64_t> axes = op.intsAttr("axes").value_or(std::vector<int64_t>{});
    std::vector<int64_t> lead(axes.begin(), axes.end() - 1);
    int64_t count = 1;
    for (int64_t a : axes)
      count *= x->type().shape[size_t(a)];
    const ir::DType outType = op.type().dtype;
    const bool mean = op.kind() == OpKind::ReduceMean;
    const bool f32Sum = tensor::isFloat(x->type().dtype) &&
                        (op.kind() == OpKind::ReduceSum || mean);
    OpKind step = mean ? OpKind::ReduceSum : op.kind();
    if (f32Sum && x->type().dtype != ir::DType::F32) {
      ir::Type wide{ir::DType::F32, x->type().shape};
      auto w = emit(op, OpKind::Convert, {x}, {}, &wide);
      if (!w)
        return w.takeError();
      x = *w;
    }
    auto a = emit(op, step, {x}, {{"axes", lead}, {"keep", keep}});
    if (!a)
      return a.takeError();
    const int64_t last = int64_t((*a)->type().rank()) - 1;
    auto value = emit(op, step, {*a}, {{"axes", std::vector<int64_t>{last}}, {"keep", keep}});
    if (!value)
      return value.takeError();
    // Mean's division and the rounding: one fusion group, one pass.
    const bool narrow = (*value)->type().dtype != outType;
    Attrs group;
    if (mean && narrow)
      group.push_back({"fusion", nextGroup_++});
    if (mean) {
      ir::Type type = (*value)->type();
      auto n = emit(op, OpKind::Constant, {}, {{"value", double(count)}}, &type);
      if (!n)
        return n.takeError();
      value = emit(op, OpKind::Div, {*value, *n}, group);
      if (!value)
        return value.takeError();
    }
    if (narrow) {
      ir::Type type{outType, (*value)->type().shape};
      return emit(op, OpKind::Convert, {*value}, group, &type);
    }
    return value;
  }

  const std::function<bool(const Op &)> &asIs_;
  std::unique_ptr<ir::Function> out_;
  std::map<const Op *, Op *> map_;
  int64_t nextGroup_ = 0;
};

} // namespace

bool updatesInPlace(const Op &op, const ir::Function &fn, unsigned lanes, unsigned memVectors) {
  if (op.kind() != OpKind::Update || op.operands().empty())
    return false;
  size_t readers = 0;
  for (const auto &other : fn.ops())
    readers += size_t(llvm::count(other->operands(), op.operand(0)));
  return ir::updatesInPlace(op, readers, lanes, memVectors);
}

llvm::Expected<std::unique_ptr<ir::Function>> legalize(const ir::Function &fn,
                                                       const std::function<bool(const Op &)> &asIs) {
  if (std::none_of(fn.ops().begin(), fn.ops().end(),
                   [&](const auto &op) { return rewritten(*op) && !(asIs && asIs(*op)); }))
    return nullptr;
  Rewriter rewriter(fn, asIs);
  for (const auto &op : fn.ops())
    if (auto e = rewriter.copy(*op))
      return e;
  std::unique_ptr<ir::Function> out = rewriter.take();
  // The rewrites build only what inferType accepted; the verifier checks the
  // whole once more (a broken rewrite is a diagnostic, not a wrong program).
  // What it says of the function as it came is not the rewrites': one
  // chip's part of a function across chips keeps its sends, whose
  // operands no longer say which chip they are on.
  std::vector<ir::VerifyError> errors = ir::verify(*out);
  if (!errors.empty()) {
    std::set<std::string> before;
    for (const ir::VerifyError &e : ir::verify(fn))
      before.insert(e.message);
    for (const ir::VerifyError &e : errors)
      if (!before.count(e.message))
        return refuseAt<Refusal::InvalidLegalizedIR>(e.loc, e.message);
  }
  return out;
}

} // namespace lpu::scheduler
