// One MXM plane: a weight buffer filled row by row (lw), the installed
// weights (iw), and accumulator rows that matmuls (mm) add into and acc
// reads out. Matmuls are not computed one vector at a time: they queue up
// and run as one blocked kernel (MatmulKernel.h) when their results are
// needed (an acc read, a new install, the end of the run). The order of
// additions is fixed, so batching does not change any bit. With more than
// one host thread a batch runs in the background while the simulation goes
// on; the next batch of the plane, and any acc read, wait for it first, so
// batches still add in program order.
//
// The plane checks the order of its events, never trusting the schedule:
// a weight row lands in the buffer at the end of cycle issue + latency - 1
// (as an SRAM write lands at the end of its cycle), and an install takes
// the buffer in its own cycle, so an install must come after every load
// into the buffer has landed, and a load must not be issued in the cycle
// of an install. Two events of one plane in one cycle whose outcome would
// depend on the order the simulator handles them in (two loads, a matmul
// and an install, a matmul into a row and its read-out) are violations
// too, and so are rows loaded and never installed at the end of the run.
#pragma once

#include "backend/Isa.h"

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace lpu::sim {

/// One issue of an MXM instruction: its queue, its index in the queue, its
/// repetition (0 for a plain issue) and its cycle.
struct MxmSite {
  uint32_t queue = 0, instr = 0, repetition = 0;
  int64_t cycle = -1;
};

class MxmPlane {
public:
  /// `describe` names a site in messages ("queue mxm1 instruction 5 (lw
  /// f16 p0 w0)").
  MxmPlane(unsigned dim, unsigned accRows, bool timingOnly, unsigned threads,
           std::function<std::string(const MxmSite &)> describe);
  ~MxmPlane();

  /// Each returns an empty string or the reason the schedule is wrong.
  /// `landsBy`: the cycle at whose end the row is in the buffer.
  std::string loadRow(backend::DType type, const float *row, const MxmSite &at, int64_t landsBy);
  std::string install(const MxmSite &at, int64_t readyCycle);
  std::string multiply(backend::DType type, const float *act, uint32_t row, const MxmSite &at,
                       int64_t doneCycle);
  /// Writes accumulator `row` as f32 or i32 planes (out may be nullptr in
  /// timing-only runs) and clears it.
  std::string readAcc(backend::DType type, uint32_t row, const MxmSite &at, uint8_t *const *out);
  /// At the end of the run: the last load of rows that no install took,
  /// and how many rows there are (0: none).
  unsigned uninstalledRows(MxmSite &lastLoad) const {
    lastLoad = lastLoad_;
    return bufferRows_;
  }
  /// Starts the queued matmuls (in the background with several threads).
  void flush();
  /// Waits for the matmuls started so far.
  void wait();

private:
  unsigned dim_, accRows_;
  bool timingOnly_;
  unsigned threads_;
  std::function<std::string(const MxmSite &)> describe_;
  // The schedule's events, for the order checks.
  MxmSite lastLoad_, lastInstall_, lastMm_;
  int64_t bufferLandsBy_ = -1; // the latest landing of a row in the buffer
  std::vector<MxmSite> lastRead_; // per accumulator row: its last acc
  std::vector<float> buffer_;
  unsigned bufferRows_ = 0;
  backend::DType bufferType_ = backend::DType::F16;
  std::shared_ptr<const std::vector<float>> weights_;
  backend::DType weightType_ = backend::DType::F16;
  int64_t installReady_ = -1;
  bool installed_ = false;
  std::vector<float> accF_;
  std::vector<int32_t> accI_;
  std::vector<int64_t> accReady_;
  std::vector<uint8_t> pendingRow_;
  std::vector<float> pendingAct_;
  std::vector<uint32_t> pendingRows_;
  std::future<void> job_;
  // The running batch's activations; reused for the batch after next, so
  // that the simulator does not fault in fresh pages for every batch.
  std::shared_ptr<std::vector<float>> runningAct_;
};

} // namespace lpu::sim
