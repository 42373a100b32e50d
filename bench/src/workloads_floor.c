/* SPDX-License-Identifier: MIT */
/*
 * workloads_floor.c -- the floor: the fastest handoff this machine can do
 * between two threads, with no lock around it.
 *
 *   spin     two threads pass a token through one atomic word; each waits
 *            for its turn by spinning on a load (a waiter seeing a store).
 *            Reported one way: half a round trip.
 *   futex    the same token, but a waiter that does not have it parks in
 *            FUTEX_WAIT and the passer calls FUTEX_WAKE (a parked waiter
 *            woken by a futex): per handoff.  This is what a yield to a
 *            parked thread costs, at least.
 *   clock    the spinning ping-pong with one clock read per handoff, made
 *            by the passer just before it passes (a lock that times its
 *            holder's slice stamps each handoff with the time, as gvloop's
 *            does): not a floor, the cost a clock read adds to one.
 *   wake     one waiter parked in FUTEX_WAIT for ~200 us, woken by a store +
 *            FUTEX_WAKE: from just before the store to the waiter running.
 *            This is what a boosted acquire that waits for a safe point pays
 *            at least once the holder lets go.
 *
 * bench_floor_probe() takes a short measurement of all three; the cases
 * whose costs are reported as multiples of the floor (thread_pass, dispatch,
 * convoy) call it at the start of every run, so the ratio is against the
 * floor of the same moment (the machine's fast and slow modes come and go
 * between runs).  The `floor` case reports a longer measurement of the same.
 *
 * With two CPUs or more allowed, the two threads run pinned to two different
 * ones (the first two of the process's mask), so the figure is one thread
 * handing to another on another CPU every time, not a mix of that and of
 * two threads taking turns on one CPU; with one CPU allowed, both share it.
 *
 * On one CPU a spinning waiter holds the only CPU until the scheduler takes
 * it away, so every spin gives the CPU up (sched_yield) after a bounded
 * number of loads, and each part stops after a time cap.
 */
#include "workloads.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SPIN_BEFORE_YIELD 20000

static void futex_wait(atomic_uint *w, unsigned val) {
  syscall(SYS_futex, (unsigned *)w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(atomic_uint *w) {
  syscall(SYS_futex, (unsigned *)w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Placements: the two threads on two different CPUs, or both on one. */
enum { PL_CROSS, PL_SAME };

/* The first two CPUs of the caller's mask in c[0], c[1] (-1: none).
 * Returns how many it found (at most 2). */
static int floor_cpus(cpu_set_t *saved, int c[2]) {
  int n = 0;
  c[0] = c[1] = -1;
  if (pthread_getaffinity_np(pthread_self(), sizeof *saved, saved) != 0) return 0;
  for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
    if (CPU_ISSET(i, saved)) c[n++] = i;
  return n;
}

/* Start fn on a new thread placed as asked: the caller on the first CPU of
 * its mask, the new thread on the second (PL_CROSS) or the first (PL_SAME).
 * The caller's old mask goes to *saved for floor_unpin.  Returns -1 (and
 * starts nothing) when PL_CROSS is asked with one CPU allowed. */
static int floor_start(pthread_t *tid, void *(*fn)(void *), void *arg, int place,
                       cpu_set_t *saved) {
  int c[2], n = floor_cpus(saved, c);
  if (place == PL_CROSS && n < 2) return -1;
  cpu_set_t mine, other;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  int pinned = 0;
  if (n >= 1) {
    CPU_ZERO(&mine);
    CPU_SET(c[0], &mine);
    CPU_ZERO(&other);
    CPU_SET(place == PL_CROSS ? c[1] : c[0], &other);
    pinned = pthread_attr_setaffinity_np(&attr, sizeof other, &other) == 0 &&
             pthread_setaffinity_np(pthread_self(), sizeof mine, &mine) == 0;
  }
  int err = pthread_create(tid, &attr, fn, arg);
  pthread_attr_destroy(&attr);
  if (err) bench_die("pthread_create", err);
  return pinned;
}

static void floor_unpin(int pinned, const cpu_set_t *saved) {
  if (pinned > 0) pthread_setaffinity_np(pthread_self(), sizeof *saved, saved);
}

typedef struct {
  atomic_uint turn;          /* even: thread 0's turn, odd: thread 1's     */
  atomic_int stop;
  int parked;                /* 0: spin, 1: futex                          */
  int clocked;               /* read the clock before every pass           */
  uint64_t n;                /* round trips                                */
  uint64_t cap_ns;
  uint64_t done;             /* round trips actually done (thread 0)       */
  uint64_t elapsed_ns;
} pp_t;

/* Wait until turn's low bit is `me`.  Returns 0 if told to stop. */
static int pp_wait(pp_t *p, unsigned me) {
  unsigned v;
  if (p->parked) {
    while (((v = atomic_load_explicit(&p->turn, memory_order_acquire)) & 1u) != me) {
      if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return 0;
      futex_wait(&p->turn, v);
    }
    return 1;
  }
  for (unsigned spins = 0;; spins++) {
    v = atomic_load_explicit(&p->turn, memory_order_acquire);
    if ((v & 1u) == me) return 1;
    if (spins >= SPIN_BEFORE_YIELD) {
      if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return 0;
      sched_yield();
      spins = 0;
    }
  }
}

static void pp_pass(pp_t *p) {
  if (p->clocked) (void)bench_now_ns();
  atomic_fetch_add_explicit(&p->turn, 1, memory_order_release);
  if (p->parked) futex_wake(&p->turn);
}

static void *pp_other(void *arg) {
  pp_t *p = arg;
  while (pp_wait(p, 1)) pp_pass(p);
  return NULL;
}

/* Ns per round trip of n trips (or as many as fit in cap_ns); 0 when the
 * placement is not possible. */
static double pingpong(int parked, int place, uint64_t n, uint64_t cap_ns,
                       int clocked) {
  pp_t p = {.parked = parked, .clocked = clocked, .n = n, .cap_ns = cap_ns};
  atomic_init(&p.turn, 0);
  atomic_init(&p.stop, 0);
  pthread_t tid;
  cpu_set_t saved;
  int pinned = floor_start(&tid, pp_other, &p, place, &saved);
  if (pinned < 0) return 0;
  /* A few trips first so both threads are running (at most a tenth of
   * the cap: on a busy CPU a trip can wait for other processes). */
  uint64_t warm_end = bench_now_ns() + cap_ns / 10;
  for (int i = 0; i < 1000 && bench_now_ns() < warm_end; i++) {
    pp_pass(&p);
    pp_wait(&p, 0);
  }
  uint64_t t0 = bench_now_ns(), end = t0 + cap_ns, i;
  for (i = 0; i < n; i++) {
    pp_pass(&p);
    pp_wait(&p, 0);
    if ((i & 7) == 7 && bench_now_ns() > end) { i++; break; }
  }
  uint64_t dt = bench_now_ns() - t0;
  atomic_store(&p.stop, 1);
  atomic_fetch_add(&p.turn, 1); /* hand it over once more so it sees stop */
  futex_wake(&p.turn);
  pthread_join(tid, NULL);
  floor_unpin(pinned, &saved);
  return (double)dt / (double)(i ? i : 1);
}

/* ---- wake-up of a parked waiter --------------------------------------------- */

typedef struct {
  atomic_uint word;
  atomic_int parked;              /* the waiter is about to FUTEX_WAIT   */
  _Atomic uint64_t t0;
  double *lat;
  size_t n, cap;
  atomic_int stop;
} wk_t;

static void *wk_waiter(void *arg) {
  wk_t *w = arg;
  unsigned seen = atomic_load(&w->word);
  while (!atomic_load(&w->stop)) {
    atomic_store(&w->parked, 1);
    while (atomic_load_explicit(&w->word, memory_order_acquire) == seen) futex_wait(&w->word, seen);
    uint64_t t1 = bench_now_ns();
    seen = atomic_load(&w->word);
    uint64_t t0 = atomic_load(&w->t0);
    if (!atomic_load(&w->stop) && w->n < w->cap && t1 >= t0) w->lat[w->n++] = (double)(t1 - t0);
  }
  return NULL;
}

/* Median and 99th percentile of n wake-ups, ns (0 when the placement is
 * not possible). */
static void wakeups(int place, size_t n, uint64_t cap_ns, double *p50, double *p99) {
  wk_t w = {.cap = n};
  w.lat = bench_xcalloc(n, sizeof *w.lat);
  atomic_init(&w.word, 0);
  atomic_init(&w.parked, 0);
  atomic_init(&w.t0, 0);
  atomic_init(&w.stop, 0);
  pthread_t tid;
  cpu_set_t saved;
  int pinned = floor_start(&tid, wk_waiter, &w, place, &saved);
  *p50 = *p99 = 0;
  if (pinned < 0) {
    free(w.lat);
    return;
  }
  uint64_t end = bench_now_ns() + cap_ns;
  for (size_t i = 0; i < n + 1 && bench_now_ns() < end; i++) {
    while (!atomic_load(&w.parked)) bench_sleep_ns(20000);
    bench_sleep_ns(200000); /* parked by now: the store finds it asleep */
    atomic_store(&w.parked, 0);
    atomic_store(&w.t0, bench_now_ns());
    atomic_fetch_add_explicit(&w.word, 1, memory_order_release);
    futex_wake(&w.word);
  }
  while (!atomic_load(&w.parked)) bench_sleep_ns(20000);
  atomic_store(&w.stop, 1);
  atomic_fetch_add(&w.word, 1);
  futex_wake(&w.word);
  pthread_join(tid, NULL);
  floor_unpin(pinned, &saved);
  *p50 = bench_percentile(w.lat, w.n, 50);
  *p99 = bench_percentile(w.lat, w.n, 99);
  free(w.lat);
}

/* The smaller of two figures where 0 means "not measured". */
static double fastest(double a, double b) {
  if (a <= 0) return b;
  if (b <= 0) return a;
  return a < b ? a : b;
}

void bench_floor_measure(bench_floor_t *f, uint64_t trips, size_t wakes, uint64_t cap_ns) {
  uint64_t ftrips = trips / 4 ? trips / 4 : 1;
  f->spin_cross_ns = pingpong(0, PL_CROSS, trips, cap_ns, 0) / 2.0;
  f->spin_same_ns = pingpong(0, PL_SAME, trips / 20 ? trips / 20 : 1, cap_ns, 0) / 2.0;
  f->futex_cross_ns = pingpong(1, PL_CROSS, ftrips, cap_ns, 0) / 2.0;
  f->futex_same_ns = pingpong(1, PL_SAME, ftrips, cap_ns, 0) / 2.0;
  f->clock_cross_ns = pingpong(0, PL_CROSS, trips, cap_ns, 1) / 2.0;
  double c50, c99, s50, s99;
  wakeups(PL_CROSS, wakes, cap_ns, &c50, &c99);
  wakeups(PL_SAME, wakes, cap_ns, &s50, &s99);
  f->wake_cross_ns = c50;
  f->wake_same_ns = s50;
  f->handoff_ns = fastest(fastest(f->spin_cross_ns, f->spin_same_ns),
                          fastest(f->futex_cross_ns, f->futex_same_ns));
  int cross = c50 > 0 && (s50 <= 0 || c50 <= s50);
  f->wake_p50_ns = cross ? c50 : s50;
  f->wake_p99_ns = cross ? c99 : s99;
}

void bench_floor_probe(bench_floor_t *f, int quick) {
  if (quick) bench_floor_measure(f, 2000, 10, 5 * 1000000ull);
  else bench_floor_measure(f, 20000, 40, 30 * 1000000ull);
}

void bench_case_floor(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  bench_floor_t f;
  if (cfg->quick) bench_floor_measure(&f, 20000, 50, 50 * 1000000ull);
  else bench_floor_measure(&f, 200000, 500, 300 * 1000000ull);
  const char *n = ops->name;
  bench_result("floor", n, "handoff_ns", f.handoff_ns);
  bench_result("floor", n, "wake_p50_us", f.wake_p50_ns / 1000.0);
  bench_result("floor", n, "wake_p99_us", f.wake_p99_ns / 1000.0);
  if (f.spin_cross_ns > 0) bench_result("floor", n, "spin_2cpu_ns", f.spin_cross_ns);
  bench_result("floor", n, "spin_1cpu_ns", f.spin_same_ns);
  if (f.futex_cross_ns > 0) bench_result("floor", n, "futex_2cpu_ns", f.futex_cross_ns);
  if (f.clock_cross_ns > 0) bench_result("floor", n, "clock_2cpu_ns", f.clock_cross_ns);
  bench_result("floor", n, "futex_1cpu_ns", f.futex_same_ns);
  if (f.wake_cross_ns > 0) bench_result("floor", n, "wake_2cpu_us", f.wake_cross_ns / 1000.0);
  bench_result("floor", n, "wake_1cpu_us", f.wake_same_ns / 1000.0);
}

void bench_meta_floor(void) {
  bench_meta("floor", "handoff_ns", "ns", "none", "the fastest handoff of a token between two threads: the smallest of spin_2cpu, spin_1cpu, futex_2cpu and futex_1cpu (the ping-pong the thread_pass target is against)");
  bench_meta("floor", "wake_p50_us", "us", "none", "a thread parked ~200 us in FUTEX_WAIT: store + FUTEX_WAKE to the waiter running, median, the faster placement (the wake-up the dispatch target is against)");
  bench_meta("floor", "wake_p99_us", "us", "none", "as wake_p50_us, 99th percentile, same placement");
  bench_meta("floor", "spin_2cpu_ns", "ns", "none", "token through one word, each thread spinning for its turn, threads on two CPUs: one way");
  bench_meta("floor", "spin_1cpu_ns", "ns", "none", "the same, both threads on one CPU (a spin gives the CPU up with sched_yield)");
  bench_meta("floor", "futex_2cpu_ns", "ns", "none", "token with the waiter parked in FUTEX_WAIT, woken by FUTEX_WAKE, two CPUs: per handoff");
  bench_meta("floor", "futex_1cpu_ns", "ns", "none", "the same on one CPU");
  bench_meta("floor", "clock_2cpu_ns", "ns", "none", "spin_2cpu_ns with a CLOCK_MONOTONIC read by the passer before each pass (what stamping each handoff with the time adds; not part of handoff_ns)");
  bench_meta("floor", "wake_2cpu_us", "us", "none", "parked waiter's wake-up (median), waker and waiter on two CPUs");
  bench_meta("floor", "wake_1cpu_us", "us", "none", "the same on one CPU");
}

/* Only a name in the tables: the floor case uses none of the lock calls. */
const bench_gvl_ops_t bench_floor_ops = {
    .name = "floor",
    .design = "the machine's raw thread handoff, no lock: a spinning waiter seeing a store, "
              "a parked waiter woken by a futex (bench/src/workloads_floor.c)"};
