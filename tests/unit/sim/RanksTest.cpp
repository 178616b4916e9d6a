// A run over several ranks, with the ranks as threads of this process
// (ThreadRanks): the window loop, the gathering of outputs, stats and
// traces, and the agreement on errors give what one process gives. The
// same code runs over MPI in tests/lit/mpi/.
#include "backend/ChipDescription.h"
#include "backend/ProgramText.h"
#include "sim/Ranks.h"
#include "sim/Session.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

using namespace lpu;

namespace {

/// What the threads of one run share: a mailbox per (sender, receiver) and
/// a barrier.
struct Hub {
  explicit Hub(unsigned n) : n(n), box(n, std::vector<std::string>(n)) {}
  unsigned n;
  std::mutex mutex;
  std::condition_variable changed;
  unsigned arrived = 0;
  uint64_t generation = 0;
  std::vector<std::vector<std::string>> box;
  void barrier() {
    std::unique_lock<std::mutex> lock(mutex);
    uint64_t g = generation;
    if (++arrived == n) {
      arrived = 0;
      ++generation;
      changed.notify_all();
      return;
    }
    changed.wait(lock, [&] { return generation != g; });
  }
};

class ThreadRanks final : public sim::Ranks {
public:
  ThreadRanks(Hub &hub, unsigned rank) : hub_(hub), rank_(rank) {}
  unsigned rank() const override { return rank_; }
  unsigned size() const override { return hub_.n; }
  llvm::Expected<std::vector<std::string>> allGather(std::string mine) override {
    return allToAll(std::vector<std::string>(hub_.n, mine));
  }
  llvm::Expected<std::vector<std::string>> allToAll(std::vector<std::string> out) override {
    ++exchanges;
    {
      std::lock_guard<std::mutex> lock(hub_.mutex);
      for (unsigned r = 0; r < hub_.n; ++r)
        hub_.box[rank_][r] = std::move(out[r]);
    }
    hub_.barrier();
    std::vector<std::string> in(hub_.n);
    {
      std::lock_guard<std::mutex> lock(hub_.mutex);
      for (unsigned r = 0; r < hub_.n; ++r)
        in[r] = hub_.box[r][rank_];
    }
    hub_.barrier(); // nobody writes the next exchange before all have read
    return in;
  }

private:
  Hub &hub_;
  unsigned rank_;
};

/// Chip 0 sends the two rows of x to chip 1, which writes them as y: each
/// row received in the cycle it arrives (`recvAt`: the first recv's
/// cycle; 262 is when it arrives).
std::string pairProgram(unsigned recvAt = 262) {
  return "lpu-program 1\ntarget groqchip1\ntopology node 8\nentry main\nbucket\n"
         "tensor input x f16 [2,320] chip 0 slices 0,1 addr 0\n"
         "tensor output y f16 [2,320] chip 1 slices 0,1 addr 0\n"
         "chip 0\nqueue mem1\n  read s1 @0+1 -> w1\n  repeat 1 42\n"
         "queue mem0\n  nop 1\n  read s0 @0+1 -> w0\n  repeat 1 42\n"
         "queue c2c0\n  nop 4\n  send f16 l0 w0\n  repeat 1 42\n"
         "chip 1\nqueue c2c6\n  nop " +
         std::to_string(recvAt) +
         "\n  recv f16 l6 -> e0\n  repeat 1 42\n"
         "queue mem0\n  nop 264\n  write e0 s0 @0+1\n  repeat 1 42\n"
         "queue mem1\n  nop 265\n  write e1 s1 @0+1\n  repeat 1 42\n"
         "chip 2\nchip 3\nchip 4\nchip 5\nchip 6\nchip 7\n";
}

struct Outcome {
  std::string error;
  std::vector<uint8_t> y;
  sim::RunReport report;
  std::string trace;
};

Outcome outcome(llvm::Expected<sim::SessionResult> r) {
  Outcome o;
  if (!r) {
    o.error = llvm::toString(r.takeError());
    return o;
  }
  if (!r->outputs.empty())
    o.y = std::vector<uint8_t>(r->outputs[0].second.bytes().begin(), r->outputs[0].second.bytes().end());
  o.report = r->report;
  o.trace = r->traceJson;
  return o;
}

/// One run of `text`, in one process (ranks = 0) or over `ranks` threads
/// with `counts` chips each (empty: the default assignment): rank 0's
/// outcome, and every rank's error.
Outcome run(const std::string &text, unsigned ranks, std::vector<unsigned> counts = {},
            std::vector<std::string> *errors = nullptr) {
  auto chip = backend::loadChipDescription("groqchip1");
  auto program = backend::parseProgramText(text, "t");
  if (!chip || !program) {
    llvm::consumeError(chip.takeError());
    return {llvm::toString(program.takeError()), {}, {}, {}};
  }
  program->chipFingerprint = chip->fingerprint();
  if (auto e = backend::verifyProgram(*program, *chip))
    return {llvm::toString(std::move(e)), {}, {}, {}};
  std::vector<uint16_t> x(640);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = uint16_t(0x3c00 + i); // f16 bits
  std::vector<uint8_t> bytes(reinterpret_cast<uint8_t *>(x.data()),
                             reinterpret_cast<uint8_t *>(x.data()) + 1280);
  auto tensor = tensor::Tensor::fromBytes(tensor::DType::F16, {2, 320}, bytes);
  EXPECT_TRUE(bool(tensor));
  sim::SessionOptions options;
  options.inputs.emplace("x", std::move(*tensor));
  options.run.trace = true;
  if (ranks == 0)
    return outcome(sim::runSession(*program, *chip, options));
  Hub hub(ranks);
  std::vector<std::unique_ptr<ThreadRanks>> each;
  std::vector<Outcome> results(ranks);
  std::vector<std::thread> threads;
  for (unsigned r = 0; r < ranks; ++r) {
    each.push_back(std::make_unique<ThreadRanks>(hub, r));
    each.back()->counts = counts;
  }
  for (unsigned r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      sim::SessionOptions o = options;
      o.run.ranks = each[r].get();
      results[r] = outcome(sim::runSession(*program, *chip, o));
    });
  for (auto &t : threads)
    t.join();
  if (errors)
    for (const Outcome &o : results)
      errors->push_back(o.error);
  return results[0];
}

void expectSame(const Outcome &a, const Outcome &b) {
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.report.cycles, b.report.cycles);
  ASSERT_EQ(a.report.chips.size(), b.report.chips.size());
  for (size_t c = 0; c < a.report.chips.size(); ++c) {
    EXPECT_EQ(a.report.chips[c].busyCycles, b.report.chips[c].busyCycles) << "chip " << c;
    EXPECT_EQ(a.report.chips[c].queueBusy, b.report.chips[c].queueBusy) << "chip " << c;
    EXPECT_EQ(a.report.chips[c].linkBytesSent, b.report.chips[c].linkBytesSent) << "chip " << c;
    EXPECT_EQ(a.report.chips[c].lastCycle, b.report.chips[c].lastCycle) << "chip " << c;
  }
  EXPECT_EQ(a.report.queueNames, b.report.queueNames);
  EXPECT_EQ(a.trace, b.trace);
}

} // namespace

TEST(Ranks, ChipsDealtByWork) {
  Hub hub(4);
  ThreadRanks ranks(hub, 0);
  bool busy[] = {true, true, true, true, false, false, false, false};
  auto first = ranks.firstChips(busy);
  ASSERT_TRUE(bool(first));
  EXPECT_EQ(*first, (std::vector<unsigned>{0, 1, 2, 3, 8}));
  bool spread[] = {true, false, true, false, true, false, true, false};
  first = ranks.firstChips(spread);
  ASSERT_TRUE(bool(first));
  EXPECT_EQ(*first, (std::vector<unsigned>{0, 2, 4, 6, 8}));
  bool none[] = {false, false, false, false};
  first = ranks.firstChips(none);
  ASSERT_TRUE(bool(first));
  EXPECT_EQ(*first, (std::vector<unsigned>{0, 1, 2, 3, 4}));
  // Given counts, and counts that do not fit.
  ranks.counts = {0, 5, 0, 3};
  first = ranks.firstChips(busy);
  ASSERT_TRUE(bool(first));
  EXPECT_EQ(*first, (std::vector<unsigned>{0, 0, 5, 5, 8}));
  ranks.counts = {1, 2, 3};
  first = ranks.firstChips(busy);
  ASSERT_FALSE(bool(first));
  EXPECT_EQ(llvm::toString(first.takeError()), "--rank-chips gives 3 count(s) for 4 rank(s)");
  ranks.counts = {1, 2, 3, 4};
  first = ranks.firstChips(busy);
  ASSERT_FALSE(bool(first));
  EXPECT_EQ(llvm::toString(first.takeError()),
            "--rank-chips adds up to 10 chip(s); the program's bucket has 8 (its topology's)");
}

TEST(Ranks, ByteReaderRefusesShortMessages) {
  sim::ByteWriter w;
  w.put<int64_t>(-5);
  w.putBytes("abc");
  std::string bytes = w.take();
  sim::ByteReader r(bytes);
  EXPECT_EQ(r.get<int64_t>(), -5);
  EXPECT_EQ(r.getBytes(), "abc");
  EXPECT_TRUE(r.done());
  EXPECT_FALSE(r.bad());
  sim::ByteReader cut(llvm::StringRef(bytes).drop_back(1));
  cut.get<int64_t>();
  EXPECT_EQ(cut.getBytes(), "");
  EXPECT_TRUE(cut.bad());
}

// The sending and the receiving chip on different ranks, on the same one,
// over 2, 3 and 8 ranks: y, every figure of the report and the trace are
// one process's.
TEST(Ranks, SameRunAsOneProcess) {
  Outcome one = run(pairProgram(), 0);
  ASSERT_EQ(one.error, "");
  ASSERT_EQ(one.y.size(), 1280u);
  for (unsigned ranks : {2u, 3u, 8u})
    expectSame(one, run(pairProgram(), ranks));
  expectSame(one, run(pairProgram(), 2, {1, 7}));
  expectSame(one, run(pairProgram(), 2, {2, 6}));
  expectSame(one, run(pairProgram(), 3, {0, 1, 7}));
}

// A recv one cycle before its row arrives: the receiving rank names the
// arrival, and every rank returns the one process's error.
TEST(Ranks, ViolationAsOneProcess) {
  Outcome one = run(pairProgram(261), 0);
  EXPECT_EQ(one.error, "schedule violation: chip 1, unit c2c, queue c2c6, instruction 1 (recv f16 l6 -> "
                       "e0), cycle 261: receive on link l6 (from chip 0, link l0) with no data "
                       "arrived (the next vector arrives at cycle 262)");
  std::vector<std::string> errors;
  Outcome split = run(pairProgram(261), 2, {1, 7}, &errors);
  EXPECT_EQ(split.error, one.error);
  EXPECT_EQ(errors, (std::vector<std::string>{one.error, one.error}));
}

// One rank's error before the run ends every rank with it, named by rank.
TEST(Ranks, AgreeOnOneRanksError) {
  Hub hub(3);
  std::vector<std::string> got(3);
  std::vector<std::thread> threads;
  for (unsigned r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      ThreadRanks ranks(hub, r);
      llvm::Error local = r == 2 ? llvm::createStringError(llvm::inconvertibleErrorCode(), "no weights")
                                 : llvm::Error::success();
      llvm::Error e = sim::agree(&ranks, std::move(local));
      got[r] = e ? llvm::toString(std::move(e)) : "";
      EXPECT_TRUE(ranks.settled);
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(got, (std::vector<std::string>(3, "rank 2: no weights")));
}
