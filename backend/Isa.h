// The instruction set of the simulated LPU, modelled on the TSP's (ISCA 2020,
// Table I): opcodes, the functional unit each belongs to, the operands each
// takes, and one fixed-size instruction record shared by the binary program
// file, the assembly text and the simulator. docs/isa.md gives the semantics
// and timing of every instruction.
#pragma once

#include "support/DType.h"
#include "support/Elementwise.h"

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

/// An opcode's value is its number in the program file: fixed forever. The
/// VXM's elementwise instructions come from support/Elementwise.def, whose
/// rows carry their numbers; the others are numbered here.
enum class Opcode : uint8_t {
  // ICU
  Nop = 0, Repeat = 1, Sync = 2, Notify = 3,
  // MEM
  Read = 4, Write = 5, Gather = 6, Scatter = 7,
  // VXM: copy moves the bits unchanged; the elementwise ops (not, and, or:
  // bool, or bitwise on ints; max/min are the IR's maximum/minimum; the
  // compares give bool, one stream)
  Copy = 8,
#define LPU_ELEMENTWISE(Enum, Name, Arity, Rule, Surface, VxmEnum, VxmName, Number)             \
  VxmEnum = Number,
#include "support/Elementwise.def"
  // VXM select: cond (bool, one stream) ? a : b, three input groups
  Select = 38,
  // VXM conversion: cvt rounds float -> int to nearest even, cvt.trunc
  // truncates toward zero (the IR's convert); both saturate, NaN gives 0
  Cvt = 39, CvtTrunc = 40,
  // MXM
  LoadWeights = 41, InstallWeights = 42, MatMul = 43, AccRead = 44,
  // SXM
  Shift = 45, Rotate = 46, Permute = 47, Distribute = 48, Transpose = 49,
  // C2C
  Send = 50, Receive = 51,
};
/// The first number no opcode has: the next new instruction's.
inline constexpr unsigned kFirstFreeOpcode = [] {
  unsigned next = unsigned(Opcode::Receive) + 1;
  for (unsigned n : {
#define LPU_ELEMENTWISE(Enum, Name, Arity, Rule, Surface, VxmEnum, VxmName, Number) Number##u,
#include "support/Elementwise.def"
       })
    next = n + 1 > next ? n + 1 : next;
  return next;
}();
/// Opcodes are 0 .. kNumOpcodes - 1, every number used (Isa.cpp checks).
inline constexpr unsigned kNumOpcodes = kFirstFreeOpcode;

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

/// The elementwise op a VXM instruction computes (support/Elementwise.def),
/// nullopt for every other instruction (copy included).
std::optional<tensor::ElementwiseOp> elementwiseOf(Opcode op);
/// The VXM instruction computing an elementwise op.
Opcode vxmOpcode(tensor::ElementwiseOp op);

} // namespace lpu::backend
