// Calibration: the activation scales of a quantized model, observed on
// sample inputs in the reference interpreter (`lpurun --reference
// --calibrate`, docs/quantization.md).
//
// A `quantize(x, scale, zero_point)` whose scale is a parameter (and whose
// zero point is a parameter, a number or absent) is lowered with its
// division tagged `observe` (frontend/LowerOps.cpp). Calibration runs the
// model sample by sample as far as the known parameters allow, observes the
// dividend of every tagged division whose scale is still unknown once it
// can be computed, fixes those scales, and goes on: each scale is chosen
// from the values the model computes with the scales before it already in
// place, the rounding of every earlier quantize included. Values computed
// in one round are kept for the next, so each op runs once per sample.
#pragma once

#include "interp/Interpreter.h"

#include "ir/IR.h"
#include "support/Tensor.h"

#include <llvm/Support/Error.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lpu::interp {

/// How a range is taken from the observed values (non-finite ones are left
/// out): their minimum and maximum, or the `percentile`-th and (100 -
/// `percentile`)-th percentiles (NumPy's default, linear interpolation,
/// in double), which lets a few outliers saturate.
struct Observer {
  enum class Kind { MinMax, Percentile };
  Kind kind = Kind::MinMax;
  double percentile = 99.99;
};

/// The scale (and zero point) for the range [lo, hi], widened to hold 0:
/// - a zero point that is a parameter (affine): scale = (hi - lo) / 255,
///   zero = clamp(-128 - round_half_even(lo / scale), -128, 127);
/// - a fixed zero point z (0 when absent): the smallest scale that keeps
///   both ends inside [-128, 127] around z, max(hi / (127 - z), lo / (-128
///   - z)) over the sides that have room.
/// The scale is rounded to f32 (and the zero point computed with that f32);
/// a range of zero width gives scale 1.
struct QuantParams {
  float scale = 1;
  int32_t zero = 0;
};
QuantParams chooseQuantParams(double lo, double hi, bool affine, int64_t fixedZero);

/// One calibrated parameter pair.
struct CalibratedScale {
  std::string scale;      // the scale parameter's path
  std::string zero;       // the zero point parameter's path, or empty
  int64_t fixedZero = 0;  // the zero point when it is not a parameter
  std::optional<int64_t> axis; // per channel along this axis of x
  size_t quantizeOps = 0; // how many quantize ops read it
  std::vector<double> lo, hi; // the observed range, per channel (or one)
  tensor::Tensor scaleValue, zeroValue; // zeroValue: only with `zero`
};

struct Calibration {
  std::vector<CalibratedScale> scales; // in the order they were fixed
  const Function *function = nullptr;   // the bucket calibrated
  std::string bucketText;
  size_t samples = 0;
  size_t rounds = 0;
  /// The parameters computed, by path (what --dump-scales writes).
  std::vector<NamedTensor> tensors() const;
};

/// The paths calibration computes for `fn` (scales and zero points).
std::vector<std::string> calibratedParams(const Function &fn);

/// Calibrates `fn` over `samples` (each holding every input of `fn`, with
/// its type); `weights` holds every other parameter (more are ignored).
llvm::Expected<Calibration>
calibrate(const Function &fn, llvm::ArrayRef<std::map<std::string, tensor::Tensor>> samples,
          const std::map<std::string, tensor::Tensor> &weights, const Observer &observer,
          InterpreterOptions options = {});

/// calibrate() for an entry: every sample must select the same bucket (its
/// inputs are zero-padded to it, as lpurun runs them); the weights come
/// from `source` and must hold every parameter but the calibrated ones,
/// which a file may hold too (they are then ignored).
llvm::Expected<Calibration>
calibrateEntry(const Module &module, llvm::StringRef entry,
               llvm::ArrayRef<std::map<std::string, tensor::Tensor>> samples,
               const WeightSource &source, const Observer &observer,
               InterpreterOptions options = {});

} // namespace lpu::interp
