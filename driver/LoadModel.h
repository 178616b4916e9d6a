// A model for tools that run it rather than compile it (lpurun --reference):
// a .lpu source through the pipeline up to `lower` (read, parse, check,
// lower, verify), or the IR's text form (.ir) parsed and verified. The
// model runs on the host, so the SRAM rule of the chips (E0600) does not
// apply: a model of any size loads.
#pragma once

#include "ir/IR.h"
#include "support/Progress.h"
#include "support/TimeReport.h"

#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <string>
#include <vector>

namespace lpu::driver {

struct LoadModelOptions {
  /// Directories searched for `import std.nn`, in order.
  std::vector<std::string> importPaths;
  /// Colour the diagnostics (the caller decides from the terminal).
  bool color = false;
  /// The compiling phases' progress and times (driver/Pipeline.h).
  support::Progress progress;
  support::Timing timing;
};

/// Compiles the .lpu source `path` to its verified IR module. Diagnostics
/// are rendered as text to `diagnostics`; the error then only says how many
/// there were. An unreadable file is an error naming it.
llvm::Expected<std::unique_ptr<ir::Module>> compileFileToIR(llvm::StringRef path,
                                                            const LoadModelOptions &options,
                                                            llvm::raw_ostream &diagnostics);

/// The module of `path`: IR text when it ends in `.ir` (parsed and
/// verified; the verifier's errors in the error), else a .lpu source as
/// compileFileToIR compiles it.
llvm::Expected<std::unique_ptr<ir::Module>> loadModel(llvm::StringRef path,
                                                      const LoadModelOptions &options,
                                                      llvm::raw_ostream &diagnostics);

} // namespace lpu::driver
