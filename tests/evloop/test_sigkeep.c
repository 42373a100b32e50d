/* SPDX-License-Identifier: MIT */
/* Signal watches keep what evloop.h promises under pressure:
 *   - the last watch of a signal to end puts back the disposition the
 *     first one replaced (SIG_IGN, a handler of the host's);
 *   - nothing is lost while the loop thread waits for the GVL: 6000
 *     SIGUSR1 then one SIGUSR2 sent meanwhile, with 1 and with 64 watches
 *     of SIGUSR1, reach every watch (at least one call each, merged);
 *   - a fork()ed child starts with the saved dispositions, and its
 *     signals do not reach the parent's watches;
 *   - 1024 watches open at once hear a signal; one more ends with ENOSPC,
 *     and once it and the others end, the disposition is back. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evl_test.h"

#define NW 64

static atomic_int got1[NW], got2, final_calls, started;

static void usr1_cb(evl_t *l, void *arg, int status) {
  (void)l;
  if (status == 0) atomic_fetch_add(&got1[(intptr_t)arg], 1);
  else atomic_fetch_add(&final_calls, 1);
}

static void usr2_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == 0) atomic_fetch_add(&got2, 1);
  else atomic_fetch_add(&final_calls, 1);
}

static void mark_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  (void)status;
  atomic_fetch_add(&started, 1);
}

/* Registrations start in order on the loop thread: once a post made after
 * them has run, they are on. */
static void wait_started(evl_t *l) {
  int want = atomic_load(&started) + 1;
  CHECK_EQ(evl_post(l, mark_cb, NULL, NULL), 0);
  t_wait_ge(&started, want);
}

static void *disposition(int sig) {
  struct sigaction sa;
  CHECK_EQ(sigaction(sig, NULL, &sa), 0);
  return (void *)sa.sa_handler;
}

static atomic_int host_handled;
static void host_handler(int sig) {
  (void)sig;
  atomic_fetch_add(&host_handled, 1);
}

static void restore_case(evl_t *l) {
  evl_id_t a, b;
  int finals = atomic_load(&final_calls);
  CHECK_EQ(signal(SIGUSR1, SIG_IGN) != SIG_ERR, 1);
  CHECK_EQ(signal(SIGUSR2, host_handler) != SIG_ERR, 1);
  CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, usr1_cb, (void *)0, &a), 0);
  CHECK_EQ(evl_signal_watch(l, SIGUSR2, 0, usr2_cb, NULL, &b), 0);
  wait_started(l);
  CHECK(disposition(SIGUSR1) != (void *)SIG_IGN);
  CHECK(disposition(SIGUSR2) != (void *)host_handler);
  CHECK_EQ(kill(getpid(), SIGUSR2), 0);
  t_wait_ge(&got2, 1);
  CHECK_EQ(atomic_load(&host_handled), 0);
  CHECK_EQ(evl_cancel(l, a), 0);
  CHECK_EQ(evl_cancel(l, b), 0);
  t_wait_ge(&final_calls, finals + 2);
  CHECK(disposition(SIGUSR1) == (void *)SIG_IGN);
  CHECK(disposition(SIGUSR2) == (void *)host_handler);
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);     /* ignored, as before */
  CHECK_EQ(kill(getpid(), SIGUSR2), 0);
  t_wait_ge(&host_handled, 1);
  CHECK_EQ(atomic_load(&got2), 1);
}

/* The loop thread is held at the GVL (the first SIGUSR1's call needs it)
 * while the flood comes. */
static void flood_case(gvl_t *g, evl_t *l, int nw) {
  evl_id_t ids[NW], b;
  int finals = atomic_load(&final_calls), i;
  atomic_store(&got2, 0);
  for (i = 0; i < nw; i++) {
    atomic_store(&got1[i], 0);
    CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, usr1_cb, (void *)(intptr_t)i,
                              &ids[i]), 0);
  }
  CHECK_EQ(evl_signal_watch(l, SIGUSR2, 0, usr2_cb, NULL, &b), 0);
  wait_started(l);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_EQ(gvl_acquire(me), 0);
  for (i = 0; i < 6000; i++) CHECK_EQ(kill(getpid(), SIGUSR1), 0);
  CHECK_EQ(kill(getpid(), SIGUSR2), 0);
  CHECK_EQ(gvl_release(me), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
  t_wait_ge(&got2, 1);
  for (i = 0; i < nw; i++) t_wait_ge(&got1[i], 1);
  for (i = 0; i < nw; i++) CHECK_EQ(evl_cancel(l, ids[i]), 0);
  CHECK_EQ(evl_cancel(l, b), 0);
  t_wait_ge(&final_calls, finals + nw + 1);
}

static void fork_case(evl_t *l) {
  evl_id_t a;
  int finals = atomic_load(&final_calls), st;
  atomic_store(&got1[0], 0);
  CHECK_EQ(signal(SIGUSR1, SIG_IGN) != SIG_ERR, 1);
  CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, usr1_cb, (void *)0, &a), 0);
  wait_started(l);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    /* The disposition from before the parent's first watch. */
    if (disposition(SIGUSR1) != (void *)SIG_IGN) _exit(2);
    if (kill(getpid(), SIGUSR1) != 0) _exit(3);
    _exit(0);
  }
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);
  /* The parent's watch still hears its own. */
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);
  t_wait_ge(&got1[0], 1);
  t_sleep_ms(50);            /* a stray delivery from the child would land */
  CHECK_EQ(atomic_load(&got1[0]), 1);
  CHECK_EQ(evl_cancel(l, a), 0);
  t_wait_ge(&final_calls, finals + 1);
  CHECK(disposition(SIGUSR1) == (void *)SIG_IGN);
}

#define LIMIT 1024
static atomic_int many_ok, many_final, many_nospc;
static void many_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == 0) atomic_fetch_add(&many_ok, 1);
  else if (status == ENOSPC) atomic_fetch_add(&many_nospc, 1);
  else if (status == ECANCELED) atomic_fetch_add(&many_final, 1);
}

static void limit_case(evl_t *l) {
  static evl_id_t ids[LIMIT + 1];
  int i;
  CHECK_EQ(signal(SIGUSR1, SIG_IGN) != SIG_ERR, 1);
  for (i = 0; i <= LIMIT; i++)
    CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, many_cb, NULL, &ids[i]), 0);
  wait_started(l);
  t_wait_ge(&many_nospc, 1);               /* the one past the limit */
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);
  t_wait_ge(&many_ok, LIMIT);
  for (i = 0; i <= LIMIT; i++) (void)evl_cancel(l, ids[i]);
  t_wait_ge(&many_final, LIMIT);
  CHECK_EQ(atomic_load(&many_nospc), 1);
  CHECK_EQ(atomic_load(&many_ok), LIMIT);
  CHECK(disposition(SIGUSR1) == (void *)SIG_IGN);
}

int main(void) {
  gvl_t *g = t_gvl();
  evl_t *l = t_loop(g);
  restore_case(l);
  flood_case(g, l, 1);
  flood_case(g, l, NW);
  fork_case(l);
  limit_case(l);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_sigkeep ok");
  return 0;
}
