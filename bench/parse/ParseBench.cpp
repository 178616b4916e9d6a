// Parser throughput: generates a realistic .lpu program of N lines (models,
// generic functions, loops, slices, comments), parses it cold (first parse in
// the process: ANTLR's DFA cache is empty) and warm (best of several), then
// the same for 2N lines, and prints lines per second and the growth factor.
// Times are the thread's CPU time, so that other work on a shared machine
// disturbs them less than wall time would.
#include "frontend/Parser.h"

#include <llvm/Support/Format.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <string>

namespace {

/// One block of about 25 lines; `i` makes every name distinct.
std::string block(int i) {
  std::string n = std::to_string(i);
  return "/// Block " + n + ": a residual MLP with a gate.\n"
         "model Block" + n + "<D, F = 4 * D> {\n"
         "  param up: nn.Linear<D, F>\n"
         "  param gate: nn.Linear<D, F>\n"
         "  param down: nn.Linear<F, D>\n"
         "  param ln: nn.LayerNorm<D> // pre-norm\n"
         "\n"
         "  fn forward<B, S>(x: f16[B, S, D]) -> f16[B, S, D] where D % 64 == 0 {\n"
         "    let h = ln(x)\n"
         "    let g = sigmoid(gate(h)) * up(h)\n"
         "    var acc = x + down(g)\n"
         "    for k in 0..2 {\n"
         "      acc = acc + 0.5 * acc[:, 0:S, :]\n"
         "    }\n"
         "    if D > 128 { acc = acc * 2.0 } else { acc = acc - 1e-3 }\n"
         "    return acc\n"
         "  }\n"
         "}\n"
         "\n"
         "fn helper" + n + "<..B, N, M>(a: f16[..B, N, M], b: f16[M, N]) -> f16[..B, N, N]\n"
         "    where N <= 4096 {\n"
         "  let p = a @ b + reshape(iota<N>(), [1, N])\n"
         "  return softmax(f32(p) / sqrt(f32(M)), axis = -1) ** 2\n"
         "}\n"
         "\n";
}

std::string program(size_t lines) {
  std::string text = "import std.nn\n\n";
  const std::string sample = block(0);
  size_t perBlock = std::count(sample.begin(), sample.end(), '\n');
  for (size_t i = 0; 2 + i * perBlock < lines; ++i)
    text += block(static_cast<int>(i));
  return text;
}

struct Timing {
  size_t lines;
  double coldSeconds;
  double warmSeconds;
  bool fullLL;
};

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double parseOnce(const std::string &text, bool *fullLL) {
  llvm::SourceMgr sources;
  unsigned id = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "bench.lpu"),
                                           llvm::SMLoc());
  lpu::DiagnosticEngine diags(sources);
  lpu::CollectingConsumer sink;
  diags.setConsumer(&sink);
  lpu::ParseStats stats;
  double start = threadCpuSeconds();
  auto module = lpu::parseModule(diags, id, &stats); // frees ANTLR's tree, unlike lpuc
  double seconds = threadCpuSeconds() - start;
  if (diags.hasErrors()) {
    llvm::errs() << "parse_bench: the generated program has errors\n";
    std::exit(1);
  }
  *fullLL = stats.usedFullLL;
  if (std::getenv("PARSE_BENCH_PHASES"))
    llvm::errs() << llvm::format("  lex %.3f  parse %.3f  ast %.3f  teardown %.3f\n",
                                 stats.lexSeconds, stats.parseSeconds, stats.buildSeconds,
                                 stats.teardownSeconds);
  return seconds;
}

Timing measure(size_t lines, bool cold) {
  std::string text = program(lines);
  Timing t{static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), 0, 1e9, false};
  t.coldSeconds = cold ? parseOnce(text, &t.fullLL) : 0;
  for (int r = 0; r < 3; ++r)
    t.warmSeconds = std::min(t.warmSeconds, parseOnce(text, &t.fullLL));
  return t;
}

} // namespace

int main(int argc, char **argv) {
  size_t lines = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 50000;
  Timing one = measure(lines, /*cold=*/true);
  Timing two = measure(2 * lines, /*cold=*/false);
  auto row = [](const char *label, const Timing &t) {
    llvm::outs() << llvm::format("%-6s %8zu lines  warm %8.3f s  %10.0f lines/s", label, t.lines,
                                 t.warmSeconds, t.lines / t.warmSeconds);
    if (t.coldSeconds > 0)
      llvm::outs() << llvm::format("   cold %8.3f s  %10.0f lines/s", t.coldSeconds,
                                   t.lines / t.coldSeconds);
    llvm::outs() << (t.fullLL ? "  (needed full LL)" : "  (SLL only)") << "\n";
  };
  llvm::outs() << "parser throughput (generated program, thread CPU time, best of 3 warm parses)\n";
  row("N", one);
  row("2N", two);
  llvm::outs() << llvm::format("growth when doubled: %.2fx time for %.2fx lines\n",
                               two.warmSeconds / one.warmSeconds,
                               double(two.lines) / double(one.lines));
  return 0;
}
