/* SPDX-License-Identifier: MIT */
/*
 * workloads_basic.c -- uncontended, check_ints, thread_pass, pipe, mutex,
 * busy_flag: the seed's table (vm4_thread_pass, vm4_pipe, vm3_thread_mutex)
 * and the `0 until flag` fairness bug.
 */
#include "workloads.h"

#include <errno.h>
#include <sched.h>
#include <gvl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* ---- uncontended ---------------------------------------------------------
 * One thread, acquire+release pairs.  Through the interface for every
 * variant; for gvloop also direct libgvl calls and a bare pthread mutex pair
 * in the same rounds (DESIGN.md: <= 1.2x a pthread mutex pair).  Rounds
 * alternate and the fastest round of each kind counts: the fastest is the
 * one the other processes on the machine disturbed least. */

static double pairs_ops(const bench_gvl_ops_t *ops, void *t, uint64_t n) {
  uint64_t t0 = bench_now_ns();
  for (uint64_t i = 0; i < n; i++) {
    ops->acquire(t);
    ops->release(t);
  }
  return (double)(bench_now_ns() - t0) / (double)n;
}

static double pairs_direct(gvl_thread_t *t, uint64_t n) {
  uint64_t t0 = bench_now_ns();
  for (uint64_t i = 0; i < n; i++) {
    if (gvl_acquire(t) || gvl_release(t)) bench_die("gvl_acquire/release", 0);
  }
  return (double)(bench_now_ns() - t0) / (double)n;
}

static double pairs_pthread(pthread_mutex_t *m, uint64_t n) {
  uint64_t t0 = bench_now_ns();
  for (uint64_t i = 0; i < n; i++) {
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
  }
  return (double)(bench_now_ns() - t0) / (double)n;
}

static double dmin(double a, double b) { return a < b ? a : b; }

static int is_gvloop(const bench_gvl_ops_t *ops) { return ops == &bench_gvloop_ops; }

void bench_case_uncontended(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  void *g = ops->create();
  void *t = ops->attach(g);
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  double best_ops = 1e18, best_direct = 1e18, best_pt = 1e18;
  for (int r = 0; r < cfg->rounds; r++) {
    best_ops = dmin(best_ops, pairs_ops(ops, t, cfg->pairs));
    if (!is_gvloop(ops)) continue;
    best_direct = dmin(best_direct, pairs_direct(t, cfg->pairs));
    best_pt = dmin(best_pt, pairs_pthread(&m, cfg->pairs));
  }
  bench_result("uncontended", ops->name, "ns_pair", best_ops);
  if (is_gvloop(ops)) {
    bench_result("uncontended", ops->name, "direct_ns_pair", best_direct);
    bench_result("uncontended", ops->name, "pthread_ns_pair", best_pt);
    bench_result("uncontended", ops->name, "direct_vs_pthread", best_direct / best_pt);
  }
  ops->detach(t);
  ops->destroy(g);
}

/* ---- check_ints ----------------------------------------------------------
 * A tight single-thread loop holding the GVL, with and without a safe point
 * per iteration.  Two bodies: ~20 ns (a VM's safe point on every backward
 * branch) and ~1 us (DESIGN.md's benchmark granularity).  Via the interface
 * the safe point is an indirect call; for gvloop the inline gvl_check_ints is
 * measured too, which is what a host compiles in. */

typedef struct {
  uint64_t iters;
  uint32_t steps;
} body_t;

static uint64_t loop_plain(body_t b) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (uint64_t i = 0; i < b.iters; i++) x = bench_spin(x, b.steps);
  return x;
}

static uint64_t loop_ops(const bench_gvl_ops_t *ops, void *t, body_t b) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (uint64_t i = 0; i < b.iters; i++) {
    x = bench_spin(x, b.steps);
    ops->check_ints(t);
  }
  return x;
}

static uint64_t loop_direct(gvl_thread_t *t, body_t b) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (uint64_t i = 0; i < b.iters; i++) {
    x = bench_spin(x, b.steps);
    if (__builtin_expect(gvl_check_ints(t) != 0, 0)) bench_die("gvl_check_ints", 0);
  }
  return x;
}

/* Which loop to time: 0 plain, 1 via ops, 2 direct. */
static uint64_t time_loop(int kind, const bench_gvl_ops_t *ops, void *t, body_t b) {
  uint64_t t0 = bench_now_ns(), x;
  if (kind == 0) x = loop_plain(b);
  else if (kind == 1) x = loop_ops(ops, t, b);
  else x = loop_direct(t, b);
  bench_sink(x);
  return bench_now_ns() - t0;
}

/* Size a loop to last about round_ns, from a short timed probe of the body
 * itself (the nominal step rate is off when the machine is busy). */
static body_t make_body(uint32_t steps, uint64_t round_ns) {
  body_t b = {2000, steps ? steps : 1};
  uint64_t dt = time_loop(0, NULL, NULL, b);
  uint64_t per = dt / b.iters ? dt / b.iters : 1;
  b.iters = round_ns / per;
  if (b.iters < 1000) b.iters = 1000;
  return b;
}

/* Best-of-rounds times for plain and the kinds in `kinds` (bit 1: ops,
 * bit 2: direct), alternating. */
static void best_loops(const bench_gvl_ops_t *ops, void *t, body_t b, int rounds,
                       int kinds, uint64_t best[3]) {
  best[0] = best[1] = best[2] = UINT64_MAX;
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < 3; k++) {
      if (k && !(kinds & (1 << k))) continue;
      uint64_t dt = time_loop(k, ops, t, b);
      if (dt < best[k]) best[k] = dt;
    }
  }
}

static double pct_over(uint64_t with, uint64_t without) {
  return ((double)with / (double)without - 1.0) * 100.0;
}

void bench_case_check_ints(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  void *g = ops->create();
  void *t = ops->attach(g);
  ops->acquire(t);
  uint32_t tight_steps = bench_steps_per_us / 50;
  body_t tight = make_body(tight_steps, cfg->round_ns);
  body_t coarse = make_body(bench_steps_per_us, cfg->round_ns);
  int kinds = is_gvloop(ops) ? 6 : 2;
  uint64_t best[3];
  best_loops(ops, t, tight, cfg->rounds, kinds, best);
  bench_result("check_ints", ops->name, "overhead_pct", pct_over(best[1], best[0]));
  if (is_gvloop(ops)) {
    bench_result("check_ints", ops->name, "direct_overhead_pct", pct_over(best[2], best[0]));
    bench_result("check_ints", ops->name, "body_ns", (double)best[0] / (double)tight.iters);
    best_loops(ops, t, coarse, cfg->rounds, 4, best);
    bench_result("check_ints", ops->name, "direct_overhead_pct_1us",
                 pct_over(best[2], best[0]));
  }
  ops->release(t);
  ops->detach(t);
  ops->destroy(g);
}

/* ---- thread_pass (vm4_thread_pass) -----------------------------------------
 * Two threads each call yield N times.  A yield with a waiter should be a
 * real handoff: handoff_pct is switches seen by the workload / yields.  The
 * clock starts only once the second thread is queued for the GVL (the first
 * holds it 1 ms after seeing the second arrive), so neither thread can do
 * its yields alone before the other exists. */

typedef struct {
  const bench_gvl_ops_t *ops;
  void *g;
  bench_gate_t *gate;
  bench_track_t *track;
  uint64_t n;
  atomic_int *arrived, *ticket;
  _Atomic uint64_t *start_ns, *end_ns;
  _Atomic uint64_t *cpu_ns;   /* both threads' CPU time over their yields */
} pass_arg_t;

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pass_first(pass_arg_t *a, void *t) {
  while (atomic_load(a->arrived) < 2) sched_yield();
  uint64_t until = bench_now_ns() + 1000000;
  while (bench_now_ns() < until) {
  }
  atomic_store(&a->track->holder, t);
  atomic_store(&a->track->switches, 0);
  atomic_store(a->start_ns, bench_now_ns());
}

static void *pass_main(void *arg) {
  pass_arg_t *a = arg;
  void *t = a->ops->attach(a->g);
  bench_gate_wait(a->gate);
  atomic_fetch_add(a->arrived, 1);
  a->ops->acquire(t);
  if (atomic_fetch_add(a->ticket, 1) == 0) pass_first(a, t);
  else bench_track(a->track, t);
  uint64_t c0 = thread_cpu_ns();
  for (uint64_t i = 0; i < a->n; i++) {
    a->ops->yield(t);
    bench_track(a->track, t);
  }
  atomic_fetch_add(a->cpu_ns, thread_cpu_ns() - c0);
  uint64_t now = bench_now_ns(), prev = atomic_load(a->end_ns);
  while (now > prev && !atomic_compare_exchange_weak(a->end_ns, &prev, now)) {
  }
  a->ops->release(t);
  a->ops->detach(t);
  return NULL;
}

/* Runs fn on n threads that first wait at the gate; returns the wall time
 * from opening the gate to the last join. */
static uint64_t timed_threads(int n, void *(*fn)(void *), void *args, size_t stride,
                              bench_gate_t *gate) {
  pthread_t *tids = bench_xcalloc((size_t)n, sizeof *tids);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  for (int i = 0; i < n; i++) {
    int err = pthread_create(&tids[i], &attr, fn, (char *)args + (size_t)i * stride);
    if (err) bench_die("pthread_create", err);
  }
  pthread_attr_destroy(&attr);
  uint64_t t0 = bench_gate_open(gate, n);
  for (int i = 0; i < n; i++) pthread_join(tids[i], NULL);
  uint64_t dt = bench_now_ns() - t0;
  free(tids);
  return dt;
}

void bench_case_thread_pass(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  void *g = ops->create();
  bench_gate_t gate;
  bench_gate_init(&gate, 2);
  bench_track_t track;
  atomic_init(&track.holder, NULL);
  atomic_init(&track.switches, 0);
  atomic_int arrived = 0, ticket = 0;
  _Atomic uint64_t start_ns = 0, end_ns = 0, cpu_ns = 0;
  pass_arg_t a = {ops, g, &gate, &track, cfg->passes, &arrived, &ticket, &start_ns, &end_ns,
                  &cpu_ns};
  pass_arg_t args[2] = {a, a};
  bench_floor_t fl;
  bench_floor_probe(&fl, cfg->quick);
  timed_threads(2, pass_main, args, sizeof args[0], &gate);
  double dt = (double)(atomic_load(&end_ns) - atomic_load(&start_ns));
  double per = dt / (2.0 * (double)cfg->passes);
  bench_result("thread_pass", ops->name, "time_s", dt / 1e9);
  bench_result("thread_pass", ops->name, "ns_yield", per);
  bench_result("thread_pass", ops->name, "x_floor", per / fl.handoff_ns);
  bench_result("thread_pass", ops->name, "floor_ns", fl.handoff_ns);
  if (fl.clock_cross_ns > 0)
    bench_result("thread_pass", ops->name, "x_clock_floor", per / fl.clock_cross_ns);
  bench_result("thread_pass", ops->name, "cpus", dt > 0 ? (double)atomic_load(&cpu_ns) / dt : 0);
  if (bench_has_lock(ops)) {
    double sw = (double)atomic_load(&track.switches);
    bench_result("thread_pass", ops->name, "handoff_pct", sw / (2.0 * (double)cfg->passes) * 100);
  }
  bench_gate_destroy(&gate);
  ops->destroy(g);
}

/* ---- pipe (vm4_pipe) -----------------------------------------------------
 * Two threads ping-pong one byte each way over two pipes; every read and
 * write is a blocking region (call_without).
 *
 * A pipe round trip is a cross-thread wake-up each way, so its time follows
 * where the scheduler puts the two threads and how deep the other CPU
 * sleeps: on this machine the same 10,000 trips took 0.03-0.69 s from run
 * to run, for nogvl as much as for any lock.  So the case measures each
 * round trip (the pinger's clock around write+read) and reports medians,
 * and for a variant with a lock it runs nogvl in the same call, in
 * PIPE_CHUNKS chunks alternating with the variant's (fresh threads each
 * chunk, ABBA order), so both see the same placements and the same load:
 * vs_nogvl = the variant's median trip / nogvl's median trip. */

#define PIPE_CHUNKS 10

typedef struct {
  int fd;
} io_arg_t;

static void *io_write1(void *arg) {
  io_arg_t *a = arg;
  char c = 'a';
  ssize_t r;
  do r = write(a->fd, &c, 1); while (r < 0 && errno == EINTR);
  if (r != 1) bench_die("write", errno);
  return NULL;
}

static void *io_read1(void *arg) {
  io_arg_t *a = arg;
  char c;
  ssize_t r;
  do r = read(a->fd, &c, 1); while (r < 0 && errno == EINTR);
  if (r != 1) bench_die("read", r < 0 ? errno : EPIPE);
  return NULL;
}

typedef struct {
  const bench_gvl_ops_t *ops;
  void *g;
  bench_gate_t *gate;
  int in, out;     /* this side reads `in`, writes `out`                */
  int first;       /* 1: write first (the pinger)                       */
  uint64_t n;
  double *trip;    /* pinger: ns per round trip, n of them              */
} pipe_arg_t;

static void *pipe_main(void *arg) {
  pipe_arg_t *a = arg;
  void *t = a->ops->attach(a->g);
  io_arg_t in = {a->in}, out = {a->out};
  bench_gate_wait(a->gate);
  a->ops->acquire(t);
  for (uint64_t i = 0; i < a->n; i++) {
    uint64_t t0 = a->first ? bench_now_ns() : 0;
    a->ops->call_without(t, a->first ? io_write1 : io_read1, a->first ? (void *)&out : (void *)&in);
    a->ops->call_without(t, a->first ? io_read1 : io_write1, a->first ? (void *)&in : (void *)&out);
    if (a->first) a->trip[i] = (double)(bench_now_ns() - t0);
    a->ops->check_ints(t);
  }
  a->ops->release(t);
  a->ops->detach(t);
  return NULL;
}

/* One chunk of n round trips on g; per-trip ns into trip[0..n).  Returns
 * the chunk's wall time. */
static uint64_t pipe_chunk(const bench_gvl_ops_t *ops, void *g, const int p1[2],
                           const int p2[2], uint64_t n, double *trip) {
  bench_gate_t gate;
  bench_gate_init(&gate, 2);
  pipe_arg_t args[2] = {{ops, g, &gate, p2[0], p1[1], 1, n, trip},
                        {ops, g, &gate, p1[0], p2[1], 0, n, NULL}};
  uint64_t dt = timed_threads(2, pipe_main, args, sizeof args[0], &gate);
  bench_gate_destroy(&gate);
  return dt;
}

void bench_case_pipe(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  int p1[2], p2[2];
  if (pipe(p1) || pipe(p2)) bench_die("pipe", errno);
  int ref = bench_has_lock(ops);  /* run nogvl alongside */
  uint64_t per = cfg->trips / PIPE_CHUNKS ? cfg->trips / PIPE_CHUNKS : 1;
  size_t n = (size_t)(per * PIPE_CHUNKS);
  double *tv = bench_xcalloc(n, sizeof *tv), *tn = ref ? bench_xcalloc(n, sizeof *tn) : NULL;
  void *g = ops->create(), *gn = ref ? bench_nogvl_ops.create() : NULL;
  uint64_t total = 0;
  for (int c = 0; c < PIPE_CHUNKS; c++) {
    int nogvl_first = ref && (c & 1);
    if (nogvl_first) pipe_chunk(&bench_nogvl_ops, gn, p1, p2, per, tn + (size_t)c * per);
    total += pipe_chunk(ops, g, p1, p2, per, tv + (size_t)c * per);
    if (ref && !nogvl_first) pipe_chunk(&bench_nogvl_ops, gn, p1, p2, per, tn + (size_t)c * per);
  }
  double mv = bench_percentile(tv, n, 50);
  bench_result("pipe", ops->name, "time_s", (double)total / 1e9);
  bench_result("pipe", ops->name, "trip_us", mv / 1000.0);
  bench_result("pipe", ops->name, "trip_p99_us", bench_percentile(tv, n, 99) / 1000.0);
  if (ref) {
    double mn = bench_percentile(tn, n, 50);
    bench_result("pipe", ops->name, "nogvl_trip_us", mn / 1000.0);
    bench_result("pipe", ops->name, "vs_nogvl", mn > 0 ? mv / mn : 0);
    bench_nogvl_ops.destroy(gn);
  }
  ops->destroy(g);
  free(tv);
  free(tn);
  close(p1[0]), close(p1[1]), close(p2[0]), close(p2[1]);
}

/* ---- mutex (vm3_thread_mutex) --------------------------------------------
 * T threads share one host-level mutex and increment a counter under it.
 * Safe points inside and outside the critical section, as a VM has: a
 * holder can be preempted while it owns the mutex, which is what made
 * r31433 take 17 s in the seed's table. */

typedef struct {
  const bench_gvl_ops_t *ops;
  void *g, *m;
  bench_gate_t *gate;
  uint64_t n;
  uint64_t *counter;   /* guarded by m */
} mutex_arg_t;

static void *mutex_main(void *arg) {
  mutex_arg_t *a = arg;
  void *t = a->ops->attach(a->g);
  bench_gate_wait(a->gate);
  a->ops->acquire(t);
  for (uint64_t i = 0; i < a->n; i++) {
    a->ops->check_ints(t);
    a->ops->mutex_lock(t, a->m);
    a->ops->check_ints(t);
    (*a->counter)++;
    a->ops->mutex_unlock(t, a->m);
  }
  a->ops->release(t);
  a->ops->detach(t);
  return NULL;
}

static void mutex_case(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg, int nthreads,
                       const char *bench) {
  void *g = ops->create();
  void *m = ops->mutex_create(g);
  bench_gate_t gate;
  bench_gate_init(&gate, nthreads);
  uint64_t counter = 0, per = cfg->mutex_ops / (uint64_t)nthreads;
  mutex_arg_t *args = bench_xcalloc((size_t)nthreads, sizeof *args);
  for (int i = 0; i < nthreads; i++)
    args[i] = (mutex_arg_t){ops, g, m, &gate, per, &counter};
  uint64_t dt = timed_threads(nthreads, mutex_main, args, sizeof *args, &gate);
  if (counter != per * (uint64_t)nthreads) bench_die("mutex: lost increments", 0);
  bench_result(bench, ops->name, "time_s", (double)dt / 1e9);
  free(args);
  bench_gate_destroy(&gate);
  ops->mutex_destroy(m);
  ops->destroy(g);
}

void bench_case_mutex_10(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  mutex_case(ops, cfg, 10, "mutex_10");
}

void bench_case_mutex_100(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  mutex_case(ops, cfg, 100, "mutex_100");
}

/* ---- busy_flag (`0 until flag`) ------------------------------------------
 * One thread holds the GVL and only passes safe points until a flag is set;
 * another thread must take the GVL to set it.  Reports how long the setter
 * waited until the spinner saw the flag; gives up after flag_cap_ns (the
 * spinner then stops by itself and `timeouts` counts it). */

typedef struct {
  const bench_gvl_ops_t *ops;
  void *g;
  atomic_int spinning, flag, timed_out;
  uint64_t deadline_ns, seen_ns, set_ns;
} flag_t;

static void *flag_spinner(void *arg) {
  flag_t *f = arg;
  void *t = f->ops->attach(f->g);
  f->ops->acquire(t);
  atomic_store(&f->spinning, 1);
  for (uint64_t i = 1; !atomic_load_explicit(&f->flag, memory_order_relaxed); i++) {
    f->ops->check_ints(t);
    if ((i & 1023) == 0 && bench_now_ns() > f->deadline_ns) {
      atomic_store(&f->timed_out, 1);
      break;
    }
  }
  f->seen_ns = bench_now_ns();
  f->ops->release(t);
  f->ops->detach(t);
  return NULL;
}

static void *flag_setter(void *arg) {
  flag_t *f = arg;
  void *t = f->ops->attach(f->g);
  while (!atomic_load(&f->spinning)) bench_sleep_ns(200000);
  bench_sleep_ns(2000000); /* let the spinner settle into its loop */
  f->set_ns = bench_now_ns();
  f->ops->acquire(t);
  atomic_store(&f->flag, 1);
  f->ops->release(t);
  f->ops->detach(t);
  return NULL;
}

void bench_case_busy_flag(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  flag_t f = {.ops = ops, .g = ops->create()};
  f.deadline_ns = bench_now_ns() + cfg->flag_cap_ns;
  pthread_t a, b;
  if (pthread_create(&a, NULL, flag_spinner, &f)) bench_die("pthread_create", 0);
  if (pthread_create(&b, NULL, flag_setter, &f)) bench_die("pthread_create", 0);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  double ms = f.seen_ns > f.set_ns ? (double)(f.seen_ns - f.set_ns) / 1e6 : 0;
  bench_result("busy_flag", ops->name, "time_ms", ms);
  bench_result("busy_flag", ops->name, "timeouts", atomic_load(&f.timed_out));
  bench_stats_t s;
  ops->stats(f.g, &s);
  bench_result("busy_flag", ops->name, "preemptions", (double)s.preemptions);
  ops->destroy(f.g);
}

void bench_meta_basic(void) {
  bench_meta("uncontended", "ns_pair", "ns", "low", "acquire+release pair via the bench interface (indirect calls)");
  bench_meta("uncontended", "direct_ns_pair", "ns", "low", "gvl_acquire+gvl_release called directly");
  bench_meta("uncontended", "pthread_ns_pair", "ns", "low", "bare pthread_mutex_lock+unlock, same run");
  bench_meta("uncontended", "direct_vs_pthread", "x", "low", "direct gvloop pair / pthread pair (target <= 1.2)");
  bench_meta("check_ints", "overhead_pct", "%", "low", "~20 ns loop body + safe point via the interface vs no safe point");
  bench_meta("check_ints", "direct_overhead_pct", "%", "low", "~20 ns body + inline gvl_check_ints vs none (target <= 1)");
  bench_meta("check_ints", "direct_overhead_pct_1us", "%", "low", "~1 us body + inline gvl_check_ints vs none");
  bench_meta("check_ints", "body_ns", "ns", "none", "measured loop body of the tight loop");
  bench_meta("thread_pass", "time_s", "s", "low", "2 threads x N yields (vm4_thread_pass)");
  bench_meta("thread_pass", "handoff_pct", "%", "high", "yields that really switched threads");
  bench_meta("thread_pass", "ns_yield", "ns", "low", "time per yield (time_s / 2N)");
  bench_meta("thread_pass", "x_floor", "x", "low", "ns_yield / the floor's fastest handoff (floor_ns), same run (target <= 2)");
  bench_meta("thread_pass", "floor_ns", "ns", "none", "the floor's fastest handoff measured at the start of this run");
  bench_meta("thread_pass", "x_clock_floor", "x", "low", "ns_yield / the floor's two-CPU spinning handoff with a clock read per pass (clock_2cpu_ns), same run");
  bench_meta("thread_pass", "cpus", "CPUs", "low", "both threads' CPU time over their yields / the time: 1 = only the thread with the GVL runs, 2 = the waiter spins throughout");
  bench_meta("pipe", "time_s", "s", "low", "N one-byte round trips over two pipes in blocking regions (vm4_pipe), in 10 chunks");
  bench_meta("pipe", "trip_us", "us", "low", "median round trip");
  bench_meta("pipe", "trip_p99_us", "us", "low", "99th percentile round trip");
  bench_meta("pipe", "nogvl_trip_us", "us", "none", "nogvl's median round trip in the chunks run alongside this variant's");
  bench_meta("pipe", "vs_nogvl", "x", "low", "median round trip / nogvl's in the same call, chunks alternating (target <= 1.2)");
  bench_meta("mutex_10", "time_s", "s", "low", "10 threads on one host mutex (vm3_thread_mutex)");
  bench_meta("mutex_100", "time_s", "s", "low", "100 threads on one host mutex (vm3_thread_mutex)");
  bench_meta("busy_flag", "time_ms", "ms", "low", "`0 until flag`: setter's wait until the spinner sees the flag");
  bench_meta("busy_flag", "timeouts", "count", "low", "runs that hit the cap (flag never seen)");
  bench_meta("busy_flag", "preemptions", "count", "none", "safe points that gave the lock up");
}
