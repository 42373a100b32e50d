/* SPDX-License-Identifier: MIT */
/*
 * workloads.h -- the benchmark cases, each a function over bench_gvl_ops_t.
 *
 * Every case creates a fresh GVL of the variant, runs once, prints its
 * RESULT lines under the variant's name and destroys the GVL.  Sizes come
 * from bench_cfg_t so --quick can shrink every case the same way.
 */
#ifndef BENCH_WORKLOADS_H
#define BENCH_WORKLOADS_H

#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct {
  int quick;               /* smoke-test sizes                              */
  uint64_t pairs;          /* uncontended: acquire/release pairs per round  */
  int rounds;              /* uncontended, check_ints: alternating rounds (many
                              short ones: the fastest of each kind is the one
                              the machine's other load did not hit)       */
  uint64_t round_ns;       /* check_ints: length of one timed loop          */
  uint64_t passes;         /* thread_pass: yields per thread                */
  uint64_t trips;          /* pipe, convoy: round trips                     */
  uint64_t mutex_ops;      /* mutex: lock/unlock pairs, all threads together */
  uint64_t flag_cap_ns;    /* busy_flag: give up after this long            */
  uint64_t wakeup_ns;      /* wakeup: length of the run                     */
  uint64_t solo_ns;        /* dispatch: hog alone, all phases together      */
  uint64_t events_ns;      /* dispatch: 1 kHz events, all phases together   */
  uint64_t fair_ns;        /* fairness, starvation: length of the run       */
  uint64_t convoy_solo_ns; /* convoy: hogs alone before the I/O thread      */
  uint64_t convoy_cap_ns;  /* convoy: max time of the I/O thread next to hogs */
} bench_cfg_t;

typedef void (*bench_case_fn)(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);

/* workloads_basic.c */
void bench_case_uncontended(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_case_check_ints(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_case_thread_pass(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_case_pipe(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_case_mutex_10(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_case_mutex_100(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_case_busy_flag(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_meta_basic(void);

/* workloads_sched.c */
void bench_case_wakeup(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_case_dispatch(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_case_fairness(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_case_starvation(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_case_convoy(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_meta_sched(void);

/* workloads_floor.c: the machine's raw thread handoff, no lock around it */
typedef struct {
  double handoff_ns;        /* the fastest of the four ping-pongs below, per handoff */
  double wake_p50_ns, wake_p99_ns;  /* a parked thread woken by a futex, the faster placement */
  double spin_cross_ns, spin_same_ns;    /* spinning waiter: 2 CPUs / 1 CPU (0: not run) */
  double futex_cross_ns, futex_same_ns;  /* parked waiter, FUTEX_WAKE            */
  double wake_cross_ns, wake_same_ns;    /* wake-up medians per placement       */
  double clock_cross_ns;    /* spin_cross with a clock read per pass (0: not run) */
} bench_floor_t;

void bench_floor_measure(bench_floor_t *f, uint64_t trips, size_t wakes, uint64_t cap_ns);
/* A short measurement (~0.1 s; quick: ~20 ms), taken at the start of a run
 * of the cases that report their costs as multiples of the floor. */
void bench_floor_probe(bench_floor_t *f, int quick);
void bench_case_floor(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg);
void bench_meta_floor(void);
extern const bench_gvl_ops_t bench_floor_ops;

/* ---- shared by the cases (workloads_common.c) ---------------------------- */

/* Who held the GVL last, as seen by the workload itself: a count of real
 * switches that means the same thing for every variant.  Meaningless for
 * nogvl (nothing is held), where it is not reported. */
typedef struct {
  _Atomic(void *) holder;
  atomic_uint_fast64_t switches;
} bench_track_t;

static inline void bench_track(bench_track_t *k, void *t) {
  if (atomic_load_explicit(&k->holder, memory_order_relaxed) != t) {
    atomic_store_explicit(&k->holder, t, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->switches, 1, memory_order_relaxed);
  }
}

/* A start line for n threads and the caller.  Threads call bench_gate_wait;
 * the caller's bench_gate_open waits until all n have arrived, reads the
 * clock and only then lets them go, so the time it returns is neither late
 * (threads already running) nor early (thread creation included). */
typedef struct {
  pthread_barrier_t bar;
  atomic_int arrived;
} bench_gate_t;

void bench_gate_init(bench_gate_t *gate, int nthreads);
void bench_gate_destroy(bench_gate_t *gate);
void bench_gate_wait(bench_gate_t *gate);
uint64_t bench_gate_open(bench_gate_t *gate, int nthreads);

/* A CPU-bound interpreter thread: holds the GVL and does 1 us units of work,
 * passing a safe point after each, until *stop.  units is published after
 * every unit so others can sample the rate. */
typedef struct {
  const bench_gvl_ops_t *ops;
  void *g;
  pthread_barrier_t *start;   /* optional: wait here after attaching       */
  atomic_int *stop;
  uint64_t deadline_ns;       /* also stop at this time (0: never), so a
                                 variant that starves the thread the case
                                 waits for cannot hang the run            */
  atomic_uint_fast64_t units;
  atomic_int running;         /* set once the hog holds the GVL            */
  atomic_int ktid;            /* kernel thread id, set before running      */
} bench_hog_t;

void *bench_hog_main(void *arg);
/* Start hogs on their own threads (ids in tids) and wait, at most 1 s, until
 * each has held the GVL once; join them. */
void bench_hogs_start(bench_hog_t *h, int n, pthread_t *tids);
void bench_hogs_join(int n, pthread_t *tids);
uint64_t bench_hogs_units(bench_hog_t *h, int n);
/* The kernel's account of the hogs (threads tids) so far, summed: CPU time
 * (their CPU clocks) and time runnable but waiting for a CPU (Linux
 * schedstat: counted as each wait ends), in ns.  Returns 0 where the
 * kernel does not keep it (the callers then leave the figures out). */
int bench_hogs_sched(bench_hog_t *h, const pthread_t *tids, int n, uint64_t *run_ns,
                     uint64_t *wait_ns);

/* Summary of latency samples in ns: prints p50/p99/max in us and count. */
void bench_report_latency(const char *bench, const char *variant, double *ns, size_t n);

/* 1 for variants that hold a real lock (everything but nogvl). */
int bench_has_lock(const bench_gvl_ops_t *ops);

#endif /* BENCH_WORKLOADS_H */
