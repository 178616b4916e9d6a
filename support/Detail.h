// Helpers shared by the tensor-file readers and writers (not part of the
// API): error messages that name their source, whole-file I/O.
#pragma once

#include "support/Files.h"

#include <llvm/ADT/Twine.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <string>

#include <system_error>

namespace lpu::tensor::detail {

/// "NAME: MESSAGE" as an llvm::Error. Built from a Twine, never from a
/// printf format, so a '%' in a file name is harmless.
inline llvm::Error sourceError(llvm::StringRef name, const llvm::Twine &message,
                               std::errc code = std::errc::invalid_argument) {
  return llvm::createStringError(std::make_error_code(code), llvm::Twine(name) + ": " + message);
}

/// Prefixes every message in `error` with "NAME: ", keeping its code (a
/// file that cannot be read stays one: lpurun's exit 2).
inline llvm::Error prefixError(llvm::StringRef name, llvm::Error error) {
  if (!error)
    return error;
  std::error_code code;
  std::string message;
  llvm::handleAllErrors(std::move(error), [&](const llvm::ErrorInfoBase &e) {
    code = e.convertToErrorCode();
    message += (message.empty() ? "" : "\n") + e.message();
  });
  return llvm::createStringError(code, llvm::Twine(name) + ": " + message);
}

/// Reads a whole binary file; the error names the file and the reason.
inline llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> readWholeFile(llvm::StringRef path) {
  // A file that is not there (or not a file) is an error of the command
  // line, whatever it would have held: std::errc::no_such_file_or_directory
  // tells callers so (lpurun's exit 2).
  if (llvm::sys::fs::is_directory(path))
    return sourceError(path, "cannot read: it is a directory", std::errc::no_such_file_or_directory);
  if (support::isDevice(path))
    return sourceError(path, llvm::Twine("cannot read: ") + support::kDeviceReason, std::errc::no_such_file_or_directory);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return sourceError(path, "cannot read: " + buffer.getError().message(),
                       std::errc::no_such_file_or_directory);
  return std::move(*buffer);
}

/// Writes `data` to `path`, reporting open and write failures by name.
inline llvm::Error writeWholeFile(llvm::StringRef path, llvm::StringRef data) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return sourceError(path, "cannot write: " + ec.message());
  out << data;
  out.close();
  if (out.has_error()) {
    std::error_code writeError = out.error();
    out.clear_error();
    return sourceError(path, "cannot write: " + writeError.message());
  }
  return llvm::Error::success();
}

} // namespace lpu::tensor::detail
