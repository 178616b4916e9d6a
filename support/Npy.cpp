#include "support/Npy.h"

#include "support/Detail.h"

#include <llvm/ADT/StringExtras.h>

#include <cstring>
#include <optional>

namespace lpu::tensor {

using detail::sourceError;

namespace {

/// Header text as a message quotes it: bytes that are not printable ASCII
/// (a NUL, Latin-1) written as \XX, so that a damaged header cannot put raw
/// bytes into the terminal.
std::string shown(llvm::StringRef text) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::printEscapedString(text, os);
  return os.str();
}

constexpr llvm::StringLiteral kMagic("\x93NUMPY");

uint32_t readLittle(llvm::StringRef data, size_t offset, unsigned bytes) {
  uint32_t value = 0;
  for (unsigned i = 0; i < bytes; ++i)
    value |= static_cast<uint32_t>(static_cast<uint8_t>(data[offset + i])) << (8 * i);
  return value;
}

/// The header dictionary: {'descr': '<f4', 'fortran_order': False,
/// 'shape': (2, 3), }. A hand-written scanner for exactly this subset of
/// Python literal syntax; anything else is an error that says where.
class HeaderParser {
public:
  HeaderParser(llvm::StringRef text, llvm::StringRef name) : text_(text), name_(name) {}

  llvm::Error parse() {
    skipSpace();
    if (!consume('{'))
      return fail("expected '{'");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::optional<std::string> key = parseString();
      if (!key)
        return fail("expected a quoted key");
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after '" + *key + "'");
      skipSpace();
      if (llvm::Error error = parseValue(*key))
        return error;
      skipSpace();
      if (consume(','))
        continue;
      if (consume('}'))
        break;
      return fail("expected ',' or '}'");
    }
    // numpy pads with spaces and ends the header with '\n'.
    for (; pos_ < text_.size(); ++pos_)
      if (!llvm::isSpace(text_[pos_]) && text_[pos_] != '\0')
        return fail("unexpected text after the closing '}'");
    if (!descr)
      return sourceError(name_, "malformed .npy header: no 'descr' key");
    if (!fortranOrder)
      return sourceError(name_, "malformed .npy header: no 'fortran_order' key");
    if (!shape)
      return sourceError(name_, "malformed .npy header: no 'shape' key");
    return llvm::Error::success();
  }

  std::optional<std::string> descr;
  std::optional<bool> fortranOrder;
  std::optional<std::vector<int64_t>> shape;

private:
  llvm::Error fail(const llvm::Twine &what) {
    return sourceError(name_, "malformed .npy header at offset " + llvm::Twine(pos_) + ": " + what);
  }
  void skipSpace() {
    while (pos_ < text_.size() && llvm::isSpace(text_[pos_]))
      ++pos_;
  }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool consumeWord(llvm::StringRef word) {
    if (!text_.substr(pos_).startswith(word))
      return false;
    pos_ += word.size();
    return true;
  }
  std::optional<std::string> parseString() {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return std::nullopt;
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == llvm::StringRef::npos)
      return std::nullopt;
    std::string value = text_.slice(pos_, end).str();
    pos_ = end + 1;
    return value;
  }
  llvm::Error parseValue(llvm::StringRef key) {
    if (key == "descr") {
      if (pos_ < text_.size() && text_[pos_] == '[')
        return sourceError(name_, "structured (record) dtypes are not supported");
      descr = parseString();
      return descr ? llvm::Error::success() : fail("'descr' must be a quoted string");
    }
    if (key == "fortran_order") {
      if (consumeWord("True"))
        fortranOrder = true;
      else if (consumeWord("False"))
        fortranOrder = false;
      else
        return fail("'fortran_order' must be True or False");
      return llvm::Error::success();
    }
    if (key == "shape")
      return parseShape();
    return fail("unexpected key '" + shown(key) + "'");
  }
  llvm::Error parseShape() {
    if (!consume('('))
      return fail("'shape' must be a tuple");
    std::vector<int64_t> dims;
    while (true) {
      skipSpace();
      if (consume(')'))
        break;
      const size_t start = pos_;
      while (pos_ < text_.size() && llvm::isDigit(text_[pos_]))
        ++pos_;
      int64_t dim = 0;
      if (start == pos_ || text_.slice(start, pos_).getAsInteger(10, dim))
        return fail("expected a dimension (a non-negative integer)");
      consume('L'); // Python 2 wrote long integers with a suffix
      dims.push_back(dim);
      skipSpace();
      if (consume(','))
        continue;
      if (consume(')'))
        break;
      return fail("expected ',' or ')' in the shape");
    }
    shape = std::move(dims);
    return llvm::Error::success();
  }

  llvm::StringRef text_;
  llvm::StringRef name_;
  size_t pos_ = 0;
};

/// Names for descriptors we refuse, so the message says what the file holds.
llvm::StringRef numpyTypeName(llvm::StringRef code) {
  static const std::pair<llvm::StringLiteral, llvm::StringLiteral> kNames[] = {
      {"f8", "float64"},     {"f16", "float128"},     {"i8", "int64"},         {"u1", "uint8"},
      {"u2", "uint16"},      {"u4", "uint32"},        {"u8", "uint64"},        {"c8", "complex64"},
      {"c16", "complex128"}, {"O", "Python objects"}, {"O8", "Python objects"}};
  for (const auto &[key, value] : kNames)
    if (code == key)
      return value;
  if (code.startswith("U"))
    return "unicode strings";
  if (code.startswith("S") || code.startswith("a"))
    return "byte strings";
  if (code.startswith("M") || code.startswith("m"))
    return "dates or time deltas";
  return "";
}

llvm::Expected<DType> dtypeFromDescr(llvm::StringRef descr, llvm::StringRef name) {
  // np.save of an ml_dtypes.bfloat16 array writes '<V2' (handled below);
  // writers that store str(array.dtype) instead give this name.
  if (descr == "bfloat16" || descr == "<bfloat16")
    return DType::BF16;
  char order = '=';
  llvm::StringRef code = descr;
  if (!code.empty() && llvm::StringRef("<>|=").contains(code.front())) {
    order = code.front();
    code = code.drop_front();
  }
  std::optional<DType> type;
  if (code == "b1")
    type = DType::Bool;
  else if (code == "i1")
    type = DType::I8;
  else if (code == "i2")
    type = DType::I16;
  else if (code == "i4")
    type = DType::I32;
  else if (code == "f2")
    type = DType::F16;
  else if (code == "f4")
    type = DType::F32;
  else if (code == "V2")
    type = DType::BF16; // our convention, see docs/tensor-files.md
  if (type && order == '>' && dtypeSize(*type) > 1)
    return sourceError(name, "big-endian data ('" + shown(descr) +
                                 "') is not supported; "
                                 "save the array with a little-endian dtype");
  if (type)
    return *type;
  llvm::StringRef known = numpyTypeName(code);
  return sourceError(name, "unsupported dtype '" + shown(descr) + "'" +
                               (known.empty() ? "" : " (" + known + ")") +
                               "; supported: bool '|b1', int8 '|i1', int16 '<i2', int32 "
                               "'<i4', float16 '<f2', float32 '<f4', bf16 as '|V2' or "
                               "'bfloat16'");
}

} // namespace

llvm::StringRef npyDescr(DType type) {
  switch (type) {
  case DType::Bool:
    return "|b1";
  case DType::I8:
    return "|i1";
  case DType::I16:
    return "<i2";
  case DType::I32:
    return "<i4";
  case DType::F16:
    return "<f2";
  case DType::BF16:
    return "|V2";
  case DType::F32:
    return "<f4";
  }
  return "";
}

llvm::Expected<Tensor> parseNpy(llvm::StringRef data, llvm::StringRef name) {
  if (!data.startswith(kMagic))
    return sourceError(name, "not an .npy file (no \\x93NUMPY magic)");
  if (data.size() < 10)
    return sourceError(name, "truncated .npy header");
  const unsigned major = static_cast<uint8_t>(data[6]);
  if (major < 1 || major > 3)
    return sourceError(name, "unsupported .npy format version " + llvm::Twine(major) + "." +
                                 llvm::Twine(static_cast<unsigned>(static_cast<uint8_t>(data[7]))));
  // Version 1.0 has a 2-byte header length; 2.0 and 3.0 have 4 bytes.
  const unsigned lengthBytes = major == 1 ? 2 : 4;
  const size_t headerStart = 8 + lengthBytes;
  if (data.size() < headerStart)
    return sourceError(name, "truncated .npy header");
  const uint64_t headerLength = readLittle(data, 8, lengthBytes);
  if (headerLength > data.size() - headerStart)
    return sourceError(name, "truncated .npy header: it claims " + llvm::Twine(headerLength) +
                                 " bytes, the file has " + llvm::Twine(data.size() - headerStart) +
                                 " after the prefix");

  HeaderParser header(data.substr(headerStart, headerLength), name);
  if (llvm::Error error = header.parse())
    return error;
  llvm::Expected<DType> type = dtypeFromDescr(*header.descr, name);
  if (!type)
    return type.takeError();
  if (*header.fortranOrder && header.shape->size() > 1)
    return sourceError(name, "Fortran-order (column-major) arrays are not supported; save "
                             "with np.save(path, np.ascontiguousarray(a))");
  llvm::Expected<int64_t> count = checkedElementCount(*header.shape, *type);
  if (!count)
    return detail::prefixError(name, count.takeError());

  const uint64_t need = static_cast<uint64_t>(*count) * dtypeSize(*type);
  const llvm::StringRef payload = data.substr(headerStart + headerLength);
  if (payload.size() < need)
    return sourceError(name, "truncated data: " + typeString(*type, *header.shape) + " needs " +
                                 llvm::Twine(need) + " bytes, the file has " +
                                 llvm::Twine(payload.size()));
  if (payload.size() > need)
    return sourceError(name, llvm::Twine(payload.size() - need) +
                                 " unexpected bytes after the data of " +
                                 typeString(*type, *header.shape));
  llvm::Expected<Tensor> tensor = Tensor::fromBytes(
      *type, *header.shape,
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(payload.data()), payload.size()));
  if (!tensor)
    return detail::prefixError(name, tensor.takeError());
  if (*type == DType::Bool) {
    // numpy reads any non-zero byte as True; we store bools canonically.
    for (uint8_t &byte : tensor->bytes())
      byte = byte != 0;
  }
  return tensor;
}

llvm::Expected<Tensor> readNpyFile(llvm::StringRef path) {
  auto buffer = detail::readWholeFile(path);
  if (!buffer)
    return buffer.takeError();
  return parseNpy((*buffer)->getBuffer(), path);
}

llvm::Error checkTensorType(const Tensor &tensor, DType expectedType,
                            llvm::ArrayRef<int64_t> expectedShape, llvm::StringRef name) {
  if (tensor.dtype() == expectedType && tensor.shape() == expectedShape)
    return llvm::Error::success();
  return sourceError(name, "expected " + typeString(expectedType, expectedShape) + ", got " +
                               tensor.typeString());
}

llvm::Expected<Tensor> readNpyFile(llvm::StringRef path, DType expectedType,
                                   llvm::ArrayRef<int64_t> expectedShape) {
  llvm::Expected<Tensor> tensor = readNpyFile(path);
  if (!tensor)
    return tensor.takeError();
  if (llvm::Error error = checkTensorType(*tensor, expectedType, expectedShape, path))
    return error;
  return tensor;
}

std::string serializeNpy(const Tensor &tensor) {
  std::string dict =
      "{'descr': '" + npyDescr(tensor.dtype()).str() + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.rank(); ++i)
    dict += (i ? ", " : "") + std::to_string(tensor.shape()[i]);
  dict += tensor.rank() == 1 ? ",), }" : "), }";
  // The data must start at a multiple of 64 bytes; the header ends in '\n'.
  auto paddedTotal = [&](size_t prefix) { return (prefix + dict.size() + 1 + 63) / 64 * 64; };
  // Version 1.0 stores the header length in 2 bytes; only a shape of
  // thousands of dimensions needs version 2.0.
  const bool version1 = paddedTotal(10) - 10 <= 65535;
  const size_t prefix = version1 ? 10 : 12;
  const size_t total = paddedTotal(prefix);
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';

  std::string out(kMagic);
  out += static_cast<char>(version1 ? 1 : 2);
  out += '\0';
  const uint32_t length = static_cast<uint32_t>(dict.size());
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((length >> (8 * i)) & 0xff);
  out += dict;
  out.append(reinterpret_cast<const char *>(tensor.bytes().data()), tensor.byteSize());
  return out;
}

llvm::Error writeNpyFile(llvm::StringRef path, const Tensor &tensor) {
  return detail::writeWholeFile(path, serializeNpy(tensor));
}

} // namespace lpu::tensor
