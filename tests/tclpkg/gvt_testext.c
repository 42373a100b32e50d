/* SPDX-License-Identifier: MIT */
/*
 * gvt_testext.c -- test tooling for the gvloop package, kept out of the
 * package itself: `package require gvlooptest` (TCLLIBPATH at this
 * directory's build folder) gives
 *
 *   gvloop_test::hog start ?N?  N (default 1) threads holding the process
 *                               GVL in a CPU loop with a safe point every
 *                               ~1 us of work; returns the interp's count
 *   gvloop_test::hog stop       stop and join this interp's hogs; 0
 *   gvloop_test::hog count      the interp's number of hogs
 *   gvloop_test::threads        the number of threads of the process
 *
 * The GVL is the package's (gvloop_tcl.h).  Hogs are joined when stopped,
 * when their interp is deleted, and asked to end when Tcl exits.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gvloop_tcl.h"

#define MAX_HOGS 64
#define ASSOC "gvlooptest"

__attribute__((visibility("default"))) int Gvlooptest_Init(Tcl_Interp *ip);

typedef struct {
  pthread_t th;
  gvl_t *g;
  atomic_int stop;
  unsigned long spin;
} hog_t;

typedef struct {
  gvl_t *g;
  hog_t *hogs[MAX_HOGS];
  int n;
} hogs_t;

static pthread_mutex_t cal_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long spin_per_us_v; /* cal_mu */
static atomic_int exiting;          /* Tcl exits: every hog ends */
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* Work the compiler cannot remove: the empty asm makes x opaque. */
static void spin(unsigned long n) {
  unsigned long x = 0;
  for (unsigned long i = 0; i < n; i++) {
    x += i;
    __asm__ volatile("" : "+r"(x));
  }
}

static unsigned long spin_per_us(void) {
  pthread_mutex_lock(&cal_mu);
  if (spin_per_us_v == 0) {
    uint64_t t0 = gvl_now_ns(), us;
    unsigned long n = 0;
    while (gvl_now_ns() - t0 < 20000000ull) {
      spin(1000);
      n += 1000;
    }
    us = (gvl_now_ns() - t0) / 1000;
    spin_per_us_v = us && n / us ? n / us : 1;
  }
  unsigned long r = spin_per_us_v;
  pthread_mutex_unlock(&cal_mu);
  return r;
}

static void *hog_main(void *arg) {
  hog_t *h = arg;
  gvl_thread_t *t = gvl_thread_attach(h->g, GVL_PRIO_NORMAL);
  if (t == NULL) return NULL;
  gvl_acquire(t);
  while (!atomic_load_explicit(&h->stop, memory_order_relaxed) &&
         !atomic_load_explicit(&exiting, memory_order_relaxed)) {
    spin(h->spin);
    gvl_check_ints(t);
  }
  gvl_release(t);
  gvl_thread_detach(t);
  return NULL;
}

static void hogs_stop(hogs_t *hs) {
  for (int i = 0; i < hs->n; i++) atomic_store(&hs->hogs[i]->stop, 1);
  for (int i = 0; i < hs->n; i++) {
    pthread_join(hs->hogs[i]->th, NULL);
    free(hs->hogs[i]);
  }
  hs->n = 0;
}

static int hogs_start(hogs_t *hs, int n) {
  unsigned long s = spin_per_us();
  for (int i = 0; i < n; i++) {
    hog_t *h = calloc(1, sizeof *h);
    if (h == NULL) return ENOMEM;
    h->g = hs->g;
    h->spin = s;
    int err = pthread_create(&h->th, NULL, hog_main, h);
    if (err != 0) {
      free(h);
      return err;
    }
    hs->hogs[hs->n++] = h;
  }
  return 0;
}

static int hog_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  static const char *const subs[] = {"start", "stop", "count", NULL};
  hogs_t *hs = cd;
  int idx, n = 1, err;
  if (objc < 2 || objc > 3) {
    Tcl_WrongNumArgs(ip, 1, objv, "start ?n? | stop | count");
    return TCL_ERROR;
  }
  if (Tcl_GetIndexFromObj(ip, objv[1], subs, "subcommand", 0, &idx) != TCL_OK)
    return TCL_ERROR;
  if (idx != 0 && objc != 2) {
    Tcl_WrongNumArgs(ip, 2, objv, "");
    return TCL_ERROR;
  }
  if (idx == 0) {
    if (objc == 3 && Tcl_GetIntFromObj(ip, objv[2], &n) != TCL_OK) return TCL_ERROR;
    if (n < 0 || n > MAX_HOGS - hs->n) {
      Tcl_SetObjResult(ip, Tcl_ObjPrintf("hog count must be 0..%d", MAX_HOGS - hs->n));
      return TCL_ERROR;
    }
    if ((err = hogs_start(hs, n)) != 0) {
      Tcl_SetObjResult(ip, Tcl_ObjPrintf("hog start: %s", strerror(err)));
      return TCL_ERROR;
    }
  } else if (idx == 1) {
    hogs_stop(hs);
  }
  Tcl_SetObjResult(ip, Tcl_NewIntObj(hs->n));
  return TCL_OK;
}

static int threads_cmd(ClientData cd, Tcl_Interp *ip, int objc, Tcl_Obj *const objv[]) {
  DIR *d;
  struct dirent *e;
  int n = 0;
  (void)cd;
  if (objc != 1) {
    Tcl_WrongNumArgs(ip, 1, objv, "");
    return TCL_ERROR;
  }
  if ((d = opendir("/proc/self/task")) == NULL) {
    Tcl_SetObjResult(ip, Tcl_NewStringObj("cannot read /proc/self/task", -1));
    return TCL_ERROR;
  }
  while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
  closedir(d);
  Tcl_SetObjResult(ip, Tcl_NewIntObj(n));
  return TCL_OK;
}

static void interp_gone(ClientData cd, Tcl_Interp *ip) {
  (void)ip;
  hogs_stop(cd);
  free(cd);
}

static void exit_handler(ClientData cd) {
  (void)cd;
  atomic_store(&exiting, 1); /* no hog spins on while Tcl finalizes */
}

static void exit_once_fn(void) {
  Tcl_CreateExitHandler(exit_handler, NULL);
}

int Gvlooptest_Init(Tcl_Interp *ip) {
  const gvloop_tcl_api_t *api;
  evl_t *l;
  gvl_t *g;
  if (Tcl_InitStubs(ip, "8.6", 0) == NULL) return TCL_ERROR;
  if ((api = gvloop_tcl_require(ip)) == NULL) return TCL_ERROR;
  if (api->get(ip, &l, &g) != 0) {
    Tcl_SetObjResult(ip, Tcl_NewStringObj("gvlooptest: no gvloop in this interp", -1));
    return TCL_ERROR;
  }
  if (Tcl_GetAssocData(ip, ASSOC, NULL) == NULL) {
    hogs_t *hs = calloc(1, sizeof *hs);
    if (hs == NULL) return TCL_ERROR;
    hs->g = g;
    pthread_once(&exit_once, exit_once_fn);
    Tcl_SetAssocData(ip, ASSOC, interp_gone, hs);
    Tcl_CreateNamespace(ip, "::gvloop_test", NULL, NULL);
    Tcl_CreateObjCommand(ip, "::gvloop_test::hog", hog_cmd, hs, NULL);
    Tcl_CreateObjCommand(ip, "::gvloop_test::threads", threads_cmd, NULL, NULL);
  }
  return Tcl_PkgProvide(ip, "gvlooptest", "1.0");
}
