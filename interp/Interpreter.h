// The reference interpreter: runs an IR function on the CPU with the
// machine's arithmetic, the golden numerics every later stage is checked
// against. Every value is rounded to its dtype after every op; elementwise
// math, reductions and softmax compute in fp32; matmul and convolution
// accumulate in fp32 (OpenBLAS sgemm). docs/reference-interpreter.md states
// the arithmetic and the order of accumulation.
#pragma once

#include "ir/IR.h"

#include "support/Arithmetic.h"
#include "support/Progress.h"
#include "support/TimeReport.h"
#include "support/Tensor.h"

#include <llvm/Support/Error.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lpu::interp {

// The IR's types, which every part of the interpreter reads.
using ir::Attr;
using ir::DType;
using ir::Function;
using ir::Module;
using ir::Op;
using ir::OpClass;
using ir::OpKind;
using ir::Type;

using NamedTensor = std::pair<std::string, tensor::Tensor>;

struct InterpreterOptions {
  /// Threads for matmul and convolution; 0 means one per core. The bits do
  /// not depend on it: the work is cut into fixed column blocks, each one
  /// single-threaded sgemm call (OpenBLAS is set to one thread).
  unsigned threads = 0;
  /// Where run() counts the ops evaluated, of the function's (lpurun
  /// --reference --progress), and where runEntry reports its steps and
  /// records their times (binding the weights, the run: --time-phases).
  support::Progress progress;
  support::Timing timing;
};

/// What a function expects: its inputs by name (argument order), its
/// parameters by path (program order, each path once), with dtype and
/// shape. A param that holds a slice of its weight (ir::Shard) asks for the
/// whole weight (ir::fullType); two params of one path that disagree on it
/// are an error naming both.
std::vector<tensor::TensorSpec> inputSpecs(const Function &fn);
llvm::Expected<std::vector<tensor::TensorSpec>> paramSpecs(const Function &fn);
/// The parameters of several functions (the buckets of one entry, or a whole
/// module), each path once; an error when two functions disagree on a
/// path's dtype or shape.
llvm::Expected<std::vector<tensor::TensorSpec>>
paramSpecs(llvm::ArrayRef<const Function *> functions);

/// Where weights come from: .safetensors files (together holding each
/// parameter once), or deterministic random values (tensor::randomTensors)
/// from a seed when no file is given.
struct WeightSource {
  std::vector<std::string> files;
  uint64_t randomSeed = 0;
  /// Set: weights already read (a superset of what a run needs), used by
  /// runEntry instead of the files or the seed, so that repeated calls
  /// (lpurun --reference --generate) read them once.
  const std::map<std::string, tensor::Tensor> *loaded = nullptr;
};
/// Every tensor of `params`; the files must hold exactly them (one error lists
/// every missing, extra, mis-typed and mis-shaped name).
llvm::Expected<std::map<std::string, tensor::Tensor>>
loadWeights(const WeightSource &source, llvm::ArrayRef<tensor::TensorSpec> params);

/// One function bound to its weights (converted once, so repeated runs pay
/// only for the arithmetic).
class Interpreter {
public:
  /// Checks that `weights` holds every parameter of `fn` with its dtype and
  /// shape, the whole weight for a sharded param, which binds its slice
  /// (extra weights are ignored: a file may serve several functions); the
  /// error lists every missing, mis-typed and mis-shaped path.
  static llvm::Expected<std::unique_ptr<Interpreter>>
  create(const Function &fn, const std::map<std::string, tensor::Tensor> &weights,
         InterpreterOptions options = {});
  ~Interpreter();
  Interpreter(const Interpreter &) = delete;
  Interpreter &operator=(const Interpreter &) = delete;

  /// Runs the function. `inputs` must hold exactly the function's inputs,
  /// each with its dtype and shape (errors name the input and both types).
  /// Returns the Return's operands in order, named by its `names`. Errors
  /// also come from the data: a gather index out of range.
  llvm::Expected<std::vector<NamedTensor>>
  run(const std::map<std::string, tensor::Tensor> &inputs) const;

  const Function &function() const;

  struct State;

private:
  explicit Interpreter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Interpreter::create then run, for one-off runs.
llvm::Expected<std::vector<NamedTensor>>
interpret(const Function &fn, const std::map<std::string, tensor::Tensor> &inputs,
          const std::map<std::string, tensor::Tensor> &weights, InterpreterOptions options = {});

} // namespace lpu::interp
