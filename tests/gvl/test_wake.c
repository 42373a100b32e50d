/* SPDX-License-Identifier: MIT */
/*
 * Wakes made after g->mu is dropped, and the one-CPU wait.
 *
 * detach_waits_for_kick: a handoff to a thread asleep in the kernel bumps
 *   its sequence word under g->mu but makes the futex call only once g->mu
 *   is released; until then the handle is pinned (wake_refs), since the
 *   thread may wake by itself, take the GVL, release it and detach.  White
 *   box: the test pins a handle as such a pending kick does, and the
 *   thread's gvl_thread_detach must not return until it drops the pin.
 *
 * onecpu_yield_bounded: on one CPU a waiter that expects a quick handoff
 *   gives the CPU away a bounded number of times, then sleeps (gvl.h).  A
 *   boosted waiter waits 300 ms for a holder that passes no safe point; its
 *   involuntary context switches (each sched_yield that let the holder run
 *   is one) are at least one (it did yield) and stay at the bound plus a
 *   little, where an unbounded yield loop would make one per scheduler
 *   slice of the holder (~100).
 *
 * Run with a case name to run just that case.
 */
#include "tgvl.h"
#include "gvl_int.h"   /* white box: wake_refs */

#include <sys/resource.h>

static gvl_t *g;
static gvl_thread_t *_Atomic pinned;
static atomic_int go, detached;

static void *detach_when_told(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  atomic_store(&pinned, t);
  while (!atomic_load(&go)) sched_yield();
  CHECK_OK(gvl_thread_detach(t));
  atomic_store(&detached, 1);
  return NULL;
}

static void detach_waits_for_kick(void) {
  CHECK(g = gvl_create(NULL));
  pthread_t th;
  tgvl_spawn(&th, detach_when_told, NULL);
  gvl_thread_t *t;
  while (!(t = atomic_load(&pinned))) sched_yield();
  atomic_fetch_add(&t->wake_refs, 1);     /* a kick not made yet */
  atomic_store(&go, 1);
  tgvl_sleep_us(100000);                  /* time to detach, if it could */
  int early = atomic_load(&detached);
  CHECK_EQ(early, 0);
  atomic_fetch_sub(&t->wake_refs, 1);     /* the kick is made */
  tgvl_join(th);
  CHECK_EQ(atomic_load(&detached), 1);
  CHECK_OK(gvl_destroy(g));
  g = NULL;
}

static atomic_int holder_in;

static void *busy_holder(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  atomic_store(&holder_in, 1);
  uint64_t end = gvl_now_ns() + 300ull * 1000000ull;
  while (gvl_now_ns() < end) tgvl_work(10);   /* no safe point */
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *yield_bounded_main(void *arg) {
  (void)arg;
  cpu_set_t set, one;
  CHECK_OK(sched_getaffinity(0, sizeof set, &set));
  int cpu = 0;
  while (!CPU_ISSET(cpu, &set)) cpu++;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);         /* the first CPU we may use; threads inherit it */
  CHECK_OK(sched_setaffinity(0, sizeof one, &one));
  gvl_config_t c = tgvl_strict_config(TGVL_HOUR_NS, NULL);
  CHECK(g = gvl_create(&c));            /* created on one CPU */
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  pthread_t h;
  atomic_store(&holder_in, 0);
  tgvl_spawn(&h, busy_holder, NULL);
  while (!atomic_load(&holder_in)) sched_yield();
  struct rusage r0, r1;
  CHECK_OK(getrusage(RUSAGE_THREAD, &r0));
  CHECK_OK(gvl_acquire_prio(me, GVL_PRIO_BOOST));
  CHECK_OK(getrusage(RUSAGE_THREAD, &r1));
  long inv = r1.ru_nivcsw - r0.ru_nivcsw;
  fprintf(stderr, "onecpu_yield_bounded: %ld involuntary switches in a "
          "300 ms wait\n", inv);
  CHECK(inv >= 1);    /* it did give the CPU away */
  CHECK(inv <= 20);
  CHECK_OK(gvl_release(me));
  tgvl_join(h);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
  g = NULL;
  return NULL;
}

static void onecpu_yield_bounded(void) {
  pthread_t th;
  tgvl_spawn(&th, yield_bounded_main, NULL);
  tgvl_join(th);
}

static const tgvl_case_t cases[] = {
    {"detach_waits_for_kick", detach_waits_for_kick},
    {"onecpu_yield_bounded", onecpu_yield_bounded},
};

int main(int argc, char **argv) {
  tgvl_watchdog(60);
  return tgvl_run_cases(cases, sizeof cases / sizeof cases[0], argc, argv);
}
