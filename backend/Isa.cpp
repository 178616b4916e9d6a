#include "backend/Isa.h"

#include <llvm/ADT/StringMap.h>

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

template <size_t N> llvm::ArrayRef<K> ops(const K (&a)[N]) { return llvm::ArrayRef<K>(a, N); }

const OpcodeInfo kTable[] = {
    {Opcode::Nop, "nop", std::nullopt, ops(kNop)},
    {Opcode::Repeat, "repeat", std::nullopt, ops(kRepeat)},
    {Opcode::Sync, "sync", std::nullopt, llvm::ArrayRef<K>()},
    {Opcode::Notify, "notify", std::nullopt, llvm::ArrayRef<K>()},
    {Opcode::Read, "read", UnitKind::Mem, ops(kRead)},
    {Opcode::Write, "write", UnitKind::Mem, ops(kWrite)},
    {Opcode::Gather, "gather", UnitKind::Mem, ops(kGather)},
    {Opcode::Scatter, "scatter", UnitKind::Mem, ops(kScatter)},
    {Opcode::Copy, "copy", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Neg, "neg", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Abs, "abs", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Relu, "relu", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Tanh, "tanh", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Exp, "exp", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Rsqrt, "rsqrt", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Not, "not", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Log, "log", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Sqrt, "sqrt", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Sigmoid, "sigmoid", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Gelu, "gelu", UnitKind::Vxm, ops(kUnary)},
    {Opcode::GeluTanh, "gelu_tanh", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Silu, "silu", UnitKind::Vxm, ops(kUnary)},
    {Opcode::Add, "add", UnitKind::Vxm, ops(kBinary)},
    {Opcode::Sub, "sub", UnitKind::Vxm, ops(kBinary)},
    {Opcode::Mul, "mul", UnitKind::Vxm, ops(kBinary)},
    {Opcode::Max, "max", UnitKind::Vxm, ops(kBinary)},
    {Opcode::Min, "min", UnitKind::Vxm, ops(kBinary)},
    {Opcode::Div, "div", UnitKind::Vxm, ops(kBinary)},
    {Opcode::Rem, "rem", UnitKind::Vxm, ops(kBinary)},
    {Opcode::Pow, "pow", UnitKind::Vxm, ops(kBinary)},
    {Opcode::And, "and", UnitKind::Vxm, ops(kBinary)},
    {Opcode::Or, "or", UnitKind::Vxm, ops(kBinary)},
    {Opcode::CmpEq, "cmp.eq", UnitKind::Vxm, ops(kBinary)},
    {Opcode::CmpNe, "cmp.ne", UnitKind::Vxm, ops(kBinary)},
    {Opcode::CmpLt, "cmp.lt", UnitKind::Vxm, ops(kBinary)},
    {Opcode::CmpLe, "cmp.le", UnitKind::Vxm, ops(kBinary)},
    {Opcode::CmpGt, "cmp.gt", UnitKind::Vxm, ops(kBinary)},
    {Opcode::CmpGe, "cmp.ge", UnitKind::Vxm, ops(kBinary)},
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
static_assert(sizeof(kTable) / sizeof(kTable[0]) == kNumOpcodes);
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
  bool isFloat = type == DType::F16 || type == DType::F32 || type == DType::BF16;
  switch (op) {
  case Opcode::Tanh:
  case Opcode::Exp:
  case Opcode::Rsqrt:
  case Opcode::Log:
  case Opcode::Sqrt:
  case Opcode::Sigmoid:
  case Opcode::Gelu:
  case Opcode::GeluTanh:
  case Opcode::Silu:
    return isFloat;
  case Opcode::Not:
  case Opcode::And:
  case Opcode::Or:
    return !isFloat;
  case Opcode::LoadWeights:
  case Opcode::MatMul:
    return type == DType::F16 || type == DType::I8;
  case Opcode::AccRead:
    return type == DType::F32 || type == DType::I32;
  case Opcode::Neg:
  case Opcode::Abs:
  case Opcode::Relu:
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Max:
  case Opcode::Min:
  case Opcode::Div:
  case Opcode::Rem:
  case Opcode::Pow:
    return type != DType::Bool;
  default:
    return true;
  }
}

} // namespace lpu::backend
