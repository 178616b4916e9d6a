#include "support/Tensor.h"

#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace lpu::tensor {

// Elements are copied to and from the byte buffer with memcpy, which gives
// the file formats' little-endian order only on a little-endian host.
static_assert(std::endian::native == std::endian::little,
              "lpu_support assumes a little-endian host");

llvm::Expected<int64_t> checkedElementCount(llvm::ArrayRef<int64_t> shape, DType type) {
  int64_t count = 1;
  const int64_t limit = kMaxTensorBytes / dtypeSize(type);
  for (int64_t dim : shape) {
    if (dim < 0)
      return llvm::createStringError(std::errc::invalid_argument,
                                     "negative dimension %lld in shape %s",
                                     static_cast<long long>(dim), shapeString(shape).c_str());
    // Once a zero dimension is seen the product stays 0; test before
    // multiplying so the product itself can never overflow.
    if (dim != 0 && count > limit / dim)
      return llvm::createStringError(
          std::errc::value_too_large, "shape %s is too large (over %lld bytes)",
          shapeString(shape).c_str(), static_cast<long long>(kMaxTensorBytes));
    count *= dim;
  }
  return count;
}

std::string typeString(DType type, llvm::ArrayRef<int64_t> shape) {
  std::string text;
  for (int64_t dim : shape)
    text += std::to_string(dim) + "x";
  return text + dtypeName(type).str();
}

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Tensor::Tensor() : Tensor(DType::F32, {}) {}

Tensor::Tensor(DType type, std::vector<int64_t> shape) : type_(type), shape_(std::move(shape)) {
  llvm::Expected<int64_t> count = checkedElementCount(shape_, type_);
  assert(count && "invalid shape; use Tensor::create for untrusted shapes");
  numElements_ = count ? *count : 0;
  if (!count)
    llvm::consumeError(count.takeError());
  bytes_.assign(static_cast<size_t>(numElements_) * dtypeSize(type_), 0);
}

llvm::Expected<Tensor> Tensor::create(DType type, std::vector<int64_t> shape) {
  if (llvm::Error error = checkedElementCount(shape, type).takeError())
    return error;
  return Tensor(type, std::move(shape));
}

llvm::Expected<Tensor> Tensor::fromBytes(DType type, std::vector<int64_t> shape,
                                         llvm::ArrayRef<uint8_t> bytes) {
  llvm::Expected<int64_t> count = checkedElementCount(shape, type);
  if (!count)
    return count.takeError();
  const uint64_t expected = static_cast<uint64_t>(*count) * dtypeSize(type);
  if (bytes.size() != expected)
    return llvm::createStringError(
        std::errc::invalid_argument, "%s needs %llu bytes of data, got %llu",
        tensor::typeString(type, shape).c_str(), static_cast<unsigned long long>(expected),
        static_cast<unsigned long long>(bytes.size()));
  Tensor tensor(type, std::move(shape));
  if (!bytes.empty())
    std::memcpy(tensor.bytes_.data(), bytes.data(), bytes.size());
  return tensor;
}

Tensor Tensor::fromFloats(DType type, std::vector<int64_t> shape, llvm::ArrayRef<float> values) {
  Tensor tensor(type, std::move(shape));
  assert(static_cast<int64_t>(values.size()) == tensor.numElements());
  tensor.setFloats(values);
  return tensor;
}

namespace {
template <typename T> T load(const uint8_t *data, int64_t index) {
  T value;
  std::memcpy(&value, data + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T> void store(uint8_t *data, int64_t index, T value) {
  std::memcpy(data + index * sizeof(T), &value, sizeof(T));
}

// Round to nearest even and clamp into [lo, hi]; NaN goes to 0 so that a
// conversion never has undefined behaviour whatever the input.
int64_t saturate(float value, int64_t lo, int64_t hi) {
  if (std::isnan(value))
    return 0;
  const double rounded = std::nearbyint(static_cast<double>(value));
  if (rounded <= static_cast<double>(lo))
    return lo;
  if (rounded >= static_cast<double>(hi))
    return hi;
  return static_cast<int64_t>(rounded);
}
} // namespace

float Tensor::getFloat(int64_t index) const {
  assert(index >= 0 && index < numElements_);
  const uint8_t *data = bytes_.data();
  switch (type_) {
  case DType::Bool:
    return data[index] ? 1.0f : 0.0f;
  case DType::I8:
    return load<int8_t>(data, index);
  case DType::I16:
    return load<int16_t>(data, index);
  case DType::I32:
    return static_cast<float>(load<int32_t>(data, index));
  case DType::F16:
    return halfBitsToFloat(load<uint16_t>(data, index));
  case DType::BF16:
    return bf16BitsToFloat(load<uint16_t>(data, index));
  case DType::F32:
    return load<float>(data, index);
  }
  return 0.0f;
}

void Tensor::setFloat(int64_t index, float value) {
  assert(index >= 0 && index < numElements_);
  uint8_t *data = bytes_.data();
  switch (type_) {
  case DType::Bool:
    data[index] = value != 0.0f;
    return;
  case DType::I8:
    store<int8_t>(data, index, static_cast<int8_t>(saturate(value, INT8_MIN, INT8_MAX)));
    return;
  case DType::I16:
    store<int16_t>(data, index, static_cast<int16_t>(saturate(value, INT16_MIN, INT16_MAX)));
    return;
  case DType::I32:
    store<int32_t>(data, index, static_cast<int32_t>(saturate(value, INT32_MIN, INT32_MAX)));
    return;
  case DType::F16:
    store<uint16_t>(data, index, floatToHalfBits(value));
    return;
  case DType::BF16:
    store<uint16_t>(data, index, floatToBF16Bits(value));
    return;
  case DType::F32:
    store<float>(data, index, value);
    return;
  }
}

int64_t Tensor::getInt(int64_t index) const {
  assert(index >= 0 && index < numElements_);
  const uint8_t *data = bytes_.data();
  switch (type_) {
  case DType::Bool:
    return data[index] != 0;
  case DType::I8:
    return load<int8_t>(data, index);
  case DType::I16:
    return load<int16_t>(data, index);
  case DType::I32:
    return load<int32_t>(data, index);
  default:
    assert(false && "getInt on a float tensor");
    return 0;
  }
}

void Tensor::setInt(int64_t index, int64_t value) {
  assert(index >= 0 && index < numElements_);
  uint8_t *data = bytes_.data();
  switch (type_) {
  case DType::Bool:
    data[index] = value != 0;
    return;
  case DType::I8:
    store<int8_t>(data, index, static_cast<int8_t>(value));
    return;
  case DType::I16:
    store<int16_t>(data, index, static_cast<int16_t>(value));
    return;
  case DType::I32:
    store<int32_t>(data, index, static_cast<int32_t>(value));
    return;
  default:
    assert(false && "setInt on a float tensor");
    return;
  }
}

namespace {
// Whole-tensor conversions run on weights of hundreds of megabytes, so the
// dtype is dispatched once and each loop is a plain per-element conversion
// the compiler can unroll.
template <typename T, typename Convert>
void loadAll(const uint8_t *data, float *out, int64_t count, Convert convert) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = convert(load<T>(data, i));
}

template <typename T, typename Convert>
void storeAll(uint8_t *data, const float *values, int64_t count, Convert convert) {
  for (int64_t i = 0; i < count; ++i)
    store<T>(data, i, convert(values[i]));
}
} // namespace

std::vector<float> Tensor::toFloats() const {
  std::vector<float> values(static_cast<size_t>(numElements_));
  const uint8_t *data = bytes_.data();
  float *out = values.data();
  switch (type_) {
  case DType::F16:
    loadAll<uint16_t>(data, out, numElements_, halfBitsToFloat);
    break;
  case DType::BF16:
    loadAll<uint16_t>(data, out, numElements_, bf16BitsToFloat);
    break;
  case DType::F32:
    loadAll<float>(data, out, numElements_, [](float v) { return v; });
    break;
  default:
    for (int64_t i = 0; i < numElements_; ++i)
      out[i] = getFloat(i);
  }
  return values;
}

void Tensor::setFloats(llvm::ArrayRef<float> values) {
  assert(static_cast<int64_t>(values.size()) == numElements_);
  uint8_t *data = bytes_.data();
  switch (type_) {
  case DType::F16:
    storeAll<uint16_t>(data, values.data(), numElements_, floatToHalfBits);
    break;
  case DType::BF16:
    storeAll<uint16_t>(data, values.data(), numElements_, floatToBF16Bits);
    break;
  case DType::F32:
    storeAll<float>(data, values.data(), numElements_, [](float v) { return v; });
    break;
  default:
    for (int64_t i = 0; i < numElements_; ++i)
      setFloat(i, values[i]);
  }
}

Tensor Tensor::convertTo(DType type) const {
  Tensor result(type, shape_);
  // Integer to integer goes through int64 so that i32 stays exact; narrowing
  // saturates, as setFloat does.
  const bool viaInt = !isFloat(type_) && isInteger(type);
  const auto [lo, hi] = isInteger(type) ? integerRange(type) : std::pair<int64_t, int64_t>{0, 0};
  for (int64_t i = 0; i < numElements_; ++i) {
    if (viaInt)
      result.setInt(i, std::clamp<int64_t>(getInt(i), lo, hi));
    else
      result.setFloat(i, getFloat(i));
  }
  return result;
}

llvm::Error writeAxis(Tensor &whole, int64_t axis, int64_t start, const Tensor &part) {
  const llvm::ArrayRef<int64_t> shape = whole.shape(), from = part.shape();
  bool same = whole.dtype() == part.dtype() && shape.size() == from.size() && axis >= 0 &&
              size_t(axis) < shape.size();
  for (size_t d = 0; same && d < shape.size(); ++d)
    same = d == size_t(axis) || shape[d] == from[d];
  if (!same)
    return llvm::createStringError(std::errc::invalid_argument,
                                   "cannot write a %s tensor of shape %s along axis %lld of a %s "
                                   "tensor of shape %s",
                                   dtypeName(part.dtype()).str().c_str(), shapeString(from).c_str(),
                                   static_cast<long long>(axis), dtypeName(whole.dtype()).str().c_str(),
                                   shapeString(shape).c_str());
  const int64_t dim = shape[size_t(axis)], size = from[size_t(axis)];
  if (start < 0 || start > dim || size > dim - start)
    return llvm::createStringError(
        std::errc::invalid_argument, "elements [%lld, %lld + %lld) of axis %lld are outside the shape %s",
        static_cast<long long>(start), static_cast<long long>(start), static_cast<long long>(size),
        static_cast<long long>(axis), shapeString(shape).c_str());
  int64_t outer = 1;
  for (size_t d = 0; d < size_t(axis); ++d)
    outer *= shape[d];
  uint64_t inner = dtypeSize(whole.dtype());
  for (size_t d = size_t(axis) + 1; d < shape.size(); ++d)
    inner *= uint64_t(shape[d]);
  const uint64_t to = uint64_t(dim) * inner, n = uint64_t(size) * inner;
  if (n == 0)
    return llvm::Error::success();
  uint8_t *dst = whole.bytes().data() + uint64_t(start) * inner;
  const uint8_t *src = part.bytes().data();
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + uint64_t(o) * to, src + uint64_t(o) * n, n);
  return llvm::Error::success();
}

llvm::Expected<Tensor> sliceAxis(const Tensor &t, int64_t axis, int64_t start, int64_t size) {
  const llvm::ArrayRef<int64_t> shape = t.shape();
  if (axis < 0 || size_t(axis) >= shape.size())
    return llvm::createStringError(std::errc::invalid_argument,
                                   "cannot slice axis %lld of a tensor of shape %s",
                                   static_cast<long long>(axis), shapeString(shape).c_str());
  const int64_t dim = shape[size_t(axis)];
  if (start < 0 || size < 0 || start > dim || size > dim - start)
    return llvm::createStringError(
        std::errc::invalid_argument,
        "slice [%lld, %lld + %lld) of axis %lld is outside the tensor's shape %s",
        static_cast<long long>(start), static_cast<long long>(start),
        static_cast<long long>(size), static_cast<long long>(axis), shapeString(shape).c_str());
  std::vector<int64_t> sliced = shape.vec();
  sliced[size_t(axis)] = size;
  Tensor result(t.dtype(), std::move(sliced));
  // [outer, dim, inner] -> [outer, size, inner]: one copy per outer index.
  int64_t outer = 1;
  for (size_t d = 0; d < size_t(axis); ++d)
    outer *= shape[d];
  uint64_t inner = dtypeSize(t.dtype());
  for (size_t d = size_t(axis) + 1; d < shape.size(); ++d)
    inner *= uint64_t(shape[d]);
  const uint64_t from = uint64_t(dim) * inner, to = uint64_t(size) * inner;
  if (to == 0)
    return result;
  const uint8_t *src = t.bytes().data() + uint64_t(start) * inner;
  uint8_t *dst = result.bytes().data();
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + uint64_t(o) * to, src + uint64_t(o) * from, to);
  return result;
}

std::string formatElement(const Tensor &tensor, int64_t index) {
  const DType type = tensor.dtype();
  if (!isFloat(type))
    return std::to_string(tensor.getInt(index));
  const float value = tensor.getFloat(index);
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buffer[48];
  // Whole numbers print in full (65504, not 6.55e+04) while they are exact.
  if (value == std::nearbyint(value) && std::fabs(value) < 0x1p24f) {
    std::snprintf(buffer, sizeof buffer, "%.0f", static_cast<double>(value));
    return std::signbit(value) && value == 0 ? "-0" : buffer;
  }
  // Otherwise the shortest %g form that reads back to the same element; 9
  // significant digits always suffice for float32.
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, static_cast<double>(value));
    const float back = roundToFloatType(type, std::strtof(buffer, nullptr));
    if (std::bit_cast<uint32_t>(back) == std::bit_cast<uint32_t>(value))
      break;
  }
  return buffer;
}

namespace {
void formatLevel(const Tensor &tensor, size_t dim, int64_t &next, std::string &out) {
  llvm::ArrayRef<int64_t> shape = tensor.shape();
  out += '[';
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (dim + 1 == shape.size()) {
      if (i)
        out += ' ';
      out += formatElement(tensor, next++);
    } else {
      formatLevel(tensor, dim + 1, next, out);
    }
  }
  out += ']';
}
} // namespace

std::string formatIree(const Tensor &tensor) {
  std::string out = tensor.typeString() + "=";
  if (tensor.rank() == 0)
    return out + formatElement(tensor, 0);
  if (tensor.numElements() == 0)
    return out;
  int64_t next = 0;
  // IREE prints the outermost level without its own brackets:
  // 2x3xf32=[1 2 3][4 5 6], and a vector as 3xf32=1 2 3.
  if (tensor.rank() == 1) {
    for (int64_t i = 0; i < tensor.numElements(); ++i)
      out += (i ? " " : "") + formatElement(tensor, next++);
    return out;
  }
  for (int64_t i = 0; i < tensor.shape()[0]; ++i)
    formatLevel(tensor, 1, next, out);
  return out;
}

} // namespace lpu::tensor
