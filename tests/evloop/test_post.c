/* SPDX-License-Identifier: MIT */
/* evl_post: order, GVL state, 8 submitting threads with exact counts,
 * cancellation, the dispatch budget, bad arguments. */
#include <sched.h>
#include <pthread.h>

#include "evl_test.h"

#define NTHREADS 8
#define PER_THREAD 5000

static atomic_int calls[NTHREADS * PER_THREAD];
static atomic_int total, bad_gvl, order_ok = 1, next_expected;

static void count_cb(evl_t *l, void *arg, int status) {
  CHECK_EQ(status, 0);
  if (!t_holds(l)) atomic_fetch_add(&bad_gvl, 1);
  atomic_fetch_add(&calls[(intptr_t)arg], 1);
  atomic_fetch_add(&total, 1);
}

typedef struct {
  evl_t *l;
  int base;
  atomic_int *go;
} submitter_t;

static void *submit_main(void *p) {
  submitter_t *s = p;
  int i;
  while (!atomic_load(s->go)) sched_yield();
  for (i = 0; i < PER_THREAD; i++)
    CHECK_EQ(evl_post(s->l, count_cb, (void *)(intptr_t)(s->base + i), NULL),
             0);
  return NULL;
}

static void test_many_threads(gvl_t *g) {
  evl_t *l = t_loop(g);
  pthread_t th[NTHREADS];
  submitter_t s[NTHREADS];
  atomic_int go = 0;
  int i;
  for (i = 0; i < NTHREADS; i++) {
    s[i].l = l;
    s[i].base = i * PER_THREAD;
    s[i].go = &go;
    CHECK_EQ(pthread_create(&th[i], NULL, submit_main, &s[i]), 0);
  }
  atomic_store(&go, 1);
  for (i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  t_wait_ge(&total, NTHREADS * PER_THREAD);
  CHECK_EQ(evl_destroy(l), 0);
  for (i = 0; i < NTHREADS * PER_THREAD; i++) CHECK_EQ(atomic_load(&calls[i]), 1);
  CHECK_EQ(atomic_load(&total), NTHREADS * PER_THREAD);
  CHECK_EQ(atomic_load(&bad_gvl), 0);
}

static void order_cb(evl_t *l, void *arg, int status) {
  (void)l;
  CHECK_EQ(status, 0);
  if ((intptr_t)arg != atomic_load(&next_expected)) atomic_store(&order_ok, 0);
  atomic_fetch_add(&next_expected, 1);
}

static atomic_int nogvl_calls, nogvl_bad;
static void nogvl_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  if (t_holds(l)) atomic_fetch_add(&nogvl_bad, 1);
  if (!evl_in_loop_thread(l)) atomic_fetch_add(&nogvl_bad, 1);
  atomic_fetch_add(&nogvl_calls, 1);
}

static void test_order_and_flags(gvl_t *g) {
  evl_t *l = t_loop(g);
  int i;
  for (i = 0; i < 1000; i++) {
    CHECK_EQ(evl_post(l, order_cb, (void *)(intptr_t)i, NULL), 0);
    /* Interleave callbacks that run without the GVL: order is kept. */
    CHECK_EQ(evl_post_flags(l, nogvl_cb, NULL, EVL_F_NOGVL, NULL), 0);
  }
  t_wait_ge(&nogvl_calls, 1000);
  t_wait_ge(&next_expected, 1000);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&next_expected), 1000);
  CHECK_EQ(atomic_load(&order_ok), 1);
  CHECK_EQ(atomic_load(&nogvl_calls), 1000);
  CHECK_EQ(atomic_load(&nogvl_bad), 0);
}

/* Cancellation made deterministic: the test thread holds the GVL (and
 * passes no safe point), so the loop cannot run a host callback until it
 * releases. */
static atomic_int st_ok[200], st_cancel[200], st_other;
static void status_cb(evl_t *l, void *arg, int status) {
  intptr_t i = (intptr_t)arg;
  (void)l;
  if (status == 0) atomic_fetch_add(&st_ok[i], 1);
  else if (status == ECANCELED) atomic_fetch_add(&st_cancel[i], 1);
  else atomic_fetch_add(&st_other, 1);
}

static void test_cancel(gvl_t *g) {
  evl_t *l = t_loop(g);
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  evl_id_t ids[200];
  evl_stats_t st;
  int i;
  CHECK(me != NULL);
  CHECK_EQ(gvl_acquire(me), 0);
  for (i = 0; i < 200; i++)
    CHECK_EQ(evl_post(l, status_cb, (void *)(intptr_t)i, &ids[i]), 0);
  for (i = 0; i < 200; i++) CHECK(ids[i] != 0);
  for (i = 0; i < 200; i += 2) CHECK_EQ(evl_cancel(l, ids[i]), 0);
  for (i = 0; i < 200; i += 2) CHECK_EQ(evl_cancel(l, ids[i]), EVL_ENOREG);
  CHECK_EQ(gvl_release(me), 0);
  /* Stop from a thread that holds the GVL: it is released while waiting. */
  CHECK_EQ(gvl_acquire(me), 0);
  CHECK_EQ(evl_stop(l), 0);
  CHECK(gvl_thread_holds(me));
  CHECK_EQ(gvl_release(me), 0);
  for (i = 0; i < 200; i++) {
    CHECK_EQ(atomic_load(&st_ok[i]) + atomic_load(&st_cancel[i]), 1);
    if (i % 2 == 0) CHECK_EQ(atomic_load(&st_cancel[i]), 1);
  }
  CHECK_EQ(atomic_load(&st_other), 0);
  for (i = 1; i < 200; i += 2) CHECK_EQ(evl_cancel(l, ids[i]), EVL_ENOREG);
  CHECK_EQ(evl_cancel(l, 0), EINVAL);
  CHECK_EQ(evl_cancel(l, 999999), EVL_ENOREG);
  CHECK_EQ(evl_stats(l, &st), 0);
  CHECK_EQ(st.live, 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
}

static atomic_int budget_calls;
static void budget_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_fetch_add(&budget_calls, 1);
}

static void test_budget(gvl_t *g) {
  evl_config_t cfg = {0};
  evl_t *l;
  evl_stats_t st;
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  int i;
  cfg.budget_count = 1;
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  /* Queue them all while holding the GVL so that they are ready together. */
  CHECK_EQ(gvl_acquire(me), 0);
  for (i = 0; i < 100; i++) CHECK_EQ(evl_post(l, budget_cb, NULL, NULL), 0);
  CHECK_EQ(gvl_release(me), 0);
  t_wait_ge(&budget_calls, 100);
  CHECK_EQ(evl_stats(l, &st), 0);
  /* One callback per acquisition. */
  CHECK(st.acquisitions >= 100);
  CHECK(st.dispatched >= 100);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
}

static atomic_int gate_calls;

static void gate_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_fetch_add(&gate_calls, 1);
}

/* The count budget is per dispatch pass and counts callbacks that run
 * without the GVL too: 100 EVL_F_NOGVL callbacks ready together under a
 * budget of 1 take 100 passes, each but the last cut short. */
static void test_budget_nogvl(gvl_t *g) {
  evl_config_t cfg = {0};
  evl_stats_t st;
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  cfg.budget_count = 1;
  evl_t *l = evl_start(g, &cfg);
  CHECK(l != NULL);
  atomic_store(&budget_calls, 0);
  /* The gate needs the GVL, held here, so the loop waits on it while the
   * others are posted. */
  CHECK_EQ(gvl_acquire(me), 0);
  CHECK_EQ(evl_post(l, gate_cb, NULL, NULL), 0);
  for (int i = 0; i < 100; i++)
    CHECK_EQ(evl_post_flags(l, budget_cb, NULL, EVL_F_NOGVL, NULL), 0);
  CHECK_EQ(gvl_release(me), 0);
  t_wait_ge(&budget_calls, 100);
  CHECK_EQ(atomic_load(&gate_calls), 1);
  CHECK_EQ(evl_stats(l, &st), 0);
  CHECK(st.budget_hits >= 99);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
}

static void test_bad_args(gvl_t *g) {
  evl_t *l = t_loop(g);
  evl_id_t id = 0;
  CHECK_EQ(evl_post(NULL, budget_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_post(l, NULL, NULL, &id), EINVAL);
  CHECK_EQ(evl_post_flags(l, budget_cb, NULL, 0x80, &id), EINVAL);
  CHECK_EQ(evl_post_flags(NULL, budget_cb, NULL, 0, &id), EINVAL);
  CHECK_EQ(id, 0);
  CHECK_EQ(evl_cancel(NULL, 1), EINVAL);
  CHECK_EQ(evl_destroy(l), 0);
}

int main(void) {
  gvl_t *g = t_gvl();
  test_bad_args(g);
  test_order_and_flags(g);
  test_many_threads(g);
  test_cancel(g);
  test_budget(g);
  test_budget_nogvl(g);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_post ok");
  return 0;
}
