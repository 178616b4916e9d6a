#include "support/Elementwise.h"

namespace lpu::tensor {

namespace {
using R = ElementwiseRule;
using S = ElementwiseSurface;

constexpr ElementwiseInfo kOps[] = {
#define LPU_ELEMENTWISE(Enum, Name, Arity, Rule, Surface, VxmEnum, VxmName, Opcode)              \
  {ElementwiseOp::Enum, Name, Arity, R::Rule, S::Surface, VxmName, Opcode},
#include "support/Elementwise.def"
};

constexpr bool arityIsOneOrTwo() {
  unsigned arities[] = {
#define LPU_ELEMENTWISE(Enum, Name, Arity, Rule, Surface, VxmEnum, VxmName, Opcode) Arity,
#include "support/Elementwise.def"
  };
  for (unsigned a : arities)
    if (a != 1 && a != 2)
      return false;
  return true;
}
static_assert(arityIsOneOrTwo(), "support/Elementwise.def: an elementwise op has 1 or 2 operands");
} // namespace

llvm::ArrayRef<ElementwiseInfo> elementwiseOps() { return kOps; }

const ElementwiseInfo &elementwiseInfo(ElementwiseOp op) { return kOps[unsigned(op)]; }

std::optional<ElementwiseOp> elementwiseBuiltin(llvm::StringRef name) {
  for (const ElementwiseInfo &info : kOps)
    if (info.surface == S::Builtin && info.name == name)
      return info.op;
  return std::nullopt;
}

bool elementwiseDefinedOn(ElementwiseOp op, DType type) {
  switch (elementwiseInfo(op).rule) {
  case R::Float: return isFloat(type);
  case R::Number: return type != DType::Bool;
  case R::Logical: return !isFloat(type);
  case R::Equality:
  case R::Ordering: return true; // lt..ge on bool compare 0 and 1, as the machine does
  }
  return false;
}

} // namespace lpu::tensor
