// Elementwise ops and fusion groups on the VXM. One vector tree per output
// vector: the group's operands are read from SRAM so that they reach the
// VXM in the cycle their first consumer issues, every op of the group runs
// there back to back (no SRAM round trip inside a group), and the result
// streams to its slices. Ops of the group with several users are computed
// once per use (the trees stay trees, so the timing stays exact).
#include "scheduler/Lowering.h"

#include <algorithm>
#include <optional>

namespace lpu::scheduler {

using namespace backend;

namespace {

std::optional<Opcode> vxmOpcode(ir::OpKind kind) {
  if (std::optional<tensor::ElementwiseOp> e = ir::elementwiseArithmetic(kind))
    return backend::vxmOpcode(*e); // support/Elementwise.def
  switch (kind) {
  case ir::OpKind::Select: return Opcode::Select;
  case ir::OpKind::Convert: return Opcode::Cvt;
  default: return std::nullopt;
  }
}

/// The VXM instruction computing `op` (operand dtype for compares and
/// converts), or an error naming the op.
llvm::Expected<Instr> vxmInstr(const ir::Op &op) {
  std::optional<Opcode> code = vxmOpcode(op.kind());
  if (!code)
    return refuse<Refusal::NoLowering>(op);
  Instr in;
  in.op = *code;
  DType operandType = op.operand(0)->type().dtype;
  in.dtype = op.type().dtype;
  if (std::optional<tensor::ElementwiseOp> e = elementwiseOf(*code))
    if (tensor::isComparison(*e)) // the result is bool; the instruction compares operandType
      in.dtype = operandType;
  if (*code == Opcode::Cvt) {
    // The IR's convert truncates floats toward zero when the target is an
    // integer (cvt.trunc); float targets round to nearest even (cvt).
    in.dtype = operandType;
    in.dtype2 = op.type().dtype;
    if (tensor::isFloat(operandType) && !tensor::isFloat(in.dtype2))
      in.op = Opcode::CvtTrunc;
  }
  if (!dtypeAllowed(in.op, in.dtype))
    return refuse<Refusal::OperandDtype>(op, in.dtype);
  return in;
}

bool sharesSlice(const std::vector<uint16_t> &a, const std::vector<uint16_t> &b) {
  for (uint16_t s : a)
    if (std::find(b.begin(), b.end(), s) != b.end())
      return true;
  return false;
}

class GroupTrees {
public:
  GroupTrees(const ir::Op &root, LoweringContext &ctx) : root_(root), ctx_(ctx) {}

  /// Checks that every op of the group maps onto the VXM.
  llvm::Error check(const ir::Op &op) {
    auto in = vxmInstr(op);
    if (!in)
      return in.takeError();
    for (const ir::Op *operand : op.operands())
      if (inGroup(*operand))
        if (auto e = check(*operand))
          return e;
    return llvm::Error::success();
  }

  /// Checks that every operand the group reads is stored as its result is
  /// (`perm`, `rows` rows of `cols`): the trees read vector (row, vec) of
  /// each operand for vector (row, vec) of the result, so an operand in
  /// another order would give other elements (or rows past its end). The
  /// layout assignment gives a channels-last group channels-last operands
  /// (copies where needed); this is the guard that a form it missed is
  /// refused, not computed wrong.
  llvm::Error checkReads(const ir::Op &op, const std::vector<uint8_t> &perm, int64_t rows,
                         int64_t cols) {
    for (const ir::Op *operand : op.operands()) {
      if (inGroup(*operand)) {
        if (auto e = checkReads(*operand, perm, rows, cols))
          return e;
        continue;
      }
      if (operand == substitute_ || !ctx_.hasView(operand))
        continue;
      const TensorView &v = ctx_.view(operand);
      // A value still to be received (lockstep: its recvs come at its
      // place in the program, after this producer): not read early, in
      // an epilogue; the group is lowered where it stands.
      if (v.pending())
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "an operand is not received yet");
      if (!sameOrder(v.perm, perm))
        return refuse<Refusal::FusionOperandOrder>(root_, orderName(v.perm), orderName(perm));
      if (v.rows != rows || v.cols != cols)
        return refuse<Refusal::FusionOperandShape>(root_, v.rows, v.cols, rows, cols);
    }
    return llvm::Error::success();
  }

  /// The node computing `op`'s vector (row, vec) into `tree`.
  int build(WorkTree &tree, const ir::Op &op, int64_t row, int64_t vec) {
    Instr in = *vxmInstr(op);
    std::vector<int> inputs;
    std::vector<std::pair<std::vector<uint16_t>, uint32_t>> direct; // sibling reads
    for (const ir::Op *operand : op.operands()) {
      if (inGroup(*operand)) {
        inputs.push_back(build(tree, *operand, row, vec));
        continue;
      }
      if (operand == substitute_) {
        inputs.push_back(substituteNode_);
        continue;
      }
      const TensorView &v = readOf(*operand);
      read_.push_back(&v);
      const std::vector<uint16_t> &slices = v.slices(row);
      int n = tree.read(slices, v.address(row, vec));
      // Per read: a bias or a constant far from the VXM may be read before
      // the other operand is ready.
      tree.nodes[size_t(n)].notBefore = v.readyAt(row, vec);
      // Two different vectors of tensors sharing a slice, read for one
      // instruction, would need its read port in one cycle: the later
      // operand comes through a VXM copy, a cycle earlier.
      uint32_t addr = v.address(row, vec);
      for (const auto &[otherSlices, otherAddr] : direct)
        if (sharesSlice(otherSlices, slices) && (otherAddr != addr || otherSlices != slices)) {
          Instr copy;
          copy.op = Opcode::Copy;
          copy.dtype = v.dtype;
          n = tree.add(copy, {n});
          break;
        }
      direct.push_back({slices, addr});
      inputs.push_back(n);
    }
    return tree.add(in, inputs);
  }

  /// A new tree: its constants' reads start again from their first copy.
  void beginTree() { constantUses_.clear(); }

  std::vector<const TensorView *> read_;
  /// A value already in the tree (node substituteNode_) stands for the
  /// operand substitute_ (a producer's result: an epilogue).
  const ir::Op *substitute_ = nullptr;
  int substituteNode_ = -1;

  /// How often `op`'s tree reads `value`; false when an operand other than
  /// `value` has no view and cannot be given one now (a view op of a value
  /// that has one is lowered early: it places nothing).
  bool countUses(const ir::Op &op, const ir::Op &value, int &uses) {
    for (const ir::Op *operand : op.operands()) {
      if (inGroup(*operand)) {
        if (!countUses(*operand, value, uses))
          return false;
      } else if (operand == &value) {
        ++uses;
      } else if (!ensureView(*operand)) {
        return false;
      }
    }
    return true;
  }

private:
  /// The view a tree reads `operand` through. A constant read again in one
  /// tree (the rounding constant of a quantize, added and subtracted) is
  /// read from another copy on other slices each time: every tree of every
  /// quantize read one copy's slices twice, and those four slices were the
  /// busiest of the int8 ResNet-50 (190,000 reads each).
  const TensorView &readOf(const ir::Op &operand) {
    const TensorView &v = ctx_.view(&operand);
    if (operand.kind() != ir::OpKind::Constant)
      return v;
    const size_t k = size_t(constantUses_[&operand]++);
    if (k == 0)
      return v;
    std::vector<const TensorView *> &copies = constantCopies_[&operand];
    if (copies.empty())
      copies.push_back(&v);
    while (copies.size() <= k) {
      std::vector<uint16_t> avoid;
      for (const TensorView *c : copies)
        avoid.insert(avoid.end(), c->allSlices().begin(), c->allSlices().end());
      std::optional<TensorView> other = ctx_.constantElsewhere(operand, v, avoid);
      if (!other)
        return v;
      // The context keeps it: the tree's reads are counted after this
      // builder is gone (a matmul's epilogue).
      copies.push_back(&ctx_.keep(std::move(*other)));
    }
    return *copies[k];
  }
  std::map<const ir::Op *, int> constantUses_;
  std::map<const ir::Op *, std::vector<const TensorView *>> constantCopies_;

  static bool identity(const std::vector<uint8_t> &perm) {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != i)
        return false;
    return true;
  }
  static bool sameOrder(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b) {
    return a == b || (identity(a) && identity(b));
  }
  /// How a value with stored order `perm` is stored, for a diagnostic.
  static std::string orderName(const std::vector<uint8_t> &perm) {
    if (identity(perm))
      return "as declared";
    std::string out = "with its dimensions in the order (";
    for (size_t i = 0; i < perm.size(); ++i)
      out += (i ? ", " : "") + std::to_string(perm[i]);
    return out + ")";
  }
  bool ensureView(const ir::Op &op) {
    if (ctx_.hasView(&op))
      return true;
    if (!aliasesOperand(op, ctx_.chip().lanes) || !ensureView(*op.operand(0)))
      return false;
    LoweringFn lower = loweringFor(op.kind());
    if (!lower)
      return false;
    if (auto e = lower(op, ctx_)) {
      llvm::consumeError(std::move(e));
      return false;
    }
    return ctx_.hasView(&op);
  }
  bool inGroup(const ir::Op &op) const {
    return &op != &root_ && !ctx_.materialized(&op) && ir::isElementwise(op.kind());
  }
  const ir::Op &root_;
  LoweringContext &ctx_;
};

std::vector<uint8_t> storedOrderOf(const ir::Op &op, const LoweringContext &ctx) {
  auto it = ctx.storedOrder.find(&op);
  return it == ctx.storedOrder.end() ? std::vector<uint8_t>{} : it->second;
}

} // namespace

const ir::Op *epilogueInput(const ir::Op &producer, const LoweringContext &ctx) {
  const ir::Op *at = &producer;
  if (!ctx.heuristics.epilogueThroughReshapes)
    return at;
  for (;;) {
    auto it = ctx.users.find(at);
    if (it == ctx.users.end() || it->second.size() != 1)
      return at;
    const ir::Op *user = it->second[0];
    if (user->kind() != ir::OpKind::Reshape || ctx.returned.count(user) ||
        ctx.storedOrder.count(user) || ctx.storedOrder.count(at) ||
        LoweringContext::rowsAndCols(user->type()) != LoweringContext::rowsAndCols(at->type()))
      return at;
    ctx.heuristicsDecided.epilogueThroughReshapes = true;
    at = user;
  }
}

const ir::Op *epilogueRoot(const ir::Op &producer, LoweringContext &ctx) {
  const ir::Op &input = *epilogueInput(producer, ctx);
  if (ctx.returned.count(&producer) || ctx.returned.count(&input))
    return nullptr;
  const ir::Op *user = &input;
  do {
    auto it = ctx.users.find(user);
    if (it == ctx.users.end() || it->second.size() != 1 || !ir::isElementwise(it->second[0]->kind()))
      return nullptr;
    user = it->second[0];
  } while (!ctx.materialized(user));
  GroupTrees trees(*user, ctx);
  if (auto e = trees.check(*user)) {
    llvm::consumeError(std::move(e));
    return nullptr;
  }
  int uses = 0;
  if (!trees.countUses(*user, input, uses) || uses != 1)
    return nullptr;
  // The producer writes the root's rows in its own stored order, and the
  // group reads the other operands row for row in that order too.
  const std::vector<uint8_t> perm = storedOrderOf(*user, ctx);
  if (perm != storedOrderOf(producer, ctx))
    return nullptr;
  auto [rows, cols] = LoweringContext::rowsAndCols(LoweringContext::storedType(user->type(), perm));
  trees.substitute_ = &input;
  if (auto e = trees.checkReads(*user, perm, rows, cols)) {
    llvm::consumeError(std::move(e));
    return nullptr;
  }
  return user;
}

int buildEpilogue(WorkTree &tree, const ir::Op &root, const ir::Op &producer, int value, int64_t row,
                  int64_t vec, LoweringContext &ctx, std::vector<const TensorView *> &reads) {
  GroupTrees trees(root, ctx);
  trees.substitute_ = epilogueInput(producer, ctx);
  trees.substituteNode_ = value;
  int out = trees.build(tree, root, row, vec);
  reads.insert(reads.end(), trees.read_.begin(), trees.read_.end());
  return out;
}

namespace {
/// Checks that `root`'s group maps onto the VXM and reads its operands
/// stored as `root` is.
llvm::Error checkGroup(GroupTrees &trees, const ir::Op &root, const LoweringContext &ctx) {
  if (auto e = trees.check(root))
    return e;
  const std::vector<uint8_t> perm = storedOrderOf(root, ctx);
  auto [rows, cols] = LoweringContext::rowsAndCols(LoweringContext::storedType(root.type(), perm));
  return trees.checkReads(root, perm, rows, cols);
}
} // namespace

llvm::Expected<int> buildGroup(WorkTree &tree, const ir::Op &root, int64_t row, int64_t vec,
                               LoweringContext &ctx, std::vector<const TensorView *> &reads) {
  GroupTrees trees(root, ctx);
  if (auto e = checkGroup(trees, root, ctx))
    return e;
  int out = trees.build(tree, root, row, vec);
  reads.insert(reads.end(), trees.read_.begin(), trees.read_.end());
  return out;
}

llvm::Error lowerElementwise(const ir::Op &op, LoweringContext &ctx) {
  GroupTrees trees(op, ctx);
  if (auto e = checkGroup(trees, op, ctx))
    return e;
  auto out = ctx.define(&op);
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  int64_t prev = 0;
  bool first = true;
  ShortestSpan shortest;
  // The trees are placed in the order their operands become ready (row
  // order on a tie), as assembleLanes places its vectors: the int8
  // ResNet-50's stem epilogue, rows (o, ho) in the declared order, reads
  // convolutions that write them ho by ho, and in row order channel 0's
  // last row held every later channel's trees until they were done.
  struct Pending {
    int64_t r, v, ready;
    WorkTree tree;
    std::vector<const TensorView *> reads;
  };
  std::vector<Pending> pending;
  pending.reserve(size_t(view.rows * view.vecsPerRow));
  for (int64_t r = 0; r < view.rows; ++r)
    for (int64_t v = 0; v < view.vecsPerRow; ++v) {
      WorkTree tree;
      tree.write(view.slices(r), view.address(r, v), -1);
      tree.nodes[0].notBefore = view.storage->block.writableFrom;
      trees.read_.clear();
      trees.beginTree();
      int value = trees.build(tree, op, r, v);
      tree.nodes[0].inputs = {value};
      int64_t ready = 0;
      for (const auto &node : tree.nodes)
        ready = std::max(ready, node.notBefore);
      pending.push_back({r, v, ready, std::move(tree), trees.read_});
    }
  std::stable_sort(pending.begin(), pending.end(),
                   [](const Pending &a, const Pending &b) { return a.ready < b.ready; });
  for (Pending &t : pending) {
    std::optional<Placement> placed = ctx.placer().place(std::move(t.tree), prev);
    if (!placed)
      return cannotPlace(op, ctx);
    Placement p = *placed;
    prev = p.firstCycle;
    ctx.written(view, t.r, t.v, p.doneCycle - 1);
    for (const TensorView *in : t.reads)
      ctx.read(*in, p.doneCycle);
    if (first)
      ctx.notePath(op, p.span());
    first = false;
    shortest.note(p);
  }
  // Row r follows its operand's row r through row r's tree: the shortest.
  for (const ir::Op *operand : op.operands())
    ctx.notePaceVia(op, *operand, shortest.get());
  return llvm::Error::success();
}

llvm::Error lowerCopy(const ir::Op &op, const ir::Type &type, const TensorView &src,
                      LoweringContext &ctx) {
  auto out = ctx.define(&op, type);
  if (!out)
    return out.takeError();
  TensorView &view = **out;
  int64_t prev = 0;
  for (int64_t r = 0; r < view.rows; ++r)
    for (int64_t v = 0; v < view.vecsPerRow; ++v) {
      WorkTree tree;
      tree.write(view.slices(r), view.address(r, v), -1);
      Instr copy;
      copy.op = Opcode::Copy;
      copy.dtype = type.dtype;
      int value = tree.add(copy, {tree.read(src.slices(r), src.address(r, v))});
      tree.nodes[0].inputs = {value};
      int64_t ready = std::max(src.readyAt(r, v), view.storage->block.writableFrom);
      std::optional<Placement> placed = ctx.placer().place(std::move(tree), std::max(prev, ready));
      if (!placed)
        return cannotPlace(op, ctx);
      Placement p = *placed;
      prev = p.firstCycle;
      ctx.written(view, r, v, p.doneCycle - 1);
      ctx.read(src, p.doneCycle);
    }
  return llvm::Error::success();
}

} // namespace lpu::scheduler
