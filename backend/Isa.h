// The instruction set of the simulated LPU, modelled on the TSP's (ISCA 2020,
// Table I): opcodes, the functional unit each belongs to, the operands each
// takes, and one fixed-size instruction record shared by the binary program
// file, the assembly text and the simulator. docs/isa.md gives the semantics
// and timing of every instruction.
#pragma once

#include "support/DType.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>

namespace lpu::backend {

using tensor::DType;

/// The functional units of a chip. ICU instructions (nop, repeat, sync,
/// notify) may sit in the queue of any unit.
enum class UnitKind : uint8_t { Mem, Vxm, Mxm, Sxm, C2c };
inline constexpr unsigned kNumUnitKinds = 5;
llvm::StringRef unitKindName(UnitKind kind); // "mem", "vxm", ...

enum class Opcode : uint8_t {
  // ICU
  Nop, Repeat, Sync, Notify,
  // MEM
  Read, Write, Gather, Scatter,
  // VXM unary (not: bool, or bitwise on ints)
  Copy, Neg, Abs, Relu, Tanh, Exp, Rsqrt, Not, Log, Sqrt, Sigmoid, Gelu, GeluTanh, Silu,
  // VXM binary (max/min are the IR's maximum/minimum; and/or: bool, or
  // bitwise on ints)
  Add, Sub, Mul, Max, Min, Div, Rem, Pow, And, Or,
  // VXM compare (result is bool, one stream)
  CmpEq, CmpNe, CmpLt, CmpLe, CmpGt, CmpGe,
  // VXM select: cond (bool, one stream) ? a : b, three input groups
  Select,
  // VXM conversion: cvt rounds float -> int to nearest even, cvt.trunc
  // truncates toward zero (the IR's convert); both saturate, NaN gives 0
  Cvt, CvtTrunc,
  // MXM
  LoadWeights, InstallWeights, MatMul, AccRead,
  // SXM
  Shift, Rotate, Permute, Distribute, Transpose,
  // C2C
  Send, Receive,
};
inline constexpr unsigned kNumOpcodes = unsigned(Opcode::Receive) + 1;

/// The operands an opcode takes, in the order the assembly writes them.
enum class OperandKind : uint8_t {
  DType,  // element type, e.g. f16
  DType2, // the target type of cvt
  Count,  // #n of nop/repeat, the lane count of shift/rotate
  Delay,  // #d of repeat
  Slice,  // s12: a MEM slice
  Plane,  // p1: an MXM plane
  Link,   // l3: a C2C link
  Addr,   // @100 or @100+13: SRAM vector address and its step under repeat
  Acc,    // a5 or a5+1: MXM accumulator row and its step under repeat
  Src0,   // first input stream group, e.g. e3
  Src1,   // second input stream group (or the address/lane map)
  Src2,   // third input stream group (select's second value)
  Dst,    // output stream group, written after "->"
};

struct OpcodeInfo {
  Opcode op;
  llvm::StringRef mnemonic;
  std::optional<UnitKind> unit; // nullopt for ICU instructions
  llvm::ArrayRef<OperandKind> operands;
};
const OpcodeInfo &opcodeInfo(Opcode op);
std::optional<Opcode> parseMnemonic(llvm::StringRef mnemonic);

/// A stream register group: the first of `width` consecutive streams of one
/// direction (an f16 value spans 2 streams, byte plane b in stream id+b).
struct StreamRef {
  enum Dir : uint8_t { None = 0, East = 1, West = 2 };
  uint8_t dir = None;
  uint8_t id = 0;
  bool valid() const { return dir != None; }
  bool operator==(const StreamRef &) const = default;
};
std::string streamName(StreamRef s); // "e3", "w0"

/// One instruction. Fields an opcode does not use stay zero, so that the
/// binary form is canonical and text -> binary -> text is the identity.
struct Instr {
  Opcode op = Opcode::Nop;
  DType dtype = DType::Bool;
  DType dtype2 = DType::Bool;
  uint16_t unit = 0;  // slice, plane or link
  uint32_t addr = 0;  // SRAM address or accumulator row
  int32_t step = 0;   // added to addr on each repetition
  uint32_t count = 0; // nop n, repeat n, shift/rotate lanes
  uint32_t delay = 0; // repeat d
  StreamRef src0, src1, src2, dst;
  bool operator==(const Instr &) const = default;
};

/// The number of streams an element of `type` spans (its byte size).
unsigned streamWidth(DType type);

/// Whether `type` may be used with `op` (e.g. rsqrt is for floats only).
bool dtypeAllowed(Opcode op, DType type);

} // namespace lpu::backend
