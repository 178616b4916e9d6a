// The MXM's arithmetic as a blocked, vectorisable kernel: a batch of
// activation vectors times one installed weight plane, accumulated into
// accumulator rows. Each output element is acc + x[0]*w[0][j] + x[1]*w[1][j]
// + ... in ascending k, each step rounded to fp32, so the bits do not depend
// on the batch size, the blocking, the thread count or the host (products of
// two fp16 or two int8 values are exact in fp32, so whether the compiler
// fuses multiply and add does not change them either).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lpu::sim {

/// For b < batch: acc[rows[b] * dim + j] += sum_k act[b * dim + k] * w[k * dim + j].
/// `threads` > 1 splits the batch between that many host threads.
void accumulateMatmul(const float *act, const uint32_t *rows, size_t batch, const float *w,
                      unsigned dim, float *acc, unsigned threads);

} // namespace lpu::sim
