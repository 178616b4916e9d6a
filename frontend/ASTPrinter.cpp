#include "frontend/ASTPrinter.h"

#include "frontend/Diagnostics.h"

namespace lpu {

using namespace ast;

llvm::StringRef ast::spelling(SizeOp op) {
  static const char *const kText[] = {"+", "-", "*", "/", "%"};
  return kText[static_cast<int>(op)];
}

llvm::StringRef ast::spelling(SizeFn fn) {
  static const char *const kText[] = {"min", "max", "floordiv", "ceildiv"};
  return kText[static_cast<int>(fn)];
}

llvm::StringRef ast::spelling(UnaryOp op) { return op == UnaryOp::Neg ? "-" : "!"; }

llvm::StringRef ast::spelling(BinaryOp op) {
  static const char *const kText[] = {"||", "&&", "==", "!=", "<", "<=", ">", ">=",
                                      "+",  "-",  "*",  "/",  "%", "@",  "**"};
  return kText[static_cast<int>(op)];
}

llvm::StringRef ast::spelling(CompareOp op) {
  static const char *const kText[] = {"==", "!=", "<", "<=", ">", ">="};
  return kText[static_cast<int>(op)];
}

namespace {
std::string genericArgsString(const std::vector<GenericArg> &args);
}

std::string toString(const SizeExpr &size) {
  if (auto *i = llvm::dyn_cast<SizeInt>(&size))
    return std::to_string(i->value);
  if (auto *n = llvm::dyn_cast<SizeName>(&size))
    return n->name;
  if (auto *b = llvm::dyn_cast<SizeBinary>(&size))
    return "(" + (b->lhs ? toString(*b->lhs) : "?") + " " + spelling(b->op).str() + " " +
           (b->rhs ? toString(*b->rhs) : "?") + ")";
  if (auto *c = llvm::dyn_cast<SizeCall>(&size))
    return spelling(c->fn).str() + "(" + (c->lhs ? toString(*c->lhs) : "?") + ", " +
           (c->rhs ? toString(*c->rhs) : "?") + ")";
  return "?";
}

std::string toString(const TypeExpr &type) {
  if (auto *a = llvm::dyn_cast<ArrayType>(&type))
    return "[" + (a->count ? toString(*a->count) : "?") + "] " +
           (a->element ? toString(*a->element) : "?");
  const auto &n = llvm::cast<NamedType>(type);
  std::string out;
  for (size_t i = 0; i < n.path.size(); ++i)
    out += (i ? "." : "") + n.path[i].name;
  if (n.hasGenericArgs)
    out += genericArgsString(n.genericArgs);
  if (n.hasDims) {
    out += "[";
    for (size_t i = 0; i < n.dims.size(); ++i) {
      if (i)
        out += ", ";
      const Dim &d = n.dims[i];
      out += d.isPack() ? ".." + d.pack.name : d.size ? toString(*d.size) : "?";
    }
    out += "]";
  }
  return out;
}

namespace {

std::string genericArgsString(const std::vector<GenericArg> &args) {
  std::string out = "<";
  for (size_t i = 0; i < args.size(); ++i) {
    const GenericArg &a = args[i];
    if (i)
      out += ", ";
    if (a.kind == GenericArg::Kind::Named)
      out += a.name.name + " = ";
    if (a.kind == GenericArg::Kind::Bucket) {
      out += a.name.name + " in {";
      for (size_t k = 0; k < a.bucket.size(); ++k)
        out += (k ? ", " : "") + toString(*a.bucket[k]);
      out += "}";
    } else if (a.size) {
      out += toString(*a.size);
    } else if (a.type) {
      out += toString(*a.type);
    } else {
      out += "?";
    }
  }
  return out + ">";
}

std::string quote(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    default: out.push_back(c);
    }
  }
  return out + "\"";
}

class Printer {
public:
  Printer(const llvm::SourceMgr &sources, llvm::raw_ostream &os) : sources_(sources), os_(os) {}

  void module(const Module &m) {
    os_ << "Module " << quote(m.fileName) << "\n";
    ++depth_;
    for (const DeclPtr &d : m.items)
      decl(*d);
    --depth_;
  }

private:
  llvm::raw_ostream &line() { return os_.indent(2 * depth_); }

  void range(SMRange r) {
    if (!r.Start.isValid()) {
      os_ << " <?>\n";
      return;
    }
    LineColumn b = lineColumn(sources_, r.Start);
    LineColumn e = r.End.isValid() ? lineColumn(sources_, r.End) : b;
    os_ << " <" << b.line << ":" << b.column << "-" << e.line << ":" << e.column << ">\n";
  }

  void doc(const Decl &d) {
    if (d.doc.empty())
      return;
    ++depth_;
    line() << "Doc " << quote(d.doc) << "\n";
    --depth_;
  }

  void generics(const std::vector<GenericParam> &params) {
    for (const GenericParam &g : params) {
      line() << "GenericParam ";
      switch (g.kind) {
      case GenericParam::Kind::Size:
        os_ << "size " << g.name.name;
        if (g.defaultValue)
          os_ << " = " << toString(*g.defaultValue);
        break;
      case GenericParam::Kind::Pack: os_ << "pack .." << g.name.name; break;
      case GenericParam::Kind::Dtype: os_ << "dtype " << g.name.name; break;
      }
      range(g.range);
    }
  }

  void type(llvm::StringRef label, const TypeExprPtr &t) {
    if (!t)
      return;
    line() << label << " " << toString(*t);
    range(t->range);
  }

  void decl(const Decl &d) {
    if (auto *i = llvm::dyn_cast<ImportDecl>(&d)) {
      line() << "ImportDecl ";
      if (i->isFile) {
        os_ << "file " << quote(i->file);
      } else {
        os_ << "module ";
        for (size_t k = 0; k < i->path.size(); ++k)
          os_ << (k ? "." : "") << i->path[k].name;
      }
      if (i->hasAlias)
        os_ << " as " << i->name.name;
      range(d.range);
      doc(d);
      return;
    }
    if (auto *c = llvm::dyn_cast<ConstDecl>(&d)) {
      line() << "ConstDecl " << c->name.name;
      range(d.range);
      doc(d);
      ++depth_;
      type("Type", c->type);
      expr(c->value.get());
      --depth_;
      return;
    }
    if (auto *f = llvm::dyn_cast<FnDecl>(&d)) {
      line() << "FnDecl " << f->name.name;
      range(d.range);
      doc(d);
      ++depth_;
      generics(f->generics);
      for (const FnParam &p : f->params) {
        line() << "Param " << p.name.name << ": " << (p.type ? toString(*p.type) : "?");
        range(p.range);
      }
      if (f->tupleResult) {
        line() << "Returns tuple";
        range(f->resultRange);
        ++depth_;
        for (const FnDecl::ResultField &r : f->results) {
          line() << "Result " << (r.name.name.empty() ? "_" : r.name.name) << ": "
                 << (r.type ? toString(*r.type) : "?");
          range(r.range);
        }
        --depth_;
      } else {
        type("Returns", f->returnType);
      }
      for (const WhereConstraint &w : f->where) {
        line() << "Where " << (w.lhs ? toString(*w.lhs) : "?") << " " << spelling(w.op) << " "
               << (w.rhs ? toString(*w.rhs) : "?");
        range(w.range);
      }
      block(f->body);
      --depth_;
      return;
    }
    if (auto *m = llvm::dyn_cast<ModelDecl>(&d)) {
      line() << "ModelDecl " << m->name.name;
      range(d.range);
      doc(d);
      ++depth_;
      generics(m->generics);
      for (const DeclPtr &member : m->members)
        decl(*member);
      --depth_;
      return;
    }
    if (auto *p = llvm::dyn_cast<ParamDecl>(&d)) {
      line() << (p->isState ? "StateDecl " : "ParamDecl ") << p->name.name << ": " << (p->type ? toString(*p->type) : "?");
      range(d.range);
      doc(d);
      return;
    }
    if (auto *e = llvm::dyn_cast<EntryDecl>(&d)) {
      line() << "EntryDecl " << e->name.name << " = ";
      for (size_t k = 0; k < e->target.size(); ++k) {
        os_ << (k ? "." : "") << e->target[k].name.name;
        if (e->target[k].hasGenericArgs)
          os_ << genericArgsString(e->target[k].genericArgs);
      }
      range(d.range);
      doc(d);
    }
  }

  void block(const Block &b) {
    line() << "Block";
    range(b.range);
    ++depth_;
    for (const StmtPtr &s : b.stmts)
      stmt(*s);
    --depth_;
  }

  void stmt(const Stmt &s) {
    if (auto *l = llvm::dyn_cast<LetStmt>(&s)) {
      line() << (l->isVar ? "VarStmt " : "LetStmt ") << l->name.name;
      if (!l->names.empty()) {
        os_ << "(";
        for (size_t i = 0; i < l->names.size(); ++i)
          os_ << (i ? ", " : "") << l->names[i].name;
        os_ << ")";
      }
      if (l->type)
        os_ << ": " << toString(*l->type);
      range(s.range);
      child(l->value.get());
    } else if (auto *a = llvm::dyn_cast<AssignStmt>(&s)) {
      line() << "AssignStmt " << a->name.name;
      range(s.range);
      child(a->value.get());
    } else if (auto *r = llvm::dyn_cast<ReturnStmt>(&s)) {
      line() << "ReturnStmt";
      range(s.range);
      child(r->value.get());
    } else if (auto *a = llvm::dyn_cast<AssertStmt>(&s)) {
      line() << "AssertStmt";
      if (a->message)
        os_ << " " << quote(*a->message);
      range(s.range);
      child(a->cond.get());
    } else if (auto *f = llvm::dyn_cast<ForStmt>(&s)) {
      line() << "ForStmt " << f->var.name;
      range(s.range);
      ++depth_;
      expr(f->lo.get());
      expr(f->hi.get());
      block(f->body);
      --depth_;
    } else if (auto *i = llvm::dyn_cast<IfStmt>(&s)) {
      line() << "IfStmt";
      range(s.range);
      ++depth_;
      expr(i->cond.get());
      block(i->then);
      if (i->otherwise) {
        line() << "Else\n";
        ++depth_;
        block(*i->otherwise);
        --depth_;
      }
      --depth_;
    } else if (auto *e = llvm::dyn_cast<ExprStmt>(&s)) {
      line() << "ExprStmt";
      range(s.range);
      child(e->expr.get());
    }
  }

  void child(const Expr *e) {
    ++depth_;
    expr(e);
    --depth_;
  }

  void expr(const Expr *e) {
    if (!e) {
      line() << "<missing>\n";
      return;
    }
    switch (e->kind()) {
    case Expr::Kind::Int: line() << "Int " << llvm::cast<IntLit>(e)->value; break;
    case Expr::Kind::Float: line() << "Float " << llvm::cast<FloatLit>(e)->spelling; break;
    case Expr::Kind::Bool:
      line() << "Bool " << (llvm::cast<BoolLit>(e)->value ? "true" : "false");
      break;
    case Expr::Kind::String: line() << "String " << quote(llvm::cast<StringLit>(e)->value); break;
    case Expr::Kind::Name: line() << "Name " << llvm::cast<NameExpr>(e)->name; break;
    case Expr::Kind::Unary: {
      auto *u = llvm::cast<UnaryExpr>(e);
      line() << "Unary '" << spelling(u->op) << "'";
      range(e->range);
      child(u->operand.get());
      return;
    }
    case Expr::Kind::Binary: {
      auto *b = llvm::cast<BinaryExpr>(e);
      line() << "Binary '" << spelling(b->op) << "'";
      range(e->range);
      child(b->lhs.get());
      child(b->rhs.get());
      return;
    }
    case Expr::Kind::Call: {
      auto *c = llvm::cast<CallExpr>(e);
      line() << "Call";
      if (c->hasGenericArgs)
        os_ << " " << genericArgsString(c->genericArgs);
      range(e->range);
      ++depth_;
      expr(c->callee.get());
      for (const CallArg &a : c->args) {
        line() << "Arg" << (a.name.empty() ? "" : " " + a.name.name);
        range(a.range);
        child(a.value.get());
      }
      --depth_;
      return;
    }
    case Expr::Kind::Index: {
      auto *x = llvm::cast<IndexExpr>(e);
      line() << "Index";
      range(e->range);
      ++depth_;
      expr(x->base.get());
      for (const IndexItem &item : x->items) {
        if (!item.isSlice) {
          line() << "At";
          range(item.range);
          child(item.index.get());
          continue;
        }
        line() << "Slice" << (item.lo ? "" : " from-start") << (item.hi ? "" : " to-end");
        range(item.range);
        if (item.lo)
          child(item.lo.get());
        if (item.hi)
          child(item.hi.get());
      }
      --depth_;
      return;
    }
    case Expr::Kind::Member: {
      auto *m = llvm::cast<MemberExpr>(e);
      line() << "Member ." << m->member.name;
      range(e->range);
      child(m->base.get());
      return;
    }
    case Expr::Kind::List: {
      auto *l = llvm::cast<ListExpr>(e);
      line() << "List";
      range(e->range);
      for (const ExprPtr &x : l->elements)
        child(x.get());
      return;
    }
    case Expr::Kind::Tuple: {
      auto *t = llvm::cast<TupleExpr>(e);
      line() << "Tuple";
      range(e->range);
      for (const ExprPtr &x : t->elements)
        child(x.get());
      return;
    }
    }
    range(e->range);
  }

  const llvm::SourceMgr &sources_;
  llvm::raw_ostream &os_;
  unsigned depth_ = 0;
};

} // namespace

void printAST(const Module &module, const llvm::SourceMgr &sources, llvm::raw_ostream &os) {
  Printer(sources, os).module(module);
}

} // namespace lpu
