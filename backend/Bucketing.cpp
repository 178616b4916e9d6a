#include "backend/Bucketing.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

#include <cstring>
#include <map>
#include <set>

namespace lpu::backend {

std::string bucketLabel(llvm::ArrayRef<BucketDim> dims) {
  std::string s;
  for (const BucketDim &d : dims)
    s += (s.empty() ? "" : " ") + d.name + "=" + std::to_string(d.value);
  return s.empty() ? "fixed shapes" : s;
}

void nameBucketDims(Entry &entry, const SourceDims &fromSource) {
  for (Bucket &bucket : entry.buckets)
    for (TensorPlacement &t : bucket.tensors) {
      // A state has one shape whatever the bucket: never padded.
      if ((t.role != TensorRole::Input && t.role != TensorRole::Output) || t.state)
        continue;
      const auto &named = t.role == TensorRole::Input ? fromSource.inputs : fromSource.outputs;
      if (auto it = named.find(t.name); it != named.end() && it->second.size() == t.shape.size()) {
        for (size_t d = 0; d < t.shape.size(); ++d)
          if (!it->second[d].empty() && llvm::any_of(bucket.dims, [&](const BucketDim &b) {
                return b.name == it->second[d] && b.value == t.shape[d].value;
              }))
            t.shape[d] = Dim{0, it->second[d]};
        continue;
      }
      for (size_t d = 0; d < t.shape.size(); ++d)
        for (const BucketDim &size : bucket.dims) {
          bool everywhere = true;
          for (const Bucket &other : entry.buckets) {
            const TensorPlacement *same = nullptr;
            for (const TensorPlacement &o : other.tensors)
              if (o.role == t.role && o.name == t.name)
                same = &o;
            std::optional<int64_t> there;
            for (const BucketDim &od : other.dims)
              if (od.name == size.name)
                there = od.value;
            everywhere &= same && there && d < same->shape.size() &&
                          (same->shape[d].name == size.name || same->shape[d].value == *there);
          }
          if (everywhere) {
            t.shape[d] = Dim{0, size.name};
            break;
          }
        }
    }
}

std::vector<tensor::TensorSpec> stateSpecs(llvm::ArrayRef<Entry> entries) {
  std::vector<tensor::TensorSpec> specs;
  for (const Entry &e : entries)
    for (const Bucket &b : e.buckets)
      for (const TensorPlacement &t : b.tensors)
        if (t.state && llvm::none_of(specs, [&](const tensor::TensorSpec &s) { return s.name == t.name; }))
          specs.push_back({t.name, t.dtype, b.fullShape(t)}); // whole, not a chip's slice
  return specs;
}

void addZeroStates(const Entry &entry, std::map<std::string, tensor::Tensor> &inputs) {
  if (entry.buckets.empty())
    return;
  const Bucket &b = entry.buckets.front();
  for (const TensorPlacement &t : b.tensors)
    if (t.state && t.role == TensorRole::Input && !inputs.count(t.name)) {
      auto zeros = tensor::Tensor::create(t.dtype, b.fullShape(t)); // a whole state, not a chip's slice
      if (zeros) // a shape too large fails later, with the input's name
        inputs.emplace(t.name, std::move(*zeros));
      else
        llvm::consumeError(zeros.takeError());
    }
}

namespace {
llvm::Error error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string dimsText(const Bucket &b) { return bucketLabel(b.dims); }

/// Copies the overlapping leading block of `from` into `to` (same rank).
void copyBlock(const tensor::Tensor &from, tensor::Tensor &to) {
  size_t rank = from.rank();
  unsigned w = tensor::dtypeSize(from.dtype());
  if (rank == 0) {
    std::memcpy(to.bytes().data(), from.bytes().data(), w);
    return;
  }
  std::vector<int64_t> common(rank);
  for (size_t i = 0; i < rank; ++i)
    common[i] = std::min(from.shape()[i], to.shape()[i]);
  if (product(common) == 0)
    return;
  // Walk every row (all indices but the last) of the common block.
  std::vector<int64_t> idx(rank, 0);
  for (;;) {
    int64_t fo = 0, to_ = 0;
    for (size_t i = 0; i < rank; ++i) {
      fo = fo * from.shape()[i] + idx[i];
      to_ = to_ * to.shape()[i] + idx[i];
    }
    std::memcpy(to.bytes().data() + to_ * w, from.bytes().data() + fo * w, common[rank - 1] * w);
    size_t d = rank - 1;
    while (d > 0) {
      --d;
      if (++idx[d] < common[d])
        break;
      idx[d] = 0;
      if (d == 0)
        return;
    }
    if (rank == 1)
      return;
  }
}
} // namespace

llvm::Expected<BucketChoice> selectBucket(const Entry &entry,
                                          const std::map<std::string, tensor::Tensor> &inputs) {
  const Bucket &first = entry.buckets.front();
  std::vector<std::string> names;
  // An input every chip takes (each its copy or its slice) is named once.
  for (const TensorPlacement &t : first.tensors)
    if (t.role == TensorRole::Input && std::find(names.begin(), names.end(), t.name) == names.end())
      names.push_back(t.name);
  for (const auto &[name, value] : inputs)
    if (std::find(names.begin(), names.end(), name) == names.end())
      return error("unknown input '" + name + "' (entry '" + entry.name + "' takes: " +
                   (names.empty() ? std::string("no inputs") : llvm::join(names, ", ")) + ")");
  std::vector<std::string> missing;
  for (const std::string &n : names)
    if (!inputs.count(n))
      missing.push_back(n);
  if (!missing.empty())
    return error("missing input(s): " + llvm::join(missing, ", ") + " (give each with --input NAME=...)");
  // A chip's slice of a state (TensorPlacement::shard) takes the whole
  // state: its sliced axis is the whole's length.
  auto dimsOf = [](const TensorPlacement &t) {
    std::vector<Dim> dims = t.shape;
    if (t.shard.size() == 3 && t.shard[0] >= 0 && uint64_t(t.shard[0]) < dims.size())
      dims[size_t(t.shard[0])] = Dim{t.shard[2], ""};
    return dims;
  };
  for (const TensorPlacement &t : first.tensors) {
    if (t.role != TensorRole::Input)
      continue;
    const tensor::Tensor &v = inputs.at(t.name);
    if (v.dtype() != t.dtype)
      return error("input '" + t.name + "' has dtype " + tensor::dtypeName(v.dtype()) +
                   ", the program takes " + tensor::dtypeName(t.dtype));
    if (v.rank() != t.shape.size())
      return error("input '" + t.name + "' has rank " + llvm::Twine(v.rank()) + " (shape " +
                   tensor::shapeString(v.shape()) + "), the program takes rank " +
                   llvm::Twine(t.shape.size()));
    // A state (never padded) or an input of an entry with one bucket and
    // no bucketed dimension has one shape: a mismatch is the input's,
    // not a bucket's.
    const std::vector<Dim> dims = dimsOf(t);
    if ((t.state || entry.buckets.size() == 1) &&
        llvm::all_of(dims, [](const Dim &d) { return d.name.empty(); })) {
      std::vector<int64_t> shape;
      for (const Dim &d : dims)
        shape.push_back(d.value);
      if (llvm::ArrayRef<int64_t>(shape) != v.shape())
        return error(std::string(t.state ? "state" : "input") + " '" + t.name + "' has shape " +
                     tensor::shapeString(v.shape()) + ", the program takes " +
                     tensor::shapeString(shape));
    }
  }
  std::optional<BucketChoice> best;
  int64_t bestElements = 0, given = 0;
  // The padding is the inputs' (a state is never padded: it would only
  // dilute the fraction).
  std::set<std::string> states;
  for (const TensorPlacement &t : first.tensors)
    if (t.role == TensorRole::Input && t.state)
      states.insert(t.name);
  for (const auto &[name, value] : inputs)
    if (!states.count(name))
      given += value.numElements();
  std::string why;
  // The largest each bucketed dimension may be, for the message when an
  // input is longer than every bucket.
  std::map<std::string, int64_t> largest;
  for (unsigned bi = 0; bi < entry.buckets.size(); ++bi) {
    const Bucket &b = entry.buckets[bi];
    BucketChoice choice;
    choice.index = bi;
    std::map<std::string, std::string> boundBy; // a bucketed size: the input that bound it
    bool fits = true;
    int64_t elements = 0;
    // An input a partitioned program places on several chips is given
    // once: its elements count once.
    std::set<std::string> counted;
    for (const TensorPlacement &t : b.tensors) {
      if (t.role != TensorRole::Input)
        continue;
      const tensor::Tensor &v = inputs.at(t.name);
      std::vector<int64_t> cap = b.fullShape(t);
      if (!t.state && counted.insert(t.name).second)
        elements += product(cap);
      const std::vector<Dim> dims = dimsOf(t);
      for (size_t i = 0; i < dims.size() && fits; ++i) {
        int64_t actual = v.shape()[i];
        if (dims[i].name.empty()) {
          if (actual != dims[i].value) {
            fits = false;
            why = "input '" + t.name + "' dimension " + std::to_string(i) + " is " +
                  std::to_string(actual) + ", the program needs exactly " +
                  std::to_string(dims[i].value);
          }
          continue;
        }
        auto [it, fresh] = choice.bound.insert({t.shape[i].name, actual});
        if (fresh)
          boundBy[t.shape[i].name] = t.name;
        if (!fresh && it->second != actual) {
          fits = false;
          why = "dimension '" + t.shape[i].name + "' is " + std::to_string(it->second) +
                " in input '" + boundBy[t.shape[i].name] + "' and " + std::to_string(actual) +
                " in input '" + t.name + "'";
        } else if (actual > cap[i]) {
          fits = false;
        }
        int64_t &most = largest[t.shape[i].name];
        most = std::max(most, cap[i]);
      }
    }
    if (!fits)
      continue;
    if (!best || elements < bestElements) {
      choice.paddingFraction = elements ? 1.0 - double(given) / double(elements) : 0.0;
      best = choice;
      bestElements = elements;
    }
  }
  if (!best) {
    // An input longer than the largest bucket: say which and by how much.
    if (why.empty())
      for (const TensorPlacement &t : first.tensors) {
        if (t.role != TensorRole::Input)
          continue;
        const tensor::Tensor &v = inputs.at(t.name);
        for (size_t i = 0; i < t.shape.size() && why.empty(); ++i)
          if (!t.shape[i].name.empty() && v.shape()[i] > largest[t.shape[i].name])
            why = "input '" + t.name + "' dimension " + std::to_string(i) + " is " +
                  std::to_string(v.shape()[i]) + ", more than the largest bucket takes, " +
                  std::to_string(largest[t.shape[i].name]);
      }
    std::string list;
    for (const Bucket &b : entry.buckets)
      list += "\n  " + dimsText(b);
    return error("no bucket of entry '" + entry.name + "' fits the inputs" +
                 (why.empty() ? std::string() : " (" + why + ")") + "; the buckets are:" + list);
  }
  return *best;
}

std::vector<int64_t> boundShape(const TensorPlacement &t, const BucketChoice &choice) {
  std::vector<int64_t> shape;
  for (const Dim &d : t.shape)
    shape.push_back(d.name.empty() ? d.value : choice.bound.at(d.name));
  return shape;
}

tensor::Tensor padTo(const tensor::Tensor &value, llvm::ArrayRef<int64_t> shape) {
  tensor::Tensor out(value.dtype(), shape.vec());
  copyBlock(value, out);
  return out;
}

tensor::Tensor cropTo(const tensor::Tensor &value, llvm::ArrayRef<int64_t> shape) {
  tensor::Tensor out(value.dtype(), shape.vec());
  copyBlock(value, out);
  return out;
}

} // namespace lpu::backend
