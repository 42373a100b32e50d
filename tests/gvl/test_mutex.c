/* SPDX-License-Identifier: MIT */
/*
 * gvl_mutex / gvl_cond: mutual exclusion with 10 and 100 threads while the
 * owner gives the GVL away inside its critical section; FIFO handoff on
 * unlock (no barging: right after unlock the mutex already belongs to the
 * first waiter); signal wakes waiters one at a time in FIFO order, broadcast
 * wakes all; timedwait returns ETIMEDOUT owning the mutex; every wait
 * releases the GVL so another thread runs meanwhile; destroy is EBUSY while
 * a cond wait will take the mutex again; a thread of another GVL gets
 * EINVAL.
 */
#include "tgvl.h"

static gvl_t *g;
static gvl_mutex_t mtx;
static gvl_cond_t cnd;

/* ---- exclusion ------------------------------------------------------------- */

static long counter;          /* guarded by mtx, not by the GVL alone */
static volatile int inside;   /* guarded by mtx */
static int per_thread;

static void *nop(void *arg) {
  sched_yield();
  return arg;
}

static void *contender(void *arg) {
  int id = *(int *)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  for (int i = 0; i < per_thread; i++) {
    CHECK_OK(gvl_mutex_lock(t, &mtx));
    CHECK_EQ(inside, 0);
    inside = 1;
    long c = counter;
    /* Give the GVL away while owning the mutex. */
    switch ((i + id) % 3) {
    case 0: CHECK_OK(gvl_yield(t)); break;
    case 1: CHECK_OK(gvl_check_ints(t)); break;
    default: CHECK(gvl_call_without(t, nop, arg, NULL, NULL) == arg); break;
    }
    CHECK_EQ(inside, 1);
    counter = c + 1;
    inside = 0;
    CHECK_OK(gvl_mutex_unlock(t, &mtx));
    if (i % 4 == 0) CHECK_OK(gvl_yield(t));
  }
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void exclusion(int nthreads, int iters) {
  gvl_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.slice_ns = 100000; /* frequent preemption */
  g = gvl_create(&cfg);
  CHECK(g != NULL);
  CHECK_OK(gvl_mutex_init(&mtx));
  counter = 0;
  per_thread = iters;
  pthread_t *th = calloc((size_t)nthreads, sizeof *th);
  int *ids = calloc((size_t)nthreads, sizeof *ids);
  CHECK(th && ids);
  for (int i = 0; i < nthreads; i++) {
    ids[i] = i;
    tgvl_spawn(&th[i], contender, &ids[i]);
  }
  for (int i = 0; i < nthreads; i++) tgvl_join(th[i]);
  CHECK_EQ(counter, (long)nthreads * iters);
  CHECK_OK(gvl_mutex_destroy(&mtx));
  CHECK_OK(gvl_destroy(g));
  free(th);
  free(ids);
}

/* ---- FIFO handoff ------------------------------------------------------------ */

#define NQ 6
static int order[NQ * 2];       /* guarded by the GVL */
static int norder;              /* guarded by the GVL */
static atomic_uint about_to_block;

/* Sets about_to_block holding the GVL, then blocks in lock (giving the GVL
 * up only there): once the parent holds the GVL again, this thread is
 * queued on the mutex. */
static void *lock_waiter(void *arg) {
  int id = *(int *)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  atomic_fetch_add(&about_to_block, 1);
  CHECK_OK(gvl_mutex_lock(t, &mtx));
  order[norder++] = id;
  CHECK_OK(gvl_mutex_unlock(t, &mtx));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* Start fn in a thread and come back holding the GVL once it is blocked
 * inside a mutex or cond wait. */
static void start_blocked(gvl_thread_t *me, pthread_t *th,
                          void *(*fn)(void *), int *id) {
  unsigned n = atomic_load(&about_to_block);
  CHECK_OK(gvl_release(me));
  tgvl_spawn(th, fn, id);
  tgvl_wait_ge(&about_to_block, n + 1);
  CHECK_OK(gvl_acquire(me));
}

static void fifo_handoff(void) {
  g = gvl_create(NULL);
  CHECK(g != NULL);
  CHECK_OK(gvl_mutex_init(&mtx));
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_mutex_lock(me, &mtx));
  norder = 0;
  atomic_store(&about_to_block, 0);
  pthread_t th[NQ];
  int ids[NQ];
  for (int i = 0; i < NQ; i++) {
    ids[i] = i;
    start_blocked(me, &th[i], lock_waiter, &ids[i]);
  }
  CHECK_EQ(norder, 0);
  CHECK_EQ(gvl_mutex_destroy(&mtx), EBUSY);
  CHECK_OK(gvl_mutex_unlock(me, &mtx));
  /* Handed to waiter 0 already: no barging back in. */
  CHECK_EQ(gvl_mutex_trylock(me, &mtx), EBUSY);
  CHECK_OK(gvl_release(me));
  for (int i = 0; i < NQ; i++) tgvl_join(th[i]);
  CHECK_OK(gvl_acquire(me));
  CHECK_EQ(norder, NQ);
  for (int i = 0; i < NQ; i++) CHECK_EQ(order[i], i);
  CHECK_OK(gvl_mutex_trylock(me, &mtx));
  CHECK_OK(gvl_mutex_unlock(me, &mtx));
  CHECK_OK(gvl_release(me));
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_mutex_destroy(&mtx));
  CHECK_OK(gvl_destroy(g));
}

/* ---- condition variable --------------------------------------------------- */

/* A new GVL with mtx and cnd initialised, and the caller attached to it. */
static gvl_thread_t *fresh_gvl(void) {
  g = gvl_create(NULL);
  CHECK(g != NULL);
  CHECK_OK(gvl_mutex_init(&mtx));
  CHECK_OK(gvl_cond_init(&cnd));
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  return me;
}

/* ... and its end: nothing may be left on mtx, cnd or the GVL. */
static void end_gvl(gvl_thread_t *me) {
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_cond_destroy(&cnd));
  CHECK_OK(gvl_mutex_destroy(&mtx));
  CHECK_OK(gvl_destroy(g));
}

static int woken[NQ * 2];   /* guarded by the GVL */
static int nwoken;          /* guarded by the GVL */

static void *cond_waiter(void *arg) {
  int id = *(int *)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_mutex_lock(t, &mtx));
  atomic_fetch_add(&about_to_block, 1);
  CHECK_OK(gvl_cond_wait(t, &cnd, &mtx));
  /* Returns owning the mutex and holding the GVL. */
  CHECK(gvl_thread_holds(t));
  CHECK_EQ(gvl_mutex_lock(t, &mtx), EDEADLK);
  woken[nwoken++] = id;
  CHECK_OK(gvl_mutex_unlock(t, &mtx));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* Let other threads run for a bounded number of GVL round trips. */
static void let_run(gvl_thread_t *me, int rounds) {
  for (int i = 0; i < rounds; i++) {
    CHECK_OK(gvl_release(me));
    sched_yield();
    CHECK_OK(gvl_acquire(me));
  }
}

static void wait_woken(gvl_thread_t *me, int n) {
  while (nwoken < n) {
    CHECK_OK(gvl_release(me));
    tgvl_sleep_us(200);
    CHECK_OK(gvl_acquire(me));
  }
}

static void cond_signal_broadcast(void) {
  gvl_thread_t *me = fresh_gvl();
  CHECK_OK(gvl_acquire(me));
  nwoken = 0;
  atomic_store(&about_to_block, 0);
  pthread_t th[2 * NQ];
  int ids[2 * NQ];
  for (int i = 0; i < NQ; i++) {
    ids[i] = i;
    start_blocked(me, &th[i], cond_waiter, &ids[i]);
  }
  CHECK_EQ(gvl_cond_destroy(&cnd), EBUSY);
  /* signal: one at a time, first come first. */
  for (int i = 0; i < NQ; i++) {
    CHECK_OK(gvl_mutex_lock(me, &mtx));
    CHECK_OK(gvl_cond_signal(me, &cnd));
    CHECK_OK(gvl_mutex_unlock(me, &mtx));
    wait_woken(me, i + 1);
    let_run(me, 50);
    CHECK_EQ(nwoken, i + 1); /* one signal, one waiter */
    CHECK_EQ(woken[i], i);
  }
  for (int i = 0; i < NQ; i++) tgvl_join(th[i]);

  /* broadcast: all of them, still in arrival order for the mutex. */
  for (int i = NQ; i < 2 * NQ; i++) {
    ids[i] = i;
    start_blocked(me, &th[i], cond_waiter, &ids[i]);
  }
  CHECK_OK(gvl_cond_broadcast(me, &cnd));
  wait_woken(me, 2 * NQ);
  for (int i = NQ; i < 2 * NQ; i++) CHECK_EQ(woken[i], i);
  for (int i = NQ; i < 2 * NQ; i++) tgvl_join(th[i]);

  CHECK_OK(gvl_release(me));
  end_gvl(me);
}

/* ---- timedwait, and the GVL is free while waiting ----------------------- */

static volatile int ran_meanwhile; /* guarded by the GVL */
static atomic_uint waiting_now;

static void *runner(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  tgvl_wait_ge(&waiting_now, 1);
  CHECK_OK(gvl_acquire(t));
  ran_meanwhile = 1;
  CHECK_OK(gvl_mutex_trylock(t, &mtx)); /* the waiter gave the mutex up */
  CHECK_OK(gvl_cond_signal(t, &cnd));
  CHECK_OK(gvl_mutex_unlock(t, &mtx));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void timed(void) {
  gvl_thread_t *me = fresh_gvl();
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_mutex_lock(me, &mtx));
  CHECK_EQ(gvl_cond_timedwait(me, &cnd, &mtx, 1000000), ETIMEDOUT);
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(gvl_mutex_lock(me, &mtx), EDEADLK);
  CHECK_EQ(gvl_cond_timedwait(me, &cnd, &mtx, 0), ETIMEDOUT); /* at once */
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(gvl_mutex_lock(me, &mtx), EDEADLK);
  CHECK_OK(gvl_cond_destroy(&cnd)); /* nobody left linked on it */
  CHECK_OK(gvl_cond_init(&cnd));

  /* A wait that another thread ends: the GVL and the mutex are free
   * while waiting (an hour's timeout: only the signal can end it). */
  ran_meanwhile = 0;
  atomic_store(&waiting_now, 0);
  pthread_t th;
  tgvl_spawn(&th, runner, NULL);
  atomic_store(&waiting_now, 1);
  while (!ran_meanwhile)
    CHECK_OK(gvl_cond_timedwait(me, &cnd, &mtx, TGVL_HOUR_NS));
  CHECK_EQ(gvl_mutex_lock(me, &mtx), EDEADLK);
  CHECK_OK(gvl_mutex_unlock(me, &mtx));
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  end_gvl(me);
}

/* ---- destroy while a gvl_cond wait uses the mutex ---------------------------
 * The waiter gave the mutex up for its wait but takes it again before it
 * returns: destroy is EBUSY meanwhile, and the wait, signalled or timed
 * out, returns owning the mutex. */
static int cw_timed, cw_rc;

static void *cw_waiter(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_mutex_lock(t, &mtx));
  atomic_fetch_add(&about_to_block, 1);
  cw_rc = cw_timed ? gvl_cond_timedwait(t, &cnd, &mtx, 20000000)
                   : gvl_cond_wait(t, &cnd, &mtx);
  CHECK_EQ(gvl_mutex_trylock(t, &mtx), EDEADLK);
  CHECK_OK(gvl_mutex_unlock(t, &mtx));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void destroy_during_cond_wait(void) {
  for (cw_timed = 0; cw_timed < 2; cw_timed++) {
    gvl_thread_t *me = fresh_gvl();
    CHECK_OK(gvl_acquire(me));
    pthread_t th;
    start_blocked(me, &th, cw_waiter, NULL);
    /* Free, and in use by the wait. */
    CHECK_OK(gvl_mutex_trylock(me, &mtx));
    CHECK_OK(gvl_mutex_unlock(me, &mtx));
    CHECK_EQ(gvl_mutex_destroy(&mtx), EBUSY);
    if (!cw_timed) CHECK_OK(gvl_cond_signal(me, &cnd));
    CHECK_OK(gvl_release(me));
    tgvl_join(th);
    CHECK_EQ(cw_rc, cw_timed ? ETIMEDOUT : 0);
    end_gvl(me);   /* destroy succeeds once the wait is over */
  }
}

/* ---- one GVL per mutex and condition -----------------------------------------
 * Their state is guarded by the GVL, so a thread of another GVL is refused
 * (EINVAL) and neither GVL is disturbed; after destroy and init they may
 * belong to another. */
static gvl_t *g_other;
static gvl_mutex_t spare_m;   /* never used by g's threads before */
static gvl_cond_t spare_c;

static void *other_gvl_user(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g_other, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_EQ(gvl_mutex_lock(t, &mtx), EINVAL);
  CHECK_EQ(gvl_mutex_trylock(t, &mtx), EINVAL);
  CHECK_EQ(gvl_mutex_unlock(t, &mtx), EINVAL);
  CHECK_EQ(gvl_cond_signal(t, &cnd), EINVAL);
  CHECK_EQ(gvl_cond_broadcast(t, &cnd), EINVAL);
  CHECK_EQ(gvl_cond_timedwait(t, &cnd, &mtx, 1000), EINVAL);
  /* Calls that fail, or find nothing to do, bind nothing. */
  CHECK_EQ(gvl_cond_wait(t, &spare_c, &mtx), EINVAL);
  CHECK_OK(gvl_cond_signal(t, &spare_c));
  CHECK_EQ(gvl_mutex_unlock(t, &spare_m), EPERM);
  CHECK(gvl_thread_holds(t));
  /* This GVL still works for everyone. */
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *other_gvl_after_init(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g_other, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_mutex_lock(t, &mtx));
  CHECK_EQ(gvl_cond_timedwait(t, &cnd, &mtx, 1000), ETIMEDOUT);
  CHECK_OK(gvl_mutex_unlock(t, &mtx));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void one_gvl_each(void) {
  gvl_thread_t *me = fresh_gvl();
  CHECK(g_other = gvl_create(NULL));
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_mutex_init(&spare_m));
  CHECK_OK(gvl_cond_init(&spare_c));
  CHECK_OK(gvl_mutex_lock(me, &mtx));         /* binds both to g */
  CHECK_EQ(gvl_cond_timedwait(me, &cnd, &mtx, 1000), ETIMEDOUT);
  pthread_t th;
  tgvl_spawn(&th, other_gvl_user, NULL);
  tgvl_join(th);
  CHECK_EQ(gvl_mutex_lock(me, &mtx), EDEADLK); /* still ours, untouched */
  /* The other GVL's failed calls left spare_m and spare_c free for g. */
  CHECK_OK(gvl_mutex_lock(me, &spare_m));
  CHECK_EQ(gvl_cond_timedwait(me, &spare_c, &spare_m, 1000), ETIMEDOUT);
  CHECK_OK(gvl_mutex_unlock(me, &spare_m));
  CHECK_OK(gvl_cond_destroy(&spare_c));
  CHECK_OK(gvl_mutex_destroy(&spare_m));
  CHECK_OK(gvl_mutex_unlock(me, &mtx));
  CHECK_OK(gvl_release(me));
  CHECK_OK(gvl_cond_destroy(&cnd));
  CHECK_OK(gvl_mutex_destroy(&mtx));
  CHECK_OK(gvl_mutex_init(&mtx));
  CHECK_OK(gvl_cond_init(&cnd));
  tgvl_spawn(&th, other_gvl_after_init, NULL);
  tgvl_join(th);
  CHECK_OK(gvl_destroy(g_other));
  end_gvl(me);
}

/* ---- a wait forgets the boost ------------------------------------------------
 * A thread whose hold was boosted blocks in gvl_mutex_lock or gvl_cond_wait:
 * it is queued again at its base priority, and that is the priority its
 * hold has from then on, so a gvl_call_without after it reacquires as a
 * normal hold (no boost counted), as gvl_region_end promises: "at the
 * priority of the hold that gvl_region_begin released". */
static void *noop(void *arg) { return arg; }

static void *boosted_blocker(void *arg) {
  int use_cond = *(int *)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
  if (use_cond) CHECK_OK(gvl_mutex_lock(t, &mtx));
  atomic_fetch_add(&about_to_block, 1);
  if (use_cond) CHECK_OK(gvl_cond_wait(t, &cnd, &mtx));
  else CHECK_OK(gvl_mutex_lock(t, &mtx));
  uint64_t b0 = tgvl_tstats(t).boosts;
  CHECK(gvl_call_without(t, noop, t, NULL, NULL) == t);
  CHECK_EQ(tgvl_tstats(t).boosts, b0);
  CHECK_OK(gvl_mutex_unlock(t, &mtx));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void waits_forget_boost(void) {
  gvl_thread_t *me = fresh_gvl();
  for (int use_cond = 0; use_cond < 2; use_cond++) {
    pthread_t th;
    CHECK_OK(gvl_acquire(me));
    if (!use_cond) CHECK_OK(gvl_mutex_lock(me, &mtx));
    start_blocked(me, &th, boosted_blocker, &use_cond);
    if (use_cond) {
      CHECK_OK(gvl_mutex_lock(me, &mtx));
      CHECK_OK(gvl_cond_signal(me, &cnd));
    }
    CHECK_OK(gvl_mutex_unlock(me, &mtx));   /* queues it at its base prio */
    CHECK_OK(gvl_release(me));
    tgvl_join(th);
  }
  end_gvl(me);
}

/* ---- owning and interrupts -----------------------------------------------------
 * A thread may not detach while it owns a gvl_mutex (EBUSY), however it
 * came to own it, and may once it unlocked.  An interrupt does not end a
 * wait in gvl_mutex_lock: it stays pending for the next safe point. */
static gvl_thread_t *_Atomic blocked_t;

static void *owner_detach(void *arg) {
  int *step = arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  atomic_store(&blocked_t, t);
  CHECK_OK(gvl_acquire(t));
  atomic_fetch_add(&about_to_block, 1);
  CHECK_OK(gvl_mutex_lock(t, &mtx));   /* handed over by the unlock */
  CHECK_OK(gvl_release(t));
  CHECK_EQ(gvl_thread_detach(t), EBUSY);
  CHECK_OK(gvl_acquire(t));
  CHECK_EQ(gvl_check_ints(t), EINTR);  /* posted while it waited */
  CHECK_OK(gvl_check_ints(t));
  CHECK_OK(gvl_mutex_unlock(t, &mtx));
  CHECK_OK(gvl_release(t));
  *step = 1;
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void owning_and_interrupts(void) {
  gvl_thread_t *me = fresh_gvl();
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_mutex_trylock(me, &mtx));
  CHECK_EQ(gvl_mutex_trylock(me, &mtx), EDEADLK);
  CHECK_OK(gvl_release(me));
  CHECK_EQ(gvl_thread_detach(me), EBUSY);   /* owns mtx */
  CHECK_OK(gvl_acquire(me));
  /* A timed-out cond wait returns owning the mutex again. */
  CHECK_EQ(gvl_cond_timedwait(me, &cnd, &mtx, 1000), ETIMEDOUT);
  CHECK_OK(gvl_release(me));
  CHECK_EQ(gvl_thread_detach(me), EBUSY);
  CHECK_OK(gvl_acquire(me));
  pthread_t th;
  int step = 0;
  start_blocked(me, &th, owner_detach, &step);  /* waits for mtx */
  CHECK_OK(gvl_thread_interrupt(atomic_load(&blocked_t)));
  CHECK_OK(gvl_mutex_unlock(me, &mtx));
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  CHECK_EQ(step, 1);
  end_gvl(me);
}

int main(void) {
  tgvl_watchdog(120);
  int slow = tgvl_slow();
  exclusion(10, 2000 / slow);
  exclusion(100, 200 / slow);
  fifo_handoff();
  cond_signal_broadcast();
  timed();
  destroy_during_cond_wait();
  one_gvl_each();
  waits_forget_boost();
  owning_and_interrupts();
  puts("ok");
  return 0;
}
