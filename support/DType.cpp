#include "support/DType.h"

#include <bit>
#include <cassert>

namespace lpu::tensor {

llvm::StringRef dtypeName(DType type) {
  switch (type) {
  case DType::Bool:
    return "bool";
  case DType::I8:
    return "i8";
  case DType::I16:
    return "i16";
  case DType::I32:
    return "i32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  }
  return "?";
}

std::optional<DType> parseDTypeName(llvm::StringRef name) {
  for (DType type : kAllDTypes)
    if (dtypeName(type) == name)
      return type;
  return std::nullopt;
}

llvm::StringRef allDTypeNames() { return "bool i8 i16 i32 f16 bf16 f32"; }

unsigned dtypeSize(DType type) {
  switch (type) {
  case DType::Bool:
  case DType::I8:
    return 1;
  case DType::I16:
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I32:
  case DType::F32:
    return 4;
  }
  return 1;
}

bool isFloat(DType type) { return type == DType::F16 || type == DType::BF16 || type == DType::F32; }

bool isInteger(DType type) { return type == DType::I8 || type == DType::I16 || type == DType::I32; }

std::pair<int64_t, int64_t> integerRange(DType type) {
  switch (type) {
  case DType::Bool:
    return {0, 1};
  case DType::I8:
    return {INT8_MIN, INT8_MAX};
  case DType::I16:
    return {INT16_MIN, INT16_MAX};
  default:
    assert(type == DType::I32 && "integerRange of a float dtype");
    return {INT32_MIN, INT32_MAX};
  }
}

uint16_t floatToHalfBits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {
    if (abs == 0x7f800000u)
      return static_cast<uint16_t>(sign | 0x7c00u);
    // Keep the top of the payload and set the quiet bit so the result can
    // never collapse into infinity.
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  // 65520 is the midpoint between the largest half (65504) and 2^16; with
  // ties to even it rounds up, so everything from there on is infinity.
  if (abs >= 0x477ff000u)
    return static_cast<uint16_t>(sign | 0x7c00u);
  const uint32_t exponent = abs >> 23;
  if (exponent < 113) {
    // Below 2^-14 the result is subnormal: count units of 2^-24. Anything
    // below 2^-25 rounds to zero (2^-25 itself is a tie that goes to even 0).
    if (exponent < 102)
      return static_cast<uint16_t>(sign);
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent; // 14..24
    uint32_t result = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (result & 1)))
      ++result; // may carry into the smallest normal, which encodes correctly
    return static_cast<uint16_t>(sign | result);
  }
  // Normal: rebias the exponent (127 -> 15) and drop 13 mantissa bits. A
  // carry out of the mantissa correctly bumps the exponent.
  uint32_t result = (abs - (112u << 23)) >> 13;
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1)))
    ++result;
  return static_cast<uint16_t>(sign | result);
}

float halfBitsToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f)
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t floatToBF16Bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u); // quiet NaN
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even;
  // the largest finite values correctly carry into infinity.
  const uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

float bf16BitsToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

float roundToFloatType(DType type, float value) {
  switch (type) {
  case DType::F16:
    return halfBitsToFloat(floatToHalfBits(value));
  case DType::BF16:
    return bf16BitsToFloat(floatToBF16Bits(value));
  default:
    return value;
  }
}

} // namespace lpu::tensor
