#include "frontend/Diagnostics.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <functional>

namespace lpu {

namespace {
const DiagKindInfo kCatalogue[] = {
#define DIAG(code, severity, name, format, explanation)                                  \
  {#code, Severity::severity, #name, format, explanation},
#include "frontend/Diagnostics.def"
};
} // namespace

llvm::StringRef severityName(Severity severity) {
  switch (severity) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Remark: return "remark";
  case Severity::Note: return "note";
  }
  return "error";
}

const DiagKindInfo &diagKindInfo(DiagID id) { return kCatalogue[static_cast<size_t>(id)]; }

const DiagKindInfo *findDiagKind(llvm::StringRef code) {
  for (const DiagKindInfo &info : kCatalogue)
    if (code.equals_insensitive(info.code))
      return &info;
  return nullptr;
}

llvm::ArrayRef<DiagKindInfo> allDiagKinds() { return kCatalogue; }

DiagnosticBuilder DiagnosticEngine::reportArgs(DiagID id, llvm::SMRange primary,
                                               llvm::ArrayRef<std::string> args) {
  const llvm::ArrayRef<std::string> a = args;
  switch (a.size()) {
  case 0: return report(id, primary);
  case 1: return report(id, primary, a[0]);
  case 2: return report(id, primary, a[0], a[1]);
  case 3: return report(id, primary, a[0], a[1], a[2]);
  case 4: return report(id, primary, a[0], a[1], a[2], a[3]);
  case 5: return report(id, primary, a[0], a[1], a[2], a[3], a[4]);
  case 6: return report(id, primary, a[0], a[1], a[2], a[3], a[4], a[5]);
  case 7: return report(id, primary, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
  default: return report(id, primary, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
  }
}

DiagnosticConsumer::~DiagnosticConsumer() = default;

DiagnosticBuilder::~DiagnosticBuilder() {
  if (engine_)
    engine_->emit(std::move(diag_));
}

DiagnosticBuilder &DiagnosticBuilder::primaryLabel(std::string text) {
  diag_.primaryLabel = std::move(text);
  return *this;
}

DiagnosticBuilder &DiagnosticBuilder::label(llvm::SMRange range, std::string text) {
  diag_.secondary.push_back({range, std::move(text)});
  return *this;
}

DiagnosticBuilder &DiagnosticBuilder::note(std::string text, llvm::SMRange range) {
  diag_.notes.push_back({std::move(text), range});
  return *this;
}

DiagnosticBuilder &DiagnosticBuilder::help(std::string text) {
  diag_.helps.push_back(std::move(text));
  return *this;
}

DiagnosticBuilder &DiagnosticBuilder::fixit(llvm::SMRange range, std::string replacement) {
  diag_.fixits.push_back({range, std::move(replacement)});
  return *this;
}

void DiagnosticEngine::endBatch() {
  if (batchDepth_ == 0 || --batchDepth_ != 0)
    return;
  std::vector<Diagnostic> pending = std::move(batch_);
  batch_.clear();
  std::stable_sort(pending.begin(), pending.end(), [](const Diagnostic &a, const Diagnostic &b) {
    return std::less<const char *>()(a.primary.Start.getPointer(), b.primary.Start.getPointer());
  });
  for (Diagnostic &d : pending)
    emit(std::move(d));
}

void DiagnosticEngine::emit(Diagnostic diag) {
  if (batchDepth_ > 0) {
    batch_.push_back(std::move(diag));
    return;
  }
  if (diag.severity == Severity::Error) {
    if (errorLimitReached()) {
      ++errors_;
      if (!toldLimit_ && consumer_)
        consumer_->errorLimitReached(errorLimit_);
      toldLimit_ = true;
      return;
    }
    ++errors_;
  } else if (diag.severity == Severity::Warning) {
    ++warnings_;
  }
  if (consumer_)
    consumer_->handle(diag);
}

LineColumn lineColumn(const llvm::SourceMgr &sources, llvm::SMLoc loc) {
  if (!loc.isValid())
    return {};
  auto [line, column] = sources.getLineAndColumn(loc);
  return {line, column};
}

std::string formatLineColumn(const llvm::SourceMgr &sources, llvm::SMLoc loc) {
  LineColumn lc = lineColumn(sources, loc);
  return std::to_string(lc.line) + ":" + std::to_string(lc.column);
}

} // namespace lpu
