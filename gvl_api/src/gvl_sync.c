/* SPDX-License-Identifier: MIT */
/*
 * gvl_sync.c -- a mutex and condition variable for host code.
 *
 * Their state is guarded by the GVL itself: every call needs it held, so
 * no extra lock is taken.  A thread that must block releases the GVL and
 * sleeps until it is handed the GVL again; whoever makes it runnable
 * (unlock, signal) queues it for the GVL on its behalf.  That way a mutex
 * handoff never wakes the waiter only to make it wait for the GVL.
 *
 * Being guarded by one GVL, each belongs to one: the first lock or wait
 * binds it (an atomic compare-and-swap on m->g or c->g), and the calls of
 * a thread of another GVL are refused having read only magic (written at
 * init and destroy) and that word.
 */
#include "gvl_int.h"

#define MUTEX_MAGIC 0x67766d75u  /* "gvmu" */
#define COND_MAGIC  0x67766376u  /* "gvcv" */

/* ---- FIFO of blocked threads (GVL held) ------------------------------------ */

static void wq_push(gvl__waitq_t *q, gvl_thread_t *t) {
  t->mq = q;
  t->mnext = NULL;
  t->mprev = q->tail;
  if (q->tail) q->tail->mnext = t; else q->head = t;
  q->tail = t;
}

void gvl__wq_leave(gvl__waitq_t *q, gvl_thread_t *t) {
  if (t->mprev) t->mprev->mnext = t->mnext; else q->head = t->mnext;
  if (t->mnext) t->mnext->mprev = t->mprev; else q->tail = t->mprev;
  t->mnext = t->mprev = NULL;
  t->mq = NULL;
}

static gvl_thread_t *wq_pop(gvl__waitq_t *q) {
  gvl_thread_t *t = q->head;
  if (t) gvl__wq_leave(q, t);
  return t;
}

/* ---- checks -------------------------------------------------------------------- */

static int held(gvl_thread_t *t) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  return atomic_load_explicit(&t->holding, memory_order_relaxed) ? 0 : EPERM;
}

/* May a thread of g use the object whose GVL *slot names?  Yes if it
 * names g or none yet.  bind makes it name g: only calls that take the
 * object (lock, trylock, wait) do, and only once every check passed, so a
 * failed or empty call (an unlock by a non-owner, a signal nobody waits
 * for) ties nothing to a GVL. */
static int bound_ok(gvl_t **slot, gvl_t *g) {
  gvl_t *cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  return cur == NULL || cur == g ? 0 : EINVAL;
}

static int bind(gvl_t **slot, gvl_t *g) {
  gvl_t *cur = NULL;
  if (__atomic_compare_exchange_n(slot, &cur, g, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    return 0;
  return cur == g ? 0 : EINVAL;   /* another GVL's thread bound it first */
}

static int check_m(gvl_thread_t *t, gvl_mutex_t *m) {
  if (!m || m->magic != MUTEX_MAGIC) return EINVAL;
  int rc = held(t);
  return rc ? rc : bound_ok(&m->g, t->g);
}

/* ... and for a call that takes m (lock, trylock): binds it once they pass. */
static int check_take_m(gvl_thread_t *t, gvl_mutex_t *m) {
  int rc = check_m(t, m);
  return rc ? rc : bind(&m->g, t->g);
}

static int check_c(gvl_thread_t *t, gvl_cond_t *c) {
  if (!c || c->magic != COND_MAGIC) return EINVAL;
  int rc = held(t);
  return rc ? rc : bound_ok(&c->g, t->g);
}

/* ---- mutex ------------------------------------------------------------------------ */

int gvl_mutex_init(gvl_mutex_t *m) {
  if (!m) return EINVAL;
  m->owner = NULL;
  m->waiters.head = m->waiters.tail = NULL;
  m->cwaits = 0;
  m->magic = MUTEX_MAGIC;
  __atomic_store_n(&m->g, NULL, __ATOMIC_RELEASE);
  return 0;
}

int gvl_mutex_destroy(gvl_mutex_t *m) {
  if (!m || m->magic != MUTEX_MAGIC) return EINVAL;
  if (m->owner || m->waiters.head || m->cwaits) return EBUSY;
  m->magic = 0;
  return 0;
}

/* m's owner becomes t (NULL: nobody), keeping each thread's count of the
 * mutexes it owns, which gvl_thread_detach checks.  The GVL is held. */
static void set_owner(gvl_mutex_t *m, gvl_thread_t *t) {
  if (m->owner) m->owner->mutexes--;
  if (t) t->mutexes++;
  m->owner = t;
}

/* Give m to w and queue w for the GVL.  The caller holds the GVL. */
static void grant_mutex(gvl_mutex_t *m, gvl_thread_t *w) {
  set_owner(m, w);
  gvl__enqueue_other(w->g, w, w->prio);
}

static void unlock_m(gvl_mutex_t *m) {
  gvl_thread_t *w = wq_pop(&m->waiters);
  if (w) grant_mutex(m, w);
  else set_owner(m, NULL);
}

/* t, blocked in a wait, has been queued for the GVL by another thread
 * and handed it: its READY, at the time it was queued (t->qtime, written
 * before the grant), then RESUMED.  The hook runs on t, as promised. */
static void resume_from_wait(gvl_thread_t *t, uint64_t t0) {
  gvl__hook_at(t->g, t, GVL_EV_READY, t->qtime);
  gvl__after_acquire(t, t0);
}

/* Give up the GVL and sleep until someone has queued us for it and it has
 * been handed over.  Never a spin: the mutex comes first, and its owner
 * may keep it for long. */
static void block(gvl_thread_t *t) {
  uint64_t t0 = gvl__now();
  gvl__drop_for_wait(t);
  (void)gvl__wait_granted_until(t->g, t, 0);
  resume_from_wait(t, t0);
}

int gvl_mutex_lock(gvl_thread_t *t, gvl_mutex_t *m) {
  int rc = check_take_m(t, m);
  if (rc) return rc;
  if (m->owner == t) return EDEADLK;
  if (!m->owner) {
    set_owner(m, t);
    return 0;
  }
  wq_push(&m->waiters, t);
  block(t);                    /* returns owning m: unlock handed it over */
  return 0;
}

int gvl_mutex_trylock(gvl_thread_t *t, gvl_mutex_t *m) {
  int rc = check_take_m(t, m);
  if (rc) return rc;
  if (m->owner) return m->owner == t ? EDEADLK : EBUSY;
  set_owner(m, t);
  return 0;
}

int gvl_mutex_unlock(gvl_thread_t *t, gvl_mutex_t *m) {
  int rc = check_m(t, m);
  if (rc) return rc;
  if (m->owner != t) return EPERM;
  unlock_m(m);
  return 0;
}

/* ---- condition variable ---------------------------------------------------------- */

int gvl_cond_init(gvl_cond_t *c) {
  if (!c) return EINVAL;
  c->waiters.head = c->waiters.tail = NULL;
  c->magic = COND_MAGIC;
  __atomic_store_n(&c->g, NULL, __ATOMIC_RELEASE);
  return 0;
}

int gvl_cond_destroy(gvl_cond_t *c) {
  if (!c || c->magic != COND_MAGIC) return EINVAL;
  if (c->waiters.head) return EBUSY;
  c->magic = 0;
  return 0;
}

/* The end of t's wait on a condition with m: t owns m again, and m may
 * be destroyed once nobody else waits with it.  The GVL is held. */
static int cond_done(gvl_thread_t *t, gvl_mutex_t *m, int rc) {
  t->cmutex = NULL;
  atomic_signal_fence(memory_order_seq_cst);  /* see cond_wait */
  m->cwaits--;
  return rc;
}

/* A waiter leaves the condition either signalled (the signaller moves it
 * to the mutex or the GVL queue) or timed out (it reacquires by itself).
 * The CAS on cstate decides which, exactly once.  From the start of the
 * wait to its end t->cmutex names m and m->cwaits counts t, so that m
 * cannot be destroyed under a waiter that will take it again. */
static int cond_wait(gvl_thread_t *t, gvl_cond_t *c, gvl_mutex_t *m,
                     uint64_t deadline) {
  int rc = check_c(t, c);
  if (!rc) rc = check_m(t, m);
  if (rc) return rc;
  if (m->owner != t) return EPERM;
  if ((rc = bind(&c->g, t->g)) != 0) return rc;   /* m is bound: t owns it */
  uint64_t t0 = gvl__now();
  atomic_store_explicit(&t->cstate, GVL__CW_WAITING, memory_order_relaxed);
  t->cwait = c;
  /* cwaits counts t before cmutex names m, and cmutex is cleared first at
   * the end: a fork made meanwhile by a thread without the GVL leaves the
   * child uncounting only waits that were counted. */
  m->cwaits++;
  atomic_signal_fence(memory_order_seq_cst);
  t->cmutex = m;
  wq_push(&c->waiters, t);
  unlock_m(m);
  gvl__drop_for_wait(t);
  if (gvl__wait_granted_until(t->g, t, deadline)) {
    resume_from_wait(t, t0);
    return cond_done(t, m, 0);
  }
  int exp = GVL__CW_WAITING;
  if (!atomic_compare_exchange_strong(&t->cstate, &exp, GVL__CW_TIMEDOUT)) {
    /* Signalled meanwhile: the grant comes once the mutex's owner lets go,
     * which may be long; sleep for it. */
    (void)gvl__wait_granted_until(t->g, t, 0);
    resume_from_wait(t, t0);
    return cond_done(t, m, 0);
  }
  t->wait_asleep = true;   /* still part of a gvl_cond wait: no spin */
  (void)gvl__acquire(t, t->prio, false);
  t->wait_asleep = false;
  if (t->cwait) {                  /* still linked: nobody popped us */
    gvl__wq_leave(&c->waiters, t);
    t->cwait = NULL;
  }
  /* m is still initialised (cwaits) and bound to t's GVL: this succeeds. */
  rc = gvl_mutex_lock(t, m);
  gvl__assert(rc == 0);
  return cond_done(t, m, ETIMEDOUT);
}

int gvl_cond_wait(gvl_thread_t *t, gvl_cond_t *c, gvl_mutex_t *m) {
  return cond_wait(t, c, m, 0);
}

int gvl_cond_timedwait(gvl_thread_t *t, gvl_cond_t *c, gvl_mutex_t *m,
                       uint64_t timeout_ns) {
  /* A timeout past the clock's range waits for the signal alone. */
  uint64_t now = gvl__now();
  uint64_t d = timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
  return cond_wait(t, c, m, d);
}

/* Wake the first waiter that has not timed out.  Returns 1 if one was. */
static int signal_one(gvl_cond_t *c) {
  gvl_thread_t *w;
  while ((w = wq_pop(&c->waiters))) {
    int exp = GVL__CW_WAITING;
    w->cwait = NULL;
    if (!atomic_compare_exchange_strong(&w->cstate, &exp, GVL__CW_SIGNALED))
      continue;                    /* timed out: it reacquires by itself */
    gvl_mutex_t *m = w->cmutex;
    if (m->owner) wq_push(&m->waiters, w);
    else grant_mutex(m, w);
    return 1;
  }
  return 0;
}

int gvl_cond_signal(gvl_thread_t *t, gvl_cond_t *c) {
  int rc = check_c(t, c);
  if (rc) return rc;
  (void)signal_one(c);
  return 0;
}

int gvl_cond_broadcast(gvl_thread_t *t, gvl_cond_t *c) {
  int rc = check_c(t, c);
  if (rc) return rc;
  while (signal_one(c)) {
  }
  return 0;
}
