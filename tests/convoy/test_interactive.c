/* SPDX-License-Identifier: MIT */
/*
 * The interactivity policy (convoy effect): a thread that comes back from a
 * short blocking region after a short stretch of GVL use is served ahead of
 * CPU-bound waiters; one that computes for long between blocking calls is
 * not; and the promotion is charged to the boost cap.
 */
#include "tgvl.h"

#include <stdbool.h>
#include <sys/socket.h>

static gvl_t *g;
static int pipefd[2];
static atomic_uint ready_waiters, in_read;
static atomic_int order[2], norder;

static void count_ready(void *arg, gvl_thread_t *t, gvl_event_t ev,
                        uint64_t now) {
  (void)arg; (void)t; (void)now;
  if (ev == GVL_EV_READY) atomic_fetch_add(&ready_waiters, 1);
}

static void *noop(void *arg) { return arg; }

/* Work (a stretch that holds the GVL) for ns of wall time. */
static void busy_ns(uint64_t ns) {
  uint64_t end = gvl_now_ns() + ns;
  while (gvl_now_ns() < end) tgvl_work(10);
}

static void *read_pipe(void *arg) {
  char c;
  (void)arg;
  atomic_store(&in_read, 1);
  CHECK_EQ(read(pipefd[0], &c, 1), 1);
  return NULL;
}

/* I/O-bound: a short hold, then a blocking read, then record its turn. */
static void *io_thread(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  gvl_call_without(t, noop, NULL, NULL, NULL);   /* starts the hold clock */
  gvl_call_without(t, read_pipe, NULL, NULL, NULL);
  order[atomic_fetch_add(&norder, 1)] = 1;
  *(gvl_stats_t *)arg = tgvl_tstats(t);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* CPU-bound waiter: queued before the I/O thread comes back. */
static void *cpu_thread(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  order[atomic_fetch_add(&norder, 1)] = 2;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* Returns which thread got the GVL first after the holder let go. */
static int run_order(unsigned flags, gvl_stats_t *io_stats) {
  gvl_config_t c = tgvl_strict_config(TGVL_HOUR_NS, NULL);
  pthread_t io, cpu;
  c.flags = flags;
  c.hook = count_ready;
  atomic_store(&ready_waiters, 0);
  atomic_store(&in_read, 0);
  atomic_store(&norder, 0);
  CHECK_OK(pipe(pipefd));
  CHECK(g = gvl_create(&c));
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(me);
  tgvl_spawn(&io, io_thread, io_stats);
  while (!atomic_load(&in_read)) tgvl_sleep_us(100); /* blocked in read */
  CHECK_OK(gvl_acquire(me));
  tgvl_spawn(&cpu, cpu_thread, NULL);
  tgvl_wait_ge(&ready_waiters, 1);   /* the CPU thread queued first */
  CHECK_EQ(write(pipefd[1], "x", 1), 1);
  tgvl_wait_ge(&ready_waiters, 2);   /* then the I/O thread */
  CHECK_OK(gvl_release(me));
  tgvl_join(io);
  tgvl_join(cpu);
  CHECK_EQ(atomic_load(&norder), 2);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
  close(pipefd[0]);
  close(pipefd[1]);
  return order[0];
}

static void test_io_thread_goes_first(void) {
  gvl_stats_t s;
  CHECK_EQ(run_order(0, &s), 1);
  CHECK_EQ(s.interactive, 1);
  /* With the policy off, plain FIFO: the CPU thread queued first. */
  CHECK_EQ(run_order(GVL_F_NOINTERACTIVE, &s), 2);
  CHECK_EQ(s.interactive, 0);
}

/* Computing for longer than a tenth of a slice between blocking calls is
 * CPU-bound behaviour: never promoted. */
static void test_heavy_compute_not_interactive(void) {
  gvl_config_t c = tgvl_strict_config(10000000, NULL);   /* 10 ms slice */
  c.flags = 0;
  CHECK(g = gvl_create(&c));
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  for (int i = 0; i < 20; i++) {
    busy_ns(2000000);                                  /* 2 ms of work */
    gvl_call_without(t, noop, NULL, NULL, NULL);
  }
  CHECK_EQ(tgvl_tstats(t).interactive, 0);
  /* The same thread with short stretches is promoted (a stretch that the
   * scheduler stretched past a tenth of a slice is not: try until one is
   * short). */
  for (int i = 0; i < 10000 && tgvl_tstats(t).interactive == 0; i++)
    gvl_call_without(t, noop, NULL, NULL, NULL);
  CHECK_GT(tgvl_tstats(t).interactive, 0);
  CHECK_OK(gvl_thread_set_interactive(t, 0));
  uint64_t before = tgvl_tstats(t).interactive;
  for (int i = 0; i < 20; i++) gvl_call_without(t, noop, NULL, NULL, NULL);
  CHECK_EQ(tgvl_tstats(t).interactive, before);
  CHECK_EQ(gvl_thread_set_interactive(t, 2), EINVAL);
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(gvl_destroy(g));
}

/* The stretch rule's edges, with a 100 ms slice (a tenth: 10 ms).  A noop
 * call is followed at once by the next, so that stretch is short; the
 * test knows it was (a loaded machine may stretch it) only if the time
 * from before the first call to after the second was under 10 ms, which
 * bounds the stretch the library saw; otherwise the round is tried again.
 * A stretch of 15 ms of work is long whatever the machine does. */
#define IA_TENTH_NS 10000000ull

static uint64_t ia_count(gvl_thread_t *t) { return tgvl_tstats(t).interactive; }

/* Two calls in a row (a short stretch between them); false if the
 * machine may have made it long. */
static bool short_stretch(gvl_thread_t *t) {
  uint64_t t0 = gvl_now_ns();
  gvl_call_without(t, noop, NULL, NULL, NULL);
  gvl_call_without(t, noop, NULL, NULL, NULL);
  return gvl_now_ns() - t0 < IA_TENTH_NS;
}

static gvl_thread_t *ia_setup(void) {
  gvl_config_t c = tgvl_strict_config(10 * IA_TENTH_NS, NULL);
  c.flags = 0;
  CHECK(g = gvl_create(&c));
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  return t;
}

static void ia_teardown(gvl_thread_t *t) {
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(gvl_destroy(g));
}

/* One long stretch after a short one keeps the promotion (the OS may have
 * taken the CPU away for a moment); two in a row end it. */
static void test_one_long_stretch_keeps_promotion(void) {
  gvl_thread_t *t = ia_setup();
  for (int rounds = 0;; rounds++) {
    CHECK(rounds < 100);
    busy_ns(15000000);
    gvl_call_without(t, noop, NULL, NULL, NULL);   /* after a long stretch */
    busy_ns(15000000);
    uint64_t n0 = ia_count(t);
    gvl_call_without(t, noop, NULL, NULL, NULL);   /* two long in a row */
    CHECK_EQ(ia_count(t), n0);
    if (!short_stretch(t)) continue;
    busy_ns(15000000);
    uint64_t n1 = ia_count(t);
    gvl_call_without(t, noop, NULL, NULL, NULL);   /* long after short */
    CHECK_EQ(ia_count(t), n1 + 1);
    busy_ns(15000000);
    gvl_call_without(t, noop, NULL, NULL, NULL);   /* and long again */
    CHECK_EQ(ia_count(t), n1 + 1);
    break;
  }
  ia_teardown(t);
}

/* A stretch ends at gvl_release: the first call after a gvl_acquire is
 * never promoted, however soon it comes. */
static void test_first_call_after_acquire(void) {
  gvl_thread_t *t = ia_setup();
  for (int rounds = 0;; rounds++) {
    CHECK(rounds < 100);
    uint64_t t0 = gvl_now_ns();
    gvl_call_without(t, noop, NULL, NULL, NULL);
    CHECK_OK(gvl_release(t));
    CHECK_OK(gvl_acquire(t));
    uint64_t n0 = ia_count(t);
    gvl_call_without(t, noop, NULL, NULL, NULL);
    CHECK_EQ(ia_count(t), n0);
    if (gvl_now_ns() - t0 >= IA_TENTH_NS) continue;  /* proved nothing */
    /* The rule itself still promotes such a short stretch. */
    if (short_stretch(t) && ia_count(t) > n0) break;
  }
  ia_teardown(t);
}

/* An "interactive" thread that holds for most of the time is stopped by
 * the cap: its promotions are refused and the hog keeps its share. */
static atomic_int stop_hog;
static atomic_ulong hog_iters;

/* A blocking call that lasts until the hog has run: it took the GVL, so
 * the return cannot take it back (see gvl_call_without). */
static void *until_hog_runs(void *arg) {
  unsigned long n0 = atomic_load(&hog_iters);
  while (atomic_load(&hog_iters) == n0) tgvl_sleep_us(50);
  return arg;
}
static void *hog(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  while (!atomic_load(&stop_hog)) {
    tgvl_work(1);
    atomic_fetch_add(&hog_iters, 1);
    gvl_check_ints(t);
  }
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void test_cap_bounds_interactive(void) {
  gvl_config_t c = tgvl_strict_config(100000000, NULL); /* 100 ms slice */
  pthread_t h;
  c.flags = 0;
  /* 100 ms of promoted holds in a 10 s window: each round adds about 1 ms,
   * so the cap steps in after some 100 rounds however long the OS makes
   * each (a 20% cap of 100 ms needed 20 rounds within the window, which a
   * CPU shared with other busy threads did not give in 3000). */
  c.boost_cap_pct = 1;
  c.cap_window_ns = 10000ull * 1000000ull;
  CHECK(g = gvl_create(&c));
  tgvl_spawn(&h, hog, NULL);
  while (atomic_load(&hog_iters) == 0) tgvl_sleep_us(100);
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  /* Until the cap has refused a promotion: each round costs a handoff
   * each way through the OS scheduler, so on a loaded machine a fixed
   * number of rounds can take minutes; a refusal comes after a window's
   * share of promoted holds. */
  gvl_stats_t s = tgvl_tstats(t);
  for (int i = 0; i < 3000 && !(s.interactive && s.boosts_refused); i++) {
    uint64_t end = gvl_now_ns() + 1000000;   /* 1 ms: under a tenth */
    while (gvl_now_ns() < end) tgvl_work(5);
    gvl_call_without(t, until_hog_runs, NULL, NULL, NULL);
    s = tgvl_tstats(t);
  }
  CHECK_OK(gvl_release(t));
  atomic_store(&stop_hog, 1);
  tgvl_join(h);
  CHECK_GT(s.interactive, 0);
  CHECK_GT(s.boosts_refused, 0);   /* the cap stepped in */
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(gvl_destroy(g));
}

/* hold_share_pct and gvl_set_hold_share are obsolete: still validated. */
static void test_hold_share_settings(void) {
  gvl_config_t c = {0};
  c.hold_share_pct = 100;
  errno = 0;
  CHECK(gvl_create(&c) == NULL);
  CHECK_EQ(errno, EINVAL);
  c.hold_share_pct = 99;
  CHECK(g = gvl_create(&c));
  CHECK_EQ(gvl_set_hold_share(NULL, 50), EINVAL);
  CHECK_EQ(gvl_set_hold_share(g, 0), EINVAL);
  CHECK_EQ(gvl_set_hold_share(g, 100), EINVAL);
  CHECK_OK(gvl_set_hold_share(g, 1));
  CHECK_OK(gvl_set_hold_share(g, 90));
  gvl_stats_t s;
  CHECK_OK(gvl_stats(g, &s));
  CHECK_EQ(s.ia_cost_ns, 0);          /* obsolete: always 0 */
  CHECK_OK(gvl_destroy(g));
}

/* Two I/O threads pass a byte back and forth beside a CPU-bound thread
 * whose slice is an hour: each comes back from its blocking call promoted
 * and preempts the hog, and one that takes its grant back (at its own
 * priority) and is then preempted by the other's promotion queues at the
 * promotion's level, not behind the hog, whose hour it would wait out.
 * Done when the round trips end (they did not once a holder queued at its
 * own priority). */
static int pp_fd[2];

typedef struct { int fd; char c; } pp_io_t;
static void *pp_read(void *arg) {
  pp_io_t *io = arg;
  return read(io->fd, &io->c, 1) == 1 ? arg : NULL;
}
static void *pp_write(void *arg) {
  pp_io_t *io = arg;
  return write(io->fd, &io->c, 1) == 1 ? arg : NULL;
}

/* An interpreter's few steps between two blocking calls, safe points
 * among them (where the other I/O thread's promotion preempts it). */
static void pp_stretch(gvl_thread_t *t) {
  for (int i = 0; i < 20; i++) {
    tgvl_work(10);
    (void)gvl_check_ints(t);
  }
}

static void *pp_echo(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  pp_io_t io = {pp_fd[1], 0};
  while (gvl_call_without(t, pp_read, &io, NULL, NULL)) {
    pp_stretch(t);
    CHECK(gvl_call_without(t, pp_write, &io, NULL, NULL));
    pp_stretch(t);
  }
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void test_two_io_threads(void) {
  gvl_config_t c = tgvl_strict_config(TGVL_HOUR_NS, NULL);
  c.flags = 0;                      /* the interactivity policy on */
  pthread_t echo, h;
  CHECK(g = gvl_create(&c));
  CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, pp_fd));
  atomic_store(&stop_hog, 0);
  atomic_store(&hog_iters, 0);
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(me);
  CHECK_OK(gvl_acquire(me));
  tgvl_spawn(&echo, pp_echo, NULL);
  pp_io_t io = {pp_fd[0], 'x'};
  /* First trips alone: the first blocking call after an acquire is not
   * promoted (gvl.h), and would wait out the hour. */
  for (int i = 0; i < 500 + 3; i++) {
    if (i == 3) {               /* the hog, once it holds the GVL */
      tgvl_spawn(&h, hog, NULL);
      while (!atomic_load(&hog_iters)) gvl_call_without(me, noop, NULL, NULL, NULL);
    }
    CHECK(gvl_call_without(me, pp_write, &io, NULL, NULL));
    pp_stretch(me);
    CHECK(gvl_call_without(me, pp_read, &io, NULL, NULL));
    pp_stretch(me);
  }
  CHECK_OK(shutdown(pp_fd[0], SHUT_WR));
  atomic_store(&stop_hog, 1);
  CHECK_OK(gvl_release(me));
  tgvl_join(echo);
  tgvl_join(h);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
  close(pp_fd[0]);
  close(pp_fd[1]);
}

/* Name each part on stderr, so a watchdog timeout says which one hung. */
#define TGVL_RUN(fn) (fprintf(stderr, "%s\n", #fn), fn())

int main(void) {
  tgvl_watchdog(120);
  TGVL_RUN(test_io_thread_goes_first);
  TGVL_RUN(test_heavy_compute_not_interactive);
  TGVL_RUN(test_one_long_stretch_keeps_promotion);
  TGVL_RUN(test_first_call_after_acquire);
  TGVL_RUN(test_cap_bounds_interactive);
  TGVL_RUN(test_hold_share_settings);
  TGVL_RUN(test_two_io_threads);
  puts("ok");
  return 0;
}
