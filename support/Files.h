// What every tool checks of a path before reading it whole.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>

namespace lpu::support {

/// Whether `status` is a character or block device (/dev/zero, a
/// terminal): no file to read whole, as it may never end (reading
/// /dev/zero ran a tool out of memory).
inline bool isDevice(const llvm::sys::fs::file_status &status) {
  return status.type() == llvm::sys::fs::file_type::character_file ||
         status.type() == llvm::sys::fs::file_type::block_file;
}

/// Whether `path` names a device; false when it cannot be examined (the
/// read that follows reports why).
inline bool isDevice(llvm::StringRef path) {
  llvm::sys::fs::file_status status;
  return !llvm::sys::fs::status(path, status) && isDevice(status);
}

/// The words every tool uses for a device given as an input file.
inline constexpr const char *kDeviceReason = "it is a device, not a file (a device may never end)";

} // namespace lpu::support
