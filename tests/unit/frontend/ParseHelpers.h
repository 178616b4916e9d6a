// Test helpers: parse a string as a file and collect its diagnostics.
#pragma once

#include "frontend/ASTPrinter.h"
#include "frontend/Parser.h"

#include <llvm/Support/MemoryBuffer.h>

#include <memory>
#include <string>

namespace lpu::test {

struct Parsed {
  std::unique_ptr<llvm::SourceMgr> sources = std::make_unique<llvm::SourceMgr>();
  CollectingConsumer diagnostics;
  std::unique_ptr<ast::Module> module;
  unsigned bufferId = 0;

  std::string codes() const {
    std::string out;
    for (const Diagnostic &d : diagnostics.diagnostics)
      out += std::string(out.empty() ? "" : " ") + d.code();
    return out;
  }
};

inline std::unique_ptr<Parsed> parse(llvm::StringRef text) {
  auto p = std::make_unique<Parsed>();
  p->bufferId = p->sources->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "test.lpu"), llvm::SMLoc());
  DiagnosticEngine diags(*p->sources);
  diags.setConsumer(&p->diagnostics);
  p->module = parseModule(diags, p->bufferId);
  return p;
}

/// The first statement's expression of `fn f() -> f32 { return EXPR }`.
inline const ast::Expr *returnedExpr(const Parsed &p) {
  if (p.module->items.empty())
    return nullptr;
  auto *fn = llvm::dyn_cast<ast::FnDecl>(p.module->items[0].get());
  if (!fn || fn->body.stmts.empty())
    return nullptr;
  auto *ret = llvm::dyn_cast<ast::ReturnStmt>(fn->body.stmts[0].get());
  return ret ? ret->value.get() : nullptr;
}

} // namespace lpu::test
