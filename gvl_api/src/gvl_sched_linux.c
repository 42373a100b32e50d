/* SPDX-License-Identifier: MIT */
/*
 * gvl_sched_linux.c -- a thread's kernel scheduling, read and set by its
 * kernel thread id, for GVL_F_LEND (gvl_lock.c, "lending"), and the CPU it
 * last ran on, for the spin (gvl_lock.c, spin_for_grant).
 *
 * sched_getattr/sched_setattr carry policy, nice and real-time priority in
 * one call, for any thread of the process.  glibc 2.36 has no wrappers, so
 * they are called through syscall(2) with the kernel's first layout of
 * struct sched_attr (48 bytes, Linux 3.14).  Other systems build
 * gvl_sched_none.c, which lends nothing.
 */
#include "gvl_int.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>   /* glibc 2.35 and later */
#define GVL__HAVE_RSEQ 1
#endif
#endif

struct gvl__sched_attr {     /* the kernel's struct sched_attr, version 0 */
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t  sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
};

int gvl__ksched_tid(void) { return (int)syscall(SYS_gettid); }

/* A failed call's errno, which is then put back: no GVL call changes it
 * (gvl.h). */
static int call_rc(long r, int saved) {
  int rc = r != 0 ? errno : 0;
  errno = saved;
  return rc;
}

int gvl__ksched_get(int tid, gvl__ksched_t *s) {
  struct gvl__sched_attr a;
  int saved = errno, rc;
  memset(&a, 0, sizeof a);
  rc = call_rc(syscall(SYS_sched_getattr, tid, &a, (unsigned)sizeof a, 0u),
               saved);
  if (rc) return rc;
  s->policy = (int)a.sched_policy;
  s->nice = a.sched_nice;
  s->rtprio = (int)a.sched_priority;
  s->flags = a.sched_flags & GVL__SCHED_RESET_ON_FORK;
  return 0;
}

int gvl__ksched_set(int tid, const gvl__ksched_t *s) {
  struct gvl__sched_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.sched_policy = (uint32_t)s->policy;
  a.sched_flags = s->flags;
  a.sched_nice = s->nice;
  a.sched_priority = (uint32_t)s->rtprio;
  int saved = errno;
  return call_rc(syscall(SYS_sched_setattr, tid, &a, 0u), saved);
}


/* Who runs first: a real-time thread by its priority, above every
 * SCHED_OTHER or SCHED_BATCH thread, which go by nice, above SCHED_IDLE.
 * SCHED_DEADLINE has its own rules: it neither lends nor is lent to. */
int gvl__ksched_rank(const gvl__ksched_t *s) {
  switch (s->policy) {
  case SCHED_FIFO:
  case SCHED_RR:    return 100 + s->rtprio;
  case SCHED_OTHER:
  case SCHED_BATCH: return 20 - s->nice;        /* 1 (nice 19) .. 40 (-20) */
  case SCHED_IDLE:  return 0;
  default:          return -1;
  }
}

/* glibc 2.35 and later register an rseq area for every thread, at
 * __rseq_offset from the thread pointer; the kernel writes cpu_id there
 * whenever the thread returns to user space on another CPU, so a thread
 * that is not running shows the CPU it last ran on (and will most likely
 * run on next).  Without it (older glibc, registration refused or turned
 * off, valgrind): NULL. */
const volatile uint32_t *gvl__ksched_cpu_word(void) {
#ifdef GVL__HAVE_RSEQ
  if (__rseq_size == 0) return NULL;
  struct rseq *r =
      (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
  return &r->cpu_id;
#else
  return NULL;
#endif
}
