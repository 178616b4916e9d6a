// lpurun: runs a program file on the simulated LPU, or (--reference) a .lpu
// model in the reference interpreter. A thin driver: flags and files here,
// everything else in sim/Session.h, driver/LoadModel.h and
// interp/InterpreterRun.h.
#include "backend/ChipDescription.h"
#include "backend/ProgramBinary.h"
#include "backend/ProgramText.h"
#include "support/Literal.h"
#include "support/Npy.h"
#include "support/RandomTensor.h"
#include "support/SafeTensors.h"
#include "frontend/Checker.h"
#include "driver/LoadModel.h"
#include "frontend/DiagnosticRender.h"
#include "interp/Calibrate.h"
#include "interp/InterpreterRun.h"
#include "ir/Text.h"
#include "ir/Verifier.h"
#include "sim/Session.h"
#include "sim/ShiftCheck.h"
#include "support/Progress.h"
#include "support/TimeReport.h"
#include "tools/common/ToolSupport.h"
#include "driver/Generate.h"
#ifdef LPU_HAVE_MPI
#include "sim/mpi/MpiRanks.h"
#endif

#include <charconv>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/ScopeExit.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/xxhash.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

using namespace lpu;

namespace {
constexpr llvm::StringLiteral kTool = "lpurun";

/// What lpurun shows besides its results: the progress line (null: none),
/// stderr with the line erased first, the time report (null: none), and
/// whether the informational lines are left out (--quiet).
struct Feedback {
  support::ProgressLine *line = nullptr;
  llvm::raw_ostream *errs = &llvm::errs();
  support::TimeRecorder *times = nullptr;
  bool quiet = false;
  support::Progress progress() const { return support::Progress(line); }
  support::Timing timing() const { return support::Timing(times); }
  /// Erases the line for good (what follows is quick: writing outputs).
  void endProgress() const {
    if (line)
      line->finish();
  }
  /// "lpurun: error: ..." with the line erased first.
  void error(const llvm::Twine &message) const {
    if (line)
      line->printAbove([&] { tools::reportToolError(kTool, message); });
    else
      tools::reportToolError(kTool, message);
  }
};

bool writeFile(llvm::StringRef path, llvm::StringRef data, const Feedback &feedback) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec) {
    os << data;
    os.close();
    ec = os.error();
  }
  if (ec) {
    feedback.error("cannot write '" + path + "': " + ec.message());
    return false;
  }
  return true;
}

/// Prints a tensor file's or literal's error and returns the exit code: a
/// missing or directory file is a usage error (2), a bad literal or file
/// contents an input error (1).
int tensorError(llvm::Error error, const Feedback &feedback) {
  std::error_code code;
  llvm::handleAllErrors(std::move(error), [&](const llvm::ErrorInfoBase &e) {
    code = e.convertToErrorCode();
    feedback.error(e.message());
  });
  return code == std::errc::no_such_file_or_directory ? tools::kExitUsageError : tools::kExitInputError;
}

/// --input, --output and --weights as given: literals and .npy files read,
/// the weights file checked for readability. Returns -1 when all is well,
/// else the exit code (the error is printed).
int collectTensorArgs(const std::vector<std::string> &inputs,
                      const std::vector<std::string> &outputs,
                      const std::vector<std::string> &weights,
                      std::map<std::string, tensor::Tensor> &inputValues,
                      std::map<std::string, std::string> &outputFiles, bool &printAll,
                      const Feedback &feedback) {
  for (const std::string &arg : inputs) {
    auto named = tensor::parseInputArgument(arg);
    if (!named) {
      // Not NAME=... at all is a malformed flag value; a value that
      // does not read is the tensor's error.
      const llvm::StringRef given(arg);
      if (!given.contains('=') || given.startswith("=")) {
        feedback.error(llvm::toString(named.takeError()));
        return tools::kExitUsageError;
      }
      return tensorError(named.takeError(), feedback);
    }
    if (inputValues.count(named->name)) {
      feedback.error("input '" + named->name + "' given twice");
      return tools::kExitUsageError;
    }
    inputValues.emplace(named->name, std::move(named->tensor));
  }
  for (const std::string &file : weights) {
    auto check = tools::readInputFile(file); // the usual missing/directory messages
    if (!check) {
      feedback.error(llvm::toString(check.takeError()));
      return tools::kExitUsageError;
    }
  }
  printAll = outputs.empty();
  for (const std::string &o : outputs) {
    if (o == "-") {
      printAll = true;
      continue;
    }
    auto [name, path] = llvm::StringRef(o).split('=');
    if (name.empty() || path.empty()) {
      feedback.error("--output takes NAME=FILE.npy or '-', found '" + o + "'");
      return tools::kExitUsageError;
    }
    if (!outputFiles.emplace(name.str(), path.str()).second) {
      feedback.error("--output '" + name.str() + "' given twice");
      return tools::kExitUsageError;
    }
  }
  return -1;
}

/// --dump-state: the states as a .safetensors file, by name.
bool writeStates(const std::string &path, const std::map<std::string, tensor::Tensor> &states,
                 const Feedback &feedback) {
  std::vector<tensor::NamedTensor> list(states.begin(), states.end());
  if (auto e = tensor::writeSafeTensorsFile(path, list)) {
    feedback.error(llvm::toString(std::move(e)));
    return false;
  }
  return true;
}

/// The state after one call: what the call wrote, else the value it
/// started from (given, or zeros), for every state of `entries`.
llvm::Expected<std::map<std::string, tensor::Tensor>>
finalStates(llvm::ArrayRef<backend::Entry> entries,
            llvm::ArrayRef<tensor::NamedTensor> written,
            const std::map<std::string, tensor::Tensor> &given) {
  std::map<std::string, tensor::Tensor> states;
  for (const tensor::TensorSpec &s : backend::stateSpecs(entries)) {
    auto w = llvm::find_if(written, [&](const tensor::NamedTensor &n) { return n.first == s.name; });
    if (w != written.end()) {
      states.emplace(s.name, w->second);
    } else if (given.count(s.name)) {
      states.emplace(s.name, given.at(s.name));
    } else {
      auto zeros = tensor::Tensor::create(s.dtype, s.shape);
      if (!zeros)
        return zeros.takeError();
      states.emplace(s.name, std::move(*zeros));
    }
  }
  return states;
}

/// Writes the outputs --output names (a state's too) and prints the
/// others but the states when asked to print. Returns -1 when all is
/// well, else the exit code.
int emitOutputs(llvm::ArrayRef<tensor::NamedTensor> outputs, llvm::ArrayRef<tensor::NamedTensor> states,
                const std::map<std::string, std::string> &outputFiles, bool printAll,
                bool checkNames, const std::string &where, const Feedback &feedback) {
  auto has = [](llvm::ArrayRef<tensor::NamedTensor> list, const std::string &name) {
    return llvm::any_of(list, [&](const tensor::NamedTensor &n) { return n.first == name; });
  };
  if (checkNames)
    for (const auto &[name, path] : outputFiles)
      if (!has(outputs, name) && !has(states, name)) {
        std::string known;
        for (const auto &list : {outputs, states})
          for (const tensor::NamedTensor &n : list)
            known += (known.empty() ? "" : ", ") + ("'" + n.first + "'");
        feedback.error("no output '" + name + "' in " + where + "; the outputs are " + known);
        return tools::kExitUsageError;
      }
  // A state is printed only when named: it is the model's memory, not a
  // result.
  for (bool state : {false, true})
    for (const auto &[name, value] : state ? states : outputs) {
      auto it = outputFiles.find(name);
      if (it != outputFiles.end()) {
        if (auto e = tensor::writeNpyFile(it->second, value)) {
          feedback.error(llvm::toString(std::move(e)));
          return tools::kExitUsageError;
        }
      } else if (printAll && !state) {
        llvm::outs() << name << ": " << tensor::formatIree(value) << "\n";
      }
    }
  return -1;
}

/// --generate's arguments, as given.
struct GenerateArgs {
  std::optional<int64_t> tokens; // set: --generate
  std::string prompt, prefillEntry = "prefill", decodeEntry = "decode", dumpState;
};

/// The options of the loop: the prompt read, the --input values as the
/// states' first values. Returns -1 when all is well, else the exit code.
int prepareGenerate(const GenerateArgs &args, const std::map<std::string, tensor::Tensor> &inputs,
                    bool timingOnly, driver::GenerateOptions &options, const Feedback &feedback) {
  options.tokens = *args.tokens;
  options.prefillEntry = args.prefillEntry;
  options.decodeEntry = args.decodeEntry;
  options.initialStates = inputs;
  options.timingOnly = timingOnly;
  auto prompt = tensor::readNpyFile(args.prompt);
  if (!prompt)
    return tensorError(prompt.takeError(), feedback);
  options.prompt = std::move(*prompt);
  return -1;
}

/// Prints the loop's report and writes --dump-state.
int finishGenerate(const driver::GenerateResult &result, double clockMHz, const GenerateArgs &args,
                   const Feedback &feedback) {
  llvm::outs() << driver::formatGenerateReport(result, clockMHz);
  if (!args.dumpState.empty() && !writeStates(args.dumpState, result.states, feedback))
    return tools::kExitUsageError;
  return tools::kExitSuccess;
}

/// The module of `path`: a .lpu source compiled (diagnostics on stderr), or
/// IR text (.ir) parsed and verified.
llvm::Expected<std::unique_ptr<ir::Module>> loadModule(const std::string &path, const char *argv0,
                                                      driver::LoadModelOptions options,
                                                      llvm::raw_ostream &diagnostics) {
  std::string exe = llvm::sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&loadModule));
  options.importPaths = defaultStdlibPaths(llvm::sys::path::parent_path(exe));
  options.importPaths.push_back(LPU_SOURCE_STDLIB_DIR);
  options.color = shouldUseColor(ColorMode::Auto, llvm::errs());
  return driver::loadModel(path, options, diagnostics);
}


struct ReferenceArgs {
  std::string model, entry, dumpWeights;
  std::vector<std::string> weights;
  /// --calibrate: the sample files, the observer and where the scales go.
  std::vector<std::string> calibrate;
  interp::Observer observer;
  std::string dumpScales;
  std::optional<uint64_t> seed;
  unsigned threads = 0;
  std::map<std::string, tensor::Tensor> inputs;
  std::map<std::string, std::string> outputFiles;
  bool printAll = false;
  std::string dumpState;
  GenerateArgs generate;
};

/// The samples of --calibrate: each argument FILE.npy or NAME=FILE.npy (the
/// name may be left out when the entry has one input); a file of the
/// input's rank is one sample, one of a rank more is a stack of samples
/// along its first axis. Every input gets the same number of samples.
llvm::Expected<std::vector<std::map<std::string, tensor::Tensor>>>
readSamples(const std::vector<std::string> &argsGiven, const std::vector<const ir::Function *> &fns) {
  auto fail = [](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), m);
  };
  const ir::Function &fn = *fns.front();
  std::map<std::string, std::vector<tensor::Tensor>> byInput;
  for (const std::string &arg : argsGiven) {
    auto [name, file] = llvm::StringRef(arg).split('=');
    std::string input;
    if (file.empty()) {
      file = name;
      if (fn.inputs().size() != 1)
        return fail("--calibrate " + arg + ": the entry has " + llvm::Twine(fn.inputs().size()) +
                    " inputs; name the one this file holds (NAME=FILE.npy)");
      input = fn.inputs()[0]->stringAttr("name").value_or("");
    } else {
      input = name.str();
    }
    const ir::Op *op = nullptr;
    for (const ir::Op *in : fn.inputs())
      if (in->stringAttr("name").value_or("") == input)
        op = in;
    if (!op)
      return fail("--calibrate " + arg + ": the entry has no input '" + input + "'");
    auto data = tensor::readNpyFile(file);
    if (!data)
      return data.takeError();
    size_t rank = op->type().rank();
    if (data->dtype() != op->type().dtype)
      return fail(file + ": holds " + ir::Type{data->dtype(), data->shape().vec()}.str() + ", but input '" + input + "' is " +
                  tensor::dtypeName(op->type().dtype).str());
    auto &list = byInput[input];
    if (data->rank() == rank) {
      list.push_back(std::move(*data));
    } else if (data->rank() == rank + 1) {
      std::vector<int64_t> shape(data->shape().begin() + 1, data->shape().end());
      for (int64_t k = 0; k < data->shape()[0]; ++k) {
        auto slice = tensor::sliceAxis(*data, 0, k, 1);
        if (!slice)
          return slice.takeError();
        auto sample = tensor::Tensor::fromBytes(data->dtype(), shape, slice->bytes());
        if (!sample)
          return sample.takeError();
        list.push_back(std::move(*sample));
      }
    } else {
      return fail(file + ": holds " + ir::Type{data->dtype(), data->shape().vec()}.str() + "; input '" + input + "' has rank " +
                  llvm::Twine(rank) + ", so a file holds one sample (rank " + llvm::Twine(rank) +
                  ") or a stack of them (rank " + llvm::Twine(rank + 1) + ")");
    }
  }
  std::vector<std::map<std::string, tensor::Tensor>> samples;
  size_t count = byInput.empty() ? 0 : byInput.begin()->second.size();
  for (const ir::Op *in : fn.inputs()) {
    std::string name = in->stringAttr("name").value_or("");
    auto it = byInput.find(name);
    if (it == byInput.end())
      return fail("--calibrate gives no samples of input '" + name + "'");
    if (it->second.size() != count)
      return fail("--calibrate gives " + llvm::Twine(it->second.size()) + " sample(s) of '" +
                  name + "' but " + llvm::Twine(count) + " of '" + byInput.begin()->first + "'");
  }
  if (count == 0)
    return fail("--calibrate: the files hold no samples");
  samples.resize(count);
  for (auto &[name, list] : byInput)
    for (size_t k = 0; k < count; ++k)
      samples[k].emplace(name, std::move(list[k]));
  return samples;
}

/// lpurun --reference --calibrate: observe, print the scales as a table
/// (stdout) and write them (--dump-scales).
int calibrateReference(const ir::Module &module, const ReferenceArgs &args,
                       const interp::WeightSource &source, const interp::InterpreterOptions &running,
                       const Feedback &feedback) {
  auto functions = interp::entryFunctions(module, args.entry);
  if (!functions) {
    feedback.error(llvm::toString(functions.takeError()));
    return tools::kExitUsageError;
  }
  auto samples = readSamples(args.calibrate, *functions);
  if (!samples) {
    feedback.error(llvm::toString(samples.takeError()));
    return tools::kExitInputError;
  }
  auto calibration =
      interp::calibrateEntry(module, args.entry, *samples, source, args.observer, running);
  feedback.endProgress();
  if (!calibration) {
    feedback.error(llvm::toString(calibration.takeError()));
    return tools::kExitInputError;
  }
  if (!args.dumpScales.empty())
    if (auto e = tensor::writeSafeTensorsFile(args.dumpScales, calibration->tensors())) {
      feedback.error(llvm::toString(std::move(e)));
      return tools::kExitUsageError;
    }
  if (!feedback.quiet)
    *feedback.errs << "calibrate: entry " << calibration->function->name() << ", bucket "
                   << calibration->bucketText << ", " << calibration->samples << " sample(s), "
                   << calibration->scales.size() << " scale(s) in " << calibration->rounds
                   << " round(s)\n";
  // One line per channel range: path, observed range, scale, zero point.
  llvm::outs() << "# scale  [channel]  observed-low  observed-high  scale  zero-point\n";
  for (const interp::CalibratedScale &c : calibration->scales)
    for (size_t ch = 0; ch < c.lo.size(); ++ch) {
      llvm::outs() << c.scale;
      if (c.axis)
        llvm::outs() << " [" << ch << "]";
      llvm::outs() << llvm::format("  %.6g  %.6g  %.9g  ", c.lo[ch], c.hi[ch],
                                   double(c.scaleValue.getFloat(int64_t(ch))))
                   << (c.zero.empty() ? c.fixedZero : c.zeroValue.getInt(int64_t(ch))) << "\n";
    }
  return tools::kExitSuccess;
}

/// lpurun --reference: compile, load weights, run the entry's best bucket,
/// write or print the outputs; the bucket and padding go to stderr.
int runReference(const ReferenceArgs &args, const char *argv0, const Feedback &feedback) {
  // Missing, a directory; standard input ("-") is read once, by the compile.
  if (args.model != "-")
    if (auto readable = tools::readInputFile(args.model); !readable) {
      feedback.error(llvm::toString(readable.takeError()));
      return tools::kExitUsageError;
    }
  driver::LoadModelOptions compiling;
  feedback.progress().status("compile");
  support::TimedScope compileTime(feedback.timing(), "compile");
  compiling.progress = feedback.progress().inner();
  compiling.timing = compileTime.timing();
  auto module = loadModule(args.model, argv0, compiling, *feedback.errs);
  compileTime.stop();
  if (!module) {
    feedback.error(llvm::toString(module.takeError()));
    return tools::kExitInputError;
  }
  interp::WeightSource source{args.weights, args.seed.value_or(0)};
  interp::InterpreterOptions running;
  running.threads = args.threads;
  running.progress = feedback.progress();
  running.timing = feedback.timing();
  if (!args.calibrate.empty())
    return calibrateReference(**module, args, source, running, feedback);
  // Every entry of the module, described as a program's (for states).
  std::vector<backend::Entry> entries;
  for (const auto &fn : (*module)->functions) {
    if (llvm::any_of(entries, [&](const backend::Entry &e) { return e.name == fn->name(); }))
      continue;
    auto fns = interp::entryFunctions(**module, fn->name());
    if (!fns) {
      feedback.error(llvm::toString(fns.takeError()));
      return tools::kExitInputError;
    }
    entries.push_back(interp::describeEntry(*fns));
  }
  if (args.generate.tokens) {
    driver::GenerateOptions options;
    if (int rc = prepareGenerate(args.generate, args.inputs, false, options, feedback); rc >= 0)
      return rc;
    interp::InterpreterOptions quiet = running;
    quiet.progress = {};
    quiet.timing = {};
    // The weights of both entries, read once (a missing entry is the
    // contract's error, below).
    std::vector<const ir::Function *> fns;
    for (const std::string &name : {options.prefillEntry, options.decodeEntry})
      if (auto found = interp::entryFunctions(**module, name))
        fns.insert(fns.end(), found->begin(), found->end());
      else
        llvm::consumeError(found.takeError());
    std::map<std::string, tensor::Tensor> loaded;
    auto specs = interp::paramSpecs(fns);
    if (!specs) {
      feedback.error(llvm::toString(specs.takeError()));
      return tools::kExitInputError;
    }
    if (auto weights = interp::loadWeights(source, *specs)) {
      loaded = std::move(*weights);
    } else {
      feedback.error(llvm::toString(weights.takeError()));
      return tools::kExitInputError;
    }
    source.loaded = &loaded;
    auto call = [&](const std::string &entry, const std::map<std::string, tensor::Tensor> &inputs)
        -> llvm::Expected<driver::CallResult> {
      feedback.progress().status("run " + entry);
      auto start = std::chrono::steady_clock::now();
      auto r = interp::runEntry(**module, entry, inputs, source, quiet);
      if (!r)
        return r.takeError();
      driver::CallResult c;
      c.outputs = std::move(r->outputs);
      c.states = std::move(r->states);
      c.bucket = r->bucketText;
      c.hostSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return c;
    };
    support::TimedScope looping(feedback.timing(), "generate");
    auto result = driver::generate(entries, options, call);
    looping.stop();
    feedback.endProgress();
    if (!result) {
      feedback.error(llvm::toString(result.takeError()));
      return tools::kExitInputError;
    }
    return finishGenerate(*result, 0, args.generate, feedback);
  }
  auto run = interp::runEntry(**module, args.entry, args.inputs, source, running);
  feedback.endProgress();
  if (!run) {
    feedback.error(llvm::toString(run.takeError()));
    return tools::kExitInputError;
  }
  support::TimedScope writing(feedback.timing(), "write outputs");
  if (!args.dumpWeights.empty()) {
    std::vector<tensor::NamedTensor> used(run->weights.begin(), run->weights.end());
    if (auto e = tensor::writeSafeTensorsFile(args.dumpWeights, used)) {
      feedback.error(llvm::toString(std::move(e)));
      return tools::kExitUsageError;
    }
  }
  if (!feedback.quiet)
    *feedback.errs << "reference: entry " << run->function->name() << ", bucket "
                   << run->bucketText << ", padding "
                   << llvm::format("%.1f", run->paddingFraction * 100) << "%\n"
                   << "reference: weights bound in " << llvm::format("%.3f", run->prepareSeconds)
                   << " s, run " << llvm::format("%.3f", run->runSeconds) << " s (cpu "
                   << llvm::format("%.3f", run->runCpuSeconds) << " s)\n";
  if (int rc = emitOutputs(run->outputs, run->states, args.outputFiles, args.printAll, true,
                           "entry '" + run->function->name() + "'", feedback);
      rc >= 0)
    return rc;
  if (!args.dumpState.empty()) {
    auto states = finalStates(entries, run->states, args.inputs);
    if (!states) {
      feedback.error(llvm::toString(states.takeError()));
      return tools::kExitInputError;
    }
    if (!writeStates(args.dumpState, *states, feedback))
      return tools::kExitUsageError;
  }
  return tools::kExitSuccess;
}
} // namespace

int runLpurun(int argc, char **argv, sim::Ranks *ranks) {
  CLI::App app{"Runs an lpuc program file (binary .lpx or its text form) on the simulated LPU."};
  std::string programPath, entry, report, tracePath, chipName, emit, emitPath = "-";
  std::vector<std::string> inputs, outputs, weights, calibrate;
  std::optional<uint64_t> seed;
  unsigned threads = 1;
  bool timingOnly = false, reference = false, checkShifts = false;
  std::string dumpWeights;
  size_t shiftSample = 0;
  unsigned shiftBucket = 0;
  uint64_t shiftInputSeed = 1;
  // Not ->required(): CLI11 would then report a missing program before an
  // unknown flag, which hides the real mistake; checked after parsing.
  app.add_option("program", programPath,
                 "program file (.lpx, or the text form); with --reference a .lpu model (or .ir)");
  app.add_flag("--reference", reference,
               "compile the .lpu model and run it in the reference interpreter");
  app.add_option("--dump-weights", dumpWeights,
                 "with --reference: write the weights used to a .safetensors file");
  app.add_option("--entry", entry, "entry to run (needed when the program has several)");
  // One value an occurrence, so that the program file may follow.
  app.add_option("--input", inputs, "NAME=FILE.npy or NAME=2x3xf32=1,2,... (repeatable)")
      ->allow_extra_args(false);
  auto *w = app.add_option("--weights", weights,
                           "parameters from a .safetensors file (repeatable: several files "
                           "that together hold each parameter once)")
                ->allow_extra_args(false);
  std::string observer = "minmax", dumpScales;
  double percentile = 99.99;
  app.add_option("--calibrate", calibrate,
                             "with --reference: observe the inputs of quantize() in FILE.npy "
                             "or NAME=FILE.npy (a sample, or a stack of samples on a new first "
                             "axis; repeatable) and compute the scales (docs/quantization.md)")
                  ->allow_extra_args(false);
  app.add_option("--observer", observer, "with --calibrate: minmax (default) or percentile")
      ->check(CLI::IsMember({"minmax", "percentile"}));
  app.add_option("--percentile", percentile,
                 "with --observer=percentile: the percentile of the high end (default 99.99; "
                 "the low end takes 100 minus it)")
      ->check(CLI::Range(50.0, 100.0));
  app.add_option("--dump-scales", dumpScales,
                 "with --calibrate: write the computed scales and zero points to a "
                 ".safetensors file");
  auto *r = app.add_option("--random-weights", seed, "deterministic random parameters from SEED")
                ->check(CLI::Validator(
                    [](std::string &text) -> std::string {
                      // CLI11 would take -1 as 2^64 - 1 and saturate past it.
                      uint64_t value = 0;
                      const char *end = text.data() + text.size();
                      auto [ptr, ec] = std::from_chars(text.data(), end, value);
                      if (text.empty() || ec != std::errc() || ptr != end)
                        return "SEED must be an integer from 0 to 18446744073709551615, not '" +
                               text + "'";
                      return "";
                    },
                    "SEED"));
  w->excludes(r);
  app.add_option("--output", outputs,
                 "NAME=FILE.npy writes an output; '-' prints all outputs (the default)")
      ->allow_extra_args(false);
  app.add_option("--report", report, "print a report: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--trace", tracePath, "write a Chrome/Perfetto trace (JSON) to FILE");
  app.add_option("--threads", threads,
                 "host threads (results do not depend on it; with --reference the default is "
                 "one per core)")
      ->check(CLI::Range(1u, 256u));
  app.add_flag("--timing-only", timingOnly, "compute cycles only, without data");
  GenerateArgs generate;
  std::string dumpState;
  app.add_option("--dump-state", dumpState,
                 "write the state (the model's `state` members) after the run to a "
                 ".safetensors file");
  app.add_option("--generate", generate.tokens,
                 "generate N tokens greedily: entry prefill on --prompt once, then N - 1 calls "
                 "of entry decode, the state carried between calls (docs/generation.md)");
  app.add_option("--prompt", generate.prompt, "with --generate: the prompt's ids, i32[1, S] (.npy)");
  app.add_option("--prefill-entry", generate.prefillEntry,
                 "with --generate: the entry run on the prompt (default prefill)");
  app.add_option("--decode-entry", generate.decodeEntry,
                 "with --generate: the entry run for each next token (default decode)");
  app.add_option("--chip", chipName, "chip description NAME or FILE (default: the program's)");
  app.add_option("--emit", emit, "convert the program instead of running it: text or binary")
      ->check(CLI::IsMember({"text", "binary"}));
  app.add_option("-o", emitPath, "where --emit writes (default: stdout)");
  std::optional<uint32_t> formatVersion;
  app.add_option("--format-version", formatVersion,
                 "with --emit=binary: write this older format version, for older lpuruns "
                 "(default: the newest)")
      ->check(CLI::Range(backend::kOldestProgramFormatVersion, backend::kProgramFormatVersion));
  app.add_flag("--check-shifts", checkShifts,
               "a mutation test of the simulator's checks: move each instruction one cycle "
               "either way and require a violation or the same output bits (sim/ShiftCheck.h)");
  app.add_option("--shift-sample", shiftSample,
                 "with --check-shifts: shift only this many instructions, spread evenly "
                 "(default: all)");
  app.add_option("--shift-bucket", shiftBucket,
                 "with --check-shifts: the bucket whose shapes random inputs take (default 0)");
  app.add_option("--shift-input-seed", shiftInputSeed,
                 "with --check-shifts: the seed of inputs not given with --input (default 1)");
  bool showProgress = false, quiet = false, timePhases = false;
  double progressInterval = 0.25;
  CLI::Option *progressFlag =
      app.add_flag("--progress", showProgress,
                   "show the cycles simulated so far and their rate (with --reference: the step "
                   "and the ops run) on one line of stderr, also when it is not a terminal (by "
                   "default only on a terminal)");
  app.add_flag("-q,--quiet", quiet,
               "show no progress, and with --reference not the bucket and times either "
               "(errors and diagnostics still print)")
      ->excludes(progressFlag);
  app.add_option("--progress-interval", progressInterval,
                 "seconds between redraws of the progress line (0: every change; tests)")
      ->group("")
      ->check(CLI::Range(0.0, 60.0));
  app.add_flag("--time-phases", timePhases,
               "print to stderr a table of the wall and CPU time of each step: reading the "
               "program, binding weights, simulating, reading and writing outputs (with "
               "--reference: compiling, by phase, binding weights, running)");
  std::vector<unsigned> rankChips;
  double rankTimeout = 300;
  app.add_option("--rank-chips", rankChips,
                 "under mpirun: the chips each rank simulates, N0,N1,... in rank order (contiguous; "
                 "default: as even as can be)")
      ->delimiter(',');
  app.add_option("--rank-timeout", rankTimeout,
                 "under mpirun: the seconds a rank waits for the others at one exchange before the "
                 "run ends with an error (default 300)")
      ->check(CLI::Range(0.1, 86400.0));
  tools::addCommonOptions(app, kTool);
  if (int rc = tools::parseCommandLine(app, argc, argv, kTool); rc >= 0)
    return rc;
  // Progress on stderr, and the time report printed last, whatever way
  // main returns.
  std::optional<support::ProgressLine> line;
  if (support::ProgressLine::wanted(showProgress, quiet)) {
    support::ProgressLine::Options o = support::ProgressLine::forStderr(kTool);
    o.interval = progressInterval;
    line.emplace(llvm::errs(), o);
  }
  support::ProgressClearingStream errs(llvm::errs(), line ? &*line : nullptr);
  support::TimeRecorder times;
  Feedback feedback{line ? &*line : nullptr, &errs, timePhases ? &times : nullptr, quiet};
  auto printTimes = llvm::make_scope_exit([&] {
    feedback.endProgress();
    if (timePhases)
      times.print(llvm::errs(), "lpurun: time per phase");
  });
  const bool severalRanks = ranks && ranks->size() > 1;
  if (severalRanks) {
    // Every rank runs the same command line (each its own chips of it).
    std::string line;
    for (int i = 1; i < argc; ++i)
      line += std::string(argv[i]) + '\0';
    if (auto e = sim::sameOnEveryRank(ranks, "command line", llvm::utohexstr(llvm::xxHash64(line)))) {
      feedback.error(llvm::toString(std::move(e)));
      return tools::kExitUsageError;
    }
    ranks->counts = rankChips;
    // Until the program file is read, every check looks at the command line
    // alone, the same on every rank: an error there ends every rank alike.
    ranks->settled = true;
#ifdef LPU_HAVE_MPI
    static_cast<sim::mpi::MpiRanks *>(ranks)->setTimeout(rankTimeout);
#endif
    for (const char *flag : {"--generate", "--check-shifts", "--reference", "--emit", "--calibrate"})
      if (app.count(flag)) {
        feedback.error(llvm::Twine(flag) + " runs in one process: not under mpirun with " +
                       llvm::Twine(ranks->size()) + " ranks");
        return tools::kExitUsageError;
      }
  } else {
    for (const char *flag : {"--rank-chips", "--rank-timeout"})
      if (app.count(flag)) {
        feedback.error(llvm::Twine(flag) + " needs several ranks (mpirun -np R lpurun ...)");
        return tools::kExitUsageError;
      }
  }
  if (programPath.empty()) {
    feedback.error("no program file");
    llvm::errs() << "Run '" << kTool << " --help' for the options.\n";
    return tools::kExitUsageError;
  }

  if (generate.tokens) {
    if (*generate.tokens < 1) {
      feedback.error("--generate " + llvm::Twine(*generate.tokens) +
                     ": the number of tokens to generate is at least 1");
      return tools::kExitUsageError;
    }
    if (generate.prompt.empty()) {
      feedback.error("--generate needs --prompt FILE.npy (the prompt's ids, i32[1, S])");
      return tools::kExitUsageError;
    }
    for (const char *flag : {"--entry", "--output", "--report", "--trace", "--check-shifts",
                             "--emit", "--calibrate", "--dump-weights"})
      if (app.count(flag)) {
        feedback.error(llvm::Twine(flag) + " does not apply to --generate");
        return tools::kExitUsageError;
      }
    if (!dumpState.empty())
      generate.dumpState = dumpState;
    if (timingOnly && !dumpState.empty()) {
      feedback.error("--dump-state needs data: not with --timing-only");
      return tools::kExitUsageError;
    }
  } else {
    for (const char *flag : {"--prompt", "--prefill-entry", "--decode-entry"})
      if (app.count(flag)) {
        feedback.error(llvm::Twine(flag) + " needs --generate");
        return tools::kExitUsageError;
      }
  }
  if (reference) {
    for (const char *flag : {"--report", "--trace", "--timing-only", "--chip", "--emit", "-o",
                             "--format-version",
                             "--check-shifts", "--shift-sample", "--shift-bucket",
                             "--shift-input-seed"})
      if (app.count(flag)) {
        feedback.error(llvm::Twine(flag) + " does not apply to --reference");
        return tools::kExitUsageError;
      }
    ReferenceArgs args;
    args.model = programPath;
    args.entry = entry;
    args.weights = weights;
    args.seed = seed;
    args.dumpWeights = dumpWeights;
    args.calibrate = calibrate;
    args.observer.kind = observer == "percentile" ? interp::Observer::Kind::Percentile
                                                  : interp::Observer::Kind::MinMax;
    args.observer.percentile = percentile;
    args.dumpScales = dumpScales;
    for (const char *flag : {"--observer", "--percentile", "--dump-scales"})
      if (app.count(flag) && calibrate.empty()) {
        feedback.error(llvm::Twine(flag) + " needs --calibrate");
        return tools::kExitUsageError;
      }
    if (app.count("--percentile") && observer != "percentile") {
      feedback.error("--percentile needs --observer=percentile");
      return tools::kExitUsageError;
    }
    if (!calibrate.empty())
      for (const char *flag : {"--input", "--output", "--dump-weights"})
        if (app.count(flag)) {
          feedback.error(llvm::Twine(flag) + " does not apply to --calibrate (the samples are "
                                             "its inputs, the scales its output)");
          return tools::kExitUsageError;
        }
    args.threads = app.count("--threads") ? threads : 0;
    args.dumpState = dumpState;
    args.generate = generate;
    if (!dumpState.empty() && !calibrate.empty()) {
      feedback.error("--dump-state does not apply to --calibrate");
      return tools::kExitUsageError;
    }
    if (int rc = collectTensorArgs(inputs, outputs, weights, args.inputs, args.outputFiles,
                                   args.printAll, feedback);
        rc >= 0)
      return rc;
    return runReference(args, argv[0], feedback);
  }
  if (!dumpWeights.empty()) {
    feedback.error("--dump-weights needs --reference");
    return tools::kExitUsageError;
  }
  for (const char *flag : {"--calibrate", "--observer", "--percentile", "--dump-scales"})
    if (app.count(flag)) {
      feedback.error(llvm::Twine(flag) + " needs --reference");
      return tools::kExitUsageError;
    }

  if (severalRanks)
    ranks->settled = false;
  feedback.progress().status("read program");
  support::TimedScope readingProgram(feedback.timing(), "read program");
  auto buffer = tools::readInputFile(programPath);
  if (!buffer) {
    feedback.error(llvm::toString(buffer.takeError()));
    return tools::kExitUsageError;
  }
  llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
                                (*buffer)->getBufferSize());
  // Every rank runs the same program file, or none runs.
  if (auto e = sim::sameOnEveryRank(ranks, "program file",
                                    llvm::utohexstr(llvm::xxHash64(llvm::StringRef(
                                        (*buffer)->getBufferStart(), (*buffer)->getBufferSize()))))) {
    feedback.error(llvm::toString(std::move(e)));
    return tools::kExitInputError;
  }
  auto program = backend::parseProgramFile(bytes, programPath);
  if (!program) {
    feedback.error(llvm::toString(program.takeError()));
    return tools::kExitInputError;
  }
  // The text form may leave out the fingerprint ("target groqchip1"): it
  // then means the named chip as shipped.
  if (program->chipFingerprint == 0) {
    auto named = backend::loadChipDescription(program->chipName);
    if (!named) {
      feedback.error(llvm::toString(named.takeError()));
      return tools::kExitInputError;
    }
    program->chipFingerprint = named->fingerprint();
  }
  if (formatVersion && emit != "binary") {
    feedback.error("--format-version needs --emit=binary");
    return tools::kExitUsageError;
  }
  if (!emit.empty()) {
    std::string out;
    if (emit == "text") {
      out = backend::printProgramText(*program);
    } else if (!formatVersion) {
      out = backend::writeProgramBinary(*program);
    } else {
      auto older = backend::writeProgramBinary(*program, *formatVersion);
      if (!older) {
        feedback.error(programPath + ": " + llvm::toString(older.takeError()));
        return tools::kExitInputError;
      }
      out = std::move(*older);
    }
    if (emitPath == "-") {
      llvm::outs() << out;
      return tools::kExitSuccess;
    }
    return writeFile(emitPath, out, feedback) ? tools::kExitSuccess : tools::kExitUsageError;
  }
  auto chip = backend::loadChipDescription(chipName.empty() ? program->chipName : chipName);
  if (!chip) {
    feedback.error(llvm::toString(chip.takeError()));
    return tools::kExitUsageError;
  }
  if (auto e = backend::verifyProgram(*program, *chip)) {
    feedback.error(programPath + ": " + llvm::toString(std::move(e)));
    return tools::kExitInputError;
  }
  readingProgram.stop();

  for (const char *flag : {"--shift-sample", "--shift-bucket", "--shift-input-seed"})
    if (app.count(flag) && !checkShifts) {
      feedback.error(llvm::Twine(flag) + " needs --check-shifts");
      return tools::kExitUsageError;
    }
  if (checkShifts)
    for (const char *flag : {"--report", "--trace", "--timing-only", "--output", "--dump-state"})
      if (app.count(flag)) {
        feedback.error(llvm::Twine(flag) + " does not apply to --check-shifts");
        return tools::kExitUsageError;
      }

  sim::SessionOptions options;
  options.entry = entry;
  options.weightsFiles = weights;
  options.randomSeed = seed;
  options.run.threads = threads;
  options.run.timingOnly = timingOnly;
  options.run.trace = !tracePath.empty();
  options.run.progress = feedback.progress();
  options.run.ranks = severalRanks ? ranks : nullptr;
  options.timing = feedback.timing();
  std::map<std::string, std::string> outputFiles;
  bool printAll = false;
  if (int rc = collectTensorArgs(inputs, outputs, weights, options.inputs, outputFiles, printAll, feedback);
      rc >= 0)
    return rc;

  if (timingOnly && !dumpState.empty()) {
    feedback.error("--dump-state needs data: not with --timing-only");
    return tools::kExitUsageError;
  }
  if (generate.tokens) {
    driver::GenerateOptions genOptions;
    if (int rc = prepareGenerate(generate, options.inputs, timingOnly, genOptions, feedback); rc >= 0)
      return rc;
    if (auto e = driver::checkGenerateContract(program->entries, genOptions)) {
      feedback.error(llvm::toString(std::move(e)));
      return tools::kExitInputError;
    }
    // The weights are read once, for both entries.
    std::map<std::string, tensor::Tensor> params;
    if (!timingOnly) {
      std::vector<tensor::TensorSpec> specs;
      for (const backend::Entry &e : program->entries) {
        if (e.name != genOptions.prefillEntry && e.name != genOptions.decodeEntry)
          continue;
        for (const backend::Bucket &b : e.buckets)
          for (const backend::TensorPlacement &t : b.tensors)
            if (t.role == backend::TensorRole::Param &&
                llvm::none_of(specs, [&](const tensor::TensorSpec &s) { return s.name == t.name; }))
              specs.push_back({t.name, t.dtype, b.fullShape(t)});
      }
      if (!weights.empty()) {
        auto loaded = tensor::loadTensorFiles(weights, specs);
        if (!loaded) {
          feedback.error(llvm::toString(loaded.takeError()));
          return tools::kExitInputError;
        }
        params = std::move(*loaded);
      } else if (seed) {
        params = tensor::randomTensors(*seed, specs);
      } else if (!specs.empty()) {
        feedback.error("the program has parameters: give --weights FILE.safetensors or "
                       "--random-weights SEED");
        return tools::kExitUsageError;
      }
    }
    auto call = [&](const std::string &entryName,
                    const std::map<std::string, tensor::Tensor> &callInputs)
        -> llvm::Expected<driver::CallResult> {
      sim::SessionOptions o = options;
      o.entry = entryName;
      o.inputs = callInputs;
      o.params = &params;
      o.run.progress = {};
      o.timing = {};
      feedback.progress().status("simulate " + entryName);
      auto start = std::chrono::steady_clock::now();
      auto r = sim::runSession(*program, *chip, o);
      if (!r)
        return r.takeError();
      driver::CallResult c;
      c.outputs = std::move(r->outputs);
      c.states = std::move(r->states);
      c.cycles = r->report.cycles;
      c.bucket = r->context.bucketDims.empty() ? "fixed shapes" : r->context.bucketDims;
      c.hostSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return c;
    };
    support::TimedScope looping(feedback.timing(), "generate");
    auto result = driver::generate(program->entries, genOptions, call);
    looping.stop();
    feedback.endProgress();
    if (!result) {
      feedback.error(llvm::toString(result.takeError()));
      return tools::kExitInputError;
    }
    return finishGenerate(*result, chip->clockMHz, generate, feedback);
  }

  if (checkShifts) {
    sim::ShiftCheckOptions shiftOptions;
    shiftOptions.session = options;
    shiftOptions.sample = shiftSample;
    shiftOptions.bucket = shiftBucket;
    shiftOptions.inputSeed = shiftInputSeed;
    shiftOptions.session.run.progress = {};
    shiftOptions.session.timing = {};
    feedback.progress().status("check shifts");
    auto shifts = sim::checkShifts(*program, *chip, shiftOptions);
    feedback.endProgress();
    if (!shifts) {
      feedback.error(llvm::toString(shifts.takeError()));
      return tools::kExitInputError;
    }
    llvm::outs() << sim::formatShiftReport(*shifts, true);
    if (!shifts->different.empty()) {
      feedback.error(llvm::Twine(shifts->different.size()) +
                                        " shift(s) ran to different outputs: the simulator "
                                        "missed a hazard");
      return tools::kExitInputError;
    }
    return tools::kExitSuccess;
  }

  auto result = sim::runSession(*program, *chip, options);
  feedback.endProgress();
  support::TimedScope writing(feedback.timing(), "write outputs");
  if (!result) {
    feedback.error(llvm::toString(result.takeError()));
    return tools::kExitInputError;
  }
  if (severalRanks) {
    ranks->settled = true;
    if (timePhases)
      llvm::errs() << "lpurun: rank " << ranks->rank() << " of " << ranks->size() << " sent "
                   << ranks->bytesSent << " bytes to the others in " << ranks->exchanges
                   << " exchanges\n";
    // Rank 0 writes what the run gave; the others are done.
    if (ranks->rank() != 0)
      return tools::kExitSuccess;
  }
  if (int rc = emitOutputs(result->outputs, result->states, outputFiles, printAll, !timingOnly,
                           "the program", feedback);
      rc >= 0)
    return rc;
  if (!dumpState.empty()) {
    auto states = finalStates(program->entries, result->states, options.inputs);
    if (!states) {
      feedback.error(llvm::toString(states.takeError()));
      return tools::kExitInputError;
    }
    if (!writeStates(dumpState, *states, feedback))
      return tools::kExitUsageError;
  }
  if (report == "text")
    llvm::outs() << sim::formatReportText(result->report, result->context);
  else if (report == "json")
    llvm::outs() << sim::formatReportJson(result->report, result->context);
  if (!tracePath.empty() && !writeFile(tracePath, result->traceJson, feedback))
    return tools::kExitUsageError;
  return tools::kExitSuccess;
}

int main(int argc, char **argv) {
  // Under mpirun with several ranks: MPI starts first, each rank runs the
  // same command line on its own chips, and rank 0 alone speaks (another
  // rank speaks only when the ranks lost each other).
  if (!sim::launchedWithRanks())
    return runLpurun(argc, argv, nullptr);
#ifdef LPU_HAVE_MPI
  auto ranks = sim::mpi::MpiRanks::start(argc, argv, {});
  if (!ranks) {
    llvm::errs() << kTool << ": error: " << llvm::toString(ranks.takeError()) << "\n";
    return tools::kExitUsageError;
  }
  // Another rank's stderr goes to a file: it is shown only when that
  // rank stops alone (rank 0 did not see why).
  const unsigned rank = (*ranks)->rank();
  int err = -1;
  std::FILE *held = nullptr;
  if (rank != 0) {
    err = dup(2);
    held = std::tmpfile();
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, 1);
      close(null);
    }
    if (held)
      dup2(fileno(held), 2);
  }
  int rc = runLpurun(argc, argv, ranks->get());
  llvm::outs().flush();
  llvm::errs().flush();
  if (rc == 0 || (!(*ranks)->broken() && (*ranks)->settled))
    return rc;
  // This rank stopped where the others may wait for it: it says why (rank
  // 0 has said so already; another rank waits a moment first, so that an
  // error every rank met is shown once, rank 0's), then ends every rank.
  if (rank != 0 && err >= 0 && held) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::fflush(held);
    std::rewind(held);
    std::string text;
    char buffer[4096];
    while (size_t n = std::fread(buffer, 1, sizeof buffer, held))
      text.append(buffer, n);
    llvm::raw_fd_ostream out(err, false);
    for (llvm::StringRef line : llvm::split(llvm::StringRef(text).rtrim(), '\n')) {
      if (line.consume_front(kTool) && line.consume_front(": error: "))
        out << kTool << ": error: rank " << rank << ": " << line << "\n";
      else if (!line.empty())
        out << line << "\n";
    }
  }
  (*ranks)->abort(rc > 0 ? rc : tools::kExitInputError);
#else
  llvm::errs() << kTool << ": error: started with several MPI ranks, but this lpurun was built "
               << "without MPI (install libopenmpi-dev and rebuild)\n";
  return tools::kExitUsageError;
#endif
}
