// Tensors written on the command line, IREE style:
//   x=data.npy                 a .npy file
//   x=2x3xf32=1,2,3,4,5,6      shape, dtype and C-order values
//   x=f32=3.5                  a scalar (rank 0)
//   x=2x3xf32=1                a splat: one value fills every element
// Values may be separated by commas, spaces or brackets, so the output of
// formatIree ("2x3xf32=[1 2 3][4 5 6]") reads back. docs/tensor-files.md
// has the full syntax.
#pragma once

#include "support/Tensor.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <string>

namespace lpu::tensor {

/// Literals (splats included) larger than this are refused before they are
/// allocated; bigger tensors belong in files.
inline constexpr int64_t kMaxLiteralBytes = int64_t(1) << 30;

/// Parses "2x3xf32=1,2,3,4,5,6" (no name, no file form). Errors say which
/// value is wrong and why: bad dtype, wrong count, not a number, out of
/// range for an integer dtype or beyond the largest finite f16/bf16/f32.
llvm::Expected<Tensor> parseTensorLiteral(llvm::StringRef text);

struct NamedInput {
  std::string name;
  Tensor tensor;
};

/// Parses one --input argument, NAME=LITERAL or NAME=FILE. The text after
/// the name is a literal when it starts with a type such as "2x3xf32=" or
/// "f32="; otherwise it is the path of a .npy file, which is read. Errors
/// start with "input 'NAME'".
llvm::Expected<NamedInput> parseInputArgument(llvm::StringRef argument);

} // namespace lpu::tensor
