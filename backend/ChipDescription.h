// A chip description: every number the simulator and the compiler need about
// one chip, read from a data file (backend/chips/NAME.chip) so that a user can
// model another chip without touching code. The text format is documented in
// docs/isa.md ("Chip description files").
#pragma once

#include "backend/Isa.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lpu::backend {

struct ChipDescription {
  std::string name;
  double clockMHz = 900;
  unsigned lanes = 320;
  unsigned superlanes = 20;
  unsigned memSlices = 88;          // split evenly between two hemispheres
  unsigned memVectors = 8192;       // vectors of `lanes` bytes per slice
  unsigned memReadPorts = 1;        // vector reads per slice per cycle
  unsigned memWritePorts = 1;       // vector writes per slice per cycle
  unsigned streamsPerDirection = 32;
  unsigned mxmPlanes = 4;           // split evenly between two hemispheres
  unsigned mxmDim = 320;            // a plane is mxmDim x mxmDim
  unsigned mxmAccRows = 4096;       // accumulator rows per plane
  unsigned vxmAlusPerLane = 16;
  unsigned c2cLinks = 16;
  unsigned c2cCyclesPerVector = 21; // serialisation of one 320-byte vector
  unsigned c2cHopCycles = 216;      // link latency, first byte
  /// Queues per unit kind, indexed by UnitKind.
  std::array<unsigned, kNumUnitKinds> queues{88, 16, 12, 28, 16};

  /// latency[op][dtype]: cycles from issue to the result on its stream (or
  /// in SRAM / the accumulators). issue[op][dtype]: cycles before the same
  /// queue may issue again. A missing dtype falls back to the row for "*".
  struct Timing {
    unsigned latency = 1;
    unsigned issue = 1;
  };
  std::map<std::pair<Opcode, int>, Timing> timing; // dtype -1 is "*"

  Timing timingOf(Opcode op, DType type) const;
  /// Resolves `timing` into a flat table that timingOf() reads (the
  /// scheduler asks for every instruction it tries). The parser calls it;
  /// whoever changes `timing` afterwards must call it again.
  void indexTimings();

private:
  static constexpr size_t kTimingDTypes = 8; // more than DType's values
  std::vector<Timing> timingTable_;          // [op * kTimingDTypes + dtype]

public:

  // Layout along the east-west axis (one position per slice column):
  // MXM(W) SXM/C2C(W) MEM(W)... VXM MEM(E)... SXM/C2C(E) MXM(E).
  unsigned width() const { return memSlices + 5; }
  bool isEastSlice(unsigned slice) const { return slice >= memSlices / 2; }
  unsigned slicePosition(unsigned slice) const {
    return isEastSlice(slice) ? slice + 3 : slice + 2;
  }
  unsigned vxmPosition() const { return memSlices / 2 + 2; }
  unsigned planePosition(unsigned plane) const { return plane < mxmPlanes / 2 ? 0 : width() - 1; }
  unsigned sxmPosition(bool east) const { return east ? width() - 2 : 1; }
  unsigned linkPosition(unsigned link) const { return sxmPosition(link >= c2cLinks / 2); }
  /// Whether queue `index` of `kind` sits in the eastern hemisphere (the
  /// VXM's queues are central: nullopt).
  std::optional<bool> queueIsEast(UnitKind kind, unsigned index) const;

  uint64_t sramBytes() const { return uint64_t(memSlices) * memVectors * lanes; }

  /// A hash of the canonical text below: programs record it, and a program
  /// built for another chip description is refused.
  uint64_t fingerprint() const;
  /// The canonical text form (comments dropped, fixed order).
  std::string print() const;
};

/// Parses a chip description. `bufferName` names the file in errors.
llvm::Expected<ChipDescription> parseChipDescription(llvm::StringRef text,
                                                     llvm::StringRef bufferName);

/// `nameOrPath` is a file path (contains '/' or ends in ".chip") or the name
/// of a chip file shipped in backend/chips (e.g. "groqchip1"). The
/// LPU_CHIP_PATH environment variable, if set, is searched first.
llvm::Expected<ChipDescription> loadChipDescription(llvm::StringRef nameOrPath);

inline constexpr llvm::StringLiteral kDefaultChip = "groqchip1";

} // namespace lpu::backend
