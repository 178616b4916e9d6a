// The dataflow IR: one function per entry and bucket, a single block of ops
// in SSA form. Every op has exactly one result (Return has none) with a
// static type, the ops it reads, named attributes and the source location it
// was lowered from. There is no control flow: lowering has unrolled loops,
// decided every `if` and inlined every call.
//
// Ops live in program order in their Function, which owns them; an operand
// is the Op that produced it. Ops.def lists the op set.
#pragma once

#include "support/Arithmetic.h"
#include "support/DType.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace lpu::ir {

/// The most chips a program may use (lpuc --chips, the largest topology):
/// every chip number of the IR is below it.
inline constexpr int64_t kMaxChips = 4096;

using tensor::DType;

enum class OpKind : uint8_t {
#define LPU_OP(Enum, Mnemonic, Class, Operands) Enum,
#include "ir/Ops.def"
};

enum class OpClass : uint8_t { Leaf, Unary, Binary, Ternary, Reduce, Layout, Contract, Terminator };

llvm::StringRef mnemonic(OpKind kind);
std::optional<OpKind> parseMnemonic(llvm::StringRef text);
OpClass opClass(OpKind kind);
/// The operand count, or -1 when variadic.
int operandCount(OpKind kind);
/// Unary, Binary and Ternary ops: one output element from the same element
/// of each operand, so chains of them fuse.
bool isElementwise(OpKind kind);
/// The shared arithmetic (support/Arithmetic.h) an elementwise op
/// computes with; nullopt for convert, select and the other classes. The
/// reference interpreter and the fold pass both use it, so a folded value
/// is the interpreter's.
std::optional<tensor::ElementwiseOp> elementwiseArithmetic(OpKind kind);
/// The IR op of a row of support/Elementwise.def.
OpKind elementwiseKind(tensor::ElementwiseOp op);

/// `f16[1, 128, 768]`; rank 0 prints as `f32[]`.
struct Type {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  int64_t numElements() const;
  uint64_t byteSize() const;
  size_t rank() const { return shape.size(); }
  std::string str() const;
  bool operator==(const Type &) const = default;
};

/// Where an op came from in the .lpu source. A null location (empty file)
/// prints as `loc(unknown)`.
struct Location {
  std::string file;
  unsigned line = 0;
  unsigned col = 0;
  bool known() const { return !file.empty(); }
  /// "file:line:col", as diagnostics spell a place.
  std::string str() const { return file + ":" + std::to_string(line) + ":" + std::to_string(col); }
  bool operator==(const Location &) const = default;
};

/// An attribute value: bool, integer, float, string, integer list or
/// string list. Floats print with the fewest digits that read back exactly.
using Attr = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>,
                          std::vector<std::string>>;

class Function;

class Op {
public:
  OpKind kind() const { return kind_; }
  const Type &type() const { return type_; }
  void setType(Type t) { type_ = std::move(t); }
  const Location &loc() const { return loc_; }
  void setLoc(Location l) { loc_ = std::move(l); }

  llvm::ArrayRef<Op *> operands() const { return operands_; }
  Op *operand(size_t i) const { return operands_[i]; }
  void setOperand(size_t i, Op *value) { operands_[i] = value; }
  void setOperands(std::vector<Op *> values) { operands_ = std::move(values); }

  /// Attributes, kept sorted by name (so printing and comparing are stable).
  const std::vector<std::pair<std::string, Attr>> &attrs() const { return attrs_; }
  const Attr *attr(llvm::StringRef name) const;
  void setAttr(llvm::StringRef name, Attr value);
  void removeAttr(llvm::StringRef name);
  /// Typed accessors: nullopt when absent or of another kind.
  std::optional<int64_t> intAttr(llvm::StringRef name) const;
  std::optional<double> floatAttr(llvm::StringRef name) const; // ints convert
  std::optional<bool> boolAttr(llvm::StringRef name) const;
  std::optional<std::string> stringAttr(llvm::StringRef name) const;
  std::optional<std::vector<int64_t>> intsAttr(llvm::StringRef name) const;
  std::optional<std::vector<std::string>> stringsAttr(llvm::StringRef name) const;

  /// The fusion group an elementwise op belongs to (attribute `fusion`),
  /// set by the fuse-elementwise pass.
  std::optional<int64_t> fusionGroup() const { return intAttr("fusion"); }
  /// The chip the op's value lives on: a transfer's `to`, any other op's
  /// attribute `chip` (set by the partition pass), 0 when it has none.
  /// Below kMaxChips (the verifier's rule).
  int64_t chip() const;

  Function *parent() const { return parent_; }

private:
  friend class Function;
  Op(OpKind kind, Type type, std::vector<Op *> operands, Location loc)
      : kind_(kind), type_(std::move(type)), operands_(std::move(operands)),
        loc_(std::move(loc)) {}
  OpKind kind_;
  Type type_;
  std::vector<Op *> operands_;
  std::vector<std::pair<std::string, Attr>> attrs_;
  Location loc_;
  Function *parent_ = nullptr;
};

/// One entry at one bucket: `func @encode<S = 128>`. Its inputs are the
/// Input ops (in argument order), its weights the Param ops, its outputs the
/// operands of the final Return.
class Function {
public:
  Function(std::string name, std::vector<std::pair<std::string, int64_t>> bucket = {})
      : name_(std::move(name)), bucket_(std::move(bucket)) {}
  Function(const Function &) = delete;
  Function &operator=(const Function &) = delete;

  const std::string &name() const { return name_; }
  /// The bucketed sizes this function was instantiated with, in order.
  const std::vector<std::pair<std::string, int64_t>> &bucket() const { return bucket_; }

  /// Ops in program order (every operand is defined before its use).
  const std::vector<std::unique_ptr<Op>> &ops() const { return ops_; }
  size_t size() const { return ops_.size(); }

  /// Appends an op at the end (or before `before`, which must be in this
  /// function) and returns it. The type is taken as given: see
  /// inferType() for computing it.
  Op *append(OpKind kind, Type type, std::vector<Op *> operands, Location loc = {});
  Op *insertBefore(const Op *before, OpKind kind, Type type, std::vector<Op *> operands,
                   Location loc = {});

  /// Every use of `from` (as an operand of any op) now reads `to`.
  void replaceAllUsesWith(Op *from, Op *to);
  /// Restores program order after ops were given operands defined later:
  /// each op moves just after the last of its operands where one comes
  /// after it; ops otherwise keep their order.
  void sortTopologically();
  /// Removes every op for which `dead` holds; the caller guarantees none of
  /// the remaining ops uses them.
  void eraseIf(const std::function<bool(const Op &)> &dead);
  /// The number of ops reading `op` (counting repeated operands).
  size_t useCount(const Op *op) const;

  std::vector<Op *> inputs() const;  // Input ops, in order
  std::vector<Op *> params() const;  // Param ops, in order
  Op *terminator() const;            // the Return, or null while building

private:
  std::string name_;
  std::vector<std::pair<std::string, int64_t>> bucket_;
  std::vector<std::unique_ptr<Op>> ops_;
};

/// A param's slice of its weight, or a state input's of its state
/// (attribute `shard = [axis, start, full]`,
/// docs/ir.md): the weight at the op's `path` is `full` long along `axis`,
/// and the op's value is its elements [start, start + size) there, `size`
/// being the op's type's dimension `axis`; every other dimension is whole.
/// Tensor parallelism gives each chip such a slice of a weight.
struct Shard {
  int64_t axis = 0, start = 0, full = 0;
  auto operator<=>(const Shard &) const = default;
};
/// The shard of a param; nullopt when it has no `shard`, or one that is not
/// three integers with its axis below the rank (the verifier's errors).
std::optional<Shard> shardOf(const Op &op);
/// Gives the op the attribute `shard`.
void setShard(Op &op, const Shard &shard);
/// The shards of a return's outputs (attribute `shards`, three integers
/// [axis, start, full] per output, axis -1 for an output that is whole):
/// a state written in parts, each chip its slice (docs/ir.md, "State").
/// One nullopt per output when the return has no `shards`.
std::vector<std::optional<Shard>> outputShards(const Op &ret);
/// The bucket dimension the source names at each axis of an entry's input
/// or output ("" for a fixed axis), keyed by the input's or output's name:
/// attribute `bucket_dims` of an input (one string an axis) and of the
/// return (one `NAME=D0,D1,..` an output). Empty when the lowering did not
/// record them (IR written by hand): a program then names a dimension a
/// bucket dimension by its size alone (backend::nameBucketDims).
struct SourceBucketDims {
  std::map<std::string, std::vector<std::string>> inputs, outputs;
};
SourceBucketDims sourceBucketDims(const Function &fn);
/// Whether `update` (an update op) can be written in place, as far as its
/// operands and shapes tell, on a chip of `lanes` lanes and `sliceVectors`
/// vectors a slice: the updated tensor is a state input that `readers`
/// (its readers' count) says this update alone reads, the position is not
/// a constant, and either the axis is one of the rows' (not the last) and
/// one index of the axes before it (a head's positions, each row
/// `ceil(last / lanes)` vectors) fits a slice and is addressed by 16 bits,
/// or the axis is the last and one column is written (a row's vectors fit
/// a slice). The scheduler's scatter lowering takes exactly these
/// (scheduler/Legalize.h).
bool updatesInPlace(const Op &update, size_t readers, unsigned lanes, unsigned sliceVectors);
/// The type of the whole weight a param reads: its own type with the
/// shard's axis `full` long; its own type when it has no shard.
Type fullType(const Op &op);
/// The parameter path of a `param` op ("" for any other op).
std::string paramPath(const Op &op);
/// Whether `value` is, or is computed from, a param of `path`.
bool readsParam(const Op *value, llvm::StringRef path);

/// Everything lpuc compiled: every entry at every bucket, in source order.
struct Module {
  std::vector<std::unique_ptr<Function>> functions;

  Function *lookup(llvm::StringRef name,
                   llvm::ArrayRef<std::pair<std::string, int64_t>> bucket) const;
};

/// The result type an op of `kind` has for these operand types and
/// attributes, or an error message saying which rule is broken (the same
/// rules the verifier checks). Leaf ops, Reshape, Broadcast and Convert
/// take their type from `declared`, which is required for them.
std::variant<Type, std::string> inferType(OpKind kind, llvm::ArrayRef<Type> operands,
                                          const std::vector<std::pair<std::string, Attr>> &attrs,
                                          const Type *declared = nullptr);

} // namespace lpu::ir
