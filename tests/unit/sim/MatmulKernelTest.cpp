#include "sim/MatmulKernel.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

using namespace lpu::sim;

namespace {
// fp16-representable values: products are exact in fp32, as on the MXM.
float halfish(std::mt19937 &rng) {
  return float(int(rng() % 2049) - 1024) / 256.0f;
}
} // namespace

// The sequential definition: acc + x0*w0j + x1*w1j + ... in ascending k. The
// blocked kernel must give exactly these bits, whatever the batch size, the
// row order and the number of threads.
TEST(MatmulKernel, BitsMatchTheSequentialOrder) {
  const unsigned dim = 320;
  std::mt19937 rng(42);
  for (size_t batch : {1u, 3u, 4u, 5u, 70u, 257u}) {
    std::vector<float> act(batch * dim), w(dim * dim);
    for (float &v : act)
      v = halfish(rng);
    for (float &v : w)
      v = halfish(rng);
    std::vector<uint32_t> rows(batch);
    for (size_t b = 0; b < batch; ++b)
      rows[b] = uint32_t((b * 7 + 3) % 300 + (b / 300) * 300); // scattered, distinct
    std::vector<float> init(400 * dim);
    for (float &v : init)
      v = halfish(rng);
    std::vector<float> expect = init;
    for (size_t b = 0; b < batch; ++b)
      for (unsigned j = 0; j < dim; ++j) {
        volatile float s = expect[rows[b] * dim + j];
        for (unsigned k = 0; k < dim; ++k) {
          volatile float prod = act[b * dim + k] * w[k * dim + j];
          s = s + prod;
        }
        expect[rows[b] * dim + j] = s;
      }
    for (unsigned threads : {1u, 2u, 4u}) {
      std::vector<float> got = init;
      accumulateMatmul(act.data(), rows.data(), batch, w.data(), dim, got.data(), threads);
      EXPECT_EQ(std::memcmp(got.data(), expect.data(), got.size() * sizeof(float)), 0)
          << "batch " << batch << " threads " << threads;
    }
  }
}
