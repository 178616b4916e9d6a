// Modules: the top-level names of each file, and imports found in the
// stdlib directories, in -I directories, or relative to the importing file.
#include "frontend/CheckerImpl.h"
#include "frontend/Parser.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

namespace lpu {

std::vector<std::string> defaultStdlibPaths(llvm::StringRef bindir) {
  std::vector<std::string> out;
  for (const char *rel : {"../stdlib", "../../stdlib", "../share/lpu/stdlib"}) {
    llvm::SmallString<256> p(bindir);
    llvm::sys::path::append(p, rel);
    llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
    out.push_back(std::string(p));
  }
  return out;
}

namespace check {

ModuleInfo *Checker::loadMain(const ast::Module &main) {
  auto m = std::make_unique<ModuleInfo>();
  m->ast = &main;
  m->path = main.fileName;
  m->name = llvm::sys::path::filename(main.fileName).str();
  ModuleInfo *raw = m.get();
  modules_.push_back(std::move(m));
  llvm::SmallString<256> abs(main.fileName);
  llvm::sys::fs::make_absolute(abs);
  llvm::sys::path::remove_dots(abs, true);
  modulesByPath_[std::string(abs)] = raw;
  collectGlobals(*raw);
  raw->loading = true;
  loadImports(*raw);
  raw->loading = false;
  return raw;
}

void Checker::checkDuplicates(const std::vector<const ast::Decl *> &decls) {
  std::map<std::string, const ast::Decl *> first;
  for (const ast::Decl *d : decls) {
    if (d->name.empty())
      continue;
    auto [it, fresh] = first.emplace(d->name.name, d);
    if (!fresh)
      error(DiagID::DuplicateDefinition, d->name.range, d->name.name)
          .note("first defined here", it->second->name.range);
  }
}

void Checker::collectGlobals(ModuleInfo &m) {
  std::vector<const ast::Decl *> decls;
  for (const ast::DeclPtr &d : m.ast->items) {
    if (!d || d->name.empty())
      continue;
    decls.push_back(d.get());
    m.globals.emplace(d->name.name, d.get());
    if (auto *model = llvm::dyn_cast<ast::ModelDecl>(d.get())) {
      std::vector<const ast::Decl *> members;
      for (const ast::DeclPtr &mem : model->members)
        if (mem)
          members.push_back(mem.get());
      checkDuplicates(members);
    }
  }
  checkDuplicates(decls);
}

void Checker::loadImports(ModuleInfo &m) {
  for (const ast::DeclPtr &d : m.ast->items) {
    auto *imp = llvm::dyn_cast_or_null<ast::ImportDecl>(d.get());
    if (!imp)
      continue;
    std::vector<std::string> tried;
    std::string found, name;
    if (imp->isFile) {
      // A relative path is the importing file's directory's; an absolute
      // one is itself.
      llvm::SmallString<256> p;
      if (llvm::sys::path::is_absolute(imp->file))
        p = imp->file;
      else {
        p = llvm::sys::path::parent_path(m.path);
        llvm::sys::path::append(p, imp->file);
      }
      tried.push_back(std::string(p));
      if (llvm::sys::fs::is_regular_file(p))
        found = std::string(p);
      name = imp->file;
    } else {
      llvm::SmallString<128> rel;
      for (const ast::Ident &part : imp->path) {
        llvm::sys::path::append(rel, part.name);
        name += (name.empty() ? "" : ".") + part.name;
      }
      rel += ".lpu";
      // Only directories that exist are searched (and named when nothing
      // is found), each once.
      std::set<std::string> searched;
      for (const std::string &dir : options_.importPaths) {
        llvm::SmallString<256> norm(dir);
        llvm::sys::fs::make_absolute(norm);
        llvm::sys::path::remove_dots(norm, true);
        if (!llvm::sys::fs::is_directory(norm) || !searched.insert(std::string(norm)).second)
          continue;
        llvm::SmallString<256> p(norm);
        llvm::sys::path::append(p, rel);
        tried.push_back(std::string(p));
        if (found.empty() && llvm::sys::fs::is_regular_file(p))
          found = std::string(p);
      }
    }
    llvm::SMRange at = imp->isFile ? imp->fileRange : imp->range;
    if (found.empty()) {
      auto b = error(DiagID::ModuleNotFound, at, name);
      for (const std::string &t : tried)
        b.note("tried " + t);
      if (tried.empty())
        b.note("no import directory exists; pass -I DIR");
      continue;
    }
    ModuleInfo *target = loadModuleFile(found, name, at);
    if (target)
      m.imports[imp->name.name] = target;
  }
}

ModuleInfo *Checker::loadModuleFile(const std::string &path, const std::string &name,
                                    llvm::SMRange at) {
  llvm::SmallString<256> abs(path);
  llvm::sys::fs::make_absolute(abs);
  llvm::sys::path::remove_dots(abs, true);
  std::string key(abs);
  if (auto it = modulesByPath_.find(key); it != modulesByPath_.end()) {
    if (it->second->loading) {
      // Name the chain from the module that closes the cycle.
      std::string chain;
      for (const auto &mod : modules_)
        if (mod->loading)
          chain += (chain.empty() ? "" : " -> ") + mod->name;
      error(DiagID::ImportCycle, at, chain + " -> " + name)
          .note("'" + name + "' is being imported already");
      return nullptr;
    }
    return it->second;
  }
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error(DiagID::ModuleNotFound, at, name).note("cannot read " + path);
    return nullptr;
  }
  unsigned id = diags_.sources().AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  auto m = std::make_unique<ModuleInfo>();
  m->owned = parseModule(diags_, id, options_.parse);
  if (!m->owned) // not a text file (E0010, reported)
    return nullptr;
  m->owned->fileName = path;
  m->ast = m->owned.get();
  m->path = path;
  m->name = name;
  ModuleInfo *raw = m.get();
  modules_.push_back(std::move(m));
  modulesByPath_[key] = raw;
  collectGlobals(*raw);
  raw->loading = true;
  loadImports(*raw);
  raw->loading = false;
  return raw;
}

} // namespace check
} // namespace lpu
