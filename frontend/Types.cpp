#include "frontend/Types.h"

namespace lpu::check {

unsigned dtypeBytes(const std::string &dtype) {
  if (dtype == "bool" || dtype == "i8") return 1;
  if (dtype == "i16" || dtype == "f16" || dtype == "bf16") return 2;
  if (dtype == "i32" || dtype == "f32") return 4;
  return 0;
}

bool isDtypeName(llvm::StringRef name) {
  return name == "bool" || name == "i8" || name == "i16" || name == "i32" || name == "f16" ||
         name == "bf16" || name == "f32";
}

bool isFloatDtype(const std::string &d) { return d == "f16" || d == "bf16" || d == "f32"; }
bool isIntDtype(const std::string &d) { return d == "i8" || d == "i16" || d == "i32"; }

std::string TensorType::str() const {
  if (!pack && dims.empty())
    return dtype;
  std::string out = dtype + "[";
  bool first = true;
  if (pack) {
    out += ".." + *pack;
    first = false;
  }
  for (const Size &d : dims) {
    if (!first)
      out += ", ";
    out += d.str();
    first = false;
  }
  return out + "]";
}

Size TensorType::elements() const {
  Size n = Size::constant(1);
  for (const Size &d : dims)
    n = n * d;
  return n;
}

bool operator==(const TensorType &a, const TensorType &b) {
  return a.dtype == b.dtype && a.pack == b.pack && a.dims == b.dims;
}

std::string PackBinding::str() const {
  std::string out;
  if (pack)
    out = ".." + *pack;
  for (const Size &d : dims)
    out += (out.empty() ? "" : ", ") + d.str();
  return "[" + out + "]";
}

std::string Value::describe() const {
  switch (kind) {
  case Kind::Error: return "<error>";
  case Kind::Tensor: return tensor.str();
  case Kind::Int: return "the compile-time integer " + size.str();
  case Kind::Float: return "a compile-time float";
  case Kind::Bool: return "a compile-time bool";
  case Kind::String: return "a string";
  case Kind::List: return "a list";
  case Kind::Model: return "the model " + (model ? model->name : std::string("?"));
  case Kind::ModelArray:
    return "an array of " + size.str() + " " + (model ? model->name : std::string("?"));
  case Kind::Function: return "the function '" + (fn ? fn->name.name : std::string("?")) + "'";
  case Kind::Module: return "a module";
  case Kind::Dtype: return "the dtype " + text;
  case Kind::Builtin: return "the built-in '" + text + "'";
  case Kind::Type: return "the model type '" + (modelDecl ? modelDecl->name.name : "?") + "'";
  }
  return "?";
}

bool adoptsType(const Value &v, const TensorType &t) {
  if (!t.dims.empty())
    return false;
  return v.isNumber() || (v.kind == Value::Kind::Bool && t.dtype == "bool");
}

namespace {
bool hasOpaqueAtom(const Size &s) {
  for (const auto &[k, t] : s.terms())
    for (const sizes::AtomPtr &a : t.atoms)
      if (a->kind != sizes::AtomKind::Name)
        return true;
  return false;
}
} // namespace

Decision sizesEqual(const Size &a, const Size &b) {
  if (a == b)
    return Decision::Yes;
  Size d = a - b;
  if (d.isConstant())
    return Decision::No;
  return hasOpaqueAtom(d) ? Decision::Unknown : Decision::No;
}

bool mayEqual(const TensorType &a, const TensorType &b) {
  if (a.dtype != b.dtype || a.pack != b.pack || a.dims.size() != b.dims.size())
    return false;
  for (size_t i = 0; i < a.dims.size(); ++i)
    if (sizesEqual(a.dims[i], b.dims[i]) == Decision::No)
      return false;
  return true;
}

std::string sourceText(llvm::SMRange r) {
  if (!r.isValid())
    return "";
  return std::string(r.Start.getPointer(), r.End.getPointer());
}

} // namespace lpu::check
