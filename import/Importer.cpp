#include "import/ImporterImpl.h"

#include "support/Tensor.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/ConvertUTF.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace lpu::import {

std::string sanitizeName(const std::string &name) {
  std::string out;
  for (char c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    char d = ok ? c : '_';
    if (d == '_' && !out.empty() && out.back() == '_')
      continue;
    out.push_back(d);
  }
  while (!out.empty() && out.back() == '_')
    out.pop_back();
  while (!out.empty() && out.front() == '_')
    out.erase(out.begin());
  if (out.empty())
    return "v";
  if (std::isdigit(static_cast<unsigned char>(out.front())))
    out = "v" + out;
  return out;
}

std::string commentText(llvm::StringRef text) {
  std::string out;
  auto escape = [&](unsigned char c) {
    const char *hex = "0123456789abcdef";
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f)
        escape(c);
      else
        out += char(c);
      ++i;
      continue;
    }
    const unsigned len = llvm::getNumBytesForUTF8(c);
    const auto *p = reinterpret_cast<const llvm::UTF8 *>(text.data() + i);
    if (i + len <= text.size() && llvm::isLegalUTF8Sequence(p, p + len)) {
      out.append(text.data() + i, len);
      i += len;
    } else {
      escape(c);
      ++i;
    }
  }
  return out;
}

namespace detail {

// --- sizes -------------------------------------------------------------------

std::string joinNumbers(std::initializer_list<int64_t> numbers) {
  std::string out;
  for (int64_t n : numbers)
    out += (out.empty() ? "" : ", ") + std::to_string(n);
  return out;
}

std::string Size::text() const {
  if (!opaque.empty())
    return opaque;
  if (syms.empty())
    return std::to_string(coeff);
  std::string out = coeff == 1 ? "" : coeff == -1 ? "-" : std::to_string(coeff) + " * ";
  for (size_t i = 0; i < syms.size(); ++i)
    out += (i ? " * " : "") + syms[i];
  return out;
}

static std::string wrapped(const Size &s) {
  std::string t = s.text();
  return s.opaque.empty() ? t : "(" + t + ")";
}

Size mulSize(const Size &a, const Size &b) {
  if (a.isConst() && a.coeff == 1)
    return b;
  if (b.isConst() && b.coeff == 1)
    return a;
  if (!a.opaque.empty() || !b.opaque.empty()) {
    Size s;
    s.opaque = wrapped(a) + " * " + wrapped(b);
    return s;
  }
  Size s;
  if (__builtin_mul_overflow(a.coeff, b.coeff, &s.coeff)) {
    s.coeff = 1;
    s.opaque = "(" + a.text() + ") * (" + b.text() + ")"; // beyond int64: the checker refuses it
    return s;
  }
  s.syms = a.syms;
  s.syms.insert(s.syms.end(), b.syms.begin(), b.syms.end());
  std::sort(s.syms.begin(), s.syms.end());
  return s;
}

std::optional<Size> divSize(const Size &a, const Size &b) {
  if (a == b)
    return Size::of(1);
  if (b.isConst() && b.coeff == 1)
    return a;
  if (!a.opaque.empty() || !b.opaque.empty() || b.coeff == 0 || a.coeff % b.coeff != 0)
    return std::nullopt;
  Size s;
  s.coeff = a.coeff / b.coeff;
  s.syms = a.syms;
  for (const std::string &sym : b.syms) {
    auto it = std::find(s.syms.begin(), s.syms.end(), sym);
    if (it == s.syms.end())
      return std::nullopt;
    s.syms.erase(it);
  }
  return s;
}

Size addSize(const Size &a, const Size &b) {
  int64_t sum = 0;
  if (a.isConst() && b.isConst() && !__builtin_add_overflow(a.coeff, b.coeff, &sum))
    return Size::of(sum);
  if (b.isConst() && b.coeff == 0)
    return a;
  if (a.isConst() && a.coeff == 0)
    return b;
  Size s;
  if (b.isConst() && b.coeff < 0)
    s.opaque = a.text() + " - " + std::to_string(-b.coeff);
  else
    s.opaque = a.text() + " + " + b.text();
  return s;
}

std::string shapeText(const std::vector<Size> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + shape[i].text();
  return out + "]";
}

// --- constants ---------------------------------------------------------------

int64_t Const::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

float Const::floatAt(int64_t i) const {
  if (big)
    return big->floats.empty() ? float(big->ints[i]) : big->floats[i];
  if (!floats.empty())
    return floats[i];
  return float(ints[i].coeff);
}

Size Const::intAt(int64_t i) const {
  if (big)
    return big->ints.empty() ? Size::of(int64_t(big->floats[i])) : Size::of(big->ints[i]);
  if (!ints.empty())
    return ints[i];
  return Size::of(int64_t(floats[i]));
}

bool Const::symbolic() const {
  if (big)
    return false;
  return std::any_of(ints.begin(), ints.end(), [](const Size &s) { return !s.isConst(); });
}

std::vector<float> Const::allFloats() const {
  if (big && !big->floats.empty())
    return big->floats;
  std::vector<float> out(numElements());
  for (int64_t i = 0; i < int64_t(out.size()); ++i)
    out[i] = floatAt(i);
  return out;
}

// --- the importer ------------------------------------------------------------

static const char *const kReserved[] = {
    // keywords
    "import", "as", "model", "param", "fn", "let", "var", "return", "for", "in", "if", "else",
    "entry", "where", "const", "assert", "true", "false",
    // dtypes
    "bool", "i8", "i16", "i32", "f16", "bf16", "f32",
    // built-ins
    "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt",
    "softplus", "abs", "maximum", "minimum", "select", "sum", "mean", "max", "min", "argmax",
    "softmax", "reshape", "transpose", "concat", "split", "broadcast_to", "gather", "iota",
    "zeros", "ones", "full", "conv2d", "max_pool2d", "avg_pool2d", "floordiv", "ceildiv",
    // the module alias and the fn
    "nn", "forward"};

} // namespace detail

bool isFreeIdentifier(const std::string &name) {
  if (name.empty() || sanitizeName(name) != name)
    return false;
  for (const char *r : detail::kReserved)
    if (name == r)
      return false;
  return true;
}

namespace detail {

Importer::Importer(const OnnxGraph &graph, const ImportOptions &options)
    : graph(graph), options(options) {
  for (const char *r : kReserved)
    taken_.insert(r);
  taken_.insert(options.modelName);
  taken_.insert(options.entryName);
}

std::string Importer::freshName(const std::string &base) {
  std::string b = sanitizeName(base);
  if (!taken_.count(b)) {
    taken_.insert(b);
    return b;
  }
  for (int i = 1;; ++i) {
    std::string c = b + "_" + std::to_string(i);
    if (!taken_.count(c)) {
      taken_.insert(c);
      return c;
    }
  }
}

/// "/layer1/layer1.0/conv1/Conv" -> scope "layer1.0.conv1", op "Conv".
static std::pair<std::string, std::string> splitNodeName(const std::string &name) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  llvm::StringRef(name).split(parts, '/', -1, false);
  if (parts.size() <= 1)
    return {"", name};
  std::vector<std::string> scope;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    llvm::StringRef p = parts[i];
    // torch repeats a parent in its children's names: "layer1/layer1.0".
    if (i + 2 < parts.size() && parts[i + 1].startswith((p + ".").str()))
      continue;
    scope.push_back(p.str());
  }
  return {llvm::join(scope, "."), parts.back().str()};
}

std::string Importer::localName(const OnnxNode &node, const std::string &hint) {
  auto fresh = [&](const std::string &base) {
    std::string b = sanitizeName(base);
    return freshName(reserved_.count(b) ? b + "_out" : b);
  };
  if (!hint.empty())
    return fresh(hint);
  auto [scope, op] = splitNodeName(node.name);
  std::string lowered = llvm::StringRef(op).lower();
  if (scope.empty())
    return fresh(lowered);
  std::string s = sanitizeName(scope);
  if (!taken_.count(s) && !reserved_.count(s))
    return freshName(s);
  return fresh(s + "_" + lowered);
}

std::string Importer::layerName(const OnnxNode &node, const std::string &initializer) {
  // The node's scope first ("/layer1/layer1.0/conv1/Conv" -> layer1.0.conv1):
  // it names the module that ran, even where the exporter shared one
  // initializer among several (identical layers, deduplicated).
  auto [scope, op] = splitNodeName(node.name);
  if (!scope.empty())
    return sanitizeName(scope);
  llvm::StringRef init(initializer);
  if (!init.empty() && !init.startswith("onnx::")) {
    size_t dot = init.rfind('.');
    if (dot != llvm::StringRef::npos && dot > 0)
      return sanitizeName(init.substr(0, dot).str());
    return sanitizeName(initializer);
  }
  return sanitizeName(llvm::StringRef(op).lower());
}

llvm::Error Importer::nodeError(const OnnxNode &node, const llvm::Twine &message) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "node '" + node.name + "' (" + node.opType + "): " + message);
}

llvm::Expected<Value *> Importer::value(const std::string &name) {
  auto it = values_.find(name);
  if (it == values_.end())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the graph reads '" + name + "', which nothing defines");
  return it->second.get();
}

llvm::Expected<Value *> Importer::input(const OnnxNode &node, size_t i) {
  if (i >= node.inputs.size() || node.inputs[i].empty())
    return nullptr;
  return value(node.inputs[i]);
}

llvm::Expected<const Const *> Importer::constInput(const OnnxNode &node, size_t i,
                                                   const char *what) {
  auto v = input(node, i);
  if (!v)
    return v.takeError();
  if (!*v)
    return nodeError(node, llvm::Twine("has no ") + what);
  if ((*v)->runtime)
    return nodeError(node, llvm::Twine("its ") + what + " ('" + node.inputs[i] +
                               "') is computed at run time from data; a statically scheduled "
                               "program needs it known when it is compiled (a data-dependent "
                               "shape)");
  return &(*v)->c;
}

const OnnxNode *Importer::producerOf(const std::string &name) const {
  auto it = producer.find(name);
  return it == producer.end() ? nullptr : &graph.nodes[it->second];
}

void Importer::defineConst(const std::string &name, Const c) {
  Value v;
  v.runtime = false;
  v.c = std::move(c);
  if (v.c.origin.empty())
    v.c.origin = name;
  values_[name] = std::make_shared<Value>(std::move(v));
}

void Importer::defineRuntime(const std::string &name, const std::string &ref, tensor::DType dtype,
                             std::vector<Size> shape) {
  Value v;
  v.runtime = true;
  v.ref = ref;
  v.dtype = dtype;
  v.shape = std::move(shape);
  values_[name] = std::make_shared<Value>(std::move(v));
}

void Importer::alias(const std::string &name, const Value &v) {
  for (auto &[key, value] : values_)
    if (value.get() == &v) {
      values_[name] = value;
      return;
    }
  values_[name] = std::make_shared<Value>(v);
}

std::string Importer::throughIdentity(const std::string &name) const {
  std::string n = name;
  for (const OnnxNode *p = producerOf(n); p && p->opType == "Identity" && !p->inputs.empty();
       p = producerOf(n))
    n = p->inputs[0];
  return n;
}

static std::optional<tensor::DType> lpuDType(int32_t onnxType) {
  switch (onnxType) {
  case kOnnxFloat:
  case kOnnxFloat16:
  case kOnnxBFloat16:
  case kOnnxDouble: // constants only; inputs of it are refused
    return tensor::DType::F16;
  case kOnnxInt64:
  case kOnnxInt32:
  case kOnnxUInt8:
  case kOnnxUInt16:
    return tensor::DType::I32;
  case kOnnxInt16:
    return tensor::DType::I16;
  case kOnnxInt8:
    return tensor::DType::I8;
  case kOnnxBool:
    return tensor::DType::Bool;
  default:
    return std::nullopt;
  }
}

tensor::DType Importer::dtypeOf(const Value &v) const {
  if (v.runtime)
    return v.dtype;
  return lpuDType(v.c.type).value_or(tensor::DType::F16);
}

std::vector<Size> Importer::shapeOf(const Value &v) const {
  if (v.runtime)
    return v.shape;
  std::vector<Size> s;
  for (int64_t d : v.c.dims)
    s.push_back(Size::of(d));
  return s;
}

tensor::Tensor Importer::toTensor(const Const &c, std::optional<tensor::DType> as) const {
  tensor::DType type = as.value_or(lpuDType(c.type).value_or(tensor::DType::F16));
  tensor::Tensor t(type, c.dims);
  if (type == tensor::DType::F16 || type == tensor::DType::BF16 || type == tensor::DType::F32) {
    t.setFloats(c.allFloats());
  } else {
    for (int64_t i = 0; i < c.numElements(); ++i) {
      int64_t v = c.intAt(i).value().value_or(0);
      if (type == tensor::DType::I32)
        v = std::clamp<int64_t>(v, INT32_MIN, INT32_MAX);
      t.setInt(i, type == tensor::DType::Bool ? (v != 0) : v);
    }
  }
  return t;
}

static std::string floatLiteral(double v) {
  if (std::isnan(v) || std::isinf(v))
    return v > 0 ? "65504.0" : "-65504.0"; // f16's largest finite value
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  std::string s = buffer;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  else if (s.find('.') == std::string::npos) {
    size_t e = s.find('e');
    s.insert(e, ".0");
  }
  return v < 0 ? "(" + s + ")" : s;
}

llvm::Expected<std::string> Importer::operand(Value &v, bool literalOk) {
  if (v.runtime)
    return v.ref;
  if (!v.paramRef.empty())
    return v.paramRef;
  const Const &c = v.c;
  if (c.symbolic()) {
    // A shape value used as data: each element is a compile-time integer.
    if (c.dims.empty())
      return c.ints[0].text();
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the shape value '" + c.origin +
                                       "' is used as tensor data, which lpu-import does not "
                                       "translate");
  }
  tensor::DType type = lpuDType(c.type).value_or(tensor::DType::F16);
  if (type == tensor::DType::I32 || type == tensor::DType::I16 || type == tensor::DType::I8) {
    // int64 becomes i32 (docs/import.md): a value past it is refused, not
    // saturated.
    int bits = type == tensor::DType::I32 ? 32 : type == tensor::DType::I16 ? 16 : 8;
    int64_t lo = -(int64_t(1) << (bits - 1)), hi = (int64_t(1) << (bits - 1)) - 1;
    for (int64_t i = 0; i < c.numElements(); ++i) {
      int64_t x = c.intAt(i).value().value_or(0);
      if (x < lo || x > hi)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "the " + onnxTypeName(c.type) + " constant '" + c.origin + "' holds " +
                std::to_string(x) + " (element " + std::to_string(i) + "), which does not fit " +
                tensor::dtypeName(type).str() + ", the language's dtype for it");
    }
  }
  if (literalOk && c.numElements() == 1 && c.dims.size() <= 1) {
    if (c.isFloat())
      return floatLiteral(c.floatAt(0));
    int64_t x = *c.intAt(0).value();
    if (c.type == kOnnxBool)
      return std::string(x ? "true" : "false");
    return x < 0 ? "(" + std::to_string(x) + ")" : std::to_string(x);
  }
  std::vector<Size> shape = shapeOf(v);
  std::string typeText = std::string(tensor::dtypeName(type)) + shapeText(shape);
  if (shape.empty())
    typeText = std::string(tensor::dtypeName(type));
  std::string name = addParam(c.origin, typeText, c.origin, {{"", toTensor(c, type)}});
  v.paramRef = name;
  return name;
}

std::string Importer::addParam(const std::string &base, const std::string &type,
                               const std::string &comment,
                               std::vector<std::pair<std::string, tensor::Tensor>> tensors) {
  std::string name = freshName(base);
  std::string note = comment == name ? "" : comment;
  params_.push_back({name, type, note});
  for (auto &[path, t] : tensors)
    weights_.emplace_back(path.empty() ? name : name + "." + path, std::move(t));
  return name;
}

std::string Importer::emit(const OnnxNode &node, const std::string &expr, const std::string &hint) {
  std::string name = localName(node, hint);
  body_.push_back("let " + name + " = " + expr + " // " + commentText(node.name));
  return name;
}

llvm::Error Importer::checkOperators() {
  std::map<std::string, std::vector<std::string>> unsupported, dataDependent;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const OnnxNode &n = graph.nodes[i];
    if (absorbed.count(i) || patternRoots.count(i))
      continue;
    bool customDomain = !n.domain.empty() && n.domain != "ai.onnx";
    if (n.opType == "NonZero" || n.opType == "Unique")
      dataDependent[n.opType].push_back(n.name);
    else if (customDomain || !isSupportedOperator(n.opType))
      unsupported[customDomain ? n.domain + "." + n.opType : n.opType].push_back(n.name);
  }
  if (unsupported.empty() && dataDependent.empty())
    return llvm::Error::success();
  auto listed = [](const std::vector<std::string> &nodes) {
    std::vector<std::string> shown(nodes.begin(),
                                   nodes.begin() + std::min<size_t>(nodes.size(), 8));
    std::string list = llvm::join(shown, ", ");
    if (nodes.size() > shown.size())
      list += ", ...";
    return std::to_string(nodes.size()) + (nodes.size() == 1 ? " node: " : " nodes: ") + list;
  };
  std::string msg;
  for (auto &[op, nodes] : dataDependent)
    msg += "operator '" + op + "' (" + listed(nodes) +
           ") gives a data-dependent shape: the shape of every value must be known when the "
           "program is compiled\n";
  for (auto &[op, nodes] : unsupported)
    msg += "unsupported operator '" + op + "' (" + listed(nodes) + ")\n";
  msg.pop_back();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error Importer::declareInputs() {
  for (const OnnxTensor &t : graph.initializers) {
    Const c;
    c.type = t.type;
    c.dims = t.dims;
    c.big = &t;
    c.origin = t.name;
    defineConst(t.name, std::move(c));
  }
  std::map<std::string, std::string> symbolNames; // ONNX symbol -> size name
  for (const OnnxValueInfo &in : graph.inputs) {
    if (in.type == kOnnxUndefined)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "input '" + in.name + "' is not a tensor");
    std::optional<tensor::DType> type = lpuDType(in.type);
    if (!type || in.type == kOnnxDouble || in.type == kOnnxUInt16)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "input '" + in.name + "' has dtype " + onnxTypeName(in.type) +
              ", which the language lacks (it has bool, i8, i16, i32, f16, bf16 and f32)");
    if (!in.hasShape)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "input '" + in.name + "' has no shape");
    std::vector<Size> shape;
    for (size_t d = 0; d < in.dims.size(); ++d) {
      const OnnxDim &dim = in.dims[d];
      if (dim.value) {
        if (*dim.value < 1)
          return llvm::createStringError(
              llvm::inconvertibleErrorCode(),
              "input '" + in.name + "': dimension " + std::to_string(d) + " is " +
                  std::to_string(*dim.value) + "; a size must be at least 1");
        shape.push_back(Size::of(*dim.value));
        continue;
      }
      if (dim.symbol.empty())
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "input '" + in.name + "': dimension " + std::to_string(d) +
                " has neither a size nor a name; export it with a fixed size or a named "
                "dynamic axis");
      auto it = symbolNames.find(dim.symbol);
      if (it == symbolNames.end()) {
        std::string name = freshName(dim.symbol);
        it = symbolNames.emplace(dim.symbol, name).first;
        sizeNames_.push_back(name);
        sizeSymbols_[name] = dim.symbol;
      }
      shape.push_back(Size::symbol(it->second));
    }
    std::string ref = freshName(in.name);
    std::string typeText = std::string(tensor::dtypeName(*type)) + shapeText(shape);
    signature_.push_back(ref + ": " + typeText);
    defineRuntime(in.name, ref, *type, shape);
  }
  // Every symbolic size needs its buckets, and every bucket a size.
  std::vector<std::string> missing;
  for (auto &[symbol, name] : symbolNames)
    if (!options.buckets.count(symbol) && !options.buckets.count(name))
      missing.push_back(symbol);
  if (!missing.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the model's inputs have the symbolic dimension" + std::string(missing.size() > 1 ? "s " : " ") +
            llvm::join(missing, ", ") + "; give the sizes to compile for with --bucket " +
            missing.front() + "=N[,N...]");
  for (auto &[key, sizes] : options.buckets) {
    bool known = false;
    for (auto &[symbol, name] : symbolNames)
      known |= key == symbol || key == name;
    if (!known) {
      std::vector<std::string> all;
      for (auto &[symbol, name] : symbolNames)
        all.push_back(symbol);
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "--bucket names '" + key + "', which is no symbolic dimension of the model's inputs" +
              (all.empty() ? std::string(" (it has none)")
                           : " (it has " + llvm::join(all, ", ") + ")"));
    }
  }
  return llvm::Error::success();
}

llvm::Error Importer::convertNode(size_t index) {
  const OnnxNode &node = graph.nodes[index];
  if (absorbed.count(index))
    return llvm::Error::success();
  auto root = patternRoots.find(index);
  if (root != patternRoots.end())
    return root->second();
  return convertOperator(*this, node);
}

llvm::Expected<ImportResult> Importer::run() {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const std::string &in : graph.nodes[i].inputs)
      if (!in.empty())
        ++uses[in];
    for (const std::string &out : graph.nodes[i].outputs)
      producer[out] = i;
  }
  for (const OnnxValueInfo &out : graph.outputs)
    ++uses[out.name];
  if (graph.outputs.size() != 1)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the model has " + std::to_string(graph.outputs.size()) +
            " outputs; an lpu entry returns one tensor");
  if (llvm::Error e = declareInputs())
    return e;
  findPatterns(*this);
  // Layers take their module's name before any local can.
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const OnnxNode &n = graph.nodes[i];
    static const std::set<std::string> layers = {"Gemm", "Conv", "BatchNormalization",
                                                 "LayerNormalization", "Gather"};
    if ((layers.count(n.opType) || patternRoots.count(i)) && !splitNodeName(n.name).first.empty())
      reserveLayerName(layerName(n, ""));
  }
  if (llvm::Error e = checkOperators())
    return e;
  // A Gather by ids the model takes as an input (an embedding's lookup)
  // is converted just before the first node that reads it, not where the
  // exporter put it: its ids are wrapped first (opGather), and with that
  // select ahead of every other gather BERT-base at sequence 128 found no
  // SRAM for a layer's scores, while the same program with the lookup
  // next to its use fits (the scheduler lowers in source order). Its
  // inputs are the model's, so it can move down freely.
  std::set<std::string> modelInputs;
  for (const OnnxValueInfo &in : graph.inputs)
    modelInputs.insert(in.name);
  std::vector<bool> deferred(graph.nodes.size(), false), done(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const OnnxNode &n = graph.nodes[i];
    deferred[i] = n.opType == "Gather" && n.inputs.size() > 1 && modelInputs.count(n.inputs[1]) &&
                  !absorbed.count(i) && !patternRoots.count(i) && !n.outputs.empty();
  }
  auto convert = [&](size_t i) -> llvm::Error {
    done[i] = true;
    return convertNode(i);
  };
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (deferred[i])
      continue;
    for (const std::string &in : graph.nodes[i].inputs)
      if (auto p = producer.find(in); !in.empty() && p != producer.end() && deferred[p->second] &&
                                      !done[p->second])
        if (llvm::Error e = convert(p->second))
          return e;
    if (llvm::Error e = convert(i))
      return e;
  }
  // Lookups nothing reads but the model's output.
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!done[i])
      if (llvm::Error e = convert(i))
        return e;
  return finish();
}

llvm::Expected<ImportResult> Importer::finish() {
  const OnnxValueInfo &out = graph.outputs.front();
  auto v = value(out.name);
  if (!v)
    return v.takeError();
  if (!(*v)->runtime)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the output '" + out.name +
                                       "' is a constant; the model computes nothing from its "
                                       "inputs");
  Value &result = **v;
  std::string ret = result.ref;
  tensor::DType retType = result.dtype;
  if (isOnnxFloat(out.type) && out.type != kOnnxFloat16) {
    ret = "f32(" + ret + ")";
    retType = tensor::DType::F32;
  }

  std::ostringstream os;
  os << "// Imported from " << (options.sourceName.empty() ? "an ONNX model" : commentText(options.sourceName))
     << " by lpu-import";
  if (!graph.producer.empty())
    os << " (exported by " << commentText(graph.producer) << ", opset " << graph.opset << ")";
  os << ".\n";
  if (usesStdNn_)
    os << "import std.nn\n";
  os << "\nmodel " << options.modelName << " {\n";
  for (const ParamDecl &p : params_) {
    os << "  param " << p.name << ": " << p.type;
    if (!p.comment.empty())
      os << " // " << commentText(p.comment);
    os << "\n";
  }
  os << "\n  fn forward";
  if (!sizeNames_.empty())
    os << "<" << llvm::join(sizeNames_, ", ") << ">";
  os << "(" << llvm::join(signature_, ", ") << ") -> " << tensor::dtypeName(retType).str()
     << shapeText(result.shape) << " {\n";
  for (const std::string &line : body_)
    os << "    " << line << "\n";
  os << "    return " << ret << "\n  }\n}\n\nentry " << options.entryName << " = "
     << options.modelName << ".forward";
  if (!sizeNames_.empty()) {
    std::vector<std::string> sets;
    for (const std::string &name : sizeNames_) {
      // declareInputs made sure that a bucket names each size, by its ONNX
      // symbol or by the size's own name.
      const std::vector<int64_t> *sizes = nullptr;
      for (auto &[key, s] : options.buckets)
        if (key == name || key == sizeSymbols_.at(name))
          sizes = &s;
      std::vector<std::string> texts;
      for (int64_t s : *sizes)
        texts.push_back(std::to_string(s));
      sets.push_back(name + " in {" + llvm::join(texts, ", ") + "}");
    }
    os << "<" << llvm::join(sets, ", ") << ">";
  }
  os << "\n";

  ImportResult r;
  r.source = os.str();
  r.weights = std::move(weights_);
  return r;
}

} // namespace detail

llvm::Expected<ImportResult> importOnnx(const OnnxGraph &graph, const ImportOptions &options) {
  detail::Importer importer(graph, options);
  return importer.run();
}

} // namespace lpu::import
