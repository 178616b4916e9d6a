// The document algebra of the layout engine (Wadler's "A prettier printer",
// with Prettier's extensions). A document describes every layout a piece of
// code may take; the printer picks one for a given width. Nothing here knows
// about any programming language.
//
// Documents live in an arena and are named by small integer ids. A node's
// children are always created before it, so one forward pass over the arena
// settles which groups must break (see DocArena::propagateBreaks).
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lpu::format {

/// A document: an index into its DocArena.
struct Doc {
  uint32_t id = 0; // 0 is the empty document
  bool operator==(const Doc &) const = default;
};

enum class DocKind : uint8_t {
  Empty,
  Text,        // literal text; may hold newlines only when verbatim (comments, off regions)
  Line,        // a space when flat, a newline when broken
  SoftLine,    // nothing when flat, a newline when broken
  HardLine,    // always a newline; breaks every enclosing group
  FreshLine,   // a newline unless the current line holds nothing but indentation
  Concat,      // children one after another
  Group,       // flat if it fits in the remaining width, else broken
  Indent,      // children one indentation step deeper
  Align,       // children `amount` columns deeper
  Fill,        // [content, separator, content, ...]: break only separators that must
  IfBreak,     // first child if the enclosing group is broken, else second
  LineSuffix,  // text held back until the next newline (trailing line comments)
  LineSuffixBoundary, // a newline if line-suffix text is pending, else nothing
  BreakParent, // forces every enclosing group to break
};

/// A node holds no heap memory of its own: its text lives in the arena's
/// character pool, its children in the arena's child list. Formatting a
/// large file builds a few hundred thousand nodes.
struct DocNode {
  DocKind kind = DocKind::Empty;
  bool containsHardBreak = false; // set by propagateBreaks for this subtree
  bool forceBreak = false;        // groups only: break regardless of width
  bool multiline = false;         // Text, LineSuffix: the text holds a line break
  // Concat/Fill/IfBreak/Group/...: children in DocArena::kids. Text and
  // LineSuffix: the text's range in DocArena's character pool.
  uint32_t first = 0, count = 0;
  // Text, LineSuffix: display width up to the first line break. Any other
  // kind, after propagateBreaks: the width of the whole subtree printed
  // flat, or kNotFlat if printing it flat could end the line (a hard line, a
  // line suffix, a forced group, multi-line text). The printer measures and
  // prints such "simple" subtrees in one go.
  uint32_t width = 0;
  uint32_t amount = 0; // Align: columns
  uint32_t mark = 0;   // Text, LineSuffix: if not 0, the printer reports where it ends
};

constexpr uint32_t kNotFlat = UINT32_MAX;

/// Owns documents. Builders return ids; ids are only meaningful in the arena
/// that created them.
class DocArena {
public:
  DocArena();

  Doc text(llvm::StringRef s);
  Doc line();
  Doc softline();
  Doc hardline();
  Doc freshline();
  Doc breakParent();
  Doc concat(llvm::ArrayRef<Doc> parts);
  Doc group(Doc d, bool forceBreak = false);
  Doc indent(Doc d);
  Doc align(uint32_t columns, Doc d);
  Doc fill(llvm::ArrayRef<Doc> partsAndSeparators);
  Doc ifBreak(Doc broken, Doc flat = Doc{});
  Doc lineSuffix(llvm::StringRef s);
  /// Text (or a line suffix) whose end offset in the output the printer
  /// reports under `mark` (> 0): how a language finds a piece it printed.
  Doc markedText(llvm::StringRef s, uint32_t mark);
  Doc markedLineSuffix(llvm::StringRef s, uint32_t mark);
  Doc lineSuffixBoundary();
  /// `parts` with `separator` between neighbours.
  Doc join(Doc separator, llvm::ArrayRef<Doc> parts);

  /// Room for about `nodes` nodes, to avoid regrowing a large arena.
  void reserve(size_t nodes) {
    nodes_.reserve(nodes);
    kids_.reserve(nodes);
    pool_.reserve(nodes * 2);
  }

  const DocNode &node(Doc d) const { return nodes_[d.id]; }
  Doc sharedHardline() const { return hardline_; }
  const Doc *children(Doc d) const { return children(nodes_[d.id]); }
  const Doc *children(const DocNode &n) const {
    bool hasText = n.kind == DocKind::Text || n.kind == DocKind::LineSuffix;
    return hasText ? nullptr : kids_.data() + n.first;
  }
  /// The text of a Text or LineSuffix node.
  llvm::StringRef textOf(const DocNode &n) const {
    return llvm::StringRef(pool_.data() + n.first, n.count);
  }
  size_t size() const { return nodes_.size(); }
  /// The characters of all texts together.
  size_t textSize() const { return pool_.size(); }

  /// Marks groups that contain a hard line or break-parent as broken, and
  /// computes each subtree's flat width (DocNode::width). The printer calls
  /// it; it is linear in the arena size.
  void propagateBreaks();
  /// The flat width of a subtree (kNotFlat if it cannot print flat as one
  /// run of text); valid after propagateBreaks.
  uint32_t flatWidth(const DocNode &n) const {
    if (n.kind == DocKind::Text)
      return n.multiline ? kNotFlat : n.width;
    return n.width;
  }

private:
  Doc add(DocNode n, llvm::ArrayRef<Doc> children = {});
  DocNode textNode(DocKind kind, llvm::StringRef s);

  std::vector<DocNode> nodes_;
  std::vector<Doc> kids_;
  std::string pool_; // the characters of every Text and LineSuffix
  Doc line_, softline_, hardline_, freshline_, breakParent_, suffixBoundary_, space_;
};

/// Debug form of a document, e.g. `group(["a", line, "b"])`; used by tests.
std::string dumpDoc(const DocArena &arena, Doc d);

} // namespace lpu::format
