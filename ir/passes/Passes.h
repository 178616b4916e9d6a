// The factories of the passes in this folder; the registry in
// ir/PassManager.cpp maps names to them. Users go through createPass().
#pragma once

#include "ir/Pass.h"

namespace lpu::ir {

std::unique_ptr<Pass> createCanonicalizePass();
std::unique_ptr<Pass> createFoldPass();
std::unique_ptr<Pass> createCSEPass();
std::unique_ptr<Pass> createDCEPass();
std::unique_ptr<Pass> createSimplifyPass();
std::unique_ptr<Pass> createSinkSlicesPass();
std::unique_ptr<Pass> createFuseElementwisePass();
/// Breaks the IR on purpose, so the tests can show the verifier catching a
/// bad pass.
std::unique_ptr<Pass> createTestBreakIRPass();

} // namespace lpu::ir
