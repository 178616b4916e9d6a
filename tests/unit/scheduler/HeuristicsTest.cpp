// The placement heuristics' one table: every name parses to its own switch,
// "none" to none, an unknown name to an error that lists the known ones.
#include "scheduler/Scheduler.h"

#include <gtest/gtest.h>

#include <set>

namespace lpu::scheduler {
namespace {

int switchesOn(const PlacementHeuristics &h) {
  int on = 0;
  for (const PlacementHeuristic &p : placementHeuristicTable())
    on += h.*p.flag;
  return on;
}

TEST(HeuristicsTest, EveryNameTurnsOnItsOwnSwitch) {
  std::set<std::string> names;
  for (const PlacementHeuristic &p : placementHeuristicTable()) {
    EXPECT_TRUE(names.insert(p.name.str()).second) << p.name.str() << " listed twice";
    auto h = parsePlacementHeuristics({p.name.str()});
    ASSERT_TRUE(bool(h)) << llvm::toString(h.takeError());
    EXPECT_TRUE((*h).*p.flag);
    EXPECT_EQ(switchesOn(*h), 1);
  }
  // Every switch of PlacementHeuristics is in the table (four bools).
  EXPECT_EQ(placementHeuristicTable().size(), sizeof(PlacementHeuristics) / sizeof(bool));
}

TEST(HeuristicsTest, NoneIsTheEmptySet) {
  auto h = parsePlacementHeuristics({"none"});
  ASSERT_TRUE(bool(h));
  EXPECT_EQ(switchesOn(*h), 0);
}

TEST(HeuristicsTest, UnknownNameListsTheKnown) {
  auto h = parsePlacementHeuristics({"halved-partials", "bogus"});
  ASSERT_FALSE(bool(h));
  std::string message = llvm::toString(h.takeError());
  EXPECT_NE(message.find("'bogus'"), std::string::npos) << message;
  EXPECT_NE(message.find("squares-on-mxm"), std::string::npos) << message;
}

} // namespace
} // namespace lpu::scheduler
