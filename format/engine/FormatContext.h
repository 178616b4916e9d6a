// The bridge between a language's syntax tree and the document algebra: a
// rules table maps node kinds to document templates, and the context gives
// rules the pieces every language needs: tokens printed with their comments,
// statement-like sequences with blank lines and `lpufmt: off` regions, and
// the bookkeeping that proves every token and comment was printed once.
#pragma once

#include "format/engine/Doc.h"
#include "format/engine/Syntax.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace lpu::format {

class FormatContext;

/// A document template for one node kind.
using Rule = Doc (*)(FormatContext &, uint32_t node);

struct RuleTable {
  std::unordered_map<int, Rule> byKind;
  Rule fallback = nullptr; // for kinds without an entry
};

class FormatContext {
public:
  FormatContext(const SyntaxTree &tree, const RuleTable &rules, DocArena &arena);

  DocArena &doc() { return arena_; }
  const SyntaxTree &tree() const { return tree_; }

  /// The document of a node, by its kind's rule.
  Doc node(uint32_t index);
  /// A node or a token.
  Doc child(SyntaxChild c);
  /// A token's text preceded by its leading comments and followed by its
  /// trailing ones (line comments as line suffixes).
  Doc token(uint32_t index);
  /// Only the comments of a token the style drops (e.g. a trailing comma).
  Doc dropToken(uint32_t index);
  /// The leading comments of `index` not printed yet, each on its own line,
  /// with no line break after the last one. Used to keep comments before a
  /// closing bracket inside the indented body.
  Doc leadingComments(uint32_t index);
  /// Whether a line comment trails token `index`. Rules put a
  /// line break after such a token where they would put a space, so that two
  /// line comments never land on one output line.
  bool endsWithLineComment(uint32_t index) const;
  /// `normal` (a space, or nothing) to put after token `prev`, unless a line
  /// comment trails `prev`: then a line break one level deeper, so that what
  /// follows cannot slide under that comment's line suffix.
  Doc gapAfter(uint32_t prev, Doc normal);
  /// Whether `index` still has leading comments to print.
  bool hasLeadingComments(uint32_t index) const;

  /// Items one per line: blank lines between items kept (one at most) but
  /// never before the first. `closeToken` (or UINT32_MAX) is the token after
  /// the sequence: its leading comments are printed as part of the sequence.
  /// `separators`, if given, holds for each item the token printed right
  /// after it (a comma), or UINT32_MAX.
  Doc lines(llvm::ArrayRef<SyntaxChild> items, uint32_t closeToken,
            const std::vector<uint32_t> *separators = nullptr);

  uint32_t firstToken(SyntaxChild c) const;
  uint32_t lastToken(SyntaxChild c) const;
  int kindOf(SyntaxChild c) const;
  llvm::ArrayRef<SyntaxChild> childrenOf(uint32_t node) const;

  /// After rendering: every token and comment printed exactly once? On
  /// failure `details` names the first offenders.
  bool verifyAllPrintedOnce(std::string &details) const;

  /// `lpufmt: off` regions: from the first byte of a comment reading
  /// `lpufmt: off` to the last byte of the next comment reading `lpufmt: on`
  /// (or to the end of the file). Rules format them like everything else;
  /// after printing, each region's output (located by the printer's marks
  /// on every token and comment) is replaced with the region's source
  /// bytes. As tokens and comments keep their order, the region holds the
  /// same tokens and comments either way, wherever it starts and ends:
  /// between declarations or inside an argument list. Where the style moves
  /// a token across a region's edge (a comma after an `on` line comment),
  /// the region grows to take that token in.
  bool hasOffRegions() const { return !regions_.empty(); }
  /// Replaces each region's formatted text in `output` with its source.
  /// Fails (with `details`) if a region's comments were not found in order.
  bool spliceOffRegions(std::string &output, const std::vector<uint32_t> &markEnds,
                        std::string &details) const;

private:
  Doc commentText(uint32_t comment);
  Doc trailingComments(uint32_t token);
  Doc commentSuffix(uint32_t comment);
  bool isOffComment(uint32_t comment) const;
  bool isOnComment(uint32_t comment) const;

  struct OffRegion {
    uint32_t off, on; // comment indices; `on` is UINT32_MAX: to the end of the file
  };
  std::vector<OffRegion> regions_;
  /// With regions, every token and comment is printed with a mark, so that
  /// the region's edges can be found in the output.
  uint32_t tokenMark(uint32_t token) const { return 1 + token; }
  uint32_t commentMark(uint32_t comment) const {
    return 1 + static_cast<uint32_t>(tree_.tokens.size()) + comment;
  }

  const SyntaxTree &tree_;
  const RuleTable &rules_;
  DocArena &arena_;
  std::vector<uint8_t> tokenUses_;
  std::vector<uint8_t> commentUses_;
  // Trailing comments of a node's last token are printed after the node's
  // whole document (outside its groups), so that `f(x) // why` does not
  // force the call's arguments onto separate lines.
  std::vector<uint8_t> trailingDeferred_;
  Doc avoidSharedLine(uint32_t token);
  std::vector<Rule> ruleByKind_; // rules_ as a dense table: node() runs for every node
};

} // namespace lpu::format
