/* SPDX-License-Identifier: MIT */
/*
 * evl_core.c -- the loop's life: start, the loop thread, evl_step, stop,
 * shutdown and destroy.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evl_int.h"
#include "evl_stdfd.h"
#include "gvl_trace.h"

_Thread_local evl_t *evl__tls_loop;
_Thread_local evl_t *evl__tls_work;

#define EVL__DEFAULT_BUDGET_COUNT 64u
#define EVL__DEFAULT_BUDGET_NS    2000000ull

/* ---- configuration --------------------------------------------------------- */

static int evl__prio_from(const evl_config_t *cfg, int *prio) {
  int p = cfg != NULL ? cfg->prio : GVL_PRIO_NORMAL;
  if (p < GVL_PRIO_MIN || p > GVL_PRIO_MAX) return EINVAL;
  *prio = p;
  return 0;
}

/* cfg.sched_policy, checked: a real-time policy and a priority the
 * kernel accepts for it, and only for a thread evl_start spawns. */
static int evl__sched_from(const evl_config_t *cfg, int *policy, int *prio) {
  *policy = -1;
  *prio = 0;
  if (cfg->sched_policy == EVL_SCHED_KEEP)
    return cfg->sched_priority == 0 ? 0 : EINVAL;
  if (cfg->sched_policy != EVL_SCHED_FIFO && cfg->sched_policy != EVL_SCHED_RR)
    return EINVAL;
  int p = cfg->sched_policy == EVL_SCHED_FIFO ? SCHED_FIFO : SCHED_RR;
  if (cfg->no_thread || cfg->sched_priority < sched_get_priority_min(p) ||
      cfg->sched_priority > sched_get_priority_max(p))
    return EINVAL;
  *policy = p;
  *prio = cfg->sched_priority;
  return 0;
}

static int evl__configure(evl_t *l, const evl_config_t *cfg) {
  int err = evl__prio_from(cfg, &l->prio);
  if (err != 0) return err;
  l->budget_count = EVL__DEFAULT_BUDGET_COUNT;
  l->budget_ns = EVL__DEFAULT_BUDGET_NS;
  l->sched_policy = -1;
  if (cfg == NULL) return 0;
  if (cfg->no_thread != 0 && cfg->no_thread != 1) return EINVAL;
  if (cfg->budget_count != 0) l->budget_count = cfg->budget_count;
  if (cfg->budget_ns != 0) l->budget_ns = cfg->budget_ns;
  l->no_thread = cfg->no_thread;
  if ((err = evl__sched_from(cfg, &l->sched_policy, &l->sched_priority)) != 0)
    return err;
  l->driver = cfg->driver;
  l->driver_arg = cfg->driver_arg;
  l->on_error = cfg->on_error;
  l->on_error_arg = cfg->on_error_arg;
  l->on_ready = cfg->on_ready;
  l->on_ready_arg = cfg->on_ready_arg;
  l->on_stop = cfg->on_stop;
  l->on_stop_arg = cfg->on_stop_arg;
  return 0;
}

/* ---- libuv plumbing -------------------------------------------------------- */

/* Read the wake-up first: a send made after it wakes the next poll. */
static void evl__wake_cb(uv_poll_t *h, int status, int events) {
  evl_t *l = h->data;
  (void)status;
  (void)events;
  evl__wake_drain(&l->wake);
  if (atomic_exchange(&l->sig_pending, 0)) evl__signals_ready(l);
  evl__drain(l);
}

static void evl__wake_closed(uv_handle_t *h) {
  evl_t *l = h->data;
  evl__wake_close(&l->wake);
}

/* Between the poll and the timers libuv runs after it. */
static void evl__drain_check_cb(uv_check_t *h) {
  ((evl_t *)h->data)->timer_drained = 0;
}

/* evl_step's timeout.  If it is already due when uv_run starts, libuv 1.44
 * runs it at the top of the iteration and would then poll without a
 * timeout; uv_stop makes that poll return at once. */
static void evl__step_timer_cb(uv_timer_t *h) {
  uv_stop(h->loop);
}

/* libuv opens its descriptors with the free low numbers held: see
 * evl_stdfd.h. */
static int evl__uv_init(evl_t *l) {
  evl__fd_hold_t held;
  l->wake.rfd = l->wake.wfd = -1;
  int r = evl__std_hold(&held, EVL__FD_NEED_EVL) ? UV_EMFILE
                                                 : uv_loop_init(&l->loop);
  if (r == 0) {
    evl__std_loop_made();
    r = -evl__wake_open(&l->wake);
    if (r == 0) r = uv_poll_init(&l->loop, &l->wake_poll, l->wake.rfd);
    if (r == 0) {
      l->wake_poll.data = l;
      r = uv_poll_start(&l->wake_poll, UV_READABLE, evl__wake_cb);
      if (r < 0) {
        uv_close((uv_handle_t *)&l->wake_poll, NULL);
        uv_run(&l->loop, UV_RUN_NOWAIT);
      }
    }
    if (r < 0) {
      evl__wake_close(&l->wake);
      uv_loop_close(&l->loop);
    }
  }
  evl__std_release(&held);
  if (r < 0) return -r;
  uv_timer_init(&l->loop, &l->step_timer);
  /* The step timer must not keep the loop alive during shutdown. */
  uv_unref((uv_handle_t *)&l->step_timer);
  /* After the poll, libuv 1.44's UV_RUN_ONCE runs due timers again: the
   * first of them may drain too (see evl__timer_cb). */
  uv_check_init(&l->loop, &l->drain_check);
  l->drain_check.data = l;
  uv_check_start(&l->drain_check, evl__drain_check_cb);
  uv_unref((uv_handle_t *)&l->drain_check);
  return 0;
}

static void evl__close_any(uv_handle_t *h, void *arg) {
  int *n = arg;
  if (uv_is_closing(h)) return;
  uv_close(h, NULL);
  (*n)++;
}

/* Close the loop.  Handles that a layer above left open are closed here so
 * that shutdown cannot hang on them (and reported). */
static void evl__uv_fini(evl_t *l) {
  int left = 0;
  uv_walk(&l->loop, evl__close_any, &left);
  uv_run(&l->loop, UV_RUN_DEFAULT);
  if (left > 0) evl__report(l, EBUSY, "evloop: handles left open at stop");
  uv_loop_close(&l->loop);
}

/* ---- the loop thread ------------------------------------------------------- */

/* The loops the forking thread drives (evl_run, evl_attach, and the
 * loops it is nested in) go on in the child, driven by the same thread
 * (evloop.h).  Until they have kernel state of their own they share the
 * parent's: a poll stopped in the child would take the parent's fd out of
 * its epoll instance, a wake-up read there would be the parent's.  Every
 * fork from such a thread pays for it (Tcl's exec too), so it is kept to
 * a few system calls: libuv closes each descriptor before it makes the
 * new one, on the lowest free number (the low numbers are not held as at
 * start).  Should the kernel refuse (out of memory), the loop is stopped,
 * and libuv aborts the child if it is stepped again.  The condition is
 * made anew: its waiters were threads of the parent. */
static void evl__fork_loop(evl_t *l) {
  int old = uv_backend_fd(&l->loop);
  pthread_cond_init(&l->cv, NULL);
  if (l->wake.rfd < 0 || evl__wake_fork(&l->wake) != 0 ||
      uv_loop_fork(&l->loop) != 0) {
    l->closed = 1;
    atomic_store(&l->stopping, 1);
    uv_stop(&l->loop);
    return;
  }
  /* evl_backend's number stays: a host that registered it (the Tcl
   * package's file handler, a select loop) goes on polling it.  libuv
   * keeps the descriptor in uv/unix.h's backend_fd, the field
   * uv_backend_fd reads. */
  int now = uv_backend_fd(&l->loop);
  if (old >= 0 && now >= 0 && now != old && dup3(now, old, O_CLOEXEC) == old) {
    close(now);
    l->loop.backend_fd = old;
  }
}

/* The forking thread's loops' locks are taken before the fork, so that no
 * other thread is between a lock and an unlock of them (a registration
 * half linked) when the child is made; the only loops the child uses.
 * libgvl's handlers run after this one, so l->mu comes before the GVL's
 * locks here, as everywhere. */
static void evl__atfork_prepare(void) {
  for (evl_t *l = evl__tls_loop; l != NULL; l = l->saved_tls)
    pthread_mutex_lock(&l->mu);
}

static void evl__atfork_parent(void) {
  for (evl_t *l = evl__tls_loop; l != NULL; l = l->saved_tls)
    pthread_mutex_unlock(&l->mu);
}

/* A fork()ed child keeps only the forking thread: it drives in the child
 * the loops it drove; a work function it was in is no longer one. */
static void evl__atfork_child(void) {
  for (evl_t *l = evl__tls_loop; l != NULL; l = l->saved_tls) {
    pthread_mutex_unlock(&l->mu);
    evl__fork_loop(l);
  }
  evl__tls_work = NULL;
}

static void evl__atfork_init(void) {
  (void)pthread_atfork(evl__atfork_prepare, evl__atfork_parent,
                       evl__atfork_child);
}

/* Make the calling thread the loop thread: use its GVL handle if it has
 * one (no_thread mode on an interpreter thread), else attach. */
static int evl__enter(evl_t *l) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, evl__atfork_init);
  l->gt = gvl_thread_self(l->g);
  l->own_gt = 0;
  if (l->gt == NULL) {
    l->gt = gvl_thread_attach(l->g, l->prio);
    if (l->gt == NULL) return errno != 0 ? errno : ENOMEM;
    l->own_gt = 1;
  }
  l->saved_tls = evl__tls_loop;
  evl__tls_loop = l;
  return 0;
}

/* evl_run or evl_attach could not make this thread the loop thread: the
 * loop is idle again.  An evl_stop that saw it running waits for run_state
 * to change, and is woken here as at the end of a run. */
static void evl__enter_failed(evl_t *l) {
  pthread_mutex_lock(&l->mu);
  l->run_state = EVL__RS_IDLE;
  l->attached = 0;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

static void evl__leave(evl_t *l) {
  evl__tls_loop = l->saved_tls;
  if (l->own_gt) gvl_thread_detach(l->gt);
  l->gt = NULL;
  pthread_mutex_lock(&l->mu);
  l->run_state = EVL__RS_DONE;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

/* Request the stop, under l->mu: 1 if this was the first request. */
static int evl__request_stop_locked(evl_t *l) {
  int first = !atomic_exchange(&l->stopping, 1);
  evl__wake_locked(l);
  return first;
}

/* After the first request, outside l->mu (the hook takes locks of its
 * own): cfg.on_stop lets a driver end host code that would not look at
 * evl_stopping soon, such as a Tcl script that never enters the notifier. */
static void evl__stop_hook(evl_t *l, int first) {
  if (first && l->on_stop != NULL) l->on_stop(l, l->on_stop_arg);
}

static void evl__set_stopping(evl_t *l) {
  int first;
  pthread_mutex_lock(&l->mu);
  first = evl__request_stop_locked(l);
  pthread_mutex_unlock(&l->mu);
  evl__stop_hook(l, first);
}

/* One uv_run pass without the GVL, then a dispatch.  It waits (at most
 * timeout_ms, -1 for ever) only when no callback is waiting for dispatch. */
static int evl__pass(evl_t *l, int64_t timeout_ms) {
  uv_run_mode mode = UV_RUN_NOWAIT;
  if (l->dq_head == NULL && timeout_ms != 0) {
    mode = UV_RUN_ONCE;
    if (timeout_ms > 0) {
      uv_update_time(&l->loop);  /* count the timeout from now */
      uv_timer_start(&l->step_timer, evl__step_timer_cb, (uint64_t)timeout_ms,
                     0);
    }
  }
  l->in_uv_run = 1;
  l->timer_drained = 0;
  uv_run(&l->loop, mode);
  l->in_uv_run = 0;
  EVL__STAT_ADD(l, iterations, 1);
  if (mode == UV_RUN_ONCE && timeout_ms > 0) uv_timer_stop(&l->step_timer);
  return evl__dispatch(l);
}

/* Shut the loop down on the loop thread: cancel every registration, close
 * the wake-up handle, and run until every last call has been made and every
 * handle is closed (running pool work is waited for). */
static void evl__shutdown(evl_t *l) {
  int fails = 0;
  pthread_mutex_lock(&l->mu);
  atomic_store(&l->stopping, 1);
  l->closed = 1;
  evl__mark_all_cancelled(l);
  pthread_mutex_unlock(&l->mu);
  evl__drain(l);
  pthread_mutex_lock(&l->mu);
  l->wake_closed = 1;
  pthread_mutex_unlock(&l->mu);
  uv_close((uv_handle_t *)&l->wake_poll, evl__wake_closed);
  uv_close((uv_handle_t *)&l->step_timer, NULL);
  uv_close((uv_handle_t *)&l->drain_check, NULL);
  /* Count our own handles and requests, not uv_loop_alive: a handle that a
   * layer above left open would keep the loop alive for ever. */
  while (l->dq_head != NULL || l->uv_pending > 0) {
    /* Only a broken GVL makes a pass fail; do not spin on it for ever. */
    if (evl__pass(l, -1) != 0 && ++fails > 1000) break;
  }
  evl__uv_fini(l);
}

static void evl__body(evl_t *l) {
  if (l->driver != NULL && !atomic_load(&l->stopping)) {
    l->driver(l, l->driver_arg);
  } else {
    while (!atomic_load(&l->stopping)) evl_step(l, -1);
  }
  evl__shutdown(l);
}

static void *evl__thread_main(void *p) {
  evl_t *l = p;
  gvl_trace_set_thread_name("evloop");
  int err = 0;
  if (l->sched_policy >= 0) {
    /* Not for the threads it starts: libuv's pool, shared by the whole
     * process, is created by the first piece of work queued. */
    struct sched_param sp = {.sched_priority = l->sched_priority};
#ifdef SCHED_RESET_ON_FORK
    if (sched_setscheduler(0, l->sched_policy | SCHED_RESET_ON_FORK, &sp) != 0)
      err = errno;
#else
    err = pthread_setschedparam(pthread_self(), l->sched_policy, &sp);
#endif
  }
  if (err == 0) err = evl__enter(l);
  pthread_mutex_lock(&l->mu);
  l->start_err = err;
  l->start_done = 1;
  if (err == 0) l->run_state = EVL__RS_RUNNING;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
  if (err != 0) return NULL;
  evl__body(l);
  evl__leave(l);
  return NULL;
}

/* ---- lifecycle ------------------------------------------------------------- */

static void evl__free(evl_t *l) {
  pthread_cond_destroy(&l->cv);
  pthread_mutex_destroy(&l->mu);
  free(l->map);
  free(l);
}

/* Close the libuv side of a loop whose thread never ran. */
static void evl__abort_start(evl_t *l) {
  uv_close((uv_handle_t *)&l->wake_poll, evl__wake_closed);
  uv_close((uv_handle_t *)&l->step_timer, NULL);
  uv_close((uv_handle_t *)&l->drain_check, NULL);
  uv_run(&l->loop, UV_RUN_DEFAULT);
  uv_loop_close(&l->loop);
  evl__free(l);
}

static int evl__spawn(evl_t *l) {
  int err = pthread_create(&l->thread, NULL, evl__thread_main, l);
  if (err != 0) return err;
  pthread_mutex_lock(&l->mu);
  while (!l->start_done) pthread_cond_wait(&l->cv, &l->mu);
  err = l->start_err;
  pthread_mutex_unlock(&l->mu);
  if (err != 0) pthread_join(l->thread, NULL);
  else l->has_thread = 1;
  return err;
}

static evl_t *evl__alloc(gvl_t *g, const evl_config_t *cfg, int *err) {
  evl_t *l = calloc(1, sizeof *l);
  if (l == NULL) {
    *err = ENOMEM;
    return NULL;
  }
  l->g = g;
  if ((*err = evl__configure(l, cfg)) != 0 || (*err = evl__map_init(l)) != 0) {
    free(l->map);
    free(l);
    return NULL;
  }
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, NULL);
  return l;
}

evl_t *evl_start(gvl_t *g, const evl_config_t *cfg) {
  int err = 0;
  evl_t *l;
  if (g == NULL) {
    errno = EINVAL;
    return NULL;
  }
  if ((l = evl__alloc(g, cfg, &err)) == NULL) {
    errno = err;
    return NULL;
  }
  if ((err = evl__uv_init(l)) != 0) {
    evl__free(l);
    errno = err;
    return NULL;
  }
  if (!l->no_thread && (err = evl__spawn(l)) != 0) {
    evl__abort_start(l);
    errno = err;
    return NULL;
  }
  return l;
}

/* The config back from the fields evl__configure kept (sched_policy from
 * the kernel's policy to evloop's name for it). */
int evl_config_get(evl_t *l, evl_config_t *out) {
  if (l == NULL || out == NULL) return EINVAL;
  memset(out, 0, sizeof *out);
  out->prio = l->prio;
  out->budget_count = l->budget_count;
  out->budget_ns = l->budget_ns;
  out->no_thread = l->no_thread;
  out->driver = l->driver;
  out->driver_arg = l->driver_arg;
  out->on_error = l->on_error;
  out->on_error_arg = l->on_error_arg;
  out->on_ready = l->on_ready;
  out->on_ready_arg = l->on_ready_arg;
  out->sched_policy = l->sched_policy == SCHED_FIFO ? EVL_SCHED_FIFO
                      : l->sched_policy == SCHED_RR ? EVL_SCHED_RR
                                                    : EVL_SCHED_KEEP;
  out->sched_priority = l->sched_priority;
  out->on_stop = l->on_stop;
  out->on_stop_arg = l->on_stop_arg;
  return 0;
}

int evl_run(evl_t *l) {
  int err, was_held;
  if (l == NULL) return EINVAL;
  if (!l->no_thread) return EPERM;
  pthread_mutex_lock(&l->mu);
  err = l->run_state != EVL__RS_IDLE ? EBUSY : 0;
  if (err == 0) l->run_state = EVL__RS_RUNNING;
  pthread_mutex_unlock(&l->mu);
  if (err != 0) return err;
  if ((err = evl__enter(l)) != 0) {
    evl__enter_failed(l);
    return err;
  }
  /* A host thread may call this holding the GVL; the loop never waits
   * holding it, so it is given up here and taken back at the end. */
  was_held = gvl_thread_holds(l->gt);
  if (was_held) gvl_release(l->gt);
  evl__body(l);
  if (was_held) gvl_acquire_prio(l->gt, l->prio);
  evl__leave(l);
  return 0;
}

int evl_step(evl_t *l, int64_t timeout_ms) {
  int was_held, err;
  if (l == NULL || timeout_ms < -1) return EINVAL;
  if (evl__tls_loop != l) return EPERM;
  if (l->in_uv_run) return EBUSY;
  /* Never wait in the kernel holding the GVL: a dispatched callback that
   * nests a wait gives it up here and gets it back below. */
  was_held = gvl_thread_holds(l->gt);
  if (was_held) gvl_release(l->gt);
  evl__drain(l);
  evl__fd_pause_running(l);
  /* After a stop request only poll: the driver is about to return. */
  err = evl__pass(l, atomic_load(&l->stopping) ? 0 : timeout_ms);
  if (was_held) {
    int e2 = gvl_acquire_prio(l->gt, l->prio);
    if (err == 0) err = e2;
  }
  return err;
}

/* ---- a host's own event loop: attach / detach -------------------------------- */

int evl_attach(evl_t *l) {
  int err;
  if (l == NULL) return EINVAL;
  if (!l->no_thread) return EPERM;
  /* Attached, the thread would be this loop's loop thread and no longer
   * the other's until it detaches: every call of the other's host that
   * needs its loop thread would fail meanwhile. */
  if (evl__tls_loop != NULL) return EBUSY;
  pthread_mutex_lock(&l->mu);
  err = l->run_state != EVL__RS_IDLE ? EBUSY : 0;
  if (err == 0) {
    l->run_state = EVL__RS_RUNNING;
    l->attached = 1;
  }
  pthread_mutex_unlock(&l->mu);
  if (err != 0) return err;
  if ((err = evl__enter(l)) != 0) evl__enter_failed(l);
  return err;
}

int evl_detach(evl_t *l) {
  int was_held, attached;
  if (l == NULL) return EINVAL;
  pthread_mutex_lock(&l->mu);
  attached = l->attached;
  pthread_mutex_unlock(&l->mu);
  if (evl__tls_loop != l || !attached) return EPERM;
  if (l->frame != NULL || l->in_uv_run || l->reporting) return EBUSY;
  evl__set_stopping(l);
  /* As in evl_run: the shutdown never waits holding the GVL. */
  was_held = gvl_thread_holds(l->gt);
  if (was_held) gvl_release(l->gt);
  evl__shutdown(l);
  if (was_held) gvl_acquire_prio(l->gt, l->prio);
  evl__leave(l);
  return 0;
}

int evl_backend(evl_t *l, int *fd_out, int *timeout_ms_out) {
  if (l == NULL || fd_out == NULL || timeout_ms_out == NULL) return EINVAL;
  if (evl__tls_loop != l) return EPERM;
  *fd_out = uv_backend_fd(&l->loop);
  if (l->dq_head != NULL || atomic_load(&l->stopping)) {
    *timeout_ms_out = 0;
  } else {
    /* libuv counts from its cached time, taken before the last step's
     * callbacks ran: after a long one the timeout would be that much too
     * long, and a due timer that much late. */
    uv_update_time(&l->loop);
    *timeout_ms_out = uv_backend_timeout(&l->loop);
  }
  return 0;
}

/* ---- stop and destroy --------------------------------------------------------- */

static void *evl__wait_done(void *p) {
  evl_t *l = p;
  pthread_mutex_lock(&l->mu);
  while (l->run_state == EVL__RS_RUNNING) pthread_cond_wait(&l->cv, &l->mu);
  pthread_mutex_unlock(&l->mu);
  return p;
}

/* Wait for the loop thread to finish.  A caller holding the GVL gives it up
 * meanwhile: the loop thread needs it to make the last calls.  An interrupt
 * pending on the caller makes gvl_call_without return EINTR without waiting
 * and consumes it: the wait is tried again, and the interrupt posted again
 * after it, so that the caller's next safe point still sees it. */
static void evl__wait_finished(evl_t *l) {
  gvl_thread_t *me = gvl_thread_self(l->g);
  int intr = 0;
  if (me == NULL || !gvl_thread_holds(me)) {
    evl__wait_done(l);
    return;
  }
  while (gvl_call_without(me, evl__wait_done, l, NULL, NULL) == NULL &&
         errno == EINTR)
    intr = 1;
  if (intr) gvl_thread_interrupt(me);
}

/* Is l the loop of this thread, or of a loop this thread runs nested
 * (evl_run inside a callback or an attached thread)?  Then the thread is
 * l's loop thread, busy inside another loop: waiting for l to finish would
 * wait for itself. */
static int evl__on_this_thread(const evl_t *l) {
  for (const evl_t *x = evl__tls_loop; x != NULL; x = x->saved_tls)
    if (x == l) return 1;
  return 0;
}

int evl_stop(evl_t *l) {
  int wait, first;
  if (l == NULL) return EINVAL;
  if (evl__on_this_thread(l) || evl__tls_work == l) {
    evl__set_stopping(l);
    if (evl__tls_work != l && l->in_uv_run) uv_stop(&l->loop);
    return 0;
  }
  /* The stop request and the count that keeps evl_destroy from freeing l
   * are one critical section: a thread that has requested the stop is
   * counted until its last touch of l. */
  pthread_mutex_lock(&l->mu);
  first = evl__request_stop_locked(l);
  wait = l->run_state == EVL__RS_RUNNING;
  l->stop_waiters++;
  pthread_mutex_unlock(&l->mu);
  evl__stop_hook(l, first);
  if (wait) evl__wait_finished(l);
  /* The last touch of l: evl_destroy waits for it before it frees l. */
  pthread_mutex_lock(&l->mu);
  if (--l->stop_waiters == 0) pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
  return 0;
}

int evl_destroy(evl_t *l) {
  int idle, err;
  if (l == NULL) return EINVAL;
  if (evl__tls_work == l) return EBUSY;
  if (evl__tls_loop == l) {
    /* Only the attached host thread, outside callbacks, may destroy here. */
    if ((err = evl_detach(l)) != 0) return err == EPERM ? EBUSY : err;
  } else if (evl__on_this_thread(l)) {
    return EBUSY;   /* l's loop thread, inside a loop it runs nested */
  }
  evl__set_stopping(l);
  pthread_mutex_lock(&l->mu);
  idle = l->run_state == EVL__RS_IDLE;
  pthread_mutex_unlock(&l->mu);
  if (idle && l->no_thread) {
    err = evl_run(l);  /* shut down on this thread */
    if (err != 0) return err;
  }
  evl_stop(l);
  if (l->has_thread) pthread_join(l->thread, NULL);
  /* Other threads' evl_stop calls may still be on their way out. */
  pthread_mutex_lock(&l->mu);
  while (l->stop_waiters) pthread_cond_wait(&l->cv, &l->mu);
  pthread_mutex_unlock(&l->mu);
  evl__free(l);
  return 0;
}

/* ---- small accessors ---------------------------------------------------------- */

int evl_stopping(evl_t *l) {
  return l != NULL && atomic_load(&l->stopping);
}

int evl_wakeup(evl_t *l) {
  int err = 0;
  if (l == NULL) return EINVAL;
  pthread_mutex_lock(&l->mu);
  if (l->wake_closed) err = EVL_ESTOPPED;
  else evl__wake_send(&l->wake);
  pthread_mutex_unlock(&l->mu);
  return err;
}

uv_loop_t *evl_uv_loop(evl_t *l) {
  return l != NULL && evl__tls_loop == l ? &l->loop : NULL;
}

gvl_thread_t *evl_gvl_thread(evl_t *l) {
  return l != NULL && evl__tls_loop == l ? l->gt : NULL;
}

gvl_t *evl_gvl(evl_t *l) {
  return l != NULL ? l->g : NULL;
}

int evl_in_loop_thread(evl_t *l) {
  return l != NULL && evl__tls_loop == l;
}

int evl_stats(evl_t *l, evl_stats_t *out) {
  if (l == NULL || out == NULL) return EINVAL;
  out->iterations = atomic_load_explicit(&l->st.iterations, memory_order_relaxed);
  out->dispatched = atomic_load_explicit(&l->st.dispatched, memory_order_relaxed);
  out->cancelled = atomic_load_explicit(&l->st.cancelled, memory_order_relaxed);
  out->errors = atomic_load_explicit(&l->st.errors, memory_order_relaxed);
  out->failures = atomic_load_explicit(&l->st.failures, memory_order_relaxed);
  out->acquisitions =
      atomic_load_explicit(&l->st.acquisitions, memory_order_relaxed);
  out->budget_hits =
      atomic_load_explicit(&l->st.budget_hits, memory_order_relaxed);
  out->live = atomic_load_explicit(&l->st.live, memory_order_relaxed);
  return 0;
}

const char *evl_strerror(int err) {
  switch (err) {
    case EVL_ESTOPPED: return "loop stopped: evl_stop was requested, new registrations are refused";
    case EVL_ENOREG: return "no such registration: the id is unknown or has had its last call";
    case EVL_ENOTPOLL: return "cannot watch this fd: a regular file or directory is always ready";
    case EINVAL: return "invalid argument (NULL or out of range)";
    case EPERM: return "wrong thread for this call (see its thread rule in evloop.h)";
    case EBUSY:
      return "busy: inside a callback, work or a file read already started, "
             "the loop running already, or on the loop thread";
    case EEXIST: return "the fd is already watched on this loop";
    case ECANCELED: return "cancelled (evl_cancel or evl_stop)";
    default: return gvl__err_text(err);
  }
}

const char *evl_err_name(int err) {
  switch (err) {
    case EVL_ESTOPPED: return "EVL_ESTOPPED";
    case EVL_ENOREG: return "EVL_ENOREG";
    case EVL_ENOTPOLL: return "EVL_ENOTPOLL";
    default: return gvl__err_name(err);
  }
}

unsigned evl_version(void) { return EVL_VERSION_HEX; }

const char *evl_version_string(void) { return EVL_VERSION_STRING; }
