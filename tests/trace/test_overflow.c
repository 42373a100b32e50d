/* SPDX-License-Identifier: MIT */
/*
 * test_overflow.c -- bounded buffers and the lost-events counter.
 *
 * One thread makes 100 uncontended acquire/release pairs: exactly 200
 * events (RESUMED and SUSPENDED each).  With 16 events per thread, 184 are
 * lost: the newest in drop mode (the first 8 holds are kept), the oldest in
 * ring mode (the last 8).  In stop-when-full mode the 17th event stops the
 * trace and writes the file: 16 kept, 1 lost.  With max_threads = 1, a
 * second thread's events are all lost and counted.
 */
#include "ttrace.h"

#define PAIRS 100

static gvl_t *g;

static void pairs(gvl_thread_t *t, int n) {
  for (int i = 0; i < n; i++) {
    CHECK_OK(gvl_acquire(t));
    CHECK_OK(gvl_release(t));
  }
}

static void run(const ttrace_env_t *e, const char *name, unsigned flags) {
  char path[512];
  gvl_trace_config_t c = {16, 0, flags};
  gvl_trace_stats_t st;
  ttrace_path(e, name, path, sizeof path);
  CHECK_OK(gvl_trace_start(g, path, &c));
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  pairs(t, PAIRS);
  CHECK_OK(gvl_trace_stats(g, &st));         /* while running */
  CHECK_EQ(st.recorded, 16);
  CHECK_EQ(st.lost, 2 * PAIRS - 16);
  CHECK_EQ(st.threads, 1);
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(gvl_trace_stop(g));
  CHECK_OK(gvl_trace_stats(g, &st));         /* the last run's */
  CHECK_EQ(st.lost, 2 * PAIRS - 16);
  TTRACE_CHECK(e, path, "--lost", "184", "--holds", "8");
}

static void stop_when_full(const ttrace_env_t *e) {
  char path[512];
  gvl_trace_config_t c = {16, 0, GVL_TRACE_STOP_FULL}, both = {16, 0, 0};
  gvl_trace_stats_t st;
  both.flags = GVL_TRACE_STOP_FULL | GVL_TRACE_RING;
  ttrace_path(e, "stopfull", path, sizeof path);
  CHECK_EQ(gvl_trace_start(g, path, &both), EINVAL);
  CHECK_OK(gvl_trace_start(g, path, &c));
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  pairs(t, PAIRS);
  CHECK_EQ(gvl_trace_active(g), 0);           /* stopped itself */
  CHECK_EQ(gvl_trace_stop(g), ESRCH);
  CHECK_OK(gvl_trace_stats(g, &st));
  CHECK_EQ(st.recorded, 16);
  CHECK_EQ(st.lost, 1);
  CHECK_OK(gvl_thread_detach(t));
  TTRACE_CHECK(e, path, "--lost", "1", "--holds", "8");
}

static void *other(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  pairs(t, 5);
  CHECK_OK(gvl_trace_instant(g, "test", "lost too", 0));
  CHECK_OK(gvl_thread_detach(t));
  (void)arg;
  return NULL;
}

static void too_many_threads(const ttrace_env_t *e) {
  char path[512];
  gvl_trace_config_t c = {64, 1, 0};
  gvl_trace_stats_t st;
  pthread_t th;
  ttrace_path(e, "threads1", path, sizeof path);
  CHECK_OK(gvl_trace_start(g, path, &c));
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  pairs(t, 3);                               /* takes the only buffer */
  tgvl_spawn(&th, other, NULL);
  tgvl_join(th);
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(gvl_trace_stop(g));
  CHECK_OK(gvl_trace_stats(g, &st));
  CHECK_EQ(st.threads, 1);
  CHECK_EQ(st.recorded, 6);
  CHECK_EQ(st.lost, 11);                     /* 5 pairs and the instant */
  TTRACE_CHECK(e, path, "--lost", "11", "--holds", "3");
}

int main(int argc, char **argv) {
  ttrace_env_t e = ttrace_args(argc, argv);
  tgvl_watchdog(240);  /* includes the checker runs (python3 start-up on a loaded box) */
  CHECK((g = gvl_create(NULL)) != NULL);
  run(&e, "drop", 0);
  run(&e, "ring", GVL_TRACE_RING);
  stop_when_full(&e);
  too_many_threads(&e);
  CHECK_OK(gvl_destroy(g));
  return 0;
}
