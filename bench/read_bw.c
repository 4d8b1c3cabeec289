/* The machine's read bandwidth (issue 25, item 3): T threads each sum their
 * own part of one 1 GiB buffer (far above the caches) as floats, read as 8
 * streams at once (the part cut in 8; a GEMV over panels reads several rows
 * at once too, and on this VM one stream reaches only about half of what 8
 * do), each into its own 64-byte vector accumulators (loads and adds only);
 * the best of PASSES passes, in GB/s (1e9 bytes). A decode step reads its weights and caches once, in order, so this
 * is the ceiling a memory-bound decode can reach.
 *
 *   cc -O3 -march=native -pthread bench/read_bw.c -o read_bw && ./read_bw 1 2
 *   -> threads=1 gbs=... (one line per argument)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BYTES ((size_t)1 << 30)
#define PASSES 6

typedef float v16 __attribute__((vector_size(64)));

static float *buf;
static size_t words;
static int nthreads;
static pthread_barrier_t barrier;
static double t_start[64], t_end[64];
static volatile float sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define STREAMS 8

static float sum(const float *p, size_t n) {
  const v16 *v = (const v16 *)p;
  size_t per = n / 16 / STREAMS;  /* vectors per stream */
  v16 a[2 * STREAMS] = {{0}};
  for (size_t i = 0; i + 2 <= per; i += 2)
    for (int s = 0; s < STREAMS; ++s) {
      a[s] += v[s * per + i];
      a[s + STREAMS] += v[s * per + i + 1];
    }
  v16 t = {0};
  for (int s = 0; s < 2 * STREAMS; ++s) t += a[s];
  float s = 0;
  for (int k = 0; k < 16; ++k) s += t[k];
  return s;
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  size_t per = words / nthreads;
  const float *p = buf + per * id;
  memset((void *)p, 0, per * sizeof(float));   /* first touch: this thread's pages */
  for (int pass = 0; pass < PASSES; ++pass) {
    pthread_barrier_wait(&barrier);
    double t0 = now();
    sink += sum(p, per);
    double t1 = now();
    pthread_barrier_wait(&barrier);
    if (pass == 0 || t1 - t0 < t_end[id] - t_start[id]) {
      t_start[id] = t0;
      t_end[id] = t1;
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: read_bw THREADS...\n");
    return 2;
  }
  words = BYTES / sizeof(float);
  for (int a = 1; a < argc; ++a) {
    nthreads = atoi(argv[a]);
    if (nthreads < 1 || nthreads > 64) {
      fprintf(stderr, "read_bw: threads must be 1..64\n");
      return 2;
    }
    if (posix_memalign((void **)&buf, 4096, BYTES)) {
      fprintf(stderr, "read_bw: cannot allocate 1 GiB\n");
      return 1;
    }
    pthread_barrier_init(&barrier, NULL, nthreads);
    pthread_t th[64];
    for (int i = 0; i < nthreads; ++i)
      pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < nthreads; ++i) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    /* Each thread's best pass; the slowest of those bounds the whole. */
    double worst = 0;
    for (int i = 0; i < nthreads; ++i)
      if (t_end[i] - t_start[i] > worst) worst = t_end[i] - t_start[i];
    size_t read = (words / nthreads) * nthreads * sizeof(float);
    printf("threads=%d gbs=%.2f\n", nthreads, read / worst / 1e9);
    free(buf);
  }
  return 0;
}
