/* SPDX-License-Identifier: MIT */
/*
 * Every error code documented in gvl.h, and that a failed call leaves the
 * GVL usable: EINVAL, EPERM, EDEADLK, EBUSY, EEXIST, EINTR, ETIMEDOUT.
 */
#include "tgvl.h"

#include <limits.h>

static gvl_t *g;

static void *ident(void *arg) { return arg; }

static void create_errors(void) {
  gvl_config_t c;
  memset(&c, 0, sizeof c);
  c.boost_cap_pct = 101;
  CHECK_NULL_ERRNO(gvl_create(&c), EINVAL);
  c.boost_cap_pct = 1000;
  CHECK_NULL_ERRNO(gvl_create(&c), EINVAL);
  c.boost_cap_pct = UINT_MAX;
  CHECK_NULL_ERRNO(gvl_create(&c), EINVAL);
  /* The limits themselves are fine. */
  c.boost_cap_pct = 100;
  gvl_t *ok = gvl_create(&c);
  CHECK(ok != NULL);
  CHECK_OK(gvl_destroy(ok));
  c.boost_cap_pct = 1;
  ok = gvl_create(&c);
  CHECK(ok != NULL);
  CHECK_OK(gvl_destroy(ok));
  ok = gvl_create(NULL);
  CHECK(ok != NULL);
  CHECK_OK(gvl_destroy(ok));
  /* Every documented flag is accepted; any other bit is refused. */
  memset(&c, 0, sizeof c);
  c.flags = GVL_F_TIMING | GVL_F_NOSPIN | GVL_F_NOINTERACTIVE | GVL_F_NORETAKE |
            GVL_F_LEND;
  ok = gvl_create(&c);
  CHECK(ok != NULL);
  CHECK_OK(gvl_destroy(ok));
  for (unsigned bit = 0x20; bit != 0; bit <<= 1) {
    c.flags = bit;
    CHECK_NULL_ERRNO(gvl_create(&c), EINVAL);
  }
}

static void lifecycle_errors(void) {
  gvl_stats_t s;
  CHECK_EQ(gvl_destroy(NULL), EINVAL);
  CHECK_EQ(gvl_set_slice(NULL, 1000), EINVAL);
  CHECK_EQ(gvl_set_slice(g, 0), EINVAL);
  CHECK_OK(gvl_set_slice(g, 1));
  CHECK_OK(gvl_set_slice(g, 5000000));
  CHECK_EQ(gvl_set_boost_cap(NULL, 50), EINVAL);
  CHECK_EQ(gvl_set_boost_cap(g, 0), EINVAL);
  CHECK_EQ(gvl_set_boost_cap(g, 101), EINVAL);
  CHECK_OK(gvl_set_boost_cap(g, 1));
  CHECK_OK(gvl_set_boost_cap(g, 100));
  CHECK_OK(gvl_set_boost_cap(g, 50));
  CHECK_EQ(gvl_set_hook(NULL, NULL, NULL), EINVAL);
  CHECK_OK(gvl_set_hook(g, NULL, NULL));
  CHECK_EQ(gvl_stats(NULL, &s), EINVAL);
  CHECK_EQ(gvl_stats(g, NULL), EINVAL);
  CHECK_OK(gvl_stats(g, &s));

  CHECK_NULL_ERRNO(gvl_thread_attach(NULL, 0), EINVAL);
  CHECK_NULL_ERRNO(gvl_thread_attach(g, GVL_PRIO_MAX + 1), EINVAL);
  CHECK_NULL_ERRNO(gvl_thread_attach(g, GVL_PRIO_MIN - 1), EINVAL);
  CHECK_NULL_ERRNO(gvl_thread_attach(g, INT_MIN), EINVAL);
  CHECK(gvl_thread_self(g) == NULL); /* failed attaches left nothing */
  CHECK_EQ(gvl_thread_detach(NULL), EINVAL);
  CHECK_EQ(gvl_thread_set_prio(NULL, 0), EINVAL);
  CHECK_EQ(gvl_thread_set_interactive(NULL, 1), EINVAL);
  CHECK_EQ(gvl_thread_stats(NULL, &s), EINVAL);
  CHECK_EQ(gvl_thread_holds(NULL), 0);
  CHECK(gvl_thread_gvl(NULL) == NULL);
  CHECK_EQ(gvl_thread_interrupt(NULL), EINVAL);
  CHECK(gvl_strerror(EINVAL) != NULL);
}

static void lock_errors(gvl_thread_t *t) {
  gvl_stats_t s;
  CHECK(gvl_thread_self(g) == t);
  CHECK(gvl_thread_gvl(t) == g);
  CHECK_EQ(gvl_thread_stats(t, NULL), EINVAL);
  CHECK_OK(gvl_thread_stats(t, &s));
  CHECK_EQ(gvl_thread_set_prio(t, GVL_PRIO_MAX + 1), EINVAL);
  CHECK_EQ(gvl_thread_set_prio(t, GVL_PRIO_MIN - 1), EINVAL);
  CHECK_OK(gvl_thread_set_prio(t, 0));

  CHECK_EQ(gvl_acquire(NULL), EINVAL);
  CHECK_EQ(gvl_acquire_prio(NULL, 0), EINVAL);
  CHECK_EQ(gvl_acquire_prio(t, GVL_PRIO_MAX + 1), EINVAL);
  CHECK_EQ(gvl_acquire_prio(t, GVL_PRIO_MIN - 1), EINVAL);
  CHECK_EQ(gvl_release(NULL), EINVAL);
  CHECK_EQ(gvl_yield(NULL), EINVAL);
  CHECK_EQ(gvl_check_ints(NULL), EINVAL);

  /* Not holding. */
  CHECK_EQ(gvl_release(t), EPERM);
  CHECK_EQ(gvl_yield(t), EPERM);
  CHECK_NULL_ERRNO(gvl_call_without(t, ident, &s, NULL, NULL), EPERM);

  CHECK_OK(gvl_acquire(t));
  CHECK_EQ(gvl_acquire(t), EDEADLK);
  CHECK_EQ(gvl_acquire_prio(t, GVL_PRIO_BOOST), EDEADLK);
  CHECK_EQ(gvl_acquire_prio(t, GVL_PRIO_MAX + 1), EINVAL);
  CHECK_EQ(gvl_thread_detach(t), EBUSY);
  CHECK_EQ(gvl_destroy(g), EBUSY);
  CHECK_NULL_ERRNO(gvl_call_without(NULL, ident, &s, NULL, NULL), EINVAL);
  CHECK_NULL_ERRNO(gvl_call_without(t, NULL, &s, NULL, NULL), EINVAL);
  CHECK(gvl_thread_holds(t)); /* failures kept the GVL */
  CHECK(gvl_call_without(t, ident, &s, NULL, NULL) == &s);
  CHECK(gvl_thread_holds(t));

  CHECK_OK(gvl_thread_interrupt(t));
  CHECK_NULL_ERRNO(gvl_call_without(t, ident, &s, NULL, NULL), EINTR);
  CHECK(gvl_thread_holds(t));
  CHECK_OK(gvl_thread_interrupt(t));
  CHECK_EQ(gvl_check_ints(t), EINTR);
  CHECK_OK(gvl_check_ints(t));
  CHECK_OK(gvl_yield(t));
  CHECK_OK(gvl_release(t));
  CHECK(!gvl_thread_holds(t));
}

static void call_with_errors(void) {
  int x;
  CHECK_NULL_ERRNO(gvl_call_with(NULL, 0, ident, &x), EINVAL);
  CHECK_NULL_ERRNO(gvl_call_with(g, 0, NULL, &x), EINVAL);
  CHECK_NULL_ERRNO(gvl_call_with(g, GVL_PRIO_MAX + 1, ident, &x), EINVAL);
  CHECK_NULL_ERRNO(gvl_call_with(g, GVL_PRIO_MIN - 1, ident, &x), EINVAL);
  CHECK(gvl_call_with(g, 0, ident, &x) == &x);
}

/* ---- handles used from the wrong OS thread ----------------------------- */

static gvl_thread_t *other_t;
static atomic_uint other_state; /* 1 attached, 2 holds, 3 may release, 4 go */

static void *other_thread(void *arg) {
  (void)arg;
  other_t = gvl_thread_attach(g, 0);
  CHECK(other_t != NULL);
  CHECK_NULL_ERRNO(gvl_thread_attach(g, 0), EEXIST);
  CHECK_NULL_ERRNO(gvl_thread_attach(g, 5), EEXIST);
  CHECK(gvl_thread_self(g) == other_t);
  atomic_store(&other_state, 1);
  while (atomic_load(&other_state) != 2) tgvl_sleep_us(100);
  CHECK_OK(gvl_acquire(other_t));
  atomic_store(&other_state, 3);
  while (atomic_load(&other_state) != 4) tgvl_sleep_us(100);
  CHECK_EQ(gvl_check_ints(other_t), EINTR);
  CHECK_OK(gvl_release(other_t));
  CHECK_OK(gvl_thread_detach(other_t));
  return NULL;
}

static void wrong_thread(gvl_thread_t *me) {
  gvl_stats_t s;
  atomic_store(&other_state, 0);
  pthread_t th;
  tgvl_spawn(&th, other_thread, NULL);
  tgvl_wait_ge(&other_state, 1);
  /* other_t is attached to another OS thread and does not hold. */
  CHECK_EQ(gvl_acquire(other_t), EPERM);
  CHECK_EQ(gvl_acquire_prio(other_t, 0), EPERM);
  CHECK_EQ(gvl_thread_detach(other_t), EPERM);
  CHECK_EQ(gvl_thread_set_prio(other_t, 1), EPERM);
  CHECK_EQ(gvl_destroy(g), EBUSY);
  CHECK_OK(gvl_thread_stats(other_t, &s)); /* [any] */
  CHECK(gvl_thread_gvl(other_t) == g);     /* [any] */
  CHECK_EQ(gvl_thread_holds(other_t), 0);

  atomic_store(&other_state, 2);
  tgvl_wait_ge(&other_state, 3);
  CHECK(gvl_thread_holds(other_t));
  /* Release by a non-holder: mine does not hold, theirs is not mine. */
  CHECK_EQ(gvl_release(me), EPERM);
  CHECK_EQ(gvl_release(other_t), EPERM);
  CHECK_EQ(gvl_yield(other_t), EPERM);
  CHECK(gvl_thread_holds(other_t)); /* still theirs */
  CHECK_EQ(gvl_thread_detach(other_t), EPERM);
  /* gvl_check_ints checks the thread only when something is pending, and
   * then leaves it pending for its own thread. */
  CHECK_OK(gvl_check_ints(other_t));
  CHECK_OK(gvl_thread_interrupt(other_t));
  CHECK_EQ(gvl_check_ints(other_t), EPERM);
  atomic_store(&other_state, 4);
  tgvl_join(th);
  CHECK_OK(gvl_acquire(me)); /* it was released by its owner */
  CHECK_OK(gvl_release(me));
}

/* ---- gvl_mutex / gvl_cond misuse --------------------------------------- */

static gvl_mutex_t mtx;
static gvl_cond_t cnd;
static atomic_uint m_state;

static void *mutex_owner(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_mutex_lock(t, &mtx));
  CHECK_OK(gvl_release(t));
  atomic_store(&m_state, 1);
  tgvl_wait_ge(&m_state, 2);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_mutex_unlock(t, &mtx));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void sync_errors(gvl_thread_t *t) {
  CHECK_EQ(gvl_mutex_init(NULL), EINVAL);
  CHECK_EQ(gvl_mutex_destroy(NULL), EINVAL);
  CHECK_EQ(gvl_cond_init(NULL), EINVAL);
  CHECK_EQ(gvl_cond_destroy(NULL), EINVAL);
  CHECK_OK(gvl_mutex_init(&mtx));
  CHECK_OK(gvl_cond_init(&cnd));

  /* [held] calls without the GVL. */
  CHECK_EQ(gvl_mutex_lock(t, &mtx), EPERM);
  CHECK_EQ(gvl_mutex_trylock(t, &mtx), EPERM);
  CHECK_EQ(gvl_cond_signal(t, &cnd), EPERM);
  CHECK_EQ(gvl_cond_broadcast(t, &cnd), EPERM);

  CHECK_OK(gvl_acquire(t));
  CHECK_EQ(gvl_mutex_lock(NULL, &mtx), EINVAL);
  CHECK_EQ(gvl_mutex_lock(t, NULL), EINVAL);
  CHECK_EQ(gvl_mutex_trylock(NULL, &mtx), EINVAL);
  CHECK_EQ(gvl_mutex_trylock(t, NULL), EINVAL);
  CHECK_EQ(gvl_mutex_unlock(NULL, &mtx), EINVAL);
  CHECK_EQ(gvl_mutex_unlock(t, NULL), EINVAL);
  CHECK_EQ(gvl_cond_wait(NULL, &cnd, &mtx), EINVAL);
  CHECK_EQ(gvl_cond_wait(t, NULL, &mtx), EINVAL);
  CHECK_EQ(gvl_cond_wait(t, &cnd, NULL), EINVAL);
  CHECK_EQ(gvl_cond_timedwait(t, NULL, &mtx, 1000), EINVAL);
  CHECK_EQ(gvl_cond_timedwait(t, &cnd, NULL, 1000), EINVAL);
  CHECK_EQ(gvl_cond_signal(NULL, &cnd), EINVAL);
  CHECK_EQ(gvl_cond_signal(t, NULL), EINVAL);
  CHECK_EQ(gvl_cond_broadcast(NULL, &cnd), EINVAL);
  CHECK_EQ(gvl_cond_broadcast(t, NULL), EINVAL);

  CHECK_EQ(gvl_mutex_unlock(t, &mtx), EPERM);         /* not owned */
  CHECK_EQ(gvl_cond_wait(t, &cnd, &mtx), EPERM);      /* m not owned */
  CHECK_EQ(gvl_cond_timedwait(t, &cnd, &mtx, 1000), EPERM);
  CHECK_OK(gvl_mutex_lock(t, &mtx));
  CHECK_EQ(gvl_mutex_lock(t, &mtx), EDEADLK);
  CHECK_EQ(gvl_mutex_destroy(&mtx), EBUSY);
  CHECK_EQ(gvl_cond_timedwait(t, &cnd, &mtx, 1000000), ETIMEDOUT);
  CHECK(gvl_thread_holds(t));
  CHECK_EQ(gvl_mutex_lock(t, &mtx), EDEADLK); /* still owned after wait */
  CHECK_OK(gvl_cond_signal(t, &cnd));        /* nobody waits: fine */
  CHECK_OK(gvl_cond_broadcast(t, &cnd));
  CHECK_OK(gvl_mutex_unlock(t, &mtx));
  CHECK_EQ(gvl_mutex_unlock(t, &mtx), EPERM);
  CHECK_OK(gvl_mutex_trylock(t, &mtx));
  CHECK_OK(gvl_mutex_unlock(t, &mtx));
  CHECK_OK(gvl_release(t));

  /* Owned by another thread. */
  atomic_store(&m_state, 0);
  pthread_t th;
  tgvl_spawn(&th, mutex_owner, NULL);
  tgvl_wait_ge(&m_state, 1);
  CHECK_OK(gvl_acquire(t));
  CHECK_EQ(gvl_mutex_trylock(t, &mtx), EBUSY);
  CHECK_EQ(gvl_mutex_unlock(t, &mtx), EPERM);
  CHECK_EQ(gvl_mutex_destroy(&mtx), EBUSY);
  CHECK_EQ(gvl_cond_wait(t, &cnd, &mtx), EPERM);
  CHECK_OK(gvl_release(t));
  atomic_store(&m_state, 2);
  tgvl_join(th);

  CHECK_OK(gvl_cond_destroy(&cnd));
  CHECK_OK(gvl_mutex_destroy(&mtx));
}

/* gvl_cond_destroy while a thread waits on it: EBUSY. */
static gvl_mutex_t m2;
static gvl_cond_t c2;
static volatile int c2_go; /* guarded by the GVL (and m2) */
static atomic_uint c2_waiting;

static void *cond_waiter(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_mutex_lock(t, &m2));
  atomic_store(&c2_waiting, 1);
  while (!c2_go) CHECK_OK(gvl_cond_wait(t, &c2, &m2));
  CHECK_OK(gvl_mutex_unlock(t, &m2));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void cond_busy(gvl_thread_t *t) {
  CHECK_OK(gvl_mutex_init(&m2));
  CHECK_OK(gvl_cond_init(&c2));
  c2_go = 0;
  atomic_store(&c2_waiting, 0);
  pthread_t th;
  tgvl_spawn(&th, cond_waiter, NULL);
  tgvl_wait_ge(&c2_waiting, 1);
  /* The waiter set c2_waiting holding the GVL and gives it up only inside
   * gvl_cond_wait, so once we hold the GVL it is queued on c2. */
  CHECK_OK(gvl_acquire(t));
  CHECK_EQ(gvl_cond_destroy(&c2), EBUSY);
  CHECK_OK(gvl_mutex_lock(t, &m2));
  c2_go = 1;
  CHECK_OK(gvl_cond_signal(t, &c2));
  CHECK_OK(gvl_mutex_unlock(t, &m2));
  CHECK_OK(gvl_release(t));
  tgvl_join(th);
  CHECK_OK(gvl_cond_destroy(&c2));
  CHECK_OK(gvl_mutex_destroy(&m2));
}

int main(void) {
  tgvl_watchdog(60);
  create_errors();
  g = gvl_create(NULL);
  CHECK(g != NULL);
  lifecycle_errors();
  call_with_errors();

  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_NULL_ERRNO(gvl_thread_attach(g, 0), EEXIST);
  CHECK_EQ(gvl_destroy(g), EBUSY);
  lock_errors(me);
  wrong_thread(me);
  sync_errors(me);
  cond_busy(me);

  /* Every documented code has a text of its own and its name; the texts
   * are constant strings (the same pointer on every call). */
  const int codes[] = {EINVAL, EPERM, EDEADLK, EBUSY, EEXIST,
                       ENOMEM, EINTR, ETIMEDOUT, ERANGE};
  const char *const names[] = {"EINVAL", "EPERM", "EDEADLK", "EBUSY", "EEXIST",
                               "ENOMEM", "EINTR", "ETIMEDOUT", "ERANGE"};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    const char *m = gvl_strerror(codes[i]);
    CHECK(m != NULL && m[0] != '\0');
    CHECK(strstr(m, "Unknown") == NULL);
    CHECK(gvl_strerror(codes[i]) == m);
    CHECK(strcmp(gvl_err_name(codes[i]), names[i]) == 0);
  }
  CHECK(strcmp(gvl_strerror(EDEADLK), "the GVL is already held by this thread") == 0);
  CHECK(strcmp(gvl_strerror(ERANGE), "name too long") == 0);   /* as listed */
  CHECK(strcmp(gvl_strerror(ENOENT), strerror(ENOENT)) == 0);
  CHECK(strcmp(gvl_strerror(12345), "unknown error code 12345") == 0);
  CHECK(strcmp(gvl_err_name(12345), "UNKNOWN") == 0);
  CHECK(strcmp(gvl_err_name(0), "OK") == 0);
  CHECK(strcmp(gvl_strerror(0), "success") == 0);

  /* The library is the version its header says. */
  CHECK_EQ(gvl_version(), (unsigned)GVL_VERSION_HEX);
  CHECK(strcmp(gvl_version_string(), GVL_VERSION_STRING) == 0);

  CHECK_OK(gvl_thread_detach(me));
  CHECK(gvl_thread_self(g) == NULL);
  CHECK_OK(gvl_destroy(g));
  puts("ok");
  return 0;
}
