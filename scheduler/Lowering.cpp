#include "scheduler/Lowering.h"

#include "scheduler/Error.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace lpu::scheduler {

uint32_t TensorView::address(int64_t row, int64_t vec) const {
  int64_t r = storageRow(row);
  if (storage->chunkRows)
    r %= storage->chunkRows;
  return uint32_t(storage->block.addr + r * vecsPerRow + vec);
}

std::vector<uint16_t> TensorView::slicesOf(int64_t row) const {
  const std::vector<uint16_t> &all = storage->block.slices;
  if (!storage->chunkRows)
    return all;
  size_t size = tensor::dtypeSize(dtype), j = size_t(storageRow(row) / storage->chunkRows);
  return std::vector<uint16_t>(all.begin() + long(j * size), all.begin() + long((j + 1) * size));
}

const std::vector<uint16_t> &TensorView::slices() const { return storage->block.slices; }

int64_t TensorView::readyAt(int64_t row, int64_t vec) const {
  return storage->ready[size_t(storageRow(row) * vecsPerRow + vec)];
}

std::pair<int64_t, int64_t> LoweringContext::rowsAndCols(const ir::Type &type) {
  if (type.shape.empty())
    return {1, 1};
  int64_t cols = type.shape.back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < type.shape.size(); ++i)
    rows *= type.shape[i];
  return {rows, cols};
}

ir::Type LoweringContext::storedType(const ir::Type &type, const std::vector<uint8_t> &perm) {
  if (perm.empty())
    return type;
  ir::Type out = type;
  for (size_t i = 0; i < perm.size(); ++i)
    out.shape[i] = type.shape[perm[i]];
  return out;
}

bool LoweringContext::materialized(const ir::Op *op) const {
  if (!ir::isElementwise(op->kind()))
    return true;
  auto group = op->fusionGroup();
  if (!group || returned.count(op))
    return true;
  auto it = users.find(op);
  if (it == users.end())
    return true;
  for (const ir::Op *u : it->second)
    if (u->fusionGroup() != group)
      return true;
  return false;
}

llvm::Expected<TensorView *> LoweringContext::define(const ir::Op *op, const ir::Type &type) {
  auto order = storedOrder.find(op);
  const std::vector<uint8_t> &perm = order == storedOrder.end() ? std::vector<uint8_t>{} : order->second;
  auto [rows, cols] = rowsAndCols(storedType(type, perm));
  int64_t vpr = vecsPerRow(cols);
  std::string what = std::string(ir::mnemonic(op->kind())) + " result " + type.str();
  const int64_t chunks = perm.empty() ? 1 : chunksFor(rows * vpr);
  const int64_t chunkRows = (rows + chunks - 1) / chunks;
  auto block = sram_.allocate(tensor::dtypeSize(type.dtype) * unsigned(chunks),
                              uint32_t(chunkRows * vpr), SramOwner{what, op->loc()});
  if (!block)
    return block.takeError();
  auto storage = std::make_shared<Storage>();
  storage->block = *block;
  storage->vecsPerRow = vpr;
  storage->ready.assign(size_t(rows * vpr), std::numeric_limits<int64_t>::max() / 4);
  storage->persistent = persistentResult.count(op) > 0;
  storage->chunkRows = chunks > 1 ? chunkRows : 0;
  TensorView view;
  view.storage = storage;
  view.dtype = type.dtype;
  view.rows = rows;
  view.cols = cols;
  view.vecsPerRow = vpr;
  view.perm = perm;
  views_[op] = view;
  return &views_[op];
}

void LoweringContext::written(const TensorView &view, int64_t row, int64_t vec, int64_t cycle) {
  view.storage->ready[size_t(view.storageRow(row) * view.vecsPerRow + vec)] = cycle + 1;
}

void LoweringContext::read(const TensorView &view, int64_t cycle) {
  view.storage->lastRead = std::max(view.storage->lastRead, cycle);
}

llvm::Expected<TensorView> LoweringContext::scratch(const ir::Op &op, ir::DType dtype, int64_t rows,
                                                   int64_t cols) {
  int64_t vpr = vecsPerRow(cols);
  std::string what = std::string(ir::mnemonic(op.kind())) + " intermediate";
  auto block = sram_.allocate(tensor::dtypeSize(dtype), uint32_t(rows * vpr), SramOwner{what, op.loc()});
  if (!block)
    return block.takeError();
  auto storage = std::make_shared<Storage>();
  storage->block = *block;
  storage->vecsPerRow = vpr;
  storage->ready.assign(size_t(rows * vpr), std::numeric_limits<int64_t>::max() / 4);
  TensorView view;
  view.storage = storage;
  view.dtype = dtype;
  view.rows = rows;
  view.cols = cols;
  view.vecsPerRow = vpr;
  return view;
}

void LoweringContext::releaseScratch(const TensorView &view) {
  sram_.release(view.storage->block.id, view.storage->lastRead);
}

llvm::Expected<TensorView> LoweringContext::constant(const ir::Op &op, ir::DType dtype, int64_t rows,
                                                     int64_t cols, std::vector<uint8_t> data,
                                                     const std::vector<uint16_t> &avoid) {
  auto sharesAvoided = [&](const std::vector<uint16_t> &slices) {
    for (uint16_t s : slices)
      if (std::find(avoid.begin(), avoid.end(), s) != avoid.end())
        return true;
    return false;
  };
  auto key = std::make_pair(std::string(tensor::dtypeName(dtype)) + "x" + std::to_string(rows) + "x" +
                                std::to_string(cols),
                            data);
  if (auto it = constantViews_.find(key);
      it != constantViews_.end() && !sharesAvoided(it->second.slices()))
    return it->second;
  int64_t vpr = vecsPerRow(cols);
  // A constant is loaded before the run starts: its space must be SRAM no
  // block written during the run has used (writableFrom 0), on no slice in
  // `avoid` (tensors read in the same cycles as it). Other space is skipped
  // (held meanwhile so the allocator moves on, then given back as it was).
  std::vector<SramBlock> skipped;
  llvm::Expected<SramBlock> block = llvm::make_error<llvm::StringError>("", llvm::inconvertibleErrorCode());
  for (int attempt = 0;; ++attempt) {
    llvm::consumeError(block.takeError());
    block = sram_.allocate(tensor::dtypeSize(dtype), uint32_t(rows * vpr),
                           SramOwner{std::string(ir::mnemonic(op.kind())) + " constant", op.loc()});
    if (!block)
      break;
    // Past a few rounds of every slice, settle for a shared slice (the
    // placer then serialises the reads) but never for reused space.
    bool clash = sharesAvoided(block->slices) && attempt < 2 * int(chip_.memSlices);
    if (block->writableFrom == 0 && !clash)
      break;
    skipped.push_back(*block);
  }
  for (const SramBlock &b : skipped)
    sram_.release(b.id, b.writableFrom - 1);
  if (!block)
    return block.takeError();
  auto storage = std::make_shared<Storage>();
  storage->block = *block;
  storage->vecsPerRow = vpr;
  storage->ready.assign(size_t(rows * vpr), 0);
  storage->persistent = true;
  TensorView view;
  view.storage = storage;
  view.dtype = dtype;
  view.rows = rows;
  view.cols = cols;
  view.vecsPerRow = vpr;
  backend::TensorPlacement t;
  t.role = backend::TensorRole::Constant;
  t.dtype = dtype;
  t.shape = {backend::Dim{cols, ""}};
  if (rows != 1)
    t.shape.insert(t.shape.begin(), backend::Dim{rows, ""});
  t.slices = block->slices;
  t.addr = block->addr;
  t.data = std::move(data);
  constants.push_back(std::move(t));
  constantViews_[key] = view;
  return view;
}

void LoweringContext::notePath(const ir::Op &op, int64_t latency) {
  int64_t start = 0;
  for (const ir::Op *operand : op.operands())
    if (auto it = pathEnd.find(operand); it != pathEnd.end())
      start = std::max(start, it->second);
  pathEnd[&op] = start + latency;
  criticalPath = std::max(criticalPath, start + latency);
}

void encodeElement(ir::DType dtype, double value, uint8_t *out) {
  switch (dtype) {
  case ir::DType::F32: {
    float f = float(value);
    std::memcpy(out, &f, 4);
    break;
  }
  case ir::DType::F16: {
    uint16_t h = tensor::floatToHalfBits(float(value));
    std::memcpy(out, &h, 2);
    break;
  }
  case ir::DType::BF16: {
    uint16_t h = tensor::floatToBF16Bits(float(value));
    std::memcpy(out, &h, 2);
    break;
  }
  case ir::DType::Bool:
    out[0] = value != 0;
    break;
  default: {
    int64_t i = int64_t(value);
    std::memcpy(out, &i, tensor::dtypeSize(dtype)); // little-endian: the low bytes wrap
    break;
  }
  }
}

llvm::Error unsupported(const ir::Op &op, const std::string &why) {
  return llvm::make_error<ScheduleError>(
      ScheduleError::Kind::Unsupported,
      "cannot compile '" + std::string(ir::mnemonic(op.kind())) + "' onto the chip yet" +
          (why.empty() ? "" : " (" + why + ")"),
      op.loc());
}

llvm::Error cannotPlace(const ir::Op &op) {
  return llvm::make_error<ScheduleError>(
      ScheduleError::Kind::Unsupported,
      "cannot compile '" + std::string(ir::mnemonic(op.kind())) +
          "' onto the chip yet: no cycle fits one vector's work (it needs a MEM port twice "
          "in one cycle)",
      op.loc());
}

LoweringFn loweringFor(ir::OpKind kind) {
  using K = ir::OpKind;
  switch (kind) {
  case K::Matmul:
    return lowerMatmul;
  case K::Conv2d:
    return lowerConv;
  case K::MaxPool2d:
  case K::AvgPool2d:
    return lowerPool;
  case K::Reshape:
  case K::Broadcast:
    return lowerView;
  case K::ReduceSum:
  case K::ReduceMean:
  case K::ReduceMax:
  case K::ReduceMin:
  case K::Argmax:
    return lowerReduce;
  case K::Softmax:
    return lowerSoftmax;
  case K::Transpose:
  case K::Slice:
  case K::Concat:
    return lowerLayout;
  case K::Iota:
    return lowerIota;
  case K::Gather:
    return lowerGather;
  default:
    return ir::isElementwise(kind) ? lowerElementwise : nullptr;
  }
}

} // namespace lpu::scheduler
