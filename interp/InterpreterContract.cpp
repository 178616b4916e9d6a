// The reference interpreter's contractions: matmul and conv2d accumulate in
// fp32 with OpenBLAS's sgemm (its blocked order of accumulation), and round
// the result to the output dtype once; pooling runs direct loops. OpenBLAS
// runs single-threaded; parallelism comes from fixed column blocks here, so
// the bits do not depend on the thread count.
#include "interp/InterpreterKernels.h"

#include <llvm/ADT/Twine.h>

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

namespace lpu::interp::detail {

using tensor::DType;

namespace {
/// One sgemm: C[M, N] = A[M, K] * B[K, N], row-major, fp32, with leading
/// dimensions ldb and ldc for B and C.
struct Gemm {
  const float *a;
  const float *b;
  float *c;
  int64_t m, n, k, ldb, ldc;
};

/// Output columns per sgemm call. The split is fixed (not derived from the
/// thread count) and each call runs on one OpenBLAS thread, so every
/// element's sum has the same order whatever the number of threads.
constexpr int64_t kColumnsPerCall = 128;

void runOne(const Gemm &g) {
  if (g.m == 0 || g.n == 0)
    return;
  if (g.k == 0) {
    for (int64_t r = 0; r < g.m; ++r)
      std::fill(g.c + r * g.ldc, g.c + r * g.ldc + g.n, 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(g.m),
              static_cast<blasint>(g.n), static_cast<blasint>(g.k), 1.0f, g.a,
              static_cast<blasint>(g.k), g.b, static_cast<blasint>(g.ldb), 0.0f, g.c,
              static_cast<blasint>(g.ldc));
}

/// Runs the gemms, each cut into column blocks, on `threads` threads.
void runGemms(llvm::ArrayRef<Gemm> gemms, unsigned threads) {
  std::vector<Gemm> pieces;
  double flops = 0;
  for (const Gemm &g : gemms) {
    flops += double(g.m) * double(g.n) * double(g.k);
    for (int64_t j = 0; j < g.n || (j == 0 && g.n == 0); j += kColumnsPerCall)
      pieces.push_back(
          {g.a, g.b + j, g.c + j, g.m, std::min(kColumnsPerCall, g.n - j), g.k, g.ldb, g.ldc});
  }
  // Below a few MFLOP a thread costs more than it saves.
  unsigned count = flops < 4e6 ? 1u : std::min<unsigned>(threads, pieces.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < pieces.size();)
      runOne(pieces[i]);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < count; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
}

/// Offsets of each batch of `shape` (all dims but the last two) into an
/// operand of batch shape `from`, broadcasting NumPy style.
std::vector<int64_t> batchOffsets(llvm::ArrayRef<int64_t> outBatch, llvm::ArrayRef<int64_t> from,
                                  int64_t matrixSize) {
  size_t rank = outBatch.size(), offset = rank - from.size();
  std::vector<int64_t> fromStrides = stridesOf(from);
  int64_t count = product(outBatch);
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t b = 0; b < count; ++b) {
    int64_t o = 0;
    for (size_t k = 0; k < from.size(); ++k)
      if (from[k] != 1)
        o += idx[offset + k] * fromStrides[k];
    offsets[b] = o * matrixSize;
    for (size_t k = rank; k-- > 0;) {
      if (++idx[k] < outBatch[k])
        break;
      idx[k] = 0;
    }
  }
  return offsets;
}

llvm::Expected<Value> matmul(const Op &op, const Value &a, const Value &b, unsigned threads) {
  // NumPy matmul: a rank-1 lhs is a row, a rank-1 rhs a column.
  std::vector<int64_t> as = a.type.shape, bs = b.type.shape;
  if (as.empty() || bs.empty())
    return opError(op, "needs operands of rank >= 1");
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k)
    return opError(op, "contracted sizes differ: " + a.type.str() + " and " + b.type.str());
  llvm::ArrayRef<int64_t> aBatch = llvm::ArrayRef<int64_t>(as).drop_back(2);
  llvm::ArrayRef<int64_t> bBatch = llvm::ArrayRef<int64_t>(bs).drop_back(2);
  std::vector<int64_t> outBatch(std::max(aBatch.size(), bBatch.size()), 1);
  for (size_t i = 0; i < outBatch.size(); ++i) {
    int64_t da =
        i + aBatch.size() >= outBatch.size() ? aBatch[i + aBatch.size() - outBatch.size()] : 1;
    int64_t db =
        i + bBatch.size() >= outBatch.size() ? bBatch[i + bBatch.size() - outBatch.size()] : 1;
    if (da != db && da != 1 && db != 1)
      return opError(op, "batch dimensions differ: " + a.type.str() + " and " + b.type.str());
    outBatch[i] = std::max(da, db);
  }
  int64_t batches = product(outBatch);
  if (batches * m * n != op.type().numElements())
    return opError(op, "result type " + op.type().str() + " does not match the operands");
  if (a.isFloat() != b.isFloat())
    return opError(op, "operands must both be float or both integer");
  if (a.isFloat()) {
    std::vector<float> y(static_cast<size_t>(batches * m * n));
    std::vector<Gemm> gemms;
    if (product(bBatch) == 1 && product(aBatch) == batches) {
      // One weight matrix for every batch: a single [batches * M, K] gemm.
      gemms.push_back({a.floats(), b.floats(), y.data(), batches * m, n, k, n, n});
    } else {
      std::vector<int64_t> ao = batchOffsets(outBatch, aBatch, m * k);
      std::vector<int64_t> bo = batchOffsets(outBatch, bBatch, k * n);
      for (int64_t i = 0; i < batches; ++i)
        gemms.push_back(
            {a.floats() + ao[i], b.floats() + bo[i], y.data() + i * m * n, m, n, k, n, n});
    }
    runGemms(gemms, threads);
    roundTo(op.type().dtype, y.data(), y.size());
    return makeFloat(op.type(), std::move(y));
  }
  // Integer matmul (int8 x int8 on the machine): exact int64 sums, wrapped.
  std::vector<int64_t> ao = batchOffsets(outBatch, aBatch, m * k);
  std::vector<int64_t> bo = batchOffsets(outBatch, bBatch, k * n);
  std::vector<int32_t> y(static_cast<size_t>(batches * m * n));
  std::vector<int64_t> row(static_cast<size_t>(n));
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t r = 0; r < m; ++r) {
      std::fill(row.begin(), row.end(), 0);
      for (int64_t kk = 0; kk < k; ++kk) {
        int64_t av = a.ints()[ao[bi] + r * k + kk];
        const int32_t *brow = b.ints() + bo[bi] + kk * n;
        for (int64_t c = 0; c < n; ++c)
          row[c] += av * brow[c];
      }
      for (int64_t c = 0; c < n; ++c)
        y[(bi * m + r) * n + c] = wrapInt(op.type().dtype, row[c]);
    }
  return makeInt(op.type(), std::move(y));
}

/// A [h, w] attribute; a single integer means the same for both.
std::optional<std::pair<int64_t, int64_t>> pairAttr(const Op &op, llvm::StringRef name,
                                                    int64_t fallback) {
  if (!op.attr(name))
    return std::make_pair(fallback, fallback);
  if (auto one = op.intAttr(name))
    return std::make_pair(*one, *one);
  auto list = op.intsAttr(name);
  if (!list || list->size() != 2)
    return std::nullopt;
  return std::make_pair((*list)[0], (*list)[1]);
}

llvm::Expected<Value> conv2d(const Op &op, const Value &x, const Value &w, unsigned threads) {
  if (x.isFloat() != w.isFloat())
    return opError(op, "operands must both be float or both integer");
  if (x.type.rank() != 4 || w.type.rank() != 4 || op.type().rank() != 4)
    return opError(op, "needs NCHW input and OIHW weights");
  auto stride = pairAttr(op, "stride", 1), padding = pairAttr(op, "padding", 0),
       dilation = pairAttr(op, "dilation", 1);
  if (!stride || !padding || !dilation)
    return opError(op, "stride, padding and dilation must be [h, w]");
  int64_t groups = op.intAttr("groups").value_or(1);
  int64_t nb = x.type.shape[0], c = x.type.shape[1], h = x.type.shape[2], wd = x.type.shape[3];
  int64_t o = w.type.shape[0], cg = w.type.shape[1], kh = w.type.shape[2], kw = w.type.shape[3];
  int64_t oh = op.type().shape[2], ow = op.type().shape[3];
  if (groups < 1 || c != cg * groups || o % groups != 0)
    return opError(op, "channels do not match the groups");
  auto [sh, sw] = *stride;
  auto [ph, pw] = *padding;
  auto [dh, dw] = *dilation;
  int64_t og = o / groups, patch = cg * kh * kw, pixels = oh * ow;
  if (!x.isFloat()) {
    // i8 x i8 (docs/ir.md): exact sums in int64 over the window in im2col
    // order, wrapped to the result dtype.
    std::vector<int32_t> y(static_cast<size_t>(nb * o * pixels));
    for (int64_t n = 0; n < nb; ++n)
      for (int64_t oc = 0; oc < o; ++oc) {
        const int64_t g = oc / og;
        const int32_t *wr = w.ints() + oc * patch;
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox) {
            int64_t sum = 0;
            for (int64_t ci = 0; ci < cg; ++ci) {
              const int32_t *img = x.ints() + (n * c + g * cg + ci) * h * wd;
              for (int64_t i = 0; i < kh; ++i) {
                int64_t iy = oy * sh - ph + i * dh;
                if (iy < 0 || iy >= h)
                  continue;
                for (int64_t j = 0; j < kw; ++j) {
                  int64_t ix = ox * sw - pw + j * dw;
                  if (ix >= 0 && ix < wd)
                    sum += int64_t(img[iy * wd + ix]) * wr[(ci * kh + i) * kw + j];
                }
              }
            }
            y[size_t((n * o + oc) * pixels + oy * ow + ox)] = wrapInt(op.type().dtype, sum);
          }
      }
    return makeInt(op.type(), std::move(y));
  }
  std::vector<float> y(static_cast<size_t>(nb * o * pixels));
  std::vector<float> cols(static_cast<size_t>(patch * pixels));
  for (int64_t n = 0; n < nb; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      // im2col: row (ci, i, j) of the patch, column (oy, ox) of the output.
      const float *img = x.floats() + (n * c + g * cg) * h * wd;
      float *col = cols.data();
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j)
            for (int64_t oy = 0; oy < oh; ++oy) {
              int64_t iy = oy * sh - ph + i * dh;
              for (int64_t ox = 0; ox < ow; ++ox) {
                int64_t ix = ox * sw - pw + j * dw;
                *col++ =
                    iy >= 0 && iy < h && ix >= 0 && ix < wd ? img[(ci * h + iy) * wd + ix] : 0.0f;
              }
            }
      Gemm one{w.floats() + g * og * patch,
               cols.data(),
               y.data() + (n * o + g * og) * pixels,
               og,
               pixels,
               patch,
               pixels,
               pixels};
      runGemms(one, threads);
    }
  roundTo(op.type().dtype, y.data(), y.size());
  return makeFloat(op.type(), std::move(y));
}

/// One pooling window walk per output element. Padding never wins the
/// maximum and counts as zero in the average, whose divisor is the kernel
/// area (docs/ir.md). T is float, or int32 for an integer max pool.
template <typename T>
std::vector<T> poolData(const T *x, int64_t planes, int64_t h, int64_t wd, int64_t oh, int64_t ow,
                        std::pair<int64_t, int64_t> kernel, std::pair<int64_t, int64_t> stride,
                        std::pair<int64_t, int64_t> padding, bool isMax) {
  auto [kh, kw] = kernel;
  auto [sh, sw] = stride;
  auto [ph, pw] = padding;
  std::vector<T> y(static_cast<size_t>(planes * oh * ow));
  T *out = y.data();
  for (int64_t p = 0; p < planes; ++p) {
    const T *img = x + p * h * wd;
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        T acc = isMax ? std::numeric_limits<T>::lowest() : T(0);
        if constexpr (std::is_same_v<T, float>)
          if (isMax)
            acc = -INFINITY;
        for (int64_t i = 0; i < kh; ++i) {
          int64_t iy = oy * sh - ph + i;
          if (iy < 0 || iy >= h)
            continue;
          for (int64_t j = 0; j < kw; ++j) {
            int64_t ix = ox * sw - pw + j;
            if (ix < 0 || ix >= wd)
              continue;
            T v = img[iy * wd + ix];
            if (!isMax)
              acc += v;
            else if constexpr (std::is_same_v<T, float>)
              acc = std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v);
            else
              acc = std::max(acc, v);
          }
        }
        if constexpr (std::is_same_v<T, float>)
          if (!isMax)
            acc /= static_cast<float>(kh * kw);
        *out++ = acc;
      }
  }
  return y;
}

llvm::Expected<Value> pool2d(const Op &op, const Value &x) {
  bool isMax = op.kind() == OpKind::MaxPool2d;
  if (!x.isFloat() && !isMax)
    return opError(op, "needs a float operand");
  if (x.type.rank() != 4 || op.type().rank() != 4)
    return opError(op, "needs an NCHW operand");
  auto kernel = pairAttr(op, "kernel", 1);
  if (!kernel || !op.attr("kernel"))
    return opError(op, "needs a 'kernel' of [h, w]");
  auto stride = pairAttr(op, "stride", 1), padding = pairAttr(op, "padding", 0);
  if (!stride || !padding)
    return opError(op, "stride and padding must be [h, w]");
  if (!op.attr("stride"))
    stride = kernel;
  int64_t planes = x.type.shape[0] * x.type.shape[1], h = x.type.shape[2], wd = x.type.shape[3];
  int64_t oh = op.type().shape[2], ow = op.type().shape[3];
  if (!x.isFloat())
    return makeInt(op.type(),
                   poolData(x.ints(), planes, h, wd, oh, ow, *kernel, *stride, *padding, true));
  std::vector<float> y =
      poolData(x.floats(), planes, h, wd, oh, ow, *kernel, *stride, *padding, isMax);
  roundTo(op.type().dtype, y.data(), y.size());
  return makeFloat(op.type(), std::move(y));
}
} // namespace

llvm::Expected<Value> evalContract(const Op &op, llvm::ArrayRef<const Value *> args,
                                   unsigned threads) {
  switch (op.kind()) {
  case OpKind::Matmul:
    return matmul(op, *args[0], *args[1], threads);
  case OpKind::Conv2d:
    return conv2d(op, *args[0], *args[1], threads);
  case OpKind::MaxPool2d:
  case OpKind::AvgPool2d:
    return pool2d(op, *args[0]);
  default:
    return opError(op, "is not a contraction");
  }
}

} // namespace lpu::interp::detail
