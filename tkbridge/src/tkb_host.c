/* SPDX-License-Identifier: MIT */
/*
 * tkb_host.c -- the notifier for a host that runs Tcl's own main loop on an
 * attached loop thread, without a bridge (tkb_notifier_bind), and the
 * gvloop:: commands for its interps (tkb_notifier_commands).
 */
#include <errno.h>
#include <stdlib.h>

#include "tkb_int.h"
#include "tkb_tclcmd.h"

int tkb_notifier_bind(evl_t *l) {
  if (l == NULL) return EINVAL;
  if (!evl_in_loop_thread(l)) return EPERM;
  int rc = tkb__ntf_install();
  if (rc != 0) return rc;
  return tkb__ntf_bind(l, NULL, NULL);
}

/* What the commands of one interp share; freed with the interp. */
typedef struct {
  evl_t *l;
  int prio;
  uint64_t pings;
} host_cmds_t;

#define HOST_ASSOC "tkbridge:host-commands"

static void host_cmds_free(ClientData cd, Tcl_Interp *ip) {
  (void)ip;
  free(cd);
}

static int host_ping_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  host_cmds_t *hc = cd;
  return tkb__ping_cmd(ip, objc, objv, hc->l, hc->prio, &hc->pings, NULL);
}

static int host_stats_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  host_cmds_t *hc = cd;
  if (objc != 1) {
    Tcl_WrongNumArgs(ip, 1, objv, NULL);
    return TCL_ERROR;
  }
  Tcl_Obj *d = Tcl_NewDictObj();
  tkb__stats_put(ip, d, hc->l);
  Tcl_DictObjPut(ip, d, Tcl_NewStringObj("pings", -1), Tcl_NewWideIntObj((Tcl_WideInt)hc->pings));
  Tcl_SetObjResult(ip, d);
  return TCL_OK;
}

int tkb_notifier_commands(struct Tcl_Interp *ip, evl_t *l, int prio) {
  if (ip == NULL || l == NULL) return EINVAL;
  if (prio < GVL_PRIO_MIN || prio > GVL_PRIO_MAX) return EINVAL;
  if (!evl_in_loop_thread(l)) return EPERM;
  /* A second call updates the state of the first (Tcl_SetAssocData would
   * drop it without its delete proc). */
  host_cmds_t *hc = Tcl_GetAssocData(ip, HOST_ASSOC, NULL);
  if (hc == NULL) {
    if ((hc = calloc(1, sizeof(*hc))) == NULL) return ENOMEM;
    Tcl_SetAssocData(ip, HOST_ASSOC, host_cmds_free, hc);
  }
  hc->l = l;
  hc->prio = prio;
  Tcl_CreateObjCommand(ip, "::gvloop::ping", host_ping_cmd, hc, NULL);
  Tcl_CreateObjCommand(ip, "::gvloop::stats", host_stats_cmd, hc, NULL);
  return 0;
}
