// Parse tree -> AST. The only place (with Parser.cpp) that sees ANTLR types.
//
// After a syntax error ANTLR's recovery leaves holes in the tree (missing
// children, conjured tokens); every accessor here tolerates them, because the
// adapter still runs to report the errors the grammar leaves to it.
#include "frontend/ParserInternals.h"

#include "LPUParser.h"

#include <llvm/ADT/StringSwitch.h>

#include <cstdlib>

namespace lpu::detail {

using lpu_antlr::LPUParser;
using namespace lpu::ast;

namespace {

class Adapter {
public:
  Adapter(antlr4::BufferedTokenStream &tokens, const Locator &locator, DiagnosticEngine &diags,
          const std::set<size_t> &bad, bool wellFormed)
      : tokens_(tokens), locator_(locator), diags_(diags), bad_(bad), wellFormed_(wellFormed) {}

  std::unique_ptr<Module> module(LPUParser::ModuleContext *ctx) {
    auto m = std::make_unique<Module>();
    if (ctx)
      for (auto *item : ctx->item())
        if (DeclPtr d = this->item(item))
          m->items.push_back(std::move(d));
    reportStrayDocComments();
    return m;
  }

private:
  // ---------------------------------------------------------------- helpers

  SMRange range(antlr4::ParserRuleContext *ctx) const { return locator_.range(ctx); }
  SMRange range(antlr4::tree::TerminalNode *node) const { return locator_.range(node); }
  static SMRange join(SMRange a, SMRange b) {
    if (!a.Start.isValid())
      return b;
    if (!b.Start.isValid())
      return a;
    return {a.Start, b.End.isValid() ? b.End : a.End};
  }

  Ident ident(antlr4::tree::TerminalNode *node) const {
    if (!node || !locator_.isReal(node->getSymbol()))
      return {};
    return {locator_.text(node->getSymbol()).str(), range(node)};
  }

  int64_t intValue(antlr4::tree::TerminalNode *node) const {
    if (!node || !locator_.isReal(node->getSymbol()) || bad_.count(node->getSymbol()->getTokenIndex()))
      return 0;
    std::string digits;
    for (char c : locator_.text(node->getSymbol()))
      if (c != '_')
        digits.push_back(c);
    // The lexical pass checked range and form; this only converts. Leading
    // zeros are decimal (`007` is 7), never octal.
    bool hex = digits.size() > 1 && (digits[1] == 'x' || digits[1] == 'X');
    return static_cast<int64_t>(std::strtoull(digits.c_str() + (hex ? 2 : 0), nullptr, hex ? 16 : 10));
  }

  /// The `///` comments right before a declaration's first token.
  std::string docComment(antlr4::ParserRuleContext *ctx) {
    if (!ctx || !locator_.isReal(ctx->getStart()))
      return "";
    std::string doc;
    for (antlr4::Token *t : tokens_.getHiddenTokensToLeft(ctx->getStart()->getTokenIndex())) {
      if (t->getType() != LPUParser::DOC_COMMENT)
        continue;
      llvm::StringRef text = locator_.text(t);
      if (text.startswith("////"))
        continue; // four slashes: an ordinary comment, as in Rust
      claimedDocs_.insert(t->getTokenIndex());
      text = text.drop_front(3);
      if (text.startswith(" "))
        text = text.drop_front();
      if (!doc.empty())
        doc += "\n";
      doc += text.rtrim().str();
    }
    return doc;
  }

  void reportStrayDocComments() {
    for (size_t i = 0; i < tokens_.size(); ++i) {
      antlr4::Token *t = tokens_.get(i);
      if (t->getType() == LPUParser::DOC_COMMENT && !claimedDocs_.count(i) &&
          !locator_.text(t).startswith("////"))
        diags_.report(DiagID::StrayDocComment, locator_.range(t))
            .help("use '//' for a comment that documents nothing");
    }
  }

  // ---------------------------------------------------------------- declarations

  DeclPtr item(LPUParser::ItemContext *ctx) {
    if (!ctx)
      return nullptr;
    if (auto *c = ctx->importDecl())
      return importDecl(c);
    if (auto *c = ctx->constDecl())
      return constDecl(c);
    if (auto *c = ctx->fnDecl())
      return fnDecl(c);
    if (auto *c = ctx->modelDecl())
      return modelDecl(c);
    if (auto *c = ctx->entryDecl())
      return entryDecl(c);
    return nullptr;
  }

  DeclPtr importDecl(LPUParser::ImportDeclContext *ctx) {
    auto d = std::make_unique<ImportDecl>(range(ctx));
    d->doc = docComment(ctx);
    if (auto *c = dynamic_cast<LPUParser::ImportModuleContext *>(ctx)) {
      if (c->dottedName())
        for (auto *part : c->dottedName()->IDENT())
          d->path.push_back(ident(part));
      if (c->IDENT()) {
        d->name = ident(c->IDENT());
        d->hasAlias = true;
      } else if (!d->path.empty()) {
        d->name = d->path.back();
      }
    } else if (auto *c = dynamic_cast<LPUParser::ImportFileContext *>(ctx)) {
      d->isFile = true;
      if (c->STRING()) {
        d->file = decodeStringLiteral(locator_.text(c->STRING()->getSymbol()));
        d->fileRange = range(c->STRING());
      }
      d->name = ident(c->IDENT());
      d->hasAlias = true;
    }
    return d;
  }

  DeclPtr constDecl(LPUParser::ConstDeclContext *ctx) {
    auto d = std::make_unique<ConstDecl>(range(ctx));
    d->doc = docComment(ctx);
    d->name = ident(ctx->IDENT());
    if (ctx->typeExpr())
      d->type = typeExpr(ctx->typeExpr());
    d->value = expr(ctx->expr());
    return d;
  }

  std::vector<GenericParam> genericParams(LPUParser::GenericParamsContext *ctx) {
    std::vector<GenericParam> params;
    if (!ctx)
      return params;
    for (auto *p : ctx->genericParam()) {
      GenericParam gp;
      gp.range = range(p);
      if (auto *c = dynamic_cast<LPUParser::PackParamContext *>(p)) {
        gp.kind = GenericParam::Kind::Pack;
        gp.name = ident(c->IDENT());
      } else if (auto *c = dynamic_cast<LPUParser::KindedParamContext *>(p)) {
        gp.kind = GenericParam::Kind::Dtype;
        auto ids = c->IDENT();
        if (!ids.empty())
          gp.name = ident(ids[0]);
        if (ids.size() > 1) {
          Ident kind = ident(ids[1]);
          if (!kind.empty() && kind.name != "dtype")
            diags_.report(DiagID::UnknownGenericKind, kind.range, kind.name, gp.name.name)
                .fixit(kind.range, "dtype");
        }
      } else if (auto *c = dynamic_cast<LPUParser::SizeParamContext *>(p)) {
        gp.name = ident(c->IDENT());
        if (c->sizeExpr())
          gp.defaultValue = sizeExpr(c->sizeExpr());
      }
      params.push_back(std::move(gp));
    }
    return params;
  }

  static CompareOp compareOp(LPUParser::CompareOpContext *ctx) {
    if (!ctx)
      return CompareOp::Eq;
    if (ctx->NE()) return CompareOp::Ne;
    if (ctx->LT()) return CompareOp::Lt;
    if (ctx->LE()) return CompareOp::Le;
    if (ctx->GT()) return CompareOp::Gt;
    if (ctx->GE()) return CompareOp::Ge;
    return CompareOp::Eq;
  }

  DeclPtr fnDecl(LPUParser::FnDeclContext *ctx) {
    auto d = std::make_unique<FnDecl>(range(ctx));
    d->doc = docComment(ctx);
    d->name = ident(ctx->IDENT());
    d->generics = genericParams(ctx->genericParams());
    for (auto *p : ctx->fnParam()) {
      FnParam param;
      param.name = ident(p->IDENT());
      param.type = typeExpr(p->typeExpr());
      param.range = range(p);
      d->params.push_back(std::move(param));
    }
    if (auto *t = ctx->resultTuple()) {
      d->tupleResult = true;
      d->resultRange = range(t);
      for (auto *field : t->resultField()) {
        FnDecl::ResultField rf;
        rf.name = ident(field->IDENT());
        rf.type = typeExpr(field->typeExpr());
        rf.range = range(field);
        d->results.push_back(std::move(rf));
      }
    } else {
      d->returnType = typeExpr(ctx->typeExpr());
      if (d->returnType)
        d->resultRange = d->returnType->range;
    }
    if (auto *w = ctx->whereClause())
      for (auto *c : w->constraint()) {
        WhereConstraint wc;
        auto sides = c->sizeExpr();
        if (sides.size() > 0)
          wc.lhs = sizeExpr(sides[0]);
        if (sides.size() > 1)
          wc.rhs = sizeExpr(sides[1]);
        wc.op = compareOp(c->compareOp());
        wc.range = range(c);
        d->where.push_back(std::move(wc));
      }
    d->body = block(ctx->block());
    return d;
  }

  DeclPtr modelDecl(LPUParser::ModelDeclContext *ctx) {
    auto d = std::make_unique<ModelDecl>(range(ctx));
    d->doc = docComment(ctx);
    d->name = ident(ctx->IDENT());
    d->generics = genericParams(ctx->genericParams());
    for (auto *m : ctx->modelMember()) {
      if (auto *p = m->paramDecl()) {
        auto param = std::make_unique<ParamDecl>(range(p));
        param->doc = docComment(p);
        param->name = ident(p->IDENT());
        param->type = typeExpr(p->typeExpr());
        param->isState = p->STATE() != nullptr;
        d->members.push_back(std::move(param));
      } else if (auto *f = m->fnDecl()) {
        d->members.push_back(fnDecl(f));
      } else if (auto *c = m->constDecl()) {
        d->members.push_back(constDecl(c));
      }
    }
    return d;
  }

  DeclPtr entryDecl(LPUParser::EntryDeclContext *ctx) {
    auto d = std::make_unique<EntryDecl>(range(ctx));
    d->doc = docComment(ctx);
    d->name = ident(ctx->IDENT());
    for (auto *seg : ctx->pathSegment()) {
      PathSegment s;
      s.name = ident(seg->IDENT());
      s.range = range(seg);
      if (seg->genericArgs()) {
        s.hasGenericArgs = true;
        s.genericArgs = genericArgs(seg->genericArgs());
      }
      d->target.push_back(std::move(s));
    }
    return d;
  }

  // ---------------------------------------------------------------- types

  std::vector<GenericArg> genericArgs(LPUParser::GenericArgsContext *ctx) {
    std::vector<GenericArg> args;
    if (!ctx)
      return args;
    for (auto *a : ctx->genericArg()) {
      GenericArg arg;
      arg.range = range(a);
      LPUParser::GenericValueContext *value = nullptr;
      if (auto *c = dynamic_cast<LPUParser::NamedGenericArgContext *>(a)) {
        arg.kind = GenericArg::Kind::Named;
        arg.name = ident(c->IDENT());
        value = c->genericValue();
      } else if (auto *c = dynamic_cast<LPUParser::BucketGenericArgContext *>(a)) {
        arg.kind = GenericArg::Kind::Bucket;
        arg.name = ident(c->IDENT());
        for (auto *s : c->sizeExpr())
          if (SizeExprPtr e = sizeExpr(s))
            arg.bucket.push_back(std::move(e));
        if (c->sizeExpr().empty() && c->LBRACE() && c->RBRACE())
          diags_.report(DiagID::EmptyBucketSet,
                        {range(c->LBRACE()).Start, range(c->RBRACE()).End}, arg.name.name);
      } else if (auto *c = dynamic_cast<LPUParser::PositionalGenericArgContext *>(a)) {
        value = c->genericValue();
      }
      if (value) {
        if (value->sizeExpr())
          arg.size = sizeExpr(value->sizeExpr());
        else if (value->typeExpr())
          arg.type = typeExpr(value->typeExpr());
      }
      args.push_back(std::move(arg));
    }
    return args;
  }

  TypeExprPtr typeExpr(LPUParser::TypeExprContext *ctx) {
    if (!ctx)
      return nullptr;
    if (auto *c = dynamic_cast<LPUParser::ArrayTypeContext *>(ctx))
      return std::make_unique<ArrayType>(sizeExpr(c->sizeExpr()), typeExpr(c->typeExpr()),
                                         range(ctx));
    auto *c = dynamic_cast<LPUParser::NamedTypeContext *>(ctx);
    if (!c)
      return nullptr;
    auto t = std::make_unique<NamedType>(range(ctx));
    for (auto *part : c->IDENT())
      t->path.push_back(ident(part));
    if (c->genericArgs()) {
      t->hasGenericArgs = true;
      t->genericArgs = genericArgs(c->genericArgs());
    }
    if (auto *dims = c->dims()) {
      t->hasDims = true;
      bool first = true;
      for (auto *dc : dims->dim()) {
        Dim dim;
        dim.range = range(dc);
        if (auto *p = dynamic_cast<LPUParser::PackDimContext *>(dc)) {
          dim.pack = ident(p->IDENT());
          if (!first)
            diags_.report(DiagID::PackNotFirst, dim.range, dim.pack.name);
        } else if (auto *s = dynamic_cast<LPUParser::SizeDimContext *>(dc)) {
          dim.size = sizeExpr(s->sizeExpr());
        }
        first = false;
        t->dims.push_back(std::move(dim));
      }
    }
    return t;
  }

  SizeExprPtr sizeExpr(LPUParser::SizeExprContext *ctx) {
    if (!ctx)
      return nullptr;
    Nested level(*this, range(ctx));
    if (!level.ok)
      return nullptr;
    const auto &kids = ctx->children;
    // A well-formed tree tells the alternative by its children; otherwise
    // each labelled class is tried.
    auto *first = kids.empty() ? nullptr : dynamic_cast<antlr4::tree::TerminalNode *>(kids[0]);
    bool binary = wellFormed_ ? kids.size() == 3 && !first
                              : dynamic_cast<LPUParser::SizeMulContext *>(ctx) ||
                                    dynamic_cast<LPUParser::SizeAddContext *>(ctx);
    if (binary) {
      auto *op = dynamic_cast<antlr4::tree::TerminalNode *>(kids[1]);
      SizeExprPtr lhs = sizeExpr(dynamic_cast<LPUParser::SizeExprContext *>(kids[0]));
      SizeExprPtr rhs = sizeExpr(dynamic_cast<LPUParser::SizeExprContext *>(kids[2]));
      if (!op || !lhs || !rhs)
        return nullptr;
      return sizeBinary(op, std::move(lhs), std::move(rhs), range(ctx), range(op));
    }
    if (auto *c = dynamic_cast<LPUParser::SizeIntContext *>(ctx))
      return std::make_unique<SizeInt>(intValue(c->INT() ? c->INT() : c->HEX_INT()), range(ctx));
    if (auto *c = dynamic_cast<LPUParser::SizeNameContext *>(ctx))
      return std::make_unique<SizeName>(ident(c->IDENT()).name, range(ctx));
    if (auto *c = dynamic_cast<LPUParser::SizeParenContext *>(ctx))
      return sizeExpr(c->sizeExpr());
    if (auto *c = dynamic_cast<LPUParser::SizeCallContext *>(ctx))
      return sizeCall(c);
    return nullptr;
  }

  static SizeExprPtr sizeBinary(antlr4::tree::TerminalNode *op, SizeExprPtr lhs, SizeExprPtr rhs,
                                SMRange whole, SMRange opRange) {
    SizeOp sop;
    switch (op->getSymbol()->getType()) {
    case LPUParser::PLUS: sop = SizeOp::Add; break;
    case LPUParser::MINUS: sop = SizeOp::Sub; break;
    case LPUParser::STAR: sop = SizeOp::Mul; break;
    case LPUParser::SLASH: sop = SizeOp::Div; break;
    default: sop = SizeOp::Mod; break;
    }
    return std::make_unique<SizeBinary>(sop, std::move(lhs), std::move(rhs), whole, opRange);
  }

  SizeExprPtr sizeCall(LPUParser::SizeCallContext *ctx) {
    Ident fn = ident(ctx->IDENT());
    auto args = ctx->sizeExpr();
    std::optional<SizeFn> kind = llvm::StringSwitch<std::optional<SizeFn>>(fn.name)
                                     .Case("min", SizeFn::Min)
                                     .Case("max", SizeFn::Max)
                                     .Case("floordiv", SizeFn::FloorDiv)
                                     .Case("ceildiv", SizeFn::CeilDiv)
                                     .Default(std::nullopt);
    if (!kind) {
      if (!fn.empty())
        diags_.report(DiagID::UnknownSizeFunction, fn.range, fn.name);
      return nullptr;
    }
    if (args.size() != 2) {
      diags_.report(DiagID::SizeFunctionArity, range(ctx), fn.name, args.size());
      return nullptr;
    }
    return std::make_unique<SizeCall>(*kind, sizeExpr(args[0]), sizeExpr(args[1]), range(ctx));
  }

  // ---------------------------------------------------------------- statements

  Block block(LPUParser::BlockContext *ctx) {
    Block b;
    if (!ctx)
      return b;
    b.range = range(ctx);
    for (auto *s : ctx->stmt())
      if (StmtPtr st = stmt(s))
        b.stmts.push_back(std::move(st));
    return b;
  }

  StmtPtr stmt(LPUParser::StmtContext *ctx) {
    SMRange r = range(ctx);
    if (auto *c = dynamic_cast<LPUParser::LetStmtContext *>(ctx)) {
      std::vector<antlr4::tree::TerminalNode *> names = c->IDENT();
      if (c->LPAREN()) { // `let (a, b) = f(x)`
        auto s = std::make_unique<LetStmt>(false, Ident{}, r);
        for (auto *name : names)
          s->names.push_back(ident(name));
        s->value = expr(c->expr());
        return s;
      }
      auto s = std::make_unique<LetStmt>(false, ident(names.empty() ? nullptr : names[0]), r);
      if (c->typeExpr())
        s->type = typeExpr(c->typeExpr());
      s->value = expr(c->expr());
      return s;
    }
    if (auto *c = dynamic_cast<LPUParser::VarStmtContext *>(ctx)) {
      auto s = std::make_unique<LetStmt>(true, ident(c->IDENT()), r);
      if (c->typeExpr())
        s->type = typeExpr(c->typeExpr());
      s->value = expr(c->expr());
      return s;
    }
    if (auto *c = dynamic_cast<LPUParser::AssignStmtContext *>(ctx))
      return std::make_unique<AssignStmt>(ident(c->IDENT()), expr(c->expr()), r);
    if (auto *c = dynamic_cast<LPUParser::ReturnStmtContext *>(ctx))
      return std::make_unique<ReturnStmt>(expr(c->expr()), r);
    if (auto *c = dynamic_cast<LPUParser::AssertStmtContext *>(ctx)) {
      auto s = std::make_unique<AssertStmt>(expr(c->expr()), r);
      if (c->STRING()) {
        s->message = decodeStringLiteral(locator_.text(c->STRING()->getSymbol()));
        s->messageRange = range(c->STRING());
      }
      return s;
    }
    if (auto *c = dynamic_cast<LPUParser::ForStmtContext *>(ctx)) {
      auto s = std::make_unique<ForStmt>(ident(c->IDENT()), r);
      auto bounds = c->expr();
      if (bounds.size() > 0)
        s->lo = expr(bounds[0]);
      if (bounds.size() > 1)
        s->hi = expr(bounds[1]);
      s->body = block(c->block());
      return s;
    }
    if (auto *c = dynamic_cast<LPUParser::IfStatementContext *>(ctx))
      return ifStmt(c->ifStmt());
    if (auto *c = dynamic_cast<LPUParser::ExprStmtContext *>(ctx))
      return std::make_unique<ExprStmt>(expr(c->expr()), r);
    return nullptr;
  }

  StmtPtr ifStmt(LPUParser::IfStmtContext *ctx) {
    if (!ctx)
      return nullptr;
    auto s = std::make_unique<IfStmt>(range(ctx));
    s->cond = expr(ctx->expr());
    auto blocks = ctx->block();
    if (!blocks.empty())
      s->then = block(blocks[0]);
    if (blocks.size() > 1) {
      s->otherwise = block(blocks[1]);
    } else if (auto *elseIf = ctx->ifStmt()) {
      Block b;
      b.range = range(elseIf);
      if (StmtPtr inner = ifStmt(elseIf))
        b.stmts.push_back(std::move(inner));
      s->otherwise = std::move(b);
    }
    return s;
  }

  // ---------------------------------------------------------------- expressions

  enum class ExprAlt {
    Primary, MemberGenericCall, Call, Index, Member, Power, Prefix, Mul, Add, Compare, And, Or
  };

  /// Which alternative of `expr` a node is. A well-formed tree tells by the
  /// kinds of its first two children; otherwise each labelled class is tried.
  ExprAlt exprAlt(LPUParser::ExprContext *ctx) const {
    if (wellFormed_) {
      const auto &kids = ctx->children;
      if (kids.size() == 1)
        return ExprAlt::Primary;
      if (dynamic_cast<antlr4::tree::TerminalNode *>(kids[0]))
        return ExprAlt::Prefix;
      if (auto *rule = dynamic_cast<antlr4::RuleContext *>(kids[1]))
        return rule->getRuleIndex() == LPUParser::RuleCompareOp ? ExprAlt::Compare : ExprAlt::Call;
      switch (static_cast<antlr4::tree::TerminalNode *>(kids[1])->getSymbol()->getType()) {
      case LPUParser::LPAREN: return ExprAlt::Call;
      case LPUParser::LBRACK: return ExprAlt::Index;
      case LPUParser::DOT: return kids.size() > 3 ? ExprAlt::MemberGenericCall : ExprAlt::Member;
      case LPUParser::POW: return ExprAlt::Power;
      case LPUParser::PLUS:
      case LPUParser::MINUS: return ExprAlt::Add;
      case LPUParser::ANDAND: return ExprAlt::And;
      case LPUParser::OROR: return ExprAlt::Or;
      default: return ExprAlt::Mul;
      }
    }
    if (dynamic_cast<LPUParser::PrimaryContext *>(ctx)) return ExprAlt::Primary;
    if (dynamic_cast<LPUParser::MemberGenericCallContext *>(ctx)) return ExprAlt::MemberGenericCall;
    if (dynamic_cast<LPUParser::CallExprContext *>(ctx)) return ExprAlt::Call;
    if (dynamic_cast<LPUParser::IndexExprContext *>(ctx)) return ExprAlt::Index;
    if (dynamic_cast<LPUParser::MemberExprContext *>(ctx)) return ExprAlt::Member;
    if (dynamic_cast<LPUParser::PowerExprContext *>(ctx)) return ExprAlt::Power;
    if (dynamic_cast<LPUParser::PrefixExprContext *>(ctx)) return ExprAlt::Prefix;
    if (dynamic_cast<LPUParser::MulExprContext *>(ctx)) return ExprAlt::Mul;
    if (dynamic_cast<LPUParser::AddExprContext *>(ctx)) return ExprAlt::Add;
    if (dynamic_cast<LPUParser::CompareExprContext *>(ctx)) return ExprAlt::Compare;
    if (dynamic_cast<LPUParser::AndExprContext *>(ctx)) return ExprAlt::And;
    return ExprAlt::Or;
  }

  /// The i-th child, when it is an expression.
  static LPUParser::ExprContext *exprChild(LPUParser::ExprContext *ctx, size_t i) {
    return i < ctx->children.size() ? dynamic_cast<LPUParser::ExprContext *>(ctx->children[i])
                                    : nullptr;
  }

  static BinaryOp binaryOp(size_t tokenType) {
    switch (tokenType) {
    case LPUParser::OROR: return BinaryOp::Or;
    case LPUParser::ANDAND: return BinaryOp::And;
    case LPUParser::PLUS: return BinaryOp::Add;
    case LPUParser::MINUS: return BinaryOp::Sub;
    case LPUParser::STAR: return BinaryOp::Mul;
    case LPUParser::SLASH: return BinaryOp::Div;
    case LPUParser::PERCENT: return BinaryOp::Mod;
    case LPUParser::AT: return BinaryOp::MatMul;
    default: return BinaryOp::Pow;
    }
  }

  /// Counts a level of expression nesting for as long as it lives: past
  /// kMaxNesting levels the expression is refused (E0011), once a file,
  /// rather than recursing further here and in the checker.
  struct Nested {
    Adapter &self;
    bool ok;
    Nested(Adapter &self, SMRange at) : self(self), ok(++self.exprDepth_ <= kMaxNesting) {
      if (!ok && !self.reportedDepth_) {
        self.reportedDepth_ = true;
        self.diags_.report(DiagID::NestedTooDeep, at, "expressions", uint64_t(kMaxNesting));
      }
    }
    ~Nested() { --self.exprDepth_; }
  };

  ExprPtr expr(LPUParser::ExprContext *ctx) {
    if (!ctx)
      return nullptr;
    Nested level(*this, range(ctx));
    if (!level.ok)
      return nullptr;
    switch (ExprAlt alt = exprAlt(ctx)) {
    case ExprAlt::Primary:
      return primaryExpr(static_cast<LPUParser::PrimaryContext *>(ctx)->primaryExpr());
    case ExprAlt::MemberGenericCall:
      return memberGenericCall(static_cast<LPUParser::MemberGenericCallContext *>(ctx));
    case ExprAlt::Call: return callExpr(static_cast<LPUParser::CallExprContext *>(ctx));
    case ExprAlt::Index: return indexExpr(static_cast<LPUParser::IndexExprContext *>(ctx));
    case ExprAlt::Member: {
      auto *c = static_cast<LPUParser::MemberExprContext *>(ctx);
      ExprPtr base = expr(exprChild(ctx, 0));
      if (!base)
        return nullptr;
      return std::make_unique<MemberExpr>(std::move(base), ident(c->IDENT()), range(ctx));
    }
    case ExprAlt::Prefix: {
      auto *op = dynamic_cast<antlr4::tree::TerminalNode *>(ctx->children[0]);
      ExprPtr operand = expr(exprChild(ctx, 1));
      if (!op || !operand)
        return nullptr;
      UnaryOp uop = op->getSymbol()->getType() == LPUParser::BANG ? UnaryOp::Not : UnaryOp::Neg;
      return std::make_unique<UnaryExpr>(uop, std::move(operand), range(ctx), range(op));
    }
    case ExprAlt::Compare: {
      auto *c = static_cast<LPUParser::CompareExprContext *>(ctx);
      auto *lhsCtx = exprChild(ctx, 0);
      // `a < b < c` parses as `(a < b) < c`; parentheses would make the
      // left side a primary, so a comparison there was written unparenthesised.
      if (lhsCtx && exprAlt(lhsCtx) == ExprAlt::Compare)
        diags_.report(DiagID::ChainedComparison, range(c->compareOp()))
            .label(range(static_cast<LPUParser::CompareExprContext *>(lhsCtx)->compareOp()),
                   "first comparison")
            .help("join the comparisons with '&&': 'a < b && b < c'");
      ExprPtr lhs = expr(lhsCtx);
      ExprPtr rhs = expr(exprChild(ctx, 2));
      if (!lhs || !rhs)
        return nullptr;
      static const BinaryOp kOps[] = {BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt,
                                      BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge};
      return std::make_unique<BinaryExpr>(kOps[static_cast<int>(compareOp(c->compareOp()))],
                                          std::move(lhs), std::move(rhs), range(ctx),
                                          range(c->compareOp()));
    }
    default: {
      (void)alt;
      auto *op = ctx->children.size() > 1
                     ? dynamic_cast<antlr4::tree::TerminalNode *>(ctx->children[1])
                     : nullptr;
      ExprPtr lhs = expr(exprChild(ctx, 0));
      ExprPtr rhs = expr(exprChild(ctx, 2));
      if (!op || !lhs || !rhs)
        return nullptr;
      return std::make_unique<BinaryExpr>(binaryOp(op->getSymbol()->getType()), std::move(lhs),
                                          std::move(rhs), range(ctx), range(op));
    }
    }
  }

  /// W0100: `x` then a line starting with `(` or `[` is one expression.
  void checkContinuation(antlr4::tree::TerminalNode *bracket) {
    if (!bracket || !locator_.isReal(bracket->getSymbol()))
      return;
    antlr4::Token *t = bracket->getSymbol();
    for (size_t i = t->getTokenIndex(); i-- > 0;) {
      antlr4::Token *prev = tokens_.get(i);
      if (prev->getChannel() != antlr4::Token::DEFAULT_CHANNEL)
        continue;
      if (prev->getLine() < t->getLine())
        diags_.report(DiagID::ContinuationOnNewLine, range(bracket), locator_.text(t))
            .label(locator_.range(prev), "continues this")
            .help("move '" + locator_.text(t).str() + "' to the end of the line before");
      return;
    }
  }

  ExprPtr callExpr(LPUParser::CallExprContext *c) {
    checkContinuation(c->LPAREN());
    ExprPtr callee = expr(exprChild(c, 0));
    if (!callee)
      return nullptr;
    auto call = std::make_unique<CallExpr>(std::move(callee), range(c));
    call->args = callArgs(c->callArg());
    return call;
  }

  std::vector<CallArg> callArgs(const std::vector<LPUParser::CallArgContext *> &contexts) {
    std::vector<CallArg> args;
    for (auto *a : contexts) {
      CallArg arg;
      arg.name = ident(a->IDENT());
      arg.value = expr(a->expr());
      arg.range = range(a);
      args.push_back(std::move(arg));
    }
    return args;
  }

  /// `nn.split_heads<H = 4>(x)`: the callee is the dotted name.
  ExprPtr genericCall(LPUParser::GenericCallContext *c) {
    ExprPtr callee;
    for (auto *part : c->IDENT()) {
      Ident id = ident(part);
      if (!callee)
        callee = std::make_unique<NameExpr>(id.name, id.range);
      else
        callee = std::make_unique<MemberExpr>(std::move(callee), id,
                                              SMRange(callee->range.Start, id.range.End));
    }
    if (!callee)
      return nullptr;
    auto call = std::make_unique<CallExpr>(std::move(callee), range(c));
    call->hasGenericArgs = true;
    call->genericArgs = genericArgs(c->genericArgs());
    call->args = callArgs(c->callArg());
    return call;
  }

  /// `blocks[i].forward<B = B>(x)`: the callee is the member.
  ExprPtr memberGenericCall(LPUParser::MemberGenericCallContext *c) {
    ExprPtr base = expr(c->expr());
    if (!base || !c->IDENT())
      return nullptr;
    Ident id = ident(c->IDENT());
    auto callee =
        std::make_unique<MemberExpr>(std::move(base), id, SMRange(range(c).Start, id.range.End));
    auto call = std::make_unique<CallExpr>(std::move(callee), range(c));
    call->hasGenericArgs = true;
    call->genericArgs = genericArgs(c->genericArgs());
    call->args = callArgs(c->callArg());
    return call;
  }

  ExprPtr indexExpr(LPUParser::IndexExprContext *c) {
    checkContinuation(c->LBRACK());
    ExprPtr base = expr(exprChild(c, 0));
    if (!base)
      return nullptr;
    if (!c->genericArgs()) {
      auto index = std::make_unique<IndexExpr>(std::move(base), range(c));
      index->items = indexItems(c->indexItem());
      return index;
    }
    // `blocks[i]<B = B>(x)`: a generic call of the element (a layer's forward).
    SMRange indexRange(range(c).Start, c->RBRACK() ? range(c->RBRACK()).End : range(c).End);
    auto index = std::make_unique<IndexExpr>(std::move(base), indexRange);
    index->items = indexItems(c->indexItem());
    auto call = std::make_unique<CallExpr>(std::move(index), range(c));
    call->hasGenericArgs = true;
    call->genericArgs = genericArgs(c->genericArgs());
    call->args = callArgs(c->callArg());
    return call;
  }

  std::vector<IndexItem> indexItems(const std::vector<LPUParser::IndexItemContext *> &contexts) {
    std::vector<IndexItem> items;
    for (auto *item : contexts) {
      IndexItem ii;
      ii.range = range(item);
      if (auto *s = dynamic_cast<LPUParser::SliceItemContext *>(item)) {
        ii.isSlice = true;
        // `lo:hi`, `:hi`, `lo:`, `:`: the bounds sit on either side of ':'.
        size_t colon = s->COLON() ? s->COLON()->getSymbol()->getTokenIndex() : 0;
        for (auto *bound : s->expr()) {
          bool before = bound->getStart()->getTokenIndex() < colon;
          (before ? ii.lo : ii.hi) = expr(bound);
        }
      } else if (auto *x = dynamic_cast<LPUParser::ExprItemContext *>(item)) {
        ii.index = expr(x->expr());
      }
      items.push_back(std::move(ii));
    }
    return items;
  }

  ExprPtr primaryExpr(LPUParser::PrimaryExprContext *ctx) {
    if (!ctx)
      return nullptr;
    SMRange r = range(ctx);
    if (wellFormed_) {
      antlr4::Token *first = ctx->getStart();
      switch (first->getType()) {
      case LPUParser::IDENT:
        if (ctx->children.size() == 1)
          return std::make_unique<NameExpr>(locator_.text(first).str(), r);
        return genericCall(static_cast<LPUParser::GenericCallContext *>(ctx));
      case LPUParser::INT:
        return std::make_unique<IntLit>(
            intValue(static_cast<LPUParser::IntLitContext *>(ctx)->INT()), r);
      case LPUParser::HEX_INT:
        return std::make_unique<IntLit>(
            intValue(static_cast<LPUParser::IntLitContext *>(ctx)->HEX_INT()), r);
      default: break; // the rarer kinds take the general path
      }
    }
    if (auto *c = dynamic_cast<LPUParser::GenericCallContext *>(ctx))
      return genericCall(c);
    if (auto *c = dynamic_cast<LPUParser::IntLitContext *>(ctx))
      return std::make_unique<IntLit>(intValue(c->INT() ? c->INT() : c->HEX_INT()), r);
    if (auto *c = dynamic_cast<LPUParser::FloatLitContext *>(ctx)) {
      std::string digits;
      llvm::StringRef text = c->FLOAT() ? locator_.text(c->FLOAT()->getSymbol()) : "";
      for (char ch : text)
        if (ch != '_')
          digits.push_back(ch);
      double value = bad_.count(c->FLOAT() ? c->FLOAT()->getSymbol()->getTokenIndex() : 0)
                         ? 0.0
                         : std::strtod(digits.c_str(), nullptr);
      return std::make_unique<FloatLit>(value, text.str(), r);
    }
    if (auto *c = dynamic_cast<LPUParser::BoolLitContext *>(ctx))
      return std::make_unique<BoolLit>(c->TRUE() != nullptr, r);
    if (auto *c = dynamic_cast<LPUParser::StringLitContext *>(ctx))
      return std::make_unique<StringLit>(
          c->STRING() ? decodeStringLiteral(locator_.text(c->STRING()->getSymbol())) : "", r);
    if (auto *c = dynamic_cast<LPUParser::NameExprContext *>(ctx))
      return std::make_unique<NameExpr>(ident(c->IDENT()).name, r);
    if (auto *c = dynamic_cast<LPUParser::ParenExprContext *>(ctx)) {
      if (c->expr().size() == 1)
        return expr(c->expr(0));
      // `(a, b)`: a tuple (one alternative with the parenthesis, so that a
      // parse error inside either reads the same).
      auto tuple = std::make_unique<TupleExpr>(r);
      for (auto *e : c->expr())
        if (ExprPtr x = expr(e))
          tuple->elements.push_back(std::move(x));
      return tuple;
    }
    if (auto *c = dynamic_cast<LPUParser::ListExprContext *>(ctx)) {
      auto list = std::make_unique<ListExpr>(r);
      for (auto *e : c->expr())
        if (ExprPtr x = expr(e))
          list->elements.push_back(std::move(x));
      return list;
    }
    return nullptr;
  }

  antlr4::BufferedTokenStream &tokens_;
  const Locator &locator_;
  DiagnosticEngine &diags_;
  const std::set<size_t> &bad_;
  /// The tree came from a parse without syntax errors, so every node has
  /// all its children and the kind of a node follows from its first token:
  /// the hot paths below use that instead of trying dynamic_casts in turn.
  bool wellFormed_;
  unsigned exprDepth_ = 0;
  bool reportedDepth_ = false;
  std::set<size_t> claimedDocs_;
};

} // namespace

std::unique_ptr<Module> buildModule(antlr4::ParserRuleContext *moduleCtx,
                                    antlr4::BufferedTokenStream &tokens, const Locator &locator,
                                    DiagnosticEngine &diags, const std::set<size_t> &lexicallyBad,
                                    bool wellFormed) {
  Adapter adapter(tokens, locator, diags, lexicallyBad, wellFormed);
  return adapter.module(dynamic_cast<LPUParser::ModuleContext *>(moduleCtx));
}

} // namespace lpu::detail
