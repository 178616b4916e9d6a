#include "backend/Topology.h"

#include <gtest/gtest.h>

#include <set>

using namespace lpu::backend;

namespace {
template <typename T> bool fails(llvm::Expected<T> e) {
  if (e)
    return false;
  llvm::consumeError(e.takeError());
  return true;
}

// Every cabled link leads to a link that leads back.
void expectSymmetric(const Topology &t, unsigned links) {
  for (unsigned c = 0; c < t.numChips(); ++c)
    for (unsigned l = 0; l < links; ++l)
      if (auto p = t.peer(c, l)) {
        ASSERT_LT(p->chip, t.numChips());
        ASSERT_NE(p->chip, c);
        auto back = t.peer(p->chip, p->link);
        ASSERT_TRUE(back.has_value());
        EXPECT_EQ(*back, (LinkEnd{c, l}));
      }
}
} // namespace

TEST(Topology, NodeIsFullyConnected) {
  auto t = Topology::parse("node", 16);
  ASSERT_TRUE(bool(t));
  EXPECT_EQ(t->numChips(), 8u);
  expectSymmetric(*t, 16);
  for (unsigned c = 0; c < 8; ++c) {
    std::set<unsigned> reached;
    for (unsigned l = 0; l < 7; ++l)
      reached.insert(t->peer(c, l)->chip);
    EXPECT_EQ(reached.size(), 7u);
    EXPECT_FALSE(t->peer(c, 7).has_value());
  }
  EXPECT_EQ(*t->peer(0, 0), (LinkEnd{1, 6}));
}

TEST(Topology, DragonflyJoinsEveryPairOfNodes) {
  auto t = Topology::parse("dragonfly:9", 16);
  ASSERT_TRUE(bool(t));
  EXPECT_EQ(t->numChips(), 72u);
  expectSymmetric(*t, 16);
  std::set<std::pair<unsigned, unsigned>> nodePairs;
  for (unsigned c = 0; c < 72; ++c)
    for (unsigned l = 7; l < 11; ++l)
      if (auto p = t->peer(c, l))
        nodePairs.insert({c / 8, p->chip / 8});
  EXPECT_EQ(nodePairs.size(), 9u * 8u);
}

TEST(Topology, BadSpecs) {
  EXPECT_TRUE(fails(Topology::parse("ring", 16)));
  EXPECT_TRUE(fails(Topology::parse("dragonfly:0", 16)));
  auto few = Topology::parse("dragonfly:2", 8);
  ASSERT_FALSE(bool(few));
  EXPECT_EQ(llvm::toString(few.takeError()),
            "topology 'dragonfly:2' needs 11 C2C links per chip, the chip has 8");
}
