/* SPDX-License-Identifier: MIT */
/*
 * New timer registrations that keep coming do not keep the loop thread
 * from dispatching.  Each time the loop thread arms a timer (uv_timer_start
 * wrapped: static link) one more zero timer is registered, already due by
 * the next drain: a chain that never ends by itself, like a flood that
 * outpaces the loop.  A timer
 * callback that drained new registrations each time kept the loop in
 * libuv's timer phase for ever: every drain armed a timer already due,
 * whose callback drained the next.  Once per uv_run, each pass ends and
 * dispatches: a post made as the chain starts has its call while the
 * chain goes on.
 */
#include <pthread.h>
#include <uv.h>

#include "evl_test.h"

int __real_uv_timer_start(uv_timer_t *h, uv_timer_cb cb, uint64_t timeout,
                          uint64_t repeat);
int __wrap_uv_timer_start(uv_timer_t *h, uv_timer_cb cb, uint64_t timeout,
                          uint64_t repeat);

static atomic_int chain, probe_done;
static atomic_long links;
static evl_t *l;

static void nop(evl_t *lp, void *arg, int status) {
  (void)lp;
  (void)arg;
  (void)status;
}

int __wrap_uv_timer_start(uv_timer_t *h, uv_timer_cb cb, uint64_t timeout,
                          uint64_t repeat) {
  if (atomic_load(&chain)) {
    evl_id_t id;
    if (evl_timer(l, 0, 0, EVL_F_NOGVL, nop, NULL, &id) == 0)
      atomic_fetch_add(&links, 1);
    /* Due (past libuv's coarse clock's tick) by the time the next drain
     * arms it: libuv runs it in the same timer phase. */
    t_sleep_ms(6);
  }
  return __real_uv_timer_start(h, cb, timeout, repeat);
}

static void probe(evl_t *lp, void *arg, int status) {
  (void)lp;
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_store(&probe_done, 1);
}

int main(void) {
  gvl_t *g = t_gvl();
  CHECK((l = evl_start(g, NULL)) != NULL);
  evl_id_t id;
  atomic_store(&chain, 1);
  CHECK_EQ(evl_timer(l, 0, 0, EVL_F_NOGVL, nop, NULL, &id), 0);
  CHECK_EQ(evl_post(l, probe, NULL, &id), 0);
  int ms = 0;
  while (!atomic_load(&probe_done) && ms < 10000) {
    t_sleep_ms(1);
    ms++;
  }
  int during = atomic_load(&probe_done);
  atomic_store(&chain, 0);
  fprintf(stderr, "post called: %s, after %ld links of the chain\n",
          during ? "yes" : "no", atomic_load(&links));
  CHECK(during);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("ok");
  return 0;
}
