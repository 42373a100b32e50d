/* SPDX-License-Identifier: MIT */
/*
 * Signal watches: evloop's own handler, process-wide.
 *
 * libuv's signal handles are not used, for two reasons.  Its handler
 * writes one message per watch per delivery into a pipe of the loop, and
 * drops the write when the pipe is full: while the loop thread was busy
 * (a long callback, a wait for the GVL) a signal that came after ~4096
 * others, or after ~64 with 64 watches of one signal, was lost.  And
 * closing the last handle of a signal set it to SIG_DFL, whatever the host
 * had chosen.
 *
 * Here each watch has a slot in one table.  The handler marks every slot
 * of its signal pending, marks the slot's loop, and writes the loop's
 * wake-up (evl_wake.c), all async-signal-safe and none of it able to
 * fill up: however many signals come, each watch has one call pending.
 * The first watch of a signal saves the disposition it replaces; the last
 * one puts it back.  A fork()ed child starts with those saved dispositions
 * and an empty table: the parent's watches are not its.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "evl_int.h"

typedef struct {
  atomic_int signum;          /* 0: free; set before owner, cleared after */
  _Atomic(evl_t *) owner;     /* the watch's loop, written by its thread */
  atomic_int pending;         /* a delivery since the loop last looked   */
  atomic_int busy;            /* handlers between their two loads of it  */
  evl__item_t *item;          /* owner's loop thread only                */
} evl__sig_slot_t;

static evl__sig_slot_t slots[EVL__SIG_SLOTS];
static atomic_int hiwater;            /* every used slot is below it */

/* Written under sig_mu only. */
static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char used[EVL__SIG_SLOTS];
static int watches[NSIG];             /* open watches per signal */
static struct sigaction saved[NSIG];  /* before the first of them */
static unsigned gen = 1;              /* a child's table is a new one */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Any thread, any time: only lock-free atomics and write(2).  busy keeps
 * evl__sig_remove from returning (and the loop from closing its wake-up)
 * while the handler may still use the slot's loop; signum is checked again
 * after owner is read, since the slot may have been freed and taken for
 * another signal in between (add sets signum first, remove clears owner
 * first). */
static void on_signal(int sig) {
  int saved_errno = errno;
  int n = atomic_load(&hiwater);
  for (int i = 0; i < n; i++) {
    evl__sig_slot_t *s = &slots[i];
    if (atomic_load(&s->signum) != sig) continue;
    atomic_fetch_add(&s->busy, 1);
    evl_t *l = atomic_load(&s->owner);
    if (l != NULL && atomic_load(&s->signum) == sig) {
      atomic_store(&s->pending, 1);
      atomic_store(&l->sig_pending, 1);
      evl__wake_send(&l->wake);
    }
    atomic_fetch_sub(&s->busy, 1);
  }
  errno = saved_errno;
}

static void atfork_prepare(void) { pthread_mutex_lock(&sig_mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&sig_mu); }

/* The child: no loop thread serves the parent's watches here. */
static void atfork_child(void) {
  for (int sig = 1; sig < NSIG; sig++) {
    if (watches[sig] > 0) (void)sigaction(sig, &saved[sig], NULL);
    watches[sig] = 0;
  }
  for (int i = 0; i < EVL__SIG_SLOTS; i++) {
    atomic_store(&slots[i].owner, NULL);
    atomic_store(&slots[i].signum, 0);
    atomic_store(&slots[i].busy, 0);
    used[i] = 0;
  }
  atomic_store(&hiwater, 0);
  gen++;
  pthread_mutex_unlock(&sig_mu);
}

static void atfork_init(void) {
  (void)pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Wait for the handlers still using the slot.  Yielding alone is not
 * enough: the handler's own wake-up lets a real-time loop thread preempt it
 * on its CPU, and a real-time thread's sched_yield never lets a normal
 * thread run there, so after a few yields sleep, which does (libgvl's
 * gvl__backoff, whose numbers these are). */
static void slot_clear(evl__sig_slot_t *s) {
  int err = errno;
  atomic_store(&s->owner, NULL);
  atomic_store(&s->signum, 0);
  for (int i = 0; atomic_load(&s->busy) != 0; i++) {
    if (i < 16) {
      sched_yield();
    } else {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
  errno = err;
}

/* [loop thread] Start its watch.  The slot is filled in before the
 * handler is installed, so that the first delivery after sigaction finds
 * it (before, the signal meets its old disposition). */
int evl__sig_add(evl__item_t *it) {
  int sig = it->signum, i, r = 0;
  pthread_once(&atfork_once, atfork_init);
  pthread_mutex_lock(&sig_mu);
  for (i = 0; i < EVL__SIG_SLOTS && used[i]; i++) {
  }
  if (i == EVL__SIG_SLOTS) {
    pthread_mutex_unlock(&sig_mu);
    return UV_ENOSPC;
  }
  evl__sig_slot_t *s = &slots[i];
  s->item = it;
  atomic_store(&s->pending, 0);
  atomic_store(&s->signum, sig);
  atomic_store(&s->owner, it->l);
  if (i >= atomic_load(&hiwater)) atomic_store(&hiwater, i + 1);
  if (watches[sig] == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, &saved[sig]) != 0) r = -errno;
  }
  if (r == 0) {
    watches[sig]++;
    used[i] = 1;
    it->sig_slot = i;
    it->sig_gen = gen;
  } else {
    slot_clear(s);
  }
  pthread_mutex_unlock(&sig_mu);
  return r;
}

/* [loop thread] End its watch.  Once this returns, no handler looks at
 * the slot.  The wait is for handlers that are in the middle of the few
 * instructions above, which never block but may be preempted (see
 * slot_clear). */
void evl__sig_remove(evl__item_t *it) {
  if (it->sig_slot < 0) return;
  pthread_mutex_lock(&sig_mu);
  if (it->sig_gen == gen) {
    if (--watches[it->signum] == 0)
      (void)sigaction(it->signum, &saved[it->signum], NULL);
    slot_clear(&slots[it->sig_slot]);
    used[it->sig_slot] = 0;
  }
  it->sig_slot = -1;
  pthread_mutex_unlock(&sig_mu);
}

/* [l's loop thread] The next watch of l whose slot a delivery marked, from
 * *pos on, or NULL.  No lock: the slots l owns change only on its thread. */
evl__item_t *evl__sig_next(evl_t *l, int *pos) {
  int n = atomic_load(&hiwater);
  for (; *pos < n; (*pos)++) {
    evl__sig_slot_t *s = &slots[*pos];
    if (atomic_load(&s->owner) == l && atomic_exchange(&s->pending, 0))
      return slots[(*pos)++].item;
  }
  return NULL;
}
