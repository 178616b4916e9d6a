// Command-line plumbing shared by lpuc, lpurun and lpufmt: exit codes, the
// version line, CLI11 error handling and reading input files with the error
// messages a user expects (missing, unreadable, a directory).
#pragma once

#include <CLI/CLI.hpp>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <memory>
#include <string>

namespace lpu::tools {

/// Documented in docs/cli.md; the same for every tool.
enum ExitCode : int {
  kExitSuccess = 0,
  kExitInputError = 1, // errors in the input (source, program, tensors)
  kExitUsageError = 2, // bad flags, missing or unreadable files, I/O
};

/// "lpuc 0.1.0" etc.
std::string versionLine(llvm::StringRef tool);

/// Adds --version to `app` and the footer naming the exit codes.
void addCommonOptions(CLI::App &app, llvm::StringRef tool);

/// Parses argv. Returns -1 when the tool should go on, otherwise the exit
/// code to return (0 after --help/--version, 2 after a usage error, which is
/// printed to stderr as "TOOL: error: ...").
int parseCommandLine(CLI::App &app, int argc, char **argv, llvm::StringRef tool);

/// Reads a whole input file ("-" is stdin). Errors name the file and say why:
/// not found, permission denied, is a directory.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> readInputFile(llvm::StringRef path);

/// Writes `contents` to a new file beside `path` (`PATH.TAG-XXXXXX`, so that
/// a rename into place stays on one file system) and returns its name; the
/// caller renames it over `path` or removes it. Nothing is left behind on
/// an error, which names `path`.
llvm::Expected<std::string> writeTemporaryBeside(llvm::StringRef path, llvm::StringRef contents,
                                                 llvm::StringRef tag);

/// Prints "TOOL: error: MESSAGE" to stderr (coloured when stderr is a
/// terminal and NO_COLOR is unset).
void reportToolError(llvm::StringRef tool, const llvm::Twine &message);

} // namespace lpu::tools
