#include "tools/common/ToolSupport.h"

#include "support/Files.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/WithColor.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <new>
#include <unistd.h>

namespace lpu::tools {

std::string versionLine(llvm::StringRef tool) {
  return (tool + " " + LPU_VERSION).str();
}

void addCommonOptions(CLI::App &app, llvm::StringRef tool) {
  app.set_version_flag("--version", versionLine(tool));
  app.footer("Exit status: 0 success, 1 errors in the input, 2 usage or I/O error.");
}

namespace {
/// Every option that takes a value refuses an empty one and a flag in its
/// place: CLI11 skips an empty value (`-o ""`, `--output=`) and takes the
/// next argument instead, so `--output= --report` wrote a file named
/// `--report` and `-o ""` compiled and wrote nothing, both with exit 0.
void guardValues(CLI::App &app) {
  const CLI::Validator guard(
      [](std::string &value) -> std::string {
        if (value.empty())
          return "the value is empty";
        if (llvm::StringRef(value).startswith("--"))
          return "'" + value + "' is a flag, not a value (the value is missing; a file of that name is ./" +
                 value + ")";
        return "";
      },
      "", "a value");
  // CLI11 reads an integer past 64 bits as the largest one (strtoll's
  // clamp): --generate 99999999999999999999 asked for 2^63 - 1 tokens.
  auto inRange = [](bool isSigned) {
    return CLI::Validator(
        [isSigned](std::string &value) -> std::string {
          llvm::StringRef digits = llvm::StringRef(value).trim();
          const bool negative = digits.consume_front("-");
          if (!negative)
            digits.consume_front("+");
          if (digits.empty() || !llvm::all_of(digits, llvm::isDigit))
            return ""; // not a decimal number: CLI11 says what is wrong
          uint64_t magnitude = 0;
          const uint64_t most = isSigned ? uint64_t(INT64_MAX) + (negative ? 1 : 0) : UINT64_MAX;
          if (digits.getAsInteger(10, magnitude) || magnitude > most)
            return value + " is out of range";
          return "";
        },
        "", "in range");
  };
  for (CLI::Option *option : app.get_options())
    if (option->nonpositional() && option->get_type_size_max() > 0) {
      option->check(guard);
      const std::string type = option->get_type_name();
      if (llvm::StringRef(type).startswith("INT"))
        option->check(inRange(true));
      else if (llvm::StringRef(type).startswith("UINT"))
        option->check(inRange(false));
    }
  for (CLI::App *sub : app.get_subcommands({}))
    guardValues(*sub);
}

/// Out of host memory (a model or a program larger than the host, a
/// limit on the address space): one line and exit 1, not an uncaught
/// std::bad_alloc's abort.
std::string outOfMemoryLine;
void outOfMemory() {
  [[maybe_unused]] ssize_t written = ::write(2, outOfMemoryLine.data(), outOfMemoryLine.size());
  std::_Exit(kExitInputError);
}
} // namespace

int parseCommandLine(CLI::App &app, int argc, char **argv, llvm::StringRef tool) {
  outOfMemoryLine = (tool + ": error: out of host memory (the input is larger than this host can hold)\n").str();
  std::set_new_handler(outOfMemory);
  guardValues(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    reportToolError(tool, e.what());
    llvm::errs() << "Run '" << tool << " --help' for the options.\n";
    return kExitUsageError;
  }
  return -1;
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> readInputFile(llvm::StringRef path) {
  if (path != "-") {
    llvm::sys::fs::file_status status;
    if (std::error_code ec = llvm::sys::fs::status(path, status))
      return llvm::createStringError(ec, "cannot read '%s': %s", path.str().c_str(),
                                     ec.message().c_str());
    if (llvm::sys::fs::is_directory(status))
      return llvm::createStringError(std::make_error_code(std::errc::is_a_directory),
                                     "cannot read '%s': it is a directory",
                                     path.str().c_str());
    if (support::isDevice(status))
      return llvm::createStringError(std::make_error_code(std::errc::no_such_device),
                                     "cannot read '%s': %s", path.str().c_str(), support::kDeviceReason);
  }
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false,
                                                   /*RequiresNullTerminator=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read '%s': %s",
                                   path.str().c_str(), buffer.getError().message().c_str());
  return std::move(*buffer);
}

void reportToolError(llvm::StringRef tool, const llvm::Twine &message) {
  // One write of the whole line: stderr is unbuffered, and under a launcher
  // (mpirun) another process's lines may otherwise land inside ours.
  const bool colors = std::getenv("NO_COLOR") == nullptr && llvm::errs().has_colors();
  llvm::SmallString<256> line;
  llvm::raw_svector_ostream os(line);
  os.enable_colors(colors);
  os << tool << ": ";
  llvm::WithColor(os, llvm::HighlightColor::Error,
                  colors ? llvm::ColorMode::Enable : llvm::ColorMode::Disable)
      << "error: ";
  os << message << "\n";
  llvm::errs() << line;
}

llvm::Expected<std::string> writeTemporaryBeside(llvm::StringRef path, llvm::StringRef contents,
                                                 llvm::StringRef tag) {
  llvm::SmallString<256> temp;
  int fd = -1;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + "." + tag + "-%%%%%%", fd, temp))
    return llvm::createStringError(ec, "cannot write '%s': %s", path.str().c_str(),
                                   ec.message().c_str());
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << contents;
  os.close();
  if (os.has_error()) {
    std::error_code ec = os.error();
    os.clear_error();
    llvm::sys::fs::remove(temp);
    return llvm::createStringError(ec, "cannot write '%s': %s", path.str().c_str(),
                                   ec.message().c_str());
  }
  return std::string(temp.str());
}

} // namespace lpu::tools
