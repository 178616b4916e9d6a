// fuse-elementwise: groups chains of elementwise ops (Unary, Binary,
// Ternary) that the scheduler can run as one pass over the vectors, with no
// SRAM round trip between them. Each op of a group gets `fusion = N`, N
// numbered from 0 in program order (of each group's first op) per function;
// a lone op gets no group. Constants, broadcasts and every other op stay
// outside.
//
// The rule: a value joins its producer's group to its users' groups when
// every user of it is elementwise, so a value read inside a group is read
// only there (it never needs to reach SRAM); a value with any other user
// (a matmul, a reduction, the return) ends its group. A merge is refused
// when the merged group would not be convex, i.e. when a path leaves the
// group and comes back (x -> matmul -> y with x and y in one group), since
// the group could then not run as one unit, and when the group would
// hold more than kMaxGroupOps ops. Running the pass again
// recomputes every group from scratch.
#include "ir/passes/PassUtil.h"
#include "ir/passes/Passes.h"

#include <numeric>

namespace lpu::ir {

namespace {

/// The most ops one group takes. A group is one work tree per vector in
/// the scheduler, whose cost grows faster than its size: a chain of 512
/// ops took 31 s to schedule and one of 16,384 overflowed the stack. A
/// longer chain is cut into groups of this many (one SRAM round trip per
/// cut); every elementwise sequence of the examples is far shorter.
constexpr size_t kMaxGroupOps = 64;

class FuseElementwise : public Pass {
public:
  llvm::StringRef name() const override { return "fuse-elementwise"; }

  bool run(Function &fn) override {
    ops_.clear();
    index_.clear();
    for (const std::unique_ptr<Op> &op : fn.ops()) {
      index_[op.get()] = ops_.size();
      ops_.push_back(op.get());
    }
    users_ = computeUsers(fn);
    parent_.resize(ops_.size());
    std::iota(parent_.begin(), parent_.end(), 0);
    members_.assign(ops_.size(), {});
    for (size_t i = 0; i < ops_.size(); ++i)
      members_[i] = {i};

    for (size_t i = 0; i < ops_.size(); ++i) {
      const Op *producer = ops_[i];
      auto it = users_.find(producer);
      if (!isElementwise(producer->kind()) || it == users_.end())
        continue;
      bool allElementwise = llvm::all_of(
          it->second, [](const Op *user) { return isElementwise(user->kind()); });
      if (!allElementwise)
        continue;
      llvm::DenseSet<size_t> roots{find(i)};
      for (const Op *user : it->second)
        roots.insert(find(index_[user]));
      size_t size = 0;
      for (size_t root : roots)
        size += members_[root].size();
      if (roots.size() > 1 && size <= kMaxGroupOps && isConvex(roots))
        merge(roots);
    }
    return assignGroups(fn);
  }

private:
  size_t find(size_t i) {
    while (parent_[i] != i)
      i = parent_[i] = parent_[parent_[i]];
    return i;
  }

  void merge(const llvm::DenseSet<size_t> &roots) {
    size_t into = *roots.begin();
    for (size_t root : roots) {
      if (root == into)
        continue;
      parent_[root] = into;
      members_[into].insert(members_[into].end(), members_[root].begin(), members_[root].end());
      members_[root].clear();
    }
  }

  /// Whether no path leaves the union of these groups and re-enters it.
  const std::vector<Op *> &usersOf(const Op *op) const {
    static const std::vector<Op *> none;
    auto it = users_.find(op);
    return it == users_.end() ? none : it->second;
  }

  bool isConvex(const llvm::DenseSet<size_t> &roots) {
    auto inside = [&](const Op *op) { return roots.contains(find(index_[op])); };
    size_t last = 0;
    std::vector<const Op *> work;
    llvm::DenseSet<const Op *> seen;
    for (size_t root : roots)
      for (size_t m : members_[root]) {
        last = std::max(last, m);
        for (const Op *user : usersOf(ops_[m]))
          if (!inside(user) && seen.insert(user).second)
            work.push_back(user);
      }
    while (!work.empty()) {
      const Op *op = work.back();
      work.pop_back();
      if (index_[op] > last)
        continue; // every member comes earlier, so nothing here leads back
      for (const Op *user : usersOf(op)) {
        if (inside(user))
          return false;
        if (seen.insert(user).second)
          work.push_back(user);
      }
    }
    return true;
  }

  bool assignGroups(Function &fn) {
    llvm::DenseMap<size_t, int64_t> number; // root -> group number
    int64_t next = 0;
    bool changed = false;
    for (size_t i = 0; i < ops_.size(); ++i) {
      Op *op = ops_[i];
      std::optional<int64_t> group;
      size_t root = find(i);
      if (isElementwise(op->kind()) && members_[root].size() > 1) {
        auto [it, inserted] = number.try_emplace(root, next);
        if (inserted)
          ++next;
        group = it->second;
      }
      if (op->fusionGroup() == group)
        continue;
      changed = true;
      if (group)
        op->setAttr("fusion", *group);
      else
        op->removeAttr("fusion");
    }
    return changed;
  }

  std::vector<Op *> ops_;
  llvm::DenseMap<const Op *, size_t> index_;
  UserMap users_;
  std::vector<size_t> parent_;
  std::vector<std::vector<size_t>> members_;
};

} // namespace

std::unique_ptr<Pass> createFuseElementwisePass() {
  return std::make_unique<FuseElementwise>();
}

} // namespace lpu::ir
