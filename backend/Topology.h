// Multi-chip topologies: which C2C link of which chip is cabled to which link
// of which other chip. A program names its topology with a short spec:
//   single        one chip
//   node          8 chips, fully connected: 7 local links per chip
//   dragonfly:N   N nodes of 8 chips; each chip adds 4 global links, and a
//                 node's 32 global ports are spread over the other nodes
//                 (up to 33 nodes: every two nodes cabled; beyond, up to
//                 512, node n's port 2k goes to node n + k + 1 and port
//                 2k + 1 to node n - k - 1, and routes between far nodes
//                 pass through the nodes between)
// Local link k of chip c (0 <= k < 7) goes to chip (c + k + 1) mod 8 of the
// same node; global link 7 + g of chip c is port p = 4c + g of its node.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <optional>
#include <string>
#include <vector>

namespace lpu::backend {

struct LinkEnd {
  unsigned chip = 0;
  unsigned link = 0;
  bool operator==(const LinkEnd &) const = default;
};

class Topology {
public:
  static llvm::Expected<Topology> parse(llvm::StringRef spec, unsigned linksPerChip);

  const std::string &spec() const { return spec_; }
  unsigned numChips() const { return numChips_; }
  /// The far end of `link` on `chip`, or nullopt when it is not cabled.
  std::optional<LinkEnd> peer(unsigned chip, unsigned link) const;
  /// The link of `from` cabled straight to `to`, or nullopt.
  std::optional<unsigned> linkTo(unsigned from, unsigned to) const;
  /// `count` distinct chips, each cabled straight to the next: where the
  /// stages of a pipeline go (chip 0 first; every chip of a node before
  /// the next node, left through a global link). Nullopt when the topology
  /// has no such chain.
  std::optional<std::vector<unsigned>> chain(unsigned count) const;

private:
  std::string spec_;
  unsigned numChips_ = 1;
  unsigned linksPerChip_ = 0;
  std::vector<std::optional<LinkEnd>> peers_; // chip * linksPerChip + link
};

} // namespace lpu::backend
