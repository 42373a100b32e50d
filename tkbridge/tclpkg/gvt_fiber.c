/*
 * gvt_fiber.c -- evl_run() parked on a private stack of the calling thread
 * (see gvt_fiber.h for why).
 *
 * Sanitizers must be told about stack switches: ASan keeps fake stacks and
 * stack bounds per thread, TSan a shadow call stack; without the fiber
 * annotations both report nonsense after a switch.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "gvt_fiber.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GVT_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define GVT_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(GVT_ASAN)
#define GVT_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(GVT_TSAN)
#define GVT_TSAN 1
#endif

#ifdef GVT_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom,
                                    size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save,
                                     const void **bottom_old, size_t *size_old);
#endif
#ifdef GVT_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

/* Big enough for evl_run's start (GVL attach) and its shutdown, which makes
 * the last calls of every registration on this stack. */
#define GVT_STACK_SIZE (1024u * 1024u)

enum { GVT_NEW = 0, GVT_PARKED, GVT_DONE };

struct gvt_fiber {
  ucontext_t host;          /* the caller's context while the fiber runs */
  ucontext_t fib;           /* the fiber's context while parked          */
  char *map;                /* guard page + stack                        */
  size_t map_size;
  evl_t *l;
  int state;
  int run_err;
  const void *host_bottom;  /* ASan: the caller's stack bounds           */
  size_t host_size;
  void *tsan_host;          /* TSan fibers                               */
  void *tsan_fib;
};

/* makecontext passes ints only: the fiber being started, per thread. */
static _Thread_local gvt_fiber_t *gvt_starting;

/* Switch from the fiber to the host; final = the fiber never runs again. */
static void to_host(gvt_fiber_t *f, int final) {
#ifdef GVT_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(final ? NULL : &fake, f->host_bottom,
                                 f->host_size);
#endif
#ifdef GVT_TSAN
  __tsan_switch_to_fiber(f->tsan_host, 0);
#endif
  if (final) {
    setcontext(&f->host);
  } else {
    swapcontext(&f->fib, &f->host);
  }
#ifdef GVT_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
  (void)final;
}

/* Switch from the host to the fiber. */
static void to_fiber(gvt_fiber_t *f) {
#ifdef GVT_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(&fake, f->map + getpagesize(),
                                 f->map_size - (size_t)getpagesize());
#endif
#ifdef GVT_TSAN
  __tsan_switch_to_fiber(f->tsan_fib, 0);
#endif
  swapcontext(&f->host, &f->fib);
#ifdef GVT_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

static void fiber_main(void) {
  gvt_fiber_t *f = gvt_starting;
#ifdef GVT_ASAN
  __sanitizer_finish_switch_fiber(NULL, &f->host_bottom, &f->host_size);
#endif
  f->run_err = evl_run(f->l);
  f->state = GVT_DONE;
  to_host(f, 1);
}

gvt_fiber_t *gvt_fiber_new(void) {
  gvt_fiber_t *f = calloc(1, sizeof *f);
  size_t page = (size_t)getpagesize();
  if (f == NULL) return NULL;
  f->map_size = GVT_STACK_SIZE + page;
  f->map = mmap(NULL, f->map_size, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (f->map == MAP_FAILED) {
    free(f);
    errno = ENOMEM;
    return NULL;
  }
  mprotect(f->map, page, PROT_NONE);  /* overflow faults, never corrupts */
  return f;
}

void gvt_fiber_driver(evl_t *l, void *arg) {
  gvt_fiber_t *f = arg;
  (void)l;
  f->state = GVT_PARKED;
  /* Resumed by gvt_fiber_leave once a stop was requested; returning lets
   * evl_run shut the loop down. */
  to_host(f, 0);
}

int gvt_fiber_enter(gvt_fiber_t *f, evl_t *l) {
  size_t page = (size_t)getpagesize();
  if (f == NULL || l == NULL || f->state != GVT_NEW) return EINVAL;
  f->l = l;
  if (getcontext(&f->fib) != 0) return errno;
  f->fib.uc_stack.ss_sp = f->map + page;
  f->fib.uc_stack.ss_size = f->map_size - page;
  f->fib.uc_link = NULL;
  makecontext(&f->fib, fiber_main, 0);
#ifdef GVT_TSAN
  f->tsan_host = __tsan_get_current_fiber();
  f->tsan_fib = __tsan_create_fiber(0);
#endif
  gvt_starting = f;
  to_fiber(f);
  gvt_starting = NULL;
  if (f->state == GVT_DONE) return f->run_err != 0 ? f->run_err : ECANCELED;
  return 0;
}

int gvt_fiber_leave(gvt_fiber_t *f) {
  if (f == NULL || f->state != GVT_PARKED) return EINVAL;
  to_fiber(f);
  return f->state == GVT_DONE ? f->run_err : EINVAL;
}

void gvt_fiber_free(gvt_fiber_t *f) {
  if (f == NULL) return;
#ifdef GVT_TSAN
  if (f->tsan_fib != NULL) __tsan_destroy_fiber(f->tsan_fib);
#endif
  munmap(f->map, f->map_size);
  free(f);
}
