#include "format/Languages.h"

#include "format/json/JsonLanguage.h"
#include "format/lpu/LpuLanguage.h"

#include <llvm/Support/Path.h>

namespace lpu::format {

const std::vector<const Language *> &allLanguages() {
  static const std::vector<const Language *> languages{&lpuLanguage(), &jsonLanguage()};
  return languages;
}

const Language *languageByName(llvm::StringRef name) {
  for (const Language *l : allLanguages())
    if (name == l->name)
      return l;
  return nullptr;
}

const Language *languageForPath(llvm::StringRef path) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (!ext.consume_front("."))
    return nullptr;
  for (const Language *l : allLanguages())
    for (const char *e : l->extensions)
      if (ext == e)
        return l;
  return nullptr;
}

} // namespace lpu::format
