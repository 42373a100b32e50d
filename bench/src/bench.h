/* SPDX-License-Identifier: MIT */
/*
 * bench.h -- the common interface every GVL variant implements for the
 * benchmark suite, and the small helpers the workloads share.
 *
 * A variant is a table of function pointers (bench_gvl_ops_t).  The
 * workloads only ever talk to a variant through that table, so gvloop and
 * the baselines run exactly the same code around the lock.  Calling through
 * a pointer costs a few ns, which matters only for the `uncontended` and
 * `check_ints` cases; those cases also measure libgvl's calls directly
 * (inline gvl_check_ints) against a bare pthread mutex in the same run.
 *
 * Errors: this is a benchmark, not a library.  A variant whose primitive
 * fails is broken, so it reports and aborts (bench_die) rather than return
 * an error that every workload would have to thread through.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdint.h>
#include <stddef.h>

/* Counters a variant keeps about itself.  handoffs: acquisitions by a
 * thread other than the previous holder; preemptions: safe points
 * (check_ints) that gave the lock up because something asked. */
typedef struct {
  uint64_t handoffs;
  uint64_t preemptions;
  uint64_t ia_cost_ns;   /* what an interactive preemption costs the
                            preempted thread, as the variant measures it
                            (libgvl's gvl_stats); 0 if it does not */
} bench_stats_t;

typedef struct bench_gvl_ops {
  const char *name;
  const char *design;       /* one line: which design it follows          */
  void *(*create)(void);
  void (*destroy)(void *g);
  void *(*attach)(void *g);          /* the calling thread joins           */
  void (*detach)(void *t);
  void (*acquire)(void *t);
  void (*acquire_prio)(void *t, int prio);
  void (*release)(void *t);
  void (*yield)(void *t);            /* Thread.pass                        */
  void (*check_ints)(void *t);       /* safe point                         */
  void *(*call_without)(void *t, void *(*fn)(void *), void *arg);
  void *(*mutex_create)(void *g);
  void (*mutex_destroy)(void *m);
  void (*mutex_lock)(void *t, void *m);
  void (*mutex_unlock)(void *t, void *m);
  void (*stats)(void *g, bench_stats_t *out);
} bench_gvl_ops_t;

/* The variants (bench_variants.c lists them in table order). */
extern const bench_gvl_ops_t bench_gvloop_ops;
extern const bench_gvl_ops_t bench_gvloop_noboost_ops;
extern const bench_gvl_ops_t bench_gvloop_noia_ops;
extern const bench_gvl_ops_t bench_nogvl_ops;
/* The same two, with each thread that asks for a boost put in SCHED_FIFO
 * (priority 1) at its first boosted acquire, and the GVL created with
 * GVL_F_LEND: evloop's cfg.sched_policy, for the dispatch case only. */
extern const bench_gvl_ops_t bench_gvloop_rt_ops;
extern const bench_gvl_ops_t bench_nogvl_rt_ops;
/* Put the calling thread in SCHED_FIFO once (later calls do nothing). */
void bench_rt_self_once(void);
extern const bench_gvl_ops_t bench_simple_mutex_ops;
extern const bench_gvl_ops_t bench_cond_timer_ops;
extern const bench_gvl_ops_t bench_cpython_ops;
/* The convoy's floor: the least a lock that hands over at safe points
 * costs (variant_token.c); the convoy case only. */
extern const bench_gvl_ops_t bench_token_ops;

/* Boosted priority the workloads use for "event" acquisitions. */
#define BENCH_PRIO_BOOST 10

/* ---- helpers (bench_util.c) -------------------------------------------- */

/* Print "gvlbench: <msg>" and abort: a primitive failed. */
void bench_die(const char *what, int err) __attribute__((noreturn));
/* CLOCK_MONOTONIC in ns. */
uint64_t bench_now_ns(void);
/* Sleep until the absolute CLOCK_MONOTONIC time abs_ns. */
void bench_sleep_until(uint64_t abs_ns);
void bench_sleep_ns(uint64_t ns);
/* malloc that dies on failure. */
void *bench_xcalloc(size_t n, size_t size);
/* Start n threads running fn(arg_i), arg_i = (char *)args + i * stride,
 * and join them.  Dies if a thread cannot be created. */
void bench_run_threads(int n, void *(*fn)(void *), void *args, size_t stride);

/* ---- calibrated CPU work -------------------------------------------------
 * A unit of "interpreter work": a chain of dependent xorshift steps that the
 * compiler cannot fold.  bench_calibrate() finds how many steps take about
 * 1 us on this machine; the hogs pass a safe point after every such unit, as
 * DESIGN.md asks ("the benchmarks put it every ~1 us of work"). */
uint64_t bench_spin(uint64_t x, uint32_t steps) __attribute__((noinline));
void bench_calibrate(void);
extern uint32_t bench_steps_per_us;
/* Sink that keeps work results alive. */
void bench_sink(uint64_t x);

/* ---- result output ------------------------------------------------------- */

/* Print "RESULT <bench> <variant> <metric> <value>". */
void bench_result(const char *bench, const char *variant, const char *metric,
                  double value);
/* Print "META <bench> <metric> <unit> <better> <text>" once per process. */
void bench_meta(const char *bench, const char *metric, const char *unit,
                const char *better, const char *text);

/* Print "CHART <bench> <metric>": benchreport charts it, in call order. */
void bench_chart(const char *bench, const char *metric);

/* ---- percentiles ---------------------------------------------------------- */
/* Sort v[0..n) in place and return the p-th percentile (0..100), nearest
 * rank.  0 for n == 0. */
double bench_percentile(double *v, size_t n, double p);

/* ---- options -------------------------------------------------------------- */
/* Is name in the comma-separated list (NULL: everything)?  --only. */
int bench_wanted(const char *list, const char *name);

#endif /* BENCH_H */
