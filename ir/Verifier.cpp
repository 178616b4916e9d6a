#include "ir/Verifier.h"

#include "support/Tensor.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringSet.h>

#include <set>

namespace lpu::ir {

namespace {

class FunctionVerifier {
public:
  explicit FunctionVerifier(const Function &fn) : fn_(fn) {}

  std::vector<VerifyError> run() {
    for (size_t i = 0; i < fn_.ops().size(); ++i)
      position_[fn_.ops()[i].get()] = i;
    for (size_t i = 0; i < fn_.ops().size(); ++i)
      verifyOp(*fn_.ops()[i], i);
    if (!fn_.terminator())
      errors_.push_back({nullptr, {}, "func @" + fn_.name() + " does not end with a return"});
    return std::move(errors_);
  }

private:
  const Function &fn_;
  llvm::DenseMap<const Op *, size_t> position_;
  llvm::StringSet<> inputNames_, paramPaths_;
  /// The paths of every param of the function (verifyObserve's, filled on
  /// first use).
  std::set<std::string> paramPathsInFn_;
  /// The first param of each path: every other must read the same weight.
  llvm::StringMap<std::pair<const Op *, size_t>> firstParam_;
  std::vector<VerifyError> errors_;

  void error(const Op &op, std::string message) {
    errors_.push_back({&op, op.loc(), mnemonic(op.kind()).str() + ": " + std::move(message)});
  }

  /// Operands defined earlier in this function; false when any is not.
  bool verifyOperands(const Op &op, size_t index) {
    bool ok = true;
    int count = operandCount(op.kind());
    if (count >= 0 && op.operands().size() != size_t(count)) {
      error(op, "expected " + std::to_string(count) + " operand" + (count == 1 ? "" : "s") +
                    ", got " + std::to_string(op.operands().size()));
      ok = false;
    }
    for (size_t i = 0; i < op.operands().size(); ++i) {
      const Op *operand = op.operand(i);
      std::string which = "operand " + std::to_string(i);
      if (!operand) {
        error(op, which + " is null");
        ok = false;
        continue;
      }
      auto it = position_.find(operand);
      if (operand == &op) {
        error(op, which + " is the op's own result");
        ok = false;
      } else if (it == position_.end()) {
        error(op, which + " is not defined in func @" + fn_.name());
        ok = false;
      } else if (it->second > index) {
        error(op, which + " is defined after its use");
        ok = false;
      } else if (operand->kind() == OpKind::Return) {
        error(op, which + " is a return, which has no result");
        ok = false;
      }
    }
    return ok;
  }

  void verifyName(const Op &op, llvm::StringRef attr, llvm::StringSet<> &seen, int64_t chip = 0,
                  const std::string &part = "") {
    auto value = op.stringAttr(attr);
    if (!value)
      error(op, "missing string attribute '" + attr.str() + "'");
    else if (value->empty())
      error(op, "attribute '" + attr.str() + "' is empty");
    else if (!seen.insert(*value + (chip ? "@" + std::to_string(chip) : "") + part).second)
      error(op, attr.str() + " \"" + *value + "\" is used twice" +
                    (chip ? " on chip " + std::to_string(chip) : ""));
  }

  static std::string shardKey(const Op &op) {
    std::string key;
    if (auto v = op.intsAttr("shard"))
      for (int64_t x : *v)
        key += "/" + std::to_string(x);
    return key;
  }

  /// `shard = [axis, start, full]` (a param's slice of its weight, see
  /// ir::Shard), and the whole weight the same for every param of a path.
  void verifyShard(const Op &op, size_t index) {
    const Attr *attr = op.attr("shard");
    const bool stateInput = op.kind() == OpKind::Input && op.boolAttr("state").value_or(false);
    if (attr && op.kind() != OpKind::Param && !stateInput) {
      error(op, "only a param or a state input has a shard (attribute 'shard')");
      return;
    }
    if (op.kind() != OpKind::Param && !stateInput)
      return;
    if (attr) {
      const auto *v = std::get_if<std::vector<int64_t>>(attr);
      if (!v || v->size() != 3) {
        error(op, "attribute 'shard' must be three integers [axis, start, full]");
        return;
      }
      const int64_t axis = (*v)[0], start = (*v)[1], full = (*v)[2];
      const std::string which = "shard [" + std::to_string(axis) + ", " + std::to_string(start) +
                                ", " + std::to_string(full) + "]";
      if (axis < 0 || uint64_t(axis) >= op.type().rank()) {
        error(op, which + ": axis " + std::to_string(axis) + " is not an axis of " +
                      op.type().str());
        return;
      }
      const int64_t size = op.type().shape[size_t(axis)];
      if (start < 0) {
        error(op, which + ": the start " + std::to_string(start) + " is negative");
        return;
      }
      if (full < 0 || start > full || size > full - start) {
        error(op, which + ": elements " + std::to_string(start) + " to " + std::to_string(start) +
                      " + " + std::to_string(size) + " of axis " + std::to_string(axis) +
                      " are not inside the " + (stateInput ? "state" : "weight") + "'s " +
                      std::to_string(full));
        return;
      }
      Type whole = fullType(op);
      if (auto count = tensor::checkedElementCount(whole.shape, whole.dtype); !count) {
        llvm::consumeError(count.takeError());
        error(op, which + ": the weight " + whole.str() + " is too large");
        return;
      }
    }
    if (stateInput)
      return;
    std::string path = op.stringAttr("path").value_or("");
    if (path.empty())
      return;
    auto [it, fresh] = firstParam_.try_emplace(path, &op, index);
    if (fresh || it->second.first->chip() == op.chip())
      return; // twice on one chip: verifyName's error
    const Type mine = fullType(op), theirs = fullType(*it->second.first);
    if (mine != theirs)
      error(op, "path \"" + path + "\" is a weight " + mine.str() + " here, but " +
                    theirs.str() + " at %" + std::to_string(it->second.second) +
                    ": the params of one path read one weight");
  }

  /// A value read on another chip than its own crosses through a transfer
  /// (the return collects outputs from every chip).
  void verifyChips(const Op &op) {
    if (const Attr *chip = op.attr("chip")) {
      if (!std::holds_alternative<int64_t>(*chip) || std::get<int64_t>(*chip) < 0 ||
          std::get<int64_t>(*chip) >= kMaxChips)
        error(op, "attribute 'chip' must be a chip number (an integer from 0 to " + std::to_string(kMaxChips - 1) +
                      ")");
      if (op.kind() == OpKind::Transfer || op.kind() == OpKind::Return)
        error(op, "has no attribute 'chip' (a transfer's chip is its 'to')");
    }
    if (op.kind() == OpKind::Return)
      return;
    int64_t here = op.kind() == OpKind::Transfer ? op.intAttr("from").value_or(0) : op.chip();
    for (size_t i = 0; i < op.operands().size(); ++i)
      if (int64_t there = op.operand(i)->chip(); there != here)
        error(op, "operand " + std::to_string(i) + " is on chip " + std::to_string(there) +
                      ", the op reads on chip " + std::to_string(here) +
                      ": a value crosses chips only through a transfer");
  }

  /// `states = ["path", ..]`: outputs that are a state's value when the
  /// call ends, each one of the names, and of the type of the state's
  /// input. `shards`: three integers per output, [axis, start, full] for
  /// a state's slice (its name then names every slice), [-1, 0, 0] for a
  /// whole output.
  void verifyStates(const Op &ret) {
    auto names = ret.stringsAttr("names").value_or(std::vector<std::string>{});
    std::vector<std::string> states;
    if (ret.attr("states")) {
      auto listed = ret.stringsAttr("states");
      if (!listed) {
        error(ret, "attribute 'states' must be a list of strings");
        return;
      }
      states = *listed;
    }
    std::vector<std::optional<Shard>> shards(ret.operands().size());
    if (const Attr *attr = ret.attr("shards")) {
      const auto *v = std::get_if<std::vector<int64_t>>(attr);
      if (!v || v->size() != 3 * ret.operands().size()) {
        error(ret, "attribute 'shards' must be three integers per output");
        return;
      }
      for (size_t i = 0; i < ret.operands().size(); ++i) {
        const int64_t axis = (*v)[3 * i], start = (*v)[3 * i + 1], full = (*v)[3 * i + 2];
        if (axis == -1)
          continue;
        const std::string name = i < names.size() ? names[i] : "out" + std::to_string(i);
        const Type &type = ret.operand(i)->type();
        if (!llvm::is_contained(states, name)) {
          error(ret, "output " + std::to_string(i) + " (\"" + name +
                         "\") has a shard but is not a state");
          continue;
        }
        if (axis < 0 || uint64_t(axis) >= type.rank() || start < 0 ||
            start > full || type.shape[size_t(axis)] > full - start) {
          error(ret, "output " + std::to_string(i) + " (\"" + name + "\"): shard [" +
                         std::to_string(axis) + ", " + std::to_string(start) + ", " +
                         std::to_string(full) + "] is not a slice of " + type.str());
          continue;
        }
        shards[i] = Shard{axis, start, full};
      }
    }
    for (size_t i = 0; i < names.size() && i < shards.size(); ++i)
      if (std::count(names.begin(), names.end(), names[i]) > 1 && !shards[i])
        error(ret, "output name \"" + names[i] + "\" is used twice (only a state's shards share a name)");
    for (const std::string &s : states) {
      if (!llvm::is_contained(names, s)) {
        error(ret, "state \"" + s + "\" is not one of the outputs' names");
        continue;
      }
      if (std::count(states.begin(), states.end(), s) > 1) {
        error(ret, "state \"" + s + "\" is listed twice");
        continue;
      }
      for (size_t i = 0; i < names.size() && i < ret.operands().size(); ++i) {
        if (names[i] != s)
          continue;
        Type written = ret.operand(i)->type();
        if (shards[i])
          written.shape[size_t(shards[i]->axis)] = shards[i]->full;
        for (const auto &op : fn_.ops())
          if (op->kind() == OpKind::Input && op->stringAttr("name") == s &&
              op->boolAttr("state").value_or(false) && fullType(*op) != written)
            error(ret, "state \"" + s + "\" is read as " + fullType(*op).str() +
                           " but written as " + written.str());
      }
    }
  }

  /// A quantize's division tagged for calibration (docs/ir.md,
  /// "Attributes"): `observe` is the path of the scale param the division
  /// divides by, then maybe that of a zero point param; `observe_zero` a
  /// fixed zero point of i8 (with no zero point param); `observe_axis` an
  /// axis of the result (a per-channel scale). Called once the operands
  /// are known to be good.
  void verifyObserve(const Op &op) {
    const Attr *observe = op.attr("observe");
    const Attr *zero = op.attr("observe_zero");
    const Attr *axis = op.attr("observe_axis");
    if (!observe) {
      if (zero || axis)
        error(op, std::string("attribute '") + (zero ? "observe_zero" : "observe_axis") +
                      "' needs an attribute 'observe'");
      return;
    }
    if (op.kind() != OpKind::Div) {
      error(op, "only a div has an attribute 'observe' (a quantize's division)");
      return;
    }
    const auto *paths = std::get_if<std::vector<std::string>>(observe);
    if (!paths || paths->empty() || paths->size() > 2) {
      error(op, "attribute 'observe' must be one or two param paths (the scale, then the "
                "zero point)");
      return;
    }
    if (paramPathsInFn_.empty())
      for (const auto &other : fn_.ops())
        if (other->kind() == OpKind::Param)
          paramPathsInFn_.insert(other->stringAttr("path").value_or(""));
    bool ok = true;
    for (size_t i = 0; i < paths->size(); ++i) {
      const std::string &path = (*paths)[i];
      const char *role = i == 0 ? "scale" : "zero point";
      if (path.empty() || !paramPathsInFn_.count(path)) {
        error(op, std::string("observe: the ") + role + " \"" + path +
                      "\" is not the path of a param");
        ok = false;
      }
    }
    if (!ok)
      return;
    if (op.type().dtype != DType::F32)
      error(op, "observe: a quantize divides f32, not " + op.type().str());
    if (paths->size() == 2 && (*paths)[0] == (*paths)[1])
      error(op, "observe: \"" + (*paths)[0] + "\" is both the scale and the zero point");
    else if (!readsParam(op.operand(1), (*paths)[0]))
      error(op, "observe: the divisor does not read the scale \"" + (*paths)[0] + "\"");
    if (zero) {
      const auto *z = std::get_if<int64_t>(zero);
      if (!z || *z < -128 || *z > 127)
        error(op, "attribute 'observe_zero' must be an integer from -128 to 127 (an i8 zero "
                  "point)");
      else if (paths->size() == 2)
        error(op, "observe: a zero point param and an 'observe_zero' both");
    }
    if (axis) {
      const auto *a = std::get_if<int64_t>(axis);
      if (!a || *a < 0 || uint64_t(*a) >= op.type().rank())
        error(op, "attribute 'observe_axis' must be an axis of " + op.type().str());
    }
  }

  void verifyOp(const Op &op, size_t index) {
    if (op.parent() != &fn_)
      error(op, "belongs to another function");
    if (op.kind() == OpKind::Return && index + 1 != fn_.ops().size())
      error(op, "must be the last op of the function");
    switch (op.kind()) {
    case OpKind::Input:
      verifyName(op, "name", inputNames_, op.chip());
      if (const Attr *state = op.attr("state"); state && !std::holds_alternative<bool>(*state))
        error(op, "attribute 'state' must be true or false");
      break;
    case OpKind::Return:
      verifyStates(op);
      break;
    case OpKind::Param:
      // A weight (an input, above) is placed once per chip that reads it.
      // Different shards of one weight may share a chip (a matmul split by
      // a weight's columns, another by its rows).
      verifyName(op, "path", paramPaths_, op.chip(), shardKey(op));
      break;
    case OpKind::Constant: {
      const Attr *value = op.attr("value");
      bool numeric = value && (std::holds_alternative<int64_t>(*value) ||
                               std::holds_alternative<double>(*value));
      bool boolean = value && std::holds_alternative<bool>(*value);
      if (!numeric && !(boolean && op.type().dtype == DType::Bool))
        error(op, op.type().dtype == DType::Bool
                      ? "needs a numeric or bool attribute 'value'"
                      : "needs a numeric attribute 'value'");
      break;
    }
    default:
      break;
    }
    verifyShard(op, index);
    if (const Attr *fusion = op.attr("fusion")) {
      if (!isElementwise(op.kind()))
        error(op, "only elementwise ops belong to a fusion group");
      else if (!std::holds_alternative<int64_t>(*fusion))
        error(op, "attribute 'fusion' must be an integer");
    }
    if (!verifyOperands(op, index))
      return;
    verifyChips(op);
    verifyObserve(op);
    std::vector<Type> types;
    for (const Op *operand : op.operands())
      types.push_back(operand->type());
    auto inferred = inferType(op.kind(), types, op.attrs(), &op.type());
    if (auto *message = std::get_if<std::string>(&inferred)) {
      // inferType's messages already start with the mnemonic.
      errors_.push_back({&op, op.loc(), *message});
      return;
    }
    const Type &type = std::get<Type>(inferred);
    if (op.kind() != OpKind::Return && type != op.type())
      error(op, "result type " + op.type().str() + " differs from the inferred " + type.str());
  }
};

std::string funcLabel(const Function &fn) {
  std::string out = "func @" + fn.name();
  if (!fn.bucket().empty()) {
    out += '<';
    for (size_t i = 0; i < fn.bucket().size(); ++i)
      out += (i ? ", " : "") + fn.bucket()[i].first + " = " +
             std::to_string(fn.bucket()[i].second);
    out += '>';
  }
  return out;
}

} // namespace

std::vector<VerifyError> verify(const Function &fn) { return FunctionVerifier(fn).run(); }

std::vector<VerifyError> verify(const Module &module) {
  std::vector<VerifyError> errors;
  for (const auto &fn : module.functions) {
    auto more = verify(*fn);
    errors.insert(errors.end(), std::make_move_iterator(more.begin()),
                  std::make_move_iterator(more.end()));
  }
  return errors;
}

std::string formatErrors(const std::vector<VerifyError> &errors, const Function *fn) {
  std::string out;
  for (const VerifyError &e : errors) {
    if (e.loc.known())
      out += e.loc.str() + ": ";
    out += "error: " + e.message;
    const Function *in = fn ? fn : e.op ? e.op->parent() : nullptr;
    if (in)
      out += " (in " + funcLabel(*in) + ")";
    out += '\n';
  }
  return out;
}

} // namespace lpu::ir
