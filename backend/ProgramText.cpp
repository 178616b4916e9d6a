#include "backend/ProgramText.h"

#include <boost/spirit/home/x3.hpp>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>

#include <iterator>

namespace lpu::backend {

namespace x3 = boost::spirit::x3;

namespace {

std::string stepSuffix(int32_t step) {
  if (step == 0)
    return "";
  return (step > 0 ? "+" : "") + std::to_string(step);
}

std::string printDim(const Dim &d) { return d.name.empty() ? std::to_string(d.value) : d.name; }

/// One operand word of an instruction line, as X3 parsed it.
struct Token {
  char kind = 0; // e w s p l @ a # > d(type word)
  int64_t value = 0;
  int64_t step = 0;
  std::string word;
};

bool parseToken(llvm::StringRef text, Token &tok) {
  auto num = [&tok](char kind) {
    return [&tok, kind](auto &ctx) {
      tok.kind = kind;
      tok.value = int64_t(x3::_attr(ctx));
    };
  };
  auto stepAct = [&tok](auto &ctx) { tok.step = x3::_attr(ctx); };
  auto arrowAct = [&tok](auto &) { tok.kind = '>'; };
  auto wordAct = [&tok](auto &ctx) {
    tok.kind = 'd';
    tok.word = x3::_attr(ctx);
  };
  auto step = -(x3::int32[stepAct]);
  auto rule = x3::lit("->")[arrowAct] | (x3::lit('e') >> x3::uint32[num('e')]) |
              (x3::lit('w') >> x3::uint32[num('w')]) | (x3::lit('s') >> x3::uint32[num('s')]) |
              (x3::lit('p') >> x3::uint32[num('p')]) | (x3::lit('l') >> x3::uint32[num('l')]) |
              (x3::lit('@') >> x3::uint32[num('@')] >> step) |
              (x3::lit('a') >> x3::uint32[num('a')] >> step) | x3::uint32[num('#')] |
              (+x3::char_("a-z0-9"))[wordAct];
  const char *first = text.begin(), *last = text.end();
  return x3::parse(first, last, rule) && first == last;
}

/// Parses "[n,320]" (an empty "[]" is rank 0).
bool parseShape(llvm::StringRef text, std::vector<Dim> &shape) {
  auto numAct = [&shape](auto &ctx) { shape.push_back(Dim{int64_t(x3::_attr(ctx)), ""}); };
  auto nameAct = [&shape](auto &ctx) {
    auto range = x3::_attr(ctx);
    shape.push_back(Dim{0, std::string(range.begin(), range.end())});
  };
  auto ident = x3::raw[x3::char_("a-zA-Z_") >> *x3::char_("a-zA-Z0-9_")];
  auto dim = x3::uint32[numAct] | ident[nameAct];
  const char *first = text.begin(), *last = text.end();
  return x3::parse(first, last, '[' >> -(dim % ',') >> ']') && first == last;
}

bool parseUIntList(llvm::StringRef text, std::vector<uint16_t> &out) {
  auto act = [&out](auto &ctx) { out.push_back(x3::_attr(ctx)); };
  const char *first = text.begin(), *last = text.end();
  return x3::parse(first, last, x3::ushort_[act] % ',') && first == last;
}

bool parseIntList(llvm::StringRef text, std::vector<int64_t> &out) {
  auto act = [&out](auto &ctx) { out.push_back(x3::_attr(ctx)); };
  const char *first = text.begin(), *last = text.end();
  return x3::parse(first, last, x3::long_long[act] % ',') && first == last;
}

template <typename T> bool parseNumber(llvm::StringRef text, T &out) {
  const char *first = text.begin(), *last = text.end();
  if constexpr (sizeof(T) == 8)
    return x3::parse(first, last, x3::ulong_long, out) && first == last;
  else
    return x3::parse(first, last, x3::uint32, out) && first == last;
}

bool parseHex64(llvm::StringRef text, uint64_t &out) {
  const char *first = text.begin(), *last = text.end();
  return x3::parse(first, last, "0x" >> x3::uint_parser<uint64_t, 16>(), out) && first == last;
}

} // namespace

std::string printInstr(const Instr &in) {
  const OpcodeInfo &info = opcodeInfo(in.op);
  std::string s(info.mnemonic);
  for (OperandKind k : info.operands) {
    s += ' ';
    switch (k) {
    case OperandKind::DType: s += tensor::dtypeName(in.dtype); break;
    case OperandKind::DType2: s += tensor::dtypeName(in.dtype2); break;
    case OperandKind::Count: s += std::to_string(in.count); break;
    case OperandKind::Delay: s += std::to_string(in.delay); break;
    case OperandKind::Slice: s += "s" + std::to_string(in.unit); break;
    case OperandKind::Plane: s += "p" + std::to_string(in.unit); break;
    case OperandKind::Link: s += "l" + std::to_string(in.unit); break;
    case OperandKind::Addr: s += "@" + std::to_string(in.addr) + stepSuffix(in.step); break;
    case OperandKind::Acc: s += "a" + std::to_string(in.addr) + stepSuffix(in.step); break;
    case OperandKind::Src0: s += streamName(in.src0); break;
    case OperandKind::Src1: s += streamName(in.src1); break;
    case OperandKind::Src2: s += streamName(in.src2); break;
    case OperandKind::Dst: s += "-> " + streamName(in.dst); break;
    }
  }
  return s;
}

std::string printProgramText(const Program &p) {
  std::string out;
  out += "lpu-program " + std::to_string(1) + "\n";
  out += "target " + p.chipName + " " + llvm::utohexstr(p.chipFingerprint, true).insert(0, "0x") + "\n";
  out += "topology " + p.topology + " " + std::to_string(p.numChips) + "\n";
  for (const Entry &e : p.entries) {
    out += "entry " + e.name + "\n";
    for (const Bucket &b : e.buckets) {
      out += "  bucket";
      for (const BucketDim &d : b.dims)
        out += " " + d.name + "=" + std::to_string(d.value);
      out += "\n";
      for (const TensorPlacement &t : b.tensors) {
        // A state input or output is written `state-in` or `state-out`.
        std::string role = !t.state                       ? tensorRoleName(t.role).str()
                           : t.role == TensorRole::Input  ? std::string("state-in")
                           : t.role == TensorRole::Output ? std::string("state-out")
                                                          : tensorRoleName(t.role).str() + "?state";
        out += "    tensor " + role + " " + t.name + " " +
               tensor::dtypeName(t.dtype).str() + " [";
        for (size_t i = 0; i < t.shape.size(); ++i)
          out += (i ? "," : "") + printDim(t.shape[i]);
        out += "] chip " + std::to_string(t.chip) + " slices ";
        for (size_t i = 0; i < t.slices.size(); ++i)
          out += (i ? "," : "") + std::to_string(t.slices[i]);
        out += " addr " + std::to_string(t.addr) + " layout " + layoutName(t.layout).str();
        if (!t.perm.empty()) {
          out += " perm ";
          for (size_t i = 0; i < t.perm.size(); ++i)
            out += (i ? "," : "") + std::to_string(t.perm[i]);
        }
        if (t.chunkRows)
          out += " chunk " + std::to_string(t.chunkRows);
        if (!t.shard.empty()) {
          out += " shard ";
          for (size_t i = 0; i < t.shard.size(); ++i)
            out += (i ? "," : "") + std::to_string(t.shard[i]);
        }
        if (t.role == TensorRole::Constant) {
          static const char hex[] = "0123456789abcdef";
          out += " data ";
          for (uint8_t byte : t.data) {
            out += hex[byte >> 4];
            out += hex[byte & 15];
          }
        }
        out += "\n";
      }
      for (size_t c = 0; c < b.chips.size(); ++c) {
        out += "    chip " + std::to_string(c);
        if (const std::optional<SharedCode> &shared = b.chips[c].shares) {
          out += " shares " + std::to_string(shared->chip) + " delay " + std::to_string(shared->delay);
          for (size_t i = 0; i < shared->links.size(); ++i)
            out += (i ? "," : " links ") + std::to_string(shared->links[i].first) + ":" +
                   std::to_string(shared->links[i].second);
        }
        out += "\n";
        for (const Queue &q : b.chips[c].queues) {
          out += "      queue " + queueName(q) + "\n";
          for (const Instr &in : q.instrs)
            out += "        " + printInstr(in) + "\n";
        }
      }
    }
  }
  return out;
}

llvm::Expected<Program> parseProgramText(llvm::StringRef text, llvm::StringRef name) {
  Program p;
  unsigned lineNo = 0;
  auto fail = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   name + ":" + llvm::Twine(lineNo) + ": " + msg);
  };
  bool sawHeader = false, sawTarget = false;
  Entry *entry = nullptr;
  Bucket *bucket = nullptr;
  ChipCode *chip = nullptr;
  Queue *queue = nullptr;
  while (!text.empty()) {
    llvm::StringRef raw;
    std::tie(raw, text) = text.split('\n');
    ++lineNo;
    llvm::StringRef line = raw.split(';').first.trim();
    if (line.empty())
      continue;
    llvm::SmallVector<llvm::StringRef, 12> words;
    line.split(words, ' ', -1, false);
    for (auto &w : words)
      w = w.trim();
    llvm::StringRef key = words[0];
    if (!sawHeader) {
      unsigned version = 0;
      if (key != "lpu-program" || words.size() != 2 || !parseNumber(words[1], version))
        return fail("expected 'lpu-program 1' on the first line" +
                    llvm::Twine(name.endswith(".lpu") || name.endswith(".ir")
                                    ? " (a model runs with lpurun --reference, or compile it "
                                      "with lpuc -o first)"
                                    : ""));
      if (version != 1)
        return fail("program text version " + llvm::Twine(version) + ", this reader reads version 1");
      sawHeader = true;
      continue;
    }
    if (key == "target") {
      if (words.size() < 2 || words.size() > 3 ||
          (words.size() == 3 && !parseHex64(words[2], p.chipFingerprint)))
        return fail("expected 'target CHIPNAME [0xFINGERPRINT]'");
      p.chipName = words[1].str();
      if (!isProgramToken(p.chipName))
        return fail("bad chip name '" + words[1] + "'");
      sawTarget = true;
      continue;
    }
    if (key == "topology") {
      if (words.size() != 3 || !parseNumber(words[2], p.numChips))
        return fail("expected 'topology SPEC CHIPS'");
      p.topology = words[1].str();
      if (!isProgramToken(p.topology))
        return fail("bad topology '" + words[1] + "'");
      continue;
    }
    if (key == "entry") {
      if (words.size() != 2 || !isProgramToken(words[1]))
        return fail("expected 'entry NAME'");
      p.entries.push_back(Entry{words[1].str(), {}});
      entry = &p.entries.back();
      bucket = nullptr;
      chip = nullptr;
      queue = nullptr;
      continue;
    }
    if (key == "bucket") {
      if (!entry)
        return fail("'bucket' outside an entry");
      entry->buckets.emplace_back();
      bucket = &entry->buckets.back();
      chip = nullptr;
      queue = nullptr;
      for (size_t i = 1; i < words.size(); ++i) {
        auto [dn, dv] = words[i].split('=');
        BucketDim d{dn.str(), 0};
        uint64_t v = 0;
        if (!isProgramIdentifier(dn) || !parseNumber(dv, v) || v > uint64_t(INT64_MAX))
          return fail("expected NAME=VALUE, found '" + words[i] + "'");
        d.value = int64_t(v);
        bucket->dims.push_back(std::move(d));
      }
      continue;
    }
    if (key == "tensor") {
      if (!bucket || chip)
        return fail("'tensor' must come in a bucket before its first 'chip'");
      const char *usage = "expected 'tensor ROLE NAME DTYPE [SHAPE] chip N slices S,.. addr A "
                          "[layout rows|packed] [perm P,..] [chunk ROWS] [shard AXIS,START,FULL] [data HEX]'";
      if (words.size() < 5 || words.size() % 2 == 0)
        return fail(usage);
      TensorPlacement t;
      if (words[1] == "input")
        t.role = TensorRole::Input;
      else if (words[1] == "output")
        t.role = TensorRole::Output;
      else if (words[1] == "param")
        t.role = TensorRole::Param;
      else if (words[1] == "const")
        t.role = TensorRole::Constant;
      else if (words[1] == "state-in" || words[1] == "state-out") {
        t.role = words[1] == "state-in" ? TensorRole::Input : TensorRole::Output;
        t.state = true;
      } else
        return fail("tensor role must be input, output, param, const, state-in or state-out, "
                    "found '" + words[1] + "'");
      t.name = words[2].str();
      if (!isProgramToken(t.name))
        return fail("bad tensor name '" + words[2] + "'");
      auto dt = tensor::parseDTypeName(words[3]);
      if (!dt)
        return fail("unknown dtype '" + words[3] + "'");
      t.dtype = *dt;
      if (!parseShape(words[4], t.shape))
        return fail("bad shape '" + words[4] + "'");
      // The rest are KEY VALUE pairs in this order; "layout rows" may be left
      // out (rows is the default; packed is always written), and so may perm (as declared), chunk
      // (one chunk) and shard (the whole weight). A constant ends with "data HEX" (its bytes).
      static const char *const keys[] = {"chip",  "slices", "addr", "layout",
                                         "perm",  "chunk",  "shard", "data"};
      constexpr size_t kKeys = std::size(keys), kData = kKeys - 1;
      size_t next = 0;
      bool seen[kKeys] = {};
      for (size_t i = 5; i + 1 < words.size(); i += 2) {
        llvm::StringRef k = words[i], v = words[i + 1];
        size_t at = next;
        while (at < kKeys && k != keys[at])
          ++at;
        if (at == kKeys)
          return fail("unexpected '" + k + "' in a tensor line: " + usage);
        next = at + 1;
        seen[at] = true;
        bool ok = true;
        switch (at) {
        case 0: ok = parseNumber(v, t.chip); break;
        case 1: ok = parseUIntList(v, t.slices); break;
        case 2: ok = parseNumber(v, t.addr); break;
        case 3:
          if (v == "rows")
            t.layout = Layout::Rows;
          else if (v == "packed")
            t.layout = Layout::Packed;
          else
            return fail("unknown layout '" + v + "' (expected rows or packed)");
          break;
        case 4: {
          std::vector<uint16_t> perm;
          ok = parseUIntList(v, perm);
          for (uint16_t d : perm) {
            ok &= d < 256;
            t.perm.push_back(uint8_t(d));
          }
          if (!ok || !isPermutation(t.perm, t.shape.size()))
            return fail("perm " + v + " is not a permutation of the " +
                        llvm::Twine(t.shape.size()) + " dimensions of " + words[4]);
          if (t.perm.empty())
            return fail("perm " + v + ": a rank-0 tensor has no perm");
          break;
        }
        case 5:
          ok = parseNumber(v, t.chunkRows);
          if (ok && t.chunkRows == 0)
            return fail("chunk 0: a chunk holds at least one row (leave chunk out for one chunk)");
          break;
        case 6:
          // Its range is verifyProgram's to check (it needs the bucket).
          ok = parseIntList(v, t.shard);
          if (ok && t.shard.size() != 3)
            return fail("shard " + v + ": expected three numbers AXIS,START,FULL");
          break;
        case 7:
          if (v.size() % 2)
            return fail("bad constant data: an odd number of hex digits");
          for (size_t b = 0; b < v.size(); b += 2) {
            unsigned byte = 0;
            if (v.substr(b, 2).getAsInteger(16, byte))
              return fail("bad constant data: '" + v.substr(b, 2) + "' is not a hex byte");
            t.data.push_back(uint8_t(byte));
          }
          break;
        }
        if (!ok)
          return fail("bad " + k + " '" + v + "'");
      }
      if (!seen[0] || !seen[1] || !seen[2])
        return fail(usage);
      if (seen[kData] != (t.role == TensorRole::Constant))
        return fail("a const tensor, and only a const, ends with 'data HEX' (its bytes)");
      bucket->tensors.push_back(std::move(t));
      continue;
    }
    if (key == "chip") {
      unsigned idx = 0;
      if (!bucket)
        return fail("'chip' outside a bucket");
      const char *usage = "' (chips in order), or 'chip N shares CHIP delay CYCLES [links L:L,..]'";
      if ((words.size() != 2 && words.size() != 6 && words.size() != 8) ||
          !parseNumber(words[1], idx) || idx != bucket->chips.size())
        return fail("expected 'chip " + llvm::Twine(bucket->chips.size()) + usage);
      ChipCode code;
      if (words.size() > 2) {
        SharedCode shared;
        if (words[2] != "shares" || !parseNumber(words[3], shared.chip) || words[4] != "delay" ||
            !parseNumber(words[5], shared.delay) || (words.size() == 8 && words[6] != "links"))
          return fail("expected 'chip " + llvm::Twine(idx) + " shares CHIP delay CYCLES [links L:L,..]'");
        if (words.size() == 8) {
          llvm::SmallVector<llvm::StringRef, 8> pairs;
          words[7].split(pairs, ',');
          for (llvm::StringRef pair : pairs) {
            auto [from, to] = pair.split(':');
            unsigned f = 0, t = 0;
            if (!parseNumber(from, f) || !parseNumber(to, t) || f > 65535 || t > 65535)
              return fail("expected links as FROM:TO,.. (link numbers), found '" + pair + "'");
            shared.links.emplace_back(uint16_t(f), uint16_t(t));
          }
        }
        code.shares = std::move(shared);
      }
      bucket->chips.push_back(std::move(code));
      chip = &bucket->chips.back();
      queue = nullptr;
      continue;
    }
    if (key == "queue") {
      if (!chip)
        return fail("'queue' outside a chip");
      if (chip->shares)
        return fail("a chip that shares another's code has no queues of its own");
      if (words.size() != 2)
        return fail("expected 'queue UNITINDEX' (e.g. queue mem3)");
      Queue q;
      bool found = false;
      for (unsigned k = 0; k < kNumUnitKinds && !found; ++k) {
        llvm::StringRef rest = words[1];
        unsigned idx = 0;
        if (rest.consume_front(unitKindName(UnitKind(k))) && parseNumber(rest, idx) && idx < 65536) {
          q.unit = UnitKind(k);
          q.index = uint16_t(idx);
          found = true;
        }
      }
      if (!found)
        return fail("unknown queue '" + words[1] + "'");
      chip->queues.push_back(std::move(q));
      queue = &chip->queues.back();
      continue;
    }
    // Anything else is an instruction.
    auto op = parseMnemonic(key);
    if (!op)
      return fail("unknown instruction or directive '" + key + "'");
    if (!queue)
      return fail("instruction outside a queue");
    const OpcodeInfo &info = opcodeInfo(*op);
    Instr in;
    in.op = *op;
    size_t w = 1;
    auto expected = [&](llvm::StringRef what) {
      return fail("'" + info.mnemonic + "': expected " + what +
                  (w < words.size() ? (", found '" + words[w] + "'").str() : std::string(" at end of line")));
    };
    for (OperandKind k : info.operands) {
      Token tok;
      if (k == OperandKind::Dst) {
        if (w >= words.size() || !parseToken(words[w], tok) || tok.kind != '>')
          return expected("'->'");
        ++w;
        tok = Token{};
      }
      if (w >= words.size() || !parseToken(words[w], tok))
        return expected("an operand");
      switch (k) {
      case OperandKind::DType:
      case OperandKind::DType2: {
        auto dt = tok.kind == 'd' ? tensor::parseDTypeName(tok.word) : std::nullopt;
        if (!dt)
          return expected("a dtype");
        (k == OperandKind::DType ? in.dtype : in.dtype2) = *dt;
        break;
      }
      case OperandKind::Count:
      case OperandKind::Delay:
        if (tok.kind != '#')
          return expected("a number");
        (k == OperandKind::Count ? in.count : in.delay) = uint32_t(tok.value);
        break;
      case OperandKind::Slice:
      case OperandKind::Plane:
      case OperandKind::Link: {
        char want = k == OperandKind::Slice ? 's' : k == OperandKind::Plane ? 'p' : 'l';
        if (tok.kind != want || tok.value > 65535)
          return expected(k == OperandKind::Slice ? "a slice (s12)"
                          : k == OperandKind::Plane ? "a plane (p1)"
                                                    : "a link (l3)");
        in.unit = uint16_t(tok.value);
        break;
      }
      case OperandKind::Addr:
      case OperandKind::Acc:
        if (tok.kind != (k == OperandKind::Addr ? '@' : 'a'))
          return expected(k == OperandKind::Addr ? "an address (@100 or @100+1)"
                                                 : "an accumulator row (a0 or a0+1)");
        in.addr = uint32_t(tok.value);
        in.step = int32_t(tok.step);
        break;
      case OperandKind::Src0:
      case OperandKind::Src1:
      case OperandKind::Src2:
      case OperandKind::Dst: {
        if ((tok.kind != 'e' && tok.kind != 'w') || tok.value > 255)
          return expected("a stream (e3 or w3)");
        StreamRef s{uint8_t(tok.kind == 'e' ? StreamRef::East : StreamRef::West), uint8_t(tok.value)};
        (k == OperandKind::Src0   ? in.src0
         : k == OperandKind::Src1 ? in.src1
         : k == OperandKind::Src2 ? in.src2
                                  : in.dst) = s;
        break;
      }
      }
      ++w;
    }
    if (w != words.size())
      return fail("'" + info.mnemonic + "': unexpected '" + words[w] + "'");
    queue->instrs.push_back(in);
  }
  if (!sawHeader)
    return fail("empty program text (expected 'lpu-program 1')");
  if (!sawTarget)
    return fail("missing 'target CHIPNAME [0xFINGERPRINT]'");
  return p;
}

} // namespace lpu::backend
