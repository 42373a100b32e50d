/* SPDX-License-Identifier: MIT */
/*
 * Wakes made after g->mu is dropped.
 *
 * detach_waits_for_kick: a handoff to a thread asleep in the kernel bumps
 *   its sequence word under g->mu but makes the futex call only once g->mu
 *   is released; until then the handle is pinned (wake_refs), since the
 *   thread may wake by itself, take the GVL, release it and detach.  White
 *   box: the test pins a handle as such a pending kick does, and the
 *   thread's gvl_thread_detach must not return until it drops the pin.
 *
 * Run with a case name to run just that case.
 */
#include "tgvl.h"
#include "gvl_int.h"   /* white box: wake_refs */

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

static const tgvl_case_t cases[] = {
    {"detach_waits_for_kick", detach_waits_for_kick},
};

int main(int argc, char **argv) {
  tgvl_watchdog(60);
  return tgvl_run_cases(cases, sizeof cases / sizeof cases[0], argc, argv);
}
