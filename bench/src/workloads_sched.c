/* SPDX-License-Identifier: MIT */
/*
 * workloads_sched.c -- cases about who gets the GVL when: wakeup, dispatch
 * (dispatch_latency + hog_throughput), fairness, starvation, convoy.
 */
#include "workloads.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000ull

/* ---- wakeup ----------------------------------------------------------------
 * A thread sleeps 10 ms in a blocking region (call_without) while a hog
 * spins; latency = from the end of its sleep to running with the GVL again.
 * The same measurement as the Ruby/Python anchors (includes the OS timer's
 * own wake-up delay, identical for every variant). */

typedef struct {
  uint64_t until;
} sleep_arg_t;

static void *sleep_fn(void *arg) {
  bench_sleep_until(((sleep_arg_t *)arg)->until);
  return NULL;
}

void bench_case_wakeup(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  void *g = ops->create();
  atomic_int stop = 0;
  bench_hog_t hog = {.ops = ops, .g = g, .stop = &stop,
                     .deadline_ns = bench_now_ns() + cfg->wakeup_ns + 2000 * MS};
  pthread_t tid;
  bench_hogs_start(&hog, 1, &tid);
  void *t = ops->attach(g);
  ops->acquire(t);
  size_t cap = (size_t)(cfg->wakeup_ns / (10 * MS)) + 2, n = 0;
  double *lat = bench_xcalloc(cap, sizeof *lat);
  uint64_t end = bench_now_ns() + cfg->wakeup_ns;
  while (n < cap && bench_now_ns() < end) {
    sleep_arg_t s = {bench_now_ns() + 10 * MS};
    ops->call_without(t, sleep_fn, &s);
    uint64_t now = bench_now_ns();
    lat[n++] = now > s.until ? (double)(now - s.until) : 0;
    ops->check_ints(t);
  }
  ops->release(t);
  atomic_store(&stop, 1);
  bench_hogs_join(1, &tid);
  bench_report_latency("wakeup", ops->name, lat, n);
  free(lat);
  ops->detach(t);
  ops->destroy(g);
}

/* ---- dispatch: dispatch_latency and hog_throughput -------------------------
 * A hog passes a safe point every ~1 us.  An event thread wakes at 1 kHz
 * without the GVL (as evloop's loop thread does), takes it with a boosted
 * acquire, runs a ~1 us callback and releases.  Latency = the boosted
 * acquire call alone (the OS timer's slack is not the GVL's).  The hog's
 * rate during the events is compared with its rate alone; the two kinds of
 * phase alternate DISP_ROUNDS times, so a change in the machine's load
 * lands on both. */

#define DISP_ROUNDS 20

enum { PH_SOLO, PH_EVENTS, PH_DONE };

typedef struct {
  const bench_gvl_ops_t *ops;
  void *g;
  atomic_int phase;
  double *lat, *due;
  size_t cap, n;
  uint64_t wait_cpu_ns, wait_ns;   /* event thread: CPU and wall in acquire */
} disp_t;

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void disp_one(disp_t *d, void *t, uint64_t *next, uint64_t *x) {
  *next += MS;
  uint64_t now = bench_now_ns();
  if (*next < now) *next = now + MS;
  bench_sleep_until(*next);
  /* The CPU clock is read outside the wall clock's interval (it is a
   * system call): wait_ns brackets wait_cpu_ns, lat does not include it. */
  uint64_t w0 = bench_now_ns(), c0 = thread_cpu_ns(), t0 = bench_now_ns();
  d->ops->acquire_prio(t, BENCH_PRIO_BOOST);
  uint64_t t1 = bench_now_ns(), c1 = thread_cpu_ns(), w1 = bench_now_ns();
  d->lat[d->n] = (double)(t1 - t0);
  d->due[d->n++] = t1 > *next ? (double)(t1 - *next) : 0;
  d->wait_cpu_ns += c1 - c0;
  d->wait_ns += w1 - w0;
  *x = bench_spin(*x, bench_steps_per_us);
  d->ops->release(t);
}

static void *disp_events(void *arg) {
  disp_t *d = arg;
  void *t = d->ops->attach(d->g);
  uint64_t next = bench_now_ns(), x = 1;
  for (int ph; (ph = atomic_load(&d->phase)) != PH_DONE;) {
    if (ph == PH_EVENTS && d->n < d->cap) {
      disp_one(d, t, &next, &x);
    } else {
      bench_sleep_ns(100000);
      next = bench_now_ns();
    }
  }
  bench_sink(x);
  d->ops->detach(t);
  return NULL;
}

/* Run one phase of len_ns; add its hog units and time to acc[0], acc[1]. */
static void disp_phase(disp_t *d, bench_hog_t *hog, int phase, uint64_t len_ns, uint64_t acc[2]) {
  uint64_t t0 = bench_now_ns(), u0 = bench_hogs_units(hog, 1);
  atomic_store(&d->phase, phase);
  bench_sleep_ns(len_ns);
  atomic_store(&d->phase, PH_SOLO);
  acc[0] += bench_hogs_units(hog, 1) - u0;
  acc[1] += bench_now_ns() - t0;
}

void bench_case_dispatch(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  disp_t d = {.ops = ops, .g = ops->create()};
  d.cap = (size_t)(cfg->events_ns / MS) + 16;
  d.lat = bench_xcalloc(d.cap, sizeof *d.lat);
  d.due = bench_xcalloc(d.cap, sizeof *d.due);
  bench_floor_t fl;
  bench_floor_probe(&fl, cfg->quick);
  atomic_int stop = 0;
  uint64_t per_events = cfg->events_ns / DISP_ROUNDS, per_solo = cfg->solo_ns / DISP_ROUNDS;
  bench_hog_t hog = {.ops = ops, .g = d.g, .stop = &stop,
                     .deadline_ns = bench_now_ns() + 2 * (cfg->solo_ns + cfg->events_ns) + 2000 * MS};
  pthread_t hid, eid;
  if (pthread_create(&eid, NULL, disp_events, &d)) bench_die("pthread_create", 0);
  bench_hogs_start(&hog, 1, &hid);
  uint64_t solo[2] = {0, 0}, during[2] = {0, 0};
  for (int r = 0; r < DISP_ROUNDS; r++) {
    disp_phase(&d, &hog, PH_SOLO, per_solo, solo);
    disp_phase(&d, &hog, PH_EVENTS, per_events, during);
  }
  atomic_store(&d.phase, PH_DONE);
  pthread_join(eid, NULL);
  atomic_store(&stop, 1);
  bench_hogs_join(1, &hid);
  double rs = (double)solo[0] / (double)solo[1], rd = (double)during[0] / (double)during[1];
  bench_stats_t st;
  ops->stats(d.g, &st);
  bench_report_latency("dispatch_latency", ops->name, d.lat, d.n);
  double p50 = bench_percentile(d.lat, d.n, 50);
  bench_result("dispatch_latency", ops->name, "p50_x_floor", p50 / fl.wake_p50_ns);
  bench_result("dispatch_latency", ops->name, "floor_wake_us", fl.wake_p50_ns / 1000.0);
  bench_result("dispatch_latency", ops->name, "due_p50_us", bench_percentile(d.due, d.n, 50) / 1000.0);
  bench_result("dispatch_latency", ops->name, "due_p99_us", bench_percentile(d.due, d.n, 99) / 1000.0);
  if (bench_has_lock(ops))  /* nogvl does not wait: nothing to divide */
    bench_result("dispatch_latency", ops->name, "wait_cpu_pct",
                 d.wait_ns ? (double)d.wait_cpu_ns / (double)d.wait_ns * 100.0 : 0);
  bench_result("dispatch_latency", ops->name, "preemptions", (double)st.preemptions);
  bench_result("hog_throughput", ops->name, "pct", rs > 0 ? rd / rs * 100.0 : 0);
  free(d.lat);
  free(d.due);
  ops->destroy(d.g);
}

/* ---- fairness ---------------------------------------------------------------
 * Four CPU-bound threads; Jain's index over the work each got:
 * (sum x)^2 / (n * sum x^2), 1.0 = perfectly even. */

#define FAIR_N 4

void bench_case_fairness(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  void *g = ops->create();
  atomic_int stop = 0;
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, FAIR_N + 1);
  bench_hog_t h[FAIR_N];
  pthread_t tids[FAIR_N];
  for (int i = 0; i < FAIR_N; i++) {
    h[i] = (bench_hog_t){.ops = ops, .g = g, .start = &bar, .stop = &stop,
                         .deadline_ns = bench_now_ns() + cfg->fair_ns + 2000 * MS};
    if (pthread_create(&tids[i], NULL, bench_hog_main, &h[i])) bench_die("pthread_create", 0);
  }
  pthread_barrier_wait(&bar);
  bench_sleep_ns(cfg->fair_ns);
  double x[FAIR_N], sum = 0, sq = 0;
  for (int i = 0; i < FAIR_N; i++) {
    x[i] = (double)atomic_load(&h[i].units);
    sum += x[i];
    sq += x[i] * x[i];
  }
  atomic_store(&stop, 1);
  bench_hogs_join(FAIR_N, tids);
  double jain = sq > 0 ? sum * sum / (FAIR_N * sq) : 0;
  bench_stats_t st;
  ops->stats(g, &st);
  bench_result("fairness", ops->name, "jain", jain);
  bench_result("fairness", ops->name, "preemptions", (double)st.preemptions);
  pthread_barrier_destroy(&bar);
  ops->destroy(g);
}

/* ---- starvation ---------------------------------------------------------------
 * A flood thread takes the GVL boosted over and over (100 us of work each
 * time, no pause) next to one background CPU thread.  Reports the
 * background thread's share of the work done: with a starvation cap of C%
 * it should get at least (100 - C)%. */

typedef struct {
  const bench_gvl_ops_t *ops;
  void *g;
  pthread_barrier_t *bar;
  atomic_int *stop;
  atomic_uint_fast64_t units;
} flood_t;

static void *flood_main(void *arg) {
  flood_t *f = arg;
  void *t = f->ops->attach(f->g);
  pthread_barrier_wait(f->bar);
  uint64_t x = 7, n = 0;
  while (!atomic_load_explicit(f->stop, memory_order_relaxed)) {
    f->ops->acquire_prio(t, BENCH_PRIO_BOOST);
    for (int i = 0; i < 100; i++) {
      x = bench_spin(x, bench_steps_per_us);
      f->ops->check_ints(t);
      n++;
    }
    atomic_store_explicit(&f->units, n, memory_order_relaxed);
    f->ops->release(t);
  }
  bench_sink(x);
  f->ops->detach(t);
  return NULL;
}

void bench_case_starvation(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  void *g = ops->create();
  atomic_int stop = 0;
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, 3);
  bench_hog_t bg = {.ops = ops, .g = g, .start = &bar, .stop = &stop,
                    .deadline_ns = bench_now_ns() + cfg->fair_ns + 2000 * MS};
  flood_t fl = {.ops = ops, .g = g, .bar = &bar, .stop = &stop};
  pthread_t a, b;
  if (pthread_create(&a, NULL, bench_hog_main, &bg)) bench_die("pthread_create", 0);
  if (pthread_create(&b, NULL, flood_main, &fl)) bench_die("pthread_create", 0);
  pthread_barrier_wait(&bar);
  bench_sleep_ns(cfg->fair_ns);
  double ub = (double)atomic_load(&bg.units), uf = (double)atomic_load(&fl.units);
  atomic_store(&stop, 1);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  bench_result("starvation", ops->name, "bg_share_pct", ub + uf > 0 ? ub / (ub + uf) * 100 : 0);
  pthread_barrier_destroy(&bar);
  ops->destroy(g);
}

/* ---- convoy ---------------------------------------------------------------------
 * An I/O thread does short blocking round trips (write one byte, read the
 * echo, each in its own blocking region, ~1 us of work per reply) against
 * an echo served by a plain thread outside the GVL: alone, then beside 1
 * and 2 CPU hogs.  io_ratio = time per trip beside the hogs / alone;
 * hog_pct = the hogs' rate while the I/O thread runs / while they are
 * alone.
 * Beside hogs the I/O thread stops after convoy_cap_ns even if it has not
 * done all its trips (a 100 ms-per-trip design would take 1000 s);
 * trips_* says how many it did. */

static void *echo_main(void *arg) {
  int fd = *(int *)arg;
  char c;
  for (;;) {
    ssize_t r = read(fd, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (write(fd, &c, 1) != 1) break;
  }
  return NULL;
}

typedef struct {
  int fd;
} fd_arg_t;

static void *sock_write1(void *arg) {
  char c = 'x';
  ssize_t r;
  do r = write(((fd_arg_t *)arg)->fd, &c, 1); while (r < 0 && errno == EINTR);
  if (r != 1) bench_die("convoy write", errno);
  return NULL;
}

static void *sock_read1(void *arg) {
  char c;
  ssize_t r;
  do r = read(((fd_arg_t *)arg)->fd, &c, 1); while (r < 0 && errno == EINTR);
  if (r != 1) bench_die("convoy read", r < 0 ? errno : EPIPE);
  return NULL;
}

typedef struct {
  const bench_gvl_ops_t *ops;
  void *g;
  int fd;
  uint64_t trips, cap_ns;
  uint64_t done, elapsed_ns;   /* results */
} io_t;

static void *io_main(void *arg) {
  io_t *io = arg;
  void *t = io->ops->attach(io->g);
  fd_arg_t fa = {io->fd};
  uint64_t x = 3, t0 = bench_now_ns(), end = t0 + io->cap_ns, i;
  io->ops->acquire(t);
  for (i = 0; i < io->trips; i++) {
    io->ops->call_without(t, sock_write1, &fa);
    io->ops->call_without(t, sock_read1, &fa);
    x = bench_spin(x, bench_steps_per_us);
    io->ops->check_ints(t);
    if (bench_now_ns() > end) { i++; break; }
  }
  io->ops->release(t);
  io->elapsed_ns = bench_now_ns() - t0;
  io->done = i;
  bench_sink(x);
  io->ops->detach(t);
  return NULL;
}

static void run_io(io_t *io) {
  pthread_t tid;
  if (pthread_create(&tid, NULL, io_main, io)) bench_die("pthread_create", 0);
  pthread_join(tid, NULL);
}


/* The run is cut in CONVOY_CHUNKS chunks, each doing its share of every
 * phase (alone, beside 1 hog, beside 2 hogs), so a change in the machine's
 * load lands on all of them alike. */
#define CONVOY_CHUNKS 4

typedef struct {
  uint64_t solo_u, solo_ns;  /* hog units and time, hogs alone        */
  uint64_t busy_u, busy_ns;  /* the same while the I/O thread runs    */
  uint64_t trips, io_ns;     /* I/O thread's trips and time           */
  /* The kernel's account of the hogs (bench_hogs_sched): CPU time alone
   * and beside the I/O thread, and time runnable but not running beside
   * it; sched_bad once any chunk could not read it. */
  uint64_t solo_run, busy_run, busy_wait;
  int sched_bad;
} convoy_acc_t;

/* One chunk beside nhogs hogs: the hogs alone for a while, then the I/O
 * thread for its share of the trips and of the time cap. */
static void convoy_chunk(const bench_gvl_ops_t *ops, void *g, int fd, const bench_cfg_t *cfg,
                         int nhogs, convoy_acc_t *acc) {
  atomic_int stop = 0;
  bench_hog_t h[2];
  pthread_t tids[2];
  uint64_t deadline = bench_now_ns() + cfg->convoy_solo_ns + cfg->convoy_cap_ns + 2000 * MS;
  for (int i = 0; i < nhogs; i++)
    h[i] = (bench_hog_t){.ops = ops, .g = g, .stop = &stop, .deadline_ns = deadline};
  bench_hogs_start(h, nhogs, tids);
  uint64_t r[3], w[3];
  int ok = bench_hogs_sched(h, tids, nhogs, &r[0], &w[0]);
  uint64_t t0 = bench_now_ns(), u0 = bench_hogs_units(h, nhogs);
  bench_sleep_ns(cfg->convoy_solo_ns / CONVOY_CHUNKS);
  uint64_t t1 = bench_now_ns(), u1 = bench_hogs_units(h, nhogs);
  ok &= bench_hogs_sched(h, tids, nhogs, &r[1], &w[1]);
  io_t io = {ops, g, fd, cfg->trips / CONVOY_CHUNKS, cfg->convoy_cap_ns / CONVOY_CHUNKS, 0, 0};
  run_io(&io);
  uint64_t t2 = bench_now_ns(), u2 = bench_hogs_units(h, nhogs);
  ok &= bench_hogs_sched(h, tids, nhogs, &r[2], &w[2]);
  atomic_store(&stop, 1);
  bench_hogs_join(nhogs, tids);
  if (ok) {
    acc->solo_run += r[1] - r[0];
    acc->busy_run += r[2] - r[1];
    acc->busy_wait += w[2] - w[1];
  } else {
    acc->sched_bad = 1;
  }
  acc->solo_u += u1 - u0;
  acc->solo_ns += t1 - t0;
  acc->busy_u += u2 - u1;
  acc->busy_ns += t2 - t1;
  acc->trips += io.done;
  acc->io_ns += io.elapsed_ns;
}

static double acc_trip_ns(const convoy_acc_t *a) {
  return a->trips ? (double)a->io_ns / (double)a->trips : 0;
}

static double acc_hog_pct(const convoy_acc_t *a) {
  double solo = (double)a->solo_u / (double)a->solo_ns, busy = (double)a->busy_u / (double)a->busy_ns;
  return solo > 0 ? busy / solo * 100 : 0;
}

/* Where the hogs' rate went beside the I/O thread: hog_pct = cpu_pct *
 * eff_pct / 100, where cpu_pct is the hogs' CPU time per wall time beside
 * it against alone, and eff_pct their work per CPU time against alone (the
 * rest of their CPU time went to the lock: spins, handoffs, wake-ups);
 * rqwait_pct is the time they were runnable while the kernel ran another
 * thread on their CPU, per wall time. */
static void report_hog_sched(const char *variant, const char *n, const convoy_acc_t *a) {
  char m[32];
  if (a->sched_bad || !a->busy_ns || !a->solo_ns || !a->busy_run || !a->solo_run) return;
  double share_b = (double)a->busy_run / (double)a->busy_ns;
  double share_s = (double)a->solo_run / (double)a->solo_ns;
  snprintf(m, sizeof m, "hog_cpu_pct_%s", n);
  bench_result("convoy", variant, m, share_b / share_s * 100);
  snprintf(m, sizeof m, "hog_rqwait_pct_%s", n);
  bench_result("convoy", variant, m, (double)a->busy_wait / (double)a->busy_ns * 100);
  double solo = (double)a->solo_u / (double)a->solo_run, busy = (double)a->busy_u / (double)a->busy_run;
  snprintf(m, sizeof m, "hog_eff_pct_%s", n);
  bench_result("convoy", variant, m, solo > 0 ? busy / solo * 100 : 0);
}

void bench_case_convoy(const bench_gvl_ops_t *ops, const bench_cfg_t *cfg) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) bench_die("socketpair", errno);
  pthread_t echo;
  if (pthread_create(&echo, NULL, echo_main, &sv[1])) bench_die("pthread_create", 0);
  bench_floor_t fl;
  bench_floor_probe(&fl, cfg->quick);
  void *g = ops->create();
  convoy_acc_t alone = {0}, one = {0}, two = {0};
  for (int c = 0; c < CONVOY_CHUNKS; c++) {
    io_t io = {ops, g, sv[0], cfg->trips / CONVOY_CHUNKS, 20 * cfg->convoy_cap_ns, 0, 0};
    run_io(&io);
    alone.trips += io.done;
    alone.io_ns += io.elapsed_ns;
    convoy_chunk(ops, g, sv[0], cfg, 1, &one);
    convoy_chunk(ops, g, sv[0], cfg, 2, &two);
  }
  double a = acc_trip_ns(&alone);
  bench_result("convoy", ops->name, "io_ratio_1hog", a > 0 ? acc_trip_ns(&one) / a : 0);
  bench_result("convoy", ops->name, "hog_pct_1hog", acc_hog_pct(&one));
  bench_result("convoy", ops->name, "io_ratio_2hog", a > 0 ? acc_trip_ns(&two) / a : 0);
  bench_result("convoy", ops->name, "hog_pct_2hog", acc_hog_pct(&two));
  report_hog_sched(ops->name, "1hog", &one);
  report_hog_sched(ops->name, "2hog", &two);
  bench_result("convoy", ops->name, "io_us_alone", a / 1000.0);
  bench_result("convoy", ops->name, "extra_x_floor_1hog",
               a > 0 ? (acc_trip_ns(&one) - a) / fl.handoff_ns : 0);
  bench_result("convoy", ops->name, "extra_x_floor_2hog",
               a > 0 ? (acc_trip_ns(&two) - a) / fl.handoff_ns : 0);
  bench_result("convoy", ops->name, "trips_1hog", (double)one.trips);
  bench_result("convoy", ops->name, "trips_2hog", (double)two.trips);
  bench_stats_t st = {0};
  ops->stats(g, &st);
  if (st.ia_cost_ns) bench_result("convoy", ops->name, "ia_cost_us", (double)st.ia_cost_ns / 1000.0);
  ops->destroy(g);
  shutdown(sv[0], SHUT_RDWR);
  pthread_join(echo, NULL);
  close(sv[0]);
  close(sv[1]);
}

void bench_meta_sched(void) {
  bench_meta("wakeup", "p50_us", "us", "low", "thread sleeping 10 ms in a blocking region beside a hog: end of sleep to running");
  bench_meta("wakeup", "p99_us", "us", "low", "as p50_us, 99th percentile");
  bench_meta("wakeup", "max_us", "us", "low", "as p50_us, worst");
  bench_meta("wakeup", "samples", "count", "none", "wake-ups measured");
  bench_meta("dispatch_latency", "p50_us", "us", "low", "boosted acquire at 1 kHz beside a hog (target p50 <= 10)");
  bench_meta("dispatch_latency", "p99_us", "us", "low", "as p50_us, 99th percentile (target <= 50)");
  bench_meta("dispatch_latency", "max_us", "us", "low", "as p50_us, worst");
  bench_meta("dispatch_latency", "p50_x_floor", "x", "low", "p50_us / the floor's wake-up of a parked thread (median, floor_wake_us), same run (target <= 2)");
  bench_meta("dispatch_latency", "floor_wake_us", "us", "none", "the floor's futex wake-up (median) measured at the start of this run");
  bench_meta("dispatch_latency", "due_p50_us", "us", "low", "event's due time (end of its 1 ms sleep) to holding the GVL: includes the OS's wake-up of the event thread");
  bench_meta("dispatch_latency", "due_p99_us", "us", "low", "as due_p50_us, 99th percentile (loaded rows: target <= 3x nogvl's)");
  bench_meta("dispatch_latency", "wait_cpu_pct", "%", "low", "event thread's CPU time inside the boosted acquire / wall time inside it");
  bench_meta("dispatch_latency", "samples", "count", "none", "events measured");
  bench_meta("dispatch_latency", "preemptions", "count", "none", "safe points that gave the lock up");
  bench_meta("hog_throughput", "pct", "%", "high", "hog's rate during the 1 kHz events vs alone (target >= 97)");
  bench_meta("fairness", "jain", "index", "high", "Jain index of 4 CPU threads' work (target >= 0.99)");
  bench_meta("fairness", "preemptions", "count", "none", "safe points that gave the lock up");
  bench_meta("starvation", "bg_share_pct", "%", "high", "background thread's share beside a boosted flood (target >= 100 - cap)");
  bench_meta("convoy", "io_ratio_1hog", "x", "low", "I/O round-trip time beside 1 hog / alone (target <= 1.5)");
  bench_meta("convoy", "hog_pct_1hog", "%", "high", "hog rate while the I/O thread runs / before (target >= 90)");
  bench_meta("convoy", "io_ratio_2hog", "x", "low", "I/O round-trip time beside 2 hogs / alone");
  bench_meta("convoy", "hog_pct_2hog", "%", "high", "2 hogs' rate while the I/O thread runs / before");
  bench_meta("convoy", "hog_cpu_pct_1hog", "%", "none", "the hog's CPU time per wall time while the I/O thread runs / before (hog_pct = hog_cpu_pct * hog_eff_pct / 100)");
  bench_meta("convoy", "hog_rqwait_pct_1hog", "%", "none", "the hog's time runnable but not running, the kernel running another thread on its CPU (schedstat), while the I/O thread runs / that time");
  bench_meta("convoy", "hog_eff_pct_1hog", "%", "none", "the hog's work per CPU time while the I/O thread runs / before: the rest of its CPU time went to the lock (spins, handoffs, wake-ups)");
  bench_meta("convoy", "hog_cpu_pct_2hog", "%", "none", "as hog_cpu_pct_1hog, the 2 hogs together");
  bench_meta("convoy", "hog_rqwait_pct_2hog", "%", "none", "as hog_rqwait_pct_1hog, the 2 hogs together");
  bench_meta("convoy", "hog_eff_pct_2hog", "%", "none", "as hog_eff_pct_1hog, the 2 hogs together");
  bench_meta("convoy", "io_us_alone", "us", "low", "I/O round trip alone");
  bench_meta("convoy", "extra_x_floor_1hog", "x", "low", "extra time per round trip beside 1 hog (vs alone) in the floor's fastest handoffs, same run");
  bench_meta("convoy", "extra_x_floor_2hog", "x", "low", "as extra_x_floor_1hog, beside 2 hogs");
  bench_meta("convoy", "trips_1hog", "count", "none", "round trips done beside 1 hog (capped by time)");
  bench_meta("convoy", "trips_2hog", "count", "none", "round trips done beside 2 hogs (capped by time)");
  bench_meta("convoy", "ia_cost_us", "us", "none", "libgvl's estimate of what one interactive preemption costs the hog (gvl_stats ia_cost_ns), at the end");
}
