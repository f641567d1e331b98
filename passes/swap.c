/* swap.c — the "swap" pass: move tensors that wait long before their next
 * use out of device memory and back (seed 004, IBM Large Model Support;
 * DESIGN.md §1.5). Contract: needs an inferred graph; keeps every output's
 * value (exactly for swaps, within f16 rounding for compression); leaves the
 * graph's node list in the planned execution order.
 *
 * 1. Timing analysis (core/timing.h) of the schedule: TAT, TRT and the slack
 *    TTS of every (value, consumer) input edge; by default the serial model
 *    (one compute stream, copies on their own streams).
 * 2. Candidates (seed fig. 10a): input edges with TTS > th_tts whose tensor
 *    is larger than th_s; grouped by tensor, the N largest tensors are kept.
 *    A graph output computed long before the end is an edge too (required at
 *    the end): in modes "swap" and "both" it is delivered from host memory
 *    (swapped, not compressed: an output keeps its dtype).
 * 3. For each tensor x produced by P: a memory-reduction node right after P
 *    (SwapOut, CompressFp16, or CompressFp16 then SwapOut), and for each
 *    group of its far consumers a memory-restoration node (SwapIn,
 *    DecompressFp16, or both) that only those consumers read; near consumers
 *    keep reading x. Far consumers are split into groups where the restored
 *    tensor would again wait longer than the threshold (seed fig. 9: several
 *    restorations of one tensor).
 * 4. Control edges. Serialization: the next node after P that allocates at
 *    least half of what the reduction frees waits for the reduction (so the
 *    freed memory is there for it). Prefetch: the restoration waits for node
 *    q, the latest node before the first consumer that still leaves the copy
 *    time (bytes / link bandwidth) before that consumer starts — late enough
 *    to save memory, early enough to hide the copy; prefetch_distance = k
 *    picks the node k steps before the consumer instead. A second
 *    restoration of the same tensor starts no earlier than the previous
 *    group's last consumer.
 * 5. The inserted nodes are placed in the node list where the plan puts
 *    them (after P, after q, right before the consumer), so the schedule —
 *    pl_graph_topo_order keeps a topological insertion order — is the plan,
 *    and so is the memory profile (host values not counted, schedule.h).
 * 6. Budget: with budget set, N is searched (binary search over the
 *    candidates, largest first) for the fewest tensors whose planned device
 *    peak fits. When every candidate is not enough, the steps where the
 *    plan peaks become tight, one at a time: a restoration that would wait
 *    across a tight step without being read there is split in two, the
 *    second issued after that step (step 3's several restorations, placed
 *    by the memory profile instead of the slack). If that is not enough
 *    either, th_tts and then th_s are relaxed to 0, and last every
 *    restoration is moved right before its consumer (prefetch distance 1:
 *    least memory, the copy no longer hidden); if nothing fits, the plan
 *    with the lowest peak — with the fewest tensors that reach it — is
 *    applied and the report says by how much it misses and what the floor
 *    is: the most one step reads and writes, below which no plan of this
 *    schedule goes (a binary elementwise op on the largest activations
 *    holds two of them: its output may take the place of an input it reads
 *    last, pl_in_place_input, as the runtime's memory plan does). The
 *    planned peak counts `workspace` bytes while a convolution runs: the
 *    runtime's im2col and packed weights, which the graph's memory profile
 *    does not know, so that the runtime's arena fits the same budget.
 * The report: tensors moved (bytes, slack, restorations), bytes swapped and
 * compressed, device peak before -> after, host peak, predicted time before
 * -> after (the overhead is copy and conversion time the slack did not hide,
 * from the timing analysis of the result), control edges added.
 *
 * Files: this one holds the parameters and the pass; swap-plan.c the
 * candidates and their plans (steps 2-4), swap-rewrite.c the graph rewrite
 * (steps 3-5), swap-peak.c the planned peak and the floor, swap-budget.c
 * the budget search (step 6), swap-report.c the report; swap-private.h
 * what they share.
 */
#define G_LOG_DOMAIN "passlab"
#include "swap-private.h"

#include <math.h>
#include <string.h>

/* --- parameters ------------------------------------------------------------------ */

static bool
parse_mode (const char *s, Mode *mode, GError **error)
{
  if (g_ascii_strcasecmp (s, "swap") == 0)
    *mode = MODE_SWAP;
  else if (g_ascii_strcasecmp (s, "compress") == 0)
    *mode = MODE_COMPRESS;
  else if (g_ascii_strcasecmp (s, "both") == 0)
    *mode = MODE_BOTH;
  else
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "swap.mode: '%s' is not swap, compress or both", s);
      return false;
    }
  return true;
}

/* "64MiB", "1.5GB", "1000000", "512K", "50%" (of baseline). KB/MB/GB/TB are
 * powers of 1000, KiB/MiB/GiB/TiB and bare K/M/G/T powers of 1024. Empty:
 * *out = 0 (no budget). */
static bool
parse_budget (const char *text, int64_t baseline, int64_t *out, GError **error)
{
  g_autofree char *s = g_strstrip (g_strdup (text ? text : ""));
  *out = 0;
  if (*s == '\0')
    return true;
  char *end = NULL;
  double v = g_ascii_strtod (s, &end);
  while (end && *end == ' ')
    end++;
  double scale = -1;
  if (end != s && isfinite (v) && v > 0)
    {
      static const struct { const char *unit; double scale; } units[] = {
        { "", 1 }, { "B", 1 },
        { "K", 1024.0 }, { "KiB", 1024.0 }, { "KB", 1e3 },
        { "M", 1048576.0 }, { "MiB", 1048576.0 }, { "MB", 1e6 },
        { "G", 1073741824.0 }, { "GiB", 1073741824.0 }, { "GB", 1e9 },
        { "T", 1099511627776.0 }, { "TiB", 1099511627776.0 }, { "TB", 1e12 },
      };
      if (strcmp (end, "%") == 0)
        scale = (double) baseline / 100.0;
      for (size_t i = 0; scale < 0 && i < G_N_ELEMENTS (units); i++)
        if (g_ascii_strcasecmp (end, units[i].unit) == 0)
          scale = units[i].scale;
    }
  if (scale < 0 || v * scale >= 9.2e18)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID,
                   "swap.budget: '%s' is not a size (bytes like 64MiB, 1.5GB, 1000000, or a percentage like 50%%)",
                   text);
      return false;
    }
  *out = MAX ((int64_t) 1, (int64_t) (v * scale));
  return true;
}

static bool
read_params (const PlPassArgs *args, Params *p, GError **error)
{
  *p = (Params) {
    .th_tts = pl_pass_args_float (args, "th_tts"),
    .th_s = MAX (0, pl_pass_args_int (args, "th_s")),
    .prefetch_distance = (int) CLAMP (pl_pass_args_int (args, "prefetch_distance"), 0, G_MAXINT / 2),
    .serialize = pl_pass_args_bool (args, "serialize"),
    .outputs = pl_pass_args_bool (args, "outputs"),
    .workspace = MAX (0, pl_pass_args_int (args, "workspace")),
  };
  int64_t n = pl_pass_args_int (args, "n");
  if (n < 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "swap.n: %" G_GINT64_FORMAT " is negative", n);
      return false;
    }
  p->n = (int) MIN (n, G_MAXINT / 2);
  if (!parse_mode (pl_pass_args_string (args, "mode"), &p->mode, error))
    return false;

  pl_timing_options_init (&p->timing);
  p->timing.serial = pl_pass_args_bool (args, "serial");
  p->timing.link_gbps = pl_pass_args_float (args, "link_gbps");
  p->timing.device_gbps = pl_pass_args_float (args, "device_gbps");
  p->timing.device_tflops = pl_pass_args_float (args, "device_tflops");
  p->timing.launch_us = pl_pass_args_float (args, "launch_us");
  if (!(p->timing.link_gbps > 0 && p->timing.device_gbps > 0 && p->timing.device_tflops > 0
        && p->timing.launch_us >= 0 && isfinite (p->th_tts)))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID,
                   "swap: link_gbps, device_gbps and device_tflops must be positive, launch_us >= 0, "
                   "th_tts a number");
      return false;
    }
  return true;
}

/* --- the pass -------------------------------------------------------------------------- */

static bool
run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data G_GNUC_UNUSED,
     GError **error)
{
  Params p;
  if (!read_params (args, &p, error))
    return false;
  g_autoptr (PlTimingAnalysis) t = pl_timing_analyze (g, &p.timing, error);
  if (!t)
    return false;
  g_autoptr (PlMemoryProfile) before = pl_memory_profile (g, p.timing.sym_size, error);
  if (!before)
    return false;
  int64_t peak_before = pl_swap_planned_peak (before, p.workspace, NULL);
  int64_t budget = 0;
  if (!parse_budget (pl_pass_args_string (args, "budget"), peak_before, &budget, error))
    return false;

  Choice choice = { .th_tts = p.th_tts, .th_s = p.th_s, .prefetch_distance = p.prefetch_distance };
  if (budget > 0)
    {
      if (!pl_swap_fit_budget (g, t, &p, budget, peak_before, &choice, error))
        {
          g_clear_pointer (&choice.cands, g_ptr_array_unref);
          return false;
        }
    }
  else
    {
      choice.cands = pl_swap_plan_candidates (t, &p, p.th_tts, p.th_s, NULL);
      choice.k = p.n > 0 ? MIN ((guint) p.n, choice.cands->len) : choice.cands->len;
    }
  g_autoptr (GPtrArray) cands = choice.cands;

  pl_swap_report_thresholds (report, &p, &choice);
  Counts counts = { 0 };
  if (choice.k > 0)
    {
      if (!pl_swap_apply_plan (g, t, cands, choice.k, &counts, error))
        return false;
      report->changed = true;
    }
  pl_swap_report_tensors (report, t, &choice);

  g_autoptr (PlMemoryProfile) after = pl_memory_profile (g, p.timing.sym_size, error);
  g_autoptr (PlTimingAnalysis) t_after = after ? pl_timing_analyze (g, &p.timing, error) : NULL;
  if (!t_after)
    return false;
  pl_swap_report_result (report, &p, &choice, &counts, budget, t, peak_before, t_after, after);
  return true;
}

PlPass *
pl_pass_swap_new (void)
{
  static const PlPassParam params[] = {
    { "th_tts", PL_PARAM_FLOAT, "-1",
      "slack threshold in ms (model or measured time): an input edge is a candidate when its tensor waits "
      "longer than this before the consumer; negative: per tensor, the time its reduction and restoration take" },
    { "th_s", PL_PARAM_INT, "65536", "size threshold in bytes: only larger tensors are moved" },
    { "n", PL_PARAM_INT, "16", "most tensors moved, the largest first (0: no limit; with a budget, searched)" },
    { "mode", PL_PARAM_STRING, "swap",
      "swap (copy to host memory), compress (f32 -> f16 on the device) or both (compress, then swap)" },
    { "budget", PL_PARAM_STRING, "",
      "device memory to fit in: bytes (64MiB, 1.5GB, 1000000) or a percentage of the unswapped peak (50%); "
      "tunes n, then th_tts and th_s; empty: off" },
    { "prefetch_distance", PL_PARAM_INT, "0",
      "0: a swap-in waits for the latest node that leaves its copy time before the consumer; k > 0: for the "
      "node k steps before the consumer" },
    { "serialize", PL_PARAM_BOOL, "true", "the next big allocation after a reduction waits for it" },
    { "outputs", PL_PARAM_BOOL, "true",
      "modes swap and both: deliver graph outputs computed long before the end from host memory" },
    { "workspace", PL_PARAM_INT, "0",
      "bytes a convolution needs on the device beside its inputs and outputs (the runtime's 'kernel workspace': "
      "im2col, packed weights); the planned peak counts them while a convolution runs" },
    { "serial", PL_PARAM_BOOL, "true",
      "time one GPU: kernels one at a time, copies on their own streams (false: the seed's unbounded dataflow)" },
    { "link_gbps", PL_PARAM_FLOAT, "25", "host link bandwidth of the copies, GB/s" },
    { "device_gbps", PL_PARAM_FLOAT, "2000", "device memory bandwidth of the cost model, GB/s" },
    { "device_tflops", PL_PARAM_FLOAT, "50", "peak arithmetic rate of the cost model, TFLOP/s" },
    { "launch_us", PL_PARAM_FLOAT, "5", "fixed cost of each kernel and copy, µs" },
  };
  return pl_pass_new ("swap",
                      "swap insertion by timing analysis (IBM LMS): move tensors that wait long to host memory "
                      "or f16 and back, with serialization and prefetch control edges; optional memory budget",
                      params, G_N_ELEMENTS (params), run, NULL, NULL);
}
