/* fuse-library.c — the "fuse-library" pass: library fusion (seed 001,
 * DESIGN.md §1.2). Patterns around the compute-intensive ops become fusion
 * nodes that a code generator turns into one library call each; the bodies
 * keep the original ops, so the reference interpreter stays exact.
 *
 *  gemm     MatMul(Transpose(A), B), MatMul(A, Transpose(B)) where the
 *           transpose swaps the last two dims (Gemm: rank 2, flags combine
 *           with its own) → kind "library", library "gemm", transA/transB;
 *  epilogue bias-adds and simple activations (Relu, Sigmoid, Tanh, Gelu,
 *           Clip with constant bounds, LeakyRelu) applied in a chain to the
 *           result of a MatMul/Gemm/Conv, each step the only reader of the
 *           last → kind "output" with `epilogue` = ["bias", "relu", ...].
 *           A bias is a vector along the last dim for a GEMM ([N], [1, N],
 *           ...), per channel for a convolution ([C, 1, 1] or [1, C, 1, 1]);
 *  conv_backward_filter  what reverse-mode autodiff makes of a forward
 *           Y = Conv(X, W) {strides s, dilations d, pads p, group 1}:
 *             dW = Transpose(Conv(Transpose(X, [1,0,2,..]), Transpose(dY, [1,0,2,..]),
 *                                 strides = d, dilations = s, pads = p'), [1,0,2,..])
 *           (the batch becomes the reduced channel axis; stride and dilation
 *           trade places; p' begins as p and ends wherever makes the result
 *           the kernel's size) → the forward s, d, p are recorded;
 *  conv_backward_input   ConvTranspose(dY, W) with the forward attributes,
 *           or, for stride 1, Conv(Pad(dY)?, Flip(Transpose(W, [1,0,2,..])))
 *           where Flip is a Slice with step -1 over every spatial axis (in
 *           either order with the Transpose) and the total padding q gives
 *           the forward pads p = d·(K-1) - q.
 * Each match is checked against a PlFusionPlan so no cycle appears, then
 * all groups become fusion nodes in one batch.
 */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"
#include "cost.h"
#include "fusion.h"
#include "rewrite.h"

#include <string.h>

#define MAX_REPORT_LINES 200

/* What one fusion becomes: kind, library and the attributes to set. */
typedef struct {
  const char *kind;
  const char *library;
  bool        gemm;
  int         trans_a, trans_b;
  float       alpha, beta;
  bool        conv;          /* the window attributes below are set */
  int         n;             /* spatial dims */
  int64_t     strides[PL_MAX_RANK], dilations[PL_MAX_RANK], pads[2 * PL_MAX_RANK];
  int64_t     kernel[PL_MAX_RANK], output_padding[PL_MAX_RANK];
  bool        has_output_padding;
  int64_t     group;
  GPtrArray  *epilogue;      /* const char* */
} Spec;

typedef struct {
  PlGraph      *g;
  PlFusionPlan *plan;
  GHashTable   *claimed;     /* PlNode* set */
  GPtrArray    *groups;      /* GPtrArray of PlNode* */
  GPtrArray    *specs;       /* Spec* */
} Lib;

static void
spec_free (Spec *s)
{
  g_ptr_array_unref (s->epilogue);
  g_free (s);
}

static Spec *
spec_new (void)
{
  Spec *s = g_new0 (Spec, 1);
  s->epilogue = g_ptr_array_new ();
  s->alpha = 1.0f;
  s->group = 1;
  return s;
}

/* --- small predicates ------------------------------------------------------------ */

static bool
is_free (Lib *l, const PlNode *node)
{
  return node && !g_hash_table_contains (l->claimed, node);
}

/* The producer of v when it is an op of that kind that only `reader` reads. */
static PlNode *
sole_producer (Lib *l, const PlValue *v, PlOp op, const PlNode *reader)
{
  if (!v || !v->producer || v->producer->op != op || !is_free (l, v->producer))
    return NULL;
  return pl_rw_sole_user (v) == reader ? v->producer : NULL;
}

/* Transpose's permutation (default: reversed dims); false when unknown. */
static bool
transpose_perm (const PlNode *t, int64_t *perm, int *rank)
{
  *rank = t->inputs[0] ? t->inputs[0]->shape.rank : -1;
  if (*rank < 0 || *rank > PL_MAX_RANK)
    return false;
  const int64_t *p;
  int n;
  if (pl_node_attr_ints (t, "perm", &p, &n))
    {
      if (n != *rank)
        return false;
      memcpy (perm, p, sizeof (int64_t) * n);
    }
  else
    for (int i = 0; i < *rank; i++)
      perm[i] = *rank - 1 - i;
  return true;
}

/* perm is [0, .., r-3, r-1, r-2] (first = false) or [1, 0, 2, .., r-1] (first = true). */
static bool
swaps_two (const PlNode *t, bool first, int min_rank)
{
  int64_t perm[PL_MAX_RANK];
  int r;
  if (!t || !transpose_perm (t, perm, &r) || r < min_rank)
    return false;
  for (int i = 0; i < r; i++)
    {
      int64_t want = i;
      if (first && i < 2)
        want = 1 - i;
      else if (!first && i >= r - 2)
        want = i == r - 1 ? r - 2 : r - 1;
      if (perm[i] != want)
        return false;
    }
  return true;
}

/* Static dims of v (rank in *rank); false if not static. */
static bool
static_dims (const PlValue *v, int64_t *dims, int *rank)
{
  if (!v || !pl_shape_get_dims (&v->shape, dims))
    return false;
  *rank = v->shape.rank;
  return true;
}

/* --- epilogues ------------------------------------------------------------------- */

/* Whether b is a bias for a result of shape r: along the last dim (GEMM) or
 * per channel, dim 1 (convolution). */
static bool
is_bias (const PlValue *b, const PlValue *r, bool conv)
{
  const PlShape *bs = &b->shape, *rs = &r->shape;
  if (b->dtype != r->dtype || bs->rank < 1 || rs->rank < 1 || bs->rank > rs->rank)
    return false;
  if (!conv)
    {
      if (!pl_dim_equal (bs->dims[bs->rank - 1], rs->dims[rs->rank - 1]))
        return false;
      for (int i = 0; i < bs->rank - 1; i++)
        if (bs->dims[i].size != 1)
          return false;
      return true;
    }
  /* [C, 1, .., 1] (rank r-1) or [1, C, 1, .., 1] (rank r) */
  if (rs->rank < 3 || bs->rank < rs->rank - 1)
    return false;
  int c = bs->rank == rs->rank ? 1 : 0;
  if (c == 1 && bs->dims[0].size != 1)
    return false;
  if (!pl_dim_equal (bs->dims[c], rs->dims[1]))
    return false;
  for (int i = c + 1; i < bs->rank; i++)
    if (bs->dims[i].size != 1)
      return false;
  return true;
}

/* (see fusion.h) */
const char *
pl_fusion_epilogue_step (const PlNode *u, const PlValue *cur, bool conv)
{
  switch (u->op)
    {
    case PL_OP_Add:
      if (u->n_inputs == 2 && (u->inputs[0] == cur) != (u->inputs[1] == cur))
        return is_bias (u->inputs[u->inputs[0] == cur ? 1 : 0], cur, conv) ? "bias" : NULL;
      return NULL;
    case PL_OP_Relu:
      return "relu";
    case PL_OP_Sigmoid:
      return "sigmoid";
    case PL_OP_Tanh:
      return "tanh";
    case PL_OP_Gelu:
      return "gelu";
    case PL_OP_LeakyRelu:
      return "leaky_relu";
    case PL_OP_Clip:
      for (int i = 1; i < u->n_inputs; i++)
        if (u->inputs[i] && !pl_rw_constant (u->inputs[i]))
          return NULL;
      return u->inputs[0] == cur ? "clip" : NULL;
    default:
      return NULL;
    }
}

/* Follows the chain of epilogue ops after anchor, adding them to nodes. */
static void
match_epilogue (Lib *l, PlNode *anchor, bool conv, GPtrArray *nodes, Spec *spec)
{
  PlValue *cur = anchor->outputs[0];
  for (;;)
    {
      PlNode *u = pl_rw_sole_user (cur);
      if (!is_free (l, u) || u->n_outputs != 1 || !u->outputs[0])
        return;
      const char *step = pl_fusion_epilogue_step (u, cur, conv);
      if (!step || u->outputs[0]->dtype != cur->dtype || !pl_rw_same_shape (&u->outputs[0]->shape, &cur->shape))
        return;
      g_ptr_array_add (nodes, u);
      g_ptr_array_add (spec->epilogue, (gpointer) step);
      cur = u->outputs[0];
    }
}

/* --- patterns ---------------------------------------------------------------------- */

/* Records a match: its result (the last node's, every pattern's only way
 * out) must be read — dead code is no call to make — and it must not make a
 * cycle with the groups found so far. */
static bool
accept (Lib *l, GPtrArray *nodes, Spec *spec)
{
  PlValue *result = ((PlNode *) nodes->pdata[nodes->len - 1])->outputs[0];
  if ((result->n_uses == 0 && !pl_value_is_output (result)) ||
      !pl_fusion_plan_merge (l->plan, (PlNode *const *) nodes->pdata, (int) nodes->len))
    {
      spec_free (spec);
      g_ptr_array_unref (nodes);
      return false;
    }
  for (guint i = 0; i < nodes->len; i++)
    g_hash_table_add (l->claimed, nodes->pdata[i]);
  g_ptr_array_add (l->groups, nodes);
  g_ptr_array_add (l->specs, spec);
  return true;
}

static bool
match_gemm (Lib *l, PlNode *mm)
{
  bool is_gemm = mm->op == PL_OP_Gemm;
  if (mm->n_inputs < 2 || !mm->inputs[0] || !mm->inputs[1] || !mm->outputs[0])
    return false;
  GPtrArray *nodes = g_ptr_array_new ();
  Spec *spec = spec_new ();
  spec->library = "gemm";
  spec->gemm = true;
  spec->trans_a = is_gemm ? pl_node_attr_int (mm, "transA", 0) != 0 : 0;
  spec->trans_b = is_gemm ? pl_node_attr_int (mm, "transB", 0) != 0 : 0;
  spec->alpha = is_gemm ? pl_node_attr_float (mm, "alpha", 1.0f) : 1.0f;
  spec->beta = is_gemm && mm->n_inputs > 2 && mm->inputs[2] ? pl_node_attr_float (mm, "beta", 1.0f) : 0.0f;
  int transposed = 0;
  for (int side = 0; side < 2; side++)
    {
      PlNode *t = sole_producer (l, mm->inputs[side], PL_OP_Transpose, mm);
      if (!t || !swaps_two (t, false, 2) || (is_gemm && t->inputs[0]->shape.rank != 2))
        continue;
      g_ptr_array_add (nodes, t);
      transposed++;
      if (side == 0)
        spec->trans_a = !spec->trans_a;
      else
        spec->trans_b = !spec->trans_b;
    }
  g_ptr_array_add (nodes, mm);
  match_epilogue (l, mm, false, nodes, spec);
  if (transposed == 0 && spec->epilogue->len == 0)
    {
      spec_free (spec);
      g_ptr_array_unref (nodes);
      return false;
    }
  spec->kind = spec->epilogue->len ? PL_FUSION_KIND_OUTPUT : PL_FUSION_KIND_LIBRARY;
  return accept (l, nodes, spec);
}

/* Conv's window into spec (explicit pads only); false for auto_pad or
 * attributes of the wrong length. */
static bool
conv_window (const PlNode *conv, int n, Spec *spec)
{
  const char *auto_pad = pl_node_attr_string (conv, "auto_pad", "NOTSET");
  if (strcmp (auto_pad, "NOTSET") != 0 || n < 1 || n > PL_MAX_RANK)
    return false;
  const int64_t *v;
  int k;
  spec->conv = true;
  spec->n = n;
  spec->group = pl_node_attr_int (conv, "group", 1);
  for (int i = 0; i < n; i++)
    spec->strides[i] = spec->dilations[i] = 1, spec->pads[i] = spec->pads[n + i] = 0;
  if (pl_node_attr_ints (conv, "strides", &v, &k) && k != n)
    return false;
  for (int i = 0; i < k; i++)
    spec->strides[i] = v[i];
  if (pl_node_attr_ints (conv, "dilations", &v, &k) && k != n)
    return false;
  for (int i = 0; i < k; i++)
    spec->dilations[i] = v[i];
  if (pl_node_attr_ints (conv, "pads", &v, &k) && k != 2 * n)
    return false;
  for (int i = 0; i < k; i++)
    spec->pads[i] = v[i];
  if (pl_node_attr_ints (conv, "output_padding", &v, &k))
    {
      if (k != n)
        return false;
      memcpy (spec->output_padding, v, sizeof (int64_t) * n);
      spec->has_output_padding = true;
    }
  return true;
}

/* dW = Transpose(Conv(Transpose(X), Transpose(dY)), [1,0,..]) around conv. */
static bool
match_backward_filter (Lib *l, PlNode *conv)
{
  if (conv->n_inputs != 2 || !conv->outputs[0] || pl_node_attr_int (conv, "group", 1) != 1)
    return false;
  PlNode *t0 = sole_producer (l, conv->inputs[0], PL_OP_Transpose, conv);
  PlNode *t1 = sole_producer (l, conv->inputs[1], PL_OP_Transpose, conv);
  PlNode *t2 = pl_rw_sole_user (conv->outputs[0]);
  if (!t0 || !t1 || !is_free (l, t2) || t2->op != PL_OP_Transpose || !swaps_two (t0, true, 3) ||
      !swaps_two (t1, true, 3) || !swaps_two (t2, true, 3))
    return false;
  int64_t x[PL_MAX_RANK], dy[PL_MAX_RANK], dw[PL_MAX_RANK];
  int rx, ry, rw;
  if (!static_dims (t0->inputs[0], x, &rx) || !static_dims (t1->inputs[0], dy, &ry) ||
      !static_dims (t2->outputs[0], dw, &rw) || rx != ry || rx != rw)
    return false;
  Spec inner = { 0 };
  int n = rx - 2;
  if (!conv_window (conv, n, &inner))
    return false;

  Spec *spec = spec_new ();
  spec->kind = PL_FUSION_KIND_LIBRARY;
  spec->library = "conv_backward_filter";
  spec->conv = true;
  spec->n = n;
  for (int i = 0; i < n; i++)
    {
      /* stride and dilation trade places; the pad end is the smallest that
       * gives the forward convolution dY's size */
      int64_t s = inner.dilations[i], d = inner.strides[i], k = dw[2 + i], h = x[2 + i], oh = dy[2 + i];
      int64_t pb = inner.pads[i];
      int64_t pe = MAX (0, (oh - 1) * s + d * (k - 1) + 1 - h - pb);
      if (s < 1 || (h + pb + pe - d * (k - 1) - 1) / s + 1 != oh)
        {
          spec_free (spec);
          return false;
        }
      spec->strides[i] = s;
      spec->dilations[i] = d;
      spec->pads[i] = pb;
      spec->pads[n + i] = pe;
      spec->kernel[i] = k;
    }
  GPtrArray *nodes = g_ptr_array_new ();
  g_ptr_array_add (nodes, t0);
  g_ptr_array_add (nodes, t1);
  g_ptr_array_add (nodes, conv);
  g_ptr_array_add (nodes, t2);
  return accept (l, nodes, spec);
}

/* Slice(x) reversing every spatial axis (2 .. r-1) of x and nothing else. */
static bool
is_spatial_flip (const PlNode *s)
{
  if (s->op != PL_OP_Slice || s->n_inputs < 5 || !s->inputs[0])
    return false;
  int64_t dims[PL_MAX_RANK];
  int r;
  if (!static_dims (s->inputs[0], dims, &r) || r < 3)
    return false;
  g_autofree int64_t *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
  int ns, ne, na, nt;
  if (!pl_rw_const_ints_of (s->inputs[1], &starts, &ns) || !pl_rw_const_ints_of (s->inputs[2], &ends, &ne) ||
      !pl_rw_const_ints_of (s->inputs[3], &axes, &na) || !pl_rw_const_ints_of (s->inputs[4], &steps, &nt) ||
      ns != r - 2 || ne != ns || na != ns || nt != ns)
    return false;
  guint seen = 0;
  for (int i = 0; i < ns; i++)
    {
      int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
      if (a < 2 || a >= r || (seen & (1u << a)) || steps[i] != -1)
        return false;
      seen |= 1u << a;
      int64_t start = starts[i] < 0 ? starts[i] + dims[a] : starts[i];
      if (start < dims[a] - 1 || ends[i] >= -dims[a])
        return false;
    }
  return true;
}

/* dX = Conv(Pad(dY)?, Flip(Transpose(W))) with stride 1. */
static bool
match_backward_input_flip (Lib *l, PlNode *conv)
{
  if (conv->n_inputs != 2 || !conv->outputs[0] || pl_node_attr_int (conv, "group", 1) != 1)
    return false;
  PlNode *a = conv->inputs[1] ? conv->inputs[1]->producer : NULL;
  PlNode *flip, *tr;
  if (!a || pl_rw_sole_user (conv->inputs[1]) != conv || !is_free (l, a))
    return false;
  if (a->op == PL_OP_Slice)
    flip = a, tr = sole_producer (l, a->inputs[0], PL_OP_Transpose, a);
  else if (a->op == PL_OP_Transpose)
    tr = a, flip = sole_producer (l, a->inputs[0], PL_OP_Slice, a);
  else
    return false;
  if (!flip || !tr || !is_spatial_flip (flip) || !swaps_two (tr, true, 3))
    return false;
  PlValue *w = a == flip ? tr->inputs[0] : flip->inputs[0];
  int64_t wd[PL_MAX_RANK];
  int rw;
  if (!static_dims (w, wd, &rw))
    return false;
  int n = rw - 2;
  Spec inner = { 0 };
  if (!conv_window (conv, n, &inner))
    return false;
  for (int i = 0; i < n; i++)
    if (inner.strides[i] != 1)
      return false;

  /* Explicit zero padding of dY adds to the conv's own. */
  PlNode *pad = sole_producer (l, conv->inputs[0], PL_OP_Pad, conv);
  int64_t q[2 * PL_MAX_RANK];
  memcpy (q, inner.pads, sizeof (int64_t) * 2 * n);
  if (pad)
    {
      g_autofree int64_t *p = NULL;
      int np;
      int r = n + 2;
      bool ok = strcmp (pl_node_attr_string (pad, "mode", "constant"), "constant") == 0 &&
                pad->n_inputs >= 2 && pl_rw_const_ints_of (pad->inputs[1], &p, &np) && np == 2 * r &&
                (pad->n_inputs < 3 || !pad->inputs[2] || pl_rw_const_all_equal (pad->inputs[2], 0.0)) &&
                (pad->n_inputs < 4 || !pad->inputs[3]);
      for (int i = 0; ok && i < 2; i++)
        ok = p[i] == 0 && p[r + i] == 0;
      for (int i = 0; ok && i < n; i++)
        {
          ok = p[2 + i] >= 0 && p[r + 2 + i] >= 0;
          q[i] += p[2 + i];
          q[n + i] += p[r + 2 + i];
        }
      if (!ok)
        pad = NULL, memcpy (q, inner.pads, sizeof (int64_t) * 2 * n);
    }

  Spec *spec = spec_new ();
  spec->kind = PL_FUSION_KIND_LIBRARY;
  spec->library = "conv_backward_input";
  spec->conv = true;
  spec->n = n;
  for (int i = 0; i < n; i++)
    {
      int64_t d = inner.dilations[i], k = wd[2 + i];
      spec->strides[i] = 1;
      spec->dilations[i] = d;
      spec->pads[i] = d * (k - 1) - q[i];
      spec->pads[n + i] = d * (k - 1) - q[n + i];
      spec->kernel[i] = k;
      if (spec->pads[i] < 0 || spec->pads[n + i] < 0)
        {
          spec_free (spec);
          return false;
        }
    }
  GPtrArray *nodes = g_ptr_array_new ();
  if (pad)
    g_ptr_array_add (nodes, pad);
  g_ptr_array_add (nodes, a == flip ? tr : flip);
  g_ptr_array_add (nodes, a);
  g_ptr_array_add (nodes, conv);
  return accept (l, nodes, spec);
}

/* ConvTranspose(dY, W): the backward-input call with the forward attributes. */
static bool
match_conv_transpose (Lib *l, PlNode *ct)
{
  int64_t wd[PL_MAX_RANK];
  int rw;
  if (ct->n_inputs != 2 || !ct->outputs[0] || pl_node_attr (ct, "output_shape") ||
      !static_dims (ct->inputs[1], wd, &rw) || rw < 3)
    return false;
  Spec *spec = spec_new ();
  if (!conv_window (ct, rw - 2, spec))
    {
      spec_free (spec);
      return false;
    }
  spec->kind = PL_FUSION_KIND_LIBRARY;
  spec->library = "conv_backward_input";
  for (int i = 0; i < spec->n; i++)
    spec->kernel[i] = wd[2 + i];
  GPtrArray *nodes = g_ptr_array_new ();
  g_ptr_array_add (nodes, ct);
  return accept (l, nodes, spec);
}

/* A forward Conv with an epilogue. */
static bool
match_conv_epilogue (Lib *l, PlNode *conv)
{
  int64_t wd[PL_MAX_RANK];
  int rw;
  if (!conv->outputs[0] || conv->n_inputs < 2 || !static_dims (conv->inputs[1], wd, &rw) || rw < 3)
    return false;
  Spec *spec = spec_new ();
  GPtrArray *nodes = g_ptr_array_new ();
  g_ptr_array_add (nodes, conv);
  match_epilogue (l, conv, true, nodes, spec);
  if (spec->epilogue->len == 0 || !conv_window (conv, rw - 2, spec))
    {
      spec_free (spec);
      g_ptr_array_unref (nodes);
      return false;
    }
  spec->kind = PL_FUSION_KIND_OUTPUT;
  spec->library = "conv";
  for (int i = 0; i < spec->n; i++)
    spec->kernel[i] = wd[2 + i];
  return accept (l, nodes, spec);
}

/* --- the pass --------------------------------------------------------------------- */

static void
apply_spec (PlNode *f, const Spec *s)
{
  pl_node_set_attr_string (f, "library", s->library);
  if (s->gemm)
    {
      pl_node_set_attr_int (f, "transA", s->trans_a);
      pl_node_set_attr_int (f, "transB", s->trans_b);
      pl_node_set_attr_float (f, "alpha", s->alpha);
      pl_node_set_attr_float (f, "beta", s->beta);
    }
  if (s->conv)
    {
      pl_node_set_attr_ints (f, "strides", s->strides, s->n);
      pl_node_set_attr_ints (f, "pads", s->pads, 2 * s->n);
      pl_node_set_attr_ints (f, "dilations", s->dilations, s->n);
      pl_node_set_attr_ints (f, "kernel_shape", s->kernel, s->n);
      pl_node_set_attr_int (f, "group", s->group);
      if (s->has_output_padding)
        pl_node_set_attr_ints (f, "output_padding", s->output_padding, s->n);
    }
  if (s->epilogue->len)
    pl_node_set_attr_strings (f, "epilogue", (const char *const *) s->epilogue->pdata, (int) s->epilogue->len);
}

static char *
describe (GPtrArray *nodes, const Spec *s)
{
  GString *d = g_string_new (NULL);
  g_string_append_printf (d, "%s %s", s->kind, s->library);
  if (s->gemm && (s->trans_a || s->trans_b))
    g_string_append_printf (d, " transA=%d transB=%d", s->trans_a, s->trans_b);
  for (guint i = 0; i < s->epilogue->len; i++)
    g_string_append_printf (d, "%s%s", i ? ", " : " + ", (const char *) s->epilogue->pdata[i]);
  g_string_append (d, ": ");
  for (guint i = 0; i < nodes->len; i++)
    g_string_append_printf (d, "%s%s", i ? ", " : "", ((PlNode *) nodes->pdata[i])->name);
  return g_string_free (d, FALSE);
}

static bool
run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data, GError **error)
{
  PlGraphStats before, after;
  pl_graph_stats (g, 1, &before);
  Lib l = { .g = g };
  l.plan = pl_fusion_plan_new (g, error);
  if (!l.plan)
    return false;
  l.claimed = g_hash_table_new (NULL, NULL);
  l.groups = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  l.specs = g_ptr_array_new_with_free_func ((GDestroyNotify) spec_free);

  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  for (int k = 0; k < n; k++)
    {
      PlNode *x = order[k];
      if (!is_free (&l, x) || x->body)
        continue;
      switch (x->op)
        {
        case PL_OP_MatMul:
        case PL_OP_Gemm:
          match_gemm (&l, x);
          break;
        case PL_OP_Conv:
          if (!match_backward_filter (&l, x) && !match_backward_input_flip (&l, x))
            match_conv_epilogue (&l, x);
          break;
        case PL_OP_ConvTranspose:
          match_conv_transpose (&l, x);
          break;
        default:
          break;
        }
    }
  pl_fusion_plan_free (l.plan);
  g_hash_table_unref (l.claimed);

  bool ok = true;
  if (l.groups->len == 0)
    pl_pass_report_printf (report, "nothing to fuse");
  else
    {
      g_autoptr (GPtrArray) kinds = g_ptr_array_new ();
      g_autoptr (GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);
      for (guint i = 0; i < l.groups->len; i++)
        {
          Spec *s = l.specs->pdata[i];
          g_ptr_array_add (kinds, (gpointer) s->kind);
          g_ptr_array_add (lines, describe (l.groups->pdata[i], s));
        }
      g_autoptr (GPtrArray) left_out = g_ptr_array_new_with_free_func (g_free);
      g_autoptr (GPtrArray) made = pl_fusion_create_many (g, l.groups, (const char *const *) kinds->pdata, left_out,
                                                          error);
      ok = made != NULL;
      for (guint i = 0; ok && i < left_out->len; i++)
        pl_pass_report_printf (report, "%s", (char *) left_out->pdata[i]);
      for (guint i = 0; ok && i < made->len; i++)
        {
          Spec *s = l.specs->pdata[i];
          if (!made->pdata[i])
            continue;
          apply_spec (made->pdata[i], s);
          if (i < MAX_REPORT_LINES)
            pl_pass_report_printf (report, "%s (%s)", ((PlNode *) made->pdata[i])->name, (char *) lines->pdata[i]);
          pl_pass_report_count (report, s->library, 1);
          pl_pass_report_count (report, "epilogue ops", s->epilogue->len);
        }
      if (ok)
        {
          if (made->len > MAX_REPORT_LINES)
            pl_pass_report_printf (report, "… and %u more fusions", made->len - MAX_REPORT_LINES);
          pl_graph_stats (g, 1, &after);
          guint n_made = made->len - left_out->len;
          pl_pass_report_printf (report, "%u library fusions; kernels %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT,
                                 n_made, before.kernels, after.kernels);
          pl_pass_report_count (report, "fusions", n_made);
          pl_pass_report_count (report, "kernels before", before.kernels);
          pl_pass_report_count (report, "kernels after", after.kernels);
          report->changed = n_made > 0;
        }
    }
  g_ptr_array_unref (l.groups);
  g_ptr_array_unref (l.specs);
  return ok;
}

PlPass *
pl_pass_fuse_library_new (void)
{
  return pl_pass_new ("fuse-library",
                      "library fusion: GEMMs with transpose flags, bias/activation epilogues of "
                      "MatMul/Gemm/Conv, and the convolution backward-filter/backward-input patterns",
                      NULL, 0, run, NULL, NULL);
}
