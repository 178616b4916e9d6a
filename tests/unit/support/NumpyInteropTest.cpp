// Compatibility with numpy (python3-numpy from Debian, run as
// /usr/bin/python3): numpy writes, we read, and the other way round; and our
// f16/bf16 conversions against numpy's arithmetic on large sets of values.
// Every expected number here is computed by numpy in the test itself.
#include "support/Npy.h"
#include "support/RandomTensor.h"
#include "support/SafeTensors.h"
#include "tests/unit/support/TestFiles.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <sys/wait.h>

namespace lpu::tensor {
namespace {

using testing::errorText;
using testing::TempDir;

/// Runs `script` with the directory as its argument; returns the exit code.
int runPython(const TempDir &dir, const std::string &script) {
  const std::string path = dir.file("script.py");
  testing::writeBytes(path, script);
  const std::string command = "/usr/bin/python3 " + path + " " + dir.path();
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<double> readDoubles(const std::string &path) {
  const std::string bytes = testing::readBytes(path);
  std::vector<double> values(bytes.size() / sizeof(double));
  if (!values.empty())
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(double));
  return values;
}

std::vector<int64_t> readShape(const std::string &path) {
  std::istringstream in(testing::readBytes(path));
  std::vector<int64_t> shape;
  for (int64_t dim; in >> dim;)
    shape.push_back(dim);
  return shape;
}

TEST(NumpyInterop, WeReadWhatNumpyWrites) {
  TempDir dir;
  ASSERT_EQ(runPython(dir, R"PY(
import sys, numpy as np
d = sys.argv[1]
i32 = np.iinfo(np.int32)
arrays = {
    'bool': np.array([[True, False, True], [False, False, True]]),
    'i8': np.array([-128, -1, 0, 1, 127], dtype=np.int8),
    'i16': np.arange(-6, 6, dtype=np.int16).reshape(3, 4) * np.int16(2731),
    'i32': np.array([i32.min, -1, 0, 16777217, i32.max], dtype=np.int32).reshape(5, 1),
    'f16': np.array([0.1, -2.5, 65504, 6e-8, 1e-5, np.inf, -np.inf, np.nan, -0.0, 3.14159],
                    dtype=np.float16).reshape(2, 5),
    'f32': (np.linspace(-3, 3, 24, dtype=np.float32) / np.float32(7)).reshape(2, 3, 4),
    'scalar': np.array(2.75, dtype=np.float32),
    'empty': np.zeros((0, 3), dtype=np.float16),
    'transposed': np.arange(24, dtype=np.float32).reshape(2, 3, 4).transpose(1, 0, 2),
}
for name, a in arrays.items():
    np.save(f'{d}/{name}.npy', a)
    np.ascontiguousarray(a, dtype=np.float64).tofile(f'{d}/{name}.f64')
    open(f'{d}/{name}.shape', 'w').write(' '.join(map(str, a.shape)))
# bf16 as docs/tensor-files.md tells users to write it: the bits as 2-byte
# voids. The values are exact in bf16, so no rounding is involved here.
x = np.array([1, -2.5, 0.15625, 2.0**-130, 65280, -0.0, np.inf], dtype=np.float32)
b = x.view(np.uint32)
b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
np.save(f'{d}/bf16.npy', b.view('V2'))
x.astype(np.float64).tofile(f'{d}/bf16.f64')
open(f'{d}/bf16.shape', 'w').write('7')
with open(f'{d}/v2.npy', 'wb') as f:
    np.lib.format.write_array(f, np.arange(6, dtype=np.int16).reshape(2, 3), version=(2, 0))
np.save(f'{d}/fortran.npy', np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
np.save(f'{d}/f64.npy', np.arange(3, dtype=np.float64))
np.save(f'{d}/i64.npy', np.arange(3, dtype=np.int64))
np.save(f'{d}/u8.npy', np.arange(3, dtype=np.uint8))
np.save(f'{d}/bigendian.npy', np.arange(3, dtype='>f4'))
np.save(f'{d}/object.npy', np.array([1, 'a'], dtype=object), allow_pickle=True)
)PY"),
            0);

  const std::pair<const char *, DType> files[] = {
      {"bool", DType::Bool},  {"i8", DType::I8},     {"i16", DType::I16},
      {"i32", DType::I32},    {"f16", DType::F16},   {"f32", DType::F32},
      {"scalar", DType::F32}, {"empty", DType::F16}, {"transposed", DType::F32},
      {"bf16", DType::BF16}};
  for (const auto &[name, type] : files) {
    SCOPED_TRACE(name);
    const std::string base = dir.file(name);
    auto tensor = readNpyFile(base + ".npy");
    ASSERT_TRUE(bool(tensor)) << errorText(tensor.takeError());
    EXPECT_EQ(tensor->dtype(), type);
    EXPECT_EQ(tensor->shape().vec(), readShape(base + ".shape"));
    const std::vector<double> expected = readDoubles(base + ".f64");
    ASSERT_EQ(static_cast<int64_t>(expected.size()), tensor->numElements());
    for (size_t i = 0; i < expected.size(); ++i) {
      if (isFloat(type)) {
        const double got = tensor->getFloat(static_cast<int64_t>(i));
        if (std::isnan(expected[i]))
          EXPECT_TRUE(std::isnan(got)) << i;
        else
          EXPECT_EQ(got, expected[i]) << i;
      } else {
        EXPECT_EQ(tensor->getInt(static_cast<int64_t>(i)), static_cast<int64_t>(expected[i])) << i;
      }
    }
  }
  auto v2 = readNpyFile(dir.file("v2.npy"));
  ASSERT_TRUE(bool(v2)) << errorText(v2.takeError());
  EXPECT_EQ(formatIree(*v2), "2x3xi16=[0 1 2][3 4 5]");

  auto error = [&](const char *name) {
    auto t = readNpyFile(dir.file(name));
    std::string text = errorText(t);
    EXPECT_EQ(text.find(dir.file(name) + ": "), 0u) << text; // names the file
    return text;
  };
  EXPECT_NE(error("fortran.npy").find("Fortran-order"), std::string::npos);
  EXPECT_NE(error("f64.npy").find("unsupported dtype '<f8' (float64)"), std::string::npos);
  EXPECT_NE(error("i64.npy").find("unsupported dtype '<i8' (int64)"), std::string::npos);
  EXPECT_NE(error("u8.npy").find("unsupported dtype '|u1' (uint8)"), std::string::npos);
  EXPECT_NE(error("bigendian.npy").find("big-endian"), std::string::npos);
  EXPECT_NE(error("object.npy").find("(Python objects)"), std::string::npos);
}

/// Values for the files we write: the same float32 arithmetic in both
/// languages, i * 0.37 - n / 2 * 0.37 with numpy's float32 rounding.
float sample(int64_t i, int64_t n) { return static_cast<float>(i - n / 2) * 0.37f; }

TEST(NumpyInterop, NumpyReadsWhatWeWrite) {
  TempDir dir;
  const std::vector<int64_t> shape = {3, 4, 5};
  const int64_t n = 60;
  for (DType type : kAllDTypes) {
    Tensor t(type, shape);
    for (int64_t i = 0; i < n; ++i) {
      if (type == DType::Bool)
        t.setInt(i, i % 3 == 0);
      else if (isInteger(type))
        t.setInt(i, (i * 37) % 255 - 127);
      else
        t.setFloat(i, sample(i, n) * (type == DType::F32 ? 1.0f : 3000.0f));
    }
    ASSERT_FALSE(writeNpyFile(dir.file(dtypeName(type).str() + ".npy"), t));
  }
  ASSERT_FALSE(writeNpyFile(dir.file("scalar.npy"), Tensor::fromFloats(DType::F32, {}, {-1.25f})));
  ASSERT_FALSE(writeNpyFile(dir.file("empty.npy"), Tensor(DType::I16, {2, 0})));
  std::vector<NamedTensor> weights;
  for (DType type : kAllDTypes)
    weights.emplace_back("layers.0." + dtypeName(type).str(),
                         Tensor::fromFloats(type, {2, 2}, {1, 0, -1, 1}));
  ASSERT_FALSE(writeSafeTensorsFile(dir.file("w.safetensors"), weights));

  EXPECT_EQ(runPython(dir, R"PY(
import sys, json, struct, numpy as np
d = sys.argv[1]
n = 60
i = np.arange(n)
f = (i - n // 2).astype(np.float32) * np.float32(0.37)
big = f * np.float32(3000)
def bf16_bits(x):
    # Round to 8 significant bits, ties to even, with float64 arithmetic.
    m, e = np.frexp(x.astype(np.float64))
    q = np.maximum(e - 8, -133)
    with np.errstate(over='ignore'):
        y = np.ldexp(np.rint(np.ldexp(x.astype(np.float64), -q)), q).astype(np.float32)
    bits = y.view(np.uint32)
    assert not np.any(bits & 0xffff)
    return (bits >> 16).astype(np.uint16)
expected = {
    'bool': (np.bool_, i % 3 == 0),
    'i8': (np.int8, (i * 37) % 255 - 127),
    'i16': (np.int16, (i * 37) % 255 - 127),
    'i32': (np.int32, (i * 37) % 255 - 127),
    'f16': (np.float16, big.astype(np.float16)),
    'f32': (np.float32, f),
}
bad = 0
for name, (dtype, values) in expected.items():
    a = np.load(f'{d}/{name}.npy')
    if a.dtype != dtype or a.shape != (3, 4, 5) or not a.flags.c_contiguous:
        print(name, 'has', a.dtype, a.shape); bad += 1; continue
    want = np.asarray(values).astype(dtype).reshape(3, 4, 5)
    if not np.array_equal(a.view(np.uint8), want.view(np.uint8)):
        print(name, 'values differ:', a.ravel()[:8], want.ravel()[:8]); bad += 1
b = np.load(f'{d}/bf16.npy')
if b.dtype != np.dtype('V2') or b.shape != (3, 4, 5):
    print('bf16 has', b.dtype, b.shape); bad += 1
elif not np.array_equal(b.view('<u2').ravel(), bf16_bits(big)):
    print('bf16 values differ'); bad += 1
s = np.load(f'{d}/scalar.npy')
if s.shape != () or s.dtype != np.float32 or s != np.float32(-1.25):
    print('scalar wrong', s); bad += 1
e = np.load(f'{d}/empty.npy')
if e.shape != (2, 0) or e.dtype != np.int16:
    print('empty wrong', e.shape); bad += 1
# The safetensors file, read by hand as any other reader would.
raw = open(f'{d}/w.safetensors', 'rb').read()
(length,) = struct.unpack('<Q', raw[:8])
header = json.loads(raw[8:8 + length])
data = raw[8 + length:]
kinds = {'BOOL': '|b1', 'I8': '|i1', 'I16': '<i2', 'I32': '<i4', 'F16': '<f2', 'F32': '<f4', 'BF16': '<u2'}
for name, info in header.items():
    begin, end = info['data_offsets']
    a = np.frombuffer(data[begin:end], dtype=kinds[info['dtype']]).reshape(info['shape'])
    if info['dtype'] == 'BF16':
        a = (a.astype(np.uint32) << 16).view(np.float32)
    want = np.array([[1, 0], [-1, 1]], dtype=np.float32)
    if not np.array_equal(a.astype(np.float32), (want != 0) if info['dtype'] == 'BOOL' else want):
        print(name, 'wrong', a); bad += 1
if len(header) != 7:
    print('header has', sorted(header)); bad += 1
sys.exit(1 if bad else 0)
)PY"),
            0);
}

TEST(NumpyInterop, SafeTensorsWrittenByHandInPython) {
  TempDir dir;
  ASSERT_EQ(runPython(dir, R"PY(
import sys, json, struct, numpy as np
d = sys.argv[1]
tensors = {'embed.w': np.arange(12, dtype=np.float16).reshape(3, 4) / np.float16(8),
           'layers.3.up.w': np.array([[-1, 2], [3, -4]], dtype=np.int32)}
header, blobs, offset = {'__metadata__': {'format': 'np'}}, [], 0
for name, a in tensors.items():
    b = a.tobytes()
    header[name] = {'dtype': {'float16': 'F16', 'int32': 'I32'}[str(a.dtype)],
                    'shape': list(a.shape), 'data_offsets': [offset, offset + len(b)]}
    blobs.append(b); offset += len(b)
h = json.dumps(header).encode()
with open(f'{d}/w.safetensors', 'wb') as f:
    f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))
tensors['embed.w'].astype(np.float64).tofile(f'{d}/embed.f64')
)PY"),
            0);
  auto file = SafeTensorsFile::open(dir.file("w.safetensors"));
  ASSERT_TRUE(bool(file)) << errorText(file.takeError());
  EXPECT_EQ(file->metadata().at("format"), "np");
  auto up = file->read("layers.3.up.w");
  ASSERT_TRUE(bool(up));
  EXPECT_EQ(formatIree(*up), "2x2xi32=[-1 2][3 -4]");
  auto embed = file->read("embed.w");
  ASSERT_TRUE(bool(embed));
  const std::vector<double> expected = readDoubles(dir.file("embed.f64"));
  ASSERT_EQ(expected.size(), 12u);
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_EQ(embed->getFloat(i), expected[i]);
}

TEST(NumpyInterop, HalfAndBFloat16ConversionsMatchNumpy) {
  TempDir dir;
  // Inputs: every half value, the exact midpoints between neighbouring
  // halves and their float neighbours (where rounding decides), and random
  // bit patterns over the whole float range.
  std::vector<float> inputs;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const double lo = halfBitsToFloat(static_cast<uint16_t>(h | sign));
      const double hi = halfBitsToFloat(static_cast<uint16_t>((h + 1) | sign));
      const float mid = static_cast<float>((lo + hi) / 2);
      inputs.insert(inputs.end(), {static_cast<float>(lo), mid, std::nextafter(mid, 0.0f),
                                   std::nextafter(mid, 1e30f), std::nextafter(mid, -1e30f)});
    }
  }
  Xoshiro256 rng(12345);
  for (int i = 0; i < 200000; ++i)
    inputs.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng.next() >> 32)));
  const int64_t n = static_cast<int64_t>(inputs.size());
  Tensor source(DType::F32, {n});
  std::memcpy(source.bytes().data(), inputs.data(), source.byteSize());
  ASSERT_FALSE(writeNpyFile(dir.file("in.npy"), source));

  ASSERT_EQ(runPython(dir, R"PY(
import sys, numpy as np
d = sys.argv[1]
x = np.load(f'{d}/in.npy')
with np.errstate(over='ignore', invalid='ignore'):
    np.save(f'{d}/half.npy', x.astype(np.float16))
    np.save(f'{d}/all_halves.npy',
            np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32))
    # bfloat16 by arithmetic, not by bit tricks: 8 significant bits, ties to
    # even (np.rint), spacing never below the subnormal step 2^-133.
    x64 = x.astype(np.float64)
    finite = np.isfinite(x64)
    m, e = np.frexp(np.where(finite, x64, 0))
    q = np.maximum(e - 8, -133)
    y = np.ldexp(np.rint(np.ldexp(np.where(finite, x64, 0), -q)), q).astype(np.float32)
    bits = y.view(np.uint32)
assert not np.any(bits & 0xffff)
ref = np.where(finite, bits >> 16, x.view(np.uint32) >> 16).astype(np.uint16)
np.save(f'{d}/bf16.npy', ref.view(np.int16))
)PY"),
            0);

  auto half = readNpyFile(dir.file("half.npy"), DType::F16, {n});
  ASSERT_TRUE(bool(half)) << errorText(half.takeError());
  auto bf16 = readNpyFile(dir.file("bf16.npy"), DType::I16, {n});
  ASSERT_TRUE(bool(bf16)) << errorText(bf16.takeError());
  int64_t halfMismatches = 0, bf16Mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint16_t numpyHalf, numpyBF16;
    std::memcpy(&numpyHalf, half->bytes().data() + 2 * i, 2);
    std::memcpy(&numpyBF16, bf16->bytes().data() + 2 * i, 2);
    const uint16_t ourHalf = floatToHalfBits(inputs[i]);
    const uint16_t ourBF16 = floatToBF16Bits(inputs[i]);
    if (std::isnan(inputs[i])) {
      halfMismatches +=
          !std::isnan(halfBitsToFloat(ourHalf)) || !std::isnan(halfBitsToFloat(numpyHalf));
      bf16Mismatches += !std::isnan(bf16BitsToFloat(ourBF16));
      continue;
    }
    if (ourHalf != numpyHalf && halfMismatches++ < 10)
      ADD_FAILURE() << "f16 of " << std::hexfloat << inputs[i] << ": ours " << std::hex << ourHalf
                    << ", numpy " << numpyHalf;
    if (ourBF16 != numpyBF16 && bf16Mismatches++ < 10)
      ADD_FAILURE() << "bf16 of " << std::hexfloat << inputs[i] << ": ours " << std::hex << ourBF16
                    << ", numpy " << numpyBF16;
  }
  EXPECT_EQ(halfMismatches, 0);
  EXPECT_EQ(bf16Mismatches, 0);

  auto all = readNpyFile(dir.file("all_halves.npy"), DType::F32, {65536});
  ASSERT_TRUE(bool(all)) << errorText(all.takeError());
  for (uint32_t h = 0; h < 65536; ++h) {
    const float ours = halfBitsToFloat(static_cast<uint16_t>(h));
    const float numpy = all->getFloat(h);
    if (std::isnan(numpy))
      EXPECT_TRUE(std::isnan(ours)) << h;
    else
      EXPECT_EQ(std::bit_cast<uint32_t>(ours), std::bit_cast<uint32_t>(numpy)) << h;
  }
}

} // namespace
} // namespace lpu::tensor
