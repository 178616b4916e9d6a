#include "ir/IR.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <unordered_map>

namespace lpu::ir {

namespace {

struct OpInfo {
  const char *mnemonic;
  OpClass cls;
  int operands;
};

constexpr OpInfo kOpInfo[] = {
#define LPU_OP(Enum, Mnemonic, Class, Operands) {Mnemonic, OpClass::Class, Operands},
#include "ir/Ops.def"
};

const OpInfo &info(OpKind kind) { return kOpInfo[static_cast<size_t>(kind)]; }

} // namespace

llvm::StringRef mnemonic(OpKind kind) { return info(kind).mnemonic; }

std::optional<OpKind> parseMnemonic(llvm::StringRef text) {
  for (size_t i = 0; i < std::size(kOpInfo); ++i)
    if (text == kOpInfo[i].mnemonic)
      return static_cast<OpKind>(i);
  return std::nullopt;
}

OpClass opClass(OpKind kind) { return info(kind).cls; }
int operandCount(OpKind kind) { return info(kind).operands; }

bool isElementwise(OpKind kind) {
  OpClass c = opClass(kind);
  return c == OpClass::Unary || c == OpClass::Binary || c == OpClass::Ternary;
}

// ---- Type -------------------------------------------------------------------

int64_t Type::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

uint64_t Type::byteSize() const { return uint64_t(numElements()) * tensor::dtypeSize(dtype); }

std::string Type::str() const {
  std::string out = tensor::dtypeName(dtype).str();
  out += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      out += ", ";
    out += std::to_string(shape[i]);
  }
  out += ']';
  return out;
}

// ---- Op attributes ------------------------------------------------------------

const Attr *Op::attr(llvm::StringRef name) const {
  auto it = llvm::partition_point(attrs_, [&](const auto &a) { return a.first < name; });
  if (it != attrs_.end() && it->first == name)
    return &it->second;
  return nullptr;
}

void Op::setAttr(llvm::StringRef name, Attr value) {
  auto it = llvm::partition_point(attrs_, [&](const auto &a) { return a.first < name; });
  if (it != attrs_.end() && it->first == name)
    it->second = std::move(value);
  else
    attrs_.insert(it, {name.str(), std::move(value)});
}

void Op::removeAttr(llvm::StringRef name) {
  auto it = llvm::partition_point(attrs_, [&](const auto &a) { return a.first < name; });
  if (it != attrs_.end() && it->first == name)
    attrs_.erase(it);
}

namespace {

const Attr *findAttr(const std::vector<std::pair<std::string, Attr>> &attrs,
                     llvm::StringRef name) {
  for (const auto &[key, value] : attrs)
    if (key == name)
      return &value;
  return nullptr;
}

template <typename T> std::optional<T> getAs(const Attr *a) {
  if (a)
    if (const T *v = std::get_if<T>(a))
      return *v;
  return std::nullopt;
}

// An empty list prints as `[]` whichever kind it is, so either kind of empty
// list reads as the other.
std::optional<std::vector<int64_t>> getInts(const Attr *a) {
  if (auto v = getAs<std::vector<int64_t>>(a))
    return v;
  if (auto v = getAs<std::vector<std::string>>(a); v && v->empty())
    return std::vector<int64_t>{};
  return std::nullopt;
}

std::optional<std::vector<std::string>> getStrings(const Attr *a) {
  if (auto v = getAs<std::vector<std::string>>(a))
    return v;
  if (auto v = getAs<std::vector<int64_t>>(a); v && v->empty())
    return std::vector<std::string>{};
  return std::nullopt;
}

} // namespace

int64_t Op::chip() const {
  if (kind_ == OpKind::Transfer)
    return intAttr("to").value_or(0);
  return intAttr("chip").value_or(0);
}

std::optional<Shard> shardOf(const Op &op) {
  std::optional<std::vector<int64_t>> v = op.intsAttr("shard");
  if (!v || v->size() != 3 || (*v)[0] < 0 || uint64_t((*v)[0]) >= op.type().rank())
    return std::nullopt;
  return Shard{(*v)[0], (*v)[1], (*v)[2]};
}

void setShard(Op &op, const Shard &shard) {
  op.setAttr("shard", std::vector<int64_t>{shard.axis, shard.start, shard.full});
}

std::vector<std::optional<Shard>> outputShards(const Op &ret) {
  std::vector<std::optional<Shard>> out(ret.operands().size());
  std::vector<int64_t> v = ret.intsAttr("shards").value_or(std::vector<int64_t>{});
  for (size_t i = 0; i < out.size() && 3 * i + 2 < v.size(); ++i)
    if (v[3 * i] >= 0 && uint64_t(v[3 * i]) < ret.operand(i)->type().rank())
      out[i] = Shard{v[3 * i], v[3 * i + 1], v[3 * i + 2]};
  return out;
}

SourceBucketDims sourceBucketDims(const Function &fn) {
  SourceBucketDims out;
  for (const Op *in : fn.inputs())
    if (auto dims = in->stringsAttr("bucket_dims"))
      out.inputs.emplace(in->stringAttr("name").value_or(""), std::move(*dims));
  if (const Op *ret = fn.terminator())
    for (const std::string &field : ret->stringsAttr("bucket_dims").value_or(std::vector<std::string>{})) {
      const llvm::StringRef text(field);
      const size_t eq = text.rfind('=');
      if (eq == llvm::StringRef::npos)
        continue;
      std::vector<std::string> dims;
      llvm::SmallVector<llvm::StringRef, 4> parts;
      text.drop_front(eq + 1).split(parts, ',');
      for (llvm::StringRef part : parts)
        dims.push_back(part.str());
      out.outputs.emplace(text.take_front(eq).str(), std::move(dims));
    }
  return out;
}

bool updatesInPlace(const Op &op, size_t readers, unsigned lanes, unsigned sliceVectors) {
  if (op.kind() != OpKind::Update || op.operands().size() != 3 || readers != 1 || lanes == 0)
    return false;
  const Op *x = op.operand(0);
  if (x->kind() != OpKind::Input || !x->boolAttr("state").value_or(false) ||
      op.operand(1)->kind() == OpKind::Constant)
    return false;
  const Type &t = x->type();
  const int64_t rank = int64_t(t.rank());
  int64_t k = op.intAttr("axis").value_or(0);
  k = k < 0 ? k + rank : k;
  if (rank < 2 || k < 0 || k >= rank)
    return false;
  const int64_t dim = t.shape[size_t(k)], n = op.operand(2)->type().shape[size_t(k)];
  if (n <= 0 || n >= dim)
    return false;
  if (k == rank - 1) {
    // A column of the lanes' axis (a cache stored transposed): each row's
    // one new element goes to a lane of one of its own vectors.
    const int64_t vpr = (dim + lanes - 1) / lanes;
    return n == 1 && vpr <= int64_t(sliceVectors) && vpr - 1 <= 0xffff;
  }
  int64_t inner = 1;
  for (int64_t d = k + 1; d + 1 < rank; ++d)
    inner *= t.shape[size_t(d)];
  const int64_t vpr = (t.shape.back() + lanes - 1) / lanes;
  return vpr > 0 && dim * inner * vpr <= int64_t(sliceVectors) && (dim - n) * inner * vpr <= 0xffff;
}

Type fullType(const Op &op) {
  Type type = op.type();
  if (std::optional<Shard> shard = shardOf(op))
    type.shape[size_t(shard->axis)] = shard->full;
  return type;
}

std::string paramPath(const Op &op) {
  if (op.kind() != OpKind::Param)
    return "";
  return op.stringAttr("path").value_or("");
}

bool readsParam(const Op *value, llvm::StringRef path) {
  llvm::SmallPtrSet<const Op *, 16> seen;
  llvm::SmallVector<const Op *, 16> work{value};
  while (!work.empty()) {
    const Op *op = work.pop_back_val();
    if (!op || !seen.insert(op).second)
      continue;
    if (op->kind() == OpKind::Param && op->stringAttr("path") == path)
      return true;
    work.append(op->operands().begin(), op->operands().end());
  }
  return false;
}

std::optional<int64_t> Op::intAttr(llvm::StringRef name) const {
  return getAs<int64_t>(attr(name));
}

std::optional<double> Op::floatAttr(llvm::StringRef name) const {
  const Attr *a = attr(name);
  if (auto v = getAs<double>(a))
    return v;
  if (auto v = getAs<int64_t>(a))
    return double(*v);
  return std::nullopt;
}

std::optional<bool> Op::boolAttr(llvm::StringRef name) const { return getAs<bool>(attr(name)); }

std::optional<std::string> Op::stringAttr(llvm::StringRef name) const {
  return getAs<std::string>(attr(name));
}

std::optional<std::vector<int64_t>> Op::intsAttr(llvm::StringRef name) const {
  return getInts(attr(name));
}

std::optional<std::vector<std::string>> Op::stringsAttr(llvm::StringRef name) const {
  return getStrings(attr(name));
}

// ---- Function -----------------------------------------------------------------

Op *Function::append(OpKind kind, Type type, std::vector<Op *> operands, Location loc) {
  std::unique_ptr<Op> op(new Op(kind, std::move(type), std::move(operands), std::move(loc)));
  op->parent_ = this;
  ops_.push_back(std::move(op));
  return ops_.back().get();
}

Op *Function::insertBefore(const Op *before, OpKind kind, Type type, std::vector<Op *> operands,
                           Location loc) {
  auto it = llvm::find_if(ops_, [&](const auto &op) { return op.get() == before; });
  std::unique_ptr<Op> op(new Op(kind, std::move(type), std::move(operands), std::move(loc)));
  op->parent_ = this;
  return ops_.insert(it, std::move(op))->get();
}

void Function::sortTopologically() {
  const size_t n = ops_.size();
  std::unordered_map<const Op *, size_t> index;
  for (size_t i = 0; i < n; ++i)
    index[ops_[i].get()] = i;
  // Depth first from each op in order, its operands emitted before it (a
  // stack rather than recursion: chains are as long as the function).
  std::vector<std::unique_ptr<Op>> sorted;
  sorted.reserve(n);
  std::vector<char> seen(n, 0);
  std::vector<std::pair<size_t, size_t>> stack; // op, next operand
  for (size_t i = 0; i < n; ++i) {
    if (seen[i])
      continue;
    seen[i] = 1;
    stack.push_back({i, 0});
    while (!stack.empty()) {
      const size_t k = stack.back().first;
      const Op &op = *ops_[k];
      if (stack.back().second < op.operands_.size()) {
        auto it = index.find(op.operands_[stack.back().second++]);
        if (it != index.end() && !seen[it->second]) {
          seen[it->second] = 1;
          stack.push_back({it->second, 0});
        }
        continue;
      }
      sorted.push_back(std::move(ops_[k]));
      stack.pop_back();
    }
  }
  ops_ = std::move(sorted);
}

void Function::replaceAllUsesWith(Op *from, Op *to) {
  // `to` itself keeps reading `from` (the usual case: `to` was built from
  // `from` and now takes its place); anything else would make `to` use itself.
  for (auto &op : ops_) {
    if (op.get() == to)
      continue;
    for (Op *&operand : op->operands_)
      if (operand == from)
        operand = to;
  }
}

void Function::eraseIf(const std::function<bool(const Op &)> &dead) {
  llvm::erase_if(ops_, [&](const std::unique_ptr<Op> &op) { return dead(*op); });
}

size_t Function::useCount(const Op *op) const {
  size_t n = 0;
  for (const auto &user : ops_)
    n += llvm::count(user->operands_, op);
  return n;
}

std::vector<Op *> Function::inputs() const {
  std::vector<Op *> out;
  for (const auto &op : ops_)
    if (op->kind() == OpKind::Input)
      out.push_back(op.get());
  return out;
}

std::vector<Op *> Function::params() const {
  std::vector<Op *> out;
  for (const auto &op : ops_)
    if (op->kind() == OpKind::Param)
      out.push_back(op.get());
  return out;
}

Op *Function::terminator() const {
  if (!ops_.empty() && ops_.back()->kind() == OpKind::Return)
    return ops_.back().get();
  return nullptr;
}

Function *Module::lookup(llvm::StringRef name,
                         llvm::ArrayRef<std::pair<std::string, int64_t>> bucket) const {
  for (const auto &fn : functions)
    if (fn->name() == name && llvm::ArrayRef(fn->bucket()) == bucket)
      return fn.get();
  return nullptr;
}

// ---- type inference -------------------------------------------------------------

namespace {

using Attrs = std::vector<std::pair<std::string, Attr>>;
using Result = std::variant<Type, std::string>;

std::string shapeStr(llvm::ArrayRef<int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string listStr(llvm::ArrayRef<int64_t> v) { return shapeStr(v); }

bool isNumeric(DType t) { return tensor::isFloat(t) || tensor::isInteger(t); }

/// Typed attribute lookups that say what is wrong.
struct AttrReader {
  llvm::StringRef op;
  const Attrs &attrs;
  std::string error;

  std::optional<int64_t> integer(llvm::StringRef name) {
    const Attr *a = findAttr(attrs, name);
    if (!a) {
      fail("missing attribute '" + name.str() + "'");
      return std::nullopt;
    }
    if (auto v = getAs<int64_t>(a))
      return v;
    fail("attribute '" + name.str() + "' must be an integer");
    return std::nullopt;
  }
  std::optional<std::vector<int64_t>> ints(llvm::StringRef name, std::optional<size_t> size = {}) {
    const Attr *a = findAttr(attrs, name);
    if (!a) {
      fail("missing attribute '" + name.str() + "'");
      return std::nullopt;
    }
    auto v = getInts(a);
    if (!v) {
      fail("attribute '" + name.str() + "' must be an integer list");
      return std::nullopt;
    }
    if (size && v->size() != *size) {
      fail("attribute '" + name.str() + "' must have " + std::to_string(*size) +
           " elements, not " + std::to_string(v->size()));
      return std::nullopt;
    }
    return v;
  }
  /// A bool attribute that defaults to `dflt` when absent.
  std::optional<bool> flag(llvm::StringRef name, bool dflt) {
    const Attr *a = findAttr(attrs, name);
    if (!a)
      return dflt;
    if (auto v = getAs<bool>(a))
      return v;
    fail("attribute '" + name.str() + "' must be true or false");
    return std::nullopt;
  }
  std::optional<int64_t> axis(llvm::StringRef name, size_t rank) {
    auto v = integer(name);
    if (!v)
      return std::nullopt;
    if (*v < 0 || *v >= int64_t(rank)) {
      fail(name.str() + " " + std::to_string(*v) + " is out of range for rank " +
           std::to_string(rank));
      return std::nullopt;
    }
    return v;
  }
  void fail(std::string message) {
    if (error.empty())
      error = op.str() + ": " + std::move(message);
  }
};

Result elementwise(OpKind kind, llvm::ArrayRef<Type> in, const Type *declared) {
  llvm::StringRef name = mnemonic(kind);
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].shape != in[0].shape)
      return name.str() + ": operand shapes differ: " + shapeStr(in[0].shape) + " and " +
             shapeStr(in[i].shape);
  auto dtypeError = [&](const Type &t, llvm::StringRef wanted) -> Result {
    return name.str() + ": operand type " + t.str() + " is not " + wanted.str();
  };
  auto sameDType = [&](size_t a, size_t b) -> std::optional<std::string> {
    if (in[a].dtype != in[b].dtype)
      return name.str() + ": operand dtypes differ: " + tensor::dtypeName(in[a].dtype).str() +
             " and " + tensor::dtypeName(in[b].dtype).str();
    return std::nullopt;
  };
  if (std::optional<tensor::ElementwiseOp> e = elementwiseArithmetic(kind)) {
    using R = tensor::ElementwiseRule;
    const tensor::ElementwiseInfo &info = tensor::elementwiseInfo(*e);
    if (info.rule == R::Logical) {
      for (const Type &t : in)
        if (t.dtype != DType::Bool)
          return dtypeError(t, "bool");
      return in[0];
    }
    if (in.size() == 2)
      if (auto err = sameDType(0, 1))
        return *err;
    if (info.rule == R::Float && !tensor::isFloat(in[0].dtype))
      return dtypeError(in[0], "a float");
    if ((info.rule == R::Number || info.rule == R::Ordering) && !isNumeric(in[0].dtype))
      return dtypeError(in[0], "a number");
    if (info.rule == R::Equality || info.rule == R::Ordering)
      return Type{DType::Bool, in[0].shape};
    return in[0];
  }
  switch (kind) {
  case OpKind::Convert:
    if (!declared)
      return name.str() + ": needs a declared result type";
    if (declared->shape != in[0].shape)
      return name.str() + ": result shape " + shapeStr(declared->shape) +
             " differs from operand shape " + shapeStr(in[0].shape);
    return *declared;
  case OpKind::Select:
    if (in[0].dtype != DType::Bool)
      return name.str() + ": condition type " + in[0].str() + " is not bool";
    if (auto e = sameDType(1, 2))
      return *e;
    return in[1];
  default:
    return name.str() + ": not an elementwise op";
  }
}

/// `axes`: in range, sorted, unique (the normal form lowering produces).
Result reduce(OpKind kind, const Type &in, const Attrs &attrs) {
  llvm::StringRef name = mnemonic(kind);
  AttrReader r{name, attrs, {}};
  size_t rank = in.rank();
  if (kind == OpKind::Softmax) {
    if (!tensor::isFloat(in.dtype))
      return name.str() + ": operand type " + in.str() + " is not a float";
    if (!r.axis("axis", rank))
      return r.error;
    return in;
  }
  if (!isNumeric(in.dtype))
    return name.str() + ": operand type " + in.str() + " is not a number";
  if (kind == OpKind::ReduceMean && !tensor::isFloat(in.dtype))
    return name.str() + ": operand type " + in.str() + " is not a float";
  auto keep = r.flag("keep", false);
  if (!keep)
    return r.error;
  std::vector<int64_t> axes;
  if (kind == OpKind::Argmax) {
    auto axis = r.axis("axis", rank);
    if (!axis)
      return r.error;
    axes = {*axis};
  } else {
    auto list = r.ints("axes");
    if (!list)
      return r.error;
    axes = *list;
    for (size_t i = 0; i < axes.size(); ++i) {
      if (axes[i] < 0 || axes[i] >= int64_t(rank))
        return name.str() + ": axis " + std::to_string(axes[i]) + " is out of range for rank " +
               std::to_string(rank);
      if (i && axes[i] <= axes[i - 1])
        return name.str() + ": axes " + listStr(axes) + " are not sorted and unique";
    }
  }
  Type out{kind == OpKind::Argmax ? DType::I32 : in.dtype, {}};
  for (size_t d = 0; d < rank; ++d) {
    if (llvm::is_contained(axes, int64_t(d))) {
      if (*keep)
        out.shape.push_back(1);
    } else {
      out.shape.push_back(in.shape[d]);
    }
  }
  return out;
}

Result matmul(const Type &a, const Type &b) {
  if (a.rank() < 2 || b.rank() < 2)
    return "matmul: operands must have rank >= 2, not " + std::to_string(a.rank()) + " and " +
           std::to_string(b.rank());
  if (a.dtype != b.dtype)
    return "matmul: operand dtypes differ: " + tensor::dtypeName(a.dtype).str() + " and " +
           tensor::dtypeName(b.dtype).str();
  if (!isNumeric(a.dtype))
    return "matmul: operand type " + a.str() + " is not a number";
  if (a.rank() != b.rank())
    return "matmul: operand ranks differ: " + std::to_string(a.rank()) + " and " +
           std::to_string(b.rank());
  size_t n = a.rank();
  for (size_t i = 0; i + 2 < n; ++i)
    if (a.shape[i] != b.shape[i])
      return "matmul: batch dimensions differ: " + shapeStr(a.shape) + " and " +
             shapeStr(b.shape);
  if (a.shape[n - 1] != b.shape[n - 2])
    return "matmul: contracting dimensions differ: " + std::to_string(a.shape[n - 1]) + " and " +
           std::to_string(b.shape[n - 2]);
  Type out = a;
  out.shape[n - 1] = b.shape[n - 1];
  // i8 x i8 accumulates in i32 (the MXM's int8 mode) and keeps it.
  if (a.dtype == DType::I8)
    out.dtype = DType::I32;
  return out;
}

/// floor((size + 2 pad - dilation (k - 1) - 1) / stride) + 1, or an error.
std::variant<int64_t, std::string> windowOut(llvm::StringRef name, int64_t size, int64_t k,
                                             int64_t stride, int64_t pad, int64_t dilation) {
  int64_t span = dilation * (k - 1) + 1;
  if (size + 2 * pad < span)
    return name.str() + ": window " + std::to_string(span) + " is larger than the padded input " +
           std::to_string(size + 2 * pad);
  return (size + 2 * pad - span) / stride + 1;
}

Result window(OpKind kind, llvm::ArrayRef<Type> in, const Attrs &attrs) {
  llvm::StringRef name = mnemonic(kind);
  AttrReader r{name, attrs, {}};
  const Type &x = in[0];
  if (x.rank() != 4)
    return name.str() + ": input must be NCHW (rank 4), not " + x.str();
  if (!tensor::isFloat(x.dtype) && !(kind == OpKind::MaxPool2d && tensor::isInteger(x.dtype)) &&
      !(kind == OpKind::Conv2d && x.dtype == DType::I8))
    return name.str() + ": operand type " + x.str() + " is not a float" +
           (kind == OpKind::Conv2d ? " or i8" : "");
  bool conv = kind == OpKind::Conv2d;
  auto stride = r.ints("stride", 2);
  auto padding = r.ints("padding", 2);
  std::optional<std::vector<int64_t>> dilation, kernel;
  std::optional<int64_t> groups;
  if (conv) {
    dilation = r.ints("dilation", 2);
    groups = r.integer("groups");
  } else {
    kernel = r.ints("kernel", 2);
  }
  if (!r.error.empty())
    return r.error;
  // Far beyond any real window, and small enough that the size arithmetic
  // below cannot overflow.
  constexpr int64_t kLimit = int64_t(1) << 40;
  for (const auto *list : {&stride, &padding, &dilation, &kernel})
    if (*list)
      for (int64_t v : **list)
        if (v > kLimit)
          return name.str() + ": window attribute value " + std::to_string(v) + " is too large";
  for (int i = 0; i < 2; ++i) {
    if ((*stride)[i] < 1)
      return name.str() + ": stride " + listStr(*stride) + " must be positive";
    if ((*padding)[i] < 0)
      return name.str() + ": padding " + listStr(*padding) + " must not be negative";
    if (conv && (*dilation)[i] < 1)
      return name.str() + ": dilation " + listStr(*dilation) + " must be positive";
    if (!conv && (*kernel)[i] < 1)
      return name.str() + ": kernel " + listStr(*kernel) + " must be positive";
    if (!conv && 2 * (*padding)[i] > (*kernel)[i])
      return name.str() + ": padding " + listStr(*padding) + " exceeds half the kernel " +
             listStr(*kernel);
  }
  Type out = x;
  std::vector<int64_t> k(2), d = conv ? *dilation : std::vector<int64_t>{1, 1};
  if (conv) {
    const Type &w = in[1];
    if (w.rank() != 4)
      return name.str() + ": weight must be OIHW (rank 4), not " + w.str();
    if (w.dtype != x.dtype)
      return name.str() + ": operand dtypes differ: " + tensor::dtypeName(x.dtype).str() +
             " and " + tensor::dtypeName(w.dtype).str();
    int64_t g = *groups;
    if (g < 1)
      return name.str() + ": groups " + std::to_string(g) + " must be positive";
    if (x.shape[1] % g || w.shape[0] % g)
      return name.str() + ": groups " + std::to_string(g) + " does not divide the " +
             std::to_string(x.shape[1]) + " input and " + std::to_string(w.shape[0]) +
             " output channels";
    if (w.shape[1] * g != x.shape[1])
      return name.str() + ": weight has " + std::to_string(w.shape[1]) +
             " input channels per group, the input " + std::to_string(x.shape[1] / g);
    out.shape[1] = w.shape[0];
    // i8 x i8 sums in i32, as a matmul's.
    if (x.dtype == DType::I8)
      out.dtype = DType::I32;
    k = {w.shape[2], w.shape[3]};
  } else {
    k = *kernel;
  }
  for (int i = 0; i < 2; ++i) {
    auto size = windowOut(name, x.shape[2 + i], k[i], (*stride)[i], (*padding)[i], d[i]);
    if (auto *e = std::get_if<std::string>(&size))
      return *e;
    out.shape[2 + i] = std::get<int64_t>(size);
  }
  return out;
}

Result layout(OpKind kind, llvm::ArrayRef<Type> in, const Attrs &attrs, const Type *declared) {
  llvm::StringRef name = mnemonic(kind);
  AttrReader r{name, attrs, {}};
  if (in.empty())
    return name.str() + ": needs at least one operand";
  const Type &x = in[0];
  switch (kind) {
  case OpKind::Reshape:
    if (!declared)
      return name.str() + ": needs a declared result type";
    if (declared->dtype != x.dtype)
      return name.str() + ": result dtype " + tensor::dtypeName(declared->dtype).str() +
             " differs from operand dtype " + tensor::dtypeName(x.dtype).str();
    if (declared->numElements() != x.numElements())
      return name.str() + ": element counts differ: " + x.str() + " has " +
             std::to_string(x.numElements()) + ", " + declared->str() + " has " +
             std::to_string(declared->numElements());
    return *declared;
  case OpKind::Broadcast: {
    if (!declared)
      return name.str() + ": needs a declared result type";
    if (declared->dtype != x.dtype)
      return name.str() + ": result dtype " + tensor::dtypeName(declared->dtype).str() +
             " differs from operand dtype " + tensor::dtypeName(x.dtype).str();
    if (declared->rank() < x.rank())
      return name.str() + ": cannot broadcast " + shapeStr(x.shape) + " to the lower rank " +
             shapeStr(declared->shape);
    size_t offset = declared->rank() - x.rank();
    for (size_t i = 0; i < x.rank(); ++i)
      if (x.shape[i] != declared->shape[offset + i] && x.shape[i] != 1)
        return name.str() + ": cannot broadcast " + shapeStr(x.shape) + " to " +
               shapeStr(declared->shape);
    return *declared;
  }
  case OpKind::Transpose: {
    auto perm = r.ints("perm", x.rank());
    if (!perm)
      return r.error;
    std::vector<bool> seen(x.rank());
    Type out{x.dtype, {}};
    for (int64_t p : *perm) {
      if (p < 0 || p >= int64_t(x.rank()) || seen[p])
        return name.str() + ": perm " + listStr(*perm) + " is not a permutation of rank " +
               std::to_string(x.rank());
      seen[p] = true;
      out.shape.push_back(x.shape[p]);
    }
    return out;
  }
  case OpKind::Slice: {
    if (findAttr(attrs, "step"))
      return name.str() + ": 'step' is not supported";
    auto start = r.ints("start", x.rank());
    auto limit = r.ints("limit", x.rank());
    if (!start || !limit)
      return r.error;
    Type out{x.dtype, {}};
    for (size_t i = 0; i < x.rank(); ++i) {
      int64_t s = (*start)[i], l = (*limit)[i];
      if (s < 0 || s > l || l > x.shape[i])
        return name.str() + ": [" + std::to_string(s) + ", " + std::to_string(l) +
               ") is not a range within dimension " + std::to_string(i) + " of size " +
               std::to_string(x.shape[i]);
      out.shape.push_back(l - s);
    }
    return out;
  }
  case OpKind::Concat: {
    auto axis = r.axis("axis", x.rank());
    if (!axis)
      return r.error;
    Type out = x;
    for (size_t i = 1; i < in.size(); ++i) {
      const Type &t = in[i];
      if (t.dtype != x.dtype)
        return name.str() + ": operand dtypes differ: " + tensor::dtypeName(x.dtype).str() +
               " and " + tensor::dtypeName(t.dtype).str();
      if (t.rank() != x.rank())
        return name.str() + ": operand ranks differ: " + std::to_string(x.rank()) + " and " +
               std::to_string(t.rank());
      for (size_t d = 0; d < x.rank(); ++d)
        if (int64_t(d) != *axis && t.shape[d] != x.shape[d])
          return name.str() + ": operand shapes " + shapeStr(x.shape) + " and " +
                 shapeStr(t.shape) + " differ outside axis " + std::to_string(*axis);
      out.shape[*axis] += t.shape[*axis];
    }
    return out;
  }
  case OpKind::Transfer: {
    auto from = r.integer("from"), to = r.integer("to");
    if (!from || !to)
      return r.error;
    if (*from < 0 || *to < 0)
      return name.str() + ": chips are numbered from 0, not " + std::to_string(std::min(*from, *to));
    if (*from >= kMaxChips || *to >= kMaxChips)
      return name.str() + ": chip " + std::to_string(std::max(*from, *to)) + " is past the " +
             std::to_string(kMaxChips) + " chips a program may use";
    if (*from == *to)
      return name.str() + ": from and to are both chip " + std::to_string(*from);
    return x;
  }
  case OpKind::Gather: {
    const Type &ids = in[1];
    if (ids.dtype != DType::I32)
      return name.str() + ": index type " + ids.str() + " is not i32";
    auto axis = r.axis("axis", x.rank());
    if (!axis)
      return r.error;
    Type out{x.dtype, {}};
    out.shape.assign(x.shape.begin(), x.shape.begin() + *axis);
    out.shape.insert(out.shape.end(), ids.shape.begin(), ids.shape.end());
    out.shape.insert(out.shape.end(), x.shape.begin() + *axis + 1, x.shape.end());
    return out;
  }
  case OpKind::Update: {
    const Type &pos = in[1], &rows = in[2];
    if (pos.dtype != DType::I32 || pos.numElements() != 1 || pos.rank() > 1)
      return name.str() + ": position type " + pos.str() + " is not i32[] or i32[1]";
    auto axis = r.axis("axis", x.rank());
    if (!axis)
      return r.error;
    if (rows.dtype != x.dtype || rows.rank() != x.rank())
      return name.str() + ": rows " + rows.str() + " do not match " + x.str();
    for (size_t d = 0; d < x.rank(); ++d)
      if (int64_t(d) == *axis ? rows.shape[d] > x.shape[d] : rows.shape[d] != x.shape[d])
        return name.str() + ": rows " + rows.str() + " do not fit " + x.str() + " along axis " +
               std::to_string(*axis);
    return x;
  }
  default:
    return name.str() + ": not a layout op";
  }
}

Result leaf(OpKind kind, const Attrs &attrs, const Type *declared) {
  llvm::StringRef name = mnemonic(kind);
  if (!declared)
    return name.str() + ": needs a declared result type";
  if (kind == OpKind::Iota) {
    if (declared->dtype != DType::I32 && !tensor::isFloat(declared->dtype))
      return name.str() + ": result type " + declared->str() + " is not i32 or a float";
    AttrReader r{name, attrs, {}};
    if (!r.axis("axis", declared->rank()))
      return r.error;
  }
  return *declared;
}

} // namespace

std::variant<Type, std::string> inferType(OpKind kind, llvm::ArrayRef<Type> operands,
                                          const std::vector<std::pair<std::string, Attr>> &attrs,
                                          const Type *declared) {
  llvm::StringRef name = mnemonic(kind);
  int count = operandCount(kind);
  if (count >= 0 && operands.size() != size_t(count))
    return name.str() + ": expected " + std::to_string(count) + " operand" +
           (count == 1 ? "" : "s") + ", got " + std::to_string(operands.size());
  for (const Type &t : operands)
    for (int64_t d : t.shape)
      if (d < 0)
        return name.str() + ": operand type " + t.str() + " has a negative dimension";
  if (declared)
    for (int64_t d : declared->shape)
      if (d < 0)
        return name.str() + ": result type " + declared->str() + " has a negative dimension";
  switch (opClass(kind)) {
  case OpClass::Leaf:
    return leaf(kind, attrs, declared);
  case OpClass::Unary:
  case OpClass::Binary:
  case OpClass::Ternary:
    return elementwise(kind, operands, declared);
  case OpClass::Reduce:
    return reduce(kind, operands[0], attrs);
  case OpClass::Layout:
    return layout(kind, operands, attrs, declared);
  case OpClass::Contract:
    if (kind == OpKind::Matmul)
      return matmul(operands[0], operands[1]);
    return window(kind, operands, attrs);
  case OpClass::Terminator: {
    auto names = getStrings(findAttr(attrs, "names"));
    if (!names)
      return name.str() + ": missing string list attribute 'names'";
    if (names->size() != operands.size())
      return name.str() + ": " + std::to_string(names->size()) + " names for " +
             std::to_string(operands.size()) + " operands";
    return Type{};
  }
  }
  return name.str() + ": unknown op";
}

std::optional<tensor::ElementwiseOp> elementwiseArithmetic(OpKind kind) {
  switch (kind) {
#define LPU_ELEMENTWISE(Enum, Name, Arity, Rule, Surface, VxmEnum, VxmName, Opcode)              \
  case OpKind::Enum: return tensor::ElementwiseOp::Enum;
#include "support/Elementwise.def"
  default: return std::nullopt;
  }
}

OpKind elementwiseKind(tensor::ElementwiseOp op) {
  switch (op) {
#define LPU_ELEMENTWISE(Enum, Name, Arity, Rule, Surface, VxmEnum, VxmName, Opcode)              \
  case tensor::ElementwiseOp::Enum: return OpKind::Enum;
#include "support/Elementwise.def"
  }
  return OpKind::Return; // unreachable: the switch covers the table
}

} // namespace lpu::ir
