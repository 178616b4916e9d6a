// An ONNX model as plain data: the one place that sees the protobuf
// definitions (libonnx-dev), so the importer works on values it owns and a
// test can build a graph without protobuf.
#pragma once

#include <llvm/Support/Error.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lpu::import {

/// ONNX TensorProto.DataType values the importer names.
enum OnnxElemType : int32_t {
  kOnnxUndefined = 0,
  kOnnxFloat = 1,
  kOnnxUInt8 = 2,
  kOnnxInt8 = 3,
  kOnnxUInt16 = 4,
  kOnnxInt16 = 5,
  kOnnxInt32 = 6,
  kOnnxInt64 = 7,
  kOnnxString = 8,
  kOnnxBool = 9,
  kOnnxFloat16 = 10,
  kOnnxDouble = 11,
  kOnnxUInt32 = 12,
  kOnnxUInt64 = 13,
  kOnnxBFloat16 = 16,
};

/// "float", "int64", ... as ONNX spells them, for messages.
std::string onnxTypeName(int32_t type);
bool isOnnxFloat(int32_t type);

/// A tensor's data: floating types as floats, integer and bool types as
/// int64 (an int64 beyond the float range stays exact).
struct OnnxTensor {
  std::string name;
  int32_t type = kOnnxUndefined;
  std::vector<int64_t> dims;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  int64_t numElements() const;
};

/// A dimension of a graph input or output: a number, a symbol (dim_param)
/// or neither (unknown).
struct OnnxDim {
  std::optional<int64_t> value;
  std::string symbol;
};

struct OnnxValueInfo {
  std::string name;
  int32_t type = kOnnxUndefined;
  bool hasShape = false;
  std::vector<OnnxDim> dims;
};

struct OnnxAttribute {
  enum Kind { Float, Int, String, Tensor, Floats, Ints, Other } kind = Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::optional<OnnxTensor> t;
};

struct OnnxNode {
  std::string name, opType, domain;
  std::vector<std::string> inputs; // "" for an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, OnnxAttribute> attributes;

  const OnnxAttribute *attribute(const std::string &key) const;
  int64_t intAttr(const std::string &key, int64_t fallback) const;
  float floatAttr(const std::string &key, float fallback) const;
  std::optional<std::vector<int64_t>> intsAttr(const std::string &key) const;
};

struct OnnxGraph {
  std::string name, producer;
  int64_t opset = 0; // of the default domain
  std::vector<OnnxNode> nodes;
  std::vector<OnnxTensor> initializers;
  std::vector<OnnxValueInfo> inputs; // without those an initializer feeds
  std::vector<OnnxValueInfo> outputs;
};

/// Reads and decodes an ONNX model file. A file that is not an ONNX model
/// (not a ModelProto, or one without a graph), a model with a subgraph
/// (If, Loop, Scan) or with external data is an error naming the file.
llvm::Expected<OnnxGraph> readOnnxModel(const std::string &path);

} // namespace lpu::import
