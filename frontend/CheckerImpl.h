// The checker's internals, shared by the Check*.cpp files (one per
// concern: modules, declarations, generics, expressions, built-ins,
// entries). Not part of the frontend's interface.
#pragma once

#include "frontend/Checker.h"
#include "frontend/Types.h"

#include <functional>
#include <map>
#include <set>
#include <unordered_map>

namespace lpu::check {

/// One loaded source file with its top-level names.
struct ModuleInfo {
  const ast::Module *ast = nullptr;
  std::unique_ptr<ast::Module> owned; // imported modules are owned here
  std::string path;
  std::string name; // `std.nn`, or the file name for the main module
  std::map<std::string, const ast::Decl *> globals;
  std::map<std::string, ModuleInfo *> imports; // alias -> module
  bool loading = false;                         // on the import stack
};

/// Everything a size, dtype or type annotation may name.
struct Env {
  ModuleInfo *module = nullptr;
  ModelInstPtr self; // the model whose fn is checked, if any
  std::map<std::string, Size> sizes;
  std::map<std::string, std::string> dtypes;
  std::map<std::string, PackBinding> packs;
  /// Sizes known to be zero (from `where` clauses, as lhs - rhs).
  std::vector<Size> facts;
  bool concrete = false;
  /// While lowering: the parameter path of `self` (`layers.3`).
  std::string selfPath;
};

struct Local {
  Value value;
  llvm::SMRange decl;
  bool isVar = false;
};

/// One function body being checked.
struct Frame {
  Env env;
  const ast::FnDecl *fn = nullptr;
  std::vector<std::map<std::string, Local>> scopes;
  std::optional<ResultType> returnType;
  /// The value of the first `return` reached: a `return` ends the body.
  Value returned;
  bool hasReturned = false;
  /// Every path checked so far has reached a `return`: the statements after
  /// it are not reached, so they are neither checked nor lowered (an `if`
  /// whose condition is known takes its branch's; one checked both ways,
  /// both branches').
  bool ended = false;
  uint64_t flops = 0;
  uint64_t peakBytes = 0;
  std::vector<std::string> *typeLog = nullptr;
  unsigned depth = 0; // of instantiation below the entry, to indent the log
  /// The run-time sources of the expression being checked: every operand
  /// checked inside it adds its own (Checker::expr), so an operation's
  /// result depends on what its operands depend on without each operation
  /// saying so. A callee's body has a frame of its own.
  std::vector<RuntimeSource> *sources = nullptr;
};

/// An argument at a call: its value and where it was written.
struct Arg {
  Value value;
  llvm::SMRange range; // of the value: `2` in `axis = 2`
  std::string name;    // named argument
  const ast::Expr *expr = nullptr;
  llvm::SMRange nameRange; // `axis` in `axis = 2`
};

/// A memoised instantiation with numbers.
struct Instance {
  bool ok = true;
  uint64_t flops = 0;
  uint64_t peakBytes = 0;
  bool done = false;
};

/// Appends the instantiation context to every diagnostic and drops a
/// second report of the same code at the same place (one error per cause).
class ContextConsumer : public DiagnosticConsumer {
public:
  explicit ContextConsumer(DiagnosticEngine &out) : out_(out) {}
  void handle(const Diagnostic &diag) override;
  std::vector<DiagNote> context; // innermost last
  unsigned forwarded = 0;
private:
  DiagnosticEngine &out_;
  std::set<std::pair<int, const char *>> seen_;
  std::set<std::string> seenMessages_;
};

class Lowering;

class Checker {
public:
  Checker(DiagnosticEngine &diags, const CheckOptions &options);
  ~Checker();
  /// True while an entry bucket is being lowered to IR.
  bool lowering() const;
  CheckResult run(const ast::Module &main);

  // ---- CheckModules.cpp
  ModuleInfo *loadMain(const ast::Module &main);
  void collectGlobals(ModuleInfo &m);
  void loadImports(ModuleInfo &m);
  ModuleInfo *loadModuleFile(const std::string &path, const std::string &name, llvm::SMRange at);

  // ---- CheckDecls.cpp
  void checkDefinitions(ModuleInfo &m);
  void checkFnDefinition(ModuleInfo &m, const ast::FnDecl &fn, ModelInstPtr self);
  ModelInstPtr symbolicModel(const ast::ModelDecl &model, ModuleInfo &m);
  ModelInstPtr instantiateModel(const ast::ModelDecl &model, ModuleInfo *m,
                                const std::vector<ast::GenericArg> &args, const Env &outer,
                                llvm::SMRange at);
  Value paramValue(const ModelInst &inst, const ast::ParamDecl &param);
  Value resolveParamType(const ast::TypeExpr &type, const Env &env, const std::string &what);
  std::optional<TensorType> tensorType(const ast::TypeExpr &type, const Env &env);
  /// A fn's declared result in `env`; nullopt when a type in it is bad
  /// (reported) or it has none (a syntax error).
  std::optional<ResultType> resultType(const ast::FnDecl &fn, const Env &env);
  const ast::Decl *findMember(const ast::ModelDecl &model, llvm::StringRef name) const;
  void detectRecursion();
  void detectSelfContainment();
  void checkDuplicates(const std::vector<const ast::Decl *> &decls);

  // ---- CheckGenerics.cpp
  /// Pairs each generic argument with the parameter it binds, positional
  /// ones in order and named ones by name, for `owner` (named in the
  /// messages; `declared`, when given, is the declaration's name, where a
  /// note on an unknown argument points).
  /// Too many, an unknown name or a parameter given twice is reported and
  /// gives nullopt. Each site then binds the pairs its own way.
  using GenericBinding = std::pair<const ast::GenericArg *, const ast::GenericParam *>;
  std::optional<std::vector<GenericBinding>> matchGenericArgs(const std::vector<ast::GenericArg> &args,
                                                               const std::vector<ast::GenericParam> &params,
                                                               const std::string &owner,
                                                               const ast::Ident *declared = nullptr);
  std::optional<Size> sizeOf(const ast::SizeExpr &e, const Env &env, const Frame *frame = nullptr);
  std::optional<std::string> dtypeOf(llvm::StringRef name, const Env &env);
  /// Checks that `a / b` divides exactly (or defers it); `range` is the `/`.
  /// `what` names the division in the message when it is not the source
  /// text at `range` (`channels / groups` for conv2d's groups argument).
  /// Where a location is in the sources: its buffer (the main file first,
  /// imports in the order loaded), then its place in it.
  std::pair<unsigned, const char *> sourceOrder(llvm::SMLoc at) const;
  void checkExactDivision(const Size &a, const Size &b, const Env &env, llvm::SMRange range,
                          const std::string &what = "");
  std::optional<bool> decideWhere(const ast::WhereConstraint &w, const Env &env);
  Value callFunction(const ast::FnDecl &fn, ModuleInfo *module, ModelInstPtr self,
                     const std::vector<ast::GenericArg> *explicitArgs, std::vector<Arg> args,
                     Frame &caller, llvm::SMRange callRange, const std::string &selfPath = "");
  /// `returned`, when given, receives the value of the body's `return`.
  bool instantiateBody(const ast::FnDecl &fn, Env env, const std::vector<Value> &args,
                        Frame &caller, llvm::SMRange callRange, const std::string &label,
                        Value *returned = nullptr);
  std::string describeBindings(const ast::FnDecl &fn, const Env &env) const;
  /// " with " and describeBindings, or "" when the fn has no generics.
  std::string withBindings(const ast::FnDecl &fn, const Env &env) const;

  // ---- CheckExprs.cpp
  Value checkBlock(const ast::Block &block, Frame &f);
  Value annotated(const ast::TypeExpr &type, const ast::Expr &value, Value v, Frame &f);
  void checkStmt(const ast::Stmt &s, Frame &f);
  /// `name = e` where `name` is a member of the fn's model: a state's new
  /// value, or E0214 for a param.
  void assignState(const ast::AssignStmt &as, const ast::ParamDecl &p, const Value &v, Frame &f);
  /// Checks `e`; a tensor result carries the run-time sources of `e`'s
  /// operands (Frame::sources).
  Value expr(const ast::Expr &e, Frame &f);
  /// The value of `e` alone, without that bookkeeping.
  Value exprOf(const ast::Expr &e, Frame &f);
  Value lookupName(const std::string &name, llvm::SMRange range, Frame &f);
  Value binary(const ast::BinaryExpr &e, Frame &f);
  Value call(const ast::CallExpr &e, Frame &f);
  Value index(const ast::IndexExpr &e, Frame &f);
  Value member(const ast::MemberExpr &e, Frame &f);
  Local *findLocal(Frame &f, const std::string &name);
  void declareLocal(Frame &f, const ast::Ident &name, Value v, bool isVar);
  std::optional<TensorType> broadcast(const TensorType &a, const TensorType &b, Frame &f,
                                      llvm::SMRange at, llvm::StringRef op,
                                      const ast::Expr *lhs, const ast::Expr *rhs,
                                      const Value *lv = nullptr, const Value *rv = nullptr);
  /// Makes numbers meet tensors: a literal takes the tensor's dtype.
  bool unifyDtypes(Value &a, Value &b, Frame &f, llvm::SMRange at, llvm::StringRef op);
  std::vector<std::string> namesInScope(const Frame &f) const;
  void noteOrigin(DiagnosticBuilder &b, const ast::Expr *e, const Value &v);
  /// A note at the declaration of each input or weight `v` is computed
  /// from (at most three), for "... is computed at run time from ...".
  void noteSources(DiagnosticBuilder &b, const Value &v);
  /// E0409 at `at`, where a size is needed but `v` is written.
  void notASize(const Value &v, llvm::SMRange at);
  void addFlops(Frame &f, const Size &work);
  void notePeak(Frame &f, const std::vector<const Value *> &values, const Value &result);
  void logType(Frame &f, const ast::Expr &e, const Value &v);

  // ---- CheckBuiltins.cpp
  bool isBuiltin(llvm::StringRef name) const;
  Value callBuiltin(const std::string &name, const ast::CallExpr &e, std::vector<Arg> args,
                    Frame &f);
  Value matmul(const Value &a, const Value &b, Frame &f, const ast::BinaryExpr &e);
  std::optional<int64_t> constInt(const Value &v) const;
  std::optional<int64_t> normaliseAxis(int64_t axis, const TensorType &t, Frame &f,
                                       llvm::SMRange at);

  // ---- CheckEntries.cpp
  void checkEntries(ModuleInfo &m, CheckResult &result);
  void checkEntry(ModuleInfo &m, const ast::EntryDecl &entry, CheckResult &result);
  void countParams(const ModelInst &inst, const std::string &prefix, BucketReport &out,
                   std::map<const ast::ParamDecl *, uint64_t> &bytesByDecl,
                   const ast::ParamDecl *top = nullptr);
  void listParams(const ModelInst &inst, const std::string &prefix,
                  std::vector<std::string> &out);

  // ---- helpers
  template <typename... Args> DiagnosticBuilder error(DiagID id, llvm::SMRange r, Args &&...a) {
    return inner_.report(id, r, std::forward<Args>(a)...);
  }
  std::string here(llvm::SMLoc loc) const;
  std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates);

  DiagnosticEngine &diags_;
  DiagnosticEngine inner_;
  ContextConsumer context_;
  CheckOptions options_;
  /// Set when CheckOptions::lowerInto asks for IR (frontend/Lower*.cpp).
  std::unique_ptr<Lowering> lower_;
  std::vector<std::unique_ptr<ModuleInfo>> modules_;
  std::map<std::string, ModuleInfo *> modulesByPath_;
  std::map<std::string, ModelInstPtr> modelCache_;
  std::map<std::string, Instance> instances_;
  std::set<const ast::FnDecl *> failedDefinitions_;
  std::vector<const ast::FnDecl *> activeInstances_;
  /// Call graph from the definition checks: caller -> (callee, call site).
  std::map<const ast::FnDecl *, std::vector<std::pair<const ast::FnDecl *, llvm::SMRange>>>
      callGraph_;
  std::set<const ast::FnDecl *> recursive_;
  /// Models holding models: (container -> (held, the param holding it)).
  std::map<const ast::ModelDecl *, std::vector<std::pair<const ast::ModelDecl *, llvm::SMRange>>>
      containment_;
  std::set<const ast::ModelDecl *> selfContaining_;
  const ast::FnDecl *definingFn_ = nullptr; // while checking a definition
  /// While a model value is called: what it is called in the source and
  /// where its param is declared, so a mismatch can say where its sizes
  /// came from.
  std::string calleeText_;
  llvm::SMRange calleeOrigin_;
};

} // namespace lpu::check
