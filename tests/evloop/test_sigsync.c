/* SPDX-License-Identifier: MIT */
/*
 * evloop.h: evl_signal_watch returns with the watch on.  The loop thread
 * is kept from starting it (it waits for the GVL, held here, to run a post
 * it took in first):
 *  - a signal raised as soon as the call returns, at the default
 *    disposition (which would end the process), gives one call with
 *    status 0 once the loop gets to it; 40 rounds, half the watches made
 *    and the signal sent from another thread;
 *  - a watch cancelled before the loop started it has only its ECANCELED
 *    call, also for a signal that came after the cancel, and the
 *    disposition it replaced (SIG_IGN) is back after that call;
 *  - a watch refused (EVL_ESTOPPED) leaves the disposition alone.
 */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "evl_test.h"

static atomic_int calls, last;
static gvl_t *g;

static void on_sig(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == 0) atomic_fetch_add(&calls, 1);
  else atomic_store(&last, status);
}

static void (*handler_of(int sig))(int) {
  struct sigaction sa;
  CHECK_EQ(sigaction(sig, NULL, &sa), 0);
  return sa.sa_handler;
}

typedef struct {
  evl_t *l;
  evl_id_t id;
} watch_t;

static void *watch_and_send(void *arg) {
  watch_t *w = arg;
  CHECK_EQ(evl_signal_watch(w->l, SIGUSR1, 0, on_sig, NULL, &w->id), 0);
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);
  return NULL;
}

static void early_signal(gvl_thread_t *me, int round) {
  CHECK(signal(SIGUSR1, SIG_DFL) != SIG_ERR);
  atomic_store(&calls, 0);
  atomic_store(&last, 0);
  evl_t *l = t_held_loop(g, me, NULL);
  watch_t w = {l, 0};
  if (round % 2) {
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, watch_and_send, &w), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
  } else {
    CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, on_sig, NULL, &w.id), 0);
    CHECK_EQ(raise(SIGUSR1), 0);
  }
  CHECK_EQ(atomic_load(&calls), 0);   /* the loop has not got to it */
  CHECK_EQ(gvl_release(me), 0);
  t_wait_ge(&calls, 1);
  CHECK_EQ(evl_cancel(l, w.id), 0);
  while (atomic_load(&last) == 0) t_sleep_ms(1);
  CHECK_EQ(atomic_load(&last), ECANCELED);
  CHECK_EQ(atomic_load(&calls), 1);
  CHECK(handler_of(SIGUSR1) == SIG_DFL);
  CHECK_EQ(evl_destroy(l), 0);
}

static void cancelled_first(gvl_thread_t *me) {
  CHECK(signal(SIGUSR2, SIG_IGN) != SIG_ERR);
  atomic_store(&calls, 0);
  atomic_store(&last, 0);
  evl_t *l = t_held_loop(g, me, NULL);
  evl_id_t id;
  CHECK_EQ(evl_signal_watch(l, SIGUSR2, 0, on_sig, NULL, &id), 0);
  CHECK(handler_of(SIGUSR2) != SIG_IGN);
  CHECK_EQ(evl_cancel(l, id), 0);
  CHECK_EQ(raise(SIGUSR2), 0);
  CHECK_EQ(gvl_release(me), 0);
  while (atomic_load(&last) == 0) t_sleep_ms(1);
  CHECK_EQ(atomic_load(&last), ECANCELED);
  CHECK_EQ(atomic_load(&calls), 0);
  CHECK(handler_of(SIGUSR2) == SIG_IGN);
  CHECK_EQ(evl_destroy(l), 0);
}

static void refused(void) {
  CHECK(signal(SIGUSR2, SIG_IGN) != SIG_ERR);
  evl_t *l = evl_start(g, NULL);
  CHECK(l != NULL);
  CHECK_EQ(evl_stop(l), 0);
  evl_id_t id = 0;
  CHECK_EQ(evl_signal_watch(l, SIGUSR2, 0, on_sig, NULL, &id), EVL_ESTOPPED);
  CHECK(handler_of(SIGUSR2) == SIG_IGN);
  CHECK_EQ(evl_destroy(l), 0);
}

int main(void) {
  g = t_gvl();
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(me != NULL);
  for (int r = 0; r < 40; r++) early_signal(me, r);
  cancelled_first(me);
  refused();
  CHECK_EQ(gvl_thread_detach(me), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_sigsync ok");
  return 0;
}
