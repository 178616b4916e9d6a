#include "sim/Ranks.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/Twine.h>

#include <cstdlib>

namespace lpu::sim {

llvm::Expected<std::vector<unsigned>> Ranks::firstChips(llvm::ArrayRef<bool> busy) const {
  const unsigned n = size(), chips = unsigned(busy.size());
  std::vector<unsigned> first(n + 1, chips);
  first[0] = 0;
  if (!counts.empty()) {
    if (counts.size() != n)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--rank-chips gives " + llvm::Twine(counts.size()) +
                                         " count(s) for " + llvm::Twine(n) + " rank(s)");
    uint64_t sum = 0;
    for (unsigned r = 0; r < n; ++r) {
      sum += counts[r];
      first[r + 1] = unsigned(std::min<uint64_t>(sum, chips));
    }
    if (sum != chips)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--rank-chips adds up to " + llvm::Twine(sum) +
                                         " chip(s); the program's bucket has " + llvm::Twine(chips) +
                                         " (its topology's)");
    return first;
  }
  uint64_t total = 0;
  for (bool b : busy)
    total += b;
  const bool none = total == 0;
  if (none)
    total = chips;
  // Rank r starts at the first busy chip before which total * r / n busy
  // chips lie (an idle chip stays with the busy chips before it).
  uint64_t seen = 0;
  unsigned r = 1;
  for (unsigned c = 0; c < chips && r < n; ++c) {
    if (!none && !busy[c])
      continue;
    while (r < n && seen >= total * r / n && seen > 0)
      first[r++] = c;
    ++seen;
  }
  return first;
}

llvm::Expected<std::vector<unsigned>> chipOwners(const Ranks *ranks, const backend::Bucket &bucket) {
  std::vector<unsigned> owners(bucket.chips.size(), 0);
  if (!ranks)
    return owners;
  std::vector<bool> busyVec;
  for (size_t c = 0; c < bucket.chips.size(); ++c)
    busyVec.push_back(llvm::any_of(bucket.codeOf(c).queues,
                                   [](const backend::Queue &q) { return !q.instrs.empty(); }));
  llvm::SmallVector<bool, 64> busy(busyVec.begin(), busyVec.end());
  auto first = ranks->firstChips(busy);
  if (!first)
    return first.takeError();
  for (unsigned r = 0; r + 1 < first->size(); ++r)
    for (unsigned c = (*first)[r]; c < (*first)[r + 1]; ++c)
      owners[c] = r;
  return owners;
}

bool launchedWithRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const char *v = std::getenv(name))
      return std::strtol(v, nullptr, 10) > 1;
  return false;
}

llvm::Error agree(Ranks *ranks, llvm::Error local) {
  if (!ranks || ranks->size() < 2)
    return local;
  // "1" and the message for an error, "0" for success.
  std::string mine = local ? "1" + llvm::toString(std::move(local)) : "0";
  auto all = ranks->allGather(mine);
  if (!all)
    return all.takeError();
  for (unsigned r = 0; r < all->size(); ++r)
    if (llvm::StringRef((*all)[r]).startswith("1")) {
      ranks->settled = true;
      std::string message = (*all)[r].substr(1);
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     r == 0 ? message : "rank " + std::to_string(r) + ": " + message);
    }
  return llvm::Error::success();
}

} // namespace lpu::sim

namespace lpu::sim {

llvm::Error sameOnEveryRank(Ranks *ranks, llvm::StringRef what, llvm::StringRef value) {
  if (!ranks || ranks->size() < 2)
    return llvm::Error::success();
  auto all = ranks->allGather(value.str());
  if (!all)
    return all.takeError();
  for (unsigned r = 1; r < all->size(); ++r)
    if ((*all)[r] != (*all)[0]) {
      ranks->settled = true;
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "rank " + std::to_string(r) + " was started with another " +
                                         what.str() + " than rank 0 (" + (*all)[r] + ", not " +
                                         (*all)[0] + ")");
    }
  return llvm::Error::success();
}

} // namespace lpu::sim
