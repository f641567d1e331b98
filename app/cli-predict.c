/* cli-predict.c — `passlab-cli exec --predicted`: the layout pass's cost
 * model against what the run measured, per layer (seed 003 asks for both).
 *
 * For every kernel that runs a convolution (alone or with its fused
 * epilogue) or a layout transform, the prediction is what the calibration
 * (kernels/calibrate.h) holds for that conv in its layout and kernel, or
 * for that transform — measured earlier on this machine and cached, else
 * the analytic model. Nothing is measured here. */
#define G_LOG_DOMAIN "passlab"

#include "cli-exec.h"

#include <math.h>
#include <stdio.h>

#include "calibrate.h"

void
pl_cli_print_predicted (const PlGraph *g, const PlRunReport *r)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlCalibration) cal = pl_calibration_new (r->backend, false, &error);
  if (!cal)
    {
      printf ("predicted: no cost model for %s: %s\n", pl_backend_name (r->backend), error->message);
      return;
    }
  pl_calibration_use_cache (cal);
  printf ("\npredicted (the layout pass's cost model: %s) vs measured, per layer:\n", pl_calibration_machine (cal));
  printf ("%-24s %-16s %-14s %12s %12s %8s  %s\n", "kernel", "op", "layout", "predicted ms", "measured ms", "ratio",
          "prediction from");
  double sum_p = 0, sum_m = 0, worst = 1;
  int n = 0;
  for (int i = 0; i < r->n_kernels; i++)
    {
      const PlKernelTiming *k = &r->kernels[i];
      const PlNode *node = pl_graph_node_by_id (g, k->node_id);
      if (!node)
        continue;
      PlCost c;
      g_autofree char *layout = NULL;
      const char *op;
      if (!pl_calibration_predict_kernel (cal, node, &c, &op, &layout))
        continue;
      double ratio = c.ms > 0 ? k->median_ms / c.ms : NAN;
      g_autofree char *name = g_utf8_strlen (k->name, -1) > 24 ? g_strdup_printf ("%.21s...", k->name) : g_strdup (k->name);
      printf ("%-24s %-16s %-14s %12.4f %12.4f %7.2fx  %s\n", name, op, layout, c.ms, k->median_ms, ratio,
              pl_cost_source_name (c.source));
      sum_p += c.ms;
      sum_m += k->median_ms;
      if (isfinite (ratio))
        worst = MAX (worst, MAX (ratio, 1 / ratio));
      n++;
    }
  if (n == 0)
    printf ("(no convolution or layout transform ran)\n");
  else
    printf ("%d layers: predicted %.4f ms, measured %.4f ms (ratio %.2fx); worst layer off by %.2fx "
            "(a fused epilogue's time is in the measured column only)\n", n, sum_p, sum_m, sum_m / MAX (sum_p, 1e-12), worst);
}
