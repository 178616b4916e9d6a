// cse: two ops of the same kind, type, operands and attributes compute the
// same value (every op is pure), so the later one is replaced by the earlier,
// which keeps its location. Locations do not take part in the comparison.
// Floats in attributes compare bit for bit: constants 0.0 and -0.0 differ.
// The Return and the interface ops (input, param) are never merged; the
// verifier already forbids two inputs or params of one name.
#include "ir/passes/PassUtil.h"
#include "ir/passes/Passes.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/Support/raw_ostream.h>

#include <bit>

namespace lpu::ir {

namespace {

void appendAttr(llvm::raw_ostream &os, const Attr &attr) {
  os << attr.index() << ':';
  std::visit(
      [&](const auto &value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, double>) {
          os << std::bit_cast<uint64_t>(value);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (int64_t v : value)
            os << v << ',';
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          for (const std::string &v : value)
            os << v.size() << ':' << v << ',';
        } else if constexpr (std::is_same_v<T, std::string>) {
          os << value.size() << ':' << value;
        } else {
          os << value;
        }
      },
      attr);
}

class CSE : public Pass {
public:
  llvm::StringRef name() const override { return "cse"; }

  bool run(Function &fn) override {
    // The key spells out everything that decides the value; operands by
    // their position, which is unique in the function. Operands merged
    // earlier in the walk already read the survivor, so chains of
    // duplicates merge in one run.
    llvm::DenseMap<const Op *, size_t> position;
    llvm::StringMap<Op *> seen;
    return rewriteOps(fn, [&](Op &op, bool &) -> Op * {
      size_t index = position.size();
      position[&op] = index;
      if (op.kind() == OpKind::Return || op.kind() == OpKind::Input ||
          op.kind() == OpKind::Param)
        return nullptr;
      std::string key;
      llvm::raw_string_ostream os(key);
      os << static_cast<int>(op.kind()) << '|' << op.type().str() << '|';
      for (const Op *operand : op.operands())
        os << position.lookup(operand) << ',';
      for (const auto &[name, value] : op.attrs()) {
        os << '|' << name << '=';
        appendAttr(os, value);
      }
      os.flush();
      auto [it, inserted] = seen.try_emplace(key, &op);
      return inserted ? nullptr : it->second;
    });
  }
};

} // namespace

std::unique_ptr<Pass> createCSEPass() { return std::make_unique<CSE>(); }

} // namespace lpu::ir
