/* SPDX-License-Identifier: MIT */
/*
 * trace_demo.c -- a short traced window of a CPU hog and 1 kHz boosted
 * events, per GVL policy, rendered as PNG timelines.
 *
 * For each policy (gvloop, gvloop without boost, cond-timer, cpython: the
 * bench variants of bench/src, run through the same ops table as gvlbench)
 * two threads run for --ms milliseconds:
 *   hog     holds the GVL, passes a safe point after every ~1 us of work;
 *   events  wakes every 1 ms ("arrival"), takes the GVL with a boost (a
 *           plain acquire for the locks that have none), runs a 20 us
 *           "host callback" under it, releases, then runs a 30 us "redraw"
 *           without the GVL (what Tk does on the loop thread).
 * The threads are named with gvl_thread_set_name (libgvl variants) or
 * gvl_trace_set_thread_name (baselines), so the pictures show the names.
 * Output in DIR: trace-<policy>.gvlt (libgvl's raw trace), turned by
 * gvl-trace (tools/) into trace-<policy>.json (open in ui.perfetto.dev), and
 *   timeline.png       all policies, a 200 ms window, one panel each;
 *   timeline-zoom.png  gvloop and gvloop without boost, a 5 ms window.
 *
 * For the gvloop policies the trace is libgvl's own (gvl_trace_start).  The
 * baselines have no tracer: their states are measured around the calls
 * (wait = the time inside acquire, or inside a safe point that took over
 * 3 us, i.e. gave the lock up) and recorded with gvl_trace_span() on a GVL
 * used only to carry the trace.  So their pictures are slightly coarser,
 * and their hog also pays two clock reads per safe point.
 *
 * Usage: gvl_trace_demo [--out DIR] [--ms N] [--python PATH] [--script PATH]
 *                       [--tool PATH] [--quick] [--runs N]
 * (--tool: gvl-trace; the last two: ignored, for the bench runner)
 * Also prints the events' dispatch latency per policy (arrival to GVL held;
 * ticks that pass while an event waits are coalesced, as a GUI event source
 * would, and counted; the timer's own lateness is reported apart) as RESULT
 * lines.
 */
#include "bench.h"
#include "gvl.h"
#include "gvl_trace.h"

#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#ifndef TRACE_PNG_SCRIPT
#define TRACE_PNG_SCRIPT "trace_png.py"
#endif
#ifndef TRACE_PYTHON
#define TRACE_PYTHON "/usr/bin/python3"
#endif
#ifndef TRACE_TOOL
#define TRACE_TOOL "gvl-trace"
#endif

extern char **environ;

typedef struct {
  const char *name, *title;
  const bench_gvl_ops_t *ops;
  int native;                  /* a libgvl variant: trace the GVL itself */
} policy_t;

/* Only gvloop has a boost: the baselines take the events' boosted acquire
 * as a plain one, and their panels say so. */
static const policy_t policies[] = {
    {"gvloop", "gvloop, events boosted", &bench_gvloop_ops, 1},
    {"gvloop-noboost", "gvloop, events not boosted", &bench_gvloop_noboost_ops, 1},
    {"cond-timer", "cond-timer: Ruby 1.9.3-3.x style, 100 ms slice, no boost "
     "(states timed around the lock calls)", &bench_cond_timer_ops, 0},
    {"cpython", "cpython: CPython style, 5 ms switch interval, no boost "
     "(states timed around the lock calls)", &bench_cpython_ops, 0},
};
#define NPOL (sizeof policies / sizeof policies[0])

/* One run's shared state. */
typedef struct {
  const policy_t *p;
  void *lock;                  /* the variant's GVL                       */
  gvl_t *tg;                   /* the GVL that carries the trace          */
  atomic_int stop;
  atomic_int hog_ready;
  uint64_t ms;
  double *lat_us;              /* per event: arrival to GVL held          */
  double *wake_us;             /* per event: due time to arrival (timer)  */
  size_t nlat;
  uint64_t skipped;            /* ticks coalesced while an event waited   */
} run_t;

/* Per thread: the state measured around a baseline's calls.  A baseline
 * has no boost, so its waits and holds are plain ones. */
typedef struct {
  run_t *r;
  void *t;
  uint64_t hold_since;
} th_t;

static void span(th_t *th, const char *name, uint64_t a, uint64_t b) {
  if (!th->r->p->native && b > a) (void)gvl_trace_span(th->r->tg, "gvl", name, a, b);
}

static void acquire(th_t *th, int prio) {
  uint64_t t0 = bench_now_ns();
  th->r->p->ops->acquire_prio(th->t, prio);
  th->hold_since = bench_now_ns();
  span(th, "wait", t0, th->hold_since);
}

static void release(th_t *th) {
  span(th, "hold", th->hold_since, bench_now_ns());
  th->r->p->ops->release(th->t);
}

static void safe_point(th_t *th) {
  if (th->r->p->native) {       /* no clock reads on the real fast path */
    th->r->p->ops->check_ints(th->t);
    return;
  }
  uint64_t t0 = bench_now_ns();
  th->r->p->ops->check_ints(th->t);
  uint64_t t1 = bench_now_ns();
  if (t1 - t0 > 3000) {         /* it gave the lock up and got it back */
    span(th, "hold", th->hold_since, t0);
    span(th, "wait", t0, t1);
    th->hold_since = t1;
  }
}

/* A libgvl variant's handle is a gvl_thread_t: name it through the lock;
 * a baseline's thread is named for the trace that carries its states. */
static void name_thread(th_t *th, const char *name) {
  if (th->r->p->native) (void)gvl_thread_set_name(th->t, name);
  else (void)gvl_trace_set_thread_name(name);
}

static void *hog(void *arg) {
  run_t *r = arg;
  th_t th = {r, r->p->ops->attach(r->lock), 0};
  uint64_t x = 1;
  name_thread(&th, "hog (CPU-bound)");
  acquire(&th, 0);
  atomic_store(&r->hog_ready, 1);
  while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
    x = bench_spin(x, bench_steps_per_us);
    safe_point(&th);
  }
  release(&th);
  r->p->ops->detach(th.t);
  bench_sink(x);
  return NULL;
}

/* Ticks that passed while the previous event was still waiting are
 * coalesced into the next one, as a GUI event source would: latency is
 * then per event, not a growing backlog.  Returns the next tick index. */
static uint64_t next_tick(uint64_t start, uint64_t i, uint64_t *skipped) {
  uint64_t now = bench_now_ns(), n = i + 1;
  if (now > start + n * 1000000) {
    uint64_t late = (now - start) / 1000000 + 1;
    *skipped += late - n;
    n = late;
  }
  return n;
}

static void *events(void *arg) {
  run_t *r = arg;
  th_t th = {r, r->p->ops->attach(r->lock), 0};
  uint64_t x = 2, start = bench_now_ns() + 1000000;
  name_thread(&th, "events (1 kHz)");
  for (uint64_t i = 0; i < r->ms; i = next_tick(start, i, &r->skipped)) {
    uint64_t due = start + i * 1000000;
    bench_sleep_until(due);
    uint64_t arrived = bench_now_ns();
    gvl_trace_instant(r->tg, "evloop", "arrival", i);
    acquire(&th, BENCH_PRIO_BOOST);
    r->wake_us[r->nlat] = (double)(arrived - due) / 1000.0;
    r->lat_us[r->nlat++] = (double)(th.hold_since - arrived) / 1000.0;
    gvl_trace_begin(r->tg, "host", "callback");
    x = bench_spin(x, 20 * bench_steps_per_us);
    gvl_trace_end(r->tg, "host", "callback");
    release(&th);
    gvl_trace_begin(r->tg, "tk", "redraw");
    x = bench_spin(x, 30 * bench_steps_per_us);
    gvl_trace_end(r->tg, "tk", "redraw");
  }
  r->p->ops->detach(th.t);
  bench_sink(x);
  return NULL;
}

static void run_policy(const policy_t *p, const char *dir, uint64_t ms) {
  char path[1024];
  run_t r;
  pthread_t th[2];
  memset(&r, 0, sizeof r);
  r.p = p;
  r.ms = ms;
  r.lat_us = bench_xcalloc(ms, sizeof *r.lat_us);
  r.wake_us = bench_xcalloc(ms, sizeof *r.wake_us);
  r.lock = p->ops->create();
  r.tg = p->native ? (gvl_t *)r.lock : gvl_create(NULL);
  if (!r.tg) bench_die("gvl_create", errno);
  snprintf(path, sizeof path, "%s/trace-%s.gvlt", dir, p->name);
  int rc = gvl_trace_start(r.tg, path, NULL);
  if (rc) bench_die(path, rc);
  if (pthread_create(&th[0], NULL, hog, &r)) bench_die("pthread_create", errno);
  while (!atomic_load(&r.hog_ready)) bench_sleep_ns(100000);
  if (pthread_create(&th[1], NULL, events, &r)) bench_die("pthread_create", errno);
  pthread_join(th[1], NULL);
  atomic_store(&r.stop, 1);
  pthread_join(th[0], NULL);
  if ((rc = gvl_trace_stop(r.tg))) bench_die("gvl_trace_stop", rc);
  gvl_trace_stats_t st;
  gvl_trace_stats(r.tg, &st);
  if (!p->native) gvl_destroy(r.tg);
  p->ops->destroy(r.lock);
  bench_result("trace_demo", p->name, "dispatch_p50_us",
               bench_percentile(r.lat_us, r.nlat, 50));
  bench_result("trace_demo", p->name, "dispatch_p99_us",
               bench_percentile(r.lat_us, r.nlat, 99));
  bench_result("trace_demo", p->name, "timer_late_p50_us",
               bench_percentile(r.wake_us, r.nlat, 50));
  bench_result("trace_demo", p->name, "coalesced_pct",
               100.0 * (double)r.skipped / (double)(r.skipped + r.nlat));
  printf("# %s: %s (%llu events kept, %llu lost)\n", p->name, path,
         (unsigned long long)st.recorded, (unsigned long long)st.lost);
  free(r.lat_us);
  free(r.wake_us);
}

/* Run argv[0] with argv; 0 if it ran and exited with 0. */
static int run(const char *const *argv) {
  pid_t pid;
  int st;
  if (posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ)) {
    fprintf(stderr, "gvl_trace_demo: cannot run %s\n", argv[0]);
    return 1;
  }
  waitpid(pid, &st, 0);
  return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int render(const char *python, const char *script, const char *out,
                  const char *window, const char *const *args) {
  const char *argv[32];
  int n = 0;
  argv[n++] = python;
  argv[n++] = script;
  argv[n++] = "--window";
  argv[n++] = window;
  for (; *args && n < 30; args++) argv[n++] = *args;
  argv[n++] = out;
  argv[n] = NULL;
  int rc = run(argv);
  if (!rc) printf("# wrote %s\n", out);
  return rc;
}

int main(int argc, char **argv) {
  const char *dir = "trace-out", *python = TRACE_PYTHON, *script = TRACE_PNG_SCRIPT;
  const char *tool = TRACE_TOOL;
  uint64_t ms = 300;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--out") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--ms") && i + 1 < argc) ms = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--python") && i + 1 < argc) python = argv[++i];
    else if (!strcmp(argv[i], "--script") && i + 1 < argc) script = argv[++i];
    else if (!strcmp(argv[i], "--tool") && i + 1 < argc) tool = argv[++i];
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc) i++;
    else if (strcmp(argv[i], "--quick")) {
      fprintf(stderr, "usage: %s [--out DIR] [--ms N] [--python P] [--script S] "
              "[--tool GVL_TRACE]\n", argv[0]);
      return 2;
    }
  }
  if (ms < 20 || ms > 100000) ms = 300;
  if (mkdir(dir, 0777) && errno != EEXIST) bench_die(dir, errno);
  bench_calibrate();
  for (size_t i = 0; i < NPOL; i++) run_policy(&policies[i], dir, ms);

  char raw[NPOL][1024], files[NPOL][1024], out[1024], out2[1024], win[64], zoom[64];
  const char *args[4 * NPOL + 1];
  int n = 0;
  for (size_t i = 0; i < NPOL; i++) {
    snprintf(raw[i], sizeof raw[i], "%s/trace-%s.gvlt", dir, policies[i].name);
    snprintf(files[i], sizeof files[i], "%s/trace-%s.json", dir, policies[i].name);
    const char *conv[] = {tool, raw[i], files[i], NULL};
    if (run(conv)) return 1;
    args[n++] = "--title";
    args[n++] = policies[i].title;
  }
  for (size_t i = 0; i < NPOL; i++) args[n++] = files[i];
  args[n] = NULL;
  /* A window away from the start, where every policy is in its steady
   * state; 200 ms covers two of cond-timer's slices. */
  uint64_t from = ms > 250 ? ms - 220 : ms / 4;
  uint64_t len = ms - from > 200 ? 200 : ms - from - 5;
  snprintf(win, sizeof win, "%llu:%llu", (unsigned long long)from,
           (unsigned long long)(from + len));
  snprintf(out, sizeof out, "%s/timeline.png", dir);
  int rc = render(python, script, out, win, args);
  const char *zargs[] = {"--title", policies[0].title, "--title", policies[1].title,
                         files[0], files[1], NULL};
  snprintf(zoom, sizeof zoom, "%llu:%llu", (unsigned long long)from,
           (unsigned long long)(from + 5));
  snprintf(out2, sizeof out2, "%s/timeline-zoom.png", dir);
  rc |= render(python, script, out2, zoom, zargs);
  return rc;
}
