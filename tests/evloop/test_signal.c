/* SPDX-License-Identifier: MIT */
/* Signal watches: real SIGUSR1 deliveries to two watches, cancellation,
 * stop with a watch open, bad signal numbers. */
#include <signal.h>
#include <unistd.h>

#include "evl_test.h"

static atomic_int got[2], final[2], bad;
static void sig_cb(evl_t *l, void *arg, int status) {
  intptr_t i = (intptr_t)arg;
  if (status == ECANCELED) {
    atomic_fetch_add(&final[i], 1);
    return;
  }
  if (status != 0 || !t_holds(l)) atomic_store(&bad, 1);
  atomic_fetch_add(&got[i], 1);
}

static atomic_int started;
static void mark_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  (void)status;
  atomic_store(&started, 1);
}

/* A signal the C library keeps (glibc: 32 and 33, below SIGRTMIN) is in
 * range, so the call accepts it; sigaction's refusal is the watch's one
 * and last call. */
static atomic_int reserved_status = -1;
static void reserved_cb(evl_t *l, void *arg, int status) {
  (void)l, (void)arg;
  atomic_store(&reserved_status, status);
}

static void reserved_signal(evl_t *l) {
#ifdef __GLIBC__
  if (SIGRTMIN <= 32) return;
  evl_id_t id;
  CHECK_EQ(evl_signal_watch(l, 32, 0, reserved_cb, NULL, &id), 0);
  for (int i = 0; i < 60000 && atomic_load(&reserved_status) < 0; i++)
    t_sleep_ms(1);
  CHECK_EQ(atomic_load(&reserved_status), EINVAL);
#else
  (void)l;
#endif
}

int main(void) {
  gvl_t *g = t_gvl();
  evl_t *l = t_loop(g);
  evl_id_t a, b, id = 0;
  reserved_signal(l);
  CHECK_EQ(evl_signal_watch(l, 0, 0, sig_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_signal_watch(l, -1, 0, sig_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_signal_watch(l, NSIG, 0, sig_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_signal_watch(l, SIGKILL, 0, sig_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_signal_watch(l, SIGSTOP, 0, sig_cb, NULL, &id), EINVAL);
  CHECK_EQ(id, 0);
  CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, sig_cb, (void *)0, &a), 0);
  CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, sig_cb, (void *)1, &b), 0);
  /* The watches are started by the loop thread in order: once a post made
   * after them has run, libuv's handler is installed. */
  CHECK_EQ(evl_post(l, mark_cb, NULL, NULL), 0);
  t_wait_ge(&started, 1);
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);
  t_wait_ge(&got[0], 1);
  t_wait_ge(&got[1], 1);
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);
  t_wait_ge(&got[0], 2);
  t_wait_ge(&got[1], 2);
  CHECK_EQ(evl_cancel(l, a), 0);
  t_wait_ge(&final[0], 1);
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);
  t_wait_ge(&got[1], 3);
  CHECK_EQ(evl_destroy(l), 0);  /* b is still open: ECANCELED at stop */
  CHECK_EQ(atomic_load(&got[0]), 2);
  CHECK_EQ(atomic_load(&got[1]), 3);
  CHECK_EQ(atomic_load(&final[0]), 1);
  CHECK_EQ(atomic_load(&final[1]), 1);
  CHECK_EQ(atomic_load(&bad), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_signal ok");
  return 0;
}
