/* SPDX-License-Identifier: MIT */
/*
 * gvl_trace_file.h -- the raw trace file: what libgvl writes at a trace's
 * stop (gvl_trace.c) and what gvl-trace (tools/gvl_trace_json.c) turns
 * into Trace Event Format JSON.  Private to the two: the layout may change
 * with the version number, and the tool refuses a version it does not know.
 *
 * Layout, in the writer's byte order (the tool checks `order`):
 *   gvl__tf_head_t
 *   nthreads times: gvl__tf_thread_t, then its `kept` gvl__tf_rec_t,
 *                   oldest first
 *   uint32_t nstrings, then nstrings times: uint32_t len, len bytes (no NUL)
 * Strings are the categories and names of the other layers' events; a
 * record refers to string i as i + 1, 0 meaning none.
 *
 * A record is the event as it was seen, without interpretation: which state
 * a thread was in is worked out by the tool.  Who handed the GVL to whom
 * is recorded (version 2) by the receiver's RESUMED: why GVL__TR_HANDED and
 * arg the giver's place among the file's threads, plus one (0: the giver
 * recorded nothing in the run).  Version 1 files (libgvl 0.1.0) do not
 * say it; the tool can tell it only from a file that lost no events.
 */
#ifndef GVL_TRACE_FILE_H
#define GVL_TRACE_FILE_H

#include <stdint.h>

#define GVL__TF_MAGIC "GVLTRACE"  /* 8 bytes, no NUL */
#define GVL__TF_VERSION 2u        /* 1: RESUMED said nothing of a handoff */
#define GVL__TF_ORDER 0x01020304u
#define GVL__TF_NAME 32           /* thread name bytes, NUL-padded */
#define GVL__TF_MAX_THREADS 4096u /* threads of one run: max_threads' bound */

/* Record kinds: the gvl_event_t values (1-5), then the other layers'. */
enum { GVL__TK_BEGIN = 16, GVL__TK_END, GVL__TK_INSTANT, GVL__TK_COUNTER,
       GVL__TK_SPAN };

/* Why a hold ended (the why of a SUSPENDED record). */
enum { GVL__TW_RELEASE, GVL__TW_YIELD, GVL__TW_PREEMPT, GVL__TW_BLOCK,
       GVL__TW_COND };

/* How a hold began (the why of a RESUMED record): the GVL was free or taken
 * back, or it was handed over (arg then names the giver, see above). */
enum { GVL__TR_TAKEN, GVL__TR_HANDED };

typedef struct {
  char magic[8];
  uint32_t version;
  uint32_t order;            /* GVL__TF_ORDER as the writer stored it     */
  uint64_t gvl_uid;          /* tells the GVLs of one process apart       */
  uint64_t t0_ns, t_end_ns;  /* start and stop, CLOCK_MONOTONIC           */
  uint64_t lost_nobuf;       /* events of threads past max_threads        */
  uint32_t flags;            /* GVL_TRACE_* of the run                    */
  uint32_t nthreads;
} gvl__tf_head_t;

typedef struct {
  uint64_t offered;          /* events offered: kept + dropped/overwritten */
  uint32_t kept;             /* records that follow                       */
  int32_t tid;               /* kernel thread id                          */
  char name[GVL__TF_NAME];
} gvl__tf_thread_t;

typedef struct {
  uint64_t ns;
  uint64_t id;               /* GVL events: the gvl_thread_t's address, an
                                identity only (PREEMPT_REQ: the target's)  */
  uint64_t arg;              /* instant argument, counter value, span end;
                                RESUMED: the giver (see above)             */
  uint32_t name, cat;        /* other layers: strings, 1-based; 0 none     */
  int16_t prio;              /* READY: queue prio; RESUMED: hold prio      */
  int16_t req;               /* the priority the caller asked for          */
  int16_t cpu;               /* GVL events: the CPU the thread ran on;
                                -1 unknown, and in other layers' records  */
  uint8_t kind;              /* gvl_event_t or GVL__TK_*                   */
  uint8_t why;               /* SUSPENDED: GVL__TW_*; RESUMED: GVL__TR_*   */
} gvl__tf_rec_t;

_Static_assert(sizeof(gvl__tf_head_t) == 56, "gvl__tf_head_t layout");
_Static_assert(sizeof(gvl__tf_thread_t) == 48, "gvl__tf_thread_t layout");
_Static_assert(sizeof(gvl__tf_rec_t) == 40, "gvl__tf_rec_t layout");

#endif /* GVL_TRACE_FILE_H */
