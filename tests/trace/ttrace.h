/* SPDX-License-Identifier: MIT */
/*
 * ttrace.h -- helpers of the tracing tests.
 *
 * Every test program is run as
 *     test_trace_X <python3> <check_trace.py> <output dir> <gvl-trace>
 * writes raw traces (dir/name.gvlt), turns each into JSON with gvl-trace
 * in a process of its own, as a user would, and checks the JSON by running
 * check_trace.py on it, so that it is read by a real parser (Python's json
 * module).
 */
#ifndef TTRACE_H
#define TTRACE_H

#include "gvl_trace.h"
#include "tgvl.h"

#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

typedef struct {
  const char *python, *checker, *dir, *conv;
} ttrace_env_t;

static inline ttrace_env_t ttrace_args(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s python3 check_trace.py outdir gvl-trace\n", argv[0]);
    _exit(2);
  }
  return (ttrace_env_t){argv[1], argv[2], argv[3], argv[4]};
}

/* dir/name.gvlt (removed if it is there, and its JSON too). */
static inline void ttrace_path(const ttrace_env_t *e, const char *name,
                               char *out, size_t size) {
  char json[600];
  snprintf(out, size, "%s/%s.gvlt", e->dir, name);
  snprintf(json, sizeof json, "%s/%s.json", e->dir, name);
  (void)unlink(out);
  (void)unlink(json);
}

static inline int ttrace_run(const char *const *argv) {
  pid_t pid;
  int st;
  CHECK_OK(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ));
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A raw file (".gvlt") turned into JSON by gvl-trace; the JSON's path
 * (malloc'ed), or NULL if arg is not a raw file's name. */
static inline char *ttrace_convert(const ttrace_env_t *e, const char *arg) {
  size_t len = strlen(arg);
  if (len < 5 || strcmp(arg + len - 5, ".gvlt")) return NULL;
  char *json = malloc(len + 1);
  CHECK(json != NULL);
  snprintf(json, len + 1, "%.*s.json", (int)(len - 5), arg);
  const char *argv[] = {e->conv, arg, NULL};
  CHECK_EQ(ttrace_run(argv), 0);
  return json;
}

/* Turn file into JSON and run the checker on it with the extra arguments
 * (NULL-terminated list: options, or more raw files, converted and checked
 * the same way); return the checker's exit status (0: every check passed). */
static inline int ttrace_check_v(const ttrace_env_t *e, const char *file,
                                 const char *const *extra) {
  size_t n = 0, more = 0;
  while (extra && extra[more]) more++;
  const char **argv = malloc((more + 4) * sizeof *argv);
  char **json = calloc(more + 1, sizeof *json);
  CHECK(argv != NULL && json != NULL);
  argv[n++] = e->python;
  argv[n++] = e->checker;
  json[more] = ttrace_convert(e, file);     /* or file is JSON already */
  argv[n++] = json[more] ? json[more] : file;
  for (size_t i = 0; i < more; i++) {
    json[i] = ttrace_convert(e, extra[i]);
    argv[n++] = json[i] ? json[i] : extra[i];
  }
  argv[n] = NULL;
  int rc = ttrace_run(argv);
  for (size_t i = 0; i <= more; i++) free(json[i]);
  free(json);
  free(argv);
  return rc;
}

#define TTRACE_CHECK(e, file, ...)                                         \
  do {                                                                     \
    const char *const ttrace_x_[] = {__VA_ARGS__, NULL};                   \
    CHECK_EQ(ttrace_check_v((e), (file), ttrace_x_), 0);                   \
  } while (0)

#endif /* TTRACE_H */
