/* SPDX-License-Identifier: MIT */
/*
 * gvl_yield: with nobody waiting it returns at once and does not count as a
 * handoff; with a waiter it hands the GVL over and queues behind it, so the
 * waiter runs before the yielder continues.  Two threads yielding to each
 * other strictly alternate.  Preemption counters move only when someone
 * waits: a lone thread passing safe points for several slices gets no
 * preempt request.
 */
#include "tgvl.h"

#define NYIELD 2000

static gvl_t *g;
static tgvl_log_t hlog;
static int seq[2 * NYIELD + 8]; /* guarded by the GVL */
static int nseq;                /* guarded by the GVL */

static gvl_t *make(uint64_t slice_ns) {
  gvl_config_t cfg = tgvl_strict_config(slice_ns, &hlog);
  tgvl_log_reset(&hlog);
  gvl_t *gg = gvl_create(&cfg);
  CHECK(gg != NULL);
  return gg;
}

static void lone_yield(void) {
  g = make(1000000);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  /* An attached thread that does not ask for the GVL is not a waiter. */
  CHECK_OK(gvl_acquire(me));
  for (int i = 0; i < 1000; i++) {
    CHECK_OK(gvl_yield(me));
    CHECK(gvl_thread_holds(me));
  }
  /* Safe points over at least five 1 ms slices. */
  uint64_t end = gvl_now_ns() + 5000000;
  while (gvl_now_ns() < end)
    for (int i = 0; i < 1000; i++) CHECK_OK(gvl_check_ints(me));
  CHECK_OK(gvl_release(me));
  gvl_stats_t s = tgvl_stats(g);
  CHECK_EQ(s.yields, 0);
  CHECK_EQ(s.handoffs, 0);
  CHECK_EQ(s.contended, 0);
  CHECK_EQ(s.preempt_reqs, 0);
  CHECK_EQ(s.preemptions, 0);
  CHECK_EQ(tgvl_count(&hlog, GVL_EV_PREEMPT_REQ), 0);
  CHECK_EQ(tgvl_count(&hlog, GVL_EV_READY), 0);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

static void *record_once(void *arg) {
  int prio = arg ? *(int *)arg : 0;
  gvl_thread_t *t = gvl_thread_attach(g, prio);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  seq[nseq++] = 1;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* The waiter may have any priority, even below the yielder's: yield hands
 * the GVL to the best waiter there is. */
static void yield_with_waiter(int waiter_prio) {
  g = make(TGVL_HOUR_NS);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  nseq = 0;
  pthread_t th;
  tgvl_spawn(&th, record_once, &waiter_prio);
  tgvl_wait_ge(&hlog.count[GVL_EV_READY], 1);
  CHECK_OK(gvl_yield(me));
  CHECK(gvl_thread_holds(me));
  seq[nseq++] = 0;
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  CHECK_EQ(nseq, 2);
  CHECK_EQ(seq[0], 1); /* the waiter ran first */
  CHECK_EQ(seq[1], 0);
  gvl_stats_t s = tgvl_stats(g);
  CHECK_EQ(s.yields, 1);
  CHECK_EQ(tgvl_tstats(me).yields, 1);
  CHECK_EQ(s.handoffs, 2); /* me -> waiter, waiter -> me */
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

static void *pingpong(void *arg) {
  int id = *(int *)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  for (int i = 0; i < NYIELD; i++) {
    seq[nseq++] = id;
    CHECK_OK(gvl_yield(t));
  }
  CHECK_EQ(tgvl_tstats(t).yields, NYIELD);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* Main holds while both threads queue (0 first), then lets them go: every
 * yield has a waiter, so records alternate 0,1,0,1,... exactly. */
static void alternate(unsigned flags) {
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &hlog);
  cfg.flags |= flags;
  tgvl_log_reset(&hlog);
  g = gvl_create(&cfg);
  CHECK(g != NULL);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  nseq = 0;
  pthread_t th[2];
  int ids[2] = {0, 1};
  for (int i = 0; i < 2; i++) {
    tgvl_spawn(&th[i], pingpong, &ids[i]);
    tgvl_wait_ge(&hlog.count[GVL_EV_READY], (unsigned)i + 1);
  }
  CHECK_OK(gvl_release(me));
  for (int i = 0; i < 2; i++) tgvl_join(th[i]);
  CHECK_EQ(nseq, 2 * NYIELD);
  for (int i = 0; i < 2 * NYIELD; i++) {
    if (seq[i] != i % 2) {
      fprintf(stderr, "record %d is thread %d\n", i, seq[i]);
      CHECK_EQ(seq[i], i % 2);
    }
  }
  gvl_stats_t s = tgvl_stats(g);
  CHECK_EQ(s.yields, 2 * NYIELD);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

static volatile int stop; /* guarded by the GVL */

static void *wait_then_stop(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  stop = 1;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* The contrast to lone_yield: the same safe-point loop with a waiter gets
 * preempted by its slice. */
static void preempt_with_waiter(void) {
  g = make(1000000);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  stop = 0;
  pthread_t th;
  tgvl_spawn(&th, wait_then_stop, NULL);
  while (!stop) CHECK_OK(gvl_check_ints(me));
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  gvl_stats_t s = tgvl_tstats(me);
  CHECK_GE(s.preempt_reqs, 1);
  CHECK_EQ(s.preemptions, 1);
  CHECK_GE(tgvl_count(&hlog, GVL_EV_PREEMPT_REQ), 1);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* ---- where the yielder queues -----------------------------------------------
 * Three waiters of the holder's priority queue in the order A, B, C; the
 * holder H yields: A is served, and H queues again at the back, behind
 * B and C (gvl.h), so the GVL goes A, B, C, H. */
static atomic_uint back_ready;
static char back_order[8];   /* guarded by the GVL */
static int back_n;           /* guarded by the GVL */

static void back_hook(void *arg, gvl_thread_t *t, gvl_event_t ev, uint64_t n) {
  (void)arg, (void)t, (void)n;
  if (ev == GVL_EV_READY) atomic_fetch_add(&back_ready, 1);
}

static void *back_waiter(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  back_order[back_n++] = (char)(intptr_t)arg;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void yielder_queues_at_back(void) {
  gvl_config_t c = tgvl_strict_config(TGVL_HOUR_NS, NULL);
  c.hook = back_hook;
  g = gvl_create(&c);
  CHECK(g != NULL);
  gvl_thread_t *h = gvl_thread_attach(g, 0);
  CHECK(h != NULL);
  CHECK_OK(gvl_acquire(h));
  pthread_t th[3];
  for (int i = 0; i < 3; i++) {
    tgvl_spawn(&th[i], back_waiter, (void *)(intptr_t)('A' + i));
    tgvl_wait_ge(&back_ready, (unsigned)i + 1);   /* queued, in order */
  }
  CHECK_OK(gvl_yield(h));
  back_order[back_n++] = 'H';
  CHECK_OK(gvl_release(h));
  for (int i = 0; i < 3; i++) tgvl_join(th[i]);
  CHECK(strcmp(back_order, "ABCH") == 0);
  CHECK_OK(gvl_thread_detach(h));
  CHECK_OK(gvl_destroy(g));
}

int main(void) {
  tgvl_watchdog(60);
  lone_yield();
  yield_with_waiter(0);
  yield_with_waiter(-5);
  yield_with_waiter(GVL_PRIO_BOOST);
  alternate(0);
  alternate(GVL_F_NOSPIN);
  preempt_with_waiter();
  lone_yield(); /* again, after a GVL has seen contention in this process */
  yielder_queues_at_back();
  puts("ok");
  return 0;
}
