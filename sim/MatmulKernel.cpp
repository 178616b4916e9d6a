#include "sim/MatmulKernel.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace lpu::sim {

namespace {
constexpr unsigned kRowBlock = 4;  // activation rows held in registers
constexpr unsigned kColBlock = 64; // output columns held in registers
// Weight rows per pass: 80 rows x 64 columns of fp32 (20 KiB) stay in L1
// while every batch row streams past them. Passes run in ascending k, so
// the order of additions is unchanged.
constexpr unsigned kDepthBlock = 80;

// One register tile: kRowBlock rows x kColBlock columns, k ascending. The
// accumulators start from the accumulator rows, so the order of additions is
// exactly the sequential one. Compiled once per instruction set (below);
// every version gives the same bits.
inline __attribute__((always_inline)) void
tile(const float *const *a, unsigned nRows, const float *w, unsigned dim, unsigned k0,
     unsigned k1, unsigned j0, unsigned nCols, float *const *c) {
  if (nRows == kRowBlock && nCols == kColBlock) {
    float acc[kRowBlock][kColBlock];
    for (unsigned r = 0; r < kRowBlock; ++r)
      for (unsigned j = 0; j < kColBlock; ++j)
        acc[r][j] = c[r][j0 + j];
    for (unsigned k = k0; k < k1; ++k) {
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
      for (unsigned k = k0; k < k1; ++k)
        s += a[r][k] * w[size_t(k) * dim + j0 + j];
      c[r][j0 + j] = s;
    }
}

inline __attribute__((always_inline)) void
accumulateBody(const float *act, const uint32_t *rows, size_t begin, size_t end, const float *w,
               unsigned dim, float *acc) {
  for (unsigned k0 = 0; k0 < dim; k0 += kDepthBlock) {
    unsigned k1 = std::min(dim, k0 + kDepthBlock);
    for (unsigned j0 = 0; j0 < dim; j0 += kColBlock) {
      unsigned nCols = std::min(kColBlock, dim - j0);
      for (size_t b = begin; b < end; b += kRowBlock) {
        unsigned n = unsigned(std::min<size_t>(kRowBlock, end - b));
        const float *a[kRowBlock];
        float *c[kRowBlock];
        for (unsigned r = 0; r < n; ++r) {
          a[r] = act + (b + r) * dim;
          c[r] = acc + size_t(rows[b + r]) * dim;
        }
        tile(a, n, w, dim, k0, k1, j0, nCols, c);
      }
    }
  }
}
using RangeFn = void (*)(const float *, const uint32_t *, size_t, size_t, const float *,
                        unsigned, float *);

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma"))) void
rangeAvx512(const float *act, const uint32_t *rows, size_t begin, size_t end, const float *w,
            unsigned dim, float *acc) {
  accumulateBody(act, rows, begin, end, w, dim, acc);
}
__attribute__((target("avx2,fma"))) void rangeAvx2(const float *act, const uint32_t *rows,
                                                   size_t begin, size_t end, const float *w,
                                                   unsigned dim, float *acc) {
  accumulateBody(act, rows, begin, end, w, dim, acc);
}
#endif
void rangeGeneric(const float *act, const uint32_t *rows, size_t begin, size_t end,
                  const float *w, unsigned dim, float *acc) {
  accumulateBody(act, rows, begin, end, w, dim, acc);
}

// Chosen once from the host's instruction set.
RangeFn pickRange() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw"))
    return rangeAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return rangeAvx2;
#endif
  return rangeGeneric;
}

void accumulateRange(const float *act, const uint32_t *rows, size_t begin, size_t end,
                     const float *w, unsigned dim, float *acc) {
  static const RangeFn fn = pickRange();
  fn(act, rows, begin, end, w, dim, acc);
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
