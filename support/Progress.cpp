#include "support/Progress.h"

#include <llvm/Support/Format.h>
#include <llvm/Support/Process.h>

#include <chrono>

namespace lpu::support {

namespace {

/// 1234567 -> "1,234,567".
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

/// 2134567.0 -> "2.1M"; below a thousand, whole.
std::string compact(double v) {
  const char *suffixes[] = {"", "k", "M", "G", "T"};
  size_t i = 0;
  while (v >= 1000 && i + 1 < std::size(suffixes)) {
    v /= 1000;
    ++i;
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  if (i == 0)
    os << llvm::format("%.0f", v);
  else
    os << llvm::format("%.1f", v) << suffixes[i];
  return os.str();
}

/// "0:07", "12:34", "1:02:03".
std::string clockTime(double seconds) {
  uint64_t s = seconds > 0 ? uint64_t(seconds) : 0;
  std::string out;
  llvm::raw_string_ostream os(out);
  if (s >= 3600)
    os << s / 3600 << ":" << llvm::format("%02u", unsigned(s / 60 % 60));
  else
    os << s / 60;
  os << ":" << llvm::format("%02u", unsigned(s % 60));
  return os.str();
}

constexpr llvm::StringLiteral kErase = "\r\x1b[K";

} // namespace

ProgressSink::~ProgressSink() = default;

ProgressLine::ProgressLine(llvm::raw_ostream &os, Options options)
    : os_(os), options_(std::move(options)) {
  const bool ownClock = !options_.clock;
  if (ownClock)
    options_.clock = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  start_ = lastDraw_ = now();
  if (ownClock && options_.interval > 0)
    ticker_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!finished_) {
        wake_.wait_for(lock, std::chrono::duration<double>(options_.interval));
        if (!finished_)
          drawIfDue();
      }
    });
}

ProgressLine::~ProgressLine() { finish(); }

double ProgressLine::now() const { return options_.clock(); }

void ProgressLine::status(unsigned depth, llvm::StringRef text) {
  std::lock_guard<std::mutex> lock(mutex_);
  statuses_.resize(depth + 1);
  statuses_[depth] = text.str();
  count_.reset();
  dirty_ = true;
  drawIfDue();
}

void ProgressLine::count(llvm::StringRef unit, uint64_t done, uint64_t total) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!count_ || count_->unit != unit || done < count_->done)
    count_ = Count{unit.str(), done, total, now()};
  count_->done = done;
  count_->total = total;
  dirty_ = true;
  drawIfDue();
}

void ProgressLine::tick() {
  std::lock_guard<std::mutex> lock(mutex_);
  drawIfDue();
}

void ProgressLine::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  erase();
}

void ProgressLine::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    erase();
    finished_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable())
    ticker_.join();
}

void ProgressLine::printAbove(llvm::function_ref<void()> print) {
  std::lock_guard<std::mutex> lock(mutex_);
  erase();
  print();
  dirty_ = true;
}

std::string ProgressLine::text() {
  std::lock_guard<std::mutex> lock(mutex_);
  return render(now());
}

std::string ProgressLine::render(double at) const {
  std::string out = options_.prefix.empty() ? "" : options_.prefix + " ";
  out += clockTime(at - start_);
  const char *separator = " ";
  for (const std::string &s : statuses_) {
    if (s.empty())
      continue;
    out += separator + s;
    separator = ": ";
  }
  if (count_) {
    out += separator;
    out += grouped(count_->done);
    if (count_->total)
      out += " of " + grouped(count_->total);
    out += " " + count_->unit;
    if (count_->total)
      out += " (" + std::to_string(count_->done * 100 / count_->total) + "%)";
    if (at > count_->since && count_->done > 0)
      out += ", " + compact(double(count_->done) / (at - count_->since)) + " " + count_->unit + "/s";
  }
  if (options_.width > 1 && out.size() > options_.width - 1)
    out.resize(options_.width - 1);
  return out;
}

void ProgressLine::drawIfDue() {
  if (finished_)
    return;
  const double at = now();
  if (at - lastDraw_ < options_.interval || (statuses_.empty() && !count_))
    return;
  std::string text = render(at);
  // The elapsed time moves every second: redraw then even without reports.
  if (drawn_ && !dirty_ && text == shown_)
    return;
  os_ << kErase << text;
  os_.flush();
  shown_ = std::move(text);
  drawn_ = true;
  dirty_ = false;
  lastDraw_ = at;
}

void ProgressLine::erase() {
  if (!drawn_)
    return;
  os_ << kErase;
  os_.flush();
  drawn_ = false;
  dirty_ = true;
}

bool ProgressLine::wanted(bool force, bool quiet) {
  if (quiet)
    return false;
  return force || llvm::sys::Process::StandardErrIsDisplayed();
}

ProgressLine::Options ProgressLine::forStderr(llvm::StringRef tool) {
  Options options;
  options.prefix = tool.str();
  options.width = llvm::sys::Process::StandardErrColumns();
  return options;
}

ProgressClearingStream::ProgressClearingStream(llvm::raw_ostream &target, ProgressLine *line)
    : llvm::raw_ostream(/*unbuffered=*/true), target_(target), line_(line) {
  enable_colors(true); // the writer decides whether to colour
}

ProgressClearingStream::~ProgressClearingStream() = default;

void ProgressClearingStream::write_impl(const char *ptr, size_t size) {
  position_ += size;
  if (!line_) {
    target_.write(ptr, size);
    return;
  }
  line_->printAbove([&] {
    target_.write(ptr, size);
    target_.flush();
  });
}

} // namespace lpu::support
