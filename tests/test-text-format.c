/* test-text-format.c — the `.graph` text format: parsing, printing, the exact
 * print(parse(print(g))) == print(g) round trip, error messages with their
 * locations, robustness against mangled input, and the sample graphs in
 * data/graphs/ (parse, verify, round trip, run). */
#define G_LOG_DOMAIN "passlab"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "onnx-io.h"
#include "test-util.h"
#include "text-format.h"

/* Parses text, failing the test on error. */
static PlGraph *
parse_ok (const char *text)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_text_parse (text, -1, "test.graph", &error);
  if (!g)
    g_error ("parse failed: %s", error->message);
  return g;
}

/* Asserts that g verifies and that printing, parsing and printing again
 * gives the same text. Returns the printed text. */
static char *
assert_round_trip (const PlGraph *g)
{
  g_autoptr (GError) error = NULL;
  if (!pl_graph_verify (g, &error))
    g_error ("verify failed: %s", error->message);
  char *text = pl_text_print (g);
  g_autoptr (PlGraph) back = pl_text_parse (text, -1, "printed.graph", &error);
  if (!back)
    g_error ("printed text does not parse: %s\n%s", error->message, text);
  if (!pl_graph_verify (back, &error))
    g_error ("reparsed graph does not verify: %s", error->message);
  g_autofree char *again = pl_text_print (back);
  g_assert_cmpstr (again, ==, text);
  return text;
}

/* --- parsing ------------------------------------------------------------------- */

static const char demo[] =
  "# a small graph\n"
  "graph demo opset 17 {\n"
  "  input x: f32[2, 3]\n"
  "  const w: f32[3] = [0.5, -1, 2.0]   # integers are fine in float data\n"
  "  const sh: i64[2] = [3, 2]\n"
  "  y: f32[2, 3] = Mul(x, w)\n"
  "  @second r = Relu(y) after(serialize: y)\n"
  "  t = Reshape(r, sh)\n"
  "  output t, y\n"
  "}\n";

static void
test_parse_basic (void)
{
  g_autoptr (PlGraph) g = parse_ok (demo);
  g_assert_cmpstr (g->name, ==, "demo");
  g_assert_cmpint (g->opset, ==, 17);
  g_assert_cmpuint (g->inputs->len, ==, 1);
  g_assert_cmpuint (g->nodes->len, ==, 3);
  g_assert_cmpuint (g->outputs->len, ==, 2);

  PlValue *w = pl_graph_find_value (g, "w");
  g_assert_nonnull (w);
  g_assert_nonnull (w->constant);
  pl_test_assert_values (w->constant, PL_VALS (0.5, -1, 2));

  PlNode *r = pl_graph_find_node (g, "second");
  g_assert_nonnull (r);
  g_assert_cmpstr (r->op_type, ==, "Relu");
  g_assert_cmpstr (r->outputs[0]->name, ==, "r");
  g_assert_cmpint (r->n_controls, ==, 1);
  g_assert_true (r->controls[0].node == pl_graph_find_node (g, "y"));
  g_assert_cmpint (r->controls[0].kind, ==, PL_CONTROL_SERIALIZE);

  PlValue *t = pl_graph_find_value (g, "t");
  g_assert_cmpint (t->dtype, ==, PL_DTYPE_F32);
  g_assert_cmpint (t->shape.rank, ==, 2);
  g_assert_cmpint (t->shape.dims[0].size, ==, 3);
  g_assert_cmpint (t->shape.dims[1].size, ==, 2);

  /* y = x * w; r = relu(y); t = reshape(r, [3, 2]) */
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, -1, -2, -3));
  g_autoptr (GError) error = NULL;
  PlTensor **out = pl_interp_run (g, &x, NULL, &error);
  g_assert_no_error (error);
  pl_test_assert_values (out[0], PL_VALS (0.5, 0, 6, 0, 2, 0));
  pl_test_assert_values (out[1], PL_VALS (0.5, -2, 6, -0.5, 2, -6));
  g_assert_cmpint (out[0]->rank, ==, 2);
  g_assert_cmpint (out[0]->dims[0], ==, 3);
  pl_interp_free_outputs (out, 2);

  g_autofree char *text = assert_round_trip (g);
  g_assert_nonnull (strstr (text, "  @second r: f32[2, 3] = Relu(y) after(serialize: y)\n"));

  /* text with a length need not end in NUL: cut inside a string, the lexer
   * stops at the end (ASan checks that it reads nothing past it) */
  const char cut[] = "graph g {\n  y = F() {s=\"abc";
  g_autofree char *exact = g_memdup2 (cut, sizeof cut - 1);
  g_assert_null (pl_text_parse (exact, sizeof cut - 1, NULL, &error));
  g_assert_nonnull (strstr (error->message, "unterminated string"));
  g_clear_error (&error);
  g_autofree char *exact2 = g_memdup2 (demo, sizeof demo - 2); /* ends in '}', no newline or NUL */
  g_autoptr (PlGraph) g2 = pl_text_parse (exact2, sizeof demo - 2, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (text, "  const w: f32[3] = [0.5, -1.0, 2.0]\n"));
}

/* Forms the printer never writes: bare scalars, fill/random, typed empty
 * lists, omitted inputs and outputs, domains, quoted names. */
static void
test_parse_forms (void)
{
  g_autoptr (PlGraph) g = parse_ok (
    "graph {\n"
    "  input \"my input\": f32[N, 4]\n"
    "  const eps: f64[] = 1e-05\n"
    "  const ones: f32[2, 2] = fill(1)\n"
    "  const r: f32[100] = random(seed=7, lo=-2, hi=2)\n"
    "  const r2: f32[100] = random(hi=2, seed=7, lo=-2)\n"
    "  const b: u8[3] = base64\"AQID\"\n"
    "  @n1 _, two = com.example::Split2(\"my input\", _, eps) {e=[], f=floats[], s=strings[], m=[1, 2.5], neg=-inf}\n"
    "  output two\n"
    "}\n");
  g_assert_cmpstr (g->name, ==, "graph");
  PlValue *in = pl_graph_find_value (g, "my input");
  g_assert_true (in->is_input);
  g_assert_cmpstr (in->shape.dims[0].sym, ==, "N");
  g_assert_cmpfloat (pl_tensor_get_f64 (pl_graph_find_value (g, "eps")->constant, 0), ==, 1e-05);
  pl_test_assert_values (pl_graph_find_value (g, "ones")->constant, PL_VALS (1, 1, 1, 1));
  pl_test_assert_values (pl_graph_find_value (g, "b")->constant, PL_VALS (1, 2, 3));

  PlTensor *r = pl_graph_find_value (g, "r")->constant, *r2 = pl_graph_find_value (g, "r2")->constant;
  g_assert_cmpmem (r->data, 400, r2->data, 400);
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < 100; i++)
    lo = MIN (lo, pl_tensor_get_f64 (r, i)), hi = MAX (hi, pl_tensor_get_f64 (r, i));
  g_assert_cmpfloat (lo, >=, -2);
  g_assert_cmpfloat (hi, <, 2);
  g_assert_cmpfloat (hi - lo, >, 2); /* spread over the range, not constant */

  PlNode *n = pl_graph_find_node (g, "n1");
  g_assert_cmpint (n->op, ==, PL_OP_OPAQUE);
  g_assert_cmpstr (n->domain, ==, "com.example");
  g_assert_cmpstr (n->op_type, ==, "Split2");
  g_assert_null (n->inputs[1]);
  g_assert_null (n->outputs[0]);
  g_assert_cmpint (pl_node_attr (n, "e")->type, ==, PL_ATTR_INTS);
  g_assert_cmpint (pl_node_attr (n, "f")->type, ==, PL_ATTR_FLOATS);
  g_assert_cmpint (pl_node_attr (n, "s")->type, ==, PL_ATTR_STRINGS);
  const PlAttr *m = pl_node_attr (n, "m");
  g_assert_cmpint (m->type, ==, PL_ATTR_FLOATS);
  g_assert_cmpfloat (m->floats.v[0], ==, 1.0f);
  g_assert_cmpfloat (m->floats.v[1], ==, 2.5f);
  g_assert_cmpfloat (pl_node_attr (n, "neg")->f, ==, -INFINITY);

  g_autofree char *text = assert_round_trip (g);
  g_assert_nonnull (strstr (text, "graph {\n  input \"my input\": f32[N, 4]\n"));
  g_assert_nonnull (strstr (text, "const eps: f64[] = 1e-05\n"));
  g_assert_nonnull (strstr (text, "const b: u8[3] = [1, 2, 3]\n"));
  g_assert_nonnull (strstr (text, "const r: f32[100] = base64\""));
  g_assert_nonnull (strstr (text, "@n1 _, two = com.example::Split2(\"my input\", _, eps) "
                                  "{e=[], f=floats[], s=strings[], m=[1.0, 2.5], neg=-inf}\n"));
}

/* --- round trips of hand-made graphs ------------------------------------------------ */

static void
add_const (PlGraph *g, const char *name, PlDType dtype, int n, const double *values)
{
  g_autoptr (PlTensor) t = pl_test_tensor (dtype, 1, PL_DIMS (n), values);
  g_assert_nonnull (pl_graph_add_constant (g, name, t, NULL));
}

static PlNode *
add_node (PlGraph *g, const char *op, const char *domain, const char *name, int n_in,
          PlValue *const *in, int n_out, const char *const *out_names)
{
  g_autoptr (GError) error = NULL;
  PlNode *node = pl_graph_add_node (g, op, domain, name, n_in, in, n_out, out_names, &error);
  g_assert_no_error (error);
  return node;
}

static void
infer (PlNode *node)
{
  g_autoptr (GError) error = NULL;
  pl_node_infer (node, &error);
  g_assert_no_error (error);
}

/* Every attribute type, every dtype, symbolic and unknown dims, omitted
 * inputs and outputs, control edges of both kinds, a fusion body and graph
 * attributes, names that must be quoted. */
static PlGraph *
make_everything_graph (void)
{
  PlGraph *g = pl_graph_new ("everything");
  g->opset = 17;
  PlShape s = pl_shape_from_dims (2, PL_DIMS (3, 4));
  s.dims[0] = pl_dim_symbol ("batch size");
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s, NULL);
  PlShape s2 = pl_shape_from_dims (2, PL_DIMS (1, 4));
  s2.dims[0] = pl_dim_unknown ();
  pl_graph_add_input (g, "input", PL_DTYPE_F16, &s2, NULL);
  PlShape unk = pl_shape_unknown (), scalar = pl_shape_scalar ();
  pl_graph_add_input (g, "_", PL_DTYPE_BOOL, &unk, NULL);
  pl_graph_add_input (g, "onnx::Mul_0", PL_DTYPE_I8, &scalar, NULL);

  add_const (g, "c_f32", PL_DTYPE_F32, 5, PL_VALS (0.1, -0.0, 1e-40, 3.4028234663852886e38, 100));
  add_const (g, "c_f64", PL_DTYPE_F64, 4, PL_VALS (0.1, 1.0 / 3, -5e-324, 1e300));
  add_const (g, "c_f16", PL_DTYPE_F16, 4, PL_VALS (0.1, 65504, 6e-8, -2.5));
  add_const (g, "c_bf16", PL_DTYPE_BF16, 3, PL_VALS (0.1, 3e38, -1));
  add_const (g, "c_i64", PL_DTYPE_I64, 3, PL_VALS (-9223372036854775807.0 - 1, 0, 9007199254740993.0));
  add_const (g, "c_i32", PL_DTYPE_I32, 2, PL_VALS (-2147483648.0, 2147483647));
  add_const (g, "c_i16", PL_DTYPE_I16, 2, PL_VALS (-32768, 32767));
  add_const (g, "c_i8", PL_DTYPE_I8, 2, PL_VALS (-128, 127));
  add_const (g, "c_u32", PL_DTYPE_U32, 1, PL_VALS (4294967295.0));
  add_const (g, "c_u16", PL_DTYPE_U16, 1, PL_VALS (65535));
  add_const (g, "c_u8", PL_DTYPE_U8, 1, PL_VALS (255));
  add_const (g, "c_bool", PL_DTYPE_BOOL, 2, PL_VALS (0, 1));
  g_autoptr (PlTensor) u64 = pl_tensor_new (PL_DTYPE_U64, 1, PL_DIMS (2), NULL);
  ((guint64 *) u64->data)[0] = G_MAXUINT64;
  ((guint64 *) u64->data)[1] = 42;
  pl_graph_add_constant (g, "c_u64", u64, NULL);
  g_autoptr (PlTensor) big = pl_test_random (PL_DTYPE_F32, 2, PL_DIMS (10, 10), 5, -1, 1);
  pl_graph_add_constant (g, "c_big", big, NULL);
  g_autoptr (PlTensor) same = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (65), NULL);
  for (int i = 0; i < 65; i++)
    pl_tensor_set_f64 (same, i, 0.25);
  pl_graph_add_constant (g, "c_same", same, NULL);
  g_autoptr (PlTensor) empty = pl_tensor_new (PL_DTYPE_F32, 2, PL_DIMS (0, 3), NULL);
  pl_graph_add_constant (g, "c_empty", empty, NULL);

  PlNode *relu = add_node (g, "Relu", NULL, "first relu", 1, &x, 1, (const char *[]) { "r" });
  infer (relu);
  PlValue *r = relu->outputs[0];

  /* an unknown op with every attribute type */
  PlValue *ins[] = { r, NULL, pl_graph_find_value (g, "c_f32") };
  PlNode *op = add_node (g, "Everything", "com.example", NULL, 3, ins, 3,
                         (const char *[]) { "", "e1", "e.2" });
  pl_node_set_attr_int (op, "i", -7);
  pl_node_set_attr_float (op, "f", 0.1f);
  pl_node_set_attr_float (op, "f_int", 3.0f);
  pl_node_set_attr_float (op, "f_nan", NAN);
  pl_node_set_attr_string (op, "s", "tab\there \"quoted\" back\\slash \x01 caf\xc3\xa9");
  pl_node_set_attr_ints (op, "ints", PL_DIMS (1, -2, G_MAXINT64), 3);
  pl_node_set_attr_ints (op, "no ints", NULL, 0);
  pl_node_set_attr_floats (op, "floats", (const float[]) { 0.5f, 1e-30f, -INFINITY, 2.0f }, 4);
  pl_node_set_attr_floats (op, "nofloats", NULL, 0);
  pl_node_set_attr_strings (op, "strings", (const char *const[]) { "a", "", "input" }, 3);
  pl_node_set_attr_strings (op, "nostrings", NULL, 0);
  pl_node_set_attr_tensor (op, "tensor", pl_graph_find_value (g, "c_i16")->constant);
  g_autoptr (PlTensor) sc = pl_tensor_new_scalar (PL_DTYPE_F64, 0.1);
  pl_node_set_attr_tensor (op, "scalar", sc);
  pl_node_set_attr_tensor (op, "bigt", big);
  PlGraph *sub = pl_graph_new ("sub");
  PlShape s4 = pl_shape_from_dims (1, PL_DIMS (4));
  PlValue *p = pl_graph_add_input (sub, "p", PL_DTYPE_F32, &s4, NULL);
  PlNode *neg = add_node (sub, "Neg", NULL, NULL, 1, &p, 1, NULL);
  infer (neg);
  pl_graph_add_output (sub, neg->outputs[0]);
  pl_node_set_attr_graph (op, "graph", sub);
  infer (op);
  /* an unknown op's output type, as an importer sets it from the model */
  op->outputs[1]->dtype = PL_DTYPE_F32;
  op->outputs[1]->shape = s;

  /* a fusion node: exp(a) + b */
  PlGraph *body = pl_graph_new ("fused_1");
  PlValue *a = pl_graph_add_input (body, "a", PL_DTYPE_F32, &s, NULL);
  PlValue *b = pl_graph_add_input (body, "b", PL_DTYPE_F32, &s, NULL);
  PlNode *ex = add_node (body, "Exp", NULL, NULL, 1, &a, 1, (const char *[]) { "ea" });
  infer (ex);
  PlNode *add = add_node (body, "Add", NULL, NULL, 2, (PlValue *[]) { ex->outputs[0], b }, 1,
                          (const char *[]) { "sum" });
  infer (add);
  pl_graph_add_output (body, add->outputs[0]);
  PlNode *fusion = add_node (g, "Fusion", NULL, "fusion", 2, (PlValue *[]) { r, x }, 1,
                             (const char *[]) { "fused" });
  pl_node_set_attr_string (fusion, "kind", "loop");
  pl_node_set_body (fusion, body);
  infer (fusion);

  /* control edges of both kinds */
  PlNode *id = add_node (g, "Identity", NULL, "id", 1, &fusion->outputs[0], 1, (const char *[]) { "out" });
  pl_node_add_control (id, op, PL_CONTROL_SERIALIZE);
  pl_node_add_control (id, relu, PL_CONTROL_PREFETCH);
  infer (id);

  /* If with graph attributes and an output type given from outside */
  PlValue *cond = pl_graph_find_value (g, "_");
  PlNode *iff = add_node (g, "If", NULL, NULL, 1, &cond, 1, (const char *[]) { "branch" });
  for (int k = 0; k < 2; k++)
    {
      PlGraph *br = pl_graph_new (k ? "else" : "then");
      g_autoptr (PlTensor) v = pl_tensor_new_scalar (PL_DTYPE_F32, k ? -1.5 : 1.5);
      PlNode *cn = add_node (br, "Constant", NULL, NULL, 0, NULL, 1, (const char *[]) { "v" });
      pl_node_set_attr_tensor (cn, "value", v);
      infer (cn);
      pl_graph_add_output (br, cn->outputs[0]);
      pl_node_set_attr_graph (iff, k ? "else_branch" : "then_branch", br);
    }
  infer (iff);
  iff->outputs[0]->dtype = PL_DTYPE_F32;
  iff->outputs[0]->shape = pl_shape_scalar ();

  /* a node without outputs */
  add_node (g, "Sink", "com.example", "sink", 1, &r, 0, NULL);

  pl_graph_add_output (g, id->outputs[0]);
  pl_graph_add_output (g, op->outputs[2]);
  pl_graph_add_output (g, iff->outputs[0]);
  pl_graph_add_output (g, r);
  return g;
}

static void
test_round_trip_everything (void)
{
  g_autoptr (PlGraph) g = make_everything_graph ();
  g_autofree char *text = assert_round_trip (g);
  if (g_test_verbose ())
    g_printerr ("%s", text);

  /* the printed forms this format promises */
  const char *expected[] = {
    "graph everything opset 17 {\n",
    "  input x: f32[\"batch size\", 4]\n",
    "  input input: f16[?, 4]\n",
    "  input \"_\": bool[*]\n",
    "  input \"onnx::Mul_0\": i8[]\n",
    "  const c_f32: f32[5] = [0.1, -0.0, 1e-40, 3.4028235e+38, 100.0]\n",
    "  const c_f64: f64[4] = [0.1, 0.3333333333333333, -5e-324, 1e+300]\n",
    "  const c_f16: f16[4] = [0.1, 65504.0, 6e-08, -2.5]\n",
    "  const c_i64: i64[3] = [-9223372036854775808, 0, 9007199254740992]\n",
    "  const c_u64: u64[2] = [18446744073709551615, 42]\n",
    "  const c_bool: bool[2] = [0, 1]\n",
    "  const c_big: f32[10, 10] = base64\"",
    "  const c_same: f32[65] = fill(0.25)\n",
    "  const c_empty: f32[0, 3] = []\n",
    "  @\"first relu\" r: f32[\"batch size\", 4] = Relu(x)\n",
    "_, e1: f32[\"batch size\", 4], e.2 = com.example::Everything(r, _, c_f32) {i=-7, f=0.1, f_int=3.0, "
    "f_nan=nan, s=\"tab\\there \\\"quoted\\\" back\\\\slash \\x01 caf\xc3\xa9\", ints=[1, -2, 9223372036854775807], "
    "\"no ints\"=[], floats=[0.5, 1e-30, -inf, 2.0], nofloats=floats[], strings=[\"a\", \"\", \"input\"], "
    "nostrings=strings[], tensor=i16[2] [-32768, 32767], scalar=f64[] 0.1, bigt=f32[10, 10] base64\"",
    ", graph=graph sub {\n    input p: f32[4]\n    @Neg Neg_1: f32[4] = Neg(p)\n    output Neg_1\n  }}\n",
    "  @fusion fused: f32[\"batch size\", 4] = Fusion(r, x) {kind=\"loop\"} body graph fused_1 {\n"
    "    input a: f32[\"batch size\", 4]\n",
    "    @Add sum: f32[\"batch size\", 4] = Add(ea, b)\n    output sum\n  }\n",
    "  @id out: f32[\"batch size\", 4] = Identity(fused) after(serialize: Everything, prefetch: \"first relu\")\n",
    "  @If branch: f32[] = If(\"_\") {then_branch=graph then {\n    @Constant v: f32[] = Constant() {value=f32[] 1.5}\n",
    "  @sink = com.example::Sink(r)\n",
    "  output out, e.2, branch, r\n}\n",
  };
  for (size_t i = 0; i < G_N_ELEMENTS (expected); i++)
    if (!strstr (text, expected[i]))
      g_error ("missing from the printed graph: %s\n---\n%s", expected[i], text);

  /* data survives bit-exactly */
  g_autoptr (PlGraph) back = parse_ok (text);
  for (guint i = 0; i < g->values->len; i++)
    {
      PlValue *v = g->values->pdata[i];
      if (!v->constant)
        continue;
      PlValue *w = pl_graph_find_value (back, v->name);
      g_assert_nonnull (w);
      g_assert_cmpmem (v->constant->data, pl_tensor_nbytes (v->constant), w->constant->data,
                       pl_tensor_nbytes (w->constant));
    }
  PlNode *op = pl_graph_find_node (back, "Everything");
  g_assert_cmpstr (pl_node_attr (op, "s")->s, ==, "tab\there \"quoted\" back\\slash \x01 caf\xc3\xa9");
  g_assert_cmpfloat (pl_node_attr (op, "f")->f, ==, 0.1f);
  g_assert_true (isnan (pl_node_attr (op, "f_nan")->f));
  g_assert_cmpint (pl_node_attr (op, "f_int")->type, ==, PL_ATTR_FLOAT);
  g_assert_cmpint (pl_node_attr (op, "ints")->ints.v[2], ==, G_MAXINT64);
  g_assert_cmpmem (pl_node_attr (op, "bigt")->t->data, 400,
                   pl_graph_find_value (g, "c_big")->constant->data, 400);
}

/* Every f16 and bf16 bit pattern, and many random f32/f64 ones, print as
 * decimals that read back to the same bits (NaNs print as "nan"). */
static void
check_float_patterns (PlDType dtype, int n_patterns, GRand *rand)
{
  g_autoptr (PlGraph) g = pl_graph_new ("floats");
  size_t es = pl_dtype_size (dtype);
  for (int start = 0; start < n_patterns; start += 64)
    {
      g_autoptr (PlTensor) t = pl_tensor_new (dtype, 1, PL_DIMS (64), NULL);
      for (int i = 0; i < 64; i++)
        {
          guint64 bits = es == 2 ? (guint64) (start + i)
                                 : ((guint64) g_rand_int (rand) << 32) | g_rand_int (rand);
          memcpy ((char *) t->data + i * es, &bits, es); /* little-endian hosts */
          if (isnan (pl_tensor_get_f64 (t, i)))
            memset ((char *) t->data + i * es, 0, es);
        }
      g_autofree char *name = g_strdup_printf ("c%d", start);
      pl_graph_add_constant (g, name, t, NULL);
    }
  g_autofree char *text = pl_text_print (g);
  g_autoptr (PlGraph) back = parse_ok (text);
  for (guint i = 0; i < g->values->len; i++)
    {
      PlValue *v = g->values->pdata[i], *w = pl_graph_find_value (back, v->name);
      g_assert_cmpmem (v->constant->data, 64 * es, w->constant->data, 64 * es);
    }
}

static void
test_float_exact (void)
{
  g_autoptr (GRand) rand = g_rand_new_with_seed (11);
  check_float_patterns (PL_DTYPE_F16, 65536, rand);
  check_float_patterns (PL_DTYPE_BF16, 65536, rand);
  check_float_patterns (PL_DTYPE_F32, 8192, rand);
  check_float_patterns (PL_DTYPE_F64, 8192, rand);

  /* FLOAT and FLOATS attributes */
  g_autoptr (PlGraph) g = pl_graph_new ("attrs");
  float v[200];
  for (int i = 0; i < 200; i++)
    {
      guint32 bits = g_rand_int (rand);
      memcpy (&v[i], &bits, 4);
      if (isnan (v[i]))
        v[i] = 1.0f / (float) (i + 1);
    }
  PlNode *n = add_node (g, "Op", "x", "n", 0, NULL, 1, NULL);
  pl_node_set_attr_floats (n, "v", v, 200);
  pl_node_set_attr_float (n, "one", v[7]);
  g_autofree char *text = assert_round_trip (g);
  g_autoptr (PlGraph) back = parse_ok (text);
  PlNode *m = pl_graph_find_node (back, "n");
  g_assert_cmpmem (pl_node_attr (m, "v")->floats.v, sizeof v, v, sizeof v);
  g_assert_cmpmem (&pl_node_attr (m, "one")->f, 4, &v[7], 4);
}

/* --- errors ------------------------------------------------------------------------- */

typedef struct {
  const char *text;
  const char *where;   /* "line:col: " */
  const char *message; /* a substring of the message */
} ErrorCase;

static const ErrorCase error_cases[] = {
  { "graph g {\n  input x: f32[2]\n  y = Relu(foo)\n}\n", "3:12", "undefined value 'foo'" },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x\n}\n", "4:1", "expected ',' or ')', got '}'" },
  { "graph g {\n  input x: f31[2]\n}\n", "2:12", "unknown dtype 'f31'" },
  { "graph g {\n  const c: f32[2, 2] = [1, 2, 3]\n}\n", "2:9", "data has 3 values, type f32[2, 2] needs 4" },
  { "graph g {\n  input x: f32[2, 2]\n  y: f32[4] = Relu(x)\n}\n", "3:3", "annotated type f32[4] but inferred f32[2, 2]" },
  { "graph g {\n  input x: f32[2, 2]\n  y: i64[2, 2] = Relu(x)\n}\n", "3:3", "annotated type i64[2, 2] but inferred f32[2, 2]" },
  { "graph g {\n  input x: f32[2]\n  input x: f32[3]\n}\n", "3:9", "duplicate value name 'x'" },
  { "graph g {\n  input x: f32[2]\n  x = Relu(x)\n}\n", "3:3", "duplicate value name 'x'" },
  { "graph g {\n  input x: f32[2]\n  a, a = Split(x)\n}\n", "3:6", "duplicate value name 'a'" },
  { "graph g {\n  input x: f32[2]\n  @n a = Relu(x)\n  @n b = Relu(x)\n}\n", "4:4", "duplicate node name 'n'" },
  { "graph g {\n  input x: f32[1048576, 1048576, 2]\n}\n", "2:34", "more than 1099511627776 elements" },
  { "graph g {\n  input x: f32[1, 1, 1, 1, 1, 1, 1, 1, 1]\n}\n", "2:40", "rank exceeds the maximum of 8" },
  { "graph g {\n  input x: f32[-1]\n}\n", "2:16", "expected a dimension" },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x) after(serialize: zz)\n}\n", "3:32", "undefined node 'zz'" },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x) after(serialize: y)\n}\n", "3:32", "cannot come after itself" },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x) after(wait: y)\n}\n", "3:21", "expected serialize: or prefetch:" },
  { "graph g {\n  input x: f32[2]\n  input z: f32[3]\n  y = Add(x, z)\n}\n", "4:3", "node 'y' (Add): " },
  { "graph g {\n  input x: f32[2]\n  y = Add(x)\n}\n", "3:3", "node 'y' (Add): " },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x) {a=\"abc\n}\n", "3:18", "unterminated string" },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x) {a=\"a\\qc\"}\n}\n", "3:20", "invalid escape in string" },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x) {a=1, a=2}\n}\n", "3:21", "duplicate attribute 'a'" },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x) {a=1e999}\n}\n", "3:18", "out of range" },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x) {a=1e39}\n}\n", "3:18", "out of range for a 32-bit float" },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x) {a=[1, \"b\"]}\n}\n", "3:22", "expected a number, got a string" },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x) {a=99999999999999999999}\n}\n", "3:18", "integer 99999999999999999999 is out of range" },
  { "graph g {\n  input x: f32[2]\n  y = Relu(x) {a=9223372036854775808}\n}\n", "3:18", "out of range for an int64" },
  { "graph g {\n}\nfoo\n", "3:1", "expected end of input, got 'foo'" },
  { "graph g {\n  const c: u8[1] = [256]\n}\n", "2:21", "256 is out of range for u8" },
  { "graph g {\n  const c: i8[1] = [-129]\n}\n", "2:21", "-129 is out of range for i8" },
  { "graph g {\n  const c: bool[1] = [2]\n}\n", "2:23", "out of range for bool" },
  { "graph g {\n  const c: i32[1] = [1.5]\n}\n", "2:22", "expected an integer for i32" },
  { "graph g {\n  const c: f16[1] = [70000]\n}\n", "2:22", "out of range for f16" },
  { "graph g {\n  const c: f32[2] = base64\"AAAA\"\n}\n", "2:27", "data has 3 bytes, type f32[2] needs 8" },
  { "graph g {\n  const c: f32[1] = base64\"AA!A\"\n}\n", "2:27", "invalid base64" },
  { "graph g {\n  const c: f32[N] = [1]\n}\n", "2:9", "static type" },
  { "graph g {\n  const c: f32[2] = random(seed=-1)\n}\n", "2:28", "out of range for seed" },
  { "graph g {\n  const c: f32[2] = random(lo=2, hi=1)\n}\n", "2:9", "lo <= hi" },
  { "graph g {\n  const c: f32[2] = zeros()\n}\n", "2:21", "expected tensor data" },
  { "graph g {\n  const c: f32[100000, 100000] = fill(0)\n}\n", "2:9", "fill() of 10000000000 elements is too large" },
  { "graph g {\n  const c: u8[1099511627776] = random()\n}\n", "2:9", "random() of 1099511627776 elements is too large" },
  { "graph g {\n  const c: f32[1099511627776] = base64\"AAAA\"\n}\n", "2:39", "data has 3 bytes, type f32[1099511627776] needs 4398046511104" },
  { "graph g {\n  $\n}\n", "2:3", "unexpected character '$'" },
  { "graph g {\n  \x01\n}\n", "2:3", "unexpected byte 0x01" },
  { "", "1:1", "expected 'graph', got end of input" },
  { "graph g {\n  input x: f32[2]\n", "3:1", "expected '}', got end of input" },
  { "graph g {\n  input \"\": f32[2]\n}\n", "2:9", "empty name" },
  { "graph g {\n  input x: f32[2]\n  output y\n}\n", "3:10", "undefined value 'y'" },
  { "graph g {\n  input x: f32[2]\n  y = 12abc(x)\n}\n", "3:7", "malformed number" },
  { "graph g {\n  x: f32[2]\n}\n", "3:1", "expected ',' or '=', got '}'" },
  { "graph g {\n  input x: f32[2]\n  Relu(x)\n}\n", "3:7", "expected ',' or '=', got '('" },
  { "graph g {\n  input x: f32[2]\n  y = F(x) body graph b { input p: f32[2] }\n}\n", "3:3", "the body has 1 inputs and 0 outputs, the node 1 and 1" },
  { "graph g opset 99999999999 {\n}\n", "1:15", "opset version out of range" },
  /* a long line is cut around the column */
  { "graph g {\n  y = F() {s=\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\" x}\n}\n",
    "2:217", "expected ',' or '}', got 'x'" },
  /* layouts */
  { "graph g {\n  input x: f32[1, 2, 3, 4]\n  y: f32[1, 2, 3, 4] @NWHC = Relu(x)\n}\n", "3:23",
    "unknown layout 'NWHC' (expected NCHW, NHWC or CHWN)" },
  { "graph g {\n  input x: f32[2]\n  y: f32[2] @ = Relu(x)\n}\n", "3:15",
    "expected a layout (NCHW, NHWC or CHWN), got '='" },
  { "graph g {\n  input x: f32[2, 2]\n  y @NHWC = Relu(x)\n}\n", "3:6", "value 'y' has layout NHWC but rank 2" },
  { "graph g {\n  input x: f32[1, 2, 3, 4]\n  y @CHWN = LayoutTransform(x) {to=\"NHWC\"}\n}\n", "3:6",
    "value 'y' has layout CHWN but its producer 'y' is a LayoutTransform to NHWC" },
  { "graph g {\n  input x: f32[1, 2, 3, 4]\n  y @NHWC = Relu(x)\n  output y\n}\n", "4:10",
    "value 'y' has layout NHWC but is a graph output" },
};

static void
test_errors (void)
{
  for (size_t i = 0; i < G_N_ELEMENTS (error_cases); i++)
    {
      const ErrorCase *c = &error_cases[i];
      g_autoptr (GError) error = NULL;
      g_autoptr (PlGraph) g = pl_text_parse (c->text, -1, "t.graph", &error);
      if (g)
        g_error ("case %zu parsed but should fail with: %s", i, c->message);
      g_assert_true (error->domain == PL_ERROR);
      g_autofree char *prefix = g_strdup_printf ("t.graph:%s: ", c->where);
      if (!g_str_has_prefix (error->message, prefix) || !strstr (error->message, c->message))
        g_error ("case %zu: wanted %s...%s, got:\n%s", i, prefix, c->message, error->message);
      /* the message shows the line and a caret */
      g_assert_nonnull (strchr (error->message, '\n'));
      g_assert_true (g_str_has_suffix (error->message, "^"));
      g_assert_true (g_utf8_validate (error->message, -1, NULL));
      if (!strstr (c->message, "node '"))
        g_assert_cmpint (error->code, ==, PL_ERROR_PARSE);
    }

  /* the whole message, caret included */
  g_autoptr (GError) error = NULL;
  g_assert_null (pl_text_parse (error_cases[0].text, -1, "t.graph", &error));
  g_assert_cmpstr (error->message, ==,
                   "t.graph:3:12: undefined value 'foo'\n"
                   "    y = Relu(foo)\n"
                   "             ^");
  g_clear_error (&error);
  /* columns count characters, not bytes; the default file name */
  g_assert_null (pl_text_parse ("graph g {\n  \"\xc3\xa9\xc3\xa9\" = Relu(q)\n}", -1, NULL, &error));
  g_assert_cmpstr (error->message, ==,
                   "<string>:2:15: undefined value 'q'\n"
                   "    \"\xc3\xa9\xc3\xa9\" = Relu(q)\n"
                   "                ^");
  g_clear_error (&error);
  /* inference errors keep their code */
  g_assert_null (pl_text_parse (error_cases[16].text, -1, "t.graph", &error));
  g_assert_nonnull (strstr (error->message, "node 'y' (Add): "));
  g_assert_cmpint (error->code, ==, PL_ERROR_SHAPE);
  g_clear_error (&error);

  /* nesting is bounded */
  GString *deep = g_string_new ("graph g {\n");
  for (int i = 0; i < 40; i++)
    g_string_append (deep, " y = F() body graph b {\n");
  g_assert_null (pl_text_parse (deep->str, -1, "t.graph", &error));
  g_assert_nonnull (strstr (error->message, "graphs nested more than 32 deep"));
  g_string_free (deep, TRUE);
}

/* Mangled text never crashes the parser; whatever parses verifies and
 * round-trips. Run under valgrind or ASan to check for leaks; `-m slow`
 * tries 30,000 mutations instead of 600. */
static void
test_fuzz (void)
{
  static const char *const snippets[] = {
    "[", "]", "{", "}", "(", ")", ",", ":", "::", "=", "@", "_", "\"", "-", "?", "*", "\\", "#",
    "\n", " ", "graph", "input", "const", "output", "after", "body", "f32", "i64[", "1e999",
    "99999999999999999999", "0", "1", "-1", "2.5", "inf", "nan", "base64\"AAAA\"", "fill(1)",
    "random()", "x", "r", "\xff", "\xc3", "\x00",
  };
  g_autoptr (PlGraph) everything = make_everything_graph ();
  g_autofree char *rich = pl_text_print (everything);
  g_autofree char *path = pl_test_source_path ("data/graphs/group_norm.graph");
  g_autofree char *sample = NULL;
  g_assert_true (g_file_get_contents (path, &sample, NULL, NULL));
  const char *seeds[] = { demo, rich, sample };
  g_autoptr (GRand) rand = g_rand_new_with_seed (1234);
  int parsed = 0, trials = g_test_slow () ? 30000 : 600;
  for (int trial = 0; trial < trials; trial++)
    {
      const char *seed = seeds[trial % 3];
      GString *s = g_string_new_len (seed, strlen (seed));
      int n_mut = g_rand_int_range (rand, 1, 4);
      for (int m = 0; m < n_mut; m++)
        {
          gsize pos = g_rand_int_range (rand, 0, (gint32) s->len + 1);
          switch (g_rand_int_range (rand, 0, 3))
            {
            case 0:
              if (pos < s->len)
                s->str[pos] = (char) g_rand_int_range (rand, 0, 256);
              break;
            case 1:
              {
                gsize len = (gsize) g_rand_int_range (rand, 1, 8);
                pos = MIN (pos, s->len);
                g_string_erase (s, pos, MIN (len, s->len - pos));
                break;
              }
            default:
              {
                const char *snip = snippets[g_rand_int_range (rand, 0, G_N_ELEMENTS (snippets))];
                g_string_insert_len (s, pos, snip, MAX (strlen (snip), 1));
              }
            }
        }
      g_autoptr (GError) error = NULL;
      g_autoptr (PlGraph) g = pl_text_parse (s->str, s->len, "fuzz.graph", &error);
      if (g)
        {
          parsed++;
          g_free (assert_round_trip (g));
        }
      else
        {
          g_assert_true (error->domain == PL_ERROR);
          g_assert_true (g_utf8_validate (error->message, -1, NULL));
        }
      g_string_free (s, TRUE);
    }
  g_test_message ("%d of %d mutated graphs parsed", parsed, trials);
}

static void
test_load_save (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("passlab-text-XXXXXX", &error);
  g_assert_no_error (error);
  g_autofree char *path = g_build_filename (dir, "demo.graph", NULL);
  g_autoptr (PlGraph) g = parse_ok (demo);
  g_assert_true (pl_text_save (g, path, &error));
  g_assert_no_error (error);
  g_autoptr (PlGraph) back = pl_text_load (path, &error);
  g_assert_no_error (error);
  g_autofree char *a = pl_text_print (g), *b = pl_text_print (back);
  g_assert_cmpstr (a, ==, b);
  g_remove (path);
  g_rmdir (dir);

  g_assert_null (pl_text_load (path, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_IO);
  g_clear_error (&error);
  g_autofree char *bad = g_build_filename (dir, "none", "x.graph", NULL);
  g_assert_false (pl_text_save (g, bad, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_IO);
}

static void
ignore_log (const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
}

/* Every model of the ONNX conformance suite that imports round-trips: a
 * wide sample of real attributes, dtypes, nested graphs and unknown ops. */
static void
test_onnx_suite (void)
{
  const char *root = "/usr/share/libonnx-testdata/data/node";
  g_autoptr (GDir) dir = g_dir_open (root, 0, NULL);
  if (!dir)
    {
      g_test_skip ("libonnx-testdata is not installed");
      return;
    }
  guint handler = g_log_set_handler (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO, ignore_log, NULL);
  int loaded = 0;
  const char *name;
  while ((name = g_dir_read_name (dir)))
    {
      g_autofree char *path = g_build_filename (root, name, "model.onnx", NULL);
      g_autoptr (PlGraph) g = pl_onnx_load (path, NULL);
      if (!g)
        continue;
      loaded++;
      g_free (assert_round_trip (g));
    }
  g_log_remove_handler (G_LOG_DOMAIN, handler);
  g_test_message ("%d ONNX models round-tripped", loaded);
  g_assert_cmpint (loaded, >, 800);
}

/* --- samples ----------------------------------------------------------------------- */

/* A constant of g as doubles; g_free it. */
static double *
const_doubles (const PlGraph *g, const char *name)
{
  PlValue *v = pl_graph_find_value (g, name);
  g_assert_nonnull (v);
  g_assert_nonnull (v->constant);
  double *d = g_new (double, MAX (v->constant->numel, 1));
  for (int64_t i = 0; i < v->constant->numel; i++)
    d[i] = pl_tensor_get_f64 (v->constant, i);
  return d;
}

static double *
tensor_doubles (const PlTensor *t)
{
  double *d = g_new (double, MAX (t->numel, 1));
  for (int64_t i = 0; i < t->numel; i++)
    d[i] = pl_tensor_get_f64 (t, i);
  return d;
}

/* Compares got with want (doubles in got's shape). */
static void
assert_close_to (const PlTensor *got, const double *want, double rtol, double atol)
{
  g_autoptr (PlTensor) w = pl_test_tensor (PL_DTYPE_F32, got->rank, got->dims, want);
  pl_test_assert_close (got, w, rtol, atol);
}

/* c[m, n] = a[m, k] @ b[k, n] + bias[n] (bias may be NULL). */
static void
ref_matmul (const double *a, const double *b, const double *bias, double *c, int m, int k, int n)
{
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++)
      {
        double acc = bias ? bias[j] : 0;
        for (int l = 0; l < k; l++)
          acc += a[i * k + l] * b[l * n + j];
        c[i * n + j] = acc;
      }
}

static void
ref_layer_norm (const double *x, double *y, int rows, int n, const double *scale, const double *bias,
                double eps)
{
  for (int r = 0; r < rows; r++)
    {
      double mean = 0, var = 0;
      for (int i = 0; i < n; i++)
        mean += x[r * n + i] / n;
      for (int i = 0; i < n; i++)
        var += (x[r * n + i] - mean) * (x[r * n + i] - mean) / n;
      for (int i = 0; i < n; i++)
        y[r * n + i] = (x[r * n + i] - mean) / sqrt (var + eps) * scale[i] + bias[i];
    }
}

/* Group norm and ghost batch norm over NHWC x: element (n, h, w, c) belongs
 * to statistics group group_of(n, c); then scale by gamma[c], shift by beta[c]. */
static void
check_grouped_norm (const PlGraph *g, const PlTensor *x, const PlTensor *out, double eps,
                    int (*group_of) (int n, int c), int n_groups)
{
  int N = (int) x->dims[0], HW = (int) (x->dims[1] * x->dims[2]), C = (int) x->dims[3];
  g_autofree double *xd = tensor_doubles (x), *want = g_new (double, x->numel);
  g_autofree double *gamma = const_doubles (g, "gamma"), *beta = const_doubles (g, "beta");
  g_autofree double *sum = g_new0 (double, n_groups), *sq = g_new0 (double, n_groups);
  g_autofree double *cnt = g_new0 (double, n_groups);
  for (int pass = 0; pass < 3; pass++)
    for (int n = 0; n < N; n++)
      for (int p = 0; p < HW; p++)
        for (int c = 0; c < C; c++)
          {
            int64_t i = ((int64_t) n * HW + p) * C + c;
            int gi = group_of (n, c);
            double mean = cnt[gi] > 0 ? sum[gi] / cnt[gi] : 0;
            if (pass == 0)
              sum[gi] += xd[i], cnt[gi]++;
            else if (pass == 1)
              sq[gi] += (xd[i] - mean) * (xd[i] - mean);
            else
              want[i] = (xd[i] - mean) / sqrt (sq[gi] / cnt[gi] + eps) * gamma[c] + beta[c];
          }
  assert_close_to (out, want, 1e-4, 1e-4);
}

static int group_norm_group (int n, int c) { return n * 8 + c % 8; }
static int ghost_batch_group (int n, int c) { return (n / 4) * 32 + c; }

static void
check_group_norm (const PlGraph *g, PlTensor **in, PlTensor **out)
{
  check_grouped_norm (g, in[0], out[0], 1e-5, group_norm_group, 2 * 8);
}

static void
check_ghost_batch_norm (const PlGraph *g, PlTensor **in, PlTensor **out)
{
  check_grouped_norm (g, in[0], out[0], 1e-3, ghost_batch_group, 4 * 32);
}

static void
check_layer_norm (const PlGraph *g, PlTensor **in, PlTensor **out)
{
  g_autofree double *x = tensor_doubles (in[0]), *want = g_new (double, in[0]->numel);
  g_autofree double *scale = const_doubles (g, "weight"), *bias = const_doubles (g, "bias");
  ref_layer_norm (x, want, (int) (in[0]->numel / 256), 256, scale, bias, 1e-5);
  assert_close_to (out[0], want, 1e-4, 1e-4);
}

static void
check_softmax (const PlGraph *g, PlTensor **in, PlTensor **out)
{
  int n = 256, rows = (int) (in[0]->numel / n);
  g_autofree double *x = tensor_doubles (in[0]), *want = g_new (double, in[0]->numel);
  for (int r = 0; r < rows; r++)
    {
      double m = -INFINITY, s = 0;
      for (int i = 0; i < n; i++)
        m = MAX (m, x[r * n + i]);
      for (int i = 0; i < n; i++)
        s += exp (x[r * n + i] - m);
      for (int i = 0; i < n; i++)
        want[r * n + i] = exp (x[r * n + i] - m) / s;
    }
  assert_close_to (out[0], want, 1e-5, 1e-7);
}

static void
check_gelu_mlp (const PlGraph *g, PlTensor **in, PlTensor **out)
{
  int rows = 2 * 64;
  g_autofree double *x = tensor_doubles (in[0]);
  g_autofree double *h = g_new (double, rows * 512), *y = g_new (double, rows * 128);
  g_autofree double *w1 = const_doubles (g, "w1"), *b1 = const_doubles (g, "b1");
  g_autofree double *w2 = const_doubles (g, "w2"), *b2 = const_doubles (g, "b2");
  ref_matmul (x, w1, b1, h, rows, 128, 512);
  for (int i = 0; i < rows * 512; i++)
    h[i] = 0.5 * h[i] * (1 + tanh (sqrt (2 / G_PI) * (h[i] + 0.044715 * h[i] * h[i] * h[i])));
  ref_matmul (h, w2, b2, y, rows, 512, 128);
  assert_close_to (out[0], y, 1e-4, 1e-5);
}

static void
ref_conv3x3_bn (const double *x, const double *w, const PlGraph *g, const char *bn, double *y)
{
  enum { C = 64, H = 56, W = 56 };
  g_autofree char *ns = g_strdup_printf ("%s_scale", bn), *nb = g_strdup_printf ("%s_bias", bn);
  g_autofree char *nm = g_strdup_printf ("%s_mean", bn), *nv = g_strdup_printf ("%s_var", bn);
  g_autofree double *scale = const_doubles (g, ns), *bias = const_doubles (g, nb);
  g_autofree double *mean = const_doubles (g, nm), *var = const_doubles (g, nv);
  for (int co = 0; co < C; co++)
    for (int i = 0; i < H; i++)
      for (int j = 0; j < W; j++)
        {
          double acc = 0;
          for (int ci = 0; ci < C; ci++)
            for (int ki = 0; ki < 3; ki++)
              for (int kj = 0; kj < 3; kj++)
                {
                  int ii = i + ki - 1, jj = j + kj - 1;
                  if (ii >= 0 && ii < H && jj >= 0 && jj < W)
                    acc += x[(ci * H + ii) * W + jj] * w[((co * C + ci) * 3 + ki) * 3 + kj];
                }
          y[(co * H + i) * W + j] = (acc - mean[co]) / sqrt (var[co] + 1e-5) * scale[co] + bias[co];
        }
}

static void
check_resnet_block (const PlGraph *g, PlTensor **in, PlTensor **out)
{
  int64_t n = in[0]->numel;
  g_autofree double *x = tensor_doubles (in[0]), *a = g_new (double, n), *b = g_new (double, n);
  g_autofree double *w1 = const_doubles (g, "conv1_w"), *w2 = const_doubles (g, "conv2_w");
  ref_conv3x3_bn (x, w1, g, "bn1", a);
  for (int64_t i = 0; i < n; i++)
    a[i] = MAX (a[i], 0);
  ref_conv3x3_bn (a, w2, g, "bn2", b);
  for (int64_t i = 0; i < n; i++)
    b[i] = MAX (b[i] + x[i], 0);
  assert_close_to (out[0], b, 1e-4, 1e-4);
}

static void
check_transformer_block (const PlGraph *g, PlTensor **in, PlTensor **out)
{
  enum { S = 64, D = 128, NH = 4, HD = 32, F = 512 };
  g_autofree double *x = tensor_doubles (in[0]);
  g_autofree double *ln = g_new (double, S * D), *q = g_new (double, S * D), *k = g_new (double, S * D);
  g_autofree double *v = g_new (double, S * D), *ctx = g_new (double, S * D), *h = g_new (double, S * D);
  g_autofree double *up = g_new (double, S * F), *y = g_new (double, S * D), *p = g_new (double, S);
  g_autofree double *s1 = const_doubles (g, "ln1_scale"), *c1 = const_doubles (g, "ln1_bias");
  g_autofree double *s2 = const_doubles (g, "ln2_scale"), *c2 = const_doubles (g, "ln2_bias");
  g_autofree double *wq = const_doubles (g, "wq"), *bq = const_doubles (g, "bq");
  g_autofree double *wk = const_doubles (g, "wk"), *bk = const_doubles (g, "bk");
  g_autofree double *wv = const_doubles (g, "wv"), *bv = const_doubles (g, "bv");
  g_autofree double *wo = const_doubles (g, "wo"), *bo = const_doubles (g, "bo");
  g_autofree double *w1 = const_doubles (g, "w1"), *b1 = const_doubles (g, "b1");
  g_autofree double *w2 = const_doubles (g, "w2"), *b2 = const_doubles (g, "b2");

  ref_layer_norm (x, ln, S, D, s1, c1, 1e-5);
  ref_matmul (ln, wq, bq, q, S, D, D);
  ref_matmul (ln, wk, bk, k, S, D, D);
  ref_matmul (ln, wv, bv, v, S, D, D);
  for (int hd = 0; hd < NH; hd++)
    for (int s = 0; s < S; s++)
      {
        double m = -INFINITY, sum = 0;
        for (int t = 0; t < S; t++)
          {
            p[t] = 0;
            for (int d = 0; d < HD; d++)
              p[t] += q[s * D + hd * HD + d] * k[t * D + hd * HD + d];
            p[t] /= sqrt ((double) HD);
            m = MAX (m, p[t]);
          }
        for (int t = 0; t < S; t++)
          sum += (p[t] = exp (p[t] - m));
        for (int d = 0; d < HD; d++)
          {
            double acc = 0;
            for (int t = 0; t < S; t++)
              acc += p[t] / sum * v[t * D + hd * HD + d];
            ctx[s * D + hd * HD + d] = acc;
          }
      }
  ref_matmul (ctx, wo, bo, h, S, D, D);
  for (int i = 0; i < S * D; i++)
    h[i] += x[i];
  ref_layer_norm (h, ln, S, D, s2, c2, 1e-5);
  ref_matmul (ln, w1, b1, up, S, D, F);
  for (int i = 0; i < S * F; i++)
    up[i] = 0.5 * up[i] * (1 + erf (up[i] / G_SQRT2));
  ref_matmul (up, w2, b2, y, S, F, D);
  for (int i = 0; i < S * D; i++)
    y[i] += h[i];
  assert_close_to (out[0], y, 1e-3, 1e-4);
}

typedef struct {
  const char *name;
  void (*check) (const PlGraph *g, PlTensor **inputs, PlTensor **outputs);
} Sample;

static const Sample samples[] = {
  { "group_norm", check_group_norm },
  { "ghost_batch_norm", check_ghost_batch_norm },
  { "layer_norm", check_layer_norm },
  { "softmax", check_softmax },
  { "gelu_mlp", check_gelu_mlp },
  { "resnet_block", check_resnet_block },
  { "transformer_block", check_transformer_block },
};

/* A sample parses, verifies, round-trips, runs on random inputs with the
 * declared output types, and computes what an independent C version does. */
static void
test_sample (gconstpointer data)
{
  const Sample *sample = data;
  g_autoptr (GError) error = NULL;
  g_autofree char *rel = g_strdup_printf ("data/graphs/%s.graph", sample->name);
  g_autofree char *path = pl_test_source_path (rel);
  g_autoptr (PlGraph) g = pl_text_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (g->name, ==, sample->name);
  g_free (assert_round_trip (g));

  int n_in = (int) g->inputs->len, n_out = (int) g->outputs->len;
  PlTensor **inputs = pl_random_inputs (g, 42, 2, &error);
  g_assert_no_error (error);
  gint64 t0 = g_get_monotonic_time ();
  PlTensor **outputs = pl_interp_run (g, inputs, NULL, &error);
  g_assert_no_error (error);
  g_test_message ("%s ran in %.3f s", sample->name, (g_get_monotonic_time () - t0) / 1e6);
  for (int i = 0; i < n_out; i++)
    {
      const PlValue *v = g->outputs->pdata[i];
      PlShape got = pl_tensor_shape (outputs[i]);
      g_assert_cmpint (outputs[i]->dtype, ==, v->dtype);
      g_assert_true (pl_shape_equal (&got, &v->shape));
      for (int64_t k = 0; k < outputs[i]->numel; k++)
        g_assert_true (isfinite (pl_tensor_get_f64 (outputs[i], k)));
    }
  sample->check (g, inputs, outputs);
  pl_interp_free_outputs (outputs, n_out);
  pl_interp_free_outputs (inputs, n_in);
}

/* Layouts print after the type (`@NHWC`), only when not the default, and
 * read back exactly; a fusion body's inputs take the node's inputs' layouts. */
static void
test_layouts (void)
{
  static const char text[] =
    "graph layouts opset 17 {\n"
    "  input x: f32[1, 3, 4, 4]\n"
    "  const w: f32[2, 3, 1, 1] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]\n"
    "  t: f32[1, 3, 4, 4] @NHWC = LayoutTransform(x) {to=\"NHWC\"}\n"
    "  c: f32[1, 2, 4, 4] @CHWN = Conv(t, w) {impl=\"direct\", tile=[4, 4, 2]}\n"
    "  @fuse f: f32[1, 2, 4, 4] @CHWN, f2: f32[1, 2, 4, 4] @NHWC = Fusion(c) {kind=\"loop\"} body graph fuse {\n"
    "    input c: f32[1, 2, 4, 4]\n"
    "    f: f32[1, 2, 4, 4] @CHWN = Relu(c)\n"
    "    f2: f32[1, 2, 4, 4] @NHWC = LayoutTransform(f) {to=\"NHWC\"}\n"
    "    output f, f2\n"
    "  }\n"
    "  b: f32[1, 2, 4, 4] = LayoutTransform(f) {to=\"NCHW\"}\n"
    "  b2: f32[1, 2, 4, 4] = Add(b, f2)\n"
    "  output b2\n"
    "}\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_text_parse (text, -1, "l.graph", &error);
  g_assert_no_error (error);
  g_autofree char *printed = pl_text_print (g);
  g_assert_cmpstr (printed, ==, text);
  g_assert_cmpint (pl_graph_find_value (g, "c")->layout, ==, PL_LAYOUT_CHWN);
  g_assert_cmpint (pl_graph_find_value (g, "f2")->layout, ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (pl_graph_find_value (g, "b")->layout, ==, PL_LAYOUT_NCHW);
  PlNode *fuse = pl_graph_find_node (g, "fuse");
  g_assert_cmpint (((PlValue *) fuse->body->inputs->pdata[0])->layout, ==, PL_LAYOUT_CHWN);
  g_assert_cmpint (pl_graph_find_value (fuse->body, "f")->layout, ==, PL_LAYOUT_CHWN);
  /* An '@' after an input's type is the next node's name, as before. */
  g_autoptr (PlGraph) named = pl_text_parse ("graph n { input x: f32[1, 2, 3, 4] @NHWC y = Relu(x) output y }", -1,
                                             NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (pl_graph_find_node (named, "NHWC"));
  g_assert_cmpint (pl_graph_find_value (named, "y")->layout, ==, PL_LAYOUT_NCHW);

  /* The annotation is optional where a type is: written without one, a
   * layout still applies; a LayoutTransform's comes from its `to`. */
  static const char untyped[] =
    "graph u {\n"
    "  input x: f32[1, 3, 4, 4]\n"
    "  t = LayoutTransform(x) {to=\"CHWN\"}\n"
    "  r @CHWN = Relu(t)\n"
    "  n @NCHW = LayoutTransform(r) {to=\"NCHW\"}\n"
    "  output n\n"
    "}\n";
  g_autoptr (PlGraph) u = pl_text_parse (untyped, -1, "u.graph", &error);
  g_assert_no_error (error);
  g_autofree char *uprinted = pl_text_print (u);
  g_assert_nonnull (strstr (uprinted, "  t: f32[1, 3, 4, 4] @CHWN = LayoutTransform(x) {to=\"CHWN\"}\n"));
  g_assert_nonnull (strstr (uprinted, "  r: f32[1, 3, 4, 4] @CHWN = Relu(t)\n"));
  g_assert_nonnull (strstr (uprinted, "  n: f32[1, 3, 4, 4] = LayoutTransform(r)"));

  /* The whole message of an unknown layout, caret under the name. */
  g_assert_null (pl_text_parse ("graph g {\n  input x: f32[1, 2, 3, 4]\n  y @nhwc = Relu(x)\n}\n", -1, "t.graph",
                                &error));
  g_assert_cmpstr (error->message, ==,
                   "t.graph:3:6: unknown layout 'nhwc' (expected NCHW, NHWC or CHWN)\n"
                   "    y @nhwc = Relu(x)\n"
                   "       ^");
  g_assert_cmpint (error->code, ==, PL_ERROR_PARSE);
  g_clear_error (&error);
  /* A body output that disagrees with the node's is caught by the verifier. */
  g_autofree char *bad = g_strdup (text);
  memcpy (strstr (bad, "    f: f32[1, 2, 4, 4] @CHWN") + strlen ("    f: f32[1, 2, 4, 4] @"), "NHWC", 4);
  g_assert_null (pl_text_parse (bad, -1, "t.graph", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "output 0 'f' has layout CHWN but its body's 'f' has NHWC"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/TextFormat/parse-basic", test_parse_basic);
  g_test_add_func ("/Passlab/TextFormat/parse-forms", test_parse_forms);
  g_test_add_func ("/Passlab/TextFormat/round-trip-everything", test_round_trip_everything);
  g_test_add_func ("/Passlab/TextFormat/float-exact", test_float_exact);
  g_test_add_func ("/Passlab/TextFormat/errors", test_errors);
  g_test_add_func ("/Passlab/TextFormat/layouts", test_layouts);
  g_test_add_func ("/Passlab/TextFormat/fuzz", test_fuzz);
  g_test_add_func ("/Passlab/TextFormat/load-save", test_load_save);
  g_test_add_func ("/Passlab/TextFormat/onnx-suite", test_onnx_suite);
  for (size_t i = 0; i < G_N_ELEMENTS (samples); i++)
    {
      g_autofree char *test_path = g_strdup_printf ("/Passlab/TextFormat/sample/%s", samples[i].name);
      g_test_add_data_func (test_path, &samples[i], test_sample);
    }
  return g_test_run ();
}
