// What `lpurun --reference` does with a compiled module: find the entry's
// functions (one per bucket), pick the smallest bucket that holds the
// inputs (backend/Bucketing.h, the simulator's rule), zero-pad the inputs
// to it, interpret, and crop the outputs back.
#pragma once

#include "interp/Interpreter.h"

#include "backend/Program.h"

#include <llvm/Support/Error.h>

namespace lpu::interp {

/// The functions of entry `name` (one per bucket), in module order. An empty
/// name is fine when the module has a single entry. Errors list the entries.
llvm::Expected<std::vector<const Function *>> entryFunctions(const Module &module,
                                                             llvm::StringRef name);

/// The entry as bucket selection sees it: per function, its bucket sizes and
/// the shapes of its inputs and outputs, with a dimension named after the
/// bucket size it equals in every function (S in `S in {64, 128}`), so it
/// may be padded; every other dimension is fixed.
backend::Entry describeEntry(llvm::ArrayRef<const Function *> functions);

struct EntryRun {
  std::vector<NamedTensor> outputs;   // cropped to the sizes the inputs imply; no states
  /// The state outputs: each state's value when the call ended. A state
  /// input the run did not give started at zeros.
  std::vector<NamedTensor> states;
  const Function *function = nullptr; // the bucket that ran
  std::string bucketText;             // "S=128", or "fixed shapes"
  double paddingFraction = 0;         // 1 - given / bucket input elements
  /// The weights the bucket ran with, by parameter path (what
  /// `lpurun --dump-weights` writes); empty when WeightSource::loaded gave
  /// them.
  std::map<std::string, tensor::Tensor> weights;
  /// Wall time binding the weights (Interpreter::create) and running; CPU
  /// time of the run over all threads (a shared machine needs both).
  double prepareSeconds = 0, runSeconds = 0, runCpuSeconds = 0;
};

/// Runs the bucket of `entry` the inputs select (a state input they do
/// not hold starts at zeros) with weights from `source`:
/// the parameters of that bucket's function and no others, as lpurun
/// places them on the simulator. Other entries (another model, or the same
/// parameter name at another shape) do not matter; a file must hold exactly
/// this bucket's parameters.
llvm::Expected<EntryRun> runEntry(const Module &module, llvm::StringRef entry,
                                  const std::map<std::string, tensor::Tensor> &inputs,
                                  const WeightSource &source, InterpreterOptions options = {});

} // namespace lpu::interp
