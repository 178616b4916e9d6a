// lpurun: runs a program file on the simulated LPU, or (--reference) a .lpu
// model in the reference interpreter. A thin driver: flags and files here,
// everything else in sim/Session.h, driver/LoadModel.h and
// interp/InterpreterRun.h.
#include "backend/ChipDescription.h"
#include "backend/ProgramBinary.h"
#include "backend/ProgramText.h"
#include "support/Literal.h"
#include "support/Npy.h"
#include "support/SafeTensors.h"
#include "frontend/Checker.h"
#include "driver/LoadModel.h"
#include "frontend/DiagnosticRender.h"
#include "interp/InterpreterRun.h"
#include "ir/Text.h"
#include "ir/Verifier.h"
#include "sim/Session.h"
#include "sim/ShiftCheck.h"
#include "tools/common/ToolSupport.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

using namespace lpu;

namespace {
constexpr llvm::StringLiteral kTool = "lpurun";

bool writeFile(llvm::StringRef path, llvm::StringRef data) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec) {
    os << data;
    os.close();
    ec = os.error();
  }
  if (ec) {
    tools::reportToolError(kTool, "cannot write '" + path + "': " + ec.message());
    return false;
  }
  return true;
}
/// --input, --output and --weights as given: literals and .npy files read,
/// the weights file checked for readability. Returns -1 when all is well,
/// else the exit code (the error is printed).
int collectTensorArgs(const std::vector<std::string> &inputs,
                      const std::vector<std::string> &outputs, const std::string &weights,
                      std::map<std::string, tensor::Tensor> &inputValues,
                      std::map<std::string, std::string> &outputFiles, bool &printAll) {
  for (const std::string &arg : inputs) {
    auto named = tensor::parseInputArgument(arg);
    if (!named) {
      tools::reportToolError(kTool, llvm::toString(named.takeError()));
      return tools::kExitInputError;
    }
    if (inputValues.count(named->name)) {
      tools::reportToolError(kTool, "input '" + named->name + "' given twice");
      return tools::kExitUsageError;
    }
    inputValues.emplace(named->name, std::move(named->tensor));
  }
  if (!weights.empty()) {
    auto check = tools::readInputFile(weights); // the usual missing/directory messages
    if (!check) {
      tools::reportToolError(kTool, llvm::toString(check.takeError()));
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
      tools::reportToolError(kTool, "--output takes NAME=FILE.npy or '-', found '" + o + "'");
      return tools::kExitUsageError;
    }
    outputFiles[name.str()] = path.str();
  }
  return -1;
}

/// The module of `path`: a .lpu source compiled (diagnostics on stderr), or
/// IR text (.ir) parsed and verified.
llvm::Expected<std::unique_ptr<ir::Module>> loadModule(const std::string &path, const char *argv0) {
  driver::LoadModelOptions options;
  std::string exe = llvm::sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&loadModule));
  options.importPaths = defaultStdlibPaths(llvm::sys::path::parent_path(exe));
  options.importPaths.push_back(LPU_SOURCE_STDLIB_DIR);
  options.color = shouldUseColor(ColorMode::Auto, llvm::errs());
  return driver::loadModel(path, options, llvm::errs());
}

struct ReferenceArgs {
  std::string model, entry, weights, dumpWeights;
  std::optional<uint64_t> seed;
  unsigned threads = 0;
  std::map<std::string, tensor::Tensor> inputs;
  std::map<std::string, std::string> outputFiles;
  bool printAll = false;
};

/// lpurun --reference: compile, load weights, run the entry's best bucket,
/// write or print the outputs; the bucket and padding go to stderr.
int runReference(const ReferenceArgs &args, const char *argv0) {
  if (auto readable = tools::readInputFile(args.model); !readable) { // missing, a directory
    tools::reportToolError(kTool, llvm::toString(readable.takeError()));
    return tools::kExitUsageError;
  }
  auto module = loadModule(args.model, argv0);
  if (!module) {
    tools::reportToolError(kTool, llvm::toString(module.takeError()));
    return tools::kExitInputError;
  }
  interp::WeightSource source{args.weights, args.seed.value_or(0)};
  auto run = interp::runEntry(**module, args.entry, args.inputs, source, {args.threads});
  if (!run) {
    tools::reportToolError(kTool, llvm::toString(run.takeError()));
    return tools::kExitInputError;
  }
  if (!args.dumpWeights.empty()) {
    std::vector<tensor::NamedTensor> used(run->weights.begin(), run->weights.end());
    if (auto e = tensor::writeSafeTensorsFile(args.dumpWeights, used)) {
      tools::reportToolError(kTool, llvm::toString(std::move(e)));
      return tools::kExitUsageError;
    }
  }
  llvm::errs() << "reference: entry " << run->function->name() << ", bucket " << run->bucketText
               << ", padding " << llvm::format("%.1f", run->paddingFraction * 100) << "%\n"
               << "reference: weights bound in " << llvm::format("%.3f", run->prepareSeconds)
               << " s, run " << llvm::format("%.3f", run->runSeconds) << " s (cpu "
               << llvm::format("%.3f", run->runCpuSeconds) << " s)\n";
  for (const auto &[name, path] : args.outputFiles) {
    bool known = false;
    for (const auto &[outName, value] : run->outputs)
      known |= outName == name;
    if (!known) {
      tools::reportToolError(kTool,
                             "no output '" + name + "' in entry '" + run->function->name() + "'");
      return tools::kExitUsageError;
    }
  }
  for (const auto &[name, value] : run->outputs) {
    auto it = args.outputFiles.find(name);
    if (it != args.outputFiles.end()) {
      if (auto e = tensor::writeNpyFile(it->second, value)) {
        tools::reportToolError(kTool, llvm::toString(std::move(e)));
        return tools::kExitUsageError;
      }
    } else if (args.printAll) {
      llvm::outs() << name << ": " << tensor::formatIree(value) << "\n";
    }
  }
  return tools::kExitSuccess;
}
} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Runs an lpuc program file (binary .lpx or its text form) on the simulated LPU."};
  std::string programPath, entry, weights, report, tracePath, chipName, emit, emitPath = "-";
  std::vector<std::string> inputs, outputs;
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
  app.add_option("--input", inputs, "NAME=FILE.npy or NAME=2x3xf32=1,2,... (repeatable)");
  auto *w = app.add_option("--weights", weights, "parameters from a .safetensors file");
  auto *r = app.add_option("--random-weights", seed, "deterministic random parameters from SEED");
  w->excludes(r);
  app.add_option("--output", outputs,
                 "NAME=FILE.npy writes an output; '-' prints all outputs (the default)");
  app.add_option("--report", report, "print a report: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--trace", tracePath, "write a Chrome/Perfetto trace (JSON) to FILE");
  app.add_option("--threads", threads,
                 "host threads (results do not depend on it; with --reference the default is "
                 "one per core)")
      ->check(CLI::Range(1u, 256u));
  app.add_flag("--timing-only", timingOnly, "compute cycles only, without data");
  app.add_option("--chip", chipName, "chip description NAME or FILE (default: the program's)");
  app.add_option("--emit", emit, "convert the program instead of running it: text or binary")
      ->check(CLI::IsMember({"text", "binary"}));
  app.add_option("-o", emitPath, "where --emit writes (default: stdout)");
  std::optional<uint32_t> formatVersion;
  app.add_option("--format-version", formatVersion,
                 "with --emit=binary: write this older format version, for older lpuruns "
                 "(default: the newest)");
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
  tools::addCommonOptions(app, kTool);
  if (int rc = tools::parseCommandLine(app, argc, argv, kTool); rc >= 0)
    return rc;
  if (programPath.empty()) {
    tools::reportToolError(kTool, "no program file");
    llvm::errs() << "Run '" << kTool << " --help' for the options.\n";
    return tools::kExitUsageError;
  }

  if (reference) {
    for (const char *flag : {"--report", "--trace", "--timing-only", "--chip", "--emit", "-o",
                             "--format-version",
                             "--check-shifts", "--shift-sample", "--shift-bucket",
                             "--shift-input-seed"})
      if (app.count(flag)) {
        tools::reportToolError(kTool, llvm::Twine(flag) + " does not apply to --reference");
        return tools::kExitUsageError;
      }
    ReferenceArgs args;
    args.model = programPath;
    args.entry = entry;
    args.weights = weights;
    args.seed = seed;
    args.dumpWeights = dumpWeights;
    args.threads = app.count("--threads") ? threads : 0;
    if (int rc = collectTensorArgs(inputs, outputs, weights, args.inputs, args.outputFiles,
                                   args.printAll);
        rc >= 0)
      return rc;
    return runReference(args, argv[0]);
  }
  if (!dumpWeights.empty()) {
    tools::reportToolError(kTool, "--dump-weights needs --reference");
    return tools::kExitUsageError;
  }

  auto buffer = tools::readInputFile(programPath);
  if (!buffer) {
    tools::reportToolError(kTool, llvm::toString(buffer.takeError()));
    return tools::kExitUsageError;
  }
  llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
                                (*buffer)->getBufferSize());
  auto program = backend::parseProgramFile(bytes, programPath);
  if (!program) {
    tools::reportToolError(kTool, llvm::toString(program.takeError()));
    return tools::kExitInputError;
  }
  // The text form may leave out the fingerprint ("target groqchip1"): it
  // then means the named chip as shipped.
  if (program->chipFingerprint == 0) {
    auto named = backend::loadChipDescription(program->chipName);
    if (!named) {
      tools::reportToolError(kTool, llvm::toString(named.takeError()));
      return tools::kExitInputError;
    }
    program->chipFingerprint = named->fingerprint();
  }
  if (formatVersion && emit != "binary") {
    tools::reportToolError(kTool, "--format-version needs --emit=binary");
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
        tools::reportToolError(kTool, programPath + ": " + llvm::toString(older.takeError()));
        return tools::kExitInputError;
      }
      out = std::move(*older);
    }
    if (emitPath == "-") {
      llvm::outs() << out;
      return tools::kExitSuccess;
    }
    return writeFile(emitPath, out) ? tools::kExitSuccess : tools::kExitUsageError;
  }
  auto chip = backend::loadChipDescription(chipName.empty() ? program->chipName : chipName);
  if (!chip) {
    tools::reportToolError(kTool, llvm::toString(chip.takeError()));
    return tools::kExitUsageError;
  }
  if (auto e = backend::verifyProgram(*program, *chip)) {
    tools::reportToolError(kTool, programPath + ": " + llvm::toString(std::move(e)));
    return tools::kExitInputError;
  }

  for (const char *flag : {"--shift-sample", "--shift-bucket", "--shift-input-seed"})
    if (app.count(flag) && !checkShifts) {
      tools::reportToolError(kTool, llvm::Twine(flag) + " needs --check-shifts");
      return tools::kExitUsageError;
    }
  if (checkShifts)
    for (const char *flag : {"--report", "--trace", "--timing-only", "--output"})
      if (app.count(flag)) {
        tools::reportToolError(kTool, llvm::Twine(flag) + " does not apply to --check-shifts");
        return tools::kExitUsageError;
      }

  sim::SessionOptions options;
  options.entry = entry;
  options.weightsFile = weights;
  options.randomSeed = seed;
  options.run.threads = threads;
  options.run.timingOnly = timingOnly;
  options.run.trace = !tracePath.empty();
  std::map<std::string, std::string> outputFiles;
  bool printAll = false;
  if (int rc = collectTensorArgs(inputs, outputs, weights, options.inputs, outputFiles, printAll);
      rc >= 0)
    return rc;

  if (checkShifts) {
    sim::ShiftCheckOptions shiftOptions;
    shiftOptions.session = options;
    shiftOptions.sample = shiftSample;
    shiftOptions.bucket = shiftBucket;
    shiftOptions.inputSeed = shiftInputSeed;
    auto shifts = sim::checkShifts(*program, *chip, shiftOptions);
    if (!shifts) {
      tools::reportToolError(kTool, llvm::toString(shifts.takeError()));
      return tools::kExitInputError;
    }
    llvm::outs() << sim::formatShiftReport(*shifts, true);
    if (!shifts->different.empty()) {
      tools::reportToolError(kTool, llvm::Twine(shifts->different.size()) +
                                        " shift(s) ran to different outputs: the simulator "
                                        "missed a hazard");
      return tools::kExitInputError;
    }
    return tools::kExitSuccess;
  }

  auto result = sim::runSession(*program, *chip, options);
  if (!result) {
    tools::reportToolError(kTool, llvm::toString(result.takeError()));
    return tools::kExitInputError;
  }
  for (const auto &[name, path] : outputFiles) {
    bool known = false;
    for (const auto &[outName, value] : result->outputs)
      known |= outName == name;
    if (!known && !timingOnly) {
      tools::reportToolError(kTool, "no output '" + name + "' in the program");
      return tools::kExitUsageError;
    }
  }
  for (const auto &[name, value] : result->outputs) {
    auto it = outputFiles.find(name);
    if (it != outputFiles.end()) {
      if (auto e = tensor::writeNpyFile(it->second, value)) {
        tools::reportToolError(kTool, llvm::toString(std::move(e)));
        return tools::kExitUsageError;
      }
    } else if (printAll) {
      llvm::outs() << name << ": " << tensor::formatIree(value) << "\n";
    }
  }
  if (report == "text")
    llvm::outs() << sim::formatReportText(result->report, result->context);
  else if (report == "json")
    llvm::outs() << sim::formatReportJson(result->report, result->context);
  if (!tracePath.empty() && !writeFile(tracePath, result->traceJson))
    return tools::kExitUsageError;
  return tools::kExitSuccess;
}
