/* SPDX-License-Identifier: MIT */
/*
 * A flood of one-shot timer registrations (timeout 0, as fast as a thread
 * can make them) does not keep the loop thread from dispatching: a post
 * made during the flood has its call while the flood goes on.  A timer
 * callback that drained new registrations each time kept the loop in
 * libuv's timer phase for as long as they came faster than one callback.
 * The flood stops at the post's call or after 10 s; the test fails if the
 * post had to wait for that.
 */
#include <pthread.h>

#include "evl_test.h"

static atomic_int probe_done, stop;
static evl_t *l;

static void nop(evl_t *lp, void *arg, int status) {
  (void)lp;
  (void)arg;
  (void)status;
}

static void probe(evl_t *lp, void *arg, int status) {
  (void)lp;
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_store(&probe_done, 1);
}

static void *flood(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    evl_id_t id;
    int r = evl_timer(l, 0, 0, EVL_F_NOGVL, nop, NULL, &id);
    CHECK(r == 0 || r == ENOMEM);
  }
  return NULL;
}

int main(void) {
  gvl_t *g = t_gvl();
  CHECK((l = evl_start(g, NULL)) != NULL);
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, flood, NULL), 0);
  t_sleep_ms(200);
  evl_id_t id;
  CHECK_EQ(evl_post(l, probe, NULL, &id), 0);
  int ms = 0;
  while (!atomic_load(&probe_done) && ms < 10000) {
    t_sleep_ms(1);
    ms++;
  }
  int during = atomic_load(&probe_done);
  atomic_store(&stop, 1);
  CHECK_EQ(pthread_join(th, NULL), 0);
  if (!during) fprintf(stderr, "the post waited for the flood to end\n");
  CHECK(during);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("ok");
  return 0;
}
