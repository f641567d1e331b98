/* runtime.c — building an executable: one kernel plan per top-level node
 * (a fusion body, or a single op), buffers for every value, the memory plan
 * and the compiled code. Running it lives in runtime-run.c.
 *
 * Buffers. Graph inputs and constants use the caller's and the graph's
 * tensors (cpu; uploaded on cuda). Every value a kernel produces gets a place
 * in one arena, assigned first fit over the schedule (then by size, largest
 * first, when that packs tighter: pack_arena): allocated when its
 * step runs, freed after its last reader (views share their source's place
 * and keep it alive). An elementwise kernel may store its output in the
 * place of an input it reads for the last time (share_in_place: the rule
 * of pl_in_place_input, which the graph's memory profile follows too). The
 * arena is allocated once; the memory timeline of a run records the bytes
 * in use at each step's start and end.
 *
 * Swapping (DESIGN.md §1.5): a SwapOut's output is a host value
 * (pl_value_on_host) and gets a place in a separate host pool (first fit
 * too; malloc'd on the cpu, pinned on cuda); its SwapOut and the SwapIn
 * that reads it back are copy steps, not kernels. The arena is the device
 * memory — graph inputs included, on both backends — so when the swap pass
 * frees a tensor after its SwapOut, first fit hands that place to the next
 * allocation. With a device budget the arena must fit it.
 *
 * A fusion node whose body is not one kernel (kernel-plan.c says why) runs
 * its body node by node — one kernel-table row with several launches, kind
 * "split", never hidden. A single op that cannot be generated runs its
 * reference implementation on host tensors, marked fallback.
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
#include "cost.h"
#include "schedule.h"

#include <string.h>
#include <unistd.h>

/* --- backends ---------------------------------------------------------------------- */

const char *
pl_backend_name (PlBackend b)
{
  switch (b)
    {
    case PL_BACKEND_CPU: return "cpu";
    case PL_BACKEND_CUDA: return "cuda";
    default: return "reference";
    }
}

bool
pl_backend_from_name (const char *name, PlBackend *b)
{
  static const PlBackend all[] = { PL_BACKEND_REFERENCE, PL_BACKEND_CPU, PL_BACKEND_CUDA };
  for (size_t i = 0; i < G_N_ELEMENTS (all); i++)
    if (name && g_ascii_strcasecmp (name, pl_backend_name (all[i])) == 0)
      {
        *b = all[i];
        return true;
      }
  return false;
}

bool
pl_backend_available (PlBackend b, char **reason)
{
  if (reason)
    *reason = NULL;
  if (b == PL_BACKEND_CUDA)
    return pl_cuda_available (reason);
  if (b == PL_BACKEND_CPU)
    {
      const char *cc = g_getenv ("PASSLAB_CC");
      g_autofree char *path = g_find_program_in_path (cc && *cc ? cc : "cc");
      if (!path)
        {
          if (reason)
            *reason = g_strdup_printf ("no C compiler '%s' in PATH", cc && *cc ? cc : "cc");
          return false;
        }
    }
  return true;
}

void
pl_compile_options_init (PlCompileOptions *o, PlBackend backend)
{
  memset (o, 0, sizeof *o);
  o->backend = backend;
}

/* --- buffers ------------------------------------------------------------------------ */

static Buffer *
buf (PlExecutable *e, int b)
{
  return &g_array_index (e->bufs, Buffer, b);
}

static Step *
step_at (PlExecutable *e, int s)
{
  return &g_array_index (e->steps, Step, s);
}

static int
root_of (PlExecutable *e, int b)
{
  while (b >= 0 && buf (e, b)->kind == BUF_ALIAS)
    b = buf (e, b)->alias_of;
  return b;
}

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
          g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                       "value '%s' has shape %s: the %s backend compiles static shapes (run it with the reference "
                       "backend, or fix the symbolic dims)", v->name, s, pl_backend_name (e->backend));
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

static int
scratch_buffer (PlExecutable *e, int64_t bytes, const char *name)
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
          buf (e, b)->constant = c;
          buf (e, b)->bytes = (int64_t) pl_tensor_nbytes (c);
          if (v->layout != PL_LAYOUT_NCHW && c->rank == 4)
            {
              /* constants are stored in the default layout; kernels read this one in its own */
              buf (e, b)->constant = pl_tensor_new (c->dtype, c->rank, c->dims, NULL);
              buf (e, b)->owned = true;
              pl_runtime_relayout (c->dtype, c->rank, c->dims, PL_LAYOUT_NCHW, v->layout, c->data, buf (e, b)->constant->data);
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
  PlLayout from = buf (e, src)->layout;
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
  buf (e, ts.out_bufs[0])->layout = PL_LAYOUT_NCHW;
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
      st->col_buf = scratch_buffer (e, elems * es, "col2im");
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
            pl_conv_pebble_tile (c, pl_cpu_fast_memory_bytes (), e->threads > 0 ? e->threads : pl_cpu_parallel_units (),
                                 st->tile);
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
    st->col_buf = scratch_buffer (e, pl_cpu_conv_col_elems (c) * es, "im2col");
  if (st->pack == PACK_NONE)
    return true;
  int w = st->in_bufs[c->w_slot];
  Buffer *wb = buf (e, root_of (e, w));
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
  st->pack_buf = st->in_bufs[c->w_slot] = scratch_buffer (e, packed * es, "packed weights");
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
      Step *st = step_at (e, s);
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
          buf (e, b)->alias_of = src;
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
  Step *st = step_at (e, en->first_step);
  st->copy = dir;
  int64_t bytes = st->out_bufs[0] >= 0 ? buf (e, st->out_bufs[0])->bytes : 0;
  g_autofree char *hb = g_format_size_full ((guint64) bytes, G_FORMAT_SIZE_IEC_UNITS);
  en->fallback = false;
  g_free (en->kind);
  en->kind = g_strdup (dir == COPY_OUT ? "swap-out" : "swap-in");
  g_free (en->note);
  en->note = g_strdup_printf (dir == COPY_OUT ? "copy %s device -> host" : "copy %s host -> device", hb);
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
      buf (e, b)->alias_of = src;
      return true;
    }
  if (p && p->kind == PL_PLAN_FALLBACK && !node->body && !pl_op_info (node->op)->eval)
    {
      g_autofree char *d = pl_node_describe (node);
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s is not executable", d);
      pl_kernel_plan_free (p);
      return false;
    }
  int entry = add_entry (e, node);
  bool ok = p ? add_step (e, p, entry, node, error) : split_fusion (e, node, entry, local->message, error);
  finish_entry (e, entry);
  if (ok && p && !node->body && (node->op == PL_OP_SwapOut || node->op == PL_OP_SwapIn))
    {
      mark_copy (e, entry, node->op == PL_OP_SwapOut ? COPY_OUT : COPY_IN);
      Step *st = step_at (e, g_array_index (e->entries, Entry, entry).first_step);
      PlLayout from = buf (e, st->in_bufs[0])->layout, to = buf (e, st->out_bufs[0])->layout;
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
      step_at (e, en->first_step)->convert = node->op == PL_OP_CompressFp16 ? CONVERT_F16 : CONVERT_F32;
      en->fallback = false;
      g_free (en->kind);
      en->kind = g_strdup ("convert");
      g_free (en->note);
      en->note = g_strdup (node->op == PL_OP_CompressFp16 ? "f32 -> f16 on device buffers (runtime loop, round to nearest even)"
                                                          : "f16 -> f32 on device buffers (runtime loop, exact)");
    }
  return ok;
}

/* --- the memory plan ---------------------------------------------------------------- */

typedef struct {
  int64_t offset, size;
} Block;

static int
cmp_block (gconstpointer a, gconstpointer b)
{
  const Block *x = a, *y = b;
  return (x->offset > y->offset) - (x->offset < y->offset);
}

/* The lowest offset where size bytes fit between blocks sorted by offset. */
static int64_t
lowest_gap (const GArray *sorted, int64_t size)
{
  int64_t at = 0;
  for (guint i = 0; i < sorted->len; i++)
    {
      const Block *b = &g_array_index (sorted, Block, i);
      if (b->offset - at >= size)
        break;
      at = MAX (at, b->offset + b->size);
    }
  return at;
}

/* First fit: a new live block at the lowest offset where it fits. */
static int64_t
first_fit (GArray *live, int64_t size)
{
  int64_t at = lowest_gap (live, size);
  Block nb = { at, size };
  g_array_append_val (live, nb);
  g_array_sort (live, cmp_block);
  return at;
}

static void
release (GArray *live, int64_t offset)
{
  for (guint i = 0; i < live->len; i++)
    if (g_array_index (live, Block, i).offset == offset)
      {
        g_array_remove_index (live, i);
        return;
      }
}

/* Device memory: every input and intermediate but the host ones. */
static bool
in_arena (const Buffer *b)
{
  return (b->kind == BUF_TEMP && !b->host) || b->kind == BUF_INPUT;
}

typedef struct {
  int     buf;
  int64_t size;
  int     first, last;   /* inputs: first = -1 */
} Lifetime;

/* Largest first; of equal sizes, the longer lifetime first. */
static int
cmp_size_long (gconstpointer a, gconstpointer b)
{
  const Lifetime *x = a, *y = b;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  return (y->last - y->first) - (x->last - x->first);
}

/* Largest first; of equal sizes, the earlier first. Many tensors of a
 * network share one size (every activation of a ResNet stage); placed in
 * time order they stack like first fit does within the size, where longest
 * first leaves holes a later one of the same size cannot use (resnet_stack
 * training step, batch 16, swapped to a 39 MiB budget: planned peak 38.4
 * MiB; arena 49.0 MiB longest first, 45.0 MiB first fit, 38.4 MiB
 * earliest first). */
static int
cmp_size_early (gconstpointer a, gconstpointer b)
{
  const Lifetime *x = a, *y = b;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  return (x->first > y->first) - (x->first < y->first);
}

/* Offsets in the order cmp sorts lt, each at the lowest address free over
 * its whole lifetime (the "greedy by size" plan of TFLite's memory
 * planner). First fit in time order fragments when a small tensor freed
 * late sits below a large hole; placing the large ones first usually lands
 * within a few percent of the peak. Quadratic: used up to GREEDY_MAX
 * buffers. Returns the arena size, offsets in out[] (per Lifetime, in lt's
 * sorted order). */
#define GREEDY_MAX 20000
static int64_t
greedy_by_size (GArray *lt, GCompareFunc cmp, int64_t *out)
{
  g_array_sort (lt, cmp);
  int n = (int) lt->len;
  int64_t arena = 0;
  g_autoptr (GArray) busy = g_array_new (FALSE, FALSE, sizeof (Block));
  for (int i = 0; i < n; i++)
    {
      const Lifetime *x = &g_array_index (lt, Lifetime, i);
      g_array_set_size (busy, 0);
      for (int j = 0; j < i; j++)
        {
          const Lifetime *y = &g_array_index (lt, Lifetime, j);
          if (y->first <= x->last && x->first <= y->last)
            g_array_append_val (busy, ((Block) { out[j], y->size }));
        }
      g_array_sort (busy, cmp_block);
      out[i] = lowest_gap (busy, x->size);
      arena = MAX (arena, out[i] + x->size);
    }
  return arena;
}

/* Replaces the first-fit offsets by greedy-by-size ones (either tie-break)
 * when that makes the arena smaller. */
static void
pack_arena (PlExecutable *e)
{
  g_autoptr (GArray) lt = g_array_new (FALSE, FALSE, sizeof (Lifetime));
  for (guint i = 0; i < e->bufs->len; i++)
    {
      Buffer *b = buf (e, (int) i);
      if ((b->kind != BUF_TEMP && b->kind != BUF_INPUT) || b->last < 0 || b->offset < 0 || !in_arena (b))
        continue;
      if (b->kind == BUF_TEMP && b->first < 0)
        continue;
      Lifetime l = { (int) i, (b->bytes + 63) & ~(int64_t) 63, b->kind == BUF_INPUT ? -1 : b->first, b->last };
      g_array_append_val (lt, l);
    }
  if (lt->len == 0 || lt->len > GREEDY_MAX)
    return;
  const GCompareFunc orders[] = { cmp_size_long, cmp_size_early };
  g_autofree int64_t *off = g_new (int64_t, lt->len);
  for (size_t k = 0; k < G_N_ELEMENTS (orders); k++)
    {
      int64_t arena = greedy_by_size (lt, orders[k], off);
      if (arena >= e->arena_bytes)
        continue;
      for (guint i = 0; i < lt->len; i++)
        buf (e, g_array_index (lt, Lifetime, i).buf)->offset = off[i];
      e->arena_bytes = arena;
    }
}

/* Every buffer's lifetime (first, last) over the steps, from scratch: roots
 * over all their aliases, graph inputs from step 0, graph outputs past the
 * end (n_steps); the kernel workspace of the largest step. */
static void
lifetimes (PlExecutable *e)
{
  int n_steps = (int) e->steps->len;
  for (guint i = 0; i < e->bufs->len; i++)
    {
      Buffer *b = buf (e, (int) i);
      b->first = b->kind == BUF_INPUT ? 0 : -1;
      b->last = -1;
    }
  e->workspace_bytes = 0;
  for (int s = 0; s < n_steps; s++)
    {
      Step *st = step_at (e, s);
      int extra[4] = { st->lib_buf, st->col_buf, st->scratch_buf, st->pack_buf };
      for (guint k = 0; k < st->plan->inputs->len + 1; k++)
        {
          int b = k < st->plan->inputs->len ? st->in_bufs[k] : st->pack_src;
          if (b >= 0)
            {
              Buffer *r = buf (e, root_of (e, b));
              r->last = MAX (r->last, s);
            }
        }
      for (guint k = 0; k < st->plan->outputs->len; k++)
        if (st->out_bufs[k] >= 0)
          {
            Buffer *r = buf (e, root_of (e, st->out_bufs[k]));
            if (r->first < 0)
              r->first = s;
            r->last = MAX (r->last, s);
          }
      int64_t ws = 0;
      for (int k = 0; k < 4; k++)
        if (extra[k] >= 0)
          {
            buf (e, extra[k])->first = buf (e, extra[k])->last = s;
            ws += buf (e, extra[k])->bytes;
          }
      e->workspace_bytes = MAX (e->workspace_bytes, ws);
    }
  for (guint i = 0; i < e->g->outputs->len; i++)
    {
      int b = e->output_bufs[i];
      if (b >= 0)
        buf (e, root_of (e, b))->last = n_steps;
    }
}

static void
plan_memory (PlExecutable *e)
{
  int n_steps = (int) e->steps->len;
  lifetimes (e);
  g_autoptr (GArray) live = g_array_new (FALSE, FALSE, sizeof (Block));
  g_autoptr (GArray) host_live = g_array_new (FALSE, FALSE, sizeof (Block));
  int64_t in_use = 0, host_in_use = 0;
  e->arena_bytes = e->peak_bytes = e->host_bytes = e->host_peak_bytes = 0;
  for (int s = -1; s <= n_steps; s++)
    {
      /* allocate what step s makes (s = -1: the inputs) */
      for (guint i = 0; i < e->bufs->len; i++)
        {
          Buffer *b = buf (e, (int) i);
          bool now = b->kind == BUF_INPUT ? s == -1 : b->first == s;
          if (!now || (b->kind != BUF_TEMP && b->kind != BUF_INPUT) || b->last < 0)
            continue;
          int64_t size = (b->bytes + 63) & ~(int64_t) 63;
          if (b->host)
            {
              host_in_use += b->bytes;
              b->host_offset = first_fit (host_live, size);
              e->host_bytes = MAX (e->host_bytes, b->host_offset + size);
              continue;
            }
          in_use += b->bytes;
          if (in_arena (b))
            {
              b->offset = first_fit (live, size);
              e->arena_bytes = MAX (e->arena_bytes, b->offset + size);
            }
        }
      e->peak_bytes = MAX (e->peak_bytes, in_use);
      e->host_peak_bytes = MAX (e->host_peak_bytes, host_in_use);
      /* free what step s read last */
      for (guint i = 0; i < e->bufs->len; i++)
        {
          Buffer *b = buf (e, (int) i);
          if ((b->kind != BUF_TEMP && b->kind != BUF_INPUT) || b->last != s || b->last < 0 || (b->kind == BUF_TEMP && b->first < 0))
            continue;
          if (b->host)
            {
              host_in_use -= b->bytes;
              release (host_live, b->host_offset);
              continue;
            }
          in_use -= b->bytes;
          if (b->offset >= 0)
            release (live, b->offset);
        }
    }
  pack_arena (e);
}

/* The arena is the device memory the plan needs: it must fit the budget. */
static bool
check_budget (PlExecutable *e, GError **error)
{
  if (e->device_budget <= 0 || e->arena_bytes <= e->device_budget)
    return true;
  g_autofree char *need = g_format_size_full ((guint64) e->arena_bytes, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *peak = g_format_size_full ((guint64) e->peak_bytes, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *have = g_format_size_full ((guint64) e->device_budget, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *ws = g_format_size_full ((guint64) e->workspace_bytes, G_FORMAT_SIZE_IEC_UNITS);
  if (e->workspace_bytes >= e->device_budget)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC,
                   "needs %s of device memory (arena %" G_GINT64_FORMAT " bytes; planned peak %s), budget is %s "
                   "(%" G_GINT64_FORMAT " bytes): the kernel workspace alone (im2col / library scratch of one "
                   "kernel) takes %s, more than the budget; swapping cannot help", need, e->arena_bytes, peak, have,
                   e->device_budget, ws);
      return false;
    }
  g_set_error (error, PL_ERROR, PL_ERROR_EXEC,
               "needs %s of device memory (arena %" G_GINT64_FORMAT " bytes; planned peak %s, kernel workspace %s "
               "at most), budget is %s (%" G_GINT64_FORMAT " bytes): run the swap pass with "
               "--param swap.budget=%" G_GINT64_FORMAT " --param swap.workspace=%" G_GINT64_FORMAT " (or a "
               "smaller budget) to fit", need, e->arena_bytes, peak, ws, have, e->device_budget, e->device_budget,
               e->workspace_bytes);
  return false;
}

/* --- code generation ------------------------------------------------------------------- */

/* C source for every step (one translation unit). */
static void
generate_cpu (PlExecutable *e)
{
  g_autofree char *prelude = pl_codegen_c_prelude ();
  GString *src = g_string_new (prelude);
  for (guint s = 0; s < e->steps->len; s++)
    {
      Step *st = step_at (e, (int) s);
      GString *one = g_string_new (NULL);
      if (pl_codegen_c_kernel (one, st->plan))
        {
          g_string_append (src, one->str);
          st->source = g_string_free (one, FALSE);
        }
      else
        g_string_free (one, TRUE);
    }
  e->source = g_string_free (src, FALSE);
}

static bool
compile_cpu (PlExecutable *e, GError **error)
{
  generate_cpu (e);
  e->cpu = pl_cpu_module_compile (e->source, e->cache_dir, &e->cache_hit, error);
  if (!e->cpu)
    return false;
  for (guint s = 0; s < e->steps->len; s++)
    {
      Step *st = step_at (e, (int) s);
      PlKernelPlan *p = st->plan;
      if (p->loop || p->kind == PL_PLAN_POOL)
        st->fn = (PlCpuKernelFn) pl_cpu_module_symbol (e->cpu, p->name);
      bool direct = p->kind == PL_PLAN_CONV && p->conv.impl == PL_CONV_IMPL_DIRECT;
      if (p->kind == PL_PLAN_CONV)
        {
          g_autofree char *sym = g_strdup_printf ("%s_%s", p->name, direct ? "direct" : p->conv.transpose ? "col2im" : "im2col");
          if (direct)
            st->direct = (PlCpuConvDirectFn) pl_cpu_module_symbol (e->cpu, sym);
          else
            st->im2col = (PlCpuIm2colFn) pl_cpu_module_symbol (e->cpu, sym);
        }
      if (((p->loop || p->kind == PL_PLAN_POOL) && !st->fn) || (p->kind == PL_PLAN_CONV && !st->im2col && !st->direct))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "%s: kernel %s missing", pl_cpu_module_path (e->cpu), p->name);
          return false;
        }
    }
  void (*set_threads) (int) = (void (*) (int)) pl_cpu_module_symbol (e->cpu, "pl_set_threads");
  if (set_threads && e->threads > 0)
    set_threads (e->threads);
  return true;
}

/* CUDA source for every step; fills the launches and the scratch buffers. */
static void
generate_cuda (PlExecutable *e, int n_sms)
{
  g_autofree char *prelude = pl_codegen_cuda_prelude ();
  GString *src = g_string_new (prelude);
  for (guint s = 0; s < e->steps->len; s++)
    {
      Step *st = step_at (e, (int) s);
      GString *one = g_string_new (NULL);
      int n = pl_codegen_cuda_kernel (one, st->plan, n_sms, st->launch);
      if (n > 0)
        {
          g_string_append (src, one->str);
          st->source = g_string_free (one, FALSE);
          if (st->launch[0].scratch_bytes > 0)
            st->scratch_buf = scratch_buffer (e, st->launch[0].scratch_bytes, "scratch");
        }
      else
        g_string_free (one, TRUE);
    }
  e->source = g_string_free (src, FALSE);
}

static bool
compile_cuda (PlExecutable *e, GError **error)
{
  e->cuda = pl_cuda_get (error);
  if (!e->cuda)
    return false;
  generate_cuda (e, pl_cuda_sm_count (e->cuda));
  g_autofree char *arch = pl_cuda_arch (e->cuda);
  size_t size;
  g_autofree char *ptx = pl_nvrtc_compile (e->source, arch, &size, error);
  if (!ptx || !(e->cu_module = pl_cuda_module_load (e->cuda, ptx, error)))
    return false;
  for (guint s = 0; s < e->steps->len; s++)
    {
      Step *st = step_at (e, (int) s);
      for (int k = 0; k < 2; k++)
        if (st->launch[k].entry && !(st->cu_fn[k] = pl_cuda_function (e->cuda, e->cu_module, st->launch[k].entry, error)))
          return false;
    }
  return true;
}

/* Constants to the device, and the arena. */
static bool
upload_cuda (PlExecutable *e, GError **error)
{
  for (guint i = 0; i < e->bufs->len; i++)
    {
      Buffer *b = buf (e, (int) i);
      if (b->kind != BUF_CONST || b->last < 0)
        continue;   /* not a constant, or one no kernel reads (weights read only packed) */
      if (!(b->device = pl_cuda_alloc (e->cuda, MAX (b->bytes, 1), error)) ||
          !pl_cuda_upload (e->cuda, b->device, b->constant->data, (size_t) b->bytes, error))
        return false;
    }
  e->cu_arena = pl_cuda_alloc (e->cuda, (size_t) MAX (e->arena_bytes, 64), error);
  if (!e->cu_arena)
    return false;
  /* the host pool: pinned, so the copy stream's copies are truly asynchronous */
  if (e->host_bytes > 0 && !(e->host_pool = pl_cuda_host_alloc (e->cuda, (size_t) e->host_bytes, error)))
    return false;
  return true;
}

/* --- in-place sharing ----------------------------------------------------------------- */

/* The buffer v was given (-1: none, or a constant not read yet). */
static int
lookup_buffer (PlExecutable *e, const PlValue *v)
{
  return v ? GPOINTER_TO_INT (g_hash_table_lookup (e->buf_of, v)) - 1 : -1;
}

/* Whether step st (plan p) may store output slot q over root buffer r: a
 * fallback computes on copies of its inputs; a loop must read every slot
 * holding r only where it writes q. */
static bool
overwrites_root (PlExecutable *e, const Step *st, int r, int q)
{
  const PlKernelPlan *p = st->plan;
  if (p->kind == PL_PLAN_FALLBACK)
    return true;
  for (guint i = 0; i < p->inputs->len; i++)
    if (st->in_bufs[i] >= 0 && root_of (e, st->in_bufs[i]) == r && !pl_kernel_plan_overwrites (p, (int) i, q))
      return false;
  return true;
}

/* Output j of step s's node into the memory of its input root r: the
 * output's buffer becomes an alias of r (one place in the arena, one
 * lifetime from r's first step to the output's last), the loop's two slots
 * lose restrict, and the kernel's note says so. false when the step's plan
 * does not allow it. */
static bool
share_buffer (PlExecutable *e, int s, int j, int k, int r)
{
  Step *st = step_at (e, s);
  const PlNode *node = st->node;
  int ob = lookup_buffer (e, node->outputs[j]);
  Buffer *o = ob >= 0 ? buf (e, ob) : NULL;
  if (!o || o->kind != BUF_TEMP || o->host || o->first != s)
    return false;
  int q = -1;
  for (guint k2 = 0; k2 < st->plan->outputs->len && q < 0; k2++)
    if (st->out_bufs[k2] == ob)
      q = (int) k2;
  if (q < 0 || !overwrites_root (e, st, r, q))
    return false;
  o->kind = BUF_ALIAS;
  o->alias_of = r;
  buf (e, r)->last = MAX (buf (e, r)->last, o->last);
  for (guint i = 0; st->plan->kind == PL_PLAN_LOOP && i < st->plan->inputs->len; i++)
    if (st->in_bufs[i] >= 0 && root_of (e, st->in_bufs[i]) == r)
      pl_kernel_plan_share (st->plan, (int) i, q);
  Entry *en = &g_array_index (e->entries, Entry, st->entry);
  g_autofree char *what = node->n_outputs > 1 ? g_strdup_printf ("%s in place over %s", node->outputs[j]->name,
                                                                 node->inputs[k]->name)
                                              : g_strdup_printf ("in place over %s", node->inputs[k]->name);
  char *note = en->note ? g_strdup_printf ("%s; %s", en->note, what) : g_strdup (what);
  g_free (en->note);
  en->note = note;
  return true;
}

/* In-place sharing (DESIGN.md §1.5's floor; XLA's buffer assignment,
 * TFLite, PyTorch's in-place ops): the one kernel of an elementwise node
 * stores an output in the buffer of an input it reads for the last time,
 * by pl_in_place_input — the rule core/schedule.c's memory profile follows
 * too, so the planned peak is this plan's — and when its plan allows it
 * (overwrites_root). Runs before code generation (restrict) and before
 * the memory plan, in step order, so chains share one buffer. */
static void
share_in_place (PlExecutable *e)
{
  lifetimes (e);
  for (int s = 0; s < (int) e->steps->len; s++)
    {
      Step *st = step_at (e, s);
      const PlNode *node = st->node;
      const Entry *en = &g_array_index (e->entries, Entry, st->entry);
      if (en->n_steps != 1 || node->graph != e->g || st->copy || st->convert || node->n_inputs == 0 ||
          (st->plan->kind != PL_PLAN_LOOP && st->plan->kind != PL_PLAN_FALLBACK))
        continue;
      /* dies: the input's memory is an intermediate's, last read here (views of it included) */
      g_autofree bool *dies = g_new0 (bool, node->n_inputs);
      g_autofree int *roots = g_new0 (int, node->n_inputs);
      for (int k = 0; k < node->n_inputs; k++)
        {
          int b = lookup_buffer (e, node->inputs[k]);
          roots[k] = b >= 0 ? root_of (e, b) : -1;
          Buffer *r = roots[k] >= 0 ? buf (e, roots[k]) : NULL;
          dies[k] = r && r->kind == BUF_TEMP && !r->host && r->first >= 0 && r->first < s && r->last == s;
        }
      for (int j = 0; j < node->n_outputs; j++)
        {
          int k = pl_in_place_input (node, j, dies);
          if (k >= 0)
            share_buffer (e, s, j, k, roots[k]);
        }
    }
}

/* --- building --------------------------------------------------------------------------- */

/* Plans and buffers for every node; the graph outputs' buffers. */
static bool
build (PlExecutable *e, GError **error)
{
  const PlGraph *g = e->g;
  for (guint i = 0; i < g->inputs->len; i++)
    {
      int b = add_buffer (e, BUF_INPUT, g->inputs->pdata[i], error);
      if (b < 0)
        return false;
      buf (e, b)->input_index = (int) i;
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
  share_in_place (e);
  return true;
}

static PlExecutable *
executable_new (const PlGraph *g, const PlCompileOptions *o)
{
  PlExecutable *e = g_new0 (PlExecutable, 1);
  e->g = g;
  e->backend = o->backend;
  e->cache_dir = g_strdup (o->cache_dir);
  e->threads = o->threads;
  e->generate_only = o->generate_only;
  e->device_budget = o->device_budget;
  e->plans = g_ptr_array_new_with_free_func ((GDestroyNotify) pl_kernel_plan_free);
  e->bufs = g_array_new (FALSE, TRUE, sizeof (Buffer));
  e->steps = g_array_new (FALSE, TRUE, sizeof (Step));
  e->entries = g_array_new (FALSE, TRUE, sizeof (Entry));
  e->buf_of = g_hash_table_new (NULL, NULL);
  return e;
}

PlExecutable *
pl_executable_new (const PlGraph *g, const PlCompileOptions *o, GError **error)
{
  g_return_val_if_fail (g && o, NULL);
  pl_ops_init ();
  PlExecutable *e = executable_new (g, o);
  if (o->backend == PL_BACKEND_REFERENCE)
    return e;
  if (o->generate_only)
    {
      if (!build (e, error))
        {
          pl_executable_free (e);
          return NULL;
        }
      if (o->backend == PL_BACKEND_CPU)
        generate_cpu (e);
      else
        generate_cuda (e, 132);
      plan_memory (e);
      if (!check_budget (e, error))
        {
          pl_executable_free (e);
          return NULL;
        }
      return e;
    }
  char *why = NULL;
  if (!pl_backend_available (o->backend, &why))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "the %s backend is not available: %s",
                   pl_backend_name (o->backend), why);
      g_free (why);
      pl_executable_free (e);
      return NULL;
    }
  bool ok = build (e, error);
  if (ok && o->backend == PL_BACKEND_CPU)
    {
      plan_memory (e);
      ok = check_budget (e, error) && compile_cpu (e, error);
    }
  else if (ok)
    {
      ok = compile_cuda (e, error);
      if (ok)
        {
          plan_memory (e);
          ok = check_budget (e, error) && upload_cuda (e, error);
        }
    }
  if (!ok)
    {
      pl_executable_free (e);
      return NULL;
    }
  return e;
}

void
pl_executable_free (PlExecutable *e)
{
  if (!e)
    return;
  for (guint s = 0; s < e->steps->len; s++)
    {
      Step *st = step_at (e, (int) s);
      g_free (st->in_bufs);
      g_free (st->out_bufs);
      g_free (st->source);
      pl_cuda_launch_clear (&st->launch[0]);
      pl_cuda_launch_clear (&st->launch[1]);
    }
  for (guint i = 0; i < e->entries->len; i++)
    {
      Entry *en = &g_array_index (e->entries, Entry, i);
      g_free (en->name);
      g_free (en->ops);
      g_free (en->kind);
      g_free (en->note);
    }
  for (guint i = 0; i < e->bufs->len; i++)
    if (buf (e, (int) i)->owned)
      pl_tensor_unref (buf (e, (int) i)->constant);
  if (e->cuda)
    {
      for (guint i = 0; i < e->bufs->len; i++)
        if (buf (e, (int) i)->device)
          pl_cuda_free (e->cuda, buf (e, (int) i)->device);
      if (e->cu_arena)
        pl_cuda_free (e->cuda, e->cu_arena);
      pl_cuda_host_free (e->cuda, e->host_pool);
    }
  else
    g_free (e->host_pool);
  g_array_unref (e->steps);
  g_array_unref (e->entries);
  g_array_unref (e->bufs);
  g_ptr_array_unref (e->plans);
  g_hash_table_unref (e->buf_of);
  pl_cpu_module_free (e->cpu);
  g_free (e->output_bufs);
  g_aligned_free (e->arena);
  g_free (e->cache_dir);
  g_free (e->source);
  g_free (e);
}

PlTensor **
pl_executable_run (PlExecutable *e, PlTensor *const *inputs, int repeat, PlRunReport **report, GError **error)
{
  g_return_val_if_fail (e, NULL);
  repeat = MAX (repeat, 1);
  if (e->generate_only)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "this executable was only generated, not compiled");
      return NULL;
    }
  if (e->backend == PL_BACKEND_REFERENCE)
    return pl_runtime_run_reference (e, inputs, repeat, report, error);
  return pl_runtime_run_compiled (e, inputs, repeat, report, error);
}

/* --- queries ------------------------------------------------------------------------- */

const char *
pl_executable_source (PlExecutable *e, guint32 node_id)
{
  for (guint i = 0; i < e->entries->len; i++)
    {
      Entry *en = &g_array_index (e->entries, Entry, i);
      if (en->node_id != node_id)
        continue;
      /* one step: its source; split fusions: all their steps' sources, kept on the first */
      Step *first = step_at (e, en->first_step);
      if (en->n_steps > 1 && first->source && !g_str_has_prefix (first->source, "/* split"))
        {
          GString *all = g_string_new ("/* split fusion: its body as several kernels */\n");
          for (int s = en->first_step; s < en->first_step + en->n_steps; s++)
            if (step_at (e, s)->source)
              g_string_append (all, step_at (e, s)->source);
          g_free (first->source);
          first->source = g_string_free (all, FALSE);
        }
      return first->source;
    }
  return NULL;
}

char *
pl_executable_plan_dump (PlExecutable *e, guint32 node_id)
{
  for (guint i = 0; i < e->entries->len; i++)
    {
      Entry *en = &g_array_index (e->entries, Entry, i);
      if (en->node_id != node_id)
        continue;
      GString *s = g_string_new (NULL);
      for (int k = en->first_step; k < en->first_step + en->n_steps; k++)
        {
          g_autofree char *d = pl_kernel_plan_dump (step_at (e, k)->plan);
          g_string_append (s, d);
        }
      return g_string_free (s, FALSE);
    }
  return NULL;
}

const char *
pl_executable_full_source (PlExecutable *e)
{
  return e->source;
}

bool
pl_executable_cache_hit (PlExecutable *e)
{
  return e->cache_hit;
}

int
pl_executable_n_kernels (PlExecutable *e)
{
  return e->backend == PL_BACKEND_REFERENCE ? (int) e->g->nodes->len : (int) e->entries->len;
}

int
pl_executable_n_launches (PlExecutable *e)
{
  int n = 0;
  for (guint s = 0; s < e->steps->len; s++)
    n += step_at (e, (int) s)->plan->kind != PL_PLAN_ALIAS;
  return e->backend == PL_BACKEND_REFERENCE ? (int) e->g->nodes->len : n;
}

void
pl_executable_memory (PlExecutable *e, int64_t *arena, int64_t *peak, int64_t *workspace, int64_t *host_pool)
{
  g_return_if_fail (e != NULL);
  if (arena)
    *arena = e->arena_bytes;
  if (peak)
    *peak = e->peak_bytes;
  if (workspace)
    *workspace = e->workspace_bytes;
  if (host_pool)
    *host_pool = e->host_bytes;
}

/* --- the CUDA check without a GPU --------------------------------------------------------- */

bool
pl_cuda_compile_check (const PlGraph *g, const char *arch, char **source, int *n_kernels, GError **error)
{
  char *why = NULL;
  if (!pl_nvrtc_available (&why))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s", why);
      g_free (why);
      return false;
    }
  PlCompileOptions o;
  pl_compile_options_init (&o, PL_BACKEND_CUDA);
  o.generate_only = true;
  PlExecutable *e = pl_executable_new (g, &o, error);
  bool ok = e != NULL;
  if (ok)
    {
      size_t size;
      g_autofree char *ptx = pl_nvrtc_compile (e->source, arch ? arch : "compute_90", &size, error);
      ok = ptx != NULL;
      if (n_kernels)
        {
          *n_kernels = 0;
          for (const char *p = e->source; (p = strstr (p, "__global__")); p++)
            (*n_kernels)++;
        }
      if (source)
        *source = g_strdup (e->source);
    }
  pl_executable_free (e);
  return ok;
}

void
pl_runtime_init_process (char **argv)
{
  if (g_getenv ("OPENBLAS_THREAD_TIMEOUT") || !argv || !argv[0])
    return;
  g_setenv ("OPENBLAS_THREAD_TIMEOUT", "4", TRUE);   /* 2^4 cycles: sleep at once */
  execv ("/proc/self/exe", argv);
  /* no /proc: run on with spinning threads */
}
