// A unified line diff (the `diff -u` format) for `lpufmt --diff`, so that the
// formatter calls no external program.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <string>

namespace lpu::format {

/// The unified diff turning `before` into `after` with `context` lines around
/// each change, headed `--- beforeName` / `+++ afterName`; empty when equal.
/// Lines are matched by a longest common subsequence after the common
/// prefix and suffix are set aside; a middle part too large for that
/// (over about 16 million line pairs) is shown as one replacement.
std::string unifiedDiff(llvm::StringRef before, llvm::StringRef after,
                        llvm::StringRef beforeName, llvm::StringRef afterName,
                        unsigned context = 3);

} // namespace lpu::format
