#include "backend/Program.h"

#include "backend/ChipDescription.h"
#include "backend/Topology.h"

#include "support/Tensor.h"

#include <llvm/ADT/StringExtras.h>

#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace lpu::backend {

llvm::StringRef tensorRoleName(TensorRole role) {
  switch (role) {
  case TensorRole::Input: return "input";
  case TensorRole::Output: return "output";
  case TensorRole::Param: return "param";
  case TensorRole::Constant: return "const";
  }
  return "?";
}

llvm::StringRef layoutName(Layout layout) {
  switch (layout) {
  case Layout::Rows: return "rows";
  case Layout::Packed: return "packed";
  }
  return "?";
}

bool isProgramToken(llvm::StringRef s) {
  if (s.empty() || s.size() > 4096)
    return false;
  for (char c : s)
    if (c <= ' ' || c >= 127 || c == ';' || c == '=' || c == '[' || c == ']' || c == ',')
      return false;
  return true;
}

bool isProgramIdentifier(llvm::StringRef s) {
  if (s.empty() || !(std::isalpha(uint8_t(s[0])) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!(std::isalnum(uint8_t(c)) || c == '_'))
      return false;
  return true;
}

std::string queueName(const Queue &q) {
  return (unitKindName(q.unit) + llvm::Twine(q.index)).str();
}

std::vector<int64_t> Bucket::concreteShape(const TensorPlacement &t) const {
  std::vector<int64_t> shape;
  for (const Dim &d : t.shape) {
    if (d.name.empty()) {
      shape.push_back(d.value);
      continue;
    }
    int64_t v = 0;
    for (const BucketDim &bd : dims)
      if (bd.name == d.name)
        v = bd.value;
    shape.push_back(v);
  }
  return shape;
}

std::vector<int64_t> Bucket::fullShape(const TensorPlacement &t) const {
  std::vector<int64_t> shape = concreteShape(t);
  if (t.shard.size() == 3 && t.shard[0] >= 0 && uint64_t(t.shard[0]) < shape.size())
    shape[size_t(t.shard[0])] = t.shard[2];
  return shape;
}

bool isPermutation(llvm::ArrayRef<uint8_t> perm, size_t rank) {
  if (perm.empty())
    return true;
  if (perm.size() != rank)
    return false;
  std::vector<bool> seen(rank, false);
  for (uint8_t p : perm) {
    if (p >= rank || seen[p])
      return false;
    seen[p] = true;
  }
  return true;
}

namespace {
std::string listString(llvm::ArrayRef<uint8_t> values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? "," : "") + std::to_string(values[i]);
  return s;
}
} // namespace

llvm::Expected<PlacementGeometry> placementGeometry(const TensorPlacement &t,
                                                   llvm::ArrayRef<int64_t> shape, unsigned lanes,
                                                   uint32_t memVectors) {
  auto fail = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  };
  if (!isPermutation(t.perm, shape.size()))
    return fail("has perm " + listString(t.perm) + ", not a permutation of its " +
                llvm::Twine(shape.size()) + " dimensions");
  PlacementGeometry g;
  g.addr = t.addr;
  g.planes = streamWidth(t.dtype);
  for (size_t i = 0; i < shape.size(); ++i)
    g.storedShape.push_back(shape[t.perm.empty() ? i : t.perm[i]]);
  // Every product below stays under 2^63 once each factor is under 2^32.
  const int64_t limit = int64_t(1) << 32;
  bool overflow = false;
  for (int64_t d : shape)
    overflow |= d < 0 || d > limit;
  g.cols = g.storedShape.empty() ? 1 : g.storedShape.back();
  for (size_t i = 0; i + 1 < g.storedShape.size() && !overflow; ++i) {
    // Checked before multiplying: 2^32 rows times 2^32 would pass 2^63.
    int64_t d = g.storedShape[i];
    overflow |= d != 0 && g.rows > limit / d;
    g.rows *= overflow ? 1 : d;
  }
  // rows * cols (a packed chunk's elements, a tensor's bytes) could still
  // pass 2^63; 2^52 elements is far beyond any chip's SRAM.
  overflow |= !overflow && g.cols > 0 && g.rows > (int64_t(1) << 52) / g.cols;
  if (overflow)
    return fail("has a shape too large for any chip");
  g.perRow = (g.cols + lanes - 1) / lanes;
  g.packed = t.layout == Layout::Packed;
  g.lanes = lanes;
  if (t.chunkRows == 0) {
    g.chunkRows = std::max<int64_t>(1, g.rows);
    g.chunks = 1;
  } else {
    g.chunkRows = t.chunkRows;
    g.chunks = std::max<int64_t>(1, (g.rows + g.chunkRows - 1) / g.chunkRows);
  }
  if (uint64_t(t.slices.size()) != uint64_t(g.chunks) * g.planes) {
    std::string chunked = t.chunkRows == 0 ? std::string()
                                           : " in " + std::to_string(g.chunks) + " chunks of " +
                                                 std::to_string(t.chunkRows) + " rows";
    return fail("of dtype " + tensor::dtypeName(t.dtype) + chunked + " needs " +
                llvm::Twine(uint64_t(g.chunks) * g.planes) + " slices, has " +
                llvm::Twine(t.slices.size()));
  }
  int64_t end = int64_t(t.addr) + g.chunkVectors(0);
  if (end > int64_t(memVectors))
    return fail("does not fit in SRAM: addresses " + llvm::Twine(t.addr) + ".." + llvm::Twine(end) +
                " of " + llvm::Twine(memVectors));
  return g;
}

std::vector<uint8_t> permuteElements(llvm::ArrayRef<uint8_t> bytes, llvm::ArrayRef<int64_t> shape,
                                     llvm::ArrayRef<uint8_t> perm, unsigned elemBytes, bool inverse) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity &= perm[i] == i;
  if (identity)
    return bytes.vec();
  size_t rank = shape.size();
  std::vector<int64_t> strides(rank, 1), stored(rank), index(rank, 0);
  for (size_t i = rank; i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  for (size_t i = 0; i < rank; ++i)
    stored[i] = shape[perm[i]];
  std::vector<uint8_t> out(bytes.size());
  int64_t count = int64_t(bytes.size() / elemBytes);
  // Walk the stored order: element k of it is the logical element whose
  // offset sums index[i] * strides[perm[i]].
  for (int64_t k = 0; k < count; ++k) {
    int64_t logical = 0;
    for (size_t i = 0; i < rank; ++i)
      logical += index[i] * strides[perm[i]];
    const uint8_t *from = bytes.data() + (inverse ? k : logical) * elemBytes;
    uint8_t *to = out.data() + (inverse ? logical : k) * elemBytes;
    std::memcpy(to, from, elemBytes);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < stored[i])
        break;
      index[i] = 0;
    }
  }
  return out;
}

namespace {
llvm::Error error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// "f16 [4,8]", as the text form spells a placement's type.
std::string placedType(DType dtype, llvm::ArrayRef<int64_t> shape) {
  std::string out = tensor::dtypeName(dtype).str() + " [";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

/// A placement's shard (TensorPlacement::shard): a parameter's or a
/// state's, three numbers, its slice inside the whole, the whole not too
/// large.
llvm::Error verifyShard(const TensorPlacement &t, const Bucket &bucket, const std::string &tw) {
  if (t.shard.empty())
    return llvm::Error::success();
  std::string shard = "shard ";
  for (size_t i = 0; i < t.shard.size(); ++i)
    shard += (i ? "," : "") + std::to_string(t.shard[i]);
  if (t.role != TensorRole::Param && !t.state)
    return error(tw + " has a " + shard + ", which only a param or a state may");
  const char *whole = t.role == TensorRole::Param ? "weight" : "state";
  if (t.shard.size() != 3)
    return error(tw + ": " + shard + " is not three numbers AXIS,START,FULL");
  const std::vector<int64_t> shape = bucket.concreteShape(t);
  const int64_t axis = t.shard[0], start = t.shard[1], full = t.shard[2];
  if (axis < 0 || uint64_t(axis) >= shape.size())
    return error(tw + ": " + shard + ": axis " + llvm::Twine(axis) + " is not an axis of " +
                 placedType(t.dtype, shape));
  const int64_t size = shape[size_t(axis)];
  if (start < 0 || full < 0 || start > full || size > full - start)
    return error(tw + ": " + shard + ": elements " + llvm::Twine(start) + " to " +
                 llvm::Twine(start) + " + " + llvm::Twine(size) + " of axis " + llvm::Twine(axis) +
                 " are not inside the " + whole + "'s " + llvm::Twine(full));
  auto count = tensor::checkedElementCount(bucket.fullShape(t), t.dtype);
  if (!count) {
    llvm::consumeError(count.takeError());
    return error(tw + ": " + shard + ": the " + whole + " " +
                 placedType(t.dtype, bucket.fullShape(t)) + " is too large");
  }
  return llvm::Error::success();
}

/// The width (in streams) each stream operand of `in` must have.
unsigned operandWidth(const Instr &in, OperandKind k) {
  if (std::optional<tensor::ElementwiseOp> e = elementwiseOf(in.op))
    return k == OperandKind::Dst && tensor::isComparison(*e) ? 1 : streamWidth(in.dtype);
  switch (in.op) {
  case Opcode::Read:
  case Opcode::Write:
    return 1;
  case Opcode::Gather:
  case Opcode::Scatter:
    return k == OperandKind::Src1 ? 2 : 1;
  case Opcode::Select:
    return k == OperandKind::Src0 ? 1 : streamWidth(in.dtype);
  case Opcode::Cvt:
  case Opcode::CvtTrunc:
    return k == OperandKind::Dst ? streamWidth(in.dtype2) : streamWidth(in.dtype);
  case Opcode::Permute:
  case Opcode::Distribute:
    return k == OperandKind::Src1 ? 2 : streamWidth(in.dtype);
  case Opcode::Transpose:
    return 16;
  default:
    return streamWidth(in.dtype);
  }
}
} // namespace

namespace {
constexpr uint64_t kMaxShareDelay = uint64_t(1) << 48;

/// Chip `c` of `bucket` runs another chip's code: that chip has code of its
/// own, this one none, and every link the code uses (`used`), renamed,
/// exists in the same hemisphere and is cabled here.
llvm::Error verifySharedCode(const SharedCode &shared, size_t c, const Bucket &bucket,
                             const std::set<uint16_t> &used, const ChipDescription &chip,
                             const Topology &topo, const std::string &where) {
  if (shared.chip >= bucket.chips.size() || shared.chip == c)
    return error(where + " shares the code of chip " + llvm::Twine(shared.chip) + ", which is not " +
                 "another chip of the bucket");
  if (bucket.chips[shared.chip].shares || bucket.chips[shared.chip].queues.empty())
    return error(where + " shares the code of chip " + llvm::Twine(shared.chip) +
                 ", which has none of its own");
  // A chip runs the code shifted by the delay: past 2^48 cycles (three
  // days at 1 GHz) the shifted cycles would overflow the simulator's
  // arithmetic, and no schedule is that long.
  if (shared.delay > kMaxShareDelay)
    return error(where + " shares the code of chip " + llvm::Twine(shared.chip) + " delayed " +
                 llvm::Twine(shared.delay) + " cycles, past the 2^48 a program may take");
  if (!bucket.chips[c].queues.empty())
    return error(where + " shares another chip's code and has queues of its own");
  std::set<uint16_t> renamed;
  for (const auto &[from, to] : shared.links) {
    if (!renamed.insert(from).second)
      return error(where + " renames link " + llvm::Twine(from) + " twice");
    if (from >= chip.c2cLinks || to >= chip.c2cLinks)
      return error(where + " renames link " + llvm::Twine(from) + " to " + llvm::Twine(to) +
                   ": the chip has " + llvm::Twine(chip.c2cLinks) + " links");
    if ((from >= chip.c2cLinks / 2) != (to >= chip.c2cLinks / 2))
      return error(where + " renames link " + llvm::Twine(from) + " to " + llvm::Twine(to) +
                   ", in the other hemisphere");
  }
  for (uint16_t link : used)
    if (!topo.peer(unsigned(c), shared.link(link)))
      return error(where + " runs chip " + llvm::Twine(shared.chip) + "'s code, whose link " +
                   llvm::Twine(link) + " is its link " + llvm::Twine(shared.link(link)) +
                   ", not cabled in topology '" + topo.spec() + "'");
  return llvm::Error::success();
}
} // namespace

llvm::Error verifyProgram(const Program &program, const ChipDescription &chip) {
  if (program.chipFingerprint != chip.fingerprint() || program.chipName != chip.name)
    return error("program was built for chip '" + program.chipName + "' (fingerprint " +
                 "0x" + llvm::utohexstr(program.chipFingerprint, true) + "), not for chip '" + chip.name +
                 "' (fingerprint " + "0x" + llvm::utohexstr(chip.fingerprint(), true) + ")");
  auto topo = Topology::parse(program.topology, chip.c2cLinks);
  if (!topo)
    return topo.takeError();
  if (topo->numChips() != program.numChips)
    return error("topology '" + program.topology + "' has " + llvm::Twine(topo->numChips()) +
                 " chips but the program says " + llvm::Twine(program.numChips));
  if (program.entries.empty())
    return error("program has no entries");
  // Each state's dtype, shape and where first seen.
  std::map<std::string, std::tuple<DType, std::vector<int64_t>, std::string>> states;
  for (const Entry &entry : program.entries) {
    if (entry.buckets.empty())
      return error("entry '" + entry.name + "' has no buckets");
    // Buckets differ in sizes alone: every bucket takes the inputs and
    // returns the outputs bucket 0 does (names, states, dtypes and ranks),
    // as lpurun picks a bucket by the inputs given and carries states
    // between calls of any bucket.
    using Interface = std::map<std::pair<TensorRole, std::string>, std::tuple<bool, DType, size_t>>;
    auto interfaceOf = [](const Bucket &bucket) {
      Interface io;
      for (const TensorPlacement &t : bucket.tensors)
        if (t.role == TensorRole::Input || t.role == TensorRole::Output)
          io.try_emplace({t.role, t.name}, t.state, t.dtype, t.shape.size());
      return io;
    };
    const Interface first = interfaceOf(entry.buckets.front());
    auto describe = [](const std::pair<TensorRole, std::string> &key, const std::tuple<bool, DType, size_t> &v) {
      return (std::get<0>(v) ? "state " : "") + tensorRoleName(key.first).str() + " '" + key.second + "' (" +
             tensor::dtypeName(std::get<1>(v)).str() + ", rank " + std::to_string(std::get<2>(v)) + ")";
    };
    for (size_t b = 1; b < entry.buckets.size(); ++b) {
      const Interface here = interfaceOf(entry.buckets[b]);
      std::string where = ("entry '" + entry.name + "' bucket " + llvm::Twine(b)).str();
      for (const auto &[key, v] : first)
        if (auto it = here.find(key); it == here.end() || it->second != v)
          return error(where + (it == here.end() ? " has no " + describe(key, v)
                                                 : " has " + describe(key, it->second)) +
                       ", but bucket 0 has " + describe(key, v) +
                       " (every bucket of an entry has the same inputs and outputs)");
      for (const auto &[key, v] : here)
        if (!first.count(key))
          return error(where + " has " + describe(key, v) +
                       ", which bucket 0 has not (every bucket of an entry has the same inputs and outputs)");
    }
    for (size_t b = 0; b < entry.buckets.size(); ++b) {
      const Bucket &bucket = entry.buckets[b];
      std::string where = ("entry '" + entry.name + "' bucket " + llvm::Twine(b)).str();
      if (bucket.chips.size() != program.numChips)
        return error(where + ": has code for " + llvm::Twine(bucket.chips.size()) +
                     " chips, the topology has " + llvm::Twine(program.numChips));
      // Each role names its tensors apart: lpurun finds inputs, parameters
      // and outputs by name within their role (an input or a parameter may
      // be called `out`, as the output is). A parameter or an input is
      // placed once on every chip that reads it.
      // Different shards of one weight may share a chip.
      std::set<std::tuple<TensorRole, std::string, uint32_t, std::vector<int64_t>>> names;
      for (const TensorPlacement &t : bucket.tensors) {
        std::string tw = where + ": " + tensorRoleName(t.role).str() + " '" + t.name + "'";
        uint32_t copy = t.role == TensorRole::Param || t.role == TensorRole::Input ? t.chip : 0;
        if (!names.insert({t.role, t.name, copy, t.shard}).second)
          return error(tw + " is placed twice" + (copy ? " on chip " + std::to_string(copy) : ""));
        if (t.chip >= program.numChips)
          return error(tw + " is on chip " + llvm::Twine(t.chip) + " of " +
                       llvm::Twine(program.numChips));
        std::set<uint16_t> seen;
        for (uint16_t s : t.slices)
          if (s >= chip.memSlices || !seen.insert(s).second)
            return error(tw + ": slice " + llvm::Twine(s) + " is out of range or repeated");
        for (const Dim &d : t.shape) {
          if (d.name.empty()) {
            if (d.value < 0)
              return error(tw + " has a negative dimension");
            continue;
          }
          bool found = false;
          for (const BucketDim &bd : bucket.dims)
            found |= bd.name == d.name;
          if (!found)
            return error(tw + " uses dimension '" + d.name + "' that the bucket does not define");
        }
        auto geometry = placementGeometry(t, bucket.concreteShape(t), chip.lanes, chip.memVectors);
        if (!geometry)
          return error(tw + " " + llvm::toString(geometry.takeError()));
        int64_t rows = geometry->rows, cols = geometry->cols;
        // Code addresses a packed row by its flat position modulo the lanes
        // (row r starts at lane (r * C) % lanes whatever its chunk), which
        // holds only when every chunk ends on a vector boundary.
        if (t.layout == Layout::Packed && t.chunkRows != 0 &&
            uint64_t(t.chunkRows) * uint64_t(cols) % chip.lanes != 0)
          return error(tw + " is packed in chunks of " + llvm::Twine(t.chunkRows) + " rows of " +
                       llvm::Twine(cols) + " elements, " +
                       llvm::Twine(uint64_t(t.chunkRows) * uint64_t(cols)) +
                       " a chunk: not a multiple of the " + llvm::Twine(chip.lanes) + " lanes");
        if (t.role == TensorRole::Constant &&
            t.data.size() != uint64_t(rows) * uint64_t(cols) * tensor::dtypeSize(t.dtype))
          return error(tw + " holds " + llvm::Twine(t.data.size()) + " bytes of data, its shape needs " +
                       llvm::Twine(uint64_t(rows) * uint64_t(cols) * tensor::dtypeSize(t.dtype)));
        if (t.role != TensorRole::Constant && !t.data.empty())
          return error(tw + " holds data, which only a const tensor may");
        if (auto e = verifyShard(t, bucket, tw))
          return e;
        if (t.state && t.role != TensorRole::Input && t.role != TensorRole::Output)
          return error(tw + " is marked a state: only an input or an output may be");
        // One state is one tensor in every entry and bucket: lpurun carries
        // it from a call of one entry to the next call of any. A chip's
        // slice of it (a shard) is of the whole's shape.
        if (t.state) {
          std::vector<int64_t> shape = bucket.fullShape(t);
          auto [it, fresh] = states.try_emplace(
              t.name, t.dtype, shape, tensorRoleName(t.role).str() + " '" + t.name + "' in " + where);
          if (!fresh && (std::get<0>(it->second) != t.dtype || std::get<1>(it->second) != shape))
            return error(tw + " is a state " + placedType(t.dtype, shape) + ", but " +
                         std::get<2>(it->second) + " is " +
                         placedType(std::get<0>(it->second), std::get<1>(it->second)) +
                         " (a state has one dtype and shape in every entry and bucket)");
        }
      }
      // The tensors the host writes before a run (inputs, parameters,
      // constants) never share SRAM: the one written last would overwrite
      // the other, and the run would read the wrong numbers.
      struct Span {
        uint32_t begin, end;
        const TensorPlacement *t;
      };
      // An output may take the place of an input (a state updated in
      // place, an input read before the output is written), never that of
      // a parameter or a constant, which the next run reads again.
      std::map<std::pair<uint32_t, uint16_t>, std::vector<Span>> written, outputs;
      for (const TensorPlacement &t : bucket.tensors) {
        auto g = placementGeometry(t, bucket.concreteShape(t), chip.lanes, chip.memVectors);
        if (!g)
          return error(where + ": " + tensorRoleName(t.role).str() + " '" + t.name + "' " +
                       llvm::toString(g.takeError()));
        auto &into = t.role == TensorRole::Output ? outputs : written;
        for (int64_t c = 0; c < g->chunks; ++c)
          for (unsigned p = 0; p < g->planes; ++p)
            into[{t.chip, t.slices[size_t(c) * g->planes + p]}].push_back(
                {g->addr, uint32_t(g->addr + g->chunkVectors(c)), &t});
      }
      for (const auto &[slice, outs] : outputs) {
        auto kept = written.find(slice);
        if (kept == written.end())
          continue;
        for (const Span &out : outs)
          for (const Span &span : kept->second)
            if (span.t->role != TensorRole::Input && out.begin < span.end && span.begin < out.end)
              return error(where + ": output '" + out.t->name + "' and " + tensorRoleName(span.t->role).str() +
                           " '" + span.t->name + "' share chip " + llvm::Twine(slice.first) + " slice " +
                           llvm::Twine(slice.second) + " from address " +
                           llvm::Twine(std::max(out.begin, span.begin)) +
                           " (an output never takes the place of a parameter or a constant)");
      }
      for (auto &[slice, spans] : written) {
        std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) { return a.begin < b.begin; });
        const Span *furthest = nullptr; // of those before, the one that ends last
        for (const Span &span : spans) {
          if (span.end == span.begin)
            continue;
          if (furthest && span.begin < furthest->end)
            return error(where + ": " + tensorRoleName(furthest->t->role).str() + " '" + furthest->t->name +
                         "' and " + tensorRoleName(span.t->role).str() + " '" + span.t->name + "' share chip " +
                         llvm::Twine(slice.first) + " slice " + llvm::Twine(slice.second) + " from address " +
                         llvm::Twine(span.begin) +
                         " (inputs, parameters and constants are written before a run and never share SRAM)");
          if (!furthest || span.end > furthest->end)
            furthest = &span;
        }
      }
      // Every placement of a parameter is the same weight, or a slice of
      // it: lpurun reads the weight once and writes each its part.
      std::map<std::string, const TensorPlacement *> weights;
      for (const TensorPlacement &t : bucket.tensors) {
        if (t.role != TensorRole::Param)
          continue;
        auto [it, fresh] = weights.try_emplace(t.name, &t);
        const TensorPlacement &first = *it->second;
        if (!fresh && (first.dtype != t.dtype || bucket.fullShape(first) != bucket.fullShape(t)))
          return error(where + ": param '" + t.name + "' is a weight " +
                       placedType(t.dtype, bucket.fullShape(t)) + " on chip " +
                       llvm::Twine(t.chip) + ", but " +
                       placedType(first.dtype, bucket.fullShape(first)) + " on chip " +
                       llvm::Twine(first.chip) + " (a param's placements are one weight or its slices)");
      }
      // Per chip, the links its code sends and receives on: a chip that
      // shares the code must have them cabled too (renamed as it says).
      std::vector<std::set<uint16_t>> linksUsed(bucket.chips.size());
      for (size_t c = 0; c < bucket.chips.size(); ++c) {
        std::set<std::pair<int, int>> queues;
        for (const Queue &q : bucket.chips[c].queues) {
          std::string qw = (where + ": chip " + llvm::Twine(c) + " queue " + queueName(q)).str();
          if (q.index >= chip.queues[unsigned(q.unit)])
            return error(qw + ": the chip has only " + llvm::Twine(chip.queues[unsigned(q.unit)]) +
                         " " + unitKindName(q.unit) + " queues");
          if (!queues.insert({int(q.unit), q.index}).second)
            return error(qw + " appears twice");
          std::optional<bool> east = chip.queueIsEast(q.unit, q.index);
          for (size_t i = 0; i < q.instrs.size(); ++i) {
            const Instr &in = q.instrs[i];
            const OpcodeInfo &info = opcodeInfo(in.op);
            std::string iw = (qw + " instruction " + llvm::Twine(i) + " (" + info.mnemonic + ")").str();
            if (info.unit && *info.unit != q.unit)
              return error(iw + ": a " + unitKindName(*info.unit) + " instruction in a " +
                           unitKindName(q.unit) + " queue");
            for (OperandKind k : info.operands) {
              switch (k) {
              case OperandKind::DType:
                if (!dtypeAllowed(in.op, in.dtype))
                  return error(iw + ": dtype " + tensor::dtypeName(in.dtype) + " not allowed");
                break;
              case OperandKind::Count:
                if ((in.op == Opcode::Nop || in.op == Opcode::Repeat) && in.count == 0)
                  return error(iw + ": count must be at least 1");
                if ((in.op == Opcode::Shift || in.op == Opcode::Rotate) && in.count >= chip.lanes)
                  return error(iw + ": shift by " + llvm::Twine(in.count) + " of " +
                               llvm::Twine(chip.lanes) + " lanes");
                break;
              case OperandKind::Delay:
                if (in.delay == 0)
                  return error(iw + ": delay must be at least 1");
                break;
              case OperandKind::Slice:
                if (in.unit >= chip.memSlices)
                  return error(iw + ": slice " + llvm::Twine(in.unit) + " does not exist");
                if (east && chip.isEastSlice(in.unit) != *east)
                  return error(iw + ": slice " + llvm::Twine(in.unit) +
                               " is in the other hemisphere");
                break;
              case OperandKind::Plane:
                if (in.unit >= chip.mxmPlanes)
                  return error(iw + ": plane " + llvm::Twine(in.unit) + " does not exist");
                if (east && (in.unit >= chip.mxmPlanes / 2) != *east)
                  return error(iw + ": plane " + llvm::Twine(in.unit) +
                               " is in the other hemisphere");
                break;
              case OperandKind::Link:
                if (in.unit >= chip.c2cLinks)
                  return error(iw + ": link " + llvm::Twine(in.unit) + " does not exist");
                if (east && (in.unit >= chip.c2cLinks / 2) != *east)
                  return error(iw + ": link " + llvm::Twine(in.unit) +
                               " is in the other hemisphere");
                if (!topo->peer(c, in.unit))
                  return error(iw + ": link " + llvm::Twine(in.unit) + " is not cabled in topology '" +
                               program.topology + "'");
                linksUsed[c].insert(in.unit);
                break;
              case OperandKind::Src0:
              case OperandKind::Src1:
              case OperandKind::Src2:
              case OperandKind::Dst: {
                StreamRef s = k == OperandKind::Src0   ? in.src0
                              : k == OperandKind::Src1 ? in.src1
                              : k == OperandKind::Src2 ? in.src2
                                                       : in.dst;
                unsigned w = operandWidth(in, k);
                if (!s.valid() || s.id + w > chip.streamsPerDirection)
                  return error(iw + ": stream group " + streamName(s) + " of " + llvm::Twine(w) +
                               " streams does not fit in " + llvm::Twine(chip.streamsPerDirection));
                break;
              }
              default:
                break;
              }
            }
            if (in.op == Opcode::Repeat) {
              if (i == 0 || !opcodeInfo(q.instrs[i - 1].op).unit)
                return error(iw + ": repeat must follow a unit instruction");
              const Instr &prev = q.instrs[i - 1];
              unsigned interval = chip.timingOf(prev.op, prev.dtype).issue;
              if (in.delay < interval)
                return error(iw + ": repeat every " + llvm::Twine(in.delay) + " cycles, but " +
                             opcodeInfo(prev.op).mnemonic + " " + tensor::dtypeName(prev.dtype) +
                             " issues at most every " + llvm::Twine(interval) + " cycles");
            }
          }
        }
      }
      for (size_t c = 0; c < bucket.chips.size(); ++c)
        if (const std::optional<SharedCode> &shared = bucket.chips[c].shares)
          if (auto e = verifySharedCode(*shared, c, bucket, linksUsed[shared->chip], chip, *topo,
                                        where + ": chip " + std::to_string(c)))
            return e;
    }
  }
  return llvm::Error::success();
}

} // namespace lpu::backend
