// One run of a program as lpurun does it: choose the entry and the bucket,
// pad the inputs, place inputs and parameters, run, crop the outputs. The
// command-line driver only parses flags and writes files.
#pragma once

#include "backend/Bucketing.h"
#include "backend/ChipDescription.h"
#include "backend/Program.h"
#include "support/Tensor.h"
#include "sim/Machine.h"
#include "sim/Report.h"
#include "support/TimeReport.h"

#include <llvm/Support/Error.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lpu::sim {

struct SessionOptions {
  std::string entry; // empty: the program's only entry
  std::map<std::string, tensor::Tensor> inputs;
  std::vector<std::string> weightsFiles; // .safetensors, each weight in one; or none
  std::optional<uint64_t> randomSeed; // --random-weights
  /// Set: the parameters already read (whole weights, by name), used
  /// instead of weightsFiles and randomSeed (repeated calls read them once).
  const std::map<std::string, tensor::Tensor> *params = nullptr;
  /// run.progress also gets the session's steps as statuses (bind
  /// weights, simulate, read outputs), and `timing` a row for each (lpurun
  /// --progress, --time-phases).
  RunOptions run;
  support::Timing timing;
};

struct SessionResult {
  std::vector<std::pair<std::string, tensor::Tensor>> outputs; // program order, states left out
  /// The state outputs (TensorPlacement::state): each state's value when the
  /// call ended, in program order.
  std::vector<std::pair<std::string, tensor::Tensor>> states;
  RunReport report;
  ReportContext context;
  std::string traceJson; // when run.trace
};

/// What a run needs before its machine exists: the entry, its bucket, and
/// the values to place by name (inputs padded to the bucket, parameters);
/// empty in timing-only runs.
struct SessionPlan {
  const backend::Entry *entry = nullptr;
  backend::BucketChoice choice;
  /// By name within each role: an input and a parameter may share a name.
  /// The inputs include the states the run did not give, as zeros.
  /// A parameter is its whole weight, also when chips hold slices of it.
  std::map<std::string, tensor::Tensor> params, inputs;
  /// The slices of the weights that placements hold (TensorPlacement::shard),
  /// by name and shard, cut once for every machine placed from the plan.
  std::map<std::pair<std::string, std::vector<int64_t>>, tensor::Tensor> shards;
  /// The same for the states' slices: chip c's slice of the whole state
  /// in `inputs`.
  std::map<std::pair<std::string, std::vector<int64_t>>, tensor::Tensor> stateShards;
  const backend::Bucket &bucket() const { return entry->buckets[choice.index]; }
};

llvm::Expected<SessionPlan> planSession(const backend::Program &program,
                                        const SessionOptions &options);

/// A machine for `bucket` (the plan's, or a changed copy of it) with the
/// plan's values and the program's constants placed, ready to run.
llvm::Expected<std::unique_ptr<Machine>> placeSession(const backend::ChipDescription &chip,
                                                      const backend::Program &program,
                                                      const backend::Bucket &bucket,
                                                      const SessionPlan &plan,
                                                      const RunOptions &run);

llvm::Expected<SessionResult> runSession(const backend::Program &program,
                                         const backend::ChipDescription &chip,
                                         const SessionOptions &options);

} // namespace lpu::sim
