/* timing.c — the seed's timing analysis (TAT / TRT / TTS, timing.h), in one
 * pass over the schedule.
 *
 * The seed (IBM LMS, fig. 10b) walks the graph from its sources with a work
 * set: a node is processed once all its inputs have a known TAT. Walking a
 * topological order visits the nodes in an order that work set could have
 * taken, so the result is the same and the cost is linear: every node and
 * every edge is looked at once. The order is pl_graph_topo_order (control
 * edges included), which is also the schedule the memory profile uses, so
 * the serial model's times and the memory curve describe the same run.
 */
#define G_LOG_DOMAIN "passlab"
#include "timing.h"

#include <math.h>
#include <string.h>

#include "cost.h"
#include "schedule.h"

#define DEFAULT_DEVICE_GBPS   2000.0  /* HBM of a current data-centre GPU */
#define DEFAULT_DEVICE_TFLOPS 50.0    /* its f32 rate, roughly */
#define DEFAULT_LINK_GBPS     25.0    /* PCIe 4.0 x16, as achieved with pinned memory */
#define DEFAULT_LAUNCH_US     5.0     /* kernel launch or copy issue */

/* The streams of the serial model. */
enum { STREAM_NONE = -1, STREAM_COMPUTE, STREAM_D2H, STREAM_H2D, N_STREAMS };

void
pl_timing_options_init (PlTimingOptions *o)
{
  *o = (PlTimingOptions) {
    .device_gbps = DEFAULT_DEVICE_GBPS,
    .device_tflops = DEFAULT_DEVICE_TFLOPS,
    .link_gbps = DEFAULT_LINK_GBPS,
    .launch_us = DEFAULT_LAUNCH_US,
    .serial = false,
    .sym_size = 1,
  };
}

/* --- the cost model ---------------------------------------------------------- */

double
pl_timing_copy_ms (int64_t bytes, const PlTimingOptions *o)
{
  return o->launch_us * 1e-3 + (double) bytes / (o->link_gbps * 1e9) * 1e3;
}

double
pl_timing_model_latency (const PlNode *node, const PlTimingOptions *o, bool *assumed)
{
  bool dummy = false;
  if (assumed == NULL)
    assumed = &dummy;
  if (pl_node_is_metadata_only (node))
    return 0.0;
  if (node->op == PL_OP_SwapOut || node->op == PL_OP_SwapIn)
    {
      const PlValue *x = node->n_inputs > 0 ? node->inputs[0] : NULL;
      return pl_timing_copy_ms (x ? pl_value_bytes (x, o->sym_size, assumed) : 0, o);
    }
  int64_t bytes = 0;
  for (int i = 0; i < node->n_inputs; i++)
    if (node->inputs[i])
      bytes += pl_value_bytes (node->inputs[i], o->sym_size, assumed);
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i])
      bytes += pl_value_bytes (node->outputs[i], o->sym_size, assumed);
  double flops = (double) pl_node_flops (node, o->sym_size, assumed);
  return o->launch_us * 1e-3 + (double) bytes / (o->device_gbps * 1e9) * 1e3
         + flops / (o->device_tflops * 1e12) * 1e3;
}

static int
stream_of (const PlNode *node, double latency)
{
  if (node->op == PL_OP_SwapOut)
    return STREAM_D2H;
  if (node->op == PL_OP_SwapIn)
    return STREAM_H2D;
  if (pl_node_is_metadata_only (node) && latency == 0.0)
    return STREAM_NONE;
  return STREAM_COMPUTE;
}

/* --- the analysis ------------------------------------------------------------- */

void
pl_timing_analysis_free (PlTimingAnalysis *t)
{
  if (t == NULL)
    return;
  g_free (t->order);
  g_free (t->step);
  g_free (t->latency);
  g_free (t->trt);
  g_free (t->finish);
  g_free (t->tat);
  g_free (t->edges);
  g_free (t->first_edge);
  g_free (t);
}

static double *
nan_array (guint32 n)
{
  double *a = g_new (double, MAX (n, 1));
  for (guint32 i = 0; i < n; i++)
    a[i] = NAN;
  return a;
}

/* Latencies of every scheduled node: measured where given, else the model. */
static void
fill_latencies (PlTimingAnalysis *t, const PlTimingOptions *o)
{
  for (int s = 0; s < t->n_steps; s++)
    {
      const PlNode *node = t->order[s];
      t->latency[node->id] = pl_timing_model_latency (node, o, &t->assumed_sizes);
    }
  for (int k = 0; k < o->n_measured; k++)
    {
      guint32 id = o->measured_ids[k];
      double ms = o->measured_ms[k];
      if (id < t->n_node_ids && t->step[id] >= 0 && isfinite (ms) && ms >= 0)
        {
          t->latency[id] = ms;
          t->n_measured++;
        }
    }
}

PlTimingAnalysis *
pl_timing_analyze (const PlGraph *g, const PlTimingOptions *o, GError **error)
{
  g_return_val_if_fail (g != NULL, NULL);
  PlTimingOptions defaults;
  if (o == NULL)
    {
      pl_timing_options_init (&defaults);
      o = &defaults;
    }

  int n = 0;
  PlNode **order = pl_graph_topo_order (g, &n, error);
  if (order == NULL)
    return NULL;

  PlTimingAnalysis *t = g_new0 (PlTimingAnalysis, 1);
  t->graph = g;
  t->options = *o;
  t->options.measured_ids = NULL;
  t->options.measured_ms = NULL;
  t->options.n_measured = 0;
  t->n_steps = n;
  t->order = order;
  t->n_node_ids = g->next_node_id;
  t->n_value_ids = g->next_value_id;
  t->step = g_new (int, MAX (t->n_node_ids, 1));
  memset (t->step, 0xff, sizeof (int) * MAX (t->n_node_ids, 1));  /* -1 */
  t->first_edge = g_new0 (int, MAX (t->n_node_ids, 1));
  t->latency = nan_array (t->n_node_ids);
  t->trt = nan_array (t->n_node_ids);
  t->finish = nan_array (t->n_node_ids);
  t->tat = nan_array (t->n_value_ids);

  int n_edges = (int) g->outputs->len;
  for (int s = 0; s < n; s++)
    {
      t->step[order[s]->id] = s;
      n_edges += order[s]->n_inputs;
    }
  fill_latencies (t, o);

  /* Sources: graph inputs, constants (and values under construction that
   * have no producer) arrive at 0. */
  for (guint i = 0; i < g->values->len; i++)
    {
      const PlValue *v = g->values->pdata[i];
      if (v->producer == NULL)
        t->tat[v->id] = 0.0;
    }

  t->edges = g_new0 (PlTimingEdge, MAX (n_edges, 1));
  double stream_free[N_STREAMS] = { 0 };
  int e = 0;
  for (int s = 0; s < n; s++)
    {
      const PlNode *node = order[s];
      double ready = 0.0;
      for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i])
          ready = MAX (ready, t->tat[node->inputs[i]->id]);
      for (int c = 0; c < node->n_controls; c++)
        ready = MAX (ready, t->finish[node->controls[c].node->id]);

      double lat = t->latency[node->id];
      int stream = stream_of (node, lat);
      double start = ready;
      if (o->serial && stream != STREAM_NONE)
        {
          start = MAX (start, stream_free[stream]);
          stream_free[stream] = start + lat;
        }
      t->trt[node->id] = start;
      t->finish[node->id] = start + lat;
      t->makespan = MAX (t->makespan, start + lat);
      for (int k = 0; k < node->n_outputs; k++)
        if (node->outputs[k])
          t->tat[node->outputs[k]->id] = start + lat;

      t->first_edge[node->id] = e;
      for (int i = 0; i < node->n_inputs; i++, e++)
        {
          const PlValue *v = node->inputs[i];
          PlTimingEdge *edge = &t->edges[e];
          *edge = (PlTimingEdge) { .value = v, .consumer = node, .index = i, .trt = start, .tat = NAN, .tts = NAN };
          if (v)
            {
              edge->bytes = pl_value_bytes (v, o->sym_size, &t->assumed_sizes);
              edge->tat = t->tat[v->id];
              edge->tts = start - edge->tat;
            }
        }
    }

  /* Graph outputs are required when the run ends. */
  for (guint i = 0; i < g->outputs->len; i++, e++)
    {
      const PlValue *v = g->outputs->pdata[i];
      double tat = t->tat[v->id];
      t->edges[e] = (PlTimingEdge) {
        .value = v, .consumer = NULL, .index = (int) i,
        .bytes = pl_value_bytes (v, o->sym_size, &t->assumed_sizes),
        .tat = tat, .trt = t->makespan, .tts = t->makespan - tat,
      };
    }
  t->n_edges = e;
  t->n_output_edges = (int) g->outputs->len;
  return t;
}

/* --- lookups ---------------------------------------------------------------------- */

static bool
node_known (const PlTimingAnalysis *t, guint32 node_id)
{
  return node_id < t->n_node_ids && t->step[node_id] >= 0;
}

double
pl_timing_tat (const PlTimingAnalysis *t, guint32 value_id)
{
  return value_id < t->n_value_ids ? t->tat[value_id] : NAN;
}

double
pl_timing_trt (const PlTimingAnalysis *t, guint32 node_id)
{
  return node_known (t, node_id) ? t->trt[node_id] : NAN;
}

double
pl_timing_latency (const PlTimingAnalysis *t, guint32 node_id)
{
  return node_known (t, node_id) ? t->latency[node_id] : NAN;
}

double
pl_timing_finish (const PlTimingAnalysis *t, guint32 node_id)
{
  return node_known (t, node_id) ? t->finish[node_id] : NAN;
}

const PlTimingEdge *
pl_timing_edge (const PlTimingAnalysis *t, guint32 node_id, int input_index)
{
  if (!node_known (t, node_id))
    return NULL;
  const PlNode *node = t->order[t->step[node_id]];
  if (input_index < 0 || input_index >= node->n_inputs)
    return NULL;
  return &t->edges[t->first_edge[node_id] + input_index];
}

double
pl_timing_tts (const PlTimingAnalysis *t, guint32 node_id, int input_index)
{
  const PlTimingEdge *e = pl_timing_edge (t, node_id, input_index);
  return e ? e->tts : NAN;
}

/* --- the table ------------------------------------------------------------------ */

char *
pl_timing_size_text (int64_t bytes)
{
  /* g_format_size puts a no-break space before the unit, which breaks
   * printf's column widths and plain-text searches */
  g_autofree char *s = g_format_size_full ((guint64) MAX (bytes, 0), G_FORMAT_SIZE_IEC_UNITS);
  GString *out = g_string_new (NULL);
  for (const char *c = s; *c; c++)
    if ((guchar) c[0] == 0xc2 && (guchar) c[1] == 0xa0)
      g_string_append_c (out, ' '), c++;
    else
      g_string_append_c (out, *c);
  return g_string_free (out, FALSE);
}

static int
compare_slack_desc (gconstpointer a, gconstpointer b)
{
  const PlTimingEdge *x = *(const PlTimingEdge *const *) a;
  const PlTimingEdge *y = *(const PlTimingEdge *const *) b;
  if (x->tts != y->tts)
    return x->tts < y->tts ? 1 : -1;
  if (x->bytes != y->bytes)
    return x->bytes < y->bytes ? 1 : -1;
  return x < y ? -1 : x > y;   /* stable: schedule order */
}

static const char *
producer_name (const PlValue *v)
{
  if (v->producer)
    return v->producer->name;
  return v->constant ? "(constant)" : "(input)";
}

char *
pl_timing_table (const PlTimingAnalysis *t, int top)
{
  GString *out = g_string_new (NULL);
  const PlTimingOptions *o = &t->options;
  g_string_append_printf (out, "%d nodes, %d edges, makespan %.4f ms (%s model: %.0f GB/s, %.1f TFLOP/s, "
                          "link %.1f GB/s, launch %.1f us%s)\n",
                          t->n_steps, t->n_edges, t->makespan,
                          o->serial ? "serial" : "dataflow", o->device_gbps, o->device_tflops, o->link_gbps,
                          o->launch_us, t->n_measured ? ", some times measured" : "");

  g_autoptr (GPtrArray) rows = g_ptr_array_new ();
  for (int e = 0; e < t->n_edges; e++)
    if (t->edges[e].value != NULL && t->edges[e].value->constant == NULL)
      g_ptr_array_add (rows, &t->edges[e]);
  g_ptr_array_sort (rows, compare_slack_desc);
  guint shown = top > 0 ? MIN ((guint) top, rows->len) : rows->len;

  /* Column widths from what is shown, capped so one long name does not
   * push the numbers off the screen. */
  int wv = 5, wp = 8, wc = 8;
  for (guint r = 0; r < shown; r++)
    {
      const PlTimingEdge *e = rows->pdata[r];
      wv = MAX (wv, (int) strlen (e->value->name));
      wp = MAX (wp, (int) strlen (producer_name (e->value)));
      wc = MAX (wc, (int) strlen (e->consumer ? e->consumer->name : "(output)"));
    }
  wv = MIN (wv, 40), wp = MIN (wp, 32), wc = MIN (wc, 32);

  g_string_append_printf (out, "%-*s %10s %-4s  %-*s %-*s %11s %11s %11s\n", wv, "value", "size", "mem", wp,
                          "producer", wc, "consumer", "TAT ms", "TRT ms", "TTS ms");
  for (guint r = 0; r < shown; r++)
    {
      const PlTimingEdge *e = rows->pdata[r];
      g_autofree char *size = pl_timing_size_text (e->bytes);
      g_string_append_printf (out, "%-*.*s %10s %-4s  %-*.*s %-*.*s %11.4f %11.4f %11.4f\n", wv, wv,
                              e->value->name, size, pl_value_on_host (e->value) ? "host" : "dev", wp, wp,
                              producer_name (e->value), wc, wc,
                              e->consumer ? e->consumer->name : "(output)", e->tat, e->trt, e->tts);
    }
  if (shown < rows->len)
    g_string_append_printf (out, "... %u more edges\n", rows->len - shown);
  return g_string_free (out, FALSE);
}
