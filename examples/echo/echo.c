/* SPDX-License-Identifier: MIT */
/*
 * evl_echo -- a TCP echo server on 127.0.0.1 built on evloop alone, which
 * stays responsive while a CPU-bound interpreter thread hogs the GVL.
 *
 *   evl_echo [--port N] [--no-hog]     serve until SIGINT / SIGTERM
 *   evl_echo --selftest [--rounds N]   connect, measure, print, exit 0
 *
 * The connection handling is "host code": it runs in evloop callbacks
 * under the GVL, as a Ruby or Python echo server's handlers would.  The hog
 * stands for another interpreter thread computing; it passes a safe point
 * (gvl_check_ints) every ~1 us.  Because the loop waits for sockets with
 * the GVL released and takes it with a priority boost only to run a
 * handler, each round trip costs one boosted acquisition instead of a wait
 * for the hog's time slice.
 *
 * Writes: replies are short, so the handler writes them at once; if the
 * peer stops reading and the socket buffer fills (EAGAIN), the connection
 * is closed rather than buffered (an example, not a proxy).
 *
 * --selftest: clients on threads outside the GVL make round trips first
 * without the hog and then with it, check every echoed byte, and print the
 * round-trip times.  The exit status reflects correctness only; the times
 * are printed for people (timing figures belong to bench/).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* accept4 */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "evloop.h"

/* ---- the server: host code under the GVL ------------------------------------ */

typedef struct {
  int fd;
  evl_id_t id;
} conn_t;

static atomic_int served_conns;

static void conn_cb(evl_t *l, void *arg, int status, unsigned events) {
  conn_t *c = arg;
  char buf[65536];
  ssize_t n;
  (void)events;
  if (status != 0) {          /* last call: the watch is over */
    close(c->fd);
    free(c);
    return;
  }
  n = read(c->fd, buf, sizeof buf);
  if (n > 0 && send(c->fd, buf, (size_t)n, MSG_NOSIGNAL) == n) return;
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  evl_cancel(l, c->id);       /* EOF, error or full buffer: close */
}

static void accept_cb(evl_t *l, void *arg, int status, unsigned events) {
  int lfd = (int)(intptr_t)arg, fd, one = 1;
  (void)events;
  if (status != 0) return;
  while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
    conn_t *c = malloc(sizeof *c);
    int err;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (c == NULL) {
      close(fd);
      evl_fail(l, ENOMEM, "echo: no memory for a connection");
      continue;
    }
    c->fd = fd;
    err = evl_fd_watch(l, fd, EVL_READABLE, 0, conn_cb, c, &c->id);
    if (err != 0) {
      close(fd);
      free(c);
      evl_fail(l, err, "echo: cannot watch a connection");
      continue;
    }
    atomic_fetch_add(&served_conns, 1);
  }
}

static int listen_on(int port, int *port_out) {
  struct sockaddr_in sa;
  socklen_t len = sizeof sa;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
  if (fd < 0) return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons((uint16_t)port);
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
    close(fd);
    return -1;
  }
  *port_out = ntohs(sa.sin_port);
  return fd;
}

/* ---- the hog: a CPU-bound interpreter thread ------------------------------------ */

static atomic_int hog_stop;

static void *hog_main(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(arg, GVL_PRIO_NORMAL);
  volatile uint64_t x = 1;
  if (t == NULL || gvl_acquire(t) != 0) return NULL;
  while (!atomic_load(&hog_stop)) {
    int i;
    for (i = 0; i < 200; i++) x = x * 6364136223846793005ull + 1;  /* ~1 us */
    gvl_check_ints(t);
  }
  gvl_release(t);
  gvl_thread_detach(t);
  return NULL;
}

/* ---- self-test clients (no GVL) --------------------------------------------------- */

#define NCLIENTS 4
#define MSG 64

typedef struct {
  int port, rounds, ok;
  double *rtt;            /* microseconds, rounds entries */
} client_t;

static int connect_to(int port) {
  struct sockaddr_in sa;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  if (fd < 0) return -1;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons((uint16_t)port);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int recv_all(int fd, char *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, buf + got, n - got, 0);
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      return -1;
    }
    got += (size_t)r;
  }
  return 0;
}

static void *client_main(void *arg) {
  client_t *c = arg;
  char out[MSG], in[MSG];
  int fd = connect_to(c->port), i, j;
  c->ok = 0;
  if (fd < 0) return NULL;
  for (i = 0; i < c->rounds; i++) {
    uint64_t t0;
    for (j = 0; j < MSG; j++) out[j] = (char)(i * 7 + j + c->port);
    t0 = gvl_now_ns();
    if (send(fd, out, MSG, MSG_NOSIGNAL) != MSG || recv_all(fd, in, MSG) != 0 ||
        memcmp(in, out, MSG) != 0) {
      close(fd);
      return NULL;
    }
    c->rtt[i] = (double)(gvl_now_ns() - t0) / 1e3;
  }
  close(fd);
  c->ok = 1;
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Run the clients at once; print round-trip percentiles.  1 if all echoes
 * came back intact. */
static int run_clients(int port, int rounds, const char *label) {
  client_t c[NCLIENTS];
  pthread_t th[NCLIENTS];
  double *all = calloc((size_t)rounds * NCLIENTS, sizeof *all);
  size_t n = 0;
  int i, ok = 1;
  if (all == NULL) return 0;
  for (i = 0; i < NCLIENTS; i++) {
    c[i].port = port;
    c[i].rounds = rounds;
    c[i].rtt = all + (size_t)i * rounds;
    pthread_create(&th[i], NULL, client_main, &c[i]);
  }
  for (i = 0; i < NCLIENTS; i++) {
    pthread_join(th[i], NULL);
    ok &= c[i].ok;
  }
  n = (size_t)rounds * NCLIENTS;
  qsort(all, n, sizeof *all, cmp_double);
  printf("%-12s %d clients x %d round trips: p50 %8.1f us  p99 %8.1f us  max %8.1f us  %s\n",
         label, NCLIENTS, rounds, all[n / 2], all[n * 99 / 100], all[n - 1],
         ok ? "all echoes intact" : "ECHO MISMATCH");
  free(all);
  return ok;
}

/* ---- main ------------------------------------------------------------------------------ */

static pthread_mutex_t quit_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t quit_cv = PTHREAD_COND_INITIALIZER;
static int quit;

static void quit_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  if (status != 0) return;
  pthread_mutex_lock(&quit_mu);
  quit = 1;
  pthread_cond_signal(&quit_cv);
  pthread_mutex_unlock(&quit_mu);
}

static void on_error(evl_t *l, int err, const char *what, void *arg) {
  (void)l;
  (void)arg;
  fprintf(stderr, "evl_echo: %s: %s\n", what, strerror(err));
}

/* Parse a whole decimal number in [lo, hi]: 0, else -1. */
static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* Print what was wrong (if anything) and the usage; returns 2. */
__attribute__((format(printf, 2, 3)))
static int usage(const char *argv0, const char *fmt, ...) {
  if (fmt != NULL) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "evl_echo: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
  }
  fprintf(fmt != NULL ? stderr : stdout,
          "usage: %s [--port N] [--no-hog] | --selftest [--rounds N]\n", argv0);
  return 2;
}

int main(int argc, char **argv) {
  int port = -1, selftest = 0, hog = 1, rounds = 200, lfd, i, ok = 1;
  gvl_t *g;
  evl_t *l;
  evl_config_t cfg = {0};
  pthread_t hog_th;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--selftest") == 0) selftest = 1;
    else if (strcmp(argv[i], "--no-hog") == 0) hog = 0;
    else if (strcmp(argv[i], "--port") == 0 || strcmp(argv[i], "--rounds") == 0) {
      int is_port = argv[i][2] == 'p';
      long v;
      if (i + 1 >= argc) return usage(argv[0], "%s needs a value", argv[i]);
      if (parse_long(argv[i + 1], is_port ? 0 : 1, is_port ? 65535 : 1000000, &v) != 0)
        return usage(argv[0], is_port ? "--port %s: not a port number (0..65535; 0: any free port)"
                                      : "--rounds %s: not a number of rounds (1..1000000)",
                     argv[i + 1]);
      if (is_port) port = (int)v;
      else rounds = (int)v;
      i++;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(argv[0], NULL);
      return 0;
    } else {
      return usage(argv[0], "unknown option %s", argv[i]);
    }
  }
  if (port < 0) port = selftest ? 0 : 7007;   /* the self-test: any free port */
  if ((lfd = listen_on(port, &port)) < 0) {
    perror("evl_echo: listen");
    return 1;
  }
  cfg.prio = EVL_PRIO_BOOST;
  cfg.on_error = on_error;
  if ((g = gvl_create(NULL)) == NULL || (l = evl_start(g, &cfg)) == NULL) {
    perror("evl_echo: start");
    return 1;
  }
  if (evl_fd_watch(l, lfd, EVL_READABLE, 0, accept_cb, (void *)(intptr_t)lfd, NULL) != 0)
    return 1;
  if (selftest) {
    ok &= run_clients(port, rounds, "no hog");
    pthread_create(&hog_th, NULL, hog_main, g);
    ok &= run_clients(port, rounds, "with hog");
  } else {
    printf("evl_echo: listening on 127.0.0.1:%d%s\n", port, hog ? ", hog running" : "");
    fflush(stdout);
    if (hog) pthread_create(&hog_th, NULL, hog_main, g);
    evl_signal_watch(l, SIGINT, 0, quit_cb, NULL, NULL);
    evl_signal_watch(l, SIGTERM, 0, quit_cb, NULL, NULL);
    pthread_mutex_lock(&quit_mu);
    while (!quit) pthread_cond_wait(&quit_cv, &quit_mu);
    pthread_mutex_unlock(&quit_mu);
  }
  if (selftest || hog) {
    atomic_store(&hog_stop, 1);
    pthread_join(hog_th, NULL);
  }
  evl_destroy(l);  /* open connections get their last call and close */
  close(lfd);
  gvl_destroy(g);
  if (selftest) printf("evl_echo: selftest %s (%d connections served)\n",
                       ok ? "passed" : "FAILED", atomic_load(&served_conns));
  return ok ? 0 : 1;
}
