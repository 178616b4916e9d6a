#include "import/OnnxGraph.h"

#include "support/Files.h"
#include "support/Tensor.h"

#include <onnx/onnx_pb.h>

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cstring>
#include <map>

namespace lpu::import {

namespace {

/// The newest opset of the default domain whose operators the importer
/// knows (docs/import.md, "Operators").
constexpr int64_t kNewestOpset = 17;

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

template <typename T> std::vector<T> littleEndian(const std::string &raw) {
  std::vector<T> out(raw.size() / sizeof(T));
  std::memcpy(out.data(), raw.data(), out.size() * sizeof(T));
  return out;
}

/// Bit patterns of 16-bit floats (f16 or bf16) to floats.
std::vector<float> widen16(tensor::DType type, const std::vector<uint16_t> &bits) {
  auto t = tensor::Tensor::fromBytes(
      type, {int64_t(bits.size())},
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bits.data()), bits.size() * 2));
  if (!t) {
    llvm::consumeError(t.takeError());
    return {};
  }
  return t->toFloats();
}

llvm::Expected<OnnxTensor> decodeTensor(const onnx::TensorProto &proto) {
  OnnxTensor t;
  t.name = proto.name();
  t.type = proto.data_type();
  t.dims.assign(proto.dims().begin(), proto.dims().end());
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    return fail("tensor '" + t.name +
                "' keeps its data in an external file, which lpu-import does not read (save the "
                "model with its weights inside it)");
  int64_t n = t.numElements();
  if (n < 0)
    return fail("tensor '" + t.name + "' has a negative dimension");
  const std::string &raw = proto.raw_data();
  bool hasRaw = proto.has_raw_data();
  switch (t.type) {
  case kOnnxFloat:
    t.floats = hasRaw ? littleEndian<float>(raw)
                      : std::vector<float>(proto.float_data().begin(), proto.float_data().end());
    break;
  case kOnnxDouble: {
    std::vector<double> d = hasRaw ? littleEndian<double>(raw)
                                   : std::vector<double>(proto.double_data().begin(),
                                                         proto.double_data().end());
    t.floats.assign(d.begin(), d.end());
    break;
  }
  case kOnnxFloat16:
  case kOnnxBFloat16: {
    std::vector<uint16_t> bits;
    if (hasRaw)
      bits = littleEndian<uint16_t>(raw);
    else
      for (int32_t v : proto.int32_data())
        bits.push_back(uint16_t(v));
    t.floats = widen16(t.type == kOnnxFloat16 ? tensor::DType::F16 : tensor::DType::BF16, bits);
    break;
  }
  case kOnnxInt64:
    t.ints = hasRaw ? littleEndian<int64_t>(raw)
                    : std::vector<int64_t>(proto.int64_data().begin(), proto.int64_data().end());
    break;
  case kOnnxInt32: {
    std::vector<int32_t> v = hasRaw ? littleEndian<int32_t>(raw)
                                    : std::vector<int32_t>(proto.int32_data().begin(),
                                                           proto.int32_data().end());
    t.ints.assign(v.begin(), v.end());
    break;
  }
  case kOnnxInt16: {
    if (hasRaw) {
      auto v = littleEndian<int16_t>(raw);
      t.ints.assign(v.begin(), v.end());
    } else
      t.ints.assign(proto.int32_data().begin(), proto.int32_data().end());
    break;
  }
  case kOnnxInt8:
  case kOnnxUInt8:
  case kOnnxBool: {
    if (hasRaw) {
      for (char c : raw)
        t.ints.push_back(t.type == kOnnxInt8 ? int64_t(int8_t(c)) : int64_t(uint8_t(c)));
    } else
      t.ints.assign(proto.int32_data().begin(), proto.int32_data().end());
    break;
  }
  case kOnnxUInt16:
  case kOnnxUInt32:
  case kOnnxUInt64: {
    if (hasRaw) {
      size_t width = t.type == kOnnxUInt16 ? 2 : t.type == kOnnxUInt32 ? 4 : 8;
      for (size_t i = 0; i + width <= raw.size(); i += width) {
        uint64_t v = 0;
        std::memcpy(&v, raw.data() + i, width);
        t.ints.push_back(int64_t(v));
      }
    } else if (t.type == kOnnxUInt16)
      t.ints.assign(proto.int32_data().begin(), proto.int32_data().end());
    else
      t.ints.assign(proto.uint64_data().begin(), proto.uint64_data().end());
    break;
  }
  default:
    // Strings, complex numbers, the 8-bit floats and any other code: no
    // value of the language holds them.
    return fail("tensor '" + t.name + "' holds elements of ONNX type " + onnxTypeName(t.type) +
                ", which lpu-import does not read (docs/import.md, \"Dtypes\")");
  }
  size_t have = t.floats.size() + t.ints.size();
  if (int64_t(have) != n)
    return fail("tensor '" + t.name + "' holds " + llvm::Twine(have) + " values for " +
                llvm::Twine(n) + " elements");
  return t;
}

llvm::Expected<OnnxValueInfo> decodeValueInfo(const onnx::ValueInfoProto &proto) {
  OnnxValueInfo info;
  info.name = proto.name();
  if (!proto.type().has_tensor_type()) {
    info.type = kOnnxUndefined;
    return info;
  }
  const onnx::TypeProto::Tensor &tensor = proto.type().tensor_type();
  info.type = tensor.elem_type();
  info.hasShape = tensor.has_shape();
  for (const onnx::TensorShapeProto::Dimension &d : tensor.shape().dim()) {
    OnnxDim dim;
    if (d.has_dim_value())
      dim.value = d.dim_value();
    else if (d.has_dim_param())
      dim.symbol = d.dim_param();
    info.dims.push_back(dim);
  }
  // The language's limit on a tensor's elements (E0700): past it the
  // written source would not compile, so the model's value is refused here.
  constexpr uint64_t kLimit = uint64_t(tensor::kMaxShapeElements);
  uint64_t elements = 1;
  for (const OnnxDim &d : info.dims) {
    if (!d.value || *d.value < 0)
      continue; // a symbol, or refused where the shape is read, with the input's name
    const uint64_t v = uint64_t(*d.value);
    if (v != 0 && elements > kLimit / v + 1) {
      elements = kLimit + 1;
      break;
    }
    elements *= v;
  }
  if (elements > kLimit)
    return fail("value '" + info.name + "' has a shape of more than 2^48 elements, more than any tensor of the "
                "language may hold");
  return info;
}

llvm::Expected<OnnxAttribute> decodeAttribute(const onnx::AttributeProto &proto,
                                              const std::string &node) {
  OnnxAttribute a;
  switch (proto.type()) {
  case onnx::AttributeProto::FLOAT:
    a.kind = OnnxAttribute::Float;
    a.f = proto.f();
    break;
  case onnx::AttributeProto::INT:
    a.kind = OnnxAttribute::Int;
    a.i = proto.i();
    break;
  case onnx::AttributeProto::STRING:
    a.kind = OnnxAttribute::String;
    a.s = proto.s();
    break;
  case onnx::AttributeProto::TENSOR: {
    a.kind = OnnxAttribute::Tensor;
    auto t = decodeTensor(proto.t());
    if (!t)
      return t.takeError();
    a.t = std::move(*t);
    break;
  }
  case onnx::AttributeProto::FLOATS:
    a.kind = OnnxAttribute::Floats;
    a.floats.assign(proto.floats().begin(), proto.floats().end());
    break;
  case onnx::AttributeProto::INTS:
    a.kind = OnnxAttribute::Ints;
    a.ints.assign(proto.ints().begin(), proto.ints().end());
    break;
  case onnx::AttributeProto::GRAPH:
  case onnx::AttributeProto::GRAPHS:
    return fail("node '" + node + "' holds a subgraph (attribute '" + proto.name() +
                "'): control flow inside the graph is data-dependent, which a statically "
                "scheduled program cannot have");
  default:
    a.kind = OnnxAttribute::Other;
    break;
  }
  return a;
}

} // namespace

std::string onnxTypeName(int32_t type) {
  switch (type) {
  case kOnnxFloat: return "float";
  case kOnnxUInt8: return "uint8";
  case kOnnxInt8: return "int8";
  case kOnnxUInt16: return "uint16";
  case kOnnxInt16: return "int16";
  case kOnnxInt32: return "int32";
  case kOnnxInt64: return "int64";
  case kOnnxString: return "string";
  case kOnnxBool: return "bool";
  case kOnnxFloat16: return "float16";
  case kOnnxDouble: return "double";
  case kOnnxUInt32: return "uint32";
  case kOnnxUInt64: return "uint64";
  case kOnnxBFloat16: return "bfloat16";
  default: return "type " + std::to_string(type);
  }
}

bool isOnnxFloat(int32_t type) {
  return type == kOnnxFloat || type == kOnnxFloat16 || type == kOnnxBFloat16 ||
         type == kOnnxDouble;
}

int64_t OnnxTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

const OnnxAttribute *OnnxNode::attribute(const std::string &key) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? nullptr : &it->second;
}

int64_t OnnxNode::intAttr(const std::string &key, int64_t fallback) const {
  const OnnxAttribute *a = attribute(key);
  return a && a->kind == OnnxAttribute::Int ? a->i : fallback;
}

float OnnxNode::floatAttr(const std::string &key, float fallback) const {
  const OnnxAttribute *a = attribute(key);
  return a && a->kind == OnnxAttribute::Float ? a->f : fallback;
}

std::optional<std::vector<int64_t>> OnnxNode::intsAttr(const std::string &key) const {
  const OnnxAttribute *a = attribute(key);
  if (!a || a->kind != OnnxAttribute::Ints)
    return std::nullopt;
  return a->ints;
}

llvm::Expected<OnnxGraph> readOnnxModel(const std::string &path) {
  // A device (/dev/zero, a terminal) may never end: no model to read whole.
  if (support::isDevice(path))
    return fail("cannot read '" + path + "': " + support::kDeviceReason);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail("cannot read '" + path + "': " + buffer.getError().message());
  onnx::ModelProto model;
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() > size_t(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), int(bytes.size())) || model.ir_version() <= 0 ||
      !model.has_graph())
    return fail("'" + path + "' is not an ONNX model (no ModelProto with a graph in it)");

  OnnxGraph graph;
  graph.name = model.graph().name();
  graph.producer = model.producer_name();
  for (const onnx::OperatorSetIdProto &op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx")
      graph.opset = op.version();
  // Operators changed meaning after opset 17 (Pad's axes, Split's uneven
  // last chunk, Cast's saturation): a newer model is refused by name rather
  // than read as if it were 17.
  if (graph.opset > kNewestOpset)
    return fail(path + ": imports opset " + std::to_string(graph.opset) +
                " of the default ONNX domain; lpu-import reads opsets up to " + std::to_string(kNewestOpset) +
                " (export again with opset_version=" + std::to_string(kNewestOpset) + ")");

  const onnx::GraphProto &g = model.graph();
  std::map<std::string, bool> isInitializer;
  for (const onnx::TensorProto &t : g.initializer()) {
    auto decoded = decodeTensor(t);
    if (!decoded)
      return decoded.takeError();
    isInitializer[t.name()] = true;
    graph.initializers.push_back(std::move(*decoded));
  }
  for (const onnx::ValueInfoProto &v : g.input()) {
    if (isInitializer.count(v.name()))
      continue;
    auto info = decodeValueInfo(v);
    if (!info)
      return info.takeError();
    graph.inputs.push_back(std::move(*info));
  }
  for (const onnx::ValueInfoProto &v : g.output()) {
    auto info = decodeValueInfo(v);
    if (!info)
      return info.takeError();
    graph.outputs.push_back(std::move(*info));
  }
  // Every value has one writer (ONNX's SSA rule): a second node writing a
  // name, or a node writing an input or an initializer, is a malformed graph.
  std::map<std::string, std::string> writer;
  for (const onnx::TensorProto &t : g.initializer())
    writer.emplace(t.name(), "initializer '" + t.name() + "'");
  for (const onnx::ValueInfoProto &v : g.input())
    writer.emplace(v.name(), "graph input '" + v.name() + "'");
  int index = 0;
  for (const onnx::NodeProto &n : g.node()) {
    OnnxNode node;
    node.name = n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
    for (const std::string &out : n.output())
      if (!out.empty())
        if (auto [it, fresh] = writer.emplace(out, "node '" + node.name + "'"); !fresh)
          return fail(path + ": a malformed graph: node '" + node.name + "' writes '" + out +
                      "', which " + it->second + " writes already (every value has one writer)");
    node.opType = n.op_type();
    node.domain = n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    for (const onnx::AttributeProto &a : n.attribute()) {
      auto attr = decodeAttribute(a, node.name);
      if (!attr)
        return attr.takeError();
      node.attributes[a.name()] = std::move(*attr);
    }
    graph.nodes.push_back(std::move(node));
    ++index;
  }
  return graph;
}

} // namespace lpu::import
