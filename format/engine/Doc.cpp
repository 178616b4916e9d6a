#include "format/engine/Doc.h"

#include <llvm/ADT/Twine.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>

namespace lpu::format {

static DocNode make(DocKind kind) {
  DocNode n;
  n.kind = kind;
  return n;
}

DocArena::DocArena() {
  nodes_.push_back(DocNode{}); // id 0: the empty document
  // The leaf documents without payload are shared.
  line_ = add(make(DocKind::Line));
  softline_ = add(make(DocKind::SoftLine));
  hardline_ = add(make(DocKind::HardLine));
  freshline_ = add(make(DocKind::FreshLine));
  breakParent_ = add(make(DocKind::BreakParent));
  suffixBoundary_ = add(make(DocKind::LineSuffixBoundary));
  space_ = add(textNode(DocKind::Text, " "));
}

/// Display width of UTF-8 text: code points, not bytes.
static uint32_t displayWidth(llvm::StringRef s) {
  uint32_t w = 0;
  for (unsigned char c : s)
    w += (c & 0xC0) != 0x80;
  return w;
}

DocNode DocArena::textNode(DocKind kind, llvm::StringRef s) {
  DocNode n = make(kind);
  n.first = static_cast<uint32_t>(pool_.size());
  n.count = static_cast<uint32_t>(s.size());
  pool_.append(s.data(), s.size());
  size_t nl = s.find('\n');
  n.multiline = nl != llvm::StringRef::npos;
  n.width = displayWidth(s.substr(0, nl));
  return n;
}

Doc DocArena::add(DocNode n, llvm::ArrayRef<Doc> children) {
  if (n.kind != DocKind::Text && n.kind != DocKind::LineSuffix) { // those hold a text range
    n.first = static_cast<uint32_t>(kids_.size());
    n.count = static_cast<uint32_t>(children.size());
    kids_.insert(kids_.end(), children.begin(), children.end());
  }
  nodes_.push_back(std::move(n));
  return Doc{static_cast<uint32_t>(nodes_.size() - 1)};
}

Doc DocArena::text(llvm::StringRef s) {
  if (s.empty())
    return Doc{};
  if (s == " ") // the separator rules use most
    return space_;
  return add(textNode(DocKind::Text, s));
}

Doc DocArena::line() { return line_; }
Doc DocArena::softline() { return softline_; }
Doc DocArena::hardline() { return hardline_; }
Doc DocArena::freshline() { return freshline_; }
Doc DocArena::breakParent() { return breakParent_; }
Doc DocArena::lineSuffixBoundary() { return suffixBoundary_; }

Doc DocArena::concat(llvm::ArrayRef<Doc> parts) {
  // Dropping empties keeps the arena small: rules concatenate a lot of
  // optional pieces.
  uint32_t kept = 0;
  Doc only;
  for (Doc d : parts)
    if (d.id != 0) {
      ++kept;
      only = d;
    }
  if (kept <= 1)
    return only;
  DocNode n = make(DocKind::Concat);
  n.first = static_cast<uint32_t>(kids_.size());
  n.count = kept;
  for (Doc d : parts)
    if (d.id != 0)
      kids_.push_back(d);
  nodes_.push_back(std::move(n));
  return Doc{static_cast<uint32_t>(nodes_.size() - 1)};
}

Doc DocArena::group(Doc d, bool forceBreak) {
  DocNode n = make(DocKind::Group);
  n.forceBreak = forceBreak;
  return add(std::move(n), {d});
}

Doc DocArena::indent(Doc d) { return add(make(DocKind::Indent), {d}); }

Doc DocArena::align(uint32_t columns, Doc d) {
  DocNode n = make(DocKind::Align);
  n.amount = columns;
  return add(std::move(n), {d});
}

Doc DocArena::fill(llvm::ArrayRef<Doc> partsAndSeparators) {
  return add(make(DocKind::Fill), partsAndSeparators);
}

Doc DocArena::ifBreak(Doc broken, Doc flat) { return add(make(DocKind::IfBreak), {broken, flat}); }

Doc DocArena::lineSuffix(llvm::StringRef s) {
  return add(textNode(DocKind::LineSuffix, s));
}

Doc DocArena::markedText(llvm::StringRef s, uint32_t mark) {
  DocNode n = textNode(DocKind::Text, s);
  n.mark = mark;
  return add(n);
}

Doc DocArena::markedLineSuffix(llvm::StringRef s, uint32_t mark) {
  DocNode n = textNode(DocKind::LineSuffix, s);
  n.mark = mark;
  return add(n);
}

Doc DocArena::join(Doc separator, llvm::ArrayRef<Doc> parts) {
  std::vector<Doc> all;
  all.reserve(parts.size() * 2);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i)
      all.push_back(separator);
    all.push_back(parts[i]);
  }
  return concat(all);
}

void DocArena::propagateBreaks() {
  // Children precede parents in the arena, so one forward pass suffices.
  constexpr uint64_t kCap = 1u << 30; // wider than any line, far from overflow
  for (DocNode &n : nodes_) {
    const Doc *kids = children(n);
    bool hard = n.kind == DocKind::HardLine || n.kind == DocKind::FreshLine ||
                n.kind == DocKind::BreakParent ||
                (n.kind == DocKind::Text && n.multiline);
    if (n.kind == DocKind::Text || n.kind == DocKind::LineSuffix) {
      n.containsHardBreak = hard; // no children; their width is their text's
      continue;
    }
    for (uint32_t i = 0; i < n.count && !hard; ++i)
      hard = nodes_[kids[i].id].containsHardBreak;
    n.containsHardBreak = hard;
    if (n.kind == DocKind::Group && hard)
      n.forceBreak = true;
    uint64_t w = 0;
    switch (n.kind) {
    case DocKind::Empty:
    case DocKind::SoftLine: w = 0; break;
    case DocKind::Line: w = 1; break;
    case DocKind::HardLine:
    case DocKind::FreshLine:
    case DocKind::BreakParent:
    case DocKind::LineSuffixBoundary: w = kNotFlat; break;
    case DocKind::Group:
      w = n.forceBreak ? kNotFlat : flatWidth(nodes_[kids[0].id]);
      break;
    case DocKind::Indent:
    case DocKind::Align: w = flatWidth(nodes_[kids[0].id]); break;
    case DocKind::IfBreak: w = flatWidth(nodes_[kids[1].id]); break;
    case DocKind::Concat:
    case DocKind::Fill:
      for (uint32_t i = 0; i < n.count && w != kNotFlat; ++i) {
        uint32_t k = flatWidth(nodes_[kids[i].id]);
        w = k == kNotFlat ? kNotFlat : std::min<uint64_t>(w + k, kCap);
      }
      break;
    case DocKind::Text:
    case DocKind::LineSuffix: break;
    }
    n.width = static_cast<uint32_t>(w);
  }
}

static void dumpInto(const DocArena &arena, Doc d, llvm::raw_ostream &os) {
  const DocNode &n = arena.node(d);
  const Doc *kids = arena.children(d);
  auto list = [&](llvm::StringRef name) {
    os << name << "([";
    for (uint32_t i = 0; i < n.count; ++i) {
      if (i)
        os << ", ";
      dumpInto(arena, kids[i], os);
    }
    os << "])";
  };
  switch (n.kind) {
  case DocKind::Empty: os << "\"\""; break;
  case DocKind::Text: os << '"'; os.write_escaped(arena.textOf(n)); os << '"'; break;
  case DocKind::Line: os << "line"; break;
  case DocKind::SoftLine: os << "softline"; break;
  case DocKind::HardLine: os << "hardline"; break;
  case DocKind::FreshLine: os << "freshline"; break;
  case DocKind::BreakParent: os << "breakParent"; break;
  case DocKind::LineSuffixBoundary: os << "lineSuffixBoundary"; break;
  case DocKind::LineSuffix: os << "lineSuffix(\""; os.write_escaped(arena.textOf(n)); os << "\")"; break;
  case DocKind::Concat: list(""); break;
  case DocKind::Fill: list("fill"); break;
  case DocKind::IfBreak: list("ifBreak"); break;
  case DocKind::Group: list(n.forceBreak ? "group!" : "group"); break;
  case DocKind::Indent: list("indent"); break;
  case DocKind::Align: list(("align" + llvm::Twine(n.amount)).str()); break;
  }
}

std::string dumpDoc(const DocArena &arena, Doc d) {
  std::string s;
  llvm::raw_string_ostream os(s);
  dumpInto(arena, d, os);
  return os.str();
}

} // namespace lpu::format
