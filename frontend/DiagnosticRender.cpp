#include "frontend/DiagnosticRender.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/Process.h>

#include <algorithm>
#include <cstdlib>
#include <map>

namespace lpu {

bool shouldUseColor(ColorMode mode, llvm::raw_ostream &os) {
  switch (mode) {
  case ColorMode::Always: return true;
  case ColorMode::Never: return false;
  case ColorMode::Auto: break;
  }
  if (const char *noColor = std::getenv("NO_COLOR"); noColor && *noColor)
    return false;
  return os.is_displayed();
}

namespace {

constexpr unsigned kTabWidth = 4;

/// The source line holding `loc`, without its line break.
llvm::StringRef lineAt(const llvm::SourceMgr &sources, llvm::SMLoc loc, unsigned *lineNo) {
  unsigned buffer = sources.FindBufferContainingLoc(loc);
  const llvm::MemoryBuffer *mb = sources.getMemoryBuffer(buffer);
  const char *begin = mb->getBufferStart();
  const char *end = mb->getBufferEnd();
  const char *p = loc.getPointer();
  const char *lineBegin = p;
  while (lineBegin > begin && lineBegin[-1] != '\n' && lineBegin[-1] != '\r')
    --lineBegin;
  const char *lineEnd = p;
  while (lineEnd < end && *lineEnd != '\n' && *lineEnd != '\r')
    ++lineEnd;
  if (lineNo)
    *lineNo = sources.FindLineNumber(loc, buffer);
  return llvm::StringRef(lineBegin, lineEnd - lineBegin);
}

/// The on-screen column of byte `offset` of `line`: tabs expand, UTF-8
/// continuation bytes take no room.
unsigned displayColumn(llvm::StringRef line, size_t offset) {
  unsigned col = 0;
  for (size_t i = 0; i < offset && i < line.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if (c == '\t')
      col = (col / kTabWidth + 1) * kTabWidth;
    else if ((c & 0xC0) != 0x80)
      ++col;
  }
  return col;
}

std::string expandTabs(llvm::StringRef line) {
  std::string out;
  unsigned col = 0;
  for (char c : line) {
    if (c == '\t') {
      unsigned next = (col / kTabWidth + 1) * kTabWidth;
      out.append(next - col, ' ');
      col = next;
    } else {
      out.push_back(c);
      if ((static_cast<unsigned char>(c) & 0xC0) != 0x80)
        ++col;
    }
  }
  return out;
}

struct Span {
  unsigned begin = 0; // display columns, [begin, end)
  unsigned end = 0;
  bool primary = false;
  std::string label;
};

} // namespace

void TextDiagnosticRenderer::header(llvm::SMLoc loc, Severity severity, llvm::StringRef code,
                                    llvm::StringRef message) {
  if (loc.isValid()) {
    unsigned buffer = sources_.FindBufferContainingLoc(loc);
    LineColumn lc = lineColumn(sources_, loc);
    if (color_)
      os_.changeColor(llvm::raw_ostream::SAVEDCOLOR, true);
    os_ << sources_.getMemoryBuffer(buffer)->getBufferIdentifier() << ":" << lc.line << ":"
        << lc.column << ": ";
  }
  if (color_) {
    auto colour = severity == Severity::Error     ? llvm::raw_ostream::RED
                  : severity == Severity::Warning ? llvm::raw_ostream::MAGENTA
                                                  : llvm::raw_ostream::CYAN;
    os_.changeColor(colour, true);
  }
  os_ << severityName(severity);
  if (!code.empty())
    os_ << "[" << code << "]";
  os_ << ":";
  if (color_)
    os_.changeColor(llvm::raw_ostream::SAVEDCOLOR, true);
  os_ << " " << message;
  if (color_)
    os_.resetColor();
  os_ << "\n";
}

void TextDiagnosticRenderer::snippet(const Diagnostic *diag, llvm::SMRange primary,
                                     llvm::StringRef primaryLabel) {
  if (!primary.Start.isValid())
    return;
  unsigned buffer = sources_.FindBufferContainingLoc(primary.Start);
  if (buffer == 0)
    return;

  // Spans grouped by the line they start on; each keeps the columns it
  // covers on that line (a span running past its line stops at the end).
  std::map<unsigned, std::pair<llvm::StringRef, std::vector<Span>>> lines;
  auto add = [&](llvm::SMRange range, bool isPrimary, llvm::StringRef label) {
    if (!range.Start.isValid() || sources_.FindBufferContainingLoc(range.Start) != buffer)
      return;
    unsigned lineNo = 0;
    llvm::StringRef line = lineAt(sources_, range.Start, &lineNo);
    size_t beginOff = range.Start.getPointer() - line.data();
    size_t endOff = line.size();
    if (range.End.isValid() && range.End.getPointer() >= range.Start.getPointer() &&
        range.End.getPointer() <= line.end())
      endOff = range.End.getPointer() - line.data();
    Span span;
    span.begin = displayColumn(line, beginOff);
    span.end = std::max(span.begin + 1, displayColumn(line, endOff));
    span.primary = isPrimary;
    span.label = label.str();
    auto &entry = lines[lineNo];
    entry.first = line;
    entry.second.push_back(std::move(span));
  };
  add(primary, true, primaryLabel);
  if (diag)
    for (const DiagLabel &label : diag->secondary)
      add(label.range, false, label.message);

  unsigned width = 5;
  if (!lines.empty())
    width = std::max<unsigned>(width, std::to_string(lines.rbegin()->first).size() + 1);
  auto gutter = [&](std::optional<unsigned> lineNo) {
    if (color_)
      os_.changeColor(llvm::raw_ostream::BLUE, true);
    std::string number = lineNo ? std::to_string(*lineNo) : "";
    os_.indent(width - number.size()) << number << " |";
    if (color_)
      os_.resetColor();
  };
  auto markerColour = [&](bool isPrimary) {
    if (!color_)
      return;
    os_.changeColor(isPrimary ? (diag && diag->severity == Severity::Warning
                                     ? llvm::raw_ostream::MAGENTA
                                     : llvm::raw_ostream::RED)
                              : llvm::raw_ostream::BLUE,
                    true);
  };

  unsigned previous = 0;
  for (auto &[lineNo, entry] : lines) {
    auto &[line, spans] = entry;
    if (previous != 0 && lineNo > previous + 1) {
      os_ << "...\n";
    }
    previous = lineNo;
    gutter(lineNo);
    os_ << " " << expandTabs(line) << "\n";

    // Marker row: secondary spans first, primary drawn over them.
    unsigned rowEnd = 0;
    for (const Span &s : spans)
      rowEnd = std::max(rowEnd, s.end);
    std::string row(rowEnd, ' ');
    std::vector<bool> rowPrimary(rowEnd, false);
    for (int pass = 0; pass < 2; ++pass)
      for (const Span &s : spans)
        if (s.primary == (pass == 1))
          for (unsigned c = s.begin; c < s.end; ++c) {
            row[c] = s.primary && c == s.begin ? '^' : '~';
            rowPrimary[c] = s.primary;
          }
    // The primary span's first column is the caret; the rest are tildes.
    std::vector<const Span *> labelled;
    for (const Span &s : spans)
      if (!s.label.empty())
        labelled.push_back(&s);
    std::sort(labelled.begin(), labelled.end(),
              [](const Span *a, const Span *b) { return a->begin < b->begin; });

    gutter(std::nullopt);
    os_ << " ";
    // Runs of markers of one kind share one colour change.
    size_t trimmed = row.find_last_not_of(' ');
    for (size_t c = 0; c < row.size() && c <= trimmed;) {
      size_t end = c + 1;
      while (end <= trimmed && (row[end] == ' ') == (row[c] == ' ') &&
             rowPrimary[end] == rowPrimary[c])
        ++end;
      if (row[c] != ' ')
        markerColour(rowPrimary[c]);
      os_ << llvm::StringRef(row).slice(c, end);
      if (row[c] != ' ' && color_)
        os_.resetColor();
      c = end;
    }
    // The rightmost label sits on the marker row when it starts at or after
    // every other span; the others hang below on connector lines.
    const Span *inline_ = nullptr;
    if (!labelled.empty()) {
      const Span *last = labelled.back();
      bool rightmost = std::all_of(spans.begin(), spans.end(),
                                   [&](const Span &s) { return s.begin <= last->begin; });
      if (rightmost) {
        inline_ = last;
        labelled.pop_back();
      }
    }
    if (inline_) {
      markerColour(inline_->primary);
      os_ << " " << inline_->label;
      if (color_)
        os_.resetColor();
    }
    os_ << "\n";
    while (!labelled.empty()) {
      // A connector row with a bar under every pending label...
      std::string bars;
      for (const Span *s : labelled) {
        if (bars.size() < s->begin)
          bars.append(s->begin - bars.size(), ' ');
        bars += '|';
      }
      gutter(std::nullopt);
      os_ << " " << bars << "\n";
      // ...then the rightmost pending label, with bars still under the rest.
      const Span *s = labelled.back();
      labelled.pop_back();
      std::string text;
      for (const Span *other : labelled) {
        if (text.size() < other->begin)
          text.append(other->begin - text.size(), ' ');
        text += '|';
      }
      if (text.size() < s->begin)
        text.append(s->begin - text.size(), ' ');
      gutter(std::nullopt);
      os_ << " " << text;
      markerColour(s->primary);
      os_ << s->label;
      if (color_)
        os_.resetColor();
      os_ << "\n";
    }
  }

  // Fix-its on the primary line: the replacement text under the spot it goes.
  if (diag)
    for (const DiagFixIt &fix : diag->fixits) {
      // A deletion has nothing to show under the line; its help says so.
      if (fix.replacement.empty() || !fix.range.Start.isValid() ||
          sources_.FindBufferContainingLoc(fix.range.Start) != buffer)
        continue;
      llvm::StringRef line = lineAt(sources_, fix.range.Start, nullptr);
      unsigned col = displayColumn(line, fix.range.Start.getPointer() - line.data());
      gutter(std::nullopt);
      os_ << " ";
      os_.indent(col);
      if (color_)
        os_.changeColor(llvm::raw_ostream::GREEN, true);
      os_ << fix.replacement << "\n";
      if (color_)
        os_.resetColor();
    }
}

void TextDiagnosticRenderer::handle(const Diagnostic &diag) {
  header(diag.primary.Start, diag.severity, diag.code(), diag.message);
  snippet(&diag, diag.primary, diag.primaryLabel);
  for (const DiagNote &note : diag.notes) {
    header(note.range.Start, Severity::Note, "", note.message);
    if (note.range.Start.isValid())
      snippet(nullptr, note.range, "");
  }
  for (const std::string &help : diag.helps) {
    if (color_)
      os_.changeColor(llvm::raw_ostream::GREEN, true);
    os_ << "help:";
    if (color_)
      os_.resetColor();
    os_ << " " << help << "\n";
  }
}

void TextDiagnosticRenderer::errorLimitReached(unsigned limit) {
  header({}, Severity::Error, "",
         "too many errors (" + std::to_string(limit) +
             "), stopping here; --error-limit=N shows more (0 for no limit)");
}

namespace {
llvm::json::Object jsonLocation(const llvm::SourceMgr &sources, llvm::SMRange range) {
  llvm::json::Object obj;
  if (!range.Start.isValid())
    return obj;
  unsigned buffer = sources.FindBufferContainingLoc(range.Start);
  LineColumn begin = lineColumn(sources, range.Start);
  LineColumn end = range.End.isValid() ? lineColumn(sources, range.End) : begin;
  obj["file"] = sources.getMemoryBuffer(buffer)->getBufferIdentifier().str();
  obj["line"] = begin.line;
  obj["column"] = begin.column;
  obj["end_line"] = end.line;
  obj["end_column"] = end.column;
  return obj;
}
} // namespace

void JsonDiagnosticRenderer::handle(const Diagnostic &diag) {
  llvm::json::Object obj = jsonLocation(sources_, diag.primary);
  obj["code"] = diag.code();
  obj["severity"] = severityName(diag.severity).str();
  obj["message"] = diag.message;
  if (!diag.primaryLabel.empty())
    obj["label"] = diag.primaryLabel;
  // Labels, notes and fix-its: a location plus one text field each.
  auto located = [&](const auto &items, auto range, auto text, const char *key) {
    llvm::json::Array out;
    for (const auto &item : items) {
      llvm::json::Object o = jsonLocation(sources_, range(item));
      o[key] = text(item);
      out.push_back(std::move(o));
    }
    return out;
  };
  obj["labels"] = located(
      diag.secondary, [](const DiagLabel &l) { return l.range; },
      [](const DiagLabel &l) { return l.message; }, "message");
  obj["notes"] = located(
      diag.notes, [](const DiagNote &n) { return n.range; },
      [](const DiagNote &n) { return n.message; }, "message");
  llvm::json::Array helps;
  for (const std::string &help : diag.helps)
    helps.push_back(help);
  obj["help"] = std::move(helps);
  obj["fixits"] = located(
      diag.fixits, [](const DiagFixIt &f) { return f.range; },
      [](const DiagFixIt &f) { return f.replacement; }, "replacement");
  os_ << llvm::json::Value(std::move(obj)) << "\n";
}

void JsonDiagnosticRenderer::errorLimitReached(unsigned limit) {
  llvm::json::Object obj;
  obj["severity"] = "error";
  obj["code"] = "";
  obj["message"] = "too many errors (" + std::to_string(limit) + "), stopping here";
  os_ << llvm::json::Value(std::move(obj)) << "\n";
}

bool printExplanation(llvm::StringRef code, llvm::raw_ostream &os) {
  const DiagKindInfo *info = findDiagKind(code);
  if (!info)
    return false;
  os << info->code << " (" << severityName(info->severity) << "): " << info->format << "\n\n"
     << info->explanation;
  return true;
}

} // namespace lpu
