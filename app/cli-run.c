/* cli-run.c — `passlab-cli run`: applies a pass pipeline (given with
 * --passes, or by a Lua script with --script), prints one row per
 * step (what changed, the cost figures, the numerical check), each pass's
 * report, and optionally dumps every version and a JSON report; and
 * `passlab-cli passes`: lists the passes and their parameters. */
#define G_LOG_DOMAIN "passlab"

#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

#include <glib/gstdio.h>

#include "dot-export.h"
#include "pass-manager.h"
#include "pl-lua.h"
#include "text-format.h"

/* "12.3 MiB" style sizes, for tables people read. */
static char *
human_bytes (int64_t b)
{
  const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  double v = (double) b;
  int u = 0;
  while (v >= 1024 && u < 4)
    v /= 1024, u++;
  return u == 0 ? g_strdup_printf ("%" G_GINT64_FORMAT " B", b) : g_strdup_printf ("%.1f %s", v, units[u]);
}

static void
print_table (const PlHistory *h)
{
  printf ("%-4s %-16s %-7s %7s %7s %11s %11s %11s %9s %10s\n", "step", "pass", "changed", "nodes", "kernels",
          "reshape", "moved", "peak", "time ms", "max error");
  for (int i = 0; i < pl_history_n_steps (h); i++)
    {
      const PlStep *s = pl_history_step (h, i);
      g_autofree char *rb = human_bytes (s->stats.reshape_bytes);
      g_autofree char *mb = human_bytes (s->stats.bytes_moved);
      g_autofree char *pb = human_bytes (s->stats.peak_bytes);
      g_autofree char *err = !s->checked ? g_strdup ("-")
                             : isfinite (s->max_rel_error) ? g_strdup_printf ("%.2g%s", s->max_rel_error,
                                                                             s->check_failed ? " !" : "")
                             : g_strdup ("FAILED");
      printf ("%-4d %-16s %-7s %7" G_GINT64_FORMAT " %7" G_GINT64_FORMAT " %11s %11s %11s %9.2f %10s\n", i,
              s->pass_name ? s->pass_name : "(input)", i == 0 ? "" : s->changed ? "yes" : "no", s->stats.nodes,
              s->stats.kernels, rb, mb, pb, s->time_ms, err);
    }
}

static void
print_reports (const PlHistory *h)
{
  for (int i = 1; i < pl_history_n_steps (h); i++)
    {
      const PlStep *s = pl_history_step (h, i);
      printf ("\n[%d] %s%s%s%s\n", i, s->pass_name, *s->args_text ? " (" : "", s->args_text,
              *s->args_text ? ")" : "");
      if (s->diff)
        printf ("    diff: %u added, %u removed, %u changed\n", s->diff->added->len, s->diff->removed->len,
                s->diff->changed->len);
      g_auto (GStrv) lines = g_strsplit (s->report, "\n", -1);
      for (int k = 0; lines[k]; k++)
        if (*lines[k])
          printf ("    %s\n", lines[k]);
      if (s->check_failed)
        printf ("    CHECK FAILED: %s\n", s->check_message);
    }
}

/* Writes step_<k>_<pass>.graph and .dot for every version. */
static bool
dump_versions (const PlHistory *h, const char *dir, GError **error)
{
  if (g_mkdir_with_parents (dir, 0755) != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot create %s: %s", dir, g_strerror (errno));
      return false;
    }
  for (int i = 0; i < pl_history_n_steps (h); i++)
    {
      const PlStep *s = pl_history_step (h, i);
      g_autofree char *base = g_strdup_printf ("step_%02d_%s", i, s->pass_name ? s->pass_name : "input");
      g_autofree char *gpath = g_strdup_printf ("%s/%s.graph", dir, base);
      g_autofree char *dpath = g_strdup_printf ("%s/%s.dot", dir, base);
      if (!pl_text_save (s->graph, gpath, error) || !pl_dot_save (s->graph, dpath, error))
        return false;
    }
  return true;
}

int
pl_cli_run (int argc, char **argv)
{
  g_autofree char *passes = NULL;
  g_autofree char *script = NULL;
  g_auto (GStrv) params = NULL;
  g_autofree char *dump_dir = NULL;
  g_autofree char *report_path = NULL;
  gboolean check = FALSE, quiet = FALSE;
  int seed = 1;
  double tolerance = 1e-4;
  gint64 sym_size = 1;
  const GOptionEntry entries[] = {
    { "passes", 'p', 0, G_OPTION_ARG_STRING, &passes, "Comma-separated pass pipeline", "A,B,C" },
    { "script", 's', 0, G_OPTION_ARG_FILENAME, &script,
      "Lua script that returns the pipeline table, or a function (g, options) returning passlab.run's history", "PIPELINE.lua" },
    { "param", 0, 0, G_OPTION_ARG_STRING_ARRAY, &params, "Set a pass parameter (repeatable)", "PASS.KEY=VALUE" },
    { "check", 'c', 0, G_OPTION_ARG_NONE, &check, "Check every changed step numerically against the previous one", NULL },
    { "seed", 0, 0, G_OPTION_ARG_INT, &seed, "Seed of the check's random inputs (default 1)", "S" },
    { "tolerance", 0, 0, G_OPTION_ARG_DOUBLE, &tolerance, "Relative error a check tolerates (default 1e-4)", "T" },
    { "sym-size", 0, 0, G_OPTION_ARG_INT64, &sym_size, "Size of symbolic dims in checks and estimates (default 1)", "N" },
    { "dump-dir", 0, 0, G_OPTION_ARG_FILENAME, &dump_dir, "Write every version as .graph and .dot", "DIR" },
    { "report", 0, 0, G_OPTION_ARG_FILENAME, &report_path, "Write the steps as JSON", "REPORT.json" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "Only the table, not the pass reports", NULL },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("FILE", "Apply a pass pipeline and show what each step changed.", entries);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  if (argc != 2)
    return pl_cli_fail ("run: expected one FILE (see 'passlab-cli run --help')");
  if (!passes == !script)
    return pl_cli_fail ("run: give either --passes or --script (see 'passlab-cli passes' for the list)");
  if (script && params)
    return pl_cli_fail ("run: --param applies to --passes; set parameters in the script");
  if (sym_size < 1)
    return pl_cli_fail ("run: --sym-size must be >= 1");
  if (!(tolerance >= 0))   /* NaN too: every comparison with it fails, so every check would pass */
    return pl_cli_fail ("run: --tolerance must be a number, 0 or more");

  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_cli_load (argv[1], &error);
  if (!g)
    return pl_cli_fail_error (error);

  PlRunOptions options;
  pl_run_options_init (&options);
  options.check = check;
  options.seed = (guint32) seed;
  options.tolerance = tolerance;
  options.sym_size = sym_size;
  g_autoptr (PlHistory) h = NULL;
  g_autoptr (PlLua) lua = NULL;  /* keeps the script's Lua passes registered while the pipeline runs */
  if (script)
    {
      if (!g_file_test (script, G_FILE_TEST_IS_REGULAR))
        return pl_cli_fail ("%s: no such file", script);
      lua = pl_lua_new (NULL);
      h = pl_lua_run_pipeline_file (lua, script, g, &options, &error);
      if (!h)
        return pl_cli_fail_error (error);
    }
  else
    {
      g_autoptr (PlPipeline) pipeline = pl_pipeline_parse (passes, &error);
      if (!pipeline)
        return pl_cli_fail_error (error);
      for (int i = 0; params && params[i]; i++)
        if (!pl_pipeline_set_param (pipeline, params[i], &error))
          return pl_cli_fail_error (error);
      h = pl_pipeline_run (g, pipeline, &options, &error);
    }

  print_table (h);
  if (!quiet)
    print_reports (h);
  int status = 0;
  for (int i = 0; i < pl_history_n_steps (h); i++)
    if (pl_history_step (h, i)->check_failed)
      status = 1;
  if (report_path)
    {
      g_autofree char *json = pl_history_to_json (h);
      g_autoptr (GError) werr = NULL;
      if (!g_file_set_contents (report_path, json, -1, &werr))
        return pl_cli_fail ("cannot write %s: %s", report_path, werr->message);
    }
  if (dump_dir)
    {
      g_autoptr (GError) derr = NULL;
      if (!dump_versions (h, dump_dir, &derr))
        return pl_cli_fail_error (derr);
    }
  if (error)
    return pl_cli_fail_error (error);
  if (status)
    fprintf (stderr, "passlab-cli: the numerical check failed (see the steps marked '!')\n");
  return status;
}

int
pl_cli_passes (int argc, char **argv)
{
  const GOptionEntry entries[] = { { NULL } };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("", "List the passes and their parameters.", entries);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  pl_passes_init ();
  g_autoptr (GPtrArray) all = pl_pass_list ();
  for (guint i = 0; i < all->len; i++)
    {
      const PlPass *p = all->pdata[i];
      printf ("%-14s %s\n", p->name, p->description);
      for (int k = 0; k < p->n_params; k++)
        printf ("    %s.%s (%s, default %s): %s\n", p->name, p->params[k].name,
                pl_param_type_name (p->params[k].type), p->params[k].default_value, p->params[k].description);
    }
  return 0;
}
