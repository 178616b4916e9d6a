// The canonical .lpu style as document templates, one per grammar rule.
// Most rules are token sequences whose spacing follows from the neighbouring
// tokens (`spaced`); the rest are the structures that can break: brace
// blocks, bracketed comma lists, operator chains and `where` clauses.
//
// Style: blocks always open onto new lines; a bracketed list stays on one
// line if it fits, else one element per line with a trailing comma; an
// operator chain that does not fit breaks after its operators; `where` moves
// to its own line when the signature does not fit.
#include "format/lpu/LpuLanguage.h"

#include "LPUParser.h"

namespace lpu::format {
namespace {

using P = lpu_antlr::LPUParser;

bool isClosing(int kind) { return kind == P::RPAREN || kind == P::RBRACK || kind == P::RBRACE; }

/// Whether a space goes between two neighbouring tokens inside the simple
/// rules (the rules below handle every place where this would be wrong).
bool spaceBetween(int prev, int next) {
  if (next == P::COMMA || next == P::COLON || next == P::DOT || next == P::DOTDOT ||
      isClosing(next))
    return false;
  if (prev == P::LPAREN || prev == P::LBRACK || prev == P::DOT || prev == P::DOTDOT ||
      prev == P::BANG)
    return false;
  // Generic arguments and dimensions hug the name they follow: nn.Linear<D>, f16[B].
  if ((next == P::LT || next == P::LBRACK) && (prev == P::IDENT || prev == P::GT))
    return false;
  return true;
}

Doc gap(FormatContext &cx, uint32_t prevLast, Doc normal) { return cx.gapAfter(prevLast, normal); }

bool startsWithOwnLineComment(const FormatContext &cx, uint32_t token) {
  const Token &t = cx.tree().tokens[token];
  return cx.hasLeadingComments(token) && cx.tree().comments[t.leadBegin].ownLine;
}

Doc spaced(FormatContext &cx, uint32_t node) {
  llvm::SmallVector<Doc, 16> parts;
  uint32_t prevLast = UINT32_MAX;
  for (SyntaxChild c : cx.childrenOf(node)) {
    uint32_t first = cx.firstToken(c);
    if (first == UINT32_MAX)
      continue;
    if (prevLast != UINT32_MAX && startsWithOwnLineComment(cx, first)) {
      // `let x =` then a comment on its own line: the comment and the value
      // go on the following lines, one level deeper.
      parts.push_back(cx.doc().indent(cx.child(c)));
      prevLast = cx.lastToken(c);
      continue;
    }
    if (prevLast != UINT32_MAX)
      parts.push_back(gap(cx, prevLast,
                          spaceBetween(cx.tree().tokens[prevLast].kind, cx.tree().tokens[first].kind)
                              ? cx.doc().text(" ")
                              : Doc{}));
    parts.push_back(cx.child(c));
    prevLast = cx.lastToken(c);
  }
  return cx.doc().concat(parts);
}

Doc tight(FormatContext &cx, uint32_t node) {
  llvm::SmallVector<Doc, 16> parts;
  uint32_t prevLast = UINT32_MAX;
  for (SyntaxChild c : cx.childrenOf(node)) {
    uint32_t first = cx.firstToken(c);
    if (first == UINT32_MAX)
      continue;
    // `x.` or `-` then a comment on its own line: the comment and the rest
    // continue one level deeper, as a broken operator chain does.
    if (prevLast != UINT32_MAX && startsWithOwnLineComment(cx, first))
      parts.push_back(cx.doc().indent(cx.child(c)));
    else {
      parts.push_back(gap(cx, prevLast, Doc{}));
      parts.push_back(cx.child(c));
    }
    prevLast = cx.lastToken(c);
  }
  return cx.doc().concat(parts);
}

bool isToken(const SyntaxChild &c, const FormatContext &cx, int kind) {
  return !c.isNode && cx.tree().tokens[c.index].kind == kind;
}

/// `open elem, elem, ... close` from kids[openAt] to the matching close at
/// kids[closeAt]: flat if it fits, else one element per line with a
/// trailing comma. A trailing comma in the input is dropped (its comments
/// are kept).
/// Lists of plain values (`[0, 2, 1, 3]`, `{128, 256}`) fill lines instead of
/// taking one line per element.
bool fillable(FormatContext &cx, llvm::ArrayRef<SyntaxChild> kids, size_t openAt,
              size_t closeAt) {
  for (size_t k = openAt + 1; k < closeAt; ++k) {
    uint32_t first = cx.firstToken(kids[k]), last = cx.lastToken(kids[k]);
    if (first == UINT32_MAX || last > first + 1 || cx.hasLeadingComments(first))
      return false;
    const Token &t = cx.tree().tokens[last];
    if (t.trailEnd > t.trailBegin)
      return false;
  }
  return closeAt > openAt + 1;
}

Doc commaList(FormatContext &cx, llvm::ArrayRef<SyntaxChild> kids, size_t openAt,
              size_t closeAt, bool mayFill = false, bool ownGroup = true) {
  DocArena &d = cx.doc();
  uint32_t open = kids[openAt].index, close = kids[closeAt].index;
  if (closeAt == openAt + 1 && !cx.hasLeadingComments(close) && !cx.endsWithLineComment(open))
    return d.concat({cx.token(open), cx.token(close)});
  bool fill = mayFill && fillable(cx, kids, openAt, closeAt);
  llvm::SmallVector<Doc, 16> parts;
  Doc dropped;
  for (size_t k = openAt + 1; k < closeAt; ++k) {
    if (!isToken(kids[k], cx, P::COMMA)) {
      parts.push_back(cx.child(kids[k]));
    } else if (k + 1 == closeAt) {
      dropped = cx.dropToken(kids[k].index);
    } else if (fill) {
      parts.push_back(d.concat({cx.token(kids[k].index), d.line()})); // a fill separator
    } else {
      parts.push_back(cx.token(kids[k].index));
      parts.push_back(d.line());
    }
  }
  if (fill)
    parts = {d.fill(parts)};
  if (closeAt > openAt + 1) {
    parts.push_back(d.ifBreak(d.text(","), Doc{}));
    parts.push_back(dropped);
  }
  if (cx.hasLeadingComments(close))
    parts.push_back(cx.leadingComments(close));
  // `( /* why */ x`: a block comment trailing the bracket keeps a blank
  // after it when the list is flat.
  const Token &openToken = cx.tree().tokens[open];
  Doc first = openToken.trailEnd > openToken.trailBegin ? d.line() : d.softline();
  Doc list = d.concat({cx.token(open), d.indent(d.concat({first, d.concat(parts)})),
                       d.softline(), cx.token(close)});
  return ownGroup ? d.group(list) : list;
}

size_t findToken(FormatContext &cx, llvm::ArrayRef<SyntaxChild> kids, int kind, size_t from = 0) {
  for (size_t k = from; k < kids.size(); ++k)
    if (isToken(kids[k], cx, kind))
      return k;
  return kids.size();
}

/// `{ items }` with items one per line; `{}` when empty.
Doc braceBlock(FormatContext &cx, llvm::ArrayRef<SyntaxChild> kids, size_t openAt) {
  DocArena &d = cx.doc();
  size_t closeAt = kids.size() - 1;
  uint32_t open = kids[openAt].index, close = kids[closeAt].index;
  llvm::ArrayRef<SyntaxChild> items = kids.slice(openAt + 1, closeAt - openAt - 1);
  if (items.empty() && !cx.hasLeadingComments(close) && !cx.endsWithLineComment(open))
    return d.concat({cx.token(open), cx.token(close)});
  Doc openDoc = cx.token(open);
  Doc body = cx.lines(items, close);
  return d.concat({openDoc, d.indent(d.concat({d.hardline(), body})), d.hardline(), cx.token(close)});
}

// ---------------------------------------------------------------- rules

Doc moduleRule(FormatContext &cx, uint32_t node) {
  DocArena &d = cx.doc();
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  uint32_t eof = kids.back().index;
  kids = kids.drop_back();
  bool empty = kids.empty() && !cx.hasLeadingComments(eof);
  Doc body = cx.lines(kids, eof);
  // The file ends with one newline, and only an empty file stays empty: lpuc
  // rejects a file with no bytes (E0007) but compiles one of blanks, so
  // emptying it would change whether it compiles.
  bool keepEmpty = empty && cx.tree().source.empty();
  return d.concat({body, cx.token(eof), keepEmpty ? Doc{} : d.hardline()});
}

Doc blockRule(FormatContext &cx, uint32_t node) { return braceBlock(cx, cx.childrenOf(node), 0); }

/// Pieces in order, each after a chosen separator; the separator after a
/// token carrying a line comment becomes a line break (see gap).
class Seq {
public:
  /// `deepenComments`: whether a piece led by an own-line comment goes one
  /// level deeper (not where the pieces are indented already).
  explicit Seq(FormatContext &cx, bool deepenComments = true)
      : cx_(cx), deepenComments_(deepenComments) {}
  Seq &add(SyntaxChild c, Doc before = Doc{}) {
    uint32_t first = cx_.firstToken(c);
    if (first == UINT32_MAX)
      return *this;
    if (deepenComments_ && !parts_.empty() && startsWithOwnLineComment(cx_, first)) {
      // A comment on its own line before a later piece: the comment and the
      // piece continue one level deeper, not at the enclosing indentation.
      parts_.push_back(cx_.doc().indent(cx_.child(c)));
      prevLast_ = cx_.lastToken(c);
      return *this;
    }
    return add(cx_.child(c), cx_.lastToken(c), before);
  }
  Seq &add(Doc piece, uint32_t lastToken, Doc before = Doc{}) {
    if (!parts_.empty())
      parts_.push_back(gap(cx_, prevLast_, before));
    parts_.push_back(piece);
    prevLast_ = lastToken;
    return *this;
  }
  uint32_t prevLast() const { return prevLast_; }
  Doc done() { return cx_.doc().concat(parts_); }

private:
  FormatContext &cx_;
  bool deepenComments_;
  llvm::SmallVector<Doc, 16> parts_;
  uint32_t prevLast_ = UINT32_MAX;
};

Doc modelRule(FormatContext &cx, uint32_t node) {
  DocArena &d = cx.doc();
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  size_t brace = findToken(cx, kids, P::LBRACE);
  Seq seq(cx);
  for (size_t k = 0; k < brace; ++k)
    seq.add(kids[k], k == 1 ? d.text(" ") : Doc{});
  seq.add(braceBlock(cx, kids, brace), kids.back().index, d.text(" "));
  return seq.done();
}

Doc fnRule(FormatContext &cx, uint32_t node) {
  DocArena &d = cx.doc();
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  Seq seq(cx);
  seq.add(kids[0]).add(kids[1], d.text(" "));
  size_t k = 2;
  if (kids[k].isNode) // generic parameters
    seq.add(kids[k++]);
  // The parameter list and the result type form one group, so a signature
  // too long for a line breaks its parameters, not the result's dimensions:
  //   fn f(
  //     x: f16[B, S],
  //   ) -> f16[B, S] {
  size_t close = findToken(cx, kids, P::RPAREN, k);
  Seq signature(cx);
  signature.add(commaList(cx, kids, k, close, /*mayFill=*/false, /*ownGroup=*/false),
                kids[close].index);
  k = close + 1;
  signature.add(kids[k++], d.text(" ")); // ->
  signature.add(kids[k], d.text(" "));   // result type
  seq.add(d.group(signature.done()), cx.lastToken(kids[k++]));
  if (k + 1 < kids.size()) {       // where clause
    bool mustBreak = cx.endsWithLineComment(seq.prevLast());
    Doc where = cx.child(kids[k]);
    seq.add(d.group(d.indent(d.concat({d.line(), where})), mustBreak), cx.lastToken(kids[k]));
    ++k;
  }
  seq.add(kids[k], d.text(" ")); // body
  return seq.done();
}

Doc whereRule(FormatContext &cx, uint32_t node) {
  DocArena &d = cx.doc();
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  Seq seq(cx, /*deepenComments=*/false); // inside the clause's indent
  for (size_t k = 0; k < kids.size(); ++k) {
    Doc before = k == 1 ? d.text(" ") : isToken(kids[k], cx, P::COMMA) || k == 0 ? Doc{} : d.line();
    seq.add(kids[k], before);
  }
  return d.group(d.indent(seq.done()));
}

/// A rule whose first bracket (of `openKind`) opens a comma list closing at
/// the last child, e.g. `min(a, b)`, `[a, b]`, `<B, S>`, `S in {1, 2}`.
template <int OpenKind> Doc listRule(FormatContext &cx, uint32_t node) {
  DocArena &d = cx.doc();
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  size_t open = findToken(cx, kids, OpenKind);
  if (open == kids.size())
    return spaced(cx, node);
  Seq seq(cx);
  // `S in {..}` is spaced; `name<..>`, `name(..)` and `<..>(..)` are tight.
  for (size_t k = 0; k < open; ++k)
    seq.add(kids[k], k > 0 ? d.text(" ") : Doc{});
  seq.add(commaList(cx, kids, open, kids.size() - 1, OpenKind == P::LBRACE), kids.back().index,
          OpenKind == P::LBRACE ? d.text(" ") : Doc{});
  return seq.done();
}

Doc genericArgRule(FormatContext &cx, uint32_t node) {
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  if (findToken(cx, kids, P::LBRACE) != kids.size())
    return listRule<P::LBRACE>(cx, node);
  return spaced(cx, node);
}

/// The precedence level of a binary `expr` node (operands at kids 0 and 2),
/// or 0 for any other shape. Nodes of one level chain: `a + b - c`.
int binaryLevel(FormatContext &cx, uint32_t node) {
  const SyntaxNode &n = cx.tree().nodes[node];
  if (n.kind != P::RuleExpr && n.kind != P::RuleSizeExpr)
    return 0;
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  if (kids.size() != 3)
    return 0;
  if (kids[1].isNode)
    return cx.tree().nodes[kids[1].index].kind == P::RuleCompareOp ? 3 : 0;
  switch (cx.tree().tokens[kids[1].index].kind) {
  case P::STAR:
  case P::SLASH:
  case P::PERCENT:
  case P::AT: return 1;
  case P::PLUS:
  case P::MINUS: return 2;
  case P::EQ:
  case P::NE:
  case P::LT:
  case P::LE:
  case P::GT:
  case P::GE: return 3; // a compareOp node folded into its token
  case P::ANDAND: return 4;
  case P::OROR: return 5;
  default: return 0; // `**` and the postfix forms are not chains
  }
}

/// The operands and operators of a left-nested chain of one level, in order.
void flattenChain(FormatContext &cx, uint32_t node, int level, std::vector<SyntaxChild> &out) {
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  if (kids[0].isNode && binaryLevel(cx, kids[0].index) == level)
    flattenChain(cx, kids[0].index, level, out);
  else
    out.push_back(kids[0]);
  out.push_back(kids[1]);
  out.push_back(kids[2]);
}

/// One alternative of the left-recursive `expr` or `sizeExpr` rule. Binary operators of
/// one level form one chain, flat or broken after each operator; calls and
/// indexing hug their callee; prefix operators hug their operand.
Doc exprRule(FormatContext &cx, uint32_t node) {
  DocArena &d = cx.doc();
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  if (kids.size() == 1)
    return cx.child(kids[0]);
  if (int level = binaryLevel(cx, node)) {
    std::vector<SyntaxChild> chain;
    flattenChain(cx, node, level, chain);
    Doc first = cx.child(chain[0]);
    Seq rest(cx, /*deepenComments=*/false); // inside the chain's indent
    rest.add(d.text(""), cx.lastToken(chain[0]));
    for (size_t k = 1; k + 1 < chain.size(); k += 2)
      rest.add(chain[k], d.text(" ")).add(chain[k + 1], d.line());
    return d.group(d.concat({first, d.indent(rest.done())}));
  }
  // Single-child nodes are folded into their child, so a callee may be a
  // bare token here: the shape is told by the operator tokens.
  bool prefix = kids.size() == 2 && (isToken(kids[0], cx, P::MINUS) || isToken(kids[0], cx, P::BANG));
  if (prefix || isToken(kids[1], cx, P::DOT))
    return tight(cx, node); // -x, !x, a.b
  if (isToken(kids[1], cx, P::LPAREN) || isToken(kids[1], cx, P::LBRACK)) {
    Seq seq(cx);
    seq.add(kids[0]);
    seq.add(commaList(cx, kids, 1, kids.size() - 1), kids.back().index);
    return seq.done();
  }
  return spaced(cx, node); // a ** b
}

Doc primaryRule(FormatContext &cx, uint32_t node) {
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  if (isToken(kids[0], cx, P::LBRACK))
    return commaList(cx, kids, 0, kids.size() - 1, /*mayFill=*/true);
  if (isToken(kids[0], cx, P::LPAREN) && findToken(cx, kids, P::COMMA) != kids.size())
    return commaList(cx, kids, 0, kids.size() - 1, /*mayFill=*/true); // a tuple
  size_t paren = findToken(cx, kids, P::LPAREN);
  if (isToken(kids[0], cx, P::IDENT) && paren != kids.size()) {
    // A generic call `nn.f<A>(x)`: name, generic arguments and list hug.
    Seq seq(cx);
    for (size_t k = 0; k < paren; ++k)
      seq.add(kids[k]);
    seq.add(commaList(cx, kids, paren, kids.size() - 1), kids.back().index);
    return seq.done();
  }
  return spaced(cx, node);
}

Doc constraintRule(FormatContext &cx, uint32_t node) {
  DocArena &d = cx.doc();
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  return Seq(cx).add(kids[0]).add(kids[1], d.text(" ")).add(kids[2], d.text(" ")).done();
}

Doc passThrough(FormatContext &cx, uint32_t node) {
  llvm::ArrayRef<SyntaxChild> kids = cx.childrenOf(node);
  return kids.size() == 1 ? cx.child(kids[0]) : spaced(cx, node);
}

} // namespace

const RuleTable &lpuRules() {
  static const RuleTable table{
      {
          {P::RuleModule, moduleRule},
          {P::RuleFnDecl, fnRule},
          {P::RuleModelDecl, modelRule},
          {P::RuleBlock, blockRule},
          {P::RuleWhereClause, whereRule},
          {P::RuleConstraint, constraintRule},
          {P::RuleGenericParams, listRule<P::LT>},
          {P::RuleGenericArgs, listRule<P::LT>},
          {P::RuleDims, listRule<P::LBRACK>},
          {P::RuleResultTuple, listRule<P::LPAREN>},
          {P::RuleGenericArg, genericArgRule},
          {P::RuleSizeExpr, exprRule},
          {P::RuleExpr, exprRule},
          {P::RuleIndexItem, tight},
          {P::RuleDottedName, tight},
          {P::RulePrimaryExpr, primaryRule},
      },
      passThrough};
  return table;
}

} // namespace lpu::format
