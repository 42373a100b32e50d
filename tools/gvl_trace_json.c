/* SPDX-License-Identifier: MIT */
/*
 * gvl_trace_json.c -- gvl-trace: turn a raw GVL trace (the file libgvl
 * writes when a trace stops, gvl_trace_file.h) into Trace Event Format
 * JSON, to open in https://ui.perfetto.dev or chrome://tracing.
 *
 * Usage: gvl-trace IN [OUT] | -h | --help
 *   OUT defaults to IN with a trailing ".gvlt" replaced by ".json".  An IN
 *   without that suffix is replaced by its JSON (written beside it, then
 *   renamed over it), so that after GVLOOP_TRACE=trace.json, running
 *   gvl-trace trace.json leaves a JSON trace.json.  OUT "-" is stdout.
 * Exit status: 0 (also for -h or --help alone: the usage on stdout); 1
 * for an input that cannot be read or is not a trace of this version, or
 * a failed write (with a message on stderr); 2 for bad usage.
 *
 * The JSON shows what gvl_trace.h describes.  It is worked out here, in a
 * process of its own, so that no thread of the traced program (possibly
 * the GVL's holder) pays for more than copying its records out.
 *
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
 *  - a RESUMED names the thread that handed the GVL over, if any
 *    (version 2 files); a flow arrow joins that thread's hold to the new
 *    one when the giver's records are whole from that hold to the
 *    handoff.  A version 1 file does not name it: a hold that began after
 *    waiting was handed over by the previous holder, which is known only
 *    if the file lost no events (else nothing is said).
 */
#include "gvl.h"
#include "gvl_trace.h"
#include "gvl_trace_file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_MAX_ GVL__TF_NAME
#define MAX_KEPT (1u << 24)     /* events_per_thread's upper bound */

typedef gvl__tf_rec_t rec_t;

static const char *why_name(unsigned why) {
  static const char *const names[] = {"release", "yield", "preempted",
                                      "blocking", "cond wait"};
  return why < sizeof names / sizeof *names ? names[why] : "unknown";
}

/* ---- reading ----------------------------------------------------------------- */

typedef struct {
  gvl__tf_thread_t h;
  rec_t *ev;
} thr_t;

typedef struct {
  gvl__tf_head_t h;
  thr_t *th;
  char **str;
  uint32_t nstr;
  uint64_t left;        /* bytes not yet read of a regular file; else
                           UINT64_MAX (a pipe tells its end by ending) */
} trace_t;

static void trace_free(trace_t *t) {
  for (uint32_t i = 0; t->th && i < t->h.nthreads; i++) free(t->th[i].ev);
  for (uint32_t i = 0; t->str && i < t->nstr; i++) free(t->str[i]);
  free(t->th);
  free(t->str);
}

/* got bytes of a regular file were read: fewer are left. */
static void consumed(trace_t *t, size_t got) {
  if (t->left != UINT64_MAX) t->left -= got < t->left ? got : t->left;
}

static bool get(trace_t *t, FILE *f, void *p, size_t n) {
  size_t got = fread(p, 1, n, f);
  consumed(t, got);
  return got == n;
}

/* Whether n items of size bytes each can still be in the file: a count
 * in the header that a cut-short or corrupt file cannot hold is refused
 * before anything is allocated for it. */
static bool fits(const trace_t *t, uint64_t n, size_t size) {
  return n <= t->left / size;
}

/* p with room (*cap items of size bytes) for item i of n: p itself, or
 * grown by doubling up to n, or NULL with p untouched.  A pipe's counts
 * cannot be checked before its bytes come, so room is made as they
 * arrive: a count the stream does not hold costs only what came. */
static void *room(void *p, uint64_t *cap, uint64_t i, uint64_t n, size_t size) {
  if (i < *cap) return p;
  uint64_t c = *cap ? *cap * 2 : 1024;
  if (c > n) c = n;
  if (!(p = realloc(p, (c + 1u) * size))) return NULL;
  *cap = c;
  return p;
}

/* Read the whole file; a message and false if it is not a whole trace. */
static bool trace_read(FILE *f, const char *path, trace_t *t) {
  const char *why = "truncated";
  struct stat sb;
  memset(t, 0, sizeof *t);
  t->left = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size
                                                              : UINT64_MAX;
  size_t got = fread(&t->h, 1, sizeof t->h, f);
  consumed(t, got);
  if (ferror(f)) {
    why = strerror(errno ? errno : EIO);   /* a directory: EISDIR */
    goto bad;
  }
  if (got == 0) {
    why = "empty (a program killed before it stopped its trace leaves one)";
    goto bad;
  }
  if (got != sizeof t->h || memcmp(t->h.magic, GVL__TF_MAGIC, 8)) {
    why = "not a raw GVL trace (gvl_trace_start writes one)";
    goto bad;
  }
  if (t->h.version < 1 || t->h.version > GVL__TF_VERSION || t->h.order != GVL__TF_ORDER) {
    why = "written by another version of libgvl or on another machine";
    goto bad;
  }
  if (t->h.nthreads > GVL__TF_MAX_THREADS) {   /* corrupt: never allocated */
    why = "not a whole raw GVL trace (more threads than a trace can hold)";
    goto bad;
  }
  if (!fits(t, t->h.nthreads, sizeof t->th->h)) goto bad;
  if (!(t->th = calloc(t->h.nthreads + 1u, sizeof *t->th))) goto oom;
  for (uint32_t i = 0; i < t->h.nthreads; i++) {
    thr_t *th = &t->th[i];
    if (!get(t, f, &th->h, sizeof th->h)) goto bad;
    th->h.name[NAME_MAX_ - 1] = '\0';
    if (th->h.kept > MAX_KEPT || th->h.kept > th->h.offered ||
        !fits(t, th->h.kept, sizeof *th->ev))
      goto bad;
    for (uint64_t have = 0, cap = 0; have < th->h.kept; have = cap) {
      rec_t *ev = room(th->ev, &cap, have, th->h.kept, sizeof *ev);
      if (!ev) goto oom;
      th->ev = ev;
      if (!get(t, f, ev + have, (cap - have) * sizeof *ev)) goto bad;
    }
  }
  if (!get(t, f, &t->nstr, sizeof t->nstr)) goto bad;
  uint32_t nstr = t->nstr;
  uint64_t cap = 0;
  t->nstr = 0;                 /* strings read so far (trace_free frees them) */
  if (nstr > 16 * MAX_KEPT || !fits(t, nstr, sizeof nstr)) goto bad;
  for (uint32_t i = 0; i < nstr; i++) {
    uint32_t len;
    if (!get(t, f, &len, sizeof len) || len > (1u << 20) || !fits(t, len, 1)) goto bad;
    char **str = room(t->str, &cap, i, nstr, sizeof *str);
    if (!str) goto oom;
    t->str = str;
    if (!(str[i] = malloc(len + 1u))) goto oom;
    t->nstr = i + 1;
    if (!get(t, f, t->str[i], len)) goto bad;
    t->str[i][len] = '\0';
  }
  /* A regular file holds one trace; a FIFO may bring the next one. */
  if (t->left != UINT64_MAX && fgetc(f) != EOF) {
    why = "not a whole raw GVL trace (bytes after its end: two writers?)";
    goto bad;
  }
  return true;
oom:
  why = strerror(ENOMEM);
bad:
  fprintf(stderr, "gvl-trace: %s: %s\n", path, why);
  return false;
}

/* ---- writing ----------------------------------------------------------------- */

typedef struct {
  uint64_t ns;
  uint32_t b, i;        /* buffer index, record index within it */
  uint64_t h;           /* thread handle (an identity) */
} acq_t;

typedef struct {
  const trace_t *t;
  FILE *f;
  uint32_t nb;          /* threads */
  int *tids;            /* display thread ids, unique per run */
  acq_t *acq;           /* every acquisition, in time order */
  uint64_t *acq_end;    /* end of each hold */
  uint8_t *acq_waited;  /* the hold was handed over after a wait */
  int32_t *giver;       /* the buffer that handed acquisition k over, -1 */
  long *giver_hold;     /* the hold that did: an acquisition, -2 for the
                           giver's hold from the start, -1 unknown */
  long *to;             /* the acquisition hold k was handed to, or -1 */
  long *early_to;       /* per buffer: the same for its hold from the
                           start */
  uint64_t *early_from, *early_end;  /* per buffer: that hold, if drawn
                           (early_end 0: not drawn) */
  size_t nacq;
  int32_t **rk;         /* per buffer: acquisition index of each record */
  uint64_t mismatched;
  int pid_gvl, pid_layers;
  long early_b;         /* the one buffer drawn holding from the start */
} wr_t;

/* String i (from 1) of the table; "" for none or out of range. */
static const char *str_of(const wr_t *w, uint32_t i) {
  return i && i <= w->t->nstr ? w->t->str[i - 1] : "";
}


static const rec_t *rec_at(const wr_t *w, uint32_t b, uint64_t i) {
  return &w->t->th[b].ev[i];
}

static uint64_t rec_count(const wr_t *w, uint32_t b) {
  return w->t->th[b].h.kept;
}

/* A full buffer in drop mode: nothing is known after its last record. */
static bool truncated(const wr_t *w, uint32_t b) {
  return !(w->t->h.flags & GVL_TRACE_RING) &&
         w->t->th[b].h.offered > w->t->th[b].h.kept;
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
  uint64_t rel = ns > w->t->h.t0_ns ? ns - w->t->h.t0_ns : 0;
  fprintf(w->f, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, rel / 1000, rel % 1000);
}

/* From the same origin as put_ts: a span that began before the trace (a
 * gvl_trace_span() of earlier work) starts at the origin and ends on time. */
static void put_dur(const wr_t *w, uint64_t from, uint64_t to) {
  if (from < w->t->h.t0_ns) from = w->t->h.t0_ns;
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
        w->acq[w->nacq++] = (acq_t){r->ns, b, (uint32_t)i, r->id};
    }
  qsort(w->acq, w->nacq, sizeof *w->acq, acq_cmp);
  return 0;
}

/* The end of hold k, whose RESUMED is record i of buffer b; and whether it
 * was reached by waiting (READY or a condition wait just before). */
static void hold_bounds(wr_t *w, size_t k) {
  uint32_t b = w->acq[k].b;
  uint64_t n = rec_count(w, b), end = w->t->h.t_end_ns;
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
  if (w->t->h.version >= 2) {
    w->acq_waited[k] = rec_at(w, b, w->acq[k].i)->why == GVL__TR_HANDED;
    return;
  }
  for (uint64_t i = w->acq[k].i; i-- > 0;) {
    const rec_t *r = rec_at(w, b, i);
    if (r->kind == GVL_EV_READY ||
        (r->kind == GVL_EV_SUSPENDED && r->why == GVL__TW_COND)) {
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
static int preempt_target(const wr_t *w, uint64_t h, uint64_t ns) {
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
      if (rec_at(w, b, i)->kind < GVL__TK_BEGIN &&
          rec_at(w, b, i)->kind != GVL_EV_PREEMPT_REQ)
        break;
    const rec_t *r = i < n ? rec_at(w, b, i) : NULL;
    if (!r || r->kind != GVL_EV_SUSPENDED) continue;
    bool sure = r->why == GVL__TW_BLOCK || r->why == GVL__TW_COND;
    if (r->why == GVL__TW_RELEASE) {      /* unless a READY follows: a yield */
      uint64_t j = i + 1;
      while (j < n && (rec_at(w, b, j)->kind == GVL_EV_PREEMPT_REQ ||
                       rec_at(w, b, j)->kind >= GVL__TK_BEGIN))
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

/* args (o bytes long) with handoff_to added for a hold handed to k. */
static const char *handoff_to(const wr_t *w, char *args, int o, long k) {
  if (k >= 0)
    snprintf(args + o, 192 - (size_t)o, ",\"handoff_to\":%d",
             w->tids[w->acq[k].b]);
  return args;
}

/* The arrow of a hold from..end handed to acquisition k (if k >= 0)
 * leaves from the end of the hold. */
static void emit_flow_out(wr_t *w, uint32_t b, uint64_t from, uint64_t end,
                          long k) {
  if (k < 0) return;
  ev_open(w, "s", "gvl", "handoff", w->pid_gvl, b, end > from ? end - 1 : end);
  fprintf(w->f, ",\"id\":%ld}", k + 1);
}

static void emit_hold(wr_t *w, uint32_t b, st_t *st, const char *why) {
  size_t k = st->k;
  uint64_t end = w->acq_end[k];
  char args[192];
  int o = snprintf(args, sizeof args,
                   "\"prio\":%d,\"req_prio\":%d,%s\"reason\":\"%s\",\"cpu\":%d",
                   st->prio, st->req, boost_arg(st), why, st->cpu);
  if (w->giver[k] >= 0)
    o += snprintf(args + o, sizeof args - (size_t)o, ",\"from\":%d",
                  w->tids[w->giver[k]]);
  emit_span(w, b, st->prio > 0 ? "hold boosted" : "hold", st->since, end,
            handoff_to(w, args, o, w->to[k]));
  st->handed_at = end;
  emit_flow_out(w, b, st->since, end, w->to[k]);
}

static void emit_flow_in(wr_t *w, uint32_t b, size_t k) {
  if (w->giver_hold[k] == -1) return;
  ev_open(w, "f", "gvl", "handoff", w->pid_gvl, b, w->acq[k].ns);
  fprintf(w->f, ",\"bp\":\"e\",\"id\":%zu}", k + 1);
}

/* Close whatever non-hold state is open at ns. */
/* The start of the wake-up that ends a wait with acquisition k: the end of
 * the previous holder's hold when it handed the GVL over, or 0 if k was not
 * a handoff.  From then on nobody runs with the GVL until k's RESUMED. */
static uint64_t wake_start(const wr_t *w, long k, uint64_t since, uint64_t ns) {
  if (k < 0 || w->giver_hold[k] == -1) return 0;
  uint64_t at = w->giver_hold[k] >= 0 ? w->acq_end[w->giver_hold[k]]
                                      : w->early_end[w->giver[k]];
  return at > since && at < ns ? at : 0;
}

/* Close whatever non-hold state is open at ns; k: the acquisition at ns
 * (-1 if none). */
static void close_gap(wr_t *w, uint32_t b, st_t *st, uint64_t ns, long k) {
  char args[112];
  if (st->kind == ST_WAIT) {
    uint64_t wake = wake_start(w, k, st->since, ns);
    snprintf(args, sizeof args, "\"prio\":%d,\"req_prio\":%d,%s\"cpu\":%d",
             st->prio, st->req, boost_arg(st), st->cpu);
    emit_span(w, b, st->prio > 0 ? "wait boosted" : "wait", st->since,
              wake ? wake : ns, args);
    if (wake) {
      snprintf(args, sizeof args, "\"from\":%d", w->tids[w->giver[k]]);
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
  int tb = preempt_target(w, r->id, r->ns);
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
  uint64_t n = rec_count(w, b);
  const char *why = why_name(r->why);
  char args[192];
  /* libgvl 0.1.0 told a yield or a preemption from a release by counters
   * seen at an earlier acquisition, so in its files a first hold's looks
   * like a release; the READY right after tells. */
  while (++i < n && (rec_at(w, b, i)->kind == GVL_EV_PREEMPT_REQ ||
                     rec_at(w, b, i)->kind >= GVL__TK_BEGIN)) {
  }
  if (r->why == GVL__TW_RELEASE && i < n && rec_at(w, b, i)->kind == GVL_EV_READY)
    why = "yield or preempted";
  uint64_t from = w->early_from[b], end = w->early_end[b];
  if (!end) return;
  int o = snprintf(args, sizeof args,
                   "\"reason\":\"%s\",\"held_before_trace\":true", why);
  emit_span(w, b, "hold", from, end, handoff_to(w, args, o, w->early_to[b]));
  st->handed_at = end;
  emit_flow_out(w, b, from, end, w->early_to[b]);
}

/* The first GVL record of buffer b (not a preempt request), or NULL. */
static const rec_t *first_gvl_rec(const wr_t *w, uint32_t b) {
  for (uint64_t i = 0; i < rec_count(w, b); i++) {
    const rec_t *r = rec_at(w, b, i);
    if (r->kind < GVL__TK_BEGIN && r->kind != GVL_EV_PREEMPT_REQ) return r;
  }
  return NULL;
}

/* Buffer b's hold from the start (emit_early_hold), if it is drawn: from
 * the start (in ring mode, its first record) to its first SUSPENDED, up to
 * the first acquisition by another thread. */
static void early_span(wr_t *w, uint32_t b) {
  const rec_t *r = first_gvl_rec(w, b);
  uint64_t from = w->t->h.t0_ns;
  w->early_end[b] = 0;
  if (!r || r->kind != GVL_EV_SUSPENDED) return;
  uint64_t end = r->ns;
  if (w->t->h.flags & GVL_TRACE_RING) from = rec_at(w, b, 0)->ns;
  else if (w->early_b != (long)b) return;
  for (size_t k = 0; k < w->nacq; k++)
    if (w->acq[k].b != b) {
      if (w->acq[k].ns < end) end = w->acq[k].ns;
      break;
    }
  if (end < from || !end) return;
  w->early_from[b] = from;
  w->early_end[b] = end;
}

/* Whether buffer b has every record up to ns (a full buffer in drop mode
 * has none after its last; in ring mode the kept ones run to the stop). */
static bool whole_until(const wr_t *w, uint32_t b, uint64_t ns) {
  uint64_t n = rec_count(w, b);
  return !truncated(w, b) || (n && rec_at(w, b, n - 1)->ns >= ns);
}

/* Who handed each acquisition over, and from which hold.  A version 2
 * file says who (giver); the hold is the giver's last one begun before,
 * if its records are whole from there to the handoff.  A version 1 file
 * says neither: the previous holder is the giver if no event was lost. */
static int link_handoffs(wr_t *w) {
  uint64_t lost = w->t->h.lost_nobuf;
  long *last = calloc(w->nb + 1u, sizeof *last);
  w->giver = malloc((w->nacq + 1) * sizeof *w->giver);
  w->giver_hold = malloc((w->nacq + 1) * sizeof *w->giver_hold);
  w->to = malloc((w->nacq + 1) * sizeof *w->to);
  w->early_to = malloc((w->nb + 1u) * sizeof *w->early_to);
  w->early_from = calloc(w->nb + 1u, sizeof *w->early_from);
  w->early_end = calloc(w->nb + 1u, sizeof *w->early_end);
  if (!last || !w->giver || !w->giver_hold || !w->to || !w->early_to ||
      !w->early_from || !w->early_end) {
    free(last);
    return ENOMEM;
  }
  for (uint32_t b = 0; b < w->nb; b++) {
    lost += w->t->th[b].h.offered - w->t->th[b].h.kept;
    last[b] = -1;
    w->early_to[b] = -1;
  }
  for (size_t k = 0; k < w->nacq; k++) {
    uint32_t b = w->acq[k].b;
    const rec_t *r = rec_at(w, b, w->acq[k].i);
    w->giver[k] = -1;
    w->giver_hold[k] = -1;
    w->to[k] = -1;
    if (w->t->h.version >= 2) {
      if (r->why == GVL__TR_HANDED && r->arg && r->arg <= w->nb && r->arg - 1 != b)
        w->giver[k] = (int32_t)(r->arg - 1);
    } else if (!lost && w->acq_waited[k] && k > 0 && w->acq[k - 1].b != b) {
      w->giver[k] = (int32_t)w->acq[k - 1].b;
    }
    /* A giver that holds in the trace before any acquisition of its own
     * held the GVL when the trace started. */
    int32_t a = w->giver[k];
    if (a >= 0 && last[a] < 0 && !(w->t->h.flags & GVL_TRACE_RING) &&
        whole_until(w, (uint32_t)a, w->acq[k].ns) && first_gvl_rec(w, (uint32_t)a) &&
        first_gvl_rec(w, (uint32_t)a)->kind == GVL_EV_SUSPENDED)
      w->early_b = a;
    last[b] = (long)k;
  }
  for (uint32_t b = 0; b < w->nb; b++) {
    early_span(w, b);
    last[b] = -1;
  }
  for (size_t k = 0; k < w->nacq; k++) {
    int32_t a = w->giver[k];
    if (a >= 0 && whole_until(w, (uint32_t)a, w->acq[k].ns)) {
      if (last[a] >= 0 && w->to[last[a]] < 0) {
        w->giver_hold[k] = last[a];
        w->to[last[a]] = (long)k;
      } else if (last[a] < 0 && w->early_end[a] && w->early_to[a] < 0 &&
                 rec_at(w, (uint32_t)a, 0)->ns <= w->acq[k].ns) {
        w->giver_hold[k] = -2;
        w->early_to[a] = (long)k;
      }
    }
    last[w->acq[k].b] = (long)k;
  }
  free(last);
  return 0;
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
    bool handed = r->why == GVL__TW_YIELD || r->why == GVL__TW_PREEMPT;
    if (first) emit_early_hold(w, b, st, r, i);
    if (st->kind == ST_HOLD) emit_hold(w, b, st, why_name(r->why));
    close_gap(w, b, st, r->ns, -1);
    if (!handed) st->handed_at = 0;
    st->kind = r->why == GVL__TW_BLOCK ? ST_BLOCK : r->why == GVL__TW_COND ? ST_COND : ST_NONE;
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
  case GVL__TK_BEGIN:
    ev_open(w, "B", str_of(w, r->cat), str_of(w, r->name), w->pid_layers, b, r->ns);
    fputc('}', w->f);
    st->depth++;
    break;
  case GVL__TK_END:
    if (!st->depth) {        /* an end with nothing open: dropped */
      w->mismatched++;
      break;
    }
    ev_open(w, "E", str_of(w, r->cat), str_of(w, r->name), w->pid_layers, b, r->ns);
    fputc('}', w->f);
    st->depth--;
    break;
  case GVL__TK_INSTANT:
    ev_open(w, "i", str_of(w, r->cat), str_of(w, r->name), w->pid_layers, b, r->ns);
    fprintf(w->f, ",\"s\":\"t\",\"args\":{\"arg\":%" PRIu64 "}}", r->arg);
    break;
  case GVL__TK_SPAN:
    ev_open(w, "X", str_of(w, r->cat), str_of(w, r->name), w->pid_layers, b, r->ns);
    put_dur(w, r->ns, r->arg);
    fputc('}', w->f);
    break;
  case GVL__TK_COUNTER:
    ev_open(w, "C", str_of(w, r->cat), str_of(w, r->name), w->pid_layers, b, r->ns);
    fprintf(w->f, ",\"args\":{\"value\":%" PRId64 "}}", (int64_t)r->arg);
    break;
  default:
    break;
  }
}

static void write_thread(wr_t *w, uint32_t b) {
  st_t st = {ST_NONE, 0, 0, 0, -1, 0, 0, 0, false};
  uint64_t n = rec_count(w, b), end = w->t->h.t_end_ns;
  if (truncated(w, b) && n) end = rec_at(w, b, n - 1)->ns;   /* nothing known after the last one */
  for (uint64_t i = 0; i < n; i++) {
    const rec_t *r = rec_at(w, b, i);
    if (r->kind >= GVL__TK_BEGIN) on_user_rec(w, b, &st, r);
    else on_gvl_rec(w, b, &st, r, i);
  }
  if (st.kind == ST_HOLD) emit_hold(w, b, &st, "trace stopped");
  else close_gap(w, b, &st, end, -1);
  while (st.depth--) {
    ev_open(w, "E", "", "", w->pid_layers, b, w->t->h.t_end_ns);
    fputc('}', w->f);
  }
}

/* ---- the file --------------------------------------------------------------- */

static void write_meta(wr_t *w) {
  fprintf(w->f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
          "\"args\":{\"name\":\"GVL %" PRIu64 "\"}}", w->pid_gvl, w->t->h.gvl_uid);
  fprintf(w->f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
          "\"args\":{\"name\":\"layers\"}}", w->pid_layers);
  for (uint32_t b = 0; b < w->nb; b++)
    for (int pid = w->pid_gvl; pid <= w->pid_layers; pid++) {
      fprintf(w->f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,"
              "\"tid\":%d,\"args\":{\"name\":", pid, w->tids[b]);
      put_str(w->f, w->t->th[b].h.name);
      fputs("}}", w->f);
    }
}

static void write_tail(wr_t *w) {
  uint64_t kept = 0, lost = w->t->h.lost_nobuf;
  for (uint32_t b = 0; b < w->nb; b++) {
    kept += w->t->th[b].h.kept;
    lost += w->t->th[b].h.offered - w->t->th[b].h.kept;
  }
  fprintf(w->f, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{"
          "\"generator\":\"gvloop\",\"gvl\":%" PRIu64 ",\"clock\":\"CLOCK_MONOTONIC\","
          "\"t0_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"threads\":%u,"
          "\"recorded_events\":%" PRIu64 ",\"lost_events\":%" PRIu64 ","
          "\"acquisitions\":%zu,\"unmatched_ends\":%" PRIu64 ",\"mode\":\"%s\"}}\n",
          w->t->h.gvl_uid, w->t->h.t0_ns, w->t->h.t_end_ns - w->t->h.t0_ns, w->nb,
          kept, lost, w->nacq, w->mismatched,
          (w->t->h.flags & GVL_TRACE_RING) ? "ring"
          : (w->t->h.flags & GVL_TRACE_STOP_FULL) ? "stop when full" : "drop when full");
}

/* Kernel thread ids can be reused by threads that come and go during one
 * run; a repeat gets a made-up id so that two threads never share a track. */
static void assign_tids(wr_t *w) {
  for (uint32_t b = 0; b < w->nb; b++) {
    w->tids[b] = w->t->th[b].h.tid;
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
  free(w->giver);
  free(w->giver_hold);
  free(w->to);
  free(w->early_to);
  free(w->early_from);
  free(w->early_end);
  free(w->tids);
}

/* The JSON of trace t into f.  ENOMEM if there is no memory to work it out
 * (f then holds nothing). */
static int write_json(const trace_t *t, FILE *f) {
  wr_t w;
  int rc = 0;
  memset(&w, 0, sizeof w);
  w.t = t;
  w.f = f;
  w.nb = t->h.nthreads;
  w.pid_gvl = 1;
  w.pid_layers = 2;
  if (!(w.tids = malloc((w.nb + 1u) * sizeof *w.tids)) || collect_acq(&w) ||
      index_acq(&w) || (pick_early_holder(&w), link_handoffs(&w))) {
    rc = ENOMEM;
  } else {
    fputs("{\"traceEvents\":[\n", f);
    assign_tids(&w);
    write_meta(&w);
    for (uint32_t b = 0; b < w.nb; b++) write_thread(&w, b);
    write_tail(&w);
  }
  wr_free(&w);
  return rc;
}

/* ---- the command ------------------------------------------------------------- */

/* Where the JSON goes: OUT if given; else IN minus ".gvlt" plus ".json";
 * else IN itself (through a temporary file beside it, renamed over it). */
static void out_path(const char *in, const char *out, char *dst, size_t size,
                     bool *in_place) {
  size_t len = strlen(in);
  *in_place = false;
  if (out) {
    snprintf(dst, size, "%s", out);
  } else if (len > 5 && !strcmp(in + len - 5, ".gvlt")) {
    snprintf(dst, size, "%.*s.json", (int)(len - 5), in);
  } else {
    snprintf(dst, size, "%s", in);
    *in_place = true;
  }
}

static int convert(const char *in, const char *out) {
  char dst[4096], tmp[4200];
  bool in_place, to_stdout;
  trace_t t;
  FILE *f = fopen(in, "rb");
  int rc;
  if (!f) {
    fprintf(stderr, "gvl-trace: %s: %s\n", in, strerror(errno));
    return 1;
  }
  bool ok = trace_read(f, in, &t);
  fclose(f);
  if (!ok) {
    trace_free(&t);
    return 1;
  }
  out_path(in, out, dst, sizeof dst, &in_place);
  to_stdout = !strcmp(dst, "-");
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", dst, (long)getpid());
  const char *wpath = to_stdout ? "stdout" : in_place ? tmp : dst;
  /* A failed write removes only a file this run created (the temporary
   * one, or an OUT that did not exist): never a file or device that was
   * there before. */
  struct stat st;
  bool created = in_place || (!to_stdout && stat(wpath, &st) != 0);
  f = to_stdout ? stdout : fopen(wpath, "w");
  if (!f) {
    fprintf(stderr, "gvl-trace: %s: %s\n", wpath, strerror(errno));
    trace_free(&t);
    return 1;
  }
  rc = write_json(&t, f);
  if (!rc && (fflush(f) || ferror(f))) rc = errno ? errno : EIO;
  if (!to_stdout && fclose(f) && !rc) rc = errno ? errno : EIO;
  if (!rc && in_place && rename(tmp, dst)) rc = errno;
  if (rc) {
    fprintf(stderr, "gvl-trace: %s: %s\n", wpath, strerror(rc));
    if (created) (void)unlink(wpath);
  }
  trace_free(&t);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    fprintf(argc == 2 ? stdout : stderr,
            "usage: gvl-trace IN [OUT]\n"
            "  Turn a raw GVL trace (GVLOOP_TRACE=IN, or gvl_trace_start) into\n"
            "  JSON for https://ui.perfetto.dev.  OUT defaults to IN with .gvlt\n"
            "  replaced by .json, or to IN itself (replaced); - is stdout.\n");
    return argc == 2 ? 0 : 2;
  }
  return convert(argv[1], argc == 3 ? argv[2] : NULL);
}
