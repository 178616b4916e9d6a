// The diagnostics engine: one place where every error, warning and note of
// the compiler is built, counted, limited and handed to a consumer (the text
// renderer, the JSON-lines renderer, or the -verify collector).
//
// Locations are llvm::SMLoc/SMRange into buffers of one llvm::SourceMgr, so a
// diagnostic always points at the user's source as written.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/SMLoc.h>
#include <llvm/Support/SourceMgr.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace lpu {

enum class DiagID : uint16_t {
#define DIAG(code, severity, name, format, explanation) name,
#include "frontend/Diagnostics.def"
};

enum class Severity : uint8_t { Error, Warning, Remark, Note };

llvm::StringRef severityName(Severity severity);

/// One row of the catalogue (frontend/Diagnostics.def).
struct DiagKindInfo {
  const char *code;        // "E0101"
  Severity severity;
  const char *name;        // "UnclosedDelimiter"
  const char *format;      // formatv format of the message
  const char *explanation; // long text for --explain
};

const DiagKindInfo &diagKindInfo(DiagID id);
/// Looks a code up case-insensitively ("e0101" finds E0101); null if unknown.
const DiagKindInfo *findDiagKind(llvm::StringRef code);
llvm::ArrayRef<DiagKindInfo> allDiagKinds();

/// A secondary span with its label ("unclosed delimiter").
struct DiagLabel {
  llvm::SMRange range;
  std::string message;
};

/// A note; it has its own location when `range` is valid.
struct DiagNote {
  std::string message;
  llvm::SMRange range;
};

/// A known fix: replace `range` (empty range = insert) with `replacement`.
struct DiagFixIt {
  llvm::SMRange range;
  std::string replacement;
};

struct Diagnostic {
  DiagID id;
  Severity severity;
  std::string message;
  llvm::SMRange primary;
  std::string primaryLabel;
  std::vector<DiagLabel> secondary;
  std::vector<DiagNote> notes;
  std::vector<std::string> helps;
  std::vector<DiagFixIt> fixits;

  const char *code() const { return diagKindInfo(id).code; }
};

/// Receives every diagnostic the engine lets through.
class DiagnosticConsumer {
public:
  virtual ~DiagnosticConsumer();
  virtual void handle(const Diagnostic &diag) = 0;
  /// Called once when the engine stops accepting errors (the error limit).
  virtual void errorLimitReached(unsigned limit) {}
};

class DiagnosticEngine;

namespace detail {
/// Integers are formatted here rather than by formatv, whose integer path
/// trips a false -Wmaybe-uninitialized in g++ 12 inside LLVM's headers.
template <typename T> decltype(auto) diagArg(T &&value) {
  if constexpr (std::is_integral_v<std::decay_t<T>> && !std::is_same_v<std::decay_t<T>, bool>)
    return std::to_string(value);
  else
    return std::forward<T>(value);
}
} // namespace detail

/// Collects the parts of one diagnostic and hands it to the engine when it
/// goes out of scope, so a report reads as one expression:
///   diags.report(DiagID::UnclosedDelimiter, at, ")", "(", "3:14")
///        .label(openRange, "unclosed delimiter");
class DiagnosticBuilder {
public:
  DiagnosticBuilder(DiagnosticEngine &engine, Diagnostic diag)
      : engine_(&engine), diag_(std::move(diag)) {}
  DiagnosticBuilder(DiagnosticBuilder &&other) noexcept
      : engine_(other.engine_), diag_(std::move(other.diag_)) {
    other.engine_ = nullptr;
  }
  DiagnosticBuilder(const DiagnosticBuilder &) = delete;
  DiagnosticBuilder &operator=(const DiagnosticBuilder &) = delete;
  DiagnosticBuilder &operator=(DiagnosticBuilder &&) = delete;
  ~DiagnosticBuilder();

  /// A label on the primary span itself.
  DiagnosticBuilder &primaryLabel(std::string text);
  DiagnosticBuilder &label(llvm::SMRange range, std::string text);
  DiagnosticBuilder &note(std::string text, llvm::SMRange range = {});
  DiagnosticBuilder &help(std::string text);
  DiagnosticBuilder &fixit(llvm::SMRange range, std::string replacement);

private:
  DiagnosticEngine *engine_;
  Diagnostic diag_;
};

class DiagnosticEngine {
public:
  explicit DiagnosticEngine(llvm::SourceMgr &sources) : sources_(sources) {}

  llvm::SourceMgr &sources() { return sources_; }

  void setConsumer(DiagnosticConsumer *consumer) { consumer_ = consumer; }
  /// 0 means no limit. Once `limit` errors went out, further errors are
  /// dropped (and counted) and the consumer is told once.
  void setErrorLimit(unsigned limit) { errorLimit_ = limit; }

  template <typename... Args>
  DiagnosticBuilder report(DiagID id, llvm::SMRange primary, Args &&...args) {
    const DiagKindInfo &info = diagKindInfo(id);
    Diagnostic diag;
    diag.id = id;
    diag.severity = info.severity;
    if constexpr (sizeof...(Args) == 0)
      diag.message = info.format;
    else
      diag.message = llvm::formatv(info.format, detail::diagArg(std::forward<Args>(args))...).str();
    diag.primary = primary;
    return DiagnosticBuilder(*this, std::move(diag));
  }

  /// report() with arguments known only at run time (another library's
  /// error values carry them as strings), each one value: at most
  /// kMaxRuntimeArgs of them (tests/unit/scheduler/RefusalsTest.cpp checks
  /// the scheduler's refusals take no more).
  static constexpr size_t kMaxRuntimeArgs = 8;
  DiagnosticBuilder reportArgs(DiagID id, llvm::SMRange primary, llvm::ArrayRef<std::string> args);

  /// Takes a finished diagnostic (DiagnosticBuilder calls this).
  void emit(Diagnostic diag);

  /// While a batch is open, diagnostics are held back; closing it emits
  /// them sorted by source position (stable), so that one phase's errors
  /// read top to bottom whatever order the phase found them in.
  void beginBatch() { ++batchDepth_; }
  void endBatch();

  unsigned errorCount() const { return errors_; }
  unsigned warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ > 0; }
  bool errorLimitReached() const { return errorLimit_ != 0 && errors_ >= errorLimit_; }

private:
  llvm::SourceMgr &sources_;
  DiagnosticConsumer *consumer_ = nullptr;
  unsigned errorLimit_ = 0;
  unsigned errors_ = 0;
  unsigned warnings_ = 0;
  bool toldLimit_ = false;
  unsigned batchDepth_ = 0;
  std::vector<Diagnostic> batch_;
};

/// Collects diagnostics in memory (tests, -verify).
class CollectingConsumer : public DiagnosticConsumer {
public:
  void handle(const Diagnostic &diag) override { diagnostics.push_back(diag); }
  std::vector<Diagnostic> diagnostics;
};

/// A line and column (both 1-based; the column counts bytes).
struct LineColumn {
  unsigned line = 0;
  unsigned column = 0;
};
LineColumn lineColumn(const llvm::SourceMgr &sources, llvm::SMLoc loc);
/// "3:14", as messages write a location in the same file.
std::string formatLineColumn(const llvm::SourceMgr &sources, llvm::SMLoc loc);

} // namespace lpu
