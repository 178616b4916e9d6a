// The text (assembly) form of a program: one directive or instruction per
// line, printed canonically so that text -> Program -> binary -> text is the
// identity. Parsed with Boost.Spirit X3. The syntax is in docs/program-file.md.
#pragma once

#include "backend/Program.h"

#include <llvm/Support/Error.h>

#include <string>

namespace lpu::backend {

std::string printProgramText(const Program &program);

/// `name` is used in error messages ("NAME:LINE: ...").
llvm::Expected<Program> parseProgramText(llvm::StringRef text, llvm::StringRef name);

/// Prints one instruction ("read s10 @0+1 -> e0").
std::string printInstr(const Instr &in);

} // namespace lpu::backend
