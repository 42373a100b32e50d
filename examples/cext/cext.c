/* SPDX-License-Identifier: MIT */
/*
 * cext.c -- a C extension whose native library calls back from its own
 * thread into host code, 1000 times a second, while interpreter threads
 * compute.
 *
 *   cext [--threads N] [--seconds S] [--rate HZ] [--normal] [--no-realtime]
 *
 * The sensor library (sensor.c) owns its thread; the host never created
 * it.  The extension's callback enters host code with
 *     gvl_call_with(g, GVL_PRIO_BOOST, host_on_sample, &sample)
 * which attaches the thread on first use (and caches that), asks the
 * interpreter thread holding the GVL to give it up at its next safe point,
 * runs the host function holding the GVL, and gives the GVL back.
 *
 * Printed, per priority: how long the call took to get into host code
 * (p50/p99/max), how late the OS woke the sensor thread anyway (for
 * scale: the GVL cannot do better than the scheduler), and how much of
 * their solo speed the interpreter threads kept.  --normal runs the same
 * again at GVL_PRIO_NORMAL to show what the boost buys.  Exit status 0 when
 * every call got into host code.
 *
 * The sensor's thread asks for SCHED_FIFO, as a driver's or an audio
 * library's would (--no-realtime: an ordinary thread).  An ordinary one
 * competes with the interpreter threads for CPUs: the one the GVL goes to
 * when the call returns is often woken onto the sensor thread's CPU, and
 * the OS may then run it there for a kernel time slice (milliseconds) while
 * the sensor's next tick is due.  Those ticks are skipped and counted.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L  /* clock_gettime, nanosleep, strdup in -std=c11 */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gvl.h"
#include "sensor.h"

#define MAX_THREADS 16

/* ---- host state: guarded by the GVL -------------------------------------- */

typedef struct {
  uint64_t *lat_ns;   /* call -> host code, per sample */
  uint64_t *wake_ns;  /* due -> sensor callback running, per sample */
  size_t n, cap;
  double sum;         /* the host's running use of the readings */
} host_log_t;

typedef struct {
  gvl_t *g;
  int prio;
  host_log_t log;     /* written only by host code, under the GVL */
  atomic_uint failures;
  unsigned long skipped;  /* sensor ticks skipped, once it has stopped */
  int realtime;           /* ask for a SCHED_FIFO sensor thread */
  int started;            /* the sensor started */
  int got_realtime;       /* and got it */
} ext_t;

typedef struct {
  ext_t *ext;
  double value;
  uint64_t due_ns, call_ns;
} sample_t;

/* Host code: runs holding the GVL. */
static void *host_on_sample(void *arg) {
  sample_t *s = arg;
  uint64_t in = gvl_now_ns();
  host_log_t *log = &s->ext->log;
  if (log->n < log->cap) {
    log->lat_ns[log->n] = in - s->call_ns;
    log->wake_ns[log->n] = s->call_ns > s->due_ns ? s->call_ns - s->due_ns : 0;
    log->n++;
  }
  log->sum += s->value;
  return s;
}

/* The extension's callback, on the sensor library's thread. */
static void on_reading(double value, uint64_t due_ns, void *user) {
  ext_t *e = user;
  sample_t s = {e, value, due_ns, gvl_now_ns()};
  if (gvl_call_with(e->g, e->prio, host_on_sample, &s) != &s)
    atomic_fetch_add(&e->failures, 1);
}

/* ---- interpreter threads -------------------------------------------------- */

typedef struct {
  gvl_t *g;
  atomic_int *stop;
  uint64_t units;     /* ~1 us units of work done */
  unsigned steps;     /* xorshift steps per unit */
  pthread_t tid;
} interp_t;

static uint64_t work_unit(uint64_t x, unsigned steps) {
  for (unsigned i = 0; i < steps; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

static void *interp_main(void *arg) {
  interp_t *it = arg;
  gvl_thread_t *t = gvl_thread_attach(it->g, GVL_PRIO_NORMAL);
  if (t == NULL) return NULL;
  uint64_t x = 88172645463325252u, n = 0;
  gvl_acquire(t);
  while (!atomic_load_explicit(it->stop, memory_order_relaxed)) {
    x = work_unit(x, it->steps);
    n++;
    gvl_check_ints(t); /* the safe point, every ~1 us of work */
  }
  gvl_release(t);
  gvl_thread_detach(t);
  it->units = n + (x == 0); /* keep x alive */
  return NULL;
}

/* Steps of work_unit per microsecond on this machine. */
static unsigned calibrate(void) {
  unsigned steps = 1000;
  uint64_t x = 1, t0 = gvl_now_ns();
  unsigned long n = 0;
  while (gvl_now_ns() - t0 < 20000000u) {
    x = work_unit(x, steps);
    n++;
  }
  double us = (double)(gvl_now_ns() - t0) / 1e3;
  double per_us = (double)n * steps / us;
  return per_us < 1 ? 1 : (unsigned)per_us + (x == 0);
}

/* Run n interpreter threads for secs, with the sensor at rate_hz if e is
 * not NULL.  Returns the total units of work per second. */
static double run_phase(gvl_t *g, int n, unsigned steps, double secs, ext_t *e,
                        unsigned rate_hz) {
  atomic_int stop = 0;
  interp_t it[MAX_THREADS];
  int started = 0;
  for (int i = 0; i < n; i++) {
    it[i] = (interp_t){g, &stop, 0, steps, 0};
    if (pthread_create(&it[i].tid, NULL, interp_main, &it[i]) != 0) break;
    started++;
  }
  sensor_t *s = NULL;
  if (e != NULL && (s = sensor_start(rate_hz, e->realtime, on_reading, e)) == NULL)
    fprintf(stderr, "cext: sensor_start: %s\n", strerror(errno));
  if (e != NULL) {
    e->started = s != NULL;
    e->got_realtime = sensor_realtime(s);
  }
  uint64_t t0 = gvl_now_ns();
  struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
  unsigned long skipped = sensor_stop(s);
  if (e != NULL) e->skipped = skipped;
  atomic_store(&stop, 1);
  uint64_t units = 0;
  for (int i = 0; i < started; i++) {
    pthread_join(it[i].tid, NULL);
    units += it[i].units;
  }
  return (double)units / ((double)(gvl_now_ns() - t0) / 1e9);
}

/* ---- figures -------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct_us(uint64_t *v, size_t n, int p) {
  if (n == 0) return 0;
  size_t i = (n * (size_t)p + 99) / 100;
  return (double)v[i ? i - 1 : 0] / 1e3;
}

static void report(const char *name, ext_t *e, double rate, double solo) {
  host_log_t *l = &e->log;
  qsort(l->lat_ns, l->n, sizeof *l->lat_ns, cmp_u64);
  qsort(l->wake_ns, l->n, sizeof *l->wake_ns, cmp_u64);
  double p50 = pct_us(l->lat_ns, l->n, 50), p99 = pct_us(l->lat_ns, l->n, 99),
         mx = pct_us(l->lat_ns, l->n, 100);
  double w50 = pct_us(l->wake_ns, l->n, 50), w99 = pct_us(l->wake_ns, l->n, 99);
  double kept = solo > 0 ? 100.0 * rate / solo : 0;
  printf("%-7s %6zu calls  into host code: p50 %8.1f us  p99 %8.1f us  max %8.1f us\n",
         name, l->n, p50, p99, mx);
  printf("%-7s %6s        (OS wake-up lateness of the sensor thread: p50 %.1f us, p99 %.1f us)\n",
         "", "", w50, w99);
  printf("%-7s %6s        sensor thread: %s\n", "", "",
         !e->started     ? "none (it did not start)"
         : e->got_realtime ? "SCHED_FIFO"
         : e->realtime   ? "ordinary (SCHED_FIFO not permitted here)"
                         : "ordinary (--no-realtime)");
  if (e->skipped)
    printf("%-7s %6s        %lu ticks skipped: the OS ran the sensor thread, or host code\n"
           "%-7s %6s        returned, after the next tick was due (not in the figures above)%s\n",
           "", "", e->skipped, "", "",
           e->got_realtime ? "" : ";\n                      an ordinary thread waits for its CPU "
                                  "behind the interpreter threads");
  /* Both rates come from one short run each on a machine others may share:
   * a ratio above 100% means the solo run was the slower one, not that the
   * sensor made the threads faster.  Say so instead of printing "kept 198%". */
  if (kept <= 105.0)
    printf("%-7s %6s        interpreter threads kept %.1f%% of their solo work rate\n", "",
           "", kept);
  else
    printf("%-7s %6s        interpreter threads ran at %.1f%% of the solo rate measured "
           "before: the solo run was slowed by other load (try --seconds 5)\n", "", "", kept);
  printf("STAT prio=%s calls=%zu skipped=%lu p50_us=%.1f p99_us=%.1f max_us=%.1f "
         "wake_p99_us=%.1f kept_pct=%.1f failures=%u\n",
         name, l->n, e->skipped, p50, p99, mx, w99, kept, atomic_load(&e->failures));
}

/* ---- main ----------------------------------------------------------------- */

/* A number in lo..hi; a whole one if whole. */
static int parse_num(const char *s, double lo, double hi, int whole, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (*s == '\0' || *end != '\0' || !(v >= lo && v <= hi)) return -1;
  if (whole && v != (double)(long)v) return -1;
  *out = v;
  return 0;
}

static int run_prio(gvl_t *g, const char *name, int prio, int threads, unsigned steps,
                    double secs, unsigned rate, double solo, int realtime) {
  ext_t e;
  memset(&e, 0, sizeof e);
  e.g = g;
  e.prio = prio;
  e.realtime = realtime;
  e.log.cap = (size_t)(secs * rate) + 1024;
  e.log.lat_ns = calloc(e.log.cap, sizeof(uint64_t));
  e.log.wake_ns = calloc(e.log.cap, sizeof(uint64_t));
  if (e.log.lat_ns == NULL || e.log.wake_ns == NULL) {
    fprintf(stderr, "cext: out of memory\n");
    free(e.log.lat_ns);
    free(e.log.wake_ns);
    return 1;
  }
  double r = run_phase(g, threads, steps, secs, &e, rate);
  report(name, &e, r, solo);
  int bad = atomic_load(&e.failures) != 0 || e.log.n == 0;
  free(e.log.lat_ns);
  free(e.log.wake_ns);
  return bad;
}

int main(int argc, char **argv) {
  double threads = 2, secs = 3, rate = 1000;
  int normal = 0, realtime = 1;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    int bad = 0;
    if (strcmp(argv[i], "--threads") == 0) bad = parse_num(v, 1, MAX_THREADS, 1, &threads), i++;
    else if (strcmp(argv[i], "--seconds") == 0) bad = parse_num(v, 0.2, 3600, 0, &secs), i++;
    else if (strcmp(argv[i], "--rate") == 0) bad = parse_num(v, 1, 100000, 1, &rate), i++;
    else if (strcmp(argv[i], "--normal") == 0) normal = 1;
    else if (strcmp(argv[i], "--no-realtime") == 0) realtime = 0;
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) bad = 2;
    else bad = 3;
    if (bad) {
      if (bad == 3) fprintf(stderr, "cext: unknown option %s\n", argv[i]);
      else if (bad < 0 && !*v) fprintf(stderr, "cext: %s: needs a value\n", argv[i - 1]);
      else if (bad < 0) fprintf(stderr, "cext: %s %s: bad value\n", argv[i - 1], v);
      fprintf(bad == 2 ? stdout : stderr,
              "usage: cext [--threads 1..%d] [--seconds 0.2..3600] [--rate 1..100000 (Hz)] "
              "[--normal] [--no-realtime]\n", MAX_THREADS);
      return bad == 2 ? 0 : 2;
    }
  }
  /* GVL_F_LEND: a SCHED_FIFO sensor thread that wakes on the holder's CPU
   * spins there for the GVL (its sched_yield gives the CPU to no ordinary
   * thread), so it lends the holder its real-time priority to reach its
   * safe point; a booster on another CPU is served within the spin and
   * lends nothing. */
  gvl_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.flags = GVL_F_LEND;
  gvl_t *g = gvl_create(&cfg);
  if (g == NULL) {
    fprintf(stderr, "cext: gvl_create: %s\n", strerror(errno));
    return 1;
  }
  unsigned steps = calibrate();
  int n = (int)threads;
  printf("cext: %d interpreter thread(s) computing (safe point every ~1 us); a native\n"
         "sensor thread calls host code %.0f times a second via gvl_call_with\n", n, rate);
  double solo = run_phase(g, n, steps, secs < 1 ? secs : 1, NULL, 0);
  int bad = run_prio(g, "boost", GVL_PRIO_BOOST, n, steps, secs, (unsigned)rate, solo,
                     realtime);
  if (normal)
    bad |= run_prio(g, "normal", GVL_PRIO_NORMAL, n, steps, secs, (unsigned)rate, solo,
                    realtime);
  int rc = gvl_destroy(g);
  if (rc != 0) {
    fprintf(stderr, "cext: gvl_destroy: %s\n", gvl_strerror(rc));
    bad = 1;
  }
  return bad;
}
