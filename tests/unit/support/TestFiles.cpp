#include "tests/unit/support/TestFiles.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>

#include <fstream>
#include <sstream>

namespace lpu::tensor::testing {

TempDir::TempDir() {
  llvm::SmallString<128> dir;
  std::error_code ec = llvm::sys::fs::createUniqueDirectory("lpu-tensor-test", dir);
  EXPECT_FALSE(ec) << ec.message();
  path_ = dir.str().str();
}

TempDir::~TempDir() { llvm::sys::fs::remove_directories(path_); }

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string errorText(llvm::Error error) { return error ? llvm::toString(std::move(error)) : ""; }

} // namespace lpu::tensor::testing
