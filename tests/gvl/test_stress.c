/* SPDX-License-Identifier: MIT */
/*
 * Stress: 32 threads mix every call for a bounded number of iterations.
 * 28 attached threads pick at random among acquire, acquire_prio (random
 * priority), yield, check_ints, call_without, call_with, mutex/cond and
 * interrupting each other; 4 foreign threads use only gvl_call_with.
 *
 * Asserted: mutual exclusion (a plain counter bumped under the GVL equals
 * the sum of every thread's own count, and an "inside" flag is never found
 * set), the mutex's own exclusion, and no deadlock (the watchdog fails the
 * test).  A short slice and a small boost cap keep preemption, aging and
 * the cap busy.
 */
#include "tgvl.h"

#define NATTACHED 28
#define NFOREIGN 4
#define NTHREADS (NATTACHED + NFOREIGN)

static gvl_t *g;
static gvl_thread_t *handles[NATTACHED]; /* set before the start gate */
static atomic_uint attached;
static atomic_uint gate;
static atomic_uint done;

static unsigned long counter;  /* plain, guarded by the GVL */
static volatile int inside;    /* guarded by the GVL */
static unsigned long mcounter; /* plain, guarded by mtx */
static volatile int minside;   /* guarded by mtx */
static gvl_mutex_t mtx;
static gvl_cond_t cnd;
static int iters;

typedef struct {
  int id;
  unsigned seed;
  unsigned long bumps;   /* critical sections under the GVL */
  unsigned long mbumps;  /* critical sections under mtx */
} worker_t;

static worker_t workers[NTHREADS];

static unsigned rnd(worker_t *w, unsigned n) { return (unsigned)rand_r(&w->seed) % n; }

/* One critical section: must be called holding the GVL. */
static void bump(worker_t *w) {
  CHECK_EQ(inside, 0);
  inside = 1;
  unsigned long c = counter;
  if ((c & 7) == 0) sched_yield(); /* widen the window without the GVL API */
  counter = c + 1;
  inside = 0;
  w->bumps++;
}

static void *blocking(void *arg) {
  worker_t *w = arg;
  if (rnd(w, 2)) sched_yield();
  return arg;
}

static void ubf_nop(void *arg) { (void)arg; }

static void *bump_cb(void *arg) {
  bump(arg);
  return arg;
}

/* An interrupt may land on any safe point or blocking region: EINTR is a
 * legal result there and is simply consumed. */
static void safe_point(gvl_thread_t *t) {
  int r = gvl_check_ints(t);
  CHECK(r == 0 || r == EINTR);
}

static void call_without(worker_t *w, gvl_thread_t *t) {
  errno = 0;
  void *r = gvl_call_without(t, blocking, w, ubf_nop, NULL);
  CHECK(r == w || (r == NULL && errno == EINTR));
  CHECK(gvl_thread_holds(t));
}

static void with_mutex(worker_t *w, gvl_thread_t *t) {
  CHECK_OK(gvl_mutex_lock(t, &mtx));
  unsigned k = rnd(w, 4);
  if (k == 3) {
    /* A cond wait gives the mutex up, so it comes before the section. */
    int r = gvl_cond_timedwait(t, &cnd, &mtx, 50000);
    CHECK(r == 0 || r == ETIMEDOUT);
    CHECK_EQ(gvl_mutex_lock(t, &mtx), EDEADLK);
  }
  CHECK_EQ(minside, 0);
  minside = 1;
  unsigned long c = mcounter;
  switch (k) {
  case 0: CHECK_OK(gvl_yield(t)); break;
  case 1: safe_point(t); break;
  case 2: call_without(w, t); break;
  default: break;
  }
  CHECK_EQ(minside, 1);
  mcounter = c + 1;
  minside = 0;
  w->mbumps++;
  if (rnd(w, 2))
    CHECK_OK(gvl_cond_signal(t, &cnd));
  else
    CHECK_OK(gvl_cond_broadcast(t, &cnd));
  CHECK_OK(gvl_mutex_unlock(t, &mtx));
}

/* One step while holding the GVL. */
static void held_step(worker_t *w, gvl_thread_t *t) {
  bump(w);
  switch (rnd(w, 6)) {
  case 0: CHECK_OK(gvl_yield(t)); break;
  case 1: for (int i = 0; i < 50; i++) safe_point(t); break;
  case 2: call_without(w, t); break;
  case 3: CHECK(gvl_call_with(g, (int)rnd(w, 20) - 5, bump_cb, w) == w); break;
  case 4: with_mutex(w, t); break;
  default: CHECK_OK(gvl_thread_interrupt(handles[rnd(w, NATTACHED)])); break;
  }
  bump(w);
}

static void *attached_main(void *arg) {
  worker_t *w = arg;
  gvl_thread_t *t = gvl_thread_attach(g, (int)rnd(w, 5) - 2);
  CHECK(t != NULL);
  handles[w->id] = t;
  atomic_fetch_add(&attached, 1);
  tgvl_wait_ge(&gate, 1);
  for (int i = 0; i < iters; i++) {
    switch (rnd(w, 3)) {
    case 0: CHECK_OK(gvl_acquire(t)); break;
    case 1: CHECK_OK(gvl_acquire_prio(t, (int)rnd(w, 30) - 10)); break;
    default:
      /* Attached but not holding: call_with acquires around fn. */
      CHECK(gvl_call_with(g, (int)rnd(w, 30) - 10, bump_cb, w) == w);
      continue;
    }
    int steps = 1 + (int)rnd(w, 4);
    for (int s = 0; s < steps; s++) held_step(w, t);
    CHECK_OK(gvl_release(t));
  }
  /* Handles must stay valid for gvl_thread_interrupt until every attached
   * thread has finished its loop; then drain a pending interrupt and go. */
  atomic_fetch_add(&done, 1);
  tgvl_wait_ge(&done, NATTACHED);
  CHECK_OK(gvl_acquire(t));
  safe_point(t);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *foreign_main(void *arg) {
  worker_t *w = arg;
  tgvl_wait_ge(&gate, 1);
  for (int i = 0; i < iters; i++)
    CHECK(gvl_call_with(g, (int)rnd(w, 30) - 10, bump_cb, w) == w);
  return NULL;
}

int main(void) {
  tgvl_watchdog(240);
  iters = 1500 / tgvl_slow();
  gvl_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.slice_ns = 200000;
  cfg.boost_cap_pct = 30;
  cfg.cap_window_ns = 20000000;
  cfg.age_ns = 1000000;
  g = gvl_create(&cfg);
  CHECK(g != NULL);
  CHECK_OK(gvl_mutex_init(&mtx));
  CHECK_OK(gvl_cond_init(&cnd));

  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    workers[i].id = i;
    workers[i].seed = 0x9e3779b9u * (unsigned)(i + 1);
    tgvl_spawn(&th[i], i < NATTACHED ? attached_main : foreign_main,
               &workers[i]);
  }
  tgvl_wait_ge(&attached, NATTACHED);
  atomic_store(&gate, 1);
  for (int i = 0; i < NTHREADS; i++) tgvl_join(th[i]);

  unsigned long want = 0, mwant = 0;
  for (int i = 0; i < NTHREADS; i++) {
    want += workers[i].bumps;
    mwant += workers[i].mbumps;
  }
  CHECK_EQ(counter, want);
  CHECK_EQ(mcounter, mwant);
  gvl_stats_t s = tgvl_stats(g);
  fprintf(stderr, "stress: %lu bumps, %lu mutex sections; acquires %llu "
          "handoffs %llu preemptions %llu boosts %llu refused %llu\n",
          want, mwant, (unsigned long long)s.acquires,
          (unsigned long long)s.handoffs, (unsigned long long)s.preemptions,
          (unsigned long long)s.boosts, (unsigned long long)s.boosts_refused);
  CHECK_GT(s.handoffs, 0);
  CHECK_OK(gvl_cond_destroy(&cnd));
  CHECK_OK(gvl_mutex_destroy(&mtx));
  CHECK_OK(gvl_destroy(g)); /* foreign threads' attachments were cached */
  puts("ok");
  return 0;
}
