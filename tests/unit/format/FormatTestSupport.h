// Helpers shared by the formatter's tests: reading spec files and
// perturbing whitespace between tokens.
#pragma once

#include "format/engine/Pipeline.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace lpu::format::testing {

inline std::string readSpec(const std::string &name) {
  std::ifstream in(std::string(LPU_FORMAT_SPEC_DIR) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline FormatResult format(const Language &lang, const std::string &source, unsigned width = 100,
                           unsigned indent = 2) {
  FormatOptions options;
  options.layout.width = width;
  options.layout.indent = indent;
  return formatSource(lang, source, options);
}

/// Whether two tokens written with nothing between them still lex as the
/// same two tokens (true for `(x`, false for `let x`, `- >`, `/ /`).
inline bool canJoin(llvm::StringRef prev, llvm::StringRef next) {
  if (prev.empty() || next.empty())
    return true;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '"'; };
  char a = prev.back(), b = next.front();
  if (word(a) && word(b))
    return false;
  if (a == '.' && (b == '.' || std::isdigit(static_cast<unsigned char>(b))))
    return false;
  static const char *pairs[] = {"->", "..", "==", "!=", "<=", ">=", "||", "&&", "**", "//", "/*", "*/"};
  std::string ab{a, b};
  for (const char *p : pairs)
    if (ab == p)
      return false;
  return true;
}

/// `source` with the whitespace between tokens replaced at random: spaces
/// and single line breaks added or removed. Gaps holding a comment or a
/// blank line are kept, since comments' placement and blank lines are
/// meant to survive formatting.
inline std::string perturb(const Language &lang, const std::string &source, unsigned seed) {
  SyntaxTree tree;
  tree.source = source;
  std::vector<SyntaxError> errors;
  if (!lang.parse(tree, errors))
    return "<does not parse>";
  static const char *gaps[] = {"", " ", "   ", "\n", "\n    ", " \n\t", "\t"};
  std::mt19937 rng(seed);
  llvm::StringRef src(source);
  std::string out(src.substr(0, tree.tokens[0].offset));
  for (size_t i = 1; i < tree.tokens.size(); ++i) {
    const Token &prev = tree.tokens[i - 1], &tok = tree.tokens[i];
    llvm::StringRef gap = src.slice(prev.offset + prev.length, tok.offset);
    out += tree.text(prev);
    if (gap.contains('/') || gap.count('\n') >= 2) {
      out += gap;
      continue;
    }
    std::string pick = gaps[rng() % (sizeof(gaps) / sizeof(gaps[0]))];
    if (pick.empty() && !canJoin(tree.text(prev), tree.text(tok)))
      pick = " ";
    out += pick;
  }
  out += src.substr(tree.tokens.back().offset);
  return out;
}

/// `source` with up to six comments of every kind inserted after random
/// tokens: trailing line and block comments, multi-line block comments and
/// own-line comments after a blank line.
inline std::string insertComments(const Language &lang, const std::string &source, unsigned seed) {
  SyntaxTree tree;
  tree.source = source;
  std::vector<SyntaxError> errors;
  if (!lang.parse(tree, errors) || tree.tokens.size() < 2)
    return source;
  std::mt19937 rng(seed);
  std::vector<uint32_t> at;
  unsigned count = 1 + rng() % 6;
  for (unsigned k = 0; k < count; ++k) {
    const Token &t = tree.tokens[rng() % (tree.tokens.size() - 1)];
    at.push_back(t.offset + t.length);
  }
  std::sort(at.rbegin(), at.rend());
  std::string out = source;
  for (size_t k = 0; k < at.size(); ++k) {
    std::string n = std::to_string(k);
    const std::string kinds[] = {" // c" + n + "\n", " /* c" + n + " */ ", "\n/* m" + n + "\n x */\n",
                                 "\n\n// own" + n + "\n"};
    out.insert(at[k], kinds[rng() % 4]);
  }
  return out;
}

} // namespace lpu::format::testing
