// Each refusal of the scheduler (scheduler/Refusals.def) against its
// diagnostic in the catalogue (frontend/Diagnostics.def, the same name):
// the message form uses exactly the arguments the refusal carries, and
// the arguments arrive formatted one value each.
#include "frontend/Diagnostics.h"
#include "scheduler/Error.h"

#include <gtest/gtest.h>

#include <llvm/ADT/StringRef.h>

#include <map>
#include <regex>
#include <set>
#include <string>

namespace lpu::scheduler {
namespace {

struct CatalogueEntry {
  std::string code, format;
};

std::map<std::string, CatalogueEntry> catalogue() {
  std::map<std::string, CatalogueEntry> out;
#define DIAG(code, severity, name, format, explanation) out[#name] = {#code, format};
#include "frontend/Diagnostics.def"
  return out;
}

/// How many arguments a formatv form uses: one past its largest {N}.
size_t argumentsUsed(const std::string &format) {
  static const std::regex placeholder(R"(\{(\d+)\})");
  size_t used = 0;
  for (auto it = std::sregex_iterator(format.begin(), format.end(), placeholder);
       it != std::sregex_iterator(); ++it)
    used = std::max(used, size_t(std::stoul((*it)[1])) + 1);
  return used;
}

TEST(Refusals, EachHasAnE08DiagnosticUsingExactlyItsArguments) {
  const auto diags = catalogue();
  std::set<std::string> refusals;
#define REFUSAL(name, ...)                                                                         \
  {                                                                                                \
    refusals.insert(#name);                                                                        \
    auto it = diags.find(#name);                                                                   \
    ASSERT_NE(it, diags.end()) << #name << " has no DIAG in frontend/Diagnostics.def";             \
    EXPECT_TRUE(llvm::StringRef(it->second.code).startswith("E08")) << #name;                      \
    EXPECT_EQ(argumentsUsed(it->second.format),                                                    \
              std::tuple_size_v<RefusalArgs<Refusal::name>::type>)                                 \
        << #name << ": " << it->second.format;                                                     \
    EXPECT_LE(std::tuple_size_v<RefusalArgs<Refusal::name>::type>,                                 \
              DiagnosticEngine::kMaxRuntimeArgs)                                                   \
        << #name << " takes more arguments than lpuc passes on";                                   \
  }
#include "scheduler/Refusals.def"
  // And every E08xx code but the internal error of scheduling is a refusal.
  for (const auto &[name, entry] : diags) {
    if (llvm::StringRef(entry.code).startswith("E08") && name != "ScheduleInternalError") {
      EXPECT_TRUE(refusals.count(name)) << entry.code << " " << name << " is no refusal";
    }
  }
}

TEST(Refusals, ArgumentsAreFormattedOneValueEach) {
  ir::Location at{"m.lpu", 3, 7};
  llvm::Error e = refuseAt<Refusal::KernelWiderThanMxm>(at, ir::OpKind::Conv2d, 321, 320u);
  bool seen = false;
  llvm::handleAllErrors(std::move(e), [&](const ScheduleError &err) {
    seen = true;
    EXPECT_EQ(err.refusal, Refusal::KernelWiderThanMxm);
    EXPECT_EQ(err.kind, ScheduleError::Kind::Unsupported);
    EXPECT_EQ(err.args, (std::vector<std::string>{"conv2d", "321", "320"}));
    EXPECT_EQ(err.loc.line, 3u);
  });
  EXPECT_TRUE(seen);
  llvm::Error d = refuseAt<Refusal::OperandDtype>(at, ir::OpKind::AvgPool2d, ir::DType::I32);
  EXPECT_EQ(llvm::toString(std::move(d)), "OperandDtype(avg_pool2d, i32)");
  llvm::Error full = refuseAt<Refusal::SramPlaneDeeperThanSlice>(at, "input 'x'", 9000, 8192);
  llvm::Error other = refuseAt<Refusal::NoLowering>(at, ir::OpKind::Iota);
  EXPECT_TRUE(takeDoesNotFit(full));
  EXPECT_FALSE(takeDoesNotFit(other));
  llvm::consumeError(std::move(other));
}

} // namespace
} // namespace lpu::scheduler
