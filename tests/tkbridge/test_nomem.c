/* SPDX-License-Identifier: MIT */
/* A result that cannot be copied (strdup fails: wrapped, static link) is
 * ENOMEM, never a success with an empty result: on the loop's side (the
 * call's own copy) and on the caller's (the copy tkb_eval hands back),
 * for tkb_eval, an error's message, and tkb_eval_async's completion.  Only
 * copies of 1 MB or more fail, and only when armed. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "tkb_test.h"

char *__real_strdup(const char *s);
char *__wrap_strdup(const char *s);

static atomic_int fail_nth;   /* fail the nth big copy from now; 0: none */

char *__wrap_strdup(const char *s) {
  if (strlen(s) >= (1u << 20) && atomic_load(&fail_nth) > 0 &&
      atomic_fetch_sub(&fail_nth, 1) == 1) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_strdup(s);
}

static atomic_int done_calls, done_status;
static size_t done_len;

static void done_cb(tkb_t *tk, int status, const char *result, void *arg) {
  (void)tk, (void)arg;
  done_len = strlen(result);
  atomic_store(&done_status, status);
  atomic_fetch_add(&done_calls, 1);
}

#define BIG "string repeat x 2000000"

int main(void) {
  fx_t f;
  fx_start(&f, 1);
  char *r = (char *)"unset";
  for (int nth = 1; nth <= 2; nth++) {   /* the loop's copy, the caller's */
    atomic_store(&fail_nth, nth);
    CHECK_RC(tkb_eval(f.tk, BIG, &r), ENOMEM);
    CHECK(r == NULL);
    atomic_store(&fail_nth, nth);
    CHECK_RC(tkb_eval(f.tk, "error [" BIG "]", &r), ENOMEM);
    CHECK(r == NULL);
  }
  atomic_store(&fail_nth, 1);
  CHECK_RC(tkb_eval_async(f.tk, BIG, done_cb, NULL), 0);
  CHECK_RC(tkb_eval(f.tk, "update", NULL), 0);
  while (atomic_load(&done_calls) == 0) sched_yield();
  CHECK_RC(atomic_load(&done_status), ENOMEM);
  CHECK(done_len == 0);
  /* Not armed: the same calls succeed whole. */
  atomic_store(&fail_nth, 0);
  CHECK_RC(tkb_eval(f.tk, BIG, &r), 0);
  CHECK(strlen(r) == 2000000);
  free(r);
  fx_stop(&f);
  puts("ok nomem");
  return 0;
}
