/* SPDX-License-Identifier: MIT */
/*
 * test_states.c -- the reasons a hold ends, each in its own trace:
 *   yield      E holds, F queues, E yields: holders E, F, E; E's first hold
 *              ends "yield" with a handoff to F;
 *   cond wait  D waits on a gvl_cond with a timeout: its hold ends "cond
 *              wait" and a "cond wait" span follows;
 *   died       C exits holding the GVL: an "owner died" instant and a hold
 *              that ends "died";
 *   mid-hold   the trace starts while G holds; H boosts in; G resumes:
 *              holders G, H, G, the first marked held_before_trace;
 *   refused    with a 1% boost cap, R holds boosted for 5 ms (past the cap)
 *              and then asks for a boost while Q holds: it waits at normal
 *              priority, marked boost "refused".
 * Orderings only; the READY count from a hook tells when F has queued.
 */
#include "ttrace.h"

static gvl_t *g;
static tgvl_log_t hooklog;

static void *thread_f(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  (void)arg;
  CHECK(t != NULL);
  CHECK_OK(gvl_trace_set_thread_name("F"));
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void yield_case(const ttrace_env_t *e) {
  char path[512];
  pthread_t th;
  ttrace_path(e, "yield", path, sizeof path);
  CHECK_OK(gvl_trace_set_thread_name("E"));
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_trace_start(g, path, NULL));
  CHECK_OK(gvl_acquire(t));
  tgvl_log_reset(&hooklog);
  tgvl_spawn(&th, thread_f, NULL);
  while (tgvl_count(&hooklog, GVL_EV_READY) < 1) tgvl_sleep_us(100);
  CHECK_OK(gvl_yield(t));          /* F runs, releases, E is back */
  CHECK_OK(gvl_release(t));
  tgvl_join(th);
  CHECK_OK(gvl_trace_stop(g));
  CHECK_OK(gvl_thread_detach(t));
  TTRACE_CHECK(e, path, "--holders", "E,F,E", "--reason", "E:1:yield",
               "--reason", "F:1:release", "--handoff", "E:F", "--handoff", "F:E",
               "--has", "wait@F", "--has", "wait@E");
}

static void cond_case(const ttrace_env_t *e) {
  char path[512];
  gvl_mutex_t m;
  gvl_cond_t c;
  ttrace_path(e, "cond", path, sizeof path);
  CHECK_OK(gvl_trace_set_thread_name("D"));
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_mutex_init(&m));
  CHECK_OK(gvl_cond_init(&c));
  CHECK_OK(gvl_trace_start(g, path, NULL));
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_mutex_lock(t, &m));
  CHECK_EQ(gvl_cond_timedwait(t, &c, &m, 1000000), ETIMEDOUT);
  CHECK_OK(gvl_mutex_unlock(t, &m));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_trace_stop(g));
  CHECK_OK(gvl_cond_destroy(&c));
  CHECK_OK(gvl_mutex_destroy(&m));
  CHECK_OK(gvl_thread_detach(t));
  TTRACE_CHECK(e, path, "--holders", "D,D", "--reason", "D:1:cond wait",
               "--reason", "D:2:release", "--has", "cond wait@D");
}

static void *thread_c(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  (void)arg;
  CHECK(t != NULL);
  CHECK_OK(gvl_trace_set_thread_name("C"));
  CHECK_OK(gvl_acquire(t));
  return NULL;                     /* exits holding the GVL */
}

static void died_case(const ttrace_env_t *e) {
  char path[512];
  pthread_t th;
  ttrace_path(e, "died", path, sizeof path);
  CHECK_OK(gvl_trace_start(g, path, NULL));
  tgvl_spawn(&th, thread_c, NULL);
  tgvl_join(th);
  CHECK_OK(gvl_trace_stop(g));
  CHECK_EQ(tgvl_stats(g).owner_died, 1);
  TTRACE_CHECK(e, path, "--holders", "C", "--reason", "C:1:died",
               "--has", "owner died@C");
}

static atomic_uint h_done;

static void *thread_h(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  (void)arg;
  CHECK(t != NULL);
  CHECK_OK(gvl_trace_set_thread_name("H"));
  CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
  atomic_store(&h_done, 1);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void mid_hold_case(const ttrace_env_t *e) {
  char path[512];
  pthread_t th;
  ttrace_path(e, "midhold", path, sizeof path);
  CHECK_OK(gvl_trace_set_thread_name("G"));
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_trace_start(g, path, NULL));      /* G is holding */
  tgvl_spawn(&th, thread_h, NULL);
  while (!atomic_load(&h_done)) CHECK_OK(gvl_check_ints(t));
  CHECK_OK(gvl_release(t));
  tgvl_join(th);
  CHECK_OK(gvl_trace_stop(g));
  CHECK_OK(gvl_thread_detach(t));
  TTRACE_CHECK(e, path, "--holders", "G,H,G", "--arg", "hold@G:held_before_trace=True",
               "--reason", "G:1:preempted", "--reason", "G:2:release",
               "--handoff", "H:G");
}

static gvl_t *g2;
static atomic_uint r_phase;

static void *thread_r(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g2, 0);
  (void)arg;
  CHECK(t != NULL);
  CHECK_OK(gvl_trace_set_thread_name("R"));
  CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
  tgvl_sleep_us(150000);           /* 1.5% of the window: past the 1% cap */
  CHECK_OK(gvl_release(t));
  atomic_store(&r_phase, 1);
  while (atomic_load(&r_phase) < 2) tgvl_sleep_us(100);
  CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));   /* Q holds: queues */
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void refused_case(const ttrace_env_t *e) {
  char path[512];
  pthread_t th;
  tgvl_log_t log;
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &log);
  cfg.boost_cap_pct = 1;
  /* Long enough that R's charge is still in it at its second boost, however
   * late that comes on a loaded machine. */
  cfg.cap_window_ns = 10000ull * 1000000ull;
  memset(&log, 0, sizeof log);
  CHECK((g2 = gvl_create(&cfg)) != NULL);
  ttrace_path(e, "refused", path, sizeof path);
  CHECK_OK(gvl_trace_set_thread_name("Q"));
  gvl_thread_t *q = gvl_thread_attach(g2, 0);
  CHECK(q != NULL);
  CHECK_OK(gvl_trace_start(g2, path, NULL));
  tgvl_spawn(&th, thread_r, NULL);
  while (atomic_load(&r_phase) < 1) tgvl_sleep_us(100);
  CHECK_OK(gvl_acquire(q));
  atomic_store(&r_phase, 2);
  while (tgvl_count(&log, GVL_EV_READY) < 1) tgvl_sleep_us(100);
  CHECK_OK(gvl_release(q));        /* hands over to R */
  tgvl_join(th);
  CHECK_OK(gvl_trace_stop(g2));
  CHECK_OK(gvl_thread_detach(q));
  CHECK_OK(gvl_destroy(g2));
  TTRACE_CHECK(e, path, "--holders", "R,Q,R", "--arg", "hold boosted@R:boost=granted",
               "--arg", "wait@R:boost=refused", "--handoff", "Q:R");
}

int main(int argc, char **argv) {
  ttrace_env_t e = ttrace_args(argc, argv);
  tgvl_watchdog(240);  /* includes the checker runs (python3 start-up on a loaded box) */
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &hooklog);
  CHECK((g = gvl_create(&cfg)) != NULL);
  yield_case(&e);
  cond_case(&e);
  died_case(&e);
  mid_hold_case(&e);
  refused_case(&e);
  CHECK_OK(gvl_destroy(g));
  return 0;
}
