/* SPDX-License-Identifier: MIT */
/*
 * Starvation guard.
 *
 * flood: one thread does boosted acquire + hold + release in a loop while a
 * normal-priority thread does CPU work with a safe point per unit.  Without
 * a guard every boosted acquire preempts the worker at once and the worker
 * gets about one unit per flood cycle.  With a 10% cap the boosted thread
 * is demoted once past its share and then gets the GVL only at the end of
 * a worker's slice (2 ms), for a quarter of one (each flood hold lasts
 * FLOOD_HOLD_NS), so the worker must get a large share of GVL time.
 * Asserted:
 *  - the cap refused some boosts;
 *  - every flood release handed the GVL to the worker (it always waits
 *    while the flood holds: no barging), or left it a grant the flood's
 *    next boost took back before the worker ran (counted in retakes), and
 *    the worker worked at least once per turn it got;
 *  - the worker held the GVL at least as long as the flood, by the GVL's
 *    own accounting (hold_ns, GVL_F_TIMING): a share >= 50%; the cap gives
 *    it about 70%, and without a guard it gets one safe point per flood
 *    cycle.  Work done is not compared: on a loaded machine the OS runs
 *    the CPU-bound worker less than the flood, which wakes from sleep
 *    before each hold, so units count the scheduler, not the GVL.
 *
 * cap: the cap refuses a boost deterministically once boosted holds filled
 * the window, and the refused acquire queues at normal priority.
 *
 * aging: a thread at a very low priority waits while two normal threads
 * yield to each other forever; aging must get it served (the watchdog fails
 * the test otherwise).
 */
#include "tgvl.h"

/* Length of each boosted hold in flood: a quarter of its 2 ms slice. */
#define FLOOD_HOLD_NS 500000

static gvl_t *g;
static volatile int started;        /* guarded by the GVL */
static volatile int stop;           /* guarded by the GVL */
static unsigned long worker_units;  /* guarded by the GVL */
static unsigned long flood_units;   /* guarded by the GVL */
static gvl_stats_t worker_stats;    /* written before the worker exits */
static atomic_uint worker_in;

static void *worker(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  started = 1;
  atomic_store(&worker_in, 1);
  while (!stop) {
    tgvl_work(1);
    worker_units++;
    CHECK_OK(gvl_check_ints(t));
  }
  worker_stats = tgvl_tstats(t);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void flood(unsigned cycles) {
  gvl_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.slice_ns = 2000000;
  cfg.boost_cap_pct = 100;
  cfg.cap_window_ns = 50000000;
  cfg.flags = GVL_F_TIMING;           /* hold_ns of unboosted holds too */
  g = gvl_create(&cfg);
  CHECK(g != NULL);
  CHECK_OK(gvl_set_boost_cap(g, 10)); /* the run-time setter */
  started = stop = 0;
  worker_units = flood_units = 0;
  atomic_store(&worker_in, 0);

  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  pthread_t th;
  tgvl_spawn(&th, worker, NULL);
  tgvl_wait_ge(&worker_in, 1);
  for (unsigned i = 0; i < cycles; i++) {
    CHECK_OK(gvl_acquire_prio(me, GVL_PRIO_BOOST));
    CHECK(started);
    uint64_t end = gvl_now_ns() + FLOOD_HOLD_NS;
    do {
      tgvl_work(1);
      flood_units++;
    } while (gvl_now_ns() < end);
    if (i + 1 == cycles) stop = 1;
    CHECK_OK(gvl_release(me));
  }
  tgvl_join(th);

  gvl_stats_t s = tgvl_stats(g), ms = tgvl_tstats(me);
  fprintf(stderr, "flood: worker %lu units in %.1f ms held, flood %lu units "
          "in %.1f ms; boosts %llu refused %llu\n", worker_units,
          worker_stats.hold_ns / 1e6, flood_units, ms.hold_ns / 1e6,
          (unsigned long long)ms.boosts,
          (unsigned long long)ms.boosts_refused);
  CHECK_GE(worker_stats.hold_ns, ms.hold_ns);
  CHECK_GE(worker_stats.handoffs + ms.retakes, cycles);
  CHECK_GE(worker_units, worker_stats.handoffs);
  CHECK_GE(s.boosts_refused, 1);
  CHECK_EQ(s.boosts_refused, ms.boosts_refused);
  CHECK_LE(ms.boosts_refused, cycles);
  CHECK_GE(ms.boosts, 1);
  CHECK_LE(ms.boosts, cycles);
  CHECK_GE(ms.boosts + ms.boosts_refused, cycles);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* The cap itself, independent of scheduling: one boosted hold of 150 ms
 * fills a cap of 1% of a 10 s window (100 ms) for some 10 s, so a
 * contended boosted acquire after it is refused, however long the OS
 * keeps these threads off their CPUs in between (short of that): it
 * queues at normal priority, which does not ask a normal holder to give
 * up (an hour-long slice: the holder keeps the GVL through many safe
 * points). */
static tgvl_log_t caplog;
static atomic_uint boosted_done;
static volatile int capped_ran; /* guarded by the GVL */

static void *fill_then_boost(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));     /* free: not refused */
  tgvl_sleep_us(150000);
  CHECK_OK(gvl_release(t));
  atomic_store(&boosted_done, 1);
  tgvl_wait_ge(&boosted_done, 2); /* main holds the GVL now */
  CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
  capped_ran = 1;
  gvl_stats_t s = tgvl_tstats(t);
  CHECK_EQ(s.boosts, 1);
  CHECK_EQ(s.boosts_refused, 1);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void cap_refuses(void) {
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &caplog);
  cfg.boost_cap_pct = 1;
  cfg.cap_window_ns = 10000000000ull;
  g = gvl_create(&cfg);
  CHECK(g != NULL);
  capped_ran = 0;
  atomic_store(&boosted_done, 0);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  pthread_t th;
  tgvl_spawn(&th, fill_then_boost, NULL);
  tgvl_wait_ge(&boosted_done, 1);
  CHECK_OK(gvl_acquire(me));
  unsigned ready = tgvl_count(&caplog, GVL_EV_READY);
  atomic_store(&boosted_done, 2);
  tgvl_wait_ge(&caplog.count[GVL_EV_READY], ready + 1);
  for (int i = 0; i < 200000; i++) CHECK_OK(gvl_check_ints(me));
  CHECK_EQ(capped_ran, 0);
  CHECK_EQ(tgvl_tstats(me).preempt_reqs, 0);
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  CHECK_EQ(capped_ran, 1);
  CHECK_EQ(tgvl_stats(g).boosts_refused, 1);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

static volatile int low_done; /* guarded by the GVL */

static void *low(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, -50);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  low_done = 1;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *yielder(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  while (!low_done) CHECK_OK(gvl_yield(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void aging(void) {
  static tgvl_log_t hlog;
  gvl_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.slice_ns = 1000000;
  cfg.age_ns = 200000; /* one priority step per 0.2 ms of waiting */
  cfg.hook = tgvl_hook;
  cfg.hook_arg = &hlog;
  g = gvl_create(&cfg);
  CHECK(g != NULL);
  low_done = 0;
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  /* Hold while the two yielders queue, so that every yield has a waiter
   * of the yielder's own priority from the start. */
  CHECK_OK(gvl_acquire(me));
  pthread_t y[2], l;
  for (int i = 0; i < 2; i++) {
    tgvl_spawn(&y[i], yielder, NULL);
    tgvl_wait_ge(&hlog.count[GVL_EV_READY], (unsigned)i + 1);
  }
  tgvl_spawn(&l, low, NULL);
  tgvl_wait_ge(&hlog.count[GVL_EV_READY], 3);
  CHECK_OK(gvl_release(me));
  tgvl_join(l);
  for (int i = 0; i < 2; i++) tgvl_join(y[i]);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

int main(void) {
  tgvl_watchdog(120);
  unsigned slow = (unsigned)tgvl_slow();
  cap_refuses();
  flood(slow > 1 ? 60 : 240);
  aging();
  puts("ok");
  return 0;
}
