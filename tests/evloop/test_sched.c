/* SPDX-License-Identifier: MIT */
/* cfg.sched_policy: bad values are refused with EINVAL; the loop thread
 * runs its callbacks in the policy and priority asked for, or as created
 * with EVL_SCHED_KEEP; without CAP_SYS_NICE evl_start fails with EPERM; and
 * with GVL_F_LEND a boosted dispatch lends SCHED_FIFO to the GVL's holder
 * until its safe point; libuv's pool threads, started by a real-time loop
 * thread, have normal scheduling; a real-time loop thread on the CPU of the
 * thread that posts to it or signals it runs each call at once, the waker
 * never stuck half-way: 6000 rounds, each waiting for its call, end long
 * before the test's timeout (with libuv's uv_async_send each could stall
 * until the kernel's real-time throttling let the waker finish); and a
 * signal watch removed while the handler that woke the loop thread is
 * preempted on that CPU is removed without spinning.  Exits 77 (skipped)
 * where real-time scheduling is not permitted at all. */
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evl_test.h"

static atomic_int seen_policy = -1, seen_prio = -1, ran;

/* The calling thread's policy, without SCHED_RESET_ON_FORK (which a
 * real-time loop thread and a lent holder carry). */
static int policy_of_self(void) {
  int p = sched_getscheduler(0);
  CHECK(p >= 0);
  return p & ~SCHED_RESET_ON_FORK;
}

static void where_cb(evl_t *l, void *arg, int status) {
  struct sched_param sp;
  (void)l;
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK_EQ(sched_getparam(0, &sp), 0);
  atomic_store(&seen_policy, policy_of_self());
  atomic_store(&seen_prio, sp.sched_priority);
  atomic_fetch_add(&ran, 1);
}

static void start_refused(gvl_t *g, int policy, int prio, int no_thread,
                          int err) {
  evl_config_t cfg = {0};
  cfg.sched_policy = policy;
  cfg.sched_priority = prio;
  cfg.no_thread = no_thread;
  errno = 0;
  CHECK(evl_start(g, &cfg) == NULL);
  CHECK_EQ(errno, err);
}

static void bad_values(gvl_t *g) {
  start_refused(g, 3, 1, 0, EINVAL);
  start_refused(g, -1, 0, 0, EINVAL);
  start_refused(g, EVL_SCHED_KEEP, 5, 0, EINVAL);
  start_refused(g, EVL_SCHED_FIFO, 0, 0, EINVAL);
  start_refused(g, EVL_SCHED_FIFO, 100, 0, EINVAL);
  start_refused(g, EVL_SCHED_RR, -1, 0, EINVAL);
  start_refused(g, EVL_SCHED_FIFO, 1, 1, EINVAL);   /* the host's thread */
}

/* Start a loop with policy/prio and return what its callback ran in. */
static void runs_in(gvl_t *g, int policy, int prio, int want_policy,
                    int want_prio) {
  evl_config_t cfg = {0};
  cfg.sched_policy = policy;
  cfg.sched_priority = prio;
  evl_t *l = evl_start(g, &cfg);
  CHECK(l != NULL);
  evl_config_t got;   /* evl_config_get names the policy as it was given */
  CHECK_EQ(evl_config_get(l, &got), 0);
  CHECK_EQ(got.sched_policy, policy);
  CHECK_EQ(got.sched_priority, prio);
  int n = atomic_load(&ran);
  CHECK_EQ(evl_post(l, where_cb, NULL, NULL), 0);
  t_wait_ge(&ran, n + 1);
  CHECK_EQ(atomic_load(&seen_policy), want_policy);
  CHECK_EQ(atomic_load(&seen_prio), want_prio);
  CHECK_EQ(evl_stop(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

/* In a child without CAP_SYS_NICE (and RLIMIT_RTPRIO 0, the default):
 * evl_start must fail with EPERM and leave nothing running. */
static void no_permission(void) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    CHECK_EQ(syscall(SYS_capget, &h, d), 0);
    d[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
    d[CAP_SYS_NICE / 32].permitted &= ~(1u << (CAP_SYS_NICE % 32));
    CHECK_EQ(syscall(SYS_capset, &h, d), 0);
    struct rlimit rl = {0, 0};
    CHECK_EQ(setrlimit(RLIMIT_RTPRIO, &rl), 0);
    gvl_t *g = t_gvl();
    start_refused(g, EVL_SCHED_FIFO, 1, 0, EPERM);
    CHECK_EQ(gvl_destroy(g), 0);   /* EBUSY if the loop thread were left */
    _exit(0);
  }
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- a boosted dispatch lends SCHED_FIFO to a computing holder ---------- */

static atomic_int hog_holding, hog_lent;

/* Holds the GVL and passes a safe point only once it runs as SCHED_FIFO:
 * without the lend the boosted dispatch would wait for ever. */
static void *hog(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(arg, GVL_PRIO_NORMAL);
  CHECK(t != NULL);
  CHECK_EQ(gvl_acquire(t), 0);
  atomic_store(&hog_holding, 1);
  while (policy_of_self() != SCHED_FIFO) t_sleep_ms(1);
  atomic_store(&hog_lent, 1);
  CHECK_EQ(gvl_check_ints(t), 0);                  /* the callback runs */
  CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);    /* its own, back, no flag */
  CHECK_EQ(gvl_release(t), 0);
  CHECK_EQ(gvl_thread_detach(t), 0);
  return NULL;
}

static void lend_to_holder(void) {
  gvl_config_t gc = {0};
  gc.flags = GVL_F_LEND;
  gvl_t *g = gvl_create(&gc);
  CHECK(g != NULL);
  evl_config_t cfg = {0};
  cfg.prio = EVL_PRIO_BOOST;
  cfg.sched_policy = EVL_SCHED_FIFO;
  cfg.sched_priority = 1;
  evl_t *l = evl_start(g, &cfg);
  CHECK(l != NULL);
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, hog, g), 0);
  t_wait_ge(&hog_holding, 1);
  int n = atomic_load(&ran);
  CHECK_EQ(evl_post(l, where_cb, NULL, NULL), 0);
  t_wait_ge(&ran, n + 1);
  CHECK_EQ(atomic_load(&hog_lent), 1);
  CHECK_EQ(pthread_join(th, NULL), 0);
  gvl_stats_t s;
  CHECK_EQ(gvl_stats(g, &s), 0);
  CHECK_EQ(s.lends, 1);
  CHECK_EQ(evl_stop(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_destroy(g), 0);
}

/* libuv's pool threads, started from a real-time loop thread, are not. */
static atomic_int pool_policy = -1;
static void pool_fn(void *arg) {
  (void)arg;
  atomic_store(&pool_policy, sched_getscheduler(0));
}
static void pool_done(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_fetch_add(&ran, 1);
}

static void pool_not_rt(gvl_t *g) {
  evl_config_t cfg = {0};
  cfg.sched_policy = EVL_SCHED_FIFO;
  cfg.sched_priority = 1;
  evl_t *l = evl_start(g, &cfg);
  CHECK(l != NULL);
  int n = atomic_load(&ran);
  CHECK_EQ(evl_work(l, pool_fn, 0, pool_done, NULL, NULL), 0);
  t_wait_ge(&ran, n + 1);
  CHECK_EQ(atomic_load(&pool_policy), SCHED_OTHER);
  CHECK_EQ(evl_post(l, where_cb, NULL, NULL), 0);   /* the loop still is */
  t_wait_ge(&ran, n + 2);
  CHECK_EQ(atomic_load(&seen_policy), SCHED_FIFO);
  CHECK_EQ(evl_stop(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

static atomic_int wakes;
static void wake_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == 0) atomic_fetch_add(&wakes, 1);
}

/* Pin this thread to the first CPU of its mask (the old mask in *all) and
 * start a loop whose thread runs SCHED_FIFO there: it inherits the one CPU,
 * and preempts this thread the moment a post or a signal wakes it. */
static evl_t *fifo_loop_on_one_cpu(gvl_t *g, cpu_set_t *all) {
  cpu_set_t one;
  evl_config_t cfg = {0};
  int i;
  CHECK_EQ(sched_getaffinity(0, sizeof *all, all), 0);
  CPU_ZERO(&one);
  for (i = 0; i < CPU_SETSIZE && !CPU_ISSET(i, all); i++) {
  }
  CPU_SET(i, &one);
  CHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  cfg.sched_policy = EVL_SCHED_FIFO;
  cfg.sched_priority = 10;
  evl_t *l = evl_start(g, &cfg);
  CHECK(l != NULL);
  return l;
}

/* Everything on one CPU: each post and signal is served at once. */
static void rt_wakes_one_cpu(gvl_t *g) {
  cpu_set_t all;
  evl_id_t id;
  int i;
  evl_t *l = fifo_loop_on_one_cpu(g, &all);
  CHECK(signal(SIGUSR1, SIG_IGN) != SIG_ERR);
  CHECK_EQ(evl_signal_watch(l, SIGUSR1, 0, wake_cb, NULL, &id), 0);
  atomic_store(&wakes, 0);
  for (i = 1; i <= 3000; i++) {
    CHECK_EQ(evl_post(l, wake_cb, NULL, NULL), 0);
    t_wait_ge(&wakes, i);
  }
  for (; i <= 6000; i++) {
    CHECK_EQ(kill(getpid(), SIGUSR1), 0);
    t_wait_ge(&wakes, i);
  }
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(sched_setaffinity(0, sizeof all, &all), 0);
}

/* The watch's callback cancels its own watch.  The signal's handler, on
 * this thread, wakes the loop thread, which preempts it before the handler
 * is done with the watch's slot; removing the watch must then let this
 * thread finish the handler.  A real-time thread's sched_yield never does:
 * the removal spun until the kernel's real-time throttling (950 ms of every
 * second by default; for ever without it).  The loop thread's CPU time over
 * the rounds tells: microseconds a round, or that whole stretch. */
typedef struct {
  evl_id_t id;
  atomic_int calls, ended;
} self_cancel_t;

static void self_cancel_cb(evl_t *l, void *arg, int status) {
  self_cancel_t *s = arg;
  if (status != 0) {
    atomic_fetch_add(&s->ended, 1);
    return;
  }
  CHECK_EQ(evl_cancel(l, s->id), 0);
  atomic_fetch_add(&s->calls, 1);
}

static atomic_llong loop_cpu_ns;
static void loop_cpu_cb(evl_t *l, void *arg, int status) {
  struct timespec ts;
  (void)l;
  CHECK_EQ(status, 0);
  CHECK_EQ(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
  atomic_store(&loop_cpu_ns, (long long)ts.tv_sec * 1000000000 + ts.tv_nsec);
  atomic_fetch_add((atomic_int *)arg, 1);
}

static long long loop_cpu(evl_t *l) {
  atomic_int done = 0;
  CHECK_EQ(evl_post(l, loop_cpu_cb, &done, NULL), 0);
  t_wait_ge(&done, 1);
  return atomic_load(&loop_cpu_ns);
}

static void rt_cancel_at_signal_one_cpu(gvl_t *g) {
  cpu_set_t all;
  self_cancel_t s = {0};
  int i;
  evl_t *l = fifo_loop_on_one_cpu(g, &all);
  CHECK(signal(SIGUSR2, SIG_IGN) != SIG_ERR);
  long long cpu0 = 0;
  for (i = 1; i <= 20; i++) {
    CHECK_EQ(evl_signal_watch(l, SIGUSR2, 0, self_cancel_cb, &s, &s.id), 0);
    long long c = loop_cpu(l);                /* also: the watch is in place */
    if (i == 1) cpu0 = c;
    CHECK_EQ(kill(getpid(), SIGUSR2), 0);
    t_wait_ge(&s.ended, i);
  }
  long long spent = loop_cpu(l) - cpu0;
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  CHECK_EQ(atomic_load(&s.calls), 20);
  if (spent >= 500000000)
    printf("20 rounds took %lld ms of the loop thread's CPU\n", spent / 1000000);
  CHECK(spent < 500000000);
}

int main(void) {
  struct sched_param sp = {.sched_priority = 2};
  if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0 ||
      pthread_setschedparam(pthread_self(), SCHED_RR, &sp) != 0) {
    puts("skipped: SCHED_FIFO and SCHED_RR 2 are not permitted here");
    return 77;
  }
  sp.sched_priority = 0;
  CHECK_EQ(pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp), 0);
  no_permission();  /* first: the child starts threads, so fork before any */
  gvl_t *g = t_gvl();
  pool_not_rt(g);   /* next: the pool is created by the first work queued */
  bad_values(g);
  runs_in(g, EVL_SCHED_KEEP, 0, SCHED_OTHER, 0);
  runs_in(g, EVL_SCHED_FIFO, 1, SCHED_FIFO, 1);
  runs_in(g, EVL_SCHED_RR, 2, SCHED_RR, 2);
  rt_wakes_one_cpu(g);
  rt_cancel_at_signal_one_cpu(g);
  CHECK_EQ(gvl_destroy(g), 0);
  lend_to_holder();
  puts("test_sched ok");
  return 0;
}
