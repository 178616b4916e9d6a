#include "ir/passes/PartitionPins.h"

#include <llvm/Support/GlobPattern.h>

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
  auto pattern = llvm::GlobPattern::create(pin.glob);
  if (!pattern) {
    llvm::consumeError(pattern.takeError());
    return false;
  }
  return pattern->match(path);
}

std::string paramPath(const Op &op) {
  if (op.kind() != OpKind::Param)
    return "";
  return op.stringAttr("path").value_or("");
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
