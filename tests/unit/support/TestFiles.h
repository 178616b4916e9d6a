// Temporary directories and small helpers shared by the tensor tests.
#pragma once

#include <llvm/Support/Error.h>

#include <gtest/gtest.h>

#include <string>

namespace lpu::tensor::testing {

/// A fresh directory removed again when the object dies.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

void writeBytes(const std::string &path, const std::string &bytes);
std::string readBytes(const std::string &path);

/// The error's message (and consumes it); "" for success.
std::string errorText(llvm::Error error);
template <typename T> std::string errorText(llvm::Expected<T> &value) {
  return value ? "" : errorText(value.takeError());
}

} // namespace lpu::tensor::testing
