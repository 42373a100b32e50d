/* SPDX-License-Identifier: MIT */
/*
 * Hostile host callbacks on the loop thread:
 *   - callbacks that fail (evl_fail), with and without the GVL, and one that
 *     breaks the GVL contract by releasing it and returning;
 *   - a callback that calls evl_stop with every kind of registration pending;
 *   - a callback that blocks in gvl_call_without with an unblocking function,
 *     woken by gvl_thread_interrupt, also while another thread waits in
 *     evl_stop;
 *   - a callback that tries to detach its own (the loop's) thread.
 * Each asserts that the loop thread survives, that every registration gets
 * exactly one last call, and the exact counters.
 */
#include <fcntl.h>
#include <sys/wait.h>

#include "flt.h"

static void nop_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  (void)status;
}

/* ---- failing callbacks ------------------------------------------------------ */

static atomic_long err_calls, err_held, err_bad, fail_calls;

static void on_error(evl_t *l, int err, const char *what, void *arg) {
  atomic_long *expect_held = arg;
  CHECK(evl_in_loop_thread(l));
  if (err == EIO) {
    CHECK(strcmp(what, "odd callback") == 0);
    if (flt_holds(l) != (int)atomic_load(expect_held))
      atomic_fetch_add(&err_bad, 1);
    if (flt_holds(l)) atomic_fetch_add(&err_held, 1);
  } else if (err == EPERM) {
    /* The dispatcher's own report of a broken GVL contract. */
    CHECK(what != NULL && strstr(what, "GVL") != NULL);
  } else {
    atomic_fetch_add(&err_bad, 1);
  }
  atomic_fetch_add(&err_calls, 1);
}

static atomic_long held_mode;

static void failing_cb(evl_t *l, void *arg, int status) {
  long i = (long)(intptr_t)arg;
  CHECK_EQ(status, 0);
  CHECK_EQ(flt_holds(l), (int)atomic_load(&held_mode));
  if (i % 2 == 1) {
    /* The last report wins: the first one must not reach on_error. */
    CHECK_OK(evl_fail(l, ENOSPC, "overwritten"));
    CHECK_OK(evl_fail(l, EIO, "odd callback"));
  }
  CHECK_EQ(evl_fail(l, 0, "zero"), EINVAL);
  CHECK_EQ(evl_fail(l, -5, "negative"), EINVAL);
  CHECK_EQ(evl_fail(NULL, EIO, NULL), EINVAL);
  atomic_fetch_add(&fail_calls, 1);
}

/* Breaks the contract: gives the GVL away and returns without it. */
static void rogue_release_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK_OK(gvl_release(evl_gvl_thread(l)));
  atomic_fetch_add(&fail_calls, 1);
}

/* Breaks it the other way: takes the GVL in an EVL_F_NOGVL callback. */
static void rogue_acquire_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK_OK(gvl_acquire(evl_gvl_thread(l)));
  atomic_fetch_add(&fail_calls, 1);
}

static void check_held_cb(evl_t *l, void *arg, int status) {
  CHECK_EQ(status, 0);
  CHECK_EQ(flt_holds(l), (int)(intptr_t)arg);
  atomic_fetch_add(&fail_calls, 1);
}

static void test_failing(gvl_t *g) {
  evl_config_t cfg = {0};
  evl_stats_t st;
  evl_t *l;
  long i, n = 200;
  cfg.on_error = on_error;
  cfg.on_error_arg = &held_mode;
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  /* Outside any callback: EPERM, from this thread and with bad input. */
  CHECK_EQ(evl_fail(l, EIO, "outside"), EPERM);

  atomic_store(&held_mode, 1);
  for (i = 0; i < n; i++)
    CHECK_OK(evl_post(l, failing_cb, (void *)(intptr_t)i, NULL));
  flt_wait_ge(&fail_calls, n);
  flt_wait_ge(&err_calls, n / 2);
  CHECK_EQ(atomic_load(&err_held), n / 2);

  atomic_store(&held_mode, 0);
  for (i = 0; i < n; i++)
    CHECK_OK(evl_post_flags(l, failing_cb, (void *)(intptr_t)i, EVL_F_NOGVL,
                            NULL));
  flt_wait_ge(&fail_calls, 2 * n);
  flt_wait_ge(&err_calls, n);
  CHECK_EQ(atomic_load(&err_held), n / 2);

  /* Contract breakers: each is reported (EPERM), and the callbacks after
   * them still run in the GVL state they asked for. */
  CHECK_OK(evl_post(l, rogue_release_cb, NULL, NULL));
  CHECK_OK(evl_post(l, check_held_cb, (void *)(intptr_t)1, NULL));
  CHECK_OK(evl_post_flags(l, rogue_acquire_cb, NULL, EVL_F_NOGVL, NULL));
  CHECK_OK(evl_post_flags(l, check_held_cb, (void *)(intptr_t)0, EVL_F_NOGVL,
                          NULL));
  CHECK_OK(evl_post(l, check_held_cb, (void *)(intptr_t)1, NULL));
  flt_wait_ge(&fail_calls, 2 * n + 5);
  flt_wait_ge(&err_calls, n + 2);

  CHECK_OK(evl_destroy(l));
  CHECK_EQ(atomic_load(&err_bad), 0);
  CHECK_EQ(atomic_load(&err_calls), n + 2);
  /* The GVL is free again: nobody kept it. */
  {
    gvl_thread_t *t = gvl_thread_attach(g, 0);
    CHECK(t != NULL);
    CHECK_OK(gvl_acquire(t));
    CHECK_OK(gvl_release(t));
    CHECK_OK(gvl_thread_detach(t));
  }
  (void)st;
}

/* ---- a callback that stops the loop ------------------------------------------ */

enum { K_POST, K_TIMER, K_REPEAT, K_FD, K_SIG, K_WORK, K_READ, K_N };

typedef struct {
  atomic_long calls;   /* every call */
  atomic_long last;    /* last calls (status != 0, or the one-shot call) */
  atomic_long ok;      /* one-shot calls with 0 */
  atomic_long cancel;  /* last calls with ECANCELED */
} tally_t;

static tally_t tally[K_N];
static atomic_long stop_cb_done, shutdown_refused, gate_open;

/* Holds the loop thread (without the GVL) until every registration of the
 * test is made: else the stop could come while main still posts, and its
 * posts would rightly be refused. */
static void gate_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  (void)status;
  flt_wait_ge(&gate_open, 1);
}

static void tally_cb(evl_t *l, void *arg, int status) {
  tally_t *t = arg;
  int oneshot = t == &tally[K_POST] || t == &tally[K_TIMER] ||
                t == &tally[K_WORK];
  (void)l;
  atomic_fetch_add(&t->calls, 1);
  if (status == ECANCELED) atomic_fetch_add(&t->cancel, 1);
  if (status != 0 || oneshot) atomic_fetch_add(&t->last, 1);
  if (status == 0 && oneshot) atomic_fetch_add(&t->ok, 1);
}

static void tally_io(evl_t *l, void *arg, int status, unsigned ev) {
  (void)ev;
  tally_cb(l, arg, status);
}

static void tally_read(evl_t *l, void *arg, int status, char *d, size_t n) {
  tally_t *t = arg;
  (void)l;
  (void)n;
  free(d);
  atomic_fetch_add(&t->calls, 1);
  atomic_fetch_add(&t->last, 1);
  if (status == ECANCELED) atomic_fetch_add(&t->cancel, 1);
  if (status == 0) atomic_fetch_add(&t->ok, 1);
}

static void slow_work(void *arg) {
  (void)arg;
  flt_sleep_us(20000);
}

static void stopping_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK_OK(evl_stop(l));
  CHECK_OK(evl_stop(l));               /* idempotent */
  CHECK(evl_stopping(l));
  CHECK_EQ(evl_destroy(l), EBUSY);     /* not from the loop thread */
  /* From the moment stop is requested, new registrations are refused and
   * their callbacks are never called. */
  if (evl_post(l, tally_cb, &tally[K_POST], NULL) == EVL_ESTOPPED)
    atomic_fetch_add(&shutdown_refused, 1);
  if (evl_timer(l, 0, 0, 0, tally_cb, &tally[K_TIMER], NULL) == EVL_ESTOPPED)
    atomic_fetch_add(&shutdown_refused, 1);
  atomic_store(&stop_cb_done, 1);
}

static void test_stop_from_callback(gvl_t *g) {
  evl_t *l = evl_start(g, NULL);
  int p[2], i, before = 50, after = 50;
  evl_stats_t st;
  CHECK(l != NULL);
  CHECK_OK(pipe(p));
  CHECK_EQ(write(p[1], "x", 1), 1);   /* readable: the watch ticks */
  CHECK_OK(evl_post_flags(l, gate_cb, NULL, EVL_F_NOGVL, NULL));
  for (i = 0; i < before; i++)
    CHECK_OK(evl_post(l, tally_cb, &tally[K_POST], NULL));
  CHECK_OK(evl_timer(l, 3600 * 1000, 0, 0, tally_cb, &tally[K_TIMER], NULL));
  CHECK_OK(evl_timer(l, 1, 1, 0, tally_cb, &tally[K_REPEAT], NULL));
  CHECK_OK(evl_fd_watch(l, p[0], EVL_READABLE, 0, tally_io, &tally[K_FD],
                        NULL));
  CHECK_OK(evl_signal_watch(l, SIGUSR2, 0, tally_cb, &tally[K_SIG], NULL));
  for (i = 0; i < 8; i++)
    CHECK_OK(evl_work(l, slow_work, 0, tally_cb, &tally[K_WORK], NULL));
  CHECK_OK(evl_read_file(l, "/proc/self/status", 0, 0, tally_read,
                         &tally[K_READ], NULL));
  CHECK_OK(evl_post(l, stopping_cb, NULL, NULL));
  for (i = 0; i < after; i++)
    CHECK_OK(evl_post(l, tally_cb, &tally[K_POST], NULL));
  atomic_store(&gate_open, 1);
  flt_wait_ge(&stop_cb_done, 1);
  CHECK_OK(evl_stop(l));   /* waits for the loop thread to finish */
  CHECK_EQ(evl_post(l, nop_cb, NULL, NULL), EVL_ESTOPPED);
  CHECK_EQ(evl_wakeup(l), EVL_ESTOPPED);
  CHECK_OK(evl_stats(l, &st));
  CHECK_EQ(st.live, 0);
  CHECK_EQ(atomic_load(&shutdown_refused), 2);
  /* Every accepted registration had exactly one last call. */
  CHECK_EQ(atomic_load(&tally[K_POST].last), before + after);
  CHECK_EQ(atomic_load(&tally[K_POST].calls), before + after);
  /* The posts before the stopping callback ran; the ones queued behind it
   * did not: a stop ends the dispatch pass, and they get ECANCELED. */
  CHECK_EQ(atomic_load(&tally[K_POST].ok), before);
  CHECK_EQ(atomic_load(&tally[K_POST].cancel), after);
  CHECK_EQ(atomic_load(&tally[K_TIMER].calls), 1);
  CHECK_EQ(atomic_load(&tally[K_TIMER].cancel), 1);
  CHECK_EQ(atomic_load(&tally[K_REPEAT].last), 1);
  CHECK_EQ(atomic_load(&tally[K_REPEAT].cancel), 1);
  CHECK_EQ(atomic_load(&tally[K_FD].last), 1);
  CHECK_EQ(atomic_load(&tally[K_FD].cancel), 1);
  CHECK_EQ(atomic_load(&tally[K_SIG].last), 1);
  CHECK_EQ(atomic_load(&tally[K_SIG].cancel), 1);
  CHECK_EQ(atomic_load(&tally[K_WORK].last), 8);
  CHECK_EQ(atomic_load(&tally[K_WORK].ok) + atomic_load(&tally[K_WORK].cancel),
           8);
  CHECK_EQ(atomic_load(&tally[K_READ].last), 1);
  CHECK_EQ(st.dispatched + st.cancelled + st.errors,
           (uint64_t)(atomic_load(&tally[K_POST].calls) +
                      atomic_load(&tally[K_TIMER].calls) +
                      atomic_load(&tally[K_REPEAT].calls) +
                      atomic_load(&tally[K_FD].calls) +
                      atomic_load(&tally[K_SIG].calls) +
                      atomic_load(&tally[K_WORK].calls) +
                      atomic_load(&tally[K_READ].calls) + 2));  /* gate, stop */
  CHECK_OK(evl_destroy(l));
  close(p[0]);
  close(p[1]);
}

/* ---- a callback blocked in gvl_call_without ------------------------------------ */

typedef struct {
  int rfd, wfd;
  atomic_long in_region, ubf_calls, woke;
  gvl_thread_t *loop_t;   /* published before in_region */
} blocker_t;

static void *block_read(void *arg) {
  blocker_t *b = arg;
  char c;
  ssize_t r;
  atomic_store(&b->in_region, 1);
  do {
    r = read(b->rfd, &c, 1);
  } while (r < 0 && errno == EINTR);
  CHECK_EQ(r, 1);
  atomic_fetch_add(&b->woke, 1);
  return b;
}

static void unblock(void *arg) {
  blocker_t *b = arg;
  atomic_fetch_add(&b->ubf_calls, 1);
  CHECK_EQ(write(b->wfd, "u", 1), 1);
}

static atomic_long blocked_done, after_block;

static void blocking_cb(evl_t *l, void *arg, int status) {
  blocker_t *b = arg;
  gvl_thread_t *t = evl_gvl_thread(l);
  void *r;
  CHECK_EQ(status, 0);
  CHECK(gvl_thread_holds(t));
  b->loop_t = t;
  r = gvl_call_without(t, block_read, b, unblock, b);
  CHECK(r == b);
  CHECK(gvl_thread_holds(t));
  atomic_fetch_add(&blocked_done, 1);
}

static void after_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  if (status == 0) CHECK(flt_holds(l));
  atomic_fetch_add(&after_block, 1);
}

static void *stopper(void *arg) {
  CHECK_OK(evl_stop(arg));
  return NULL;
}

static void run_blocker(gvl_t *g, int stop_while_blocked) {
  evl_t *l = evl_start(g, NULL);
  blocker_t b;
  int p[2];
  gvl_thread_t *me;
  pthread_t th;
  CHECK(l != NULL);
  memset(&b, 0, sizeof b);
  CHECK_OK(pipe(p));
  b.rfd = p[0];
  b.wfd = p[1];
  atomic_store(&blocked_done, 0);
  atomic_store(&after_block, 0);
  CHECK_OK(evl_post(l, blocking_cb, &b, NULL));
  CHECK_OK(evl_post(l, after_cb, NULL, NULL));
  flt_wait_ge(&b.in_region, 1);
  /* The loop thread is blocked outside the GVL: an interpreter thread can
   * take it meanwhile. */
  me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_release(me));
  if (stop_while_blocked) {
    flt_spawn(&th, stopper, l);
    /* The stop is requested while the loop thread is still blocked: the
     * interrupt below is what lets it go on.  (A fixed sleep here was not
     * always long enough on a loaded machine.) */
    while (!evl_stopping(l)) flt_sleep_us(200);
    flt_sleep_us(20000); /* let it reach its wait; not asserted */
  }
  CHECK_OK(gvl_thread_interrupt(b.loop_t));
  flt_wait_ge(&blocked_done, 1);
  CHECK_EQ(atomic_load(&b.ubf_calls), 1);
  CHECK_EQ(atomic_load(&b.woke), 1);
  flt_wait_ge(&after_block, 1);
  if (stop_while_blocked) flt_join(th);
  CHECK_OK(evl_destroy(l));
  CHECK_EQ(atomic_load(&after_block), 1);
  CHECK_OK(gvl_thread_detach(me));
  close(p[0]);
  close(p[1]);
}

/* After an interrupt consumed by a blocking region, the next region of the
 * same thread must run normally (the interrupt was delivered once). */
static atomic_long second_ran;
static void *quick(void *arg) {
  atomic_fetch_add(&second_ran, 1);
  return arg;
}
static void second_region_cb(evl_t *l, void *arg, int status) {
  gvl_thread_t *t = evl_gvl_thread(l);
  void *r;
  (void)arg;
  CHECK_EQ(status, 0);
  errno = 0;
  r = gvl_call_without(t, quick, &second_ran, NULL, NULL);
  if (r == NULL) {
    /* An interrupt still pending from the first region: reported once. */
    CHECK_EQ(errno, EINTR);
    r = gvl_call_without(t, quick, &second_ran, NULL, NULL);
  }
  CHECK(r == &second_ran);
  CHECK(gvl_thread_holds(t));
}

static void test_blocking(gvl_t *g) {
  run_blocker(g, 0);
  run_blocker(g, 1);
  {
    evl_t *l = evl_start(g, NULL);
    CHECK(l != NULL);
    CHECK_OK(evl_post(l, second_region_cb, NULL, NULL));
    flt_wait_ge(&second_ran, 1);
    CHECK_OK(evl_destroy(l));
    CHECK_EQ(atomic_load(&second_ran), 1);
  }
}

/* ---- a callback that detaches its own thread --------------------------------- */

static atomic_long detach_res, detach_done;

static void detach_held_cb(evl_t *l, void *arg, int status) {
  gvl_thread_t *t = evl_gvl_thread(l);
  (void)arg;
  CHECK_EQ(status, 0);
  /* Holding: refused. */
  atomic_store(&detach_res, gvl_thread_detach(t));
  CHECK(gvl_thread_holds(t));
  atomic_fetch_add(&detach_done, 1);
}

/* A host thread that runs callbacks via gvl_call_with and detaches itself
 * from inside one: refused while holding, and the call ends cleanly. */
static gvl_t *cw_g;
static void *detach_inside(void *arg) {
  gvl_thread_t *t = gvl_thread_self(cw_g);
  CHECK(t != NULL);
  CHECK(gvl_thread_holds(t));
  CHECK_EQ(gvl_thread_detach(t), EBUSY);
  return arg;
}
static void *foreign_main(void *arg) {
  int i;
  for (i = 0; i < 100; i++)
    CHECK(gvl_call_with(cw_g, 0, detach_inside, arg) == arg);
  return NULL;
}

static void test_detach(gvl_t *g) {
  evl_t *l = evl_start(g, NULL);
  pthread_t th;
  gvl_thread_t *t;
  CHECK(l != NULL);
  CHECK_OK(evl_post(l, detach_held_cb, NULL, NULL));
  flt_wait_ge(&detach_done, 1);
  CHECK_EQ(atomic_load(&detach_res), EBUSY);
  /* The loop still works after the refused detach. */
  atomic_store(&after_block, 0);
  CHECK_OK(evl_post(l, after_cb, NULL, NULL));
  flt_wait_ge(&after_block, 1);
  CHECK_OK(evl_destroy(l));

  cw_g = g;
  flt_spawn(&th, foreign_main, &cw_g);
  flt_join(th);
  /* An attached thread detaching from within gvl_call_with. */
  t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK(gvl_call_with(g, 0, detach_inside, &cw_g) == &cw_g);
  CHECK(!gvl_thread_holds(t));
  CHECK_OK(gvl_thread_detach(t));
}

int main(void) {
  gvl_t *g;
  flt_watchdog(120);
  g = flt_gvl();
  test_failing(g);
  test_stop_from_callback(g);
  test_blocking(g);
  test_detach(g);
  CHECK_OK(gvl_destroy(g));
  printf("fault_callbacks: ok\n");
  return 0;
}
