/* SPDX-License-Identifier: MIT */
/* evl_run and evl_attach that fail to make the calling thread the loop
 * thread (its GVL attach fails) while another thread's evl_stop, which saw
 * the loop running, waits for it to finish: that evl_stop must return.
 * gvl_thread_attach and pthread_cond_wait are wrapped (static link): the
 * failing attach first waits until the stopper is inside its condition
 * wait, so the window is hit every time, not by chance. */
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

#include "evl_test.h"

gvl_thread_t *__real_gvl_thread_attach(gvl_t *g, int prio);
gvl_thread_t *__wrap_gvl_thread_attach(gvl_t *g, int prio);
int __real_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);

static atomic_int fail_next;
static _Thread_local int is_stopper;
static sem_t in_attach, stopper_waits;

static void sem_take(sem_t *s) {
  while (sem_wait(s) != 0) {
  }
}

gvl_thread_t *__wrap_gvl_thread_attach(gvl_t *g, int prio) {
  if (!atomic_exchange(&fail_next, 0)) return __real_gvl_thread_attach(g, prio);
  sem_post(&in_attach);
  sem_take(&stopper_waits);
  errno = ENOMEM;
  return NULL;
}

int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
  /* Posted holding m: the failing path's lock of it returns only once
   * the real wait below has let it go. */
  if (is_stopper) {
    is_stopper = 0;
    sem_post(&stopper_waits);
  }
  return __real_pthread_cond_wait(c, m);
}

static atomic_int stop_returned;

static void *stopper(void *p) {
  sem_take(&in_attach);
  is_stopper = 1;
  CHECK_EQ(evl_stop(p), 0);
  atomic_store(&stop_returned, 1);
  return NULL;
}

/* mode 0: evl_run fails; mode 1: evl_attach fails. */
static void one(gvl_t *g, int mode) {
  evl_config_t c = {0};
  c.no_thread = 1;
  evl_t *l = evl_start(g, &c);
  CHECK(l != NULL);
  pthread_t st;
  atomic_store(&stop_returned, 0);
  CHECK_EQ(pthread_create(&st, NULL, stopper, l), 0);
  atomic_store(&fail_next, 1);
  CHECK_EQ(mode == 0 ? evl_run(l) : evl_attach(l), ENOMEM);
  CHECK_EQ(pthread_join(st, NULL), 0);
  CHECK_EQ(atomic_load(&stop_returned), 1);
  /* The loop is idle, not half attached: it can still run and be
   * destroyed. */
  CHECK_EQ(evl_detach(l), EPERM);
  CHECK_EQ(evl_destroy(l), 0);
}

int main(void) {
  CHECK_EQ(sem_init(&in_attach, 0, 0), 0);
  CHECK_EQ(sem_init(&stopper_waits, 0, 0), 0);
  alarm(60);   /* a stopper left waiting hangs: fail instead */
  gvl_t *g = t_gvl();
  for (int round = 0; round < 3; round++) {
    one(g, 0);
    one(g, 1);
  }
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_runfail ok");
  return 0;
}
