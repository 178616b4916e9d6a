// The parser builds the AST a reader expects: precedence and associativity,
// generic calls versus comparisons, slices, types, entries, source ranges.
#include "ParseHelpers.h"

#include <gtest/gtest.h>

using namespace lpu;
using namespace lpu::ast;
using lpu::test::parse;

namespace {

/// A compact prefix rendering of an expression tree for assertions.
std::string sexpr(const Expr *e) {
  if (!e)
    return "<null>";
  if (auto *i = llvm::dyn_cast<IntLit>(e))
    return std::to_string(i->value);
  if (auto *f = llvm::dyn_cast<FloatLit>(e))
    return f->spelling;
  if (auto *n = llvm::dyn_cast<NameExpr>(e))
    return n->name;
  if (auto *u = llvm::dyn_cast<UnaryExpr>(e))
    return "(" + spelling(u->op).str() + " " + sexpr(u->operand.get()) + ")";
  if (auto *b = llvm::dyn_cast<BinaryExpr>(e))
    return "(" + spelling(b->op).str() + " " + sexpr(b->lhs.get()) + " " + sexpr(b->rhs.get()) + ")";
  if (auto *c = llvm::dyn_cast<CallExpr>(e)) {
    std::string out = "(call " + sexpr(c->callee.get());
    for (const CallArg &a : c->args)
      out += " " + (a.name.empty() ? "" : a.name.name + "=") + sexpr(a.value.get());
    return out + ")";
  }
  if (auto *m = llvm::dyn_cast<MemberExpr>(e))
    return "(. " + sexpr(m->base.get()) + " " + m->member.name + ")";
  if (auto *l = llvm::dyn_cast<ListExpr>(e)) {
    std::string out = "[";
    for (const ExprPtr &x : l->elements)
      out += (out.size() > 1 ? " " : "") + sexpr(x.get());
    return out + "]";
  }
  if (auto *x = llvm::dyn_cast<IndexExpr>(e)) {
    std::string out = "(index " + sexpr(x->base.get());
    for (const IndexItem &item : x->items)
      out += item.isSlice ? " " + (item.lo ? sexpr(item.lo.get()) : "") + ":" +
                                (item.hi ? sexpr(item.hi.get()) : "")
                          : " " + sexpr(item.index.get());
    return out + ")";
  }
  return "?";
}

std::string exprOf(const std::string &text) {
  auto p = parse("fn f() -> f32 { return " + text + " }\n");
  EXPECT_EQ(p->codes(), "") << text;
  return sexpr(test::returnedExpr(*p));
}

TEST(ParserTest, ArithmeticPrecedenceAndAssociativity) {
  EXPECT_EQ(exprOf("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(exprOf("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(exprOf("a / b % c"), "(% (/ a b) c)");
  EXPECT_EQ(exprOf("x @ w + b"), "(+ (@ x w) b)");
  EXPECT_EQ(exprOf("a * b @ c"), "(@ (* a b) c)");
}

TEST(ParserTest, PowerIsRightAssociativeAndBindsTighterThanUnaryMinus) {
  EXPECT_EQ(exprOf("a ** b ** c"), "(** a (** b c))");
  EXPECT_EQ(exprOf("-x ** 2"), "(- (** x 2))");
  EXPECT_EQ(exprOf("2 ** -1"), "(** 2 (- 1))");
  EXPECT_EQ(exprOf("-a * b"), "(* (- a) b)");
}

TEST(ParserTest, LogicalAndComparisonLevels) {
  EXPECT_EQ(exprOf("a || b && c"), "(|| a (&& b c))");
  EXPECT_EQ(exprOf("a < b && c >= d"), "(&& (< a b) (>= c d))");
  EXPECT_EQ(exprOf("a + 1 == b * 2"), "(== (+ a 1) (* b 2))");
  EXPECT_EQ(exprOf("!a || b"), "(|| (! a) b)");
}

TEST(ParserTest, ChainedComparisonIsAnError) {
  auto p = parse("fn f() -> bool { return a < b < c }\n");
  EXPECT_EQ(p->codes(), "E0104");
}

TEST(ParserTest, GenericCallsAndComparisonsAreTellable) {
  EXPECT_EQ(exprOf("iota<N>()"), "(call iota)");
  EXPECT_EQ(exprOf("a < b"), "(< a b)");
  EXPECT_EQ(exprOf("f<B = 4>(x) > y"), "(> (call f x) y)");
  auto p = parse("fn f() -> f32 { return zeros<f16[B, S]>() }\n");
  auto *call = llvm::dyn_cast<CallExpr>(test::returnedExpr(*p));
  ASSERT_TRUE(call);
  ASSERT_TRUE(call->hasGenericArgs);
  ASSERT_EQ(call->genericArgs.size(), 1u);
  ASSERT_TRUE(call->genericArgs[0].type);
  EXPECT_EQ(toString(*call->genericArgs[0].type), "f16[B, S]");
}

TEST(ParserTest, GenericCallsOnAnyCallee) {
  EXPECT_EQ(exprOf("blocks[i].forward<B = B>(x)"), "(call (. (index blocks i) forward) x)");
  EXPECT_EQ(exprOf("a[0].b[1].f<4>(x, axis = 1)"),
            "(call (. (index (. (index a 0) b) 1) f) x axis=1)");
  EXPECT_EQ(exprOf("blocks[i].forward<B = B>(h) + 1"),
            "(+ (call (. (index blocks i) forward) h) 1)");
  EXPECT_EQ(exprOf("blocks[i]<B = B>(x)"), "(call (index blocks i) x)");
  // As for a dotted name, the generic call wins over comparisons.
  EXPECT_EQ(exprOf("x[0].a < b > (c)"), "(call (. (index x 0) a) c)");
  EXPECT_EQ(exprOf("x[0].a < b"), "(< (. (index x 0) a) b)");
  auto p = parse("fn f() -> f32 { return layers[2].g<N, T = f16>(y) }\n");
  ASSERT_EQ(p->codes(), "");
  auto *call = llvm::dyn_cast<CallExpr>(test::returnedExpr(*p));
  ASSERT_TRUE(call);
  ASSERT_TRUE(call->hasGenericArgs);
  ASSERT_EQ(call->genericArgs.size(), 2u);
  EXPECT_EQ(call->genericArgs[1].name.name, "T");
  auto *member = llvm::dyn_cast<MemberExpr>(call->callee.get());
  ASSERT_TRUE(member);
  EXPECT_EQ(member->member.name, "g");
}

TEST(ParserTest, CallsMembersIndexingAndLists) {
  EXPECT_EQ(exprOf("softmax(f32(x), axis = 1)"), "(call softmax (call f32 x) axis=1)");
  EXPECT_EQ(exprOf("layers[i](h)"), "(call (index layers i) h)");
  EXPECT_EQ(exprOf("x[:, 0:S / 2, :]"), "(index x : 0:(/ S 2) :)");
  EXPECT_EQ(exprOf("x[1:]"), "(index x 1:)");
  EXPECT_EQ(exprOf("x[:n]"), "(index x :n)");
  EXPECT_EQ(exprOf("sum(x, axis = [2, 3])"), "(call sum x axis=[2 3])");
  EXPECT_EQ(exprOf("a.b.c"), "(. (. a b) c)");
  EXPECT_EQ(exprOf("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(exprOf("1_000 + 0x2A"), "(+ 1000 42)");
  EXPECT_EQ(exprOf("010 + 0xff_ff"), "(+ 10 65535)"); // leading zeros are not octal
}

TEST(ParserTest, TypesWithSizeExpressionsAndPacks) {
  auto p = parse("fn f<..B, T: dtype, N, M = 4 * N>(x: T[..B, N]) -> f16[..B, ceildiv(N, 2) + M - 1]"
                 " where N % 2 == 0, M <= 4096 { return x }\n");
  ASSERT_EQ(p->codes(), "");
  auto *fn = llvm::cast<FnDecl>(p->module->items[0].get());
  ASSERT_EQ(fn->generics.size(), 4u);
  EXPECT_EQ(fn->generics[0].kind, GenericParam::Kind::Pack);
  EXPECT_EQ(fn->generics[1].kind, GenericParam::Kind::Dtype);
  EXPECT_EQ(fn->generics[2].kind, GenericParam::Kind::Size);
  ASSERT_TRUE(fn->generics[3].defaultValue);
  EXPECT_EQ(toString(*fn->generics[3].defaultValue), "(4 * N)");
  EXPECT_EQ(toString(*fn->params[0].type), "T[..B, N]");
  EXPECT_EQ(toString(*fn->returnType), "f16[..B, ((ceildiv(N, 2) + M) - 1)]");
  ASSERT_EQ(fn->where.size(), 2u);
  EXPECT_EQ(fn->where[0].op, CompareOp::Eq);
  EXPECT_EQ(fn->where[1].op, CompareOp::Le);
}

TEST(ParserTest, ModelsParamsArraysAndEntries) {
  auto p = parse("model Stack<L, D> {\n"
                 "  param layers: [L] Block<D>\n"
                 "  param ln: nn.LayerNorm<D>\n"
                 "  fn forward<B, S>(x: f16[B, S, D]) -> f16[B, S, D] { return x }\n"
                 "}\n"
                 "entry encode = Stack<L = 12, D = 768>.forward<B = 1, S in {128, 256, 512}>\n");
  ASSERT_EQ(p->codes(), "");
  ASSERT_EQ(p->module->items.size(), 2u);
  auto *model = llvm::cast<ModelDecl>(p->module->items[0].get());
  ASSERT_EQ(model->members.size(), 3u);
  auto *layers = llvm::cast<ParamDecl>(model->members[0].get());
  EXPECT_EQ(toString(*layers->type), "[L] Block<D>");
  EXPECT_TRUE(llvm::isa<ArrayType>(layers->type.get()));
  auto *entry = llvm::cast<EntryDecl>(p->module->items[1].get());
  ASSERT_EQ(entry->target.size(), 2u);
  ASSERT_EQ(entry->target[1].genericArgs.size(), 2u);
  const GenericArg &bucket = entry->target[1].genericArgs[1];
  EXPECT_EQ(bucket.kind, GenericArg::Kind::Bucket);
  EXPECT_EQ(bucket.name.name, "S");
  EXPECT_EQ(bucket.bucket.size(), 3u);
}

TEST(ParserTest, StatementsAndDocComments) {
  auto p = parse("/// Adds.\n/// Twice.\nfn f(x: f16[4]) -> f16[4] {\n"
                 "  var h = x\n  for i in 0..3 { h = h + x }\n"
                 "  if N > 2 { h = h * 2 } else if N > 1 { h = h } else { h = x }\n"
                 "  assert N > 0, \"N must be \\\"positive\\\"\"\n  return h\n}\n");
  ASSERT_EQ(p->codes(), "");
  auto *fn = llvm::cast<FnDecl>(p->module->items[0].get());
  EXPECT_EQ(fn->doc, "Adds.\nTwice.");
  ASSERT_EQ(fn->body.stmts.size(), 5u);
  EXPECT_TRUE(llvm::cast<LetStmt>(fn->body.stmts[0].get())->isVar);
  auto *loop = llvm::cast<ForStmt>(fn->body.stmts[1].get());
  EXPECT_EQ(loop->var.name, "i");
  EXPECT_EQ(loop->body.stmts.size(), 1u);
  auto *branch = llvm::cast<IfStmt>(fn->body.stmts[2].get());
  ASSERT_TRUE(branch->otherwise.has_value());
  ASSERT_EQ(branch->otherwise->stmts.size(), 1u);
  EXPECT_TRUE(llvm::isa<IfStmt>(branch->otherwise->stmts[0].get()));
  auto *check = llvm::cast<AssertStmt>(fn->body.stmts[3].get());
  EXPECT_EQ(check->message, std::optional<std::string>("N must be \"positive\""));
}

TEST(ParserTest, RangesPointAtTheSource) {
  auto p = parse("fn f(x: f16[4]) -> f16[4] {\n  return x + y\n}\n");
  auto *sum = llvm::cast<BinaryExpr>(test::returnedExpr(*p));
  LineColumn begin = lineColumn(*p->sources, sum->range.Start);
  LineColumn end = lineColumn(*p->sources, sum->range.End);
  EXPECT_EQ(begin.line, 2u);
  EXPECT_EQ(begin.column, 10u);
  EXPECT_EQ(end.column, 15u);
  EXPECT_EQ(lineColumn(*p->sources, sum->opRange.Start).column, 12u);
}

TEST(ParserTest, NonAsciiCommentsKeepByteColumnsRight) {
  // The comment holds multi-byte characters; the error after it must still
  // point at the right byte.
  auto p = parse("// naïve — größe\nconst A = 1 # 2\n");
  ASSERT_EQ(p->diagnostics.diagnostics.size(), 1u);
  LineColumn at = lineColumn(*p->sources, p->diagnostics.diagnostics[0].primary.Start);
  EXPECT_EQ(at.line, 2u);
  EXPECT_EQ(at.column, 13u);
}

TEST(ParserTest, ImportsOfModulesAndFiles) {
  auto p = parse("import std.nn\nimport std.nn as layers\nimport \"blocks/a.lpu\" as a\n");
  ASSERT_EQ(p->codes(), "");
  auto *plain = llvm::cast<ImportDecl>(p->module->items[0].get());
  EXPECT_EQ(plain->name.name, "nn");
  EXPECT_FALSE(plain->hasAlias);
  EXPECT_EQ(llvm::cast<ImportDecl>(p->module->items[1].get())->name.name, "layers");
  auto *file = llvm::cast<ImportDecl>(p->module->items[2].get());
  EXPECT_TRUE(file->isFile);
  EXPECT_EQ(file->file, "blocks/a.lpu");
  EXPECT_EQ(file->name.name, "a");
}

} // namespace
