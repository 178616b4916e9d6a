// The lockstep schedule of chips that send to each other both ways
// (scheduler/MultiChip.cpp, docs/partitioning.md "The lockstep schedule"):
// the mailbox the chips' threads pass arrivals through, and that the group's
// schedule does not depend on thread timing and that a failing chip stops
// the chips waiting for it.
#include "scheduler/Scheduler.h"
#include "scheduler/Transfers.h"

#include "backend/ChipDescription.h"
#include "ir/Text.h"

#include <gtest/gtest.h>

#include <thread>

namespace lpu::scheduler {
namespace {

backend::ChipDescription chip() {
  auto c = backend::loadChipDescription("groqchip1");
  EXPECT_TRUE(bool(c)) << llvm::toString(c.takeError());
  return *c;
}

TEST(LockstepTest, MailboxHandsOverWhatTheSenderPublished) {
  TransferMailbox mailbox(2);
  std::optional<LinkTransfer> got;
  std::thread receiver([&] { got = mailbox.await(7, 0, 1); });
  LinkTransfer sent;
  sent.id = 7;
  sent.arrivals = {10, 20, 30};
  sent.perm = {1, 0};
  mailbox.publish(sent);
  receiver.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->arrivals, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(got->perm, (std::vector<uint8_t>{1, 0}));
  EXPECT_FALSE(mailbox.aborted(1));
}

TEST(LockstepTest, MailboxReleasesWaitersOfAFailedChip) {
  TransferMailbox mailbox(3);
  LinkTransfer early;
  early.id = 1;
  mailbox.publish(early);
  std::optional<LinkTransfer> late = LinkTransfer{};
  std::thread receiver([&] { late = mailbox.await(2, 0, 1); });
  mailbox.close(0);
  receiver.join();
  EXPECT_FALSE(late.has_value());
  EXPECT_TRUE(mailbox.aborted(1));
  EXPECT_FALSE(mailbox.aborted(2));
  // What the failed chip published before it failed is still there.
  EXPECT_TRUE(mailbox.await(1, 0, 2).has_value());
  EXPECT_FALSE(mailbox.aborted(2));
}

// Chip 0 and chip 1 each compute a partial; each sums one half of both
// (a reduce-scatter) and sends its sum to the other (an all-gather).
constexpr const char *kAllReduce = R"(func @f {
  %0 = input {chip = 0, name = "x"} : f16[32, 64]
  %1 = input {chip = 1, name = "x"} : f16[32, 64]
  %2 = param {chip = 0, path = "w0"} : f16[64, 320]
  %3 = param {chip = 1, path = "w1"} : f16[64, 320]
  %4 = matmul %0, %2 {chip = 0} : f16[32, 320]
  %5 = matmul %1, %3 {chip = 1} : f16[32, 320]
  %6 = slice %4 {chip = 0, limit = [16, 320], start = [0, 0]} : f16[16, 320]
  %7 = slice %4 {chip = 0, limit = [32, 320], start = [16, 0]} : f16[16, 320]
  %8 = slice %5 {chip = 1, limit = [16, 320], start = [0, 0]} : f16[16, 320]
  %9 = slice %5 {chip = 1, limit = [32, 320], start = [16, 0]} : f16[16, 320]
  %10 = transfer %8 {from = 1, to = 0} : f16[16, 320]
  %11 = add %6, %10 {chip = 0} : f16[16, 320]
  %12 = transfer %7 {from = 0, to = 1} : f16[16, 320]
  %13 = add %12, %9 {chip = 1} : f16[16, 320]
  %14 = transfer %13 {from = 1, to = 0} : f16[16, 320]
  %15 = transfer %11 {from = 0, to = 1} : f16[16, 320]
  %16 = concat %11, %14 {axis = 0, chip = 0} : f16[32, 320]
  %17 = concat %15, %13 {axis = 0, chip = 1} : f16[32, 320]
  return %16, %17 {names = ["a", "b"]}
}
)";

std::unique_ptr<ir::Module> parse(llvm::StringRef text) {
  auto module = ir::parseModule(text, "test.ir");
  EXPECT_TRUE(bool(module)) << llvm::toString(module.takeError());
  return module ? std::move(*module) : nullptr;
}

TEST(LockstepTest, EveryRunIsTheSameSchedule) {
  auto module = parse(kAllReduce);
  ASSERT_TRUE(module);
  const backend::ChipDescription c = chip();
  ScheduleOptions options;
  options.topology = "node";
  std::optional<Schedule> first;
  for (int run = 0; run < 8; ++run) {
    auto s = scheduleMultiChip(*module->functions[0], c, options);
    ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
    // Both chips send two values, each 16 vectors; the recvs of each are
    // placed no earlier than the vectors arrive.
    ASSERT_EQ(s->sent.size(), 4u);
    for (const LinkTransfer &t : s->sent)
      EXPECT_EQ(t.arrivals.size(), 16u);
    if (!first) {
      first = std::move(*s);
      continue;
    }
    EXPECT_EQ(s->cycles, first->cycles);
    ASSERT_EQ(s->queues.size(), first->queues.size());
    for (const auto &[q, list] : first->queues) {
      const auto &other = s->queues.at(q);
      ASSERT_EQ(other.size(), list.size());
      for (size_t i = 0; i < list.size(); ++i)
        EXPECT_EQ(other[i].cycle, list[i].cycle);
    }
  }
  // Chip 1's sends of its sum go out after chip 0's chunk arrived and was
  // added: the first vector of transfer 2 leaves after transfer 1's first
  // arrives.
  int64_t firstArrival1 = -1, firstArrival2 = -1;
  for (const LinkTransfer &t : first->sent) {
    if (t.id == 1)
      firstArrival1 = t.arrivals.front();
    if (t.id == 2)
      firstArrival2 = t.arrivals.front();
  }
  EXPECT_GT(firstArrival2, firstArrival1);
}

TEST(LockstepTest, AChipThatFailsStopsTheChipsWaitingForIt) {
  // Chip 1's weight fills more than a hemisphere: chip 1 fails before it
  // sends anything, and chip 0, waiting for transfer 0, stops.
  std::string text = kAllReduce;
  text.replace(text.find("%3 = param {chip = 1, path = \"w1\"} : f16[64, 320]"),
               std::string("%3 = param {chip = 1, path = \"w1\"} : f16[64, 320]").size(),
               "%3 = param {chip = 1, path = \"w1\"} : f16[64, 3200000]");
  text.replace(text.find("%5 = matmul %1, %3 {chip = 1} : f16[32, 320]"),
               std::string("%5 = matmul %1, %3 {chip = 1} : f16[32, 320]").size(),
               "%big = matmul %1, %3 {chip = 1} : f16[32, 3200000]\n"
               "  %5 = slice %big {chip = 1, limit = [32, 320], start = [0, 0]} : f16[32, 320]");
  auto module = parse(text);
  ASSERT_TRUE(module);
  ScheduleOptions options;
  options.topology = "node";
  auto s = scheduleMultiChip(*module->functions[0], chip(), options);
  ASSERT_FALSE(bool(s));
  llvm::Error e = s.takeError();
  EXPECT_NE(llvm::toString(std::move(e)).find("w1"), std::string::npos);
}

// Groups of the same work share a scheduled group's schedules, moved by
// the most any vector is late for them; the pattern they share is the one
// they fit with the least skew.
TEST(LockstepTest, AGroupSharesThePatternItFitsWithTheLeastSkew) {
  // One chip receiving two transfers of two vectors each.
  const GroupArrivals first = {{{100, 120}, {300, 320}}};
  const GroupArrivals second = {{{100, 120}, {150, 170}}};
  // The second transfer 150 cycles earlier than in the first pattern,
  // everything 1,000 later: the second pattern fits with no skew.
  const GroupArrivals group = {{{1100, 1120}, {1150, 1170}}};
  auto fit = closestPattern(group, {&first, &second});
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->pattern, 1u);
  EXPECT_EQ(fit->shift, 1000);
  EXPECT_EQ(fit->skew, 0);
  // Against the first alone: moved so that every vector is in time (by
  // the first transfer's 1,000), starting 150 cycles later than the
  // second transfer allows.
  fit = closestPattern(group, {&first});
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->pattern, 0u);
  EXPECT_EQ(fit->shift, 1000);
  EXPECT_EQ(fit->skew, 150);
  // A vector late by more than the others sets the shift.
  fit = closestPattern({{{1100, 1125}, {1150, 1170}}}, {&second});
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->shift, 1005);
  EXPECT_EQ(fit->skew, 5);
  // Nothing in common: no fit.
  EXPECT_FALSE(closestPattern({{{}, {}}}, {&first}).has_value());
  EXPECT_FALSE(closestPattern(group, {}).has_value());
}

TEST(LockstepTest, ASkewLargeAgainstThePatternsSpanGetsAScheduleOfItsOwn) {
  // Within 1,000 cycles, or a fiftieth of the span, a group shares.
  EXPECT_TRUE(sharesPattern(0, 10, 1, TuningKnobs{}));
  EXPECT_TRUE(sharesPattern(1000, 10, 1, TuningKnobs{}));
  EXPECT_FALSE(sharesPattern(1001, 10, 1, TuningKnobs{}));
  EXPECT_TRUE(sharesPattern(20000, 1000000, 1, TuningKnobs{}));
  EXPECT_FALSE(sharesPattern(20001, 1000000, 1, TuningKnobs{}));
  // A key with four patterns shares the closest whatever its skew.
  EXPECT_FALSE(sharesPattern(178000, 1670000, 3, TuningKnobs{}));
  EXPECT_TRUE(sharesPattern(178000, 1670000, 4, TuningKnobs{}));
}

} // namespace
} // namespace lpu::scheduler
