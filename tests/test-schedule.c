/* test-schedule.c — the memory profile (schedule, liveness, live bytes, peak)
 * and the DOT export, on small hand-built graphs whose byte counts are
 * worked out by hand in the comments. */
#define G_LOG_DOMAIN "passlab"

#include "dot-export.h"
#include "graph.h"
#include "schedule.h"
#include "test-util.h"
#include "text-format.h"

#include <glib/gstdio.h>
#include <string.h>

#define DIMS(...) ((const int64_t[]) { __VA_ARGS__ })

/* --- building graphs -------------------------------------------------------- */

static PlValue *
add_input (PlGraph *g, const char *name, int rank, const int64_t *dims)
{
  g_autoptr (GError) error = NULL;
  PlShape shape = pl_shape_from_dims (rank, dims);
  PlValue *v = pl_graph_add_input (g, name, PL_DTYPE_F32, &shape, &error);
  g_assert_no_error (error);
  return v;
}

static PlValue *
add_constant (PlGraph *g, const char *name, int rank, const int64_t *dims)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlTensor) t = pl_tensor_new (PL_DTYPE_F32, rank, dims, &error);
  g_assert_no_error (error);
  PlValue *v = pl_graph_add_constant (g, name, t, &error);
  g_assert_no_error (error);
  return v;
}

/* Adds a one-output node named name whose output is called "<name>_out",
 * and infers its shape. */
static PlNode *
add_node (PlGraph *g, const char *op, const char *name, int n_inputs, PlValue *const *inputs)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *out = g_strdup_printf ("%s_out", name);
  const char *out_names[] = { out };
  PlNode *node = pl_graph_add_node (g, op, NULL, name, n_inputs, inputs, 1, out_names, &error);
  g_assert_no_error (error);
  g_assert_nonnull (node);
  g_assert_true (pl_node_infer (node, &error));
  g_assert_no_error (error);
  return node;
}

static PlNode *
add_unary (PlGraph *g, const char *op, const char *name, PlValue *x)
{
  return add_node (g, op, name, 1, &x);
}

static PlNode *
add_binary (PlGraph *g, const char *op, const char *name, PlValue *a, PlValue *b)
{
  PlValue *in[] = { a, b };
  return add_node (g, op, name, 2, in);
}

static PlMemoryProfile *
profile (const PlGraph *g, int64_t sym_size)
{
  g_autoptr (GError) error = NULL;
  PlMemoryProfile *p = pl_memory_profile (g, sym_size, &error);
  g_assert_no_error (error);
  g_assert_nonnull (p);
  return p;
}

static void
assert_live (const PlMemoryProfile *p, int n, const int64_t *want)
{
  g_assert_cmpint (p->n_steps, ==, n);
  for (int i = 0; i < n; i++)
    g_assert_cmpint (p->live_bytes[i], ==, want[i]);
}

static void
assert_order (const PlMemoryProfile *p, const char *const *names)
{
  for (int i = 0; i < p->n_steps; i++)
    g_assert_cmpstr (p->order[i]->name, ==, names[i]);
}

/* --- pl_value_bytes ------------------------------------------------------- */

static void
test_value_bytes (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("bytes");
  g_autoptr (GError) error = NULL;

  bool assumed = false;
  PlValue *x = add_input (g, "x", 2, DIMS (3, 5));
  g_assert_cmpint (pl_value_bytes (x, 7, &assumed), ==, 3 * 5 * 4);
  g_assert_false (assumed);

  PlShape sym = pl_shape_from_dims (2, DIMS (1, 4));
  sym.dims[0] = pl_dim_symbol ("N");
  PlValue *s = pl_graph_add_input (g, "s", PL_DTYPE_F64, &sym, &error);
  g_assert_no_error (error);
  g_assert_cmpint (pl_value_bytes (s, 1, &assumed), ==, 1 * 4 * 8);
  g_assert_true (assumed);
  assumed = false;
  g_assert_cmpint (pl_value_bytes (s, 10, &assumed), ==, 10 * 4 * 8);
  g_assert_true (assumed);

  PlShape scalar = pl_shape_scalar ();
  PlValue *b = pl_graph_add_input (g, "b", PL_DTYPE_BOOL, &scalar, &error);
  g_assert_no_error (error);
  assumed = false;
  g_assert_cmpint (pl_value_bytes (b, 1, &assumed), ==, 1);
  g_assert_false (assumed);

  /* Unknown rank: one dim of sym_size. */
  PlShape unknown = pl_shape_unknown ();
  PlValue *u = pl_graph_add_input (g, "u", PL_DTYPE_I64, &unknown, &error);
  g_assert_no_error (error);
  assumed = false;
  g_assert_cmpint (pl_value_bytes (u, 6, &assumed), ==, 6 * 8);
  g_assert_true (assumed);

  /* A zero-sized dim gives zero bytes, known exactly. */
  PlValue *z = add_input (g, "z", 2, DIMS (0, 5));
  assumed = false;
  g_assert_cmpint (pl_value_bytes (z, 1, &assumed), ==, 0);
  g_assert_false (assumed);

  /* NULL assumed pointer is allowed. */
  g_assert_cmpint (pl_value_bytes (s, 2, NULL), ==, 2 * 4 * 8);
}

/* --- profiles --------------------------------------------------------------- */

/* x[2,3] -> a = Relu(x) -> b = Relu(a) -> c = Add(b, x), output c. 24 bytes each.
 *   step 0 (a): x, a        = 48
 *   step 1 (b): x, a        = 48   (x is still needed by step 2; b is written
 *                                   over a, which step 1 reads last)
 *   step 2 (c): x, b        = 48   (c over b; x is a graph input: never overwritten)
 * Peak 48, first reached at step 0. Without in-place sharing it was 48, 72, 72. */
static void
test_chain (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("chain");
  PlValue *x = add_input (g, "x", 2, DIMS (2, 3));
  PlNode *a = add_unary (g, "Relu", "a", x);
  PlNode *b = add_unary (g, "Relu", "b", a->outputs[0]);
  PlNode *c = add_binary (g, "Add", "c", b->outputs[0], x);
  pl_graph_add_output (g, c->outputs[0]);

  g_autoptr (PlMemoryProfile) p = profile (g, 1);
  assert_live (p, 3, DIMS (48, 48, 48));
  assert_order (p, (const char *const[]) { "a", "b", "c" });
  g_assert_cmpint (p->peak_bytes, ==, 48);
  g_assert_cmpint (p->peak_step, ==, 0);
  g_assert_cmpint (p->n_in_place, ==, 2);
  g_assert_cmpint (p->input_bytes, ==, 24);
  g_assert_cmpint (p->param_bytes, ==, 0);
  g_assert_false (p->assumed_sizes);
}

/* Constants count in param_bytes only.
 * x[2,4] (32), w const [4,3] (48), bias const [3] (12);
 * m = MatMul(x, w) [2,3] 24; y = Add(m, bias) 24, output; z = Relu(x) [2,4] 32, output.
 *   step 0 (m): x, m          = 56
 *   step 1 (y): x, m          = 56   (y written over m, read last here)
 *   step 2 (z): x, y, z       = 88   (x is a graph input: z has its own) */
static void
test_constants (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("constants");
  PlValue *x = add_input (g, "x", 2, DIMS (2, 4));
  PlValue *w = add_constant (g, "w", 2, DIMS (4, 3));
  PlValue *bias = add_constant (g, "bias", 1, DIMS (3));
  PlNode *m = add_binary (g, "MatMul", "m", x, w);
  PlNode *y = add_binary (g, "Add", "y", m->outputs[0], bias);
  PlNode *z = add_unary (g, "Relu", "z", x);
  pl_graph_add_output (g, y->outputs[0]);
  pl_graph_add_output (g, z->outputs[0]);

  g_autoptr (PlMemoryProfile) p = profile (g, 1);
  assert_live (p, 3, DIMS (56, 56, 88));
  g_assert_cmpint (p->peak_bytes, ==, 88);
  g_assert_cmpint (p->peak_step, ==, 2);
  g_assert_cmpint (p->input_bytes, ==, 32);
  g_assert_cmpint (p->param_bytes, ==, 60);
  g_assert_cmpint (p->param_bytes, ==, pl_graph_param_bytes (g));
}

/* Two branches from x[1,4] (16 bytes), each widening to [1,64] (256 bytes)
 * and narrowing to [1,1] (4 bytes); out = q + s (4 bytes, written over q).
 * Insertion order p, r, q, s, out runs both wide values together:
 *   p: x,p = 272   r: x,p,r = 528   q: p,r,q = 516   s: r,q,s = 264   out: q,s = 8
 * A serialize edge (r waits for q) gives p, q, r, s, out:
 *   p: x,p = 272   q: x,p,q = 276   r: x,q,r = 276   s: q,r,s = 264   out: 8 */
static PlGraph *
two_branches (PlNode **r_out, PlNode **q_out)
{
  PlGraph *g = pl_graph_new ("branches");
  PlValue *x = add_input (g, "x", 2, DIMS (1, 4));
  PlValue *w1 = add_constant (g, "w1", 2, DIMS (4, 64));
  PlValue *w2 = add_constant (g, "w2", 2, DIMS (64, 1));
  PlNode *p = add_binary (g, "MatMul", "p", x, w1);
  PlNode *r = add_binary (g, "MatMul", "r", x, w1);
  PlNode *q = add_binary (g, "MatMul", "q", p->outputs[0], w2);
  PlNode *s = add_binary (g, "MatMul", "s", r->outputs[0], w2);
  PlNode *out = add_binary (g, "Add", "out", q->outputs[0], s->outputs[0]);
  pl_graph_add_output (g, out->outputs[0]);
  *r_out = r;
  *q_out = q;
  return g;
}

static void
test_control_edges (void)
{
  PlNode *r, *q;
  g_autoptr (PlGraph) g = two_branches (&r, &q);

  g_autoptr (PlMemoryProfile) before = profile (g, 1);
  assert_order (before, (const char *const[]) { "p", "r", "q", "s", "out" });
  assert_live (before, 5, DIMS (272, 528, 516, 264, 8));
  g_assert_cmpint (before->peak_bytes, ==, 528);
  g_assert_cmpint (before->peak_step, ==, 1);
  g_assert_cmpint (before->param_bytes, ==, (4 * 64 + 64) * 4);

  pl_node_add_control (r, q, PL_CONTROL_SERIALIZE);
  g_autoptr (PlMemoryProfile) after = profile (g, 1);
  assert_order (after, (const char *const[]) { "p", "q", "r", "s", "out" });
  assert_live (after, 5, DIMS (272, 276, 276, 264, 8));
  g_assert_cmpint (after->peak_bytes, ==, 276);
  g_assert_cmpint (after->peak_step, ==, 1);
}

/* A control cycle is an error, not a crash. */
static void
test_cycle (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("cycle");
  PlValue *x = add_input (g, "x", 1, DIMS (4));
  PlNode *a = add_unary (g, "Relu", "a", x);
  PlNode *b = add_unary (g, "Relu", "b", a->outputs[0]);
  pl_graph_add_output (g, b->outputs[0]);
  pl_node_add_control (a, b, PL_CONTROL_SERIALIZE);

  g_autoptr (GError) error = NULL;
  g_autoptr (PlMemoryProfile) p = pl_memory_profile (g, 1, &error);
  g_assert_null (p);
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
}

/* Symbolic dims take sym_size. x[N,4] -> y = Relu(x) -> z = Relu(y), output z.
 * With N = 3 every value is 48 bytes: step 0: x,y = 96; step 1: y = 48 (z
 * is written over y: same symbolic shape). */
static void
test_symbolic (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("symbolic");
  g_autoptr (GError) error = NULL;
  PlShape shape = pl_shape_from_dims (2, DIMS (1, 4));
  shape.dims[0] = pl_dim_symbol ("N");
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &shape, &error);
  g_assert_no_error (error);
  PlNode *y = add_unary (g, "Relu", "y", x);
  PlNode *z = add_unary (g, "Relu", "z", y->outputs[0]);
  pl_graph_add_output (g, z->outputs[0]);

  g_autoptr (PlMemoryProfile) p3 = profile (g, 3);
  assert_live (p3, 2, DIMS (96, 48));
  g_assert_cmpint (p3->peak_bytes, ==, 96);
  g_assert_cmpint (p3->peak_step, ==, 0);
  g_assert_cmpint (p3->input_bytes, ==, 48);
  g_assert_true (p3->assumed_sizes);

  g_autoptr (PlMemoryProfile) p1 = profile (g, 1);
  assert_live (p1, 2, DIMS (32, 16));
  g_assert_true (p1->assumed_sizes);
}

/* A value nobody reads is live only while its producer runs; an input
 * that is also an output stays live to the end.
 * x[4] (16) is input and output; d = Relu(x) is dead; e = Relu(x) output.
 *   step 0 (d): x, d = 32;  step 1 (e): x, e = 32 */
static void
test_dead_and_passthrough (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("dead");
  PlValue *x = add_input (g, "x", 1, DIMS (4));
  add_unary (g, "Relu", "d", x);
  PlNode *e = add_unary (g, "Relu", "e", x);
  pl_graph_add_output (g, x);
  pl_graph_add_output (g, e->outputs[0]);

  g_autoptr (PlMemoryProfile) p = profile (g, 1);
  assert_live (p, 2, DIMS (32, 32));
  g_assert_cmpint (p->peak_bytes, ==, 32);
  g_assert_cmpint (p->peak_step, ==, 0);

  /* An unused input is held at step 0 (it exists before the run). */
  add_input (g, "unused", 1, DIMS (10));
  g_autoptr (PlMemoryProfile) q = profile (g, 1);
  assert_live (q, 2, DIMS (72, 32));
  g_assert_cmpint (q->input_bytes, ==, 56);
}

/* No nodes: the inputs alone make the peak; no step holds it. */
static void
test_empty (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("empty");
  PlValue *x = add_input (g, "x", 1, DIMS (10));
  pl_graph_add_output (g, x);

  g_autoptr (PlMemoryProfile) p = profile (g, 1);
  g_assert_cmpint (p->n_steps, ==, 0);
  g_assert_cmpint (p->peak_bytes, ==, 40);
  g_assert_cmpint (p->peak_step, ==, -1);
  g_assert_cmpint (p->input_bytes, ==, 40);
}

/* --- in-place sharing ---------------------------------------------------------- */

/* The values listed live at every step are the curve's bytes. */
static void
assert_live_lists_sum (const PlMemoryProfile *p, const PlGraph *g)
{
  for (int i = 0; i < p->n_steps; i++)
    {
      g_autoptr (GPtrArray) live = pl_memory_profile_live_at (p, g, i);
      int64_t sum = 0;
      for (guint k = 0; k < live->len; k++)
        if (!pl_value_on_host (live->pdata[k]))
          sum += pl_value_bytes (live->pdata[k], 1, NULL);
      g_assert_cmpint (sum, ==, p->live_bytes[i]);
    }
}

static bool
listed (const PlMemoryProfile *p, const PlGraph *g, int step, const char *name)
{
  g_autoptr (GPtrArray) live = pl_memory_profile_live_at (p, g, step);
  for (guint k = 0; k < live->len; k++)
    if (strcmp (((PlValue *) live->pdata[k])->name, name) == 0)
      return true;
  return false;
}

/* An elementwise op writes its output over an input it reads last, of its
 * shape and element size; never over a graph input or output, nor over a
 * value read later. x[4,8] and every [4,8] f32 value: 128 bytes; s[8]: 32;
 * f (f64): 256.
 *   step 0 a = Exp(x):     x, s, a       = 288   (x is a graph input)
 *   step 1 b = Sin(a):     s, a, b       = 288   (a is read again by c: b has its own)
 *   step 2 c = Add(a, b):  s, a, b       = 288   (c over a, the first input that dies)
 *   step 3 d = Add(c, s):  s, c          = 160   (d over c; s is a graph input, and broadcast)
 *   step 4 e = Relu(d):    d, e          = 256   (d is a graph output: kept)
 *   step 5 f = Cast(e):    d, e, f       = 512   (e dies, but f64 elements are wider) */
static void
test_in_place (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph inplace opset 17 {\n"
                                 "  input x: f32[4, 8]\n  input s: f32[8]\n"
                                 "  a = Exp(x)\n  b = Sin(a)\n  c = Add(a, b)\n  d = Add(c, s)\n"
                                 "  e = Relu(d)\n  f = Cast(e) {to=11}\n"
                                 "  output d, f\n}\n");
  g_autoptr (PlMemoryProfile) p = profile (g, 1);
  assert_order (p, (const char *const[]) { "a", "b", "c", "d", "e", "f" });
  assert_live (p, 6, DIMS (288, 288, 288, 160, 256, 512));
  g_assert_cmpint (p->n_in_place, ==, 2);
  g_assert_cmpint (p->peak_bytes, ==, 512);
  assert_live_lists_sum (p, g);
  /* at its own step an output written in place is its input's memory */
  g_assert_true (listed (p, g, 2, "a"));
  g_assert_false (listed (p, g, 2, "c"));
  g_assert_true (listed (p, g, 3, "c"));
  g_assert_true (listed (p, g, 4, "d") && listed (p, g, 4, "e"));

  /* the rule itself, with the caller's dies[] */
  PlNode *a = pl_graph_find_node (g, "a"), *c = pl_graph_find_node (g, "c"), *d = pl_graph_find_node (g, "d");
  PlNode *e = pl_graph_find_node (g, "e"), *f = pl_graph_find_node (g, "f");
  g_assert_cmpint (pl_in_place_input (c, 0, (const bool[]) { true, true }), ==, 0);
  g_assert_cmpint (pl_in_place_input (c, 0, (const bool[]) { false, true }), ==, 1);
  g_assert_cmpint (pl_in_place_input (c, 0, (const bool[]) { false, false }), ==, -1);
  g_assert_cmpint (pl_in_place_input (d, 0, (const bool[]) { false, true }), ==, -1);   /* s: an input, other shape */
  g_assert_cmpint (pl_in_place_input (a, 0, (const bool[]) { true }), ==, -1);          /* x: a graph input */
  g_assert_cmpint (pl_in_place_input (e, 0, (const bool[]) { true }), ==, -1);          /* d: a graph output */
  g_assert_cmpint (pl_in_place_input (f, 0, (const bool[]) { true }), ==, -1);          /* f32 -> f64 */
  g_assert_cmpint (pl_in_place_input (c, 1, (const bool[]) { true, true }), ==, -1);    /* no output 1 */
}

/* Only elementwise ops share: a MatMul, a Transpose or a reduction writes
 * its own memory even where an input of its shape dies. 64 bytes each.
 *   step 0 a = Exp(x): x, a = 128;  step 1 t = Transpose(a): a, t = 128;
 *   step 2 m = MatMul(t, w): t, m = 128;  step 3 r = Softmax(m): m, r = 128;
 *   step 4 y = Neg(r): r = 64 (y over r) */
static void
test_in_place_elementwise_only (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph only opset 17 {\n  input x: f32[4, 4]\n"
                                 "  const w: f32[4, 4] = random(seed=1)\n"
                                 "  a = Exp(x)\n  t = Transpose(a) {perm=[1, 0]}\n  m = MatMul(t, w)\n"
                                 "  r = Softmax(m) {axis=1}\n  y = Neg(r)\n  output y\n}\n");
  g_autoptr (PlMemoryProfile) p = profile (g, 1);
  assert_live (p, 5, DIMS (128, 128, 128, 128, 64));
  g_assert_cmpint (p->n_in_place, ==, 1);
  assert_live_lists_sum (p, g);
}

/* --- DOT export ------------------------------------------------------------- */

static void
assert_contains (const char *haystack, const char *needle)
{
  if (strstr (haystack, needle) == NULL)
    g_error ("expected %s in:\n%s", needle, haystack);
}

/* Runs `dot -Tsvg` on text when Graphviz is installed; checks it accepts it. */
static void
assert_dot_parses (const char *text)
{
  g_autofree char *dot = g_find_program_in_path ("dot");
  if (dot == NULL)
    {
      g_test_message ("dot not installed: DOT syntax not checked by Graphviz");
      return;
    }
  g_autofree char *dir = g_dir_make_tmp ("passlab-dot-XXXXXX", NULL);
  g_assert_nonnull (dir);
  g_autofree char *path = g_build_filename (dir, "g.dot", NULL);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));

  const char *argv[] = { dot, "-Tsvg", "-o", "/dev/null", path, NULL };
  g_autofree char *err = NULL;
  int status = 0;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL,
                               NULL, NULL, NULL, &err, &status, &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("dot rejected the export: %s\n%s", err, text);
  g_assert_cmpstr (err, ==, "");   /* no warnings either */
  g_unlink (path);
  g_rmdir (dir);
}

static void
test_dot_basic (void)
{
  PlNode *r, *q;
  g_autoptr (PlGraph) g = two_branches (&r, &q);
  pl_node_add_control (r, q, PL_CONTROL_SERIALIZE);

  g_autofree char *dot = pl_dot_export (g);
  assert_contains (dot, "digraph \"branches\" {");
  assert_contains (dot, "label=\"p\\nMatMul\"");
  assert_contains (dot, "label=\"out\\nAdd\"");
  /* Colours follow the op category. */
  PlNode *p = pl_graph_find_node (g, "p");
  g_autofree char *mm = g_strdup_printf ("\"n%u\" [label=\"p\\nMatMul\", fillcolor=\"#f4cccc\"]", p->id);
  assert_contains (dot, mm);
  /* Input, constants and output have their own shapes. */
  assert_contains (dot, "label=\"x\\nf32[1, 4]\", shape=ellipse");
  assert_contains (dot, "label=\"w1\\nf32[4, 64]\", shape=note");
  assert_contains (dot, "shape=doubleoctagon");
  /* Data edges carry dtype and shape. */
  g_autofree char *edge = g_strdup_printf ("\"n%u\" -> \"n%u\" [label=\"f32[1, 64]\"]",
                                           p->id, q->id);
  assert_contains (dot, edge);
  /* The control edge is dashed and says its kind. */
  g_autofree char *ctl = g_strdup_printf ("\"n%u\" -> \"n%u\" [style=dashed", q->id, r->id);
  assert_contains (dot, ctl);
  assert_contains (dot, "label=\"serialize\"");
  assert_dot_parses (dot);
}

/* Names with quotes, backslashes and newlines stay inside their strings. */
static void
test_dot_escaping (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("we\"ird {graph}");
  PlValue *x = add_input (g, "in\"put\\x", 1, DIMS (2));
  PlNode *a = add_unary (g, "Relu", "a\nb", x);
  pl_graph_add_output (g, a->outputs[0]);

  g_autofree char *dot = pl_dot_export (g);
  assert_contains (dot, "digraph \"we\\\"ird {graph}\" {");
  assert_contains (dot, "label=\"in\\\"put\\\\x\\nf32[2]\"");
  assert_contains (dot, "label=\"a\\nb\\nRelu\"");
  assert_dot_parses (dot);
}

/* A fusion node is a cluster holding its body; data flows through it. */
static void
test_dot_fusion (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_graph_new ("fused");
  PlValue *x = add_input (g, "x", 2, DIMS (2, 3));

  PlGraph *body = pl_graph_new ("body");
  PlValue *bx = add_input (body, "bx", 2, DIMS (2, 3));
  PlNode *br = add_unary (body, "Relu", "br", bx);
  PlNode *bn = add_unary (body, "Neg", "bn", br->outputs[0]);
  pl_graph_add_output (body, bn->outputs[0]);

  const char *out_names[] = { "fy" };
  PlNode *f = pl_graph_add_node (g, "Fusion", "passlab", "fusion0", 1, &x, 1, out_names, &error);
  g_assert_no_error (error);
  pl_node_set_body (f, body);
  PlNode *after = add_unary (g, "Relu", "after", x);
  PlValue *in[] = { f->outputs[0], after->outputs[0] };
  PlNode *last = pl_graph_add_node (g, "Sum", NULL, "last", 2, in, 1, NULL, &error);
  g_assert_no_error (error);
  pl_graph_add_output (g, last->outputs[0]);
  pl_node_add_control (after, f, PL_CONTROL_PREFETCH);

  g_autofree char *dot = pl_dot_export (g);
  g_autofree char *cluster = g_strdup_printf ("subgraph cluster_%u {", f->id);
  assert_contains (dot, cluster);
  assert_contains (dot, "label=\"fusion0\\nFusion\"");
  /* Body nodes live under a prefix of the fusion node's id. */
  g_autofree char *br_node = g_strdup_printf ("\"f%u_n%u\" [label=\"br\\nRelu\"", f->id, br->id);
  assert_contains (dot, br_node);
  /* The outer input flows into the body's input slot ... */
  g_autofree char *in_edge = g_strdup_printf ("\"v%u\" -> \"f%u_v%u\"", x->id, f->id, bx->id);
  assert_contains (dot, in_edge);
  /* ... and the body's output producer feeds the outer consumer. */
  g_autofree char *out_edge = g_strdup_printf ("\"f%u_n%u\" -> \"n%u\"", f->id, bn->id, last->id);
  assert_contains (dot, out_edge);
  /* A control edge from the fusion node (after waits for it) leaves its cluster. */
  g_autofree char *ctl = g_strdup_printf ("\"n%u\" -> \"n%u\" [style=dashed, color=\"#cc0000\", "
                                          "fontcolor=\"#cc0000\", label=\"prefetch\", ltail=\"cluster_%u\"]",
                                          f->id, after->id, f->id);
  assert_contains (dot, ctl);
  assert_contains (dot, "label=\"prefetch\"");
  assert_dot_parses (dot);

  /* pl_dot_save writes the same text; a bad path is an IO error. */
  g_autofree char *dir = g_dir_make_tmp ("passlab-dot-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "f.dot", NULL);
  g_assert_true (pl_dot_save (g, path, &error));
  g_assert_no_error (error);
  g_autofree char *saved = NULL;
  g_assert_true (g_file_get_contents (path, &saved, NULL, NULL));
  g_assert_cmpstr (saved, ==, dot);
  g_unlink (path);
  g_rmdir (dir);

  g_assert_false (pl_dot_save (g, "/nonexistent-dir/x.dot", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_IO);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();

  g_test_add_func ("/Passlab/Schedule/value-bytes", test_value_bytes);
  g_test_add_func ("/Passlab/Schedule/chain", test_chain);
  g_test_add_func ("/Passlab/Schedule/constants", test_constants);
  g_test_add_func ("/Passlab/Schedule/control-edges", test_control_edges);
  g_test_add_func ("/Passlab/Schedule/cycle", test_cycle);
  g_test_add_func ("/Passlab/Schedule/symbolic", test_symbolic);
  g_test_add_func ("/Passlab/Schedule/dead-and-passthrough", test_dead_and_passthrough);
  g_test_add_func ("/Passlab/Schedule/empty", test_empty);
  g_test_add_func ("/Passlab/Schedule/in-place", test_in_place);
  g_test_add_func ("/Passlab/Schedule/in-place-elementwise-only", test_in_place_elementwise_only);
  g_test_add_func ("/Passlab/Dot/basic", test_dot_basic);
  g_test_add_func ("/Passlab/Dot/escaping", test_dot_escaping);
  g_test_add_func ("/Passlab/Dot/fusion", test_dot_fusion);
  return g_test_run ();
}
