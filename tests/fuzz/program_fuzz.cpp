// AFL++ harness for the program loader: the bytes of a program file in
// either form (binary by its magic, text otherwise). Anything may be
// refused with an error; what must never happen is a crash, a hang, or a
// program that loads but does not survive its own round trips:
//   text -> Program -> text -> Program   and   Program -> binary -> Program.
// A failed round trip aborts, which AFL++ records as a crash.
#include "backend/ChipDescription.h"
#include "backend/ProgramBinary.h"
#include "backend/ProgramText.h"

#include <llvm/Support/MemoryBuffer.h>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

using namespace lpu::backend;

#ifndef __AFL_LOOP
#define __AFL_LOOP(n) (iteration++ < 1)
#endif

namespace {
void checkOne(llvm::ArrayRef<uint8_t> bytes, const ChipDescription *chip) {
  auto program = parseProgramFile(bytes, "input");
  if (!program) {
    llvm::consumeError(program.takeError());
    return;
  }
  if (chip)
    llvm::consumeError(verifyProgram(*program, *chip));
  std::string text = printProgramText(*program);
  auto again = parseProgramText(text, "printed");
  if (!again || !(*again == *program) || printProgramText(*again) != text) {
    std::fprintf(stderr, "text round trip failed\n");
    std::abort();
  }
  std::string bin = writeProgramBinary(*program);
  auto back = readProgramBinary(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bin.data()), bin.size()), "bin");
  if (!back || !(*back == *program)) {
    std::fprintf(stderr, "binary round trip failed\n");
    std::abort();
  }
}
} // namespace

int main(int argc, char **argv) {
  // The chip is loaded once, outside the fuzzing loop.
  auto chip = loadChipDescription("groqchip1");
  const ChipDescription *chipPtr = chip ? &*chip : nullptr;
  if (!chip)
    llvm::consumeError(chip.takeError());
  int iteration = 0;
  (void)iteration;
  std::vector<uint8_t> data(1 << 20);
  while (__AFL_LOOP(10000)) {
    ssize_t n;
    if (argc > 1) {
      FILE *f = std::fopen(argv[1], "rb");
      if (!f)
        return 1;
      n = ssize_t(std::fread(data.data(), 1, data.size(), f));
      std::fclose(f);
    } else {
      n = read(0, data.data(), data.size());
    }
    if (n < 0)
      return 1;
    checkOne(llvm::ArrayRef<uint8_t>(data.data(), size_t(n)), chipPtr);
  }
  return 0;
}
