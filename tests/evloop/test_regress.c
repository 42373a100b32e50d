/* SPDX-License-Identifier: MIT */
/* Regressions: libuv's cached loop time and its UV_RUN_ONCE timer
 * handling, and stop from a callback.
 *  - A timer armed while the loop thread was busy must not fire early
 *    (a lower bound: true on any load).
 *  - A timer that falls due while a callback runs must be dispatched
 *    without waiting for an unrelated event (libuv runs it at the top of
 *    the next iteration and would then poll without a timeout).
 *  - evl_step(l, N) must return after N ms even if the thread was busy
 *    longer than N since the last pass.
 *  - Posts queued behind a callback that calls evl_stop get ECANCELED.
 *  - cfg.on_error runs inside the loop's pass: evl_detach and evl_destroy
 *    called from it say EBUSY (attached mode), and the pass goes on.
 *  - A registration whose failure is queued but not yet delivered, then
 *    cancelled (evl_cancel returns 0), gets ECANCELED as its last call.
 *  - A timer counts from its evl_timer call: one whose time has passed
 *    before the loop thread armed it fires without waiting it again. */
#include <signal.h>
#include <unistd.h>

#include "evl_test.h"

static atomic_int fired, reg_done;
static uint64_t reg_ns, fire_ns;

static void late_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  CHECK_EQ(status, 0);
  fire_ns = gvl_now_ns();
  atomic_store(&fired, 1);
}

static void busy_then_arm(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  t_sleep_ms(60);
  reg_ns = gvl_now_ns();
  CHECK_EQ(evl_timer(l, 40, 0, 0, late_cb, NULL, NULL), 0);
  atomic_store(&reg_done, 1);
}

static void test_not_early(gvl_t *g) {
  evl_t *l = t_loop(g);
  atomic_store(&fired, 0);
  CHECK_EQ(evl_post(l, busy_then_arm, NULL, NULL), 0);
  t_wait_ge(&fired, 1);
  /* libuv keeps time in whole ms from a clock that may be the coarse one
   * (a tick behind): allow 3 ms.  The bug fired ~40 ms early. */
  CHECK(fire_ns - reg_ns >= 37000000ull);
  CHECK_EQ(evl_destroy(l), 0);
}

static void sleeper_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  CHECK_EQ(status, 0);
  t_sleep_ms(40);
}

/* A repeating timer: a one-shot one is closed when it fires, and a closing
 * handle alone makes libuv poll without blocking, hiding the bug. */
static atomic_int ticks;

static void test_due_during_dispatch(gvl_t *g) {
  evl_t *l = t_loop(g);
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  /* Both reach the loop together; the timer falls due while the sleeper
   * runs, and nothing else wakes the loop for an hour. */
  CHECK_EQ(gvl_acquire(me), 0);
  CHECK_EQ(evl_timer(l, 10, 3600000, 0, t_count_ok, &ticks, NULL), 0);
  CHECK_EQ(evl_post(l, sleeper_cb, NULL, NULL), 0);
  CHECK_EQ(gvl_release(me), 0);
  t_wait_ge(&ticks, 1);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
}

static atomic_int drv_steps;
static void busy_driver(evl_t *l, void *arg) {
  (void)arg;
  while (!evl_stopping(l)) {
    t_sleep_ms(20);              /* work between two waits, longer than N */
    CHECK_EQ(evl_step(l, 5), 0); /* must come back without any event */
    atomic_fetch_add(&drv_steps, 1);
  }
}

static void test_step_timeout(gvl_t *g) {
  evl_config_t cfg = {0};
  evl_t *l;
  cfg.driver = busy_driver;
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  t_wait_ge(&drv_steps, 5);
  CHECK_EQ(evl_destroy(l), 0);
}

static atomic_int after_ok, after_cancel, stopper_ran;
static void stopper_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK_EQ(evl_stop(l), 0);
  atomic_store(&stopper_ran, 1);
}
static void after_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == 0) atomic_fetch_add(&after_ok, 1);
  if (status == ECANCELED) atomic_fetch_add(&after_cancel, 1);
}

static void test_stop_cancels_rest(gvl_t *g) {
  evl_t *l = t_loop(g);
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  int i;
  CHECK_EQ(gvl_acquire(me), 0);
  CHECK_EQ(evl_post(l, stopper_cb, NULL, NULL), 0);
  for (i = 0; i < 50; i++) CHECK_EQ(evl_post(l, after_cb, NULL, NULL), 0);
  CHECK_EQ(gvl_release(me), 0);
  t_wait_ge(&stopper_ran, 1);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&after_ok), 0);
  CHECK_EQ(atomic_load(&after_cancel), 50);
  CHECK_EQ(gvl_thread_detach(me), 0);
}

/* The on_ready hook sees the events of registrations, without the GVL. */
static atomic_int ready_calls, ready_bad;
static gvl_t *hook_g;
static void on_ready(evl_t *l, evl_id_t id, void *arg) {
  if (arg != (void *)&ready_calls || id == 0 || t_holds(l)) atomic_store(&ready_bad, 1);
  atomic_fetch_add(&ready_calls, 1);
}

static void test_ready_hook(gvl_t *g) {
  evl_config_t cfg = {0};
  evl_t *l;
  hook_g = g;
  cfg.on_ready = on_ready;
  cfg.on_ready_arg = &ready_calls;
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  atomic_store(&fired, 0);
  CHECK_EQ(evl_timer(l, 1, 0, 0, late_cb, NULL, NULL), 0);
  CHECK_EQ(evl_post(l, after_cb, NULL, NULL), 0);
  t_wait_ge(&fired, 1);
  t_wait_ge(&ready_calls, 2);
  CHECK_EQ(atomic_load(&ready_bad), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

/* ---- on_error inside the pass ------------------------------------------ */

static int onerr_detach = -1, onerr_destroy = -1;
static atomic_int after_calls;

static void on_err(evl_t *l, int err, const char *what, void *arg) {
  (void)what;
  (void)arg;
  CHECK_EQ(err, EIO);
  onerr_detach = evl_detach(l);
  onerr_destroy = evl_destroy(l);
}

static void failing_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK_EQ(evl_fail(l, EIO, "failing_cb"), 0);
}

static void counted_cb(evl_t *l, void *arg, int status) {
  (void)l;
  CHECK_EQ(status, 0);
  atomic_fetch_add((atomic_int *)arg, 1);
}

static void test_on_error_in_pass(gvl_t *g) {
  evl_config_t cfg = {0};
  cfg.no_thread = 1;
  cfg.on_error = on_err;
  evl_t *l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_attach(l), 0);
  CHECK_EQ(evl_post(l, failing_cb, NULL, NULL), 0);
  CHECK_EQ(evl_post(l, counted_cb, &after_calls, NULL), 0);
  CHECK_EQ(evl_step(l, 0), 0);
  CHECK_EQ(onerr_detach, EBUSY);
  CHECK_EQ(onerr_destroy, EBUSY);
  CHECK_EQ(atomic_load(&after_calls), 1);  /* the pass went on */
  CHECK_EQ(evl_detach(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

/* ---- cancel after a failure is queued ---------------------------------- */

static evl_id_t failed_id;
static int cancel_rc = -1;
static atomic_int failed_status = -1;

static void sig_last(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  atomic_store(&failed_status, status);
}

static void cancel_failed(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  cancel_rc = evl_cancel(l, failed_id);
}

/* Attached mode, so that both registrations start in the same pass, in
 * order: the post runs first and cancels the watch, whose failure (its
 * signal cannot be caught: sigaction refuses it on the loop thread) is
 * queued behind it. */
static void test_cancel_after_failure(gvl_t *g) {
  evl_config_t cfg = {0};
  int sig = SIGRTMIN - 1;   /* glibc's own: in range, refused by sigaction */
  cfg.no_thread = 1;
  evl_t *l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_attach(l), 0);
  CHECK_EQ(evl_post(l, cancel_failed, NULL, NULL), 0);
  CHECK_EQ(evl_signal_watch(l, sig, 0, sig_last, NULL, &failed_id), 0);
  CHECK_EQ(evl_step(l, 0), 0);
  CHECK_EQ(cancel_rc, 0);
  CHECK_EQ(atomic_load(&failed_status), ECANCELED);
  CHECK_EQ(evl_cancel(l, failed_id), EVL_ENOREG);
  CHECK_EQ(evl_detach(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

static atomic_int from_call;

/* Attached mode: nothing arms the timer until the host's next evl_step,
 * which comes after its 40 ms are over; then a few passes that do not
 * wait must run it (the timer counted from its arming waited 40 ms more). */
static void test_timer_from_call(gvl_t *g) {
  evl_config_t cfg = {0};
  cfg.no_thread = 1;
  evl_t *l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_attach(l), 0);
  CHECK_EQ(evl_timer(l, 40, 0, 0, t_count_ok, &from_call, NULL), 0);
  t_sleep_ms(60);
  for (int i = 0; i < 3; i++) CHECK_EQ(evl_step(l, 0), 0);
  CHECK_EQ(atomic_load(&from_call), 1);
  CHECK_EQ(evl_detach(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

int main(void) {
  gvl_t *g = t_gvl();
  test_not_early(g);
  test_due_during_dispatch(g);
  test_step_timeout(g);
  test_stop_cancels_rest(g);
  test_ready_hook(g);
  test_on_error_in_pass(g);
  test_cancel_after_failure(g);
  test_timer_from_call(g);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_regress ok");
  return 0;
}
