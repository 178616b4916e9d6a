#include "sim/VectorOps.h"

#include "support/Arithmetic.h"
#include "support/DType.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

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

// A vector decoded into fp32 (float dtypes) or int32 (the others): the
// element form tensor/Arithmetic.h computes on.
struct Decoded {
  std::vector<float> f;
  std::vector<int32_t> i;
};

void decode(DType type, Planes in, unsigned lanes, Decoded &d) {
  if (tensor::isFloat(type)) {
    d.f.resize(lanes);
    for (unsigned k = 0; k < lanes; ++k)
      d.f[k] = elementAsFloat(type, in, k);
  } else {
    d.i.resize(lanes);
    for (unsigned k = 0; k < lanes; ++k)
      d.i[k] = int32_t(elementAsInt(type, in, k));
  }
}

void encodeFloats(DType type, const float *v, OutPlanes out, unsigned lanes) {
  for (unsigned k = 0; k < lanes; ++k)
    storeFloat(type, out, k, v[k]);
}

void encodeInts(DType type, const int32_t *v, OutPlanes out, unsigned lanes) {
  for (unsigned k = 0; k < lanes; ++k)
    storeInt(type, out, k, v[k]);
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
  default:
    return tensor::floatToInt(DType::I32, elementAsFloat(type, in, lane),
                              tensor::FloatToIntRounding::NearestEven);
  }
}

void vxmUnary(Opcode op, DType type, Planes in, OutPlanes out, unsigned lanes) {
  std::optional<tensor::ElementwiseOp> e = backend::elementwiseOf(op);
  if (!e) { // copy: the bits, unchanged
    for (unsigned b = 0; b < tensor::dtypeSize(type); ++b)
      std::memcpy(out[b], in[b], lanes);
    return;
  }
  Decoded x;
  decode(type, in, lanes, x);
  // dtypeAllowed keeps ops off dtypes they are not defined on; should one
  // get here anyway, the result is the operand unchanged.
  if (tensor::isFloat(type)) {
    tensor::unaryFloat(*e, type, x.f.data(), x.f.data(), lanes);
    encodeFloats(type, x.f.data(), out, lanes);
  } else {
    tensor::unaryInt(*e, type, x.i.data(), x.i.data(), lanes);
    encodeInts(type, x.i.data(), out, lanes);
  }
}

void vxmBinary(Opcode op, DType type, Planes a, Planes b, OutPlanes out, unsigned lanes) {
  std::optional<tensor::ElementwiseOp> e = backend::elementwiseOf(op);
  if (!e)
    return;
  Decoded x, y;
  decode(type, a, lanes, x);
  decode(type, b, lanes, y);
  if (tensor::isComparison(*e)) {
    std::vector<int32_t> r(lanes);
    if (tensor::isFloat(type))
      tensor::compareFloat(*e, x.f.data(), y.f.data(), r.data(), lanes);
    else
      tensor::compareInt(*e, x.i.data(), y.i.data(), r.data(), lanes);
    encodeInts(DType::Bool, r.data(), out, lanes);
  } else if (tensor::isFloat(type)) {
    tensor::binaryFloat(*e, type, x.f.data(), y.f.data(), x.f.data(), lanes);
    encodeFloats(type, x.f.data(), out, lanes);
  } else {
    tensor::binaryInt(*e, type, x.i.data(), y.i.data(), x.i.data(), lanes);
    encodeInts(type, x.i.data(), out, lanes);
  }
}

void vxmSelect(DType type, Planes cond, Planes a, Planes b, OutPlanes out, unsigned lanes) {
  // Bits are chosen, not values: NaN payloads and -0 pass unchanged.
  for (unsigned b2 = 0; b2 < tensor::dtypeSize(type); ++b2)
    for (unsigned k = 0; k < lanes; ++k)
      out[b2][k] = cond[0][k] ? a[b2][k] : b[b2][k];
}

void vxmConvert(DType from, DType to, bool truncate, Planes in, OutPlanes out, unsigned lanes) {
  Decoded x;
  decode(from, in, lanes, x);
  if (tensor::isFloat(to)) {
    std::vector<float> r(lanes);
    if (tensor::isFloat(from))
      tensor::convertFloatToFloat(to, x.f.data(), r.data(), lanes);
    else
      tensor::convertIntToFloat(to, x.i.data(), r.data(), lanes);
    encodeFloats(to, r.data(), out, lanes);
    return;
  }
  std::vector<int32_t> r(lanes);
  if (tensor::isFloat(from))
    tensor::convertFloatToInt(to,
                              truncate ? tensor::FloatToIntRounding::TowardZero
                                       : tensor::FloatToIntRounding::NearestEven,
                              x.f.data(), r.data(), lanes);
  else
    tensor::convertIntToInt(to, x.i.data(), r.data(), lanes);
  encodeInts(to, r.data(), out, lanes);
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
