/* bench/fma_peak.c - the machine's FP32 FMA peak, measured on the spot.
 *
 *   cc -O2 -march=native -pthread bench/fma_peak.c -o fma_peak
 *   ./fma_peak [threads...]          (default: 1 2)
 *
 * Each thread runs ACC independent chains acc = acc * a + b of packed FP32
 * FMAs. One FMA unit needs (latency x ports) chains in flight to stay busy:
 * 4 cycles x 2 ports = 8 on current Intel and AMD cores, so 16 zmm chains
 * (of 32 registers) with AVX-512 and 12 ymm chains (of 16) with AVX2 leave
 * headroom without spilling. The ISA is picked at compile time by
 * -march=native. a is just below 1 and b tiny, so the values converge and
 * never overflow or go denormal (denormals would slow some cores down).
 *
 * Flops: 2 per FMA lane (a multiply and an add). For each thread count it
 * prints the best of TRIALS timed runs of ITERS iterations per thread: many
 * short runs, so that the best one is free of other processes' interference
 * on a shared machine (a few long runs were seen to vary by 2x there). One line
 *   threads=T gflops=G isa=avx512 lanes=16 acc=16
 * which bench/run.py parses. The threads start together behind a barrier;
 * the time runs from before the barrier to the last join.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX512F__)
#define ISA "avx512"
#define LANES 16
#define ACC 16
typedef __m512 vec;
#define SET1(x) _mm512_set1_ps(x)
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define ADD(a, b) _mm512_add_ps(a, b)
#define STORE(p, v) _mm512_storeu_ps(p, v)
#elif defined(__AVX2__) && defined(__FMA__)
#define ISA "avx2"
#define LANES 8
#define ACC 12
typedef __m256 vec;
#define SET1(x) _mm256_set1_ps(x)
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define ADD(a, b) _mm256_add_ps(a, b)
#define STORE(p, v) _mm256_storeu_ps(p, v)
#else
#error "fma_peak needs AVX2+FMA or AVX-512 (compile with -march=native)"
#endif

#define ITERS 10000000L /* per thread per trial: ~25-50 ms at a few GHz */
#define TRIALS 40

static pthread_barrier_t barrier;
static volatile float sink;

/* ACC named accumulators, written out so the compiler keeps each in a
 * register (an array may be kept in memory at -O2). */
#define EACH(X)                                                                \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) EXTRA(X)
#if ACC == 16
#define EXTRA(X) X(12) X(13) X(14) X(15)
#else
#define EXTRA(X)
#endif

static void *worker(void *arg) {
  float seed = (float)(size_t)arg * 1e-3f;
  vec a = SET1(0.9999999f), b = SET1(1e-7f);
#define DECL(i) vec c##i = SET1(seed + (float)(i));
  EACH(DECL)
  pthread_barrier_wait(&barrier);
  for (long it = 0; it < ITERS; ++it) {
#define STEP(i) c##i = FMA(c##i, a, b);
    EACH(STEP)
  }
  vec sum = SET1(0.0f);
#define SUM(i) sum = ADD(sum, c##i);
  EACH(SUM)
  float out[LANES];
  STORE(out, sum);
  sink = out[0]; /* keeps the loop alive */
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static double measure(int threads) {
  double best = 0;
  for (int trial = 0; trial < TRIALS; ++trial) {
    pthread_t tid[64];
    pthread_barrier_init(&barrier, NULL, threads + 1);
    for (int t = 0; t < threads; ++t)
      if (pthread_create(&tid[t], NULL, worker, (void *)(size_t)t)) {
        fprintf(stderr, "fma_peak: cannot start thread %d\n", t);
        exit(1);
      }
    double start = now();
    pthread_barrier_wait(&barrier);
    for (int t = 0; t < threads; ++t)
      pthread_join(tid[t], NULL);
    double secs = now() - start;
    pthread_barrier_destroy(&barrier);
    double flops = 2.0 * LANES * ACC * (double)ITERS * threads;
    if (flops / secs > best)
      best = flops / secs;
  }
  return best * 1e-9;
}

int main(int argc, char **argv) {
  int counts[64], n = 0;
  for (int i = 1; i < argc && n < 64; ++i) {
    int t = atoi(argv[i]);
    if (t < 1 || t > 64) {
      fprintf(stderr, "fma_peak: thread count must be 1..64, got '%s'\n",
              argv[i]);
      return 2;
    }
    counts[n++] = t;
  }
  if (n == 0) {
    counts[n++] = 1;
    counts[n++] = 2;
  }
  for (int i = 0; i < n; ++i)
    printf("threads=%d gflops=%.1f isa=%s lanes=%d acc=%d\n", counts[i],
           measure(counts[i]), ISA, LANES, ACC);
  return 0;
}
