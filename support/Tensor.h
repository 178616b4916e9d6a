// A tensor value: dtype, static shape and the elements as contiguous C-order
// (row-major) little-endian bytes, exactly as they sit in an .npy or
// .safetensors file, so files load without conversion.
#pragma once

#include "support/DType.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lpu::tensor {

/// Shapes whose data would exceed this many bytes are rejected before any
/// allocation, so a hostile header or literal cannot ask for absurd memory.
inline constexpr int64_t kMaxTensorBytes = int64_t(1) << 40;

/// The most elements a value of the language may have (E0700), the IR text
/// and the ONNX importer alike: far past any memory (a chip's SRAM holds
/// some 2^27 elements, a host's some 2^36), and small enough that element
/// counts, byte sizes and vector counts computed from it cannot overflow.
inline constexpr int64_t kMaxShapeElements = int64_t(1) << 48;

/// Checks that every dimension is non-negative and that the element count
/// and byte size fit (see kMaxTensorBytes); returns the element count.
llvm::Expected<int64_t> checkedElementCount(llvm::ArrayRef<int64_t> shape, DType type);

/// "2x3xf32"; a rank-0 tensor is just "f32" (IREE's spelling).
std::string typeString(DType type, llvm::ArrayRef<int64_t> shape);
/// "[2, 3]", for messages about shapes.
std::string shapeString(llvm::ArrayRef<int64_t> shape);

class Tensor {
public:
  /// A rank-0 f32 zero.
  Tensor();
  /// Zero-filled. The shape must satisfy checkedElementCount (asserted);
  /// use create() for shapes that come from outside.
  Tensor(DType type, std::vector<int64_t> shape);

  static llvm::Expected<Tensor> create(DType type, std::vector<int64_t> shape);
  /// Takes the raw little-endian bytes; their size must match the shape.
  static llvm::Expected<Tensor> fromBytes(DType type, std::vector<int64_t> shape,
                                          llvm::ArrayRef<uint8_t> bytes);
  /// Converts each value with setFloat. values.size() must equal the
  /// element count (asserted).
  static Tensor fromFloats(DType type, std::vector<int64_t> shape, llvm::ArrayRef<float> values);

  DType dtype() const { return type_; }
  llvm::ArrayRef<int64_t> shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t numElements() const { return numElements_; }
  size_t byteSize() const { return bytes_.size(); }
  llvm::ArrayRef<uint8_t> bytes() const { return bytes_; }
  llvm::MutableArrayRef<uint8_t> bytes() { return bytes_; }
  std::string typeString() const { return tensor::typeString(type_, shape_); }

  /// Element `index` (flat, C order) as a float. Exact for every dtype but
  /// i32 values beyond 2^24, which round to the nearest float.
  float getFloat(int64_t index) const;
  /// Stores `value` converted to the dtype: f16/bf16 round to nearest even;
  /// integers round to nearest even and saturate, NaN becomes 0; bool is
  /// true for any non-zero value (NaN included).
  void setFloat(int64_t index, float value);
  /// Element `index` of a bool or integer tensor, exactly.
  int64_t getInt(int64_t index) const;
  /// Stores into a bool or integer tensor; the value must fit (asserted).
  void setInt(int64_t index, int64_t value);

  /// All elements as floats / set from floats (with setFloat's rules);
  /// much faster than element-wise calls on large tensors.
  std::vector<float> toFloats() const;
  void setFloats(llvm::ArrayRef<float> values);
  /// The same values in another dtype, element by element via float
  /// (integers via int64, so i32 -> i32 is exact).
  Tensor convertTo(DType type) const;

  /// Same dtype, shape and bytes (so NaNs compare by their bits).
  bool operator==(const Tensor &other) const = default;

private:
  DType type_;
  std::vector<int64_t> shape_;
  int64_t numElements_;
  std::vector<uint8_t> bytes_;
};

/// `t`'s slice along `axis`: the `size` elements from `start`, every other
/// dimension whole (`t[..., start:start+size, ...]`), byte for byte. Errors
/// (naming the shape and the slice) when the axis is not below the rank or
/// the slice is not inside the dimension.
llvm::Expected<Tensor> sliceAxis(const Tensor &t, int64_t axis, int64_t start, int64_t size);
/// The inverse: writes `part` over `whole`'s elements [start, start + n)
/// along `axis` (n being part's dimension there), every other dimension
/// the same in both, byte for byte. Errors when the dtypes, the other
/// dimensions or the range do not match.
llvm::Error writeAxis(Tensor &whole, int64_t axis, int64_t start, const Tensor &part);

/// What a program expects of one named tensor (a parameter by its path such
/// as "layers.3.up.w", or an input): checked against files, or used to make
/// random weights.
struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};

/// IREE's textual form: "2x3xf32=[1 2 3][4 5 6]", "f32=3.5", bool as 0/1.
/// Each float is printed with the fewest digits that read back to the same
/// value in its dtype; infinities and NaN print as inf, -inf, nan.
std::string formatIree(const Tensor &tensor);
/// One element as formatIree prints it.
std::string formatElement(const Tensor &tensor, int64_t index);

} // namespace lpu::tensor
