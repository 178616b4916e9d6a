// Source text -> AST. Lexical and syntax errors are reported into the
// diagnostics engine with our own messages and codes (E00xx, E01xx); the
// parser recovers and reports every independent error it finds.
#pragma once

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"

#include <memory>

namespace lpu {

/// Parses buffer `bufferId` of `diags.sources()`. Always returns a module;
/// when `diags` holds errors afterwards, parts of it may be missing, and it is
/// meant for nothing more than further error reporting.
std::unique_ptr<ast::Module> parseModule(DiagnosticEngine &diags, unsigned bufferId);

struct ParseOptions {
  /// Free ANTLR's parse tree and tokens once the AST is built. A tool that
  /// exits right after compiling (lpuc) turns this off, as clang's driver
  /// does with -disable-free: the memory goes back with the process, and a
  /// quarter of the parse time with it. The tree stays reachable, so leak
  /// checkers do not complain.
  bool freeParseTree = true;
};

/// How the parse went, for benchmarks and tests of the two-stage strategy.
struct ParseStats {
  bool usedFullLL = false; // the fast SLL pass failed and the full LL pass ran
  size_t tokens = 0;
  // Wall-clock seconds of each phase.
  double lexSeconds = 0, parseSeconds = 0, buildSeconds = 0, teardownSeconds = 0;
};
std::unique_ptr<ast::Module> parseModule(DiagnosticEngine &diags, unsigned bufferId,
                                         ParseStats *stats);
std::unique_ptr<ast::Module> parseModule(DiagnosticEngine &diags, unsigned bufferId,
                                         const ParseOptions &options, ParseStats *stats = nullptr);

} // namespace lpu
