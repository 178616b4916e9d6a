// test-break-ir: a deliberately wrong pass, for the tests that show the pass
// manager's verifier naming the pass that broke the IR. It gives the first
// op that has operands (the Return aside) a result type with one more axis.
#include "ir/passes/Passes.h"

namespace lpu::ir {

namespace {

class TestBreakIR : public Pass {
public:
  llvm::StringRef name() const override { return "test-break-ir"; }

  bool run(Function &fn) override {
    for (const std::unique_ptr<Op> &op : fn.ops()) {
      if (op->operands().empty() || op->kind() == OpKind::Return)
        continue;
      Type broken = op->type();
      broken.shape.push_back(3);
      op->setType(broken);
      return true;
    }
    return false;
  }
};

} // namespace

std::unique_ptr<Pass> createTestBreakIRPass() { return std::make_unique<TestBreakIR>(); }

} // namespace lpu::ir
