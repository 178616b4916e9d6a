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

/// How the parse went, for benchmarks and tests of the two-stage strategy.
struct ParseStats {
  bool usedFullLL = false; // the fast SLL pass failed and the full LL pass ran
  size_t tokens = 0;
  // Wall-clock seconds of each phase.
  double lexSeconds = 0, parseSeconds = 0, buildSeconds = 0, teardownSeconds = 0;
};
std::unique_ptr<ast::Module> parseModule(DiagnosticEngine &diags, unsigned bufferId,
                                         ParseStats *stats);

} // namespace lpu
