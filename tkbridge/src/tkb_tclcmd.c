/* SPDX-License-Identifier: MIT */
/*
 * tkb_tclcmd.c -- gvloop::stats, gvloop::ping and the GVLOOP errorCode
 * (see tkb_tclcmd.h).
 */
#include <errno.h>
#include <string.h>

#include "tkb_notifier.h"
#include "tkb_tclcmd.h"

void tkb__gvloop_errorcode(Tcl_Interp *ip, const char *name, int code,
                           Tcl_Obj *msg) {
  Tcl_Obj *v[4] = {Tcl_NewStringObj("GVLOOP", -1), Tcl_NewStringObj(name, -1),
                   Tcl_NewIntObj(code), msg};
  Tcl_SetObjErrorCode(ip, Tcl_NewListObj(4, v));
}

static void dict_put(Tcl_Interp *ip, Tcl_Obj *d, const char *k, uint64_t v) {
  Tcl_DictObjPut(ip, d, Tcl_NewStringObj(k, -1), Tcl_NewWideIntObj((Tcl_WideInt)v));
}

static void put_gvl(Tcl_Interp *ip, Tcl_Obj *d, gvl_t *g) {
  gvl_stats_t s;
  if (g == NULL || gvl_stats(g, &s) != 0) return;
  dict_put(ip, d, "gvl_acquires", s.acquires);
  dict_put(ip, d, "gvl_contended", s.contended);
  dict_put(ip, d, "gvl_handoffs", s.handoffs);
  dict_put(ip, d, "gvl_yields", s.yields);
  dict_put(ip, d, "gvl_preempt_reqs", s.preempt_reqs);
  dict_put(ip, d, "gvl_preemptions", s.preemptions);
  dict_put(ip, d, "gvl_boosts", s.boosts);
  dict_put(ip, d, "gvl_boosts_refused", s.boosts_refused);
  dict_put(ip, d, "gvl_wait_ns", s.wait_ns);
  dict_put(ip, d, "gvl_hold_ns", s.hold_ns);
}

static void put_evl(Tcl_Interp *ip, Tcl_Obj *d, evl_t *l) {
  evl_stats_t s;
  if (evl_stats(l, &s) != 0) return;
  dict_put(ip, d, "evl_iterations", s.iterations);
  dict_put(ip, d, "evl_dispatched", s.dispatched);
  dict_put(ip, d, "evl_cancelled", s.cancelled);
  dict_put(ip, d, "evl_acquisitions", s.acquisitions);
  dict_put(ip, d, "evl_budget_hits", s.budget_hits);
  dict_put(ip, d, "evl_live", s.live);
}

static void put_ntf(Tcl_Interp *ip, Tcl_Obj *d) {
  tkb__ntf_stats_t s;
  tkb__ntf_stats(&s);
  dict_put(ip, d, "ntf_waits", s.waits);
  dict_put(ip, d, "ntf_blocking", s.blocking);
  dict_put(ip, d, "ntf_file_events", s.file_events);
  dict_put(ip, d, "ntf_alerts", s.alerts);
}

void tkb__stats_put(Tcl_Interp *ip, Tcl_Obj *d, evl_t *l) {
  put_gvl(ip, d, evl_gvl(l));
  put_evl(ip, d, l);
  put_ntf(ip, d);
}

static int ping_error(Tcl_Interp *ip, int err) {
  int saved = errno;
  errno = err;                        /* Tcl_ErrnoId names errno's value */
  Tcl_SetObjResult(ip, Tcl_ObjPrintf("gvloop::ping: %s", evl_strerror(err)));
  Tcl_SetErrorCode(ip, "POSIX", Tcl_ErrnoId(), Tcl_ErrnoMsg(err), (char *)NULL);
  errno = saved;
  return TCL_ERROR;
}

static void *ping_host(void *arg) {
  *(uint64_t *)arg = gvl_now_ns();
  return arg;
}

int tkb__ping_cmd(Tcl_Interp *ip, int objc, Tcl_Obj *const objv[], evl_t *l,
                  int prio, uint64_t *pings, uint64_t *acquires) {
  static const char *const opts[] = {"-noboost", NULL};
  int opt;
  if (objc == 2) {
    if (Tcl_GetIndexFromObj(ip, objv[1], opts, "option", 0, &opt) != TCL_OK)
      return TCL_ERROR;
    prio = GVL_PRIO_NORMAL;
  } else if (objc != 1) {
    Tcl_WrongNumArgs(ip, 1, objv, "?-noboost?");
    return TCL_ERROR;
  }
  gvl_thread_t *t = evl_gvl_thread(l);
  if (t == NULL) return ping_error(ip, EPERM);
  uint64_t waited = 0;
  if (!gvl_thread_holds(t)) {
    /* The host callback: empty, getting the GVL is the whole cost.  Taken
     * as tkb__run_host takes it (the script may run inside a region). */
    uint64_t t0 = gvl_now_ns(), t1 = 0;
    int saved = errno;
    if (gvl_call_with(evl_gvl(l), prio, ping_host, &t1) == NULL) {
      int err = errno;
      errno = saved;
      return ping_error(ip, err);
    }
    waited = t1 - t0;
    if (acquires != NULL) (*acquires)++;
  }
  (*pings)++;
  Tcl_SetObjResult(ip, Tcl_NewDoubleObj((double)waited / 1000.0));
  return TCL_OK;
}
