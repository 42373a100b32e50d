/* SPDX-License-Identifier: MIT */
/* An idle loop makes no periodic wake-ups: over a quiet period its uv_run
 * pass count does not move, with nothing registered and with a far timer
 * and an fd watch armed.  (Counts, not times: this holds on any load.)
 * CPU time of an idle loop is measured by bench/evloop/loop_idle. */
#include <unistd.h>

#include "evl_test.h"

static atomic_int ran;
static void mark_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  (void)status;
  atomic_fetch_add(&ran, 1);
}
static void io_cb(evl_t *l, void *arg, int status, unsigned ev) {
  (void)l;
  (void)arg;
  (void)status;
  (void)ev;
}

static uint64_t passes(evl_t *l) {
  evl_stats_t st;
  CHECK_EQ(evl_stats(l, &st), 0);
  return st.iterations;
}

static void check_quiet(evl_t *l, long ms) {
  uint64_t before = passes(l);
  t_sleep_ms(ms);
  CHECK_EQ(passes(l), before);
}

int main(int argc, char **argv) {
  long ms = argc > 1 ? atol(argv[1]) : 300;
  gvl_t *g = t_gvl();
  evl_t *l = t_loop(g);
  int p[2];
  CHECK_EQ(evl_post(l, mark_cb, NULL, NULL), 0);
  t_wait_ge(&ran, 1);
  check_quiet(l, ms);
  CHECK_EQ(pipe(p), 0);
  CHECK_EQ(evl_timer(l, 3600000, 3600000, 0, mark_cb, NULL, NULL), 0);
  CHECK_EQ(evl_fd_watch(l, p[0], EVL_READABLE, 0, io_cb, NULL, NULL), 0);
  CHECK_EQ(evl_post(l, mark_cb, NULL, NULL), 0);
  t_wait_ge(&ran, 2);
  check_quiet(l, ms);
  CHECK_EQ(evl_destroy(l), 0);
  close(p[0]);
  close(p[1]);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_idle ok");
  return 0;
}
