/* SPDX-License-Identifier: MIT */
/*
 * Run-time settings and counters.
 *
 * slice: a holder passing safe points with an hour-long slice while someone
 * waits; gvl_set_slice(1 ms) from another thread makes it past its slice, so
 * it must be preempted (gvl.h: "a holder past its time slice while others
 * wait gets a flag").  A hang fails the test through the watchdog.
 *
 * prio: gvl_thread_set_prio changes the priority gvl_acquire queues with.
 *
 * counters: wait_ns is counted for a contended acquisition, hold_ns for
 * holds under GVL_F_TIMING; per-thread figures of detached threads stay in
 * the GVL's totals.
 *
 * snapshot: two threads take boosted holds, one of them yielding the CPU
 * while it holds so that the other queues (handoffs), the other mostly
 * not (quick uncontended holds), so their acquisitions are boosts and many
 * are handoffs, while a third
 * reads gvl_stats and gvl_thread_stats without pause; no snapshot may show
 * more boosts, handoffs, contended acquisitions or retakes than acquisitions
 * (gvl.h), though each counter is read while the others move.
 */
#include "tgvl.h"

static gvl_t *g;
static tgvl_log_t hlog;
static volatile int flag; /* guarded by the GVL */

static void *set_flag_thread(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  flag = 1;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *shorten_slice(void *arg) {
  (void)arg;
  tgvl_wait_ge(&hlog.count[GVL_EV_READY], 1); /* the waiter is queued */
  CHECK_OK(gvl_set_slice(g, 1000000));
  return NULL;
}

static void slice_change_applies(void) {
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &hlog);
  gvl_thread_t *me = tgvl_start_holding(&g, &cfg, 0);
  flag = 0;
  pthread_t w, s;
  tgvl_spawn(&w, set_flag_thread, NULL);
  tgvl_spawn(&s, shorten_slice, NULL); /* an unattached thread: [any] */
  while (!flag) CHECK_OK(gvl_check_ints(me));
  CHECK_OK(gvl_release(me));
  tgvl_join(w);
  tgvl_join(s);
  CHECK_GE(tgvl_tstats(me).preemptions, 1);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* ---- gvl_thread_set_prio ------------------------------------------------- */

static int order[4]; /* guarded by the GVL */
static int norder;   /* guarded by the GVL */

typedef struct {
  int id, prio;
} who_t;

static void *queued_acquire(void *arg) {
  who_t *w = arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_thread_set_prio(t, w->prio));
  CHECK_OK(gvl_acquire(t));
  order[norder++] = w->id;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void set_prio_applies(void) {
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &hlog);
  gvl_thread_t *me = tgvl_start_holding(&g, &cfg, 0);
  norder = 0;
  who_t who[3] = {{0, -1}, {1, 0}, {2, 4}};
  pthread_t th[3];
  for (int i = 0; i < 3; i++) {
    tgvl_spawn(&th[i], queued_acquire, &who[i]);
    tgvl_wait_ge(&hlog.count[GVL_EV_READY], (unsigned)i + 1);
  }
  CHECK_OK(gvl_release(me));
  for (int i = 0; i < 3; i++) tgvl_join(th[i]);
  CHECK_EQ(norder, 3);
  CHECK_EQ(order[0], 2);
  CHECK_EQ(order[1], 1);
  CHECK_EQ(order[2], 0);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* ---- counters ------------------------------------------------------------- */

static void *acquire_many(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  for (int i = 0; i < 10; i++) {
    CHECK_OK(gvl_acquire(t));
    tgvl_work(20);
    CHECK_OK(gvl_release(t));
  }
  gvl_stats_t s = tgvl_tstats(t);
  CHECK_EQ(s.acquires, 10);
  CHECK_GT(s.hold_ns, 0);
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void counters(void) {
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &hlog);
  cfg.flags |= GVL_F_TIMING;
  gvl_thread_t *me = tgvl_start_holding(&g, &cfg, 0);
  flag = 0;
  pthread_t th;
  tgvl_spawn(&th, set_flag_thread, NULL);
  tgvl_wait_ge(&hlog.count[GVL_EV_READY], 1);
  tgvl_sleep_us(1000); /* the waiter waits a while: wait_ns > 0 */
  CHECK_OK(gvl_release(me));
  tgvl_join(th); /* detached: its figures move to the totals */
  gvl_stats_t s = tgvl_stats(g);
  CHECK_EQ(s.contended, 1);
  CHECK_GT(s.wait_ns, 0);
  CHECK_GT(s.hold_ns, 0);
  CHECK_EQ(s.acquires, 2);

  tgvl_spawn(&th, acquire_many, NULL);
  tgvl_join(th);
  s = tgvl_stats(g);
  CHECK_EQ(s.acquires, 12);
  CHECK_OK(gvl_thread_detach(me));
  s = tgvl_stats(g);
  CHECK_EQ(s.acquires, 12); /* and after the last thread detached */
  CHECK_OK(gvl_destroy(g));
}

static atomic_int snap_stop;
static gvl_thread_t *_Atomic snap_t[2];

static void *boosted_holds(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  atomic_store(&snap_t[(intptr_t)arg], t);
  for (unsigned i = 0; !atomic_load(&snap_stop); i++) {
    CHECK_OK(gvl_acquire_prio(t, 5));
    /* Thread 1 yields while it holds, every time, so that the other
     * queues, on one CPU too (handoffs); thread 0 only every 64th time
     * (quick free acquisitions in between). */
    if ((intptr_t)arg == 1 || (i & 63) == 0) sched_yield();
    CHECK_OK(gvl_release(t));
  }
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void snap_check(const gvl_stats_t *s) {
  CHECK(s->boosts <= s->acquires);
  CHECK(s->handoffs <= s->acquires);
  CHECK(s->contended <= s->acquires);
  CHECK(s->retakes <= s->acquires);
}

static void snapshot_consistent(void) {
  gvl_config_t cfg = tgvl_strict_config(1000000, NULL);
  g = gvl_create(&cfg);
  CHECK(g != NULL);
  pthread_t th[2];
  atomic_store(&snap_stop, 0);
  for (intptr_t i = 0; i < 2; i++) tgvl_spawn(&th[i], boosted_holds, (void *)i);
  while (!atomic_load(&snap_t[0]) || !atomic_load(&snap_t[1])) sched_yield();
  gvl_stats_t s, mine;
  /* Read until the two have made `want` acquisitions between them, and at
   * least n times: the reader's own g->mu holds slow them down. */
  uint64_t want = 20000u / (unsigned)tgvl_slow();
  int n = 400000 / tgvl_slow();
  memset(&s, 0, sizeof s);
  for (int i = 0; i < n || s.acquires < want; i++) {
    CHECK_OK(gvl_stats(g, &s));
    snap_check(&s);
    CHECK_OK(gvl_thread_stats(atomic_load(&snap_t[i & 1]), &mine));
    snap_check(&mine);
    if ((i & 63) == 0) sched_yield();  /* one CPU: let them run */
  }
  atomic_store(&snap_stop, 1);
  for (int i = 0; i < 2; i++) tgvl_join(th[i]);
  s = tgvl_stats(g);
  CHECK_GT(s.boosts, 0);           /* the case did test what it claims */
  CHECK_GT(s.handoffs, 0);
  CHECK_OK(gvl_destroy(g));
}

int main(void) {
  tgvl_watchdog(60);
  slice_change_applies();
  set_prio_applies();
  counters();
  snapshot_consistent();
  puts("ok");
  return 0;
}
