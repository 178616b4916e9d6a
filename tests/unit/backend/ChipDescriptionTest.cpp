#include "backend/ChipDescription.h"

#include <gtest/gtest.h>

using namespace lpu::backend;

TEST(ChipDescription, DefaultChipHasThePublishedFigures) {
  auto chip = loadChipDescription("groqchip1");
  ASSERT_TRUE(bool(chip)) << llvm::toString(chip.takeError());
  EXPECT_EQ(chip->name, "groqchip1");
  EXPECT_EQ(chip->clockMHz, 900);
  EXPECT_EQ(chip->lanes, 320u);
  EXPECT_EQ(chip->memSlices, 88u);
  EXPECT_EQ(chip->sramBytes(), 220ull * 1024 * 1024);
  // 144 published queues (MEM 88, VXM 16, MXM 12, SXM 28) plus one per C2C link.
  EXPECT_EQ(chip->queues[0] + chip->queues[1] + chip->queues[2] + chip->queues[3], 144u);
  EXPECT_EQ(chip->timingOf(Opcode::MatMul, DType::F16).issue, 4u);
  EXPECT_EQ(chip->timingOf(Opcode::MatMul, DType::I8).issue, 1u);
  EXPECT_EQ(chip->timingOf(Opcode::Read, DType::I8).latency, 2u); // from the "*" row
  EXPECT_EQ(chip->vxmPosition(), 46u);
  EXPECT_EQ(chip->slicePosition(0), 2u);
  EXPECT_EQ(chip->slicePosition(44), 47u);
  EXPECT_EQ(chip->width(), 93u);
}

TEST(ChipDescription, FingerprintIgnoresCommentsButNotValues) {
  auto a = parseChipDescription("name x\nclock_mhz 900\n", "a");
  auto b = parseChipDescription("# a comment\nname x   # trailing\n\nclock_mhz 900\n", "b");
  auto c = parseChipDescription("name x\nclock_mhz 1000\n", "c");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->fingerprint(), b->fingerprint());
  EXPECT_NE(a->fingerprint(), c->fingerprint());
  auto again = parseChipDescription(a->print(), "printed");
  ASSERT_TRUE(bool(again));
  EXPECT_EQ(again->fingerprint(), a->fingerprint());
}

TEST(ChipDescription, ErrorsNameTheLine) {
  auto expectError = [](const char *text, const char *message) {
    auto chip = parseChipDescription(text, "f.chip");
    ASSERT_FALSE(bool(chip));
    EXPECT_EQ(llvm::toString(chip.takeError()), message);
  };
  expectError("name x\nbogus 3\n", "f.chip:2: unknown key 'bogus'");
  expectError("name x\nlanes many\n", "f.chip:2: expected a whole number, found 'many'");
  expectError("name x\ntiming frob * 1 1\n", "f.chip:2: unknown instruction 'frob'");
  expectError("name x\ntiming add * 500 1\n",
              "f.chip:2: latency must be at most 100 and issue interval at least 1");
  expectError("name x\nmem_slices 7\n",
              "f.chip: mem_slices and mxm_planes must be even and there must be streams and SRAM");
  expectError("lanes 320\n", "f.chip: missing 'name'");
}

TEST(ChipDescription, UnknownChipIsAnError) {
  auto chip = loadChipDescription("nosuchchip");
  ASSERT_FALSE(bool(chip));
  EXPECT_NE(llvm::toString(chip.takeError()).find("unknown chip 'nosuchchip'"), std::string::npos);
}

TEST(ChipDescription, TimingTableFollowsTheRowsAndTheirChanges) {
  auto chip = parseChipDescription("name x\ntiming mm f16 7 4\ntiming mm * 3 1\ntiming add * 2 1\n", "t");
  ASSERT_TRUE(bool(chip)) << llvm::toString(chip.takeError());
  EXPECT_EQ(chip->timingOf(Opcode::MatMul, DType::F16).latency, 7u);
  EXPECT_EQ(chip->timingOf(Opcode::MatMul, DType::F16).issue, 4u);
  EXPECT_EQ(chip->timingOf(Opcode::MatMul, DType::I8).latency, 3u); // the "*" row
  EXPECT_EQ(chip->timingOf(Opcode::Add, DType::F32).latency, 2u);
  EXPECT_EQ(chip->timingOf(Opcode::Exp, DType::F32).latency, 1u); // no row: the default
  // A changed row counts once the table is rebuilt.
  chip->timing[{Opcode::Add, int(DType::F32)}] = ChipDescription::Timing{5, 2};
  chip->indexTimings();
  EXPECT_EQ(chip->timingOf(Opcode::Add, DType::F32).latency, 5u);
  EXPECT_EQ(chip->timingOf(Opcode::Add, DType::I32).latency, 2u);
}
