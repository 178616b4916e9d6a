// How far long work has got, for a person watching a terminal: the handle
// the libraries report through (Progress, passed by value in their options:
// scheduler::ScheduleOptions, sim::RunOptions, interp::InterpreterOptions)
// and the one line of stderr the tools draw it on (ProgressLine), redrawn in
// place and erased at the end. A library never prints: it reports, and a
// report never changes what the work computes.
#pragma once

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/ADT/Twine.h>
#include <llvm/Support/raw_ostream.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace lpu::support {

/// Where reports go. Every method may be called from any thread (the
/// scheduler's variants report from theirs).
class ProgressSink {
public:
  virtual ~ProgressSink();
  /// What is being done at `depth`: 0 the phase, deeper what is being done
  /// inside it. Clears the deeper statuses and the count.
  virtual void status(unsigned depth, llvm::StringRef text) = 0;
  /// How far a count has got: `done` of `total` (0: not known) `unit`s.
  /// A count lower than the last one, or of another unit, starts again:
  /// its rate is measured from then.
  virtual void count(llvm::StringRef unit, uint64_t done, uint64_t total) = 0;
};

/// A library's place to report: a sink and the depth of its own status.
/// Without a sink every call does nothing (and builds no string), so
/// libraries report unconditionally.
class Progress {
public:
  Progress() = default;
  explicit Progress(ProgressSink *sink, unsigned depth = 0) : sink_(sink), depth_(depth) {}

  void status(const llvm::Twine &text) const {
    if (sink_)
      sink_->status(depth_, text.str());
  }
  void count(llvm::StringRef unit, uint64_t done, uint64_t total = 0) const {
    if (sink_)
      sink_->count(unit, done, total);
  }
  /// Where the work inside this one reports: one level deeper.
  Progress inner() const { return Progress(sink_, depth_ + 1); }
  explicit operator bool() const { return sink_ != nullptr; }

private:
  ProgressSink *sink_ = nullptr;
  unsigned depth_ = 0;
};

/// The progress of one tool on one line of a stream (stderr), drawn as
/// "\r\x1b[K" (carriage return, erase the line) and the text, throttled,
/// and erased by clear() or the destructor:
///
///   lpuc 0:12 schedule: encode S=128 (2 of 4): variant 3 of 5
///   lpurun 0:03 simulate: 1,234,567 cycles, 2.1M cycles/s
///
/// Thread-safe. A ticker thread redraws what changed since the last draw
/// and the elapsed time, so a long stretch without reports still shows the
/// last one and a moving clock.
class ProgressLine : public ProgressSink {
public:
  struct Options {
    /// The tool's name, first on the line.
    std::string prefix;
    /// Seconds between draws (0: every report draws, in the order made;
    /// tests). The first draw also waits this long, so that a quick run
    /// draws nothing.
    double interval = 0.25;
    /// The columns the line may take (0: no limit): a longer one would
    /// wrap, and erasing would erase only its last row.
    unsigned width = 0;
    /// Seconds on a monotonic clock; default steady_clock. A test's own
    /// clock also stops the ticker (the test calls tick()).
    std::function<double()> clock;
  };

  ProgressLine(llvm::raw_ostream &os, Options options);
  ~ProgressLine() override;
  ProgressLine(const ProgressLine &) = delete;
  ProgressLine &operator=(const ProgressLine &) = delete;

  void status(unsigned depth, llvm::StringRef text) override;
  void count(llvm::StringRef unit, uint64_t done, uint64_t total) override;

  /// Draws what is pending if it is due (the ticker calls it).
  void tick();
  /// Erases the line, if drawn; a later report draws it again.
  void clear();
  /// Erases the line and stops the ticker: nothing is drawn any more.
  void finish();
  /// Runs `print` (other output to the same stream) with the line erased
  /// and nothing drawn meanwhile; the next report or tick draws it again.
  void printAbove(llvm::function_ref<void()> print);
  /// The line's text as it would be drawn now.
  std::string text();

  /// Whether a tool shows progress: `--progress` forces it, `--quiet`
  /// (which the tools refuse together with it) silences it, else only when
  /// stderr is a terminal.
  static bool wanted(bool force, bool quiet);
  /// The options for stderr: the tool's name, and the terminal's width.
  static Options forStderr(llvm::StringRef tool);

private:
  double now() const;
  std::string render(double at) const; // under mutex_
  void drawIfDue();                    // under mutex_
  void erase();                        // under mutex_

  llvm::raw_ostream &os_;
  Options options_;
  std::mutex mutex_;
  std::vector<std::string> statuses_;
  struct Count {
    std::string unit;
    uint64_t done = 0, total = 0;
    double since = 0;
  };
  std::optional<Count> count_;
  double start_ = 0, lastDraw_ = 0;
  bool drawn_ = false, dirty_ = false, finished_ = false;
  std::string shown_; // the text drawn last
  std::condition_variable wake_;
  std::thread ticker_;
};

/// A stream that writes to `target` with the progress line erased first:
/// for what else prints to the same terminal while the line shows
/// (diagnostics, IR dumps). Unbuffered; colours pass through.
class ProgressClearingStream : public llvm::raw_ostream {
public:
  ProgressClearingStream(llvm::raw_ostream &target, ProgressLine *line);
  ~ProgressClearingStream() override;
  bool is_displayed() const override { return target_.is_displayed(); }

private:
  void write_impl(const char *ptr, size_t size) override;
  uint64_t current_pos() const override { return position_; }

  llvm::raw_ostream &target_;
  ProgressLine *line_;
  uint64_t position_ = 0;
};

} // namespace lpu::support
