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

// Pipeline stages go along a chain of chips, each cabled straight to the
// next: a node's chips in turn, then on to another node over a global link.
TEST(Topology, ChainsCableEachChipToTheNext) {
  for (auto [spec, count] : {std::pair{"single", 1u}, {"node", 5u}, {"node", 8u},
                             {"dragonfly:2", 16u}, {"dragonfly:16", 128u}, {"dragonfly:33", 264u},
                             {"dragonfly:16", 20u}}) {
    auto t = Topology::parse(spec, 16);
    ASSERT_TRUE(bool(t)) << spec;
    auto chain = t->chain(count);
    ASSERT_TRUE(chain.has_value()) << spec << " " << count;
    ASSERT_EQ(chain->size(), count);
    EXPECT_EQ(chain->front(), 0u);
    std::set<unsigned> distinct(chain->begin(), chain->end());
    EXPECT_EQ(distinct.size(), count) << spec;
    for (size_t i = 0; i + 1 < chain->size(); ++i)
      EXPECT_TRUE(t->linkTo((*chain)[i], (*chain)[i + 1]).has_value())
          << spec << ": " << (*chain)[i] << " -> " << (*chain)[i + 1];
  }
  auto node = Topology::parse("node", 16);
  ASSERT_TRUE(bool(node));
  EXPECT_FALSE(node->chain(9).has_value());
}
