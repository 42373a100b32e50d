/* SPDX-License-Identifier: MIT */
/*
 * gvl_thread.c -- attaching threads, blocking regions (gvl_call_without,
 * interrupts), foreign threads (gvl_call_with), threads that exit holding
 * the GVL, and fork().
 *
 * Two pieces of process-wide state, both unavoidable:
 *  - a thread-local list of the calling thread's attachments, with a
 *    pthread key whose destructor detaches them when the thread exits
 *    (that is how a thread exiting while holding the GVL is detected);
 *  - a registry of live GVLs, so that pthread_atfork can make every GVL
 *    consistent in the child.
 */
#include "gvl_int.h"

#include <stdlib.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t tls_key;
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static gvl_t *registry;                     /* guarded by registry_mu */
static _Thread_local gvl_thread_t *tls_head; /* this thread's attachments */

static void tls_destructor(void *unused);
static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

static void init_once(void) {
  if (pthread_key_create(&tls_key, tls_destructor)) abort();
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

_Thread_local char gvl__self_key __attribute__((tls_model("initial-exec")));

void gvl__registry_add(gvl_t *g) {
  pthread_once(&once, init_once);
  pthread_mutex_lock(&registry_mu);
  g->rnext = registry;
  g->rprev = NULL;
  if (registry) registry->rprev = g;
  registry = g;
  pthread_mutex_unlock(&registry_mu);
}

/* ---- thread list of a GVL (g->mu held) ---------------------------------- */

static void glist_add(gvl_t *g, gvl_thread_t *t) {
  t->gprev = NULL;
  t->gnext = g->threads;
  if (g->threads) g->threads->gprev = t;
  g->threads = t;
  if (!t->foreign) g->nthreads++;
}

static void glist_remove(gvl_t *g, gvl_thread_t *t) {
  if (t->gprev) t->gprev->gnext = t->gnext; else g->threads = t->gnext;
  if (t->gnext) t->gnext->gprev = t->gprev;
  if (!t->foreign) g->nthreads--;
  for (int i = 0; i < C__COUNT; i++)
    g->retired[i] += gvl__ctr_get(t, i);
}

/* ---- this thread's attachments ------------------------------------------- */

static void tls_remove(gvl_thread_t *t) {
  for (gvl_thread_t **pp = &tls_head; *pp; pp = &(*pp)->tls_next)
    if (*pp == t) {
      *pp = t->tls_next;
      break;
    }
  if (!tls_head) pthread_setspecific(tls_key, NULL);
}

/* A waker may still be on its way to wake t (wake_refs, a few instructions
 * and a system call). */
static void wait_wakers(gvl_thread_t *t) {
  for (int i = 0; atomic_load_explicit(&t->wake_refs, memory_order_acquire); i++)
    gvl__backoff(i);
}

static void thread_free(gvl_thread_t *t) {
  wait_wakers(t);
  gvl__park_fini(&t->park);
  pthread_mutex_destroy(&t->ilock);
  pthread_mutex_destroy(&t->lend_mu);
  free(t);
}

/* Free entries whose GVL was destroyed; return the live one for g. */
static gvl_thread_t *tls_find(gvl_t *g) {
  gvl_thread_t **pp = &tls_head, *t;
  while ((t = *pp)) {
    if (atomic_load_explicit(&t->orphan, memory_order_acquire)) {
      *pp = t->tls_next;
      thread_free(t);
      continue;
    }
    if (t->g == g) return t;
    pp = &t->tls_next;
  }
  return NULL;
}

static gvl_thread_t *attach(gvl_t *g, int prio, bool foreign) {
  gvl_thread_t *t = gvl__alloc_lines(sizeof *t);
  if (!t) return NULL;
  bool park = !gvl__park_init(&t->park);
  bool ilock = park && !pthread_mutex_init(&t->ilock, NULL);
  if (!ilock || pthread_mutex_init(&t->lend_mu, NULL)) {
    if (ilock) pthread_mutex_destroy(&t->ilock);
    if (park) gvl__park_fini(&t->park);
    free(t);
    errno = ENOMEM;
    return NULL;
  }
  t->g = g;
  t->tid = pthread_self();
  t->ktid = gvl__ksched_tid();
  t->cpu_word = gvl__ksched_cpu_word();
  t->other_cpu = -1;
  /* One OS thread on two GVLs: neither may lend to it (gvl_lock.c). */
  for (gvl_thread_t *o = tls_head; o; o = o->tls_next) {
    if (atomic_load_explicit(&o->orphan, memory_order_acquire)) continue;
    atomic_store_explicit(&o->multi, true, memory_order_relaxed);
    atomic_store_explicit(&t->multi, true, memory_order_relaxed);
  }
  t->self_key = &gvl__self_key;
  t->prio = prio;
  t->foreign = foreign;
  gvl__mu_lock(&g->mu);
  glist_add(g, t);
  gvl__mu_unlock(&g->mu);
  t->tls_next = tls_head;
  tls_head = t;
  pthread_setspecific(tls_key, t);
  return t;
}

gvl_thread_t *gvl_thread_attach(gvl_t *g, int prio) {
  gvl_thread_t *t;
  if (!g || prio < GVL_PRIO_MIN || prio > GVL_PRIO_MAX) {
    errno = EINVAL;
    return NULL;
  }
  pthread_once(&once, init_once);
  pthread_mutex_lock(&registry_mu);  /* orders against gvl_destroy */
  t = tls_find(g);
  pthread_mutex_unlock(&registry_mu);
  /* Attached already: explicitly, or through a gvl_call_with that is
   * running fn on this thread now (that attachment holds the GVL, and is
   * the call's to drop). */
  if (t && (!t->foreign || t->call_depth)) {
    errno = EEXIST;
    return NULL;
  }
  if (t) {                  /* adopt the attachment gvl_call_with cached */
    gvl__mu_lock(&g->mu);
    t->foreign = false;
    g->nthreads++;
    gvl__mu_unlock(&g->mu);
    t->prio = prio;
    return t;
  }
  return attach(g, prio, false);
}

static void detach(gvl_thread_t *t) {
  gvl_t *g = t->g;
  gvl__mu_lock(&g->mu);
  /* A grant that t took (or a region t left by exiting) can no longer be
   * taken back: forget it before t's memory goes. */
  if (g->hot == t || g->hot_to == t) g->hot = g->hot_to = NULL;
  glist_remove(g, t);
  gvl__mu_unlock(&g->mu);
  tls_remove(t);
  thread_free(t);
}

int gvl_thread_detach(gvl_thread_t *t) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  if (atomic_load_explicit(&t->holding, memory_order_relaxed) ||
      t->call_depth || t->without_depth || t->mutexes > 0)
    return EBUSY;
  pthread_mutex_lock(&registry_mu);
  detach(t);
  pthread_mutex_unlock(&registry_mu);
  return 0;
}

/* Runs when a thread with attachments exits.  A thread that still holds a
 * GVL has died holding it: report it and hand the GVL on.  That happens
 * before registry_mu is taken, since hooks run outside internal locks; the
 * GVL cannot go away meanwhile because the attachment still counts. */
static void tls_destructor(void *unused) {
  (void)unused;
  for (gvl_thread_t *t = tls_head; t; t = t->tls_next) {
    if (atomic_load_explicit(&t->orphan, memory_order_acquire) ||
        !atomic_load_explicit(&t->holding, memory_order_relaxed))
      continue;
    gvl__ctr_add(t, C_OWNER_DIED, 1);
    gvl__hook(t->g, t, GVL_EV_OWNER_DIED);
    (void)gvl__release(t, GVL__HOT_NONE);
  }
  pthread_mutex_lock(&registry_mu);
  while (tls_head) {
    gvl_thread_t *t = tls_head;
    if (atomic_load_explicit(&t->orphan, memory_order_relaxed)) {
      tls_head = t->tls_next;
      thread_free(t);
      continue;
    }
    /* A thread that exits inside fn of gvl_call_with never returns to
     * end its calls: end them here, under registry_mu, which gvl_destroy
     * takes before it looks at in_call, so g outlives the detach. */
    if (t->call_depth)
      atomic_fetch_sub_explicit(&t->g->in_call, t->call_depth,
                                memory_order_release);
    t->call_depth = 0;
    detach(t);
  }
  pthread_mutex_unlock(&registry_mu);
}

gvl_thread_t *gvl_thread_self(gvl_t *g) {
  gvl_thread_t *t;
  if (!g) return NULL;
  t = tls_find(g);
  return t && (!t->foreign || t->call_depth) ? t : NULL;
}

gvl_t *gvl_thread_gvl(gvl_thread_t *t) { return t ? t->g : NULL; }

int gvl_thread_holds(gvl_thread_t *t) {
  return t && atomic_load_explicit(&t->holding, memory_order_relaxed);
}

int gvl_thread_in_region(gvl_thread_t *t) {
  return t && t->g && t->in_region;   /* only t writes it */
}

int gvl_thread_set_prio(gvl_thread_t *t, int prio) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  if (prio < GVL_PRIO_MIN || prio > GVL_PRIO_MAX) return EINVAL;
  t->prio = prio;
  return 0;
}

int gvl_thread_set_interactive(gvl_thread_t *t, int on) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  if (on != 0 && on != 1) return EINVAL;
  t->interactive_off = !on;
  return 0;
}

/* ---- blocking regions ---------------------------------------------------- */

int gvl_thread_interrupt(gvl_thread_t *t) {
  if (!t || !t->g) return EINVAL;
  gvl__set_ints(t, GVL__INT_HOST);
  pthread_mutex_lock(&t->ilock);
  t->posts++;
  if (t->in_region && t->ubf) {
    int saved = errno;   /* a ubf's write to a full pipe: not the caller's */
    t->ubf(t->ubf_arg);
    errno = saved;
  }
  pthread_mutex_unlock(&t->ilock);
  return 0;
}

int gvl_region_begin(gvl_thread_t *t, void (*ubf)(void *), void *ubf_arg) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  if (!atomic_load_explicit(&t->holding, memory_order_relaxed)) return EPERM;
  pthread_mutex_lock(&t->ilock);
  if (__atomic_load_n(&t->head.ints, __ATOMIC_ACQUIRE) & GVL__INT_HOST) {
    pthread_mutex_unlock(&t->ilock);
    gvl__clear_ints(t, GVL__INT_HOST);
    return EINTR;
  }
  t->ubf = ubf;
  t->ubf_arg = ubf_arg;
  t->in_region = true;
  pthread_mutex_unlock(&t->ilock);
  t->region_ia = gvl__pol_interactive(t, gvl__now());
  t->region_prio = t->req_prio;  /* not the interactive promotion */
  (void)gvl__release(t, GVL__HOT_REGION);
  return 0;
}

int gvl_region_end(gvl_thread_t *t, int prio) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  if (prio < GVL_PRIO_MIN || prio > GVL_PRIO_MAX) return EINVAL;
  if (!t->in_region) return EPERM;  /* only t writes it */
  pthread_mutex_lock(&t->ilock);
  t->in_region = false;
  t->ubf = NULL;
  pthread_mutex_unlock(&t->ilock);
  if (prio < t->region_prio) prio = t->region_prio;
  bool ia = t->region_ia && prio <= t->region_prio;
  (void)gvl__acquire(t, prio, ia);
  t->ia_ret = ia && prio < 1;  /* what gvl__acquire promoted */
  t->ia_t0 = gvl__now();       /* the next stretch starts here */
  return 0;
}

void *gvl_call_without(gvl_thread_t *t, void *(*fn)(void *), void *arg,
                       void (*ubf)(void *), void *ubf_arg) {
  /* gvl_region_begin leaves errno alone (gvl.h): fn sees the caller's. */
  int rc = t && fn ? gvl_region_begin(t, ubf, ubf_arg) : EINVAL;
  if (rc) {
    errno = rc;
    return NULL;
  }
  t->without_depth++;          /* fn may not detach t: we end the region */
  void *ret = fn(arg);
  t->without_depth--;
  int saved = errno;           /* fn's errno belongs to the caller */
  (void)gvl_region_end(t, GVL_PRIO_MIN);
  errno = saved;
  return ret;
}

/* ---- foreign threads ------------------------------------------------------ */

/* A gvl_call_with made from inside one of the same thread's blocking
 * regions (fn of gvl_call_without calling back into the host, as Ruby's
 * rb_thread_call_with_gvl does) suspends that region around the call, so
 * that a region inside the call has state of its own and the outer
 * gvl_region_end finds its own again.  The region's revocable grant, if
 * any, stays with its waiter: the call's acquire is not the region's end
 * (gvl.h: only that takes it back).  An interrupt posted during the call
 * and still pending as the region resumes goes to its ubf, as it would
 * have during the region: unless it is the very one that was pending
 * before the call, whose ubf ran then (posts tells them apart: the call
 * may have consumed that one and a new one come since). */
typedef struct {
  void (*ubf)(void *);
  void *ubf_arg;
  int region_prio;
  bool region_ia;
  bool host;          /* an interrupt was pending already: its ubf ran */
  unsigned posts;     /* t->posts then */
} region_saved_t;

static void region_suspend(gvl_thread_t *t, region_saved_t *sv) {
  pthread_mutex_lock(&t->ilock);
  sv->ubf = t->ubf;
  sv->ubf_arg = t->ubf_arg;
  sv->host = __atomic_load_n(&t->head.ints, __ATOMIC_ACQUIRE) & GVL__INT_HOST;
  sv->posts = t->posts;
  t->in_region = false;
  t->ubf = NULL;
  pthread_mutex_unlock(&t->ilock);
  if (t->hot_release == GVL__HOT_REGION) t->hot_release = GVL__HOT_NONE;
  sv->region_prio = t->region_prio;
  sv->region_ia = t->region_ia;
}

static void region_resume(gvl_thread_t *t, const region_saved_t *sv) {
  t->region_prio = sv->region_prio;
  t->region_ia = sv->region_ia;
  pthread_mutex_lock(&t->ilock);
  t->in_region = true;
  t->ubf = sv->ubf;
  t->ubf_arg = sv->ubf_arg;
  if ((!sv->host || t->posts != sv->posts) && t->ubf &&
      (__atomic_load_n(&t->head.ints, __ATOMIC_ACQUIRE) & GVL__INT_HOST))
    t->ubf(t->ubf_arg);
  pthread_mutex_unlock(&t->ilock);
}

void *gvl_call_with(gvl_t *g, int prio, void *(*fn)(void *), void *arg) {
  gvl_thread_t *t;
  void *ret;
  int rc, saved;
  if (!g || !fn || prio < GVL_PRIO_MIN || prio > GVL_PRIO_MAX) {
    errno = EINVAL;
    return NULL;
  }
  saved = errno;                   /* fn sees the caller's errno */
  pthread_once(&once, init_once);
  t = tls_find(g);
  if (t && atomic_load_explicit(&t->holding, memory_order_relaxed))
    return fn(arg);
  /* in_call keeps gvl_destroy off g until our last touch of it. */
  atomic_fetch_add_explicit(&g->in_call, 1, memory_order_acquire);
  if (!t && !(t = attach(g, prio, true))) {
    atomic_fetch_sub_explicit(&g->in_call, 1, memory_order_release);
    return NULL;
  }
  region_saved_t sv;
  bool in_region = t->in_region;   /* t only */
  if (in_region) region_suspend(t, &sv);
  t->call_depth++;
  t->ia_ret = false;           /* fn's hold is not a region's return */
  if ((rc = gvl__acquire(t, prio, false))) {
    t->call_depth--;
    if (in_region) region_resume(t, &sv);
    atomic_fetch_sub_explicit(&g->in_call, 1, memory_order_release);
    errno = rc;
    return NULL;
  }
  errno = saved;
  ret = fn(arg);
  saved = errno;
  (void)gvl__release(t, GVL__HOT_BOOST);
  t->ia_t0 = 0;   /* a release ends the stretch, as gvl_release's does */
  t->call_depth--;
  if (in_region) region_resume(t, &sv);
  atomic_fetch_sub_explicit(&g->in_call, 1, memory_order_release);
  errno = saved;
  return ret;
}

/* ---- destroy ---------------------------------------------------------------- */

int gvl__destroy(gvl_t *g) {
  pthread_mutex_lock(&registry_mu);
  gvl__mu_lock(&g->mu);
  if (g->nthreads > 0 || atomic_load_explicit(&g->word, memory_order_relaxed) ||
      atomic_load_explicit(&g->in_call, memory_order_acquire)) {
    gvl__mu_unlock(&g->mu);
    pthread_mutex_unlock(&registry_mu);
    return EBUSY;
  }
  /* Only idle cached foreign attachments are left: orphan them.  Their
   * threads free them on their next gvl_call_with, gvl_thread_self, attach
   * or exit (some without registry_mu): nothing here touches one again
   * once it is orphaned. */
  for (gvl_thread_t *t = g->threads, *next; t; t = next) {
    next = t->gnext;           /* t may be freed as soon as it is orphaned */
    atomic_store_explicit(&t->orphan, true, memory_order_release);
  }
  gvl__mu_unlock(&g->mu);
  if (g->rprev) g->rprev->rnext = g->rnext; else registry = g->rnext;
  if (g->rnext) g->rnext->rprev = g->rprev;
  pthread_mutex_unlock(&registry_mu);
  gvl__trace_fini(g);
  gvl__mu_fini(&g->mu);
  for (gvl__hook_t *h = g->hooks, *next; h; h = next) {
    next = h->next;
    free(h);
  }
  free(g);
  return 0;
}

/* ---- fork ----------------------------------------------------------------------
 * prepare takes every lock so the child inherits consistent state; the
 * child then forgets every thread but the one that forked. */

static void fork_prepare(void) {
  pthread_mutex_lock(&registry_mu);
  for (gvl_t *g = registry; g; g = g->rnext) gvl__mu_lock(&g->mu);
}

static void fork_parent(void) {
  for (gvl_t *g = registry; g; g = g->rnext) gvl__mu_unlock(&g->mu);
  pthread_mutex_unlock(&registry_mu);
}

/* The child's GVL: the forking thread's attachments only, the queue empty,
 * the GVL held by the forking thread if it held it, and the policy's state
 * re-initialised at once (gvl__pol_reset), like a GVL just created. */
static void fork_child_gvl(gvl_t *g, pthread_t self) {
  gvl_thread_t *t = g->threads, *next, *owner, *queued = NULL;
  owner = gvl__owner(atomic_load_explicit(&g->word, memory_order_relaxed));
  /* The forking thread keeps the GVL if the word names it: it holds it,
   * was handed it and has not run since, or is in the middle of a fast
   * acquire or release that will finish as usual; otherwise it is free. */
  bool mine = owner && pthread_equal(owner->tid, self);
  int in_call = 0;
  g->threads = NULL;
  g->nthreads = 0;
  g->qhead = g->qtail = g->timer = g->hot = g->hot_to = NULL;
  g->timer_due = 0;
  for (; t; t = next) {
    next = t->gnext;
    if (!pthread_equal(t->tid, self)) {
      /* Its thread does not exist here; its locks may be held forever,
       * so the memory is released without destroying them.  A gvl_mutex
       * or gvl_cond it waited in must not hand anything to it: it leaves
       * that queue (a gvl_mutex it owned stays locked, like a pthread
       * mutex held by a thread that did not fork). */
      if (t->mq) gvl__wq_leave(t->mq, t);
      if (t->cmutex) t->cmutex->cwaits--;   /* its wait will never end */
      for (int i = 0; i < C__COUNT; i++)
        g->retired[i] += gvl__ctr_get(t, i);
      free(t);
      continue;
    }
    if (t->queued && !mine) queued = t;
    /* The waiters that asked it to yield are gone (a request is only ever
     * set on the holder while others wait); an interrupt stays. */
    gvl__clear_ints(t, GVL__INT_PREEMPT);
    t->queued = false;
    t->qnext = t->qprev = NULL;
    atomic_store_explicit(&t->is_timer, 0, memory_order_relaxed);
    atomic_store_explicit(&t->wake_refs, 0, memory_order_relaxed); /* wakers gone */
    pthread_mutex_init(&t->ilock, NULL);
    pthread_mutex_init(&t->lend_mu, NULL);   /* a restorer may be gone */
    gvl__park_after_fork(&t->park);
    /* The child's thread is a new kernel thread, and a lend made to the
     * parent's is not one any waiter here made. */
    t->ktid = gvl__ksched_tid();
    if (atomic_load_explicit(&t->lend, memory_order_relaxed) != GVL__LEND_NONE)
      (void)gvl__ksched_set(t->ktid, &t->lend_own);
    atomic_store_explicit(&t->lend, GVL__LEND_NONE, memory_order_relaxed);
    glist_add(g, t);
    in_call += t->call_depth;  /* only our own gvl_call_with calls remain */
  }
  atomic_store_explicit(&g->in_call, in_call, memory_order_relaxed);
  gvl__pol_reset(g);
  /* A fork made from a hook while the thread waited in the queue: nobody
   * else is left to hand it the GVL, so it is handed it here, as a handoff
   * would (at its queued priority), and its wait woken: the acquire
   * returns holding. */
  if (queued) {
    owner = queued;
    mine = true;
    queued->grant_ns = gvl__now();
    queued->trace_from = 0;      /* nobody handed it over */
    atomic_store_explicit(&queued->hold_prio, queued->qprio, memory_order_relaxed);
    atomic_store_explicit(&queued->granted, GVL__GRANTED, memory_order_relaxed);
    gvl__park_wake(&queued->park);
  }
  atomic_store_explicit(&g->word, mine ? (uintptr_t)owner : 0,
                        memory_order_relaxed);
  gvl__mu_unlock(&g->mu);
}

/* The locks fork_prepare took are the child's, held by its one thread:
 * they are let go, not made anew (a thread checker then sees them free). */
static void fork_child(void) {
  pthread_t self = pthread_self();
  for (gvl_t *g = registry; g; g = g->rnext) fork_child_gvl(g, self);
  pthread_mutex_unlock(&registry_mu);
}
