/* SPDX-License-Identifier: MIT */
/*
 * loop_idle -- CPU used by an idle evloop over a quiet period (10 s; 1 s
 * with --quick), with a far timer and an fd watch armed as an application
 * would have.  An idle loop should make no periodic wake-ups: its uv_run
 * pass count should not move, and its CPU should be about 0.
 *
 *   loop_idle [--quick] [--runs N]
 *
 * Baseline in the same run: `poll-10ms`, a thread that wakes every 10 ms to
 * look for work (how an event loop that polls, such as a Tk binding
 * calling `update` on a timer, spends its idle time).
 * Output: RESULT loop_idle gvloop|poll-10ms cpu_pct|cpu_ms|wakeups <v>.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench.h"
#include "evloop.h"

static uint64_t quiet_ns = 10000000000ull;

static double cpu_ms(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static atomic_int ready;
static void mark_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  (void)status;
  atomic_store(&ready, 1);
}
static void io_cb(evl_t *l, void *arg, int status, unsigned ev) {
  (void)l;
  (void)arg;
  (void)status;
  (void)ev;
}

static void report(const char *variant, double cpu, uint64_t wakeups) {
  double secs = (double)quiet_ns / 1e9;
  printf("  %-10s cpu %8.3f ms over %.0f s = %7.4f%%   wake-ups %llu\n", variant, cpu,
         secs, cpu / (secs * 10.0), (unsigned long long)wakeups);
  bench_result("loop_idle", variant, "cpu_ms", cpu);
  bench_result("loop_idle", variant, "cpu_pct", cpu / (secs * 10.0));
  bench_result("loop_idle", variant, "wakeups", (double)wakeups);
}

static void run_evloop(double *cpu, uint64_t *wakeups) {
  gvl_t *g = gvl_create(NULL);
  evl_t *l;
  evl_stats_t s0, s1;
  int p[2];
  double c0;
  if (g == NULL || (l = evl_start(g, NULL)) == NULL) bench_die("start", errno);
  if (pipe(p) != 0) bench_die("pipe", errno);
  atomic_store(&ready, 0);
  if (evl_timer(l, 3600000, 3600000, 0, mark_cb, NULL, NULL) != 0 ||
      evl_fd_watch(l, p[0], EVL_READABLE, 0, io_cb, NULL, NULL) != 0 ||
      evl_post(l, mark_cb, NULL, NULL) != 0)
    bench_die("register", EINVAL);
  while (!atomic_load(&ready)) bench_sleep_ns(1000000);
  bench_sleep_ns(50000000);
  evl_stats(l, &s0);
  c0 = cpu_ms();
  bench_sleep_ns(quiet_ns);
  *cpu += cpu_ms() - c0;
  evl_stats(l, &s1);
  *wakeups += s1.iterations - s0.iterations;
  evl_destroy(l);
  gvl_destroy(g);
  close(p[0]);
  close(p[1]);
}

static atomic_int poll_stop;
static atomic_uint_fast64_t poll_wakeups;
static void *poll_main(void *arg) {
  (void)arg;
  while (!atomic_load(&poll_stop)) {
    bench_sleep_ns(10000000);
    atomic_fetch_add(&poll_wakeups, 1);
  }
  return NULL;
}

static void run_poll(double *cpu, uint64_t *wakeups) {
  pthread_t th;
  double c0;
  uint64_t w0;
  atomic_store(&poll_stop, 0);
  pthread_create(&th, NULL, poll_main, NULL);
  bench_sleep_ns(50000000);
  c0 = cpu_ms();
  w0 = atomic_load(&poll_wakeups);
  bench_sleep_ns(quiet_ns);
  *cpu += cpu_ms() - c0;
  *wakeups += atomic_load(&poll_wakeups) - w0;
  atomic_store(&poll_stop, 1);
  pthread_join(th, NULL);
}

int main(int argc, char **argv) {
  int runs = 1, i;
  double cpu[2] = {0, 0};
  uint64_t wk[2] = {0, 0};
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quiet_ns = 1000000000ull;
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--quick] [--runs N]\n", argv[0]);
      return 2;
    }
  }
  if (runs < 1) runs = 1;
  bench_meta("loop_idle", "cpu_pct", "%", "lower",
             "CPU of an idle loop (far timer + fd watch armed)");
  printf("loop_idle: %d run(s) of %.0f s\n", runs, (double)quiet_ns / 1e9);
  for (i = 0; i < runs; i++) {
    run_evloop(&cpu[0], &wk[0]);
    run_poll(&cpu[1], &wk[1]);
  }
  report("gvloop", cpu[0] / runs, wk[0] / (uint64_t)runs);
  report("poll-10ms", cpu[1] / runs, wk[1] / (uint64_t)runs);
  return 0;
}
