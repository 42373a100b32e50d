/* SPDX-License-Identifier: MIT */
/*
 * gvloop_tcl.h -- C API of the gvloop Tcl package, for other C extensions.
 *
 * `package require gvloop` in a stock tclsh or wish gives each interpreter
 * thread one evloop (evl_t) driven by Tcl's own event loop, and the process
 * one GVL (gvl_t).  Another extension gets them with:
 *
 *     const gvloop_tcl_api_t *api = gvloop_tcl_require(interp);
 *     evl_t *l; gvl_t *g;
 *     if (api == NULL || api->get(interp, &l, &g) != 0) return TCL_ERROR;
 *     evl_timer(l, 10, 0, 0, my_cb, my_arg, NULL);   // my_cb: under the GVL
 *
 * The table is the clientData of `package provide gvloop` (Tcl_PkgRequireEx
 * returns it), so no symbol of the package is linked against: an extension
 * built with stubs finds it at run time.  Link libevloop and libgvl (shared,
 * the copies the package uses) to call evl_* and gvl_*.
 *
 * Rules:
 *  - The evl_t belongs to the thread the interpreter runs on (its "loop
 *    thread"): registrations may be made from any thread, and their
 *    callbacks run on that thread from Tcl's event loop, under the GVL taken
 *    with the boost (or without it with EVL_F_NOGVL).  They run only while
 *    that thread services Tcl events (vwait, update, Tk's main loop).
 *  - Both stay valid while the interpreter exists.  When the last gvloop
 *    interpreter of the thread is deleted or unloads the package, or the
 *    thread's Tcl ends with interpreters left (thread::exit,
 *    Tcl_FinalizeThread; not Tcl_Exit, where the loop ends with the
 *    process, nor a thread that ends from inside one of the loop's timer
 *    or watch scripts), the evloop is stopped: pending registrations get
 *    their last call with ECANCELED.
 *    The memory stays until Tcl is next idle on that thread, so your own
 *    interp-deletion callback (Tcl runs them in no set order) may still
 *    call evl_cancel: it returns EVL_ENOREG if the loop already ended the
 *    registration.  While other gvloop interps of the thread live the loop
 *    runs on, so cancel registrations that belong to the deleted interp.
 *  - The GVL is the process's: threads that run host code attach to it.
 *  - A Tcl script that a callback runs under the GVL runs holding it: one
 *    that waits for events (vwait, update) makes Tcl's notifier wait
 *    holding the GVL, which the package's own scripts never do.  Run such scripts
 *    from an EVL_F_NOGVL callback, or release the GVL around them
 *    (gvl_call_without).
 */
#ifndef GVLOOP_TCL_H
#define GVLOOP_TCL_H

#include <tcl.h>

#include "evloop.h"
#include "gvl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The package version this header comes with (the project's, as in
 * gvl.h, evloop.h and tkbridge.h); gvloop_tcl_require asks for at least
 * it.  The table's layout is guarded by GVLOOP_TCL_API_VERSION and size. */
#define GVLOOP_TCL_VERSION "0.2.0"
#define GVLOOP_TCL_API_VERSION 1

typedef struct gvloop_tcl_api {
  int version;    /* GVLOOP_TCL_API_VERSION; fields are only ever added  */
  size_t size;    /* sizeof(gvloop_tcl_api_t) of the package             */
  /* [interp's thread] The interp's evloop and the process GVL.  0, EINVAL
   * (NULL argument), ENOENT (gvloop not loaded into interp), EPERM (called
   * on another thread than the interp's). */
  int (*get)(Tcl_Interp *interp, evl_t **evl_out, gvl_t **gvl_out);
  /* [any] Name of the notifier integration ("tcl-notifier"). */
  const char *(*notifier_name)(void);
} gvloop_tcl_api_t;

/* [interp's thread] `package require gvloop` and return the API table, or
 * NULL with the error in interp's result. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define GVLOOP_TCL__NULL nullptr  /* clean under -Wzero-as-null-pointer-constant */
#else
#define GVLOOP_TCL__NULL NULL
#endif
static inline const gvloop_tcl_api_t *gvloop_tcl_require(Tcl_Interp *interp) {
  void *api = GVLOOP_TCL__NULL;
  const gvloop_tcl_api_t *t;
  if (!Tcl_PkgRequireEx(interp, "gvloop", GVLOOP_TCL_VERSION, 0, &api)) return GVLOOP_TCL__NULL;
#ifdef __cplusplus  /* clean under -Wold-style-cast */
  t = static_cast<const gvloop_tcl_api_t *>(api);
#else
  t = (const gvloop_tcl_api_t *)api;
#endif
  if (!t || t->version < GVLOOP_TCL_API_VERSION) {
    Tcl_SetObjResult(interp, Tcl_NewStringObj("gvloop: no C API table", -1));
    return GVLOOP_TCL__NULL;
  }
  return t;
}

#ifdef __cplusplus
}
#endif
#endif /* GVLOOP_TCL_H */
