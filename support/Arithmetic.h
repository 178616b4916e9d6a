// The elementwise arithmetic of the IR (docs/ir.md, "Arithmetic" and the
// elementwise ops), defined once: the reference interpreter and the VXM of
// the simulator both call these functions, so they agree bit for bit.
//
// Floats: elements are fp32 values (f16 and bf16 widened exactly), every op
// computes in fp32 and the result is rounded once to the result dtype
// (nearest, ties to even). Integers and bool: elements are int32 values in
// their dtype's range; ops compute in int64 and wrap to the dtype. Every
// function works on whole arrays, one loop per op, so the hot loops inline
// the arithmetic (no per-element dispatch).
#pragma once

#include "support/DType.h"
#include "support/Elementwise.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace lpu::tensor {

/// Float ops: y[i] = op(x[i]) (or op(a[i], b[i])) computed in fp32, then
/// rounded to `result` (f16, bf16 or f32). False when `op` is not a float op
/// (comparisons included: see compareFloat). y may alias an input.
bool unaryFloat(ElementwiseOp op, DType result, const float *x, float *y, size_t n);
bool binaryFloat(ElementwiseOp op, DType result, const float *a, const float *b, float *y,
                 size_t n);
/// Integer and bool ops on int32 elements, wrapped to `type` (bool: not,
/// and, or are logical). False when `op` is not defined on `type`.
bool unaryInt(ElementwiseOp op, DType type, const int32_t *x, int32_t *y, size_t n);
bool binaryInt(ElementwiseOp op, DType type, const int32_t *a, const int32_t *b, int32_t *y,
               size_t n);
/// Comparisons: y[i] = 1 or 0 (IEEE for floats: NaN compares unequal).
bool compareFloat(ElementwiseOp op, const float *a, const float *b, int32_t *y, size_t n);
bool compareInt(ElementwiseOp op, const int32_t *a, const int32_t *b, int32_t *y, size_t n);
/// A unary op of a built-in on a compile-time number, in double precision
/// (the checker folds `sqrt(16.0)` to 4); nullopt when `op` has no such
/// fold (not, neg: operators, folded by the checker itself).
std::optional<double> foldUnary(ElementwiseOp op, double x);

/// select(cond, a, b): y[i] = cond[i] ? a[i] : b[i].
template <typename T>
void selectValues(const int32_t *cond, const T *a, const T *b, T *y, size_t n) {
  for (size_t i = 0; i < n; ++i)
    y[i] = cond[i] ? a[i] : b[i];
}

/// How a float becomes an integer: the IR's convert truncates toward zero;
/// the VXM's plain `cvt` rounds to nearest even. Both saturate at the
/// integer's range and give 0 for NaN; to bool is x != 0 (NaN gives true).
enum class FloatToIntRounding : uint8_t { TowardZero, NearestEven };

int32_t floatToInt(DType to, float x, FloatToIntRounding rounding);
/// Two's-complement wrap of `v` into `type` (i8, i16, i32); bool: v != 0.
int32_t wrapInt(DType type, int64_t v);
/// Rounds every element to the nearest value of `type` (ties to even): a
/// no-op for f32; f16 uses the F16C instructions when the CPU has them
/// (bit-identical to floatToHalfBits, which is the fallback).
void roundTo(DType type, float *data, size_t n);

/// convert (docs/ir.md): float -> float rounds; int or bool -> float goes
/// through fp32 (exact for every i8/i16 and |x| < 2^24) then rounds; float
/// -> int as `rounding` says; int -> int keeps the low bits; -> bool x != 0.
void convertFloatToFloat(DType to, const float *x, float *y, size_t n);
void convertIntToFloat(DType to, const int32_t *x, float *y, size_t n);
void convertFloatToInt(DType to, FloatToIntRounding rounding, const float *x, int32_t *y,
                       size_t n);
void convertIntToInt(DType to, const int32_t *x, int32_t *y, size_t n);

} // namespace lpu::tensor
