#include "backend/Topology.h"

#include <algorithm>

namespace lpu::backend {

namespace {
constexpr unsigned kChipsPerNode = 8;
constexpr unsigned kLocalLinks = 7;
constexpr unsigned kGlobalLinks = 4;
constexpr unsigned kGlobalPorts = kChipsPerNode * kGlobalLinks;
constexpr unsigned kMaxNodes = 512;
} // namespace

llvm::Expected<Topology> Topology::parse(llvm::StringRef spec, unsigned linksPerChip) {
  Topology t;
  t.spec_ = spec.str();
  t.linksPerChip_ = linksPerChip;
  unsigned nodes = 0;
  if (spec == "single") {
    t.numChips_ = 1;
  } else if (spec == "node") {
    nodes = 1;
  } else if (spec.consume_front("dragonfly:")) {
    if (spec.getAsInteger(10, nodes) || nodes < 1 || nodes > kMaxNodes)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "dragonfly needs 1 to " + llvm::Twine(kMaxNodes) +
                                         " nodes, found '" + spec + "'");
  } else {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "unknown topology '" + spec +
                                       "' (expected single, node or dragonfly:N)");
  }
  if (nodes > 0) {
    unsigned needed = nodes > 1 ? kLocalLinks + kGlobalLinks : kLocalLinks;
    if (linksPerChip < needed)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "topology '" + t.spec_ + "' needs " + llvm::Twine(needed) +
                                         " C2C links per chip, the chip has " +
                                         llvm::Twine(linksPerChip));
    t.numChips_ = nodes * kChipsPerNode;
  }
  t.peers_.assign(size_t(t.numChips_) * linksPerChip, std::nullopt);
  for (unsigned n = 0; n < nodes; ++n) {
    for (unsigned c = 0; c < kChipsPerNode; ++c) {
      unsigned chip = n * kChipsPerNode + c;
      for (unsigned k = 0; k < kLocalLinks; ++k) {
        unsigned other = (c + k + 1) % kChipsPerNode;
        // The link on `other` that leads back to c.
        unsigned back = (c + kChipsPerNode - other - 1) % kChipsPerNode;
        t.peers_[size_t(chip) * linksPerChip + k] = LinkEnd{n * kChipsPerNode + other, back};
      }
      if (nodes < 2)
        continue;
      if (nodes > kGlobalPorts + 1) {
        // More nodes than a node has ports: a circulant. Port 2k goes to
        // node n + k + 1, port 2k + 1 to node n - k - 1 (the other's port
        // 2k); far nodes are reached through the nodes between.
        for (unsigned g = 0; g < kGlobalLinks; ++g) {
          unsigned p = c * kGlobalLinks + g;
          unsigned step = p / 2 + 1;
          unsigned m = p % 2 ? (n + nodes - step) % nodes : (n + step) % nodes;
          unsigned pBack = p ^ 1u;
          t.peers_[size_t(chip) * linksPerChip + kLocalLinks + g] =
              LinkEnd{m * kChipsPerNode + pBack / kGlobalLinks, kLocalLinks + pBack % kGlobalLinks};
        }
        continue;
      }
      // Port p of node n serves the other node q = p mod (nodes-1) steps
      // away; the k-th port towards a node meets the k-th port back.
      for (unsigned g = 0; g < kGlobalLinks; ++g) {
        unsigned p = c * kGlobalLinks + g;
        unsigned q = p % (nodes - 1), k = p / (nodes - 1);
        unsigned m = (n + 1 + q) % nodes;
        unsigned qBack = (n + nodes - m - 1) % nodes;
        unsigned pBack = k * (nodes - 1) + qBack;
        if (pBack >= kGlobalPorts)
          continue; // an odd port left over: not cabled
        unsigned otherChip = m * kChipsPerNode + pBack / kGlobalLinks;
        t.peers_[size_t(chip) * linksPerChip + kLocalLinks + g] =
            LinkEnd{otherChip, kLocalLinks + pBack % kGlobalLinks};
      }
    }
  }
  return t;
}

std::optional<unsigned> Topology::linkTo(unsigned from, unsigned to) const {
  for (unsigned l = 0; l < linksPerChip_; ++l)
    if (auto p = peer(from, l); p && p->chip == to)
      return l;
  return std::nullopt;
}

std::optional<std::vector<unsigned>> Topology::chain(unsigned count) const {
  if (count > numChips_)
    return std::nullopt;
  std::vector<unsigned> path;
  std::vector<bool> visited(numChips_, false);
  const unsigned nodes = std::max(1u, numChips_ / kChipsPerNode);
  std::vector<bool> nodeDone(nodes, false);
  unsigned entry = 0;
  while (path.size() < count) {
    unsigned node = entry / kChipsPerNode;
    nodeDone[node] = true;
    unsigned inNode = std::min<unsigned>(kChipsPerNode, numChips_);
    // The chip that leaves for a node not visited yet goes last.
    std::optional<std::pair<unsigned, unsigned>> exit; // {chip, next node's entry}
    if (path.size() + inNode < count)
      for (unsigned c = 0; c < inNode && !exit; ++c) {
        unsigned chip = node * kChipsPerNode + c;
        if (chip == entry)
          continue;
        for (unsigned l = kLocalLinks; l < linksPerChip_ && !exit; ++l)
          if (auto p = peer(chip, l); p && !nodeDone[p->chip / kChipsPerNode])
            exit = std::pair{chip, p->chip};
      }
    if (path.size() + inNode < count && !exit)
      return std::nullopt;
    path.push_back(entry);
    visited[entry] = true;
    for (unsigned c = 0; c < inNode && path.size() < count; ++c) {
      unsigned chip = node * kChipsPerNode + c;
      if (!visited[chip] && (!exit || chip != exit->first)) {
        path.push_back(chip);
        visited[chip] = true;
      }
    }
    if (!exit)
      break;
    path.push_back(exit->first);
    visited[exit->first] = true;
    entry = exit->second;
  }
  path.resize(std::min<size_t>(path.size(), count));
  if (path.size() < count)
    return std::nullopt;
  return path;
}

std::optional<LinkEnd> Topology::peer(unsigned chip, unsigned link) const {
  if (chip >= numChips_ || link >= linksPerChip_)
    return std::nullopt;
  return peers_[size_t(chip) * linksPerChip_ + link];
}

} // namespace lpu::backend
