/* SPDX-License-Identifier: MIT */
/*
 * tk_latency -- a Tcl event to the start of the host callback it triggers,
 * while a hog thread holds the GVL (a safe point every ~1 us of work).
 *
 *   tk_latency [--quick] [--runs N] [--only a,b]
 *   (--tk-only V --spin N: one variant with Tk, run by the program itself)
 *
 * Trigger: `after 0 {hostcb}` (Tcl's timer event through the libuv
 * notifier), and with a display also `event generate` of a virtual event
 * bound to hostcb.  t0 is taken by a plain Tcl command just before the
 * trigger, t1 at the start of the host callback (which runs under the GVL).
 * Variants, all measured in this run:
 *   gvloop          host callbacks take the GVL with the boost
 *   gvloop-noboost  same, at normal priority (waits for the hog's slice)
 *   nohog           boost, no hog: the floor (Tcl dispatch + uncontended GVL)
 *   nogvl           boost, beside a CPU-bound thread that never takes the
 *                   GVL: what the OS scheduler alone costs (the reference
 *                   on a loaded machine)
 *   gvloop-rt       gvloop with the loop thread in SCHED_FIFO on a GVL
 *                   created with GVL_F_LEND (evloop.h, "Scheduling")
 *   nogvl-rt        nogvl with the loop thread in SCHED_FIFO
 *   tkinter         python3-tk: after(0) callback delay beside a CPU-bound
 *                   Python thread (when python3 with tkinter is installed)
 * Output: RESULT tk_latency[_event] <variant> p50_us|p99_us|max_us|samples <v>
 */
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tcl.h>

#include "bench.h"
#include "tkb_hog.h"
#include "tkbridge.h"

#ifndef TKB_BENCH_DIR
#define TKB_BENCH_DIR "."
#endif

extern char **environ;

static uint64_t *samples;
static size_t nsamples, cap_samples;
static uint64_t t0_ns;                 /* loop thread only */
static unsigned long spin_per_us = 1;  /* tkb__hog_calibrate(), once in main */

/* ---- the commands ------------------------------------------------------------- */

static int mark_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  (void)ip;
  (void)objc;
  (void)objv;
  t0_ns = gvl_now_ns();
  return TCL_OK;
}

static void make_mark(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)arg;
  Tcl_CreateObjCommand(ip, "mark", mark_cmd, NULL, NULL);
}

static int host_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                   tkb_result_t *res) {
  uint64_t t1 = gvl_now_ns();
  (void)tk;
  (void)arg;
  (void)argc;
  (void)argv;
  (void)res;
  if (nsamples == cap_samples) {
    size_t cap = cap_samples ? cap_samples * 2 : 1024;
    uint64_t *n = realloc(samples, cap * sizeof(*n));
    if (n == NULL) return ENOMEM;
    samples = n;
    cap_samples = cap;
  }
  samples[nsamples++] = t1 - t0_ns;
  return 0;
}

/* ---- one variant ---------------------------------------------------------------- */

/* The same percentile rule as every other bench program (bench_percentile:
 * the nearest rank), over the samples in microseconds. */
static void report(const char *bench, const char *variant) {
  if (nsamples == 0) return;
  double *us = malloc(nsamples * sizeof *us);
  if (!us) { perror("malloc"); exit(1); }
  for (size_t i = 0; i < nsamples; i++) us[i] = (double)samples[i] / 1000.0;
  double p50 = bench_percentile(us, nsamples, 50);
  double p99 = bench_percentile(us, nsamples, 99);
  double mx = bench_percentile(us, nsamples, 100);
  free(us);
  printf("RESULT %s %s p50_us %.3f\n", bench, variant, p50);
  printf("RESULT %s %s p99_us %.3f\n", bench, variant, p99);
  printf("RESULT %s %s max_us %.3f\n", bench, variant, mx);
  printf("RESULT %s %s samples %zu\n", bench, variant, nsamples);
  fflush(stdout);
}

static const char after_loop[] =
    "proc step {} {\n"
    "  if {[incr ::n] > $::N} {set ::done 1; return}\n"
    "  mark; after 0 {hostcb; after 1 step}\n"
    "}\n"
    "set ::n 0; step; vwait ::done";

static const char event_loop[] =
    "frame .f -width 20 -height 20; pack .f; update\n"
    "bind .f <<Lat>> {hostcb; after 1 step}\n"
    "proc step {} {\n"
    "  if {[incr ::n] > $::N} {set ::done 1; return}\n"
    "  mark; event generate .f <<Lat>> -when tail\n"
    "}\n"
    "set ::n 0; step; vwait ::done";

/* A CPU-bound thread outside the GVL (the nogvl variant). */
static void *plain_hog_main(void *arg) {
  tkb__hog_t *h = arg;
  volatile unsigned long x = 1;
  while (!atomic_load(&h->stop))
    for (unsigned long i = 0; i < h->spin_per_us; i++) x = x * 6364136223846793005ul + 1;
  return NULL;
}

/* hogs GVL hogs; plain: one more CPU-bound thread that takes no GVL. */
/* rt: the loop thread in SCHED_FIFO on a GVL that lends (evloop.h). */
static int run_variant(const char *variant, int boost, int hogs, int plain, int n, int with_tk,
                       int rt) {
  gvl_config_t gc = {0};
  gc.flags = rt ? GVL_F_LEND : 0;
  gvl_t *g = gvl_create(&gc);
  evl_config_t ec;
  memset(&ec, 0, sizeof ec);
  tkb_evl_config(&ec);
  ec.prio = boost ? EVL_PRIO_BOOST : EVL_PRIO_NORMAL;
  if (rt) {
    ec.sched_policy = EVL_SCHED_FIFO;
    ec.sched_priority = 1;
  }
  evl_t *l = evl_start(g, &ec);
  if (l == NULL && rt && errno == EPERM) {
    printf("INFO tk_latency %s skipped: SCHED_FIFO is not permitted here\n", variant);
    gvl_destroy(g);
    return EPERM;
  }
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.no_tk = !with_tk;
  tc.prio = boost ? TKB_PRIO_BOOST : TKB_PRIO_NORMAL;
  tkb_t *tk = NULL;
  int rc = l ? tkb_start(l, &tc, &tk) : errno;
  if (rc != 0) {
    fprintf(stderr, "tk_latency: %s: %s\n", variant, tkb_strerror(rc));
    if (l) evl_destroy(l);
    gvl_destroy(g);
    return rc;
  }
  tkb_run(tk, make_mark, NULL);
  tkb_command_create(tk, "hostcb", host_cb, NULL);
  char set_n[64];
  snprintf(set_n, sizeof set_n, "set ::N %d", n);
  tkb_eval(tk, set_n, NULL);
  pthread_t th[8];
  tkb__hog_t hog = {.gvl = g, .spin_per_us = spin_per_us};
  atomic_init(&hog.stop, 0);
  for (int i = 0; i < hogs; i++) pthread_create(&th[i], NULL, tkb__hog_main, &hog);
  if (plain) pthread_create(&th[hogs], NULL, plain_hog_main, &hog);
  usleep(20000); /* let the hogs take the GVL */
  nsamples = 0;
  char *res = NULL;
  rc = tkb_eval(tk, with_tk ? event_loop : after_loop, &res);
  if (rc != 0) fprintf(stderr, "tk_latency: %s: %s\n", variant, res ? res : "");
  free(res);
  atomic_store(&hog.stop, 1);
  for (int i = 0; i < hogs + (plain != 0); i++) pthread_join(th[i], NULL);
  const char *bench = with_tk ? "tk_latency_event" : "tk_latency";
  report(bench, variant);
  gvl_stats_t gs;
  if (gvl_stats(g, &gs) == 0) { /* a refused boost would explain a tail */
    printf("RESULT %s %s boosts_refused %llu\n", bench, variant,
           (unsigned long long)gs.boosts_refused);
    printf("RESULT %s %s preemptions %llu\n", bench, variant,
           (unsigned long long)gs.preemptions);
  }
  tkb_destroy(tk);
  evl_destroy(l);
  gvl_destroy(g);
  return 0;
}

/* python3-tk baseline: same loop in tkinter beside a CPU-bound thread. */
static void run_tkinter(int n) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import tkinter' >/dev/null 2>&1 && "
           "python3 %s/tkinter_latency.py %d",
           TKB_BENCH_DIR, n);
  FILE *p = popen(cmd, "r");
  if (p == NULL) return;
  char line[256];
  while (fgets(line, sizeof line, p)) fputs(line, stdout);
  pclose(p);
  fflush(stdout);
}

/* The variants, in the order they run: boost, GVL hogs, a plain hog, rt. */
static const struct {
  const char *name;
  int boost, hogs, plain, rt;
} variants[] = {
    {"gvloop", 1, 1, 0, 0}, {"gvloop-noboost", 0, 1, 0, 0}, {"nohog", 1, 0, 0, 0},
    {"nogvl", 1, 0, 1, 0},  {"gvloop-rt", 1, 1, 0, 1},      {"nogvl-rt", 1, 0, 1, 1},
};
#define NVARIANTS (sizeof variants / sizeof variants[0])

/* One variant; 0 if it ran or was skipped (no SCHED_FIFO here). */
static int run_one(size_t v, int quick, int with_tk) {
  int n = quick ? 200 : 2000;
  if (!variants[v].boost) n = quick ? 50 : 200; /* each event waits a slice */
  int rc = run_variant(variants[v].name, variants[v].boost, variants[v].hogs,
                       variants[v].plain, n, with_tk, variants[v].rt);
  return rc == EPERM ? 0 : rc;
}

/* With Tk, each variant runs in a process of its own: this program again,
 * with --tk-only.  Tk 8.6 stays on the loop thread that first ran it, and a
 * later loop thread's tkb_start is refused (tkbridge.h, ENOTSUP), so one
 * process could measure only its first variant. */
static int run_tk_child(size_t v, int quick) {
  char spin[32];
  snprintf(spin, sizeof spin, "%lu", spin_per_us);
  char *argv[] = {"tk_latency", "--tk-only", (char *)variants[v].name, "--spin", spin,
                  quick ? "--quick" : NULL, NULL};
  fflush(stdout);
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
  if (rc != 0) {
    fprintf(stderr, "tk_latency: %s: posix_spawn: %s\n", variants[v].name, strerror(rc));
    return rc;
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return errno;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : ECHILD;
}

int main(int argc, char **argv) {
  int quick = 0, runs = 1;
  const char *only = NULL, *tk_only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else if (strcmp(argv[i], "--tk-only") == 0 && i + 1 < argc) tk_only = argv[++i];
    else if (strcmp(argv[i], "--spin") == 0 && i + 1 < argc)
      spin_per_us = strtoul(argv[++i], NULL, 10);
  }
  if (runs < 1) runs = 1;
  if (tk_only) { /* a child of run_tk_child: one variant, with Tk */
    for (size_t v = 0; v < NVARIANTS; v++)
      if (strcmp(variants[v].name, tk_only) == 0) return run_one(v, quick, 1) ? 1 : 0;
    fprintf(stderr, "tk_latency: no variant %s\n", tk_only);
    return 2;
  }
  printf("META tk_latency p50_us us low Tcl after 0 -> host callback start, 1 hog holding the GVL (target p99 <= 1000 with the boost)\n");
  printf("META tk_latency p99_us us low as p50_us, 99th percentile\n");
  printf("META tk_latency max_us us low as p50_us, worst\n");
  printf("META tk_latency samples count none events measured\n");
  printf("META tk_latency boosts_refused count none boosted acquisitions demoted by the GVL's cap\n");
  printf("META tk_latency preemptions count none safe points that gave the GVL up\n");
  printf("INFO tk_latency notifier %s\n", tkb_notifier_name());
  spin_per_us = tkb__hog_calibrate();
  int failed = 0;
  for (int r = 0; r < runs; r++) {
    for (size_t v = 0; v < NVARIANTS; v++)
      if (bench_wanted(only, variants[v].name) && run_one(v, quick, 0) != 0) failed = 1;
    if (getenv("DISPLAY") != NULL)
      for (size_t v = 0; v < NVARIANTS; v++)
        if (bench_wanted(only, variants[v].name) && run_tk_child(v, quick) != 0) failed = 1;
    if (bench_wanted(only, "tkinter")) run_tkinter(quick ? 50 : 200);
    printf("DONE tk_latency all %d\n", r);
  }
  free(samples);
  /* A variant that could not run fails the program, so that run.sh and
   * bench_quick see it. */
  return failed;
}
