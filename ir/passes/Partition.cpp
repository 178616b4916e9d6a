#include "ir/passes/Partition.h"
#include "ir/Text.h"

#include <llvm/ADT/SmallVector.h>

#include <algorithm>
#include <cmath>
#include <climits>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace lpu::ir {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

bool isLeaf(const Op &op) { return opClass(op.kind()) == OpClass::Leaf; }

uint64_t bytesOf(const Type &type) {
  return uint64_t(type.numElements()) * tensor::dtypeSize(type.dtype);
}

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1 << 20));
  return buf;
}

/// The function's non-leaf ops but the return, in program order: what the
/// stages are cut from.
std::vector<const Op *> bodyOps(const Function &fn) {
  std::vector<const Op *> body;
  for (const auto &op : fn.ops())
    if (!isLeaf(*op) && op->kind() != OpKind::Return)
      body.push_back(op.get());
  return body;
}

/// Where a stage may start: never inside a fusion group (a group runs on
/// one chip) nor between a contraction and the work the scheduler fuses
/// into it (its epilogue).
std::vector<bool> legalCuts(const std::vector<const Op *> &body) {
  std::map<int64_t, std::pair<size_t, size_t>> span;
  for (size_t i = 0; i < body.size(); ++i)
    if (auto g = body[i]->fusionGroup()) {
      auto [it, fresh] = span.try_emplace(*g, i, i);
      if (!fresh)
        it->second.second = i;
    }
  std::vector<bool> legal(body.size() + 1, true);
  for (size_t i = 0; i < body.size(); ++i)
    for (const Op *operand : body[i]->operands())
      if (opClass(operand->kind()) == OpClass::Contract)
        legal[i] = false; // its epilogue

  for (const auto &[group, range] : span)
    for (size_t i = range.first + 1; i <= range.second; ++i)
      legal[i] = false;
  return legal;
}

/// Whether each op's value is work on the inputs (the stream the pipeline
/// carries), which crosses chips; the others (leaves, masks and position
/// tables computed from constants, views of weights or of inputs, a decode
/// step's mask computed from its one-element position, and the rows of a
/// small table looked up there: a decode step's rotary angles) are computed
/// again on every chip that reads them. Each of those chips then holds the
/// table (at most kSmallTableBytes); the row would otherwise cross from the
/// first stage to every later one, tying each stage's schedule to its
/// distance from the first (no two stages alike, none sharing a schedule).
std::map<const Op *, bool> streamed(const Function &fn) {
  constexpr uint64_t kSmallTableBytes = uint64_t(1) << 20;
  constexpr int64_t kSmallRowsElements = 4096;
  std::map<const Op *, bool> fromInput, work, small;
  for (const auto &op : fn.ops()) {
    bool input = op->kind() == OpKind::Input, w = false;
    // Computed from constants and one-element inputs alone.
    bool onlySmall = op->kind() == OpKind::Input ? op->type().numElements() <= 1
                                                 : op->kind() != OpKind::Param;
    const bool view = op->kind() == OpKind::Reshape || op->kind() == OpKind::Broadcast ||
                      op->kind() == OpKind::Transpose || op->kind() == OpKind::Slice;
    // A few rows of a small table at such a position.
    const bool lookup = op->kind() == OpKind::Gather && op->type().numElements() <= kSmallRowsElements &&
                        op->operand(0)->kind() == OpKind::Param &&
                        op->operand(0)->type().byteSize() <= kSmallTableBytes;
    for (const Op *operand : op->operands()) {
      input |= fromInput[operand];
      w |= work[operand] || (!view && fromInput[operand]);
      onlySmall &= small[operand] || (lookup && operand == op->operand(0));
    }
    fromInput[op.get()] = input;
    work[op.get()] = w && !onlySmall;
    small[op.get()] = onlySmall;
  }
  return work;
}

/// Keeps only the cuts the fewest values cross (the residual stream between
/// two layers, not a layer's insides) and, of neighbouring ones, those the
/// fewest bytes cross (a norm's f16 input, not its f32 widening).
void fewestCrossings(const Function &fn, const std::vector<const Op *> &body,
                     std::vector<bool> &legal, int64_t slack) {
  std::map<const Op *, bool> dep = streamed(fn);
  std::map<const Op *, size_t> index, lastUse;
  for (size_t i = 0; i < body.size(); ++i)
    index[body[i]] = i;
  // A reshape is its operand seen in another shape: the operand crosses.
  auto root = [](const Op *op) {
    while (op->kind() == OpKind::Reshape)
      op = op->operand(0);
    return op;
  };
  for (size_t i = 0; i < body.size(); ++i)
    for (const Op *operand : body[i]->operands())
      if (index.count(root(operand)) && dep[operand])
        lastUse[root(operand)] = std::max(lastUse[root(operand)], i);
  // An output crosses no cut: the return collects each from the chip that
  // computes it (a state's new value, an early result of a tuple).
  // crossing[i]: values defined before op i and read at or after it.
  std::vector<int64_t> delta(body.size() + 2, 0);
  std::vector<int64_t> deltaBytes(body.size() + 2, 0);
  for (const auto &[op, last] : lastUse) {
    delta[index[op] + 1] += 1;
    delta[last + 1] -= 1;
    int64_t bytes = int64_t(bytesOf(op->type()));
    deltaBytes[index[op] + 1] += bytes;
    deltaBytes[last + 1] -= bytes;
  }
  std::vector<int64_t> crossing(body.size() + 1, 0), crossingBytes(body.size() + 1, 0);
  int64_t running = 0, runningBytes = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    running += delta[i];
    runningBytes += deltaBytes[i];
    crossing[i] = running;
    crossingBytes[i] = runningBytes;
  }
  // A cut with no work on the stream before it (only views of the inputs,
  // which every chip computes again) or none after it cuts nothing: zero
  // values cross it, and it would win over every cut between layers,
  // leaving a stage empty (a 3-D input reshaped before its first matmul).
  std::vector<bool> workBefore(body.size() + 1, false), workAfter(body.size() + 1, false);
  for (size_t i = 0; i < body.size(); ++i)
    workBefore[i + 1] = workBefore[i] || dep[body[i]];
  for (size_t i = body.size(); i-- > 0;)
    workAfter[i] = workAfter[i + 1] || dep[body[i]];
  for (size_t i = 1; i < body.size(); ++i)
    if (!workBefore[i] || !workAfter[i])
      legal[i] = false;
  int64_t fewest = INT64_MAX;
  for (size_t i = 1; i < body.size(); ++i)
    if (legal[i])
      fewest = std::min(fewest, crossing[i]);
  for (size_t i = 1; i < body.size(); ++i)
    if (legal[i] && crossing[i] > fewest + slack)
      legal[i] = false;
  for (size_t i = 1; i < body.size();) {
    if (!legal[i]) {
      ++i;
      continue;
    }
    size_t end = i;
    int64_t least = INT64_MAX;
    for (; end < body.size() && legal[end]; ++end)
      least = std::min(least, crossingBytes[end]);
    for (size_t j = i; j < end; ++j)
      legal[j] = crossingBytes[j] == least;
    i = end;
  }
}

/// The weights (params) and states each body op reads directly: what a
/// stage holds for the program's lifetime.
struct StageCosts {
  std::vector<double> cost;
  std::vector<llvm::SmallVector<const Op *, 2>> params;
  /// Params some op reads other than as a matmul's weights (operand 1).
  std::set<const Op *> notOnlyWeights;
  /// States an update at a run-time position writes in place (their one
  /// reader; the scheduler's scatter): held once, not twice.
  std::set<const Op *> inPlace;
  unsigned lanes = 320;
};

bool isState(const Op &op) { return op.kind() == OpKind::Input && op.boolAttr("state").value_or(false); }

/// The SRAM a state takes, stored a row to whole vectors: once when an
/// update writes it in place, else twice (its new value is a second
/// tensor: a prefill's update at a position known when compiling, an
/// update along the last axis, a state read by more than its update).
uint64_t stateCopyBytes(const Op &p, unsigned lanes) {
  const Type &t = p.type();
  const int64_t cols = t.rank() ? t.shape.back() : 1;
  const int64_t rows = cols ? t.numElements() / cols : 0;
  const int64_t stored = (cols + lanes - 1) / lanes * lanes;
  return uint64_t(rows) * uint64_t(stored) * tensor::dtypeSize(t.dtype);
}

uint64_t heldBytes(const Op &p, const StageCosts &sc) {
  if (!isState(p))
    return bytesOf(p.type());
  return (sc.inPlace.count(&p) ? 1 : 2) * stateCopyBytes(p, sc.lanes);
}

StageCosts costsOf(const std::vector<const Op *> &body, const PartitionCosts &costs) {
  StageCosts out;
  out.lanes = costs.lanes;
  std::map<const Op *, int> readers;
  for (const Op *op : body)
    for (const Op *operand : op->operands())
      ++readers[operand];
  for (const Op *op : body)
    if (op->kind() == OpKind::Update &&
        updatesInPlace(*op, size_t(readers[op->operand(0)]), costs.lanes, costs.sliceVectors))
      out.inPlace.insert(op->operand(0));
  for (const Op *op : body) {
    out.cost.push_back(partitionCost(*op, costs));
    llvm::SmallVector<const Op *, 2> params;
    for (size_t i = 0; i < op->operands().size(); ++i) {
      const Op *operand = op->operand(i);
      if (operand->kind() != OpKind::Param && !isState(*operand))
        continue;
      if (!(op->kind() == OpKind::Matmul && i == 1))
        out.notOnlyWeights.insert(operand);
      if (!llvm::is_contained(params, operand))
        params.push_back(operand);
    }
    out.params.push_back(std::move(params));
  }
  return out;
}

/// A weight's bytes, and whether the scheduler may put its chunks in both
/// hemispheres (every use a matmul's weights: docs/scheduler.md, "Striped
/// SRAM").
struct WeightBytes {
  uint64_t bytes;
  bool eitherHalf;
};

/// Whether weights fit in `room`: a tensor's byte planes stay in one
/// hemisphere of the chip (the scheduler's rule), so the weights must go
/// into two halves of `room`, not merely add up to it (three 59 MB shards
/// of a Llama-2-70B MLP make 177 MB, under a chip's room, but no two of
/// them share a half), except matmul weights, whose chunks may go to
/// both. Largest first, each into the half with more room left; then the
/// matmul weights into what both halves have left.
bool fitsInHalves(std::vector<WeightBytes> weights, uint64_t room) {
  std::sort(weights.begin(), weights.end(),
            [](const WeightBytes &a, const WeightBytes &b) { return a.bytes > b.bytes; });
  uint64_t half[2] = {room / 2, room - room / 2};
  uint64_t either = 0;
  for (const WeightBytes &w : weights) {
    if (w.eitherHalf) {
      either += w.bytes;
      continue;
    }
    uint64_t &into = half[0] >= half[1] ? half[0] : half[1];
    if (w.bytes > into)
      return false;
    into -= w.bytes;
  }
  return either <= half[0] + half[1];
}

std::vector<WeightBytes> bytesOfEach(const std::set<const Op *> &params, const StageCosts &sc) {
  std::vector<WeightBytes> weights;
  for (const Op *p : params) {
    if (isState(*p)) {
      // Each copy (its old and, unless written in place, its new value) a
      // tensor in one hemisphere.
      for (int copy = sc.inPlace.count(p) ? 1 : 2; copy > 0; --copy)
        weights.push_back({stateCopyBytes(*p, sc.lanes), false});
      continue;
    }
    weights.push_back({bytesOf(p->type()), !sc.notOnlyWeights.count(p)});
  }
  return weights;
}

/// Greedy stages no costlier than `limit`, cut only where legal, each with
/// its weights within `room` (fitsInHalves): the ops between two legal
/// cuts (a block) go to one stage, the next block to the same stage while
/// it stays within both. Empty when one block's weights alone exceed `room` (`tooBig`: its
/// first op).
/// Only the ops [lo, hi) when `hi` is given (a region between two pins
/// that name chips); a stage starts at every `forced` cut (a pin).
std::vector<PipelineStage> greedyStages(const std::vector<const Op *> &body,
                                        const StageCosts &sc, const std::vector<bool> &legal,
                                        double limit, uint64_t room, size_t *tooBig = nullptr,
                                        const std::vector<bool> *forced = nullptr, size_t lo = 0,
                                        size_t hi = SIZE_MAX) {
  hi = std::min(hi, body.size());
  std::vector<PipelineStage> stages;
  PipelineStage cur;
  cur.firstOp = lo;
  std::set<const Op *> held;
  size_t begin = lo;
  while (begin < hi) {
    size_t end = begin + 1;
    while (end < hi && !legal[end])
      ++end;
    double cost = 0;
    std::set<const Op *> params;
    for (size_t i = begin; i < end; ++i) {
      cost += sc.cost[i];
      params.insert(sc.params[i].begin(), sc.params[i].end());
    }
    uint64_t alone = 0, extra = 0;
    for (const Op *p : params) {
      alone += bytesOf(p->type());
      if (!held.count(p))
        extra += bytesOf(p->type());
    }
    if (!fitsInHalves(bytesOfEach(params, sc), room)) {
      if (tooBig)
        *tooBig = begin;
      return {};
    }
    std::set<const Op *> together = held;
    together.insert(params.begin(), params.end());
    if (begin > cur.firstOp && ((forced && (*forced)[begin]) || cur.cost + cost > limit ||
                                !fitsInHalves(bytesOfEach(together, sc), room))) {
      cur.endOp = begin;
      stages.push_back(cur);
      cur = PipelineStage{};
      cur.firstOp = begin;
      held.clear();
      extra = alone;
    }
    cur.cost += cost;
    cur.weightBytes += extra;
    held.insert(params.begin(), params.end());
    begin = end;
  }
  cur.endOp = hi;
  stages.push_back(cur);
  for (size_t s = 0; s < stages.size(); ++s)
    stages[s].chip = unsigned(s);
  return stages;
}

/// The repeated part of a body (a model's identical layers): the ops from
/// `start` on, for `count` ops, where each op does what the op `period`
/// before it did (same kind, type and attributes other than names, and
/// operands of the same types: not the same ops, since each layer reads
/// the one before, nor of the same kinds, since the first reads what came
/// before the layers); `period` 0 when nothing repeats at least twice.
struct Repeats {
  size_t start = 0, count = 0, period = 0;
};

Repeats repeatsOf(const std::vector<const Op *> &body) {
  // What each op does, as a number.
  std::map<std::string, size_t> numbers;
  std::vector<size_t> what;
  for (size_t i = 0; i < body.size(); ++i) {
    const Op &op = *body[i];
    std::string sig = std::string(mnemonic(op.kind())) + ":" + op.type().str();
    for (const auto &[name, value] : op.attrs())
      if (!std::holds_alternative<std::string>(value) && name != "fusion")
        sig += ";" + name + "=" + attrToString(value);
    for (const Op *operand : op.operands())
      sig += "|" + operand->type().str();
    what.push_back(numbers.try_emplace(sig, numbers.size()).first->second);
  }
  // The period whose run of repeats covers the most ops (the shortest of
  // equals: one layer, not two).
  Repeats best;
  for (size_t period = 1; 2 * period <= what.size(); ++period) {
    size_t run = 0;
    for (size_t i = 0; i + period < what.size(); ++i) {
      run = what[i] == what[i + period] ? run + 1 : 0;
      if (run >= period && run + period > best.count)
        best = Repeats{i + 1 - run, run + period, period};
    }
  }
  return best;
}

/// `legal` with, inside the repeated part of the body, only the cuts at
/// the same place of every period (the first place legal in all of
/// them), so that stages of as many periods do the same work and the
/// scheduler schedules one of them for all (docs/partitioning.md,
/// "Stages alike"). Nullopt when nothing repeats or no place is legal in
/// every period.
std::optional<std::vector<bool>> alignedToRepeats(const std::vector<const Op *> &body,
                                                  const std::vector<bool> &legal) {
  const Repeats r = repeatsOf(body);
  if (r.period == 0)
    return std::nullopt;
  const size_t end = r.start + r.count;
  for (size_t phase = 0; phase < r.period; ++phase) {
    bool everywhere = true;
    for (size_t at = r.start + phase; at < end && everywhere; at += r.period)
      everywhere = legal[at];
    if (!everywhere)
      continue;
    std::vector<bool> aligned = legal;
    for (size_t at = r.start; at < end; ++at)
      if ((at - r.start) % r.period != phase)
        aligned[at] = false;
    return aligned;
  }
  return std::nullopt;
}

uint64_t room(const PartitionCosts &costs);

/// The legal cuts: those the fewest values cross, or, when the weights
/// between two of them fit on no chip (a layer larger than a chip), those
/// a few more values cross, as few more as lets every block fit.
/// `stages`: for a hybrid partition's groups, also as few more as let
/// that many stages be balanced (none over kGroupImbalance times an even
/// share of the cost), or failing that as few more as let the weights fit
/// in that many stages at all (a Llama-2-70B on 128 nodes: cuts inside the
/// MLP, where a fourth value crosses), or failing that those that give
/// the fewest stages (for the error). With `stages` 1 (--chips auto), the
/// fewest crossings that fit: more slack can save nodes but fills the
/// chips and cuts layers in more ways, so fewer stages share a schedule
/// (docs/partitioning.md, "The hybrid partition"). A group's SRAM holds
/// many layers, so the weights rarely force the slack up, and the fewest
/// crossings may all be before the first layer (a BERT's attention mask
/// is live in every layer).
std::vector<bool> cutsThatFit(const Function &fn, const std::vector<const Op *> &body,
                              const StageCosts &sc, const PartitionCosts &costs,
                              unsigned stages = 1) {
  constexpr int64_t kMaxSlack = 8;
  constexpr double kGroupImbalance = 1.25;
  double total = 0;
  for (double c : sc.cost)
    total += c;
  // `within`: the first whose fewest stages by weight are no more than
  // `stages`; `least`: the first with the fewest stages of all (what the
  // error names when no slack fits `stages`).
  std::vector<bool> legal, within, least;
  size_t leastStages = SIZE_MAX;
  for (int64_t slack = 0; slack <= kMaxSlack; ++slack) {
    legal = legalCuts(body);
    fewestCrossings(fn, body, legal, slack);
    const size_t fewest = greedyStages(body, sc, legal, HUGE_VAL, room(costs)).size();
    if (fewest == 0)
      continue;
    if (costs.chipsPerStage <= 1 || stages <= 1)
      return legal;
    if (fewest < leastStages) {
      leastStages = fewest;
      least = legal;
    }
    if (within.empty() && fewest <= stages)
      within = legal;
    std::vector<PipelineStage> even =
        greedyStages(body, sc, legal, kGroupImbalance * total / stages, room(costs));

    // (A block between two cuts costlier than the limit is a stage of its
    // own, over it.)
    if (!even.empty() && even.size() <= stages &&
        llvm::all_of(even, [&](const PipelineStage &st) {
          return st.cost <= kGroupImbalance * total / stages;
        }))
      return legal;
  }
  if (!within.empty())
    return within;
  return !least.empty() ? least : legal;
}

uint64_t room(const PartitionCosts &costs) {
  return uint64_t(double(costs.sramBytesPerChip) * costs.weightFill);
}

llvm::Error noChipHolds(const std::vector<const Op *> &body, const StageCosts &sc, size_t at,
                        const PartitionCosts &costs) {
  std::string what;
  uint64_t bytes = 0;
  for (const Op *p : sc.params[at]) {
    what += (what.empty() ? "" : ", ") +
            (isState(*p) ? "state " + p->stringAttr("name").value_or("?") : p->stringAttr("path").value_or("?"));
    bytes += heldBytes(*p, sc);
  }
  const std::string holder =
      costs.chipsPerStage > 1 ? "group of " + std::to_string(costs.chipsPerStage) + " chips" : "chip";
  return error("no " + holder + " can hold the weights of one stage: " +
               std::string(mnemonic(body[at]->kind())) + " reads " + what + " (" + mib(bytes) +
               " with the weights it cannot be cut from), more than the " + mib(room(costs)) +
               " a " + holder + "'s SRAM gives weights" +
               (bytes <= room(costs) ? " in two hemispheres, each tensor within one" : ""));
}

} // namespace

double partitionCost(const Op &op, const PartitionCosts &costs) {
  auto elements = [](const Type &t) { return double(t.numElements()); };
  switch (op.kind()) {
  case OpKind::Matmul: {
    const Type &a = op.operand(0)->type();
    return elements(op.type()) * double(a.shape.back()) / costs.macsPerCycle;
  }
  case OpKind::Conv2d: {
    const Type &w = op.operand(1)->type();
    return elements(op.type()) * double(w.shape[1] * w.shape[2] * w.shape[3]) / costs.macsPerCycle;
  }
  default: {
    double work = elements(op.type());
    for (const Op *operand : op.operands())
      work = std::max(work, elements(operand->type()));
    return work / costs.elementsPerCycle;
  }
  }
}

namespace {

/// The pins' constraints on a pipeline (PartitionPins.h): the cuts where a
/// stage must start, and the chips that some of those stages must be.
struct PinnedCuts {
  std::vector<bool> forced;
  std::map<size_t, std::pair<unsigned, std::string>> chipAt; // cut -> chip, the pin
  std::vector<std::string> stagePins;                         // the `stage` pins used
};

/// `unit` is what a pin's `chip:N` names: "chip", or "node" in a hybrid
/// partition (its stages are groups of chips).
llvm::Expected<PinnedCuts> pinnedCuts(const Function &fn, const StageCosts &sc, std::vector<bool> &legal,
                                      llvm::ArrayRef<PartitionPin> pins, unsigned chips,
                                      const std::string &unit) {
  PinnedCuts out;
  out.forced.assign(legal.size(), false);
  for (const PartitionPin &pin : pins) {
    if (pin.tensor())
      continue;
    size_t first = SIZE_MAX, last = 0;
    for (size_t i = 0; i < sc.params.size(); ++i)
      for (const Op *p : sc.params[i])
        if (pinMatches(pin, paramPath(*p))) {
          first = std::min(first, i);
          last = std::max(last, i);
        }
    if (first == SIZE_MAX)
      continue; // no weight of this function: the pin is another entry's
    size_t cut = first;
    while (cut > 0 && !legal[cut])
      --cut;
    if (pin.action == PartitionPin::Action::Stage) {
      // A stage starts at the function's first op anyway; a layer later
      // than that with no cut before it cannot start one (ignoring the
      // pin would compile what was not asked for).
      if (cut == 0 && first > 0)
        return error("pin '" + pin.text + "': no cut before the first op that reads its " +
                     "weights (more values cross every point before it than at the cuts " +
                     "the partition takes), so no stage can start at its layer");
      out.forced[cut] = cut > 0;
      out.stagePins.push_back(pin.text);
      continue;
    }
    if (pin.chip >= chips)
      return error("pin '" + pin.text + "' names " + unit + " " + llvm::Twine(pin.chip) +
                   ", but func @" + fn.name() + " is partitioned onto " + llvm::Twine(chips) + " " +
                   unit + "s");
    if (pin.chip > 0 && cut == 0)
      return error("pin '" + pin.text + "': no cut before the first op that reads its weights, " +
                   "so nothing can go on the " + unit + "s before " + unit + " " +
                   llvm::Twine(pin.chip));
    // Chip 0's stage starts at the first op: a layer with work before it
    // cannot start it (the layers before it would fill no chips).
    if (pin.chip == 0 && cut > 0)
      return error("pin '" + pin.text + "': its layer does not start the function (there is work " +
                   "before it), so it cannot start " + unit + " 0's stage");
    // The layer stays on its chip: no cut inside it.
    for (size_t j = cut + 1; j <= last && j < legal.size(); ++j)
      legal[j] = false;
    if (pin.chip == 0) {
      for (size_t j = 1; j <= cut; ++j)
        legal[j] = false;
      continue;
    }
    auto [it, fresh] = out.chipAt.try_emplace(cut, pin.chip, pin.text);
    if (!fresh && it->second.first != pin.chip)
      return error("pins '" + it->second.second + "' and '" + pin.text +
                   "' put the same layer on two chips");
    out.forced[cut] = true;
  }
  unsigned previous = 0;
  std::string previousPin;
  for (const auto &[cut, chip] : out.chipAt) {
    if (chip.first <= previous && !previousPin.empty())
      return error("pins '" + previousPin + "' and '" + chip.second +
                   "' put a later layer on a chip that is not later (pipeline stages go to "
                   "consecutive chips in program order)");
    previous = chip.first;
    previousPin = chip.second;
  }
  return out;
}

/// The weights of body ops [first, end), each once.
uint64_t weightBytesOf(const StageCosts &sc, size_t first, size_t end) {
  std::set<const Op *> params;
  for (size_t i = first; i < end; ++i)
    params.insert(sc.params[i].begin(), sc.params[i].end());
  uint64_t bytes = 0;
  for (const Op *p : params)
    bytes += heldBytes(*p, sc);
  return bytes;
}

/// Splits the costliest stages at their most even legal cut until there
/// are `want` of them (the chips before a pin that names a chip); false
/// when no stage has a legal cut left.
bool splitToFill(std::vector<PipelineStage> &stages, const StageCosts &sc,
                 const std::vector<bool> &legal, size_t want) {
  while (stages.size() < want) {
    std::optional<size_t> which;
    size_t at = 0;
    for (size_t s = 0; s < stages.size(); ++s) {
      const PipelineStage &st = stages[s];
      if (which && stages[*which].cost >= st.cost)
        continue;
      double before = 0, best = HUGE_VAL;
      std::optional<size_t> cut;
      for (size_t j = st.firstOp + 1; j < st.endOp; ++j) {
        before += sc.cost[j - 1];
        if (legal[j] && std::abs(2 * before - st.cost) < best) {
          best = std::abs(2 * before - st.cost);
          cut = j;
        }
      }
      if (cut) {
        which = s;
        at = *cut;
      }
    }
    if (!which)
      return false;
    PipelineStage second = stages[*which];
    PipelineStage &first = stages[*which];
    first.endOp = second.firstOp = at;
    first.cost = second.cost = 0;
    for (size_t i = first.firstOp; i < at; ++i)
      first.cost += sc.cost[i];
    for (size_t i = at; i < second.endOp; ++i)
      second.cost += sc.cost[i];
    first.weightBytes = weightBytesOf(sc, first.firstOp, at);
    second.weightBytes = weightBytesOf(sc, at, second.endOp);
    stages.insert(stages.begin() + std::ptrdiff_t(*which) + 1, second);
  }
  return true;
}

} // namespace

llvm::Expected<std::vector<PipelineStage>> planPipeline(const Function &fn,
                                                        const PartitionOptions &options) {
  if (options.chips == 0)
    return error("cannot partition onto 0 chips");
  std::vector<const Op *> body = bodyOps(fn);
  StageCosts sc = costsOf(body, options.costs);
  std::vector<bool> legal = cutsThatFit(fn, body, sc, options.costs, options.chips);
  const std::string unit = options.costs.chipsPerStage > 1 ? "node" : "chip";
  auto pinned = pinnedCuts(fn, sc, legal, options.pins, options.chips, unit);
  if (!pinned)
    return pinned.takeError();
  const uint64_t fits = room(options.costs);
  // Regions between the cuts pins give chips to: [lo, hi) onto the chips
  // [base, base + budget), all of them but in the last region.
  struct Region {
    size_t lo, hi;
    unsigned base, budget;
    std::string pin; // the pin that ends it
  };
  std::vector<Region> regions;
  {
    size_t lo = 0;
    unsigned base = 0;
    for (const auto &[cut, chip] : pinned->chipAt) {
      regions.push_back({lo, cut, base, chip.first - base, chip.second});
      lo = cut;
      base = chip.first;
    }
    regions.push_back({lo, body.size(), base, options.chips - base, ""});
  }
  std::vector<PipelineStage> plan;
  for (const Region &r : regions) {
    size_t tooBig = 0;
    // The fewest stages the weights allow: cut only where SRAM is full.
    std::vector<PipelineStage> fewest =
        greedyStages(body, sc, legal, HUGE_VAL, fits, &tooBig, &pinned->forced, r.lo, r.hi);
    if (fewest.empty())
      return noChipHolds(body, sc, tooBig, options.costs);
    if (fewest.size() > r.budget) {
      const unsigned per = options.costs.chipsPerStage;
      bool states = false;
      for (const auto &ps : sc.params)
        states |= llvm::any_of(ps, [](const Op *p) { return isState(*p); });
      const std::string held = states ? "the weights and states" : "the weights";
      const std::string of = states ? " of weights and states per " : " of weights per ";
      if (options.pins.empty() && per > 1)
        return error(held + " need " + std::to_string(fewest.size()) + " groups of " +
                     std::to_string(per) + " chips as pipeline stages (" + mib(fits) + of +
                     "group), " + std::to_string(fewest.size() * per) +
                     " chips, not " + std::to_string(options.chips * per));
      if (options.pins.empty())
        return error(held + " need " + std::to_string(fewest.size()) +
                     " chips as pipeline stages (" + mib(fits) + of + "chip), not " +
                     std::to_string(options.chips));
      if (pinned->chipAt.empty())
        return error("with the stage pins ('" + llvm::join(pinned->stagePins, "', '") +
                     "'), the layers need " + std::to_string(fewest.size()) + " " + unit +
                     "s as pipeline stages, not " + std::to_string(r.budget));
      return error("with the pins, the layers " +
                   (r.pin.empty() ? "from the last pin that names a " + unit + " on"
                                  : "before pin '" + r.pin + "'") +
                   " need " + std::to_string(fewest.size()) + " " + unit +
                   "s as pipeline stages, not " + std::to_string(r.budget));
    }
    // The smallest per-stage cost whose greedy cut needs no more stages
    // than chips: stages balanced by cost (bisection over the limit).
    // Empty when the cuts allowed need more stages than chips.
    auto balanced = [&](const std::vector<bool> &cuts) {
      double lo = 0, hi = 0;
      for (size_t i = r.lo; i < r.hi; ++i) {
        lo = std::max(lo, sc.cost[i]);
        hi += sc.cost[i];
      }
      auto greedy = [&](double limit) {
        return greedyStages(body, sc, cuts, limit, fits, nullptr, &pinned->forced, r.lo, r.hi);
      };
      std::vector<PipelineStage> best = greedy(HUGE_VAL);
      if (best.empty() || best.size() > r.budget)
        return std::vector<PipelineStage>{};
      for (int iter = 0; iter < 60 && hi - lo > 1e-9 * hi; ++iter) {
        double mid = (lo + hi) / 2;
        std::vector<PipelineStage> stages = greedy(mid);
        if (!stages.empty() && stages.size() <= r.budget) {
          best = std::move(stages);
          hi = mid;
        } else {
          lo = mid;
        }
      }
      std::vector<PipelineStage> atHi = greedy(hi);
      if (!atHi.empty() && atHi.size() <= r.budget)
        best = std::move(atHi);
      return best;
    };
    auto slowest = [](const std::vector<PipelineStage> &stages) {
      double most = 0;
      for (const PipelineStage &st : stages)
        most = std::max(most, st.cost);
      return most;
    };
    std::vector<PipelineStage> best = balanced(legal);
    if (best.empty())
      best = fewest;
    // Stages alike where the layers are: cut every period at the same
    // place when that costs the slowest stage little (a hybrid's groups:
    // eight chips each to schedule, and a decode step's nodes run one
    // after another, so the slowest matters less than for a pipeline of
    // chips, whose throughput it sets).
    if (options.pins.empty() && options.costs.chipsPerStage > 1)
      if (std::optional<std::vector<bool>> aligned = alignedToRepeats(body, legal)) {
        std::vector<PipelineStage> alike = balanced(*aligned);
        if (!alike.empty() && alike.size() == best.size() &&
            slowest(alike) <= options.costs.alikeImbalance * slowest(best))
          best = std::move(alike);
      }
    if (!r.pin.empty() && !splitToFill(best, sc, legal, r.budget))
      return error("pin '" + r.pin + "': the layers before it cut into at most " +
                   std::to_string(best.size()) + " pipeline stages, not the " +
                   std::to_string(r.budget) + " " + unit + "s before " + unit + " " +
                   std::to_string(r.base + r.budget));
    for (PipelineStage &st : best) {
      st.chip = r.base + unsigned(&st - best.data());
      plan.push_back(st);
    }
  }
  return plan;
}

llvm::Expected<unsigned> minimumChips(const Function &fn, const PartitionCosts &costs) {
  std::vector<const Op *> body = bodyOps(fn);
  StageCosts sc = costsOf(body, costs);
  size_t tooBig = 0;
  std::vector<bool> legal = cutsThatFit(fn, body, sc, costs);
  std::vector<PipelineStage> fewest = greedyStages(body, sc, legal, HUGE_VAL, room(costs), &tooBig);
  if (fewest.empty())
    return noChipHolds(body, sc, tooBig, costs);
  return unsigned(fewest.size());
}

namespace {
/// Given every body op's chip, places the leaves (a copy on each chip that
/// reads one) and makes every crossing a `transfer`.
void placeOnChips(Function &fn);
} // namespace

llvm::Error partitionFunction(Function &fn, const PartitionOptions &options) {
  for (const auto &op : fn.ops())
    if (op->attr("chip") || op->kind() == OpKind::Transfer)
      return error("func @" + fn.name() + " is partitioned already");
  if (options.kind == PartitionKind::Tensor)
    return partitionTensor(fn, options);
  if (options.kind == PartitionKind::Hybrid)
    return partitionHybrid(fn, options);
  auto stages = planPipeline(fn, options);
  if (!stages)
    return stages.takeError();
  std::vector<const Op *> body = bodyOps(fn);
  for (const PipelineStage &s : *stages)
    for (size_t i = s.firstOp; i < s.endOp; ++i)
      const_cast<Op *>(body[i])->setAttr("chip", int64_t(s.chip));
  placeOnChips(fn);
  return llvm::Error::success();
}

namespace {

/// The stage a hybrid partition gives an op before splitting it (removed
/// after).
constexpr const char *kStageAttr = "hybrid.stage";

/// The chip whose copy of its operands `op` reads: a transfer reads on the
/// chip it sends from.
int64_t readingChip(const Op &op) {
  return op.kind() == OpKind::Transfer ? op.intAttr("from").value_or(0) : op.chip();
}

/// Values a node holds whole on every chip (replicated, or all-gathered:
/// PartitionOptions::markWhole) and a later node reads: rather than each
/// chip's whole copy crossing to the chip of its position there (a
/// [128, 8192] f16 residual: 6,656 vectors over one link, about 140,000
/// cycles, on every hop), chip u sends rows u of its copy (a balanced
/// eighth) to the chip of its position, and the later node gathers the
/// rows over its local links. The rows are the same whichever copy they
/// come from, so the value is the same, bit for bit. Runs on the chips
/// the stages gave, before placeOnChips; a value computed from no input
/// (placeOnChips computes it again where it is read) crosses as before.
/// The cut is along the first axis at least as long as the group has
/// chips: a decode step's [1, 1, D] residual is cut along its features,
/// rather than crossing whole, eight copies in turn over the one or two
/// global links between two nodes (docs/partitioning.md); a value with
/// no such axis crosses as before.
void gatherCrossings(Function &fn, unsigned group) {
  std::vector<Op *> ops;
  for (const auto &op : fn.ops())
    ops.push_back(op.get());
  const std::map<const Op *, bool> dep = streamed(fn);
  // The copies of each value in each node: (value, node) -> per position.
  std::map<std::pair<int64_t, int64_t>, std::vector<Op *>> copies;
  for (Op *op : ops)
    if (std::optional<int64_t> id = op->intAttr(kWholeAttr); id && !isLeaf(*op)) {
      std::vector<Op *> &v = copies[{*id, op->chip() / group}];
      v.resize(group);
      v[size_t(op->chip() % group)] = op;
    }
  // By value and the node it crosses from: the rows that cross (to the
  // reading node, from each position), where they land on each reading
  // chip, and the whole again there.
  std::map<std::tuple<int64_t, int64_t, int64_t, unsigned>, Op *> pieces; // + reading node, position
  std::map<std::tuple<int64_t, int64_t, unsigned, int64_t>, Op *> parts;   // + position, reading chip
  std::map<std::tuple<int64_t, int64_t, int64_t>, Op *> wholes;            // + reading chip
  auto transfer = [&](Op *before, Op *value, int64_t from, int64_t to) {
    Op *t = fn.insertBefore(before, OpKind::Transfer, value->type(), {value}, value->loc());
    t->setAttr("from", from);
    t->setAttr("to", to);
    return t;
  };
  for (Op *reader : ops) {
    if (reader->kind() == OpKind::Return)
      continue;
    const int64_t r = readingChip(*reader), t = r / group;
    std::vector<Op *> operands(reader->operands().begin(), reader->operands().end());
    bool changed = false;
    for (Op *&operand : operands) {
      std::optional<int64_t> id = operand->intAttr(kWholeAttr);
      if (!id || isLeaf(*operand) || !dep.at(operand))
        continue;
      const int64_t node = operand->chip() / group;
      const Type type = operand->type();
      auto it = copies.find({*id, node});
      const auto cut = llvm::find_if(type.shape, [&](int64_t n) { return n >= int64_t(group); });
      if (node == t || it == copies.end() || cut == type.shape.end() || llvm::is_contained(it->second, nullptr))
        continue;
      const size_t axis = size_t(cut - type.shape.begin());
      Op *&whole = wholes[{*id, node, r}];
      if (!whole) {
        std::vector<Op *> rows;
        for (unsigned u = 0; u < group; ++u) {
          const int64_t there = t * group + u;
          Op *&piece = pieces[{*id, node, t, u}];
          if (!piece) {
            Op *copy = it->second[u];
            const int64_t start = type.shape[axis] * u / group;
            const int64_t size = type.shape[axis] * (u + 1) / group - start;
            Type part = type;
            part.shape[axis] = size;
            std::vector<int64_t> lo(type.rank(), 0), hi(type.shape.begin(), type.shape.end());
            lo[axis] = start;
            hi[axis] = start + size;
            Op *slice = fn.insertBefore(reader, OpKind::Slice, part, {copy}, copy->loc());
            slice->setAttr("start", lo);
            slice->setAttr("limit", hi);
            slice->setAttr("chip", copy->chip());
            piece = transfer(reader, slice, copy->chip(), there);
          }
          Op *&mine = parts[{*id, node, u, r}];
          if (!mine)
            mine = there == r ? piece : transfer(reader, piece, there, r);
          rows.push_back(mine);
        }
        whole = fn.insertBefore(reader, OpKind::Concat, type, rows, operand->loc());
        whole->setAttr("axis", int64_t(axis));
        whole->setAttr("chip", r);
      }
      operand = whole;
      changed = true;
    }
    if (changed)
      reader->setOperands(std::move(operands));
  }
  // A reader may come before some node's copies in the program (the
  // tensor split made the chips' ops in turn): it moves after them.
  if (!wholes.empty())
    fn.sortTopologically();
}

} // namespace

llvm::Error partitionHybrid(Function &fn, const PartitionOptions &options) {
  const unsigned group = std::min(options.groupSize, options.chips);
  if (group == 0 || options.chips % group)
    return error("a hybrid partition needs a multiple of " + llvm::Twine(group) +
                 " chips (groups of " + llvm::Twine(group) + "), not " + llvm::Twine(options.chips));
  // The stages are cut on the whole function, as a pipeline over groups
  // (a group has `group` chips' MXMs, VXMs and SRAM), where the pipeline
  // cuts well: between layers, where the residual stream is the one live
  // value. Each op carries its stage through the split as an attribute.
  PartitionOptions overGroups = options;
  overGroups.kind = PartitionKind::Pipeline;
  overGroups.chips = options.chips / group;
  overGroups.costs.macsPerCycle *= group;
  overGroups.costs.elementsPerCycle *= group;
  overGroups.costs.sramBytesPerChip *= group;
  overGroups.costs.chipsPerStage = group;
  if (options.fewest) {
    auto fewest = minimumChips(fn, overGroups.costs);
    if (!fewest)
      return fewest.takeError();
    overGroups.chips = *fewest;
  }
  auto stages = planPipeline(fn, overGroups);
  if (!stages)
    return stages.takeError();
  {
    std::vector<const Op *> body = bodyOps(fn);
    for (const PipelineStage &s : *stages)
      for (size_t i = s.firstOp; i < s.endOp; ++i)
        const_cast<Op *>(body[i])->setAttr(kStageAttr, int64_t(s.chip));
  }
  // Every layer split over the chips of one group.
  PartitionOptions inGroup = options;
  inGroup.kind = PartitionKind::Tensor;
  inGroup.chips = group;
  inGroup.markWhole = true;
  if (llvm::Error e = partitionTensor(fn, inGroup))
    return e;
  // The ops the split added (the collectives' slices, transfers, adds and
  // concats) go with what they read: a reduce-scatter with the matmul
  // whose sums it adds, a gather with the norm whose rows it gathers.
  // What reads nothing staged (a slice of an input) goes with its first
  // reader.
  std::map<const Op *, int64_t> stageOf;
  std::vector<Op *> body;
  for (const auto &op : fn.ops())
    if (!isLeaf(*op) && op->kind() != OpKind::Return)
      body.push_back(op.get());
  for (Op *op : body) {
    if (std::optional<int64_t> s = op->intAttr(kStageAttr)) {
      stageOf[op] = *s;
      continue;
    }
    for (const Op *operand : op->operands())
      if (auto it = stageOf.find(operand); it != stageOf.end())
        stageOf[op] = std::max(stageOf[op], it->second);
  }
  std::map<const Op *, int64_t> firstReader;
  for (auto it = body.rbegin(); it != body.rend(); ++it) {
    Op *op = *it;
    if (!stageOf.count(op))
      stageOf[op] = firstReader.count(op) ? firstReader[op] : 0;
    for (const Op *operand : op->operands())
      firstReader[operand] = firstReader.count(operand)
                                 ? std::min(firstReader[operand], stageOf[op])
                                 : stageOf[op];
  }
  for (const auto &op : fn.ops())
    op->removeAttr(kStageAttr);
  auto unmark = [&] {
    for (const auto &op : fn.ops())
      op->removeAttr(kWholeAttr);
  };
  if (overGroups.chips <= 1 || stages->size() <= 1) {
    unmark();
    return llvm::Error::success();
  }
  for (Op *op : body) {
    const int64_t base = stageOf[op] * group;
    if (op->kind() == OpKind::Transfer) {
      op->setAttr("from", base + op->intAttr("from").value_or(0));
      op->setAttr("to", base + op->intAttr("to").value_or(0));
    } else {
      op->setAttr("chip", base + op->chip());
    }
  }
  gatherCrossings(fn, group);
  unmark();
  placeOnChips(fn);
  return llvm::Error::success();
}

namespace {

void placeOnChips(Function &fn) {
  // Leaves go where they are read: weights and constants are held by every
  // chip that reads them, an input by the first.
  std::map<const Op *, std::vector<Op *>> users;
  for (const auto &op : fn.ops())
    for (const Op *operand : op->operands())
      users[operand].push_back(op.get());
  std::vector<Op *> leaves;
  for (const auto &op : fn.ops())
    if (isLeaf(*op))
      leaves.push_back(op.get());
  // Where each value is on each chip that has it (leaves' copies, transfers
  // and values computed again).
  std::map<std::pair<const Op *, int64_t>, Op *> moved;
  for (Op *leaf : leaves) {
    std::set<int64_t> chips;
    for (const Op *user : users[leaf])
      if (user->kind() != OpKind::Return)
        chips.insert(readingChip(*user));
    if (chips.empty())
      continue;
    std::map<int64_t, Op *> copy;
    for (int64_t chip : chips) {
      Op *held = leaf;
      if (chip != *chips.begin()) {
        held = fn.insertBefore(leaf, leaf->kind(), leaf->type(), {}, leaf->loc());
        for (const auto &[name, value] : leaf->attrs())
          held->setAttr(name, value);
      }
      held->setAttr("chip", chip);
      copy[chip] = held;
      moved[{leaf, chip}] = held;
    }
    for (Op *user : users[leaf]) {
      if (user->kind() == OpKind::Return)
        continue;
      std::vector<Op *> operands(user->operands().begin(), user->operands().end());
      for (Op *&operand : operands)
        if (operand == leaf)
          operand = copy[readingChip(*user)];
      user->setOperands(std::move(operands));
    }
  }

  // Every value read on another chip crosses once per chip that reads it,
  // just before its first reader there. A reshape is a view of its operand:
  // the operand crosses, and the reader's chip reshapes it again, so that
  // one tensor never crosses twice under two shapes.
  std::map<const Op *, bool> dep = streamed(fn);
  std::function<Op *(Op *, Op *)> arrive = [&](Op *value, Op *reader) -> Op * {
    int64_t chip = readingChip(*reader);
    Op *&there = moved[{value, chip}];
    if (there)
      return there;
    if (!dep[value] && !isLeaf(*value)) {
      // What a transfer brought (a group's split moved it between its
      // chips) is computed again here from where it came.
      if (value->kind() == OpKind::Transfer) {
        Op *again = arrive(value->operand(0), reader);
        moved[{value, chip}] = again;
        return again;
      }
      // Computed again here from this chip's copies of its leaves.
      std::vector<Op *> operands;
      for (Op *operand : value->operands())
        operands.push_back(operand->chip() == chip ? operand : arrive(operand, reader));
      Op *copy = fn.insertBefore(reader, value->kind(), value->type(), std::move(operands), value->loc());
      for (const auto &[name, attr] : value->attrs())
        copy->setAttr(name, attr);
      copy->setAttr("chip", chip);
      copy->removeAttr("fusion");
      moved[{value, chip}] = copy;
      return copy;
    }
    if (isLeaf(*value)) {
      Op *copy = fn.insertBefore(reader, value->kind(), value->type(), {}, value->loc());
      for (const auto &[name, attr] : value->attrs())
        copy->setAttr(name, attr);
      copy->setAttr("chip", chip);
      moved[{value, chip}] = copy;
      return copy;
    }
    if (value->kind() == OpKind::Reshape && value->operand(0)->chip() == value->chip()) {
      Op *operand = arrive(value->operand(0), reader);
      there = fn.insertBefore(reader, OpKind::Reshape, value->type(), {operand}, value->loc());
      there->setAttr("chip", chip);
      return there;
    }
    there = fn.insertBefore(reader, OpKind::Transfer, value->type(), {value}, value->loc());
    there->setAttr("from", value->chip());
    there->setAttr("to", chip);
    return there;
  };
  std::vector<Op *> readers;
  for (const auto &op : fn.ops())
    if (op->kind() != OpKind::Return)
      readers.push_back(op.get());
  for (Op *user : readers) {
    std::vector<Op *> operands(user->operands().begin(), user->operands().end());
    bool changed = false;
    for (Op *&operand : operands) {
      if (operand->chip() == readingChip(*user))
        continue;
      operand = arrive(operand, user);
      changed = true;
    }
    if (changed)
      user->setOperands(std::move(operands));
  }
  // One copy of a weight or an input per chip: the tensor-parallel split
  // of a group may hold a leaf once per chip of the group, and a value
  // computed again on another group's chip brings its own (the position of
  // a decode step, read by the mask of every chip). The first stays.
  std::map<std::tuple<OpKind, std::string, std::string, int64_t>, Op *> held;
  std::map<const Op *, Op *> same;
  for (const auto &op : fn.ops()) {
    if (op->kind() != OpKind::Input && op->kind() != OpKind::Param)
      continue;
    std::string shard;
    for (int64_t x : op->intsAttr("shard").value_or(std::vector<int64_t>{}))
      shard += std::to_string(x) + ",";
    const std::string name = op->stringAttr(op->kind() == OpKind::Input ? "name" : "path").value_or("");
    auto [it, fresh] = held.try_emplace({op->kind(), name, shard, op->chip()}, op.get());
    if (!fresh && it->second->type() == op->type())
      same[op.get()] = it->second;
  }
  if (!same.empty())
    for (const auto &op : fn.ops()) {
      std::vector<Op *> operands(op->operands().begin(), op->operands().end());
      bool changed = false;
      for (Op *&operand : operands)
        if (auto it = same.find(operand); it != same.end()) {
          operand = it->second;
          changed = true;
        }
      if (changed)
        op->setOperands(std::move(operands));
    }
  // Reshapes whose readers all moved to other chips read nothing now.
  std::map<const Op *, size_t> uses;
  for (const auto &op : fn.ops())
    for (const Op *operand : op->operands())
      ++uses[operand];
  fn.eraseIf([&](const Op &op) { return (op.kind() == OpKind::Reshape && !uses[&op]) || same.count(&op); });
}

} // namespace

llvm::Expected<PartitionOptions> parsePartitionOptions(llvm::StringRef text) {
  PartitionOptions options;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ' ', -1, false);
  for (llvm::StringRef part : parts) {
    auto [key, value] = part.split('=');
    if (key == "chips") {
      if (value.getAsInteger(10, options.chips) || options.chips == 0)
        return error("partition: chips must be a positive number, not '" + value + "'");
    } else if (key == "kind") {
      if (value == "pipeline")
        options.kind = PartitionKind::Pipeline;
      else if (value == "tensor")
        options.kind = PartitionKind::Tensor;
      else if (value == "hybrid")
        options.kind = PartitionKind::Hybrid;
      else
        return error("partition: kind must be 'pipeline', 'tensor' or 'hybrid', not '" + value + "'");
    } else if (key == "group") {
      if (value.getAsInteger(10, options.groupSize) || options.groupSize == 0)
        return error("partition: group must be a positive number, not '" + value + "'");
    } else if (key == "sram") {
      if (value.getAsInteger(10, options.costs.sramBytesPerChip) || options.costs.sramBytesPerChip == 0)
        return error("partition: sram must be a positive number of bytes, not '" + value + "'");
    } else {
      return error("partition: unknown option '" + key + "' (the options: chips, kind, group, sram)");
    }
  }
  return options;
}

namespace {

class PartitionPass : public Pass {
public:
  explicit PartitionPass(PartitionOptions options) : options_(options) {}
  llvm::StringRef name() const override { return "partition"; }
  bool run(Function &fn) override {
    if (options_.chips <= 1)
      return false;
    if (llvm::Error e = partitionFunction(fn, options_)) {
      error_ = llvm::toString(std::move(e));
      return false;
    }
    return true;
  }
  std::string takeError() override { return std::move(error_); }

private:
  PartitionOptions options_;
  std::string error_;
};

} // namespace

std::unique_ptr<Pass> createPartitionPass(const PartitionOptions &options) {
  return std::make_unique<PartitionPass>(options);
}

} // namespace lpu::ir
