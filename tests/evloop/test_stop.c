/* SPDX-License-Identifier: MIT */
/* Stop while 8 threads keep registering: every accepted registration gets
 * exactly one last call, every refused one (EVL_ESTOPPED) none.  Also stop
 * with pending posts, armed timers, watches and queued work all at once. */
#include <sched.h>
#include <pthread.h>
#include <unistd.h>

#include "evl_test.h"

#define NTHREADS 8
#define MAXPER 20000

typedef struct {
  evl_t *l;
  atomic_int *go;
  int accepted;
  atomic_int calls[MAXPER];   /* last calls per registration */
  atomic_int ticks;
} sub_t;

static atomic_int bad;

static void final_cb(evl_t *l, void *arg, int status) {
  atomic_int *c = arg;
  (void)l;
  if (status != 0 && status != ECANCELED) atomic_store(&bad, 1);
  atomic_fetch_add(c, 1);
}

static void work_fn(void *arg) { (void)arg; }

static void *sub_main(void *p) {
  sub_t *s = p;
  int i;
  while (!atomic_load(s->go)) sched_yield();
  for (i = 0; i < MAXPER; i++) {
    int r;
    switch (i % 4) {
    case 0: r = evl_post(s->l, final_cb, &s->calls[i], NULL); break;
    case 1: r = evl_timer(s->l, (uint64_t)(i % 3), 0, 0, final_cb, &s->calls[i], NULL); break;
    case 2: r = evl_work(s->l, work_fn, 0, final_cb, &s->calls[i], NULL); break;
    default: r = evl_post_flags(s->l, final_cb, &s->calls[i], EVL_F_NOGVL, NULL); break;
    }
    if (r == EVL_ESTOPPED) break;
    CHECK_EQ(r, 0);
    s->accepted++;
  }
  return NULL;
}

static void test_race_stop(gvl_t *g) {
  static sub_t subs[NTHREADS];
  pthread_t th[NTHREADS];
  atomic_int go = 0;
  evl_t *l = t_loop(g);
  int i, j, total = 0;
  for (i = 0; i < NTHREADS; i++) {
    subs[i].l = l;
    subs[i].go = &go;
    CHECK_EQ(pthread_create(&th[i], NULL, sub_main, &subs[i]), 0);
  }
  atomic_store(&go, 1);
  t_sleep_ms(20);
  CHECK_EQ(evl_stop(l), 0);
  for (i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  /* evl_stop returned: every accepted registration has had its last call. */
  for (i = 0; i < NTHREADS; i++) {
    for (j = 0; j < MAXPER; j++)
      CHECK_EQ(atomic_load(&subs[i].calls[j]), j < subs[i].accepted ? 1 : 0);
    total += subs[i].accepted;
  }
  CHECK_EQ(atomic_load(&bad), 0);
  printf("accepted %d registrations before the stop\n", total);
  CHECK_EQ(evl_destroy(l), 0);
}

/* Everything pending at once, with the loop kept away from host code by
 * the test thread holding the GVL; stop is called holding it. */
static atomic_int n_ok, n_cancel;
static void mixed_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == 0) atomic_fetch_add(&n_ok, 1);
  else if (status == ECANCELED) atomic_fetch_add(&n_cancel, 1);
  else atomic_store(&bad, 1);
}
static void mixed_io(evl_t *l, void *arg, int status, unsigned ev) {
  (void)ev;
  mixed_cb(l, arg, status);
}

static void test_stop_everything(gvl_t *g) {
  evl_t *l = t_loop(g);
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  int p[2], i, n = 0;
  CHECK_EQ(pipe(p), 0);
  CHECK_EQ(gvl_acquire(me), 0);
  for (i = 0; i < 100; i++, n++) CHECK_EQ(evl_post(l, mixed_cb, NULL, NULL), 0);
  for (i = 0; i < 100; i++, n++)
    CHECK_EQ(evl_timer(l, i % 2 ? 3600000 : 0, i % 4 ? 0 : 5, 0, mixed_cb, NULL, NULL), 0);
  for (i = 0; i < 100; i++, n++) CHECK_EQ(evl_work(l, work_fn, 0, mixed_cb, NULL, NULL), 0);
  CHECK_EQ(evl_fd_watch(l, p[0], EVL_READABLE, 0, mixed_io, NULL, NULL), 0);
  n++;
  CHECK_EQ(evl_stop(l), 0);  /* releases the GVL while it waits */
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(gvl_release(me), 0);
  CHECK_EQ(atomic_load(&n_ok) + atomic_load(&n_cancel), n);
  CHECK(atomic_load(&n_cancel) >= 50 + 1);  /* the far timers, the watch */
  CHECK_EQ(atomic_load(&bad), 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
  close(p[0]);
  close(p[1]);
}

/* Many threads calling evl_stop and one calling evl_destroy at once. */
static void *stop_main(void *p) {
  CHECK_EQ(evl_stop(p), 0);
  CHECK_EQ(evl_stopping(p), 1);
  return NULL;
}

static void test_concurrent_stop(gvl_t *g) {
  evl_t *l = t_loop(g);
  pthread_t th[4];
  int i;
  for (i = 0; i < 100; i++) CHECK_EQ(evl_timer(l, 3600000, 0, 0, mixed_cb, NULL, NULL), 0);
  for (i = 0; i < 4; i++) CHECK_EQ(pthread_create(&th[i], NULL, stop_main, l), 0);
  for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
  CHECK_EQ(evl_destroy(l), 0);
}

/* evl_stop and evl_destroy wait for the loop thread with the GVL released
 * (gvl_call_without); an interrupt pending on the caller must still be
 * pending when they return, for its next safe point. */
static void test_interrupt_kept(gvl_t *g, int destroy) {
  evl_t *l = t_loop(g);
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(me != NULL);
  /* Something for the loop thread to do with the GVL as it stops. */
  for (int i = 0; i < 10; i++)
    CHECK_EQ(evl_timer(l, 3600000, 0, 0, mixed_cb, NULL, NULL), 0);
  CHECK_EQ(gvl_acquire(me), 0);
  CHECK_EQ(gvl_thread_interrupt(me), 0);
  if (destroy) CHECK_EQ(evl_destroy(l), 0);
  else CHECK_EQ(evl_stop(l), 0);
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(gvl_check_ints(me), EINTR);
  CHECK_EQ(gvl_check_ints(me), 0);     /* delivered once */
  CHECK_EQ(gvl_release(me), 0);
  if (!destroy) CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
}

/* A thread that runs another loop nested (evl_run inside a callback, or
 * beside its own evl_attach) is still the loop thread of the outer one:
 * evl_stop on it only requests the stop and evl_destroy is EBUSY, where
 * waiting for that loop to finish would wait for this very thread. */
static evl_t *outer, *inner;
static atomic_int nested_calls;

static void inner_cb(evl_t *l, void *arg, int status) {
  int destroy = (int)(intptr_t)arg;
  if (status != 0) return;
  CHECK(!evl_in_loop_thread(outer));  /* the innermost loop is l */
  if (destroy) CHECK_EQ(evl_destroy(outer), EBUSY);
  else CHECK_EQ(evl_stop(outer), 0);
  CHECK_EQ(evl_stopping(outer), !destroy);
  atomic_fetch_add(&nested_calls, 1);
  CHECK_EQ(evl_stop(l), 0);
}

static void outer_cb(evl_t *l, void *arg, int status) {
  (void)l;
  if (status != 0) return;
  CHECK_EQ(evl_post(inner, inner_cb, arg, NULL), 0);
  CHECK_EQ(evl_run(inner), 0);
}

static void test_stop_from_nested_run(gvl_t *g, int attached, int destroy) {
  evl_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.no_thread = 1;
  inner = evl_start(g, &cfg);
  CHECK(inner != NULL);
  atomic_store(&nested_calls, 0);
  if (attached) {
    outer = evl_start(g, &cfg);
    CHECK(outer != NULL);
    CHECK_EQ(evl_attach(outer), 0);
    CHECK_EQ(evl_post(inner, inner_cb, (void *)(intptr_t)destroy, NULL), 0);
    CHECK_EQ(evl_run(inner), 0);
    CHECK_EQ(evl_detach(outer), 0);
  } else {
    outer = t_loop(g);
    CHECK_EQ(evl_post(outer, outer_cb, (void *)(intptr_t)destroy, NULL), 0);
    t_wait_ge(&nested_calls, 1);
  }
  CHECK_EQ(atomic_load(&nested_calls), 1);
  CHECK_EQ(evl_destroy(outer), 0);
  CHECK_EQ(evl_destroy(inner), 0);
}

/* cfg.on_stop: once, on the thread that made the first stop request,
 * with evl_stopping already 1 and before that request's wait (so a hook
 * that ends the driver's work lets the stop finish); never when the loop
 * ends because its driver returned. */
static atomic_int hook_calls, hook_saw_stopping;
static pthread_t hook_thread;
static atomic_int drv_release;

static void on_stop_hook(evl_t *l, void *arg) {
  (void)arg;
  hook_thread = pthread_self();
  atomic_store(&hook_saw_stopping, evl_stopping(l));
  atomic_fetch_add(&hook_calls, 1);
  atomic_store(&drv_release, 1);
}

/* A driver that looks only at drv_release, as a busy host script would. */
static void deaf_driver(evl_t *l, void *arg) {
  (void)l;
  (void)arg;
  while (!atomic_load(&drv_release)) t_sleep_ms(1);
}

static void stop_in_cb(evl_t *l, void *arg, int status) {
  if (status != 0) return;
  *(pthread_t *)arg = pthread_self();
  CHECK_EQ(evl_stop(l), 0);
}

static void test_on_stop(gvl_t *g) {
  evl_config_t cfg;
  evl_t *l;
  pthread_t loop_thread;
  memset(&cfg, 0, sizeof cfg);
  cfg.on_stop = on_stop_hook;
  /* From another thread, with a driver only the hook can end. */
  cfg.driver = deaf_driver;
  atomic_store(&hook_calls, 0);
  atomic_store(&drv_release, 0);
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_stop(l), 0);   /* returns: the hook released the driver */
  CHECK_EQ(atomic_load(&hook_calls), 1);
  CHECK(pthread_equal(hook_thread, pthread_self()));
  CHECK_EQ(atomic_load(&hook_saw_stopping), 1);
  CHECK_EQ(evl_stop(l), 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&hook_calls), 1);
  /* From a callback: on the loop thread. */
  cfg.driver = NULL;
  atomic_store(&hook_calls, 0);
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_post(l, stop_in_cb, &loop_thread, NULL), 0);
  t_wait_ge(&hook_calls, 1);
  CHECK(pthread_equal(hook_thread, loop_thread));
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&hook_calls), 1);
  /* By evl_destroy. */
  atomic_store(&hook_calls, 0);
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&hook_calls), 1);
  CHECK(pthread_equal(hook_thread, pthread_self()));
  /* A driver that returns by itself ends the loop: no hook. */
  cfg.driver = deaf_driver;
  atomic_store(&hook_calls, 0);
  atomic_store(&drv_release, 1);
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  while (!evl_stopping(l)) t_sleep_ms(1);   /* set by the loop's end */
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&hook_calls), 0);
}

int main(void) {
  gvl_t *g = t_gvl();
  for (int attached = 0; attached < 2; attached++)
    for (int destroy = 0; destroy < 2; destroy++)
      test_stop_from_nested_run(g, attached, destroy);
  test_on_stop(g);
  test_race_stop(g);
  test_stop_everything(g);
  test_concurrent_stop(g);
  test_interrupt_kept(g, 0);
  test_interrupt_kept(g, 1);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_stop ok");
  return 0;
}
