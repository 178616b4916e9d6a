// The physical bound of a function on a chip (docs/scheduler.md, "The
// physical bound"): the fewest cycles any schedule could take, computed
// from the op graph and the chip description alone, never from a
// schedule. lpuc --report sets a schedule's cycles beside it.
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Topology.h"
#include "ir/IR.h"

#include <cstdint>
#include <string>

namespace lpu::scheduler {

/// Each term is a bound on its own; `cycles` is the largest and
/// `resource` names it ("MXM", "weight loads", "SRAM ports", "VXM",
/// "SXM", "links", "dependence chain").
struct PhysicalBound {
  int64_t cycles = 0;
  std::string resource;
  /// MACs over the MXM's peak rate (f32 operands as the f16 products the
  /// MXM takes: docs/scheduler.md, "f32 and bf16 matmuls").
  int64_t mxm = 0;
  /// Weight elements (B operands, conv kernels) into the planes, one row
  /// of mxm_dim elements per cycle per plane, all planes at once.
  int64_t weights = 0;
  /// Inputs, parameters and constants read once and results written once,
  /// over every slice's ports.
  int64_t sram = 0;
  /// Vector operations of elementwise work, reductions and conversions
  /// over the VXM's ALUs.
  int64_t vxm = 0;
  /// Vectors through the SXM's transposers, over its queues.
  int64_t sxm = 0;
  /// Vectors a chip sends to others, over all the links the topology
  /// cables to it at once (a chip of a node: its 7 local links).
  int64_t links = 0;
  /// The longest path of the ops' minimum latencies (a transfer: a hop).
  int64_t chain = 0;
};

/// The physical bound of `fn` on `chip`. A partitioned function (ops with
/// a `chip` attribute) is bounded per chip, the largest chip's share of
/// each resource, with every transfer on the chain a link hop, and a
/// chip's vectors sent over the links `topology` cables to it (without a
/// topology: all the chip's links).
PhysicalBound physicalBound(const ir::Function &fn, const backend::ChipDescription &chip,
                            const backend::Topology *topology = nullptr);

} // namespace lpu::scheduler
