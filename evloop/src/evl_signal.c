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
 *
 * The thread that calls evl_signal_watch takes the slot before it submits
 * the watch and, once the loop has accepted it, names the loop in the slot
 * and installs the handler (evl_signal_watch returns with the watch on): a
 * signal that comes before the loop thread has started the watch waits in
 * the slot, which that thread arms as it starts it.  Not before the
 * submit: a refused one (a stop) would have swapped the disposition to and
 * fro, a signal meanwhile lost to the old one, and the handler would have
 * woken a loop that may be closing its wake-up.  A watch cancelled before
 * its loop thread got to it gives its slot back at once (evl_cancel).
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
  _Atomic(evl_t *) owner;     /* the watch's loop, once it accepted the
                                 watch: set (sig_mu) by the registering
                                 thread, cleared (sig_mu) by whichever
                                 frees the slot; the handler's           */
  atomic_int pending;         /* a delivery since the loop last looked   */
  atomic_int busy;            /* handlers between their two loads of it  */
  _Atomic(evl_t *) armed;     /* the loop whose thread started the watch
                                 (sig_mu), and only it frees the slot
                                 then; NULL from taking to arming        */
  evl__item_t *item;          /* set when taken; read only by the thread
                                 of the loop that armed it              */
} evl__sig_slot_t;

static evl__sig_slot_t slots[EVL__SIG_SLOTS];
static atomic_int hiwater;            /* every used slot is below it */

/* Written under sig_mu only. */
static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char used[EVL__SIG_SLOTS];
static unsigned char counted[EVL__SIG_SLOTS]; /* in watches[]: handler on */
static unsigned seqs[EVL__SIG_SLOTS]; /* takings of the slot, so that a
                                         late install or release of one
                                         watch never touches the next's */
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
    atomic_store(&slots[i].armed, NULL);
    used[i] = 0;
    counted[i] = 0;
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

static void install_locked(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigfillset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  (void)sigaction(sig, &sa, &saved[sig]);
}

/* [the registering thread, before the submit] Take a slot for the watch,
 * pending nothing, armed by no one.  Failures are kept for the loop thread
 * to end the watch with (it->sig_err): no free slot, or a signal that
 * sigaction refuses (glibc's own; asked here, so that installing it later
 * cannot fail). */
void evl__sig_reserve(evl__item_t *it) {
  int sig = it->signum, i;
  struct sigaction cur;
  pthread_once(&atfork_once, atfork_init);
  if (sigaction(sig, NULL, &cur) != 0) {
    it->sig_err = -errno;
    return;
  }
  pthread_mutex_lock(&sig_mu);
  for (i = 0; i < EVL__SIG_SLOTS && used[i]; i++) {
  }
  if (i == EVL__SIG_SLOTS) {
    pthread_mutex_unlock(&sig_mu);
    it->sig_err = UV_ENOSPC;
    return;
  }
  evl__sig_slot_t *s = &slots[i];
  used[i] = 1;
  counted[i] = 0;
  seqs[i]++;
  s->item = it;
  atomic_store(&s->armed, NULL);
  atomic_store(&s->pending, 0);
  atomic_store(&s->signum, sig);
  if (i >= atomic_load(&hiwater)) atomic_store(&hiwater, i + 1);
  it->sig_slot = i;
  it->sig_gen = gen;
  it->sig_seq = seqs[i];
  pthread_mutex_unlock(&sig_mu);
}

static int still_taken(int i, unsigned g, unsigned seq) {
  return i >= 0 && g == gen && used[i] && seqs[i] == seq;
}

static void free_locked(int i) {
  if (counted[i] && --watches[slots[i].signum] == 0)
    (void)sigaction(slots[i].signum, &saved[slots[i].signum], NULL);
  atomic_store(&slots[i].armed, NULL);
  slot_clear(&slots[i]);
  used[i] = 0;
  counted[i] = 0;
}

/* [the registering thread, after l accepted the watch] Name l in the slot
 * taken by evl__sig_reserve (i, g, seq: the item may be gone) and install
 * the handler, unless the watch has ended meanwhile. */
void evl__sig_install(evl_t *l, int i, unsigned g, unsigned seq) {
  pthread_mutex_lock(&sig_mu);
  if (still_taken(i, g, seq) && !counted[i]) {
    int sig = atomic_load(&slots[i].signum);
    atomic_store(&slots[i].owner, l);
    if (watches[sig]++ == 0) install_locked(sig);
    counted[i] = 1;
  }
  pthread_mutex_unlock(&sig_mu);
}

/* [the registering thread, after a submit that failed; evl_cancel, for a
 * watch its loop thread has not started] Give the slot back. */
void evl__sig_release(int i, unsigned g, unsigned seq) {
  pthread_mutex_lock(&sig_mu);
  if (still_taken(i, g, seq)) free_locked(i);
  pthread_mutex_unlock(&sig_mu);
}

/* [loop thread] Start its watch: arm its slot.  Returns a libuv error to
 * end the watch with, 1 when a signal came before (a call is due), else 0.
 * A watch taken in a parent's table and started in a fork()ed child (a
 * loop thread that forked inside a registration's callback) takes a slot
 * of the child's table now. */
int evl__sig_arm(evl__item_t *it) {
  if (it->sig_err) return it->sig_err;
  pthread_mutex_lock(&sig_mu);
  int ours = still_taken(it->sig_slot, it->sig_gen, it->sig_seq);
  pthread_mutex_unlock(&sig_mu);
  if (!ours) {
    it->sig_slot = -1;
    evl__sig_reserve(it);
    if (it->sig_err) return it->sig_err;
    evl__sig_install(it->l, it->sig_slot, it->sig_gen, it->sig_seq);
  }
  evl__sig_slot_t *s = &slots[it->sig_slot];
  pthread_mutex_lock(&sig_mu);
  atomic_store(&s->armed, it->l);
  pthread_mutex_unlock(&sig_mu);
  return atomic_exchange(&s->pending, 0) ? 1 : 0;
}

/* [loop thread] End its watch, started or not.  Once this returns, no
 * handler looks at the slot.  The wait is for handlers that are in the
 * middle of the few instructions above, which never block but may be
 * preempted (see slot_clear). */
void evl__sig_remove(evl__item_t *it) {
  if (it->sig_slot < 0) return;
  pthread_mutex_lock(&sig_mu);
  if (still_taken(it->sig_slot, it->sig_gen, it->sig_seq))
    free_locked(it->sig_slot);
  it->sig_slot = -1;
  pthread_mutex_unlock(&sig_mu);
}

/* [l's loop thread] The next watch of l whose slot a delivery marked, from
 * *pos on, or NULL.  No lock: a slot l armed is freed only on l's thread.
 * One not armed yet keeps its delivery for evl__sig_arm. */
evl__item_t *evl__sig_next(evl_t *l, int *pos) {
  int n = atomic_load(&hiwater);
  for (; *pos < n; (*pos)++) {
    evl__sig_slot_t *s = &slots[*pos];
    if (atomic_load(&s->armed) == l && atomic_exchange(&s->pending, 0))
      return slots[(*pos)++].item;
  }
  return NULL;
}
