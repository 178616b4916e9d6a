// The hand-written .lpu parser (LpuParser.h says why it exists), over the
// tokens of LpuScanner. Each
// function below is one rule of grammar/LPU.g4 and says which; it adds the
// rule's tokens and sub-rules to the builder in the order ANTLR's parse tree
// holds them, then closes the node unless it holds a single child (which
// stands for it, as TreeConverter folds it in LpuLanguage.cpp).
//
// Where ANTLR's adaptive prediction looks further ahead, this parser decides
// as ANTLR resolves the same choice when the input is valid:
// - loops of postfix and binary operators continue greedily (ANTLR picks the
//   first alternative, "continue", when both readings are viable);
// - `name<...>(...)` is a generic call when it parses as one (the grammar
//   lists genericCall first, and it wins every ambiguity it is part of),
//   and so are `.name<...>(...)` and `[...]<...>(...)` after any
//   expression (memberGenericCall, indexExpr's optional generic tail);
// - a generic argument is a size unless it starts like a type (`[`, or a
//   name followed by `.`, `<` or `[`): a bare name is both, and sizeExpr is
//   listed first.
// Any input this parser rejects goes to ANTLR, whose answer is final; a
// choice made here that leads to a rejection therefore costs time, never a
// different tree.
#include "format/lpu/LpuParser.h"

#include "format/lpu/LpuScanner.h"

#include "LPULexer.h"
#include "LPUParser.h"

namespace lpu::format {
namespace {

using L = lpu_antlr::LPULexer;
using P = lpu_antlr::LPUParser;

/// Thrown when the input does not parse here; caught at the top and where a
/// reading is tried speculatively.
struct Reject {};
/// Thrown when speculation has cost too much (nested generic-call readings
/// that fail late could take exponential time); caught at the top only.
struct OutOfBudget {};

constexpr int kEof = -1;          // antlr4::Token::EOF as the tree's token kind
constexpr unsigned kMaxDepth = 2000; // rule frames: deeper input goes to ANTLR
constexpr unsigned kMaxBracketDepth = 1000; // as the ANTLR path (LpuLanguage.cpp)

class Parser {
public:
  explicit Parser(SyntaxTree &tree) : tree_(tree), build_(tree) {}

  void module() {
    size_t m = build_.start();
    while (kind() != kEof)
      item();
    take(); // EOF
    build_.finish(m, P::RuleModule);
  }

private:
  // ------------------------------------------------------------ tokens
  int kind(size_t ahead = 0) const {
    size_t i = pos_ + ahead;
    return i < tree_.tokens.size() ? tree_.tokens[i].kind : kEof;
  }
  bool at(int k) const { return kind() == k; }
  void take() {
    if (++work_ > budget_)
      throw OutOfBudget{};
    build_.addToken(static_cast<uint32_t>(pos_++));
  }
  void expect(int k) {
    if (!at(k))
      throw Reject{};
    take();
  }
  bool accept(int k) {
    if (!at(k))
      return false;
    take();
    return true;
  }
  /// Closes the rule opened at `mark`, unless one child stands for it.
  void close(size_t mark, int rule) {
    size_t n = build_.addedSince(mark);
    if (n == 0)
      throw Reject{}; // ANTLR never builds an empty context for valid input
    if (n > 1)
      build_.finish(mark, rule);
  }

  struct Depth {
    explicit Depth(Parser &p) : p(p) {
      if (++p.depth_ > kMaxDepth)
        throw Reject{};
    }
    ~Depth() { --p.depth_; }
    Parser &p;
  };

  static bool startsExpr(int k) {
    switch (k) {
    case L::MINUS: case L::BANG: case L::IDENT: case L::INT: case L::HEX_INT: case L::FLOAT:
    case L::TRUE: case L::FALSE: case L::STRING: case L::LPAREN: case L::LBRACK:
      return true;
    default:
      return false;
    }
  }

  /// `first (COMMA first)* COMMA?` before `close`, or nothing when the list
  /// may be empty and `close` follows.
  /// `(COMMA element)* COMMA?` after a first element.
  template <typename F> void commaTail(int closeKind, F element) {
    while (at(L::COMMA) && kind(1) != closeKind) {
      take();
      element();
    }
    accept(L::COMMA);
  }

  template <typename F> void commaList(int closeKind, bool mayBeEmpty, F element) {
    if (mayBeEmpty && at(closeKind))
      return;
    element();
    while (at(L::COMMA) && kind(1) != closeKind) {
      take();
      element();
    }
    accept(L::COMMA);
  }

  // ------------------------------------------------------------ modules
  // item : importDecl | constDecl | fnDecl | modelDecl | entryDecl
  void item() {
    switch (kind()) {
    case L::IMPORT: return importDecl();
    case L::CONST: return constDecl();
    case L::FN: return fnDecl();
    case L::MODEL: return modelDecl();
    case L::ENTRY: return entryDecl();
    default: throw Reject{};
    }
  }

  // importDecl : IMPORT dottedName (AS IDENT)? | IMPORT STRING AS IDENT
  void importDecl() {
    size_t m = build_.start();
    expect(L::IMPORT);
    if (accept(L::STRING)) {
      expect(L::AS);
      expect(L::IDENT);
    } else {
      dottedName();
      if (accept(L::AS))
        expect(L::IDENT);
    }
    close(m, P::RuleImportDecl);
  }

  // dottedName : IDENT (DOT IDENT)*
  void dottedName() {
    size_t m = build_.start();
    expect(L::IDENT);
    while (at(L::DOT)) {
      take();
      expect(L::IDENT);
    }
    close(m, P::RuleDottedName);
  }

  // constDecl : CONST IDENT (COLON typeExpr)? ASSIGN expr
  void constDecl() {
    size_t m = build_.start();
    expect(L::CONST);
    expect(L::IDENT);
    if (accept(L::COLON))
      typeExpr();
    expect(L::ASSIGN);
    expr(0);
    close(m, P::RuleConstDecl);
  }

  // fnDecl : FN IDENT genericParams? LPAREN (fnParam (COMMA fnParam)* COMMA?)?
  //          RPAREN ARROW (typeExpr | resultTuple) whereClause? block
  void fnDecl() {
    size_t m = build_.start();
    expect(L::FN);
    expect(L::IDENT);
    if (at(L::LT))
      genericParams();
    expect(L::LPAREN);
    commaList(L::RPAREN, true, [&] { fnParam(); });
    expect(L::RPAREN);
    expect(L::ARROW);
    if (at(L::LPAREN))
      resultTuple();
    else
      typeExpr();
    if (at(L::WHERE))
      whereClause();
    block();
    close(m, P::RuleFnDecl);
  }

  // resultTuple : LPAREN resultField (COMMA resultField)+ COMMA? RPAREN
  void resultTuple() {
    size_t m = build_.start();
    expect(L::LPAREN);
    resultField();
    if (!at(L::COMMA) || kind(1) == L::RPAREN)
      throw Reject{}; // one field is not a tuple
    commaTail(L::RPAREN, [&] { resultField(); });
    expect(L::RPAREN);
    build_.finish(m, P::RuleResultTuple);
  }

  // resultField : (IDENT COLON)? typeExpr
  void resultField() {
    size_t m = build_.start();
    if (at(L::IDENT) && kind(1) == L::COLON) {
      take();
      take();
    }
    typeExpr();
    close(m, P::RuleResultField);
  }

  // fnParam : IDENT COLON typeExpr
  void fnParam() {
    size_t m = build_.start();
    expect(L::IDENT);
    expect(L::COLON);
    typeExpr();
    close(m, P::RuleFnParam);
  }

  // genericParams : LT genericParam (COMMA genericParam)* COMMA? GT
  void genericParams() {
    size_t m = build_.start();
    expect(L::LT);
    commaList(L::GT, false, [&] { genericParam(); });
    expect(L::GT);
    close(m, P::RuleGenericParams);
  }

  // genericParam : DOTDOT IDENT | IDENT COLON IDENT | IDENT (ASSIGN sizeExpr)?
  void genericParam() {
    size_t m = build_.start();
    if (accept(L::DOTDOT)) {
      expect(L::IDENT);
    } else {
      expect(L::IDENT);
      if (accept(L::COLON))
        expect(L::IDENT);
      else if (accept(L::ASSIGN))
        sizeExpr(0);
    }
    close(m, P::RuleGenericParam);
  }

  // whereClause : WHERE constraint (COMMA constraint)*
  void whereClause() {
    size_t m = build_.start();
    expect(L::WHERE);
    constraint();
    while (accept(L::COMMA))
      constraint();
    close(m, P::RuleWhereClause);
  }

  static bool isCompareOp(int k) {
    return k == L::EQ || k == L::NE || k == L::LT || k == L::LE || k == L::GT || k == L::GE;
  }

  // constraint : sizeExpr compareOp sizeExpr   (compareOp: one token, folded)
  void constraint() {
    size_t m = build_.start();
    sizeExpr(0);
    if (!isCompareOp(kind()))
      throw Reject{};
    take();
    sizeExpr(0);
    close(m, P::RuleConstraint);
  }

  // modelDecl : MODEL IDENT genericParams? LBRACE modelMember* RBRACE
  void modelDecl() {
    size_t m = build_.start();
    expect(L::MODEL);
    expect(L::IDENT);
    if (at(L::LT))
      genericParams();
    expect(L::LBRACE);
    while (!at(L::RBRACE)) {
      switch (kind()) { // modelMember : paramDecl | fnDecl | constDecl
      case L::PARAM:
      case L::STATE: paramDecl(); break;
      case L::FN: fnDecl(); break;
      case L::CONST: constDecl(); break;
      default: throw Reject{};
      }
    }
    take();
    close(m, P::RuleModelDecl);
  }

  // paramDecl : (PARAM | STATE) IDENT COLON typeExpr
  void paramDecl() {
    size_t m = build_.start();
    if (at(L::STATE))
      take();
    else
      expect(L::PARAM);
    expect(L::IDENT);
    expect(L::COLON);
    typeExpr();
    close(m, P::RuleParamDecl);
  }

  // entryDecl : ENTRY IDENT ASSIGN pathSegment (DOT pathSegment)*
  void entryDecl() {
    size_t m = build_.start();
    expect(L::ENTRY);
    expect(L::IDENT);
    expect(L::ASSIGN);
    pathSegment();
    while (accept(L::DOT))
      pathSegment();
    close(m, P::RuleEntryDecl);
  }

  // pathSegment : IDENT genericArgs?
  void pathSegment() {
    size_t m = build_.start();
    expect(L::IDENT);
    if (at(L::LT))
      genericArgs();
    close(m, P::RulePathSegment);
  }

  // ------------------------------------------------------------ types
  // typeExpr : LBRACK sizeExpr RBRACK typeExpr
  //          | IDENT (DOT IDENT)* genericArgs? dims?
  void typeExpr() {
    Depth depth(*this);
    size_t m = build_.start();
    if (accept(L::LBRACK)) {
      sizeExpr(0);
      expect(L::RBRACK);
      typeExpr();
    } else {
      expect(L::IDENT);
      while (at(L::DOT)) {
        take();
        expect(L::IDENT);
      }
      if (at(L::LT))
        genericArgs();
      if (at(L::LBRACK))
        dims();
    }
    close(m, P::RuleTypeExpr);
  }

  // dims : LBRACK (dim (COMMA dim)* COMMA?)? RBRACK
  // dim : DOTDOT IDENT | sizeExpr
  void dims() {
    size_t m = build_.start();
    expect(L::LBRACK);
    commaList(L::RBRACK, true, [&] {
      size_t d = build_.start();
      if (accept(L::DOTDOT))
        expect(L::IDENT);
      else
        sizeExpr(0);
      close(d, P::RuleDim);
    });
    expect(L::RBRACK);
    close(m, P::RuleDims);
  }

  // genericArgs : LT (genericArg (COMMA genericArg)* COMMA?)? GT
  void genericArgs() {
    Depth depth(*this);
    size_t m = build_.start();
    expect(L::LT);
    commaList(L::GT, true, [&] { genericArg(); });
    expect(L::GT);
    close(m, P::RuleGenericArgs);
  }

  // genericArg : IDENT ASSIGN genericValue
  //            | IDENT IN LBRACE (sizeExpr (COMMA sizeExpr)* COMMA?)? RBRACE
  //            | genericValue
  void genericArg() {
    size_t m = build_.start();
    if (at(L::IDENT) && kind(1) == L::ASSIGN) {
      take();
      take();
      genericValue();
    } else if (at(L::IDENT) && kind(1) == L::IN) {
      take();
      take();
      expect(L::LBRACE);
      commaList(L::RBRACE, true, [&] { sizeExpr(0); });
      expect(L::RBRACE);
    } else {
      genericValue();
    }
    close(m, P::RuleGenericArg);
  }

  // genericValue : sizeExpr | typeExpr   (one child: always folded)
  void genericValue() {
    bool type = at(L::LBRACK) ||
                (at(L::IDENT) && (kind(1) == L::DOT || kind(1) == L::LT || kind(1) == L::LBRACK));
    if (type)
      typeExpr();
    else
      sizeExpr(0);
  }

  // sizeExpr : (INT | HEX_INT) | IDENT LPAREN sizeExpr (COMMA sizeExpr)* COMMA? RPAREN
  //          | IDENT | LPAREN sizeExpr RPAREN
  //          | sizeExpr (STAR | SLASH | PERCENT) sizeExpr     precedence 2
  //          | sizeExpr (PLUS | MINUS) sizeExpr               precedence 1
  void sizeExpr(int minPrecedence) {
    Depth depth(*this);
    size_t m = build_.start();
    if (at(L::INT) || at(L::HEX_INT)) {
      take();
    } else if (at(L::IDENT) && kind(1) == L::LPAREN) {
      size_t c = build_.start();
      take();
      take();
      commaList(L::RPAREN, false, [&] { sizeExpr(0); });
      expect(L::RPAREN);
      close(c, P::RuleSizeExpr);
    } else if (at(L::IDENT)) {
      take();
    } else if (at(L::LPAREN)) {
      size_t c = build_.start();
      take();
      sizeExpr(0);
      expect(L::RPAREN);
      close(c, P::RuleSizeExpr);
    } else {
      throw Reject{};
    }
    for (;;) {
      int k = kind();
      int precedence = k == L::STAR || k == L::SLASH || k == L::PERCENT ? 2
                       : k == L::PLUS || k == L::MINUS                  ? 1
                                                                        : 0;
      if (precedence == 0 || precedence < minPrecedence)
        return;
      take();
      sizeExpr(precedence + 1);
      build_.finish(m, P::RuleSizeExpr);
    }
  }

  // ------------------------------------------------------------ statements
  // block : LBRACE stmt* RBRACE
  void block() {
    Depth depth(*this);
    size_t m = build_.start();
    expect(L::LBRACE);
    while (!at(L::RBRACE))
      stmt();
    take();
    close(m, P::RuleBlock);
  }

  // stmt : LET IDENT (COLON typeExpr)? ASSIGN expr | VAR ... | IDENT ASSIGN expr
  //        (a let may bind a tuple: LET LPAREN IDENT (COMMA IDENT)+ COMMA? RPAREN)
  //      | RETURN expr | ASSERT expr (COMMA STRING)?
  //      | FOR IDENT IN expr DOTDOT expr block | ifStmt | expr
  void stmt() {
    size_t m = build_.start();
    switch (kind()) {
    case L::LET:
      if (kind(1) == L::LPAREN) {
        take();
        take();
        expect(L::IDENT);
        if (!at(L::COMMA) || kind(1) == L::RPAREN)
          throw Reject{};
        commaTail(L::RPAREN, [&] { expect(L::IDENT); });
        expect(L::RPAREN);
        expect(L::ASSIGN);
        expr(0);
        break;
      }
      [[fallthrough]];
    case L::VAR:
      take();
      expect(L::IDENT);
      if (accept(L::COLON))
        typeExpr();
      expect(L::ASSIGN);
      expr(0);
      break;
    case L::RETURN:
      take();
      expr(0);
      break;
    case L::ASSERT:
      take();
      expr(0);
      if (accept(L::COMMA))
        expect(L::STRING);
      break;
    case L::FOR:
      take();
      expect(L::IDENT);
      expect(L::IN);
      expr(0);
      expect(L::DOTDOT);
      expr(0);
      block();
      break;
    case L::IF:
      ifStmt();
      break;
    default:
      if (at(L::IDENT) && kind(1) == L::ASSIGN) {
        take();
        take();
      }
      expr(0);
      break;
    }
    close(m, P::RuleStmt);
  }

  // ifStmt : IF expr block (ELSE (ifStmt | block))?
  void ifStmt() {
    Depth depth(*this);
    size_t m = build_.start();
    expect(L::IF);
    expr(0);
    block();
    if (accept(L::ELSE)) {
      if (at(L::IF))
        ifStmt();
      else
        block();
    }
    close(m, P::RuleIfStmt);
  }

  // ------------------------------------------------------------ expressions
  static int binaryPrecedence(int k) {
    switch (k) {
    case L::POW: return 7;
    case L::STAR: case L::SLASH: case L::PERCENT: case L::AT: return 5;
    case L::PLUS: case L::MINUS: return 4;
    case L::EQ: case L::NE: case L::LT: case L::LE: case L::GT: case L::GE: return 3;
    case L::ANDAND: return 2;
    case L::OROR: return 1;
    default: return 0;
    }
  }

  // expr, precedence climbing as ANTLR compiles the left-recursive rule:
  //   primaryExpr | (MINUS | BANG) expr(6)
  //   then, while the operator's precedence >= minPrecedence:
  //   generic member call (11), call (10), index with an optional generic
  //   call (9), member (8), `**` (7, right operand expr(7)),
  //   * / % @ (5), + - (4), comparisons (3), && (2), || (1): right operand
  //   expr(precedence + 1).
  void expr(int minPrecedence) {
    Depth depth(*this);
    size_t m = build_.start();
    if (at(L::MINUS) || at(L::BANG)) {
      take();
      expr(6);
      build_.finish(m, P::RuleExpr);
    } else {
      primaryExpr();
    }
    for (;;) {
      int k = kind();
      if (k == L::DOT && kind(1) == L::IDENT && kind(2) == L::LT && minPrecedence <= 11 &&
          genericCallTail(2)) {
        // taken: `.name<...>(...)`
      } else if (k == L::LPAREN && minPrecedence <= 10) {
        take();
        commaList(L::RPAREN, true, [&] { callArg(); });
        expect(L::RPAREN);
      } else if (k == L::LBRACK && minPrecedence <= 9) {
        take();
        commaList(L::RBRACK, false, [&] { indexItem(); });
        expect(L::RBRACK);
        if (at(L::LT))
          genericCallTail(0); // `[...]<...>(...)`, when it parses so
      } else if (k == L::DOT && minPrecedence <= 8) {
        take();
        expect(L::IDENT);
      } else if (int p = binaryPrecedence(k); p != 0 && p >= minPrecedence) {
        take();
        expr(p == 7 ? 7 : p + 1);
      } else {
        return;
      }
      build_.finish(m, P::RuleExpr);
    }
  }

  // callArg : (IDENT ASSIGN)? expr
  void callArg() {
    size_t m = build_.start();
    if (at(L::IDENT) && kind(1) == L::ASSIGN) {
      take();
      take();
    }
    expr(0);
    close(m, P::RuleCallArg);
  }

  // indexItem : expr? COLON expr? | expr
  void indexItem() {
    size_t m = build_.start();
    if (!at(L::COLON))
      expr(0);
    if (accept(L::COLON) && startsExpr(kind()))
      expr(0);
    close(m, P::RuleIndexItem);
  }

  // primaryExpr : IDENT (DOT IDENT)* genericArgs LPAREN (callArg (COMMA callArg)* COMMA?)? RPAREN
  //             | (INT | HEX_INT) | FLOAT | (TRUE | FALSE) | STRING | IDENT
  //             | LPAREN expr ((COMMA expr)+ COMMA?)? RPAREN
  //             | LBRACK (expr (COMMA expr)* COMMA?)? RBRACK
  void primaryExpr() {
    size_t m = build_.start();
    switch (kind()) {
    case L::IDENT:
      if (genericCall(m))
        return;
      take();
      return;
    case L::INT: case L::HEX_INT: case L::FLOAT: case L::TRUE: case L::FALSE: case L::STRING:
      take();
      return;
    case L::LPAREN:
      take();
      expr(0);
      if (at(L::COMMA)) { // a tuple: at least two values
        if (kind(1) == L::RPAREN)
          throw Reject{};
        commaTail(L::RPAREN, [&] { expr(0); });
      }
      expect(L::RPAREN);
      break;
    case L::LBRACK:
      take();
      commaList(L::RBRACK, true, [&] { expr(0); });
      expect(L::RBRACK);
      break;
    default:
      throw Reject{};
    }
    close(m, P::RulePrimaryExpr);
  }

  /// The generic call reading of `IDENT (DOT IDENT)* <`, if it parses.
  bool genericCall(size_t m) {
    size_t k = 1;
    while (kind(k) == L::DOT && kind(k + 1) == L::IDENT)
      k += 2;
    if (kind(k) != L::LT)
      return false;
    SyntaxTreeBuilder::Checkpoint saved = build_.checkpoint();
    size_t savedPos = pos_;
    try {
      take();
      while (at(L::DOT)) {
        take();
        take();
      }
      genericArgs();
      expect(L::LPAREN);
      commaList(L::RPAREN, true, [&] { callArg(); });
      expect(L::RPAREN);
      close(m, P::RulePrimaryExpr);
      return true;
    } catch (const Reject &) {
      build_.rollback(saved);
      pos_ = savedPos;
      return false;
    }
  }

  /// The generic call reading of the next `lead` tokens (`.name`, or none
  /// after `[...]`) and then genericArgs LPAREN callArgs RPAREN, in the
  /// node of the expression they follow, if it parses.
  bool genericCallTail(int lead) {
    SyntaxTreeBuilder::Checkpoint saved = build_.checkpoint();
    size_t savedPos = pos_;
    try {
      for (int i = 0; i < lead; ++i)
        take();
      genericArgs();
      expect(L::LPAREN);
      commaList(L::RPAREN, true, [&] { callArg(); });
      expect(L::RPAREN);
      return true;
    } catch (const Reject &) {
      build_.rollback(saved);
      pos_ = savedPos;
      return false;
    }
  }

  SyntaxTree &tree_;
  SyntaxTreeBuilder build_;
  size_t pos_ = 0;
  unsigned depth_ = 0;
  // Tokens taken, counting those taken again after a failed speculation;
  // valid input takes each about once.
  size_t work_ = 0;
  size_t budget_ = 4 * tree_.tokens.size() + 10000;
};

} // namespace

bool parseLpuFast(SyntaxTree &tree) {
  // Tokens go straight into the tree, without a raw token list in between.
  // Every token but the end-of-file one holds at least one byte.
  TriviaBuilder trivia(tree, tree.source.size() + 1);
  unsigned depth = 0;
  bool lexed = scanLpu(tree.source, [&](const RawToken &r) {
    // Brackets nested deeper than the ANTLR path takes are its error to report.
    if (r.kind == L::LPAREN || r.kind == L::LBRACK || r.kind == L::LBRACE) {
      if (++depth > kMaxBracketDepth)
        return false;
    } else if (r.kind == L::RPAREN || r.kind == L::RBRACK || r.kind == L::RBRACE) {
      depth = depth > 0 ? depth - 1 : 0;
    }
    trivia.add(r);
    return true;
  });
  if (!lexed)
    return false;
  tree.nodes.clear();
  tree.children.clear();
  tree.nodes.reserve(tree.tokens.size() / 2);
  tree.children.reserve(tree.tokens.size() * 3 / 2);
  try {
    Parser(tree).module();
  } catch (const Reject &) {
    return false;
  } catch (const OutOfBudget &) {
    return false;
  }
  tree.root = static_cast<uint32_t>(tree.nodes.size() - 1);
  return true;
}

} // namespace lpu::format
