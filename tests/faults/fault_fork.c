/* SPDX-License-Identifier: MIT */
/*
 * fork() while the loop thread and interpreter threads run.
 *
 * The parent has a loop with repeating timers, a fd watch, posts streaming
 * in from a poster thread, pool work in flight, a hog holding the GVL and
 * passing safe points, and a thread cycling acquire/release.  The main
 * thread forks 20 times, holding the GVL for half of them.  Each child:
 *   - finds the old GVL usable by the forking thread (held if it was);
 *   - makes a new GVL and a new loop, runs a post, a timer, pool work, a
 *     signal watch and a file read on it, destroys both, and exits 0.
 * The parent checks each child's exit status and then that its own loop
 * and threads carried on: exact counts after the forks, clean shutdown.
 */
#include <sys/wait.h>

#include "flt.h"

static gvl_t *g;
static evl_t *l;
static atomic_long stop_all, posts_done, posts_sent, hog_checks, cycles,
    timer_ticks, work_done, fd_ticks;

static void post_cb(evl_t *ll, void *arg, int status) {
  (void)ll;
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_fetch_add(&posts_done, 1);
}

static void *poster(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_all)) {
    CHECK_OK(evl_post(l, post_cb, NULL, NULL));
    atomic_fetch_add(&posts_sent, 1);
    if (atomic_load(&posts_sent) - atomic_load(&posts_done) > 1000)
      flt_sleep_us(500);
  }
  return NULL;
}

static void *hog(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  (void)arg;
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  while (!atomic_load(&stop_all)) {
    CHECK_OK(gvl_check_ints(t));
    atomic_fetch_add(&hog_checks, 1);
  }
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *cycler(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  (void)arg;
  CHECK(t != NULL);
  while (!atomic_load(&stop_all)) {
    CHECK_OK(gvl_acquire(t));
    CHECK_OK(gvl_yield(t));
    CHECK_OK(gvl_release(t));
    atomic_fetch_add(&cycles, 1);
  }
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void tick_cb(evl_t *ll, void *arg, int status) {
  (void)ll;
  if (status == 0) atomic_fetch_add((atomic_long *)arg, 1);
}

static void io_cb(evl_t *ll, void *arg, int status, unsigned ev) {
  (void)ll;
  (void)ev;
  if (status == 0) atomic_fetch_add((atomic_long *)arg, 1);
}

static void work_fn(void *arg) {
  (void)arg;
  flt_sleep_us(2000);
}

static void work_done_cb(evl_t *ll, void *arg, int status) {
  (void)ll;
  (void)arg;
  (void)status;
  atomic_fetch_add(&work_done, 1);
}

static void *ident(void *arg) { return arg; }

/* ---- the child ------------------------------------------------------------- */

static atomic_long c_post, c_timer, c_work, c_sig, c_read;

static void c_cb(evl_t *ll, void *arg, int status) {
  atomic_long *c = arg;
  CHECK(gvl_thread_holds(evl_gvl_thread(ll)));
  if (status == 0) atomic_fetch_add(c, 1);
}

static void c_read_cb(evl_t *ll, void *arg, int status, char *d, size_t n) {
  (void)ll;
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK(n > 0 && d != NULL);
  free(d);
  atomic_fetch_add(&c_read, 1);
}

static int handler_installed(int sig) {
  struct sigaction sa;
  CHECK_OK(sigaction(sig, NULL, &sa));
  return sa.sa_handler != SIG_DFL;
}

static void child(gvl_thread_t *me, int held) {
  gvl_t *g2;
  evl_t *l2;
  gvl_thread_t *t2;
  evl_id_t sig_id;
  flt_watchdog(60);
  /* The old GVL: the forking thread's state survived, and it works. */
  CHECK_EQ(gvl_thread_holds(me), held);
  if (!held) CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_yield(me));
  CHECK_OK(gvl_check_ints(me));
  CHECK_OK(gvl_release(me));
  CHECK(gvl_call_with(g, 0, ident, &c_post) == &c_post);

  g2 = gvl_create(NULL);
  CHECK(g2 != NULL);
  l2 = evl_start(g2, NULL);
  CHECK(l2 != NULL);
  CHECK_OK(evl_post(l2, c_cb, &c_post, NULL));
  CHECK_OK(evl_timer(l2, 1, 0, 0, c_cb, &c_timer, NULL));
  CHECK_OK(evl_work(l2, work_fn, 0, c_cb, &c_work, NULL));
  CHECK_OK(evl_read_file(l2, "/proc/self/status", 0, 0, c_read_cb, NULL,
                         NULL));
  CHECK_OK(evl_signal_watch(l2, SIGUSR2, 0, c_cb, &c_sig, &sig_id));
  while (!handler_installed(SIGUSR2)) flt_sleep_us(500);
  CHECK_OK(kill(getpid(), SIGUSR2));
  flt_wait_ge(&c_post, 1);
  flt_wait_ge(&c_timer, 1);
  flt_wait_ge(&c_work, 1);
  flt_wait_ge(&c_read, 1);
  flt_wait_ge(&c_sig, 1);
  t2 = gvl_thread_attach(g2, 0);
  CHECK(t2 != NULL);
  CHECK_OK(gvl_acquire(t2));
  CHECK_OK(gvl_release(t2));
  CHECK_OK(gvl_thread_detach(t2));
  CHECK_OK(evl_destroy(l2));
  CHECK_OK(gvl_destroy(g2));
  /* _exit: a leak check at exit (LSan) would scan the parent's threads,
   * which do not exist here, and report their memory. */
  _exit(0);
}

int main(void) {
  pthread_t th[3];
  gvl_thread_t *me;
  int p[2], i, forks = 20;
  long posts_before;
  flt_watchdog(240);
  g = flt_gvl();
  l = evl_start(g, NULL);
  CHECK(l != NULL);
  CHECK_OK(pipe(p));
  CHECK_EQ(write(p[1], "x", 1), 1);   /* stays readable: a tick per pass */
  CHECK_OK(evl_fd_watch(l, p[0], EVL_READABLE, 0, io_cb, &fd_ticks, NULL));
  CHECK_OK(evl_timer(l, 1, 1, 0, tick_cb, &timer_ticks, NULL));
  flt_spawn(&th[0], poster, NULL);
  flt_spawn(&th[1], hog, NULL);
  flt_spawn(&th[2], cycler, NULL);
  me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  for (i = 0; i < forks; i++) {
    int held = i % 2, status = -1;
    pid_t pid;
    CHECK_OK(evl_work(l, work_fn, 0, work_done_cb, NULL, NULL));
    if (held) CHECK_OK(gvl_acquire(me));
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) child(me, held);
    if (held) CHECK_OK(gvl_release(me));
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "fork %d (GVL %s): child status 0x%x\n", i,
              held ? "held" : "not held", status);
      return 1;
    }
  }
  /* The parent carries on: its loop still dispatches, threads progress. */
  posts_before = atomic_load(&posts_done);
  flt_wait_ge(&posts_done, posts_before + 1000);
  {
    long tt = atomic_load(&timer_ticks), ft = atomic_load(&fd_ticks),
         hc = atomic_load(&hog_checks), cy = atomic_load(&cycles);
    flt_wait_ge(&timer_ticks, tt + 3);
    flt_wait_ge(&fd_ticks, ft + 3);
    flt_wait_ge(&hog_checks, hc + 1000);
    flt_wait_ge(&cycles, cy + 10);
  }
  flt_wait_ge(&work_done, forks);
  atomic_store(&stop_all, 1);
  for (i = 0; i < 3; i++) flt_join(th[i]);
  flt_wait_ge(&posts_done, atomic_load(&posts_sent));
  CHECK_OK(evl_destroy(l));
  CHECK_EQ(atomic_load(&posts_done), atomic_load(&posts_sent));
  CHECK_EQ(atomic_load(&work_done), forks);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
  close(p[0]);
  close(p[1]);
  printf("fault_fork: %d forks ok; parent ran %ld posts\n", forks,
         atomic_load(&posts_done));
  return 0;
}
