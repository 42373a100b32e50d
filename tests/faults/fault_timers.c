/* SPDX-License-Identifier: MIT */
/*
 * A timer flood: 100,000 timers.
 *   1. 100,000 one-shot timers (0..20 ms) from 4 threads, every 10th
 *      cancelled by its owner, 1,000 repeating timers cancelled after their
 *      first tick: each one-shot gets exactly one call (0, or ECANCELED iff
 *      its cancel returned 0), each repeating one ends with one ECANCELED;
 *      no timer fires before its timeout (a lower bound only: never an
 *      upper one).
 *   0. a timer armed while the loop thread is busy in a long callback does
 *      not fire before its timeout.
 *   2. 100,000 timers armed for an hour, then evl_destroy: each gets exactly
 *      one ECANCELED and the loop's live count goes to zero.
 */
#include "flt.h"

#define NFLOOD 100000L
#define NTHREADS 4
#define PER (NFLOOD / NTHREADS)
#define NREPEAT 1000

typedef struct {
  uint64_t armed_ns;
  uint32_t timeout_ms;
  unsigned char calls, ok, cancelled, want_cancel, early;
} tslot_t;

static tslot_t *slots;
static atomic_long done, early, max_early_us;

static void one_cb(evl_t *l, void *arg, int status) {
  tslot_t *s = arg;
  (void)l;
  s->calls++;
  if (status == 0) {
    /* libuv's clock has 1 ms resolution: allow 1 ms. */
    uint64_t now = gvl_now_ns(), due = s->armed_ns + s->timeout_ms * 1000000ull;
    if (now + 1000000ull < due) {
      long us = (long)((due - now) / 1000);
      atomic_fetch_add(&early, 1);
      if (us > atomic_load(&max_early_us)) atomic_store(&max_early_us, us);
    }
    s->ok++;
  } else {
    CHECK_EQ(status, ECANCELED);
    s->cancelled++;
  }
  atomic_fetch_add(&done, 1);
}

typedef struct {
  evl_t *l;
  int idx;
} arm_t;

static void *armer(void *arg) {
  arm_t *a = arg;
  long i;
  unsigned seed = (unsigned)a->idx * 7919u + 1u;
  for (i = 0; i < PER; i++) {
    long n = (long)a->idx * PER + i;
    tslot_t *s = &slots[n];
    evl_id_t id;
    seed = seed * 1103515245u + 12345u;
    s->timeout_ms = (seed >> 16) % 21;
    s->armed_ns = gvl_now_ns();
    CHECK_OK(evl_timer(a->l, s->timeout_ms, 0, 0, one_cb, s, &id));
    if (i % 10 == 3) {
      int r = evl_cancel(a->l, id);
      if (r == 0) s->want_cancel = 1;
      else CHECK_EQ(r, EVL_ENOREG);
    }
  }
  return NULL;
}

static atomic_long rep_ticks, rep_last, rep_bad;
static evl_id_t rep_ids[NREPEAT];
static atomic_int rep_tick_seen[NREPEAT];

static void rep_cb(evl_t *l, void *arg, int status) {
  long i = (long)(intptr_t)arg;
  (void)l;
  if (status == 0) {
    atomic_fetch_add(&rep_ticks, 1);
    atomic_store(&rep_tick_seen[i], 1);
  } else {
    if (status != ECANCELED) atomic_fetch_add(&rep_bad, 1);
    atomic_fetch_add(&rep_last, 1);
  }
}

static void phase_flood(gvl_t *g) {
  evl_t *l = evl_start(g, NULL);
  pthread_t th[NTHREADS];
  arm_t a[NTHREADS];
  evl_stats_t st;
  long i, ok = 0, canc = 0;
  CHECK(l != NULL);
  for (i = 0; i < NREPEAT; i++)
    CHECK_OK(evl_timer(l, 1 + (uint64_t)(i % 5), 1, 0, rep_cb,
                       (void *)(intptr_t)i, &rep_ids[i]));
  for (i = 0; i < NTHREADS; i++) {
    a[i].l = l;
    a[i].idx = (int)i;
    flt_spawn(&th[i], armer, &a[i]);
  }
  for (i = 0; i < NREPEAT; i++) {
    while (!atomic_load(&rep_tick_seen[i])) flt_sleep_us(500);
    CHECK_OK(evl_cancel(l, rep_ids[i]));
    CHECK_EQ(evl_cancel(l, rep_ids[i]), EVL_ENOREG);
  }
  for (i = 0; i < NTHREADS; i++) flt_join(th[i]);
  while (atomic_load(&done) < NFLOOD) flt_sleep_us(1000);
  while (atomic_load(&rep_last) < NREPEAT) flt_sleep_us(1000);
  /* The loop counts a callback as done once it has returned: stopped, the
   * loop thread is past its last. */
  CHECK_OK(evl_stop(l));
  CHECK_OK(evl_stats(l, &st));
  CHECK_EQ(st.live, 0);
  CHECK_OK(evl_destroy(l));
  for (i = 0; i < NFLOOD; i++) {
    CHECK_EQ(slots[i].calls, 1);
    CHECK_EQ(slots[i].cancelled, slots[i].want_cancel);
    ok += slots[i].ok;
    canc += slots[i].cancelled;
  }
  CHECK_EQ(ok + canc, NFLOOD);
  if (atomic_load(&early) != 0)
    fprintf(stderr, "%ld timers fired early, by up to %ld us\n",
            atomic_load(&early), atomic_load(&max_early_us));
  CHECK_EQ(atomic_load(&early), 0);
  CHECK_EQ(atomic_load(&rep_last), NREPEAT);
  CHECK_EQ(atomic_load(&rep_bad), 0);
  CHECK_GE(atomic_load(&rep_ticks), NREPEAT);
  CHECK_EQ(st.cancelled, (uint64_t)canc + NREPEAT);
  printf("flood: %ld fired, %ld cancelled, %ld repeating ticks\n", ok, canc,
         atomic_load(&rep_ticks));
}

/* A timer registered while the loop thread is busy in a long callback must
 * still wait its full timeout from the registration (libuv's cached loop
 * time must not be used stale). */
static atomic_long gate_in, gate_go, late_fired;
static uint64_t late_armed, late_fire;
static void gate_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_store(&gate_in, 1);
  flt_wait_ge(&gate_go, 1);
}
static void late_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  CHECK_EQ(status, 0);
  late_fire = gvl_now_ns();
  atomic_store(&late_fired, 1);
}

static void phase_stale_clock(gvl_t *g) {
  evl_t *l = evl_start(g, NULL);
  CHECK(l != NULL);
  CHECK_OK(evl_post_flags(l, gate_cb, NULL, EVL_F_NOGVL, NULL));
  flt_wait_ge(&gate_in, 1);
  flt_sleep_us(60000);   /* the loop thread is busy; builds up staleness */
  late_armed = gvl_now_ns();
  CHECK_OK(evl_timer(l, 40, 0, 0, late_cb, NULL, NULL));
  atomic_store(&gate_go, 1);
  flt_wait_ge(&late_fired, 1);
  CHECK_OK(evl_destroy(l));
  if (late_fire + 1000000ull < late_armed + 40000000ull)
    fprintf(stderr, "a 40 ms timer fired after %llu us\n",
            (unsigned long long)((late_fire - late_armed) / 1000));
  CHECK_GE(late_fire + 1000000ull, late_armed + 40000000ull);
}

static atomic_long hour_calls, hour_cancelled;
static void hour_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == ECANCELED) atomic_fetch_add(&hour_cancelled, 1);
  atomic_fetch_add(&hour_calls, 1);
}

static void phase_destroy_armed(gvl_t *g) {
  evl_t *l = evl_start(g, NULL);
  evl_stats_t st;
  long i;
  CHECK(l != NULL);
  for (i = 0; i < NFLOOD; i++)
    CHECK_OK(evl_timer(l, 3600 * 1000, (uint64_t)(i & 1) * 1000, 0, hour_cb,
                       NULL, NULL));
  CHECK_OK(evl_stop(l));
  CHECK_OK(evl_stats(l, &st));
  CHECK_EQ(st.live, 0);
  CHECK_EQ(st.cancelled, (uint64_t)NFLOOD);
  CHECK_OK(evl_destroy(l));
  CHECK_EQ(atomic_load(&hour_calls), NFLOOD);
  CHECK_EQ(atomic_load(&hour_cancelled), NFLOOD);
}

int main(void) {
  gvl_t *g;
  flt_watchdog(300);
  slots = calloc((size_t)NFLOOD, sizeof *slots);
  CHECK(slots != NULL);
  g = flt_gvl();
  phase_stale_clock(g);
  phase_flood(g);
  phase_destroy_armed(g);
  CHECK_OK(gvl_destroy(g));
  free(slots);
  printf("fault_timers: ok\n");
  return 0;
}
