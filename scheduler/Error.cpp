#include "scheduler/Error.h"

namespace lpu::scheduler {

char ScheduleError::ID = 0;

llvm::StringRef refusalName(Refusal refusal) {
  switch (refusal) {
#define REFUSAL(name, ...)                                                                         \
  case Refusal::name:                                                                              \
    return #name;
#include "scheduler/Refusals.def"
  }
  return "";
}

namespace {
bool isSramRefusal(Refusal refusal) {
  return refusal == Refusal::SramFull || refusal == Refusal::SramChunksInHemisphere ||
         refusal == Refusal::SramPlaneDeeperThanSlice;
}
} // namespace

ScheduleError::ScheduleError(Refusal refusal, std::vector<std::string> args, ir::Location loc,
                             std::vector<std::pair<ir::Location, std::string>> notes)
    : refusal(refusal), kind(isSramRefusal(refusal) ? Kind::DoesNotFit : Kind::Unsupported),
      args(std::move(args)), loc(std::move(loc)), notes(std::move(notes)) {}

// The message's words live in the diagnostic catalogue, which lpuc reads;
// here (tests, logs) the refusal's name and its arguments.
void ScheduleError::log(llvm::raw_ostream &os) const {
  os << refusalName(refusal) << "(";
  for (size_t i = 0; i < args.size(); ++i)
    os << (i ? ", " : "") << args[i];
  os << ")";
  for (const auto &[loc, label] : notes)
    os << "\n  note: " << label;
}

bool takeDoesNotFit(llvm::Error &err) {
  bool doesNotFit = false;
  err = llvm::handleErrors(std::move(err), [&](std::unique_ptr<ScheduleError> e) -> llvm::Error {
    if (e->kind != ScheduleError::Kind::DoesNotFit)
      return llvm::Error(std::move(e));
    doesNotFit = true;
    return llvm::Error::success();
  });
  if (doesNotFit)
    (void)bool(err); // success, and seen as checked
  return doesNotFit;
}

namespace detail {
std::string refusalArg(ir::OpKind kind) { return ir::mnemonic(kind).str(); }
std::string refusalArg(ir::DType dtype) { return tensor::dtypeName(dtype).str(); }
std::string refusalArg(int64_t value) { return std::to_string(value); }
} // namespace detail

} // namespace lpu::scheduler
