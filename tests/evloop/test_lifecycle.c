/* SPDX-License-Identifier: MIT */
/* Lifecycle: start/stop/destroy, no_thread mode, drivers, stop from a
 * callback, idempotent stop, thread rules and bad arguments. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "evl_test.h"

static void nop_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  (void)status;
}
static void nop_io(evl_t *l, void *arg, int status, unsigned ev) {
  (void)l;
  (void)arg;
  (void)status;
  (void)ev;
}
static void nop_rd(evl_t *l, void *arg, int status, char *d, size_t n) {
  (void)l;
  (void)arg;
  (void)status;
  (void)n;
  free(d);
}
static void nop_work(void *arg) { (void)arg; }

static void test_bad_start(gvl_t *g) {
  evl_config_t cfg = {0};
  errno = 0;
  CHECK(evl_start(NULL, NULL) == NULL);
  CHECK_EQ(errno, EINVAL);
  cfg.prio = GVL_PRIO_MAX + 1;
  errno = 0;
  CHECK(evl_start(g, &cfg) == NULL);
  CHECK_EQ(errno, EINVAL);
  cfg.prio = 0;
  cfg.no_thread = 2;
  errno = 0;
  CHECK(evl_start(g, &cfg) == NULL);
  CHECK_EQ(errno, EINVAL);
}

/* Every call rejects NULL and wrong threads with an error code. */
static void test_null_and_threads(gvl_t *g) {
  evl_t *l = t_loop(g);
  evl_id_t id = 0;
  evl_stats_t st;
  CHECK_EQ(evl_run(NULL), EINVAL);
  CHECK_EQ(evl_run(l), EPERM);
  CHECK_EQ(evl_stop(NULL), EINVAL);
  CHECK_EQ(evl_destroy(NULL), EINVAL);
  CHECK_EQ(evl_stopping(NULL), 0);
  CHECK_EQ(evl_stopping(l), 0);
  CHECK_EQ(evl_wakeup(NULL), EINVAL);
  CHECK_EQ(evl_wakeup(l), 0);
  CHECK_EQ(evl_step(NULL, 0), EINVAL);
  CHECK_EQ(evl_step(l, 0), EPERM);
  CHECK_EQ(evl_step(l, -2), EINVAL);
  CHECK(evl_uv_loop(NULL) == NULL);
  CHECK(evl_uv_loop(l) == NULL);
  CHECK(evl_gvl_thread(l) == NULL);
  CHECK(evl_gvl_thread(NULL) == NULL);
  CHECK(evl_gvl(NULL) == NULL);
  CHECK(evl_gvl(l) == g);
  CHECK_EQ(evl_in_loop_thread(NULL), 0);
  CHECK_EQ(evl_in_loop_thread(l), 0);
  CHECK_EQ(evl_fail(NULL, EIO, "x"), EINVAL);
  CHECK_EQ(evl_fail(l, 0, "x"), EINVAL);
  CHECK_EQ(evl_fail(l, EIO, "x"), EPERM);
  CHECK_EQ(evl_stats(NULL, &st), EINVAL);
  CHECK_EQ(evl_stats(l, NULL), EINVAL);
  CHECK(evl_strerror(ENOENT) != NULL);
  /* evloop's own codes: out of errno's range, with texts and names. */
  CHECK(EVL_ESTOPPED > 4095 && EVL_ENOREG > 4095 && EVL_ENOTPOLL > 4095);
  CHECK(strncmp(evl_strerror(EVL_ESTOPPED), "loop stopped", 12) == 0);
  CHECK(strncmp(evl_strerror(EVL_ENOREG), "no such registration", 20) == 0);
  CHECK(strcmp(evl_err_name(EVL_ESTOPPED), "EVL_ESTOPPED") == 0);
  CHECK(strcmp(evl_err_name(EVL_ENOREG), "EVL_ENOREG") == 0);
  CHECK(strcmp(evl_err_name(EVL_ENOTPOLL), "EVL_ENOTPOLL") == 0);
  CHECK(strcmp(evl_err_name(EBADF), "EBADF") == 0);
  CHECK(strcmp(evl_strerror(EBADF), strerror(EBADF)) == 0);
  CHECK(strstr(evl_strerror(EVL_ENOTPOLL + 1000), "Unknown") == NULL);
  CHECK_EQ(evl_version(), (unsigned)EVL_VERSION_HEX);
  CHECK(strcmp(evl_version_string(), EVL_VERSION_STRING) == 0);
  CHECK_EQ(evl_timer(NULL, 1, 0, 0, nop_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_timer(l, 1, 0, 0, NULL, NULL, &id), EINVAL);
  CHECK_EQ(evl_timer(l, 1, 0, 0x40, nop_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_fd_watch(NULL, 0, EVL_READABLE, 0, nop_io, NULL, &id), EINVAL);
  CHECK_EQ(evl_signal_watch(NULL, SIGUSR1, 0, nop_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, NULL, NULL, &id), EINVAL);
  CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0x40, nop_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_work(NULL, nop_work, 0, nop_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_work(l, NULL, 0, nop_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_work(l, nop_work, 0x40, nop_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_read_file(NULL, "/dev/null", 0, 0, nop_rd, NULL, &id), EINVAL);
  CHECK_EQ(evl_read_file(l, NULL, 0, 0, nop_rd, NULL, &id), EINVAL);
  CHECK_EQ(evl_read_file(l, "/dev/null", 0, 0, NULL, NULL, &id), EINVAL);
  CHECK_EQ(evl_read_file(l, "/dev/null", 0x40, 0, nop_rd, NULL, &id), EINVAL);
  CHECK_EQ(id, 0);
  CHECK_EQ(evl_stop(l), 0);
  CHECK_EQ(evl_stop(l), 0);  /* idempotent */
  CHECK_EQ(evl_stopping(l), 1);
  /* After stop: registrations are refused and their callbacks never run. */
  CHECK_EQ(evl_post(l, nop_cb, NULL, &id), EVL_ESTOPPED);
  CHECK_EQ(evl_timer(l, 1, 0, 0, nop_cb, NULL, &id), EVL_ESTOPPED);
  CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, nop_cb, NULL, &id), EVL_ESTOPPED);
  CHECK_EQ(evl_work(l, nop_work, 0, nop_cb, NULL, &id), EVL_ESTOPPED);
  CHECK_EQ(evl_read_file(l, "/dev/null", 0, 0, nop_rd, NULL, &id), EVL_ESTOPPED);
  CHECK_EQ(evl_wakeup(l), EVL_ESTOPPED);
  CHECK_EQ(id, 0);
  CHECK_EQ(evl_destroy(l), 0);
}

/* Calls from inside a callback: thread accessors, forbidden calls, stop. */
static atomic_int in_cb_done;
static void in_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK_EQ(evl_in_loop_thread(l), 1);
  CHECK(evl_uv_loop(l) != NULL);
  CHECK(evl_gvl_thread(l) != NULL);
  CHECK(t_holds(l));
  CHECK_EQ(evl_destroy(l), EBUSY);
  CHECK_EQ(evl_run(l), EPERM);
  CHECK_EQ(evl_stop(l), 0);  /* from a callback: does not wait */
  CHECK_EQ(evl_stop(l), 0);
  CHECK_EQ(evl_stopping(l), 1);
  CHECK_EQ(evl_post(l, nop_cb, NULL, NULL), EVL_ESTOPPED);
  atomic_store(&in_cb_done, 1);
}

static void test_stop_from_callback(gvl_t *g) {
  evl_t *l = t_loop(g);
  CHECK_EQ(evl_post(l, in_cb, NULL, NULL), 0);
  t_wait_ge(&in_cb_done, 1);
  CHECK_EQ(evl_stop(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

/* no_thread mode: the host runs the loop on a thread of its own. */
static atomic_int nt_calls, nt_cancelled;
static void nt_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK(evl_in_loop_thread(l));
  if (status == 0) atomic_fetch_add(&nt_calls, 1);
  if (status == ECANCELED) atomic_fetch_add(&nt_cancelled, 1);
}

static void *run_main(void *p) {
  CHECK_EQ(evl_run(p), 0);
  return NULL;
}

static void test_no_thread(gvl_t *g) {
  evl_config_t cfg = {0};
  evl_t *l;
  pthread_t th;
  gvl_thread_t *me;
  int i;
  cfg.no_thread = 1;
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  for (i = 0; i < 10; i++) CHECK_EQ(evl_post(l, nt_cb, NULL, NULL), 0);
  CHECK_EQ(pthread_create(&th, NULL, run_main, l), 0);
  t_wait_ge(&nt_calls, 10);
  CHECK_EQ(evl_run(l), EBUSY);
  CHECK_EQ(evl_stop(l), 0);  /* waits for evl_run to finish */
  pthread_join(th, NULL);
  CHECK_EQ(evl_run(l), EBUSY);
  CHECK_EQ(evl_destroy(l), 0);

  /* Never run: destroy shuts down on the calling thread, which holds the
   * GVL here; the cancelled callbacks still run under it. */
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  for (i = 0; i < 5; i++) CHECK_EQ(evl_post(l, nt_cb, NULL, NULL), 0);
  me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(me != NULL);
  CHECK_EQ(gvl_acquire(me), 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(gvl_release(me), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
  CHECK_EQ(atomic_load(&nt_cancelled), 5);
}

/* The host's own thread (e.g. the process main thread a GUI toolkit
 * needs) runs the loop while it is an interpreter thread holding the GVL:
 * evl_run gives the GVL up while the loop waits and hands it back. */
static atomic_int main_runs;
static void main_stop_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK(t_holds(l));
  CHECK(evl_in_loop_thread(l));
  atomic_fetch_add(&main_runs, 1);
  CHECK_EQ(evl_stop(l), 0);
}

static void test_run_on_interpreter_thread(gvl_t *g) {
  evl_config_t cfg = {0};
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  evl_t *l;
  cfg.no_thread = 1;
  l = evl_start(g, &cfg);
  CHECK(l != NULL && me != NULL);
  CHECK_EQ(gvl_acquire(me), 0);
  CHECK_EQ(evl_timer(l, 1, 0, 0, main_stop_cb, NULL, NULL), 0);
  CHECK_EQ(evl_run(l), 0);
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(atomic_load(&main_runs), 1);
  CHECK_EQ(evl_in_loop_thread(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(gvl_release(me), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
}

/* A driver that runs its own steps and owns a libuv handle, the way a
 * layer above does; evl_step from inside a libuv callback is refused. */
static atomic_int drv_steps, drv_busy;
static void drv_timer_cb(uv_timer_t *t) {
  evl_t *l = t->data;
  if (evl_step(l, 0) == EBUSY) atomic_store(&drv_busy, 1);
  uv_close((uv_handle_t *)t, NULL);
}

static void driver(evl_t *l, void *arg) {
  uv_timer_t tm;
  CHECK(arg == (void *)l || arg == NULL);
  uv_timer_init(evl_uv_loop(l), &tm);
  tm.data = l;
  uv_timer_start(&tm, drv_timer_cb, 1, 0);
  while (!evl_stopping(l)) {
    CHECK_EQ(evl_step(l, 5), 0);
    atomic_fetch_add(&drv_steps, 1);
  }
  if (!uv_is_closing((uv_handle_t *)&tm)) uv_close((uv_handle_t *)&tm, NULL);
  evl_step(l, 0);  /* let the close finish */
}

static void test_driver(gvl_t *g) {
  evl_config_t cfg = {0};
  evl_t *l;
  cfg.driver = driver;
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  t_wait_ge(&drv_busy, 1);
  t_wait_ge(&drv_steps, 3);  /* the 5 ms step timeout returns */
  CHECK_EQ(evl_destroy(l), 0);
}

/* A zeroed config (and NULL) dispatches at normal priority; a boost is asked
 * for with EVL_PRIO_BOOST.  Seen in the GVL's boost counter. */
static uint64_t boosts_for(const evl_config_t *cfg) {
  gvl_t *g = t_gvl();
  gvl_stats_t st;
  atomic_int n = 0;
  evl_t *l = evl_start(g, cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_post(l, t_count_ok, &n, NULL), 0);
  t_wait_ge(&n, 1);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_stats(g, &st), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  return st.boosts;
}

static void test_default_prio(void) {
  evl_config_t cfg = {0};
  CHECK_EQ(EVL_PRIO_NORMAL, 0);
  CHECK_EQ(boosts_for(NULL), 0);
  CHECK_EQ(boosts_for(&cfg), 0);
  cfg.prio = EVL_PRIO_BOOST;
  CHECK(boosts_for(&cfg) >= 1);
}

/* evl_config_get gives back the config as given, the budgets as used. */
static void test_config_get(gvl_t *g) {
  evl_config_t cfg = {0}, got;
  int x;
  evl_t *l = evl_start(g, NULL);
  CHECK(l != NULL);
  CHECK_EQ(evl_config_get(NULL, &got), EINVAL);
  CHECK_EQ(evl_config_get(l, NULL), EINVAL);
  memset(&got, 0xff, sizeof got);
  CHECK_EQ(evl_config_get(l, &got), 0);
  CHECK_EQ(got.prio, 0);
  CHECK_EQ(got.no_thread, 0);
  CHECK_EQ(got.budget_count, 64);
  CHECK_EQ(got.budget_ns, 2000000);
  CHECK(got.driver == NULL && got.on_stop == NULL && got.on_error == NULL);
  CHECK_EQ(evl_destroy(l), 0);
  cfg.prio = EVL_PRIO_BOOST;
  cfg.budget_count = 7;
  cfg.no_thread = 1;
  cfg.driver = driver;
  cfg.driver_arg = &x;
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_config_get(l, &got), 0);
  CHECK_EQ(got.prio, EVL_PRIO_BOOST);
  CHECK_EQ(got.budget_count, 7);
  CHECK_EQ(got.budget_ns, 2000000);
  CHECK_EQ(got.no_thread, 1);
  CHECK(got.driver == driver && got.driver_arg == &x);
  CHECK_EQ(evl_destroy(l), 0);
}

int main(void) {
  gvl_t *g = t_gvl();
  test_config_get(g);
  test_default_prio();
  test_bad_start(g);
  test_null_and_threads(g);
  test_stop_from_callback(g);
  test_no_thread(g);
  test_run_on_interpreter_thread(g);
  test_driver(g);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_lifecycle ok");
  return 0;
}
