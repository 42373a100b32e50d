/* SPDX-License-Identifier: MIT */
/*
 * gvl_misc.c -- creation, run-time settings, counters, error strings.
 */
#include "gvl_int.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KNOWN_FLAGS \
  (GVL_F_TIMING | GVL_F_NOSPIN | GVL_F_NOINTERACTIVE | GVL_F_NORETAKE | \
   GVL_F_LEND)

/* Durations up to GVL__MAX_NS keep every sum and product of the GVL's
 * clocks inside 64 bits (deadlines, the cap's pct * window). */
static int check_config(const gvl_config_t *c) {
  if (c->boost_cap_pct > 100 || (c->flags & ~KNOWN_FLAGS)) return EINVAL;
  if (c->cap_window_ns && c->cap_window_ns < GVL__CAP_BUCKETS) return EINVAL;
  if (c->slice_ns > GVL__MAX_NS || c->cap_window_ns > GVL__MAX_NS ||
      c->age_ns > GVL__MAX_NS || c->spin_ns > GVL__MAX_NS)
    return EINVAL;
  if (c->hold_share_pct > 99) return EINVAL;
  return 0;
}

/* Spinning only pays when the thread we wait for can run meanwhile: never
 * with one CPU online or one CPU in our affinity mask (taskset -c 0). */
static int one_cpu(void) {
  cpu_set_t set;
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) return 1;
  return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < 2;
}

/* The i-th pass of a wait for another thread to finish a few instructions:
 * give it the CPU, then sleep a little.  Yielding alone is not enough: a
 * real-time caller's sched_yield never lets a normal thread that it
 * preempted on its CPU run, and it would spin until the kernel's real-time
 * throttling.  A signal's EINTR from the sleep is not the caller's errno. */
void gvl__backoff(int i) {
  if (i < 16) {
    sched_yield();
  } else {
    int saved = errno;
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
    errno = saved;
  }
}

void *gvl__alloc_lines(size_t size) {
  size = (size + GVL__LINE - 1) / GVL__LINE * GVL__LINE;
  void *p = aligned_alloc(GVL__LINE, size);
  if (p) memset(p, 0, size);
  return p;
}

#ifndef GVL__PARK_FUTEX
/* The portable g->mu: adaptive where glibc has it (gvl_int.h). */
int gvl__mu_init(gvl__mu_t *mu) {
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
  pthread_mutexattr_t a;
  int rc = pthread_mutexattr_init(&a);
  if (rc) return rc;
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
  rc = pthread_mutex_init(mu, &a);
  pthread_mutexattr_destroy(&a);
  return rc;
#else
  return pthread_mutex_init(mu, NULL);
#endif
}
#endif

/* The published pair for (cb, arg), made if g has none yet (g->mu held, or
 * g not yet shared); NULL if memory ran out. */
static gvl__hook_t *hook_pair(gvl_t *g, gvl_hook_cb cb, void *arg) {
  gvl__hook_t *h;
  for (h = g->hooks; h; h = h->next)
    if (h->cb == cb && h->arg == arg) return h;
  if (!(h = malloc(sizeof *h))) return NULL;
  h->cb = cb;
  h->arg = arg;
  h->next = g->hooks;
  g->hooks = h;
  return h;
}

gvl_t *gvl_create(const gvl_config_t *cfg) {
  static const gvl_config_t defaults;
  static _Atomic uint64_t next_uid = 1;
  const gvl_config_t *c = cfg ? cfg : &defaults;
  gvl_t *g;
  int rc = check_config(c), saved = errno;
  if (rc) {
    errno = rc;
    return NULL;
  }
  if (!(g = gvl__alloc_lines(sizeof *g))) return NULL;
  if ((rc = gvl__mu_init(&g->mu))) {
    free(g);
    errno = rc;
    return NULL;
  }
  atomic_init(&g->word, 0);
  gvl__pol_reset(g);
  atomic_init(&g->slice_ns, c->slice_ns ? c->slice_ns : GVL__DEF_SLICE_NS);
  atomic_init(&g->cap_pct, c->boost_cap_pct ? c->boost_cap_pct : GVL__DEF_CAP_PCT);
  g->window_ns = c->cap_window_ns ? c->cap_window_ns : GVL__DEF_WINDOW_NS;
  g->age_ns = c->age_ns ? c->age_ns : GVL__DEF_AGE_NS;
  g->spin_ns = c->spin_ns ? c->spin_ns : GVL__DEF_SPIN_NS;
  if ((c->flags & GVL_F_NOSPIN) || one_cpu()) g->spin_ns = 0;
  g->flags = c->flags;
  /* g came zeroed (gvl__alloc_lines): g->hooks is empty. */
  if (c->hook && !hook_pair(g, c->hook, c->hook_arg)) {
    gvl__mu_fini(&g->mu);
    free(g);
    errno = ENOMEM;
    return NULL;
  }
  atomic_init(&g->hook, g->hooks);
  g->uid = atomic_fetch_add(&next_uid, 1);
  gvl__registry_add(g);
  gvl__trace_env(g);     /* GVLOOP_TRACE may open a file: errno stays */
  errno = saved;
  return g;
}

int gvl_destroy(gvl_t *g) {
  int saved = errno, rc = g ? gvl__destroy(g) : EINVAL;
  errno = saved;         /* a trace's last write happens here */
  return rc;
}

/* A setting changed: the timer waiter, asleep until a deadline the old
 * setting gave, looks again now (gvl__pol_tick). */
static void timer_relook(gvl_t *g) {
  gvl__mu_lock(&g->mu);
  if (g->timer) {
    g->timer_due = 0;
    gvl__park_wake(&g->timer->park);
  }
  gvl__mu_unlock(&g->mu);
}

int gvl_set_slice(gvl_t *g, uint64_t slice_ns) {
  if (!g || !slice_ns || slice_ns > GVL__MAX_NS) return EINVAL;
  atomic_store_explicit(&g->slice_ns, slice_ns, memory_order_relaxed);
  timer_relook(g);               /* re-arm for the new slice's end */
  return 0;
}

int gvl_set_boost_cap(gvl_t *g, unsigned pct) {
  if (!g || pct < 1 || pct > 100) return EINVAL;
  atomic_store_explicit(&g->cap_pct, pct, memory_order_relaxed);
  timer_relook(g);               /* a boost held back may be allowed now */
  return 0;
}

/* Validated and ignored: see gvl_config_t.hold_share_pct. */
int gvl_set_hold_share(gvl_t *g, unsigned pct) {
  if (!g || pct < 1 || pct > 99) return EINVAL;
  return 0;
}

int gvl_set_hook(gvl_t *g, gvl_hook_cb cb, void *arg) {
  gvl__hook_t *h = NULL;
  int saved = errno;
  if (!g) return EINVAL;
  gvl__mu_lock(&g->mu);
  if (cb && !(h = hook_pair(g, cb, arg))) {
    gvl__mu_unlock(&g->mu);
    errno = saved;
    return ENOMEM;
  }
  atomic_store_explicit(&g->hook, h, memory_order_release);
  gvl__mu_unlock(&g->mu);
  errno = saved;           /* malloc may set it even when it succeeds */
  return 0;
}

static void to_stats(const uint64_t *v, gvl_stats_t *out) {
  out->acquires = v[C_ACQUIRES];
  out->contended = v[C_CONTENDED];
  out->handoffs = v[C_HANDOFFS];
  out->yields = v[C_YIELDS];
  out->preempt_reqs = v[C_PREEMPT_REQS];
  out->preemptions = v[C_PREEMPTIONS];
  out->boosts = v[C_BOOSTS];
  out->boosts_refused = v[C_BOOSTS_REFUSED];
  out->interactive = v[C_INTERACTIVE];
  out->owner_died = v[C_OWNER_DIED];
  out->wait_ns = v[C_WAIT_NS];
  out->hold_ns = v[C_HOLD_NS];
  out->retakes = v[C_RETAKES];
  out->lends = v[C_LENDS];
}

/* Add t's counters to v, C_ACQUIRES last (see gvl__ctr_acquired): any
 * qualifier read here was counted after an acquisition this read sees. */
static void ctr_read(gvl_thread_t *t, uint64_t *v) {
  for (int i = 0; i < C__COUNT; i++)
    if (i != C_ACQUIRES) v[i] += gvl__ctr_get(t, i);
  atomic_thread_fence(memory_order_acquire);
  v[C_ACQUIRES] += gvl__ctr_get(t, C_ACQUIRES);
}

int gvl_stats(gvl_t *g, gvl_stats_t *out) {
  uint64_t v[C__COUNT];
  if (!g || !out) return EINVAL;
  gvl__mu_lock(&g->mu);
  memcpy(v, g->retired, sizeof v);
  for (gvl_thread_t *t = g->threads; t; t = t->gnext) ctr_read(t, v);
  gvl__mu_unlock(&g->mu);
  to_stats(v, out);
  out->ia_cost_ns = 0;
  return 0;
}

int gvl_thread_stats(gvl_thread_t *t, gvl_stats_t *out) {
  uint64_t v[C__COUNT];
  if (!t || !out) return EINVAL;
  memset(v, 0, sizeof v);
  ctr_read(t, v);
  to_stats(v, out);
  out->ia_cost_ns = 0;
  return 0;
}

/* ---- error strings and version ------------------------------------------ */

/* errno's own text and name without a shared buffer: glibc 2.32 has both as
 * static strings; elsewhere strerror_r fills a per-thread buffer. */
static _Thread_local char err_buf[64];

const char *gvl__err_text(int err) {
  const char *s = NULL;
  if (err == 0) return "success";
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
  if (err > 0) s = strerrordesc_np(err);
#else
  if (err > 0 && err < 4096) {
    int saved = errno;
    s = strerror_r(err, err_buf, sizeof err_buf) == 0 ? err_buf : NULL;
    errno = saved;
  }
#endif
  if (s != NULL) return s;
  snprintf(err_buf, sizeof err_buf, "unknown error code %d", err);
  return err_buf;
}

const char *gvl__err_name(int err) {
  const char *s = NULL;
  if (err == 0) return "OK";
  /* The name the libraries use, where the C library knows the value by
   * another (Linux: EOPNOTSUPP). */
  if (err == ENOTSUP) return "ENOTSUP";
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
  if (err > 0) s = strerrorname_np(err);
#else
  switch (err) {
    case EINVAL: s = "EINVAL"; break;
    case EPERM: s = "EPERM"; break;
    case EDEADLK: s = "EDEADLK"; break;
    case EBUSY: s = "EBUSY"; break;
    case EEXIST: s = "EEXIST"; break;
    case ENOMEM: s = "ENOMEM"; break;
    case EINTR: s = "EINTR"; break;
    case ETIMEDOUT: s = "ETIMEDOUT"; break;
    case ECANCELED: s = "ECANCELED"; break;
    case ENOENT: s = "ENOENT"; break;
    case EAGAIN: s = "EAGAIN"; break;
    case EBADF: s = "EBADF"; break;
    case EFBIG: s = "EFBIG"; break;
    default: break;
  }
#endif
  return s != NULL ? s : "UNKNOWN";
}

const char *gvl_strerror(int err) {
  switch (err) {
    case EINVAL: return "invalid argument (NULL or out of range)";
    case EPERM: return "the calling thread does not hold the GVL, the handle belongs to another thread, or an acquire was made inside a blocking region";
    case EDEADLK: return "the GVL is already held by this thread";
    case EBUSY:
      return "busy: in use (threads attached, a call under way, a mutex owned or waited "
             "on), or the thread holds the GVL";
    case EEXIST: return "the thread is already attached to this GVL";
    case EINTR: return "interrupted (gvl_thread_interrupt)";
    case ETIMEDOUT: return "timed out";
    case ERANGE: return "name too long";
    default: return gvl__err_text(err);
  }
}

const char *gvl_err_name(int err) { return gvl__err_name(err); }

unsigned gvl_version(void) { return GVL_VERSION_HEX; }

const char *gvl_version_string(void) { return GVL_VERSION_STRING; }

uint64_t gvl_now_ns(void) { return gvl__now(); }
