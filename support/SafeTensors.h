// The .safetensors weight format: an 8-byte little-endian header length, a
// JSON header naming each tensor's dtype, shape and byte range, then the raw
// little-endian data. Tensors are found by parameter path ("layers.3.up.w").
#pragma once

#include "support/Tensor.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lpu::tensor {

/// The safetensors spelling: "BOOL", "I8", "I16", "I32", "F16", "BF16", "F32".
llvm::StringRef safetensorsDTypeName(DType type);

/// An opened, fully validated file. The data stays in the (memory-mapped)
/// buffer until a tensor is read.
class SafeTensorsFile {
public:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t begin; // byte range within the data section
    uint64_t end;
  };

  static llvm::Expected<SafeTensorsFile> open(llvm::StringRef path);
  /// Validates the header and every byte range: in bounds, non-overlapping,
  /// exactly dtype size * element count long. `name` starts every error.
  static llvm::Expected<SafeTensorsFile> parse(std::unique_ptr<llvm::MemoryBuffer> buffer,
                                               llvm::StringRef name);

  llvm::StringRef name() const { return name_; }
  /// Sorted by name.
  const std::vector<Entry> &entries() const { return entries_; }
  const Entry *find(llvm::StringRef tensorName) const;
  /// The "__metadata__" object (string to string), if the file has one.
  const std::map<std::string, std::string> &metadata() const { return metadata_; }

  /// Copies one tensor out; an error names the file and the missing name.
  llvm::Expected<Tensor> read(llvm::StringRef tensorName) const;
  /// Copies out only the slice [start, start + size) of `axis`: the file is
  /// mapped, so only the slice's bytes are read (a rank's shard of a
  /// weight, docs/distributed.md). Errors: no such tensor, a slice outside
  /// it.
  llvm::Expected<Tensor> readSlice(llvm::StringRef tensorName, int64_t axis, int64_t start,
                                   int64_t size) const;

private:
  SafeTensorsFile() = default;
  /// `bytes` (of `entry`'s dtype) as a tensor of `shape`.
  llvm::Expected<Tensor> tensorOf(const Entry &entry, std::vector<int64_t> shape,
                                  llvm::ArrayRef<uint8_t> bytes) const;
  std::string name_;
  std::unique_ptr<llvm::MemoryBuffer> buffer_;
  llvm::StringRef data_;
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

/// Checks that the file holds exactly the expected tensors with the expected
/// dtypes and shapes. One error lists every missing, extra, mis-typed and
/// mis-shaped name, so a user fixes them all in one go.
llvm::Error checkTensors(const SafeTensorsFile &file, llvm::ArrayRef<TensorSpec> expected);
/// The same over several files that together hold the tensors (as `lpurun
/// --weights A --weights B` gives them): a name in two files is an error.
llvm::Error checkTensors(llvm::ArrayRef<const SafeTensorsFile *> files,
                         llvm::ArrayRef<TensorSpec> expected);

/// checkTensors, then reads every expected tensor.
llvm::Expected<std::map<std::string, Tensor>> loadTensors(const SafeTensorsFile &file,
                                                          llvm::ArrayRef<TensorSpec> expected);
llvm::Expected<std::map<std::string, Tensor>>
loadTensors(llvm::ArrayRef<const SafeTensorsFile *> files, llvm::ArrayRef<TensorSpec> expected);
/// Opens every file of `paths` (mapped, not read).
llvm::Expected<std::vector<SafeTensorsFile>> openTensorFiles(llvm::ArrayRef<std::string> paths);
/// Opens every file of `paths`, then loadTensors over them all.
llvm::Expected<std::map<std::string, Tensor>> loadTensorFiles(llvm::ArrayRef<std::string> paths,
                                                              llvm::ArrayRef<TensorSpec> expected);

using NamedTensor = std::pair<std::string, Tensor>;

/// A .safetensors image of `tensors`, in the given order. Fails on duplicate
/// or empty names and on the reserved name "__metadata__".
llvm::Expected<std::string>
serializeSafeTensors(llvm::ArrayRef<NamedTensor> tensors,
                     const std::map<std::string, std::string> &metadata = {});
llvm::Error writeSafeTensorsFile(llvm::StringRef path, llvm::ArrayRef<NamedTensor> tensors,
                                 const std::map<std::string, std::string> &metadata = {});

} // namespace lpu::tensor
