// Lowering's internals: the IR emission the checker calls while it
// instantiates an entry bucket with numbers. The checker decides every
// type; these hooks turn each checked operation into IR ops of that type.
// Not part of the frontend's interface (frontend/Lower.h is).
#pragma once

#include "frontend/CheckerImpl.h"
#include "ir/IR.h"

#include <map>

namespace lpu::check {

class Lowering {
public:
  Lowering(ir::Module &module, DiagnosticEngine &diags) : module_(module), diags_(diags) {}

  /// True between beginFunction and finishFunction.
  bool active() const { return fn_ != nullptr; }
  void beginFunction(const std::string &name,
                     std::vector<std::pair<std::string, int64_t>> bucket);
  /// Appends the Return of `returned` (of the entry's return type `ret`).
  /// A tuple's values are the entry's outputs in order, named after their
  /// fields (`out0`, `out1`, ... where unnamed); a single result is `out`.
  /// Ends the entry's function; `bucketDims` (when not empty) names the
  /// bucket dimensions the source writes at each axis of each result.
  void finishFunction(const Value &returned, const ResultType &ret, llvm::SMRange at,
                      const std::vector<std::vector<std::string>> &bucketDims = {});
  /// Drops the function being built (its entry failed to check).
  void abandonFunction();

  /// An entry's input; `bucketDims` (when not empty) names the bucket
  /// dimension the source writes at each axis ("" for a fixed one).
  ir::Op *input(const std::string &name, const TensorType &t, llvm::SMRange at,
                const std::vector<std::string> &bucketDims = {});
  /// The weight at `path`, made once per function.
  ir::Op *param(const std::string &path, const TensorType &t, llvm::SMRange at);
  /// The state at `path` as this function has left it so far: on first use,
  /// an `input` marked `state` (its value when the call starts).
  ir::Op *stateRead(const std::string &path, const TensorType &t, llvm::SMRange at);
  /// `path = value`: the state's value from here on, and at the end of the
  /// call (an output of the same name, listed in the return's `states`).
  void stateWrite(const std::string &path, ir::Op *value, llvm::SMRange at);
  /// `v` as an op of type `t`: a number or bool becomes a constant, a
  /// tensor is broadcast to t's shape when it differs.
  ir::Op *materialize(const Value &v, const TensorType &t, llvm::SMRange at);

  // ---- the operations; each sets `result.op` (or result's elements' ops)
  void unary(const ast::UnaryExpr &e, const Value &x, Value &result);
  void binary(const ast::BinaryExpr &e, const Value &l, const Value &r, Value &result);
  void matmul(const ast::BinaryExpr &e, const Value &a, const Value &b, Value &result);
  void convert(const ast::CallExpr &e, const Value &x, Value &result);
  void builtin(const std::string &name, const ast::CallExpr &e, const std::vector<Arg> &args,
               Value &result);
  void index(const ast::IndexExpr &e, const Value &base, const std::vector<Value> &idx,
             Value &result);

private:
  std::optional<ir::Type> irType(const TensorType &t, llvm::SMRange at);
  ir::Location location(llvm::SMLoc at) const;
  ir::Op *emit(ir::OpKind kind, ir::Type type, std::vector<ir::Op *> operands, llvm::SMRange at,
               std::vector<std::pair<std::string, ir::Attr>> attrs = {});
  ir::Op *constant(double value, const ir::Type &type, llvm::SMRange at);
  ir::Op *broadcastTo(ir::Op *x, const std::vector<int64_t> &shape, llvm::SMRange at);
  ir::Op *reshapeTo(ir::Op *x, const std::vector<int64_t> &shape, llvm::SMRange at);
  /// Operands of an elementwise op: each materialised and broadcast to the
  /// result's shape, with `dtype` (the operands' common dtype).
  std::vector<ir::Op *> elementwiseOperands(const std::vector<const Value *> &values,
                                            const std::string &dtype,
                                            const std::vector<int64_t> &shape, llvm::SMRange at);
  void cannotLower(llvm::SMRange at, const std::string &what, const std::string &why);
  ir::Op *matmulOps(ir::Op *a, ir::Op *b, const ir::Type &out, llvm::SMRange at);

  ir::Module &module_;
  DiagnosticEngine &diags_;
  ir::Function *fn_ = nullptr;
  bool failed_ = false; // a hook reported CannotLower in this function
  /// Errors in the engine when the function began, and those lowering
  /// added: any others are the checker's, whose consequences stay silent.
  unsigned errorsAtStart_ = 0, ownErrors_ = 0;
  std::unique_ptr<ir::Function> building_;
  std::map<std::string, ir::Op *> params_;
  /// Each state's current value, and the states written, in order.
  std::map<std::string, ir::Op *> states_;
  std::vector<std::string> written_;
};

} // namespace lpu::check
