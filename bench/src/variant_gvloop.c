/* SPDX-License-Identifier: MIT */
/*
 * variant_gvloop.c -- the real libgvl behind the bench interface.
 *
 *   gvloop          defaults (10 ms slice, boost, starvation cap, the
 *                   interactivity policy)
 *   gvloop-noboost  the same, but acquire_prio is a plain acquire: shows what
 *                   the priority boost buys in dispatch/starvation
 *   gvloop-noia     GVL_F_NOINTERACTIVE: the interactivity policy off, for
 *                   the convoy and wake-up cases
 *   gvloop-rt       GVL_F_LEND, and a thread that boosts runs SCHED_FIFO
 *                   (the loaded dispatch rows)
 */
#include "bench.h"

#include <errno.h>
#include <gvl.h>
#include <stdlib.h>

static void check(const char *what, int err) {
  if (err) bench_die(what, err);
}

/* GVLBENCH_GVL_FLAGS=n adds GVL_F_* flags to every gvloop variant (the
 * convoy sweep, bench/convoy_sweep.sh, turns taking back off with it). */
static void *create_with(unsigned flags) {
  gvl_config_t cfg = {0};
  const char *f = getenv("GVLBENCH_GVL_FLAGS");
  cfg.flags = flags | (f ? (unsigned)strtoul(f, NULL, 0) : 0u);
  gvl_t *g = gvl_create(&cfg);
  if (g == NULL) bench_die("gvl_create", errno);
  return g;
}

static void *g_create(void) { return create_with(0); }
static void *g_create_noia(void) { return create_with(GVL_F_NOINTERACTIVE); }
static void *g_create_lend(void) { return create_with(GVL_F_LEND); }
static void g_destroy(void *g) { check("gvl_destroy", gvl_destroy(g)); }

static void *g_attach(void *g) {
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  if (t == NULL) bench_die("gvl_thread_attach", errno);
  return t;
}

static void g_detach(void *t) { check("gvl_thread_detach", gvl_thread_detach(t)); }
static void g_acquire(void *t) { check("gvl_acquire", gvl_acquire(t)); }
static void g_acquire_prio(void *t, int prio) {
  check("gvl_acquire_prio", gvl_acquire_prio(t, prio));
}
static void g_acquire_rt(void *t, int prio) {
  if (prio > 0) bench_rt_self_once();
  check("gvl_acquire_prio", gvl_acquire_prio(t, prio));
}
static void g_acquire_noboost(void *t, int prio) {
  (void)prio;
  check("gvl_acquire", gvl_acquire(t));
}
static void g_release(void *t) { check("gvl_release", gvl_release(t)); }
static void g_yield(void *t) { check("gvl_yield", gvl_yield(t)); }

/* EINTR only follows gvl_thread_interrupt, which the bench never calls. */
static void g_check_ints(void *t) { check("gvl_check_ints", gvl_check_ints(t)); }

static void *g_call_without(void *t, void *(*fn)(void *), void *arg) {
  errno = 0;
  void *r = gvl_call_without(t, fn, arg, NULL, NULL);
  if (r == NULL && errno != 0) bench_die("gvl_call_without", errno);
  return r;
}

static void *g_mutex_create(void *g) {
  (void)g;
  gvl_mutex_t *m = bench_xcalloc(1, sizeof *m);
  check("gvl_mutex_init", gvl_mutex_init(m));
  return m;
}

static void g_mutex_destroy(void *m) {
  check("gvl_mutex_destroy", gvl_mutex_destroy(m));
  free(m);
}

static void g_mutex_lock(void *t, void *m) { check("gvl_mutex_lock", gvl_mutex_lock(t, m)); }
static void g_mutex_unlock(void *t, void *m) {
  check("gvl_mutex_unlock", gvl_mutex_unlock(t, m));
}

static void g_stats(void *g, bench_stats_t *out) {
  gvl_stats_t s;
  check("gvl_stats", gvl_stats(g, &s));
  out->handoffs = s.handoffs;
  out->preemptions = s.preemptions;
  out->ia_cost_ns = s.ia_cost_ns;
}

#define GVLOOP_OPS(NAME, DESIGN, CREATE, ACQ_PRIO)                               \
  {                                                                            \
    NAME, DESIGN, CREATE, g_destroy, g_attach, g_detach, g_acquire, ACQ_PRIO,  \
        g_release, g_yield, g_check_ints, g_call_without, g_mutex_create,      \
        g_mutex_destroy, g_mutex_lock, g_mutex_unlock, g_stats                 \
  }

const bench_gvl_ops_t bench_gvloop_ops =
    GVLOOP_OPS("gvloop", "libgvl, default configuration", g_create, g_acquire_prio);
const bench_gvl_ops_t bench_gvloop_noboost_ops =
    GVLOOP_OPS("gvloop-noboost", "libgvl, acquire_prio as plain acquire", g_create,
               g_acquire_noboost);
const bench_gvl_ops_t bench_gvloop_noia_ops =
    GVLOOP_OPS("gvloop-noia", "libgvl, interactivity policy off", g_create_noia,
               g_acquire_prio);
const bench_gvl_ops_t bench_gvloop_rt_ops =
    GVLOOP_OPS("gvloop-rt", "libgvl, GVL_F_LEND, boosting threads in SCHED_FIFO",
               g_create_lend, g_acquire_rt);
