#include "interp/InterpreterRun.h"

#include "backend/Bucketing.h"

#include <llvm/ADT/StringExtras.h>

#include <chrono>
#include <ctime>

namespace lpu::interp {

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Names each dimension of `shapes[f]` (one shape per function) after the
/// bucket size it equals in every function; "" when none does.
std::vector<backend::Dim> nameDims(llvm::ArrayRef<const Function *> functions,
                                   llvm::ArrayRef<std::vector<int64_t>> shapes, size_t f) {
  std::vector<backend::Dim> dims;
  const Function &fn = *functions[f];
  for (size_t d = 0; d < shapes[f].size(); ++d) {
    backend::Dim dim{shapes[f][d], ""};
    for (const auto &[size, value] : fn.bucket()) {
      bool everywhere = true;
      for (size_t g = 0; g < functions.size() && everywhere; ++g) {
        std::optional<int64_t> there;
        for (const auto &[otherSize, otherValue] : functions[g]->bucket())
          if (otherSize == size)
            there = otherValue;
        everywhere = there && d < shapes[g].size() && shapes[g][d] == *there;
      }
      if (everywhere) {
        dim.name = size;
        break;
      }
    }
    dims.push_back(dim);
  }
  return dims;
}

std::string bucketText(const Function &fn) {
  std::string s;
  for (const auto &[size, value] : fn.bucket())
    s += (s.empty() ? "" : " ") + size + "=" + std::to_string(value);
  return s.empty() ? "fixed shapes" : s;
}
} // namespace

llvm::Expected<std::vector<const Function *>> entryFunctions(const Module &module,
                                                             llvm::StringRef name) {
  std::vector<std::string> names;
  for (const auto &fn : module.functions)
    if (!llvm::is_contained(names, fn->name()))
      names.push_back(fn->name());
  if (name.empty()) {
    if (names.size() != 1)
      return error(names.empty() ? std::string("the module has no entries")
                                 : "the module has several entries (" + llvm::join(names, ", ") +
                                       "): choose one with --entry");
    name = names.front();
  }
  std::vector<const Function *> functions;
  for (const auto &fn : module.functions)
    if (fn->name() == name)
      functions.push_back(fn.get());
  if (functions.empty())
    return error("no entry '" + name + "' in the module (it has: " +
                 (names.empty() ? std::string("none") : llvm::join(names, ", ")) + ")");
  return functions;
}

backend::Entry describeEntry(llvm::ArrayRef<const Function *> functions) {
  backend::Entry entry;
  entry.name = functions.empty() ? "" : functions.front()->name();
  size_t count = functions.size();
  // Shapes per function: the inputs in argument order, then the outputs.
  std::vector<std::vector<std::vector<int64_t>>> inputs(count), outputs(count);
  for (size_t f = 0; f < count; ++f) {
    for (const Op *in : functions[f]->inputs())
      inputs[f].push_back(in->type().shape);
    if (const Op *ret = functions[f]->terminator())
      for (const Op *value : ret->operands())
        outputs[f].push_back(value->type().shape);
  }
  for (size_t f = 0; f < count; ++f) {
    const Function &fn = *functions[f];
    backend::Bucket bucket;
    for (const auto &[size, value] : fn.bucket())
      bucket.dims.push_back({size, value});
    auto place = [&](backend::TensorRole role, const std::string &name, const Type &type,
                     auto &shapes, size_t i) {
      std::vector<std::vector<int64_t>> column;
      for (size_t g = 0; g < count; ++g)
        column.push_back(i < shapes[g].size() ? shapes[g][i] : std::vector<int64_t>{});
      backend::TensorPlacement t;
      t.role = role;
      t.name = name;
      t.dtype = type.dtype;
      t.shape = nameDims(functions, column, f);
      bucket.tensors.push_back(std::move(t));
    };
    std::vector<Op *> ins = fn.inputs();
    for (size_t i = 0; i < ins.size(); ++i)
      place(backend::TensorRole::Input, ins[i]->stringAttr("name").value_or(""), ins[i]->type(),
            inputs, i);
    if (const Op *ret = fn.terminator()) {
      std::vector<std::string> names =
          ret->stringsAttr("names").value_or(std::vector<std::string>{});
      for (size_t i = 0; i < ret->operands().size(); ++i)
        place(backend::TensorRole::Output, i < names.size() ? names[i] : "out" + std::to_string(i),
              ret->operand(i)->type(), outputs, i);
    }
    entry.buckets.push_back(std::move(bucket));
  }
  return entry;
}

llvm::Expected<EntryRun> runEntry(const Module &module, llvm::StringRef entryName,
                                  const std::map<std::string, tensor::Tensor> &inputs,
                                  const WeightSource &source, InterpreterOptions options) {
  auto functions = entryFunctions(module, entryName);
  if (!functions)
    return functions.takeError();
  backend::Entry entry = describeEntry(*functions);
  auto choice = backend::selectBucket(entry, inputs);
  if (!choice)
    return choice.takeError();
  const Function &fn = *(*functions)[choice->index];
  const backend::Bucket &bucket = entry.buckets[choice->index];
  std::map<std::string, tensor::Tensor> padded;
  for (const backend::TensorPlacement &t : bucket.tensors)
    if (t.role == backend::TensorRole::Input)
      padded.emplace(t.name, backend::padTo(inputs.at(t.name), bucket.concreteShape(t)));
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  auto weights = loadWeights(source, paramSpecs(fn));
  if (!weights)
    return weights.takeError();
  auto t0 = Clock::now();
  auto interpreter = Interpreter::create(fn, *weights, options);
  if (!interpreter)
    return interpreter.takeError();
  auto t1 = Clock::now();
  std::clock_t c1 = std::clock();
  auto outputs = (*interpreter)->run(padded);
  if (!outputs)
    return outputs.takeError();
  EntryRun run;
  run.runCpuSeconds = double(std::clock() - c1) / CLOCKS_PER_SEC;
  run.prepareSeconds = seconds(t0, t1);
  run.runSeconds = seconds(t1, Clock::now());
  run.function = &fn;
  run.bucketText = bucketText(fn);
  run.paddingFraction = choice->paddingFraction;
  run.weights = std::move(*weights);
  size_t i = 0;
  for (const backend::TensorPlacement &t : bucket.tensors) {
    if (t.role != backend::TensorRole::Output)
      continue;
    // A bucket dimension the inputs bind is cropped back to their size.
    std::vector<int64_t> shape;
    for (const backend::Dim &d : t.shape) {
      auto bound = d.name.empty() ? choice->bound.end() : choice->bound.find(d.name);
      shape.push_back(bound == choice->bound.end() ? d.value : bound->second);
    }
    NamedTensor &out = (*outputs)[i++];
    run.outputs.emplace_back(out.first, backend::cropTo(out.second, shape));
  }
  return run;
}

} // namespace lpu::interp
