// The printer: lays a document out for a width. It is Wadler's greedy
// algorithm as Prettier runs it: a group is printed flat when its contents,
// and whatever follows up to the next possible line break, fit in the rest of
// the line; otherwise its lines break. Each `fits` look-ahead stops after at
// most `width` columns, so the whole run is linear in the document size.
#pragma once

#include "format/engine/Doc.h"

#include <string>
#include <vector>

namespace lpu::format {

struct LayoutOptions {
  unsigned width = 100;
  unsigned indent = 2; // columns per Indent
};

/// Prints `root` (after arena.propagateBreaks()). Trailing spaces are never
/// written before a newline; verbatim texts are copied as they are.
/// If `markEnds` is given, markEnds[m] is set to the output offset where the
/// text marked `m` ends (the vector is grown as needed; unprinted marks stay
/// UINT32_MAX).
std::string printDoc(DocArena &arena, Doc root, const LayoutOptions &options,
                     std::vector<uint32_t> *markEnds = nullptr);

} // namespace lpu::format
