#include "support/TimeReport.h"

#include <llvm/Support/FormatVariadic.h>

#include <ctime>
#include <functional>

namespace lpu::support {

double cpuSeconds(CpuClock clock) {
  timespec ts{};
  clock_gettime(clock == CpuClock::Thread ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

size_t TimeRecorder::add(size_t parent, std::string name) {
  std::lock_guard<std::mutex> lock(mutex_);
  rows_.push_back(Row{std::move(name), parent, 0, 0});
  return rows_.size() - 1;
}

void TimeRecorder::record(size_t row, double wallSeconds, double cpuSeconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  rows_.at(row).wallSeconds += wallSeconds;
  rows_.at(row).cpuSeconds += cpuSeconds;
}

std::vector<TimeRecorder::Row> TimeRecorder::rows() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rows_;
}

void TimeRecorder::print(llvm::raw_ostream &os, llvm::StringRef title) const {
  const std::vector<Row> all = rows();
  std::vector<std::vector<size_t>> children(all.size() + 1); // the last: top level
  double totalWall = 0, totalCpu = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const bool top = all[i].parent == kTop || all[i].parent >= all.size();
    children[top ? all.size() : all[i].parent].push_back(i);
    if (top) {
      totalWall += all[i].wallSeconds;
      totalCpu += all[i].cpuSeconds;
    }
  }
  const std::string rule(72, '-');
  os << "===" << rule << "===\n";
  os << std::string(title.size() < 78 ? (78 - title.size()) / 2 : 0, ' ') << title << "\n";
  os << "===" << rule << "===\n";
  os << llvm::formatv("  {0,10}  {1,10}  {2,7}  {3}\n", "wall (s)", "cpu (s)", "wall %", "name");
  auto line = [&](double wall, double cpu, llvm::StringRef name, unsigned depth) {
    const double percent = totalWall > 0 ? 100 * wall / totalWall : 0;
    os << llvm::formatv("  {0,10:f4}  {1,10:f4}  {2,6:f1}%  {3}{4}\n", wall, cpu, percent,
                        std::string(2 * depth, ' '), name);
  };
  std::function<void(size_t, unsigned)> walk = [&](size_t parent, unsigned depth) {
    for (size_t i : children[parent]) {
      line(all[i].wallSeconds, all[i].cpuSeconds, all[i].name, depth);
      walk(i, depth + 1);
    }
  };
  walk(all.size(), 0);
  line(totalWall, totalCpu, "total", 0);
}

TimedScope::TimedScope(Timing row, CpuClock clock) : row_(row), clock_(clock) {
  if (!row_)
    return;
  running_ = true;
  wall_ = std::chrono::steady_clock::now();
  cpu_ = cpuSeconds(clock_);
}

void TimedScope::stop() {
  if (!running_)
    return;
  running_ = false;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
  row_.recorder()->record(row_.row(), wall, cpuSeconds(clock_) - cpu_);
}

} // namespace lpu::support
