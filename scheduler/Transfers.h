// One chip's sends and receives in a multi-chip function (Transfers.cpp).
#pragma once

#include "scheduler/Lowering.h"
#include "scheduler/Scheduler.h"

#include <map>
#include <string>

namespace lpu::scheduler {

/// Whether `name` is an input `traffic` receives from another chip.
bool received(const ChipTraffic *traffic, llvm::StringRef name);
/// Whether `name` is an output `traffic` sends to another chip.
bool sentBy(const ChipTraffic *traffic, llvm::StringRef name);

/// Places the recvs of every value `traffic` receives, each vector written
/// to its input's SRAM no earlier than it arrives.
llvm::Error receiveAll(const ir::Function &fn, const ChipTraffic &traffic, LoweringContext &ctx);

/// Places the sends of every value `traffic` sends (`views`: where each is
/// stored), each vector as soon as it is written and its link is free;
/// records the arrivals in `schedule.sent`.
llvm::Error sendAll(const ir::Function &fn, const ChipTraffic &traffic,
                    const std::map<std::string, TensorView> &views, LoweringContext &ctx,
                    Schedule &schedule);

} // namespace lpu::scheduler
