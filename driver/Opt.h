// lpu-opt's pipeline, as mlir-opt's MlirOptMain is: IR text in, verified,
// the named passes run (the verifier between them), IR text out. The IR's
// own phases only: no source, no chip.
#pragma once

#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include <optional>
#include <string>
#include <vector>

namespace lpu::driver {

struct OptOptions {
  /// Comma-separated passes, as ir/Pass.h spells them ("default" is lpuc's
  /// pipeline; empty: none).
  std::string passes;
  /// Pass names (or "all") to print each function before / after.
  std::vector<std::string> printBefore, printAfter;
  /// Verify the input and the IR after each pass.
  bool verify = true;
  /// Print loc(...) on every op.
  bool locations = true;
};

/// A usage error in `options` (an unknown pass, a print flag naming a pass
/// that does not run), before any input is read.
llvm::Error checkOptOptions(const OptOptions &options);

/// Why runOpt stopped: the input (it does not parse or verify; the message
/// is the parser's or the verifier's, with positions), or a pass.
struct OptFailure {
  enum class Kind { Input, Pass } kind;
  std::string message;
};

/// Parses `text` (named `name` in errors), verifies it, runs the passes
/// (printing to `dumps` what printBefore/printAfter ask for) and prints the
/// result to `out`; nullopt when all of it worked.
std::optional<OptFailure> runOpt(llvm::StringRef text, llvm::StringRef name,
                                 const OptOptions &options, llvm::raw_ostream &out,
                                 llvm::raw_ostream &dumps);

} // namespace lpu::driver
