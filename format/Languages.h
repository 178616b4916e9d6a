// The languages lpufmt formats, found by name (`--language`) or by the
// extension of a file name.
#pragma once

#include "format/engine/Pipeline.h"

#include <vector>

namespace lpu::format {

const std::vector<const Language *> &allLanguages();

/// nullptr if no language has that name.
const Language *languageByName(llvm::StringRef name);

/// nullptr if no language claims the file name's extension.
const Language *languageForPath(llvm::StringRef path);

} // namespace lpu::format
