#include "scheduler/Placer.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <tuple>

namespace lpu::scheduler {

using namespace backend;

namespace {
// Gather takes its slice's read port, scatter its write port.
bool isMemAccess(Opcode op) {
  return op == Opcode::Read || op == Opcode::Write || op == Opcode::Gather ||
         op == Opcode::Scatter;
}
/// `in` with only the fields its opcode uses: the tree keeps placement
/// hints in others (the SXM's side in `unit`, a gather's dtype), which the
/// program must not carry (its binary form is canonical).
Instr usedFields(const Instr &in) {
  Instr keep;
  keep.op = in.op;
  for (OperandKind k : opcodeInfo(in.op).operands)
    switch (k) {
    case OperandKind::DType: keep.dtype = in.dtype; break;
    case OperandKind::DType2: keep.dtype2 = in.dtype2; break;
    case OperandKind::Count: keep.count = in.count; break;
    case OperandKind::Delay: keep.delay = in.delay; break;
    case OperandKind::Slice: case OperandKind::Plane: case OperandKind::Link:
      keep.unit = in.unit;
      break;
    case OperandKind::Addr: case OperandKind::Acc:
      keep.addr = in.addr;
      keep.step = in.step;
      break;
    case OperandKind::Src0: keep.src0 = in.src0; break;
    case OperandKind::Src1: keep.src1 = in.src1; break;
    case OperandKind::Src2: keep.src2 = in.src2; break;
    case OperandKind::Dst: keep.dst = in.dst; break;
    }
  return keep;
}

} // namespace

int WorkTree::add(Instr instr, llvm::ArrayRef<int> inputs, int queue) {
  WorkNode n;
  n.instr = instr;
  n.inputs.assign(inputs.begin(), inputs.end());
  n.queue = queue;
  nodes.push_back(std::move(n));
  return int(nodes.size()) - 1;
}

int WorkTree::read(const std::vector<uint16_t> &planes, uint32_t addr) {
  Instr in;
  in.op = Opcode::Read;
  in.addr = addr;
  int n = add(in);
  nodes[n].planes.assign(planes.begin(), planes.end());
  return n;
}

int WorkTree::write(const std::vector<uint16_t> &planes, uint32_t addr, int value) {
  Instr in;
  in.op = Opcode::Write;
  in.addr = addr;
  int n = add(in, {value});
  nodes[n].planes.assign(planes.begin(), planes.end());
  return n;
}

Placer::Placer(const ChipDescription &chip, Schedule &schedule)
    : chip_(chip), schedule_(schedule), resources_(chip) {}

unsigned Placer::position(const Instr &in) const {
  switch (in.op) {
  case Opcode::Read: case Opcode::Write: case Opcode::Gather: case Opcode::Scatter:
    return chip_.slicePosition(in.unit);
  case Opcode::LoadWeights: case Opcode::InstallWeights: case Opcode::MatMul:
  case Opcode::AccRead:
    return chip_.planePosition(in.unit);
  case Opcode::Send: case Opcode::Receive:
    return chip_.linkPosition(in.unit);
  case Opcode::Shift: case Opcode::Rotate: case Opcode::Permute: case Opcode::Distribute:
  case Opcode::Transpose:
    // In a work tree an SXM instruction's unit picks its hemisphere (0 west,
    // 1 east); the recorded instruction drops it (usedFields: the queue
    // says where).
    return chip_.sxmPosition(in.unit != 0);
  default:
    return chip_.vxmPosition();
  }
}

unsigned Placer::resultWidth(const Instr &in) const {
  if (std::optional<tensor::ElementwiseOp> e = elementwiseOf(in.op))
    return tensor::isComparison(*e) ? 1 : streamWidth(in.dtype);
  switch (in.op) {
  case Opcode::Read: return 1;
  case Opcode::AccRead: return 4;
  case Opcode::Cvt: case Opcode::CvtTrunc: return streamWidth(in.dtype2);
  case Opcode::Write: case Opcode::LoadWeights: case Opcode::InstallWeights:
  case Opcode::MatMul: case Opcode::Scatter: case Opcode::Send:
    return 0;
  default:
    return streamWidth(in.dtype);
  }
}

unsigned Placer::operandWidth(const Instr &in, unsigned i) {
  const unsigned w = streamWidth(in.dtype);
  switch (in.op) {
  case Opcode::Write: return i == 0 ? 1 : 0;
  case Opcode::Gather: return i == 1 ? 2 : 0;
  case Opcode::Scatter: return i == 0 ? 1 : i == 1 ? 2 : 0;
  case Opcode::Select: return i == 0 ? 1 : w;
  case Opcode::Permute: case Opcode::Distribute: return i == 1 ? 2 : w;
  case Opcode::Transpose: return 16;
  case Opcode::Read: case Opcode::AccRead: case Opcode::InstallWeights: return 0;
  default: return w;
  }
}

Placer::QueueRange Placer::queueCandidates(const Instr &in) const {
  UnitKind unit = *opcodeInfo(in.op).unit;
  unsigned n = chip_.queues[unsigned(unit)];
  if (unit == UnitKind::Mem) {
    // Any MEM queue of the slice's hemisphere may drive it: start at the
    // slice's own index so that a slice's work mostly stays on one queue.
    unsigned half = n / 2;
    return QueueRange{chip_.isEastSlice(in.unit) ? half : 0, half, in.unit % half};
  }
  if (unit == UnitKind::C2c) {
    // A link belongs to one hemisphere; so do the queues that drive it.
    unsigned half = n / 2;
    bool east = in.unit >= chip_.c2cLinks / 2;
    return QueueRange{east ? half : 0, half, in.unit % half};
  }
  if (unit == UnitKind::Sxm) {
    // Only the queues of the SXM's own hemisphere may drive it.
    unsigned half = n / 2;
    return QueueRange{in.unit != 0 ? half : 0, half, 0};
  }
  return QueueRange{0, n, 0};
}

// Relative timing of a tree: every instruction's issue offset from the
// root's, per byte plane for reads and writes, and every value's stream
// segments.
struct Placer::Timed {
  struct Issue {
    int node;
    int plane; // byte plane of a read/write, -1 otherwise
    int64_t offset;
    Instr instr;
    int queue; // fixed queue or -1
    QueueRange candidates; // the queues to try (queue < 0)
  };
  struct Value {
    int producer;                 // node
    unsigned width;
    llvm::SmallVector<int64_t, 4> emit; // per byte: emission offset
    llvm::SmallVector<unsigned, 4> emitPos;
    llvm::SmallVector<int64_t, 4> last; // per byte: last read offset
    int dirNeeded = 0;            // StreamRef dir, or 0: either
  };
  llvm::SmallVector<Issue, 16> issues;
  llvm::SmallVector<Value, 16> values; // one per non-root node
  llvm::SmallVector<int, 16> valueOf; // node -> value index or -1
  int64_t minOffset = 0;
};

bool Placer::timeTree(const WorkTree &tree, Timed &timed) {
  const int n = int(tree.nodes.size());
  timed.valueOf.assign(n, -1);
  auto latency = [&](const Instr &in) { return int64_t(chip_.timingOf(in.op, in.dtype).latency); };
  auto dist = [](unsigned a, unsigned b) { return int64_t(a > b ? a - b : b - a); };

  // Consumers' read cycles decide producers' issue cycles, top down.
  llvm::SmallVector<int64_t, 16> issueOf(size_t(n), 0);
  llvm::SmallVector<int, 16> order{0};
  for (size_t k = 0; k < order.size(); ++k) {
    int c = order[k];
    const WorkNode &cn = tree.nodes[c];
    int64_t t = issueOf[c];
    bool writeNode = cn.instr.op == Opcode::Write;
    for (size_t i = 0; i < cn.inputs.size(); ++i) {
      int p = cn.inputs[i];
      const WorkNode &pn = tree.nodes[p];
      bool readNode = pn.instr.op == Opcode::Read;
      const unsigned width = readNode ? unsigned(pn.planes.size()) : resultWidth(pn.instr);
      // The consumer reads as many streams as its dtype says, wherever the
      // value came from: a narrower value leaves it streams with no data
      // on them (an f16 value into an f32 instruction). A lowering's bug,
      // refused here rather than put in a program the simulator rejects.
      if (width < (writeNode ? unsigned(cn.planes.size()) : operandWidth(cn.instr, unsigned(i)))) {
        failure_ = Failure::OperandWidth;
        return false;
      }
      if (timed.valueOf[p] >= 0)
        continue; // the same value read twice by one consumer (mul x x)
      Timed::Value v;
      v.producer = p;
      v.width = width;
      // Where and when each byte plane is consumed.
      if (writeNode) {
        // The write issues per plane once the value gets there: fix the
        // producer first (relative 0), the write planes follow.
        assert(!readNode && "a read feeding a write directly is not supported");
        int64_t emit = t;
        issueOf[p] = emit - latency(pn.instr);
        for (unsigned b = 0; b < v.width; ++b) {
          unsigned pos = chip_.slicePosition(cn.planes[b]);
          v.emit.push_back(emit);
          v.emitPos.push_back(position(pn.instr));
          v.last.push_back(emit + dist(pos, position(pn.instr)));
          int dir = pos > position(pn.instr) ? StreamRef::East
                    : pos < position(pn.instr) ? StreamRef::West : 0;
          if (dir)
            v.dirNeeded = dir;
        }
      } else {
        unsigned at = position(cn.instr);
        for (unsigned b = 0; b < v.width; ++b) {
          unsigned from = readNode ? chip_.slicePosition(pn.planes[b]) : position(pn.instr);
          v.emit.push_back(t - dist(at, from));
          v.emitPos.push_back(from);
          v.last.push_back(t);
          int dir = at > from ? StreamRef::East : at < from ? StreamRef::West : 0;
          if (dir) {
            assert((!v.dirNeeded || v.dirNeeded == dir) && "byte planes on both sides");
            v.dirNeeded = dir;
          }
        }
        if (!readNode)
          issueOf[p] = v.emit[0] - latency(pn.instr);
      }
      if (readNode) {
        // The same vector read for two consumers that want it emitted in
        // the same cycle (x read by both exp(x) and tanh(x)): one read,
        // whose value stays on its diagonal until the later of them reads
        // it (two reads would need the slice's port twice in that cycle).
        bool shared = false;
        for (size_t k = 0; k < timed.values.size() && !shared; ++k) {
          Timed::Value &o = timed.values[k];
          const WorkNode &on = tree.nodes[o.producer];
          if (on.instr.op == Opcode::Read && on.planes == pn.planes &&
              on.instr.addr == pn.instr.addr && o.emit == v.emit &&
              (!o.dirNeeded || !v.dirNeeded || o.dirNeeded == v.dirNeeded)) {
            for (unsigned b = 0; b < v.width; ++b)
              o.last[b] = std::max(o.last[b], v.last[b]);
            o.dirNeeded = o.dirNeeded ? o.dirNeeded : v.dirNeeded;
            timed.valueOf[p] = int(k);
            shared = true;
          }
        }
        if (shared)
          continue;
      }
      if (readNode)
        for (unsigned b = 0; b < v.width; ++b) {
          Instr in = pn.instr;
          in.unit = pn.planes[b];
          timed.issues.push_back({p, int(b), v.emit[b] - latency(in), in, pn.queue, {}});
        }
      timed.valueOf[p] = int(timed.values.size());
      timed.values.push_back(std::move(v));
      order.push_back(p);
    }
    if (writeNode) {
      const Timed::Value &v = timed.values[timed.valueOf[cn.inputs[0]]];
      for (unsigned b = 0; b < cn.planes.size(); ++b) {
        Instr in = cn.instr;
        in.unit = cn.planes[b];
        timed.issues.push_back({c, int(b), v.last[b], in, cn.queue, {}});
      }
    } else if (cn.instr.op != Opcode::Read) {
      timed.issues.push_back({c, -1, t, cn.instr, cn.queue, {}});
    }
  }
  // Computed once: tryAt runs for many cycles.
  for (Timed::Issue &is : timed.issues)
    if (is.queue < 0)
      is.candidates = queueCandidates(is.instr);
  // The root of a write tree has no cycle of its own: anchor on the first.
  for (const Timed::Issue &is : timed.issues)
    timed.minOffset = std::min(timed.minOffset, is.offset);
  return true;
}

std::optional<int> Placer::portClash(const Timed &timed) const {
  llvm::SmallVector<std::tuple<unsigned, bool, int64_t>, 16> uses;
  for (size_t k = 0; k < timed.issues.size(); ++k) {
    const Timed::Issue &is = timed.issues[k];
    if (!isMemAccess(is.instr.op))
      continue;
    const bool write = is.instr.op == Opcode::Write || is.instr.op == Opcode::Scatter;
    const auto use = std::make_tuple(unsigned(is.instr.unit), write, is.offset);
    uses.push_back(use);
    if (unsigned(std::count(uses.begin(), uses.end(), use)) <= (write ? chip_.memWritePorts : chip_.memReadPorts))
      continue;
    // The latest read among the accesses that take this port then.
    for (size_t j = k + 1; j-- > 0 && !write;) {
      const Timed::Issue &other = timed.issues[j];
      if (other.instr.op == Opcode::Read && unsigned(other.instr.unit) == std::get<0>(use) &&
          other.offset == is.offset)
        return other.node;
    }
    return -1;
  }
  return std::nullopt;
}

bool Placer::detour(WorkTree &tree, int read) {
  const unsigned width = unsigned(tree.nodes[size_t(read)].planes.size());
  Instr copy;
  copy.op = Opcode::Copy;
  copy.dtype = width == 1 ? DType::I8 : width == 2 ? DType::I16 : DType::I32;
  if (streamWidth(copy.dtype) != width)
    return false;
  for (size_t c = 0; c < tree.nodes.size(); ++c) {
    if (std::find(tree.nodes[c].inputs.begin(), tree.nodes[c].inputs.end(), read) ==
        tree.nodes[c].inputs.end())
      continue;
    const int k = tree.add(copy, {read});
    for (int &in : tree.nodes[c].inputs)
      if (in == read)
        in = k;
    return true;
  }
  return false;
}

std::optional<Placement> Placer::place(WorkTree tree, int64_t notBefore, int64_t rootNotBefore) {
  auto latency = [&](const Instr &in) { return int64_t(chip_.timingOf(in.op, in.dtype).latency); };
  // A read of a vector nothing writes yet (a value not received): no
  // cycle is late enough.
  if (notBefore >= kNotWrittenYet / 2 || rootNotBefore >= kNotWrittenYet / 2)
    return std::nullopt;
  for (const WorkNode &n : tree.nodes)
    if (n.notBefore >= kNotWrittenYet / 2)
      return std::nullopt;
  Timed timed;
  // More MEM accesses of one slice's read (or write) ports at one offset
  // than the slice has: no root cycle can ever fit the tree as it is. Two
  // reads of one slice for consumers at one depth (`(a < b) && m` beside
  // `a - b` with m and b on one slice): the later comes through a VXM
  // copy, a cycle earlier, as often as it takes; what that cannot mend
  // fails now instead of searching every cycle up to the horizon.
  for (unsigned detours = 0;; ++detours) {
    timed = Timed{};
    if (!timeTree(tree, timed))
      return std::nullopt;
    std::optional<int> clash = portClash(timed);
    if (!clash)
      break;
    if (*clash < 0 || detours == portDetours || !detour(tree, *clash)) {
      failure_ = Failure::PortTwice;
      return std::nullopt;
    }
  }
  int64_t root = std::max(rootNotBefore, notBefore - timed.minOffset);
  for (const Timed::Issue &is : timed.issues)
    root = std::max(root, tree.nodes[is.node].notBefore - is.offset);
  // However long what the tree needs stays taken (a slice's port that an
  // earlier op reads in every cycle for 200,000 of them), a later cycle
  // may fit: the search goes on while any of the tree's cycles lies at or
  // before the tables' horizon. Past it every table is free, so a tree
  // that does not fit there (two MXM instructions of one queue at one
  // offset) never will.
  while (!tryAt(tree, timed, root))
    if (root++ + timed.minOffset > resources_.horizon()) {
      failure_ = Failure::NoCycle;
      return std::nullopt;
    }
  Placement out;
  out.rootCycle = root;
  out.firstCycle = root + timed.minOffset;
  out.doneCycle = 0;
  out.lastLeafCycle = out.firstCycle;
  for (const Timed::Issue &is : timed.issues) {
    out.doneCycle = std::max(out.doneCycle, root + is.offset + latency(is.instr));
    if (is.node != 0 && tree.nodes[size_t(is.node)].inputs.empty())
      out.lastLeafCycle = std::max(out.lastLeafCycle, root + is.offset);
  }
  return out;
}

bool Placer::tryAt(const WorkTree &tree, const Timed &timed, int64_t root) {
  struct Taken {
    enum { Queue, Port, Stream } kind;
    UnitKind unit;
    unsigned index;
    int64_t cycle;
    unsigned issue;
    bool write;
    StreamSegment seg;
  };
  // A cheap test first, of each instruction alone against the tables
  // (queues and ports are bitmaps, streams a search): most cycles a busy
  // tree is tried at fail here. Only a necessary condition, so the cycle
  // found and what is reserved are those of the full test below.
  for (const Timed::Issue &is : timed.issues) {
    int64_t cycle = root + is.offset;
    if (cycle < 0)
      return false;
    const Instr &in = is.instr;
    UnitKind unit = *opcodeInfo(in.op).unit;
    if (isMemAccess(in.op) &&
        !resources_.portFree(in.unit, in.op == Opcode::Write || in.op == Opcode::Scatter, cycle))
      return false;
    unsigned issue = chip_.timingOf(in.op, in.dtype).issue;
    bool free = false;
    if (is.queue >= 0)
      free = resources_.queueFree(unit, unsigned(is.queue), cycle, issue);
    else
      for (unsigned i = 0; i < is.candidates.count && !free; ++i)
        free = resources_.queueFree(unit, is.candidates.at(i), cycle, issue);
    if (!free)
      return false;
  }
  llvm::SmallVector<Taken, 32> taken;
  const int64_t horizon = resources_.horizon();
  auto undo = [&] {
    resources_.restoreHorizon(horizon);
    for (const Taken &t : taken) {
      if (t.kind == Taken::Queue)
        resources_.setQueue(t.unit, t.index, t.cycle, t.issue, false);
      else if (t.kind == Taken::Port)
        resources_.setPort(t.index, t.write, t.cycle, false);
      else
        resources_.releaseStream(t.index, t.seg);
    }
    return false;
  };
  // Streams first: they are the scarcest and fail most often.
  llvm::SmallVector<StreamRef, 16> streamOf(timed.values.size());
  for (size_t vi = 0; vi < timed.values.size(); ++vi) {
    const Timed::Value &v = timed.values[vi];
    bool found = false;
    // A value used where it is made (VXM to VXM) may take either way:
    // alternate, so that a tree with many of them in one cycle leaves
    // streams in both directions for the values that must go one way.
    const bool westFirst = !v.dirNeeded && vi % 2;
    for (int dir : {int(westFirst ? StreamRef::West : StreamRef::East),
                    int(westFirst ? StreamRef::East : StreamRef::West)}) {
      if (v.dirNeeded && v.dirNeeded != dir)
        continue;
      for (unsigned id = 0; !found && id + v.width <= chip_.streamsPerDirection; ++id) {
        bool ok = true;
        for (unsigned b = 0; ok && b < v.width; ++b) {
          StreamSegment seg{uint8_t(dir), root + v.emit[b], v.emitPos[b], root + v.last[b]};
          ok = resources_.streamFree(id + b, seg);
        }
        if (!ok)
          continue;
        for (unsigned b = 0; b < v.width; ++b) {
          StreamSegment seg{uint8_t(dir), root + v.emit[b], v.emitPos[b], root + v.last[b]};
          resources_.reserveStream(id + b, seg);
          taken.push_back({Taken::Stream, UnitKind::Mem, id + b, 0, 0, false, seg});
        }
        streamOf[vi] = StreamRef{uint8_t(dir), uint8_t(id)};
        found = true;
      }
      if (found)
        break;
    }
    if (!found)
      return undo();
  }
  llvm::SmallVector<std::pair<QueueId, TimedInstr>, 16> chosen;
  for (const Timed::Issue &is : timed.issues) {
    int64_t cycle = root + is.offset;
    if (cycle < 0)
      return undo();
    Instr in = is.instr;
    UnitKind unit = *opcodeInfo(in.op).unit;
    unsigned issue = chip_.timingOf(in.op, in.dtype).issue;
    if (isMemAccess(in.op)) {
      bool write = in.op == Opcode::Write || in.op == Opcode::Scatter;
      if (!resources_.portFree(in.unit, write, cycle))
        return undo();
      resources_.setPort(in.unit, write, cycle, true);
      taken.push_back({Taken::Port, unit, in.unit, cycle, 0, write, {}});
    }
    int queue = -1;
    if (is.queue >= 0) {
      if (resources_.queueFree(unit, unsigned(is.queue), cycle, issue))
        queue = is.queue;
    } else {
      for (unsigned i = 0; i < is.candidates.count && queue < 0; ++i)
        if (resources_.queueFree(unit, is.candidates.at(i), cycle, issue))
          queue = int(is.candidates.at(i));
    }
    if (queue < 0)
      return undo();
    resources_.setQueue(unit, unsigned(queue), cycle, issue, true);
    taken.push_back({Taken::Queue, unit, unsigned(queue), cycle, issue, false, {}});
    // Streams: the node's own result, and its inputs.
    const WorkNode &node = tree.nodes[is.node];
    if (timed.valueOf[is.node] >= 0) {
      StreamRef s = streamOf[timed.valueOf[is.node]];
      if (is.plane >= 0)
        s.id = uint8_t(s.id + is.plane);
      in.dst = s;
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      StreamRef s = streamOf[timed.valueOf[node.inputs[i]]];
      if (is.plane >= 0)
        s.id = uint8_t(s.id + is.plane);
      (i == 0 ? in.src0 : i == 1 ? in.src1 : in.src2) = s;
    }
    in = usedFields(in);
    chosen.push_back({QueueId{unit, unsigned(queue)}, TimedInstr{cycle, in}});
  }
  for (auto &[q, t] : chosen) {
    schedule_.add(q, t.cycle, t.instr);
    schedule_.busy[unsigned(q.unit)] += chip_.timingOf(t.instr.op, t.instr.dtype).issue;
  }
  return true;
}

int64_t Placer::placeAlone(const Instr &instr, unsigned queue, int64_t notBefore) {
  UnitKind unit = *opcodeInfo(instr.op).unit;
  unsigned issue = chip_.timingOf(instr.op, instr.dtype).issue;
  int64_t c = std::max<int64_t>(notBefore, 0);
  while (!resources_.queueFree(unit, queue, c, issue))
    ++c;
  resources_.setQueue(unit, queue, c, issue, true);
  schedule_.add(QueueId{unit, queue}, c, instr);
  schedule_.busy[unsigned(unit)] += issue;
  return c;
}

} // namespace lpu::scheduler
