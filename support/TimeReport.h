// Wall and CPU time of named, nested pieces of work, printed as a table as
// clang's -ftime-report prints its timers (lpuc and lpurun --time-phases).
//
// Not llvm::Timer: its CPU time is the process's (getrusage), so work on
// other threads (the scheduler's variants) is counted against whatever
// timer is running, and a timer cannot say what one thread spent. Here a
// scope's CPU time is the process's (CLOCK_PROCESS_CPUTIME_ID: a phase,
// with every thread it starts) or its own thread's
// (CLOCK_THREAD_CPUTIME_ID: one variant among others running at once).
// Nesting is explicit (a row is added under a parent row), not a stack per
// thread, so that work on a thread nests under the row that started it.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/ADT/Twine.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace lpu::support {

enum class CpuClock : uint8_t { Process, Thread };

/// Seconds of CPU time on `clock` so far.
double cpuSeconds(CpuClock clock);

/// The rows of a time report, in the order added. Thread-safe.
class TimeRecorder {
public:
  static constexpr size_t kTop = size_t(-1);
  struct Row {
    std::string name;
    size_t parent = kTop;
    double wallSeconds = 0, cpuSeconds = 0;
  };

  /// A row under `parent` (kTop: a top-level one); its index.
  size_t add(size_t parent, std::string name);
  /// Adds a measurement to `row` (a row timed several times sums them).
  void record(size_t row, double wallSeconds, double cpuSeconds);
  std::vector<Row> rows() const;

  /// The table: a header, then every row depth-first in the order added,
  /// its name indented two spaces a level, with its wall and CPU seconds
  /// and its wall time as a percentage of the total (the top-level rows'
  /// sum: rows that ran at once, on threads, may add up past their
  /// parent's), then the total.
  void print(llvm::raw_ostream &os, llvm::StringRef title) const;

private:
  mutable std::mutex mutex_;
  std::vector<Row> rows_;
};

/// A library's place to record its times: a recorder and the row its rows
/// go under. Without a recorder it records nothing, so libraries time
/// unconditionally; passed by value in their options.
class Timing {
public:
  Timing() = default;
  explicit Timing(TimeRecorder *recorder, size_t row = TimeRecorder::kTop)
      : recorder_(recorder), row_(row) {}
  /// A row under this one (in the order added), and where its own go.
  Timing add(const llvm::Twine &name) const {
    return recorder_ ? Timing(recorder_, recorder_->add(row_, name.str())) : Timing();
  }
  explicit operator bool() const { return recorder_ != nullptr; }
  TimeRecorder *recorder() const { return recorder_; }
  size_t row() const { return row_; }

private:
  TimeRecorder *recorder_ = nullptr;
  size_t row_ = TimeRecorder::kTop;
};

/// Times its own life (or until stop()) into a row: RAII.
class TimedScope {
public:
  explicit TimedScope(Timing row, CpuClock clock = CpuClock::Process);
  /// A new row `name` under `parent`, timed.
  TimedScope(Timing parent, const llvm::Twine &name, CpuClock clock = CpuClock::Process)
      : TimedScope(parent.add(name), clock) {}
  ~TimedScope() { stop(); }
  TimedScope(const TimedScope &) = delete;
  TimedScope &operator=(const TimedScope &) = delete;

  /// Records the time so far; later calls do nothing.
  void stop();
  /// Where rows nested in this one go.
  const Timing &timing() const { return row_; }

private:
  Timing row_;
  CpuClock clock_;
  std::chrono::steady_clock::time_point wall_;
  double cpu_ = 0;
  bool running_ = false;
};

} // namespace lpu::support
