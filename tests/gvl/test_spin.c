/* SPDX-License-Identifier: MIT */
/*
 * When a spinning waiter yields its CPU (gvl.h, "No spinning on one CPU").
 * A static link whose sched_yield is wrapped counts the waiter's yields
 * while the holder, pinned to a CPU, computes 5 ms without a safe point:
 *
 *   boost_elsewhere  a boosted waiter on another CPU than the holder spins
 *                    through the hold and never yields (the yield could
 *                    only give its own CPU to some other process, for a
 *                    whole kernel time slice)
 *   boost_beside     a boosted waiter on the holder's own CPU yields, so
 *                    that the holder can run to its safe point
 *   plain_elsewhere  a waiter at normal priority on another CPU yields
 *                    after 2 us, as before: others may need its CPU
 *
 * gvl__park_wait is wrapped too, to count the waiter's sleeps in its GVL
 * wait.  Needs two CPUs and the kernel's rseq area (glibc 2.35 and later; not
 * under valgrind): else exit 77 (ctest: skipped).
 *
 * A waiter can only yield while it runs.  The two cases that expect a yield
 * do not give it a fixed time to do so: the holder computes until the waiter
 * has yielded, or has stopped spinning (it sleeps in its wait).  A waiter
 * that the machine kept off its CPU until its spin was over (a loaded
 * machine: with a 5 ms hold, 0 yields in 1 of about 300 runs under TSan
 * beside two busy loops, the waiter having run 176 us of its 5.3 ms wait)
 * slept having hardly run, and the case runs again.
 */
#include "tgvl.h"

#include <stdbool.h>
#include <sys/rseq.h>

int __real_sched_yield(void);
int __wrap_sched_yield(void);

static _Thread_local bool counting;
static atomic_int yields;

int __wrap_sched_yield(void) {
  if (counting) atomic_fetch_add(&yields, 1);
  return __real_sched_yield();
}

#define SPIN_NS  (200ull * 1000000u)   /* the waiter spins through the hold */
#define HOLD_NS  (5ull * 1000000u)     /* the holder's native stretch       */

static gvl_t *g;
static int cpus[2];
static cpu_set_t all_cpus;             /* the process's, at start */
static tgvl_log_t spin_log;            /* the hook's: READY, the waiter queued */

typedef struct {
  int cpu;
  int prio;
} waiter_t;

/* A waiter that spun has run, on its CPU, for more than this in its wait;
 * one that did not spin ran only to queue, sleep and wake (about 0.2 ms
 * under TSan on a loaded machine). */
#define SPUN_CPU_NS  (2ull * 1000000u)

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  CHECK_OK(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts));
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t waiter_cpu_ns;         /* its CPU time in its acquire */
static uint64_t waiter_wall_ns;        /* and the acquire's own time */

static void *waiter(void *arg) {
  waiter_t *w = arg;
  tgvl_pin(w->cpu);
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  counting = true;
  tgvl_parks_on = 1;
  uint64_t cpu0 = thread_cpu_ns(), wall0 = gvl_now_ns();
  CHECK_OK(w->prio > 0 ? gvl_acquire_prio(t, w->prio) : gvl_acquire(t));
  waiter_cpu_ns = thread_cpu_ns() - cpu0;
  waiter_wall_ns = gvl_now_ns() - wall0;
  tgvl_parks_on = 0;
  counting = false;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* The calling thread holds on cpus[0]; a waiter at prio on `cpu` queues;
 * the holder computes without a safe point, then gives the GVL up: for
 * HOLD_NS, or (until_yield) until the waiter has yielded or slept in its
 * wait.  Returns the waiter's yields; its sleeps are in tgvl_parks. */
static int one(int cpu, int prio, bool until_yield) {
  gvl_config_t c = {0};
  atomic_store(&yields, 0);
  atomic_store(&tgvl_parks, 0);
  /* Unpinned as at the start: a GVL made on one CPU does not spin. */
  CHECK_OK(pthread_setaffinity_np(pthread_self(), sizeof all_cpus, &all_cpus));
  c.spin_ns = SPIN_NS;
  c.slice_ns = TGVL_HOUR_NS;
  c.flags = GVL_F_NOINTERACTIVE;
  c.hook = tgvl_hook;
  c.hook_arg = &spin_log;
  tgvl_log_reset(&spin_log);
  CHECK(g = gvl_create(&c));          /* unpinned: the GVL spins */
  tgvl_pin(cpus[0]);
  gvl_thread_t *h = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(h);
  CHECK_OK(gvl_acquire(h));
  waiter_t w = {.cpu = cpu, .prio = prio};
  pthread_t th;
  tgvl_spawn(&th, waiter, &w);
  while (tgvl_count(&spin_log, GVL_EV_READY) < 1) tgvl_sleep_us(100);
  if (until_yield) {
    /* The waiter's spin ends by SPIN_NS; a wait that goes on ten times as
     * long, neither yielding nor sleeping, is a failure of its own. */
    uint64_t limit = gvl_now_ns() + 10 * SPIN_NS;
    while (atomic_load(&yields) == 0 && atomic_load(&tgvl_parks) == 0)
      CHECK(gvl_now_ns() < limit);
  } else {
    uint64_t end = gvl_now_ns() + HOLD_NS;
    while (gvl_now_ns() < end) {
    }
  }
  if (prio > 0)
    CHECK_OK(gvl_check_ints(h));      /* the boost asked: hands over */
  else
    CHECK_OK(gvl_release(h));
  tgvl_join(th);
  if (prio > 0) CHECK_OK(gvl_release(h));
  CHECK_EQ(tgvl_stats(g).handoffs >= 1, 1);
  CHECK_OK(gvl_thread_detach(h));
  CHECK_OK(gvl_destroy(g));
  return atomic_load(&yields);
}

/* It spun through the hold (no sleep), and without a yield.  A holder the
 * machine kept off its CPU past the waiter's whole spin (200 ms; 1 of 8
 * whole-suite runs beside four busy loops) rightly let it sleep: that
 * round says nothing and runs again.  A sleep before the spin's end fails. */
static void boost_elsewhere(void) {
  for (int run = 1; run <= 20; run++) {
    CHECK_EQ(one(cpus[1], GVL_PRIO_BOOST, false), 0);
    if (atomic_load(&tgvl_parks) == 0) return;
    CHECK(waiter_wall_ns >= SPIN_NS);
    printf("boost_elsewhere: run %d, the hold outlasted the spin; again\n", run);
  }
  CHECK(!"twenty runs whose hold outlasted the waiter's spin");
}

/* The waiter yields while it spins.  0 yields from a waiter that slept
 * having run less than a spin's worth says only that the machine did not
 * run it during its spin: run again (a waiter that does not spin at all
 * fails after the last run). */
static void yields_in_spin(int cpu, int prio) {
  int y = 0;
  for (int run = 1; run <= 20; run++) {
    y = one(cpu, prio, true);
    if (y > 0 || waiter_cpu_ns >= SPUN_CPU_NS) break;
    printf("run %d: no yield; the waiter slept after %llu us on its CPU in "
           "its wait (not run during its spin, or no spin); again\n",
           run, (unsigned long long)(waiter_cpu_ns / 1000));
  }
  CHECK_GT(y, 0);
}
static void boost_beside(void) { yields_in_spin(cpus[0], GVL_PRIO_BOOST); }
static void plain_elsewhere(void) { yields_in_spin(cpus[1], GVL_PRIO_NORMAL); }

static const tgvl_case_t cases[] = {
  {"boost_elsewhere", boost_elsewhere},
  {"boost_beside", boost_beside},
  {"plain_elsewhere", plain_elsewhere},
};

int main(int argc, char **argv) {
  tgvl_watchdog(120);
  tgvl_two_cpus(cpus);
  CHECK_OK(sched_getaffinity(0, sizeof all_cpus, &all_cpus));
  if (__rseq_size == 0) {
    printf("skipped: no rseq area (glibc.pthread.rseq=0, or valgrind)\n");
    return 77;
  }
  return tgvl_run_cases(cases, sizeof cases / sizeof cases[0], argc, argv);
}
