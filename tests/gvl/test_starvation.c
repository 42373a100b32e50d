/*
 * Starvation guard.
 *
 * flood: one thread does boosted acquire + hold + release in a loop while a
 * normal-priority thread does CPU work with a safe point per unit.  Without
 * a guard every boosted acquire preempts the worker at once and the worker
 * gets about one unit per flood cycle (1/FLOOD_HOLD of the work).  With a
 * 10% cap the boosted thread is demoted once past its share and the worker
 * must get a large share: we assert the worker did at least as many units as
 * the flood (a share >= 50%, where the cap promises about 90% of the time
 * the flood does not get by plain turns), and that the cap refused some
 * boosts.  Only work counts are compared, no durations.
 *
 * aging: a thread at a very low priority waits while two normal threads
 * yield to each other forever; aging must get it served (the watchdog fails
 * the test otherwise).
 */
#include "tgvl.h"

/* Work units per boosted hold: long enough that the flood's boosted share
 * is far above the cap even when the OS is slow to run the flooding thread
 * again after each release (on a loaded machine that gap alone can be a
 * few hundred microseconds). */
#define FLOOD_HOLD 1500

static gvl_t *g;
static volatile int started;        /* guarded by the GVL */
static volatile int stop;           /* guarded by the GVL */
static unsigned long worker_units;  /* guarded by the GVL */
static unsigned long flood_units;   /* guarded by the GVL */
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
    tgvl_work(FLOOD_HOLD);
    flood_units += FLOOD_HOLD;
    if (i + 1 == cycles) stop = 1;
    CHECK_OK(gvl_release(me));
  }
  tgvl_join(th);

  gvl_stats_t s = tgvl_stats(g), ms = tgvl_tstats(me);
  fprintf(stderr, "flood: worker %lu units, flood %lu units; boosts %llu "
          "refused %llu\n", worker_units, flood_units,
          (unsigned long long)ms.boosts,
          (unsigned long long)ms.boosts_refused);
  CHECK_GE(worker_units, flood_units);
  CHECK_GE(s.boosts_refused, 1);
  CHECK_EQ(s.boosts_refused, ms.boosts_refused);
  CHECK_LE(ms.boosts_refused, cycles);
  CHECK_GE(ms.boosts, 1);
  CHECK_LE(ms.boosts, cycles);
  CHECK_GE(ms.boosts + ms.boosts_refused, cycles);
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
  flood(slow > 1 ? 60 : 240);
  aging();
  puts("ok");
  return 0;
}
