#include "sim/Session.h"

#include "backend/Bucketing.h"
#include "support/RandomTensor.h"
#include "support/SafeTensors.h"

#include <llvm/ADT/StringExtras.h>

#include <set>

namespace lpu::sim {

using namespace backend;

namespace {
llvm::Error error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The slice of the whole weight or state `full` that placement `t` holds.
llvm::Expected<tensor::Tensor> shardOf(const TensorPlacement &t, const Bucket &bucket,
                                       const tensor::Tensor &full) {
  std::vector<int64_t> shape = bucket.concreteShape(t);
  const char *what = t.role == TensorRole::Param ? "param" : "state";
  if (t.shard.size() != 3 || t.shard[0] < 0 || uint64_t(t.shard[0]) >= shape.size())
    return error(llvm::Twine(what) + " '" + t.name + "' on chip " + llvm::Twine(t.chip) +
                 ": its shard is not AXIS,START,FULL inside its rank");
  auto slice = tensor::sliceAxis(full, t.shard[0], t.shard[1], shape[size_t(t.shard[0])]);
  if (!slice)
    return error(llvm::Twine(what) + " '" + t.name + "' on chip " + llvm::Twine(t.chip) + ": " +
                 llvm::toString(slice.takeError()));
  return slice;
}
} // namespace

llvm::Expected<SessionPlan> planSession(const Program &program, const SessionOptions &options) {
  const Entry *entry = nullptr;
  std::vector<std::string> names;
  for (const Entry &e : program.entries) {
    names.push_back(e.name);
    if (e.name == options.entry)
      entry = &e;
  }
  if (options.entry.empty()) {
    if (program.entries.size() != 1)
      return error("the program has several entries (" + llvm::join(names, ", ") +
                   "): choose one with --entry");
    entry = &program.entries.front();
  } else if (!entry) {
    return error("no entry '" + options.entry + "' in the program (it has: " +
                 llvm::join(names, ", ") + ")");
  }
  // Timing needs no data: without inputs a timing-only run takes bucket 0.
  // A state the run does not give starts at zeros.
  std::map<std::string, tensor::Tensor> inputs = options.inputs;
  addZeroStates(*entry, inputs);
  llvm::Expected<BucketChoice> choice =
      options.run.timingOnly && options.inputs.empty() ? BucketChoice{} : selectBucket(*entry, inputs);
  if (!choice)
    return choice.takeError();
  SessionPlan plan;
  plan.entry = entry;
  plan.choice = *choice;
  const Bucket &bucket = plan.bucket();

  // A weight several chips hold is placed once per chip, read once, whole:
  // a chip that holds a slice of it (a shard) is written that slice.
  // verifyProgram has checked that every placement of a name is the same
  // weight.
  // With several ranks, a rank reads the weights of its own chips alone.
  auto owners = chipOwners(options.run.ranks, bucket);
  if (!owners)
    return owners.takeError();
  auto here = [&](const TensorPlacement &t) { return ownsChip(options.run.ranks, *owners, t.chip); };
  std::vector<tensor::TensorSpec> paramSpecs;
  std::set<std::string> paramNames;
  for (const TensorPlacement &t : bucket.tensors)
    if (t.role == TensorRole::Param && here(t) && paramNames.insert(t.name).second)
      paramSpecs.push_back({t.name, t.dtype, bucket.fullShape(t)});
  if (!paramSpecs.empty() && !options.run.timingOnly) {
    if (options.params) {
      for (const tensor::TensorSpec &spec : paramSpecs) {
        auto it = options.params->find(spec.name);
        if (it == options.params->end())
          return error("no weight '" + spec.name + "' among the parameters read");
        if (it->second.dtype() != spec.dtype || it->second.shape() != llvm::ArrayRef(spec.shape))
          return error("weight '" + spec.name + "' is " + it->second.typeString() +
                       ", this entry reads " + tensor::typeString(spec.dtype, spec.shape));
        plan.params.emplace(spec.name, it->second);
      }
    } else if (!options.weightsFiles.empty() && options.run.ranks && options.run.ranks->size() > 1) {
      // One of several ranks: the files are checked against every weight
      // of the bucket, then only this rank's chips' tensors are copied out
      // of the mapped files, a shard's slice alone.
      std::vector<tensor::TensorSpec> allSpecs;
      std::set<std::string> allNames;
      for (const TensorPlacement &t : bucket.tensors)
        if (t.role == TensorRole::Param && allNames.insert(t.name).second)
          allSpecs.push_back({t.name, t.dtype, bucket.fullShape(t)});
      auto files = tensor::openTensorFiles(options.weightsFiles);
      if (!files)
        return files.takeError();
      std::vector<const tensor::SafeTensorsFile *> pointers;
      for (const tensor::SafeTensorsFile &f : *files)
        pointers.push_back(&f);
      if (auto e = tensor::checkTensors(pointers, allSpecs))
        return e;
      auto fileOf = [&](const std::string &name) {
        return *llvm::find_if(pointers, [&](const tensor::SafeTensorsFile *f) { return f->find(name); });
      };
      for (const TensorPlacement &t : bucket.tensors) {
        if (t.role != TensorRole::Param || !here(t))
          continue;
        if (t.shard.empty()) {
          if (plan.params.count(t.name))
            continue;
          auto whole = fileOf(t.name)->read(t.name);
          if (!whole)
            return whole.takeError();
          plan.params.emplace(t.name, std::move(*whole));
        } else if (!plan.shards.count({t.name, t.shard})) {
          if (t.shard.size() != 3 || t.shard[0] < 0 || size_t(t.shard[0]) >= t.shape.size())
            return error("param '" + t.name + "' on chip " + llvm::Twine(t.chip) +
                         ": its shard is not AXIS,START,FULL inside its rank");
          int64_t axis = t.shard[0];
          auto slice = fileOf(t.name)->readSlice(t.name, axis, t.shard[1], bucket.concreteShape(t)[size_t(axis)]);
          if (!slice)
            return slice.takeError();
          plan.shards.emplace(std::make_pair(t.name, t.shard), std::move(*slice));
        }
      }
    } else if (!options.weightsFiles.empty()) {
      auto loaded = tensor::loadTensorFiles(options.weightsFiles, paramSpecs);
      if (!loaded)
        return loaded.takeError();
      plan.params = std::move(*loaded);
    } else if (options.randomSeed) {
      plan.params = tensor::randomTensors(*options.randomSeed, paramSpecs);
    } else {
      std::vector<std::string> pn;
      for (const auto &s : paramSpecs)
        pn.push_back(s.name);
      return error("the program has parameters (" + llvm::join(pn, ", ") +
                   "): give --weights FILE.safetensors or --random-weights SEED");
    }
  }
  if (!options.run.timingOnly)
    for (const TensorPlacement &t : bucket.tensors) {
      if (t.role != TensorRole::Param || !here(t) || t.shard.empty() || plan.shards.count({t.name, t.shard}))
        continue;
      auto slice = shardOf(t, bucket, plan.params.at(t.name));
      if (!slice)
        return slice.takeError();
      plan.shards.emplace(std::make_pair(t.name, t.shard), std::move(*slice));
    }
  if (!options.run.timingOnly)
    for (const TensorPlacement &t : bucket.tensors) {
      if (t.role != TensorRole::Input || !here(t))
        continue;
      plan.inputs.insert_or_assign(t.name, padTo(inputs.at(t.name), bucket.fullShape(t)));
      if (!t.shard.empty() && !plan.stateShards.count({t.name, t.shard})) {
        auto slice = shardOf(t, bucket, plan.inputs.at(t.name));
        if (!slice)
          return slice.takeError();
        plan.stateShards.emplace(std::make_pair(t.name, t.shard), std::move(*slice));
      }
    }
  return plan;
}

llvm::Expected<std::unique_ptr<Machine>> placeSession(const ChipDescription &chip,
                                                      const Program &program, const Bucket &bucket,
                                                      const SessionPlan &plan,
                                                      const RunOptions &run) {
  auto machine = Machine::create(chip, program, bucket, run);
  if (!machine)
    return machine.takeError();
  for (const TensorPlacement &t : bucket.tensors) {
    if (t.role == TensorRole::Output || run.timingOnly || !(*machine)->owns(t.chip))
      continue;
    // A slice of its weight: cut by planSession (or here, for a bucket
    // changed since). Over ranks, a rank holds only the slices of a weight
    // its chips hold, not the whole.
    llvm::ArrayRef<uint8_t> bytes;
    if (t.role == TensorRole::Constant)
      bytes = t.data;
    else if (t.role == TensorRole::Input && t.shard.empty())
      bytes = plan.inputs.at(t.name).bytes();
    else if (t.role == TensorRole::Param && t.shard.empty())
      bytes = plan.params.at(t.name).bytes();
    std::optional<tensor::Tensor> cut;
    if (t.role == TensorRole::Input && !t.shard.empty()) {
      auto it = plan.stateShards.find({t.name, t.shard});
      if (it == plan.stateShards.end())
        return error("state '" + t.name + "' on chip " + llvm::Twine(t.chip) + ": no slice of it was cut");
      bytes = it->second.bytes();
    } else if (t.role == TensorRole::Param && !t.shard.empty()) {
      auto it = plan.shards.find({t.name, t.shard});
      if (it != plan.shards.end()) {
        bytes = it->second.bytes();
      } else {
        auto whole = plan.params.find(t.name);
        if (whole == plan.params.end())
          return error("param '" + t.name + "' on chip " + llvm::Twine(t.chip) + ": no slice of it was read");
        auto slice = shardOf(t, bucket, whole->second);
        if (!slice)
          return slice.takeError();
        cut = std::move(*slice);
        bytes = cut->bytes();
      }
    }
    if (auto e = (*machine)->writeTensor(t, bytes))
      return e;
  }
  return machine;
}

llvm::Expected<SessionResult> runSession(const Program &program, const ChipDescription &chip,
                                         const SessionOptions &options) {
  const support::Progress &progress = options.run.progress;
  progress.status("bind weights");
  support::TimedScope binding(options.timing, "bind weights");
  Ranks *ranks = options.run.ranks;
  // With several ranks, each rank's failure to place its chips' values
  // ends the run on every rank (agree), and so does a run of the machine.
  auto plan = planSession(program, options);
  if (auto e = agree(ranks, plan ? llvm::Error::success() : plan.takeError()))
    return e;
  const Entry *entry = plan->entry;
  const BucketChoice *choice = &plan->choice;
  const Bucket &bucket = plan->bucket();
  auto machine = placeSession(chip, program, bucket, *plan, options.run);
  if (auto e = agree(ranks, machine ? llvm::Error::success() : machine.takeError()))
    return e;
  binding.stop();
  progress.status("simulate");
  support::TimedScope simulating(options.timing, "simulate");
  if (auto e = (*machine)->run())
    return e;
  simulating.stop();

  progress.status("read outputs");
  support::TimedScope reading(options.timing, "read outputs");
  SessionResult result;
  // Each output as its chip holds it: read here, or by the rank that ran
  // the chip and gathered.
  std::map<size_t, std::vector<uint8_t>> read;
  {
    llvm::Error failed = llvm::Error::success();
    ByteWriter mine;
    for (size_t i = 0; i < bucket.tensors.size() && !failed; ++i) {
      const TensorPlacement &t = bucket.tensors[i];
      if (t.role != TensorRole::Output || options.run.timingOnly || !(*machine)->owns(t.chip))
        continue;
      auto bytes = (*machine)->readTensor(t);
      if (!bytes) {
        failed = bytes.takeError();
        break;
      }
      mine.put<uint64_t>(i);
      mine.putBytes(llvm::StringRef(reinterpret_cast<const char *>(bytes->data()), bytes->size()));
      read.emplace(i, std::move(*bytes));
    }
    if (auto e = agree(ranks, std::move(failed)))
      return e;
    if (ranks && ranks->size() > 1) {
      // Rank 0 alone writes them: the others are done.
      auto all = ranks->gather(mine.take());
      if (!all)
        return all.takeError();
      if (ranks->rank() != 0) {
        // Its part of the trace, gathered the same way.
        if (options.run.trace) {
          auto trace = (*machine)->traceJson();
          if (!trace)
            return trace.takeError();
        }
        result.report = (*machine)->report();
        return result;
      }
      for (const std::string &blob : *all) {
        ByteReader r(blob);
        while (!r.done() && !r.bad()) {
          size_t i = r.get<uint64_t>();
          llvm::StringRef bytes = r.getBytes();
          read.emplace(i, std::vector<uint8_t>(bytes.bytes_begin(), bytes.bytes_end()));
        }
        if (r.bad())
          return error("a message between ranks was cut short");
      }
    }
  }
  for (size_t i = 0; i < bucket.tensors.size(); ++i) {
    const TensorPlacement &t = bucket.tensors[i];
    if (t.role != TensorRole::Output || options.run.timingOnly)
      continue;
    std::vector<int64_t> full = bucket.concreteShape(t);
    auto value = tensor::Tensor::fromBytes(t.dtype, full, std::move(read.at(i)));
    if (!value)
      return value.takeError();
    std::vector<int64_t> shape;
    for (const Dim &d : t.shape)
      shape.push_back(d.name.empty() ? d.value
                      : choice->bound.count(d.name) ? choice->bound.at(d.name)
                                                    : bucket.concreteShape(t)[shape.size()]);
    if (!t.shard.empty()) {
      // A chip's slice of a state: written into the whole, which starts as
      // the state's value when the call started (every slice is written:
      // the partition splits it whole).
      auto whole = llvm::find_if(result.states, [&](const auto &s) { return s.first == t.name; });
      if (whole == result.states.end()) {
        auto it = plan->inputs.find(t.name);
        tensor::Tensor start = it != plan->inputs.end() ? it->second : tensor::Tensor(t.dtype, bucket.fullShape(t));
        result.states.push_back({t.name, std::move(start)});
        whole = std::prev(result.states.end());
      }
      if (auto e = tensor::writeAxis(whole->second, t.shard[0], t.shard[1], *value))
        return error("state '" + t.name + "' on chip " + llvm::Twine(t.chip) + ": " + llvm::toString(std::move(e)));
      continue;
    }
    (t.state ? result.states : result.outputs).push_back({t.name, cropTo(*value, shape)});
  }
  result.report = (*machine)->report();
  result.context.entry = entry->name;
  result.context.bucket = choice->index;
  for (const BucketDim &d : bucket.dims)
    result.context.bucketDims += (result.context.bucketDims.empty() ? "" : " ") + d.name + "=" +
                                 std::to_string(d.value);
  result.context.paddingFraction = choice->paddingFraction;
  result.context.timingOnly = options.run.timingOnly;
  if (options.run.trace) {
    auto trace = (*machine)->traceJson();
    if (!trace)
      return trace.takeError();
    result.traceJson = std::move(*trace);
  }
  return result;
}

} // namespace lpu::sim
