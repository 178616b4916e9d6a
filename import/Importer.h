// ONNX graph -> .lpu source text and the weights by parameter path. The
// source is plain text, one `let` per value; the tool formats it with
// lpufmt's engine and type-checks it before anything is written.
#pragma once

#include "import/OnnxGraph.h"
#include "support/SafeTensors.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <map>
#include <string>
#include <vector>

namespace lpu::import {

struct ImportOptions {
  std::string entryName = "main";
  std::string modelName = "Imported";
  /// The ONNX file's name, for the header comment.
  std::string sourceName;
  /// Buckets of the symbolic dimensions, by the ONNX name (or its
  /// sanitized spelling).
  std::map<std::string, std::vector<int64_t>> buckets;
  /// Run-time Gather indices are known to lie in [0, s): no `select`
  /// wraps negative ones from the end (ONNX's [-s, s-1]) before a gather.
  bool idsInRange = false;
};

struct ImportResult {
  std::string source;                       // unformatted .lpu text
  std::vector<tensor::NamedTensor> weights; // by parameter path
};

/// The whole import, or an error that says everything wrong at once
/// (every unsupported operator with its nodes) or the first node that
/// cannot be imported, by name.
llvm::Expected<ImportResult> importOnnx(const OnnxGraph &graph, const ImportOptions &options);

/// `name` as an identifier of the language: characters outside
/// [A-Za-z0-9_] become '_', runs of '_' collapse, a leading digit gets a
/// 'v' before it.
std::string sanitizeName(const std::string &name);
/// `text` (a node's, an initializer's or a producer's name) fit for a `//`
/// comment of the written source: control characters and bytes that are
/// not UTF-8 become `\xNN`, so that a name cannot end the comment's line
/// or make the file invalid UTF-8.
std::string commentText(llvm::StringRef text);

/// Whether `name` can name an entry or a model: an identifier that is no
/// keyword, dtype or built-in of the language.
bool isFreeIdentifier(const std::string &name);

} // namespace lpu::import
