// The checker's view of values: tensor types whose dimensions are size
// normal forms, compile-time integers (sizes), floats, bools, lists, model
// instances and the other things a name can denote.
#pragma once

#include "frontend/AST.h"
#include "frontend/Size.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lpu::ir {
class Op;
}

namespace lpu::check {

using sizes::Size;

/// Bytes of one element of a dtype; 0 for an unknown (generic) dtype.
unsigned dtypeBytes(const std::string &dtype);
bool isDtypeName(llvm::StringRef name);
bool isFloatDtype(const std::string &dtype);
bool isIntDtype(const std::string &dtype);

/// `f16[B, S, D]`, `f32[..B, O]`, `bool` (rank 0).
struct TensorType {
  std::string dtype;
  std::optional<std::string> pack; // a leading `..B` of a generic body
  std::vector<Size> dims;

  std::string str() const;
  /// Elements, as a size (the product of the dims); a pack counts as 1.
  Size elements() const;
};
bool operator==(const TensorType &a, const TensorType &b);

/// What `..B` stands for: another pack (inside a generic body) followed by
/// explicit dimensions.
struct PackBinding {
  std::optional<std::string> pack;
  std::vector<Size> dims;
  std::string str() const;
};

struct ModuleInfo;

/// A model with its generic arguments bound: `nn.Linear<768, 3072>`.
struct ModelInst {
  const ast::ModelDecl *decl = nullptr;
  ModuleInfo *module = nullptr;
  std::map<std::string, Size> sizes;
  std::map<std::string, std::string> dtypes;
  std::string name; // for messages
  std::string key;  // identity for memoisation
};
using ModelInstPtr = std::shared_ptr<const ModelInst>;

/// Where a run-time tensor's elements come from, as the user wrote it: a
/// parameter of the fn being checked (`x`) or a param of a model (a weight,
/// `fc1.w`). Messages about values that are only known when the program
/// runs name them.
struct RuntimeSource {
  enum class Kind { Input, Weight, State };
  Kind kind = Kind::Input;
  std::string name;   // as written where it is used: `x`, `w`, `fc1.w`
  llvm::SMRange decl; // its declaration's name
  std::string note;   // said at `decl`: whose parameter or param it is

  /// Parameter `name` of fn `fn` (`f`, `Mlp.forward`).
  static RuntimeSource input(const std::string &name, const std::string &fn, llvm::SMRange decl);
  /// Param `name` of model `model`, a weight.
  static RuntimeSource weight(const std::string &name, const std::string &model,
                              llvm::SMRange decl);
  /// State `name` of model `model`, kept between calls.
  static RuntimeSource state(const std::string &name, const std::string &model,
                             llvm::SMRange decl);
};
/// Adds the sources of `from` that `into` lacks, keeping the order met.
void mergeSources(std::vector<RuntimeSource> &into, const std::vector<RuntimeSource> &from);
/// `input 'x'`, `inputs 'x' and 'y'`, `input 'x' and param 'fc1.w'`;
/// past three names, `... and 2 more`.
std::string describeSources(const std::vector<RuntimeSource> &sources);

struct Value {
  enum class Kind {
    Error,      // already reported: stays silent downstream
    Tensor,
    Int,        // a compile-time integer (a size)
    Float,      // a compile-time float
    Bool,       // a compile-time bool (known or not yet known)
    String,
    List,
    Model,      // a model value (a param of model type)
    ModelArray, // `[L] Block<D>`
    Function,   // a fn, possibly a method of `model`
    Module,     // an import alias
    Dtype,      // `f16` used as a callee
    Builtin,    // `relu`, `softmax`, ...
    Type,       // a model type named in a value position (`nn.Linear`)
  };
  Kind kind = Kind::Error;
  TensorType tensor;
  Size size; // Int value; ModelArray count
  double number = 0;
  std::optional<bool> boolean; // Bool: nullopt when it depends on a size
  std::string text;            // String, Dtype, Builtin name
  std::vector<Value> elements; // List
  bool tuple = false;          // List: a tuple `(a, b)` (a fn's results)
  ModelInstPtr model;          // Model, ModelArray element, Function's model
  const ast::FnDecl *fn = nullptr;
  ModuleInfo *module = nullptr; // Module, Function's module
  const ast::ModelDecl *modelDecl = nullptr; // Type
  /// Where the value was made, for "'h' has shape ... from 'concat' at ..."
  llvm::SMRange origin;
  std::string originWhat;
  /// While lowering: the IR value of a Tensor, and the parameter path of a
  /// Model, ModelArray or a model's Function (`layers.3`, empty for the
  /// entry's model).
  ir::Op *op = nullptr;
  std::string path;
  /// Tensor: the inputs and weights it is computed from (none for a
  /// constant tensor such as zeros<...>()).
  std::vector<RuntimeSource> sources;

  static Value error() { return Value(); }
  static Value ofTensor(TensorType t) {
    Value v;
    v.kind = Kind::Tensor;
    v.tensor = std::move(t);
    return v;
  }
  static Value ofInt(Size s) {
    Value v;
    v.kind = Kind::Int;
    v.size = std::move(s);
    return v;
  }
  static Value ofBool(std::optional<bool> b) {
    Value v;
    v.kind = Kind::Bool;
    v.boolean = b;
    return v;
  }
  static Value ofFloat(double d) {
    Value v;
    v.kind = Kind::Float;
    v.number = d;
    return v;
  }
  bool isError() const { return kind == Kind::Error; }
  bool isTensor() const { return kind == Kind::Tensor; }
  /// A compile-time number (integer or float) that adopts a tensor's dtype.
  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  /// How the value reads in a message: its type, or what it is.
  std::string describe() const;
  /// Why the value is not the compile-time `wanted` ("a bool", "an
  /// integer") a static rule needs, completing "the index is ...":
  /// "computed at run time from input 'i'", or "a compile-time float, not
  /// an integer".
  std::string describeNotStatic(const std::string &wanted) const;
};

/// A fn's declared result: one tensor type, or a tuple of them (`->
/// (logits: f16[S, V], i32[1])`), each field named or not.
struct ResultType {
  std::vector<TensorType> types;
  std::vector<std::string> names; // per field; empty when unnamed
  bool tuple = false;
  /// `f16[4]`, or `(logits: f16[4], i32[1])`.
  std::string str() const;
  /// The value a call gives before its body is looked at.
  Value value() const;
};

/// Whether a compile-time value becomes a tensor of type `t` where it meets
/// one (an argument, an annotation, a return): a number takes any rank-0
/// type, a bool the rank-0 bool.
bool adoptsType(const Value &v, const TensorType &t);

/// Sizes equal by normal form (Yes), provably different (No), or not
/// decidable because atoms differ (Unknown: repeated at instantiation).
enum class Decision { Yes, No, Unknown };
Decision sizesEqual(const Size &a, const Size &b);
/// False when the types provably differ (dtype, pack, rank, or a size that
/// differs by its normal form); undecidable sizes pass, to be repeated at
/// instantiation.
bool mayEqual(const TensorType &a, const TensorType &b);

/// The source text a range covers, as the user wrote it.
std::string sourceText(llvm::SMRange range);

} // namespace lpu::check
