// Fast, exact conversions between byte-plane stream data and floats. Values
// travel in streams as byte planes (byte b of element i in lane i of stream
// b); the MXM and VXM compute on floats.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lpu::sim {

/// out[i] = float(half(lo[i] | hi[i] << 8)) for i < n. Exact.
void halfPlanesToFloat(const uint8_t *lo, const uint8_t *hi, float *out, size_t n);

/// The exact float value of a binary16 bit pattern.
float halfToFloat(uint16_t bits);

} // namespace lpu::sim
