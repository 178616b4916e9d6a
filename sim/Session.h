// One run of a program as lpurun does it: choose the entry and the bucket,
// pad the inputs, place inputs and parameters, run, crop the outputs. The
// command-line driver only parses flags and writes files.
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Program.h"
#include "backend/tensor/Tensor.h"
#include "sim/Machine.h"
#include "sim/Report.h"

#include <llvm/Support/Error.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lpu::sim {

struct SessionOptions {
  std::string entry; // empty: the program's only entry
  std::map<std::string, tensor::Tensor> inputs;
  std::string weightsFile;           // .safetensors, or empty
  std::optional<uint64_t> randomSeed; // --random-weights
  RunOptions run;
};

struct SessionResult {
  std::vector<std::pair<std::string, tensor::Tensor>> outputs; // program order
  RunReport report;
  ReportContext context;
  std::string traceJson; // when run.trace
};

llvm::Expected<SessionResult> runSession(const backend::Program &program,
                                         const backend::ChipDescription &chip,
                                         const SessionOptions &options);

} // namespace lpu::sim
