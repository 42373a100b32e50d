/* SPDX-License-Identifier: MIT */
/*
 * tkb_test.h -- helpers for the tkbridge tests: checks, a bridge fixture,
 * and a dispatcher that runs one named case per process.
 */
#ifndef TKB_TEST_H
#define TKB_TEST_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tkbridge.h"

#define CHECK(c)                                                          \
  do {                                                                    \
    if (!(c)) {                                                           \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
      abort();                                                            \
    }                                                                     \
  } while (0)

#define CHECK_RC(expr, want)                                              \
  do {                                                                    \
    int rc_ = (expr);                                                     \
    if (rc_ != (want)) {                                                  \
      fprintf(stderr, "%s:%d: %s returned %d (%s), want %d\n", __FILE__,  \
              __LINE__, #expr, rc_, tkb_strerror(rc_), (int)(want));      \
      abort();                                                            \
    }                                                                     \
  } while (0)

typedef struct {
  gvl_t *g;
  evl_t *l;
  tkb_t *tk;
} fx_t;

/* An evloop set up for tkbridge, on g. */
static inline evl_t *fx_loop(gvl_t *g) {
  evl_config_t ec;
  memset(&ec, 0, sizeof ec);
  CHECK_RC(tkb_evl_config(&ec), 0);
  evl_t *l = evl_start(g, &ec);
  CHECK(l != NULL);
  return l;
}

static inline void fx_start_cfg(fx_t *f, tkb_config_t *tc) {
  f->g = gvl_create(NULL);
  CHECK(f->g != NULL);
  f->l = fx_loop(f->g);
  CHECK_RC(tkb_start(f->l, tc, &f->tk), 0);
}

static inline void fx_start(fx_t *f, int no_tk) {
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.no_tk = no_tk;
  fx_start_cfg(f, &tc);
}

static inline void fx_stop(fx_t *f) {
  if (f->tk) CHECK_RC(tkb_destroy(f->tk), 0);
  CHECK_RC(evl_destroy(f->l), 0);
  CHECK_RC(gvl_destroy(f->g), 0);
}

/* Evaluate and require success; returns the malloc'd result. */
static inline char *fx_eval(tkb_t *tk, const char *script) {
  char *r = NULL;
  int rc = tkb_eval(tk, script, &r);
  if (rc != 0) {
    fprintf(stderr, "eval failed (%s): %s\nscript: %s\n", tkb_strerror(rc),
            r ? r : "", script);
    abort();
  }
  CHECK(r != NULL);
  return r;
}

static inline void fx_expect(tkb_t *tk, const char *script, const char *want) {
  char *r = fx_eval(tk, script);
  if (strcmp(r, want) != 0) {
    fprintf(stderr, "eval result \"%s\", want \"%s\"\nscript: %s\n", r, want, script);
    abort();
  }
  free(r);
}

typedef struct {
  const char *name;
  void (*fn)(void);
} tcase_t;

static inline int run_case(const tcase_t *cases, int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s case\n", argv[0]);
    return 2;
  }
  for (const tcase_t *c = cases; c->name; c++) {
    if (strcmp(c->name, argv[1]) == 0) {
      c->fn();
      printf("ok %s\n", c->name);
      return 0;
    }
  }
  fprintf(stderr, "unknown case %s\n", argv[1]);
  return 2;
}

#endif /* TKB_TEST_H */
