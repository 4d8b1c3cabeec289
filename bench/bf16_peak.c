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
 */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

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
  return 0;
}
