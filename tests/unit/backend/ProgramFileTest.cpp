#include "backend/ChipDescription.h"
#include "backend/ProgramBinary.h"
#include "backend/ProgramText.h"

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
  b.tensors.push_back({TensorRole::Input, "x", DType::F16, {{0, "n"}, {320, ""}}, 0, {0, 1}, 0, Layout::Rows, {}});
  b.tensors.push_back({TensorRole::Param, "w.0", DType::I8, {{320, ""}}, 1, {5}, 7, Layout::Rows, {}});
  b.tensors.push_back({TensorRole::Output, "y", DType::F32, {}, 0, {44, 45, 46, 47}, 100, Layout::Rows, {}});
  // A constant carries its bytes (a splat row of two f16 2.0).
  b.tensors.push_back({TensorRole::Constant, "const0", DType::F16, {{2, ""}}, 0, {6, 7}, 0,
                       Layout::Rows, {0x00, 0x40, 0x00, 0x40}});
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

std::string errorOf(llvm::Expected<Program> p) {
  if (p)
    return "";
  return llvm::toString(p.takeError());
}
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
  EXPECT_NE(text.find("tensor output y f32 [] chip 0 slices 44,45,46,47 addr 100 layout rows"), std::string::npos);
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
            "p.lpx: not a valid program file: format version 9, this lpurun reads version 2 "
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

// Version 2 added the third input stream (select) to every instruction
// record; a version 1 file is refused by its header, with a clear message.
TEST(ProgramFile, Version1FilesAreRefused) {
  EXPECT_EQ(kProgramFormatVersion, 2u);
  std::string bin = writeProgramBinary(sampleProgram(1));
  EXPECT_EQ(bin[8], 2);
  bin[8] = 1;
  auto bytes = llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bin.data()), bin.size());
  EXPECT_EQ(errorOf(readProgramBinary(bytes, "old.lpx")),
            "old.lpx: not a valid program file: format version 1, this lpurun reads version 2 "
            "(recompile the program with this lpuc)");
  EXPECT_EQ(errorOf(parseProgramFile(bytes, "old.lpx")),
            "old.lpx: not a valid program file: format version 1, this lpurun reads version 2 "
            "(recompile the program with this lpuc)");
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
}
