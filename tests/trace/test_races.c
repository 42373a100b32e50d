/* SPDX-License-Identifier: MIT */
/*
 * test_races.c -- the tracer against other threads, fork() and exit() in
 * the middle of a stop's write, and against runs that follow each other:
 *
 *   - a fork() while a stop writes adds nothing to the parent's file,
 *     shows the child the stopped trace's counters as they were, and
 *     leaves the child free to trace on its own;
 *   - a fork() while another thread's start waits in open() goes through;
 *   - gvl_trace_stop() and gvl_trace_start() called while another thread's
 *     stop writes wait for that write: the stop then says ESRCH, the start
 *     starts (neither says EALREADY of a trace that gvl_trace_active()
 *     calls stopped);
 *   - exit() while a GVL_TRACE_STOP_FULL self-stop or a gvl_destroy()
 *     writes on another thread leaves a complete file;
 *   - a STOP_FULL run's self-stop never stops a later run, nor keeps a
 *     later STOP_FULL run from stopping itself;
 *   - the counters of a stopped trace stay as the file has them, also with
 *     threads past max_threads recording all along;
 *   - threads that come and go over many runs do not grow the tracer's
 *     memory (buffer headers are reused).
 *
 * A stop is held in the middle of its write by a FIFO that the test reads
 * only when it is ready: the writer blocks with the pipe full.
 */
#include "gvl_trace_file.h"
#include "ttrace.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define FILL 20000           /* records of a blocked trace: ~800 KB */

static gvl_t *g;
static char dir[512];

/* ---- a raw file, read back through the FIFO ------------------------------ */

static unsigned char *slurp(int fd, size_t *len) {
  size_t cap = 1 << 20, n = 0;
  unsigned char *p = malloc(cap);
  CHECK(p != NULL);
  CHECK_OK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK));
  for (;;) {
    if (n == cap) CHECK((p = realloc(p, cap *= 2)) != NULL);
    ssize_t k = read(fd, p + n, cap - n);
    if (k < 0 && errno == EINTR) continue;
    CHECK(k >= 0);
    if (k == 0) break;
    n += (size_t)k;
  }
  *len = n;
  return p;
}

static uint32_t u32_at(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* The bytes are exactly one raw trace (gvl_trace_file.h): a header, its
 * threads, each of which offered an event, with their records (a CPU
 * only on GVL events), the string table, and nothing after it.  Returns
 * the number of records. */
static uint64_t check_raw(const unsigned char *p, size_t len) {
  uint64_t recs = 0;
  size_t at = sizeof(gvl__tf_head_t);
  gvl__tf_head_t h;
  CHECK_GE(len, at + 4);
  memcpy(&h, p, sizeof h);
  CHECK(!memcmp(h.magic, GVL__TF_MAGIC, sizeof h.magic));
  CHECK_LE(h.nthreads, GVL__TF_MAX_THREADS);
  for (uint32_t i = 0; i < h.nthreads; i++) {
    gvl__tf_thread_t th;
    CHECK_LE(at + sizeof th, len);
    memcpy(&th, p + at, sizeof th);
    CHECK_GE(th.offered, 1);
    at += sizeof th;
    CHECK_LE(at + (size_t)th.kept * sizeof(gvl__tf_rec_t), len);
    for (uint32_t k = 0; k < th.kept; k++, at += sizeof(gvl__tf_rec_t)) {
      gvl__tf_rec_t r;
      memcpy(&r, p + at, sizeof r);
      CHECK_GE(r.cpu, -1);
      if (r.kind >= GVL__TK_BEGIN) CHECK_EQ(r.cpu, -1);   /* a CPU only for GVL events */
    }
    recs += th.kept;
  }
  CHECK_LE(at + 4, len);
  uint32_t nstr = u32_at(p + at);
  at += 4;
  for (uint32_t i = 0; i < nstr; i++) {
    CHECK_LE(at + 4, len);
    at += 4 + (size_t)u32_at(p + at);
    CHECK_LE(at, len);
  }
  CHECK_EQ(at, len);
  return recs;
}

/* ---- a stop held in the middle of its write ------------------------------ */

typedef struct {
  char fifo[600];
  int rfd;
  pthread_t th;
  int rc;
} blocked_t;

static void *stopper(void *arg) {
  blocked_t *b = arg;
  b->rc = gvl_trace_stop(g);
  return NULL;
}

static void open_fifo(blocked_t *b, const char *name) {
  snprintf(b->fifo, sizeof b->fifo, "%s/%s.fifo", dir, name);
  (void)unlink(b->fifo);
  CHECK_OK(mkfifo(b->fifo, 0600));
  b->rfd = open(b->fifo, O_RDONLY | O_NONBLOCK);   /* so the writer's open returns */
  CHECK(b->rfd >= 0);
}

/* Wait until the pipe is full, to within a page (a write need not fill
 * the last one): its writer, with far more to write, can then go no
 * further without the reader. */
static void wait_full(int rfd) {
  int size = fcntl(rfd, F_GETPIPE_SZ), n = 0;
  CHECK_GT(size, 4096);
  while (!ioctl(rfd, FIONREAD, &n) && n < size - 4096) tgvl_sleep_us(1000);
}

/* g traced into a FIFO nobody reads yet, and a thread stopping it. */
static void block_a_stop(blocked_t *b, const char *name) {
  gvl_trace_config_t c = {FILL, 0, 0};
  open_fifo(b, name);
  CHECK_OK(gvl_trace_start(g, b->fifo, &c));
  for (int i = 0; i < FILL; i++) CHECK_OK(gvl_trace_instant(g, "race", "fill", (uint64_t)i));
  tgvl_spawn(&b->th, stopper, b);
  wait_full(b->rfd);
  CHECK_EQ(gvl_trace_active(g), 0);
}

/* Read the blocked stop's file to its end, check it, join the stopper. */
static void unblock(blocked_t *b) {
  size_t len;
  unsigned char *p = slurp(b->rfd, &len);
  CHECK_EQ(check_raw(p, len), FILL);
  free(p);
  tgvl_join(b->th);
  CHECK_OK(b->rc);
  close(b->rfd);
  (void)unlink(b->fifo);
}

/* A fork() while a stop writes: the child closes its copy of the file
 * without adding a byte to it (stdio would flush its buffered part), sees
 * the stopped trace's counters as they are, and may trace on its own; the
 * parent's file is whole. */
static void fork_while_writing(void) {
  blocked_t b;
  char mine[600];
  gvl_trace_stats_t before, child;
  block_a_stop(&b, "fork");
  CHECK_OK(gvl_trace_stats(g, &before));
  CHECK_EQ(before.recorded, FILL);
  snprintf(mine, sizeof mine, "%s/fork-child.gvlt", dir);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    /* Ends by exec, not exit: the parent's writer thread is not in the
     * child, and valgrind's leak check at exit would count its buffers. */
    int bad = 0;
    tgvl_watchdog(60);
    if (gvl_trace_active(g) || gvl_trace_stop(g) != ESRCH) bad = 1;
    else if (gvl_trace_stats(g, &child) || child.recorded != before.recorded ||
             child.lost != before.lost || child.threads != before.threads)
      bad = 4;
    else if (gvl_trace_start(g, mine, NULL)) bad = 2;
    else if (gvl_trace_instant(g, "race", "child", 1) || gvl_trace_stop(g)) bad = 3;
    if (bad) fprintf(stderr, "fork_while_writing: child check %d failed\n", bad);
    execl(bad ? "/bin/false" : "/bin/true", bad ? "false" : "true", (char *)NULL);
    _exit(127);
  }
  unblock(&b);                       /* EOF once both copies are closed */
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);
  struct stat sb;
  CHECK_OK(stat(mine, &sb));
  CHECK_GT(sb.st_size, 56);
}

typedef struct {
  int rc;
  atomic_int done;
  char path[600];
} call_t;

static void *late_stop(void *arg) {
  call_t *c = arg;
  c->rc = gvl_trace_stop(g);
  atomic_store(&c->done, 1);
  return NULL;
}

static void *late_start(void *arg) {
  call_t *c = arg;
  c->rc = gvl_trace_start(g, c->path, NULL);
  atomic_store(&c->done, 1);
  return NULL;
}

/* A stop and a start from other threads while a stop writes: both wait
 * for the write (the file is complete when either returns). */
static void calls_while_writing(void) {
  blocked_t b;
  pthread_t th;
  call_t c = {0};
  block_a_stop(&b, "stop2");
  tgvl_spawn(&th, late_stop, &c);
  tgvl_sleep_us(50000);
  CHECK_EQ(atomic_load(&c.done), 0);       /* still waiting for the write */
  unblock(&b);
  tgvl_join(th);
  CHECK_EQ(c.rc, ESRCH);

  memset(&c, 0, sizeof c);
  snprintf(c.path, sizeof c.path, "%s/after.gvlt", dir);
  block_a_stop(&b, "start2");
  tgvl_spawn(&th, late_start, &c);
  tgvl_sleep_us(50000);
  CHECK_EQ(atomic_load(&c.done), 0);
  CHECK_EQ(gvl_trace_active(g), 0);
  unblock(&b);
  tgvl_join(th);
  CHECK_OK(c.rc);                          /* not EALREADY */
  CHECK_EQ(gvl_trace_active(g), 1);
  CHECK_OK(gvl_trace_instant(g, "race", "after", 0));
  CHECK_OK(gvl_trace_stop(g));
}

/* A fork() while another thread's gvl_trace_start() waits in open() for a
 * FIFO's reader: the fork must not wait for the start (the reader could be
 * the child it makes). */
typedef struct {
  const char *path;
  atomic_int tid;
  int rc;
} opener_t;

static void *opener(void *arg) {
  opener_t *o = arg;
  atomic_store(&o->tid, (int)syscall(SYS_gettid));
  o->rc = gvl_trace_start(g, o->path, NULL);
  return NULL;
}

static void fork_during_open(void) {
  blocked_t b;
  opener_t o = {b.fifo, 0, -1};
  pthread_t th;
  int st;
  snprintf(b.fifo, sizeof b.fifo, "%s/open.fifo", dir);
  (void)unlink(b.fifo);
  CHECK_OK(mkfifo(b.fifo, 0600));
  tgvl_spawn(&th, opener, &o);
  while (!atomic_load(&o.tid)) sched_yield();
  while (tgvl_thread_state(atomic_load(&o.tid)) != 'S') tgvl_sleep_us(1000);
  tgvl_sleep_us(20000);                  /* asleep in open(), most likely */
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    execl("/bin/true", "true", (char *)NULL);
    _exit(127);
  }
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  b.rfd = open(b.fifo, O_RDONLY | O_NONBLOCK);   /* lets the start through */
  CHECK(b.rfd >= 0);
  tgvl_join(th);
  CHECK_OK(o.rc);
  CHECK_OK(gvl_trace_instant(g, "race", "opened", 0));
  CHECK_OK(gvl_trace_stop(g));
  size_t len;
  unsigned char *p = slurp(b.rfd, &len);
  CHECK_EQ(check_raw(p, len), 1);
  free(p);
  close(b.rfd);
  (void)unlink(b.fifo);
}

/* ---- exit() during another thread's write (a child process) ------------- */

static void *fill_up(void *arg) {
  for (int i = 0; i <= FILL; i++) (void)gvl_trace_instant(arg, "race", "full", (uint64_t)i);
  return NULL;
}

static void *fill_and_destroy(void *arg) {
  for (int i = 0; i < FILL; i++) (void)gvl_trace_instant(arg, "race", "d", (uint64_t)i);
  (void)gvl_destroy(arg);
  return NULL;
}

/* The child: a trace into the FIFO that a second thread fills and then
 * writes: by a GVL_TRACE_STOP_FULL self-stop ("full") or by gvl_destroy
 * ("destroy").  Main exits when told to on stdin: by then the parent has
 * seen the write blocked on the full pipe. */
static int exit_child(const char *mode, const char *fifo) {
  bool full = !strcmp(mode, "full");
  gvl_trace_config_t c = {FILL, 0, full ? GVL_TRACE_STOP_FULL : 0};
  pthread_t th;
  char go;
  gvl_t *x = gvl_create(NULL);
  if (!x || gvl_trace_start(x, fifo, &c)) return 1;
  if (pthread_create(&th, NULL, full ? fill_up : fill_and_destroy, x) ||
      pthread_detach(th))
    return 2;
  if (read(0, &go, 1) != 1) return 3;
  exit(0);
}

static const char *self_path;

static void exit_while_writing(const char *mode) {
  blocked_t b;
  int in[2], st;
  pid_t pid;
  posix_spawn_file_actions_t fa;
  open_fifo(&b, mode);
  CHECK_OK(pipe(in));
  CHECK_OK(posix_spawn_file_actions_init(&fa));
  CHECK_OK(posix_spawn_file_actions_adddup2(&fa, in[0], 0));
  CHECK_OK(posix_spawn_file_actions_addclose(&fa, in[1]));
  char *const argv[] = {(char *)self_path, "--exit-child", (char *)mode, b.fifo, NULL};
  CHECK_OK(posix_spawn(&pid, self_path, &fa, NULL, argv, environ));
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  wait_full(b.rfd);                      /* the child's writer is blocked */
  CHECK_EQ(write(in[1], "x", 1), 1);     /* now exit() */
  close(in[1]);
  tgvl_sleep_us(100000);                 /* time for an exit that does not wait */
  size_t len;
  unsigned char *p = slurp(b.rfd, &len);
  CHECK_EQ(check_raw(p, len), FILL);
  free(p);
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);
  close(b.rfd);
  (void)unlink(b.fifo);
}

/* ---- runs that follow each other ----------------------------------------- */

static atomic_int quit;

static void *recorder(void *arg) {
  (void)arg;
  while (!atomic_load(&quit)) (void)gvl_trace_instant(g, "race", "r", 0);
  return NULL;
}

static void start_recorders(pthread_t *th, int n) {
  atomic_store(&quit, 0);
  for (int i = 0; i < n; i++) tgvl_spawn(&th[i], recorder, NULL);
}

static void stop_recorders(pthread_t *th, int n) {
  atomic_store(&quit, 1);
  for (int i = 0; i < n; i++) tgvl_join(th[i]);
}

/* A STOP_FULL run (one event a buffer: every recorder fills it at once)
 * followed by a plain run: only gvl_trace_stop() stops the plain one; and
 * by another STOP_FULL run, which must still stop itself (a late claim of
 * the first must not take the second's). */
static void self_stop_stays_in_its_run(int runs) {
  char full[600], plain[600];
  gvl_trace_config_t cf = {1, 0, GVL_TRACE_STOP_FULL}, cp = {0, 0, 0};
  pthread_t th[4];
  snprintf(full, sizeof full, "%s/selfstop-full.gvlt", dir);
  snprintf(plain, sizeof plain, "%s/selfstop-plain.gvlt", dir);
  start_recorders(th, 4);
  for (int k = 0; k < runs; k++) {
    CHECK_OK(gvl_trace_start(g, full, &cf));
    int rc = gvl_trace_stop(g);               /* ESRCH if it stopped itself */
    CHECK(rc == 0 || rc == ESRCH);
    if (k % 2) {
      CHECK_OK(gvl_trace_start(g, plain, &cp));
      CHECK_OK(gvl_trace_stop(g));
    } else {
      CHECK_OK(gvl_trace_start(g, full, &cf));
      while (gvl_trace_active(g)) sched_yield();   /* the watchdog bounds it */
      CHECK_EQ(gvl_trace_stop(g), ESRCH);
    }
  }
  stop_recorders(th, 4);
}

/* max_threads 1, taken by the first thread to record: the others are
 * past it and count lost events all along.  After each stop the counters must not move
 * and must match the file's. */
static void counters_after_stop(int runs) {
  char path[600];
  gvl_trace_config_t c = {4, 1, 0};
  pthread_t th[4];
  snprintf(path, sizeof path, "%s/nobuf.gvlt", dir);
  start_recorders(th, 4);
  for (int k = 0; k < runs; k++) {
    gvl_trace_stats_t a, b;
    CHECK_OK(gvl_trace_start(g, path, &c));
    CHECK_OK(gvl_trace_instant(g, "race", "mine", 0));
    CHECK_OK(gvl_trace_stop(g));
    CHECK_OK(gvl_trace_stats(g, &a));
    sched_yield();
    CHECK_OK(gvl_trace_stats(g, &b));
    CHECK_EQ(a.lost, b.lost);
    FILE *f = fopen(path, "rb");
    gvl__tf_head_t h;
    gvl__tf_thread_t one = {0};
    CHECK(f != NULL);
    CHECK_EQ(fread(&h, 1, sizeof h, f), sizeof h);
    /* The one buffer's thread; none when the thread that took it lost its
     * first event to the stop (stop_at_first_event). */
    CHECK_LE(h.nthreads, 1);
    if (h.nthreads) CHECK_EQ(fread(&one, 1, sizeof one, f), sizeof one);
    fclose(f);
    CHECK_EQ(a.threads, h.nthreads);
    CHECK_EQ(a.recorded, one.kept);
    CHECK_EQ(a.lost, h.lost_nobuf + one.offered - one.kept);
  }
  stop_recorders(th, 4);
}

/* A stop right after the start, while four threads record: a thread whose
 * first event of the run set up its buffer as the stop came, and lost the
 * event to it, has recorded nothing, and neither the file nor the counters
 * may count it among the threads that recorded. */
static void stop_at_first_event(int runs) {
  char path[600];
  gvl_trace_config_t c = {64, 0, 0};
  pthread_t th[4];
  snprintf(path, sizeof path, "%s/first.gvlt", dir);
  start_recorders(th, 4);
  for (int k = 0; k < runs; k++) {
    gvl_trace_stats_t st;
    CHECK_OK(gvl_trace_start(g, path, &c));
    CHECK_OK(gvl_trace_stop(g));
    CHECK_OK(gvl_trace_stats(g, &st));
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    size_t len;
    unsigned char *p = slurp(fd, &len);
    close(fd);
    CHECK_EQ(check_raw(p, len), st.recorded);   /* each thread offered one */
    gvl__tf_head_t h;
    memcpy(&h, p, sizeof h);
    CHECK_EQ(h.nthreads, st.threads);
    free(p);
  }
  stop_recorders(th, 4);
}

static void *one_event(void *arg) {
  CHECK_OK(gvl_trace_instant(arg, "race", "once", 0));
  return NULL;
}

/* New threads in every run (4 a run, max_threads 4): the headers of a
 * run's ended threads serve the next run's, so the heap stays flat. */
static void headers_reused(void) {
  char path[600];
  gvl_trace_config_t c = {1, 4, 0};
  gvl_trace_stats_t st;
  size_t before = 0;
  gvl_t *x = gvl_create(NULL);
  CHECK(x != NULL);
  snprintf(path, sizeof path, "%s/churn.gvlt", dir);
  for (int run = 0; run < 400; run++) {
    if (run == 20) before = mallinfo2().uordblks;
    CHECK_OK(gvl_trace_start(x, path, &c));
    for (int i = 0; i < 4; i++) {
      pthread_t th;
      tgvl_spawn(&th, one_event, x);
      tgvl_join(th);
    }
    CHECK_OK(gvl_trace_stats(x, &st));
    CHECK_EQ(st.threads, 4);
    CHECK_EQ(st.recorded, 4);
    CHECK_OK(gvl_trace_stop(x));
  }
  size_t after = mallinfo2().uordblks;
  /* 380 runs of 4 new threads each kept ~70 KB of headers before. */
  CHECK_LT(after, before + 8192);
  CHECK_OK(gvl_destroy(x));
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--exit-child")) return exit_child(argv[2], argv[3]);
  ttrace_env_t e = ttrace_args(argc, argv);
  self_path = argv[0];
  snprintf(dir, sizeof dir, "%s", e.dir);
  tgvl_watchdog(300);
  /* The stress rounds: more with TTRACE_RACE_RUNS (to watch a race fail). */
  const char *env = getenv("TTRACE_RACE_RUNS");
  int runs = env ? atoi(env) : 1500 / tgvl_slow();
  g = gvl_create(NULL);
  CHECK(g != NULL);
  fork_while_writing();
  calls_while_writing();
  exit_while_writing("full");
  exit_while_writing("destroy");
  fork_during_open();
  self_stop_stays_in_its_run(runs);
  counters_after_stop(runs);
  stop_at_first_event(runs);
  CHECK_OK(gvl_destroy(g));
  headers_reused();
  return 0;
}
