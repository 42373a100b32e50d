/* SPDX-License-Identifier: MIT */
/*
 * errno through every call (gvl.h: "No call changes errno unless it says
 * so").  The caller sets a value no system call returns, makes the call,
 * and checks the value is still there: the lock's own futex waits and
 * wakes (EAGAIN, ETIMEDOUT, EINTR), lends and allocations must leave it.
 * Contended throughout: a hog computes with safe points under a 50 us
 * slice and a boosted thread cuts in, so acquires wait, yields hand over,
 * safe points are preempted and mutex and cond waits sleep.  Failing calls
 * (EINVAL, EPERM, EBUSY) leave it too.
 */
#include "tgvl.h"

#define SENTINEL 4242

#define KEPT(call)                                                  \
  do {                                                              \
    errno = SENTINEL;                                               \
    (void)(call);                                                   \
    if (errno != SENTINEL) {                                        \
      fprintf(stderr, "%s:%d: errno %d after %s\n", __FILE__,       \
              __LINE__, errno, #call);                              \
      _exit(1);                                                     \
    }                                                               \
  } while (0)

static gvl_t *g;
static gvl_mutex_t mtx;
static gvl_cond_t cnd;
static atomic_int stop;

static void hook(void *arg, gvl_thread_t *t, gvl_event_t ev, uint64_t n) {
  (void)arg, (void)t, (void)ev, (void)n;
  errno = EIO;   /* the hook's errno is the hook's */
}

static void *same(void *arg) { return arg; }

/* Computes with safe points: every acquire of the others waits for it. */
static void *hog(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  KEPT(gvl_acquire(t));
  while (!atomic_load(&stop)) {
    tgvl_work(20);
    KEPT(gvl_check_ints(t));
  }
  KEPT(gvl_release(t));
  KEPT(gvl_thread_detach(t));
  return arg;
}

/* Boosted acquires, and the other side of the mutex and cond. */
static void *booster(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  while (!atomic_load(&stop)) {
    KEPT(gvl_acquire_prio(t, GVL_PRIO_BOOST));
    KEPT(gvl_mutex_lock(t, &mtx));
    KEPT(gvl_cond_broadcast(t, &cnd));
    KEPT(gvl_mutex_unlock(t, &mtx));
    KEPT(gvl_yield(t));
    KEPT(gvl_release(t));
    tgvl_sleep_us(50);
  }
  KEPT(gvl_thread_detach(t));
  return arg;
}

/* A ubf that fails as real ones may (a write to a full wake-up pipe). */
static void errno_ubf(void *arg) {
  (void)arg;
  errno = EAGAIN;
}

static void round_of_calls(gvl_thread_t *me) {
  gvl_stats_t s;
  KEPT(gvl_acquire(me));
  KEPT(gvl_acquire(me));                        /* EDEADLK */
  KEPT(gvl_check_ints(me));
  KEPT(gvl_yield(me));
  KEPT(gvl_thread_interrupt(me));
  KEPT(gvl_check_ints(me));                     /* EINTR, consumed */
  KEPT(gvl_region_begin(me, NULL, NULL));
  KEPT(gvl_thread_holds(me));
  KEPT(gvl_region_end(me, GVL_PRIO_MIN));
  KEPT(gvl_region_begin(me, errno_ubf, NULL));
  KEPT(gvl_thread_interrupt(me));               /* calls the ubf */
  KEPT(gvl_region_end(me, GVL_PRIO_MIN));
  KEPT(gvl_check_ints(me));                     /* EINTR, consumed */
  errno = SENTINEL;
  CHECK(gvl_call_without(me, same, me, NULL, NULL) == me);
  CHECK_EQ(errno, SENTINEL);                    /* fn left it */
  errno = SENTINEL;
  CHECK(gvl_call_with(g, 0, same, me) == me);
  CHECK_EQ(errno, SENTINEL);
  KEPT(gvl_mutex_lock(me, &mtx));
  KEPT(gvl_mutex_trylock(me, &mtx));            /* EDEADLK */
  KEPT(gvl_cond_timedwait(me, &cnd, &mtx, 20000));
  KEPT(gvl_cond_signal(me, &cnd));
  KEPT(gvl_mutex_unlock(me, &mtx));
  KEPT(gvl_mutex_unlock(me, &mtx));             /* EPERM */
  KEPT(gvl_thread_detach(me));                  /* EBUSY */
  KEPT(gvl_release(me));
  KEPT(gvl_release(me));                        /* EPERM */
  KEPT(gvl_stats(g, &s));
  KEPT(gvl_thread_stats(me, &s));
  KEPT(gvl_thread_set_prio(me, 1));
  KEPT(gvl_thread_set_prio(me, 0));
  KEPT(gvl_thread_set_name(me, "errno"));
  KEPT(gvl_thread_set_name(me, ""));            /* EINVAL */
  KEPT(gvl_thread_self(g));
  KEPT(gvl_set_slice(g, 50000));
  KEPT(gvl_set_boost_cap(g, 50));
  KEPT(gvl_set_hook(g, NULL, NULL));
  KEPT(gvl_set_hook(g, hook, NULL));   /* on again for the next round */
}

static void *attach_detach(void *arg) {
  gvl_thread_t *t;
  errno = SENTINEL;
  t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_EQ(errno, SENTINEL);
  errno = SENTINEL;
  KEPT(gvl_acquire(t));
  KEPT(gvl_release(t));
  KEPT(gvl_thread_detach(t));
  return arg;
}

static void run(unsigned flags) {
  gvl_config_t c = {0};
  c.slice_ns = 50000;
  c.flags = flags;
  c.hook = hook;
  g = gvl_create(&c);
  CHECK(g != NULL);
  CHECK_OK(gvl_mutex_init(&mtx));
  CHECK_OK(gvl_cond_init(&cnd));
  atomic_store(&stop, 0);
  pthread_t h, b, a;
  tgvl_spawn(&h, hog, NULL);
  tgvl_spawn(&b, booster, NULL);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  int rounds = 400 / tgvl_slow();
  for (int i = 0; i < rounds; i++) {
    round_of_calls(me);
    if (i % 50 == 0) {
      tgvl_spawn(&a, attach_detach, NULL);
      tgvl_join(a);
    }
  }
  atomic_store(&stop, 1);
  tgvl_join(h);
  tgvl_join(b);
  KEPT(gvl_thread_detach(me));
  CHECK_OK(gvl_mutex_destroy(&mtx));
  CHECK_OK(gvl_cond_destroy(&cnd));
  CHECK_OK(gvl_destroy(g));
}

int main(void) {
  tgvl_watchdog(120);
  run(0);
  run(GVL_F_NOSPIN);
  run(GVL_F_LEND);
  puts("ok");
  return 0;
}
