#include "format/engine/Printer.h"

#include <initializer_list>
#include <iterator>
#include <vector>

namespace lpu::format {
namespace {

enum class Mode : uint8_t { Break, Flat };

struct Cmd {
  uint32_t indent;
  Mode mode;
  Doc doc;
  uint32_t fillStart = 0; // Fill: the first part still to print
  bool flushing = false;  // LineSuffix: being printed now, at a line end
};

/// Display width of UTF-8 text: code points, not bytes.
int displayWidth(llvm::StringRef s) {
  int w = 0;
  for (unsigned char c : s)
    w += (c & 0xC0) != 0x80;
  return w;
}

class Printer {
public:
  Printer(const DocArena &arena, const LayoutOptions &options, std::vector<uint32_t> *markEnds)
      : arena_(arena), opt_(options), markEnds_(markEnds) {}

  std::string run(Doc root, size_t expectedSize) {
    out_.reserve(expectedSize);
    cmds_.push_back({0, Mode::Break, root});
    while (!cmds_.empty() || !suffixes_.empty()) {
      if (cmds_.empty()) {
        flushSuffixes();
        continue;
      }
      Cmd c = cmds_.back();
      cmds_.pop_back();
      step(c);
    }
    return std::move(out_);
  }

private:
  void flushSuffixes() {
    for (auto it = suffixes_.rbegin(); it != suffixes_.rend(); ++it) {
      cmds_.push_back(*it);
      cmds_.back().flushing = true;
    }
    suffixes_.clear();
  }

  void recordMark(uint32_t mark) {
    if (!markEnds_)
      return;
    if (markEnds_->size() <= mark)
      markEnds_->resize(mark + 1, UINT32_MAX);
    (*markEnds_)[mark] = static_cast<uint32_t>(out_.size());
  }

  /// Text without a line break whose display width is known.
  void emitFlat(llvm::StringRef s, uint32_t width) {
    out_.append(s.data(), s.size());
    pos_ += static_cast<int>(width);
    lineHasContent_ = true;
  }

  void emitText(llvm::StringRef s) {
    out_ += s;
    size_t nl = s.rfind('\n');
    if (nl == llvm::StringRef::npos)
      pos_ += displayWidth(s);
    else
      pos_ = displayWidth(s.substr(nl + 1));
    lineHasContent_ = true;
  }

  void newline(uint32_t indent) {
    while (!out_.empty() && (out_.back() == ' ' || out_.back() == '\t'))
      out_.pop_back();
    out_ += '\n';
    out_.append(indent, ' ');
    pos_ = static_cast<int>(indent);
    lineHasContent_ = false;
  }

  /// A simple subtree (DocNode::width) in flat mode: its texts and spaces
  /// one after another, without the command stack's bookkeeping.
  void emitSimpleFlat(Doc root) {
    std::vector<Doc> &stack = flatStack_;
    stack.assign(1, root);
    while (!stack.empty()) {
      Doc d = stack.back();
      stack.pop_back();
      const DocNode &n = arena_.node(d);
      const Doc *kids = arena_.children(d);
      switch (n.kind) {
      case DocKind::Text:
        emitFlat(arena_.textOf(n), n.width);
        if (n.mark)
          recordMark(n.mark);
        break;
      case DocKind::Line: emitFlat(" ", 1); break;
      case DocKind::Concat:
      case DocKind::Fill:
        for (uint32_t i = n.count; i-- > 0;)
          stack.push_back(kids[i]);
        break;
      case DocKind::Group:
      case DocKind::Indent:
      case DocKind::Align: stack.push_back(kids[0]); break;
      case DocKind::IfBreak: stack.push_back(kids[1]); break;
      default: break; // empty, softline
      }
    }
  }

  void step(const Cmd &c) {
    const DocNode &n = arena_.node(c.doc);
    const Doc *kids = arena_.children(c.doc);
    if (c.mode == Mode::Flat && n.kind != DocKind::Text && c.fillStart == 0 &&
        arena_.flatWidth(n) != kNotFlat) {
      emitSimpleFlat(c.doc);
      return;
    }
    switch (n.kind) {
    case DocKind::Empty:
    case DocKind::BreakParent:
      break;
    case DocKind::Text:
      if (n.multiline)
        emitText(arena_.textOf(n));
      else
        emitFlat(arena_.textOf(n), n.width);
      if (n.mark)
        recordMark(n.mark);
      break;
    case DocKind::Concat:
      for (uint32_t i = n.count; i-- > 0;)
        cmds_.push_back({c.indent, c.mode, kids[i]});
      break;
    case DocKind::Indent:
      cmds_.push_back({c.indent + opt_.indent, c.mode, kids[0]});
      break;
    case DocKind::Align:
      cmds_.push_back({c.indent + n.amount, c.mode, kids[0]});
      break;
    case DocKind::Group: {
      if (c.mode == Mode::Flat && !n.forceBreak) {
        cmds_.push_back({c.indent, Mode::Flat, kids[0]});
        break;
      }
      Cmd flat{c.indent, Mode::Flat, kids[0]};
      bool useFlat = !n.forceBreak && fits({flat}, static_cast<int>(opt_.width) - pos_, /*mustBeFlat=*/false);
      cmds_.push_back(useFlat ? flat : Cmd{c.indent, Mode::Break, kids[0]});
      break;
    }
    case DocKind::Fill:
      stepFill(c, n, kids);
      break;
    case DocKind::IfBreak:
      cmds_.push_back({c.indent, c.mode, c.mode == Mode::Break ? kids[0] : kids[1]});
      break;
    case DocKind::LineSuffix:
      if (!c.flushing) {
        suffixes_.push_back(c);
        break;
      }
      // Its separating blank is not wanted at the start of a line.
      emitText(lineHasContent_ ? arena_.textOf(n) : arena_.textOf(n).ltrim(' '));
      if (n.mark)
        recordMark(n.mark);
      break;
    case DocKind::Line:
    case DocKind::SoftLine:
      if (c.mode == Mode::Flat) {
        if (n.kind == DocKind::Line)
          emitText(" ");
        break;
      }
      [[fallthrough]];
    case DocKind::HardLine:
      if (!suffixes_.empty()) {
        cmds_.push_back(c);
        flushSuffixes();
        break;
      }
      newline(c.indent);
      break;
    case DocKind::LineSuffixBoundary:
      if (!suffixes_.empty()) {
        cmds_.push_back({c.indent, Mode::Break, arena_.sharedHardline()});
        flushSuffixes();
      }
      break;
    case DocKind::FreshLine:
      if (!suffixes_.empty()) {
        cmds_.push_back(c);
        flushSuffixes();
        break;
      }
      if (lineHasContent_)
        newline(c.indent);
      break;
    }
  }

  // Prettier's fill: each content goes flat if it fits; a separator breaks
  // when the content after it would not fit on the line.
  void stepFill(const Cmd &c, const DocNode &n, const Doc *kids) {
    uint32_t i = c.fillStart;
    if (i >= n.count)
      return;
    int rem = static_cast<int>(opt_.width) - pos_;
    Cmd contentFlat{c.indent, Mode::Flat, kids[i]}, contentBreak{c.indent, Mode::Break, kids[i]};
    bool contentFits = fits({contentFlat}, rem, true);
    if (i + 1 >= n.count) {
      cmds_.push_back(contentFits ? contentFlat : contentBreak);
      return;
    }
    Cmd sepFlat{c.indent, Mode::Flat, kids[i + 1]}, sepBreak{c.indent, Mode::Break, kids[i + 1]};
    if (i + 2 >= n.count) {
      cmds_.push_back(contentFits ? sepFlat : sepBreak);
      cmds_.push_back(contentFits ? contentFlat : contentBreak);
      return;
    }
    Cmd rest = c;
    rest.fillStart = i + 2;
    Cmd nextFlat{c.indent, Mode::Flat, kids[i + 2]};
    bool bothFit = fits({contentFlat, sepFlat, nextFlat}, rem, true);
    cmds_.push_back(rest);
    if (bothFit) {
      cmds_.push_back(sepFlat);
      cmds_.push_back(contentFlat);
    } else {
      cmds_.push_back(sepBreak);
      cmds_.push_back(contentFits ? contentFlat : contentBreak);
    }
  }

  /// Whether `first` (in order), then the pending commands up to the next
  /// line break, fit in `width` columns.
  bool fits(std::initializer_list<Cmd> first, int width, bool mustBeFlat) {
    std::vector<Cmd> &stack = fitsStack_; // reused: fits runs once per group
    bool hasLineSuffix = !suffixes_.empty();
    stack.assign(std::rbegin(first), std::rend(first));
    size_t restIdx = cmds_.size();
    while (width >= 0) {
      if (stack.empty()) {
        if (mustBeFlat || restIdx == 0)
          return true;
        stack.push_back(cmds_[--restIdx]);
        continue;
      }
      Cmd c = stack.back();
      stack.pop_back();
      const DocNode &n = arena_.node(c.doc);
      const Doc *kids = arena_.children(c.doc);
      if (c.mode == Mode::Flat && c.fillStart == 0) {
        // A simple subtree is measured at once (its flat width).
        uint32_t w = arena_.flatWidth(n);
        if (w != kNotFlat) {
          width -= static_cast<int>(w);
          continue;
        }
      }
      switch (n.kind) {
      case DocKind::Empty:
      case DocKind::BreakParent:
        break;
      case DocKind::LineSuffix:
        hasLineSuffix = true;
        break;
      case DocKind::LineSuffixBoundary:
        if (hasLineSuffix)
          return true; // the line ends here
        break;
      case DocKind::Text: {
        width -= static_cast<int>(n.width);
        if (n.multiline)
          return width >= 0;
        break;
      }
      case DocKind::Concat:
        for (uint32_t i = n.count; i-- > 0;)
          stack.push_back({c.indent, c.mode, kids[i]});
        break;
      case DocKind::Fill:
        for (uint32_t i = n.count; i-- > c.fillStart;)
          stack.push_back({c.indent, c.mode, kids[i]});
        break;
      case DocKind::Indent:
      case DocKind::Align:
        stack.push_back({c.indent, c.mode, kids[0]});
        break;
      case DocKind::Group:
        if (mustBeFlat && n.forceBreak)
          return false;
        stack.push_back({c.indent, n.forceBreak ? Mode::Break : c.mode, kids[0]});
        break;
      case DocKind::IfBreak:
        stack.push_back({c.indent, c.mode, c.mode == Mode::Break ? kids[0] : kids[1]});
        break;
      case DocKind::Line:
      case DocKind::SoftLine:
        if (c.mode == Mode::Break)
          return true;
        if (n.kind == DocKind::Line)
          width -= 1;
        break;
      case DocKind::HardLine:
      case DocKind::FreshLine:
        return true;
      }
    }
    return false;
  }

  const DocArena &arena_;
  const LayoutOptions &opt_;
  std::vector<uint32_t> *markEnds_;
  std::vector<Cmd> cmds_;
  std::vector<Cmd> suffixes_;
  std::vector<Cmd> fitsStack_;
  std::vector<Doc> flatStack_;
  std::string out_;
  int pos_ = 0;
  bool lineHasContent_ = false;
};

} // namespace

std::string printDoc(DocArena &arena, Doc root, const LayoutOptions &options,
                     std::vector<uint32_t> *markEnds) {
  arena.propagateBreaks();
  // The texts' total, plus room for indentation and line breaks.
  return Printer(arena, options, markEnds).run(root, arena.textSize() * 2 + 64);
}

} // namespace lpu::format
