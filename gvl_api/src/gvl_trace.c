/*
 * gvl_trace.c -- timeline tracing of GVL events (Trace Event Format).
 * Off unless enabled; see gvl_trace.h for what is recorded and the rules.
 *
 * Recording.  Each OS thread records into its own buffer (tbuf_t), found
 * through a small thread-local cache keyed by the run number of the trace,
 * so the hot path takes no lock shared with other threads.  A record is
 * raw: timestamp, kind, handle, priorities.  All interpretation (which
 * state a thread is in, who handed the GVL to whom) happens when the file
 * is written, from the sequence of events.
 *
 * Lifetime.  A GVL's trace state (session_t) lives until gvl_destroy(), and
 * its buffers too, so a thread that loaded g->trace just before a stop
 * never touches freed memory.  Stop and the recorders meet in a Dekker
 * handshake on two sequentially consistent flags: a recorder sets its
 * buffer's busy flag and then checks that the trace is on; stop clears
 * "on" and then waits until no buffer is busy.  After that no recorder can
 * write into a buffer until the next start, so the buffers can be read and
 * their event arrays freed.
 *
 * Process-wide state (unavoidable): the registry of sessions, so that a
 * stopped trace's counters and buffers are found again without a field in
 * gvl_t beyond g->trace (which must be NULL while tracing is off), so that
 * traces still running at exit() are written, and so that a fork()ed child
 * stops its copies.  The thread-local cache and thread serial numbers.
 */
#include "gvl_int.h"
#include "gvl_trace.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DEF_EVENTS   32768u
#define MAX_EVENTS   (1u << 24)
#define DEF_THREADS  128u
#define MAX_THREADS  4096u
#define NAME_MAX_    32
#define CACHE_WAYS   4

/* Record kinds: the gvl_event_t values, then the other layers' events. */
enum { K_BEGIN = 16, K_END, K_INSTANT, K_COUNTER, K_SPAN };

/* Why a hold ended (rec_t.why of a SUSPENDED record). */
enum { W_RELEASE, W_YIELD, W_PREEMPT, W_BLOCK, W_COND };
static const char *const why_name[] = {"release", "yield", "preempted",
                                       "blocking", "cond wait"};

typedef struct {
  uint64_t ns;
  const void *p;      /* own handle; PREEMPT_REQ: the target; else name   */
  const char *cat;    /* category of the other layers' events             */
  uint64_t arg;       /* instant argument, counter value                  */
  int16_t prio;       /* READY: queue prio; RESUMED: hold prio            */
  int16_t req;        /* the priority the caller asked for                */
  int16_t cpu;        /* CPU the thread ran on (GVL events), -1 unknown    */
  uint8_t kind;
  uint8_t why;
} rec_t;
_Static_assert(sizeof(rec_t) == 40, "rec_t: 40 bytes, as gvl_trace.h says");

typedef struct {
  _Atomic int busy;          /* owner is recording (see the handshake)    */
  _Atomic uint64_t run;      /* run the buffer is set up for; s->mu       */
  _Atomic uint64_t n;        /* events offered this run (may pass cap);
                                written by the owner only                 */
  uint64_t serial;           /* owner thread's serial number              */
  int tid;                   /* owner's kernel thread id                  */
  char name[NAME_MAX_];      /* s->mu                                     */
  rec_t *ev;                 /* cap entries; set up/freed under s->mu
                                while no recorder can be busy             */
  uint32_t cap;
  /* Owner only: the counters seen at its last acquisition, to tell a
   * yield or a preemption from a plain release. */
  const void *handle;
  uint64_t snap_yields, snap_preempts;
} tbuf_t;

typedef struct session {
  gvl_t *g;
  struct session *next;      /* registry; reg_mu                          */
  pthread_mutex_t mu;
  _Atomic int on;            /* recorders may record                      */
  _Atomic uint64_t run;      /* number of the current/last run            */
  _Atomic uint64_t lost_nobuf; /* events of threads past max_threads     */
  int stopping;              /* the file is being written; mu             */
  atomic_int full_stop;      /* GVL_TRACE_STOP_FULL: a stop was claimed   */
  FILE *out;                 /* mu                                        */
  uint32_t cap, max_threads; /* of the current run; mu                    */
  unsigned flags;            /* mu                                        */
  tbuf_t **bufs;             /* every buffer ever used; mu                */
  uint32_t nbufs, abufs;     /* mu                                        */
  uint64_t t0, t_end;        /* start and stop of the run; written by
                                start/stop under mu, read by recorders
                                only while busy in that run             */
} session_t;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static session_t *reg_head;          /* reg_mu */
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t next_run = 1;
static _Atomic uint64_t next_serial = 1;
static _Atomic unsigned env_traces;

static _Thread_local struct { uint64_t run; tbuf_t *b; } tl_cache[CACHE_WAYS];
static _Thread_local unsigned tl_victim;
static _Thread_local uint64_t tl_serial;
static _Thread_local char tl_name[NAME_MAX_];

static int stop_session(session_t *s);

/* ---- registry, exit and fork --------------------------------------------- */

/* Traces still running when the process exits are written, so that
 * GVLOOP_TRACE works for programs that never destroy their GVL. */
static void at_exit(void) {
  pthread_mutex_lock(&reg_mu);
  for (session_t *s = reg_head; s; s = s->next)
    if (atomic_load(&s->on)) (void)stop_session(s);
  pthread_mutex_unlock(&reg_mu);
}

static void fork_prepare(void) { pthread_mutex_lock(&reg_mu); }
static void fork_parent(void) { pthread_mutex_unlock(&reg_mu); }

/* The child has one thread: its copies of the traces are turned off and
 * never written (the parent owns the files).  Locks that other threads
 * held at the fork are made anew. */
static void fork_child(void) {
  for (session_t *s = reg_head; s; s = s->next) {
    atomic_store(&s->on, 0);
    if (s->g) atomic_store(&s->g->trace, NULL);
    pthread_mutex_init(&s->mu, NULL);
    s->stopping = 0;
    if (s->out) fclose(s->out);  /* nothing is buffered before the stop */
    s->out = NULL;
    for (uint32_t i = 0; i < s->nbufs; i++) {
      atomic_store(&s->bufs[i]->busy, 0);
      atomic_store(&s->bufs[i]->run, 0);
    }
  }
  pthread_mutex_init(&reg_mu, NULL);
}

static void reg_init(void) {
  atexit(at_exit);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* The session of g, created if asked.  NULL if none (or no memory). */
static session_t *session_get(gvl_t *g, bool create) {
  session_t *s;
  pthread_once(&reg_once, reg_init);
  pthread_mutex_lock(&reg_mu);
  for (s = reg_head; s && s->g != g; s = s->next) {
  }
  if (!s && create && (s = calloc(1, sizeof *s))) {
    if (pthread_mutex_init(&s->mu, NULL)) {
      free(s);
      s = NULL;
    } else {
      s->g = g;
      s->next = reg_head;
      reg_head = s;
    }
  }
  pthread_mutex_unlock(&reg_mu);
  return s;
}

/* ---- finding the calling thread's buffer --------------------------------- */

static uint64_t my_serial(void) {
  if (!tl_serial) tl_serial = atomic_fetch_add(&next_serial, 1);
  return tl_serial;
}

static void default_name(char *out) {
  if (tl_name[0]) {
    memcpy(out, tl_name, NAME_MAX_);
  } else if (pthread_getname_np(pthread_self(), out, NAME_MAX_) || !out[0]) {
    snprintf(out, NAME_MAX_, "thread %ld", (long)syscall(SYS_gettid));
  }
}

/* s->mu held.  The buffer of this thread, set up for the current run. */
static tbuf_t *buf_for_run(session_t *s, uint64_t run) {
  uint64_t serial = my_serial();
  tbuf_t *b = NULL;
  for (uint32_t i = 0; i < s->nbufs && !b; i++)
    if (s->bufs[i]->serial == serial) b = s->bufs[i];
  if (!b) {
    if (s->nbufs >= s->abufs || !(b = calloc(1, sizeof *b))) return NULL;
    b->serial = serial;
    s->bufs[s->nbufs++] = b;
  }
  if (atomic_load(&b->run) == run) return b;
  uint32_t live = 0;
  for (uint32_t i = 0; i < s->nbufs; i++)
    live += atomic_load(&s->bufs[i]->run) == run;
  if (live >= s->max_threads) return NULL;
  free(b->ev);
  if (!(b->ev = malloc((size_t)s->cap * sizeof *b->ev))) return NULL;
  b->cap = s->cap;
  b->tid = (int)syscall(SYS_gettid);
  default_name(b->name);
  b->handle = NULL;
  atomic_store(&b->n, 0);
  atomic_store(&b->run, run);
  return b;
}

static void cache_put(uint64_t run, tbuf_t *b) {
  unsigned v = tl_victim++ % CACHE_WAYS;
  tl_cache[v].run = run;
  tl_cache[v].b = b;
}

/* Cache miss: find or set up the buffer under the session's lock.  A
 * thread past max_threads caches "no buffer" for the run, so that its lost
 * events do not take the lock each time. */
static tbuf_t *buf_slow(session_t *s, uint64_t run) {
  tbuf_t *b = NULL;
  bool live = false;
  if (!atomic_load(&s->on)) return NULL;
  pthread_mutex_lock(&s->mu);
  if (atomic_load(&s->on) && atomic_load(&s->run) == run) {
    live = true;
    b = buf_for_run(s, run);
  }
  pthread_mutex_unlock(&s->mu);
  if (live) cache_put(run, b);
  if (!b && live) atomic_fetch_add(&s->lost_nobuf, 1);
  return b;
}

/* Run numbers are never reused, so a cache entry whose run matches the
 * session's points into that (live) session. */
static tbuf_t *get_buf(session_t *s) {
  uint64_t run = atomic_load_explicit(&s->run, memory_order_acquire);
  for (int i = 0; i < CACHE_WAYS; i++)
    if (tl_cache[i].run == run) {
      if (!tl_cache[i].b && atomic_load(&s->on))
        atomic_fetch_add(&s->lost_nobuf, 1);
      return tl_cache[i].b;
    }
  return buf_slow(s, run);
}

/* ---- recording ------------------------------------------------------------ */

/* Claim the next record of the calling thread's buffer, or NULL (trace off
 * or stopping, or buffer full in drop mode).  A non-NULL result must be
 * given back by rec_commit().
 *
 * ns: the event's time when the caller read the clock before getting here
 * (a GVL event: gvl__hook reads it once for the tracer and the hook), else
 * 0.  Between that read and the checks below a stop and the next start can
 * pass; the event then belongs to no run, and is dropped here, where the
 * run and its origin are stable (no stop can pass a busy recorder). */
static rec_t *rec_begin(session_t *s, tbuf_t **bp, uint64_t ns) {
  tbuf_t *b = get_buf(s);
  if (!b) return NULL;
  atomic_store(&b->busy, 1);                 /* seq_cst: the handshake */
  if (!atomic_load(&s->on) || atomic_load(&b->run) != atomic_load(&s->run) ||
      (ns && ns < s->t0)) {
    atomic_store_explicit(&b->busy, 0, memory_order_release);
    return NULL;
  }
  uint64_t n = atomic_load_explicit(&b->n, memory_order_relaxed);
  unsigned flags = s->flags;   /* stable while busy: no stop/start can pass */
  if (n >= b->cap && !(flags & GVL_TRACE_RING)) {
    atomic_store_explicit(&b->n, n + 1, memory_order_relaxed); /* lost */
    atomic_store_explicit(&b->busy, 0, memory_order_release);
    /* The first thread to fill its buffer writes the file (outside busy,
     * or the stop would wait for itself). */
    if ((flags & GVL_TRACE_STOP_FULL) && !atomic_exchange(&s->full_stop, 1))
      (void)stop_session(s);
    return NULL;
  }
  rec_t *r = &b->ev[n % b->cap];
  memset(r, 0, sizeof *r);
  *bp = b;
  return r;
}

static void rec_commit(tbuf_t *b) {
  uint64_t n = atomic_load_explicit(&b->n, memory_order_relaxed);
  atomic_store_explicit(&b->n, n + 1, memory_order_relaxed);
  atomic_store_explicit(&b->busy, 0, memory_order_release);
}

/* Why t is giving the GVL up.  Runs on t's own thread, which is the only
 * writer of in_region and of its yield/preemption counters at this point,
 * so the plain reads are safe. */
static uint8_t suspend_reason(tbuf_t *b, gvl_thread_t *t) {
  uint64_t y = atomic_load_explicit(&t->ctr[C_YIELDS], memory_order_relaxed);
  uint64_t p = atomic_load_explicit(&t->ctr[C_PREEMPTIONS], memory_order_relaxed);
  uint8_t why = W_RELEASE;
  if (t->in_region)
    why = W_BLOCK;
  else if (atomic_load_explicit(&t->cstate, memory_order_relaxed) == GVL__CW_WAITING)
    why = W_COND;
  else if (b->handle == t && p > b->snap_preempts)
    why = W_PREEMPT;
  else if (b->handle == t && y > b->snap_yields)
    why = W_YIELD;
  b->handle = t;
  b->snap_yields = y;
  b->snap_preempts = p;
  return why;
}

/* Which CPU a thread waits and holds on shows whether a waiter spins on
 * the CPU its holder needs (sched_getcpu is a vDSO/rseq read on Linux). */
static void fill_gvl_event(rec_t *r, tbuf_t *b, gvl_thread_t *t,
                           gvl_event_t ev) {
  r->p = t;
  r->cpu = ev == GVL_EV_PREEMPT_REQ ? -1 : (int16_t)sched_getcpu();
  switch (ev) {
  case GVL_EV_READY:
    r->prio = (int16_t)t->qprio;   /* written by this thread when it queued */
    r->req = (int16_t)t->req_prio;
    break;
  case GVL_EV_RESUMED:
    r->prio = (int16_t)atomic_load_explicit(&t->hold_prio, memory_order_relaxed);
    r->req = (int16_t)t->req_prio;
    b->handle = t;
    b->snap_yields = atomic_load_explicit(&t->ctr[C_YIELDS], memory_order_relaxed);
    b->snap_preempts =
        atomic_load_explicit(&t->ctr[C_PREEMPTIONS], memory_order_relaxed);
    break;
  case GVL_EV_SUSPENDED:
    r->why = suspend_reason(b, t);
    break;
  default:                   /* PREEMPT_REQ: t is only an identity here */
    break;
  }
}

void gvl__trace_event(gvl_t *g, gvl_thread_t *t, gvl_event_t ev, uint64_t now) {
  session_t *s = atomic_load_explicit(&g->trace, memory_order_acquire);
  tbuf_t *b;
  rec_t *r;
  if (!s || !(r = rec_begin(s, &b, now))) return;
  r->ns = now;
  r->kind = (uint8_t)ev;
  fill_gvl_event(r, b, t, ev);
  rec_commit(b);
}

/* at: the event's time, or 0 for now. */
static int record_user(gvl_t *g, int kind, const char *cat, const char *name,
                       uint64_t arg, uint64_t at) {
  session_t *s;
  tbuf_t *b;
  rec_t *r;
  if (!g) return EINVAL;
  if (!(s = atomic_load_explicit(&g->trace, memory_order_acquire))) return 0;
  if (!(r = rec_begin(s, &b, 0))) return 0;
  r->ns = at ? at : gvl__now();
  r->kind = (uint8_t)kind;
  r->p = name;
  r->cat = cat;
  r->arg = arg;
  rec_commit(b);
  return 0;
}

int gvl_trace_begin(gvl_t *g, const char *cat, const char *name) {
  if (!cat || !name) return EINVAL;
  return record_user(g, K_BEGIN, cat, name, 0, 0);
}

int gvl_trace_end(gvl_t *g, const char *cat, const char *name) {
  if (!cat) return EINVAL;
  return record_user(g, K_END, cat, name, 0, 0);
}

int gvl_trace_span(gvl_t *g, const char *cat, const char *name,
                   uint64_t start_ns, uint64_t end_ns) {
  if (!cat || !name || !start_ns || end_ns < start_ns) return EINVAL;
  return record_user(g, K_SPAN, cat, name, end_ns, start_ns);
}

int gvl_trace_instant(gvl_t *g, const char *cat, const char *name,
                      uint64_t arg) {
  if (!cat || !name) return EINVAL;
  return record_user(g, K_INSTANT, cat, name, arg, 0);
}

int gvl_trace_counter(gvl_t *g, const char *name, int64_t value) {
  if (!name) return EINVAL;
  return record_user(g, K_COUNTER, "counter", name, (uint64_t)value, 0);
}

/* ---- starting and stopping -------------------------------------------------- */

static int check_cfg(const gvl_trace_config_t *c) {
  if (c->events_per_thread > MAX_EVENTS || c->max_threads > MAX_THREADS ||
      (c->flags & ~(GVL_TRACE_RING | GVL_TRACE_STOP_FULL)) ||
      ((c->flags & GVL_TRACE_RING) && (c->flags & GVL_TRACE_STOP_FULL)))
    return EINVAL;
  return 0;
}

/* s->mu held: room for max_threads buffers in s->bufs. */
static int grow_bufs(session_t *s, uint32_t max_threads) {
  if (s->abufs >= max_threads) return 0;
  tbuf_t **nb = realloc(s->bufs, max_threads * sizeof *nb);
  if (!nb) return ENOMEM;
  s->bufs = nb;
  s->abufs = max_threads;
  return 0;
}

static int start_locked(session_t *s, const char *path,
                        const gvl_trace_config_t *c) {
  uint32_t maxt = c->max_threads ? c->max_threads : DEF_THREADS;
  int rc;
  if (atomic_load(&s->on) || s->stopping) return EALREADY;
  /* Buffers are never freed before gvl_destroy (see the top of the file),
   * so max_threads caps the buffers of one run, not the array. */
  if ((rc = grow_bufs(s, s->nbufs + maxt))) return rc;
  if (!(s->out = fopen(path, "w"))) return errno ? errno : EIO;
  s->cap = c->events_per_thread ? c->events_per_thread : DEF_EVENTS;
  s->max_threads = maxt;
  s->flags = c->flags;
  atomic_store(&s->lost_nobuf, 0);
  atomic_store(&s->full_stop, 0);
  s->t0 = gvl__now();
  atomic_store(&s->run, atomic_fetch_add(&next_run, 1));
  atomic_store(&s->on, 1);
  atomic_store_explicit(&s->g->trace, (void *)s, memory_order_release);
  return 0;
}

int gvl_trace_start(gvl_t *g, const char *path, const gvl_trace_config_t *cfg) {
  static const gvl_trace_config_t defaults;
  const gvl_trace_config_t *c = cfg ? cfg : &defaults;
  session_t *s;
  int rc;
  if (!g || !path || !*path || check_cfg(c)) return EINVAL;
  if (!(s = session_get(g, true))) return ENOMEM;
  pthread_mutex_lock(&s->mu);
  rc = start_locked(s, path, c);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int gvl_trace_active(gvl_t *g) {
  return g && atomic_load_explicit(&g->trace, memory_order_acquire) != NULL;
}

/* Wait until no recorder is inside rec_begin/rec_commit.  Recorders never
 * block there, so this is short. */
static void drain(session_t *s) {
  for (uint32_t i = 0; i < s->nbufs; i++)
    while (atomic_load(&s->bufs[i]->busy)) sched_yield();
}

static void write_trace(session_t *s);   /* below */

/* Turn recording off, write the file, free the event arrays. */
static int stop_session(session_t *s) {
  int rc = 0;
  pthread_mutex_lock(&s->mu);
  if (!atomic_load(&s->on)) {
    pthread_mutex_unlock(&s->mu);
    return ESRCH;
  }
  atomic_store(&s->on, 0);
  atomic_store_explicit(&s->g->trace, NULL, memory_order_release);
  drain(s);
  s->t_end = gvl__now();
  s->stopping = 1;
  pthread_mutex_unlock(&s->mu);
  /* Nobody records into this session until the next start, which waits
   * for stopping to clear: the buffers are ours to read. */
  write_trace(s);
  if (ferror(s->out)) rc = EIO;
  if (fclose(s->out) && !rc) rc = errno ? errno : EIO;
  pthread_mutex_lock(&s->mu);
  s->out = NULL;
  for (uint32_t i = 0; i < s->nbufs; i++) {
    free(s->bufs[i]->ev);
    s->bufs[i]->ev = NULL;
  }
  s->stopping = 0;
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int gvl_trace_stop(gvl_t *g) {
  session_t *s;
  if (!g) return EINVAL;
  if (!(s = session_get(g, false))) return ESRCH;
  return stop_session(s);
}

/* ---- counters and names ------------------------------------------------------- */

static void buf_counts(const session_t *s, const tbuf_t *b, uint64_t *kept,
                       uint64_t *lost) {
  uint64_t n = atomic_load_explicit(&b->n, memory_order_relaxed);
  (void)s;
  *kept = n < b->cap ? n : b->cap;
  *lost = n - *kept;
}

int gvl_trace_stats(gvl_t *g, gvl_trace_stats_t *out) {
  session_t *s;
  if (!g || !out) return EINVAL;
  memset(out, 0, sizeof *out);
  if (!(s = session_get(g, false))) return 0;
  pthread_mutex_lock(&s->mu);
  uint64_t run = atomic_load(&s->run);
  for (uint32_t i = 0; i < s->nbufs; i++) {
    uint64_t kept, lost;
    if (atomic_load(&s->bufs[i]->run) != run) continue;
    buf_counts(s, s->bufs[i], &kept, &lost);
    out->recorded += kept;
    out->lost += lost;
    out->threads++;
  }
  out->lost += atomic_load(&s->lost_nobuf);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

int gvl_trace_set_thread_name(const char *name) {
  if (!name) return EINVAL;
  snprintf(tl_name, sizeof tl_name, "%s", name);
  if (!tl_serial) return 0;        /* no buffer anywhere yet */
  pthread_once(&reg_once, reg_init);
  pthread_mutex_lock(&reg_mu);
  for (session_t *s = reg_head; s; s = s->next) {
    pthread_mutex_lock(&s->mu);
    for (uint32_t i = 0; i < s->nbufs; i++)
      if (s->bufs[i]->serial == tl_serial)
        memcpy(s->bufs[i]->name, tl_name, NAME_MAX_);
    pthread_mutex_unlock(&s->mu);
  }
  pthread_mutex_unlock(&reg_mu);
  return 0;
}

/* ---- the environment and destroy --------------------------------------------- */

/* Expand %p and %g; without %g, GVLs after the first get ".<n>" inserted
 * before a trailing ".json" so that no GVL overwrites another's file. */
static void env_path(char *out, size_t size, const char *tmpl, uint64_t id,
                     bool nth) {
  size_t o = 0;
  bool has_g = false;
  for (const char *p = tmpl; *p && o + 24 < size; p++) {
    if (p[0] == '%' && (p[1] == 'p' || p[1] == 'g')) {
      has_g |= p[1] == 'g';
      o += (size_t)snprintf(out + o, size - o, "%" PRIu64,
                            p[1] == 'p' ? (uint64_t)getpid() : id);
      p++;
    } else {
      out[o++] = *p;
    }
  }
  out[o] = '\0';
  if (has_g || !nth) return;
  size_t len = strlen(out);
  bool json = len >= 5 && !strcmp(out + len - 5, ".json");
  char tail[8] = "";
  if (json) {
    memcpy(tail, out + len - 5, 6);
    out[len - 5] = '\0';
  }
  snprintf(out + strlen(out), size - strlen(out), ".%" PRIu64 "%s", id, tail);
}

void gvl__trace_env(gvl_t *g) {
  const char *tmpl = getenv("GVLOOP_TRACE");
  const char *evs = getenv("GVLOOP_TRACE_EVENTS");
  const char *mode = getenv("GVLOOP_TRACE_MODE");
  gvl_trace_config_t c;
  char path[4096];
  if (!tmpl || !*tmpl) return;
  memset(&c, 0, sizeof c);
  if (evs) c.events_per_thread = (uint32_t)strtoul(evs, NULL, 10);
  if (c.events_per_thread > MAX_EVENTS) c.events_per_thread = MAX_EVENTS;
  if (mode && !strcmp(mode, "ring")) c.flags = GVL_TRACE_RING;
  if (mode && !strcmp(mode, "stop")) c.flags = GVL_TRACE_STOP_FULL;
  unsigned nth = atomic_fetch_add(&env_traces, 1);
  env_path(path, sizeof path, tmpl, g->uid, nth > 0);
  int rc = gvl_trace_start(g, path, &c);
  if (rc)   /* the user asked for a trace and has no other way to learn */
    fprintf(stderr, "gvloop: GVLOOP_TRACE: cannot trace to %s: %s\n", path,
            strerror(rc));
}

void gvl__trace_fini(gvl_t *g) {
  session_t *s, **pp;
  pthread_once(&reg_once, reg_init);
  pthread_mutex_lock(&reg_mu);
  for (pp = &reg_head; (s = *pp) && s->g != g; pp = &s->next) {
  }
  if (s) *pp = s->next;
  pthread_mutex_unlock(&reg_mu);
  if (!s) return;
  if (atomic_load(&s->on)) (void)stop_session(s);
  for (uint32_t i = 0; i < s->nbufs; i++) {
    free(s->bufs[i]->ev);
    free(s->bufs[i]);
  }
  free(s->bufs);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* ---- writing the file ------------------------------------------------------------
 * Interpretation of the raw records:
 *  - every RESUMED starts a hold; the holds of all threads, sorted by time,
 *    are the sequence of holders (one holder at a time, so their clock
 *    reads, taken while holding, are in true order);
 *  - a hold ends at its thread's SUSPENDED, or at the next holder's
 *    RESUMED if that is earlier (a thread that yields or is preempted
 *    reports SUSPENDED after handing over, so it may come a little after
 *    the next RESUMED);
 *  - a wait that ends in a handoff is split at the previous hold's end:
 *    the rest ("wake-up") is the handoff and the receiver's wake-up;
 *  - READY..RESUMED is waiting; SUSPENDED(blocking)..READY/RESUMED is a
 *    blocking region, SUSPENDED(cond wait)..RESUMED a condition wait;
 *  - a hold that began after waiting was handed over by the previous
 *    holder: a flow arrow joins the two. */

typedef struct {
  uint64_t ns;
  uint32_t b, i;        /* buffer index, record index within it */
  const void *h;        /* handle */
} acq_t;

typedef struct {
  session_t *s;
  FILE *f;
  tbuf_t **bufs;        /* buffers of this run */
  uint32_t nb;
  int *tids;            /* display thread ids, unique per run */
  acq_t *acq;           /* every acquisition, in time order */
  uint64_t *acq_end;    /* end of each hold */
  uint8_t *acq_waited;  /* the hold was handed over after a wait */
  size_t nacq;
  int32_t **rk;         /* per buffer: acquisition index of each record */
  uint64_t mismatched;
  int pid_gvl, pid_layers;
  long early_b;         /* the one buffer drawn holding from the start */
} wr_t;

static const rec_t *rec_at(const wr_t *w, uint32_t b, uint64_t i) {
  const tbuf_t *t = w->bufs[b];
  uint64_t n = atomic_load_explicit(&t->n, memory_order_relaxed);
  uint64_t first = n > t->cap && (w->s->flags & GVL_TRACE_RING) ? n % t->cap : 0;
  return &t->ev[(first + i) % t->cap];
}

static uint64_t rec_count(const wr_t *w, uint32_t b) {
  uint64_t n = atomic_load_explicit(&w->bufs[b]->n, memory_order_relaxed);
  return n < w->bufs[b]->cap ? n : w->bufs[b]->cap;
}

/* A full buffer in drop mode: nothing is known after its last record. */
static bool truncated(const wr_t *w, uint32_t b) {
  return !(w->s->flags & GVL_TRACE_RING) &&
         atomic_load_explicit(&w->bufs[b]->n, memory_order_relaxed) >
             w->bufs[b]->cap;
}

static int acq_cmp(const void *a, const void *b) {
  const acq_t *x = a, *y = b;
  if (x->ns != y->ns) return x->ns < y->ns ? -1 : 1;
  if (x->b != y->b) return x->b < y->b ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* Length of the valid UTF-8 sequence at p, or 0.  (Names are cut at 31
 * bytes, possibly inside a character; JSON must be valid UTF-8.) */
static int utf8_len(const unsigned char *p) {
  int n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
  unsigned lo = 0x80, hi = 0xbf;   /* allowed range of the second byte */
  if (p[0] == 0xe0) lo = 0xa0;     /* no overlong forms */
  if (p[0] == 0xed) hi = 0x9f;     /* no surrogates */
  if (p[0] == 0xf0) lo = 0x90;
  if (p[0] == 0xf4) hi = 0x8f;     /* nothing above U+10FFFF */
  if (p[0] > 0xf4 || !n || p[1] < lo || p[1] > hi) return 0;
  for (int i = 2; i < n; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  return n;
}

static void put_str(FILE *f, const char *str) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(str ? str : ""); *p; p++) {
    int n;
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else if (*p < 0x80) fputc(*p, f);
    else if ((n = utf8_len(p))) fwrite(p, 1, (size_t)n, f), p += n - 1;
    else fputs("\\ufffd", f);
  }
  fputc('"', f);
}

/* Timestamps in microseconds with nanosecond digits. */
static void put_ts(const wr_t *w, const char *key, uint64_t ns) {
  uint64_t rel = ns > w->s->t0 ? ns - w->s->t0 : 0;
  fprintf(w->f, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, rel / 1000, rel % 1000);
}

/* From the same origin as put_ts: a span that began before the trace (a
 * gvl_trace_span() of earlier work) starts at the origin and ends on time. */
static void put_dur(const wr_t *w, uint64_t from, uint64_t to) {
  if (from < w->s->t0) from = w->s->t0;
  uint64_t d = to > from ? to - from : 0;
  fprintf(w->f, ",\"dur\":%" PRIu64 ".%03" PRIu64, d / 1000, d % 1000);
}

/* Open one event object; the caller adds fields and closes it with '}'. */
static void ev_open(wr_t *w, const char *ph, const char *cat, const char *name,
                    int pid, uint32_t b, uint64_t ns) {
  fprintf(w->f, ",\n{\"ph\":\"%s\",\"cat\":", ph);
  put_str(w->f, cat);
  fputs(",\"name\":", w->f);
  put_str(w->f, name);
  fprintf(w->f, ",\"pid\":%d,\"tid\":%d", pid, w->tids[b]);
  put_ts(w, "ts", ns);
}

/* ---- pass 1: acquisitions, hold ends, handoffs ---------------------------- */

static int collect_acq(wr_t *w) {
  size_t n = 0;
  for (uint32_t b = 0; b < w->nb; b++)
    for (uint64_t i = 0; i < rec_count(w, b); i++)
      n += rec_at(w, b, i)->kind == GVL_EV_RESUMED;
  w->acq = malloc((n ? n : 1) * sizeof *w->acq);
  w->acq_end = malloc((n ? n : 1) * sizeof *w->acq_end);
  w->acq_waited = calloc(n ? n : 1, 1);
  if (!w->acq || !w->acq_end || !w->acq_waited) return ENOMEM;
  for (uint32_t b = 0; b < w->nb; b++)
    for (uint64_t i = 0; i < rec_count(w, b); i++) {
      const rec_t *r = rec_at(w, b, i);
      if (r->kind == GVL_EV_RESUMED)
        w->acq[w->nacq++] = (acq_t){r->ns, b, (uint32_t)i, r->p};
    }
  qsort(w->acq, w->nacq, sizeof *w->acq, acq_cmp);
  return 0;
}

/* The end of hold k, whose RESUMED is record i of buffer b; and whether it
 * was reached by waiting (READY or a condition wait just before). */
static void hold_bounds(wr_t *w, size_t k) {
  uint32_t b = w->acq[k].b;
  uint64_t n = rec_count(w, b), end = w->s->t_end;
  if (truncated(w, b)) end = rec_at(w, b, n - 1)->ns;
  for (uint64_t i = w->acq[k].i + 1; i < n; i++) {
    const rec_t *r = rec_at(w, b, i);
    if (r->kind == GVL_EV_SUSPENDED || r->kind == GVL_EV_OWNER_DIED ||
        r->kind == GVL_EV_RESUMED) {
      end = r->ns;
      break;
    }
  }
  if (k + 1 < w->nacq && w->acq[k + 1].ns < end) end = w->acq[k + 1].ns;
  w->acq_end[k] = end;
  for (uint64_t i = w->acq[k].i; i-- > 0;) {
    const rec_t *r = rec_at(w, b, i);
    if (r->kind == GVL_EV_READY ||
        (r->kind == GVL_EV_SUSPENDED && r->why == W_COND)) {
      w->acq_waited[k] = 1;
      break;
    }
    if (r->kind == GVL_EV_SUSPENDED || r->kind == GVL_EV_RESUMED) break;
  }
}

static int index_acq(wr_t *w) {
  if (!(w->rk = calloc(w->nb, sizeof *w->rk))) return ENOMEM;
  for (uint32_t b = 0; b < w->nb; b++)
    if (!(w->rk[b] = malloc((rec_count(w, b) + 1) * sizeof **w->rk)))
      return ENOMEM;
  for (size_t k = 0; k < w->nacq; k++) {
    w->rk[w->acq[k].b][w->acq[k].i] = (int32_t)k;
    hold_bounds(w, k);
  }
  return 0;
}

/* The buffer of the thread that held (or was just handing over) the GVL
 * when the preempt request of handle h was made at ns; -1 if unknown. */
static int preempt_target(const wr_t *w, const void *h, uint64_t ns) {
  size_t lo = 0, hi = w->nacq;
  while (lo < hi) {          /* first acquisition after ns */
    size_t mid = (lo + hi) / 2;
    if (w->acq[mid].ns <= ns) lo = mid + 1; else hi = mid;
  }
  for (size_t k = lo; k-- > 0 && k + 3 > lo;)
    if (w->acq[k].h == h) return (int)w->acq[k].b;
  if (lo < w->nacq && w->acq[lo].h == h) return (int)w->acq[lo].b;
  return -1;
}

/* Threads whose first GVL record is a SUSPENDED were holding when the trace
 * started, but only one can have been: a thread that yielded or was
 * preempted just before the start reports SUSPENDED after its handoff, so
 * it looks like a holder too, beside the thread it handed to (whose RESUMED
 * came before the start).  The holder is the one whose SUSPENDED was read
 * while still holding (a release, a blocking region, a condition wait),
 * else the one that reported last.  Ring mode keeps a different window per
 * thread, so there each may have held at the start of its own. */
static void pick_early_holder(wr_t *w) {
  uint64_t best_ns = 0;
  bool best_sure = false;
  w->early_b = -1;
  for (uint32_t b = 0; b < w->nb; b++) {
    uint64_t i, n = rec_count(w, b);
    for (i = 0; i < n; i++)
      if (rec_at(w, b, i)->kind < K_BEGIN &&
          rec_at(w, b, i)->kind != GVL_EV_PREEMPT_REQ)
        break;
    const rec_t *r = i < n ? rec_at(w, b, i) : NULL;
    if (!r || r->kind != GVL_EV_SUSPENDED) continue;
    bool sure = r->why == W_BLOCK || r->why == W_COND;
    if (r->why == W_RELEASE) {      /* unless a READY follows: a yield */
      uint64_t j = i + 1;
      while (j < n && (rec_at(w, b, j)->kind == GVL_EV_PREEMPT_REQ ||
                       rec_at(w, b, j)->kind >= K_BEGIN))
        j++;
      sure = !(j < n && rec_at(w, b, j)->kind == GVL_EV_READY);
    }
    if (w->early_b < 0 || (sure && !best_sure) ||
        (sure == best_sure && r->ns > best_ns)) {
      w->early_b = b;
      best_ns = r->ns;
      best_sure = sure;
    }
  }
}

/* ---- pass 2: one thread's tracks ------------------------------------------- */

typedef enum { ST_NONE, ST_WAIT, ST_HOLD, ST_BLOCK, ST_COND } st_kind_t;

typedef struct {
  st_kind_t kind;
  uint64_t since;
  int prio, req, cpu;  /* cpu: at READY (wait) or RESUMED (hold) */
  size_t k;            /* ST_HOLD: its acquisition */
  unsigned depth;      /* open spans of the other layers */
  uint64_t handed_at;  /* end of a hold just handed over by a yield or a
                          preemption, 0 otherwise */
  bool seen;           /* a GVL state record of this thread was seen */
} st_t;

static void emit_span(wr_t *w, uint32_t b, const char *name, uint64_t from,
                      uint64_t to, const char *args) {
  ev_open(w, "X", "gvl", name, w->pid_gvl, b, from);
  put_dur(w, from, to);
  fprintf(w->f, ",\"args\":{%s}}", args ? args : "");
}

/* A boosted request the cap turned down waits and holds at normal
 * priority; an interactive promotion raises a normal one. */
static const char *boost_arg(const st_t *st) {
  if (st->req > 0) return st->prio >= st->req ? "\"boost\":\"granted\"," : "\"boost\":\"refused\",";
  return st->prio > st->req ? "\"boost\":\"interactive\"," : "";
}

static void emit_hold(wr_t *w, uint32_t b, st_t *st, const char *why) {
  size_t k = st->k;
  uint64_t end = w->acq_end[k];
  char args[192];
  int o = snprintf(args, sizeof args,
                   "\"prio\":%d,\"req_prio\":%d,%s\"reason\":\"%s\",\"cpu\":%d",
                   st->prio, st->req, boost_arg(st), why, st->cpu);
  if (w->acq_waited[k] && k > 0 && w->acq[k - 1].b != b)
    o += snprintf(args + o, sizeof args - (size_t)o, ",\"from\":%d",
                  w->tids[w->acq[k - 1].b]);
  bool to = k + 1 < w->nacq && w->acq_waited[k + 1] && w->acq[k + 1].b != b;
  if (to)
    snprintf(args + o, sizeof args - (size_t)o, ",\"handoff_to\":%d",
             w->tids[w->acq[k + 1].b]);
  emit_span(w, b, st->prio > 0 ? "hold boosted" : "hold", st->since, end, args);
  st->handed_at = end;
  if (to) {            /* the arrow leaves from the end of this hold */
    uint64_t at = end > st->since ? end - 1 : end;
    ev_open(w, "s", "gvl", "handoff", w->pid_gvl, b, at);
    fprintf(w->f, ",\"id\":%zu}", k + 1);
  }
}

static void emit_flow_in(wr_t *w, uint32_t b, size_t k) {
  if (!w->acq_waited[k] || k == 0 || w->acq[k - 1].b == b) return;
  ev_open(w, "f", "gvl", "handoff", w->pid_gvl, b, w->acq[k].ns);
  fprintf(w->f, ",\"bp\":\"e\",\"id\":%zu}", k);
}

/* Close whatever non-hold state is open at ns. */
/* The start of the wake-up that ends a wait with acquisition k: the end of
 * the previous holder's hold when it handed the GVL over, or 0 if k was not
 * a handoff.  From then on nobody runs with the GVL until k's RESUMED. */
static uint64_t wake_start(const wr_t *w, uint32_t b, long k, uint64_t since,
                           uint64_t ns) {
  if (k <= 0 || !w->acq_waited[k] || w->acq[k - 1].b == b) return 0;
  uint64_t at = w->acq_end[k - 1];
  return at > since && at < ns ? at : 0;
}

/* Close whatever non-hold state is open at ns; k: the acquisition at ns
 * (-1 if none). */
static void close_gap(wr_t *w, uint32_t b, st_t *st, uint64_t ns, long k) {
  char args[112];
  if (st->kind == ST_WAIT) {
    uint64_t wake = wake_start(w, b, k, st->since, ns);
    snprintf(args, sizeof args, "\"prio\":%d,\"req_prio\":%d,%s\"cpu\":%d",
             st->prio, st->req, boost_arg(st), st->cpu);
    emit_span(w, b, st->prio > 0 ? "wait boosted" : "wait", st->since,
              wake ? wake : ns, args);
    if (wake) {
      snprintf(args, sizeof args, "\"from\":%d", w->tids[w->acq[k - 1].b]);
      emit_span(w, b, "wake-up", wake, ns, args);
    }
  } else if (st->kind == ST_BLOCK) {
    emit_span(w, b, "blocking", st->since, ns, NULL);
  } else if (st->kind == ST_COND) {
    emit_span(w, b, "cond wait", st->since, ns, NULL);
  }
  if (st->kind != ST_HOLD) st->kind = ST_NONE;
}

static void on_preempt(wr_t *w, uint32_t b, const rec_t *r) {
  int tb = preempt_target(w, r->p, r->ns);
  ev_open(w, "i", "gvl", "preempt request", w->pid_gvl, tb >= 0 ? (uint32_t)tb : b,
          r->ns);
  fprintf(w->f, ",\"s\":\"t\",\"args\":{\"by\":%d,\"target_known\":%s}}",
          w->tids[b], tb >= 0 ? "true" : "false");
}

/* The thread's first GVL record is a SUSPENDED: it was holding when the
 * trace started (or, in ring mode, when its kept window starts).  The hold
 * is drawn from then, up to the first acquisition by another thread. */
static void emit_early_hold(wr_t *w, uint32_t b, st_t *st, const rec_t *r,
                            uint64_t i) {
  uint64_t from = w->s->t0, end = r->ns, n = rec_count(w, b);
  const char *why = why_name[r->why];
  char args[96];
  /* Without the counters of an acquisition seen earlier, a yield or a
   * preemption looks like a release; the READY right after tells. */
  while (++i < n && (rec_at(w, b, i)->kind == GVL_EV_PREEMPT_REQ ||
                     rec_at(w, b, i)->kind >= K_BEGIN)) {
  }
  if (r->why == W_RELEASE && i < n && rec_at(w, b, i)->kind == GVL_EV_READY)
    why = "yield or preempted";
  if (w->s->flags & GVL_TRACE_RING) from = rec_at(w, b, 0)->ns;
  else if (w->early_b != (long)b) return;
  for (size_t k = 0; k < w->nacq; k++)
    if (w->acq[k].b != b) {
      if (w->acq[k].ns < end) end = w->acq[k].ns;
      break;
    }
  if (end < from) return;
  snprintf(args, sizeof args, "\"reason\":\"%s\",\"held_before_trace\":true", why);
  emit_span(w, b, "hold", from, end, args);
  st->handed_at = end;
}

static void on_gvl_rec(wr_t *w, uint32_t b, st_t *st, const rec_t *r,
                       uint64_t i) {
  bool first = !st->seen && r->kind != GVL_EV_PREEMPT_REQ;
  if (r->kind != GVL_EV_PREEMPT_REQ) st->seen = true;
  switch (r->kind) {
  case GVL_EV_READY: {
    /* A thread that yields or is preempted queues again at once, but its
     * READY is reported only after the handoff: its wait starts when its
     * hold ended. */
    uint64_t since = st->handed_at && st->handed_at < r->ns ? st->handed_at : r->ns;
    if (st->kind == ST_HOLD) emit_hold(w, b, st, "release");
    close_gap(w, b, st, r->ns, -1);
    *st = (st_t){ST_WAIT, since, r->prio, r->req, r->cpu, 0, st->depth, 0, true};
    break;
  }
  case GVL_EV_RESUMED:
    if (st->kind == ST_HOLD) emit_hold(w, b, st, "release");
    close_gap(w, b, st, r->ns, w->rk[b][i]);
    *st = (st_t){ST_HOLD, r->ns, r->prio, r->req, r->cpu, (size_t)w->rk[b][i],
                 st->depth, 0, true};
    emit_flow_in(w, b, st->k);
    break;
  case GVL_EV_SUSPENDED: {
    bool handed = r->why == W_YIELD || r->why == W_PREEMPT;
    if (first) emit_early_hold(w, b, st, r, i);
    if (st->kind == ST_HOLD) emit_hold(w, b, st, why_name[r->why]);
    close_gap(w, b, st, r->ns, -1);
    if (!handed) st->handed_at = 0;
    st->kind = r->why == W_BLOCK ? ST_BLOCK : r->why == W_COND ? ST_COND : ST_NONE;
    st->since = r->ns;
    break;
  }
  case GVL_EV_OWNER_DIED:
    if (st->kind == ST_HOLD) emit_hold(w, b, st, "died");
    st->kind = ST_NONE;
    ev_open(w, "i", "gvl", "owner died", w->pid_gvl, b, r->ns);
    fputs(",\"s\":\"t\"}", w->f);
    break;
  case GVL_EV_PREEMPT_REQ:
    on_preempt(w, b, r);
    break;
  default:
    break;
  }
}

static void on_user_rec(wr_t *w, uint32_t b, st_t *st, const rec_t *r) {
  switch (r->kind) {
  case K_BEGIN:
    ev_open(w, "B", r->cat, (const char *)r->p, w->pid_layers, b, r->ns);
    fputc('}', w->f);
    st->depth++;
    break;
  case K_END:
    if (!st->depth) {        /* an end with nothing open: dropped */
      w->mismatched++;
      break;
    }
    ev_open(w, "E", r->cat, (const char *)r->p, w->pid_layers, b, r->ns);
    fputc('}', w->f);
    st->depth--;
    break;
  case K_INSTANT:
    ev_open(w, "i", r->cat, (const char *)r->p, w->pid_layers, b, r->ns);
    fprintf(w->f, ",\"s\":\"t\",\"args\":{\"arg\":%" PRIu64 "}}", r->arg);
    break;
  case K_SPAN:
    ev_open(w, "X", r->cat, (const char *)r->p, w->pid_layers, b, r->ns);
    put_dur(w, r->ns, r->arg);
    fputc('}', w->f);
    break;
  case K_COUNTER:
    ev_open(w, "C", r->cat, (const char *)r->p, w->pid_layers, b, r->ns);
    fprintf(w->f, ",\"args\":{\"value\":%" PRId64 "}}", (int64_t)r->arg);
    break;
  default:
    break;
  }
}

static void write_thread(wr_t *w, uint32_t b) {
  st_t st = {ST_NONE, 0, 0, 0, -1, 0, 0, 0, false};
  uint64_t n = rec_count(w, b), end = w->s->t_end;
  if (truncated(w, b) && n) end = rec_at(w, b, n - 1)->ns;   /* nothing known after the last one */
  for (uint64_t i = 0; i < n; i++) {
    const rec_t *r = rec_at(w, b, i);
    if (r->kind >= K_BEGIN) on_user_rec(w, b, &st, r);
    else on_gvl_rec(w, b, &st, r, i);
  }
  if (st.kind == ST_HOLD) emit_hold(w, b, &st, "trace stopped");
  else close_gap(w, b, &st, end, -1);
  while (st.depth--) {
    ev_open(w, "E", "", "", w->pid_layers, b, w->s->t_end);
    fputc('}', w->f);
  }
}

/* ---- the file --------------------------------------------------------------- */

static void write_meta(wr_t *w) {
  fprintf(w->f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
          "\"args\":{\"name\":\"GVL %" PRIu64 "\"}}", w->pid_gvl, w->s->g->uid);
  fprintf(w->f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
          "\"args\":{\"name\":\"layers\"}}", w->pid_layers);
  for (uint32_t b = 0; b < w->nb; b++) {
    char name[NAME_MAX_];
    pthread_mutex_lock(&w->s->mu);      /* names can change meanwhile */
    memcpy(name, w->bufs[b]->name, NAME_MAX_);
    pthread_mutex_unlock(&w->s->mu);
    name[NAME_MAX_ - 1] = '\0';
    for (int pid = w->pid_gvl; pid <= w->pid_layers; pid++) {
      fprintf(w->f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,"
              "\"tid\":%d,\"args\":{\"name\":", pid, w->tids[b]);
      put_str(w->f, name);
      fputs("}}", w->f);
    }
  }
}

static void write_tail(wr_t *w) {
  uint64_t kept = 0, lost = atomic_load(&w->s->lost_nobuf);
  for (uint32_t b = 0; b < w->nb; b++) {
    uint64_t k, l;
    buf_counts(w->s, w->bufs[b], &k, &l);
    kept += k;
    lost += l;
  }
  fprintf(w->f, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{"
          "\"generator\":\"gvloop\",\"gvl\":%" PRIu64 ",\"clock\":\"CLOCK_MONOTONIC\","
          "\"t0_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"threads\":%u,"
          "\"recorded_events\":%" PRIu64 ",\"lost_events\":%" PRIu64 ","
          "\"acquisitions\":%zu,\"unmatched_ends\":%" PRIu64 ",\"mode\":\"%s\"}}\n",
          w->s->g->uid, w->s->t0, w->s->t_end - w->s->t0, w->nb, kept, lost,
          w->nacq, w->mismatched,
          (w->s->flags & GVL_TRACE_RING) ? "ring"
          : (w->s->flags & GVL_TRACE_STOP_FULL) ? "stop when full" : "drop when full");
}

/* Kernel thread ids can be reused by threads that come and go during one
 * run; a repeat gets a made-up id so that two threads never share a track. */
static void assign_tids(wr_t *w) {
  for (uint32_t b = 0; b < w->nb; b++) {
    w->tids[b] = w->bufs[b]->tid;
    for (uint32_t o = 0; o < b; o++)
      if (w->tids[o] == w->tids[b]) {
        w->tids[b] = 1000000000 + (int)b;
        break;
      }
  }
}

static void wr_free(wr_t *w) {
  if (w->rk)
    for (uint32_t b = 0; b < w->nb; b++) free(w->rk[b]);
  free(w->rk);
  free(w->acq);
  free(w->acq_end);
  free(w->acq_waited);
  free(w->tids);
  free(w->bufs);
}

/* Write the JSON file of the run that just stopped.  Called with recording
 * drained and s->stopping set, so the buffers do not change.  On ENOMEM the
 * file still parses, with the GVL states left out (otherData.error). */
static void write_trace(session_t *s) {
  wr_t w;
  memset(&w, 0, sizeof w);
  w.s = s;
  w.f = s->out;
  w.pid_gvl = 1;
  w.pid_layers = 2;
  uint64_t run = atomic_load(&s->run);
  w.bufs = malloc((s->nbufs + 1) * sizeof *w.bufs);
  w.tids = malloc((s->nbufs + 1) * sizeof *w.tids);
  if (w.bufs && w.tids)
    for (uint32_t i = 0; i < s->nbufs; i++)
      if (atomic_load(&s->bufs[i]->run) == run && s->bufs[i]->ev)
        w.bufs[w.nb++] = s->bufs[i];
  fputs("{\"traceEvents\":[\n", w.f);
  if (w.bufs && w.tids && !collect_acq(&w) && !index_acq(&w)) {
    assign_tids(&w);
    pick_early_holder(&w);
    write_meta(&w);
    for (uint32_t b = 0; b < w.nb; b++) write_thread(&w, b);
    write_tail(&w);
  } else {
    fputs("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,"
          "\"args\":{\"name\":\"GVL\"}}\n],\"otherData\":{\"error\":"
          "\"out of memory while writing\"}}\n", w.f);
  }
  wr_free(&w);
}
