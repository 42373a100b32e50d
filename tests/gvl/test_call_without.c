/* SPDX-License-Identifier: MIT */
/*
 * gvl_call_without: fn runs without the GVL and its result is returned with
 * the GVL held again; other threads get the GVL while fn blocks; the ubf is
 * called by gvl_thread_interrupt while fn blocks; a pending interrupt keeps
 * fn from being called (EINTR); gvl_check_ints returns EINTR once after an
 * interrupt.  Inside fn, gvl_call_with (nesting a region of its own) but
 * not gvl_acquire.  gvl_region_begin/gvl_region_end, its two halves: the same
 * release and reacquire, their errors, the ubf, a boost on the way back,
 * detach inside a region.  errno through all of them, contended.
 */
#include "tgvl.h"

#include <semaphore.h>

static gvl_t *g;
static gvl_thread_t *main_t;

/* ---- result and GVL state ------------------------------------------------ */

static void *not_holding(void *arg) {
  CHECK(!gvl_thread_holds(main_t));
  return arg;
}

static void basic(void) {
  int x;
  CHECK_OK(gvl_acquire(main_t));
  for (int i = 0; i < 100; i++) {
    CHECK(gvl_call_without(main_t, not_holding, &x, NULL, NULL) == &x);
    CHECK(gvl_thread_holds(main_t));
  }
  errno = 0;
  CHECK(gvl_call_without(main_t, not_holding, NULL, NULL, NULL) == NULL);
  CHECK_EQ(errno, 0); /* a NULL result from fn is not an error */
  CHECK_OK(gvl_release(main_t));
}

/* ---- others run during fn ------------------------------------------------ */

static sem_t other_ran;
static volatile int other_count; /* guarded by the GVL */

static void *other(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  other_count++;
  CHECK_OK(sem_post(&other_ran)); /* while holding the GVL */
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* Blocks until `other` has held the GVL: would deadlock if fn ran with the
 * GVL held (the watchdog would fail the test). */
static void *wait_other(void *arg) {
  while (sem_wait(&other_ran) != 0) CHECK_EQ(errno, EINTR);
  return arg;
}

static void others_run(void) {
  pthread_t th;
  CHECK_OK(sem_init(&other_ran, 0, 0));
  other_count = 0;
  CHECK_OK(gvl_acquire(main_t));
  tgvl_spawn(&th, other, NULL);
  CHECK(gvl_call_without(main_t, wait_other, &th, NULL, NULL) == &th);
  CHECK(gvl_thread_holds(main_t));
  CHECK_EQ(other_count, 1);
  CHECK_OK(gvl_release(main_t));
  tgvl_join(th);
  CHECK_OK(sem_destroy(&other_ran));
}

/* ---- ubf ----------------------------------------------------------------- */

static int pipefd[2];
static atomic_uint entered;
static atomic_uint ubf_calls;

static void *read_pipe(void *arg) {
  char c;
  atomic_store(&entered, 1);
  ssize_t n;
  while ((n = read(pipefd[0], &c, 1)) < 0 && errno == EINTR) {
  }
  CHECK_EQ(n, 1);
  return arg;
}

static pthread_t interrupter_self;

static void write_pipe(void *arg) {
  CHECK(arg == &pipefd);
  /* Called on the thread that called gvl_thread_interrupt. */
  CHECK(pthread_equal(pthread_self(), interrupter_self));
  atomic_fetch_add(&ubf_calls, 1);
  char c = 'x';
  CHECK_EQ(write(pipefd[1], &c, 1), 1);
}

static void *interrupter(void *arg) {
  (void)arg;
  interrupter_self = pthread_self();
  tgvl_wait_ge(&entered, 1);
  CHECK_OK(gvl_thread_interrupt(main_t));
  return NULL;
}

static void ubf_wakes_fn(void) {
  pthread_t th;
  CHECK_OK(pipe(pipefd));
  atomic_store(&entered, 0);
  atomic_store(&ubf_calls, 0);
  CHECK_OK(gvl_acquire(main_t));
  tgvl_spawn(&th, interrupter, NULL);
  CHECK(gvl_call_without(main_t, read_pipe, &th, write_pipe, &pipefd) == &th);
  CHECK(gvl_thread_holds(main_t));
  tgvl_join(th);
  CHECK_EQ(atomic_load(&ubf_calls), 1);
  /* The interrupt is still reported at the next safe point, once. */
  CHECK_EQ(gvl_check_ints(main_t), EINTR);
  CHECK_OK(gvl_check_ints(main_t));
  CHECK_OK(gvl_release(main_t));
  close(pipefd[0]);
  close(pipefd[1]);
}

/* ---- pending interrupt ----------------------------------------------------- */

static atomic_uint fn_calls;

static void *count_call(void *arg) {
  atomic_fetch_add(&fn_calls, 1);
  return arg;
}

static void pending_interrupt(void) {
  atomic_store(&fn_calls, 0);
  atomic_store(&ubf_calls, 0);
  CHECK_OK(gvl_acquire(main_t));
  CHECK_OK(gvl_thread_interrupt(main_t));
  CHECK_NULL_ERRNO(gvl_call_without(main_t, count_call, &fn_calls,
                                    write_pipe, &pipefd), EINTR);
  CHECK_EQ(atomic_load(&fn_calls), 0);
  CHECK_EQ(atomic_load(&ubf_calls), 0); /* not in a region when sent */
  CHECK(gvl_thread_holds(main_t));
  /* Whatever the pending state, a later interrupt-free round works. */
  (void)gvl_check_ints(main_t);
  CHECK_OK(gvl_check_ints(main_t));
  CHECK(gvl_call_without(main_t, count_call, &fn_calls, NULL, NULL) ==
        &fn_calls);
  CHECK_EQ(atomic_load(&fn_calls), 1);
  CHECK_OK(gvl_release(main_t));
}

/* ---- check_ints and EINTR -------------------------------------------------- */

static atomic_uint looping;

static void *interrupt_when_looping(void *arg) {
  (void)arg;
  tgvl_wait_ge(&looping, 1);
  CHECK_OK(gvl_thread_interrupt(main_t));
  return NULL;
}

static void check_ints_eintr(void) {
  CHECK_OK(gvl_acquire(main_t));
  CHECK_OK(gvl_check_ints(main_t));
  CHECK_OK(gvl_thread_interrupt(main_t)); /* from itself */
  CHECK_EQ(gvl_check_ints(main_t), EINTR);
  CHECK_OK(gvl_check_ints(main_t));
  /* Two interrupts before a safe point are still reported once. */
  CHECK_OK(gvl_thread_interrupt(main_t));
  CHECK_OK(gvl_thread_interrupt(main_t));
  CHECK_EQ(gvl_check_ints(main_t), EINTR);
  CHECK_OK(gvl_check_ints(main_t));

  /* From another thread while looping on safe points. */
  pthread_t th;
  atomic_store(&looping, 0);
  tgvl_spawn(&th, interrupt_when_looping, NULL);
  int r;
  atomic_store(&looping, 1);
  while ((r = gvl_check_ints(main_t)) == 0) {
  }
  CHECK_EQ(r, EINTR);
  CHECK(gvl_thread_holds(main_t));
  CHECK_OK(gvl_check_ints(main_t));
  tgvl_join(th);
  CHECK_OK(gvl_release(main_t));
}

/* ---- contended reacquire ------------------------------------------------------ */

static atomic_uint second_in;
static volatile int second_done; /* guarded by the GVL */

static void *second(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  atomic_store(&second_in, 1);
  for (int i = 0; i < 1000; i++) CHECK_OK(gvl_check_ints(t));
  second_done = 1;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *wait_second(void *arg) {
  tgvl_wait_ge(&second_in, 1);
  return arg;
}

/* fn returns while another thread holds the GVL: call_without waits for
 * its turn and returns holding. */
static void contended_return(void) {
  pthread_t th;
  atomic_store(&second_in, 0);
  second_done = 0;
  CHECK_OK(gvl_acquire(main_t));
  tgvl_spawn(&th, second, NULL);
  CHECK(gvl_call_without(main_t, wait_second, &th, NULL, NULL) == &th);
  CHECK(gvl_thread_holds(main_t));
  CHECK_EQ(second_done, 1);
  CHECK_OK(gvl_release(main_t));
  tgvl_join(th);
}

/* ---- re-entering the GVL from inside fn ------------------------------------ */

static void *reenter_cb(void *arg) {
  CHECK(gvl_thread_holds(main_t));
  return arg;
}

static void *inner_region(void *arg) {
  CHECK(!gvl_thread_holds(main_t));
  CHECK_EQ(gvl_thread_in_region(main_t), 1);
  return arg;
}

/* Inside gvl_call_with the region is suspended: a region of its own nests
 * and ends without ending the outer one. */
static void *reenter_nest(void *arg) {
  CHECK(gvl_thread_holds(main_t));
  CHECK_EQ(gvl_thread_in_region(main_t), 0);
  CHECK(gvl_call_without(main_t, inner_region, arg, NULL, NULL) == arg);
  CHECK(gvl_thread_holds(main_t));
  CHECK_EQ(gvl_thread_in_region(main_t), 0);
  return arg;
}

/* fn runs on an attached thread that does not hold: gvl_call_with from
 * there acquires around its callback and releases again.  A plain acquire
 * is refused there: it would leave the region open under a hold, and a
 * region begun in that hold would end the outer one too, which then
 * returned without the GVL (tkbridge's host commands did that). */
static void *reenter(void *arg) {
  CHECK(!gvl_thread_holds(main_t));
  CHECK_EQ(gvl_thread_in_region(main_t), 1);
  CHECK(gvl_call_with(g, 0, reenter_cb, arg) == arg);
  CHECK(!gvl_thread_holds(main_t));
  CHECK(gvl_call_with(g, GVL_PRIO_BOOST, reenter_nest, arg) == arg);
  CHECK(!gvl_thread_holds(main_t));
  CHECK_EQ(gvl_thread_in_region(main_t), 1);
  CHECK_EQ(gvl_acquire(main_t), EPERM);
  CHECK_EQ(gvl_acquire_prio(main_t, GVL_PRIO_BOOST), EPERM);
  CHECK_EQ(gvl_acquire_prio(main_t, GVL_PRIO_MAX + 1), EINVAL);
  CHECK(!gvl_thread_holds(main_t));
  CHECK_EQ(gvl_thread_in_region(main_t), 1);
  return arg;
}

static void reenter_from_fn(void) {
  int x;
  CHECK_EQ(gvl_thread_in_region(NULL), 0);
  CHECK_EQ(gvl_thread_in_region(main_t), 0);
  CHECK_OK(gvl_acquire(main_t));
  CHECK_EQ(gvl_thread_in_region(main_t), 0);
  CHECK(gvl_call_without(main_t, reenter, &x, NULL, NULL) == &x);
  CHECK(gvl_thread_holds(main_t));
  CHECK_EQ(gvl_thread_in_region(main_t), 0);
  /* The same with the two halves. */
  CHECK_OK(gvl_region_begin(main_t, NULL, NULL));
  CHECK(reenter(&x) == &x);
  CHECK_OK(gvl_region_end(main_t, GVL_PRIO_MIN));
  CHECK(gvl_thread_holds(main_t));
  CHECK_EQ(gvl_thread_in_region(main_t), 0);
  CHECK_OK(gvl_release(main_t));
  CHECK_OK(gvl_acquire(main_t));   /* outside a region again */
  CHECK_OK(gvl_release(main_t));
}

/* ---- gvl_region_begin / gvl_region_end ------------------------------------ */

static void *region_hog(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  atomic_store(&looping, 1);
  while (atomic_load(&looping) == 1) CHECK_OK(gvl_check_ints(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

static void *region_detach(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_region_begin(t, NULL, NULL));
  CHECK(!gvl_thread_holds(t));
  CHECK_OK(gvl_thread_detach(t));   /* ends the region for good */
  return arg;
}

/* fn of gvl_call_without may not detach its thread: the call's return
 * ends the region with the handle (EBUSY; valgrind and ASan would see the
 * freed handle used otherwise).  It still may once the call returned. */
static void *detach_self(void *arg) {
  return (void *)(intptr_t)gvl_thread_detach(arg);
}

static void *call_without_detach(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  CHECK_EQ((intptr_t)gvl_call_without(t, detach_self, t, NULL, NULL), EBUSY);
  CHECK(gvl_thread_holds(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

static void regions(void) {
  pthread_t th;
  tgvl_spawn(&th, call_without_detach, NULL);
  tgvl_join(th);
  /* Errors: not holding, bad handle, bad prio, end outside a region. */
  CHECK_EQ(gvl_region_begin(main_t, NULL, NULL), EPERM);
  CHECK_EQ(gvl_region_begin(NULL, NULL, NULL), EINVAL);
  CHECK_EQ(gvl_region_end(main_t, 0), EPERM);
  CHECK_EQ(gvl_region_end(NULL, 0), EINVAL);
  CHECK_OK(gvl_acquire(main_t));
  CHECK_EQ(gvl_region_end(main_t, 0), EPERM);
  for (int i = 0; i < 100; i++) {
    CHECK_OK(gvl_region_begin(main_t, NULL, NULL));
    CHECK(!gvl_thread_holds(main_t));
    CHECK_EQ(gvl_region_end(main_t, GVL_PRIO_MAX + 1), EINVAL);
    CHECK_EQ(gvl_region_end(main_t, GVL_PRIO_MIN - 1), EINVAL);
    CHECK_OK(gvl_region_end(main_t, GVL_PRIO_MIN));
    CHECK(gvl_thread_holds(main_t));
  }
  CHECK_EQ(gvl_region_end(main_t, 0), EPERM);   /* the region is over */
  /* A pending interrupt: nothing released. */
  CHECK_OK(gvl_thread_interrupt(main_t));
  CHECK_EQ(gvl_region_begin(main_t, NULL, NULL), EINTR);
  CHECK(gvl_thread_holds(main_t));
  CHECK_OK(gvl_check_ints(main_t));
  /* The ubf is called by an interrupt inside the region, as in fn. */
  CHECK_OK(pipe(pipefd));
  atomic_store(&entered, 0);
  atomic_store(&ubf_calls, 0);
  tgvl_spawn(&th, interrupter, NULL);
  CHECK_OK(gvl_region_begin(main_t, write_pipe, &pipefd));
  (void)read_pipe(NULL);
  CHECK_OK(gvl_region_end(main_t, GVL_PRIO_MIN));
  tgvl_join(th);
  CHECK_EQ(atomic_load(&ubf_calls), 1);
  CHECK_EQ(gvl_check_ints(main_t), EINTR);
  close(pipefd[0]);
  close(pipefd[1]);
  /* A boost on the way back preempts a normal holder at its safe point,
   * counted as a boost. */
  atomic_store(&looping, 0);
  CHECK_OK(gvl_region_begin(main_t, NULL, NULL));
  tgvl_spawn(&th, region_hog, NULL);
  tgvl_wait_ge(&looping, 1);          /* the hog holds the GVL */
  uint64_t b0 = tgvl_tstats(main_t).boosts;
  CHECK_OK(gvl_region_end(main_t, GVL_PRIO_BOOST));
  CHECK(gvl_thread_holds(main_t));
  CHECK_EQ(tgvl_tstats(main_t).boosts, b0 + 1);
  atomic_store(&looping, 2);
  CHECK_OK(gvl_release(main_t));
  tgvl_join(th);
  /* Another thread may detach inside a region. */
  tgvl_spawn(&th, region_detach, NULL);
  tgvl_join(th);
  CHECK_OK(gvl_acquire(main_t));
  CHECK_OK(gvl_release(main_t));
}

/* ---- errno ------------------------------------------------------------------
 * No call changes errno unless it says so (gvl.h), and gvl_call_without and
 * gvl_call_with leave it as fn left it: fn sees the caller's errno and,
 * returning NULL without touching it, is not an error.  The GVL's own waits
 * make system calls that set errno (a futex wait that finds its word
 * changed: EAGAIN; a timed one: ETIMEDOUT), so the loop runs beside threads
 * that keep the GVL and g->mu contended: two yielders, and a thread that
 * reads the counters (which takes g->mu) and calls gvl_call_with. */
static _Atomic int errno_stop;

static void *errno_fn(void *arg) {
  CHECK_EQ(errno, 0);
  return arg;
}

static void *errno_yielder(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  while (!atomic_load(&errno_stop)) {
    errno = 0;
    CHECK_OK(gvl_acquire(t));
    for (int i = 0; i < 10; i++) CHECK_OK(gvl_yield(t));
    CHECK_OK(gvl_check_ints(t));
    CHECK_OK(gvl_release(t));
    CHECK_EQ(errno, 0);
  }
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* Not attached: its gvl_call_with attaches it on first use. */
static void *errno_stats(void *arg) {
  (void)arg;
  gvl_stats_t st;
  while (!atomic_load(&errno_stop)) {
    errno = 0;
    CHECK_OK(gvl_stats(g, &st));
    CHECK_EQ(errno, 0);
    CHECK(gvl_call_with(g, 0, errno_fn, NULL) == NULL);
    CHECK_EQ(errno, 0);
  }
  return NULL;
}

static void errno_kept(void) {
  pthread_t y[2], s;
  int n = 200000 / tgvl_slow();
  for (int i = 0; i < 2; i++)
    CHECK_OK(pthread_create(&y[i], NULL, errno_yielder, NULL));
  CHECK_OK(pthread_create(&s, NULL, errno_stats, NULL));
  CHECK_OK(gvl_acquire(main_t));
  for (int i = 0; i < n; i++) {
    errno = 0;
    CHECK(gvl_call_without(main_t, errno_fn, NULL, NULL, NULL) == NULL);
    CHECK_EQ(errno, 0);
    errno = 0;
    CHECK_OK(gvl_region_begin(main_t, NULL, NULL));
    CHECK_EQ(errno, 0);
    CHECK_OK(gvl_region_end(main_t, GVL_PRIO_MIN));
    CHECK_EQ(errno, 0);
    CHECK_OK(gvl_check_ints(main_t));
  }
  CHECK_OK(gvl_release(main_t));
  atomic_store(&errno_stop, 1);
  for (int i = 0; i < 2; i++) CHECK_OK(pthread_join(y[i], NULL));
  CHECK_OK(pthread_join(s, NULL));
}

int main(void) {
  tgvl_watchdog(60);
  g = gvl_create(NULL);
  CHECK(g != NULL);
  main_t = gvl_thread_attach(g, 0);
  CHECK(main_t != NULL);
  basic();
  others_run();
  ubf_wakes_fn();
  pending_interrupt();
  check_ints_eintr();
  contended_return();
  reenter_from_fn();
  regions();
  errno_kept();
  CHECK_OK(gvl_thread_detach(main_t));
  CHECK_OK(gvl_destroy(g));
  puts("ok");
  return 0;
}
