// The AMX micro-kernel of --precision=bf16 GEMMs on Sapphire Rapids
// (TargetDesc::usesAmxTiles: prefills, and decode steps of enough
// sequences), an extern stage of the kernels that call it
// (lowerings/Linear.cpp): out(n, m, ...) = sum over k of in(k, m, ...) *
// w(k, n), bf16 products summed in f32. A prefill attention's externs
// (lowerings/Attention.cpp) are at the end: each key tile's scores and
// weighted values on the same 2 x 2-tile blocks, and a head's values
// transposed for them.
//
// Halide 21's own AMX lowering takes one accumulator tile per loop, so each
// multiply waited for the one before it (16-19% of the AMX peak). Here two
// tiles of rows by two tiles of columns are summed together: four
// independent accumulators, each operand tile read for two multiplies.
//
// attnc compiles this file into each library that may run it; a Sapphire
// Rapids CPU's kernels alone call it, after the runtime asked Linux for the
// tile state (runtime/src/cpu.cpp).
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "HalideRuntime.h"

#define ATTN_AMX __attribute__((target("amx-tile,amx-bf16")))
#define ATTN_AMX_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

enum { kRows = 16, kCols = 16, kDepth = 32 };

// ldtilecfg's operand, palette 1.
typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} attn_amx_config;

// Tiles: sums C(i, j) = 2i + j, inputs A(i) = 4 + i, weights B(j) = 6 + j.
// A block of 1-2 row tiles by 1-2 column tiles; edge tiles hold fewer rows
// or columns, set in the configuration.
typedef struct {
  const uint8_t *a[2];  // the block's first input row of each row tile
  const uint8_t *b[2];  // its column tiles' first pair row
  float *c[2][2];       // where each sum tile is stored
  size_t lda, ldb, ldc; // bytes between rows
  size_t steps;         // kDepth inputs each
  size_t bStep;         // bytes between one step's weight rows and the next
} attn_amx_block;

// One block of `na` x `nb` tiles; the tile numbers must be constants.
#define ATTN_AMX_BLOCK(na, nb)                                                 \
  ATTN_AMX static void attn_amx_block_##na##nb(const attn_amx_block *k) {      \
    _tile_zero(0);                                                             \
    if (nb > 1)                                                                \
      _tile_zero(1);                                                           \
    if (na > 1)                                                                \
      _tile_zero(2);                                                           \
    if (na > 1 && nb > 1)                                                      \
      _tile_zero(3);                                                           \
    const uint8_t *a0 = k->a[0], *a1 = k->a[1], *b0 = k->b[0], *b1 = k->b[1];  \
    for (size_t s = 0; s < k->steps; ++s) {                                    \
      _tile_loadd(4, a0, k->lda);                                              \
      _tile_loadd(6, b0, k->ldb);                                              \
      if (nb > 1)                                                              \
        _tile_loadd(7, b1, k->ldb);                                            \
      _tile_dpbf16ps(0, 4, 6);                                                 \
      if (nb > 1)                                                              \
        _tile_dpbf16ps(1, 4, 7);                                               \
      if (na > 1) {                                                            \
        _tile_loadd(5, a1, k->lda);                                            \
        _tile_dpbf16ps(2, 5, 6);                                               \
        if (nb > 1)                                                            \
          _tile_dpbf16ps(3, 5, 7);                                             \
      }                                                                        \
      a0 += 2 * kDepth;                                                        \
      a1 += 2 * kDepth;                                                        \
      b0 += k->bStep;                                                          \
      b1 += k->bStep;                                                          \
    }                                                                          \
    _tile_stored(0, k->c[0][0], k->ldc);                                       \
    if (nb > 1)                                                                \
      _tile_stored(1, k->c[0][1], k->ldc);                                     \
    if (na > 1)                                                                \
      _tile_stored(2, k->c[1][0], k->ldc);                                     \
    if (na > 1 && nb > 1)                                                      \
      _tile_stored(3, k->c[1][1], k->ldc);                                     \
  }
ATTN_AMX_BLOCK(1, 1)
ATTN_AMX_BLOCK(1, 2)
ATTN_AMX_BLOCK(2, 1)
ATTN_AMX_BLOCK(2, 2)

// The configuration loaded, and the block shape (rows[2], cols[2]) it was
// made for; shape[0] < 0 when that is not known.
typedef struct {
  attn_amx_config loaded;
  int shape[4];
} attn_amx_state;

// Loads the configuration of tiles of `rows` rows and `cols` columns,
// unless it is the one loaded. A block of the shape before returns at once:
// building and comparing the configuration (its narrow stores read back
// whole) took 3.6% of a bf16 GPT-2 prefill.
ATTN_AMX static void attn_amx_configure(attn_amx_state *now, const int rows[2],
                                        const int cols[2]) {
  if (now->shape[0] == rows[0] && now->shape[1] == rows[1] &&
      now->shape[2] == cols[0] && now->shape[3] == cols[1])
    return;
  now->shape[0] = rows[0];
  now->shape[1] = rows[1];
  now->shape[2] = cols[0];
  now->shape[3] = cols[1];
  attn_amx_config want;
  memset(&want, 0, sizeof want);
  want.palette = 1;
  for (int i = 0; i < 2; ++i) {
    want.rows[4 + i] = (uint8_t)rows[i];
    want.colsb[4 + i] = rows[i] ? 2 * kDepth : 0;
    want.rows[6 + i] = cols[i] ? kDepth / 2 : 0;
    want.colsb[6 + i] = (uint16_t)(4 * cols[i]);
    for (int j = 0; j < 2; ++j) {
      int used = rows[i] && cols[j];
      want.rows[2 * i + j] = used ? (uint8_t)rows[i] : 0;
      want.colsb[2 * i + j] = used ? (uint16_t)(4 * cols[j]) : 0;
    }
  }
  if (memcmp(&want, &now->loaded, sizeof want) == 0)
    return;
  now->loaded = want;
  _tile_loadconfig(&now->loaded);
}

static int attn_amx_is_query(const halide_buffer_t *b) {
  return b->host == NULL && b->device == 0;
}

// in: bf16 [rows..., K] (Halide's dims k, m, ...); w: the packed bf16 pairs
// [panels, K / 2, p, 2] (dims t, n % p, q, n / p), p a multiple of kCols;
// out: f32 (dims n, m, ...), the same dims after the first as `in`. K is a
// multiple of kDepth. A tile's rows run along the first of the dims after
// the first that has more than one index (a prefill's positions; a decode's
// sequences, one position each), the others outside. Returns -1 for
// buffers not so laid out (the runtime passes them dense; attnc declares
// them so).
ATTN_AMX int attn_amx_bf16_gemm(halide_buffer_t *in, halide_buffer_t *w,
                                int32_t k, halide_buffer_t *out) {
  int dims = out->dimensions;
  if (attn_amx_is_query(in) || attn_amx_is_query(w)) {
    if (attn_amx_is_query(in)) {
      in->dim[0].min = 0;
      in->dim[0].extent = k;
      for (int d = 1; d < dims; ++d) {
        in->dim[d].min = out->dim[d].min;
        in->dim[d].extent = out->dim[d].extent;
      }
    }
    // The weights are an input of the kernel, never a query in practice.
    return attn_amx_is_query(w) ? -1 : 0;
  }
  if (in->dimensions != dims || dims < 2 || w->dimensions != 4 ||
      in->type.bits != 16 || w->type.bits != 16 || out->type.bits != 32 ||
      in->dim[0].stride != 1 || in->dim[0].min > 0 ||
      in->dim[0].min + in->dim[0].extent < k || w->dim[0].stride != 1 ||
      w->dim[1].stride != 2 || w->dim[1].extent % kCols != 0 ||
      out->dim[0].stride != 1 || k % kDepth != 0)
    return -1;
  int rowDim = 1;
  while (rowDim + 1 < dims && out->dim[rowDim].extent == 1)
    ++rowDim;
  int p = w->dim[1].extent;
  size_t lda = (size_t)in->dim[rowDim].stride * 2,
         ldc = (size_t)out->dim[rowDim].stride * 4;
  size_t ldb = (size_t)w->dim[2].stride * 2;
  int nMin = out->dim[0].min, nEnd = nMin + out->dim[0].extent;
  int mMin = out->dim[rowDim].min, mEnd = mMin + out->dim[rowDim].extent;
  if (nMin < 0 || nEnd > p * (w->dim[3].min + w->dim[3].extent) ||
      w->dim[3].min > nMin / p || w->dim[2].min > 0 ||
      w->dim[2].min + w->dim[2].extent < k / 2)
    return -1;
  // Every index of the other dims after the first.
  int64_t outer = 1;
  for (int d = 1; d < dims; ++d)
    if (d != rowDim)
      outer *= out->dim[d].extent;
  attn_amx_state now;
  memset(&now, 0, sizeof now);
  now.shape[0] = -1;
  attn_amx_block blk;
  blk.lda = lda;
  blk.ldb = ldb;
  blk.ldc = ldc;
  blk.steps = (size_t)k / kDepth;
  blk.bStep = ldb * (kDepth / 2);
  for (int64_t o = 0; o < outer; ++o) {
    const uint8_t *inRows = in->host;
    uint8_t *outRows = out->host;
    int64_t rest = o;
    for (int d = 1; d < dims; ++d) {
      if (d == rowDim)
        continue;
      int64_t i = rest % out->dim[d].extent + out->dim[d].min;
      rest /= out->dim[d].extent;
      inRows += (i - in->dim[d].min) * (int64_t)in->dim[d].stride * 2;
      outRows += (i - out->dim[d].min) * (int64_t)out->dim[d].stride * 4;
    }
    for (int m = mMin; m < mEnd; m += 2 * kRows) {
      int rows[2] = {mEnd - m < kRows ? mEnd - m : kRows, 0};
      if (mEnd - m > kRows)
        rows[1] = mEnd - m - kRows < kRows ? mEnd - m - kRows : kRows;
      blk.a[0] = inRows + (int64_t)(m - in->dim[rowDim].min) * (int64_t)lda -
                 (int64_t)in->dim[0].min * 2;
      blk.a[1] = blk.a[0] + kRows * lda;
      // Column tiles end at multiples of kCols, so none straddles panels.
      for (int n = nMin; n < nEnd;) {
        int cols[2] = {0, 0}, at[2] = {n, 0};
        cols[0] = (n / kCols + 1) * kCols - n;
        if (cols[0] > nEnd - n)
          cols[0] = nEnd - n;
        n += cols[0];
        if (n < nEnd) {
          at[1] = n;
          cols[1] = nEnd - n < kCols ? nEnd - n : kCols;
          n += cols[1];
        }
        for (int j = 0; j < 2; ++j) {
          int64_t c = at[j];
          int64_t pairs = (c / p - w->dim[3].min) * w->dim[3].stride +
                          (c % p - w->dim[1].min) * w->dim[1].stride -
                          (int64_t)w->dim[2].min * w->dim[2].stride;
          blk.b[j] = w->host + 2 * pairs;
          for (int i = 0; i < 2; ++i)
            blk.c[i][j] = (float *)(outRows + (int64_t)(m + i * kRows -
                                                        out->dim[rowDim].min) *
                                                  (int64_t)ldc) +
                          (c - nMin);
        }
        attn_amx_configure(&now, rows, cols);
        if (rows[1] && cols[1])
          attn_amx_block_22(&blk);
        else if (rows[1])
          attn_amx_block_21(&blk);
        else if (cols[1])
          attn_amx_block_12(&blk);
        else
          attn_amx_block_11(&blk);
      }
    }
  }
  _tile_release();
  return 0;
}

// The byte offset of the element at `at` (one coordinate per dim) in `b`.
static int64_t attn_amx_offset(const halide_buffer_t *b, const int32_t *at) {
  int64_t elements = 0;
  for (int d = 0; d < b->dimensions; ++d)
    elements += (int64_t)(at[d] - b->dim[d].min) * b->dim[d].stride;
  return elements * (b->type.bits / 8);
}

// Sets `b`'s dim `d` to [min, min + extent).
static void attn_amx_want(halide_buffer_t *b, int d, int32_t min,
                          int32_t extent) {
  b->dim[d].min = min;
  b->dim[d].extent = extent;
}

// The attention's per-head inputs (its keys, its transposed values): `b`'s
// dim `keyDim` (0 or 1) runs over keys, the other of the two over features,
// the dims after them over heads and batch entries, as `out`'s dims 4 and
// on; `out`'s dim 2 is the key tile of `keyTile` keys.

// Asks for the keys of out's key tiles and for its heads and batch entries.
static void attn_amx_want_head(halide_buffer_t *b, int keyDim,
                               const halide_buffer_t *out, int32_t keyTile) {
  attn_amx_want(b, keyDim, out->dim[2].min * keyTile,
                out->dim[2].extent * keyTile);
  for (int d = 4; d < out->dimensions; ++d)
    attn_amx_want(b, d - 2, out->dim[d].min, out->dim[d].extent);
}

// Where `b` holds `key`'s `feature` of out's (first) head and batch entry.
static const uint8_t *attn_amx_head_at(const halide_buffer_t *b, int keyDim,
                                       int32_t key, int32_t feature,
                                       const halide_buffer_t *out) {
  int32_t at[16];
  at[keyDim] = key;
  at[1 - keyDim] = feature;
  for (int d = 4; d < out->dimensions; ++d)
    at[d - 2] = out->dim[d].min;
  return b->host + attn_amx_offset(b, at);
}

// Runs blocks of up to 2 x 2 tiles over `rows` x `cols` sums (multiples of
// kRows and kCols): row tile i's A rows start at a + i * kRows * lda, column
// tile j's B at b + j * kCols * 4 bytes, sums at c + i * kRows * ldc + j *
// kCols * 4.
//
// The tiles stay configured when it returns: an attention calls it for
// every key tile, and loading the configuration each time (which also zeroes
// the tiles) took 6% of the attention's time. The configuration in force is
// read back first (sttilecfg), so whatever ran on this thread since, and
// whether it released the tiles, does not matter.
ATTN_AMX static void attn_amx_blocks(attn_amx_block *blk, const uint8_t *a,
                                     const uint8_t *b, uint8_t *c, int rows,
                                     int cols) {
  attn_amx_state now;
  _tile_storeconfig(&now.loaded);
  now.shape[0] = -1;
  for (int m = 0; m < rows; m += 2 * kRows) {
    int r[2] = {kRows, rows - m > kRows ? kRows : 0};
    for (int n = 0; n < cols; n += 2 * kCols) {
      int k[2] = {kCols, cols - n > kCols ? kCols : 0};
      for (int i = 0; i < 2; ++i) {
        blk->a[i] = a + (int64_t)(m + i * kRows) * (int64_t)blk->lda;
        blk->b[i] = b + (int64_t)(n + i * kCols) * 4;
        for (int j = 0; j < 2; ++j)
          blk->c[i][j] =
              (float *)(c + (int64_t)(m + i * kRows) * (int64_t)blk->ldc +
                        (int64_t)(n + j * kCols) * 4);
      }
      attn_amx_configure(&now, r, k);
      if (r[1] && k[1])
        attn_amx_block_22(blk);
      else if (r[1])
        attn_amx_block_21(blk);
      else if (k[1])
        attn_amx_block_12(blk);
      else
        attn_amx_block_11(blk);
    }
  }
}

// A prefill attention's scores of one key tile (lowerings/Attention.cpp at
// --precision=bf16 on AMX): out(i, j, kt, it, h, batch...) = sum over e of
// keys(e, kt * keyTile + j, h, batch...) * queries(e % 2, i, e / 2, it, h,
// batch...): the keys bf16 rows, the query tile bf16 pairs. out's rows are
// keys, its columns queries, as the softmax reads them.
ATTN_AMX int attn_amx_attention_scores(halide_buffer_t *queries,
                                       halide_buffer_t *keys, int32_t depth,
                                       int32_t keyTile, halide_buffer_t *out) {
  int dims = out->dimensions;
  if (attn_amx_is_query(queries) || attn_amx_is_query(keys)) {
    if (attn_amx_is_query(queries)) {
      attn_amx_want(queries, 0, 0, 2);
      attn_amx_want(queries, 1, out->dim[0].min, out->dim[0].extent);
      attn_amx_want(queries, 2, 0, depth / 2);
      for (int d = 3; d < dims; ++d)
        attn_amx_want(queries, d, out->dim[d].min, out->dim[d].extent);
    }
    if (attn_amx_is_query(keys)) {
      attn_amx_want(keys, 0, 0, depth);
      attn_amx_want_head(keys, 1, out, keyTile);
    }
    return 0;
  }
  int rows = out->dim[1].extent, cols = out->dim[0].extent;
  if (dims < 5 || dims > 16 || queries->dimensions != dims ||
      keys->dimensions != dims - 2 || depth % kDepth != 0 ||
      rows % kRows != 0 || cols % kCols != 0 || out->dim[0].stride != 1 ||
      keys->dim[0].stride != 1 || queries->dim[0].stride != 1 ||
      queries->dim[1].stride != 2 || out->dim[2].extent != 1)
    return -1;
  int32_t at[16];
  attn_amx_block blk;
  blk.lda = (size_t)keys->dim[1].stride * 2;
  blk.ldb = (size_t)queries->dim[2].stride * 2;
  blk.ldc = (size_t)out->dim[1].stride * 4;
  blk.steps = (size_t)depth / kDepth;
  blk.bStep = blk.ldb * (kDepth / 2);
  // The first key and query of the tile.
  const uint8_t *a = attn_amx_head_at(
      keys, 1, out->dim[2].min * keyTile + out->dim[1].min, 0, out);
  at[0] = 0;
  at[1] = out->dim[0].min;
  at[2] = 0;
  for (int d = 3; d < dims; ++d)
    at[d] = out->dim[d].min;
  const uint8_t *b = queries->host + attn_amx_offset(queries, at);
  attn_amx_blocks(&blk, a, b, out->host, rows, cols);
  return 0;
}

enum { kMaxPairs = 8192 };

// `cols` probabilities of each of `keys` keys (rows `ld` floats apart)
// rounded to bf16 (to nearest, ties to even: vcvtne2ps2bf16) as AMX's pairs
// of keys: pairs[j][i][t] is row 2j + t's column i.
ATTN_AMX_BF16 static void attn_amx_pairs(const float *p, size_t ld, int keys,
                                         int cols, uint16_t *pairs) {
  // Word 2i of a result is the first row's column i, word 2i + 1 the second's.
  __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11,
                                        26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                        5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int j = 0; j < keys; j += 2) {
    const float *first = p + (size_t)j * ld, *second = first + ld;
    for (int i = 0; i < cols; i += 16) {
      __m512bh both = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(second + i),
                                          _mm512_loadu_ps(first + i));
      _mm512_storeu_si512(pairs + (size_t)j * cols + 2 * i,
                          _mm512_permutexvar_epi16(interleave, (__m512i)both));
    }
  }
}

// The values a prefill attention's key tile adds, weighted: out(i, c, kt,
// it, h, batch...) = sum over j of values(kt * keyTile + j, c, h,
// batch...) * probs(i, j, kt, it, h, batch...): the values transposed (keys
// innermost) bf16, the tile's probabilities f32, rounded to bf16 pairs here.
// out's rows are features, its columns queries, as the state reads them.
ATTN_AMX int attn_amx_attention_values(halide_buffer_t *probs,
                                       halide_buffer_t *values, int32_t keyTile,
                                       halide_buffer_t *out) {
  int dims = out->dimensions;
  if (attn_amx_is_query(probs) || attn_amx_is_query(values)) {
    if (attn_amx_is_query(probs)) {
      attn_amx_want(probs, 0, out->dim[0].min, out->dim[0].extent);
      attn_amx_want(probs, 1, 0, keyTile);
      for (int d = 2; d < dims; ++d)
        attn_amx_want(probs, d, out->dim[d].min, out->dim[d].extent);
    }
    if (attn_amx_is_query(values)) {
      attn_amx_want(values, 1, out->dim[1].min, out->dim[1].extent);
      attn_amx_want_head(values, 0, out, keyTile);
    }
    return 0;
  }
  int rows = out->dim[1].extent, cols = out->dim[0].extent;
  if (dims < 5 || dims > 16 || probs->dimensions != dims ||
      values->dimensions != dims - 2 || keyTile % kDepth != 0 ||
      rows % kRows != 0 || cols % kCols != 0 ||
      (int64_t)keyTile * cols > kMaxPairs || out->dim[0].stride != 1 ||
      values->dim[0].stride != 1 || probs->dim[0].stride != 1 ||
      out->dim[2].extent != 1)
    return -1;
  int32_t at[16];
  attn_amx_block blk;
  blk.lda = (size_t)values->dim[1].stride * 2;
  blk.ldb = (size_t)cols * 4;
  blk.ldc = (size_t)out->dim[1].stride * 4;
  blk.steps = (size_t)keyTile / kDepth;
  blk.bStep = blk.ldb * (kDepth / 2);
  const uint8_t *a = attn_amx_head_at(values, 0, out->dim[2].min * keyTile,
                                      out->dim[1].min, out);
  at[0] = out->dim[0].min;
  at[1] = 0;
  for (int d = 2; d < dims; ++d)
    at[d] = out->dim[d].min;
  uint16_t pairs[kMaxPairs] __attribute__((aligned(64)));
  attn_amx_pairs((const float *)(probs->host + attn_amx_offset(probs, at)),
                 (size_t)probs->dim[1].stride, keyTile, cols, pairs);
  attn_amx_blocks(&blk, a, (const uint8_t *)pairs, out->host, rows, cols);
  return 0;
}

// r[i] (16 floats each) becomes column i of the 16 x 16 block r held.
ATTN_AMX_BF16 static void attn_amx_transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]),
            c = _mm512_castps_pd(t[4 * i + 2]),
            d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
}

// A head's values as the weighted values' tiles read them
// (lowerings/Attention.cpp): out(key, c, h, batch...) = values(c, key, h,
// batch...) rounded to bf16 (vcvtne2ps2bf16), keys innermost. 16 x 16
// blocks transposed in registers, two of them (32 keys) a 64-byte row of
// each feature; Halide's transposing loads took 12% of the attention.
ATTN_AMX_BF16 int attn_amx_attention_value_rows(halide_buffer_t *values,
                                                halide_buffer_t *out) {
  int dims = out->dimensions;
  if (attn_amx_is_query(values)) {
    attn_amx_want(values, 0, out->dim[1].min, out->dim[1].extent);
    attn_amx_want(values, 1, out->dim[0].min, out->dim[0].extent);
    for (int d = 2; d < dims; ++d)
      attn_amx_want(values, d, out->dim[d].min, out->dim[d].extent);
    return 0;
  }
  int keys = out->dim[0].extent, features = out->dim[1].extent;
  if (dims < 3 || dims > 16 || values->dimensions != dims ||
      values->type.bits != 32 || out->type.bits != 16 ||
      values->dim[0].stride != 1 || out->dim[0].stride != 1 ||
      keys % (2 * kCols) != 0 || features % kCols != 0)
    return -1;
  size_t ldv = (size_t)values->dim[1].stride, ldo = (size_t)out->dim[1].stride;
  int64_t outer = 1;
  for (int d = 2; d < dims; ++d)
    outer *= out->dim[d].extent;
  int32_t at[16];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rest = o;
    for (int d = 2; d < dims; ++d) {
      at[d] = (int32_t)(rest % out->dim[d].extent) + out->dim[d].min;
      rest /= out->dim[d].extent;
    }
    at[0] = out->dim[1].min;
    at[1] = out->dim[0].min;
    const float *v =
        (const float *)(values->host + attn_amx_offset(values, at));
    at[0] = out->dim[0].min;
    at[1] = out->dim[1].min;
    uint16_t *w = (uint16_t *)(out->host + attn_amx_offset(out, at));
    for (int k = 0; k < keys; k += 2 * kCols)
      for (int c = 0; c < features; c += kCols) {
        __m512 first[16], second[16];
        for (int i = 0; i < 16; ++i) {
          first[i] = _mm512_loadu_ps(v + (size_t)(k + i) * ldv + c);
          second[i] = _mm512_loadu_ps(v + (size_t)(k + 16 + i) * ldv + c);
        }
        attn_amx_transpose16(first);
        attn_amx_transpose16(second);
        for (int i = 0; i < 16; ++i)
          _mm512_storeu_si512(
              w + (size_t)(c + i) * ldo + k,
              (__m512i)_mm512_cvtne2ps_pbh(second[i], first[i]));
      }
  }
  return 0;
}
