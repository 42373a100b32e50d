/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tkb: the Tcl bridge (Tcl only, no display) driven by a byte stream
 * from two threads: synchronous and asynchronous evals of script fragments,
 * raw fuzz bytes evaluated as a script inside a safe child interpreter
 * (no exit, exec, files, sockets, after, vwait or update there; a command
 * limit), host commands created, deleted and called (failing or not),
 * and a stop of the bridge while calls are in flight.
 *
 * Invariants:
 *   - tkb_eval returns 0, TKB_ETCL (with a message) or ECANCELED (only
 *     once the bridge is stopping); results are NUL-terminated strings;
 *   - every accepted tkb_eval_async completes exactly once;
 *   - host commands run on the loop thread holding the GVL;
 *   - tkb_destroy, evl_destroy and gvl_destroy succeed at the end.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tcl.h>

#include "tkbridge.h"

#define FZ_CHECK(c)                                                          \
  do {                                                                       \
    if (!(c)) {                                                              \
      fprintf(stderr, "fuzz_tkb: %s:%d: invariant broken: %s\n", __FILE__,   \
              __LINE__, #c);                                                 \
      abort();                                                               \
    }                                                                        \
  } while (0)

#define NSUB 2
#define MAXOPS 64

static gvl_t *g;
static evl_t *l;
static tkb_t *tk;
static atomic_int stopping;
static atomic_long async_sent, async_done, host_calls;

typedef struct {
  uint8_t op, arg;
  const uint8_t *raw;
  size_t rawlen;
} fz_op_t;

static fz_op_t ops[NSUB][MAXOPS];
static int nops[NSUB];

static const char *const frags[] = {
  "set a 1", "error boom", "incr cnt", "host a b", "host fail",
  "catch {host fail} m; set m", "expr {1/0}", "after 0 {incr cnt}",
  "after 0 {error bg}", "proc p {x} {return [string repeat $x 3]}; p ab",
  "namespace eval ns {variable v 1}", "string repeat x 1000",
  "list {*}{a b c}", "info commands host*", "host2", "update idletasks",
  "dict create a 1 b 2", "lsort -integer {3 1 2}", "set ::a",
  "unset -nocomplain ::a", "s eval {set q 1}", "catch {s eval {host fail}}",
};
#define NFRAGS (sizeof frags / sizeof frags[0])

static int host_cmd(tkb_t *b, void *arg, int argc, const char *const *argv,
                    tkb_result_t *res) {
  (void)arg;
  FZ_CHECK(b == tk);
  FZ_CHECK(evl_in_loop_thread(tkb_evl(b)));
  FZ_CHECK(gvl_thread_holds(evl_gvl_thread(tkb_evl(b))));
  atomic_fetch_add(&host_calls, 1);
  if (argc > 1 && strcmp(argv[1], "fail") == 0) {
    FZ_CHECK(tkb_result_set(res, "host failed") == 0);
    return EIO;
  }
  return tkb_result_set(res, argc > 1 ? argv[argc - 1] : "");
}

static void done_cb(tkb_t *b, int status, const char *result, void *arg) {
  (void)arg;
  FZ_CHECK(b == tk);
  FZ_CHECK(result != NULL);
  FZ_CHECK(status == 0 || status == TKB_ETCL || status == ECANCELED);
  atomic_fetch_add(&async_done, 1);
}

static void check_rc(int r) {
  FZ_CHECK(r == 0 || r == TKB_ETCL || r == ECANCELED);
  if (r == ECANCELED) FZ_CHECK(atomic_load(&stopping));
}

typedef struct {
  const uint8_t *raw;
  size_t len;
} raw_t;

/* [loop thread, no GVL] Evaluate raw bytes in the safe child. */
static void run_raw(tkb_t *b, Tcl_Interp *ip, void *arg) {
  raw_t *r = arg;
  Tcl_Obj *script = Tcl_NewStringObj((const char *)r->raw, (int)r->len);
  Tcl_Interp *child;
  (void)b;
  child = Tcl_GetChild(ip, "s");
  if (child == NULL) return;
  Tcl_IncrRefCount(script);
  Tcl_LimitSetCommands(child, Tcl_LimitGetCommands(child) + 2000);
  (void)Tcl_EvalObjEx(child, script, 0);
  Tcl_ResetResult(child);
  Tcl_DecrRefCount(script);
}

static void do_op(const fz_op_t *o) {
  char *res = NULL;
  int r;
  switch (o->op % 8) {
  case 0: case 1:
    r = tkb_eval(tk, frags[o->arg % NFRAGS], &res);
    check_rc(r);
    if (r != ECANCELED) FZ_CHECK(res != NULL);
    free(res);
    break;
  case 2: case 3:
    r = tkb_eval_async(tk, frags[o->arg % NFRAGS], done_cb, NULL);
    check_rc(r);
    if (r == 0) atomic_fetch_add(&async_sent, 1);
    break;
  case 4: {
    raw_t rw = {o->raw, o->rawlen};
    r = tkb_run(tk, run_raw, &rw);
    FZ_CHECK(r == 0 || r == ECANCELED);
    break;
  }
  case 5:
    r = tkb_command_create(tk, o->arg & 1 ? "host2" : "ns2::host", host_cmd,
                           NULL);
    FZ_CHECK(r == 0 || r == ECANCELED);
    break;
  case 6:
    r = tkb_command_delete(tk, o->arg & 1 ? "host2" : "ns2::host");
    FZ_CHECK(r == 0 || r == TKB_ENOCMD || r == ECANCELED);
    break;
  case 7:
    if (o->arg > 250) {
      atomic_store(&stopping, 1);
      FZ_CHECK(tkb_stop(tk) == 0);
    }
    break;
  }
}

static void *sub_main(void *arg) {
  int k = (int)(intptr_t)arg, i;
  for (i = 0; i < nops[k]; i++) do_op(&ops[k][i]);
  return NULL;
}

static void setup(void) {
  evl_config_t ec;
  tkb_config_t tc;
  memset(&ec, 0, sizeof ec);
  memset(&tc, 0, sizeof tc);
  if (g == NULL) {
    g = gvl_create(NULL);
    FZ_CHECK(g != NULL);
  }
  FZ_CHECK(tkb_evl_config(&ec) == 0);
  l = evl_start(g, &ec);
  FZ_CHECK(l != NULL);
  tc.no_tk = 1;
  FZ_CHECK(tkb_start(l, &tc, &tk) == 0);
  FZ_CHECK(tkb_command_create(tk, "host", host_cmd, NULL) == 0);
  /* The raw bytes go to a safe child: no exit, exec, files or sockets;
   * the calls that block or wait for events are hidden too. */
  FZ_CHECK(tkb_eval(tk,
                    "interp create -safe s; interp alias s host {} host; "
                    "foreach c {after vwait update} {interp hide s $c}; "
                    "interp limit s command -value 2000",
                    NULL) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pthread_t th[NSUB];
  size_t i;
  int k;
  if (size < 2) return 0;
  memset(nops, 0, sizeof nops);
  /* Ops: [op byte][arg byte]; op 4 (raw) takes arg bytes of raw script. */
  for (i = 0; i + 1 < size;) {
    fz_op_t *o;
    k = data[i] % NSUB;
    if (nops[k] >= MAXOPS) break;
    o = &ops[k][nops[k]++];
    o->op = (uint8_t)(data[i] / NSUB);
    o->arg = data[i + 1];
    i += 2;
    if (o->op % 8 == 4) {
      size_t n = o->arg % 64;
      if (n > size - i) n = size - i;
      o->raw = data + i;
      o->rawlen = n;
      i += n;
    }
  }
  atomic_store(&stopping, 0);
  atomic_store(&async_sent, 0);
  atomic_store(&async_done, 0);
  setup();
  for (k = 0; k < NSUB; k++)
    FZ_CHECK(pthread_create(&th[k], NULL, sub_main, (void *)(intptr_t)k) == 0);
  for (k = 0; k < NSUB; k++) pthread_join(th[k], NULL);
  atomic_store(&stopping, 1);
  FZ_CHECK(tkb_destroy(tk) == 0);
  tk = NULL;
  FZ_CHECK(evl_destroy(l) == 0);
  l = NULL;
  FZ_CHECK(atomic_load(&async_done) == atomic_load(&async_sent));
  return 0;
}
