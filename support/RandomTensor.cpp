#include "support/RandomTensor.h"

#include <llvm/Support/xxhash.h>

#include <algorithm>
#include <cassert>
#include <cmath>

namespace lpu::tensor {

namespace {
uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
} // namespace

Xoshiro256::Xoshiro256(uint64_t seed) {
  // splitmix64 spreads any seed (even 0) into a non-zero state.
  uint64_t mix = seed;
  for (uint64_t &word : state_)
    word = splitmix64(mix);
}

uint64_t Xoshiro256::next() {
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Xoshiro256::nextUnit() { return static_cast<double>(next() >> 11) * 0x1p-53; }

Tensor randomTensor(uint64_t seed, llvm::StringRef name, DType dtype,
                    llvm::ArrayRef<int64_t> shape) {
  Tensor tensor(dtype, shape.vec());
  // Mixing the name's hash through one splitmix64 step keeps seeds that
  // differ in one bit from giving related streams.
  uint64_t mix = seed ^ llvm::xxHash64(name);
  Xoshiro256 rng(splitmix64(mix));
  int64_t fanIn = 1;
  if (shape.size() == 1)
    fanIn = shape[0];
  else if (shape.size() >= 2 && shape.back() != 0)
    fanIn = tensor.numElements() / shape.back();
  // Only IEEE operations (sqrt, division, multiplication) are used, all
  // correctly rounded, so the values are the same on every host.
  const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fanIn, 1)));
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    if (isFloat(dtype)) {
      tensor.setFloat(i, static_cast<float>((2.0 * rng.nextUnit() - 1.0) * bound));
    } else if (dtype == DType::Bool) {
      tensor.setInt(i, static_cast<int64_t>(rng.next() >> 63));
    } else {
      // 17 values; the modulo bias (17 / 2^64) is far below anything visible.
      tensor.setInt(i, static_cast<int64_t>(rng.next() % 17) - 8);
    }
  }
  return tensor;
}

std::map<std::string, Tensor> randomTensors(uint64_t seed, llvm::ArrayRef<TensorSpec> specs) {
  std::map<std::string, Tensor> tensors;
  for (const TensorSpec &spec : specs)
    tensors.emplace(spec.name, randomTensor(seed, spec.name, spec.dtype, spec.shape));
  return tensors;
}

} // namespace lpu::tensor
