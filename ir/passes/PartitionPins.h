// Pins: a user's word on how the partition treats one layer (lpuc --pin,
// docs/partitioning.md, "Pins"). A layer is named by its weights' parameter
// paths (what `lpuc --emit=params` lists and `param {path = ...}` carries),
// matched by a glob: `blocks.0.*=whole`.
//
//   whole    tensor: the weights stay whole (replicated); no seed that would
//            hold a shard of one is taken
//   split    tensor: every matching weight must end up split (an error
//            otherwise)
//   stage    pipeline: a stage starts at the layer (the last cut between
//            stages at or before its first op that reads a matching weight)
//   chip:N   pipeline: as stage, and that stage is chip N's; the layer's
//            ops (first to last reader of a matching weight) stay on it
#pragma once

#include "ir/IR.h"

#include <llvm/Support/Error.h>

#include <string>
#include <vector>

namespace lpu::ir {

struct PartitionPin {
  enum class Action : uint8_t { Whole, Split, Stage, Chip };
  std::string text; // as the user wrote it, for messages
  std::string glob;
  Action action = Action::Whole;
  unsigned chip = 0; // Chip
  /// Whether the pin is about tensor splits (whole, split) rather than
  /// pipeline stages (stage, chip:N).
  bool tensor() const { return action == Action::Whole || action == Action::Split; }
};

/// `GLOB=whole|split|stage|chip:N`; an error says what is wrong (the
/// caller names the pin).
llvm::Expected<PartitionPin> parsePartitionPin(llvm::StringRef text);

/// Whether `path` matches the pin's glob (`*`, `?`, `[...]`; `.` is itself).
bool pinMatches(const PartitionPin &pin, llvm::StringRef path);

/// Whether `op` is a param whose path matches some pin with `action`.
bool pinnedAs(llvm::ArrayRef<PartitionPin> pins, const Op &op, PartitionPin::Action action);

} // namespace lpu::ir
