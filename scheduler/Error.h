// The errors scheduling reports to its caller as values: each says which
// refusal it is (scheduler/Refusals.def) with that refusal's arguments and
// carries the source location it is about, so that lpuc renders it as the
// refusal's catalogued diagnostic (E08xx) at the user's code.
#pragma once

#include "ir/IR.h"

#include <llvm/Support/Error.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace lpu::scheduler {

enum class Refusal : uint8_t {
#define REFUSAL(name, ...) name,
#include "scheduler/Refusals.def"
};

/// The enumerator's name ("SramFull"), as the diagnostic catalogue names it.
llvm::StringRef refusalName(Refusal refusal);

/// The argument types of each refusal, as Refusals.def declares them.
template <Refusal R> struct RefusalArgs;
#define REFUSAL(name, ...)                                                                         \
  template <> struct RefusalArgs<Refusal::name> {                                                  \
    using type = std::tuple<__VA_ARGS__>;                                                          \
  };
#include "scheduler/Refusals.def"

class ScheduleError : public llvm::ErrorInfo<ScheduleError> {
public:
  enum class Kind {
    Unsupported, // a program (or a form of an op) the scheduler cannot lower yet
    DoesNotFit,  // SRAM is full
  };
  static char ID;
  ScheduleError(Refusal refusal, std::vector<std::string> args, ir::Location loc,
                std::vector<std::pair<ir::Location, std::string>> notes = {});

  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

  Refusal refusal;
  Kind kind;
  /// The refusal's arguments, each one value formatted (an op's mnemonic,
  /// a dtype's name, a number): the {0}, {1}, ... of its message.
  std::vector<std::string> args;
  ir::Location loc;
  /// Secondary locations with their labels (the largest live tensors).
  std::vector<std::pair<ir::Location, std::string>> notes;
};

namespace detail {
std::string refusalArg(ir::OpKind kind);
std::string refusalArg(ir::DType dtype);
std::string refusalArg(int64_t value);
inline std::string refusalArg(std::string text) { return text; }
} // namespace detail

using RefusalNotes = std::vector<std::pair<ir::Location, std::string>>;

/// Refusal `R` at `loc` with notes (secondary locations and their labels)
/// and its arguments, each converted to the type Refusals.def declares for
/// it (a wrong count or type does not compile).
template <Refusal R, typename... Args>
llvm::Error refuseWithNotes(const ir::Location &loc, RefusalNotes notes, Args &&...args) {
  using Types = typename RefusalArgs<R>::type;
  static_assert(std::tuple_size_v<Types> == sizeof...(Args),
                "the refusal takes another number of arguments (scheduler/Refusals.def)");
  Types typed{std::forward<Args>(args)...};
  std::vector<std::string> formatted;
  std::apply([&](const auto &...value) { (formatted.push_back(detail::refusalArg(value)), ...); },
             typed);
  return llvm::make_error<ScheduleError>(R, std::move(formatted), loc, std::move(notes));
}

/// Refusal `R` at `loc` with its arguments.
template <Refusal R, typename... Args>
llvm::Error refuseAt(const ir::Location &loc, Args &&...args) {
  return refuseWithNotes<R>(loc, {}, std::forward<Args>(args)...);
}

/// Refusal `R` of `op`, at its source: the op's kind is the first argument.
template <Refusal R, typename... Args> llvm::Error refuse(const ir::Op &op, Args &&...args) {
  return refuseAt<R>(op.loc(), op.kind(), std::forward<Args>(args)...);
}

/// Whether `err` is SRAM being full (a DoesNotFit ScheduleError): then it
/// is consumed, for a caller that tries again another way; any other error
/// stays in `err` to be returned.
bool takeDoesNotFit(llvm::Error &err);

} // namespace lpu::scheduler
