// The elementwise op set (support/Elementwise.def) as C++: the enum the
// shared arithmetic (support/Arithmetic.h) computes, and each op's row of
// the table, from which the IR, the checker, lowering, the ISA, the
// scheduler and the simulator derive their part.
#pragma once

#include "support/DType.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>

namespace lpu::tensor {

/// The IR's elementwise ops except convert and select.
enum class ElementwiseOp : uint8_t {
#define LPU_ELEMENTWISE(Enum, Name, Arity, Rule, Surface, VxmEnum, VxmName, Opcode) Enum,
#include "support/Elementwise.def"
};

/// The type rule classes of support/Elementwise.def.
enum class ElementwiseRule : uint8_t { Float, Number, Logical, Equality, Ordering };
/// How .lpu source reaches an op: by its name, or through an operator only.
enum class ElementwiseSurface : uint8_t { Builtin, Operator };

struct ElementwiseInfo {
  ElementwiseOp op;
  llvm::StringRef name; // IR mnemonic and .lpu built-in spelling
  unsigned arity;
  ElementwiseRule rule;
  ElementwiseSurface surface;
  llvm::StringRef vxmMnemonic;
  uint8_t vxmOpcode; // the instruction's number in the program file
};

/// Every row of the table, in its order (indexed by ElementwiseOp).
llvm::ArrayRef<ElementwiseInfo> elementwiseOps();
const ElementwiseInfo &elementwiseInfo(ElementwiseOp op);
/// The op a .lpu built-in name calls (Surface Builtin only).
std::optional<ElementwiseOp> elementwiseBuiltin(llvm::StringRef name);

inline bool isUnary(ElementwiseOp op) { return elementwiseInfo(op).arity == 1; }
inline bool isComparison(ElementwiseOp op) {
  ElementwiseRule r = elementwiseInfo(op).rule;
  return r == ElementwiseRule::Equality || r == ElementwiseRule::Ordering;
}

/// Whether `op` computes on elements of `type` (the machine's view: the IR
/// further restricts Logical ops to bool, see docs/ir.md): Float on floats,
/// Number on all but bool, Logical on bool and integers (bitwise),
/// Equality and Ordering on every dtype.
bool elementwiseDefinedOn(ElementwiseOp op, DType type);

} // namespace lpu::tensor
