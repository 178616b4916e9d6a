// The IR's text form, MLIR-like, one op per line:
//
//   func @mlp<B = 1> {
//     %0 = input {name = "x"} : f16[1, 784] loc("examples/mlp.lpu":14:22)
//     %1 = param {path = "fc1.w"} : f16[784, 256] loc("stdlib/std/nn.lpu":9:9)
//     %2 = matmul %0, %1 : f16[1, 256] loc("stdlib/std/nn.lpu":12:12)
//     return %2 {names = ["out"]} loc("examples/mlp.lpu":16:5)
//   }
//
// Values are numbered by position; attributes print sorted by name; a
// function without buckets prints as `func @name {`. Printing then parsing
// gives back the identical IR (print(parse(print(m))) == print(m)).
// docs/ir.md is the reference.
#pragma once

#include "ir/IR.h"

#include <llvm/Support/Error.h>

namespace lpu::ir {

struct PrintOptions {
  /// Print `loc(...)` after each op.
  bool locations = true;
};

void print(const Function &fn, llvm::raw_ostream &os, const PrintOptions &options = {});
void print(const Module &module, llvm::raw_ostream &os, const PrintOptions &options = {});
std::string toString(const Function &fn, const PrintOptions &options = {});
/// An attribute's value as the text form prints it.
std::string attrToString(const Attr &a);

/// Parses a module; errors read `NAME:LINE:COL: error: message`, pointing
/// into `text` (the text form is a machine format, so one error stops it).
llvm::Expected<std::unique_ptr<Module>> parseModule(llvm::StringRef text,
                                                     llvm::StringRef bufferName);

} // namespace lpu::ir
