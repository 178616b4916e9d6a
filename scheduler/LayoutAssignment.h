// Layout assignment: the order in which each value's dimensions are stored
// (docs/scheduler.md, "Channels-last"). Convolutions, pools and the
// elementwise arithmetic around them (batch norm, relu, residual adds) keep
// their activations channels-last, [N, H, W, C] in rows: one row of C
// channels per pixel, so that a pixel row streams through a conv weight
// tile on the MXM, a per-channel vector broadcasts by row (a view) and a
// pool folds whole rows. Conv weights [O, C, KH, KW] are stored
// [KH, KW, C, O] (rows of O outputs per input channel: the MXM weight rows).
// A value is channels-last only when every user understands it; the rest
// keep the declared order, so nothing downstream sees a layout it does not
// know. As XLA's and TVM's layout assignment do, the decision is made once,
// before lowering, for the whole function.
#pragma once

#include "ir/IR.h"
#include "scheduler/Lowering.h"

#include <map>
#include <set>
#include <memory>
#include <vector>

namespace lpu::scheduler {

struct LayoutAssignment {
  /// The stored order of each value not stored as declared (stored
  /// dimension i is logical dimension order[v][i]).
  std::map<const ir::Op *, std::vector<uint8_t>> order;
  /// Values stored as declared that a channels-last op reads (a value too
  /// large for one slice channels-last, upstream of a pool that makes it
  /// small): each gets one channels-last copy, made by lane moves (an
  /// identity reshape of it in `scratch`, stored channels-last).
  std::map<const ir::Op *, const ir::Op *> relayout;
  /// The weight of each convolution left in the declared order, as that
  /// lowering streams it: a reshape to [O, C/groups * KH * KW] in
  /// `scratch` (LoweringContext::convRowWeights).
  std::map<const ir::Op *, const ir::Op *> convRows;
  std::unique_ptr<ir::Function> scratch;
};

/// [N, C, H, W] stored [N, H, W, C].
inline const std::vector<uint8_t> kChannelsLast = {0, 2, 3, 1};
/// A per-channel [C, 1, 1] (an activation's bias or scale) stored
/// [1, 1, C]: one row of C, as [1, C, 1, 1] channels-last.
inline const std::vector<uint8_t> kPerChannelOrder = {1, 2, 0};
/// A 2-D weight read only transposed, stored [D, V].
inline const std::vector<uint8_t> kTransposed = {1, 0};
/// [O, C, KH, KW] stored [KH, KW, C, O].
inline const std::vector<uint8_t> kConvWeightOrder = {2, 3, 1, 0};

/// `declared`: inputs that must keep the declared order (values another
/// chip sends stored so); a channels-last op reads them through a copy.
LayoutAssignment assignLayouts(const ir::Function &fn, const backend::ChipDescription &chip,
                               const TuningKnobs &knobs, const std::set<const ir::Op *> &declared = {});

/// Lowers `op` with `lower`; a channels-last op reading a value of
/// `layouts.relayout` reads its channels-last copy (made on first use).
llvm::Error lowerWithRelayouts(const ir::Op &op, LoweringFn lower, const LayoutAssignment &layouts,
                               LoweringContext &ctx);

/// The lowering of `op` when an operand or its result is not stored as
/// declared (ctx.storedOrder and the operands' views say which), or null:
/// loweringFor's then.
LoweringFn storedOrderLowering(const ir::Op &op, const LoweringContext &ctx);

/// Whether `op`'s result is a view of its operand's storage under `layouts`
/// (the driver keeps the operand alive while the view is used).
bool aliasesOperand(const ir::Op &op, const LayoutAssignment &layouts, unsigned lanes);

/// A convolution the channels-last layout would stream many times more
/// `mm` than the packed rows layout (lower/Conv.cpp): few input channels,
/// a wide kernel, a wide image (ResNet-50's stem, 3 channels of 7x7:
/// each channels-last `mm` fills 3 of 320 weight rows). It keeps the
/// declared order even though its users then read it through a
/// transpose. By how much it must win: `advantage`
/// (TuningKnobs::rowsLayoutAdvantage).
bool rowsFarCheaperThanChannelsLast(const ir::Op &op, const backend::ChipDescription &chip,
                                    int64_t advantage);

// Lowerings of the channels-last forms (lower/Conv.cpp, lower/Pool.cpp).
llvm::Error lowerConvChannelsLast(const ir::Op &op, LoweringContext &ctx);
/// The kernel offsets lowerConvChannelsLast packs into one K-tile of `op`:
/// with C input channels at most half of mxm_dim, floor(mxm_dim / C) of
/// them (at most `most`, TuningKnobs::packedOffsets, and the kernel's),
/// each offset's channels in lanes of their own; else 1 (a K-tile per
/// offset and tile of 320 input channels).
int64_t convOffsetsPerTile(const ir::Op &op, const backend::ChipDescription &chip, int64_t most);
/// Whether lowerConvChannelsLast cuts `op`'s K-tiles (kernel offsets and
/// tiles of input channels) over the MXM planes, each loading its own
/// weights, rather than giving each plane a band of output pixels and all
/// the weights: when a band's `mm` per install (one per pixel) would not
/// hide the next install's weight rows (of the offsets packed into a
/// K-tile: `mostOffsets` as for convOffsetsPerTile).
bool channelsLastConvCutsK(const ir::Op &op, const backend::ChipDescription &chip, int64_t mostOffsets);
llvm::Error lowerPoolChannelsLast(const ir::Op &op, LoweringContext &ctx);
/// A mean or sum over H and W of a channels-last [N, C, H, W]: a fold of
/// the pixel rows of each image, giving [N, C] as declared.
llvm::Error lowerGlobalPool(const ir::Op &op, LoweringContext &ctx);
/// Its divisor, a constant: made before the run's first op is lowered
/// (the driver calls it with the other constants), since a constant needs
/// SRAM no block written during the run has used, which is scarce by the
/// end of a large model.
llvm::Expected<TensorView> globalPoolDivisor(const ir::Op &op, LoweringContext &ctx);
/// Whether `op` is a global pooling the layouts make (a mean or sum over H
/// and W of a channels-last value).
bool isGlobalPool(const ir::Op &op, const LayoutAssignment &layouts);

} // namespace lpu::scheduler
