/* SPDX-License-Identifier: MIT */
/*
 * gvl_call_with: foreign (unattached) threads calling it repeatedly while an
 * attached thread competes; a holder calling it (fn just runs); an attached
 * non-holder (acquires and releases around fn); nesting.  gvl_destroy must
 * succeed once explicit threads detached, whether the foreign threads have
 * exited or are still alive with a cached attachment; a foreign thread that
 * outlives its GVL, then uses a new one, must work (no stale cache).
 * Regions nest through gvl_call_with (in_region: outer_fn, interrupted_then_call).
 * Leaks of cached attachments show up under valgrind and ASan.
 */
#include "tgvl.h"

#define NFOREIGN 4

static gvl_t *g;
static long counter;           /* plain, guarded by the GVL */
static volatile int inside;    /* guarded by the GVL */
static int iters;

/* Inside fn, gvl_thread_self gives the caller's handle (the cached one on
 * a foreign thread), and it holds the GVL. */
static void *bump(void *arg) {
  gvl_thread_t *t = gvl_thread_self(g);
  CHECK(t != NULL);
  CHECK(gvl_thread_holds(t));
  CHECK_OK(gvl_check_ints(t));
  CHECK_EQ(inside, 0);
  inside = 1;
  long c = counter;
  counter = c + 1;
  inside = 0;
  return arg;
}

static void *no_gvl(void *arg) {
  CHECK(!gvl_thread_holds(gvl_thread_self(g)));
  return arg;
}

/* A foreign thread's callback can block with the cached handle. */
static void *blocks(void *arg) {
  gvl_thread_t *t = gvl_thread_self(g);
  CHECK(t != NULL);
  CHECK(gvl_call_without(t, no_gvl, arg, NULL, NULL) == arg);
  CHECK(gvl_thread_holds(t));
  return bump(arg);
}

static void *nested(void *arg) {
  /* Already holding: gvl_call_with just calls fn. */
  CHECK(gvl_call_with(g, GVL_PRIO_BOOST, bump, arg) == arg);
  return arg;
}

static void *foreign(void *arg) {
  int id = *(int *)arg;
  for (int i = 0; i < iters; i++) {
    CHECK(gvl_thread_self(g) == NULL); /* not attached between calls */
    int prio = (i % 3 == 0) ? GVL_PRIO_BOOST : (i % 3 == 1 ? 0 : -2);
    void *(*fn)(void *) = (i % 5) ? bump : nested;
    if (i % 11 == 0) fn = blocks;
    void *fn_res = gvl_call_with(g, prio, fn, arg);
    CHECK(fn_res == arg);
  }
  (void)id;
  return NULL;
}

static void *attached_competitor(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  for (int i = 0; i < iters; i++) {
    CHECK_OK(gvl_acquire(t));
    bump(NULL);
    if (i % 7 == 0) CHECK_OK(gvl_yield(t));
    CHECK_OK(gvl_check_ints(t));
    CHECK_OK(gvl_release(t));
    /* An attached non-holder: acquires around fn and releases after. */
    CHECK(gvl_call_with(g, 0, bump, arg) == arg);
    CHECK(!gvl_thread_holds(t));
  }
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void many_foreign(void) {
  g = gvl_create(NULL);
  CHECK(g != NULL);
  counter = 0;
  pthread_t th[NFOREIGN + 1];
  int ids[NFOREIGN];
  for (int i = 0; i < NFOREIGN; i++) {
    ids[i] = i;
    tgvl_spawn(&th[i], foreign, &ids[i]);
  }
  tgvl_spawn(&th[NFOREIGN], attached_competitor, &ids[0]);
  for (int i = 0; i <= NFOREIGN; i++) tgvl_join(th[i]);
  CHECK_EQ(counter, (long)(NFOREIGN + 2) * iters);
  /* The foreign threads have exited and the explicit one detached. */
  CHECK_OK(gvl_destroy(g));
}

static void holder_calls(void) {
  g = gvl_create(NULL);
  CHECK(g != NULL);
  counter = 0;
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  CHECK(gvl_call_with(g, 0, bump, &counter) == &counter);
  CHECK(gvl_call_with(g, GVL_PRIO_MIN, nested, &counter) == &counter);
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(tgvl_stats(g).acquires, 1); /* nothing was acquired again */
  CHECK_OK(gvl_release(me));
  CHECK(gvl_call_with(g, 0, bump, &counter) == &counter);
  CHECK(!gvl_thread_holds(me));
  CHECK_EQ(counter, 3);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* A foreign thread stays alive with its cached attachment while the GVL is
 * destroyed, then uses a fresh GVL (possibly at the same address). */
static atomic_uint phase;

static void *lingering(void *arg) {
  (void)arg;
  for (int i = 0; i < 10; i++) CHECK(gvl_call_with(g, 0, bump, &phase) == &phase);
  atomic_store(&phase, 1);
  tgvl_wait_ge(&phase, 2); /* main destroys g and makes a new one */
  for (int i = 0; i < 10; i++) CHECK(gvl_call_with(g, 0, bump, &phase) == &phase);
  atomic_store(&phase, 3);
  tgvl_wait_ge(&phase, 4); /* main destroys the second one */
  return NULL;
}

static void outlive(void) {
  atomic_store(&phase, 0);
  g = gvl_create(NULL);
  CHECK(g != NULL);
  counter = 0;
  pthread_t th;
  tgvl_spawn(&th, lingering, NULL);
  tgvl_wait_ge(&phase, 1);
  CHECK_OK(gvl_destroy(g)); /* an idle cached attachment does not count */
  g = gvl_create(NULL);
  CHECK(g != NULL);
  atomic_store(&phase, 2);
  tgvl_wait_ge(&phase, 3);
  CHECK_OK(gvl_destroy(g));
  atomic_store(&phase, 4);
  tgvl_join(th); /* its thread-exit cleanup runs after both are gone */
  CHECK_EQ(counter, 20);
}

/* A foreign thread inside gvl_call_with is not idle: destroy says EBUSY. */
static atomic_uint in_fn, leave_fn;

static void *hold_inside(void *arg) {
  atomic_store(&in_fn, 1);
  tgvl_wait_ge(&leave_fn, 1);
  return arg;
}

static void *busy_foreign(void *arg) {
  CHECK(gvl_call_with(g, 0, hold_inside, arg) == arg);
  return NULL;
}

static void destroy_while_inside(void) {
  g = gvl_create(NULL);
  CHECK(g != NULL);
  atomic_store(&in_fn, 0);
  atomic_store(&leave_fn, 0);
  pthread_t th;
  tgvl_spawn(&th, busy_foreign, &th);
  tgvl_wait_ge(&in_fn, 1);
  CHECK_EQ(gvl_destroy(g), EBUSY);
  atomic_store(&leave_fn, 1);
  tgvl_join(th);
  CHECK_OK(gvl_destroy(g));
}

/* Regions nest through gvl_call_with: a region inside the call has its
 * own state, the outer region resumes with its ubf (called at once for an
 * interrupt still pending), and the outer gvl_call_without returns
 * holding the GVL. */
static gvl_thread_t *me_t;
static atomic_int ubf_calls;
static void count_ubf(void *arg) {
  (void)arg;
  atomic_fetch_add(&ubf_calls, 1);
}

static void *inner_fn(void *arg) {
  CHECK(!gvl_thread_holds(me_t));
  return arg;
}

static void *call_back(void *arg) {
  CHECK(gvl_thread_holds(me_t));
  CHECK(gvl_call_without(me_t, inner_fn, arg, NULL, NULL) == arg);
  CHECK(gvl_thread_holds(me_t));
  CHECK_OK(gvl_thread_interrupt(me_t));    /* no region now: no ubf */
  CHECK_EQ(atomic_load(&ubf_calls), 0);
  return arg;
}

static void *outer_fn(void *arg) {
  CHECK(gvl_call_with(g, GVL_PRIO_NORMAL, call_back, arg) == arg);
  CHECK(!gvl_thread_holds(me_t));
  CHECK_EQ(atomic_load(&ubf_calls), 1);   /* the pending one, on resume */
  CHECK_OK(gvl_thread_interrupt(me_t));   /* the outer region's ubf again */
  CHECK_EQ(atomic_load(&ubf_calls), 2);
  return arg;
}

/* An interrupt that came before the call had its ubf run then: resuming
 * the region does not run it a second time. */
static void *no_safe_point(void *arg) { return arg; }

static void *interrupted_then_call(void *arg) {
  CHECK_OK(gvl_thread_interrupt(me_t));   /* in the region: ubf runs */
  CHECK_EQ(atomic_load(&ubf_calls), 1);
  CHECK(gvl_call_with(g, GVL_PRIO_NORMAL, no_safe_point, arg) == arg);
  CHECK_EQ(atomic_load(&ubf_calls), 1);   /* still pending, not run again */
  return arg;
}

/* Run fn in a region of a fresh GVL, with count_ubf as its ubf; the region
 * must end holding the GVL with the interrupts fn posted still pending. */
static void in_region(void *(*fn)(void *)) {
  CHECK(g = gvl_create(NULL));
  CHECK(me_t = gvl_thread_attach(g, 0));
  CHECK_OK(gvl_acquire(me_t));
  atomic_store(&ubf_calls, 0);
  CHECK(gvl_call_without(me_t, fn, &ubf_calls, count_ubf, NULL) ==
        &ubf_calls);
  CHECK(gvl_thread_holds(me_t));
  CHECK_EQ(gvl_check_ints(me_t), EINTR);  /* the interrupts were posted */
  CHECK_OK(gvl_release(me_t));
  CHECK_OK(gvl_thread_detach(me_t));
  CHECK_OK(gvl_destroy(g));
}

/* Detach inside fn of gvl_call_with: EBUSY for the handle the call uses
 * (the thread's on that GVL), allowed for its handle on another GVL. */
static gvl_thread_t *dt_t;
static gvl_t *dt_g2;

static void *dt_same(void *arg) {
  CHECK_EQ(gvl_thread_detach(dt_t), EBUSY);
  return arg;
}

static void *dt_other(void *arg) {
  CHECK_OK(gvl_thread_detach(dt_t));
  return arg;
}

static void detach_inside(void) {
  int x;
  g = gvl_create(NULL);
  dt_g2 = gvl_create(NULL);
  CHECK(g != NULL && dt_g2 != NULL);
  dt_t = gvl_thread_attach(g, 0);
  CHECK(dt_t != NULL);
  CHECK(gvl_call_with(g, 0, dt_same, &x) == &x);
  CHECK(gvl_call_with(dt_g2, 0, dt_other, &x) == &x);
  CHECK(gvl_thread_self(g) == NULL);
  CHECK_OK(gvl_destroy(g));
  CHECK_OK(gvl_destroy(dt_g2));
}

int main(void) {
  tgvl_watchdog(90);
  iters = 2000 / tgvl_slow();
  many_foreign();
  holder_calls();
  outlive();
  destroy_while_inside();
  in_region(outer_fn);               /* regions nest */
  in_region(interrupted_then_call);  /* one ubf call per interrupt */
  detach_inside();
  puts("ok");
  return 0;
}
