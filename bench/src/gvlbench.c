/* SPDX-License-Identifier: MIT */
/*
 * gvlbench -- runs every benchmark case against every GVL variant.
 *
 *   gvlbench [--quick] [--runs N] [--case a,b] [--variant x,y] [--pin CPU] [--list]
 *
 * --pin CPU: the whole process (every thread it starts) runs on that one CPU
 * only (sched_setaffinity), as in a 1-vCPU container.
 *
 * stdout: META lines (what each metric means), INFO lines and one
 *   RESULT <bench> <variant> <metric> <value>
 * line per metric per run; bench/run.sh aggregates them (benchreport).
 * stderr: a progress line per case.
 *
 * Order: for each case, run 1 of every variant, then run 2 of every
 * variant, ...: a burst of load from the machine's other users then spreads
 * over all variants instead of landing on one.
 */
#include "workloads.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* Variant sets.  gvloop-noboost only where a boosted acquire happens;
 * gvloop-noia only where a thread comes back from blocking regions; nogvl
 * not where the case is about sharing one lock. */
#define V_CORE 0x01u     /* gvloop, simple-mutex, cond-timer, cpython */
#define V_NOGVL 0x02u
#define V_NOBOOST 0x04u
#define V_NOIA 0x08u
#define V_FLOOR 0x10u    /* the floor: the raw handoff, no lock            */
#define V_RT 0x20u       /* gvloop-rt, nogvl-rt: only when asked by name    */
#define V_TOKEN 0x40u    /* token: the convoy's floor                       */

typedef struct {
  const char *name;
  bench_case_fn fn;
  unsigned variants;
} case_t;

static const case_t cases[] = {
    {"floor", bench_case_floor, V_FLOOR},
    {"uncontended", bench_case_uncontended, V_CORE | V_NOGVL},
    {"check_ints", bench_case_check_ints, V_CORE | V_NOGVL},
    {"thread_pass", bench_case_thread_pass, V_CORE | V_NOGVL},
    {"pipe", bench_case_pipe, V_CORE | V_NOGVL},
    {"mutex_10", bench_case_mutex_10, V_CORE | V_NOGVL},
    {"mutex_100", bench_case_mutex_100, V_CORE | V_NOGVL},
    {"busy_flag", bench_case_busy_flag, V_CORE | V_NOGVL},
    {"wakeup", bench_case_wakeup, V_CORE | V_NOGVL | V_NOIA},
    {"dispatch", bench_case_dispatch, V_CORE | V_NOGVL | V_NOBOOST | V_RT},
    {"fairness", bench_case_fairness, V_CORE | V_NOGVL},
    {"starvation", bench_case_starvation, V_CORE | V_NOBOOST},
    {"convoy", bench_case_convoy, V_CORE | V_NOGVL | V_NOIA | V_TOKEN},
};
#define NCASES (sizeof cases / sizeof cases[0])

typedef struct {
  const bench_gvl_ops_t *ops;
  unsigned set;
} variant_t;

/* Table order: gvloop first (the reference), then its switched-off forms,
 * the floor, then the baselines in historical order. */
static const variant_t variants[] = {
    {&bench_gvloop_ops, V_CORE},         {&bench_gvloop_noboost_ops, V_NOBOOST},
    {&bench_gvloop_noia_ops, V_NOIA},    {&bench_nogvl_ops, V_NOGVL},
    {&bench_simple_mutex_ops, V_CORE},   {&bench_cond_timer_ops, V_CORE},
    {&bench_cpython_ops, V_CORE},        {&bench_floor_ops, V_FLOOR},
    {&bench_token_ops, V_TOKEN},
    {&bench_gvloop_rt_ops, V_RT},        {&bench_nogvl_rt_ops, V_RT},
};
#define NVARIANTS (sizeof variants / sizeof variants[0])

#define MS 1000000ull

static void cfg_full(bench_cfg_t *c) {
  *c = (bench_cfg_t){.quick = 0,
                     .pairs = 50000,
                     .rounds = 30,
                     .round_ns = 1 * MS,
                     .passes = 20000,
                     .trips = 10000,
                     .mutex_ops = 200000,
                     .flag_cap_ns = 2000 * MS,
                     .wakeup_ns = 600 * MS,
                     .solo_ns = 300 * MS,
                     .events_ns = 700 * MS,
                     .fair_ns = 600 * MS,
                     .convoy_solo_ns = 150 * MS,
                     .convoy_cap_ns = 400 * MS};
}

/* Every case briefly: enough to exercise each code path, no more. */
static void cfg_quick(bench_cfg_t *c) {
  *c = (bench_cfg_t){.quick = 1,
                     .pairs = 5000,
                     .rounds = 2,
                     .round_ns = 1 * MS,
                     .passes = 500,
                     .trips = 200,
                     .mutex_ops = 2000,
                     .flag_cap_ns = 300 * MS,
                     .wakeup_ns = 60 * MS,
                     .solo_ns = 50 * MS,
                     .events_ns = 50 * MS,
                     .fair_ns = 50 * MS,
                     .convoy_solo_ns = 20 * MS,
                     .convoy_cap_ns = 100 * MS};
}

/* Is name in the comma-separated list (NULL list = everything)? */
static int listed(const char *list, const char *name) {
  if (list == NULL) return 1;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return 1;
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: gvlbench [--quick] [--runs N] [--case a,b] [--variant x,y] [--list]\n");
  exit(2);
}

static void list_all(void) {
  for (size_t c = 0; c < NCASES; c++) {
    printf("%s", cases[c].name);
    for (size_t v = 0; v < NVARIANTS; v++)
      if ((cases[c].variants & variants[v].set) && !(variants[v].set & V_RT))
        printf(" %s", variants[v].ops->name);
    printf("\n");
  }
}

/* The panels of the chart, in order. */
static void chart_list(void) {
  static const char *const c[][2] = {
      {"uncontended", "ns_pair"},      {"check_ints", "overhead_pct"},
      {"thread_pass", "time_s"},       {"thread_pass", "handoff_pct"},
      {"pipe", "time_s"},              {"mutex_10", "time_s"},
      {"mutex_100", "time_s"},         {"busy_flag", "time_ms"},
      {"wakeup", "p99_us"},            {"dispatch_latency", "p50_us"},
      {"dispatch_latency", "p99_us"},  {"hog_throughput", "pct"},
      {"fairness", "jain"},            {"starvation", "bg_share_pct"},
      {"convoy", "io_ratio_1hog"},     {"convoy", "hog_pct_1hog"},
      {"convoy", "io_ratio_2hog"},     {"convoy", "hog_pct_2hog"}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) bench_chart(c[i][0], c[i][1]);
}

static uint64_t process_cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
         ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

static void run_case(const case_t *c, const bench_cfg_t *cfg, int runs, const char *vlist,
                     size_t idx) {
  uint64_t t0 = bench_now_ns();
  for (int r = 0; r < runs; r++) {
    for (size_t v = 0; v < NVARIANTS; v++) {
      if (!(c->variants & variants[v].set) || !listed(vlist, variants[v].ops->name)) continue;
      if ((variants[v].set & V_RT) && vlist == NULL) continue;   /* by name only */
      /* CPU time of the whole process against wall time, per case: one
       * figure that says whether waiting threads burn CPU. */
      uint64_t w0 = bench_now_ns(), c0 = process_cpu_ns();
      c->fn(variants[v].ops, cfg);
      uint64_t c1 = process_cpu_ns(), w1 = bench_now_ns();
      bench_result("cpu", variants[v].ops->name, c->name,
                   w1 > w0 ? (double)(c1 - c0) / (double)(w1 - w0) : 0);
      printf("DONE %s %s %d\n", c->name, variants[v].ops->name, r + 1);
      fflush(stdout);
    }
  }
  fprintf(stderr, "[%zu/%zu] %-12s %d run(s) done in %.1f s\n", idx + 1, NCASES, c->name, runs,
          (double)(bench_now_ns() - t0) / 1e9);
}

static void *noop_thread(void *arg) { return arg; }

/* glibc skips the atomic instructions of pthread_mutex_lock while a process
 * has never had a second thread.  A host with a GVL always has threads, so
 * make every case, and the pthread reference pair of `uncontended`, run in
 * that state from the start. */
static void become_multithreaded(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, noop_thread, NULL) == 0) pthread_join(t, NULL);
}

int main(int argc, char **argv) {
  int quick = 0, runs = -1, pin = -1;
  const char *clist = NULL, *vlist = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) clist = argv[++i];
    else if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc) vlist = argv[++i];
    else if (strcmp(argv[i], "--pin") == 0 && i + 1 < argc) pin = atoi(argv[++i]);
    else if (strcmp(argv[i], "--list") == 0) { list_all(); return 0; }
    else usage();
  }
  if (runs < 0) runs = quick ? 1 : 5;
  if (runs < 1) usage();
  bench_cfg_t cfg;
  if (quick) cfg_quick(&cfg); else cfg_full(&cfg);
  if (pin >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(pin, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) bench_die("sched_setaffinity", errno);
    printf("INFO gvlbench pinned to CPU %d\n", pin);
  }
  become_multithreaded();
  bench_calibrate();
  printf("INFO gvlbench steps_per_us %u\n", bench_steps_per_us);
  printf("INFO gvlbench runs %d\n", runs);
  printf("INFO gvlbench mode %s\n", quick ? "quick" : "full");
  for (size_t v = 0; v < NVARIANTS; v++)
    printf("INFO variant %s %s\n", variants[v].ops->name, variants[v].ops->design);
  bench_meta_basic();
  bench_meta_sched();
  bench_meta_floor();
  for (size_t c = 0; c < NCASES; c++)
    bench_meta("cpu", cases[c].name, "CPUs", "none",
               "process CPU time / wall time while the case ran (1 = one CPU busy throughout)");
  chart_list();
  fflush(stdout);
  for (size_t c = 0; c < NCASES; c++)
    if (listed(clist, cases[c].name)) run_case(&cases[c], &cfg, runs, vlist, c);
  return 0;
}
