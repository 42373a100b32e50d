/* SPDX-License-Identifier: MIT */
/*
 * capi_ext.c -- a C extension that uses the gvloop package's C API
 * (gvloop_tcl.h): it gets the interp's evloop and the process GVL and
 * registers libuv work of its own.  Loaded by capi.tcl.
 *
 *   capi::timers n       n one-shot evl_timers (0..4 ms)
 *   capi::long_timer     one timer far in the future (cancelled at stop)
 *   capi::posts n        a pthread makes n evl_posts (cross-thread wake-ups)
 *   capi::pipe_write s   write s into a pipe watched with evl_fd_watch
 *   capi::wrong_thread   api->get from another thread (must be EPERM)
 *   capi::hold_gvl       a thread takes the GVL and keeps it, with no safe
 *                        point, until the process ends
 *   capi::counts         dict of what the callbacks saw
 * Every callback checks that it runs on the interp's thread holding the GVL.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "gvloop_tcl.h"

__attribute__((visibility("default"))) int Capi_Init(Tcl_Interp *ip);

/* Process-wide on purpose: the counts outlive the interps (capi.tcl reads
 * the cancellations of a deleted interp from a new one). */
static atomic_int n_ok, n_bad, n_cancelled, n_io_bytes, n_posts;
static evl_t *the_l;
static gvl_t *the_g;
static pthread_t tcl_thread;
static int pipe_fd[2] = {-1, -1};
static const gvloop_tcl_api_t *the_api;
static evl_id_t long_id;           /* capi::long_timer's registration */
static atomic_int gone_rc = -1;    /* evl_cancel from our deletion callback */

static int on_tcl_thread_with_gvl(void) {
  gvl_thread_t *t = gvl_thread_self(the_g);
  return pthread_equal(pthread_self(), tcl_thread) && t != NULL && gvl_thread_holds(t);
}

static void timer_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == ECANCELED) {
    atomic_fetch_add(&n_cancelled, 1);
    return;
  }
  atomic_fetch_add(on_tcl_thread_with_gvl() && status == 0 ? &n_ok : &n_bad, 1);
}

static void post_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status == 0 && on_tcl_thread_with_gvl()) atomic_fetch_add(&n_posts, 1);
  else atomic_fetch_add(&n_bad, 1);
}

static void io_cb(evl_t *l, void *arg, int status, unsigned events) {
  char buf[256];
  ssize_t n;
  (void)l;
  (void)arg;
  if (status != 0) return;  /* last call at stop */
  if (!(events & EVL_READABLE) || !on_tcl_thread_with_gvl()) atomic_fetch_add(&n_bad, 1);
  if ((n = read(pipe_fd[0], buf, sizeof buf)) > 0) atomic_fetch_add(&n_io_bytes, (int)n);
}

static void *poster(void *arg) {
  int n = (int)(intptr_t)arg;
  for (int i = 0; i < n; i++) {
    if (evl_post(the_l, post_cb, NULL, NULL) != 0) atomic_fetch_add(&n_bad, 1);
    if (i % 10 == 0) usleep(100);
  }
  return NULL;
}

typedef struct {
  Tcl_Interp *ip;
  int err;
} wrong_t;

static void *wrong_thread_fn(void *arg) {
  wrong_t *w = arg;
  evl_t *l;
  gvl_t *g;
  w->err = the_api->get(w->ip, &l, &g);
  return NULL;
}

/* Native code that holds the GVL and never reaches a safe point. */
static atomic_int holding;

static void *holder(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(the_g, 0);
  volatile unsigned long x = 0;
  (void)arg;
  if (t == NULL || gvl_acquire(t) != 0) return NULL;
  atomic_store(&holding, 1);
  for (;;) x++;
  return NULL;
}

static int cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  const char *what = cd;
  int n = 0;
  if (objc > 2) {
    Tcl_WrongNumArgs(ip, 1, objv, "?arg?");
    return TCL_ERROR;
  }
  if (strcmp(what, "counts") == 0) {
    Tcl_SetObjResult(ip, Tcl_ObjPrintf("ok %d bad %d cancelled %d io_bytes %d posts %d gone_rc %d",
                                       atomic_load(&n_ok), atomic_load(&n_bad),
                                       atomic_load(&n_cancelled), atomic_load(&n_io_bytes),
                                       atomic_load(&n_posts), atomic_load(&gone_rc)));
    return TCL_OK;
  }
  if (strcmp(what, "wrong_thread") == 0) {
    wrong_t w = {ip, 0};
    pthread_t th;
    pthread_create(&th, NULL, wrong_thread_fn, &w);
    pthread_join(th, NULL);
    Tcl_SetObjResult(ip, Tcl_NewIntObj(w.err));
    return TCL_OK;
  }
  if (strcmp(what, "hold_gvl") == 0) {
    pthread_t th;
    if (pthread_create(&th, NULL, holder, NULL) != 0) return TCL_ERROR;
    pthread_detach(th);
    while (!atomic_load(&holding)) sched_yield();
    return TCL_OK;
  }
  if (strcmp(what, "pipe_write") == 0) {
    const char *s = objc == 2 ? Tcl_GetString(objv[1]) : "";
    if (write(pipe_fd[1], s, strlen(s)) < 0) return TCL_ERROR;
    return TCL_OK;
  }
  if (objc == 2 && Tcl_GetIntFromObj(ip, objv[1], &n) != TCL_OK) return TCL_ERROR;
  if (strcmp(what, "timers") == 0) {
    for (int i = 0; i < n; i++)
      if (evl_timer(the_l, (uint64_t)(i % 5), 0, 0, timer_cb, NULL, NULL) != 0) return TCL_ERROR;
  } else if (strcmp(what, "long_timer") == 0) {
    if (evl_timer(the_l, 1000000, 0, 0, timer_cb, NULL, &long_id) != 0) return TCL_ERROR;
  } else if (strcmp(what, "posts") == 0) {
    pthread_t th;
    /* Joined at once: the posts are queued, their callbacks come later. */
    pthread_create(&th, NULL, poster, (void *)(intptr_t)n);
    pthread_join(th, NULL);
  }
  return TCL_OK;
}

/* Our own interp-deletion callback: Tcl runs these in no set order, so the
 * loop may already have stopped (and ended the timer: EVL_ENOREG) or not (0,
 * and the timer's last call comes with ECANCELED).  Either way the evl_t
 * must still be valid memory here. */
static void capi_gone(ClientData cd, Tcl_Interp *ip) {
  (void)cd;
  (void)ip;
  if (long_id != 0) {
    atomic_store(&gone_rc, evl_cancel(the_l, long_id));
    long_id = 0;
  }
}

int Capi_Init(Tcl_Interp *ip) {
  static const char *const names[] = {"timers", "long_timer", "posts", "pipe_write",
                                      "wrong_thread", "counts", "hold_gvl"};
  int err;
  if (Tcl_InitStubs(ip, "8.6", 0) == NULL) return TCL_ERROR;
  if ((the_api = gvloop_tcl_require(ip)) == NULL) return TCL_ERROR;
  if ((err = the_api->get(ip, &the_l, &the_g)) != 0) {
    Tcl_SetObjResult(ip, Tcl_ObjPrintf("gvloop api get: %s", strerror(err)));
    return TCL_ERROR;
  }
  if (the_api->get(NULL, &the_l, &the_g) != EINVAL) return TCL_ERROR;
  tcl_thread = pthread_self();
  if (pipe_fd[0] < 0 && pipe(pipe_fd) != 0) return TCL_ERROR;
  if (evl_fd_watch(the_l, pipe_fd[0], EVL_READABLE, 0, io_cb, NULL, NULL) != 0) return TCL_ERROR;
  Tcl_CallWhenDeleted(ip, capi_gone, NULL);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    Tcl_CreateObjCommand(ip, Tcl_GetString(Tcl_ObjPrintf("::capi::%s", names[i])), cmd,
                         (ClientData)names[i], NULL);
  return Tcl_PkgProvide(ip, "capi", "1.0");
}
