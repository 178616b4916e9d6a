#include "backend/ChipDescription.h"
#include "backend/ProgramBinary.h"
#include "backend/ProgramText.h"
#include "backend/Topology.h"

#include <llvm/Support/xxhash.h>

#include <gtest/gtest.h>

using namespace lpu::backend;

namespace {
StreamRef east(uint8_t id) { return StreamRef{StreamRef::East, id}; }
StreamRef west(uint8_t id) { return StreamRef{StreamRef::West, id}; }

/// A program that uses every operand kind of the text form.
Program sampleProgram(uint64_t fingerprint) {
  Program p;
  p.chipName = "groqchip1";
  p.chipFingerprint = fingerprint;
  p.topology = "node";
  p.numChips = 8;
  Bucket b;
  b.dims = {{"n", 4}};
  b.tensors.push_back({TensorRole::Input, "x", DType::F16, {{0, "n"}, {320, ""}}, 0, {0, 1}, 0, Layout::Rows, {}, 0, {}, {}});
  // A slice of a weight: elements 320..639 of the i8 [960] weight w.0.
  b.tensors.push_back({TensorRole::Param, "w.0", DType::I8, {{320, ""}}, 1, {5}, 7, Layout::Rows, {}, 0, {}, {0, 320, 960}});
  b.tensors.push_back({TensorRole::Output, "y", DType::F32, {}, 0, {44, 45, 46, 47}, 100, Layout::Rows, {}, 0, {}, {}});
  // A constant carries its bytes (a splat row of two f16 2.0).
  b.tensors.push_back({TensorRole::Constant, "const0", DType::F16, {{2, ""}}, 0, {6, 7}, 0,
                       Layout::Rows, {}, 0, {0x00, 0x40, 0x00, 0x40}, {}});
  // A conv weight stored channels-last, its rows in three chunks of slices.
  TensorPlacement conv{TensorRole::Param, "w.conv", DType::F16, {{4, ""}, {3, ""}, {3, ""}, {8, ""}}, 0,
                       {10, 11, 12, 13, 14, 15}, 3, Layout::Rows, {0, 2, 3, 1}, 40, {}, {}};
  b.tensors.push_back(conv);
  b.chips.resize(8);
  Queue mem{UnitKind::Mem, 3, {}};
  Instr read;
  read.op = Opcode::Read;
  read.unit = 2;
  read.addr = 10;
  read.step = -3;
  read.dst = east(0);
  mem.instrs.push_back(read);
  Instr rep;
  rep.op = Opcode::Repeat;
  rep.count = 3;
  rep.delay = 2;
  mem.instrs.push_back(rep);
  Instr scatter;
  scatter.op = Opcode::Scatter;
  scatter.src0 = east(1);
  scatter.src1 = west(2);
  scatter.unit = 9;
  scatter.addr = 8191;
  mem.instrs.push_back(scatter);
  Queue vxm{UnitKind::Vxm, 15, {}};
  Instr nop;
  nop.op = Opcode::Nop;
  nop.count = 46;
  vxm.instrs.push_back(nop);
  Instr cvt;
  cvt.op = Opcode::Cvt;
  cvt.dtype = DType::F32;
  cvt.dtype2 = DType::I8;
  cvt.src0 = east(4);
  cvt.dst = west(31);
  vxm.instrs.push_back(cvt);
  Instr trunc = cvt;
  trunc.dst = west(28);
  trunc.op = Opcode::CvtTrunc;
  trunc.dtype = DType::BF16;
  trunc.dtype2 = DType::I16;
  vxm.instrs.push_back(trunc);
  Instr select; // the one instruction with three input groups
  select.op = Opcode::Select;
  select.dtype = DType::F16;
  select.src0 = east(12);
  select.src1 = west(3);
  select.src2 = east(6);
  select.dst = west(20);
  vxm.instrs.push_back(select);
  Instr gelu;
  gelu.op = Opcode::GeluTanh;
  gelu.dtype = DType::F32;
  gelu.src0 = east(0);
  gelu.dst = east(4);
  vxm.instrs.push_back(gelu);
  Instr div;
  div.op = Opcode::Div;
  div.dtype = DType::I32;
  div.src0 = east(0);
  div.src1 = west(4);
  div.dst = east(8);
  vxm.instrs.push_back(div);
  Instr sync;
  sync.op = Opcode::Sync;
  vxm.instrs.push_back(sync);
  Queue mxm{UnitKind::Mxm, 7, {}};
  Instr mm;
  mm.op = Opcode::MatMul;
  mm.dtype = DType::F16;
  mm.unit = 3;
  mm.src0 = east(8);
  mm.addr = 5;
  mm.step = 1;
  mxm.instrs.push_back(mm);
  Queue c2c{UnitKind::C2c, 2, {}};
  Instr send;
  send.op = Opcode::Send;
  send.dtype = DType::I8;
  send.unit = 2;
  send.src0 = west(0);
  c2c.instrs.push_back(send);
  b.chips[0].queues = {mem, vxm, mxm, c2c};
  Entry e{"main", {b, b}};
  e.buckets[1].dims[0].value = 8;
  p.entries = {e, Entry{"other", {b}}};
  return p;
}

template <typename T> std::string errorOf(llvm::Expected<T> p) {
  if (p)
    return "";
  return llvm::toString(p.takeError());
}
std::string errorOf(llvm::Error e) { return e ? llvm::toString(std::move(e)) : ""; }
} // namespace

TEST(ProgramFile, TextRoundTripIsIdentity) {
  Program p = sampleProgram(0x1234);
  std::string text = printProgramText(p);
  auto parsed = parseProgramText(text, "t");
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_EQ(*parsed, p);
  EXPECT_EQ(printProgramText(*parsed), text);
  EXPECT_NE(text.find("read s2 @10-3 -> e0"), std::string::npos);
  EXPECT_NE(text.find("cvt f32 i8 e4 -> w31"), std::string::npos);
  EXPECT_NE(text.find("scatter e1 w2 s9 @8191"), std::string::npos);
  EXPECT_NE(text.find("cvt.trunc bf16 i16 e4 -> w28"), std::string::npos);
  EXPECT_NE(text.find("select f16 e12 w3 e6 -> w20"), std::string::npos);
  EXPECT_NE(text.find("gelu_tanh f32 e0 -> e4"), std::string::npos);
  EXPECT_NE(text.find("div i32 e0 w4 -> e8"), std::string::npos);
  EXPECT_NE(text.find("tensor output y f32 [] chip 0 slices 44,45,46,47 addr 100 layout rows\n"), std::string::npos);
  EXPECT_NE(text.find("tensor param w.conv f16 [4,3,3,8] chip 0 slices 10,11,12,13,14,15 addr 3 "
                      "layout rows perm 0,2,3,1 chunk 40\n"),
            std::string::npos);
  EXPECT_NE(text.find("tensor param w.0 i8 [320] chip 1 slices 5 addr 7 layout rows shard 0,320,960\n"),
            std::string::npos);
}

// The optional parts of a tensor line may be left out, but not reordered.
TEST(ProgramFile, TensorLineOptionalParts) {
  const char *head = "lpu-program 1\ntarget g\nentry m\nbucket\n";
  auto one = [&](const std::string &line) {
    return parseProgramText(std::string(head) + line + "\nchip 0\n", "t");
  };
  auto p = one("tensor input x f16 [2,3] chip 0 slices 0,1,2,3 addr 4 chunk 1");
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  const TensorPlacement &t = p->entries[0].buckets[0].tensors[0];
  EXPECT_EQ(t.chunkRows, 1u);
  EXPECT_TRUE(t.perm.empty());
  EXPECT_EQ(t.addr, 4u);
  auto q = one("tensor input x f16 [2,3] chip 0 slices 0,1 addr 4 perm 1,0");
  ASSERT_TRUE(bool(q)) << llvm::toString(q.takeError());
  EXPECT_EQ(q->entries[0].buckets[0].tensors[0].perm, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(q->entries[0].buckets[0].tensors[0].chunkRows, 0u);
  EXPECT_TRUE(q->entries[0].buckets[0].tensors[0].shard.empty());
  auto r = one("tensor param w f16 [2,3] chip 0 slices 0,1 addr 4 chunk 1 shard 1,3,6");
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->entries[0].buckets[0].tensors[0].shard, (std::vector<int64_t>{1, 3, 6}));
  EXPECT_EQ(r->entries[0].buckets[0].tensors[0].chunkRows, 1u);
  // Out of range is verifyProgram's to refuse; the text carries any numbers.
  auto n = one("tensor param w f16 [2,3] chip 0 slices 0,1 addr 4 shard 1,-3,6");
  ASSERT_TRUE(bool(n)) << llvm::toString(n.takeError());
  EXPECT_EQ(n->entries[0].buckets[0].tensors[0].shard, (std::vector<int64_t>{1, -3, 6}));
}

TEST(ProgramFile, BadTensorLines) {
  const char *head = "lpu-program 1\ntarget g\nentry m\nbucket\n";
  auto err = [&](const std::string &line) {
    return errorOf(parseProgramText(std::string(head) + line + "\n", "t"));
  };
  EXPECT_EQ(err("tensor input x f16 [2,3] chip 0 slices 0,1 addr 0 perm 0,0"),
            "t:5: perm 0,0 is not a permutation of the 2 dimensions of [2,3]");
  EXPECT_EQ(err("tensor input x f16 [2,3] chip 0 slices 0,1 addr 0 perm 0,1,2"),
            "t:5: perm 0,1,2 is not a permutation of the 2 dimensions of [2,3]");
  EXPECT_EQ(err("tensor input x f16 [2,3] chip 0 slices 0,1 addr 0 perm 0,999"),
            "t:5: perm 0,999 is not a permutation of the 2 dimensions of [2,3]");
  EXPECT_EQ(err("tensor input x f16 [2,3] chip 0 slices 0,1 addr 0 chunk 0"),
            "t:5: chunk 0: a chunk holds at least one row (leave chunk out for one chunk)");
  EXPECT_EQ(err("tensor input x f16 [2,3] chip 0 slices 0,1 addr 0 chunk x"), "t:5: bad chunk 'x'");
  EXPECT_EQ(err("tensor input x f16 [2,3] chip 0 slices 0,1 addr 0 chunk 1 perm 1,0"),
            "t:5: unexpected 'perm' in a tensor line: expected 'tensor ROLE NAME DTYPE [SHAPE] chip N "
            "slices S,.. addr A [layout rows|packed] [perm P,..] [chunk ROWS] [shard AXIS,START,FULL] "
            "[data HEX]'");
  EXPECT_EQ(err("tensor input x f16 [2,3] chip 0 slices 0,1 addr"),
            "t:5: expected 'tensor ROLE NAME DTYPE [SHAPE] chip N slices S,.. addr A [layout rows|packed] "
            "[perm P,..] [chunk ROWS] [shard AXIS,START,FULL] [data HEX]'");
  EXPECT_EQ(err("tensor input x f16 [2,3] chip 0 slices 0,1 addr 0 layout cols"),
            "t:5: unknown layout 'cols' (expected rows or packed)");
  EXPECT_EQ(err("tensor input x f16 [2,3] chip 0 slices 0,1 addr 0 data 00"),
            "t:5: a const tensor, and only a const, ends with 'data HEX' (its bytes)");
  EXPECT_EQ(err("tensor param w f16 [2,3] chip 0 slices 0,1 addr 0 shard 1,2"),
            "t:5: shard 1,2: expected three numbers AXIS,START,FULL");
  EXPECT_EQ(err("tensor param w f16 [2,3] chip 0 slices 0,1 addr 0 shard 1,2,3,4"),
            "t:5: shard 1,2,3,4: expected three numbers AXIS,START,FULL");
  EXPECT_EQ(err("tensor param w f16 [2,3] chip 0 slices 0,1 addr 0 shard 1,x,3"),
            "t:5: bad shard '1,x,3'");
  EXPECT_EQ(err("tensor param w f16 [2,3] chip 0 slices 0,1 addr 0 shard 1,0,99999999999999999999"),
            "t:5: bad shard '1,0,99999999999999999999'");
  EXPECT_NE(err("tensor param w f16 [2,3] chip 0 slices 0,1 addr 0 shard 1,0,6 chunk 1")
                .find("unexpected 'chunk' in a tensor line"),
            std::string::npos);
}

TEST(ProgramFile, BinaryRoundTripIsIdentity) {
  Program p = sampleProgram(0xfeedfacecafebeefull);
  std::string bin = writeProgramBinary(p);
  auto bytes = llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bin.data()), bin.size());
  auto read = readProgramBinary(bytes, "b");
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(*read, p);
  EXPECT_EQ(writeProgramBinary(*read), bin);
  auto either = parseProgramFile(bytes, "b");
  ASSERT_TRUE(bool(either));
  EXPECT_EQ(*either, p);
}

TEST(ProgramFile, EveryTruncationIsRefused) {
  std::string bin = writeProgramBinary(sampleProgram(1));
  for (size_t n = 0; n < bin.size(); ++n) {
    auto bytes = llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bin.data()), n);
    EXPECT_NE(errorOf(readProgramBinary(bytes, "b")), "") << "prefix " << n;
  }
}

TEST(ProgramFile, EveryFlippedByteIsRefused) {
  std::string bin = writeProgramBinary(sampleProgram(1));
  for (size_t i = 0; i < bin.size(); ++i) {
    if (i >= 12 && i < 16)
      continue; // the reserved header word is not checked
    std::string bad = bin;
    bad[i] ^= 0x10;
    auto bytes = llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bad.data()), bad.size());
    EXPECT_NE(errorOf(readProgramBinary(bytes, "b")), "") << "byte " << i;
  }
}

TEST(ProgramFile, ClearMessages) {
  std::string bin = writeProgramBinary(sampleProgram(1));
  auto ref = [](const std::string &s) {
    return llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(s.data()), s.size());
  };
  std::string v = bin;
  v[8] = 9;
  EXPECT_EQ(errorOf(readProgramBinary(ref(v), "p.lpx")),
            "p.lpx: not a valid program file: format version 9, this lpurun reads versions 3 to 7 "
            "(recompile the program with this lpuc)");
  std::string c = bin;
  c.back() ^= 1;
  EXPECT_EQ(errorOf(readProgramBinary(ref(c), "p.lpx")),
            "p.lpx: not a valid program file: checksum mismatch (the file is corrupted)");
  EXPECT_EQ(errorOf(parseProgramFile({}, "e")), "e: empty file (expected an lpuc program)");
  EXPECT_EQ(errorOf(parseProgramText("lpu-program 1\ntarget g\nentry m\nbucket\nchip 0\nqueue mem0\n  frob\n", "t")),
            "t:7: unknown instruction or directive 'frob'");
  EXPECT_EQ(errorOf(parseProgramText("lpu-program 1\ntarget g\nentry m\nbucket\nchip 0\nqueue mem0\n  read s1 @0 e0\n", "t")),
            "t:7: 'read': expected '->', found 'e0'");
  EXPECT_EQ(errorOf(parseProgramText("lpu-program 2\n", "t")),
            "t:1: program text version 2, this reader reads version 1");
  EXPECT_EQ(errorOf(parseProgramText("hello\n", "t")), "t:1: expected 'lpu-program 1' on the first line");
}

// Version 3 added a placement's perm and chunkRows to every tensor record;
// a version 2 (or 1) file is refused by its header, with a clear message.
// Version 4 added the packed layout and nothing else, so version 3 reads.
TEST(ProgramFile, OlderVersionsAreRefused) {
  EXPECT_EQ(kProgramFormatVersion, 7u);
  std::string bin = writeProgramBinary(sampleProgram(1));
  EXPECT_EQ(bin[8], 7);
  for (char old : {1, 2}) {
    bin[8] = old;
    auto bytes = llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bin.data()), bin.size());
    std::string message = "old.lpx: not a valid program file: format version " + std::to_string(old) +
                          ", this lpurun reads versions 3 to 7 (recompile the program with this lpuc)";
    EXPECT_EQ(errorOf(readProgramBinary(bytes, "old.lpx")), message);
    EXPECT_EQ(errorOf(parseProgramFile(bytes, "old.lpx")), message);
  }
}

// Version 5 added the shards: versions 3 and 4, written without them, still
// read; a program with a shard cannot be written as either (an older
// lpurun would place the slice as if it were the whole weight).
TEST(ProgramFile, OlderVersionsWithoutShardsStillRead) {
  Program p = sampleProgram(1);
  EXPECT_EQ(errorOf(writeProgramBinary(p, 4)),
            "cannot write format version 4: tensor 'w.0' holds a shard of its weight (version 5 "
            "added shards)");
  EXPECT_EQ(errorOf(writeProgramBinary(p, 8)),
            "cannot write format version 8: this lpurun writes versions 3 to 7");
  EXPECT_EQ(errorOf(writeProgramBinary(p, 2)),
            "cannot write format version 2: this lpurun writes versions 3 to 7");
  auto same = writeProgramBinary(p, 6);
  ASSERT_TRUE(bool(same)) << llvm::toString(same.takeError());
  // Version 7 adds a byte a tensor: whether it is a state.
  {
    size_t all = 0;
    for (const Entry &e : p.entries)
      for (const Bucket &b : e.buckets)
        all += b.tensors.size();
    EXPECT_EQ(same->size() + all, writeProgramBinary(p).size());
    auto readSix = readProgramBinary(
        llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(same->data()), same->size()), "six");
    ASSERT_TRUE(bool(readSix)) << llvm::toString(readSix.takeError());
    EXPECT_EQ(*readSix, p);
  }
  // Version 6 adds a byte a chip: whether it runs another's code.
  size_t chips = 0;
  for (const Entry &e : p.entries)
    for (const Bucket &b : e.buckets)
      chips += b.chips.size();
  auto five = writeProgramBinary(p, 5);
  ASSERT_TRUE(bool(five)) << llvm::toString(five.takeError());
  EXPECT_EQ(five->size() + chips, same->size());
  auto readFive = readProgramBinary(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(five->data()), five->size()), "five");
  ASSERT_TRUE(bool(readFive)) << llvm::toString(readFive.takeError());
  EXPECT_EQ(*readFive, p);
  size_t tensors = 0;
  for (Entry &e : p.entries)
    for (Bucket &b : e.buckets) {
      b.tensors[1].shard.clear();
      tensors += b.tensors.size();
    }
  for (uint32_t version : {3u, 4u}) {
    auto old = writeProgramBinary(p, version);
    ASSERT_TRUE(bool(old)) << llvm::toString(old.takeError());
    EXPECT_EQ(uint8_t((*old)[8]), version);
    // Four bytes a tensor shorter than version 5: no shard count.
    EXPECT_EQ(old->size() + 4 * tensors, writeProgramBinary(p, 5)->size());
    auto read = readProgramBinary(
        llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(old->data()), old->size()), "old");
    ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
    EXPECT_EQ(*read, p);
  }
}

// A chip that runs another's queues (chips with the same work share one
// schedule): the text and binary forms carry it, version 5 cannot, and the
// verifier checks what it names.
TEST(ProgramFile, SharedCode) {
  auto chip = loadChipDescription("groqchip1");
  ASSERT_TRUE(bool(chip));
  auto topology = Topology::parse("node", chip->c2cLinks);
  ASSERT_TRUE(bool(topology));
  // Chip 0's code sends on link 2 (western); chip 5 runs it on a western
  // link of its own that is cabled, other than 2.
  std::optional<uint16_t> west;
  for (uint16_t l = 0; l < chip->c2cLinks / 2 && !west; ++l)
    if (l != 2 && topology->peer(5, l))
      west = l;
  ASSERT_TRUE(west.has_value());
  Program p = sampleProgram(chip->fingerprint());
  for (Entry &e : p.entries)
    for (Bucket &b : e.buckets)
      b.chips[5].shares = SharedCode{0, 1234, {{2, *west}}};
  ASSERT_FALSE(bool(verifyProgram(p, *chip)));

  std::string text = printProgramText(p);
  EXPECT_NE(text.find("    chip 5 shares 0 delay 1234 links 2:" + std::to_string(*west) + "\n"),
            std::string::npos);
  auto parsed = parseProgramText(text, "t");
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_EQ(*parsed, p);
  std::string bin = writeProgramBinary(p);
  auto read = readProgramBinary(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bin.data()), bin.size()), "b");
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(*read, p);
  EXPECT_EQ(errorOf(writeProgramBinary(p, 5)),
            "cannot write format version 5: chip 5 runs chip 0's code (version 6 added shared code)");

  auto expectError = [&](Program bad, const std::string &message) {
    llvm::Error e = verifyProgram(bad, *chip);
    ASSERT_TRUE(bool(e));
    EXPECT_EQ(llvm::toString(std::move(e)), message);
  };
  auto with = [&](SharedCode shared) {
    Program q = p;
    q.entries[0].buckets[0].chips[5].shares = std::move(shared);
    return q;
  };
  const std::string where = "entry 'main' bucket 0: chip 5";
  expectError(with({9, 0, {}}), where + " shares the code of chip 9, which is not another chip of the bucket");
  expectError(with({5, 0, {}}), where + " shares the code of chip 5, which is not another chip of the bucket");
  Program chain = with({6, 0, {}});
  chain.entries[0].buckets[0].chips[6].shares = SharedCode{0, 0, {}};
  expectError(chain, where + " shares the code of chip 6, which has none of its own");
  // A chip without code (chip 7 has no queues) has none to share either.
  expectError(with({7, 0, {}}), where + " shares the code of chip 7, which has none of its own");
  // A delay past 2^48 cycles would overflow the shifted cycles.
  expectError(with({0, (uint64_t(1) << 48) + 1, {{2, *west}}}),
              where + " shares the code of chip 0 delayed 281474976710657 cycles, past the 2^48 a program may take");
  EXPECT_FALSE(bool(verifyProgram(with({0, uint64_t(1) << 48, {{2, *west}}}), *chip)));
  expectError(with({0, 0, {{2, *west}, {2, 1}}}), where + " renames link 2 twice");
  expectError(with({0, 0, {{2, 40}}}), where + " renames link 2 to 40: the chip has " +
                                           std::to_string(chip->c2cLinks) + " links");
  expectError(with({0, 0, {{2, uint16_t(chip->c2cLinks - 1)}}}),
              where + " renames link 2 to " + std::to_string(chip->c2cLinks - 1) +
                  ", in the other hemisphere");
  // Chip 5's own link 2, if cabled at all, leads elsewhere than chip 0's;
  // an uncabled one is refused.
  std::optional<uint16_t> uncabled;
  for (uint16_t l = 0; l < chip->c2cLinks / 2 && !uncabled; ++l)
    if (!topology->peer(5, l))
      uncabled = l;
  ASSERT_TRUE(uncabled.has_value());
  expectError(with({0, 0, {{2, *uncabled}}}),
              where + " runs chip 0's code, whose link 2 is its link " + std::to_string(*uncabled) +
                  ", not cabled in topology 'node'");
  Program own = p;
  own.entries[0].buckets[0].chips[5].queues = p.entries[0].buckets[0].chips[0].queues;
  expectError(own, where + " shares another chip's code and has queues of its own");
  EXPECT_EQ(errorOf(parseProgramText("lpu-program 1\ntarget g\nentry m\nbucket\nchip 0\nchip 1 shares 0 delay 3\n"
                                     "queue mem0\n",
                                     "t")),
            "t:7: a chip that shares another's code has no queues of its own");
  EXPECT_EQ(errorOf(parseProgramText("lpu-program 1\ntarget g\nentry m\nbucket\nchip 0\nchip 1 shares 0 delay 3 "
                                     "links 1:x\n",
                                     "t")),
            "t:6: expected links as FROM:TO,.. (link numbers), found '1:x'");
  EXPECT_EQ(errorOf(parseProgramText("lpu-program 1\ntarget g\nentry m\nbucket\nchip 0\nchip 1 runs 0\n", "t")),
            "t:6: expected 'chip 1' (chips in order), or 'chip N shares CHIP delay CYCLES [links L:L,..]'");
}

TEST(ProgramFile, SelectNeedsThreeStreams) {
  const char *head = "lpu-program 1\ntarget g\nentry m\nbucket\nchip 0\nqueue vxm0\n";
  auto ok = parseProgramText(std::string(head) + "  select f32 e0 e1 e5 -> w0\n", "t");
  ASSERT_TRUE(bool(ok)) << llvm::toString(ok.takeError());
  const Instr &in = ok->entries[0].buckets[0].chips[0].queues[0].instrs[0];
  EXPECT_EQ(in.src0, east(0));
  EXPECT_EQ(in.src1, east(1));
  EXPECT_EQ(in.src2, east(5));
  EXPECT_EQ(in.dst, west(0));
  EXPECT_EQ(errorOf(parseProgramText(std::string(head) + "  select f32 e0 e1 -> w0\n", "t")),
            "t:7: 'select': expected a stream (e3 or w3), found '->'");
}

TEST(ProgramFile, VerifyAgainstTheChip) {
  auto chip = loadChipDescription("groqchip1");
  ASSERT_TRUE(bool(chip));
  Program p = sampleProgram(chip->fingerprint());
  EXPECT_FALSE(bool(verifyProgram(p, *chip)));

  auto expectError = [&](Program bad, const std::string &message) {
    llvm::Error e = verifyProgram(bad, *chip);
    ASSERT_TRUE(bool(e));
    EXPECT_EQ(llvm::toString(std::move(e)), message);
  };
  Program other = p;
  other.chipFingerprint ^= 1;
  {
    llvm::Error e = verifyProgram(other, *chip);
    ASSERT_TRUE(bool(e));
    EXPECT_NE(llvm::toString(std::move(e)).find("program was built for chip 'groqchip1'"),
              std::string::npos);
  }
  // Tensors written before a run never share SRAM; an output may take an
  // input's place, not a parameter's or a constant's.
  Program overlap = p;
  overlap.entries[0].buckets[0].tensors[3].slices = {0, 1};
  overlap.entries[0].buckets[0].tensors[3].addr = 2;
  expectError(overlap, "entry 'main' bucket 0: input 'x' and const 'const0' share chip 0 slice 0 from address 2 "
                      "(inputs, parameters and constants are written before a run and never share SRAM)");
  Program onParam = p;
  onParam.entries[0].buckets[0].tensors[2].slices = {10, 11, 12, 13};
  onParam.entries[0].buckets[0].tensors[2].addr = 3;
  expectError(onParam, "entry 'main' bucket 0: output 'y' and param 'w.conv' share chip 0 slice 10 from address 3 "
                       "(an output never takes the place of a parameter or a constant)");
  Program onInput = p;
  for (Bucket &b : onInput.entries[0].buckets) {
    b.tensors[2].slices = {0, 1, 2, 3};
    b.tensors[2].addr = 0;
  }
  EXPECT_FALSE(bool(verifyProgram(onInput, *chip)));
  Program hemi = p;
  hemi.entries[0].buckets[0].chips[0].queues[0].instrs[0].unit = 50; // an eastern slice
  expectError(hemi, "entry 'main' bucket 0: chip 0 queue mem3 instruction 0 (read): slice 50 is in "
                    "the other hemisphere");
  Program group = p;
  group.entries[0].buckets[0].chips[0].queues[1].instrs[1].src0 = StreamRef{StreamRef::East, 30};
  expectError(group, "entry 'main' bucket 0: chip 0 queue vxm15 instruction 1 (cvt): stream group "
                     "e30 of 4 streams does not fit in 32");
  Program link = p;
  link.entries[0].buckets[0].chips[0].queues[3].instrs[0].unit = 7;
  expectError(link, "entry 'main' bucket 0: chip 0 queue c2c2 instruction 0 (send): link 7 is not "
                    "cabled in topology 'node'");
  link.entries[0].buckets[0].chips[0].queues[3].instrs[0].unit = 9;
  expectError(link, "entry 'main' bucket 0: chip 0 queue c2c2 instruction 0 (send): link 9 is in "
                    "the other hemisphere");
  Program place = p;
  place.entries[0].buckets[0].tensors[0].slices = {0};
  expectError(place, "entry 'main' bucket 0: input 'x' of dtype f16 needs 2 slices, has 1");
  Program big = p;
  big.entries[0].buckets[0].tensors[0].addr = 8190;
  expectError(big, "entry 'main' bucket 0: input 'x' does not fit in SRAM: addresses 8190..8194 of 8192");
  // w.conv is stored [4,3,8,3]: 96 rows of one vector, in chunks of 40 rows.
  Program chunks = p;
  chunks.entries[0].buckets[0].tensors[4].chunkRows = 30;
  expectError(chunks, "entry 'main' bucket 0: param 'w.conv' of dtype f16 in 4 chunks of 30 rows "
                      "needs 8 slices, has 6");
  Program high = p;
  high.entries[0].buckets[0].tensors[4].addr = 8160;
  expectError(high, "entry 'main' bucket 0: param 'w.conv' does not fit in SRAM: addresses "
                    "8160..8200 of 8192");
  high.entries[0].buckets[0].tensors[4].addr = 8152; // each chunk starts at addr
  EXPECT_FALSE(bool(verifyProgram(high, *chip)));
  Program perm = p;
  perm.entries[0].buckets[0].tensors[4].perm = {0, 2, 2, 1};
  expectError(perm, "entry 'main' bucket 0: param 'w.conv' has perm 0,2,2,1, not a permutation of "
                    "its 4 dimensions");
  Program shared = p;
  shared.entries[0].buckets[0].tensors[4].slices[4] = 10;
  expectError(shared, "entry 'main' bucket 0: param 'w.conv': slice 10 is out of range or repeated");
  // A huge dimension is refused, not multiplied past int64.
  Program huge = p;
  huge.entries[0].buckets[0].tensors[4].shape[1].value = int64_t(1) << 40;
  expectError(huge, "entry 'main' bucket 0: param 'w.conv' has a shape too large for any chip");
}

// Names are looked up within a role (lpurun's --input, --weights and
// --output), so an input or a parameter may share the output's name `out`;
// two tensors of one role may not share one, but for a parameter placed on
// each chip that holds a copy of it, or different slices of it.
TEST(ProgramFile, NamesAreUniqueWithinARole) {
  auto chip = loadChipDescription("groqchip1");
  ASSERT_TRUE(bool(chip));
  Program p = sampleProgram(chip->fingerprint());
  Program shared = p;
  for (Bucket &b : shared.entries[0].buckets) {
    b.tensors[0].name = "y"; // the input
    b.tensors[1].name = "y"; // a parameter
  }
  EXPECT_FALSE(bool(verifyProgram(shared, *chip)));
  Program copies = p;
  TensorPlacement copy = copies.entries[0].buckets[0].tensors[1]; // w.0 on chip 1
  copy.chip = 0; // the other slice of the weight
  copy.slices = {20};
  copy.shard = {0, 0, 960};
  copies.entries[0].buckets[0].tensors.push_back(copy);
  EXPECT_FALSE(bool(verifyProgram(copies, *chip)));
  // Two different slices of one weight may share a chip (a matmul split
  // by the weight's columns, another by its rows); the same slice twice
  // may not.
  Program both = copies;
  both.entries[0].buckets[0].tensors.back().chip = 1;
  EXPECT_FALSE(bool(verifyProgram(both, *chip)));
  Program twice = both;
  twice.entries[0].buckets[0].tensors.back().shard = {0, 320, 960};
  llvm::Error e = verifyProgram(twice, *chip);
  ASSERT_TRUE(bool(e));
  EXPECT_EQ(llvm::toString(std::move(e)), "entry 'main' bucket 0: param 'w.0' is placed twice on chip 1");
}

// A shard (a parameter's slice of its weight) is refused by verifyProgram
// unless it is a parameter's, three numbers, inside the weight, and every
// placement of the parameter is a slice of one weight.
TEST(ProgramFile, VerifyShards) {
  auto chip = loadChipDescription("groqchip1");
  ASSERT_TRUE(bool(chip));
  Program p = sampleProgram(chip->fingerprint());
  EXPECT_FALSE(bool(verifyProgram(p, *chip)));
  auto refused = [&](std::vector<int64_t> shard, size_t tensor = 1) {
    Program bad = p;
    bad.entries[0].buckets[0].tensors[tensor].shard = std::move(shard);
    return errorOf(verifyProgram(bad, *chip));
  };
  EXPECT_EQ(refused({0, 0, 320}), ""); // the whole weight, as a slice
  EXPECT_EQ(refused({0, 640, 960}), "");
  EXPECT_EQ(refused({0, 0, 4}, 0),
            "entry 'main' bucket 0: input 'x' has a shard 0,0,4, which only a param or a state may");
  {
    // A state's slice (a KV cache split by heads): its whole is checked.
    Program state = p;
    state.entries[0].buckets.resize(1); // one bucket: the state is x's shape
    TensorPlacement &x = state.entries[0].buckets[0].tensors[0];
    x.state = true;
    const int64_t rows = state.entries[0].buckets[0].concreteShape(x)[0];
    x.shard = {0, 0, 2 * rows};
    EXPECT_EQ(errorOf(verifyProgram(state, *chip)), "");
    x.shard = {0, rows + 1, 2 * rows};
    EXPECT_NE(errorOf(verifyProgram(state, *chip)).find("are not inside the state's"), std::string::npos);
  }
  EXPECT_EQ(refused({0, 0}),
            "entry 'main' bucket 0: param 'w.0': shard 0,0 is not three numbers AXIS,START,FULL");
  EXPECT_EQ(refused({1, 0, 640}),
            "entry 'main' bucket 0: param 'w.0': shard 1,0,640: axis 1 is not an axis of i8 [320]");
  EXPECT_EQ(refused({-1, 0, 640}),
            "entry 'main' bucket 0: param 'w.0': shard -1,0,640: axis -1 is not an axis of i8 [320]");
  EXPECT_EQ(refused({0, 400, 640}),
            "entry 'main' bucket 0: param 'w.0': shard 0,400,640: elements 400 to 400 + 320 of axis "
            "0 are not inside the weight's 640");
  EXPECT_EQ(refused({0, -1, 640}),
            "entry 'main' bucket 0: param 'w.0': shard 0,-1,640: elements -1 to -1 + 320 of axis 0 "
            "are not inside the weight's 640");
  EXPECT_EQ(refused({0, 0, 100}),
            "entry 'main' bucket 0: param 'w.0': shard 0,0,100: elements 0 to 0 + 320 of axis 0 "
            "are not inside the weight's 100");
  EXPECT_NE(refused({0, INT64_MAX, INT64_MAX}).find("are not inside the weight's"), std::string::npos);
  EXPECT_EQ(refused({0, 0, int64_t(1) << 62}),
            "entry 'main' bucket 0: param 'w.0': shard 0,0,4611686018427387904: the weight i8 "
            "[4611686018427387904] is too large");
  // The other slice of w.0 on chip 0, first of a weight of another size,
  // then of another dtype.
  Program two = p;
  TensorPlacement other = two.entries[0].buckets[0].tensors[1];
  other.chip = 0;
  other.slices = {20};
  other.shard = {0, 0, 640};
  two.entries[0].buckets[0].tensors.push_back(other);
  EXPECT_EQ(errorOf(verifyProgram(two, *chip)),
            "entry 'main' bucket 0: param 'w.0' is a weight i8 [640] on chip 0, but i8 [960] on "
            "chip 1 (a param's placements are one weight or its slices)");
  two.entries[0].buckets[0].tensors.back().shard = {0, 0, 960};
  EXPECT_EQ(errorOf(verifyProgram(two, *chip)), "");
  two.entries[0].buckets[0].tensors.back().dtype = DType::I16;
  two.entries[0].buckets[0].tensors.back().slices = {20, 21};
  EXPECT_EQ(errorOf(verifyProgram(two, *chip)),
            "entry 'main' bucket 0: param 'w.0' is a weight i16 [960] on chip 0, but i8 [960] on "
            "chip 1 (a param's placements are one weight or its slices)");
  // A whole copy and a slice of the same weight agree.
  two.entries[0].buckets[0].tensors.back() = other;
  two.entries[0].buckets[0].tensors.back().shard.clear();
  two.entries[0].buckets[0].tensors.back().shape = {{960, ""}};
  EXPECT_EQ(errorOf(verifyProgram(two, *chip)), "");
}

// The placement fields that need no chip are checked when the binary is read.
TEST(ProgramFile, BadPlacementsInBinaries) {
  auto refused = [](Program p) {
    std::string bin = writeProgramBinary(p);
    return errorOf(readProgramBinary(
        llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bin.data()), bin.size()), "b"));
  };
  Program perm = sampleProgram(1);
  perm.entries[0].buckets[0].tensors[4].perm = {3, 2, 1, 9};
  EXPECT_EQ(refused(perm), "b: not a valid program file: tensor 'w.conv': its perm is not a "
                           "permutation of its 4 dimensions");
  perm.entries[0].buckets[0].tensors[4].perm = {0, 1};
  EXPECT_NE(refused(perm), "");
  Program odd = sampleProgram(1);
  odd.entries[0].buckets[0].tensors[4].slices.pop_back();
  EXPECT_EQ(refused(odd), "b: not a valid program file: tensor 'w.conv': 5 slices for a 2-byte "
                          "dtype in chunks");
  Program unchunked = sampleProgram(1);
  unchunked.entries[0].buckets[0].tensors[4].chunkRows = 0;
  EXPECT_EQ(refused(unchunked), "b: not a valid program file: tensor 'w.conv': 6 slices for a "
                                "2-byte dtype in one chunk");
}

// permuteElements against a transpose written out by hand, and back.
TEST(ProgramFile, PermuteElements) {
  const int64_t A = 2, B = 3, C = 4;
  std::vector<uint8_t> x(A * B * C * 2);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = uint8_t(i * 37 + 11);
  std::vector<uint8_t> perm = {2, 0, 1}; // stored [C, A, B]
  std::vector<uint8_t> stored = permuteElements(x, {A, B, C}, perm, 2, false);
  ASSERT_EQ(stored.size(), x.size());
  for (int64_t c = 0; c < C; ++c)
    for (int64_t a = 0; a < A; ++a)
      for (int64_t b = 0; b < B; ++b)
        for (int k = 0; k < 2; ++k)
          ASSERT_EQ(stored[((c * A + a) * B + b) * 2 + k], x[((a * B + b) * C + c) * 2 + k]);
  EXPECT_EQ(permuteElements(stored, {A, B, C}, perm, 2, true), x);
  EXPECT_EQ(permuteElements(x, {A, B, C}, {}, 2, false), x);
}

// A chunked placement: which slice and address each row lands on.
TEST(ProgramFile, PlacementGeometryOfChunks) {
  TensorPlacement t{TensorRole::Param, "t", DType::F16, {{10, ""}, {700, ""}}, 0, {1, 2, 3, 4, 5, 6}, 100, Layout::Rows, {}, 4, {}, {}};
  auto g = placementGeometry(t, {10, 700}, 320, 8192);
  ASSERT_TRUE(bool(g)) << llvm::toString(g.takeError());
  EXPECT_EQ(g->perRow, 3);
  EXPECT_EQ(g->chunks, 3);
  EXPECT_EQ(g->chunkVectors(2), 6); // rows 8 and 9
  EXPECT_EQ(g->address(5, 2), 100u + 1 * 3 + 2);
  EXPECT_EQ(g->slice(t.slices, 5, 0), 3);
  EXPECT_EQ(g->slice(t.slices, 9, 1), 6);
  EXPECT_EQ(g->slice(t.slices, 3, 1), 2);
}

// A binary program that could not be printed and read back is refused:
// found by scripts/fuzz.sh's round-trip check.
TEST(ProgramFile, OnlyCanonicalBinariesLoad) {
  auto refused = [](Program p) {
    std::string bin = writeProgramBinary(p);
    return errorOf(readProgramBinary(
        llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bin.data()), bin.size()), "b"));
  };
  EXPECT_EQ(refused(sampleProgram(1)), "");
  Program unused = sampleProgram(1);
  unused.entries[0].buckets[0].chips[0].queues[1].instrs[0].addr = 5; // nop has no address
  EXPECT_NE(refused(unused), "");
  Program noStream = sampleProgram(1);
  noStream.entries[0].buckets[0].chips[0].queues[0].instrs[0].dst = StreamRef{};
  EXPECT_NE(refused(noStream), "");
  Program spaced = sampleProgram(1);
  spaced.entries[0].buckets[0].tensors[0].name = "a b";
  EXPECT_NE(refused(spaced), "");
  Program negative = sampleProgram(1);
  negative.entries[0].buckets[0].dims[0].value = -4;
  EXPECT_NE(refused(negative), "");
  Program both = sampleProgram(1);
  both.entries[0].buckets[0].tensors[0].shape[0].value = 3; // named and numbered
  EXPECT_NE(refused(both), "");
  Program shortShard = sampleProgram(1);
  shortShard.entries[0].buckets[0].tensors[1].shard = {0, 320};
  EXPECT_NE(refused(shortShard).find("shard length"), std::string::npos);
}

// A state (a model's memory between calls) is an input and an output
// marked as such: version 7's byte a tensor, the text form's state-in and
// state-out. A corrupted flag, a flag on another role and one state of two
// shapes are refused.
TEST(ProgramFile, States) {
  auto chip = loadChipDescription("groqchip1");
  ASSERT_TRUE(bool(chip));
  auto bytesOf = [](const std::string &s) {
    return llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(s.data()), s.size());
  };
  Program p = sampleProgram(chip->fingerprint());
  Bucket &b = p.entries[0].buckets[0];
  TensorPlacement in{TensorRole::Input, "cache", DType::F16, {{6, ""}, {4, ""}}, 0, {8, 9}, 0,
                     Layout::Rows, {}, 0, {}, {}, true};
  TensorPlacement out = in;
  out.role = TensorRole::Output;
  out.slices = {16, 17};
  for (Bucket &each : p.entries[0].buckets) {
    each.tensors.push_back(in);
    each.tensors.push_back(out);
  }
  ASSERT_FALSE(bool(verifyProgram(p, *chip)));

  std::string text = printProgramText(p);
  EXPECT_NE(text.find("    tensor state-in cache f16 [6,4] chip 0 slices 8,9 addr 0 layout rows\n"),
            std::string::npos);
  EXPECT_NE(text.find("    tensor state-out cache f16 [6,4] chip 0 slices 16,17 addr 0"),
            std::string::npos);
  auto reparsed = parseProgramText(text, "t");
  ASSERT_TRUE(bool(reparsed)) << llvm::toString(reparsed.takeError());
  EXPECT_EQ(*reparsed, p);
  std::string bin = writeProgramBinary(p);
  auto read = readProgramBinary(bytesOf(bin), "b");
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(*read, p);
  EXPECT_EQ(errorOf(writeProgramBinary(p, 6)),
            "cannot write format version 6: input 'cache' is a state (version 7 added states)");
  // A chip's slice of a state is a state to an older version, not a
  // shard of a weight.
  Program sliced = p;
  for (Bucket &each : sliced.entries[0].buckets)
    for (TensorPlacement &t : each.tensors)
      t.shard = t.state ? std::vector<int64_t>{1, 0, 8} : std::vector<int64_t>{};
  EXPECT_EQ(errorOf(writeProgramBinary(sliced, 4)),
            "cannot write format version 4: input 'cache' is a state (version 7 added states)");

  // The flag's byte: where the file with the input not a state differs.
  Program plain = p;
  plain.entries[0].buckets[0].tensors[b.tensors.size() - 2].state = false;
  std::string other = writeProgramBinary(plain);
  ASSERT_EQ(other.size(), bin.size());
  size_t at = 0;
  for (size_t i = 32; i < bin.size(); ++i)
    if (bin[i] != other[i])
      at = i;
  ASSERT_NE(at, 0u);
  EXPECT_EQ(bin[at], 1);
  std::string bad = bin;
  bad[at] = 2;
  uint64_t hash = llvm::xxHash64(llvm::StringRef(bad).drop_front(32));
  for (int k = 0; k < 8; ++k)
    bad[24 + k] = char(hash >> (8 * k));
  EXPECT_EQ(errorOf(readProgramBinary(bytesOf(bad), "b")),
            "b: not a valid program file: input 'cache': state flag 2 (0 = not a state, 1 = a state)");

  Program param = p;
  param.entries[0].buckets[0].tensors[1].state = true; // w.0
  EXPECT_EQ(errorOf(readProgramBinary(bytesOf(writeProgramBinary(param)), "b")),
            "b: not a valid program file: param 'w.0' is marked a state: only an input or an output "
            "may be");
  EXPECT_EQ(errorOf(verifyProgram(param, *chip)),
            "entry 'main' bucket 0: param 'w.0' is marked a state: only an input or an output may be");

  Program shapes = p;
  shapes.entries[0].buckets[0].tensors.back().shape[0].value = 5;
  EXPECT_EQ(errorOf(verifyProgram(shapes, *chip)),
            "entry 'main' bucket 0: output 'cache' is a state f16 [5,4], but input 'cache' in entry "
            "'main' bucket 0 is f16 [6,4] (a state has one dtype and shape in every entry and bucket)");
  // Buckets of one entry have the same inputs and outputs: a bucket
  // without the state input that bucket 0 reads (or with one bucket 0 has
  // not) is refused, not run with the state missing from what lpurun
  // gives it.
  Program buckets = p;
  std::vector<TensorPlacement> &second = buckets.entries[0].buckets[1].tensors;
  second.erase(second.end() - 2); // the state input
  EXPECT_EQ(errorOf(verifyProgram(buckets, *chip)),
            "entry 'main' bucket 1 has no state input 'cache' (f16, rank 2), but bucket 0 has state input "
            "'cache' (f16, rank 2) (every bucket of an entry has the same inputs and outputs)");
  std::swap(buckets.entries[0].buckets[0], buckets.entries[0].buckets[1]);
  EXPECT_EQ(errorOf(verifyProgram(buckets, *chip)),
            "entry 'main' bucket 1 has state input 'cache' (f16, rank 2), which bucket 0 has not (every "
            "bucket of an entry has the same inputs and outputs)");
  Program typed = p;
  typed.entries[0].buckets[1].tensors.back().state = false;
  EXPECT_EQ(errorOf(verifyProgram(typed, *chip)),
            "entry 'main' bucket 1 has output 'cache' (f16, rank 2), but bucket 0 has state output 'cache' "
            "(f16, rank 2) (every bucket of an entry has the same inputs and outputs)");
  EXPECT_EQ(errorOf(parseProgramText("lpu-program 1\ntarget g\nentry m\nbucket\n"
                                     "tensor state x f16 [1] chip 0 slices 0,1 addr 0\n", "t")),
            "t:5: tensor role must be input, output, param, const, state-in or state-out, found "
            "'state'");
}
