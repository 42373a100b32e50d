/* SPDX-License-Identifier: MIT */
/*
 * gvl.pml -- a SPIN model of the GVL's mechanism, gvl_api/src/gvl_lock.c,
 * with the policy's decisions (gvl_policy.c) abstracted as below.
 *
 * Three threads share one GVL.  Threads 0 and 1 acquire at normal priority
 * (0), thread 2 with a boost (1).  Each thread loops forever:
 *
 *   acquire   gvl__acquire: CAS word 0 -> me; else acquire_slow under mu,
 *             which sets CONTENDED with one fetch_or and queues
 *   hold      any number of safe points; at each one the thread may find its
 *             preempt flag set (gvl__check_ints_slow -> hand_over) or call
 *             gvl_yield (hand_over when the CONTENDED bit is set), or keep
 *             computing; a holder may hold forever this way (`0 until flag`)
 *   release   gvl__release: unboosted holds try CAS me -> 0, boosted holds
 *             and failed CASes take mu and hand the GVL to the best waiter
 *
 *   region    gvl_call_without: the same release, except that the grant to
 *             the waiter served is revocable (granted = 2) when the policy
 *             allows it (within the slice, waiter not above the releaser);
 *             then, after the region, the acquire (acquire_slow, before
 *             it queues): under mu, if the waiter has not taken the grant
 *             (its CAS 2 -> 1), the releaser's CAS 2 -> 0 takes it back
 *             (take_back: the waiter goes back to the head of the queue,
 *             the word names the releaser, the timer role and a preempt
 *             flag meant for the owner follow; a timer that has looked
 *             since it got the role is woken or not, since whether it
 *             would look too late for the resumed slice is a matter of
 *             time; one that has not will look before it sleeps); else a
 *             plain acquire
 *   boosted   the release of a boosted hold (thread 2's) to a waiter below
 *   release   its priority: revocable too, within the slice, and the next
 *             acquire, at thread 2's boost, tries to take it back the same
 *             way, if no other waiter is at that priority or above
 *
 * These are all the ways the GVL changes hands in gvl_lock.c: the fast
 * CAS pair, the free-GVL store in acquire_slow, handoff() from a release
 * (plain or revocable), take_back, and handoff() from hand_over (yield and
 * safe point).
 *
 * State, named as in gvl_int.h: the lock word (owner id + CONTENDED), the
 * internal mutex mu, the wait queue in arrival order with each waiter's
 * qprio, every thread's hold_prio, ints (the preempt bit), granted,
 * is_timer and futex sequence word, g->timer, and
 * whether the boost cap is exceeded, and g->hot / g->hot_to / which
 * release left it (hot_boost).
 *
 * Granularity.  Every access to a variable that other threads read or
 * write without mu (word, ints, granted, seq, is_timer) is its own step,
 * except that a critical section of mu is one step when it contains at
 * most one access whose order matters to a lock-free observer, or when
 * every lock-free observer of its writes can only go on to block on mu
 * (Lipton reduction: taking mu moves right, releasing it moves left).  The
 * waiter's "read seq, check granted, futex_wait(seq)" stays three steps: it
 * is where a lost wake-up would live.  mu itself is a fair (FIFO) lock: a
 * pthread mutex promises no such thing, but starving on it is not a
 * property of this protocol (with an unfair mu, SPIN finds exactly that).
 *
 * Time is abstracted away.  The policy's tick decides "the holder is past
 * its slice" nondeterministically, except after its timed sleep ran out,
 * when it must say yes (the sleep's deadline was the end of the slice).
 * The timed sleep can run out at any moment.  The boost cap is one bit: a
 * boosted hold's charge (at its release, or at a safe point before the
 * pick) sets it, and the sliding window clears it at any moment after
 * (process `window`, made to happen eventually by weak fairness).  While
 * it is set a boost that queues is demoted to normal priority, and every
 * waiter whose hold would be charged (thread 2's) is held back, decided at
 * every pick: preemption and yield of an unboosted holder within its slice
 * pass it over, and release, or any pick once the slice has run out
 * (sliceover: set by the timer's "past the slice", or at a pick as time
 * passes; cleared when a slice starts), serves it only when nobody else
 * waits.  Taking a grant back resumes the releaser's slice, which time
 * ends after finitely many take-backs; the model lets it end at the first
 * (the states a second one would start from are those of any holder
 * within its slice with the waiter queued).  Aging is not
 * modelled; with a single boosted thread handoff must serve everyone
 * without it, and that is checked.
 * A handoff bumps the woken thread's sequence word under mu and kicks it
 * out of futex_wait after mu is released, as in the code, so a late kick
 * can find its thread running, or asleep in a later wait.
 * Wait-queue cancellation (gvl_cond_timedwait), gvl_mutex/gvl_cond,
 * the interactive promotion after a region, the spin-before-sleep hint (a bounded prefix of
 * "granted?" reads, subsumed by the first check of the wait loop) and
 * futex spurious wake-ups are left out.
 *
 * Checked (tests/model/check.sh):
 *   - mutual exclusion (assertion on entry to the hold, monitor invariant);
 *   - invariants in every state: a non-empty queue means CONTENDED is set
 *     (so word == 0 means nobody waits: no barging); with mu free, a
 *     non-empty queue has exactly one queued timer that knows it; a preempt
 *     flag is only ever set on the owner; granted only on the owner;
 *   - an unboosted holder's yield or safe point never hands the GVL to a
 *     held-back boost within its slice;
 *   - no deadlock (invalid end states);
 *   - every acquire completes, under weak fairness (LTL `served`), which
 *     also rules out lost wake-ups and a lost timer role.
 *
 * Broken variants, each of which SPIN must reject (check.sh verifies it),
 * one or more per way the GVL changes hands:
 *   -DBUG_BARGE      release CASes the word to 0 ignoring CONTENDED, so
 *                    queued waiters are never handed the GVL
 *   -DBUG_SEQ        the waiter reads its sequence word after checking
 *                    granted, not before: the classic lost wake-up
 *   -DBUG_NOSEQ      wakes do not bump the sequence word, so a wake that
 *                    lands between "check granted" and "sleep" is lost
 *   -DBUG_TIMERWAKE  handoff passes the timer role on without waking the new
 *                    timer, which keeps sleeping with no deadline, so a
 *                    holder that never releases is never preempted
 *   -DBUG_NOPREEMPT  the timer never sets the holder's preempt flag
 *   -DBUG_YIELDFIRST hand_over hands the GVL on before queueing itself: the
 *                    word then lacks CONTENDED with the yielder queued
 *   -DBUG_CAPPICK    the pick ignores the cap, which was only checked when
 *                    the boost queued
 *   -DBUG_HOTNOCAS   a waiter takes a revocable grant by reading it, not by
 *                    CAS, so the releaser can take it back meanwhile
 *   -DBUG_HOTTIMER   take_back leaves the queue without a timer
 *   -DBUG_HOTSLICE   take_back restarts the slice: a releaser that keeps
 *                    taking grants back starves its waiter
 *   -DBUG_HOTBOOSTSLICE the release of a boosted hold leaves a revocable
 *                    grant past the slice: the boosted thread can take
 *                    every grant back and starve its waiter
 *   -DBUG_HOOKFLAG   (with -DHOOKS) a yield does not clear a preempt
 *                    request made while mu was dropped for its SUSPENDED
 *                    hook: the yielder is queued with its flag set
 * -DHOOKS adds that window: a yield or safe point may (nondeterministically)
 * drop mu between its first pick and the handoff, as with a hook or a
 * trace session.
 * -DTWO_BOOSTED boosts threads 1 and 2: they can then hand the GVL back and
 * forth forever past the normal thread 0, so `served` fails.  In the
 * library the cap bounds their share over real time and aging lifts thread
 * 0; here the window may drain between any two holds and there is no
 * aging, so that guarantee is left to tests/gvl (starvation, promises).
 * -DIA_REQUEUE adds gvl__pol_requeue_prio's interactive case: a holder
 * preempted soon after an interactive region's end queues at the level of
 * the waiter it hands to (never above).  Time is not modelled, so any
 * holder may: safe, but then a normal thread may be passed for ever, as
 * with TWO_BOOSTED (the charge of those holds to the cap bounds it).
 */

#ifndef BUG_HOTBOOSTSLICE
#define HOT_BOOST_SLICE (!sliceover)
#else
#define HOT_BOOST_SLICE 1
#endif

#define N          3
#define CONTENDED  4           /* lock-word bit; the owner id is bits 0..1 */
#define NONE       3           /* no thread: empty queue slot, no timer     */
#define ID(t)      ((t) + 1)   /* owner id in the word; 0 means free        */
#define OWNER(w)   (((w) & 3) - 1)
#ifndef TWO_BOOSTED
#define BASEPRIO(t) ((t) == 2 -> 1 : 0)
#else
#define BASEPRIO(t) ((t) >= 1 -> 1 : 0)   /* threads 1 and 2 boosted */
#endif

byte word;                     /* g->word                                    */
byte mu;                       /* g->mu: 0 free, else ID(holder)             */
byte mq[N - 1] = NONE;         /* threads blocked on mu, FIFO                */
byte mqlen;
byte q[N] = NONE;              /* g->qhead..qtail, arrival order; mu         */
byte qlen;                     /* mu                                         */
byte timer = NONE;             /* g->timer; mu                               */
byte hot = NONE;               /* g->hot: may take its grant back; mu        */
byte hot_to = NONE;            /* g->hot_to: the waiter it went to; mu       */
bit  hot_boost;                /* g->hot_kind is GVL__HOT_BOOST; mu          */
bit  ticked;                   /* the timer has looked since it got the role
                                  or was woken to look again (g->timer_due
                                  != 0); mu                                 */
bit  capx;                     /* cap_exceeded(): boosted time over the cap  */
bit  sliceover;                /* the holder's slice has run out (hold_since
                                  + slice_ns <= now); mu                    */
bit  qprio[N];                 /* t->qprio; mu                               */
bit  hold_prio[N];             /* t->hold_prio                               */
bit  preempt[N];               /* GVL__INT_PREEMPT in t->head.ints           */
byte granted[N];              /* t->granted: 0, 1 (GRANTED), 2 (GRANTED_HOT) */
bit  is_timer[N];              /* t->is_timer                                */
bit  seq[N];                   /* t->park.seq: bumped since t last read it   */
bit  asleep[N];                /* blocked in futex_wait                      */

/* ghost state, for the properties only */
byte incs;                     /* threads holding the GVL                    */
bit  waiting[N];               /* wants the GVL and does not have it         */

/* gvl__park_wake: bump the sequence word, then FUTEX_WAKE if the thread
 * may be asleep.  gvl_wait_futex.c skips the system call while the
 * waiter's `sleepers` word is 0; under sequential consistency that is the
 * same as waking only a thread that really sleeps, which is what asleep[]
 * does here.  (Its correctness on hardware rests on the seq_cst
 * bump/load against the waiter's seq_cst store and the kernel's barrier
 * before it re-reads seq: a memory-model argument SPIN does not check.)
 * Only the waiter compares the word, and only with what it read last, so
 * the model reads it by resetting it to 0 and a bump sets it to 1: the
 * same comparisons ("changed since I read it?") with a word that cannot
 * wrap, which revocable grants would otherwise make it do in the model
 * (they can bump it any number of times in one wait).  -DBUG_NOSEQ: wake without bumping, as a bare FUTEX_WAKE. */
#ifndef BUG_NOSEQ
#define park_bump(x)  seq[x] = 1
#else
#define park_bump(x)  skip
#endif
#define park_kick(x)  asleep[x] = 0
#define park_wake(x)  park_bump(x); park_kick(x)

/* g->mu, a fair lock: a thread that finds it taken queues, and unlock
 * hands it straight to the first one.  (A pthread mutex promises no such
 * thing, but starving on it is not a property of this protocol; with an
 * unfair lock the liveness check finds exactly that.)  lock_mu is one step;
 * the critical section is the next step, guarded by mu == ID(me). */
#define LOCK_MU \
  if \
  :: mu == 0 -> mu = ID(me) \
  :: else -> mq[mqlen] = me; mqlen++ \
  fi

inline lock_mu() { atomic { LOCK_MU } }

inline unlock_mu() {
  if
  :: mqlen > 0 -> mu = ID(mq[0]); mq[0] = mq[1]; mq[N - 2] = NONE; mqlen--
  :: else -> mu = 0
  fi
}

/* enqueue() in gvl_lock.c, with mu held and CONTENDED set: append x at
 * the priority the policy gives it (a boost while the cap is exceeded is
 * demoted to 0), ask the owner to give way if x outranks it, take the
 * timer role if it is free. */
inline enqueue(x, p) {
  qprio[x] = (p && capx -> 0 : p);
  q[qlen] = x;
  qlen++;
  if
  :: OWNER(word) != x && qprio[x] > hold_prio[OWNER(word)] ->
     preempt[OWNER(word)] = 1
  :: else -> skip
  fi;
  if
  :: timer == NONE ->
     /* x is always the calling thread here, so no wake: queueing another
      * thread (gvl__enqueue_other, for gvl_mutex/gvl_cond) is not modelled */
     timer = x;
     ticked = 0;      /* [unreached-ok] from hand_over, as below */
     is_timer[x] = 1  /* [unreached-ok] from hand_over: a waiter has the role */
  :: else -> skip
  fi
}

/* A queued waiter above the holder's priority (gvl__pol_tick's
 * held_back_tick; the model's boosts are its only waiters above 0). */
#define OUTRANKED \
  ((q[0] != NONE && qprio[q[0]] > hold_prio[OWNER(word)]) || \
   (q[1] != NONE && qprio[q[1]] > hold_prio[OWNER(word)]) || \
   (q[2] != NONE && qprio[q[2]] > hold_prio[OWNER(word)]))

/* Is x not held back by the cap?  (gvl__pol_pick: a waiter whose hold
 * would be charged -- at a priority above 0, or by a thread that asked for
 * one -- is, while the cap is exceeded, decided at every pick.) */
#define ELIG(x) (!(qprio[x] || BASEPRIO(x)) || !capx)

/* gvl__pol_pick + q_remove: the highest qprio, the earliest arrival among
 * equals, among the waiters the cap does not hold back.  strict
 * (preemption, yield): W = NONE if there is none.  Not strict (release):
 * then the best of the held-back ones.  With mu held.
 * -DBUG_CAPPICK: the pick ignores the cap (decided at queue time only). */
#ifndef BUG_CAPPICK
#define PICKABLE(x, pass) (ELIG(x) || (pass) == 1)
#else
#define PICKABLE(x, pass) 1
#endif
inline take_best(strict) {
  w = NONE;
  ok = 0;
  do
  :: w == NONE && ok < 2 && (ok == 0 || !strict) ->
     i = 0;
     do
     :: i < qlen ->
        if
        :: PICKABLE(q[i], ok) &&
           (w == NONE || qprio[q[i]] > qprio[q[w]]) -> w = i
        :: else -> skip
        fi;
        i++
     :: else -> break
     od;
     ok++
  :: else -> break
  od;
  ok = 0;
  if
  :: w != NONE ->
     W = q[w];
     i = w;
     do
     :: i < N - 1 -> q[i] = q[i + 1]; i++
     :: else -> break
     od;
     q[N - 1] = NONE;
     qlen--
  :: else -> W = NONE
  fi;
  i = 0;
  w = 0
}

/* handoff() in gvl_lock.c, with mu held: W has been taken off the queue
 * and is granted G (1, or 2 for a revocable grant, which makes the caller
 * g->hot).  A new slice starts (gvl__pol_hold_start).  Each wake is half
 * made: the sequence word is bumped here, the kick out of futex_wait is
 * noted (wk_w, wk_timer) for the caller to make after unlocking mu
 * (wakes_run), each its own step, in that order.  (The code skips the kick
 * of a thread that has not announced a sleep; the model always makes it.) */
inline handoff(G) {
  hold_prio[W] = qprio[W];
  sliceover = 0;
  hot = (G == 2 -> me : NONE);
  hot_to = (G == 2 -> W : NONE);
  word = ID(W) | (qlen > 0 -> CONTENDED : 0);
  if
  :: timer == W ->
     is_timer[W] = 0;
     timer = (qlen > 0 -> q[0] : NONE);
     if
     :: timer != NONE ->
        is_timer[timer] = 1;
        ticked = 0;
#ifndef BUG_TIMERWAKE
        if
        :: timer != me -> park_bump(timer); wk_timer = timer
        :: else -> skip                          /* no need to wake oneself */
        fi
#else
        skip
#endif
     :: else -> skip     /* [unreached-ok] from hand_over: it queued itself */
     fi
  :: else -> skip
  fi;
  granted[W] = G;
  park_bump(W);
  wk_w = W;
  W = 0
}

/* wakes_run() in gvl_lock.c: the kicks handoff noted, made without mu.
 * The woken thread may have taken its grant meanwhile, and even be asleep
 * in a later wait: it wakes, finds nothing, and sleeps again. */
inline wakes_run() {
  atomic {
    if
    :: wk_w != NONE -> park_kick(wk_w); wk_w = NONE
    :: else -> skip   /* [unreached-ok] from hand_over: it always grants */
    fi
  };
  atomic {
    if
    :: wk_timer != NONE -> park_kick(wk_timer); wk_timer = NONE
    :: else -> skip
    fi
  }
}

/* take_back() in gvl_lock.c, with mu held, after the releaser's CAS of
 * granted[hot_to] 2 -> 0 succeeded: hot_to back at the head of the queue,
 * the word names the releaser again, its slice goes on (and ends here, see
 * the note on time above), the timer role goes to hot_to if
 * nobody has it, and a preempt flag set on hot_to as the owner moves to
 * the releaser. */
inline take_back() {
  i = qlen;
  do
  :: i > 0 -> q[i] = q[i - 1]; i--
  :: else -> break
  od;
  q[0] = hot_to;
  qlen++;
  word = ID(me) | CONTENDED;
  hold_prio[me] = BASEPRIO(me);
#ifndef BUG_HOTSLICE
  sliceover = 1;
#else
  sliceover = 0;
#endif
#ifndef BUG_HOTTIMER
  if
  :: timer == NONE ->
     timer = hot_to;
     ticked = 0;
     is_timer[hot_to] = 1;
     park_bump(hot_to); wk_timer = hot_to
  :: else ->
     /* To time the resumed slice, woken if it has looked and might sleep
      * past that slice's end (time is abstracted: either may hold); one
      * that has not looked yet will before it sleeps.  So the model checks
      * that no timer is left asleep without a deadline; that the deadline
      * is not past the slice's end is a matter of time, which it does not
      * have (test_retake's resumed_slice_timed checks that). */
     if
     :: ticked -> ticked = 0; park_bump(timer); wk_timer = timer
     :: skip
     fi
  fi;
#endif
  if                            /* moved only if someone outranks me */
  :: preempt[hot_to] ->
     preempt[hot_to] = 0;
     preempt[me] = ((qlen > 0 && qprio[q[0]] > BASEPRIO(me)) ||
                    (qlen > 1 && qprio[q[1]] > BASEPRIO(me)))
  :: else -> skip
  fi;
  hot = NONE;
  hot_to = NONE;
  i = 0
}

/* Queue slot i is empty or holds a waiter below priority p. */
#define BELOW(i, p) (q[i] == NONE -> 1 : qprio[q[i]] < (p))

/* Entering the hold: the ghost checks, and the dead-value resets that keep
 * the state space small (nobody reads granted or seq of a thread that is
 * not queued, and nobody bumps its seq). */
#ifndef BUG_SEQ
#define SEQ_AGAIN seq[me] = 0; s = 0
#else
#define SEQ_AGAIN skip
#endif

#define ENTER_HOLD \
  assert(incs == 0); \
  assert(OWNER(word) == me); \
  incs++; \
  waiting[me] = 0; \
  boosted = (hold_prio[me] || BASEPRIO(me))  /* gvl__boosted: charged */

active [N] proctype T()
{
  byte me = _pid;
  byte w, s, i, W;
  byte wk_timer = NONE, wk_w = NONE;   /* wakes noted by handoff */
  bit ok, boosted, it, timed, tout, region, myhot;
#ifdef HOOKS
  bit hooked;
#endif

  assert(me < N);

  /* ---- gvl__acquire: fast path ---- */
acquire:
  atomic {
    waiting[me] = 1;
    hold_prio[me] = BASEPRIO(me);
    if
    :: word == 0 -> word = ID(me); ENTER_HOLD; ok = 1
    :: else -> ok = 0
    fi
  };
  if
  :: ok -> ok = 0; goto hold
  :: else -> skip
  fi;

  /* ---- acquire_slow ---- */
  lock_mu();
  /* Set CONTENDED with one fetch_or: nobody can win the word from us now.
   * If it was free, take it (the queue is empty whenever word is 0). */
  d_step {
    mu == ID(me) ->
    w = word;
    word = word | CONTENDED
  };
  if
  :: w == 0 ->
     d_step {
       assert(qlen == 0);
       word = ID(me);
       ENTER_HOLD;
       unlock_mu()
     };
     goto hold
  :: else ->
     atomic {
       granted[me] = 0;
       if                         /* first waiter: the slice starts now */
       :: !(w & CONTENDED) -> sliceover = 0
       :: else -> skip
       fi;
       enqueue(me, hold_prio[me]);
       unlock_mu();
       w = 0
     };
     goto wait
  fi;

  /* ---- gvl__wait_granted_until ---- */
  /* Read seq, then check granted (and is_timer), then futex_wait(seq).
   * Waking up and reading seq again for the next round are one step: the
   * return from futex_wait is invisible to other threads. */
wait:
#ifndef BUG_SEQ
  atomic { seq[me] = 0; s = 0 };
#endif
wait_check:
  atomic {
    if
#ifndef BUG_HOTNOCAS
    :: granted[me] == 1 -> goto got
    :: granted[me] == 2 -> granted[me] = 1; goto got  /* took()'s CAS */
#else
    :: granted[me] != 0 -> goto took_late
#endif
    :: granted[me] == 0 -> it = is_timer[me]
    fi;
    if
    :: !it -> timed = 0; tout = 0
    :: else -> skip
    fi
  };
#ifdef BUG_SEQ
  d_step { seq[me] = 0; s = 0 };
#endif
  /* timer_tick: under mu, decide whether the holder is past its slice */
  if
  :: atomic { it -> LOCK_MU };
     atomic {
       mu == ID(me) ->
       if
       :: timer == me && !granted[me] ->
          timed = 1;
          ticked = 1;
          if
          :: true ->                               /* past the slice */
             /* someone the policy serves waits (past the slice, a
              * held-back boost counts too): ask whenever the holder's
              * flag is clear */
             sliceover = 1;
             if
#ifndef BUG_NOPREEMPT
             :: !preempt[OWNER(word)] -> preempt[OWNER(word)] = 1
#endif
             :: else -> skip
             fi
          :: !tout && !sliceover -> skip           /* not yet */
          :: !tout && !sliceover && !capx && OUTRANKED ->
             /* within the slice, once the cap allows boosts: a waiter
              * above the hold that the cap held back asks the holder
              * (gvl__pol_tick's held_back_tick), whenever its flag is
              * clear */
             if
             :: !preempt[OWNER(word)] -> preempt[OWNER(word)] = 1
             :: else -> skip
             fi
          fi
       :: else -> timed = 0
       fi;
       tout = 0;
       it = 0;
       unlock_mu()
     }
  :: else -> skip
  fi;
  /* gvl__park_wait(seq): sleep only if nobody bumped seq since it was read */
  d_step {
    if
    :: seq[me] == s -> asleep[me] = 1
    :: else -> skip
    fi;
    s = 0
  };
  if
  :: d_step { !asleep[me] -> timed = 0; SEQ_AGAIN }           /* woken */
  :: d_step { timed && asleep[me] ->                     /* timed out */
              asleep[me] = 0; tout = 1; timed = 0; SEQ_AGAIN }
  fi;
  goto wait_check;

#ifdef BUG_HOTNOCAS
took_late:
  granted[me] = 1;   /* a second step: take_back may have run in between */
#endif
got:
  atomic { granted[me] = 0; seq[me] = 0; ok = 0; tout = 0; ENTER_HOLD };

  /* ---- holding: safe points ---- */
  /* Checking the flag (or CONTENDED) and taking mu are one step: only this
   * thread clears either while it holds the GVL, so a later read would see
   * the same value. */
hold:
  do
  :: !preempt[me] -> skip                  /* gvl_check_ints: nothing pending */
  :: atomic { preempt[me] -> LOCK_MU; goto hand_over }  /* check_ints_slow */
  :: atomic { (word & CONTENDED) != 0 -> LOCK_MU; goto hand_over } /* yield */
  :: break                                 /* done: release                   */
  :: region = 1; break                     /* gvl_call_without                */
  od;

  /* ---- gvl__release ---- */
  /* A failed CAS and taking mu are one step, for the same reason. */
  atomic {
    incs--;
    if
    :: !boosted ->
#ifndef BUG_BARGE
       if
       :: word == ID(me) -> word = 0; region = 0; goto acquire
       :: else -> skip
       fi
#else
       assert(OWNER(word) == me);
       word = 0;
       goto acquire
#endif
    :: else -> skip
    fi;
    LOCK_MU
  };
  d_step {
    mu == ID(me) ->
    /* end_hold: a boosted hold is charged to the cap, which it may push
     * over (the window process lets time take it back down) */
    if
    :: boosted -> capx = 1
    :: else -> skip
    fi;
    preempt[me] = 0;
    if
    :: qlen > 0 ->
       take_best(0);
       if
       :: region && !sliceover && qprio[W] <= BASEPRIO(me) ->
          handoff(2);
          hot_boost = 0;
          myhot = 1
       :: !region && boosted && HOT_BOOST_SLICE && qprio[W] < hold_prio[me] ->
          handoff(2);
          hot_boost = 1;
          myhot = 1
       :: else -> handoff(1)
       fi
    :: else -> word = 0            /* a boosted hold with nobody waiting */
    fi;
    boosted = 0;
    region = 0;
    unlock_mu()
  };
  wakes_run();
  if
  :: myhot -> goto back
  :: else -> goto acquire
  fi;

  /* ---- acquire_slow's take-back, after a revocable release ---- */
back:
  atomic { waiting[me] = 1; myhot = 0; LOCK_MU };
  atomic {
    mu == ID(me) ->
    if
    :: hot == me && granted[hot_to] == 2 && !(BASEPRIO(me) && capx) &&
       (!hot_boost || (BASEPRIO(me) > qprio[hot_to] && BELOW(0, BASEPRIO(me)) &&
                       BELOW(1, BASEPRIO(me)) && BELOW(2, BASEPRIO(me)))) ->
       granted[hot_to] = 0;      /* the CAS 2 -> 0 */
       take_back();
       ENTER_HOLD;
       ok = 1
    :: hot == me ->              /* taken already, or refused: past the
                                    slice, or a boost over the cap */
       hot = NONE; hot_to = NONE
    :: else -> skip
    fi;
    unlock_mu()
  };
  if
  :: ok ->                      /* take_back's one wake, if any, made now */
     ok = 0;
     if
     :: wk_timer != NONE -> atomic { park_kick(wk_timer); wk_timer = NONE }
     :: else -> skip
     fi;
     goto hold
  :: else -> goto acquire
  fi;

  /* ---- hand_over (gvl_yield, preemption) ---- */
hand_over:
#ifdef HOOKS
  /* pick_for_yield with a hook: clear_preempt and a pick that finds a
   * waiter, then mu dropped for SUSPENDED and taken again, and the pick
   * made again.  Meanwhile waiters may queue and ask, and the timer may
   * tick: the holder's flag can be set again in the window. */
  if
  :: atomic {
       mu == ID(me) ->
       if
       :: qlen > 0 -> preempt[me] = 0; hooked = 1; unlock_mu()
       :: else -> skip   /* [unreached-ok] hand_over is entered with a waiter queued */
       fi
     };
     if
     :: hooked -> lock_mu()
     :: else -> skip
     fi
  :: skip
  fi;
#endif
  atomic {
    mu == ID(me) ->
#ifdef HOOKS
    if
    :: !hooked -> preempt[me] = 0
    :: else -> skip                        /* cleared before the window */
    fi;
    hooked = 0;
#else
    preempt[me] = 0;
#endif
    if                                     /* charge_hold, before the pick */
    :: boosted -> capx = 1
    :: else -> skip
    fi;
    if                                     /* time passes: the slice may */
    :: sliceover = 1                       /* have run out by now        */
    :: skip
    fi;
    take_best(!boosted && !sliceover);
    /* a yield or safe point of an unboosted holder never serves a waiter
     * the cap holds back within its slice */
    assert(W == NONE || ELIG(W) || boosted || sliceover);
    if
    :: W != NONE ->
#if defined(HOOKS) && !defined(BUG_HOOKFLAG)
       preempt[me] = 0;   /* a request made in the hook's window: the
                             handoff answers it (pick_for_yield) */
#endif
       /* queue behind W, at the lower of the two priorities */
       ok = (hold_prio[me] < qprio[W] -> hold_prio[me] : qprio[W]);
#ifdef IA_REQUEUE
       /* gvl__pol_requeue_prio: a holder preempted within a tenth of a
        * slice of an interactive region's end queues at the promotion's
        * level, never above W's.  Time is not modelled: any holder may. */
       if
       :: ok < qprio[W] -> ok = qprio[W]
       :: skip
       fi;
#endif
       incs--;
       waiting[me] = 1;
       boosted = 0;
       granted[me] = 0;
#ifndef BUG_YIELDFIRST
       enqueue(me, ok);
       ok = 0;
       handoff(1);
#else
       handoff(1);
       enqueue(me, ok);
       ok = 0;
#endif
       unlock_mu()
    :: else ->
       /* nobody, or only boosts the cap holds back: keep the GVL */
       unlock_mu();
       goto hold
    fi
  };
  wakes_run();
  goto wait
}

/* ---- invariants, checked in every reachable state ---- */
#define QUEUED(t)   (q[0] == (t) || q[1] == (t) || q[2] == (t))
#define TIMER_OK    (qlen == 0 -> timer == NONE : \
                     (timer != NONE && QUEUED(timer) && is_timer[timer]))
#define ONE_TIMER(t) (!is_timer[t] || timer == (t))
#define PREEMPT_OK(t) (!preempt[t] || OWNER(word) == (t))
#define GRANT_OK(t)  (!granted[t] || (OWNER(word) == (t) && !QUEUED(t)))
#define INV (incs <= 1 && \
             (qlen == 0 || (word & CONTENDED) != 0) && \
             PREEMPT_OK(0) && PREEMPT_OK(1) && PREEMPT_OK(2) && \
             GRANT_OK(0) && GRANT_OK(1) && GRANT_OK(2) && \
             (mu != 0 || (TIMER_OK && \
                          ONE_TIMER(0) && ONE_TIMER(1) && ONE_TIMER(2))))

active proctype monitor()
{
end:
  d_step { !(INV) -> assert(INV) }
}

/* The cap's sliding window: as time passes, boosted time leaves the
 * window, so an exceeded cap clears by itself unless boosted holds keep
 * it up.  Weak fairness makes this happen eventually. */
active proctype window()
{
end:
  do
  :: d_step { capx -> capx = 0 }
  od
}

/* ---- liveness, checked with weak fairness ---- */
#define QD(t) (q[0] == (t) || q[1] == (t) || q[2] == (t))

/* Every queued waiter is eventually served: once a thread is queued
 * nobody can barge past it (implied by `served`). */
ltl queued {
  [] (QD(0) -> <> !waiting[0]) &&
  [] (QD(1) -> <> !waiting[1]) &&
  [] (QD(2) -> <> !waiting[2])
}

/* Every acquire eventually succeeds: acquire_slow's one fetch_or cannot
 * lose to other threads' uncontended fast acquire/release pairs. */
ltl served {
  [] (waiting[0] -> <> !waiting[0]) &&
  [] (waiting[1] -> <> !waiting[1]) &&
  [] (waiting[2] -> <> !waiting[2])
}
