/* SPDX-License-Identifier: MIT */
/*
 * `0 until flag`: threads that only pass safe points (gvl_check_ints) must
 * let the thread that sets the flag run.  The setter needs the GVL, so the
 * loop ends only if the spinners are preempted at a safe point.
 *
 * Run with the argument "pin" to pin the whole process to one CPU first:
 * then the waiter's slice timer and the spinner share a core, and a design
 * that relies on a second core being free would hang (the watchdog fails it).
 */
#include "tgvl.h"

typedef enum { SET_ACQUIRE, SET_BOOST, SET_CALL_WITH } setter_kind_t;

static gvl_t *g;
static volatile int flag;         /* written and read under the GVL */
static atomic_uint spinning;      /* spinners inside their loop */
static setter_kind_t kind;
static int spin_prio; /* priority the spinners acquire at */

static void *set_flag(void *arg) {
  flag = 1;
  return arg;
}

static void *spinner(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire_prio(t, spin_prio));
  int looped = !flag;
  atomic_fetch_add(&spinning, 1);
  while (!flag) CHECK_OK(gvl_check_ints(t));
  gvl_stats_t s = tgvl_tstats(t);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  /* The flag can only have been set by another thread holding the GVL,
   * which this thread had to give up at a safe point. */
  if (looped) {
    CHECK_GE(s.preemptions, 1);
    CHECK_GE(s.preempt_reqs, 1);
  }
  return NULL;
}

static void *setter(void *arg) {
  (void)arg;
  if (kind == SET_CALL_WITH) {
    /* A foreign thread: never attached explicitly. */
    CHECK(gvl_call_with(g, 0, set_flag, &kind) == &kind);
    return NULL;
  }
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  if (kind == SET_BOOST)
    CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
  else
    CHECK_OK(gvl_acquire(t));
  flag = 1;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void run(int nspin, setter_kind_t k, uint64_t slice_ns) {
  gvl_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.slice_ns = slice_ns;
  g = gvl_create(&cfg);
  CHECK(g != NULL);
  flag = 0;
  kind = k;
  atomic_store(&spinning, 0);

  pthread_t sp[4], st;
  for (int i = 0; i < nspin; i++) tgvl_spawn(&sp[i], spinner, NULL);
  /* Start the setter only once every spinner has owned the GVL: with
   * several, that already takes slice preemption among them. */
  tgvl_wait_ge(&spinning, (unsigned)nspin);
  tgvl_spawn(&st, setter, NULL);
  tgvl_join(st);
  for (int i = 0; i < nspin; i++) tgvl_join(sp[i]);

  gvl_stats_t s = tgvl_stats(g);
  CHECK_GE(s.preemptions, 1);
  CHECK_GE(s.handoffs, 1);
  CHECK_OK(gvl_destroy(g));
}

static void pin_to_one_cpu(void) {
  cpu_set_t set;
  CHECK_OK(sched_getaffinity(0, sizeof set, &set));
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set)) cpu++;
  CHECK(cpu < CPU_SETSIZE);
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  CHECK_OK(sched_setaffinity(0, sizeof set, &set));
  CHECK_OK(sched_getaffinity(0, sizeof set, &set));
  CHECK_EQ(CPU_COUNT(&set), 1);
}

int main(int argc, char **argv) {
  tgvl_watchdog(60);
  if (argc > 1 && strcmp(argv[1], "pin") == 0) pin_to_one_cpu();

  run(1, SET_ACQUIRE, 0);               /* default slice */
  run(1, SET_ACQUIRE, 1000000);         /* 1 ms slice */
  run(1, SET_BOOST, TGVL_HOUR_NS);      /* only the boost can preempt */
  run(1, SET_CALL_WITH, 2000000);
  run(3, SET_ACQUIRE, 1000000);         /* spinners preempt each other too */
  run(3, SET_CALL_WITH, 0);
  /* A boosted spinner is still preempted at the end of its slice by a
   * normal-priority setter: the slice applies to every holder. */
  spin_prio = GVL_PRIO_BOOST;
  run(1, SET_ACQUIRE, 1000000);
  run(2, SET_CALL_WITH, 1000000);
  puts("ok");
  return 0;
}
