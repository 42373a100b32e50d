/* SPDX-License-Identifier: MIT */
/*
 * A thread that exits holding the GVL: the GVL is recovered so others can
 * acquire it, the owner_died counter counts it, and the hook sees
 * GVL_EV_OWNER_DIED for the dead thread's handle.
 *
 * Case 1: another thread is already waiting when the holder exits.
 * Case 2: nobody waits; the next acquire must simply succeed.
 */
#include "tgvl.h"

static gvl_t *g;
static tgvl_log_t hlog;
static gvl_thread_t *dead_t;   /* handle of the exiting thread */
static atomic_uint holding;
static int wait_for_waiter;

static void *die_holding(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  dead_t = t;
  atomic_store(&holding, 1);
  if (wait_for_waiter) tgvl_wait_ge(&hlog.count[GVL_EV_READY], 1);
  return NULL; /* exits holding, without detaching */
}

/* expect_total: owner_died on the GVL so far (the counter accumulates; the
 * hook log is reset after each case). */
static void run(int waiter_first, unsigned expect_total) {
  pthread_t th;
  atomic_store(&holding, 0);
  wait_for_waiter = waiter_first;
  unsigned ready0 = tgvl_count(&hlog, GVL_EV_READY);
  CHECK_EQ(ready0, 0);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  tgvl_spawn(&th, die_holding, NULL);
  if (waiter_first) {
    tgvl_wait_ge(&holding, 1);
    CHECK_OK(gvl_acquire(me)); /* blocks until the owner's death */
    tgvl_join(th);
  } else {
    tgvl_join(th);
    CHECK_OK(gvl_acquire(me));
  }
  CHECK(gvl_thread_holds(me));
  CHECK_OK(gvl_yield(me));
  CHECK_OK(gvl_release(me));

  gvl_stats_t s = tgvl_stats(g);
  CHECK_EQ(s.owner_died, expect_total);
  CHECK_EQ(tgvl_count(&hlog, GVL_EV_OWNER_DIED), 1);
  int seen = 0;
  for (unsigned i = 0; i < atomic_load(&hlog.n) && i < TGVL_LOG_MAX; i++)
    if (hlog.ev[i].ev == GVL_EV_OWNER_DIED) {
      seen++;
      CHECK(hlog.ev[i].t == dead_t); /* compared, never dereferenced */
    }
  CHECK_EQ(seen, 1);
  CHECK_OK(gvl_thread_detach(me));
  tgvl_log_reset(&hlog);
}

static atomic_uint fn_ran;

static void *holds_self(void *arg) {
  CHECK(gvl_thread_holds(gvl_thread_self(g)));
  atomic_fetch_add(&fn_ran, 1);
  return arg;
}

static void *use_call_with(void *arg) {
  CHECK(gvl_call_with(g, 0, holds_self, arg) == arg);
  return NULL;
}

/* A thread attached to two GVLs exits holding both: both recover. */
static gvl_t *g2;

static void *die_holding_two(void *arg) {
  gvl_thread_t *t1 = gvl_thread_attach(g, 0);
  gvl_thread_t *t2 = gvl_thread_attach(g2, 0);
  CHECK(t1 != NULL && t2 != NULL);
  CHECK_OK(gvl_acquire(t1));
  CHECK_OK(gvl_acquire(t2));
  return arg;
}

/* A thread exits attached but not holding: not an owner death, and it
 * does not keep the GVL from being destroyed. */
static void *exit_attached(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  return arg;
}

static void two_gvls(void) {
  g = gvl_create(NULL);
  g2 = gvl_create(NULL);
  CHECK(g != NULL && g2 != NULL);
  pthread_t th;
  tgvl_spawn(&th, die_holding_two, NULL);
  tgvl_join(th);
  CHECK_EQ(tgvl_stats(g).owner_died, 1);
  CHECK_EQ(tgvl_stats(g2).owner_died, 1);
  gvl_thread_t *a = gvl_thread_attach(g, 0), *b = gvl_thread_attach(g2, 0);
  CHECK(a != NULL && b != NULL);
  CHECK_OK(gvl_acquire(a));
  CHECK_OK(gvl_acquire(b));
  CHECK_OK(gvl_release(b));
  CHECK_OK(gvl_release(a));
  CHECK_OK(gvl_thread_detach(a));
  CHECK_OK(gvl_thread_detach(b));
  tgvl_spawn(&th, exit_attached, NULL);
  tgvl_join(th);
  CHECK_EQ(tgvl_stats(g).owner_died, 1);
  CHECK_OK(gvl_destroy(g));
  CHECK_OK(gvl_destroy(g2));
}

/* GVL_EV_OWNER_DIED, like every hook, is called outside internal locks
 * (gvl.h).  The hook blocks on a plain mutex M that main holds while it
 * attaches to another GVL; had the hook run with an internal lock held that
 * attach also needs, this deadlocks and the watchdog fails the test. */
static pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint in_hook;

static void blocking_hook(void *arg, gvl_thread_t *t, gvl_event_t ev,
                          uint64_t now_ns) {
  (void)arg;
  (void)t;
  (void)now_ns;
  if (ev != GVL_EV_OWNER_DIED) return;
  atomic_store(&in_hook, 1);
  pthread_mutex_lock(&hook_mu);
  pthread_mutex_unlock(&hook_mu);
}

static void *die_holding_plain(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  return arg;
}

static void owner_died_hook_outside_locks(void) {
  g = gvl_create(NULL);
  g2 = gvl_create(NULL);
  CHECK(g != NULL && g2 != NULL);
  CHECK_OK(gvl_set_hook(g, blocking_hook, NULL));
  atomic_store(&in_hook, 0);
  CHECK_OK(pthread_mutex_lock(&hook_mu));
  pthread_t th;
  tgvl_spawn(&th, die_holding_plain, NULL);
  tgvl_wait_ge(&in_hook, 1);
  gvl_thread_t *t2 = gvl_thread_attach(g2, 0);
  CHECK(t2 != NULL);
  CHECK_OK(pthread_mutex_unlock(&hook_mu));
  tgvl_join(th);
  CHECK_OK(gvl_thread_detach(t2));
  CHECK_EQ(tgvl_stats(g).owner_died, 1);
  CHECK_OK(gvl_destroy(g));
  CHECK_OK(gvl_destroy(g2));
}

int main(void) {
  tgvl_watchdog(60);
  gvl_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.hook = tgvl_hook;
  cfg.hook_arg = &hlog;
  g = gvl_create(&cfg);
  CHECK(g != NULL);

  run(1, 1);
  run(0, 2);

  /* The GVL still works for foreign threads, and the dead threads do not
   * count as attached. */
  pthread_t th;
  tgvl_spawn(&th, use_call_with, &th);
  tgvl_join(th);
  CHECK_EQ(atomic_load(&fn_ran), 1);
  CHECK_OK(gvl_destroy(g));
  two_gvls();
  owner_died_hook_outside_locks();
  puts("ok");
  return 0;
}
