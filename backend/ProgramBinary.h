// The binary program file (.lpx): a fixed header (magic, format version,
// payload size, xxHash64 of the payload) and a little-endian payload. Any
// file that is truncated, corrupted, of another version or malformed is
// refused with an llvm::Error, never a crash. Layout: docs/program-file.md.
#pragma once

#include "backend/Program.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

#include <cstdint>
#include <string>

namespace lpu::backend {

/// Version 6 added chips that run another chip's queues (ChipCode::shares:
/// a flag byte before each chip's queues, then the chip, the delay and the
/// renamed links). Version 5 added each tensor's shard (TensorPlacement::shard) after its
/// chunk rows; version 4 added Layout::Packed (layout byte 1). Versions 3
/// and 4 still read (no shards; a version 3 file rows only); an older
/// reader refuses a newer file by its header.
inline constexpr uint32_t kProgramFormatVersion = 7;
inline constexpr uint32_t kOldestProgramFormatVersion = 3;
inline constexpr char kProgramMagic[8] = {'L', 'P', 'U', 'P', 'R', 'O', 'G', '\0'};

std::string writeProgramBinary(const Program &program);
/// The program in an older format version (kOldestProgramFormatVersion to
/// kProgramFormatVersion), for older lpuruns: refused when it holds what
/// that version cannot (a packed tensor before 4, a shard before 5, shared
/// code before 6).
llvm::Expected<std::string> writeProgramBinary(const Program &program, uint32_t version);

/// `name` is used in error messages.
llvm::Expected<Program> readProgramBinary(llvm::ArrayRef<uint8_t> bytes, llvm::StringRef name);

/// Whether `bytes` starts like a binary program file (as opposed to text).
bool looksLikeProgramBinary(llvm::ArrayRef<uint8_t> bytes);

} // namespace lpu::backend

namespace lpu::backend {
/// Reads a program from a file's bytes in either form: binary (by its magic)
/// or text (anything else). An empty file is an error.
llvm::Expected<Program> parseProgramFile(llvm::ArrayRef<uint8_t> bytes, llvm::StringRef name);
} // namespace lpu::backend
