// The pipeline's phases run in order, stop where told, dump what each made,
// and stop at the first error; lpurun's model loading and lpu-opt's
// pipeline are the same library.
#include "driver/Generate.h"
#include "driver/LoadModel.h"
#include "driver/Opt.h"
#include "driver/Pipeline.h"

#include "backend/ProgramBinary.h"
#include "ir/Text.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <gtest/gtest.h>
#include <llvm/Support/GlobPattern.h>

#include <fstream>
#include <limits>

namespace lpu::driver {
namespace {

constexpr const char *kModel = R"(model M {
  param w: f16[64, 32]
  fn forward<B>(x: f16[B, 64]) -> f16[B, 32] {
    return relu(x @ w)
  }
}
entry e = M.forward<B in {1, 4}>
)";

/// A source file and everything a pipeline run over it needs.
struct Source {
  explicit Source(llvm::StringRef source)
      : bufferId(sources.AddNewSourceBuffer(
            llvm::MemoryBuffer::getMemBufferCopy(source, "model.lpu"), llvm::SMLoc())) {
    diags.setConsumer(&collected);
  }
  bool run(PipelineOptions options) {
    auto loaded = backend::loadChipDescription(backend::kDefaultChip);
    EXPECT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
    chip = std::move(*loaded);
    options.chip = &chip;
    options.dumps = &dumpStream;
    options.ir.passDumps = &dumpStream;
    return runPipeline(c, options);
  }
  std::vector<std::string> codes() const {
    std::vector<std::string> out;
    for (const Diagnostic &d : collected.diagnostics)
      out.push_back(d.code());
    return out;
  }

  llvm::SourceMgr sources;
  unsigned bufferId = 0;
  DiagnosticEngine diags{sources};
  CollectingConsumer collected;
  Compilation c{diags, bufferId};
  backend::ChipDescription chip;
  std::string dumps;
  llvm::raw_string_ostream dumpStream{dumps};
};

PipelineOptions upTo(Phase last) {
  PipelineOptions options;
  options.last = last;
  return options;
}

TEST(DriverTest, PhaseNamesParseBack) {
  ASSERT_EQ(allPhases().size(), 7u);
  for (Phase p : allPhases())
    EXPECT_EQ(parsePhase(phaseName(p)), p);
  EXPECT_FALSE(parsePhase("split").has_value());
  EXPECT_EQ(phaseList(), "parse, check, lower, passes, partition, schedule, emit");
}

TEST(DriverTest, RunsExactlyThePhasesAskedFor) {
  for (Phase last : allPhases()) {
    Source r(kModel);
    ASSERT_TRUE(r.run(upTo(last))) << phaseName(last).str();
    EXPECT_EQ(r.c.done, last);
    ASSERT_EQ(r.c.times.size(), size_t(last) + 1);
    for (size_t i = 0; i < r.c.times.size(); ++i)
      EXPECT_EQ(r.c.times[i].phase, allPhases()[i]);
    EXPECT_TRUE(r.c.ast != nullptr);
    EXPECT_EQ(r.c.ir != nullptr, last >= Phase::Lower);
    EXPECT_EQ(r.c.compiled.has_value(), last >= Phase::Schedule);
    EXPECT_EQ(!r.c.binary.empty(), last == Phase::Emit);
    EXPECT_TRUE(r.codes().empty());
  }
}

TEST(DriverTest, TheProgramHasOneBucketPerSizeAndReadsBack) {
  Source r(kModel);
  ASSERT_TRUE(r.run(upTo(Phase::Emit)));
  ASSERT_EQ(r.c.compiled->buckets.size(), 2u);
  EXPECT_EQ(r.c.compiled->buckets[0].entry, "e");
  EXPECT_GT(r.c.compiled->buckets[1].schedule.cycles, 0u);
  auto program = backend::readProgramBinary(
      llvm::ArrayRef(reinterpret_cast<const uint8_t *>(r.c.binary.data()), r.c.binary.size()),
      "e.lpx");
  ASSERT_TRUE(bool(program)) << llvm::toString(program.takeError());
  EXPECT_EQ(program->entries.size(), 1u);
}

TEST(DriverTest, DumpsWhatEachPhaseMade) {
  struct Expect {
    Phase phase;
    const char *marker;
  };
  for (Expect e : {Expect{Phase::Parse, "Model"}, Expect{Phase::Check, "f16[4, 32]"},
                   Expect{Phase::Lower, "func @e<B = 4>"}, Expect{Phase::Passes, "func @e<B = 1>"},
                   Expect{Phase::Schedule, "predicted cycles"}, Expect{Phase::Emit, "entry e"}}) {
    Source r(kModel);
    PipelineOptions options;
    options.last = Phase::Emit;
    options.dumpAfter = {e.phase};
    ASSERT_TRUE(r.run(options));
    r.dumpStream.flush();
    EXPECT_NE(r.dumps.find(e.marker), std::string::npos)
        << phaseName(e.phase).str() << " dump:\n"
        << r.dumps;
  }
}

TEST(DriverTest, TheFirstErrorStopsThePipeline) {
  Source r(R"(model M {
  fn forward(x: f16[4, 8]) -> f16[4, 9] {
    return x
  }
}
entry e = M.forward
)");
  EXPECT_FALSE(r.run(upTo(Phase::Emit)));
  EXPECT_EQ(r.c.done, Phase::Parse);
  EXPECT_EQ(r.c.ir, nullptr);
  EXPECT_FALSE(r.codes().empty());
  EXPECT_EQ(r.c.times.size(), 2u); // parse, and the check that failed
}

TEST(DriverTest, AnEmptyFileIsE0007) {
  Source r("");
  EXPECT_FALSE(r.run(upTo(Phase::Check)));
  EXPECT_EQ(r.codes(), std::vector<std::string>{"E0007"});
}

TEST(DriverTest, ASelectionThatSelectsNothingIsAUsageError) {
  Source r(kModel);
  PipelineOptions options = upTo(Phase::Emit);
  options.select.entries = {"nope"};
  EXPECT_FALSE(r.run(options));
  EXPECT_NE(r.c.selectionError.find("no entry 'nope' (entries: e)"), std::string::npos)
      << r.c.selectionError;
  EXPECT_TRUE(r.codes().empty());
}

TEST(DriverTest, SelectionKeepsTheBucketsAsked) {
  Source r(kModel);
  PipelineOptions options = upTo(Phase::Passes);
  options.select.buckets = {llvm::cantFail(parseBucketSpec("B=4"))};
  ASSERT_TRUE(r.run(options));
  ASSERT_EQ(r.c.ir->functions.size(), 1u);
  EXPECT_EQ(r.c.ir->functions[0]->bucket().front().second, 4);
  EXPECT_EQ(llvm::toString(parseBucketSpec("B=").takeError()), "expected DIM=N[,DIM=N...], got 'B='");
  EXPECT_EQ(llvm::toString(parseBucketSpec("B=3,B=8").takeError()),
            "'B=3,B=8' names B twice (give each size its own --bucket)");
}

TEST(DriverTest, AnUnknownPassIsReported) {
  Source r(kModel);
  PipelineOptions options = upTo(Phase::Passes);
  options.ir.passes = "fold,bogus";
  EXPECT_FALSE(r.run(options));
  EXPECT_EQ(r.c.done, Phase::Lower);
  EXPECT_EQ(r.codes(), std::vector<std::string>{"E0701"});
}

/// lpu-opt's pipeline over the lowered IR gives what lpuc's passes phase
/// gives: one pass manager, one printer.
TEST(DriverTest, OptOverLoweredIRMatchesThePassesPhase) {
  const char *model = R"(model M {
  param w: f16[64, 32]
  fn forward(x: f16[2, 64]) -> f16[2, 32] {
    let y = x @ w
    return relu(y) * 2.0 + relu(y) * 2.0
  }
}
entry e = M.forward
)";
  Source lowered(model), passed(model);
  ASSERT_TRUE(lowered.run(upTo(Phase::Lower)));
  ASSERT_TRUE(passed.run(upTo(Phase::Passes)));
  std::string loweredText, passedText, optText, dumps;
  llvm::raw_string_ostream a(loweredText), b(passedText), out(optText), d(dumps);
  ir::print(*lowered.c.ir, a);
  ir::print(*passed.c.ir, b);
  OptOptions opt;
  opt.passes = "default";
  ASSERT_FALSE(bool(checkOptOptions(opt)));
  auto failure = runOpt(a.str(), "lowered.ir", opt, out, d);
  ASSERT_FALSE(failure.has_value()) << failure->message;
  EXPECT_EQ(out.str(), b.str());
  EXPECT_NE(loweredText, passedText); // the passes did something
}

TEST(DriverTest, OptRefusesBadInputAndBadFlags) {
  std::string out, dumps;
  llvm::raw_string_ostream o(out), d(dumps);
  OptOptions opt;
  auto failure = runOpt("func @f(", "bad.ir", opt, o, d);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->kind, OptFailure::Kind::Input);
  EXPECT_NE(failure->message.find("bad.ir:1:"), std::string::npos) << failure->message;
  opt.passes = "bogus";
  llvm::Error e = checkOptOptions(opt);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("bogus"), std::string::npos);
}

TEST(DriverTest, LoadModelCompilesSourceAndReadsIRText) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("driver-test", dir));
  std::string lpu = (dir + "/m.lpu").str(), irPath = (dir + "/m.ir").str();
  std::ofstream(lpu) << kModel;
  std::string diagnostics;
  llvm::raw_string_ostream diagOut(diagnostics);
  auto module = compileFileToIR(lpu, {}, diagOut);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  EXPECT_EQ((*module)->functions.size(), 2u);
  std::string text;
  llvm::raw_string_ostream textOut(text);
  ir::print(**module, textOut);
  std::ofstream(irPath) << textOut.str();
  auto again = loadModel(irPath, {}, diagOut);
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_EQ((*again)->functions.size(), 2u);

  std::ofstream(lpu) << "model M {";
  auto broken = compileFileToIR(lpu, {}, diagOut);
  ASSERT_FALSE(bool(broken));
  EXPECT_NE(llvm::toString(broken.takeError()).find("does not compile (1 error)"),
            std::string::npos);
  diagOut.flush();
  EXPECT_NE(diagnostics.find("error[E"), std::string::npos) << diagnostics;
  auto missing = loadModel((dir + "/none.lpu").str(), {}, diagOut);
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(llvm::toString(missing.takeError()).find("cannot read"), std::string::npos);
  llvm::sys::fs::remove_directories(dir);
}

} // namespace
} // namespace lpu::driver

namespace lpu::driver {
namespace {

constexpr const char *kPair = R"(model P {
  param up: f16[64, 128]
  param down: f16[128, 64]
  fn forward<B>(x: f16[B, 64]) -> f16[B, 64] {
    return relu(x @ up) @ down
  }
}
entry e = P.forward<B in {8, 32}>
)";

TEST(DriverTest, AutoPartitionKeepsTheKindWithTheFewestCycles) {
  Source s(kPair);
  PipelineOptions options = upTo(Phase::Emit);
  options.chips.chips = 2;
  ASSERT_TRUE(s.run(options)) << s.dumps;
  ASSERT_TRUE(s.c.compiled.has_value());
  ASSERT_EQ(s.c.compiled->buckets.size(), 2u);
  for (const CompiledProgram::BucketInfo &b : s.c.compiled->buckets) {
    ASSERT_TRUE(b.partition.has_value());
    const PartitionChoice &choice = *b.partition;
    // Every kind but hybrid, which is tried only past one node (8 chips).
    ASSERT_EQ(choice.candidates.size(), autoPartitionKinds().size() - 1);
    int64_t fewest = INT64_MAX;
    for (size_t k = 0; k < choice.candidates.size(); ++k) {
      EXPECT_EQ(choice.candidates[k].kind, autoPartitionKinds()[k].name);
      if (choice.candidates[k].ok())
        fewest = std::min(fewest, choice.candidates[k].cycles);
    }
    EXPECT_EQ(b.schedule.cycles, fewest);
    for (const PartitionChoice::Candidate &c : choice.candidates) {
      if (c.kind == choice.chosen) {
        EXPECT_EQ(c.cycles, fewest);
      }
    }
    EXPECT_NE(describePartitionChoice(choice).find("partition: " + choice.chosen + " (auto: "),
              std::string::npos);
  }
}

TEST(DriverTest, AGivenKindMakesNoChoice) {
  Source s(kPair);
  PipelineOptions options = upTo(Phase::Emit);
  options.chips.chips = 2;
  options.chips.kind = ir::PartitionKind::Pipeline;
  ASSERT_TRUE(s.run(options)) << s.dumps;
  for (const CompiledProgram::BucketInfo &b : s.c.compiled->buckets)
    EXPECT_FALSE(b.partition.has_value());
}

TEST(DriverTest, APinThatMatchesNoWeightIsE0602) {
  Source s(kPair);
  PipelineOptions options = upTo(Phase::Partition);
  options.chips.chips = 2;
  options.chips.pins.push_back(llvm::cantFail(ir::parsePartitionPin("mid*=whole")));
  EXPECT_FALSE(s.run(options));
  EXPECT_EQ(s.codes(), std::vector<std::string>{"E0602"});
}

TEST(DriverTest, PinsParseAndMatchByGlob) {
  auto whole = ir::parsePartitionPin("blocks.1?.*=whole");
  ASSERT_TRUE(bool(whole)) << llvm::toString(whole.takeError());
  EXPECT_EQ(whole->action, ir::PartitionPin::Action::Whole);
  EXPECT_TRUE(ir::pinMatches(*whole, "blocks.12.attn.q.w"));
  EXPECT_FALSE(ir::pinMatches(*whole, "blocks.1.attn.q.w"));
  EXPECT_FALSE(ir::pinMatches(*whole, "blocksX12.w"));
  auto chip = ir::parsePartitionPin("a.b=chip:3");
  ASSERT_TRUE(bool(chip)) << llvm::toString(chip.takeError());
  EXPECT_EQ(chip->action, ir::PartitionPin::Action::Chip);
  EXPECT_EQ(chip->chip, 3u);
  EXPECT_FALSE(chip->tensor());
  EXPECT_TRUE(pinAppliesTo(*chip, ir::PartitionKind::Pipeline));
  EXPECT_FALSE(pinAppliesTo(*chip, ir::PartitionKind::Tensor));
  // The matcher means what LLVM's GlobPattern means, on every pattern and
  // path here...
  const char *globs[] = {"*", "a*", "*b", "a?c", "[ab]*", "[!a]*", "[^a]x", "[]]", "a\\*b", "*.w", "l*.*.w",
                         "*a*b*", "a**b", "?*?", "[a-c][0-9]"};
  const char *paths[] = {"", "a", "ab", "abc", "b", "ba", "]", "a*b", "axb", "l0.up.w", "q.w", "bx", "c7", "aab"};
  for (const char *g : globs) {
    auto pin = ir::parsePartitionPin(std::string(g) + "=whole");
    auto reference = llvm::GlobPattern::create(g);
    if (!pin || !reference) {
      EXPECT_EQ(bool(pin), bool(reference)) << g;
      if (!pin)
        llvm::consumeError(pin.takeError());
      if (!reference)
        llvm::consumeError(reference.takeError());
      continue;
    }
    for (const char *p : paths)
      EXPECT_EQ(ir::pinMatches(*pin, p), reference->match(p)) << g << " on " << p;
  }
  // ... and stays linear where GlobPattern tries every split at every
  // star (these took minutes, or never ended).
  auto stars = ir::parsePartitionPin(std::string(200, '*') + "zz=whole");
  ASSERT_TRUE(bool(stars));
  EXPECT_FALSE(ir::pinMatches(*stars, "blocks.11.attention.query.weight.and.more"));
  std::string alternating;
  for (int i = 0; i < 30; ++i)
    alternating += "*a";
  auto many = ir::parsePartitionPin(alternating + "*b=whole");
  ASSERT_TRUE(bool(many));
  EXPECT_FALSE(ir::pinMatches(*many, std::string(200, 'a')));
  EXPECT_TRUE(ir::pinMatches(*many, std::string(200, 'a') + "b"));
  for (const char *bad : {"w", "=whole", "w=", "w=chip:", "w=chip:x", "w=stages"}) {
    auto pin = ir::parsePartitionPin(bad);
    EXPECT_FALSE(bool(pin)) << bad;
    if (!pin)
      llvm::consumeError(pin.takeError());
  }
}

} // namespace
} // namespace lpu::driver

namespace lpu::driver {
namespace {

using tensor::DType;

constexpr const char *kDecoder = R"(model D<V = 4, P = 8> {
  param emb: f16[V, V]
  state cache: f16[P, V]
  fn prefill<S>(ids: i32[1, S]) -> f32[1, S, V] where S <= P {
    let x = gather(emb, ids[0])
    cache = update(cache, 0, x, axis = 0)
    return reshape(f32(x), [1, S, V])
  }
  fn decode(id: i32[1, 1], pos: i32[]) -> f32[1, 1, V] {
    let x = gather(emb, id[0])
    cache = update(cache, pos, x, axis = 0)
    return reshape(f32(x), [1, 1, V])
  }
}
entry prefill = D.prefill<S in {4}>
entry decode = D.decode
)";

std::vector<backend::Entry> decoderEntries() {
  Source r(kDecoder);
  EXPECT_TRUE(r.run(upTo(Phase::Emit)));
  auto program = backend::readProgramBinary(
      llvm::ArrayRef(reinterpret_cast<const uint8_t *>(r.c.binary.data()), r.c.binary.size()),
      "d.lpx");
  EXPECT_TRUE(bool(program)) << llvm::toString(program.takeError());
  return program ? program->entries : std::vector<backend::Entry>{};
}

// Each call's state goes to the next call and is not kept per call: a run
// of N steps holds one state, not N (the KV cache of every step).
TEST(GenerateTest, EachCallGetsThePreviousStateAndNoneIsKeptPerCall) {
  std::vector<backend::Entry> entries = decoderEntries();
  ASSERT_EQ(entries.size(), 2u);
  GenerateOptions options;
  options.tokens = 6;
  options.prompt = tensor::Tensor(DType::I32, {1, 3});
  int calls = 0;
  std::vector<int64_t> seen; // the cache's element 0 as each call got it
  auto call = [&](const std::string &entry,
                  const std::map<std::string, tensor::Tensor> &inputs) -> llvm::Expected<CallResult> {
    CallResult r;
    auto it = inputs.find("cache");
    seen.push_back(it == inputs.end() ? -1 : int64_t(it->second.getFloat(0)));
    tensor::Tensor cache(DType::F16, {8, 4});
    cache.setFloat(0, float(++calls));
    r.states.emplace_back("cache", std::move(cache));
    tensor::Tensor logits(DType::F32, entry == "prefill" ? std::vector<int64_t>{1, 3, 4}
                                                         : std::vector<int64_t>{1, 1, 4});
    logits.setFloat(logits.numElements() - 1 - calls % 4, 1.0f);
    r.outputs.emplace_back("out", std::move(logits));
    r.cycles = 10;
    r.bucket = "b";
    return r;
  };
  auto result = generate(entries, options, call);
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  EXPECT_EQ(calls, 6);
  // The prefill starts from no state (zeros, given by the call); every
  // decode from the state the call before returned.
  EXPECT_EQ(seen, (std::vector<int64_t>{-1, 1, 2, 3, 4, 5}));
  ASSERT_EQ(result->calls.size(), 6u);
  for (const CallResult &c : result->calls)
    EXPECT_TRUE(c.states.empty());
  ASSERT_EQ(result->states.count("cache"), 1u);
  EXPECT_EQ(result->states.at("cache").getFloat(0), 6.0f);
}

// The last decode call's position is S + N - 2, an i32: a larger N is
// refused before anything runs, with the most that fits.
TEST(GenerateTest, APositionPastI32IsRefusedBeforeAnyCall) {
  std::vector<backend::Entry> entries = decoderEntries();
  ASSERT_EQ(entries.size(), 2u);
  GenerateOptions options;
  options.prompt = tensor::Tensor(DType::I32, {1, 3});
  options.tokens = int64_t(std::numeric_limits<int32_t>::max()) - 1; // last pos 2^31 - 1
  if (llvm::Error ok = checkGenerateContract(entries, options))
    ADD_FAILURE() << llvm::toString(std::move(ok));
  options.tokens += 1;
  llvm::Error e = checkGenerateContract(entries, options);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("at most 2147483646 tokens after this prompt"),
            std::string::npos);
  bool called = false;
  auto call = [&](const std::string &, const std::map<std::string, tensor::Tensor> &)
      -> llvm::Expected<CallResult> {
    called = true;
    return CallResult{};
  };
  auto result = generate(entries, options, call);
  EXPECT_FALSE(bool(result));
  llvm::consumeError(result.takeError());
  EXPECT_FALSE(called);
}

} // namespace
} // namespace lpu::driver
