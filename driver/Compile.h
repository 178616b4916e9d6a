// What the pipeline's back half works with: a compiled program with each
// bucket's schedule, the selection of entries and buckets (lpuc --entry,
// --bucket), and the schedule report (lpuc --report).
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Program.h"
#include "scheduler/Schedule.h"
#include "scheduler/Scheduler.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <optional>
#include <string>
#include <vector>

namespace lpu::driver {

/// What `--partition auto` chose for one entry bucket: each kind it
/// compiled, with its predicted cycles or why it failed.
struct PartitionChoice {
  struct Candidate {
    std::string kind;   // "pipeline", "tensor"
    int64_t cycles = 0; // predicted, when it compiled
    /// Why it did not: the diagnostic's code (E0601, E08xx) and what it says.
    std::string error, message;
    bool ok() const { return error.empty(); }
  };
  std::string chosen;
  /// In the order tried.
  std::vector<Candidate> candidates;
};

struct CompiledProgram {
  backend::Program program;
  /// One per bucket, in program order, with the entry and bucket it is for.
  struct BucketInfo {
    std::string entry;
    std::vector<backend::BucketDim> dims;
    scheduler::Schedule schedule;
    /// Set when `--partition auto` chose between kinds for this bucket.
    std::optional<PartitionChoice> partition;
  };
  std::vector<BucketInfo> buckets;
};

/// Which entries and buckets to compile (`lpuc --entry`, `--bucket`):
/// empty lists select all. A bucket is selected when it has every size of
/// one of `buckets` (e.g. {S=128}).
struct BucketSelection {
  std::vector<std::string> entries;
  std::vector<std::vector<backend::BucketDim>> buckets;
};

/// `DIM=N[,DIM=N...]` (lpuc --bucket) as bucket sizes; an error saying
/// why when it is not that (a malformed part, a dimension named twice).
llvm::Expected<std::vector<backend::BucketDim>> parseBucketSpec(llvm::StringRef spec);

/// An error naming the first of `asked` (lpuc --entry) that is not among
/// `entries`, with those there are (each once, in order).
llvm::Error entriesExist(llvm::ArrayRef<std::string> entries, llvm::ArrayRef<std::string> asked);

/// Keeps in `module` only the functions (entry buckets) `select` selects;
/// an error names an entry or bucket that selects nothing, with those there
/// are.
llvm::Error selectBuckets(ir::Module &module, const BucketSelection &select);

/// `partition: tensor (auto: tensor 196,190 cycles, pipeline 469,536)`:
/// the choice, then every candidate fastest first, failures last.
std::string describePartitionChoice(const PartitionChoice &choice);

/// `lpuc --report`: per entry and bucket, the predicted cycles and time,
/// per-unit utilisation, SRAM use, and the lower bound with the ratio;
/// with `ops` (--report-ops) also each op's cycles (Schedule::ops).
/// lpuc --emit=plan: per entry and bucket the scheduler's choices
/// (scheduler::Plan): the knobs, the sets of placement heuristics tried
/// with their cycles and the one kept, the parameters' storage, and each
/// op's and value's choices with its source location.
void printSchedulePlan(const CompiledProgram &compiled, llvm::raw_ostream &os);
/// Issue cycles over cycles x queues of unit kind `unit`, pooled over a
/// multi-chip schedule's chips.
double unitUtilisation(const scheduler::Schedule &s, const backend::ChipDescription &chip,
                       unsigned unit);
/// "file:line:col", or "no source".
std::string locationText(const ir::Location &loc);
/// One bucket's figures as `lpuc --report --json` prints them (without
/// "ops").
llvm::json::Object reportFigures(const CompiledProgram::BucketInfo &bucket,
                                 const backend::ChipDescription &chip);
void printScheduleReport(const CompiledProgram &compiled, const backend::ChipDescription &chip,
                         llvm::raw_ostream &os, bool ops = false);
void printScheduleReportJson(const CompiledProgram &compiled,
                             const backend::ChipDescription &chip, llvm::raw_ostream &os,
                             bool ops = false);

} // namespace lpu::driver
