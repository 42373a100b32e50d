/* SPDX-License-Identifier: MIT */
/*
 * One-shot timers in due order across libuv 1.44's two timer rounds of a
 * UV_RUN_ONCE pass (one before the poll, one after it).  A (5 ms) and B
 * (15 ms) are armed; a posted callback keeps the loop thread busy until A
 * is due, so the next pass runs A in its first round (whose callback
 * drains new registrations); the loop thread is then held up just after
 * its poll (epoll_wait interposed, as preemption would) while another
 * thread registers C (0 ms), due well before B, and until B is due.  B
 * runs in the round after the poll: its callback must drain too, so that C
 * runs first.  A round counts only when C was registered at least 2 ms
 * before B's due time.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "evl_test.h"

static evl_t *l;
static atomic_int hold_armed, finished;
static sem_t go, done;
static uint64_t dc, db;           /* C's registration, B's due time (ns) */

static void busy(evl_t *lp, void *arg, int status) {   /* until A is due */
  (void)lp;
  (void)status;
  uint64_t until = *(const uint64_t *)arg;
  while (gvl_now_ns() < until) t_sleep_ms(0);
  atomic_store(&hold_armed, 1);   /* the next poll is the next pass's */
}

static void hold_up(void) {
  sem_post(&go);
  while (sem_wait(&done) != 0) {
  }
  while (gvl_now_ns() < db + 3000000) t_sleep_ms(1);
}

/* Exported (the build hides symbols by default), so that libuv's calls
 * bind to these. */
__attribute__((visibility("default"))) int epoll_wait(int fd, struct epoll_event *ev,
                                                      int max, int to);
__attribute__((visibility("default"))) int epoll_pwait(int fd, struct epoll_event *ev,
                                                       int max, int to,
                                                       const sigset_t *ss);

int epoll_wait(int fd, struct epoll_event *ev, int max, int to) {
  int (*real)(int, struct epoll_event *, int, int) =
      (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
  int r = real(fd, ev, max, to);
  if (atomic_exchange(&hold_armed, 0)) hold_up();
  return r;
}

int epoll_pwait(int fd, struct epoll_event *ev, int max, int to, const sigset_t *ss) {
  int (*real)(int, struct epoll_event *, int, int, const sigset_t *) =
      (int (*)(int, struct epoll_event *, int, int, const sigset_t *))dlsym(
          RTLD_NEXT, "epoll_pwait");
  int r = real(fd, ev, max, to, ss);
  if (atomic_exchange(&hold_armed, 0)) hold_up();
  return r;
}

static void *registrar(void *arg) {
  for (;;) {
    while (sem_wait(&go) != 0) {
    }
    if (atomic_load(&finished)) return arg;
    evl_id_t id;
    dc = gvl_now_ns();
    CHECK_EQ(evl_timer(l, 0, 0, 0, t_order_cb, "C", &id), 0);
    sem_post(&done);
  }
}

int main(void) {
  CHECK_EQ(sem_init(&go, 0, 0), 0);
  CHECK_EQ(sem_init(&done, 0, 0), 0);
  gvl_t *g = t_gvl();
  CHECK((l = evl_start(g, NULL)) != NULL);
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, registrar, NULL), 0);
  int counted = 0;
  for (int r = 0; r < 20; r++) {
    evl_id_t id;
    static uint64_t until;
    t_order_reset();
    uint64_t t0 = gvl_now_ns();
    until = t0 + 8000000;
    db = t0 + 15000000;
    CHECK_EQ(evl_timer(l, 5, 0, 0, t_order_cb, "A", &id), 0);
    CHECK_EQ(evl_timer(l, 15, 0, 0, t_order_cb, "B", &id), 0);
    t_sleep_ms(1);                /* both armed */
    CHECK_EQ(evl_post(l, busy, &until, &id), 0);
    for (int ms = 0; atomic_load(&t_order()->n) < 3; ms++) {
      if (ms == 10000) {
        fprintf(stderr, "round %d: %d calls in 10 s (no hold-up: epoll_wait "
                "not interposed?)\n", r, atomic_load(&t_order()->n));
        return 1;
      }
      t_sleep_ms(1);
    }
    if (dc + 2000000 > db) continue;              /* not clearly earlier */
    counted++;
    if (strcmp(t_order()->s, "ACB") != 0) {
      fprintf(stderr, "round %d: calls in order %s, C due %.2f ms before B\n",
              r, t_order()->s, (double)(db - dc) / 1e6);
      return 1;
    }
    t_sleep_ms(5);
  }
  fprintf(stderr, "%d of 20 rounds counted\n", counted);
  CHECK(counted > 0);
  atomic_store(&finished, 1);     /* the registrar's last wake-up */
  sem_post(&go);
  CHECK_EQ(pthread_join(th, NULL), 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("ok");
  return 0;
}
