/* SPDX-License-Identifier: MIT */
/*
 * evl_test.h -- helpers shared by the evloop tests.
 *
 * Checks print where they failed and exit(1).  Waits poll a condition with
 * a very long bound (the ctest TIMEOUT is the real guard); no test asserts
 * a duration.
 */
#ifndef EVL_TEST_H
#define EVL_TEST_H

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evloop.h"

#define CHECK(c)                                                       \
  do {                                                                 \
    if (!(c)) {                                                        \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
              #c);                                                     \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

#define CHECK_EQ(a, b)                                                     \
  do {                                                                     \
    long long va_ = (long long)(a), vb_ = (long long)(b);                  \
    if (va_ != vb_) {                                                      \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n",  \
              __FILE__, __LINE__, #a, va_, #b, vb_);                       \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

static inline void t_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Wait until an atomic counter reaches at least n (bounded: 60 s). */
static inline void t_wait_ge(atomic_int *v, int n) {
  int i;
  for (i = 0; i < 60000 && atomic_load(v) < n; i++) t_sleep_ms(1);
  if (atomic_load(v) < n) {
    fprintf(stderr, "timed out waiting for %d (have %d)\n", n,
            atomic_load(v));
    exit(1);
  }
}

static inline gvl_t *t_gvl(void) {
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  return g;
}

static inline evl_t *t_loop(gvl_t *g) {
  evl_t *l = evl_start(g, NULL);
  CHECK(l != NULL);
  return l;
}

/* A callback that counts its calls with status 0 in the atomic_int at arg. */
static inline void t_count_ok(evl_t *l, void *arg, int status) {
  (void)l;
  if (status == 0) atomic_fetch_add((atomic_int *)arg, 1);
}

/* The GVL state a callback runs in. */
static inline int t_holds(evl_t *l) {
  return gvl_thread_holds(evl_gvl_thread(l));
}

/* The order of one-shot calls, each named by the first letter of its arg
 * (t_order_cb is the callback): the first three letters, and n, the calls
 * whose letter is in (read n first). */
typedef struct {
  char s[4];
  atomic_int claimed, n;
} t_order_t;

static inline t_order_t *t_order(void) {
  static t_order_t o;
  return &o;
}

static inline void t_order_reset(void) {
  t_order_t *o = t_order();
  atomic_store(&o->n, 0);
  atomic_store(&o->claimed, 0);
  memset(o->s, 0, sizeof o->s);
}

static inline void t_order_cb(evl_t *l, void *arg, int status) {
  t_order_t *o = t_order();
  (void)l;
  CHECK_EQ(status, 0);
  int i = atomic_fetch_add(&o->claimed, 1);
  if (i < 3) o->s[i] = *(const char *)arg;
  atomic_fetch_add(&o->n, 1);
}

static inline void t_taken_cb(evl_t *l, evl_id_t id, void *arg) {
  (void)l;
  (void)id;
  atomic_fetch_add((atomic_int *)arg, 1);
}

static inline void t_noop_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  CHECK(status == 0 || status == ECANCELED);   /* a stop may come first */
}

/* A loop started with cfg (NULL: defaults; its on_ready is taken) whose
 * thread has taken in a post and waits for the GVL, which me then holds,
 * to run it: it takes in nothing new until me releases the GVL. */
static inline evl_t *t_held_loop(gvl_t *g, gvl_thread_t *me,
                                 const evl_config_t *cfg) {
  static atomic_int taken;
  evl_config_t c;
  if (cfg != NULL) c = *cfg;
  else memset(&c, 0, sizeof c);
  atomic_store(&taken, 0);
  c.on_ready = t_taken_cb;
  c.on_ready_arg = &taken;
  evl_t *l = evl_start(g, &c);
  CHECK(l != NULL);
  CHECK_EQ(gvl_acquire(me), 0);
  CHECK_EQ(evl_post(l, t_noop_cb, NULL, NULL), 0);
  t_wait_ge(&taken, 1);
  return l;
}

#endif /* EVL_TEST_H */
