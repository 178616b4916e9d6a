#include "format/engine/Pipeline.h"

#include <llvm/ADT/Twine.h>

#include <algorithm>

namespace lpu::format {

bool renderTree(const Language &language, const SyntaxTree &tree, const LayoutOptions &layout,
                std::string &output, std::string &details) {
  DocArena arena;
  FormatContext context(tree, language.rules(), arena);
  Doc root = context.node(tree.root);
  if (!context.verifyAllPrintedOnce(details))
    return false;
  if (!context.hasOffRegions()) {
    output = printDoc(arena, root, layout);
    return true;
  }
  std::vector<uint32_t> markEnds;
  output = printDoc(arena, root, layout, &markEnds);
  return context.spliceOffRegions(output, markEnds, details);
}

namespace {

std::string where(const SyntaxTree &tree, uint32_t token) {
  const Token &t = tree.tokens[token];
  return (llvm::Twine(t.line) + ":" + llvm::Twine(t.column)).str();
}

/// Compares the significant tokens of input and output, skipping the ones
/// the style may add or drop.
bool sameTokens(const Language &lang, const SyntaxTree &a, const SyntaxTree &b,
                std::string &details) {
  size_t i = 0, j = 0;
  auto skip = [&](const SyntaxTree &t, size_t &k) {
    while (k < t.tokens.size() && lang.isOptionalToken && lang.isOptionalToken(t, k))
      ++k;
  };
  for (;;) {
    skip(a, i);
    skip(b, j);
    if (i == a.tokens.size() || j == b.tokens.size())
      break;
    if (a.tokens[i].kind != b.tokens[j].kind || a.text(a.tokens[i]) != b.text(b.tokens[j])) {
      details = "token '" + b.text(b.tokens[j]).str() + "' at output " + where(b, j) +
                " differs from '" + a.text(a.tokens[i]).str() + "' at input " + where(a, i);
      return false;
    }
    ++i;
    ++j;
  }
  if (i != a.tokens.size() || j != b.tokens.size()) {
    details = "the output has a different number of tokens than the input";
    return false;
  }
  return true;
}

bool sameTree(const SyntaxTree &a, const SyntaxTree &b, std::string &details) {
  if (a.nodes.size() != b.nodes.size()) {
    details = "the output's syntax tree has " + std::to_string(b.nodes.size()) +
              " nodes, the input's " + std::to_string(a.nodes.size());
    return false;
  }
  // Token children are compared by sameTokens (modulo optional ones); here
  // the kinds and the nesting of nodes.
  auto nodeChildren = [](const SyntaxTree &t, size_t k) {
    size_t count = 0;
    for (uint32_t c = 0; c < t.nodes[k].childCount; ++c)
      count += t.childrenOf(static_cast<uint32_t>(k))[c].isNode;
    return count;
  };
  for (size_t k = 0; k < a.nodes.size(); ++k)
    if (a.nodes[k].kind != b.nodes[k].kind || nodeChildren(a, k) != nodeChildren(b, k)) {
      details = "the output's syntax tree differs from the input's near output " +
                where(b, std::min<uint32_t>(b.nodes[k].firstToken, b.tokens.size() - 1));
      return false;
    }
  return true;
}

bool sameComments(const SyntaxTree &a, const SyntaxTree &b, std::string &details) {
  if (a.comments.size() != b.comments.size()) {
    details = "the output has " + std::to_string(b.comments.size()) + " comments, the input " +
              std::to_string(a.comments.size());
    return false;
  }
  for (size_t k = 0; k < a.comments.size(); ++k)
    if (a.text(a.comments[k]) != b.text(b.comments[k])) {
      details = "comment '" + a.text(a.comments[k]).str() + "' changed";
      return false;
    }
  return true;
}

} // namespace

FormatResult formatSource(const Language &language, llvm::StringRef source,
                          const FormatOptions &options) {
  FormatResult result;
  SyntaxTree input;
  input.source = source.str();
  if (!language.parse(input, result.errors)) {
    result.status = FormatResult::SyntaxErrors;
    return result;
  }
  auto fail = [&](llvm::StringRef what, const std::string &how) {
    result.status = FormatResult::InternalError;
    result.details = (what + ": " + how).str();
    result.output.clear();
    return result;
  };
  std::string details;
  if (!renderTree(language, input, options.layout, result.output, details))
    return fail("rendering failed", details);
  if (options.corruptOutputForTesting)
    result.output += "\n// injected by --debug-corrupt-output\n";
  if (!options.verify)
    return result;

  SyntaxTree again;
  again.source = result.output;
  std::vector<SyntaxError> errors;
  if (!language.parse(again, errors)) {
    const SyntaxError &e = errors.front();
    return fail("the output does not parse",
                std::to_string(e.line) + ":" + std::to_string(e.column) + ": " + e.message);
  }
  if (!sameTokens(language, input, again, details))
    return fail("the output's tokens differ from the input's", details);
  if (!sameTree(input, again, details))
    return fail("the output's syntax tree differs from the input's", details);
  if (!sameComments(input, again, details))
    return fail("the output's comments differ from the input's", details);
  std::string second;
  if (!renderTree(language, again, options.layout, second, details))
    return fail("formatting the output again failed", details);
  if (second != result.output) {
    size_t k = 0;
    while (k < second.size() && k < result.output.size() && second[k] == result.output[k])
      ++k;
    size_t line = 1 + std::count(result.output.begin(), result.output.begin() + k, '\n');
    return fail("formatting is not idempotent",
                "a second pass changes output line " + std::to_string(line));
  }
  return result;
}

} // namespace lpu::format
