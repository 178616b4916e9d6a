// The size normal form (docs/language.md, "Sizes"): a size is a polynomial with
// integer coefficients over atoms. An atom is a size name, or one of `/`,
// `%`, `min`, `max`, `floordiv`, `ceildiv` applied to two normalised sizes
// that could not be simplified away. Two sizes are equal exactly when their
// normal forms are equal, so `n + m` == `m + n` and `1 + n - 1` == `n`.
//
// Sizes are immutable values; every operation returns a new normal form.
// Division by a constant zero is kept as an atom: the checker reports it
// where the user wrote it, and evaluation refuses it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lpu::sizes {

struct Atom;
using AtomPtr = std::shared_ptr<const Atom>;

enum class AtomKind { Name, Div, Mod, Min, Max, FloorDiv, CeilDiv };

class Size {
public:
  /// The zero polynomial.
  Size() = default;
  static Size constant(int64_t value);
  static Size name(const std::string &name);

  bool isConstant() const;
  /// The value when the size is a constant.
  std::optional<int64_t> constantValue() const;
  bool isZero() const { return terms_.empty(); }
  /// A single size name with coefficient 1 (`D`), as generic inference binds.
  std::optional<std::string> asName() const;

  /// A canonical text key: equal keys exactly when equal normal forms.
  const std::string &key() const { return key_; }
  /// The form a user reads, e.g. `H + 2 * P - K`, `floordiv(H - 1, S) + 1`.
  std::string str() const;

  friend bool operator==(const Size &a, const Size &b) { return a.key_ == b.key_; }
  friend bool operator!=(const Size &a, const Size &b) { return a.key_ != b.key_; }
  friend bool operator<(const Size &a, const Size &b) { return a.key_ < b.key_; }

  friend Size operator+(const Size &a, const Size &b);
  friend Size operator-(const Size &a, const Size &b);
  friend Size operator*(const Size &a, const Size &b);
  Size operator-() const;

  /// Replaces names by sizes and normalises again. Names not in `binding`
  /// stay as they are.
  Size substitute(const std::function<std::optional<Size>(const std::string &)> &binding) const;
  /// Every size name the form mentions (inside atoms too).
  void collectNames(std::vector<std::string> &out) const;

  /// One term: coefficient times a product of atoms (sorted; a repeated
  /// atom is a power). The constant term has no atoms.
  struct Term {
    std::vector<AtomPtr> atoms;
    int64_t coeff = 0;
  };
  const std::map<std::string, Term> &terms() const { return terms_; }

private:
  void addTerm(const std::string &monoKey, const std::vector<AtomPtr> &atoms, int64_t coeff);
  void rekey();
  static Size fromAtom(AtomPtr atom);
  friend Size makeAtom(AtomKind kind, const Size &a, const Size &b);
  friend std::optional<Size> exactQuotient(const Size &a, const Size &b);

  std::map<std::string, Term> terms_; // by monomial key; "" is the constant
  std::string key_ = "0";
};

struct Atom {
  AtomKind kind;
  std::string name; // AtomKind::Name
  Size lhs, rhs;    // the operands otherwise
  std::string key;
};

/// Exact division `a / b`: the quotient when it is provable from the forms
/// (constants, or b divides every term), otherwise the atom `a / b`.
Size div(const Size &a, const Size &b);
/// The quotient when b provably divides a, nothing otherwise.
std::optional<Size> exactQuotient(const Size &a, const Size &b);
Size mod(const Size &a, const Size &b);
Size min(const Size &a, const Size &b);
Size max(const Size &a, const Size &b);
Size floordiv(const Size &a, const Size &b);
Size ceildiv(const Size &a, const Size &b);

/// The value of a size once every name has a value; nothing when a name is
/// unbound, a divisor is zero or an exact division is not exact.
std::optional<int64_t> evaluate(const Size &s, const std::map<std::string, int64_t> &values);

} // namespace lpu::sizes
