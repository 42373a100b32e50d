/* SPDX-License-Identifier: MIT */
/*
 * Promises of gvl.h at their edges, one case per sentence:
 *
 *   attach_in_call_with  gvl_thread_attach from fn of gvl_call_with, on a
 *                        thread the call attached: EEXIST, and the call's
 *                        attachment still holds and ends as it should
 *   exit_in_call_with    a thread that exits inside fn of gvl_call_with
 *                        (foreign, and attached) leaves a GVL that works
 *                        and that gvl_destroy then destroys (no EBUSY)
 *   timedwait_forever    gvl_cond_timedwait with UINT64_MAX waits for the
 *                        signal: 0, not an ETIMEDOUT at once
 *   cond_no_spin         a timed wait signalled while the mutex's owner
 *                        keeps the mutex past the timeout then waits for
 *                        the mutex asleep, even with a spin of a day
 *   wait_ready           a thread blocked in gvl_mutex_lock or
 *                        gvl_cond_wait gets SUSPENDED, READY, RESUMED, in
 *                        that order and time, and READY is not late
 *                        (stamped when it was queued, before the unlocker's
 *                        release)
 *   fork_mutex_waiter    fork while another thread waits on a gvl_mutex
 *                        the forking thread owns: in the child the unlock
 *                        leaves the mutex free (the waiter is gone), and
 *                        the child locks it and uses the GVL again
 *   fork_cond_waiter     fork while another thread waits on a gvl_cond: in
 *                        the child the cond has no waiter (destroy is 0)
 *                        and its mutex is free; the parent's waiter is
 *                        still there to be signalled
 *   cap_window_min       cap_window_ns 1..7 is EINVAL, 8 is accepted
 *   tiny_slice_sleeps    with a 1 ns slice and a holder in native code (no
 *                        safe point), the waiter asks once and then waits
 *                        asleep, not in a loop of expired deadlines ("no
 *                        spinning", with GVL_F_NOSPIN): it goes to sleep
 *                        again and again (such a loop never does)
 *
 * Everything asserted is a return code, an order or a state.
 */
#include "tgvl.h"

#include <sys/syscall.h>

static gvl_t *g;

/* ---- attach_in_call_with ------------------------------------------------- */

static int attach_err;
static gvl_thread_t *attach_got;
static int held_in_fn;

static void *attach_fn(void *arg) {
  errno = 0;
  attach_got = gvl_thread_attach(g, 0);
  attach_err = errno;
  held_in_fn = gvl_thread_holds(gvl_thread_self(g));
  return arg;
}

static void *attach_foreign(void *arg) {
  CHECK(gvl_call_with(g, 0, attach_fn, arg) == arg);
  /* The call's cached attachment is idle again, so attaching now adopts it
   * as an ordinary one. */
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_EQ(gvl_thread_holds(t), 0);
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void attach_in_call_with(void) {
  pthread_t th;
  CHECK(g = gvl_create(NULL));
  tgvl_spawn(&th, attach_foreign, &th);
  tgvl_join(th);
  CHECK(attach_got == NULL);
  CHECK_EQ(attach_err, EEXIST);
  CHECK_EQ(held_in_fn, 1);
  CHECK_OK(gvl_destroy(g));
}

/* ---- exit_in_call_with ----------------------------------------------------- */

static void *exit_fn(void *arg) {
  (void)arg;
  pthread_exit(NULL);
}

static void *exit_foreign(void *arg) {
  (void)gvl_call_with(g, 0, exit_fn, arg);
  CHECK(0);                            /* not reached */
  return NULL;
}

static void *exit_attached(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  (void)gvl_call_with(g, 0, exit_fn, arg);
  CHECK(0);
  return NULL;
}

static void exit_in_call_with(void) {
  void *(*fns[2])(void *) = {exit_foreign, exit_attached};
  for (int i = 0; i < 2; i++) {
    pthread_t th;
    CHECK(g = gvl_create(NULL));
    tgvl_spawn(&th, fns[i], NULL);
    tgvl_join(th);
    CHECK_EQ(tgvl_stats(g).owner_died, 1);
    gvl_thread_t *me = gvl_thread_attach(g, 0);
    CHECK(me != NULL);
    CHECK_OK(gvl_acquire(me));
    CHECK_OK(gvl_release(me));
    CHECK_OK(gvl_thread_detach(me));
    CHECK_OK(gvl_destroy(g));        /* EBUSY for ever before */
  }
}

/* ---- timedwait_forever, cond_no_spin ------------------------------------- */

static gvl_mutex_t mx;
static gvl_cond_t cv;
static atomic_uint step;

/* A test thread attaches and takes the GVL; at the end it lets go of mx,
 * the GVL and its attachment. */
static gvl_thread_t *enter(void) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  return t;
}

static void leave(gvl_thread_t *t) {
  CHECK_EQ(gvl_thread_holds(t), 1);
  CHECK_OK(gvl_mutex_unlock(t, &mx));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
}
static atomic_int waiter_tid;
static int wait_rc;
#define COND_TIMEOUT_NS (50 * 1000000ull)  /* late_waiter's */
static uint64_t wait_t0;           /* when late_waiter began its wait */

static void *forever_waiter(void *arg) {
  gvl_thread_t *t = enter();
  CHECK_OK(gvl_mutex_lock(t, &mx));
  atomic_store(&step, 1);
  wait_rc = gvl_cond_timedwait(t, &cv, &mx, UINT64_MAX);
  leave(t);
  return arg;
}

/* A new GVL, mx and cv, the caller attached, and forever_waiter started
 * and about to wait on cv (it holds mx and the GVL until it does). */
static gvl_thread_t *start_forever_waiter(pthread_t *th) {
  CHECK(g = gvl_create(NULL));
  CHECK_OK(gvl_mutex_init(&mx));
  CHECK_OK(gvl_cond_init(&cv));
  atomic_store(&step, 0);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  tgvl_spawn(th, forever_waiter, NULL);
  tgvl_wait_ge(&step, 1);
  return me;
}

static void timedwait_forever(void) {
  pthread_t th;
  gvl_thread_t *me = start_forever_waiter(&th);
  tgvl_sleep_us(20000);
  CHECK_OK(gvl_acquire(me));           /* the waiter released GVL and mutex */
  CHECK_OK(gvl_mutex_lock(me, &mx));
  CHECK_OK(gvl_cond_signal(me, &cv));
  CHECK_OK(gvl_mutex_unlock(me, &mx));
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  CHECK_EQ(wait_rc, 0);                /* signalled, not ETIMEDOUT */
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_cond_destroy(&cv));
  CHECK_OK(gvl_mutex_destroy(&mx));
  CHECK_OK(gvl_destroy(g));
}

/* Returns once the waiter was seen asleep in 20 samples in a row, 1 ms
 * apart: a spinning or yielding wait stays 'R' (bounded by the watchdog). */
static void wait_waiter_asleep(void) {
  int sleeping = 0;
  while (sleeping < 20) {
    sleeping = tgvl_thread_state(atomic_load(&waiter_tid)) == 'S'
                   ? sleeping + 1 : 0;
    tgvl_sleep_us(1000);
  }
}

static void *late_waiter(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_mutex_lock(t, &mx));
  atomic_store(&step, 1);
  /* cond_no_spin signals it within its timeout, but the mutex comes only
   * after it; cond_timeout_no_spin lets it time out.  It holds the GVL
   * until the wait gives it up, so main reads wait_t0 after this store. */
  wait_t0 = gvl_now_ns();
  wait_rc = gvl_cond_timedwait(t, &cv, &mx, COND_TIMEOUT_NS);
  leave(t);
  return arg;
}

/* A GVL whose spins would last a day (slice_ns 0: the default), its
 * mutex and cond, the caller attached and late_waiter in its cond wait. */
static gvl_thread_t *cond_case_start(pthread_t *th, uint64_t slice_ns) {
  gvl_config_t c;
  memset(&c, 0, sizeof c);
  c.spin_ns = GVL_MAX_NS;
  c.slice_ns = slice_ns;
  CHECK(g = gvl_create(&c));
  CHECK_OK(gvl_mutex_init(&mx));
  CHECK_OK(gvl_cond_init(&cv));
  atomic_store(&step, 0);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  tgvl_spawn(th, late_waiter, NULL);
  tgvl_wait_ge(&step, 1);
  return me;
}

static void cond_case_end(gvl_thread_t *me) {
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_cond_destroy(&cv));
  CHECK_OK(gvl_mutex_destroy(&mx));
  CHECK_OK(gvl_destroy(g));
}

/* One round: 1 if the signal came within the waiter's timeout, 0 if main
 * was held up past it (the round proves nothing and is run again). */
static int cond_no_spin_round(void) {
  pthread_t th;
  gvl_thread_t *me = cond_case_start(&th, 0);
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_mutex_lock(me, &mx));
  CHECK_OK(gvl_cond_signal(me, &cv));  /* to the mutex's queue: we own it */
  int in_time = gvl_now_ns() < wait_t0 + COND_TIMEOUT_NS;
  CHECK_OK(gvl_release(me));           /* the GVL is free, the mutex not */
  if (in_time) {
    tgvl_sleep_us(100000);             /* its 50 ms pass */
    /* It waits for the mutex now, and must do so asleep (a spinning or
     * yielding wait stays 'R'); bounded only by the watchdog. */
    wait_waiter_asleep();
  }
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_mutex_unlock(me, &mx)); /* hands it the mutex, queues it */
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  if (in_time) CHECK_EQ(wait_rc, 0);   /* signalled in time */
  cond_case_end(me);
  return in_time;
}

static void cond_no_spin(void) {
  for (int round = 0; round < 10; round++)
    if (cond_no_spin_round()) return;
  CHECK(!"ten rounds held up past the waiter's timeout");
}

/* The same after a timeout: the waiter's reacquire of the GVL, which
 * another thread holds without a safe point, is part of its cond wait and
 * sleeps too (it spun, yielding, for all of spin_ns).  late_waiter, left
 * unsignalled. */
static void cond_timeout_no_spin(void) {
  pthread_t th;
  gvl_thread_t *me = cond_case_start(&th, GVL_MAX_NS); /* nor a slice's end */
  CHECK_OK(gvl_acquire(me));           /* once the waiter sleeps in the wait */
  tgvl_sleep_us(100000);               /* its 50 ms pass: it wants the GVL */
  wait_waiter_asleep();
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  CHECK_EQ(wait_rc, ETIMEDOUT);
  cond_case_end(me);
}

/* ---- spin_not_past_slice ---------------------------------------------------
 * A waiter's spin ends with the slice: the only waiter times the holder's
 * slice, and it ticks only once it sleeps.  With spin_ns a day a holder
 * that passes safe points got its flag after spin_ns, not the slice's
 * 10 ms (here: bounded by the watchdog). */
static atomic_int sp_got;

static void *sp_waiter(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  atomic_store(&sp_got, 1);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

static void spin_not_past_slice(void) {
  gvl_config_t c;
  pthread_t th;
  memset(&c, 0, sizeof c);
  c.spin_ns = GVL_MAX_NS;
  c.slice_ns = 10000000;
  CHECK(g = gvl_create(&c));
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  for (int round = 0; round < 3; round++) {
    atomic_store(&sp_got, 0);
    CHECK_OK(gvl_acquire(me));
    tgvl_spawn(&th, sp_waiter, NULL);
    while (!atomic_load(&sp_got)) CHECK_OK(gvl_check_ints(me));
    CHECK_OK(gvl_release(me));
    tgvl_join(th);
  }
  CHECK_EQ(tgvl_tstats(me).preemptions, 3);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* ---- hook_window_preempt -------------------------------------------------
 * A yield with a hook drops g->mu to fire SUSPENDED before it hands over;
 * the timer may ask the holder to yield again meanwhile.  That request
 * dies with the handoff: a queued thread never carries PREEMPT (ARCHITECTURE
 * invariant 5), and its next hold is not cut short at its first safe point
 * when nobody asked. */
static gvl_thread_t *_Atomic hw_a, *_Atomic hw_c;
static atomic_int hw_armed, hw_c_ready;
static atomic_uint hw_seen = 0xffffffffu;

static unsigned ints_of(gvl_thread_t *t) {
  return __atomic_load_n(&GVL__HEAD(t)->ints, __ATOMIC_RELAXED);
}

static void hw_hook(void *arg, gvl_thread_t *t, gvl_event_t ev, uint64_t now) {
  (void)arg; (void)now;
  if (ev == GVL_EV_READY && t == atomic_load(&hw_c))
    atomic_store(&hw_c_ready, 1);
  if (ev != GVL_EV_SUSPENDED || t != atomic_load(&hw_a) ||
      !atomic_exchange(&hw_armed, 0))
    return;
  /* g->mu is dropped here: wait for the timer to ask again. */
  while (!(ints_of(t) & GVL__INT_PREEMPT)) tgvl_sleep_us(200);
}

static void *hw_timer(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  atomic_store(&step, 1);
  CHECK_OK(gvl_acquire(t));       /* queues, takes the timer role */
  atomic_store(&hw_seen, ints_of(atomic_load(&hw_a)));  /* A is queued */
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

static void *hw_equal(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  atomic_store(&hw_c, t);
  CHECK_OK(gvl_acquire(t));       /* same priority: asks nobody */
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

static void hook_window_preempt(void) {
  gvl_config_t c;
  pthread_t th;
  memset(&c, 0, sizeof c);
  c.slice_ns = 1000000;
  c.flags = GVL_F_NOSPIN;
  c.hook = hw_hook;
  CHECK(g = gvl_create(&c));
  gvl_thread_t *a = gvl_thread_attach(g, 0);
  CHECK(a != NULL);
  atomic_store(&hw_a, a);
  atomic_store(&step, 0);
  CHECK_OK(gvl_acquire(a));
  tgvl_spawn(&th, hw_timer, NULL);
  tgvl_wait_ge(&step, 1);
  while (!(ints_of(a) & GVL__INT_PREEMPT)) tgvl_sleep_us(200);  /* asked */
  atomic_store(&hw_armed, 1);
  CHECK_OK(gvl_check_ints(a));    /* hands over to the timer, and back */
  tgvl_join(th);
  CHECK_EQ(atomic_load(&hw_seen) & GVL__INT_PREEMPT, 0);
  CHECK_EQ(ints_of(a) & GVL__INT_PREEMPT, 0);
  /* A fresh hold, a slice of an hour, a waiter that asks nobody: a safe
   * point keeps the GVL. */
  CHECK_OK(gvl_set_slice(g, TGVL_HOUR_NS));
  uint64_t p0 = tgvl_tstats(a).preemptions;
  atomic_store(&hw_c_ready, 0);
  tgvl_spawn(&th, hw_equal, NULL);
  while (!atomic_load(&hw_c_ready)) tgvl_sleep_us(200);
  CHECK_OK(gvl_check_ints(a));
  CHECK_EQ(tgvl_tstats(a).preemptions, p0);
  CHECK_OK(gvl_release(a));
  tgvl_join(th);
  atomic_store(&hw_c, NULL);
  CHECK_OK(gvl_thread_detach(a));
  CHECK_OK(gvl_destroy(g));
}

/* ---- wait_ready ---------------------------------------------------------- */

static tgvl_log_t hlog;
static gvl_thread_t *_Atomic watched;
static uint64_t unlocker_release_ns;

static void *blocked(void *arg) {
  int use_cond = *(int *)arg;
  gvl_thread_t *t = enter();
  atomic_store(&watched, t);
  if (use_cond) {
    CHECK_OK(gvl_mutex_lock(t, &mx));
    atomic_store(&step, 1);
    CHECK_OK(gvl_cond_wait(t, &cv, &mx));
  } else {
    atomic_store(&step, 1);
    CHECK_OK(gvl_mutex_lock(t, &mx));
  }
  leave(t);
  return arg;
}

static void wait_ready(void) {
  for (int use_cond = 0; use_cond < 2; use_cond++) {
    gvl_config_t c = tgvl_strict_config(TGVL_HOUR_NS, &hlog);
    pthread_t th;
    CHECK(g = gvl_create(&c));
    CHECK_OK(gvl_mutex_init(&mx));
    CHECK_OK(gvl_cond_init(&cv));
    atomic_store(&step, 0);
    atomic_store(&watched, NULL);
    gvl_thread_t *me = gvl_thread_attach(g, 0);
    CHECK(me != NULL);
    CHECK_OK(gvl_acquire(me));
    if (!use_cond) CHECK_OK(gvl_mutex_lock(me, &mx));
    CHECK_OK(gvl_release(me));
    tgvl_spawn(&th, blocked, &use_cond);
    tgvl_wait_ge(&step, 1);
    tgvl_sleep_us(20000);              /* it blocks: lock or wait */
    tgvl_log_reset(&hlog);
    CHECK_OK(gvl_acquire(me));
    if (use_cond) {
      CHECK_OK(gvl_mutex_lock(me, &mx));
      CHECK_OK(gvl_cond_signal(me, &cv));
    }
    CHECK_OK(gvl_mutex_unlock(me, &mx)); /* queues it for the GVL */
    unlocker_release_ns = gvl_now_ns();
    CHECK_OK(gvl_release(me));
    tgvl_join(th);
    /* The log began after it blocked: its READY, stamped when the unlock
     * queued it, then its RESUMED, both on its own thread. */
    unsigned n = atomic_load(&hlog.n), r = 0, u = 0;
    gvl_thread_t *w = atomic_load(&watched);
    CHECK_LE(n, TGVL_LOG_MAX);
    for (unsigned i = 0; i < n; i++) {
      if (hlog.ev[i].t != w) continue;
      if (hlog.ev[i].ev == GVL_EV_READY && !r) {
        CHECK_EQ(u, 0);                 /* READY before RESUMED */
        CHECK_LT(hlog.ev[i].ns, unlocker_release_ns);
        r = i + 1;
      }
      if (hlog.ev[i].ev == GVL_EV_RESUMED && !u) {
        CHECK_GT(r, 0);
        CHECK_GE(hlog.ev[i].ns, hlog.ev[r - 1].ns);
        CHECK(pthread_equal(hlog.ev[i].self, hlog.ev[r - 1].self));
        u = i + 1;
      }
    }
    CHECK_GT(r, 0);
    CHECK_GT(u, 0);
    CHECK_OK(gvl_thread_detach(me));
    CHECK_OK(gvl_cond_destroy(&cv));
    CHECK_OK(gvl_mutex_destroy(&mx));
    CHECK_OK(gvl_destroy(g));
  }
}

/* ---- fork_mutex_waiter ------------------------------------------------- */

static void *mutex_waiter(void *arg) {
  gvl_thread_t *t = enter();
  atomic_store(&step, 1);
  CHECK_OK(gvl_mutex_lock(t, &mx));
  leave(t);
  return arg;
}

static void fork_mutex_waiter(void) {
  pthread_t th;
  CHECK(g = gvl_create(NULL));
  CHECK_OK(gvl_mutex_init(&mx));
  atomic_store(&step, 0);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_mutex_lock(me, &mx));
  CHECK_OK(gvl_release(me));
  tgvl_spawn(&th, mutex_waiter, NULL);
  tgvl_wait_ge(&step, 1);
  tgvl_sleep_us(20000);                /* it waits on mx, asleep */
  CHECK_OK(gvl_acquire(me));
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    tgvl_watchdog(10);
    CHECK_OK(gvl_mutex_unlock(me, &mx)); /* nobody to hand it to here */
    CHECK(mx.owner == NULL);
    CHECK(mx.waiters.head == NULL);
    CHECK_OK(gvl_release(me));
    CHECK_OK(gvl_acquire(me));
    CHECK_OK(gvl_mutex_lock(me, &mx));
    CHECK_OK(gvl_mutex_unlock(me, &mx));
    CHECK_OK(gvl_mutex_destroy(&mx));
    CHECK_OK(gvl_release(me));
    CHECK_OK(gvl_thread_detach(me));
    CHECK_OK(gvl_destroy(g));
    _exit(0);
  }
  tgvl_wait_child(pid);
  /* The parent is untouched: its waiter gets the mutex. */
  CHECK_OK(gvl_mutex_unlock(me, &mx));
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_mutex_destroy(&mx));
  CHECK_OK(gvl_destroy(g));
}

/* ---- fork_cond_waiter --------------------------------------------------- */

static void fork_cond_waiter(void) {
  pthread_t th;
  gvl_thread_t *me = start_forever_waiter(&th);
  CHECK_OK(gvl_acquire(me));   /* only once it gave the GVL up in the wait */
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    tgvl_watchdog(10);
    CHECK_OK(gvl_cond_destroy(&cv));      /* the waiter left its queue */
    CHECK_OK(gvl_mutex_lock(me, &mx));    /* free: the wait let it go */
    CHECK_OK(gvl_cond_init(&cv));
    CHECK_EQ(gvl_cond_timedwait(me, &cv, &mx, 1000), ETIMEDOUT);
    CHECK_OK(gvl_mutex_unlock(me, &mx));
    CHECK_OK(gvl_mutex_destroy(&mx));
    CHECK_OK(gvl_release(me));
    CHECK_OK(gvl_thread_detach(me));
    CHECK_OK(gvl_destroy(g));
    _exit(0);
  }
  tgvl_wait_child(pid);
  /* The parent is untouched: its waiter is still there to be signalled. */
  CHECK_EQ(gvl_cond_destroy(&cv), EBUSY);
  CHECK_OK(gvl_mutex_lock(me, &mx));
  CHECK_OK(gvl_cond_signal(me, &cv));
  CHECK_OK(gvl_mutex_unlock(me, &mx));
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  CHECK_EQ(wait_rc, 0);                /* signalled */
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_cond_destroy(&cv));
  CHECK_OK(gvl_mutex_destroy(&mx));
  CHECK_OK(gvl_destroy(g));
}

/* ---- cap_window_min ---------------------------------------------------- */

static void cap_window_min(void) {
  gvl_config_t c;
  memset(&c, 0, sizeof c);
  for (uint64_t w = 1; w < 8; w++) {
    c.cap_window_ns = w;
    errno = 0;
    CHECK(gvl_create(&c) == NULL);
    CHECK_EQ(errno, EINVAL);
  }
  c.cap_window_ns = 8;
  CHECK(g = gvl_create(&c));
  CHECK_OK(gvl_destroy(g));
}

/* ---- tiny_slice_sleeps ------------------------------------------------ */

static atomic_int native_stop;
static atomic_uint native_in;

static void *native_holder(void *arg) {
  gvl_thread_t *t = enter();
  atomic_store(&native_in, 1);
  while (!atomic_load(&native_stop)) {   /* native code: no safe point */
  }
  CHECK_OK(gvl_check_ints(t));           /* answers the flag: hands over */
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

static void *queued_waiter(void *arg) {
  atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
  gvl_thread_t *t = enter();             /* waits behind the holder */
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

static void tiny_slice_sleeps(void) {
  gvl_config_t c;
  pthread_t th[2];
  memset(&c, 0, sizeof c);
  c.slice_ns = 1;
  c.flags = GVL_F_NOSPIN;
  CHECK(g = gvl_create(&c));
  atomic_store(&native_stop, 0);
  atomic_store(&native_in, 0);
  atomic_store(&waiter_tid, 0);
  tgvl_spawn(&th[0], native_holder, NULL);
  tgvl_wait_ge(&native_in, 1);
  tgvl_spawn(&th[1], queued_waiter, NULL);
  while (tgvl_stats(g).preempt_reqs == 0)
    tgvl_sleep_us(1000);                 /* it has queued and asked */
  /* While the holder stays in native code the waiter must keep going to
   * sleep (a waiter looping on deadlines that have passed never does:
   * then this waits for the watchdog).  Counted, not timed: on a busy
   * CPU its sleeps come as slowly as the CPU lets it run. */
  long s0 = tgvl_task_sleeps(atomic_load(&waiter_tid));
  while (tgvl_task_sleeps(atomic_load(&waiter_tid)) - s0 < 20) tgvl_sleep_us(1000);
  atomic_store(&native_stop, 1);
  tgvl_join(th[0]);
  tgvl_join(th[1]);
  CHECK_OK(gvl_destroy(g));
}

static const tgvl_case_t cases[] = {
  {"attach_in_call_with", attach_in_call_with},
  {"exit_in_call_with", exit_in_call_with},
  {"timedwait_forever", timedwait_forever},
  {"cond_no_spin", cond_no_spin},
  {"cond_timeout_no_spin", cond_timeout_no_spin},
  {"spin_not_past_slice", spin_not_past_slice},
  {"hook_window_preempt", hook_window_preempt},
  {"wait_ready", wait_ready},
  {"fork_mutex_waiter", fork_mutex_waiter},
  {"fork_cond_waiter", fork_cond_waiter},
  {"cap_window_min", cap_window_min},
  {"tiny_slice_sleeps", tiny_slice_sleeps},
};

int main(int argc, char **argv) {
  tgvl_watchdog(120);
  return tgvl_run_cases(cases, sizeof cases / sizeof cases[0], argc, argv);
}
