#include "driver/Generate.h"

#include "backend/Bucketing.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace lpu::driver {

using backend::Entry;
using backend::TensorPlacement;
using backend::TensorRole;
using tensor::DType;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

const Entry *findEntry(llvm::ArrayRef<Entry> entries, const std::string &name) {
  for (const Entry &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

/// The type of `t` as messages print it, its bucket dimensions by name.
std::string typeText(const TensorPlacement &t) {
  std::string s = tensor::dtypeName(t.dtype).str() + "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + (t.shape[i].name.empty() ? std::to_string(t.shape[i].value)
                                                     : t.shape[i].name);
  return s + "]";
}

bool isI32Scalar(const TensorPlacement &t) {
  return t.dtype == DType::I32 &&
         (t.shape.empty() || (t.shape.size() == 1 && t.shape[0].name.empty() && t.shape[0].value == 1));
}

/// A run-time integer as input `t` takes it: i32[] or i32[1].
tensor::Tensor scalarFor(const TensorPlacement &t, int64_t value) {
  tensor::Tensor s(DType::I32, t.shape.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{1});
  s.setInt(0, value);
  return s;
}

/// Checks one entry's inputs against the contract: `required` must be
/// there, `optional` may be, no other input that is not a state.
using InputRule = std::pair<std::string, std::function<bool(const TensorPlacement &)>>;
llvm::Error checkInputs(const Entry &entry, const char *role, const std::vector<InputRule> &allowed,
                        const std::string &required, const char *expected) {
  const backend::Bucket &bucket = entry.buckets.front();
  bool found = false;
  for (const TensorPlacement &t : bucket.tensors) {
    if (t.role != TensorRole::Input || t.state)
      continue;
    auto it = llvm::find_if(allowed, [&](const auto &a) { return a.first == t.name; });
    if (it == allowed.end())
      return error("--generate: the " + llvm::Twine(role) + " entry '" + entry.name +
                   "' has an input '" + t.name + "' that generation does not give (it gives " +
                   expected + "; every other input must be a state)");
    if (!it->second(t))
      return error("--generate: input '" + t.name + "' of the " + llvm::Twine(role) + " entry '" +
                   entry.name + "' is " + typeText(t) + "; expected " + expected);
    found |= t.name == required;
  }
  if (!found)
    return error("--generate: the " + llvm::Twine(role) + " entry '" + entry.name +
                 "' has no input '" + required + "' (expected " + expected + ")");
  auto logits = llvm::find_if(bucket.tensors, [](const TensorPlacement &t) {
    return t.role == TensorRole::Output && !t.state;
  });
  if (logits == bucket.tensors.end())
    return error("--generate: the " + llvm::Twine(role) + " entry '" + entry.name +
                 "' has no output that is not a state (its first one is the logits)");
  // An id or a mask returned first would be argmaxed as if it were scores.
  if (!tensor::isFloat(logits->dtype))
    return error("--generate: the logits of the " + llvm::Twine(role) + " entry '" + entry.name +
                 "' (its first output that is not a state, '" + logits->name + "') are " +
                 typeText(*logits) + "; they must be a float tensor (return the logits first)");
  return llvm::Error::success();
}

/// The row of `logits` ([..., V] viewed as rows of V) that predicts the
/// next token: the last real position's (row `realRows - 1`), or the only
/// row. The id of its largest value, the first of equal ones (NaN never).
llvm::Expected<int32_t> nextToken(const tensor::Tensor &logits, int64_t realRows,
                                  const std::string &entry) {
  if (logits.rank() == 0 || logits.shape().back() == 0)
    return error("--generate: the logits of entry '" + entry + "' are " + logits.typeString() +
                 ": expected [..., V] with a vocabulary V of at least 1");
  int64_t vocab = logits.shape().back(), rows = logits.numElements() / vocab;
  int64_t row = rows == 1 ? 0 : rows == realRows ? realRows - 1 : -1;
  if (row < 0)
    return error("--generate: the logits of entry '" + entry + "' are " + logits.typeString() +
                 ", " + llvm::Twine(rows) + " rows of " + llvm::Twine(vocab) +
                 ": expected one row, or one per position (" + llvm::Twine(realRows) + ")");
  std::vector<float> values = logits.toFloats();
  int64_t best = -1;
  for (int64_t v = 0; v < vocab; ++v) {
    float x = values[size_t(row * vocab + v)];
    if (!std::isnan(x) && (best < 0 || x > values[size_t(row * vocab + best)]))
      best = v;
  }
  if (best < 0)
    return error("--generate: the logits of entry '" + entry + "' are all NaN");
  return int32_t(best);
}
} // namespace

llvm::Error checkGenerateContract(llvm::ArrayRef<Entry> entries, const GenerateOptions &options) {
  if (options.tokens < 1)
    return error("--generate " + llvm::Twine(options.tokens) +
                 ": the number of tokens to generate is at least 1");
  const tensor::Tensor &p = options.prompt;
  if (p.dtype() != DType::I32 || p.rank() != 2 || p.shape()[0] != 1 || p.shape()[1] < 1)
    return error("--prompt holds " + p.typeString() +
                 "; expected the token ids as i32[1, S] (one sequence of at least one id)");
  // The last decode call's `pos` is S + N - 2, an i32 (compared without
  // computing it: N near 2^63 overflowed the sum, which then passed).
  const int64_t most = int64_t(std::numeric_limits<int32_t>::max()) - p.shape()[1] + 2;
  if (options.tokens > most)
    return error("--generate " + llvm::Twine(options.tokens) + " with a prompt of " +
                 llvm::Twine(p.shape()[1]) + " ids: the last decode call's position " +
                 llvm::Twine(uint64_t(p.shape()[1]) + uint64_t(options.tokens) - 2) + " is past an i32 'pos' (at most " +
                 llvm::Twine(std::numeric_limits<int32_t>::max() - p.shape()[1] + 2) +
                 " tokens after this prompt)");
  std::vector<std::string> names;
  for (const Entry &e : entries)
    names.push_back(e.name);
  for (const std::string *name : {&options.prefillEntry, &options.decodeEntry}) {
    const Entry *e = findEntry(entries, *name);
    if (!e || e->buckets.empty())
      return error("--generate needs a prefill and a decode entry: there is no entry '" + *name +
                   "' (the entries: " + llvm::join(names, ", ") +
                   "; choose others with --prefill-entry and --decode-entry)");
  }
  auto ids = [](const TensorPlacement &t) { return t.dtype == DType::I32 && t.shape.size() == 2; };
  auto id = [](const TensorPlacement &t) {
    return t.dtype == DType::I32 && t.shape.size() == 2 && t.shape[0].name.empty() &&
           t.shape[0].value == 1 && t.shape[1].name.empty() && t.shape[1].value == 1;
  };
  if (auto e = checkInputs(*findEntry(entries, options.prefillEntry), "prefill",
                           {InputRule{"ids", ids}, InputRule{"len", isI32Scalar}}, "ids",
                           "'ids' i32[1, S] and optionally 'len' i32[]"))
    return e;
  if (auto e = checkInputs(*findEntry(entries, options.decodeEntry), "decode",
                           {InputRule{"id", id}, InputRule{"pos", isI32Scalar}}, "id",
                           "'id' i32[1, 1] and 'pos' i32[]"))
    return e;
  std::vector<tensor::TensorSpec> states = backend::stateSpecs(entries);
  for (const auto &[name, value] : options.initialStates) {
    auto spec = llvm::find_if(states, [&](const tensor::TensorSpec &s) { return s.name == name; });
    if (spec == states.end()) {
      std::vector<std::string> stateNames;
      for (const tensor::TensorSpec &s : states)
        stateNames.push_back(s.name);
      return error("--input " + name + ": with --generate an --input gives a state's first value, "
                   "and '" + name + "' is not a state (the states: " +
                   (stateNames.empty() ? std::string("none") : llvm::join(stateNames, ", ")) + ")");
    }
    if (value.dtype() != spec->dtype || value.shape() != llvm::ArrayRef(spec->shape))
      return error("--input " + name + ": holds " + value.typeString() + ", the state is " +
                   tensor::typeString(spec->dtype, spec->shape));
  }
  return llvm::Error::success();
}

llvm::Expected<GenerateResult> generate(llvm::ArrayRef<Entry> entries,
                                        const GenerateOptions &options, const CallFn &call) {
  if (auto e = checkGenerateContract(entries, options))
    return e;
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  GenerateResult result;
  result.timingOnly = options.timingOnly;
  std::map<std::string, tensor::Tensor> carried = options.initialStates;
  // One call: the entry's state inputs from the carried state (a state
  // nothing gave or wrote yet starts at zeros, in the call), its state
  // outputs carried on.
  auto run = [&](const Entry &entry,
                 std::map<std::string, tensor::Tensor> inputs) -> llvm::Expected<CallResult> {
    for (const TensorPlacement &t : entry.buckets.front().tensors)
      if (t.role == TensorRole::Input && t.state && carried.count(t.name))
        inputs.insert_or_assign(t.name, carried.at(t.name));
    auto r = call(entry.name, inputs);
    if (!r)
      return r.takeError();
    // Moved, not copied: a call's states are the next call's inputs and
    // nothing else, so a run holds one state whatever N is (a copy kept
    // per call grew by the whole KV cache every step).
    for (auto &[name, value] : r->states)
      carried.insert_or_assign(name, std::move(value));
    r->states.clear();
    return r;
  };
  auto choose = [&](const CallResult &r, int64_t realRows,
                    const std::string &entry) -> llvm::Expected<int32_t> {
    if (options.timingOnly)
      return 0;
    if (r.outputs.empty())
      return error("--generate: entry '" + entry + "' returned no logits");
    return nextToken(r.outputs.front().second, realRows, entry);
  };
  const Entry &prefill = *findEntry(entries, options.prefillEntry);
  const Entry &decode = *findEntry(entries, options.decodeEntry);
  const int64_t promptLength = options.prompt.shape()[1];

  std::map<std::string, tensor::Tensor> inputs;
  inputs.emplace("ids", options.prompt);
  for (const TensorPlacement &t : prefill.buckets.front().tensors)
    if (t.role == TensorRole::Input && !t.state && t.name == "len")
      inputs.emplace("len", scalarFor(t, promptLength));
  auto first = run(prefill, std::move(inputs));
  if (!first)
    return first.takeError();
  auto token = choose(*first, promptLength, prefill.name);
  if (!token)
    return token.takeError();
  result.tokens.push_back(*token);
  first->outputs.clear();
  result.calls.push_back(std::move(*first));

  const TensorPlacement *posInput = nullptr;
  for (const TensorPlacement &t : decode.buckets.front().tensors)
    if (t.role == TensorRole::Input && !t.state && t.name == "pos")
      posInput = &t;
  for (int64_t k = 1; k < options.tokens; ++k) {
    std::map<std::string, tensor::Tensor> step;
    tensor::Tensor id(DType::I32, {1, 1});
    id.setInt(0, result.tokens.back());
    step.emplace("id", std::move(id));
    // The position of the token fed: the prompt's S ids are at 0..S-1.
    if (posInput)
      step.emplace("pos", scalarFor(*posInput, promptLength + k - 1));
    auto r = run(decode, std::move(step));
    if (!r)
      return r.takeError();
    auto next = choose(*r, 1, decode.name);
    if (!next)
      return next.takeError();
    result.tokens.push_back(*next);
    r->outputs.clear();
    result.calls.push_back(std::move(*r));
  }
  // Every state, also one no call wrote (its first value, or zeros).
  for (const tensor::TensorSpec &s : backend::stateSpecs(entries))
    if (!carried.count(s.name)) {
      auto zeros = tensor::Tensor::create(s.dtype, s.shape);
      if (!zeros)
        return zeros.takeError();
      carried.emplace(s.name, std::move(*zeros));
    }
  result.states = std::move(carried);
  result.hostSeconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

std::string formatGenerateReport(const GenerateResult &result, double clockMHz) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "tokens:";
  if (result.timingOnly)
    os << " (" << result.tokens.size() << ", not computed: --timing-only feeds id 0)";
  else
    for (int32_t t : result.tokens)
      os << " " << t;
  os << "\n";
  if (result.calls.empty())
    return out;
  const CallResult &prefill = result.calls.front();
  const size_t decodes = result.calls.size() - 1;
  bool cycles = clockMHz > 0 && prefill.cycles;
  auto micros = [&](double c) { return c / clockMHz; };
  os << "prefill: bucket " << prefill.bucket;
  if (cycles)
    os << ", " << *prefill.cycles << " cycles ("
       << llvm::format("%.3f", micros(double(*prefill.cycles))) << " us at "
       << llvm::format("%.0f", clockMHz) << " MHz)";
  os << "\n";
  int64_t total = cycles ? *prefill.cycles : 0;
  if (decodes) {
    int64_t lo = INT64_MAX, hi = 0, sum = 0;
    for (size_t i = 1; i < result.calls.size(); ++i) {
      int64_t c = result.calls[i].cycles.value_or(0);
      lo = std::min(lo, c);
      hi = std::max(hi, c);
      sum += c;
    }
    total += sum;
    os << "decode: " << decodes << " step" << (decodes == 1 ? "" : "s") << ", bucket "
       << result.calls.back().bucket;
    if (cycles) {
      double mean = double(sum) / double(decodes);
      os << ", " << llvm::format("%.0f", mean) << " cycles a step";
      if (lo != hi)
        os << " (" << lo << " to " << hi << ")";
      os << " (" << llvm::format("%.3f", micros(mean)) << " us): "
         << llvm::format("%.1f", 1e6 / micros(mean)) << " tokens/s predicted";
    }
    os << "\n";
  }
  if (cycles)
    os << "predicted: " << result.tokens.size() << " token" << (result.tokens.size() == 1 ? "" : "s")
       << " in " << total << " cycles (" << llvm::format("%.3f", micros(double(total)))
       << " us): " << llvm::format("%.1f", double(result.tokens.size()) * 1e6 / micros(double(total)))
       << " tokens/s, the first after "
       << llvm::format("%.3f", micros(double(*prefill.cycles))) << " us\n";
  os << "host: " << result.calls.size() << " call" << (result.calls.size() == 1 ? "" : "s")
     << " in " << llvm::format("%.3f", result.hostSeconds) << " s";
  if (result.hostSeconds > 0)
    os << ", " << llvm::format("%.1f", double(result.tokens.size()) / result.hostSeconds)
       << " tokens/s";
  if (cycles && result.hostSeconds > 0)
    os << ", " << llvm::format("%.0f", double(total) / result.hostSeconds)
       << " simulated cycles/s";
  os << "\n";
  if (!result.states.empty()) {
    size_t bytes = 0;
    std::vector<std::string> names;
    for (const auto &[name, value] : result.states) {
      bytes += value.byteSize();
      names.push_back(name);
    }
    os << "state: " << llvm::join(names, ", ") << ", " << bytes
       << " bytes, carried on the host between calls\n";
  }
  return out;
}

} // namespace lpu::driver
