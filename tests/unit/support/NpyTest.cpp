// .npy reading and writing through our own code, and every malformed input
// we can think of. Compatibility with numpy itself is in NumpyInteropTest.
#include "support/Npy.h"

#include "support/RandomTensor.h"
#include "tests/unit/support/TestFiles.h"

#include <gtest/gtest.h>

namespace lpu::tensor {
namespace {

using testing::errorText;
using testing::TempDir;

/// A version 1.0 image with the given header dictionary and data.
std::string makeNpy(const std::string &dict, const std::string &data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string parseError(const std::string &image) {
  auto tensor = parseNpy(image, "t.npy");
  return errorText(tensor);
}

TEST(Npy, RoundTripEveryDType) {
  for (DType type : kAllDTypes) {
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{}, {5}, {2, 3}, {2, 0, 4}, {1, 2, 3, 2}}) {
      Tensor original = randomTensor(7, "t", type, shape);
      std::string image = serializeNpy(original);
      EXPECT_EQ(image.find("\x93NUMPY"), 0u);
      auto back = parseNpy(image, "t.npy");
      ASSERT_TRUE(bool(back)) << errorText(back.takeError());
      EXPECT_EQ(*back, original) << original.typeString();
    }
  }
}

TEST(Npy, HeaderLayout) {
  std::string image = serializeNpy(Tensor(DType::F32, {2, 3}));
  const size_t headerEnd = image.find('\n');
  EXPECT_EQ((headerEnd + 1) % 64, 0u) << "data must be 64-byte aligned";
  EXPECT_NE(image.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
            std::string::npos);
  EXPECT_NE(serializeNpy(Tensor(DType::I8, {4})).find("'shape': (4,)"), std::string::npos);
  EXPECT_NE(serializeNpy(Tensor(DType::Bool, {})).find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(serializeNpy(Tensor(DType::BF16, {1})).find("'descr': '|V2'"), std::string::npos);
}

TEST(Npy, FileRoundTripAndExpectedType) {
  TempDir dir;
  Tensor t = Tensor::fromFloats(DType::F16, {2, 2}, {1, 2, 3, 4});
  ASSERT_FALSE(writeNpyFile(dir.file("a.npy"), t));
  auto back = readNpyFile(dir.file("a.npy"));
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(*back, t);
  auto ok = readNpyFile(dir.file("a.npy"), DType::F16, {2, 2});
  EXPECT_TRUE(bool(ok));
  auto wrongShape = readNpyFile(dir.file("a.npy"), DType::F16, {4});
  EXPECT_EQ(errorText(wrongShape), dir.file("a.npy") + ": expected 4xf16, got 2x2xf16");
  auto wrongType = readNpyFile(dir.file("a.npy"), DType::F32, {2, 2});
  EXPECT_EQ(errorText(wrongType), dir.file("a.npy") + ": expected 2x2xf32, got 2x2xf16");
}

TEST(Npy, MissingFileAndDirectory) {
  TempDir dir;
  auto missing = readNpyFile(dir.file("nope.npy"));
  EXPECT_EQ(errorText(missing), dir.file("nope.npy") + ": cannot read: No such file or directory");
  auto directory = readNpyFile(dir.path());
  EXPECT_EQ(errorText(directory), dir.path() + ": cannot read: it is a directory");
  EXPECT_NE(errorText(writeNpyFile(dir.file("no/such/dir.npy"), Tensor())).find("cannot write"),
            std::string::npos);
}

TEST(Npy, AcceptedDescriptors) {
  const std::string two(2, '\0');
  for (const char *descr : {"<V2", "|V2", "bfloat16"}) {
    auto t = parseNpy(
        makeNpy(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (1,), }",
                std::string("\x80\x3f", 2)),
        "t.npy");
    ASSERT_TRUE(bool(t)) << descr << errorText(t.takeError());
    EXPECT_EQ(t->dtype(), DType::BF16);
    EXPECT_EQ(t->getFloat(0), 1.0f);
  }
  // Double quotes, no trailing comma, odd spacing, '=' and '|' byte orders.
  auto t = parseNpy(makeNpy("{\"shape\":(2,),\"descr\":\"=i2\",\"fortran_order\":False}",
                            std::string("\1\0\2\0", 4)),
                    "t.npy");
  ASSERT_TRUE(bool(t)) << errorText(t.takeError());
  EXPECT_EQ(t->getInt(1), 2);
  // A 1-D Fortran-order array has the same layout as a C-order one.
  auto f = parseNpy(makeNpy("{'descr': '|i1', 'fortran_order': True, 'shape': (2,), }", "\1\2"),
                    "t.npy");
  EXPECT_TRUE(bool(f)) << errorText(f.takeError());
  // numpy reads any non-zero byte as True; we store 1.
  auto b =
      parseNpy(makeNpy("{'descr': '|b1', 'fortran_order': False, 'shape': (), }", "\x07"), "t.npy");
  ASSERT_TRUE(bool(b));
  EXPECT_EQ(b->bytes()[0], 1);
}

TEST(Npy, RejectsUnsupportedDTypes) {
  auto withDescr = [](const std::string &descr, size_t bytes) {
    return parseError(makeNpy("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }",
                              std::string(bytes, '\0')));
  };
  EXPECT_TRUE(llvm::StringRef(withDescr("<f8", 8))
                  .startswith("t.npy: unsupported dtype '<f8' (float64); supported: bool '|b1'"));
  EXPECT_NE(withDescr("<i8", 8).find("(int64)"), std::string::npos);
  EXPECT_NE(withDescr("|u1", 1).find("(uint8)"), std::string::npos);
  EXPECT_NE(withDescr("|O", 8).find("(Python objects)"), std::string::npos);
  EXPECT_NE(withDescr("<U3", 12).find("(unicode strings)"), std::string::npos);
  EXPECT_EQ(withDescr(">f4", 4), "t.npy: big-endian data ('>f4') is not supported; save the "
                                 "array with a little-endian dtype");
  EXPECT_NE(withDescr("<V4", 4).find("unsupported dtype '<V4'"), std::string::npos);
  // Bytes that are not printable ASCII are quoted escaped, not raw.
  EXPECT_NE(withDescr(std::string("<f\0" "2\xe9", 5), 2).find("unsupported dtype '<f\\002\\E9'"),
            std::string::npos);
  EXPECT_EQ(parseError(makeNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                               std::string(4, '\0'))),
            "t.npy: structured (record) dtypes are not supported");
}

TEST(Npy, RejectsFortranOrder) {
  EXPECT_EQ(parseError(makeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                               std::string(16, '\0'))),
            "t.npy: Fortran-order (column-major) arrays are not supported; save with "
            "np.save(path, np.ascontiguousarray(a))");
}

TEST(Npy, RejectsTruncatedAndOversizedData) {
  const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(parseError(makeNpy(dict, std::string(23, '\0'))),
            "t.npy: truncated data: 2x3xi32 needs 24 bytes, the file has 23");
  EXPECT_EQ(parseError(makeNpy(dict, std::string(25, '\0'))),
            "t.npy: 1 unexpected bytes after the data of 2x3xi32");
  // A header that claims a gigantic shape must fail on size, not allocate.
  EXPECT_NE(parseError(makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': "
                               "(100000, 100000), }",
                               ""))
                .find("truncated data"),
            std::string::npos);
  EXPECT_NE(parseError(makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': "
                               "(4611686018427387904, 4), }",
                               ""))
                .find("too large"),
            std::string::npos);
}

TEST(Npy, RejectsMalformedHeaders) {
  EXPECT_EQ(parseError(""), "t.npy: not an .npy file (no \\x93NUMPY magic)");
  EXPECT_EQ(parseError("PK\3\4 a zip file"), "t.npy: not an .npy file (no \\x93NUMPY magic)");
  EXPECT_EQ(parseError("\x93NUMPY"), "t.npy: truncated .npy header");
  EXPECT_EQ(parseError(std::string("\x93NUMPY\x09\x00\x10\x00", 10)),
            "t.npy: unsupported .npy format version 9.0");
  EXPECT_EQ(parseError(std::string("\x93NUMPY\x01\x00\xff\x00{}", 12)),
            "t.npy: truncated .npy header: it claims 255 bytes, the file has 2 after the prefix");
  auto bad = [](const std::string &dict) { return parseError(makeNpy(dict, "")); };
  EXPECT_EQ(bad("'descr'"), "t.npy: malformed .npy header at offset 0: expected '{'");
  EXPECT_EQ(bad("{'descr': '<f4', 'shape': (), }"),
            "t.npy: malformed .npy header: no 'fortran_order' key");
  EXPECT_EQ(bad("{'fortran_order': False, 'shape': (), }"),
            "t.npy: malformed .npy header: no 'descr' key");
  EXPECT_EQ(bad("{'descr': '<f4', 'fortran_order': False}"),
            "t.npy: malformed .npy header: no 'shape' key");
  EXPECT_NE(bad("{'descr': '<f4', 'fortran_order': maybe, 'shape': (), }")
                .find("'fortran_order' must be True or False"),
            std::string::npos);
  EXPECT_NE(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }")
                .find("expected a dimension"),
            std::string::npos);
  EXPECT_NE(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }")
                .find("expected a dimension"),
            std::string::npos);
  EXPECT_NE(
      bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }").find("expected ',' or ')'"),
      std::string::npos);
  EXPECT_NE(bad("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }")
                .find("'shape' must be a tuple"),
            std::string::npos);
  EXPECT_NE(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}")
                .find("unexpected key 'x'"),
            std::string::npos);
  EXPECT_NE(bad("{'descr': '<f4 , 'fortran_order': False, 'shape': (), }").find("malformed"),
            std::string::npos);
  EXPECT_NE(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (), } junk")
                .find("unexpected text after the closing '}'"),
            std::string::npos);
  EXPECT_NE(bad("{'descr': '<f4', 'fortran_order': False, 'shape': ()").find("malformed"),
            std::string::npos);
}

// Every prefix of a valid file and every single-byte corruption of its
// header must give a value or an error, never a crash (run under ASan too).
TEST(Npy, NeverCrashesOnDamagedInput) {
  const std::string image = serializeNpy(randomTensor(1, "x", DType::F16, {3, 5}));
  for (size_t length = 0; length < image.size(); ++length) {
    auto t = parseNpy(image.substr(0, length), "t.npy");
    EXPECT_FALSE(bool(t)) << length;
    llvm::consumeError(t.takeError());
  }
  for (size_t i = 0; i < 128; ++i) {
    for (int value : {0, 1, int('('), int(')'), int(','), int('\''), int('9'), 0x80, 0xff}) {
      std::string damaged = image;
      damaged[i] = static_cast<char>(value);
      auto t = parseNpy(damaged, "t.npy");
      if (!t)
        llvm::consumeError(t.takeError());
    }
  }
}

TEST(Npy, Version2HeaderForManyDimensions) {
  // A header over 65535 bytes needs version 2.0's 4-byte length.
  std::vector<int64_t> shape(25000, 1);
  Tensor t(DType::I8, shape);
  std::string image = serializeNpy(t);
  EXPECT_EQ(image[6], '\x02');
  auto back = parseNpy(image, "t.npy");
  ASSERT_TRUE(bool(back)) << errorText(back.takeError());
  EXPECT_EQ(back->rank(), 25000u);
}

} // namespace
} // namespace lpu::tensor
