/*
 * ttrace.h -- helpers of the tracing tests.
 *
 * Every test program is run as
 *     test_trace_X <python3> <check_trace.py> <output dir>
 * and checks the files it writes by running check_trace.py on them, so
 * that the JSON is read by a real parser (Python's json module).
 */
#ifndef TTRACE_H
#define TTRACE_H

#include "gvl_trace.h"
#include "tgvl.h"

#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

typedef struct {
  const char *python, *checker, *dir;
} ttrace_env_t;

static inline ttrace_env_t ttrace_args(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s python3 check_trace.py outdir\n", argv[0]);
    _exit(2);
  }
  return (ttrace_env_t){argv[1], argv[2], argv[3]};
}

/* dir/name.json, in a static buffer of its own per call site's slot. */
static inline void ttrace_path(const ttrace_env_t *e, const char *name,
                               char *out, size_t size) {
  snprintf(out, size, "%s/%s.json", e->dir, name);
  (void)unlink(out);
}

/* Run the checker on file with the extra arguments (NULL-terminated list:
 * options, or more files to check the same way) and return its exit status (0: every check passed). */
static inline int ttrace_check_v(const ttrace_env_t *e, const char *file,
                                 const char *const *extra) {
  size_t n = 0, more = 0;
  while (extra && extra[more]) more++;
  const char **argv = malloc((more + 4) * sizeof *argv);
  CHECK(argv != NULL);
  argv[n++] = e->python;
  argv[n++] = e->checker;
  argv[n++] = file;
  for (size_t i = 0; i < more; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  pid_t pid;
  int st;
  CHECK_OK(posix_spawn(&pid, e->python, NULL, NULL, (char *const *)argv, environ));
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  free(argv);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

#define TTRACE_CHECK(e, file, ...)                                         \
  do {                                                                     \
    const char *const ttrace_x_[] = {__VA_ARGS__, NULL};                   \
    CHECK_EQ(ttrace_check_v((e), (file), ttrace_x_), 0);                   \
  } while (0)

#endif /* TTRACE_H */
