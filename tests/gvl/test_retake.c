/* SPDX-License-Identifier: MIT */
/*
 * gvl_call_without taking the GVL back (gvl.h, gvl_call_without): when fn
 * returns before the waiter it was released to has started to run, the
 * caller takes the GVL back and that waiter stays first; never past the
 * caller's slice (which goes on, it does not restart, and is timed to its
 * end: the timer is woken if it would look later), never from a waiter
 * of higher priority, never once the waiter runs.
 * The same after a boosted hold (gvl.h, gvl_release): its releaser's next
 * acquire takes the GVL back from a waiter that has not run, only at a
 * priority above that waiter's and every other waiter's and while the cap
 * allows boosts; never after an unboosted hold.  A region's grant is taken
 * back only by its gvl_region_end, and a boosted gvl_call_with inside the
 * region keeps its own.
 *
 * "Has not started to run" is made certain, not likely: the waiter is held
 * in a signal handler (SIGUSR1, blocked in read() on a pipe) while queued,
 * so it cannot take a grant until the test lets it go.  Every check is an
 * order or a count.
 *
 * Run with a case name to run just that case.
 */
#include "tgvl.h"
#include "gvl_int.h"   /* white box: g->mu, see on_usr1 */

#include <signal.h>
#include <sys/syscall.h>

static gvl_t *g;
static atomic_uint nready;          /* GVL_EV_READY seen (threads queued) */
static gvl_thread_t *_Atomic ready_last;
static int hold_pipe[2];            /* the handler reads one byte from it */
static atomic_int in_handler;
static atomic_int declined;         /* the handler found g->mu held */
static atomic_int order[4], norder;
static int again_prio;              /* region_around(RELEASE): the acquire's */
static unsigned again_after_us;     /* ... and a sleep before it, if not 0 */

/* Freeze the thread only where it holds no lock of the GVL's.  The kernel
 * runs the handler at once, in the thread's park (queue_waiter saw it
 * asleep); TSan defers it to the thread's next atomic operation or
 * intercepted call, which may be inside g->mu (timer_tick reads the clock
 * there), and frozen there the thread would stop every other.  g->mu free
 * proves the thread does not hold it; held, by anyone, the handler declines
 * and freeze() signals again.  (The portable park waits in
 * pthread_cond_wait, where TSan runs handlers at once.) */
static void on_usr1(int sig) {
  char c;
  (void)sig;
#ifdef GVL__PARK_FUTEX
  if (atomic_load(&g->mu.v) != 0) {
    atomic_store(&declined, 1);
    return;
  }
#endif
  atomic_store(&in_handler, 1);
  while (read(hold_pipe[0], &c, 1) < 0 && errno == EINTR) {
  }
  atomic_store(&in_handler, 0);
}

static _Atomic uint64_t preempt_ns;  /* first PREEMPT_REQ since cleared */
static void count_ready(void *arg, gvl_thread_t *t, gvl_event_t ev,
                        uint64_t now) {
  uint64_t zero = 0;
  (void)arg;
  if (ev == GVL_EV_PREEMPT_REQ)
    atomic_compare_exchange_strong(&preempt_ns, &zero, now);
  if (ev == GVL_EV_READY) {
    atomic_store(&ready_last, t);
    atomic_fetch_add(&nready, 1);
  }
}

typedef struct {
  int id, prio;
  pthread_t th;
  atomic_int tid;
} waiter_t;

static void *waiter_main(void *arg) {
  waiter_t *w = arg;
  atomic_store(&w->tid, (int)syscall(SYS_gettid));
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(w->prio ? gvl_acquire_prio(t, w->prio) : gvl_acquire(t));
  order[atomic_fetch_add(&norder, 1)] = w->id;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* Start a waiter and wait until it is queued behind the caller and asleep
 * on its park word (so not inside g->mu, where freezing it would stop
 * everyone). */
static void queue_waiter(waiter_t *w, int id, int prio) {
  unsigned n0 = atomic_load(&nready);
  w->id = id;
  w->prio = prio;
  atomic_store(&w->tid, 0);
  tgvl_spawn(&w->th, waiter_main, w);
  tgvl_wait_ge(&nready, n0 + 1);
  while (tgvl_thread_state(atomic_load(&w->tid)) != 'S') tgvl_sleep_us(50);
}

/* Hold w's thread in the signal handler: it can take no grant now. */
static void freeze(waiter_t *w) {
  for (;;) {
    atomic_store(&declined, 0);
    CHECK_OK(pthread_kill(w->th, SIGUSR1));
    while (!atomic_load(&in_handler) && !atomic_load(&declined))
      tgvl_sleep_us(50);
    if (atomic_load(&in_handler)) return;
    tgvl_sleep_us(200);
  }
}

static void thaw(void) {
  CHECK_EQ(write(hold_pipe[1], "x", 1), 1);
}

static void *noop(void *arg) { return arg; }

/* Let the frozen waiter go once `me` has queued for the GVL again: the
 * proof that me did not take it back. */
static gvl_thread_t *thaw_after;
static atomic_int thaw_cancel;     /* 1: give up waiting, thaw nothing */
static void *thaw_when_queued(void *arg) {
  unsigned n0 = *(unsigned *)arg;
  while (atomic_load(&nready) <= n0 || atomic_load(&ready_last) != thaw_after) {
    if (atomic_load(&thaw_cancel)) return NULL;
    tgvl_sleep_us(50);
  }
  thaw();
  return arg;
}

/* A GVL with config c (its hook replaced), and the caller attached and
 * holding it at prio. */
static gvl_thread_t *setup_with(gvl_config_t c, int prio) {
  c.hook = count_ready;
  again_after_us = 0;
  atomic_store(&nready, 0);
  atomic_store(&norder, 0);
  CHECK(g = gvl_create(&c));
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(me);
  CHECK_OK(prio ? gvl_acquire_prio(me, prio) : gvl_acquire(me));
  return me;
}

static gvl_thread_t *setup(uint64_t slice_ns) {
  return setup_with(tgvl_strict_config(slice_ns, NULL), 0);
}

static void teardown(gvl_thread_t *me) {
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* fn for region_around: release and acquire again at a priority, instead
 * of a blocking region. */
static void *RELEASE(void *arg) { return arg; }

/* The blocking call of the "not taken back" cases: a region around fn, or
 * with fn RELEASE, gvl_release and gvl_acquire_prio(again_prio). */
static void *region_around(gvl_thread_t *me, void *(*fn)(void *)) {
  if (fn == RELEASE) {
    CHECK_OK(gvl_release(me));
    if (again_after_us) tgvl_sleep_us(again_after_us);
    CHECK_OK(gvl_acquire_prio(me, again_prio));
    return me;
  }
  if (fn) return gvl_call_without(me, fn, me, NULL, NULL);
  CHECK_OK(gvl_region_begin(me, NULL, NULL));
  CHECK_OK(gvl_region_end(me, GVL_PRIO_MIN));
  return me;
}

/* The frozen waiter a has the grant; me's blocking call (fn in
 * gvl_call_without, or an empty region with fn NULL) must not take it
 * back: me queues again, which lets a go, a runs first, and no retake is
 * counted. */
static void expect_no_take_back(gvl_thread_t *me, waiter_t *a,
                                void *(*fn)(void *)) {
  pthread_t th;
  unsigned n0 = atomic_load(&nready);
  uint64_t r0 = tgvl_tstats(me).retakes;
  thaw_after = me;
  tgvl_spawn(&th, thaw_when_queued, &n0);
  CHECK(region_around(me, fn) == me);
  CHECK_EQ(atomic_load(&norder), 1);            /* a ran first */
  CHECK_EQ(tgvl_tstats(me).retakes, r0);        /* and none was counted */
  tgvl_join(th);
  tgvl_join(a->th);
  CHECK_OK(gvl_release(me));
}

/* Let the frozen waiter a go and release: a, which kept its place, runs
 * before b, which queued after it. */
static void let_go(gvl_thread_t *me, waiter_t *a, waiter_t *b) {
  thaw();
  CHECK_OK(gvl_release(me));
  tgvl_join(a->th);
  tgvl_join(b->th);
  CHECK_EQ(atomic_load(&norder), 2);
  CHECK_EQ(order[0], 1);
  CHECK_EQ(order[1], 2);
}

/* fn returns while the waiter cannot run: the GVL comes straight back, and
 * that waiter is still served before one that queued after it. */
static void taken_back(void) {
  gvl_thread_t *me = setup(TGVL_HOUR_NS);
  waiter_t a, b;
  queue_waiter(&a, 1, 0);
  queue_waiter(&b, 2, 0);
  freeze(&a);
  CHECK(gvl_call_without(me, noop, me, NULL, NULL) == me);
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(tgvl_tstats(me).retakes, 1);
  CHECK_EQ(atomic_load(&norder), 0);
  let_go(me, &a, &b);
  CHECK_EQ(tgvl_stats(g).retakes, 1);
  teardown(me);
}

/* The same through gvl_region_begin/gvl_region_end. */
static void region_taken_back(void) {
  gvl_thread_t *me = setup(TGVL_HOUR_NS);
  waiter_t a, b;
  queue_waiter(&a, 1, 0);
  queue_waiter(&b, 2, 0);
  freeze(&a);
  CHECK_OK(gvl_region_begin(me, NULL, NULL));
  CHECK(!gvl_thread_holds(me));
  CHECK_OK(gvl_region_end(me, GVL_PRIO_MIN));
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(tgvl_tstats(me).retakes, 1);
  let_go(me, &a, &b);
  teardown(me);
}

/* The same, many times over: each grant taken back leaves the waiter
 * queued, and the GVL is never held by two threads. */
static void taken_back_repeatedly(void) {
  gvl_thread_t *me = setup(TGVL_HOUR_NS);
  waiter_t a;
  queue_waiter(&a, 1, 0);
  freeze(&a);
  for (int i = 0; i < 1000; i++) {
    CHECK(gvl_call_without(me, noop, me, NULL, NULL) == me);
    CHECK_OK(gvl_check_ints(me));
  }
  CHECK_EQ(tgvl_tstats(me).retakes, 1000);
  CHECK_EQ(atomic_load(&norder), 0);
  thaw();
  CHECK_OK(gvl_release(me));
  tgvl_join(a.th);
  CHECK_EQ(atomic_load(&norder), 1);
  teardown(me);
}

/* fn lasts until the waiter has the GVL: no taking back, the caller waits
 * for the waiter's release. */
static void *until_served(void *arg) {
  while (atomic_load(&norder) == 0) tgvl_sleep_us(50);
  return arg;
}

static void waiter_ran(void) {
  gvl_thread_t *me = setup(TGVL_HOUR_NS);
  waiter_t a;
  queue_waiter(&a, 1, 0);
  CHECK(gvl_call_without(me, until_served, me, NULL, NULL) == me);
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(tgvl_tstats(me).retakes, 0);
  tgvl_join(a.th);
  CHECK_EQ(atomic_load(&norder), 1);
  CHECK_OK(gvl_release(me));
  teardown(me);
}

/* Past its slice the caller does not take the GVL back, even from a waiter
 * that cannot run: it queues and waits. */
static void no_retake_past_slice(void) {
  gvl_thread_t *me = setup(1000000);           /* 1 ms slice */
  waiter_t a;
  queue_waiter(&a, 1, 0);
  freeze(&a);
  tgvl_sleep_us(5000);                          /* past the slice */
  expect_no_take_back(me, &a, noop);
  teardown(me);
}

/* Taking the GVL back does not restart the slice: 60 ms after the waiter
 * queued (an hour's slice) the caller takes it back; then the slice becomes
 * 50 ms, which the slice that started when the waiter queued is past, so
 * the caller does not take it back again.  A slice the take-back restarted
 * would still run.  (Every wait is a lower bound: a loaded machine can only
 * make a restarted slice end too, and the test miss, never fail.) */
static void slice_goes_on(void) {
  gvl_thread_t *me = setup(TGVL_HOUR_NS);
  waiter_t a;
  queue_waiter(&a, 1, 0);
  freeze(&a);
  tgvl_sleep_us(60000);
  CHECK(gvl_call_without(me, noop, me, NULL, NULL) == me);
  CHECK_EQ(tgvl_tstats(me).retakes, 1);
  CHECK_OK(gvl_set_slice(g, 50000000));
  expect_no_take_back(me, &a, noop);
  teardown(me);
}

/* Taking the GVL back resumes a slice that ends before the timer would
 * look: the timer must be woken to time it again.  a, the first waiter,
 * times the slice (from when it queued, t0) and gets the revocable grant
 * 150 ms into a 300 ms slice; the role passes to b, which looks once and
 * then sleeps until 450 ms.  fn lasts long enough for that look; the grant
 * is taken back, the slice resumed.  The caller, still holding, must be
 * asked to give the GVL up when the slice ends (300 ms), before b's own
 * deadline (450 ms), which is when a timer that was not woken asks.
 * What the test cannot control is the kernel: on a loaded machine the
 * caller may reach its steps late or b may run only after 450 ms.  Such a round
 * proves nothing either way and is run again, up to ten times; without the
 * wake every round asks at 450 ms or later. */
static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *let_timer_look(void *arg) {
  tgvl_sleep_us(30000L * tgvl_slow());
  return arg;
}

static void sleep_until_ns(uint64_t t) {
  uint64_t now = mono_ns();
  if (now < t) tgvl_sleep_us((long)((t - now) / 1000));
}

/* One round: 1 if the request came before b's deadline, 0 if the round
 * proves nothing (see above).  A round held up past the slice's end before
 * the call returns is refused the take-back, rightly: me then queues
 * behind the frozen a, which is let go so that the round can end. */
static int resumed_slice_round(void) {
  uint64_t ms = 1000000u * (uint64_t)tgvl_slow();  /* stretched under tools */
  gvl_thread_t *me = setup(300 * ms);
  waiter_t a, b;
  int done = 0;
  uint64_t begun = mono_ns();                   /* the slice began after */
  queue_waiter(&a, 1, 0);
  uint64_t t0 = mono_ns();                      /* the slice began before */
  queue_waiter(&b, 2, 0);
  sleep_until_ns(t0 + 150 * ms);
  if (mono_ns() < t0 + 250 * ms && tgvl_thread_state(atomic_load(&a.tid)) == 'S') {
    pthread_t th;
    unsigned n0 = atomic_load(&nready);
    freeze(&a);
    uint64_t asked = tgvl_tstats(me).preempt_reqs;
    atomic_store(&preempt_ns, 0);
    thaw_after = me;
    atomic_store(&thaw_cancel, 0);
    tgvl_spawn(&th, thaw_when_queued, &n0);
    CHECK(gvl_call_without(me, let_timer_look, me, NULL, NULL) == me);
    uint64_t back = mono_ns();
    atomic_store(&thaw_cancel, 1);
    void *thawed = NULL;
    CHECK_OK(pthread_join(th, &thawed));
    if (tgvl_tstats(me).retakes == 0) {
      /* Refused: only right if the slice had ended by then. */
      CHECK(thawed);
      CHECK_GE(back, begun + 300 * ms);
      CHECK_OK(gvl_release(me));
      tgvl_join(a.th);
      tgvl_join(b.th);
      atomic_store(&thaw_cancel, 0);
      teardown(me);
      return 0;
    }
    CHECK(!thawed);
    atomic_store(&thaw_cancel, 0);
    CHECK_EQ(tgvl_tstats(me).retakes, 1);
    while (tgvl_tstats(me).preempt_reqs == asked) tgvl_sleep_us(1000);
    CHECK_EQ(tgvl_tstats(me).preempt_reqs, asked + 1);
    done = atomic_load(&preempt_ns) < t0 + 450 * ms;
    let_go(me, &a, &b);
  } else {                                      /* a is not frozen */
    CHECK_OK(gvl_release(me));
    tgvl_join(a.th);
    tgvl_join(b.th);
  }
  teardown(me);
  return done;
}

static void resumed_slice_timed(void) {
  for (int round = 0; round < 10; round++)
    if (resumed_slice_round()) return;
  CHECK(!"the slice's end was never asked for before the timer's own deadline");
}

/* A call that outlasts the slice does not take the GVL back either, even
 * though the release was within it and the waiter still cannot run. */
static void *sleep_past_slice(void *arg) {
  tgvl_sleep_us(300000);
  return arg;
}

static void no_retake_after_slice(void) {
  gvl_thread_t *me = setup(200000000);         /* 200 ms slice */
  waiter_t a;
  queue_waiter(&a, 1, 0);
  freeze(&a);
  expect_no_take_back(me, &a, sleep_past_slice);
  teardown(me);
}

/* A boosted hold is not taken back while the cap is exceeded: it would
 * have queued behind the waiter, demoted. */
static void over_cap_with(void *(*fn)(void *)) {
  gvl_config_t c = tgvl_strict_config(TGVL_HOUR_NS, NULL);
  waiter_t a;
  /* 100 ms of a 10 s window: the hold's charge must not age out of the
   * window before the retake is tried, however long the machine holds this
   * thread off (with the default 100 ms window, a stall of ~90 ms did). */
  c.boost_cap_pct = 1;
  c.cap_window_ns = 10ull * 1000000000u;
  gvl_thread_t *me = setup_with(c, GVL_PRIO_BOOST);
  queue_waiter(&a, 1, 0);
  freeze(&a);
  tgvl_sleep_us(150000);            /* a 150 ms boosted hold: over the cap */
  again_prio = GVL_PRIO_BOOST;
  expect_no_take_back(me, &a, fn);
  teardown(me);
}

static void no_retake_over_cap(void) { over_cap_with(NULL); }

/* A frozen waiter at wprio keeps its grant through me's fn. */
static void no_retake_with(int wprio, void *(*fn)(void *)) {
  gvl_thread_t *me = setup(TGVL_HOUR_NS);
  waiter_t a;
  queue_waiter(&a, 1, wprio);
  freeze(&a);
  expect_no_take_back(me, &a, fn);
  teardown(me);
}

/* A waiter of higher priority is never taken back from. */
static void no_retake_from_higher(void) { no_retake_with(5, noop); }

/* A boosted hold's release: its next boosted acquire takes the GVL back
 * from a waiter that has not run, which stays first in line, also ahead of
 * a waiter that queued after it; through gvl_call_with as well. */
static void boost_taken_back(void) {
  gvl_thread_t *me = setup_with(tgvl_strict_config(TGVL_HOUR_NS, NULL),
                                GVL_PRIO_BOOST);
  waiter_t a, b;
  queue_waiter(&a, 1, 0);
  queue_waiter(&b, 2, 0);
  freeze(&a);
  for (int i = 0; i < 100; i++) {
    CHECK_OK(gvl_release(me));
    CHECK_OK(gvl_acquire_prio(me, GVL_PRIO_BOOST));
    CHECK(gvl_thread_holds(me));
  }
  CHECK_EQ(tgvl_tstats(me).retakes, 100);
  CHECK_EQ(atomic_load(&norder), 0);
  let_go(me, &a, &b);
  teardown(me);
}

/* The same for gvl_call_with: a foreign thread's boosted calls, the first
 * of which preempted the holder, take back the grant each one's release
 * left to a waiter that cannot run. */
#define CALLS 50
static void *in_call(void *arg) {
  CHECK(gvl_thread_holds(gvl_thread_self(g)));
  atomic_fetch_add((atomic_uint *)arg, 1);
  return arg;
}

static void *boosted_calls(void *arg) {
  for (int i = 0; i < CALLS; i++)
    CHECK(gvl_call_with(g, GVL_PRIO_BOOST, in_call, arg) == arg);
  return NULL;
}

static void *thaw_after_join(void *arg) {
  tgvl_join(*(pthread_t *)arg);
  thaw();
  return NULL;
}

static void call_with_taken_back(void) {
  gvl_thread_t *me = setup(TGVL_HOUR_NS);
  waiter_t a;
  atomic_uint calls = 0;
  pthread_t th, th2;
  queue_waiter(&a, 1, 0);
  freeze(&a);
  tgvl_spawn(&th, boosted_calls, &calls);
  tgvl_spawn(&th2, thaw_after_join, &th);
  /* The first call preempts me, which queues behind a; a runs only once
   * the calls are over and it is let go, then me. */
  while (atomic_load(&norder) == 0) {
    CHECK_OK(gvl_check_ints(me));
    tgvl_sleep_us(50);
  }
  tgvl_join(th2);
  tgvl_join(a.th);
  CHECK_EQ(atomic_load(&calls), CALLS);
  CHECK_EQ(atomic_load(&norder), 1);
  CHECK_EQ(tgvl_stats(g).retakes, CALLS - 1);
  CHECK_OK(gvl_release(me));
  teardown(me);
}

/* A boosted gvl_call_with inside a blocking region leaves its own grant,
 * which the next such call takes back: suspending the region for the call
 * drops only the region's claim. */
static gvl_thread_t *region_me;
static waiter_t region_a;
static void *queue_and_freeze(void *arg) {
  queue_waiter(&region_a, 1, 0);
  freeze(&region_a);
  return arg;
}

static void *check_taken_back(void *arg) {
  CHECK_EQ(tgvl_tstats(region_me).retakes, 1);
  CHECK_EQ(atomic_load(&norder), 0);
  return arg;
}

static void *two_boosted_calls(void *arg) {
  pthread_t th;
  static unsigned n0;                 /* read by the thread after we return */
  CHECK(gvl_call_with(g, GVL_PRIO_BOOST, queue_and_freeze, arg) == arg);
  /* a holds a grant the next boosted call may take back; if that call
   * queued instead, let a go so that the check fails rather than hangs */
  n0 = atomic_load(&nready);
  thaw_after = region_me;
  tgvl_spawn(&th, thaw_when_queued, &n0);
  CHECK(gvl_call_with(g, GVL_PRIO_BOOST, check_taken_back, arg) == arg);
  *(pthread_t *)arg = th;
  return arg;
}

static void region_call_with_taken_back(void) {
  pthread_t th;
  region_me = setup(TGVL_HOUR_NS);
  CHECK(gvl_call_without(region_me, two_boosted_calls, &th, NULL, NULL) ==
        &th);
  tgvl_join(th);              /* a was let go when region_end queued */
  tgvl_join(region_a.th);
  CHECK_EQ(atomic_load(&norder), 1);
  CHECK_EQ(tgvl_tstats(region_me).retakes, 1);
  CHECK_OK(gvl_release(region_me));
  teardown(region_me);
}

/* Not taken back at the waiter's own priority or below (the acquire would
 * have queued behind it), nor after an unboosted hold, nor while the cap
 * is exceeded. */
static void boost_no_retake_at_equal(void) {
  gvl_thread_t *me = setup_with(tgvl_strict_config(TGVL_HOUR_NS, NULL),
                                GVL_PRIO_BOOST);
  waiter_t a;
  queue_waiter(&a, 1, 0);
  freeze(&a);
  again_prio = GVL_PRIO_NORMAL;
  expect_no_take_back(me, &a, RELEASE);
  teardown(me);
}

static void boost_no_retake_unboosted(void) {
  gvl_thread_t *me = setup(TGVL_HOUR_NS);
  waiter_t a;
  queue_waiter(&a, 1, GVL_PRIO_MIN);   /* below me, and still not */
  freeze(&a);
  again_prio = GVL_PRIO_BOOST;
  expect_no_take_back(me, &a, RELEASE);
  teardown(me);
}

static void boost_no_retake_over_cap(void) { over_cap_with(RELEASE); }

/* An acquire that comes after the slice is over does not take it back,
 * though the release was within it. */
static void boost_no_retake_after_slice(void) {
  gvl_thread_t *me = setup_with(tgvl_strict_config(200000000, NULL),
                                GVL_PRIO_BOOST);   /* 200 ms slice */
  waiter_t a;
  queue_waiter(&a, 1, 0);
  freeze(&a);
  again_prio = GVL_PRIO_BOOST;
  again_after_us = 300000;
  expect_no_take_back(me, &a, RELEASE);
  teardown(me);
}

/* Nor past a waiter that queued at the same priority while the grant was
 * out: once the waiter gave the GVL up, that one would go first. */
static void boost_no_retake_behind_equal(void) {
  gvl_thread_t *me = setup_with(tgvl_strict_config(TGVL_HOUR_NS, NULL),
                                GVL_PRIO_BOOST);
  waiter_t a, c;
  pthread_t th;
  queue_waiter(&a, 1, 0);
  freeze(&a);
  CHECK_OK(gvl_release(me));          /* a's grant, which a cannot take */
  queue_waiter(&c, 2, GVL_PRIO_BOOST);
  unsigned n0 = atomic_load(&nready);
  thaw_after = me;
  tgvl_spawn(&th, thaw_when_queued, &n0);
  CHECK_OK(gvl_acquire_prio(me, GVL_PRIO_BOOST));
  CHECK_EQ(atomic_load(&norder), 2);  /* a, then c, then me */
  CHECK_EQ(order[0], 1);
  CHECK_EQ(order[1], 2);
  CHECK_EQ(tgvl_tstats(me).retakes, 0);
  tgvl_join(th);
  tgvl_join(a.th);
  tgvl_join(c.th);
  CHECK_OK(gvl_release(me));
  teardown(me);
}

/* A region's grant is not taken back by an acquire inside the region: a
 * gvl_call_with from fn, at a priority below the waiter's, queues behind
 * it. */
static void *after_waiter(void *arg) {
  CHECK_EQ(atomic_load(&norder), 1);
  return arg;
}

static void *nested_call(void *arg) {
  return gvl_call_with(g, GVL_PRIO_MIN, after_waiter, arg);
}

static void no_retake_by_nested_call(void) { no_retake_with(0, nested_call); }

static void boost_no_retake_past_slice(void) {
  gvl_thread_t *me = setup_with(tgvl_strict_config(1000000, NULL),
                                GVL_PRIO_BOOST);
  waiter_t a;
  queue_waiter(&a, 1, 0);
  freeze(&a);
  tgvl_sleep_us(5000);                          /* past the 1 ms slice */
  again_prio = GVL_PRIO_BOOST;
  expect_no_take_back(me, &a, RELEASE);
  teardown(me);
}

/* GVL_F_NORETAKE: never taken back, even from a waiter that cannot run,
 * after a blocking region or a boosted hold. */
static void noretake_with(int prio, void *(*fn)(void *)) {
  gvl_config_t c = tgvl_strict_config(TGVL_HOUR_NS, NULL);
  waiter_t a;
  c.flags |= GVL_F_NORETAKE;
  gvl_thread_t *me = setup_with(c, prio);
  queue_waiter(&a, 1, 0);
  freeze(&a);
  again_prio = prio;
  expect_no_take_back(me, &a, fn);
  teardown(me);
}

static void noretake_flag(void) { noretake_with(0, noop); }
static void boost_noretake_flag(void) { noretake_with(GVL_PRIO_BOOST, RELEASE); }

/* fork() inside fn while the grant is still revocable: the child's GVL is
 * free (its waiter does not exist there), so fn's return takes it as a
 * plain acquire; the parent takes its grant back as usual. */
static void *fork_in_fn(void *arg) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  *(pid_t *)arg = pid;
  return arg;
}

static void fork_in_region(void) {
  gvl_thread_t *me = setup(TGVL_HOUR_NS);
  waiter_t a;
  pid_t pid = -1;
  queue_waiter(&a, 1, 0);
  freeze(&a);
  CHECK(gvl_call_without(me, fork_in_fn, &pid, NULL, NULL) == &pid);
  if (pid == 0) {
    tgvl_watchdog(10);
    CHECK(gvl_thread_holds(me));
    CHECK_EQ(tgvl_tstats(me).retakes, 0);
    CHECK_OK(gvl_yield(me));
    CHECK(gvl_call_without(me, noop, me, NULL, NULL) == me);
    CHECK_OK(gvl_release(me));
    CHECK_OK(gvl_thread_detach(me));
    CHECK_OK(gvl_destroy(g));
    _exit(0);
  }
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(tgvl_tstats(me).retakes, 1);
  tgvl_wait_child(pid);
  thaw();
  CHECK_OK(gvl_release(me));
  tgvl_join(a.th);
  teardown(me);
}

static const tgvl_case_t cases[] = {
  {"taken_back", taken_back},
  {"region_taken_back", region_taken_back},
  {"taken_back_repeatedly", taken_back_repeatedly},
  {"waiter_ran", waiter_ran},
  {"no_retake_past_slice", no_retake_past_slice},
  {"slice_goes_on", slice_goes_on},
  {"resumed_slice_timed", resumed_slice_timed},
  {"no_retake_after_slice", no_retake_after_slice},
  {"no_retake_over_cap", no_retake_over_cap},
  {"no_retake_from_higher", no_retake_from_higher},
  {"noretake_flag", noretake_flag},
  {"fork_in_region", fork_in_region},
  {"boost_taken_back", boost_taken_back},
  {"call_with_taken_back", call_with_taken_back},
  {"region_call_with_taken_back", region_call_with_taken_back},
  {"boost_no_retake_at_equal", boost_no_retake_at_equal},
  {"boost_no_retake_unboosted", boost_no_retake_unboosted},
  {"boost_no_retake_over_cap", boost_no_retake_over_cap},
  {"boost_no_retake_past_slice", boost_no_retake_past_slice},
  {"boost_no_retake_behind_equal", boost_no_retake_behind_equal},
  {"boost_no_retake_after_slice", boost_no_retake_after_slice},
  {"no_retake_by_nested_call", no_retake_by_nested_call},
  {"boost_noretake_flag", boost_noretake_flag},
};

int main(int argc, char **argv) {
  struct sigaction sa;
  tgvl_watchdog(120);
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
  CHECK_OK(pipe(hold_pipe));
  return tgvl_run_cases(cases, sizeof cases / sizeof cases[0], argc, argv);
}
