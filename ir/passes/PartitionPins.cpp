#include "ir/passes/PartitionPins.h"

#include <llvm/Support/GlobPattern.h>

#include <optional>
#include <vector>

namespace lpu::ir {

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

llvm::Expected<PartitionPin> parsePartitionPin(llvm::StringRef text) {
  PartitionPin pin;
  pin.text = text.str();
  auto [glob, kind] = text.rsplit('=');
  if (glob.empty() || kind.empty() || !text.contains('='))
    return error("expected GLOB=KIND (the kinds: whole, split, stage, chip:N)");
  if (auto bad = llvm::GlobPattern::create(glob); !bad)
    return error("bad glob: " + llvm::toString(bad.takeError()));
  pin.glob = glob.str();
  if (kind == "whole")
    pin.action = PartitionPin::Action::Whole;
  else if (kind == "split")
    pin.action = PartitionPin::Action::Split;
  else if (kind == "stage")
    pin.action = PartitionPin::Action::Stage;
  else if (kind.consume_front("chip:") && !kind.getAsInteger(10, pin.chip))
    pin.action = PartitionPin::Action::Chip;
  else
    return error("unknown kind '" + text.rsplit('=').second +
                 "' (the kinds: whole, split, stage, chip:N)");
  return pin;
}

bool pinMatches(const PartitionPin &pin, llvm::StringRef path) {
  // LLVM 14's GlobPattern::match tries every split of the text at every
  // '*', exponential in the stars ('**********zz' took 16 s, 200 stars
  // never ended). Its tokens are kept, each matching one character (a
  // bracket expression is matched by GlobPattern itself, so it means
  // what GlobPattern means), and the text is matched greedily, going back
  // only to the last '*': O(pattern x text).
  struct Token {
    enum { Star, Any, Char, Class } kind;
    char c = 0;
    std::optional<llvm::GlobPattern> set;
  };
  std::vector<Token> tokens;
  llvm::StringRef glob = pin.glob;
  for (size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] == '*') {
      if (tokens.empty() || tokens.back().kind != Token::Star)
        tokens.push_back({Token::Star, 0, std::nullopt});
    } else if (glob[i] == '?') {
      tokens.push_back({Token::Any, 0, std::nullopt});
    } else if (glob[i] == '\\' && i + 1 < glob.size()) {
      tokens.push_back({Token::Char, glob[++i], std::nullopt});
    } else if (glob[i] == '[') {
      const size_t end = glob.find(']', i + 2);
      if (end == llvm::StringRef::npos)
        return false; // refused by parsePartitionPin
      auto set = llvm::GlobPattern::create(glob.slice(i, end + 1));
      if (!set) {
        llvm::consumeError(set.takeError());
        return false;
      }
      tokens.push_back({Token::Class, 0, std::move(*set)});
      i = end;
    } else {
      tokens.push_back({Token::Char, glob[i], std::nullopt});
    }
  }
  auto matchesOne = [&](const Token &t, char c) {
    return t.kind == Token::Any || (t.kind == Token::Char && t.c == c) ||
           (t.kind == Token::Class && t.set->match(llvm::StringRef(&c, 1)));
  };
  size_t p = 0, s = 0, starP = llvm::StringRef::npos, starS = 0;
  while (s < path.size()) {
    if (p < tokens.size() && tokens[p].kind == Token::Star) {
      starP = p++;
      starS = s;
    } else if (p < tokens.size() && matchesOne(tokens[p], path[s])) {
      ++p;
      ++s;
    } else if (starP != llvm::StringRef::npos) {
      p = starP + 1;
      s = ++starS;
    } else {
      return false;
    }
  }
  while (p < tokens.size() && tokens[p].kind == Token::Star)
    ++p;
  return p == tokens.size();
}

bool pinnedAs(llvm::ArrayRef<PartitionPin> pins, const Op &op, PartitionPin::Action action) {
  if (op.kind() != OpKind::Param)
    return false;
  std::string path = paramPath(op);
  for (const PartitionPin &pin : pins)
    if (pin.action == action && pinMatches(pin, path))
      return true;
  return false;
}

} // namespace lpu::ir
