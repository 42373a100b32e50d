/* SPDX-License-Identifier: MIT */
/*
 * viewer.c -- a text file viewer that loads in the background.
 *
 *   viewer [--batch] [--max-show BYTES] [--hog N] [FILE]
 *
 * The file is read whole with evl_read_file: on libuv's thread pool,
 * without the GVL, with the sequential-read hint.  While it reads, the
 * window animates an indeterminate progress bar and a spinner (Tcl timers
 * on the loop thread: no host code).  Then the text goes into the Tk text
 * widget in chunks, one per Tcl event, so the window keeps answering and
 * the progress bar shows the real share inserted.
 *
 * Refused with a clear message: unreadable input (the read's errno: no
 * such file, a directory, permission denied, too large) and binary input
 * (a NUL byte, or more than 1% control bytes or invalid UTF-8 in the
 * first 64 KiB, looked at once the read is done: an endless stream such
 * as /dev/zero is read up to the 2 GiB limit and refused as too large).
 *
 * --hog N     run N interpreter threads computing under the GVL meanwhile
 * --batch     load FILE, print one line of figures and exit: 0 loaded,
 *             3 refused as binary, 4 unreadable (for tests and scripts);
 *             SIGINT and SIGTERM end any run with 130 and 143
 * --max-show  show at most this many bytes (default 8 MiB); the rest is
 *             counted but not inserted (a Tk text widget gets slow)
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L  /* clock_gettime, nanosleep, strdup in -std=c11 */
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tcl.h>

#include "gvl.h"
#include "evloop.h"
#include "tkbridge.h"

#include "viewer_tcl.h"

#define CHUNK (128 * 1024)
#define SNIFF (64 * 1024)
#define READ_LIMIT ((size_t)1 << 31) /* 2 GiB: beyond that, EFBIG */
#define MAX_HOGS 8

typedef struct {
  gvl_t *gvl;
  evl_t *l;
  tkb_t *tk;
  int batch;
  size_t max_show;

  /* Owned by the loop thread (host commands and the read callback). */
  char *path;
  char *data;           /* the file, or NULL */
  size_t len, shown, pos, lines;
  uint64_t t_open, t_read, t_done;
  int reading;

  /* Quit handshake with main. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int quit, code;       /* guarded by mu */

  atomic_int hog_stop;
} viewer_t;

/* ---- deciding what is text ------------------------------------------------ */

/* Length of a valid UTF-8 sequence at p (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t n) {
  size_t need;
  if (p[0] < 0x80) return 1;
  if (p[0] >= 0xc2 && p[0] <= 0xdf) need = 2;
  else if (p[0] >= 0xe0 && p[0] <= 0xef) need = 3;
  else if (p[0] >= 0xf0 && p[0] <= 0xf4) need = 4;
  else return 0;
  if (need > n) return 0;
  for (size_t i = 1; i < need; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  return need;
}

/* NULL if the buffer looks like text, else why not (written into why). */
static const char *binary_reason(const char *data, size_t len, char *why,
                                 size_t whysz) {
  const char *nul = memchr(data, '\0', len);
  if (nul != NULL) {
    snprintf(why, whysz, "it is binary (a NUL byte at offset %zu)", (size_t)(nul - data));
    return why;
  }
  const unsigned char *p = (const unsigned char *)data;
  size_t n = len < SNIFF ? len : SNIFF, bad = 0;
  for (size_t i = 0; i < n;) {
    size_t k = utf8_len(p + i, n - i);
    if (k == 0) {
      /* A sequence cut by the sniff window is not an error. */
      if (n < len || n - i >= 4) bad++;
      i++;
      continue;
    }
    if (k == 1 && p[i] < 0x20 && !strchr("\t\n\r\f\v\033", p[i])) bad++;
    i += k;
  }
  if (bad * 100 > n) {
    snprintf(why, whysz, "it is binary (%zu control or non-UTF-8 bytes in the first %zu)",
             bad, n);
    return why;
  }
  return NULL;
}

static size_t count_lines(const char *d, size_t len) {
  size_t n = 0;
  for (const char *p = d, *end = d + len; (p = memchr(p, '\n', (size_t)(end - p))); p++) n++;
  return n + (len > 0 && d[len - 1] != '\n');
}

/* Cut at a line end (or at least a UTF-8 boundary) at or before max. */
static size_t cut_at(const char *d, size_t len, size_t max) {
  if (len <= max) return len;
  for (size_t i = max; i > max / 2; i--)
    if (d[i - 1] == '\n') return i;
  size_t i = max;
  while (i > 0 && ((unsigned char)d[i] & 0xc0) == 0x80) i--;
  return i;
}

/* ---- talking to Tcl --------------------------------------------------------- */

/* Queue `args...` as one Tcl command, each word quoted by Tcl_Merge. */
static void tcl_call(viewer_t *v, int argc, const char **argv) {
  char *s = Tcl_Merge(argc, argv);
  if (s == NULL) return;
  int rc = tkb_eval_async(v->tk, s, NULL, NULL);
  if (rc != 0 && rc != ECANCELED)
    fprintf(stderr, "viewer: %s\n", tkb_strerror(rc));
  Tcl_Free(s);
}

static void finish_read(viewer_t *v, const char *kind, const char *msg) {
  char size[32], lines[32];
  snprintf(size, sizeof size, "%zu", v->len);
  snprintf(lines, sizeof lines, "%zu", v->lines);
  const char *argv[] = {"viewer::loaded", kind, msg, size, lines};
  tcl_call(v, 5, argv);
}

/* [loop thread, GVL held] evl_read_file is done. */
static void on_read(evl_t *l, void *arg, int status, char *data, size_t len) {
  (void)l;
  viewer_t *v = arg;
  char msg[512], why[160];
  v->reading = 0;
  v->t_read = gvl_now_ns();
  if (status == ECANCELED) return; /* shutting down: nobody to tell */
  if (status != 0) {
    snprintf(msg, sizeof msg, "cannot read %s: %s", v->path,
             status == EFBIG ? "larger than 2 GiB" : strerror(status));
    finish_read(v, "error", msg);
    return;
  }
  if (binary_reason(data, len, why, sizeof why) != NULL) {
    snprintf(msg, sizeof msg, "not showing %s: %s", v->path, why);
    free(data);
    finish_read(v, "binary", msg);
    return;
  }
  v->data = data;
  v->len = len;
  v->lines = count_lines(data, len);
  v->shown = cut_at(data, len, v->max_show);
  v->pos = 0;
  snprintf(msg, sizeof msg, "%s", v->path);
  finish_read(v, "ok", msg);
}

/* viewer::open PATH -- start reading (the result comes to viewer::loaded). */
static int open_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                   tkb_result_t *res) {
  viewer_t *v = arg;
  if (argc != 2 || argv[1][0] == '\0') {
    tkb_result_set(res, "usage: viewer::open PATH");
    return EINVAL;
  }
  if (v->reading) {
    tkb_result_set(res, "a file is being read");
    return EBUSY;
  }
  free(v->data);
  free(v->path);
  v->data = NULL;
  v->len = v->shown = v->pos = v->lines = 0;
  v->path = strdup(argv[1]);
  if (v->path == NULL) return ENOMEM;
  v->t_open = gvl_now_ns();
  int rc = evl_read_file(tkb_evl(tk), v->path, 0, READ_LIMIT, on_read, v, NULL);
  if (rc != 0) {
    tkb_result_set(res, strerror(rc));
    return rc;
  }
  v->reading = 1;
  return 0;
}

/* viewer::chunk -- the next piece of text to insert ("" at the end). */
static int chunk_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                    tkb_result_t *res) {
  (void)tk;
  (void)argc;
  (void)argv;
  viewer_t *v = arg;
  static char buf[CHUNK + 1]; /* loop thread only */
  size_t n = 0;
  if (v->data != NULL && v->pos < v->shown) {
    n = cut_at(v->data + v->pos, v->shown - v->pos, CHUNK);
    if (n == 0) n = v->shown - v->pos < CHUNK ? v->shown - v->pos : CHUNK;
    memcpy(buf, v->data + v->pos, n);
    v->pos += n;
  }
  buf[n] = '\0';
  if (v->pos >= v->shown && v->t_done == 0 && v->data != NULL) v->t_done = gvl_now_ns();
  return tkb_result_set(res, buf);
}

/* viewer::progress -- {inserted shown total lines} */
static int progress_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                       tkb_result_t *res) {
  (void)tk;
  (void)argc;
  (void)argv;
  viewer_t *v = arg;
  char buf[96];
  snprintf(buf, sizeof buf, "%zu %zu %zu %zu", v->pos, v->shown, v->len, v->lines);
  return tkb_result_set(res, buf);
}

static void request_quit(viewer_t *v, int code) {
  pthread_mutex_lock(&v->mu);
  if (!v->quit) v->code = code;
  v->quit = 1;
  pthread_cond_broadcast(&v->cv);
  pthread_mutex_unlock(&v->mu);
}

/* viewer::finish CODE FRAMES GAP_MS -- batch mode: print the figures, quit. */
static int finish_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                     tkb_result_t *res) {
  (void)tk;
  viewer_t *v = arg;
  int code = 0, frames = 0, gap = 0;
  if (argc != 4 || sscanf(argv[1], "%d", &code) != 1 || sscanf(argv[2], "%d", &frames) != 1 ||
      sscanf(argv[3], "%d", &gap) != 1) {
    tkb_result_set(res, "usage: viewer::finish CODE FRAMES GAP_MS");
    return EINVAL;
  }
  if (code == 0)
    printf("viewer: loaded %s: %zu bytes, %zu lines; read %.1f ms, shown %zu bytes in "
           "%.1f ms more; spinner frames meanwhile %d, longest gap %d ms\n",
           v->path, v->len, v->lines, (double)(v->t_read - v->t_open) / 1e6, v->shown,
           v->t_done > v->t_read ? (double)(v->t_done - v->t_read) / 1e6 : 0.0, frames,
           gap);
  fflush(stdout);
  request_quit(v, code);
  return 0;
}

/* viewer::say TEXT -- a line on stdout (batch mode's messages). */
static int say_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                  tkb_result_t *res) {
  (void)tk;
  (void)arg;
  (void)res;
  if (argc == 2) printf("viewer: %s\n", argv[1]);
  fflush(stdout);
  return 0;
}

static int quit_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                   tkb_result_t *res) {
  (void)tk;
  (void)argc;
  (void)argv;
  (void)res;
  request_quit(arg, 0);
  return 0;
}

static int make_cmds(viewer_t *v) {
  static const struct {
    const char *name;
    tkb_cmd_cb cb;
  } cmds[] = {{"viewer::open", open_cb},     {"viewer::chunk", chunk_cb},
              {"viewer::progress", progress_cb}, {"viewer::finish", finish_cb},
              {"viewer::say", say_cb},       {"viewer::quit", quit_cb}};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    int rc = tkb_command_create(v->tk, cmds[i].name, cmds[i].cb, v);
    if (rc) return rc;
  }
  return 0;
}

/* ---- interpreter threads (--hog) ------------------------------------------ */

static void *hog_main(void *arg) {
  viewer_t *v = arg;
  gvl_thread_t *t = gvl_thread_attach(v->gvl, GVL_PRIO_NORMAL);
  if (t == NULL) return NULL;
  uint64_t x = 88172645463325252u;
  gvl_acquire(t);
  while (!atomic_load_explicit(&v->hog_stop, memory_order_relaxed)) {
    for (int i = 0; i < 200; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    gvl_check_ints(t);
  }
  gvl_release(t);
  gvl_thread_detach(t);
  return (void *)(uintptr_t)(x & 1);
}

/* ---- main ------------------------------------------------------------------- */

/* SIGINT / SIGTERM: quit through the normal path, so everything is freed,
 * with the status a shell gives a process the signal ended (a --batch run
 * stopped so is not one that loaded). */
static void on_sigint(evl_t *l, void *arg, int status) {
  (void)l;
  if (status == 0) request_quit(arg, 128 + SIGINT);
}

static void on_sigterm(evl_t *l, void *arg, int status) {
  (void)l;
  if (status == 0) request_quit(arg, 128 + SIGTERM);
}

static int start(viewer_t *v, const char *file) {
  evl_config_t ec;
  memset(&ec, 0, sizeof ec);
  ec.prio = EVL_PRIO_BOOST;   /* host callbacks cut in ahead of the renderers */
  tkb_evl_config(&ec);
  v->l = evl_start(v->gvl, &ec);
  if (v->l == NULL) {
    fprintf(stderr, "viewer: evl_start: %s\n", strerror(errno));
    return 1;
  }
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.prio = TKB_PRIO_BOOST;
  tc.argv0 = "viewer";
  int rc = tkb_start(v->l, &tc, &v->tk);
  if (rc == 0) rc = make_cmds(v);
  if (rc != 0) {
    fprintf(stderr, "viewer: cannot start Tk: %s\n", tkb_strerror(rc));
    return 1;
  }
  /* Without them (ENOSPC: 1024 watches in the process) the signals end
   * the process as they would anyway. */
  (void)evl_signal_watch(v->l, SIGINT, EVL_F_NOGVL, on_sigint, v, NULL);
  (void)evl_signal_watch(v->l, SIGTERM, EVL_F_NOGVL, on_sigterm, v, NULL);
  const char *argv[] = {"set", "viewer::batch", v->batch ? "1" : "0"};
  char *s = Tcl_Merge(3, argv);
  char *err = NULL;
  rc = s ? tkb_eval(v->tk, s, NULL) : ENOMEM;
  Tcl_Free(s);
  if (rc == 0) rc = tkb_eval(v->tk, viewer_tcl, &err);
  if (rc == 0 && file != NULL) {
    free(err);
    err = NULL;
    const char *ov[] = {"viewer::start", file};
    s = Tcl_Merge(2, ov);
    rc = s ? tkb_eval(v->tk, s, &err) : ENOMEM;
    Tcl_Free(s);
  }
  if (rc != 0) fprintf(stderr, "viewer: %s\n", err ? err : tkb_strerror(rc));
  free(err);
  return rc != 0;
}

/* A whole number of digits only, in 0..hi. */
static int parse_count(const char *s, unsigned long long hi, unsigned long long *out) {
  char *end;
  if (*s < '0' || *s > '9') return -1;
  errno = 0;
  unsigned long long n = strtoull(s, &end, 10);
  if (*end || errno || n > hi) return -1;
  *out = n;
  return 0;
}

static const char usage_text[] =
    "usage: viewer [--batch] [--max-show BYTES] [--hog 0..8] [FILE]\n";

int main(int argc, char **argv) {
  static viewer_t app; /* one per process */
  viewer_t *v = &app;
  const char *file = NULL;
  int hogs = 0;
  v->max_show = 8u << 20;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    unsigned long long n;
    if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
      fputs(usage_text, stdout);
      return 0;
    } else if (strcmp(o, "--batch") == 0) {
      v->batch = 1;
      continue;
    } else if (o[0] != '-' && file == NULL) {
      file = o;
      continue;
    } else if (strcmp(o, "--max-show") == 0 && val) {
      if (parse_count(val, SIZE_MAX, &n) == 0 && n >= 1) {
        v->max_show = (size_t)n;
        i++;
        continue;
      }
    } else if (strcmp(o, "--hog") == 0 && val) {
      if (parse_count(val, MAX_HOGS, &n) == 0) {
        hogs = (int)n;
        i++;
        continue;
      }
    } else {
      const char *why = "unknown option";
      if (o[0] != '-') why = "one file only";
      else if (!strcmp(o, "--hog") || !strcmp(o, "--max-show")) why = "needs a value";
      fprintf(stderr, "viewer: %s: %s\n", o, why);
      fputs(usage_text, stderr);
      return 2;
    }
    fprintf(stderr, "viewer: %s %s: bad value\n", o, val);
    fputs(usage_text, stderr);
    return 2;
  }
  if (v->batch && file == NULL) {
    fprintf(stderr, "viewer: --batch needs a FILE\n");
    fputs(usage_text, stderr);
    return 2;
  }
  pthread_mutex_init(&v->mu, NULL);
  pthread_cond_init(&v->cv, NULL);
  v->gvl = gvl_create(NULL);
  if (v->gvl == NULL) {
    fprintf(stderr, "viewer: gvl_create: %s\n", strerror(errno));
    return 1;
  }
  pthread_t hog[MAX_HOGS];
  int started = 0;
  for (int i = 0; i < hogs; i++)
    if (pthread_create(&hog[i], NULL, hog_main, v) == 0) started++;
  int code = start(v, file);
  if (code == 0) {
    pthread_mutex_lock(&v->mu);
    while (!v->quit) pthread_cond_wait(&v->cv, &v->mu);
    code = v->code;
    pthread_mutex_unlock(&v->mu);
  }
  /* Stop the loop first: a read still in flight then ends (ECANCELED)
   * while the bridge's memory is still ours. */
  if (v->l) evl_stop(v->l);
  if (v->tk) tkb_destroy(v->tk);
  if (v->l) evl_destroy(v->l);
  atomic_store(&v->hog_stop, 1);
  for (int i = 0; i < started; i++) pthread_join(hog[i], NULL);
  free(v->data);
  free(v->path);
  int rc = gvl_destroy(v->gvl);
  if (rc != 0) fprintf(stderr, "viewer: gvl_destroy: %s\n", gvl_strerror(rc));
  return code;
}
