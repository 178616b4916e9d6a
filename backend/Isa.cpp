#include "backend/Isa.h"

#include <llvm/ADT/StringMap.h>

#include <array>

namespace lpu::backend {

llvm::StringRef unitKindName(UnitKind kind) {
  switch (kind) {
  case UnitKind::Mem: return "mem";
  case UnitKind::Vxm: return "vxm";
  case UnitKind::Mxm: return "mxm";
  case UnitKind::Sxm: return "sxm";
  case UnitKind::C2c: return "c2c";
  }
  return "?";
}

namespace {
using K = OperandKind;
constexpr K kNop[] = {K::Count};
constexpr K kRepeat[] = {K::Count, K::Delay};
constexpr K kRead[] = {K::Slice, K::Addr, K::Dst};
constexpr K kWrite[] = {K::Src0, K::Slice, K::Addr};
constexpr K kGather[] = {K::Slice, K::Addr, K::Src1, K::Dst};
constexpr K kScatter[] = {K::Src0, K::Src1, K::Slice, K::Addr};
constexpr K kUnary[] = {K::DType, K::Src0, K::Dst};
constexpr K kBinary[] = {K::DType, K::Src0, K::Src1, K::Dst};
constexpr K kTernary[] = {K::DType, K::Src0, K::Src1, K::Src2, K::Dst};
constexpr K kCvt[] = {K::DType, K::DType2, K::Src0, K::Dst};
constexpr K kLoadW[] = {K::DType, K::Plane, K::Src0};
constexpr K kInstallW[] = {K::Plane};
constexpr K kMatMul[] = {K::DType, K::Plane, K::Src0, K::Acc};
constexpr K kAccRead[] = {K::DType, K::Plane, K::Acc, K::Dst};
constexpr K kShift[] = {K::DType, K::Count, K::Src0, K::Dst};
constexpr K kPermute[] = {K::DType, K::Src0, K::Src1, K::Dst};
constexpr K kTranspose[] = {K::Src0, K::Dst};
constexpr K kSend[] = {K::DType, K::Link, K::Src0};
constexpr K kReceive[] = {K::DType, K::Link, K::Dst};

template <size_t N> constexpr llvm::ArrayRef<K> ops(const K (&a)[N]) { return llvm::ArrayRef<K>(a); }

// The rows in any order; the table below puts each at its number.
constexpr OpcodeInfo kRows[] = {
    {Opcode::Nop, "nop", std::nullopt, ops(kNop)},
    {Opcode::Repeat, "repeat", std::nullopt, ops(kRepeat)},
    {Opcode::Sync, "sync", std::nullopt, llvm::ArrayRef<K>()},
    {Opcode::Notify, "notify", std::nullopt, llvm::ArrayRef<K>()},
    {Opcode::Read, "read", UnitKind::Mem, ops(kRead)},
    {Opcode::Write, "write", UnitKind::Mem, ops(kWrite)},
    {Opcode::Gather, "gather", UnitKind::Mem, ops(kGather)},
    {Opcode::Scatter, "scatter", UnitKind::Mem, ops(kScatter)},
    {Opcode::Copy, "copy", UnitKind::Vxm, ops(kUnary)},
#define LPU_ELEMENTWISE(Enum, Name, Arity, Rule, Surface, VxmEnum, VxmName, Number)             \
  {Opcode::VxmEnum, VxmName, UnitKind::Vxm, Arity == 1 ? ops(kUnary) : ops(kBinary)},
#include "support/Elementwise.def"
    {Opcode::Select, "select", UnitKind::Vxm, ops(kTernary)},
    {Opcode::Cvt, "cvt", UnitKind::Vxm, ops(kCvt)},
    {Opcode::CvtTrunc, "cvt.trunc", UnitKind::Vxm, ops(kCvt)},
    {Opcode::LoadWeights, "lw", UnitKind::Mxm, ops(kLoadW)},
    {Opcode::InstallWeights, "iw", UnitKind::Mxm, ops(kInstallW)},
    {Opcode::MatMul, "mm", UnitKind::Mxm, ops(kMatMul)},
    {Opcode::AccRead, "acc", UnitKind::Mxm, ops(kAccRead)},
    {Opcode::Shift, "shift", UnitKind::Sxm, ops(kShift)},
    {Opcode::Rotate, "rotate", UnitKind::Sxm, ops(kShift)},
    {Opcode::Permute, "permute", UnitKind::Sxm, ops(kPermute)},
    {Opcode::Distribute, "distribute", UnitKind::Sxm, ops(kPermute)},
    {Opcode::Transpose, "transpose", UnitKind::Sxm, ops(kTranspose)},
    {Opcode::Send, "send", UnitKind::C2c, ops(kSend)},
    {Opcode::Receive, "recv", UnitKind::C2c, ops(kReceive)},
};

constexpr std::array<OpcodeInfo, kNumOpcodes> byNumber() {
  std::array<OpcodeInfo, kNumOpcodes> table{};
  for (const OpcodeInfo &row : kRows)
    table[unsigned(row.op)] = row;
  return table;
}
constexpr std::array<OpcodeInfo, kNumOpcodes> kTable = byNumber();

constexpr bool everyNumberOnce() {
  if (std::size(kRows) != kNumOpcodes)
    return false;
  for (unsigned n = 0; n < kNumOpcodes; ++n)
    if (kTable[n].mnemonic.empty() || unsigned(kTable[n].op) != n)
      return false;
  return true;
}
static_assert(everyNumberOnce(), "every opcode number 0 .. kNumOpcodes - 1 names one instruction");
} // namespace

const OpcodeInfo &opcodeInfo(Opcode op) { return kTable[unsigned(op)]; }

std::optional<Opcode> parseMnemonic(llvm::StringRef mnemonic) {
  static const llvm::StringMap<Opcode> map = [] {
    llvm::StringMap<Opcode> m;
    for (const OpcodeInfo &info : kTable)
      m[info.mnemonic] = info.op;
    return m;
  }();
  auto it = map.find(mnemonic);
  if (it == map.end())
    return std::nullopt;
  return it->second;
}

std::string streamName(StreamRef s) {
  if (!s.valid())
    return "-";
  return (s.dir == StreamRef::East ? "e" : "w") + std::to_string(s.id);
}

unsigned streamWidth(DType type) { return tensor::dtypeSize(type); }

bool dtypeAllowed(Opcode op, DType type) {
  if (std::optional<tensor::ElementwiseOp> e = elementwiseOf(op))
    return tensor::elementwiseDefinedOn(*e, type);
  switch (op) {
  case Opcode::LoadWeights:
  case Opcode::MatMul:
    return type == DType::F16 || type == DType::I8;
  case Opcode::AccRead:
    return type == DType::F32 || type == DType::I32;
  default:
    return true;
  }
}

std::optional<tensor::ElementwiseOp> elementwiseOf(Opcode op) {
  switch (op) {
#define LPU_ELEMENTWISE(Enum, Name, Arity, Rule, Surface, VxmEnum, VxmName, Number)             \
  case Opcode::VxmEnum: return tensor::ElementwiseOp::Enum;
#include "support/Elementwise.def"
  default: return std::nullopt;
  }
}

Opcode vxmOpcode(tensor::ElementwiseOp op) {
  switch (op) {
#define LPU_ELEMENTWISE(Enum, Name, Arity, Rule, Surface, VxmEnum, VxmName, Number)             \
  case tensor::ElementwiseOp::Enum: return Opcode::VxmEnum;
#include "support/Elementwise.def"
  }
  return Opcode::Nop; // unreachable: the switch covers the table
}

} // namespace lpu::backend
