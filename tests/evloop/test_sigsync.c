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
 *  - a watch refused (EVL_ESTOPPED) leaves the disposition alone;
 *  - watches made and cancelled before their loop thread got to them give
 *    their slots back at once: 1100 of them (more than the 1024 slots)
 *    leave a watch on another loop working, and the host's handler back;
 *  - refused watches, made while the loop stops with evloop's handler on
 *    for other watches and the signal raised all the while, never have
 *    the handler touch the stopping loop (its wake-up closes: TSan saw
 *    the handler write to it).
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

static void host_handler(int sig) { (void)sig; }

static void cancelled_many(gvl_t *gp, gvl_thread_t *me) {
  CHECK(signal(SIGUSR2, host_handler) != SIG_ERR);
  atomic_store(&calls, 0);
  atomic_store(&last, 0);
  evl_t *held = t_held_loop(gp, me, NULL);
  for (int i = 0; i < 1100; i++) {
    evl_id_t id;
    CHECK_EQ(evl_signal_watch(held, SIGUSR2, 0, on_sig, NULL, &id), 0);
    CHECK_EQ(evl_cancel(held, id), 0);
  }
  CHECK(handler_of(SIGUSR2) == host_handler);
  evl_t *other = evl_start(gp, NULL);
  CHECK(other != NULL);
  evl_id_t id;
  CHECK_EQ(evl_signal_watch(other, SIGUSR2, EVL_F_NOGVL, on_sig, NULL, &id), 0);
  CHECK_EQ(raise(SIGUSR2), 0);
  t_wait_ge(&calls, 1);                 /* status 0, not ENOSPC */
  CHECK_EQ(evl_cancel(other, id), 0);
  while (atomic_load(&last) == 0) t_sleep_ms(1);
  CHECK_EQ(atomic_load(&last), ECANCELED);
  CHECK_EQ(gvl_release(me), 0);
  CHECK_EQ(evl_destroy(held), 0);       /* the 1100 last calls */
  CHECK_EQ(evl_destroy(other), 0);
  CHECK(handler_of(SIGUSR2) == host_handler);
}

static atomic_int raising;
static void *raiser(void *arg) {
  (void)arg;
  while (atomic_load(&raising)) raise(SIGUSR1);
  return NULL;
}
static void *stopper(void *arg) {
  CHECK_EQ(evl_stop((evl_t *)arg), 0);
  return NULL;
}

static void refused_while_stopping(void) {
  CHECK(signal(SIGUSR1, host_handler) != SIG_ERR);
  evl_t *keep = evl_start(g, NULL);    /* keeps evloop's handler on */
  CHECK(keep != NULL);
  evl_id_t kid;
  CHECK_EQ(evl_signal_watch(keep, SIGUSR1, EVL_F_NOGVL, on_sig, NULL, &kid), 0);
  atomic_store(&raising, 1);
  pthread_t r;
  CHECK_EQ(pthread_create(&r, NULL, raiser, NULL), 0);
  for (int round = 0; round < 20; round++) {
    evl_t *l = evl_start(g, NULL);
    CHECK(l != NULL);
    pthread_t s;
    CHECK_EQ(pthread_create(&s, NULL, stopper, l), 0);
    for (int i = 0; i < 200; i++) {
      evl_id_t id;
      int rc = evl_signal_watch(l, SIGUSR1, EVL_F_NOGVL, on_sig, NULL, &id);
      CHECK(rc == 0 || rc == EVL_ESTOPPED);
    }
    CHECK_EQ(pthread_join(s, NULL), 0);
    CHECK_EQ(evl_destroy(l), 0);
  }
  atomic_store(&raising, 0);
  CHECK_EQ(pthread_join(r, NULL), 0);
  CHECK_EQ(evl_destroy(keep), 0);
  CHECK(handler_of(SIGUSR1) == host_handler);
}

int main(void) {
  g = t_gvl();
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(me != NULL);
  for (int r = 0; r < 40; r++) early_signal(me, r);
  cancelled_first(me);
  refused();
  cancelled_many(g, me);
  refused_while_stopping();
  CHECK_EQ(gvl_thread_detach(me), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_sigsync ok");
  return 0;
}
