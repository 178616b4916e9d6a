#include "driver/Opt.h"

#include "ir/Pass.h"
#include "ir/Text.h"
#include "ir/Verifier.h"

namespace lpu::driver {

namespace {
ir::PassManagerOptions managerOptions(const OptOptions &options, llvm::raw_ostream *dumps) {
  ir::PassManagerOptions pm;
  pm.printBefore = options.printBefore;
  pm.printAfter = options.printAfter;
  pm.verifyEach = options.verify;
  pm.print.locations = options.locations;
  pm.dumpStream = dumps;
  return pm;
}
} // namespace

llvm::Error checkOptOptions(const OptOptions &options) {
  if (llvm::Error e = ir::checkPassFlags(options.passes, options.printBefore, options.printAfter))
    return e;
  ir::PassManager manager(managerOptions(options, &llvm::errs()));
  return manager.addPipeline(options.passes);
}

std::optional<OptFailure> runOpt(llvm::StringRef text, llvm::StringRef name,
                                 const OptOptions &options, llvm::raw_ostream &out,
                                 llvm::raw_ostream &dumps) {
  using Kind = OptFailure::Kind;
  ir::PassManagerOptions pm = managerOptions(options, &dumps);
  ir::PassManager manager(pm);
  if (llvm::Error e = manager.addPipeline(options.passes))
    return OptFailure{Kind::Pass, llvm::toString(std::move(e))};
  auto module = ir::parseModule(text, name);
  if (!module)
    return OptFailure{Kind::Input, llvm::toString(module.takeError()) + "\n"};
  if (options.verify) {
    std::string failures;
    for (const auto &fn : (*module)->functions)
      if (std::vector<ir::VerifyError> errors = ir::verify(*fn); !errors.empty())
        failures += ir::describeVerifyErrors(*fn, errors);
    if (!failures.empty())
      return OptFailure{Kind::Input, failures};
  }
  llvm::Expected<bool> ran = manager.run(**module);
  if (!ran)
    return OptFailure{Kind::Pass, llvm::toString(ran.takeError())};
  ir::print(**module, out, pm.print);
  return std::nullopt;
}

} // namespace lpu::driver
