/* SPDX-License-Identifier: MIT */
/* evl_destroy beside an evl_stop that has already requested the stop: the
 * destroy must not free the loop while that evl_stop still uses it.  The
 * stopper is held inside evl_stop, at its first mutex unlock after the
 * request (pthread_mutex_unlock is wrapped: static link), while the main
 * thread, having seen evl_stopping(l), destroys.  The hold ends from a
 * third thread, so a destroy that waits for the stopper does not deadlock;
 * one that does not wait returns first, and under ASan the stopper's next
 * touch of the freed loop is reported as well. */
#include <pthread.h>
#include <semaphore.h>

#include "evl_test.h"

int __real_pthread_mutex_unlock(pthread_mutex_t *m);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *m);

static _Thread_local int armed;
static sem_t paused, resume;
static atomic_int resumed;

int __wrap_pthread_mutex_unlock(pthread_mutex_t *m) {
  int r = __real_pthread_mutex_unlock(m);
  if (armed) {
    armed = 0;
    sem_post(&paused);
    while (sem_wait(&resume) != 0) {
    }
    atomic_store(&resumed, 1);
  }
  return r;
}

static void *stopper(void *p) {
  armed = 1;
  CHECK_EQ(evl_stop(p), 0);
  return NULL;
}

static void *resumer(void *p) {
  (void)p;
  t_sleep_ms(100);
  sem_post(&resume);
  return NULL;
}

int main(void) {
  gvl_t *g = t_gvl();
  CHECK_EQ(sem_init(&paused, 0, 0), 0);
  CHECK_EQ(sem_init(&resume, 0, 0), 0);
  for (int round = 0; round < 5; round++) {
    evl_t *l = t_loop(g);
    pthread_t st, rs;
    atomic_store(&resumed, 0);
    CHECK_EQ(pthread_create(&st, NULL, stopper, l), 0);
    while (sem_wait(&paused) != 0) {
    }
    CHECK_EQ(evl_stopping(l), 1);
    CHECK_EQ(pthread_create(&rs, NULL, resumer, NULL), 0);
    CHECK_EQ(evl_destroy(l), 0);
    /* Freed only once the held evl_stop had gone on (and then finished
     * with l: its return may come after). */
    CHECK_EQ(atomic_load(&resumed), 1);
    CHECK_EQ(pthread_join(rs, NULL), 0);
    CHECK_EQ(pthread_join(st, NULL), 0);
  }
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_stopwin ok");
  return 0;
}
