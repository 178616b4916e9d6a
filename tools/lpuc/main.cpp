// lpuc: the .lpu compiler driver. Flags in, library calls, exit code out.
#include "frontend/ASTPrinter.h"
#include "frontend/Checker.h"
#include "frontend/DiagnosticRender.h"
#include "frontend/Verify.h"
#include "ir/Pass.h"
#include "backend/ProgramText.h"
#include "driver/HtmlReport.h"
#include "driver/LoadModel.h"
#include "driver/Pipeline.h"
#include "ir/Text.h"
#include "support/Progress.h"
#include "support/TimeReport.h"
#include "tools/common/ToolSupport.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <map>

using namespace lpu;

int main(int argc, char **argv) {
  // LLVM-style single-dash long flags that users and tests write.
  std::vector<std::string> args(argv, argv + argc);
  for (std::string &a : args)
    if (a == "-verify" || a == "-verify-diagnostics")
      a = "--verify";
  std::vector<char *> argvFixed;
  for (std::string &a : args)
    argvFixed.push_back(a.data());

  CLI::App app{"lpuc: compiles .lpu models for the LPU"};
  tools::addCommonOptions(app, "lpuc");
  std::string input;
  std::string emit;
  std::string explain;
  bool verify = false;
  std::string format = "text";
  std::string color = "auto";
  unsigned errorLimit = 20;
  app.add_option("file", input, "the .lpu source file ('-' reads stdin)");
  app.add_option("--emit", emit,
                 "print a stage of the compilation: ast, or types (every instantiated entry "
                 "with the type of every expression), or params (the weights by path), or ir "
                 "(the dataflow IR, one function per entry and bucket), or asm (the compiled "
                 "program's text form), or plan (the scheduler's choices per entry and bucket: "
                 "knobs, heuristics tried and kept, storage, each op's and value's layout and "
                 "lowering)")
      ->check(CLI::IsMember({"ast", "types", "params", "ir", "asm", "plan"}));
  std::string outputFile, chipName = std::string(backend::kDefaultChip);
  bool report = false;
  app.add_option("-o,--output", outputFile,
                 "compile for the chip and write the program file (.lpx, binary)");
  app.add_option("--chip", chipName, "the chip description to compile for (name or path)")
      ->capture_default_str();
  app.add_flag(
      "--report", report,
      "print per entry and bucket the predicted cycles and time, per-unit utilisation, SRAM "
      "use and the lower bound, before anything runs");
  bool reportOps = false;
  app.add_flag("--report-ops", reportOps,
               "with --report: also each op, in the order it was scheduled, with the cycles of its "
               "instructions and when its first and last result rows are ready");
  std::string packParams = "auto";
  app.add_option("--pack-params", packParams,
                 "store a matmul's weights and a gather's table whose rows are not a whole "
                 "number of vectors with no padding between rows: auto (only when the model "
                 "does not fit in SRAM otherwise, then striped if that does not fit either), always, "
                 "striped (packed and cut across every slice of a hemisphere) or never")
      ->check(CLI::IsMember({"auto", "always", "striped", "never"}))
      ->capture_default_str();
  bool noTune = false;
  CLI::Option *noTuneFlag =
      app.add_flag("--no-tune", noTune,
                   "schedule each bucket once, with the default placement heuristics, instead of "
                   "also with the other sets and keeping the fastest");
  std::vector<std::string> heuristics, heuristicNames{"none"};
  for (const scheduler::PlacementHeuristic &h : scheduler::placementHeuristicTable())
    heuristicNames.push_back(h.name.str());
  app.add_option("--heuristics", heuristics,
                 "schedule each bucket once with exactly these placement heuristics, comma "
                 "separated (none: 'none'): " +
                     llvm::join(llvm::ArrayRef(heuristicNames).drop_front(), ", "))
      ->delimiter(',')
      ->check(CLI::IsMember(heuristicNames))
      ->excludes(noTuneFlag);
  std::vector<std::string> knobSpecs;
  app.add_option("--knob", knobSpecs,
                 "set a numeric tuning knob, NAME=VALUE (repeatable; --emit=plan lists them with "
                 "their values, docs/scheduler.md \"Knobs\" says what each does)")
      ->check([](const std::string &spec) -> std::string {
        scheduler::TuningKnobs knobs;
        if (llvm::Error e = scheduler::setKnob(spec, knobs))
          return llvm::toString(std::move(e));
        return "";
      });
  unsigned threads = 0;
  app.add_option("--threads", threads,
                 "threads that schedule a bucket's other sets of placement heuristics (default: "
                 "one per core; the program does not depend on it)")
      ->check(CLI::Range(1u, 256u));
  std::vector<std::string> entries, bucketSpecs;
  // One value an occurrence: `--entry pooled model.lpu` names the file.
  app.add_option("--entry", entries, "compile only entry NAME (repeatable; default: every entry)")
      ->allow_extra_args(false);
  app.add_option("--bucket", bucketSpecs,
                 "compile only the buckets with the sizes DIM=N[,DIM=N...] (repeatable; default: "
                 "every bucket)")
      ->allow_extra_args(false)
      ->check([](const std::string &spec) -> std::string {
        auto dims = driver::parseBucketSpec(spec);
        return dims ? "" : llvm::toString(dims.takeError());
      });
  driver::IROptions irOptions;
  app.add_flag("--verify-roundtrip", irOptions.roundTrip,
               "with --emit=ir: also parse the printed IR back and check it prints the same")
      ->group("");
  app.add_flag("--inject-ir-fault", irOptions.injectFault,
               "with --emit=ir: break the lowered IR, to test the internal-error path")
      ->group("");
  app.add_option("--passes", irOptions.passes,
                 "the passes run after lowering, comma-separated ('default' is "
                 "the compiler's pipeline, 'none' prints the IR as lowered)")
      ->capture_default_str();
  app.add_option("--print-ir-before", irOptions.printBefore,
                 "dump the IR to stderr before the pass PASS (or 'all')")
      ->delimiter(',')
      ->allow_extra_args(false);
  app.add_option("--print-ir-after", irOptions.printAfter,
                 "dump the IR to stderr after the pass PASS (or 'all')")
      ->delimiter(',')
      ->allow_extra_args(false);
  std::string reportHtml;
  app.add_option("--report-html", reportHtml,
                 "compile as -o does and write the schedule report as one self-contained HTML page "
                 "to FILE: a zoomable timeline of every queue per chip, utilisation, SRAM over "
                 "time, the critical path and every op");
  bool stats = false, statsJson = false, timePhases = false;
  std::vector<std::string> includeDirs;
  CheckOptions checkOptions;
  app.add_flag(
      "--stats", stats, "print parameters, parameter bytes and FLOPs per entry and bucket");
  app.add_flag("--json", statsJson, "with --stats or --report: print one JSON object");
  app.add_flag("--time-phases", timePhases,
               "print to stderr a table of the wall and CPU time of each phase of the pipeline, "
               "each pass, partition candidate, entry and bucket scheduled and set of placement "
               "heuristics");
  bool showProgress = false, quiet = false;
  double progressInterval = 0.25;
  CLI::Option *progressFlag = app.add_flag(
      "--progress", showProgress,
      "show how far the compilation has got on one line of stderr, also when stderr is not a "
      "terminal (by default only on a terminal)");
  app.add_flag("-q,--quiet", quiet, "show no progress (diagnostics still print)")
      ->excludes(progressFlag);
  app.add_option("--progress-interval", progressInterval,
                 "seconds between redraws of the progress line (0: every change; tests)")
      ->group("")
      ->check(CLI::Range(0.0, 60.0));
  std::vector<std::string> dumpAfter;
  app.add_option("--dump-after", dumpAfter,
                 "print to stderr what a phase made, right after it runs: " + driver::phaseList() +
                     " (comma-separated or repeated); runs the pipeline at least that far")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check([](const std::string &name) -> std::string {
        return driver::parsePhase(name) ? "" : "unknown phase '" + name + "' (phases: " +
                                                   driver::phaseList() + ")";
      });
  app.add_option("-I,--import-dir", includeDirs, "search DIR for imported modules (before the stdlib)");
  app.add_option("--max-unroll", checkOptions.maxUnroll, "the most iterations a loop may unroll to")
      ->capture_default_str();
  std::string chipsSpec = "1";
  app.add_option("--chips", chipsSpec,
                 "the chips to partition every entry onto (how: --partition; 'auto': the fewest "
                 "whose SRAM holds its weights, as pipeline stages)")
      ->capture_default_str()
      ->check([](const std::string &v) -> std::string {
        unsigned n = 0;
        if (v == "auto" || (!llvm::StringRef(v).getAsInteger(10, n) && n > 0 && n <= unsigned(ir::kMaxChips)))
          return "";
        return "--chips takes a number of chips from 1 to 4096 or 'auto', not '" + v + "'";
      });
  std::string topologySpec;
  app.add_option("--topology", topologySpec,
                 "how the chips are cabled: single, node (8 chips) or dragonfly:N (N nodes); "
                 "default: the smallest that has the chips");
  std::string partitionKind = "auto";
  std::vector<std::string> partitionKinds{"auto"};
  for (const driver::PartitionKindName &k : driver::autoPartitionKinds())
    partitionKinds.push_back(k.name.str());
  app.add_option("--partition", partitionKind,
                 "how entries are cut across chips: auto (each kind compiled and scheduled, the "
                 "fewest predicted cycles kept), pipeline (consecutive layers on consecutive "
                 "chips), tensor (matmuls split over all the chips, Megatron-style) or hybrid "
                 "(tensor within each node of 8 chips, pipeline across nodes)")
      ->check(CLI::IsMember(partitionKinds))
      ->capture_default_str();
  std::vector<std::string> pinSpecs;
  app.add_option("--pin", pinSpecs,
                 "pin the layers whose weights' paths match GLOB (--emit=params lists them): "
                 "GLOB=whole (tensor: left unsplit), GLOB=split (tensor: must be split), "
                 "GLOB=stage (pipeline: a stage starts there) or GLOB=chip:N (pipeline: it "
                 "starts chip N's stage); repeatable")
      ->allow_extra_args(false);
  app.add_option("--explain", explain, "print the long explanation of a diagnostic code");
  app.add_flag("--verify,-V", verify,
               "check the diagnostics against 'expected-...' comments in the file "
               "(also spelled -verify)");
  app.add_option("--diagnostics-format", format, "text or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--color", color, "colour diagnostics: auto, always or never (NO_COLOR honoured)")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--error-limit", errorLimit, "stop after this many errors (0: no limit)")
      ->capture_default_str();
  if (int code = tools::parseCommandLine(app, static_cast<int>(argvFixed.size()),
                                         argvFixed.data(), "lpuc");
      code >= 0)
    return code;

  if (llvm::Error e =
          ir::checkPassFlags(irOptions.passes, irOptions.printBefore, irOptions.printAfter)) {
    tools::reportToolError("lpuc", llvm::toString(std::move(e)));
    return tools::kExitUsageError;
  }
  if (statsJson && !stats && !report) {
    tools::reportToolError("lpuc", "--json requires --stats or --report");
    return tools::kExitUsageError;
  }
  if (reportOps && !report) {
    tools::reportToolError("lpuc", "--report-ops requires --report");
    return tools::kExitUsageError;
  }
  scheduler::ScheduleOptions scheduleOptions;
  scheduleOptions.packing = packParams == "always"    ? scheduler::ParamPacking::Always
                            : packParams == "striped" ? scheduler::ParamPacking::Striped
                            : packParams == "never"   ? scheduler::ParamPacking::Never
                                                      : scheduler::ParamPacking::Auto;
  scheduleOptions.tune = !noTune;
  scheduleOptions.keepInstructions = !reportHtml.empty();
  scheduleOptions.threads = threads;
  if (!heuristics.empty())
    scheduleOptions.heuristics = llvm::cantFail(scheduler::parsePlacementHeuristics(heuristics));
  for (const std::string &spec : knobSpecs)
    llvm::cantFail(scheduler::setKnob(spec, scheduleOptions.knobs));
  driver::PipelineOptions pipeline;
  pipeline.schedule = scheduleOptions;
  pipeline.chips.fewest = chipsSpec == "auto";
  if (!pipeline.chips.fewest)
    pipeline.chips.chips = unsigned(std::stoul(chipsSpec));
  pipeline.chips.topology = topologySpec;
  for (const driver::PartitionKindName &k : driver::autoPartitionKinds())
    if (partitionKind == k.name)
      pipeline.chips.kind = k.kind;
  if (!pinSpecs.empty() && !pipeline.chips.fewest && pipeline.chips.chips <= 1) {
    tools::reportToolError("lpuc", "--pin needs --chips N (N > 1) or --chips auto");
    return tools::kExitUsageError;
  }
  // The SRAM rule of the checker (E0600) counts the chips asked for; with
  // `auto`, the partition finds how many the weights need.
  checkOptions.chips = pipeline.chips.chips;
  checkOptions.sramRule = !pipeline.chips.fewest;
  checkOptions.sramRuleEntries = entries;
  pipeline.select.entries = entries;
  for (const std::string &spec : bucketSpecs)
    pipeline.select.buckets.push_back(llvm::cantFail(driver::parseBucketSpec(spec))); // checked
  for (const std::string &name : dumpAfter)
    pipeline.dumpAfter.push_back(*driver::parsePhase(name));
  // How far the pipeline runs: as far as the output asked for needs.
  using driver::Phase;
  bool compile = !outputFile.empty() || emit == "asm" || emit == "plan" || report ||
                 !reportHtml.empty();
  // A plain check lowers too: what the checker passes but the IR cannot
  // express (E0700: a pool padded past half its kernel, a tensor past 2^48
  // elements) is an error of the source, reported without `-o` as with it.
  pipeline.last = compile ? Phase::Emit : emit == "ir" ? Phase::Partition
                  : emit == "ast"                      ? Phase::Parse
                  : emit.empty()                       ? Phase::Lower
                                                       : Phase::Check;
  for (Phase p : pipeline.dumpAfter)
    pipeline.last = std::max(pipeline.last, p);
  std::optional<backend::ChipDescription> chip;
  if (pipeline.last >= Phase::Partition) {
    auto loaded = backend::loadChipDescription(chipName);
    if (!loaded) {
      tools::reportToolError("lpuc", llvm::toString(loaded.takeError()));
      return tools::kExitUsageError;
    }
    chip = std::move(*loaded);
    pipeline.chip = &*chip;
  }

  if (!explain.empty()) {
    if (!printExplanation(explain, llvm::outs())) {
      tools::reportToolError("lpuc", "unknown diagnostic code '" + explain + "'");
      return tools::kExitUsageError;
    }
    return tools::kExitSuccess;
  }
  if (input.empty()) {
    tools::reportToolError("lpuc", "no input file");
    llvm::errs() << "Run 'lpuc --help' for the options.\n";
    return tools::kExitUsageError;
  }

  auto buffer = tools::readInputFile(input);
  if (!buffer) {
    tools::reportToolError("lpuc", llvm::toString(buffer.takeError()));
    return tools::kExitUsageError;
  }

  // IR text (what --emit=ir prints, partitioned or not): parsed and
  // verified, then through the pipeline from the passes on.

  llvm::SourceMgr sources;
  unsigned bufferId = sources.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  DiagnosticEngine diags(sources);
  diags.setErrorLimit(verify ? 0 : errorLimit);

  // The progress line, and stderr for what prints while it shows
  // (diagnostics, dumps): the line erased first.
  std::optional<support::ProgressLine> progress;
  if (support::ProgressLine::wanted(showProgress, quiet)) {
    support::ProgressLine::Options o = support::ProgressLine::forStderr("lpuc");
    o.interval = progressInterval;
    progress.emplace(llvm::errs(), o);
  }
  support::ProgressClearingStream errs(llvm::errs(), progress ? &*progress : nullptr);
  CollectingConsumer collected;
  TextDiagnosticRenderer text(sources, errs,
                              shouldUseColor(color == "always"  ? ColorMode::Always
                                             : color == "never" ? ColorMode::Never
                                                                : ColorMode::Auto,
                                             llvm::errs()));
  JsonDiagnosticRenderer json(sources, errs);
  if (verify)
    diags.setConsumer(&collected);
  else if (format == "json")
    diags.setConsumer(&json);
  else
    diags.setConsumer(&text);

  // lpuc exits right after compiling: ANTLR's parse trees are left to the
  // process exit instead of being freed (ParseOptions says why).
  // A pin that does not parse is an error of the compilation (E0602), as
  // one whose glob matches no weight is.
  for (const std::string &spec : pinSpecs) {
    auto pin = ir::parsePartitionPin(spec);
    if (!pin) {
      diags.report(DiagID::PinInvalid, {}, spec, llvm::toString(pin.takeError()));
      continue;
    }
    pipeline.chips.pins.push_back(std::move(*pin));
  }
  if (diags.hasErrors())
    return tools::kExitInputError;
  checkOptions.parse.freeParseTree = false;
  std::string exe = llvm::sys::fs::getMainExecutable(argv[0], reinterpret_cast<void *>(&main));
  checkOptions.importPaths = includeDirs;
  for (const std::string &dir : defaultStdlibPaths(llvm::sys::path::parent_path(exe)))
    checkOptions.importPaths.push_back(dir);
  checkOptions.importPaths.push_back(LPU_SOURCE_STDLIB_DIR);
  checkOptions.recordTypes = emit == "types";
  checkOptions.recordParams = emit == "params";
  pipeline.check = checkOptions;
  pipeline.ir = irOptions;
  support::TimeRecorder times;
  if (progress) {
    pipeline.progress = support::Progress(&*progress);
    pipeline.dumps = pipeline.ir.passDumps = &errs;
  }
  if (timePhases)
    pipeline.timing = support::Timing(&times);
  driver::Compilation compilation(diags, bufferId);
  // A .ir file (the text form --emit=ir prints, or IR written by hand, say
  // partitioned by hand) enters the pipeline at the passes, parsed and
  // verified.
  if (llvm::sys::path::extension(input) == ".ir") {
    if (emit == "ast" || emit == "types" || emit == "params" || verify || stats) {
      // --stats counts from the checked source (parameters, FLOPs).
      tools::reportToolError("lpuc", (verify  ? std::string("--verify")
                                      : stats ? std::string("--stats")
                                              : "--emit=" + emit) +
                                         " needs a .lpu source, not IR");
      return tools::kExitUsageError;
    }
    auto module = driver::loadModel(input, {}, errs);
    if (!module) {
      tools::reportToolError("lpuc", llvm::toString(module.takeError()));
      return tools::kExitInputError;
    }
    if ((*module)->functions.empty()) {
      // As a source without entries: nothing to compile, and a program
      // without entries would be refused by lpurun.
      tools::reportToolError("lpuc", input + ": the IR holds no function to compile");
      return tools::kExitInputError;
    }
    compilation.ir = std::move(*module);
    pipeline.first = Phase::Passes;
  }
  driver::runPipeline(compilation, pipeline);
  if (progress)
    progress->finish();
  if (timePhases)
    times.print(llvm::errs(), "lpuc: time per phase");
  const std::string &selectionError = compilation.selectionError;
  if (!selectionError.empty()) {
    tools::reportToolError("lpuc", selectionError);
    return tools::kExitUsageError;
  }
  if (verify)
    return verifyDiagnostics(sources, bufferId, collected.diagnostics, llvm::errs())
               ? tools::kExitSuccess
               : tools::kExitInputError;
  if (diags.hasErrors())
    return tools::kExitInputError;
  if (emit == "ast")
    printAST(*compilation.ast, sources, llvm::outs());
  const CheckResult &result = compilation.checked;
  const std::optional<driver::CompiledProgram> &compiled = compilation.compiled;
  // --entry picks what they print, as it picks what is compiled.
  if (emit == "types")
    printTypes(result, llvm::outs(), entries);
  if (emit == "params")
    printParams(result, llvm::outs(), entries);
  if (emit == "ir")
    ir::print(*compilation.ir, llvm::outs());
  if (compiled && !outputFile.empty()) {
    const std::string &bytes = compilation.binary;
    std::error_code ec;
    llvm::raw_fd_ostream out(outputFile, ec);
    if (ec) {
      tools::reportToolError("lpuc", "cannot write '" + outputFile + "': " + ec.message());
      return tools::kExitUsageError;
    }
    out << bytes;
    out.close();
    if (out.has_error()) {
      tools::reportToolError("lpuc", "cannot write '" + outputFile + "': " + out.error().message());
      out.clear_error();
      return tools::kExitUsageError;
    }
  }
  if (compiled && !reportHtml.empty()) {
    std::string page;
    llvm::raw_string_ostream pageStream(page);
    driver::writeHtmlReport(*compiled, *chip, input, pageStream);
    pageStream.flush();
    if (reportHtml == "-") {
      llvm::outs() << page;
    } else {
      auto written = tools::writeTemporaryBeside(reportHtml, page, "html");
      if (!written) {
        tools::reportToolError("lpuc", llvm::toString(written.takeError()));
        return tools::kExitUsageError;
      }
      if (std::error_code ec = llvm::sys::fs::rename(*written, reportHtml)) {
        llvm::sys::fs::remove(*written);
        tools::reportToolError("lpuc", "cannot write '" + reportHtml + "': " + ec.message());
        return tools::kExitUsageError;
      }
    }
  }
  if (compiled && emit == "asm")
    llvm::outs() << backend::printProgramText(compiled->program);
  if (compiled && emit == "plan")
    driver::printSchedulePlan(*compiled, llvm::outs());
  if (compiled && report && statsJson)
    driver::printScheduleReportJson(*compiled, *chip, llvm::outs(), reportOps);
  else if (compiled && report)
    driver::printScheduleReport(*compiled, *chip, llvm::outs(), reportOps);
  if (stats && statsJson)
    printStatsJson(result, llvm::outs());
  else if (stats)
    printStats(result, llvm::outs());
  return tools::kExitSuccess;
}
