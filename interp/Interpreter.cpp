// The reference interpreter's driver: binds weights, checks inputs, runs the
// ops in program order (one kernel call per op) and frees each value after
// its last use.
#include "interp/Interpreter.h"

#include "interp/InterpreterKernels.h"

#include "support/RandomTensor.h"
#include "support/SafeTensors.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringSet.h>

#include <cblas.h>

#include <cstring>
#include <thread>

namespace lpu::interp {

using detail::Value;
using ir::paramPath;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string inputName(const Op &op) { return op.stringAttr("name").value_or(""); }

Type typeOf(const tensor::Tensor &t) { return Type{t.dtype(), t.shape().vec()}; }

} // namespace

namespace detail {
Value toValue(const tensor::Tensor &t) {
  Type type = typeOf(t);
  if (t.dtype() == DType::F16) {
    // Weights are mostly f16: convert in bulk.
    std::vector<float> data(static_cast<size_t>(t.numElements()));
    std::vector<uint16_t> bits(data.size());
    std::memcpy(bits.data(), t.bytes().data(), bits.size() * sizeof(uint16_t));
    detail::halfToFloat(bits.data(), data.data(), data.size());
    return detail::makeFloat(std::move(type), std::move(data));
  }
  if (tensor::isFloat(t.dtype()))
    return detail::makeFloat(std::move(type), t.toFloats());
  std::vector<int32_t> data(static_cast<size_t>(t.numElements()));
  for (int64_t k = 0; k < t.numElements(); ++k)
    data[k] = static_cast<int32_t>(t.getInt(k));
  return detail::makeInt(std::move(type), std::move(data));
}

tensor::Tensor toTensor(const Value &v) {
  if (v.isFloat())
    return tensor::Tensor::fromFloats(v.type.dtype, v.type.shape, *v.f);
  tensor::Tensor t(v.type.dtype, v.type.shape);
  for (size_t k = 0; k < v.i->size(); ++k)
    t.setInt(static_cast<int64_t>(k), (*v.i)[k]);
  return t;
}

llvm::Expected<Value> evalOp(const Op &op, llvm::ArrayRef<const Value *> args, unsigned threads) {
  switch (opClass(op.kind())) {
  case OpClass::Leaf:
    if (op.kind() != OpKind::Input && op.kind() != OpKind::Param)
      return evalLeaf(op);
    break;
  case OpClass::Unary:
  case OpClass::Binary:
  case OpClass::Ternary:
    return evalElementwise(op, args);
  case OpClass::Reduce:
    return evalReduce(op, *args[0]);
  case OpClass::Layout:
    return evalLayout(op, args);
  case OpClass::Contract:
    return evalContract(op, args, threads);
  case OpClass::Terminator:
    break;
  }
  return opError(op, "cannot be evaluated");
}
} // namespace detail
using detail::toTensor;
using detail::toValue;

std::vector<tensor::TensorSpec> inputSpecs(const Function &fn) {
  std::vector<tensor::TensorSpec> specs;
  for (const Op *op : fn.inputs())
    specs.push_back({inputName(*op), op->type().dtype, op->type().shape});
  return specs;
}

llvm::Expected<std::vector<tensor::TensorSpec>> paramSpecs(const Function &fn) {
  std::vector<tensor::TensorSpec> specs;
  std::map<std::string, size_t> first; // path -> position of its first param
  const auto &ops = fn.ops();
  for (size_t k = 0; k < ops.size(); ++k) {
    const Op &op = *ops[k];
    if (op.kind() != OpKind::Param)
      continue;
    // A param that holds a slice (ir::Shard) reads the whole weight.
    Type full = ir::fullType(op);
    auto [it, fresh] = first.try_emplace(paramPath(op), k);
    if (fresh) {
      specs.push_back({paramPath(op), full.dtype, full.shape});
      continue;
    }
    Type known = ir::fullType(*ops[it->second]);
    if (known != full)
      return error("@" + fn.name() + ": parameter '" + paramPath(op) + "' is a weight " +
                   known.str() + " at %" + llvm::Twine(it->second) + " and " + full.str() +
                   " at %" + llvm::Twine(k) + " (the params of one path read one weight)");
  }
  return specs;
}

llvm::Expected<std::vector<tensor::TensorSpec>>
paramSpecs(llvm::ArrayRef<const Function *> functions) {
  std::vector<tensor::TensorSpec> specs;
  std::map<std::string, size_t> index;
  for (const Function *fn : functions) {
    auto own = paramSpecs(*fn);
    if (!own)
      return own.takeError();
    for (const tensor::TensorSpec &spec : *own) {
      auto [it, fresh] = index.insert({spec.name, specs.size()});
      if (fresh) {
        specs.push_back(spec);
        continue;
      }
      const tensor::TensorSpec &known = specs[it->second];
      if (known.dtype != spec.dtype || known.shape != spec.shape)
        return error("parameter '" + spec.name + "' is " + Type{known.dtype, known.shape}.str() +
                     " in one function and " + Type{spec.dtype, spec.shape}.str() + " in @" +
                     fn->name());
    }
  }
  return specs;
}

llvm::Expected<std::map<std::string, tensor::Tensor>>
loadWeights(const WeightSource &source, llvm::ArrayRef<tensor::TensorSpec> params) {
  if (source.files.empty())
    return tensor::randomTensors(source.randomSeed, params);
  return tensor::loadTensorFiles(source.files, params);
}

struct Interpreter::State {
  const Function *fn = nullptr;
  InterpreterOptions options;
  llvm::DenseMap<const Op *, size_t> index; // op -> position in program order
  std::vector<size_t> lastUse;              // position of the last op reading it
  std::map<size_t, Value> params;           // bound weights, by op position
};

Interpreter::Interpreter(std::unique_ptr<State> state) : state_(std::move(state)) {}
Interpreter::~Interpreter() = default;

const Function &Interpreter::function() const { return *state_->fn; }

llvm::Expected<std::unique_ptr<Interpreter>>
Interpreter::create(const Function &fn, const std::map<std::string, tensor::Tensor> &weights,
                    InterpreterOptions options) {
  auto state = std::make_unique<State>();
  state->fn = &fn;
  state->options = options;
  const auto &ops = fn.ops();
  state->lastUse.assign(ops.size(), 0);
  for (size_t k = 0; k < ops.size(); ++k) {
    state->index[ops[k].get()] = k;
    for (const Op *operand : ops[k]->operands()) {
      auto it = state->index.find(operand);
      if (it == state->index.end())
        return error("@" + fn.name() + ": op " + llvm::Twine(k) + " ('" + mnemonic(ops[k]->kind()) +
                     "') reads a value not defined before it");
      state->lastUse[it->second] = k;
    }
  }
  if (!fn.terminator())
    return error("@" + fn.name() + " has no return");
  std::vector<std::string> missing, wrongType;
  // By path and slice: the params of a path that hold the same slice (or
  // none) share one converted value.
  std::map<std::pair<std::string, std::optional<ir::Shard>>, Value> converted;
  for (size_t k = 0; k < ops.size(); ++k) {
    const Op &op = *ops[k];
    if (op.kind() != OpKind::Param)
      continue;
    std::string path = paramPath(op);
    auto it = weights.find(path);
    if (it == weights.end()) {
      missing.push_back(path);
      continue;
    }
    // The weights hold whole tensors; a sharded param binds its slice.
    Type full = ir::fullType(op);
    if (typeOf(it->second) != full) {
      wrongType.push_back(path + " (expected " + full.str() + ", given " +
                          typeOf(it->second).str() + ")");
      continue;
    }
    std::optional<ir::Shard> shard = ir::shardOf(op);
    auto [c, fresh] = converted.try_emplace({path, shard});
    if (fresh) {
      if (!shard) {
        c->second = toValue(it->second);
      } else {
        auto slice = tensor::sliceAxis(it->second, shard->axis, shard->start,
                                       op.type().shape[size_t(shard->axis)]);
        if (!slice)
          return error("@" + fn.name() + ": parameter '" + path + "': " +
                       llvm::toString(slice.takeError()));
        c->second = toValue(*slice);
      }
    }
    state->params[k] = c->second;
  }
  if (!missing.empty() || !wrongType.empty()) {
    std::string message = "the weights do not match @" + fn.name() + ":";
    if (!missing.empty())
      message +=
          "\n  missing (" + std::to_string(missing.size()) + "): " + llvm::join(missing, ", ");
    if (!wrongType.empty())
      message += "\n  wrong type (" + std::to_string(wrongType.size()) +
                 "): " + llvm::join(wrongType, ", ");
    return error(message);
  }
  return std::unique_ptr<Interpreter>(new Interpreter(std::move(state)));
}

llvm::Expected<std::vector<NamedTensor>>
Interpreter::run(const std::map<std::string, tensor::Tensor> &inputs) const {
  const Function &fn = *state_->fn;
  const auto &ops = fn.ops();
  // Inputs first, so a mistake is reported before any work.
  std::vector<std::string> names;
  for (const Op *op : fn.inputs())
    names.push_back(inputName(*op));
  for (const auto &[name, value] : inputs)
    if (!llvm::is_contained(names, name))
      return error("unknown input '" + name + "' (@" + fn.name() + " takes: " +
                   (names.empty() ? std::string("no inputs") : llvm::join(names, ", ")) + ")");
  for (const Op *op : fn.inputs()) {
    auto it = inputs.find(inputName(*op));
    if (it == inputs.end())
      return error("missing input '" + inputName(*op) + "' (" + op->type().str() + ")");
    // A state's slice (ir::Shard) takes the whole state.
    if (typeOf(it->second) != ir::fullType(*op))
      return error("input '" + inputName(*op) + "' is " + typeOf(it->second).str() + ", but @" +
                   fn.name() + " takes " + ir::fullType(*op).str());
  }
  // OpenBLAS itself stays on one thread: its own split of a gemm changes
  // the order of the sums with the thread count (see InterpreterContract).
  openblas_set_num_threads(1);
  unsigned threads = state_->options.threads ? state_->options.threads
                                             : std::max(1u, std::thread::hardware_concurrency());

  std::vector<Value> values(ops.size());
  std::vector<const Value *> args;
  // One kernel call per op (the kernels loop over elements themselves).
  auto evaluate = [&](size_t k, const Op &op) -> llvm::Expected<Value> {
    if (op.kind() == OpKind::Input) {
      const tensor::Tensor &whole = inputs.at(inputName(op));
      std::optional<ir::Shard> shard = ir::shardOf(op);
      if (!shard)
        return toValue(whole);
      auto slice = tensor::sliceAxis(whole, shard->axis, shard->start, op.type().shape[size_t(shard->axis)]);
      if (!slice)
        return detail::opError(op, llvm::toString(slice.takeError()));
      return toValue(*slice);
    }
    if (op.kind() == OpKind::Param)
      return state_->params.at(k);
    return detail::evalOp(op, args, threads);
  };
  const support::Progress &progress = state_->options.progress;
  for (size_t k = 0; k < ops.size(); ++k) {
    progress.count("ops", k, ops.size());
    const Op &op = *ops[k];
    args.clear();
    for (const Op *operand : op.operands())
      args.push_back(&values[state_->index.find(operand)->second]);
    if (op.kind() == OpKind::Return) {
      std::vector<std::string> outNames =
          op.stringsAttr("names").value_or(std::vector<std::string>{});
      const std::vector<std::optional<ir::Shard>> shards = ir::outputShards(op);
      std::vector<NamedTensor> outputs;
      for (size_t i = 0; i < args.size(); ++i) {
        std::string name = i < outNames.size() ? outNames[i]
                           : args.size() == 1  ? std::string("out")
                                               : "out" + std::to_string(i);
        if (!shards[i]) {
          outputs.emplace_back(std::move(name), toTensor(*args[i]));
          continue;
        }
        // A state's slice: written into the whole state, which starts as
        // its value when the call started.
        auto whole = llvm::find_if(outputs, [&](const NamedTensor &o) { return o.first == name; });
        if (whole == outputs.end()) {
          Type full = op.operand(i)->type();
          full.shape[size_t(shards[i]->axis)] = shards[i]->full;
          auto given = inputs.find(name);
          outputs.emplace_back(name, given != inputs.end() ? given->second
                                                          : tensor::Tensor(full.dtype, full.shape));
          whole = std::prev(outputs.end());
        }
        if (auto e = tensor::writeAxis(whole->second, shards[i]->axis, shards[i]->start, toTensor(*args[i])))
          return detail::opError(op, llvm::toString(std::move(e)));
      }
      return outputs;
    }
    llvm::Expected<Value> result = evaluate(k, op);
    if (!result)
      return result.takeError();
    if (result->type != op.type())
      return detail::opError(op, "computed " + result->type.str() + " but the op says " +
                                     op.type().str());
    values[k] = std::move(*result);
    for (const Op *operand : op.operands()) {
      size_t at = state_->index.find(operand)->second;
      if (state_->lastUse[at] == k)
        values[at] = Value();
    }
  }
  return error("@" + fn.name() + " has no return");
}

llvm::Expected<std::vector<NamedTensor>>
interpret(const Function &fn, const std::map<std::string, tensor::Tensor> &inputs,
          const std::map<std::string, tensor::Tensor> &weights, InterpreterOptions options) {
  auto interpreter = Interpreter::create(fn, weights, options);
  if (!interpreter)
    return interpreter.takeError();
  return (*interpreter)->run(inputs);
}

} // namespace lpu::interp
