/* SPDX-License-Identifier: MIT */
/* Callbacks that re-enter the API: chains of posts, timers armed from
 * callbacks, nested evl_step (a vwait-like wait) with and without the GVL,
 * gvl_call_without inside a callback, evl_fail and the error handler, and
 * callbacks that break the GVL rules. */
#include <unistd.h>

#include "evl_test.h"

static atomic_int chain_n;
static void chain_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  if (atomic_fetch_add(&chain_n, 1) + 1 < 1000)
    CHECK_EQ(evl_post(l, chain_cb, NULL, NULL), 0);
}

static atomic_int tchain_n;
static void tchain_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  if (atomic_fetch_add(&tchain_n, 1) + 1 < 20)
    CHECK_EQ(evl_timer(l, 0, 0, 0, tchain_cb, NULL, NULL), 0);
}

/* vwait: the outer callback waits in nested steps for a flag that a later
 * callback sets. */
static atomic_int flag, nested_ok, inner_runs;
static void inner_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK(t_holds(l));
  atomic_fetch_add(&inner_runs, 1);
  atomic_store(&flag, 1);
}

static void outer_cb(evl_t *l, void *arg, int status) {
  int held_before = t_holds(l), steps = 0;
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_store(&flag, 0);
  CHECK_EQ(evl_post(l, inner_cb, NULL, NULL), 0);
  CHECK_EQ(evl_timer(l, 2, 0, 0, inner_cb, NULL, NULL), 0);
  while (!atomic_load(&flag)) {
    CHECK_EQ(evl_step(l, -1), 0);
    steps++;
  }
  /* The nested step gave the GVL back in the state it found it. */
  CHECK_EQ(t_holds(l), held_before);
  atomic_fetch_add(&nested_ok, 1);
}

/* Blocking inside a callback through gvl_call_without. */
static void *blocking(void *p) {
  t_sleep_ms(2);
  return p;
}
static atomic_int without_ok;
static void without_cb(evl_t *l, void *arg, int status) {
  (void)status;
  CHECK(gvl_call_without(evl_gvl_thread(l), blocking, arg, NULL, NULL) == arg);
  CHECK(t_holds(l));
  atomic_fetch_add(&without_ok, 1);
}

static void test_reentry(gvl_t *g) {
  evl_t *l = t_loop(g);
  CHECK_EQ(evl_post(l, chain_cb, NULL, NULL), 0);
  CHECK_EQ(evl_timer(l, 0, 0, 0, tchain_cb, NULL, NULL), 0);
  t_wait_ge(&chain_n, 1000);
  t_wait_ge(&tchain_n, 20);
  CHECK_EQ(evl_post(l, outer_cb, NULL, NULL), 0);
  t_wait_ge(&nested_ok, 1);
  CHECK_EQ(evl_post_flags(l, outer_cb, NULL, EVL_F_NOGVL, NULL), 0);
  t_wait_ge(&nested_ok, 2);
  t_wait_ge(&inner_runs, 4);
  CHECK_EQ(evl_post(l, without_cb, (void *)1, NULL), 0);
  t_wait_ge(&without_ok, 1);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&chain_n), 1000);
  CHECK_EQ(atomic_load(&tchain_n), 20);
}

/* A watch's callback that waits in nested steps (until flag, which a
 * timer sets) before it reads all there is, as a dialog in a fileevent
 * handler would. */
typedef struct {
  int fd;
  int arm_ms;          /* > 0: the callback arms the timer as it nests  */
  int close_fd;        /* it closes fd after reading (against evloop.h) */
  atomic_int calls, steps, flag, final, status, marks;
} nest_t;

static void nest_cb(evl_t *l, void *arg, int status, unsigned events) {
  nest_t *n = arg;
  char buf[64];
  (void)events;
  if (status != 0) {
    atomic_store(&n->status, status);
    atomic_store(&n->final, 1);
    return;
  }
  atomic_fetch_add(&n->calls, 1);
  if (n->arm_ms > 0 && !atomic_load(&n->flag))
    CHECK_EQ(evl_timer(l, (uint64_t)n->arm_ms, 0, 0, t_count_ok, &n->flag, NULL), 0);
  while (!atomic_load(&n->flag)) {
    CHECK_EQ(evl_step(l, -1), 0);
    atomic_fetch_add(&n->steps, 1);
  }
  while (read(n->fd, buf, sizeof buf) > 0) {
  }
  if (n->close_fd) close(n->fd);
}

/* The unread data must not end every nested pass (each blocks until the
 * timer, as evl_step(-1) promises), and once the callback has read it all
 * no other call comes (the fd is not ready). */
static void test_nested_fd(gvl_t *g) {
  static nest_t nf = {.arm_ms = 20}, nc = {.arm_ms = 20, .close_fd = 1};
  evl_t *l = t_loop(g);
  int p[2];
  evl_id_t id;
  CHECK_EQ(pipe(p), 0);
  nf.fd = p[0];
  CHECK_EQ(write(p[1], "hello", 5), 5);
  CHECK_EQ(evl_fd_watch(l, p[0], EVL_READABLE, 0, nest_cb, &nf, &id), 0);
  t_wait_ge(&nf.flag, 1);
  /* Two passes after the callback's: a second call would come in them. */
  for (int i = 1; i <= 2; i++) {
    CHECK_EQ(evl_post(l, t_count_ok, &nf.marks, NULL), 0);
    t_wait_ge(&nf.marks, i);
  }
  CHECK_EQ(evl_cancel(l, id), 0);
  t_wait_ge(&nf.final, 1);
  CHECK_EQ(atomic_load(&nf.status), ECANCELED);
  CHECK_EQ(atomic_load(&nf.calls), 1);
  int steps = atomic_load(&nf.steps);   /* the timer's, and a wake-up or two */
  if (steps > 5) fprintf(stderr, "nested passes: %d\n", steps);
  CHECK(steps <= 5);
  close(p[0]);
  /* A callback that closes the fd after a nested wait, which evloop.h
   * rules out: the watch ends with EBADF instead of libuv's abort. */
  CHECK_EQ(pipe(p), 0);
  nc.fd = p[0];
  CHECK_EQ(write(p[1], "hello", 5), 5);
  CHECK_EQ(evl_fd_watch(l, p[0], EVL_READABLE, 0, nest_cb, &nc, &id), 0);
  t_wait_ge(&nc.final, 1);
  CHECK_EQ(atomic_load(&nc.status), EBADF);
  CHECK_EQ(evl_destroy(l), 0);
  close(p[1]);
}

/* The first pass nested in the callback waits too: with the timer armed
 * before the data came, and nothing else to wake the loop, one nested
 * evl_step(-1) sees the timer (a pass that polled the still-ready fd
 * ended at once, and it took two). */
static void test_nested_fd_first(gvl_t *g) {
  static nest_t ff;
  evl_t *l = t_loop(g);
  int p[2];
  evl_id_t id;
  CHECK_EQ(pipe(p), 0);
  ff.fd = p[0];
  CHECK_EQ(evl_fd_watch(l, p[0], EVL_READABLE, 0, nest_cb, &ff, &id), 0);
  CHECK_EQ(evl_timer(l, 500, 0, 0, t_count_ok, &ff.flag, NULL), 0);
  /* Both started, and every wake-up they made read: the post after them
   * ran (its drain, in the wake-up's callback, took the three at once). */
  CHECK_EQ(evl_post(l, t_count_ok, &ff.marks, NULL), 0);
  t_wait_ge(&ff.marks, 1);
  CHECK_EQ(write(p[1], "x", 1), 1);
  t_wait_ge(&ff.flag, 1);
  CHECK_EQ(evl_cancel(l, id), 0);
  t_wait_ge(&ff.final, 1);
  CHECK(atomic_load(&ff.steps) <= 1);   /* 0: the timer came first */
  CHECK_EQ(evl_destroy(l), 0);
  close(p[0]);
  close(p[1]);
}

/* Failures go to on_error after the callback returns; the loop goes on. */
static atomic_int errs, last_err, after_fail;
static char last_what[64];
static void on_error(evl_t *l, int err, const char *what, void *arg) {
  CHECK(arg == (void *)&errs);
  CHECK(evl_in_loop_thread(l));
  atomic_store(&last_err, err);
  snprintf(last_what, sizeof last_what, "%s", what != NULL ? what : "");
  atomic_fetch_add(&errs, 1);
}

static void failing_cb(evl_t *l, void *arg, int status) {
  char local[32];
  (void)arg;
  CHECK_EQ(status, 0);
  snprintf(local, sizeof local, "bad thing %d", 7);
  CHECK_EQ(evl_fail(l, 0, local), EINVAL);
  CHECK_EQ(evl_fail(l, EIO, local), 0);  /* copied: local dies on return */
  CHECK_EQ(atomic_load(&errs), 0);       /* reported after the return */
}

static void after_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_fetch_add(&after_fail, 1);
}

/* Callbacks that break the rules: give up the GVL and not take it back;
 * take it without the GVL and keep it.  Both are reported as EPERM. */
static void drop_gvl_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  (void)status;
  CHECK_EQ(gvl_release(evl_gvl_thread(l)), 0);
}
static void keep_gvl_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  (void)status;
  CHECK_EQ(gvl_acquire(evl_gvl_thread(l)), 0);
}

static void test_errors(gvl_t *g) {
  evl_config_t cfg = {0};
  evl_t *l;
  evl_stats_t st;
  cfg.on_error = on_error;
  cfg.on_error_arg = &errs;
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_post(l, failing_cb, NULL, NULL), 0);
  CHECK_EQ(evl_post(l, after_cb, NULL, NULL), 0);
  t_wait_ge(&after_fail, 1);
  CHECK_EQ(atomic_load(&errs), 1);
  CHECK_EQ(atomic_load(&last_err), EIO);
  CHECK(strcmp(last_what, "bad thing 7") == 0);
  CHECK_EQ(evl_post(l, drop_gvl_cb, NULL, NULL), 0);
  CHECK_EQ(evl_post(l, after_cb, NULL, NULL), 0);
  CHECK_EQ(evl_post_flags(l, keep_gvl_cb, NULL, EVL_F_NOGVL, NULL), 0);
  CHECK_EQ(evl_post(l, after_cb, NULL, NULL), 0);
  t_wait_ge(&after_fail, 3);
  CHECK_EQ(atomic_load(&errs), 3);
  CHECK_EQ(atomic_load(&last_err), EPERM);
  CHECK_EQ(evl_stats(l, &st), 0);
  CHECK_EQ(st.failures, 3);
  CHECK_EQ(evl_destroy(l), 0);
}

int main(void) {
  gvl_t *g = t_gvl();
  test_reentry(g);
  test_nested_fd(g);
  test_nested_fd_first(g);
  test_errors(g);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_reenter ok");
  return 0;
}
