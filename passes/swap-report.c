/* swap-report.c — the swap pass's report (swap.c): the thresholds and how
 * many tensors move, one line per tensor moved (bytes, slack, where it is
 * reduced and restored), bytes swapped and compressed, device peak before
 * -> after, host peak, the budget and the floor, predicted time before ->
 * after (the overhead is copy and conversion time the slack did not hide,
 * from the timing analysis of the result), control edges added, and the
 * counts tests and scripts read.
 */
#define G_LOG_DOMAIN "passlab"
#include "swap-private.h"

#include <math.h>

#define MAX_LINES 40            /* tensors described one per line in the report */

static void
report_tensor (PlPassReport *report, const PlTimingAnalysis *t, const Candidate *c)
{
  g_autofree char *size = pl_timing_size_text (c->bytes);
  const char *how = c->compress && c->swap ? "compress+swap" : c->compress ? "compress" : "swap";
  GString *line = g_string_new (NULL);
  g_string_append_printf (line, "%s (%s, slack %.4f ms, %s): ", c->name, size, c->slack, how);
  if (c->anchor_before)
    g_string_append_printf (line, "reduced before '%s'", t->order[c->anchor_step]->name);
  else
    g_string_append_printf (line, "reduced after '%s'", t->order[c->anchor_step]->name);
  if (c->serialize_step >= 0)
    g_string_append_printf (line, ", '%s' serialized after it", t->order[c->serialize_step]->name);
  for (guint r = 0; r < c->restores->len; r++)
    {
      const Restore *rs = &g_array_index (c->restores, Restore, r);
      g_string_append_printf (line, "; restored after '%s' for '%s'", t->order[rs->q_step]->name,
                              t->order[rs->c_step]->name);
      if (rs->uses->len > 1)
        g_string_append_printf (line, " (+%u more uses)", rs->uses->len - 1);
    }
  if (c->to_output)
    g_string_append (line, "; output delivered from host");
  pl_pass_report_printf (report, "%s", line->str);
  g_string_free (line, TRUE);
}

void
pl_swap_report_thresholds (PlPassReport *report, const Params *p, const Choice *c)
{
  static const char *const mode_name[] = { "swap", "compress", "both" };
  g_autofree char *ths = pl_timing_size_text (c->th_s);
  g_autofree char *tht = c->th_tts >= 0 ? g_strdup_printf ("%g ms", c->th_tts) : g_strdup ("auto (round trip)");
  g_autofree char *pf = c->prefetch_distance > 0 ? g_strdup_printf ("%d node%s ahead", c->prefetch_distance,
                                                                    c->prefetch_distance > 1 ? "s" : "")
                                                 : g_strdup ("auto (hide the copy)");
  pl_pass_report_printf (report, "mode %s, %s timing; th_tts %s, th_s %s, prefetch %s: %u candidate tensors, "
                         "moving %u", mode_name[p->mode], p->timing.serial ? "serial" : "dataflow", tht, ths, pf,
                         c->cands->len, c->k);
  if (c->n_tight > 0)
    pl_pass_report_printf (report, "restorations split at the %d step%s where the plan peaked (no restored copy "
                           "waits across them)", c->n_tight, c->n_tight > 1 ? "s" : "");
}

void
pl_swap_report_tensors (PlPassReport *report, const PlTimingAnalysis *t, const Choice *choice)
{
  for (guint i = 0; i < MIN (choice->k, MAX_LINES); i++)
    report_tensor (report, t, choice->cands->pdata[i]);
  if (choice->k > MAX_LINES)
    pl_pass_report_printf (report, "... and %u more tensors", choice->k - MAX_LINES);
}

void
pl_swap_report_result (PlPassReport *report, const Params *p, const Choice *choice, const Counts *counts,
                       int64_t budget, const PlTimingAnalysis *t, int64_t peak_before,
                       const PlTimingAnalysis *t_after, const PlMemoryProfile *after)
{
  int64_t peak_after = pl_swap_planned_peak (after, p->workspace, NULL);

  g_autofree char *sw = pl_timing_size_text (counts->swapped);
  g_autofree char *cz = pl_timing_size_text (counts->compressed);
  g_autofree char *pb = pl_timing_size_text (peak_before);
  g_autofree char *pa = pl_timing_size_text (peak_after);
  g_autofree char *hp = pl_timing_size_text (after->host_peak_bytes);
  pl_pass_report_printf (report, "%u tensors moved, %d restorations, %d outputs delivered from host; "
                         "%s swapped to host, %s compressed to f16",
                         choice->k, counts->restorations, counts->outputs, sw, cz);
  g_autofree char *ws = pl_timing_size_text (p->workspace);
  pl_pass_report_printf (report, "planned device peak %s -> %s (host peak %s%s%s)", pb, pa, hp,
                         p->workspace > 0 ? "; a convolution's workspace of " : "", p->workspace > 0 ? ws : "");
  int floor_step;
  int64_t floor_bytes = pl_swap_schedule_floor (t, p->workspace, &floor_step);
  if (budget > 0)
    {
      g_autofree char *bb = pl_timing_size_text (budget);
      g_autofree char *miss = pl_timing_size_text (peak_after - budget);
      g_autofree char *fl = pl_timing_size_text (floor_bytes);
      if (peak_after <= budget)
        pl_pass_report_printf (report, "budget %s: met", bb);
      else
        pl_pass_report_printf (report, "budget %s: NOT met, the best plan is %s over; the floor is %s: what "
                               "'%s' alone reads and writes%s, which no plan of this schedule goes below", bb, miss,
                               fl, floor_step >= 0 ? t->order[floor_step]->name : "?",
                               floor_step >= 0 && p->workspace > 0 && pl_swap_runs_conv (t->order[floor_step])
                               ? " with its workspace" : "");
    }
  double overhead = t_after->makespan - t->makespan;
  pl_pass_report_printf (report, "predicted time %.4f ms -> %.4f ms (overhead %+.4f ms: copy and conversion "
                         "time the slack does not hide)", t->makespan, t_after->makespan, overhead);
  pl_pass_report_printf (report, "control edges added: %d serialize, %d prefetch", counts->serialize,
                         counts->prefetch);

  pl_pass_report_count (report, "tensors moved", choice->k);
  pl_pass_report_count (report, "restorations", counts->restorations);
  pl_pass_report_count (report, "outputs to host", counts->outputs);
  pl_pass_report_count (report, "bytes swapped", counts->swapped);
  pl_pass_report_count (report, "bytes compressed", counts->compressed);
  pl_pass_report_count (report, "peak before", peak_before);
  pl_pass_report_count (report, "peak after", peak_after);
  pl_pass_report_count (report, "host peak", after->host_peak_bytes);
  pl_pass_report_count (report, "serialize edges", counts->serialize);
  pl_pass_report_count (report, "prefetch edges", counts->prefetch);
  pl_pass_report_count (report, "overhead ns", (int64_t) llround (overhead * 1e6));
  if (budget > 0)
    {
      pl_pass_report_count (report, "budget", budget);
      pl_pass_report_count (report, "budget met", peak_after <= budget);
      pl_pass_report_count (report, "tight steps", choice->n_tight);
    }
  pl_pass_report_count (report, "floor", floor_bytes);
}
