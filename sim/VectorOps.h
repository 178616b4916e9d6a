// The arithmetic of the VXM and the data movement of the SXM on byte-plane
// vectors: an operand of dtype T is streamWidth(T) planes of `lanes` bytes,
// plane b holding byte b (little-endian) of every lane's element.
//
// Arithmetic (docs/isa.md): exactly the IR's (docs/ir.md), computed by
// support/Arithmetic.h, the functions the reference interpreter uses:
// floats in fp32 rounded once to the result dtype, integers wrapping,
// compares giving a bool plane (0 or 1). cvt rounds float -> integer to
// nearest even, cvt.trunc toward zero (the IR's convert); both saturate and
// give 0 for NaN.
#pragma once

#include "backend/Isa.h"
#include "support/Arithmetic.h"

#include <cstdint>
#include <optional>

namespace lpu::sim {

using Planes = const uint8_t *const *;
using OutPlanes = uint8_t *const *;

void vxmUnary(backend::Opcode op, backend::DType type, Planes in, OutPlanes out, unsigned lanes);
void vxmBinary(backend::Opcode op, backend::DType type, Planes a, Planes b, OutPlanes out,
               unsigned lanes);
/// cond ? a : b per lane (cond: one bool plane), the bits of a or b.
void vxmSelect(backend::DType type, Planes cond, Planes a, Planes b, OutPlanes out,
               unsigned lanes);
/// cvt (truncate = false) and cvt.trunc.
void vxmConvert(backend::DType from, backend::DType to, bool truncate, Planes in, OutPlanes out,
                unsigned lanes);

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
