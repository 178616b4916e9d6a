#include "backend/ProgramBinary.h"

#include <llvm/Support/xxhash.h>

#include <cctype>
#include <cstring>

namespace lpu::backend {

namespace {
constexpr size_t kHeaderSize = 8 + 4 + 4 + 8 + 8;
// Limits that keep a hostile file from asking for absurd allocations before
// the bytes to back them have been seen.
constexpr uint64_t kMaxCount = uint64_t(1) << 28;

class Writer {
public:
  void u8(uint8_t v) { out_.push_back(char(v)); }
  void u16(uint16_t v) { raw(&v, 2); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void str(llvm::StringRef s) {
    u32(uint32_t(s.size()));
    out_.append(s.data(), s.size());
  }
  void stream(StreamRef s) {
    u8(s.dir);
    u8(s.id);
  }
  std::string &out() { return out_; }

private:
  void raw(const void *p, size_t n) { out_.append(static_cast<const char *>(p), n); }
  std::string out_;
};

class Reader {
public:
  Reader(llvm::ArrayRef<uint8_t> bytes) : bytes_(bytes) {}
  bool failed() const { return failed_; }
  size_t offset() const { return pos_; }
  uint8_t u8() { uint8_t v = 0; raw(&v, 1); return v; }
  uint16_t u16() { uint16_t v = 0; raw(&v, 2); return v; }
  uint32_t u32() { uint32_t v = 0; raw(&v, 4); return v; }
  uint64_t u64() { uint64_t v = 0; raw(&v, 8); return v; }
  std::string str() {
    uint32_t n = u32();
    if (failed_ || n > bytes_.size() - pos_) {
      failed_ = true;
      return {};
    }
    std::string s(reinterpret_cast<const char *>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  /// A count of items that each take at least `minBytes` more bytes.
  uint32_t count(size_t minBytes) {
    uint32_t n = u32();
    if (n > kMaxCount || uint64_t(n) * minBytes > bytes_.size() - pos_)
      failed_ = true;
    return failed_ ? 0 : n;
  }
  StreamRef stream() {
    StreamRef s;
    s.dir = u8();
    s.id = u8();
    if (s.dir > StreamRef::West)
      failed_ = true;
    return s;
  }
  bool atEnd() const { return pos_ == bytes_.size(); }

private:
  void raw(void *p, size_t n) {
    if (failed_ || n > bytes_.size() - pos_) {
      failed_ = true;
      std::memset(p, 0, n);
      return;
    }
    std::memcpy(p, bytes_.data() + pos_, n);
    pos_ += n;
  }
  llvm::ArrayRef<uint8_t> bytes_;
  size_t pos_ = 0;
  bool failed_ = false;
};

constexpr size_t kInstrBytes = 1 + 1 + 1 + 2 + 4 + 4 + 4 + 4 + 4 * 2;

void writeInstr(Writer &w, const Instr &in) {
  w.u8(uint8_t(in.op));
  w.u8(uint8_t(in.dtype));
  w.u8(uint8_t(in.dtype2));
  w.u16(in.unit);
  w.u32(in.addr);
  w.u32(uint32_t(in.step));
  w.u32(in.count);
  w.u32(in.delay);
  w.stream(in.src0);
  w.stream(in.src1);
  w.stream(in.src2);
  w.stream(in.dst);
}

bool validDType(uint8_t v) { return v <= uint8_t(DType::F32); }

/// The binary form must be canonical, so that it prints as text and reads
/// back to the same bytes: fields an opcode does not use are zero, and the
/// streams it uses are real streams.
bool canonical(const Instr &in) {
  Instr keep;
  keep.op = in.op;
  for (OperandKind k : opcodeInfo(in.op).operands) {
    switch (k) {
    case OperandKind::DType: keep.dtype = in.dtype; break;
    case OperandKind::DType2: keep.dtype2 = in.dtype2; break;
    case OperandKind::Count: keep.count = in.count; break;
    case OperandKind::Delay: keep.delay = in.delay; break;
    case OperandKind::Slice:
    case OperandKind::Plane:
    case OperandKind::Link: keep.unit = in.unit; break;
    case OperandKind::Addr:
    case OperandKind::Acc:
      keep.addr = in.addr;
      keep.step = in.step;
      break;
    case OperandKind::Src0:
      if (!in.src0.valid())
        return false;
      keep.src0 = in.src0;
      break;
    case OperandKind::Src1:
      if (!in.src1.valid())
        return false;
      keep.src1 = in.src1;
      break;
    case OperandKind::Src2:
      if (!in.src2.valid())
        return false;
      keep.src2 = in.src2;
      break;
    case OperandKind::Dst:
      if (!in.dst.valid())
        return false;
      keep.dst = in.dst;
      break;
    }
  }
  return keep == in;
}

Instr readInstr(Reader &r, bool &bad) {
  Instr in;
  uint8_t op = r.u8(), dt = r.u8(), dt2 = r.u8();
  if (op >= kNumOpcodes || !validDType(dt) || !validDType(dt2))
    bad = true;
  in.op = Opcode(op < kNumOpcodes ? op : 0);
  in.dtype = DType(validDType(dt) ? dt : 0);
  in.dtype2 = DType(validDType(dt2) ? dt2 : 0);
  in.unit = r.u16();
  in.addr = r.u32();
  in.step = int32_t(r.u32());
  in.count = r.u32();
  in.delay = r.u32();
  in.src0 = r.stream();
  in.src1 = r.stream();
  in.src2 = r.stream();
  in.dst = r.stream();
  if (!bad && !canonical(in))
    bad = true;
  return in;
}
} // namespace

namespace {
std::string writeVersion(const Program &p, uint32_t version) {
  Writer w;
  // The header first, its size and checksum filled in at the end: one
  // buffer, not a copy of the payload (a large program is gigabytes).
  w.out().append(kHeaderSize, '\0');
  w.str(p.chipName);
  w.u64(p.chipFingerprint);
  w.str(p.topology);
  w.u32(p.numChips);
  w.u32(uint32_t(p.entries.size()));
  for (const Entry &e : p.entries) {
    w.str(e.name);
    w.u32(uint32_t(e.buckets.size()));
    for (const Bucket &b : e.buckets) {
      w.u32(uint32_t(b.dims.size()));
      for (const BucketDim &d : b.dims) {
        w.str(d.name);
        w.u64(uint64_t(d.value));
      }
      w.u32(uint32_t(b.tensors.size()));
      for (const TensorPlacement &t : b.tensors) {
        w.u8(uint8_t(t.role));
        w.str(t.name);
        w.u8(uint8_t(t.dtype));
        w.u32(uint32_t(t.shape.size()));
        for (const Dim &d : t.shape) {
          w.u64(uint64_t(d.value));
          w.str(d.name);
        }
        w.u32(t.chip);
        w.u32(uint32_t(t.slices.size()));
        for (uint16_t s : t.slices)
          w.u16(s);
        w.u32(t.addr);
        w.u8(uint8_t(t.layout));
        w.u32(uint32_t(t.perm.size()));
        for (uint8_t d : t.perm)
          w.u8(d);
        w.u32(t.chunkRows);
        if (version >= 5) {
          w.u32(uint32_t(t.shard.size()));
          for (int64_t v : t.shard)
            w.u64(uint64_t(v));
        }
        if (version >= 7)
          w.u8(t.state ? 1 : 0);
        if (t.role == TensorRole::Constant)
          w.str(llvm::StringRef(reinterpret_cast<const char *>(t.data.data()), t.data.size()));
      }
      w.u32(uint32_t(b.chips.size()));
      for (const ChipCode &c : b.chips) {
        if (version >= 6) {
          w.u8(c.shares ? 1 : 0);
          if (c.shares) {
            w.u32(c.shares->chip);
            w.u64(c.shares->delay);
            w.u32(uint32_t(c.shares->links.size()));
            for (const auto &[from, to] : c.shares->links) {
              w.u16(from);
              w.u16(to);
            }
          }
        }
        w.u32(uint32_t(c.queues.size()));
        for (const Queue &q : c.queues) {
          w.u8(uint8_t(q.unit));
          w.u16(q.index);
          w.u32(uint32_t(q.instrs.size()));
          for (const Instr &in : q.instrs)
            writeInstr(w, in);
        }
      }
    }
  }
  std::string out = std::move(w.out());
  const llvm::StringRef payload = llvm::StringRef(out).drop_front(kHeaderSize);
  Writer h;
  h.out().append(kProgramMagic, 8);
  h.u32(version);
  h.u32(0);
  h.u64(payload.size());
  h.u64(llvm::xxHash64(payload));
  out.replace(0, kHeaderSize, h.out());
  return out;
}
} // namespace

std::string writeProgramBinary(const Program &p) { return writeVersion(p, kProgramFormatVersion); }

llvm::Expected<std::string> writeProgramBinary(const Program &p, uint32_t version) {
  auto fail = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot write format version " + llvm::Twine(version) + ": " +
                                       msg);
  };
  if (version < kOldestProgramFormatVersion || version > kProgramFormatVersion)
    return fail("this lpurun writes versions " + llvm::Twine(kOldestProgramFormatVersion) +
                " to " + llvm::Twine(kProgramFormatVersion));
  for (const Entry &e : p.entries)
    for (const Bucket &b : e.buckets)
      for (const TensorPlacement &t : b.tensors) {
        if (version < 4 && t.layout != Layout::Rows)
          return fail("tensor '" + t.name + "' is packed (version 4 added the packed layout)");
        // A state first: a state's slice is no weight's shard.
        if (version < 7 && t.state)
          return fail(tensorRoleName(t.role) + " '" + t.name + "' is a state (version 7 added states)");
        if (version < 5 && !t.shard.empty())
          return fail("tensor '" + t.name + "' holds a shard of its weight (version 5 added shards)");
      }
  if (version < 6)
    for (const Entry &e : p.entries)
      for (const Bucket &b : e.buckets)
        for (size_t c = 0; c < b.chips.size(); ++c)
          if (b.chips[c].shares)
            return fail("chip " + llvm::Twine(c) + " runs chip " + llvm::Twine(b.chips[c].shares->chip) +
                        "'s code (version 6 added shared code)");
  return writeVersion(p, version);
}

bool looksLikeProgramBinary(llvm::ArrayRef<uint8_t> bytes) {
  return bytes.size() >= 8 && std::memcmp(bytes.data(), kProgramMagic, 8) == 0;
}

llvm::Expected<Program> readProgramBinary(llvm::ArrayRef<uint8_t> bytes, llvm::StringRef name) {
  auto fail = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   name + ": not a valid program file: " + msg);
  };
  if (!looksLikeProgramBinary(bytes))
    return fail("bad magic (expected an lpuc program file)");
  if (bytes.size() < kHeaderSize)
    return fail("truncated header");
  Reader hr(bytes.slice(8));
  uint32_t version = hr.u32();
  hr.u32();
  uint64_t size = hr.u64();
  uint64_t hash = hr.u64();
  if (version < kOldestProgramFormatVersion || version > kProgramFormatVersion)
    return fail("format version " + llvm::Twine(version) + ", this lpurun reads versions " +
                llvm::Twine(kOldestProgramFormatVersion) + " to " + llvm::Twine(kProgramFormatVersion) +
                " (recompile the program with this lpuc)");
  // The newest layout the file's version may name.
  const uint8_t maxLayout = uint8_t(version >= 4 ? Layout::Packed : Layout::Rows);
  llvm::ArrayRef<uint8_t> payload = bytes.slice(kHeaderSize);
  if (payload.size() < size)
    return fail("truncated: the header promises " + llvm::Twine(size) + " bytes of payload, found " +
                llvm::Twine(payload.size()));
  if (payload.size() > size)
    return fail("trailing bytes after the payload");
  if (llvm::xxHash64(llvm::StringRef(reinterpret_cast<const char *>(payload.data()), payload.size())) !=
      hash)
    return fail("checksum mismatch (the file is corrupted)");

  Reader r(payload);
  Program p;
  bool bad = false;
  std::string placementProblem; // the first placement that cannot be right
  p.chipName = r.str();
  p.chipFingerprint = r.u64();
  p.topology = r.str();
  bad |= !isProgramToken(p.chipName) || !isProgramToken(p.topology);
  p.numChips = r.u32();
  uint32_t nEntries = r.count(8);
  for (uint32_t ei = 0; ei < nEntries && !r.failed(); ++ei) {
    Entry e;
    e.name = r.str();
    bad |= !isProgramToken(e.name);
    uint32_t nBuckets = r.count(12);
    for (uint32_t bi = 0; bi < nBuckets && !r.failed(); ++bi) {
      Bucket b;
      uint32_t nDims = r.count(12);
      for (uint32_t i = 0; i < nDims && !r.failed(); ++i) {
        BucketDim d;
        d.name = r.str();
        d.value = int64_t(r.u64());
        bad |= !isProgramIdentifier(d.name) || d.value < 0;
        b.dims.push_back(std::move(d));
      }
      uint32_t nTensors = r.count(29);
      for (uint32_t i = 0; i < nTensors && !r.failed(); ++i) {
        TensorPlacement t;
        uint8_t role = r.u8();
        if (role > uint8_t(TensorRole::Constant))
          bad = true;
        t.role = TensorRole(role > 3 ? 0 : role);
        t.name = r.str();
        bad |= !isProgramToken(t.name);
        uint8_t dt = r.u8();
        if (!validDType(dt))
          bad = true;
        t.dtype = DType(validDType(dt) ? dt : 0);
        uint32_t rank = r.count(12);
        for (uint32_t k = 0; k < rank && !r.failed(); ++k) {
          Dim d;
          d.value = int64_t(r.u64());
          d.name = r.str();
          bad |= d.value < 0 || (!d.name.empty() && (d.value != 0 || !isProgramIdentifier(d.name)));
          t.shape.push_back(std::move(d));
        }
        t.chip = r.u32();
        uint32_t nSlices = r.count(2);
        for (uint32_t k = 0; k < nSlices && !r.failed(); ++k)
          t.slices.push_back(r.u16());
        t.addr = r.u32();
        uint8_t layout = r.u8();
        t.layout = layout <= maxLayout ? Layout(layout) : Layout::Rows;
        uint32_t permSize = r.count(1);
        for (uint32_t k = 0; k < permSize && !r.failed(); ++k)
          t.perm.push_back(r.u8());
        t.chunkRows = r.u32();
        if (version >= 5) {
          // None or {axis, start, full}; their range is verifyProgram's.
          uint32_t shardSize = r.count(8);
          if (shardSize != 0 && shardSize != 3)
            bad = true;
          for (uint32_t k = 0; k < shardSize && !r.failed(); ++k)
            t.shard.push_back(int64_t(r.u64()));
        }
        uint8_t stateFlag = 0;
        if (version >= 7) {
          stateFlag = r.u8();
          t.state = stateFlag == 1;
        }
        // The placement's shape against the rest waits for verifyProgram
        // (it needs the chip); what needs no chip is checked here.
        if (!r.failed() && placementProblem.empty()) {
          unsigned planes = streamWidth(t.dtype);
          if (stateFlag > 1)
            placementProblem = tensorRoleName(t.role).str() + " '" + t.name + "': state flag " +
                               std::to_string(stateFlag) + " (0 = not a state, 1 = a state)";
          else if (stateFlag == 1 && t.role != TensorRole::Input && t.role != TensorRole::Output)
            placementProblem = tensorRoleName(t.role).str() + " '" + t.name +
                               "' is marked a state: only an input or an output may be";
          else if (layout > maxLayout)
            placementProblem = "tensor '" + t.name + "': unknown layout " + std::to_string(layout) +
                               " (format version " + std::to_string(version) + " has 0 = rows" +
                               (maxLayout >= 1 ? ", 1 = packed)" : ")");
          else if (!isPermutation(t.perm, t.shape.size()))
            placementProblem = "tensor '" + t.name + "': its perm is not a permutation of its " +
                               std::to_string(t.shape.size()) + " dimensions";
          else if (t.slices.empty() || t.slices.size() % planes != 0 ||
                   (t.chunkRows == 0 && t.slices.size() != planes))
            placementProblem = "tensor '" + t.name + "': " + std::to_string(t.slices.size()) +
                               " slices for a " + std::to_string(planes) + "-byte dtype" +
                               (t.chunkRows ? " in chunks" : " in one chunk");
        }
        if (t.role == TensorRole::Constant) {
          std::string data = r.str();
          t.data.assign(data.begin(), data.end());
        }
        b.tensors.push_back(std::move(t));
      }
      uint32_t nChips = r.count(4);
      for (uint32_t ci = 0; ci < nChips && !r.failed(); ++ci) {
        ChipCode c;
        const uint8_t sharesFlag = version >= 6 ? r.u8() : 0;
        if (sharesFlag > 1)
          bad = true;
        if (sharesFlag == 1) {
          SharedCode shared;
          shared.chip = r.u32();
          shared.delay = r.u64();
          uint32_t nLinks = r.count(4);
          for (uint32_t li = 0; li < nLinks && !r.failed(); ++li) {
            uint16_t from = r.u16();
            shared.links.emplace_back(from, r.u16());
          }
          c.shares = std::move(shared);
        }
        uint32_t nQueues = r.count(7);
        for (uint32_t qi = 0; qi < nQueues && !r.failed(); ++qi) {
          Queue q;
          uint8_t unit = r.u8();
          if (unit >= kNumUnitKinds)
            bad = true;
          q.unit = UnitKind(unit < kNumUnitKinds ? unit : 0);
          q.index = r.u16();
          uint32_t nInstrs = r.count(kInstrBytes);
          q.instrs.reserve(nInstrs);
          for (uint32_t ii = 0; ii < nInstrs && !r.failed(); ++ii)
            q.instrs.push_back(readInstr(r, bad));
          c.queues.push_back(std::move(q));
        }
        b.chips.push_back(std::move(c));
      }
      e.buckets.push_back(std::move(b));
    }
    p.entries.push_back(std::move(e));
  }
  if (r.failed())
    return fail("payload ends early or holds an impossible count near byte " +
                llvm::Twine(r.offset()));
  if (bad)
    return fail("a value is out of range or not in canonical form (an opcode, dtype, unit, role, "
                "stream, name, shard length or unused instruction field)");
  if (!r.atEnd())
    return fail("unexpected bytes after the last entry");
  if (!placementProblem.empty())
    return fail(placementProblem);
  return p;
}

} // namespace lpu::backend

#include "backend/ProgramText.h"

namespace lpu::backend {
llvm::Expected<Program> parseProgramFile(llvm::ArrayRef<uint8_t> bytes, llvm::StringRef name) {
  if (bytes.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   name + ": empty file (expected an lpuc program)");
  if (looksLikeProgramBinary(bytes))
    return readProgramBinary(bytes, name);
  llvm::StringRef text(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  if (text.find('\0') != llvm::StringRef::npos)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   name + ": not a program file (neither the binary form nor text)");
  return parseProgramText(text, name);
}
} // namespace lpu::backend
