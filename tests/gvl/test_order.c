/* SPDX-License-Identifier: MIT */
/*
 * Handoff order: waiters are served by priority, first come within a
 * priority, and each release hands the GVL straight to the next one.
 *
 * The holder (main) keeps the GVL while waiters queue one at a time; it
 * starts the next waiter only after the hook reported GVL_EV_READY for the
 * previous one, so arrival order is known.  Then it releases and each waiter
 * records its index under the GVL.  Aging, the interactivity policy and the
 * boost cap are configured out of the way (tgvl_strict_config), but for the
 * last case, which sets a short age_ns.
 *
 * Then a holder that a boost makes give the GVL up at a safe point: it
 * queues again behind an equal that came before it.
 */
#include "tgvl.h"

#define MAXW 16

typedef struct {
  int idx;
  int prio;
  int by_attach; /* 1: base priority given at attach, use gvl_acquire */
} waiter_t;

static gvl_t *g;
static tgvl_log_t hlog;
static int order[MAXW]; /* guarded by the GVL */
static int norder;      /* guarded by the GVL */

static void *waiter(void *arg) {
  waiter_t *w = arg;
  gvl_thread_t *t = gvl_thread_attach(g, w->by_attach ? w->prio : 0);
  CHECK(t != NULL);
  if (w->by_attach)
    CHECK_OK(gvl_acquire(t));
  else
    CHECK_OK(gvl_acquire_prio(t, w->prio));
  CHECK(gvl_thread_holds(t));
  order[norder++] = w->idx;
  gvl_stats_t s = tgvl_tstats(t);
  CHECK_EQ(s.contended, 1);
  CHECK_EQ(s.handoffs, 1);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* Sleep until at least ms have passed since the call. */
static void wait_past(unsigned ms) {
  uint64_t end = gvl_now_ns() + ms * 1000000ull;
  while (gvl_now_ns() < end) usleep(200);
}

/* Queue n waiters with prios[] in index order behind the holder, release,
 * and check that they ran in order expect[].  With age_ns set (0: aging out
 * of reach), each waiter queues at least gap_ms after the one before it,
 * and the last has waited at least gap_ms when the holder releases. */
static void scenario(const char *name, int n, const int *prios,
                     const int *expect, int by_attach, uint64_t age_ns,
                     unsigned gap_ms) {
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &hlog);
  if (age_ns) cfg.age_ns = age_ns;
  gvl_thread_t *me = tgvl_start_holding(&g, &cfg, 0);
  norder = 0;

  pthread_t th[MAXW];
  waiter_t w[MAXW];
  int nboost = 0;
  for (int i = 0; i < n; i++) {
    w[i].idx = i;
    w[i].prio = prios[i];
    w[i].by_attach = by_attach;
    nboost += prios[i] > 0;
    tgvl_spawn(&th[i], waiter, &w[i]);
    tgvl_wait_ge(&hlog.count[GVL_EV_READY], (unsigned)i + 1);
    wait_past(gap_ms);
  }
  gvl_stats_t s = tgvl_stats(g);
  CHECK_EQ(s.acquires, 1); /* nobody got in while the holder held */
  CHECK_OK(gvl_release(me));
  for (int i = 0; i < n; i++) tgvl_join(th[i]);

  CHECK_OK(gvl_acquire(me));
  CHECK_EQ(norder, n);
  for (int i = 0; i < n; i++) {
    if (order[i] != expect[i]) {
      fprintf(stderr, "%s: position %d got waiter %d, want %d\n", name, i,
              order[i], expect[i]);
      CHECK_EQ(order[i], expect[i]);
    }
  }
  CHECK_OK(gvl_release(me));

  s = tgvl_stats(g);
  CHECK_EQ(s.acquires, (uint64_t)n + 2);
  CHECK_EQ(s.contended, n);
  CHECK_EQ(s.handoffs, n); /* main -> w, w -> w ..., last one frees it */
  if (!by_attach) CHECK_EQ(s.boosts, nboost);
  CHECK_EQ(s.boosts_refused, 0);
  gvl_stats_t ms = tgvl_tstats(me);
  /* A waiter above the holder's priority asks it to give up at once; with
   * an hour-long slice nothing else may. */
  if (nboost > 0 && !by_attach)
    CHECK_GE(ms.preempt_reqs, 1);
  if (nboost == 0) CHECK_EQ(ms.preempt_reqs, 0);
  /* Each waiter waited once; RESUMED comes with every acquisition. */
  CHECK_EQ(tgvl_count(&hlog, GVL_EV_READY), n);
  CHECK_EQ(tgvl_count(&hlog, GVL_EV_RESUMED), n + 2);
  CHECK_EQ(tgvl_count(&hlog, GVL_EV_SUSPENDED), n + 2);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* ---- first come, also after a boost ---------------------------------------- */

/* Main holds; B queues, then C boosts.  Main gives way at its safe point
 * and queues again behind B, which came first: C, B, main. */
static void fifo_after_boost(void) {
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &hlog);
  gvl_thread_t *me = tgvl_start_holding(&g, &cfg, 0);
  norder = 0;
  pthread_t b, c;
  waiter_t wb = {1, 0, 0}, wc = {2, GVL_PRIO_BOOST, 0};
  tgvl_spawn(&b, waiter, &wb);
  tgvl_wait_ge(&hlog.count[GVL_EV_READY], 1);
  tgvl_spawn(&c, waiter, &wc);
  tgvl_wait_ge(&hlog.count[GVL_EV_READY], 2);
  CHECK_OK(gvl_check_ints(me));           /* to C, then B, and back */
  order[norder++] = 0;
  CHECK_OK(gvl_release(me));
  tgvl_join(b);
  tgvl_join(c);
  CHECK_EQ(norder, 3);
  CHECK_EQ(order[0], 2);
  CHECK_EQ(order[1], 1);
  CHECK_EQ(order[2], 0);
  CHECK_EQ(tgvl_tstats(me).preemptions, 1);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

int main(void) {
  tgvl_watchdog(60);

  {
    static const int p[] = {0, 0, 0, 0, 0, 0};
    static const int e[] = {0, 1, 2, 3, 4, 5};
    scenario("fifo", 6, p, e, 0, 0, 0);
  }
  {
    static const int p[] = {0, 0, 0, GVL_PRIO_BOOST};
    static const int e[] = {3, 0, 1, 2};
    scenario("boost-first", 4, p, e, 0, 0, 0);
  }
  {
    static const int p[] = {0, 5, -3, 5, 0, 10, -3, 2};
    static const int e[] = {5, 1, 3, 7, 0, 4, 2, 6};
    scenario("mixed", 8, p, e, 0, 0, 0);
  }
  {
    static const int p[] = {-1, 3, -1, 3, GVL_PRIO_MIN, GVL_PRIO_MAX};
    static const int e[] = {5, 1, 3, 0, 2, 4};
    scenario("mixed-attach-prio", 6, p, e, 1, 0, 0);
  }
  {
    static const int p[] = {-7, -7, -7};
    static const int e[] = {0, 1, 2};
    scenario("fifo-negative", 3, p, e, 0, 0, 0);
  }
  {
    /* Aging has no ceiling: at one level per microsecond, a waiter that
     * queued 3 ms before a waiter at 500 leads it by 2500 levels or more,
     * however long both have waited (here over 3000 levels each). */
    static const int p[] = {0, 500};
    static const int e[] = {0, 1};
    scenario("aging-unbounded", 2, p, e, 0, 1000, 3);
  }
  fifo_after_boost();
  puts("ok");
  return 0;
}
