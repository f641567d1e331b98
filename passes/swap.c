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
 */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"
#include "rewrite.h"
#include "schedule.h"
#include "timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINES 40            /* tensors described one per line in the report */

typedef enum { MODE_SWAP, MODE_COMPRESS, MODE_BOTH } Mode;

typedef struct {
  double          th_tts;        /* ms; < 0: per tensor, its round-trip time */
  int64_t         th_s;          /* bytes */
  int             n;             /* most tensors; 0: no limit */
  Mode            mode;
  int             prefetch_distance;
  bool            serialize;
  bool            outputs;
  int64_t         workspace;     /* bytes a convolution needs beside its inputs and outputs */
  PlTimingOptions timing;
} Params;

typedef struct {
  guint32 node_id;
  int     index;
} Use;

/* One restoration: a SwapIn and/or DecompressFp16 read by `uses`. */
typedef struct {
  GArray *uses;        /* Use, the far consumers of this group */
  int     c_step;      /* the first consumer's step */
  int     q_step;      /* the prefetch trigger's step */
} Restore;

typedef struct {
  guint32 value_id;
  char   *name;
  int64_t bytes;
  bool    compress, swap;   /* the reduction: CompressFp16, SwapOut, or both */
  int     anchor_step;      /* reductions go after this step (P), or before it for graph inputs */
  bool    anchor_before;
  int     serialize_step;   /* -1: none */
  GArray *restores;         /* Restore */
  bool    to_output;        /* the graph output is delivered from host memory */
  double  slack;            /* the largest slack among the moved edges */
  double  threshold;        /* the slack threshold it passed */
} Candidate;

typedef struct {
  int     serialize, prefetch, restorations, outputs;
  int64_t swapped, compressed;
} Counts;

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

/* --- planning ---------------------------------------------------------------------- */

static void
candidate_free (Candidate *c)
{
  for (guint i = 0; c->restores && i < c->restores->len; i++)
    g_array_unref (g_array_index (c->restores, Restore, i).uses);
  if (c->restores)
    g_array_unref (c->restores);
  g_free (c->name);
  g_free (c);
}

/* The device bytes of the reduced form, and what one restoration copies. */
static int64_t
kept_bytes (const Candidate *c)
{
  return c->swap ? 0 : c->bytes / 2;
}

static int64_t
copied_bytes (const Candidate *c)
{
  return c->compress ? c->bytes / 2 : c->bytes;
}

/* Time of the reduction plus one restoration: the least slack that can hide
 * them (the automatic threshold). */
static double
round_trip_ms (int64_t bytes, bool compress, bool swap, const PlTimingOptions *o)
{
  int64_t moved = compress ? bytes / 2 : bytes;
  double ms = 0;
  if (swap)
    ms += 2 * pl_timing_copy_ms (moved, o);
  if (compress)  /* each conversion reads one form and writes the other */
    ms += 2 * (o->launch_us * 1e-3 + (double) (bytes + bytes / 2) / (o->device_gbps * 1e9) * 1e3);
  return ms;
}

/* The restoration's copy time, which the prefetch trigger must leave before
 * the consumer; a decompression runs on the compute stream and cannot be
 * hidden, so compress-only restorations go right before their consumer. */
static double
restore_lead_ms (const Candidate *c, const PlTimingOptions *o)
{
  return c->swap ? pl_timing_copy_ms (copied_bytes (c), o) : 0.0;
}

static bool
is_memory_op (const PlNode *node)
{
  return node && pl_op_info (node->op)->category == PL_CAT_MEMORY;
}

/* Values the pass leaves alone: constants (weights, not in the device
 * curve), host values, what the memory ops make, and tensors a memory op
 * already reads (moved by an earlier run). */
static bool
movable (const PlValue *v)
{
  if (v->constant || is_memory_op (v->producer))
    return false;
  for (int u = 0; u < v->n_uses; u++)
    if (is_memory_op (v->uses[u].node))
      return false;
  return true;
}

/* The prefetch trigger of a restoration whose first consumer is at c_step:
 * in [lo, c_step - 1]; -1 when that is empty. */
static int
choose_q (const PlTimingAnalysis *t, const Params *p, int lo, int c_step, double lead_ms)
{
  if (lo > c_step - 1)
    return -1;
  if (p->prefetch_distance > 0)
    return MAX (lo, c_step - p->prefetch_distance);
  double need = t->trt[t->order[c_step]->id] - lead_ms;
  for (int s = c_step - 1; s >= lo; s--)
    if (t->finish[t->order[s]->id] <= need + 1e-12)
      return s;
  return lo;  /* the copy cannot be hidden: start it as early as the plan allows */
}

/* The step of the next node after the reduction that allocates at least
 * half of what it frees, before `limit` (at the latest the first prefetch
 * trigger); -1 if none. */
static int
choose_serialize (const PlTimingAnalysis *t, const Candidate *c, int limit)
{
  int64_t freed = c->bytes - kept_bytes (c);
  int first = c->anchor_before ? c->anchor_step : c->anchor_step + 1;
  for (int s = first; s < MIN (limit, t->n_steps); s++)
    {
      const PlNode *node = t->order[s];
      int64_t out = 0;
      for (int k = 0; k < node->n_outputs; k++)
        if (node->outputs[k] && !pl_value_on_host (node->outputs[k]))
          out += pl_value_bytes (node->outputs[k], t->options.sym_size, NULL);
      if (out > 0 && 2 * out >= freed)
        return s;
    }
  return -1;
}

/* The last tight step before `step` (tight: sorted steps of t's schedule),
 * -1 if none. */
static int
tight_before (const GArray *tight, int step)
{
  int last = -1;
  for (guint i = 0; tight && i < tight->len && g_array_index (tight, int, i) < step; i++)
    last = g_array_index (tight, int, i);
  return last;
}

/* Splits c's far edges (in schedule order) into restorations and picks
 * their prefetch triggers. Edges whose consumer comes too soon after the
 * reduction for a restoration are dropped (those consumers keep reading x).
 * No restored copy waits across a tight step it is not read by: a group
 * ends before it and the next restoration starts after it. */
static void
plan_restores (const PlTimingAnalysis *t, const Params *p, const GArray *tight, Candidate *c, GArray *far)
{
  double lead = restore_lead_ms (c, &t->options);
  double gap = MAX (c->threshold, lead);
  int lo = c->anchor_before ? c->anchor_step : c->anchor_step + 1;
  Restore *cur = NULL;
  double last_start = 0;
  int last_step = -1;

  for (guint i = 0; i < far->len; i++)
    {
      const PlTimingEdge *e = g_array_index (far, const PlTimingEdge *, i);
      int step = t->step[e->consumer->id];
      int wall = tight_before (tight, step);
      if (cur && (e->trt - last_start <= gap || step == last_step) && wall <= last_step)
        {
          g_array_append_val (cur->uses, ((Use) { e->consumer->id, e->index }));
          last_start = e->trt, last_step = step;
          continue;
        }
      /* a new restoration, no earlier than the previous group's last
       * consumer nor the last tight step before its own */
      int q = choose_q (t, p, MAX (cur ? MAX (lo, last_step) : lo, wall), step, lead);
      if (q < 0)
        continue;
      Restore r = { g_array_new (FALSE, FALSE, sizeof (Use)), step, q };
      g_array_append_val (r.uses, ((Use) { e->consumer->id, e->index }));
      g_array_append_val (c->restores, r);
      cur = &g_array_index (c->restores, Restore, c->restores->len - 1);
      last_start = e->trt, last_step = step;
    }
}

static int
compare_candidates (gconstpointer a, gconstpointer b)
{
  const Candidate *x = *(Candidate *const *) a, *y = *(Candidate *const *) b;
  if (x->bytes != y->bytes)
    return x->bytes < y->bytes ? 1 : -1;
  if (x->slack != y->slack)
    return x->slack < y->slack ? 1 : -1;
  return x->value_id < y->value_id ? -1 : x->value_id > y->value_id;
}

/* Every tensor with an edge of slack > th_tts and size > th_s, planned, the
 * largest first. */
static GPtrArray *
plan_candidates (const PlTimingAnalysis *t, const Params *p, double th_tts, int64_t th_s, const GArray *tight)
{
  const PlGraph *g = t->graph;
  GPtrArray *cands = g_ptr_array_new_with_free_func ((GDestroyNotify) candidate_free);
  /* far edges per value id, in schedule order (t->edges is) */
  g_autoptr (GHashTable) far = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_array_unref);
  g_autoptr (GHashTable) out_far = g_hash_table_new (NULL, NULL);

  for (int i = 0; i < t->n_edges; i++)
    {
      const PlTimingEdge *e = &t->edges[i];
      const PlValue *v = e->value;
      if (!v || e->bytes <= th_s || e->bytes <= 0 || v->constant || pl_value_on_host (v))
        continue;
      bool f32 = v->dtype == PL_DTYPE_F32;
      if (p->mode == MODE_COMPRESS && !f32)
        continue;
      bool compress = p->mode != MODE_SWAP && f32;
      bool swap = p->mode != MODE_COMPRESS;
      double th = th_tts >= 0 ? th_tts : round_trip_ms (e->bytes, compress, swap, &t->options);
      if (!(e->tts > th))
        continue;
      if (e->consumer == NULL)
        {
          /* delivered from host memory, in its own dtype (a plain swap, even in mode both) */
          if (p->outputs && p->mode != MODE_COMPRESS)
            g_hash_table_add (out_far, (gpointer) v);
          continue;
        }
      GArray *list = g_hash_table_lookup (far, v);
      if (!list)
        {
          list = g_array_new (FALSE, FALSE, sizeof (const PlTimingEdge *));
          g_hash_table_insert (far, (gpointer) v, list);
        }
      g_array_append_val (list, e);
    }

  g_autoptr (GHashTable) outputs = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < g->outputs->len; i++)
    g_hash_table_add (outputs, g->outputs->pdata[i]);

  /* one candidate per value, in value order (deterministic) */
  for (guint i = 0; i < g->values->len; i++)
    {
      const PlValue *v = g->values->pdata[i];
      GArray *list = g_hash_table_lookup (far, v);
      bool to_output = g_hash_table_contains (out_far, v);
      if ((!list && !to_output) || !movable (v))
        continue;
      /* an output that stays on the device keeps x there until the end: nothing to gain */
      if (!to_output && g_hash_table_contains (outputs, v))
        continue;

      Candidate *c = g_new0 (Candidate, 1);
      c->value_id = v->id;
      c->name = g_strdup (v->name);
      c->bytes = pl_value_bytes (v, t->options.sym_size, NULL);
      c->compress = p->mode != MODE_SWAP && v->dtype == PL_DTYPE_F32 && !to_output;
      c->swap = p->mode != MODE_COMPRESS;
      c->to_output = to_output;
      c->threshold = th_tts >= 0 ? th_tts : round_trip_ms (c->bytes, c->compress, c->swap, &t->options);
      c->restores = g_array_new (FALSE, FALSE, sizeof (Restore));
      if (v->producer)
        c->anchor_step = t->step[v->producer->id];
      else
        {
          /* a graph input: the reduction goes right before its first reader */
          c->anchor_before = true;
          c->anchor_step = t->n_steps;
          for (int u = 0; u < v->n_uses; u++)
            c->anchor_step = MIN (c->anchor_step, t->step[v->uses[u].node->id]);
          if (c->anchor_step >= t->n_steps)
            {
              candidate_free (c);   /* an input nobody reads: there is nothing to schedule around */
              continue;
            }
        }
      for (guint k = 0; list && k < list->len; k++)
        c->slack = MAX (c->slack, g_array_index (list, const PlTimingEdge *, k)->tts);
      if (to_output)
        c->slack = MAX (c->slack, t->makespan - t->tat[v->id]);
      if (list)
        plan_restores (t, p, tight, c, list);
      if (c->restores->len == 0 && !to_output)
        {
          candidate_free (c);
          continue;
        }
      int limit = c->restores->len > 0 ? g_array_index (c->restores, Restore, 0).q_step + 1 : t->n_steps;
      c->serialize_step = p->serialize ? choose_serialize (t, c, limit) : -1;
      g_ptr_array_add (cands, c);
    }
  g_ptr_array_sort (cands, compare_candidates);
  return cands;
}

/* --- rewriting ----------------------------------------------------------------------- */

/* Where inserted nodes go, per step s of t's schedule: before[s] right
 * before node s, then node s, then reduce[s] (reductions free memory), then
 * restore[s] (restorations allocate it). */
typedef struct {
  const PlTimingAnalysis *t;   /* of the unchanged graph; ids carry over to copies */
  GPtrArray **before, **reduce, **restore;
  Counts      counts;
} Placement;

static void
place (GPtrArray **slots, int step, PlNode *node)
{
  if (!slots[step])
    slots[step] = g_ptr_array_new ();
  g_ptr_array_add (slots[step], node);
}

static PlNode *
add_op (PlGraph *g, const char *op, const char *name, const char *suffix, PlValue *x, GError **error)
{
  g_autofree char *base = g_strconcat (name, suffix, NULL);
  return pl_rw_add_op (g, op, base, 1, &x, error);
}

/* Inserts c's reduction and restorations into g (a version of t's graph). */
static bool
apply_candidate (PlGraph *g, const Candidate *c, Placement *pl, GError **error)
{
  const PlTimingAnalysis *t = pl->t;
  PlValue *x = pl_graph_value_by_id (g, c->value_id);
  g_assert (x != NULL);
  GPtrArray **reduce_slots = c->anchor_before ? pl->before : pl->reduce;

  /* the reduction: x -> [CompressFp16 ->] [SwapOut ->] */
  PlValue *reduced = x;
  PlNode *last = NULL;
  if (c->compress)
    {
      if (!(last = add_op (g, "CompressFp16", c->name, "_f16", reduced, error)))
        return false;
      place (reduce_slots, c->anchor_step, last);
      reduced = last->outputs[0];
      pl->counts.compressed += c->bytes;
    }
  if (c->swap)
    {
      if (!(last = add_op (g, "SwapOut", c->name, "_host", reduced, error)))
        return false;
      place (reduce_slots, c->anchor_step, last);
      reduced = last->outputs[0];
      pl->counts.swapped += copied_bytes (c);
    }

  for (guint r = 0; r < c->restores->len; r++)
    {
      const Restore *rs = &g_array_index (c->restores, Restore, r);
      PlValue *restored = reduced;
      PlNode *first = NULL;
      if (c->swap)
        {
          if (!(first = add_op (g, "SwapIn", c->name, "_in", restored, error)))
            return false;
          place (pl->restore, rs->q_step, first);
          restored = first->outputs[0];
        }
      if (c->compress)
        {
          PlNode *d = add_op (g, "DecompressFp16", c->name, "_restored", restored, error);
          if (!d)
            return false;
          /* after its swap-in, right before the consumer; alone, after q */
          if (first)
            place (pl->before, rs->c_step, d);
          else
            place (pl->restore, rs->q_step, first = d);
          restored = d->outputs[0];
        }
      for (guint u = 0; u < rs->uses->len; u++)
        {
          const Use *use = &g_array_index (rs->uses, Use, u);
          pl_node_set_input (pl_graph_node_by_id (g, use->node_id), use->index, restored);
        }
      pl_node_add_control (first, pl_graph_node_by_id (g, t->order[rs->q_step]->id), PL_CONTROL_PREFETCH);
      pl->counts.prefetch++;
      pl->counts.restorations++;
    }

  if (c->to_output)
    {
      /* the output keeps its name: x becomes <x>_dev, the host value takes x's name */
      g_autofree char *dev = g_strconcat (c->name, "_dev", NULL);
      g_autofree char *dev_name = pl_graph_unique_name (g, dev);
      if (!pl_value_rename (x, dev_name, error) || !pl_value_rename (reduced, c->name, error))
        return false;
      for (guint i = 0; i < g->outputs->len; i++)
        if (g->outputs->pdata[i] == x)
          pl_graph_set_output (g, (int) i, reduced);
      pl->counts.outputs++;
    }

  if (c->serialize_step >= 0)
    {
      pl_node_add_control (pl_graph_node_by_id (g, t->order[c->serialize_step]->id), last, PL_CONTROL_SERIALIZE);
      pl->counts.serialize++;
    }
  return true;
}

/* Puts g's nodes in the planned order: t's schedule with the inserted nodes
 * spliced in. The order is topological, so pl_graph_topo_order (a min-heap
 * on insertion order) returns exactly it: the schedule is the plan. */
static void
reorder_nodes (PlGraph *g, const Placement *pl)
{
  const PlTimingAnalysis *t = pl->t;
  g_autoptr (GPtrArray) order = g_ptr_array_sized_new (g->nodes->len);
  for (int s = 0; s < t->n_steps; s++)
    {
      GPtrArray *slots[] = { pl->before[s], NULL, pl->reduce[s], pl->restore[s] };
      for (size_t k = 0; k < G_N_ELEMENTS (slots); k++)
        {
          if (k == 1)
            g_ptr_array_add (order, pl_graph_node_by_id (g, t->order[s]->id));
          for (guint i = 0; slots[k] && i < slots[k]->len; i++)
            g_ptr_array_add (order, slots[k]->pdata[i]);
        }
    }
  pl_graph_set_node_order (g, (PlNode *const *) order->pdata, (int) order->len);
}

/* Applies the first k candidates to g. */
static bool
apply_plan (PlGraph *g, const PlTimingAnalysis *t, GPtrArray *cands, guint k, Counts *counts, GError **error)
{
  Placement pl = { .t = t };
  GPtrArray ***lists[] = { &pl.before, &pl.reduce, &pl.restore };
  for (size_t l = 0; l < G_N_ELEMENTS (lists); l++)
    *lists[l] = g_new0 (GPtrArray *, t->n_steps + 1);
  bool ok = true;
  for (guint i = 0; ok && i < MIN (k, cands->len); i++)
    ok = apply_candidate (g, cands->pdata[i], &pl, error);
  if (ok)
    reorder_nodes (g, &pl);
  for (size_t l = 0; l < G_N_ELEMENTS (lists); l++)
    {
      for (int s = 0; s <= t->n_steps; s++)
        if ((*lists[l])[s])
          g_ptr_array_unref ((*lists[l])[s]);
      g_free (*lists[l]);
    }
  if (counts)
    *counts = pl.counts;
  return ok;
}

/* Whether node runs a convolution (alone or in a fusion): the runtime's
 * im2col and packed weights live beside its inputs and outputs. */
static bool
runs_conv (const PlNode *node)
{
  if (node->op == PL_OP_Conv)
    return true;
  for (guint i = 0; node->body && i < node->body->nodes->len; i++)
    if (runs_conv (node->body->nodes->pdata[i]))
      return true;
  return false;
}

/* The planned device peak of the profile mem: each step's live bytes, plus
 * `workspace` while a convolution runs; *at (may be NULL): the step
 * reaching it. */
static int64_t
planned_peak (const PlMemoryProfile *mem, int64_t workspace, int *at)
{
  int64_t peak = mem->peak_bytes;
  int where = MAX (mem->peak_step, 0);
  for (int s = 0; workspace > 0 && s < mem->n_steps; s++)
    if (mem->live_bytes[s] + workspace > peak && runs_conv (mem->order[s]))
      peak = mem->live_bytes[s] + workspace, where = s;
  if (at)
    *at = where;
  return peak;
}

/* The planned device peak with the first k candidates applied (to a copy),
 * and where it is reached: the step of t's schedule running then (an
 * inserted node counts as the next original node, which it is placed for). */
static bool
peak_with (const PlGraph *g, const PlTimingAnalysis *t, const Params *p, GPtrArray *cands, guint k, int64_t *peak,
           int *at, GError **error)
{
  g_autoptr (PlGraph) copy = pl_graph_copy (g);
  if (!apply_plan (copy, t, cands, k, NULL, error))
    return false;
  g_autoptr (PlMemoryProfile) mem = pl_memory_profile (copy, t->options.sym_size, error);
  if (!mem)
    return false;
  int where;
  *peak = planned_peak (mem, p->workspace, &where);
  if (at)
    {
      *at = t->n_steps - 1;
      for (int s = where; s < mem->n_steps; s++)
        {
          guint32 id = mem->order[s]->id;
          if (id < t->n_node_ids && t->step[id] >= 0)
            {
              *at = t->step[id];
              break;
            }
        }
    }
  return true;
}

/* What the node at step s reads and writes in device memory: while it runs
 * those are live whatever is swapped, so no plan of this schedule has a
 * peak below the largest of them (the floor). An output that may be
 * written in place over an input (pl_in_place_input, as if every input
 * died here: a plan can make it so by restoring a copy for this node)
 * adds nothing: a binary elementwise op holds two tensors, not three. */
static int64_t
step_footprint (const PlTimingAnalysis *t, int s)
{
  const PlNode *node = t->order[s];
  g_autofree bool *dies = g_new (bool, MAX (node->n_inputs, 1));
  for (int k = 0; k < node->n_inputs; k++)
    dies[k] = true;
  int64_t bytes = 0;
  for (int k = 0; k < node->n_inputs + node->n_outputs; k++)
    {
      const PlValue *v = k < node->n_inputs ? node->inputs[k] : node->outputs[k - node->n_inputs];
      if (!v || v->constant || pl_value_on_host (v))
        continue;
      if (k >= node->n_inputs && pl_in_place_input (node, k - node->n_inputs, dies) >= 0)
        continue;
      bool seen = false;   /* a value read twice counts once */
      for (int j = 0; j < k && !seen; j++)
        seen = (j < node->n_inputs ? node->inputs[j] : node->outputs[j - node->n_inputs]) == v;
      if (!seen)
        bytes += pl_value_bytes (v, t->options.sym_size, NULL);
    }
  return bytes;
}

static int64_t
schedule_floor (const PlTimingAnalysis *t, int64_t workspace, int *at)
{
  int64_t floor_bytes = 0;
  *at = -1;
  for (int s = 0; s < t->n_steps; s++)
    {
      int64_t b = step_footprint (t, s) + (runs_conv (t->order[s]) ? workspace : 0);
      if (b > floor_bytes)
        floor_bytes = b, *at = s;
    }
  return floor_bytes;
}

/* --- the budget -------------------------------------------------------------------- */

#define MAX_TIGHT 64   /* tight steps one level may add */

typedef struct {
  GPtrArray *cands;   /* the chosen level's candidates (owned) */
  guint      k;       /* how many to apply */
  double     th_tts;
  int64_t    th_s;
  int        prefetch_distance;
  int        n_tight; /* tight steps the restorations were split at */
  int64_t    peak;    /* planned peak with them */
  bool       met;
} Choice;

static void
insert_sorted (GArray *steps, int s)
{
  guint i = 0;
  while (i < steps->len && g_array_index (steps, int, i) < s)
    i++;
  g_array_insert_val (steps, i, s);
}

static bool
contains (const GArray *steps, int s)
{
  for (guint i = 0; i < steps->len; i++)
    if (g_array_index (steps, int, i) == s)
      return true;
  return false;
}

static void
remove_step (GArray *steps, int s)
{
  for (guint i = 0; i < steps->len; i++)
    if (g_array_index (steps, int, i) == s)
      {
        g_array_remove_index (steps, i);
        return;
      }
}

/* Replaces *cands by the full plan with `tight`, if its peak is at most
 * `limit`; *ok false on error. */
static bool
try_tight (const PlGraph *g, const PlTimingAnalysis *t, const Params *lp, double th_tts, int64_t th_s,
           const GArray *tight, int64_t limit, GPtrArray **cands, int64_t *peak, int *at, bool *ok, GError **error)
{
  g_autoptr (GPtrArray) plan = plan_candidates (t, lp, th_tts, th_s, tight);
  int64_t p;
  int a;
  *ok = peak_with (g, t, lp, plan, plan->len, &p, &a, error);
  if (!*ok || p > limit)
    return false;
  g_ptr_array_unref (*cands);
  *cands = g_steal_pointer (&plan);
  *peak = p, *at = a;
  return true;
}

/* One level's full plan (every candidate), made tighter where it peaks: as
 * long as the peak is over the budget and above the floor, its step
 * becomes tight, i.e. the restored copies that wait across it without
 * being read there are restored again after it (seed fig. 9: several
 * restorations; near the peak a restoration goes right after it instead
 * of hiding its copy earlier). Stops when the peak step is tight already
 * (what is left there is the step's own inputs and outputs, or values
 * nothing moves), when a split raises the peak, or after MAX_TIGHT steps;
 * then drops the tight steps the final peak does not need (each costs
 * copies). Returns the candidates (NULL on error), their peak, and the
 * tight steps in `tight`. */
static GPtrArray *
tighten (const PlGraph *g, const PlTimingAnalysis *t, const Params *lp, double th_tts, int64_t th_s, int64_t budget,
         int64_t floor_bytes, GArray *tight, int64_t *peak, GError **error)
{
  GPtrArray *cands = plan_candidates (t, lp, th_tts, th_s, tight);
  int at;
  bool ok = true;
  *peak = G_MAXINT64;
  if (cands->len == 0)
    return cands;
  if (!peak_with (g, t, lp, cands, cands->len, peak, &at, error))
    goto fail;
  for (int r = 0; *peak > MAX (budget, floor_bytes) && r < MAX_TIGHT && !contains (tight, at); r++)
    {
      int s = at;
      insert_sorted (tight, s);
      if (!try_tight (g, t, lp, th_tts, th_s, tight, *peak, &cands, peak, &at, &ok, error))
        {
          remove_step (tight, s);
          if (!ok)
            goto fail;
          break;
        }
    }
  for (int i = (int) tight->len - 1; i >= 0; i--)
    {
      int s = g_array_index (tight, int, i);
      g_array_remove_index (tight, i);
      if (!try_tight (g, t, lp, th_tts, th_s, tight, *peak, &cands, peak, &at, &ok, error))
        {
          if (!ok)
            goto fail;
          insert_sorted (tight, s);
        }
    }
  return cands;
fail:
  g_ptr_array_unref (cands);
  return NULL;
}

/* The fewest of cands (largest first) whose planned peak is at most
 * `limit`, given that all of them reach it: binary search, assuming more
 * moved tensors never raise the peak. */
static bool
fewest (const PlGraph *g, const PlTimingAnalysis *t, const Params *params, GPtrArray *cands, int64_t limit, guint *k,
        int64_t *peak, GError **error)
{
  guint lo = 0, hi = cands->len;   /* lo does not reach it (the caller knows), hi does */
  while (hi - lo > 1)
    {
      guint mid = lo + (hi - lo) / 2;
      int64_t p;
      if (!peak_with (g, t, params, cands, mid, &p, NULL, error))
        return false;
      if (p <= limit)
        hi = mid, *peak = p;
      else
        lo = mid;
    }
  *k = hi;
  return true;
}

/* Fewest candidates (largest first) whose planned peak fits the budget.
 * When every candidate of a level is not enough, even with its
 * restorations split at the steps where it peaks (tighten), the next level
 * relaxes th_tts to 0, then th_s to 0, then restores every tensor right
 * before its consumer (prefetch_distance 1: least memory, copies no longer
 * hidden). If no level fits, the plan with the lowest peak, with the fewest
 * tensors that reach it. */
static bool
fit_budget (const PlGraph *g, const PlTimingAnalysis *t, const Params *p, int64_t budget, int64_t baseline,
            Choice *best, GError **error)
{
  int floor_step;
  int64_t floor_bytes = schedule_floor (t, p->workspace, &floor_step);
  const struct { double th_tts; int64_t th_s; int distance; } levels[] = {
    { p->th_tts, p->th_s, p->prefetch_distance }, { 0, p->th_s, p->prefetch_distance },
    { 0, 0, p->prefetch_distance }, { 0, 0, 1 },
  };
  *best = (Choice) { .peak = baseline, .th_tts = p->th_tts, .th_s = p->th_s,
                     .prefetch_distance = p->prefetch_distance };
  if (baseline <= budget)
    {
      best->met = true;
      best->cands = g_ptr_array_new ();
      return true;
    }
  for (size_t l = 0; l < G_N_ELEMENTS (levels); l++)
    {
      if (l > 0 && levels[l].th_tts == levels[l - 1].th_tts && levels[l].th_s == levels[l - 1].th_s
          && levels[l].distance == levels[l - 1].distance)
        continue;
      Params lp = *p;
      lp.prefetch_distance = levels[l].distance;
      g_autoptr (GArray) tight = g_array_new (FALSE, FALSE, sizeof (int));
      int64_t peak;
      g_autoptr (GPtrArray) cands = tighten (g, t, &lp, levels[l].th_tts, levels[l].th_s, budget, floor_bytes, tight,
                                             &peak, error);
      if (!cands)
        return false;
      if (cands->len == 0)
        continue;
      if (peak < best->peak || !best->cands)
        {
          g_clear_pointer (&best->cands, g_ptr_array_unref);
          *best = (Choice) { g_ptr_array_ref (cands), cands->len, levels[l].th_tts, levels[l].th_s,
                             levels[l].distance, (int) tight->len, peak, false };
        }
      if (peak > budget)
        continue;
      /* 0 candidates do not fit (baseline > budget), all of them do */
      g_clear_pointer (&best->cands, g_ptr_array_unref);
      *best = (Choice) { g_ptr_array_ref (cands), cands->len, levels[l].th_tts, levels[l].th_s,
                         levels[l].distance, (int) tight->len, peak, true };
      return fewest (g, t, &lp, cands, budget, &best->k, &best->peak, error);
    }
  if (!best->cands)
    best->cands = g_ptr_array_new ();
  if (best->peak >= baseline)
    best->k = 0, best->peak = baseline;   /* nothing helps: move nothing */
  else if (!fewest (g, t, p, best->cands, best->peak, &best->k, &best->peak, error))
    return false;   /* missed, but no tensor moves for nothing */
  return true;
}

/* --- the report ---------------------------------------------------------------------- */

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

static void
report_thresholds (PlPassReport *report, const Params *p, const Choice *c)
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
  int64_t peak_before = planned_peak (before, p.workspace, NULL);
  int64_t budget = 0;
  if (!parse_budget (pl_pass_args_string (args, "budget"), peak_before, &budget, error))
    return false;

  Choice choice = { .th_tts = p.th_tts, .th_s = p.th_s, .prefetch_distance = p.prefetch_distance };
  if (budget > 0)
    {
      if (!fit_budget (g, t, &p, budget, peak_before, &choice, error))
        {
          g_clear_pointer (&choice.cands, g_ptr_array_unref);
          return false;
        }
    }
  else
    {
      choice.cands = plan_candidates (t, &p, p.th_tts, p.th_s, NULL);
      choice.k = p.n > 0 ? MIN ((guint) p.n, choice.cands->len) : choice.cands->len;
    }
  g_autoptr (GPtrArray) cands = choice.cands;

  report_thresholds (report, &p, &choice);
  Counts counts = { 0 };
  if (choice.k > 0)
    {
      if (!apply_plan (g, t, cands, choice.k, &counts, error))
        return false;
      report->changed = true;
    }
  for (guint i = 0; i < MIN (choice.k, MAX_LINES); i++)
    report_tensor (report, t, cands->pdata[i]);
  if (choice.k > MAX_LINES)
    pl_pass_report_printf (report, "... and %u more tensors", choice.k - MAX_LINES);

  g_autoptr (PlMemoryProfile) after = pl_memory_profile (g, p.timing.sym_size, error);
  g_autoptr (PlTimingAnalysis) t_after = after ? pl_timing_analyze (g, &p.timing, error) : NULL;
  if (!t_after)
    return false;
  int64_t peak_after = planned_peak (after, p.workspace, NULL);

  g_autofree char *sw = pl_timing_size_text (counts.swapped);
  g_autofree char *cz = pl_timing_size_text (counts.compressed);
  g_autofree char *pb = pl_timing_size_text (peak_before);
  g_autofree char *pa = pl_timing_size_text (peak_after);
  g_autofree char *hp = pl_timing_size_text (after->host_peak_bytes);
  pl_pass_report_printf (report, "%u tensors moved, %d restorations, %d outputs delivered from host; "
                         "%s swapped to host, %s compressed to f16",
                         choice.k, counts.restorations, counts.outputs, sw, cz);
  g_autofree char *ws = pl_timing_size_text (p.workspace);
  pl_pass_report_printf (report, "planned device peak %s -> %s (host peak %s%s%s)", pb, pa, hp,
                         p.workspace > 0 ? "; a convolution's workspace of " : "", p.workspace > 0 ? ws : "");
  int floor_step;
  int64_t floor_bytes = schedule_floor (t, p.workspace, &floor_step);
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
                               floor_step >= 0 && p.workspace > 0 && runs_conv (t->order[floor_step])
                               ? " with its workspace" : "");
    }
  double overhead = t_after->makespan - t->makespan;
  pl_pass_report_printf (report, "predicted time %.4f ms -> %.4f ms (overhead %+.4f ms: copy and conversion "
                         "time the slack does not hide)", t->makespan, t_after->makespan, overhead);
  pl_pass_report_printf (report, "control edges added: %d serialize, %d prefetch", counts.serialize,
                         counts.prefetch);

  pl_pass_report_count (report, "tensors moved", choice.k);
  pl_pass_report_count (report, "restorations", counts.restorations);
  pl_pass_report_count (report, "outputs to host", counts.outputs);
  pl_pass_report_count (report, "bytes swapped", counts.swapped);
  pl_pass_report_count (report, "bytes compressed", counts.compressed);
  pl_pass_report_count (report, "peak before", peak_before);
  pl_pass_report_count (report, "peak after", peak_after);
  pl_pass_report_count (report, "host peak", after->host_peak_bytes);
  pl_pass_report_count (report, "serialize edges", counts.serialize);
  pl_pass_report_count (report, "prefetch edges", counts.prefetch);
  pl_pass_report_count (report, "overhead ns", (int64_t) llround (overhead * 1e6));
  if (budget > 0)
    {
      pl_pass_report_count (report, "budget", budget);
      pl_pass_report_count (report, "budget met", peak_after <= budget);
      pl_pass_report_count (report, "tight steps", choice.n_tight);
    }
  pl_pass_report_count (report, "floor", floor_bytes);
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
