// The element types of the language (bool i8 i16 i32 f16 bf16 f32) and the
// bit-exact conversions between the 16-bit float formats and float32.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <utility>

namespace lpu::tensor {

enum class DType : uint8_t { Bool, I8, I16, I32, F16, BF16, F32 };

/// Every dtype, in declaration order; handy for tests and error messages.
inline constexpr DType kAllDTypes[] = {DType::Bool, DType::I8,   DType::I16, DType::I32,
                                       DType::F16,  DType::BF16, DType::F32};

/// The language's spelling: "bool", "i8", ..., "f32".
llvm::StringRef dtypeName(DType type);
/// Inverse of dtypeName; nullopt for anything else.
std::optional<DType> parseDTypeName(llvm::StringRef name);
/// "bool i8 i16 i32 f16 bf16 f32", for "expected one of" messages.
llvm::StringRef allDTypeNames();

/// Bytes per element. Bool is stored as one byte holding 0 or 1, as numpy does.
unsigned dtypeSize(DType type);
bool isFloat(DType type);
bool isInteger(DType type); // i8 i16 i32 (not bool)
/// The range [lo, hi] of an integer dtype (i8: [-128, 127]); bool's is
/// [0, 1]. Only for isInteger types and bool.
std::pair<int64_t, int64_t> integerRange(DType type);

/// IEEE binary16 <-> binary32. float -> half rounds to nearest, ties to even;
/// values at or beyond 65520 become infinity; NaN stays NaN (made quiet, as
/// the x86 F16C instructions do). half -> float is exact.
uint16_t floatToHalfBits(float value);
float halfBitsToFloat(uint16_t bits);

/// bfloat16 (the upper half of a binary32) <-> binary32, with the same
/// rounding and NaN rules as for half.
uint16_t floatToBF16Bits(float value);
float bf16BitsToFloat(uint16_t bits);

/// Rounds `value` to the nearest value representable in `type` and returns it
/// as a float: the identity for f32, a round trip through 16 bits for f16 and
/// bf16. Integer and bool types are not handled here.
float roundToFloatType(DType type, float value);

} // namespace lpu::tensor
