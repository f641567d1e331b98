/* test-ops-rnn.c — RNN, GRU and LSTM: one step worked out by hand (RNN,
 * GRU with and without linear_before_reset, each activation), LSTM with
 * peepholes and input_forget against the spec's equations written out
 * here, layout 1 against layout 0, a bidirectional node against its two
 * directions run alone, sequence_lens, omitted outputs, float16, and the
 * errors bad shapes and attributes give. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test-util.h"

#define F64 PL_DTYPE_F64

static double
sigmoid (double x)
{
  return 1 / (1 + exp (-x));
}

/* Runs g (inputs as pl_test_node_graph got them, none constant); output k. */
static PlTensor *
run_output (PlGraph *g, PlTensor *const *inputs, int k)
{
  PlNode *node = g->nodes->pdata[0];
  PlTensor **out = pl_test_run (g, inputs, 0);
  PlTensor *r = pl_tensor_ref (out[k]);
  pl_interp_free_outputs (out, node->n_outputs);
  return r;
}

/* Output k of a one-node graph of op with attributes hidden_size and direction. */
static PlTensor *
run_rnn (const char *op, int n, PlTensor *const *inputs, int n_out, int k, int hidden, const char *direction)
{
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = pl_test_node_graph (op, n, inputs, 0, n_out, &node);
  pl_node_set_attr_int (node, "hidden_size", hidden);
  pl_node_set_attr_string (node, "direction", direction);
  return run_output (g, inputs, k);
}

/* --- RNN ------------------------------------------------------------------------- */

/* X (1, 2), W [[0.5, -0.5], [1, 0]], R = I, Wb (0.1, 0), Rb (0, 0.2),
 * H0 (0.5, -1): the pre-activations are
 *   0.5 - 1 + 0.5 + 0.1 = 0.1 and 1 + 0 - 1 + 0.2 = 0.2. */
static PlTensor *one_step_in[6];

static void
one_step_inputs (PlDType t)
{
  one_step_in[0] = pl_test_tensor (t, 3, PL_DIMS (1, 1, 2), PL_VALS (1, 2));
  one_step_in[1] = pl_test_tensor (t, 3, PL_DIMS (1, 2, 2), PL_VALS (0.5, -0.5, 1, 0));
  one_step_in[2] = pl_test_tensor (t, 3, PL_DIMS (1, 2, 2), PL_VALS (1, 0, 0, 1));
  one_step_in[3] = pl_test_tensor (t, 2, PL_DIMS (1, 4), PL_VALS (0.1, 0, 0, 0.2));
  one_step_in[4] = NULL;
  one_step_in[5] = pl_test_tensor (t, 3, PL_DIMS (1, 1, 2), PL_VALS (0.5, -1));
}

static void
free_one_step_inputs (void)
{
  for (int i = 0; i < 6; i++)
    g_clear_pointer (&one_step_in[i], pl_tensor_unref);
}

static void
test_rnn_one_step (void)
{
  one_step_inputs (F64);
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = pl_test_node_graph ("RNN", 6, one_step_in, 0, 2, &node);
  pl_node_set_attr_int (node, "hidden_size", 2);
  PlTensor **out = pl_test_run (g, one_step_in, 0);
  g_assert_cmpint (out[0]->rank, ==, 4);   /* [seq, num_directions, batch, hidden] */
  pl_test_assert_values (out[0], PL_VALS (tanh (0.1), tanh (0.2)));
  pl_test_assert_values (out[1], PL_VALS (tanh (0.1), tanh (0.2)));
  pl_interp_free_outputs (out, 2);

  /* Relu, clipped at 0.15: the clip bounds what the activation reads */
  pl_node_set_attr_strings (node, "activations", (const char *[]) { "Relu" }, 1);
  pl_node_set_attr_float (node, "clip", 0.15f);
  g_autoptr (PlTensor) clipped = run_output (g, one_step_in, 1);
  pl_test_assert_values (clipped, PL_VALS (0.1, 0.15));
  free_one_step_inputs ();

  /* float16 in, float16 out, rounded once from double */
  one_step_inputs (PL_DTYPE_F16);
  g_autoptr (PlTensor) h16 = run_rnn ("RNN", 6, one_step_in, 2, 1, 2, "forward");
  g_autoptr (PlTensor) want16 = pl_test_tensor (PL_DTYPE_F16, 3, PL_DIMS (1, 1, 2), PL_VALS (tanh (0.1), tanh (0.2)));
  pl_test_assert_close (h16, want16, 0, 0);
  free_one_step_inputs ();
}

/* W = I, no R effect (H0 = 0): each activation reads (-2, 3). */
static void
test_rnn_activations (void)
{
  static const struct {
    const char *name;
    int         n_alpha, n_beta;
    float       alpha, beta;
    double      want[2];
  } cases[] = {
    { "Tanh", 0, 0, 0, 0, { -0.964027580075817, 0.995054753686730 } },
    { "sigmoid", 0, 0, 0, 0, { 0.119202922022118, 0.952574126822433 } },   /* any case */
    { "Relu", 0, 0, 0, 0, { 0, 3 } },
    { "LeakyRelu", 0, 0, 0, 0, { -0.02, 3 } },                               /* alpha 0.01 */
    { "LeakyRelu", 1, 0, 0.5f, 0, { -1, 3 } },
    { "ThresholdedRelu", 0, 0, 0, 0, { 0, 3 } },                             /* alpha 1 */
    { "Affine", 1, 1, 2, 1, { -3, 7 } },
    { "ScaledTanh", 1, 1, 2, 0.5f, { -1.523188311911530, 1.810296990626528 } }, /* 2 tanh (x / 2) */
    { "HardSigmoid", 0, 0, 0, 0, { 0.1, 1 } },                               /* 0.2 x + 0.5 in [0, 1] */
    { "Elu", 0, 0, 0, 0, { -0.864664716763387, 3 } },                        /* e^-2 - 1 */
    { "Softsign", 0, 0, 0, 0, { -2.0 / 3, 0.75 } },
    { "Softplus", 0, 0, 0, 0, { 0.126928011042973, 3.048587351573742 } },
  };
  g_autoptr (PlTensor) x = pl_test_tensor (F64, 3, PL_DIMS (1, 1, 2), PL_VALS (-2, 3));
  g_autoptr (PlTensor) w = pl_test_tensor (F64, 3, PL_DIMS (1, 2, 2), PL_VALS (1, 0, 0, 1));
  g_autoptr (PlTensor) r = pl_test_tensor (F64, 3, PL_DIMS (1, 2, 2), PL_VALS (7, 7, 7, 7));
  PlTensor *in[] = { x, w, r };
  for (size_t k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      PlNode *node = NULL;
      g_autoptr (PlGraph) g = pl_test_node_graph ("RNN", 3, in, 0, 2, &node);
      pl_node_set_attr_strings (node, "activations", (const char *[]) { cases[k].name }, 1);
      pl_node_set_attr_floats (node, "activation_alpha", &cases[k].alpha, cases[k].n_alpha);
      pl_node_set_attr_floats (node, "activation_beta", &cases[k].beta, cases[k].n_beta);
      g_autoptr (PlTensor) h = run_output (g, in, 1);
      pl_test_assert_values (h, cases[k].want);
    }

  /* bidirectional: the alphas and betas go in order to the activations that take them,
   * LeakyRelu (alpha 0.5) forward and Affine (alpha 2, beta 1) backward */
  g_autoptr (PlTensor) w2 = pl_test_tensor (F64, 3, PL_DIMS (2, 2, 2), PL_VALS (1, 0, 0, 1, 1, 0, 0, 1));
  g_autoptr (PlTensor) r2 = pl_test_tensor (F64, 3, PL_DIMS (2, 2, 2), NULL);
  PlTensor *in2[] = { x, w2, r2 };
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = pl_test_node_graph ("RNN", 3, in2, 0, 2, &node);
  pl_node_set_attr_string (node, "direction", "bidirectional");
  pl_node_set_attr_strings (node, "activations", (const char *[]) { "LeakyRelu", "Affine" }, 2);
  pl_node_set_attr_floats (node, "activation_alpha", (const float[]) { 0.5f, 2 }, 2);
  pl_node_set_attr_floats (node, "activation_beta", (const float[]) { 1 }, 1);
  g_autoptr (PlTensor) h = run_output (g, in2, 1);
  pl_test_assert_values (h, PL_VALS (-1, 3, -3, 7));
}

/* A bidirectional RNN is its forward and its reverse run side by side;
 * Y [seq, 2, batch, hidden], Y_h [2, batch, hidden]. */
static void
test_rnn_bidirectional (void)
{
  const int64_t seq = 4, batch = 3, in = 2, hid = 5;
  g_autoptr (PlTensor) x = pl_test_random (F64, 3, PL_DIMS (seq, batch, in), 1, -1, 1);
  g_autoptr (PlTensor) w = pl_test_random (F64, 3, PL_DIMS (2, hid, in), 2, -1, 1);
  g_autoptr (PlTensor) r = pl_test_random (F64, 3, PL_DIMS (2, hid, hid), 3, -0.5, 0.5);
  g_autoptr (PlTensor) b = pl_test_random (F64, 2, PL_DIMS (2, 2 * hid), 4, -0.2, 0.2);
  PlTensor *in_bi[] = { x, w, r, b };
  g_autoptr (PlTensor) y = run_rnn ("RNN", 4, in_bi, 2, 0, hid, "bidirectional");
  g_autoptr (PlTensor) yh = run_rnn ("RNN", 4, in_bi, 2, 1, hid, "bidirectional");
  g_assert_cmpint (y->rank, ==, 4);
  g_assert_cmpint (y->dims[0], ==, seq);
  g_assert_cmpint (y->dims[1], ==, 2);
  g_assert_cmpint (y->dims[2], ==, batch);
  g_assert_cmpint (y->dims[3], ==, hid);
  g_assert_cmpint (yh->rank, ==, 3);
  g_assert_cmpint (yh->dims[0], ==, 2);

  for (int d = 0; d < 2; d++)
    {
      /* direction d's weights alone */
      const double *wv = w->data, *rv = r->data, *bv = b->data;
      g_autoptr (PlTensor) wd = pl_test_tensor (F64, 3, PL_DIMS (1, hid, in), wv + d * hid * in);
      g_autoptr (PlTensor) rd = pl_test_tensor (F64, 3, PL_DIMS (1, hid, hid), rv + d * hid * hid);
      g_autoptr (PlTensor) bd = pl_test_tensor (F64, 2, PL_DIMS (1, 2 * hid), bv + d * 2 * hid);
      PlTensor *in_d[] = { x, wd, rd, bd };
      const char *dir = d ? "reverse" : "forward";
      g_autoptr (PlTensor) yd = run_rnn ("RNN", 4, in_d, 2, 0, hid, dir);
      g_autoptr (PlTensor) yhd = run_rnn ("RNN", 4, in_d, 2, 1, hid, dir);
      for (int64_t t = 0; t < seq; t++)
        for (int64_t i = 0; i < batch * hid; i++)
          g_assert_cmpfloat (pl_tensor_get_f64 (y, (t * 2 + d) * batch * hid + i), ==,
                             pl_tensor_get_f64 (yd, t * batch * hid + i));
      for (int64_t i = 0; i < batch * hid; i++)
        g_assert_cmpfloat (pl_tensor_get_f64 (yh, d * batch * hid + i), ==, pl_tensor_get_f64 (yhd, i));
    }
}

/* Row 1 has 2 valid steps of 3: its Y is zero at step 2 and its Y_h is the
 * state after its last step run (step 1 forward, step 0 reverse); row 0
 * runs all 3. The rows' valid steps equal a run of just those steps. */
static void
test_sequence_lens (void)
{
  const int64_t seq = 3, batch = 2, in = 2, hid = 3;
  g_autoptr (PlTensor) x = pl_test_random (F64, 3, PL_DIMS (seq, batch, in), 5, -1, 1);
  g_autoptr (PlTensor) w = pl_test_random (F64, 3, PL_DIMS (1, hid, in), 6, -1, 1);
  g_autoptr (PlTensor) r = pl_test_random (F64, 3, PL_DIMS (1, hid, hid), 7, -1, 1);
  g_autoptr (PlTensor) lens = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (batch), PL_VALS (3, 2));
  g_autoptr (PlTensor) h0 = pl_test_random (F64, 3, PL_DIMS (1, batch, hid), 8, -1, 1);
  PlTensor *in_all[] = { x, w, r, NULL, lens, h0 };
  /* row 1 alone with its first two steps */
  g_autoptr (PlTensor) x1 = pl_test_tensor (F64, 3, PL_DIMS (2, 1, in), NULL);
  g_autoptr (PlTensor) h01 = pl_test_tensor (F64, 3, PL_DIMS (1, 1, hid), (const double *) h0->data + hid);
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < in; i++)
      pl_tensor_set_f64 (x1, t * in + i, pl_tensor_get_f64 (x, (t * batch + 1) * in + i));
  PlTensor *in_row1[] = { x1, w, r, NULL, NULL, h01 };

  for (int rev = 0; rev < 2; rev++)
    {
      const char *dir = rev ? "reverse" : "forward";
      g_autoptr (PlTensor) y = run_rnn ("RNN", 6, in_all, 2, 0, hid, dir);
      g_autoptr (PlTensor) yh = run_rnn ("RNN", 6, in_all, 2, 1, hid, dir);
      g_autoptr (PlTensor) y1 = run_rnn ("RNN", 6, in_row1, 2, 0, hid, dir);
      int64_t last0 = rev ? 0 : 2, last1 = rev ? 0 : 1;   /* the step each row ends on */
      for (int64_t j = 0; j < hid; j++)
        {
          g_assert_cmpfloat (pl_tensor_get_f64 (y, (2 * batch + 1) * hid + j), ==, 0);   /* Y[2, 0, 1, j] */
          g_assert_cmpfloat (pl_tensor_get_f64 (yh, j), ==, pl_tensor_get_f64 (y, (last0 * batch) * hid + j));
          g_assert_cmpfloat (pl_tensor_get_f64 (yh, hid + j), ==,
                             pl_tensor_get_f64 (y, (last1 * batch + 1) * hid + j));
          for (int t = 0; t < 2; t++)
            g_assert_cmpfloat (pl_tensor_get_f64 (y, (t * batch + 1) * hid + j), ==,
                               pl_tensor_get_f64 (y1, t * hid + j));
        }
    }

  /* a length past seq_length is an error when it runs */
  g_autoptr (PlTensor) bad = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (batch), PL_VALS (3, 4));
  PlTensor *in_bad[] = { x, w, r, NULL, bad };
  g_autoptr (PlGraph) g = pl_test_node_graph ("RNN", 5, in_bad, 0, 2, NULL);
  pl_test_expect_run_error (g, in_bad, 0, "sequence_lens[1] is 4, outside [0, 3]");
}

/* --- GRU -------------------------------------------------------------------------- */

/* hidden 1, X 1, H0 2; W (z 0.5, r -1, h 2), R (z 1, r 0.5, h -1), Wb (0, 0, 0.5),
 * Rb (0, 0, 1): z = sigmoid (0.5 + 2), r = sigmoid (-1 + 1) = 0.5;
 * linear_before_reset 0: h~ = tanh (2 + (0.5 * 2) * -1 + 1 + 0.5) = tanh (2.5),
 * linear_before_reset 1: h~ = tanh (2 + 0.5 * (2 * -1 + 1) + 0.5) = tanh (2);
 * H = (1 - z) h~ + 2 z. */
static void
test_gru_linear_before_reset (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (F64, 3, PL_DIMS (1, 1, 1), PL_VALS (1));
  g_autoptr (PlTensor) w = pl_test_tensor (F64, 3, PL_DIMS (1, 3, 1), PL_VALS (0.5, -1, 2));
  g_autoptr (PlTensor) r = pl_test_tensor (F64, 3, PL_DIMS (1, 3, 1), PL_VALS (1, 0.5, -1));
  g_autoptr (PlTensor) b = pl_test_tensor (F64, 2, PL_DIMS (1, 6), PL_VALS (0, 0, 0.5, 0, 0, 1));
  g_autoptr (PlTensor) h0 = pl_test_tensor (F64, 3, PL_DIMS (1, 1, 1), PL_VALS (2));
  PlTensor *in[] = { x, w, r, b, NULL, h0 };
  double z = sigmoid (2.5);
  double want[2] = { (1 - z) * tanh (2.5) + 2 * z, (1 - z) * tanh (2) + 2 * z };
  g_assert_cmpfloat (fabs (want[0] - want[1]), >, 1e-3);
  for (int lbr = 0; lbr < 2; lbr++)
    {
      PlNode *node = NULL;
      g_autoptr (PlGraph) g = pl_test_node_graph ("GRU", 6, in, 0, 2, &node);
      pl_node_set_attr_int (node, "hidden_size", 1);
      pl_node_set_attr_int (node, "linear_before_reset", lbr);
      g_autoptr (PlTensor) h = run_output (g, in, 1);
      pl_test_assert_values (h, &want[lbr]);
    }
}

/* --- LSTM ------------------------------------------------------------------------- */

typedef struct {
  int           seq, batch, in, hid;
  const double *x, *w, *r, *b, *p;   /* layout 0, forward; gates i, o, f, c */
  bool          input_forget;
} LstmCase;

/* The spec's equations with f = sigmoid, g = h = tanh, written out: h and c
 * ([batch, hid]) hold H0 and C0 and end as Y_h, Y_c; y gets [seq, 1, batch, hid]. */
static void
lstm_by_hand (const LstmCase *k, double *h, double *c, double *y)
{
  int hid = k->hid;
  for (int t = 0; t < k->seq; t++)
    for (int n = 0; n < k->batch; n++)
      {
        double a[4][8];
        for (int gi = 0; gi < 4; gi++)
          for (int j = 0; j < hid; j++)
            {
              int row = gi * hid + j;
              a[gi][j] = k->b[row] + k->b[4 * hid + row];
              for (int i = 0; i < k->in; i++)
                a[gi][j] += k->x[(t * k->batch + n) * k->in + i] * k->w[row * k->in + i];
              for (int i = 0; i < hid; i++)
                a[gi][j] += h[n * hid + i] * k->r[row * hid + i];
            }
        for (int j = 0; j < hid; j++)
          {
            double *cj = &c[n * hid + j];
            double it = sigmoid (a[0][j] + k->p[j] * *cj);
            double ft = k->input_forget ? 1 - it : sigmoid (a[2][j] + k->p[2 * hid + j] * *cj);
            *cj = ft * *cj + it * tanh (a[3][j]);
            double ot = sigmoid (a[1][j] + k->p[hid + j] * *cj);
            h[n * hid + j] = ot * tanh (*cj);
            y[(t * k->batch + n) * hid + j] = h[n * hid + j];
          }
      }
}

/* [a, b, c] -> [b, a, c]: layout 0 <-> 1 of X and the states. */
static PlTensor *
swap01 (const PlTensor *t)
{
  PlTensor *s = pl_test_tensor (t->dtype, 3, PL_DIMS (t->dims[1], t->dims[0], t->dims[2]), NULL);
  for (int64_t i = 0; i < t->dims[0]; i++)
    for (int64_t j = 0; j < t->dims[1]; j++)
      for (int64_t k = 0; k < t->dims[2]; k++)
        pl_tensor_set_f64 (s, (j * t->dims[0] + i) * t->dims[2] + k,
                           pl_tensor_get_f64 (t, (i * t->dims[1] + j) * t->dims[2] + k));
  return s;
}

static void
test_lstm_peepholes (void)
{
  enum { SEQ = 3, BATCH = 2, IN = 3, HID = 4 };
  g_autoptr (PlTensor) x = pl_test_random (F64, 3, PL_DIMS (SEQ, BATCH, IN), 11, -1, 1);
  g_autoptr (PlTensor) w = pl_test_random (F64, 3, PL_DIMS (1, 4 * HID, IN), 12, -1, 1);
  g_autoptr (PlTensor) r = pl_test_random (F64, 3, PL_DIMS (1, 4 * HID, HID), 13, -1, 1);
  g_autoptr (PlTensor) b = pl_test_random (F64, 2, PL_DIMS (1, 8 * HID), 14, -0.5, 0.5);
  g_autoptr (PlTensor) lens = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (BATCH), PL_VALS (SEQ, SEQ));
  g_autoptr (PlTensor) h0 = pl_test_random (F64, 3, PL_DIMS (1, BATCH, HID), 15, -1, 1);
  g_autoptr (PlTensor) c0 = pl_test_random (F64, 3, PL_DIMS (1, BATCH, HID), 16, -1, 1);
  g_autoptr (PlTensor) p = pl_test_random (F64, 2, PL_DIMS (1, 3 * HID), 17, -1, 1);
  PlTensor *in[] = { x, w, r, b, lens, h0, c0, p };

  for (int coupled = 0; coupled < 2; coupled++)
    {
      LstmCase k = { SEQ, BATCH, IN, HID, x->data, w->data, r->data, b->data, p->data, coupled };
      double h[BATCH * HID], c[BATCH * HID], y[SEQ * BATCH * HID];
      memcpy (h, h0->data, sizeof h);
      memcpy (c, c0->data, sizeof c);
      lstm_by_hand (&k, h, c, y);
      g_autoptr (PlTensor) want_y = pl_test_tensor (F64, 4, PL_DIMS (SEQ, 1, BATCH, HID), y);
      g_autoptr (PlTensor) want_h = pl_test_tensor (F64, 3, PL_DIMS (1, BATCH, HID), h);
      g_autoptr (PlTensor) want_c = pl_test_tensor (F64, 3, PL_DIMS (1, BATCH, HID), c);

      PlNode *node = NULL;
      g_autoptr (PlGraph) g = pl_test_node_graph ("LSTM", 8, in, 0, 3, &node);
      pl_node_set_attr_int (node, "hidden_size", HID);
      pl_node_set_attr_int (node, "input_forget", coupled);
      PlTensor **out = pl_test_run (g, in, 0);
      pl_test_assert_close (out[0], want_y, 1e-12, 1e-12);
      pl_test_assert_close (out[1], want_h, 1e-12, 1e-12);
      pl_test_assert_close (out[2], want_c, 1e-12, 1e-12);
      pl_interp_free_outputs (out, 3);
    }
}

/* layout 1 takes X, initial_h, initial_c batch-major and gives Y
 * [batch, seq, dir, hidden], Y_h and Y_c [batch, dir, hidden]. */
static void
test_lstm_layout (void)
{
  enum { SEQ = 3, BATCH = 2, IN = 2, HID = 3 };
  g_autoptr (PlTensor) x = pl_test_random (F64, 3, PL_DIMS (SEQ, BATCH, IN), 21, -1, 1);
  g_autoptr (PlTensor) w = pl_test_random (F64, 3, PL_DIMS (2, 4 * HID, IN), 22, -1, 1);
  g_autoptr (PlTensor) r = pl_test_random (F64, 3, PL_DIMS (2, 4 * HID, HID), 23, -1, 1);
  g_autoptr (PlTensor) h0 = pl_test_random (F64, 3, PL_DIMS (2, BATCH, HID), 25, -1, 1);
  g_autoptr (PlTensor) c0 = pl_test_random (F64, 3, PL_DIMS (2, BATCH, HID), 26, -1, 1);
  g_autoptr (PlTensor) x1 = swap01 (x), h01 = swap01 (h0), c01 = swap01 (c0);
  PlTensor *in0[] = { x, w, r, NULL, NULL, h0, c0 }, *in1[] = { x1, w, r, NULL, NULL, h01, c01 };
  PlTensor **out[2];
  PlGraph *g[2];
  for (int layout = 0; layout < 2; layout++)
    {
      PlNode *node = NULL;
      g[layout] = pl_test_node_graph ("LSTM", 7, layout ? in1 : in0, 0, 3, &node);
      pl_node_set_attr_int (node, "hidden_size", HID);
      pl_node_set_attr_int (node, "layout", layout);
      pl_node_set_attr_string (node, "direction", "bidirectional");
      out[layout] = pl_test_run (g[layout], layout ? in1 : in0, 0);
    }
  g_assert_cmpint (out[1][0]->dims[0], ==, BATCH);
  g_assert_cmpint (out[1][0]->dims[1], ==, SEQ);
  for (int64_t t = 0; t < SEQ; t++)
    for (int64_t d = 0; d < 2; d++)
      for (int64_t n = 0; n < BATCH; n++)
        for (int64_t j = 0; j < HID; j++)
          g_assert_cmpfloat (pl_tensor_get_f64 (out[0][0], ((t * 2 + d) * BATCH + n) * HID + j), ==,
                             pl_tensor_get_f64 (out[1][0], ((n * SEQ + t) * 2 + d) * HID + j));
  for (int k = 1; k < 3; k++)
    {
      g_autoptr (PlTensor) swapped = swap01 (out[0][k]);
      pl_test_assert_close (out[1][k], swapped, 0, 0);
    }
  for (int layout = 0; layout < 2; layout++)
    {
      pl_interp_free_outputs (out[layout], 3);
      pl_graph_free (g[layout]);
    }
}

/* Only Y_c, the others omitted (""): the same Y_c as with all three. */
static void
test_lstm_omitted_outputs (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlTensor) x = pl_test_random (F64, 3, PL_DIMS (2, 1, 2), 31, -1, 1);
  g_autoptr (PlTensor) w = pl_test_random (F64, 3, PL_DIMS (1, 8, 2), 32, -1, 1);
  g_autoptr (PlTensor) r = pl_test_random (F64, 3, PL_DIMS (1, 8, 2), 33, -1, 1);
  PlTensor *in[] = { x, w, r };
  g_autoptr (PlTensor) want = run_rnn ("LSTM", 3, in, 3, 2, 2, "forward");

  g_autoptr (PlGraph) g = pl_graph_new ("test");
  g->opset = 17;
  PlValue *v[3];
  for (int i = 0; i < 3; i++)
    {
      g_autofree char *name = g_strdup_printf ("in%d", i);
      PlShape s = pl_tensor_shape (in[i]);
      v[i] = pl_graph_add_input (g, name, F64, &s, &error);
    }
  PlNode *node = pl_graph_add_node (g, "LSTM", NULL, "lstm", 3, v, 3, (const char *[]) { "", "", "y_c" }, &error);
  g_assert_no_error (error);
  pl_graph_add_output (g, node->outputs[2]);
  g_assert_true (pl_graph_infer_shapes (g, &error));
  PlTensor **out = pl_interp_run (g, in, NULL, &error);
  g_assert_no_error (error);
  pl_test_assert_close (out[0], want, 0, 0);
  pl_interp_free_outputs (out, 1);
}

/* --- errors ------------------------------------------------------------------------ */

static void
expect_error (const char *op, int n, PlTensor *const *in, const char *attr, const char *value, const char *msg)
{
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = pl_test_node_graph (op, n, in, 0, 2, &node);
  pl_node_set_attr_int (node, "hidden_size", 2);
  if (attr && strcmp (attr, "hidden_size") == 0)
    pl_node_set_attr_int (node, attr, atoi (value));
  else if (attr && strcmp (attr, "layout") == 0)
    pl_node_set_attr_int (node, attr, atoi (value));
  else if (attr && strcmp (attr, "activations") == 0)
    pl_node_set_attr_strings (node, attr, (const char *[]) { value }, 1);
  else if (attr)
    pl_node_set_attr_string (node, attr, value);
  pl_test_expect_infer_error (g, msg);
  /* the reference checks the same without inference */
  g_autoptr (GError) error = NULL;
  PlTensor *out[3] = { NULL };
  g_assert_false (pl_op_info (node->op)->eval (node, in, out, &error));
  g_assert_nonnull (strstr (error->message, msg));
  for (int i = 0; i < 3; i++)
    g_assert_null (out[i]);
}

static void
test_errors (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (F64, 3, PL_DIMS (1, 1, 2), NULL);
  g_autoptr (PlTensor) w = pl_test_tensor (F64, 3, PL_DIMS (1, 2, 2), NULL);
  g_autoptr (PlTensor) r = pl_test_tensor (F64, 3, PL_DIMS (1, 2, 2), NULL);
  g_autoptr (PlTensor) w8 = pl_test_tensor (F64, 3, PL_DIMS (1, 8, 2), NULL);
  g_autoptr (PlTensor) r8 = pl_test_tensor (F64, 3, PL_DIMS (1, 8, 2), NULL);
  g_autoptr (PlTensor) w_bad = pl_test_tensor (F64, 3, PL_DIMS (1, 3, 2), NULL);
  g_autoptr (PlTensor) w_rank = pl_test_tensor (F64, 2, PL_DIMS (2, 2), NULL);
  g_autoptr (PlTensor) h0_bad = pl_test_tensor (F64, 3, PL_DIMS (1, 2, 2), NULL);
  g_autoptr (PlTensor) x32 = pl_test_tensor (PL_DTYPE_F32, 3, PL_DIMS (1, 1, 2), NULL);
  g_autoptr (PlTensor) xi = pl_test_tensor (PL_DTYPE_I32, 3, PL_DIMS (1, 1, 2), NULL);

  expect_error ("RNN", 3, (PlTensor *[]) { x, w_bad, r }, NULL, NULL,
                "W is [1, 3, 2], expected [1, 2, 2] (hidden_size 2, 1 direction)");
  expect_error ("RNN", 3, (PlTensor *[]) { x, w_rank, r }, NULL, NULL, "W must have rank 3, not 2");
  expect_error ("RNN", 3, (PlTensor *[]) { x, w, r }, "hidden_size", "3", "expected [1, 3, 2] (hidden_size 3");
  /* GRU's W holds three gates */
  expect_error ("GRU", 3, (PlTensor *[]) { x, w, r }, NULL, NULL, "W is [1, 2, 2], expected [1, 6, 2]");
  expect_error ("RNN", 3, (PlTensor *[]) { x, w, r }, "direction", "bidirectional", "expected [2, 2, 2]");
  expect_error ("RNN", 6, (PlTensor *[]) { x, w, r, NULL, NULL, h0_bad }, NULL, NULL,
                "initial_h is [1, 2, 2], expected [1, 1, 2]");
  expect_error ("RNN", 3, (PlTensor *[]) { x, w, r }, "direction", "sideways", "direction 'sideways'");
  expect_error ("RNN", 3, (PlTensor *[]) { x, w, r }, "layout", "2", "layout must be 0 or 1");
  expect_error ("RNN", 3, (PlTensor *[]) { x, w, r }, "activations", "Swish", "activation 'Swish' is not supported");
  expect_error ("LSTM", 3, (PlTensor *[]) { x, w8, r8 }, "activations", "Tanh",
                "activations must list 3 names per direction, not 1");
  /* the graph checks required inputs before inference; the reference checks too */
  expect_error ("RNN", 3, (PlTensor *[]) { x, NULL, r }, NULL, NULL, "input 1");

  /* types: float X, the weights of X's type */
  g_autoptr (PlGraph) gi = pl_test_node_graph ("RNN", 3, (PlTensor *[]) { xi, w, r }, 0, 2, NULL);
  pl_test_expect_infer_error (gi, "input 0 has unsupported dtype i32");
  g_autoptr (PlGraph) gm = pl_test_node_graph ("RNN", 3, (PlTensor *[]) { x32, w, r }, 0, 2, NULL);
  pl_test_expect_infer_error (gm, "inputs 0 and 1 must have the same dtype");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/Rnn/rnn-one-step", test_rnn_one_step);
  g_test_add_func ("/Passlab/Rnn/rnn-activations", test_rnn_activations);
  g_test_add_func ("/Passlab/Rnn/rnn-bidirectional", test_rnn_bidirectional);
  g_test_add_func ("/Passlab/Rnn/sequence-lens", test_sequence_lens);
  g_test_add_func ("/Passlab/Rnn/gru-linear-before-reset", test_gru_linear_before_reset);
  g_test_add_func ("/Passlab/Rnn/lstm-peepholes", test_lstm_peepholes);
  g_test_add_func ("/Passlab/Rnn/lstm-layout", test_lstm_layout);
  g_test_add_func ("/Passlab/Rnn/lstm-omitted-outputs", test_lstm_omitted_outputs);
  g_test_add_func ("/Passlab/Rnn/errors", test_errors);
  return g_test_run ();
}
