// Row sums on the MXM: a float sum across a row's lanes whose terms f16
// holds exactly (a layer norm's mean of its f16 input, widened) is a
// matmul by a plane of ones. The plane adds a row's products in ascending
// k in fp32, each addition rounded, and a row longer than a vector goes on
// adding into the same accumulator row: exactly the reference's sequential
// sum, so the result is bit-exact, and every output lane holds it (a lane
// broadcast, as acrossLanes leaves it). The SXM folds it replaces put every
// leaf's f32 vector on the streams; here a row costs one mm per vector.
// Softmax sums its exponentials the same way, each f32 vector as two f16
// (`split`: about 22 of its 24 bits), and attention's packed rows by
// segments (block-diagonal ones: each lane sums its own segment).
#include "scheduler/lower/Reduce.h"

namespace lpu::scheduler::reduce {

using namespace backend;


bool exactInF16(const ir::Op &src) {
  if (src.type().dtype == DType::F16)
    return true;
  return src.kind() == ir::OpKind::Convert && src.type().dtype == DType::F32 &&
         src.operand(0)->type().dtype == DType::F16;
}

llvm::Error sumRowsOnMxm(const ir::Op &op, LoweringContext &ctx, const TensorView &in,
                         const LaneFinish &finish, int64_t *path, const MxmSum &how) {
  const ChipDescription &chip = ctx.chip();
  const unsigned lanes = chip.lanes;
  MxmPlanes mxm(ctx);
  const int64_t segment = how.segment, segments = segment ? lanes / segment : 1;
  const int64_t vpr = segment ? 1 : in.vecsPerRow;
  const int64_t mms = in.rows * vpr * (how.split ? 2 : 1);
  const unsigned most = how.planes ? std::min(how.planes, mxm.count()) : mxm.count();
  // Planes the rows are dealt to: at least knobs.minSumPlanes (rows come
  // from a matmul at one per 4 cycles of its plane, and take an mm per
  // vector each), one more per knobs.mmsPerPlane mm of work past that
  // (docs/scheduler.md, "Knobs", has the figures). Attention's sums take
  // the planes its context leaves (SoftmaxHow::sumPlanes).
  const unsigned planes = unsigned(std::min<int64_t>(
      most, std::max<int64_t>(ctx.knobs.minSumPlanes,
                              (mms + ctx.knobs.mmsPerPlane - 1) / ctx.knobs.mmsPerPlane)));
  // Weight rows: ones for every lane a row's vector may hold. Lanes past
  // the row's end are zeroed on the way in (they may hold NaN, and
  // NaN * 0 is NaN), so one set of ones serves every vector of a row.
  // With segments, weight row k has ones in its own segment's lanes only
  // (one constant row per segment): each output lane sums its segment.
  const int64_t valid = segment ? segments * segment : std::min<int64_t>(in.cols, lanes);
  const unsigned rowsK = unsigned(valid);
  std::vector<uint8_t> ones(size_t(segments * lanes) * 2, 0);
  for (int64_t g = 0; g < segments; ++g)
    for (int64_t l = segment ? g * segment : 0; l < (segment ? (g + 1) * segment : lanes); ++l)
      encodeElement(DType::F16, 1.0, ones.data() + 2 * (g * lanes + l));
  // Planes that hold these ones from the sum before (a layer norm's
  // variance after its mean) come first: they load nothing, and the other
  // planes' weight buffers stay free for the next matmul's weights, which
  // load from one slice group, a row a cycle for every plane together
  // (ones loaded there for the variance held the feed-forward block's
  // loads back: examples/transformer.lpu at S=64 took 8,116 cycles so,
  // 7,768 with the mean's planes).
  const int64_t key = 1 + valid * int64_t(lanes + 1) + segment;
  std::vector<unsigned> order;
  for (unsigned k = 0; k < mxm.count(); ++k)
    order.push_back(mxm.plane(k));
  std::stable_partition(order.begin(), order.end(), [&](unsigned p) { return mxm.state(p).heldOnes == key; });
  std::vector<unsigned> used;
  std::vector<PlaneWork> work(mxm.count());
  std::vector<uint16_t> avoid = in.allSlices();
  for (unsigned k = 0; k < planes; ++k) {
    const unsigned p = order[k];
    if (mxm.state(p).heldOnes == key) {
      used.push_back(p);
      continue;
    }
    // A copy of the ones per plane, each on slices of its own: a plane
    // loads one weight row per cycle, and they all load at once.
    auto one = ctx.constant(op, DType::F16, segments, lanes, ones, avoid);
    if (!one)
      return one.takeError();
    avoid.insert(avoid.end(), one->allSlices().begin(), one->allSlices().end());
    PlaneState &st = mxm.state(p);
    int64_t lastLw = st.lastIw;
    for (unsigned r = 0; r < rowsK; ++r) {
      WorkTree tree = mxm.loadWeights(p);
      const int64_t g = segment ? r / segment : 0;
      tree.nodes[0].inputs = {tree.read(one->slices(g), one->address(g, 0))};
      std::optional<Placement> placed = ctx.placer().place(std::move(tree), 0, lastLw + 1);
      if (!placed)
        return cannotPlace(op, ctx);
      lastLw = placed->rootCycle;
    }
    mxm.install(p, lastLw);
    st.heldOnes = key;
    used.push_back(p);
    work[p].installs = 1;
  }
  int64_t prev = 0;
  ShortestSpan mmSpan, accSpan; // for the path
  for (int64_t r = 0; r < in.rows; ++r) {
    const unsigned p = used[size_t(r) % planes];
    PlaneState &st = mxm.state(p);
    const int64_t m = (r / planes) % mxm.accRows();
    int64_t done = 0;
    // An f16 value of the vector: itself (or widened f16, exact), or with
    // `split` the f16 nearest an f32 value and then the f16 nearest what
    // that leaves.
    for (int64_t v = 0; v < vpr; ++v)
      for (int part = 0; part < (how.split ? 2 : 1); ++part) {
        WorkTree tree = mxm.matmul(p, m);
        int x = tree.read(in.slices(r), in.address(r, v));
        tree.nodes[size_t(x)].notBefore = in.readyAt(r, v);
        if (in.dtype != DType::F16) {
          int hi = tree.add(vxm(Opcode::Cvt, in.dtype, DType::F16), {x});
          if (part == 1) {
            int back = tree.add(vxm(Opcode::Cvt, DType::F16, in.dtype), {hi});
            int y = tree.read(in.slices(r), in.address(r, v));
            tree.nodes[size_t(y)].notBefore = in.readyAt(r, v);
            hi = tree.add(vxm(Opcode::Cvt, in.dtype, DType::F16),
                          {tree.add(vxm(Opcode::Sub, in.dtype), {y, back})});
          }
          x = hi;
        }
        const int64_t lanesHere = std::min<int64_t>(valid, in.cols - v * lanes);
        if (lanesHere < int64_t(lanes))
          x = zeroTail(tree, x, unsigned(lanesHere), p, mxm.count(), lanes);
        tree.nodes[0].inputs = {x};
        const int64_t rootNotBefore = std::max({st.lastIw + mxm.iwLatency(), st.lastMm + 1,
                                                v == 0 && part == 0 ? st.accFree[size_t(m)] : int64_t(0)});
        std::optional<Placement> placed = ctx.placer().place(std::move(tree), 0, rootNotBefore);
        if (!placed)
          return cannotPlace(op, ctx);
        st.lastMm = std::max(st.lastMm, placed->rootCycle);
        mmSpan.note(*placed);
        ++work[p].mms;
        done = placed->rootCycle + mxm.mmLatency();
        ctx.read(in, placed->doneCycle);
      }
    Builder b(ctx, *finish.dest, r, 0);
    int sum = mxm.accRead(b.tree, p, m);
    b.tree.nodes[size_t(sum)].notBefore = done;
    auto placed = b.finish(finish.value(b, sum), prev);
    if (!placed)
      return cannotPlace(op, ctx);
    prev = placed->firstCycle;
    st.accFree[size_t(m)] = placed->rootCycle + 1;
    accSpan.note(*placed);
  }
  if (path)
    *path = mmSpan.get() + accSpan.get();
  // The critical path: the first mm no earlier than the planes are done
  // with the ops before (or the input's first row through its tree).
  const int64_t firstMm = ctx.startOnPlanes(
      work, std::max(how.inputPath, ctx.pathOf(*op.operand(0))) + mmSpan.get() - mxm.mmLatency());
  ctx.notePathEnd(op, firstMm + mxm.mmLatency() + accSpan.get());
  return llvm::Error::success();
}

} // namespace lpu::scheduler::reduce
