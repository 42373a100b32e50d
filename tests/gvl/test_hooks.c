/* SPDX-License-Identifier: MIT */
/*
 * Instrumentation hooks in a scripted scenario.  Per thread, READY/RESUMED/
 * SUSPENDED must be balanced and well ordered:
 *   - every READY is followed by exactly one RESUMED before the next READY
 *     (a waiter either gets the GVL or is still waiting);
 *   - a RESUMED is never reported while the thread is known to hold;
 *   - at the end, #READY == #RESUMED.
 * READY/RESUMED/SUSPENDED are reported on the thread concerned, with that
 * thread's handle; PREEMPT_REQ on the requesting thread about the holder.
 * Timestamps never go backwards on one thread.  The exact counts of the
 * script are checked too.  Then gvl_set_hook against threads that are
 * calling hooks: a cb is only ever called with the arg it was set with.
 */
#include "tgvl.h"

static gvl_t *g;
static tgvl_log_t hlog;
static gvl_thread_t *ta, *tb;
static pthread_t pa, pb;
static atomic_uint step;
static volatile int flag; /* guarded by the GVL */

static void *blocker(void *arg) { return arg; }

/* B: waits for A twice (once normal, once boosted), blocks once.  `step`
 * sequences the script between A (main) and B. */
static void *thread_b(void *arg) {
  (void)arg;
  tb = gvl_thread_attach(g, 0);
  CHECK(tb != NULL);
  pb = pthread_self();
  atomic_store(&step, 1);
  tgvl_wait_ge(&step, 2);               /* A holds */
  CHECK_OK(gvl_acquire(tb));            /* READY, RESUMED (A yields) */
  CHECK(gvl_call_without(tb, blocker, &step, NULL, NULL) == &step);
  CHECK_OK(gvl_release(tb));            /* SUSPENDED */
  atomic_store(&step, 3);
  tgvl_wait_ge(&step, 4);               /* A holds and spins */
  CHECK_OK(gvl_acquire_prio(tb, GVL_PRIO_BOOST)); /* READY, PREEMPT_REQ(A) */
  flag = 1;
  CHECK_OK(gvl_release(tb));            /* SUSPENDED */
  atomic_store(&step, 5);
  CHECK_OK(gvl_thread_detach(tb));
  return NULL;
}

/* Check one thread's READY/RESUMED/SUSPENDED sequence: RESUMED (every
 * acquisition) and SUSPENDED (every give-up) alternate, starting with
 * RESUMED; a READY (the thread had to wait) comes only while not holding and
 * is followed directly by that thread's RESUMED. */
static void check_thread(gvl_thread_t *t, pthread_t self, unsigned *nready,
                         unsigned *nresumed, unsigned *nsusp) {
  int waiting = 0, holding = 0;
  uint64_t last_ns = 0;
  *nready = *nresumed = *nsusp = 0;
  unsigned n = atomic_load(&hlog.n);
  CHECK_LE(n, TGVL_LOG_MAX);
  for (unsigned i = 0; i < n; i++) {
    tgvl_event_t *e = &hlog.ev[i];
    if (e->ev == GVL_EV_PREEMPT_REQ || e->ev == GVL_EV_OWNER_DIED) continue;
    if (e->t != t) continue;
    CHECK(pthread_equal(e->self, self)); /* on the thread concerned */
    CHECK_GE(e->ns, last_ns);
    last_ns = e->ns;
    switch (e->ev) {
    case GVL_EV_READY:
      CHECK_EQ(waiting, 0);
      CHECK_EQ(holding, 0);
      waiting = 1;
      (*nready)++;
      break;
    case GVL_EV_RESUMED:
      CHECK_EQ(holding, 0);
      waiting = 0;
      holding = 1;
      (*nresumed)++;
      break;
    case GVL_EV_SUSPENDED:
      CHECK_EQ(waiting, 0);
      CHECK_EQ(holding, 1);
      holding = 0;
      (*nsusp)++;
      break;
    default:
      CHECK(0);
    }
  }
  CHECK_EQ(waiting, 0);
  CHECK_EQ(holding, 0);
  CHECK_EQ(*nresumed, *nsusp);
  CHECK_LE(*nready, *nresumed);
}

/* ---- hooks run outside internal locks ------------------------------------ *
 * The hook blocks on a plain mutex M (for one chosen event) that the other
 * thread holds while it calls into the GVL.  Had the hook been called with
 * an internal lock held, that call would wait on the hook, which waits on
 * M: a deadlock that the watchdog turns into a failure. */
static pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint in_hook;
static atomic_int block_ev;

static void blocking_hook(void *arg, gvl_thread_t *t, gvl_event_t ev,
                          uint64_t now_ns) {
  (void)arg;
  (void)t;
  (void)now_ns;
  int expected = (int)ev;
  if (atomic_compare_exchange_strong(&block_ev, &expected, 0)) {
    atomic_store(&in_hook, 1);
    pthread_mutex_lock(&hook_mu);
    pthread_mutex_unlock(&hook_mu);
  }
}

static void *contender(void *arg) {
  int prio = *(int *)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire_prio(t, prio));
  flag = 1;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void hook_outside_locks(gvl_event_t ev, int prio) {
  g = gvl_create(NULL);
  CHECK(g != NULL);
  CHECK_OK(gvl_set_hook(g, blocking_hook, NULL));
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  flag = 0;
  atomic_store(&in_hook, 0);
  atomic_store(&block_ev, (int)ev);
  CHECK_OK(pthread_mutex_lock(&hook_mu));
  pthread_t th;
  tgvl_spawn(&th, contender, &prio);
  tgvl_wait_ge(&in_hook, 1); /* the contender sits in its hook */
  /* The release to a queued waiter needs the internal lock.  (No safe
   * point here: with a request pending it would hand over and wait for
   * the contender, which waits for us.) */
  CHECK_OK(gvl_release(me));
  CHECK_OK(pthread_mutex_unlock(&hook_mu));
  tgvl_join(th);
  CHECK_EQ(flag, 1);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* ---- a hook is called with its own arg ---------------------------------------
 * hook_a is only ever set with &ctx_a, hook_b with &ctx_b; threads that
 * contend for the GVL call whichever they see while the main thread keeps
 * changing it (and removing it).  The old pair for a while is allowed; a
 * cb with the other's arg is not. */
static gvl_t *pg;
static int ctx_a, ctx_b;
static atomic_int pair_stop;
static atomic_ulong pair_bad, pair_calls;

static void hook_a(void *arg, gvl_thread_t *t, gvl_event_t ev, uint64_t n) {
  (void)t, (void)ev, (void)n;
  atomic_fetch_add(&pair_calls, 1);
  if (arg != &ctx_a) atomic_fetch_add(&pair_bad, 1);
}

static void hook_b(void *arg, gvl_thread_t *t, gvl_event_t ev, uint64_t n) {
  (void)t, (void)ev, (void)n;
  atomic_fetch_add(&pair_calls, 1);
  if (arg != &ctx_b) atomic_fetch_add(&pair_bad, 1);
}

static void *pair_worker(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(pg, 0);
  CHECK(t != NULL);
  while (!atomic_load(&pair_stop)) {
    CHECK_OK(gvl_acquire(t));
    CHECK_OK(gvl_release(t));
  }
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

static void hook_pairs(void) {
  pthread_t th[2];
  pg = gvl_create(NULL);
  CHECK(pg != NULL);
  for (int i = 0; i < 2; i++) tgvl_spawn(&th[i], pair_worker, NULL);
  /* Enough hook calls to have raced with the changes; past the rounds,
   * each change waits a moment, since g->mu taken back to back can starve
   * the workers' contended acquires where threads run one at a time
   * (valgrind). */
  long rounds = 300000 / (tgvl_slow() * tgvl_slow());
  for (long i = 0; i < rounds || atomic_load(&pair_calls) < 1000; i++) {
    if (i >= rounds) tgvl_sleep_us(1000);
    switch (i % 3) {
      case 0: CHECK_OK(gvl_set_hook(pg, hook_a, &ctx_a)); break;
      case 1: CHECK_OK(gvl_set_hook(pg, hook_b, &ctx_b)); break;
      default: CHECK_OK(gvl_set_hook(pg, NULL, NULL)); break;
    }
  }
  atomic_store(&pair_stop, 1);
  for (int i = 0; i < 2; i++) tgvl_join(th[i]);
  unsigned long bad = atomic_load(&pair_bad);
  CHECK_EQ(bad, 0);
  CHECK_OK(gvl_destroy(pg));
}

int main(void) {
  tgvl_watchdog(60);
  gvl_config_t cfg = tgvl_strict_config(TGVL_HOUR_NS, &hlog);
  g = gvl_create(&cfg);
  CHECK(g != NULL);
  ta = gvl_thread_attach(g, 0);
  CHECK(ta != NULL);
  pa = pthread_self();

  pthread_t th;
  tgvl_spawn(&th, thread_b, NULL);
  tgvl_wait_ge(&step, 1);
  CHECK_OK(gvl_acquire(ta));                  /* uncontended */
  atomic_store(&step, 2);
  tgvl_wait_ge(&hlog.count[GVL_EV_READY], 1); /* B queued */
  CHECK_OK(gvl_yield(ta));   /* SUSPENDED, READY ... RESUMED after B */
  CHECK_OK(gvl_release(ta)); /* let B finish its first round */
  tgvl_wait_ge(&step, 3);
  CHECK_OK(gvl_acquire(ta)); /* uncontended again */
  flag = 0;
  atomic_store(&step, 4);
  while (!flag) CHECK_OK(gvl_check_ints(ta)); /* B's boost preempts A */
  CHECK_OK(gvl_release(ta));
  tgvl_wait_ge(&step, 5);
  tgvl_join(th);

  unsigned r, m, s;
  check_thread(ta, pa, &r, &m, &s);
  /* A: acquire; yield (waits behind B); release; acquire; preempted by
   * B's boost (waits); release. */
  CHECK_EQ(r, 2);
  CHECK_EQ(m, 4);
  CHECK_EQ(s, 4);
  check_thread(tb, pb, &r, &m, &s);
  /* B: acquire (waits); blocking region (reacquire may wait); release;
   * boosted acquire (waits); release. */
  CHECK_GE(r, 2);
  CHECK_LE(r, 3);
  CHECK_EQ(m, 3);
  CHECK_EQ(s, 3);

  CHECK_EQ(tgvl_count(&hlog, GVL_EV_PREEMPT_REQ), 1);
  for (unsigned i = 0; i < atomic_load(&hlog.n); i++)
    if (hlog.ev[i].ev == GVL_EV_PREEMPT_REQ) {
      CHECK(hlog.ev[i].t == ta);
      CHECK(pthread_equal(hlog.ev[i].self, pb));
    }
  CHECK_EQ(tgvl_count(&hlog, GVL_EV_OWNER_DIED), 0);

  /* With the hook removed and every thread quiet, no more events. */
  CHECK_OK(gvl_set_hook(g, NULL, NULL));
  unsigned before = atomic_load(&hlog.n);
  CHECK_OK(gvl_acquire(ta));
  CHECK_OK(gvl_release(ta));
  CHECK_EQ(atomic_load(&hlog.n), before);
  CHECK_OK(gvl_thread_detach(ta));
  CHECK_OK(gvl_destroy(g));

  hook_outside_locks(GVL_EV_READY, 0);
  hook_outside_locks(GVL_EV_PREEMPT_REQ, GVL_PRIO_BOOST);
  hook_pairs();
  puts("ok");
  return 0;
}
