#include "support/SafeTensors.h"

#include "support/Detail.h"

#include <llvm/ADT/StringSet.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

namespace lpu::tensor {

using detail::sourceError;

namespace {
constexpr llvm::StringLiteral kMetadataKey("__metadata__");

std::optional<DType> dtypeFromSafetensorsName(llvm::StringRef name) {
  for (DType type : kAllDTypes)
    if (safetensorsDTypeName(type) == name)
      return type;
  return std::nullopt;
}

std::string joined(const std::vector<std::string> &items) {
  std::string text;
  for (const std::string &item : items)
    text += (text.empty() ? "" : ", ") + item;
  return text;
}
} // namespace

llvm::StringRef safetensorsDTypeName(DType type) {
  switch (type) {
  case DType::Bool:
    return "BOOL";
  case DType::I8:
    return "I8";
  case DType::I16:
    return "I16";
  case DType::I32:
    return "I32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::F32:
    return "F32";
  }
  return "";
}

llvm::Expected<SafeTensorsFile> SafeTensorsFile::open(llvm::StringRef path) {
  auto buffer = detail::readWholeFile(path);
  if (!buffer)
    return buffer.takeError();
  return parse(std::move(*buffer), path);
}

namespace {

constexpr int64_t kMaxHeaderDepth = 64;

/// What JSON text shows before it is parsed: its deepest nesting of
/// arrays and objects, and the first key an object repeats (llvm::json
/// keeps the last value of a repeated key and says nothing, so a header
/// naming a tensor twice would silently lose one).
struct HeaderScan {
  int64_t deepest = 0;
  std::optional<std::string> repeatedKey;
};

HeaderScan scanJson(llvm::StringRef text) {
  HeaderScan scan;
  // One entry a level: the keys seen so far when the level is an object.
  std::vector<std::optional<llvm::StringSet<>>> levels;
  bool inString = false, escaped = false;
  size_t stringStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"') {
        inString = false;
        // A string in an object followed by ':' is a key (its escapes
        // compared as written).
        size_t next = text.find_first_not_of(" \t\r\n", i + 1);
        if (!levels.empty() && levels.back() && next != llvm::StringRef::npos && text[next] == ':') {
          llvm::StringRef key = text.slice(stringStart, i);
          if (!levels.back()->insert(key).second && !scan.repeatedKey)
            scan.repeatedKey = key.str();
        }
      }
      continue;
    }
    if (c == '"') {
      inString = true;
      stringStart = i + 1;
    } else if (c == '[' || c == '{') {
      levels.push_back(c == '{' ? std::optional<llvm::StringSet<>>(llvm::StringSet<>()) : std::nullopt);
      scan.deepest = std::max(scan.deepest, int64_t(levels.size()));
    } else if ((c == ']' || c == '}') && !levels.empty()) {
      levels.pop_back();
    }
  }
  return scan;
}

/// A JSON number written as a non-negative integer (not 3.0 or 3e0, which
/// llvm::json would also give as 3).
llvm::Optional<int64_t> wholeNumber(const llvm::json::Value &value) {
  llvm::Optional<uint64_t> n = value.getAsUINT64();
  if (!n || *n > uint64_t(std::numeric_limits<int64_t>::max()))
    return llvm::None;
  return int64_t(*n);
}

} // namespace

llvm::Expected<SafeTensorsFile> SafeTensorsFile::parse(std::unique_ptr<llvm::MemoryBuffer> buffer,
                                                       llvm::StringRef name) {
  const llvm::StringRef bytes = buffer->getBuffer();
  if (bytes.size() < 8)
    return sourceError(name, "not a .safetensors file (shorter than its 8-byte header length)");
  uint64_t headerLength = 0;
  for (unsigned i = 0; i < 8; ++i)
    headerLength |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  if (headerLength > bytes.size() - 8)
    return sourceError(name, "truncated .safetensors file: the header claims " +
                                 llvm::Twine(headerLength) + " bytes, the file has " +
                                 llvm::Twine(bytes.size() - 8) + " after the length");

  // The parser recurses once a nesting level: a header nested thousands
  // deep would overflow the stack. A real one is three deep (the object,
  // a tensor's entry, its shape).
  const HeaderScan scan = scanJson(bytes.substr(8, headerLength));
  if (scan.deepest > kMaxHeaderDepth)
    return sourceError(name, "malformed .safetensors header: nested more than " + llvm::Twine(kMaxHeaderDepth) +
                                 " levels deep");
  if (scan.repeatedKey)
    return sourceError(name, "malformed .safetensors header: the key '" + *scan.repeatedKey +
                                 "' is given twice in one object");
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(bytes.substr(8, headerLength));
  if (!json)
    return sourceError(name, "malformed .safetensors header: " + toString(json.takeError()));
  const llvm::json::Object *root = json->getAsObject();
  if (!root)
    return sourceError(name, "malformed .safetensors header: not a JSON object");

  SafeTensorsFile file;
  file.name_ = name.str();
  file.data_ = bytes.substr(8 + headerLength);
  // The JSON object is a hash map; visit keys in sorted order so that the
  // first error reported does not depend on hashing.
  std::vector<const llvm::json::Object::value_type *> members;
  for (const auto &member : *root)
    members.push_back(&member);
  std::sort(members.begin(), members.end(), [](const auto *a, const auto *b) {
    return llvm::StringRef(a->first) < llvm::StringRef(b->first);
  });
  for (const auto *memberPtr : members) {
    const auto &member = *memberPtr;
    const llvm::StringRef key = member.first;
    if (key == kMetadataKey) {
      const llvm::json::Object *metadata = member.second.getAsObject();
      if (!metadata)
        return sourceError(name, "'__metadata__' must be a JSON object");
      for (const auto &item : *metadata) {
        llvm::Optional<llvm::StringRef> value = item.second.getAsString();
        if (!value)
          return sourceError(name, "'__metadata__' value of '" + llvm::StringRef(item.first) +
                                       "' must be a string");
        file.metadata_[llvm::StringRef(item.first).str()] = value->str();
      }
      continue;
    }
    auto bad = [&](const llvm::Twine &what) {
      return sourceError(name, "tensor '" + key + "': " + what);
    };
    const llvm::json::Object *info = member.second.getAsObject();
    if (!info)
      return bad("expected a JSON object with dtype, shape and data_offsets");
    Entry entry;
    entry.name = key.str();
    llvm::Optional<llvm::StringRef> dtypeText = info->getString("dtype");
    if (!dtypeText)
      return bad("no 'dtype' string");
    std::optional<DType> type = dtypeFromSafetensorsName(*dtypeText);
    if (!type)
      return bad("unsupported dtype '" + *dtypeText + "'; supported: BOOL I8 I16 I32 F16 BF16 F32");
    entry.dtype = *type;
    const llvm::json::Array *shape = info->getArray("shape");
    if (!shape)
      return bad("no 'shape' array");
    for (const llvm::json::Value &dim : *shape) {
      llvm::Optional<int64_t> value = wholeNumber(dim);
      if (!value)
        return bad("'shape' must hold non-negative integers");
      entry.shape.push_back(*value);
    }
    const llvm::json::Array *offsets = info->getArray("data_offsets");
    llvm::Optional<int64_t> begin, end;
    if (offsets && offsets->size() == 2) {
      begin = wholeNumber((*offsets)[0]);
      end = wholeNumber((*offsets)[1]);
    }
    if (!begin || !end)
      return bad("'data_offsets' must be two non-negative integers [begin, end]");
    entry.begin = static_cast<uint64_t>(*begin);
    entry.end = static_cast<uint64_t>(*end);
    if (entry.begin > entry.end)
      return bad("data_offsets [" + llvm::Twine(entry.begin) + ", " + llvm::Twine(entry.end) +
                 "] end before they begin");
    if (entry.end > file.data_.size())
      return bad("data_offsets [" + llvm::Twine(entry.begin) + ", " + llvm::Twine(entry.end) +
                 "] lie outside the " + llvm::Twine(file.data_.size()) + "-byte data section");
    llvm::Expected<int64_t> count = checkedElementCount(entry.shape, entry.dtype);
    if (!count)
      return bad(toString(count.takeError()));
    const uint64_t need = static_cast<uint64_t>(*count) * dtypeSize(entry.dtype);
    if (entry.end - entry.begin != need)
      return bad(typeString(entry.dtype, entry.shape) + " needs " + llvm::Twine(need) +
                 " bytes, data_offsets give " + llvm::Twine(entry.end - entry.begin));
    file.entries_.push_back(std::move(entry));
  }

  // Overlap check on the ranges sorted by start; empty tensors take no bytes
  // and cannot overlap anything.
  std::vector<const Entry *> byOffset;
  for (const Entry &entry : file.entries_)
    if (entry.end > entry.begin)
      byOffset.push_back(&entry);
  std::sort(byOffset.begin(), byOffset.end(), [](const Entry *a, const Entry *b) {
    return std::tie(a->begin, a->name) < std::tie(b->begin, b->name);
  });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i]->begin < byOffset[i - 1]->end)
      return sourceError(name, "tensors '" + byOffset[i - 1]->name + "' and '" + byOffset[i]->name +
                                   "' overlap in the data section");

  std::sort(file.entries_.begin(), file.entries_.end(),
            [](const Entry &a, const Entry &b) { return a.name < b.name; });
  file.buffer_ = std::move(buffer);
  return file;
}

const SafeTensorsFile::Entry *SafeTensorsFile::find(llvm::StringRef tensorName) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), tensorName,
                             [](const Entry &e, llvm::StringRef n) { return e.name < n; });
  return it != entries_.end() && it->name == tensorName ? &*it : nullptr;
}

llvm::Expected<Tensor> SafeTensorsFile::read(llvm::StringRef tensorName) const {
  const Entry *entry = find(tensorName);
  if (!entry)
    return sourceError(name_, "no tensor named '" + tensorName + "'");
  const llvm::StringRef bytes = data_.slice(entry->begin, entry->end);
  return tensorOf(*entry, entry->shape,
                  llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
}

llvm::Expected<Tensor> SafeTensorsFile::tensorOf(const Entry &entry, std::vector<int64_t> shape,
                                                 llvm::ArrayRef<uint8_t> bytes) const {
  llvm::Expected<Tensor> tensor = Tensor::fromBytes(entry.dtype, std::move(shape), bytes);
  if (!tensor)
    return detail::prefixError(name_, tensor.takeError());
  // A bool is any non-zero byte.
  if (entry.dtype == DType::Bool)
    for (uint8_t &byte : tensor->bytes())
      byte = byte != 0;
  return tensor;
}

llvm::Expected<Tensor> SafeTensorsFile::readSlice(llvm::StringRef tensorName, int64_t axis,
                                                  int64_t start, int64_t size) const {
  const Entry *entry = find(tensorName);
  if (!entry)
    return sourceError(name_, "no tensor named '" + tensorName + "'");
  if (axis < 0 || size_t(axis) >= entry->shape.size() || start < 0 || size < 0 ||
      start + size > entry->shape[size_t(axis)])
    return sourceError(name_, "tensor '" + tensorName + "' " + shapeString(entry->shape) +
                                  " has no slice [" + std::to_string(start) + ", " +
                                  std::to_string(start + size) + ") on axis " + std::to_string(axis));
  // Outer blocks before the axis, each a run of `size` rows of `inner`
  // bytes taken from `dim` rows.
  int64_t outer = 1, inner = int64_t(dtypeSize(entry->dtype));
  for (size_t i = 0; i < size_t(axis); ++i)
    outer *= entry->shape[i];
  for (size_t i = size_t(axis) + 1; i < entry->shape.size(); ++i)
    inner *= entry->shape[i];
  const int64_t dim = entry->shape[size_t(axis)];
  std::vector<uint8_t> bytes(size_t(outer * size * inner));
  const char *base = data_.data() + entry->begin;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(bytes.data() + o * size * inner, base + (o * dim + start) * inner, size_t(size * inner));
  std::vector<int64_t> shape = entry->shape;
  shape[size_t(axis)] = size;
  return tensorOf(*entry, std::move(shape), bytes);
}

llvm::Error checkTensors(llvm::ArrayRef<const SafeTensorsFile *> files,
                         llvm::ArrayRef<TensorSpec> expected) {
  std::vector<std::string> missing, extra, wrongType, wrongShape, twice;
  llvm::StringSet<> expectedNames;
  for (const TensorSpec &spec : expected)
    expectedNames.insert(spec.name);
  // Where each name is: a name in two files is an error, not a choice.
  std::map<std::string, const SafeTensorsFile *> owner;
  for (const SafeTensorsFile *file : files)
    for (const SafeTensorsFile::Entry &entry : file->entries()) {
      auto [it, fresh] = owner.try_emplace(entry.name, file);
      if (!fresh)
        twice.push_back(entry.name + " (" + it->second->name().str() + " and " + file->name().str() + ")");
      else if (!expectedNames.contains(entry.name))
        extra.push_back(entry.name);
    }
  for (const TensorSpec &spec : expected) {
    auto it = owner.find(spec.name);
    if (it == owner.end()) {
      missing.push_back(spec.name);
      continue;
    }
    const SafeTensorsFile::Entry *entry = it->second->find(spec.name);
    if (entry->dtype != spec.dtype)
      wrongType.push_back(spec.name + " (expected " + dtypeName(spec.dtype).str() + ", file has " +
                          dtypeName(entry->dtype).str() + ")");
    if (entry->shape != spec.shape)
      wrongShape.push_back(spec.name + " (expected " + shapeString(spec.shape) + ", file has " +
                           shapeString(entry->shape) + ")");
  }
  // Tensors nothing reads (a parameter the model declares but this entry
  // never reads, another entry's) are no error on their own: a model's
  // weights serve each of its entries. Listed with the other problems,
  // they show a misspelt name beside the one missing.
  if (missing.empty() && wrongType.empty() && wrongShape.empty() && twice.empty())
    return llvm::Error::success();
  std::string message = "the weights do not match the model:";
  auto section = [&](llvm::StringRef title, const std::vector<std::string> &items) {
    if (!items.empty())
      message += "\n  " + title.str() + " (" + std::to_string(items.size()) + "): " + joined(items);
  };
  section("missing", missing);
  section("extra", extra);
  section("wrong dtype", wrongType);
  section("wrong shape", wrongShape);
  section("in two files", twice);
  std::vector<std::string> names;
  for (const SafeTensorsFile *file : files)
    names.push_back(file->name().str());
  return sourceError(joined(names), message);
}

llvm::Error checkTensors(const SafeTensorsFile &file, llvm::ArrayRef<TensorSpec> expected) {
  return checkTensors(llvm::ArrayRef<const SafeTensorsFile *>(&file), expected);
}

llvm::Expected<std::map<std::string, Tensor>>
loadTensors(llvm::ArrayRef<const SafeTensorsFile *> files, llvm::ArrayRef<TensorSpec> expected) {
  if (llvm::Error error = checkTensors(files, expected))
    return error;
  std::map<std::string, Tensor> tensors;
  for (const TensorSpec &spec : expected)
    for (const SafeTensorsFile *file : files) {
      if (!file->find(spec.name))
        continue;
      llvm::Expected<Tensor> tensor = file->read(spec.name);
      if (!tensor)
        return tensor.takeError();
      tensors.emplace(spec.name, std::move(*tensor));
    }
  return tensors;
}

llvm::Expected<std::map<std::string, Tensor>> loadTensors(const SafeTensorsFile &file,
                                                          llvm::ArrayRef<TensorSpec> expected) {
  return loadTensors(llvm::ArrayRef<const SafeTensorsFile *>(&file), expected);
}

llvm::Expected<std::vector<SafeTensorsFile>> openTensorFiles(llvm::ArrayRef<std::string> paths) {
  std::vector<SafeTensorsFile> files;
  for (const std::string &path : paths) {
    auto file = SafeTensorsFile::open(path);
    if (!file)
      return file.takeError();
    files.push_back(std::move(*file));
  }
  return files;
}

llvm::Expected<std::map<std::string, Tensor>> loadTensorFiles(llvm::ArrayRef<std::string> paths,
                                                              llvm::ArrayRef<TensorSpec> expected) {
  auto files = openTensorFiles(paths);
  if (!files)
    return files.takeError();
  std::vector<const SafeTensorsFile *> pointers;
  for (const SafeTensorsFile &file : *files)
    pointers.push_back(&file);
  return loadTensors(pointers, expected);
}

llvm::Expected<std::string>
serializeSafeTensors(llvm::ArrayRef<NamedTensor> tensors,
                     const std::map<std::string, std::string> &metadata) {
  llvm::StringSet<> seen;
  for (const auto &[tensorName, tensor] : tensors) {
    if (tensorName.empty() || tensorName == kMetadataKey)
      return sourceError("safetensors", "invalid tensor name '" + tensorName + "'");
    if (!seen.insert(tensorName).second)
      return sourceError("safetensors", "duplicate tensor name '" + tensorName + "'");
  }
  std::string header;
  llvm::raw_string_ostream stream(header);
  llvm::json::OStream json(stream);
  uint64_t offset = 0;
  json.object([&] {
    if (!metadata.empty())
      json.attributeObject(kMetadataKey, [&] {
        for (const auto &[key, value] : metadata)
          json.attribute(key, value);
      });
    for (const auto &[tensorName, tensor] : tensors) {
      json.attributeObject(tensorName, [&] {
        json.attribute("dtype", safetensorsDTypeName(tensor.dtype()));
        json.attributeArray("shape", [&] {
          for (int64_t dim : tensor.shape())
            json.value(dim);
        });
        json.attributeArray("data_offsets", [&] {
          json.value(static_cast<int64_t>(offset));
          json.value(static_cast<int64_t>(offset + tensor.byteSize()));
        });
      });
      offset += tensor.byteSize();
    }
  });
  stream.flush();
  // Other writers pad the header with spaces so the data starts 8-aligned.
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string out;
  const uint64_t length = header.size();
  for (unsigned i = 0; i < 8; ++i)
    out += static_cast<char>((length >> (8 * i)) & 0xff);
  out += header;
  for (const auto &[tensorName, tensor] : tensors)
    out.append(reinterpret_cast<const char *>(tensor.bytes().data()), tensor.byteSize());
  return out;
}

llvm::Error writeSafeTensorsFile(llvm::StringRef path, llvm::ArrayRef<NamedTensor> tensors,
                                 const std::map<std::string, std::string> &metadata) {
  llvm::Expected<std::string> image = serializeSafeTensors(tensors, metadata);
  if (!image)
    return image.takeError();
  return detail::writeWholeFile(path, *image);
}

} // namespace lpu::tensor
