// All chips of one program bucket: their state, the C2C traffic between
// them, and the run itself. Chips run in lock-step windows as long as the
// shortest link latency, so that within a window no chip can see another's
// data: the chips of a window may run on any number of threads and the
// result (bits, cycles, the first violation) is the same.
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Program.h"
#include "backend/Topology.h"
#include "sim/ChipSim.h"
#include "sim/Ranks.h"
#include "support/Progress.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/Error.h>

#include <memory>
#include <vector>

namespace lpu::sim {

struct RunOptions {
  unsigned threads = 1;
  bool timingOnly = false;
  bool trace = false;
  /// Where run() counts the cycles simulated so far (lpurun --progress);
  /// the program carries no predicted total, so the count has none.
  support::Progress progress;
  /// Set with more than one rank: this process simulates its rank's chips
  /// alone and exchanges each window's C2C traffic with the others
  /// (docs/simulator.md, "Several processes"). Results, cycles, reports and
  /// traces are those of one process.
  Ranks *ranks = nullptr;
};

struct RunReport {
  int64_t cycles = 0;
  double clockMHz = 0;
  std::vector<ChipStats> chips;
  std::vector<std::vector<std::string>> queueNames; // per chip, per queue
  unsigned lanes = 0;
  /// Host seconds spent in Machine::run (for benchmarks; the only field
  /// that differs between runs).
  double hostRunSeconds = 0;
};

class Machine {
public:
  static llvm::Expected<std::unique_ptr<Machine>>
  create(const backend::ChipDescription &chip, const backend::Program &program,
         const backend::Bucket &bucket, RunOptions options);

  /// Places a tensor's bytes (C order, the placement's concrete shape in
  /// this bucket) into SRAM, in its layout (rows or packed, through its perm
  /// and chunks); lanes past a row's (packed: a chunk's) last element are
  /// zero. A no-op for the data in timing-only runs.
  llvm::Error writeTensor(const backend::TensorPlacement &t, llvm::ArrayRef<uint8_t> bytes);
  /// Reads a placed tensor back (C order). Errors: a placement that does
  /// not fit this chip (which verifyProgram refuses first).
  llvm::Expected<std::vector<uint8_t>> readTensor(const backend::TensorPlacement &t);

  /// Runs to the end. A schedule violation is returned as an error naming
  /// the chip, unit, queue, instruction index and cycle (on every rank).
  llvm::Error run();

  /// Whether this process simulates `chip` (always, with one rank).
  bool owns(unsigned chip) const { return chips_.at(chip) != nullptr; }
  /// The rank that simulates each chip.
  llvm::ArrayRef<unsigned> owners() const { return owners_; }

  /// The `lanes` bytes of one SRAM vector (to check where a placement put
  /// its elements); empty in timing-only runs.
  llvm::MutableArrayRef<uint8_t> sramVector(unsigned chip, unsigned slice, unsigned addr);

  /// Every chip's figures (gathered from every rank by run()).
  RunReport report() const;
  /// Chrome / Perfetto trace JSON: a process per chip, a thread per queue,
  /// one complete event per issued instruction; 1 us in the viewer is one
  /// cycle. Sends and recvs carry their link's far end and cycles in their
  /// args, a flow event joins each send to its recv, and a thread per link
  /// in use shows each value's time on the wire.
  /// With several ranks, every rank's chips are gathered: call it on
  /// every rank (rank 0's result is the whole trace, the others' empty).
  llvm::Expected<std::string> traceJson() const;

private:
  Machine(const backend::ChipDescription &chip, const backend::Bucket &bucket,
          backend::Topology topology, RunOptions options)
      : chip_(chip), bucket_(bucket), topology_(std::move(topology)), options_(options) {}

  llvm::Expected<backend::PlacementGeometry> geometry(const backend::TensorPlacement &t) const;

  const backend::ChipDescription &chip_;
  const backend::Bucket &bucket_;
  backend::Topology topology_;
  RunOptions options_;
  /// The window loop over several ranks (run() with options_.ranks).
  llvm::Error runRanks();
  /// The violation that names the send of `lost`, a value no recv took
  /// (`left`: how many are left on its link), on its sender's chip.
  Violation unreceived(const C2cMessage &lost, size_t left);
  /// A chip's trace events, compact JSON, comma-separated.
  std::string chipTraceEvents(unsigned c) const;

  bool distributed() const { return options_.ranks && options_.ranks->size() > 1; }

  /// One per chip of the bucket; null for the chips other ranks simulate.
  std::vector<std::unique_ptr<ChipSim>> chips_;
  std::vector<unsigned> owners_;
  /// Every chip's stats and queue names, also the other ranks' (run()).
  std::vector<ChipStats> stats_;
  int64_t cycles_ = 0;
  double hostRunSeconds_ = 0;
};

} // namespace lpu::sim
