/* SPDX-License-Identifier: MIT */
/* A host that waits in its own event loop (poll(2) here, as Tcl's notifier
 * or GLib would): evl_attach, evl_backend, evl_step(l, 0), evl_detach.
 * Posts from another thread, a timer, a stop requested by another thread
 * (which waits for evl_detach), pending registrations cancelled at detach,
 * the thread rules, evl_backend's timeout after a slow callback, and a
 * child forked in a callback going on with the loop, which stays the
 * parent's too. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evl_test.h"

static atomic_int posted_runs, cancelled, timer_runs;
static void count_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK(evl_in_loop_thread(l));
  if (status == 0) atomic_fetch_add(&posted_runs, 1);
  else if (status == ECANCELED) atomic_fetch_add(&cancelled, 1);
}
static void timer_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == 0) atomic_fetch_add(&timer_runs, 1);
  else if (status == ECANCELED) atomic_fetch_add(&cancelled, 1);
}

static void *poster(void *p) {
  int i;
  for (i = 0; i < 500; i++) CHECK_EQ(evl_post(p, count_cb, NULL, NULL), 0);
  return NULL;
}

static atomic_int stop_returned;
static void *stopper(void *p) {
  CHECK_EQ(evl_stop(p), 0);   /* waits for evl_detach */
  atomic_store(&stop_returned, 1);
  return NULL;
}

/* One round of the host's own loop: wait on the backend fd for as long as
 * evl_backend allows, then step without blocking. */
static void host_iteration(evl_t *l) {
  struct pollfd pfd;
  int fd, timeout;
  CHECK_EQ(evl_backend(l, &fd, &timeout), 0);
  CHECK(fd >= 0);
  pfd.fd = fd;
  pfd.events = POLLIN;
  pfd.revents = 0;
  if (timeout < 0 || timeout > 100) timeout = 100;  /* the host's own tick */
  poll(&pfd, 1, timeout);
  CHECK_EQ(evl_step(l, 0), 0);
}

static void *other_thread_calls(void *p) {
  CHECK_EQ(evl_detach(p), EPERM);
  CHECK_EQ(evl_attach(p), EBUSY);
  CHECK_EQ(evl_step(p, 0), EPERM);
  return NULL;
}

static void inside_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  if (status != 0) return;
  CHECK_EQ(evl_detach(l), EBUSY);
  CHECK_EQ(evl_destroy(l), EBUSY);
  atomic_fetch_add(&posted_runs, 1);
}

static void test_host_loop(gvl_t *g) {
  evl_config_t cfg = {0};
  evl_t *l;
  pthread_t th, st;
  int fd, timeout;
  cfg.no_thread = 1;
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_backend(l, &fd, &timeout), EPERM);  /* not attached yet */
  CHECK_EQ(evl_detach(l), EPERM);
  CHECK_EQ(evl_attach(l), 0);
  CHECK_EQ(evl_attach(l), EBUSY);
  CHECK_EQ(evl_run(l), EBUSY);
  CHECK_EQ(evl_in_loop_thread(l), 1);
  CHECK_EQ(evl_backend(NULL, &fd, &timeout), EINVAL);
  CHECK_EQ(evl_backend(l, NULL, &timeout), EINVAL);
  CHECK_EQ(evl_backend(l, &fd, NULL), EINVAL);
  pthread_create(&th, NULL, other_thread_calls, l);
  pthread_join(th, NULL);

  pthread_create(&th, NULL, poster, l);
  CHECK_EQ(evl_timer(l, 5, 0, 0, timer_cb, NULL, NULL), 0);
  CHECK_EQ(evl_post(l, inside_cb, NULL, NULL), 0);
  while (atomic_load(&posted_runs) < 501 || atomic_load(&timer_runs) < 1)
    host_iteration(l);
  pthread_join(th, NULL);

  /* Pending at the stop: a far timer and an armed one-shot. */
  CHECK_EQ(evl_timer(l, 3600000, 0, 0, timer_cb, NULL, NULL), 0);
  CHECK_EQ(evl_timer(l, 3600000, 1000, 0, timer_cb, NULL, NULL), 0);
  host_iteration(l);
  pthread_create(&st, NULL, stopper, l);
  while (!evl_stopping(l)) host_iteration(l);   /* the stop wakes the fd */
  CHECK_EQ(atomic_load(&stop_returned), 0);
  CHECK_EQ(evl_detach(l), 0);
  pthread_join(st, NULL);
  CHECK_EQ(atomic_load(&stop_returned), 1);
  CHECK_EQ(atomic_load(&cancelled), 2);
  CHECK_EQ(evl_in_loop_thread(l), 0);
  CHECK_EQ(evl_detach(l), EPERM);
  CHECK_EQ(evl_attach(l), EBUSY);
  CHECK_EQ(evl_destroy(l), 0);
}

/* The attached thread may destroy directly; it holds the GVL meanwhile. */
static void test_destroy_attached(gvl_t *g) {
  evl_config_t cfg = {0};
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  evl_t *l;
  cfg.no_thread = 1;
  l = evl_start(g, &cfg);
  CHECK(l != NULL && me != NULL);
  CHECK_EQ(gvl_acquire(me), 0);
  CHECK_EQ(evl_attach(l), 0);
  atomic_store(&cancelled, 0);
  CHECK_EQ(evl_timer(l, 3600000, 0, 0, timer_cb, NULL, NULL), 0);
  CHECK_EQ(evl_step(l, 0), 0);  /* releases and retakes the GVL */
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(evl_destroy(l), 0);
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(atomic_load(&cancelled), 1);
  CHECK_EQ(gvl_release(me), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
}

static void test_thread_mode(gvl_t *g) {
  evl_t *l = t_loop(g);
  int fd, timeout;
  CHECK_EQ(evl_attach(l), EPERM);
  CHECK_EQ(evl_attach(NULL), EINVAL);
  CHECK_EQ(evl_detach(NULL), EINVAL);
  CHECK_EQ(evl_detach(l), EPERM);
  CHECK_EQ(evl_backend(l, &fd, &timeout), EPERM);
  CHECK_EQ(evl_destroy(l), 0);
}

static atomic_int second_ran, in_cb_attach = 1;
static void attach_from_cb(evl_t *l, void *arg, int status) {
  (void)l;
  if (status == 0) atomic_store(&in_cb_attach, evl_attach(arg));
}

/* A thread is the loop thread of one attached loop at a time: a second
 * attach (a second Tcl package on a shell's thread, say) would take the
 * first loop's thread away from it.  So would one from a callback of a
 * loop running on its own thread. */
static void test_attach_second(gvl_t *g) {
  evl_config_t cfg = {0};
  cfg.no_thread = 1;
  evl_t *a = evl_start(g, &cfg), *b = evl_start(g, &cfg), *t = t_loop(g);
  CHECK(a != NULL && b != NULL);
  CHECK_EQ(evl_attach(a), 0);
  CHECK_EQ(evl_attach(b), EBUSY);
  CHECK_EQ(evl_in_loop_thread(a), 1);
  CHECK_EQ(evl_in_loop_thread(b), 0);
  CHECK_EQ(evl_post(a, t_count_ok, &second_ran, NULL), 0);
  for (int i = 0; i < 3; i++) CHECK_EQ(evl_step(a, 0), 0);
  CHECK_EQ(atomic_load(&second_ran), 1);
  CHECK_EQ(evl_detach(a), 0);
  CHECK_EQ(evl_post(t, attach_from_cb, b, NULL), 0);
  while (atomic_load(&in_cb_attach) == 1) t_sleep_ms(1);
  CHECK_EQ(atomic_load(&in_cb_attach), EBUSY);
  CHECK_EQ(evl_attach(b), 0);   /* the thread is free again */
  CHECK_EQ(evl_detach(b), 0);
  CHECK_EQ(evl_destroy(a), 0);
  CHECK_EQ(evl_destroy(b), 0);
  CHECK_EQ(evl_destroy(t), 0);
}

/* evl_backend's timeout counts from when it is called: after a callback
 * that ran 80 ms, a 100 ms timer made before it is due in 20 ms or less,
 * whatever the machine's speed (the bound is from clock reads around the
 * calls, +2 ms for libuv's rounding to milliseconds). */
static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void slow_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == 0) t_sleep_ms(80);
}

static void test_backend_after_slow_cb(gvl_t *g) {
  evl_config_t cfg = {0};
  atomic_int fired = 0;
  int fd, timeout;
  cfg.no_thread = 1;
  evl_t *l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_attach(l), 0);
  CHECK_EQ(evl_step(l, 0), 0);
  CHECK_EQ(evl_timer(l, 100, 0, 0, t_count_ok, &fired, NULL), 0);
  uint64_t due = mono_ms() + 100 + 2;
  CHECK_EQ(evl_post(l, slow_cb, NULL, NULL), 0);
  CHECK_EQ(evl_step(l, 0), 0);       /* starts the timer, runs slow_cb */
  if (atomic_load(&fired) == 0) {
    uint64_t now = mono_ms();
    CHECK_EQ(evl_backend(l, &fd, &timeout), 0);
    CHECK(timeout >= 0);
    CHECK((uint64_t)timeout <= (due > now ? due - now : 0));
  }
  while (atomic_load(&fired) == 0) host_iteration(l);
  CHECK_EQ(evl_detach(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

/* A child forked inside a callback of an attached loop is still that
 * loop's thread (its only thread goes back into the loop when the callback
 * returns), so it cannot attach another (EBUSY, as in the parent). */
static void fork_cb(evl_t *l, void *arg, int status) {
  int *st = arg;
  if (status != 0) return;
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    evl_config_t cfg = {0};
    if (!evl_in_loop_thread(l)) _exit(2);
    gvl_t *g2 = gvl_create(NULL);
    if (g2 == NULL) _exit(3);
    cfg.no_thread = 1;
    evl_t *l2 = evl_start(g2, &cfg);
    if (l2 == NULL) _exit(4);
    if (evl_attach(l2) != EBUSY) _exit(5);
    if (evl_destroy(l2) != 0) _exit(6);
    if (gvl_destroy(g2) != 0) _exit(7);
    _exit(0);
  }
  CHECK_EQ(waitpid(pid, st, 0), pid);
}

static void test_fork_in_cb(gvl_t *g) {
  evl_config_t cfg = {0};
  int st = -1;
  cfg.no_thread = 1;
  evl_t *l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_attach(l), 0);
  CHECK_EQ(evl_post(l, fork_cb, &st, NULL), 0);
  while (st == -1) host_iteration(l);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);
  CHECK_EQ(evl_in_loop_thread(l), 1);   /* the parent's is unchanged */
  CHECK_EQ(evl_detach(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

/* evl_detach keeps the caller's GVL state: a thread that evl_attach
 * attached and that holds the GVL through the loop's handle still holds it
 * afterwards, through that same handle, which is then the host's. */
static void test_detach_keeps_held(gvl_t *g) {
  evl_config_t cfg;
  gvl_thread_t *h;
  evl_t *l;
  atomic_int n = 0;
  memset(&cfg, 0, sizeof cfg);
  cfg.no_thread = 1;
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK(gvl_thread_self(g) == NULL);
  CHECK_EQ(evl_attach(l), 0);
  h = evl_gvl_thread(l);
  CHECK(h != NULL && gvl_thread_self(g) == h);
  CHECK_EQ(evl_post(l, t_count_ok, &n, NULL), 0);
  CHECK_EQ(gvl_acquire(h), 0);
  CHECK_EQ(evl_detach(l), 0);      /* the post's last call, on this thread */
  CHECK_EQ(atomic_load(&n), 0);    /* ECANCELED: counted only with 0 */
  CHECK(gvl_thread_self(g) == h);
  CHECK(gvl_thread_holds(h));
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_release(h), 0);
  CHECK_EQ(gvl_thread_detach(h), 0);
  CHECK(gvl_thread_self(g) == NULL);
}

/* fork() in a callback: the child goes on driving the loop, with kernel
 * state of its own.  The parent watches a pipe; the child, in its copy of
 * the loop, gets a timer and a watch on a pipe of its own, then cancels
 * its copy of the parent's watch (which, on an epoll instance shared with
 * the parent, would take the parent's fd out of it) and exits.  The parent
 * then writes its pipe: its watch must still see it.  The child reports
 * by its exit status; both sides give up after 10 s with a status of
 * their own rather than hang. */
enum { FK_TIMER = 1, FK_READ = 2, FK_CANCEL = 4, FK_ALL = 7 };
static int fk_pipe[2], fk_child_pipe[2];
static evl_id_t fk_watch;
static int fk_child_seen, fk_parent_got = -1, fk_status = -1;

static void fk_child_done(void) {
  if (fk_child_seen == FK_ALL) _exit(0);
}
static void fk_child_read(evl_t *l, void *arg, int status, unsigned ev) {
  (void)l, (void)arg, (void)ev;
  char c;
  if (status == 0 && read(fk_child_pipe[0], &c, 1) == 1 && c == 'c')
    fk_child_seen |= FK_READ;
  fk_child_done();
}
static void fk_child_timer(evl_t *l, void *arg, int status) {
  (void)arg;
  if (status != 0) _exit(20);
  fk_child_seen |= FK_TIMER;
  if (evl_cancel(l, fk_watch) == 0) fk_child_seen |= FK_CANCEL;
  fk_child_done();
}
static void fk_give_up(evl_t *l, void *arg, int status) {
  (void)l, (void)arg;
  if (status == 0) _exit(30 + fk_child_seen);   /* in the child */
}
static void fk_parent_read(evl_t *l, void *arg, int status, unsigned ev) {
  (void)l, (void)arg, (void)ev;
  char c;
  if (status == 0 && read(fk_pipe[0], &c, 1) == 1) fk_parent_got = c;
}
static void fk_parent_timeout(evl_t *l, void *arg, int status) {
  (void)l, (void)arg;
  if (status == 0 && fk_parent_got == -1) fk_parent_got = 0;
}
static void fk_fork_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  if (status != 0) return;
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {   /* back into the loop once this returns */
    if (pipe(fk_child_pipe) != 0 || write(fk_child_pipe[1], "c", 1) != 1 ||
        evl_fd_watch(l, fk_child_pipe[0], EVL_READABLE, 0, fk_child_read,
                     NULL, NULL) != 0 ||
        evl_timer(l, 5, 0, 0, fk_child_timer, NULL, NULL) != 0 ||
        evl_timer(l, 10000, 0, 0, fk_give_up, NULL, NULL) != 0)
      _exit(10);
    return;
  }
  CHECK_EQ(waitpid(pid, &fk_status, 0), pid);
}

static void test_fork_keeps_loop(gvl_t *g) {
  evl_config_t cfg = {0};
  cfg.no_thread = 1;
  CHECK_EQ(pipe(fk_pipe), 0);
  evl_t *l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_attach(l), 0);
  CHECK_EQ(evl_fd_watch(l, fk_pipe[0], EVL_READABLE, 0, fk_parent_read, NULL,
                        &fk_watch), 0);
  CHECK_EQ(evl_post(l, fk_fork_cb, NULL, NULL), 0);
  while (fk_status == -1) host_iteration(l);
  CHECK(WIFEXITED(fk_status));
  CHECK_EQ(WEXITSTATUS(fk_status), 0);   /* 3x: the child's give-up, x its marks */
  CHECK_EQ(write(fk_pipe[1], "p", 1), 1);
  CHECK_EQ(evl_timer(l, 10000, 0, 0, fk_parent_timeout, NULL, NULL), 0);
  while (fk_parent_got == -1) host_iteration(l);
  CHECK_EQ(fk_parent_got, 'p');          /* 0: the parent's watch was lost */
  CHECK_EQ(evl_detach(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
  close(fk_pipe[0]);
  close(fk_pipe[1]);
}

/* The child's wake-up is its own: a loop thread forks in a callback, the
 * child idles in its copy of the loop (own thread: nothing else wakes it),
 * and the parent posts 200 times, each waiting for its call.  A child
 * that polled the parent's wake-up would read some of them first, and
 * the parent's loop, with no timer to wake it, would sleep through the
 * post: the wait gives up after 10 s. */
static pid_t fw_child;
static pthread_mutex_t fw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fw_cv = PTHREAD_COND_INITIALIZER;
static int fw_runs;
static void fw_fork_cb(evl_t *l, void *arg, int status) {
  (void)l, (void)arg;
  if (status != 0) return;
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) return;   /* the child idles in the loop until killed */
  pthread_mutex_lock(&fw_mu);
  fw_child = pid;
  pthread_cond_broadcast(&fw_cv);
  pthread_mutex_unlock(&fw_mu);
}
static void fw_count(evl_t *l, void *arg, int status) {
  (void)l, (void)arg;
  pthread_mutex_lock(&fw_mu);
  if (status == 0) fw_runs++;
  pthread_cond_broadcast(&fw_cv);
  pthread_mutex_unlock(&fw_mu);
}
static void test_fork_wake(gvl_t *g) {
  evl_t *l = evl_start(g, NULL);
  CHECK(l != NULL);
  CHECK_EQ(evl_post(l, fw_fork_cb, NULL, NULL), 0);
  pthread_mutex_lock(&fw_mu);
  while (fw_child == 0) pthread_cond_wait(&fw_cv, &fw_mu);
  pthread_mutex_unlock(&fw_mu);
  for (int i = 1; i <= 200; i++) {
    struct timespec until;
    CHECK_EQ(evl_post(l, fw_count, NULL, NULL), 0);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&fw_mu);
    while (fw_runs < i &&
           pthread_cond_timedwait(&fw_cv, &fw_mu, &until) != ETIMEDOUT) {
    }
    int runs = fw_runs;
    pthread_mutex_unlock(&fw_mu);
    if (runs < i) kill(fw_child, SIGKILL);
    CHECK_EQ(runs, i);   /* a post the parent's loop slept through */
  }
  CHECK_EQ(kill(fw_child, SIGKILL), 0);
  CHECK_EQ(waitpid(fw_child, NULL, 0), fw_child);
  CHECK_EQ(evl_destroy(l), 0);
}

int main(void) {
  gvl_t *g = t_gvl();
  test_fork_keeps_loop(g);
  test_fork_wake(g);
  test_detach_keeps_held(g);
  test_backend_after_slow_cb(g);
  test_fork_in_cb(g);
  test_thread_mode(g);
  test_host_loop(g);
  test_destroy_attached(g);
  test_attach_second(g);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_attach ok");
  return 0;
}
