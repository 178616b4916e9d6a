#include "backend/ChipDescription.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/xxhash.h>

#include <cstdio>
#include <cstdlib>

#ifndef LPU_CHIP_DIR
#define LPU_CHIP_DIR "backend/chips"
#endif

namespace lpu::backend {

namespace {
// The simulator keeps stream values in a ring of this many cycles; a latency
// must leave room for the value to cross the whole chip.
constexpr unsigned kMaxLatency = 100;

struct UIntField {
  llvm::StringLiteral key;
  unsigned ChipDescription::*field;
};
const UIntField kUIntFields[] = {
    {"lanes", &ChipDescription::lanes},
    {"superlanes", &ChipDescription::superlanes},
    {"mem_slices", &ChipDescription::memSlices},
    {"mem_vectors_per_slice", &ChipDescription::memVectors},
    {"mem_read_ports", &ChipDescription::memReadPorts},
    {"mem_write_ports", &ChipDescription::memWritePorts},
    {"streams_per_direction", &ChipDescription::streamsPerDirection},
    {"mxm_planes", &ChipDescription::mxmPlanes},
    {"mxm_dim", &ChipDescription::mxmDim},
    {"mxm_acc_rows", &ChipDescription::mxmAccRows},
    {"vxm_alus_per_lane", &ChipDescription::vxmAlusPerLane},
    {"c2c_links", &ChipDescription::c2cLinks},
    {"c2c_cycles_per_vector", &ChipDescription::c2cCyclesPerVector},
    {"c2c_hop_cycles", &ChipDescription::c2cHopCycles},
};

llvm::Error lineError(llvm::StringRef buffer, unsigned line, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 buffer + ":" + llvm::Twine(line) + ": " + msg);
}
} // namespace

ChipDescription::Timing ChipDescription::timingOf(Opcode op, DType type) const {
  size_t at = size_t(op) * kTimingDTypes + size_t(type);
  if (at < timingTable_.size())
    return timingTable_[at];
  auto it = timing.find({op, int(type)});
  if (it != timing.end())
    return it->second;
  it = timing.find({op, -1});
  if (it != timing.end())
    return it->second;
  return Timing{};
}

std::optional<bool> ChipDescription::queueIsEast(UnitKind kind, unsigned index) const {
  if (kind == UnitKind::Vxm)
    return std::nullopt;
  return index >= queues[unsigned(kind)] / 2;
}

std::string ChipDescription::print() const {
  std::string out;
  auto line = [&](llvm::StringRef key, const llvm::Twine &value) {
    out += (key + " " + value + "\n").str();
  };
  line("name", name);
  char clock[32];
  std::snprintf(clock, sizeof clock, "%g", clockMHz);
  line("clock_mhz", clock);
  for (const UIntField &f : kUIntFields)
    line(f.key, llvm::Twine(this->*(f.field)));
  for (unsigned k = 0; k < kNumUnitKinds; ++k)
    line("queues", unitKindName(UnitKind(k)) + " " + llvm::Twine(queues[k]));
  for (const auto &[key, t] : timing) {
    llvm::StringRef dt = key.second < 0 ? "*" : tensor::dtypeName(DType(key.second));
    line("timing", opcodeInfo(key.first).mnemonic + " " + dt + " " + llvm::Twine(t.latency) +
                       " " + llvm::Twine(t.issue));
  }
  return out;
}

uint64_t ChipDescription::fingerprint() const { return llvm::xxHash64(print()); }

void ChipDescription::indexTimings() {
  static_assert(std::size(tensor::kAllDTypes) <= kTimingDTypes);
  timingTable_.clear(); // timingOf() below reads the map
  std::vector<Timing> table(kNumOpcodes * kTimingDTypes);
  for (unsigned op = 0; op < kNumOpcodes; ++op)
    for (DType type : tensor::kAllDTypes)
      table[op * kTimingDTypes + size_t(type)] = timingOf(Opcode(op), type);
  timingTable_ = std::move(table);
}

llvm::Expected<ChipDescription> parseChipDescription(llvm::StringRef text,
                                                     llvm::StringRef bufferName) {
  ChipDescription chip;
  chip.name.clear();
  unsigned lineNo = 0;
  llvm::SmallVector<llvm::StringRef, 8> lines;
  text.split(lines, '\n');
  for (llvm::StringRef raw : lines) {
    ++lineNo;
    llvm::StringRef line = raw.split('#').first.trim();
    if (line.empty())
      continue;
    llvm::SmallVector<llvm::StringRef, 8> words;
    line.split(words, ' ', -1, false);
    llvm::StringRef key = words[0];
    auto needWords = [&](size_t n) -> llvm::Error {
      if (words.size() != n)
        return lineError(bufferName, lineNo,
                         "'" + key + "' takes " + llvm::Twine(n - 1) + " value(s)");
      return llvm::Error::success();
    };
    auto parseUInt = [&](llvm::StringRef word, unsigned &out) -> llvm::Error {
      if (word.getAsInteger(10, out))
        return lineError(bufferName, lineNo, "expected a whole number, found '" + word + "'");
      return llvm::Error::success();
    };
    if (key == "name") {
      if (auto e = needWords(2))
        return e;
      chip.name = words[1].str();
      continue;
    }
    if (key == "clock_mhz") {
      if (auto e = needWords(2))
        return e;
      if (words[1].getAsDouble(chip.clockMHz) || chip.clockMHz <= 0)
        return lineError(bufferName, lineNo, "bad clock '" + words[1] + "'");
      continue;
    }
    if (key == "queues") {
      if (auto e = needWords(3))
        return e;
      bool found = false;
      for (unsigned k = 0; k < kNumUnitKinds; ++k)
        if (words[1] == unitKindName(UnitKind(k))) {
          if (auto e = parseUInt(words[2], chip.queues[k]))
            return e;
          found = true;
        }
      if (!found)
        return lineError(bufferName, lineNo, "unknown unit '" + words[1] + "'");
      continue;
    }
    if (key == "timing") {
      if (auto e = needWords(5))
        return e;
      auto op = parseMnemonic(words[1]);
      if (!op)
        return lineError(bufferName, lineNo, "unknown instruction '" + words[1] + "'");
      int dt = -1;
      if (words[2] != "*") {
        auto parsed = tensor::parseDTypeName(words[2]);
        if (!parsed)
          return lineError(bufferName, lineNo, "unknown dtype '" + words[2] + "'");
        dt = int(*parsed);
      }
      ChipDescription::Timing t;
      if (auto e = parseUInt(words[3], t.latency))
        return e;
      if (auto e = parseUInt(words[4], t.issue))
        return e;
      if (t.latency > kMaxLatency || t.issue == 0)
        return lineError(bufferName, lineNo,
                         "latency must be at most " + llvm::Twine(kMaxLatency) +
                             " and issue interval at least 1");
      chip.timing[{*op, dt}] = t;
      continue;
    }
    bool found = false;
    for (const UIntField &f : kUIntFields)
      if (key == f.key) {
        if (auto e = needWords(2))
          return e;
        if (auto e = parseUInt(words[1], chip.*(f.field)))
          return e;
        found = true;
      }
    if (!found)
      return lineError(bufferName, lineNo, "unknown key '" + key + "'");
  }
  auto bad = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), bufferName + ": " + msg);
  };
  if (chip.name.empty())
    return bad("missing 'name'");
  if (chip.lanes == 0 || chip.lanes % 16 != 0 || chip.lanes > 4096)
    return bad("lanes must be a positive multiple of 16 (at most 4096)");
  if (chip.memSlices < 2 || chip.memSlices % 2 || chip.mxmPlanes % 2 ||
      chip.streamsPerDirection == 0 || chip.streamsPerDirection > 256 || chip.memVectors == 0)
    return bad("mem_slices and mxm_planes must be even and there must be streams and SRAM");
  if (chip.mxmDim != chip.lanes)
    return bad("mxm_dim must equal lanes (a plane takes one full vector)");
  for (unsigned k = 0; k < kNumUnitKinds; ++k)
    if (UnitKind(k) != UnitKind::Vxm && chip.queues[k] % 2)
      return bad(llvm::Twine("the number of ") + unitKindName(UnitKind(k)) +
                 " queues must be even (half per hemisphere)");
  if (chip.c2cLinks % 2)
    return bad("c2c_links must be even");
  chip.indexTimings();
  return chip;
}

llvm::Expected<ChipDescription> loadChipDescription(llvm::StringRef nameOrPath) {
  std::string path;
  if (nameOrPath.contains('/') || nameOrPath.endswith(".chip")) {
    path = nameOrPath.str();
  } else {
    llvm::SmallVector<std::string, 2> dirs;
    if (auto env = llvm::sys::Process::GetEnv("LPU_CHIP_PATH"))
      dirs.push_back(*env);
    dirs.push_back(LPU_CHIP_DIR);
    for (const std::string &dir : dirs) {
      llvm::SmallString<256> candidate(dir);
      llvm::sys::path::append(candidate, nameOrPath + ".chip");
      if (llvm::sys::fs::exists(candidate)) {
        path = std::string(candidate);
        break;
      }
    }
    if (path.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "unknown chip '" + nameOrPath + "' (no " + nameOrPath +
                                         ".chip in " + LPU_CHIP_DIR + ")");
  }
  if (llvm::sys::fs::is_directory(path))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "chip file '" + path + "' is a directory");
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read chip file '" + path +
                                                          "': " + buffer.getError().message());
  auto chip = parseChipDescription((*buffer)->getBuffer(), path);
  if (!chip) // say what the file was read as (a model given to --chip)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   llvm::toString(chip.takeError()) + " (reading '" + path +
                                       "' as a chip description)");
  return chip;
}

} // namespace lpu::backend
