/* SPDX-License-Identifier: MIT */
/*
 * loop_latency -- an event to the start of the host callback it triggers,
 * while a hog thread holds the GVL (a safe point every ~1 us of work).
 *
 *   loop_latency [--quick] [--runs N] [--only a,b]
 *
 * Events:
 *   timer  a repeating 2 ms timer.  t0: libuv reports it due (evloop's
 *          on_ready hook, inside uv_run); t1: the host callback starts.
 *   pipe   a thread outside the GVL writes one byte to a pipe every 1-3 ms.
 *          t0: just before write(2); t1: the host callback of the fd watch
 *          starts.  This includes the kernel's wake-up of the loop thread.
 * Variants, all in this run:
 *   gvloop               evloop, callbacks under the GVL with the boost
 *   gvloop-noboost       evloop at normal priority (the GVL's interactivity
 *                        policy still promotes a thread that mostly waits)
 *   gvloop-noboost-noia  normal priority, interactivity policy off: waits
 *                        for the hog's time slice
 *   nohog                evloop with the boost and no hog: the floor
 *   nogvl                evloop with the boost beside a CPU-bound thread
 *                        that never takes the GVL: what the OS scheduler
 *                        alone costs (the reference on a loaded machine)
 *   cond-timer, cpython  the bench suite's baseline GVLs (Ruby 1.9.3-3.x,
 *                        CPython 3.2+): a libuv thread waits outside the
 *                        lock and, in the libuv callback, acquires it as
 *                        those runtimes' event threads do.
 *   gvloop-rt            gvloop with the loop thread in SCHED_FIFO
 *                        (cfg.sched_policy) on a GVL created with
 *                        GVL_F_LEND: the boost lends the hog SCHED_FIFO
 *                        until its safe point (skipped where SCHED_FIFO
 *                        is refused)
 *   nogvl-rt             nogvl with the loop thread in SCHED_FIFO: the
 *                        reference for gvloop-rt
 * A scheduling hint to try (off by default):
 *   LOOP_LATENCY_HOG_NICE=N    the GVL hog at nice N
 * Output: RESULT loop_latency_timer|loop_latency_pipe <variant>
 *         p50_us|p99_us|max_us|samples <v>
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uv.h>

#include "bench.h"
#include "evloop.h"

#define MAX_SAMPLES 20000

typedef struct {
  double v[MAX_SAMPLES];
  size_t n;
} samples_t;

static samples_t s_timer, s_pipe;       /* written by the event thread only */
static atomic_int stop_flag;
static atomic_uint_fast64_t pipe_t0;   /* 0: no byte in flight             */
static atomic_uint_fast64_t timer_ready;
static evl_id_t timer_id;
static int pfd[2];
static uint64_t run_ns = 3000000000ull;

static void add(samples_t *s, uint64_t t0, uint64_t t1) {
  if (s->n < MAX_SAMPLES && t1 >= t0) s->v[s->n++] = (double)(t1 - t0) / 1e3;
}

/* ---- pipe writer (no GVL) --------------------------------------------------- */

static void *writer_main(void *arg) {
  unsigned seed = 12345;
  (void)arg;
  while (!atomic_load(&stop_flag)) {
    bench_sleep_ns(1000000ull + (rand_r(&seed) % 2000) * 1000ull);
    if (atomic_load(&pipe_t0) != 0) continue;   /* previous not consumed */
    atomic_store(&pipe_t0, bench_now_ns());
    if (write(pfd[1], "x", 1) != 1) bench_die("write", errno);
  }
  return NULL;
}

static void pipe_consume(void) {
  char c;
  uint64_t t1 = bench_now_ns(), t0 = atomic_load(&pipe_t0);
  if (read(pfd[0], &c, 1) == 1 && t0 != 0) {
    add(&s_pipe, t0, t1);
    atomic_store(&pipe_t0, 0);
  }
}

/* Empty the pipe between variants (a byte may be left in flight). */
static void drain_pipe(void) {
  char buf[64];
  int fl = fcntl(pfd[0], F_GETFL);
  fcntl(pfd[0], F_SETFL, fl | O_NONBLOCK);
  while (read(pfd[0], buf, sizeof buf) > 0) {
  }
  fcntl(pfd[0], F_SETFL, fl);
}

/* The calling thread at nice `n` (Linux: per thread, by thread id). */
static void nice_self(int n) {
  if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), n) != 0) perror("setpriority");
}

/* ---- hogs --------------------------------------------------------------------- */

static void *gvl_hog_main(void *arg) {
  const char *hn = getenv("LOOP_LATENCY_HOG_NICE");
  if (hn != NULL) nice_self(atoi(hn));
  gvl_thread_t *t = gvl_thread_attach(arg, GVL_PRIO_NORMAL);
  uint64_t x = 1;
  if (t == NULL || gvl_acquire(t) != 0) bench_die("hog attach", errno);
  while (!atomic_load(&stop_flag)) {
    x = bench_spin(x, bench_steps_per_us);
    gvl_check_ints(t);
  }
  bench_sink(x);
  gvl_release(t);
  gvl_thread_detach(t);
  return NULL;
}

typedef struct {
  const bench_gvl_ops_t *ops;
  void *g;
} base_t;

static void *base_hog_main(void *arg) {
  base_t *b = arg;
  void *t = b->ops->attach(b->g);
  uint64_t x = 1;
  b->ops->acquire(t);
  while (!atomic_load(&stop_flag)) {
    x = bench_spin(x, bench_steps_per_us);
    b->ops->check_ints(t);
  }
  bench_sink(x);
  b->ops->release(t);
  b->ops->detach(t);
  return NULL;
}

/* A CPU-bound thread outside the GVL (the nogvl variant). */
static void *plain_hog_main(void *arg) {
  uint64_t x = 1;
  (void)arg;
  while (!atomic_load(&stop_flag)) x = bench_spin(x, bench_steps_per_us);
  bench_sink(x);
  return NULL;
}

/* ---- evloop variants ------------------------------------------------------------ */

static void on_ready(evl_t *l, evl_id_t id, void *arg) {
  uint64_t zero = 0;
  (void)l;
  (void)arg;
  /* First report since the last callback: merged ticks keep the oldest. */
  if (id == timer_id)
    atomic_compare_exchange_strong(&timer_ready, &zero, bench_now_ns());
}

static void timer_cb(evl_t *l, void *arg, int status) {
  uint64_t t1 = bench_now_ns(), t0 = atomic_exchange(&timer_ready, 0);
  (void)l;
  (void)arg;
  if (status == 0 && t0 != 0) add(&s_timer, t0, t1);
}

static void pipe_cb(evl_t *l, void *arg, int status, unsigned ev) {
  (void)l;
  (void)arg;
  if (status == 0 && (ev & EVL_READABLE)) pipe_consume();
}

/* With LOOP_LATENCY_STATS set: the GVL's counters for the run (stderr). */
static void print_gvl_stats(gvl_t *g) {
  gvl_stats_t st;
  if (gvl_stats(g, &st) != 0) return;
  fprintf(stderr,
          "  gvl: acquires %llu contended %llu handoffs %llu preempt_reqs %llu "
          "preemptions %llu boosts %llu refused %llu interactive %llu lends %llu\n",
          (unsigned long long)st.acquires, (unsigned long long)st.contended,
          (unsigned long long)st.handoffs, (unsigned long long)st.preempt_reqs,
          (unsigned long long)st.preemptions, (unsigned long long)st.boosts,
          (unsigned long long)st.boosts_refused, (unsigned long long)st.interactive,
          (unsigned long long)st.lends);
}

/* hog: 0 none, 1 a GVL hog, 2 a CPU-bound thread that takes no GVL.
 * rt: the loop thread in SCHED_FIFO (cfg.sched_policy) on a GVL that
 * lends (GVL_F_LEND).  Returns 0, or EPERM where SCHED_FIFO is refused. */
static int run_evloop(int prio, unsigned gvl_flags, int hog, int rt) {
  gvl_config_t gc = {0};
  evl_config_t ec = {0};
  gvl_t *g;
  evl_t *l;
  pthread_t hog_th, wr_th;
  gc.flags = gvl_flags | (rt ? GVL_F_LEND : 0);
  g = gvl_create(&gc);
  if (g == NULL) bench_die("gvl_create", errno);
  ec.prio = prio;
  ec.on_ready = on_ready;
  if (rt) {
    ec.sched_policy = EVL_SCHED_FIFO;
    ec.sched_priority = 1;
  }
  l = evl_start(g, &ec);
  if (l == NULL && rt && errno == EPERM) {
    gvl_destroy(g);
    return EPERM;
  }
  if (l == NULL) bench_die("evl_start", errno);
  atomic_store(&stop_flag, 0);
  atomic_store(&pipe_t0, 0);
  atomic_store(&timer_ready, 0);
  if (hog) pthread_create(&hog_th, NULL, hog == 2 ? plain_hog_main : gvl_hog_main, g);
  bench_sleep_ns(20000000);  /* the hog is running */
  /* timer_id is read by on_ready on the loop thread: the id is stored
   * before the timer can fire. */
  if (evl_timer(l, 2, 2, 0, timer_cb, NULL, &timer_id) != 0 ||
      evl_fd_watch(l, pfd[0], EVL_READABLE, 0, pipe_cb, NULL, NULL) != 0)
    bench_die("register", EINVAL);
  pthread_create(&wr_th, NULL, writer_main, NULL);
  bench_sleep_ns(run_ns);
  atomic_store(&stop_flag, 1);
  pthread_join(wr_th, NULL);
  if (hog) pthread_join(hog_th, NULL);
  evl_destroy(l);
  if (getenv("LOOP_LATENCY_STATS") != NULL) print_gvl_stats(g);
  gvl_destroy(g);
  drain_pipe();
  return 0;
}

/* ---- baseline variants: a plain libuv thread acquiring the baseline GVL --------- */

typedef struct {
  base_t *b;
  void *t;
  uv_loop_t loop;
  uv_timer_t timer;
  uv_poll_t poll;
  uv_async_t stop;
} base_loop_t;

static void base_timer_cb(uv_timer_t *h) {
  base_loop_t *bl = h->data;
  uint64_t t0 = bench_now_ns();
  bl->b->ops->acquire_prio(bl->t, BENCH_PRIO_BOOST);
  add(&s_timer, t0, bench_now_ns());
  bl->b->ops->release(bl->t);
}

static void base_poll_cb(uv_poll_t *h, int status, int events) {
  base_loop_t *bl = h->data;
  (void)events;
  if (status < 0) return;
  bl->b->ops->acquire_prio(bl->t, BENCH_PRIO_BOOST);
  pipe_consume();
  bl->b->ops->release(bl->t);
}

static void base_close(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void base_stop_cb(uv_async_t *h) {
  uv_walk(h->loop, base_close, NULL);
}

static void *base_loop_main(void *arg) {
  base_loop_t *bl = arg;
  bl->t = bl->b->ops->attach(bl->b->g);
  uv_timer_init(&bl->loop, &bl->timer);
  bl->timer.data = bl;
  uv_timer_start(&bl->timer, base_timer_cb, 2, 2);
  uv_poll_init(&bl->loop, &bl->poll, pfd[0]);
  bl->poll.data = bl;
  uv_poll_start(&bl->poll, UV_READABLE, base_poll_cb);
  uv_run(&bl->loop, UV_RUN_DEFAULT);
  uv_loop_close(&bl->loop);
  bl->b->ops->detach(bl->t);
  return NULL;
}

static void run_baseline(const bench_gvl_ops_t *ops) {
  base_t b = {ops, NULL};
  static base_loop_t bl;
  pthread_t hog_th, wr_th, loop_th;
  b.g = ops->create();
  memset(&bl, 0, sizeof bl);
  bl.b = &b;
  uv_loop_init(&bl.loop);
  uv_async_init(&bl.loop, &bl.stop, base_stop_cb);
  atomic_store(&stop_flag, 0);
  atomic_store(&pipe_t0, 0);
  pthread_create(&hog_th, NULL, base_hog_main, &b);
  bench_sleep_ns(20000000);
  pthread_create(&loop_th, NULL, base_loop_main, &bl);
  pthread_create(&wr_th, NULL, writer_main, NULL);
  bench_sleep_ns(run_ns);
  atomic_store(&stop_flag, 1);
  pthread_join(wr_th, NULL);
  pthread_join(hog_th, NULL);
  uv_async_send(&bl.stop);
  pthread_join(loop_th, NULL);
  ops->destroy(b.g);
  drain_pipe();
}

/* ---- report ------------------------------------------------------------------------ */

static void report_one(const char *bench, const char *variant, samples_t *s) {
  double p50 = bench_percentile(s->v, s->n, 50);
  double p99 = bench_percentile(s->v, s->n, 99);
  double mx = bench_percentile(s->v, s->n, 100);
  printf("%-20s %-22s p50 %9.1f us  p99 %9.1f us  max %9.1f us  (%zu samples)\n",
         bench, variant, p50, p99, mx, s->n);
  bench_result(bench, variant, "p50_us", p50);
  bench_result(bench, variant, "p99_us", p99);
  bench_result(bench, variant, "max_us", mx);
  bench_result(bench, variant, "samples", (double)s->n);
}

static void report(const char *variant) {
  report_one("loop_latency_timer", variant, &s_timer);
  report_one("loop_latency_pipe", variant, &s_pipe);
  s_timer.n = s_pipe.n = 0;
  fflush(stdout);
}

/* The rt variants, or a line saying why not. */
static void run_rt(const char *variant, int hog, int runs) {
  for (int r = 0; r < runs; r++) {
    if (run_evloop(EVL_PRIO_BOOST, 0, hog, 1) == EPERM) {
      printf("loop_latency: %s skipped: SCHED_FIFO is not permitted here\n",
             variant);
      return;
    }
  }
  report(variant);
}

int main(int argc, char **argv) {
  int runs = 1, i, r;
  const char *only = NULL;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) run_ns = 500000000ull;
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--quick] [--runs N] [--only a,b]\n", argv[0]);
      return 2;
    }
  }
  if (runs < 1) runs = 1;
  if (pipe(pfd) != 0) bench_die("pipe", errno);
  bench_calibrate();
  bench_meta("loop_latency_timer", "p99_us", "us", "lower",
             "timer due (libuv) -> host callback start, hog holding the GVL");
  bench_meta("loop_latency_pipe", "p99_us", "us", "lower",
             "pipe write -> host callback start, hog holding the GVL");
  bench_chart("loop_latency_pipe", "p99_us");
  {
    double la[1] = {0};
    getloadavg(la, 1);
    /* On a shared machine the tails follow the OS scheduler: say how busy
     * it was. */
    printf("loop_latency: %d run(s) of %.1f s per variant, %u spin steps/us, "
           "load average %.2f on %ld CPUs\n", runs, (double)run_ns / 1e9,
           bench_steps_per_us, la[0], sysconf(_SC_NPROCESSORS_ONLN));
    bench_result("loop_latency", "machine", "loadavg", la[0]);
  }
  /* Samples of all runs are pooled per variant. */
  if (bench_wanted(only, "gvloop")) {
    for (r = 0; r < runs; r++) run_evloop(EVL_PRIO_BOOST, 0, 1, 0);
    report("gvloop");
  }
  if (bench_wanted(only, "gvloop-noboost")) {
    for (r = 0; r < runs; r++) run_evloop(EVL_PRIO_NORMAL, 0, 1, 0);
    report("gvloop-noboost");
  }
  if (bench_wanted(only, "gvloop-noboost-noia")) {
    for (r = 0; r < runs; r++) run_evloop(EVL_PRIO_NORMAL, GVL_F_NOINTERACTIVE, 1, 0);
    report("gvloop-noboost-noia");
  }
  if (bench_wanted(only, "nohog")) {
    for (r = 0; r < runs; r++) run_evloop(EVL_PRIO_BOOST, 0, 0, 0);
    report("nohog");
  }
  if (bench_wanted(only, "nogvl")) {
    for (r = 0; r < runs; r++) run_evloop(EVL_PRIO_BOOST, 0, 2, 0);
    report("nogvl");
  }
  if (bench_wanted(only, "gvloop-rt")) run_rt("gvloop-rt", 1, runs);
  if (bench_wanted(only, "nogvl-rt")) run_rt("nogvl-rt", 2, runs);
  if (bench_wanted(only, "cond-timer")) {
    for (r = 0; r < runs; r++) run_baseline(&bench_cond_timer_ops);
    report("cond-timer");
  }
  if (bench_wanted(only, "cpython")) {
    for (r = 0; r < runs; r++) run_baseline(&bench_cpython_ops);
    report("cpython");
  }
  return 0;
}
