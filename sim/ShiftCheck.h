// A mutation test of the simulator's checks. The simulator must check a
// schedule, not trust it: moving any instruction of a compiled program one
// cycle (and the rest of its queue with it) must either be refused as a
// schedule violation or change nothing in the outputs. A shift that runs
// to different outputs is a hazard the simulator does not see (an install
// taking a weight buffer before its last row has landed, say).
//
// The shifts of instruction i of a queue: one more cycle of `nop` before it
// (+1: the nop before it grows, or a `nop 1` is put in) and one less (-1:
// only where a nop precedes it). A `repeat`'s delay moves by +1 and -1 (no
// lower than the repeated instruction's issue interval), which moves its
// j-th repetition by j cycles. Every run takes the same inputs and
// parameters; a shift is refused when a timing-only run, or else the run
// with data, stops with a violation, and identical when every output byte
// equals the unshifted run's.
#pragma once

#include "backend/ChipDescription.h"
#include "backend/Program.h"
#include "sim/Session.h"

#include <llvm/Support/Error.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lpu::sim {

struct ShiftCheckOptions {
  /// Entry, weights and host threads as for a run. Inputs not given are
  /// drawn at random (tensor::randomTensor with `inputSeed`) at the shapes
  /// of the entry's bucket `bucket`.
  SessionOptions session;
  unsigned bucket = 0;
  uint64_t inputSeed = 1;
  /// 0: every instruction. Otherwise at most this many, spread evenly over
  /// the instructions in (chip, queue, index) order: instruction
  /// floor(k * total / sample) for k = 0 .. sample-1.
  size_t sample = 0;
};

struct ShiftCheckReport {
  size_t instructions = 0; // that a shift applies to (all but nops)
  size_t sampled = 0;
  size_t shifts = 0; // tried
  size_t refused = 0, identical = 0;
  int64_t cycles = 0; // of the unshifted run
  /// Output elements of the unshifted run that are NaN or infinite, out of
  /// all: a run whose outputs are all NaN would hide changed values.
  size_t nonFinite = 0, elements = 0;
  /// Violations by kind (the message after its cycle, digits dropped).
  std::map<std::string, size_t> refusedBy;
  /// Shifts that ran to different outputs: "chip 0 queue mxm0 instruction
  /// 7 (iw p0) -1: output 'y' differs in 320 bytes".
  std::vector<std::string> different;
};

llvm::Expected<ShiftCheckReport> checkShifts(const backend::Program &program,
                                             const backend::ChipDescription &chip,
                                             const ShiftCheckOptions &options);

/// "shifts: 1234 refused, 56 identical, 0 different (of 645 instructions,
/// 645 sampled; 12345 cycles)", the kinds of refusal with `verbose`, then a
/// line per different shift.
std::string formatShiftReport(const ShiftCheckReport &report, bool verbose);

} // namespace lpu::sim
