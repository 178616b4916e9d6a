// The packed layout in the program file: its text and binary forms, its
// geometry and what verifyProgram refuses.
#include "backend/ChipDescription.h"
#include "backend/ProgramBinary.h"
#include "backend/ProgramText.h"

#include <gtest/gtest.h>

using namespace lpu::backend;

namespace {
// BERT-base's word embedding packed in 12 chunks of 2730 rows (2730 * 768
// elements are 6552 whole vectors; as rows they would take 8190), a conv
// weight packed channels-last and a packed constant.
const char *kPackedProgram =
    "lpu-program 1\n"
    "target groqchip1\n"
    "topology single 1\n"
    "entry main\n"
    "  bucket\n"
    "    tensor param table f16 [30522,768] chip 0 slices "
    "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23 addr 0 layout packed chunk 2730\n"
    "    tensor param conv f16 [8,3,3,5] chip 0 slices 30,31 addr 100 layout packed perm 0,2,3,1\n"
    "    tensor const const0 f16 [3] chip 0 slices 32,33 addr 0 layout packed data 003c00400042\n"
    "    tensor input x f16 [7,700] chip 0 slices 34,35 addr 0 layout rows\n"
    "    chip 0\n";

template <typename T> std::string errorOf(llvm::Expected<T> p) {
  if (p)
    return "";
  return llvm::toString(p.takeError());
}

llvm::ArrayRef<uint8_t> bytesOf(const std::string &s) {
  return llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(s.data()), s.size());
}

Program parsed() {
  auto p = parseProgramText(kPackedProgram, "t");
  EXPECT_TRUE(bool(p)) << llvm::toString(p.takeError());
  return p ? std::move(*p) : Program{};
}
} // namespace

TEST(PackedLayout, TextRoundTripIsIdentity) {
  Program p = parsed();
  ASSERT_EQ(p.entries.size(), 1u);
  const std::vector<TensorPlacement> &ts = p.entries[0].buckets[0].tensors;
  EXPECT_EQ(ts[0].layout, Layout::Packed);
  EXPECT_EQ(ts[0].chunkRows, 2730u);
  EXPECT_EQ(ts[1].layout, Layout::Packed);
  EXPECT_EQ(ts[1].perm, (std::vector<uint8_t>{0, 2, 3, 1}));
  EXPECT_EQ(ts[2].layout, Layout::Packed);
  EXPECT_EQ(ts[3].layout, Layout::Rows);
  std::string text = printProgramText(p);
  EXPECT_NE(text.find("slices 30,31 addr 100 layout packed perm 0,2,3,1\n"), std::string::npos) << text;
  EXPECT_NE(text.find(",22,23 addr 0 layout packed chunk 2730\n"), std::string::npos) << text;
  auto again = parseProgramText(text, "t2");
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(*again, p);
  EXPECT_EQ(printProgramText(*again), text);
}

TEST(PackedLayout, BinaryRoundTripIsIdentity) {
  Program p = parsed();
  std::string bin = writeProgramBinary(p);
  EXPECT_EQ(bin[8], 7); // the newest version (4 added the packed layout)
  auto read = readProgramBinary(bytesOf(bin), "b");
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(*read, p);
  EXPECT_EQ(writeProgramBinary(*read), bin);
  // And through the text form, byte for byte.
  auto viaText = parseProgramText(printProgramText(*read), "t");
  ASSERT_TRUE(bool(viaText)) << llvm::toString(viaText.takeError());
  EXPECT_EQ(writeProgramBinary(*viaText), bin);
}

// A version 3 file cannot name the packed layout (a version 3 reader would
// refuse a version 4 file by its header); an unknown layout byte is
// refused by name, not read as rows.
TEST(PackedLayout, BinaryRefusesLayoutsItsVersionLacks) {
  Program p = parsed();
  // Version 4's payload is version 3's.
  auto v4 = writeProgramBinary(p, 4);
  ASSERT_TRUE(bool(v4)) << llvm::toString(v4.takeError());
  std::string v3 = *v4;
  v3[8] = 3; // the checksum covers the payload only
  EXPECT_EQ(errorOf(readProgramBinary(bytesOf(v3), "b")),
            "b: not a valid program file: tensor 'table': unknown layout 1 (format version 3 has "
            "0 = rows)");
  Program unknown = p;
  unknown.entries[0].buckets[0].tensors[1].layout = Layout(2);
  EXPECT_EQ(errorOf(readProgramBinary(bytesOf(writeProgramBinary(unknown)), "b")),
            "b: not a valid program file: tensor 'conv': unknown layout 2 (format version 7 has "
            "0 = rows, 1 = packed)");
  // A rows-only version 3 file still reads.
  Program rows = p;
  for (TensorPlacement &t : rows.entries[0].buckets[0].tensors)
    t.layout = Layout::Rows;
  EXPECT_EQ(errorOf(writeProgramBinary(p, 3)),
            "cannot write format version 3: tensor 'table' is packed (version 4 added the packed "
            "layout)");
  auto old = writeProgramBinary(rows, 3);
  ASSERT_TRUE(bool(old)) << llvm::toString(old.takeError());
  auto read = readProgramBinary(bytesOf(*old), "b");
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(*read, rows);
}

TEST(PackedLayout, TextRefusesUnknownLayouts) {
  EXPECT_EQ(errorOf(parseProgramText("lpu-program 1\ntarget g\nentry m\nbucket\n"
                                     "tensor input x f16 [2,3] chip 0 slices 0,1 addr 0 layout pack\n",
                                     "t")),
            "t:5: unknown layout 'pack' (expected rows or packed)");
}

// Element (r, c) is the chunk's flat element (r - first row) * C + c.
TEST(PackedLayout, Geometry) {
  TensorPlacement t{TensorRole::Param, "t", DType::F16, {{7, ""}, {700, ""}}, 0, {1, 2}, 5, Layout::Packed, {}, 0, {}, {}};
  auto g = placementGeometry(t, {7, 700}, 320, 8192);
  ASSERT_TRUE(bool(g)) << llvm::toString(g.takeError());
  EXPECT_TRUE(g->packed);
  EXPECT_EQ(g->chunkVectors(0), 16); // 4900 elements; as rows, 21 vectors
  EXPECT_EQ(g->locate(0, 0), (std::pair<uint32_t, unsigned>{5, 0}));
  EXPECT_EQ(g->locate(0, 659), (std::pair<uint32_t, unsigned>{7, 19}));
  EXPECT_EQ(g->locate(1, 0), (std::pair<uint32_t, unsigned>{7, 60}));
  EXPECT_EQ(g->locate(6, 699), (std::pair<uint32_t, unsigned>{20, 99}));

  // 40 rows in chunks of 16: 11200 elements (35 vectors) a chunk, the last
  // chunk's 8 rows in 17.5 vectors.
  t.shape = {{40, ""}, {700, ""}};
  t.chunkRows = 16;
  t.slices = {1, 2, 3, 4, 5, 6};
  auto c = placementGeometry(t, {40, 700}, 320, 8192);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->chunks, 3);
  EXPECT_EQ(c->chunkVectors(0), 35);
  EXPECT_EQ(c->chunkVectors(2), 18);
  EXPECT_EQ(c->locate(17, 3), (std::pair<uint32_t, unsigned>{7, 63}));
  EXPECT_EQ(c->slice(t.slices, 17, 1), 4);
  EXPECT_EQ(c->locate(39, 699), (std::pair<uint32_t, unsigned>{5 + 17, 159}));
}

TEST(PackedLayout, Verify) {
  auto chip = loadChipDescription("groqchip1");
  ASSERT_TRUE(bool(chip));
  Program p = parsed();
  p.chipFingerprint = chip->fingerprint();
  llvm::Error ok = verifyProgram(p, *chip);
  EXPECT_FALSE(bool(ok)) << llvm::toString(std::move(ok));
  auto expectError = [&](Program bad, const std::string &message) {
    llvm::Error e = verifyProgram(bad, *chip);
    ASSERT_TRUE(bool(e));
    EXPECT_EQ(llvm::toString(std::move(e)), message);
  };
  // SRAM holds a chunk's 6552 packed vectors from address 1640, not 1641.
  Program high = p;
  high.entries[0].buckets[0].tensors[0].addr = 1640;
  llvm::Error fits = verifyProgram(high, *chip);
  EXPECT_FALSE(bool(fits)) << llvm::toString(std::move(fits));
  high.entries[0].buckets[0].tensors[0].addr = 1641;
  expectError(high, "entry 'main' bucket 0: param 'table' does not fit in SRAM: addresses "
                    "1641..8193 of 8192");
  // As rows the same chunks need 8190 vectors a slice.
  Program rows = p;
  rows.entries[0].buckets[0].tensors[0].layout = Layout::Rows;
  rows.entries[0].buckets[0].tensors[0].addr = 3;
  expectError(rows, "entry 'main' bucket 0: param 'table' does not fit in SRAM: addresses "
                    "3..8193 of 8192");
  // Chunks that do not end on a vector boundary would move every later
  // chunk's rows to other lanes than code that counts lanes modulo 320
  // expects.
  Program ragged = p;
  ragged.entries[0].buckets[0].tensors[0].chunkRows = 2731;
  expectError(ragged, "entry 'main' bucket 0: param 'table' is packed in chunks of 2731 rows of 768 "
                      "elements, 2097408 a chunk: not a multiple of the 320 lanes");
  // Rows chunks have no such rule (each row starts a vector).
  Program rowChunks = p;
  rowChunks.entries[0].buckets[0].tensors[3].chunkRows = 3;
  rowChunks.entries[0].buckets[0].tensors[3].slices = {34, 35, 36, 37, 38, 39};
  llvm::Error rowsOk = verifyProgram(rowChunks, *chip);
  EXPECT_FALSE(bool(rowsOk)) << llvm::toString(std::move(rowsOk));
  // Rows and columns each under 2^32 whose product passes 2^63 (a packed
  // chunk's elements) are refused, not multiplied.
  Program huge = p;
  huge.entries[0].buckets[0].tensors[1].shape = {{int64_t(1) << 32, ""}, {int64_t(1) << 32, ""}};
  huge.entries[0].buckets[0].tensors[1].perm.clear();
  expectError(huge, "entry 'main' bucket 0: param 'conv' has a shape too large for any chip");
  huge.entries[0].buckets[0].tensors[1].shape = {{int64_t(1) << 32, ""}, {int64_t(1) << 32, ""}, {1, ""}};
  huge.entries[0].buckets[0].tensors[1].layout = Layout::Rows;
  expectError(huge, "entry 'main' bucket 0: param 'conv' has a shape too large for any chip");
  // A packed constant holds exactly its elements' bytes.
  Program data = p;
  data.entries[0].buckets[0].tensors[2].data.push_back(0);
  expectError(data, "entry 'main' bucket 0: const 'const0' holds 7 bytes of data, its shape needs 6");
}
