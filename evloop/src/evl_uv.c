/* SPDX-License-Identifier: MIT */
/*
 * evl_uv.c -- the libuv side of registrations (loop thread only).
 *
 * Everything here runs inside uv_run (libuv callbacks) or between passes,
 * never calling host code: a libuv callback only moves its item onto the
 * dispatch queue, which evl__dispatch empties after uv_run has returned.
 * Between passes the GVL may be held (evl__fd_resume runs as a callback
 * returns, evl__fd_pause_running as a callback nests a pass).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "evl_int.h"
#include "gvl_trace.h"

/* Queue a call of it.  final: this is its last call, with status; fixed:
 * that status stays even if the item gets cancelled before the call (the
 * completion of work that ran; any other status, a failure included,
 * gives way to ECANCELED, since the cancel then ends it).  An
 * item is queued at most once: a tick that finds it queued merges into the
 * queued call, and the first last call queued wins. */
void evl__dq_push(evl_t *l, evl__item_t *it, int final, int status,
                  int fixed) {
  if (it->delivered) return;
  if (final && !it->final) {
    it->final = 1;
    it->status = status;
    it->status_fixed = fixed;
  }
  if (it->in_dq || it->running) {
    /* Queued already, or running: the dispatcher re-queues it when the
     * running call returns (a nested step must not call it again). */
    if (it->running && !it->in_dq) it->deferred = 1;
    return;
  }
  /* On the GVL timeline: the moment libuv handed the event over. */
  gvl_trace_instant(l->g, "evloop", "arrival", it->id);
  it->in_dq = 1;
  it->dnext = NULL;
  if (l->dq_tail != NULL) l->dq_tail->dnext = it; else l->dq_head = it;
  l->dq_tail = it;
  /* Work is ready: uv_run must not go on to block.  In UV_RUN_ONCE, libuv
   * 1.44 runs due timers at the top of the iteration without counting them
   * as "pending", then polls with the next timer's timeout; the stop flag
   * makes that poll return at once. */
  if (l->in_uv_run) uv_stop(&l->loop);
}

/* An event for it arrived (instrumentation hook). */
static void evl__ready(evl__item_t *it) {
  evl_t *l = it->l;
  if (l->on_ready != NULL) l->on_ready(l, it->id, l->on_ready_arg);
}

static void evl__handle_closed(uv_handle_t *h) {
  evl__item_t *it = h->data;
  it->l->uv_pending--;
  evl__item_unref(it->l, it);
}

/* A timer's due time on uv_hrtime()'s clock, saturating. */
static uint64_t evl__due_ns(const evl__item_t *it) {
  uint64_t room = (UINT64_MAX - it->call_ns) / 1000000u;
  return it->timeout_ms > room ? UINT64_MAX : it->call_ns + it->timeout_ms * 1000000u;
}

/* A one-shot timer armed when already due gets libuv's timeout 0: libuv
 * then counts it due at its arming, after its own due time, and would run
 * a timer armed in an earlier pass, due in between, first.  Such timers
 * are kept in l->late in due order, so that whichever one-shot timer libuv
 * runs first runs the late ones due before it.  The drain adds a batch in
 * due order: at is where the batch's previous one went. */
static evl__item_t **evl__late_add(evl_t *l, evl__item_t **at, evl__item_t *it) {
  if (at == NULL) at = &l->late;
  while (*at != NULL && evl__due_ns(*at) <= evl__due_ns(it)) at = &(*at)->lnext;
  it->lnext = *at;
  if (*at != NULL) (*at)->lpprev = &it->lnext;
  *at = it;
  it->lpprev = at;
  return &it->lnext;
}

static void evl__late_remove(evl__item_t *it) {
  if (it->lpprev == NULL) return;
  *it->lpprev = it->lnext;
  if (it->lnext != NULL) it->lnext->lpprev = it->lpprev;
  it->lnext = NULL;
  it->lpprev = NULL;
}

static void evl__close(evl__item_t *it) {
  if (it->uv_state != EVL__UV_ACTIVE) return;
  it->uv_state = EVL__UV_DONE;
  evl__late_remove(it);
  if (it->kind == EVL__SIGNAL) {
    evl__sig_remove(it);        /* no libuv handle: a slot of the table */
    return;
  }
  uv_close(&it->h.handle, evl__handle_closed);
}

static void evl__timer_done(evl__item_t *it) {
  evl__ready(it);
  evl__close(it);
  evl__dq_push(it->l, it, 1, 0, 0);
}

/* A one-shot timer first runs the late ones due before it (see
 * evl__late_add); closing them takes them out of libuv's heap.  Timers
 * registered since the pass's drain join them first: libuv runs due timers
 * before it polls, where the wake-up would drain them, so one registered
 * while the loop thread was held up between the two, due before it, would
 * otherwise run after it.  Once per timer round of a uv_run (libuv 1.44
 * runs one before the poll and, in UV_RUN_ONCE, one after it): the timers a
 * drain arms already due run in the same round, and a drain in each of
 * theirs let a flood of registrations keep the loop thread there,
 * dispatching nothing.  That drain may also apply a cancel of it. */
static void evl__timer_cb(uv_timer_t *h) {
  evl__item_t *it = h->data, *o;
  if (it->repeat_ms != 0) {
    evl__ready(it);
    evl__dq_push(it->l, it, 0, 0, 0);
    return;
  }
  if (!it->l->timer_drained) {
    it->l->timer_drained = 1;
    evl__drain(it->l);
    if (it->uv_state != EVL__UV_ACTIVE) return; /* cancelled: its call made */
  }
  while ((o = it->l->late) != NULL && o != it && evl__due_ns(o) < evl__due_ns(it))
    evl__timer_done(o);
  evl__timer_done(it);
}

/* A failed watch is over: it leaves the fd list so the fd may be watched
 * again, and its last call carries the error. */
static void evl__watch_failed(evl__item_t *it, int uverr) {
  evl_t *l = it->l;
  pthread_mutex_lock(&l->mu);
  evl__flist_remove(l, it);
  pthread_mutex_unlock(&l->mu);
  evl__close(it);
  evl__dq_push(l, it, 1, -uverr, 0);
}

/* libuv reports an error condition on the fd (POLLERR) as UV_EBADF,
 * although the fd is open: say what the kernel would say to the next call
 * on it instead, the socket's pending error (a refused connect), EPIPE for
 * a pipe whose other end is gone, else EIO. */
static int evl__pollerr(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  struct stat st;
  if (fcntl(fd, F_GETFD) == -1) return UV_EBADF;
  if (!getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) && err) return -err;
  if (!fstat(fd, &st) && S_ISFIFO(st.st_mode)) return -EPIPE;
  return -EIO;
}

static void evl__poll_cb(uv_poll_t *h, int status, int events) {
  evl__item_t *it = h->data;
  if (status < 0) {
    evl__watch_failed(it, status == UV_EBADF ? evl__pollerr(it->fd) : status);
    return;
  }
  evl__ready(it);
  if (events & UV_READABLE) it->events |= EVL_READABLE;
  if (events & UV_WRITABLE) it->events |= EVL_WRITABLE;
  evl__dq_push(it->l, it, 0, 0, 0);
}

/* Poll the watch's fd for the events it asked for. */
static int evl__poll_start(evl__item_t *it) {
  return uv_poll_start(&it->h.poll,
                       ((it->want & EVL_READABLE) ? UV_READABLE : 0) |
                       ((it->want & EVL_WRITABLE) ? UV_WRITABLE : 0),
                       evl__poll_cb);
}

/* A pass nested in fd watches' own callbacks: the fds stay ready until
 * those callbacks read them, so their level-triggered polls would end
 * every nested pass at once.  They rest until the calls return, then tell
 * afresh whether the fds are still ready (evl__fd_resume). */
void evl__fd_pause_running(evl_t *l) {
  for (evl__frame_t *fr = l->frame; fr != NULL; fr = fr->up) {
    evl__item_t *it = fr->it;
    if (it->kind != EVL__FD || it->paused || it->final ||
        it->uv_state != EVL__UV_ACTIVE)
      continue;
    uv_poll_stop(&it->h.poll);
    it->paused = 1;
  }
}

/* The call that paused its watch's poll has returned: poll again, unless
 * the watch has ended meanwhile.  A descriptor the callback closed ends
 * the watch with EBADF (libuv would abort on adding it to epoll). */
void evl__fd_resume(evl__item_t *it) {
  int r;
  it->paused = 0;
  if (it->uv_state != EVL__UV_ACTIVE || it->final) return;
  r = fcntl(it->fd, F_GETFD) == -1 ? UV_EBADF : evl__poll_start(it);
  if (r < 0) evl__watch_failed(it, r);
}

/* The wake-up said a signal came: every watch of this loop whose slot
 * the handler marked gets a call (merged with one already queued). */
void evl__signals_ready(evl_t *l) {
  int pos = 0;
  evl__item_t *it;
  while ((it = evl__sig_next(l, &pos)) != NULL) {
    evl__ready(it);
    evl__dq_push(l, it, 0, 0, 0);
  }
}

/* [pool thread] Run the work function unless cancelled first; the flag
 * check and the "started" mark are one step under mu so that evl_cancel
 * either prevents the call or reports EBUSY. */
static void evl__work_cb(uv_work_t *req) {
  evl__item_t *it = req->data;
  evl_t *l = it->l;
  int skip;
  pthread_mutex_lock(&l->mu);
  skip = it->cancelled;
  if (skip) it->skipped = 1; else it->started = 1;
  pthread_mutex_unlock(&l->mu);
  if (skip) return;
  evl__tls_work = l;
  if (it->kind == EVL__WORK) {
    it->work_fn(it->arg);
  } else {
    it->read_err = evl__read_path(it->path, it->flags, it->limit, NULL,
                                  &it->data, &it->len);
  }
  evl__tls_work = NULL;
}

static void evl__after_work_cb(uv_work_t *req, int status) {
  evl__item_t *it = req->data;
  evl_t *l = it->l;
  int skipped;
  it->uv_state = EVL__UV_DONE;
  l->uv_pending--;
  evl__ready(it);
  pthread_mutex_lock(&l->mu);
  skipped = it->skipped || !it->started;
  pthread_mutex_unlock(&l->mu);
  if (status == UV_ECANCELED || skipped)
    evl__dq_push(l, it, 1, ECANCELED, 1);
  else
    evl__dq_push(l, it, 1, it->kind == EVL__READ ? it->read_err : 0, 1);
}

/* A timer counts from its evl_timer call, not from its arming, which may
 * come a whole busy stretch of the loop thread later: what is left of
 * timeout_ms, rounded up to whole ms, plus how far libuv's loop time (a
 * coarse clock where the kernel ticks at 1 kHz) lags the precise one, so
 * that it never fires before the call's time + timeout_ms. */
static uint64_t evl__timer_left(evl_t *l, const evl__item_t *it) {
  uint64_t loop_ms = uv_now(&l->loop), due = evl__due_ns(it);
  if (due > UINT64_MAX - 999999u) return it->timeout_ms;
  /* libuv runs the timer once its loop time (whole ms of a clock that
   * never runs ahead of CLOCK_MONOTONIC, and may lag it by a coarse tick)
   * reaches loop_ms + the result: the due time rounded up to a whole ms. */
  uint64_t due_ms = (due + 999999u) / 1000000u;
  return due_ms > loop_ms ? due_ms - loop_ms : 0;
}

static int evl__start_handle(evl_t *l, evl__item_t *it) {
  int r = 0;
  switch (it->kind) {
  case EVL__TIMER:
    /* Due times count from libuv's cached loop time, which is stale after
     * a dispatch phase: refresh it so the timer does not fire early. */
    uv_update_time(&l->loop);
    uv_timer_init(&l->loop, &it->h.timer);
    it->h.handle.data = it;
    it->uv_state = EVL__UV_ACTIVE;
    it->refs++;
    l->uv_pending++;
    return uv_timer_start(&it->h.timer, evl__timer_cb, evl__timer_left(l, it),
                          it->repeat_ms);
  case EVL__FD:
    r = uv_poll_init(&l->loop, &it->h.poll, it->fd);
    if (r < 0) return r;
    it->h.handle.data = it;
    it->uv_state = EVL__UV_ACTIVE;
    it->refs++;
    l->uv_pending++;
    return evl__poll_start(it);
  case EVL__SIGNAL:
    r = evl__sig_arm(it);
    if (r < 0) return r;
    it->uv_state = EVL__UV_ACTIVE;
    if (r > 0) {                /* it came before the loop got here */
      evl__ready(it);
      evl__dq_push(l, it, 0, 0, 0);
    }
    return 0;
  default:
    it->work.data = it;
    r = uv_queue_work(&l->loop, &it->work, evl__work_cb, evl__after_work_cb);
    if (r == 0) {
      it->uv_state = EVL__UV_ACTIVE;
      l->uv_pending++;
    }
    return r;
  }
}

/* Start a new registration on the loop, or finish it at once if it was
 * cancelled before it got here. */
void evl__start_on_loop(evl_t *l, evl__item_t *it) {
  int cancelled, r;
  pthread_mutex_lock(&l->mu);
  cancelled = it->cancelled;
  if (!cancelled && it->kind == EVL__SIGNAL)
    it->started = 1;   /* evl_cancel leaves its slot to this thread now */
  pthread_mutex_unlock(&l->mu);
  if (cancelled) {
    if (it->kind == EVL__SIGNAL) evl__sig_remove(it);  /* its slot */
    evl__dq_push(l, it, 1, ECANCELED, 1);
    return;
  }
  if (it->kind == EVL__POST) {
    evl__ready(it);
    evl__dq_push(l, it, 1, 0, 0);
    return;
  }
  r = evl__start_handle(l, it);
  if (r < 0) {
    if (it->kind == EVL__FD) {
      /* epoll refuses what it cannot watch (/dev/null, ...) with EPERM. */
      evl__watch_failed(it, r == UV_EPERM ? -EVL_ENOTPOLL : r);
    } else {
      evl__close(it);
      evl__dq_push(l, it, 1, -r, 0);
    }
  }
}

/* Apply a cancellation.  Handles close now and their last call is queued
 * with ECANCELED (replacing a queued tick).  Items not started yet are
 * finished by evl__start_on_loop; queued one-shot calls become ECANCELED in
 * the dispatcher; queued work is cancelled in libuv if it has not reached a
 * pool thread (otherwise evl__work_cb skips it). */
void evl__cancel_on_loop(evl_t *l, evl__item_t *it) {
  if (it->uv_state != EVL__UV_ACTIVE) return;
  if (it->kind == EVL__WORK || it->kind == EVL__READ) {
    uv_cancel((uv_req_t *)&it->work);
    return;
  }
  evl__close(it);
  evl__dq_push(l, it, 1, ECANCELED, 1);
}

/* Sort a list linked by inext by due time; equal ones keep their order. */
static evl__item_t *evl__sort_due(evl__item_t *h) {
  evl__item_t *mid = h, *fast, *a, *b, *out = NULL, **tail = &out;
  if (h == NULL || h->inext == NULL) return h;
  for (fast = h->inext; fast != NULL && fast->inext != NULL; fast = fast->inext->inext)
    mid = mid->inext;
  b = mid->inext;
  mid->inext = NULL;
  a = evl__sort_due(h);
  b = evl__sort_due(b);
  while (a != NULL && b != NULL) {
    evl__item_t **m = evl__due_ns(b) < evl__due_ns(a) ? &b : &a;
    *tail = *m;
    tail = &(*m)->inext;
    *m = (*m)->inext;
  }
  *tail = a != NULL ? a : b;
  return out;
}

/* Take both incoming lists and apply them: cancellations first, so that a
 * watch cancelled and re-made on the same fd closes the old handle before
 * the new one opens.  The new timers are armed last, in due order, so
 * that those already due (libuv's timeout 0 alike, which libuv runs in the
 * order they were armed) join l->late in one pass over it. */
void evl__drain(evl_t *l) {
  evl__item_t *starts, *cancels, *it, *next, *timers = NULL, **tt = &timers;
  evl__item_t **late = NULL;
  pthread_mutex_lock(&l->mu);
  starts = l->in_head;
  cancels = l->c_head;
  l->in_head = l->in_tail = NULL;
  l->c_head = l->c_tail = NULL;
  pthread_mutex_unlock(&l->mu);
  for (it = cancels; it != NULL; it = next) {
    int zombie;
    pthread_mutex_lock(&l->mu);
    next = it->cnext;
    it->cnext = NULL;
    it->in_clist = 0;
    zombie = it->zombie;
    pthread_mutex_unlock(&l->mu);
    if (zombie) {
      EVL__STAT_ADD(l, live, (uint64_t)-1);
      evl__item_free(it);
    } else {
      evl__cancel_on_loop(l, it);
    }
  }
  for (it = starts; it != NULL; it = next) {
    next = it->inext;
    it->inext = NULL;
    if (it->kind == EVL__TIMER) {
      *tt = it;
      tt = &it->inext;
    } else {
      evl__start_on_loop(l, it);
    }
  }
  for (it = evl__sort_due(timers); it != NULL; it = next) {
    next = it->inext;
    it->inext = NULL;
    evl__start_on_loop(l, it);
    if (it->uv_state == EVL__UV_ACTIVE && it->repeat_ms == 0 &&
        evl__timer_left(l, it) == 0)
      late = evl__late_add(l, late, it);
  }
}
