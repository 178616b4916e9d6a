#include "driver/LoadModel.h"

#include "driver/Pipeline.h"
#include "frontend/DiagnosticRender.h"
#include "ir/Text.h"
#include "ir/Verifier.h"
#include "support/Files.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>

namespace lpu::driver {

namespace {
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> readFile(llvm::StringRef path) {
  if (path == "-") { // standard input, as lpuc reads it
    auto buffer = llvm::MemoryBuffer::getSTDIN();
    if (!buffer)
      return llvm::createStringError(buffer.getError(), "cannot read standard input: " +
                                                            buffer.getError().message());
    return std::move(*buffer);
  }
  // A device (/dev/zero, a terminal) may never end: no source to read whole.
  if (support::isDevice(path))
    return llvm::createStringError(std::make_error_code(std::errc::no_such_device),
                                   "cannot read '" + path + "': " + support::kDeviceReason);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read '" + path + "': " + buffer.getError().message());
  return std::move(*buffer);
}
} // namespace

llvm::Expected<std::unique_ptr<ir::Module>> compileFileToIR(llvm::StringRef path,
                                                            const LoadModelOptions &options,
                                                            llvm::raw_ostream &diagnostics) {
  auto buffer = readFile(path);
  if (!buffer)
    return buffer.takeError();
  llvm::SourceMgr sources;
  unsigned bufferId = sources.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  DiagnosticEngine diags(sources);
  TextDiagnosticRenderer text(sources, diagnostics, options.color);
  diags.setConsumer(&text);
  PipelineOptions pipeline;
  pipeline.check.importPaths = options.importPaths;
  // The model runs on the host: no chip's SRAM has to hold its parameters.
  pipeline.check.sramRule = false;
  pipeline.last = Phase::Lower;
  pipeline.statesAgree = false; // one entry runs at a time
  pipeline.progress = options.progress;
  pipeline.timing = options.timing;
  Compilation c(diags, bufferId);
  if (!runPipeline(c, pipeline) || diags.hasErrors())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "'" + path + "' does not compile (" +
                                       std::to_string(diags.errorCount()) + " error" +
                                       (diags.errorCount() == 1 ? "" : "s") + ")");
  return std::move(c.ir);
}

llvm::Expected<std::unique_ptr<ir::Module>> loadModel(llvm::StringRef path,
                                                      const LoadModelOptions &options,
                                                      llvm::raw_ostream &diagnostics) {
  if (llvm::sys::path::extension(path) != ".ir")
    return compileFileToIR(path, options, diagnostics);
  auto buffer = readFile(path);
  if (!buffer)
    return buffer.takeError();
  auto module = ir::parseModule((*buffer)->getBuffer(), path);
  if (!module)
    return module.takeError();
  if (auto errors = ir::verify(**module); !errors.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": the IR does not verify:\n" +
                                       ir::formatErrors(errors));
  return module;
}

} // namespace lpu::driver
