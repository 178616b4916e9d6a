// What a value's padding lanes hold: the lanes of a row's last vector past
// its last element. Lowerings compute and write whole vectors, so those
// lanes hold whatever the producer computed from its operands' padding
// lanes: zeros for inputs and parameters (the program file's layout), the
// value for a splat constant, rsqrt(0) = inf for an rsqrt of either. Most
// readers never look at them, but the MXM multiplies all its lanes: a NaN
// or an infinity there times an unloaded weight row's 0 is NaN in every
// output (docs/scheduler.md, "Padding lanes").
#include "scheduler/Lowering.h"

#include "support/Arithmetic.h"

#include <cmath>
#include <map>
#include <optional>
#include <vector>

namespace lpu::scheduler {

namespace {

using K = ir::OpKind;
using ir::DType;

/// One padding lane, held as the VXM computes on it: an f32 value exact in
/// the dtype for the float dtypes, an int32 in range for the others.
struct Lane {
  DType dtype;
  float f = 0.0f;
  int32_t i = 0;
  bool isFloat() const { return tensor::isFloat(dtype); }
};

class PaddingLanes {
public:
  explicit PaddingLanes(const LoweringContext &ctx) : ctx_(ctx) {}

  /// The value every padding lane of `op`'s stored rows holds; nullopt when
  /// it is not known.
  std::optional<Lane> of(const ir::Op &op) {
    auto it = memo_.find(&op);
    if (it != memo_.end())
      return it->second;
    std::optional<Lane> lane = compute(op);
    memo_[&op] = lane;
    return lane;
  }

private:
  /// `operand`'s padding lanes as `reader`'s lowering reads them: a
  /// channels-last op reading a value stored as declared reads its
  /// channels-last copy (LayoutAssignment::relayout), made by lane moves,
  /// whose padding lanes are 0.
  std::optional<Lane> read(const ir::Op &operand, const ir::Op &reader) {
    const bool readerPermuted = ctx_.storedOrder.count(&reader) && reader.kind() != K::Reshape &&
                                reader.kind() != K::Broadcast;
    if (readerPermuted && !ctx_.storedOrder.count(&operand))
      return Lane{operand.type().dtype};
    return of(operand);
  }

  std::optional<Lane> compute(const ir::Op &op) {
    const DType dtype = op.type().dtype;
    const bool permuted = ctx_.storedOrder.count(&op) > 0;
    switch (op.kind()) {
    case K::Input:
    case K::Param:
      return Lane{dtype};
    case K::Constant:
      return constantLane(op);
    case K::Conv2d:
      // Lanes past the output channels (channels-last) or past Wo (rows)
      // meet zero weight columns or zero lanes of the installed copies:
      // 0, the streamed padding lanes being finite (lower/Conv.cpp).
      return Lane{dtype};
    case K::MaxPool2d:
      if (!permuted)
        return std::nullopt;
      return read(*op.operand(0), op); // the max of equal lanes
    case K::AvgPool2d: {
      if (!permuted)
        return std::nullopt;
      std::optional<Lane> in = read(*op.operand(0), op);
      if (in && in->isFloat() && in->f == 0.0f)
        return Lane{dtype}; // a sum of zeros over the window's size
      return std::nullopt;
    }
    case K::Reshape:
    case K::Broadcast:
      // Channels-last views repeat whole stored rows of their operand.
      if (!permuted)
        return std::nullopt;
      return of(*op.operand(0));
    default:
      break;
    }
    if (!ir::isElementwise(op.kind()))
      return std::nullopt;
    std::vector<Lane> xs;
    for (const ir::Op *operand : op.operands()) {
      std::optional<Lane> x = read(*operand, op);
      if (!x)
        return std::nullopt;
      xs.push_back(*x);
    }
    return evaluate(op, xs);
  }

  static std::optional<Lane> constantLane(const ir::Op &op) {
    // As the driver stores a splat (splatBytes, encodeElement).
    Lane lane{op.type().dtype};
    double value = 0;
    if (auto f = op.floatAttr("value"))
      value = *f;
    else if (auto b = op.boolAttr("value"))
      value = *b ? 1.0 : 0.0;
    else
      return std::nullopt;
    if (lane.isFloat()) {
      lane.f = float(value);
      tensor::roundTo(lane.dtype, &lane.f, 1);
    } else {
      lane.i = tensor::wrapInt(lane.dtype, int64_t(value));
    }
    return lane;
  }

  /// `op` on one lane, with the arithmetic the VXM uses (one VXM
  /// instruction per elementwise op: lower/Elementwise.cpp).
  static std::optional<Lane> evaluate(const ir::Op &op, const std::vector<Lane> &xs) {
    Lane y{op.type().dtype};
    if (op.kind() == K::Select) {
      if (xs.size() != 3 || xs[0].isFloat())
        return std::nullopt;
      return xs[0].i ? xs[1] : xs[2];
    }
    const Lane &a = xs.front(), &b = xs.back();
    if (op.kind() == K::Convert) {
      if (y.isFloat() && a.isFloat())
        tensor::convertFloatToFloat(y.dtype, &a.f, &y.f, 1);
      else if (y.isFloat())
        tensor::convertIntToFloat(y.dtype, &a.i, &y.f, 1);
      else if (a.isFloat())
        tensor::convertFloatToInt(y.dtype, tensor::FloatToIntRounding::TowardZero, &a.f, &y.i, 1);
      else
        tensor::convertIntToInt(y.dtype, &a.i, &y.i, 1);
      return y;
    }
    std::optional<tensor::ElementwiseOp> e = ir::elementwiseArithmetic(op.kind());
    if (!e || tensor::isUnary(*e) != (xs.size() == 1) || a.isFloat() != b.isFloat())
      return std::nullopt;
    bool ok;
    if (tensor::isComparison(*e))
      ok = a.isFloat() ? tensor::compareFloat(*e, &a.f, &b.f, &y.i, 1)
                       : tensor::compareInt(*e, &a.i, &b.i, &y.i, 1);
    else if (a.isFloat() != y.isFloat())
      return std::nullopt;
    else if (a.isFloat())
      ok = xs.size() == 1 ? tensor::unaryFloat(*e, y.dtype, &a.f, &y.f, 1)
                          : tensor::binaryFloat(*e, y.dtype, &a.f, &b.f, &y.f, 1);
    else
      ok = xs.size() == 1 ? tensor::unaryInt(*e, y.dtype, &a.i, &y.i, 1)
                          : tensor::binaryInt(*e, y.dtype, &a.i, &b.i, &y.i, 1);
    return ok ? std::optional<Lane>(y) : std::nullopt;
  }

  const LoweringContext &ctx_;
  std::map<const ir::Op *, std::optional<Lane>> memo_;
};

} // namespace

bool finitePaddingLanes(const ir::Op &op, const TensorView &view, const LoweringContext &ctx) {
  // A value stored as declared seen in another order is its channels-last
  // copy (lane moves: zeros past each row).
  if (!view.perm.empty() && !ctx.storedOrder.count(&op))
    return true;
  std::optional<Lane> lane = PaddingLanes(ctx).of(op);
  return lane && (!lane->isFloat() || std::isfinite(lane->f));
}

bool zeroPaddingLanes(const ir::Op &op, const TensorView &view, const LoweringContext &ctx) {
  if (!view.perm.empty() && !ctx.storedOrder.count(&op))
    return true;
  std::optional<Lane> lane = PaddingLanes(ctx).of(op);
  return lane && (lane->isFloat() ? lane->f == 0.0f : lane->i == 0);
}

} // namespace lpu::scheduler
