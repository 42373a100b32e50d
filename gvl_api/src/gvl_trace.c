/* SPDX-License-Identifier: MIT */
/*
 * gvl_trace.c -- timeline tracing of GVL events: recording, and writing
 * the records to a raw file (gvl_trace_file.h).  Off unless enabled; see
 * gvl_trace.h for what is recorded and the rules.
 *
 * Recording.  Each OS thread records into its own buffer (tbuf_t), found
 * through a small thread-local cache keyed by the run number of the trace,
 * so the hot path takes no lock shared with other threads.  A record is
 * raw: timestamp, kind, handle, priorities, and for a RESUMED the
 * tracer's number of the thread that handed the GVL over (the handoff
 * writes it).  All interpretation (which state a thread is in, which hold
 * an arrow leaves) and the JSON are gvl-trace's (tools/gvl_trace_json.c),
 * which reads the file afterwards in its own process.
 *
 * Lifetime.  A GVL's trace state (session_t) lives until gvl_destroy(), and
 * its buffer headers too, so a thread that loaded g->trace just before a
 * stop never touches freed memory.  A later run hands a header that no
 * thread records into to a thread that has none (so there are never more
 * than the largest max_threads of any run); a thread can tell its own by
 * the run number, as runs are never reused.  Stop and the recorders meet
 * in a Dekker handshake, sequentially consistent: a recorder counts itself
 * into its buffer's busy count (or the session's, without a buffer) and
 * then checks that its run is on; stop clears "on" and then waits until
 * every count is zero.  After that no recorder can write into a buffer or
 * a counter until the next start, so the buffers can be read and their
 * event arrays freed.  busy is a count, not a flag, because a thread that
 * lost its header to a later run may still count itself in and out of it.
 *
 * Writing.  The file is written with write(2) from a buffer of the
 * stopping thread's, not through stdio: a fork() in the middle leaves the
 * child a descriptor to close, with no FILE lock the writer might hold and
 * no buffered bytes that the child's close would add to the parent's file.
 * A stop waits for a write of the same session in progress elsewhere
 * (s->settled), so that the file is complete when any stop, start, destroy
 * or exit() returns.
 *
 * Process-wide state (unavoidable): the registry of sessions, so that a
 * stopped trace's counters and buffers are found again without a field in
 * gvl_t beyond g->trace (which must be NULL while tracing is off), so that
 * traces still running at exit() are written, and so that a fork()ed child
 * stops its copies.  The thread-local cache and thread serial numbers.
 */
#include "gvl_int.h"
#include "gvl_trace.h"
#include "gvl_trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DEF_EVENTS   32768u
#define MAX_EVENTS   (1u << 24)
#define DEF_THREADS  128u
#define MAX_THREADS  GVL__TF_MAX_THREADS
#define NAME_MAX_    GVL__TF_NAME
#define CACHE_WAYS   4

/* Record kinds (kind) and why a hold ended (why): gvl_trace_file.h. */

typedef struct {
  uint64_t ns;
  const void *p;      /* own handle; PREEMPT_REQ: the target; else name   */
  const char *cat;    /* category of the other layers' events             */
  uint64_t arg;       /* instant argument, counter value; RESUMED: the
                         number (my_serial) of the thread that handed
                         the GVL over, 0 if it was not handed over        */
  int16_t prio;       /* READY: queue prio; RESUMED: hold prio            */
  int16_t req;        /* the priority the caller asked for                */
  int16_t cpu;        /* CPU the thread ran on (GVL events), -1 unknown    */
  uint8_t kind;
  uint8_t why;
} rec_t;
_Static_assert(sizeof(rec_t) == 40, "rec_t: 40 bytes, as gvl_trace.h says");

typedef struct {
  _Atomic unsigned busy;     /* threads recording now (see the handshake) */
  _Atomic uint64_t run;      /* run the buffer is set up for; s->mu       */
  _Atomic uint64_t n;        /* events offered this run (may pass cap);
                                written by the owner only                 */
  uint64_t serial;           /* owner thread's serial number; s->mu       */
  int tid;                   /* owner's kernel thread id                  */
  char name[NAME_MAX_];      /* s->mu                                     */
  rec_t *ev;                 /* cap entries; set up/freed under s->mu
                                while no recorder that can pass the
                                checks of rec_begin is busy (one whose run
                                is over may count itself in and out)      */
  uint32_t cap;
} tbuf_t;

typedef struct session {
  gvl_t *g;
  struct session *next;      /* registry; reg_mu                          */
  pthread_mutex_t mu;
  _Atomic int on;            /* recorders may record                      */
  _Atomic uint64_t run;      /* number of the current/last run            */
  _Atomic uint64_t lost_nobuf; /* events of threads past max_threads     */
  _Atomic unsigned nobuf_busy; /* such threads counting one now           */
  int stopping;              /* the file is being written; mu             */
  int starting;              /* a start opens its file, mu not held; mu   */
  pthread_cond_t settled;    /* stopping or starting went back to 0; mu   */
  _Atomic uint64_t full_stop; /* GVL_TRACE_STOP_FULL: the run whose
                                self-stop was claimed                     */
  int fd;                    /* the open file, or -1; mu                  */
  uint64_t env_run;          /* the run, if GVLOOP_TRACE started it, or 0;
                                set by the start; mu                      */
  _Atomic int opening;       /* the file a start has opened and not yet
                                made s->fd, or -1: a child forked then
                                closes its copy, which would keep the
                                file's lock (EBUSY) after the parent's
                                stop                                     */
  /* Written under mu by a start; read by recorders while busy in a live
   * run, and by the stop's writer, with no start possible meanwhile. */
  uint32_t cap, max_threads;
  unsigned flags;
  tbuf_t **bufs;             /* every buffer header; mu (the writer reads
                                it while stopping: no start meanwhile)   */
  uint32_t nbufs, abufs;     /* mu, likewise                              */
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

static int stop_session(session_t *s, uint64_t run);

/* ---- registry, exit and fork --------------------------------------------- */

/* Traces still running when the process exits are written, so that
 * GVLOOP_TRACE works for programs that never destroy their GVL. */
static void at_exit(void) {
  pthread_mutex_lock(&reg_mu);
  for (session_t *s = reg_head; s; s = s->next)
    (void)stop_session(s, 0);   /* also waits for a write in progress */
  pthread_mutex_unlock(&reg_mu);
}

/* Every session's lock too, so that the child sees each descriptor either
 * open and in s->fd or closed (a stop closes it under s->mu). */
static void fork_prepare(void) {
  pthread_mutex_lock(&reg_mu);
  for (session_t *s = reg_head; s; s = s->next) pthread_mutex_lock(&s->mu);
}

static void fork_parent(void) {
  for (session_t *s = reg_head; s; s = s->next) pthread_mutex_unlock(&s->mu);
  pthread_mutex_unlock(&reg_mu);
}

/* The child has one thread: its copies of the traces are turned off and
 * never written (the parent owns the files, also one it was writing at the
 * fork: the child closes its descriptor and has no bytes of it buffered).
 * The locks fork_prepare took are let go; the condition, whose waiters
 * were the parent's threads, is made anew. */
static void fork_child(void) {
  for (session_t *s = reg_head; s; s = s->next) {
    atomic_store(&s->on, 0);
    if (s->g) atomic_store(&s->g->trace, NULL);
    pthread_mutex_unlock(&s->mu);
    pthread_cond_init(&s->settled, NULL);
    s->stopping = 0;
    s->starting = 0;   /* the starting thread's open, if any, is not ours */
    if (s->fd >= 0) (void)close(s->fd);
    s->fd = -1;
    int o = atomic_exchange(&s->opening, -1);
    if (o >= 0) (void)close(o);
    /* Threads counted in are not in the child; the counters stay as they
     * were at the fork (the run has stopped there, for the child). */
    atomic_store(&s->nobuf_busy, 0);
    for (uint32_t i = 0; i < s->nbufs; i++) atomic_store(&s->bufs[i]->busy, 0);
  }
  pthread_mutex_unlock(&reg_mu);
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
    } else if (pthread_cond_init(&s->settled, NULL)) {
      pthread_mutex_destroy(&s->mu);
      free(s);
      s = NULL;
    } else {
      s->fd = -1;
      atomic_init(&s->opening, -1);
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

uint64_t gvl__trace_self(void) { return my_serial(); }

/* The name given by gvl_thread_set_name or gvl_trace_set_thread_name, else
 * the OS name.  A thread nobody named has the program's name (as the
 * kernel keeps it: 15 bytes), like every other such thread; the thread id
 * then tells them apart. */
static void default_name(char *out) {
  long tid = (long)syscall(SYS_gettid);
  size_t prog = strlen(program_invocation_short_name);
  if (tl_name[0]) {
    memcpy(out, tl_name, NAME_MAX_);
  } else if (pthread_getname_np(pthread_self(), out, NAME_MAX_) || !out[0]) {
    snprintf(out, NAME_MAX_, "thread %ld", tid);
  } else if (tid != (long)getpid() && strlen(out) == (prog < 15 ? prog : 15) &&
             !strncmp(out, program_invocation_short_name, 15)) {
    char os[16];
    snprintf(os, sizeof os, "%s", out);
    snprintf(out, NAME_MAX_, "%s %ld", os, tid);
  }
}

/* s->mu held.  The buffer of this thread, set up for the current run: its
 * own header from an earlier run, else one no thread records into this run
 * (its thread has ended or not recorded yet), else a new one. */
static tbuf_t *buf_for_run(session_t *s, uint64_t run) {
  uint64_t serial = my_serial();
  tbuf_t *b = NULL, *spare = NULL;
  uint32_t live = 0;
  for (uint32_t i = 0; i < s->nbufs; i++) {
    tbuf_t *x = s->bufs[i];
    if (x->serial == serial) b = x;
    if (atomic_load(&x->run) == run) live++;
    else if (!spare) spare = x;
  }
  if (b && atomic_load(&b->run) == run) return b;
  if (live >= s->max_threads) return NULL;
  if (!b && !(b = spare)) {
    if (s->nbufs >= s->abufs || !(b = calloc(1, sizeof *b))) return NULL;
    s->bufs[s->nbufs++] = b;
  }
  b->serial = serial;
  free(b->ev);
  if (!(b->ev = malloc((size_t)s->cap * sizeof *b->ev))) return NULL;
  b->cap = s->cap;
  b->tid = (int)syscall(SYS_gettid);
  default_name(b->name);
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
 * events do not take the lock each time.  This first one is counted under
 * the lock, with the run on: before any stop of the run.  An event from
 * before the run (ns, as in rec_begin) sets nothing up: its thread has
 * recorded nothing and must not take one of max_threads' buffers. */
static tbuf_t *buf_slow(session_t *s, uint64_t run, uint64_t ns) {
  tbuf_t *b = NULL;
  if (!atomic_load(&s->on)) return NULL;
  pthread_mutex_lock(&s->mu);
  if (atomic_load(&s->on) && atomic_load(&s->run) == run &&
      !(ns && ns < s->t0)) {
    b = buf_for_run(s, run);
    cache_put(run, b);
    if (!b) atomic_fetch_add(&s->lost_nobuf, 1);
  }
  pthread_mutex_unlock(&s->mu);
  return b;
}

/* The later lost events of a thread without a buffer: counted inside the
 * handshake (on the session's count), so that no stop has read the
 * counter yet and none reads it before the add. */
static void lose_nobuf(session_t *s, uint64_t run) {
  atomic_fetch_add(&s->nobuf_busy, 1);                 /* seq_cst */
  if (atomic_load(&s->on) && atomic_load(&s->run) == run)
    atomic_fetch_add_explicit(&s->lost_nobuf, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&s->nobuf_busy, 1, memory_order_release);
}

/* Run numbers are never reused, so a cache entry whose run matches the
 * session's points into that (live) session. */
static tbuf_t *get_buf(session_t *s, uint64_t run, uint64_t ns) {
  for (int i = 0; i < CACHE_WAYS; i++)
    if (tl_cache[i].run == run) {
      if (!tl_cache[i].b) lose_nobuf(s, run);
      return tl_cache[i].b;
    }
  return buf_slow(s, run, ns);
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
  uint64_t run = atomic_load_explicit(&s->run, memory_order_acquire);
  tbuf_t *b = get_buf(s, run, ns);
  if (!b) return NULL;
  atomic_fetch_add(&b->busy, 1);             /* seq_cst: the handshake */
  /* b->run == run: b is still this thread's (a header changes hands only
   * between runs). */
  if (!atomic_load(&s->on) || atomic_load(&s->run) != run ||
      atomic_load(&b->run) != run || (ns && ns < s->t0)) {
    atomic_fetch_sub_explicit(&b->busy, 1, memory_order_release);
    return NULL;
  }
  uint64_t n = atomic_load_explicit(&b->n, memory_order_relaxed);
  unsigned flags = s->flags;   /* stable while busy: no stop/start can pass */
  if (n >= b->cap && !(flags & GVL_TRACE_RING)) {
    atomic_store_explicit(&b->n, n + 1, memory_order_relaxed); /* lost */
    atomic_fetch_sub_explicit(&b->busy, 1, memory_order_release);
    /* The first thread to fill its buffer writes the file (outside busy,
     * or the stop would wait for itself).  The claim names the run: a late
     * claim of a run that a stop and a new start have passed neither stops
     * the new run nor takes its claim away (a second claim of it then
     * finds it stopped already). */
    if ((flags & GVL_TRACE_STOP_FULL) &&
        atomic_exchange(&s->full_stop, run) != run)
      (void)stop_session(s, run);
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
  atomic_fetch_sub_explicit(&b->busy, 1, memory_order_release);
}

/* Why t is giving the GVL up.  Runs on t's own thread, which is the only
 * writer of in_region and handing at this point, so the plain reads are
 * safe. */
static uint8_t suspend_reason(gvl_thread_t *t) {
  if (t->in_region) return GVL__TW_BLOCK;
  if (atomic_load_explicit(&t->cstate, memory_order_relaxed) == GVL__CW_WAITING)
    return GVL__TW_COND;
  if (t->handing == C_PREEMPTIONS) return GVL__TW_PREEMPT;
  if (t->handing == C_YIELDS) return GVL__TW_YIELD;
  return GVL__TW_RELEASE;
}

/* Which CPU a thread waits and holds on shows whether a waiter spins on
 * the CPU its holder needs (sched_getcpu is a vDSO/rseq read on Linux). */
static void fill_gvl_event(rec_t *r, gvl_thread_t *t, gvl_event_t ev) {
  r->p = t;
  r->cpu = ev == GVL_EV_PREEMPT_REQ ? -1 : (int16_t)sched_getcpu();
  switch (ev) {
  case GVL_EV_READY:
    r->prio = (int16_t)t->qprio;   /* written under g->mu when t was queued,
                                      before READY fires (by t, or by the
                                      thread that queued t) */
    r->req = (int16_t)t->req_prio;
    break;
  case GVL_EV_RESUMED:
    r->prio = (int16_t)atomic_load_explicit(&t->hold_prio, memory_order_relaxed);
    r->req = (int16_t)t->req_prio;
    r->arg = t->trace_from;        /* the giver's number, 0: not handed */
    break;
  case GVL_EV_SUSPENDED:
    r->why = suspend_reason(t);
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
  fill_gvl_event(r, t, ev);
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
  /* A span that ended before the trace started is not recorded (its end,
   * arg, checked against the run's origin as a GVL event's time is). */
  if (!(r = rec_begin(s, &b, kind == GVL__TK_SPAN ? arg : 0))) return 0;
  r->ns = at ? at : gvl__now();
  r->kind = (uint8_t)kind;
  r->cpu = -1;                  /* a CPU is told for GVL events only */
  r->p = name;
  r->cat = cat;
  r->arg = arg;
  rec_commit(b);
  return 0;
}

int gvl_trace_begin(gvl_t *g, const char *cat, const char *name) {
  if (!cat || !name) return EINVAL;
  return record_user(g, GVL__TK_BEGIN, cat, name, 0, 0);
}

int gvl_trace_end(gvl_t *g, const char *cat, const char *name) {
  if (!cat) return EINVAL;
  return record_user(g, GVL__TK_END, cat, name, 0, 0);
}

int gvl_trace_span(gvl_t *g, const char *cat, const char *name,
                   uint64_t start_ns, uint64_t end_ns) {
  if (!cat || !name || !start_ns || end_ns < start_ns) return EINVAL;
  return record_user(g, GVL__TK_SPAN, cat, name, end_ns, start_ns);
}

int gvl_trace_instant(gvl_t *g, const char *cat, const char *name,
                      uint64_t arg) {
  if (!cat || !name) return EINVAL;
  return record_user(g, GVL__TK_INSTANT, cat, name, arg, 0);
}

int gvl_trace_counter(gvl_t *g, const char *name, int64_t value) {
  if (!name) return EINVAL;
  return record_user(g, GVL__TK_COUNTER, "counter", name, (uint64_t)value, 0);
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

/* s->mu held: wait until no other start or stop is under way, then claim
 * the start (starting), or EALREADY. */
static int start_claim(session_t *s) {
  while (s->stopping || s->starting) pthread_cond_wait(&s->settled, &s->mu);
  if (atomic_load(&s->on)) return EALREADY;
  s->starting = 1;
  return 0;
}

/* s->mu held, the start claimed: begin the run into fd. */
static int start_locked(session_t *s, int fd, const gvl_trace_config_t *c,
                        bool env) {
  uint32_t maxt = c->max_threads ? c->max_threads : DEF_THREADS;
  /* A run takes a spare header before it adds one (buf_for_run), so the
   * array never needs more than the largest max_threads. */
  int rc = grow_bufs(s, maxt);
  if (rc) return rc;
  s->fd = fd;
  s->cap = c->events_per_thread ? c->events_per_thread : DEF_EVENTS;
  s->max_threads = maxt;
  s->flags = c->flags;
  atomic_store(&s->lost_nobuf, 0);
  s->t0 = gvl__now();
  atomic_store(&s->run, atomic_fetch_add(&next_run, 1));
  s->env_run = env ? atomic_load(&s->run) : 0;
  atomic_store(&s->on, 1);
  atomic_store_explicit(&s->g->trace, (void *)s, memory_order_release);
  return 0;
}

/* Open path for a trace, or set *err: EBUSY when another trace (of this or
 * another process: an exec'd or forked child with the same GVLOOP_TRACE)
 * is writing it, which an advisory lock held until the file is closed
 * tells.  It is emptied only once the lock is ours. */
static int open_trace_file(const char *path, int *err, _Atomic int *opening) {
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    *err = errno ? errno : EIO;
    return -1;
  }
  atomic_store(opening, fd);   /* before the lock: see session_t.opening */
  struct stat st;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK)
    *err = EBUSY;
  else if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0) != 0)
    *err = errno ? errno : EIO;
  else
    return fd;
  atomic_store(opening, -1);   /* before the number can be reused */
  (void)close(fd);
  return -1;
}

/* gvl_trace_start; env: started by GVLOOP_TRACE (gvl__trace_env). */
static int trace_start(gvl_t *g, const char *path,
                       const gvl_trace_config_t *cfg, bool env) {
  static const gvl_trace_config_t defaults;
  const gvl_trace_config_t *c = cfg ? cfg : &defaults;
  session_t *s;
  int rc;
  if (!g || !path || !*path || check_cfg(c)) return EINVAL;
  if (!(s = session_get(g, true))) return ENOMEM;
  pthread_mutex_lock(&s->mu);
  rc = start_claim(s);
  pthread_mutex_unlock(&s->mu);
  if (rc) return rc;
  /* Opened without s->mu: open() can block (a FIFO waits for its reader,
   * which may be a process that another thread is about to fork, and
   * fork_prepare takes s->mu). */
  int err = 0, fd = open_trace_file(path, &err, &s->opening);
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->opening, -1);
  rc = fd < 0 ? err : start_locked(s, fd, c, env);
  s->starting = 0;
  pthread_cond_broadcast(&s->settled);
  pthread_mutex_unlock(&s->mu);
  if (rc && fd >= 0) (void)close(fd);
  return rc;
}

int gvl_trace_start(gvl_t *g, const char *path, const gvl_trace_config_t *cfg) {
  return trace_start(g, path, cfg, false);
}

int gvl_trace_active(gvl_t *g) {
  return g && atomic_load_explicit(&g->trace, memory_order_acquire) != NULL;
}

/* Wait until no recorder is inside rec_begin/rec_commit or lose_nobuf.
 * Recorders never block there, so this is short, but one may be preempted
 * by the stopping thread (gvl__backoff). */
static void drain(session_t *s) {
  for (int k = 0; atomic_load(&s->nobuf_busy); k++) gvl__backoff(k);
  for (uint32_t i = 0; i < s->nbufs; i++)
    for (int k = 0; atomic_load(&s->bufs[i]->busy); k++) gvl__backoff(k);
}

static int write_trace(session_t *s, int fd);   /* below */

/* write_trace with SIGPIPE blocked in this thread: a reader that went away
 * (a FIFO, a pipe) is an error the caller gets (EPIPE), not the end of the
 * process.  A SIGPIPE the write raised is taken back; one that was pending
 * already is left for its owner. */
static int write_nosigpipe(session_t *s, int fd) {
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  if (pthread_sigmask(SIG_BLOCK, &pipe_set, &old) != 0) return write_trace(s, fd);
  bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  int rc = write_trace(s, fd);
  if (rc == EPIPE && !was_pending) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
    }
  }
  (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

/* Turn recording off, write the file, free the event arrays.  run: the
 * run to stop (a full buffer's self-stop), which returns at once if that
 * run is over; 0: whichever runs (a stop, destroy, exit), which waits for
 * a write in progress before it says ESRCH. */
static int stop_session(session_t *s, uint64_t run) {
  int rc = 0;
  pthread_mutex_lock(&s->mu);
  if (!atomic_load(&s->on) || (run && atomic_load(&s->run) != run)) {
    while (!run && s->stopping) pthread_cond_wait(&s->settled, &s->mu);
    pthread_mutex_unlock(&s->mu);
    return ESRCH;
  }
  atomic_store(&s->on, 0);
  atomic_store_explicit(&s->g->trace, NULL, memory_order_release);
  drain(s);
  s->t_end = gvl__now();
  s->stopping = 1;
  int fd = s->fd;      /* only this stop closes it; a fork's child its copy */
  bool env = s->env_run == atomic_load(&s->run);
  pthread_mutex_unlock(&s->mu);
  /* Nobody records into this session until the next start, which waits
   * for stopping to clear: the buffers are ours to read. */
  rc = write_nosigpipe(s, fd);
  pthread_mutex_lock(&s->mu);
  /* EINTR: Linux has closed the descriptor all the same. */
  if (close(fd) && errno != EINTR && !rc) rc = errno ? errno : EIO;
  if (rc && env)   /* nobody else can learn of it: see gvl__trace_env */
    fprintf(stderr, "gvloop: GVLOOP_TRACE: writing the trace failed: %s\n",
            strerror(rc));
  s->fd = -1;
  for (uint32_t i = 0; i < s->nbufs; i++) {
    free(s->bufs[i]->ev);
    s->bufs[i]->ev = NULL;
  }
  s->stopping = 0;
  pthread_cond_broadcast(&s->settled);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int gvl_trace_stop(gvl_t *g) {
  session_t *s;
  if (!g) return EINVAL;
  if (!(s = session_get(g, false))) return ESRCH;
  return stop_session(s, 0);
}

/* ---- counters and names ------------------------------------------------------- */

/* Whether b is a thread of this run that recorded: a thread whose first
 * event set up its buffer just as a stop came, and lost the event to it
 * (rec_begin), has recorded nothing and is counted nowhere. */
static bool buf_recorded(const tbuf_t *b, uint64_t run) {
  return atomic_load(&b->run) == run &&
         atomic_load_explicit(&b->n, memory_order_relaxed) > 0;
}

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
    if (!buf_recorded(s->bufs[i], run)) continue;
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
        default_name(s->bufs[i]->name);   /* "" names it by the OS again */
    pthread_mutex_unlock(&s->mu);
  }
  pthread_mutex_unlock(&reg_mu);
  return 0;
}

int gvl_thread_set_name(gvl_thread_t *t, const char *name) {
  int rc = gvl__check_self(t);
  if (rc) return rc;
  if (!name || !*name) return EINVAL;
  if (strlen(name) >= NAME_MAX_) return ERANGE;
  return gvl_trace_set_thread_name(name);
}

/* ---- the environment and destroy --------------------------------------------- */

/* Insert ".<n>" before a trailing ".gvlt" or ".json" of out (or at its
 * end); false if it does not fit. */
static bool insert_number(char *out, size_t size, uint64_t n) {
  size_t len = strlen(out);
  bool ext = len >= 5 && (!strcmp(out + len - 5, ".json") ||
                          !strcmp(out + len - 5, ".gvlt"));
  char tail[8] = "";
  if (ext) {
    memcpy(tail, out + len - 5, 6);
    out[len - 5] = '\0';
  }
  size_t at = strlen(out);
  int k = snprintf(out + at, size - at, ".%" PRIu64 "%s", n, tail);
  return k > 0 && (size_t)k < size - at;
}

/* The longest path GVLOOP_TRACE may expand to (gvl_trace.h), so that the
 * process id still fits in a path another trace writes. */
#define ENV_PATH_MAX 4070

/* The process that loaded libgvl.  A child it forks numbers its GVLs on
 * from the numbers the parent had reached, as the parent's next GVLs do:
 * without its process id in their names, the two would write one file. */
static pid_t loaded_pid;
__attribute__((constructor)) static void note_loaded_pid(void) {
  /* With libgvl.a, a program's own constructor may create a GVL first:
   * env_path noted the pid then. */
  if (!loaded_pid) loaded_pid = getpid();
}

/* Expand %p and %g; without %g, GVLs after the first get ".<n>" inserted
 * before a trailing ".gvlt" or ".json" so that no GVL overwrites another's
 * file, and without %p a forked child's get ".<pid>" too.  False if the
 * path does not fit in size or is over ENV_PATH_MAX. */
static bool env_path(char *out, size_t size, const char *tmpl, uint64_t id,
                     bool nth) {
  size_t o = 0;
  bool has_g = false, has_p = false;
  const char *p;
  for (p = tmpl; *p && o + 24 < size; p++) {
    if (p[0] == '%' && (p[1] == 'p' || p[1] == 'g')) {
      has_g |= p[1] == 'g';
      has_p |= p[1] == 'p';
      o += (size_t)snprintf(out + o, size - o, "%" PRIu64,
                            p[1] == 'p' ? (uint64_t)getpid() : id);
      p++;
    } else {
      out[o++] = *p;
    }
  }
  out[o] = '\0';
  if (*p) return false;
  if (!has_g && nth && !insert_number(out, size, id)) return false;
  if (!loaded_pid) loaded_pid = getpid();   /* before the constructor ran */
  if (!has_p && getpid() != loaded_pid &&
      !insert_number(out, size, (uint64_t)getpid()))
    return false;
  return strlen(out) <= ENV_PATH_MAX;
}

void gvl__trace_env(gvl_t *g) {
  const char *tmpl = getenv("GVLOOP_TRACE");
  const char *evs = getenv("GVLOOP_TRACE_EVENTS");
  const char *mode = getenv("GVLOOP_TRACE_MODE");
  gvl_trace_config_t c;
  char path[4096];
  if (!tmpl || !*tmpl) return;
  memset(&c, 0, sizeof c);
  if (evs && *evs) {
    /* Digits only; more than the most a buffer holds is that most. */
    char *end;
    unsigned long long n = 0;
    errno = 0;
    if (*evs >= '0' && *evs <= '9') n = strtoull(evs, &end, 10);
    if (*evs < '0' || *evs > '9' || *end != '\0')
      fprintf(stderr, "gvloop: GVLOOP_TRACE_EVENTS=%s is not a number; the default is used\n",
              evs);
    else
      c.events_per_thread = (errno || n > MAX_EVENTS) ? MAX_EVENTS : (uint32_t)n;
  }
  if (mode && !strcmp(mode, "ring")) c.flags = GVL_TRACE_RING;
  else if (mode && !strcmp(mode, "stop")) c.flags = GVL_TRACE_STOP_FULL;
  else if (mode && *mode)
    fprintf(stderr, "gvloop: GVLOOP_TRACE_MODE=%s is neither ring nor stop; ignored\n", mode);
  unsigned nth = atomic_fetch_add(&env_traces, 1);
  /* The user asked for a trace and has no other way to learn of a failure:
   * each is said on stderr. */
  if (!env_path(path, sizeof path, tmpl, g->uid, nth > 0)) {
    fprintf(stderr, "gvloop: GVLOOP_TRACE: the path is too long; not traced\n");
    return;
  }
  int rc = trace_start(g, path, &c, true);
  if (rc == EBUSY) {
    /* Another process's trace writes it (the same GVLOOP_TRACE passed to
     * an exec'd or forked child): this one goes beside it. */
    char alt[sizeof path];
    memcpy(alt, path, sizeof alt);
    if (insert_number(alt, sizeof alt, (uint64_t)getpid())) {
      fprintf(stderr, "gvloop: GVLOOP_TRACE: %s is being written by another trace; "
              "tracing to %s\n", path, alt);
      memcpy(path, alt, sizeof path);
      rc = trace_start(g, path, &c, true);
    }
  }
  if (rc)
    fprintf(stderr, "gvloop: GVLOOP_TRACE: cannot trace to %s: %s\n", path,
            strerror(rc));
}

/* The trace is stopped (and written) while the session is still in the
 * registry, where exit() finds it and waits for that write. */
void gvl__trace_fini(gvl_t *g) {
  session_t *s, **pp;
  if (!(s = session_get(g, false))) return;
  (void)stop_session(s, 0);
  pthread_mutex_lock(&reg_mu);
  for (pp = &reg_head; *pp && *pp != s; pp = &(*pp)->next) {
  }
  if (*pp) *pp = s->next;
  pthread_mutex_unlock(&reg_mu);
  for (uint32_t i = 0; i < s->nbufs; i++) {
    free(s->bufs[i]->ev);
    free(s->bufs[i]);
  }
  free(s->bufs);
  pthread_cond_destroy(&s->settled);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* ---- writing the file ------------------------------------------------------
 * The stop writes the records as they are (gvl_trace_file.h): the header,
 * each thread's records in order, and a table of the other layers' strings.
 * Turning them into JSON is gvl-trace's work, in a process of its own, so
 * the thread that stops the trace (possibly the GVL's holder) pays only for
 * the copy. */

typedef struct {
  const char *key;
  uint32_t id;
} str_slot_t;

/* The strings met so far, by address: open addressing, at most half full. */
typedef struct {
  str_slot_t *slot;
  const char **list;       /* by number - 1 */
  uint32_t n, cap;         /* cap: 0 or a power of two */
  bool oom;
} strtab_t;

static uint32_t str_hash(const char *p, uint32_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15u;
  return (uint32_t)(x >> 32) & (cap - 1);
}

static int str_grow(strtab_t *t) {
  uint32_t cap = t->cap ? t->cap * 2 : 64;
  str_slot_t *slot = calloc(cap, sizeof *slot);
  const char **list = slot ? realloc(t->list, cap / 2 * sizeof *list) : NULL;
  if (!list) {
    free(slot);
    return ENOMEM;
  }
  for (uint32_t i = 0; i < t->cap; i++) {
    if (!t->slot[i].key) continue;
    uint32_t h = str_hash(t->slot[i].key, cap);
    while (slot[h].key) h = (h + 1) & (cap - 1);
    slot[h] = t->slot[i];
  }
  free(t->slot);
  t->slot = slot;
  t->list = list;
  t->cap = cap;
  return 0;
}

/* The number of str (from 1), added if new; 0 for NULL or out of memory. */
static uint32_t str_id(strtab_t *t, const char *str) {
  if (!str) return 0;
  if (t->n + 1 > t->cap / 2 && str_grow(t)) {
    t->oom = true;
    return 0;
  }
  uint32_t h = str_hash(str, t->cap);
  while (t->slot[h].key && t->slot[h].key != str) h = (h + 1) & (t->cap - 1);
  if (!t->slot[h].key) {
    t->list[t->n] = str;
    t->slot[h] = (str_slot_t){str, ++t->n};
  }
  return t->slot[h].id;
}

/* The file's writer: write(2) behind a buffer of the stopping thread's
 * (without one, if it cannot be had, each piece is written at once). */
#define WBUF 65536

typedef struct {
  int fd;
  int err;                 /* errno of the first failed write, or 0 */
  size_t n;
  char *buf;
} wr_t;

static void wr_bytes(wr_t *w, const char *p, size_t n) {
  while (n && !w->err) {
    ssize_t k = write(w->fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      w->err = k < 0 && errno ? errno : EIO;
      break;
    }
    p += k;
    n -= (size_t)k;
  }
}

static void wr_flush(wr_t *w) {
  wr_bytes(w, w->buf, w->n);
  w->n = 0;
}

static void put(wr_t *w, const void *p, size_t n) {
  if (w->buf && w->n + n > WBUF) wr_flush(w);
  if (!w->buf || n > WBUF) {
    wr_bytes(w, p, n);
    return;
  }
  memcpy(w->buf + w->n, p, n);
  w->n += n;
}

/* The threads of the file by their numbers (my_serial), sorted: a RESUMED
 * record names the thread that handed the GVL over by its place in the
 * file, which no other thread can have had in the run. */
typedef struct {
  uint64_t serial;
  uint32_t idx;
} who_t;

typedef struct {
  who_t *v;            /* NULL if it could not be had: givers unsaid */
  uint32_t n;
} whos_t;

static int who_cmp(const void *a, const void *b) {
  const who_t *x = a, *y = b;
  return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* 1 + the place in the file of thread serial; 0 if it recorded nothing. */
static uint64_t who_find(const whos_t *who, uint64_t serial) {
  who_t key = {serial, 0};
  const who_t *w = who->v ? bsearch(&key, who->v, who->n, sizeof key, who_cmp) : NULL;
  return w ? w->idx + 1u : 0;
}

static void put_rec(wr_t *f, const rec_t *r, strtab_t *st, const whos_t *who) {
  gvl__tf_rec_t o;
  memset(&o, 0, sizeof o);
  o.ns = r->ns;
  o.prio = r->prio;
  o.req = r->req;
  o.cpu = r->cpu;
  o.kind = r->kind;
  o.why = r->why;
  if (r->kind >= GVL__TK_BEGIN) {
    o.arg = r->arg;
    o.name = str_id(st, r->p);
    o.cat = str_id(st, r->cat);
  } else {
    o.id = (uint64_t)(uintptr_t)r->p;
    if (r->kind == GVL_EV_RESUMED && r->arg) {
      o.why = GVL__TR_HANDED;
      o.arg = who_find(who, r->arg);
    }
  }
  put(f, &o, sizeof o);
}

/* One thread: its header, then its kept records, oldest first (in ring
 * mode the oldest is the slot after the newest). */
static void put_thread(session_t *s, wr_t *w, tbuf_t *b, strtab_t *st,
                       const whos_t *who) {
  gvl__tf_thread_t th;
  uint64_t n = atomic_load_explicit(&b->n, memory_order_relaxed);
  uint64_t kept = n < b->cap ? n : b->cap;
  uint64_t first = n > b->cap && (s->flags & GVL_TRACE_RING) ? n % b->cap : 0;
  memset(&th, 0, sizeof th);
  th.offered = n;
  th.kept = (uint32_t)kept;
  th.tid = b->tid;
  pthread_mutex_lock(&s->mu);             /* names can change meanwhile */
  memcpy(th.name, b->name, sizeof th.name);
  pthread_mutex_unlock(&s->mu);
  th.name[sizeof th.name - 1] = '\0';
  put(w, &th, sizeof th);
  for (uint64_t i = 0; i < kept; i++)
    put_rec(w, &b->ev[(first + i) % b->cap], st, who);
}

/* Write the file of the run that just stopped.  Called with recording
 * drained and s->stopping set, so the buffers do not change.  The errno of
 * a failed write; else ENOMEM if a string could not be numbered (its
 * records then name none). */
static int write_trace(session_t *s, int fd) {
  gvl__tf_head_t h;
  strtab_t st;
  wr_t w = {fd, 0, 0, malloc(WBUF)};
  uint64_t run = atomic_load(&s->run);
  memset(&h, 0, sizeof h);
  memset(&st, 0, sizeof st);
  memcpy(h.magic, GVL__TF_MAGIC, sizeof h.magic);
  h.version = GVL__TF_VERSION;
  h.order = GVL__TF_ORDER;
  h.gvl_uid = s->g->uid;
  h.t0_ns = s->t0;
  h.t_end_ns = s->t_end;
  h.lost_nobuf = atomic_load(&s->lost_nobuf);
  h.flags = s->flags;
  whos_t who = {malloc((s->nbufs ? s->nbufs : 1) * sizeof *who.v), 0};
  for (uint32_t i = 0; i < s->nbufs; i++)
    if (buf_recorded(s->bufs[i], run) && s->bufs[i]->ev) {
      if (who.v) who.v[who.n] = (who_t){s->bufs[i]->serial, h.nthreads};
      who.n++;
      h.nthreads++;
    }
  if (who.v) qsort(who.v, who.n, sizeof *who.v, who_cmp);
  put(&w, &h, sizeof h);
  for (uint32_t i = 0; i < s->nbufs; i++)
    if (buf_recorded(s->bufs[i], run) && s->bufs[i]->ev)
      put_thread(s, &w, s->bufs[i], &st, &who);
  put(&w, &st.n, sizeof st.n);
  for (uint32_t i = 0; i < st.n; i++) {
    uint32_t len = (uint32_t)strlen(st.list[i]);
    put(&w, &len, sizeof len);
    put(&w, st.list[i], len);
  }
  if (w.buf) wr_flush(&w);
  free(w.buf);
  free(who.v);
  free(st.slot);
  free(st.list);
  return w.err ? w.err : st.oom ? ENOMEM : 0;
}
