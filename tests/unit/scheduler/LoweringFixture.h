// What a unit test of the lowering machinery builds on: groqchip1's chip
// file, an empty schedule, its placer and SRAM allocator, and a lowering
// context over them.
#pragma once

#include "scheduler/Lowering.h"

namespace lpu::scheduler {

struct LoweringFixture {
  backend::ChipDescription chip = *backend::loadChipDescription("groqchip1");
  Schedule schedule;
  Placer placer{chip, schedule};
  SramAllocator sram{chip};
  LoweringContext ctx{chip, placer, sram};
};

} // namespace lpu::scheduler
