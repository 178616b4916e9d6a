// The placement heuristics' one table: every name parses to its own switch,
// "none" to none, an unknown name to an error that lists the known ones.
// The knobs' table holds them and every numeric knob once, with its default.
#include "scheduler/Scheduler.h"
#include "scheduler/Transfers.h"

#include <llvm/ADT/STLExtras.h>

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
  // Every switch of PlacementHeuristics is in the table (one bool each).
  EXPECT_EQ(placementHeuristicTable().size(), sizeof(PlacementHeuristics) / sizeof(bool));
}

TEST(HeuristicsTest, NoneIsTheEmptySet) {
  auto h = parsePlacementHeuristics({"none"});
  ASSERT_TRUE(bool(h));
  EXPECT_EQ(switchesOn(*h), 0);
}

// A variant is tried only when it sets a choice that came up otherwise
// than the default and every variant tried before it.
TEST(HeuristicsTest, VariantsDifferInChoicesThatCameUp) {
  const PlacementHeuristics first;
  PlacementHeuristics decided;
  for (const PlacementHeuristic &p : placementHeuristicTable())
    decided.*p.flag = false;
  EXPECT_TRUE(variantsToTry(decided, first).empty());
  // Only the variance's placement came up: one variant with it on the MXM,
  // however many sets differ in it besides choices that did not come up.
  decided.squaresOnMxm = true;
  std::vector<PlacementHeuristics> tried = variantsToTry(decided, first);
  ASSERT_EQ(tried.size(), 1u);
  EXPECT_TRUE(tried[0].squaresOnMxm);
  // Only the weights' storage came up: one variant with them whole.
  decided.squaresOnMxm = false;
  decided.weightsByKTile = true;
  tried = variantsToTry(decided, first);
  ASSERT_EQ(tried.size(), 1u);
  EXPECT_FALSE(tried[0].weightsByKTile);
  // Every choice came up: every variant that differs from the default.
  for (const PlacementHeuristic &p : placementHeuristicTable())
    decided.*p.flag = true;
  tried = variantsToTry(decided, first);
  EXPECT_EQ(tried.size(), heuristicVariants().size());
  for (size_t i = 0; i < tried.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      EXPECT_TRUE(llvm::any_of(placementHeuristicTable(), [&](const PlacementHeuristic &p) {
        return tried[i].*p.flag != tried[j].*p.flag;
      }));
}

TEST(HeuristicsTest, UnknownNameListsTheKnown) {
  auto h = parsePlacementHeuristics({"halved-partials", "bogus"});
  ASSERT_FALSE(bool(h));
  std::string message = llvm::toString(h.takeError());
  EXPECT_NE(message.find("'bogus'"), std::string::npos) << message;
  EXPECT_NE(message.find("squares-on-mxm"), std::string::npos) << message;
}

TEST(KnobsTest, TheTableHoldsEveryHeuristicAndNumberOnceWithItsDefault) {
  const PlacementHeuristics heuristics;
  const TuningKnobs knobs;
  std::set<std::string> names;
  size_t flags = 0;
  for (const Knob &k : knobTable()) {
    EXPECT_TRUE(names.insert(k.name.str()).second) << k.name.str();
    EXPECT_TRUE((k.flag != nullptr) != (k.number != nullptr)) << k.name.str();
    EXPECT_LE(k.min, k.dflt) << k.name.str();
    EXPECT_LE(k.dflt, k.max) << k.name.str();
    if (k.flag) {
      ++flags;
      EXPECT_EQ(k.dflt, heuristics.*k.flag ? 1 : 0) << k.name.str();
    } else {
      EXPECT_EQ(k.dflt, knobs.*k.number) << k.name.str();
    }
  }
  EXPECT_EQ(flags, placementHeuristicTable().size());
  EXPECT_EQ(knobValues(heuristics, knobs).size(), knobTable().size());
}

TEST(KnobsTest, SetKnobSetsOneNumberInItsRange) {
  TuningKnobs knobs;
  ASSERT_FALSE(static_cast<bool>(setKnob("rows-layout-advantage=9", knobs)));
  EXPECT_EQ(knobs.rowsLayoutAdvantage, 9);
  TuningKnobs others;
  others.rowsLayoutAdvantage = 9;
  EXPECT_EQ(knobs, others);
  for (const char *bad : {"rows-layout-advantage=0", "map-slices=33", "map-slices=x", "nope=1",
                          "weights-by-k-tile=1", "map-slices"}) {
    llvm::Error e = setKnob(bad, knobs);
    EXPECT_TRUE(static_cast<bool>(e)) << bad;
    llvm::consumeError(std::move(e));
  }
  EXPECT_EQ(knobs, others);
}

} // namespace
} // namespace lpu::scheduler
