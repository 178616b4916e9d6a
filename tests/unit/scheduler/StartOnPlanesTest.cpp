// LoweringContext::startOnPlanes: the critical path's earliest first mm
// of an op on its MXM planes, after the ops before it there. A plane that
// installs weights first waits for the install's latency; one that
// multiplies by the weights it holds (a variance on the ones its mean
// installed, PlaneState::heldOnes) waits only for its queue.
#include "LoweringFixture.h"

#include <gtest/gtest.h>

using namespace lpu;
using namespace lpu::scheduler;

namespace {

struct Fixture : LoweringFixture {
  MxmPlanes mxm{ctx}; // sets up ctx.planes
  int64_t iw = chip.timingOf(backend::Opcode::InstallWeights, ir::DType::F16).latency;
  int64_t issue = chip.timingOf(backend::Opcode::MatMul, ir::DType::F16).issue;
};

TEST(StartOnPlanes, AnInstallWaitsForItsLatency) {
  Fixture f;
  ASSERT_GT(f.iw, f.issue); // else the two cases below are one
  f.ctx.planes[0].pathLastMm = 100;
  std::vector<PlaneWork> work(f.mxm.count());
  work[0] = PlaneWork{3, 1};
  EXPECT_EQ(f.ctx.startOnPlanes(work, 0), 100 + 1 + f.iw);
  EXPECT_EQ(f.ctx.planes[0].pathLastMm, 100 + 1 + f.iw + 2 * f.issue);
}

TEST(StartOnPlanes, HeldWeightsWaitOnlyForTheQueue) {
  Fixture f;
  f.ctx.planes[1].pathLastMm = 100;
  std::vector<PlaneWork> work(f.mxm.count());
  work[1] = PlaneWork{3, 0};
  EXPECT_EQ(f.ctx.startOnPlanes(work, 0), 100 + f.issue);
  // Three mm's an issue interval apart, and no install between them.
  EXPECT_EQ(f.ctx.planes[1].pathLastMm, 100 + f.issue + 2 * f.issue);
}

TEST(StartOnPlanes, AnIdlePlaneStartsWhenTheInputAllows) {
  Fixture f;
  std::vector<PlaneWork> work(f.mxm.count());
  work[2] = PlaneWork{1, 1};
  EXPECT_EQ(f.ctx.startOnPlanes(work, 50), 50);
}

} // namespace
