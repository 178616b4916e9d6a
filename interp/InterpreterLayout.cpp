// The reference interpreter's reductions, softmax and data movement.
// Reductions accumulate in fp32 (int64 for integers) sequentially along the
// reduced axes in row-major index order; softmax subtracts the row maximum,
// sums exp in fp32 in index order, divides, and rounds once.
#include "interp/InterpreterKernels.h"

#include <llvm/ADT/Twine.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace lpu::interp::detail {

using tensor::DType;

namespace {
/// Calls row(base, at) for every row of `outShape` (all indices but the
/// last, in row-major order): `at` is the row's first output element,
/// `base` the sum over the leading axes of index * step. The caller
/// handles rank 0.
template <typename F>
void forEachRow(llvm::ArrayRef<int64_t> outShape, llvm::ArrayRef<int64_t> step, F row) {
  size_t rank = outShape.size();
  int64_t n = product(outShape), inner = outShape[rank - 1];
  if (n == 0)
    return;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t at = 0; at < n; at += inner) {
    int64_t base = 0;
    for (size_t k = 0; k + 1 < rank; ++k)
      base += idx[k] * step[k];
    row(base, at);
    for (size_t k = rank - 1; k-- > 0;) {
      if (++idx[k] < outShape[k])
        break;
      idx[k] = 0;
    }
  }
}
} // namespace

template <typename T>
std::vector<T> transposeData(const T *x, llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int64_t> perm) {
  size_t rank = shape.size();
  std::vector<T> y(static_cast<size_t>(product(shape)));
  if (rank == 0) {
    y[0] = x[0];
    return y;
  }
  std::vector<int64_t> inStrides = stridesOf(shape), outShape(rank), step(rank);
  for (size_t k = 0; k < rank; ++k) {
    outShape[k] = shape[perm[k]];
    step[k] = inStrides[perm[k]];
  }
  // The innermost output axis reads the input with a fixed stride
  // (contiguous when the last axis stays last).
  int64_t inner = outShape[rank - 1], innerStep = step[rank - 1];
  forEachRow(outShape, step, [&](int64_t base, int64_t at) {
    if (innerStep == 1)
      std::memcpy(y.data() + at, x + base, sizeof(T) * inner);
    else
      for (int64_t j = 0; j < inner; ++j)
        y[at + j] = x[base + j * innerStep];
  });
  return y;
}

template std::vector<float> transposeData(const float *, llvm::ArrayRef<int64_t>,
                                          llvm::ArrayRef<int64_t>);
template std::vector<int32_t> transposeData(const int32_t *, llvm::ArrayRef<int64_t>,
                                            llvm::ArrayRef<int64_t>);

namespace {
/// Applies `f` to the value's elements (float or int32) and wraps the
/// returned vector as the op's result.
template <typename F> Value onData(const Op &op, const Value &x, F f) {
  if (x.isFloat())
    return makeFloat(op.type(), f(x.floats()));
  return makeInt(op.type(), f(x.ints()));
}

/// The reduced axes, sorted, each in [0, rank): from `axes` (a list) or
/// `axis` (one).
llvm::Expected<std::vector<int64_t>> reducedAxes(const Op &op, size_t rank) {
  std::vector<int64_t> axes;
  if (auto list = op.intsAttr("axes"))
    axes = *list;
  else if (auto one = op.intAttr("axis"))
    axes = {*one};
  else
    return opError(op, "needs an 'axes' attribute");
  for (int64_t &a : axes) {
    a = normalizeAxis(a, rank);
    if (a < 0 || a >= static_cast<int64_t>(rank))
      return opError(op, "axis out of range for rank " + llvm::Twine(rank));
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

/// The permutation that moves `axes` (sorted) to the end, others in order.
std::vector<int64_t> axesLast(size_t rank, llvm::ArrayRef<int64_t> axes) {
  std::vector<int64_t> perm;
  for (size_t k = 0; k < rank; ++k)
    if (!llvm::is_contained(axes, static_cast<int64_t>(k)))
      perm.push_back(static_cast<int64_t>(k));
  perm.insert(perm.end(), axes.begin(), axes.end());
  return perm;
}

bool isIdentity(llvm::ArrayRef<int64_t> perm) {
  for (size_t k = 0; k < perm.size(); ++k)
    if (perm[k] != static_cast<int64_t>(k))
      return false;
  return true;
}

/// `x` with the given axes moved last, so each reduction is a contiguous
/// row; shares nothing, copies only when the axes are not already last.
template <typename T>
std::vector<T> rowsFor(const T *x, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> perm) {
  if (isIdentity(perm))
    return std::vector<T>(x, x + product(shape));
  return transposeData(x, shape, perm);
}

llvm::Expected<Value> reduce(const Op &op, const Value &x) {
  const std::vector<int64_t> &shape = x.type.shape;
  auto axes = reducedAxes(op, shape.size());
  if (!axes)
    return axes.takeError();
  if (op.kind() == OpKind::Argmax && axes->size() != 1)
    return opError(op, "takes exactly one axis");
  int64_t inner = 1;
  for (int64_t a : *axes)
    inner *= shape[a];
  int64_t outer = inner ? product(shape) / inner : product(op.type().shape);
  std::vector<int64_t> perm = axesLast(shape.size(), *axes);
  DType dt = op.type().dtype;
  if (op.kind() == OpKind::Argmax) {
    std::vector<int32_t> y(static_cast<size_t>(outer), 0);
    auto argmax = [&](const auto *rows) {
      for (int64_t r = 0; r < outer; ++r) {
        const auto *row = rows + r * inner;
        int64_t best = 0;
        for (int64_t j = 1; j < inner; ++j) {
          if constexpr (std::is_same_v<std::decay_t<decltype(*row)>, float>)
            if (std::isnan(row[best]))
              break; // the first NaN wins, as in numpy
          if (row[j] > row[best] || (std::isnan(float(row[j])) && !std::isnan(float(row[best]))))
            best = j;
        }
        y[r] = static_cast<int32_t>(best);
      }
    };
    if (x.isFloat())
      argmax(rowsFor(x.floats(), shape, perm).data());
    else
      argmax(rowsFor(x.ints(), shape, perm).data());
    return makeInt(op.type(), std::move(y));
  }
  if (x.isFloat()) {
    std::vector<float> rows = rowsFor(x.floats(), shape, perm), y(static_cast<size_t>(outer));
    for (int64_t r = 0; r < outer; ++r) {
      const float *row = rows.data() + r * inner;
      float acc;
      switch (op.kind()) {
      case OpKind::ReduceSum:
      case OpKind::ReduceMean:
        acc = 0.0f;
        for (int64_t j = 0; j < inner; ++j)
          acc += row[j];
        if (op.kind() == OpKind::ReduceMean)
          acc /= static_cast<float>(inner);
        break;
      case OpKind::ReduceMax:
        acc = -INFINITY;
        for (int64_t j = 0; j < inner; ++j)
          acc = std::isnan(acc) || std::isnan(row[j]) ? NAN : std::max(acc, row[j]);
        break;
      default: // ReduceMin
        acc = INFINITY;
        for (int64_t j = 0; j < inner; ++j)
          acc = std::isnan(acc) || std::isnan(row[j]) ? NAN : std::min(acc, row[j]);
        break;
      }
      y[r] = acc;
    }
    roundTo(dt, y.data(), y.size());
    return makeFloat(op.type(), std::move(y));
  }
  std::vector<int32_t> rows = rowsFor(x.ints(), shape, perm), y(static_cast<size_t>(outer));
  for (int64_t r = 0; r < outer; ++r) {
    const int32_t *row = rows.data() + r * inner;
    int64_t acc = 0;
    if (op.kind() == OpKind::ReduceMax || op.kind() == OpKind::ReduceMin) {
      // An empty reduction gives the dtype's minimum (maximum).
      int64_t bits = dt == DType::I8 ? 8 : dt == DType::I16 ? 16 : 32;
      acc = op.kind() == OpKind::ReduceMax ? -(int64_t(1) << (bits - 1))
                                           : (int64_t(1) << (bits - 1)) - 1;
      for (int64_t j = 0; j < inner; ++j)
        acc = op.kind() == OpKind::ReduceMax ? std::max<int64_t>(acc, row[j])
                                             : std::min<int64_t>(acc, row[j]);
    } else {
      for (int64_t j = 0; j < inner; ++j)
        acc += row[j];
      if (op.kind() == OpKind::ReduceMean && inner > 0)
        acc = (acc - (((acc % inner) + inner) % inner)) / inner; // floor
    }
    y[r] = wrapInt(dt, acc);
  }
  return makeInt(op.type(), std::move(y));
}

llvm::Expected<Value> softmax(const Op &op, const Value &x) {
  if (!x.isFloat())
    return opError(op, "needs a float operand");
  const std::vector<int64_t> &shape = x.type.shape;
  if (shape.empty())
    return opError(op, "needs rank >= 1");
  int64_t axis = normalizeAxis(op.intAttr("axis").value_or(-1), shape.size());
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    return opError(op, "axis out of range for rank " + llvm::Twine(shape.size()));
  std::vector<int64_t> perm = axesLast(shape.size(), {axis});
  std::vector<float> rows = rowsFor(x.floats(), shape, perm);
  int64_t inner = shape[axis], outer = inner ? product(shape) / inner : 0;
  for (int64_t r = 0; r < outer; ++r) {
    float *row = rows.data() + r * inner;
    float mx = -INFINITY;
    for (int64_t j = 0; j < inner; ++j)
      mx = std::max(mx, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < inner; ++j) {
      row[j] = std::exp(row[j] - mx);
      sum += row[j];
    }
    for (int64_t j = 0; j < inner; ++j)
      row[j] /= sum;
  }
  roundTo(op.type().dtype, rows.data(), rows.size());
  if (isIdentity(perm))
    return makeFloat(op.type(), std::move(rows));
  // Move the axis back: the inverse permutation.
  std::vector<int64_t> permutedShape(shape.size()), inverse(shape.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    permutedShape[k] = shape[perm[k]];
    inverse[perm[k]] = static_cast<int64_t>(k);
  }
  return makeFloat(op.type(), transposeData(rows.data(), permutedShape, inverse));
}

template <typename T>
std::vector<T> broadcastData(const T *x, llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
  size_t rank = to.size(), offset = rank - from.size();
  std::vector<int64_t> inStrides = stridesOf(from), step(rank, 0);
  for (size_t k = 0; k < from.size(); ++k)
    step[offset + k] = from[k] == 1 && to[offset + k] != 1 ? 0 : inStrides[k];
  std::vector<T> y(static_cast<size_t>(product(to)));
  if (rank == 0) {
    y[0] = x[0];
    return y;
  }
  int64_t inner = to[rank - 1];
  forEachRow(to, step, [&](int64_t base, int64_t at) {
    if (step[rank - 1] == 0)
      std::fill(y.data() + at, y.data() + at + inner, x[base]);
    else
      std::memcpy(y.data() + at, x + base, sizeof(T) * inner);
  });
  return y;
}

template <typename T>
std::vector<T> sliceData(const T *x, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> start,
                         llvm::ArrayRef<int64_t> stride, llvm::ArrayRef<int64_t> outShape) {
  size_t rank = shape.size();
  std::vector<T> y(static_cast<size_t>(product(outShape)));
  if (rank == 0) {
    y[0] = x[0];
    return y;
  }
  std::vector<int64_t> inStrides = stridesOf(shape), step(rank);
  int64_t first = 0;
  for (size_t k = 0; k < rank; ++k) {
    first += start[k] * inStrides[k];
    step[k] = stride[k] * inStrides[k];
  }
  int64_t inner = outShape[rank - 1];
  forEachRow(outShape, step, [&](int64_t base, int64_t at) {
    for (int64_t j = 0; j < inner; ++j)
      y[at + j] = x[first + base + j * step[rank - 1]];
  });
  return y;
}
} // namespace

llvm::Expected<Value> evalReduce(const Op &op, const Value &x) {
  if (op.kind() == OpKind::Softmax)
    return softmax(op, x);
  return reduce(op, x);
}

llvm::Expected<Value> evalLayout(const Op &op, llvm::ArrayRef<const Value *> args) {
  const Value &x = *args[0];
  const std::vector<int64_t> &shape = x.type.shape;
  const std::vector<int64_t> &outShape = op.type().shape;
  switch (op.kind()) {
  case OpKind::Reshape: {
    if (product(shape) != product(outShape))
      return opError(op, "cannot reshape " + x.type.str() + " to " + op.type().str());
    Value y = x;
    y.type = op.type();
    return y;
  }
  case OpKind::Transpose: {
    auto perm = op.intsAttr("perm");
    if (!perm || perm->size() != shape.size())
      return opError(op, "needs a 'perm' of rank " + llvm::Twine(shape.size()));
    return onData(op, x, [&](const auto *d) { return transposeData(d, shape, *perm); });
  }
  case OpKind::Transfer: // moves the value to another chip: on the host, the value
    return x;
  case OpKind::Broadcast:
    if (outShape.size() < shape.size())
      return opError(op, "cannot broadcast " + x.type.str() + " to " + op.type().str());
    return onData(op, x, [&](const auto *d) { return broadcastData(d, shape, outShape); });
  case OpKind::Slice: {
    auto start = op.intsAttr("start");
    if (!start || start->size() != shape.size())
      return opError(op, "needs a 'start' of rank " + llvm::Twine(shape.size()));
    std::vector<int64_t> stride =
        op.intsAttr("stride").value_or(std::vector<int64_t>(shape.size(), 1));
    if (stride.size() != shape.size())
      return opError(op, "'stride' must have rank " + llvm::Twine(shape.size()));
    for (size_t k = 0; k < shape.size(); ++k)
      if ((*start)[k] < 0 || stride[k] < 1 ||
          (outShape[k] > 0 && (*start)[k] + (outShape[k] - 1) * stride[k] >= shape[k]))
        return opError(op, "slice out of range on axis " + llvm::Twine(k));
    return onData(op, x,
                  [&](const auto *d) { return sliceData(d, shape, *start, stride, outShape); });
  }
  case OpKind::Concat: {
    int64_t axis = normalizeAxis(op.intAttr("axis").value_or(0), outShape.size());
    if (axis < 0 || axis >= static_cast<int64_t>(outShape.size()))
      return opError(op, "axis out of range");
    int64_t outer = product(llvm::ArrayRef<int64_t>(outShape).take_front(axis));
    int64_t inner = product(llvm::ArrayRef<int64_t>(outShape).drop_front(axis + 1));
    auto concat = [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> y(static_cast<size_t>(product(outShape)));
      T *out = y.data();
      for (int64_t o = 0; o < outer; ++o)
        for (const Value *a : args) {
          int64_t chunk = a->type.shape[axis] * inner;
          const T *src;
          if constexpr (std::is_same_v<T, float>)
            src = a->floats();
          else
            src = a->ints();
          std::copy(src + o * chunk, src + (o + 1) * chunk, out);
          out += chunk;
        }
      return y;
    };
    if (x.isFloat())
      return makeFloat(op.type(), concat(float()));
    return makeInt(op.type(), concat(int32_t()));
  }
  case OpKind::Gather: {
    const Value &ids = *args[1];
    if (ids.isFloat())
      return opError(op, "ids must be integers, not " + tensor::dtypeName(ids.type.dtype));
    int64_t axis = normalizeAxis(op.intAttr("axis").value_or(0), shape.size());
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
      return opError(op, "axis out of range");
    int64_t outer = product(llvm::ArrayRef<int64_t>(shape).take_front(axis));
    int64_t inner = product(llvm::ArrayRef<int64_t>(shape).drop_front(axis + 1));
    int64_t rows = shape[axis], count = static_cast<int64_t>(ids.i->size());
    // Ids outside [0, rows) are clamped into it (docs/ir.md): the machine
    // reads a valid row whatever the data says.
    std::vector<int64_t> rowOf(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k)
      rowOf[k] = std::clamp<int64_t>(ids.ints()[k], 0, rows > 0 ? rows - 1 : 0);
    return onData(op, x, [&](const auto *d) {
      using T = std::decay_t<decltype(*d)>;
      std::vector<T> y(static_cast<size_t>(outer * count * inner));
      T *out = y.data();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < count; ++k) {
          const T *src = d + (o * rows + rowOf[k]) * inner;
          std::copy(src, src + inner, out);
          out += inner;
        }
      return y;
    });
  }
  case OpKind::Update: {
    const Value &pos = *args[1], &rows = *args[2];
    if (pos.isFloat() || pos.i->size() != 1)
      return opError(op, "the position must be one integer");
    if (rows.isFloat() != x.isFloat())
      return opError(op, "rows and tensor differ in kind");
    int64_t axis = normalizeAxis(op.intAttr("axis").value_or(0), shape.size());
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
      return opError(op, "axis out of range");
    int64_t outer = product(llvm::ArrayRef<int64_t>(shape).take_front(axis));
    int64_t inner = product(llvm::ArrayRef<int64_t>(shape).drop_front(axis + 1));
    int64_t dim = shape[axis], n = rows.type.shape[axis];
    // A position past either end is clamped so that all n rows land inside
    // (docs/ir.md), as gather clamps its ids.
    int64_t at = std::clamp<int64_t>(pos.ints()[0], 0, dim - n);
    return onData(op, x, [&](const auto *d) {
      using T = std::decay_t<decltype(*d)>;
      std::vector<T> y(d, d + outer * dim * inner);
      const T *src;
      if constexpr (std::is_same_v<T, float>)
        src = rows.floats();
      else
        src = rows.ints();
      for (int64_t o = 0; o < outer; ++o)
        std::copy(src + o * n * inner, src + (o + 1) * n * inner, y.data() + (o * dim + at) * inner);
      return y;
    });
  }
  default:
    return opError(op, "is not a data movement op");
  }
}

} // namespace lpu::interp::detail
