/* SPDX-License-Identifier: MIT */
/*
 * tkb_tclcmd.h -- gvloop::stats, gvloop::ping and the GVLOOP errorCode, one
 * implementation for libtkbridge's interps and for the gvloop Tcl package
 * (compiled into both; plain Tcl API, so it builds with and without
 * USE_TCL_STUBS).
 *
 * Both commands run on the loop thread of the interp's evloop.
 */
#ifndef TKB_TCLCMD_H
#define TKB_TCLCMD_H

#include <stdint.h>

#include <tcl.h>

#include "evloop.h"

/* Put the GVL's (gvl_*), the evloop's (evl_*) and the calling thread's
 * notifier's (ntf_*) counters into the dict d.  The key set is the same
 * everywhere; a bridge adds its own tkb_* keys. */
void tkb__stats_put(Tcl_Interp *ip, Tcl_Obj *d, evl_t *l);

/* gvloop::ping ?-noboost?: take the GVL on the loop thread at prio (or
 * GVL_PRIO_NORMAL with -noboost), run a trivial host callback, release.
 * The result is the latency: microseconds (a double) from asking for the
 * GVL to holding it.  *pings is counted.  If the thread already holds the
 * GVL (a ping nested in a host callback) the latency is 0.  *acquires,
 * when not NULL, counts the GVL acquisitions made. */
int tkb__ping_cmd(Tcl_Interp *ip, int objc, Tcl_Obj *const objv[], evl_t *l,
                  int prio, uint64_t *pings, uint64_t *acquires);

/* Set the errorCode {GVLOOP name code msg} of one of gvloop's codes (or
 * a host's), built as a list: a message with braces or a final backslash
 * stays one element. */
void tkb__gvloop_errorcode(Tcl_Interp *ip, const char *name, int code,
                           Tcl_Obj *msg);

#endif /* TKB_TCLCMD_H */
