#include "interp/InterpreterRun.h"

#include "backend/Bucketing.h"

#include <llvm/ADT/StringExtras.h>

#include <chrono>
#include <ctime>
#include <set>

namespace lpu::interp {

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

backend::Bucket bucketOf(const Function &fn) {
  backend::Bucket bucket;
  for (const auto &[size, value] : fn.bucket())
    bucket.dims.push_back({size, value});
  return bucket;
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
  for (const Function *fn : functions) {
    backend::Bucket bucket = bucketOf(*fn);
    auto place = [&](backend::TensorRole role, const std::string &name, const Type &type,
                     bool state) {
      backend::TensorPlacement t;
      t.role = role;
      t.name = name;
      t.state = state;
      t.dtype = type.dtype;
      for (int64_t d : type.shape)
        t.shape.push_back(backend::Dim{d, ""});
      bucket.tensors.push_back(std::move(t));
    };
    // A partitioned function reads an input on each chip that needs it, a
    // state's slices on theirs, and writes a state in slices: each name
    // once, whole.
    std::set<std::string> placed;
    for (const Op *in : fn->inputs()) {
      const std::string name = in->stringAttr("name").value_or("");
      if (placed.insert(name).second)
        place(backend::TensorRole::Input, name, ir::fullType(*in), in->boolAttr("state").value_or(false));
    }
    if (const Op *ret = fn->terminator()) {
      std::vector<std::string> names =
          ret->stringsAttr("names").value_or(std::vector<std::string>{});
      std::vector<std::string> states =
          ret->stringsAttr("states").value_or(std::vector<std::string>{});
      const std::vector<std::optional<ir::Shard>> shards = ir::outputShards(*ret);
      std::set<std::string> written;
      for (size_t i = 0; i < ret->operands().size(); ++i) {
        std::string name = i < names.size() ? names[i] : "out" + std::to_string(i);
        if (!written.insert(name).second)
          continue;
        bool state = llvm::is_contained(states, name);
        Type type = ret->operand(i)->type();
        if (shards[i])
          type.shape[size_t(shards[i]->axis)] = shards[i]->full;
        place(backend::TensorRole::Output, name, type, state);
      }
    }
    entry.buckets.push_back(std::move(bucket));
  }
  backend::SourceDims source;
  for (const Function *fn : functions) {
    ir::SourceBucketDims dims = ir::sourceBucketDims(*fn);
    source.inputs.merge(dims.inputs);
    source.outputs.merge(dims.outputs);
  }
  backend::nameBucketDims(entry, source);
  return entry;
}

llvm::Expected<EntryRun> runEntry(const Module &module, llvm::StringRef entryName,
                                  const std::map<std::string, tensor::Tensor> &inputs,
                                  const WeightSource &source, InterpreterOptions options) {
  auto functions = entryFunctions(module, entryName);
  if (!functions)
    return functions.takeError();
  backend::Entry entry = describeEntry(*functions);
  // A state the run does not give starts at zeros.
  std::map<std::string, tensor::Tensor> withStates = inputs;
  backend::addZeroStates(entry, withStates);
  auto choice = backend::selectBucket(entry, withStates);
  if (!choice)
    return choice.takeError();
  const Function &fn = *(*functions)[choice->index];
  const backend::Bucket &bucket = entry.buckets[choice->index];
  std::map<std::string, tensor::Tensor> padded;
  for (const backend::TensorPlacement &t : bucket.tensors)
    if (t.role == backend::TensorRole::Input)
      padded.emplace(t.name, backend::padTo(withStates.at(t.name), bucket.concreteShape(t)));
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  options.progress.status("bind weights");
  support::TimedScope binding(options.timing, "bind weights");
  std::map<std::string, tensor::Tensor> read;
  if (!source.loaded) {
    auto specs = paramSpecs(fn);
    if (!specs)
      return specs.takeError();
    auto weights = loadWeights(source, *specs);
    if (!weights)
      return weights.takeError();
    read = std::move(*weights);
  }
  const std::map<std::string, tensor::Tensor> &weights = source.loaded ? *source.loaded : read;
  auto t0 = Clock::now();
  auto interpreter = Interpreter::create(fn, weights, options);
  if (!interpreter)
    return interpreter.takeError();
  binding.stop();
  options.progress.status("run");
  support::TimedScope running(options.timing, "run");
  auto t1 = Clock::now();
  std::clock_t c1 = std::clock();
  auto outputs = (*interpreter)->run(padded);
  if (!outputs)
    return outputs.takeError();
  running.stop();
  EntryRun run;
  run.runCpuSeconds = double(std::clock() - c1) / CLOCKS_PER_SEC;
  run.prepareSeconds = seconds(t0, t1);
  run.runSeconds = seconds(t1, Clock::now());
  run.function = &fn;
  run.bucketText = backend::bucketLabel(bucket.dims);
  run.paddingFraction = choice->paddingFraction;
  run.weights = std::move(read); // empty when the weights were given loaded
  size_t i = 0;
  for (const backend::TensorPlacement &t : bucket.tensors) {
    if (t.role != backend::TensorRole::Output)
      continue;
    // A bucket dimension the inputs bind is cropped back to their size.
    std::vector<int64_t> shape = bucket.concreteShape(t);
    for (size_t k = 0; k < shape.size(); ++k) {
      const std::string &name = t.shape[k].name;
      auto bound = name.empty() ? choice->bound.end() : choice->bound.find(name);
      if (bound != choice->bound.end())
        shape[k] = bound->second;
    }
    NamedTensor &out = (*outputs)[i++];
    (t.state ? run.states : run.outputs).emplace_back(out.first, backend::cropTo(out.second, shape));
  }
  return run;
}

} // namespace lpu::interp
