/* SPDX-License-Identifier: MIT */
/*
 * evl_dispatch.c -- running host callbacks (loop thread, after uv_run).
 *
 * The dispatch queue is emptied in order.  The GVL is taken once, with the
 * loop's priority, when the first callback that needs it comes up, and kept
 * for the following ones until the budget (count or time) runs out or a
 * callback flagged EVL_F_NOGVL comes up.  Whatever is left stays queued:
 * the next evl_step polls the kernel without blocking and carries on, so
 * interpreter threads get the GVL back between two budgets.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "evl_int.h"
#include "gvl_trace.h"

/* Report a failure of a host callback, or of the loop itself. */
void evl__report(evl_t *l, int err, const char *what) {
  EVL__STAT_ADD(l, failures, 1);
  if (l->on_error != NULL) {
    /* Inside the loop's pass, like a callback: no detach or destroy. */
    l->reporting++;
    l->on_error(l, err, what, l->on_error_arg);
    l->reporting--;
    return;
  }
  fprintf(stderr, "evloop: callback failed: %s: %s\n",
          what != NULL && what[0] != '\0' ? what : "(no detail)",
          err >= 10000 ? evl_strerror(err) : strerror(err));
}

int evl_fail(evl_t *l, int err, const char *what) {
  evl__frame_t *fr;
  if (l == NULL || err <= 0) return EINVAL;
  if (evl__tls_loop != l || l->frame == NULL) return EPERM;
  fr = l->frame;
  fr->err = err;
  fr->what[0] = '\0';
  if (what != NULL) {
    strncpy(fr->what, what, sizeof fr->what - 1);
    fr->what[sizeof fr->what - 1] = '\0';
  }
  return 0;
}

static evl__item_t *evl__dq_pop(evl_t *l) {
  evl__item_t *it = l->dq_head;
  if (it == NULL) return NULL;
  l->dq_head = it->dnext;
  if (l->dq_head == NULL) l->dq_tail = NULL;
  it->dnext = NULL;
  it->in_dq = 0;
  return it;
}

/* Decide the call a popped item gets.  Returns 0 to skip it: a tick of an
 * item cancelled meanwhile (its last call is on its way).  A last call
 * removes the id from the map first, so evl_cancel says EVL_ENOREG from then on.
 * A cancelled item's last call is ECANCELED, whatever status it was queued
 * with (a one-shot that fired, a watch that failed): the cancel is what
 * ends it.  Not the completion of work that ran (status_fixed), which
 * evl_cancel refuses (EBUSY) and a shutdown waits for. */
static int evl__take(evl_t *l, evl__item_t *it, int *status, int *final) {
  int cancelled;
  pthread_mutex_lock(&l->mu);
  cancelled = it->cancelled;
  if (it->final) {
    evl__map_remove(l, it);
    evl__flist_remove(l, it);
  }
  pthread_mutex_unlock(&l->mu);
  *final = it->final;
  if (!it->final) {
    *status = 0;
    return !cancelled;
  }
  *status = it->status;
  if (cancelled && !it->status_fixed) *status = ECANCELED;
  return 1;
}

/* Returns 0 when there was no callback to call (evl_work's done NULL). */
static int evl__call(evl_t *l, evl__item_t *it, int status, int final) {
  unsigned ev = 0;
  char *data;
  switch (it->kind) {
  case EVL__FD:
    if (!final) ev = it->events;
    it->events = 0;
    it->io_cb(l, it->arg, status, ev);
    break;
  case EVL__READ:
    data = status == 0 ? it->data : NULL;
    it->data = NULL;
    it->read_cb(l, it->arg, status, data, data != NULL ? it->len : 0);
    break;
  default:
    if (it->cb == NULL) return 0;
    it->cb(l, it->arg, status);
    break;
  }
  return 1;
}

static void evl__count(evl_t *l, int status) {
  if (status == 0)
    EVL__STAT_ADD(l, dispatched, 1);
  else if (status == ECANCELED)
    EVL__STAT_ADD(l, cancelled, 1);
  else
    EVL__STAT_ADD(l, errors, 1);
}

/* Call it once, with a frame for evl_fail, then settle its references. */
static void evl__invoke(evl_t *l, evl__item_t *it, int status, int final) {
  evl__frame_t fr;
  fr.up = l->frame;
  fr.it = it;
  fr.err = 0;
  fr.what[0] = '\0';
  l->frame = &fr;
  it->running++;
  it->refs++;
  if (final) it->delivered = 1;
  gvl_trace_begin(l->g, "evloop", "callback");
  int called = evl__call(l, it, status, final);
  gvl_trace_end(l->g, "evloop", "callback");
  it->running--;
  l->frame = fr.up;
  if (called) evl__count(l, status);
  if (fr.err != 0) evl__report(l, fr.err, fr.what);
  if (it->deferred && it->running == 0) {
    it->deferred = 0;
    evl__dq_push(l, it, 0, 0, 0);
  }
  if (it->paused && it->running == 0) evl__fd_resume(it);
  if (final) evl__item_unref(l, it);
  evl__item_unref(l, it);
}

/* Bring the GVL to the state the next callback needs.  Returns 0 or the
 * error of gvl_acquire_prio (a broken invariant: reported, and the callback
 * stays queued). */
static int evl__gvl_for(evl_t *l, int need, int *held, uint64_t *t0) {
  int err;
  if (need && !*held) {
    err = gvl_acquire_prio(l->gt, l->prio);
    if (err != 0) {
      evl__report(l, err, "evloop: gvl_acquire_prio failed");
      return err;
    }
    *held = 1;
    *t0 = gvl_now_ns();
    EVL__STAT_ADD(l, acquisitions, 1);
  } else if (!need && *held) {
    gvl_release(l->gt);
    *held = 0;
  }
  return 0;
}

/* A callback that detached the loop thread's GVL handle left l->gt
 * dangling: compare it, without touching it, with the thread's current
 * handle.  Report the misuse and attach again so the loop carries on. */
static int evl__gt_check(evl_t *l) {
  if (gvl_thread_self(l->g) == l->gt) return 0;
  evl__report(l, EPERM, "evloop: a callback detached the loop thread's GVL handle");
  l->gt = gvl_thread_self(l->g);
  if (l->gt == NULL) {
    l->gt = gvl_thread_attach(l->g, l->prio);
    if (l->gt == NULL) return errno != 0 ? errno : ENOMEM;
    l->own_gt = 1;
  }
  return 0;
}

/* After a callback: it must leave the GVL as it found it.  A callback that
 * broke that is reported, and the dispatcher adopts the real state (a
 * callback without the GVL that left it held gets it released). */
static void evl__gvl_check(evl_t *l, int need, int *held) {
  int now = gvl_thread_holds(l->gt);
  if (now == need) return;
  evl__report(l, EPERM, need ? "evloop: callback returned without the GVL"
                             : "evloop: EVL_F_NOGVL callback kept the GVL");
  if (now && !need) gvl_release(l->gt);
  *held = need && now;
}

/* Once a stop is requested, a top-level pass runs nothing more: what is
 * left gets ECANCELED at shutdown.  A nested pass (a callback waiting in
 * evl_step) carries on, so that its wait can end. */
static int evl__pass_stopped(evl_t *l) {
  return l->frame == NULL && !l->closed && atomic_load(&l->stopping);
}

/* One callback that needs the GVL, from a pass nested inside a blocking
 * region of the loop thread (a callback's gvl_call_without whose fn waits
 * in evl_step, as tkbridge's tkb_eval does around Tcl code): there the GVL
 * is taken with gvl_call_with, which suspends the region for the call; a
 * plain acquire would fail (gvl.h).  One callback a call: such passes are
 * rare, and each gives the region back as soon as it can. */
typedef struct {
  evl_t *l;
  int ran;    /* 0: a stop came meanwhile, the item stays queued */
} evl__with_t;

static void *evl__with_fn(void *arg) {
  evl__with_t *w = arg;
  evl_t *l = w->l;
  evl__item_t *it = l->dq_head;
  int status, final;
  if (it == NULL || evl__pass_stopped(l)) return w;
  w->ran = 1;
  evl__dq_pop(l);
  if (!evl__take(l, it, &status, &final)) return w;
  evl__invoke(l, it, status, final);
  int held = 1;
  evl__gvl_check(l, 1, &held);
  /* gvl_call_with releases what it took: give it back to it. */
  if (!held) (void)gvl_acquire_prio(l->gt, l->prio);
  return w;
}

static int evl__dispatch_with(evl_t *l, int *ran) {
  evl__with_t w = {l, 0};
  int saved = errno;
  *ran = 0;
  if (gvl_call_with(l->g, l->prio, evl__with_fn, &w) == NULL) {
    int err = errno;
    errno = saved;
    evl__report(l, err, "evloop: gvl_call_with failed");
    return err;
  }
  errno = saved;
  EVL__STAT_ADD(l, acquisitions, 1);
  *ran = w.ran;
  return evl__gt_check(l);
}

/* Run ready callbacks until the queue is empty or the budget is spent.
 * This is the one long function of the library: the GVL state, the budget
 * and the queue walk belong together.  Entered and left without the GVL. */
int evl__dispatch(evl_t *l) {
  int held = 0, err = 0;
  unsigned n = 0;
  uint64_t t0 = 0;
  while (l->dq_head != NULL) {
    evl__item_t *it = l->dq_head;
    if (evl__pass_stopped(l)) break;
    int need = !(it->flags & EVL_F_NOGVL), status, final, ran;
    if (need && !held && gvl_thread_in_region(l->gt)) {
      if ((err = evl__dispatch_with(l, &ran)) != 0 || !ran) break;
      if (++n >= l->budget_count) {
        if (l->dq_head != NULL) EVL__STAT_ADD(l, budget_hits, 1);
        break;
      }
      continue;
    }
    if ((err = evl__gvl_for(l, need, &held, &t0)) != 0) break;
    /* Again with the GVL: the stop may have come from its holder while
     * this thread waited for it. */
    if (evl__pass_stopped(l)) break;
    evl__dq_pop(l);
    if (!evl__take(l, it, &status, &final)) continue;
    evl__invoke(l, it, status, final);
    if ((err = evl__gt_check(l)) != 0) {
      held = 0;
      break;
    }
    evl__gvl_check(l, need, &held);
    if (++n >= l->budget_count ||
        (held && gvl_now_ns() - t0 >= l->budget_ns)) {
      if (l->dq_head != NULL) EVL__STAT_ADD(l, budget_hits, 1);
      break;
    }
  }
  if (held) gvl_release(l->gt);
  return err;
}
