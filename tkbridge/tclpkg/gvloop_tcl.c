/* SPDX-License-Identifier: MIT */
/*
 * gvloop_tcl.c -- the gvloop Tcl package: `package require gvloop` in a
 * stock tclsh or wish.
 *
 * Tcl's stock notifier stays; libuv is driven from it through the notifier
 * seam's second implementation (tkbridge/src/tkb_notifier_tcl.c, compiled in
 * here).  Per interpreter THREAD there is one evloop, created by the first
 * interpreter of the thread that loads the package and stopped with the
 * last; per process one GVL.  The Tcl thread becomes the evloop's loop
 * thread with evl_attach (no thread of its own, no blocking evl_run), so
 * host callbacks run on it from Tcl's event loop, under the boosted GVL,
 * and never while Tcl waits; evl_detach gives the role up at the end.
 *
 * The commands are documented in gvloop(n) (man/gvloop.n; tests/tclpkg
 * checks that it names every one).  stats and ping
 * are the bridge's own (tkb_tclcmd.c), with the same keys.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tcl.h>
#include <tk.h>

#include "gvloop_tcl.h"
#include "tkb_notifier.h"
#include "tkb_tclcmd.h"

#ifndef GVLOOP_TCL_PKG_VERSION
#define GVLOOP_TCL_PKG_VERSION "0.2.0"
#endif
#define GVT_ASSOC "gvloop"

#if defined(__GNUC__)
#define GVT_EXPORT __attribute__((visibility("default")))
#else
#define GVT_EXPORT
#endif

/* Tcl's entry points (load looks them up by name). */
GVT_EXPORT int Gvloop_Init(Tcl_Interp *ip);
GVT_EXPORT int Gvloop_Unload(Tcl_Interp *ip, int flags);

/* ---- state ---------------------------------------------------------------- */

/* The process GVL.  Global because it IS process-wide: every interpreter
 * thread and extension in the process shares it. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static gvl_t *g_gvl;             /* g_mu */
static int g_refs;               /* g_mu: threads with a loop */
/* Code of the library that some thread may still run: scripts of timers
 * and watches on the stack (reg_fire), idle calls and exit handlers
 * scheduled (thread_deferred, thread_reap, thread_exit).  Unloading the
 * library from the process is refused while it is not 0. */
static atomic_int g_pinned;
/* Tcl's process exit handlers have run (Tcl_Exit, Tcl_Finalize): the
 * threads' loops end with the process, as Tcl's own notifier does, and
 * nothing of an extension's runs after its exit handlers.  Set by
 * process_exit, registered once a load (g_exit_handler, under g_mu). */
static atomic_int g_exiting;
static int g_exit_handler;       /* g_mu */

/* The loop of one interpreter thread. */
typedef struct {
  evl_t *l;
  int refs;                      /* interps of this thread using it */
  int busy;                      /* scripts of registrations on the stack */
  int pending;                   /* refs reached 0 while busy: free later */
  int gone;                      /* the thread's Tcl ended with interps
                                    left (thread_exit): l is stopped and
                                    detached, freed with the last ref */
  void *dead_next;               /* t_dead list */
} gvt_thread_t;

/* Per thread, as the evloop's loop-thread role is. */
static _Thread_local gvt_thread_t *t_self;
/* Loops of this thread that have stopped but whose memory (evl_t, and the
 * GVL reference) is kept until Tcl is next idle: Tcl deletes an interp's
 * assoc data in no set order, so another extension's deletion callback may
 * still call evl_cancel on it after ours stopped the loop (EVL_ENOREG then). */
static _Thread_local gvt_thread_t *t_dead;

typedef struct gvt_reg gvt_reg_t;
typedef struct gvt_interp gvt_interp_t;

/* A timer or fd watch made by a command.  Freed at its last call. */
struct gvt_reg {
  gvt_interp_t *gi;              /* NULL once the interp is gone */
  evl_id_t id;
  Tcl_Obj *script;
  int repeating;
  Tcl_Channel chan;              /* readable: its channel, until the watch
                                    ends or the channel closes */
  gvt_reg_t *next, *prev;        /* gi's list */
};

/* One of the interp's gvloop:: commands: its ClientData.  tok is NULL
 * once Tcl has deleted it (under whatever name it then had). */
#define GVT_NCMDS 6
typedef struct {
  gvt_interp_t *gi;
  Tcl_Command tok;
} gvt_cmd_t;

struct gvt_interp {
  Tcl_Interp *ip;
  gvt_thread_t *th;              /* NULL once the interp's share is gone */
  gvt_reg_t *regs;
  uint64_t pings;                /* gvloop::ping calls */
  int refs;                      /* the assoc data's, and each command's */
  gvt_cmd_t cmds[GVT_NCMDS];     /* deleted by token at unload, so that a
                                    renamed one goes and a user's command
                                    under the old name stays */
};

/* ---- the process GVL -------------------------------------------------------- */

static gvl_t *gvl_ref(void) {
  gvl_t *g;
  pthread_mutex_lock(&g_mu);
  if (g_gvl == NULL) g_gvl = gvl_create(NULL);
  g = g_gvl;
  if (g != NULL) g_refs++;
  pthread_mutex_unlock(&g_mu);
  return g;
}

/* The last thread gone: destroy the GVL unless some thread is still
 * attached (a host's own thread), in which case it stays for the process. */
static void gvl_unref(void) {
  pthread_mutex_lock(&g_mu);
  if (--g_refs == 0 && g_gvl != NULL && gvl_destroy(g_gvl) == 0) g_gvl = NULL;
  pthread_mutex_unlock(&g_mu);
}

/* ---- the thread's loop ------------------------------------------------------- */

static void thread_on_stop(void *arg) {
  (void)arg;  /* the loop stops only when we stop it: nothing to unwind */
}

/* Free a thread's loop record and drop the GVL reference it was made
 * with (gvl_ref in thread_ref). */
static void thread_free(gvt_thread_t *t) {
  if (t->l != NULL) evl_destroy(t->l);
  free(t);
  gvl_unref();
}

static void thread_exit(ClientData cd);

static int thread_ref(gvt_thread_t **out) {
  gvt_thread_t *t = t_self;
  gvl_t *g;
  int err;
  if (t != NULL) {
    t->refs++;
    *out = t;
    return 0;
  }
  if ((g = gvl_ref()) == NULL) return errno ? errno : ENOMEM;
  if ((t = calloc(1, sizeof *t)) == NULL) {
    gvl_unref();
    return ENOMEM;
  }
  evl_config_t ec = {0};
  ec.prio = EVL_PRIO_BOOST;   /* the package's callbacks cut in */
  ec.no_thread = 1;
  if ((t->l = evl_start(g, &ec)) == NULL) {
    err = errno ? errno : ENOMEM;
    thread_free(t);
    return err;
  }
  /* This thread becomes the loop thread, and Tcl's loop its driver. */
  if ((err = evl_attach(t->l)) != 0) {
    thread_free(t);
    return err;
  }
  if ((err = tkb__ntf_bind(t->l, thread_on_stop, t)) != 0) {
    evl_detach(t->l);
    thread_free(t);
    return err;
  }
  t->refs = 1;
  t_self = t;
  atomic_fetch_add(&g_pinned, 1);
  Tcl_CreateThreadExitHandler(thread_exit, t);
  *out = t;
  return 0;
}

/* The last interp of the thread is gone: stop the loop (every pending
 * registration gets its last call), leave the loop-thread role. */
static void thread_deferred(ClientData cd);

static void reap_list(void) {
  while (t_dead != NULL) {
    gvt_thread_t *t = t_dead;
    t_dead = t->dead_next;
    thread_free(t);
  }
}

static void thread_reap_exit(ClientData cd);

/* Tcl is idle: free the stopped loops. */
static void thread_reap(ClientData cd) {
  (void)cd;
  Tcl_DeleteThreadExitHandler(thread_reap_exit, NULL);
  reap_list();
  atomic_fetch_sub(&g_pinned, 1);
}

/* The thread ends before Tcl was idle again (a Thread-package thread). */
static void thread_reap_exit(ClientData cd) {
  (void)cd;
  Tcl_CancelIdleCall(thread_reap, NULL);
  reap_list();
  atomic_fetch_sub(&g_pinned, 1);
}

/* Stop the thread's loop: every registration has its last call, and the
 * thread leaves the loop-thread role.  Returns evl_detach's code: EBUSY
 * when the loop is on the stack (a callback's code ends the thread). */
static int thread_stop_loop(gvt_thread_t *t) {
  if (t->pending == 2) {
    Tcl_CancelIdleCall(thread_deferred, t);
    atomic_fetch_sub(&g_pinned, 1);
  }
  t_self = NULL;
  evl_stop(t->l);
  tkb__ntf_unbind();
  return evl_detach(t->l);
}

static void process_exit(ClientData cd) {
  (void)cd;
  atomic_store(&g_exiting, 1);
}

/* The thread's Tcl ends (Tcl_FinalizeThread, as a Thread-package thread
 * that ends by thread::exit does) while interps of it still use the loop:
 * stop it and close its descriptors now, since those interps will never
 * run again; its memory stays until the last of them is deleted, as
 * gvloop_tcl.h promises (a thread::exit deletes none: it is then kept, as
 * Tcl keeps the interps).  Not at the process's exit, and not when the
 * thread ends from a callback of the loop (a timer's script): the loop
 * then goes with the process or the thread, as before. */
static void thread_exit(ClientData cd) {
  gvt_thread_t *t = cd;
  atomic_fetch_sub(&g_pinned, 1);
  if (atomic_load(&g_exiting) || t_self != t || t->busy > 0) return;
  if (thread_stop_loop(t) != 0) return;
  t->gone = 1;
  if (t->refs == 0) thread_free(t);  /* its finish was deferred: nothing
                                         will unref it */
}

static void thread_finish(gvt_thread_t *t) {
  Tcl_DeleteThreadExitHandler(thread_exit, t);
  atomic_fetch_sub(&g_pinned, 1);
  thread_stop_loop(t);
  if (t_dead == NULL) {
    atomic_fetch_add(&g_pinned, 1);
    Tcl_DoWhenIdle(thread_reap, NULL);
    Tcl_CreateThreadExitHandler(thread_reap_exit, NULL);
  }
  t->dead_next = t_dead;
  t_dead = t;
}

/* A registration's script that deletes the last interp runs inside
 * evl_step: the loop cannot be torn down under it, so that waits until the
 * script has returned and Tcl is idle. */
static void thread_deferred(ClientData cd) {
  gvt_thread_t *t = cd;
  t->pending = 0;
  atomic_fetch_sub(&g_pinned, 1);
  if (t->refs == 0 && t->busy == 0) thread_finish(t);
}

static void thread_unref(gvt_thread_t *t) {
  if (t->gone) {
    if (--t->refs == 0) thread_free(t);
    return;
  }
  if (--t->refs > 0) return;
  if (t->busy > 0) {
    if (t->pending == 0) t->pending = 1;
    return;
  }
  thread_finish(t);
}

/* ---- registrations ------------------------------------------------------------ */

static void chan_closed(ClientData cd);

/* The registration's script never runs again (cancelled, ended, its interp
 * or its channel gone). */
static void reg_unlink(gvt_reg_t *r) {
  if (r->chan != NULL) {
    Tcl_DeleteCloseHandler(r->chan, chan_closed, r);
    r->chan = NULL;
  }
  if (r->gi == NULL) return;
  if (r->prev != NULL) r->prev->next = r->next;
  else r->gi->regs = r->next;
  if (r->next != NULL) r->next->prev = r->prev;
  r->gi = NULL;
}

/* End r's registration at once; r itself is freed at its last call
 * (ECANCELED). */
static void reg_cancel(gvt_reg_t *r) {
  evl_cancel(r->gi->th->l, r->id);
  reg_unlink(r);
}

static void reg_free(gvt_reg_t *r) {
  reg_unlink(r);
  Tcl_DecrRefCount(r->script);
  free(r);
}

/* Run a registration's script (no GVL: EVL_F_NOGVL).  The interp is kept
 * alive across the script, which may delete it. */
static void reg_fire(gvt_reg_t *r) {
  Tcl_Interp *ip;
  Tcl_Obj *script;
  gvt_thread_t *t;
  int code, once = !r->repeating;
  if (r->gi == NULL) return;
  ip = r->gi->ip;
  script = r->script;
  t = r->gi->th;
  /* A one-shot timer has ended as its script starts: cancelling it from
   * there is cancelling an id that has ended, as a moment later. */
  if (once) reg_unlink(r);
  atomic_fetch_add(&g_pinned, 1);
  t->busy++;
  Tcl_Preserve(ip);
  Tcl_IncrRefCount(script);
  /* As after and fileevent: any code but TCL_OK goes to the background
   * error handler as it is (break, continue and return included), and, as
   * a fileevent handler is deleted then, a watch ends first (else a script
   * that fails before it reads would run again at once, for ever, and the
   * handler, which runs when the loop is idle, would never run). */
  if (!Tcl_InterpDeleted(ip) &&
      (code = Tcl_EvalObjEx(ip, script, TCL_EVAL_GLOBAL)) != TCL_OK) {
    if (once) {
      Tcl_AddErrorInfo(ip, "\n    (\"gvloop::timer\" script)");
    } else {
      Tcl_AddErrorInfo(ip, "\n    (\"gvloop::readable\" script)");
      if (r->gi != NULL) reg_cancel(r);
    }
    Tcl_BackgroundException(ip, code);
  }
  Tcl_DecrRefCount(script);
  Tcl_Release(ip);
  if (--t->busy == 0 && t->pending == 1 && t->refs == 0) {
    t->pending = 2;  /* scheduled */
    atomic_fetch_add(&g_pinned, 1);
    Tcl_DoWhenIdle(thread_deferred, t);
  }
  atomic_fetch_sub(&g_pinned, 1);
}

static void timer_cb(evl_t *l, void *arg, int status) {
  gvt_reg_t *r = arg;
  (void)l;
  if (status == 0) reg_fire(r);
  reg_free(r);  /* one-shot: this was its last call */
}

static void io_cb(evl_t *l, void *arg, int status, unsigned events) {
  gvt_reg_t *r = arg;
  (void)l;
  (void)events;
  if (status == 0) {
    reg_fire(r);
    return;
  }
  /* An error on the descriptor (a reset connection), or one epoll cannot
   * watch (/dev/null): select() calls it readable, so a fileevent script
   * runs and its read finds the error or EOF.  The script runs once for
   * it, and the watch ends. */
  if (status != ECANCELED) reg_fire(r);
  reg_free(r);  /* ECANCELED or an error: the last call */
}

/* The watched channel is being closed (Tcl runs close handlers before the
 * descriptor is closed): the watch ends with it, as the channel's
 * fileevent handlers do, before its descriptor number can be reused. */
static void chan_closed(ClientData cd) {
  gvt_reg_t *r = cd;
  r->chan = NULL;               /* the handler is being removed by Tcl */
  if (r->gi != NULL) reg_cancel(r);
}

static gvt_reg_t *reg_new(gvt_interp_t *gi, Tcl_Obj *script) {
  gvt_reg_t *r = calloc(1, sizeof *r);
  if (r == NULL) return NULL;
  r->gi = gi;
  r->script = script;
  Tcl_IncrRefCount(script);
  r->next = gi->regs;
  if (gi->regs != NULL) gi->regs->prev = r;
  gi->regs = r;
  return r;
}

/* ---- commands ------------------------------------------------------------------ */

/* An errno code reads as Tcl's own commands report it (Tcl_ErrnoMsg, not
 * evloop's meaning of the code for its calls), errorCode {POSIX ENAME
 * msg}; evloop's own codes as evl_strerror says, errorCode {GVLOOP
 * EVL_ENAME code msg}. */
static int posix_error(Tcl_Interp *ip, const char *what, int err) {
  if (err >= EVL_ESTOPPED) {
    Tcl_SetObjResult(ip, Tcl_ObjPrintf("%s: %s", what, evl_strerror(err)));
    tkb__gvloop_errorcode(ip, evl_err_name(err), err,
                          Tcl_NewStringObj(evl_strerror(err), -1));
  } else {
    Tcl_SetObjResult(ip, Tcl_ObjPrintf("%s: %s", what, Tcl_ErrnoMsg(err)));
    Tcl_SetErrno(err);    /* Tcl_ErrnoId() names errno */
    Tcl_SetErrorCode(ip, "POSIX", Tcl_ErrnoId(), Tcl_ErrnoMsg(err), NULL);
  }
  return TCL_ERROR;
}

/* The interp of a command's ClientData, or NULL (with an error) if its
 * share of the package is gone while the command stays. */
static gvt_interp_t *cmd_gi(ClientData cd, Tcl_Interp *ip) {
  gvt_interp_t *gi = ((gvt_cmd_t *)cd)->gi;
  if (gi->th != NULL) return gi;
  Tcl_SetObjResult(ip, Tcl_NewStringObj("gvloop: the package is unloaded", -1));
  return NULL;
}

static int stats_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  gvt_interp_t *gi = cmd_gi(cd, ip);
  if (gi == NULL) return TCL_ERROR;
  Tcl_Obj *d;
  if (objc != 1) {
    Tcl_WrongNumArgs(ip, 1, objv, NULL);
    return TCL_ERROR;
  }
  d = Tcl_NewDictObj();
  tkb__stats_put(ip, d, gi->th->l);
  Tcl_DictObjPut(ip, d, Tcl_NewStringObj("pings", -1), Tcl_NewWideIntObj((Tcl_WideInt)gi->pings));
  Tcl_SetObjResult(ip, d);
  return TCL_OK;
}

static int ping_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  gvt_interp_t *gi = cmd_gi(cd, ip);
  if (gi == NULL) return TCL_ERROR;
  return tkb__ping_cmd(ip, objc, objv, gi->th->l, GVL_PRIO_BOOST, &gi->pings, NULL);
}

static int timer_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  gvt_interp_t *gi = cmd_gi(cd, ip);
  if (gi == NULL) return TCL_ERROR;
  Tcl_WideInt ms;
  gvt_reg_t *r;
  int err;
  if (objc != 3) {
    Tcl_WrongNumArgs(ip, 1, objv, "ms script");
    return TCL_ERROR;
  }
  if (Tcl_GetWideIntFromObj(ip, objv[1], &ms) != TCL_OK) return TCL_ERROR;
  if (ms < 0) ms = 0;            /* as after: at once */
  if ((r = reg_new(gi, objv[2])) == NULL) return posix_error(ip, "gvloop::timer", ENOMEM);
  err = evl_timer(gi->th->l, (uint64_t)ms, 0, EVL_F_NOGVL, timer_cb, r, &r->id);
  if (err != 0) {
    reg_free(r);
    return posix_error(ip, "gvloop::timer", err);
  }
  Tcl_SetObjResult(ip, Tcl_NewWideIntObj((Tcl_WideInt)r->id));
  return TCL_OK;
}

static int readable_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  gvt_interp_t *gi = cmd_gi(cd, ip);
  if (gi == NULL) return TCL_ERROR;
  Tcl_Channel ch;
  ClientData h;
  gvt_reg_t *r;
  int err, mode;
  if (objc != 3) {
    Tcl_WrongNumArgs(ip, 1, objv, "channel script");
    return TCL_ERROR;
  }
  if ((ch = Tcl_GetChannel(ip, Tcl_GetString(objv[1]), &mode)) == NULL) return TCL_ERROR;
  if (!(mode & TCL_READABLE)) {   /* fileevent's words */
    Tcl_SetObjResult(ip, Tcl_NewStringObj("channel is not readable", -1));
    return TCL_ERROR;
  }
  if (Tcl_GetChannelHandle(ch, TCL_READABLE, &h) != TCL_OK) {
    Tcl_SetObjResult(ip, Tcl_NewStringObj("channel has no readable descriptor", -1));
    return TCL_ERROR;
  }
  if ((r = reg_new(gi, objv[2])) == NULL) return posix_error(ip, "gvloop::readable", ENOMEM);
  r->repeating = 1;
  err = evl_fd_watch(gi->th->l, (int)(intptr_t)h, EVL_READABLE, EVL_F_NOGVL, io_cb, r, &r->id);
  if (err != 0) {
    reg_free(r);
    return posix_error(ip, "gvloop::readable", err);
  }
  r->chan = ch;
  Tcl_CreateCloseHandler(ch, chan_closed, r);
  Tcl_SetObjResult(ip, Tcl_NewWideIntObj((Tcl_WideInt)r->id));
  return TCL_OK;
}

static int cancel_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  gvt_interp_t *gi = cmd_gi(cd, ip);
  if (gi == NULL) return TCL_ERROR;
  Tcl_WideInt id;
  gvt_reg_t *r;
  int err;
  if (objc != 2) {
    Tcl_WrongNumArgs(ip, 1, objv, "id");
    return TCL_ERROR;
  }
  if (Tcl_GetWideIntFromObj(ip, objv[1], &id) != TCL_OK) return TCL_ERROR;
  /* Only this interp's registrations: ids are per loop, shared by the
   * thread's interps. */
  for (r = gi->regs; r != NULL && r->id != (evl_id_t)id; r = r->next) {
  }
  if (r == NULL) {   /* ENOENT, with a message about ids, not files */
    char msg[80];
    snprintf(msg, sizeof msg, "no timer or watch %lld in this interpreter",
             (long long)id);
    Tcl_SetObjResult(ip, Tcl_ObjPrintf("gvloop::cancel: %s", msg));
    Tcl_SetErrno(ENOENT);
    Tcl_SetErrorCode(ip, "POSIX", "ENOENT", msg, NULL);
    return TCL_ERROR;
  }
  if ((err = evl_cancel(gi->th->l, r->id)) != 0) return posix_error(ip, "gvloop::cancel", err);
  reg_unlink(r);  /* its script never runs again; freed at its last call */
  return TCL_OK;
}

static int notifier_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  (void)cd;
  if (objc != 1) {
    Tcl_WrongNumArgs(ip, 1, objv, NULL);
    return TCL_ERROR;
  }
  Tcl_SetObjResult(ip, Tcl_NewStringObj(tkb__ntf_name(), -1));
  return TCL_OK;
}

static const struct {
  const char *name;
  Tcl_ObjCmdProc *proc;
} gvt_cmds[] = {
    {"::gvloop::stats", stats_cmd},       {"::gvloop::ping", ping_cmd},
    {"::gvloop::timer", timer_cmd},       {"::gvloop::readable", readable_cmd},
    {"::gvloop::cancel", cancel_cmd},     {"::gvloop::notifier", notifier_cmd},
};
_Static_assert(sizeof gvt_cmds / sizeof gvt_cmds[0] == GVT_NCMDS, "GVT_NCMDS");

/* ---- the C API table ---------------------------------------------------------- */

static int api_get(Tcl_Interp *ip, evl_t **evl_out, gvl_t **gvl_out) {
  gvt_interp_t *gi;
  if (ip == NULL || evl_out == NULL || gvl_out == NULL) return EINVAL;
  if ((gi = Tcl_GetAssocData(ip, GVT_ASSOC, NULL)) == NULL) return ENOENT;
  if (t_self != gi->th) return EPERM;
  *evl_out = gi->th->l;
  *gvl_out = evl_gvl(gi->th->l);
  return 0;
}

static const gvloop_tcl_api_t gvt_api = {
    GVLOOP_TCL_API_VERSION, sizeof(gvloop_tcl_api_t), api_get, tkb__ntf_name};

/* ---- load, interp deletion, unload --------------------------------------------- */

static void gi_unref(gvt_interp_t *gi) {
  if (--gi->refs == 0) free(gi);
}

static void cmd_deleted(ClientData cd) {
  gvt_cmd_t *c = cd;
  c->tok = NULL;
  gi_unref(c->gi);
}

static void interp_gone(ClientData cd, Tcl_Interp *ip) {
  gvt_interp_t *gi = cd;
  (void)ip;
  while (gi->regs != NULL) reg_cancel(gi->regs);
  thread_unref(gi->th);
  gi->th = NULL;
  gi_unref(gi);
}

int Gvloop_Init(Tcl_Interp *ip) {
  gvt_interp_t *gi;
  int err;
  if (Tcl_InitStubs(ip, "8.6", 0) == NULL) return TCL_ERROR;
  /* Tk is optional (tclsh); its stubs are set up when it is there. */
  if (Tcl_PkgPresent(ip, "Tk", "8.6", 0) != NULL && Tk_InitStubs(ip, "8.6", 0) == NULL)
    return TCL_ERROR;
  Tcl_ResetResult(ip);
  if (Tcl_GetAssocData(ip, GVT_ASSOC, NULL) != NULL)
    return Tcl_PkgProvideEx(ip, "gvloop", GVLOOP_TCL_PKG_VERSION, (void *)&gvt_api);
  {
    /* An interp of libtkbridge (gvwish, gvtclsh, an embedding host) has its
     * own gvloop:: commands, and its thread is already the loop thread of
     * the bridge's evloop: a second loop there would take that role away. */
    Tcl_CmdInfo info;
    if (Tcl_GetCommandInfo(ip, "::gvloop::ping", &info)) {
      Tcl_SetObjResult(ip, Tcl_NewStringObj(
          "gvloop: this interpreter already runs on a gvloop bridge (libtkbridge)", -1));
      return TCL_ERROR;
    }
  }
  if ((gi = calloc(1, sizeof *gi)) == NULL) return posix_error(ip, "gvloop", ENOMEM);
  if ((err = thread_ref(&gi->th)) != 0) {
    free(gi);
    if (err == EBUSY)   /* evl_attach: the thread runs another loop */
      return posix_error(ip, "gvloop: this thread already runs a gvloop event loop "
                             "(gvtclsh, gvwish or a host's); its interpreters use that one",
                         err);
    return posix_error(ip, "gvloop: cannot start the event loop", err);
  }
  gi->ip = ip;
  gi->refs = 1;
  pthread_mutex_lock(&g_mu);
  if (!g_exit_handler) {
    g_exit_handler = 1;
    Tcl_CreateExitHandler(process_exit, NULL);
  }
  pthread_mutex_unlock(&g_mu);
  Tcl_SetAssocData(ip, GVT_ASSOC, interp_gone, gi);
  Tcl_CreateNamespace(ip, "::gvloop", NULL, NULL);
  for (size_t i = 0; i < GVT_NCMDS; i++) {
    gi->cmds[i].gi = gi;
    gi->cmds[i].tok = Tcl_CreateObjCommand(ip, gvt_cmds[i].name, gvt_cmds[i].proc,
                                           &gi->cmds[i], cmd_deleted);
    gi->refs++;
  }
  return Tcl_PkgProvideEx(ip, "gvloop", GVLOOP_TCL_PKG_VERSION, (void *)&gvt_api);
}

/* `unload`: the interp's share goes (registrations cancelled, the
 * thread's loop stopped with its last interp).  With no interp left
 * nothing else of ours runs (the GVL stays if a thread is still attached
 * to it). */
int Gvloop_Unload(Tcl_Interp *ip, int flags) {
  /* The library's code is on the stack under a script of a timer or watch
   * (reg_fire), here or on another thread, or another thread has a stopped
   * loop to reclaim when idle: unmapping it would return into nothing.
   * This thread's own reclaiming is done below. */
  if (flags == TCL_UNLOAD_DETACH_FROM_PROCESS) {
    int mine = (t_dead != NULL) + (t_self != NULL) +
               (t_self != NULL && t_self->pending == 2);
    if ((t_self != NULL && t_self->busy > 0) || atomic_load(&g_pinned) > mine) {
      Tcl_SetObjResult(ip, Tcl_NewStringObj(
          "gvloop: cannot unload the library while one of its timer or watch scripts "
          "runs, here or on another thread (unload -keeplibrary can)", -1));
      return TCL_ERROR;
    }
  }
  gvt_interp_t *gi = Tcl_GetAssocData(ip, GVT_ASSOC, NULL);
  if (gi != NULL) {
    for (size_t i = 0; i < GVT_NCMDS; i++)
      if (gi->cmds[i].tok != NULL) Tcl_DeleteCommandFromToken(ip, gi->cmds[i].tok);
    Tcl_DeleteAssocData(ip, GVT_ASSOC);
  }
  if (flags == TCL_UNLOAD_DETACH_FROM_PROCESS) {
    /* No idle call or handler may be left pointing into the unmapped
     * library. */
    if (t_dead != NULL) {
      Tcl_CancelIdleCall(thread_reap, NULL);
      thread_reap(NULL);  /* also removes the thread exit handler */
    }
    pthread_mutex_lock(&g_mu);
    if (g_exit_handler) Tcl_DeleteExitHandler(process_exit, NULL);
    g_exit_handler = 0;
    pthread_mutex_unlock(&g_mu);
  }
  Tcl_Eval(ip, "package forget gvloop");
  return TCL_OK;
}
