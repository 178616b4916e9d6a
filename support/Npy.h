// NumPy's .npy format (versions 1.0, 2.0 and 3.0), C order, for every dtype
// of the language. See docs/tensor-files.md for the dtype descriptors,
// including the bf16 convention (numpy has no bfloat16 of its own).
#pragma once

#include "support/Tensor.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <string>

namespace lpu::tensor {

/// Parses a whole .npy image. `name` (usually the file path) starts every
/// error message. Never crashes on malformed input.
llvm::Expected<Tensor> parseNpy(llvm::StringRef data, llvm::StringRef name);
llvm::Expected<Tensor> readNpyFile(llvm::StringRef path);
/// As readNpyFile, then checks the dtype and shape against what the caller
/// expects (e.g. an entry point's input type).
llvm::Expected<Tensor> readNpyFile(llvm::StringRef path, DType expectedType,
                                   llvm::ArrayRef<int64_t> expectedShape);

/// "NAME: expected 2x3xf32, got 3x2xf16" unless dtype and shape both match.
llvm::Error checkTensorType(const Tensor &tensor, DType expectedType,
                            llvm::ArrayRef<int64_t> expectedShape, llvm::StringRef name);

/// The .npy image of `tensor` (version 1.0, or 2.0 for a huge header).
std::string serializeNpy(const Tensor &tensor);
llvm::Error writeNpyFile(llvm::StringRef path, const Tensor &tensor);

/// The descriptor written for `type`: "|b1", "|i1", "<i2", "<i4", "<f2",
/// "|V2" (bf16 bits as a 2-byte void), "<f4".
llvm::StringRef npyDescr(DType type);

} // namespace lpu::tensor
