// One MXM plane: a weight buffer filled row by row (lw), the installed
// weights (iw), and accumulator rows that matmuls (mm) add into and acc
// reads out. Matmuls are not computed one vector at a time: they queue up
// and run as one blocked kernel (MatmulKernel.h) when their results are
// needed (an acc read, a new install, the end of the run). The order of
// additions is fixed, so batching does not change any bit. With more than
// one host thread a batch runs in the background while the simulation goes
// on; the next batch of the plane, and any acc read, wait for it first, so
// batches still add in program order.
#pragma once

#include "backend/Isa.h"

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace lpu::sim {

class MxmPlane {
public:
  MxmPlane(unsigned dim, unsigned accRows, bool timingOnly, unsigned threads);
  ~MxmPlane();

  /// Each returns an empty string or the reason the schedule is wrong.
  std::string loadRow(backend::DType type, const float *row);
  std::string install(int64_t readyCycle);
  std::string multiply(backend::DType type, const float *act, uint32_t row, int64_t cycle,
                       int64_t doneCycle);
  /// Writes accumulator `row` as f32 or i32 planes (out may be nullptr in
  /// timing-only runs) and clears it.
  std::string readAcc(backend::DType type, uint32_t row, int64_t cycle, uint8_t *const *out);
  /// Starts the queued matmuls (in the background with several threads).
  void flush();
  /// Waits for the matmuls started so far.
  void wait();

private:
  unsigned dim_, accRows_;
  bool timingOnly_;
  unsigned threads_;
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
