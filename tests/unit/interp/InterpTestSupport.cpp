#include "tests/unit/interp/InterpTestSupport.h"

#include "support/Npy.h"
#include "support/RandomTensor.h"
#include "tests/unit/support/TestFiles.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <sys/wait.h>

namespace lpu::ir::testing {

Op *FnBuilder::input(const std::string &name, Type type) {
  Op *op = fn_->append(OpKind::Input, std::move(type), {});
  op->setAttr("name", name);
  return op;
}

Op *FnBuilder::param(const std::string &path, Type type) {
  Op *op = fn_->append(OpKind::Param, std::move(type), {});
  op->setAttr("path", path);
  return op;
}

Op *FnBuilder::op(OpKind kind, std::vector<Op *> operands, Attrs attrs, const Type *declared) {
  std::vector<Type> types;
  for (const Op *o : operands)
    types.push_back(o->type());
  std::sort(attrs.begin(), attrs.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  auto inferred = inferType(kind, types, attrs, declared);
  Type type;
  if (auto *message = std::get_if<std::string>(&inferred)) {
    ADD_FAILURE() << "inferType: " << *message;
    type = declared ? *declared : Type{};
  } else {
    type = std::get<Type>(inferred);
  }
  Op *op = fn_->append(kind, type, std::move(operands));
  for (auto &[name, value] : attrs)
    op->setAttr(name, value);
  return op;
}

void FnBuilder::ret(std::vector<Op *> values, std::vector<std::string> names) {
  Op *op = fn_->append(OpKind::Return, Type{}, std::move(values));
  op->setAttr("names", std::move(names));
}

std::map<std::string, tensor::Tensor> runOk(const Function &fn,
                                            const std::map<std::string, tensor::Tensor> &inputs,
                                            const std::map<std::string, tensor::Tensor> &weights,
                                            InterpreterOptions options) {
  std::map<std::string, tensor::Tensor> result;
  auto outputs = interpret(fn, inputs, weights, options);
  if (!outputs) {
    ADD_FAILURE() << llvm::toString(outputs.takeError());
    return result;
  }
  for (auto &[name, value] : *outputs)
    result.emplace(name, std::move(value));
  return result;
}

std::string runError(const Function &fn, const std::map<std::string, tensor::Tensor> &inputs,
                     const std::map<std::string, tensor::Tensor> &weights) {
  auto outputs = interpret(fn, inputs, weights);
  return outputs ? "" : llvm::toString(outputs.takeError());
}

std::map<std::string, tensor::Tensor> numpy(const std::map<std::string, tensor::Tensor> &inputs,
                                            const std::string &script) {
  tensor::testing::TempDir dir;
  std::map<std::string, tensor::Tensor> result;
  for (const auto &[name, value] : inputs)
    if (auto e = tensor::writeNpyFile(dir.file(name + ".npy"), value)) {
      ADD_FAILURE() << llvm::toString(std::move(e));
      return result;
    }
  std::string program =
      "import sys, os, warnings, numpy as np\n"
      "warnings.simplefilter('ignore')\n"
      "d = sys.argv[1]\n"
      "out = {}\n"
      "for f in sorted(os.listdir(d)):\n"
      "    if f.endswith('.npy'):\n"
      "        globals()[f[:-4]] = np.load(os.path.join(d, f))\n" +
      script +
      "\nos.makedirs(os.path.join(d, 'out'))\n"
      "for k, v in out.items():\n"
      "    np.save(os.path.join(d, 'out', k + '.npy'), np.ascontiguousarray(v))\n";
  tensor::testing::writeBytes(dir.file("script.py"), program);
  std::string command = "/usr/bin/python3 " + dir.file("script.py") + " " + dir.path();
  int status = std::system(command.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ADD_FAILURE() << "numpy script failed:\n" << script;
    return result;
  }
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir.file("out"), ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef path = it->path();
    auto value = tensor::readNpyFile(path);
    if (!value) {
      ADD_FAILURE() << llvm::toString(value.takeError());
      continue;
    }
    llvm::StringRef name = llvm::sys::path::stem(path);
    result.emplace(name.str(), std::move(*value));
  }
  return result;
}

namespace {
/// The position of `v` on the number line of `dtype`'s bit patterns, so
/// that neighbouring values differ by one.
int64_t ordinal(DType dtype, float v) {
  int64_t bits;
  int64_t signBit;
  if (dtype == DType::F16) {
    bits = tensor::floatToHalfBits(v);
    signBit = 0x8000;
  } else if (dtype == DType::BF16) {
    bits = tensor::floatToBF16Bits(v);
    signBit = 0x8000;
  } else {
    bits = std::bit_cast<uint32_t>(v);
    signBit = 0x80000000LL;
  }
  return bits & signBit ? -(bits & (signBit - 1)) : bits;
}
} // namespace

void expectNear(const tensor::Tensor &got, const tensor::Tensor &want, int ulps,
                const std::string &what, double atol) {
  ASSERT_EQ(got.typeString(), want.typeString()) << what;
  int reported = 0;
  for (int64_t k = 0; k < got.numElements() && reported < 5; ++k) {
    if (!tensor::isFloat(got.dtype())) {
      if (got.getInt(k) != want.getInt(k)) {
        ADD_FAILURE() << what << ": element " << k << " is " << got.getInt(k) << ", numpy says "
                      << want.getInt(k);
        ++reported;
      }
      continue;
    }
    float g = got.getFloat(k), w = want.getFloat(k);
    if (std::isnan(g) || std::isnan(w)) {
      if (std::isnan(g) != std::isnan(w)) {
        ADD_FAILURE() << what << ": element " << k << " is " << g << ", numpy says " << w;
        ++reported;
      }
      continue;
    }
    int64_t distance = std::llabs(ordinal(got.dtype(), g) - ordinal(got.dtype(), w));
    if (distance > ulps && std::fabs(double(g) - double(w)) > atol) {
      ADD_FAILURE() << what << ": element " << k << " is " << g << ", numpy says " << w << " ("
                    << distance << " ulps apart, " << ulps << " allowed)";
      ++reported;
    }
  }
}

tensor::Tensor random(DType dtype, std::vector<int64_t> shape, const std::string &name) {
  if (!tensor::isFloat(dtype))
    return tensor::randomTensor(7, name, dtype, shape);
  // randomTensor scales a rank-1 tensor by 1/sqrt(length): undo that, so
  // values spread over [-1, 1], then round to the dtype.
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<float> v = tensor::randomTensor(7, name, DType::F32, {n}).toFloats();
  float scale = std::sqrt(static_cast<float>(n));
  for (float &x : v)
    x *= scale;
  return tensor::Tensor::fromFloats(dtype, std::move(shape), v);
}

} // namespace lpu::ir::testing
