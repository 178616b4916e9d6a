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
  case Kind::List: {
    if (!tuple)
      return "a list";
    std::string s = "a tuple (";
    for (size_t i = 0; i < elements.size(); ++i) {
      const Value &e = elements[i];
      s += (i ? ", " : "") + (e.isTensor() ? e.tensor.str() : e.describe());
    }
    return s + ")";
  }
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

std::string Value::describeNotStatic(const std::string &wanted) const {
  if (kind != Kind::Tensor)
    return describe() + ", not " + wanted;
  if (sources.empty()) {
    std::string t = tensor.str();
    return (t[0] == 'i' ? "an " : "a ") + t + " tensor, computed at run time";
  }
  return "computed at run time from " + describeSources(sources);
}

RuntimeSource RuntimeSource::input(const std::string &name, const std::string &fn,
                                   llvm::SMRange decl) {
  return {Kind::Input, name, decl,
          "'" + name + "' is a parameter of '" + fn +
              "': its values are known only when the program runs"};
}

RuntimeSource RuntimeSource::weight(const std::string &name, const std::string &model,
                                    llvm::SMRange decl) {
  return {Kind::Weight, name, decl,
          "'" + name + "' is a param of '" + model +
              "': a weight, known only when the program runs"};
}

RuntimeSource RuntimeSource::state(const std::string &name, const std::string &model,
                                   llvm::SMRange decl) {
  return {Kind::State, name, decl,
          "'" + name + "' is a state of '" + model +
              "': kept between calls, known only when the program runs"};
}

void mergeSources(std::vector<RuntimeSource> &into, const std::vector<RuntimeSource> &from) {
  for (const RuntimeSource &s : from) {
    bool known = false;
    for (const RuntimeSource &t : into)
      known |= t.kind == s.kind && t.name == s.name &&
               t.decl.Start.getPointer() == s.decl.Start.getPointer();
    if (!known)
      into.push_back(s);
  }
}

std::string describeSources(const std::vector<RuntimeSource> &sources) {
  constexpr size_t shown = 3;
  size_t more = sources.size() > shown ? sources.size() - shown : 0;
  std::vector<std::string> groups;
  for (auto kind :
       {RuntimeSource::Kind::Input, RuntimeSource::Kind::Weight, RuntimeSource::Kind::State}) {
    std::vector<std::string> names;
    for (size_t i = 0; i < sources.size() && i < shown; ++i)
      if (sources[i].kind == kind)
        names.push_back("'" + sources[i].name + "'");
    if (names.empty())
      continue;
    std::string g = kind == RuntimeSource::Kind::Input    ? "input"
                    : kind == RuntimeSource::Kind::Weight ? "param"
                                                          : "state";
    g += names.size() > 1 ? "s " : " ";
    groups.push_back(std::move(g));
    // `'x', 'y' and 'z'` alone; `'x', 'y'` beside params or a count.
    bool alone = names.size() == sources.size();
    for (size_t i = 0; i < names.size(); ++i)
      groups.back() += (i == 0 ? "" : alone && i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  std::string out;
  for (size_t i = 0; i < groups.size(); ++i)
    out += (i == 0 ? "" : i + 1 == groups.size() && !more ? " and " : ", ") + groups[i];
  if (more)
    out += " and " + std::to_string(more) + " more";
  return out;
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

std::string ResultType::str() const {
  if (!tuple)
    return types.empty() ? std::string("?") : types[0].str();
  std::string s = "(";
  for (size_t i = 0; i < types.size(); ++i)
    s += (i ? ", " : "") + (names[i].empty() ? "" : names[i] + ": ") + types[i].str();
  return s + ")";
}

Value ResultType::value() const {
  if (!tuple)
    return types.empty() ? Value::error() : Value::ofTensor(types[0]);
  Value v;
  v.kind = Value::Kind::List;
  v.tuple = true;
  for (const TensorType &t : types)
    v.elements.push_back(Value::ofTensor(t));
  return v;
}

} // namespace lpu::check
