/* SPDX-License-Identifier: MIT */
/*
 * test_api.c -- argument checks, error codes, start/stop cycles, spans of
 * other layers, GVLOOP_TRACE, a trace written by gvl_destroy(), errno
 * through gvl_create() and gvl_destroy() with GVLOOP_TRACE, and
 * gvl_thread_set_name().
 */
#include "ttrace.h"

#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TTRACE_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TTRACE_SANITIZED 1
#endif

static void bad_input(const ttrace_env_t *e, gvl_t *g) {
  char path[512];
  gvl_trace_config_t big = {(1u << 24) + 1, 0, 0}, many = {0, 5000, 0},
                     flags = {0, 0, 0x80};
  gvl_trace_stats_t st;
  ttrace_path(e, "bad", path, sizeof path);
  CHECK_EQ(gvl_trace_start(NULL, path, NULL), EINVAL);
  CHECK_EQ(gvl_trace_start(g, NULL, NULL), EINVAL);
  CHECK_EQ(gvl_trace_start(g, "", NULL), EINVAL);
  CHECK_EQ(gvl_trace_start(g, path, &big), EINVAL);
  CHECK_EQ(gvl_trace_start(g, path, &many), EINVAL);
  CHECK_EQ(gvl_trace_start(g, path, &flags), EINVAL);
  CHECK_EQ(gvl_trace_start(g, "/nonexistent-dir/x/trace.json", NULL), ENOENT);
  CHECK_EQ(gvl_trace_active(g), 0);
  CHECK_EQ(gvl_trace_active(NULL), 0);
  CHECK_EQ(gvl_trace_stop(NULL), EINVAL);
  CHECK_EQ(gvl_trace_stop(g), ESRCH);
  CHECK_EQ(gvl_trace_stats(NULL, &st), EINVAL);
  CHECK_EQ(gvl_trace_stats(g, NULL), EINVAL);
  CHECK_EQ(gvl_trace_set_thread_name(NULL), EINVAL);
  CHECK_EQ(gvl_trace_begin(NULL, "c", "n"), EINVAL);
  CHECK_EQ(gvl_trace_begin(g, NULL, "n"), EINVAL);
  CHECK_EQ(gvl_trace_begin(g, "c", NULL), EINVAL);
  CHECK_EQ(gvl_trace_end(NULL, "c", NULL), EINVAL);
  CHECK_EQ(gvl_trace_end(g, NULL, NULL), EINVAL);
  CHECK_EQ(gvl_trace_instant(g, "c", NULL, 0), EINVAL);
  CHECK_EQ(gvl_trace_instant(NULL, "c", "n", 0), EINVAL);
  CHECK_EQ(gvl_trace_counter(g, NULL, 0), EINVAL);
  CHECK_EQ(gvl_trace_counter(NULL, "n", 0), EINVAL);
  CHECK_EQ(gvl_trace_span(g, "c", "n", 10, 9), EINVAL);
  CHECK_EQ(gvl_trace_span(g, "c", "n", 0, 9), EINVAL);
  CHECK_EQ(gvl_trace_span(g, NULL, "n", 1, 9), EINVAL);
  CHECK_EQ(gvl_trace_span(NULL, "c", "n", 1, 9), EINVAL);
  /* Off: the calls succeed and record nothing. */
  CHECK_OK(gvl_trace_begin(g, "c", "n"));
  CHECK_OK(gvl_trace_end(g, "c", "n"));
  CHECK_OK(gvl_trace_instant(g, "c", "n", 1));
  CHECK_OK(gvl_trace_counter(g, "n", 1));
  CHECK_OK(gvl_trace_stats(g, &st));
  CHECK_EQ(st.recorded, 0);
  CHECK_EQ(st.threads, 0);
}

/* Two runs on one GVL: each file holds only its own run. */
static void cycles(const ttrace_env_t *e, gvl_t *g) {
  char p1[512], p2[512];
  gvl_trace_stats_t st;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  ttrace_path(e, "run1", p1, sizeof p1);
  ttrace_path(e, "run2", p2, sizeof p2);
  CHECK_OK(gvl_trace_set_thread_name("main \"quoted\"\n"));
  CHECK_OK(gvl_trace_start(g, p1, NULL));
  CHECK_EQ(gvl_trace_start(g, p2, NULL), EALREADY);
  CHECK_OK(gvl_acquire(t));
  uint64_t arrived = gvl_now_ns();
  CHECK_OK(gvl_trace_begin(g, "evloop", "dispatch"));
  CHECK_OK(gvl_trace_begin(g, "host", "callback"));
  CHECK_OK(gvl_trace_counter(g, "queue", 3));
  CHECK_OK(gvl_trace_end(g, "host", "callback"));
  CHECK_OK(gvl_trace_end(g, "evloop", "dispatch"));
  CHECK_OK(gvl_trace_span(g, "evloop", "queued", arrived, gvl_now_ns()));
  CHECK_OK(gvl_trace_end(g, "evloop", "extra"));   /* nothing open: dropped */
  CHECK_OK(gvl_trace_begin(g, "evloop", "left open"));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_trace_stop(g));
  CHECK_EQ(gvl_trace_stop(g), ESRCH);
  TTRACE_CHECK(e, p1, "--holds", "1", "--unmatched", "1", "--lost", "0",
               "--has", "callback@main \"quoted\"\n", "--has", "queue@main \"quoted\"\n",
               "--has", "queued@main \"quoted\"\n");

  /* 30 ASCII bytes then a 3-byte character: the kept 31 bytes end inside
   * it, and a non-UTF-8 category; the file must still be valid JSON. */
  CHECK_OK(gvl_trace_set_thread_name("abcdefghijklmnopqrstuvwxyz0123\xe2\x82\xac"));
  CHECK_OK(gvl_trace_start(g, p2, NULL));
  CHECK_OK(gvl_trace_instant(g, "bad\xff\xfe", "x", 0));
  CHECK_OK(gvl_trace_stop(g));
  TTRACE_CHECK(e, p2, "--holds", "0");

  CHECK_OK(gvl_trace_set_thread_name("second"));
  CHECK_OK(gvl_trace_start(g, p2, NULL));
  for (int i = 0; i < 3; i++) {
    CHECK_OK(gvl_acquire(t));
    CHECK_OK(gvl_release(t));
  }
  CHECK_OK(gvl_trace_stats(g, &st));
  CHECK_EQ(st.recorded, 6);
  CHECK_OK(gvl_trace_stop(g));
  TTRACE_CHECK(e, p2, "--holders", "second,second,second", "--unmatched", "0");
  CHECK_OK(gvl_thread_detach(t));
}

static void *noop(void *arg) { return arg; }

static void *rename_other(void *arg) {
  CHECK_EQ(gvl_thread_set_name(arg, "x"), EPERM);   /* not its handle */
  return NULL;
}

/* gvl_thread_set_name: its errors, and the name on the thread's tracks,
 * also when set while the trace runs. */
static void named(const ttrace_env_t *e) {
  char path[512], name[40];
  pthread_t th;
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  memset(name, 'n', 32);
  name[32] = '\0';
  CHECK_EQ(gvl_thread_set_name(NULL, "x"), EINVAL);
  CHECK_EQ(gvl_thread_set_name(t, NULL), EINVAL);
  CHECK_EQ(gvl_thread_set_name(t, ""), EINVAL);
  CHECK_EQ(gvl_thread_set_name(t, name), ERANGE);
  name[31] = '\0';
  CHECK_OK(gvl_thread_set_name(t, name));           /* 31 bytes: kept */
  tgvl_spawn(&th, rename_other, t);
  tgvl_join(th);
  ttrace_path(e, "named", path, sizeof path);
  CHECK_OK(gvl_trace_start(g, path, NULL));
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_set_name(t, "interp 1"));
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_trace_stop(g));
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(gvl_destroy(g));
  TTRACE_CHECK(e, path, "--holders", "interp 1,interp 1");
}

/* gvl_destroy() writes a trace that is still running. */
static void destroy_writes(const ttrace_env_t *e) {
  char path[512];
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  ttrace_path(e, "destroy", path, sizeof path);
  CHECK_OK(gvl_trace_start(g, path, NULL));
  CHECK(gvl_call_with(g, 0, noop, g) == g);     /* one hold, foreign */
  CHECK_OK(gvl_destroy(g));
  TTRACE_CHECK(e, path, "--holds", "1");
}

/* A raw trace under a .json name (GVLOOP_TRACE=trace.json): gvl-trace
 * with only that name replaces the file with its JSON. */
static void json_named(const ttrace_env_t *e) {
  char path[512];
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  snprintf(path, sizeof path, "%s/inplace.json", e->dir);
  CHECK_OK(gvl_trace_start(g, path, NULL));
  CHECK(gvl_call_with(g, 0, noop, g) == g);
  CHECK_OK(gvl_destroy(g));
  const char *argv[] = {e->conv, path, NULL};
  CHECK_EQ(ttrace_run(argv), 0);
  TTRACE_CHECK(e, path, "--holds", "1");
}

/* GVLOOP_TRACE: the first GVL writes to the path, the second to
 * path.<n>.gvlt. */
static void from_env(const ttrace_env_t *e) {
  char path[512], pattern[600];
  ttrace_path(e, "env", path, sizeof path);
  CHECK_OK(setenv("GVLOOP_TRACE", path, 1));
  gvl_t *g1 = gvl_create(NULL), *g2 = gvl_create(NULL);
  CHECK(g1 && g2);
  CHECK_OK(unsetenv("GVLOOP_TRACE"));
  CHECK_EQ(gvl_trace_active(g1), 1);
  CHECK_EQ(gvl_trace_active(g2), 1);
  gvl_thread_t *t = gvl_thread_attach(g2, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(gvl_destroy(g1));
  CHECK_OK(gvl_destroy(g2));
  TTRACE_CHECK(e, path, "--holds", "0");
  /* The second file: find it by listing env.*.gvlt. */
  snprintf(pattern, sizeof pattern, "%s/env.", e->dir);
  FILE *p;
  char cmd[700], second[600] = "";
  snprintf(cmd, sizeof cmd, "ls %s*.gvlt", pattern);
  CHECK((p = popen(cmd, "r")) != NULL);
  CHECK(fgets(second, sizeof second, p) != NULL);
  pclose(p);
  second[strcspn(second, "\n")] = '\0';
  TTRACE_CHECK(e, second, "--holds", "1");
  CHECK_OK(unlink(second));
}

/* Remove the files a glob pattern names (an earlier run's), if any. */
static void unlink_matching(const char *pattern) {
  glob_t gl;
  if (glob(pattern, 0, NULL, &gl) != 0) return;
  for (size_t i = 0; i < gl.gl_pathc; i++) (void)unlink(gl.gl_pathv[i]);
  globfree(&gl);
}

/* GVLOOP_TRACE in a forked child: the child's GVLs, numbered on from its
 * parent's, write files of their own (with the child's process id), which
 * the parent's next GVLs, numbered the same, leave alone. */
static void from_env_forked(const ttrace_env_t *e) {
  char path[512], pattern[600];
  glob_t gl;
  int st;
  ttrace_path(e, "envfork", path, sizeof path);
  snprintf(pattern, sizeof pattern, "%s/envfork.*.gvlt", e->dir);
  unlink_matching(pattern);
  CHECK_OK(setenv("GVLOOP_TRACE", path, 1));
  gvl_t *g1 = gvl_create(NULL);
  CHECK(g1 != NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    tgvl_watchdog(30);
    gvl_t *c = gvl_create(NULL);
    gvl_thread_t *t = c ? gvl_thread_attach(c, 0) : NULL;
    if (!t || gvl_acquire(t) || gvl_release(t) || gvl_thread_detach(t) ||
        gvl_destroy(c))
      _exit(1);
    _exit(0);
  }
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);
  gvl_t *g2 = gvl_create(NULL);
  CHECK(g2 != NULL);
  CHECK_OK(unsetenv("GVLOOP_TRACE"));
  gvl_thread_t *t = gvl_thread_attach(g2, 0);
  CHECK(t != NULL);
  for (int i = 0; i < 2; i++) {
    CHECK_OK(gvl_acquire(t));
    CHECK_OK(gvl_release(t));
  }
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(gvl_destroy(g2));
  CHECK_OK(gvl_destroy(g1));
  /* The child's file names its process id; with the parent's two, three
   * files. */
  snprintf(pattern, sizeof pattern, "%s/envfork.*%ld.gvlt", e->dir, (long)pid);
  CHECK_OK(glob(pattern, 0, NULL, &gl));
  CHECK_EQ(gl.gl_pathc, 1);
  TTRACE_CHECK(e, gl.gl_pathv[0], "--holds", "1");
  globfree(&gl);
  snprintf(pattern, sizeof pattern, "%s/envfork*.gvlt", e->dir);
  CHECK_OK(glob(pattern, 0, NULL, &gl));
  CHECK_EQ(gl.gl_pathc, 3);
  for (size_t i = 0; i < gl.gl_pathc; i++) CHECK_OK(unlink(gl.gl_pathv[i]));
  globfree(&gl);
}

/* A file another trace is writing: gvl_trace_start fails with EBUSY and
 * leaves it alone (also for a second GVL of this process); the file is
 * free again once that trace stopped.  A child process started with
 * GVLOOP_TRACE naming that file (as an exec'd child inherits it) traces
 * beside it, to busy.<its pid>.gvlt.  Uses self_path: after main set it. */
static const char *self_path;      /* argv[0]: ctest passes a full path */
static int exit_child(void);

/* Run this program afresh as `self_path flag` with env its only
 * environment entry; it must exit 0.  Returns its pid. */
static pid_t run_self(const char *flag, const char *env) {
  int st;
  pid_t pid;
  char *const argv[] = {(char *)self_path, (char *)flag, NULL};
  char *const envp[] = {(char *)env, NULL};
  CHECK_OK(posix_spawn(&pid, self_path, NULL, NULL, argv, envp));
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);
  return pid;
}

/* --exit-child with GVLOOP_TRACE=path. */
static pid_t run_exit_child(const char *path) {
  char env[600];
  snprintf(env, sizeof env, "GVLOOP_TRACE=%s", path);
  return run_self("--exit-child", env);
}

/* A GVL made from GVLOOP_TRACE in a constructor that runs before
 * libgvl's own (priority 101; with libgvl.a they are one program's): its
 * file is the path as given, with no process id inserted as for a forked
 * child.  Run in a child (--ctor-child, TTRACE_CTOR=path), so that this
 * process's GVLs keep their numbers. */
static int ctor_made;
__attribute__((constructor(101))) static void ctor_trace(void) {
  const char *path = getenv("TTRACE_CTOR");
  if (path == NULL || setenv("GVLOOP_TRACE", path, 1) != 0) return;
  gvl_t *g = gvl_create(NULL);
  gvl_thread_t *t = g ? gvl_thread_attach(g, 0) : NULL;
  ctor_made = t && !gvl_acquire(t) && !gvl_release(t) && !gvl_thread_detach(t) &&
              !gvl_destroy(g);
}

static void from_env_ctor(const ttrace_env_t *e) {
  char path[512], pattern[600], env[600];
  glob_t gl;
  ttrace_path(e, "ctor", path, sizeof path);
  snprintf(pattern, sizeof pattern, "%s/ctor*.gvlt", e->dir);
  unlink_matching(pattern);
  snprintf(env, sizeof env, "TTRACE_CTOR=%s", path);
  (void)run_self("--ctor-child", env);
  CHECK_OK(glob(pattern, 0, NULL, &gl));
  CHECK_EQ(gl.gl_pathc, 1);           /* ctor.gvlt, no ctor.<pid>.gvlt */
  CHECK(strcmp(gl.gl_pathv[0], path) == 0);
  globfree(&gl);
  TTRACE_CHECK(e, path, "--holds", "1");
  CHECK_OK(unlink(path));
}

static void busy_file(const ttrace_env_t *e) {
  char path[512], alt[600];
  ttrace_path(e, "busy", path, sizeof path);
  gvl_t *g1 = gvl_create(NULL), *g2 = gvl_create(NULL);
  CHECK(g1 && g2);
  CHECK_OK(gvl_trace_start(g1, path, NULL));
  gvl_thread_t *t = gvl_thread_attach(g1, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  CHECK_EQ(gvl_trace_start(g2, path, NULL), EBUSY);
  CHECK_EQ(gvl_trace_active(g2), 0);
  pid_t pid = run_exit_child(path);
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(gvl_trace_stop(g1));
  TTRACE_CHECK(e, path, "--holds", "1");     /* g1's, whole */
  snprintf(alt, sizeof alt, "%s/busy.%ld.gvlt", e->dir, (long)pid);
  TTRACE_CHECK(e, alt, "--holds", "2");      /* the child's */
  CHECK_OK(unlink(alt));
  CHECK_OK(gvl_trace_start(g2, path, NULL));  /* free again */
  CHECK_OK(gvl_trace_stop(g2));
  CHECK_OK(gvl_destroy(g1));
  CHECK_OK(gvl_destroy(g2));
}

/* A reader that went away (a FIFO closed by its reader) is an error the
 * stop returns, EPIPE, not a SIGPIPE that ends the process; a SIGPIPE is
 * not left pending either.  The reader opens the FIFO (which lets the
 * start's open return) and closes it once the trace runs. */
static atomic_uint fifo_step;

static void *fifo_reader(void *arg) {
  int fd = open((const char *)arg, O_RDONLY);
  CHECK(fd >= 0);
  tgvl_wait_ge(&fifo_step, 1);
  close(fd);
  atomic_store(&fifo_step, 2);
  return NULL;
}

static void fifo_gone(const ttrace_env_t *e) {
  char path[512];
  pthread_t th;
  ttrace_path(e, "fifo", path, sizeof path);
  CHECK_OK(mkfifo(path, 0600));
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  atomic_store(&fifo_step, 0);
  tgvl_spawn(&th, fifo_reader, path);
  CHECK_OK(gvl_trace_start(g, path, NULL));   /* opens once the reader does */
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  for (int i = 0; i < 100; i++) {
    CHECK_OK(gvl_acquire(t));
    CHECK_OK(gvl_trace_instant(g, "test", "fill", (uint64_t)i));
    CHECK_OK(gvl_release(t));
  }
  atomic_store(&fifo_step, 1);
  tgvl_join(th);                               /* the reader has gone */
  CHECK_EQ(gvl_trace_stop(g), EPIPE);
  sigset_t pending;
  CHECK_OK(sigpending(&pending));
  CHECK_EQ(sigismember(&pending, SIGPIPE), 0);
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(gvl_destroy(g));
  CHECK_OK(unlink(path));
}

/* dir/././.../ccc...c.gvlt, len bytes (malloc'd, with room for a glob). */
static char *long_path(const ttrace_env_t *e, size_t len, char c) {
  char *p = malloc(len + 8);
  CHECK(p != NULL);
  size_t at = (size_t)snprintf(p, len + 8, "%s/", e->dir);
  while (at + 2 + 200 + 5 < len) {
    memcpy(p + at, "./", 2);
    at += 2;
  }
  memset(p + at, c, len - 5 - at);
  memcpy(p + len - 5, ".gvlt", 6);
  CHECK_EQ(strlen(p), len);
  return p;
}

/* gvl_create and gvl_destroy leave errno alone (gvl.h), also where
 * GVLOOP_TRACE makes them parse the environment, fail to open a trace
 * (reported on stderr) or write one. */
static void env_errno(const ttrace_env_t *e) {
  char path[512];
  ttrace_path(e, "errno", path, sizeof path);
  CHECK_OK(setenv("GVLOOP_TRACE_EVENTS", "4096", 1));
  const char *paths[] = {"/nonexistent-gvloop-dir/t.gvlt", path};
  for (int i = 0; i < 2; i++) {
    CHECK_OK(setenv("GVLOOP_TRACE", paths[i], 1));
    errno = EDOM;
    gvl_t *g = gvl_create(NULL);
    CHECK(g != NULL);
    CHECK_EQ(errno, EDOM);
    CHECK_EQ(gvl_trace_active(g), i);
    CHECK_OK(gvl_destroy(g));
    CHECK_EQ(errno, EDOM);
  }
  CHECK_OK(unsetenv("GVLOOP_TRACE"));
  CHECK_OK(unsetenv("GVLOOP_TRACE_EVENTS"));
  /* A path too long to expand is refused, not cut short (it would name
   * another file), and so is one over gvl_trace.h's 4070 bytes; one a
   * little shorter, with this process's ".<n>" inserted, is traced. */
  static const size_t lens[] = {4094, 4072, 4071, 4060};
  for (int i = 0; i < 4; i++) {
    char *longp = long_path(e, lens[i], (char)('p' + i));
    char *pat = long_path(e, lens[i], (char)('p' + i));
    glob_t gl;
    strcpy(pat + lens[i] - 5, ".*.gvlt");
    if (!glob(pat, 0, NULL, &gl)) {        /* an earlier run's */
      for (size_t k = 0; k < gl.gl_pathc; k++) CHECK_OK(unlink(gl.gl_pathv[k]));
      globfree(&gl);
    }
    CHECK_OK(setenv("GVLOOP_TRACE", longp, 1));
    gvl_t *gl_ = gvl_create(NULL);
    CHECK(gl_ != NULL);
    CHECK_OK(unsetenv("GVLOOP_TRACE"));
    CHECK_EQ(gvl_trace_active(gl_), lens[i] <= 4070);
    CHECK_OK(gvl_destroy(gl_));
    int found = glob(pat, 0, NULL, &gl) == 0;
    CHECK_EQ(found ? gl.gl_pathc : 0, lens[i] <= 4070);
    if (found) {
      CHECK_OK(unlink(gl.gl_pathv[0]));
      globfree(&gl);
    }
    free(longp);
    free(pat);
  }
  /* Not the first GVLOOP_TRACE of the process: written to errno.<n>.gvlt. */
  char pattern[600];
  glob_t gl;
  snprintf(pattern, sizeof pattern, "%s/errno.*.gvlt", e->dir);
  CHECK_OK(glob(pattern, 0, NULL, &gl));
  CHECK_EQ(gl.gl_pathc, 1);
  CHECK_OK(unlink(gl.gl_pathv[0]));
  globfree(&gl);
}

/* After fork() the child's copy of a running trace is off and never
 * written; the parent's trace goes on and is written once. */
static void forked(const ttrace_env_t *e) {
  char path[512];
  int st;
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  ttrace_path(e, "fork", path, sizeof path);
  CHECK_OK(gvl_trace_start(g, path, NULL));
  CHECK_OK(gvl_acquire(t));
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    tgvl_watchdog(30);
    if (gvl_trace_active(g) != 0 || gvl_trace_stop(g) != ESRCH) _exit(1);
    if (gvl_release(t) || gvl_acquire(t) || gvl_release(t)) _exit(2);
    _exit(0);
  }
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);
  CHECK_OK(gvl_release(t));
  CHECK_EQ(gvl_trace_active(g), 1);
  CHECK_OK(gvl_trace_stop(g));
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(gvl_destroy(g));
  TTRACE_CHECK(e, path, "--holds", "1");
}

/* A trace started by GVLOOP_TRACE in a program that exits without
 * destroying its GVL is written by exit().  The program is this one, run
 * afresh with --exit-child so that it starts with clean process state. */
static int exit_child(void) {
  gvl_t *g = gvl_create(NULL);
  gvl_thread_t *t = g ? gvl_thread_attach(g, 0) : NULL;
  if (!t || gvl_acquire(t) || gvl_release(t) || gvl_acquire(t)) return 1;
  exit(0);                         /* still holding, GVL never destroyed */
}

static void exit_writes(const ttrace_env_t *e) {
  char path[512];
  ttrace_path(e, "exit", path, sizeof path);
  (void)run_exit_child(path);
  TTRACE_CHECK(e, path, "--holds", "2");
}

/* A span that ended before the trace started is not recorded, nor does
 * its thread count as recording or take one of max_threads' buffers; one
 * inside the run is recorded.  A thread named "" shows under its OS name
 * again, not "". */
static gvl_t *early_g;
static uint64_t early_ns;
static void *span_before(void *arg) {
  (void)arg;
  CHECK_OK(gvl_trace_span(early_g, "t", "before", early_ns, early_ns + 1));
  return NULL;
}

static void before_and_unnamed(const ttrace_env_t *e) {
  char path[512];
  gvl_trace_stats_t st;
  gvl_trace_config_t one = {0};
  one.max_threads = 1;
  gvl_t *g = early_g = gvl_create(NULL);
  CHECK(g != NULL);
  early_ns = gvl_now_ns();
  ttrace_path(e, "unnamed", path, sizeof path);
  CHECK_OK(gvl_trace_start(g, path, &one));
  pthread_t th;
  tgvl_spawn(&th, span_before, NULL);
  tgvl_join(th);
  CHECK_OK(gvl_trace_stats(g, &st));
  CHECK_EQ(st.recorded, 0);
  CHECK_EQ(st.threads, 0);
  CHECK_EQ(st.lost, 0);
  CHECK_OK(gvl_trace_set_thread_name("named for a while"));
  uint64_t now = gvl_now_ns();
  CHECK_OK(gvl_trace_span(g, "t", "inside", now, now + 1));
  CHECK_OK(gvl_trace_set_thread_name(""));
  CHECK_OK(gvl_trace_stop(g));
  CHECK_OK(gvl_trace_stats(g, &st));
  CHECK_EQ(st.recorded, 1);        /* this thread had the one buffer */
  CHECK_EQ(st.lost, 0);
  CHECK_EQ(st.threads, 1);
  CHECK_OK(gvl_destroy(g));
  char *json = ttrace_convert(e, path);
  FILE *f = fopen(json, "r");
  CHECK(f != NULL);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  CHECK(strstr(buf, "\"thread_name\"") != NULL);
  CHECK(strstr(buf, "{\"name\":\"\"}") == NULL);            /* no empty name */
  CHECK(strstr(buf, "named for a while") == NULL);
  free(json);
}

/* gvl-trace on a header whose thread count is absurd: exit 1, not a crash;
 * and a failed write leaves an OUT that existed before in place (a device
 * that fails every write, where root can make one). */
static void tool_edges(const ttrace_env_t *e) {
  char path[512], bad[600], full[600];
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  ttrace_path(e, "edges", path, sizeof path);
  CHECK_OK(gvl_trace_start(g, path, NULL));
  CHECK(gvl_call_with(g, 0, noop, g) == g);
  CHECK_OK(gvl_destroy(g));
  snprintf(bad, sizeof bad, "%s/edges-bad.gvlt", e->dir);
  FILE *in = fopen(path, "rb"), *out = fopen(bad, "wb");
  CHECK(in != NULL && out != NULL);
  static unsigned char head[52 + 4], junk[200 * 64];
  CHECK_EQ(fread(head, 1, sizeof head, in), sizeof head);
  memset(head + 52, 0xff, 4);                 /* gvl__tf_head_t.nthreads */
  memset(junk, 0x11, sizeof junk);
  CHECK_EQ(fwrite(head, 1, sizeof head, out), sizeof head);
  CHECK_EQ(fwrite(junk, 1, sizeof junk, out), sizeof junk);
  fclose(in);
  fclose(out);
  const char *argv[] = {e->conv, bad, "/dev/null", NULL};
  CHECK_EQ(ttrace_run(argv), 1);
  /* A whole trace with bytes after its end (two writers of one file) is
   * refused too; the trace alone converts. */
  snprintf(bad, sizeof bad, "%s/edges-tail.gvlt", e->dir);
  in = fopen(path, "rb");
  out = fopen(bad, "wb");
  CHECK(in != NULL && out != NULL);
  size_t n;
  while ((n = fread(junk, 1, sizeof junk, in)) > 0)
    CHECK_EQ(fwrite(junk, 1, n, out), n);
  CHECK_EQ(fwrite("tail", 1, 4, out), 4);
  fclose(in);
  fclose(out);
  const char *tail_argv[] = {e->conv, bad, "/dev/null", NULL};
  CHECK_EQ(ttrace_run(tail_argv), 1);
  const char *whole_argv[] = {e->conv, path, "/dev/null", NULL};
  CHECK_EQ(ttrace_run(whole_argv), 0);
  snprintf(full, sizeof full, "%s/edges-full", e->dir);
  (void)unlink(full);
  if (mknod(full, S_IFCHR | 0600, makedev(1, 7)) == 0) {   /* /dev/full */
    const char *argv2[] = {e->conv, path, full, NULL};
    struct stat sb;
    CHECK_EQ(ttrace_run(argv2), 1);
    CHECK_OK(stat(full, &sb));
    CHECK(S_ISCHR(sb.st_mode));
    (void)unlink(full);
  }
}

/* gvl-trace on file, read as a file and through a pipe (whose size no
 * one knows before it ends), with its address space limited (not under a
 * sanitizer, which maps terabytes): exit 1 and a message naming the file
 * cut short, not the memory that a count in the header asked for. */
static void refused_short_as(const ttrace_env_t *e, const char *file, int piped) {
  char err[600], msg[1024] = "";
  snprintf(err, sizeof err, "%s.err", file);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
#ifndef TTRACE_SANITIZED
    struct rlimit rl = {256u << 20, 256u << 20};
    if (setrlimit(RLIMIT_AS, &rl)) _exit(100);
#endif
    int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(101);
    if (piped) {
      int p[2];
      if (pipe(p) || dup2(p[0], 0) < 0) _exit(103);
      if (fork() == 0) {        /* the writer: the file into the pipe */
        int in = open(file, O_RDONLY);
        char buf[4096];
        ssize_t n;
        close(p[0]);
        while (in >= 0 && (n = read(in, buf, sizeof buf)) > 0)
          if (write(p[1], buf, (size_t)n) != n) _exit(1);
        _exit(0);
      }
      close(p[0]);
      close(p[1]);
      file = "/dev/stdin";
    }
    execl(e->conv, e->conv, file, "/dev/null", (char *)NULL);
    _exit(102);
  }
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 1);
  FILE *f = fopen(err, "r");
  CHECK(f != NULL);
  CHECK(fgets(msg, sizeof msg, f) != NULL);
  fclose(f);
  if (!strstr(msg, "truncated")) {
    fprintf(stderr, "%s: %s", file, msg);
    CHECK(strstr(msg, "truncated") != NULL);
  }
}

static void refused_short(const ttrace_env_t *e, const char *file) {
  refused_short_as(e, file, 0);
  refused_short_as(e, file, 1);
}

/* Counts in a file's header (a thread's records, the strings) far beyond
 * what the file holds are refused before anything is allocated for them. */
static void tool_counts(const ttrace_env_t *e) {
  char path[512], bad[600];
  unsigned char head[56], th[48];
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  ttrace_path(e, "counts", path, sizeof path);
  CHECK_OK(gvl_trace_start(g, path, NULL));
  CHECK_OK(gvl_destroy(g));
  FILE *in = fopen(path, "rb");
  CHECK(in != NULL);
  CHECK_EQ(fread(head, 1, sizeof head, in), sizeof head);
  fclose(in);
  /* One thread whose header says 2^24 records follow; none do. */
  uint32_t one = 1, many = 1u << 24, nstr = 1u << 28;
  uint64_t offered = many;
  memcpy(head + 52, &one, 4);                 /* gvl__tf_head_t.nthreads */
  memset(th, 0, sizeof th);
  memcpy(th, &offered, 8);                    /* gvl__tf_thread_t.offered */
  memcpy(th + 8, &many, 4);                   /* .kept */
  snprintf(bad, sizeof bad, "%s/counts-kept.gvlt", e->dir);
  FILE *out = fopen(bad, "wb");
  CHECK(out != NULL);
  CHECK_EQ(fwrite(head, 1, sizeof head, out), sizeof head);
  CHECK_EQ(fwrite(th, 1, sizeof th, out), sizeof th);
  fclose(out);
  refused_short(e, bad);
  /* No threads, and 2^28 strings said to follow; none do. */
  uint32_t zero = 0;
  memcpy(head + 52, &zero, 4);
  snprintf(bad, sizeof bad, "%s/counts-nstr.gvlt", e->dir);
  CHECK((out = fopen(bad, "wb")) != NULL);
  CHECK_EQ(fwrite(head, 1, sizeof head, out), sizeof head);
  CHECK_EQ(fwrite(&nstr, 1, 4, out), 4);
  fclose(out);
  refused_short(e, bad);
  /* One string of 2^20 bytes (the most one may have), one byte there. */
  uint32_t len = 1u << 20;
  one = 1;
  snprintf(bad, sizeof bad, "%s/counts-len.gvlt", e->dir);
  CHECK((out = fopen(bad, "wb")) != NULL);
  CHECK_EQ(fwrite(head, 1, sizeof head, out), sizeof head);
  CHECK_EQ(fwrite(&one, 1, 4, out), 4);
  CHECK_EQ(fwrite(&len, 1, 4, out), 4);
  CHECK_EQ(fwrite("x", 1, 1, out), 1);
  fclose(out);
  refused_short(e, bad);
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--exit-child")) return exit_child();
  if (argc == 2 && !strcmp(argv[1], "--ctor-child")) return ctor_made ? 0 : 1;
  ttrace_env_t e = ttrace_args(argc, argv);
  self_path = argv[0];
  tgvl_watchdog(240);  /* includes the checker runs (python3 start-up on a loaded box) */
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  bad_input(&e, g);
  cycles(&e, g);
  CHECK_OK(gvl_destroy(g));
  destroy_writes(&e);
  named(&e);
  json_named(&e);
  from_env(&e);
  from_env_forked(&e);
  env_errno(&e);
  busy_file(&e);
  from_env_ctor(&e);
  fifo_gone(&e);
  forked(&e);
  exit_writes(&e);
  before_and_unnamed(&e);
  tool_edges(&e);
  tool_counts(&e);
  return 0;
}
