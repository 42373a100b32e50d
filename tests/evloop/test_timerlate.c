/* SPDX-License-Identifier: MIT */
/*
 * One-shot timers in due order when the loop thread is held up between a
 * pass's drain of new registrations and libuv's timer phase, as preemption
 * does (uv_run wrapped to sleep 12 ms once: static link).  A (10 ms) is
 * armed; during the hold-up B (0 ms) is registered, due well before A:
 * evloop.h promises B's call first.  Before the fix libuv ran A at the top
 * of uv_run and B only after the poll's wake-up had drained it.
 *
 * A round counts only when B's registration was, by the clock around the
 * calls, at least 2 ms before A's due time (the header's millisecond, and
 * one more); on a machine too busy to make one such round the test says
 * so and passes nothing: it fails.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>
#include <uv.h>

#include "evl_test.h"

int __real_uv_run(uv_loop_t *loop, uv_run_mode mode);
int __wrap_uv_run(uv_loop_t *loop, uv_run_mode mode);
static atomic_int delay_once;

int __wrap_uv_run(uv_loop_t *loop, uv_run_mode mode) {
  if (atomic_exchange(&delay_once, 0)) usleep(12000);
  return __real_uv_run(loop, mode);
}


int main(void) {
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  evl_t *l = evl_start(g, NULL);
  CHECK(l != NULL);
  int counted = 0;
  for (int r = 0; r < 20; r++) {
    evl_id_t id;
    t_order_reset();
    uint64_t a0 = gvl_now_ns();
    CHECK_EQ(evl_timer(l, 10, 0, 0, t_order_cb, "A", &id), 0);
    t_sleep_ms(1);                /* A armed; the loop waits in uv_run */
    atomic_store(&delay_once, 1);
    CHECK_EQ(evl_wakeup(l), 0);   /* the next pass drains, then is held */
    t_sleep_ms(2);
    CHECK_EQ(evl_timer(l, 0, 0, 0, t_order_cb, "B", &id), 0);
    uint64_t b1 = gvl_now_ns();
    while (atomic_load(&t_order()->n) < 2) t_sleep_ms(1);
    if (b1 + 2000000 > a0 + 10000000) continue;   /* not clearly earlier */
    counted++;
    if (strcmp(t_order()->s, "BA") != 0) {
      fprintf(stderr, "round %d: calls in order %s, B due %.2f ms before A\n", r,
              t_order()->s, (double)(a0 + 10000000 - b1) / 1e6);
      return 1;
    }
  }
  fprintf(stderr, "%d of 20 rounds counted\n", counted);
  CHECK(counted > 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("ok");
  return 0;
}
