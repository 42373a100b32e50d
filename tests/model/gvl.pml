/*
 * gvl.pml -- a SPIN model of the GVL handoff protocol (gvl_api/src).
 *
 * Three threads share one GVL.  Threads 0 and 1 run at normal priority,
 * thread 2 is boosted.  Each thread loops forever:
 *
 *     acquire (fast CAS, else the slow path under the internal mutex)
 *     critical section: any number of safe points, each of which may find
 *       the preempt flag set (gvl_check_ints slow path) or call gvl_yield
 *     release (fast CAS, else a direct handoff to the best waiter)
 *
 * The lock word, the wait queue, the per-thread preempt flag, granted flag
 * and futex sequence word, and the timer role are modelled one memory
 * access per step wherever another thread can observe the difference.
 * Steps that only touch state guarded by the internal mutex are grouped.
 *
 * What is checked (tests/model/check.sh runs it):
 *   - mutual exclusion: assertions on entry to the critical section and a
 *     monitor process that watches the invariants continuously;
 *   - the lock word and the queue agree: a non-empty queue implies the
 *     CONTENDED bit, so word == 0 implies an empty queue;
 *   - no deadlock: invalid end states (every thread blocked);
 *   - every waiter is eventually served, lost wake-ups included: the LTL
 *     properties wait0..wait2, [] (waiting[i] -> <> !waiting[i]), under
 *     weak fairness.
 *
 * Time is abstracted away: the timer's timed wait may time out at any
 * moment, and a holder counts as past its slice whenever it does.  Aging
 * and the boost cap are not modelled (both are time-based); with one
 * boosted thread, direct handoff alone must serve everyone, which is what
 * the liveness properties check.
 *
 * Broken variants (each must make SPIN report an error, see check.sh):
 *   -DBUG_BARGE      fast release clears the word even when CONTENDED is set
 *                    (the releaser ignores the queue: barging, lost waiters)
 *   -DBUG_SEQ        a waiter reads its futex sequence word after checking
 *                    `granted` instead of before (classic lost wake-up)
 *   -DBUG_TIMERWAKE  the timer role passes to another waiter without waking
 *                    it, so it keeps sleeping without a timeout and a holder
 *                    that never releases is never preempted
 *   -DBUG_NOPREEMPT  the timer times out but never sets the holder's flag
 */

#define N        3
#define CONTENDED 4         /* lock word bit; owner id is in bits 0..1    */
#define NONE     3          /* no thread (queue slot, timer role)          */
#define OWNER(w) (((w) & 3) - 1)
#define ID(t)    ((t) + 1)  /* owner id stored in the word: 0 means free   */
#define BASEPRIO(t) ((t) == 2 -> 1 : 0)

byte word;                  /* the lock word                               */
byte mu;                    /* internal mutex: 0 free, else ID(holder)     */
byte q[N] = NONE;           /* wait queue, best first (guarded by mu)      */
byte qlen;                  /* (guarded by mu)                             */
byte timer = NONE;          /* the waiter that sleeps with a timeout       */
bit  eprio[N];              /* effective priority of the current request   */
bit  preempt[N];            /* GVL__INT_PREEMPT in the thread's ints word  */
bit  granted[N];            /* set by the thread that hands the GVL over   */
byte seq[N];                /* futex word, bumped on every wake (mod 4)    */
bit  asleep[N];             /* blocked in futex_wait                       */

/* ghost state, for the properties only */
byte incs;                  /* threads inside the critical section         */
bit  waiting[N];            /* wants the GVL and does not have it yet      */

inline lock_mu()   { d_step { mu == 0 -> mu = ID(me) } }
inline unlock_mu() { d_step { assert(mu == ID(me)); mu = 0 } }

/* compare-and-swap on the lock word */
inline cas(old, new, ok) {
  d_step { if :: word == old -> word = new; ok = 1 :: else -> ok = 0 fi }
}

/* Insert x behind every waiter of equal or higher effective priority
 * (priority order, FIFO within a priority).  Called with mu held. */
inline enqueue(x) {
  i = qlen;
  do
  :: i > 0 ->
     if
     :: eprio[q[i - 1]] < eprio[x] -> q[i] = q[i - 1]; i--
     :: else -> break
     fi
  :: else -> break
  od;
  q[i] = x;
  qlen++;
  i = 0
}

/* Remove the best waiter into W.  Called with mu held, qlen > 0. */
inline pop(W) {
  W = q[0]; q[0] = q[1]; q[1] = q[2]; q[2] = NONE; qlen--
}

/* W has just left the queue.  If it held the timer role (or nobody does),
 * give the role to the new head of the queue and wake it so that it goes
 * back to sleep with a timeout.  Called with mu held; the wake itself is
 * done after mu is released (tw). */
inline fix_timer(W) {
  if
  :: timer == W || timer == NONE ->
     if
     :: qlen > 0 ->
        timer = q[0];
        if
        :: timer != me ->
#ifndef BUG_TIMERWAKE
           tw = timer;
           seq[tw] = (seq[tw] + 1) % 4
#else
           skip
#endif
        :: else -> skip
        fi
     :: else -> timer = NONE
     fi
  :: else -> skip
  fi
}

/* futex_wake after mu is released: the grantee, then the new timer */
inline wake_after_handoff() {
  asleep[W] = 0;
  if
  :: tw != NONE -> asleep[tw] = 0; tw = NONE
  :: else -> skip
  fi;
  W = 0
}

active [N] proctype T()
{
  byte me = _pid;
  byte w, s, i;
  byte W;
  byte tw = NONE;
  bit ok, timed;

  assert(me < N);

idle:
  atomic { waiting[me] = 1; eprio[me] = BASEPRIO(me) }

  /* ---- fast acquire: CAS 0 -> me ---- */
  cas(0, ID(me), ok);
  if
  :: ok -> ok = 0; goto acquired
  :: else -> skip
  fi;

  /* ---- slow acquire ---- */
  lock_mu();
slow:
  w = word;
  if
  :: w == 0 ->
     cas(0, ID(me), ok);
     if
     :: ok ->
        /* the queue is empty whenever the word is 0 */
        d_step { assert(qlen == 0); ok = 0 };
        unlock_mu();
        goto acquired
     :: else -> goto slow
     fi
  :: else ->
     cas(w, w | CONTENDED, ok);
     if
     :: ok ->
        d_step {
          enqueue(me);
          /* a boosted waiter asks the holder to give way at once */
          if
          :: eprio[me] > eprio[OWNER(w)] -> preempt[OWNER(w)] = 1
          :: else -> skip
          fi;
          if
          :: timer == NONE -> timer = me
          :: else -> skip
          fi;
          ok = 0; w = 0
        };
        unlock_mu();
        goto wait
     :: else -> goto slow
     fi
  fi;

  /* ---- sleep until granted ---- */
wait:
#ifndef BUG_SEQ
  s = seq[me];
  if
  :: granted[me] -> s = 0; goto got
  :: else -> skip
  fi;
#else
  if
  :: granted[me] -> goto got
  :: else -> skip
  fi;
  s = seq[me];
#endif
  timed = (timer == me);
  /* futex_wait(&seq, s): returns at once if seq changed */
  d_step {
    if
    :: seq[me] == s -> asleep[me] = 1
    :: else -> skip
    fi;
    s = 0
  };
  if
  :: !asleep[me] -> skip                         /* woken, or never slept */
  :: d_step { timed && asleep[me] -> asleep[me] = 0 } ->
     /* timed out: the holder is past its slice */
     lock_mu();
#ifndef BUG_NOPREEMPT
     d_step {
       if
       :: !granted[me] && (word & 3) != 0 -> preempt[OWNER(word)] = 1
       :: else -> skip
       fi
     };
#endif
     unlock_mu()
  fi;
  timed = 0;
  goto wait;

got:
  /* Nobody bumps seq[me] until this thread queues again, so only its
   * changes matter, not its value: reset it to keep the state space small
   * (the real word is a free-running 32-bit counter). */
  atomic { granted[me] = 0; seq[me] = 0 };

acquired:
  atomic {
    assert(incs == 0);
    assert(OWNER(word) == me);
    incs++;
    waiting[me] = 0
  };

  /* ---- critical section: safe points ---- */
cs:
  do
  :: !preempt[me] -> skip              /* gvl_check_ints, nothing pending */
  :: preempt[me] -> goto yield         /* gvl_check_ints slow path        */
  :: (word & CONTENDED) != 0 -> goto yield   /* gvl_yield with a waiter   */
  :: break
  od;

  /* ---- release ---- */
  incs--;
#ifdef BUG_BARGE
  d_step { assert(OWNER(word) == me); word = 0 };
  goto idle;
#endif
  cas(ID(me), 0, ok);
  if
  :: ok -> ok = 0; goto idle
  :: else -> skip
  fi;
  lock_mu();
  if
  :: qlen > 0 ->
     d_step {
       pop(W);
       word = ID(W) | (qlen > 0 -> CONTENDED : 0)
     };
     granted[W] = 1;
     seq[W] = (seq[W] + 1) % 4;
     d_step { fix_timer(W) };
     unlock_mu();
     wake_after_handoff()
  :: else ->
     word = 0;
     unlock_mu()
  fi;
  goto idle;

  /* ---- yield / preemption at a safe point ---- */
yield:
  lock_mu();
  if
  :: qlen > 0 ->
     d_step {
       preempt[me] = 0;
       pop(W);
       /* queue behind W */
       if
       :: eprio[W] < eprio[me] -> eprio[me] = eprio[W]
       :: else -> skip
       fi;
       enqueue(me)
     };
     d_step {
       incs--;
       waiting[me] = 1;
       word = ID(W) | CONTENDED
     };
     granted[W] = 1;
     seq[W] = (seq[W] + 1) % 4;
     d_step { fix_timer(W) };
     unlock_mu();
     wake_after_handoff();
     goto wait
  :: else ->
     preempt[me] = 0;
     unlock_mu();
     goto cs
  fi
}

/* Invariants, checked in every reachable state. */
#define TIMER_QUEUED (timer != NONE && \
                      (timer == q[0] || timer == q[1] || timer == q[2]))
#define INV (incs <= 1 && \
             (qlen == 0 || (word & CONTENDED) != 0) && \
             (mu != 0 || qlen == 0 || TIMER_QUEUED))

active proctype monitor()
{
end:
  d_step { !(INV) -> assert(INV) }
}

/* Every waiter is eventually served (checked under weak fairness). */
ltl wait0 { [] (waiting[0] -> <> !waiting[0]) }
ltl wait1 { [] (waiting[1] -> <> !waiting[1]) }
ltl wait2 { [] (waiting[2] -> <> !waiting[2]) }
