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

// Beyond 33 nodes a node cannot be cabled to every other: a circulant in
// which node n reaches nodes n +- 1 .. n +- 16 directly, every node the
// same, and every chip reaches every other.
TEST(Topology, LargeDragonflyIsACirculant) {
  auto t = Topology::parse("dragonfly:128", 16);
  ASSERT_TRUE(bool(t));
  EXPECT_EQ(t->numChips(), 1024u);
  expectSymmetric(*t, 16);
  for (unsigned n = 0; n < 128; ++n) {
    std::set<unsigned> reached;
    for (unsigned c = n * 8; c < n * 8 + 8; ++c)
      for (unsigned l = 7; l < 11; ++l) {
        auto p = t->peer(c, l);
        ASSERT_TRUE(p.has_value());
        reached.insert((p->chip / 8 + 128 - n) % 128);
      }
    std::set<unsigned> offsets;
    for (unsigned k = 1; k <= 16; ++k)
      offsets.insert({k, 128 - k});
    EXPECT_EQ(reached, offsets) << "node " << n;
    // The next node over the same link of the same chip, for every node.
    EXPECT_EQ(*t->peer(n * 8, 7), (LinkEnd{(n + 1) % 128 * 8, 8}));
  }
  // Connected: every chip from chip 0.
  std::vector<bool> seen(1024, false);
  std::vector<unsigned> queue{0};
  seen[0] = true;
  for (size_t i = 0; i < queue.size(); ++i)
    for (unsigned l = 0; l < 11; ++l)
      if (auto p = t->peer(queue[i], l); p && !seen[p->chip]) {
        seen[p->chip] = true;
        queue.push_back(p->chip);
      }
  EXPECT_EQ(queue.size(), 1024u);
  EXPECT_TRUE(fails(Topology::parse("dragonfly:513", 16)));
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
                             {"dragonfly:16", 20u}, {"dragonfly:128", 1024u}}) {
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
