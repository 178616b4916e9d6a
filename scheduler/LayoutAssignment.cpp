#include "scheduler/LayoutAssignment.h"

#include "scheduler/lower/ConvMaps.h"

#include <algorithm>
#include <set>

namespace lpu::scheduler {

namespace {

using K = ir::OpKind;
using ir::DType;

bool rank4(const ir::Op &op) { return op.type().shape.size() == 4; }

bool isLayoutOp(K kind) {
  return kind == K::Reshape || kind == K::Transpose || kind == K::Slice || kind == K::Broadcast ||
         kind == K::Concat;
}

bool isPool(K kind) { return kind == K::MaxPool2d || kind == K::AvgPool2d; }

/// A convolution the channels-last lowering handles: f16 operands (or i8
/// ones, summed in i32), no groups. (Channels-last is taken whenever it can be: with few input
/// channels (a stem over 1 or 3 colour channels) it streams more `mm` than
/// the rows layout would, but mixing layouts costs a transpose of the
/// activations between them, which measured worse on examples/convnet.lpu.)
bool convCandidate(const ir::Op &op) {
  const ir::Op &x = *op.operand(0), &w = *op.operand(1);
  DType out = op.type().dtype;
  const bool f16 = x.type().dtype == DType::F16 && w.type().dtype == DType::F16 &&
                   (out == DType::F16 || out == DType::F32);
  const bool int8 = x.type().dtype == DType::I8 && w.type().dtype == DType::I8 && out == DType::I32;
  return rank4(op) && rank4(x) && rank4(w) && (f16 || int8) && op.intAttr("groups").value_or(1) == 1;
}

/// A mean or sum of a [N, C, H, W] over H and W giving [N, C].
bool globalPool(const ir::Op &op) {
  if (op.kind() != K::ReduceMean && op.kind() != K::ReduceSum)
    return false;
  if (!rank4(*op.operand(0)) || op.type().shape.size() != 2)
    return false;
  std::vector<int64_t> axes = op.intsAttr("axes").value_or(std::vector<int64_t>{});
  for (int64_t &a : axes)
    if (a < 0)
      a += 4;
  std::sort(axes.begin(), axes.end());
  return axes == std::vector<int64_t>{2, 3};
}

/// A per-channel shape: [A, C, 1, 1], or [C, 1, 1] (a value that NumPy
/// broadcasting aligns to an [N, C, H, W]'s last three dimensions); its C
/// is the dimension before the two 1s.
bool perChannel(const std::vector<int64_t> &s) {
  return (s.size() == 4 || s.size() == 3) && s[s.size() - 2] == 1 && s.back() == 1;
}
int64_t channelsOf(const std::vector<int64_t> &s) { return s[s.size() - 3]; }

/// A reshape of [.., C] to [A, C, 1, 1] or [C, 1, 1]: channels-last
/// ([A, 1, 1, C], [1, 1, C]) it is the same bytes seen as A rows of C.
bool channelReshape(const ir::Op &op) {
  if (op.kind() != K::Reshape)
    return false;
  const std::vector<int64_t> &to = op.type().shape, &from = op.operand(0)->type().shape;
  return perChannel(to) && !from.empty() &&
         from.back() == channelsOf(to);
}

/// A broadcast to [N, C, H, W] that keeps C: of an [N', C, H', W'] (N',
/// H', W' each 1 or as in the result) or a per-channel [C, 1, 1]. Each
/// channels-last row repeats one stored row of the operand (a bias
/// [1, C, 1, 1] over every pixel, an addend [1, C, H, W] over the images).
bool channelBroadcast(const ir::Op &op) {
  if (op.kind() != K::Broadcast)
    return false;
  const std::vector<int64_t> &to = op.type().shape, &from = op.operand(0)->type().shape;
  if (to.size() != 4 || !(from.size() == 4 || perChannel(from)))
    return false;
  std::vector<int64_t> aligned(4 - from.size(), 1);
  aligned.insert(aligned.end(), from.begin(), from.end());
  if (aligned[1] != to[1])
    return false;
  for (size_t d : {0, 2, 3})
    if (aligned[d] != 1 && aligned[d] != to[d])
      return false;
  return true;
}

/// A channels-last value whose H and W are 1: its stored bytes are those
/// of the declared order.
bool pixelFree(const ir::Op &op) { return perChannel(op.type().shape); }

bool storedPermuted(const LoweringContext &ctx, const ir::Op *op) {
  return ctx.hasView(op) && !ctx.view(op).perm.empty();
}

/// A reshape of a channels-last [A, C, 1, 1] (or [C, 1, 1]) keeping C
/// last: a view with the declared order.
bool pixelFreeReshape(const ir::Op &op) {
  return op.kind() == K::Reshape && pixelFree(*op.operand(0)) && !op.type().shape.empty() &&
         op.type().shape.back() == channelsOf(op.operand(0)->type().shape);
}

/// A transpose (stored as declared) of a value stored in the transpose's
/// order: its result is the operand's storage as it is.
bool transposeOfStored(const ir::Op &op, const std::map<const ir::Op *, std::vector<uint8_t>> &order) {
  if (op.kind() != K::Transpose || order.count(&op))
    return false;
  auto stored = order.find(op.operand(0));
  auto perm = op.intsAttr("perm");
  if (stored == order.end() || !perm || perm->size() != stored->second.size())
    return false;
  for (size_t i = 0; i < perm->size(); ++i)
    if ((*perm)[i] != stored->second[i])
      return false;
  return true;
}

llvm::Error storedView(const ir::Op &op, LoweringContext &ctx) {
  const TensorView &in = ctx.view(op.operand(0));
  TensorView out = in;
  auto it = ctx.storedOrder.find(&op);
  out.perm = it == ctx.storedOrder.end() ? std::vector<uint8_t>{} : it->second;
  auto [rows, cols] = LoweringContext::rowsAndCols(LoweringContext::storedType(op.type(), out.perm));
  out.rows = rows;
  out.cols = cols;
  if (op.kind() == K::Broadcast) {
    // Pixel row (n, h, w) reads the operand's stored row at the indices it
    // has (0 along those it has as 1): both stored with C last, the
    // broadcast repeats whole rows.
    const std::vector<int64_t> toStored = LoweringContext::storedType(op.type(), out.perm).shape;
    const std::vector<int64_t> fromStored =
        LoweringContext::storedType(op.operand(0)->type(), in.perm).shape;
    out.rowMap.assign(size_t(rows), 0);
    for (int64_t r = 0; r < rows; ++r)
      out.rowMap[size_t(r)] = in.storageRow(broadcastSourceRow(toStored, fromStored, r));
  }
  ctx.setView(&op, std::move(out));
  ctx.notePath(op, 0);
  return llvm::Error::success();
}

} // namespace

LayoutAssignment assignLayouts(const ir::Function &fn, const backend::ChipDescription &chip,
                               const TuningKnobs &knobs, const std::set<const ir::Op *> &declared) {
  // Channels-last, a value larger than a slice is stored in chunks of
  // rows, each in slices of its own (C pads to whole vectors per pixel):
  // at most knobs.maxChunkSlices slices.
  auto fits = [&](const ir::Op &op) {
    const std::vector<int64_t> &s = op.type().shape;
    if (s.size() == 3)
      return true; // [C, 1, 1]: one row
    int64_t vecs = s[0] * s[2] * s[3] * ((s[1] + chip.lanes - 1) / chip.lanes);
    int64_t chunks = (vecs + chip.memVectors - 1) / chip.memVectors;
    return chunks * tensor::dtypeSize(op.type().dtype) <= knobs.maxChunkSlices;
  };
  // A declared operand a channels-last op may read through a copy.
  auto copyable = [&](const ir::Op &op) {
    return rank4(op) && fits(op) && op.kind() != K::Param;
  };
  std::map<const ir::Op *, std::vector<std::pair<const ir::Op *, size_t>>> users;
  for (const auto &op : fn.ops())
    for (size_t i = 0; i < op->operands().size(); ++i)
      users[op->operand(i)].push_back({op.get(), i});

  // Start from every value that could be channels-last, then drop those a
  // user cannot read so, or whose operands are not so, until nothing
  // changes (the sets only shrink, so this ends).
  std::set<const ir::Op *> cl, weights;
  for (const auto &owned : fn.ops()) {
    const ir::Op &op = *owned;
    K kind = op.kind();
    if (!rank4(op) && !(pixelFree(op) && (channelReshape(op) || kind == K::Param ||
                                          kind == K::Input || kind == K::Constant)))
      continue;
    if (kind == K::Param && rank4(op))
      weights.insert(&op);
    // A parameter only channels-last ops read (a bias [1, C, 1, 1] or
    // [C, 1, 1] a broadcast repeats, an addend [1, C, H, W]) is laid out so.
    if (declared.count(&op))
      continue;
    // A per-tensor scale or zero point broadcast over an activation: one
    // stored row of C copies, whatever the activation's size (moveLanes).
    if (rank4(op) && uniformBroadcast(op) && !channelBroadcast(op)) {
      cl.insert(&op);
      continue;
    }
    if (((kind == K::Conv2d && convCandidate(op) && !rowsFarCheaperThanChannelsLast(op, chip, knobs.rowsLayoutAdvantage)) ||
         kind == K::Input || kind == K::Constant ||
         kind == K::Param || isPool(kind) || channelReshape(op) || channelBroadcast(op) ||
         ir::isElementwise(kind)) &&
        (fits(op) || uniformBroadcast(op)))
      cl.insert(&op);
  }
  // `activation`: a conv or pool result, or arithmetic on one;
  // `feedsActivation`: arithmetic that an activation (or arithmetic
  // feeding one) reads, such as an operand of a group after a conv
  // computed from other operands. Worked out again from `cl` in each round
  // below, so that two elementwise ops cannot keep each other
  // channels-last with no conv or pool behind or ahead of either.
  std::set<const ir::Op *> activations, feeders;
  auto activation = [&](const ir::Op *op) { return activations.count(op) > 0; };
  auto feedsActivation = [&](const ir::Op *op) {
    for (auto [u, i] : users[op])
      if (activations.count(u) || feeders.count(u))
        return true;
    return false;
  };
  auto noteActivations = [&] {
    activations.clear();
    feeders.clear();
    for (const auto &owned : fn.ops()) {
      const ir::Op *op = owned.get();
      if (!cl.count(op))
        continue;
      bool yes = op->kind() == K::Conv2d || isPool(op->kind());
      if (ir::isElementwise(op->kind()))
        for (const ir::Op *operand : op->operands())
          yes |= activations.count(operand) > 0;
      if (yes)
        activations.insert(op);
    }
    for (auto it = fn.ops().rbegin(); it != fn.ops().rend(); ++it) {
      const ir::Op *op = it->get();
      if (cl.count(op) && ir::isElementwise(op->kind()) && !activations.count(op) &&
          feedsActivation(op))
        feeders.insert(op);
    }
  };
  auto accepts = [&](const ir::Op *user, size_t i) {
    if (cl.count(user)) {
      K kind = user->kind();
      return (kind == K::Conv2d && i == 0) || isPool(kind) || ir::isElementwise(kind) ||
             kind == K::Broadcast;
    }
    // Lane moves read the stored order; outputs are placed in it.
    return user->kind() == K::Return || isLayoutOp(user->kind()) || globalPool(*user);
  };
  auto eligible = [&](const ir::Op &op) {
    switch (op.kind()) {
    case K::Conv2d:
      return (cl.count(op.operand(0)) || copyable(*op.operand(0))) && weights.count(op.operand(1));
    case K::MaxPool2d:
    case K::AvgPool2d:
      return cl.count(op.operand(0)) || copyable(*op.operand(0));
    case K::Broadcast:
      return cl.count(op.operand(0)) > 0 || (uniformBroadcast(op) && !channelBroadcast(op));
    case K::Reshape:
      return !cl.count(op.operand(0)) && !weights.count(op.operand(0));
    case K::Param: {
      // Laid out so only for channels-last readers: a lane move back to
      // the declared order for another reader would cost what a view saves.
      bool all = !users[&op].empty();
      for (auto [u, i] : users[&op])
        all = all && cl.count(u);
      return all;
    }
    case K::Input:
    case K::Constant:
      // Worth it when a channels-last op reads it (then all its users do).
      for (auto [u, i] : users[&op])
        if (cl.count(u))
          return true;
      return false;
    default: {
      // Elementwise: an activation among the operands, or feeding one
      // (arithmetic on other operands that a group after a conv takes in:
      // a group's ops are all channels-last or none is); the operands
      // channels-last, or copied so unless they are fused into this op.
      // Arithmetic that only leads to an activation does not read a
      // value wider than f16 through a copy: the int8 stem's epilogue (its
      // i32 sums and ones-convolution, rows layout) copied both i32
      // results channels-last, four byte planes each, where its f16
      // result, copied for the pool after it, takes two.
      bool any = feedsActivation(&op), leads = !any;
      for (const ir::Op *operand : op.operands()) {
        bool fused = ir::isElementwise(operand->kind()) && operand->fusionGroup() &&
                     operand->fusionGroup() == op.fusionGroup();
        if (!cl.count(operand) && (fused || !copyable(*operand)))
          return false;
        leads = leads || activation(operand);
        any |= activation(operand);
      }
      if (!leads)
        for (const ir::Op *operand : op.operands())
          if (!cl.count(operand) && tensor::dtypeSize(operand->type().dtype) > 2)
            return false;
      return any;
    }
    }
  };
  // A pool that shrinks the image, reading a convolution in the declared
  // order (the packed rows form: ResNet-50's stem) through elementwise ops
  // alone (its batch norm, a relu): the pool and those ops stay in the
  // declared order too, and what is copied channels-last is the pool's
  // result, a quarter of the pixels for a stride of 2, where a copy of
  // the convolution's result took four times the transposes and the pool
  // read it pixel by pixel.
  for (const auto &owned : fn.ops()) {
    const ir::Op &op = *owned;
    // Read pixel row by pixel row from one port, such a pool was slower
    // than channels-last (docs/scheduler.md, "Window reads").
    if (knobs.windowInterleave < 2 || !isPool(op.kind()) || !cl.count(&op) ||
        !rank4(*op.operand(0)))
      continue;
    const std::vector<int64_t> &in = op.operand(0)->type().shape, &res = op.type().shape;
    if (res[2] * res[3] * 2 > in[2] * in[3] || in[3] > int64_t(chip.lanes))
      continue;
    std::vector<const ir::Op *> chain;
    const ir::Op *v = op.operand(0);
    while (v && ir::isElementwise(v->kind()) && cl.count(v) && users[v].size() == 1) {
      chain.push_back(v);
      const ir::Op *next = nullptr;
      int activations = 0;
      for (const ir::Op *operand : v->operands())
        if (operand->type().shape == v->type().shape && operand->kind() != K::Broadcast &&
            operand->kind() != K::Param && operand->kind() != K::Constant)
          next = operand, ++activations;
      v = activations == 1 ? next : nullptr;
    }
    if (!v || v->kind() != K::Conv2d || cl.count(v) || users[v].size() != 1)
      continue;
    cl.erase(&op);
    for (const ir::Op *e : chain)
      cl.erase(e);
  }
  for (bool changed = true; changed;) {
    changed = false;
    noteActivations();
    for (const auto &owned : fn.ops()) {
      const ir::Op *op = owned.get();
      if (cl.count(op)) {
        bool keep = eligible(*op);
        for (auto [u, i] : users[op])
          keep = keep && accepts(u, i);
        if (!keep) {
          cl.erase(op);
          changed = true;
        }
      }
      if (weights.count(op)) {
        bool keep = !users[op].empty();
        for (auto [u, i] : users[op])
          keep = keep && u->kind() == K::Conv2d && i == 1 && cl.count(u);
        if (!keep) {
          weights.erase(op);
          changed = true;
        }
      }
    }
  }
  LayoutAssignment out;
  for (const ir::Op *op : cl)
    out.order[op] = rank4(*op) ? kChannelsLast : kPerChannelOrder;
  for (const ir::Op *op : weights)
    out.order[op] = kConvWeightOrder;
  // A weight read only transposed ([V, D] read as [D, V]: tied embeddings'
  // logits) is stored transposed, so that the transpose is a view of it
  // instead of a copy as large as the weight.
  std::map<const ir::Op *, std::vector<const ir::Op *>> readers;
  for (const auto &owned : fn.ops())
    for (const ir::Op *operand : owned->operands())
      readers[operand].push_back(owned.get());
  for (const auto &owned : fn.ops()) {
    const ir::Op &op = *owned;
    if (op.kind() != K::Param || op.type().rank() != 2 || out.order.count(&op) || readers[&op].empty())
      continue;
    if (llvm::all_of(readers[&op], [](const ir::Op *user) {
          return user->kind() == K::Transpose &&
                 user->intsAttr("perm") == std::vector<int64_t>{1, 0};
        }))
      out.order[&op] = kTransposed;
  }
  out.scratch = std::make_unique<ir::Function>(fn.name() + ".relayout");
  for (const auto &owned : fn.ops()) {
    const ir::Op &op = *owned;
    if (!cl.count(&op) || op.kind() == K::Broadcast || op.kind() == K::Reshape)
      continue;
    for (size_t i = 0; i < op.operands().size(); ++i) {
      const ir::Op *operand = op.operand(i);
      if ((op.kind() == K::Conv2d && i == 1) || cl.count(operand) || out.relayout.count(operand))
        continue;
      ir::Op *copy = out.scratch->append(K::Reshape, operand->type(),
                                         {const_cast<ir::Op *>(operand)}, operand->loc());
      out.order[copy] = kChannelsLast;
      out.relayout[operand] = copy;
    }
  }
  for (const auto &owned : fn.ops()) {
    const ir::Op &op = *owned;
    if (op.kind() != K::Conv2d || cl.count(&op) || !rank4(*op.operand(1)) ||
        out.convRows.count(op.operand(1)))
      continue;
    ir::Op *w = const_cast<ir::Op *>(op.operand(1));
    const std::vector<int64_t> &ws = w->type().shape;
    ir::Type rows = w->type();
    rows.shape = {ws[0], ws[1] * ws[2] * ws[3]};
    out.convRows[w] = out.scratch->append(K::Reshape, rows, {w}, w->loc());
  }
  return out;
}

LoweringFn storedOrderLowering(const ir::Op &op, const LoweringContext &ctx) {
  const bool mine = ctx.storedOrder.count(&op) > 0;
  bool permutedOperand = false;
  for (const ir::Op *operand : op.operands())
    permutedOperand |= storedPermuted(ctx, operand);
  K kind = op.kind();
  if (kind == K::Conv2d && mine)
    return lowerConvChannelsLast;
  if (isPool(kind) && mine)
    return lowerPoolChannelsLast;
  if (kind == K::Broadcast && mine && uniformBroadcast(op) && !channelBroadcast(op))
    return moveLanes; // one row of copies, every pixel row repeating it
  if ((kind == K::Reshape || kind == K::Broadcast) && mine)
    return storedView;
  if (transposeOfStored(op, ctx.storedOrder))
    return storedView;
  if (!permutedOperand)
    return nullptr;
  if (globalPool(op))
    return lowerGlobalPool;
  if (pixelFreeReshape(op))
    return storedView;
  if (isLayoutOp(kind))
    return moveLanes; // assembles the declared order from the stored one
  return nullptr;
}

namespace {

/// The values `op`'s lowering reads: its operands, and for each operand
/// computed inside the trees that read it (an op of the same fusion group,
/// a widened convert) what that operand reads, as GroupTrees walks them.
void loweringReads(const ir::Op &op, const LoweringContext &ctx,
                   std::vector<const ir::Op *> &reads) {
  for (const ir::Op *operand : op.operands()) {
    if (ir::isElementwise(operand->kind()) && !ctx.materialized(operand))
      loweringReads(*operand, ctx, reads);
    else if (std::find(reads.begin(), reads.end(), operand) == reads.end())
      reads.push_back(operand);
  }
}

/// The channels-last copy `copy` of its declared [N, C, H, W] operand: a
/// transpose of the channels into the lanes, by rotations and gathers
/// (transposeByGather: a rotate per input row, a gather per output vector
/// and byte plane), or where its maps cannot say it by lane moves (a
/// distribute per channel of every pixel row).
llvm::Error channelsLastCopy(const ir::Op &copy, LoweringContext &ctx) {
  const ir::Op &from = *copy.operand(0);
  if (rank4(from) && !storedPermuted(ctx, &from)) {
    auto define = [&] { return ctx.define(&copy, copy.type(), ctx.windowInterleave(from, true)); };
    TransposeTarget target{define, nullptr, nullptr};
    if (std::optional<llvm::Error> done = transposeByGather(
            copy, ctx, ctx.view(&from), from.type().shape,
            std::vector<int64_t>(kChannelsLast.begin(), kChannelsLast.end()), target))
      return std::move(*done);
  }
  return moveLanes(copy, ctx);
}

} // namespace

llvm::Error lowerWithRelayouts(const ir::Op &op, LoweringFn lower, const LayoutAssignment &layouts,
                               LoweringContext &ctx) {
  if (!layouts.order.count(&op))
    return lower(op, ctx);
  // The declared views the values it reads had, put back once it is
  // lowered. A fusion group reads the operands of all its ops, not only
  // its root's: each is read in the group's stored order.
  std::vector<const ir::Op *> reads;
  loweringReads(op, ctx, reads);
  std::vector<std::pair<const ir::Op *, TensorView>> saved;
  for (const ir::Op *operand : reads) {
    auto it = layouts.relayout.find(operand);
    if (it == layouts.relayout.end() || !ctx.hasView(operand))
      continue;
    const ir::Op *copy = it->second;
    // The copy is made once and kept for the rest of the run (another op
    // may read it later).
    if (!ctx.hasView(copy))
      if (auto e = channelsLastCopy(*copy, ctx))
        return e;
    saved.push_back({operand, ctx.view(operand)});
    ctx.setView(operand, ctx.view(copy));
  }
  llvm::Error result = lower(op, ctx);
  for (auto &[operand, view] : saved)
    ctx.setView(operand, std::move(view));
  return result;
}

bool isGlobalPool(const ir::Op &op, const LayoutAssignment &layouts) {
  return globalPool(op) && layouts.order.count(op.operand(0));
}

bool aliasesOperand(const ir::Op &op, const LayoutAssignment &layouts, unsigned lanes) {
  if (op.operands().size() != 1)
    return false;
  if (transposeOfStored(op, layouts.order))
    return true;
  const bool mine = layouts.order.count(&op) > 0;
  if (op.kind() == K::Broadcast && mine && uniformBroadcast(op) && !channelBroadcast(op))
    return false; // a row of its own (moveLanes)
  if ((op.kind() == K::Reshape || op.kind() == K::Broadcast) && mine)
    return true;
  if (layouts.order.count(op.operand(0)))
    return pixelFreeReshape(op);
  return aliasesOperand(op, lanes);
}

} // namespace lpu::scheduler
