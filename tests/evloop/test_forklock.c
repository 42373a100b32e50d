/* SPDX-License-Identifier: MIT */
/* fork() while another thread is inside a registration: the child must see
 * the loop's lists whole.  A registering thread is held just after it has
 * taken the loop's lock (pthread_mutex_lock is wrapped: static link),
 * before it links its timer, while the loop thread forks in a callback.
 * The fork must wait for the registration to finish (evloop takes the
 * forking thread's loops' locks before the fork), so the parent's fork
 * returns only after the hold has ended, and the child, which goes on
 * driving the loop, fires the timer.  A fork that did not wait would
 * copy the loop with the timer unlinked: the child would give up after
 * 10 s.  A hold that ends before the fork (a loaded machine) proves
 * nothing either way but cannot fail the test. */
#include <pthread.h>
#include <semaphore.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evl_test.h"

int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_lock(pthread_mutex_t *m);

static _Thread_local int armed;
static sem_t go, paused, done;
static atomic_int left;        /* the registering thread's hold has ended */
static int in_child;

int __wrap_pthread_mutex_lock(pthread_mutex_t *m) {
  int r = __real_pthread_mutex_lock(m);
  if (armed) {
    armed = 0;
    sem_post(&paused);
    t_sleep_ms(200);
    atomic_store(&left, 1);
  }
  return r;
}

static void timer_cb(evl_t *l, void *arg, int status) {
  (void)l, (void)arg;
  if (in_child) _exit(status == 0 ? 42 : 20);
}

static void give_up(evl_t *l, void *arg, int status) {
  (void)l, (void)arg;
  if (status == 0) _exit(30);
}

/* The registering thread: its first lock inside evl_timer is the loop's
 * (evl__submit), taken before anything is linked. */
static void *registrar(void *p) {
  while (sem_wait(&go) != 0) {
  }
  armed = 1;
  CHECK_EQ(evl_timer(p, 1, 0, 0, timer_cb, NULL, NULL), 0);
  return NULL;
}

static int status = -1, left_at_fork = -1;

static void fork_cb(evl_t *l, void *arg, int st) {
  (void)arg;
  if (st != 0) return;
  sem_post(&go);
  while (sem_wait(&paused) != 0) {
  }
  pid_t pid = fork();
  if (pid == 0) {   /* back into the loop, which must fire the timer */
    in_child = 1;
    if (evl_timer(l, 10000, 0, 0, give_up, NULL, NULL) != 0) _exit(10);
    return;
  }
  left_at_fork = atomic_load(&left);
  if (pid > 0 && waitpid(pid, &status, 0) != pid) status = -2;
  sem_post(&done);
}

int main(void) {
  gvl_t *g = t_gvl();
  CHECK_EQ(sem_init(&go, 0, 0), 0);
  CHECK_EQ(sem_init(&paused, 0, 0), 0);
  CHECK_EQ(sem_init(&done, 0, 0), 0);
  evl_t *l = t_loop(g);
  pthread_t rt;
  CHECK_EQ(pthread_create(&rt, NULL, registrar, l), 0);
  CHECK_EQ(evl_post(l, fork_cb, NULL, NULL), 0);
  CHECK_EQ(pthread_join(rt, NULL), 0);
  /* Not destroyed before the fork: a stop requested first would be the
   * child's too. */
  while (sem_wait(&done) != 0) {
  }
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(left_at_fork, 1);     /* 0: the fork did not wait for the lock */
  CHECK(WIFEXITED(status));
  CHECK_EQ(WEXITSTATUS(status), 42);   /* 30: the child lost the timer */
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_forklock ok");
  return 0;
}
