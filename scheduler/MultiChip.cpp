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
#include <map>
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
      return error("topology '" + name + "' has no link from chip " + llvm::Twine(from) +
                   " to chip " + llvm::Twine(to) +
                   " (routes through other chips are not scheduled yet)");
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
    for (size_t i = 0; i < ret->operands().size(); ++i)
      if (ret->operand(i)->chip() == int64_t(c)) {
        results.push_back(mapped.at(ret->operand(i)));
        names.push_back(i < declared.size() ? declared[i] : "out" + std::to_string(i));
      }
    ir::Op *r = out->append(ir::OpKind::Return, ir::Type{}, std::move(results), ret->loc());
    r->setAttr("names", std::move(names));
  }
  return out;
}

struct SharedSchedule {
  unsigned stage = 0;
  int64_t origin = 0;  // its first arrival
  ChipTraffic traffic; // its links
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

/// `from` moved `delta` cycles later and renamed for `part`: its weights'
/// paths and the transfers it sends and receives. Nullopt when the shift
/// would put an instruction before cycle 0.
std::optional<Schedule> shifted(const Schedule &from, const ChipTraffic &fromTraffic,
                                int64_t delta, const ir::Function &part,
                                const ChipTraffic &traffic) {
  Schedule s = from;
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
  s.cycles += delta;
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
    for (OpTiming &t : s.ops)
      merged.ops.push_back(std::move(t));
  }
  return merged;
}

/// A partition whose chips send to each other both ways (a tensor-parallel
/// one: a reduce-scatter and an all-gather written as slices, transfers,
/// adds and concats), scheduled in lockstep: partition chip c on topology
/// chip c, every chip at once on its own thread, each in program order.
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
/// with an error rather than a hang.)
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
llvm::Expected<Schedule> scheduleLockstep(const ir::Function &fn, const ChipDescription &chip,
                                          const ScheduleOptions &options, const Topology &topology,
                                          unsigned used) {
  auto found = crossingsOf(fn, topology, options.topology, {});
  if (!found)
    return found.takeError();
  const std::vector<Crossing> &crossings = *found;
  std::vector<std::unique_ptr<ir::Function>> parts, legal;
  std::vector<ChipTraffic> traffic(used);
  for (unsigned c = 0; c < used; ++c) {
    parts.push_back(chipFunction(fn, c, crossings, /*keepSends=*/true));
    auto legalized = legalizedForScheduling(*parts.back(), chip);
    if (!legalized)
      return legalized.takeError();
    legal.push_back(std::move(*legalized));
    traffic[c].chip = c;
    for (const Crossing &x : crossings) {
      if (x.to == c)
        traffic[c].incoming.push_back({transferName(x.id), x.from, x.farLink, {}, {}, x.id});
      if (x.from == c)
        traffic[c].outgoing.push_back({transferName(x.id), x.id, x.to, x.link, x.farLink});
    }
  }
  // One run of the whole group: every chip on its own thread.
  struct GroupRun {
    std::vector<std::optional<llvm::Expected<Schedule>>> results;
    std::vector<char> packed, aborted;
    PlacementHeuristics decided{false, false, false, false}; // by any chip
  };
  auto runGroup = [&](ParamStorage storage, const PlacementHeuristics &heuristics) {
    TransferMailbox mailbox(used);
    GroupRun run;
    run.results.resize(used);
    run.packed.assign(used, 0);
    run.aborted.assign(used, 0);
    std::vector<PlacementHeuristics> decided(used);
    {
      std::vector<std::thread> threads;
      for (unsigned c = 0; c < used; ++c)
        threads.emplace_back([&, c] {
          ChipTraffic mine = traffic[c];
          mine.mailbox = &mailbox;
          bool packedAny = false;
          auto schedule = scheduleOnce(legal[c] ? *legal[c] : *parts[c], chip, storage, packedAny,
                                       heuristics, decided[c], &mine);
          mailbox.close(c);
          run.packed[c] = packedAny;
          run.results[c].emplace(std::move(schedule));
        });
      for (std::thread &t : threads)
        t.join();
    }
    for (unsigned c = 0; c < used; ++c) {
      run.aborted[c] = mailbox.aborted(c);
      for (const PlacementHeuristic &p : placementHeuristicTable())
        run.decided.*p.flag |= decided[c].*p.flag;
    }
    return run;
  };
  // The run's schedules merged; nullopt (its errors dropped) when a chip
  // failed.
  auto merged = [&](GroupRun &run) -> std::optional<Schedule> {
    if (!llvm::all_of(run.results, [](auto &r) { return bool(*r); })) {
      for (auto &r : run.results)
        if (!*r)
          llvm::consumeError(r->takeError());
      return std::nullopt;
    }
    std::vector<Schedule> schedules;
    for (auto &r : run.results)
      schedules.push_back(std::move(**r));
    std::vector<unsigned> onChip(used);
    for (unsigned c = 0; c < used; ++c)
      onChip[c] = c;
    Schedule s = merge(fn, std::move(schedules), onChip, used, options.topology, topology.numChips());
    s.lockstep = true;
    return s;
  };

  const PlacementHeuristics first = options.heuristics.value_or(PlacementHeuristics{});
  const std::vector<ParamStorage> attempts = storageAttempts(options.packing);
  for (size_t i = 0;; ++i) {
    GroupRun run = runGroup(attempts[i], first);
    if (llvm::all_of(run.results, [](auto &r) { return bool(*r); })) {
      std::optional<Schedule> best = merged(run);
      // The other sets of heuristics, for the whole group with the storage
      // that fits, as scheduleFunction tries them for one chip: the fewest
      // cycles of the slowest chip win, the default on a tie; a set that
      // differs only in choices no chip met is skipped, one that fails
      // passed over.
      if (!options.tune || options.heuristics)
        return std::move(*best);
      for (const PlacementHeuristics &h : heuristicVariants()) {
        if (!variantMatters(h, run.decided, first))
          continue;
        GroupRun other = runGroup(attempts[i], h);
        if (std::optional<Schedule> s = merged(other); s && s->cycles < best->cycles)
          best = std::move(s);
      }
      return std::move(*best);
    }
    // The chips' own errors, in chip order (the others stopped waiting for
    // a chip that failed).
    std::vector<llvm::Error> own;
    for (unsigned c = 0; c < used; ++c) {
      if (*run.results[c])
        continue;
      llvm::Error e = run.results[c]->takeError();
      if (run.aborted[c])
        llvm::consumeError(std::move(e));
      else
        own.push_back(std::move(e));
    }
    if (own.empty())
      return error("func @" + fn.name() +
                   ": a chip waited for a value its sender finished without sending");
    const bool last = i + 1 == attempts.size() ||
                      (attempts[i] == ParamStorage::Packed && !llvm::is_contained(run.packed, 1));
    // The first error that is not SRAM being full, else (the last attempt)
    // the first chip's; SRAM full only: the whole group again, packed.
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
}

} // namespace

bool isPartitioned(const ir::Function &fn) {
  return llvm::any_of(fn.ops(), [](const std::unique_ptr<ir::Op> &op) {
    return op->kind() == ir::OpKind::Transfer || op->attr("chip");
  });
}

llvm::Expected<Schedule> scheduleMultiChip(const ir::Function &fn, const ChipDescription &chip,
                                           const ScheduleOptions &options) {
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
      shared = shifted(schedules[it->second.stage], it->second.traffic, origin - it->second.origin,
                       *part, traffic);
    if (shared) {
      schedules.push_back(std::move(*shared));
    } else {
      auto schedule = scheduleFunction(*part, chip, options, &traffic);
      if (!schedule)
        return schedule.takeError();
      schedules.push_back(std::move(*schedule));
      scheduled.try_emplace(key, SharedSchedule{c, origin, traffic});
      ++distinct;
    }
    for (const LinkTransfer &t : schedules.back().sent)
      arrivals[t.id] = &t;
  }

  return merge(fn, std::move(schedules), *chain, distinct, options.topology, topology->numChips());
}

} // namespace lpu::scheduler
