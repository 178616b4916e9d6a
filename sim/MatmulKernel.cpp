#include "sim/MatmulKernel.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace lpu::sim {

namespace {
constexpr unsigned kRowBlock = 4;  // activation rows held in registers
constexpr unsigned kColBlock = 64; // output columns held in registers

// One register tile: kRowBlock rows x kColBlock columns, k ascending. The
// accumulators start from the accumulator rows, so the order of additions is
// exactly the sequential one. Compiled once per instruction set; the clone
// is chosen at load time, and every clone gives the same bits.
__attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default"))) void
tile(const float *const *a, unsigned nRows, const float *w, unsigned dim, unsigned j0,
     unsigned nCols, float *const *c) {
  if (nRows == kRowBlock && nCols == kColBlock) {
    float acc[kRowBlock][kColBlock];
    for (unsigned r = 0; r < kRowBlock; ++r)
      for (unsigned j = 0; j < kColBlock; ++j)
        acc[r][j] = c[r][j0 + j];
    for (unsigned k = 0; k < dim; ++k) {
      const float *wk = w + size_t(k) * dim + j0;
      for (unsigned r = 0; r < kRowBlock; ++r) {
        float x = a[r][k];
        for (unsigned j = 0; j < kColBlock; ++j)
          acc[r][j] += x * wk[j];
      }
    }
    for (unsigned r = 0; r < kRowBlock; ++r)
      for (unsigned j = 0; j < kColBlock; ++j)
        c[r][j0 + j] = acc[r][j];
    return;
  }
  // Edges: the same order of additions, without register blocking.
  for (unsigned r = 0; r < nRows; ++r)
    for (unsigned j = 0; j < nCols; ++j) {
      float s = c[r][j0 + j];
      for (unsigned k = 0; k < dim; ++k)
        s += a[r][k] * w[size_t(k) * dim + j0 + j];
      c[r][j0 + j] = s;
    }
}

void accumulateRange(const float *act, const uint32_t *rows, size_t begin, size_t end,
                     const float *w, unsigned dim, float *acc) {
  for (size_t b = begin; b < end; b += kRowBlock) {
    unsigned n = unsigned(std::min<size_t>(kRowBlock, end - b));
    const float *a[kRowBlock];
    float *c[kRowBlock];
    for (unsigned r = 0; r < n; ++r) {
      a[r] = act + (b + r) * dim;
      c[r] = acc + size_t(rows[b + r]) * dim;
    }
    for (unsigned j0 = 0; j0 < dim; j0 += kColBlock)
      tile(a, n, w, dim, j0, std::min(kColBlock, dim - j0), c);
  }
}
} // namespace

void accumulateMatmul(const float *act, const uint32_t *rows, size_t batch, const float *w,
                      unsigned dim, float *acc, unsigned threads) {
  // Splitting only pays when each thread gets a good share of the work.
  size_t useful = batch / 64;
  threads = unsigned(std::max<size_t>(1, std::min<size_t>(threads, useful)));
  if (threads == 1) {
    accumulateRange(act, rows, 0, batch, w, dim, acc);
    return;
  }
  // The callers guarantee distinct rows within a batch, so the threads
  // write disjoint accumulator rows.
  std::vector<std::thread> pool;
  size_t per = (batch + threads - 1) / threads;
  per = (per + kRowBlock - 1) / kRowBlock * kRowBlock;
  for (unsigned t = 1; t < threads; ++t) {
    size_t begin = std::min(batch, t * per), end = std::min(batch, begin + per);
    if (begin < end)
      pool.emplace_back(accumulateRange, act, rows, begin, end, w, dim, acc);
  }
  accumulateRange(act, rows, 0, std::min(batch, per), w, dim, acc);
  for (std::thread &t : pool)
    t.join();
}

} // namespace lpu::sim
