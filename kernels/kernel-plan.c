/* kernel-plan.c — lowering one kernel (a fusion body or a single op) into a
 * backend-neutral loop IR (kernel-plan.h) that both code generators print.
 *
 * Design
 * ------
 * XLA's loop emitter (seed 001) generates one loop nest per fusion by asking
 * each output "what is your element at multi-index i?": an elementwise op
 * asks its operands at the broadcast of i (its data function), a reshape,
 * transpose or broadcast rewrites i (its index function) and asks its
 * operand, a kernel input is a load. We do the same, symbolically: indices
 * are canonical affine expressions over the domain's coordinates with
 * division/modulo atoms (index-expr.c), and each answer is an SSA scalar
 * instruction, shared when the same (value, index) is asked twice.
 *
 * The domain D: without reductions, the outputs' shape (one loop nest).
 * With reductions (an "input" or "stitch" fusion, or one reduction op) all of
 * them must reduce the same axes of the same D — the rows. A reduction's
 * result is a row value; asked at an index, we check symbolically that the
 * index is the current row (after reshapes and broadcasts) and answer with
 * the row's register, else the set is not one kernel. This is what lets layer
 * norm (mean -> x - mean -> variance -> normalize) and softmax (max -> exp ->
 * sum -> divide) be ONE kernel: the second reduction reads the first one's
 * result, so it runs in a second pass over the row; the passes are the
 * "phases" of the instructions (a reduction result is ready one pass after
 * its argument). Element values needed in two passes (softmax's exp) are
 * materialized in a per-row scratch buffer rather than recomputed; loads are
 * simply re-read (the row is in cache).
 *
 * Finally the loop dims are permuted so the reduced ones are innermost and
 * adjacent dims are coalesced wherever every index function treats them as
 * one (coefficient of the outer = size of the inner times that of the inner),
 * which turns most kernels into a flat loop or rows x contiguous elements.
 *
 * Library kernels: MatMul/Gemm (transposes of the operands absorbed as flags),
 * Conv and ConvTranspose become one library call; what follows them in the set is the
 * epilogue, a pointwise loop that reads the library's raw result (plus Gemm's
 * beta*C or Conv's bias) and runs in place when it reads that result at the
 * same index it writes.
 *
 * Layouts (layout.h): indices are logical; only a load or a store turns a
 * value's logical multi-index into a memory offset, in the value's layout
 * (pl_lower_offset). So every loop kernel reads and writes any layout, a
 * LayoutTransform is the identity with a load in one layout and a store in
 * the other, and a pointwise kernel storing one other layout loops in that
 * layout's order (its stores contiguous, the loads of default-layout
 * operands strided). A conv's raw result is in its output's layout, a
 * GEMM's row-major. Views of a value in another layout are copies.
 *
 * Why not more: a set whose reductions reduce different rows, or whose
 * outputs have other shapes than D or the rows, is not one kernel here; the
 * runtime then runs that fusion's body node by node (and says so).
 *
 * Files: this one lowers (the builders, the domain, the stores) and holds
 * the entry points; kernel-plan-loop.c shapes a lowered loop (levels,
 * passes, scratch, split and coalesced dims); kernel-plan-library.c plans
 * GEMM and Conv calls with their epilogues; plan-ops.c knows each op.
 */
#define G_LOG_DOMAIN "passlab"
#include "kernel-plan-private.h"

#include "conv-direct.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

const char *
pl_plan_ctype (PlDType d)
{
  switch (d)
    {
    case PL_DTYPE_F32: return "float";
    case PL_DTYPE_F64: return "double";
    case PL_DTYPE_I64: return "int64_t";
    case PL_DTYPE_I32: return "int32_t";
    case PL_DTYPE_I16: return "int16_t";
    case PL_DTYPE_I8: return "int8_t";
    case PL_DTYPE_U64: return "uint64_t";
    case PL_DTYPE_U32: return "uint32_t";
    case PL_DTYPE_U16: return "uint16_t";
    case PL_DTYPE_U8: return "uint8_t";
    case PL_DTYPE_BOOL: return "uint8_t";
    default: return NULL;
    }
}

/* --- builders ----------------------------------------------------------------------- */

int
pl_lower_fail (PlLower *L, const char *fmt, ...)
{
  if (!L->why)
    {
      va_list ap;
      va_start (ap, fmt);
      L->why = g_strdup_vprintf (fmt, ap);
      va_end (ap);
    }
  return -1;
}

PlDType
pl_lower_dtype (PlLower *L, int i)
{
  return i >= 0 ? pl_lower_instr (L, i)->dtype : PL_DTYPE_UNDEFINED;
}

/* Appends x unless an identical instruction exists (CSE). */
static int
emit (PlLower *L, PlInstr x)
{
  if (L->why)
    return -1;
  for (int k = 0; k < x.n_args; k++)
    if (x.a[k] < 0)
      return -1;
  g_autofree char *key = g_strdup_printf ("#%d:%d:%d,%d,%d:%.17g:%" G_GINT64_FORMAT ":%d:%s:%d", x.op, x.dtype,
                                          x.n_args > 0 ? x.a[0] : -1, x.n_args > 1 ? x.a[1] : -1,
                                          x.n_args > 2 ? x.a[2] : -1, x.imm, x.imm_i, x.slot,
                                          x.index ? x.index->key : "", x.reduction);
  gpointer hit = g_hash_table_lookup (L->memo, key);
  if (hit && x.op != PL_SOP_REDUCED)
    return GPOINTER_TO_INT (hit) - 1;
  x.scratch = -1;
  g_array_append_val (L->loop->instrs, x);
  int i = (int) L->loop->instrs->len - 1;
  g_hash_table_insert (L->memo, g_steal_pointer (&key), GINT_TO_POINTER (i + 1));
  return i;
}

int
pl_lower_load_slot (PlLower *L, int slot, PlDType dtype, const PlIdx *offset)
{
  if (!offset)
    return -1;
  return emit (L, (PlInstr) { .op = PL_SOP_LOAD, .dtype = dtype, .slot = slot, .index = offset });
}

int
pl_lower_gather_load (PlLower *L, int slot, PlDType dtype, const PlIdx *base, int at, int64_t stride)
{
  if (!base)
    return -1;
  return emit (L, (PlInstr) { .op = PL_SOP_LOAD, .dtype = dtype, .slot = slot, .index = base, .a = { at },
                              .n_args = 1, .imm_i = stride });
}

int
pl_lower_index_value (PlLower *L, const PlIdx *index)
{
  return pl_lower_load_slot (L, PL_SLOT_INDEX, PL_DTYPE_I64, index);
}

int
pl_lower_slot (PlLower *L, PlValue *v)
{
  int slot = GPOINTER_TO_INT (g_hash_table_lookup (L->slots, v)) - 1;
  if (slot < 0)
    {
      g_ptr_array_add (L->plan->inputs, v);
      slot = (int) L->plan->inputs->len - 1;
      g_hash_table_insert (L->slots, v, GINT_TO_POINTER (slot + 1));
    }
  return slot;
}

int
pl_lower_load (PlLower *L, PlValue *v, const PlIdx *offset)
{
  return pl_lower_load_slot (L, pl_lower_slot (L, v), v->dtype, offset);
}

/* The element offset of logical multi-index idx in a tensor of rank/dims
 * stored in layout: the row-major offset of idx permuted into the order the
 * layout stores the dims (layout.h). NULL (after failing) for a layout the
 * rank cannot carry. */
static const PlIdx *
layout_offset (PlLower *L, PlLayout layout, int rank, const int64_t *dims, const PlIdx *const *idx)
{
  if (!pl_layout_valid_for_rank (layout, rank))
    {
      pl_lower_fail (L, "layout %s on a tensor of rank %d", pl_layout_name (layout), rank);
      return NULL;
    }
  int perm[PL_MAX_RANK];
  const PlIdx *pidx[PL_MAX_RANK];
  int64_t pdims[PL_MAX_RANK];
  pl_layout_perm (layout, rank, perm);
  for (int k = 0; k < rank; k++)
    {
      pidx[k] = idx[perm[k]];
      pdims[k] = dims[perm[k]];
    }
  return pl_idx_linearize (L->arena, rank, pidx, pdims);
}

const PlIdx *
pl_lower_offset_in (PlLower *L, PlLayout layout, const PlValue *v, const PlIdx *const *idx)
{
  int64_t dims[PL_MAX_RANK];
  if (!pl_shape_get_dims (&v->shape, dims))
    {
      pl_lower_fail (L, "value '%s' has no static shape", v->name);
      return NULL;
    }
  return layout_offset (L, layout, v->shape.rank, dims, idx);
}

const PlIdx *
pl_lower_offset (PlLower *L, const PlValue *v, const PlIdx *const *idx)
{
  return pl_lower_offset_in (L, v->layout, v, idx);
}

int
pl_lower_const (PlLower *L, PlDType dtype, double v)
{
  PlInstr x = { .op = PL_SOP_CONST, .dtype = dtype };
  if (pl_dtype_is_float (dtype))
    x.imm = v;
  else if (dtype == PL_DTYPE_BOOL)
    x.imm_i = v != 0;
  else
    x.imm_i = (int64_t) v;
  return emit (L, x);
}

int
pl_lower_unary (PlLower *L, PlScalarOp op, int a)
{
  PlDType t = pl_lower_dtype (L, a);
  if (op == PL_SOP_ISNAN || op == PL_SOP_ISINF || op == PL_SOP_NOT)
    t = PL_DTYPE_BOOL;
  return emit (L, (PlInstr) { .op = op, .dtype = t, .a = { a }, .n_args = 1 });
}

/* PL_SOP_CHECK of bad (bool), reporting `message` (%I: value, i64) when true. */
int
pl_lower_check (PlLower *L, int bad, int value, const char *message)
{
  if (L->why || bad < 0 || value < 0)
    return -1;
  GPtrArray *checks = L->loop->checks;
  guint id = 0;
  while (id < checks->len && strcmp (checks->pdata[id], message) != 0)
    id++;
  if (id == checks->len)
    g_ptr_array_add (checks, g_strdup (message));
  return emit (L, (PlInstr) { .op = PL_SOP_CHECK, .dtype = PL_DTYPE_BOOL, .a = { bad, value }, .n_args = 2,
                              .imm_i = id + 1 });
}

/* A binary instruction; imm_i carries its flags (PL_DIV_EXACT). */
static int
binary (PlLower *L, PlScalarOp op, int a, int b, int64_t imm_i)
{
  if (a < 0 || b < 0)
    return -1;
  PlDType t = pl_lower_dtype (L, a);
  if (t != pl_lower_dtype (L, b))
    return pl_lower_fail (L, "operands of different types (%s, %s)", pl_dtype_name (t),
                          pl_dtype_name (pl_lower_dtype (L, b)));
  if (op >= PL_SOP_EQ && op <= PL_SOP_XOR)
    t = PL_DTYPE_BOOL;
  return emit (L, (PlInstr) { .op = op, .dtype = t, .a = { a, b }, .n_args = 2, .imm_i = imm_i });
}

int
pl_lower_binary (PlLower *L, PlScalarOp op, int a, int b)
{
  return binary (L, op, a, b, 0);
}

int
pl_lower_mod (PlLower *L, int a, int b, bool truncated)
{
  return binary (L, PL_SOP_MOD, a, b, truncated);
}

int
pl_lower_div_exact (PlLower *L, int a, int b)
{
  return binary (L, PL_SOP_DIV, a, b, PL_DIV_EXACT);
}

int
pl_lower_select (PlLower *L, int cond, int a, int b)
{
  if (cond < 0 || a < 0 || b < 0)
    return -1;
  if (pl_lower_dtype (L, a) != pl_lower_dtype (L, b))
    return pl_lower_fail (L, "Where of different types");
  return emit (L, (PlInstr) { .op = PL_SOP_SELECT, .dtype = pl_lower_dtype (L, a), .a = { cond, a, b }, .n_args = 3 });
}

int
pl_lower_cast (PlLower *L, int a, PlDType to)
{
  if (a < 0)
    return -1;
  if (!pl_plan_ctype (to))
    return pl_lower_fail (L, "cast to %s", pl_dtype_name (to));
  if (pl_lower_dtype (L, a) == to)
    return a;
  return emit (L, (PlInstr) { .op = PL_SOP_CAST, .dtype = to, .a = { a }, .n_args = 1 });
}

int
pl_lower_reduce (PlLower *L, PlReduceKind kind, int arg, PlDType dtype, bool select_last)
{
  if (arg < 0 || L->why)
    return -1;
  /* the same reduction of the same argument is one reduction */
  for (guint r = 0; r < L->loop->reductions->len; r++)
    {
      PlReduction *x = &g_array_index (L->loop->reductions, PlReduction, r);
      if (x->kind == kind && x->arg == arg && x->dtype == dtype && x->select_last == select_last)
        for (guint i = 0; i < L->loop->instrs->len; i++)
          if (pl_lower_instr (L, (int) i)->op == PL_SOP_REDUCED && pl_lower_instr (L, (int) i)->reduction == (int) r)
            return (int) i;
    }
  PlReduction red = { kind, arg, dtype, select_last, 0 };
  g_array_append_val (L->loop->reductions, red);
  return emit (L, (PlInstr) { .op = PL_SOP_REDUCED, .dtype = dtype, .reduction = (int) L->loop->reductions->len - 1 });
}

int
pl_lower_rindex (PlLower *L)
{
  return emit (L, (PlInstr) { .op = PL_SOP_RINDEX, .dtype = PL_DTYPE_I64 });
}

/* --- plans ------------------------------------------------------------------------ */

static PlLoopPlan *
loop_plan_new (void)
{
  PlLoopPlan *l = g_new0 (PlLoopPlan, 1);
  l->instrs = g_array_new (FALSE, TRUE, sizeof (PlInstr));
  l->reductions = g_array_new (FALSE, TRUE, sizeof (PlReduction));
  l->stores = g_array_new (FALSE, TRUE, sizeof (PlStore));
  l->checks = g_ptr_array_new_with_free_func (g_free);
  return l;
}

void
pl_plan_loop_free (PlLoopPlan *l)
{
  if (!l)
    return;
  g_array_unref (l->instrs);
  g_array_unref (l->reductions);
  g_array_unref (l->stores);
  g_ptr_array_unref (l->checks);
  pl_idx_arena_free (l->arena);
  g_free (l);
}

void
pl_kernel_plan_free (PlKernelPlan *p)
{
  if (!p)
    return;
  g_free (p->name);
  g_free (p->ops);
  g_free (p->note);
  g_ptr_array_unref (p->inputs);
  g_ptr_array_unref (p->outputs);
  pl_plan_loop_free (p->loop);
  g_free (p->shared_in);
  g_free (p->shared_out);
  g_free (p);
}

/* --- in-place sharing ----------------------------------------------------------------- */

bool
pl_kernel_plan_overwrites (const PlKernelPlan *p, int in, int out)
{
  g_return_val_if_fail (p != NULL, false);
  const PlLoopPlan *lp = p->loop;
  if (p->kind != PL_PLAN_LOOP || !lp || lp->reductions->len || lp->n_passes > 1 || in < 0 ||
      in >= (int) p->inputs->len || out < 0 || out >= (int) p->outputs->len)
    return false;
  const PlValue *x = p->inputs->pdata[in], *y = p->outputs->pdata[out];
  if (!x || !y || pl_dtype_size (x->dtype) != pl_dtype_size (y->dtype))
    return false;
  const PlIdx *at = NULL;   /* interned: equal offsets are the same pointer */
  for (guint s = 0; s < lp->stores->len; s++)
    {
      const PlStore *st = &g_array_index (lp->stores, PlStore, s);
      if (st->slot != out)
        continue;
      if (st->level != PL_LEVEL_ELEM || (at && st->index != at))
        return false;
      at = st->index;
    }
  for (guint i = 0; at && i < lp->instrs->len; i++)
    {
      const PlInstr *ld = &g_array_index (lp->instrs, PlInstr, i);
      if (ld->op == PL_SOP_LOAD && ld->slot == in && (ld->index != at || PL_INSTR_IS_GATHER (ld)))
        return false;
    }
  return at != NULL;
}

void
pl_kernel_plan_share (PlKernelPlan *p, int in, int out)
{
  g_return_if_fail (p != NULL && in >= 0 && in < (int) p->inputs->len && out >= 0 && out < (int) p->outputs->len);
  if (!p->shared_in)
    {
      p->shared_in = g_new0 (bool, p->inputs->len);
      p->shared_out = g_new0 (bool, p->outputs->len);
    }
  p->shared_in[in] = p->shared_out[out] = true;
}

bool
pl_kernel_plan_restrict (const PlKernelPlan *p, bool output, int k)
{
  g_return_val_if_fail (p != NULL, true);
  if (p->in_place && (output ? k == 0 : k == p->lib_slot))
    return false;
  const bool *shared = output ? p->shared_out : p->shared_in;
  return !(shared && shared[k]);
}

PlKernelPlan *
pl_plan_new (PlPlanKind kind, const char *name, PlNode *const *nodes, int n)
{
  PlKernelPlan *p = g_new0 (PlKernelPlan, 1);
  p->kind = kind;
  p->name = g_strdup (name);
  p->inputs = g_ptr_array_new ();
  p->outputs = g_ptr_array_new ();
  p->lib_slot = -1;
  GString *ops = g_string_new (NULL);
  for (int i = 0; i < n; i++)
    {
      if (nodes[i]->op == PL_OP_Constant)
        continue;
      g_string_append_printf (ops, "%s%s", ops->len ? "+" : "", nodes[i]->op_type);
      p->n_ops++;
    }
  p->ops = g_string_free (ops, FALSE);
  return p;
}

void
pl_lower_init (PlLower *L, PlKernelPlan *plan, PlNode *const *nodes, int n)
{
  memset (L, 0, sizeof *L);
  L->plan = plan;
  L->loop = plan->loop = loop_plan_new ();
  L->members = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < n; i++)
    g_hash_table_add (L->members, nodes[i]);
  L->slots = g_hash_table_new (NULL, NULL);
  L->memo = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  L->node_reductions = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
}

void
pl_lower_clear (PlLower *L)
{
  g_hash_table_unref (L->members);
  g_hash_table_unref (L->slots);
  g_hash_table_unref (L->memo);
  g_hash_table_unref (L->node_reductions);
  pl_idx_arena_free (L->arena);
  g_free (L->why);
}

void
pl_lower_set_domain (PlLower *L, int rank, const int64_t *dims)
{
  L->rank = rank;
  memcpy (L->dims, dims, sizeof (int64_t) * rank);
  L->arena = pl_idx_arena_new (rank, dims);
  for (int k = 0; k < rank; k++)
    L->coords[k] = pl_idx_coord (L->arena, k);
}

bool
pl_lower_value_dims (const PlValue *v, int64_t *dims)
{
  return v && pl_shape_get_dims (&v->shape, dims);
}

bool
pl_lower_dims_equal (int ra, const int64_t *a, int rb, const int64_t *b)
{
  return ra == rb && memcmp (a, b, sizeof (int64_t) * ra) == 0;
}

/* Adds the store of output slot `slot` (value v): at the element when v has
 * D's shape, at the row when it has the rows' shape. */
static bool
add_store (PlLower *L, int slot, PlValue *v)
{
  int64_t d[PL_MAX_RANK];
  if (!pl_lower_value_dims (v, d))
    return pl_lower_fail (L, "output '%s' has no static shape", v->name) >= 0;
  int r = v->shape.rank;
  PlStore s = { .slot = slot, .level = PL_LEVEL_ELEM };
  const PlIdx *flat[PL_MAX_RANK];
  if (pl_lower_dims_equal (r, d, L->rank, L->dims))
    {
      s.value = pl_lower_value (L, v, L->coords);
      s.index = pl_lower_offset (L, v, L->coords);
    }
  else if (pl_dims_product (r, d) == pl_dims_product (L->rank, L->dims))
    {
      /* as many elements as D, in another shape (a group norm's result,
       * reshaped back from the [N, G, C/G*H*W] rows to [N, C, H, W]): D's
       * element at linear position i is the output's element i. */
      pl_idx_delinearize (L->arena, pl_idx_linearize (L->arena, L->rank, L->coords, L->dims), r, d, flat);
      s.value = pl_lower_value (L, v, flat);
      s.index = pl_lower_offset (L, v, flat);
    }
  else if (L->rows)
    {
      const PlIdx *idx[PL_MAX_RANK];
      int n = 0;
      bool keep = r == L->rank;
      for (int k = 0; k < L->rank; k++)
        if (!L->reduced[k])
          {
            if (n >= r || d[n] != L->dims[k])
              return pl_lower_fail (L, "output '%s' is neither elements nor rows", v->name) >= 0;
            idx[n++] = L->coords[k];
          }
        else if (keep)
          {
            if (d[n] != 1)
              return pl_lower_fail (L, "output '%s' is neither elements nor rows", v->name) >= 0;
            idx[n++] = pl_idx_const (L->arena, 0);
          }
      if (n != r)
        return pl_lower_fail (L, "output '%s' is neither elements nor rows", v->name) >= 0;
      s.level = PL_LEVEL_ROW;
      s.value = pl_lower_value (L, v, idx);
      s.index = pl_lower_offset (L, v, idx);
    }
  else
    return pl_lower_fail (L, "outputs of different shapes ('%s')", v->name) >= 0;
  if (s.value < 0 || !s.index)
    return false;
  g_ptr_array_add (L->plan->outputs, v);
  g_array_append_val (L->loop->stores, s);
  return true;
}

/* --- loop plans --------------------------------------------------------------------- */

static bool
is_library_op (const PlNode *n)
{
  return n->op == PL_OP_MatMul || n->op == PL_OP_Gemm || n->op == PL_OP_Conv || n->op == PL_OP_ConvTranspose;
}

/* Chooses D: the rows of the first reduction, else the first output's shape. */
static bool
choose_domain (PlLower *L, PlNode *const *nodes, int n, PlValue *const *outputs, int n_out)
{
  for (int i = 0; i < n; i++)
    {
      bool mask[PL_MAX_RANK];
      int64_t d[PL_MAX_RANK];
      if (nodes[i] == L->lib_node || !pl_lower_row_axes (nodes[i], mask) || !pl_lower_value_dims (nodes[i]->inputs[0], d))
        continue;
      L->rows = true;
      memcpy (L->reduced, mask, sizeof mask);
      pl_lower_set_domain (L, nodes[i]->inputs[0]->shape.rank, d);
      return true;
    }
  int64_t d[PL_MAX_RANK];
  if (n_out < 1 || !pl_lower_value_dims (outputs[0], d))
    return pl_lower_fail (L, "outputs without static shapes") >= 0;
  pl_lower_set_domain (L, outputs[0]->shape.rank, d);
  return true;
}

static void
read_hints (PlLoopPlan *lp, const PlNode *hints)
{
  if (!hints)
    return;
  lp->block_size = (int) CLAMP (pl_node_attr_int (hints, "block_size", 0), 0, 1024);
  lp->rows_per_block = (int) CLAMP (pl_node_attr_int (hints, "rows_per_block", 0), 0, 1024);
  lp->blocks_per_row = (int) CLAMP (pl_node_attr_int (hints, "blocks_per_row", 0), 0, 65536);
}

int64_t
pl_plan_loop_flops (const PlLoopPlan *lp)
{
  int64_t per = 0;
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = &g_array_index (lp->instrs, PlInstr, i);
      if (x->used && x->level == PL_LEVEL_ELEM && x->op > PL_SOP_RINDEX)
        per++;
    }
  return (per + (int64_t) lp->reductions->len) * lp->total;
}

/* Lowers the outputs into L's loop plan; D must be chosen. */
bool
pl_lower_outputs (PlLower *L, PlValue *const *outputs, int n_out)
{
  for (int o = 0; o < n_out; o++)
    if (!add_store (L, o, outputs[o]))
      return false;
  if (!pl_lower_analyze (L))
    return false;
  pl_lower_split_dims (L);
  int order[PL_MAX_RANK];
  pl_lower_loop_order (L, order);
  pl_lower_coalesce (L, order);
  return true;
}

static PlKernelPlan *
plan_loop (const char *name, PlNode *const *nodes, int n, PlValue *const *outputs, int n_out, const PlNode *hints,
           GError **error)
{
  PlKernelPlan *p = pl_plan_new (PL_PLAN_LOOP, name, nodes, n);
  PlLower L;
  pl_lower_init (&L, p, nodes, n);
  bool ok = choose_domain (&L, nodes, n, outputs, n_out) && pl_lower_outputs (&L, outputs, n_out);
  if (!ok)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s", L.why ? L.why : "cannot generate");
      pl_lower_clear (&L);
      pl_kernel_plan_free (p);
      return NULL;
    }
  read_hints (p->loop, hints);
  p->flops = pl_plan_loop_flops (p->loop);
  if (n == 1 && nodes[0]->op == PL_OP_LayoutTransform)
    p->note = g_strdup_printf ("transpose %s -> %s", pl_layout_name (nodes[0]->inputs[0]->layout),
                               pl_layout_name (outputs[0]->layout));
  pl_lower_clear (&L);
  return p;
}

PlKernelPlan *
pl_kernel_plan_relayout (const char *name, PlValue *v, PlLayout from, PlLayout to, GError **error)
{
  PlKernelPlan *p = pl_plan_new (PL_PLAN_LOOP, name, NULL, 0);
  g_free (p->ops);
  p->ops = g_strdup ("LayoutTransform");
  p->n_ops = 1;
  PlLower L;
  pl_lower_init (&L, p, NULL, 0);
  int64_t d[PL_MAX_RANK];
  bool ok = pl_lower_value_dims (v, d) && pl_plan_ctype (v->dtype);
  if (ok)
    {
      pl_lower_set_domain (&L, v->shape.rank, d);
      PlStore st = { .slot = 0, .level = PL_LEVEL_ELEM };
      st.value = pl_lower_load (&L, v, pl_lower_offset_in (&L, from, v, L.coords));
      st.index = pl_lower_offset_in (&L, to, v, L.coords);
      g_ptr_array_add (p->outputs, v);
      g_array_append_val (L.loop->stores, st);
      ok = st.value >= 0 && st.index && pl_lower_analyze (&L);
    }
  if (!ok)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "cannot reorder '%s' from %s to %s%s%s", v->name,
                   pl_layout_name (from), pl_layout_name (to), L.why ? ": " : "", L.why ? L.why : "");
      pl_lower_clear (&L);
      pl_kernel_plan_free (p);
      return NULL;
    }
  int order[PL_MAX_RANK];   /* the destination's order: contiguous stores */
  pl_layout_perm (to, v->shape.rank, order);
  pl_lower_coalesce (&L, order);
  p->note = g_strdup_printf ("transpose '%s' %s -> %s", v->name, pl_layout_name (from), pl_layout_name (to));
  pl_lower_clear (&L);
  return p;
}

/* --- entry points ------------------------------------------------------------------- */

PlKernelPlan *
pl_kernel_plan_new (const char *name, PlNode *const *nodes, int n, PlValue *const *outputs, int n_outputs,
                    const PlNode *hints, GError **error)
{
  PlNode *lib = NULL;
  for (int i = 0; i < n; i++)
    if (is_library_op (nodes[i]))
      {
        if (lib)
          {
            g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "two library calls in one kernel");
            return NULL;
          }
        lib = nodes[i];
      }
  if (n_outputs < 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "a kernel without outputs");
      return NULL;
    }
  if (lib)
    return pl_plan_library (name, lib, nodes, n, outputs, n_outputs, error);
  return plan_loop (name, nodes, n, outputs, n_outputs, hints, error);
}

/* A view shares its input's memory only when that memory reads the same
 * for the output: both in the default layout (row-major, so a reshape keeps
 * the element order), or one layout and one shape. Otherwise it is a copy
 * loop that reads the input in its layout. */
static bool
is_view_op (const PlNode *node)
{
  switch (node->op)
    {
    case PL_OP_Reshape: case PL_OP_Flatten: case PL_OP_Squeeze: case PL_OP_Unsqueeze: case PL_OP_Identity:
      return node->inputs[0] && node->outputs[0] && node->inputs[0]->dtype == node->outputs[0]->dtype;
    default:
      return false;
    }
}

/* The shape-category ops plan-ops.c and plan-select.c lower (when their
 * parameters allow; else they fail with the reason); the others run as the
 * reference without trying. */
static bool
is_generated_shape_op (const PlNode *node)
{
  switch (node->op)
    {
    case PL_OP_Transpose: case PL_OP_Expand: case PL_OP_Slice: case PL_OP_Split: case PL_OP_Concat:
    case PL_OP_Pad: case PL_OP_Resize: case PL_OP_Gather: case PL_OP_GatherElements: case PL_OP_GatherND: case PL_OP_Tile:
    case PL_OP_DepthToSpace: case PL_OP_SpaceToDepth: case PL_OP_OneHot: case PL_OP_ReverseSequence:
      return true;
    default:
      return is_view_op (node);
    }
}

static bool
is_alias_op (const PlNode *node)
{
  if (!is_view_op (node))
    return false;
  PlValue *x = node->inputs[0], *y = node->outputs[0];
  return x->layout == y->layout && (x->layout == PL_LAYOUT_NCHW || pl_shape_equal (&x->shape, &y->shape));
}

static PlKernelPlan *
plan_single (const char *name, PlNode *node, PlPlanKind kind, const char *note)
{
  PlKernelPlan *p = pl_plan_new (kind, name, &node, 1);
  p->node = node;
  for (int i = 0; i < node->n_inputs; i++)
    g_ptr_array_add (p->inputs, node->inputs[i]);
  for (int i = 0; i < node->n_outputs; i++)
    g_ptr_array_add (p->outputs, node->outputs[i]);
  p->note = g_strdup (note);
  return p;
}

PlKernelPlan *
pl_kernel_plan_fallback (const char *name, const PlNode *node, const char *why)
{
  return plan_single (name, (PlNode *) node, PL_PLAN_FALLBACK, why);
}

/* The kind of an op whose kernel comes from a generator of its own (pool.c,
 * scan.c, scatter.c, topk.c); PL_PLAN_FALLBACK for every other op. */
static PlPlanKind
own_kernel_kind (const PlNode *node)
{
  if (pl_pool_is_op (node->op))
    return PL_PLAN_POOL;
  switch (node->op)
    {
    case PL_OP_CumSum: return PL_PLAN_SCAN;
    case PL_OP_ScatterND: case PL_OP_ScatterElements: case PL_OP_Scatter: return PL_PLAN_SCATTER;
    case PL_OP_TopK: return PL_PLAN_TOPK;
    default: return PL_PLAN_FALLBACK;
    }
}

/* The plan of such an op: its generator's description of the node, else a
 * fallback saying why it refused. Slots: a constant parameter (CumSum's
 * axis, TopK's K) and MaxPool's unused Indices get none. */
static PlKernelPlan *
plan_own_kernel (const char *name, PlNode *node, PlPlanKind kind)
{
  PlKernelPlan d = { .kind = kind };   /* the description, until the plan exists */
  g_autofree char *why = NULL, *note = NULL;
  guint n_in = (guint) node->n_inputs, n_out = (guint) node->n_outputs;
  switch (kind)
    {
    case PL_PLAN_POOL:
      if (pl_pool_desc_from_node (node, &d.pool, &why))
        note = pl_pool_describe (&d.pool), d.flops = pl_pool_flops (&d.pool);
      n_out = 1;
      break;
    case PL_PLAN_SCAN:
      if (pl_scan_desc_from_node (node, &d.scan, &why))
        note = pl_scan_describe (&d.scan), d.flops = d.scan.outer * d.scan.len * d.scan.inner;
      n_in = 1;
      break;
    case PL_PLAN_SCATTER:
      if (pl_scatter_desc_from_node (node, &d.scatter, &why))
        note = pl_scatter_describe (&d.scatter);
      break;
    default:   /* PL_PLAN_TOPK */
      if (pl_topk_desc_from_node (node, &d.topk, &why))
        note = pl_topk_describe (&d.topk), d.flops = d.topk.outer * d.topk.len * d.topk.inner;
      n_in = 1;
      break;
    }
  if (!note)
    return plan_single (name, node, PL_PLAN_FALLBACK, why);
  PlKernelPlan *p = plan_single (name, node, kind, note);
  g_ptr_array_set_size (p->inputs, MIN (n_in, p->inputs->len));
  g_ptr_array_set_size (p->outputs, MIN (n_out, p->outputs->len));
  p->pool = d.pool;
  p->scan = d.scan;
  p->scatter = d.scatter;
  p->topk = d.topk;
  p->flops = d.flops;
  return p;
}

PlKernelPlan *
pl_kernel_plan_for_node (const char *name, const PlNode *cnode, GError **error)
{
  PlNode *node = (PlNode *) cnode;
  if (node->body)
    {
      int n;
      g_autofree PlNode **order = pl_graph_topo_order (node->body, &n, error);
      if (!order)
        return NULL;
      return pl_kernel_plan_new (name, order, n, (PlValue *const *) node->body->outputs->pdata,
                                 (int) node->body->outputs->len, node, error);
    }
  if (is_alias_op (node))
    return plan_single (name, node, PL_PLAN_ALIAS, "a view: no kernel");
  PlPlanKind own = own_kernel_kind (node);
  if (own != PL_PLAN_FALLBACK)
    return plan_own_kernel (name, node, own);
  g_autoptr (GPtrArray) outs = g_ptr_array_new ();
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i])
      g_ptr_array_add (outs, node->outputs[i]);
  g_autoptr (GError) local = NULL;
  PlKernelPlan *p = NULL;
  if (pl_op_info (node->op)->category != PL_CAT_SHAPE || is_generated_shape_op (node))
    p = pl_kernel_plan_new (name, &node, 1, (PlValue *const *) outs->pdata, (int) outs->len, NULL, &local);
  if (p)
    return p;
  return plan_single (name, node, PL_PLAN_FALLBACK, local ? local->message : "no generated kernel for this op");
}

int
pl_plan_transpose_dim (const PlKernelPlan *p)
{
  const PlLoopPlan *lp = p->loop;
  if (p->kind != PL_PLAN_LOOP || lp->reductions->len || lp->stores->len != 1 || lp->rank < 2)
    return -1;
  const PlStore *st = &g_array_index (lp->stores, PlStore, 0);
  const PlInstr *ld = &g_array_index (lp->instrs, PlInstr, st->value);
  int inner = lp->rank - 1;
  bool nested;
  if (ld->op != PL_SOP_LOAD || PL_INSTR_IS_GATHER (ld) || st->level != PL_LEVEL_ELEM ||
      pl_idx_coord_coef (st->index, inner, &nested) != 1 ||
      nested || pl_idx_coord_coef (ld->index, inner, &nested) == 1)
    return -1;
  for (int j = 0; j < inner; j++)
    if (pl_idx_coord_coef (ld->index, j, &nested) == 1 && !nested && lp->dims[j] >= 8 && lp->dims[inner] >= 8)
      return j;
  return -1;
}

bool
pl_kernel_plan_checks (const PlKernelPlan *p)
{
  if (p->kind == PL_PLAN_SCATTER)
    return true;
  if (!p->loop)
    return false;
  for (guint i = 0; i < p->loop->instrs->len; i++)
    {
      const PlInstr *x = pl_loop_instr (p->loop, (int) i);
      if (x->op == PL_SOP_CHECK && x->used)
        return true;
    }
  return false;
}

char *
pl_kernel_plan_check_message (const PlKernelPlan *p, int64_t id, int64_t value)
{
  g_autofree char *owned = NULL;
  const char *message = "an index out of range or a division by zero";
  if (p->kind == PL_PLAN_SCATTER)
    message = owned = pl_scatter_check_message (&p->scatter, p->node, id);
  else if (p->loop && id > 0 && id <= (int64_t) p->loop->checks->len)
    message = p->loop->checks->pdata[id - 1];
  g_auto (GStrv) parts = g_strsplit (message, "%I", -1);
  g_autofree char *v = g_strdup_printf ("%" G_GINT64_FORMAT, value);
  return g_strjoinv (v, parts);
}

/* --- dump -------------------------------------------------------------------------- */

static const char *const sop_names[PL_SOP_COUNT] = {
  "load", "const", "reduced", "rindex", "neg", "abs", "exp", "expm1", "log", "log1p", "sqrt", "recip", "tanh",
  "erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "floor", "ceil",
  "round", "sigmoid", "sign", "not", "isnan", "isinf", "cast", "check", "add", "sub", "mul", "div", "pow", "mod", "max", "min",
  "eq", "lt", "le", "gt", "ge", "and", "or", "xor", "select",
};
G_STATIC_ASSERT (G_N_ELEMENTS (sop_names) == PL_SOP_COUNT);

static const char *const red_names[] = { "sum", "prod", "max", "min", "argmax", "argmin" };

char *
pl_kernel_plan_dump (const PlKernelPlan *p)
{
  static const char *const kinds[] = { "loop", "gemm", "conv", "pool", "scan", "scatter", "topk", "alias", "fallback" };
  G_STATIC_ASSERT (G_N_ELEMENTS (kinds) == PL_PLAN_FALLBACK + 1);
  static const char *const levels[] = { "const", "row", "elem" };
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "kernel %s: %s (%s)%s%s\n", p->name, kinds[p->kind], p->ops, p->note ? " — " : "",
                          p->note ? p->note : "");
  const PlLoopPlan *lp = p->loop;
  if (!lp)
    return g_string_free (s, FALSE);
  g_string_append (s, "  loop dims [");
  for (int k = 0; k < lp->rank; k++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT "%s", k ? ", " : "", lp->dims[k], k >= lp->n_kept ? "r" : "");
  g_string_append_printf (s, "]: %" G_GINT64_FORMAT " rows x %" G_GINT64_FORMAT ", %d pass%s, %d scratch\n",
                          lp->n_rows, lp->row_len, lp->n_passes, lp->n_passes == 1 ? "" : "es", lp->n_scratch);
  const char *names[PL_MAX_RANK] = { "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7" };
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = &g_array_index (lp->instrs, PlInstr, i);
      if (!x->used)
        continue;
      g_string_append_printf (s, "  v%u = %s.%s", i, sop_names[x->op], pl_dtype_name (x->dtype));
      if (x->op == PL_SOP_LOAD)
        {
          g_autofree char *ix = pl_idx_to_c (x->index, names);
          if (x->slot == PL_SLOT_INDEX)
            g_string_append_printf (s, " index(%s)", ix);
          else if (PL_INSTR_IS_GATHER (x))
            g_string_append_printf (s, " in%d[%s + v%d * %" G_GINT64_FORMAT "]", x->slot, ix, x->a[0], x->imm_i);
          else
            g_string_append_printf (s, " in%d[%s]", x->slot, ix);
        }
      else if (x->op == PL_SOP_CONST && pl_dtype_is_float (x->dtype))
        g_string_append_printf (s, " %g", x->imm);
      else if (x->op == PL_SOP_CONST)
        g_string_append_printf (s, " %" G_GINT64_FORMAT, x->imm_i);
      else if (x->op == PL_SOP_REDUCED)
        {
          const PlReduction *r = &g_array_index (lp->reductions, PlReduction, x->reduction);
          g_string_append_printf (s, " %s(v%d) in pass %d", red_names[r->kind], r->arg, r->pass);
        }
      for (int k = 0; k < x->n_args; k++)
        g_string_append_printf (s, " v%d", x->a[k]);
      g_string_append_printf (s, "   [%s, phase %d%s]\n", levels[x->level], x->phase, x->scratch >= 0 ? ", scratch" : "");
    }
  for (guint k = 0; k < lp->stores->len; k++)
    {
      const PlStore *st = &g_array_index (lp->stores, PlStore, k);
      g_autofree char *ix = pl_idx_to_c (st->index, names);
      g_string_append_printf (s, "  out%d[%s] = v%d   [%s, pass %d]\n", st->slot, ix, st->value, levels[st->level],
                              st->pass);
    }
  return g_string_free (s, FALSE);
}
