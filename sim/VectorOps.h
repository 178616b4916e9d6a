// The arithmetic of the VXM and the data movement of the SXM on byte-plane
// vectors: an operand of dtype T is streamWidth(T) planes of `lanes` bytes,
// plane b holding byte b (little-endian) of every lane's element.
//
// Arithmetic rules (docs/isa.md): floats are computed in fp32 and rounded to
// the result dtype (round to nearest even); integers wrap (two's complement);
// compares give a bool plane (0 or 1); float -> integer conversion rounds to
// nearest even and saturates, NaN becomes 0.
#pragma once

#include "backend/Isa.h"

#include <cstdint>

namespace lpu::sim {

using Planes = const uint8_t *const *;
using OutPlanes = uint8_t *const *;

void vxmUnary(backend::Opcode op, backend::DType type, Planes in, OutPlanes out, unsigned lanes);
void vxmBinary(backend::Opcode op, backend::DType type, Planes a, Planes b, OutPlanes out,
               unsigned lanes);
void vxmConvert(backend::DType from, backend::DType to, Planes in, OutPlanes out, unsigned lanes);

/// shift (toward higher lanes, zero fill), rotate, permute and distribute
/// (out[i] = in[map[i]], 0 when map[i] >= lanes; map is a u16 per lane in
/// two planes) applied to each of `width` planes.
void sxmMove(backend::Opcode op, unsigned count, Planes in, Planes map, OutPlanes out,
             unsigned width, unsigned lanes);

/// 16 planes in, 16 out: within each group of 16 lanes, out[s][g*16+l] =
/// in[l][g*16+s].
void sxmTranspose(Planes in, OutPlanes out, unsigned lanes);

/// Element i of a group as float (float dtypes) or as an exact integer.
float elementAsFloat(backend::DType type, Planes in, unsigned lane);
int64_t elementAsInt(backend::DType type, Planes in, unsigned lane);

} // namespace lpu::sim
