// lpu-import: an ONNX model -> readable .lpu source and .safetensors
// weights. A thin driver: the translation is import/, the layout lpufmt's
// engine, the check the compiler's own front end. All or nothing: both
// files are written only once the source formats and type-checks.
#include "driver/LoadModel.h"
#include "format/Languages.h"
#include "frontend/Checker.h"
#include "import/Importer.h"
#include "import/OnnxGraph.h"
#include "support/Files.h"
#include "tools/common/ToolSupport.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace {

using namespace lpu;
constexpr const char *kTool = "lpu-import";

/// "resnet50" -> "Resnet50": the model's name.
std::string modelNameFor(const std::string &entry) {
  std::string name;
  bool upper = true;
  for (char c : entry) {
    if (c == '_') {
      upper = true;
      continue;
    }
    name.push_back(upper ? char(std::toupper(static_cast<unsigned char>(c))) : c);
    upper = false;
  }
  if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0])))
    name = "Model" + name;
  return name == entry ? name + "Model" : name;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"lpu-import: imports an ONNX model as .lpu source and .safetensors weights"};
  tools::addCommonOptions(app, kTool);
  std::string input, output, weights, entry, modelName;
  std::vector<std::string> buckets;
  app.add_option("model", input, "the ONNX model (.onnx)")->required();
  app.add_option("-o,--output", output, "the .lpu source to write")->required();
  app.add_option("--weights", weights,
                 "the .safetensors file of the weights (default: the output with the extension "
                 ".safetensors)");
  app.add_option("--entry", entry, "the entry's name (default: the output's file name)");
  app.add_option("--model", modelName, "the model's name (default: the entry's, capitalised)");
  app.add_option("--bucket", buckets,
                 "the sizes to compile a symbolic dimension of the inputs for, DIM=N[,N...] "
                 "(repeatable; every symbolic dimension needs one)")
      ->allow_extra_args(false);
  bool idsInRange = false;
  app.add_flag("--ids-in-range", idsInRange,
               "run-time Gather indices lie in [0, size): no select wraps negative ones from the "
               "end before each gather");
  if (int code = tools::parseCommandLine(app, argc, argv, kTool); code >= 0)
    return code;

  import::ImportOptions options;
  options.idsInRange = idsInRange;
  for (const std::string &b : buckets) {
    auto [dim, list] = llvm::StringRef(b).split('=');
    llvm::SmallVector<llvm::StringRef, 4> parts;
    list.split(parts, ',', -1, false);
    std::vector<int64_t> sizes;
    bool ok = !dim.empty() && !parts.empty();
    for (llvm::StringRef p : parts) {
      int64_t v = 0;
      ok &= !p.trim().getAsInteger(10, v) && v > 0;
      sizes.push_back(v);
    }
    if (!ok) {
      tools::reportToolError(kTool, "--bucket '" + b + "': expected DIM=N[,N...] with sizes above 0");
      return tools::kExitUsageError;
    }
    // Each size once, each dimension once (a second --bucket for one
    // dimension replaced the first).
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (std::find(sizes.begin(), sizes.begin() + i, sizes[i]) != sizes.begin() + i) {
        tools::reportToolError(kTool, "--bucket '" + b + "': lists " + std::to_string(sizes[i]) + " twice");
        return tools::kExitUsageError;
      }
    }
    if (!options.buckets.try_emplace(dim.trim().str(), sizes).second) {
      tools::reportToolError(kTool, "--bucket '" + b + "': dimension '" + dim.trim().str() +
                                        "' is given buckets twice (list them once: " + dim.trim().str() +
                                        "=4,8)");
      return tools::kExitUsageError;
    }
  }
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(input, status) || llvm::sys::fs::is_directory(status) || lpu::support::isDevice(status)) {
    tools::reportToolError(kTool, "cannot read '" + input + "': " +
                                      (!llvm::sys::fs::exists(status)      ? "no such file"
                                       : llvm::sys::fs::is_directory(status) ? "is a directory"
                                                                            : lpu::support::kDeviceReason));
    return tools::kExitUsageError;
  }
  std::string stem = llvm::sys::path::stem(output).str();
  options.entryName = entry;
  if (entry.empty()) {
    // After the file's name, unless the language keeps that name.
    options.entryName = import::sanitizeName(stem);
    if (!import::isFreeIdentifier(options.entryName))
      options.entryName += "_entry";
  }
  options.modelName = modelName.empty() ? modelNameFor(options.entryName) : modelName;
  for (auto [flag, name] : {std::pair<const char *, const std::string *>{"--entry", &options.entryName},
                            {"--model", &options.modelName}})
    if (!import::isFreeIdentifier(*name)) {
      tools::reportToolError(kTool, std::string(flag) + " '" + *name +
                                        "' is no identifier, or one the language keeps (a "
                                        "keyword, a dtype or a built-in)");
      return tools::kExitUsageError;
    }
  if (options.entryName == options.modelName) {
    tools::reportToolError(kTool, "the entry and the model cannot both be named '" +
                                      options.entryName + "'");
    return tools::kExitUsageError;
  }
  options.sourceName = llvm::sys::path::filename(input).str();
  if (weights.empty()) {
    llvm::SmallString<256> w(output);
    llvm::sys::path::replace_extension(w, "safetensors");
    weights = w.str().str();
  }

  auto graph = import::readOnnxModel(input);
  if (!graph) {
    tools::reportToolError(kTool, llvm::toString(graph.takeError()));
    return tools::kExitInputError;
  }
  auto result = import::importOnnx(*graph, options);
  if (!result) {
    tools::reportToolError(kTool, input + ": " + llvm::toString(result.takeError()));
    return tools::kExitInputError;
  }

  const format::Language *lpu = format::languageByName("lpu");
  format::FormatResult formatted = format::formatSource(*lpu, result->source, {});
  if (formatted.status != format::FormatResult::Formatted) {
    tools::reportToolError(kTool, "internal error: the imported source does not format" +
                                      (formatted.details.empty() ? std::string()
                                                                 : ": " + formatted.details) +
                                      "\n" + result->source);
    return tools::kExitInputError;
  }

  auto sourceTemp = tools::writeTemporaryBeside(output, formatted.output, "tmp");
  if (!sourceTemp) {
    tools::reportToolError(kTool, llvm::toString(sourceTemp.takeError()));
    return tools::kExitUsageError;
  }
  // The compiler's own front end checks what was written, every bucket.
  driver::LoadModelOptions load;
  std::string exe = llvm::sys::fs::getMainExecutable(argv[0], reinterpret_cast<void *>(&main));
  load.importPaths = defaultStdlibPaths(llvm::sys::path::parent_path(exe));
  load.importPaths.push_back(LPU_SOURCE_STDLIB_DIR);
  std::string diagnostics;
  llvm::raw_string_ostream diagStream(diagnostics);
  auto module = driver::compileFileToIR(*sourceTemp, load, diagStream);
  if (!module) {
    llvm::consumeError(module.takeError());
    llvm::sys::fs::remove(*sourceTemp);
    tools::reportToolError(kTool, "internal error: the imported source does not compile:\n" +
                                      diagStream.str());
    return tools::kExitInputError;
  }

  auto image = tensor::serializeSafeTensors(result->weights,
                                            {{"source", options.sourceName}});
  if (!image) {
    llvm::sys::fs::remove(*sourceTemp);
    tools::reportToolError(kTool, llvm::toString(image.takeError()));
    return tools::kExitInputError;
  }
  auto weightsTemp = tools::writeTemporaryBeside(weights, *image, "tmp");
  if (!weightsTemp) {
    llvm::sys::fs::remove(*sourceTemp);
    tools::reportToolError(kTool, llvm::toString(weightsTemp.takeError()));
    return tools::kExitUsageError;
  }
  if (std::error_code ec = llvm::sys::fs::rename(*weightsTemp, weights)) {
    llvm::sys::fs::remove(*sourceTemp);
    llvm::sys::fs::remove(*weightsTemp);
    tools::reportToolError(kTool, "cannot write '" + weights + "': " + ec.message());
    return tools::kExitUsageError;
  }
  if (std::error_code ec = llvm::sys::fs::rename(*sourceTemp, output)) {
    llvm::sys::fs::remove(*sourceTemp);
    llvm::sys::fs::remove(weights);
    tools::reportToolError(kTool, "cannot write '" + output + "': " + ec.message());
    return tools::kExitUsageError;
  }
  return tools::kExitSuccess;
}
