#include "support/SafeTensors.h"

#include "support/RandomTensor.h"
#include "tests/unit/support/TestFiles.h"

#include <llvm/Support/MemoryBuffer.h>

#include <gtest/gtest.h>

namespace lpu::tensor {
namespace {

using testing::errorText;
using testing::TempDir;

/// A file image with a hand-written JSON header and `dataBytes` zero bytes.
std::string makeFile(const std::string &json, size_t dataBytes) {
  std::string out;
  for (unsigned i = 0; i < 8; ++i)
    out += static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + std::string(dataBytes, '\0');
}

llvm::Expected<SafeTensorsFile> parseImage(const std::string &image) {
  return SafeTensorsFile::parse(llvm::MemoryBuffer::getMemBufferCopy(image), "w.safetensors");
}

std::string parseError(const std::string &image) {
  auto file = parseImage(image);
  return errorText(file);
}

std::vector<NamedTensor> sampleTensors() {
  std::vector<NamedTensor> tensors;
  int index = 0;
  for (DType type : kAllDTypes) {
    std::string name = "layers." + std::to_string(index++) + ".w";
    tensors.emplace_back(name, randomTensor(3, name, type, {2, 3}));
  }
  tensors.emplace_back("scalar", randomTensor(3, "scalar", DType::F32, {}));
  tensors.emplace_back("empty", Tensor(DType::F16, {0, 4}));
  return tensors;
}

TEST(SafeTensors, RoundTripByParameterPath) {
  TempDir dir;
  const std::vector<NamedTensor> tensors = sampleTensors();
  ASSERT_FALSE(writeSafeTensorsFile(dir.file("w.safetensors"), tensors, {{"format", "pt"}}));
  auto file = SafeTensorsFile::open(dir.file("w.safetensors"));
  ASSERT_TRUE(bool(file)) << errorText(file.takeError());
  EXPECT_EQ(file->entries().size(), tensors.size());
  EXPECT_EQ(file->metadata().at("format"), "pt");
  for (const auto &[name, tensor] : tensors) {
    auto back = file->read(name);
    ASSERT_TRUE(bool(back)) << errorText(back.takeError());
    EXPECT_EQ(*back, tensor) << name;
  }
  const SafeTensorsFile::Entry *entry = file->find("layers.4.w");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->dtype, DType::F16);
  auto missing = file->read("layers.9.w");
  EXPECT_EQ(errorText(missing), dir.file("w.safetensors") + ": no tensor named 'layers.9.w'");
}

// A slice on any axis is the whole tensor's slice (sliceAxis), read alone.
TEST(SafeTensors, ReadSliceEqualsSliceOfWhole) {
  TempDir dir;
  std::vector<NamedTensor> tensors;
  tensors.emplace_back("w", randomTensor(5, "w", DType::F16, {3, 7, 5}));
  tensors.emplace_back("b", randomTensor(5, "b", DType::Bool, {6}));
  ASSERT_FALSE(writeSafeTensorsFile(dir.file("w.safetensors"), tensors, {}));
  auto file = SafeTensorsFile::open(dir.file("w.safetensors"));
  ASSERT_TRUE(bool(file)) << errorText(file.takeError());
  for (int64_t axis = 0; axis < 3; ++axis) {
    int64_t dim = tensors[0].second.shape()[size_t(axis)];
    for (int64_t start : {int64_t(0), int64_t(1), dim - 1}) {
      auto slice = file->readSlice("w", axis, start, dim - start);
      ASSERT_TRUE(bool(slice)) << errorText(slice.takeError());
      auto expected = sliceAxis(tensors[0].second, axis, start, dim - start);
      ASSERT_TRUE(bool(expected));
      EXPECT_EQ(*slice, *expected) << "axis " << axis << " start " << start;
    }
  }
  auto bits = file->readSlice("b", 0, 2, 3);
  ASSERT_TRUE(bool(bits));
  auto expectedBits = sliceAxis(tensors[1].second, 0, 2, 3);
  ASSERT_TRUE(bool(expectedBits));
  EXPECT_EQ(*bits, *expectedBits);
  auto past = file->readSlice("w", 1, 5, 3);
  EXPECT_EQ(errorText(past), dir.file("w.safetensors") + ": tensor 'w' [3, 7, 5] has no slice [5, 8) on axis 1");
  auto noAxis = file->readSlice("w", 3, 0, 1);
  EXPECT_EQ(errorText(noAxis), dir.file("w.safetensors") + ": tensor 'w' [3, 7, 5] has no slice [0, 1) on axis 3");
  auto none = file->readSlice("v", 0, 0, 1);
  EXPECT_EQ(errorText(none), dir.file("w.safetensors") + ": no tensor named 'v'");
}

TEST(SafeTensors, HeaderIsPaddedAndDataFollows) {
  auto image = serializeSafeTensors({{"a", Tensor::fromFloats(DType::F32, {2}, {1, 2})}});
  ASSERT_TRUE(bool(image));
  EXPECT_EQ(image->size() % 8, 0u);
  EXPECT_NE(image->find("\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"),
            std::string::npos);
}

TEST(SafeTensors, WriterRejectsBadNames) {
  Tensor t;
  auto dup = serializeSafeTensors({{"a", t}, {"a", t}});
  EXPECT_EQ(errorText(dup), "safetensors: duplicate tensor name 'a'");
  auto reserved = serializeSafeTensors({{"__metadata__", t}});
  EXPECT_EQ(errorText(reserved), "safetensors: invalid tensor name '__metadata__'");
}

TEST(SafeTensors, CheckReportsEveryMismatchAtOnce) {
  auto image = serializeSafeTensors({{"a.w", Tensor(DType::F32, {2, 3})},
                                     {"b.w", Tensor(DType::F16, {4})},
                                     {"c.w", Tensor(DType::F16, {4})},
                                     {"stray", Tensor(DType::I8, {1})},
                                     {"zz", Tensor(DType::I8, {1})}});
  ASSERT_TRUE(bool(image));
  auto file = parseImage(*image);
  ASSERT_TRUE(bool(file));
  const std::vector<TensorSpec> expected = {{"a.w", DType::F32, {2, 3}},
                                            {"b.w", DType::F32, {4}},
                                            {"c.w", DType::F16, {2, 2}},
                                            {"d.w", DType::F16, {1}},
                                            {"e.w", DType::F16, {1}}};
  EXPECT_EQ(errorText(checkTensors(*file, expected)),
            "w.safetensors: the weights do not match the model:\n"
            "  missing (2): d.w, e.w\n"
            "  extra (2): stray, zz\n"
            "  wrong dtype (1): b.w (expected f32, file has f16)\n"
            "  wrong shape (1): c.w (expected [2, 2], file has [4])");
  auto loaded = loadTensors(*file, expected);
  EXPECT_FALSE(bool(loaded));
  llvm::consumeError(loaded.takeError());

  const std::vector<TensorSpec> exact = {{"a.w", DType::F32, {2, 3}},
                                         {"b.w", DType::F16, {4}},
                                         {"c.w", DType::F16, {4}},
                                         {"stray", DType::I8, {1}},
                                         {"zz", DType::I8, {1}}};
  EXPECT_FALSE(checkTensors(*file, exact));
  auto all = loadTensors(*file, exact);
  ASSERT_TRUE(bool(all));
  EXPECT_EQ(all->size(), 5u);
  EXPECT_EQ(all->at("a.w").typeString(), "2x3xf32");
}

TEST(SafeTensors, RejectsBadFiles) {
  EXPECT_EQ(parseError("abc"),
            "w.safetensors: not a .safetensors file (shorter than its 8-byte header length)");
  EXPECT_EQ(parseError(std::string("\xff\0\0\0\0\0\0\0{}", 10)),
            "w.safetensors: truncated .safetensors file: the header claims 255 bytes, the file "
            "has 2 after the length");
  EXPECT_NE(parseError(makeFile("{not json", 0)).find("malformed .safetensors header"),
            std::string::npos);
  EXPECT_EQ(parseError(makeFile("[1, 2]", 0)),
            "w.safetensors: malformed .safetensors header: not a JSON object");
  // Nested deep enough to overflow a recursive parser's stack: refused
  // before parsing; brackets inside strings do not count.
  EXPECT_EQ(parseError(makeFile(std::string(100000, '[') + std::string(100000, ']'), 0)),
            "w.safetensors: malformed .safetensors header: nested more than 64 levels deep");
  EXPECT_EQ(parseError(makeFile(R"({"__metadata__":{"k":"[[[[\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}, "w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8)),
            "w.safetensors: tensor 'w': unsupported dtype 'F64'; supported: BOOL I8 I16 I32 F16 "
            "BF16 F32");
  EXPECT_EQ(parseError(makeFile(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8)),
            "w.safetensors: tensor 'w': unsupported dtype 'F64'; supported: BOOL I8 I16 I32 F16 "
            "BF16 F32");
  EXPECT_EQ(parseError(makeFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}})", 12)),
            "w.safetensors: tensor 'w': 2xf32 needs 8 bytes, data_offsets give 12");
  EXPECT_EQ(parseError(makeFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)),
            "w.safetensors: tensor 'w': data_offsets [0, 8] lie outside the 4-byte data section");
  EXPECT_EQ(parseError(makeFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)),
            "w.safetensors: tensor 'w': data_offsets [8, 0] end before they begin");
  EXPECT_EQ(parseError(makeFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                R"("b":{"dtype":"I32","shape":[2],"data_offsets":[4,12]}})",
                                12)),
            "w.safetensors: tensors 'a' and 'b' overlap in the data section");
  EXPECT_NE(parseError(makeFile(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0))
                .find("'shape' must hold non-negative integers"),
            std::string::npos);
  // Sizes are integers as written: 3.0 and 3e0 are refused (the JSON
  // library alone would read them as 3).
  EXPECT_NE(parseError(makeFile(R"({"w":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", 4))
                .find("'shape' must hold non-negative integers"),
            std::string::npos);
  EXPECT_NE(parseError(makeFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4e0]}})", 4))
                .find("'data_offsets' must be two non-negative integers"),
            std::string::npos);
  // A key given twice (the JSON library would keep the last silently),
  // in the header or inside an entry; the same key in two objects is fine.
  EXPECT_EQ(parseError(makeFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                R"( "w" :{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})",
                                4)),
            "w.safetensors: malformed .safetensors header: the key 'w' is given twice in one object");
  EXPECT_EQ(parseError(makeFile(R"({"w":{"dtype":"F32","shape":[1],"dtype":"I32","data_offsets":[0,4]}})", 4)),
            "w.safetensors: malformed .safetensors header: the key 'dtype' is given twice in one object");
  EXPECT_EQ(parseError(makeFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                                R"("__metadata__":{"dtype":"x, \"dtype\": y"}})",
                                8)),
            "");
  EXPECT_NE(parseError(makeFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4))
                .find("'data_offsets' must be two non-negative integers"),
            std::string::npos);
  EXPECT_NE(parseError(makeFile(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4))
                .find("no 'dtype' string"),
            std::string::npos);
  EXPECT_NE(parseError(makeFile(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4))
                .find("no 'shape' array"),
            std::string::npos);
  EXPECT_NE(parseError(makeFile(R"({"w":7})", 0)).find("expected a JSON object"),
            std::string::npos);
  EXPECT_EQ(parseError(makeFile(R"({"__metadata__":{"a":1}})", 0)),
            "w.safetensors: '__metadata__' value of 'a' must be a string");
  EXPECT_NE(parseError(makeFile(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],)"
                                R"("data_offsets":[0,4]}})",
                                4))
                .find("too large"),
            std::string::npos);
  TempDir dir;
  auto missing = SafeTensorsFile::open(dir.file("none.safetensors"));
  EXPECT_EQ(errorText(missing),
            dir.file("none.safetensors") + ": cannot read: No such file or directory");
}

TEST(SafeTensors, NeverCrashesOnDamagedInput) {
  auto image = serializeSafeTensors(sampleTensors());
  ASSERT_TRUE(bool(image));
  for (size_t length = 0; length < image->size(); length += 3) {
    auto file = parseImage(image->substr(0, length));
    EXPECT_FALSE(bool(file)) << length;
    llvm::consumeError(file.takeError());
  }
  for (size_t i = 0; i < 200 && i < image->size(); ++i) {
    for (int value : {0, int('0'), int('9'), int('"'), int(','), int(']'), 0xff}) {
      std::string damaged = *image;
      damaged[i] = static_cast<char>(value);
      auto file = parseImage(damaged);
      if (!file) {
        llvm::consumeError(file.takeError());
        continue;
      }
      for (const SafeTensorsFile::Entry &entry : file->entries()) {
        auto t = file->read(entry.name);
        if (!t)
          llvm::consumeError(t.takeError());
      }
    }
  }
}

} // namespace
} // namespace lpu::tensor
