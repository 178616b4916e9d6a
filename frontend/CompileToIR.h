// One call from a .lpu file to its verified IR module, for tools that run
// models (lpurun --reference): read, parse, check, lower, verify.
#pragma once

#include "ir/IR.h"

#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <string>
#include <vector>

namespace lpu {

struct CompileToIROptions {
  /// Directories searched for `import std.nn`, in order.
  std::vector<std::string> importPaths;
  /// Colour the diagnostics (the caller decides from the terminal).
  bool color = false;
};

/// Compiles `path`. Diagnostics are rendered as text to `diagnostics`; the
/// error then only says how many there were. An unreadable file is an
/// error naming it.
llvm::Expected<std::unique_ptr<ir::Module>> compileFileToIR(llvm::StringRef path,
                                                            const CompileToIROptions &options,
                                                            llvm::raw_ostream &diagnostics);

} // namespace lpu
