/* SPDX-License-Identifier: MIT */
/* Thread-pool work: completion counts, GVL state on both sides, cancel of
 * queued and of started work, stop with work queued and running, evl_stop
 * from a work function; a process that exits while a work function runs
 * ends only after it has returned. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evl_test.h"

static gvl_t *G;
static atomic_int ran, done_ok, done_cancel, bad;

static void work_fn(void *arg) {
  (void)arg;
  /* Pool threads are not attached to the GVL: this runs without it. */
  if (gvl_thread_self(G) != NULL) atomic_store(&bad, 1);
  atomic_fetch_add(&ran, 1);
}

static void done_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  if (!t_holds(l)) atomic_store(&bad, 1);
  if (status == 0) atomic_fetch_add(&done_ok, 1);
  else if (status == ECANCELED) atomic_fetch_add(&done_cancel, 1);
  else atomic_store(&bad, 1);
}

static void reset(void) {
  atomic_store(&ran, 0);
  atomic_store(&done_ok, 0);
  atomic_store(&done_cancel, 0);
}

static void test_counts(void) {
  evl_t *l = t_loop(G);
  int i;
  reset();
  for (i = 0; i < 500; i++) CHECK_EQ(evl_work(l, work_fn, 0, done_cb, NULL, NULL), 0);
  /* done may be NULL: nothing is called after the work. */
  for (i = 0; i < 20; i++) CHECK_EQ(evl_work(l, work_fn, 0, NULL, NULL, NULL), 0);
  t_wait_ge(&done_ok, 500);
  t_wait_ge(&ran, 520);
  CHECK_EQ(evl_stop(l), 0);
  /* The counters count calls made: none for the 20 (evloop.h). */
  evl_stats_t st;
  CHECK_EQ(evl_stats(l, &st), 0);
  CHECK_EQ(st.dispatched, 500);
  CHECK_EQ(st.cancelled + st.errors, 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&ran), 520);
  CHECK_EQ(atomic_load(&done_ok), 500);
  CHECK_EQ(atomic_load(&bad), 0);
}

/* Blockers occupy every pool thread until released. */
static pthread_mutex_t bmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bcv = PTHREAD_COND_INITIALIZER;
static int release_blockers;
static atomic_int blockers_in;

static void blocker_fn(void *arg) {
  (void)arg;
  atomic_fetch_add(&blockers_in, 1);
  pthread_mutex_lock(&bmu);
  while (!release_blockers) pthread_cond_wait(&bcv, &bmu);
  pthread_mutex_unlock(&bmu);
}

static void set_release(int v) {
  pthread_mutex_lock(&bmu);
  release_blockers = v;
  pthread_cond_broadcast(&bcv);
  pthread_mutex_unlock(&bmu);
}

static void test_cancel(void) {
  evl_t *l = t_loop(G);
  evl_id_t blk[4], q[10];
  int i;
  reset();
  atomic_store(&blockers_in, 0);
  set_release(0);
  for (i = 0; i < 4; i++) CHECK_EQ(evl_work(l, blocker_fn, 0, done_cb, NULL, &blk[i]), 0);
  t_wait_ge(&blockers_in, 4);
  for (i = 0; i < 10; i++) CHECK_EQ(evl_work(l, work_fn, 0, done_cb, NULL, &q[i]), 0);
  /* Queued behind the blockers: cancellable, and then never run. */
  for (i = 0; i < 10; i += 2) CHECK_EQ(evl_cancel(l, q[i]), 0);
  for (i = 0; i < 4; i++) CHECK_EQ(evl_cancel(l, blk[i]), EBUSY);
  t_wait_ge(&done_cancel, 5);
  CHECK_EQ(atomic_load(&ran), 0);
  set_release(1);
  t_wait_ge(&done_ok, 4 + 5);
  CHECK_EQ(atomic_load(&ran), 5);
  for (i = 0; i < 4; i++) CHECK_EQ(evl_cancel(l, blk[i]), EVL_ENOREG);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&done_cancel), 5);
  CHECK_EQ(atomic_load(&bad), 0);
}

/* Stop while blockers run and work is queued: the queued work is never
 * run (ECANCELED); stop waits for the running work (status 0). */
static void *stopper(void *p) {
  CHECK_EQ(evl_stop(p), 0);
  return NULL;
}

static void test_stop_pending(void) {
  evl_t *l = t_loop(G);
  pthread_t th;
  int i;
  reset();
  atomic_store(&blockers_in, 0);
  set_release(0);
  for (i = 0; i < 4; i++) CHECK_EQ(evl_work(l, blocker_fn, 0, done_cb, NULL, NULL), 0);
  t_wait_ge(&blockers_in, 4);
  for (i = 0; i < 20; i++) CHECK_EQ(evl_work(l, work_fn, 0, done_cb, NULL, NULL), 0);
  CHECK_EQ(pthread_create(&th, NULL, stopper, l), 0);
  while (!evl_stopping(l)) t_sleep_ms(1);
  t_wait_ge(&done_cancel, 20);
  set_release(1);
  pthread_join(th, NULL);
  CHECK_EQ(atomic_load(&done_ok), 4);
  CHECK_EQ(atomic_load(&done_cancel), 20);
  CHECK_EQ(atomic_load(&ran), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

/* evl_stop from a work function does not wait (it would wait for itself). */
static evl_t *stop_loop;
static void stopping_fn(void *arg) {
  (void)arg;
  CHECK_EQ(evl_stop(stop_loop), 0);
  CHECK_EQ(evl_destroy(stop_loop), EBUSY);
}

static void test_stop_from_work(void) {
  stop_loop = t_loop(G);
  reset();
  CHECK_EQ(evl_work(stop_loop, stopping_fn, EVL_F_NOGVL, NULL, NULL, NULL), 0);
  while (!evl_stopping(stop_loop)) t_sleep_ms(1);
  CHECK_EQ(evl_destroy(stop_loop), 0);
}

/* evloop.h: "a work function still running when the process exits holds
 * the exit up until it returns".  A child exits as soon as its work
 * function has started; the function then writes a byte, which the parent
 * must find in the pipe once the child is gone. */
static int exit_pipe[2], started_pipe[2];

static void slow_fn(void *arg) {
  (void)arg;
  char c = 's';
  CHECK_EQ(write(started_pipe[1], &c, 1), 1);
  t_sleep_ms(100);
  c = 'x';
  CHECK_EQ(write(exit_pipe[1], &c, 1), 1);
}

static void test_exit_waits_for_work(void) {
  CHECK_EQ(pipe(exit_pipe), 0);
  CHECK_EQ(pipe(started_pipe), 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    gvl_t *g = t_gvl();
    evl_t *l = t_loop(g);
    char c;
    CHECK_EQ(evl_work(l, slow_fn, EVL_F_NOGVL, NULL, NULL, NULL), 0);
    CHECK_EQ(read(started_pipe[0], &c, 1), 1);
    exit(0);
  }
  close(exit_pipe[1]);
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  char c = 0;
  CHECK_EQ(read(exit_pipe[0], &c, 1), 1);
  CHECK_EQ(c, 'x');
  close(exit_pipe[0]);
  close(started_pipe[0]);
  close(started_pipe[1]);
}

int main(void) {
  /* Before any loop: the child starts libuv's pool of its own. */
  test_exit_waits_for_work();
  /* The cancel tests need to know the pool size. */
  setenv("UV_THREADPOOL_SIZE", "4", 1);
  G = t_gvl();
  test_counts();
  test_cancel();
  test_stop_pending();
  test_stop_from_work();
  CHECK_EQ(gvl_destroy(G), 0);
  puts("test_work ok");
  return 0;
}
