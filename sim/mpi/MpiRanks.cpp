#include "sim/mpi/MpiRanks.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/Twine.h>
#include <llvm/Support/FormatVariadic.h>

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>
#include <unistd.h>

namespace lpu::sim::mpi {

namespace {
llvm::Error error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

} // namespace

llvm::Expected<std::unique_ptr<MpiRanks>> MpiRanks::start(int &argc, char **&argv, MpiOptions options) {
  int provided = 0;
  // Only the main thread calls MPI; the simulator's own threads do not.
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return error("MPI_Init failed");
  // Errors come back as codes (turned into llvm errors), never abort
  // inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiRanks>(new MpiRanks(unsigned(rank), unsigned(size), options));
}

MpiRanks::~MpiRanks() {
  if (!broken_)
    MPI_Finalize();
}

void MpiRanks::abort(int exitCode) {
  MPI_Abort(MPI_COMM_WORLD, exitCode);
  std::_Exit(exitCode);
}

void MpiRanks::injectFault() {
  // LPU_RANK_FAULT=RANK:EXCHANGE:exit (after EXCHANGE exchanges, the rank
  // dies instead of making the next) or RANK:EXCHANGE:mute (it never sends
  // that next exchange's messages).
  const char *spec = std::getenv("LPU_RANK_FAULT");
  if (!spec)
    return;
  llvm::SmallVector<llvm::StringRef, 3> parts;
  llvm::StringRef(spec).split(parts, ':');
  unsigned rank = 0;
  uint64_t at = 0;
  if (parts.size() != 3 || parts[0].getAsInteger(10, rank) || parts[1].getAsInteger(10, at) ||
      rank != rank_ || at != exchanges)
    return;
  if (parts[2] == "exit")
    std::_Exit(3);
  if (parts[2] == "mute") {
    // Silent past every other rank's timeout; then gone.
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.timeoutSeconds + 30));
    std::_Exit(3);
  }
}

namespace {
enum class Wait { Done, Failed, TimedOut };

/// Waits for `requests` until `timeout` seconds have passed.
Wait waitAll(std::vector<MPI_Request> &requests, double timeout) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  for (unsigned spins = 0;; ++spins) {
    int done = 0;
    if (MPI_Testall(int(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
      return Wait::Failed;
    if (done)
      return Wait::Done;
    if (std::chrono::steady_clock::now() > deadline)
      return Wait::TimedOut;
    // Yield for a while (an exchange is usually quick, and a yield lets a
    // rank sharing this core run), then sleep in short steps.
    if (spins > 5000)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    else
      std::this_thread::yield();
  }
}
} // namespace

llvm::Expected<std::vector<std::string>> MpiRanks::allGather(std::string mine) {
  std::vector<std::string> out(size_, mine);
  return allToAll(std::move(out));
}

llvm::Expected<std::vector<std::string>> MpiRanks::allToAll(std::vector<std::string> out) {
  if (broken_)
    return error("an earlier exchange between ranks failed");
  injectFault();
  ++exchanges;
  const unsigned n = size_;
  auto failed = [&](const char *what, Wait how) {
    broken_ = true;
    if (how == Wait::TimedOut)
      return error("the ranks did not all reach exchange " +
                   llvm::Twine(exchanges) + " (" + what + ") within " +
                   llvm::formatv("{0}", options_.timeoutSeconds) +
                   " s: a rank stopped, or a message between ranks was lost");
    return error("exchange " + llvm::Twine(exchanges) + " (" +
                 what + ") failed: a rank stopped");
  };
  std::vector<uint64_t> sendSizes(n), recvSizes(n);
  for (unsigned r = 0; r < n; ++r) {
    sendSizes[r] = out[r].size();
    if (r != rank_)
      bytesSent += out[r].size();
  }
  std::vector<MPI_Request> request(1);
  if (MPI_Ialltoall(sendSizes.data(), 1, MPI_UINT64_T, recvSizes.data(), 1, MPI_UINT64_T,
                    MPI_COMM_WORLD, &request[0]) != MPI_SUCCESS)
    return failed("sizes", Wait::Failed);
  if (Wait w = waitAll(request, options_.timeoutSeconds); w != Wait::Done)
    return failed("sizes", w);
  std::vector<int> sendCounts(n), sendDispl(n), recvCounts(n), recvDispl(n);
  std::string sendBuffer;
  uint64_t sendTotal = 0, recvTotal = 0;
  for (unsigned r = 0; r < n; ++r) {
    sendTotal += sendSizes[r];
    recvTotal += recvSizes[r];
  }
  if (sendTotal > uint64_t(INT_MAX) || recvTotal > uint64_t(INT_MAX))
    return error("an exchange of " +
                 llvm::Twine(std::max(sendTotal, recvTotal)) +
                 " bytes is larger than one MPI message may be (2 GiB)");
  sendBuffer.reserve(sendTotal);
  for (unsigned r = 0; r < n; ++r) {
    sendDispl[r] = int(sendBuffer.size());
    sendCounts[r] = int(sendSizes[r]);
    sendBuffer += out[r];
  }
  std::string recvBuffer(recvTotal, '\0');
  int at = 0;
  for (unsigned r = 0; r < n; ++r) {
    recvDispl[r] = at;
    recvCounts[r] = int(recvSizes[r]);
    at += recvCounts[r];
  }
  if (MPI_Ialltoallv(sendBuffer.data(), sendCounts.data(), sendDispl.data(), MPI_BYTE,
                     recvBuffer.data(), recvCounts.data(), recvDispl.data(), MPI_BYTE,
                     MPI_COMM_WORLD, &request[0]) != MPI_SUCCESS)
    return failed("data", Wait::Failed);
  if (Wait w = waitAll(request, options_.timeoutSeconds); w != Wait::Done)
    return failed("data", w);
  std::vector<std::string> in(n);
  for (unsigned r = 0; r < n; ++r)
    in[r] = recvBuffer.substr(size_t(recvDispl[r]), size_t(recvCounts[r]));
  return in;
}

} // namespace lpu::sim::mpi
