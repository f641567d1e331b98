/* runtime-build.c — an executable's steps from kernel plans: one kernel plan
 * per top-level node (a fusion body, or a single op), a buffer for every
 * value, and the kernel table's rows (entries) the steps belong to. Where
 * the buffers go in memory is runtime-memory.c's.
 *
 * A fusion node whose body is not one kernel (kernel-plan.c says why) runs
 * its body node by node — one kernel-table row with several launches, kind
 * "split", never hidden. A single op that cannot be generated runs its
 * reference implementation on host tensors, marked fallback. A SwapOut and
 * the SwapIn that reads it back are copy steps, not kernels.
 *
 * Layouts (layout.h; DESIGN.md §1.4). A buffer holds its value in the
 * value's layout. Generated loops and pools (pool.h: a POOL step calls its
 * function like a loop's) read and write every layout (their indices go
 * through the layouts' strides), so a LayoutTransform is a kernel like any
 * other. What is not layout-aware is fed right here: a
 * view of a value in another layout is a copy loop (the planner makes it
 * one), a GEMM operand in another layout goes through a transpose step
 * first (a launch of the GEMM's row), and a fallback gets logical host
 * tensors and writes its outputs back in their layouts (runtime-run.c).
 * A CONV step reads its weights in the order its kernel wants them: packed
 * once here when they are constants, every run when they are not. A
 * ConvTranspose's X and W are GEMM operands (default layout, as a GEMM's).
 */
#define G_LOG_DOMAIN "passlab"
#include "runtime-private.h"

#include "conv-direct.h"
#include "conv-transpose.h"
#include "kernel-plan-private.h"
#include "schedule.h"

#include <string.h>

/* --- buffers ------------------------------------------------------------------------ */


/* A buffer for v (its dtype, shape and layout) that does not become v's. */
static int
new_buffer (PlExecutable *e, BufKind kind, const PlValue *v, GError **error)
{
  Buffer b = { .kind = kind, .input_index = -1, .alias_of = -1, .first = -1, .last = -1, .offset = -1,
               .host_offset = -1 };
  if (v)
    {
      b.host = kind == BUF_TEMP && pl_value_on_host (v);
      if (!pl_shape_get_dims (&v->shape, b.dims))
        {
          g_autofree char *s = pl_shape_to_string (&v->shape);
          /* '?' dims usually come from Shape ops whose results constant folding makes known */
          g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                       "value '%s' has shape %s: the %s backend compiles static shapes (%s, or run it with the "
                       "reference backend)", v->name, s, pl_backend_name (e->backend),
                       strchr (s, '?') ? "run the simplify pass first, whose constant folding makes most computed "
                                         "shapes static"
                                       : "give the symbolic dims sizes in the graph: f32[8, 4] in the text format, "
                                         "or an ONNX model exported with static shapes");
          return -1;
        }
      b.dtype = v->dtype;
      b.rank = v->shape.rank;
      b.layout = v->layout;
      b.bytes = pl_shape_numel (&v->shape) * (int64_t) pl_dtype_size (v->dtype);
      b.name = v->name;
    }
  g_array_append_val (e->bufs, b);
  return (int) e->bufs->len - 1;
}

/* The buffer of v (v's from now on). */
static int
add_buffer (PlExecutable *e, BufKind kind, const PlValue *v, GError **error)
{
  int i = new_buffer (e, kind, v, error);
  if (i >= 0 && v)
    g_hash_table_insert (e->buf_of, (gpointer) v, GINT_TO_POINTER (i + 1));
  return i;
}

/* A constant the runtime made (its data in t, taken). */
static int
owned_constant (PlExecutable *e, PlTensor *t, const char *name)
{
  Buffer b = { .kind = BUF_CONST, .dtype = t->dtype, .rank = t->rank, .bytes = (int64_t) pl_tensor_nbytes (t),
               .constant = t, .owned = true, .input_index = -1, .alias_of = -1, .first = -1, .last = -1,
               .offset = -1, .host_offset = -1, .name = name };
  memcpy (b.dims, t->dims, sizeof (int64_t) * t->rank);
  g_array_append_val (e->bufs, b);
  return (int) e->bufs->len - 1;
}

int
pl_runtime_scratch_buffer (PlExecutable *e, int64_t bytes, const char *name)
{
  Buffer b = { .kind = BUF_TEMP, .dtype = PL_DTYPE_U8, .rank = 1, .dims = { bytes }, .bytes = bytes,
               .input_index = -1, .alias_of = -1, .first = -1, .last = -1, .offset = -1, .host_offset = -1,
               .name = name };
  g_array_append_val (e->bufs, b);
  return (int) e->bufs->len - 1;
}

/* The buffer holding v: made before, or a constant seen for the first time. */
static int
buffer_of (PlExecutable *e, const PlValue *v, GError **error)
{
  int b = GPOINTER_TO_INT (g_hash_table_lookup (e->buf_of, v)) - 1;
  if (b >= 0)
    return b;
  PlTensor *c = pl_value_constant (v);
  if (c)
    {
      b = add_buffer (e, BUF_CONST, v, error);
      if (b >= 0)
        {
          pl_runtime_buf (e, b)->constant = c;
          pl_runtime_buf (e, b)->bytes = (int64_t) pl_tensor_nbytes (c);
          if (v->layout != PL_LAYOUT_NCHW && c->rank == 4)
            {
              /* constants are stored in the default layout; kernels read this one in its own */
              pl_runtime_buf (e, b)->constant = pl_tensor_new (c->dtype, c->rank, c->dims, NULL);
              pl_runtime_buf (e, b)->owned = true;
              pl_runtime_relayout (c->dtype, c->rank, c->dims, PL_LAYOUT_NCHW, v->layout, c->data,
                                   pl_runtime_buf (e, b)->constant->data);
            }
        }
      return b;
    }
  g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "value '%s' is read before it is computed", v->name);
  return -1;
}

/* --- steps ----------------------------------------------------------------------------- */

static char *
c_name (int index, const char *name)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "k%d_", index);
  for (const char *p = name; *p && s->len < 48; p++)
    g_string_append_c (s, g_ascii_isalnum (*p) ? *p : '_');
  return g_string_free (s, FALSE);
}

static Step
step_new (PlKernelPlan *plan, int entry, const PlNode *node)
{
  Step st = { .plan = plan, .entry = entry, .node = node, .lib_buf = -1, .col_buf = -1, .scratch_buf = -1,
              .pack_src = -1, .pack_buf = -1 };
  st.in_bufs = g_new0 (int, plan->inputs->len + 1);
  st.out_bufs = g_new0 (int, plan->outputs->len + 1);
  return st;
}

/* Input slot `slot` of st (a GEMM operand: BLAS reads row-major) in the
 * default layout: when its buffer holds another, a transpose step into a
 * buffer of its own goes first. */
static bool
read_default_layout (PlExecutable *e, Step *st, int slot, GError **error)
{
  int src = st->in_bufs[slot];
  PlLayout from = pl_runtime_buf (e, src)->layout;
  if (from == PL_LAYOUT_NCHW)
    return true;
  PlValue *v = st->plan->inputs->pdata[slot];
  g_autofree char *name = c_name ((int) e->plans->len, "relayout");
  PlKernelPlan *t = pl_kernel_plan_relayout (name, v, from, PL_LAYOUT_NCHW, error);
  if (!t)
    return false;
  g_ptr_array_add (e->plans, t);
  Step ts = step_new (t, st->entry, st->node);
  ts.in_bufs[0] = src;
  if ((ts.out_bufs[0] = new_buffer (e, BUF_TEMP, v, error)) < 0)
    return false;
  pl_runtime_buf (e, ts.out_bufs[0])->layout = PL_LAYOUT_NCHW;
  g_array_append_val (e->steps, ts);
  st->in_bufs[slot] = ts.out_bufs[0];
  return true;
}

void
pl_runtime_pack_weights (const Step *st, const void *w_oihw, void *packed)
{
  if (st->pack == PACK_DIRECT)
    pl_conv_direct_pack (&st->plan->conv, w_oihw, packed);
  else
    pl_cpu_conv_pack (&st->plan->conv, w_oihw, packed);
}

/* A CONV step's workspace and weights: the im2col matrix (cpu GEMM), the
 * direct kernel's tile (cpu), and the weights in the order the kernel reads
 * them — packed once here when they are constants, else every run. A
 * ConvTranspose's workspace is its column matrix: a chunk of one (image,
 * group)'s on the cpu, one image's (every group) on cuda; its weights are
 * read as they are. */
static bool
prepare_conv (PlExecutable *e, Step *st, GError **error)
{
  PlKernelPlan *p = st->plan;
  PlConvDesc *c = &p->conv;
  bool cpu = e->backend == PL_BACKEND_CPU;
  int64_t es = (int64_t) pl_dtype_size (c->dtype), packed = 0;
  if (c->transpose)
    {
      int64_t elems = cpu ? pl_cpu_conv_col_elems (c) : pl_conv_transpose_image_cols (c);
      st->col_buf = pl_runtime_scratch_buffer (e, elems * es, "col2im");
      return true;
    }
  if (c->impl == PL_CONV_IMPL_DIRECT)
    {
      st->pack = PACK_DIRECT;
      packed = pl_conv_direct_packed_size (c);
      if (cpu)
        {
          if (c->tile[0] > 0 && c->tile[1] > 0 && c->tile[2] > 0)
            memcpy (st->tile, c->tile, sizeof st->tile);
          else
            pl_conv_cpu_pebble_tile (c, e->threads, st->tile);
          char *note = g_strdup_printf ("%s tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, p->note,
                                        st->tile[0], st->tile[1], st->tile[2]);
          g_free (p->note);
          p->note = note;
        }
    }
  else if (cpu && pl_cpu_conv_packs_weights (c))
    {
      st->pack = PACK_GEMM_NHWC;
      packed = c->c_out * c->col_rows;
    }
  if (cpu && c->impl == PL_CONV_IMPL_GEMM && pl_cpu_conv_col_elems (c) > 0)
    st->col_buf = pl_runtime_scratch_buffer (e, pl_cpu_conv_col_elems (c) * es, "im2col");
  if (st->pack == PACK_NONE)
    return true;
  int w = st->in_bufs[c->w_slot];
  Buffer *wb = pl_runtime_buf (e, pl_runtime_root (e, w));
  if (wb->kind == BUF_CONST)
    {
      PlTensor *t = pl_tensor_new (c->dtype, 1, &packed, error);
      if (!t)
        return false;
      pl_runtime_pack_weights (st, wb->constant->data, t->data);
      st->in_bufs[c->w_slot] = owned_constant (e, t, "packed weights");
      return true;
    }
  st->pack_src = w;
  st->pack_buf = st->in_bufs[c->w_slot] = pl_runtime_scratch_buffer (e, packed * es, "packed weights");
  return true;
}

static bool
add_step (PlExecutable *e, PlKernelPlan *plan, int entry, const PlNode *node, GError **error)
{
  g_ptr_array_add (e->plans, plan);
  Step st = step_new (plan, entry, node);
  for (guint k = 0; k < plan->inputs->len; k++)
    {
      PlValue *v = plan->inputs->pdata[k];
      st.in_bufs[k] = -1;
      if (!v || (int) k == plan->lib_slot)
        continue;
      if ((st.in_bufs[k] = buffer_of (e, v, error)) < 0)
        return false;
    }
  for (guint k = 0; k < plan->outputs->len; k++)
    {
      PlValue *v = plan->outputs->pdata[k];
      st.out_bufs[k] = -1;
      if (!v)
        continue;
      int b = GPOINTER_TO_INT (g_hash_table_lookup (e->buf_of, v)) - 1;
      if (b < 0 && (b = add_buffer (e, BUF_TEMP, v, error)) < 0)
        return false;
      st.out_bufs[k] = b;
    }
  if ((plan->kind == PL_PLAN_GEMM || plan->kind == PL_PLAN_CONV) && plan->loop && !plan->in_place)
    {
      /* the raw library result: a buffer of its own, not the value's */
      st.lib_buf = add_buffer (e, BUF_TEMP, plan->inputs->pdata[plan->lib_slot], error);
      if (st.lib_buf < 0)
        return false;
      g_hash_table_remove (e->buf_of, plan->inputs->pdata[plan->lib_slot]);
      for (guint k = 0; k < plan->outputs->len; k++)
        if (plan->outputs->pdata[k] == plan->inputs->pdata[plan->lib_slot])
          g_hash_table_insert (e->buf_of, plan->outputs->pdata[k], GINT_TO_POINTER (st.out_bufs[k] + 1));
    }
  bool gemm_operands = plan->kind == PL_PLAN_GEMM || (plan->kind == PL_PLAN_CONV && plan->conv.transpose);
  if (gemm_operands && (!read_default_layout (e, &st, plan->gemm.a_slot, error) ||
                        !read_default_layout (e, &st, plan->gemm.b_slot, error)))
    return false;
  if (plan->kind == PL_PLAN_CONV && !prepare_conv (e, &st, error))
    return false;
  g_array_append_val (e->steps, st);
  return true;
}

static int
add_entry (PlExecutable *e, const PlNode *node)
{
  Entry en = { .name = g_strdup (node->name), .node_id = node->id, .first_step = (int) e->steps->len };
  const char *kind = node->body ? pl_node_attr_string (node, "kind", "fusion") : "op";
  en.kind = g_strdup (kind);
  en.library = node->body && (strcmp (kind, "library") == 0 || strcmp (kind, "output") == 0);
  /* bytes a kernel must move: its inputs read once, its outputs written once */
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < node->n_inputs; i++)
    if (node->inputs[i] && g_hash_table_add (seen, node->inputs[i]))
      en.bytes += pl_value_bytes (node->inputs[i], 1, NULL);
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i])
      en.bytes += pl_value_bytes (node->outputs[i], 1, NULL);
  g_array_append_val (e->entries, en);
  return (int) e->entries->len - 1;
}

static void
finish_entry (PlExecutable *e, int entry)
{
  Entry *en = &g_array_index (e->entries, Entry, entry);
  en->n_steps = (int) e->steps->len - en->first_step;
  GString *ops = g_string_new (NULL), *notes = g_string_new (NULL);
  bool split = en->note != NULL;   /* a split fusion's note says so already */
  for (int s = en->first_step; s < en->first_step + en->n_steps; s++)
    {
      Step *st = pl_runtime_step (e, s);
      PlKernelPlan *p = st->plan;
      if (*p->ops)
        g_string_append_printf (ops, "%s%s", ops->len ? "+" : "", p->ops);
      en->n_ops += p->n_ops;
      en->flops += p->flops;
      if (p->kind == PL_PLAN_FALLBACK)
        en->fallback = true;
      if (p->kind == PL_PLAN_GEMM || p->kind == PL_PLAN_CONV)
        en->library = true;
      if (p->note && !split)
        g_string_append_printf (notes, "%s%s%s", notes->len ? "; " : "", p->kind == PL_PLAN_FALLBACK ? "fallback: " : "",
                                p->note);
    }
  en->ops = g_string_free (ops, FALSE);
  /* one kernel's note; a GEMM's transposes of its operands first */
  if (!split && notes->len)
    en->note = g_string_free (g_steal_pointer (&notes), FALSE);
  if (notes)
    g_string_free (notes, TRUE);
  if (en->fallback && en->n_steps == 1)
    {
      g_free (en->kind);
      en->kind = g_strdup ("fallback");
    }
}

/* Body inputs read the fusion node's input buffers, body outputs write its
 * output buffers. */
static bool
map_body (PlExecutable *e, const PlNode *node, GError **error)
{
  PlGraph *body = node->body;
  for (int i = 0; i < node->n_inputs; i++)
    {
      int b = buffer_of (e, node->inputs[i], error);
      if (b < 0)
        return false;
      g_hash_table_insert (e->buf_of, body->inputs->pdata[i], GINT_TO_POINTER (b + 1));
    }
  for (guint j = 0; j < body->outputs->len; j++)
    {
      PlValue *bv = body->outputs->pdata[j];
      int b = GPOINTER_TO_INT (g_hash_table_lookup (e->buf_of, node->outputs[j])) - 1;
      if (b < 0 && (b = add_buffer (e, BUF_TEMP, node->outputs[j], error)) < 0)
        return false;
      g_hash_table_insert (e->buf_of, bv, GINT_TO_POINTER (b + 1));
    }
  return true;
}

/* Whether every body output is computed by a body node, each once (else the
 * fusion runs through the interpreter). */
static bool
body_outputs_computed (const PlNode *node)
{
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  for (guint j = 0; j < node->body->outputs->len; j++)
    {
      PlValue *bv = node->body->outputs->pdata[j];
      if (!bv->producer || bv->producer->op == PL_OP_Constant || !g_hash_table_add (seen, bv))
        return false;
    }
  return true;
}

/* The values of order[from..to) that a later body node reads or that leave the body. */
static GPtrArray *
piece_outputs (PlNode *const *order, int from, int to)
{
  g_autoptr (GHashTable) in = g_hash_table_new (NULL, NULL);
  for (int k = from; k < to; k++)
    g_hash_table_add (in, order[k]);
  GPtrArray *outs = g_ptr_array_new ();
  for (int k = from; k < to; k++)
    for (int o = 0; o < order[k]->n_outputs; o++)
      {
        PlValue *v = order[k]->outputs[o];
        bool needed = v && pl_value_is_output (v);
        for (int u = 0; v && u < v->n_uses && !needed; u++)
          needed = !g_hash_table_contains (in, v->uses[u].node);
        if (needed)
          g_ptr_array_add (outs, v);
      }
  return outs;
}

/* One body node on its own: a view shares its source's buffer (unless it
 * leaves the body: then a copy loop), anything else is its own kernel. */
static bool
single_body_node (PlExecutable *e, PlNode *x, int entry, GError **error)
{
  g_autofree char *name = c_name ((int) e->plans->len, x->name);
  PlKernelPlan *p = pl_kernel_plan_for_node (name, x, error);
  if (!p)
    return false;
  if (p->kind == PL_PLAN_ALIAS)
    {
      pl_kernel_plan_free (p);
      int src = buffer_of (e, x->inputs[0], error);
      if (src < 0)
        return false;
      if (!g_hash_table_contains (e->buf_of, x->outputs[0]))
        {
          int b = add_buffer (e, BUF_ALIAS, x->outputs[0], error);
          if (b < 0)
            return false;
          pl_runtime_buf (e, b)->alias_of = src;
          return true;
        }
      if (!(p = pl_kernel_plan_new (name, &x, 1, &x->outputs[0], 1, NULL, error)))
        return false;
    }
  return add_step (e, p, entry, x, error);
}

/* A fusion node that is not one kernel: its body cut, in topological order,
 * into the longest runs of nodes that each are one kernel (a run never
 * makes a cycle). Loop/input/stitch regions with several row spaces become a
 * few kernels this way rather than one per op. */
static bool
split_fusion (PlExecutable *e, const PlNode *node, int entry, const char *why, GError **error)
{
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (node->body, &n, error);
  if (!order)
    return false;
  for (int i = 0; i < n;)
    {
      PlKernelPlan *best = NULL;
      int best_end = i + 1;
      for (int end = i + 2; end <= n; end++)
        {
          g_autoptr (GPtrArray) outs = piece_outputs (order, i, end);
          g_autofree char *name = c_name ((int) e->plans->len, order[end - 1]->name);
          PlKernelPlan *p = outs->len ? pl_kernel_plan_new (name, order + i, end - i, (PlValue *const *) outs->pdata,
                                                            (int) outs->len, NULL, NULL) : NULL;
          if (!p)
            {
              if (outs->len)
                break;
              continue;
            }
          pl_kernel_plan_free (best);
          best = p;
          best_end = end;
        }
      if (best && !add_step (e, best, entry, order[best_end - 1], error))
        return false;
      if (!best && !single_body_node (e, order[i], entry, error))
        return false;
      i = best_end;
    }
  Entry *en = &g_array_index (e->entries, Entry, entry);
  g_free (en->kind);
  en->kind = g_strdup ("split");
  en->note = g_strdup_printf ("%s fusion, not one kernel (%s): %d launches", pl_node_attr_string (node, "kind", "a"),
                              why, (int) e->steps->len - en->first_step);
  return true;
}

/* A SwapOut / SwapIn: a copy between the arena and the host pool, timed as
 * such (not the reference fallback its plan would be). */
static void
mark_copy (PlExecutable *e, int entry, int dir)
{
  Entry *en = &g_array_index (e->entries, Entry, entry);
  Step *st = pl_runtime_step (e, en->first_step);
  st->copy = dir;
  int64_t bytes = st->out_bufs[0] >= 0 ? pl_runtime_buf (e, st->out_bufs[0])->bytes : 0;
  g_autofree char *hb = g_format_size_full ((guint64) bytes, G_FORMAT_SIZE_IEC_UNITS);
  en->fallback = false;
  g_free (en->kind);
  en->kind = g_strdup (dir == COPY_OUT ? "swap-out" : "swap-in");
  g_free (en->note);
  en->note = g_strdup_printf (dir == COPY_OUT ? "copy %s device -> host" : "copy %s host -> device", hb);
}

/* A Split into parts of different sizes is no one loop (its outputs differ
 * in shape), but each part is: a kernel per output, under one table row.
 * NULL when some part cannot be planned (the node then falls back). */
static GPtrArray *
plan_split_parts (PlExecutable *e, PlNode *node)
{
  GPtrArray *plans = g_ptr_array_new_with_free_func ((GDestroyNotify) pl_kernel_plan_free);
  for (int i = 0; i < node->n_outputs; i++)
    {
      if (!node->outputs[i])
        continue;
      g_autofree char *name = c_name ((int) (e->plans->len + plans->len), node->outputs[i]->name);
      PlKernelPlan *p = pl_kernel_plan_new (name, &node, 1, &node->outputs[i], 1, NULL, NULL);
      if (!p)
        {
          g_ptr_array_unref (plans);
          return NULL;
        }
      g_ptr_array_add (plans, p);
    }
  return plans;
}

static bool
build_node (PlExecutable *e, PlNode *node, GError **error)
{
  g_autofree char *name = c_name ((int) e->plans->len, node->name);
  g_autoptr (GError) local = NULL;
  if (node->body && !body_outputs_computed (node))
    {
      /* the body hands an input or a constant straight out: run it as the interpreter does */
      int entry = add_entry (e, node);
      PlKernelPlan *fb = pl_kernel_plan_fallback (name, node, "a body output is not computed in the body");
      bool ok = add_step (e, fb, entry, node, error);
      finish_entry (e, entry);
      return ok;
    }
  PlKernelPlan *p = pl_kernel_plan_for_node (name, node, &local);
  if (node->body && !map_body (e, node, error))
    {
      pl_kernel_plan_free (p);
      return false;
    }
  if (p && p->kind == PL_PLAN_ALIAS)
    {
      int src = buffer_of (e, node->inputs[0], error);
      if (src < 0)
        {
          pl_kernel_plan_free (p);
          return false;
        }
      int b = add_buffer (e, BUF_ALIAS, node->outputs[0], error);
      pl_kernel_plan_free (p);
      if (b < 0)
        return false;
      pl_runtime_buf (e, b)->alias_of = src;
      return true;
    }
  if (p && p->kind == PL_PLAN_FALLBACK && !node->body && !pl_op_info (node->op)->eval)
    {
      g_autofree char *d = pl_node_describe (node);
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s is not executable", d);
      pl_kernel_plan_free (p);
      return false;
    }
  g_autoptr (GPtrArray) parts = p && p->kind == PL_PLAN_FALLBACK && node->op == PL_OP_Split && !node->body
                                 ? plan_split_parts (e, node) : NULL;
  if (parts)
    {
      int entry = add_entry (e, node);
      pl_kernel_plan_free (p);
      Entry *en = &g_array_index (e->entries, Entry, entry);
      en->note = g_strdup_printf ("a kernel per part (parts of different sizes): %u launches", parts->len);
      bool ok = true;
      while (ok && parts->len > 0)   /* add_step owns each plan it is given */
        ok = add_step (e, g_ptr_array_steal_index (parts, 0), entry, node, error);
      finish_entry (e, entry);
      en = &g_array_index (e->entries, Entry, entry);
      g_free (en->ops);
      en->ops = g_strdup ("Split");
      en->n_ops = 1;
      return ok;
    }
  int entry = add_entry (e, node);
  bool ok = p ? add_step (e, p, entry, node, error) : split_fusion (e, node, entry, local->message, error);
  finish_entry (e, entry);
  if (ok && p && !node->body && (node->op == PL_OP_SwapOut || node->op == PL_OP_SwapIn))
    {
      mark_copy (e, entry, node->op == PL_OP_SwapOut ? COPY_OUT : COPY_IN);
      Step *st = pl_runtime_step (e, g_array_index (e->entries, Entry, entry).first_step);
      PlLayout from = pl_runtime_buf (e, st->in_bufs[0])->layout, to = pl_runtime_buf (e, st->out_bufs[0])->layout;
      if (from != to && e->backend == PL_BACKEND_CUDA)
        {
          /* the cpu reorders while it copies; an asynchronous device copy cannot */
          g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s copies '%s' stored %s into '%s' declared %s: "
                       "a swap copy keeps the layout (give its output the input's)", node->name, node->inputs[0]->name,
                       pl_layout_name (from), node->outputs[0]->name, pl_layout_name (to));
          return false;
        }
    }
  if (ok && p && p->kind == PL_PLAN_FALLBACK && e->backend == PL_BACKEND_CPU && !node->body &&
      (node->op == PL_OP_CompressFp16 || node->op == PL_OP_DecompressFp16))
    {
      /* the conversion loop runs on the arena buffers themselves, not on host copies */
      Entry *en = &g_array_index (e->entries, Entry, entry);
      pl_runtime_step (e, en->first_step)->convert = node->op == PL_OP_CompressFp16 ? CONVERT_F16 : CONVERT_F32;
      en->fallback = false;
      g_free (en->kind);
      en->kind = g_strdup ("convert");
      g_free (en->note);
      en->note = g_strdup (node->op == PL_OP_CompressFp16 ? "f32 -> f16 on device buffers (runtime loop, round to nearest even)"
                                                          : "f16 -> f32 on device buffers (runtime loop, exact)");
    }
  return ok;
}

/* --- building --------------------------------------------------------------------------- */

/* Plans and buffers for every node; the graph outputs' buffers. */
bool
pl_runtime_build (PlExecutable *e, GError **error)
{
  const PlGraph *g = e->g;
  for (guint i = 0; i < g->inputs->len; i++)
    {
      int b = add_buffer (e, BUF_INPUT, g->inputs->pdata[i], error);
      if (b < 0)
        return false;
      pl_runtime_buf (e, b)->input_index = (int) i;
    }
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, error);
  if (!order)
    return false;
  for (int i = 0; i < n; i++)
    if (!build_node (e, order[i], error))
      return false;
  e->output_bufs = g_new0 (int, g->outputs->len + 1);
  for (guint i = 0; i < g->outputs->len; i++)
    {
      PlValue *v = g->outputs->pdata[i];
      if ((e->output_bufs[i] = buffer_of (e, v, error)) < 0)
        return false;
    }
  pl_runtime_share_in_place (e);
  return true;
}
