/* SPDX-License-Identifier: MIT */
/*
 * ENOMEM: allocation failures in gvl_create, gvl_thread_attach and a
 * foreign thread's first gvl_call_with are reported (NULL + errno ENOMEM),
 * leave nothing behind, and the same calls work once memory is back.
 *
 * calloc and aligned_alloc (the library's line-aligned structs) are
 * interposed by this program (the library's calls bind to them) and fail
 * only on the calling thread while fail_alloc is set.  Not built for
 * sanitizer or valgrind runs: both replace the allocator themselves.
 */
#include "tgvl.h"

extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

static _Thread_local int fail_alloc;

/* Exported (default visibility, and the executable is linked with
 * ENABLE_EXPORTS) so that libgvl.so binds to it too. */
__attribute__((visibility("default"))) void *calloc(size_t n, size_t size) {
  if (fail_alloc) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_calloc(n, size);
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t align,
                                                           size_t size) {
  if (fail_alloc) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_memalign(align, size);
}

static gvl_t *g;

static void *ident(void *arg) { return arg; }

static void *foreign(void *arg) {
  (void)arg;
  fail_alloc = 1;
  CHECK_NULL_ERRNO(gvl_call_with(g, 0, ident, &g), ENOMEM);
  fail_alloc = 0;
  CHECK(gvl_call_with(g, 0, ident, &g) == &g);
  return NULL;
}

int main(void) {
  tgvl_watchdog(30);
  fail_alloc = 1;
  CHECK_NULL_ERRNO(gvl_create(NULL), ENOMEM);
  fail_alloc = 0;
  g = gvl_create(NULL);
  CHECK(g != NULL);

  fail_alloc = 1;
  CHECK_NULL_ERRNO(gvl_thread_attach(g, 0), ENOMEM);
  fail_alloc = 0;
  CHECK(gvl_thread_self(g) == NULL);
  CHECK_OK(gvl_destroy(g)); /* the failed attach left nothing attached */
  g = gvl_create(NULL);
  CHECK(g != NULL);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_release(me));

  pthread_t th;
  tgvl_spawn(&th, foreign, NULL);
  tgvl_join(th);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
  puts("ok");
  return 0;
}
