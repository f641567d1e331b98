/* ops-rnn.c — the recurrent ops RNN, GRU and LSTM (ONNX semantics up to
 * opset 14): shape inference and a reference in double. They are compute
 * ops that no backend generates, so the backends run this reference.
 *
 * One loop serves the three: for each direction, batch row and step, a cell
 * maps the previous hidden state (and LSTM's cell state) and one row of X to
 * the next state. The gate blocks of W, R and B are in ONNX's order: GRU
 * z, r, h; LSTM i, o, f, c; LSTM's peepholes P i, o, f.
 *
 * Choices the spec leaves open, made as onnxruntime makes them:
 * - sequence_lens: row b runs steps 0 .. L-1 (reverse: L-1 .. 0); Y is zero
 *   past L, and Y_h (Y_c) hold the state after the last step run — the
 *   initial state when L is 0.
 * - clip bounds the inputs of the gate activations (f and g), not the cell
 *   state that LSTM's h reads.
 * - activation_alpha and activation_beta are consumed in order by the
 *   activations that take them; missing ones default to the parameters of
 *   the ONNX op of the same name. A bidirectional node may list one
 *   direction's activations for both.
 * - input_forget couples LSTM's forget gate to its input gate: f = 1 - i.
 */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <string.h>

#include "ops-elementwise.h"
#include "ops-nn-private.h"

/* The inputs and outputs, in ONNX's order. */
enum { IN_X, IN_W, IN_R, IN_B, IN_SEQ_LENS, IN_INITIAL_H, IN_INITIAL_C, IN_P, N_IN };
enum { OUT_Y, OUT_Y_H, OUT_Y_C, N_OUT };

static const PlDType rnn_types[] = { PL_DTYPE_F16, PL_DTYPE_F32, PL_DTYPE_F64, PL_DTYPE_UNDEFINED };
static const PlDType seq_lens_types[] = { PL_DTYPE_I32, PL_DTYPE_UNDEFINED };

/* What an op's attributes and inputs say about its sizes. */
typedef struct {
  int   gates;        /* weight blocks per direction: 1 (RNN), 3 (GRU), 4 (LSTM) */
  int   n_acts;       /* activations per direction: 1 (f), 2 (f, g), 3 (f, g, h) */
  int   num_dir;      /* 2 for bidirectional */
  bool  reverse;      /* the one direction runs backward */
  bool  batch_major;  /* layout 1: X [batch, seq, input], states [batch, dir, hidden] */
  PlDim seq, batch, input, hidden;
} RnnSpec;

/* --- activations ------------------------------------------------------------------ */

typedef enum { ACT_UNARY, ACT_AFFINE, ACT_SCALED_TANH } ActKind;

typedef struct {
  ActKind kind;
  PlOp    op;           /* ACT_UNARY: the one-input op */
  double  alpha, beta;
} Activation;

/* The activations the spec lists; n_params: 1 takes alpha, 2 alpha and beta. */
static const struct {
  const char *name;
  ActKind     kind;
  PlOp        op;
  int         n_params;
  float       alpha, beta;
} activation_defs[] = {
  { "Relu", ACT_UNARY, PL_OP_Relu, 0, 0, 0 },
  { "Tanh", ACT_UNARY, PL_OP_Tanh, 0, 0, 0 },
  { "Sigmoid", ACT_UNARY, PL_OP_Sigmoid, 0, 0, 0 },
  { "Affine", ACT_AFFINE, PL_OP_OPAQUE, 2, 1.0f, 0.0f },
  { "LeakyRelu", ACT_UNARY, PL_OP_LeakyRelu, 1, 0.01f, 0 },
  { "ThresholdedRelu", ACT_UNARY, PL_OP_ThresholdedRelu, 1, 1.0f, 0 },
  { "ScaledTanh", ACT_SCALED_TANH, PL_OP_OPAQUE, 2, 1.0f, 1.0f },
  { "HardSigmoid", ACT_UNARY, PL_OP_HardSigmoid, 2, 0.2f, 0.5f },
  { "Elu", ACT_UNARY, PL_OP_Elu, 1, 1.0f, 0 },
  { "Softsign", ACT_UNARY, PL_OP_Softsign, 0, 0, 0 },
  { "Softplus", ACT_UNARY, PL_OP_Softplus, 0, 0, 0 },
};

/* The spec's defaults: RNN f = Tanh; GRU f, g = Sigmoid, Tanh; LSTM adds h = Tanh. */
static const char *const default_acts[] = { "Sigmoid", "Tanh", "Tanh" };

static double
activate (const Activation *a, double x)
{
  switch (a->kind)
    {
    case ACT_AFFINE:
      return a->alpha * x + a->beta;
    case ACT_SCALED_TANH:
      return a->alpha * tanh (a->beta * x);
    default:
      return pl_unary_apply_f64 (a->op, x, a->alpha, a->beta);
    }
}

/* Resolves name (any case, as onnxruntime) into *a, taking its parameters
 * from alphas[*ia], betas[*ib] while there are any. */
static bool
parse_activation (const char *name, const float *alphas, int n_alpha, int *ia, const float *betas, int n_beta,
                  int *ib, Activation *a, GError **error)
{
  for (size_t k = 0; k < G_N_ELEMENTS (activation_defs); k++)
    {
      if (g_ascii_strcasecmp (name, activation_defs[k].name) != 0)
        continue;
      int n = activation_defs[k].n_params;
      *a = (Activation) { .kind = activation_defs[k].kind, .op = activation_defs[k].op,
                          .alpha = activation_defs[k].alpha, .beta = activation_defs[k].beta };
      if (n >= 1 && *ia < n_alpha)
        a->alpha = alphas[(*ia)++];
      if (n >= 2 && *ib < n_beta)
        a->beta = betas[(*ib)++];
      return true;
    }
  g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "activation '%s' is not supported", name);
  return false;
}

/* acts[d][k]: activation k (f, g, h) of direction d. */
static bool
read_activations (const PlNode *node, const RnnSpec *s, Activation acts[2][3], GError **error)
{
  const PlAttr *names = pl_node_attr (node, "activations");
  const float *alphas = NULL, *betas = NULL;
  int n_alpha = 0, n_beta = 0, ia = 0, ib = 0;
  pl_node_attr_floats (node, "activation_alpha", &alphas, &n_alpha);
  pl_node_attr_floats (node, "activation_beta", &betas, &n_beta);
  int n = names ? (names->type == PL_ATTR_STRINGS ? names->strings.n : -1) : 0;
  if (names && n != s->n_acts && n != s->n_acts * s->num_dir)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "activations must list %d names per direction, not %d",
                   s->n_acts, n);
      return false;
    }
  for (int d = 0; d < s->num_dir; d++)
    for (int k = 0; k < s->n_acts; k++)
      {
        /* one direction's list serves both */
        if (names && d * s->n_acts + k >= n)
          acts[d][k] = acts[0][k];
        else
          {
            /* RNN's only activation is Tanh, the others' first Sigmoid */
            const char *name = names ? names->strings.v[d * s->n_acts + k]
                               : s->gates == 1 ? "Tanh" : default_acts[k];
            if (!parse_activation (name, alphas, n_alpha, &ia, betas, n_beta, &ib, &acts[d][k], error))
              return false;
          }
      }
  return true;
}

/* --- shapes ------------------------------------------------------------------------ */

static PlDim
dim_times (PlDim d, int k)
{
  return pl_dim_is_static (d) ? pl_dim_static (d.size * k) : pl_dim_unknown ();
}

/* Fails when got (NULL: an absent input) has another rank than `rank` or a
 * static dim other than want's; unknown dims match anything. */
static bool
expect_shape (const PlShape *got, const char *what, int rank, const PlDim *want, const RnnSpec *s, GError **error)
{
  if (!got || got->rank == PL_RANK_UNKNOWN)
    return true;
  if (got->rank != rank)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s must have rank %d, not %d", what, rank, got->rank);
      return false;
    }
  for (int i = 0; i < rank; i++)
    if (pl_dim_is_static (got->dims[i]) && pl_dim_is_static (want[i]) && got->dims[i].size != want[i].size)
      {
        PlShape w = { .rank = rank };
        memcpy (w.dims, want, rank * sizeof *want);
        g_autofree char *gs = pl_shape_to_string (got), *ws = pl_shape_to_string (&w);
        g_autofree char *hs = pl_dim_is_static (s->hidden) ? g_strdup_printf ("%" G_GINT64_FORMAT, s->hidden.size)
                                                           : g_strdup ("?");
        g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s is %s, expected %s (hidden_size %s, %d direction%s)",
                     what, gs, ws, hs, s->num_dir, s->num_dir > 1 ? "s" : "");
        return false;
      }
  return true;
}

/* The attributes, and the sizes X, R and W give; shapes[i] is input i's
 * shape, NULL when absent. */
static bool
read_spec (const PlNode *node, const PlShape *const *shapes, RnnSpec *s, GError **error)
{
  *s = (RnnSpec) { .gates = node->op == PL_OP_LSTM ? 4 : node->op == PL_OP_GRU ? 3 : 1,
                   .n_acts = node->op == PL_OP_LSTM ? 3 : node->op == PL_OP_GRU ? 2 : 1,
                   .seq = pl_dim_unknown (), .batch = pl_dim_unknown (), .input = pl_dim_unknown (),
                   .hidden = pl_dim_unknown () };
  const char *direction = pl_node_attr_string (node, "direction", "forward");
  int64_t layout = pl_node_attr_int (node, "layout", 0), hidden = pl_node_attr_int (node, "hidden_size", -1);
  if (strcmp (direction, "forward") && strcmp (direction, "reverse") && strcmp (direction, "bidirectional"))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID,
                   "direction '%s' is not forward, reverse or bidirectional", direction);
      return false;
    }
  if (layout != 0 && layout != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "layout must be 0 or 1, not %" G_GINT64_FORMAT, layout);
      return false;
    }
  if (pl_node_attr (node, "hidden_size") && hidden <= 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "hidden_size must be positive, not %" G_GINT64_FORMAT, hidden);
      return false;
    }
  if (pl_node_attr (node, "clip") && !(pl_node_attr_float (node, "clip", 0) > 0))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "clip must be positive");
      return false;
    }
  s->num_dir = strcmp (direction, "bidirectional") == 0 ? 2 : 1;
  s->reverse = strcmp (direction, "reverse") == 0;
  s->batch_major = layout == 1;

  static const char *const required[] = { "X", "W", "R" };
  for (int i = IN_X; i <= IN_R; i++)
    if (!shapes[i])
      {
        g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "input %d (%s) is missing", i, required[i]);
        return false;
      }
  const PlShape *x = shapes[IN_X], *w = shapes[IN_W], *r = shapes[IN_R];
  if (x->rank == 3)
    {
      s->seq = x->dims[s->batch_major ? 1 : 0];
      s->batch = x->dims[s->batch_major ? 0 : 1];
      s->input = x->dims[2];
    }
  /* without hidden_size, R's last dim, else W's rows per gate */
  if (hidden > 0)
    s->hidden = pl_dim_static (hidden);
  else if (r->rank == 3)
    s->hidden = r->dims[2];
  else if (w->rank == 3 && pl_dim_is_static (w->dims[1]) && w->dims[1].size % s->gates == 0)
    s->hidden = pl_dim_static (w->dims[1].size / s->gates);

  PlDim nd = pl_dim_static (s->num_dir), gh = dim_times (s->hidden, s->gates);
  PlDim state[3] = { nd, s->batch, s->hidden };
  if (s->batch_major)
    state[0] = s->batch, state[1] = nd;
  PlDim xdims[3] = { s->seq, s->batch, s->input };
  if (s->batch_major)
    xdims[0] = s->batch, xdims[1] = s->seq;
  return expect_shape (x, "X", 3, xdims, s, error)
         && expect_shape (w, "W", 3, (PlDim[]) { nd, gh, s->input }, s, error)
         && expect_shape (r, "R", 3, (PlDim[]) { nd, gh, s->hidden }, s, error)
         && expect_shape (shapes[IN_B], "B", 2, (PlDim[]) { nd, dim_times (s->hidden, 2 * s->gates) }, s, error)
         && expect_shape (shapes[IN_SEQ_LENS], "sequence_lens", 1, &s->batch, s, error)
         && expect_shape (shapes[IN_INITIAL_H], "initial_h", 3, state, s, error)
         && expect_shape (shapes[IN_INITIAL_C], "initial_c", 3, state, s, error)
         && expect_shape (shapes[IN_P], "P", 2, (PlDim[]) { nd, dim_times (s->hidden, 3) }, s, error);
}

/* Y's shape; Y_h's and Y_c's when `state`. */
static PlShape
output_shape (const RnnSpec *s, bool state)
{
  PlDim nd = pl_dim_static (s->num_dir);
  if (state)
    return s->batch_major ? (PlShape) { 3, { s->batch, nd, s->hidden } } : (PlShape) { 3, { nd, s->batch, s->hidden } };
  return s->batch_major ? (PlShape) { 4, { s->batch, s->seq, nd, s->hidden } }
                        : (PlShape) { 4, { s->seq, nd, s->batch, s->hidden } };
}

static bool
rnn_infer (PlNode *node, GError **error)
{
  const PlShape *shapes[N_IN];
  for (int i = 0; i < N_IN; i++)
    shapes[i] = pl_input (node, i) ? &pl_input (node, i)->shape : NULL;
  if (!pl_require_dtype (node, IN_X, rnn_types, error) || !pl_require_dtype (node, IN_SEQ_LENS, seq_lens_types, error))
    return false;
  for (int i = IN_W; i < N_IN; i++)
    if (i != IN_SEQ_LENS && !pl_ew_same_dtype (node, IN_X, i, error))
      return false;
  RnnSpec s;
  Activation acts[2][3];
  if (!read_spec (node, shapes, &s, error) || !read_activations (node, &s, acts, error))
    return false;
  PlDType t = pl_input (node, IN_X)->dtype;
  PlShape y = output_shape (&s, false), state = output_shape (&s, true);
  pl_set_output (node, OUT_Y, t, &y);
  pl_set_output (node, OUT_Y_H, t, &state);
  pl_set_output (node, OUT_Y_C, t, &state);
  return true;
}

/* --- the recurrence ----------------------------------------------------------------- */

/* One direction's weights (as doubles) and scratch. */
typedef struct {
  const RnnSpec    *s;
  const Activation *act;      /* f, g, h */
  int64_t           hidden, input;
  const double     *w, *r;    /* [gates * hidden, input], [gates * hidden, hidden] */
  const double     *wb, *rb;  /* [gates * hidden] each */
  const double     *p;        /* [3 * hidden]: i, o, f */
  double            clip;
  bool              linear_before_reset, input_forget;
  double           *gx, *gh;  /* scratch [gates * hidden]: X and H through the gate blocks */
  double           *rh;       /* scratch [hidden]: GRU's r (.) H */
} Cell;

/* y[j] = b[j] + sum_k m[j, k] v[k] for j < rows. */
static void
affine_rows (double *y, const double *m, const double *v, const double *b, int64_t rows, int64_t cols)
{
  for (int64_t j = 0; j < rows; j++)
    {
      double acc = b[j];
      for (int64_t k = 0; k < cols; k++)
        acc += m[j * cols + k] * v[k];
      y[j] = acc;
    }
}

static double
gate (const Cell *c, int k, double v)
{
  return activate (&c->act[k], CLAMP (v, -c->clip, c->clip));
}

/* Ht = f(Xt W^T + Ht-1 R^T + Wb + Rb) */
static void
rnn_step (Cell *c, double *h, double *cs)
{
  (void) cs;
  for (int64_t j = 0; j < c->hidden; j++)
    h[j] = gate (c, 0, c->gx[j] + c->gh[j]);
}

/* z, r = f(...); h~ = g(Xt Wh^T + (r (.) Ht-1) Rh^T + Rbh + Wbh), or with
 * linear_before_reset g(Xt Wh^T + r (.) (Ht-1 Rh^T + Rbh) + Wbh);
 * Ht = (1 - z) (.) h~ + z (.) Ht-1 */
static void
gru_step (Cell *c, double *h, double *cs)
{
  (void) cs;
  int64_t n = c->hidden;
  double *z = c->gx, *r = c->gx + n, *xh = c->gx + 2 * n, *hh = c->gh + 2 * n;
  for (int64_t j = 0; j < n; j++)
    {
      z[j] = gate (c, 0, z[j] + c->gh[j]);
      r[j] = gate (c, 0, r[j] + c->gh[n + j]);
    }
  if (c->linear_before_reset)
    for (int64_t j = 0; j < n; j++)
      hh[j] *= r[j];
  else
    {
      for (int64_t j = 0; j < n; j++)
        c->rh[j] = r[j] * h[j];
      affine_rows (hh, c->r + 2 * n * n, c->rh, c->rb + 2 * n, n, n);
    }
  for (int64_t j = 0; j < n; j++)
    h[j] = (1 - z[j]) * gate (c, 1, xh[j] + hh[j]) + z[j] * h[j];
}

/* i = f(.. + Pi (.) Ct-1), f = f(.. + Pf (.) Ct-1), c~ = g(..),
 * Ct = f (.) Ct-1 + i (.) c~, o = f(.. + Po (.) Ct), Ht = o (.) h(Ct) */
static void
lstm_step (Cell *c, double *h, double *cs)
{
  int64_t n = c->hidden;
  for (int64_t j = 0; j < n; j++)
    {
      double a[4];
      for (int k = 0; k < 4; k++)
        a[k] = c->gx[k * n + j] + c->gh[k * n + j];
      double i = gate (c, 0, a[0] + c->p[j] * cs[j]);
      double f = c->input_forget ? 1 - i : gate (c, 0, a[2] + c->p[2 * n + j] * cs[j]);
      double ct = f * cs[j] + i * gate (c, 1, a[3]);
      double o = gate (c, 0, a[1] + c->p[n + j] * ct);
      cs[j] = ct;
      h[j] = o * activate (&c->act[2], ct);
    }
}

/* Element offsets of X's row (t, b), Y's row (t, d, b) and a state's row (d, b). */
static int64_t
x_row (const RnnSpec *s, int64_t t, int64_t b)
{
  return (s->batch_major ? b * s->seq.size + t : t * s->batch.size + b) * s->input.size;
}

static int64_t
y_row (const RnnSpec *s, int64_t t, int d, int64_t b)
{
  int64_t nd = s->num_dir;
  return (s->batch_major ? (b * s->seq.size + t) * nd + d : (t * nd + d) * s->batch.size + b) * s->hidden.size;
}

static int64_t
state_row (const RnnSpec *s, int d, int64_t b)
{
  return (s->batch_major ? b * s->num_dir + d : d * s->batch.size + b) * s->hidden.size;
}

/* Runs direction d of every batch row: h and cs hold the initial states and
 * become the final ones; y (may be NULL) gets each step's hidden state. */
static void
run_direction (Cell *c, int d, const double *x, const int64_t *lens, double *h, double *cs, double *y)
{
  const RnnSpec *s = c->s;
  bool backward = d == 1 || s->reverse;
  int64_t n = c->hidden, g = s->gates * n;
  void (*step) (Cell *, double *, double *) = s->gates == 4 ? lstm_step : s->gates == 3 ? gru_step : rnn_step;
  for (int64_t b = 0; b < s->batch.size; b++)
    {
      double *hb = h + state_row (s, d, b), *cb = cs + state_row (s, d, b);
      int64_t len = lens ? lens[b] : s->seq.size;
      for (int64_t k = 0; k < len; k++)
        {
          int64_t t = backward ? len - 1 - k : k;
          affine_rows (c->gx, c->w, x + x_row (s, t, b), c->wb, g, c->input);
          affine_rows (c->gh, c->r, hb, c->rb, g, n);
          step (c, hb, cb);
          if (y)
            memcpy (y + y_row (s, t, d, b), hb, n * sizeof *hb);
        }
    }
}

/* A g_malloc'd copy of t as doubles, or n zeros when t is absent. */
static double *
load_or_zeros (const PlTensor *t, int64_t n)
{
  return t ? pl_nn_load_f64 (t) : g_new0 (double, MAX (n, 1));
}

/* sequence_lens as int64, each in [0, seq]; NULL (and true) when absent. */
static bool
read_lens (const PlTensor *t, const RnnSpec *s, int64_t **lens, GError **error)
{
  *lens = NULL;
  if (!t)
    return true;
  int n;
  int64_t *v = pl_tensor_to_ints (t, &n);
  for (int b = 0; b < n; b++)
    if (v[b] < 0 || v[b] > s->seq.size)
      {
        g_set_error (error, PL_ERROR, PL_ERROR_INVALID,
                     "sequence_lens[%d] is %" G_GINT64_FORMAT ", outside [0, %" G_GINT64_FORMAT "]", b, v[b],
                     s->seq.size);
        g_free (v);
        return false;
      }
  *lens = v;
  return true;
}

static bool
rnn_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *in[N_IN] = { NULL };
  PlShape shapes[N_IN];
  const PlShape *sp[N_IN] = { NULL };
  for (int i = 0; i < N_IN && i < node->n_inputs; i++)
    if ((in[i] = inputs[i]))
      shapes[i] = pl_tensor_shape (in[i]), sp[i] = &shapes[i];
  RnnSpec s;
  Activation acts[2][3];
  g_autofree int64_t *lens = NULL;
  if (!read_spec (node, sp, &s, error) || !read_activations (node, &s, acts, error)
      || !read_lens (in[IN_SEQ_LENS], &s, &lens, error))
    return false;

  PlShape ys = output_shape (&s, false), hs = output_shape (&s, true);
  int64_t ydims[4], hdims[3], n = s.hidden.size, g = s.gates * n;
  pl_shape_get_dims (&ys, ydims);
  pl_shape_get_dims (&hs, hdims);
  /* only the outputs the node has; inputs[] and outputs[] hold n_inputs and n_outputs slots */
  PlTensor *out[N_OUT] = { NULL };
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i]
        && !(out[i] = outputs[i] = pl_out_new (in[IN_X]->dtype, i == OUT_Y ? 4 : 3, i == OUT_Y ? ydims : hdims, error)))
      return false;

  int64_t state_n = pl_shape_numel (&hs);
  g_autofree double *x = pl_nn_load_f64 (in[IN_X]), *w = pl_nn_load_f64 (in[IN_W]), *r = pl_nn_load_f64 (in[IN_R]);
  g_autofree double *bias = load_or_zeros (in[IN_B], s.num_dir * 2 * g);
  g_autofree double *p = load_or_zeros (in[IN_P], s.num_dir * 3 * n);
  g_autofree double *h = load_or_zeros (in[IN_INITIAL_H], state_n), *cs = load_or_zeros (in[IN_INITIAL_C], state_n);
  g_autofree double *y = out[OUT_Y] ? g_new0 (double, MAX (pl_shape_numel (&ys), 1)) : NULL;
  g_autofree double *scratch = g_new (double, 2 * g + n + 1);
  for (int d = 0; d < s.num_dir; d++)
    {
      Cell c = {
        .s = &s, .act = acts[d], .hidden = n, .input = s.input.size,
        .w = w + d * g * s.input.size, .r = r + d * g * n, .wb = bias + d * 2 * g, .rb = bias + d * 2 * g + g,
        .p = p + d * 3 * n, .clip = pl_node_attr_float (node, "clip", INFINITY),
        .linear_before_reset = pl_node_attr_int (node, "linear_before_reset", 0) != 0,
        .input_forget = pl_node_attr_int (node, "input_forget", 0) != 0,
        .gx = scratch, .gh = scratch + g, .rh = scratch + 2 * g,
      };
      run_direction (&c, d, x, lens, h, cs, y);
    }
  const double *results[N_OUT] = { y, h, cs };
  for (int i = 0; i < N_OUT; i++)
    if (out[i])
      pl_nn_store_f64 (out[i], results[i]);
  return true;
}

void
pl_ops_register_rnn (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_RNN, 3, 6, 0, 2, rnn_infer, rnn_eval },
    { PL_OP_GRU, 3, 6, 0, 2, rnn_infer, rnn_eval },
    { PL_OP_LSTM, 3, 8, 0, 3, rnn_infer, rnn_eval },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}
