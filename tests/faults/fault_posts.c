/* SPDX-License-Identifier: MIT */
/*
 * 1,000,000 posts from 8 threads with exact accounting, while a hog thread
 * holds the GVL and passes safe points, and the posting threads cancel some
 * of their own posts.  A sanitizer run (FLT_SLOW=4) makes a quarter as many:
 * TSan took five minutes over the full count.
 *
 * Checked: every post gets exactly one call; a post whose evl_cancel
 * returned 0 gets ECANCELED, one whose cancel said EVL_ENOREG ran with 0 (or was
 * never cancelled); the posts of one thread run in the order posted; every
 * callback with status 0 runs holding the GVL on the loop thread; the
 * loop's counters add up exactly; ids are unique and never 0.
 *
 * Each thread keeps at most WINDOW posts outstanding so that memory stays
 * bounded on a slow (sanitizer) run.
 */
#include <sched.h>

#include "flt.h"

#define NTHREADS 8
#define TOTAL_FULL 1000000L
#define WINDOW 20000L

static long total, per_thread; /* set in main before any thread starts */

typedef struct {
  evl_t *l;
  int idx;
  long last_seq;        /* loop thread only: last seq run with status 0 */
  atomic_long done;     /* calls made (any status) */
  atomic_long ok, cancelled;
  long cancel_ok, cancel_enoent;   /* poster's own view */
  long order_bad;
} poster_t;

static unsigned char *seen;       /* one byte per post: calls made */
static unsigned char *want_cancel; /* 1 if evl_cancel returned 0 */
static unsigned char *got_cancel;  /* 1 if the call had ECANCELED */
static poster_t posters[NTHREADS];
static atomic_long bad_gvl, go, hog_stop, hog_checks;

static void post_cb(evl_t *l, void *arg, int status) {
  long n = (long)(intptr_t)arg;
  poster_t *p = &posters[n / per_thread];
  long seq = n % per_thread;
  seen[n]++;
  if (status == 0) {
    if (!flt_holds(l) || !evl_in_loop_thread(l)) atomic_fetch_add(&bad_gvl, 1);
    if (seq <= p->last_seq) p->order_bad++;
    p->last_seq = seq;
    atomic_fetch_add(&p->ok, 1);
  } else {
    CHECK_EQ(status, ECANCELED);
    got_cancel[n] = 1;
    atomic_fetch_add(&p->cancelled, 1);
  }
  atomic_fetch_add(&p->done, 1);
}

static void *poster_main(void *arg) {
  poster_t *p = arg;
  long i;
  evl_id_t prev = 0;
  while (!atomic_load(&go)) sched_yield();
  for (i = 0; i < per_thread; i++) {
    long n = (long)p->idx * per_thread + i;
    evl_id_t id = 0;
    while (i - atomic_load(&p->done) > WINDOW) flt_sleep_us(100);
    CHECK_OK(evl_post(p->l, post_cb, (void *)(intptr_t)n, &id));
    CHECK_NE(id, 0);
    CHECK_NE(id, prev);
    prev = id;
    if (i % 16 == 7) {
      /* Cancel our own post: either it had not run (0: it gets ECANCELED)
       * or it had (EVL_ENOREG).  want_cancel is read only after the joins. */
      int r = evl_cancel(p->l, id);
      if (r == 0) {
        want_cancel[n] = 1;
        p->cancel_ok++;
      } else {
        CHECK_EQ(r, EVL_ENOREG);
        p->cancel_enoent++;
      }
      CHECK_EQ(evl_cancel(p->l, id), EVL_ENOREG);
    }
  }
  return NULL;
}

static void *hog_main(void *arg) {
  gvl_t *g = arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  while (!atomic_load(&hog_stop)) {
    volatile unsigned x = 0;
    unsigned i;
    for (i = 0; i < 300; i++) x = x * 33u + i;
    CHECK_OK(gvl_check_ints(t));
    atomic_fetch_add(&hog_checks, 1);
  }
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

int main(void) {
  gvl_t *g;
  evl_t *l;
  pthread_t th[NTHREADS], hog;
  evl_stats_t st;
  evl_config_t cfg;
  long i, ok = 0, canc = 0, cok = 0, late = 0;
  flt_watchdog(300);
  total = TOTAL_FULL / flt_slow();
  per_thread = total / NTHREADS;
  total = per_thread * NTHREADS;
  seen = calloc((size_t)total, 1);
  want_cancel = calloc((size_t)total, 1);
  got_cancel = calloc((size_t)total, 1);
  CHECK(seen != NULL && want_cancel != NULL && got_cancel != NULL);
  g = flt_gvl();
  /* Boosted, as the shells run it: a normal-priority loop beside the hog
   * gets one GVL hold per slice and the test would measure slices. */
  memset(&cfg, 0, sizeof cfg);
  cfg.prio = EVL_PRIO_BOOST;
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  flt_spawn(&hog, hog_main, g);
  for (i = 0; i < NTHREADS; i++) {
    posters[i].l = l;
    posters[i].idx = (int)i;
    posters[i].last_seq = -1;
    flt_spawn(&th[i], poster_main, &posters[i]);
  }
  atomic_store(&go, 1);
  for (i = 0; i < NTHREADS; i++) flt_join(th[i]);
  for (i = 0; i < NTHREADS; i++) {
    while (atomic_load(&posters[i].done) < per_thread) flt_sleep_us(1000);
  }
  atomic_store(&hog_stop, 1);
  flt_join(hog);
  CHECK_OK(evl_stats(l, &st));
  CHECK_OK(evl_destroy(l));
  CHECK_OK(gvl_destroy(g));

  for (i = 0; i < total; i++) {
    if (seen[i] != 1) {
      fprintf(stderr, "post %ld called %d times\n", i, seen[i]);
      return 1;
    }
    CHECK_EQ(got_cancel[i], want_cancel[i]);
  }
  for (i = 0; i < NTHREADS; i++) {
    CHECK_EQ(posters[i].order_bad, 0);
    CHECK_EQ(atomic_load(&posters[i].done), per_thread);
    /* A successful cancel always wins: the post reports ECANCELED. */
    CHECK_EQ(atomic_load(&posters[i].cancelled), posters[i].cancel_ok);
    ok += atomic_load(&posters[i].ok);
    canc += atomic_load(&posters[i].cancelled);
    cok += posters[i].cancel_ok;
    late += posters[i].cancel_enoent;
  }
  CHECK_EQ(ok + canc, total);
  CHECK_EQ(atomic_load(&bad_gvl), 0);
  CHECK_EQ(st.dispatched, (uint64_t)ok);
  CHECK_EQ(st.cancelled, (uint64_t)canc);
  CHECK_EQ(st.errors, 0);
  CHECK_EQ(st.live, 0);
  printf("fault_posts: %ld posts, %ld ran, %ld cancelled (%ld cancels came "
         "too late), %llu GVL acquisitions by the loop, %llu budget hits\n",
         total, ok, cok, late, (unsigned long long)st.acquisitions,
         (unsigned long long)st.budget_hits);
  free(seen);
  free(want_cancel);
  free(got_cancel);
  return 0;
}
