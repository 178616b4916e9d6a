// partition: assigns every op of a function to a chip and makes every value
// that crosses chips an explicit `transfer` op (docs/partitioning.md). The
// pass is the IR's view of a multi-chip program: after it, each op carries
// `{chip = c}`, the verifier rejects an operand read on another chip than
// its own unless a transfer moved it, and the reference interpreter runs the
// partitioned function to the same bits as the unpartitioned one.
//
// Pipeline partitioning cuts the ops, in program order, into consecutive
// stages, one per chip, balanced by an analytic cost (MXM work at the peak
// rate, other work at the VXM's) with each stage's weights within a chip's
// SRAM. A weight, constant or input read on several chips is held by each of
// them (the host writes an input to every chip that reads it).
#pragma once

#include "ir/IR.h"
#include "ir/Pass.h"
#include "ir/passes/PartitionPins.h"

#include <llvm/Support/Error.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lpu::ir {

/// The costs the partition balances and the room it fills: the chip's peak
/// rates and SRAM (the driver takes them from the chip file; the defaults
/// are groqchip1's).
struct PartitionCosts {
  double macsPerCycle = 102400;      // the MXM's f16 multiply-accumulates per cycle, all planes
  double elementsPerCycle = 5120;    // the VXM's ALUs: elementwise work per cycle
  uint64_t sramBytesPerChip = 220ull << 20;
  /// The fraction of a chip's SRAM a stage's weights may take: the rest is
  /// for activations and the layouts' padding.
  double weightFill = 0.85;
  /// The fraction of a chip's SRAM an embedding table may take and still
  /// be held whole on every chip of a tensor-parallel group, each gathering
  /// its own rows' ids (docs/partitioning.md, "Embeddings by rows"); a
  /// larger one is split by the vocabulary.
  double wholeTableFill = 0.25;
  /// A vector's elements: a state is stored a row to whole vectors (its
  /// last axis padded up to a multiple of this), as the scheduler does.
  unsigned lanes = 320;
  /// A slice's vectors: a state updated in place keeps a head's positions
  /// in one slice (ir::updatesInPlace).
  unsigned sliceVectors = 8192;
  /// The chips a stage has (a hybrid partition's group), for messages.
  unsigned chipsPerStage = 1;
  /// A hybrid partition's stages cut at the same place of every layer (so
  /// that stages of as many layers are alike and share one schedule) are
  /// kept when their slowest stage costs at most this many times the
  /// slowest of the stages cut anywhere.
  double alikeImbalance = 1.15;
};

/// Pipeline: consecutive layers on consecutive chips. Tensor: matmuls split
/// by a weight's columns, then rows, over every chip (Megatron), with an
/// all-reduce after each pair. Hybrid: tensor within groups of
/// `groupSize` chips (a node), pipeline stages across the groups.
enum class PartitionKind : uint8_t { Pipeline, Tensor, Hybrid };

struct PartitionOptions {
  unsigned chips = 1;
  PartitionKind kind = PartitionKind::Pipeline;
  /// Hybrid: the chips of one group (stage); chips must be a multiple.
  unsigned groupSize = 8;
  /// Hybrid: as many groups as the weights need (`chips` is ignored).
  bool fewest = false;
  PartitionCosts costs;
  /// The user's pins (PartitionPins.h); each kind reads those it knows.
  std::vector<PartitionPin> pins;
  /// Tensor: every op that holds the whole of a value on one chip (a
  /// replicated op, an all-gather's concat) gets kWholeAttr, one number
  /// per value, so that a later step can find its copies on the other
  /// chips (partitionHybrid, which removes it).
  bool markWhole = false;
};

/// The attribute of PartitionOptions::markWhole.
inline constexpr const char *kWholeAttr = "hybrid.whole";

/// The analytic cost of `op` in cycles (what the pass balances).
double partitionCost(const Op &op, const PartitionCosts &costs);

/// One stage of a pipeline partition, for reports and diagnostics.
struct PipelineStage {
  unsigned chip = 0;
  size_t firstOp = 0, endOp = 0; // indices into the function's non-leaf ops
  double cost = 0;
  uint64_t weightBytes = 0;
};

/// The stages `fn` would be cut into on `options.chips` chips, or an error
/// naming the weights that fit on no chip or the chip count that would
/// hold the model.
llvm::Expected<std::vector<PipelineStage>> planPipeline(const Function &fn,
                                                        const PartitionOptions &options);

/// The fewest chips whose SRAM holds `fn`'s weights as pipeline stages.
llvm::Expected<unsigned> minimumChips(const Function &fn, const PartitionCosts &costs);

/// Partitions `fn` in place by tensor parallelism (TensorParallel.cpp).
llvm::Error partitionTensor(Function &fn, const PartitionOptions &options);

/// Partitions `fn` in place by tensor parallelism within groups of
/// `options.groupSize` chips and a pipeline over the groups: stage s's op
/// on the group's chip v runs on chip s * groupSize + v; a value that
/// crosses stages crosses between the chips of the same position.
llvm::Error partitionHybrid(Function &fn, const PartitionOptions &options);

/// Partitions `fn` in place. Errors: as planPipeline's; a function already
/// partitioned.
llvm::Error partitionFunction(Function &fn, const PartitionOptions &options);

/// The pass `partition{...}` with these options (chips <= 1: no change).
std::unique_ptr<Pass> createPartitionPass(const PartitionOptions &options);

/// Parses the options of `partition{chips=N kind=pipeline|tensor|hybrid
/// group=G}` (the
/// text between the braces).
llvm::Expected<PartitionOptions> parsePartitionOptions(llvm::StringRef text);

} // namespace lpu::ir
