/* SPDX-License-Identifier: MIT */
/*
 * A signal storm.  Four threads fire SIGUSR1/SIGUSR2 at the process and at
 * the interpreter threads (so that futex waits inside the GVL and blocking
 * calls in gvl_call_without regions are interrupted over and over) while:
 *   - two evloop watches share SIGUSR1 and one (EVL_F_NOGVL) has SIGUSR2;
 *   - a churn thread makes and cancels SIGUSR1 watches;
 *   - three interpreter threads contend for the GVL (hog with safe points,
 *     acquire/yield/release, a gvl_mutex + gvl_cond ping-pong) and check
 *     mutual exclusion at every step.
 * Checked: mutual exclusion never broken, every churned watch gets exactly
 * one last call (ECANCELED), ticks run in the right GVL state, and after the
 * storm no wake-up is lost: each further signal produces a tick.
 */
#include "flt.h"

#define STORM_THREADS 4
#define GVL_THREADS 3

static gvl_t *g;
static evl_t *l;
static atomic_long inside, excl_bad, storm_stop, gvl_stop, gvl_steps;
static atomic_long sent, ticks1a, ticks1b, ticks2, bad_state;
static pthread_t gvl_th[GVL_THREADS];
static atomic_int gvl_th_ready;
static gvl_mutex_t mu;
static gvl_cond_t cv;
static long cv_turn;   /* guarded by mu */

static void enter_excl(void) {
  if (atomic_fetch_add(&inside, 1) != 0) atomic_fetch_add(&excl_bad, 1);
}
static void leave_excl(void) { atomic_fetch_sub(&inside, 1); }

static void tick_cb(evl_t *ll, void *arg, int status) {
  atomic_long *c = arg;
  if (status != 0) return;
  if (!flt_holds(ll)) atomic_fetch_add(&bad_state, 1);
  enter_excl();
  atomic_fetch_add(c, 1);
  leave_excl();
}

static void tick_nogvl_cb(evl_t *ll, void *arg, int status) {
  atomic_long *c = arg;
  if (status != 0) return;
  if (flt_holds(ll)) atomic_fetch_add(&bad_state, 1);
  atomic_fetch_add(c, 1);
}

static void *gvl_main(void *arg) {
  long kind = (long)(intptr_t)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  atomic_fetch_add(&gvl_th_ready, 1);
  while (!atomic_load(&gvl_stop)) {
    CHECK_OK(gvl_acquire(t));
    enter_excl();
    if (kind == 0) {
      int i;
      for (i = 0; i < 200; i++) {
        leave_excl();
        CHECK_OK(gvl_check_ints(t));
        enter_excl();
      }
    } else if (kind == 1) {
      leave_excl();
      CHECK_OK(gvl_yield(t));
      enter_excl();
    } else {
      leave_excl();
      CHECK_OK(gvl_mutex_lock(t, &mu));
      enter_excl();
      cv_turn++;
      leave_excl();
      CHECK_OK(gvl_cond_broadcast(t, &cv));
      {
        int r = gvl_cond_timedwait(t, &cv, &mu, 1000000);
        CHECK(r == 0 || r == ETIMEDOUT);
      }
      CHECK_OK(gvl_mutex_unlock(t, &mu));
      enter_excl();
    }
    atomic_fetch_add(&gvl_steps, 1);
    leave_excl();
    CHECK_OK(gvl_release(t));
  }
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *storm_main(void *arg) {
  long idx = (long)(intptr_t)arg;
  unsigned seed = (unsigned)idx + 17u;
  long n = 0, per = 25000 / flt_slow();
  while (n++ < per || !atomic_load(&storm_stop)) {
    int sig;
    seed = seed * 1103515245u + 12345u;
    sig = (seed >> 16) & 1 ? SIGUSR1 : SIGUSR2;
    if ((seed >> 20) % 3 == 0)
      pthread_kill(gvl_th[(seed >> 8) % GVL_THREADS], sig);
    else
      kill(getpid(), sig);
    atomic_fetch_add(&sent, 1);
    if ((seed >> 24) % 8 == 0) sched_yield();
  }
  return NULL;
}

static atomic_long churn_last, churn_made;
static void churn_cb(evl_t *ll, void *arg, int status) {
  (void)ll;
  (void)arg;
  if (status == 0) return;
  CHECK_EQ(status, ECANCELED);
  atomic_fetch_add(&churn_last, 1);
}

static void *churn_main(void *arg) {
  long n = (long)(intptr_t)arg, i;
  for (i = 0; i < n; i++) {
    evl_id_t id;
    CHECK_OK(evl_signal_watch(l, SIGUSR1, i & 1 ? EVL_F_NOGVL : 0, churn_cb,
                              NULL, &id));
    atomic_fetch_add(&churn_made, 1);
    if (i % 4 == 0) flt_sleep_us(100);
    CHECK_OK(evl_cancel(l, id));
  }
  return NULL;
}

static int handler_installed(int sig) {
  struct sigaction sa;
  CHECK_OK(sigaction(sig, NULL, &sa));
  return sa.sa_handler != SIG_DFL;
}

/* No lost wake-up: each signal sent after the storm shows up as a tick. */
static void check_each_signal_ticks(void) {
  int k;
  for (k = 0; k < 50; k++) {
    long a = atomic_load(&ticks1a), b = atomic_load(&ticks1b),
         c = atomic_load(&ticks2);
    CHECK_OK(kill(getpid(), SIGUSR1));
    flt_wait_ge(&ticks1a, a + 1);
    flt_wait_ge(&ticks1b, b + 1);
    CHECK_OK(kill(getpid(), SIGUSR2));
    flt_wait_ge(&ticks2, c + 1);
  }
}

int main(void) {
  pthread_t storm[STORM_THREADS], churn;
  evl_stats_t st;
  long i, rounds = 3000 / flt_slow();
  flt_watchdog(240);
  g = flt_gvl();
  CHECK_OK(gvl_mutex_init(&mu));
  CHECK_OK(gvl_cond_init(&cv));
  l = evl_start(g, NULL);
  CHECK(l != NULL);
  CHECK_OK(evl_signal_watch(l, SIGUSR1, 0, tick_cb, &ticks1a, NULL));
  CHECK_OK(evl_signal_watch(l, SIGUSR1, 0, tick_cb, &ticks1b, NULL));
  CHECK_OK(evl_signal_watch(l, SIGUSR2, EVL_F_NOGVL, tick_nogvl_cb, &ticks2,
                            NULL));
  /* The handlers are installed on the loop thread: wait for them before
   * the first signal, whose default action would end the process. */
  while (!handler_installed(SIGUSR1) || !handler_installed(SIGUSR2))
    flt_sleep_us(1000);
  check_each_signal_ticks();
  for (i = 0; i < GVL_THREADS; i++)
    flt_spawn(&gvl_th[i], gvl_main, (void *)(intptr_t)i);
  while (atomic_load(&gvl_th_ready) < GVL_THREADS) flt_sleep_us(100);
  for (i = 0; i < STORM_THREADS; i++)
    flt_spawn(&storm[i], storm_main, (void *)(intptr_t)i);
  flt_spawn(&churn, churn_main, (void *)(intptr_t)rounds);
  flt_join(churn);
  atomic_store(&storm_stop, 1);
  for (i = 0; i < STORM_THREADS; i++) flt_join(storm[i]);
  flt_wait_ge(&churn_last, rounds);
  check_each_signal_ticks();
  atomic_store(&gvl_stop, 1);
  for (i = 0; i < GVL_THREADS; i++) flt_join(gvl_th[i]);
  CHECK_OK(evl_stats(l, &st));
  CHECK_EQ(st.live, 3);
  CHECK_OK(evl_destroy(l));
  CHECK_OK(gvl_cond_destroy(&cv));
  CHECK_OK(gvl_mutex_destroy(&mu));
  CHECK_OK(gvl_destroy(g));
  CHECK_EQ(atomic_load(&excl_bad), 0);
  CHECK_EQ(atomic_load(&bad_state), 0);
  CHECK_EQ(atomic_load(&churn_last), rounds);
  CHECK_GT(atomic_load(&gvl_steps), 0);
  printf("fault_signals: %ld signals sent, ticks %ld/%ld/%ld, %ld GVL steps, "
         "%ld watches churned\n",
         atomic_load(&sent), atomic_load(&ticks1a), atomic_load(&ticks1b),
         atomic_load(&ticks2), atomic_load(&gvl_steps), rounds);
  return 0;
}
