/* SPDX-License-Identifier: MIT */
/*
 * Wakes made after g->mu is dropped, and the one-CPU wait.
 *
 * detach_waits_for_wake: a handoff to a thread asleep in the kernel bumps
 *   its sequence word under g->mu but makes the futex call only once g->mu
 *   is released.  Meanwhile the new owner may wake by itself (it is the
 *   timer, sleeping until the end of a 5 ms slice), take the GVL, release
 *   it and detach: its handle must outlive that futex call.  The yielder's
 *   READY hook, which runs between the two, holds the call back for 200 ms
 *   while the new owner, asleep when the yield began, wakes at its deadline:
 *   its gvl_thread_detach must not return before the hook does (it would
 *   have freed memory the call then uses).
 *
 * onecpu_yield_bounded: on one CPU a waiter that expects a quick handoff
 *   gives the CPU away a bounded number of times, then sleeps (gvl.h).  A
 *   boosted waiter waits 300 ms for a holder that passes no safe point; its
 *   involuntary context switches (each sched_yield that let the holder run
 *   is one) stay at the bound plus a little, where an unbounded yield loop
 *   would make one per scheduler slice of the holder (~100).
 *
 * Run with a case name to run just that case.
 */
#include "tgvl.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static gvl_t *g;
static gvl_thread_t *_Atomic yielder, *_Atomic taker;
static atomic_int taker_tid, taker_queued, taker_detached, detached_in_hook;

static void hold_back_wake(void *arg, gvl_thread_t *t, gvl_event_t ev,
                           uint64_t now) {
  (void)arg;
  (void)now;
  if (ev != GVL_EV_READY) return;
  if (t == atomic_load(&taker)) {
    atomic_store(&taker_queued, 1);
    return;
  }
  if (t != atomic_load(&yielder) || !atomic_load(&taker_queued)) return;
  /* The yielder just handed over; the taker's futex call is not made. */
  for (int i = 0; i < 200 && !atomic_load(&taker_detached); i++)
    tgvl_sleep_us(1000);
  atomic_store(&detached_in_hook, atomic_load(&taker_detached));
}

/* The scheduler state of thread tid of this process ('S': asleep). */
static char thread_state(int tid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  CHECK(p != NULL && p[1] == ' ');
  return p[2];
}

static void *take_and_detach(void *arg) {
  (void)arg;
  atomic_store(&taker_tid, (int)syscall(SYS_gettid));
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  atomic_store(&taker, t);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  atomic_store(&taker_detached, 1);
  return NULL;
}

static void detach_waits_for_wake(void) {
  gvl_config_t c = tgvl_strict_config(5000000, NULL);
  c.flags |= GVL_F_NOSPIN;      /* the taker sleeps at once */
  c.hook = hold_back_wake;
  CHECK(g = gvl_create(&c));
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  for (int round = 0; round < 3; round++) {
    pthread_t th;
    atomic_store(&taker, NULL);
    atomic_store(&taker_tid, 0);
    atomic_store(&taker_queued, 0);
    atomic_store(&taker_detached, 0);
    atomic_store(&detached_in_hook, 0);
    CHECK_OK(gvl_acquire(me));
    atomic_store(&yielder, me);
    tgvl_spawn(&th, take_and_detach, NULL);
    while (!atomic_load(&taker_queued)) sched_yield();
    /* Queued and nothing else to block on but its park: wait till it is
     * in the kernel, so the handoff must leave a futex call to make. */
    while (thread_state(atomic_load(&taker_tid)) != 'S') sched_yield();
    CHECK_OK(gvl_yield(me));   /* hands over; READY; the hook; the call */
    int detached_early = atomic_load(&detached_in_hook);
    CHECK_EQ(detached_early, 0);
    CHECK_OK(gvl_release(me));
    tgvl_join(th);
    CHECK_EQ(atomic_load(&taker_detached), 1);
    atomic_store(&yielder, NULL);
  }
  CHECK_OK(gvl_thread_detach(me));
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
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  CHECK_OK(sched_setaffinity(0, sizeof set, &set)); /* threads inherit it */
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
    {"detach_waits_for_wake", detach_waits_for_wake},
    {"onecpu_yield_bounded", onecpu_yield_bounded},
};

int main(int argc, char **argv) {
  tgvl_watchdog(60);
  return tgvl_run_cases(cases, sizeof cases / sizeof cases[0], argc, argv);
}
