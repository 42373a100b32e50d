/* SPDX-License-Identifier: MIT */
/*
 * test_threads.c -- tracing while threads contend: four threads acquire,
 * yield, pass safe points, block in gvl_call_without, take a boosted
 * acquire now and then, record spans and rename themselves, while the main
 * thread starts and stops the trace several times.  Every file must parse,
 * nest per thread and never show two holders at once; the counters of the
 * last run must add up.  Meant for TSan and valgrind as much as for the
 * checks.
 */
#include "ttrace.h"

#define THREADS 4
#define RUNS 3

static gvl_t *g;
static atomic_uint stop_all, ready, steps;

static void *nap(void *arg) {
  tgvl_sleep_us(50);
  return arg;
}

static void step(gvl_thread_t *t, unsigned i) {
  if (i % 7 == 0) CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
  else CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_trace_begin(g, "worker", "step"));
  tgvl_work(20);
  CHECK_OK(gvl_check_ints(t));
  if (i % 3 == 0) CHECK_OK(gvl_yield(t));
  if (i % 5 == 0) CHECK(gvl_call_without(t, nap, t, NULL, NULL) == t);
  CHECK_OK(gvl_trace_end(g, "worker", "step"));
  CHECK_OK(gvl_release(t));
}

static void *worker(void *arg) {
  char name[16];
  unsigned id = (unsigned)(uintptr_t)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  atomic_fetch_add(&ready, 1);
  for (unsigned i = 0; !atomic_load(&stop_all); i++) {
    if (i % 50 == 0) {
      snprintf(name, sizeof name, "w%u.%u", id, i / 50);
      CHECK_OK(gvl_trace_set_thread_name(name));
    }
    step(t, i);
    atomic_fetch_add(&steps, 1);
  }
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

int main(int argc, char **argv) {
  ttrace_env_t e = ttrace_args(argc, argv);
  pthread_t th[THREADS];
  char path[RUNS][512], lost[RUNS][24];
  gvl_trace_stats_t st;
  tgvl_watchdog(240);  /* includes the checker runs */
  CHECK((g = gvl_create(NULL)) != NULL);
  for (uintptr_t i = 0; i < THREADS; i++) tgvl_spawn(&th[i], worker, (void *)i);
  tgvl_wait_ge(&ready, THREADS);
  for (int r = 0; r < RUNS; r++) {
    char name[16];
    gvl_trace_config_t c = {r == 1 ? 256u : 0u, 0, r == 2 ? GVL_TRACE_RING : 0u};
    snprintf(name, sizeof name, "threads%d", r);
    ttrace_path(&e, name, path[r], sizeof path[r]);
    CHECK_OK(gvl_trace_start(g, path[r], &c));
    /* Counted, not timed: under valgrind on a busy machine 20 ms can
     * pass without a worker running at all. */
    unsigned s0 = atomic_load(&steps);
    tgvl_sleep_us(20000);
    tgvl_wait_ge(&steps, s0 + 2 * THREADS);
    CHECK_OK(gvl_trace_stop(g));
    CHECK_OK(gvl_trace_stats(g, &st));
    CHECK_GE(st.threads, 1);
    CHECK_LE(st.threads, THREADS);
    snprintf(lost[r], sizeof lost[r], "%llu", (unsigned long long)st.lost);
    tgvl_sleep_us(2000);
  }
  atomic_store(&stop_all, 1);
  for (int i = 0; i < THREADS; i++) tgvl_join(th[i]);
  CHECK_OK(gvl_destroy(g));
  for (int r = 0; r < RUNS; r++) TTRACE_CHECK(&e, path[r], "--lost", lost[r]);
  return 0;
}
