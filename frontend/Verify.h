// `lpuc -verify`: the expected diagnostics are written as comments in the
// test file itself, as in clang -verify and mlir-opt -verify-diagnostics:
//
//   let y = x +            // expected-error {{expected an expression}}
//   // expected-error@+1 {{unexpected character '#'}}
//   // expected-error[E0004]@+2:11 {{malformed number '12ab'}}
//   // expected-note@-3 {{re:declared at [0-9]+:[0-9]+}}
//   // expected-warning-re {{unused {{.*}} 'x'}}
//
// Form: expected-(error|warning|note|remark)[-re][[CODE]][@LINE[:COL]][ COUNT] {{TEXT}}
//   LINE is +N / -N (relative to the comment's line) or N (absolute);
//   without it, the comment's own line. COL pins the column too.
//   TEXT matches when it is a substring of the message; {{re:R}} is a regex
//   searched in the message; in the -re form, {{...}} parts inside TEXT are
//   regexes and the rest is literal. COUNT expects that many copies.
//   expected-no-diagnostics states that the file has none.
#pragma once

#include "frontend/Diagnostics.h"

#include <llvm/Support/raw_ostream.h>

namespace lpu {

/// Compares `diagnostics` (all reported for buffer `bufferId`) with the
/// expectations written in that buffer. Prints every unexpected and every
/// missing diagnostic to `os`; returns true when they match exactly.
bool verifyDiagnostics(const llvm::SourceMgr &sources, unsigned bufferId,
                       const std::vector<Diagnostic> &diagnostics, llvm::raw_ostream &os);

} // namespace lpu
