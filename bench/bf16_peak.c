/* bench/bf16_peak.c - the machine's bf16 dot-product peak (AVX512_BF16's
 * vdpbf16ps), measured on the spot, the ceiling of attnc --precision=bf16's
 * GEMMs as bench/fma_peak.c's is of f32's.
 *
 *   cc -O2 -march=native bench/bf16_peak.c -o bf16_peak && ./bf16_peak
 *
 * One thread runs ACC independent chains acc += a . b of zmm vdpbf16ps (32
 * bf16 pairs into 16 f32 lanes: 64 flops, a multiply and an add per
 * product). a and b are tiny, so the sums never overflow. Prints the best of
 * TRIALS runs (a shared machine's interference only slows a run down):
 *   threads=1 gflops=G isa=avx512_bf16 flops_per_instr=64 acc=16
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
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(void) {
  __m512bh a = (__m512bh)_mm512_set1_epi16(0x3380); /* bf16 6e-8 */
  __m512bh b = (__m512bh)_mm512_set1_epi16(0x3f80); /* bf16 1.0 */
  double best = 1e30;
  for (int trial = 0; trial < TRIALS; ++trial) {
#define EACH(X)                                                                \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)  \
      X(14) X(15)
#define DECL(i) __m512 c##i = _mm512_set1_ps((float)(i));
    EACH(DECL)
    double t0 = now();
    for (long it = 0; it < ITERS; ++it) {
#define STEP(i) c##i = _mm512_dpbf16_ps(c##i, a, b);
      EACH(STEP)
      /* Keep the compiler from hoisting or merging the chains. */
      __asm__ volatile("" : "+v"(a), "+v"(b));
    }
    double dt = now() - t0;
    __m512 sum = _mm512_setzero_ps();
#define SUM(i) sum = _mm512_add_ps(sum, c##i);
    EACH(SUM)
    sink = _mm512_reduce_add_ps(sum);
    if (dt < best)
      best = dt;
  }
  printf("threads=1 gflops=%.1f isa=avx512_bf16 flops_per_instr=64 acc=%d\n",
         (double)ITERS * ACC * 64 / best * 1e-9, ACC);
  return 0;
}
