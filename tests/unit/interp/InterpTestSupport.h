// Helpers for the reference interpreter's tests: building small functions
// op by op, running numpy (/usr/bin/python3) on the same inputs, and
// comparing tensors with a tolerance counted in units in the last place.
#pragma once

#include "ir/IR.h"
#include "interp/Interpreter.h"

#include "support/Tensor.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace lpu::ir::testing {

using namespace lpu::interp;

using Attrs = std::vector<std::pair<std::string, Attr>>;

inline Type T(DType dtype, std::vector<int64_t> shape) { return Type{dtype, std::move(shape)}; }

/// Builds a function op by op; result types come from inferType unless
/// `declared` is required (leaves, reshape, broadcast, convert).
class FnBuilder {
public:
  explicit FnBuilder(std::string name = "f") : fn_(std::make_unique<Function>(std::move(name))) {}

  Op *input(const std::string &name, Type type);
  Op *param(const std::string &path, Type type);
  Op *op(OpKind kind, std::vector<Op *> operands, Attrs attrs = {}, const Type *declared = nullptr);
  Op *op(OpKind kind, std::vector<Op *> operands, Attrs attrs, const Type &declared) {
    return op(kind, std::move(operands), std::move(attrs), &declared);
  }
  void ret(std::vector<Op *> values, std::vector<std::string> names);

  Function &fn() { return *fn_; }

private:
  std::unique_ptr<Function> fn_;
};

/// Runs `fn` and returns its outputs by name; fails the test on an error.
std::map<std::string, tensor::Tensor>
runOk(const Function &fn, const std::map<std::string, tensor::Tensor> &inputs,
      const std::map<std::string, tensor::Tensor> &weights = {}, InterpreterOptions options = {});
/// The error message of a run that must fail ("" when it succeeded).
std::string runError(const Function &fn, const std::map<std::string, tensor::Tensor> &inputs,
                     const std::map<std::string, tensor::Tensor> &weights = {});

/// Saves `inputs` as NAME.npy in a temporary directory, runs `script` with
/// /usr/bin/python3 (numpy imported as np, each input loaded as a variable
/// of its name; the script fills the dict `out`), and returns `out` read
/// back from .npy files.
std::map<std::string, tensor::Tensor> numpy(const std::map<std::string, tensor::Tensor> &inputs,
                                            const std::string &script);

/// Every element within `ulps` units in the last place of the dtype (f16,
/// bf16 or f32, counted on the ordered bit patterns), NaN matching NaN;
/// or within `atol` (for f32 sums whose cancellation makes ulps
/// meaningless); exact for bool and integers. Shapes and dtypes must match.
void expectNear(const tensor::Tensor &got, const tensor::Tensor &want, int ulps,
                const std::string &what, double atol = 0);

/// A deterministic random tensor (uniform in [-1, 1] for floats).
tensor::Tensor random(DType dtype, std::vector<int64_t> shape, const std::string &name);

} // namespace lpu::ir::testing
