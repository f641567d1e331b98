/* test-pass-grad.c — the grad pass (reverse-mode autodiff).
 *
 * Every gradient rule is checked against central finite differences: a
 * small f64 graph with a scalar loss (the op's output times a random
 * constant, summed), the pass run with outputs=grads, the gradient outputs
 * evaluated by the reference interpreter and compared element by element
 * with (L(p + e) - L(p - e)) / 2e computed on the forward graph. Then: an MLP
 * whose loss falls over two SGD steps, the transformer and ResNet training
 * samples through the pass manager's check (and fuse-library's backward
 * conv patterns), the outputs the pass adds, and its errors. */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <string.h>

#include "builtin-passes.h"
#include "cost.h"
#include "pass-manager.h"
#include "random-graph.h"
#include "test-util.h"
#include "text-format.h"

/* Runs the grad pass on g with "key=value" settings (NULL-terminated). */
static bool
apply_grad (PlGraph *g, const char *const *settings, PlPassReport **report, GError **error)
{
  const PlPass *pass = pl_pass_find ("grad");
  g_assert_nonnull (pass);
  g_autoptr (PlPassArgs) args = pl_pass_args_new (pass);
  for (int i = 0; settings && settings[i]; i++)
    {
      g_auto (GStrv) kv = g_strsplit (settings[i], "=", 2);
      g_assert_true (pl_pass_args_set (args, kv[0], kv[1], NULL));
    }
  g_autoptr (PlPassReport) r = pl_pass_report_new ();
  bool ok = pass->run (g, args, r, pass->user_data, error);
  if (report)
    *report = g_steal_pointer (&r);
  return ok;
}

static int
output_index (const PlGraph *g, const char *name)
{
  for (guint i = 0; i < g->outputs->len; i++)
    if (strcmp (((PlValue *) g->outputs->pdata[i])->name, name) == 0)
      return (int) i;
  g_error ("no output named '%s'", name);
  return -1;
}

static PlTensor **
run_graph (const PlGraph *g, PlTensor *const *inputs)
{
  g_autoptr (GError) error = NULL;
  PlTensor **out = pl_interp_run (g, inputs, NULL, &error);
  g_assert_no_error (error);
  return out;
}

static PlTensor **
inputs_for (const PlGraph *g)
{
  g_autoptr (GError) error = NULL;
  PlTensor **in = pl_random_inputs (g, 7, 1, &error);
  g_assert_no_error (error);
  return in;
}

/* The sum of g's first output on inputs. */
static double
loss_of (const PlGraph *g, PlTensor *const *inputs)
{
  PlTensor **out = run_graph (g, inputs);
  double s = 0;
  for (int64_t i = 0; i < out[0]->numel; i++)
    s += pl_tensor_get_f64 (out[0], i);
  pl_interp_free_outputs (out, (int) g->outputs->len);
  return s;
}

/* The tensor holding parameter `name` of g: its constant data (owned by g
 * alone, so a test may change it in place) or its input in inputs. */
static PlTensor *
param_tensor (const PlGraph *g, PlTensor *const *inputs, const char *name)
{
  PlValue *v = pl_graph_find_value (g, name);
  g_assert_nonnull (v);
  if (v->constant)
    {
      g_assert_cmpint (v->constant->ref_count, ==, 1);
      return v->constant;
    }
  for (guint i = 0; i < g->inputs->len; i++)
    if (g->inputs->pdata[i] == v)
      return inputs[i];
  g_error ("'%s' is no parameter", name);
  return NULL;
}

/* Compares every gradient output "<p>.grad" of g (the grad pass's result
 * on a copy of fwd) with central differences with step eps on fwd:
 * |analytic - fd| <= atol + rtol * max(|analytic|, |fd|), on up to 40
 * elements of each parameter. Returns the parameters compared. */
static int
compare_with_fd (PlGraph *fwd, const PlGraph *g, double eps, double rtol, double atol, const char *what)
{
  g_autoptr (GError) error = NULL;
  if (!pl_graph_verify (g, &error))
    g_error ("the training graph does not verify: %s\n%s", error->message, what);
  PlTensor **inputs = inputs_for (fwd);
  PlTensor **out = run_graph (g, inputs);
  int n_params = 0;
  for (guint o = 0; o < g->outputs->len; o++)
    {
      const char *gname = ((PlValue *) g->outputs->pdata[o])->name;
      if (!g_str_has_suffix (gname, ".grad"))
        continue;
      g_autofree char *name = g_strndup (gname, strlen (gname) - 5);
      const PlTensor *grad = out[o];
      PlTensor *t = param_tensor (fwd, inputs, name);
      g_assert_cmpint (grad->numel, ==, t->numel);
      int64_t stride = MAX (1, t->numel / 40);
      for (int64_t i = 0; i < t->numel; i += stride)
        {
          double x = pl_tensor_get_f64 (t, i);
          pl_tensor_set_f64 (t, i, x + eps);
          double xp = pl_tensor_get_f64 (t, i), lp = loss_of (fwd, inputs);
          pl_tensor_set_f64 (t, i, x - eps);
          double xm = pl_tensor_get_f64 (t, i), lm = loss_of (fwd, inputs);
          pl_tensor_set_f64 (t, i, x);
          double fd = (lp - lm) / (xp - xm), an = pl_tensor_get_f64 (grad, i);
          /* roundoff in the loss, amplified by 1/eps, bounds what FD can resolve */
          double noise = 1e-15 * MAX (fabs (lp), fabs (lm)) / (xp - xm);
          if (!(fabs (an - fd) <= atol + noise + rtol * MAX (fabs (an), fabs (fd))))
            g_error ("d loss / d %s[%" G_GINT64_FORMAT "]: grad %.10g, finite differences %.10g (loss %g)\n%s", name,
                     i, an, fd, lp, what);
        }
      n_params++;
    }
  pl_interp_free_outputs (out, (int) g->outputs->len);
  pl_interp_free_outputs (inputs, (int) fwd->inputs->len);
  return n_params;
}

/* Checks the gradients of the comma-listed params of the graph in text. */
static void
check_grads_full (const char *text, const char *params, double eps, double rtol, double atol)
{
  g_autoptr (PlGraph) fwd = pl_test_parse (text);
  g_autoptr (PlGraph) g = pl_test_parse (text);
  g_autoptr (GError) error = NULL;
  g_autofree char *pset = g_strdup_printf ("params=%s", params);
  if (!apply_grad (g, (const char *const[]) { pset, "outputs=grads", NULL }, NULL, &error))
    g_error ("grad failed: %s\n%s", error->message, text);
  g_auto (GStrv) names = g_strsplit (params, ",", -1);
  g_assert_cmpint (compare_with_fd (fwd, g, eps, rtol, atol, text), ==, g_strv_length (names));
}

static void
check_grads (const char *text, const char *params)
{
  check_grads_full (text, params, 1e-6, 1e-6, 1e-9);
}

/* A graph of body whose loss is sum(y * w) for a random w of y's shape. */
static char *
with_loss (const char *body, const char *y, const char *dtype_shape)
{
  return g_strdup_printf ("graph t opset 17 {\n%s\n"
                          "  const loss_w: %s = random(seed=99)\n"
                          "  loss_p = Mul(%s, loss_w)\n"
                          "  loss = ReduceSum(loss_p) {keepdims=0}\n"
                          "  output loss\n}\n",
                          body, dtype_shape, y);
}

#define CHECK_BODY(body, y, type, params)                        \
  do                                                             \
    {                                                            \
      g_autofree char *text_ = with_loss (body, y, type);        \
      check_grads (text_, params);                               \
    }                                                            \
  while (0)

/* --- elementwise -------------------------------------------------------------- */

static void
test_binary_broadcast (void)
{
  CHECK_BODY ("  const a: f64[2, 3] = random(seed=1)\n"
              "  const b: f64[3] = random(seed=2, lo=0.5, hi=1.5)\n"
              "  const c: f64[2, 1] = random(seed=3, lo=0.5, hi=1.5)\n"
              "  s = Add(a, b)\n"
              "  d = Sub(s, c)\n"
              "  e = Sub(b, d)\n"
              "  m = Mul(e, b)\n"
              "  q = Div(m, c)\n"
              "  r = Div(b, c)\n"
              "  y = Add(q, r)\n",
              "y", "f64[2, 3]", "a,b,c");
  /* a value used twice by one node, and by several nodes */
  CHECK_BODY ("  const a: f64[4] = random(seed=1)\n"
              "  sq = Mul(a, a)\n"
              "  y = Add(sq, a)\n",
              "y", "f64[4]", "a");
  /* variadic Sum and Mean, a scalar operand */
  CHECK_BODY ("  const a: f64[2, 3] = random(seed=1)\n"
              "  const b: f64[3] = random(seed=2)\n"
              "  const c: f64[] = 0.7\n"
              "  s = Sum(a, b, c)\n"
              "  y = Mean(s, a, b)\n",
              "y", "f64[2, 3]", "a,b,c");
}

static void
test_unary_math (void)
{
  CHECK_BODY ("  const a: f64[2, 3] = random(seed=1, lo=0.5, hi=2)\n"
              "  const b: f64[2, 3] = random(seed=4, lo=0.5, hi=1.5)\n"
              "  const three: f64[] = 3.0\n"
              "  const two: i64[] = 2\n"
              "  n1 = Neg(a)\n"
              "  e1 = Exp(n1)\n"
              "  l1 = Log(a)\n"
              "  s1 = Sqrt(a)\n"
              "  r1 = Reciprocal(a)\n"
              "  p1 = Pow(a, three)\n"
              "  p2 = Pow(a, b)\n"
              "  p3 = Pow(a, two)\n"
              "  t1 = Add(e1, l1)\n"
              "  t2 = Add(t1, s1)\n"
              "  t3 = Add(t2, r1)\n"
              "  t4 = Add(t3, p1)\n"
              "  t5 = Add(t4, p2)\n"
              "  y = Add(t5, p3)\n",
              "y", "f64[2, 3]", "a,b");
}

static void
test_activations (void)
{
  CHECK_BODY ("  const a: f64[3, 4] = random(seed=1, lo=-2, hi=2)\n"
              "  const b: f64[4] = random(seed=2, lo=-2, hi=2)\n"
              "  const lo: f64[] = -0.8\n"
              "  const hi: f64[] = 0.9\n"
              "  const four: f64[] = 4.0\n"
              "  a4 = Mul(a, four)\n"
              "  r1 = Relu(a)\n"
              "  r2 = Sigmoid(a)\n"
              "  r3 = Tanh(a)\n"
              "  r4 = Erf(a)\n"
              "  r5 = Gelu(a)\n"
              "  r6 = Gelu(a) {approximate=\"tanh\"}\n"
              "  r7 = LeakyRelu(a) {alpha=0.1}\n"
              "  r8 = Abs(a)\n"
              "  r9 = Softplus(a)\n"
              "  r10 = Max(a, b)\n"
              "  r11 = Min(a, b)\n"
              "  r12 = Identity(a)\n"
              "  r13 = Dropout(a)\n"
              "  r14 = Clip(a, lo, hi)\n"
              "  r15 = Sin(a)\n"
              "  r16 = Cos(b)\n"
              "  r17 = Elu(a) {alpha=0.7}\n"
              "  r18 = Selu(a)\n"
              "  r19 = HardSigmoid(a) {alpha=0.3}\n"
              "  r20 = HardSwish(a4)\n"
              "  r21 = Mish(a)\n"
              "  r22 = Softsign(a)\n"
              "  s1 = Sum(r1, r2, r3, r4, r5, r6, r7, r8)\n"
              "  s2 = Sum(r17, r18, r19, r20, r21, r22)\n"
              "  y = Sum(s1, s2, r9, r10, r11, r12, r13, r14, r15, r16)\n",
              "y", "f64[3, 4]", "a,b");
}

static void
test_cast (void)
{
  /* f32 -> f64: exact in the forward direction; f64 -> f32 -> f64 rounds,
   * so that one takes a coarse step and a loose tolerance */
  g_autofree char *up = with_loss ("  const a: f32[2, 3] = random(seed=1)\n"
                                   "  c = Cast(a) {to=11}\n"
                                   "  y = Exp(c)\n",
                                   "y", "f64[2, 3]");
  check_grads_full (up, "a", 1e-2, 1e-4, 1e-6);
  g_autofree char *round_trip = with_loss ("  const a: f64[2, 3] = random(seed=1)\n"
                                           "  c = Cast(a) {to=1}\n"
                                           "  t = Tanh(c)\n"
                                           "  y = Cast(t) {to=11}\n",
                                           "y", "f64[2, 3]");
  check_grads_full (round_trip, "a", 1e-3, 1e-3, 1e-5);
}

/* --- data movement ---------------------------------------------------------------- */

static void
test_shape_ops (void)
{
  CHECK_BODY ("  const a: f64[2, 3, 4] = random(seed=1)\n"
              "  const b: f64[3, 1] = random(seed=2)\n"
              "  const shp: i64[2] = [6, 4]\n"
              "  const ax0: i64[1] = [0]\n"
              "  const big: i64[2] = [4, 6]\n"
              "  const eshape: i64[2] = [4, 3]\n"
              "  r1 = Reshape(a, shp)\n"
              "  t1: f64[4, 6] = Transpose(r1) {perm=[1, 0]}\n"
              "  f1: f64[2, 12] = Flatten(a) {axis=1}\n"
              "  f2 = Reshape(f1, big)\n"
              "  u1 = Unsqueeze(t1, ax0)\n"
              "  s1 = Squeeze(u1, ax0)\n"
              "  c1: f64[4, 12] = Concat(t1, s1) {axis=1}\n"
              "  c2: f64[4, 18] = Concat(c1, f2) {axis=-1}\n"
              "  bt: f64[1, 3] = Transpose(b)\n"
              "  e1: f64[4, 3] = Expand(bt, eshape)\n"
              "  y: f64[4, 21] = Concat(c2, e1) {axis=1}\n",
              "y", "f64[4, 21]", "a,b");
}

static void
test_slice_pad_split (void)
{
  CHECK_BODY ("  const a: f64[4, 6] = random(seed=1)\n"
              "  const st: i64[2] = [1, -1]\n"
              "  const en: i64[2] = [3, -100]\n"
              "  const ax: i64[2] = [0, 1]\n"
              "  const sp: i64[2] = [1, -2]\n"
              "  const st1: i64[1] = [2]\n"
              "  const en1: i64[1] = [100]\n"
              "  const ax1: i64[1] = [1]\n"
              "  const pads: i64[4] = [1, 0, 0, 2]\n"
              "  const parts: i64[2] = [1, 3]\n"
              "  const ax0: i64[1] = [0]\n"
              "  const pst: i64[2] = [3, 1]\n"
              "  const pen: i64[2] = [5, 4]\n"
              "  s1: f64[2, 3] = Slice(a, st, en, ax, sp)\n"
              "  s2: f64[4, 4] = Slice(a, st1, en1, ax1)\n"
              "  p1: f64[5, 6] = Pad(s2, pads)\n"
              "  h1, h2 = Split(s2, parts) {axis=1}\n"
              "  q: f64[4, 3] = Mul(h2, h2)\n"
              "  r: f64[2, 3] = Slice(q, st1, en1, ax0)\n"
              "  t: f64[2, 3] = Add(r, s1)\n"
              "  p1s: f64[2, 3] = Slice(p1, pst, pen, ax)\n"
              "  y = Add(t, p1s)\n",
              "y", "f64[2, 3]", "a");
}

/* Pad in every mode (reflect, edge and wrap: outputs sharing an input
 * element add up; pads longer than the axis; a constant Pad that crops one
 * side), and Tile. */
static void
test_pad_modes_tile (void)
{
  CHECK_BODY ("  const a: f64[3, 4] = random(seed=2)\n"
              "  const p: i64[4] = [1, 2, 2, 3]\n"
              "  const long: i64[4] = [4, 0, 0, 6]\n"
              "  const crop: i64[4] = [-1, 2, 1, -1]\n"
              "  const reps: i64[2] = [2, 3]\n"
              "  r: f64[6, 9] = Pad(a, p) {mode=\"reflect\"}\n"
              "  e: f64[6, 9] = Pad(a, p) {mode=\"edge\"}\n"
              "  w: f64[6, 9] = Pad(a, p) {mode=\"wrap\"}\n"
              "  rl: f64[7, 10] = Pad(a, long) {mode=\"reflect\"}\n"
              "  c: f64[3, 5] = Pad(a, crop)\n"
              "  t: f64[6, 12] = Tile(a, reps)\n"
              "  re = Mul(r, e)\n  rew = Add(re, w)\n"
              "  s1 = ReduceSum(rew) {keepdims=0}\n  s2 = ReduceSumSquare(rl) {keepdims=0}\n"
              "  s3 = ReduceSumSquare(c) {keepdims=0}\n  s4 = ReduceSumSquare(t) {keepdims=0}\n"
              "  s12 = Add(s1, s2)\n  s34 = Add(s3, s4)\n  y = Add(s12, s34)\n",
              "y", "f64[]", "a");
}

/* CumSum in all four directions: the gradient is the CumSum of dy the
 * other way (checked by finite differences; the loss weighs y unevenly). */
static void
test_cumsum (void)
{
  CHECK_BODY ("  const a: f64[3, 5] = random(seed=4)\n  const ax1: i64[] = 1\n  const ax0: i32[] = 0\n"
              "  c1: f64[3, 5] = CumSum(a, ax1)\n"
              "  c2: f64[3, 5] = CumSum(a, ax1) {exclusive=1}\n"
              "  c3: f64[3, 5] = CumSum(a, ax0) {reverse=1}\n"
              "  c4: f64[3, 5] = CumSum(a, ax0) {exclusive=1, reverse=1}\n"
              "  c12 = Mul(c1, c2)\n  c34 = Add(c3, c4)\n  c = Mul(c12, c34)\n  y = Add(c, c1)\n",
              "y", "f64[3, 5]", "a");
}

/* TopK (largest and smallest, two axes), GatherND, and ScatterND and
 * ScatterElements with reduction none (no place written twice) and add:
 * gathers scatter dy back, scatters gather it for the updates and zero the
 * overwritten places for the data. */
static void
test_index_ops (void)
{
  CHECK_BODY ("  const a: f64[3, 5] = random(seed=1)\n  const k: i64[1] = [2]\n"
              "  t, ti = TopK(a, k) {axis=-1}\n"
              "  t2, ti2 = TopK(a, k) {axis=0, largest=0}\n"
              "  const gi: i64[2, 2] = [0, 1, 2, -1]\n"
              "  gn: f64[2] = GatherND(a, gi)\n"
              "  const b: f64[4, 3] = random(seed=2)\n"
              "  const si: i64[2, 1] = [3, 0]\n"
              "  const su: f64[2, 3] = random(seed=3)\n"
              "  sn: f64[4, 3] = ScatterND(b, si, su)\n"
              "  sa: f64[4, 3] = ScatterND(b, si, su) {reduction=\"add\"}\n"
              "  const ei: i64[2, 3] = [1, 0, 3, 2, 3, 0]\n"
              "  se: f64[4, 3] = ScatterElements(b, ei, su) {axis=0}\n"
              "  sea: f64[4, 3] = ScatterElements(b, ei, su) {axis=-2, reduction=\"add\"}\n"
              "  s1 = ReduceSum(t) {keepdims=0}\n  s2 = ReduceSum(t2) {keepdims=0}\n"
              "  s3 = ReduceSum(gn) {keepdims=0}\n  s12 = Add(s1, s2)\n  s = Mul(s12, s3)\n"
              "  m1 = Mul(sn, sa)\n  m2 = Mul(m1, se)\n  m3 = Add(m2, sea)\n"
              "  y = Mul(m3, s)\n",
              "y", "f64[4, 3]", "a,b,su");
}

/* Einsum: contractions, a label only one operand has and the output
 * drops (its gradient is expanded), one operand (a transpose with a sum). */
static void
test_einsum (void)
{
  CHECK_BODY ("  const a: f64[2, 3, 4] = random(seed=1)\n  const b: f64[4, 3, 2] = random(seed=2)\n"
              "  const c: f64[3, 5] = random(seed=3)\n"
              "  e1: f64[2, 3, 2] = Einsum(a, b) {equation=\"abc,cbd->abd\"}\n"
              "  e2: f64[3, 5] = Einsum(a, c) {equation=\"xyz,yw->yw\"}\n"
              "  e3: f64[4, 2] = Einsum(a) {equation=\"ijk->ki\"}\n"
              "  s1 = ReduceSum(e1) {keepdims=0}\n  s3 = ReduceSum(e3) {keepdims=0}\n  s = Mul(s1, s3)\n"
              "  y = Mul(e2, s)\n",
              "y", "f64[3, 5]", "a,b,c");
}

static void
test_gather_where (void)
{
  CHECK_BODY ("  const emb: f64[5, 3] = random(seed=1)\n"
              "  const ids: i64[2, 3] = [0, 4, 2, 2, 0, -1]\n"
              "  const cols: i32[2] = [2, 2]\n"
              "  const w: f64[2, 4, 3] = random(seed=3)\n"
              "  const gidx: i64[2, 2, 3] = [0, 1, 3, 3, 2, 1, 0, 0, 0, 1, 2, 3]\n"
              "  const zero: f64[] = 0.0\n"
              "  g1: f64[2, 3, 3] = Gather(emb, ids)\n"
              "  g2: f64[5, 2] = Gather(emb, cols) {axis=1}\n"
              "  g3: f64[2, 2, 3] = Gather(w, cols) {axis=1}\n"
              "  g4: f64[2, 2, 3] = GatherElements(w, gidx) {axis=1}\n"
              "  s1 = ReduceSum(g1) {keepdims=0}\n"
              "  s2 = ReduceSum(g2) {keepdims=0}\n"
              "  g34 = Mul(g3, g4)\n"
              "  pos = Greater(g34, zero)\n"
              "  wh = Where(pos, g34, g3)\n"
              "  s12 = Add(s1, s2)\n"
              "  y = Mul(wh, s12)\n",
              "y", "f64[2, 2, 3]", "emb,w");
}

/* --- reductions ---------------------------------------------------------------------- */

static void
test_reductions (void)
{
  CHECK_BODY ("  const a: f64[2, 3, 4] = random(seed=1, lo=0.1, hi=1)\n"
              "  const ax: i64[2] = [0, -1]\n"
              "  r1: f64[3] = ReduceSum(a, ax) {keepdims=0}\n"
              "  r2: f64[1, 3, 1] = ReduceMean(a) {axes=[0, 2]}\n"
              "  r3: f64[3] = ReduceMax(a) {axes=[0, 2], keepdims=0}\n"
              "  r4: f64[1, 3, 1] = ReduceMin(a) {axes=[0, 2]}\n"
              "  r5: f64[3] = ReduceSumSquare(a) {axes=[0, 2], keepdims=0}\n"
              "  r6: f64[3] = ReduceL2(a) {axes=[0, 2], keepdims=0}\n"
              "  r7: f64[1, 3, 1] = ReduceLogSumExp(a) {axes=[0, 2]}\n"
              "  r8: f64[] = ReduceMean(a) {keepdims=0}\n"
              "  r9: f64[2, 3, 1] = GlobalMaxPool(a)\n"
              "  r9s: f64[3] = ReduceMean(r9) {axes=[0, 2], keepdims=0}\n"
              "  r10: f64[3] = ReduceL1(a) {axes=[0, 2], keepdims=0}\n"
              "  r11: f64[1, 3, 1] = ReduceProd(a) {axes=[0, 2]}\n"
              "  r12: f64[3] = ReduceLogSum(a) {axes=[0, 2], keepdims=0}\n"
              "  t1 = Add(r1, r2)\n"
              "  t2 = Add(t1, r3)\n"
              "  t3 = Add(t2, r4)\n"
              "  t4 = Add(t3, r5)\n"
              "  t5 = Add(t4, r6)\n"
              "  t6 = Add(t5, r7)\n"
              "  t7 = Add(t6, r8)\n"
              "  t8 = Add(t7, r9s)\n"
              "  t9 = Add(t8, r10)\n"
              "  t10 = Add(t9, r11)\n"
              "  y = Add(t10, r12)\n",
              "y", "f64[1, 3, 3]", "a");
}

static void
test_softmax (void)
{
  CHECK_BODY ("  const a: f64[2, 3, 4] = random(seed=1, lo=-2, hi=2)\n"
              "  s1 = Softmax(a) {axis=-1}\n"
              "  s2 = LogSoftmax(a) {axis=1}\n"
              "  y = Add(s1, s2)\n",
              "y", "f64[2, 3, 4]", "a");
}

/* --- matrix products ------------------------------------------------------------------- */

static void
test_matmul (void)
{
  CHECK_BODY ("  const a: f64[2, 3, 4] = random(seed=1)\n"
              "  const b: f64[4, 5] = random(seed=2)\n"
              "  const c: f64[3, 4] = random(seed=3)\n"
              "  const d: f64[2, 4, 5] = random(seed=4)\n"
              "  const e: f64[2, 1, 3, 4] = random(seed=5)\n"
              "  const f: f64[3, 4, 5] = random(seed=6)\n"
              "  const one: i64[1] = [1]\n"
              "  m1: f64[2, 3, 5] = MatMul(a, b)\n"
              "  m2: f64[2, 3, 5] = MatMul(c, d)\n"
              "  m3: f64[2, 3, 3, 5] = MatMul(e, f)\n"
              "  s = Add(m1, m2)\n"
              "  su: f64[2, 1, 3, 5] = Unsqueeze(s, one)\n"
              "  y = Add(m3, su)\n",
              "y", "f64[2, 3, 3, 5]", "a,b,c,d,e,f");
  CHECK_BODY ("  const v: f64[4] = random(seed=1)\n"
              "  const u: f64[4] = random(seed=2)\n"
              "  const a: f64[2, 3, 4] = random(seed=3)\n"
              "  const b: f64[2, 4, 5] = random(seed=4)\n"
              "  const k: f64[3, 5] = random(seed=5)\n"
              "  m1: f64[2, 5] = MatMul(v, b)\n"
              "  m2: f64[2, 3] = MatMul(a, u)\n"
              "  m3: f64[] = MatMul(v, u)\n"
              "  m12: f64[2, 5] = MatMul(m2, k)\n"
              "  s = Add(m1, m12)\n"
              "  y = Mul(s, m3)\n",
              "y", "f64[2, 5]", "v,u,a,b");
}

static void
test_gemm (void)
{
  static const char *const forms[] = {
    "  g: f64[3, 5] = Gemm(a, b, c) {alpha=0.5, beta=2.0}\n",
    "  g: f64[3, 5] = Gemm(at, b, c) {transA=1}\n",
    "  g: f64[3, 5] = Gemm(a, bt, cm) {transB=1, alpha=1.5}\n",
    "  g: f64[3, 5] = Gemm(at, bt, c) {transA=1, transB=1, beta=0.5}\n",
  };
  for (guint i = 0; i < G_N_ELEMENTS (forms); i++)
    {
      g_autofree char *body = g_strconcat ("  const a: f64[3, 4] = random(seed=1)\n"
                                           "  const at: f64[4, 3] = random(seed=2)\n"
                                           "  const b: f64[4, 5] = random(seed=3)\n"
                                           "  const bt: f64[5, 4] = random(seed=4)\n"
                                           "  const c: f64[5] = random(seed=5)\n"
                                           "  const cm: f64[3, 1] = random(seed=6)\n",
                                           forms[i], NULL);
      const char *params = i == 0 ? "a,b,c" : i == 1 ? "at,b,c" : i == 2 ? "a,bt,cm" : "at,bt,c";
      CHECK_BODY (body, "g", "f64[3, 5]", params);
    }
}

/* --- normalization ----------------------------------------------------------------------- */

static void
test_layer_norm (void)
{
  CHECK_BODY ("  const x: f64[2, 3, 4] = random(seed=1, lo=-2, hi=2)\n"
              "  const s: f64[4] = random(seed=2, lo=0.5, hi=1.5)\n"
              "  const b: f64[4] = random(seed=3)\n"
              "  const s2: f64[3, 4] = random(seed=4, lo=0.5, hi=1.5)\n"
              "  l1 = LayerNormalization(x, s, b) {axis=-1, epsilon=1e-05}\n"
              "  l2 = LayerNormalization(x, s2) {axis=1}\n"
              "  y = Add(l1, l2)\n",
              "y", "f64[2, 3, 4]", "x,s,b,s2");
}

static void
test_batch_norm (void)
{
  CHECK_BODY ("  const x: f64[2, 3, 4, 4] = random(seed=1, lo=-2, hi=2)\n"
              "  const s: f64[3] = random(seed=2, lo=0.5, hi=1.5)\n"
              "  const b: f64[3] = random(seed=3)\n"
              "  const m: f64[3] = random(seed=4)\n"
              "  const v: f64[3] = random(seed=5, lo=0.5, hi=1.5)\n"
              "  b1 = BatchNormalization(x, s, b, m, v) {epsilon=1e-05}\n"
              "  b2 = BatchNormalization(x, s, b, m, v) {epsilon=1e-05, training_mode=1}\n"
              "  y = Add(b1, b2)\n",
              "y", "f64[2, 3, 4, 4]", "x,s,b");
}

/* --- convolution and pooling ----------------------------------------------------------------- */

static void
test_conv (void)
{
  /* stride 2, symmetric pads, bias */
  CHECK_BODY ("  const x: f64[2, 3, 7, 7] = random(seed=1)\n"
              "  const w: f64[4, 3, 3, 3] = random(seed=2)\n"
              "  const b: f64[4] = random(seed=3)\n"
              "  y: f64[2, 4, 4, 4] = Conv(x, w, b) {strides=[2, 2], pads=[1, 1, 1, 1]}\n",
              "y", "f64[2, 4, 4, 4]", "x,w,b");
  /* dilation, asymmetric pads and strides */
  CHECK_BODY ("  const x: f64[1, 2, 8, 9] = random(seed=1)\n"
              "  const w: f64[3, 2, 3, 2] = random(seed=2)\n"
              "  y: f64[1, 3, 6, 5] = Conv(x, w) {dilations=[2, 1], pads=[0, 1, 2, 0], strides=[1, 2]}\n",
              "y", "f64[1, 3, 6, 5]", "x,w");
  /* input rows no window reaches (the weight gradient slices them off) */
  CHECK_BODY ("  const x: f64[1, 2, 6, 6] = random(seed=1)\n"
              "  const w: f64[3, 2, 3, 3] = random(seed=2)\n"
              "  y: f64[1, 3, 2, 2] = Conv(x, w) {strides=[2, 2]}\n",
              "y", "f64[1, 3, 2, 2]", "x,w");
  /* 1-D, auto_pad SAME_UPPER */
  CHECK_BODY ("  const x: f64[2, 3, 9] = random(seed=1)\n"
              "  const w: f64[2, 3, 4] = random(seed=2)\n"
              "  const st: i64[1] = [0]\n"
              "  const en: i64[1] = [2]\n"
              "  const ax: i64[1] = [2]\n"
              "  y: f64[2, 2, 2] = Conv(x, w) {strides=[3]}\n"
              "  z: f64[2, 2, 5] = Conv(x, w) {strides=[2], auto_pad=\"SAME_UPPER\"}\n"
              "  zs: f64[2, 2, 2] = Slice(z, st, en, ax)\n"
              "  y2 = Add(y, zs)\n",
              "y2", "f64[2, 2, 2]", "x,w");
  /* groups: the input gradient (a grouped ConvTranspose) */
  CHECK_BODY ("  const x: f64[1, 4, 5, 5] = random(seed=1)\n"
              "  const w: f64[6, 2, 3, 3] = random(seed=2)\n"
              "  y: f64[1, 6, 3, 3] = Conv(x, w) {group=2}\n",
              "y", "f64[1, 6, 3, 3]", "x");
}

static void
test_pools (void)
{
  CHECK_BODY ("  const x: f64[1, 2, 7, 7] = random(seed=1)\n"
              "  m: f64[1, 2, 4, 4] = MaxPool(x) {kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]}\n"
              "  a: f64[1, 2, 4, 4] = AveragePool(x) {kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]}\n"
              "  c: f64[1, 2, 4, 4] = AveragePool(x) {kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], "
              "count_include_pad=1}\n"
              "  d: f64[1, 2, 4, 4] = AveragePool(x) {kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1}\n"
              "  g: f64[1, 2, 1, 1] = GlobalAveragePool(x)\n"
              "  s1 = Sum(m, a, c, d)\n"
              "  y = Add(s1, g)\n",
              "y", "f64[1, 2, 4, 4]", "x");
  /* overlapping windows and the forward's own Indices output */
  CHECK_BODY ("  const x: f64[2, 1, 6, 5] = random(seed=2)\n"
              "  m, i = MaxPool(x) {kernel_shape=[3, 2], strides=[1, 1], dilations=[1, 2]}\n",
              "m", "f64[2, 1, 4, 3]", "x");
}

/* --- losses ------------------------------------------------------------------------------------ */

static void
test_losses (void)
{
  static const char *const heads[] = {
    "  loss = SoftmaxCrossEntropyLoss(s, t)\n",
    "  loss = SoftmaxCrossEntropyLoss(s, t) {reduction=\"sum\"}\n",
    "  loss = SoftmaxCrossEntropyLoss(s, t, w) {ignore_index=1}\n",
    "  l, lp = SoftmaxCrossEntropyLoss(s, t) {reduction=\"none\"}\n"
    "  lw = Mul(l, tw)\n  lpw = Mul(lp, sw)\n  ls = ReduceSum(lw) {keepdims=0}\n"
    "  lps = ReduceSum(lpw) {keepdims=0}\n  loss = Add(ls, lps)\n",
    "  lsm = LogSoftmax(s) {axis=1}\n  loss = NegativeLogLikelihoodLoss(lsm, t, w)\n",
    "  lsm = LogSoftmax(s) {axis=1}\n  loss = NegativeLogLikelihoodLoss(lsm, t) {ignore_index=2, reduction=\"sum\"}\n",
  };
  for (guint i = 0; i < G_N_ELEMENTS (heads); i++)
    {
      g_autofree char *text = g_strconcat ("graph t opset 17 {\n"
                                           "  const s: f64[4, 3, 2] = random(seed=1, lo=-2, hi=2)\n"
                                           "  const t: i64[4, 2] = [0, 2, 1, 1, 2, 0, 1, 2]\n"
                                           "  const w: f64[3] = [0.5, 1.5, 2.0]\n"
                                           "  const tw: f64[4, 2] = random(seed=2)\n"
                                           "  const sw: f64[4, 3, 2] = random(seed=3)\n",
                                           heads[i], "  output loss\n}\n", NULL);
      check_grads (text, "s");
    }
}

/* --- training ----------------------------------------------------------------------------------- */

static const char mlp_text[] =
  "graph mlp opset 17 {\n"
  "  input x: f32[8, 4]\n"
  "  const labels: i64[8] = [0, 1, 2, 0, 1, 2, 0, 1]\n"
  "  const w1: f32[4, 16] = random(seed=2, lo=-0.5, hi=0.5)\n"
  "  const b1: f32[16] = random(seed=3, lo=-0.1, hi=0.1)\n"
  "  const w2: f32[16, 3] = random(seed=4, lo=-0.5, hi=0.5)\n"
  "  const b2: f32[3] = random(seed=5, lo=-0.1, hi=0.1)\n"
  "  h_mm = MatMul(x, w1)\n"
  "  h_b = Add(h_mm, b1)\n"
  "  h = Relu(h_b)\n"
  "  o_mm = MatMul(h, w2)\n"
  "  logits = Add(o_mm, b2)\n"
  "  loss = SoftmaxCrossEntropyLoss(logits, labels)\n"
  "  output loss\n"
  "}\n";

/* Two SGD steps on an MLP: each step's W.new become the next step's
 * constants; the loss falls each time. */
static void
test_mlp_training (void)
{
  static const char *const params[] = { "w1", "b1", "w2", "b2" };
  g_autoptr (PlGraph) model = pl_test_parse (mlp_text);
  PlTensor **inputs = inputs_for (model);
  double losses[3];
  for (int step = 0; step < 3; step++)
    {
      g_autoptr (PlGraph) g = pl_graph_copy (model);
      g_autoptr (GError) error = NULL;
      g_autoptr (PlPassReport) report = NULL;
      g_assert_true (apply_grad (g, (const char *const[]) { "lr=0.5", NULL }, &report, &error));
      g_assert_no_error (error);
      g_assert_true (pl_graph_verify (g, &error));
      g_assert_cmpint (pl_pass_report_get (report, "parameters"), ==, 4);
      g_assert_cmpuint (g->outputs->len, ==, 5);
      PlTensor **out = run_graph (g, inputs);
      losses[step] = pl_tensor_get_f64 (out[0], 0);
      /* the next step's model: a fresh parse with the updated weights */
      g_clear_pointer (&model, pl_graph_free);
      model = pl_test_parse (mlp_text);
      for (guint p = 0; p < G_N_ELEMENTS (params); p++)
        {
          g_autofree char *name = g_strdup_printf ("%s.new", params[p]);
          const PlTensor *w = out[output_index (g, name)];
          PlTensor *dst = param_tensor (model, inputs, params[p]);
          g_assert_cmpint (dst->numel, ==, w->numel);
          memcpy (dst->data, w->data, pl_tensor_nbytes (w));
        }
      pl_interp_free_outputs (out, (int) g->outputs->len);
    }
  g_test_message ("MLP loss %g -> %g -> %g", losses[0], losses[1], losses[2]);
  g_assert_cmpfloat (losses[1], <, losses[0]);
  g_assert_cmpfloat (losses[2], <, losses[1]);
  pl_interp_free_outputs (inputs, 1);
}

/* outputs=both: W.grad and W.new = W - lr * W.grad, in parameter order
 * after the forward outputs; the forward graph is left as it was. */
static void
test_outputs (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (mlp_text);
  g_autoptr (GError) error = NULL;
  guint n_nodes = g->nodes->len;
  const char *const settings[] = { "outputs=both", "lr=0.25", "params=w2, b1", NULL };
  g_assert_true (apply_grad (g, settings, NULL, &error));
  g_assert_no_error (error);
  static const char *const names[] = { "loss", "w2.grad", "w2.new", "b1.grad", "b1.new" };
  g_assert_cmpuint (g->outputs->len, ==, G_N_ELEMENTS (names));
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    g_assert_cmpstr (((PlValue *) g->outputs->pdata[i])->name, ==, names[i]);
  for (guint i = 0; i < n_nodes; i++)
    g_assert_nonnull (pl_graph_find_node (g, ((PlNode *) g->nodes->pdata[i])->name));
  PlTensor **inputs = inputs_for (g);
  PlTensor **out = run_graph (g, inputs);
  for (int p = 0; p < 2; p++)
    {
      const PlTensor *w = pl_graph_find_value (g, p ? "b1" : "w2")->constant;
      const PlTensor *d = out[1 + 2 * p], *nw = out[2 + 2 * p];
      for (int64_t i = 0; i < w->numel; i++)
        g_assert_cmpfloat_with_epsilon (pl_tensor_get_f64 (nw, i),
                                        pl_tensor_get_f64 (w, i) - 0.25 * pl_tensor_get_f64 (d, i), 1e-6);
    }
  pl_interp_free_outputs (out, (int) g->outputs->len);
  pl_interp_free_outputs (inputs, 1);
}

/* A loss of more than one element is summed; the sum becomes an output. */
static void
test_non_scalar_loss (void)
{
  const char *text = "graph t opset 17 {\n"
                     "  const a: f64[2, 3] = random(seed=1)\n"
                     "  const b: f64[3] = random(seed=2)\n"
                     "  y = Mul(a, b)\n"
                     "  z = Tanh(y)\n"
                     "  output z\n"
                     "}\n";
  check_grads (text, "a,b");
  g_autoptr (PlGraph) g = pl_test_parse (text);
  g_autoptr (PlPassReport) report = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (apply_grad (g, NULL, &report, &error));
  g_assert_nonnull (strstr (report->text->str, "not a scalar: differentiating its sum 'z.sum' (ReduceSum"));
  g_assert_cmpstr (((PlValue *) g->outputs->pdata[1])->name, ==, "z.sum");
  g_assert_cmpint (pl_graph_find_value (g, "z.sum")->shape.rank, ==, 0);
  /* params=all: a and b both have more than one element */
  g_assert_cmpint (pl_pass_report_get (report, "parameters"), ==, 2);
  g_assert_cmpstr (((PlValue *) g->outputs->pdata[2])->name, ==, "a.new");
}

/* Paths through integers, comparisons and shape computations carry no
 * gradient and need no rule. */
static void
test_non_differentiable_paths (void)
{
  CHECK_BODY ("  const a: f64[2, 3] = random(seed=1)\n"
              "  const zero: f64[] = 0.0\n"
              "  const one: i64[1] = [1]\n"
              "  shp = Shape(a)\n"
              "  pos = Greater(a, zero)\n"
              "  posf = Cast(pos) {to=11}\n"
              "  am = ArgMax(a) {axis=1}\n"
              "  amf = Cast(am) {to=11}\n"
              "  k, ki = TopK(a, one) {axis=1}\n"
              "  m = Mul(a, posf)\n"
              "  r: f64[2, 3] = Reshape(m, shp)\n"
              "  y = Add(r, amf)\n",
              "y", "f64[2, 3]", "a");
}

/* --- the samples -------------------------------------------------------------------------------- */

/* Runs the pipeline spec on the sample at path, with the numerical check
 * when tolerance > 0; every step must verify (and pass the check). */
static PlHistory *
run_checked (const char *path, const char *spec, double tolerance)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *file = pl_test_source_path (path);
  g_autoptr (PlGraph) g = pl_text_load (file, &error);
  g_assert_no_error (error);
  g_autoptr (PlPipeline) p = pl_pipeline_parse (spec, &error);
  g_assert_no_error (error);
  PlRunOptions o;
  pl_run_options_init (&o);
  o.check = tolerance > 0;
  o.tolerance = tolerance;
  PlHistory *h = pl_pipeline_run (g, p, &o, &error);
  g_assert_no_error (error);
  g_assert_null (h->error);
  for (int i = 1; i < pl_history_n_steps (h); i++)
    {
      PlStep *s = pl_history_step (h, i);
      if (s->check_failed)
        g_error ("%s", s->check_message);
      g_assert_true (s->checked == o.check);
      g_assert_true (pl_graph_verify (s->graph, &error));
      g_assert_no_error (error);
    }
  return h;
}

static void
check_training_sample (const char *path, int n_params, const char *const *updates)
{
  g_autoptr (PlHistory) h = run_checked (path, "grad", 1e-5);
  PlStep *fwd = pl_history_step (h, 0), *train = pl_history_step (h, 1);
  g_assert_true (train->changed);
  g_assert_cmpint (train->n_outputs, ==, 1);
  g_assert_cmpfloat (train->output_errors[0], <=, 1e-6);
  g_assert_cmpstr (((PlValue *) train->graph->outputs->pdata[0])->name, ==, "loss");
  g_assert_cmpuint (train->graph->outputs->len, ==, 1 + n_params);
  for (int i = 0; updates[i]; i++)
    output_index (train->graph, updates[i]);
  g_assert_cmpint (pl_pass_report_get (train->counters, "parameters"), ==, n_params);
  g_assert_cmpint (pl_pass_report_get (train->counters, "peak bytes before"), ==, fwd->stats.peak_bytes);
  g_assert_cmpint (pl_pass_report_get (train->counters, "peak bytes after"), ==, train->stats.peak_bytes);
  g_test_message ("%s: peak %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT " bytes, nodes %" G_GINT64_FORMAT
                  " -> %" G_GINT64_FORMAT, path, fwd->stats.peak_bytes, train->stats.peak_bytes,
                  fwd->stats.nodes, train->stats.nodes);
  g_assert_cmpint (train->stats.peak_bytes, >, fwd->stats.peak_bytes);
}

static void
test_transformer_train (void)
{
  check_training_sample ("data/graphs/transformer_train.graph", 16,
                         (const char *const[]) { "wq.new", "ln1_scale.new", "b2.new", NULL });
}

static void
test_resnet_train (void)
{
  /* BatchNormalization's running mean and var are no parameters */
  check_training_sample ("data/graphs/resnet_train.graph", 8,
                         (const char *const[]) { "conv1_w.new", "bn2_scale.new", "fc_b.new", NULL });
}

/* The backward convolutions come out in the forms fuse-library knows, and
 * the weight-gradient MatMuls become GEMMs with transpose flags (the ResNet
 * unchecked: the reference convolutions are slow, and the training step
 * itself is checked above). */
static void
test_fuse_backward (void)
{
  g_autoptr (PlHistory) h = run_checked ("data/graphs/resnet_train.graph", "grad,fuse-library", 0);
  PlStep *s = pl_history_step (h, 2);
  g_assert_cmpint (pl_pass_report_get (s->counters, "conv_backward_filter"), ==, 2);
  g_assert_cmpint (pl_pass_report_get (s->counters, "conv_backward_input"), ==, 1);
  g_autoptr (PlHistory) t = run_checked ("data/graphs/transformer_train.graph", "grad,fuse-library", 1e-4);
  g_assert_cmpint (pl_pass_report_get (pl_history_step (t, 2)->counters, "gemm"), >=, 20);
}

/* --- errors ---------------------------------------------------------------------------------------- */

static void
expect_error (const char *text, const char *const *settings, const char *message)
{
  g_autoptr (PlGraph) g = pl_test_parse (text);
  guint n_nodes = g->nodes->len, n_values = g->values->len, n_outputs = g->outputs->len;
  g_autoptr (GError) error = NULL;
  g_assert_false (apply_grad (g, settings, NULL, &error));
  g_assert_nonnull (error);
  if (!strstr (error->message, message))
    g_error ("expected '%s' in: %s", message, error->message);
  /* nothing of the attempt is left */
  g_assert_cmpuint (g->nodes->len, ==, n_nodes);
  g_assert_cmpuint (g->values->len, ==, n_values);
  g_assert_cmpuint (g->outputs->len, ==, n_outputs);
  g_assert_true (pl_graph_verify (g, NULL));
}

static void
test_errors (void)
{
  const char *topk = "graph t opset 17 {\n"
                     "  const a: f64[2, 5] = random(seed=1)\n"
                     "  const k: i64[1] = [2]\n"
                     "  k1, idx = TopK(a, k) {axis=-1}\n"
                     "  loss = ReduceSum(k1) {keepdims=0}\n"
                     "  output loss\n"
                     "}\n";
  const char *round_op = "graph t opset 17 {\n"
                      "  const a: f64[2, 5] = random(seed=1)\n"
                      "  r = Round(a)\n"
                      "  loss = ReduceSum(r) {keepdims=0}\n"
                      "  output loss\n"
                      "}\n";
  expect_error (round_op, NULL, "grad: no gradient rule for Round (node 'r')");
  /* reduction none: the update a later one overwrites gets no gradient, which a gather would give it */
  const char *twice = "graph t opset 17 {\n"
                "  const b: f64[4, 3] = random(seed=2)\n"
                "  const si: i64[2, 1] = [1, 1]\n"
                "  const su: f64[2, 3] = random(seed=3)\n"
                "  s = ScatterND(b, si, su)\n"
                "  loss = ReduceSum(s) {keepdims=0}\n"
                "  output loss\n"
                "}\n";
  expect_error (twice, NULL, "ScatterND with reduction 'none' and a place written twice");
  const char *mul = "graph t opset 17 {\n"
              "  const b: f64[4, 3] = random(seed=2)\n"
              "  const si: i64[2, 1] = [1, 2]\n"
              "  const su: f64[2, 3] = random(seed=3)\n"
              "  s = ScatterND(b, si, su) {reduction=\"mul\"}\n"
              "  loss = ReduceSum(s) {keepdims=0}\n"
              "  output loss\n"
              "}\n";
  expect_error (mul, NULL, "ScatterND with reduction 'mul' has no gradient rule");
  const char *grouped = "graph t opset 17 {\n"
                        "  const x: f64[1, 4, 5, 5] = random(seed=1)\n"
                        "  const w: f64[6, 2, 3, 3] = random(seed=2)\n"
                        "  const m: f64[6, 1, 1] = random(seed=3)\n"
                        "  y = Conv(x, w) {group=2}\n"
                        "  z = Mul(m, y)\n"
                        "  output z\n"
                        "}\n";
  expect_error (grouped, (const char *const[]) { "params=w", NULL },
                "grad: node 'y' (Conv): the weight gradient of a grouped Conv (group=2) is not supported");
  expect_error (topk, (const char *const[]) { "params=nope", NULL }, "grad: no value named 'nope' (params)");
  expect_error (topk, (const char *const[]) { "params=k", NULL }, "is not a float constant or graph input");
  expect_error (topk, (const char *const[]) { "loss=idx", NULL }, "grad: the loss 'idx' is i64, not a float");
  expect_error (topk, (const char *const[]) { "outputs=all", NULL }, "outputs 'all' is not one of");
  const char *unrelated = "graph t opset 17 {\n"
                          "  input x: f32[3]\n"
                          "  const w: f32[3] = [1.0, 2.0, 3.0]\n"
                          "  y = Tanh(x)\n"
                          "  z = Mul(w, w)\n"
                          "  output y, z\n"
                          "}\n";
  expect_error (unrelated, (const char *const[]) { "params=w", NULL },
                "grad: the loss 'y' depends on none of the parameters (w)");
  const char *old = "graph t opset 11 {\n"
                    "  const a: f32[3] = [1.0, 2.0, 3.0]\n"
                    "  y = Tanh(a)\n"
                    "  output y\n"
                    "}\n";
  expect_error (old, NULL, "grad: needs opset 13 or later (the graph has opset 11)");
}

/* g with every f32 input and constant made f64 (fresh constant data), as
 * the fuzzer does, so finite differences are accurate. */
static void
graph_to_f64 (PlGraph *g)
{
  for (guint i = 0; i < g->values->len; i++)
    {
      PlValue *v = g->values->pdata[i];
      if (v->dtype != PL_DTYPE_F32 || v->producer)
        continue;
      if (v->constant)
        {
          PlTensor *t = pl_tensor_cast (v->constant, PL_DTYPE_F64);
          pl_tensor_unref (v->constant);
          v->constant = t;
        }
      v->dtype = PL_DTYPE_F64;
    }
  for (guint i = 0; i < g->nodes->len; i++)
    if (((PlNode *) g->nodes->pdata[i])->body)
      graph_to_f64 (((PlNode *) g->nodes->pdata[i])->body);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
}

/* Random graphs (the fuzzer's: broadcasting, reshapes, reductions, matmuls,
 * layer norms, softmax, concat/slice), as they are and after the passes
 * that run before grad in the built-in order (fusion nodes, whose bodies
 * grad recomputes): every gradient of params=all against finite differences
 * in f64 on the graph grad was given. */
static void
test_random_graphs (void)
{
  int tested = 0, n_params = 0, fused = 0;
  for (guint32 seed = 1; seed <= 40; seed++)
    for (int pre = 0; pre < 2; pre++)
      {
        PlRandomGraphOptions o;
        pl_random_graph_options_init (&o);
        o.seed = seed;
        g_autoptr (PlGraph) r = pl_random_graph (&o);
        g_autoptr (PlHistory) h = NULL;
        const PlGraph *src = r;
        if (pre)
          {
            const char *before_grad = "simplify,decompose,reshape-sink,fuse-library,fuse-loops,stitch";
            g_autoptr (PlPipeline) p = pl_pipeline_parse (before_grad, NULL);
            PlRunOptions ro;
            pl_run_options_init (&ro);
            h = pl_pipeline_run (r, p, &ro, NULL);
            g_assert_null (h->error);
            src = pl_history_step (h, pl_history_n_steps (h) - 1)->graph;
          }
        g_autoptr (PlGraph) fwd = pl_graph_copy (src);
        g_autoptr (PlGraph) g = pl_graph_copy (src);
        graph_to_f64 (fwd);
        graph_to_f64 (g);
        g_autoptr (GError) error = NULL;
        g_autoptr (PlPassReport) report = NULL;
        if (!apply_grad (g, (const char *const[]) { "outputs=grads", NULL }, &report, &error))
          g_error ("seed %u: %s", seed, error->message);
        if (!report->changed)
          continue;
        g_autofree char *what = g_strdup_printf ("random graph seed %u%s", seed,
                                                 pre ? " after the fusion passes" : "");
        n_params += compare_with_fd (fwd, g, 1e-6, 1e-5, 1e-7, what);
        tested++;
        for (guint i = 0; pre && i < src->nodes->len; i++)
          fused += ((PlNode *) src->nodes->pdata[i])->op == PL_OP_Fusion;
      }
  g_test_message ("%d random graphs with gradients, %d parameters, %d fusion nodes", tested, n_params, fused);
  g_assert_cmpint (tested, >=, 30);
  g_assert_cmpint (fused, >=, 20);
}

/* With the defaults, a graph with nothing to train is left as it is. */
static void
test_nothing_to_do (void)
{
  static const char *const texts[] = {
    "graph t opset 17 {\n  input x: f32[3]\n  const w: f32[3] = [1.0, 2.0, 3.0]\n"
    "  y = Tanh(x)\n  z = Mul(w, w)\n  output y, z\n}\n",
    "graph t opset 17 {\n  const w: f32[3] = [1.0, 2.0, 3.0]\n  const zero: f32[] = 0.0\n"
    "  y = Greater(w, zero)\n  z = Tanh(w)\n  output y, z\n}\n",
  };
  static const char *const reports[] = {
    "the loss 'y' depends on no float constant of more than one element: nothing to differentiate",
    "the first output 'y' is bool: nothing to differentiate",
  };
  for (guint i = 0; i < G_N_ELEMENTS (texts); i++)
    {
      g_autoptr (PlGraph) g = pl_test_parse (texts[i]);
      guint n_nodes = g->nodes->len, n_values = g->values->len;
      g_autoptr (PlPassReport) report = NULL;
      g_autoptr (GError) error = NULL;
      g_assert_true (apply_grad (g, NULL, &report, &error));
      g_assert_no_error (error);
      g_assert_false (report->changed);
      g_assert_true (g_str_has_prefix (report->text->str, reports[i]));
      g_assert_cmpuint (g->nodes->len, ==, n_nodes);
      g_assert_cmpuint (g->values->len, ==, n_values);
    }
}

/* A long chain: everything stays linear (names, accumulation, the walk). */
static void
test_long_chain (void)
{
  GString *s = g_string_new ("graph chain opset 17 {\n  const w: f32[4] = [0.1, 0.2, 0.3, 0.4]\n  v0 = Tanh(w)\n");
  const int n = 20000;
  for (int i = 1; i < n; i++)
    g_string_append_printf (s, "  v%d = %s(v%d%s)\n", i, i % 2 ? "Sin" : "Add", i - 1, i % 2 ? "" : ", w");
  g_string_append_printf (s, "  loss = ReduceSum(v%d) {keepdims=0}\n  output loss\n}\n", n - 1);
  g_autoptr (PlGraph) g = pl_test_parse (s->str);
  g_string_free (s, TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPassReport) report = NULL;
  gint64 t0 = g_get_monotonic_time ();
  g_assert_true (apply_grad (g, NULL, &report, &error));
  g_assert_no_error (error);
  g_test_message ("grad of a %d-node chain: %.1f ms, %" G_GINT64_FORMAT " backward nodes", n + 1,
                  (g_get_monotonic_time () - t0) / 1000.0, pl_pass_report_get (report, "backward nodes"));
  /* per node: the rule's ops; per use of w: one accumulating Add */
  g_assert_cmpint (pl_pass_report_get (report, "backward nodes"), <, 4 * n);
  g_assert_true (pl_graph_verify (g, &error));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_passes_init ();
  g_test_add_func ("/Passlab/PassGrad/binary-broadcast", test_binary_broadcast);
  g_test_add_func ("/Passlab/PassGrad/unary-math", test_unary_math);
  g_test_add_func ("/Passlab/PassGrad/activations", test_activations);
  g_test_add_func ("/Passlab/PassGrad/cast", test_cast);
  g_test_add_func ("/Passlab/PassGrad/shape-ops", test_shape_ops);
  g_test_add_func ("/Passlab/PassGrad/slice-pad-split", test_slice_pad_split);
  g_test_add_func ("/Passlab/PassGrad/pad-modes-tile", test_pad_modes_tile);
  g_test_add_func ("/Passlab/PassGrad/cumsum", test_cumsum);
  g_test_add_func ("/Passlab/PassGrad/gather-where", test_gather_where);
  g_test_add_func ("/Passlab/PassGrad/index-ops", test_index_ops);
  g_test_add_func ("/Passlab/PassGrad/einsum", test_einsum);
  g_test_add_func ("/Passlab/PassGrad/reductions", test_reductions);
  g_test_add_func ("/Passlab/PassGrad/softmax", test_softmax);
  g_test_add_func ("/Passlab/PassGrad/matmul", test_matmul);
  g_test_add_func ("/Passlab/PassGrad/gemm", test_gemm);
  g_test_add_func ("/Passlab/PassGrad/layer-norm", test_layer_norm);
  g_test_add_func ("/Passlab/PassGrad/batch-norm", test_batch_norm);
  g_test_add_func ("/Passlab/PassGrad/conv", test_conv);
  g_test_add_func ("/Passlab/PassGrad/pools", test_pools);
  g_test_add_func ("/Passlab/PassGrad/losses", test_losses);
  g_test_add_func ("/Passlab/PassGrad/non-differentiable-paths", test_non_differentiable_paths);
  g_test_add_func ("/Passlab/PassGrad/non-scalar-loss", test_non_scalar_loss);
  g_test_add_func ("/Passlab/PassGrad/outputs", test_outputs);
  g_test_add_func ("/Passlab/PassGrad/mlp-training", test_mlp_training);
  g_test_add_func ("/Passlab/PassGrad/transformer-train", test_transformer_train);
  g_test_add_func ("/Passlab/PassGrad/resnet-train", test_resnet_train);
  g_test_add_func ("/Passlab/PassGrad/fuse-backward", test_fuse_backward);
  g_test_add_func ("/Passlab/PassGrad/errors", test_errors);
  g_test_add_func ("/Passlab/PassGrad/random-graphs", test_random_graphs);
  g_test_add_func ("/Passlab/PassGrad/nothing-to-do", test_nothing_to_do);
  g_test_add_func ("/Passlab/PassGrad/long-chain", test_long_chain);
  return g_test_run ();
}
