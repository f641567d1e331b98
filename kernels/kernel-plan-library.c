/* kernel-plan-library.c — plans of the library kernels: MatMul/Gemm (the
 * operands' transposes absorbed as flags, batch strides), Conv (per
 * layout, im2col + GEMM or the generated direct convolution) and
 * ConvTranspose (GEMM + the generated col2im, NCHW), each one
 * library call followed by its epilogue, a pointwise loop over the raw
 * result that runs in place when it reads the result where it writes. */
#define G_LOG_DOMAIN "passlab"
#include "kernel-plan-private.h"

#include "conv-direct.h"

#include <string.h>

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

/* A batched GEMM whose B every batch shares (a weight) and whose A is dense
 * over its batch dims is one GEMM of batch * M rows: the output rows follow
 * each other the same way. A PyTorch-exported attention projection of
 * x[64, 1, 128] by W[128, 384] was 64 GEMMs of one row each (0.68 ms; one
 * GEMM of 64 rows runs in a tenth of it). */
static void
fold_batch_into_rows (PlGemmDesc *g)
{
  if (g->trans_a || g->batch <= 1)
    return;
  int64_t dense = g->M * g->K;
  for (int k = g->batch_rank - 1; k >= 0; k--)
    {
      if (g->batch_dims[k] == 1)
        continue;
      if (g->b_strides[k] != 0 || g->a_strides[k] != dense)
        return;
      dense *= g->batch_dims[k];
    }
  g->M *= g->batch;
  g->batch = 1;
  g->batch_rank = 0;
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
  if (!pl_lower_value_dims (a, ad) || !pl_lower_value_dims (b, bd) || !pl_lower_value_dims (mm->outputs[0], od))
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
  fold_batch_into_rows (g);
  g->a_slot = gemm_slot (L, a);
  g->b_slot = gemm_slot (L, b);
  p->flops = 2 * g->batch * g->M * g->N * g->K;
  g_autofree char *batch = g->batch > 1 ? g_strdup_printf ("%" G_GINT64_FORMAT " x ", g->batch) : g_strdup ("");
  p->note = g_strdup_printf ("gemm %s%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "%s%s", batch,
                             g->M, g->N, g->K, ta ? " transA" : "", tb ? " transB" : "");
  return true;
}

/* What Conv and ConvTranspose descs share: static shapes of X, W and Y,
 * f32/f64, the spatial sizes, kernel, strides, dilations and the pads
 * shape inference resolves (pl_conv_resolved_pads). xd, wd: X's and W's dims. */
static bool
window_desc (const PlNode *node, PlConvDesc *c, int64_t *xd, int64_t *wd, char **why)
{
  memset (c, 0, sizeof *c);
  int64_t od[PL_MAX_RANK];
  PlValue *x = node->inputs[0], *w = node->n_inputs > 1 ? node->inputs[1] : NULL;
  const char *op = node->op_type;
  if (!pl_lower_value_dims (x, xd) || !pl_lower_value_dims (w, wd) || !pl_lower_value_dims (node->outputs[0], od) ||
      x->shape.rank < 3)
    return (*why = g_strdup_printf ("%s without static shapes", op)) == NULL;
  if (x->dtype != PL_DTYPE_F32 && x->dtype != PL_DTYPE_F64)
    return (*why = g_strdup_printf ("%s of %s", op, pl_dtype_name (x->dtype))) == NULL;
  g_autoptr (GError) local = NULL;
  int n = x->shape.rank - 2;
  if (!pl_conv_resolved_pads (node, c->pads, &local))
    return (*why = g_strdup_printf ("%s: %s", op, local->message)) == NULL;
  c->dtype = x->dtype;
  c->n = n;
  c->batch = xd[0];
  c->c_in = xd[1];
  c->c_out = od[1];
  c->group = pl_node_attr_int (node, "group", 1);
  const int64_t *v;
  int k;
  for (int i = 0; i < n; i++)
    {
      c->in[i] = xd[2 + i];
      c->kernel[i] = wd[2 + i];
      c->out[i] = od[2 + i];
      c->strides[i] = c->dilations[i] = 1;
    }
  if (pl_node_attr_ints (node, "strides", &v, &k) && k == n)
    memcpy (c->strides, v, sizeof (int64_t) * n);
  if (pl_node_attr_ints (node, "dilations", &v, &k) && k == n)
    memcpy (c->dilations, v, sizeof (int64_t) * n);
  return true;
}

/* The column matrix of one (image, group): a row per channel of the group
 * and kernel tap, a column per spatial position. */
static void
col_matrix (PlConvDesc *c, int64_t channels, const int64_t *positions)
{
  c->col_rows = channels;
  c->col_cols = 1;
  for (int i = 0; i < c->n; i++)
    {
      c->col_rows *= c->kernel[i];
      c->col_cols *= positions[i];
    }
}

bool
pl_conv_desc_from_node (const PlNode *conv, PlConvDesc *c, char **why)
{
  int64_t xd[PL_MAX_RANK], wd[PL_MAX_RANK];
  if (!window_desc (conv, c, xd, wd, why))
    return false;
  if (c->group < 1 || c->c_in % c->group || c->c_out % c->group || wd[1] != c->c_in / c->group)
    return (*why = g_strdup ("Conv: bad group")) == NULL;
  col_matrix (c, c->c_in / c->group, c->out);
  c->x_layout = conv->inputs[0]->layout;
  c->y_layout = conv->outputs[0]->layout;
  const char *impl = pl_node_attr_string (conv, "impl", "gemm");
  if (strcmp (impl, "gemm") == 0)
    c->impl = PL_CONV_IMPL_GEMM;
  else if (strcmp (impl, "direct") == 0)
    c->impl = PL_CONV_IMPL_DIRECT;
  else
    return (*why = g_strdup_printf ("Conv: unknown impl '%s' (gemm or direct)", impl)) == NULL;
  const int64_t *v;
  int k;
  if (pl_node_attr_ints (conv, "tile", &v, &k) && k == 3)
    memcpy (c->tile, v, sizeof c->tile);
  return true;
}

bool
pl_conv_transpose_desc_from_node (const PlNode *ct, PlConvDesc *c, char **why)
{
  int64_t xd[PL_MAX_RANK], wd[PL_MAX_RANK];
  if (!window_desc (ct, c, xd, wd, why))
    return false;
  c->transpose = true;
  if (c->n > 3)
    return (*why = g_strdup_printf ("ConvTranspose with %d spatial dims", c->n)) == NULL;
  if (c->group < 1 || c->c_in % c->group || wd[0] != c->c_in || wd[1] * c->group != c->c_out)
    return (*why = g_strdup ("ConvTranspose: bad group")) == NULL;
  col_matrix (c, c->c_out / c->group, c->in);
  c->x_layout = c->y_layout = PL_LAYOUT_NCHW;   /* the runtime reorders X, the epilogue Y */
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

/* A ConvTranspose: per image, cols_g = W_g^T X_g for every group g (one
 * GEMM batched over the groups, its desc in p->gemm; W is [C, M/g, k...],
 * so W_g is a (C/g) x (M/g * prod k) matrix), then the generated col2im
 * (conv-transpose.h). X and W are GEMM operands, read in the default
 * layout (gemm_slot); the raw result is NCHW, an epilogue reorders it. */
static bool
conv_transpose_desc (PlKernelPlan *p, PlLower *L, const PlNode *ct, char **why)
{
  PlConvDesc *c = &p->conv;
  PlGemmDesc *g = &p->gemm;
  if (!pl_conv_transpose_desc_from_node (ct, c, why))
    return false;
  int64_t cg = c->c_in / c->group;
  g->dtype = c->dtype;
  g->trans_a = true;
  g->M = c->col_rows;
  g->N = c->col_cols;
  g->K = cg;
  g->alpha = 1.0;
  g->batch_rank = 1;
  g->batch = g->batch_dims[0] = c->group;
  g->a_strides[0] = cg * c->col_rows;
  g->b_strides[0] = cg * c->col_cols;
  c->x_slot = g->b_slot = gemm_slot (L, ct->inputs[0]);
  c->w_slot = g->a_slot = gemm_slot (L, ct->inputs[1]);
  p->flops = 2 * c->batch * g->batch * g->M * g->N * g->K;
  GString *note = g_string_new ("conv-transpose gemm+col2im");
  if (c->n != 2)
    g_string_append_printf (note, ", %dd", c->n);
  if (c->group > 1)
    g_string_append_printf (note, ", group %" G_GINT64_FORMAT, c->group);
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

PlKernelPlan *
pl_plan_library (const char *name, PlNode *lib, PlNode *const *nodes, int n, PlValue *const *outputs, int n_out,
              GError **error)
{
  bool conv = lib->op == PL_OP_Conv || lib->op == PL_OP_ConvTranspose;
  PlKernelPlan *p = pl_plan_new (conv ? PL_PLAN_CONV : PL_PLAN_GEMM, name, nodes, n);
  PlLower L;
  pl_lower_init (&L, p, nodes, n);
  L.lib_node = lib;
  L.lib_value = lib->outputs[0];
  g_autoptr (GHashTable) absorbed = g_hash_table_new (NULL, NULL);
  g_autoptr (GHashTable) epi = g_hash_table_new (NULL, NULL);
  g_autofree char *why = NULL;
  int64_t d[PL_MAX_RANK];
  pl_lower_value_dims (lib->outputs[0], d);
  pl_lower_set_domain (&L, lib->outputs[0]->shape.rank, d);

  bool ok = lib->op == PL_OP_Conv            ? conv_desc (p, &L, lib, &why)
            : lib->op == PL_OP_ConvTranspose ? conv_transpose_desc (p, &L, lib, &why)
                                             : gemm_desc (p, &L, lib, absorbed, &why);
  if (ok && !epilogue_members (L.members, lib, absorbed, nodes, n, epi))
    ok = (why = g_strdup ("nodes besides the library call and its epilogue")) == NULL;
  bool extra = lib->n_inputs > 2 && lib->inputs[2];   /* Gemm's C, Conv's and ConvTranspose's bias */
  /* a GEMM (and a ConvTranspose's col2im) writes row-major: a result stored
   * in another layout goes through an epilogue that reorders it */
  bool raw_layout = lib->op == PL_OP_Conv || L.lib_value->layout == PL_LAYOUT_NCHW;
  bool plain = ok && !extra && n_out == 1 && outputs[0] == L.lib_value && raw_layout;
  if (ok && !plain)
    {
      /* the epilogue: a pointwise loop over the outputs reading the raw result */
      int64_t od[PL_MAX_RANK];
      if (!pl_lower_value_dims (outputs[0], od) || !pl_lower_dims_equal (outputs[0]->shape.rank, od, L.rank, L.dims))
        ok = (why = g_strdup ("epilogue of another shape than the library result")) == NULL;
      else
        {
          g_ptr_array_add (p->inputs, L.lib_value);
          p->lib_slot = (int) p->inputs->len - 1;
          g_hash_table_insert (L.slots, L.lib_value, GINT_TO_POINTER (p->lib_slot + 1));
          ok = pl_lower_outputs (&L, outputs, n_out);
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
              if (x->op == PL_SOP_LOAD && x->slot == p->lib_slot && (x->index != self || PL_INSTR_IS_GATHER (x)))
                p->in_place = false;
            }
          p->flops += pl_plan_loop_flops (p->loop);
        }
    }
  else if (ok)
    {
      g_ptr_array_add (p->outputs, outputs[0]);
      pl_plan_loop_free (p->loop);
      p->loop = NULL;
    }
  if (!ok)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s", why ? why : "cannot generate");
      pl_lower_clear (&L);
      pl_kernel_plan_free (p);
      return NULL;
    }
  pl_lower_clear (&L);
  return p;
}

