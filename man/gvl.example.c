/* SPDX-License-Identifier: MIT */
/* Two interpreter threads share the GVL; a blocking call releases it; an
 * urgent event from a foreign thread cuts in.
 * cc ex.c $(pkg-config --cflags --libs gvl) */
#define _POSIX_C_SOURCE 200809L  /* nanosleep under -std=c11 */
#include <errno.h>
#include <gvl.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, us % 1000000 * 1000};
  nanosleep(&ts, NULL);
}

static gvl_t *gvl;
static gvl_mutex_t mu;          /* a host-level Mutex */
static long shared;

static void *blocking_read(void *arg) {        /* runs without the GVL */
  sleep_us(1000);
  return arg;
}

static void *interpreter(void *arg) {
  gvl_thread_t *self = gvl_thread_attach(gvl, GVL_PRIO_NORMAL);
  if (self == NULL) return NULL;
  gvl_acquire(self);
  for (long i = 0; i < 5000000; i++) {
    if (gvl_check_ints(self) == EINTR) break;   /* safe point */
    if (i % 1000000 == 0) {
      gvl_call_without(self, blocking_read, NULL, NULL, NULL);
      gvl_mutex_lock(self, &mu);
      shared++;
      gvl_mutex_unlock(self, &mu);
      gvl_yield(self);                          /* Thread.pass */
    }
  }
  gvl_release(self);
  gvl_thread_detach(self);
  return arg;
}

static void *on_event(void *arg) {              /* runs holding the GVL */
  puts("event handled");
  return arg;
}

int main(void) {
  pthread_t th[2];
  gvl_stats_t st;
  int rc;
  if ((gvl = gvl_create(NULL)) == NULL || gvl_mutex_init(&mu) != 0) return 1;
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, interpreter, NULL);
  /* A thread that is not attached enters host code with a boost. */
  gvl_call_with(gvl, GVL_PRIO_BOOST, on_event, NULL);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  gvl_stats(gvl, &st);
  printf("%llu acquisitions, %llu handoffs, shared = %ld\n",
         (unsigned long long)st.acquires, (unsigned long long)st.handoffs, shared);
  gvl_mutex_destroy(&mu);
  if ((rc = gvl_destroy(gvl)) != 0)
    fprintf(stderr, "gvl_destroy: %s (%s)\n", gvl_strerror(rc), gvl_err_name(rc));
  printf("libgvl %s\n", gvl_version_string());
  return rc != 0;
}
