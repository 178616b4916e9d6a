// The importer's state, shared by Importer.cpp (values, constants, naming,
// emission), ImportOps.cpp (one handler per ONNX operator) and
// Patterns.cpp (node groups that become std.nn layers).
#pragma once

#include "import/Importer.h"
#include "support/DType.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace lpu::import::detail {

/// A size as the importer knows it: `coeff * sym1 * sym2 ...`, or an
/// expression that is no monomial (`opaque`, printed as it is). Shape
/// arithmetic in exported graphs multiplies and divides dimensions, which
/// monomials keep exact.
struct Size {
  int64_t coeff = 1;
  std::vector<std::string> syms; // sorted
  std::string opaque;

  static Size of(int64_t v) {
    Size s;
    s.coeff = v;
    return s;
  }
  static Size symbol(const std::string &name) {
    Size s;
    s.syms = {name};
    return s;
  }
  bool isConst() const { return syms.empty() && opaque.empty(); }
  std::optional<int64_t> value() const {
    return isConst() ? std::optional<int64_t>(coeff) : std::nullopt;
  }
  std::string text() const;
  bool operator==(const Size &o) const {
    return coeff == o.coeff && syms == o.syms && opaque == o.opaque;
  }
  bool operator!=(const Size &o) const { return !(*this == o); }
};

/// "1, 2, 3": numbers as a list in the source.
std::string joinNumbers(std::initializer_list<int64_t> numbers);

Size mulSize(const Size &a, const Size &b);
std::optional<Size> divSize(const Size &a, const Size &b);
Size addSize(const Size &a, const Size &b);
std::string shapeText(const std::vector<Size> &shape);

/// The most elements a constant computed at import may have (a Range or a
/// ConstantOfShape past it is refused rather than built).
inline constexpr int64_t kMaxFoldedElements = int64_t(1) << 24;

/// A value known at import: an initializer, a Constant, or folded from
/// them and from shapes. Floating types hold floats; integer and bool
/// types hold sizes (a shape's dimensions may be symbolic).
struct Const {
  int32_t type = kOnnxUndefined;
  std::vector<int64_t> dims;
  std::vector<float> floats;
  std::vector<Size> ints;
  const OnnxTensor *big = nullptr; // an initializer's data, not copied
  std::string origin;              // the ONNX name it came from

  bool isFloat() const { return isOnnxFloat(type); }
  int64_t numElements() const;
  float floatAt(int64_t i) const;
  Size intAt(int64_t i) const;
  bool symbolic() const; // some element is not a number
  std::vector<float> allFloats() const;
};

struct Value {
  bool runtime = false;
  // A run-time tensor: the local (or parameter) that holds it.
  std::string ref;
  tensor::DType dtype = tensor::DType::F16;
  std::vector<Size> shape;
  // A constant.
  Const c;
  std::string paramRef; // set once the constant became a parameter
  // A run-time integer tensor known to hold no negative value (an iota,
  // a slice of a constant without negatives): Gather's indices need no
  // wrapping from the end.
  bool nonNegative = false;
};

class Importer {
public:
  Importer(const OnnxGraph &graph, const ImportOptions &options);
  llvm::Expected<ImportResult> run();

  // --- used by the operator handlers ---------------------------------------
  const OnnxGraph &graph;
  const ImportOptions &options;

  /// The value named `name`; an error when the graph never defined it.
  llvm::Expected<Value *> value(const std::string &name);
  bool has(const std::string &name) const { return values_.count(name) != 0; }
  /// Operand `i` of `node`, or nullptr when it is absent (optional input).
  llvm::Expected<Value *> input(const OnnxNode &node, size_t i);
  /// Operand `i` as a constant; an error naming the node when it is
  /// computed at run time (`what` says what it is for).
  llvm::Expected<const Const *> constInput(const OnnxNode &node, size_t i, const char *what);
  void defineConst(const std::string &name, Const c);
  void defineRuntime(const std::string &name, const std::string &ref, tensor::DType dtype,
                     std::vector<Size> shape);
  /// `name` is the same value as `v` (one of the values defined before).
  void alias(const std::string &name, const Value &v);
  /// `name` with Identity nodes looked through: what an initializer's
  /// readers see when the exporter shared it among layers.
  std::string throughIdentity(const std::string &name) const;

  /// An expression for `v` as an operand: its local, a literal for a
  /// one-element constant (`literalOk`), or a parameter made from the
  /// constant (f16 for floats, i32 for integers, bool).
  llvm::Expected<std::string> operand(Value &v, bool literalOk = true);
  /// The dtype and shape `v` has as an operand.
  tensor::DType dtypeOf(const Value &v) const;
  std::vector<Size> shapeOf(const Value &v) const;

  /// Emits `let NAME = expr  // comment` for the node's output `out`.
  std::string emit(const OnnxNode &node, const std::string &expr, const std::string &hint = "");
  void emitLine(const std::string &line) { body_.push_back(line); }
  /// A fresh local named after the node (its scope in the exporter's
  /// naming, as "layer1.0.conv1"), or after `hint`.
  std::string localName(const OnnxNode &node, const std::string &hint = "");
  std::string freshName(const std::string &base);
  /// A layer's name is kept for its parameter: no local takes it.
  void reserveLayerName(const std::string &name) { reserved_.insert(name); }

  /// Declares `param NAME: TYPE` with a comment naming the ONNX originals
  /// and records its tensors (paths relative to NAME: "" for a plain
  /// tensor, "w", "b", ... for a std.nn layer).
  std::string addParam(const std::string &base, const std::string &type,
                       const std::string &comment,
                       std::vector<std::pair<std::string, tensor::Tensor>> tensors);
  /// A layer's name: the initializer's name without its last part
  /// ("fc.bias" -> "fc") unless the exporter generated it ("onnx::..."),
  /// else the node's scope.
  std::string layerName(const OnnxNode &node, const std::string &initializer);
  void useStdNn() { usesStdNn_ = true; }

  /// f16 (or i32, bool) tensor of a constant, in the language's dtype.
  tensor::Tensor toTensor(const Const &c, std::optional<tensor::DType> as = std::nullopt) const;

  llvm::Error nodeError(const OnnxNode &node, const llvm::Twine &message) const;

  /// Values that are their input zero-padded by this many on each side of
  /// H and W (a Pad in front of AveragePools, which take it as their
  /// padding): the value itself stands for the input.
  std::unordered_map<std::string, int64_t> paddedBy;
  /// Nodes folded into a pattern's root; skipped by the main loop.
  std::set<size_t> absorbed;
  /// A pattern's root node -> what emits the whole group there.
  std::unordered_map<size_t, std::function<llvm::Error()>> patternRoots;
  /// Producer of each value, and how many nodes read it.
  std::unordered_map<std::string, size_t> producer;
  std::unordered_map<std::string, int> uses;
  const OnnxNode *producerOf(const std::string &value) const;

private:
  llvm::Error checkOperators();
  llvm::Error declareInputs();
  llvm::Error convertNode(size_t index);
  llvm::Expected<ImportResult> finish();

  // Shared, so that an Identity of a constant is the same value (one
  // parameter, however many names the graph gives it).
  std::unordered_map<std::string, std::shared_ptr<Value>> values_;
  std::set<std::string> taken_, reserved_;
  std::vector<std::string> sizeNames_;
  std::map<std::string, std::string> sizeSymbols_; // size name -> ONNX symbol
  struct ParamDecl {
    std::string name, type, comment;
  };
  std::vector<ParamDecl> params_;
  std::vector<std::string> signature_;
  std::vector<std::string> body_;
  std::vector<tensor::NamedTensor> weights_;
  bool usesStdNn_ = false;
};

/// Runs the handler of `node`'s operator; false when there is none.
bool isSupportedOperator(const std::string &opType);
llvm::Error convertOperator(Importer &im, const OnnxNode &node);
/// Layer normalisation of `x` over its last axis into `output`: nn.LayerNorm
/// when the epsilon is std.nn's, written out otherwise.
llvm::Error emitLayerNorm(Importer &im, const OnnxNode &node, Value &x, const Const &gamma,
                         const Const &beta, float eps, const std::string &output);
/// Finds node groups that become one std.nn layer or built-in (Linear,
/// GELU's erf form, LayerNorm's decomposition, attention) and records
/// them in `patternRoots` and `absorbed`.
void findPatterns(Importer &im);

} // namespace lpu::import::detail
