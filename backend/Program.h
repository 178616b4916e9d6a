// The program: what lpuc writes and lpurun runs. For each entry and bucket,
// each chip's instruction queues and the placement of every parameter, input
// and output. Its binary form is in ProgramBinary.h, its text (assembly) form
// in ProgramText.h; docs/program-file.md describes both.
#pragma once

#include "backend/Isa.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

#include <algorithm>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace lpu::backend {

class ChipDescription;

/// Constant: data the compiler made (a splat row), in the program itself.
enum class TensorRole : uint8_t { Input, Output, Param, Constant };
llvm::StringRef tensorRoleName(TensorRole role); // "input", "output", "param", "const"

/// How a tensor's elements map onto SRAM vectors (see TensorPlacement).
enum class Layout : uint8_t { Rows, Packed };
llvm::StringRef layoutName(Layout layout); // "rows", "packed"

/// A dimension of a placed tensor: a number, or a named bucket dimension
/// (e.g. `n`), whose value in this bucket is in Bucket::dims.
struct Dim {
  int64_t value = 0;
  std::string name; // empty for a fixed dimension
  bool operator==(const Dim &) const = default;
};

/// Where a tensor lives in SRAM. Layout "rows" (the only one so far): the
/// tensor, its dimensions first put in the order `perm` names (stored
/// dimension i is logical dimension perm[i]; empty: as declared), is viewed
/// as [R, C] (C = the last stored dimension, R = the product of the others),
/// and each row is cut into ceil(C / lanes) vectors. The rows are stored in
/// chunks of `chunkRows` rows (0: one chunk holds them all), each chunk in
/// its own slices: row r is in chunk j = r / chunkRows, its vector v at
/// address addr + (r - j * chunkRows) * ceil(C / lanes) + v, byte b of its
/// elements in slice slices[j * size + b] (size: the dtype's bytes, so a
/// f16 tensor in one chunk names 2 slices, in three chunks 6). A tensor
/// larger than one slice's vectors is stored in chunks; a conv weight or an
/// image is stored channels-last through `perm`. Lanes past the end of a
/// row hold zeros.
///
/// Layout "packed": the same chunks, slices and perm, but inside a chunk
/// the rows follow each other with no padding: element (r, c), r counted
/// from the chunk's first row, is the chunk's flat element f = r * C + c,
/// in vector addr + f / lanes, lane f % lanes. A chunk takes
/// ceil(rows * C / lanes) vectors; only lanes past its last element hold
/// zeros. A weight or an embedding table whose rows are not a whole number
/// of vectors (768 columns on 320 lanes) takes no more SRAM than its bytes.
struct TensorPlacement {
  TensorRole role = TensorRole::Input;
  std::string name;
  DType dtype = DType::F32;
  std::vector<Dim> shape;
  uint32_t chip = 0;
  std::vector<uint16_t> slices;
  uint32_t addr = 0;
  Layout layout = Layout::Rows;
  std::vector<uint8_t> perm; // stored order of the dimensions (empty: as declared)
  uint32_t chunkRows = 0;    // rows per chunk of slices (0: a single chunk)
  /// A constant's bytes (its elements in row-major order, little-endian);
  /// empty for every other role.
  std::vector<uint8_t> data;
  /// A parameter that holds a slice of its weight (tensor parallelism):
  /// {axis, start, full}. The weight `name` is `full` long along `axis`
  /// (its other dimensions are the placement's), and this placement holds
  /// its elements [start, start + size) there, size being the placement's
  /// dimension `axis`. Empty: the whole weight. Only parameters have one.
  std::vector<int64_t> shard;
  /// An input or an output that is a model's state (docs/generation.md): an
  /// input it is the state's value when the call starts, an output its value
  /// when the call ends, under the same name. lpurun starts a state at zeros
  /// and carries it from one call to the next. Only inputs and outputs.
  bool state = false;
  bool operator==(const TensorPlacement &) const = default;
};

/// Where the rows of a placed tensor are, for one concrete shape (a bucket's):
/// the geometry TensorPlacement's comment describes.
struct PlacementGeometry {
  std::vector<int64_t> storedShape; // the concrete shape in perm's order
  int64_t rows = 1, cols = 1;       // the stored R x C view
  int64_t perRow = 1;               // vectors per row
  int64_t chunkRows = 1;            // rows per chunk (all rows when unchunked)
  int64_t chunks = 1;
  unsigned planes = 1;              // slices per chunk: the dtype's bytes
  uint32_t addr = 0;
  bool packed = false;              // Layout::Packed
  unsigned lanes = 1;               // the chip's

  int64_t chunkOf(int64_t row) const { return row / chunkRows; }
  /// The vectors a chunk occupies from addr (the last chunk may be shorter).
  int64_t chunkVectors(int64_t chunk) const {
    int64_t chunkRowCount = std::min(chunkRows, rows - chunk * chunkRows);
    return packed ? (chunkRowCount * cols + lanes - 1) / lanes : chunkRowCount * perRow;
  }
  /// The address of row `row`'s vector `vec`, inside its chunk's slices
  /// (rows layout only).
  uint32_t address(int64_t row, int64_t vec) const {
    return uint32_t(addr + (row - chunkOf(row) * chunkRows) * perRow + vec);
  }
  /// Where element (row, col) of the stored [rows, cols] view is, inside its
  /// chunk's slices: {address, lane}, in either layout.
  std::pair<uint32_t, unsigned> locate(int64_t row, int64_t col) const {
    if (!packed)
      return {address(row, col / lanes), unsigned(col % lanes)};
    int64_t flat = (row - chunkOf(row) * chunkRows) * cols + col;
    return {uint32_t(addr + flat / lanes), unsigned(flat % lanes)};
  }
  /// The slice of byte plane `byte` of row `row`.
  uint16_t slice(const std::vector<uint16_t> &slices, int64_t row, unsigned byte) const {
    return slices[size_t(chunkOf(row)) * planes + byte];
  }
};

/// The geometry of `t` with concrete shape `shape` on a chip of `lanes`
/// lanes and `memVectors` addresses per slice. Errors (naming nothing: the
/// caller says which tensor): a perm that is not a permutation of the rank,
/// a slice count that is not planes x chunks, a shape too large, rows past
/// the end of a slice.
llvm::Expected<PlacementGeometry> placementGeometry(const TensorPlacement &t,
                                                   llvm::ArrayRef<int64_t> shape, unsigned lanes,
                                                   uint32_t memVectors);

/// Whether `perm` is empty or a permutation of 0..rank-1.
bool isPermutation(llvm::ArrayRef<uint8_t> perm, size_t rank);

/// `bytes`, a C-order tensor of `shape` with `elemBytes`-byte elements, with
/// its dimensions put in `perm`'s order (stored dimension i is dimension
/// perm[i]); `inverse` undoes that (from the stored order back to `shape`).
std::vector<uint8_t> permuteElements(llvm::ArrayRef<uint8_t> bytes, llvm::ArrayRef<int64_t> shape,
                                     llvm::ArrayRef<uint8_t> perm, unsigned elemBytes, bool inverse);

struct Queue {
  UnitKind unit = UnitKind::Mem;
  uint16_t index = 0;
  std::vector<Instr> instrs;
  bool operator==(const Queue &) const = default;
};

/// A chip that runs another chip's queues: chips with the same work share
/// one schedule (docs/partitioning.md), and the program holds it once.
/// Every queue of `chip` runs here `delay` cycles later than there, and a
/// send or recv on a link `links` names as `first` uses link `second`
/// (links it does not name stay as they are).
struct SharedCode {
  uint32_t chip = 0;
  uint64_t delay = 0;
  std::vector<std::pair<uint16_t, uint16_t>> links;
  bool operator==(const SharedCode &) const = default;

  /// The link a send or recv on `link` in the shared code uses here.
  uint16_t link(uint16_t inCode) const {
    for (const auto &[from, to] : links)
      if (from == inCode)
        return to;
    return inCode;
  }
};

struct ChipCode {
  std::vector<Queue> queues;
  /// Set: the chip runs another's queues (and `queues` is empty).
  std::optional<SharedCode> shares;
  bool operator==(const ChipCode &) const = default;
};

struct BucketDim {
  std::string name;
  int64_t value = 0;
  bool operator==(const BucketDim &) const = default;
};

struct Bucket {
  std::vector<BucketDim> dims;
  std::vector<TensorPlacement> tensors;
  std::vector<ChipCode> chips; // one per chip of the topology
  bool operator==(const Bucket &) const = default;

  /// The queues chip `c` runs: its own, or those of the chip it shares.
  const ChipCode &codeOf(size_t c) const {
    return chips[c].shares && chips[c].shares->chip < chips.size() ? chips[chips[c].shares->chip]
                                                                  : chips[c];
  }

  /// The concrete shape of `t` in this bucket.
  std::vector<int64_t> concreteShape(const TensorPlacement &t) const;
  /// The concrete shape of the whole weight `t` holds a slice of
  /// (TensorPlacement::shard): concreteShape with the shard's axis `full`
  /// long; concreteShape itself when `t` has no (well-formed) shard.
  std::vector<int64_t> fullShape(const TensorPlacement &t) const;
};

struct Entry {
  std::string name;
  std::vector<Bucket> buckets;
  bool operator==(const Entry &) const = default;
};

struct Program {
  std::string chipName;
  uint64_t chipFingerprint = 0;
  std::string topology = "single";
  uint32_t numChips = 1;
  std::vector<Entry> entries;
  bool operator==(const Program &) const = default;
};

/// Names (of chips, topologies, entries, tensors) must survive the text
/// form: printable, no spaces, none of ; = [ ] ,
bool isProgramToken(llvm::StringRef s);
/// Bucket dimension names: [A-Za-z_][A-Za-z0-9_]*.
bool isProgramIdentifier(llvm::StringRef s);

/// "mem12", "vxm0", ...
std::string queueName(const Queue &q);

/// Checks everything about a program that does not need running it, against
/// the chip it will run on: fingerprint, queue and unit indices, hemispheres,
/// stream ids and group widths, dtypes, placements inside SRAM, cabled
/// links, repeat after a repeatable instruction. Errors name the entry,
/// bucket, chip, queue and instruction index.
llvm::Error verifyProgram(const Program &program, const ChipDescription &chip);

} // namespace lpu::backend
