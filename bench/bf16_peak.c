/* bench/bf16_peak.c - one core's bf16 dot-product peak (AVX512_BF16's
 * vdpbf16ps) and its f32 FMA peak, measured on the spot by the same clock:
 * the ceilings of attnc --precision=bf16's and f32's GEMMs.
 *
 *   cc -O2 -march=native bench/bf16_peak.c -o bf16_peak && ./bf16_peak
 *
 * One thread runs ACC independent chains of zmm vdpbf16ps (acc += a . b:
 * 32 bf16 pairs into 16 f32 lanes, 64 flops, a multiply and an add per
 * product), then of zmm FMAs (acc = acc * a + b: 32 flops). The values stay
 * small and normal. Each prints the best of TRIALS runs timed by the
 * thread's CPU clock, so that time the thread waits for a core on a loaded
 * machine does not count (bench/precision.py times its runs so too; a
 * sibling hyperthread's work still does):
 *   threads=1 bf16_gflops=B f32_gflops=F acc=16
 * On a CPU with AMX (compiled with -march=native there: __AMX_BF16__) it
 * also runs AMX's tile multiply (tdpbf16ps: 16 x 16 f32 sums over 32 bf16
 * inputs, 16384 flops), four independent accumulator tiles from two input
 * tiles each, nothing loaded inside the loop: the ceiling of attnc's GEMMs
 * on AMX tiles, appended as amx_gflops=A (0 where the OS refuses AMX).
 */
#include <immintrin.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__AMX_BF16__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if !defined(__AVX512BF16__)
#error "bf16_peak needs AVX512_BF16 (compile with -march=native on such a CPU)"
#endif

#define ACC 16
#define ITERS 10000000L
#define TRIALS 20

static volatile float sink;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

// clang-format off
#define EACH(X)                                                                \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)                                      \
  X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
// clang-format on
#define DECL(i) __m512 c##i = _mm512_set1_ps((float)(i));
#define SUM(i) sum = _mm512_add_ps(sum, c##i);

/* Seconds of the best run of `STEP` over ACC chains. */
#define BEST(STEP)                                                             \
  ({                                                                           \
    double best = 1e30;                                                        \
    for (int trial = 0; trial < TRIALS; ++trial) {                             \
      EACH(DECL)                                                               \
      double t0 = now();                                                       \
      for (long it = 0; it < ITERS; ++it) {                                    \
        EACH(STEP)                                                             \
        __asm__ volatile("" : "+v"(a), "+v"(b));                               \
      }                                                                        \
      double dt = now() - t0;                                                  \
      __m512 sum = _mm512_setzero_ps();                                        \
      EACH(SUM)                                                                \
      sink = _mm512_reduce_add_ps(sum);                                        \
      if (dt < best)                                                           \
        best = dt;                                                             \
    }                                                                          \
    best;                                                                      \
  })

#if defined(__AMX_BF16__)
#define AMX_ITERS 2000000L

/* Seconds of the best run of AMX_ITERS x 4 tdpbf16ps, or 0 where Linux
 * refuses the tile state (arch_prctl ARCH_REQ_XCOMP_PERM, XTILEDATA). */
static double amx_best(void) {
  if (syscall(SYS_arch_prctl, 0x1023, 18) != 0)
    return 0;
  struct {
    unsigned char palette, start_row, reserved[14];
    unsigned short colsb[16];
    unsigned char rows[16];
  } cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
  static unsigned short ones[16 * 32];
  for (int i = 0; i < 16 * 32; ++i)
    ones[i] = 0x3380; /* bf16 ~6e-8: the sums stay small and normal */
  double best = 1e30;
  for (int trial = 0; trial < TRIALS; ++trial) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, ones, 64);
    _tile_loadd(5, ones, 64);
    _tile_loadd(6, ones, 64);
    _tile_loadd(7, ones, 64);
    double t0 = now();
    for (long it = 0; it < AMX_ITERS; ++it) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    double dt = now() - t0;
    static float out[16 * 16];
    _tile_stored(0, out, 64);
    sink = out[0];
    if (dt < best)
      best = dt;
  }
  _tile_release();
  return best;
}
#endif

int main(void) {
  double bf16, f32;
  {
    __m512bh a = (__m512bh)_mm512_set1_epi16(0x3380); /* bf16 ~6e-8 */
    __m512bh b = (__m512bh)_mm512_set1_epi16(0x3f80); /* bf16 1.0 */
#define DOT(i) c##i = _mm512_dpbf16_ps(c##i, a, b);
    bf16 = BEST(DOT);
  }
  {
    __m512 a = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
#define FMA(i) c##i = _mm512_fmadd_ps(c##i, a, b);
    f32 = BEST(FMA);
  }
  printf("threads=1 bf16_gflops=%.1f f32_gflops=%.1f acc=%d\n",
         (double)ITERS * ACC * 64 / bf16 * 1e-9,
         (double)ITERS * ACC * 32 / f32 * 1e-9, ACC);
#if defined(__AMX_BF16__)
  double amx = amx_best();
  printf("amx_gflops=%.1f\n",
         amx > 0 ? (double)AMX_ITERS * 4 * 16384 / amx * 1e-9 : 0.0);
#endif
  return 0;
}
