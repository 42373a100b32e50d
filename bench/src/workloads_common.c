/* SPDX-License-Identifier: MIT */
/* workloads_common.c -- the CPU hog and latency summaries the cases share. */
#include "workloads.h"

#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void bench_gate_init(bench_gate_t *gate, int nthreads) {
  atomic_init(&gate->arrived, 0);
  int err = pthread_barrier_init(&gate->bar, NULL, (unsigned)nthreads + 1);
  if (err) bench_die("pthread_barrier_init", err);
}

void bench_gate_destroy(bench_gate_t *gate) { pthread_barrier_destroy(&gate->bar); }

void bench_gate_wait(bench_gate_t *gate) {
  atomic_fetch_add(&gate->arrived, 1);
  pthread_barrier_wait(&gate->bar);
}

uint64_t bench_gate_open(bench_gate_t *gate, int nthreads) {
  while (atomic_load(&gate->arrived) < nthreads) bench_sleep_ns(100000);
  uint64_t t0 = bench_now_ns();
  pthread_barrier_wait(&gate->bar);
  return t0;
}

int bench_has_lock(const bench_gvl_ops_t *ops) {
  return ops != &bench_nogvl_ops && ops != &bench_nogvl_rt_ops;
}


void *bench_hog_main(void *arg) {
  bench_hog_t *h = arg;
  void *t = h->ops->attach(h->g);
#ifdef SYS_gettid
  atomic_store(&h->ktid, (int)syscall(SYS_gettid));
#endif
  if (h->start) pthread_barrier_wait(h->start);
  h->ops->acquire(t);
  atomic_store(&h->running, 1);
  uint64_t x = (uint64_t)(uintptr_t)t | 1u, n = 0;
  while (!atomic_load_explicit(h->stop, memory_order_relaxed)) {
    x = bench_spin(x, bench_steps_per_us);
    h->ops->check_ints(t);
    atomic_store_explicit(&h->units, ++n, memory_order_relaxed);
    if ((n & 1023) == 0 && h->deadline_ns && bench_now_ns() > h->deadline_ns) break;
  }
  h->ops->release(t);
  h->ops->detach(t);
  bench_sink(x);
  return NULL;
}

void bench_hogs_start(bench_hog_t *h, int n, pthread_t *tids) {
  for (int i = 0; i < n; i++) {
    int err = pthread_create(&tids[i], NULL, bench_hog_main, &h[i]);
    if (err) bench_die("pthread_create(hog)", err);
  }
  /* Wait until every hog has held the GVL once, so the measured phase
   * starts with all of them in their loops. */
  uint64_t give_up = bench_now_ns() + 1000000000u;
  for (int i = 0; i < n; i++)
    while (!atomic_load(&h[i].running) && bench_now_ns() < give_up) bench_sleep_ns(200000);
}

void bench_hogs_join(int n, pthread_t *tids) {
  for (int i = 0; i < n; i++) pthread_join(tids[i], NULL);
}

uint64_t bench_hogs_units(bench_hog_t *h, int n) {
  uint64_t sum = 0;
  for (int i = 0; i < n; i++) sum += atomic_load_explicit(&h[i].units, memory_order_relaxed);
  return sum;
}

/* /proc/self/task/TID/schedstat is "run_ns wait_ns timeslices"; its run
 * time lags for a thread that is running (it is brought up to date at the
 * kernel's next tick), so the CPU clock gives that. */
static int thread_wait_ns(int ktid, uint64_t *wait_ns) {
  char path[64];
  unsigned long long run, wait;
  if (ktid <= 0) return 0;
  snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", ktid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int ok = fscanf(f, "%llu %llu", &run, &wait) == 2;
  fclose(f);
  if (ok) *wait_ns += wait;
  return ok;
}

int bench_hogs_sched(bench_hog_t *h, const pthread_t *tids, int n, uint64_t *run_ns,
                     uint64_t *wait_ns) {
  *run_ns = *wait_ns = 0;
  for (int i = 0; i < n; i++) {
    clockid_t c;
    struct timespec ts;
    if (pthread_getcpuclockid(tids[i], &c) || clock_gettime(c, &ts) ||
        !thread_wait_ns(atomic_load(&h[i].ktid), wait_ns))
      return 0;
    *run_ns += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  }
  return 1;
}

void bench_report_latency(const char *bench, const char *variant, double *ns, size_t n) {
  double p50 = bench_percentile(ns, n, 50), p99 = bench_percentile(ns, n, 99);
  double mx = n ? ns[n - 1] : 0;
  bench_result(bench, variant, "p50_us", p50 / 1000.0);
  bench_result(bench, variant, "p99_us", p99 / 1000.0);
  bench_result(bench, variant, "max_us", mx / 1000.0);
  bench_result(bench, variant, "samples", (double)n);
}
