/* test-onnx.c — ONNX import/export, TensorProto files and the conformance
 * runner. The models come from tests/data/onnx/make_models.py (committed
 * output); broken files are crafted there or here, byte by byte. */
#define G_LOG_DOMAIN "passlab"

#include <glib/gstdio.h>
#include <string.h>

#include "conformance.h"
#include "interp.h"
#include "onnx-io.h"
#include "test-util.h"
#include "text-format.h"

static char *
data_path (const char *name)
{
  g_autofree char *rel = g_build_filename ("tests", "data", "onnx", name, NULL);
  return pl_test_source_path (rel);
}

static PlGraph *
load_ok (const char *name)
{
  g_autofree char *path = data_path (name);
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_onnx_load (path, &error);
  g_assert_no_error (error);
  g_assert_nonnull (g);
  return g;
}

static PlTensor *
load_tensor_ok (const char *name)
{
  g_autofree char *path = data_path (name);
  g_autoptr (GError) error = NULL;
  PlTensor *t = pl_onnx_load_tensor (path, NULL, &error);
  g_assert_no_error (error);
  return t;
}

static GBytes *
read_bytes (const char *name)
{
  g_autofree char *path = data_path (name);
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (path, &data, &len, NULL));
  return g_bytes_new_take (g_steal_pointer (&data), len);
}

static void
swallow_log (const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
}

/* Fuzzed inputs may well contain unknown ops; their messages are noise. */
static guint
quiet_messages (void)
{
  return g_log_set_handler (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE, swallow_log, NULL);
}

/* --- import ---------------------------------------------------------------- */

static void
test_load_mlp (void)
{
  g_autoptr (PlGraph) g = load_ok ("mlp.onnx");
  g_assert_cmpint (g->opset, ==, 13);
  g_assert_cmpuint (g->inputs->len, ==, 1);
  g_assert_cmpuint (g->nodes->len, ==, 3);

  PlValue *x = g->inputs->pdata[0];
  g_assert_cmpstr (x->name, ==, "x");
  g_assert_cmpint (x->dtype, ==, PL_DTYPE_F32);
  g_assert_cmpint (x->shape.rank, ==, 2);
  g_assert_true (x->shape.dims[0].sym == g_intern_string ("N"));
  g_assert_cmpint (x->shape.dims[1].size, ==, 4);

  PlValue *w = pl_graph_find_value (g, "W");
  PlValue *b = pl_graph_find_value (g, "b");
  g_assert_nonnull (w->constant);
  g_assert_nonnull (b->constant);
  g_assert_false (w->is_input);
  pl_test_assert_values (w->constant, PL_VALS (-1.25, -1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75,
                                               1, 1.25, 1.5));
  pl_test_assert_values (b->constant, PL_VALS (0.5, -1.0, 0.25));

  PlValue *y = g->outputs->pdata[0];
  g_assert_cmpstr (y->name, ==, "y");
  g_assert_cmpint (y->dtype, ==, PL_DTYPE_F32);
  g_assert_cmpint (y->shape.rank, ==, 2);
  g_assert_true (y->shape.dims[0].sym == g_intern_string ("N"));
  g_assert_cmpint (y->shape.dims[1].size, ==, 3);
  g_assert_cmpstr (pl_graph_find_node (g, "relu")->op_type, ==, "Relu");

  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);

  /* Run it on the input make_models.py computed the output for with numpy. */
  g_autoptr (PlTensor) in = load_tensor_ok ("mlp_input.pb");
  g_autoptr (PlTensor) want = load_tensor_ok ("mlp_output.pb");
  PlTensor **out = pl_interp_run (g, &in, NULL, &error);
  g_assert_no_error (error);
  pl_test_assert_close (out[0], want, 1e-6, 1e-6);
  /* x[0] = [1, 2, 3, 4]: x@W + b = [3, 4, 7.75]; x[1] = [2, 0.5, 0, -2] gives
   * [-4.25, -5.625, -4.25], all cut by the relu. */
  pl_test_assert_values (out[0], PL_VALS (3.0, 4.0, 7.75, 0.0, 0.0, 0.0));
  pl_interp_free_outputs (out, 1);
}

static void
test_initializers (void)
{
  g_autoptr (PlGraph) g = load_ok ("initializers.onnx");
  static const struct { const char *suffix; PlDType dtype; double v[3]; } kinds[] = {
    { "f32", PL_DTYPE_F32, { 1.5, -2.0, 3.25 } },   { "f64", PL_DTYPE_F64, { 1.5, -2.0, 3.25 } },
    { "f16", PL_DTYPE_F16, { 1.5, -2.0, 3.25 } },   { "i64", PL_DTYPE_I64, { 1, -2, 3 } },
    { "i32", PL_DTYPE_I32, { 1, -2, 3 } },          { "i16", PL_DTYPE_I16, { 1, -2, 3 } },
    { "i8", PL_DTYPE_I8, { 1, -2, 3 } },            { "u64", PL_DTYPE_U64, { 1, 2, 3 } },
    { "u32", PL_DTYPE_U32, { 1, 2, 3 } },           { "u16", PL_DTYPE_U16, { 1, 2, 3 } },
    { "u8", PL_DTYPE_U8, { 1, 2, 3 } },             { "bool", PL_DTYPE_BOOL, { 1, 0, 1 } },
  };
  for (guint k = 0; k < G_N_ELEMENTS (kinds); k++)
    for (int raw = 0; raw < 2; raw++)
      {
        g_autofree char *name = g_strdup_printf ("%s_%s", raw ? "raw" : "typed", kinds[k].suffix);
        PlValue *v = pl_graph_find_value (g, name);
        g_assert_nonnull (v);
        g_assert_nonnull (v->constant);
        g_assert_cmpint (v->constant->dtype, ==, kinds[k].dtype);
        g_assert_cmpint (v->constant->rank, ==, 1);
        g_assert_cmpint (v->constant->dims[0], ==, 3);
        pl_test_assert_values (v->constant, kinds[k].v);
      }
  PlValue *bf = pl_graph_find_value (g, "typed_bf16");
  g_assert_cmpint (bf->constant->dtype, ==, PL_DTYPE_BF16);
  pl_test_assert_values (bf->constant, PL_VALS (1.5, -2.0, 3.25));

  PlValue *scalar = pl_graph_find_value (g, "scalar");
  g_assert_cmpint (scalar->constant->rank, ==, 0);
  g_assert_cmpfloat (pl_tensor_get_f64 (scalar->constant, 0), ==, 7.0);
  PlValue *empty = pl_graph_find_value (g, "empty");
  g_assert_cmpint (empty->constant->numel, ==, 0);
  g_assert_cmpint (empty->shape.rank, ==, 2);
  g_assert_cmpuint (g->inputs->len, ==, 0);
  g_assert_cmpuint (g->outputs->len, ==, 27);
}

static void
test_attributes (void)
{
  g_test_expect_message (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                         "attrs.onnx: unknown ops: com.example.Foo, Bar (shown, not executable)");
  g_autoptr (PlGraph) g = load_ok ("attrs.onnx");
  g_test_assert_expected_messages ();

  PlNode *foo = pl_graph_find_node (g, "foo");
  g_assert_cmpint (foo->op, ==, PL_OP_OPAQUE);
  g_assert_cmpstr (foo->domain, ==, "com.example");
  g_assert_cmpfloat (pl_node_attr_float (foo, "f", 0), ==, 0.5f);
  g_assert_cmpint (pl_node_attr_int (foo, "i", 0), ==, -3);
  g_assert_cmpstr (pl_node_attr_string (foo, "s", NULL), ==, "hello");
  const float *fv;
  const int64_t *iv;
  int n;
  g_assert_true (pl_node_attr_floats (foo, "floats", &fv, &n));
  g_assert_cmpint (n, ==, 2);
  g_assert_cmpfloat (fv[1], ==, 2.5f);
  g_assert_true (pl_node_attr_ints (foo, "ints", &iv, &n));
  g_assert_cmpint (n, ==, 3);
  g_assert_cmpint (iv[1], ==, -2);
  const PlAttr *strs = pl_node_attr (foo, "strings");
  g_assert_cmpint (strs->type, ==, PL_ATTR_STRINGS);
  g_assert_cmpint (strs->strings.n, ==, 2);
  g_assert_cmpstr (strs->strings.v[1], ==, "qr");
  const PlAttr *t = pl_node_attr (foo, "t");
  g_assert_cmpint (t->type, ==, PL_ATTR_TENSOR);
  g_assert_cmpint (t->t->dtype, ==, PL_DTYPE_I64);
  pl_test_assert_values (t->t, PL_VALS (4, 5));

  /* Nested graphs keep their outer-scope reference 'x' by name, as an
   * extra input typed like the outer value. */
  const PlAttr *sub = pl_node_attr (foo, "g");
  g_assert_cmpint (sub->type, ==, PL_ATTR_GRAPH);
  g_assert_cmpuint (sub->g->nodes->len, ==, 1);
  g_assert_cmpuint (sub->g->inputs->len, ==, 1);
  PlValue *outer_x = sub->g->inputs->pdata[0];
  g_assert_cmpstr (outer_x->name, ==, "x");
  g_assert_cmpint (outer_x->dtype, ==, PL_DTYPE_F32);
  g_assert_cmpint (((PlNode *) sub->g->nodes->pdata[0])->op, ==, PL_OP_Neg);

  PlNode *iff = pl_graph_find_node (g, "if");
  g_assert_cmpint (iff->op, ==, PL_OP_If);
  const PlAttr *then_b = pl_node_attr (iff, "then_branch");
  const PlAttr *else_b = pl_node_attr (iff, "else_branch");
  g_assert_cmpint (then_b->type, ==, PL_ATTR_GRAPH);
  g_assert_cmpint (else_b->type, ==, PL_ATTR_GRAPH);
  g_assert_cmpstr (then_b->g->name, ==, "then_body");
  g_assert_cmpint (((PlNode *) else_b->g->nodes->pdata[0])->op, ==, PL_OP_Sub);
  PlValue *then_out = then_b->g->outputs->pdata[0];
  g_assert_cmpint (then_out->dtype, ==, PL_DTYPE_F32);
  g_assert_cmpint (then_out->shape.dims[0].size, ==, 2);

  /* Inference cannot see through the unknown op Bar: the declared output
   * type [2, M] is kept. */
  PlValue *b = pl_graph_find_value (g, "b");
  g_assert_cmpint (b->dtype, ==, PL_DTYPE_F32);
  g_assert_cmpint (b->shape.rank, ==, 2);
  g_assert_cmpint (b->shape.dims[0].size, ==, 2);
  g_assert_true (b->shape.dims[1].sym == g_intern_string ("M"));
  /* ... and nothing has a shape that inference invented. */
  PlValue *a = pl_graph_find_value (g, "a");
  g_assert_cmpint (a->shape.rank, ==, PL_RANK_UNKNOWN);
}

/* A STRING attribute with an empty value: exporters leave out the empty
 * bytes field, so only its type says STRING. It reads as "". */
static void
test_empty_string_attribute (void)
{
  g_autoptr (GBytes) bytes = read_bytes ("attrs.onnx");
  gsize len;
  const guint8 *orig = g_bytes_get_data (bytes, &len);
  g_autofree guint8 *data = g_memdup2 (orig, len);
  /* Foo's attribute f: name "f", float 0.5, type FLOAT (1); made type STRING (3). */
  static const guint8 f_attr[] = { 0x0a, 0x01, 'f', 0x15, 0x00, 0x00, 0x00, 0x3f, 0xa0, 0x01, 0x01 };
  guint8 *at = memmem (data, len, f_attr, sizeof f_attr);
  g_assert_nonnull (at);
  at[sizeof f_attr - 1] = 3;
  g_autoptr (GError) error = NULL;
  g_test_expect_message (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE, "*unknown ops*");
  g_autoptr (PlGraph) g = pl_onnx_load_from_data (data, len, "empty-string", &error);
  g_test_assert_expected_messages ();
  g_assert_no_error (error);
  g_assert_cmpstr (pl_node_attr_string (pl_graph_find_node (g, "foo"), "f", NULL), ==, "");
}

static void
test_optional_io (void)
{
  g_autoptr (PlGraph) g = load_ok ("optional_io.onnx");
  PlNode *clip = pl_graph_find_node (g, "clip");
  g_assert_cmpint (clip->n_inputs, ==, 3);
  g_assert_null (clip->inputs[1]);
  g_assert_nonnull (clip->inputs[2]->constant);
  PlNode *dropout = pl_graph_find_node (g, "dropout");
  g_assert_cmpint (dropout->n_outputs, ==, 2);
  g_assert_nonnull (dropout->outputs[0]);
  g_assert_null (dropout->outputs[1]);

  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (3), PL_VALS (-1, 0.25, 2));
  g_autoptr (GError) error = NULL;
  PlTensor **out = pl_interp_run (g, &x, NULL, &error);
  g_assert_no_error (error);
  pl_test_assert_values (out[0], PL_VALS (-1, 0.25, 0.5));
  pl_interp_free_outputs (out, 1);
}

static void
test_opset_warning (void)
{
  g_test_expect_message (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE, "opset6.onnx: opset 6 *");
  g_autoptr (PlGraph) g = load_ok ("opset6.onnx");
  g_test_assert_expected_messages ();
  g_assert_cmpint (g->opset, ==, 6);
  g_assert_cmpuint (g->nodes->len, ==, 1);
}

static void
test_legacy_inputs (void)
{
  g_autoptr (PlGraph) g = load_ok ("legacy_inputs.onnx");
  g_assert_cmpuint (g->inputs->len, ==, 1);
  g_assert_cmpstr (((PlValue *) g->inputs->pdata[0])->name, ==, "x");
  PlValue *w = pl_graph_find_value (g, "w");
  g_assert_nonnull (w->constant);
  g_assert_false (w->is_input);
}

/* --- bad input ------------------------------------------------------------- */

static void
test_bad_files (void)
{
  static const struct { const char *file; PlErrorCode code; const char *substring; } cases[] = {
    { "bad_undefined_input.onnx", PL_ERROR_FORMAT, "input 'nope' is not defined" },
    { "bad_duplicate_value.onnx", PL_ERROR_FORMAT, "value 'y' is defined more than once" },
    { "bad_negative_dim.onnx", PL_ERROR_FORMAT, "input 'x' has negative dimension -3" },
    { "bad_huge_dims.onnx", PL_ERROR_OVERFLOW, "input 'x' has more than" },
    { "bad_huge_initializer.onnx", PL_ERROR_OVERFLOW, "initializer 'w' has more than" },
    { "bad_zero_and_huge_dim.onnx", PL_ERROR_OVERFLOW, "input 'x' has more than" },
    { "bad_raw_length.onnx", PL_ERROR_FORMAT, "initializer 'w': raw_data has 7 bytes" },
    { "bad_value_count.onnx", PL_ERROR_FORMAT, "initializer 'w' holds 3 values" },
    { "bad_rank.onnx", PL_ERROR_UNSUPPORTED, "input 'x' has rank 9" },
    { "bad_external.onnx", PL_ERROR_UNSUPPORTED, "initializer 'w': data stored in an external file" },
    { "bad_string.onnx", PL_ERROR_UNSUPPORTED, "string" },
    { "bad_missing_output.onnx", PL_ERROR_FORMAT, "graph output 'z'" },
    { "bad_no_graph.onnx", PL_ERROR_FORMAT, "has no graph" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = data_path (cases[i].file);
      g_autoptr (GError) error = NULL;
      g_autoptr (PlGraph) g = pl_onnx_load (path, &error);
      g_test_message ("%s: %s", cases[i].file, error != NULL ? error->message : "(loaded)");
      g_assert_null (g);
      g_assert_error (error, PL_ERROR, (gint) cases[i].code);
      g_assert_nonnull (strstr (error->message, cases[i].substring));
      g_assert_true (g_str_has_prefix (error->message, cases[i].file));
    }

  g_autoptr (GError) error = NULL;
  g_assert_null (pl_onnx_load ("/nonexistent/model.onnx", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_IO);
}

/* A protobuf field with the wrong wire type, and a TensorProto where a
 * ModelProto belongs. */
static void
test_wrong_types (void)
{
  /* ModelProto.graph is field 7 (length-delimited); here it is a varint. */
  static const guint8 varint_graph[] = { 0x08, 0x08, 0x38, 0x01 };
  g_autoptr (GError) error = NULL;
  g_assert_null (pl_onnx_load_from_data (varint_graph, sizeof varint_graph, "varint", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_FORMAT);
  g_clear_error (&error);

  g_autoptr (GBytes) tensor = read_bytes ("mlp_input.pb");
  gsize len;
  const guint8 *data = g_bytes_get_data (tensor, &len);
  g_assert_null (pl_onnx_load_from_data (data, len, "tensor", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_FORMAT);
  g_clear_error (&error);

  /* A model read as a tensor. */
  g_autofree char *model = data_path ("mlp.onnx");
  g_assert_null (pl_onnx_load_tensor (model, NULL, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_FORMAT);
}

/* Every prefix of a real model: an error or a graph, never a crash. */
static void
test_truncated (void)
{
  const char *files[] = { "mlp.onnx", "attrs.onnx", "initializers.onnx" };
  guint handler = quiet_messages ();
  for (guint f = 0; f < G_N_ELEMENTS (files); f++)
    {
      g_autoptr (GBytes) bytes = read_bytes (files[f]);
      gsize len;
      const guint8 *data = g_bytes_get_data (bytes, &len);
      int failed = 0;
      for (gsize n = 0; n < len; n++)
        {
          g_autoptr (GError) error = NULL;
          g_autofree guint8 *copy = g_memdup2 (data, n);  /* exact size, so overreads show */
          g_autoptr (PlGraph) g = pl_onnx_load_from_data (copy, n, "prefix", &error);
          g_assert_true ((g == NULL) == (error != NULL));
          if (error != NULL)
            {
              g_assert_true (error->domain == PL_ERROR);
              failed++;
            }
        }
      g_assert_cmpint (failed, >, (int) len / 2);
    }
  g_log_remove_handler (G_LOG_DOMAIN, handler);
}

static void
test_random_bytes (void)
{
  g_autoptr (GRand) rand = g_rand_new_with_seed (1234);
  guint handler = quiet_messages ();
  for (int i = 0; i < 3000; i++)
    {
      gsize n = (gsize) g_rand_int_range (rand, 0, 200);
      g_autofree guint8 *buf = g_malloc (MAX (n, 1));
      for (gsize k = 0; k < n; k++)
        buf[k] = (guint8) g_rand_int_range (rand, 0, 256);
      g_autoptr (GError) error = NULL;
      g_autoptr (PlGraph) g = pl_onnx_load_from_data (buf, n, "random", &error);
      g_assert_true ((g == NULL) == (error != NULL));
    }

  /* Real models with a few bytes changed reach much deeper. */
  const char *files[] = { "mlp.onnx", "attrs.onnx", "initializers.onnx", "optional_io.onnx" };
  for (guint f = 0; f < G_N_ELEMENTS (files); f++)
    {
      g_autoptr (GBytes) bytes = read_bytes (files[f]);
      gsize len;
      const guint8 *data = g_bytes_get_data (bytes, &len);
      for (int i = 0; i < 1500; i++)
        {
          g_autofree guint8 *copy = g_memdup2 (data, len);
          int flips = g_rand_int_range (rand, 1, 4);
          for (int k = 0; k < flips; k++)
            copy[g_rand_int_range (rand, 0, (gint32) len)] = (guint8) g_rand_int_range (rand, 0, 256);
          g_autoptr (GError) error = NULL;
          g_autoptr (PlGraph) g = pl_onnx_load_from_data (copy, len, "mutated", &error);
          g_assert_true ((g == NULL) == (error != NULL));
          if (g != NULL)
            {
              g_autoptr (GError) verr = NULL;
              if (!pl_graph_verify (g, &verr))
                g_test_message ("mutated %s %d: loads but does not verify: %s", files[f], i,
                                verr->message);
            }
        }
    }
  g_log_remove_handler (G_LOG_DOMAIN, handler);
}

/* Protobuf writing, just enough to craft nested messages. */
static void
put_varint (GByteArray *b, guint64 v)
{
  do
    {
      guint8 byte = (guint8) (v & 0x7f);
      v >>= 7;
      if (v != 0)
        byte |= 0x80;
      g_byte_array_append (b, &byte, 1);
    }
  while (v != 0);
}

/* Returns a new array: field `num` (length-delimited) holding payload. */
static GByteArray *
wrap_field (guint num, const GByteArray *payload, const char *prefix_string, guint prefix_num)
{
  GByteArray *b = g_byte_array_new ();
  if (prefix_string != NULL)
    {
      put_varint (b, prefix_num << 3 | 2);
      put_varint (b, strlen (prefix_string));
      g_byte_array_append (b, (const guint8 *) prefix_string, (guint) strlen (prefix_string));
    }
  put_varint (b, num << 3 | 2);
  put_varint (b, payload->len);
  g_byte_array_append (b, payload->data, payload->len);
  return b;
}

/* A model of If nodes nested `levels` deep through their graph attribute. */
static GByteArray *
nested_model (int levels)
{
  GByteArray *graph = g_byte_array_new ();
  for (int i = 0; i < levels; i++)
    {
      GByteArray *attr = wrap_field (6, graph, "g", 1);        /* AttributeProto.g */
      GByteArray *node = wrap_field (5, attr, "If", 4);        /* NodeProto.attribute */
      g_byte_array_unref (graph);
      graph = wrap_field (1, node, NULL, 0);                   /* GraphProto.node */
      g_byte_array_unref (attr);
      g_byte_array_unref (node);
    }
  GByteArray *model = wrap_field (7, graph, NULL, 0);          /* ModelProto.graph */
  g_byte_array_unref (graph);
  return model;
}

/* protobuf-c recurses once per level; 20,000 levels would overflow the
 * stack if the importer did not refuse them first. */
static void
test_deep_nesting (void)
{
  g_autoptr (GByteArray) deep = nested_model (20000);
  g_autoptr (GError) error = NULL;
  g_assert_null (pl_onnx_load_from_data (deep->data, deep->len, "deep", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_FORMAT);
  g_assert_nonnull (strstr (error->message, "nested more than"));
  g_clear_error (&error);

  /* A few levels are fine as far as nesting goes (the If nodes themselves
   * lack their condition input, which is the error). */
  g_autoptr (GByteArray) shallow = nested_model (5);
  g_assert_null (pl_onnx_load_from_data (shallow->data, shallow->len, "shallow", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_SHAPE);
  g_assert_null (strstr (error->message, "nested more than"));
}

/* --- export ---------------------------------------------------------------- */

/* Saves g, loads it back and checks the text form is unchanged. */
static PlGraph *
round_trip (const PlGraph *g, const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_onnx_save (g, path, &error));
  g_assert_no_error (error);
  PlGraph *back = pl_onnx_load (path, &error);
  g_assert_no_error (error);
  g_autofree char *before = pl_text_print (g);
  g_autofree char *after = pl_text_print (back);
  g_assert_cmpstr (before, ==, after);
  g_assert_cmpint (back->opset, ==, g->opset > 0 ? g->opset : 17);
  g_remove (path);
  return back;
}

static void
test_round_trip (void)
{
  g_autofree char *dir = g_dir_make_tmp ("passlab-onnx-XXXXXX", NULL);
  g_assert_nonnull (dir);

  g_autoptr (PlGraph) mlp = load_ok ("mlp.onnx");
  g_autoptr (PlGraph) mlp2 = round_trip (mlp, dir, "mlp.onnx");
  g_assert_true (((PlValue *) mlp2->inputs->pdata[0])->shape.dims[0].sym == g_intern_string ("N"));
  g_autoptr (PlTensor) in = load_tensor_ok ("mlp_input.pb");
  g_autoptr (GError) error = NULL;
  PlTensor **a = pl_interp_run (mlp, &in, NULL, &error);
  g_assert_no_error (error);
  PlTensor **b = pl_interp_run (mlp2, &in, NULL, &error);
  g_assert_no_error (error);
  pl_test_assert_close (b[0], a[0], 0, 0);
  pl_interp_free_outputs (a, 1);
  pl_interp_free_outputs (b, 1);

  g_autoptr (PlGraph) inits = load_ok ("initializers.onnx");
  g_autoptr (PlGraph) inits2 = round_trip (inits, dir, "initializers.onnx");
  PlValue *bf = pl_graph_find_value (inits2, "typed_bf16");
  pl_test_assert_values (bf->constant, PL_VALS (1.5, -2.0, 3.25));

  g_autoptr (PlGraph) opt = load_ok ("optional_io.onnx");
  g_autoptr (PlGraph) opt2 = round_trip (opt, dir, "optional_io.onnx");
  g_assert_null (pl_graph_find_node (opt2, "clip")->inputs[1]);

  guint handler = quiet_messages ();
  g_autoptr (PlGraph) attrs = load_ok ("attrs.onnx");
  g_autoptr (PlGraph) attrs2 = round_trip (attrs, dir, "attrs.onnx");
  g_log_remove_handler (G_LOG_DOMAIN, handler);
  /* The outer-scope reference is again a reference, not a declared input:
   * after the round trip the body still has exactly one input, 'x'. */
  const PlAttr *then_b = pl_node_attr (pl_graph_find_node (attrs2, "if"), "then_branch");
  g_assert_cmpuint (then_b->g->inputs->len, ==, 1);
  g_assert_cmpstr (((PlValue *) then_b->g->inputs->pdata[0])->name, ==, "x");
  g_assert_cmpstr (pl_graph_find_node (attrs2, "foo")->domain, ==, "com.example");

  g_rmdir (dir);
}

/* A fusion node goes out as a custom-domain "passlab" op. */
static void
test_export_fusion (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("fused");
  PlShape s = pl_shape_from_dims (1, PL_DIMS (4));
  g_autoptr (GError) error = NULL;
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s, &error);
  g_assert_no_error (error);
  PlNode *fused = pl_graph_add_node (g, "FusedNegRelu", NULL, "fusion0", 1, &x, 1,
                                     (const char *const[]) { "y" }, &error);
  g_assert_no_error (error);

  PlGraph *body = pl_graph_new ("body");
  PlValue *bx = pl_graph_add_input (body, "x", PL_DTYPE_F32, &s, &error);
  PlNode *neg = pl_graph_add_node (body, "Neg", NULL, NULL, 1, &bx, 1, NULL, &error);
  PlNode *relu = pl_graph_add_node (body, "Relu", NULL, NULL, 1, neg->outputs, 1, NULL, &error);
  pl_graph_add_output (body, relu->outputs[0]);
  g_assert_true (pl_graph_infer_shapes (body, &error));
  pl_node_set_body (fused, body);
  pl_graph_add_output (g, fused->outputs[0]);
  fused->outputs[0]->dtype = PL_DTYPE_F32;
  fused->outputs[0]->shape = s;

  g_autofree char *dir = g_dir_make_tmp ("passlab-onnx-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "fused.onnx", NULL);
  g_assert_true (pl_onnx_save (g, path, &error));
  g_assert_no_error (error);

  g_test_expect_message (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                         "fused.onnx: unknown ops: passlab.FusedNegRelu (shown, not executable)");
  g_autoptr (PlGraph) back = pl_onnx_load (path, &error);
  g_test_assert_expected_messages ();
  g_assert_no_error (error);
  PlNode *n = pl_graph_find_node (back, "fusion0");
  g_assert_cmpstr (n->op_type, ==, "FusedNegRelu");
  g_assert_cmpstr (n->domain, ==, "passlab");
  g_assert_cmpint (n->op, ==, PL_OP_OPAQUE);
  /* The declared output type survives where inference cannot know it. */
  PlValue *y = back->outputs->pdata[0];
  g_assert_cmpint (y->dtype, ==, PL_DTYPE_F32);
  g_assert_true (pl_shape_equal (&y->shape, &s));
  g_remove (path);
  g_rmdir (dir);
}

/* --- tensors and pl_graph_load ---------------------------------------------- */

static void
test_tensor_files (void)
{
  g_autofree char *dir = g_dir_make_tmp ("passlab-onnx-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.pb", NULL);
  for (int d = PL_DTYPE_F32; d < PL_DTYPE_COUNT; d++)
    {
      g_autoptr (PlTensor) t = pl_test_random ((PlDType) d, 3, PL_DIMS (2, 3, 4), (guint32) d, -4, 4);
      g_autoptr (GError) error = NULL;
      g_assert_true (pl_onnx_save_tensor (t, "value", path, &error));
      g_assert_no_error (error);
      g_autofree char *name = NULL;
      g_autoptr (PlTensor) back = pl_onnx_load_tensor (path, &name, &error);
      g_assert_no_error (error);
      g_assert_cmpstr (name, ==, "value");
      g_assert_cmpint (back->dtype, ==, d);
      g_assert_cmpint (back->rank, ==, 3);
      g_assert_cmpmem (back->data, pl_tensor_nbytes (back), t->data, pl_tensor_nbytes (t));
    }
  /* A scalar without a name. */
  g_autoptr (PlTensor) s = pl_tensor_new_scalar (PL_DTYPE_I64, -5);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_onnx_save_tensor (s, NULL, path, &error));
  g_autofree char *name = NULL;
  g_autoptr (PlTensor) back = pl_onnx_load_tensor (path, &name, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (name, ==, "");
  g_assert_cmpint (back->rank, ==, 0);
  g_assert_cmpint (pl_tensor_get_i64 (back, 0), ==, -5);

  /* Truncations of a tensor file never crash. */
  g_autoptr (GBytes) bytes = read_bytes ("mlp_input.pb");
  gsize len;
  const guint8 *data = g_bytes_get_data (bytes, &len);
  for (gsize n = 0; n < len; n++)
    {
      g_assert_true (g_file_set_contents (path, (const char *) data, (gssize) n, NULL));
      g_autoptr (GError) terr = NULL;
      g_autoptr (PlTensor) t = pl_onnx_load_tensor (path, NULL, &terr);
      g_assert_true ((t == NULL) == (terr != NULL));
    }
  g_remove (path);
  g_rmdir (dir);
}

static void
test_graph_load (void)
{
  g_autofree char *onnx_path = data_path ("mlp.onnx");
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_graph_load (onnx_path, &error);
  g_assert_no_error (error);

  /* The same graph as text, and as ONNX under a name without extension. */
  g_autofree char *dir = g_dir_make_tmp ("passlab-onnx-XXXXXX", NULL);
  g_autofree char *text_path = g_build_filename (dir, "mlp.graph", NULL);
  g_autofree char *bare_text = g_build_filename (dir, "mlp_text", NULL);
  g_autofree char *bare_onnx = g_build_filename (dir, "mlp_onnx", NULL);
  g_assert_true (pl_text_save (g, text_path, &error));
  g_assert_true (pl_text_save (g, bare_text, &error));
  g_assert_true (pl_onnx_save (g, bare_onnx, &error));
  g_assert_no_error (error);
  g_autofree char *want = pl_text_print (g);
  const char *paths[] = { text_path, bare_text, bare_onnx };
  for (guint i = 0; i < G_N_ELEMENTS (paths); i++)
    {
      g_autoptr (PlGraph) h = pl_graph_load (paths[i], &error);
      g_assert_no_error (error);
      g_autofree char *got = pl_text_print (h);
      g_assert_cmpstr (got, ==, want);
      g_remove (paths[i]);
    }
  g_rmdir (dir);
}

/* --- conformance ------------------------------------------------------------ */

static void
copy_file (const char *from, const char *to)
{
  g_autofree char *data = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (from, &data, &len, NULL));
  g_assert_true (g_file_set_contents (to, data, (gssize) len, NULL));
}

/* Builds DIR/model.onnx and DIR/test_data_set_0/{input,output}_0.pb. */
static char *
make_case (const char *model, const PlTensor *output)
{
  char *dir = g_dir_make_tmp ("passlab-conf-XXXXXX", NULL);
  g_autofree char *set = g_build_filename (dir, "test_data_set_0", NULL);
  g_assert_cmpint (g_mkdir (set, 0755), ==, 0);
  g_autofree char *src = data_path (model);
  g_autofree char *dst = g_build_filename (dir, "model.onnx", NULL);
  copy_file (src, dst);
  g_autofree char *in_src = data_path ("mlp_input.pb");
  g_autofree char *in_dst = g_build_filename (set, "input_0.pb", NULL);
  copy_file (in_src, in_dst);
  g_autofree char *out_dst = g_build_filename (set, "output_0.pb", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_onnx_save_tensor (output, "y", out_dst, &error));
  return dir;
}

static void
remove_case (const char *dir)
{
  g_autofree char *set = g_build_filename (dir, "test_data_set_0", NULL);
  const char *files[] = { "input_0.pb", "output_0.pb" };
  for (guint i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *p = g_build_filename (set, files[i], NULL);
      g_remove (p);
    }
  g_rmdir (set);
  g_autofree char *model = g_build_filename (dir, "model.onnx", NULL);
  g_remove (model);
  g_rmdir (dir);
}

static void
test_conformance (void)
{
  g_autoptr (PlTensor) want = load_tensor_ok ("mlp_output.pb");
  PlConformanceResult r;

  g_autofree char *pass_dir = make_case ("mlp.onnx", want);
  pl_conformance_run_dir (pass_dir, &r);
  g_assert_cmpint (r.status, ==, PL_CONFORMANCE_PASS);
  g_assert_null (r.message);
  g_assert_cmpfloat (r.worst, <=, 1.0);
  g_assert_cmpfloat (r.seconds, >=, 0.0);
  pl_conformance_result_clear (&r);
  remove_case (pass_dir);

  /* Element 4 (row 1, col 1) is 0 after relu; claim 0.25. */
  g_autoptr (PlTensor) wrong = pl_tensor_copy (want);
  pl_tensor_set_f64 (wrong, 4, 0.25);
  g_autofree char *fail_dir = make_case ("mlp.onnx", wrong);
  pl_conformance_run_dir (fail_dir, &r);
  g_assert_cmpint (r.status, ==, PL_CONFORMANCE_FAIL);
  g_test_message ("%s", r.message);
  g_assert_nonnull (strstr (r.message, "output 'y'[4]: got 0, want 0.25"));
  g_assert_cmpfloat (r.worst, >, 1.0);
  pl_conformance_result_clear (&r);
  remove_case (fail_dir);

  g_autofree char *skip_dir = make_case ("attrs.onnx", want);
  g_test_expect_message (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE, "*unknown ops: com.example.Foo, Bar*");
  pl_conformance_run_dir (skip_dir, &r);
  g_test_assert_expected_messages ();
  g_assert_cmpint (r.status, ==, PL_CONFORMANCE_SKIP);
  g_assert_cmpstr (r.message, ==, "unsupported op: com.example.Foo");
  pl_conformance_result_clear (&r);
  remove_case (skip_dir);

  pl_conformance_run_dir ("/nonexistent/test_x", &r);
  g_assert_cmpint (r.status, ==, PL_CONFORMANCE_FAIL);
  g_assert_nonnull (r.message);
  pl_conformance_result_clear (&r);
}

/* Two cases of the real ONNX suite, when Debian's libonnx-testdata is there. */
static void
test_conformance_suite (void)
{
  const char *root = "/usr/share/libonnx-testdata/data/node";
  if (!g_file_test (root, G_FILE_TEST_IS_DIR))
    {
      g_test_skip ("libonnx-testdata is not installed");
      return;
    }
  const struct { const char *name; PlConformanceStatus status; } cases[] = {
    { "test_relu", PL_CONFORMANCE_PASS },
    { "test_matmul_2d", PL_CONFORMANCE_PASS },
    { "test_if", PL_CONFORMANCE_SKIP },
    { "test_strnormalizer_export_monday_casesensintive_lower", PL_CONFORMANCE_SKIP },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *dir = g_build_filename (root, cases[i].name, NULL);
      PlConformanceResult r;
      pl_conformance_run_dir (dir, &r);
      g_test_message ("%s: %d %s", cases[i].name, r.status, r.message ? r.message : "");
      g_assert_cmpint (r.status, ==, cases[i].status);
      pl_conformance_result_clear (&r);
    }
}

/* Finds needle in data[0..len), or NULL. */
static guint8 *
find_bytes (guint8 *data, gsize len, const char *needle)
{
  gsize n = strlen (needle);
  for (gsize i = 0; i + n <= len; i++)
    if (memcmp (data + i, needle, n) == 0)
      return data + i;
  return NULL;
}

/* LayoutTransform goes out in the domain "ai.passlab", value layouts as
 * value_info doc strings, Conv's passlab attributes as they are; all of it
 * comes back. */
static void
test_layouts (void)
{
  static const char text[] =
    "graph layouts opset 17 {\n"
    "  input x: f32[1, 3, 4, 4]\n"
    "  const w: f32[2, 3, 1, 1] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]\n"
    "  t: f32[1, 3, 4, 4] @NHWC = LayoutTransform(x) {to=\"NHWC\"}\n"
    "  c: f32[1, 2, 4, 4] @CHWN = Conv(t, w) {impl=\"direct\", tile=[4, 4, 2]}\n"
    "  r: f32[1, 2, 4, 4] @CHWN = Relu(c)\n"
    "  b: f32[1, 2, 4, 4] = LayoutTransform(r) {to=\"NCHW\"}\n"
    "  output b\n"
    "}\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_text_parse (text, -1, "layouts.graph", &error);
  g_assert_no_error (error);
  g_autofree char *dir = g_dir_make_tmp ("passlab-onnx-XXXXXX", NULL);
  g_autoptr (PlGraph) back = round_trip (g, dir, "layouts.onnx");
  PlNode *t = pl_graph_find_node (back, "t");
  g_assert_cmpint (t->op, ==, PL_OP_LayoutTransform);
  g_assert_cmpstr (t->domain, ==, "");
  g_assert_cmpint (pl_graph_find_value (back, "r")->layout, ==, PL_LAYOUT_CHWN);
  g_assert_true (pl_graph_verify (back, &error));
  g_assert_no_error (error);

  /* What the file holds. */
  g_autofree char *path = g_build_filename (dir, "layouts.onnx", NULL);
  g_assert_true (pl_onnx_save (g, path, &error));
  g_autofree guint8 *data = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (path, (char **) &data, &len, NULL));
  g_assert_nonnull (find_bytes (data, len, "ai.passlab"));
  g_assert_nonnull (find_bytes (data, len, "passlab.layout=NHWC"));
  guint8 *chwn = find_bytes (data, len, "passlab.layout=CHWN");
  g_assert_nonnull (chwn);
  g_assert_nonnull (find_bytes (data, len, "impl"));

  /* The interpreter gives the same answer before and after. */
  g_autoptr (PlTensor) x = pl_test_random (PL_DTYPE_F32, 4, PL_DIMS (1, 3, 4, 4), 5, -1, 1);
  PlTensor **a = pl_interp_run (g, &x, NULL, &error);
  g_assert_no_error (error);
  PlTensor **b = pl_interp_run (back, &x, NULL, &error);
  g_assert_no_error (error);
  pl_test_assert_close (b[0], a[0], 0, 0);
  pl_interp_free_outputs (a, 1);
  pl_interp_free_outputs (b, 1);

  /* An unknown layout name in a file is a format error naming the value. */
  memcpy (chwn + strlen ("passlab.layout="), "HWCN", 4);
  g_assert_null (pl_onnx_load_from_data (data, len, "bad", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_FORMAT);
  g_assert_nonnull (strstr (error->message, "unknown layout 'HWCN'"));
  g_clear_error (&error);
  g_remove (path);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/Onnx/load-mlp", test_load_mlp);
  g_test_add_func ("/Passlab/Onnx/initializers", test_initializers);
  g_test_add_func ("/Passlab/Onnx/attributes", test_attributes);
  g_test_add_func ("/Passlab/Onnx/empty-string-attribute", test_empty_string_attribute);
  g_test_add_func ("/Passlab/Onnx/optional-io", test_optional_io);
  g_test_add_func ("/Passlab/Onnx/opset-warning", test_opset_warning);
  g_test_add_func ("/Passlab/Onnx/legacy-inputs", test_legacy_inputs);
  g_test_add_func ("/Passlab/Onnx/bad-files", test_bad_files);
  g_test_add_func ("/Passlab/Onnx/wrong-types", test_wrong_types);
  g_test_add_func ("/Passlab/Onnx/truncated", test_truncated);
  g_test_add_func ("/Passlab/Onnx/random-bytes", test_random_bytes);
  g_test_add_func ("/Passlab/Onnx/deep-nesting", test_deep_nesting);
  g_test_add_func ("/Passlab/Onnx/round-trip", test_round_trip);
  g_test_add_func ("/Passlab/Onnx/export-fusion", test_export_fusion);
  g_test_add_func ("/Passlab/Onnx/layouts", test_layouts);
  g_test_add_func ("/Passlab/Onnx/tensor-files", test_tensor_files);
  g_test_add_func ("/Passlab/Onnx/graph-load", test_graph_load);
  g_test_add_func ("/Passlab/Onnx/conformance", test_conformance);
  g_test_add_func ("/Passlab/Onnx/conformance-suite", test_conformance_suite);
  return g_test_run ();
}
