// The verifier: types and shapes (inferType's rules), SSA dominance, op
// invariants (attributes present and in range, one Return at the end,
// inputs and params named once). Run by the pass manager after every pass.
#pragma once

#include "ir/IR.h"

#include <vector>

namespace lpu::ir {

struct VerifyError {
  const Op *op = nullptr; // null for function-level problems
  Location loc;           // the op's source location, when known
  std::string message;
};

std::vector<VerifyError> verify(const Function &fn);
std::vector<VerifyError> verify(const Module &module);
/// `file:line:col: error: message (in func @name)`, one per line.
std::string formatErrors(const std::vector<VerifyError> &errors, const Function *fn = nullptr);

} // namespace lpu::ir
