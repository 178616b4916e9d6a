#include "frontend/Verify.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Regex.h>

#include <optional>

namespace lpu {

namespace {

struct Expectation {
  Severity severity;
  unsigned line;              // where the diagnostic is expected
  std::optional<unsigned> column;
  std::string code;           // empty: any
  unsigned count = 1;
  std::string text;           // as written between the braces
  bool isRegex = false;
  std::string pattern;        // the regex when isRegex
  unsigned directiveLine;     // where the comment is
};

struct Observed {
  Severity severity;
  unsigned line = 0;
  unsigned column = 0;
  std::string code;
  std::string message;
  bool matched = false;
};

std::optional<Severity> parseSeverity(llvm::StringRef word) {
  if (word == "error") return Severity::Error;
  if (word == "warning") return Severity::Warning;
  if (word == "note") return Severity::Note;
  if (word == "remark") return Severity::Remark;
  return std::nullopt;
}

/// `{{a}}b{{c}}` in the -re form: regex parts inside {{ }}, literal between.
std::string regexFromMixed(llvm::StringRef text) {
  std::string out;
  while (!text.empty()) {
    size_t open = text.find("{{");
    if (open == llvm::StringRef::npos) {
      out += llvm::Regex::escape(text);
      break;
    }
    out += llvm::Regex::escape(text.substr(0, open));
    size_t close = text.find("}}", open + 2);
    if (close == llvm::StringRef::npos) {
      out += llvm::Regex::escape(text.substr(open));
      break;
    }
    out += "(" + text.substr(open + 2, close - open - 2).str() + ")";
    text = text.substr(close + 2);
  }
  return out;
}

class Verifier {
public:
  Verifier(const llvm::SourceMgr &sources, unsigned bufferId, llvm::raw_ostream &os)
      : sources_(sources), bufferId_(bufferId), os_(os),
        file_(sources.getMemoryBuffer(bufferId)->getBufferIdentifier()) {}

  bool run(const std::vector<Diagnostic> &diagnostics) {
    parseExpectations();
    collect(diagnostics);
    match();
    if (sawNoDiagnostics_ && !expectations_.empty()) {
      os_ << file_ << ": 'expected-no-diagnostics' together with expected diagnostics\n";
      ok_ = false;
    }
    if (!sawNoDiagnostics_ && expectations_.empty() && observed_.empty()) {
      os_ << file_ << ": no expected diagnostics in the file; write "
                   "'// expected-no-diagnostics' if that is intended\n";
      ok_ = false;
    }
    return ok_;
  }

private:
  void parseExpectations() {
    llvm::StringRef buffer = sources_.getMemoryBuffer(bufferId_)->getBuffer();
    static const llvm::Regex directive(
        "^expected-(error|warning|note|remark)(-re)?(\\[([A-Za-z0-9]+)\\])?"
        "(@([+-]?[0-9]+)?(:([0-9]+))?)?( +([0-9]+))? *\\{\\{");
    unsigned lineNo = 0;
    while (!buffer.empty()) {
      auto [line, rest] = buffer.split('\n');
      buffer = rest;
      ++lineNo;
      if (line.contains("expected-no-diagnostics"))
        sawNoDiagnostics_ = true;
      llvm::StringRef scan = line;
      for (size_t at = scan.find("expected-"); at != llvm::StringRef::npos;
           at = scan.find("expected-")) {
        scan = scan.substr(at);
        llvm::SmallVector<llvm::StringRef, 12> m;
        if (!directive.match(scan, &m)) {
          if (scan.startswith("expected-error") || scan.startswith("expected-warning") ||
              scan.startswith("expected-note") || scan.startswith("expected-remark")) {
            os_ << file_ << ":" << lineNo << ": malformed directive '" << scan.rtrim() << "'\n";
            ok_ = false;
          }
          scan = scan.drop_front(9);
          continue;
        }
        Expectation e;
        e.directiveLine = lineNo;
        e.severity = *parseSeverity(m[1]);
        bool mixedRegex = !m[2].empty();
        e.code = m[4].str();
        e.line = lineNo;
        if (!m[6].empty()) {
          int value = 0;
          llvm::StringRef number = m[6];
          if (number.startswith("+"))
            number = number.drop_front(); // getAsInteger takes '-' but not '+'
          number.getAsInteger(10, value);
          e.line = (m[6][0] == '+' || m[6][0] == '-') ? static_cast<unsigned>(lineNo + value)
                                                       : static_cast<unsigned>(value);
        }
        if (!m[8].empty()) {
          unsigned col = 0;
          m[8].getAsInteger(10, col);
          e.column = col;
        }
        if (!m[10].empty())
          m[10].getAsInteger(10, e.count);
        llvm::StringRef body = scan.substr(m[0].size());
        size_t close = body.rfind("}}");
        if (close == llvm::StringRef::npos) {
          os_ << file_ << ":" << lineNo << ": directive without closing '}}'\n";
          ok_ = false;
          break;
        }
        e.text = body.substr(0, close).str();
        if (mixedRegex) {
          e.isRegex = true;
          e.pattern = regexFromMixed(e.text);
        } else if (llvm::StringRef(e.text).startswith("re:")) {
          e.isRegex = true;
          e.pattern = e.text.substr(3);
        }
        if (e.isRegex) {
          std::string error;
          if (!llvm::Regex(e.pattern).isValid(error)) {
            os_ << file_ << ":" << lineNo << ": invalid regex '" << e.pattern << "': " << error
                << "\n";
            ok_ = false;
          }
        }
        expectations_.push_back(std::move(e));
        scan = body.substr(close + 2);
      }
    }
  }

  void add(Severity severity, llvm::SMLoc loc, llvm::StringRef code, llvm::StringRef message,
           std::optional<unsigned> fallbackLine) {
    Observed o;
    o.severity = severity;
    o.code = code.str();
    o.message = message.str();
    if (loc.isValid() && sources_.FindBufferContainingLoc(loc) == bufferId_) {
      LineColumn lc = lineColumn(sources_, loc);
      o.line = lc.line;
      o.column = lc.column;
    } else if (fallbackLine) {
      o.line = *fallbackLine;
    }
    observed_.push_back(std::move(o));
  }

  void collect(const std::vector<Diagnostic> &diagnostics) {
    for (const Diagnostic &d : diagnostics) {
      add(d.severity, d.primary.Start, d.code(), d.message, std::nullopt);
      unsigned primaryLine = observed_.back().line;
      for (const DiagNote &n : d.notes)
        add(Severity::Note, n.range.Start, d.code(), n.message, primaryLine);
    }
  }

  bool matches(const Expectation &e, const Observed &o) const {
    if (o.matched || o.severity != e.severity || o.line != e.line)
      return false;
    if (e.column && *e.column != o.column)
      return false;
    if (!e.code.empty() && !llvm::StringRef(e.code).equals_insensitive(o.code))
      return false;
    if (e.isRegex)
      return llvm::Regex(e.pattern).match(o.message);
    return llvm::StringRef(o.message).contains(e.text);
  }

  void match() {
    for (const Expectation &e : expectations_) {
      unsigned found = 0;
      for (Observed &o : observed_)
        if (found < e.count && matches(e, o)) {
          o.matched = true;
          ++found;
        }
      if (found < e.count) {
        ok_ = false;
        os_ << file_ << ":" << e.line;
        if (e.column)
          os_ << ":" << *e.column;
        os_ << ": expected " << severityName(e.severity);
        if (!e.code.empty())
          os_ << "[" << e.code << "]";
        os_ << " not produced: {{" << e.text << "}}";
        if (e.count > 1)
          os_ << " (" << found << " of " << e.count << " seen)";
        os_ << " (directive at line " << e.directiveLine << ")\n";
      }
    }
    for (const Observed &o : observed_) {
      if (o.matched)
        continue;
      ok_ = false;
      os_ << file_ << ":" << o.line << ":" << o.column << ": unexpected " << severityName(o.severity);
      if (o.severity != Severity::Note)
        os_ << "[" << o.code << "]";
      os_ << ": " << o.message << "\n";
    }
  }

  const llvm::SourceMgr &sources_;
  unsigned bufferId_;
  llvm::raw_ostream &os_;
  llvm::StringRef file_;
  std::vector<Expectation> expectations_;
  std::vector<Observed> observed_;
  bool sawNoDiagnostics_ = false;
  bool ok_ = true;
};

} // namespace

bool verifyDiagnostics(const llvm::SourceMgr &sources, unsigned bufferId,
                       const std::vector<Diagnostic> &diagnostics, llvm::raw_ostream &os) {
  return Verifier(sources, bufferId, os).run(diagnostics);
}

} // namespace lpu
