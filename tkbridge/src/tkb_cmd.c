/* SPDX-License-Identifier: MIT */
/*
 * tkb_cmd.c -- Tcl commands implemented by host code, and the gvloop::
 * commands every bridge interp has.
 *
 * A host command runs its callback under the GVL taken with the bridge's
 * boost (tkb__run_host), on the loop thread.  Its error becomes a Tcl error,
 * so one raised from an event binding reaches bgerror.  Everything else in
 * here runs without the GVL.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tkb_int.h"
#include "tkb_tclcmd.h"

struct tkb_result_s {
  char *s;                /* malloc'd, NULL: empty                         */
};

typedef struct {
  tkb_t *tk;
  tkb_cmd_cb cb;
  void *arg;
} host_cmd_t;

typedef struct {
  host_cmd_t *hc;
  int argc;
  const char *const *argv;
  tkb_result_t res;
  int rc;
} host_call_t;

int tkb_result_set(tkb_result_t *res, const char *s) {
  if (res == NULL || s == NULL) return EINVAL;
  char *copy = strdup(s);
  if (copy == NULL) return ENOMEM;
  free(res->s);
  res->s = copy;
  return 0;
}

static void host_tramp(void *arg) {
  host_call_t *hcall = arg;
  host_cmd_t *hc = hcall->hc;
  hcall->rc = hc->cb(hc->tk, hc->arg, hcall->argc, hcall->argv, &hcall->res);
}

/* The message is the host's (tkb_result_set) or the code's meaning; the
 * errorCode says which code it was: {POSIX ENAME msg} for an errno value
 * (as Tcl's own commands, with Tcl's text: the host's EPERM is not the
 * bridge's), {GVLOOP NAME code msg} for gvloop's codes and
 * {GVLOOP HOST code msg} for a code that is neither. */
static void set_error(Tcl_Interp *ip, const char *cmd, int rc, const char *msg) {
  const char *name = tkb_err_name(rc);
  int unknown = strcmp(name, "UNKNOWN") == 0;
  int posix = !unknown && rc > 0 && rc < 4096;
  Tcl_Obj *m;
  if (msg != NULL) m = Tcl_NewStringObj(msg, -1);
  else if (unknown)
    m = Tcl_ObjPrintf("%s: host command failed with code %d", cmd, rc);
  else m = Tcl_NewStringObj(posix ? Tcl_ErrnoMsg(rc) : tkb_strerror(rc), -1);
  Tcl_SetObjResult(ip, m);
  if (posix)
    Tcl_SetErrorCode(ip, "POSIX", name, Tcl_ErrnoMsg(rc), NULL);
  else
    tkb__gvloop_errorcode(ip, unknown ? "HOST" : name, rc, m);
}

/* hc is not touched once the host's callback has run: the callback may
 * delete or replace its own command, and Tcl frees hc at once then.  tk
 * is held for the call: the callback may stop the bridge (a teardown on
 * the spot) and another thread's tkb_destroy may then drop the last
 * other reference. */
static int host_cmd_proc(ClientData cd, Tcl_Interp *ip, int objc,
                         Tcl_Obj *const objv[]) {
  host_cmd_t *hc = cd;
  tkb_t *tk = hc->tk;
  const char *small[16];
  const char **argv = objc < 16 ? small : malloc(((size_t)objc + 1) * sizeof(char *));
  if (argv == NULL) return TCL_ERROR;
  for (int i = 0; i < objc; i++) argv[i] = Tcl_GetString(objv[i]);
  argv[objc] = NULL;
  host_call_t hcall = {hc, objc, argv, {NULL}, 0};
  tkb__ref(tk);
  atomic_fetch_add(&tk->cmd_calls, 1);
  int rc = tkb__run_host(tk, host_tramp, &hcall);
  if (rc == 0) rc = hcall.rc;
  if (rc != 0) atomic_fetch_add(&tk->cmd_errors, 1);
  tkb__unref(tk);
  if (rc != 0)
    set_error(ip, argv[0], rc, hcall.res.s);
  else
    Tcl_SetObjResult(ip, Tcl_NewStringObj(hcall.res.s ? hcall.res.s : "", -1));
  free(hcall.res.s);
  if (argv != small) free(argv);
  return rc == 0 ? TCL_OK : TCL_ERROR;
}

static void host_cmd_delete(ClientData cd) {
  free(cd);
}

/* [loop thread] */
int tkb__cmd_create(tkb_t *tk, const char *name, tkb_cmd_cb cb, void *arg) {
  host_cmd_t *hc = malloc(sizeof(*hc));
  if (hc == NULL) return ENOMEM;
  hc->tk = tk;
  hc->cb = cb;
  hc->arg = arg;
  if (Tcl_CreateObjCommand(tk->interp, name, host_cmd_proc, hc, host_cmd_delete) == NULL) {
    free(hc);
    return EINVAL;
  }
  return 0;
}

/* [loop thread] Only commands made by tkb__cmd_create may be deleted. */
int tkb__cmd_delete(tkb_t *tk, const char *name) {
  Tcl_CmdInfo info;
  if (!Tcl_GetCommandInfo(tk->interp, name, &info) || info.objProc != host_cmd_proc)
    return TKB_ENOCMD;
  return Tcl_DeleteCommand(tk->interp, name) == 0 ? 0 : TKB_ENOCMD;
}

/* ---- gvloop::ping, gvloop::stats, the bgerror hook ------------------------------ */

/* The shared implementation (tkb_tclcmd.c): boosted, as tkbridge.h and
 * gvloop(n) say, or at the bridge's priority where that is higher. */
static int ping_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  tkb_t *tk = cd;
  uint64_t acq = 0;
  int code = tkb__ping_cmd(ip, objc, objv, tk->l,
                           tk->prio > GVL_PRIO_BOOST ? tk->prio : GVL_PRIO_BOOST,
                           &tk->pings, &acq);
  if (acq) atomic_fetch_add(&tk->gvl_acquires, acq);
  return code;
}

static void dict_put(Tcl_Interp *ip, Tcl_Obj *d, const char *k, uint64_t v) {
  Tcl_DictObjPut(ip, d, Tcl_NewStringObj(k, -1), Tcl_NewWideIntObj((Tcl_WideInt)v));
}

/* The bridge's own counters (tkb_*), beside the shared gvl_/evl_/ntf_ set. */
static void put_tkb_stats(Tcl_Interp *ip, Tcl_Obj *d, tkb_t *tk) {
  dict_put(ip, d, "tkb_evals", atomic_load(&tk->evals));
  dict_put(ip, d, "tkb_evals_remote", atomic_load(&tk->evals_remote));
  dict_put(ip, d, "tkb_runs", atomic_load(&tk->runs));
  dict_put(ip, d, "tkb_cmd_calls", atomic_load(&tk->cmd_calls));
  dict_put(ip, d, "tkb_cmd_errors", atomic_load(&tk->cmd_errors));
  dict_put(ip, d, "tkb_gvl_acquires", atomic_load(&tk->gvl_acquires));
  dict_put(ip, d, "tkb_bg_errors", atomic_load(&tk->bg_errors));
  dict_put(ip, d, "tkb_cancelled", atomic_load(&tk->cancelled));
  dict_put(ip, d, "pings", tk->pings);
}

static int stats_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  tkb_t *tk = cd;
  if (objc != 1) {
    Tcl_WrongNumArgs(ip, 1, objv, "");
    return TCL_ERROR;
  }
  Tcl_Obj *d = Tcl_NewDictObj();
  tkb__stats_put(ip, d, tk->l);
  put_tkb_stats(ip, d, tk);
  Tcl_SetObjResult(ip, d);
  return TCL_OK;
}

typedef struct {
  tkb_t *tk;
  const char *msg;
} bg_host_t;

static void bg_host(void *arg) {
  bg_host_t *b = arg;
  b->tk->on_error(b->tk, b->msg, b->tk->on_error_arg);
}

/* interp bgerror handler: tells the host, then hands the error to the
 * handler that was there before (Tcl's ::bgerror machinery).  Errors raised
 * while the bridge stops (scripts unwound by Tcl_CancelEval) are dropped. */
static int bgerror_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  tkb_t *tk = cd;
  if (objc != 3) {
    Tcl_WrongNumArgs(ip, 1, objv, "message options");
    return TCL_ERROR;
  }
  atomic_fetch_add(&tk->bg_errors, 1);
  if (tkb__state(tk) != TKB_ST_RUNNING) return TCL_OK;
  if (tk->on_error) {             /* held for it: see host_cmd_proc */
    bg_host_t b = {tk, Tcl_GetString(objv[1])};
    tkb__ref(tk);
    (void)tkb__run_host(tk, bg_host, &b);
    tkb__unref(tk);
  }
  Tcl_Obj *prev = Tcl_GetVar2Ex(ip, "::gvloop::_bgprev", NULL, TCL_GLOBAL_ONLY);
  if (prev == NULL) return TCL_OK;
  Tcl_Obj *call = Tcl_DuplicateObj(prev);
  Tcl_IncrRefCount(call);
  Tcl_ListObjAppendElement(ip, call, objv[1]);
  Tcl_ListObjAppendElement(ip, call, objv[2]);
  int code = Tcl_EvalObjEx(ip, call, TCL_EVAL_GLOBAL);
  Tcl_DecrRefCount(call);
  return code;
}

static const char bg_setup[] =
    "namespace eval ::gvloop {variable _bgprev [interp bgerror {}]}\n"
    "interp bgerror {} ::gvloop::_bgerror\n";

/* [loop thread] Create gvloop::ping, gvloop::stats and the bgerror hook. */
int tkb__install_builtins(tkb_t *tk, Tcl_Interp *ip, char **msg) {
  Tcl_CreateObjCommand(ip, "::gvloop::ping", ping_cmd, tk, NULL);
  Tcl_CreateObjCommand(ip, "::gvloop::stats", stats_cmd, tk, NULL);
  Tcl_CreateObjCommand(ip, "::gvloop::_bgerror", bgerror_cmd, tk, NULL);
  if (Tcl_EvalEx(ip, bg_setup, -1, TCL_EVAL_GLOBAL) != TCL_OK) {
    *msg = tkb__strdup(Tcl_GetStringResult(ip));
    return TKB_ETCL;
  }
  Tcl_ResetResult(ip);
  return 0;
}
