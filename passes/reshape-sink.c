/* reshape-sink.c — reshape and broadcast sinking (seed 000: XLA, Hechtman,
 * "Reshape and broadcast optimization to avoid unnecessary data movement").
 *
 * On hardware with vector memory a Reshape is a copy that realigns vectors,
 * so the pass makes the reshapes of big tensors small or makes them vanish:
 *
 *  A  reduce(reshape(X))  →  reduce(reshape(reduce(X)))
 *     Dimensions of X that end up wholly inside reduced dimensions of the
 *     reshape are reduced first, on X; only the (much smaller) rest is
 *     reshaped and reduced further. Group norm:
 *       ReduceMean(Reshape(image[B,H,W,C] → [B,H,W,C/G,G]), [1,2,3])
 *       → ReduceMean(Reshape(ReduceMean(image, [1,2]) → [B,C/G,G]), [1])
 *  B  reshape(f(reshape(X), broadcast(Y)))  →  f(X, broadcast(reshape(broadcast(Y))))
 *     Elementwise work on a reshaped tensor runs on X itself; each small
 *     broadcast operand Y is instead carried into X's dimension space: first
 *     broadcast inside the dims the reshape mixes (Expand), then reshaped.
 *
 * Both are one rewrite here. From a Reshape R (X of shape P → shape S) the
 * pass collects the *region*: the elementwise ops that read R's output or
 * each other, with output shape S, whose other operands are small broadcasts.
 * Every use leaving the region is an *exit*: a reshape back to P (removed), a
 * reduction (pattern A), another reshape (retargeted) or anything else (a
 * reshape to S is kept or added). The region runs on X instead when that
 * lowers the bytes all reshapes move; that test also makes the fixed point
 * terminate, as every rewrite strictly lowers them.
 *
 * The dim mapping (reshape-map.c): P and S are split into *units*, the
 * common refinement of both (cut wherever the running product of either
 * shape changes; a stretch whose cuts do not divide each other, like
 * [6,4] ↔ [4,6], stays one unit).
 * A unit inside one dim of P and one of S is simple. Pattern A reduces a dim
 * of X first when all its units lie in reduced dims of S (so NCHW group norm,
 * [N,C,H,W] → [N,G,C/G·H·W], reduces H and W first although no dim of the
 * reshape is untouched). A broadcast operand is widened over whole dims of X
 * (at S's level when that suffices, else in unit space) before it is
 * reshaped, which keeps the rewrite exact.
 *
 * Search: nodes in topological order (producers first), rewriting in place
 * (rewritten nodes keep their ids), repeated until nothing changes; then
 * dead-code elimination. Each round visits a node in at most one region, so
 * a round is linear in the graph.
 */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"
#include "cost.h"
#include "reshape-map.h"
#include "rewrite.h"

#include <string.h>

#define MAX_ROUNDS 32

/* --- shapes of values ------------------------------------------------------- */

static bool
value_has_shape (const PlValue *v, int rank, const int64_t *dims)
{
  int64_t d[PL_MAX_RANK];
  return v && pl_shape_get_dims (&v->shape, d) && dims_equal (v->shape.rank, d, rank, dims);
}

static int64_t
value_bytes (const PlValue *v)
{
  int64_t n = pl_shape_numel (&v->shape);
  return n > 0 ? n * (int64_t) pl_dtype_size (v->dtype) : 0;
}

/* --- pattern A: splitting a reduction around the reshape ---------------------- */

typedef struct {
  PlOp    inner_op, outer_op;
  bool    keepdims;
  int     n_early;
  int64_t early[PL_MAX_RANK];  /* axes of X reduced before the reshape */
  int     s2_rank;
  int64_t s2[PL_MAX_RANK];     /* shape the early result is reshaped to */
  int     n_outer;
  int64_t outer[PL_MAX_RANK];  /* axes of s2 reduced after it */
  bool    inner_keepdims;      /* the early reduction keeps its dims (then it has shape s2) */
  bool    need_reshape;        /* false when the early result already has shape s2 */
  int64_t bytes;               /* bytes the new reshape moves */
} ReducePlan;

/* How a reduction splits into an inner one (on X) and an outer one (after
 * the reshape): only pairs that compose exactly. Mean of means is exact as
 * each inner mean covers the same count; integer means truncate, so not those. */
static bool
reduce_pair (PlOp op, PlDType dtype, PlOp *inner, PlOp *outer)
{
  bool is_float = pl_dtype_is_float (dtype);
  *inner = op;
  *outer = op;
  switch (op)
    {
    case PL_OP_ReduceSum:
    case PL_OP_ReduceMax:
    case PL_OP_ReduceMin:
    case PL_OP_ReduceProd:
      return true;
    case PL_OP_ReduceSumSquare: /* square, sum; then sum */
    case PL_OP_ReduceL1:        /* |x| summed is nonnegative; then sum */
      *outer = PL_OP_ReduceSum;
      return true;
    case PL_OP_ReduceMean:
    case PL_OP_ReduceL2:        /* sqrt(sum(sqrt(s_i)^2)) = sqrt(sum s_i) */
    case PL_OP_ReduceLogSumExp: /* log(sum(exp(log(s_i)))) = log(sum s_i) */
      return is_float;
    case PL_OP_ReduceLogSum:    /* log(sum(exp(log(s_i)))) */
      *outer = PL_OP_ReduceLogSumExp;
      return is_float;
    default:
      return false;
    }
}

/* Plans pattern A for reduction node, which reads a tensor of shape S that
 * the reshape described by m made from X. False when no dim of X can be
 * reduced before the reshape. */
static bool
reduce_plan (const DimMap *m, const PlNode *node, ReducePlan *plan)
{
  memset (plan, 0, sizeof *plan);
  const PlValue *in = node->inputs[0];
  if (node->n_outputs != 1 || !reduce_pair (node->op, in->dtype, &plan->inner_op, &plan->outer_op))
    return false;
  guint32 axes;
  if (in->shape.rank != m->rs || !pl_rw_reduction_axes (node, &axes))
    return false;
  bool mask[PL_MAX_RANK];
  for (int d = 0; d < m->rs; d++)
    mask[d] = (axes >> d) & 1;
  plan->keepdims = pl_node_attr_int (node, "keepdims", 1) != 0;

  /* A unit is reduced when all the dims of S it overlaps are; a dim of X
   * goes first when all its units are. rest: what is left of each dim of S. */
  bool unit_reduced[MAX_UNITS], early[PL_MAX_RANK];
  for (int k = 0; k < m->n_units; k++)
    {
      unit_reduced[k] = true;
      for (int j = m->units[k].s_lo; j < m->units[k].s_hi; j++)
        unit_reduced[k] &= mask[j];
    }
  for (int i = 0; i < m->rp; i++)
    {
      early[i] = m->p[i] > 1;
      for (int k = 0; k < m->n_units; k++)
        if (m->units[k].p_lo <= i && i < m->units[k].p_hi)
          early[i] &= unit_reduced[k];
      if (early[i])
        plan->early[plan->n_early++] = i;
    }
  int64_t rest[PL_MAX_RANK];
  memcpy (rest, m->s, sizeof rest);
  for (int k = 0; k < m->n_units; k++)
    {
      const Unit *u = &m->units[k];
      if (!early[u->p_lo])
        continue;
      if (unit_is_simple (u))
        rest[u->s_lo] /= u->size;
      else  /* a mixed stretch covers whole dims of S */
        for (int j = u->s_lo; j < u->s_hi; j++)
          rest[j] = 1;
    }
  if (plan->n_early == 0)
    return false;

  for (int j = 0; j < m->rs; j++)
    if (!mask[j])
      plan->s2[plan->s2_rank++] = m->s[j];
    else if (rest[j] > 1)
      {
        plan->outer[plan->n_outer++] = plan->s2_rank;
        plan->s2[plan->s2_rank++] = rest[j];
      }
    else if (plan->keepdims)
      plan->s2[plan->s2_rank++] = 1;

  /* The early result, without its reduced dims or keeping them as 1s: when
   * either is already s2 no reshape is needed. */
  int64_t w[PL_MAX_RANK], w1[PL_MAX_RANK];
  int wr = 0;
  for (int i = 0, e = 0; i < m->rp; i++)
    if (e < plan->n_early && plan->early[e] == i)
      {
        w1[i] = 1;
        e++;
      }
    else
      w[wr++] = w1[i] = m->p[i];
  plan->inner_keepdims = !dims_equal (wr, w, plan->s2_rank, plan->s2)
                         && dims_equal (m->rp, w1, plan->s2_rank, plan->s2);
  plan->need_reshape = !plan->inner_keepdims && !dims_equal (wr, w, plan->s2_rank, plan->s2);
  plan->bytes = plan->need_reshape ? pl_dims_product (plan->s2_rank, plan->s2) * (int64_t) pl_dtype_size (in->dtype) : 0;
  return true;
}

/* --- building nodes ------------------------------------------------------------ */

/* Whether a new reduction of op takes its axes as an input (ONNX: ReduceSum
 * from opset 13, every Reduce* from 18) or as an attribute. */
static bool
axes_as_input (const PlGraph *g, PlOp op)
{
  int opset = g->opset ? g->opset : 17;
  return opset >= 18 || (op == PL_OP_ReduceSum && opset >= 13);
}

static void
set_axes (PlNode *node, bool as_input, const int64_t *axes, int n)
{
  if (as_input)
    {
      g_autofree char *base = g_strconcat (node->name, "_axes", NULL);
      pl_node_set_input (node, 1, pl_rw_const_ints (node->graph, base, axes, n));
    }
  else
    pl_node_set_attr_ints (node, "axes", axes, n);
}

static PlNode *
add_reduce (PlGraph *g, PlOp op, bool as_input, const char *base, PlValue *x, const int64_t *axes, int n_axes,
            bool keepdims, GError **error)
{
  g_autofree char *name = pl_graph_unique_name (g, base);
  PlNode *node = pl_graph_add_node (g, pl_op_name (op), NULL, name, 1, &x, 1, (const char *const[]) { name }, error);
  if (!node)
    return NULL;
  set_axes (node, as_input, axes, n_axes);
  pl_node_set_attr_int (node, "keepdims", keepdims);
  return pl_node_infer (node, error) ? node : NULL;
}

static PlValue *
add_shaped (PlGraph *g, const char *op, const char *base, PlValue *x, const int64_t *dims, int rank, GError **error)
{
  g_autofree char *shape_base = g_strconcat (base, "_shape", NULL);
  PlValue *shape = pl_rw_const_ints (g, shape_base, dims, rank);
  PlNode *node = pl_rw_add_op (g, op, base, 2, (PlValue *[]) { x, shape }, error);
  return node ? node->outputs[0] : NULL;
}

/* Every use of old reads new_value. A graph output keeps its name (new_value
 * takes it) unless new_value is a graph input or constant, whose names stay. */
static void
replace_value (PlValue *old, PlValue *new_value)
{
  if (pl_value_is_output (old) && new_value->producer)
    {
      g_autofree char *name = g_strdup (old->name);
      g_autofree char *base = g_strconcat (name, "_replaced", NULL);
      g_autofree char *tmp = pl_graph_unique_name (old->graph, base);
      pl_value_rename (old, tmp, NULL);
      pl_value_rename (new_value, name, NULL);
    }
  pl_value_replace_uses (old, new_value);
}

/* Rewrites reduction node, reading x (shape P of m), as plan says. */
static bool
apply_reduce_plan (PlNode *node, PlValue *x, const ReducePlan *plan, GError **error)
{
  PlGraph *g = node->graph;
  bool own_style = node->n_inputs > 1 && node->inputs[1];  /* the node's own axes form */
  g_autofree char *inner_base = g_strconcat (node->name, "_early", NULL);
  PlNode *inner = add_reduce (g, plan->inner_op,
                              plan->inner_op == node->op ? own_style : axes_as_input (g, plan->inner_op),
                              inner_base, x, plan->early, plan->n_early, plan->inner_keepdims, error);
  if (!inner)
    return false;
  PlValue *w = inner->outputs[0];
  if (plan->need_reshape)
    {
      g_autofree char *base = g_strconcat (node->name, "_reshape", NULL);
      if (!(w = add_shaped (g, "Reshape", base, w, plan->s2, plan->s2_rank, error)))
        return false;
    }

  if (plan->n_outer == 0)
    replace_value (node->outputs[0], w);
  else if (plan->outer_op == node->op)
    {
      /* in place: the reduction keeps its id */
      pl_node_set_input (node, 0, w);
      set_axes (node, own_style, plan->outer, plan->n_outer);
      return pl_node_infer (node, error);
    }
  else
    {
      g_autofree char *base = g_strconcat (node->name, "_rest", NULL);
      PlNode *outer = add_reduce (g, plan->outer_op, axes_as_input (g, plan->outer_op), base, w, plan->outer,
                                  plan->n_outer, plan->keepdims, error);
      if (!outer)
        return false;
      replace_value (node->outputs[0], outer->outputs[0]);
    }
  return true;
}

/* --- pattern B: the region of elementwise ops on the reshaped tensor ------------ */

/* Ops whose every output element depends only on the inputs' elements at
 * the same (broadcast) position, so they run the same in any layout. */
static bool
is_pointwise (PlOp op)
{
  switch (op)
    {
    case PL_OP_Abs: case PL_OP_Neg: case PL_OP_Exp: case PL_OP_Log: case PL_OP_Sqrt:
    case PL_OP_Reciprocal: case PL_OP_Sigmoid: case PL_OP_Tanh: case PL_OP_Relu:
    case PL_OP_LeakyRelu: case PL_OP_Elu: case PL_OP_Selu: case PL_OP_Celu: case PL_OP_Gelu:
    case PL_OP_Erf: case PL_OP_Sin: case PL_OP_Cos: case PL_OP_Tan: case PL_OP_Asin:
    case PL_OP_Acos: case PL_OP_Atan: case PL_OP_Sinh: case PL_OP_Cosh: case PL_OP_Asinh:
    case PL_OP_Acosh: case PL_OP_Atanh: case PL_OP_Floor: case PL_OP_Ceil: case PL_OP_Round:
    case PL_OP_Sign: case PL_OP_Softplus: case PL_OP_Softsign: case PL_OP_HardSigmoid:
    case PL_OP_HardSwish: case PL_OP_ThresholdedRelu: case PL_OP_Shrink: case PL_OP_Mish:
    case PL_OP_Not: case PL_OP_IsNaN: case PL_OP_IsInf: case PL_OP_Clip: case PL_OP_Cast:
    case PL_OP_Identity:
    case PL_OP_Add: case PL_OP_Sub: case PL_OP_Mul: case PL_OP_Div: case PL_OP_Pow:
    case PL_OP_Mod: case PL_OP_BitShift: case PL_OP_Max: case PL_OP_Min: case PL_OP_Sum:
    case PL_OP_Mean: case PL_OP_Equal: case PL_OP_Less: case PL_OP_LessOrEqual:
    case PL_OP_Greater: case PL_OP_GreaterOrEqual: case PL_OP_And: case PL_OP_Or:
    case PL_OP_Xor: case PL_OP_Where: case PL_OP_PRelu:
      return true;
    default:
      return false;
    }
}

/* An operand of a region op that is not itself in the region, and how it
 * is carried into X's space: widened where S mixes units (Expand at S's
 * level), put in unit space and widened to whole dims of X (Reshape,
 * Expand), then reshaped to X's rank. Each step only when needed. */
typedef struct {
  PlValue *value;     /* the operand as the op reads it */
  PlValue *source;    /* what is carried: value, or what an Expand broadcasts */
  PlNode  *reshape;   /* value is a reshape of a P-shaped tensor (then source is that tensor) */
  bool     direct;    /* source broadcasts against X as it is */
  bool     s_expand;  /* Expand to t_s (rank of S) first */
  int64_t  t_s[PL_MAX_RANK];
  bool     u_reshape; /* Reshape to l (unit space, units that stay 1 left out) */
  bool     u_expand;  /* Expand to t_u */
  int      u_rank;
  int64_t  l[PL_MAX_RANK], t_u[PL_MAX_RANK];
  int      q_rank;
  int64_t  q[PL_MAX_RANK];  /* the final reshape's target in X's space (leading 1s dropped) */
  int64_t  bytes;     /* bytes its new reshapes move */
  PlValue *mapped;    /* the operand in X's space, once built */
} Operand;

/* The operand's shape in unit space (l: live units full) and widened to
 * whole dims of X (t_u: full units), leaving out units that stay 1 in both
 * and merging neighbours of the same kind, so the rank stays small. */
static bool
unit_shapes (const DimMap *m, const bool *u_live, const bool *u_full, Operand *op)
{
  int n = 0;
  bool prev_live = false;
  for (int k = 0; k < m->n_units; k++)
    {
      if (!u_full[k])
        continue;
      int64_t size = m->units[k].size;
      if (n > 0 && u_live[k] == prev_live)
        {
          op->t_u[n - 1] *= size;
          op->l[n - 1] *= u_live[k] ? size : 1;
          continue;
        }
      if (n == PL_MAX_RANK)
        return false;
      op->t_u[n] = size;
      op->l[n] = u_live[k] ? size : 1;
      prev_live = u_live[k];
      n++;
    }
  op->u_rank = n;
  op->u_expand = !dims_equal (n, op->l, n, op->t_u);
  return true;
}

typedef enum {
  EXIT_RESTORE,   /* a reshape back to P: removed, its users read the region op directly */
  EXIT_RETARGET,  /* another reshape: now reshapes from X's space */
  EXIT_REDUCE,    /* a reduction: pattern A */
  EXIT_KEEP,      /* anything else: reads a reshape to S */
} ExitKind;

typedef struct {
  ExitKind   kind;
  PlNode    *node;
  int        index;
  PlValue   *value;  /* the region value it reads */
  ReducePlan plan;
} Exit;

typedef struct {
  PlGraph    *g;
  PlNode     *reshape;  /* R */
  PlValue    *x;        /* R's input (shape P) */
  PlValue    *y;        /* R's output (shape S) */
  DimMap      map;
  GPtrArray  *nodes;    /* region ops, in topological order */
  GHashTable *values;   /* the region's values in S space: y and the ops' outputs */
  GHashTable *operands; /* PlValue* -> Operand* */
  GPtrArray  *operand_list;
  GArray     *exits;    /* Exit */
  int64_t     saved;    /* reshape bytes the rewrite saves (negative: costs) */
  int         n_reduce, n_restore;
} Region;

static void
region_clear (Region *r)
{
  g_clear_pointer (&r->nodes, g_ptr_array_unref);
  g_clear_pointer (&r->values, g_hash_table_unref);
  g_clear_pointer (&r->operands, g_hash_table_unref);
  g_clear_pointer (&r->operand_list, g_ptr_array_unref);
  g_clear_pointer (&r->exits, g_array_unref);
}

/* How an operand (padded to S's rank) widens: the dims of X it varies
 * along (p_full) are carried whole, so it broadcasts over whole units.
 * Fills t_s, or the unit-space shapes when a dim of S holds units of both
 * kinds. False when the unit space needs too high a rank. */
static bool
plan_widening (const DimMap *m, const int64_t *padded, Operand *op, bool *p_full)
{
  bool s_live[PL_MAX_RANK], s_full[PL_MAX_RANK] = { false }, u_live[MAX_UNITS], u_full[MAX_UNITS];
  for (int j = 0; j < m->rs; j++)
    s_live[j] = padded[j] != 1;
  pl_dim_map_spread (m, s_live);
  memset (p_full, 0, sizeof (bool) * PL_MAX_RANK);
  for (int k = 0; k < m->n_units; k++)
    {
      const Unit *u = &m->units[k];
      u_live[k] = s_live[u->s_lo];
      for (int i = u->p_lo; i < u->p_hi; i++)
        p_full[i] |= u_live[k];
    }
  bool mixed = false;
  for (int k = 0; k < m->n_units; k++)
    {
      const Unit *u = &m->units[k];
      u_full[k] = p_full[u->p_lo];
      for (int j = u->s_lo; j < u->s_hi; j++)
        s_full[j] |= u_full[k];
    }
  for (int k = 0; k < m->n_units; k++)
    mixed |= u_full[k] != s_full[m->units[k].s_lo];

  /* Without mixed dims, whole dims of S widen: one Expand at S's level.
   * Otherwise S's level widens only where units span dims of S, and the
   * rest happens in unit space. */
  for (int j = 0; j < m->rs; j++)
    {
      op->t_s[j] = (mixed ? s_live[j] : s_full[j]) ? m->s[j] : 1;
      op->s_expand |= op->t_s[j] != padded[j];
    }
  return !mixed || unit_shapes (m, u_live, u_full, op);
}

/* Classifies operand v of a region op. False when carrying it into X's
 * space would not be cheaper than reshaping it like the region (a full-size
 * operand, or a shape that does not broadcast). */
static bool
classify_operand (const Region *r, PlValue *v, Operand *op)
{
  const DimMap *m = &r->map;
  memset (op, 0, sizeof *op);
  op->value = op->source = v;
  PlNode *p = v->producer;
  if (p && value_has_shape (v, m->rs, m->s))
    {
      /* The same reshape applied to another P-shaped tensor: use that tensor. */
      if ((p->op == PL_OP_Reshape || p->op == PL_OP_Flatten) && value_has_shape (p->inputs[0], m->rp, m->p))
        {
          op->reshape = p;
          op->source = p->inputs[0];
          op->direct = true;
          return true;
        }
      /* An explicit broadcast: carry what it broadcasts. */
      if (p->op == PL_OP_Expand && p->inputs[0])
        op->source = p->inputs[0];
    }

  int64_t o[PL_MAX_RANK], padded[PL_MAX_RANK];
  const PlShape *os = &op->source->shape;
  if (!pl_shape_get_dims (os, o) || os->rank > m->rs)
    return false;
  /* right-aligned against S, padded with 1s */
  int lead = m->rs - os->rank;
  for (int j = 0; j < m->rs; j++)
    {
      padded[j] = j < lead ? 1 : o[j - lead];
      if (padded[j] != 1 && padded[j] != m->s[j])
        return false;
    }
  bool p_full[PL_MAX_RANK];
  if (!plan_widening (m, padded, op, p_full))
    return false;

  int64_t q[PL_MAX_RANK], a[PL_MAX_RANK], ts[PL_MAX_RANK], l[PL_MAX_RANK];
  for (int i = 0; i < m->rp; i++)
    q[i] = p_full[i] ? m->p[i] : 1;
  op->q_rank = strip_leading_ones (m->rp, q, op->q);
  if (op->q_rank == 0)
    {
      op->q_rank = m->rp;
      memcpy (op->q, q, sizeof q);
    }
  int ar = strip_leading_ones (os->rank, o, a);
  op->direct = !op->s_expand && !op->u_expand && os->rank <= m->rp && dims_equal (ar, a, op->q_rank, op->q);
  if (op->direct)
    return true;
  /* Expand broadcasts right-aligned: the unit-space reshape is needed only
   * when the S-level shape does not already line up with l */
  int tr = strip_leading_ones (m->rs, op->t_s, ts), lr = strip_leading_ones (op->u_rank, op->l, l);
  op->u_reshape = op->u_expand && !dims_equal (tr, ts, lr, l);
  int64_t n = pl_dims_product (op->q_rank, op->q), size = (int64_t) pl_dtype_size (v->dtype);
  op->bytes = (n + (op->u_reshape ? pl_dims_product (op->u_rank, op->l) : 0)) * size;
  return n < pl_dims_product (m->rs, m->s);
}

/* Whether none of node's outputs is read or is a graph output: a node a
 * rewrite earlier in this round left behind for dead-code elimination. */
static bool
node_is_unused (const PlNode *node)
{
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i] && (node->outputs[i]->n_uses > 0 || pl_value_is_output (node->outputs[i])))
      return false;
  return true;
}

static int
compare_topo (gconstpointer a, gconstpointer b, gpointer index)
{
  int ia = GPOINTER_TO_INT (g_hash_table_lookup (index, *(PlNode *const *) a));
  int ib = GPOINTER_TO_INT (g_hash_table_lookup (index, *(PlNode *const *) b));
  return (ia > ib) - (ia < ib);
}

/* Collects the ops reachable from y through pointwise ops of output shape S
 * that no other region took this round, then admits them in topological
 * order while all their operands are region values or cheap to carry. */
static void
region_grow (Region *r, GHashTable *topo_index, GHashTable *visited)
{
  g_autoptr (GPtrArray) candidates = g_ptr_array_new ();
  g_autoptr (GPtrArray) queue = g_ptr_array_new ();
  g_ptr_array_add (queue, r->y);
  for (guint q = 0; q < queue->len; q++)
    {
      PlValue *v = queue->pdata[q];
      for (int u = 0; u < v->n_uses; u++)
        {
          PlNode *n = v->uses[u].node;
          if (!is_pointwise (n->op) || n->n_outputs != 1 || !n->outputs[0] || n->body
              || g_hash_table_contains (visited, n) || !g_hash_table_contains (topo_index, n)
              || !value_has_shape (n->outputs[0], r->map.rs, r->map.s))
            continue;
          g_hash_table_add (visited, n);
          g_ptr_array_add (candidates, n);
          g_ptr_array_add (queue, n->outputs[0]);
        }
    }
  g_ptr_array_sort_with_data (candidates, compare_topo, topo_index);

  g_autoptr (GPtrArray) pending = g_ptr_array_new_with_free_func (g_free);
  for (guint k = 0; k < candidates->len; k++)
    {
      PlNode *n = candidates->pdata[k];
      bool ok = true;
      g_ptr_array_set_size (pending, 0);
      for (int i = 0; ok && i < n->n_inputs; i++)
        {
          PlValue *v = n->inputs[i];
          if (!v || g_hash_table_contains (r->values, v) || g_hash_table_contains (r->operands, v))
            continue;
          Operand *op = g_new (Operand, 1);
          g_ptr_array_add (pending, op);
          ok = classify_operand (r, v, op);
        }
      if (!ok)
        continue;
      for (guint i = 0; i < pending->len; i++)
        {
          Operand *op = pending->pdata[i];
          if (g_hash_table_contains (r->operands, op->value))
            continue;  /* the op reads it twice */
          pending->pdata[i] = NULL;
          g_hash_table_insert (r->operands, op->value, op);
          g_ptr_array_add (r->operand_list, op);
        }
      g_ptr_array_add (r->nodes, n);
      g_hash_table_add (r->values, n->outputs[0]);
    }
}

/* Classifies one use of region value v by a node outside the region. */
static void
classify_exit (Region *r, PlValue *v, PlNode *node, int index, Exit *e)
{
  const DimMap *m = &r->map;
  *e = (Exit) { .kind = EXIT_KEEP, .node = node, .index = index, .value = v };
  if (index != 0 || node->n_outputs != 1 || !node->outputs[0])
    return;
  PlValue *out = node->outputs[0];
  int64_t dims[PL_MAX_RANK];
  if ((node->op == PL_OP_Reshape || node->op == PL_OP_Flatten) && value_has_shape (out, m->rp, m->p))
    e->kind = EXIT_RESTORE;
  else if (node->op == PL_OP_Reshape && pl_shape_get_dims (&out->shape, dims) && pl_shape_numel (&out->shape) > 0)
    e->kind = EXIT_RETARGET;
  else if (reduce_plan (m, node, &e->plan))
    e->kind = EXIT_REDUCE;
}

/* Lists the exits and computes the reshape bytes the rewrite would save. */
static void
region_plan (Region *r)
{
  g_autoptr (GHashTable) inside = g_hash_table_new (NULL, NULL);
  for (guint k = 0; k < r->nodes->len; k++)
    g_hash_table_add (inside, r->nodes->pdata[k]);

  bool keep_y = pl_value_is_output (r->y);
  r->saved = 0;
  for (guint k = 0; k <= r->nodes->len; k++)
    {
      PlValue *v = k == 0 ? r->y : ((PlNode *) r->nodes->pdata[k - 1])->outputs[0];
      bool needs_back = v != r->y && pl_value_is_output (v);  /* a reshape back to S */
      for (int u = 0; u < v->n_uses; u++)
        {
          PlNode *node = v->uses[u].node;
          if (g_hash_table_contains (inside, node) || node_is_unused (node))
            continue;
          Exit e;
          classify_exit (r, v, node, v->uses[u].index, &e);
          if (e.kind == EXIT_RESTORE)
            {
              r->saved += value_bytes (node->outputs[0]);
              r->n_restore++;
            }
          else if (e.kind == EXIT_REDUCE)
            {
              r->saved -= e.plan.bytes;
              r->n_reduce++;
            }
          else if (e.kind == EXIT_KEEP)
            {
              keep_y |= v == r->y;
              needs_back |= v != r->y;
            }
          g_array_append_val (r->exits, e);
        }
      if (needs_back)
        r->saved -= value_bytes (v);
    }
  if (!keep_y)
    r->saved += value_bytes (r->y);

  for (guint k = 0; k < r->operand_list->len; k++)
    {
      Operand *op = r->operand_list->pdata[k];
      r->saved -= op->bytes;
      /* another reshape from P that only region ops read goes away too */
      bool dies = op->reshape && !pl_value_is_output (op->value);
      for (int u = 0; dies && u < op->value->n_uses; u++)
        dies = g_hash_table_contains (inside, op->value->uses[u].node);
      if (dies)
        r->saved += value_bytes (op->value);
    }
}

/* The region value v reshaped back to S, made once. */
static PlValue *
value_back (Region *r, GHashTable *back, PlValue *v, GError **error)
{
  PlValue *b = g_hash_table_lookup (back, v);
  if (!b)
    {
      g_autofree char *base = g_strconcat (v->name, "_reshaped", NULL);
      if (!(b = add_shaped (r->g, "Reshape", base, v, r->map.s, r->map.rs, error)))
        return NULL;
      g_hash_table_insert (back, v, b);
    }
  return b;
}

/* Carries each operand into X's space: widened (Expand) where it must be,
 * through unit space when a dim of S mixes kinds, then reshaped. */
static bool
map_operands (Region *r, GError **error)
{
  for (guint k = 0; k < r->operand_list->len; k++)
    {
      Operand *op = r->operand_list->pdata[k];
      PlValue *v = op->source;
      if (!op->direct)
        {
          g_autofree char *widened = g_strconcat (op->value->name, "_widened", NULL);
          g_autofree char *units = g_strconcat (op->value->name, "_units", NULL);
          g_autofree char *sunk = g_strconcat (op->value->name, "_sunk", NULL);
          if (op->s_expand && !(v = add_shaped (r->g, "Expand", widened, v, op->t_s, r->map.rs, error)))
            return false;
          if (op->u_reshape && !(v = add_shaped (r->g, "Reshape", units, v, op->l, op->u_rank, error)))
            return false;
          if (op->u_expand && !(v = add_shaped (r->g, "Expand", widened, v, op->t_u, op->u_rank, error)))
            return false;
          if (!value_has_shape (v, op->q_rank, op->q)
              && !(v = add_shaped (r->g, "Reshape", sunk, v, op->q, op->q_rank, error)))
            return false;
        }
      op->mapped = v;
    }
  return true;
}

/* Rewrites the region in place: its ops read X and the carried operands,
 * and each exit is rewired. */
static bool
region_apply (Region *r, GError **error)
{
  if (!map_operands (r, error))
    return false;

  for (guint k = 0; k < r->nodes->len; k++)
    {
      PlNode *n = r->nodes->pdata[k];
      for (int i = 0; i < n->n_inputs; i++)
        {
          Operand *op = n->inputs[i] ? g_hash_table_lookup (r->operands, n->inputs[i]) : NULL;
          if (n->inputs[i] == r->y)
            pl_node_set_input (n, i, r->x);
          else if (op)
            pl_node_set_input (n, i, op->mapped);
        }
      if (!pl_node_infer (n, error))
        return false;
      if (!value_has_shape (n->outputs[0], r->map.rp, r->map.p))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_FAILED, "reshape-sink: '%s' did not take the shape of '%s'",
                       n->name, r->x->name);
          return false;
        }
    }

  /* Graph outputs among the region values, noted before exits rewire any. */
  g_autoptr (GArray) out_slots = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr (GPtrArray) out_values = g_ptr_array_new ();
  g_autoptr (GPtrArray) out_names = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < r->g->outputs->len; i++)
    {
      PlValue *v = r->g->outputs->pdata[i];
      if (v == r->y || !g_hash_table_contains (r->values, v))
        continue;
      g_array_append_val (out_slots, i);
      g_ptr_array_add (out_values, v);
      g_ptr_array_add (out_names, g_strdup (v->name));
    }

  g_autoptr (GHashTable) back = g_hash_table_new (NULL, NULL);
  for (guint k = 0; k < r->exits->len; k++)
    {
      Exit *e = &g_array_index (r->exits, Exit, k);
      PlValue *xv = e->value == r->y ? r->x : e->value;
      PlValue *b;
      switch (e->kind)
        {
        case EXIT_RESTORE:
          replace_value (e->node->outputs[0], xv);
          break;
        case EXIT_RETARGET:
          {
            int64_t dims[PL_MAX_RANK];
            PlValue *out = e->node->outputs[0];
            pl_shape_get_dims (&out->shape, dims);
            g_autofree char *base = g_strconcat (e->node->name, "_shape", NULL);
            pl_node_set_input (e->node, 0, xv);
            pl_node_set_input (e->node, 1, pl_rw_const_ints (r->g, base, dims, out->shape.rank));
            if (!pl_node_infer (e->node, error))
              return false;
            break;
          }
        case EXIT_REDUCE:
          if (!apply_reduce_plan (e->node, xv, &e->plan, error))
            return false;
          break;
        case EXIT_KEEP:
          if (e->value == r->y)
            break;
          if (!(b = value_back (r, back, e->value, error)))
            return false;
          pl_node_set_input (e->node, e->index, b);
          break;
        }
    }

  /* Region values that are graph outputs keep their shape (through a
   * reshape back to S) and their name. */
  for (guint k = 0; k < out_slots->len; k++)
    {
      PlValue *v = out_values->pdata[k], *b;
      const char *name = out_names->pdata[k];
      if (!(b = value_back (r, back, v, error)))
        return false;
      pl_graph_set_output (r->g, (int) g_array_index (out_slots, guint, k), b);
      if (strcmp (v->name, name) == 0)
        {
          g_autofree char *base = g_strconcat (name, "_unreshaped", NULL);
          g_autofree char *tmp = pl_graph_unique_name (r->g, base);
          pl_value_rename (v, tmp, NULL);
        }
      pl_value_rename (b, name, NULL);
    }
  return true;
}

static void
append_shape (GString *s, int rank, const int64_t *dims)
{
  g_string_append_c (s, '[');
  for (int i = 0; i < rank; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? ", " : "", dims[i]);
  g_string_append_c (s, ']');
}

static void
region_report (const Region *r, PlPassReport *report)
{
  g_autoptr (GString) s = g_string_new (NULL);
  g_string_append_printf (s, "reshape '%s' ", r->reshape->name);
  append_shape (s, r->map.rp, r->map.p);
  g_string_append (s, " → ");
  append_shape (s, r->map.rs, r->map.s);
  g_string_append (s, ":");
  if (r->nodes->len > 0)
    {
      g_string_append_printf (s, " %u op%s now read '%s' directly (", r->nodes->len, r->nodes->len == 1 ? "" : "s",
                              r->x->name);
      for (guint k = 0; k < r->nodes->len && k < 4; k++)
        g_string_append_printf (s, "%s%s", k ? ", " : "", ((PlNode *) r->nodes->pdata[k])->name);
      g_string_append (s, r->nodes->len > 4 ? ", …);" : ");");
    }
  if (r->operand_list->len > 0)
    g_string_append_printf (s, " %u broadcast operand%s carried over;", r->operand_list->len,
                            r->operand_list->len == 1 ? "" : "s");
  for (guint k = 0; k < r->exits->len; k++)
    {
      const Exit *e = &g_array_index (r->exits, Exit, k);
      if (e->kind == EXIT_REDUCE)
        {
          g_string_append_printf (s, " '%s' reduces axes ", e->node->name);
          append_shape (s, e->plan.n_early, e->plan.early);
          g_string_append (s, " first, reshapes to ");
          append_shape (s, e->plan.s2_rank, e->plan.s2);
          g_string_append (s, ";");
        }
      else if (e->kind == EXIT_RESTORE)
        g_string_append_printf (s, " reshape back '%s' removed;", e->node->name);
    }
  g_string_append_printf (s, " saves %" G_GINT64_FORMAT " reshape bytes", r->saved);
  pl_pass_report_printf (report, "%s", s->str);
}

/* Tries the rewrite rooted at reshape; *changed says whether it did.
 * False only with an error. */
static bool
try_reshape (PlGraph *g, PlNode *reshape, GHashTable *topo_index, GHashTable *visited, PlPassReport *report,
             bool *changed, GError **error)
{
  *changed = false;
  PlValue *x = reshape->inputs[0], *y = reshape->outputs[0];
  if (!x || !y || node_is_unused (reshape))
    return true;
  Region r = {
    .g = g, .reshape = reshape, .x = x, .y = y,
    .nodes = g_ptr_array_new (),
    .values = g_hash_table_new (NULL, NULL),
    .operands = g_hash_table_new_full (NULL, NULL, NULL, g_free),
    .operand_list = g_ptr_array_new (),
    .exits = g_array_new (FALSE, FALSE, sizeof (Exit)),
  };
  bool ok = true;
  /* (a reshape to the same shape moves nothing worth sinking: simplify drops it) */
  if (pl_dim_map_init (&r.map, &x->shape, &y->shape) && !dims_equal (r.map.rp, r.map.p, r.map.rs, r.map.s))
    {
      g_hash_table_add (r.values, y);
      region_grow (&r, topo_index, visited);
      region_plan (&r);
      if (r.saved > 0)
        {
          ok = region_apply (&r, error);
          *changed = ok;
          if (ok)
            {
              region_report (&r, report);
              if (r.n_reduce > 0)
                pl_pass_report_count (report, "pattern A (reduce)", r.n_reduce);
              if (r.nodes->len > 0 || r.n_restore > 0)
                pl_pass_report_count (report, "pattern B (broadcast)", 1);
            }
        }
    }
  region_clear (&r);
  return ok;
}

/* --- the pass ---------------------------------------------------------------------- */

static bool
is_reshape (const PlNode *node)
{
  return node->op == PL_OP_Reshape || node->op == PL_OP_Flatten;
}

/* Aligned vector moves of all reshapes: each output row (minor dim) rounds
 * up to whole vectors of align elements. Unknown dims count as 1. */
static int64_t
vector_moves (const PlGraph *g, int64_t align)
{
  int64_t total = 0;
  for (guint k = 0; k < g->nodes->len; k++)
    {
      const PlNode *node = g->nodes->pdata[k];
      const PlValue *v = node->n_outputs > 0 ? node->outputs[0] : NULL;
      if (!is_reshape (node) || !v || v->shape.rank < 0)
        continue;
      int64_t minor = 1, rows = 1;
      for (int i = 0; i < v->shape.rank; i++)
        {
          int64_t d = MAX (v->shape.dims[i].size, 1);
          if (i == v->shape.rank - 1)
            minor = d;
          else
            rows *= d;
        }
      total += rows * ((minor + align - 1) / align);
    }
  return total;
}

static int64_t
count_reshapes (const PlGraph *g)
{
  int64_t n = 0;
  for (guint k = 0; k < g->nodes->len; k++)
    n += is_reshape (g->nodes->pdata[k]);
  return n;
}

/* One round: every reshape in topological order. */
static bool
run_round (PlGraph *g, PlPassReport *report, bool *changed, GError **error)
{
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, error);
  if (!order)
    return false;
  g_autoptr (GHashTable) topo_index = g_hash_table_new (NULL, NULL);
  g_autoptr (GHashTable) visited = g_hash_table_new (NULL, NULL);
  for (int k = 0; k < n; k++)
    g_hash_table_insert (topo_index, order[k], GINT_TO_POINTER (k + 1));

  *changed = false;
  for (int k = 0; k < n; k++)
    {
      bool did = false;
      if (!is_reshape (order[k]) || g_hash_table_contains (visited, order[k]))
        continue;
      g_hash_table_add (visited, order[k]);
      if (!try_reshape (g, order[k], topo_index, visited, report, &did, error))
        return false;
      *changed |= did;
    }
  return true;
}

static bool
run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data, GError **error)
{
  int64_t align = pl_pass_args_int (args, "align");
  if (align < 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "reshape-sink.align must be >= 0, not %" G_GINT64_FORMAT, align);
      return false;
    }
  PlGraphStats before, after;
  pl_graph_stats (g, 1, &before);
  int64_t reshapes_before = count_reshapes (g);
  int64_t moves_before = align > 0 ? vector_moves (g, align) : 0;

  bool changed = true;
  for (int round = 0; changed && round < MAX_ROUNDS; round++)
    {
      if (!run_round (g, report, &changed, error))
        return false;
      if (changed)
        pl_rw_dce (g);
    }

  pl_graph_stats (g, 1, &after);
  int64_t reshapes_after = count_reshapes (g);
  pl_pass_report_count (report, "pattern A (reduce)", 0);
  pl_pass_report_count (report, "pattern B (broadcast)", 0);
  pl_pass_report_count (report, "reshapes before", reshapes_before);
  pl_pass_report_count (report, "reshapes after", reshapes_after);
  pl_pass_report_count (report, "reshape bytes before", before.reshape_bytes);
  pl_pass_report_count (report, "reshape bytes after", after.reshape_bytes);
  if (after.reshape_bytes > 0)
    pl_pass_report_printf (report, "reshape bytes: %" G_GINT64_FORMAT " → %" G_GINT64_FORMAT " (%.1f× less)",
                           before.reshape_bytes, after.reshape_bytes,
                           (double) before.reshape_bytes / (double) after.reshape_bytes);
  else
    pl_pass_report_printf (report, "reshape bytes: %" G_GINT64_FORMAT " → 0", before.reshape_bytes);
  pl_pass_report_printf (report, "reshapes: %" G_GINT64_FORMAT " → %" G_GINT64_FORMAT, reshapes_before,
                         reshapes_after);
  if (align > 0)
    {
      int64_t moves_after = vector_moves (g, align);
      pl_pass_report_count (report, "vector moves before", moves_before);
      pl_pass_report_count (report, "vector moves after", moves_after);
      pl_pass_report_printf (report, "aligned vector moves (%" G_GINT64_FORMAT " elements each): %" G_GINT64_FORMAT
                             " → %" G_GINT64_FORMAT " (%" G_GINT64_FORMAT " saved)",
                             align, moves_before, moves_after, moves_before - moves_after);
    }
  return true;
}

PlPass *
pl_pass_reshape_sink_new (void)
{
  static const PlPassParam params[] = {
    { .name = "align", .type = PL_PARAM_INT, .default_value = "0",
      .description = "vector width in elements: also report the aligned vector moves reshapes need (0: off)" },
  };
  return pl_pass_new ("reshape-sink",
                      "Sinks reshapes of big tensors below reductions and elementwise ops (seed 000): "
                      "reduce(reshape(X)) → reduce(reshape(reduce(X))), "
                      "reshape(f(reshape(X), broadcast(Y))) → f(X, broadcast(reshape(broadcast(Y))))",
                      params, G_N_ELEMENTS (params), run, NULL, NULL);
}
