/* SPDX-License-Identifier: MIT */
/*
 * evl_int.h -- libevloop's private state.
 *
 * Locks: one mutex per loop, evl_t.mu.  It guards the id map, the two
 * incoming lists, the fd list and the flags other threads look at; every
 * field below names "mu", "loop" (touched only by the loop thread, which
 * needs no lock), "immutable" (set before the item or loop is published
 * under mu, never written after) or its own rule.  Threads wake the loop
 * (evl__wake_send) only under mu, after checking wake_closed, so that no
 * send can race with the close of the wake-up; signal handlers, which
 * cannot lock, send only through a slot of evl_signal.c's table, which the
 * loop empties before it closes.
 */
#ifndef EVL_INT_H
#define EVL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#include "evloop.h"
#include "evl_wake.h"

/* What a registration is. */
enum {
  EVL__POST = 1,
  EVL__TIMER,
  EVL__FD,
  EVL__SIGNAL,
  EVL__WORK,
  EVL__READ
};

/* Where an item's libuv side is (loop). */
enum {
  EVL__UV_NONE = 0,   /* not started yet                              */
  EVL__UV_ACTIVE,     /* handle open / work request queued             */
  EVL__UV_DONE        /* handle closing or closed / work completed     */
};

typedef struct evl__item evl__item_t;


/* One registration.  Freed by the loop thread once its last call has been
 * made, its handle is closed and no call of it is on the stack (refs). */
struct evl__item {
  evl_t *l;                /* immutable                                  */
  evl_id_t id;             /* set once under mu before publication       */
  int kind;                /* EVL__*; immutable                          */
  unsigned flags;          /* EVL_F_* and EVL_READ_*; immutable          */
  void *arg;               /* immutable                                  */
  evl_cb cb;               /* POST TIMER SIGNAL WORK; immutable          */
  evl_io_cb io_cb;         /* FD; immutable                              */
  evl_read_cb read_cb;     /* READ; immutable                            */

  evl__item_t *hnext;      /* mu: id map chain                           */
  evl__item_t *inext;      /* incoming "start" list: mu while on
                              l->in_head's list; the loop thread's once
                              evl__drain has taken the list              */
  evl__item_t *cnext;      /* mu: incoming "cancel" list                 */
  evl__item_t *fnext;      /* mu: list of live fd watches                */
  int in_map;              /* mu                                         */
  int in_clist;            /* mu: linked in the cancel list              */
  int in_flist;            /* mu                                         */
  int zombie;              /* mu: freeable, but still in the cancel list */
  int cancelled;           /* mu: evl_cancel or stop                     */
  int started;             /* mu: WORK/READ function began; SIGNAL: the
                              loop thread is starting the watch         */
  int skipped;             /* mu: WORK/READ function was not called      */

  evl__item_t *dnext;      /* loop: dispatch queue                       */
  int in_dq;               /* loop                                       */
  int final;               /* loop: the queued call is the last one      */
  int status;              /* loop: status of that last call             */
  int status_fixed;        /* loop: status may not change any more: the
                              completion of work (or a read) that ran,
                              or an ECANCELED already; never turned
                              into ECANCELED, even by a shutdown        */
  int delivered;           /* loop: last call made                       */
  int running;             /* loop: calls of this item on the stack      */
  int deferred;            /* loop: popped while running; re-queue       */
  int paused;              /* loop: FD poll stopped for a pass nested in
                              a call of it; restarted when it returns    */
  int uv_state;            /* loop: EVL__UV_*                            */
  int refs;                /* loop: delivery + open handle + running     */
  unsigned events;         /* loop: FD events merged since the last call */

  evl__item_t *lnext;      /* loop: one-shot TIMER armed when already
                              due, in l->late (see evl__late_add)         */
  evl__item_t **lpprev;    /* loop: the link that points at it there, or
                              NULL when not in l->late                   */
  uint64_t timeout_ms;     /* TIMER; immutable                           */
  uint64_t call_ns;        /* TIMER: uv_hrtime() at evl_timer; immutable  */
  uint64_t repeat_ms;      /* TIMER; immutable                           */
  int fd;                  /* FD; immutable                              */
  unsigned want;           /* FD: EVL_READABLE | EVL_WRITABLE; immutable */
  int signum;              /* SIGNAL; immutable                          */
  int sig_slot;            /* SIGNAL: its slot in evl_signal.c's table
                              while the watch is on, else -1; set by the
                              registering thread before the submit, then
                              the loop thread's                          */
  unsigned sig_gen;        /* SIGNAL: that table's generation, as sig_slot */
  unsigned sig_seq;        /* SIGNAL: which taking of the slot, as sig_slot */
  int sig_err;             /* SIGNAL: a libuv error the watch ends with
                              (no slot, sigaction refuses); as sig_slot  */
  evl_work_fn work_fn;     /* WORK; immutable                            */
  char *path;              /* READ: owned copy; immutable                */
  size_t limit;            /* READ; immutable                            */
  char *data;              /* READ: result, with len and read_err, written
                              by the pool thread, then the loop's (libuv
                              orders the two)                           */
  size_t len;              /* READ: as data                              */
  int read_err;            /* READ: as data                              */

  union {
    uv_handle_t handle;
    uv_timer_t timer;
    uv_poll_t poll;
  } h;                     /* loop                                       */
  uv_work_t work;          /* loop (and libuv's pool)                    */
};

/* A host callback running on the loop thread (for evl_fail). */
typedef struct evl__frame {
  struct evl__frame *up;
  evl__item_t *it;         /* the item whose callback this frame runs    */
  int err;
  char what[256];
} evl__frame_t;

/* Counters: written by the loop thread (live also by any submitting
 * thread, in evl__submit), read by anyone. */
typedef struct {
  _Atomic uint64_t iterations, dispatched, cancelled, errors, failures,
      acquisitions, budget_hits, live;
} evl__stats_t;

/* Run state of the loop (mu). */
enum { EVL__RS_IDLE = 0, EVL__RS_RUNNING, EVL__RS_DONE };

struct evl_s {
  gvl_t *g;                /* immutable                                  */
  int prio;                /* dispatch priority; immutable               */
  unsigned budget_count;   /* immutable                                  */
  uint64_t budget_ns;      /* immutable                                  */
  int no_thread;           /* immutable                                  */
  int sched_policy;        /* SCHED_FIFO / SCHED_RR for the loop thread,
                              or -1 to leave it; immutable               */
  int sched_priority;      /* immutable                                  */
  /* The config's callbacks and their arguments; immutable. */
  void (*driver)(evl_t *, void *);
  void *driver_arg;
  void (*on_error)(evl_t *, int, const char *, void *);
  void *on_error_arg;
  void (*on_ready)(evl_t *, evl_id_t, void *);
  void *on_ready_arg;
  void (*on_stop)(evl_t *, void *);
  void *on_stop_arg;

  pthread_mutex_t mu;
  pthread_cond_t cv;       /* broadcast under mu when run_state leaves
                              RUNNING, start_done is set or
                              stop_waiters drops to 0                   */
  evl__item_t **map;       /* mu: id -> item, chained, power-of-2 size   */
  size_t map_size;         /* mu                                         */
  size_t map_count;        /* mu                                         */
  evl_id_t next_id;        /* mu                                         */
  evl__item_t *in_head;    /* mu: registrations to start on the loop     */
  evl__item_t *in_tail;
  evl__item_t *c_head;     /* mu: cancellations to apply on the loop     */
  evl__item_t *c_tail;
  evl__item_t *fds;        /* mu: fd watches not yet finished            */
  int closed;              /* shutdown began, registrations refused;
                              written under mu by the loop thread, which
                              reads it without; also by a fork child
                              alone in the process (evl__fork_loop)     */
  int wake_closed;         /* mu: no more evl__wake_send but a handler's */
  int run_state;           /* mu: EVL__RS_*                              */
  int stop_waiters;        /* mu: threads in evl_stop after its request  */
  int attached;            /* mu: the loop thread came from evl_attach   */
  int start_done;          /* mu: loop thread finished its start-up      */
  int start_err;           /* mu                                         */
  atomic_int stopping;     /* written under mu (or by a fork child alone
                              in the process: evl__fork_loop), read
                              anywhere                                  */

  int has_thread;          /* immutable after evl_start                  */
  pthread_t thread;        /* immutable after evl_start                  */

  uv_loop_t loop;          /* loop                                       */
  evl__wake_t wake;        /* fds immutable while open; sent under mu,
                              or by evl_signal.c's handler               */
  uv_poll_t wake_poll;     /* loop: polls wake.rfd                       */
  atomic_int sig_pending;  /* set by the signal handler, taken by loop   */
  uv_timer_t step_timer;   /* loop: evl_step's timeout                   */
  gvl_thread_t *gt;        /* loop: the loop thread's GVL handle         */
  int own_gt;              /* loop: attached by us, detach at the end    */
  int in_uv_run;           /* loop                                       */
  int timer_drained;       /* loop: a timer callback of this timer round
                              has drained new registrations (evl_uv.c);
                              cleared before each uv_run and by
                              drain_check after its poll                 */
  uv_check_t drain_check;  /* loop: clears timer_drained after the poll  */
  int uv_pending;          /* loop: item handles open + work in libuv    */
  evl__item_t *late;       /* loop: one-shot timers armed when already
                              due and not fired yet, in due order        */
  evl__item_t *dq_head;    /* loop: dispatch queue                       */
  evl__item_t *dq_tail;
  evl__frame_t *frame;     /* loop: innermost running callback           */
  int reporting;           /* loop: inside cfg.on_error                  */
  evl_t *saved_tls;        /* loop: evl__tls_loop before evl_run         */

  evl__stats_t st;         /* atomics: see evl__stats_t                  */
};

/* The loop whose thread this is, and the loop whose work function this
 * thread is running.  Thread-local because "which loop am I" is a property
 * of the calling thread; the loop handles stay free of global state. */
extern _Thread_local evl_t *evl__tls_loop;
extern _Thread_local evl_t *evl__tls_work;

#define EVL__STAT_ADD(l, f, n) \
  atomic_fetch_add_explicit(&(l)->st.f, (n), memory_order_relaxed)

/* evl_items.c */
evl__item_t *evl__item_new(evl_t *l, int kind, unsigned flags, void *arg);
void evl__item_free(evl__item_t *it);
void evl__item_unref(evl_t *l, evl__item_t *it);
int evl__submit(evl_t *l, evl__item_t *it, evl_id_t *id_out);
void evl__map_remove(evl_t *l, evl__item_t *it);
void evl__flist_remove(evl_t *l, evl__item_t *it);
int evl__map_init(evl_t *l);
void evl__mark_all_cancelled(evl_t *l);
void evl__wake_locked(evl_t *l);

/* evl_uv.c: the libuv side, loop thread only */
void evl__drain(evl_t *l);
void evl__start_on_loop(evl_t *l, evl__item_t *it);
void evl__cancel_on_loop(evl_t *l, evl__item_t *it);
void evl__dq_push(evl_t *l, evl__item_t *it, int final, int status, int fixed);
void evl__fd_resume(evl__item_t *it);
void evl__fd_pause_running(evl_t *l);
void evl__signals_ready(evl_t *l);

/* evl_signal.c: the process-wide handler and its table of watches; signals
 * are the one state evloop cannot keep per loop.  Loop thread only. */
#define EVL__SIG_SLOTS 1024     /* signal watches open at once, all loops */
void evl__sig_reserve(evl__item_t *it);
void evl__sig_install(evl_t *l, int slot, unsigned gen, unsigned seq);
void evl__sig_release(int slot, unsigned gen, unsigned seq);
int evl__sig_arm(evl__item_t *it);
void evl__sig_remove(evl__item_t *it);
evl__item_t *evl__sig_next(evl_t *l, int *pos);


/* evl_dispatch.c */
int evl__dispatch(evl_t *l);
void evl__report(evl_t *l, int err, const char *what);

/* evl_read.c */
int evl__read_path(const char *path, unsigned flags, size_t limit,
                   atomic_int *stop, char **data_out, size_t *len_out);

#endif /* EVL_INT_H */
