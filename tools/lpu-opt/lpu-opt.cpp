// lpu-opt: runs IR passes over IR text, as mlir-opt does, so that every pass
// can be tested on hand-written input. Flags only: the pipeline (parse,
// verify, the pass manager, print) is driver/Opt.h.
#include "driver/Opt.h"
#include "ir/Pass.h"
#include "tools/common/ToolSupport.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <string>
#include <vector>

namespace {

using namespace lpu;

constexpr const char *kTool = "lpu-opt";

struct Flags {
  std::string file = "-";
  std::string passes;
  std::string printBefore, printAfter;
  std::string output = "-";
  bool noVerify = false, noLocations = false, listPasses = false;
};

std::vector<std::string> splitList(llvm::StringRef list) {
  std::vector<std::string> out;
  llvm::SmallVector<llvm::StringRef, 4> parts;
  list.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef part : parts)
    if (!part.trim().empty())
      out.push_back(part.trim().str());
  return out;
}

int run(const Flags &flags) {
  driver::OptOptions options;
  options.passes = flags.passes;
  options.printBefore = splitList(flags.printBefore);
  options.printAfter = splitList(flags.printAfter);
  options.verify = !flags.noVerify;
  options.locations = !flags.noLocations;
  if (llvm::Error e = driver::checkOptOptions(options)) {
    tools::reportToolError(kTool, llvm::toString(std::move(e)));
    return tools::kExitUsageError;
  }
  auto buffer = tools::readInputFile(flags.file);
  if (!buffer) {
    tools::reportToolError(kTool, llvm::toString(buffer.takeError()));
    return tools::kExitUsageError;
  }
  std::error_code ec;
  std::string result;
  llvm::raw_string_ostream printed(result);
  llvm::StringRef name = flags.file == "-" ? "<stdin>" : llvm::StringRef(flags.file);
  if (auto failure = driver::runOpt((*buffer)->getBuffer(), name, options, printed, llvm::errs())) {
    if (failure->kind == driver::OptFailure::Kind::Input)
      llvm::errs() << failure->message;
    else
      tools::reportToolError(kTool, failure->message);
    return tools::kExitInputError;
  }
  llvm::raw_fd_ostream os(flags.output, ec, llvm::sys::fs::OF_None);
  if (ec) {
    tools::reportToolError(kTool, "cannot write '" + flags.output + "': " + ec.message());
    return tools::kExitUsageError;
  }
  os << printed.str();
  os.close();
  if (os.has_error()) {
    tools::reportToolError(kTool, "cannot write '" + flags.output + "': " + os.error().message());
    os.clear_error();
    return tools::kExitUsageError;
  }
  return tools::kExitSuccess;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"lpu-opt: runs IR passes over the IR's text form and prints the result.\n"
               "With no FILE, reads standard input.",
               kTool};
  tools::addCommonOptions(app, kTool);
  Flags flags;
  app.add_option("file", flags.file, "IR text file ('-' for standard input)");
  app.add_option("--passes", flags.passes,
                 "Comma-separated passes to run in order (none: parse, verify, print); "
                 "'default' names lpuc's pipeline");
  app.add_option("--print-ir-before", flags.printBefore,
                 "Print each function to stderr before PASS runs (a pass name, a list, or all)");
  app.add_option("--print-ir-after", flags.printAfter,
                 "Print each function to stderr after PASS ran (a pass name, a list, or all)");
  app.add_flag("--no-verify", flags.noVerify,
               "Verify neither the input nor the IR after each pass (for debugging)");
  app.add_flag("--no-locations", flags.noLocations, "Print without loc(...)");
  app.add_flag("--list-passes", flags.listPasses, "List the passes and exit");
  app.add_option("-o,--output", flags.output, "Write the result here (default: standard output)");
  if (int code = tools::parseCommandLine(app, argc, argv, kTool); code >= 0)
    return code;

  if (flags.listPasses) {
    for (const std::string &name : ir::passNames())
      llvm::outs() << llvm::left_justify(name, 18) << ir::passDescription(name) << "\n";
    llvm::outs() << "default: " << llvm::join(ir::defaultPipeline(), ",") << "\n";
    return tools::kExitSuccess;
  }
  return run(flags);
}
