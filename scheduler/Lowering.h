// What an op lowering sees: the placer (to put vector work on the chip), the
// SRAM views of the values it reads, and storage for the value it defines.
// A lowering is one function per op family (scheduler/lower/*.cpp), found
// through loweringFor(); adding an op is adding a case there and a function.
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Program.h"
#include "ir/IR.h"
#include "scheduler/Allocator.h"
#include "scheduler/Error.h"
#include "scheduler/Placer.h"
#include "scheduler/Scheduler.h"

#include <llvm/Support/Error.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <vector>

namespace lpu::scheduler {

/// A value in SRAM, seen in the "rows" layout: [rows, cols], vecsPerRow
/// vectors per row, view row r stored at storage row rowMap[r] (a broadcast
/// repeats storage rows without moving data; empty rowMap: identity). The
/// storage may be cut into chunks of rows, each in its own slices at the
/// same addresses (a tensor longer than a slice): a row's vectors are read
/// and written in slices(row) at address(row, vec).
struct TensorView {
  std::shared_ptr<struct Storage> storage;
  ir::DType dtype = ir::DType::F32;
  int64_t rows = 1, cols = 1, vecsPerRow = 1;
  std::vector<int64_t> rowMap;
  /// Every vector of a row is the row's one stored vector: a value whose
  /// every lane holds its row's element, broadcast along the last axis
  /// past one vector (lower/View.cpp).
  bool repeatVector = false;
  /// Vectors a row takes in storage.
  int64_t storedVecs() const { return repeatVector ? 1 : vecsPerRow; }
  /// The stored vector that holds vector `vec` of a row.
  int64_t storedVec(int64_t vec) const { return repeatVector ? 0 : vec; }
  /// The stored order of the value's dimensions (stored dimension i is
  /// logical dimension perm[i], as in a TensorPlacement; empty: as
  /// declared); rows and cols are those of the stored order.
  std::vector<uint8_t> perm;

  int64_t storageRow(int64_t row) const { return rowMap.empty() ? row : rowMap[size_t(row)]; }
  /// The address of vector `vec` of view row `row`, inside its chunk.
  uint32_t address(int64_t row, int64_t vec) const;
  /// The slices (one per byte plane) that hold view row `row`: its chunk's.
  const std::vector<uint16_t> &slices(int64_t row) const;
  /// Every slice the value occupies (all chunks): for ports to avoid and the
  /// hemisphere (all chunks are in one).
  const std::vector<uint16_t> &allSlices() const;
  /// Whether the storage is cut into more than one chunk.
  bool chunked() const;
  /// The chunk of view row `row`.
  int64_t chunkOf(int64_t row) const;
  /// View rows per chunk when the view's rows are whole rows of the chunks
  /// (0 for an unchunked value).
  int64_t chunkRows() const;
  /// The first cycle a read of this vector may issue in (its write landed);
  /// for packed storage, of every stored vector segment(row, vec) covers.
  int64_t readyAt(int64_t row, int64_t vec) const;
  /// Whether some vector is not written yet and no write of it is placed:
  /// a value another chip sends, before its recvs are placed (lockstep).
  bool pending() const;

  /// Packed storage (Storage::packed, backend Layout::Packed): a chunk's
  /// rows follow each other with no padding, so vector `vec` of a row (its
  /// elements vec * lanes on) starts at some lane of some vector and may run
  /// into the next one. Only a matmul's weights and a gather's table are
  /// stored packed; every other lowering sees rows (address() and readyAt()
  /// are for those).
  bool packed() const;
  struct PackedSegment {
    uint32_t addr = 0;      // the vector the segment starts in, inside its chunk
    unsigned lane = 0;      // the lane it starts at
    unsigned valid = 0;     // its elements: min(lanes, cols - vec * lanes)
    bool straddles = false; // lane + valid > lanes: it ends in vector addr + 1
  };
  /// Where vector `vec` of view row `row` is in packed storage (the row's
  /// slices are slices(row), as for rows).
  PackedSegment segment(int64_t row, int64_t vec, unsigned lanes) const;
};

/// How a value's rows are dealt over chunks of slices (docs/scheduler.md,
/// "Window reads"): pixel row r, of `width` pixels a row of the image,
/// goes to chunk (r % width + skew * (r / width)) % chunks.
struct RowDeal {
  int64_t chunks = 1, width = 1, skew = 0;
  bool on() const { return chunks > 1; }
  int64_t chunkOf(int64_t r) const;
  /// The storage rows `rows` rows take dealt: chunks times the most rows
  /// any chunk gets.
  int64_t storedRows(int64_t rows) const;
};

/// One allocated block and what has been written to it.
struct Storage {
  SramBlock block;
  int64_t vecsPerRow = 1;
  /// Storage rows per chunk (0: one chunk) and each chunk's slices (one per
  /// byte plane); the chunks share block.addr.
  int64_t chunkRows = 0;
  std::vector<std::vector<uint16_t>> chunkSlices;
  std::vector<int64_t> ready; // per vector: first cycle it may be read
  bool persistent = false;    // inputs, params, constants, outputs: never freed
  /// Layout::Packed: rows with no padding between them (vecsPerRow is then
  /// the rows layout's count, for the lowerings' loops; `ready` has one
  /// entry per stored vector). chunkRows * cols is a multiple of the lanes,
  /// so a row starts at lane (row * cols) % lanes in every chunk.
  bool packed = false;
  int64_t lanes = 0;          // the chip's (packed storage's geometry)
  int64_t lastRead = 0;       // the last cycle any lowering read it
  int64_t lastWrite = -1;     // the last cycle a write to it lands
  /// The last cycle the block is in use: read, or still being written (a
  /// result its readers take only some rows of, like a slice's operand, may
  /// be written after its last read; its space is not free before that).
  int64_t lastUse() const { return std::max(lastRead, lastWrite); }
};

/// An MXM plane's state across the matmuls of a function.
struct PlaneState {
  int64_t lastIw = -1;          // issue cycle of the last install
  int64_t lastMm = -1;          // issue cycle of the last matmul
  std::vector<int64_t> accFree; // per accumulator row: first cycle an mm may add
  /// For the critical path: the last matmul's issue cycle at the earliest
  /// (-1: none yet).
  int64_t pathLastMm = -1;
  /// What the installed weights are when a row sum installed ones
  /// (sumRowsOnMxm's key for their lanes and segments), so that the next
  /// sum over such rows multiplies by them without loading them again; 0:
  /// other weights.
  int64_t heldOnes = 0;
};

/// An op's work on one MXM plane: its matmuls and weight installs.
struct PlaneWork {
  int64_t mms = 0, installs = 0;
};

class LoweringContext {
public:
  LoweringContext(const backend::ChipDescription &chip, Placer &placer, SramAllocator &sram)
      : chip_(chip), placer_(placer), sram_(sram) {}

  const backend::ChipDescription &chip() const { return chip_; }
  Placer &placer() { return placer_; }

  /// Whether `op`'s value lives in SRAM (has a view). Elementwise ops inside
  /// a fusion group whose every user is in the group do not: their users
  /// recompute them in their own vector trees (unless the value is used
  /// more than once and its tree is larger than knobs.maxRecomputedNodes).
  bool materialized(const ir::Op *op) const;
  /// Whether `op` is a matmul's weights computed from parameters on their
  /// way into the MXM (a weight prologue, docs/scheduler.md "Weight-only
  /// int8"): an f16 [K, N] elementwise group over an i8 parameter (and
  /// parameters, constants and their broadcasts), read only as the
  /// weights of matmuls of one batch. It is not stored: each weight row
  /// is computed in the tree of its `lw`.
  bool weightPrologue(const ir::Op *op) const;
  /// A convert that widens f16 to f32 (exactly) whose every user is
  /// elementwise, a reduction over the last axis or over leading axes
  /// only, or a matmul: its value is not stored; users read its f16
  /// operand, half the bytes, and widen it on the way (a layer norm's
  /// input, which its mean and its centering both read) or, a matmul,
  /// multiply it as it is (`g @ f32(w)`).
  bool widenedOnRead(const ir::Op *op) const;
  /// The most instructions a value used more than once inside its fusion
  /// group may take to recompute in each use (else it is materialized).
  const TensorView &view(const ir::Op *op) const { return views_.at(op); }
  bool hasView(const ir::Op *op) const { return views_.count(op); }
  void setView(const ir::Op *op, TensorView view) { views_[op] = std::move(view); }

  /// Allocates SRAM for `op`'s result as [rows, cols] and makes it its view.
  llvm::Expected<TensorView *> define(const ir::Op *op) { return define(op, op->type()); }
  llvm::Expected<TensorView *> define(const ir::Op *op, const ir::Type &type) {
    return define(op, type, windowInterleave(*op, storedOrder.count(op) > 0));
  }
  /// ... with its rows dealt over chunks by `deal` (dealRows) when it is
  /// on: the pixels of a window then come through different read ports.
  llvm::Expected<TensorView *> define(const ir::Op *op, const ir::Type &type, RowDeal deal);
  /// How `value`'s rows are dealt when it is read only as the input of
  /// windows of more than one pixel that agree on it (windowDeal) and is
  /// not returned; else off. `channelsLast`: the storage dealt is
  /// channels-last (the value's own, or its copy for channels-last
  /// readers), read by channels-last pooling and convolutions; else it is
  /// in the declared order, read by rows-layout pooling (rows in turn).
  RowDeal windowInterleave(const ir::Op &value, bool channelsLast) const;
  /// Records that vector (row, vec) of `view` is written in `cycle` (it may
  /// be read from the next cycle on).
  void written(const TensorView &view, int64_t row, int64_t vec, int64_t cycle);
  /// Records that `view` was read up to `cycle`.
  void read(const TensorView &view, int64_t cycle);

  /// The shape of `type` seen as rows: [product of all but the last, last].
  static std::pair<int64_t, int64_t> rowsAndCols(const ir::Type &type);
  /// `type` with its dimensions in the stored order `perm` (empty: as is).
  static ir::Type storedType(const ir::Type &type, const std::vector<uint8_t> &perm);
  /// The stored order of each value the layout assignment did not leave
  /// as declared (scheduler/LayoutAssignment.h); define() follows it.
  std::map<const ir::Op *, std::vector<uint8_t>> storedOrder;
  /// The weights a rows-layout convolution streams, by weight: a reshape
  /// of [O, C/groups, KH, KW] to [O, C/groups * KH * KW] (in the layout
  /// assignment's scratch function), made on first use by lane moves
  /// (lower/Conv.cpp).
  std::map<const ir::Op *, const ir::Op *> convRowWeights;
  /// SRAM for [rows, cols] of `dtype`: one block, or chunks of rows when a
  /// byte plane is longer than a slice (chunk boundaries on multiples of
  /// `align` rows when a chunk holds that many: a gather's rows per id).
  /// Its `ready` is all unwritten. `packed`: Layout::Packed when the rows
  /// leave padding (cols % lanes != 0) and chunks can start on vectors
  /// (chunk rows a multiple of lanes / gcd(cols, lanes)); else rows.
  /// `minChunks`: cut it into at least that many chunks (when it has the
  /// rows), as a stripe at one address across that many slice groups.
  /// `acrossHemispheres`: when no hemisphere holds such a stripe, one over
  /// the slice groups of both (SramAllocator::acrossHemispheres).
  llvm::Expected<std::shared_ptr<Storage>> allocateStorage(ir::DType dtype, int64_t rows, int64_t cols,
                                                           SramOwner owner, int64_t align = 1,
                                                           const SramAllocator::Accept &accept = {},
                                                           bool packed = false, int64_t minChunks = 1,
                                                           bool acrossHemispheres = false);
  /// A view of all of `storage` as [rows, cols].
  static TensorView viewOf(std::shared_ptr<Storage> storage, ir::DType dtype, int64_t rows,
                           int64_t cols);
  int64_t vecsPerRow(int64_t cols) const { return (cols + chip_.lanes - 1) / chip_.lanes; }

  /// Critical path: `op`'s first vector cannot finish before its operands'
  /// paths plus `latency` (one vector through the op with no waiting).
  void notePath(const ir::Op &op, int64_t latency);
  /// Also: not before `from`'s path plus `latency` (an operand whose way
  /// through the op is longer, as a matmul's weights through the install).
  void notePathVia(const ir::Op &op, const ir::Op &from, int64_t latency);
  /// Also: not before cycle `end` (a path worked out through ops of its own).
  void notePathEnd(const ir::Op &op, int64_t end);
  /// Where `op`'s path ends; for an op computed inside its users' fusion
  /// group, where its group's inputs' paths end.
  int64_t pathOf(const ir::Op &op) const;
  /// Rows that come one after another: row r of `op` (r < cap) is ready
  /// no earlier than its path plus r * interval (a matmul's rows, whose
  /// `mm`s issue in row order on one plane's queue).
  void notePace(const ir::Op &op, int64_t interval, int64_t cap);
  /// `op`'s rows each follow `from`'s row of the same index through
  /// `latency` (as many rows, row r from row r: an elementwise op's
  /// operand, a reshape that keeps the rows, a reduction over the lanes).
  void notePaceVia(const ir::Op &op, const ir::Op &from, int64_t latency);
  /// When `op`'s first n rows can all be ready at the earliest: what a
  /// user that needs them all waits for (a transpose, a weight install).
  int64_t pathOfRows(const ir::Op &op, int64_t n) const;
  int64_t criticalPath = 0;
  std::map<const ir::Op *, int64_t> pathEnd;
  struct RowPace {
    int64_t base = 0, interval = 0, cap = 0;
    /// Rows n are `interval` apart per `perRows` of them: rows 0..n-1 no
    /// earlier than base + floor((n - 1) / perRows) * interval.
    int64_t perRows = 1;
    int64_t at(int64_t n) const { return base + (std::min(n, cap) - 1) / perRows * interval; }
    int64_t last() const { return at(cap); }
  };
  std::map<const ir::Op *, RowPace> rowPace;
  /// `op`'s rows come no faster than `pace` either (kept when its last row
  /// is later than the pace noted so far).
  void noteRowPace(const ir::Op &op, RowPace pace);
  /// `op`'s row pace: its own, or for an op computed inside its users'
  /// group, its operands' (the one whose last row comes latest).
  std::optional<RowPace> paceOf(const ir::Op &op) const;

  std::vector<PlaneState> planes; // sized by the driver
  /// Critical path: a plane multiplies one op's rows after another's (an
  /// install waits for the previous op's last matmul there). An op did
  /// `work` on the planes, its first matmul no earlier than `earliest`
  /// from its data: returns when that matmul can issue at the earliest
  /// (also after one of its planes is done with the ops before), and
  /// notes when each plane's last matmul can (one per issue interval, an
  /// install between weight sets). `passRows` > 0: every plane's work is
  /// passes of that many rows, each pass part of every row (a matmul's
  /// column tiles and K parts), so the first row's last matmul waits for
  /// the latest plane and comes in each plane's last pass: that is what is
  /// returned then.
  int64_t startOnPlanes(const std::vector<PlaneWork> &work, int64_t earliest, int64_t passRows = 0);

  /// The run's tensors are striped as the parameters are (SRAM nearly full
  /// of stripes, docs/scheduler.md "Striped SRAM"): cut into chunks over
  /// a hemisphere's slice groups but knobs.mapSlices, so that each takes a thin
  /// layer of the room left on top of the stripes; small ones stay whole.
  bool striped = false;
  /// The placement heuristics this schedule uses (Scheduler.h).
  PlacementHeuristics heuristics;
  /// The numeric tuning knobs (Knobs.def).
  TuningKnobs knobs;
  /// The plan's steps (Schedule::plan), as lowerings make their choices.
  std::vector<std::pair<const ir::Op *, std::string>> decisions;
  void decide(const ir::Op &op, std::string what) { decisions.push_back({&op, std::move(what)}); }
  /// Which heuristics decided anything, set or not (a set that differs
  /// from this one only in others gives the same schedule).
  mutable PlacementHeuristics heuristicsDecided{false, false, false, false, false, false};
  /// The chunks a tensor of `vectors` a plane is cut into at least.
  int64_t stripeChunks(ir::DType dtype, int64_t vectors) const {
    if (!striped || vectors < 64)
      return 1;
    const int64_t groups = (int64_t(chip_.memSlices / 2) - knobs.mapSlices) / int64_t(tensor::dtypeSize(dtype));
    return std::max<int64_t>(1, groups);
  }
  // Striped, the last knobs.mapSlices slices of each hemisphere are kept
  // from the run's tensors, for the lane maps and other constants that
  // must sit near their data but off its slices in space never written:
  // two stripes would otherwise cover a whole hemisphere between them.
  SramAllocator::Accept offMapSlices() const;

  /// SRAM for a lowering's intermediate vectors, [rows, cols] of `dtype`,
  /// owned by `op`; give it back with releaseScratch() once placed.
  /// `avoid`: slices it should not share (read in the same trees as it).
  /// `align`: chunk boundaries on multiples of that many rows (as
  /// allocateStorage), for a lowering that reads runs of rows together.
  /// `chunks`: cut into at least that many chunks of `align` rows each.
  llvm::Expected<TensorView> scratch(const ir::Op &op, ir::DType dtype, int64_t rows, int64_t cols,
                                     const std::vector<uint16_t> &avoid = {}, int64_t align = 1,
                                     int64_t chunks = 1);
  void releaseScratch(const TensorView &view);
  /// A constant [rows, cols] of `dtype` that `op`'s lowering needs (lane
  /// maps, masks, divisors, iota values), stored with the program (`data`:
  /// its elements in row-major order, little-endian) and kept in SRAM for
  /// the whole run, in space no block written during the run has used.
  /// Equal constants are stored once. `avoid`: slices it must not share
  /// (tensors read in the same cycles as it). The driver adds `constants`
  /// to the program's tensors.
  llvm::Expected<TensorView> constant(const ir::Op &op, ir::DType dtype, int64_t rows, int64_t cols,
                                      std::vector<uint8_t> data,
                                      const std::vector<uint16_t> &avoid = {});
  /// `v` (a view of a constant stored by `constant`) read from another
  /// copy of the same constant, stored on no slice of `avoid` (made now if
  /// none is); nullopt when `v` is no such constant.
  std::optional<TensorView> constantElsewhere(const ir::Op &op, const TensorView &v,
                                              const std::vector<uint16_t> &avoid);
  /// `v`, kept for the rest of the function: a view a tree reads that no
  /// op owns (another copy of a constant) outlives the code that chose it,
  /// since the reads are counted once the tree is placed.
  const TensorView &keep(TensorView v) {
    kept_.push_back(std::move(v));
    return kept_.back();
  }
  std::vector<backend::TensorPlacement> constants;

  // Set by the driver.
  std::map<const ir::Op *, std::vector<const ir::Op *>> users;
  std::map<const ir::Op *, bool> returned;
  std::map<const ir::Op *, bool> persistentResult; // define() keeps it forever

private:
  const backend::ChipDescription &chip_;
  Placer &placer_;
  SramAllocator &sram_;
  std::map<const ir::Op *, TensorView> views_;
  std::deque<TensorView> kept_; // keep(): a deque's elements stay where they are
  /// The instructions of `op`'s vector tree built inline (memoized).
  int64_t inlineNodes(const ir::Op *op) const;
  mutable std::map<const ir::Op *, int64_t> inlineNodes_;
  std::map<std::pair<std::string, std::vector<uint8_t>>, std::vector<TensorView>> constantViews_;
};

using LoweringFn = llvm::Error (*)(const ir::Op &op, LoweringContext &ctx);

/// The lowering of `kind`, or null when the scheduler cannot compile it yet.
LoweringFn loweringFor(ir::OpKind kind);

// The op families (scheduler/lower/).
llvm::Error lowerElementwise(const ir::Op &op, LoweringContext &ctx);
llvm::Error lowerMatmul(const ir::Op &op, LoweringContext &ctx);
/// Epilogues: elementwise work on a producer's result computed in the
/// producer's own vector trees, so the result never goes to SRAM and back.
/// The materialized elementwise op whose fusion group is `producer`'s only
/// use and reads it once per vector, with every other operand in SRAM (view
/// ops lowered early if needed); null when there is none. The driver skips
/// an op that already has its view.
const ir::Op *epilogueRoot(const ir::Op &producer, LoweringContext &ctx);
/// What an epilogue of `producer` reads as the producer's value: the
/// producer, or the last of single-use reshapes after it that keep its rows
/// (a Linear's matmul between its `[B, S, D]` reshapes). Those get no view:
/// the driver skips them.
const ir::Op *epilogueInput(const ir::Op &producer, const LoweringContext &ctx);
/// Adds vector (row, vec) of `root`'s group, computed from its operands in
/// SRAM, to `tree` (a weight prologue's row: LoweringContext::
/// weightPrologue); returns the result's node and adds the views it reads
/// to `reads`. An error when an op of the group has no VXM instruction or
/// an operand is not stored as `root` is.
llvm::Expected<int> buildGroup(WorkTree &tree, const ir::Op &root, int64_t row, int64_t vec,
                               LoweringContext &ctx, std::vector<const TensorView *> &reads);
/// Adds `root`'s group for vector (row, vec) to `tree`, node `value` being
/// `producer`'s vector; returns the result's node and adds the views it
/// reads to `reads`.
int buildEpilogue(WorkTree &tree, const ir::Op &root, const ir::Op &producer, int value, int64_t row,
                  int64_t vec, LoweringContext &ctx, std::vector<const TensorView *> &reads);
/// The MXM planes as lowerMatmul and lowerConv drive them (lower/Matmul.cpp):
/// jobs go to the planes in turn, each plane with one queue for iw and mm,
/// the next for lw and a third for acc (accQueue); `ctx.planes` keeps each
/// plane's ordering.
class MxmPlanes {
public:
  /// `dtype`: what the planes multiply, f16 (fp32 sums) or i8 (i32 sums,
  /// an `mm` every cycle).
  explicit MxmPlanes(LoweringContext &ctx, ir::DType dtype = ir::DType::F16);
  unsigned count() const { return count_; }
  /// The cycles between two `mm` on a plane.
  int64_t mmIssue() const { return mmIssue_; }
  /// The accumulators' dtype: f32, or i32 for i8.
  ir::DType accType() const { return dtype_ == ir::DType::I8 ? ir::DType::I32 : ir::DType::F32; }
  int64_t accRows() const { return accRows_; }
  int64_t iwLatency() const { return iwLatency_; }
  int64_t mmLatency() const { return mmLatency_; }
  PlaneState &state(unsigned p) { return ctx_.planes[p]; }
  /// The plane of an op's `job`-th job: the planes in order of their last
  /// matmul, least recently used first, so that an op's first job goes to a
  /// plane that is idle (its weights can load while the previous op still
  /// multiplies: parameters are in SRAM from cycle 0).
  unsigned plane(unsigned job) const { return order_[job % count_]; }
  /// A tree for one `lw` of a weight row on plane `p` (node 0: the caller
  /// sets its input).
  WorkTree loadWeights(unsigned p) const;
  /// Installs plane `p`'s loaded rows (once the row of the `lw` issued in
  /// `lastLw` has landed, and after the previous matmuls): the `iw` cycle.
  int64_t install(unsigned p, int64_t lastLw);
  /// A tree for one `mm` into accumulator row `m` (node 0: the caller sets
  /// its input).
  WorkTree matmul(unsigned p, int64_t m) const;
  /// Adds an `acc` read of accumulator row `m` to `tree`: its node.
  int accRead(WorkTree &tree, unsigned p, int64_t m) const;

private:
  unsigned mmQueue(unsigned p) const;
  unsigned accQueue(unsigned p) const;
  LoweringContext &ctx_;
  ir::DType dtype_;
  unsigned count_;
  int64_t accRows_, iwLatency_, mmLatency_, mmIssue_;
  std::vector<unsigned> order_;
};
/// A matmul for runMatmul: per batch, `rows` rows of A (K lanes) times a
/// [K, N] B. The callbacks build the pieces of the trees and name the views
/// they read (marked read once their tree is placed; read nodes set their
/// own notBefore).
struct MatmulWork {
  int64_t batches = 1, rows = 0, K = 0, N = 0;
  /// What the planes multiply: f16, or i8 (i32 sums; one piece each).
  ir::DType dtype = ir::DType::F16;
  /// The f16 pieces each operand goes into the MXM as (docs/scheduler.md,
  /// "f32 and bf16 matmuls"): 1, or 2 for an f32 value cut into the f16
  /// nearest it and the f16 nearest the rest. Per K-tile each piece of B is
  /// a weight set of its own, installed in turn; through B's first piece go
  /// all of A's pieces, through its second A's first only (the product of
  /// two second pieces is left out). All of it adds into one accumulator row.
  int aPieces = 1, bPieces = 1;
  /// Piece `piece` of row r of K-tile t of B's column tile j (batch b), for
  /// plane p.
  std::function<int(WorkTree &, int64_t b, int64_t t, int64_t r, int64_t j, unsigned p, int piece,
                    std::vector<const TensorView *> &reads)>
      weightRow;
  /// Piece `piece` of vector t of A's row m (batch b) on its way to plane
  /// p: lanes past the K-tile's rows must hold zeros or finite values the
  /// weights zero.
  std::function<int(WorkTree &, int64_t b, int64_t m, int64_t t, unsigned p, int piece,
                    std::vector<const TensorView *> &reads)>
      aVector;
  /// The accumulated f32 row (C row crow, column tile j) into what is written.
  std::function<int(WorkTree &, int value, int64_t crow, int64_t j, std::vector<const TensorView *> &reads)>
      finish;
  /// Optional: whether K-tile t adds anything to column tile j (an unused
  /// tile is neither loaded nor multiplied), and how many of its weight
  /// rows to load (the rest are 0).
  std::function<bool(int64_t b, int64_t t, int64_t j)> tileUsed;
  std::function<int64_t(int64_t b, int64_t t, int64_t j)> rowsLoaded;
  /// Optional: the order in which a job streams its rows m0..m0+rows-1
  /// (batch b; offsets from m0) through the planes and reads them out of the accumulators
  /// (default: row order). Each row keeps its own accumulator row, so the
  /// sums are the same whatever the order.
  std::function<std::vector<int64_t>(int64_t b, int64_t m0, int64_t rows)> rowOrder;
  /// Optional: rows that go to other chips in chunks (a reduce-scatter's
  /// partial sums), `rowChunk` rows each. Then each pass of a plane takes,
  /// of the rows ready when the plane comes to them, the chunks in turn
  /// (each chunk's rows in order), and `rowReady(b, m, t)` is when row m's
  /// K-tile t is ready.
  int64_t rowChunk = 0;
  std::function<int64_t(int64_t b, int64_t m, int64_t t)> rowReady;
  /// A job cut over planes may be cut into ranges of equal rows rather
  /// than whole K-tiles (runMatmul): for one batch of f16 operands whose
  /// every K-tile is used and loaded whole.
  bool balancedCut = false;
  /// Optional: rows of a batch per job (0: up to mxm_acc_rows). Jobs at
  /// least as many as the planes are not cut over them: each loads its
  /// own copy of the weights it needs.
  int64_t rowBlock = 0;
  /// Whole jobs go to the planes in blocks of consecutive batches rather
  /// than in turn: B's batches are stored in chunks of slices of their
  /// own (a cache stored a matrix to a chunk), so each plane loads its
  /// weights through its own read port.
  bool batchesInBlocks = false;
  /// Optional: whether row m of A (batch b) adds anything at K-tile t;
  /// when not, its `mm` is skipped (a convolution's output pixel whose
  /// input at that kernel offset is padding). A row no `mm` touched reads
  /// its accumulator's zeros.
  std::function<bool(int64_t b, int64_t m, int64_t t)> rowUsed;
  /// Optional: the row of C that C row `crow` (batch * rows + m) is
  /// written to (default: crow itself); `finish` still gets crow.
  std::function<int64_t(int64_t crow)> cRow;
};
/// The shortest lw, mm and acc trees a matmul placed, for the critical
/// path: a row of C is no earlier than its A vector's path + mm + acc, nor
/// its weights' path + lw + the install's latency + the mm's + acc.
struct MatmulSpans {
  ShortestSpan lw, mm, acc;
  std::vector<PlaneWork> planes; // per plane
  bool cutJobs = false;          // some job's K-tiles went to several planes
  int64_t fewestRows = 0;        // the fewest weight rows a pass loaded
  int64_t pathFromA() const { return mm.get() + acc.get(); }
  int64_t pathFromB(int64_t iwLatency, int64_t mmLatency) const {
    return lw.get() + iwLatency + mmLatency + acc.get();
  }
};
/// Jobs of (batch, column tile of mxm_dim, up to mxm_acc_rows rows) on the
/// MXM planes, written into C's rows (docs/scheduler.md, "Matmul").
/// How runMatmul shares `jobs` jobs of `kt` K-tiles each among `planes`
/// planes when every tile is used: `cut` parts a job (contiguous tiles or,
/// balanced, ranges of equal rows), and whether whole jobs would load some
/// plane more tiles than an even share, so that the tiles are `dealt`.
/// The weights' storage (Scheduler.cpp, weightChunkRows) reads it before
/// lowering.
struct PlaneShare {
  int64_t cut = 1;
  bool dealt = false;
};
PlaneShare planeShare(int64_t jobs, int64_t kt, int64_t planes);
/// The rows of the chunks a matmul's rows are to be taken in turns by
/// (MatmulWork::rowChunk): those of its row slices when its every use is a
/// slice of whole rows into chunks of one size (a reduce-scatter's partial
/// sums), or those of the matmul its one use leads to row by row as the
/// left operand (through reshapes, transposes of one-element axes,
/// converts, elementwise ops and softmaxes); 0 when none.
int64_t turnChunk(const ir::Op &op, const LoweringContext &ctx, int depth = 0);
llvm::Expected<MatmulSpans> runMatmul(const ir::Op &op, LoweringContext &ctx, const MatmulWork &work,
                                      const TensorView &C);

/// Multi-head attention (Q K^T, a scale, softmax, P V, split into heads
/// and merged back) whose heads' score rows pack into one vector: lowered
/// as a whole at the scores (lower/Attention.cpp, docs/scheduler.md
/// "Attention").
struct AttentionPlan {
  const ir::Op *scores = nullptr; // Q K^T: where the whole is lowered
  const ir::Op *scale = nullptr;  // the scores' epilogue root, or null
  const ir::Op *softmax = nullptr;
  const ir::Op *probs = nullptr;   // P in f16: the softmax or its convert
  const ir::Op *context = nullptr; // P V
  const ir::Op *merged = nullptr;  // heads merged into rows: the result
  const ir::Op *q = nullptr, *k = nullptr, *v = nullptr; // rows of H * dh
  /// Every op the plan lowers (the driver skips them): their reads happen
  /// at the scores.
  std::vector<const ir::Op *> absorbed;
  int64_t batches = 0, sq = 0, sk = 0, heads = 0, dh = 0;
};
/// The attentions of `fn` that pack (after ctx.users and ctx.returned are
/// known).
std::vector<AttentionPlan> findAttention(const ir::Function &fn, LoweringContext &ctx,
                                         const std::map<const ir::Op *, size_t> &index);
llvm::Error lowerAttention(const AttentionPlan &plan, LoweringContext &ctx);

/// Zeros the lanes from `valid` on of the f16 `value` on its way to plane
/// `p` (of `planes`): the MXM multiplies all lanes, and a NaN there times
/// an unloaded weight row's 0 is still NaN.
int zeroTail(WorkTree &tree, int value, unsigned valid, unsigned p, unsigned planes, unsigned lanes,
             ir::DType dtype = ir::DType::F16);
/// Whether every padding lane (past a row's last element) of `view`, the
/// value of `op` as a lowering reads it, is known to hold a finite value
/// (lower/PaddingLanes.cpp): else a lowering that streams its vectors
/// through the MXM zeroes them on the way (zeroTail).
bool finitePaddingLanes(const ir::Op &op, const TensorView &view, const LoweringContext &ctx);
/// Whether they are known to hold zeros (a channels-last pixel row whose
/// lanes past its channels are joined with another's by a bitwise `or`).
bool zeroPaddingLanes(const ir::Op &op, const TensorView &view, const LoweringContext &ctx);
/// Where transposeByGather writes: `define` gives the output view (rows of
/// the transposed shape); `laneOffset`, when set, puts output row o's lanes
/// from lane laneOffset(o) on (zeros elsewhere; a row of one vector).
struct TransposeTarget {
  std::function<llvm::Expected<TensorView *>()> define;
  std::function<int64_t(int64_t)> laneOffset;
  /// Set to a vector's way through the two steps (Placement::span).
  int64_t *path = nullptr;
};
/// Transposes `in` (the rows of logical shape `from`) by `perm`, which
/// moves the last axis, by SXM rotations and MEM gathers
/// (docs/scheduler.md, "Transposes"); nullopt when the maps cannot express
/// it. `op` names the constants and the errors.
std::optional<llvm::Error> transposeByGather(const ir::Op &op, LoweringContext &ctx, const TensorView &in,
                                             const std::vector<int64_t> &from,
                                             const std::vector<int64_t> &perm,
                                             const TransposeTarget &target);
llvm::Error lowerConv(const ir::Op &op, LoweringContext &ctx); // conv2d
llvm::Error lowerPool(const ir::Op &op, LoweringContext &ctx); // max_pool2d, avg_pool2d
llvm::Error lowerView(const ir::Op &op, LoweringContext &ctx); // reshape, broadcast
llvm::Error lowerReduce(const ir::Op &op, LoweringContext &ctx); // reduce_sum/mean/max/min
llvm::Error lowerSoftmax(const ir::Op &op, LoweringContext &ctx);
/// Data movement (transpose, slice, concat, reshapes and broadcasts that
/// move lanes): views where rows stay whole, else SXM lane moves.
llvm::Error lowerLayout(const ir::Op &op, LoweringContext &ctx);
llvm::Error lowerGather(const ir::Op &op, LoweringContext &ctx); // MEM gather
llvm::Error lowerUpdate(const ir::Op &op, LoweringContext &ctx); // MEM scatter, in place
llvm::Error lowerIota(const ir::Op &op, LoweringContext &ctx);
/// Whether `op` is a view of its operand's storage (no data moves): the
/// driver keeps the operand alive while the view is used.
bool aliasesOperand(const ir::Op &op, unsigned lanes);
/// The integer type of `t`'s width: the VXM's bitwise ops on it pass any
/// element's bits through (lane moves or them together; lower/Layout.cpp).
ir::DType bitsType(ir::DType t);
/// Whether every lane of `op`'s stored vectors holds the row's one element
/// (its last dimension is 1): last-axis reductions, splat constants, and
/// elementwise work on such values.
bool laneSplat(const ir::Op &op, unsigned lanes);
/// A broadcast [.., 1] -> [.., D] of a laneSplat value: its rows are the
/// operand's stored vectors as they are, a view (past one vector, each of
/// a row's vectors is the one stored: TensorView::repeatVector).
bool splatAcrossLanes(const ir::Op &op, unsigned lanes);
/// A broadcast of a single element (`[]` or all 1s: a per-tensor scale or
/// zero point): assembled as one stored row of copies that every row of
/// the result repeats, in any stored order (moveLanes).
bool uniformBroadcast(const ir::Op &op);
/// The row of a broadcast's operand (shape `from`, its dimensions aligned
/// to the end of `to`) that row `row` of the result (shape `to`) repeats:
/// the row's indices, 0 along the dimensions the operand has as 1.
int64_t broadcastSourceRow(const std::vector<int64_t> &to, const std::vector<int64_t> &from,
                           int64_t row);
/// Assembles every output vector of a layout op from the lanes of its
/// operands' vectors (SXM distribute, VXM or): any data movement.
llvm::Error moveLanes(const ir::Op &op, LoweringContext &ctx);
/// Copies `view` into a fresh SRAM block for `op` (an output that aliases
/// an input, a parameter or another output).
/// The copy becomes `op`'s view; `type` is the copied value's type.
llvm::Error lowerCopy(const ir::Op &op, const ir::Type &type, const TensorView &view,
                      LoweringContext &ctx);

/// `value`'s bytes as one element of `dtype` (little-endian; floats
/// rounded to nearest even, integers truncated and wrapped to their width),
/// for constants stored with the program.
void encodeElement(ir::DType dtype, double value, uint8_t *out);

/// An error for work the placer found no cycle for (a scheduler limit),
/// saying why its last place() failed.
llvm::Error cannotPlace(const ir::Op &op, LoweringContext &ctx);

/// Deals `view`'s rows over its storage's chunks as `deal` says
/// (docs/scheduler.md, "Window reads") when the storage has deal.chunks
/// chunks of deal.storedRows(rows) rows between them; false (nothing
/// changed) otherwise.
bool dealRows(TensorView &view, const RowDeal &deal);

/// How a channels-last window `window` (pooling, a convolution of more
/// than one kernel offset) would have its input's rows dealt: over
/// knobs.windowInterleave chunks, skewed by the kernel's width (times its
/// dilation) per row of pixels, so that the pixels of one window are in
/// different chunks. Off for anything else.
RowDeal windowDeal(const ir::Op &window, const TuningKnobs &knobs);

/// `X`, the input of `op`, a channels-last window that makes `reads` reads
/// of its rows: when its rows are in order on fewer chunks than the deal
/// has and the window reads each at least twice on average, a scratch
/// copy of it with the rows dealt by `deal`, written row by row as X's
/// rows are (one read of each row from X's port instead of `reads /
/// rows`). nullopt otherwise. Give it back with releaseScratch() once
/// `op` is placed.
llvm::Expected<std::optional<TensorView>> stageWindowInput(const ir::Op &op, LoweringContext &ctx,
                                                           const TensorView &X, int64_t reads,
                                                           RowDeal deal);

} // namespace lpu::scheduler
