/* cli-exec.c — `passlab-cli exec`: runs a graph (optionally after a pass
 * pipeline) on a backend — the reference interpreter, generated C on the
 * cpu, or generated CUDA — on inputs read from TensorProto files or made at
 * random; prints (and optionally saves) the outputs, and for the compiled
 * backends a per-kernel table (time median over --repeat runs, bytes moved,
 * achieved GB/s), a JSON report and a Chrome-trace timeline. Also the
 * helpers `bench` shares (cli-exec.h). */
#define G_LOG_DOMAIN "passlab"

#include "cli-exec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

#include "builtin-passes.h"
#include "interp.h"
#include "onnx-io.h"
#include "pass-manager.h"
#include "runtime.h"

/* How many leading values a summary line shows. */
#define SUMMARY_VALUES 8

typedef struct {
  PlTensor **v;
  int        n;
} Tensors;

/* Entries may be NULL (an input file that failed to load). */
static void
tensors_clear (Tensors *t)
{
  for (int i = 0; t->v != NULL && i < t->n; i++)
    if (t->v[i] != NULL)
      pl_tensor_unref (t->v[i]);
  g_clear_pointer (&t->v, g_free);
  t->n = 0;
}

/* Whether tensor t may stand for graph input v: same dtype, same rank (if
 * known) and the same size in every static dim. */
static bool
input_fits (const PlValue *v, const PlTensor *t, GError **error)
{
  g_autofree char *want = pl_shape_to_string (&v->shape);
  PlShape got_shape = pl_tensor_shape (t);
  g_autofree char *got = pl_shape_to_string (&got_shape);
  bool ok = v->dtype == PL_DTYPE_UNDEFINED || v->dtype == t->dtype;
  if (ok && v->shape.rank != PL_RANK_UNKNOWN)
    {
      ok = v->shape.rank == t->rank;
      for (int i = 0; ok && i < t->rank; i++)
        if (pl_dim_is_static (v->shape.dims[i]) && v->shape.dims[i].size != t->dims[i])
          ok = false;
    }
  if (!ok)
    g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                 "input '%s' wants %s%s, the file holds %s%s", v->name,
                 v->dtype == PL_DTYPE_UNDEFINED ? "?" : pl_dtype_name (v->dtype), want,
                 pl_dtype_name (t->dtype), got);
  return ok;
}

/* Reads one TensorProto file per graph input, in order. */
static bool
load_inputs (const PlGraph *g, char **paths, int n_paths, Tensors *out, GError **error)
{
  if ((guint) n_paths != g->inputs->len)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FAILED,
                   "the graph has %u input%s, %d input file%s given", g->inputs->len,
                   g->inputs->len == 1 ? "" : "s", n_paths, n_paths == 1 ? "" : "s");
      return false;
    }
  out->v = g_new0 (PlTensor *, MAX (n_paths, 1));
  out->n = n_paths;
  for (int i = 0; i < n_paths; i++)
    {
      g_autoptr (GError) local = NULL;
      out->v[i] = pl_onnx_load_tensor (paths[i], NULL, &local);
      if (out->v[i] == NULL)
        {
          g_set_error (error, PL_ERROR, local->code, "%s: %s", paths[i], local->message);
          return false;
        }
      if (!input_fits (g_ptr_array_index (g->inputs, i), out->v[i], &local))
        {
          g_set_error (error, PL_ERROR, local->code, "%s: %s", paths[i], local->message);
          return false;
        }
    }
  return true;
}

static bool
save_outputs (const PlGraph *g, PlTensor *const *outputs, const char *dir, GError **error)
{
  if (g_mkdir_with_parents (dir, 0755) != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot create %s: %s", dir, g_strerror (errno));
      return false;
    }
  for (guint i = 0; i < g->outputs->len; i++)
    {
      const PlValue *v = g_ptr_array_index (g->outputs, i);
      if (outputs[i] == NULL)
        continue;
      g_autofree char *file = g_strdup_printf ("output_%u.pb", i);
      g_autofree char *path = g_build_filename (dir, file, NULL);
      if (!pl_onnx_save_tensor (outputs[i], v != NULL ? v->name : "", path, error))
        return false;
    }
  return true;
}

/* --- shared with bench ------------------------------------------------------------ */

PlGraph *
pl_cli_apply_passes (const PlGraph *g, const char *spec, char *const *params, GError **error)
{
  if (!spec || !*spec)
    {
      if (params && params[0])
        {
          g_set_error (error, PL_ERROR, PL_ERROR_FAILED, "--param needs --passes");
          return NULL;
        }
      return pl_graph_copy (g);
    }
  pl_passes_init ();
  g_autoptr (PlPipeline) p = pl_pipeline_parse (spec, error);
  if (!p)
    return NULL;
  for (int i = 0; params && params[i]; i++)
    if (!pl_pipeline_set_param (p, params[i], error))
      return NULL;
  PlRunOptions o;
  pl_run_options_init (&o);
  g_autoptr (PlHistory) h = pl_pipeline_run (g, p, &o, error);
  if (!h || h->error)
    {
      if (error && !*error)
        g_set_error (error, PL_ERROR, PL_ERROR_FAILED, "%s", h ? h->error : "the pipeline failed");
      return NULL;
    }
  return pl_graph_copy (pl_history_step (h, pl_history_n_steps (h) - 1)->graph);
}

PlTensor **
pl_cli_run_once (const PlGraph *g, PlBackend backend, const char *cache_dir, PlTensor **inputs, PlRunReport **report,
                 GError **error)
{
  PlCompileOptions o;
  pl_compile_options_init (&o, backend);
  o.cache_dir = cache_dir;
  o.threads = 1;
  PlExecutable *e = pl_executable_new (g, &o, error);
  if (!e)
    {
      g_prefix_error (error, "does not compile: ");
      return NULL;
    }
  PlTensor **out = pl_executable_run (e, inputs, 1, report, error);
  if (!out)
    g_prefix_error (error, "does not run: ");
  pl_executable_free (e);
  return out;
}

char *
pl_cli_human_bytes (int64_t b)
{
  const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  double v = (double) b;
  int u = 0;
  while (v >= 1024 && u < 4)
    v /= 1024, u++;
  return u == 0 ? g_strdup_printf ("%" G_GINT64_FORMAT " B", b) : g_strdup_printf ("%.1f %s", v, units[u]);
}

int64_t
pl_cli_report_bytes (const PlRunReport *r)
{
  int64_t b = 0;
  for (int i = 0; i < r->n_kernels; i++)
    b += r->kernels[i].bytes;
  return b;
}

void
pl_cli_print_kernel_table (const PlRunReport *r)
{
  printf ("%-24s %-9s %4s %8s %11s %11s %10s %9s  %s\n", "kernel", "kind", "ops", "launches", "median ms",
          "min ms", "bytes", "GB/s", "ops fused / note");
  int launches = 0;
  double sum = 0;
  for (int i = 0; i < r->n_kernels; i++)
    {
      const PlKernelTiming *k = &r->kernels[i];
      g_autofree char *b = pl_cli_human_bytes (k->bytes);
      g_autofree char *name = g_utf8_strlen (k->name, -1) > 24 ? g_strdup_printf ("%.21s...", k->name) : g_strdup (k->name);
      printf ("%-24s %-9s %4d %8d %11.4f %11.4f %10s %9.2f  %s%s%s\n", name, k->kind, k->n_ops, k->n_launches,
              k->median_ms, k->min_ms, b, k->gbps, k->ops, k->note ? " — " : "", k->note ? k->note : "");
      launches += k->n_launches;
      sum += k->median_ms;
    }
  g_autofree char *moved = pl_cli_human_bytes (pl_cli_report_bytes (r));
  g_autofree char *peak = pl_cli_human_bytes (r->peak_bytes);
  g_autofree char *arena = pl_cli_human_bytes (r->arena_bytes);
  double gbps = r->total_ms > 0 ? (double) pl_cli_report_bytes (r) / (r->total_ms * 1e6) : 0;
  printf ("total: %d kernels, %d launches, %.4f ms per run (median of %d; kernels sum %.4f ms), %s moved, %.2f GB/s, "
          "peak memory %s (arena %s)\n", r->n_kernels, launches, r->total_ms, r->repeats, sum, moved, gbps, peak, arena);
  g_autofree char *host = pl_cli_human_bytes (r->host_peak_bytes);
  g_autofree char *pool = pl_cli_human_bytes (r->host_pool_bytes);
  g_autofree char *copied = pl_cli_human_bytes (r->copy_bytes);
  g_autofree char *budget = r->device_budget > 0 ? pl_cli_human_bytes (r->device_budget) : g_strdup ("none");
  g_autofree char *ws = pl_cli_human_bytes (r->workspace_bytes);
  printf ("memory: device peak %s (arena %s, kernel workspace %s, budget %s), host peak %s (pool %s); "
          "%d swap copies, %s, copy %.4f ms, wait %.4f ms%s\n", peak, arena, ws, budget, host, pool, r->n_copies, copied, r->copy_ms,
          r->wait_ms, r->backend == PL_BACKEND_CPU && r->n_copies ? " (cpu: copies are synchronous, wait = copy)" : "");
  printf ("device: %s\n", r->device ? r->device : pl_backend_name (r->backend));
}

/* One line a script can read: the memory plan, exact bytes and readable. */
static void
print_memory_plan (PlExecutable *e, int64_t budget)
{
  int64_t v[4];
  pl_executable_memory (e, &v[0], &v[1], &v[2], &v[3]);
  const char *what[] = { "arena", "device peak", "kernel workspace", "host pool" };
  printf ("memory plan:");
  for (int i = 0; i < 4; i++)
    {
      g_autofree char *h = pl_cli_human_bytes (v[i]);
      printf ("%s %s %" G_GINT64_FORMAT " bytes (%s)", i ? "," : "", what[i], v[i], h);
    }
  g_autofree char *hb = budget > 0 ? pl_cli_human_bytes (budget) : NULL;
  if (hb)
    printf ("; budget %" G_GINT64_FORMAT " bytes (%s): fits", budget, hb);
  printf ("\n");
}

/* "3MiB", "512 KiB", "2.5GB", "1000000": bytes (binary units for KiB/MiB/GiB and K/M/G, decimal for kB/MB/GB). */
static bool
parse_bytes (const char *text, int64_t *out)
{
  char *end = NULL;
  double v = g_ascii_strtod (text, &end);
  if (end == text || !(v > 0))   /* NaN too */
    return false;
  while (*end == ' ')
    end++;
  static const struct { const char *unit; double scale; } units[] = {
    { "", 1 }, { "B", 1 }, { "K", 1024.0 }, { "KiB", 1024.0 }, { "kB", 1e3 }, { "M", 1048576.0 },
    { "MiB", 1048576.0 }, { "MB", 1e6 }, { "G", 1073741824.0 }, { "GiB", 1073741824.0 }, { "GB", 1e9 },
    { "T", 1099511627776.0 }, { "TiB", 1099511627776.0 }, { "TB", 1e12 },
  };
  for (size_t i = 0; i < G_N_ELEMENTS (units); i++)
    if (g_ascii_strcasecmp (end, units[i].unit) == 0 && (strcmp (units[i].unit, "") != 0 || *end == '\0'))
      {
        double bytes = v * units[i].scale;
        if (!(bytes >= 1 && bytes < 0x1p63))   /* the cast is defined only below 2^63 */
          return false;
        *out = (int64_t) bytes;
        return true;
      }
  return false;
}

static bool
write_text (const char *path, const char *text, GError **error)
{
  return g_file_set_contents (path, text, -1, error);
}

/* The generated code and the loop IR of node `name`'s kernel. */
static int
show_source (PlExecutable *e, const PlGraph *g, const char *name)
{
  PlNode *n = pl_graph_find_node (g, name);
  if (!n)
    return pl_cli_fail ("--show-source: no node '%s' (after the passes; fusion nodes are named fusion_N)", name);
  g_autofree char *dump = pl_executable_plan_dump (e, n->id);
  const char *src = pl_executable_source (e, n->id);
  if (!dump && !src)
    return pl_cli_fail ("--show-source: node '%s' launches no kernel (a view, or the reference backend)", name);
  if (dump)
    {
      g_auto (GStrv) lines = g_strsplit (dump, "\n", -1);
      printf ("/* loop IR\n");
      for (int i = 0; lines[i]; i++)
        if (*lines[i])
          printf (" * %s\n", lines[i]);
      printf (" */\n");
    }
  printf ("%s", src ? src : "/* no generated code: a library call or the reference implementation */\n");
  return 0;
}

int
pl_cli_exec (int argc, char **argv)
{
  g_auto (GStrv) input_paths = NULL;
  gint64 seed = 0;
  gint64 sym_size = 1;
  g_autofree char *save_dir = NULL;
  g_autofree char *backend_name = NULL, *passes = NULL, *trace_path = NULL, *report_path = NULL;
  g_autofree char *show = NULL, *cache_dir = NULL, *budget_text = NULL;
  g_auto (GStrv) params = NULL;
  int repeat = 0, threads = 0;
  gboolean predicted = FALSE, dry_run = FALSE;
  const GOptionEntry entries[] = {
    { "inputs", 'i', 0, G_OPTION_ARG_FILENAME_ARRAY, &input_paths,
      "A TensorProto (.pb) for the next graph input; repeat, or list more files after FILE", "F.pb" },
    { "random-inputs", 'r', 0, G_OPTION_ARG_INT64, &seed,
      "Random inputs from this seed (the default, with seed 0)", "SEED" },
    { "sym-size", 's', 0, G_OPTION_ARG_INT64, &sym_size,
      "Size of symbolic and unknown dims of random inputs (default 1)", "N" },
    { "save-outputs", 'o', 0, G_OPTION_ARG_FILENAME, &save_dir,
      "Write the outputs as DIR/output_K.pb (TensorProto)", "DIR" },
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &backend_name,
      "reference (default), cpu (generated C) or cuda (generated CUDA)", "B" },
    { "passes", 'p', 0, G_OPTION_ARG_STRING, &passes, "Apply this pass pipeline first", "A,B,C" },
    { "param", 0, 0, G_OPTION_ARG_STRING_ARRAY, &params, "Set a pass parameter (repeatable)", "PASS.KEY=VALUE" },
    { "repeat", 'n', 0, G_OPTION_ARG_INT, &repeat,
      "Timed runs after one warm-up (default 10 on cpu/cuda, 1 on reference)", "N" },
    { "trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_path,
      "Write the last run as a Chrome-trace / Perfetto timeline", "OUT.json" },
    { "report", 0, 0, G_OPTION_ARG_FILENAME, &report_path, "Write the per-kernel report as JSON", "OUT.json" },
    { "predicted", 0, 0, G_OPTION_ARG_NONE, &predicted,
      "Per conv and layout-transform kernel: the layout pass's predicted time against the measured one", NULL },
    { "show-source", 0, 0, G_OPTION_ARG_STRING, &show,
      "Print the generated code of node NODE's kernel (after the passes) for the backend and exit; "
      "needs no compiler or GPU", "NODE" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &threads, "cpu: OpenMP threads (default: all cores)", "N" },
    { "device-budget", 0, 0, G_OPTION_ARG_STRING, &budget_text,
      "cpu/cuda: device memory the memory plan may use (e.g. 3MiB); fails if it needs more "
      "(the swap pass, --param swap.budget=..., makes it need less)", "BYTES" },
    { "dry-run", 0, 0, G_OPTION_ARG_NONE, &dry_run,
      "cpu/cuda: plan the kernels and the memory, check --device-budget, print the memory plan and exit; "
      "compiles and runs nothing (no compiler or GPU needed)", NULL },
    { "cache-dir", 0, 0, G_OPTION_ARG_FILENAME, &cache_dir,
      "cpu: where compiled kernels are cached (default $XDG_CACHE_HOME/passlab/kernels)", "DIR" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("FILE [INPUT.pb...]",
    "Runs a graph and prints a summary of each output. Inputs come from\n"
    "TensorProto files, one per graph input in order, or are random (uniform\n"
    "in [-1, 1) for floats, [0, 4] for integers). With --backend cpu or cuda the\n"
    "graph's kernels are generated and compiled, and a table shows each\n"
    "kernel's median time, the bytes it moves and the bandwidth it reached.", entries);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  if (argc < 2)
    return pl_cli_fail ("missing FILE (see '%s --help')", argv[0]);
  if (sym_size < 1)
    return pl_cli_fail ("--sym-size must be >= 1");
  if (seed < 0 || seed > G_MAXUINT32)
    return pl_cli_fail ("--random-inputs takes a seed from 0 to %u", G_MAXUINT32);
  PlBackend backend = PL_BACKEND_REFERENCE;
  if (backend_name && !pl_backend_from_name (backend_name, &backend))
    return pl_cli_fail ("unknown backend '%s' (reference, cpu or cuda)", backend_name);
  if (repeat < 0 || repeat > 100000)
    return pl_cli_fail ("--repeat takes 1 to 100000");
  if (threads < 0 || threads > PL_CLI_MAX_THREADS)
    return pl_cli_fail ("--threads takes 0 (all cores) to %d", PL_CLI_MAX_THREADS);
  if (repeat == 0)
    repeat = backend == PL_BACKEND_REFERENCE ? 1 : 10;
  if (dry_run && backend == PL_BACKEND_REFERENCE)
    return pl_cli_fail ("--dry-run plans a backend's memory: use --backend cpu or cuda");
  int64_t device_budget = 0;
  if (budget_text && !parse_bytes (budget_text, &device_budget))
    return pl_cli_fail ("--device-budget takes a size such as 3MiB, 512KiB or 1000000 (bytes)");

  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) loaded = pl_cli_load (argv[1], &error);
  if (loaded == NULL)
    return pl_cli_fail_error (error);
  g_autoptr (PlGraph) g = pl_cli_apply_passes (loaded, passes, params, &error);
  if (g == NULL)
    return pl_cli_fail_error (error);

  PlCompileOptions copt;
  pl_compile_options_init (&copt, backend);
  copt.cache_dir = cache_dir;
  copt.threads = threads;
  copt.device_budget = device_budget;
  copt.generate_only = show != NULL || dry_run;   /* showing the code needs no compiler and no GPU */
  PlExecutable *exe = pl_executable_new (g, &copt, &error);
  if (exe == NULL)
    return pl_cli_fail_error (error);
  if (dry_run && !show)
    {
      print_memory_plan (exe, device_budget);
      pl_executable_free (exe);
      return 0;
    }
  if (show)
    {
      int status = show_source (exe, g, show);
      pl_executable_free (exe);
      return status;
    }

  /* --inputs files first, then the positional ones. */
  g_autoptr (GPtrArray) paths = g_ptr_array_new ();
  for (int i = 0; input_paths != NULL && input_paths[i] != NULL; i++)
    g_ptr_array_add (paths, input_paths[i]);
  for (int i = 2; i < argc; i++)
    g_ptr_array_add (paths, argv[i]);

  Tensors inputs = { NULL, 0 };
  if (paths->len > 0)
    {
      if (!load_inputs (g, (char **) paths->pdata, (int) paths->len, &inputs, &error))
        {
          tensors_clear (&inputs);
          pl_executable_free (exe);
          return pl_cli_fail_error (error);
        }
    }
  else if (g->inputs->len > 0)
    {
      inputs.v = pl_random_inputs (g, (guint32) seed, sym_size, &error);
      if (inputs.v == NULL)
        {
          pl_executable_free (exe);
          return pl_cli_fail_error (error);
        }
      inputs.n = (int) g->inputs->len;
    }

  gint64 start = g_get_monotonic_time ();
  Tensors outputs = { NULL, (int) g->outputs->len };
  g_autoptr (PlRunReport) report = NULL;
  bool want_report = backend != PL_BACKEND_REFERENCE || trace_path || report_path || repeat > 1;
  if (backend == PL_BACKEND_REFERENCE && !want_report)
    outputs.v = pl_interp_run (g, inputs.v, NULL, &error);
  else
    outputs.v = pl_executable_run (exe, inputs.v, repeat, &report, &error);
  double ms = (g_get_monotonic_time () - start) / 1000.0;
  if (report)
    ms = report->total_ms;
  tensors_clear (&inputs);
  pl_executable_free (exe);
  if (error != NULL || (outputs.v == NULL && outputs.n > 0))
    {
      tensors_clear (&outputs);
      return pl_cli_fail_error (error);
    }

  for (int i = 0; i < outputs.n; i++)
    {
      const PlValue *v = g_ptr_array_index (g->outputs, i);
      g_autofree char *summary = outputs.v[i] != NULL
                                 ? pl_tensor_summary (outputs.v[i], SUMMARY_VALUES)
                                 : g_strdup ("(not computed)");
      printf ("%s: %s\n", v != NULL ? v->name : "(omitted)", summary);
    }
  if (report && backend != PL_BACKEND_REFERENCE)
    pl_cli_print_kernel_table (report);
  if (report && backend != PL_BACKEND_REFERENCE && predicted)
    pl_cli_print_predicted (g, report);
  printf ("ran %u nodes in %.3f ms\n", g->nodes->len, ms);

  int status = 0;
  if (report && trace_path)
    {
      g_autofree char *json = pl_run_report_trace_json (report);
      if (!write_text (trace_path, json, &error))
        status = pl_cli_fail_error (error);
    }
  if (report && report_path && status == 0)
    {
      g_autofree char *json = pl_run_report_json (report);
      if (!write_text (report_path, json, &error))
        status = pl_cli_fail_error (error);
    }
  if (status == 0 && save_dir != NULL && !save_outputs (g, outputs.v, save_dir, &error))
    status = pl_cli_fail_error (error);
  tensors_clear (&outputs);
  return status;
}
