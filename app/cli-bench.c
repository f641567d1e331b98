/* cli-bench.c — `passlab-cli bench`: runs one graph as several variants on
 * a backend — none (as loaded), loops (loop and library fusion), stitch
 * (library fusion and stitching) — on the same inputs, and prints each
 * variant's kernels, launches, median time, effective bandwidth and
 * speed-up over the first variant, and its error against the reference
 * interpreter. */
#define G_LOG_DOMAIN "passlab"

#include "cli-exec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "builtin-passes.h"
#include "cpu-machine.h"
#include "interp.h"
#include "pass.h"
#include "schedule.h"
#include "stats.h"
#include "text-format.h"

typedef struct {
  const char *name;
  const char *passes;   /* NULL: none */
  const char *needs;    /* a pass that must be registered */
  const char *param;    /* NULL or one pass parameter, "pass.key=value" */
} Variant;

/* The layout variants (seed 003) fuse after planning, as a real pipeline
 * would: the planned plan against each single-layout plan and against no
 * planning at all ("fused": every conv NCHW through im2col + GEMM). */
#define LAYOUT_PIPELINE "simplify,layout,fuse-library,fuse-loops"
static const Variant variants[] = {
  { "none", NULL, NULL, NULL },
  { "loops", "simplify,decompose,reshape-sink,fuse-library,fuse-loops", "fuse-loops", NULL },
  { "stitch", "simplify,decompose,reshape-sink,fuse-library,stitch", "stitch", NULL },
  { "fused", "simplify,fuse-library,fuse-loops", "fuse-loops", NULL },
  { "layout", LAYOUT_PIPELINE, "layout", NULL },
  { "nchw", LAYOUT_PIPELINE, "layout", "layout.force=NCHW" },
  { "nhwc", LAYOUT_PIPELINE, "layout", "layout.force=NHWC" },
  { "chwn", LAYOUT_PIPELINE, "layout", "layout.force=CHWN" },
};

typedef struct {
  const char *name;
  bool        ran;
  char       *skipped;
  int         kernels, launches;
  double      ms;
  int64_t     moved, peak;
  double      error;
  bool        emulated;   /* ran on the CUDA emulator */
  PlGraph    *graph;      /* the variant's graph: the executable refers to it */
  PlExecutable *exe;
  GArray     *round_ms;   /* double: the median of each round, in round order */
  GArray     *round_steal; /* double: the steal time (ms, all CPUs) during each round, -1: unknown */
  GArray     *round_others; /* double: other processes' CPU time (ms) during each round, -1: unknown */
  int         same_as;    /* index of an earlier variant whose graph is identical, or -1 */
} Result;

static const Variant *
find_variant (const char *name)
{
  for (size_t i = 0; i < G_N_ELEMENTS (variants); i++)
    if (strcmp (variants[i].name, name) == 0)
      return &variants[i];
  return NULL;
}

/* Bytes the graph itself must move: its inputs and parameters read once,
 * its outputs written once — the same for every variant. */
static int64_t
graph_bytes (const PlGraph *g)
{
  int64_t b = pl_graph_param_bytes (g);
  for (guint i = 0; i < g->inputs->len; i++)
    b += pl_value_bytes (g->inputs->pdata[i], 1, NULL);
  for (guint i = 0; i < g->outputs->len; i++)
    b += pl_value_bytes (g->outputs->pdata[i], 1, NULL);
  return b;
}

/* Worst error of got against want over the outputs, relative to each
 * output's scale: max |a - b| / max |b| (as the pass manager's check). */
static double
worst_error (PlTensor **got, PlTensor **want, int n)
{
  double w = 0;
  for (int i = 0; i < n; i++)
    {
      if (got[i]->numel != want[i]->numel)
        return INFINITY;
      double diff = 0, scale = 0;
      for (int64_t k = 0; k < want[i]->numel; k++)
        {
          double a = pl_tensor_get_f64 (got[i], k), b = pl_tensor_get_f64 (want[i], k);
          diff = MAX (diff, fabs (a - b));
          scale = MAX (scale, fabs (b));
        }
      w = MAX (w, diff / MAX (scale, 1e-30));
    }
  return w;
}

/* What took our CPUs around a round: the hypervisor (steal time) and the
 * other processes of this machine (a build, a test), cumulative readings. */
typedef struct {
  double steal_ms, others_ms;
} Readings;

static Readings
readings_now (void)
{
  return (Readings) { pl_cpu_steal_ms (), pl_cpu_others_ms () };
}

static void
record_round (Result *r, const Readings *before)
{
  Readings after = readings_now ();
  double steal = before->steal_ms >= 0 && after.steal_ms >= 0 ? after.steal_ms - before->steal_ms : -1;
  double others = before->others_ms >= 0 && after.others_ms >= 0 ? MAX (after.others_ms - before->others_ms, 0) : -1;
  g_array_append_val (r->round_steal, steal);
  g_array_append_val (r->round_others, others);
}

/* Applies the variant's passes, compiles it and runs it once (its first
 * round): counts, bytes, peak and error against the reference. */
static bool
prepare_variant (const PlGraph *g, const Variant *v, char *const *extra, const PlCompileOptions *copt, int repeat,
                 PlTensor **inputs, PlTensor **want, Result *r, GError **error)
{
  g_autoptr (GPtrArray) params = g_ptr_array_new ();
  g_auto (GStrv) names = g_strsplit (v->passes ? v->passes : "", ",", -1);
  /* the layout pass plans for the backend it runs on (a --param may still say otherwise) */
  g_autofree char *plan_for = g_strdup_printf ("layout.backend=%s", pl_backend_name (copt->backend));
  if (g_strv_contains ((const char *const *) names, "layout"))
    g_ptr_array_add (params, plan_for);
  if (v->param)
    g_ptr_array_add (params, (gpointer) v->param);
  /* --param entries for passes this variant runs */
  for (int i = 0; extra && extra[i]; i++)
    {
      g_autofree char *pass = g_strndup (extra[i], strcspn (extra[i], "."));
      if (g_strv_contains ((const char *const *) names, pass))
        g_ptr_array_add (params, extra[i]);
    }
  g_ptr_array_add (params, NULL);
  PlGraph *x = r->graph = pl_cli_apply_passes (g, v->passes, (char *const *) params->pdata, error);
  if (!x)
    return false;
  r->exe = pl_executable_new (x, copt, error);
  if (!r->exe)
    return false;
  g_autoptr (PlRunReport) rep = NULL;
  Readings before = readings_now ();
  PlTensor **outs = pl_executable_run (r->exe, inputs, repeat, &rep, error);
  if (!outs)
    return false;
  r->round_steal = g_array_new (FALSE, FALSE, sizeof (double));
  r->round_others = g_array_new (FALSE, FALSE, sizeof (double));
  record_round (r, &before);
  r->ran = true;
  r->kernels = rep->n_kernels;
  r->launches = 0;
  for (int i = 0; i < rep->n_kernels; i++)
    r->launches += rep->kernels[i].n_launches;
  r->round_ms = g_array_new (FALSE, FALSE, sizeof (double));
  g_array_append_val (r->round_ms, rep->total_ms);
  r->moved = pl_cli_report_bytes (rep);
  r->peak = rep->peak_bytes;
  r->emulated = rep->emulated;
  r->error = want ? worst_error (outs, want, (int) g->outputs->len) : NAN;
  pl_interp_free_outputs (outs, (int) g->outputs->len);
  return true;
}

/* One more round of timed runs. */
static bool
time_variant (const PlGraph *g, Result *r, int repeat, PlTensor **inputs, GError **error)
{
  g_autoptr (PlRunReport) rep = NULL;
  Readings before = readings_now ();
  PlTensor **outs = pl_executable_run (r->exe, inputs, repeat, &rep, error);
  if (!outs)
    return false;
  record_round (r, &before);
  g_array_append_val (r->round_ms, rep->total_ms);
  pl_interp_free_outputs (outs, (int) g->outputs->len);
  return true;
}

/* Two-sided sign test: the chance of a split at least as uneven as `wins`
 * of `n` if neither variant were faster (ties count as half a round each
 * way, so they are left out of n by the caller). */
static double
sign_test (int wins, int n)
{
  if (n == 0)
    return 1;
  int k = MAX (wins, n - wins);
  double tail = 0, c = 1;   /* c = C(n, i) / 2^n, built up in doubles */
  for (int i = 0; i < n; i++)
    c *= 0.5;
  for (int i = 0; i <= n; i++)
    {
      if (i >= k)
        tail += c;
      c = c * (n - i) / (i + 1);
    }
  return MIN (1.0, 2 * tail);
}

static int
find_result (const Result *res, int n, const char *name)
{
  for (int i = 0; i < n; i++)
    if (res[i].ran && strcmp (res[i].name, name) == 0)
      return i;
  return -1;
}

/* Round by round, the variant `ref` against every other: in how many rounds
 * it was faster, the ratios other/ref (median and range) and the sign
 * test. A median of medians hides whether a 1% lead is a lead at all; the
 * rounds are paired (the same load hits both), so this says. */
static void
print_paired (const Result *res, int n, int ref)
{
  const Result *a = &res[ref];
  guint rounds = a->round_ms->len;
  printf ("paired rounds, %s against each variant (ratio = variant's time / %s's; > 1: %s faster):\n", a->name,
          a->name, a->name);
  for (int i = 0; i < n; i++)
    {
      const Result *b = &res[i];
      if (i == ref || !b->ran || b->round_ms->len != rounds)
        continue;
      g_autofree double *ratio = g_new (double, rounds);
      int wins = 0, decided = 0;
      for (guint k = 0; k < rounds; k++)
        {
          double ta = g_array_index (a->round_ms, double, k), tb = g_array_index (b->round_ms, double, k);
          ratio[k] = ta > 0 ? tb / ta : 0;
          if (ta != tb)
            {
              decided++;
              wins += ta < tb;
            }
        }
      qsort (ratio, rounds, sizeof *ratio, pl_compare_doubles);
      double med = rounds % 2 ? ratio[rounds / 2] : 0.5 * (ratio[rounds / 2 - 1] + ratio[rounds / 2]);
      printf ("  vs %-8s %s faster in %d of %u rounds, ratio median %.3f (%.3f .. %.3f), sign test p = %.2g%s\n",
              b->name, a->name, wins, rounds, med, ratio[0], ratio[rounds - 1], sign_test (wins, decided),
              a->same_as == i || b->same_as == ref ? " (the same graph)" : "");
    }
}

/* On a virtual machine the hypervisor may run other tenants on our CPUs
 * (steal time); a parallel run then waits for its slowest thread. Say how
 * much of that there was, so a reader knows what the times went through. */
static void
print_taken (const Result *res, int n, bool others, const char *what)
{
  double total = 0;
  int rounds = 0, hit = 0;
  for (int i = 0; i < n; i++)
    for (guint k = 0; res[i].ran && k < res[i].round_steal->len; k++)
      {
        double s = g_array_index (others ? res[i].round_others : res[i].round_steal, double, k);
        if (s < 0)
          return;   /* this machine does not say */
        total += s;
        rounds++;
        hit += s > (others ? 20 : 0);   /* others: over two ticks (daemons wake now and then) */
      }
  if (rounds > 0)
    printf ("%s: %.0f ms in all, in %d of %d variant rounds\n", what, total, hit, rounds);
}

static void
print_steal (const Result *res, int n)
{
  print_taken (res, n, false, "steal time (the hypervisor running others on our CPUs)");
  print_taken (res, n, true, "CPU time of other processes on this machine (over 20 ms a round)");
}

/* The variant's time: the median of its rounds' medians. */
static void
finish_variant (Result *r)
{
  if (!r->round_ms)
    return;
  guint k = r->round_ms->len;
  g_autofree double *m = g_memdup2 (r->round_ms->data, k * sizeof (double));
  r->ms = pl_median_sort (m, (int) k);
}

static char *
report_json (const char *file, PlBackend backend, int64_t gbytes, const Result *res, int n)
{
  GString *s = g_string_new (NULL);
  g_autofree char *f = g_strescape (file, NULL);
  g_string_append_printf (s, "{\"file\": \"%s\", \"backend\": \"%s\", \"graph_bytes\": %" G_GINT64_FORMAT
                          ", \"variants\": [", f, pl_backend_name (backend), gbytes);
  double base = 0;
  for (int i = 0; i < n; i++)
    {
      const Result *r = &res[i];
      if (r->ran && base == 0)
        base = r->ms;
      g_string_append_printf (s, "%s\n  {\"name\": \"%s\"", i ? "," : "", r->name);
      if (!r->ran)
        {
          g_autofree char *why = g_strescape (r->skipped ? r->skipped : "", NULL);
          g_string_append_printf (s, ", \"skipped\": \"%s\"}", why);
          continue;
        }
      char ms[G_ASCII_DTOSTR_BUF_SIZE], gb[G_ASCII_DTOSTR_BUF_SIZE], sp[G_ASCII_DTOSTR_BUF_SIZE], er[G_ASCII_DTOSTR_BUF_SIZE];
      g_ascii_formatd (ms, sizeof ms, "%.6g", r->ms);
      g_ascii_formatd (gb, sizeof gb, "%.6g", r->ms > 0 ? (double) gbytes / (r->ms * 1e6) : 0);
      g_ascii_formatd (sp, sizeof sp, "%.4g", r->ms > 0 ? base / r->ms : 0);
      g_ascii_formatd (er, sizeof er, "%.3g", isfinite (r->error) ? r->error : -1);
      if (r->same_as >= 0)
        g_string_append_printf (s, ", \"same_graph_as\": \"%s\"", res[r->same_as].name);
      g_string_append_printf (s, ", \"kernels\": %d, \"launches\": %d, \"ms\": %s, \"gbps\": %s, \"speedup\": %s, "
                              "\"moved_bytes\": %" G_GINT64_FORMAT ", \"peak_bytes\": %" G_GINT64_FORMAT
                              ", \"max_error\": %s, \"round_ms\": [", r->kernels, r->launches, ms, gb, sp, r->moved, r->peak, er);
      for (guint k = 0; k < r->round_ms->len; k++)
        {
          char t[G_ASCII_DTOSTR_BUF_SIZE];
          g_ascii_formatd (t, sizeof t, "%.6g", g_array_index (r->round_ms, double, k));
          g_string_append_printf (s, "%s%s", k ? ", " : "", t);
        }
      g_string_append (s, "], \"round_steal_ms\": [");
      for (guint k = 0; k < r->round_steal->len; k++)
        g_string_append_printf (s, "%s%.0f", k ? ", " : "", g_array_index (r->round_steal, double, k));
      g_string_append (s, "], \"round_others_ms\": [");
      for (guint k = 0; k < r->round_others->len; k++)
        g_string_append_printf (s, "%s%.0f", k ? ", " : "", g_array_index (r->round_others, double, k));
      g_string_append (s, "]}");
    }
  g_string_append (s, "]}\n");
  return g_string_free (s, FALSE);
}

int
pl_cli_bench (int argc, char **argv)
{
  g_autofree char *backend_name = NULL, *variant_list = NULL, *report_path = NULL, *cache_dir = NULL, *paired = NULL;
  g_auto (GStrv) params = NULL;
  int repeat = 10, threads = 0, rounds = 1;
  gint64 seed = 1, sym_size = 1;
  gboolean no_check = FALSE;
  const GOptionEntry entries[] = {
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &backend_name, "cpu (default), cuda or reference", "B" },
    { "variants", 'v', 0, G_OPTION_ARG_STRING, &variant_list,
      "Comma-separated: none, loops, stitch (default: all three); fused, layout, nchw, nhwc, chwn "
      "(no layout planning, the layout pass's plan, every conv in one layout)", "LIST" },
    { "repeat", 'n', 0, G_OPTION_ARG_INT, &repeat, "Timed runs per variant and round after one warm-up (default 10)", "N" },
    { "rounds", 0, 0, G_OPTION_ARG_INT, &rounds,
      "Rounds over all variants, interleaved so load drifts hit each alike; the time is the median of the rounds' medians (default 1)", "R" },
    { "paired", 0, 0, G_OPTION_ARG_STRING, &paired,
      "With --rounds >= 2: compare this variant with every other round by round (default: layout, when it runs)", "VARIANT" },
    { "param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &params, "pass.key=value for the variants that run that pass (repeatable)", "P" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &threads, "cpu: OpenMP threads (default: all cores)", "N" },
    { "random-inputs", 'r', 0, G_OPTION_ARG_INT64, &seed, "Seed of the random inputs (default 1)", "SEED" },
    { "sym-size", 's', 0, G_OPTION_ARG_INT64, &sym_size, "Size of symbolic dims of the inputs (default 1)", "N" },
    { "no-check", 0, 0, G_OPTION_ARG_NONE, &no_check, "Skip the comparison with the reference interpreter", NULL },
    { "report", 0, 0, G_OPTION_ARG_FILENAME, &report_path, "Write the results as JSON", "OUT.json" },
    { "cache-dir", 0, 0, G_OPTION_ARG_FILENAME, &cache_dir, "cpu: compiled-kernel cache", "DIR" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("FILE",
    "Runs the graph unfused, loop-fused and stitched on one backend with the\n"
    "same inputs and prints each variant's kernels, median time, effective\n"
    "bandwidth (the graph's inputs, parameters and outputs moved once) and\n"
    "speed-up over the first variant.", entries);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  if (argc != 2)
    return pl_cli_fail ("bench: expected one FILE (see 'passlab-cli bench --help')");
  PlBackend backend = PL_BACKEND_CPU;
  if (backend_name && !pl_backend_from_name (backend_name, &backend))
    return pl_cli_fail ("unknown backend '%s' (reference, cpu or cuda)", backend_name);
  if (repeat < 1 || repeat > 100000)
    return pl_cli_fail ("--repeat takes 1 to 100000");
  if (rounds < 1 || rounds > 1000)
    return pl_cli_fail ("--rounds takes 1 to 1000");
  if (seed < 0 || seed > G_MAXUINT32 || sym_size < 1)
    return pl_cli_fail ("bad --random-inputs or --sym-size");
  if (threads < 0 || threads > PL_CLI_MAX_THREADS)
    return pl_cli_fail ("--threads takes 0 (all cores) to %d", PL_CLI_MAX_THREADS);
  pl_passes_init ();

  g_auto (GStrv) names = g_strsplit (variant_list ? variant_list : "none,loops,stitch", ",", -1);
  int n = (int) g_strv_length (names);
  if (n == 0)
    return pl_cli_fail ("--variants is empty");
  for (int i = 0; i < n; i++)
    {
      g_strstrip (names[i]);
      if (!find_variant (names[i]))
        return pl_cli_fail ("unknown variant '%s' (none, loops, stitch, fused, layout, nchw, nhwc, chwn)", names[i]);
    }

  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_cli_load (argv[1], &error);
  if (!g)
    return pl_cli_fail_error (error);
  PlTensor **inputs = pl_random_inputs (g, (guint32) seed, sym_size, &error);
  if (!inputs && g->inputs->len > 0)
    return pl_cli_fail_error (error);
  PlTensor **want = NULL;
  if (!no_check)
    {
      want = pl_interp_run (g, inputs, NULL, &error);
      if (!want)
        {
          pl_interp_free_outputs (inputs, (int) g->inputs->len);
          return pl_cli_fail_error (error);
        }
    }

  PlCompileOptions copt;
  pl_compile_options_init (&copt, backend);
  copt.cache_dir = cache_dir;
  copt.threads = threads;
  g_autofree Result *res = g_new0 (Result, n);
  int status = 0;
  for (int i = 0; i < n && status == 0; i++)
    {
      const Variant *v = find_variant (names[i]);
      res[i].name = v->name;
      if (v->needs && !pl_pass_find (v->needs))
        {
          res[i].skipped = g_strdup_printf ("no '%s' pass in this build", v->needs);
          continue;
        }
      if (!prepare_variant (g, v, params, &copt, repeat, inputs, want, &res[i], &error))
        status = pl_cli_fail ("variant %s: %s", v->name, error->message);
    }
  /* Identical graphs (the plan may be a single-layout plan) are named so:
   * their difference in time is the noise of the machine. */
  g_autofree char **text = g_new0 (char *, n);
  for (int i = 0; i < n; i++)
    {
      res[i].same_as = -1;
      if (!res[i].ran)
        continue;
      text[i] = pl_text_print (res[i].graph);
      for (int j = 0; j < i && res[i].same_as < 0; j++)
        if (text[j] && strcmp (text[i], text[j]) == 0)
          res[i].same_as = j;
    }
  for (int i = 0; i < n; i++)
    g_free (text[i]);
  /* Odd rounds run the variants in reverse, so no variant always follows
   * the same one (whose threads may still spin, whose data may still sit
   * in the caches). */
  for (int k = 1; k < rounds && status == 0; k++)
    for (int j = 0; j < n && status == 0; j++)
      {
        int i = k % 2 ? n - 1 - j : j;
        if (res[i].ran && !time_variant (g, &res[i], repeat, inputs, &error))
          status = pl_cli_fail ("variant %s: %s", res[i].name, error->message);
      }
  for (int i = 0; i < n; i++)
    finish_variant (&res[i]);
  int paired_ref = find_result (res, n, paired ? paired : "layout");
  if (paired && paired_ref < 0 && status == 0)
    status = pl_cli_fail ("--paired: no variant '%s' ran", paired);
  for (int i = 0; i < n; i++)
    {
      if (res[i].exe)
        pl_executable_free (res[i].exe);
      if (res[i].graph)
        pl_graph_free (res[i].graph);
    }
  pl_interp_free_outputs (inputs, (int) g->inputs->len);
  if (want)
    pl_interp_free_outputs (want, (int) g->outputs->len);

  int64_t gbytes = graph_bytes (g);
  g_autofree char *gb = pl_cli_human_bytes (gbytes);
  printf ("%s on %s: %d timed runs per variant in each of %d round(s); the graph moves %s (inputs + parameters + outputs once)\n",
          argv[1], pl_backend_name (backend), repeat, rounds, gb);
  for (int i = 0; i < n; i++)
    if (res[i].emulated)
      {
        printf ("cuda is the CUDA emulator here (PASSLAB_CUDA=emulator): the errors are real, the times are the "
                "CPU's and say nothing about a GPU\n");
        break;
      }
  printf ("%-8s %8s %9s %12s %10s %9s %12s %12s %10s\n", "variant", "kernels", "launches", "median ms", "GB/s",
          "speed-up", "moved", "peak mem", "max error");
  double base = 0;
  for (int i = 0; i < n; i++)
    {
      Result *r = &res[i];
      if (!r->ran)
        {
          printf ("%-8s skipped: %s\n", r->name, r->skipped ? r->skipped : "failed");
          continue;
        }
      if (base == 0)
        base = r->ms;
      g_autofree char *moved = pl_cli_human_bytes (r->moved);
      g_autofree char *peak = pl_cli_human_bytes (r->peak);
      g_autofree char *err = isfinite (r->error) ? g_strdup_printf ("%.2g", r->error) : g_strdup ("-");
      printf ("%-8s %8d %9d %12.4f %10.2f %8.2fx %12s %12s %10s%s%s\n", r->name, r->kernels, r->launches, r->ms,
              r->ms > 0 ? (double) gbytes / (r->ms * 1e6) : 0, r->ms > 0 ? base / r->ms : 0, moved, peak, err,
              r->same_as >= 0 ? "   the same graph as " : "", r->same_as >= 0 ? res[r->same_as].name : "");
    }
  if (status == 0)
    print_steal (res, n);
  if (paired_ref >= 0 && rounds >= 2 && status == 0)
    print_paired (res, n, paired_ref);
  if (report_path && status == 0)
    {
      g_autofree char *json = report_json (argv[1], backend, gbytes, res, n);
      if (!g_file_set_contents (report_path, json, -1, &error))
        status = pl_cli_fail_error (error);
    }
  for (int i = 0; i < n; i++)
    {
      g_free (res[i].skipped);
      if (res[i].round_ms)
        g_array_unref (res[i].round_ms);
      if (res[i].round_steal)
        g_array_unref (res[i].round_steal);
      if (res[i].round_others)
        g_array_unref (res[i].round_others);
    }
  return status;
}
