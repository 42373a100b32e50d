/* SPDX-License-Identifier: MIT */
/*
 * test_scenario.c -- a scripted scenario whose trace is known in advance.
 *
 *   A holds the GVL and passes safe points until B has run;
 *   B asks with a boost: A is asked to give up (preempt request on A's
 *     track, made by B) and hands over at its next safe point;
 *   B holds (boosted), records a span of another layer, releases: the GVL
 *     goes back to A, who waited behind B;
 *   A runs a blocking region (gvl_call_without), comes back, releases.
 *
 * Expected holders: A, B, A, A.  A's first hold ends "preempted" with a
 * handoff to B, B's with a handoff back to A; A's second hold ends
 * "blocking" and a "blocking" span follows.  Orderings only: no timing.
 */
#include "ttrace.h"

static gvl_t *g;
static atomic_uint b_queued, b_done;

static void *thread_b(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_trace_set_thread_name("B"));
  atomic_store(&b_queued, 1);
  CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
  CHECK_OK(gvl_trace_begin(g, "tk", "redraw"));
  CHECK_OK(gvl_trace_instant(g, "evloop", "event", 42));
  CHECK_OK(gvl_trace_end(g, "tk", "redraw"));
  atomic_store(&b_done, 1);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *nap(void *arg) {
  (void)arg;
  tgvl_sleep_us(2000);
  return (void *)1;
}

int main(int argc, char **argv) {
  ttrace_env_t e = ttrace_args(argc, argv);
  char path[512];
  pthread_t th;
  tgvl_watchdog(240);  /* includes the checker runs (python3 start-up on a loaded box) */
  ttrace_path(&e, "scenario", path, sizeof path);
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, NULL);
  CHECK((g = gvl_create(&cfg)) != NULL);
  CHECK_OK(gvl_trace_set_thread_name("A"));
  CHECK_OK(gvl_trace_start(g, path, NULL));
  CHECK_EQ(gvl_trace_active(g), 1);

  gvl_thread_t *a = gvl_thread_attach(g, 0);
  CHECK(a != NULL);
  CHECK_OK(gvl_acquire(a));
  tgvl_spawn(&th, thread_b, NULL);
  while (!atomic_load(&b_done)) CHECK_OK(gvl_check_ints(a));   /* 0 until flag */
  CHECK(gvl_call_without(a, nap, NULL, NULL, NULL) == (void *)1);
  CHECK_OK(gvl_release(a));
  tgvl_join(th);

  gvl_trace_stats_t st;
  CHECK_OK(gvl_trace_stop(g));
  CHECK_EQ(gvl_trace_active(g), 0);
  CHECK_OK(gvl_trace_stats(g, &st));
  CHECK_EQ(st.lost, 0);
  CHECK_EQ(st.threads, 2);
  CHECK_OK(gvl_thread_detach(a));
  CHECK_OK(gvl_destroy(g));

  TTRACE_CHECK(&e, path, "--holders", "A,B,A,A", "--lost", "0",
               "--reason", "A:1:preempted", "--reason", "B:1:release",
               "--reason", "A:2:blocking", "--reason", "A:3:release",
               "--handoff", "A:B", "--handoff", "B:A", "--preempt", "A:B",
               "--has", "hold boosted@B", "--has", "wait boosted@B",
               "--has", "wait@A", "--has", "blocking@A", "--has", "redraw@B",
               "--has", "event@B", "--unmatched", "0");
  return 0;
}
