/* SPDX-License-Identifier: MIT */
/* Timers: one-shot, repeating, cancel before and after firing, a timer
 * cancelling itself, ordering by due time (also of timers already due when
 * armed), stop with timers armed. */
#include "evl_test.h"

static atomic_int fired, cancelled, other;
static void count_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK(t_holds(l));
  if (status == 0) atomic_fetch_add(&fired, 1);
  else if (status == ECANCELED) atomic_fetch_add(&cancelled, 1);
  else atomic_fetch_add(&other, 1);
}

static void reset(void) {
  atomic_store(&fired, 0);
  atomic_store(&cancelled, 0);
  atomic_store(&other, 0);
}

static void test_one_shot(gvl_t *g) {
  evl_t *l = t_loop(g);
  evl_id_t id;
  reset();
  CHECK_EQ(evl_timer(l, 1, 0, 0, count_cb, NULL, &id), 0);
  CHECK(id != 0);
  CHECK_EQ(evl_timer(l, 0, 0, 0, count_cb, NULL, NULL), 0);
  t_wait_ge(&fired, 2);
  t_sleep_ms(20);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&fired), 2);
  CHECK_EQ(atomic_load(&cancelled), 0);
}

static void test_repeat_and_cancel(gvl_t *g) {
  evl_t *l = t_loop(g);
  evl_id_t id, far;
  int after;
  reset();
  CHECK_EQ(evl_timer(l, 1, 1, 0, count_cb, NULL, &id), 0);
  CHECK_EQ(evl_timer(l, 3600000, 0, 0, count_cb, NULL, &far), 0);
  t_wait_ge(&fired, 5);
  CHECK_EQ(evl_cancel(l, id), 0);
  CHECK_EQ(evl_cancel(l, far), 0);
  CHECK_EQ(evl_cancel(l, id), EVL_ENOREG);
  t_wait_ge(&cancelled, 2);
  after = atomic_load(&fired);
  t_sleep_ms(20);
  /* No tick after the cancel's last call. */
  CHECK_EQ(atomic_load(&fired), after);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&cancelled), 2);
  CHECK_EQ(atomic_load(&other), 0);
}

/* A repeating timer that cancels itself from its third tick. */
static atomic_int self_ticks, self_final;
static evl_id_t self_id;
static void self_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  if (status == ECANCELED) {
    CHECK_EQ(atomic_load(&self_final), 0);
    atomic_fetch_add(&self_final, 1);
    return;
  }
  CHECK_EQ(status, 0);
  CHECK_EQ(atomic_load(&self_final), 0);
  if (atomic_fetch_add(&self_ticks, 1) + 1 == 3) {
    CHECK_EQ(evl_cancel(l, self_id), 0);
    CHECK_EQ(evl_cancel(l, self_id), EVL_ENOREG);
  }
}

static void test_self_cancel(gvl_t *g) {
  evl_t *l = t_loop(g);
  CHECK_EQ(evl_timer(l, 1, 1, 0, self_cb, NULL, &self_id), 0);
  t_wait_ge(&self_final, 1);
  t_sleep_ms(10);
  CHECK_EQ(atomic_load(&self_ticks), 3);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&self_final), 1);
}

/* Timers due at different times fire in due order.  Each counts from its
 * own evl_timer call, so the order expected is that of the calls' clock
 * stamps plus their delays (a stall of 100 ms between two calls changes
 * it); arg is the timer's index, seq_rank its place in that order. */
static atomic_int seq, seq_bad;
static int seq_rank[4];
static void seq_cb(evl_t *l, void *arg, int status) {
  (void)l;
  CHECK_EQ(status, 0);
  if (atomic_fetch_add(&seq, 1) != seq_rank[(intptr_t)arg])
    atomic_store(&seq_bad, 1);
}

static void test_order(gvl_t *g) {
  evl_t *l = t_loop(g);
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  /* Registered while the test holds the GVL so all are armed before the
   * first can run; libuv runs due timers by due time. */
  CHECK_EQ(gvl_acquire(me), 0);
  /* Wide gaps: the loop may arm them in separate drains, a scheduler
   * delay apart. */
  static const uint64_t delay_ms[3] = {200, 1, 100};
  uint64_t due[3];
  int close_dues = 0;
  for (intptr_t i = 0; i < 3; i++) {
    due[i] = gvl_now_ns() + delay_ms[i] * 1000000u;
    CHECK_EQ(evl_timer(l, delay_ms[i], 0, 0, seq_cb, (void *)i, NULL), 0);
  }
  for (int i = 0; i < 3; i++) {
    seq_rank[i] = 0;
    for (int j = 0; j < 3; j++) {
      if (due[j] < due[i]) seq_rank[i]++;
      /* within libuv's millisecond, the order is registration's */
      if (j != i && (due[j] > due[i] ? due[j] - due[i] : due[i] - due[j]) < 5000000u)
        close_dues = 1;
    }
  }
  CHECK_EQ(gvl_release(me), 0);   /* the timers' callbacks need the GVL */
  t_wait_ge(&seq, 3);
  if (!close_dues) CHECK_EQ(atomic_load(&seq_bad), 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
}

/* Timers armed when both are already due still run in due order: a timer
 * of 20 ms made before one of 0 ms, while the loop thread is busy in a
 * callback for longer than both, runs second.  (libuv alone would run two
 * timers armed with timeout 0 in the order they were armed.) */
static atomic_int late_go, late_in;
static void late_block_cb(evl_t *l, void *arg, int status) {
  (void)l; (void)arg; (void)status;
  atomic_store(&late_in, 1);
  while (!atomic_load(&late_go)) t_sleep_ms(1);
}

/* One round.  As in test_order, the order expected comes from clock
 * stamps around each call; 0 if a stall between the calls left two dues
 * within 2 ms of each other (their order is then not known). */
static int order_late_round(gvl_t *g) {
  static const uint64_t delay_ms[4] = {20, 30, 0, 5};
  uint64_t lo[4], hi[4];
  evl_t *l = t_loop(g);
  atomic_store(&seq, 0);
  atomic_store(&seq_bad, 0);
  atomic_store(&late_in, 0);
  atomic_store(&late_go, 0);
  CHECK_EQ(evl_post_flags(l, late_block_cb, NULL, EVL_F_NOGVL, NULL), 0);
  while (!atomic_load(&late_in)) t_sleep_ms(1);
  for (intptr_t i = 0; i < 4; i++) {
    lo[i] = gvl_now_ns() + delay_ms[i] * 1000000u;
    CHECK_EQ(evl_timer(l, delay_ms[i], 0, 0, seq_cb, (void *)i, NULL), 0);
    hi[i] = gvl_now_ns() + delay_ms[i] * 1000000u;
  }
  int known = 1;
  for (int i = 0; i < 4; i++) {
    seq_rank[i] = 0;
    for (int j = 0; j < 4; j++) {
      if (j == i) continue;
      if (hi[j] + 2000000u <= lo[i]) seq_rank[i]++;        /* j surely first */
      else if (!(hi[i] + 2000000u <= lo[j])) known = 0;    /* too close */
    }
  }
  t_sleep_ms(60);                 /* all due before the loop arms them */
  atomic_store(&late_go, 1);
  t_wait_ge(&seq, 4);
  if (known) CHECK_EQ(atomic_load(&seq_bad), 0);
  CHECK_EQ(evl_destroy(l), 0);
  return known;
}

static void test_order_late(gvl_t *g) {
  for (int i = 0; i < 5; i++)
    if (order_late_round(g)) return;
  printf("order_late: inconclusive: every round had a stall between its "
         "timer calls\n");
}

/* ... and when armed in different passes: a timer of 200 ms is armed, the
 * loop thread is then kept busy past its due time, and one of 5 ms made
 * meanwhile, armed only after the stretch, runs first.  (libuv alone would
 * run the second at its arming, after the first's due time.)  The calls'
 * stamps settle the order; a round where the test thread was held off
 * between them for longer than the gap runs again. */
static void test_order_drains(gvl_t *g) {
  static const uint64_t delay_ms[2] = {200, 5};
  for (int round = 0;; round++) {
    evl_t *l = t_loop(g);
    uint64_t due[2][2];            /* [timer][before, after the call] */
    atomic_store(&seq, 0);
    atomic_store(&seq_bad, 0);
    atomic_store(&late_in, 0);
    atomic_store(&late_go, 0);
    for (intptr_t i = 0; i < 2; i++) {
      if (i == 1) {
        /* The first is armed in the pass that starts this post, before
         * the post runs. */
        CHECK_EQ(evl_post_flags(l, late_block_cb, NULL, EVL_F_NOGVL, NULL), 0);
        while (!atomic_load(&late_in)) t_sleep_ms(1);
      }
      due[i][0] = gvl_now_ns() + delay_ms[i] * 1000000u;
      CHECK_EQ(evl_timer(l, delay_ms[i], 0, 0, seq_cb, (void *)i, NULL), 0);
      due[i][1] = gvl_now_ns() + delay_ms[i] * 1000000u;
    }
    int settled = due[1][1] + 2000000u < due[0][0];
    seq_rank[0] = 1;
    seq_rank[1] = 0;
    t_sleep_ms(250);               /* both due before the second is armed */
    atomic_store(&late_go, 1);
    t_wait_ge(&seq, 2);
    CHECK_EQ(evl_destroy(l), 0);
    if (settled) {
      CHECK_EQ(atomic_load(&seq_bad), 0);
      return;
    }
    CHECK(round < 10);
  }
}

static atomic_int nogvl_final;
static void nogvl_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK(!t_holds(l));
  CHECK_EQ(status, ECANCELED);
  atomic_fetch_add(&nogvl_final, 1);
}

static void test_stop_with_armed(gvl_t *g) {
  evl_t *l = t_loop(g);
  int i;
  reset();
  for (i = 0; i < 50; i++)
    CHECK_EQ(evl_timer(l, 3600000, i % 2 ? 1000 : 0, 0, count_cb, NULL, NULL), 0);
  CHECK_EQ(evl_timer(l, 3600000, 0, EVL_F_NOGVL, nogvl_cb, NULL, NULL), 0);
  CHECK_EQ(evl_stop(l), 0);
  CHECK_EQ(atomic_load(&cancelled), 50);
  CHECK_EQ(atomic_load(&nogvl_final), 1);
  CHECK_EQ(atomic_load(&fired), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

/* A timer taken for dispatch waits behind the callbacks already waiting
 * for it (evloop.h, evl_timer).  With the loop thread waiting for the
 * GVL held here (t_held_loop), the posts and a due timer made meanwhile
 * are taken in at its next pass, and with a budget of one callback per
 * pass, each taking a millisecond, the timer fires while most posts still
 * wait for dispatch: all posts run first, in order, then the timer. */
#define NBACK 32
static atomic_int back_next, back_bad, timer_at;
static void back_cb(evl_t *l, void *arg, int status) {
  (void)l;
  CHECK_EQ(status, 0);
  if ((int)(intptr_t)arg != atomic_fetch_add(&back_next, 1))
    atomic_store(&back_bad, 1);
  t_sleep_ms(1);   /* the timer is due long before the last post has run */
}
static void backlog_timer_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_store(&timer_at, atomic_load(&back_next));
}

static void test_behind_backlog(gvl_t *g) {
  evl_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.budget_count = 1;   /* a uv_run pass, where the timer fires, per post */
  atomic_store(&back_next, 0);
  atomic_store(&timer_at, -1);
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(me != NULL);
  evl_t *l = t_held_loop(g, me, &cfg);
  for (int i = 0; i < NBACK; i++)
    CHECK_EQ(evl_post(l, back_cb, (void *)(intptr_t)i, NULL), 0);
  CHECK_EQ(evl_timer(l, 0, 0, 0, backlog_timer_cb, NULL, NULL), 0);
  CHECK_EQ(atomic_load(&back_next), 0);   /* nothing ran meanwhile */
  CHECK_EQ(gvl_release(me), 0);
  while (atomic_load(&timer_at) < 0) t_sleep_ms(1);
  CHECK_EQ(atomic_load(&timer_at), NBACK);
  CHECK_EQ(atomic_load(&back_bad), 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
}

int main(void) {
  gvl_t *g = t_gvl();
  test_one_shot(g);
  test_repeat_and_cancel(g);
  test_self_cancel(g);
  test_order(g);
  test_order_late(g);
  test_order_drains(g);
  test_stop_with_armed(g);
  test_behind_backlog(g);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_timer ok");
  return 0;
}
