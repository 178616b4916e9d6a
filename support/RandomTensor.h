// Deterministic random tensors for runs without a weights file
// (`lpurun --random-weights SEED`): the same seed, name, dtype and shape give
// the same bits on every host and compiler.
#pragma once

#include "support/Tensor.h"

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <map>
#include <string>

namespace lpu::tensor {

/// Values are drawn from xoshiro256** seeded through splitmix64 with
/// `seed` and xxHash64(name), so each parameter gets its own stream and
/// adding a parameter does not change the others. Distributions:
///  - floats: uniform in [-b, b] (after rounding to the dtype), with
///    b = 1/sqrt(fan_in), fan_in being the product of all dimensions but the
///    last (rank >= 2), the only dimension (rank 1), or 1 (rank 0). This is
///    the scale PyTorch's nn.Linear uses, so activations neither vanish nor
///    explode;
///  - i8, i16, i32: uniform integers in [-8, 8];
///  - bool: true or false with equal probability.
/// The shape must be valid (see checkedElementCount; asserted).
Tensor randomTensor(uint64_t seed, llvm::StringRef name, DType dtype,
                    llvm::ArrayRef<int64_t> shape);

/// randomTensor for every spec, keyed by name.
std::map<std::string, Tensor> randomTensors(uint64_t seed, llvm::ArrayRef<TensorSpec> specs);

/// The generator itself, exposed for tests and for other deterministic uses.
class Xoshiro256 {
public:
  explicit Xoshiro256(uint64_t seed);
  uint64_t next();
  /// Uniform in [0, 1) with 53 random bits.
  double nextUnit();

private:
  uint64_t state_[4];
};

} // namespace lpu::tensor
