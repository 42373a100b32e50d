/* SPDX-License-Identifier: MIT */
/*
 * tkb_bridge.c -- the evloop driver, and a bridge's life: start, stop, free.
 *
 * The driver is the loop thread's main loop.  Until the first bridge starts
 * it is the evloop's default loop (evl_step); from then on it is Tcl's
 * (Tcl_DoOneEvent), whose notifier waits in evl_step.  When the evloop stops
 * the driver tears down every bridge on the thread, finalises Tcl's
 * per-thread state (Tk's display connections go there) and returns.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tcl.h>

#include "tkb_int.h"
#include "gvl_trace.h"

/* The driver of this thread.  A thread local because post_cb and Tcl event
 * procs get no other way to reach it. */
static _Thread_local tkb__drv_t *tls_drv;

static pthread_once_t tcl_once = PTHREAD_ONCE_INIT;
/* Held while a loop thread creates an interp and runs Tcl_Init
 * (tkb__boot).  Tcl makes each of its mutexes on first use behind an
 * unlocked check, so two threads' first uses race inside Tcl: harmless on
 * the CPUs Tcl runs on, but a race TSan cannot see through (Tcl is not
 * instrumented).  Boots one at a time keep them apart.  Nothing under it
 * waits for another thread or does I/O but read Tcl's library scripts. */
static pthread_mutex_t boot_mu = PTHREAD_MUTEX_INITIALIZER;
/* Held while a loop thread sets Tk up in an interp (init_tk), while a
 * failed boot deletes an interp that may hold Tk (boot_drop) and while a
 * thread that asked for Tk finalizes it (tkb__driver).  Tk's setup and its
 * display's close change Xlib's process-wide state without a lock of
 * Xlib's own -- XSetLocaleModifiers frees and replaces a string of the
 * shared locale, XOpenIM grows a shared list -- so two loop threads
 * setting Tk up at once raced there.  It is held while Tk connects to its
 * X server, so a Tk start waits while another connects (tkbridge.h); it
 * is never taken with boot_mu. */
static pthread_mutex_t tk_mu = PTHREAD_MUTEX_INITIALIZER;
/* Set once a loop thread that ran Tk has finalized it (tkb__driver, under
 * tk_mu); read by tk_refused, once without tk_mu and once under it. */
static atomic_int tk_ended;

/* Bridges handed out by tkb_start and not freed yet, so that tkb_stop and
 * tkb_destroy can refuse a handle that was destroyed (EINVAL) instead of
 * touching freed memory.  A process has a few bridges: a list will do. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static tkb_t *live_head;  /* live_mu */

/* The message of the calling thread's last failed tkb_start ("" after a
 * success).  A fixed buffer: nothing to free when the thread exits. */
static _Thread_local char tls_errmsg[4096];

tkb__drv_t *tkb__drv(void) {
  return tls_drv;
}

/* ---- references and state ----------------------------------------------- */

void tkb__ref(tkb_t *tk) {
  atomic_fetch_add(&tk->refs, 1);
}

static void live_add(tkb_t *tk) {
  pthread_mutex_lock(&live_mu);
  tk->live_next = live_head;
  live_head = tk;
  pthread_mutex_unlock(&live_mu);
}

static void live_remove(tkb_t *tk) {
  pthread_mutex_lock(&live_mu);
  for (tkb_t **pp = &live_head; *pp; pp = &(*pp)->live_next) {
    if (*pp == tk) {
      *pp = tk->live_next;
      break;
    }
  }
  pthread_mutex_unlock(&live_mu);
}

/* 1 if tk is a live bridge not yet destroyed; with mark, also marks it
 * destroyed (so exactly one tkb_destroy succeeds). */
static int live_check(tkb_t *tk, int mark) {
  int ok = 0;
  pthread_mutex_lock(&live_mu);
  for (tkb_t *p = live_head; p; p = p->live_next) {
    if (p == tk) {
      ok = !p->destroyed;
      if (ok && mark) p->destroyed = 1;
      break;
    }
  }
  pthread_mutex_unlock(&live_mu);
  return ok;
}

/* A reference for a call that may wait (tkb_stop, tkb_stats) while
 * another thread's tkb_destroy drops the caller's: 0 if tk is not a live
 * bridge not yet destroyed.  Under live_mu, so tk cannot be freed between
 * the check and the count (tk_free unlinks it under live_mu first, and a
 * count already at 0 means that free is under way). */
static int live_ref(tkb_t *tk) {
  int ok = 0;
  pthread_mutex_lock(&live_mu);
  for (tkb_t *p = live_head; p; p = p->live_next) {
    if (p == tk) {
      int n = atomic_load(&tk->refs);
      while (!p->destroyed && n > 0 &&
             !atomic_compare_exchange_weak(&tk->refs, &n, n + 1)) {
      }
      ok = !p->destroyed && n > 0;
      break;
    }
  }
  pthread_mutex_unlock(&live_mu);
  return ok;
}

/* A longer message keeps its first whole characters (UTF-8). */
static void set_errmsg(const char *msg) {
  size_t n = msg != NULL ? strlen(msg) : 0;
  if (n >= sizeof tls_errmsg) {
    n = sizeof tls_errmsg - 1;
    while (n > 0 && ((unsigned char)msg[n] & 0xC0) == 0x80) n--;
  }
  if (n > 0) memcpy(tls_errmsg, msg, n);
  tls_errmsg[n] = '\0';
}

static void tk_free(tkb_t *tk) {
  live_remove(tk);
  if (tk->argv_copy) {
    for (int i = 0; i < tk->cfg.argc; i++) free(tk->argv_copy[i]);
    free(tk->argv_copy);
  }
  free((char *)tk->cfg.argv0);
  free((char *)tk->cfg.app_name);
  free((char *)tk->cfg.display);
  pthread_mutex_destroy(&tk->mu);
  pthread_cond_destroy(&tk->cv);
  free(tk);
}

void tkb__unref(tkb_t *tk) {
  if (atomic_fetch_sub(&tk->refs, 1) == 1) tk_free(tk);
}

int tkb__state(tkb_t *tk) {
  pthread_mutex_lock(&tk->mu);
  int s = tk->state;
  pthread_mutex_unlock(&tk->mu);
  return s;
}

/* Accept a call: only while RUNNING.  tkb_stop waits for the count to
 * drop to zero, so no completion runs after it returns. */
int tkb__inflight_add(tkb_t *tk) {
  pthread_mutex_lock(&tk->mu);
  int ok = tk->state == TKB_ST_RUNNING;
  if (ok) tk->inflight++;
  pthread_mutex_unlock(&tk->mu);
  return ok ? 0 : ECANCELED;
}

void tkb__inflight_done(tkb_t *tk) {
  pthread_mutex_lock(&tk->mu);
  if (--tk->inflight == 0) pthread_cond_broadcast(&tk->cv);
  pthread_mutex_unlock(&tk->mu);
}

/* No interp (any more): wake tkb_stop waiters. */
void tkb__mark_stopped(tkb_t *tk) {
  pthread_mutex_lock(&tk->mu);
  tk->state = TKB_ST_STOPPED;
  pthread_cond_broadcast(&tk->cv);
  pthread_mutex_unlock(&tk->mu);
}

/* Tcl's own, in its internal stubs table (tclInt.decls, TIP 285) and
 * exported by libtcl8.6: clears an interp's cancel flags. */
extern int TclResetCancellation(Tcl_Interp *interp, int force);

/* Stopping a bridge cancels the script that runs in its interp, so that a
 * long one ends, with TCL_CANCEL_UNWIND: from the loop thread, at the next
 * async point, by quiet_proc, which begin_stop marks (Tcl_AsyncMark is
 * thread-safe).  The cancel stays set after that script has unwound, and
 * often the script was one of Tk's idle handlers, whose error Tk reports as
 * a background error: Tcl's report would then fail to call the handler in
 * the cancelled interp as well, and print both on stderr (errors in a
 * stopping bridge are meant to be dropped, bgerror_cmd).  So the cancel is
 * made with an idle call queued before it, which clears it once the
 * cancelled script has unwound, ahead of any report (idle calls run in
 * order); the teardown that follows cancels again itself. */
static void uncancel_idle(ClientData cd) {
  tkb_t *tk = cd;
  /* Not while a script of the interp is on the stack: it still has to
   * unwind.  The idle call can run in an event loop nested in another
   * interp's script that this one called, and a teardown may never come to
   * cancel it again (an `update idletasks` loop does not run the STOP
   * call).  Then the cancel stays until the teardown; the idle call is not
   * queued again, which would keep `update idletasks` from ever ending. */
  if (tk->interp && !Tcl_InterpActive(tk->interp)) TclResetCancellation(tk->interp, 1);
}

static int quiet_proc(ClientData cd, Tcl_Interp *running, int code) {
  tkb_t *tk = cd;
  (void)running;
  if (tk->interp) {
    Tcl_DoWhenIdle(uncancel_idle, tk);
    Tcl_CancelEval(tk->interp, NULL, NULL, TCL_CANCEL_UNWIND);
  }
  return code;
}

/* Move RUNNING to STOPPING and have a running script unwind (quiet_proc). */
static void begin_stop(tkb_t *tk) {
  pthread_mutex_lock(&tk->mu);
  if (tk->state == TKB_ST_RUNNING) {
    tk->state = TKB_ST_STOPPING;
    if (tk->interp) Tcl_AsyncMark(tk->quiet);
  }
  pthread_mutex_unlock(&tk->mu);
}

/* ---- boot and teardown (loop thread) ---------------------------------------- */

/* Set in a fork child whose parent had a Tk setup or finalize under way on
 * another thread: Xlib's shared state may be half changed in the child (and
 * Xlib's own lock, held while connecting, never let go), so the child
 * starts no Tk. */
static int tk_forked_mid_setup;

/* A fork()ed child has only the forking thread: a lock another thread held
 * (a Tk start waiting for its X server) would never be let go there.  The
 * child makes such a lock again rather than have fork() wait for it (Tcl's
 * exec forks, and must not wait on an unrelated bridge's X server); a lock
 * that was free is taken and let go, to be sure of it. */
static int remake_if_held(pthread_mutex_t *mu) {
  if (pthread_mutex_trylock(mu) == 0) {
    pthread_mutex_unlock(mu);
    return 0;
  }
  pthread_mutex_init(mu, NULL);
  return 1;
}

static void boot_atfork_child(void) {
  (void)remake_if_held(&boot_mu);
  if (remake_if_held(&tk_mu)) tk_forked_mid_setup = 1;
}

/* Tcl's process-wide setup.  The executable's path makes
 * [info nameofexecutable] work (scripts re-exec themselves with it). */
static void tcl_once_fn(void) {
  (void)pthread_atfork(NULL, NULL, boot_atfork_child);
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) exe[n] = '\0';
  Tcl_FindExecutable(n > 0 ? exe : NULL);
}

static void set_var(Tcl_Interp *ip, const char *name, Tcl_Obj *v) {
  Tcl_ObjSetVar2(ip, Tcl_NewStringObj(name, -1), NULL, v, TCL_GLOBAL_ONLY);
}

/* $argv for Tk_Init: our -display / -name first, then the user's words,
 * which Tk parses as wish does (and removes the options it knows; a later
 * -display or -name wins, as it would in wish). */
static void set_argv(tkb_t *tk, Tcl_Interp *ip, int for_tk) {
  Tcl_Obj *l = Tcl_NewListObj(0, NULL);
  if (for_tk && tk->cfg.display) {
    Tcl_ListObjAppendElement(ip, l, Tcl_NewStringObj("-display", -1));
    Tcl_ListObjAppendElement(ip, l, Tcl_NewStringObj(tk->cfg.display, -1));
  }
  if (for_tk && tk->cfg.app_name) {
    Tcl_ListObjAppendElement(ip, l, Tcl_NewStringObj("-name", -1));
    Tcl_ListObjAppendElement(ip, l, Tcl_NewStringObj(tk->cfg.app_name, -1));
  }
  for (int i = 0; i < tk->cfg.argc; i++)
    Tcl_ListObjAppendElement(ip, l, Tcl_NewStringObj(tk->argv_copy[i], -1));
  set_var(ip, "argv", l);
  set_var(ip, "argc", Tcl_NewIntObj(tk->cfg.argc));
}

/* Tk puts a -display it is given into $env(DISPLAY), which Tcl writes to
 * the process environment, and leaves it there even when it then fails to
 * connect.  The environment is the whole process's (the host, other
 * bridges, every later tkb_start), so it is put back as it was.  It is
 * read through $env, under Tcl's environment lock: a bridge starting Tk on
 * another loop thread may be changing it (Tcl replaces the array). */
static void restore_display(Tcl_Interp *ip, const char *before) {
  const char *now = Tcl_GetVar2(ip, "env", "DISPLAY", TCL_GLOBAL_ONLY);
  if (before == NULL && now != NULL)
    Tcl_UnsetVar2(ip, "env", "DISPLAY", TCL_GLOBAL_ONLY);
  else if (before != NULL && (now == NULL || strcmp(now, before) != 0))
    Tcl_SetVar2(ip, "env", "DISPLAY", before, TCL_GLOBAL_ONLY);
}

/* Tk is brought into the interp as `package require Tk` brings it into
 * tclsh: Tk_Init reads $argv.  libtkbridge is not linked to libtk, so that
 * a process that wants only Tcl on its loop (gvtclsh, a no_tk bridge) does
 * not map Tk and the X11 libraries.  Which Tk, in this order:
 *   - the one the process has: loaded by any path (found by the soname of
 *     the one the build found) or in the global scope (the host links it),
 *     so that a second copy is never mapped;
 *   - the library the build found, by its path (`package require` would
 *     first source every pkgIndex.tcl on the auto_path, which is slow
 *     with many packages installed);
 *   - `package require Tk`, when that file is gone.
 * The first two are registered as a static package, so that a child
 * interp gets Tk with `load {} Tk`.  The handles are never closed: Tk
 * cannot be unloaded. */
typedef int (*tk_init_fn)(Tcl_Interp *);

static int tk_syms(void *h, tk_init_fn *init, tk_init_fn *safe_init) {
  if (h == NULL) return -1;
  /* POSIX's way to store dlsym's result in a function pointer. */
  *(void **)init = dlsym(h, "Tk_Init");
  *(void **)safe_init = dlsym(h, "Tk_SafeInit");
  return *init != NULL && *safe_init != NULL ? 0 : -1;
}

static int find_tk(tk_init_fn *init, tk_init_fn *safe_init) {
#ifdef TKB_TK_LIBRARY
  if (tk_syms(dlopen(TKB_TK_SONAME, RTLD_NOW | RTLD_NOLOAD), init, safe_init) == 0) return 0;
#endif
  if (tk_syms(RTLD_DEFAULT, init, safe_init) == 0) return 0;
#ifdef TKB_TK_LIBRARY
  if (tk_syms(dlopen(TKB_TK_LIBRARY, RTLD_NOW), init, safe_init) == 0) return 0;
#endif
  return -1;
}

static int load_tk(Tcl_Interp *ip) {
  tk_init_fn init, safe_init;
  if (find_tk(&init, &safe_init) != 0)
    return Tcl_PkgRequire(ip, "Tk", "8.6", 0) != NULL ? TCL_OK : TCL_ERROR;
  if (init(ip) != TCL_OK) return TCL_ERROR;
  Tcl_StaticPackage(ip, "Tk", init, safe_init);
  return TCL_OK;
}

static int init_tk(tkb_t *tk, Tcl_Interp *ip, char **msg) {
  const char *env = Tcl_GetVar2(ip, "env", "DISPLAY", TCL_GLOBAL_ONLY);
  char *before = env ? strdup(env) : NULL;
  set_argv(tk, ip, 1);
  int ok = load_tk(ip) == TCL_OK;
  if (!ok) *msg = tkb__strdup(Tcl_GetStringResult(ip));
  restore_display(ip, before);   /* a -display in argv counts as well */
  free(before);
  return ok ? 0 : ENOTSUP;
}

/* The interp with Tcl_Init run, under boot_mu; NULL with *msg set. */
static Tcl_Interp *boot_tcl(tkb_t *tk, char **msg) {
  pthread_mutex_lock(&boot_mu);
  Tcl_Interp *ip = Tcl_CreateInterp();
  Tcl_Preserve(ip);
  set_var(ip, "argv0", Tcl_NewStringObj(tk->cfg.argv0 ? tk->cfg.argv0 : "tkbridge", -1));
  set_var(ip, "tcl_interactive", Tcl_NewIntObj(0));
  set_argv(tk, ip, 0);
  if (Tcl_Init(ip) != TCL_OK) {
    *msg = tkb__strdup(Tcl_GetStringResult(ip));
    Tcl_DeleteInterp(ip);
    Tcl_Release(ip);
    ip = NULL;
  }
  pthread_mutex_unlock(&boot_mu);
  return ip;
}

/* ENOTSUP with *msg set when Tk may not start on this thread, else 0.
 * Called unlocked first (no interp is made for a refused start), then under
 * tk_mu, where tk_ended and a finalize cannot change meanwhile. */
static int tk_refused(const tkb__drv_t *d, char **msg) {
  const char *why = NULL;
  if (tk_forked_mid_setup)
    why = "Tk cannot start in a child forked while another thread set Tk up or closed "
          "it (Xlib's shared state may be half changed there)";
  else if (!d->had_tk && atomic_load(&tk_ended))
    why = "Tk cannot start on a new thread once a thread that ran it has ended (Tk 8.6 "
          "does not set up its X display again safely)";
  if (why == NULL) return 0;
  *msg = tkb__strdup(why);
  return ENOTSUP;
}

/* ip deleted and released: its teardown runs at the release (it is
 * preserved), so both come under tk_mu when ip may hold Tk. */
static void boot_drop(tkb_t *tk, Tcl_Interp *ip) {
  if (!tk->cfg.no_tk) pthread_mutex_lock(&tk_mu);
  Tcl_DeleteInterp(ip);
  Tcl_Release(ip);
  if (!tk->cfg.no_tk) pthread_mutex_unlock(&tk_mu);
}

/* Tk (unless no_tk) and the bridge's commands in ip, under tk_mu for Tk;
 * on failure ip is dropped (boot_drop). */
static int boot_rest(tkb_t *tk, Tcl_Interp *ip, char **msg) {
  tkb__drv_t *d = tls_drv;
  int rc = 0;
  if (!tk->cfg.no_tk) {
    pthread_mutex_lock(&tk_mu);
    if ((rc = tk_refused(d, msg)) == 0) {
      d->tried_tk = 1;
      if ((rc = init_tk(tk, ip, msg)) == 0) d->had_tk = 1;
    }
    pthread_mutex_unlock(&tk_mu);
  }
  if (rc == 0) rc = tkb__install_builtins(tk, ip, msg);
  if (rc != 0) boot_drop(tk, ip);
  return rc;
}

/* [loop thread] Create tk's interp.  Returns 0, EPERM (not our driver),
 * TKB_ETCL / ENOTSUP with *msg set. */
int tkb__boot(tkb_t *tk, char **msg) {
  tkb__drv_t *d = tls_drv;
  if (d == NULL || d->l != tk->l) {
    *msg = tkb__strdup(TKB__NO_DRIVER_MSG);
    tkb__mark_stopped(tk);
    return EPERM;
  }
  if (!tk->cfg.no_tk && tk_refused(d, msg) != 0) {
    tkb__mark_stopped(tk);
    return ENOTSUP;
  }
  pthread_once(&tcl_once, tcl_once_fn);
  d->tcl_live = 1;
  Tcl_Interp *ip = boot_tcl(tk, msg);
  int rc = ip != NULL ? boot_rest(tk, ip, msg) : TKB_ETCL;
  if (rc != 0) {
    tkb__mark_stopped(tk);
    return rc;
  }
  Tcl_AsyncHandler quiet = Tcl_AsyncCreate(quiet_proc, tk);
  pthread_mutex_lock(&tk->mu);
  tk->interp = ip;
  tk->quiet = quiet;
  pthread_mutex_unlock(&tk->mu);
  tkb__ref(tk); /* the driver's list */
  tk->next = d->bridges;
  d->bridges = tk;
  return 0;
}

static void drv_unlink(tkb_t *tk) {
  tkb__drv_t *d = tls_drv;
  if (d == NULL) return;
  for (tkb_t **pp = &d->bridges; *pp; pp = &(*pp)->next) {
    if (*pp == tk) {
      *pp = tk->next;
      tk->next = NULL;
      tkb__unref(tk);
      return;
    }
  }
}

/* [loop thread] Delete the interp, cancel what is queued, wake tkb_stop
 * waiters.  Safe to call again, and from inside the interp's own scripts
 * (Tcl defers the deletion until they unwind); a call made while a teardown
 * is under way (a <Destroy> binding calling tkb_stop) returns at once. */
void tkb__teardown(tkb_t *tk) {
  if (tk->tearing) return;
  tk->tearing = 1;
  pthread_mutex_lock(&tk->mu);
  Tcl_Interp *ip = tk->interp;
  if (tk->state == TKB_ST_RUNNING) tk->state = TKB_ST_STOPPING;
  tk->interp = NULL; /* no other thread may use it from here on */
  pthread_mutex_unlock(&tk->mu);
  if (ip != NULL) {
    Tcl_AsyncDelete(tk->quiet);  /* begin_stop marks it only with interp set */
    tk->quiet = NULL;
    Tcl_CancelIdleCall(uncancel_idle, tk);
    Tcl_CancelEval(ip, NULL, NULL, TCL_CANCEL_UNWIND);
    tkb__call_cancel_queued(tk);
    Tcl_DeleteInterp(ip);
    Tcl_Release(ip);
  }
  tkb__call_cancel_queued(tk);
  tkb__ntf_stats_t ns;
  tkb__ntf_stats(&ns);
  pthread_mutex_lock(&tk->mu);
  tk->ntf = ns;
  tk->state = TKB_ST_STOPPED;
  pthread_cond_broadcast(&tk->cv);
  pthread_mutex_unlock(&tk->mu);
  drv_unlink(tk); /* may drop the last reference: tk is not touched after */
}

/* ---- the driver -------------------------------------------------------------- */

/* Called by the notifier when a wait first sees the evloop stopping. */
static void drv_on_stop(void *arg) {
  tkb__drv_t *d = arg;
  for (tkb_t *tk = d->bridges; tk; tk = tk->next) begin_stop(tk);
}

/* One turn of Tcl's loop, split so that idle work -- Tk's redraws and
 * geometry -- shows as its own span on the GVL timeline: pending events
 * first, then idle handlers, then a blocking wait.  Used only while the
 * GVL is traced; otherwise the driver makes the plain Tcl_DoOneEvent. */
static void traced_one_event(evl_t *l) {
  if (Tcl_DoOneEvent((TCL_ALL_EVENTS & ~TCL_IDLE_EVENTS) | TCL_DONT_WAIT)) return;
  gvl_trace_begin(evl_gvl(l), "tk", "idle/redraw");
  int did = Tcl_DoOneEvent(TCL_IDLE_EVENTS | TCL_DONT_WAIT);
  gvl_trace_end(evl_gvl(l), "tk", "idle/redraw");
  if (!did) Tcl_DoOneEvent(TCL_ALL_EVENTS);
}

static void tkb__driver(evl_t *l, void *arg) {
  (void)arg;
  tkb__drv_t d = {.l = l};
  if (tkb__ntf_install() != 0 || tkb__ntf_bind(l, drv_on_stop, &d) != 0) {
    while (!evl_stopping(l)) evl_step(l, -1);
    return;
  }
  tls_drv = &d;
  while (!evl_stopping(l) && !d.tcl_live) evl_step(l, -1);
  while (!evl_stopping(l)) {
    if (gvl_trace_active(evl_gvl(l))) traced_one_event(l);
    else Tcl_DoOneEvent(TCL_ALL_EVENTS);
  }
  while (d.bridges) {
    begin_stop(d.bridges);
    tkb__teardown(d.bridges);
  }
  if (d.tcl_live) {
    tkb__call_cancel_queued(NULL);
    /* Tk closes its X display here.  Brought up again on another thread
     * afterwards, Tk 8.6 can make Xlib exit the process (an X error from
     * XRenderQueryFormats on the third such thread; tclsh8.6 with Thread-
     * package threads does the same): tkb__boot refuses it from now on. */
    if (d.tried_tk) pthread_mutex_lock(&tk_mu);
    if (d.had_tk) atomic_store(&tk_ended, 1);
    Tcl_FinalizeThread();
    if (d.tried_tk) pthread_mutex_unlock(&tk_mu);
  }
  tls_drv = NULL;
  tkb__ntf_unbind();
}

/* ---- public calls ---------------------------------------------------------------- */

/* cfg.on_stop: the evloop is stopping, and a script that never enters
 * Tcl's event loop (a CPU-bound loop, a loop of host commands) would keep
 * the driver from ever seeing it, and evl_stop would wait for ever.  Ask
 * every bridge of l to unwind now, as tkb_stop does.  live_mu keeps each
 * from being freed meanwhile (tk_free unlinks it first); the order is
 * live_mu, then tk->mu, nowhere the other way round. */
static void tkb__on_evl_stop(evl_t *l, void *arg) {
  (void)arg;
  pthread_mutex_lock(&live_mu);
  for (tkb_t *p = live_head; p; p = p->live_next)
    if (p->l == l) begin_stop(p);
  pthread_mutex_unlock(&live_mu);
}

int tkb_evl_config(evl_config_t *ec) {
  if (ec == NULL) return EINVAL;
  ec->driver = tkb__driver;
  ec->driver_arg = NULL;
  ec->on_stop = tkb__on_evl_stop;
  ec->on_stop_arg = NULL;
  return 0;
}

static int copy_cfg(tkb_t *tk, const tkb_config_t *cfg) {
  tk->cfg = *cfg;
  tk->cfg.argv0 = cfg->argv0 ? strdup(cfg->argv0) : NULL;
  tk->cfg.app_name = cfg->app_name ? strdup(cfg->app_name) : NULL;
  tk->cfg.display = cfg->display ? strdup(cfg->display) : NULL;
  tk->cfg.argv = NULL;
  tk->argv_copy = calloc((size_t)cfg->argc + 1, sizeof(char *));
  if (tk->argv_copy == NULL) return ENOMEM;
  for (int i = 0; i < cfg->argc; i++) {
    tk->argv_copy[i] = strdup(cfg->argv[i] ? cfg->argv[i] : "");
    if (tk->argv_copy[i] == NULL) return ENOMEM;
  }
  if ((cfg->argv0 && !tk->cfg.argv0) || (cfg->app_name && !tk->cfg.app_name) ||
      (cfg->display && !tk->cfg.display))
    return ENOMEM;
  return 0;
}

static int check_cfg(const tkb_config_t *cfg) {
  if (cfg->argc < 0 || (cfg->argc > 0 && cfg->argv == NULL)) return EINVAL;
  if (cfg->prio < 0 || cfg->prio > GVL_PRIO_MAX) return EINVAL;
  return 0;
}

static tkb_t *tk_alloc(evl_t *l, const tkb_config_t *cfg, int *err) {
  tkb_t *tk = calloc(1, sizeof(*tk));
  if (tk == NULL) {
    *err = ENOMEM;
    return NULL;
  }
  atomic_init(&tk->refs, 1);
  pthread_mutex_init(&tk->mu, NULL);
  pthread_cond_init(&tk->cv, NULL);
  tk->l = l;
  tk->state = TKB_ST_RUNNING;
  tk->prio = cfg->prio;
  tk->on_error = cfg->on_error;
  tk->on_error_arg = cfg->on_error_arg;
  *err = copy_cfg(tk, cfg);
  if (*err != 0) {
    tk->cfg.argc = 0; /* argv_copy may be partial; free what is there */
    for (int i = 0; tk->argv_copy && i < cfg->argc; i++) free(tk->argv_copy[i]);
    tk_free(tk);
    return NULL;
  }
  return tk;
}

const char *tkb_errmsg(void) {
  return tls_errmsg;
}

static int start(evl_t *l, const tkb_config_t *cfg, tkb_t **out);

static void set_install_errmsg(int rc) {
  int major = 0, minor = 0;
  if (rc != ENOTSUP) return;
  Tcl_GetVersion(&major, &minor, NULL, NULL);
  snprintf(tls_errmsg, sizeof tls_errmsg,
           "tkbridge: the %s needs Tcl_SetNotifier (Tcl 8.6 or 9.0), which Tcl %d.%d "
           "does not have; build libtkbridge with TKB_NOTIFIER=src/tkb_notifier_tcl.c "
           "(Tcl's own notifier driving libuv)",
           tkb__ntf_name(), major, minor);
}

int tkb_start(evl_t *l, const tkb_config_t *cfg, tkb_t **out) {
  set_errmsg("");
  int rc = start(l, cfg, out);
  if (rc != 0 && tls_errmsg[0] == '\0') set_errmsg(tkb_strerror(rc));
  return rc;
}

static int start(evl_t *l, const tkb_config_t *cfg, tkb_t **out) {
  static const tkb_config_t defaults;
  if (out) *out = NULL;
  if (l == NULL || out == NULL) return EINVAL;
  if (cfg == NULL) cfg = &defaults;
  int rc = check_cfg(cfg);
  if (rc != 0) return rc;
  /* Checked here too, not only on the loop thread: a loop without the
   * driver may be one nobody runs (no_thread), and the wait would not end. */
  evl_config_t ec;
  if (evl_config_get(l, &ec) != 0) return EINVAL;
  if (ec.driver != tkb__driver) return EPERM;
  if (evl_stopping(l)) return ECANCELED;
  rc = tkb__ntf_install();
  if (rc != 0) {
    set_install_errmsg(rc);
    return rc;
  }
  tkb_t *tk = tk_alloc(l, cfg, &rc);
  if (tk == NULL) return rc;
  tkb__call_t *c = tkb__call_new(tk, TKB_CALL_START);
  if (c == NULL) {
    tkb__unref(tk);
    return ENOMEM;
  }
  c->sync = 1;
  rc = tkb__call_submit(c);
  if (rc == 0 && tkb__state(tk) != TKB_ST_RUNNING) rc = ECANCELED;
  if (rc != 0 && rc != EINTR && c->result != NULL) set_errmsg(c->result);
  tkb__call_unref(c);
  if (rc != 0) {
    /* Boot failed (the interp is gone) or never ran (ECANCELED: nothing
     * was created); either way there is nothing to tear down. */
    tkb__mark_stopped(tk);
    tkb__unref(tk);
    return rc;
  }
  live_add(tk);
  *out = tk;
  return 0;
}

static void *stop_wait_fn(void *arg) {
  tkb_t *tk = arg;
  pthread_mutex_lock(&tk->mu);
  while (tk->state != TKB_ST_STOPPED || tk->inflight > 0)
    pthread_cond_wait(&tk->cv, &tk->mu);
  pthread_mutex_unlock(&tk->mu);
  return tk;
}

/* Wait until torn down and every accepted call has finished, releasing the
 * GVL if this thread holds it: the loop thread may need it to finish a
 * call (a tkb_eval_async completion).  gvl_call_without does not run fn
 * when an interrupt is pending (and takes it); then the GVL is released
 * and taken back around the wait directly, and the interrupt is made
 * pending again for the caller's next safe point. */
static void stop_wait(tkb_t *tk) {
  gvl_thread_t *self = gvl_thread_self(evl_gvl(tk->l));
  if (self == NULL || !gvl_thread_holds(self)) {
    stop_wait_fn(tk);
  } else if (gvl_call_without(self, stop_wait_fn, tk, NULL, NULL) == NULL) {
    int intr = errno == EINTR;
    gvl_release(self);
    stop_wait_fn(tk);
    gvl_acquire(self);
    if (intr) gvl_thread_interrupt(self);
  }
}

static int stop(tkb_t *tk) {
  begin_stop(tk);
  int on_loop = evl_in_loop_thread(tk->l);
  if (tkb__state(tk) == TKB_ST_STOPPED) {
    if (!on_loop) stop_wait(tk);
    return 0;
  }
  tkb__call_t *c = tkb__call_new(tk, TKB_CALL_STOP);
  if (c == NULL) return ENOMEM;
  (void)tkb__call_submit(c); /* ECANCELED: the driver tears down instead */
  tkb__call_unref(c);
  if (!on_loop) stop_wait(tk);
  return 0;
}

int tkb_stop(tkb_t *tk) {
  if (tk == NULL || !live_ref(tk)) return EINVAL;
  int rc = stop(tk);
  tkb__unref(tk);
  return rc;
}

int tkb_destroy(tkb_t *tk) {
  if (tk == NULL || !live_check(tk, 1)) return EINVAL;
  int rc = stop(tk);
  tkb__unref(tk);
  return rc;
}

struct Tcl_Interp *tkb_interp(tkb_t *tk) {
  if (tk == NULL || !evl_in_loop_thread(tk->l)) return NULL;
  return tk->interp;
}

evl_t *tkb_evl(tkb_t *tk) {
  return tk ? tk->l : NULL;
}

static void snapshot_ntf(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  tkb__ntf_stats_t ns;
  (void)ip;
  (void)arg;
  tkb__ntf_stats(&ns);
  pthread_mutex_lock(&tk->mu);
  tk->ntf = ns;
  pthread_mutex_unlock(&tk->mu);
}

int tkb_stats(tkb_t *tk, tkb_stats_t *out) {
  if (tk == NULL || out == NULL || !live_ref(tk)) return EINVAL;
  int rc = 0;
  memset(out, 0, sizeof(*out));
  out->evals = atomic_load(&tk->evals);
  out->evals_remote = atomic_load(&tk->evals_remote);
  out->runs = atomic_load(&tk->runs);
  out->cmd_calls = atomic_load(&tk->cmd_calls);
  out->cmd_errors = atomic_load(&tk->cmd_errors);
  out->gvl_acquires = atomic_load(&tk->gvl_acquires);
  out->bg_errors = atomic_load(&tk->bg_errors);
  out->cancelled = atomic_load(&tk->cancelled);
  /* Fresh while the bridge runs; once stopped, the teardown's. */
  if (!evl_in_loop_thread(tk->l)) {
    /* Fails with ECANCELED once stopped; EINTR: interrupted while it
     * waited, and the fields may be a snapshot older than the call. */
    if (tkb__run(tk, snapshot_ntf, NULL, 1) == EINTR) rc = EINTR;
  } else if (tkb__state(tk) != TKB_ST_STOPPED)
    snapshot_ntf(tk, NULL, NULL);
  tkb__ntf_stats_t ns;
  pthread_mutex_lock(&tk->mu);
  ns = tk->ntf;
  pthread_mutex_unlock(&tk->mu);
  out->ntf_waits = ns.waits;
  out->ntf_blocking = ns.blocking;
  out->ntf_file_events = ns.file_events;
  out->ntf_alerts = ns.alerts;
  tkb__unref(tk);
  return rc;
}

int tkb_notifier_install(void) {
  return tkb__ntf_install();
}

const char *tkb_notifier_name(void) {
  return tkb__ntf_name();
}

const char *tkb_strerror(int err) {
  switch (err) {
    case TKB_ETCL: return "Tcl error (the message is the script's result)";
    case TKB_ENOCMD: return "no such host command (not created with tkb_command_create)";
    case EPERM: return "the evloop was not set up with tkb_evl_config, or is attached, or wrong thread";
    case ENOTSUP: return "Tk could not be initialised (no display, or Tk ended on another thread)";
    case ECANCELED: return "cancelled: the bridge stopped before the call ran";
    default: return evl_strerror(err);
  }
}

const char *tkb_err_name(int err) {
  switch (err) {
    case TKB_ETCL: return "TKB_ETCL";
    case TKB_ENOCMD: return "TKB_ENOCMD";
    default: return evl_err_name(err);
  }
}

unsigned tkb_version(void) { return TKB_VERSION_HEX; }

const char *tkb_version_string(void) { return TKB_VERSION_STRING; }
