// Ranks over MPI (OpenMPI from Debian): the chips of one run spread over
// the processes `mpirun -np R lpurun ...` starts. Built only when CMake
// finds MPI; lpurun without it runs every chip in one process.
#pragma once

#include "sim/Ranks.h"

#include <memory>

namespace lpu::sim::mpi {

struct MpiOptions {
  /// The longest a rank waits for the others at one exchange before the
  /// run ends with an error (a rank that died, a message lost).
  double timeoutSeconds = 300;
};

class MpiRanks final : public Ranks {
public:
  /// MPI_Init and the world communicator.
  static llvm::Expected<std::unique_ptr<MpiRanks>> start(int &argc, char **&argv, MpiOptions options);
  ~MpiRanks() override;
  unsigned rank() const override { return rank_; }
  unsigned size() const override { return size_; }
  llvm::Expected<std::vector<std::string>> allGather(std::string mine) override;
  llvm::Expected<std::vector<std::string>> allToAll(std::vector<std::string> out) override;
  /// Ends every rank at once (after an error that left an exchange
  /// unfinished: MPI cannot be finalized then).
  [[noreturn]] void abort(int exitCode);
  /// Whether an exchange failed (MPI cannot be finalized: abort()).
  bool broken() const { return broken_; }
  /// Set the timeout after start (the flags are parsed once MPI is up).
  void setTimeout(double seconds) { options_.timeoutSeconds = seconds; }

private:
  MpiRanks(unsigned rank, unsigned size, MpiOptions options)
      : rank_(rank), size_(size), options_(options) {}
  /// The fault LPU_RANK_FAULT asks this rank to make at this exchange
  /// (tests of a rank that dies or goes silent).
  void injectFault();
  unsigned rank_, size_;
  MpiOptions options_;
  bool broken_ = false; // an exchange timed out: finalizing would hang
};

} // namespace lpu::sim::mpi
