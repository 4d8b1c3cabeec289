/* The machine's read bandwidth (issue 25, item 3): T threads each sum their
 * own part of one 1 GiB buffer (far above the caches), in 64-bit integer
 * lanes the compiler vectorizes; the best of PASSES passes, in GB/s (1e9
 * bytes). A decode step reads its weights and caches once, in order, so this
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

static uint64_t *buf;
static size_t words;
static int nthreads;
static pthread_barrier_t barrier;
static double t_start[64], t_end[64];
static volatile uint64_t sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t sum(const uint64_t *p, size_t n) {
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (size_t i = 0; i + 4 <= n; i += 4) {
    a0 += p[i];
    a1 += p[i + 1];
    a2 += p[i + 2];
    a3 += p[i + 3];
  }
  return a0 + a1 + a2 + a3;
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  size_t per = words / nthreads;
  const uint64_t *p = buf + per * id;
  memset((void *)p, id + 1, per * sizeof(uint64_t));   /* first touch: this thread's pages */
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
  words = BYTES / sizeof(uint64_t);
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
    size_t read = (words / nthreads) * nthreads * sizeof(uint64_t);
    printf("threads=%d gbs=%.2f\n", nthreads, read / worst / 1e9);
    free(buf);
  }
  return 0;
}
