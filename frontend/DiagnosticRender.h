// The two faces of a diagnostic: the human text form (rustc/clang-like, with
// the source line, underlined spans and labels) and JSON lines for tools.
#pragma once

#include "frontend/Diagnostics.h"

#include <llvm/Support/raw_ostream.h>

namespace lpu {

enum class ColorMode { Auto, Always, Never };

/// Resolves --color against the stream and NO_COLOR: `auto` colours only a
/// terminal, and NO_COLOR (any value) turns `auto` off.
bool shouldUseColor(ColorMode mode, llvm::raw_ostream &os);

/// Renders:
///   file:14:17: error[E0302]: message
///      14 |     let y = x + h
///         |             ~ ^ ~ label
///   file:12:13: note: message            (a note with its own location)
///   help: message
class TextDiagnosticRenderer : public DiagnosticConsumer {
public:
  TextDiagnosticRenderer(const llvm::SourceMgr &sources, llvm::raw_ostream &os, bool color)
      : sources_(sources), os_(os), color_(color) {}
  void handle(const Diagnostic &diag) override;
  void errorLimitReached(unsigned limit) override;

private:
  void header(llvm::SMLoc loc, Severity severity, llvm::StringRef code, llvm::StringRef message);
  void snippet(const Diagnostic *diag, llvm::SMRange primary, llvm::StringRef primaryLabel);

  const llvm::SourceMgr &sources_;
  llvm::raw_ostream &os_;
  bool color_;
};

/// One JSON object per line: file, line, column, end_line, end_column, code,
/// severity, message, labels, notes, help, fixits.
class JsonDiagnosticRenderer : public DiagnosticConsumer {
public:
  JsonDiagnosticRenderer(const llvm::SourceMgr &sources, llvm::raw_ostream &os)
      : sources_(sources), os_(os) {}
  void handle(const Diagnostic &diag) override;
  void errorLimitReached(unsigned limit) override;

private:
  const llvm::SourceMgr &sources_;
  llvm::raw_ostream &os_;
};

/// `lpuc --explain CODE`: the code, its message form and its explanation.
/// Returns false (and prints nothing) for an unknown code.
bool printExplanation(llvm::StringRef code, llvm::raw_ostream &os);

} // namespace lpu
