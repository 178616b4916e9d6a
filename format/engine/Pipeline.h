// Formatting a whole source file, with the safety checks: the result is
// parsed again and compared with the input (tokens modulo trivia, tree
// shape, comments), and formatted again, which must change nothing. A
// language is a parser into a SyntaxTree plus a rules table.
#pragma once

#include "format/engine/FormatContext.h"
#include "format/engine/Printer.h"
#include "format/engine/Syntax.h"

#include <string>
#include <vector>

namespace lpu::format {

struct Language {
  const char *name;
  std::vector<const char *> extensions; // without the dot
  /// Fills `tree` (whose `source` is already set) or returns false with at
  /// least one error. Must not throw.
  bool (*parse)(SyntaxTree &tree, std::vector<SyntaxError> &errors);
  const RuleTable &(*rules)();
  /// Tokens the style may add or drop (trailing commas): ignored when the
  /// output's tokens are compared with the input's. May be null.
  bool (*isOptionalToken)(const SyntaxTree &tree, uint32_t token);
};

struct FormatOptions {
  LayoutOptions layout;
  bool verify = true; // the safety checks; only tests and benchmarks turn them off
  /// For tests of the safety net only: the first pass's output gets an extra
  /// comment, which the checks must catch.
  bool corruptOutputForTesting = false;
};

struct FormatResult {
  enum Status { Formatted, SyntaxErrors, InternalError };
  Status status = Formatted;
  std::string output;              // Formatted
  std::vector<SyntaxError> errors; // SyntaxErrors
  std::string details;             // InternalError: what check failed, how
};

FormatResult formatSource(const Language &language, llvm::StringRef source,
                          const FormatOptions &options);

/// One formatting pass over a parsed tree, with the printed-once check but
/// without the others. Returns false and fills `details` if the check fails.
bool renderTree(const Language &language, const SyntaxTree &tree, const LayoutOptions &layout,
                std::string &output, std::string &details);

} // namespace lpu::format
