/* SPDX-License-Identifier: MIT */
/*
 * A host that must not miss a signal blocks it in every thread before it
 * starts the loop (the loop thread inherits the mask), then watches it:
 * a signal sent before the watch has started stays pending, and the watch
 * gets it once it starts (the loop thread unblocks what it watches), and
 * so does one sent later.  Once the last watch ends, the loop thread
 * blocks it again: a signal sent then stays pending rather than meet the
 * default disposition put back (which would end the process).
 */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "evl_test.h"

static atomic_int calls, last;

static void cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == 0) atomic_fetch_add(&calls, 1);
  else atomic_store(&last, status);
}

int main(void) {
  sigset_t one, cur;
  sigemptyset(&one);
  sigaddset(&one, SIGUSR1);
  CHECK_EQ(pthread_sigmask(SIG_BLOCK, &one, NULL), 0);
  gvl_t *g = t_gvl();
  evl_t *l = evl_start(g, NULL);
  CHECK(l != NULL);
  evl_id_t id;
  CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, cb, NULL, &id), 0);
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);   /* most likely before it started */
  t_wait_ge(&calls, 1);
  int seen = atomic_load(&calls);
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);   /* after */
  t_wait_ge(&calls, seen + 1);
  CHECK_EQ(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
  CHECK(sigismember(&cur, SIGUSR1));      /* the host's own mask is its own */
  CHECK_EQ(evl_cancel(l, id), 0);
  while (atomic_load(&last) == 0) t_sleep_ms(1);
  CHECK_EQ(atomic_load(&last), ECANCELED);
  /* Blocked again in the loop thread, with the default disposition back:
   * this one stays pending in the process instead of ending it. */
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);
  t_sleep_ms(100);
  CHECK_EQ(sigpending(&cur), 0);
  CHECK(sigismember(&cur, SIGUSR1));
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("ok");
  return 0;
}
