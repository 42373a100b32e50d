/* SPDX-License-Identifier: MIT */
/*
 * evloop.h: the watch is on when evl_signal_watch returns, so also by the
 * time the callback of an evl_post made after it runs.  Each round watches SIGUSR1,
 * posts a callback that raises it (the default disposition would end the
 * process if the watch had not started), waits for the watch's call and
 * cancels it; half the rounds make the post from another thread.
 */
#include <pthread.h>
#include <signal.h>

#include "evl_test.h"

static atomic_int calls, last;
static evl_t *l;

static void on_sig(evl_t *lp, void *arg, int status) {
  (void)lp;
  (void)arg;
  if (status == 0) atomic_fetch_add(&calls, 1);
  else atomic_store(&last, status);
}

static void raise_it(evl_t *lp, void *arg, int status) {
  (void)lp;
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK_EQ(raise(SIGUSR1), 0);
}

static void *post_it(void *arg) {
  evl_id_t id;
  CHECK_EQ(evl_post(l, raise_it, NULL, &id), 0);
  return arg;
}

int main(void) {
  gvl_t *g = t_gvl();
  CHECK((l = evl_start(g, NULL)) != NULL);
  for (int r = 0; r < 50; r++) {
    evl_id_t id, pid;
    atomic_store(&calls, 0);
    atomic_store(&last, 0);
    CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, on_sig, NULL, &id), 0);
    if (r % 2) {
      pthread_t th;
      CHECK_EQ(pthread_create(&th, NULL, post_it, NULL), 0);
      CHECK_EQ(pthread_join(th, NULL), 0);
    } else {
      CHECK_EQ(evl_post(l, raise_it, NULL, &pid), 0);
    }
    t_wait_ge(&calls, 1);
    CHECK_EQ(evl_cancel(l, id), 0);
    while (atomic_load(&last) == 0) t_sleep_ms(1);
    CHECK_EQ(atomic_load(&last), ECANCELED);
  }
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("ok");
  return 0;
}
