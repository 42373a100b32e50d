/* SPDX-License-Identifier: MIT */
/*
 * tkb_call.c -- handing work to the loop thread, and host code under the GVL.
 *
 * A call made on another thread travels as evl_post_flags(EVL_F_NOGVL) to the
 * loop thread, whose callback only queues a Tcl event; Tcl_DoOneEvent then
 * runs the call from its event dispatch.  So scripts never run inside
 * evl_step (but for the first tkb_start's boot: see post_cb), vwait inside
 * them nests cleanly, and the evloop's cancellation at stop (ECANCELED)
 * reaches every call still in its queue.  Calls already in
 * Tcl's queue at teardown are removed and completed with ECANCELED.
 *
 * A waiting submitter releases the GVL (gvl_call_without) if it holds it;
 * foreign threads simply block.  An interrupt (gvl_thread_interrupt) ends
 * the wait with EINTR; the call still runs, and its memory goes with the
 * last reference.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tkb_int.h"
#include "gvl_trace.h"

typedef struct {
  Tcl_Event hdr;
  tkb__call_t *call;
} call_event_t;

char *tkb__strdup(const char *s) {
  return strdup(s ? s : "");
}

tkb__call_t *tkb__call_new(tkb_t *tk, int kind) {
  tkb__call_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  atomic_init(&c->refs, 1);
  c->kind = kind;
  c->tk = tk;
  tkb__ref(tk);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  return c;
}

void tkb__call_unref(tkb__call_t *c) {
  if (c == NULL || atomic_fetch_sub(&c->refs, 1) != 1) return;
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  tkb__unref(c->tk);
  free(c->text);
  free(c->result);
  free(c);
}

/* ---- host code under the GVL ---------------------------------------------- */

typedef struct {
  tkb_t *tk;
  void (*fn)(void *);
  void *arg;
} host_run_t;

static void *host_tramp(void *arg) {
  host_run_t *h = arg;
  gvl_trace_begin(evl_gvl(h->tk->l), "tk", "host callback");
  h->fn(h->arg);
  gvl_trace_end(evl_gvl(h->tk->l), "tk", "host callback");
  return h;
}

/* [loop thread] Run fn(arg) holding the GVL, taken with the bridge's boost
 * unless the caller already holds it.  Taken with gvl_call_with: the Tcl
 * code that calls a host command may itself run inside a blocking region
 * of this thread (a tkb_eval made from host code, exec_direct), which the
 * call suspends; a plain acquire there would leave that region open under
 * the hold.  Returns 0 or the acquire error. */
int tkb__run_host(tkb_t *tk, void (*fn)(void *), void *arg) {
  gvl_thread_t *t = evl_gvl_thread(tk->l);
  host_run_t h = {tk, fn, arg};
  if (t == NULL) return EPERM;
  if (gvl_thread_holds(t)) {
    (void)host_tramp(&h);
    return 0;
  }
  int saved = errno;
  if (gvl_call_with(evl_gvl(tk->l), tk->prio, host_tramp, &h) == NULL) {
    int rc = errno;
    errno = saved;
    return rc;
  }
  atomic_fetch_add(&tk->gvl_acquires, 1);
  return 0;
}

static void done_tramp(void *arg) {
  tkb__call_t *c = arg;
  c->done(c->tk, c->status, c->result ? c->result : "", c->done_arg);
}

/* [loop thread] Record the outcome, wake the waiter or run the completion,
 * and drop the loop side's reference. */
void tkb__call_finish(tkb__call_t *c, int status, const char *result) {
  if (result != NULL || status != 0) {
    free(c->result);
    c->result = tkb__strdup(result);
    /* No copy, no outcome to tell: never a success with an empty result. */
    if (c->result == NULL) status = ENOMEM;
  }
  c->status = status;
  if (status == ECANCELED) atomic_fetch_add(&c->tk->cancelled, 1);
  if (c->sync) {
    pthread_mutex_lock(&c->mu);
    c->finished = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
  } else if (c->done != NULL) {
    (void)tkb__run_host(c->tk, done_tramp, c);
  }
  if (c->counted) tkb__inflight_done(c->tk);
  tkb__call_unref(c);
}

/* ---- running a call on the loop thread ------------------------------------- */

/* The outcome of a script as if it ran at the interp's level 0, where Tcl
 * itself completes a `return -code c` and turns codes other than ok and
 * error into errors.  A call run nested (from a host command, or while a
 * script waits in vwait) is above level 0, and Tcl leaves both undone
 * there; so they are done here, the same way. */
static int level0_code(Tcl_Interp *ip, int code) {
  if (code == TCL_RETURN) {
    Tcl_Obj *opts = Tcl_GetReturnOptions(ip, code), *key, *lv;
    int level = 1;
    Tcl_IncrRefCount(opts);
    key = Tcl_NewStringObj("-level", -1);
    Tcl_IncrRefCount(key);
    if (Tcl_DictObjGet(NULL, opts, key, &lv) == TCL_OK && lv != NULL)
      (void)Tcl_GetIntFromObj(NULL, lv, &level);
    (void)Tcl_DictObjPut(NULL, opts, key, Tcl_NewIntObj(level - 1));
    code = Tcl_SetReturnOptions(ip, opts);
    Tcl_DecrRefCount(key);
    Tcl_DecrRefCount(opts);
  }
  if (code == TCL_OK || code == TCL_ERROR) return code;
  if (code == TCL_BREAK)
    Tcl_SetObjResult(ip, Tcl_NewStringObj("invoked \"break\" outside of a loop", -1));
  else if (code == TCL_CONTINUE)
    Tcl_SetObjResult(ip, Tcl_NewStringObj("invoked \"continue\" outside of a loop", -1));
  else
    Tcl_SetObjResult(ip, Tcl_ObjPrintf("command returned bad code: %d", code));
  Tcl_SetObjErrorCode(ip, Tcl_ObjPrintf("TCL UNEXPECTED_RESULT_CODE %d", code));
  return TCL_ERROR;
}

static void exec_eval(tkb__call_t *c, Tcl_Interp *ip) {
  tkb_t *tk = c->tk;
  atomic_fetch_add(&tk->evals, 1);
  if (c->remote) atomic_fetch_add(&tk->evals_remote, 1);
  Tcl_Preserve(ip);
  int code = level0_code(ip, Tcl_EvalEx(ip, c->text, -1, TCL_EVAL_GLOBAL));
  int st = code == TCL_OK ? 0 : TKB_ETCL;
  /* A fire-and-forget script has nobody to tell: Tcl's bgerror is told. */
  if (st != 0 && !c->sync && c->done == NULL)
    Tcl_BackgroundException(ip, code);
  tkb__call_finish(c, st, Tcl_GetStringResult(ip));
  Tcl_ResetResult(ip);
  Tcl_Release(ip);
}

static void exec_call(tkb__call_t *c) {
  tkb_t *tk = c->tk;
  char *msg = NULL;
  int rc;
  switch (c->kind) {
  case TKB_CALL_START:
    rc = tkb__boot(tk, &msg);
    tkb__call_finish(c, rc, msg);
    free(msg);
    return;
  case TKB_CALL_STOP:
    tkb__teardown(tk);
    tkb__call_finish(c, 0, NULL);
    return;
  default:
    break;
  }
  Tcl_Interp *ip = tk->interp;
  if (ip == NULL || tkb__state(tk) != TKB_ST_RUNNING) {
    tkb__call_finish(c, ECANCELED, NULL);
    return;
  }
  switch (c->kind) {
  case TKB_CALL_EVAL:
    exec_eval(c, ip);
    return;
  case TKB_CALL_RUN:
    if (!c->own) atomic_fetch_add(&tk->runs, 1);
    Tcl_Preserve(ip);            /* fn may stop the bridge: ip outlives fn */
    c->fn(tk, ip, c->fn_arg);
    Tcl_Release(ip);
    tkb__call_finish(c, 0, NULL);
    return;
  case TKB_CALL_CMD_CREATE:
    tkb__call_finish(c, tkb__cmd_create(tk, c->text, c->cmd, c->cmd_arg), NULL);
    return;
  case TKB_CALL_CMD_DELETE:
    tkb__call_finish(c, tkb__cmd_delete(tk, c->text), NULL);
    return;
  default:
    tkb__call_finish(c, EINVAL, NULL);
  }
}

static void *exec_tramp(void *arg) {
  exec_call(arg);
  return arg;
}

/* [loop thread] Run c now.  A caller holding the GVL (a host callback) gives
 * it up meanwhile: Tcl code never runs holding the GVL, and nested host
 * commands take it again with the boost.  Nothing waits here, so a pending
 * interrupt does not stop the call (tkbridge.h: the call still runs): it
 * is taken by gvl_call_without, which then does not run fn, and posted
 * again once the call is over, for the caller's next safe point. */
static void exec_direct(tkb__call_t *c) {
  gvl_thread_t *t = evl_gvl_thread(c->tk->l);
  int intr = 0;
  if (t == NULL || !gvl_thread_holds(t)) {
    exec_call(c);
  } else {
    while (gvl_call_without(t, exec_tramp, c, NULL, NULL) == NULL &&
           errno == EINTR)
      intr = 1;
    if (intr) gvl_thread_interrupt(t);
  }
  tkb__ntf_note_tcl_ran();
}

static int call_event_proc(Tcl_Event *ev, int flags) {
  if (!(flags & TCL_FILE_EVENTS)) return 0;
  exec_call(((call_event_t *)ev)->call);
  return 1;
}

/* [loop thread] Once the bridge's teardown has begun, its last
 * tkb__call_cancel_queued may have run already: a call queued after it
 * would wait in Tcl's queue for ever (two tkb_stop calls at once, fuzz_tkb
 * under LeakSanitizer), so it is cancelled here instead. */
static void queue_tcl_event(tkb__call_t *c) {
  if (c->tk->tearing) {   /* the teardown marks the bridge stopped */
    tkb__call_finish(c, ECANCELED, NULL);
    return;
  }
  call_event_t *ev = (call_event_t *)ckalloc(sizeof(*ev));
  ev->hdr.proc = call_event_proc;
  ev->call = c;
  Tcl_QueueEvent(&ev->hdr, TCL_QUEUE_TAIL);
}

/* evloop callback, on the loop thread without the GVL.  Before Tcl runs on
 * this thread (the first tkb_start) nothing of Tcl is on the stack, so the
 * call runs here; afterwards it becomes a Tcl event. */
static void post_cb(evl_t *l, void *arg, int status) {
  tkb__call_t *c = arg;
  tkb__drv_t *d = tkb__drv();
  int control = c->kind == TKB_CALL_STOP || c->kind == TKB_CALL_START;
  if (status != 0 || (d == NULL && evl_stopping(l))) {
    /* Cancelled, or arriving after the driver returned (the bridge is
     * torn down by then). */
    if (control) tkb__mark_stopped(c->tk);
    tkb__call_finish(c, ECANCELED, NULL);
  } else if (d == NULL || d->l != l) {
    if (control) tkb__mark_stopped(c->tk);
    tkb__call_finish(c, EPERM, TKB__NO_DRIVER_MSG);
  } else if (!d->tcl_live) {
    exec_call(c);
  } else {
    queue_tcl_event(c);
  }
}

/* ---- submission and waiting ------------------------------------------------ */

static void *wait_fn(void *arg) {
  tkb__call_t *c = arg;
  pthread_mutex_lock(&c->mu);
  while (!c->finished && !c->abandoned) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  return c;
}

static void wait_ubf(void *arg) {
  tkb__call_t *c = arg;
  pthread_mutex_lock(&c->mu);
  c->abandoned = 1;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static void *wait_done_fn(void *arg) {
  tkb__call_t *c = arg;
  pthread_mutex_lock(&c->mu);
  while (!c->finished) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  return c;
}

/* A start is waited for to the end, interrupt or not: an EINTR would leave
 * the caller without the handle of a bridge that comes up all the same.
 * The interrupt stays pending (re-posted if gvl_call_without took it). */
static int start_wait(tkb__call_t *c, gvl_thread_t *self) {
  if (gvl_call_without(self, wait_done_fn, c, NULL, NULL) == NULL) {
    int intr = errno == EINTR;
    gvl_release(self);
    wait_done_fn(c);
    gvl_acquire(self);
    if (intr) gvl_thread_interrupt(self);
  }
  return c->status;
}

/* Wait for a remote sync call, releasing the GVL if this thread holds it. */
static int call_wait(tkb__call_t *c) {
  gvl_thread_t *self = gvl_thread_self(evl_gvl(c->tk->l));
  if (self != NULL && gvl_thread_holds(self) && c->kind == TKB_CALL_START)
    return start_wait(c, self);
  int intr = 0;
  if (self != NULL && gvl_thread_holds(self)) {
    if (gvl_call_without(self, wait_fn, c, wait_ubf, c) == NULL) {
      intr = errno == EINTR;
      wait_ubf(c);
    }
  } else {
    wait_fn(c);
  }
  pthread_mutex_lock(&c->mu);
  int fin = c->finished;
  pthread_mutex_unlock(&c->mu);
  /* An interrupt pending as the wait began was taken by gvl_call_without:
   * post it again, so that it stays pending as one that came during the
   * wait does (gvl_call_without leaves that one for the next safe point).
   * Finished all the same (the loop thread was quick): the call's result
   * is returned. */
  if (intr) gvl_thread_interrupt(self);
  return fin ? c->status : EINTR;
}

/* [any] Hand c to the loop thread (or run it now on the loop thread).  On
 * success the loop side owns one reference; a sync caller then waits.  The
 * caller keeps its own reference either way. */
int tkb__call_submit(tkb__call_t *c) {
  tkb_t *tk = c->tk;
  int control = c->kind == TKB_CALL_START || c->kind == TKB_CALL_STOP;
  if (!control && tkb__inflight_add(tk) != 0) return ECANCELED;
  c->counted = !control;
  atomic_fetch_add(&c->refs, 1);
  if (evl_in_loop_thread(tk->l)) {
    tkb__drv_t *d = tkb__drv();
    /* Async calls wait their turn in Tcl's queue; a stop tears down at
     * once (scripts running now unwind first: Tcl defers the deletion). */
    if (!c->sync && !control && d != NULL && d->tcl_live) queue_tcl_event(c);
    else exec_direct(c);
    return c->sync ? c->status : 0;
  }
  c->remote = 1;
  int rc = evl_post_flags(tk->l, post_cb, c, EVL_F_NOGVL, NULL);
  if (rc != 0) {
    atomic_fetch_sub(&c->refs, 1);
    if (c->counted) tkb__inflight_done(tk);
    c->counted = 0;
    return rc == EVL_ESTOPPED ? ECANCELED : rc;
  }
  return c->sync ? call_wait(c) : 0;
}

/* ---- teardown ---------------------------------------------------------------- */

/* A batch of calls taken out of Tcl's queue.  A fixed array, so that a
 * cancel never fails for want of memory: a call left in the queue would
 * be dropped unanswered by Tcl_FinalizeThread.  Full, the rest stays
 * queued for the next batch. */
#define COLLECT_MAX 64

typedef struct {
  tkb_t *tk;
  size_t n;
  tkb__call_t *list[COLLECT_MAX];
} collect_t;

static int collect_proc(Tcl_Event *ev, ClientData cd) {
  collect_t *col = cd;
  if (ev->proc != call_event_proc || col->n == COLLECT_MAX) return 0;
  tkb__call_t *c = ((call_event_t *)ev)->call;
  if (col->tk != NULL && c->tk != col->tk) return 0;
  col->list[col->n++] = c;
  return 1;
}

/* [loop thread] Complete tk's calls still in Tcl's event queue with
 * ECANCELED; with tk NULL, every bridge's (the driver's last act before
 * Tcl_FinalizeThread, which would drop them unanswered: a tkb_start queued
 * behind another's boot, whose bridge never joined the driver's list).  A
 * start cancelled so leaves its bridge stopped, as post_cb does; not a
 * stop: a second tkb_stop queued behind the first is cancelled by the
 * first's teardown, which marks the bridge stopped only once it is done
 * (tkb_stop waits for that).
 * Completion runs after Tcl_DeleteEvents, outside Tcl's queue lock,
 * because it may run host code; batches go on until none is left. */
void tkb__call_cancel_queued(tkb_t *tk) {
  collect_t col;
  col.tk = tk;
  do {
    col.n = 0;
    Tcl_DeleteEvents(collect_proc, &col);
    for (size_t i = 0; i < col.n; i++) {
      tkb__call_t *c = col.list[i];
      if (c->kind == TKB_CALL_START) tkb__mark_stopped(c->tk);
      tkb__call_finish(c, ECANCELED, NULL);
    }
  } while (col.n > 0);
}
