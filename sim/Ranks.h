// A run spread over processes (ranks): which chips each simulates, and the
// few collective steps the machine needs between them. The simulator only
// sees this interface; sim/mpi/ implements it over MPI, and a run with no
// Ranks (or one rank) is the plain single-process run.
#pragma once

#include "backend/Program.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace lpu::sim {

class Ranks {
public:
  virtual ~Ranks() = default;
  virtual unsigned rank() const = 0;
  virtual unsigned size() const = 0;
  /// Every rank's `mine`, in rank order. Returns an error (the same on
  /// every rank that can still tell) when a rank does not take part in
  /// time: a rank that died, or a message that did not arrive.
  virtual llvm::Expected<std::vector<std::string>> allGather(std::string mine) = 0;
  /// `out[r]` goes to rank r; the result's [r] came from rank r.
  virtual llvm::Expected<std::vector<std::string>> allToAll(std::vector<std::string> out) = 0;
  /// Every rank's `mine` on rank 0, in rank order; empty strings elsewhere
  /// (what only rank 0 writes: outputs, the trace).
  llvm::Expected<std::vector<std::string>> gather(std::string mine) {
    std::vector<std::string> out(size());
    out[0] = std::move(mine);
    return allToAll(std::move(out));
  }
  /// Set while no rank can be left waiting for this one: every rank met the
  /// same error at one exchange (agree, a schedule violation), every rank
  /// checks the same command line (lpurun, before it reads files), or the
  /// run is done. An error then ends this rank normally; one while it is
  /// unset must end every rank (lpurun aborts them).
  bool settled = false;
  /// Bytes this rank has sent to other ranks so far, and the exchanges it
  /// took part in (for benchmarks: never part of a report).
  uint64_t bytesSent = 0, exchanges = 0;

  /// The chips rank r simulates: [first[r], first[r + 1]) of the chips
  /// (`busy`: whether each has work), contiguous, in rank order; as
  /// `counts` says when set (one count per rank, adding up to the chips),
  /// else with the chips that have work dealt as evenly as can be (an idle
  /// chip costs nothing to simulate: it stays with the busy chips before
  /// it).
  llvm::Expected<std::vector<unsigned>> firstChips(llvm::ArrayRef<bool> busy) const;
  /// Given chip counts per rank (lpurun --rank-chips); empty: even.
  std::vector<unsigned> counts;
};

/// Whether an MPI launcher started this process as one of several ranks
/// (its environment says so: OMPI_COMM_WORLD_SIZE, PMIX_SIZE or
/// PMI_SIZE above 1; MPI itself is not touched).
bool launchedWithRanks();

/// Each chip of `bucket`'s rank for `ranks` (null: every chip on rank 0).
llvm::Expected<std::vector<unsigned>> chipOwners(const Ranks *ranks, const backend::Bucket &bucket);

/// Whether this process simulates chip `chip` of `owners`.
inline bool ownsChip(const Ranks *ranks, llvm::ArrayRef<unsigned> owners, unsigned chip) {
  return !ranks || owners[chip] == ranks->rank();
}

/// Every rank's error agreed on: each rank's `local` (success or an
/// error) is gathered; all ranks then return the first rank's error, named
/// by its rank, or success when no rank failed. With no ranks (or one),
/// `local` itself.
llvm::Error agree(Ranks *ranks, llvm::Error local);

/// Every rank was given the same `what` (a program file's hash, say): an
/// error naming the first rank whose `value` differs from rank 0's.
llvm::Error sameOnEveryRank(Ranks *ranks, llvm::StringRef what, llvm::StringRef value);

/// Bytes in and out of the messages ranks exchange: plain little-endian
/// integers and length-prefixed byte strings.
class ByteWriter {
public:
  template <typename T> void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const char *p = reinterpret_cast<const char *>(&v);
    out_.append(p, sizeof(T));
  }
  void putBytes(llvm::StringRef bytes) {
    put<uint64_t>(bytes.size());
    out_.append(bytes.data(), bytes.size());
  }
  std::string take() { return std::move(out_); }

private:
  std::string out_;
};

class ByteReader {
public:
  explicit ByteReader(llvm::StringRef in) : in_(in) {}
  template <typename T> T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    if (in_.size() < sizeof(T)) {
      bad_ = true;
      in_ = {};
      return v;
    }
    std::memcpy(&v, in_.data(), sizeof(T));
    in_ = in_.drop_front(sizeof(T));
    return v;
  }
  llvm::StringRef getBytes() {
    uint64_t n = get<uint64_t>();
    if (n > in_.size()) {
      bad_ = true;
      in_ = {};
      return {};
    }
    llvm::StringRef s = in_.take_front(n);
    in_ = in_.drop_front(n);
    return s;
  }
  bool done() const { return in_.empty(); }
  /// Whether a read ran past the end (a message cut short).
  bool bad() const { return bad_; }

private:
  llvm::StringRef in_;
  bool bad_ = false;
};

} // namespace lpu::sim
