// Calibration in rounds over kept values (interp/Calibrate.h).
#include "interp/Calibrate.h"

#include "interp/InterpreterKernels.h"
#include "interp/InterpreterRun.h"

#include "backend/Bucketing.h"
#include "support/RandomTensor.h"
#include "support/SafeTensors.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

namespace lpu::interp {

using detail::Value;
using ir::paramPath;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Where `op` is, for a message: " (at FILE:LINE:COL)", or nothing when
/// the op has no location (hand-written IR).
std::string where(const Op &op) { return op.loc().known() ? " (at " + op.loc().str() + ")" : ""; }

/// The parameters one quantize op asks for, from its division's tags.
struct Point {
  const Op *div = nullptr;
  std::string scale, zero;
  int64_t fixedZero = 0;
  std::optional<int64_t> axis;
};

/// The tagged divisions of `fn`, their tags checked (the verifier checks
/// them too, but calibration does not rely on it): `observe` one or two
/// param paths, the scale's read by the divisor; `observe_zero` an i8;
/// `observe_axis` an axis of the dividend.
llvm::Expected<std::vector<Point>> pointsOf(const Function &fn) {
  std::set<std::string> params;
  for (const auto &op : fn.ops())
    if (op->kind() == OpKind::Param)
      params.insert(paramPath(*op));
  std::vector<Point> points;
  const auto &ops = fn.ops();
  for (size_t k = 0; k < ops.size(); ++k) {
    const Op &op = *ops[k];
    const Attr *observe = op.attr("observe");
    if (!observe)
      continue;
    auto fail = [&](const llvm::Twine &problem) {
      return error("cannot calibrate the " + mnemonic(op.kind()) + " %" + llvm::Twine(k) +
                   " of @" + fn.name() + where(op) + ": " + problem);
    };
    if (op.kind() != OpKind::Div || op.operands().size() != 2)
      return fail("only a quantize's division is tagged 'observe'");
    const auto *paths = std::get_if<std::vector<std::string>>(observe);
    if (!paths || paths->empty() || paths->size() > 2)
      return fail("'observe' must be one or two param paths (the scale, then the zero point)");
    for (size_t i = 0; i < paths->size(); ++i)
      if (!params.count((*paths)[i]))
        return fail(llvm::Twine("its ") + (i == 0 ? "scale" : "zero point") + " '" +
                    (*paths)[i] + "' is not a param of @" + fn.name());
    Point p;
    p.div = &op;
    p.scale = (*paths)[0];
    if (paths->size() > 1)
      p.zero = (*paths)[1];
    if (op.type().dtype != DType::F32)
      return fail("it divides " + op.type().str() + "; calibration observes an f32 dividend");
    if (!ir::readsParam(op.operand(1), p.scale))
      return fail("it does not divide by its scale '" + p.scale + "'");
    if (const Attr *zero = op.attr("observe_zero")) {
      const auto *z = std::get_if<int64_t>(zero);
      if (!z || *z < -128 || *z > 127)
        return fail("'observe_zero' must be an integer from -128 to 127 (an i8 zero point)");
      if (!p.zero.empty())
        return fail("it has both a zero point param and 'observe_zero'");
      p.fixedZero = *z;
    }
    if (const Attr *axis = op.attr("observe_axis")) {
      const auto *a = std::get_if<int64_t>(axis);
      const Type &xt = op.operand(0)->type();
      if (!a || *a < 0 || uint64_t(*a) >= xt.rank())
        return fail("'observe_axis' must be an axis of its dividend, " + xt.str());
      p.axis = *a;
    }
    points.push_back(std::move(p));
  }
  return points;
}

/// NumPy's percentile (method "linear") of `v`, which it reorders.
double percentileOf(std::vector<float> &v, double q) {
  if (v.empty())
    return 0;
  double h = (double(v.size()) - 1) * (q / 100); // in numpy's order
  size_t below = static_cast<size_t>(std::floor(h));
  size_t above = std::min(below + 1, v.size() - 1);
  std::nth_element(v.begin(), v.begin() + below, v.end());
  double a = v[below];
  double b = a;
  if (above != below)
    b = *std::min_element(v.begin() + below + 1, v.end());
  double t = h - double(below);
  // numpy's _lerp: from the nearer end, so t = 1 gives b exactly.
  double diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}
} // namespace

QuantParams chooseQuantParams(double lo, double hi, bool affine, int64_t fixedZero) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  QuantParams q;
  double scale = 0;
  if (affine) {
    scale = (hi - lo) / 255;
  } else {
    if (127 - fixedZero > 0)
      scale = std::max(scale, hi / double(127 - fixedZero));
    if (-128 - fixedZero < 0)
      scale = std::max(scale, lo / double(-128 - fixedZero));
  }
  q.scale = static_cast<float>(scale);
  if (!(q.scale > 0) || !std::isfinite(q.scale))
    q.scale = 1;
  if (affine) {
    double z = -128 - std::nearbyint(lo / double(q.scale)); // ties to even (default mode)
    q.zero = static_cast<int32_t>(std::clamp(z, -128.0, 127.0));
  } else {
    q.zero = static_cast<int32_t>(fixedZero);
  }
  return q;
}

std::vector<NamedTensor> Calibration::tensors() const {
  std::vector<NamedTensor> out;
  for (const CalibratedScale &s : scales) {
    out.emplace_back(s.scale, s.scaleValue);
    if (!s.zero.empty())
      out.emplace_back(s.zero, s.zeroValue);
  }
  return out;
}

std::vector<std::string> calibratedParams(const Function &fn) {
  std::set<std::string> paths;
  auto points = pointsOf(fn);
  if (!points) { // calibrate() reports it
    llvm::consumeError(points.takeError());
    return {};
  }
  for (const Point &p : *points) {
    paths.insert(p.scale);
    if (!p.zero.empty())
      paths.insert(p.zero);
  }
  return {paths.begin(), paths.end()};
}

llvm::Expected<Calibration>
calibrate(const Function &fn, llvm::ArrayRef<std::map<std::string, tensor::Tensor>> samples,
          const std::map<std::string, tensor::Tensor> &weights, const Observer &observer,
          InterpreterOptions options) {
  if (samples.empty())
    return error("no samples to calibrate with");
  const auto &ops = fn.ops();
  llvm::DenseMap<const Op *, size_t> index;
  for (size_t k = 0; k < ops.size(); ++k)
    index[ops[k].get()] = k;

  // The quantize ops by scale, checked to agree on the rest.
  auto pointsOrError = pointsOf(fn);
  if (!pointsOrError)
    return pointsOrError.takeError();
  std::vector<Point> points = std::move(*pointsOrError);
  if (points.empty())
    return error("@" + fn.name() +
                 " has nothing to calibrate: no quantize() whose scale is a parameter");
  std::map<std::string, std::vector<const Point *>> groups;
  std::map<std::string, std::string> zeroOwner; // zero point path -> its scale's path
  for (const Point &p : points) {
    auto &group = groups[p.scale];
    if (!group.empty()) {
      const Point &first = *group.front();
      if (first.zero != p.zero || first.fixedZero != p.fixedZero || first.axis != p.axis) {
        std::string at;
        if (first.div->loc().known() && p.div->loc().known())
          at = ": at " + first.div->loc().str() + " and " + p.div->loc().str();
        return error("the scale '" + p.scale + "' is used by quantize ops that differ in their " +
                     "zero point or axis" + at);
      }
    }
    group.push_back(&p);
    if (!p.zero.empty()) {
      auto [it, fresh] = zeroOwner.try_emplace(p.zero, p.scale);
      if (!fresh && it->second != p.scale)
        return error("the zero point '" + p.zero + "' goes with two scales, '" + it->second +
                     "' and '" + p.scale + "'" + where(*p.div));
      if (groups.count(p.zero))
        return error("'" + p.zero + "' is both a scale and a zero point" + where(*p.div));
    }
  }
  for (const auto &[zero, scale] : zeroOwner)
    if (groups.count(zero))
      return error("'" + zero + "' is both a scale and a zero point");

  // Every other parameter from the weights; the calibrated ones start
  // unknown. The types of the calibrated ones are checked here.
  std::map<std::string, Value> bound;
  std::map<std::string, Type> calibratedType;
  std::vector<std::string> missing;
  for (const auto &op : ops) {
    if (op->kind() != OpKind::Param)
      continue;
    if (ir::shardOf(*op))
      return error("@" + fn.name() + " holds slices of weights (a multi-chip module): " +
                   "calibrate the model on one chip");
    std::string path = paramPath(*op);
    if (groups.count(path) || zeroOwner.count(path)) {
      calibratedType[path] = op->type();
      continue;
    }
    if (bound.count(path))
      continue;
    auto it = weights.find(path);
    if (it == weights.end()) {
      if (!llvm::is_contained(missing, path))
        missing.push_back(path);
      continue;
    }
    if (Type{it->second.dtype(), it->second.shape().vec()} != op->type())
      return error("parameter '" + path + "' is " + op->type().str() + ", but the weights hold " +
                   Type{it->second.dtype(), it->second.shape().vec()}.str());
    bound.emplace(path, detail::toValue(it->second));
  }
  if (!missing.empty())
    return error("the weights lack " + llvm::Twine(missing.size()) +
                 " parameter(s) calibration does not compute: " + llvm::join(missing, ", "));
  for (const auto &[scale, group] : groups) {
    const Point &p = *group.front();
    auto t = calibratedType.find(scale);
    if (t == calibratedType.end()) // pointsOf() found the param
      return error("the scale '" + scale + "' is not a param of @" + fn.name() + where(*p.div));
    size_t rank = p.axis ? 1 : 0;
    // A per-channel scale has one element per channel of every dividend.
    std::optional<int64_t> channels;
    for (const Point *q : group)
      if (q->axis) {
        int64_t n = q->div->operand(0)->type().shape[size_t(*q->axis)];
        if (channels && *channels != n)
          return error("the scale '" + scale + "' is per channel of quantize ops with " +
                       llvm::Twine(*channels) + " and " + llvm::Twine(n) + " channels" +
                       where(*q->div));
        channels = n;
      }
    auto perChannel = [&](const Type &type) {
      return !channels || (type.rank() == 1 && type.shape[0] == *channels);
    };
    if (t->second.dtype != DType::F32 || t->second.rank() != rank || !perChannel(t->second))
      return error("the scale '" + scale + "' is " + t->second.str() + "; calibration computes " +
                   (rank ? "an f32 per channel (f32[" + std::to_string(*channels) + "])"
                         : std::string("an f32 per tensor (rank 0)")) +
                   where(*p.div));
    if (!p.zero.empty()) {
      auto z = calibratedType.find(p.zero);
      if (z == calibratedType.end())
        return error("the zero point '" + p.zero + "' is not a param of @" + fn.name() +
                     where(*p.div));
      if (z->second.dtype != DType::I8 || z->second.rank() != rank || !perChannel(z->second))
        return error("the zero point '" + p.zero + "' is " + z->second.str() +
                     "; with the scale '" + scale + "' it must be " +
                     (rank ? "i8 per channel (i8[" + std::to_string(*channels) + "])"
                           : std::string("i8[]")) +
                     where(*p.div));
    }
  }

  // Inputs, checked once.
  for (size_t s = 0; s < samples.size(); ++s)
    for (const Op *op : fn.inputs()) {
      std::string name = op->stringAttr("name").value_or("");
      auto it = samples[s].find(name);
      if (it == samples[s].end())
        return error("sample " + llvm::Twine(s) + " lacks input '" + name + "'");
      if (Type{it->second.dtype(), it->second.shape().vec()} != op->type())
        return error("sample " + llvm::Twine(s) + ": input '" + name + "' is " +
                     Type{it->second.dtype(), it->second.shape().vec()}.str() + ", but @" + fn.name() + " takes " +
                     op->type().str());
    }

  // Uses of each value, so that it is freed after its last reader ran.
  // An observed dividend counts as one more use, until its scale is fixed.
  std::vector<unsigned> uses(ops.size(), 0);
  for (const auto &op : ops)
    for (const Op *operand : op->operands())
      ++uses[index[operand]];
  for (const Point &p : points)
    ++uses[index[p.div->operand(0)]];
  struct SampleState {
    std::vector<Value> values;
    std::vector<bool> done;
    std::vector<unsigned> uses;
  };
  std::vector<SampleState> states(samples.size());
  for (SampleState &st : states) {
    st.values.resize(ops.size());
    st.done.assign(ops.size(), false);
    st.uses = uses;
  }
  openblas_set_num_threads(1);
  unsigned threads =
      options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());

  Calibration result;
  result.function = &fn;
  result.samples = samples.size();
  std::map<std::string, Value> known; // calibrated so far
  std::vector<const Op *> args;
  std::vector<const Value *> argValues;
  while (known.size() < groups.size() + zeroOwner.size()) {
    ++result.rounds;
    options.progress.count("scales", result.scales.size(), groups.size());
    // Everything computable with the parameters known now.
    for (size_t s = 0; s < samples.size(); ++s) {
      SampleState &st = states[s];
      for (size_t k = 0; k < ops.size(); ++k) {
        const Op &op = *ops[k];
        if (st.done[k] || op.kind() == OpKind::Return)
          continue;
        if (op.kind() == OpKind::Input) {
          st.values[k] = detail::toValue(samples[s].at(op.stringAttr("name").value_or("")));
        } else if (op.kind() == OpKind::Param) {
          std::string path = paramPath(op);
          auto b = bound.find(path);
          if (b != bound.end()) {
            st.values[k] = b->second;
          } else {
            auto c = known.find(path);
            if (c == known.end())
              continue;
            st.values[k] = c->second;
          }
        } else {
          bool ready = true;
          argValues.clear();
          for (const Op *operand : op.operands()) {
            size_t at = index[operand];
            ready &= bool(st.done[at]);
            argValues.push_back(&st.values[at]);
          }
          if (!ready)
            continue;
          llvm::Expected<Value> v = detail::evalOp(op, argValues, threads);
          if (!v)
            return v.takeError();
          st.values[k] = std::move(*v);
          for (const Op *operand : op.operands()) {
            size_t at = index[operand];
            if (--st.uses[at] == 0)
              st.values[at] = Value();
          }
        }
        st.done[k] = true;
      }
    }
    // The scales whose every quantize has its dividend now.
    size_t fixed = 0;
    for (const auto &[scale, group] : groups) {
      if (known.count(scale))
        continue;
      bool ready = llvm::all_of(group, [&](const Point *p) {
        return bool(states[0].done[index[p->div->operand(0)]]);
      });
      if (!ready)
        continue;
      const Point &first = *group.front();
      CalibratedScale c;
      c.scale = scale;
      c.zero = first.zero;
      c.fixedZero = first.fixedZero;
      c.axis = first.axis;
      c.quantizeOps = group.size();
      // Observed values per channel (one channel per tensor).
      int64_t channels = 1;
      if (c.axis) {
        const Type &xt = first.div->operand(0)->type();
        channels = xt.shape[size_t(*c.axis)];
      }
      std::vector<std::vector<float>> values(static_cast<size_t>(channels));
      std::vector<double> lo(size_t(channels), INFINITY), hi(size_t(channels), -INFINITY);
      bool keep = observer.kind == Observer::Kind::Percentile;
      for (const Point *p : group) {
        const Type &xt = p->div->operand(0)->type();
        int64_t inner = 1;
        if (c.axis)
          for (size_t d = size_t(*c.axis) + 1; d < xt.rank(); ++d)
            inner *= xt.shape[d];
        for (SampleState &st : states) {
          const Value &x = st.values[index[p->div->operand(0)]];
          size_t n = x.f->size();
          for (size_t e = 0; e < n; ++e) {
            float v = x.floats()[e];
            if (!std::isfinite(v))
              continue;
            size_t ch = c.axis ? size_t((int64_t(e) / inner) % channels) : 0;
            lo[ch] = std::min(lo[ch], double(v));
            hi[ch] = std::max(hi[ch], double(v));
            if (keep)
              values[ch].push_back(v);
          }
        }
      }
      tensor::Tensor scaleT(DType::F32, c.axis ? std::vector<int64_t>{channels}
                                               : std::vector<int64_t>{});
      tensor::Tensor zeroT(DType::I8, scaleT.shape().vec());
      for (int64_t ch = 0; ch < channels; ++ch) {
        double l = lo[size_t(ch)], h = hi[size_t(ch)];
        if (!std::isfinite(l))
          l = h = 0; // nothing finite observed
        else if (keep) {
          double p = observer.percentile;
          h = percentileOf(values[size_t(ch)], p);
          l = percentileOf(values[size_t(ch)], 100 - p);
        }
        c.lo.push_back(l);
        c.hi.push_back(h);
        QuantParams q = chooseQuantParams(l, h, !c.zero.empty(), c.fixedZero);
        scaleT.setFloat(ch, q.scale);
        zeroT.setInt(ch, q.zero);
      }
      // The dividends are no longer needed for observing.
      for (const Point *p : group)
        for (SampleState &st : states) {
          size_t at = index[p->div->operand(0)];
          if (--st.uses[at] == 0)
            st.values[at] = Value();
        }
      c.scaleValue = scaleT;
      known[scale] = detail::toValue(scaleT);
      if (!c.zero.empty()) {
        c.zeroValue = zeroT;
        known[c.zero] = detail::toValue(zeroT);
      }
      result.scales.push_back(std::move(c));
      ++fixed;
    }
    if (fixed == 0) {
      std::vector<std::string> stuck;
      for (const auto &[scale, group] : groups)
        if (!known.count(scale))
          stuck.push_back("'" + scale + "'" +
                          (group.front()->div->loc().known()
                               ? " (quantize at " + group.front()->div->loc().str() + ")"
                               : std::string()));
      return error("cannot calibrate " + llvm::join(stuck, ", ") +
                   ": the value each one quantizes depends on a scale not yet known "
                   "(itself, or another of these)");
    }
  }
  return result;
}

llvm::Expected<Calibration>
calibrateEntry(const Module &module, llvm::StringRef entryName,
               llvm::ArrayRef<std::map<std::string, tensor::Tensor>> samples,
               const WeightSource &source, const Observer &observer, InterpreterOptions options) {
  if (samples.empty())
    return error("no samples to calibrate with");
  auto functions = entryFunctions(module, entryName);
  if (!functions)
    return functions.takeError();
  backend::Entry entry = describeEntry(*functions);
  std::optional<backend::BucketChoice> first;
  std::vector<std::map<std::string, tensor::Tensor>> padded;
  for (size_t s = 0; s < samples.size(); ++s) {
    auto choice = backend::selectBucket(entry, samples[s]);
    if (!choice)
      return error("sample " + llvm::Twine(s) + ": " + llvm::toString(choice.takeError()));
    const backend::Bucket &bucket = entry.buckets[choice->index];
    if (first && choice->index != first->index)
      return error("sample " + llvm::Twine(s) + " selects bucket " +
                   backend::bucketLabel(bucket.dims) + " but sample 0 selects " +
                   backend::bucketLabel(entry.buckets[first->index].dims) +
                   ": calibrate one bucket at a time, with samples of its size");
    if (!first)
      first = *choice;
    std::map<std::string, tensor::Tensor> in;
    for (const backend::TensorPlacement &t : bucket.tensors)
      if (t.role == backend::TensorRole::Input)
        in.emplace(t.name, backend::padTo(samples[s].at(t.name), bucket.concreteShape(t)));
    padded.push_back(std::move(in));
  }
  const Function &fn = *(*functions)[first->index];
  options.progress.status("bind weights");
  auto specs = paramSpecs(fn);
  if (!specs)
    return specs.takeError();
  std::vector<std::string> computed = calibratedParams(fn);
  std::vector<tensor::TensorSpec> needed, optional;
  for (const tensor::TensorSpec &spec : *specs)
    (llvm::is_contained(computed, spec.name) ? optional : needed).push_back(spec);
  std::map<std::string, tensor::Tensor> weights;
  if (source.files.empty()) {
    weights = tensor::randomTensors(source.randomSeed, needed);
  } else {
    // The files may hold the calibrated parameters too (a model
    // calibrated again): they are read as expected and then not used.
    std::vector<tensor::SafeTensorsFile> files;
    for (const std::string &path : source.files) {
      auto file = tensor::SafeTensorsFile::open(path);
      if (!file)
        return file.takeError();
      files.push_back(std::move(*file));
    }
    std::vector<const tensor::SafeTensorsFile *> pointers;
    for (const tensor::SafeTensorsFile &file : files)
      pointers.push_back(&file);
    for (const tensor::TensorSpec &spec : optional)
      if (llvm::any_of(pointers, [&](auto *f) { return f->find(spec.name) != nullptr; }))
        needed.push_back(spec);
    auto loaded = tensor::loadTensors(pointers, needed);
    if (!loaded)
      return loaded.takeError();
    weights = std::move(*loaded);
  }
  options.progress.status("calibrate");
  auto result = calibrate(fn, padded, weights, observer, options);
  if (result)
    result->bucketText = backend::bucketLabel(entry.buckets[first->index].dims);
  return result;
}

} // namespace lpu::interp
