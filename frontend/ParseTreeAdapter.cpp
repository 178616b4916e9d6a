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
    // The lexical pass checked range and form; this only converts.
    return static_cast<int64_t>(std::strtoull(digits.c_str(), nullptr, 0));
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
    d->returnType = typeExpr(ctx->typeExpr());
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

  /// Rebuilds a left-associative chain `a op b op c` from a flat rule.
  template <typename Operand, typename Node, typename MakeOperand, typename MapOp>
  std::unique_ptr<Node> chain(antlr4::ParserRuleContext *ctx, MakeOperand make, MapOp mapOp) {
    if (wellFormed_ && ctx->children.size() == 1)
      return make(static_cast<Operand *>(ctx->children[0]));
    std::unique_ptr<Node> acc;
    antlr4::tree::TerminalNode *pendingOp = nullptr;
    for (antlr4::tree::ParseTree *child : ctx->children) {
      if (auto *term = dynamic_cast<antlr4::tree::TerminalNode *>(child)) {
        pendingOp = term;
        continue;
      }
      auto *operand = dynamic_cast<Operand *>(child);
      if (!operand)
        continue;
      std::unique_ptr<Node> rhs = make(operand);
      if (!acc) {
        acc = std::move(rhs);
      } else if (pendingOp && rhs) {
        SMRange whole = join(acc->range, rhs->range);
        acc = mapOp(pendingOp, std::move(acc), std::move(rhs), whole, range(pendingOp));
      }
      pendingOp = nullptr;
    }
    return acc;
  }

  SizeExprPtr sizeExpr(LPUParser::SizeExprContext *ctx) {
    if (!ctx)
      return nullptr;
    return chain<LPUParser::SizeTermContext, SizeExpr>(
        ctx, [&](auto *t) { return sizeTerm(t); }, sizeBinary);
  }

  SizeExprPtr sizeTerm(LPUParser::SizeTermContext *ctx) {
    return chain<LPUParser::SizeAtomContext, SizeExpr>(
        ctx, [&](auto *a) { return sizeAtom(a); }, sizeBinary);
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

  SizeExprPtr sizeAtom(LPUParser::SizeAtomContext *ctx) {
    if (auto *c = dynamic_cast<LPUParser::SizeIntContext *>(ctx))
      return std::make_unique<SizeInt>(intValue(c->INT()), range(ctx));
    if (auto *c = dynamic_cast<LPUParser::SizeNameContext *>(ctx)) {
      Ident id = ident(c->IDENT());
      return std::make_unique<SizeName>(id.name, range(ctx));
    }
    if (auto *c = dynamic_cast<LPUParser::SizeParenContext *>(ctx))
      return sizeExpr(c->sizeExpr());
    if (auto *c = dynamic_cast<LPUParser::SizeCallContext *>(ctx)) {
      Ident fn = ident(c->IDENT());
      auto args = c->sizeExpr();
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
    return nullptr;
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
      auto s = std::make_unique<LetStmt>(false, ident(c->IDENT()), r);
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

  ExprPtr expr(LPUParser::ExprContext *ctx) { return ctx ? orExpr(ctx->orExpr()) : nullptr; }

  static ExprPtr binary(antlr4::tree::TerminalNode *op, ExprPtr lhs, ExprPtr rhs, SMRange whole,
                        SMRange opRange) {
    BinaryOp bop;
    switch (op->getSymbol()->getType()) {
    case LPUParser::OROR: bop = BinaryOp::Or; break;
    case LPUParser::ANDAND: bop = BinaryOp::And; break;
    case LPUParser::PLUS: bop = BinaryOp::Add; break;
    case LPUParser::MINUS: bop = BinaryOp::Sub; break;
    case LPUParser::STAR: bop = BinaryOp::Mul; break;
    case LPUParser::SLASH: bop = BinaryOp::Div; break;
    case LPUParser::PERCENT: bop = BinaryOp::Mod; break;
    case LPUParser::AT: bop = BinaryOp::MatMul; break;
    default: bop = BinaryOp::Pow; break;
    }
    return std::make_unique<BinaryExpr>(bop, std::move(lhs), std::move(rhs), whole, opRange);
  }

  ExprPtr orExpr(LPUParser::OrExprContext *ctx) {
    if (!ctx)
      return nullptr;
    return chain<LPUParser::AndExprContext, Expr>(ctx, [&](auto *c) { return andExpr(c); }, binary);
  }

  ExprPtr andExpr(LPUParser::AndExprContext *ctx) {
    return chain<LPUParser::CompareExprContext, Expr>(
        ctx, [&](auto *c) { return compareExpr(c); }, binary);
  }

  ExprPtr compareExpr(LPUParser::CompareExprContext *ctx) {
    if (wellFormed_ && ctx->children.size() == 1)
      return addExpr(static_cast<LPUParser::AddExprContext *>(ctx->children[0]));
    auto operands = ctx->addExpr();
    auto ops = ctx->compareOp();
    if (operands.empty())
      return nullptr;
    ExprPtr lhs = addExpr(operands[0]);
    if (ops.empty() || operands.size() < 2)
      return lhs;
    if (ops.size() > 1) {
      diags_.report(DiagID::ChainedComparison, range(ops[1]))
          .label(range(ops[0]), "first comparison")
          .help("join the comparisons with '&&': 'a < b && b < c'");
    }
    ExprPtr rhs = addExpr(operands[1]);
    static const BinaryOp kOps[] = {BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt,
                                    BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge};
    BinaryOp op = kOps[static_cast<int>(compareOp(ops[0]))];
    SMRange whole = join(lhs ? lhs->range : SMRange(), rhs ? rhs->range : SMRange());
    if (!lhs || !rhs)
      return nullptr;
    return std::make_unique<BinaryExpr>(op, std::move(lhs), std::move(rhs), whole, range(ops[0]));
  }

  ExprPtr addExpr(LPUParser::AddExprContext *ctx) {
    return chain<LPUParser::MulExprContext, Expr>(ctx, [&](auto *c) { return mulExpr(c); }, binary);
  }

  ExprPtr mulExpr(LPUParser::MulExprContext *ctx) {
    return chain<LPUParser::UnaryExprContext, Expr>(ctx, [&](auto *c) { return unaryExpr(c); },
                                                    binary);
  }

  ExprPtr unaryExpr(LPUParser::UnaryExprContext *ctx) {
    if (wellFormed_ && ctx->children.size() == 1)
      return powerExpr(static_cast<LPUParser::PowerExprContext *>(ctx->children[0]));
    if (auto *c = dynamic_cast<LPUParser::PrefixExprContext *>(ctx)) {
      ExprPtr operand = unaryExpr(c->unaryExpr());
      if (!operand)
        return nullptr;
      UnaryOp op = c->BANG() ? UnaryOp::Not : UnaryOp::Neg;
      SMRange opRange = range(c->BANG() ? c->BANG() : c->MINUS());
      return std::make_unique<UnaryExpr>(op, std::move(operand), range(ctx), opRange);
    }
    if (auto *c = dynamic_cast<LPUParser::PowerExpressionContext *>(ctx))
      return powerExpr(c->powerExpr());
    return nullptr;
  }

  ExprPtr powerExpr(LPUParser::PowerExprContext *ctx) {
    if (!ctx)
      return nullptr;
    if (wellFormed_ && ctx->children.size() == 1)
      return postfixExpr(static_cast<LPUParser::PostfixExprContext *>(ctx->children[0]));
    ExprPtr base = postfixExpr(ctx->postfixExpr());
    if (!ctx->POW())
      return base;
    ExprPtr exponent = unaryExpr(ctx->unaryExpr());
    if (!base || !exponent)
      return nullptr;
    return std::make_unique<BinaryExpr>(BinaryOp::Pow, std::move(base), std::move(exponent),
                                        range(ctx), range(ctx->POW()));
  }

  ExprPtr postfixExpr(LPUParser::PostfixExprContext *ctx) {
    if (!ctx)
      return nullptr;
    if (wellFormed_ && ctx->children.size() == 1)
      return primaryExpr(static_cast<LPUParser::PrimaryExprContext *>(ctx->children[0]));
    ExprPtr e = primaryExpr(ctx->primaryExpr());
    for (auto *op : ctx->postfixOp()) {
      if (!e)
        return nullptr;
      SMRange whole = join(e->range, range(op));
      if (auto *c = dynamic_cast<LPUParser::CallOpContext *>(op)) {
        auto call = std::make_unique<CallExpr>(std::move(e), whole);
        if (c->genericArgs()) {
          call->hasGenericArgs = true;
          call->genericArgs = genericArgs(c->genericArgs());
        }
        for (auto *a : c->callArg()) {
          CallArg arg;
          arg.name = ident(a->IDENT());
          arg.value = expr(a->expr());
          arg.range = range(a);
          call->args.push_back(std::move(arg));
        }
        e = std::move(call);
      } else if (auto *c = dynamic_cast<LPUParser::IndexOpContext *>(op)) {
        auto index = std::make_unique<IndexExpr>(std::move(e), whole);
        for (auto *item : c->indexItem()) {
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
          index->items.push_back(std::move(ii));
        }
        e = std::move(index);
      } else if (auto *c = dynamic_cast<LPUParser::MemberOpContext *>(op)) {
        e = std::make_unique<MemberExpr>(std::move(e), ident(c->IDENT()), whole);
      }
    }
    return e;
  }

  ExprPtr primaryExpr(LPUParser::PrimaryExprContext *ctx) {
    if (!ctx)
      return nullptr;
    SMRange r = range(ctx);
    if (wellFormed_) {
      antlr4::Token *first = ctx->getStart();
      switch (first->getType()) {
      case LPUParser::IDENT:
        return std::make_unique<NameExpr>(locator_.text(first).str(), r);
      case LPUParser::INT:
        return std::make_unique<IntLit>(
            intValue(static_cast<LPUParser::IntLitContext *>(ctx)->INT()), r);
      default: break; // the rarer kinds take the general path
      }
    }
    if (auto *c = dynamic_cast<LPUParser::IntLitContext *>(ctx))
      return std::make_unique<IntLit>(intValue(c->INT()), r);
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
    if (auto *c = dynamic_cast<LPUParser::ParenExprContext *>(ctx))
      return expr(c->expr());
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
