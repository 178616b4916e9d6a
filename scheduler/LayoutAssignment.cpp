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

/// A convolution the channels-last lowering handles: f16 operands, no
/// groups. (Channels-last is taken whenever it can be: with few input
/// channels (a stem over 1 or 3 colour channels) it streams more `mm` than
/// the rows layout would, but mixing layouts costs a transpose of the
/// activations between them, which measured worse on examples/convnet.lpu.)
bool convCandidate(const ir::Op &op) {
  const ir::Op &x = *op.operand(0), &w = *op.operand(1);
  DType out = op.type().dtype;
  return rank4(op) && rank4(x) && rank4(w) && x.type().dtype == DType::F16 &&
         w.type().dtype == DType::F16 && (out == DType::F16 || out == DType::F32) &&
         op.intAttr("groups").value_or(1) == 1;
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

/// A reshape of [.., C] to [A, C, 1, 1]: channels-last it is the same
/// bytes seen as A rows of C.
bool channelReshape(const ir::Op &op) {
  const std::vector<int64_t> &to = op.type().shape, &from = op.operand(0)->type().shape;
  return op.kind() == K::Reshape && to.size() == 4 && to[2] == 1 && to[3] == 1 && !from.empty() &&
         from.back() == to[1];
}

/// A broadcast of [A, C, 1, 1] over H and W (and N when A is 1): each
/// channels-last row repeats one stored row.
bool channelBroadcast(const ir::Op &op) {
  const std::vector<int64_t> &to = op.type().shape, &from = op.operand(0)->type().shape;
  return op.kind() == K::Broadcast && to.size() == 4 && from.size() == 4 && from[2] == 1 &&
         from[3] == 1 && from[1] == to[1] && (from[0] == 1 || from[0] == to[0]);
}

/// A channels-last value whose H and W are 1: its stored bytes are those
/// of the declared order.
bool pixelFree(const ir::Op &op) {
  const std::vector<int64_t> &s = op.type().shape;
  return s.size() == 4 && s[2] == 1 && s[3] == 1;
}

bool storedPermuted(const LoweringContext &ctx, const ir::Op *op) {
  return ctx.hasView(op) && !ctx.view(op).perm.empty();
}

/// A reshape of a channels-last [A, C, 1, 1] keeping C last: a view with
/// the declared order.
bool pixelFreeReshape(const ir::Op &op) {
  return op.kind() == K::Reshape && pixelFree(*op.operand(0)) && !op.type().shape.empty() &&
         op.type().shape.back() == op.operand(0)->type().shape[1];
}

llvm::Error storedView(const ir::Op &op, LoweringContext &ctx) {
  const TensorView &in = ctx.view(op.operand(0));
  TensorView out = in;
  const std::vector<int64_t> &to = op.type().shape;
  auto it = ctx.storedOrder.find(&op);
  out.perm = it == ctx.storedOrder.end() ? std::vector<uint8_t>{} : it->second;
  auto [rows, cols] = LoweringContext::rowsAndCols(LoweringContext::storedType(op.type(), out.perm));
  out.rows = rows;
  out.cols = cols;
  if (op.kind() == K::Broadcast) {
    // Pixel row (n, h, w) reads the stored row of image n (or the only one).
    const int64_t pixels = to[2] * to[3];
    const bool perImage = op.operand(0)->type().shape[0] != 1;
    out.rowMap.assign(size_t(rows), 0);
    for (int64_t r = 0; r < rows; ++r)
      out.rowMap[size_t(r)] = in.storageRow(perImage ? r / pixels : 0);
  }
  ctx.setView(&op, std::move(out));
  ctx.notePath(op, 0);
  return llvm::Error::success();
}

} // namespace

/// At most this many slices for one channels-last value's chunks.
constexpr int64_t kMaxChunkSlices = 16;

LayoutAssignment assignLayouts(const ir::Function &fn, const backend::ChipDescription &chip) {
  // Channels-last, a value larger than a slice is stored in chunks of
  // rows, each in slices of its own (C pads to whole vectors per pixel):
  // at most kMaxChunkSlices slices.
  auto fits = [&](const ir::Op &op) {
    const std::vector<int64_t> &s = op.type().shape;
    int64_t vecs = s[0] * s[2] * s[3] * ((s[1] + chip.lanes - 1) / chip.lanes);
    int64_t chunks = (vecs + chip.memVectors - 1) / chip.memVectors;
    return chunks * tensor::dtypeSize(op.type().dtype) <= kMaxChunkSlices;
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
    if (!rank4(op))
      continue;
    if (kind == K::Param)
      weights.insert(&op);
    else if (((kind == K::Conv2d && convCandidate(op)) || kind == K::Input || kind == K::Constant ||
              isPool(kind) || channelReshape(op) || channelBroadcast(op) ||
              ir::isElementwise(kind)) &&
             fits(op))
      cl.insert(&op);
  }
  // An activation: a conv or pool result, or arithmetic on one.
  auto activation = [&](const ir::Op *op) {
    return cl.count(op) && (op->kind() == K::Conv2d || isPool(op->kind()) ||
                            ir::isElementwise(op->kind()));
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
      return cl.count(op.operand(0)) > 0;
    case K::Reshape:
      return !cl.count(op.operand(0)) && !weights.count(op.operand(0));
    case K::Input:
      // Worth it only for an image a convolution or pool reads.
      for (auto [u, i] : users[&op])
        if (cl.count(u) && i == 0 && (u->kind() == K::Conv2d || isPool(u->kind())))
          return true;
      return false;
    case K::Constant:
      for (auto [u, i] : users[&op])
        if (cl.count(u))
          return true;
      return false;
    default: {
      // Elementwise: an activation among the operands; the others
      // channels-last, or copied so unless they are fused into this op.
      bool any = false;
      for (const ir::Op *operand : op.operands()) {
        bool fused = ir::isElementwise(operand->kind()) && operand->fusionGroup() &&
                     operand->fusionGroup() == op.fusionGroup();
        if (!cl.count(operand) && (fused || !copyable(*operand)))
          return false;
        any |= activation(operand);
      }
      return any;
    }
    }
  };
  for (bool changed = true; changed;) {
    changed = false;
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
    out.order[op] = kChannelsLast;
  for (const ir::Op *op : weights)
    out.order[op] = kConvWeightOrder;
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
  if ((kind == K::Reshape || kind == K::Broadcast) && mine)
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

llvm::Error lowerWithRelayouts(const ir::Op &op, LoweringFn lower, const LayoutAssignment &layouts,
                               LoweringContext &ctx) {
  if (!layouts.order.count(&op))
    return lower(op, ctx);
  // The declared views this op's operands had, put back once it is lowered.
  std::vector<std::pair<const ir::Op *, TensorView>> saved;
  for (const ir::Op *operand : op.operands()) {
    auto it = layouts.relayout.find(operand);
    if (it == layouts.relayout.end() || !ctx.hasView(operand))
      continue;
    const ir::Op *copy = it->second;
    // The copy is made once and kept for the rest of the run (another op
    // may read it later).
    if (!ctx.hasView(copy))
      if (auto e = moveLanes(*copy, ctx))
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
  const bool mine = layouts.order.count(&op) > 0;
  if ((op.kind() == K::Reshape || op.kind() == K::Broadcast) && mine)
    return true;
  if (layouts.order.count(op.operand(0)))
    return pixelFreeReshape(op);
  return aliasesOperand(op, lanes);
}

} // namespace lpu::scheduler
