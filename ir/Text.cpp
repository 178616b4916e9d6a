#include "ir/Text.h"

#include "support/Tensor.h"

#include <boost/spirit/home/x3.hpp>
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/Support/Format.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <limits>

namespace lpu::ir {

namespace x3 = boost::spirit::x3;

namespace {

// ---- printing -------------------------------------------------------------------

constexpr uint64_t kCanonicalNaN = std::bit_cast<uint64_t>(std::numeric_limits<double>::quiet_NaN());

bool isIdentifier(llvm::StringRef s) {
  if (s.empty() || !(llvm::isAlpha(s[0]) || s[0] == '_'))
    return false;
  return llvm::all_of(s, [](char c) { return llvm::isAlnum(c) || c == '_' || c == '.'; });
}

void printString(llvm::StringRef s, llvm::raw_ostream &os) {
  os << '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      os << '\\' << c;
    else if (c == '\n')
      os << "\\n";
    else if (c == '\t')
      os << "\\t";
    else if (c < 0x20 || c == 0x7f)
      os << '\\' << llvm::format_hex_no_prefix(c, 2, /*Upper=*/true);
    else
      os << c;
  }
  os << '"';
}

/// Identifiers as they are, anything else quoted.
void printName(llvm::StringRef s, llvm::raw_ostream &os) {
  if (isIdentifier(s))
    os << s;
  else
    printString(s, os);
}

/// The shortest text that reads back to the same bits. A float always shows
/// a '.', an exponent, `inf` or `nan`, so it never reads back as an integer.
std::string formatFloat(double v) {
  if (std::isnan(v)) {
    uint64_t bits = std::bit_cast<uint64_t>(v);
    if (bits == kCanonicalNaN)
      return "nan";
    std::string hex;
    llvm::raw_string_ostream(hex) << llvm::format_hex(bits, 18);
    return "nan(" + hex + ")";
  }
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

void printAttr(const Attr &a, llvm::raw_ostream &os) {
  std::visit(
      [&](const auto &v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          os << (v ? "true" : "false");
        } else if constexpr (std::is_same_v<T, int64_t>) {
          os << v;
        } else if constexpr (std::is_same_v<T, double>) {
          os << formatFloat(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          printString(v, os);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          os << '[';
          for (size_t i = 0; i < v.size(); ++i)
            os << (i ? ", " : "") << v[i];
          os << ']';
        } else {
          os << '[';
          for (size_t i = 0; i < v.size(); ++i) {
            if (i)
              os << ", ";
            printString(v[i], os);
          }
          os << ']';
        }
      },
      a);
}

void printLoc(const Location &loc, llvm::raw_ostream &os) {
  if (!loc.known()) {
    os << "loc(unknown)";
    return;
  }
  os << "loc(";
  printString(loc.file, os);
  os << ':' << loc.line << ':' << loc.col << ')';
}

} // namespace

std::string attrToString(const Attr &a) {
  std::string out;
  llvm::raw_string_ostream os(out);
  printAttr(a, os);
  return os.str();
}

void print(const Function &fn, llvm::raw_ostream &os, const PrintOptions &options) {
  os << "func @";
  printName(fn.name(), os);
  if (!fn.bucket().empty()) {
    os << '<';
    for (size_t i = 0; i < fn.bucket().size(); ++i) {
      if (i)
        os << ", ";
      printName(fn.bucket()[i].first, os);
      os << " = " << fn.bucket()[i].second;
    }
    os << '>';
  }
  os << " {\n";
  llvm::DenseMap<const Op *, size_t> number;
  for (size_t i = 0; i < fn.ops().size(); ++i)
    number[fn.ops()[i].get()] = i;
  for (const auto &op : fn.ops()) {
    os << "  ";
    bool isReturn = op->kind() == OpKind::Return;
    if (!isReturn)
      os << '%' << number[op.get()] << " = ";
    os << mnemonic(op->kind());
    for (size_t i = 0; i < op->operands().size(); ++i) {
      os << (i ? ", %" : " %");
      // An operand from outside the function cannot be named; the parser
      // rejects the placeholder.
      auto it = number.find(op->operand(i));
      if (it != number.end())
        os << it->second;
      else
        os << '?';
    }
    if (!op->attrs().empty()) {
      os << " {";
      for (size_t i = 0; i < op->attrs().size(); ++i) {
        if (i)
          os << ", ";
        printName(op->attrs()[i].first, os);
        os << " = ";
        printAttr(op->attrs()[i].second, os);
      }
      os << '}';
    }
    if (!isReturn)
      os << " : " << op->type().str();
    if (options.locations) {
      os << ' ';
      printLoc(op->loc(), os);
    }
    os << '\n';
  }
  os << "}\n";
}

void print(const Module &module, llvm::raw_ostream &os, const PrintOptions &options) {
  for (size_t i = 0; i < module.functions.size(); ++i) {
    if (i)
      os << '\n';
    print(*module.functions[i], os, options);
  }
}

std::string toString(const Function &fn, const PrintOptions &options) {
  std::string out;
  llvm::raw_string_ostream os(out);
  print(fn, os, options);
  return out;
}

// ---- parsing --------------------------------------------------------------------

namespace {

// Dimensions beyond this are surely a typo, and keeping them small keeps
// every size computation downstream far from overflow.
constexpr int64_t kMaxDim = int64_t(1) << 40;
constexpr int64_t kMaxElements = tensor::kMaxShapeElements;

// Not x3::digit: it hands bytes above 0x7f to std::isdigit as negative ints.
const auto digit = x3::char_('0', '9');

/// A recursive-descent reader over the text; X3 recognises the tokens.
/// Whitespace and `//` comments may appear between tokens; an op ends at the
/// end of its line. The first error stops it.
class Parser {
public:
  Parser(llvm::StringRef text, llvm::StringRef bufferName)
      : begin_(text.begin()), p_(text.begin()), end_(text.end()), bufferName_(bufferName) {}

  llvm::Expected<std::unique_ptr<Module>> run() {
    auto module = std::make_unique<Module>();
    while (true) {
      skip();
      if (p_ == end_)
        break;
      if (!parseFunction(*module))
        return error();
    }
    return module;
  }

private:
  const char *begin_, *p_, *end_;
  llvm::StringRef bufferName_;
  std::string message_;
  const char *errorAt_ = nullptr;
  /// Inside an op, tokens never cross a line end.
  bool inOp_ = false;

  bool fail(const char *at, const llvm::Twine &message) {
    if (!errorAt_) {
      errorAt_ = at;
      message_ = message.str();
    }
    return false;
  }

  llvm::Error error() const {
    unsigned line = 1;
    const char *lineStart = begin_;
    for (const char *c = begin_; c < errorAt_; ++c)
      if (*c == '\n') {
        ++line;
        lineStart = c + 1;
      }
    unsigned col = unsigned(errorAt_ - lineStart) + 1;
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   bufferName_ + ":" + llvm::Twine(line) + ":" +
                                       llvm::Twine(col) + ": error: " + message_);
  }

  /// What is at `at`, for "found ..." in messages: a word, a character or the
  /// end of the input, with unprintable bytes escaped.
  std::string found(const char *at) const {
    if (at >= end_)
      return "end of input";
    if (*at == '\n')
      return "end of line";
    std::string word;
    const char *c = at;
    bool alnum = llvm::isAlnum(*c) || *c == '_' || *c == '%' || *c == '@' || *c == '-';
    do {
      unsigned char ch = *c;
      if (ch >= 0x20 && ch < 0x7f && ch != '\'')
        word += char(ch);
      else {
        std::string hex;
        llvm::raw_string_ostream(hex) << "\\x" << llvm::format_hex_no_prefix(ch, 2);
        word += hex;
      }
      ++c;
    } while (alnum && c < end_ && word.size() < 24 &&
             (llvm::isAlnum(*c) || *c == '_' || *c == '.'));
    return "'" + word + "'";
  }

  bool expected(const llvm::Twine &what) {
    skip();
    return fail(p_, "expected " + what + ", found " + found(p_));
  }

  void skipInline() {
    while (p_ < end_) {
      if (*p_ == ' ' || *p_ == '\t' || *p_ == '\r')
        ++p_;
      else if (*p_ == '/' && p_ + 1 < end_ && p_[1] == '/')
        while (p_ < end_ && *p_ != '\n')
          ++p_;
      else
        break;
    }
  }

  void skip() {
    while (true) {
      skipInline();
      if (!inOp_ && p_ < end_ && *p_ == '\n')
        ++p_;
      else
        break;
    }
  }

  bool peek(char c) {
    skip();
    return p_ < end_ && *p_ == c;
  }

  bool consume(char c) {
    if (!peek(c))
      return false;
    ++p_;
    return true;
  }

  bool expect(char c) {
    if (consume(c))
      return true;
    return expected(llvm::Twine("'") + llvm::Twine(c) + "'");
  }

  /// [A-Za-z_][A-Za-z0-9_.]*
  std::optional<llvm::StringRef> identifier() {
    skip();
    const char *first = p_;
    auto rule = x3::raw[x3::char_("a-zA-Z_") >> *x3::char_("a-zA-Z0-9_.")];
    if (!x3::parse(p_, end_, rule)) {
      p_ = first;
      return std::nullopt;
    }
    return llvm::StringRef(first, size_t(p_ - first));
  }

  bool keyword(llvm::StringRef word) {
    const char *save = p_;
    auto id = identifier();
    if (id && *id == word)
      return true;
    p_ = save;
    return false;
  }

  /// A quoted string with the printer's escapes: \" \\ \n \t \HH.
  bool string(std::string &out) {
    skip();
    if (p_ >= end_ || *p_ != '"')
      return expected("a string");
    const char *open = p_++;
    out.clear();
    while (true) {
      if (p_ >= end_ || *p_ == '\n')
        return fail(open, "unterminated string");
      char c = *p_++;
      if (c == '"')
        return true;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= end_)
        return fail(open, "unterminated string");
      char e = *p_;
      if (e == '"' || e == '\\') {
        out += e;
        ++p_;
      } else if (e == 'n') {
        out += '\n';
        ++p_;
      } else if (e == 't') {
        out += '\t';
        ++p_;
      } else if (p_ + 1 < end_ && llvm::isHexDigit(e) && llvm::isHexDigit(p_[1])) {
        out += char(llvm::hexFromNibbles(e, p_[1]));
        p_ += 2;
      } else {
        return fail(p_ - 1, "unknown escape in string");
      }
    }
  }

  /// An identifier or a quoted string (names that are not identifiers).
  bool name(std::string &out, const llvm::Twine &what) {
    skip();
    if (p_ < end_ && *p_ == '"')
      return string(out);
    if (auto id = identifier()) {
      out = id->str();
      return true;
    }
    return expected(what);
  }

  /// A decimal integer token; fails (without consuming) when the token is a
  /// float.
  bool integer(int64_t &out, const llvm::Twine &what) {
    skip();
    const char *first = p_;
    auto rule = x3::raw[-x3::lit('-') >> +digit];
    const char *it = p_;
    if (!x3::parse(it, end_, rule) ||
        (it < end_ && (*it == '.' || *it == 'e' || *it == 'E' || llvm::isAlpha(*it))))
      return expected(what);
    auto res = std::from_chars(first, it, out);
    if (res.ec != std::errc() || res.ptr != it)
      return fail(first, "integer " + llvm::StringRef(first, size_t(it - first)) +
                             " is out of range");
    p_ = it;
    return true;
  }

  /// An attribute value: true, false, an integer, a float (with '.' or an
  /// exponent, or inf, -inf, nan, nan(0xBITS)), a string or a list.
  bool attrValue(Attr &out) {
    skip();
    const char *first = p_;
    if (p_ < end_ && *p_ == '"') {
      std::string s;
      if (!string(s))
        return false;
      out = std::move(s);
      return true;
    }
    if (consume('['))
      return list(out);
    if (keyword("true")) {
      out = true;
      return true;
    }
    if (keyword("false")) {
      out = false;
      return true;
    }
    bool negative = p_ < end_ && *p_ == '-';
    const char *word = p_ + (negative ? 1 : 0);
    if (llvm::StringRef(word, size_t(end_ - word)).startswith("inf")) {
      p_ = word + 3;
      out = negative ? -std::numeric_limits<double>::infinity()
                     : std::numeric_limits<double>::infinity();
      return checkWordEnd(first);
    }
    if (!negative && llvm::StringRef(p_, size_t(end_ - p_)).startswith("nan")) {
      p_ += 3;
      uint64_t bits = kCanonicalNaN;
      if (p_ < end_ && *p_ == '(') {
        const char *it = p_ + 1;
        if (!x3::parse(it, end_, x3::lit("0x") >> x3::uint_parser<uint64_t, 16>() >> ')', bits))
          return fail(p_, "expected nan(0xBITS)");
        p_ = it;
        if (!std::isnan(std::bit_cast<double>(bits)))
          return fail(first, "nan(...) bits are not a NaN");
      }
      out = std::bit_cast<double>(bits);
      return checkWordEnd(first);
    }
    const char *it = p_;
    auto number = x3::raw[-x3::lit('-') >> +digit >> -(x3::lit('.') >> *digit) >>
                          -(x3::char_("eE") >> -x3::char_("+-") >> +digit)];
    if (!x3::parse(it, end_, number))
      return expected("an attribute value");
    llvm::StringRef token(first, size_t(it - first));
    if (token.find_first_of(".eE") == llvm::StringRef::npos) {
      int64_t v = 0;
      if (!integer(v, "an integer"))
        return false;
      out = v;
      return true;
    }
    double v = 0;
    auto res = std::from_chars(first, it, v);
    if (res.ec != std::errc() || res.ptr != it)
      return fail(first, "float " + token + " is out of range");
    p_ = it;
    out = v;
    return checkWordEnd(first);
  }

  bool checkWordEnd(const char *first) {
    if (p_ < end_ && (llvm::isAlnum(*p_) || *p_ == '_' || *p_ == '.'))
      return fail(first, "bad attribute value");
    return true;
  }

  /// After '[': `]`, integers or strings.
  bool list(Attr &out) {
    if (consume(']')) {
      out = std::vector<int64_t>{};
      return true;
    }
    if (peek('"')) {
      std::vector<std::string> v;
      do {
        if (!string(v.emplace_back()))
          return false;
      } while (consume(','));
      out = std::move(v);
      return consume(']') || expected("',' or ']'");
    }
    std::vector<int64_t> v;
    do {
      if (!integer(v.emplace_back(), "an integer or a string"))
        return false;
    } while (consume(','));
    out = std::move(v);
    return consume(']') || expected("',' or ']'");
  }

  bool attrDict(std::vector<std::pair<std::string, Attr>> &attrs) {
    // after '{'
    if (consume('}'))
      return true;
    do {
      skip();
      const char *at = p_;
      std::string key;
      if (!name(key, "an attribute name"))
        return false;
      for (const auto &[k, v] : attrs)
        if (k == key)
          return fail(at, "attribute '" + key + "' given twice");
      if (!expect('='))
        return false;
      Attr value;
      if (!attrValue(value))
        return false;
      attrs.emplace_back(std::move(key), std::move(value));
    } while (consume(','));
    return consume('}') || expected("',' or '}'");
  }

  /// `f16[1, 128]`, `f32[]`.
  bool type(Type &out) {
    skip();
    const char *at = p_;
    auto id = identifier();
    if (!id) {
      return expected("a type such as f32[2, 3]");
    }
    auto dtype = tensor::parseDTypeName(*id);
    if (!dtype)
      return fail(at, "unknown dtype '" + *id + "' (expected one of " +
                          tensor::allDTypeNames() + ")");
    out.dtype = *dtype;
    out.shape.clear();
    if (!expect('['))
      return false;
    int64_t elements = 1;
    if (!consume(']')) {
      do {
        skip();
        const char *dimAt = p_;
        int64_t d = 0;
        if (!integer(d, "a dimension"))
          return false;
        if (d < 0)
          return fail(dimAt, "negative dimension " + llvm::Twine(d));
        if (d > kMaxDim)
          return fail(dimAt, "dimension " + llvm::Twine(d) + " is too large");
        out.shape.push_back(d);
        if (d && elements > kMaxElements / d)
          return fail(at, "type has too many elements");
        elements *= d;
      } while (consume(','));
      if (!consume(']'))
        return expected("',' or ']'");
    }
    return true;
  }

  bool location(Location &out) {
    if (!expect('('))
      return false;
    if (keyword("unknown")) {
      out = Location{};
      return expect(')');
    }
    if (!peek('"'))
      return expected("a quoted file name or 'unknown'");
    if (!string(out.file) || !expect(':'))
      return false;
    int64_t line = 0, col = 0;
    skip();
    const char *at = p_;
    if (!integer(line, "a line number") || !expect(':'))
      return false;
    skip();
    const char *colAt = p_;
    if (!integer(col, "a column number"))
      return false;
    if (line < 0 || line > std::numeric_limits<unsigned>::max())
      return fail(at, "bad line number");
    if (col < 0 || col > std::numeric_limits<unsigned>::max())
      return fail(colAt, "bad column number");
    out.line = unsigned(line);
    out.col = unsigned(col);
    if (out.file.empty())
      return fail(at, "empty file name in a location (use loc(unknown))");
    return expect(')');
  }

  /// `%name`
  bool valueName(std::string &out) {
    skip();
    if (p_ >= end_ || *p_ != '%')
      return expected("a value such as %0");
    const char *it = p_ + 1;
    auto rule = x3::raw[+x3::char_("a-zA-Z0-9_.")];
    if (!x3::parse(it, end_, rule))
      return fail(p_, "expected a value name after '%'");
    out.assign(p_ + 1, it);
    p_ = it;
    return true;
  }

  bool parseFunction(Module &module) {
    const char *at = p_;
    if (!keyword("func"))
      return expected("'func'");
    if (!expect('@'))
      return false;
    std::string fnName;
    if (!name(fnName, "a function name"))
      return false;
    std::vector<std::pair<std::string, int64_t>> bucket;
    if (consume('<')) {
      do {
        std::string size;
        skip();
        const char *sizeAt = p_;
        if (!name(size, "a bucket size name"))
          return false;
        for (const auto &[k, v] : bucket)
          if (k == size)
            return fail(sizeAt, "bucket size '" + size + "' given twice");
        int64_t value = 0;
        if (!expect('=') || !integer(value, "an integer"))
          return false;
        bucket.emplace_back(std::move(size), value);
      } while (consume(','));
      if (!consume('>'))
        return expected("',' or '>'");
    }
    if (module.lookup(fnName, bucket))
      return fail(at, "redefinition of func @" + fnName);
    if (!expect('{'))
      return false;
    auto fn = std::make_unique<Function>(fnName, bucket);
    llvm::StringMap<Op *> values;
    while (true) {
      skip();
      if (p_ >= end_)
        return fail(p_, "expected '}' to close func @" + fnName);
      if (consume('}'))
        break;
      if (!parseOp(*fn, values))
        return false;
    }
    module.functions.push_back(std::move(fn));
    return true;
  }

  bool parseOp(Function &fn, llvm::StringMap<Op *> &values) {
    skip();
    inOp_ = true;
    bool ok = parseOpLine(fn, values);
    inOp_ = false;
    return ok;
  }

  bool parseOpLine(Function &fn, llvm::StringMap<Op *> &values) {
    std::string result;
    const char *resultAt = p_;
    if (p_ < end_ && *p_ == '%') {
      if (!valueName(result))
        return false;
      if (values.count(result))
        return fail(resultAt, "redefinition of %" + result);
      if (!expect('='))
        return false;
    }
    skip();
    const char *opAt = p_;
    auto word = identifier();
    if (!word)
      return result.empty() ? expected("an op or '}'") : expected("an op name");
    auto kind = parseMnemonic(*word);
    if (!kind)
      return fail(opAt, "unknown op '" + *word + "'");
    bool isReturn = *kind == OpKind::Return;
    if (isReturn && !result.empty())
      return fail(resultAt, "'return' has no result");
    if (!isReturn && result.empty())
      return fail(opAt, "'" + *word + "' needs a result (%N = " + *word + " ...)");
    std::vector<Op *> operands;
    if (peek('%')) {
      do {
        skip();
        const char *at = p_;
        std::string operand;
        if (!valueName(operand))
          return false;
        auto it = values.find(operand);
        if (it == values.end())
          return fail(at, "undefined value %" + operand);
        operands.push_back(it->second);
      } while (consume(','));
    }
    int count = operandCount(*kind);
    if (count >= 0 && operands.size() != size_t(count))
      return fail(opAt, "'" + *word + "' takes " + llvm::Twine(count) + " operand" +
                            (count == 1 ? "" : "s") + ", got " + llvm::Twine(operands.size()));
    std::vector<std::pair<std::string, Attr>> attrs;
    if (consume('{') && !attrDict(attrs))
      return false;
    Type ty;
    if (!isReturn && (!expect(':') || !type(ty)))
      return false;
    Location loc;
    if (keyword("loc") && !location(loc))
      return false;
    skipInline();
    if (p_ < end_ && *p_ != '\n')
      return fail(p_, "unexpected " + found(p_) + " after the op");
    Op *op = fn.append(*kind, std::move(ty), std::move(operands), std::move(loc));
    for (auto &[key, value] : attrs)
      op->setAttr(key, std::move(value));
    if (!isReturn)
      values[result] = op;
    return true;
  }
};

} // namespace

llvm::Expected<std::unique_ptr<Module>> parseModule(llvm::StringRef text,
                                                     llvm::StringRef bufferName) {
  return Parser(text, bufferName).run();
}

} // namespace lpu::ir
