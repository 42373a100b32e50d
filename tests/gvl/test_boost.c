/* SPDX-License-Identifier: MIT */
/*
 * Priority boost: gvl_acquire_prio above the holder's priority sets the
 * holder's preempt request at once, so a holder that only passes safe points
 * gives the GVL up without waiting for its slice (an hour here).  A waiter at
 * the holder's priority or below does not.
 */
#include "tgvl.h"

static gvl_t *g;
static tgvl_log_t hlog;
static volatile int flag;          /* guarded by the GVL */
static atomic_uint waiter_ran;     /* set by the waiter under the GVL */
static gvl_thread_t *booster_t;    /* written before the flag is set */
static pthread_t booster_self;

static void *booster(void *arg) {
  int prio = *(int *)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire_prio(t, prio));
  booster_t = t;
  booster_self = pthread_self();
  flag = 1;
  atomic_store(&waiter_ran, 1);
  gvl_stats_t s = tgvl_tstats(t);
  CHECK_EQ(s.handoffs, 1);
  CHECK_EQ(s.contended, 1);
  if (prio > 0) CHECK_EQ(s.boosts, 1);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* The holder loops on safe points until a boosted waiter got in. */
static void boost_preempts(int prio) {
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &hlog);
  gvl_thread_t *me = tgvl_start_holding(&g, &cfg, 0);
  flag = 0;

  pthread_t th;
  tgvl_spawn(&th, booster, &prio);
  while (!flag) CHECK_OK(gvl_check_ints(me));
  CHECK(gvl_thread_holds(me));
  CHECK_OK(gvl_release(me));
  tgvl_join(th);

  gvl_stats_t ms = tgvl_tstats(me);
  CHECK_EQ(ms.preempt_reqs, 1);
  CHECK_EQ(ms.preemptions, 1);
  CHECK_EQ(ms.handoffs, 1); /* got it back from the booster */
  gvl_stats_t s = tgvl_stats(g);
  CHECK_EQ(s.preempt_reqs, 1);
  CHECK_EQ(s.preemptions, 1);
  CHECK_EQ(s.boosts, 1);
  CHECK_EQ(s.boosts_refused, 0);
  CHECK_EQ(s.handoffs, 2);
  /* The request is reported on the requesting thread, about the holder. */
  CHECK_EQ(tgvl_count(&hlog, GVL_EV_PREEMPT_REQ), 1);
  int seen = 0;
  for (unsigned i = 0; i < atomic_load(&hlog.n) && i < TGVL_LOG_MAX; i++) {
    if (hlog.ev[i].ev != GVL_EV_PREEMPT_REQ) continue;
    CHECK(hlog.ev[i].t == me);
    CHECK(pthread_equal(hlog.ev[i].self, booster_self));
    seen++;
  }
  CHECK_EQ(seen, 1);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* A waiter not above the holder's priority gets no preempt request sent for
 * it before the (hour-long) slice ends: the holder passes many safe points
 * and keeps the GVL. */
static void no_preempt_at_equal_prio(int holder_prio, int waiter_prio) {
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &hlog);
  gvl_thread_t *me = tgvl_start_holding(&g, &cfg, holder_prio);
  flag = 0;
  atomic_store(&waiter_ran, 0);

  pthread_t th;
  tgvl_spawn(&th, booster, &waiter_prio);
  tgvl_wait_ge(&hlog.count[GVL_EV_READY], 1);
  for (int i = 0; i < 200000; i++) CHECK_OK(gvl_check_ints(me));
  tgvl_sleep_us(2000); /* give a wrong preempt request time to show */
  for (int i = 0; i < 200000; i++) CHECK_OK(gvl_check_ints(me));
  CHECK_EQ(atomic_load(&waiter_ran), 0);
  CHECK_EQ(flag, 0);
  gvl_stats_t ms = tgvl_tstats(me);
  CHECK_EQ(ms.preempt_reqs, 0);
  CHECK_EQ(ms.preemptions, 0);
  CHECK_EQ(tgvl_count(&hlog, GVL_EV_PREEMPT_REQ), 0);
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  CHECK_EQ(flag, 1);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* A preempt request and an interrupt pending together: the safe point that
 * sees them reports EINTR exactly once and still hands over to the booster
 * (with an hour-long slice, a lost request would hang the loop). */
static void preempt_and_interrupt(void) {
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &hlog);
  gvl_thread_t *me = tgvl_start_holding(&g, &cfg, 0);
  flag = 0;
  int prio = GVL_PRIO_BOOST;
  pthread_t th;
  tgvl_spawn(&th, booster, &prio);
  tgvl_wait_ge(&hlog.count[GVL_EV_PREEMPT_REQ], 1); /* request is set */
  CHECK_OK(gvl_thread_interrupt(me));
  int eintr = 0;
  while (!flag) {
    int r = gvl_check_ints(me);
    CHECK(r == 0 || r == EINTR);
    eintr += r == EINTR;
  }
  CHECK_EQ(eintr, 1);
  CHECK_OK(gvl_check_ints(me));
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  CHECK_EQ(tgvl_tstats(me).preemptions, 1);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* boost_cap_pct 100: boosted holds may take all of the window, so no boost
 * is ever refused, even when nothing but boosted threads run back to back
 * (pinned to one CPU the cap's slots, which span up to 9/8 of the window,
 * added up to more than it and refused 48-1125 boosts in 2 s). */
static atomic_int cap_stop;

static void *cap_booster(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  while (!atomic_load(&cap_stop)) {
    CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
    for (int i = 0; i < 2000; i++) (void)gvl_check_ints(t);
    CHECK_OK(gvl_release(t));
  }
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

static void cap_full(void) {
  gvl_config_t c;
  pthread_t th[3];
  memset(&c, 0, sizeof c);
  c.boost_cap_pct = 100;
  c.cap_window_ns = 10000000;
  CHECK(g = gvl_create(&c));
  atomic_store(&cap_stop, 0);
  for (int i = 0; i < 3; i++) tgvl_spawn(&th[i], cap_booster, NULL);
  tgvl_sleep_us(1000000);              /* 100 windows */
  while (tgvl_stats(g).boosts == 0)    /* a late start on a busy machine */
    tgvl_sleep_us(1000);
  atomic_store(&cap_stop, 1);
  for (int i = 0; i < 3; i++) tgvl_join(th[i]);
  gvl_stats_t st;
  CHECK_OK(gvl_stats(g, &st));
  CHECK(st.boosts > 0);
  CHECK_EQ(st.boosts_refused, 0);
  CHECK_OK(gvl_destroy(g));
}

int main(void) {
  tgvl_watchdog(60);
  cap_full();
  boost_preempts(GVL_PRIO_BOOST);
  boost_preempts(1);
  boost_preempts(GVL_PRIO_MAX);
  preempt_and_interrupt();
  no_preempt_at_equal_prio(0, 0);
  no_preempt_at_equal_prio(0, -5);
  no_preempt_at_equal_prio(GVL_PRIO_BOOST, GVL_PRIO_BOOST);
  puts("ok");
  return 0;
}
