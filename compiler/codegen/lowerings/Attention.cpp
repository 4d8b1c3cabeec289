//===- compiler/codegen/lowerings/Attention.cpp - attn.sdpa ---------------===//
#include "compiler/codegen/HalfBits.h"
#include "compiler/codegen/Lowering.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {
namespace {

/// A finite floor instead of -inf keeps exp() arguments finite when a row
/// sees no key of a tile (masked, past the sequence).
const float kLowest = -1e30f;

/// The AMX micro-kernels of the prefill attention's products
/// (compiler/driver/glue/amx.c).
const char *const kAmxScoresSymbol = "attn_amx_attention_scores";
const char *const kAmxValuesSymbol = "attn_amx_attention_values";
const char *const kAmxValueRowsSymbol = "attn_amx_attention_value_rows";

/// A CPU prefill's online-softmax state, per query row, as slots along one
/// dim (see lowerFlash): the key tile's factor for the running values and
/// for the tile's own, the running max and sum, then the running output.
enum StateSlot { kKeepSlot, kAddSlot, kMaxSlot, kSumSlot, kOutSlot };

/// What flash attention and the explicit form share: the operands as Funcs,
/// which key a query sees, the score of a (query, key) pair.
class AttentionParts {
public:
  AttentionParts(SdpaOp op, KernelBuilder &b) : op(op), b(b) {
    const Tensor &q = b.get(op.getQuery());
    const Tensor &k = b.get(op.getKey());
    rank = q.extents.size();
    v = b.vars(rank);
    batch.assign(v.begin() + 2, v.end());
    queries = q.func;
    keys = k.func;
    values = b.get(op.getValue()).func;
    queryLength = q.extents[1];
    keyLength = k.extents[1];
    queryExtents = q.extents;
    heads = op.getHeads();
    group = int(heads / op.getNumKvHeads());
    dk = int(op.getKeyHeadDim());
    dv = int(op.getValueHeadDim());
    if (Value lengths = op.getKeyLengths()) {
      // 0 <= length <= Sk, checked once per batch entry; the error names
      // the batch index and the value.
      Func raw = b.get(lengths).func;
      Var bv("b");
      Expr len = raw(bv);
      checkedLengths = Func(b.name("key_lengths"));
      checkedLengths(bv) =
          require(len >= 0 && len <= keyLength, len, "attention key length",
                  len, "at batch index", bv, "is outside 0 ..", keyLength);
    }
    // The keys are then a cache, of which the queries see the first
    // offset + Sq rows (`visible`); the key tiles past them are skipped.
    if (Value offsets = op.getQueryOffsets())
      queryOffsets = b.get(offsets).func;
    // An i8 cache: its keys and values come as their integers (widened to
    // f32, exactly), the scales folded in per key and head below.
    if (Value scales = op.getKeyScale()) {
      keyScales = b.get(scales).func;
      valueScales = b.get(op.getValueScale()).func;
    }
    if (Value bias = op.getBias()) {
      biasFunc = b.get(bias).func;
      biasRank = cast<RankedTensorType>(bias.getType()).getRank();
    }
    if (auto cap = op.getSoftcap())
      softcap = cap->convertToFloat();
    if (op.getMask().getAlibi()) {
      std::vector<float> slopes = alibiSlopes(heads);
      alibi = Buffer<float>(std::vector<int>{int(heads)}, b.name("alibi"));
      for (int h = 0; h < int(heads); ++h)
        alibi(h) = slopes[h];
    }
    if (Value score = op.getScore()) {
      // [dk] or [1, dk]: index the entries by e alone.
      Func w = b.get(score).func;
      Var e = b.vars(1)[0];
      scoreVector = Func(b.name("score_vector"));
      scoreVector(e) = cast<RankedTensorType>(score.getType()).getRank() == 1
                           ? w(e)
                           : w(e, 0);
    }
    // Zeros for the keys no query sees at or past the cache's visible rows
    // or the last key, where whole key tiles read: their weight is 0, and
    // 0 times the last key's value (the clamped read) or a stale cache
    // row's would be NaN were it infinite. PyTorch's output is infinite
    // there (its keys end with the last), a stale row's never read. The
    // read is clamped to the last visible row, not to the cache's last:
    // LLVM folds the select into a zero-masked load, and on a cache row
    // never written (a fresh state's page not yet mapped) each masked-off
    // load took a microcode assist. GPT-2 small, B = 32 at 64-127 keys in
    // caches of 128 rows, Zen 4: a decode step 117-119 -> 59.5 ms.
    std::vector<Expr> at(v.begin(), v.end());
    at[1] = visibleRow(v[1]);
    paddedValues = Func(b.name("padded_values"));
    paddedValues(v) = select(v[1] < keysEnd(), values(at),
                             Internal::make_zero(values.type()));
  }

  /// The end of the keys a query of the batch entry may see: the key
  /// count, or a cache's visible rows (its offset plus the queries).
  Expr keysEnd() const {
    if (queryOffsets.defined())
      return min(keyLength, offset() + queryLength);
    return keyLength;
  }

  /// The cache row read for `key`: the key's own up to the last visible
  /// one (keysEnd), whose value a key past it reads and weighs 0. The max
  /// bounds the read below for Halide (the offsets are run-time values).
  Expr visibleRow(Expr key) const { return max(min(key, keysEnd() - 1), 0); }

  /// Whether the query at `row` sees the key at `key` (both in range or
  /// past their ends, which are never seen).
  Expr visible(Expr row, Expr key) const {
    MaskAttr mask = mutableOp().getMask();
    Expr p = row + offset();
    Expr seen = key < keyLength;
    if (queryOffsets.defined())
      seen = seen && key < offset() + queryLength;
    if (mask.getCausal())
      seen = seen && key <= p;
    if (mask.getWindowLeft() >= 0)
      seen = seen && key >= p - int(mask.getWindowLeft());
    if (mask.getWindowRight() >= 0)
      seen = seen && key <= p + int(mask.getWindowRight());
    if (checkedLengths.defined())
      seen = seen && key < checkedLengths(batch.back());
    return seen;
  }

  /// Whether any key of the tile [first, last] may be seen by a query in
  /// [firstRow, lastRow]: the key tiles a query tile skips.
  Expr tileMayBeSeen(Expr firstRow, Expr lastRow, Expr first, Expr last) const {
    MaskAttr mask = mutableOp().getMask();
    Expr offset = this->offset();
    Expr may = first < keyLength;
    if (queryOffsets.defined())
      may = may && first < offset + queryLength;
    if (mask.getCausal())
      may = may && first <= lastRow + offset;
    if (mask.getWindowRight() >= 0)
      may = may && first <= lastRow + offset + int(mask.getWindowRight());
    if (mask.getWindowLeft() >= 0)
      may = may && last >= firstRow + offset - int(mask.getWindowLeft());
    if (checkedLengths.defined())
      may = may && first < checkedLengths(batch.back());
    return may;
  }

  /// The position of query 0 among the keys: the mask's constant offset,
  /// or the batch entry's query offset (decoding with a cache).
  Expr offset() const {
    if (queryOffsets.defined())
      return queryOffsets(batch.back());
    return int(mutableOp().getMask().getOffset());
  }

  /// The additive bias of (row, key) for query head `h`, 0 without one.
  Expr bias(Expr row, Expr key, Expr h) const {
    if (!biasFunc.defined())
      return 0.0f;
    std::vector<Expr> at = {min(key, keyLength - 1), min(row, queryLength - 1)};
    if (biasRank == 4)
      at.push_back(h);
    if (biasRank >= 3)
      at.push_back(batch.back());
    return biasFunc(at);
  }

  /// The score of (row, key) for query head `h` from its scaled product:
  /// soft-capped, then the additive bias and the ALiBi term added.
  Expr finish(Expr scaled, Expr row, Expr key, Expr h) const {
    Expr s = scaled;
    if (softcap > 0.0f)
      s = softcap * vectorTanh(s * (1.0f / softcap));
    s = s + bias(row, key, h);
    if (alibi.defined()) {
      Expr p = row + offset();
      s = s + alibi(h) * Halide::cast<float>(key - p);
    }
    return s;
  }

  /// ALiBi's slope of each head, as BLOOM's build_alibi_tensor computes
  /// them in f32: base^1 .. base^n for the largest power of two n <= heads
  /// (base = 2^(-8/n)), then the odd powers of 2^(-4/n) for the rest.
  static std::vector<float> alibiSlopes(int64_t heads) {
    int64_t n = 1;
    while (2 * n <= heads)
      n *= 2;
    auto powers = [](double exponentOfBase, int64_t first, int64_t count,
                     int64_t step, std::vector<float> &out) {
      float base = float(std::exp2(exponentOfBase));
      for (int64_t k = 0; k < count; ++k)
        out.push_back(float(std::pow(double(base), double(first + k * step))));
    };
    std::vector<float> slopes;
    powers(-8.0 / double(n), 1, n, 1, slopes);
    if (n != heads)
      powers(-4.0 / double(n), 1, std::min(n, heads - n), 2, slopes);
    return slopes;
  }

  /// Query-head feature `e` of head `h` against key-head feature `e` of the
  /// key at `key`: one term of the score's reduction.
  Expr scoreTerm(Expr query, Expr h, Expr e, Expr key) const {
    Expr k = keys(with({(h / group) * dk + e, min(key, keyLength - 1)}));
    if (scoreVector.defined())
      return scoreVector(e) * vectorTanh(query + k);
    return query * k;
  }

  /// `dot`, the product of query head `h` with the key at `key`, as the
  /// score's product: an i8 cache's key scale is applied to the sum, once
  /// per key and head (score = scale_k * sum_e q[e] k_i8[e]).
  Expr scaledDot(Expr dot, Expr h, Expr key) const {
    if (!keyScales.defined())
      return dot;
    return dot * keyScales(with({h / group, min(key, keyLength - 1)}));
  }

  /// `prob`, the weight of the value at `key` for query head `h`, as it
  /// multiplies the stored values: with an i8 cache times the value's
  /// scale, once per key and head rather than per feature.
  Expr valueWeight(Expr prob, Expr h, Expr key) const {
    if (!valueScales.defined())
      return prob;
    Expr scale = valueScales(with({h / group, visibleRow(key)}));
    return prob * select(key < keysEnd(), scale, 0.0f);
  }

  /// The value feature `c` of head `h` at `key`.
  Expr value(Expr h, Expr c, Expr key) const {
    return paddedValues(with({(h / group) * dv + c, key}));
  }

  /// `front` followed by the batch vars.
  std::vector<Expr> with(std::vector<Expr> front) const {
    front.insert(front.end(), batch.begin(), batch.end());
    return front;
  }

  /// Generated getters are not const.
  SdpaOp mutableOp() const { return op; }

  /// `operand`'s buffer as stored where it is the kernel's input (a KV
  /// cache), "" otherwise.
  std::string inputBuffer(Value operand) const {
    const Halide::ImageParam &stored = b.get(operand).stored;
    return stored.defined() ? stored.name() : "";
  }

  SdpaOp op;
  KernelBuilder &b;
  size_t rank;
  std::vector<Var> v, batch;
  Func queries, keys, values, paddedValues, checkedLengths, biasFunc,
      scoreVector, queryOffsets, keyScales, valueScales;
  int biasRank = 0;
  /// The soft cap of the scores, 0 for none; ALiBi's slope per query head.
  float softcap = 0.0f;
  Buffer<float> alibi;
  Expr queryLength, keyLength;
  std::vector<Expr> queryExtents;
  int64_t heads;
  int group, dk, dv;
};

/// The factors an online softmax's fold multiplies by: its running values
/// (max `oldMax`) by `keep`, a part folded in (max `m`) by `add`. One of the
/// two sides keeps its scale: the other is rescaled by exp(-|difference|),
/// one exp per step. A difference against the -1e30 floor would overflow
/// exp's range reduction, and anything below -88 is 0 in float anyway.
std::pair<Expr, Expr> foldFactors(Expr oldMax, Expr m) {
  Expr diff = oldMax - m;
  Expr shrink = exp(max(-abs(diff), -88.0f));
  return {select(diff >= 0.0f, 1.0f, shrink),
          select(diff >= 0.0f, shrink, 1.0f)};
}

/// An online softmax's running (max, sum, output) with one more part folded
/// in, that part's (max `m`, sum `sum`, output `out`) taken relative to `m`.
Tuple foldSoftmax(Tuple old, Expr m, Expr sum, Expr out) {
  auto [keep, add] = foldFactors(old[0], m);
  return Tuple(max(old[0], m), old[1] * keep + sum * add,
               old[2] * keep + out * add);
}

/// `out / sum`, or 0 for a row that sees no key (its sum is exactly 0), as
/// PyTorch's SDPA gives a fully masked row. A NaN sum (a NaN score, or an
/// Inf one: exp(Inf - Inf)) stays NaN: a test `sum > 0` would turn the
/// row of a damaged checkpoint into zeros. The NaN is tested first, and
/// strictly (is_nan): under Halide's fast-math flags LLVM may assume the
/// compare `sum == 0` has no NaN operand, and with a sum read once per row
/// (the slotted state) it folded a NaN sum into the masked row's zeros.
Expr normalise(Expr out, Expr sum) {
  return select(is_nan(sum), sum, select(sum == 0.0f, 0.0f, out / sum));
}

/// Whether a CPU prefill's products run on AMX tiles: --precision=bf16 on an
/// AMX target, whole tiles (AmxTile) of query rows and head dims (the key
/// tile, TargetDesc::attentionKeyTile's, is whole tiles of keys), and the
/// plain scaled dot product (no i8 cache's scales, no additive score).
bool usesAmxTiles(const AttentionParts &a, int tq) {
  using schedules::AmxTile;
  const schedules::TargetDesc &target = a.b.target;
  return a.b.precision == schedules::Precision::BF16 && target.hasAmx() &&
         !target.isGpu() && !a.queryOffsets.defined() &&
         tq % (2 * AmxTile::cols) == 0 && a.dk % AmxTile::depth == 0 &&
         a.dv % AmxTile::rows == 0 && !a.keyScales.defined() &&
         !a.scoreVector.defined();
}

/// `x` rounded to bf16 for the AMX products (to nearest, ties to even).
Expr amxOperand(Expr x) { return narrowToHalf(x, BFloat(16), true); }

/// The extern `symbol` of `inputs` over a key tile: (first, second, kt, it,
/// h, batch...).
Func amxTileExtern(AttentionParts &a, const char *symbol,
                   std::vector<ExternFuncArgument> inputs, Var first,
                   Var second) {
  Var kt("kt"), it("it"), h("h");
  std::vector<Var> vars = {first, second, kt, it, h};
  vars.insert(vars.end(), a.batch.begin(), a.batch.end());
  Func f(a.b.name(symbol));
  f.define_extern(symbol, inputs, Float(32), vars, NameMangling::C);
  return f;
}

/// The AMX scores of each key tile (schedules::AttentionAmx::scores) from
/// `queries`, the scaled query tile (ii, e, it, h, ...).
schedules::AttentionAmx amxScores(AttentionParts &a, Func queries, int tk) {
  KernelBuilder &b = a.b;
  Var e("e"), key("key"), t("t"), q("q"), ii("ii"), jj("jj"), it("it"), h("h");
  schedules::AttentionAmx amx;
  amx.keyRows = Func(b.name("key_rows"));
  amx.keyRows(a.with({e, key, h})) = amxOperand(
      a.keys(a.with({(h / a.group) * a.dk + e, min(key, a.keyLength - 1)})));
  amx.queryPairs = Func(b.name("query_pairs"));
  amx.queryPairs(a.with({t, ii, q, it, h})) =
      amxOperand(queries(a.with({ii, 2 * q + t, it, h})));
  amx.scores = amxTileExtern(
      a, kAmxScoresSymbol,
      {amx.queryPairs, amx.keyRows, Expr(int32_t(a.dk)), Expr(int32_t(tk))}, ii,
      jj);
  return amx;
}

/// The AMX weighted values of each key tile (AttentionAmx::values) from
/// `probs` (ii, jj, kt, it, h, ...), which the extern rounds to bf16 pairs.
void amxValues(AttentionParts &a, schedules::AttentionAmx &amx, Func probs,
               int tk) {
  KernelBuilder &b = a.b;
  Var key("key"), c("c"), ii("ii"), h("h");
  amx.valueCopy = Func(b.name("value_copy"));
  amx.valueCopy(a.with({c, key, h})) = a.value(h, c, key);
  std::vector<Var> rows = {key, c, h};
  rows.insert(rows.end(), a.batch.begin(), a.batch.end());
  amx.valueRows = Func(b.name(kAmxValueRowsSymbol));
  amx.valueRows.define_extern(kAmxValueRowsSymbol, {amx.valueCopy}, BFloat(16),
                              rows, NameMangling::C);
  amx.values = amxTileExtern(a, kAmxValuesSymbol,
                             {probs, amx.valueRows, Expr(int32_t(tk))}, ii, c);
}

/// Flash attention: per (query tile, head), keys are visited one tile at a
/// time; each key tile yields its own row maximum, row sum of exponentials and
/// unnormalised output, and a running (max, sum, output) state folds the
/// tiles in with an online softmax. No Sq x Sk matrix exists. Key tiles that
/// no query of a tile may see (above the causal diagonal, outside the
/// window, past a sequence's length) are skipped, so the cost follows the
/// visible area.
LogicalResult lowerFlash(AttentionParts &a) {
  using schedules::AttentionStage;
  const int tq = a.b.target.attentionQueryTile(a.queryOffsets.defined());
  // AMX products take longer key tiles, but not under a causal or windowed
  // mask: a query tile computes every key of a tile it sees in part, and at
  // 128 keys GPT-2's 1x128 attention took 0.62 ms against 0.48 (f32) and
  // 64 keys' level.
  const bool onAmx = usesAmxTiles(a, tq);
  MaskAttr mask = a.op.getMask();
  const bool alongDiagonal = mask.getCausal() || mask.getWindowLeft() >= 0 ||
                             mask.getWindowRight() >= 0;
  const int tk = a.b.target.attentionKeyTile(a.keyScales.defined(),
                                             onAmx && !alongDiagonal);
  KernelBuilder &b = a.b;
  Var c("c"), e("e"), ii("ii"), jj("jj"), it("it"), kt("kt"), h("h");
  Expr row = it * tq + ii, key = kt * tk + jj;
  Expr visible = a.visible(row, key);

  // The query tile with rows contiguous (for vectors over rows), pre-scaled.
  Func queries(b.name("queries"));
  Expr qv = a.queries(a.with({h * a.dk + e, min(row, a.queryLength - 1)}));
  float scale = a.op.getScale().convertToFloat();
  queries(a.with({ii, e, it, h})) = scale == 1.0f ? qv : qv * scale;

  RDom r(0, a.dk, b.name("e"));
  RDom kr(0, tk, b.name("key"));
  if (a.checkedLengths.defined()) {
    // Tiles past a sequence's length: their reductions do nothing (the
    // online softmax's `where` below cannot skip work placed in its loop).
    Expr seen = kt * tk < a.checkedLengths(a.batch.back());
    r.where(seen);
    kr.where(seen);
  }
  std::optional<schedules::AttentionAmx> amx;
  if (onAmx)
    amx = amxScores(a, queries, tk);
  Func dot(b.name("dot"));
  if (amx) {
    dot(a.with({ii, jj, kt, it, h})) = amx->scores(a.with({ii, jj, kt, it, h}));
  } else {
    dot(a.with({ii, jj, kt, it, h})) = 0.0f;
    dot(a.with({ii, jj, kt, it, h})) +=
        a.scoreTerm(queries(a.with({ii, r.x, it, h})), h, r.x, key);
  }

  auto score = [&](Expr j) {
    Expr key = kt * tk + j;
    return a.finish(a.scaledDot(dot(a.with({ii, j, kt, it, h})), h, key), row,
                    key, h);
  };
  Expr visibleAt = substitute(jj.name(), kr.x, visible);
  Func tileMax(b.name("tile_max")), probs(b.name("probs")),
      tileSum(b.name("tile_sum"));
  tileMax(a.with({ii, kt, it, h})) = kLowest;
  tileMax(a.with({ii, kt, it, h})) =
      max(tileMax(a.with({ii, kt, it, h})),
          select(visibleAt, score(kr.x), kLowest));
  Expr prob = select(
      visible,
      expNonPositiveInLoop(score(jj) - tileMax(a.with({ii, kt, it, h}))), 0.0f);
  if (a.checkedLengths.defined()) {
    // Only the tiles a sequence's length reaches pay for their exps.
    probs(a.with({ii, jj, kt, it, h})) = 0.0f;
    probs(a.with({ii, kr.x, kt, it, h})) = substitute(jj.name(), kr.x, prob);
  } else {
    probs(a.with({ii, jj, kt, it, h})) = prob;
  }
  tileSum(a.with({ii, kt, it, h})) = 0.0f;
  tileSum(a.with({ii, kt, it, h})) += probs(a.with({ii, kr.x, kt, it, h}));
  Func tileOut(b.name("tile_out"));
  if (amx) {
    amxValues(a, *amx, probs, tk);
    tileOut(a.with({c, ii, kt, it, h})) =
        amx->values(a.with({ii, c, kt, it, h}));
  } else {
    tileOut(a.with({c, ii, kt, it, h})) = 0.0f;
    Expr at = kt * tk + kr.x;
    tileOut(a.with({c, ii, kt, it, h})) +=
        a.valueWeight(probs(a.with({ii, kr.x, kt, it, h})), h, at) *
        a.value(h, c, at);
  }

  // Online softmax over the key tiles that may be seen, in order. A decode
  // splits them into `chunks` runs, each with its own state (flash
  // decoding: the runs are independent, so one query's keys spread over
  // threads), merged at the end.
  const int chunks = a.b.target.attentionKeyChunks(a.queryOffsets.defined());
  Var chunk("chunk");
  Expr numTiles = (a.keyLength + tk - 1) / tk;
  Expr tileCount = chunks == 1 ? numTiles : (numTiles + chunks - 1) / chunks;
  const bool slotted = b.target.attentionStateSlots(a.queryOffsets.defined());
  RDom tiles =
      slotted ? RDom({{0, kOutSlot + a.dv}, {0, tileCount}}, b.name("tiles"))
              : RDom(0, tileCount, b.name("tiles"));
  RVar tileVar = slotted ? tiles.y : tiles.x;
  Expr tile = tileVar;
  std::vector<Expr> stateAt = {c, ii, it, h};
  if (chunks > 1) {
    // Run `chunk` takes every chunks-th tile from tile `chunk` on: each
    // tile is contiguous rows, and every run has work from `chunks` visible
    // tiles on, however long the cache is. (Runs of consecutive tiles would
    // be cut at the visible tiles, a value bounds inference cannot bound
    // the tiles by; at 4096 keys both took the same time.)
    tile = tiles.x * chunks + chunk;
    stateAt.push_back(chunk);
  }
  tiles.where(a.tileMayBeSeen(it * tq, it * tq + tq - 1, tile * tk,
                              tile * tk + tk - 1));
  Func state(b.name("state"));
  if (slotted) {
    // Slot tiles.x of every row, in order, for each key tile tiles.y: the
    // factors from the old max before the max moves, then the sum and the
    // outputs by them. Each row's exp is computed once per tile; the Tuple
    // form below computes it once per feature of the row.
    state(a.with(stateAt)) = select(c == kMaxSlot, kLowest, 0.0f);
    Expr s = tiles.x;
    auto slot = [&](Expr at) { return state(a.with({at, ii, it, h})); };
    Expr m = tileMax(a.with({ii, tile, it, h}));
    auto [keep, add] = foldFactors(slot(kMaxSlot), m);
    Expr sum = slot(kSumSlot) * slot(kKeepSlot) +
               tileSum(a.with({ii, tile, it, h})) * slot(kAddSlot);
    Expr output = slot(s) * slot(kKeepSlot) +
                  tileOut(a.with({max(s - kOutSlot, 0), ii, tile, it, h})) *
                      slot(kAddSlot);
    state(a.with({s, ii, it, h})) =
        select(s == kKeepSlot, keep, s == kAddSlot, add, s == kMaxSlot,
               max(slot(kMaxSlot), m), s == kSumSlot, sum, output);
  } else {
    state(a.with(stateAt)) = Tuple(kLowest, 0.0f, 0.0f);
    state(a.with(stateAt)) =
        foldSoftmax(state(a.with(stateAt)), tileMax(a.with({ii, tile, it, h})),
                    tileSum(a.with({ii, tile, it, h})),
                    tileOut(a.with({c, ii, tile, it, h})));
  }
  Func merged;
  RDom runs(0, chunks, b.name("runs"));
  if (chunks > 1) {
    merged = Func(b.name("merged"));
    merged(a.with({c, ii, it, h})) = Tuple(kLowest, 0.0f, 0.0f);
    Tuple run = state(a.with({c, ii, it, h, runs.x}));
    merged(a.with({c, ii, it, h})) =
        foldSoftmax(merged(a.with({c, ii, it, h})), run[0], run[1], run[2]);
  }
  const std::vector<Var> &v = a.v;
  Func out(b.name("attention"));
  if (slotted) {
    auto at = [&](Expr slot) {
      return state(a.with({slot, v[1] % tq, v[1] / tq, v[0] / a.dv}));
    };
    out(v) = normalise(at(kOutSlot + v[0] % a.dv), at(kSumSlot));
  } else {
    Tuple fin = (chunks > 1 ? merged : state)(
        a.with({v[0] % a.dv, v[1] % tq, v[1] / tq, v[0] / a.dv}));
    out(v) = normalise(fin[2], fin[1]);
  }
  AttentionStage stage{out,     a.keys,  a.paddedValues,
                       queries, dot,     tileMax,
                       probs,   tileSum, tileOut,
                       state,   merged,  a.checkedLengths,
                       tiles,   tileVar, kr,
                       r,       runs,    a.heads,
                       a.dv,    a.dk,    tq,
                       tk,      chunks,  slotted,
                       amx};
  stage.keyBuffer = a.inputBuffer(a.op.getKey());
  stage.valueBuffer = a.inputBuffer(a.op.getValue());
  b.stages.stages.push_back(std::move(stage));
  std::vector<Expr> extents = a.queryExtents;
  extents[0] = int(a.heads * a.dv);
  b.define(a.op.getResult(), {out, extents});
  return success();
}

/// Attention with its probabilities as a result: the scores of a whole row
/// are computed, then its softmax, which is the weights output, then the
/// weighted values. Used only when the model asks for the weights.
LogicalResult lowerWithWeights(AttentionParts &a) {
  KernelBuilder &b = a.b;
  // Weights are [batch..., heads, Sq, Sk]: innermost key j, query i, head h.
  Var j("j"), i("i"), h("h");
  auto at = [&](Expr jj, Expr ii, Expr hh) { return a.with({jj, ii, hh}); };
  RDom r(0, a.dk, b.name("e"));
  float scale = a.op.getScale().convertToFloat();
  Func scores(b.name("scores"));
  Expr q = a.queries(a.with({h * a.dk + r.x, i}));
  scores(at(j, i, h)) = 0.0f;
  scores(at(j, i, h)) += a.scoreTerm(q, h, r.x, j);
  Expr s = a.finish(a.scaledDot(scores(at(j, i, h)), h, j) * scale, i, j, h);
  RDom kr(0, a.keyLength, b.name("key"));
  Expr sAt = substitute(j.name(), kr.x, s);
  Func rowMax(b.name("row_max")), rowSum(b.name("row_sum"));
  rowMax(a.with({i, h})) = kLowest;
  rowMax(a.with({i, h})) =
      max(rowMax(a.with({i, h})), select(a.visible(i, kr.x), sAt, kLowest));
  Func exps(b.name("exps"));
  exps(at(j, i, h)) = select(
      a.visible(i, j), expNonPositiveInLoop(s - rowMax(a.with({i, h}))), 0.0f);
  rowSum(a.with({i, h})) = 0.0f;
  rowSum(a.with({i, h})) += exps(at(kr.x, i, h));
  Func probs(b.name("weights"));
  // Masked entries are exactly 0; a row that sees no key is all zeros.
  probs(at(j, i, h)) = normalise(exps(at(j, i, h)), rowSum(a.with({i, h})));
  const std::vector<Var> &v = a.v;
  Func out(b.name("attention"));
  out(v) = 0.0f;
  out(v) += a.valueWeight(probs(a.with({kr.x, v[1], v[0] / a.dv})), v[0] / a.dv,
                          kr.x) *
            a.value(v[0] / a.dv, v[0] % a.dv, kr.x);
  b.stages.stages.push_back(schedules::AttentionWeightsStage{
      out, scores, rowMax, rowSum, probs, a.checkedLengths, kr, a.heads, a.dv});
  std::vector<Expr> extents = a.queryExtents;
  extents[0] = int(a.heads * a.dv);
  b.define(a.op.getResult(), {out, extents});
  std::vector<Expr> weightExtents = {a.keyLength, a.queryLength, int(a.heads)};
  weightExtents.insert(weightExtents.end(), a.queryExtents.begin() + 2,
                       a.queryExtents.end());
  b.define(a.op.getWeights(), {probs, weightExtents});
  return success();
}

LogicalResult lowerSdpa(SdpaOp op, KernelBuilder &b) {
  AttentionParts parts(op, b);
  return op.getWeights() ? lowerWithWeights(parts) : lowerFlash(parts);
}

} // namespace

void registerAttentionLowerings(LoweringRegistry &registry) {
  registry.add<SdpaOp>(lowerSdpa);
}

} // namespace attnc::codegen
