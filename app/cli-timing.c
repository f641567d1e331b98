/* cli-timing.c — `passlab-cli timing`: the timing analysis of a graph (seed
 * 004; core/timing.h), optionally after a pass pipeline: the input edges on
 * which tensors wait longest (the swap pass's candidates), per-node start
 * and finish times on request, and the device / host memory peaks. */
#define G_LOG_DOMAIN "passlab"

#include "cli.h"

#include <stdio.h>

#include "pass-manager.h"
#include "schedule.h"
#include "timing.h"

static void
print_nodes (const PlTimingAnalysis *t)
{
  printf ("%-6s %-32s %-16s %12s %12s %12s\n", "step", "node", "op", "latency ms", "TRT ms", "finish ms");
  for (int s = 0; s < t->n_steps; s++)
    {
      const PlNode *n = t->order[s];
      printf ("%-6d %-32.32s %-16.16s %12.4f %12.4f %12.4f\n", s, n->name, n->op_type, t->latency[n->id],
              t->trt[n->id], t->finish[n->id]);
    }
  printf ("\n");
}

int
pl_cli_timing (int argc, char **argv)
{
  g_autofree char *passes = NULL;
  g_auto (GStrv) params = NULL;
  int top = 20;
  gboolean serial = FALSE, nodes = FALSE;
  gint64 sym_size = 1;
  PlTimingOptions o;
  pl_timing_options_init (&o);
  const GOptionEntry entries[] = {
    { "passes", 'p', 0, G_OPTION_ARG_STRING, &passes, "Apply this pass pipeline first", "A,B,C" },
    { "param", 0, 0, G_OPTION_ARG_STRING_ARRAY, &params, "Set a pass parameter (repeatable)", "PASS.KEY=VALUE" },
    { "top", 'n', 0, G_OPTION_ARG_INT, &top, "Edges shown, largest slack first (default 20; 0: all)", "N" },
    { "nodes", 0, 0, G_OPTION_ARG_NONE, &nodes, "Also print every node's latency, start (TRT) and finish", NULL },
    { "serial", 0, 0, G_OPTION_ARG_NONE, &serial,
      "One GPU: kernels one at a time, copies on their own streams (default: the seed's dataflow model)", NULL },
    { "device-gbps", 0, 0, G_OPTION_ARG_DOUBLE, &o.device_gbps, "Device memory bandwidth, GB/s (default 2000)", "B" },
    { "device-tflops", 0, 0, G_OPTION_ARG_DOUBLE, &o.device_tflops, "Peak rate, TFLOP/s (default 50)", "F" },
    { "link-gbps", 0, 0, G_OPTION_ARG_DOUBLE, &o.link_gbps, "Host link bandwidth, GB/s (default 25)", "B" },
    { "launch-us", 0, 0, G_OPTION_ARG_DOUBLE, &o.launch_us, "Fixed cost per kernel or copy, µs (default 5)", "T" },
    { "sym-size", 0, 0, G_OPTION_ARG_INT64, &sym_size, "Size of symbolic dims (default 1)", "N" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("FILE", "Timing analysis: tensor arrival (TAT), required (TRT) "
                                                   "times and slack (TTS) of every input edge.", entries);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  if (argc != 2)
    return pl_cli_fail ("timing: expected one FILE (see 'passlab-cli timing --help')");
  if (params && !passes)
    return pl_cli_fail ("timing: --param applies to --passes");
  if (!(o.device_gbps > 0 && o.device_tflops > 0 && o.link_gbps > 0 && o.launch_us >= 0) || top < 0)
    return pl_cli_fail ("timing: rates must be positive, --launch-us and --top not negative");
  if (sym_size < 1)
    return pl_cli_fail ("timing: --sym-size must be >= 1");
  o.serial = serial;
  o.sym_size = sym_size;

  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_cli_load (argv[1], &error);
  if (!g)
    return pl_cli_fail_error (error);

  g_autoptr (PlHistory) h = NULL;
  const PlGraph *graph = g;
  if (passes)
    {
      pl_passes_init ();
      g_autoptr (PlPipeline) pipeline = pl_pipeline_parse (passes, &error);
      if (!pipeline)
        return pl_cli_fail_error (error);
      for (int i = 0; params && params[i]; i++)
        if (!pl_pipeline_set_param (pipeline, params[i], &error))
          return pl_cli_fail_error (error);
      PlRunOptions options;
      pl_run_options_init (&options);
      options.sym_size = sym_size;
      h = pl_pipeline_run (g, pipeline, &options, &error);
      if (error)
        return pl_cli_fail_error (error);
      graph = pl_history_step (h, pl_history_n_steps (h) - 1)->graph;
    }

  g_autoptr (PlTimingAnalysis) t = pl_timing_analyze (graph, &o, &error);
  if (!t)
    return pl_cli_fail_error (error);
  g_autoptr (PlMemoryProfile) mem = pl_memory_profile (graph, sym_size, &error);
  if (!mem)
    return pl_cli_fail_error (error);

  if (nodes)
    print_nodes (t);
  g_autofree char *table = pl_timing_table (t, top);
  fputs (table, stdout);
  g_autofree char *dev = pl_timing_size_text (mem->peak_bytes);
  g_autofree char *host = pl_timing_size_text (mem->host_peak_bytes);
  printf ("memory: device peak %s at step %d, host peak %s%s\n", dev, mem->peak_step, host,
          mem->assumed_sizes || t->assumed_sizes ? " (symbolic dims assumed)" : "");
  return 0;
}
