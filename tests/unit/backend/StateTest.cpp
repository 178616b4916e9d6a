// The states of a program (TensorPlacement::state) as runs see them: each
// state once with its type, zeros for a state input a run does not give,
// and a state never padded by a bucket.
#include "backend/Bucketing.h"

#include <gtest/gtest.h>

using namespace lpu;
using namespace lpu::backend;
using tensor::DType;

namespace {
TensorPlacement placed(TensorRole role, std::string name, DType dtype, std::vector<Dim> shape,
                       bool state) {
  TensorPlacement t;
  t.role = role;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.state = state;
  return t;
}

/// prefill<S in {8}>(ids: i32[1, S]) and decode(id: i32[1, 1]) over a
/// cache f16[8, 2] (8: the bucket size too, which a state must not take as
/// its name) and a counter only decode writes.
std::vector<Entry> entries() {
  Entry prefill{"prefill", {}};
  for (int64_t s : {8}) {
    Bucket b;
    b.dims = {{"S", s}};
    b.tensors = {placed(TensorRole::Input, "ids", DType::I32, {{1, ""}, {s, ""}}, false),
                 placed(TensorRole::Input, "cache", DType::F16, {{8, ""}, {2, ""}}, true),
                 placed(TensorRole::Output, "logits", DType::F32, {{1, ""}, {s, ""}}, false),
                 placed(TensorRole::Output, "cache", DType::F16, {{8, ""}, {2, ""}}, true)};
    prefill.buckets.push_back(std::move(b));
  }
  nameBucketDims(prefill);
  Entry decode{"decode", {Bucket{}}};
  decode.buckets[0].tensors = {
      placed(TensorRole::Input, "id", DType::I32, {{1, ""}, {1, ""}}, false),
      placed(TensorRole::Input, "cache", DType::F16, {{8, ""}, {2, ""}}, true),
      placed(TensorRole::Output, "count", DType::I32, {{1, ""}}, true)};
  return {prefill, decode};
}
} // namespace

TEST(States, BucketsNeverNameAStateDimension) {
  std::vector<Entry> e = entries();
  const Bucket &b = e[0].buckets[0];
  EXPECT_EQ(b.tensors[0].shape[1].name, "S"); // ids: padded
  EXPECT_EQ(b.tensors[1].shape[0].name, "");  // cache: 8 is S, but fixed
  EXPECT_EQ(b.tensors[1].shape[0].value, 8);
}

TEST(States, EachStateOnceWithItsType) {
  std::vector<tensor::TensorSpec> specs = stateSpecs(entries());
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "cache");
  EXPECT_EQ(specs[0].dtype, DType::F16);
  EXPECT_EQ(specs[0].shape, (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(specs[1].name, "count");
  EXPECT_EQ(specs[1].shape, (std::vector<int64_t>{1}));
}

TEST(States, ZerosForAStateNotGiven) {
  std::vector<Entry> e = entries();
  std::map<std::string, tensor::Tensor> inputs;
  inputs.emplace("ids", tensor::Tensor(DType::I32, {1, 3}));
  addZeroStates(e[0], inputs);
  ASSERT_EQ(inputs.count("cache"), 1u);
  EXPECT_EQ(inputs.at("cache"), tensor::Tensor(DType::F16, {8, 2}));
  auto choice = selectBucket(e[0], inputs);
  ASSERT_TRUE(bool(choice)) << llvm::toString(choice.takeError());
  EXPECT_EQ(choice->index, 0u);
  // A state given keeps its value; an output-only state is no input.
  std::map<std::string, tensor::Tensor> given;
  tensor::Tensor ones(DType::F16, {8, 2});
  for (int64_t i = 0; i < ones.numElements(); ++i)
    ones.setFloat(i, 1.0f);
  given.emplace("cache", ones);
  addZeroStates(e[1], given);
  EXPECT_EQ(given.size(), 1u);
  EXPECT_EQ(given.at("cache"), ones);
}

TEST(States, ASlicedStateIsWhole) {
  // Tensor parallelism gives each chip a slice of the cache (shard =
  // [axis, start, full]): the state is the whole f16[8, 4], not a slice.
  Entry decode{"decode", {Bucket{}}};
  for (int64_t start : {0, 2}) {
    TensorPlacement slice = placed(TensorRole::Input, "cache", DType::F16, {{8, ""}, {2, ""}}, true);
    slice.shard = {1, start, 4};
    decode.buckets[0].tensors.push_back(slice);
  }
  std::vector<tensor::TensorSpec> specs = stateSpecs({decode});
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].shape, (std::vector<int64_t>{8, 4}));
}
