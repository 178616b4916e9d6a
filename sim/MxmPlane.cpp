#include "sim/MxmPlane.h"

#include "sim/MatmulKernel.h"

#include <cstring>

namespace lpu::sim {

using backend::DType;

MxmPlane::MxmPlane(unsigned dim, unsigned accRows, bool timingOnly, unsigned threads,
                   std::function<std::string(const MxmSite &)> describe)
    : dim_(dim), accRows_(accRows), timingOnly_(timingOnly), threads_(threads),
      describe_(std::move(describe)), lastRead_(accRows), accReady_(accRows, -1) {}

MxmPlane::~MxmPlane() { wait(); }

void MxmPlane::wait() {
  if (job_.valid())
    job_.get();
}

std::string MxmPlane::loadRow(DType type, const float *row, const MxmSite &at, int64_t landsBy) {
  if (bufferRows_ == dim_)
    return "the weight buffer already holds " + std::to_string(dim_) + " rows (install first)";
  if (bufferRows_ > 0 && type != bufferType_)
    return "weight rows of different dtypes in one buffer";
  // Installs are handled in cycle order, so one that the row would land
  // after can only be of this very cycle.
  if (lastInstall_.cycle == at.cycle)
    return "load in the cycle of an install (" + describe_(lastInstall_) +
           "): the row would land at the end of cycle " + std::to_string(landsBy) +
           ", after the install took the buffer";
  if (lastLoad_.cycle == at.cycle)
    return "two loads into the weight buffer in one cycle (the other is " + describe_(lastLoad_) +
           "): their rows' order is undefined";
  lastLoad_ = at;
  bufferLandsBy_ = std::max(bufferLandsBy_, landsBy);
  bufferType_ = type;
  if (!timingOnly_) {
    if (buffer_.empty())
      buffer_.assign(size_t(dim_) * dim_, 0.0f);
    std::memcpy(buffer_.data() + size_t(bufferRows_) * dim_, row, dim_ * sizeof(float));
  }
  ++bufferRows_;
  return "";
}

std::string MxmPlane::install(const MxmSite &at, int64_t readyCycle) {
  if (bufferRows_ == 0)
    return "install with no weight rows loaded";
  if (bufferLandsBy_ == at.cycle)
    return "install in the cycle a weight row lands (the last load, " + describe_(lastLoad_) +
           ", lands at the end of cycle " + std::to_string(bufferLandsBy_) +
           "): the install would take the buffer without it";
  if (bufferLandsBy_ > at.cycle)
    return "install before the weight buffer's last load has landed (" + describe_(lastLoad_) +
           " lands at the end of cycle " + std::to_string(bufferLandsBy_) +
           "): the install would take the buffer without it";
  if (lastMm_.cycle == at.cycle)
    return "install in the cycle of a matmul on the plane (" + describe_(lastMm_) +
           "): which weights the matmul uses is undefined";
  lastInstall_ = at;
  flush(); // queued matmuls use the old weights
  if (!timingOnly_) {
    // Rows not loaded since the last install are zero.
    std::memset(buffer_.data() + size_t(bufferRows_) * dim_, 0,
                size_t(dim_ - bufferRows_) * dim_ * sizeof(float));
    // A batch still running keeps the old weights alive through its copy
    // of the pointer.
    weights_ = std::make_shared<const std::vector<float>>(std::move(buffer_));
    buffer_.assign(size_t(dim_) * dim_, 0.0f);
  }
  weightType_ = bufferType_;
  bufferRows_ = 0;
  bufferLandsBy_ = -1;
  installReady_ = readyCycle;
  installed_ = true;
  return "";
}

std::string MxmPlane::multiply(DType type, const float *act, uint32_t row, const MxmSite &at,
                               int64_t doneCycle) {
  const int64_t cycle = at.cycle;
  if (!installed_)
    return "matmul with no weights installed";
  if (cycle < installReady_)
    return "matmul before the weight install completes (at cycle " +
           std::to_string(installReady_) + ")";
  if (type != weightType_)
    return std::string("matmul of ") + tensor::dtypeName(type).str() + " against " +
           tensor::dtypeName(weightType_).str() + " weights";
  if (row >= accRows_)
    return "accumulator row " + std::to_string(row) + " outside the " + std::to_string(accRows_) +
           " rows";
  // An acc of the row in this cycle was handled first: the sum it read
  // would depend on that order.
  if (lastRead_[row].cycle == cycle)
    return "matmul into accumulator row " + std::to_string(row) + " in the cycle it is read out (" +
           describe_(lastRead_[row]) + "): whether the read sees it is undefined";
  lastMm_ = at;
  accReady_[row] = std::max(accReady_[row], doneCycle);
  if (timingOnly_)
    return "";
  if (pendingRow_.empty())
    pendingRow_.assign(accRows_, 0);
  // Two matmuls into one row must add in program order: run the first.
  if (pendingRow_[row])
    flush();
  pendingRow_[row] = 1;
  pendingRows_.push_back(row);
  pendingAct_.insert(pendingAct_.end(), act, act + dim_);
  return "";
}

void MxmPlane::flush() {
  if (pendingRows_.empty())
    return;
  wait(); // batches of one plane add in program order
  bool isFloat = weightType_ == DType::F16;
  if (isFloat && accF_.empty())
    accF_.assign(size_t(accRows_) * dim_, 0.0f);
  if (!isFloat && accI_.empty())
    accI_.assign(size_t(accRows_) * dim_, 0);
  for (uint32_t r : pendingRows_)
    pendingRow_[r] = 0;
  // The previous batch has finished (wait() above): its buffer takes the
  // next batch's activations.
  std::vector<float> recycled;
  if (runningAct_)
    recycled.swap(*runningAct_);
  recycled.clear();
  auto act = std::make_shared<std::vector<float>>();
  act->swap(pendingAct_);
  pendingAct_.swap(recycled);
  runningAct_ = act;
  auto rows = std::make_shared<std::vector<uint32_t>>(std::move(pendingRows_));
  pendingRows_.clear();
  auto weights = weights_;
  unsigned dim = dim_, threads = threads_;
  float *accF = accF_.data();
  int32_t *accI = accI_.data();
  auto run = [act, rows, weights, dim, threads, accF, accI, isFloat] {
    size_t batch = rows->size();
    if (isFloat) {
      accumulateMatmul(act->data(), rows->data(), batch, weights->data(), dim, accF, threads);
      return;
    }
    // int8 x int8 products summed over one plane stay below 2^24, so the
    // float kernel is exact; the running sum is kept in int32.
    std::vector<float> sums(batch * dim, 0.0f);
    std::vector<uint32_t> local(batch);
    for (size_t b = 0; b < batch; ++b)
      local[b] = uint32_t(b);
    accumulateMatmul(act->data(), local.data(), batch, weights->data(), dim, sums.data(), threads);
    for (size_t b = 0; b < batch; ++b) {
      int32_t *acc = accI + size_t((*rows)[b]) * dim;
      for (unsigned j = 0; j < dim; ++j)
        acc[j] = int32_t(uint32_t(acc[j]) + uint32_t(int32_t(sums[b * dim + j])));
    }
  };
  if (threads_ > 1)
    job_ = std::async(std::launch::async, run);
  else
    run();
}

std::string MxmPlane::readAcc(DType type, uint32_t row, const MxmSite &at, uint8_t *const *out) {
  const int64_t cycle = at.cycle;
  if (row >= accRows_)
    return "accumulator row " + std::to_string(row) + " outside the " + std::to_string(accRows_) +
           " rows";
  if (accReady_[row] > cycle)
    return "accumulator row " + std::to_string(row) + " read before its matmul completes (at cycle " +
           std::to_string(accReady_[row]) + ")";
  lastRead_[row] = at;
  if (timingOnly_ || !out)
    return "";
  flush();
  wait();
  bool isFloat = type == DType::F32;
  for (unsigned j = 0; j < dim_; ++j) {
    uint32_t bits = 0;
    if (isFloat) {
      float v = accF_.empty() ? 0.0f : accF_[size_t(row) * dim_ + j];
      std::memcpy(&bits, &v, 4);
    } else {
      bits = accI_.empty() ? 0 : uint32_t(accI_[size_t(row) * dim_ + j]);
    }
    for (unsigned b = 0; b < 4; ++b)
      out[b][j] = uint8_t(bits >> (8 * b));
  }
  if (isFloat && !accF_.empty())
    std::memset(accF_.data() + size_t(row) * dim_, 0, dim_ * sizeof(float));
  if (!isFloat && !accI_.empty())
    std::memset(accI_.data() + size_t(row) * dim_, 0, dim_ * sizeof(int32_t));
  return "";
}

} // namespace lpu::sim
