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
 * Library kernels: MatMul/Gemm (transposes of the operands absorbed as flags)
 * and Conv become one library call; what follows them in the set is the
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

static PlInstr *
instr (PlLower *L, int i)
{
  return &g_array_index (L->loop->instrs, PlInstr, i);
}

PlDType
pl_lower_dtype (PlLower *L, int i)
{
  return i >= 0 ? instr (L, i)->dtype : PL_DTYPE_UNDEFINED;
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

int
pl_lower_binary (PlLower *L, PlScalarOp op, int a, int b)
{
  if (a < 0 || b < 0)
    return -1;
  PlDType t = pl_lower_dtype (L, a);
  if (t != pl_lower_dtype (L, b))
    return pl_lower_fail (L, "operands of different types (%s, %s)", pl_dtype_name (t),
                          pl_dtype_name (pl_lower_dtype (L, b)));
  if (op >= PL_SOP_EQ && op <= PL_SOP_XOR)
    t = PL_DTYPE_BOOL;
  return emit (L, (PlInstr) { .op = op, .dtype = t, .a = { a, b }, .n_args = 2 });
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
          if (instr (L, (int) i)->op == PL_SOP_REDUCED && instr (L, (int) i)->reduction == (int) r)
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
  return l;
}

static void
loop_plan_free (PlLoopPlan *l)
{
  if (!l)
    return;
  g_array_unref (l->instrs);
  g_array_unref (l->reductions);
  g_array_unref (l->stores);
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
  loop_plan_free (p->loop);
  g_free (p);
}

static PlKernelPlan *
plan_new (PlPlanKind kind, const char *name, PlNode *const *nodes, int n)
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

static void
lower_init (PlLower *L, PlKernelPlan *plan, PlNode *const *nodes, int n)
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

static void
lower_clear (PlLower *L)
{
  g_hash_table_unref (L->members);
  g_hash_table_unref (L->slots);
  g_hash_table_unref (L->memo);
  g_hash_table_unref (L->node_reductions);
  pl_idx_arena_free (L->arena);
  g_free (L->why);
}

static void
set_domain (PlLower *L, int rank, const int64_t *dims)
{
  L->rank = rank;
  memcpy (L->dims, dims, sizeof (int64_t) * rank);
  L->arena = pl_idx_arena_new (rank, dims);
  for (int k = 0; k < rank; k++)
    L->coords[k] = pl_idx_coord (L->arena, k);
}

static bool
value_dims (const PlValue *v, int64_t *dims)
{
  return v && pl_shape_get_dims (&v->shape, dims);
}

static int64_t
elem_count (int rank, const int64_t *dims)
{
  int64_t n = 1;
  for (int k = 0; k < rank; k++)
    n *= dims[k];
  return n;
}

static bool
dims_equal (int ra, const int64_t *a, int rb, const int64_t *b)
{
  return ra == rb && memcmp (a, b, sizeof (int64_t) * ra) == 0;
}

/* Adds the store of output slot `slot` (value v): at the element when v has
 * D's shape, at the row when it has the rows' shape. */
static bool
add_store (PlLower *L, int slot, PlValue *v)
{
  int64_t d[PL_MAX_RANK];
  if (!value_dims (v, d))
    return pl_lower_fail (L, "output '%s' has no static shape", v->name) >= 0;
  int r = v->shape.rank;
  PlStore s = { .slot = slot, .level = PL_LEVEL_ELEM };
  const PlIdx *flat[PL_MAX_RANK];
  if (dims_equal (r, d, L->rank, L->dims))
    {
      s.value = pl_lower_value (L, v, L->coords);
      s.index = pl_lower_offset (L, v, L->coords);
    }
  else if (elem_count (r, d) == elem_count (L->rank, L->dims))
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

/* --- analysis: levels, passes, scratch ------------------------------------------- */

static bool
uses_reduced_coord (PlLower *L, const PlIdx *x, bool *any)
{
  bool red = false;
  *any = false;
  for (int k = 0; k < L->rank; k++)
    if (pl_idx_uses_coord (x, k))
      {
        *any = true;
        red |= L->reduced[k];
      }
  return red;
}

static bool
analyze (PlLower *L)
{
  PlLoopPlan *lp = L->loop;
  int n = (int) lp->instrs->len;
  for (int i = 0; i < n; i++)
    {
      PlInstr *x = instr (L, i);
      x->phase = 0;
      switch (x->op)
        {
        case PL_SOP_LOAD:
          {
            bool any, red = uses_reduced_coord (L, x->index, &any);
            x->level = red ? PL_LEVEL_ELEM : any ? (L->rows ? PL_LEVEL_ROW : PL_LEVEL_ELEM) : PL_LEVEL_CONST;
            break;
          }
        case PL_SOP_CONST:
          x->level = PL_LEVEL_CONST;
          break;
        case PL_SOP_RINDEX:
          x->level = PL_LEVEL_ELEM;
          break;
        case PL_SOP_REDUCED:
          {
            PlReduction *r = &g_array_index (lp->reductions, PlReduction, x->reduction);
            r->pass = instr (L, r->arg)->phase;
            x->level = PL_LEVEL_ROW;
            x->phase = r->pass + 1;
            break;
          }
        default:
          x->level = PL_LEVEL_CONST;
          for (int k = 0; k < x->n_args; k++)
            {
              x->level = MAX (x->level, instr (L, x->a[k])->level);
              x->phase = MAX (x->phase, instr (L, x->a[k])->phase);
            }
        }
    }
  int passes = 1;
  for (guint s = 0; s < lp->stores->len; s++)
    {
      PlStore *st = &g_array_index (lp->stores, PlStore, s);
      PlInstr *v = instr (L, st->value);
      if (st->level == PL_LEVEL_ROW && v->level == PL_LEVEL_ELEM)
        return pl_lower_fail (L, "a row output depends on the element") >= 0;
      st->pass = v->phase;
      if (st->level == PL_LEVEL_ELEM)
        passes = MAX (passes, st->pass + 1);
    }
  for (guint r = 0; r < lp->reductions->len; r++)
    passes = MAX (passes, g_array_index (lp->reductions, PlReduction, r).pass + 1);
  if (passes > 30)
    return pl_lower_fail (L, "too many dependent reductions (%d passes)", passes) >= 0;
  lp->n_passes = passes;

  /* which passes need each element value; materialize the ones needed twice */
  for (guint s = 0; s < lp->stores->len; s++)
    {
      PlStore *st = &g_array_index (lp->stores, PlStore, s);
      instr (L, st->value)->used = true;
      if (st->level == PL_LEVEL_ELEM)
        instr (L, st->value)->passes |= 1u << st->pass;
    }
  for (guint r = 0; r < lp->reductions->len; r++)
    {
      PlReduction *red = &g_array_index (lp->reductions, PlReduction, r);
      instr (L, red->arg)->passes |= 1u << red->pass;
      instr (L, red->arg)->used = true;
    }
  lp->scratch_dtype = PL_DTYPE_F32;
  for (int i = n - 1; i >= 0; i--)
    {
      PlInstr *x = instr (L, i);
      if (x->passes)
        x->used = true;
      if (!x->used)
        continue;
      guint32 need = x->passes;
      if (x->level == PL_LEVEL_ELEM && x->op != PL_SOP_LOAD && x->op != PL_SOP_CONST && x->op != PL_SOP_RINDEX &&
          (need & (need - 1)) != 0)
        {
          x->scratch = lp->n_scratch++;
          need &= ~(need - 1);   /* computed once, in its first pass */
        }
      if (x->op == PL_SOP_REDUCED)
        {
          PlReduction *red = &g_array_index (lp->reductions, PlReduction, x->reduction);
          instr (L, red->arg)->used = true;
        }
      for (int k = 0; k < x->n_args; k++)
        {
          PlInstr *a = instr (L, x->a[k]);
          a->used = true;
          if (a->level == PL_LEVEL_ELEM)
            a->passes |= need;
        }
    }
  return true;
}

/* --- coalescing loop dims ---------------------------------------------------------- */

typedef struct {
  int     rep;      /* the innermost D coordinate merged into this loop dim */
  int64_t size;
  bool    reduced;
} LoopDim;

static GPtrArray *
all_indices (PlLower *L)
{
  GPtrArray *xs = g_ptr_array_new ();
  for (guint i = 0; i < L->loop->instrs->len; i++)
    if (instr (L, (int) i)->op == PL_SOP_LOAD)
      g_ptr_array_add (xs, (gpointer) instr (L, (int) i)->index);
  for (guint s = 0; s < L->loop->stores->len; s++)
    g_ptr_array_add (xs, (gpointer) g_array_index (L->loop->stores, PlStore, s).index);
  return xs;
}

/* Whether loop dims a (outer) and b (inner) may become one: every index
 * reads them as a * size(b) + b. */
static bool
mergeable (GPtrArray *xs, const LoopDim *a, const LoopDim *b)
{
  for (guint i = 0; i < xs->len; i++)
    {
      bool na, nb;
      int64_t ca = pl_idx_coord_coef (xs->pdata[i], a->rep, &na);
      int64_t cb = pl_idx_coord_coef (xs->pdata[i], b->rep, &nb);
      if (na || nb || ca != b->size * cb)
        return false;
    }
  return true;
}

/* Where an index reads coordinate k divided by (or modulo) d, d a proper
 * divisor of its size: cut[k] = d (the first such d found). */
static void
find_cuts (const PlLower *L, const PlIdx *x, int64_t *cut)
{
  for (int i = 0; i < x->n_terms; i++)
    {
      const PlIdxAtom *at = x->terms[i].atom;
      if (at->kind == PL_IDX_COORD)
        continue;
      const PlIdx *a = at->arg;
      const int k = a->n_terms == 1 && a->constant == 0 && a->terms[0].coef == 1 &&
                    a->terms[0].atom->kind == PL_IDX_COORD ? a->terms[0].atom->coord : -1;
      if (k >= 0 && cut[k] == 0 && at->divisor > 1 && at->divisor < L->dims[k] && L->dims[k] % at->divisor == 0)
        cut[k] = at->divisor;
      find_cuts (L, a, cut);
    }
}

/* Splits the loop of a rows kernel where an index divides a coordinate:
 * c = d * c_hi + c_lo, so c / d becomes c_hi and c % d becomes c_lo. A
 * group norm's rows [N, G, C/G*H*W] read gamma at (c / (H*W)) + C/G * g;
 * split, that load is invariant in the inner H*W loop, which vectorizes
 * again (coalesce merges back whatever every index reads as one). Rows
 * kernels only: a pointwise kernel's loop order follows its stores' layout
 * by D's rank. */
static void
split_dims (PlLower *L)
{
  if (!L->rows)
    return;
  int64_t cut[PL_MAX_RANK] = { 0 };
  g_autoptr (GPtrArray) xs = all_indices (L);
  for (guint i = 0; i < xs->len; i++)
    find_cuts (L, xs->pdata[i], cut);
  int rank = 0;
  int64_t dims[PL_MAX_RANK];
  bool reduced[PL_MAX_RANK];
  for (int k = 0; k < L->rank; k++)
    {
      if (cut[k] > 0 && rank + (L->rank - k) + 1 > PL_MAX_RANK)
        cut[k] = 0;            /* no room for another dim */
      if (cut[k] > 0)
        {
          dims[rank] = L->dims[k] / cut[k];
          reduced[rank++] = L->reduced[k];
        }
      dims[rank] = cut[k] > 0 ? cut[k] : L->dims[k];
      reduced[rank++] = L->reduced[k];
    }
  if (rank == L->rank)
    return;
  PlIdxArena *arena = pl_idx_arena_new (rank, dims);
  const PlIdx *repl[PL_MAX_RANK];
  for (int k = 0, j = 0; k < L->rank; k++, j++)
    {
      repl[k] = pl_idx_coord (arena, j);
      if (cut[k] > 0)
        {
          repl[k] = pl_idx_add (arena, pl_idx_mul (arena, repl[k], cut[k]), pl_idx_coord (arena, j + 1));
          j++;
        }
    }
  for (guint i = 0; i < L->loop->instrs->len; i++)
    {
      PlInstr *x = instr (L, (int) i);
      if (x->op == PL_SOP_LOAD)
        x->index = pl_idx_substitute (arena, x->index, repl);
    }
  for (guint s = 0; s < L->loop->stores->len; s++)
    {
      PlStore *st = &g_array_index (L->loop->stores, PlStore, s);
      st->index = pl_idx_substitute (arena, st->index, repl);
    }
  pl_idx_arena_free (L->arena);
  L->arena = arena;
  L->rank = rank;
  memcpy (L->dims, dims, sizeof dims);
  memcpy (L->reduced, reduced, sizeof reduced);
  for (int k = 0; k < rank; k++)
    L->coords[k] = pl_idx_coord (arena, k);
}

/* The order in which D's coordinates are looped, outermost first: D's own,
 * except for a pointwise kernel whose stores are all in one other layout,
 * which loops in that layout's order so the innermost loop writes
 * contiguously (a LayoutTransform's loop then follows its destination). */
static void
loop_order (PlLower *L, int *order)
{
  for (int k = 0; k < L->rank; k++)
    order[k] = k;
  PlLoopPlan *lp = L->loop;
  if (L->rows || lp->stores->len == 0)
    return;
  PlLayout layout = ((PlValue *) L->plan->outputs->pdata[0])->layout;
  for (guint s = 0; s < lp->stores->len; s++)
    {
      PlValue *v = L->plan->outputs->pdata[g_array_index (lp->stores, PlStore, s).slot];
      if (v->layout != layout || v->shape.rank != L->rank)
        return;
    }
  if (layout != PL_LAYOUT_NCHW)
    pl_layout_perm (layout, L->rank, order);
}

/* Loops D's coordinates in `order` (loop_order), merging neighbours. */
static void
coalesce (PlLower *L, const int *order)
{
  PlLoopPlan *lp = L->loop;
  LoopDim ld[PL_MAX_RANK];
  int n = 0;
  int map[PL_MAX_RANK];
  for (int pass = 0; pass < 2; pass++)       /* rows first, then the reduced dims */
    for (int i = 0; i < L->rank; i++)
      {
        int k = order[i];
        if (L->dims[k] > 1 && L->reduced[k] == (pass == 1))
          ld[n++] = (LoopDim) { k, L->dims[k], L->reduced[k] };
      }
  for (int k = 0; k < L->rank; k++)
    map[k] = -1;

  g_autoptr (GPtrArray) xs = all_indices (L);
  LoopDim out[PL_MAX_RANK];
  int m = 0;
  for (int i = 0; i < n; i++)
    {
      if (m > 0 && out[m - 1].reduced == ld[i].reduced && mergeable (xs, &out[m - 1], &ld[i]))
        {
          out[m - 1].rep = ld[i].rep;
          out[m - 1].size *= ld[i].size;
          continue;
        }
      out[m++] = ld[i];
    }
  lp->rank = m;
  lp->n_kept = 0;
  lp->n_rows = lp->row_len = 1;
  for (int i = 0; i < m; i++)
    {
      lp->dims[i] = out[i].size;
      map[out[i].rep] = i;
      if (out[i].reduced)
        lp->row_len *= out[i].size;
      else
        {
          lp->n_kept++;
          lp->n_rows *= out[i].size;
        }
    }
  lp->total = lp->n_rows * lp->row_len;
  lp->arena = pl_idx_arena_new (m, lp->dims);
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      PlInstr *x = instr (L, (int) i);
      if (x->op == PL_SOP_LOAD)
        x->index = pl_idx_translate (lp->arena, x->index, map);
    }
  for (guint s = 0; s < lp->stores->len; s++)
    {
      PlStore *st = &g_array_index (lp->stores, PlStore, s);
      st->index = pl_idx_translate (lp->arena, st->index, map);
    }
}

/* --- loop plans --------------------------------------------------------------------- */

static bool
is_library_op (const PlNode *n)
{
  return n->op == PL_OP_MatMul || n->op == PL_OP_Gemm || n->op == PL_OP_Conv;
}

/* Chooses D: the rows of the first reduction, else the first output's shape. */
static bool
choose_domain (PlLower *L, PlNode *const *nodes, int n, PlValue *const *outputs, int n_out)
{
  for (int i = 0; i < n; i++)
    {
      bool mask[PL_MAX_RANK];
      int64_t d[PL_MAX_RANK];
      if (nodes[i] == L->lib_node || !pl_lower_row_axes (nodes[i], mask) || !value_dims (nodes[i]->inputs[0], d))
        continue;
      L->rows = true;
      memcpy (L->reduced, mask, sizeof mask);
      set_domain (L, nodes[i]->inputs[0]->shape.rank, d);
      return true;
    }
  int64_t d[PL_MAX_RANK];
  if (n_out < 1 || !value_dims (outputs[0], d))
    return pl_lower_fail (L, "outputs without static shapes") >= 0;
  set_domain (L, outputs[0]->shape.rank, d);
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

static int64_t
loop_flops (const PlLoopPlan *lp)
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
static bool
lower_outputs (PlLower *L, PlValue *const *outputs, int n_out)
{
  for (int o = 0; o < n_out; o++)
    if (!add_store (L, o, outputs[o]))
      return false;
  if (!analyze (L))
    return false;
  split_dims (L);
  int order[PL_MAX_RANK];
  loop_order (L, order);
  coalesce (L, order);
  return true;
}

static PlKernelPlan *
plan_loop (const char *name, PlNode *const *nodes, int n, PlValue *const *outputs, int n_out, const PlNode *hints,
           GError **error)
{
  PlKernelPlan *p = plan_new (PL_PLAN_LOOP, name, nodes, n);
  PlLower L;
  lower_init (&L, p, nodes, n);
  bool ok = choose_domain (&L, nodes, n, outputs, n_out) && lower_outputs (&L, outputs, n_out);
  if (!ok)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s", L.why ? L.why : "cannot generate");
      lower_clear (&L);
      pl_kernel_plan_free (p);
      return NULL;
    }
  read_hints (p->loop, hints);
  p->flops = loop_flops (p->loop);
  if (n == 1 && nodes[0]->op == PL_OP_LayoutTransform)
    p->note = g_strdup_printf ("transpose %s -> %s", pl_layout_name (nodes[0]->inputs[0]->layout),
                               pl_layout_name (outputs[0]->layout));
  lower_clear (&L);
  return p;
}

PlKernelPlan *
pl_kernel_plan_relayout (const char *name, PlValue *v, PlLayout from, PlLayout to, GError **error)
{
  PlKernelPlan *p = plan_new (PL_PLAN_LOOP, name, NULL, 0);
  g_free (p->ops);
  p->ops = g_strdup ("LayoutTransform");
  p->n_ops = 1;
  PlLower L;
  lower_init (&L, p, NULL, 0);
  int64_t d[PL_MAX_RANK];
  bool ok = value_dims (v, d) && pl_plan_ctype (v->dtype);
  if (ok)
    {
      set_domain (&L, v->shape.rank, d);
      PlStore st = { .slot = 0, .level = PL_LEVEL_ELEM };
      st.value = pl_lower_load (&L, v, pl_lower_offset_in (&L, from, v, L.coords));
      st.index = pl_lower_offset_in (&L, to, v, L.coords);
      g_ptr_array_add (p->outputs, v);
      g_array_append_val (L.loop->stores, st);
      ok = st.value >= 0 && st.index && analyze (&L);
    }
  if (!ok)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "cannot reorder '%s' from %s to %s%s%s", v->name,
                   pl_layout_name (from), pl_layout_name (to), L.why ? ": " : "", L.why ? L.why : "");
      lower_clear (&L);
      pl_kernel_plan_free (p);
      return NULL;
    }
  int order[PL_MAX_RANK];   /* the destination's order: contiguous stores */
  pl_layout_perm (to, v->shape.rank, order);
  coalesce (&L, order);
  p->note = g_strdup_printf ("transpose '%s' %s -> %s", v->name, pl_layout_name (from), pl_layout_name (to));
  lower_clear (&L);
  return p;
}

/* --- library plans ------------------------------------------------------------------ */

/* perm swaps the last two dims and keeps the rest. */
static bool
swaps_last_two (const PlNode *t)
{
  int r = t->inputs[0] ? t->inputs[0]->shape.rank : -1;
  const int64_t *p;
  int n;
  if (r < 2)
    return false;
  if (!pl_node_attr_ints (t, "perm", &p, &n))
    return r == 2;
  if (n != r)
    return false;
  for (int i = 0; i < r; i++)
    if (p[i] != (i < r - 2 ? i : i == r - 2 ? r - 1 : r - 2))
      return false;
  return true;
}

/* Operand side of the library op with a member Transpose absorbed as a flag. */
static PlValue *
gemm_operand (GHashTable *members, const PlNode *mm, int side, bool *trans, GHashTable *absorbed)
{
  PlValue *v = mm->inputs[side];
  PlNode *t = v->producer;
  if (t && t->op == PL_OP_Transpose && g_hash_table_contains (members, t) && v->n_uses == 1 &&
      !pl_value_is_output (v) && swaps_last_two (t))
    {
      *trans = !*trans;
      g_hash_table_add (absorbed, t);
      return t->inputs[0];
    }
  return v;
}

/* A GEMM operand's input slot. BLAS reads row-major: the runtime transposes
 * an operand in another layout into a buffer of its own for this slot, so
 * the slot is not shared with the epilogue's loads of the value (they read
 * its own buffer in its layout). */
static int
gemm_slot (PlLower *L, PlValue *v)
{
  if (v->layout == PL_LAYOUT_NCHW)
    return pl_lower_slot (L, v);
  g_ptr_array_add (L->plan->inputs, v);
  return (int) L->plan->inputs->len - 1;
}

static bool
gemm_desc (PlKernelPlan *p, PlLower *L, const PlNode *mm, GHashTable *absorbed, char **why)
{
  PlGemmDesc *g = &p->gemm;
  bool ta = mm->op == PL_OP_Gemm && pl_node_attr_int (mm, "transA", 0);
  bool tb = mm->op == PL_OP_Gemm && pl_node_attr_int (mm, "transB", 0);
  PlValue *a = gemm_operand (L->members, mm, 0, &ta, absorbed);
  PlValue *b = gemm_operand (L->members, mm, 1, &tb, absorbed);
  int64_t ad[PL_MAX_RANK], bd[PL_MAX_RANK], od[PL_MAX_RANK];
  if (!value_dims (a, ad) || !value_dims (b, bd) || !value_dims (mm->outputs[0], od))
    return (*why = g_strdup ("GEMM without static shapes")) == NULL;
  if (a->dtype != PL_DTYPE_F32 && a->dtype != PL_DTYPE_F64)
    return (*why = g_strdup_printf ("GEMM of %s", pl_dtype_name (a->dtype))) == NULL;
  int ra = a->shape.rank, rb = b->shape.rank;
  /* 1-D operands: a row vector (A) or a column vector (B) */
  int64_t am[2] = { ra >= 2 ? ad[ra - 2] : 1, ad[ra - 1] };
  int64_t bm[2] = { rb >= 2 ? bd[rb - 2] : bd[0], rb >= 2 ? bd[rb - 1] : 1 };
  if (ra < 1 || rb < 1)
    return (*why = g_strdup ("GEMM of scalars")) == NULL;
  g->dtype = a->dtype;
  g->trans_a = ta;
  g->trans_b = tb;
  g->M = ta ? am[1] : am[0];
  g->K = ta ? am[0] : am[1];
  g->N = tb ? bm[0] : bm[1];
  if ((tb ? bm[1] : bm[0]) != g->K)
    return (*why = g_strdup ("GEMM: inner dims differ")) == NULL;
  g->alpha = mm->op == PL_OP_Gemm ? pl_node_attr_float (mm, "alpha", 1.0f) : 1.0;
  int ba = MAX (ra - 2, 0), bb = MAX (rb - 2, 0);
  g->batch_rank = MAX (ba, bb);
  g->batch = 1;
  int64_t sa = g->M * g->K, sb = g->K * g->N;
  for (int k = g->batch_rank - 1; k >= 0; k--)
    {
      int ia = k - (g->batch_rank - ba), ib = k - (g->batch_rank - bb);
      int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
      if (da != db && da != 1 && db != 1)
        return (*why = g_strdup ("GEMM: batch dims do not broadcast")) == NULL;
      g->batch_dims[k] = MAX (da, db);
      g->a_strides[k] = da == 1 ? 0 : sa;
      g->b_strides[k] = db == 1 ? 0 : sb;
      sa *= da;
      sb *= db;
      g->batch *= g->batch_dims[k];
    }
  g->a_slot = gemm_slot (L, a);
  g->b_slot = gemm_slot (L, b);
  p->flops = 2 * g->batch * g->M * g->N * g->K;
  g_autofree char *batch = g->batch > 1 ? g_strdup_printf ("%" G_GINT64_FORMAT " x ", g->batch) : g_strdup ("");
  p->note = g_strdup_printf ("gemm %s%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "%s%s", batch,
                             g->M, g->N, g->K, ta ? " transA" : "", tb ? " transB" : "");
  return true;
}

bool
pl_conv_desc_from_node (const PlNode *conv, PlConvDesc *c, char **why)
{
  memset (c, 0, sizeof *c);
  int64_t xd[PL_MAX_RANK], wd[PL_MAX_RANK], od[PL_MAX_RANK];
  PlValue *x = conv->inputs[0], *w = conv->n_inputs > 1 ? conv->inputs[1] : NULL;
  if (!value_dims (x, xd) || !value_dims (w, wd) || !value_dims (conv->outputs[0], od) || x->shape.rank < 3)
    return (*why = g_strdup ("Conv without static shapes")) == NULL;
  if (x->dtype != PL_DTYPE_F32 && x->dtype != PL_DTYPE_F64)
    return (*why = g_strdup_printf ("Conv of %s", pl_dtype_name (x->dtype))) == NULL;
  int n = x->shape.rank - 2;
  c->dtype = x->dtype;
  c->n = n;
  c->batch = xd[0];
  c->c_in = xd[1];
  c->c_out = wd[0];
  c->group = pl_node_attr_int (conv, "group", 1);
  if (c->group < 1 || c->c_in % c->group || c->c_out % c->group || wd[1] != c->c_in / c->group)
    return (*why = g_strdup ("Conv: bad group")) == NULL;
  const int64_t *v;
  int k;
  for (int i = 0; i < n; i++)
    {
      c->in[i] = xd[2 + i];
      c->kernel[i] = wd[2 + i];
      c->out[i] = od[2 + i];
      c->strides[i] = c->dilations[i] = 1;
      c->pads[i] = c->pads[n + i] = 0;
    }
  if (pl_node_attr_ints (conv, "strides", &v, &k) && k == n)
    memcpy (c->strides, v, sizeof (int64_t) * n);
  if (pl_node_attr_ints (conv, "dilations", &v, &k) && k == n)
    memcpy (c->dilations, v, sizeof (int64_t) * n);
  const char *auto_pad = pl_node_attr_string (conv, "auto_pad", "NOTSET");
  if (strcmp (auto_pad, "NOTSET") == 0)
    {
      if (pl_node_attr_ints (conv, "pads", &v, &k) && k == 2 * n)
        memcpy (c->pads, v, sizeof (int64_t) * 2 * n);
    }
  else if (strcmp (auto_pad, "SAME_UPPER") == 0 || strcmp (auto_pad, "SAME_LOWER") == 0)
    for (int i = 0; i < n; i++)
      {
        int64_t total = MAX (0, (c->out[i] - 1) * c->strides[i] + (c->kernel[i] - 1) * c->dilations[i] + 1 - c->in[i]);
        int64_t small = total / 2;
        c->pads[i] = auto_pad[5] == 'U' ? small : total - small;
        c->pads[n + i] = total - c->pads[i];
      }
  c->col_rows = c->c_in / c->group;
  c->col_cols = 1;
  for (int i = 0; i < n; i++)
    {
      c->col_rows *= c->kernel[i];
      c->col_cols *= c->out[i];
    }
  c->x_layout = x->layout;
  c->y_layout = conv->outputs[0]->layout;
  const char *impl = pl_node_attr_string (conv, "impl", "gemm");
  if (strcmp (impl, "gemm") == 0)
    c->impl = PL_CONV_IMPL_GEMM;
  else if (strcmp (impl, "direct") == 0)
    c->impl = PL_CONV_IMPL_DIRECT;
  else
    return (*why = g_strdup_printf ("Conv: unknown impl '%s' (gemm or direct)", impl)) == NULL;
  if (pl_node_attr_ints (conv, "tile", &v, &k) && k == 3)
    memcpy (c->tile, v, sizeof c->tile);
  return true;
}

static bool
conv_desc (PlKernelPlan *p, PlLower *L, const PlNode *conv, char **why)
{
  PlConvDesc *c = &p->conv;
  if (!pl_conv_desc_from_node (conv, c, why))
    return false;
  c->x_slot = pl_lower_slot (L, conv->inputs[0]);
  c->w_slot = pl_lower_slot (L, conv->inputs[1]);
  p->flops = 2 * c->batch * c->c_out * c->col_cols * c->col_rows;
  g_autofree char *direct_why = NULL;
  if (c->impl == PL_CONV_IMPL_DIRECT && !pl_conv_direct_supported (c, &direct_why))
    c->impl = PL_CONV_IMPL_GEMM;   /* the note says why */
  GString *note = g_string_new (NULL);
  g_string_append_printf (note, "conv %s %s", c->impl == PL_CONV_IMPL_DIRECT ? "direct" : "im2col+gemm",
                          pl_layout_name (c->y_layout));
  if (c->x_layout != c->y_layout)
    g_string_append_printf (note, " (X %s)", pl_layout_name (c->x_layout));
  if (c->n != 2)
    g_string_append_printf (note, ", %dd", c->n);
  if (c->group > 1)
    g_string_append_printf (note, ", group %" G_GINT64_FORMAT, c->group);
  if (direct_why)
    g_string_append_printf (note, " (direct: %s)", direct_why);
  p->note = g_string_free (note, FALSE);
  return true;
}

/* Marks the members downstream of lib (its epilogue); false if some member
 * is neither absorbed nor downstream. */
static bool
epilogue_members (GHashTable *members, const PlNode *lib, GHashTable *absorbed, PlNode *const *nodes, int n,
                  GHashTable *epi)
{
  g_hash_table_add (epi, (gpointer) lib);
  for (int i = 0; i < n; i++)
    {
      PlNode *x = nodes[i];
      if (x == lib || g_hash_table_contains (absorbed, x))
        continue;
      bool down = false;
      for (int k = 0; k < x->n_inputs && !down; k++)
        down = x->inputs[k] && x->inputs[k]->producer && g_hash_table_contains (epi, x->inputs[k]->producer);
      if (!down)
        return false;
      g_hash_table_add (epi, x);
    }
  return true;
}

static PlKernelPlan *
plan_library (const char *name, PlNode *lib, PlNode *const *nodes, int n, PlValue *const *outputs, int n_out,
              GError **error)
{
  PlKernelPlan *p = plan_new (lib->op == PL_OP_Conv ? PL_PLAN_CONV : PL_PLAN_GEMM, name, nodes, n);
  PlLower L;
  lower_init (&L, p, nodes, n);
  L.lib_node = lib;
  L.lib_value = lib->outputs[0];
  g_autoptr (GHashTable) absorbed = g_hash_table_new (NULL, NULL);
  g_autoptr (GHashTable) epi = g_hash_table_new (NULL, NULL);
  g_autofree char *why = NULL;
  int64_t d[PL_MAX_RANK];
  value_dims (lib->outputs[0], d);
  set_domain (&L, lib->outputs[0]->shape.rank, d);

  bool ok = lib->op == PL_OP_Conv ? conv_desc (p, &L, lib, &why) : gemm_desc (p, &L, lib, absorbed, &why);
  if (ok && !epilogue_members (L.members, lib, absorbed, nodes, n, epi))
    ok = (why = g_strdup ("nodes besides the library call and its epilogue")) == NULL;
  bool extra = lib->n_inputs > 2 && lib->inputs[2];   /* Gemm's C, Conv's bias */
  /* a GEMM writes row-major: a result stored in another layout goes
   * through an epilogue that reorders it */
  bool raw_layout = lib->op == PL_OP_Conv || L.lib_value->layout == PL_LAYOUT_NCHW;
  bool plain = ok && !extra && n_out == 1 && outputs[0] == L.lib_value && raw_layout;
  if (ok && !plain)
    {
      /* the epilogue: a pointwise loop over the outputs reading the raw result */
      int64_t od[PL_MAX_RANK];
      if (!value_dims (outputs[0], od) || !dims_equal (outputs[0]->shape.rank, od, L.rank, L.dims))
        ok = (why = g_strdup ("epilogue of another shape than the library result")) == NULL;
      else
        {
          g_ptr_array_add (p->inputs, L.lib_value);
          p->lib_slot = (int) p->inputs->len - 1;
          g_hash_table_insert (L.slots, L.lib_value, GINT_TO_POINTER (p->lib_slot + 1));
          ok = lower_outputs (&L, outputs, n_out);
          if (!ok)
            why = g_strdup (L.why);
        }
      if (ok)
        {
          /* in place when the result is read only where output 0 is written
           * (which also says the raw result and output 0 share a layout) */
          const PlIdx *self = g_array_index (p->loop->stores, PlStore, 0).index;
          p->in_place = !pl_value_is_output (L.lib_value) && outputs[0]->dtype == L.lib_value->dtype;
          for (int o = 0; o < n_out; o++)
            p->in_place &= outputs[o] != L.lib_value;
          for (guint i = 0; i < p->loop->instrs->len; i++)
            {
              PlInstr *x = &g_array_index (p->loop->instrs, PlInstr, i);
              if (x->op == PL_SOP_LOAD && x->slot == p->lib_slot && x->index != self)
                p->in_place = false;
            }
          p->flops += loop_flops (p->loop);
        }
    }
  else if (ok)
    {
      g_ptr_array_add (p->outputs, outputs[0]);
      loop_plan_free (p->loop);
      p->loop = NULL;
    }
  if (!ok)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s", why ? why : "cannot generate");
      lower_clear (&L);
      pl_kernel_plan_free (p);
      return NULL;
    }
  lower_clear (&L);
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
    return plan_library (name, lib, nodes, n, outputs, n_outputs, error);
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
  PlKernelPlan *p = plan_new (kind, name, &node, 1);
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

/* A pooling op: its generated kernel (pool.c), else a fallback saying why. */
static PlKernelPlan *
plan_pool (const char *name, PlNode *node)
{
  PlPoolDesc d;
  g_autofree char *why = NULL;
  if (!pl_pool_desc_from_node (node, &d, &why))
    return plan_single (name, node, PL_PLAN_FALLBACK, why);
  g_autofree char *note = pl_pool_describe (&d);
  PlKernelPlan *p = plan_single (name, node, PL_PLAN_POOL, note);
  g_ptr_array_set_size (p->outputs, 1);   /* MaxPool's Indices, unused: no slot */
  p->pool = d;
  p->flops = pl_pool_flops (&d);
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
  if (pl_pool_is_op (node->op))
    return plan_pool (name, node);
  g_autoptr (GPtrArray) outs = g_ptr_array_new ();
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i])
      g_ptr_array_add (outs, node->outputs[i]);
  g_autoptr (GError) local = NULL;
  PlKernelPlan *p = NULL;
  if (pl_op_info (node->op)->category != PL_CAT_SHAPE || node->op == PL_OP_Transpose || node->op == PL_OP_Expand ||
      is_view_op (node))
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
  if (ld->op != PL_SOP_LOAD || st->level != PL_LEVEL_ELEM || pl_idx_coord_coef (st->index, inner, &nested) != 1 ||
      nested || pl_idx_coord_coef (ld->index, inner, &nested) == 1)
    return -1;
  for (int j = 0; j < inner; j++)
    if (pl_idx_coord_coef (ld->index, j, &nested) == 1 && !nested && lp->dims[j] >= 8 && lp->dims[inner] >= 8)
      return j;
  return -1;
}

/* --- dump -------------------------------------------------------------------------- */

static const char *const sop_names[PL_SOP_COUNT] = {
  "load", "const", "reduced", "rindex", "neg", "abs", "exp", "expm1", "log", "log1p", "sqrt", "recip", "tanh",
  "erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "floor", "ceil",
  "round", "sigmoid", "sign", "not", "isnan", "isinf", "cast", "add", "sub", "mul", "div", "pow", "max", "min",
  "eq", "lt", "le", "gt", "ge", "and", "or", "xor", "select",
};
G_STATIC_ASSERT (G_N_ELEMENTS (sop_names) == PL_SOP_COUNT);

static const char *const red_names[] = { "sum", "prod", "max", "min", "argmax", "argmin" };

char *
pl_kernel_plan_dump (const PlKernelPlan *p)
{
  static const char *const kinds[] = { "loop", "gemm", "conv", "pool", "alias", "fallback" };
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
