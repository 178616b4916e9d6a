#include "sim/VectorOps.h"

#include "backend/tensor/DType.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace lpu::sim {

using backend::DType;
using backend::Opcode;

namespace {


uint64_t rawElement(DType type, Planes in, unsigned lane) {
  unsigned w = tensor::dtypeSize(type);
  uint64_t v = 0;
  for (unsigned b = 0; b < w; ++b)
    v |= uint64_t(in[b][lane]) << (8 * b);
  return v;
}

void storeRaw(DType type, OutPlanes out, unsigned lane, uint64_t v) {
  unsigned w = tensor::dtypeSize(type);
  for (unsigned b = 0; b < w; ++b)
    out[b][lane] = uint8_t(v >> (8 * b));
}

void storeFloat(DType type, OutPlanes out, unsigned lane, float f) {
  switch (type) {
  case DType::F16: storeRaw(type, out, lane, tensor::floatToHalfBits(f)); break;
  case DType::BF16: storeRaw(type, out, lane, tensor::floatToBF16Bits(f)); break;
  default: {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    storeRaw(DType::F32, out, lane, bits);
  }
  }
}

void storeInt(DType type, OutPlanes out, unsigned lane, int64_t v) {
  if (type == DType::Bool)
    v = v != 0;
  storeRaw(type, out, lane, uint64_t(v)); // truncation wraps
}

int64_t saturatingFromFloat(DType to, float f) {
  if (std::isnan(f))
    return 0;
  double r = std::nearbyint(double(f)); // default rounding: nearest even
  double lo, hi;
  switch (to) {
  case DType::Bool: return f != 0;
  case DType::I8: lo = -128, hi = 127; break;
  case DType::I16: lo = -32768, hi = 32767; break;
  default: lo = -2147483648.0, hi = 2147483647.0; break;
  }
  return int64_t(std::min(hi, std::max(lo, r)));
}
} // namespace

float elementAsFloat(DType type, Planes in, unsigned lane) {
  uint64_t raw = rawElement(type, in, lane);
  switch (type) {
  case DType::F16: return tensor::halfBitsToFloat(uint16_t(raw));
  case DType::BF16: return tensor::bf16BitsToFloat(uint16_t(raw));
  case DType::F32: {
    uint32_t bits = uint32_t(raw);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  default: return float(elementAsInt(type, in, lane));
  }
}

int64_t elementAsInt(DType type, Planes in, unsigned lane) {
  uint64_t raw = rawElement(type, in, lane);
  switch (type) {
  case DType::Bool: return raw != 0;
  case DType::I8: return int8_t(raw);
  case DType::I16: return int16_t(raw);
  case DType::I32: return int32_t(raw);
  default: return saturatingFromFloat(DType::I32, elementAsFloat(type, in, lane));
  }
}

void vxmUnary(Opcode op, DType type, Planes in, OutPlanes out, unsigned lanes) {
  for (unsigned i = 0; i < lanes; ++i) {
    if (tensor::isFloat(type)) {
      float x = elementAsFloat(type, in, i), r = x;
      switch (op) {
      case Opcode::Neg: r = -x; break;
      case Opcode::Abs: r = std::fabs(x); break;
      case Opcode::Relu: r = x > 0 ? x : 0.0f; break;
      case Opcode::Tanh: r = std::tanh(x); break;
      case Opcode::Exp: r = std::exp(x); break;
      case Opcode::Rsqrt: r = 1.0f / std::sqrt(x); break;
      default: break;
      }
      storeFloat(type, out, i, r);
    } else {
      int64_t x = elementAsInt(type, in, i), r = x;
      switch (op) {
      case Opcode::Neg: r = -x; break;
      case Opcode::Abs: r = x < 0 ? -x : x; break;
      case Opcode::Relu: r = x > 0 ? x : 0; break;
      default: break;
      }
      storeInt(type, out, i, r);
    }
  }
}

/// The comparison opcodes, for floats and integers alike.
template <typename T> bool compareValues(Opcode op, T x, T y) {
  switch (op) {
  case Opcode::CmpEq: return x == y;
  case Opcode::CmpNe: return x != y;
  case Opcode::CmpLt: return x < y;
  case Opcode::CmpLe: return x <= y;
  case Opcode::CmpGt: return x > y;
  default: return x >= y;
  }
}

void vxmBinary(Opcode op, DType type, Planes a, Planes b, OutPlanes out, unsigned lanes) {
  bool compare = op >= Opcode::CmpEq && op <= Opcode::CmpGe;
  for (unsigned i = 0; i < lanes; ++i) {
    if (tensor::isFloat(type)) {
      float x = elementAsFloat(type, a, i), y = elementAsFloat(type, b, i);
      if (compare) {
        out[0][i] = compareValues(op, x, y);
        continue;
      }
      float r = 0;
      switch (op) {
      case Opcode::Add: r = x + y; break;
      case Opcode::Sub: r = x - y; break;
      case Opcode::Mul: r = x * y; break;
      case Opcode::Max: r = std::fmax(x, y); break;
      default: r = std::fmin(x, y); break;
      }
      storeFloat(type, out, i, r);
    } else {
      int64_t x = elementAsInt(type, a, i), y = elementAsInt(type, b, i);
      if (compare) {
        out[0][i] = compareValues(op, x, y);
        continue;
      }
      int64_t r = 0;
      switch (op) {
      case Opcode::Add: r = x + y; break;
      case Opcode::Sub: r = x - y; break;
      case Opcode::Mul: r = int64_t(uint64_t(x) * uint64_t(y)); break;
      case Opcode::Max: r = std::max(x, y); break;
      default: r = std::min(x, y); break;
      }
      storeInt(type, out, i, r);
    }
  }
}

void vxmConvert(DType from, DType to, Planes in, OutPlanes out, unsigned lanes) {
  for (unsigned i = 0; i < lanes; ++i) {
    if (tensor::isFloat(to)) {
      storeFloat(to, out, i, elementAsFloat(from, in, i));
    } else if (tensor::isFloat(from)) {
      storeInt(to, out, i, saturatingFromFloat(to, elementAsFloat(from, in, i)));
    } else {
      storeInt(to, out, i, elementAsInt(from, in, i));
    }
  }
}

void sxmMove(Opcode op, unsigned count, Planes in, Planes map, OutPlanes out, unsigned width,
             unsigned lanes) {
  for (unsigned b = 0; b < width; ++b) {
    for (unsigned i = 0; i < lanes; ++i) {
      uint8_t v = 0;
      switch (op) {
      case Opcode::Shift: v = i >= count ? in[b][i - count] : 0; break;
      case Opcode::Rotate: v = in[b][(i + lanes - count % lanes) % lanes]; break;
      default: {
        unsigned src = map[0][i] | (map[1][i] << 8);
        v = src < lanes ? in[b][src] : 0;
      }
      }
      out[b][i] = v;
    }
  }
}

void sxmTranspose(Planes in, OutPlanes out, unsigned lanes) {
  for (unsigned g = 0; g < lanes / 16; ++g)
    for (unsigned s = 0; s < 16; ++s)
      for (unsigned l = 0; l < 16; ++l)
        out[s][g * 16 + l] = in[l][g * 16 + s];
}

} // namespace lpu::sim
