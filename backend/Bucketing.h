// Bucket selection for a run: the smallest bucket whose input shapes hold
// the given inputs, the zero padding of inputs up to it and the cropping of
// outputs back to the sizes the inputs imply. Shared by the simulator and
// the reference interpreter (which describes an IR entry as an Entry).
#pragma once

#include "backend/Program.h"
#include "support/Tensor.h"

#include <llvm/Support/Error.h>

#include <map>
#include <string>

namespace lpu::backend {

/// A bucket as every tool prints it: "S=128 B=2", or "fixed shapes" when the
/// entry has no bucket sizes.
std::string bucketLabel(llvm::ArrayRef<BucketDim> dims);

/// Names each input and output dimension after the bucket size it equals
/// in every bucket of the entry (S in `S in {64, 128}`), so that a run may
/// pad it; every other dimension stays fixed. The compiler and the
/// reference interpreter both describe an entry this way.
/// `fromSource` (when it names an input or output) gives the bucket
/// dimension the source writes at each of its axes instead ("" for a fixed
/// one): with one size a set, `f16[B, 4]` at B = 4 is padded on its first
/// axis alone.
struct SourceDims {
  std::map<std::string, std::vector<std::string>> inputs, outputs;
};
void nameBucketDims(Entry &entry, const SourceDims &fromSource = {});

struct BucketChoice {
  unsigned index = 0;
  double paddingFraction = 0; // 1 - given input elements / bucket input elements
  std::map<std::string, int64_t> bound; // bucket dimension -> size in the inputs
};

/// Errors: an unknown or missing input, a wrong dtype or rank, or no bucket
/// that fits (listing the buckets).
llvm::Expected<BucketChoice> selectBucket(const Entry &entry,
                                          const std::map<std::string, tensor::Tensor> &inputs);

/// The shape of `t` with bucket dimensions replaced by their bound sizes.
std::vector<int64_t> boundShape(const TensorPlacement &t, const BucketChoice &choice);

/// The states the entries read or write (TensorPlacement::state), each
/// once, in the order first seen: name, dtype and shape (a state's shape
/// is fixed: the same in every bucket).
std::vector<tensor::TensorSpec> stateSpecs(llvm::ArrayRef<Entry> entries);

/// Adds to `inputs` every state input of `entry` it does not hold, as
/// zeros: a state starts at zero unless the run gives its first value.
void addZeroStates(const Entry &entry, std::map<std::string, tensor::Tensor> &inputs);

/// `value` zero-padded at the end of each dimension up to `shape`.
tensor::Tensor padTo(const tensor::Tensor &value, llvm::ArrayRef<int64_t> shape);
/// The leading `shape` block of `value`.
tensor::Tensor cropTo(const tensor::Tensor &value, llvm::ArrayRef<int64_t> shape);

} // namespace lpu::backend
