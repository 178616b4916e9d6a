#include "format/engine/LineDiff.h"

#include <llvm/ADT/Twine.h>

#include <algorithm>
#include <vector>

namespace lpu::format {
namespace {

std::vector<llvm::StringRef> splitLines(llvm::StringRef text) {
  std::vector<llvm::StringRef> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == llvm::StringRef::npos) {
      lines.push_back(text);
      break;
    }
    lines.push_back(text.substr(0, nl + 1)); // keeps the newline: a missing one is a change
    text = text.substr(nl + 1);
  }
  return lines;
}

enum class Op : uint8_t { Equal, Delete, Insert };
struct Edit {
  Op op;
  size_t a, b; // line indices in before / after
};

std::vector<Edit> editScript(const std::vector<llvm::StringRef> &a,
                             const std::vector<llvm::StringRef> &b) {
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre])
    ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf])
    ++suf;
  size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  std::vector<Edit> edits;
  for (size_t k = 0; k < pre; ++k)
    edits.push_back({Op::Equal, k, k});
  if (n * m <= (size_t(1) << 24)) {
    // lcs[i][j]: length of the LCS of a[pre+i..] and b[pre+j..].
    std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> uint32_t & { return lcs[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;)
        at(i, j) = a[pre + i] == b[pre + j] ? at(i + 1, j + 1) + 1
                                            : std::max(at(i + 1, j), at(i, j + 1));
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[pre + i] == b[pre + j]) {
        edits.push_back({Op::Equal, pre + i++, pre + j++});
      } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
        edits.push_back({Op::Delete, pre + i++, pre + j}); // deletions first, as diff(1) does
      } else {
        edits.push_back({Op::Insert, pre + i, pre + j++});
      }
    }
  } else {
    for (size_t i = 0; i < n; ++i)
      edits.push_back({Op::Delete, pre + i, pre});
    for (size_t j = 0; j < m; ++j)
      edits.push_back({Op::Insert, pre + n, pre + j});
  }
  for (size_t k = 0; k < suf; ++k)
    edits.push_back({Op::Equal, pre + n + k, pre + m + k});
  return edits;
}

void appendLine(std::string &out, char mark, llvm::StringRef line) {
  out += mark;
  out += line;
  if (!line.endswith("\n"))
    out += "\n\\ No newline at end of file\n";
}

} // namespace

std::string unifiedDiff(llvm::StringRef before, llvm::StringRef after, llvm::StringRef beforeName,
                        llvm::StringRef afterName, unsigned context) {
  if (before == after)
    return "";
  std::vector<llvm::StringRef> a = splitLines(before), b = splitLines(after);
  std::vector<Edit> edits = editScript(a, b);
  std::string out = ("--- " + beforeName + "\n+++ " + afterName + "\n").str();
  size_t k = 0;
  while (k < edits.size()) {
    while (k < edits.size() && edits[k].op == Op::Equal)
      ++k;
    if (k == edits.size())
      break;
    // A hunk: from `context` equal lines before the change to the point
    // where more than 2*context equal lines follow the last change.
    size_t begin = k >= context ? k - context : 0;
    size_t end = k;
    for (size_t equalRun = 0; end < edits.size(); ++end) {
      equalRun = edits[end].op == Op::Equal ? equalRun + 1 : 0;
      if (equalRun > 2 * context)
        break;
    }
    // Trim trailing equal lines to `context`.
    size_t last = end;
    while (last > begin && edits[last - 1].op == Op::Equal)
      --last;
    end = std::min(edits.size(), last + context);
    size_t aStart = edits[begin].a, bStart = edits[begin].b, aCount = 0, bCount = 0;
    for (size_t e = begin; e < end; ++e) {
      aCount += edits[e].op != Op::Insert;
      bCount += edits[e].op != Op::Delete;
    }
    out += ("@@ -" + llvm::Twine(aCount ? aStart + 1 : aStart) + "," + llvm::Twine(aCount) +
            " +" + llvm::Twine(bCount ? bStart + 1 : bStart) + "," + llvm::Twine(bCount) + " @@\n")
               .str();
    for (size_t e = begin; e < end; ++e) {
      const Edit &ed = edits[e];
      if (ed.op == Op::Equal)
        appendLine(out, ' ', a[ed.a]);
      else if (ed.op == Op::Delete)
        appendLine(out, '-', a[ed.a]);
      else
        appendLine(out, '+', b[ed.b]);
    }
    k = end;
  }
  return out;
}

} // namespace lpu::format
