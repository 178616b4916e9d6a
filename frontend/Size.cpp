#include "frontend/Size.h"

#include <algorithm>

namespace lpu::sizes {

namespace {

// Coefficients saturate instead of overflowing: a size past 2^63 is far
// beyond any memory, and the SRAM check reports it as such.
int64_t satAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return a > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return (a > 0) == (b > 0) ? INT64_MAX : INT64_MIN;
  return r;
}

int64_t floorDiv(int64_t a, int64_t b) {
  if (b == -1)
    return satMul(a, -1);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}
int64_t ceilDiv(int64_t a, int64_t b) { return satMul(floorDiv(satMul(a, -1), b), -1); }
int64_t floorMod(int64_t a, int64_t b) {
  if (b == -1)
    return 0;
  return a - floorDiv(a, b) * b;
}

std::string monoKey(const std::vector<AtomPtr> &atoms) {
  std::string k;
  for (const AtomPtr &a : atoms) {
    if (!k.empty())
      k += '*';
    k += a->key;
  }
  return k;
}

const char *atomSpelling(AtomKind kind) {
  switch (kind) {
  case AtomKind::Name: return "";
  case AtomKind::Div: return "/";
  case AtomKind::Mod: return "%";
  case AtomKind::Min: return "min";
  case AtomKind::Max: return "max";
  case AtomKind::FloorDiv: return "floordiv";
  case AtomKind::CeilDiv: return "ceildiv";
  }
  return "?";
}

/// An operand of `/` or `%` needs parentheses unless it is one name or one
/// positive constant.
std::string operand(const Size &s) {
  const auto &t = s.terms();
  bool simple = t.size() == 0 ||
                (t.size() == 1 && t.begin()->second.coeff > 0 &&
                 (t.begin()->second.atoms.empty() ||
                  (t.begin()->second.coeff == 1 && t.begin()->second.atoms.size() == 1 &&
                   t.begin()->second.atoms[0]->kind != AtomKind::Div &&
                   t.begin()->second.atoms[0]->kind != AtomKind::Mod)));
  return simple ? s.str() : "(" + s.str() + ")";
}

std::string atomText(const Atom &a) {
  switch (a.kind) {
  case AtomKind::Name: return a.name;
  case AtomKind::Div:
  case AtomKind::Mod:
    return operand(a.lhs) + " " + atomSpelling(a.kind) + " " + operand(a.rhs);
  default:
    return std::string(atomSpelling(a.kind)) + "(" + a.lhs.str() + ", " + a.rhs.str() + ")";
  }
}

} // namespace

Size Size::constant(int64_t value) {
  Size s;
  if (value != 0)
    s.terms_[""] = Term{{}, value};
  s.rekey();
  return s;
}

Size Size::name(const std::string &name) {
  auto atom = std::make_shared<Atom>();
  atom->kind = AtomKind::Name;
  atom->name = name;
  atom->key = name;
  return fromAtom(atom);
}

Size Size::fromAtom(AtomPtr atom) {
  Size s;
  std::string k = atom->key;
  s.terms_[k] = Term{{std::move(atom)}, 1};
  s.rekey();
  return s;
}

bool Size::isConstant() const {
  return terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty());
}

std::optional<int64_t> Size::constantValue() const {
  if (terms_.empty())
    return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty())
    return terms_.begin()->second.coeff;
  return std::nullopt;
}

std::optional<std::string> Size::asName() const {
  if (terms_.size() != 1)
    return std::nullopt;
  const Term &t = terms_.begin()->second;
  if (t.coeff != 1 || t.atoms.size() != 1 || t.atoms[0]->kind != AtomKind::Name)
    return std::nullopt;
  return t.atoms[0]->name;
}

void Size::addTerm(const std::string &mk, const std::vector<AtomPtr> &atoms, int64_t coeff) {
  if (coeff == 0)
    return;
  auto it = terms_.find(mk);
  if (it == terms_.end()) {
    terms_.emplace(mk, Term{atoms, coeff});
    return;
  }
  it->second.coeff = satAdd(it->second.coeff, coeff);
  if (it->second.coeff == 0)
    terms_.erase(it);
}

void Size::rekey() {
  if (terms_.empty()) {
    key_ = "0";
    return;
  }
  key_.clear();
  for (const auto &[mk, t] : terms_) {
    if (!key_.empty())
      key_ += '+';
    key_ += std::to_string(t.coeff);
    if (!mk.empty())
      key_ += "*" + mk;
  }
}

Size operator+(const Size &a, const Size &b) {
  Size r = a;
  for (const auto &[mk, t] : b.terms_)
    r.addTerm(mk, t.atoms, t.coeff);
  r.rekey();
  return r;
}

Size Size::operator-() const {
  Size r = *this;
  for (auto &[mk, t] : r.terms_)
    t.coeff = satMul(t.coeff, -1);
  r.rekey();
  return r;
}

Size operator-(const Size &a, const Size &b) { return a + (-b); }

Size operator*(const Size &a, const Size &b) {
  Size r;
  for (const auto &[ka, ta] : a.terms_)
    for (const auto &[kb, tb] : b.terms_) {
      std::vector<AtomPtr> atoms = ta.atoms;
      atoms.insert(atoms.end(), tb.atoms.begin(), tb.atoms.end());
      std::sort(atoms.begin(), atoms.end(),
                [](const AtomPtr &x, const AtomPtr &y) { return x->key < y->key; });
      r.addTerm(monoKey(atoms), atoms, satMul(ta.coeff, tb.coeff));
    }
  r.rekey();
  return r;
}

std::string Size::str() const {
  if (terms_.empty())
    return "0";
  // Positive terms first, then negative ones, the constant last among its
  // sign: `H + 2 * P - K + 1` reads as users write sizes.
  std::vector<const Term *> order;
  for (const auto &[mk, t] : terms_)
    if (!mk.empty() && t.coeff > 0)
      order.push_back(&t);
  auto constant = terms_.find("");
  if (constant != terms_.end() && constant->second.coeff > 0)
    order.push_back(&constant->second);
  for (const auto &[mk, t] : terms_)
    if (!mk.empty() && t.coeff < 0)
      order.push_back(&t);
  if (constant != terms_.end() && constant->second.coeff < 0)
    order.push_back(&constant->second);

  std::string out;
  for (const Term *t : order) {
    int64_t c = t->coeff;
    if (out.empty())
      out += c < 0 ? "-" : "";
    else
      out += c < 0 ? " - " : " + ";
    int64_t mag = c < 0 ? -c : c;
    std::string product;
    if (t->atoms.empty() || mag != 1)
      product = std::to_string(mag);
    bool several = t->atoms.size() + (mag != 1 ? 1 : 0) > 1;
    for (const AtomPtr &a : t->atoms) {
      if (!product.empty())
        product += " * ";
      bool paren = several && (a->kind == AtomKind::Div || a->kind == AtomKind::Mod);
      product += paren ? "(" + atomText(*a) + ")" : atomText(*a);
    }
    out += product;
  }
  return out;
}

Size makeAtom(AtomKind kind, const Size &a, const Size &b) {
  auto atom = std::make_shared<Atom>();
  atom->kind = kind;
  atom->lhs = a;
  atom->rhs = b;
  atom->key = std::string(atomSpelling(kind)) + "(" + a.key() + "," + b.key() + ")";
  return Size::fromAtom(atom);
}

std::optional<Size> exactQuotient(const Size &a, const Size &b) {
  if (b.isZero())
    return std::nullopt;
  if (a.isZero())
    return Size();
  if (a == b)
    return Size::constant(1);
  // A one-term divisor divides term by term.
  if (b.terms().size() == 1) {
    const Size::Term &tb = b.terms().begin()->second;
    Size quotient;
    for (const auto &[mk, ta] : a.terms()) {
      if (ta.coeff % tb.coeff != 0)
        return std::nullopt;
      std::vector<AtomPtr> rest = ta.atoms;
      for (const AtomPtr &f : tb.atoms) {
        auto it = std::find_if(rest.begin(), rest.end(),
                               [&](const AtomPtr &x) { return x->key == f->key; });
        if (it == rest.end())
          return std::nullopt;
        rest.erase(it);
      }
      quotient.addTerm(monoKey(rest), rest, ta.coeff / tb.coeff);
    }
    quotient.rekey();
    return quotient;
  }
  // Divide a's first term by b's first term, then check that quotient
  // times b gives back a: this finds every single-term quotient.
  const Size::Term &ta = a.terms().begin()->second;
  const Size::Term &tb = b.terms().begin()->second;
  if (tb.coeff == 0 || ta.coeff % tb.coeff != 0)
    return std::nullopt;
  std::vector<AtomPtr> rest = ta.atoms;
  for (const AtomPtr &f : tb.atoms) {
    auto it = std::find_if(rest.begin(), rest.end(),
                           [&](const AtomPtr &x) { return x->key == f->key; });
    if (it == rest.end())
      return std::nullopt;
    rest.erase(it);
  }
  // Rebuild q as coefficient times the remaining atoms.
  Size quotient = Size::constant(ta.coeff / tb.coeff);
  for (const AtomPtr &r : rest) {
    quotient = quotient * Size::fromAtom(r);
  }
  if (quotient * b == a)
    return quotient;
  return std::nullopt;
}

Size div(const Size &a, const Size &b) {
  if (auto q = exactQuotient(a, b))
    return *q;
  return makeAtom(AtomKind::Div, a, b);
}

/// floordiv and ceildiv: folded when both sizes are numbers, the quotient
/// when it is exact, an atom otherwise.
template <typename Fold>
static Size roundedDiv(const Size &a, const Size &b, AtomKind kind, Fold fold) {
  auto ca = a.constantValue(), cb = b.constantValue();
  if (ca && cb && *cb != 0)
    return Size::constant(fold(*ca, *cb));
  if (auto q = exactQuotient(a, b))
    return *q;
  return makeAtom(kind, a, b);
}

Size floordiv(const Size &a, const Size &b) {
  return roundedDiv(a, b, AtomKind::FloorDiv, [](auto x, auto y) { return floorDiv(x, y); });
}

Size ceildiv(const Size &a, const Size &b) {
  return roundedDiv(a, b, AtomKind::CeilDiv, [](auto x, auto y) { return ceilDiv(x, y); });
}

Size mod(const Size &a, const Size &b) {
  auto ca = a.constantValue(), cb = b.constantValue();
  if (ca && cb && *cb != 0)
    return Size::constant(floorMod(*ca, *cb));
  if (exactQuotient(a, b))
    return Size();
  return makeAtom(AtomKind::Mod, a, b);
}

namespace {
Size minMax(AtomKind kind, const Size &a, const Size &b) {
  if (a == b)
    return a;
  // When the two differ by a constant the smaller one is known.
  if (auto d = (a - b).constantValue()) {
    bool aSmaller = *d < 0;
    return (kind == AtomKind::Min) == aSmaller ? a : b;
  }
  // Commutative: order the operands so min(a, b) == min(b, a).
  return a.key() < b.key() ? makeAtom(kind, a, b) : makeAtom(kind, b, a);
}
} // namespace

Size min(const Size &a, const Size &b) { return minMax(AtomKind::Min, a, b); }
Size max(const Size &a, const Size &b) { return minMax(AtomKind::Max, a, b); }

Size Size::substitute(
    const std::function<std::optional<Size>(const std::string &)> &binding) const {
  Size result;
  for (const auto &[mk, t] : terms_) {
    Size product = Size::constant(t.coeff);
    for (const AtomPtr &a : t.atoms) {
      Size factor;
      if (a->kind == AtomKind::Name) {
        auto bound = binding(a->name);
        factor = bound ? *bound : Size::fromAtom(a);
      } else {
        Size l = a->lhs.substitute(binding), r = a->rhs.substitute(binding);
        switch (a->kind) {
        case AtomKind::Div: factor = div(l, r); break;
        case AtomKind::Mod: factor = mod(l, r); break;
        case AtomKind::Min: factor = min(l, r); break;
        case AtomKind::Max: factor = max(l, r); break;
        case AtomKind::FloorDiv: factor = floordiv(l, r); break;
        case AtomKind::CeilDiv: factor = ceildiv(l, r); break;
        case AtomKind::Name: break;
        }
      }
      product = product * factor;
    }
    result = result + product;
  }
  return result;
}

void Size::collectNames(std::vector<std::string> &out) const {
  for (const auto &[mk, t] : terms_)
    for (const AtomPtr &a : t.atoms) {
      if (a->kind == AtomKind::Name) {
        if (std::find(out.begin(), out.end(), a->name) == out.end())
          out.push_back(a->name);
      } else {
        a->lhs.collectNames(out);
        a->rhs.collectNames(out);
      }
    }
}

std::optional<int64_t> evaluate(const Size &s, const std::map<std::string, int64_t> &values) {
  int64_t total = 0;
  for (const auto &[mk, t] : s.terms()) {
    int64_t product = t.coeff;
    for (const AtomPtr &a : t.atoms) {
      int64_t v;
      if (a->kind == AtomKind::Name) {
        auto it = values.find(a->name);
        if (it == values.end())
          return std::nullopt;
        v = it->second;
      } else {
        auto l = evaluate(a->lhs, values), r = evaluate(a->rhs, values);
        if (!l || !r || *r == 0)
          return std::nullopt;
        switch (a->kind) {
        case AtomKind::Div:
          if (*l % *r != 0)
            return std::nullopt;
          v = *l / *r;
          break;
        case AtomKind::Mod: v = floorMod(*l, *r); break;
        case AtomKind::Min: v = std::min(*l, *r); break;
        case AtomKind::Max: v = std::max(*l, *r); break;
        case AtomKind::FloorDiv: v = floorDiv(*l, *r); break;
        case AtomKind::CeilDiv: v = ceilDiv(*l, *r); break;
        default: return std::nullopt;
        }
      }
      product = satMul(product, v);
    }
    total = satAdd(total, product);
  }
  return total;
}

} // namespace lpu::sizes
