// A partitioned function onto several chips (docs/partitioning.md): split into
// one function per chip, where a value received is an input named
// `transfer.<id>` and a value sent an output of that name; the chips
// scheduled in order, each receiving its vectors in the cycles its sender's
// schedule delivers them; the schedules merged into one whose queues and
// tensors name their chips. Chips that send to each other both ways (a
// transfer to a lower chip: tensor parallelism) are scheduled in lockstep
// instead, all at once, each on its own thread (scheduleLockstep).
#include "scheduler/Scheduler.h"
#include "scheduler/Transfers.h"

#include "backend/Topology.h"
#include "ir/Text.h"

#include <llvm/ADT/STLExtras.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <thread>

namespace lpu::scheduler {

using namespace backend;

namespace {

llvm::Error error(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

std::string transferName(int64_t id) { return "transfer." + std::to_string(id); }

struct Crossing {
  const ir::Op *op = nullptr;
  int64_t id = 0;
  unsigned from = 0, to = 0;
  unsigned link = 0, farLink = 0;
};

/// Every transfer of `fn` in program order, numbered, with the link between
/// its chips: partition chip c runs on topology chip `placed[c]` (a
/// pipeline's chain), or on chip c when `placed` is empty (lockstep).
llvm::Expected<std::vector<Crossing>> crossingsOf(const ir::Function &fn, const Topology &topology,
                                                  const std::string &name,
                                                  llvm::ArrayRef<unsigned> placed) {
  std::vector<Crossing> crossings;
  for (const auto &op : fn.ops()) {
    if (op->kind() != ir::OpKind::Transfer)
      continue;
    Crossing x;
    x.op = op.get();
    x.id = int64_t(crossings.size());
    x.from = unsigned(op->intAttr("from").value_or(0));
    x.to = unsigned(op->intAttr("to").value_or(0));
    unsigned from = placed.empty() ? x.from : placed[x.from];
    unsigned to = placed.empty() ? x.to : placed[x.to];
    std::optional<unsigned> link = topology.linkTo(from, to);
    if (!link)
      return refuse<Refusal::NoLink>(*op, int64_t(x.from), int64_t(x.to), name, int64_t(from),
                                     int64_t(to));
    x.link = *link;
    x.farLink = topology.peer(from, *link)->link;
    crossings.push_back(x);
  }
  return crossings;
}

/// Chip `c`'s part of `fn`: its ops, received values as inputs, sent values
/// (and the outputs on this chip) returned. `keepSends` (lockstep): a value
/// sent is not returned; a `transfer` op named `transfer.<id>` that reads it
/// stays where the global order has it, the point its sends are placed.
std::unique_ptr<ir::Function> chipFunction(const ir::Function &fn, unsigned c,
                                           const std::vector<Crossing> &crossings,
                                           bool keepSends = false) {
  auto out = std::make_unique<ir::Function>(fn.name(), fn.bucket());
  std::map<const ir::Op *, ir::Op *> mapped;
  std::map<const ir::Op *, const Crossing *> crossingOf;
  std::map<int64_t, int64_t> fusion;
  for (const Crossing &x : crossings)
    crossingOf[x.op] = &x;
  for (const auto &owned : fn.ops()) {
    const ir::Op &op = *owned;
    if (keepSends && op.kind() == ir::OpKind::Transfer && crossingOf.at(&op)->from == c) {
      ir::Op *send = out->append(ir::OpKind::Transfer, op.type(), {mapped.at(op.operand(0))}, op.loc());
      for (const auto &[name, value] : op.attrs())
        send->setAttr(name, value);
      send->setAttr("name", transferName(crossingOf.at(&op)->id));
      continue;
    }
    if (op.kind() == ir::OpKind::Return || op.chip() != int64_t(c))
      continue;
    if (op.kind() == ir::OpKind::Transfer) {
      ir::Op *input = out->append(ir::OpKind::Input, op.type(), {}, op.loc());
      input->setAttr("name", transferName(crossingOf.at(&op)->id));
      mapped[&op] = input;
      continue;
    }
    std::vector<ir::Op *> operands;
    for (const ir::Op *operand : op.operands())
      operands.push_back(mapped.at(operand));
    ir::Op *copy = out->append(op.kind(), op.type(), std::move(operands), op.loc());
    for (const auto &[name, value] : op.attrs())
      if (name != "chip" && name != "fusion")
        copy->setAttr(name, value);
    // Fusion groups numbered from 0 on each chip, so that chips with the
    // same work print the same.
    if (std::optional<int64_t> group = op.fusionGroup())
      copy->setAttr("fusion", fusion.try_emplace(*group, int64_t(fusion.size())).first->second);
    mapped[&op] = copy;
  }
  std::vector<ir::Op *> results;
  std::vector<std::string> names;
  for (const Crossing &x : crossings)
    if (x.from == c && !keepSends) {
      results.push_back(mapped.at(x.op->operand(0)));
      names.push_back(transferName(x.id));
    }
  if (const ir::Op *ret = fn.terminator()) {
    std::vector<std::string> declared = ret->stringsAttr("names").value_or(std::vector<std::string>{});
    const std::vector<std::optional<ir::Shard>> declaredShards = ir::outputShards(*ret);
    std::vector<int64_t> shards;
    bool anyShard = false;
    for (size_t i = 0; i < ret->operands().size(); ++i)
      if (ret->operand(i)->chip() == int64_t(c)) {
        while (shards.size() < 3 * results.size())
          shards.insert(shards.end(), {-1, 0, 0}); // the sends before them
        results.push_back(mapped.at(ret->operand(i)));
        names.push_back(i < declared.size() ? declared[i] : "out" + std::to_string(i));
        if (const std::optional<ir::Shard> &sh = declaredShards[i]) {
          shards.insert(shards.end(), {sh->axis, sh->start, sh->full});
          anyShard = true;
        } else {
          shards.insert(shards.end(), {-1, 0, 0});
        }
      }
    // The states this chip's outputs hold (docs/generation.md).
    std::vector<std::string> states;
    for (const std::string &s : ret->stringsAttr("states").value_or(std::vector<std::string>{}))
      if (llvm::is_contained(names, s))
        states.push_back(s);
    ir::Op *r = out->append(ir::OpKind::Return, ir::Type{}, std::move(results), ret->loc());
    r->setAttr("names", std::move(names));
    if (!states.empty())
      r->setAttr("states", std::move(states));
    if (anyShard) {
      shards.resize(3 * r->operands().size(), 0);
      r->setAttr("shards", std::move(shards));
    }
  }
  return out;
}

/// The names of a chip function's inputs, in program order, and of its
/// outputs, as its return names them: what a schedule shared with another
/// chip renames, position by position (the states of another layer).
struct IoNames {
  std::vector<std::string> inputs, outputs;
};

IoNames ioNames(const ir::Function &part) {
  IoNames names;
  for (const auto &op : part.ops())
    if (op->kind() == ir::OpKind::Input)
      names.inputs.push_back(op->stringAttr("name").value_or(""));
  if (const ir::Op *ret = part.terminator())
    names.outputs = ret->stringsAttr("names").value_or(std::vector<std::string>{});
  return names;
}

struct SharedSchedule {
  unsigned stage = 0;
  int64_t origin = 0;  // its first arrival
  ChipTraffic traffic; // its links
  IoNames names;
};

/// What makes two chips' schedules the same up to a shift in time: their
/// work (the IR without weights' names, locations and transfer numbers)
/// and their traffic (links, and each received vector's arrival relative to
/// the first).
std::string shareKey(const ir::Function &part, const ChipTraffic &traffic, unsigned links) {
  std::string text = ir::toString(part, {.locations = false});
  std::string key;
  // Drop the quoted names: weights' paths and transfer numbers.
  bool quoted = false;
  for (char ch : text) {
    if (ch == '"')
      quoted = !quoted;
    else if (!quoted)
      key += ch;
  }
  // And which slice of its weight a param holds (`shard = [1, 96, 768]`):
  // shifted() gives each chip its own, as it does the paths.
  for (size_t at = key.find("shard = ["); at != std::string::npos; at = key.find("shard = [", at))
    key.erase(at + 5, key.find(']', at) + 1 - (at + 5));
  for (const ChipTraffic::Incoming &in : traffic.incoming) {
    // A link of the same hemisphere is at the same position: only which
    // one differs, renamed in the shared instructions.
    key += "|in " + std::to_string(in.link >= links / 2) + ":";
    for (int64_t a : in.arrivals)
      key += std::to_string(a - traffic.incoming[0].arrivals.front()) + ",";
  }
  for (const ChipTraffic::Outgoing &out : traffic.outgoing)
    key += "|out " + std::to_string(out.link >= links / 2);
  return key;
}

/// `from` (the schedule of chip `fromChip`, whose function's inputs and
/// outputs `fromNames` names) moved `delta` cycles later and renamed for
/// `part`: its weights' paths, its inputs and outputs (another layer's
/// states), and the transfers it sends and receives. Its queues are `from`'s, run `delta` cycles later on links
/// renamed (Schedule::shares), or when that cannot say it (a move earlier,
/// a link that would be renamed two ways), copied and renamed. Nullopt
/// when the shift would put an instruction before cycle 0.
std::optional<Schedule> shifted(Schedule &from, unsigned fromChip, const ChipTraffic &fromTraffic,
                                const IoNames &fromNames, int64_t delta, const ir::Function &part,
                                const ChipTraffic &traffic) {
  // Everything but the queues, which stay where they are when shared.
  std::map<QueueId, std::vector<TimedInstr>> queues = std::move(from.queues);
  Schedule s = from;
  from.queues = std::move(queues);
  // Each link of the schedule shared becomes this chip's link of the same
  // transfer (the key says they are in the same hemisphere).
  if (fromTraffic.incoming.size() != traffic.incoming.size() ||
      fromTraffic.outgoing.size() != traffic.outgoing.size())
    return std::nullopt;
  std::map<uint16_t, uint16_t> sendLink, recvLink;
  for (size_t i = 0; i < traffic.incoming.size(); ++i)
    if (!recvLink.try_emplace(fromTraffic.incoming[i].link, traffic.incoming[i].link).second &&
        recvLink[fromTraffic.incoming[i].link] != traffic.incoming[i].link)
      return std::nullopt;
  for (size_t i = 0; i < traffic.outgoing.size(); ++i)
    if (!sendLink.try_emplace(fromTraffic.outgoing[i].link, traffic.outgoing[i].link).second &&
        sendLink[fromTraffic.outgoing[i].link] != traffic.outgoing[i].link)
      return std::nullopt;
  SharedCode shared{fromChip, uint64_t(std::max<int64_t>(delta, 0)), {}};
  // A chip with no code (an idle chip between a transfer's ends) has no
  // queues to share: the program file names only chips with code as the
  // ones others run.
  bool byReference = delta >= 0 && llvm::any_of(from.queues, [](const auto &q) {
    return !q.second.empty();
  });
  std::map<uint16_t, uint16_t> links = sendLink;
  for (const auto &[inCode, here] : recvLink)
    byReference &= links.try_emplace(inCode, here).first->second == here;
  for (const auto &[inCode, here] : links)
    if (inCode != here)
      shared.links.emplace_back(inCode, here);
  if (byReference) {
    s.shares = std::move(shared);
  } else {
    s.queues = from.queues;
    for (auto &[q, list] : s.queues)
      for (TimedInstr &t : list) {
        t.cycle += delta;
        if (t.cycle < 0)
          return std::nullopt;
        if (t.instr.op == Opcode::Send)
          t.instr.unit = sendLink.at(t.instr.unit);
        else if (t.instr.op == Opcode::Receive)
          t.instr.unit = recvLink.at(t.instr.unit);
      }
  }
  s.cycles += delta;
  for (SramLife &l : s.sram) {
    l.from += delta;
    l.to += delta;
  }
  for (OpTiming &t : s.ops) {
    t.firstCycle += delta;
    t.lastCycle += delta;
    for (int64_t *c : {&t.firstRowReady, &t.lastRowReady, &t.firstRowBound, &t.lastRowBound})
      if (*c >= 0)
        *c += delta;
  }
  // Weights in the order the function declares them, as scheduleOnce
  // places them.
  std::vector<std::string> paths;
  std::vector<std::vector<int64_t>> shards;
  for (const ir::Op *p : part.params()) {
    paths.push_back(p->stringAttr("path").value_or(""));
    std::optional<ir::Shard> shard = ir::shardOf(*p);
    shards.push_back(shard ? std::vector<int64_t>{shard->axis, shard->start, shard->full}
                           : std::vector<int64_t>{});
  }
  size_t k = 0;
  for (TensorPlacement &t : s.tensors)
    if (t.role == TensorRole::Param) {
      if (k >= paths.size())
        return std::nullopt;
      t.shard = shards[k];
      t.name = paths[k++];
    }
  if (k != paths.size() || s.sent.size() != traffic.outgoing.size())
    return std::nullopt;
  // Inputs and outputs by position in the function.
  const IoNames names = ioNames(part);
  if (names.inputs.size() != fromNames.inputs.size() || names.outputs.size() != fromNames.outputs.size())
    return std::nullopt;
  std::map<std::string, std::string> inputName, outputName;
  for (auto [fromList, list, renamed] : {std::tuple{&fromNames.inputs, &names.inputs, &inputName},
                                         std::tuple{&fromNames.outputs, &names.outputs, &outputName}})
    for (size_t i = 0; i < list->size(); ++i)
      if (!renamed->try_emplace((*fromList)[i], (*list)[i]).second && renamed->at((*fromList)[i]) != (*list)[i])
        return std::nullopt;
  for (TensorPlacement &t : s.tensors) {
    const auto &renamed = t.role == TensorRole::Input ? inputName : outputName;
    if (t.role == TensorRole::Input || t.role == TensorRole::Output)
      if (auto it = renamed.find(t.name); it != renamed.end())
        t.name = it->second;
  }
  for (size_t i = 0; i < s.sent.size(); ++i) {
    s.sent[i].id = traffic.outgoing[i].id;
    s.sent[i].fromChip = traffic.chip;
    s.sent[i].toChip = traffic.outgoing[i].toChip;
    s.sent[i].link = traffic.outgoing[i].link;
    s.sent[i].farLink = traffic.outgoing[i].farLink;
    for (int64_t &a : s.sent[i].arrivals)
      a += delta;
  }
  s.sharedFrom = true;
  return s;
}

/// The chips' schedules as one whose queues and tensors name their chips:
/// partition chip c runs on topology chip onChip[c].
Schedule merge(const ir::Function &fn, std::vector<Schedule> schedules,
               const std::vector<unsigned> &onChip, unsigned distinct,
               const std::string &topologyName, unsigned topologyChips) {
  const unsigned used = unsigned(schedules.size());
  Schedule merged;
  merged.distinctChips = distinct;
  merged.topology = topologyName;
  merged.topologyChips = topologyChips;
  for (TensorRole role : {TensorRole::Input, TensorRole::Param, TensorRole::Constant, TensorRole::Output})
    for (unsigned c = 0; c < used; ++c)
      for (TensorPlacement t : schedules[c].tensors) {
        if (t.role != role)
          continue;
        t.chip = onChip[c];
        if (role == TensorRole::Constant && c)
          t.name = "chip" + std::to_string(t.chip) + "." + t.name;
        merged.tensors.push_back(std::move(t));
      }
  // Outputs in the order the function returns them.
  if (const ir::Op *ret = fn.terminator()) {
    std::vector<std::string> names = ret->stringsAttr("names").value_or(std::vector<std::string>{});
    auto rank = [&](const TensorPlacement &t) {
      auto it = llvm::find(names, t.name);
      return it - names.begin();
    };
    std::stable_sort(merged.tensors.begin(), merged.tensors.end(),
                     [&](const TensorPlacement &a, const TensorPlacement &b) {
                       bool ao = a.role == TensorRole::Output, bo = b.role == TensorRole::Output;
                       return ao && bo ? rank(a) < rank(b) : !ao && bo;
                     });
  }
  for (const Schedule &s : schedules)
    merged.sent.insert(merged.sent.end(), s.sent.begin(), s.sent.end());
  for (unsigned c = 0; c < used; ++c) {
    Schedule &s = schedules[c];
    for (auto &[q, list] : s.queues) {
      QueueId id = q;
      id.chip = onChip[c];
      merged.queues[id] = std::move(list);
    }
    if (s.shares) {
      SharedCode shared = *s.shares;
      shared.chip = onChip[shared.chip];
      merged.sharedCode[onChip[c]] = std::move(shared);
    }
    merged.cycles = std::max(merged.cycles, s.cycles);
    for (size_t u = 0; u < s.busy.size(); ++u)
      merged.busy[u] += s.busy[u];
    merged.sramBytes = std::max(merged.sramBytes, s.sramBytes);
    if (s.lowerBound > merged.lowerBound) {
      merged.lowerBound = s.lowerBound;
      merged.lowerBoundReason = "chip " + std::to_string(onChip[c]) + ": " + s.lowerBoundReason;
    }
    ChipFigures f;
    f.chip = onChip[c];
    f.cycles = s.cycles;
    for (const LinkTransfer &t : merged.sent)
      if (t.toChip == c && !t.arrivals.empty())
        f.firstCycle = f.firstCycle ? std::min(f.firstCycle, t.arrivals.front()) : t.arrivals.front();
    f.busy = s.busy;
    f.sramBytes = s.sramBytes;
    f.lowerBound = s.lowerBound;
    f.lowerBoundReason = s.lowerBoundReason;
    for (const LinkTransfer &t : s.sent)
      f.linkBytesSent += t.bytes;
    merged.chips.push_back(f);
    const uint32_t base = uint32_t(merged.ops.size());
    for (OpTiming &t : s.ops) {
      t.chip = onChip[c];
      for (uint32_t &i : t.inputs)
        i += base;
      merged.ops.push_back(std::move(t));
    }
    for (SramLife l : s.sram) {
      l.chip = onChip[c];
      merged.sram.push_back(l);
    }
    if (merged.plan.knobs.empty()) {
      merged.plan.parameters = s.plan.parameters;
      merged.plan.heuristics = s.plan.heuristics;
      merged.plan.tried = s.plan.tried;
      merged.plan.knobs = s.plan.knobs;
    }
    ChipPlan chipPlan;
    chipPlan.chip = onChip[c];
    if (s.shares)
      chipPlan.shares = onChip[s.shares->chip];
    chipPlan.parameters = s.plan.parameters;
    chipPlan.heuristics = s.plan.heuristics;
    chipPlan.tried = s.plan.tried;
    merged.plan.chips.push_back(std::move(chipPlan));
    for (PlanStep &p : s.plan.steps) {
      p.chip = onChip[c];
      merged.plan.steps.push_back(std::move(p));
    }
  }
  return merged;
}

/// `fn` with a relay through the chips between for every transfer whose
/// chips have no direct link (partition chip c on topology chip c): the
/// value crosses hop by hop, each hop a `transfer` the chip in between
/// receives and sends on, along a shortest path of the topology; of the
/// shortest paths, each hop takes the link with the fewest bytes routed
/// over it so far (in program order), so that relays spread over every
/// link between two nodes. Null when every transfer has a direct link.
std::unique_ptr<ir::Function> routed(const ir::Function &fn, const Topology &topology) {
  auto direct = [&](const ir::Op &op) {
    return topology.linkTo(unsigned(op.intAttr("from").value_or(0)),
                           unsigned(op.intAttr("to").value_or(0)))
        .has_value();
  };
  if (llvm::all_of(fn.ops(), [&](const std::unique_ptr<ir::Op> &op) {
        return op->kind() != ir::OpKind::Transfer || direct(*op);
      }))
    return nullptr;
  const unsigned n = topology.numChips();
  std::vector<std::vector<unsigned>> neighbours(n);
  for (unsigned c = 0; c < n; ++c)
    for (unsigned l = 0;; ++l) {
      if (l > 64)
        break;
      if (auto p = topology.peer(c, l))
        neighbours[c].push_back(p->chip);
    }
  // Hops to `to` from every chip (links are cabled both ways), through
  // the chips `allowed` says may relay.
  auto hops = [&](unsigned to, const std::function<bool(unsigned)> &allowed) {
    std::vector<unsigned> d(n, UINT_MAX);
    std::vector<unsigned> queue{to};
    d[to] = 0;
    for (size_t i = 0; i < queue.size(); ++i)
      for (unsigned m : neighbours[queue[i]])
        if (d[m] == UINT_MAX && allowed(m)) {
          d[m] = d[queue[i]] + 1;
          queue.push_back(m);
        }
    return d;
  };
  // A route stays within the two chips' nodes when it can (in a dragonfly
  // every two nodes are cabled): a relay on a third node's chip would tie
  // that node's schedule to these two.
  constexpr unsigned kNode = 8;
  std::map<std::pair<unsigned, unsigned>, std::vector<unsigned>> distance;
  auto hopsTo = [&](unsigned from, unsigned to) -> const std::vector<unsigned> & {
    auto [it, fresh] = distance.try_emplace({from / kNode, to});
    if (fresh) {
      it->second = hops(to, [&](unsigned m) { return m / kNode == from / kNode || m / kNode == to / kNode; });
      if (it->second[from] == UINT_MAX)
        it->second = hops(to, [](unsigned) { return true; });
    }
    return it->second;
  };
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> load;
  auto out = std::make_unique<ir::Function>(fn.name(), fn.bucket());
  std::map<const ir::Op *, ir::Op *> mapped;
  for (const auto &owned : fn.ops()) {
    const ir::Op &op = *owned;
    std::vector<ir::Op *> operands;
    for (const ir::Op *operand : op.operands())
      operands.push_back(mapped.at(operand));
    if (op.kind() != ir::OpKind::Transfer || direct(op)) {
      ir::Op *copy = out->append(op.kind(), op.type(), std::move(operands), op.loc());
      for (const auto &[name, value] : op.attrs())
        copy->setAttr(name, value);
      mapped[&op] = copy;
      continue;
    }
    const unsigned from = unsigned(op.intAttr("from").value_or(0));
    const unsigned to = unsigned(op.intAttr("to").value_or(0));
    const std::vector<unsigned> &hops = hopsTo(from, to);
    ir::Op *value = operands.at(0);
    const uint64_t bytes = op.type().byteSize();
    for (unsigned at = from; at != to;) {
      if (hops[at] == UINT_MAX) {
        value = nullptr; // no route: crossingsOf names the chips
        break;
      }
      // Load is counted per pair of nodes, so that the routes between
      // two nodes are the same whatever the others carry.
      auto loaded = [&](unsigned a, unsigned b) -> uint64_t & {
        return load[{from / kNode * n + to / kNode, a * n + b}];
      };
      unsigned next = UINT_MAX;
      for (unsigned m : neighbours[at])
        if (hops[m] + 1 == hops[at] &&
            (next == UINT_MAX || loaded(at, m) < loaded(at, next) ||
             (loaded(at, m) == loaded(at, next) && m < next)))
          next = m;
      loaded(at, next) += bytes;
      ir::Op *hop = out->append(ir::OpKind::Transfer, op.type(), {value}, op.loc());
      hop->setAttr("from", int64_t(at));
      hop->setAttr("to", int64_t(next));
      value = hop;
      at = next;
    }
    if (!value) {
      ir::Op *copy = out->append(op.kind(), op.type(), std::move(operands), op.loc());
      for (const auto &[name, v] : op.attrs())
        copy->setAttr(name, v);
      value = copy;
    }
    mapped[&op] = value;
  }
  return out;
}

/// The chips of `used` in groups that depend on each other both ways (the
/// strongly connected components of the graph of transfers), in an order
/// where every transfer between two groups goes to a later one; each
/// group's chips ascending, groups ordered by their first chip where the
/// order is free.
std::vector<std::vector<unsigned>> chipGroups(const std::vector<Crossing> &crossings,
                                              unsigned used) {
  std::vector<std::set<unsigned>> next(used), prev(used);
  for (const Crossing &x : crossings) {
    next[x.from].insert(x.to);
    prev[x.to].insert(x.from);
  }
  auto reach = [&](unsigned from, const std::vector<std::set<unsigned>> &edges) {
    std::vector<char> seen(used, 0);
    std::vector<unsigned> stack{from};
    seen[from] = 1;
    while (!stack.empty()) {
      unsigned c = stack.back();
      stack.pop_back();
      for (unsigned m : edges[c])
        if (!seen[m]) {
          seen[m] = 1;
          stack.push_back(m);
        }
    }
    return seen;
  };
  std::vector<int> groupOf(used, -1);
  std::vector<std::vector<unsigned>> groups;
  for (unsigned c = 0; c < used; ++c) {
    if (groupOf[c] >= 0)
      continue;
    std::vector<char> down = reach(c, next), up = reach(c, prev);
    groups.emplace_back();
    for (unsigned m = c; m < used; ++m)
      if (down[m] && up[m]) {
        groupOf[m] = int(groups.size() - 1);
        groups.back().push_back(m);
      }
  }
  // Kahn's order over the groups, the lowest first chip first.
  std::vector<unsigned> pending(groups.size(), 0);
  std::vector<std::set<unsigned>> after(groups.size());
  for (const Crossing &x : crossings) {
    unsigned a = unsigned(groupOf[x.from]), b = unsigned(groupOf[x.to]);
    if (a != b && after[a].insert(b).second)
      ++pending[b];
  }
  std::set<unsigned> ready;
  for (unsigned g = 0; g < groups.size(); ++g)
    if (!pending[g])
      ready.insert(g);
  std::vector<std::vector<unsigned>> ordered;
  while (!ready.empty()) {
    unsigned g = *ready.begin();
    ready.erase(ready.begin());
    ordered.push_back(groups[g]);
    for (unsigned b : after[g])
      if (!--pending[b])
        ready.insert(b);
  }
  return ordered;
}

/// What makes a lockstep group's schedules usable for another's, shifted
/// in time: each chip's work (as shareKey, without the chip numbers of its
/// transfers), its links, and how many vectors it receives from outside
/// the group on each (their arrivals decide the shift, not the key).
std::string groupKey(const std::vector<unsigned> &group,
                     const std::vector<std::unique_ptr<ir::Function>> &parts,
                     const std::vector<ChipTraffic> &traffic, const std::set<unsigned> &members,
                     unsigned links) {
  std::string key;
  for (unsigned c : group) {
    ChipTraffic bare = traffic[c];
    for (ChipTraffic::Incoming &in : bare.incoming)
      in.arrivals.clear();
    std::string text = shareKey(*parts[c], bare, links);
    // The transfers' chips are the group's; their links say which.
    static const std::regex chips("(from|to) = [0-9]+");
    key += std::regex_replace(text, chips, "$1") + "||";
    for (const ChipTraffic::Incoming &in : traffic[c].incoming) {
      key += "<" + std::to_string(in.link);
      if (!members.count(in.fromChip))
        key += "," + std::to_string(in.arrivals.size());
    }
    for (const ChipTraffic::Outgoing &out : traffic[c].outgoing)
      key += ">" + std::to_string(out.link) + (members.count(out.toChip) ? "" : "x");
    key += "\n";
  }
  return key;
}

/// A partition whose chips send to each other both ways (a tensor-parallel
/// one: a reduce-scatter and an all-gather written as slices, transfers,
/// adds and concats), scheduled in lockstep: partition chip c on topology
/// chip c, every chip of a group at once on its own thread, each in
/// program order. The groups are the chips that depend on each other both
/// ways (all of them for tensor parallelism; one node per pipeline stage
/// for a hybrid partition), scheduled one after the other, each with the
/// arrivals of what the groups before it send it; a group with the same
/// work and traffic as one scheduled already takes its schedules, shifted
/// in time.
/// A chip places the sends of a value at its `transfer` op, each vector as
/// soon as it is written and its link is free, and publishes the arrivals
/// in a mailbox; a chip that receives the value places its recvs where the
/// value's input is in its program (the same point of the global order),
/// after waiting for the mailbox to have it.
///
/// No deadlock: every chip's program is the global program's ops of that
/// chip, in the global (SSA) order, and a sender's transfer op is at the
/// same position of that order as the receiver's input. Suppose chips wait
/// for ever; take, among the transfers they wait for, the one earliest in
/// the global order, t. Its sender has not published t, so it is itself
/// waiting, for a transfer before t in its program, hence before t in the
/// global order, which some chip waits for: t was not the earliest. A chip
/// that fails (SRAM full) marks itself failed, and a chip waiting for a
/// transfer from it stops too: nothing waits for a chip that will never
/// send. (A chip that finishes closes its mailbox entry too: a transfer it
/// never sent, which a well-formed split cannot have, stops its receiver
/// with an error rather than a hang.) What a group receives from earlier
/// groups is in the mailbox before its threads start.
///
/// Determinism: a chip's schedule depends only on its own function, the
/// options and the arrivals it reads from the mailbox, which are its
/// senders' schedules up to that transfer; thread timing only decides
/// when, not what, it reads (the scheduler has no state shared between
/// threads: no function-local statics but constant tables, every placer
/// and allocator per chip). Whether a chip stops because a sender failed
/// is likewise a function of the sender's program, and the error reported
/// is the lowest-numbered chip's own.
///
/// Parameters: the whole group with rows; when a chip does not fit, the
/// whole group again packed, then striped (as scheduleFunction for one
/// chip). Placement heuristics (with `tune`): each variant set for the
/// whole group, the one whose slowest chip is fastest kept.
llvm::Expected<Schedule> scheduleLockstep(const ir::Function &declared,
                                          const ChipDescription &chip,
                                          const ScheduleOptions &options, const Topology &topology,
                                          unsigned used) {
  std::unique_ptr<ir::Function> relayed = routed(declared, topology);
  const ir::Function &fn = relayed ? *relayed : declared;
  // Relays may pass through chips the partition gave no work.
  for (const auto &op : fn.ops())
    if (op->kind() == ir::OpKind::Transfer)
      used = std::max({used, unsigned(op->intAttr("from").value_or(0)) + 1,
                       unsigned(op->intAttr("to").value_or(0)) + 1});
  if (used > topology.numChips())
    return error("func @" + fn.name() + " uses " + llvm::Twine(used) + " chips, topology '" +
                 options.topology + "' has " + llvm::Twine(topology.numChips()));
  auto found = crossingsOf(fn, topology, options.topology, {});
  if (!found)
    return found.takeError();
  const std::vector<Crossing> &crossings = *found;
  std::vector<std::unique_ptr<ir::Function>> parts, legal;
  std::vector<ChipTraffic> traffic(used);
  // Each chip's lockstep group (below): transfers inside one pack tails.
  std::vector<size_t> groupOf(used, 0);
  {
    const std::vector<std::vector<unsigned>> groups = chipGroups(crossings, used);
    for (size_t g = 0; g < groups.size(); ++g)
      for (unsigned c : groups[g])
        groupOf[c] = g;
  }
  for (unsigned c = 0; c < used; ++c) {
    parts.push_back(chipFunction(fn, c, crossings, /*keepSends=*/true));
    auto legalized = legalizedForScheduling(*parts.back(), chip, options.knobs);
    if (!legalized)
      return legalized.takeError();
    legal.push_back(std::move(*legalized));
    traffic[c].chip = c;
    for (const Crossing &x : crossings) {
      if (x.to == c)
        traffic[c].incoming.push_back({transferName(x.id), x.from, x.farLink, {}, {}, x.id});
      if (x.from == c) {
        traffic[c].outgoing.push_back({transferName(x.id), x.id, x.to, x.link, x.farLink});
        traffic[c].outgoing.back().packTails = groupOf[x.from] == groupOf[x.to];
      }
    }
  }
  std::vector<std::optional<Schedule>> schedules(used);
  // One run of a group: every chip of it on its own thread, what earlier
  // groups sent in the mailbox already.
  struct GroupRun {
    std::vector<std::optional<llvm::Expected<Schedule>>> results;
    std::vector<char> packed, aborted;
    PlacementHeuristics decided{false, false, false, false}; // by any chip
  };
  auto runGroup = [&](const std::vector<unsigned> &group, ParamStorage storage,
                      const PlacementHeuristics &heuristics) {
    TransferMailbox mailbox(used);
    for (unsigned c = 0; c < used; ++c)
      if (schedules[c])
        for (const LinkTransfer &t : schedules[c]->sent)
          mailbox.publish(t);
    // A chip outside the group sends nothing more: waiting for it would
    // be waiting for ever.
    for (unsigned c = 0; c < used; ++c)
      if (!llvm::is_contained(group, c))
        mailbox.close(c);
    GroupRun run;
    const size_t n = group.size();
    run.results.resize(n);
    run.packed.assign(n, 0);
    run.aborted.assign(n, 0);
    std::vector<PlacementHeuristics> decided(n);
    {
      std::vector<std::thread> threads;
      for (size_t i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
          const unsigned c = group[i];
          ChipTraffic mine = traffic[c];
          mine.mailbox = &mailbox;
          bool packedAny = false;
          auto schedule = scheduleOnce(legal[c] ? *legal[c] : *parts[c], chip, storage, packedAny,
                                       heuristics, decided[i], &mine, options.knobs);
          mailbox.close(c);
          run.packed[i] = packedAny;
          run.results[i].emplace(std::move(schedule));
        });
      for (std::thread &t : threads)
        t.join();
    }
    for (size_t i = 0; i < n; ++i) {
      run.aborted[i] = mailbox.aborted(group[i]);
      for (const PlacementHeuristic &p : placementHeuristicTable())
        run.decided.*p.flag |= decided[i].*p.flag;
    }
    return run;
  };
  auto succeeded = [](GroupRun &run) {
    return llvm::all_of(run.results, [](auto &r) { return bool(*r); });
  };
  auto slowest = [](GroupRun &run) {
    int64_t cycles = 0;
    for (auto &r : run.results)
      cycles = std::max(cycles, (**r).cycles);
    return cycles;
  };
  auto dropErrors = [](GroupRun &run) {
    for (auto &r : run.results)
      if (!*r)
        llvm::consumeError(r->takeError());
  };
  // A group's schedules, or its first chip's own error.
  // Progress and times: a row per group, under it one per variant (its
  // chips on threads of their own: the process's CPU time).
  auto scheduleGroup = [&](const std::vector<unsigned> &group, const support::Progress &progress,
                           const support::Timing &timing) -> llvm::Error {
    const PlacementHeuristics first = options.heuristics.value_or(PlacementHeuristics{});
    const std::vector<ParamStorage> attempts = storageAttempts(options.packing);
    for (size_t i = 0;; ++i) {
      const std::string attempt = i ? " (" + storageName(attempts[i]) + ")" : "";
      progress.status("variant 1" + attempt);
      support::TimedScope firstTimed(timing, "variant 1" + attempt + ": " + heuristicSetName(first));
      GroupRun run = runGroup(group, attempts[i], first);
      firstTimed.stop();
      if (succeeded(run)) {
        // The other sets of heuristics, for the whole group with the
        // storage that fits, as scheduleFunction tries them for one chip:
        // the fewest cycles of the slowest chip win, the default on a tie;
        // a set that differs from the default, or from a set tried before
        // it, only in choices no chip met is skipped, one that fails passed
        // over.
        if (options.tune && !options.heuristics) {
          const std::vector<PlacementHeuristics> variants = variantsToTry(run.decided, first);
          for (size_t k = 0; k < variants.size(); ++k) {
            const PlacementHeuristics &h = variants[k];
            progress.status("variant " + llvm::Twine(k + 2) + " of " +
                            llvm::Twine(variants.size() + 1) + attempt);
            support::TimedScope timed(timing, "variant " + llvm::Twine(k + 2) + attempt + ": " +
                                                  heuristicSetName(h));
            GroupRun other = runGroup(group, attempts[i], h);
            if (succeeded(other) && slowest(other) < slowest(run))
              run = std::move(other);
            else
              dropErrors(other);
          }
        }
        for (size_t k = 0; k < group.size(); ++k)
          schedules[group[k]] = std::move(**run.results[k]);
        return llvm::Error::success();
      }
      // The chips' own errors, in chip order (the others stopped waiting
      // for a chip that failed).
      std::vector<llvm::Error> own;
      for (size_t k = 0; k < group.size(); ++k) {
        if (*run.results[k])
          continue;
        llvm::Error e = run.results[k]->takeError();
        if (run.aborted[k])
          llvm::consumeError(std::move(e));
        else
          own.push_back(std::move(e));
      }
      if (own.empty())
        return error("func @" + fn.name() +
                     ": a chip waited for a value its sender finished without sending");
      const bool last = i + 1 == attempts.size() ||
                        (attempts[i] == ParamStorage::Packed && !llvm::is_contained(run.packed, 1));
      // The first error that is not SRAM being full, else (the last
      // attempt) the first chip's; SRAM full only: the whole group again,
      // packed.
      llvm::Error reported = llvm::Error::success();
      for (llvm::Error &e : own) {
        if (!reported && !last && takeDoesNotFit(e))
          continue;
        if (!reported)
          reported = std::move(e);
        else
          llvm::consumeError(std::move(e));
      }
      if (reported)
        return reported;
    }
  };

  // Groups in order; one whose key has a pattern that fits it shares the
  // pattern's schedules.
  struct SharedGroup {
    std::vector<unsigned> chips;
    /// Per chip, per transfer it receives, the arrivals its schedule took
    /// (empty for a transfer from inside the group).
    GroupArrivals arrivals;
    /// From its first arrival to its last chip's end.
    int64_t span = 0;
  };
  // The arrivals of what `group`'s chips receive from outside it, as
  // SharedGroup::arrivals.
  auto externalArrivals = [&](const std::vector<unsigned> &group, const std::set<unsigned> &members) {
    GroupArrivals all;
    for (unsigned c : group) {
      all.emplace_back();
      for (const ChipTraffic::Incoming &in : traffic[c].incoming)
        all.back().push_back(members.count(in.fromChip) ? std::vector<int64_t>{} : in.arrivals);
    }
    return all;
  };
  // Per key, the groups scheduled so far (a pattern each).
  std::map<std::string, std::vector<SharedGroup>> scheduled;
  unsigned distinct = 0;
  const std::vector<std::vector<unsigned>> groups = chipGroups(crossings, used);
  for (const std::vector<unsigned> &group : groups) {
    const std::set<unsigned> members(group.begin(), group.end());
    // What the group receives from earlier groups, arrivals known.
    std::optional<int64_t> origin;
    for (unsigned c : group)
      for (ChipTraffic::Incoming &in : traffic[c].incoming) {
        if (members.count(in.fromChip))
          continue;
        for (const LinkTransfer &t : schedules[in.fromChip]->sent)
          if (t.id == in.id) {
            in.arrivals = t.arrivals;
            in.perm = t.perm;
            in.tailRows = t.tailRows;
          }
        if (!in.arrivals.empty())
          origin = std::min(origin.value_or(in.arrivals.front()), in.arrivals.front());
      }
    const std::string key = groupKey(group, parts, traffic, members, chip.c2cLinks);
    const auto arrivals = externalArrivals(group, members);
    bool shared = false;
    std::vector<SharedGroup> &patterns = scheduled[key];
    if (origin && !patterns.empty()) {
      // The pattern of least skew (Transfers.h, closestPattern): a group
      // that receives out of step with every pattern would carry the
      // skew into every later group, and is scheduled instead
      // (sharesPattern).
      std::vector<const GroupArrivals *> before;
      for (const SharedGroup &pattern : patterns)
        before.push_back(&pattern.arrivals);
      const std::optional<PatternFit> fit = closestPattern(arrivals, before);
      if (fit && sharesPattern(fit->skew, patterns[fit->pattern].span, patterns.size(), options.knobs)) {
        const SharedGroup &pattern = patterns[fit->pattern];
        std::vector<std::optional<Schedule>> moved;
        for (size_t k = 0; k < group.size(); ++k) {
          const unsigned from = pattern.chips[k];
          moved.push_back(shifted(*schedules[from], from, traffic[from], ioNames(*parts[from]), fit->shift,
                                  *parts[group[k]], traffic[group[k]]));
          if (!moved.back())
            break;
        }
        if (moved.size() == group.size() && llvm::all_of(moved, [](auto &m) { return bool(m); })) {
          for (size_t k = 0; k < group.size(); ++k)
            schedules[group[k]] = std::move(moved[k]);
          shared = true;
        }
      }
    }
    if (shared)
      continue;
    // "chips 0-7", or "chips 0,2,5" when not consecutive.
    std::string title = "chips " + std::to_string(group.front());
    if (group.back() - group.front() + 1 == group.size() && group.size() > 1)
      title += "-" + std::to_string(group.back());
    else
      for (size_t k = 1; k < group.size(); ++k)
        title += "," + std::to_string(group[k]);
    options.progress.status(title);
    support::TimedScope timed(options.timing, title);
    if (llvm::Error e = scheduleGroup(group, options.progress.inner(), timed.timing()))
      return e;
    timed.stop();
    distinct += unsigned(group.size());
    int64_t end = 0;
    for (unsigned c : group)
      end = std::max(end, schedules[c]->cycles);
    patterns.push_back(SharedGroup{group, arrivals, end - origin.value_or(0)});
  }

  std::vector<Schedule> all;
  for (unsigned c = 0; c < used; ++c)
    all.push_back(std::move(*schedules[c]));
  std::vector<unsigned> onChip(used);
  for (unsigned c = 0; c < used; ++c)
    onChip[c] = c;
  Schedule s = merge(fn, std::move(all), onChip, distinct, options.topology, topology.numChips());
  s.lockstep = true;
  s.groups = unsigned(groups.size());
  for (unsigned g = 0; g < groups.size(); ++g)
    for (unsigned c : groups[g])
      s.chips[c].group = g;
  return s;
}

} // namespace

bool isPartitioned(const ir::Function &fn) {
  return llvm::any_of(fn.ops(), [](const std::unique_ptr<ir::Op> &op) {
    return op->kind() == ir::OpKind::Transfer || op->attr("chip");
  });
}

llvm::Expected<Schedule> scheduleMultiChip(const ir::Function &fn, const ChipDescription &chip,
                                           const ScheduleOptions &options) {
  if (auto e = refuseImpossibleValues(fn, chip))
    return e;
  auto topology = Topology::parse(options.topology, chip.c2cLinks);
  if (!topology)
    return topology.takeError();
  unsigned used = 1;
  for (const auto &op : fn.ops())
    used = std::max(used, unsigned(op->chip()) + 1);
  if (used > topology->numChips())
    return error("func @" + fn.name() + " uses " + llvm::Twine(used) + " chips, topology '" +
                 options.topology + "' has " + llvm::Twine(topology->numChips()));

  // A transfer to a chip that is not later: the chips depend on each
  // other both ways, and are scheduled in lockstep.
  if (llvm::any_of(fn.ops(), [](const std::unique_ptr<ir::Op> &op) {
        return op->kind() == ir::OpKind::Transfer &&
               op->intAttr("from").value_or(0) >= op->intAttr("to").value_or(0);
      }))
    return scheduleLockstep(fn, chip, options, *topology, used);

  // The partition's chips are pipeline stages; stage s runs on chain[s],
  // each chip of the chain cabled straight to the next.
  std::optional<std::vector<unsigned>> chain = topology->chain(used);
  if (!chain)
    return error("topology '" + options.topology + "' has no chain of " + llvm::Twine(used) +
                 " chips each cabled to the next");
  auto found = crossingsOf(fn, *topology, options.topology, *chain);
  if (!found)
    return found.takeError();
  const std::vector<Crossing> &crossings = *found;

  std::vector<Schedule> schedules;
  schedules.reserve(used); // `arrivals` points into them
  std::map<int64_t, const LinkTransfer *> arrivals;
  // Chips with the same work and the same traffic relative to their first
  // arrival share one schedule, shifted in time.
  std::map<std::string, SharedSchedule> scheduled;
  unsigned distinct = 0;
  for (unsigned c = 0; c < used; ++c) {
    std::unique_ptr<ir::Function> part = chipFunction(fn, c, crossings);
    ChipTraffic traffic;
    traffic.chip = c;
    for (const Crossing &x : crossings) {
      if (x.to == c) {
        const LinkTransfer *sent = arrivals.at(x.id);
        traffic.incoming.push_back({transferName(x.id), x.from, x.farLink, sent->perm, sent->arrivals});
        traffic.incoming.back().tailRows = sent->tailRows;
      }
      if (x.from == c)
        traffic.outgoing.push_back({transferName(x.id), x.id, x.to, x.link, x.farLink});
    }
    const std::string key = shareKey(*part, traffic, chip.c2cLinks);


    const int64_t origin = traffic.incoming.empty() || traffic.incoming[0].arrivals.empty()
                               ? 0
                               : traffic.incoming[0].arrivals[0];
    std::optional<Schedule> shared;
    if (auto it = scheduled.find(key); it != scheduled.end())
      shared = shifted(schedules[it->second.stage], it->second.stage, it->second.traffic,
                       it->second.names, origin - it->second.origin,
                       *part, traffic);
    if (shared) {
      schedules.push_back(std::move(*shared));
    } else {
      options.progress.status("chip " + llvm::Twine(c) + " (" + llvm::Twine(c + 1) + " of " +
                              llvm::Twine(used) + ")");
      support::TimedScope timed(options.timing, "chip " + llvm::Twine(c));
      ScheduleOptions inner = options;
      inner.progress = options.progress.inner();
      inner.timing = timed.timing();
      auto schedule = scheduleFunction(*part, chip, inner, &traffic);
      if (!schedule)
        return schedule.takeError();
      schedules.push_back(std::move(*schedule));
      scheduled.try_emplace(key, SharedSchedule{c, origin, traffic, ioNames(*part)});
      ++distinct;
    }
    for (const LinkTransfer &t : schedules.back().sent)
      arrivals[t.id] = &t;
  }

  return merge(fn, std::move(schedules), *chain, distinct, options.topology, topology->numChips());
}

} // namespace lpu::scheduler
