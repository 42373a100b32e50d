/* SPDX-License-Identifier: MIT */
/*
 * benchreport -- turns benchmark output into a table, a CSV and a chart.
 *
 *   benchreport [--md FILE] [--csv FILE] [--plot DIR] [--expect FILE] [--runs N]
 *               [--ref VARIANT] [--note TEXT] INPUT...
 *
 * Input lines (anything else is ignored, so programs may print freely):
 *   RESULT <bench> <variant> <metric> <value>     one figure of one run
 *   META <bench> <metric> <unit> <low|high|none> <text...>
 *   INFO <key> <text...>                          header lines, in order
 *   DONE <case> <variant> <run>                   a case finished
 *   CHART <bench> <metric>                        put this metric in the chart
 * Output: medians over the runs with min-max and the ratio against the
 * reference variant (gvloop), as Markdown; a CSV in the seed's shape
 * (benchmark, then one column per variant); gnuplot data and a script.
 * --note TEXT heads the table and the chart (run.sh --quick: a smoke test's
 * figures are not measurements, and must say so where they are seen).
 *
 * A variant named `name@tag` is `name` measured in another pass of run.sh
 * (@1cpu: pinned to one CPU; @load1, @load2: beside 1 and 2 CPU-bound
 * processes).  The Markdown has a section per kind of pass: the summary
 * (untagged variants, plus gvloop@1cpu as the one-CPU column), the floor
 * (every x_floor row and the floor itself), one CPU (every @1cpu variant,
 * ratios against gvloop@1cpu) and a loaded machine (every row measured
 * under load, ratios against nogvl under the same load).  Ratios are always
 * taken within one pass.  The chart shows untagged variants only.
 * --expect FILE (the output of `gvlbench --list`): exit 1 unless every case
 * listed finished for every variant listed, --runs times.  Exit 1 also when
 * a RESULT line does not parse or no RESULT was seen.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME 64
#define MAXV 64      /* variants */
#define MAXM 512     /* bench/metric rows */

typedef struct {
  char bench[NAME], metric[NAME], unit[NAME], better[NAME];
  char text[256];
  int chart;             /* 1 + position asked by a CHART line, 0 none */
  int loaded;            /* md_loaded: has a figure measured under load */
  double *vals[MAXV];
  int nvals[MAXV], cap[MAXV];
} row_t;

typedef struct {
  char name[NAME];
  char design[256];
} variant_t;

static row_t rows[MAXM];
static int nrows;
static variant_t vars[MAXV];
static int nvars;
static char **infos;
static int ninfos;
static char **dones;
static int ndones;
static int bad_lines;
static int ncharts;
static const char *ref = "gvloop";

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n);
  if (!q) {
    fprintf(stderr, "benchreport: out of memory\n");
    exit(2);
  }
  return q;
}

static char *xstrdup(const char *s) {
  char *d = xrealloc(NULL, strlen(s) + 1);
  strcpy(d, s);
  return d;
}

/* Copy with truncation (snprintf("%s") trips -Wformat-truncation). */
static void copy_str(char *dst, size_t n, const char *src) {
  size_t len = strlen(src);
  if (len >= n) len = n - 1;
  memcpy(dst, src, len);
  dst[len] = 0;
}

static int var_index(const char *name, const char *design) {
  for (int i = 0; i < nvars; i++)
    if (strcmp(vars[i].name, name) == 0) {
      if (design && !vars[i].design[0]) copy_str(vars[i].design, sizeof vars[i].design, design);
      return i;
    }
  if (nvars == MAXV) return -1;
  copy_str(vars[nvars].name, NAME, name);
  copy_str(vars[nvars].design, sizeof vars[nvars].design, design ? design : "");
  return nvars++;
}

static row_t *row_get(const char *bench, const char *metric) {
  for (int i = 0; i < nrows; i++)
    if (strcmp(rows[i].bench, bench) == 0 && strcmp(rows[i].metric, metric) == 0) return &rows[i];
  if (nrows == MAXM) return NULL;
  row_t *r = &rows[nrows++];
  copy_str(r->bench, NAME, bench);
  copy_str(r->metric, NAME, metric);
  snprintf(r->better, NAME, "none");
  return r;
}

static void add_value(row_t *r, int v, double x) {
  if (r->nvals[v] == r->cap[v]) {
    r->cap[v] = r->cap[v] ? 2 * r->cap[v] : 8;
    r->vals[v] = xrealloc(r->vals[v], (size_t)r->cap[v] * sizeof(double));
  }
  r->vals[v][r->nvals[v]++] = x;
}

/* Text after the first n space-separated words of line. */
static const char *rest_after(const char *line, int n) {
  const char *p = line;
  for (int i = 0; i < n; i++) {
    while (*p == ' ') p++;
    while (*p && *p != ' ') p++;
  }
  while (*p == ' ') p++;
  return p;
}

static void parse_result(const char *line) {
  char b[NAME], v[NAME], m[NAME], num[NAME], extra[8];
  char *end;
  int n = sscanf(line, "RESULT %63s %63s %63s %63s %7s", b, v, m, num, extra);
  double x = n >= 4 ? strtod(num, &end) : 0;
  if (n != 4 || *end || !isfinite(x)) {
    fprintf(stderr, "benchreport: bad line: %s\n", line);
    bad_lines++;
    return;
  }
  row_t *r = row_get(b, m);
  int vi = var_index(v, NULL);
  if (!r || vi < 0) {
    bad_lines++;
    return;
  }
  add_value(r, vi, x);
}

static void parse_meta(const char *line) {
  char b[NAME], m[NAME], u[NAME], better[NAME];
  if (sscanf(line, "META %63s %63s %63s %63s", b, m, u, better) != 4) return;
  row_t *r = row_get(b, m);
  if (!r) return;
  copy_str(r->unit, NAME, u);
  copy_str(r->better, NAME, better);
  copy_str(r->text, sizeof r->text, rest_after(line, 5));
}

static void parse_info(const char *line) {
  char name[NAME];
  if (sscanf(line, "INFO variant %63s", name) == 1) {
    var_index(name, rest_after(line, 3));
    return;
  }
  for (int i = 0; i < ninfos; i++)
    if (strcmp(infos[i], line + 5) == 0) return;
  infos = xrealloc(infos, (size_t)(ninfos + 1) * sizeof *infos);
  infos[ninfos++] = xstrdup(line + 5);
}

static void parse_file(const char *path) {
  FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
  if (!f) {
    perror(path);
    exit(2);
  }
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (strncmp(line, "RESULT ", 7) == 0) parse_result(line);
    else if (strncmp(line, "META ", 5) == 0) parse_meta(line);
    else if (strncmp(line, "INFO ", 5) == 0) parse_info(line);
    else if (strncmp(line, "CHART ", 6) == 0) {
      char b[NAME], m[NAME];
      row_t *r;
      if (sscanf(line, "CHART %63s %63s", b, m) == 2 && (r = row_get(b, m)) && !r->chart)
        r->chart = ++ncharts;
    } else if (strncmp(line, "DONE ", 5) == 0) {
      dones = xrealloc(dones, (size_t)(ndones + 1) * sizeof *dones);
      dones[ndones++] = xstrdup(line + 5);
    }
  }
  if (f != stdin) fclose(f);
}

/* ---- statistics ------------------------------------------------------------ */

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct {
  int n;
  double med, min, max;
} summary_t;

static summary_t summarize(row_t *r, int v) {
  summary_t s = {r->nvals[v], 0, 0, 0};
  if (!s.n) return s;
  qsort(r->vals[v], (size_t)s.n, sizeof(double), cmp_d);
  double *x = r->vals[v];
  s.med = s.n % 2 ? x[s.n / 2] : (x[s.n / 2 - 1] + x[s.n / 2]) / 2;
  s.min = x[0];
  s.max = x[s.n - 1];
  return s;
}

static void fmt_num(char *buf, size_t n, double x) {
  double a = fabs(x);
  if (x == 0) snprintf(buf, n, "0");
  else if (a >= 1e5 || a < 1e-3) snprintf(buf, n, "%.3g", x);
  else if (a >= 100) snprintf(buf, n, "%.0f", x);
  else snprintf(buf, n, "%.3g", x);
}

/* Ratio of x to the reference's median; empty when undefined. */
static void fmt_ratio(char *buf, size_t n, double x, double refmed) {
  if (refmed == 0 || !isfinite(x / refmed)) {
    snprintf(buf, n, "-");
    return;
  }
  double q = x / refmed;
  if (fabs(q) >= 100) snprintf(buf, n, "%.0fx", q);
  else snprintf(buf, n, "%.2fx", q);
}

/* The pass a variant belongs to: what follows '@' ("" for none). */
static const char *var_tag(int v) {
  const char *at = strchr(vars[v].name, '@');
  return at ? at + 1 : "";
}

/* The variant `base@tag` of v's pass (base alone when v has no tag), -1. */
static int pass_ref(int v, const char *base) {
  char want[2 * NAME + 2], rt[NAME + 4];
  const char *tag = var_tag(v);
  /* A real-time variant (gvloop-rt) is compared with the same one
   * without a GVL (nogvl-rt), when the reference is nogvl. */
  size_t bl = strcspn(vars[v].name, "@");
  if (strcmp(base, "nogvl") == 0 && bl > 3 &&
      strncmp(vars[v].name + bl - 3, "-rt", 3) == 0) {
    snprintf(rt, sizeof rt, "%s-rt", base);
    base = rt;
  }
  snprintf(want, sizeof want, "%s%s%s", base, tag[0] ? "@" : "", tag);
  for (int i = 0; i < nvars; i++)
    if (strcmp(vars[i].name, want) == 0) return i;
  return -1;
}

static int var_index_of(const char *name) {
  for (int i = 0; i < nvars; i++)
    if (strcmp(vars[i].name, name) == 0) return i;
  return -1;
}

static int var_used(int v) {
  for (int i = 0; i < nrows; i++)
    if (rows[i].nvals[v]) return 1;
  return 0;
}

static int row_used(const row_t *r) {
  for (int v = 0; v < nvars; v++)
    if (r->nvals[v]) return 1;
  return 0;
}

static int max_runs(void) {
  int m = 0;
  for (int i = 0; i < nrows; i++)
    for (int v = 0; v < nvars; v++)
      if (rows[i].nvals[v] > m) m = rows[i].nvals[v];
  return m;
}

/* ---- Markdown ------------------------------------------------------------------ */

/* META's direction: low/lower, high/higher; anything else is none. */
static const char *better_word(const row_t *r) {
  if (strcmp(r->better, "low") == 0 || strcmp(r->better, "lower") == 0) return "lower";
  if (strcmp(r->better, "high") == 0 || strcmp(r->better, "higher") == 0) return "higher";
  return "";
}

static void md_header(FILE *f) {
  fprintf(f, "## Machine and build\n\n");
  for (int i = 0; i < ninfos; i++) fprintf(f, "- %s\n", infos[i]);
  fprintf(f, "\nEach figure: median of up to %d runs; min-max in the full table.\n\n", max_runs());
  fprintf(f, "## Variants\n\n| variant | design |\n|---|---|\n");
  for (int v = 0; v < nvars; v++)
    if (var_used(v) && !var_tag(v)[0]) fprintf(f, "| %s | %s |\n", vars[v].name, vars[v].design);
  fprintf(f, "\n`<variant>@1cpu`: the same pinned to one CPU; `<variant>@load1`, `@load2`: "
             "beside 1 and 2 CPU-bound processes outside the program.\n\n");
}

/* One table: the rows `want` accepts that have a figure in some column,
 * the columns given; each cell the median and, unless the cell is the
 * reference or the row has no direction, the ratio to the median of
 * `refbase` in the same pass. */
static void md_table(FILE *f, const int *cols, int ncols, const char *refbase,
                     int (*want)(const row_t *)) {
  fprintf(f, "| benchmark | metric | better |");
  for (int k = 0; k < ncols; k++) fprintf(f, " %s |", vars[cols[k]].name);
  fprintf(f, "\n|---|---|---|");
  for (int k = 0; k < ncols; k++) fprintf(f, "---|");
  fprintf(f, "\n");
  for (int i = 0; i < nrows; i++) {
    row_t *r = &rows[i];
    int any = 0;
    for (int k = 0; k < ncols; k++) any |= r->nvals[cols[k]] != 0;
    if (!any || (want && !want(r))) continue;
    fprintf(f, "| %s | %s%s%s | %s |", r->bench, r->metric, r->unit[0] ? " " : "",
            r->unit[0] ? r->unit : "", better_word(r));
    for (int k = 0; k < ncols; k++) {
      int v = cols[k], rv = pass_ref(v, refbase);
      summary_t s = summarize(r, v);
      summary_t rs = rv >= 0 ? summarize(r, rv) : (summary_t){0, 0, 0, 0};
      char a[32], q[32];
      if (!s.n) {
        fprintf(f, " |");
        continue;
      }
      fmt_num(a, sizeof a, s.med);
      if (v != rv && rs.n && strcmp(r->better, "none") != 0) {
        fmt_ratio(q, sizeof q, s.med, rs.med);
        fprintf(f, " %s (%s) |", a, q);
      } else {
        fprintf(f, " %s |", a);
      }
    }
    fprintf(f, "\n");
  }
  fprintf(f, "\n");
}

/* Used variants whose pass is `tag`, in input order. */
static int pass_cols(const char *tag, int *cols) {
  int n = 0;
  for (int v = 0; v < nvars; v++)
    if (var_used(v) && strcmp(var_tag(v), tag) == 0) cols[n++] = v;
  return n;
}

static int is_floor_row(const row_t *r) {
  return strcmp(r->bench, "floor") == 0 || strstr(r->metric, "floor") != NULL;
}

static int want_loaded(const row_t *r) { return r->loaded && strcmp(r->better, "none") != 0; }

static void md_summary(FILE *f) {
  int cols[MAXV], n = pass_cols("", cols);
  int one = var_index_of("gvloop@1cpu");
  if (one >= 0 && var_used(one)) cols[n++] = one;
  fprintf(f, "## Summary (median; ratio vs %s)\n\n", ref);
  if (one >= 0) fprintf(f, "The last column is gvloop pinned to one CPU (the one-CPU pass).\n\n");
  md_table(f, cols, n, ref, NULL);
}

static void md_floor(FILE *f) {
  int cols[MAXV], n = 0, c1[MAXV], n1 = pass_cols("1cpu", c1), any = 0;
  n = pass_cols("", cols);
  for (int k = 0; k < n1; k++)
    if (strcmp(vars[c1[k]].name, "gvloop@1cpu") == 0 || strcmp(vars[c1[k]].name, "floor@1cpu") == 0)
      cols[n++] = c1[k];
  for (int i = 0; i < nrows; i++) any |= is_floor_row(&rows[i]) && row_used(&rows[i]);
  if (!any) return;
  fprintf(f, "## Against the floor (median; x_floor = this cost / the floor's, same run)\n\n"
             "The floor is the machine's raw handoff between two threads, no lock "
             "(bench/src/workloads_floor.c).  Targets: thread_pass x_floor <= 2 "
             "(against the fastest handoff), dispatch_latency p50_x_floor <= 2 "
             "(against a parked thread's futex wake-up).\n\n");
  md_table(f, cols, n, ref, is_floor_row);
}

static void md_onecpu(FILE *f) {
  int cols[MAXV], n = pass_cols("1cpu", cols);
  if (!n) return;
  fprintf(f, "## One CPU (every variant pinned to one CPU; ratio vs gvloop@1cpu)\n\n"
             "Targets: dispatch_latency p99 <= 100 us; thread_pass faster than every "
             "baseline.  `cpu` rows: process CPU time / wall time per case.\n\n");
  md_table(f, cols, n, ref, NULL);
}

static void md_loaded(FILE *f) {
  int cols[MAXV], n = 0;
  const char *tags[] = {"", "load1", "load2"};
  int loaded = 0;
  for (int v = 0; v < nvars; v++) loaded |= var_used(v) && strncmp(var_tag(v), "load", 4) == 0;
  if (!loaded) return;
  /* gvloop and nogvl quiet, then each load level's variants. */
  for (int t = 0; t < 3; t++) {
    int c[MAXV], m = pass_cols(tags[t], c);
    for (int k = 0; k < m; k++) {
      char base[NAME];
      copy_str(base, sizeof base, vars[c[k]].name);
      base[strcspn(base, "@")] = 0;
      if (strcmp(base, "machine") == 0) continue;   /* not a variant */
      if (t == 0 && strcmp(base, "gvloop") != 0 && strcmp(base, "nogvl") != 0 &&
          strcmp(base, "gvloop-rt") != 0 && strcmp(base, "nogvl-rt") != 0)
        continue;
      cols[n++] = c[k];
    }
  }
  fprintf(f, "## A loaded machine (median; ratio vs nogvl under the same load)\n\n"
             "@load1, @load2: with 1 and 2 CPU-bound processes running beside the program "
             "(started and stopped by run.sh); the first two columns are the same rows "
             "without that load.  Target: gvloop's p99 <= 3x nogvl's under the same "
             "load (dispatch_latency: due_p99_us, which includes the event thread's "
             "own wake-up).  `-rt`: the event or loop thread in SCHED_FIFO on a GVL "
             "created with GVL_F_LEND (evloop.h, \"Scheduling\"), against nogvl-rt, "
             "the same thread in SCHED_FIFO beside a CPU-bound thread that takes no "
             "GVL.\n\n");
  /* Only the rows measured under load. */
  int lc[MAXV], nl = 0;
  for (int k = 0; k < n; k++)
    if (var_tag(cols[k])[0]) lc[nl++] = cols[k];
  for (int i = 0; i < nrows; i++) {
    int any = 0;
    for (int k = 0; k < nl; k++) any |= rows[i].nvals[lc[k]] != 0;
    rows[i].loaded = any;
  }
  md_table(f, cols, n, "nogvl", want_loaded);
}

static void md_full(FILE *f) {
  fprintf(f, "## All figures\n\n| benchmark | metric | variant | median | min-max | runs | vs %s |\n"
             "|---|---|---|---|---|---|---|\n", ref);
  for (int i = 0; i < nrows; i++) {
    row_t *r = &rows[i];
    for (int v = 0; v < nvars; v++) {
      int rv = pass_ref(v, ref); /* gvloop of the same pass */
      summary_t rs = rv >= 0 ? summarize(r, rv) : (summary_t){0, 0, 0, 0};
      summary_t s = summarize(r, v);
      if (!s.n) continue;
      char a[32], lo[32], hi[32], q[32];
      fmt_num(a, sizeof a, s.med);
      fmt_num(lo, sizeof lo, s.min);
      fmt_num(hi, sizeof hi, s.max);
      if (rs.n) fmt_ratio(q, sizeof q, s.med, rs.med);
      else snprintf(q, sizeof q, "-");
      fprintf(f, "| %s | %s | %s | %s | %s-%s | %d | %s |\n", r->bench, r->metric, vars[v].name,
              a, lo, hi, s.n, q);
    }
  }
  fprintf(f, "\n## Metrics\n\n| benchmark | metric | unit | better | meaning |\n|---|---|---|---|---|\n");
  for (int i = 0; i < nrows; i++)
    if (row_used(&rows[i]))
      fprintf(f, "| %s | %s | %s | %s | %s |\n", rows[i].bench, rows[i].metric, rows[i].unit,
              better_word(&rows[i]), rows[i].text);
}

static const char *note;   /* --note */

static void write_md(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(2);
  }
  if (note) fprintf(f, "> **%s**\n\n", note);
  md_header(f);
  md_summary(f);
  md_floor(f);
  md_onecpu(f);
  md_loaded(f);
  md_full(f);
  fclose(f);
}

/* ---- CSV ---------------------------------------------------------------------- */

static void write_csv(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(2);
  }
  fprintf(f, "benchmark");
  for (int v = 0; v < nvars; v++)
    if (var_used(v)) fprintf(f, ",%s", vars[v].name);
  fprintf(f, "\n");
  for (int i = 0; i < nrows; i++) {
    if (!row_used(&rows[i])) continue;
    fprintf(f, "%s_%s", rows[i].bench, rows[i].metric);
    for (int v = 0; v < nvars; v++) {
      if (!var_used(v)) continue;
      summary_t s = summarize(&rows[i], v);
      if (s.n) fprintf(f, ",%.6g", s.med);
      else fprintf(f, ",");
    }
    fprintf(f, "\n");
  }
  fclose(f);
}

/* ---- gnuplot -------------------------------------------------------------------
 * One panel per charted metric: the metrics named by CHART lines, in that
 * order, then for every other benchmark its first metric that has a
 * direction.  A bar per variant at the median with a min-max error bar; log
 * scale when the medians span more than 30x. */

static int bench_charted(const char *bench) {
  for (int i = 0; i < nrows; i++)
    if (rows[i].chart && strcmp(rows[i].bench, bench) == 0) return 1;
  return 0;
}

static int chart_rows(int *out) {
  int n = 0;
  for (int c = 1; c <= ncharts; c++)
    for (int i = 0; i < nrows; i++)
      if (rows[i].chart == c && row_used(&rows[i])) out[n++] = i;
  for (int i = 0; i < nrows; i++) {
    if (!row_used(&rows[i]) || strcmp(rows[i].better, "none") == 0) continue;
    if (bench_charted(rows[i].bench)) continue;
    int seen = 0;
    for (int k = 0; k < n; k++)
      if (strcmp(rows[out[k]].bench, rows[i].bench) == 0) seen = 1;
    if (!seen) out[n++] = i;
  }
  return n;
}

static int write_panel_data(const char *dir, int idx, row_t *r, int *logscale, int *negative) {
  char path[1024];
  snprintf(path, sizeof path, "%s/panel%02d.dat", dir, idx);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(2);
  }
  double lo = INFINITY, hi = 0;
  int n = 0;
  for (int v = 0; v < nvars; v++) {
    summary_t s = summarize(r, v);
    if (!s.n || var_tag(v)[0]) continue;  /* the chart: the main pass only */
    /* Column 5: bar colour, the reference variant stands out. */
    int colour = strcmp(vars[v].name, ref) == 0 ? 0xd95f02 : 0x4a7ab5;
    fprintf(f, "\"%s\" %.6g %.6g %.6g %d\n", vars[v].name, s.med, s.min, s.max, colour);
    if (s.med < lo) lo = s.med;
    if (s.med > hi) hi = s.med;
    if (s.min < 0) *negative = 1;
    n++;
  }
  fclose(f);
  /* A zero or negative median cannot sit on a log axis: stay linear. */
  *logscale = n && lo > 0 && hi / lo > 30;
  return n;
}

static void write_plot(const char *dir) {
  int sel[MAXM], n = chart_rows(sel), cols = 3, rws = (n + cols - 1) / cols;
  char path[1024];
  snprintf(path, sizeof path, "%s/chart.gp", dir);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(2);
  }
  /* The note goes in double quotes: no quote or backslash may end them. */
  char head[600] = "";
  if (note) {
    size_t o = 0;
    for (const char *p = note; *p && o + 3 < sizeof head; p++)
      head[o++] = *p == '"' || *p == '\\' ? '\'' : *p;
    memcpy(head + o, "\\n", 3);
  }
  fprintf(f, "# generated by benchreport; run from this directory: gnuplot chart.gp\n"
             "set terminal pngcairo size %d,%d font 'DejaVu Sans,9'\n"
             "set output 'results.png'\n"
             "set multiplot layout %d,%d title \"%sgvloop benchmarks: median of runs, bars = min-max\\n\" "
             "font ',12'%s\n"
             "set termoption noenhanced\n"
             "set style fill solid 0.6 border -1\nset boxwidth 0.7\nset grid ytics\n"
             "set xtics rotate by -35 left nomirror\nunset key\nset bmargin 5\n",
          cols * 520, rws * 330 + (note ? 90 : 60), rws ? rws : 1, cols, head,
          note ? " textcolor rgb '#b00000'" : "");
  for (int k = 0; k < n; k++) {
    row_t *r = &rows[sel[k]];
    int logscale, negative = 0;
    write_panel_data(dir, k, r, &logscale, &negative);
    fprintf(f, "set title '%s: %s (%s%s%s%s)%s'\n", r->bench, r->metric, r->unit,
            better_word(r)[0] ? ", " : "", better_word(r), better_word(r)[0] ? " is better" : "",
            logscale ? ", log scale" : "");
    fprintf(f, logscale ? "set logscale y\nset yrange [*:*]\n"
                        : negative ? "unset logscale y\nset yrange [*:*]\n"
                                   : "unset logscale y\nset yrange [0:*]\n");
    /* On a log axis every median is positive; a run at zero only shortens
     * its error bar to the median. */
    const char *y = "2";
    const char *lo = logscale ? "($3>0?$3:$2)" : "3";
    fprintf(f, "plot 'panel%02d.dat' using 0:%s:5:xtic(1) with boxes lc rgb variable, \\\n"
               "     '' using 0:%s:%s:4 with yerrorbars lc rgb '#202020' pt 0\n",
            k, y, y, lo);
  }
  fprintf(f, "unset multiplot\n");
  fclose(f);
}

/* ---- expectations -------------------------------------------------------------- */

static int done_count(const char *c, const char *v) {
  int n = 0;
  char want[2 * NAME + 2];
  snprintf(want, sizeof want, "%s %s ", c, v);
  for (int i = 0; i < ndones; i++)
    if (strncmp(dones[i], want, strlen(want)) == 0) n++;
  return n;
}

static int check_expect(const char *path, int runs) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return 1;
  }
  char line[1024];
  int missing = 0;
  while (fgets(line, sizeof line, f)) {
    char *save = NULL, *c = strtok_r(line, " \r\n", &save), *v;
    if (!c) continue;
    while ((v = strtok_r(NULL, " \r\n", &save)) != NULL) {
      int n = done_count(c, v);
      if (n < runs) {
        fprintf(stderr, "benchreport: case %s variant %s ran %d of %d times\n", c, v, n, runs);
        missing++;
      }
    }
  }
  fclose(f);
  return missing != 0;
}

int main(int argc, char **argv) {
  const char *md = NULL, *csv = NULL, *plot = NULL, *expect = NULL;
  int runs = 1, ninputs = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--md") == 0 && i + 1 < argc) md = argv[++i];
    else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) csv = argv[++i];
    else if (strcmp(argv[i], "--plot") == 0 && i + 1 < argc) plot = argv[++i];
    else if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) expect = argv[++i];
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--ref") == 0 && i + 1 < argc) ref = argv[++i];
    else if (strcmp(argv[i], "--note") == 0 && i + 1 < argc) note = argv[++i];
    else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "usage: benchreport [--md F] [--csv F] [--plot DIR] [--expect F] "
                      "[--runs N] [--ref V] [--note TEXT] INPUT...\n");
      return 2;
    } else {
      parse_file(argv[i]);
      ninputs++;
    }
  }
  if (!ninputs) parse_file("-");
  int rc = 0;
  if (bad_lines) rc = 1;
  if (nrows == 0) {
    fprintf(stderr, "benchreport: no RESULT lines\n");
    rc = 1;
  }
  if (expect && check_expect(expect, runs)) rc = 1;
  if (md) write_md(md);
  if (csv) write_csv(csv);
  if (plot) write_plot(plot);
  return rc;
}
