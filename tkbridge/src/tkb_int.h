/* SPDX-License-Identifier: MIT */
/*
 * tkb_int.h -- libtkbridge internals.
 *
 * Threads: the bridge's interp belongs to the loop thread.  Other threads
 * only touch a tkb_t through its mutex-guarded state and atomics, and hand
 * work over as tkb__call_t objects (evl_post_flags with EVL_F_NOGVL, then a
 * Tcl event on the loop thread, so scripts run from Tcl's event dispatch and
 * never inside evl_step or uv_run; the one exception is the first
 * tkb_start's boot, run from evl_step's dispatch before Tcl runs on the
 * thread).
 */
#ifndef TKB_INT_H
#define TKB_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include <tcl.h>

#include "tkbridge.h"
#include "tkb_notifier.h"

enum { TKB_ST_RUNNING = 1, TKB_ST_STOPPING, TKB_ST_STOPPED };

/* tkb_errmsg of an EPERM from tkb_start on an evloop no driver runs Tcl on. */
#define TKB__NO_DRIVER_MSG \
  "evloop not set up with tkb_evl_config, or attached (evl_attach): no driver runs Tcl there"

/* Per-loop-thread driver state (lives on the driver's stack). */
typedef struct tkb__drv_s {
  evl_t *l;
  int tcl_live;           /* Tcl is initialised; Tcl_DoOneEvent drives    */
  int had_tk;             /* Tk was set up on this thread (Tk_Init
                             succeeded; under tk_mu)                     */
  int tried_tk;           /* a bridge here asked for Tk (its finalize then
                             takes tk_mu: Tk may have a display open)    */
  struct tkb_s *bridges;  /* running bridges on this thread               */
} tkb__drv_t;

struct tkb_s {
  atomic_int refs;        /* user + driver list + calls in flight + host
                             code running (host commands, on_error) +
                             tkb_stop/tkb_stats inside (live_ref)       */
  evl_t *l;
  int prio;               /* GVL priority for host callbacks               */
  tkb_error_cb on_error;
  void *on_error_arg;
  tkb_config_t cfg;       /* copied strings, freed with tk                 */
  char **argv_copy;

  Tcl_Interp *interp;     /* loop thread; set and cleared under mu, which
                             begin_stop holds to mark quiet only while set */
  Tcl_AsyncHandler quiet; /* the loop thread's, with interp: begin_stop
                             marks it to cancel a running script          */
  struct tkb_s *next;     /* in tkb__drv_t.bridges (loop thread)           */
  struct tkb_s *live_next;/* in the list of live bridges; guarded by live_mu */
  int destroyed;          /* tkb_destroy was called; guarded by live_mu    */
  int tearing;            /* teardown under way (loop thread)              */

  pthread_mutex_t mu;
  pthread_cond_t cv;      /* broadcast when state becomes STOPPED and when
                             inflight drops to 0                            */
  int state;              /* TKB_ST_*; guarded by mu                        */
  int inflight;           /* accepted calls not yet finished; guarded by mu */

  /* counters: written on the loop thread, read anywhere */
  atomic_ullong evals, evals_remote, runs, cmd_calls, cmd_errors;
  atomic_ullong gvl_acquires, bg_errors, cancelled;
  uint64_t pings;         /* gvloop::ping calls (loop thread only)          */
  tkb__ntf_stats_t ntf;   /* snapshot, guarded by mu                        */
};

/* What a call asks the loop thread to do. */
enum {
  TKB_CALL_START = 1,
  TKB_CALL_EVAL,
  TKB_CALL_RUN,
  TKB_CALL_CMD_CREATE,
  TKB_CALL_CMD_DELETE,
  TKB_CALL_STOP
};

typedef struct tkb__call_s {
  atomic_int refs;        /* loop side + waiting submitter                 */
  int kind;               /* TKB_CALL_*                                    */
  tkb_t *tk;              /* holds a reference                             */
  char *text;             /* script or command name                        */
  tkb_done_cb done;       /* EVAL async completion                         */
  void *done_arg;
  tkb_fn fn;              /* RUN                                           */
  void *fn_arg;
  int own;                /* TKB_CALL_RUN of the bridge's own: not counted
                             in tkb_stats_t.runs                         */
  tkb_cmd_cb cmd;         /* CMD_CREATE                                    */
  void *cmd_arg;
  int remote;             /* submitted from another thread                 */
  int counted;            /* counted in tk->inflight                       */

  int sync;               /* a thread waits (mu/cv below)                  */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int finished;           /* guarded by mu                                 */
  int abandoned;          /* the waiter was interrupted; guarded by mu     */
  int status;             /* 0, TKB_ETCL, errno                            */
  char *result;           /* malloc'd                                      */
} tkb__call_t;

/* tkb_bridge.c */
void tkb__ref(tkb_t *tk);
void tkb__unref(tkb_t *tk);
tkb__drv_t *tkb__drv(void);
int tkb__state(tkb_t *tk);
void tkb__teardown(tkb_t *tk);
void tkb__mark_stopped(tkb_t *tk);
int tkb__inflight_add(tkb_t *tk);
void tkb__inflight_done(tkb_t *tk);
int tkb__boot(tkb_t *tk, char **msg);

/* tkb_call.c */
tkb__call_t *tkb__call_new(tkb_t *tk, int kind);
void tkb__call_unref(tkb__call_t *c);
int tkb__call_submit(tkb__call_t *c);
int tkb__run(tkb_t *tk, tkb_fn fn, void *arg, int own);
void tkb__call_finish(tkb__call_t *c, int status, const char *result);
void tkb__call_cancel_queued(tkb_t *tk);
int tkb__run_host(tkb_t *tk, void (*fn)(void *), void *arg);

/* tkb_cmd.c */
int tkb__cmd_create(tkb_t *tk, const char *name, tkb_cmd_cb cb, void *arg);
int tkb__cmd_delete(tkb_t *tk, const char *name);
int tkb__install_builtins(tkb_t *tk, Tcl_Interp *ip, char **msg);
char *tkb__strdup(const char *s);

#endif /* TKB_INT_H */
