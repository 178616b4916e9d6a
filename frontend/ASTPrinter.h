// `lpuc --emit=ast`: the AST as stable, readable text, one node per line,
// children indented, each with its source range `<line:col-line:col>`.
// Size expressions and types print inline in source syntax, fully
// parenthesised where precedence matters, since they are small.
#pragma once

#include "frontend/AST.h"

#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

namespace lpu {

void printAST(const ast::Module &module, const llvm::SourceMgr &sources, llvm::raw_ostream &os);

/// Source syntax of a size expression / type, e.g. `(D / H)`, `f16[..B, 4 * D]`.
std::string toString(const ast::SizeExpr &size);
std::string toString(const ast::TypeExpr &type);

} // namespace lpu
