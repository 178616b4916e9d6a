// The pass manager as a library: the registry, pipelines, whether anything
// changed, the verifier after each pass and the IR dumps.
#include "ir/Pass.h"
#include "ir/Text.h"

#include <gtest/gtest.h>

namespace lpu::ir {
namespace {

std::unique_ptr<Module> parse(llvm::StringRef text) {
  auto module = parseModule(text, "t.ir");
  if (!module) {
    ADD_FAILURE() << llvm::toString(module.takeError());
    return nullptr;
  }
  return std::move(*module);
}

const char *kTwoFunctions = R"(func @a {
  %x = input {name = "x"} : f32[4]
  %c = constant {value = 1.0} : f32[4]
  %y = mul %c, %x : f32[4]
  return %y {names = ["y"]}
}
func @b {
  %x = input {name = "x"} : f32[4]
  %e = exp %x : f32[4]
  return %x {names = ["x"]}
}
)";

TEST(PassManagerTest, RegistryKnowsEveryPassByName) {
  for (const std::string &name : passNames()) {
    std::unique_ptr<Pass> pass = createPass(name);
    ASSERT_NE(pass, nullptr) << name;
    EXPECT_EQ(pass->name(), name);
    EXPECT_FALSE(passDescription(name).empty()) << name;
  }
  EXPECT_EQ(createPass("no-such-pass"), nullptr);
  for (const std::string &name : defaultPipeline())
    EXPECT_NE(createPass(name), nullptr) << name;
}

TEST(PassManagerTest, UnknownPassListsTheKnownOnes) {
  PassManager pm;
  llvm::Error e = pm.addPipeline("cse, nope");
  ASSERT_TRUE(bool(e));
  std::string message = llvm::toString(std::move(e));
  EXPECT_NE(message.find("unknown pass 'nope'"), std::string::npos) << message;
  EXPECT_NE(message.find("canonicalize, cse, dce, fold"), std::string::npos) << message;
}

TEST(PassManagerTest, ReportsWhetherAnythingChanged) {
  auto module = parse(kTwoFunctions);
  ASSERT_TRUE(module);
  PassManager pm;
  ASSERT_FALSE(bool(pm.addPipeline("canonicalize,simplify,dce")));
  EXPECT_EQ(pm.size(), 3u);
  llvm::Expected<bool> changed = pm.run(*module);
  ASSERT_TRUE(bool(changed)) << llvm::toString(changed.takeError());
  EXPECT_TRUE(*changed);
  // Every pass reached every function: @a lost its mul, @b its exp.
  EXPECT_EQ(toString(*module->functions[0], {.locations = false}),
            "func @a {\n  %0 = input {name = \"x\"} : f32[4]\n"
            "  return %0 {names = [\"y\"]}\n}\n");
  EXPECT_EQ(toString(*module->functions[1], {.locations = false}),
            "func @b {\n  %0 = input {name = \"x\"} : f32[4]\n"
            "  return %0 {names = [\"x\"]}\n}\n");
  // A second run finds nothing left to do.
  changed = pm.run(*module);
  ASSERT_TRUE(bool(changed));
  EXPECT_FALSE(*changed);
}

TEST(PassManagerTest, VerifierFailureNamesThePassAndFunction) {
  auto module = parse(kTwoFunctions);
  ASSERT_TRUE(module);
  PassManager pm;
  ASSERT_FALSE(bool(pm.addPipeline("cse,test-break-ir,dce")));
  llvm::Expected<bool> changed = pm.run(*module);
  ASSERT_FALSE(bool(changed));
  std::string message = llvm::toString(changed.takeError());
  EXPECT_EQ(message.rfind("the IR does not verify after pass 'test-break-ir' on func @a:\n", 0),
            0u)
      << message;
  EXPECT_NE(message.find("differs from the inferred"), std::string::npos) << message;
  // The manager stopped there: dce did not run.
  EXPECT_EQ(module->functions[1]->size(), 3u);

  PassManagerOptions lenient;
  lenient.verifyEach = false;
  PassManager unchecked(lenient);
  ASSERT_FALSE(bool(unchecked.addPipeline("test-break-ir")));
  EXPECT_TRUE(bool(unchecked.run(*parse(kTwoFunctions))));
}

TEST(PassManagerTest, DumpsBeforeAndAfterTheNamedPasses) {
  auto module = parse(kTwoFunctions);
  ASSERT_TRUE(module);
  std::string dumps;
  llvm::raw_string_ostream os(dumps);
  PassManagerOptions options;
  options.printBefore = {"dce"};
  options.printAfter = {"all"};
  options.dumpStream = &os;
  options.print.locations = false;
  PassManager pm(options);
  ASSERT_FALSE(bool(pm.addPipeline("canonicalize,dce")));
  ASSERT_TRUE(bool(pm.run(*module)));
  os.flush();
  // Each pass runs over both functions before the next starts; the dumps
  // come once per function.
  std::vector<std::string> headers;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(dumps).split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (line.startswith("// -----//"))
      headers.push_back(line.str());
  std::vector<std::string> expected = {
      "// -----// IR Dump After canonicalize //----- //",
      "// -----// IR Dump After canonicalize //----- //",
      "// -----// IR Dump Before dce //----- //",
      "// -----// IR Dump After dce //----- //",
      "// -----// IR Dump Before dce //----- //",
      "// -----// IR Dump After dce //----- //"};
  EXPECT_EQ(headers, expected) << dumps;
  // The dump before dce on @b still holds its unused exp; the one after not.
  size_t beforeDceB = dumps.rfind("IR Dump Before dce");
  size_t afterDceB = dumps.rfind("IR Dump After dce");
  EXPECT_NE(dumps.find("func @b", beforeDceB), std::string::npos);
  EXPECT_LT(dumps.find("exp %0", beforeDceB), afterDceB);
  EXPECT_EQ(dumps.find("exp %0", afterDceB), std::string::npos);
}

} // namespace
} // namespace lpu::ir
