// The physical bound (PhysicalBound.h, docs/scheduler.md "The physical
// bound"). Every term counts work the graph needs on any schedule: no
// layout, placement or order chosen by the scheduler enters it.
#include "scheduler/PhysicalBound.h"
#include "scheduler/lower/Reduce.h"

#include "backend/Isa.h"
#include "support/DType.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace lpu::scheduler {

using backend::Opcode;
using tensor::DType;

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }

/// Vectors of `lanes` bytes that `elements` of `dtype` fill at the least.
int64_t vectorsOf(int64_t elements, DType dtype, unsigned lanes) {
  return ceilDiv(elements * int64_t(tensor::dtypeSize(dtype)), lanes);
}

/// The f16 pieces an operand goes into the MXM as: an f32 value not exact
/// in f16 as two (docs/scheduler.md, "f32 and bf16 matmuls").
int64_t piecesOf(const ir::Op &operand) {
  return operand.type().dtype == DType::F32 && !reduce::exactInF16(operand) ? 2 : 1;
}

/// Per chip, the work each resource must do.
struct Work {
  // MACs times their dtype's mm issue interval (f16 MACs, f32 operands as
  // their f16 products, count the f16 interval; i8 ones the int8).
  double macIssues = 0;
  int64_t weightElems = 0;  // elements loaded into planes
  int64_t reads = 0, writes = 0; // SRAM vectors
  int64_t vxmOps = 0;       // VXM vector operations
  int64_t sxmVectors = 0;   // vectors through a transposer
  int64_t sent = 0;         // vectors sent to other chips
};

} // namespace

PhysicalBound physicalBound(const ir::Function &fn, const backend::ChipDescription &chip,
                            const backend::Topology *topology) {
  const unsigned lanes = chip.lanes;
  std::map<int64_t, Work> work;
  // Minimum latency to each op's result (the dependence chain).
  std::map<const ir::Op *, int64_t> ready;
  auto latency = [&](Opcode op, DType dtype) { return int64_t(chip.timingOf(op, dtype).latency); };
  int64_t chain = 0;
  for (const auto &owned : fn.ops()) {
    const ir::Op &op = *owned;
    int64_t start = 0;
    for (const ir::Op *operand : op.operands())
      start = std::max(start, ready[operand]);
    const ir::Type &type = op.type();
    Work &w = work[op.chip()];
    int64_t lat = 0;
    switch (ir::opClass(op.kind())) {
    case ir::OpClass::Leaf:
      if (op.kind() != ir::OpKind::Iota && op.kind() != ir::OpKind::Constant)
        w.reads += vectorsOf(type.numElements(), type.dtype, lanes);
      lat = latency(Opcode::Read, type.dtype);
      break;
    case ir::OpClass::Unary:
    case ir::OpClass::Binary:
    case ir::OpClass::Ternary: {
      // One vector operation per vector of the wider of result and
      // operands (a comparison of f32 yields bool, a convert widens).
      DType wide = type.dtype;
      for (const ir::Op *operand : op.operands())
        if (tensor::dtypeSize(operand->type().dtype) > tensor::dtypeSize(wide))
          wide = operand->type().dtype;
      w.vxmOps += vectorsOf(type.numElements(), wide, lanes);
      std::optional<tensor::ElementwiseOp> e = ir::elementwiseArithmetic(op.kind());
      lat = e ? latency(backend::vxmOpcode(*e), wide)
              : latency(op.kind() == ir::OpKind::Select ? Opcode::Select : Opcode::Cvt, wide);
      break;
    }
    case ir::OpClass::Reduce: {
      // Every operand vector is combined once; a softmax also takes its
      // maximum, subtracts it, exponentiates and scales: five.
      const ir::Op &x = *op.operand(0);
      const int64_t vectors = vectorsOf(x.type().numElements(), x.type().dtype, lanes);
      const bool softmax = op.kind() == ir::OpKind::Softmax;
      w.vxmOps += (softmax ? 5 : 1) * vectors;
      lat = softmax ? 2 * latency(Opcode::Max, DType::F32) + latency(Opcode::Exp, DType::F32) +
                          latency(Opcode::Add, DType::F32) + latency(Opcode::Div, DType::F32)
                    : latency(Opcode::Add, DType::F32);
      break;
    }
    case ir::OpClass::Layout:
      if (op.kind() == ir::OpKind::Transpose) {
        w.sxmVectors += vectorsOf(type.numElements(), type.dtype, lanes);
        lat = latency(Opcode::Transpose, type.dtype);
      } else if (op.kind() == ir::OpKind::Gather) {
        lat = latency(Opcode::Gather, type.dtype);
      } else if (op.kind() == ir::OpKind::Transfer) {
        work[op.intAttr("from").value_or(0)].sent += vectorsOf(type.numElements(), type.dtype, lanes);
        lat = chip.c2cHopCycles + chip.c2cCyclesPerVector;
      }
      break;
    case ir::OpClass::Contract: {
      if (op.kind() == ir::OpKind::MaxPool2d || op.kind() == ir::OpKind::AvgPool2d) {
        // Every input vector is combined once into its windows.
        const ir::Op &x = *op.operand(0);
        auto kernel = op.intsAttr("kernel").value_or(std::vector<int64_t>{1, 1});
        w.vxmOps += vectorsOf(type.numElements() * kernel[0] * kernel[1], x.type().dtype, lanes);
        lat = latency(Opcode::Max, x.type().dtype);
        break;
      }
      const ir::Op &a = *op.operand(0), &b = *op.operand(1);
      const int64_t pa = piecesOf(a), pb = piecesOf(b);
      // The products the MXM forms: each of A's pieces with B's first,
      // and A's first with B's second.
      const int64_t products = pa + pb - 1;
      int64_t contracted = 0;
      if (op.kind() == ir::OpKind::Matmul) {
        contracted = a.type().shape.back();
      } else { // conv2d: O x C/groups x KH x KW
        const std::vector<int64_t> &ks = b.type().shape;
        contracted = ks[1] * ks[2] * ks[3];
      }
      // i8 x i8 runs at the int8 rate into i32 accumulators; everything
      // else as f16 pieces into f32 ones.
      const bool int8 = a.type().dtype == DType::I8;
      const DType mxmType = int8 ? DType::I8 : DType::F16, accType = int8 ? DType::I32 : DType::F32;
      w.macIssues += double(type.numElements()) * double(contracted) * double(products) *
                     double(std::max<unsigned>(chip.timingOf(Opcode::MatMul, mxmType).issue, 1));
      w.weightElems += b.type().numElements() * pb;
      // What the accumulators hold but the result's dtype is converted on
      // the VXM.
      if (type.dtype != accType)
        w.vxmOps += vectorsOf(type.numElements(), accType, lanes);
      // On the chain: B's rows of one K-tile loaded into a plane (one a
      // cycle) and installed, then A's row multiplied and read out.
      const int64_t tileRows = std::min<int64_t>(contracted, chip.mxmDim);
      const backend::ChipDescription::Timing lw = chip.timingOf(Opcode::LoadWeights, mxmType);
      const int64_t installed = ready[&b] + tileRows * lw.issue + lw.latency +
                                latency(Opcode::InstallWeights, mxmType);
      start = std::max(ready[&a], installed);
      lat = latency(Opcode::MatMul, mxmType) + latency(Opcode::AccRead, accType) +
            (type.dtype != accType ? latency(Opcode::Cvt, accType) : 0);
      break;
    }
    case ir::OpClass::Terminator:
      for (const ir::Op *operand : op.operands())
        work[operand->chip()].writes += vectorsOf(operand->type().numElements(), operand->type().dtype, lanes);
      chain = std::max(chain, start + latency(Opcode::Write, type.dtype));
      continue;
    }
    ready[&op] = start + lat;
    chain = std::max(chain, ready[&op]);
  }

  PhysicalBound bound;
  // The MACs all planes do in one cycle with an mm issued every cycle.
  const double macsPerIssue = double(chip.mxmPlanes) * chip.mxmDim * chip.mxmDim;
  // The links a chip can send on: those cabled to another chip.
  auto cabled = [&](int64_t c) {
    if (!topology)
      return int64_t(chip.c2cLinks);
    int64_t n = 0;
    for (unsigned l = 0; l < chip.c2cLinks; ++l)
      n += topology->peer(unsigned(c), l) ? 1 : 0;
    return std::max<int64_t>(n, 1);
  };
  for (const auto &[c, w] : work) {
    bound.mxm = std::max(bound.mxm, int64_t(std::ceil(w.macIssues / macsPerIssue)));
    bound.weights = std::max(bound.weights, ceilDiv(w.weightElems, int64_t(chip.mxmDim) * chip.mxmPlanes));
    bound.sram = std::max({bound.sram, ceilDiv(w.reads, int64_t(chip.memSlices) * chip.memReadPorts),
                           ceilDiv(w.writes, int64_t(chip.memSlices) * chip.memWritePorts)});
    bound.vxm = std::max(bound.vxm, ceilDiv(w.vxmOps, int64_t(chip.vxmAlusPerLane)));
    bound.sxm = std::max(bound.sxm,
                         ceilDiv(w.sxmVectors, int64_t(chip.queues[unsigned(backend::UnitKind::Sxm)])));
    if (w.sent > 0)
      bound.links = std::max(bound.links, ceilDiv(w.sent * chip.c2cCyclesPerVector, cabled(c)));
  }
  bound.chain = chain;
  for (auto [value, name] : {std::pair{bound.mxm, "MXM"}, {bound.weights, "weight loads"},
                             {bound.sram, "SRAM ports"}, {bound.vxm, "VXM"}, {bound.sxm, "SXM"},
                             {bound.links, "links"}, {bound.chain, "dependence chain"}})
    if (value > bound.cycles) {
      bound.cycles = value;
      bound.resource = name;
    }
  return bound;
}

} // namespace lpu::scheduler
