/* SPDX-License-Identifier: MIT */
/*
 * responsive.c -- the flagship demo: a Tk window that stays responsive while
 * interpreter threads compute.
 *
 *   responsive [--threads N] [--policy P] [--script] [--phase-ms MS]
 *              [--tour P1,P2,...] [--hold-file FILE]
 *
 * N interpreter threads render a zooming Mandelbrot set row by row.  They
 * hold the "VM lock" while they compute and pass a safe point every 64
 * iterations, as a host VM does on backward branches.  Each finished row is
 * copied into a frame buffer and drawn into a Tk photo image: the worker
 * asks for a redraw with tkb_eval_async (Tk lives on the loop thread; the
 * worker does not wait), at most one request outstanding, so the loop
 * thread is never flooded and Tk's idle-time redisplay keeps running.
 *
 * Meanwhile Tcl `after` timers animate a spinner and a clock (pure Tcl: no
 * host code, so they never need the lock), and every 20 ms a probe runs
 * host code: it measures the time from the Tcl event to the moment host
 * code can run, which is the dispatch latency a user feels on every click.
 * The Ping button takes the same path.
 *
 * The VM lock is switchable at run time:
 *   gvloop          the bridge's own GVL: tkbridge takes it with the boost
 *                   for every host command (the real, documented path)
 *   gvloop-noboost  libgvl, but event handlers acquire at normal priority
 *   cond-timer      Ruby 1.9.3-3.x's GVL (100 ms quantum), from bench/
 *   cpython         CPython's GIL (5 ms switch interval), from bench/
 * For the last three, the interpreter threads run on that lock, and a host
 * command takes it (at GVL_PRIO_BOOST, which only libgvl honours) before
 * its host code runs, so the event path pays what that lock makes it pay.
 *
 * --script runs the policies one after another (by default the four, the
 * worst first; --tour picks them), with
 * scripted clicks, prints "snapshot: ready" at the end so that a screenshot
 * can be taken, waits for --hold-file to appear (at most 20 s), and quits.
 * On exit a table of latency figures per policy is printed, plus one
 * machine-readable "STAT" line per policy.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L  /* clock_gettime, nanosleep, strdup in -std=c11 */
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tcl.h>
#include <tk.h>

#include "bench.h"
#include "gvl.h"
#include "evloop.h"
#include "tkbridge.h"

#include "ui_tcl.h"

#define IMG_W 560
#define IMG_H 420
#define MAX_THREADS 8
#define NPOL 4
#define NBUCKET 6
#define MAX_SAMPLES (1u << 20)

/* ---- the VM lock: libgvl directly, or a bench baseline ------------------ */

typedef struct {
  const char *key;
  const char *label;
  const bench_gvl_ops_t *ops; /* NULL: the bridge's own GVL through gvl.h */
} policy_t;

static const policy_t policies[NPOL] = {
    {"gvloop", "gvloop, boost", NULL},
    {"gvloop-noboost", "gvloop, no boost", &bench_gvloop_noboost_ops},
    {"cond-timer", "cond-timer (Ruby)", &bench_cond_timer_ops},
    {"cpython", "cpython (5 ms GIL)", &bench_cpython_ops},
};

typedef struct {
  const bench_gvl_ops_t *ops; /* NULL: lock is the bridge's gvl_t */
  void *lock;
} vm_t;

static void *vm_attach(const vm_t *v) {
  if (v->ops == NULL) return gvl_thread_attach(v->lock, GVL_PRIO_NORMAL);
  return v->ops->attach(v->lock);
}

static void vm_detach(const vm_t *v, void *t) {
  if (v->ops == NULL) gvl_thread_detach(t);
  else v->ops->detach(t);
}

static void vm_acquire(const vm_t *v, void *t) {
  if (v->ops == NULL) gvl_acquire(t);
  else v->ops->acquire(t);
}

static void vm_release(const vm_t *v, void *t) {
  if (v->ops == NULL) gvl_release(t);
  else v->ops->release(t);
}

/* The safe point: inline for libgvl, through the table for baselines. */
static inline void vm_check(const vm_t *v, void *t) {
  if (v->ops == NULL) gvl_check_ints(t);
  else v->ops->check_ints(t);
}

/* ---- figures ------------------------------------------------------------- */

typedef struct {
  uint64_t *lat;        /* dispatch latencies, ns */
  size_t n, cap;
  uint64_t clicks, click_max_ns;
  uint64_t frames, gap_max_ns; /* spinner frames and the longest gap */
  uint64_t work;        /* Mandelbrot iterations done under this policy */
  uint64_t run_ns;      /* time the workers ran under this policy */
  int threads_lo, threads_hi; /* interpreter threads while events came */
} polstat_t;

static void stat_add(polstat_t *s, uint64_t ns) {
  if (s->n == s->cap) {
    if (s->cap >= MAX_SAMPLES) return; /* enough for any percentile */
    size_t cap = s->cap ? s->cap * 2 : 1024;
    uint64_t *v = realloc(s->lat, cap * sizeof *v);
    if (v == NULL) return;            /* a missing sample, not a crash */
    s->lat = v;
    s->cap = cap;
  }
  s->lat[s->n++] = ns;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  size_t n;
  double p50_us, p99_us, max_us;
  uint64_t hist[NBUCKET];
} summary_t;

/* Buckets: <10 us, <100 us, <1 ms, <10 ms, <100 ms, >= 100 ms. */
static int bucket_of(uint64_t ns) {
  uint64_t lim = 10000;
  for (int b = 0; b < NBUCKET - 1; b++, lim *= 10)
    if (ns < lim) return b;
  return NBUCKET - 1;
}

static void summarise(const polstat_t *s, summary_t *out) {
  memset(out, 0, sizeof *out);
  out->n = s->n;
  if (s->n == 0) return;
  uint64_t *v = malloc(s->n * sizeof *v);
  if (v == NULL) return;
  memcpy(v, s->lat, s->n * sizeof *v);
  qsort(v, s->n, sizeof *v, cmp_u64);
  /* nearest rank */
  size_t i50 = (s->n * 50 + 99) / 100, i99 = (s->n * 99 + 99) / 100;
  out->p50_us = (double)v[i50 ? i50 - 1 : 0] / 1e3;
  out->p99_us = (double)v[i99 ? i99 - 1 : 0] / 1e3;
  out->max_us = (double)v[s->n - 1] / 1e3;
  for (size_t i = 0; i < s->n; i++) out->hist[bucket_of(v[i])]++;
  free(v);
}

/* ---- application state --------------------------------------------------- */

typedef struct app app_t;

typedef struct {
  app_t *app;
  pthread_t tid;
} worker_t;

struct app {
  gvl_t *gvl;           /* the bridge's GVL (policy "gvloop")        */
  evl_t *l;
  tkb_t *tk;
  int script;           /* --script */
  int cmds_ok;          /* the gvd:: commands exist */
  int phase_ms;
  const char *hold_file;
  char tour[256];       /* --tour: policies of the scripted run */

  /* Owned by the loop thread (only host and Tcl commands touch them). */
  int pol;              /* index into policies */
  vm_t vm;              /* the lock of the current policy */
  void *loop_t;         /* the loop thread's handle on vm (baselines) */
  polstat_t st[NPOL];
  uint64_t stamp_ns;    /* set by gvd::stamp, the start of an event */
  uint64_t last_frame_ns;
  int frozen;           /* after gvd::snapshot: figures are final (a
                           screenshot tool may grab the X server) */
  int nthreads, running;
  uint64_t run_start_ns, work_at_start;
  worker_t w[MAX_THREADS];

  /* Shared with the workers. */
  atomic_int stop;
  atomic_uint_fast64_t next_row;  /* frame * IMG_H + row */
  atomic_uint_fast64_t work_done; /* iterations, all workers */
  atomic_int flush_pending;        /* a gvd::flush is queued */
  atomic_uint_fast64_t flushes;    /* gvd::flush runs */
  pthread_mutex_t fb_mu;           /* guards fb and dirty */
  uint8_t fb[IMG_H][IMG_W][4];     /* finished rows, RGBA */
  uint8_t dirty[IMG_H];            /* row changed since the last flush */
  uint8_t shown[IMG_H][IMG_W][4];  /* loop thread: the copy being drawn */

  /* Quit handshake with main. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int quit;             /* guarded by mu */
};

/* ---- the interpreter threads: a zooming Mandelbrot set ------------------- */

static uint8_t palette[256][3];

static void make_palette(void) {
  for (int i = 0; i < 256; i++) {
    double t = i / 255.0;
    palette[i][0] = (uint8_t)(9 * (1 - t) * t * t * t * 255);
    palette[i][1] = (uint8_t)(15 * (1 - t) * (1 - t) * t * t * 255);
    palette[i][2] = (uint8_t)(8.5 * (1 - t) * (1 - t) * (1 - t) * t * 255);
  }
}

/* Zoom towards a point of the boundary; frames repeat every 48 zooms so
 * doubles never run out of precision. */
static void frame_params(uint64_t frame, double *cx, double *cy, double *step,
                         int *maxit) {
  int f = (int)(frame % 48);
  double scale = 3.2;
  for (int i = 0; i < f; i++) scale *= 0.82;
  *cx = -0.743643887037151;
  *cy = 0.131825904205330;
  *step = scale / IMG_W;
  *maxit = 300 + 40 * f;
}

/* One row as RGBA pixels, computed with a safe point every 64 steps.
 * Returns 0, or 1 if asked to stop. */
static int render_row(app_t *a, const vm_t *v, void *t, uint64_t r,
                      uint8_t out[IMG_W][4], uint64_t *iters) {
  double cx, cy, step;
  int maxit;
  frame_params(r / IMG_H, &cx, &cy, &step, &maxit);
  int y = (int)(r % IMG_H);
  double ci = cy + (y - IMG_H / 2) * step;
  for (int x = 0; x < IMG_W; x++) {
    if (atomic_load_explicit(&a->stop, memory_order_relaxed)) return 1;
    double cr = cx + (x - IMG_W / 2) * step, zr = 0, zi = 0;
    int it = 0;
    while (it < maxit && zr * zr + zi * zi < 4.0) {
      double nz = zr * zr - zi * zi + cr;
      zi = 2 * zr * zi + ci;
      zr = nz;
      if ((++it & 63) == 0) vm_check(v, t);
    }
    *iters += (uint64_t)it;
    static const uint8_t black[3] = {0, 0, 0};
    const uint8_t *c = it >= maxit ? black : palette[(it * 5) & 255];
    out[x][0] = c[0];
    out[x][1] = c[1];
    out[x][2] = c[2];
    out[x][3] = 255;
  }
  return 0;
}

/* Publish a finished row and make sure a redraw is queued. */
static int publish_row(app_t *a, int y, uint8_t row[IMG_W][4]) {
  pthread_mutex_lock(&a->fb_mu);
  memcpy(a->fb[y], row, sizeof a->fb[y]);
  a->dirty[y] = 1;
  pthread_mutex_unlock(&a->fb_mu);
  if (atomic_exchange(&a->flush_pending, 1)) return 0; /* one is queued */
  int rc = tkb_eval_async(a->tk, "gvd::flush", NULL, NULL);
  if (rc != 0) atomic_store(&a->flush_pending, 0);
  return rc;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  app_t *a = w->app;
  const vm_t v = a->vm; /* fixed while this worker lives */
  uint8_t(*buf)[4] = malloc(IMG_W * 4);
  void *t = buf ? vm_attach(&v) : NULL;
  if (t == NULL) {
    fprintf(stderr, "responsive: cannot start a worker\n");
    free(buf);
    return NULL;
  }
  vm_acquire(&v, t);
  while (!atomic_load(&a->stop)) {
    uint64_t r = atomic_fetch_add(&a->next_row, 1);
    uint64_t iters = 0;
    int stopped = render_row(a, &v, t, r, buf, &iters);
    atomic_fetch_add(&a->work_done, iters);
    if (stopped) break;
    if (publish_row(a, (int)(r % IMG_H), buf) != 0) break; /* bridge stopping */
  }
  vm_release(&v, t);
  vm_detach(&v, t);
  free(buf);
  return NULL;
}

/* [loop thread] Start the workers on the current policy's lock. */
static void workers_start(app_t *a) {
  if (a->running) return;
  atomic_store(&a->stop, 0);
  a->run_start_ns = gvl_now_ns();
  a->work_at_start = atomic_load(&a->work_done);
  int n = 0;
  for (int i = 0; i < a->nthreads; i++) {
    a->w[i].app = a;
    if (pthread_create(&a->w[i].tid, NULL, worker_main, &a->w[i]) != 0) break;
    n++;
  }
  a->nthreads = n;
  a->running = n > 0;
}

static void *join_workers(void *arg) {
  app_t *a = arg;
  for (int i = 0; i < a->nthreads; i++) pthread_join(a->w[i].tid, NULL);
  return arg;
}

/* [loop thread, bridge GVL held] Stop the workers and book their figures.
 * Joining waits with the bridge's GVL released: in policy "gvloop" the
 * workers need it to reach their next safe point and leave. */
static void workers_stop(app_t *a) {
  if (!a->running) return;
  atomic_store(&a->stop, 1);
  gvl_call_without(evl_gvl_thread(a->l), join_workers, a, NULL, NULL);
  polstat_t *s = &a->st[a->pol];
  s->work += atomic_load(&a->work_done) - a->work_at_start;
  s->run_ns += gvl_now_ns() - a->run_start_ns;
  a->running = 0;
}

/* [loop thread] Leave the current lock (workers stopped). */
static void vm_close(app_t *a) {
  if (a->vm.ops != NULL) {
    if (a->loop_t) a->vm.ops->detach(a->loop_t);
    a->vm.ops->destroy(a->vm.lock);
  }
  a->loop_t = NULL;
  a->vm.ops = NULL;
  a->vm.lock = NULL;
}

/* [loop thread] Make policy p current (workers stopped). */
static void vm_open(app_t *a, int p) {
  a->pol = p;
  a->vm.ops = policies[p].ops;
  if (a->vm.ops == NULL) {
    a->vm.lock = a->gvl;
    return;
  }
  a->vm.lock = a->vm.ops->create();
  a->loop_t = a->vm.ops->attach(a->vm.lock);
}

/* ---- commands ------------------------------------------------------------ */

static int find_policy(const char *key) {
  for (int i = 0; i < NPOL; i++)
    if (strcmp(policies[i].key, key) == 0) return i;
  return -1;
}

/* gvd::stamp -- a plain Tcl command (no GVL): the event starts now. */
static int stamp_cmd(ClientData cd, Tcl_Interp *ip, int objc,
                     Tcl_Obj *const objv[]) {
  (void)ip;
  (void)objc;
  (void)objv;
  ((app_t *)cd)->stamp_ns = gvl_now_ns();
  return TCL_OK;
}

/* gvd::frame -- plain Tcl: the spinner drew a frame; keep the longest gap. */
static int frame_cmd(ClientData cd, Tcl_Interp *ip, int objc,
                     Tcl_Obj *const objv[]) {
  (void)ip;
  (void)objc;
  (void)objv;
  app_t *a = cd;
  uint64_t now = gvl_now_ns();
  polstat_t *s = &a->st[a->pol];
  if (a->frozen) return TCL_OK;
  if (a->last_frame_ns && now - a->last_frame_ns > s->gap_max_ns)
    s->gap_max_ns = now - a->last_frame_ns;
  a->last_frame_ns = now;
  s->frames++;
  return TCL_OK;
}

/* gvd::flush -- plain Tcl (no GVL): copy the rows finished since the last
 * flush into the photo image, a run of adjacent rows per block. */
static int flush_cmd(ClientData cd, Tcl_Interp *ip, int objc,
                     Tcl_Obj *const objv[]) {
  (void)objc;
  (void)objv;
  app_t *a = cd;
  uint8_t todo[IMG_H];
  atomic_store(&a->flush_pending, 0); /* rows from now on queue a new flush */
  atomic_fetch_add(&a->flushes, 1);
  pthread_mutex_lock(&a->fb_mu);
  for (int y = 0; y < IMG_H; y++) {
    todo[y] = a->dirty[y];
    if (todo[y]) memcpy(a->shown[y], a->fb[y], sizeof a->fb[y]);
    a->dirty[y] = 0;
  }
  pthread_mutex_unlock(&a->fb_mu);
  Tk_PhotoHandle ph = Tk_FindPhoto(ip, "mandel");
  if (ph == NULL) return TCL_OK; /* window not built yet */
  for (int y = 0; y < IMG_H;) {
    if (!todo[y]) {
      y++;
      continue;
    }
    int y0 = y;
    while (y < IMG_H && todo[y]) y++;
    Tk_PhotoImageBlock b = {&a->shown[y0][0][0], IMG_W, y - y0, IMG_W * 4, 4, {0, 1, 2, 3}};
    if (Tk_PhotoPutBlock(ip, ph, &b, 0, y0, IMG_W, y - y0, TK_PHOTO_COMPOSITE_SET) != TCL_OK)
      return TCL_ERROR;
  }
  return TCL_OK;
}

static void make_tcl_cmds(tkb_t *tk, Tcl_Interp *ip, void *arg) {
  (void)tk;
  Tcl_Eval(ip, "namespace eval gvd {}");
  Tcl_CreateObjCommand(ip, "gvd::stamp", stamp_cmd, arg, NULL);
  Tcl_CreateObjCommand(ip, "gvd::frame", frame_cmd, arg, NULL);
  Tcl_CreateObjCommand(ip, "gvd::flush", flush_cmd, arg, NULL);
}

/* A little host work, standing in for the event handler's own code. */
static uint64_t host_work(uint64_t x) {
  for (int i = 0; i < 64; i++) x = x * 6364136223846793005u + 1442695040888963407u;
  return x;
}

/* gvd::probe tick|click -- host code started by a Tcl event.  Records the
 * time from gvd::stamp until host code can run; returns it in us. */
static int probe_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                    tkb_result_t *res) {
  (void)tk;
  app_t *a = arg;
  static uint64_t sink;
  if (argc != 2) {
    tkb_result_set(res, "usage: gvd::probe tick|click");
    return EINVAL;
  }
  uint64_t t0 = a->stamp_ns ? a->stamp_ns : gvl_now_ns();
  a->stamp_ns = 0;
  if (a->vm.ops != NULL) { /* the bridge's GVL is held; now the VM lock */
    a->vm.ops->acquire_prio(a->loop_t, GVL_PRIO_BOOST);
    sink = host_work(sink + t0);
    a->vm.ops->release(a->loop_t);
  } else {
    sink = host_work(sink + t0);
  }
  uint64_t ns = gvl_now_ns() - t0;
  polstat_t *s = &a->st[a->pol];
  if (!a->frozen) {
    stat_add(s, ns);
    if (s->threads_hi == 0 || a->nthreads < s->threads_lo) s->threads_lo = a->nthreads;
    if (a->nthreads > s->threads_hi) s->threads_hi = a->nthreads;
  }
  if (!a->frozen && strcmp(argv[1], "click") == 0) {
    s->clicks++;
    if (ns > s->click_max_ns) s->click_max_ns = ns;
  }
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f", (double)ns / 1e3);
  tkb_result_set(res, buf);
  return 0;
}

/* gvd::run N -- start N workers (0: stop them). */
static int run_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                  tkb_result_t *res) {
  (void)tk;
  app_t *a = arg;
  int n;
  if (argc != 2 || sscanf(argv[1], "%d", &n) != 1 || n < 0 || n > MAX_THREADS) {
    tkb_result_set(res, "usage: gvd::run N (0..8)");
    return EINVAL;
  }
  workers_stop(a);
  if (n > 0) {
    a->nthreads = n;
    workers_start(a);
  }
  return 0;
}

/* gvd::policy KEY -- switch the VM lock; the workers restart on it. */
static int policy_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                     tkb_result_t *res) {
  (void)tk;
  app_t *a = arg;
  int p = argc == 2 ? find_policy(argv[1]) : -1;
  if (p < 0) {
    tkb_result_set(res, "usage: gvd::policy gvloop|gvloop-noboost|cond-timer|cpython");
    return EINVAL;
  }
  if (p == a->pol) return 0;
  int was = a->running;
  workers_stop(a);
  vm_close(a);
  vm_open(a, p);
  a->last_frame_ns = 0;
  if (was) workers_start(a);
  return 0;
}

/* Append one policy's figures, as a Tcl list, to buf. */
static size_t fmt_policy(app_t *a, int p, char *buf, size_t sz) {
  const polstat_t *s = &a->st[p];
  summary_t m;
  summarise(s, &m);
  uint64_t work = s->work, ns = s->run_ns;
  if (p == a->pol && a->running) {
    work += atomic_load(&a->work_done) - a->work_at_start;
    ns += gvl_now_ns() - a->run_start_ns;
  }
  double rate = ns ? (double)work * 1e3 / (double)ns : 0; /* M iter/s */
  double stall = s->gap_max_ns > 20000000u ? (double)(s->gap_max_ns - 20000000u) / 1e6 : 0;
  return (size_t)snprintf(buf, sz, " {%s %zu %.1f %.1f %.1f %.1f %.1f {%llu %llu %llu %llu %llu %llu}}",
                          policies[p].key, m.n, m.p50_us, m.p99_us, m.max_us, stall,
                          rate, (unsigned long long)m.hist[0],
                          (unsigned long long)m.hist[1], (unsigned long long)m.hist[2],
                          (unsigned long long)m.hist[3], (unsigned long long)m.hist[4],
                          (unsigned long long)m.hist[5]);
}

/* gvd::stats -- {current running {key n p50 p99 max stall M iter/s {hist}} ...} */
static int stats_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                    tkb_result_t *res) {
  (void)tk;
  (void)argc;
  (void)argv;
  app_t *a = arg;
  char buf[2048];
  size_t o = (size_t)snprintf(buf, sizeof buf, "%s %d", policies[a->pol].key, a->running);
  for (int p = 0; p < NPOL && o < sizeof buf; p++)
    o += fmt_policy(a, p, buf + o, sizeof buf - o);
  tkb_result_set(res, buf);
  return 0;
}

static void request_quit(app_t *a) {
  pthread_mutex_lock(&a->mu);
  a->quit = 1;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
}

/* gvd::quit -- end the program (main tears down). */
static int quit_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                   tkb_result_t *res) {
  (void)tk;
  (void)argc;
  (void)argv;
  (void)res;
  request_quit(arg);
  return 0;
}

/* gvd::shutdown -- stop the workers and leave the lock (main calls it). */
static int shutdown_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                       tkb_result_t *res) {
  (void)tk;
  (void)argc;
  (void)argv;
  (void)res;
  app_t *a = arg;
  workers_stop(a);
  vm_close(a);
  return 0;
}

/* gvd::snapshot -- the figures are final; tell a watching script that the
 * window is ready for its screenshot. */
static int snapshot_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                       tkb_result_t *res) {
  (void)tk;
  (void)argc;
  (void)argv;
  (void)res;
  ((app_t *)arg)->frozen = 1;
  printf("snapshot: ready\n");
  fflush(stdout);
  return 0;
}

static int make_host_cmds(app_t *a) {
  static const struct {
    const char *name;
    tkb_cmd_cb cb;
  } cmds[] = {{"gvd::probe", probe_cb},       {"gvd::run", run_cb},
              {"gvd::policy", policy_cb},     {"gvd::stats", stats_cb},
              {"gvd::quit", quit_cb},         {"gvd::shutdown", shutdown_cb},
              {"gvd::snapshot", snapshot_cb}};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    int rc = tkb_command_create(a->tk, cmds[i].name, cmds[i].cb, a);
    if (rc) return rc;
  }
  return tkb_run(a->tk, make_tcl_cmds, a);
}

/* ---- output -------------------------------------------------------------- */

static void print_stats(app_t *a) {
  printf("\ndispatch latency: Tcl event -> host code running, while interpreter "
         "threads compute\n");
  printf("%-16s %7s %7s %10s %10s %10s %11s %8s\n", "policy", "threads", "events", "p50",
         "p99", "max", "UI stall", "Mit/s");
  for (int p = 0; p < NPOL; p++) {
    const polstat_t *s = &a->st[p];
    if (s->n == 0) continue;
    summary_t m;
    summarise(s, &m);
    double stall = s->gap_max_ns > 20000000u ? (double)(s->gap_max_ns - 20000000u) / 1e6 : 0;
    double rate = s->run_ns ? (double)s->work * 1e3 / (double)s->run_ns : 0;
    char th[16];
    if (s->threads_lo == s->threads_hi) snprintf(th, sizeof th, "%d", s->threads_lo);
    else snprintf(th, sizeof th, "%d-%d", s->threads_lo, s->threads_hi);
    printf("%-16s %7s %7zu %8.1fus %8.1fus %8.1fus %9.1fms %8.1f\n", policies[p].key, th,
           m.n, m.p50_us, m.p99_us, m.max_us, stall, rate);
  }
  for (int p = 0; p < NPOL; p++) {
    const polstat_t *s = &a->st[p];
    if (s->n == 0) continue;
    summary_t m;
    summarise(s, &m);
    printf("STAT policy=%s events=%zu clicks=%llu p50_us=%.1f p99_us=%.1f max_us=%.1f "
           "click_max_us=%.1f frames=%llu ui_gap_max_ms=%.1f work_miter=%.1f\n",
           policies[p].key, m.n, (unsigned long long)s->clicks, m.p50_us, m.p99_us,
           m.max_us, (double)s->click_max_ns / 1e3, (unsigned long long)s->frames,
           (double)s->gap_max_ns / 1e6, (double)s->work / 1e6);
  }
  gvl_stats_t g;
  if (gvl_stats(a->gvl, &g) == 0)
    printf("bridge GVL (policy gvloop): %llu acquisitions, %llu boosted, %llu boosts "
           "capped, %llu preemptions at safe points, %llu handoffs\n",
           (unsigned long long)g.acquires, (unsigned long long)g.boosts,
           (unsigned long long)g.boosts_refused, (unsigned long long)g.preemptions,
           (unsigned long long)g.handoffs);
  printf("rows drawn in %llu batches\n", (unsigned long long)atomic_load(&a->flushes));
  fflush(stdout);
}

/* ---- main ---------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f, "usage: responsive [--threads N] [--policy gvloop|gvloop-noboost|cond-timer|cpython]\n"
             "                  [--script] [--phase-ms MS] [--tour P1,P2,...] [--hold-file FILE]\n");
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

/* "a,b,c" -> "a b c", every name a known policy (no empty one). */
static int parse_tour(const char *v, char *out, size_t outsz) {
  char tmp[256];
  if (strlen(v) >= sizeof tmp || strlen(v) >= outsz) return -1;
  if (v[0] == ',' || strstr(v, ",,") || (v[0] && v[strlen(v) - 1] == ',')) return -1;
  strcpy(tmp, v);
  out[0] = '\0';
  for (char *save = NULL, *tok = strtok_r(tmp, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (find_policy(tok) < 0) return -1;
    if (out[0]) strcat(out, " ");
    strcat(out, tok);
  }
  return out[0] ? 0 : -1;
}

/* 0, 1 for --help, or -1 after saying what was wrong. */
static int parse(app_t *a, int argc, char **argv, int *pol) {
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
      return 1;
    } else if (strcmp(o, "--script") == 0) {
      a->script = 1;
    } else if (strcmp(o, "--threads") == 0 && v) {
      bad = parse_int(v, 1, MAX_THREADS, &a->nthreads), i++;
    } else if (strcmp(o, "--phase-ms") == 0 && v) {
      bad = parse_int(v, 200, 600000, &a->phase_ms), i++;
    } else if (strcmp(o, "--policy") == 0 && v) {
      bad = (*pol = find_policy(v)) < 0, i++;
    } else if (strcmp(o, "--tour") == 0 && v) {
      bad = parse_tour(v, a->tour, sizeof a->tour), i++;
    } else if (strcmp(o, "--hold-file") == 0 && v) {
      a->hold_file = v;
      i++;
    } else {
      static const char *const valued[] = {"--threads", "--phase-ms", "--policy", "--tour",
                                           "--hold-file"};
      const char *why = "unknown option";
      for (size_t k = 0; k < sizeof valued / sizeof *valued; k++)
        if (strcmp(o, valued[k]) == 0) why = "needs a value";
      fprintf(stderr, "responsive: %s: %s\n", o, why);
      return -1;
    }
    if (bad) {
      fprintf(stderr, "responsive: %s %s: bad value\n", o, v);
      return -1;
    }
  }
  return 0;
}

/* Set the options as Tcl variables, then build the window. */
static int build_ui(app_t *a, int pol) {
  char pre[512];
  snprintf(pre, sizeof pre,
           "namespace eval ui {}; set ui::script %d; set ui::phase_ms %d; "
           "set ui::nthreads %d; set ui::policy %s; set ui::tour {%s}; set ui::hold_file",
           a->script, a->phase_ms, a->nthreads, policies[pol].key, a->tour);
  Tcl_DString ds;   /* the file name as one list element, whatever its braces */
  Tcl_DStringInit(&ds);
  Tcl_DStringAppend(&ds, pre, -1);
  Tcl_DStringAppendElement(&ds, a->hold_file ? a->hold_file : "");
  char *err = NULL;
  int rc = tkb_eval(a->tk, Tcl_DStringValue(&ds), &err);
  Tcl_DStringFree(&ds);
  if (rc == 0) {
    free(err);
    err = NULL;
    rc = tkb_eval(a->tk, ui_tcl, &err);
  }
  if (rc != 0)
    fprintf(stderr, "responsive: window: %s\n", err ? err : tkb_strerror(rc));
  free(err);
  return rc;
}

/* SIGINT / SIGTERM: quit through the normal path, so the figures print. */
static void on_signal(evl_t *l, void *arg, int status) {
  (void)l;
  if (status == 0) request_quit(arg);
}

static int start_bridge(app_t *a) {
  evl_config_t ec;
  memset(&ec, 0, sizeof ec);
  ec.prio = EVL_PRIO_BOOST;   /* host callbacks cut in ahead of the renderers */
  tkb_evl_config(&ec);
  a->l = evl_start(a->gvl, &ec);
  if (a->l == NULL) {
    fprintf(stderr, "responsive: evl_start: %s\n", strerror(errno));
    return 1;
  }
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.prio = TKB_PRIO_BOOST;
  tc.argv0 = "responsive";
  tc.app_name = "gvloop responsive demo";
  int rc = tkb_start(a->l, &tc, &a->tk);
  if (rc != 0) {
    fprintf(stderr, "responsive: cannot start Tk: %s%s\n", tkb_strerror(rc),
                    rc == ENOTSUP ? " (no display? examples/responsive/run_demo.sh BUILD_DIR --headless runs the demo on a virtual one)" : "");
    return 1;
  }
  if ((rc = make_host_cmds(a)) != 0) {
    fprintf(stderr, "responsive: commands: %s\n", tkb_strerror(rc));
    return 1;
  }
  a->cmds_ok = 1;
  evl_signal_watch(a->l, SIGINT, EVL_F_NOGVL, on_signal, a, NULL);
  evl_signal_watch(a->l, SIGTERM, EVL_F_NOGVL, on_signal, a, NULL);
  return 0;
}

int main(int argc, char **argv) {
  static app_t app; /* big (worker table, figures); one per process */
  app_t *a = &app;
  int pol = 0, code = 0;
  a->nthreads = 2;
  a->phase_ms = 8000;
  strcpy(a->tour, "cond-timer cpython gvloop-noboost gvloop");
  int pr = parse(a, argc, argv, &pol);
  if (pr != 0) {
    usage(pr > 0 ? stdout : stderr);
    return pr > 0 ? 0 : 2;
  }
  pthread_mutex_init(&a->mu, NULL);
  pthread_mutex_init(&a->fb_mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  make_palette();
  a->gvl = gvl_create(NULL);
  if (a->gvl == NULL) {
    fprintf(stderr, "responsive: gvl_create: %s\n", strerror(errno));
    return 1;
  }
  /* Start on the bridge's own GVL; gvd::policy switches on the loop thread. */
  a->pol = 0;
  a->vm.lock = a->gvl;
  code = start_bridge(a);
  if (code == 0 && pol != 0) {
    char cmd[64];
    snprintf(cmd, sizeof cmd, "gvd::policy %s", policies[pol].key);
    tkb_eval(a->tk, cmd, NULL);
  }
  if (code == 0 && build_ui(a, pol) != 0) code = 1;
  if (code == 0) {
    pthread_mutex_lock(&a->mu);
    while (!a->quit) pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
  }
  if (a->cmds_ok) tkb_eval(a->tk, "gvd::shutdown", NULL);
  if (a->tk) tkb_destroy(a->tk);
  if (a->l) evl_destroy(a->l);
  if (code == 0) print_stats(a);
  for (int p = 0; p < NPOL; p++) free(a->st[p].lat);
  int rc = gvl_destroy(a->gvl);
  if (rc != 0) fprintf(stderr, "responsive: gvl_destroy: %s\n", gvl_strerror(rc));
  pthread_cond_destroy(&a->cv);
  pthread_mutex_destroy(&a->mu);
  pthread_mutex_destroy(&a->fb_mu);
  return code;
}
