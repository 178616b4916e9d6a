// Greedy decoding (lpurun --generate) with a program's (or a model's)
// prefill and decode entries, the state carried from call to call. The
// loop knows nothing of the simulator or the interpreter: each call is a
// function the driver gives (docs/generation.md).
#pragma once

#include "backend/Program.h"
#include "support/SafeTensors.h"
#include "support/Tensor.h"

#include <llvm/Support/Error.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lpu::driver {

/// What one call of an entry gave back.
struct CallResult {
  std::vector<tensor::NamedTensor> outputs; // state outputs left out
  std::vector<tensor::NamedTensor> states;  // each state's value at the end
  std::optional<int64_t> cycles;            // the simulator's, at the chip clock
  std::string bucket;                       // "S=8", as the tools print it
  double hostSeconds = 0;                   // wall time of the call
};

/// Runs entry `entry` on `inputs` (the state inputs included).
using CallFn = std::function<llvm::Expected<CallResult>(
    const std::string &entry, const std::map<std::string, tensor::Tensor> &inputs)>;

struct GenerateOptions {
  int64_t tokens = 0;           // tokens to generate, at least 1
  tensor::Tensor prompt;        // i32[1, S]
  std::string prefillEntry = "prefill", decodeEntry = "decode";
  /// The states' first values (--input NAME=...): the others start at zeros.
  std::map<std::string, tensor::Tensor> initialStates;
  /// No data (lpurun --timing-only): every token is 0, only cycles count.
  bool timingOnly = false;
};

struct GenerateResult {
  std::vector<int32_t> tokens;       // the generated ids, the prompt left out
  std::vector<CallResult> calls;     // the prefill's, then each decode's (outputs dropped)
  std::map<std::string, tensor::Tensor> states; // the final state
  double hostSeconds = 0;
  bool timingOnly = false; // the tokens are placeholders (0)
};

/// Checks that `entries` (the program's, or the module's described) have
/// the prefill and decode entries with the inputs the contract allows,
/// and the prompt's type: errors name the entry, the input and the fix.
llvm::Error checkGenerateContract(llvm::ArrayRef<backend::Entry> entries,
                                  const GenerateOptions &options);

/// The loop: prefill on the prompt, then tokens - 1 decode calls, each
/// choosing the argmax of the last real position's logits.
llvm::Expected<GenerateResult> generate(llvm::ArrayRef<backend::Entry> entries,
                                        const GenerateOptions &options, const CallFn &call);

/// The summary lpurun prints: the tokens, per-call cycles, the predicted
/// tokens/s at `clockMHz` (0: no cycles, the reference) and the host's speed.
std::string formatGenerateReport(const GenerateResult &result, double clockMHz);

} // namespace lpu::driver
