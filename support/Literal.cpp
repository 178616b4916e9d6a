#include "support/Literal.h"

#include "support/Detail.h"
#include "support/Npy.h"

#include <boost/spirit/home/x3.hpp>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <vector>

namespace lpu::tensor {

namespace x3 = boost::spirit::x3;

namespace {

// Values are separated by commas, white space or brackets; brackets are not
// checked against the shape, they only make formatIree's output readable.
const auto separator = x3::space | x3::char_(",[]");
const auto valueToken = x3::lexeme[+(x3::char_ - separator)];
const auto floatSyntax = x3::double_; // also accepts inf, infinity, nan
const auto integerSyntax = -x3::char_("+-") >> +x3::digit;
// A decimal number's syntax alone, whatever its size: Spirit's double_
// fails on one past double's range (1e99999), which is out of range, not
// "not a number".
const auto decimalSyntax = -x3::char_("+-") >>
                           ((+x3::digit >> -('.' >> *x3::digit)) | ('.' >> +x3::digit)) >>
                           -(x3::char_("eE") >> -x3::char_("+-") >> +x3::digit);
const auto inputName = (x3::alpha | x3::lit('_')) >> *(x3::alnum | x3::lit('_') | x3::lit('.'));

bool matchesWhole(llvm::StringRef text, const auto &parser) {
  auto first = text.begin();
  return x3::parse(first, text.end(), parser) && first == text.end();
}

/// double -> float rounding to odd: if the value is not exact, force the last
/// bit to 1. Rounding that result to nearest-even in 16 bits then equals a
/// single correct rounding of the double (float keeps more than two extra
/// bits), which a plain double -> float -> half would not always give.
float roundToOddFloat(double value) {
  const float rounded = static_cast<float>(value);
  if (std::isinf(rounded) || static_cast<double>(rounded) == value)
    return rounded;
  uint32_t bits = std::bit_cast<uint32_t>(rounded);
  if ((bits & 1u) == 0) {
    const bool moveAway = std::fabs(value) > std::fabs(static_cast<double>(rounded));
    bits = moveAway ? bits + 1 : bits - 1;
  }
  return std::bit_cast<float>(bits);
}

llvm::Error valueError(size_t index, llvm::StringRef token, const llvm::Twine &why) {
  return llvm::createStringError(std::make_error_code(std::errc::invalid_argument),
                                 "value " + llvm::Twine(index + 1) + " ('" + token + "') " + why);
}

llvm::Error storeValue(Tensor &tensor, int64_t index, size_t tokenIndex, const std::string &token) {
  const DType type = tensor.dtype();
  if (type == DType::Bool) {
    if (token == "true" || token == "1")
      tensor.setInt(index, 1);
    else if (token == "false" || token == "0")
      tensor.setInt(index, 0);
    else
      return valueError(tokenIndex, token, "is not a bool (true, false, 1 or 0)");
    return llvm::Error::success();
  }
  if (isInteger(type)) {
    if (!matchesWhole(token, integerSyntax))
      return valueError(tokenIndex, token, "is not an integer");
    const auto [lo, hi] = integerRange(type);
    int64_t value = 0;
    auto first = token.begin();
    const bool fits = x3::parse(first, token.end(), x3::int64, value) && first == token.end();
    if (!fits || value < lo || value > hi)
      return valueError(tokenIndex, token,
                        "is out of range for " + dtypeName(type) + " [" + llvm::Twine(lo) + ", " +
                            llvm::Twine(hi) + "]");
    tensor.setInt(index, value);
    return llvm::Error::success();
  }
  const bool decimal = matchesWhole(token, decimalSyntax);
  if (!decimal && !matchesWhole(token, floatSyntax))
    return valueError(tokenIndex, token, "is not a number");
  // The grammar checked the syntax; the C library converts, because it
  // rounds correctly and Spirit's own conversion does not promise to.
  const double value = std::strtod(token.c_str(), nullptr);
  const float stored = type == DType::F32 ? std::strtof(token.c_str(), nullptr)
                                          : roundToFloatType(type, roundToOddFloat(value));
  // Infinite from digits (not "inf"): past the dtype's range, or double's.
  if (std::isinf(stored) && !std::isnan(value) && (decimal || !std::isinf(value)))
    return valueError(tokenIndex, token, "is out of range for " + dtypeName(type));
  tensor.setFloat(index, stored);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<Tensor> parseTensorLiteral(llvm::StringRef text) {
  auto first = text.begin();
  const auto last = text.end();
  std::vector<std::string> dims;
  std::string dtypeWord;
  // "2x3x" then "f32" then "=": the dimension list backtracks at the first
  // element that is not "<digits>x", which leaves the dtype. Digits, not
  // int64: a dimension too large for 64 bits is said to be, not read as
  // part of a dtype's name.
  if (!x3::parse(first, last, *(x3::raw[-x3::lit('-') >> +x3::digit] >> 'x'), dims) ||
      !x3::parse(first, last, +x3::alnum >> '=', dtypeWord))
    return llvm::createStringError(std::make_error_code(std::errc::invalid_argument),
                                   "expected a type such as 2x3xf32= or f32= before the "
                                   "values");
  std::vector<int64_t> shape;
  for (const std::string &d : dims) {
    int64_t n = 0;
    if (llvm::StringRef(d).getAsInteger(10, n))
      return llvm::createStringError(std::make_error_code(std::errc::value_too_large),
                                     "dimension " + d + " is too large");
    shape.push_back(n);
  }
  std::optional<DType> type = parseDTypeName(dtypeWord);
  if (!type)
    return llvm::createStringError(std::make_error_code(std::errc::invalid_argument),
                                   "unknown dtype '" + dtypeWord + "'; expected one of " +
                                       allDTypeNames());
  llvm::Expected<int64_t> count = checkedElementCount(shape, *type);
  if (!count)
    return count.takeError();
  if (*count * dtypeSize(*type) > kMaxLiteralBytes)
    return llvm::createStringError(std::make_error_code(std::errc::value_too_large),
                                   typeString(*type, shape) +
                                       " is too large for a literal; use a .npy file");

  std::vector<std::string> tokens;
  if (!x3::phrase_parse(first, last, *valueToken, separator, tokens) || first != last)
    return llvm::createStringError(std::make_error_code(std::errc::invalid_argument),
                                   "cannot parse the values");
  const bool splat = tokens.size() == 1 && *count != 1;
  if (!splat && static_cast<int64_t>(tokens.size()) != *count)
    return llvm::createStringError(
        std::make_error_code(std::errc::invalid_argument),
        "expected " + llvm::Twine(*count) + " values for " + typeString(*type, shape) +
            " (or 1 to fill every element), got " + llvm::Twine(tokens.size()));

  Tensor tensor(*type, std::move(shape));
  if (splat) {
    if (*count == 0)
      return tensor;
    if (llvm::Error error = storeValue(tensor, 0, 0, tokens[0]))
      return error;
    // Copy the first element's bytes instead of converting again.
    const unsigned size = dtypeSize(*type);
    llvm::MutableArrayRef<uint8_t> bytes = tensor.bytes();
    for (size_t offset = size; offset < bytes.size(); offset += size)
      std::copy_n(bytes.begin(), size, bytes.begin() + offset);
    return tensor;
  }
  for (size_t i = 0; i < tokens.size(); ++i)
    if (llvm::Error error = storeValue(tensor, static_cast<int64_t>(i), i, tokens[i]))
      return error;
  return tensor;
}

llvm::Expected<NamedInput> parseInputArgument(llvm::StringRef argument) {
  auto first = argument.begin();
  const bool named = x3::parse(first, argument.end(), inputName);
  const std::string name(argument.begin(), first);
  if (!named || !x3::parse(first, argument.end(), x3::lit('=')))
    return llvm::createStringError(std::make_error_code(std::errc::invalid_argument),
                                   "input '" + argument +
                                       "': expected NAME=FILE.npy or NAME=TYPE=VALUES, e.g. "
                                       "x=2x3xf32=1,2,3,4,5,6");
  const llvm::StringRef rest(first, argument.end() - first);
  // A literal starts with "<dims x>*<word>="; anything else is a file path.
  auto probe = rest.begin();
  const bool isLiteral = x3::parse(probe, rest.end(), *(x3::int64 >> 'x') >> +x3::alnum >> '=');
  llvm::Expected<Tensor> tensor = isLiteral ? parseTensorLiteral(rest) : readNpyFile(rest);
  if (!tensor) // the code passes through: an unreadable file is the command line's error
    return detail::prefixError("input '" + name + "'", tensor.takeError());
  return NamedInput{std::move(name), std::move(*tensor)};
}

} // namespace lpu::tensor
