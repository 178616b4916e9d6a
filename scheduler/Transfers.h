// One chip's sends and receives in a multi-chip function (Transfers.cpp).
#pragma once

#include "scheduler/Lowering.h"
#include "scheduler/Scheduler.h"

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace lpu::scheduler {

/// Whether `name` is an input `traffic` receives from another chip.
bool received(const ChipTraffic *traffic, llvm::StringRef name);
/// Whether `name` is an output `traffic` sends to another chip.
bool sentBy(const ChipTraffic *traffic, llvm::StringRef name);

/// How many rows' last vectors one sent vector may carry, side by side: a
/// row of at least one full vector whose last vector holds `tail` = cols %
/// lanes lanes, at most half of it, shares it with the next lanes / tail - 1
/// rows' (BERT's 768 f16 lanes a row: 2 full vectors and one of 128 lanes,
/// so two rows go as 5 vectors instead of 6). 1: every vector as stored.
/// Rows narrower than a vector are not packed: such transfers are short,
/// and the rows a packed vector waits for cost more than the link time it
/// saves (docs/partitioning.md, "Packed tails").
int64_t tailRows(ir::DType dtype, int64_t cols, unsigned lanes);

/// Places the recvs of one received value `in` into `input`'s SRAM, each
/// vector no earlier than it arrives and, per link, after the recv of the
/// vector sent before it (`lastRecv`: each link's last recv so far).
llvm::Error receiveOne(const ir::Op &input, const ChipTraffic::Incoming &in, unsigned chip,
                       std::map<unsigned, int64_t> &lastRecv, LoweringContext &ctx);

/// Runs one value's transfer (`place`) for the op that receives it (its
/// input) or sends it (the function's return): the driver notes what it
/// placed (Schedule::ops).
using AroundTransfer = std::function<llvm::Error(const ir::Op &op, int64_t id,
                                                 const std::function<llvm::Error()> &place)>;

/// Places the recvs of every value `traffic` receives, each vector written
/// to its input's SRAM no earlier than it arrives.
llvm::Error receiveAll(const ir::Function &fn, const ChipTraffic &traffic, LoweringContext &ctx,
                       const AroundTransfer &around);

/// Places the sends of one value stored as `view`, each vector as soon as
/// it is written and its link is free (`linkFree`: per link, the first
/// cycle it is; updated); the arrivals at the far end. `owner`: the op the
/// lane maps of packed tails belong to.
llvm::Expected<LinkTransfer> sendOne(const ir::Op &owner, const TensorView &view,
                                      const ChipTraffic::Outgoing &out,
                                      unsigned chip, std::map<unsigned, int64_t> &linkFree,
                                      LoweringContext &ctx);

/// Places the sends of every value `traffic` sends (`views`: where each is
/// stored), each vector as soon as it is written and its link is free;
/// records the arrivals in `schedule.sent`.
llvm::Error sendAll(const ir::Function &fn, const ChipTraffic &traffic,
                    const std::map<std::string, TensorView> &views, LoweringContext &ctx,
                    Schedule &schedule, const AroundTransfer &around);

/// What the chips of a lockstep group (MultiChip.cpp, docs/partitioning.md
/// "The lockstep schedule") pass each other while each is scheduled on its
/// own thread: per transfer id, what its sender placed (the arrival cycle
/// of every vector and the stored order of the rows), published when the
/// sender reaches the transfer in program order. A chip that stops (done,
/// or failed) is marked so: a chip waiting for a transfer that chip did
/// not send is aborted instead of waiting forever.
class TransferMailbox {
public:
  explicit TransferMailbox(unsigned chips) : closed_(chips, false), aborted_(chips, false) {}
  void publish(LinkTransfer sent);
  /// Transfer `id` from chip `from` once published; nullopt once `from`
  /// has stopped without publishing it (`waiter` is then marked aborted).
  std::optional<LinkTransfer> await(int64_t id, unsigned from, unsigned waiter);
  /// `chip` stops (its schedule is done, or failed): it publishes nothing
  /// more.
  void close(unsigned chip);
  /// Whether `chip` stopped because a chip it waited for stopped without
  /// sending it the value.
  bool aborted(unsigned chip) const;

private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int64_t, LinkTransfer> sent_;
  std::vector<bool> closed_, aborted_;
};

/// What a lockstep group receives from outside it: per chip of the group,
/// per transfer it receives, the arrival cycle of every vector (empty for
/// a transfer from inside the group).
using GroupArrivals = std::vector<std::vector<std::vector<int64_t>>>;

/// A group of chips whose work has the same key as a scheduled one (the
/// pattern) can share the pattern's schedules moved `shift` cycles: the
/// least that has every vector arrive no later than the moved schedule
/// receives it. `skew`: how much later than its earliest vector allows the
/// group then starts (the most any vector is late for the pattern, less
/// the least); 0 when it receives as the pattern did, up to a shift.
struct PatternFit {
  size_t pattern = 0;
  int64_t shift = 0, skew = 0;
};
/// Of `patterns` (the arrivals each scheduled group took, by reference: a
/// 70B layer's hold some 10^5 vectors), the one that fits `arrivals` with
/// the least skew (the first on a tie); nullopt when none has a vector in
/// common with it.
std::optional<PatternFit> closestPattern(const GroupArrivals &arrivals,
                                         llvm::ArrayRef<const GroupArrivals *> patterns);
/// Whether a group shares a pattern fitted with `skew` whose schedule
/// spans `span` cycles (first arrival to last result) when its key has
/// `patterns` patterns: the skew is small against the span (at most a
/// fiftieth, or 1,000 cycles), or the key has four patterns already (the
/// bound on what a deep model's compile time and memory grow by). A
/// skew carried by sharing moves every later group too, so a group fed
/// out of step with the pattern (a deep model's first layers, fed by other
/// sources) is scheduled and becomes a pattern itself.
bool sharesPattern(int64_t skew, int64_t span, size_t patterns, const TuningKnobs &knobs);

/// How scheduleFunction stores the parameters in an attempt, from the
/// fastest to read to the one that fits the most (Scheduler.cpp).
/// How parameters are stored (docs/scheduler.md, "Striped SRAM"):
/// StripedBySize is Striped with the stripes placed largest first.
enum class ParamStorage { Rows, Packed, Striped, StripedBySize };
/// The attempts `packing` makes, in order.
std::vector<ParamStorage> storageAttempts(ParamPacking packing);
/// How progress and time reports name an attempt's storage: `packed`.
std::string storageName(ParamStorage storage);
/// A set of placement heuristics as the plan names it: its heuristics'
/// names, comma-separated, or `none`.
std::string heuristicSetName(const PlacementHeuristics &heuristics);
/// The sets of placement heuristics scheduleFunction tries after the
/// default one (docs/scheduler.md, "Variants").
llvm::ArrayRef<PlacementHeuristics> heuristicVariants();
/// The variants (heuristicVariants, in order) worth scheduling after a run
/// with `first` in which the heuristics `decided` decided anything: those
/// that set a choice that was met otherwise than `first` and than every
/// variant before them. One that differs only in choices never met would
/// schedule the same again.
std::vector<PlacementHeuristics> variantsToTry(const PlacementHeuristics &decided,
                                               const PlacementHeuristics &first);
/// E0827 at the first value of `fn` with no elements (a dimension of 0,
/// which IR text allows), E0828 at one larger than the chip's SRAM:
/// nothing the scheduler could place or stream.
llvm::Error refuseImpossibleValues(const ir::Function &fn, const backend::ChipDescription &chip);
/// The function scheduleFunction schedules for `declared`: legalized
/// (null: `declared` as it is).
llvm::Expected<std::unique_ptr<ir::Function>> legalizedForScheduling(const ir::Function &declared,
                                                                     const backend::ChipDescription &chip,
                                                                     const TuningKnobs &knobs);
/// One attempt of scheduleFunction (Scheduler.cpp): `fn` legalized, its
/// parameters stored as `storage` (`packedAny`: whether any was packed),
/// with the placement heuristics `heuristics` (`decided`: those that
/// decided anything). With `traffic->mailbox`, the chip is one of a
/// lockstep group: its sends placed at its `transfer` ops and published,
/// its recvs placed at its received inputs once published.
llvm::Expected<Schedule> scheduleOnce(const ir::Function &fn, const backend::ChipDescription &chip,
                                      ParamStorage storage, bool &packedAny,
                                      const PlacementHeuristics &heuristics,
                                      PlacementHeuristics &decided, const ChipTraffic *traffic,
                                      const TuningKnobs &knobs);

} // namespace lpu::scheduler
