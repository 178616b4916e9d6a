// In-process timing of lpufmt's phases on one file: parse (lexer, parser,
// trivia, tree), render (rules to a document, then the printer, also timed
// alone) and the
// whole formatSource with its safety checks. Best of N runs after a warm-up
// run (ANTLR's prediction cache warms on the first parse of a process).
// Times are CPU times of this process.
// Usage: fmt_phases FILE [RUNS]
#include "format/Languages.h"
#include "format/engine/Pipeline.h"

#include <llvm/Support/Format.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <ctime>
#include <functional>

using namespace lpu::format;

// Process CPU time, not wall time: the bench machines are shared, and the
// formatter is single-threaded.
static double cpuMs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double bestMs(int runs, const std::function<void()> &work) {
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    double t0 = cpuMs();
    work();
    best = std::min(best, cpuMs() - t0);
  }
  return best;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    llvm::errs() << "usage: fmt_phases FILE [RUNS]\n";
    return 2;
  }
  int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  auto buffer = llvm::MemoryBuffer::getFile(argv[1]);
  const Language *lang = languageForPath(argv[1]);
  if (!buffer || !lang) {
    llvm::errs() << "fmt_phases: cannot read " << argv[1] << " or unknown language\n";
    return 2;
  }
  std::string source = (*buffer)->getBuffer().str();
  auto parse = [&](SyntaxTree &tree) {
    tree = SyntaxTree{};
    tree.source = source;
    std::vector<SyntaxError> errors;
    if (!lang->parse(tree, errors)) {
      llvm::errs() << "fmt_phases: the input does not parse\n";
      std::exit(3);
    }
  };
  SyntaxTree tree;
  parse(tree); // warm-up
  double parseMs = bestMs(runs, [&] { parse(tree); });
  std::string out, details;
  double renderMs = bestMs(runs, [&] { renderTree(*lang, tree, LayoutOptions{}, out, details); });
  double printMs = 1e300; // the printer alone, on the document renderTree builds
  for (int i = 0; i < runs; ++i) {
    DocArena arena;
    FormatContext context(tree, lang->rules(), arena);
    Doc root = context.node(tree.root);
    double t0 = cpuMs();
    out = printDoc(arena, root, LayoutOptions{});
    printMs = std::min(printMs, cpuMs() - t0);
  }
  FormatOptions options;
  double fullMs = bestMs(runs, [&] { formatSource(*lang, source, options); });
  size_t lines = std::count(source.begin(), source.end(), '\n');
  llvm::outs() << llvm::format("%zu lines: parse %.1f ms, render+print %.1f ms (print %.1f ms), "
                               "formatSource with checks %.1f ms\n",
                               lines, parseMs, renderMs, printMs, fullMs);
  return 0;
}
