// The .lpu abstract syntax tree: typed node classes, each with the exact
// source range it was written at. Built from the parse tree by
// ParseTreeAdapter; nothing of ANTLR appears here.
//
// Node families use LLVM-style RTTI (a kind enum and classof), so passes use
// llvm::isa / llvm::dyn_cast.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Casting.h>
#include <llvm/Support/SMLoc.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lpu::ast {

using llvm::SMLoc;
using llvm::SMRange;

/// A name as written, with where it was written.
struct Ident {
  std::string name;
  SMRange range;
  bool empty() const { return name.empty(); }
};

// ------------------------------------------------------------------ sizes

class SizeExpr {
public:
  enum class Kind { Int, Name, Binary, Call };
  virtual ~SizeExpr() = default;
  Kind kind() const { return kind_; }
  SMRange range;

protected:
  SizeExpr(Kind kind, SMRange range) : range(range), kind_(kind) {}

private:
  Kind kind_;
};
using SizeExprPtr = std::unique_ptr<SizeExpr>;

class SizeInt : public SizeExpr {
public:
  SizeInt(int64_t value, SMRange range) : SizeExpr(Kind::Int, range), value(value) {}
  int64_t value;
  static bool classof(const SizeExpr *e) { return e->kind() == Kind::Int; }
};

class SizeName : public SizeExpr {
public:
  SizeName(std::string name, SMRange range) : SizeExpr(Kind::Name, range), name(std::move(name)) {}
  std::string name;
  static bool classof(const SizeExpr *e) { return e->kind() == Kind::Name; }
};

enum class SizeOp { Add, Sub, Mul, Div, Mod };
llvm::StringRef spelling(SizeOp op);

class SizeBinary : public SizeExpr {
public:
  SizeBinary(SizeOp op, SizeExprPtr lhs, SizeExprPtr rhs, SMRange range, SMRange opRange)
      : SizeExpr(Kind::Binary, range), op(op), opRange(opRange), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  SizeOp op;
  SMRange opRange;
  SizeExprPtr lhs, rhs;
  static bool classof(const SizeExpr *e) { return e->kind() == Kind::Binary; }
};

enum class SizeFn { Min, Max, FloorDiv, CeilDiv };
llvm::StringRef spelling(SizeFn fn);

class SizeCall : public SizeExpr {
public:
  SizeCall(SizeFn fn, SizeExprPtr a, SizeExprPtr b, SMRange range)
      : SizeExpr(Kind::Call, range), fn(fn), lhs(std::move(a)), rhs(std::move(b)) {}
  SizeFn fn;
  SizeExprPtr lhs, rhs;
  static bool classof(const SizeExpr *e) { return e->kind() == Kind::Call; }
};

// ------------------------------------------------------------------ types

class TypeExpr;
using TypeExprPtr = std::unique_ptr<TypeExpr>;

/// One argument between '<' and '>': positional (`D`, `f16[B, S]`), named
/// (`L = 12`) or a bucket set (`S in {128, 256}`). A bare name is held as a
/// size; the checker reads it as a dtype where the parameter is `T: dtype`.
struct GenericArg {
  enum class Kind { Positional, Named, Bucket };
  Kind kind = Kind::Positional;
  Ident name;              // Named and Bucket
  SizeExprPtr size;        // the value when it is a size
  TypeExprPtr type;        // the value when it is a type
  std::vector<SizeExprPtr> bucket;
  SMRange range;
};

/// A dimension of a tensor type: a size, or the batch pack `..B`.
struct Dim {
  SizeExprPtr size;
  Ident pack; // set for `..B`
  SMRange range;
  bool isPack() const { return !pack.empty(); }
};

class TypeExpr {
public:
  enum class Kind { Named, Array };
  virtual ~TypeExpr() = default;
  Kind kind() const { return kind_; }
  SMRange range;

protected:
  TypeExpr(Kind kind, SMRange range) : range(range), kind_(kind) {}

private:
  Kind kind_;
};

/// `f16`, `f16[B, D]`, `T[N]`, `nn.Linear<D, H>`, `Block<D>`.
class NamedType : public TypeExpr {
public:
  explicit NamedType(SMRange range) : TypeExpr(Kind::Named, range) {}
  std::vector<Ident> path;
  std::vector<GenericArg> genericArgs;
  bool hasGenericArgs = false;
  bool hasDims = false;
  std::vector<Dim> dims;
  static bool classof(const TypeExpr *t) { return t->kind() == Kind::Named; }
};

/// `[L] Block<D>`: an array of L sub-models.
class ArrayType : public TypeExpr {
public:
  ArrayType(SizeExprPtr count, TypeExprPtr element, SMRange range)
      : TypeExpr(Kind::Array, range), count(std::move(count)), element(std::move(element)) {}
  SizeExprPtr count;
  TypeExprPtr element;
  static bool classof(const TypeExpr *t) { return t->kind() == Kind::Array; }
};

// ------------------------------------------------------------------ expressions

class Expr {
public:
  enum class Kind { Int, Float, Bool, String, Name, Unary, Binary, Call, Index, Member, List, Tuple };
  virtual ~Expr() = default;
  Kind kind() const { return kind_; }
  SMRange range;

protected:
  Expr(Kind kind, SMRange range) : range(range), kind_(kind) {}

private:
  Kind kind_;
};
using ExprPtr = std::unique_ptr<Expr>;

class IntLit : public Expr {
public:
  IntLit(int64_t value, SMRange range) : Expr(Kind::Int, range), value(value) {}
  int64_t value;
  static bool classof(const Expr *e) { return e->kind() == Kind::Int; }
};

class FloatLit : public Expr {
public:
  FloatLit(double value, std::string spelling, SMRange range)
      : Expr(Kind::Float, range), value(value), spelling(std::move(spelling)) {}
  double value;
  std::string spelling; // as written, for printing
  static bool classof(const Expr *e) { return e->kind() == Kind::Float; }
};

class BoolLit : public Expr {
public:
  BoolLit(bool value, SMRange range) : Expr(Kind::Bool, range), value(value) {}
  bool value;
  static bool classof(const Expr *e) { return e->kind() == Kind::Bool; }
};

class StringLit : public Expr {
public:
  StringLit(std::string value, SMRange range) : Expr(Kind::String, range), value(std::move(value)) {}
  std::string value; // escapes resolved
  static bool classof(const Expr *e) { return e->kind() == Kind::String; }
};

class NameExpr : public Expr {
public:
  NameExpr(std::string name, SMRange range) : Expr(Kind::Name, range), name(std::move(name)) {}
  std::string name;
  static bool classof(const Expr *e) { return e->kind() == Kind::Name; }
};

enum class UnaryOp { Neg, Not };
llvm::StringRef spelling(UnaryOp op);

class UnaryExpr : public Expr {
public:
  UnaryExpr(UnaryOp op, ExprPtr operand, SMRange range, SMRange opRange)
      : Expr(Kind::Unary, range), op(op), opRange(opRange), operand(std::move(operand)) {}
  UnaryOp op;
  SMRange opRange;
  ExprPtr operand;
  static bool classof(const Expr *e) { return e->kind() == Kind::Unary; }
};

enum class BinaryOp { Or, And, Eq, Ne, Lt, Le, Gt, Ge, Add, Sub, Mul, Div, Mod, MatMul, Pow };
llvm::StringRef spelling(BinaryOp op);

class BinaryExpr : public Expr {
public:
  BinaryExpr(BinaryOp op, ExprPtr lhs, ExprPtr rhs, SMRange range, SMRange opRange)
      : Expr(Kind::Binary, range), op(op), opRange(opRange), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  BinaryOp op;
  SMRange opRange;
  ExprPtr lhs, rhs;
  static bool classof(const Expr *e) { return e->kind() == Kind::Binary; }
};

struct CallArg {
  Ident name; // empty for a positional argument
  ExprPtr value;
  SMRange range;
};

class CallExpr : public Expr {
public:
  CallExpr(ExprPtr callee, SMRange range) : Expr(Kind::Call, range), callee(std::move(callee)) {}
  ExprPtr callee;
  bool hasGenericArgs = false;
  std::vector<GenericArg> genericArgs;
  std::vector<CallArg> args;
  static bool classof(const Expr *e) { return e->kind() == Kind::Call; }
};

/// One item between brackets: an index `i`, or a slice `a:b` (either bound
/// may be missing).
struct IndexItem {
  bool isSlice = false;
  ExprPtr index; // !isSlice
  ExprPtr lo, hi; // isSlice; null when omitted
  SMRange range;
};

class IndexExpr : public Expr {
public:
  IndexExpr(ExprPtr base, SMRange range) : Expr(Kind::Index, range), base(std::move(base)) {}
  ExprPtr base;
  std::vector<IndexItem> items;
  static bool classof(const Expr *e) { return e->kind() == Kind::Index; }
};

class MemberExpr : public Expr {
public:
  MemberExpr(ExprPtr base, Ident member, SMRange range)
      : Expr(Kind::Member, range), base(std::move(base)), member(std::move(member)) {}
  ExprPtr base;
  Ident member;
  static bool classof(const Expr *e) { return e->kind() == Kind::Member; }
};

class ListExpr : public Expr {
public:
  explicit ListExpr(SMRange range) : Expr(Kind::List, range) {}
  std::vector<ExprPtr> elements;
  static bool classof(const Expr *e) { return e->kind() == Kind::List; }
};

/// `(a, b)`: several values, such as the results of a fn declared to
/// return a tuple.
class TupleExpr : public Expr {
public:
  explicit TupleExpr(SMRange range) : Expr(Kind::Tuple, range) {}
  std::vector<ExprPtr> elements;
  static bool classof(const Expr *e) { return e->kind() == Kind::Tuple; }
};

// ------------------------------------------------------------------ statements

class Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

struct Block {
  std::vector<StmtPtr> stmts;
  SMRange range;
};

class Stmt {
public:
  enum class Kind { Let, Assign, Return, Assert, For, If, Expr };
  virtual ~Stmt() = default;
  Kind kind() const { return kind_; }
  SMRange range;

protected:
  Stmt(Kind kind, SMRange range) : range(range), kind_(kind) {}

private:
  Kind kind_;
};

/// `let x = e`, `let x: T = e`, and `var x = e` (mutable: may be rebound).
class LetStmt : public Stmt {
public:
  LetStmt(bool isVar, Ident name, SMRange range)
      : Stmt(Kind::Let, range), isVar(isVar), name(std::move(name)) {}
  bool isVar;
  Ident name;                // empty when `names` destructures a tuple
  std::vector<Ident> names;  // `let (a, b) = f(x)`
  TypeExprPtr type; // optional
  ExprPtr value;
  static bool classof(const Stmt *s) { return s->kind() == Kind::Let; }
};

class AssignStmt : public Stmt {
public:
  AssignStmt(Ident name, ExprPtr value, SMRange range)
      : Stmt(Kind::Assign, range), name(std::move(name)), value(std::move(value)) {}
  Ident name;
  ExprPtr value;
  static bool classof(const Stmt *s) { return s->kind() == Kind::Assign; }
};

class ReturnStmt : public Stmt {
public:
  ReturnStmt(ExprPtr value, SMRange range) : Stmt(Kind::Return, range), value(std::move(value)) {}
  ExprPtr value;
  static bool classof(const Stmt *s) { return s->kind() == Kind::Return; }
};

class AssertStmt : public Stmt {
public:
  AssertStmt(ExprPtr cond, SMRange range) : Stmt(Kind::Assert, range), cond(std::move(cond)) {}
  ExprPtr cond;
  std::optional<std::string> message;
  SMRange messageRange;
  static bool classof(const Stmt *s) { return s->kind() == Kind::Assert; }
};

/// `for i in lo..hi { ... }`: bounds are compile-time values; unrolled.
class ForStmt : public Stmt {
public:
  ForStmt(Ident var, SMRange range) : Stmt(Kind::For, range), var(std::move(var)) {}
  Ident var;
  ExprPtr lo, hi;
  Block body;
  static bool classof(const Stmt *s) { return s->kind() == Kind::For; }
};

class IfStmt : public Stmt {
public:
  explicit IfStmt(SMRange range) : Stmt(Kind::If, range) {}
  ExprPtr cond;
  Block then;
  /// `else { ... }` is held as a block; `else if` as a block holding one IfStmt.
  std::optional<Block> otherwise;
  static bool classof(const Stmt *s) { return s->kind() == Kind::If; }
};

class ExprStmt : public Stmt {
public:
  ExprStmt(ExprPtr expr, SMRange range) : Stmt(Kind::Expr, range), expr(std::move(expr)) {}
  ExprPtr expr;
  static bool classof(const Stmt *s) { return s->kind() == Kind::Expr; }
};

// ------------------------------------------------------------------ declarations

struct GenericParam {
  enum class Kind { Size, Pack, Dtype };
  Kind kind = Kind::Size;
  Ident name;
  SizeExprPtr defaultValue; // sizes only, optional
  SMRange range;
};

enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge };
llvm::StringRef spelling(CompareOp op);

/// One `where` constraint: `D % H == 0`, `S <= 2048`.
struct WhereConstraint {
  SizeExprPtr lhs;
  CompareOp op = CompareOp::Eq;
  SizeExprPtr rhs;
  SMRange range;
};

struct FnParam {
  Ident name;
  TypeExprPtr type;
  SMRange range;
};

class Decl {
public:
  enum class Kind { Import, Const, Fn, Model, Param, Entry };
  virtual ~Decl() = default;
  Kind kind() const { return kind_; }
  SMRange range;
  Ident name;
  /// The `///` comments before the declaration, joined by newlines, with
  /// the slashes and one following space removed.
  std::string doc;

protected:
  Decl(Kind kind, SMRange range) : range(range), kind_(kind) {}

private:
  Kind kind_;
};
using DeclPtr = std::unique_ptr<Decl>;

/// `import std.nn`, `import std.nn as layers`, `import "a/b.lpu" as b`. The
/// `name` of the declaration is the alias (the last path part by default).
class ImportDecl : public Decl {
public:
  explicit ImportDecl(SMRange range) : Decl(Kind::Import, range) {}
  bool isFile = false;
  std::vector<Ident> path; // module path
  std::string file;        // file path
  SMRange fileRange;
  bool hasAlias = false;
  static bool classof(const Decl *d) { return d->kind() == Kind::Import; }
};

class ConstDecl : public Decl {
public:
  explicit ConstDecl(SMRange range) : Decl(Kind::Const, range) {}
  TypeExprPtr type; // optional
  ExprPtr value;
  static bool classof(const Decl *d) { return d->kind() == Kind::Const; }
};

class FnDecl : public Decl {
public:
  explicit FnDecl(SMRange range) : Decl(Kind::Fn, range) {}
  std::vector<GenericParam> generics;
  std::vector<FnParam> params;
  /// The result: one type, or a tuple of fields (`results`, when
  /// `tupleResult`; returnType is then null) spanning `resultRange`.
  TypeExprPtr returnType;
  struct ResultField {
    Ident name; // empty when unnamed
    TypeExprPtr type;
    SMRange range;
  };
  std::vector<ResultField> results;
  bool tupleResult = false;
  SMRange resultRange;
  std::vector<WhereConstraint> where;
  Block body;
  static bool classof(const Decl *d) { return d->kind() == Kind::Fn; }
};

class ParamDecl : public Decl {
public:
  explicit ParamDecl(SMRange range) : Decl(Kind::Param, range) {}
  TypeExprPtr type;
  /// `state`: a tensor kept between calls, which the model's fns assign.
  bool isState = false;
  static bool classof(const Decl *d) { return d->kind() == Kind::Param; }
};

class ModelDecl : public Decl {
public:
  explicit ModelDecl(SMRange range) : Decl(Kind::Model, range) {}
  std::vector<GenericParam> generics;
  std::vector<DeclPtr> members; // ParamDecl, FnDecl, ConstDecl in source order
  static bool classof(const Decl *d) { return d->kind() == Kind::Model; }
};

/// One part of an entry target: `Stack<L = 12, D = 768>` or `forward<S in {..}>`.
struct PathSegment {
  Ident name;
  bool hasGenericArgs = false;
  std::vector<GenericArg> genericArgs;
  SMRange range;
};

/// `entry encode = Stack<L = 12, D = 768>.forward<B = 1, S in {128, 256}>`.
class EntryDecl : public Decl {
public:
  explicit EntryDecl(SMRange range) : Decl(Kind::Entry, range) {}
  std::vector<PathSegment> target;
  static bool classof(const Decl *d) { return d->kind() == Kind::Entry; }
};

/// One source file.
struct Module {
  std::string fileName;
  unsigned bufferId = 0;
  std::vector<DeclPtr> items;
};

} // namespace lpu::ast
