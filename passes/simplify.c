/* simplify.c — the "simplify" pass: local rewrites that make a graph smaller
 * without changing what it computes, applied until none applies.
 *
 *  - constant folding: a node whose inputs are all constants runs through its
 *    op's reference implementation and its outputs become constants (up to
 *    fold_limit elements); Shape/Size of a static shape fold too;
 *  - identities and no-ops: Identity, inference Dropout, Cast to the same
 *    dtype, Reshape/Expand/Squeeze/Unsqueeze/Flatten that keep the shape,
 *    Transpose that keeps the order, one-input Concat/Sum/Max/Min/Mean;
 *  - pairs: a view op (Reshape, Flatten, Squeeze, Unsqueeze) of a view op is
 *    one Reshape, or nothing when the shape comes back; Transpose of Transpose
 *    is one Transpose or nothing; Neg(Neg(x)) and Not(Not(x)) are x;
 *  - algebraic identities: x*1, 1*x, x+0, 0+x, x-0, x/1, x**1, only where the
 *    result has x's dtype and shape (broadcasting could otherwise grow it);
 *  - a zero Pad of the spatial dims in front of a Conv (or an AveragePool
 *    that counts padding) becomes the window op's own padding;
 *  - common subexpressions: equal constants, and nodes with the same op,
 *    inputs and attributes, keep the first (hash tables, so linear);
 *  - dead code, removed at the end (pl_rw_dce).
 *
 * One worklist drives every rule: it starts with all nodes in topological
 * order, and a rewrite pushes only the nodes it affects (the readers of a
 * replaced value, a rewired node). A replaced node is detached from its
 * inputs at once and removed with everything else that is dead in one batch
 * at the end, so a run is linear in the graph size. A node whose inputs
 * changed is re-inferred before rules look at it (folding a shape computation
 * makes its readers' shapes known), and its readers follow when its types
 * became more precise.
 *
 * Graph outputs keep their names: a value that replaces an output takes the
 * output's name once the old value is gone. A graph output is never replaced
 * by a graph input or by another output, so the interface stays as it was.
 */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"
#include "ops-util.h"
#include "rewrite.h"

#include <string.h>

typedef struct {
  PlGraph    *g;
  int64_t     fold_limit;
  bool        cse;
  GQueue      queue;
  GHashTable *queued;    /* PlNode* set: waiting in the queue */
  GHashTable *stale;     /* PlNode* set: inputs changed since the node was inferred */
  GHashTable *dead;      /* PlNode* set: replaced and detached, removed at the end */
  GHashTable *pinned;    /* PlNode* set: on a control edge, left alone */
  GHashTable *outputs;   /* PlValue* set: the graph outputs */
  GHashTable *nodes;     /* PlNode* set of canonical nodes, hashed by content (CSE) */
  GHashTable *consts;    /* PlValue* set of canonical constants, hashed by content */
  GHashTable *names;     /* PlValue* -> char*: the name it takes at the end */
  int64_t     n_folded, n_identities, n_cancelled, n_merged, n_algebra, n_cse, n_const_dups, n_pads_folded;
} Simp;

/* --- types and shapes ------------------------------------------------------- */

/* Whether the stored type says at least what the inferred one says (the
 * verifier's rule: stored types may be more specific than inference). */
static bool
type_refines (PlDType sd, const PlShape *s, PlDType id, const PlShape *i)
{
  if (id != PL_DTYPE_UNDEFINED && sd != id)
    return false;
  if (i->rank < 0)
    return true;
  if (s->rank != i->rank)
    return false;
  for (int k = 0; k < i->rank; k++)
    if (!(i->dims[k].size < 0 && i->dims[k].sym == NULL)
        && (s->dims[k].size != i->dims[k].size || s->dims[k].sym != i->dims[k].sym))
      return false;
  return true;
}

/* Re-infers node; returns false (types restored) when inference fails or
 * disagrees with what was stored. *more_precise: some output type gained
 * information. Stored types that say more than inference are kept. */
static bool
reinfer (PlNode *node, bool *more_precise)
{
  int n = node->n_outputs;
  g_autofree PlDType *dt = g_new0 (PlDType, MAX (n, 1));
  g_autofree PlShape *sh = g_new0 (PlShape, MAX (n, 1));
  for (int i = 0; i < n; i++)
    if (node->outputs[i])
      dt[i] = node->outputs[i]->dtype, sh[i] = node->outputs[i]->shape;
  bool ok = pl_node_infer (node, NULL);
  *more_precise = false;
  for (int i = 0; ok && i < n; i++)
    {
      PlValue *v = node->outputs[i];
      if (!v || type_refines (dt[i], &sh[i], v->dtype, &v->shape))
        continue;
      if (type_refines (v->dtype, &v->shape, dt[i], &sh[i]))
        *more_precise = true;
      else
        ok = false;
    }
  for (int i = 0; i < n; i++)
    if (node->outputs[i] && (!ok || type_refines (dt[i], &sh[i], node->outputs[i]->dtype, &node->outputs[i]->shape)))
      node->outputs[i]->dtype = dt[i], node->outputs[i]->shape = sh[i];
  return ok;
}

/* --- content hashing (CSE) ---------------------------------------------------- */

/* FNV-style hashing, eight bytes at a time (constants can be large). */
static guint64
bytes_hash (const void *p, size_t n, guint64 h)
{
  const guint8 *b = p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    {
      guint64 w;
      memcpy (&w, b + i, 8);
      h = (h ^ w) * 0x100000001b3ull;
      h ^= h >> 29;
    }
  for (; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static bool
tensor_equal (const PlTensor *a, const PlTensor *b)
{
  if (a == b)
    return true;
  if (a->dtype != b->dtype || a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return false;
  return memcmp (a->data, b->data, pl_tensor_nbytes (a)) == 0;
}

static guint
const_hash (gconstpointer p)
{
  const PlTensor *t = ((const PlValue *) p)->constant;
  guint64 h = bytes_hash (t->dims, sizeof (int64_t) * t->rank, 0xcbf29ce484222325ull ^ (guint64) t->dtype);
  h = bytes_hash (t->data, pl_tensor_nbytes (t), h);
  return (guint) (h ^ (h >> 32));
}

static gboolean
const_equal (gconstpointer a, gconstpointer b)
{
  return tensor_equal (((const PlValue *) a)->constant, ((const PlValue *) b)->constant);
}

/* Equal for CSE: tensors by content and graphs only when the same graph
 * (pl_attr_equal compares tensor references and graph sizes). */
static bool
attr_equal (const PlAttr *a, const PlAttr *b)
{
  if (a->type != b->type)
    return false;
  if (a->type == PL_ATTR_TENSOR)
    return tensor_equal (a->t, b->t);
  if (a->type == PL_ATTR_GRAPH)
    return a->g == b->g;
  return pl_attr_equal (a, b);
}

static guint
node_hash (gconstpointer p)
{
  const PlNode *n = p;
  guint h = (guint) n->op * 2654435761u ^ (guint) n->n_inputs;
  for (int i = 0; i < n->n_inputs; i++)
    h = h * 31 + (n->inputs[i] ? n->inputs[i]->id + 1 : 0);
  return h * 31 + (guint) n->n_attrs;
}

static gboolean
node_equal (gconstpointer pa, gconstpointer pb)
{
  const PlNode *a = pa, *b = pb;
  if (a->op != b->op || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs
      || a->n_attrs != b->n_attrs || strcmp (a->op_type, b->op_type) != 0 || strcmp (a->domain, b->domain) != 0)
    return false;
  for (int i = 0; i < a->n_inputs; i++)
    if (a->inputs[i] != b->inputs[i])
      return false;
  for (int i = 0; i < a->n_outputs; i++)
    if (!a->outputs[i] != !b->outputs[i])
      return false;
  for (int i = 0; i < a->n_attrs; i++)
    {
      const PlAttr *o = pl_node_attr (b, a->attrs[i].name);
      if (!o || !attr_equal (&a->attrs[i], o))
        return false;
    }
  return true;
}

/* --- worklist and replacement ------------------------------------------------- */

static void
push (Simp *s, PlNode *node)
{
  if (!g_hash_table_contains (s->dead, node) && g_hash_table_add (s->queued, node))
    g_queue_push_tail (&s->queue, node);
}

/* Drops node from the CSE table (before its inputs change or it dies). */
static void
cse_forget (Simp *s, PlNode *node)
{
  gpointer found;
  if (g_hash_table_lookup_extended (s->nodes, node, &found, NULL) && found == node)
    g_hash_table_remove (s->nodes, node);
}

/* The readers of v will see a different input: re-infer and revisit them. */
static void
touch_readers (Simp *s, PlValue *v)
{
  for (int u = 0; u < v->n_uses; u++)
    {
      PlNode *r = v->uses[u].node;
      cse_forget (s, r);
      g_hash_table_add (s->stale, r);
      push (s, r);
    }
}

static bool
is_output (Simp *s, PlValue *v)
{
  return g_hash_table_contains (s->outputs, v);
}

/* Makes every reader of y read x instead. A graph output is replaced only by
 * a value a node computes, or by a constant made for it (fresh), and never by
 * another output; x then takes y's name at the end. */
static bool
replace_value (Simp *s, PlValue *y, PlValue *x, bool fresh)
{
  if (x == y)
    return false;
  bool y_out = is_output (s, y);
  if (y_out && (x->is_input || is_output (s, x) || (x->constant && !fresh)))
    return false;
  touch_readers (s, y);
  if (y_out || fresh)
    {
      const char *name = g_hash_table_lookup (s->names, y);
      g_hash_table_insert (s->names, x, g_strdup (name ? name : y->name));
    }
  g_hash_table_remove (s->names, y);
  pl_value_replace_uses (y, x);
  if (y_out)
    {
      g_hash_table_remove (s->outputs, y);
      g_hash_table_add (s->outputs, x);
    }
  return true;
}

/* Detaches a node nobody reads any more; it is removed at the end. */
static void
kill_node (Simp *s, PlNode *node)
{
  for (int i = 0; i < node->n_outputs; i++)
    {
      PlValue *v = node->outputs[i];
      if (v && (v->n_uses > 0 || is_output (s, v)))
        return;
    }
  cse_forget (s, node);
  g_hash_table_add (s->dead, node);
  for (int i = 0; i < node->n_inputs; i++)
    if (node->inputs[i])
      pl_node_set_input (node, i, NULL);
}

/* Replaces node's only meaningful output by x and drops the node. */
static bool
bypass (Simp *s, PlNode *node, PlValue *x, int64_t *counter)
{
  for (int i = 1; i < node->n_outputs; i++)
    if (node->outputs[i] && (node->outputs[i]->n_uses > 0 || is_output (s, node->outputs[i])))
      return false;
  if (!replace_value (s, node->outputs[0], x, false))
    return false;
  kill_node (s, node);
  (*counter)++;
  return true;
}

/* Sets inputs of node in place; reverted when the node no longer infers to
 * the types it had. */
static bool
rewire (Simp *s, PlNode *node, int n, const int *slots, PlValue *const *values)
{
  PlValue *old[4];
  cse_forget (s, node);
  for (int k = 0; k < n; k++)
    {
      old[k] = node->inputs[slots[k]];
      pl_node_set_input (node, slots[k], values[k]);
    }
  bool more = false;
  if (!reinfer (node, &more))
    {
      for (int k = n - 1; k >= 0; k--)
        pl_node_set_input (node, slots[k], old[k]);
      return false;
    }
  if (more)
    for (int i = 0; i < node->n_outputs; i++)
      if (node->outputs[i])
        touch_readers (s, node->outputs[i]);
  push (s, node);
  return true;
}

/* The canonical constant equal to v (v itself when first seen). */
static PlValue *
intern_const (Simp *s, PlValue *v)
{
  if (!v->constant || v->constant->numel > s->fold_limit || is_output (s, v))
    return v;
  PlValue *c = g_hash_table_lookup (s->consts, v);
  if (c)
    return c;
  g_hash_table_add (s->consts, v);
  return v;
}

/* --- rules ----------------------------------------------------------------------- */

static PlValue *
in0 (const PlNode *node)
{
  return node->n_inputs > 0 ? node->inputs[0] : NULL;
}

static PlValue *
out0 (const PlNode *node)
{
  return node->n_outputs > 0 ? node->outputs[0] : NULL;
}

/* A constant holding t: an equal one already in the graph (when shared is
 * allowed), else a new one named after base (*fresh set). */
static PlValue *
get_const (Simp *s, const char *base, PlTensor *t, bool shared, bool *fresh)
{
  PlValue probe = { .constant = t };
  PlValue *c = shared && s->cse && t->numel <= s->fold_limit ? g_hash_table_lookup (s->consts, &probe) : NULL;
  *fresh = c == NULL;
  if (c)
    return c;
  g_autofree char *name = pl_graph_unique_name (s->g, base);
  c = pl_graph_add_constant (s->g, name, t, NULL);
  if (c && shared)
    intern_const (s, c);
  return c;
}

/* Makes the folded tensor t the value replacing y. */
static bool
fold_output (Simp *s, PlValue *y, PlTensor *t)
{
  bool fresh;
  PlValue *c = get_const (s, y->name, t, !is_output (s, y), &fresh);
  return c && replace_value (s, y, c, fresh);
}

/* Shape and Size of a value whose shape is static. */
static bool
fold_shape_of (Simp *s, PlNode *node)
{
  PlValue *x = in0 (node), *y = out0 (node);
  int64_t dims[PL_MAX_RANK];
  if (!x || !y || !pl_shape_get_dims (&x->shape, dims) || y->dtype != PL_DTYPE_I64)
    return false;
  int rank = x->shape.rank;
  g_autoptr (PlTensor) t = NULL;
  if (node->op == PL_OP_Size)
    t = pl_tensor_new_scalar (PL_DTYPE_I64, (double) pl_shape_numel (&x->shape));
  else
    {
      int64_t start = pl_node_attr_int (node, "start", 0), end = pl_node_attr_int (node, "end", rank);
      start = CLAMP (start < 0 ? start + rank : start, 0, rank);
      end = CLAMP (end < 0 ? end + rank : end, 0, rank);
      int64_t n = MAX (end - start, 0);
      t = pl_tensor_new (PL_DTYPE_I64, 1, &n, NULL);
      for (int64_t i = 0; i < n; i++)
        ((int64_t *) t->data)[i] = dims[start + i];
    }
  PlShape ts = pl_tensor_shape (t);
  if (!pl_rw_same_shape (&ts, &y->shape) || !fold_output (s, y, t))
    return false;
  kill_node (s, node);
  s->n_folded++;
  return true;
}

/* Evaluates a node whose inputs are all constants. */
static bool
try_fold (Simp *s, PlNode *node)
{
  const PlOpInfo *info = pl_op_info (node->op);
  if ((node->op == PL_OP_Shape || node->op == PL_OP_Size) && in0 (node) && !pl_rw_constant (in0 (node)))
    return fold_shape_of (s, node);
  if (!info->eval || node->body || info->category == PL_CAT_CONTROL || info->category == PL_CAT_FUSION
      || info->category == PL_CAT_OPAQUE)
    return false;
  for (int i = 0; i < node->n_inputs; i++)
    if (node->inputs[i] && !pl_rw_constant (node->inputs[i]))
      return false;
  bool used = false;
  for (int i = 0; i < node->n_outputs; i++)
    {
      PlValue *v = node->outputs[i];
      if (!v)
        continue;
      int64_t numel = pl_shape_numel (&v->shape);
      if (numel < 0 || (numel > s->fold_limit && node->op != PL_OP_Constant))
        return false;
      used |= v->n_uses > 0 || is_output (s, v);
    }
  if (!used)
    return false;

  int slots = MAX (node->n_inputs, info->max_inputs);
  g_autofree PlTensor **ins = g_new0 (PlTensor *, MAX (slots, 1));
  g_autofree PlTensor **outs = g_new0 (PlTensor *, MAX (node->n_outputs, 1));
  for (int i = 0; i < node->n_inputs; i++)
    ins[i] = node->inputs[i] ? pl_rw_constant (node->inputs[i]) : NULL;
  bool ok = info->eval (node, ins, outs, NULL);
  for (int i = 0; ok && i < node->n_outputs; i++)
    {
      PlValue *v = node->outputs[i];
      if (!v)
        continue;
      PlShape ts = outs[i] ? pl_tensor_shape (outs[i]) : pl_shape_unknown ();
      ok = outs[i] && outs[i]->dtype == v->dtype && pl_rw_same_shape (&ts, &v->shape);
    }
  bool folded = false;
  for (int i = 0; ok && i < node->n_outputs; i++)
    if (node->outputs[i] && (node->outputs[i]->n_uses > 0 || is_output (s, node->outputs[i])))
      folded |= fold_output (s, node->outputs[i], outs[i]);
  for (int i = 0; i < node->n_outputs; i++)
    if (outs[i])
      pl_tensor_unref (outs[i]);
  if (!folded)
    return false;
  kill_node (s, node);
  s->n_folded++;
  return true;
}

/* Inference Dropout: opset < 12, or training_mode absent or constant false,
 * or ratio constant 0. */
static bool
dropout_is_identity (const PlNode *node)
{
  if (node->graph->opset > 0 && node->graph->opset < 12)
    return true;
  PlValue *ratio = node->n_inputs > 1 ? node->inputs[1] : NULL;
  PlValue *mode = node->n_inputs > 2 ? node->inputs[2] : NULL;
  return !mode || pl_rw_const_all_equal (mode, 0) || (ratio && pl_rw_const_all_equal (ratio, 0));
}

/* Transpose's permutation for the given rank (default: reversed). */
static bool
transpose_perm (const PlNode *node, int rank, int *perm)
{
  const int64_t *p;
  int n;
  if (rank < 0)
    return false;
  if (!pl_node_attr_ints (node, "perm", &p, &n))
    {
      for (int i = 0; i < rank; i++)
        perm[i] = rank - 1 - i;
      return true;
    }
  if (n != rank)
    return false;
  bool seen[PL_MAX_RANK] = { false };
  for (int i = 0; i < n; i++)
    {
      if (p[i] < 0 || p[i] >= rank || seen[p[i]])
        return false;
      seen[p[i]] = true;
      perm[i] = (int) p[i];
    }
  return true;
}

/* A permutation of a tensor of shape in moves no data when the dims that are
 * not 1 keep their order. */
static bool
perm_keeps_order (const PlShape *in, const int *perm)
{
  int last = -1;
  for (int i = 0; i < in->rank; i++)
    {
      int a = perm[i];
      if (in->dims[a].size == 1)
        continue;
      if (a < last)
        return false;
      last = a;
    }
  return true;
}

/* The op computes its first input unchanged. */
static bool
try_identity (Simp *s, PlNode *node)
{
  PlValue *x = in0 (node), *y = out0 (node);
  if (!x || !y || x->dtype != y->dtype)
    return false;
  bool noop = false;
  int perm[PL_MAX_RANK];
  switch (node->op)
    {
    case PL_OP_Identity:
      noop = pl_shape_equal (&x->shape, &y->shape);
      break;
    case PL_OP_Dropout:
      noop = pl_shape_equal (&x->shape, &y->shape) && dropout_is_identity (node);
      break;
    case PL_OP_Cast:
    case PL_OP_CastLike:
      noop = pl_shape_equal (&x->shape, &y->shape);
      break;
    case PL_OP_Reshape:
    case PL_OP_Expand:
    case PL_OP_Squeeze:
    case PL_OP_Unsqueeze:
    case PL_OP_Flatten:
      noop = pl_rw_same_shape (&x->shape, &y->shape);
      break;
    case PL_OP_Transpose:
      noop = pl_rw_same_shape (&x->shape, &y->shape) && transpose_perm (node, x->shape.rank, perm)
             && perm_keeps_order (&x->shape, perm);
      break;
    case PL_OP_Concat:
    case PL_OP_Sum:
    case PL_OP_Max:
    case PL_OP_Min:
    case PL_OP_Mean:
      noop = node->n_inputs == 1 && pl_shape_equal (&x->shape, &y->shape);
      break;
    default:
      break;
    }
  return noop && bypass (s, node, x, &s->n_identities);
}

static bool
is_view (PlOp op)
{
  return op == PL_OP_Reshape || op == PL_OP_Flatten || op == PL_OP_Squeeze || op == PL_OP_Unsqueeze;
}

/* A Reshape's target as a constant, from its static output shape. */
static PlValue *
static_target (Simp *s, PlNode *node)
{
  int64_t dims[PL_MAX_RANK];
  PlValue *y = out0 (node);
  if (!pl_shape_get_dims (&y->shape, dims))
    return NULL;
  for (int i = 0; i < y->shape.rank; i++)
    if (dims[i] == 0)
      return NULL;
  int64_t rank = y->shape.rank;
  g_autoptr (PlTensor) t = pl_tensor_new (PL_DTYPE_I64, 1, &rank, NULL);
  memcpy (t->data, dims, sizeof (int64_t) * rank);
  g_autofree char *base = g_strdup_printf ("%s/shape", node->name);
  bool fresh;
  return get_const (s, base, t, true, &fresh);
}

/* Two view ops in a row: nothing, when the shape comes back; else one
 * Reshape of the first one's input. */
static bool
try_view_pair (Simp *s, PlNode *node)
{
  PlValue *y = out0 (node), *mid = in0 (node);
  PlNode *p = mid ? mid->producer : NULL;
  if (!p || !is_view (p->op) || g_hash_table_contains (s->pinned, p) || !in0 (p))
    return false;
  PlValue *x = in0 (p);
  if (x->dtype == y->dtype && pl_rw_same_shape (&x->shape, &y->shape))
    return bypass (s, node, x, &s->n_cancelled);
  if (node->op != PL_OP_Reshape || node->n_inputs < 2 || !node->inputs[1])
    return false;
  g_autofree int64_t *target = NULL;
  int n = 0;
  bool literal = pl_rw_const_ints_of (node->inputs[1], &target, &n);
  for (int i = 0; literal && i < n && pl_node_attr_int (node, "allowzero", 0) == 0; i++)
    literal = target[i] != 0;
  PlValue *shape = literal ? node->inputs[1] : static_target (s, node);
  if (!shape || !rewire (s, node, 2, (int[]) { 0, 1 }, (PlValue *[]) { x, shape }))
    return false;
  s->n_merged++;
  return true;
}

/* Sets node's int-list attribute `name` to v[n] and its input 0 to x; on
 * failure (inference rejects it) puts both back. */
static bool
rewire_with_ints (Simp *s, PlNode *node, const char *name, const int64_t *v, int n, PlValue *x)
{
  const int64_t *old;
  int n_old;
  g_autofree int64_t *saved = pl_node_attr_ints (node, name, &old, &n_old) ? g_memdup2 (old, sizeof (int64_t) * n_old)
                                                                           : NULL;
  cse_forget (s, node);  /* before its content changes */
  pl_node_set_attr_ints (node, name, v, n);
  if (rewire (s, node, 1, (int[]) { 0 }, (PlValue *[]) { x }))
    return true;
  if (saved)
    pl_node_set_attr_ints (node, name, saved, n_old);
  else
    pl_node_remove_attr (node, name);
  return false;
}

/* Transpose(Transpose(x, p1), p2) = Transpose(x, p1[p2[i]]). */
static bool
try_transpose_pair (Simp *s, PlNode *node)
{
  PlValue *y = out0 (node), *mid = in0 (node);
  PlNode *p = mid ? mid->producer : NULL;
  if (!p || p->op != PL_OP_Transpose || g_hash_table_contains (s->pinned, p) || !in0 (p))
    return false;
  PlValue *x = in0 (p);
  int rank = x->shape.rank, p1[PL_MAX_RANK], p2[PL_MAX_RANK], q[PL_MAX_RANK];
  if (!transpose_perm (p, rank, p1) || !transpose_perm (node, rank, p2))
    return false;
  int64_t q64[PL_MAX_RANK];
  for (int i = 0; i < rank; i++)
    q64[i] = q[i] = p1[p2[i]];
  if (pl_rw_same_shape (&x->shape, &y->shape) && perm_keeps_order (&x->shape, q))
    return bypass (s, node, x, &s->n_cancelled);
  if (!rewire_with_ints (s, node, "perm", q64, rank, x))
    return false;
  s->n_merged++;
  return true;
}

/* Neg(Neg(x)) and Not(Not(x)). */
static bool
try_involution (Simp *s, PlNode *node)
{
  PlValue *mid = in0 (node), *y = out0 (node);
  PlNode *p = mid ? mid->producer : NULL;
  if (!p || p->op != node->op || g_hash_table_contains (s->pinned, p) || !in0 (p))
    return false;
  PlValue *x = in0 (p);
  if (x->dtype != y->dtype || !pl_shape_equal (&x->shape, &y->shape))
    return false;
  return bypass (s, node, x, &s->n_cancelled);
}

/* op(x, c) is x when c is all `unit` and the result is x's type: the same
 * shape (c broadcasts into x without growing it). */
static bool
operand_is_unit (PlValue *x, PlValue *c, PlValue *y, double unit)
{
  if (!x || !c || x->dtype != y->dtype || !pl_rw_constant (c) || !pl_rw_const_all_equal (c, unit))
    return false;
  const PlTensor *t = pl_rw_constant (c);
  if (pl_rw_same_shape (&x->shape, &y->shape))
    return true;
  return t->numel == 1 && x->shape.rank >= t->rank && pl_shape_equal (&x->shape, &y->shape);
}

static bool
try_algebra (Simp *s, PlNode *node)
{
  if (node->n_inputs != 2 || !out0 (node))
    return false;
  PlValue *a = node->inputs[0], *b = node->inputs[1], *y = out0 (node), *x = NULL;
  switch (node->op)
    {
    case PL_OP_Add:
      x = operand_is_unit (a, b, y, 0) ? a : operand_is_unit (b, a, y, 0) ? b : NULL;
      break;
    case PL_OP_Mul:
      x = operand_is_unit (a, b, y, 1) ? a : operand_is_unit (b, a, y, 1) ? b : NULL;
      break;
    case PL_OP_Sub:
      x = operand_is_unit (a, b, y, 0) ? a : NULL;
      break;
    case PL_OP_Div:
    case PL_OP_Pow:
      x = operand_is_unit (a, b, y, 1) ? a : NULL;
      break;
    default:
      break;
    }
  return x && bypass (s, node, x, &s->n_algebra);
}

/* A zero Pad of the spatial dims in front of a Conv, or of an AveragePool
 * that counts the padding, is the window op's own padding: the window op
 * reads the Pad's input with the two paddings added (ONNX exporters from
 * frameworks with "valid"/"same" padding write such Pads). Not for MaxPool
 * (its padding is -inf), ceil_mode pools, auto_pad, a Pad read by anything
 * else, or a Pad that crops. */
static bool
try_pad_into_window (Simp *s, PlNode *node)
{
  PlValue *mid = in0 (node);
  PlNode *pad = mid ? mid->producer : NULL;
  if (!pad || pad->op != PL_OP_Pad || g_hash_table_contains (s->pinned, pad) || !in0 (pad)
      || pl_rw_sole_user (mid) != node || is_output (s, mid))
    return false;
  if (strcmp (pl_node_attr_string (node, "auto_pad", "NOTSET"), "NOTSET") != 0)
    return false;
  if (node->op == PL_OP_AveragePool
      && (pl_node_attr_int (node, "count_include_pad", 0) != 1 || pl_node_attr_int (node, "ceil_mode", 0) != 0))
    return false;
  PlValue *x = in0 (pad);
  int rank = x->shape.rank, n = rank - 2;
  int64_t begin[PL_MAX_RANK], end[PL_MAX_RANK];
  double fill;
  if (rank < 3 || !pl_pad_static_constant (pad, begin, end, &fill) || fill != 0.0 || begin[0] || end[0] || begin[1]
      || end[1])
    return false;
  const int64_t *old = NULL;
  int n_old = 0;
  if (pl_node_attr_ints (node, "pads", &old, &n_old) && n_old != 2 * n)
    return false;
  int64_t pads[2 * PL_MAX_RANK];
  for (int k = 0; k < n; k++)
    {
      if (begin[2 + k] < 0 || end[2 + k] < 0)
        return false;
      pads[k] = begin[2 + k] + (old ? old[k] : 0);
      pads[n + k] = end[2 + k] + (old ? old[n + k] : 0);
    }
  if (!rewire_with_ints (s, node, "pads", pads, 2 * n, x))
    return false;
  s->n_pads_folded++;
  return true;
}

/* Keeps the first of equal nodes; a later one's readers read the first. */
static bool
try_cse (Simp *s, PlNode *node)
{
  const PlOpInfo *info = pl_op_info (node->op);
  if (!s->cse || !info->eval || node->body || node->op == PL_OP_Dropout || info->category == PL_CAT_CONTROL
      || info->category == PL_CAT_FUSION || info->category == PL_CAT_OPAQUE)
    return false;
  PlNode *first = g_hash_table_lookup (s->nodes, node);
  if (!first)
    {
      g_hash_table_add (s->nodes, node);
      return false;
    }
  if (first == node)
    return false;
  for (int i = 0; i < node->n_outputs; i++)
    {
      PlValue *v = node->outputs[i], *w = first->outputs[i];
      if (v && (!w || v->dtype != w->dtype || !pl_shape_equal (&v->shape, &w->shape)
                || (is_output (s, v) && is_output (s, w))))
        return false;
    }
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i])
      replace_value (s, node->outputs[i], first->outputs[i], false);
  kill_node (s, node);
  s->n_cse++;
  return true;
}

static void
process (Simp *s, PlNode *node)
{
  if (g_hash_table_contains (s->dead, node))
    return;
  if (g_hash_table_remove (s->stale, node))
    {
      bool more = false;
      if (reinfer (node, &more) && more)
        for (int i = 0; i < node->n_outputs; i++)
          if (node->outputs[i])
            touch_readers (s, node->outputs[i]);
    }
  if (g_hash_table_contains (s->pinned, node) || node->n_outputs == 0 || !out0 (node))
    return;
  if (try_fold (s, node) || try_identity (s, node))
    return;
  if (is_view (node->op) && try_view_pair (s, node))
    return;
  if (node->op == PL_OP_Transpose && try_transpose_pair (s, node))
    return;
  if ((node->op == PL_OP_Neg || node->op == PL_OP_Not) && try_involution (s, node))
    return;
  if (try_algebra (s, node))
    return;
  if ((node->op == PL_OP_Conv || node->op == PL_OP_AveragePool) && try_pad_into_window (s, node))
    return;
  try_cse (s, node);
}

/* --- the pass ------------------------------------------------------------------ */

static void
simp_init (Simp *s, PlGraph *g, const PlPassArgs *args)
{
  *s = (Simp) { .g = g, .fold_limit = pl_pass_args_int (args, "fold_limit"), .cse = pl_pass_args_bool (args, "cse") };
  g_queue_init (&s->queue);
  s->queued = g_hash_table_new (NULL, NULL);
  s->stale = g_hash_table_new (NULL, NULL);
  s->dead = g_hash_table_new (NULL, NULL);
  s->pinned = g_hash_table_new (NULL, NULL);
  s->outputs = g_hash_table_new (NULL, NULL);
  s->nodes = g_hash_table_new (node_hash, node_equal);
  s->consts = g_hash_table_new (const_hash, const_equal);
  s->names = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  for (guint i = 0; i < g->outputs->len; i++)
    g_hash_table_add (s->outputs, g->outputs->pdata[i]);
  for (guint i = 0; g->n_control_edges > 0 && i < g->nodes->len; i++)
    {
      PlNode *n = g->nodes->pdata[i];
      for (int c = 0; c < n->n_controls; c++)
        {
          g_hash_table_add (s->pinned, n);
          g_hash_table_add (s->pinned, n->controls[c].node);
        }
    }
}

static void
simp_clear (Simp *s)
{
  g_queue_clear (&s->queue);
  g_hash_table_destroy (s->queued);
  g_hash_table_destroy (s->stale);
  g_hash_table_destroy (s->dead);
  g_hash_table_destroy (s->pinned);
  g_hash_table_destroy (s->outputs);
  g_hash_table_destroy (s->nodes);
  g_hash_table_destroy (s->consts);
  g_hash_table_destroy (s->names);
}

/* Equal constants are merged before the nodes are visited, so CSE compares
 * inputs by identity. */
static void
merge_constants (Simp *s)
{
  GPtrArray *values = s->g->values;
  for (guint i = 0; s->cse && i < values->len; i++)
    {
      PlValue *v = values->pdata[i];
      if (!v->constant || v->is_input || v->n_uses == 0)
        continue;
      PlValue *c = intern_const (s, v);
      if (c != v)
        {
          touch_readers (s, v);
          pl_value_replace_uses (v, c);
          s->n_const_dups++;
        }
    }
}

static int64_t
count_constants (const PlGraph *g)
{
  int64_t n = 0;
  for (guint i = 0; i < g->values->len; i++)
    n += ((PlValue *) g->values->pdata[i])->constant != NULL;
  return n;
}

/* Values that replaced others take their names, now that those are gone. */
static void
apply_names (Simp *s)
{
  for (guint i = 0; i < s->g->values->len; i++)
    {
      PlValue *v = s->g->values->pdata[i];
      const char *name = g_hash_table_lookup (s->names, v);
      if (name)
        pl_value_rename (v, name, NULL);
    }
}

/* "verb N noun" for a nonzero count, and its counter. */
static void
report_line (PlPassReport *r, const char *counter, int64_t n, const char *verb, const char *one,
             const char *many)
{
  if (n == 0)
    return;
  pl_pass_report_count (r, counter, n);
  pl_pass_report_printf (r, "%s %" G_GINT64_FORMAT " %s", verb, n, n == 1 ? one : many);
}

static bool
run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data G_GNUC_UNUSED, GError **error)
{
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, error);
  if (!order)
    return false;
  Simp s;
  simp_init (&s, g, args);
  for (int i = 0; i < n; i++)
    push (&s, order[i]);
  merge_constants (&s);
  while (!g_queue_is_empty (&s.queue))
    {
      PlNode *node = g_queue_pop_head (&s.queue);
      g_hash_table_remove (s.queued, node);
      process (&s, node);
    }
  int64_t n_replaced = g_hash_table_size (s.dead);
  int64_t consts_before = count_constants (g);
  int64_t n_dead = pl_rw_dce (g) - n_replaced;
  int64_t n_unused = consts_before - count_constants (g);
  apply_names (&s);

  report_line (report, "constants folded", s.n_folded, "folded", "constant", "constants");
  report_line (report, "identities removed", s.n_identities, "removed", "identity", "identities");
  report_line (report, "pairs cancelled", s.n_cancelled, "cancelled", "inverse pair", "inverse pairs");
  report_line (report, "pairs merged", s.n_merged, "merged", "reshape/transpose pair into one node",
               "reshape/transpose pairs into one node each");
  report_line (report, "algebraic identities", s.n_algebra, "simplified", "algebraic identity",
               "algebraic identities");
  report_line (report, "pads folded", s.n_pads_folded, "folded", "Pad into the padding of its Conv or AveragePool",
               "Pads into the padding of their Convs or AveragePools");
  report_line (report, "duplicate nodes merged", s.n_cse, "merged", "duplicate node (CSE)",
               "duplicate nodes (CSE)");
  report_line (report, "duplicate constants merged", s.n_const_dups, "merged", "duplicate constant",
               "duplicate constants");
  report_line (report, "dead nodes removed", n_dead, "removed", "dead node", "dead nodes");
  report_line (report, "unused constants removed", n_unused, "removed", "unused constant", "unused constants");
  report->changed = s.n_folded + s.n_identities + s.n_cancelled + s.n_merged + s.n_algebra + s.n_cse
                    + s.n_const_dups + s.n_pads_folded + n_dead + n_unused > 0;
  if (!report->changed)
    pl_pass_report_printf (report, "nothing to simplify");
  simp_clear (&s);
  return true;
}

static const PlPassParam params[] = {
  { "fold_limit", PL_PARAM_INT, "65536", "largest constant (elements) that folding may create" },
  { "cse", PL_PARAM_BOOL, "true", "merge equal constants and duplicate nodes" },
};

PlPass *
pl_pass_simplify_new (void)
{
  return pl_pass_new ("simplify",
                      "folds constants, removes identities, inverse pairs, duplicates and dead code",
                      params, G_N_ELEMENTS (params), run, NULL, NULL);
}
