// Shared by the convolution and pooling lowerings: their attributes, and
// the lane maps the SXM's distribute uses to pick a window's column out of
// an input row (docs/scheduler.md, "Convolutions" and "Pooling").
#pragma once

#include "scheduler/Lowering.h"

#include <algorithm>

namespace lpu::scheduler::convmaps {

struct Pair {
  int64_t h, w;
};

inline Pair pairAttr(const ir::Op &op, const char *name, Pair dflt) {
  auto v = op.intsAttr(name);
  if (!v || v->size() != 2)
    return dflt;
  return {(*v)[0], (*v)[1]};
}

/// One row per kw of u16 lane maps: lane j gets input column
/// j * stride + kw * dilation - pad; a column outside [0, width) gives 0
/// (map entry `lanes`), or, when `clamp`, the nearest column inside (a
/// max over the window does not change when one of its columns repeats).
/// Lanes at or beyond `outWidth` give 0.
inline std::vector<uint8_t> laneMaps(int64_t kernel, int64_t stride, int64_t dilation, int64_t pad,
                                     int64_t width, int64_t outWidth, unsigned lanes, bool clamp) {
  std::vector<uint8_t> out;
  for (int64_t k = 0; k < kernel; ++k)
    for (int64_t j = 0; j < int64_t(lanes); ++j) {
      int64_t src = j * stride + k * dilation - pad;
      int64_t entry = lanes;
      if (j < outWidth) {
        if (clamp)
          entry = std::clamp<int64_t>(src, 0, width - 1);
        else if (src >= 0 && src < width)
          entry = src;
      }
      out.push_back(uint8_t(entry & 0xff));
      out.push_back(uint8_t(entry >> 8));
    }
  return out;
}

/// A distribute node (SXM of hemisphere `east`) of one vector of `data`
/// through map row `mapRow` into `tree`.
inline int distribute(WorkTree &tree, const TensorView &data, int64_t row, const TensorView &maps,
                      int64_t mapRow, bool east) {
  backend::Instr d;
  d.op = backend::Opcode::Distribute;
  d.dtype = data.dtype;
  d.unit = east ? 1 : 0;
  int x = tree.read(data.slices(row), data.address(row, 0));
  int m = tree.read(maps.slices(mapRow), maps.address(mapRow, 0));
  return tree.add(d, {x, m});
}

} // namespace lpu::scheduler::convmaps
