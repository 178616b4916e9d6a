#include "sim/HalfConvert.h"

#include "support/DType.h"

#include <array>
#include <memory>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace lpu::sim {

namespace {
// Every half value, converted once: a lookup is exact on any host.
const float *halfTable() {
  static const std::unique_ptr<float[]> table = [] {
    std::unique_ptr<float[]> t(new float[65536]);
    for (unsigned i = 0; i < 65536; ++i)
      t[i] = tensor::halfBitsToFloat(uint16_t(i));
    return t;
  }();
  return table.get();
}

#if defined(__x86_64__)
// F16C gives the same (exact) results as the table, only faster.
__attribute__((target("avx2,f16c"))) void planesF16C(const uint8_t *lo, const uint8_t *hi,
                                                     float *out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i l = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(lo + i));
    __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(hi + i));
    __m128i bits = _mm_unpacklo_epi8(l, h);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(bits));
  }
  const float *t = halfTable();
  for (; i < n; ++i)
    out[i] = t[lo[i] | (hi[i] << 8)];
}
#endif
} // namespace

float halfToFloat(uint16_t bits) { return halfTable()[bits]; }

void halfPlanesToFloat(const uint8_t *lo, const uint8_t *hi, float *out, size_t n) {
#if defined(__x86_64__)
  static const bool hasF16C = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
  if (hasF16C) {
    planesF16C(lo, hi, out, n);
    return;
  }
#endif
  const float *t = halfTable();
  for (size_t i = 0; i < n; ++i)
    out[i] = t[lo[i] | (hi[i] << 8)];
}

} // namespace lpu::sim
