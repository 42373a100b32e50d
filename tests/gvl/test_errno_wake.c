/* SPDX-License-Identifier: MIT */
/* gvl.h: no call changes errno (unless it returns NULL and says so).
 * gvl_thread_detach frees the handle only once a thread that handed it the
 * GVL has made its wake-up call, and sleeps for that; a signal during the
 * sleep must not leave EINTR in the caller's errno.
 *
 * Static link, two functions wrapped: gvl__park_kick, so that the releasing
 * thread's wake-up call comes late (as when it is descheduled between the
 * grant and the call), and nanosleep, which on the detaching thread ends
 * with EINTR, as a signal would make it.  The waiter takes its grant
 * without that wake-up (its own timer deadline ends its sleep), releases
 * and detaches while the wake-up is still to come. */
#include "tgvl.h"
#include "gvl_int.h"

void __real_gvl__park_kick(gvl__park_t *p);
void __wrap_gvl__park_kick(gvl__park_t *p);
int __real_nanosleep(const struct timespec *req, struct timespec *rem);
int __wrap_nanosleep(const struct timespec *req, struct timespec *rem);

static atomic_int late_kick;     /* the next kick waits for slept_eintr */
static atomic_int slept_eintr;   /* nanosleeps ended with EINTR below    */
static _Thread_local int in_detach;

void __wrap_gvl__park_kick(gvl__park_t *p) {
  if (atomic_exchange(&late_kick, 0)) {
    /* Until the detaching thread has slept once for this kick (bounded:
     * a test that never gets there proves nothing and says so). */
    for (int i = 0; i < 20000 && !atomic_load(&slept_eintr); i++)
      tgvl_sleep_us(100);
  }
  __real_gvl__park_kick(p);
}

int __wrap_nanosleep(const struct timespec *req, struct timespec *rem) {
  int r = __real_nanosleep(req, rem);
  if (in_detach && r == 0) {
    atomic_fetch_add(&slept_eintr, 1);
    errno = EINTR;
    return -1;
  }
  return r;
}

static gvl_t *g;
static atomic_int queued, errno_after;

static void hook(void *arg, gvl_thread_t *t, gvl_event_t ev, uint64_t now) {
  (void)arg;
  (void)t;
  (void)now;
  if (ev == GVL_EV_READY) atomic_store(&queued, 1);
}

static void *waiter(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  (void)arg;
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));  /* asleep with the timer role: wakes by itself */
  CHECK_OK(gvl_release(t));
  in_detach = 1;
  errno = 4242;
  CHECK_OK(gvl_thread_detach(t));
  atomic_store(&errno_after, errno);
  in_detach = 0;
  return NULL;
}

int main(void) {
  gvl_config_t c;
  gvl_thread_t *me;
  pthread_t th;
  tgvl_watchdog(60);
  memset(&c, 0, sizeof c);
  c.slice_ns = 1000000;      /* the waiter's timer sleep ends after 1 ms */
  c.flags = GVL_F_NOSPIN;
  c.hook = hook;
  g = gvl_create(&c);
  CHECK(g != NULL);
  me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(pthread_create(&th, NULL, waiter, NULL));
  while (!atomic_load(&queued)) tgvl_sleep_us(100);
  tgvl_sleep_us(2000);       /* asleep in the queue, most likely */
  atomic_store(&late_kick, 1);
  CHECK_OK(gvl_release(me)); /* the handoff; its wake-up waits (above) */
  pthread_join(th, NULL);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
  if (atomic_load(&slept_eintr) == 0) {
    printf("the detach never waited for the late wake-up: nothing tested\n");
    return 77;
  }
  int e = atomic_load(&errno_after);
  CHECK_EQ(e, 4242);
  printf("errno kept across %d interrupted sleeps of gvl_thread_detach\n",
         atomic_load(&slept_eintr));
  return 0;
}
