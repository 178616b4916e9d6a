// The reference interpreter's values and kernels, shared by its .cpp files
// (not part of ir/'s interface: include interp/Interpreter.h instead).
//
// A value keeps its elements as float for the float dtypes and as int32 for
// bool and the integer dtypes. Every float element is exactly representable
// in the value's dtype (kernels round their results with roundTo), so this
// is f16/bf16 storage with the arithmetic done in fp32; every integer
// element lies in its dtype's range (wrapInt). Storage is shared, so
// reshape and the binding of weights copy nothing.
#pragma once

#include "interp/Interpreter.h"
#include "ir/IR.h"
#include "support/Arithmetic.h"

#include <llvm/Support/Error.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace lpu::interp::detail {

struct Value {
  Type type;
  std::shared_ptr<const std::vector<float>> f;   // float dtypes
  std::shared_ptr<const std::vector<int32_t>> i; // bool and integer dtypes

  bool isFloat() const { return f != nullptr; }
  const float *floats() const { return f->data(); }
  const int32_t *ints() const { return i->data(); }
};

Value makeFloat(Type type, std::vector<float> data);
/// A tensor's value (f16 converted in bulk) and back.
Value toValue(const tensor::Tensor &t);
tensor::Tensor toTensor(const Value &v);
/// Any op but an input, a param or the return, from its operands' values.
llvm::Expected<Value> evalOp(const Op &op, llvm::ArrayRef<const Value *> args, unsigned threads);
Value makeInt(Type type, std::vector<int32_t> data);

/// Rounding to a float dtype and wrapping to an integer dtype: the shared
/// elementwise arithmetic (support/Arithmetic.h).
using tensor::roundTo;
using tensor::wrapInt;
/// f16 bits -> float, exact (F16C when the CPU has it).
void halfToFloat(const uint16_t *in, float *out, size_t n);

llvm::Error opError(const Op &op, const llvm::Twine &message);

/// `axis` counted from the end when negative, for rank `rank`.
int64_t normalizeAxis(int64_t axis, size_t rank);

// Each kernel computes one op from its operands' values; the op's type is
// the result type (the verifier has checked operands against it).
llvm::Expected<Value> evalLeaf(const Op &op);
llvm::Expected<Value> evalElementwise(const Op &op, llvm::ArrayRef<const Value *> args);
llvm::Expected<Value> evalReduce(const Op &op, const Value &x);
llvm::Expected<Value> evalLayout(const Op &op, llvm::ArrayRef<const Value *> args);
/// `threads`: how many threads may share the matmul and convolution work.
llvm::Expected<Value> evalContract(const Op &op, llvm::ArrayRef<const Value *> args,
                                   unsigned threads);

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);
int64_t product(llvm::ArrayRef<int64_t> shape);

/// `x` with its axes reordered by `perm` (output axis k is input axis
/// perm[k]); a cache-friendly copy.
template <typename T>
std::vector<T> transposeData(const T *x, llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int64_t> perm);

} // namespace lpu::interp::detail
