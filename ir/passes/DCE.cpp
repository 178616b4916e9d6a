// dce: removes every op the Return does not (transitively) read. Inputs and
// params stay even when unused: they are the function's interface, and
// dropping a param would change which weights the program expects (the
// weights file contract), dropping an input the entry's argument list.
#include "ir/passes/PassUtil.h"
#include "ir/passes/Passes.h"

namespace lpu::ir {

namespace {

class DCE : public Pass {
public:
  llvm::StringRef name() const override { return "dce"; }

  bool run(Function &fn) override {
    Op *ret = fn.terminator();
    if (!ret)
      return false; // nothing defines what is live; the verifier reports it
    llvm::DenseSet<const Op *> live;
    std::vector<const Op *> work{ret};
    live.insert(ret);
    while (!work.empty()) {
      const Op *op = work.back();
      work.pop_back();
      for (const Op *operand : op->operands())
        if (live.insert(operand).second)
          work.push_back(operand);
    }
    llvm::DenseSet<const Op *> dead;
    for (const std::unique_ptr<Op> &op : fn.ops())
      if (!live.contains(op.get()) && op->kind() != OpKind::Input &&
          op->kind() != OpKind::Param)
        dead.insert(op.get());
    eraseOps(fn, dead);
    return !dead.empty();
  }
};

} // namespace

std::unique_ptr<Pass> createDCEPass() { return std::make_unique<DCE>(); }

} // namespace lpu::ir
