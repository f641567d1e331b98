/* test-pass-fusion.c — the fusion machinery (fusion.h: building fusion
 * nodes, the cycle checks, the planner), fuse-loops and fuse-library: the
 * exact fusion structure on hand-written graphs (which nodes end up in which
 * body, the kind, the flags), the no-cycle rule, and every changed step
 * checked numerically through pl_pipeline_run and verified. */
#include "builtin-passes.h"
#include "cost.h"
#include "fusion.h"
#include "onnx-io.h"
#include "pass-manager.h"
#include "text-format.h"
#include "test-util.h"

#include <string.h>

/* --- helpers ------------------------------------------------------------------- */

static PlGraph *
load_graph (const char *relative)
{
  g_autofree char *path = pl_test_source_path (relative);
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_text_load (path, &error);
  g_assert_no_error (error);
  return g;
}

static PlNode *
node (const PlGraph *g, const char *name)
{
  PlNode *n = pl_graph_find_node (g, name);
  if (!n)
    g_error ("no node '%s'", name);
  return n;
}

static void
assert_verifies (const PlGraph *g)
{
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);
}

/* Runs spec on g (params "pass.key=value", NULL-terminated) with the
 * numerical check after every changed step; every step must verify and
 * pass its check. Returns the history (the last graph is its last step's). */
static PlHistory *
run_checked (const PlGraph *g, const char *spec, const char *const *params)
{
  return pl_test_run_checked (g, spec, params, 1e-4, 7);
}

static PlGraph *
last_graph (const PlHistory *h)
{
  return pl_history_step (h, pl_history_n_steps (h) - 1)->graph;
}

/* Names of the nodes in a fusion's body, in order, joined by ','. */
static char *
body_nodes (const PlNode *f)
{
  g_assert_nonnull (f->body);
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < f->body->nodes->len; i++)
    g_string_append_printf (s, "%s%s", i ? "," : "", ((PlNode *) f->body->nodes->pdata[i])->name);
  return g_string_free (s, FALSE);
}

/* Names of a node's inputs (or outputs) joined by ','. */
static char *
value_names (PlValue *const *values, int n)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; i < n; i++)
    g_string_append_printf (s, "%s%s", i ? "," : "", values[i] ? values[i]->name : "_");
  return g_string_free (s, FALSE);
}

/* The fusion node producing the value called name; checks its kind. */
static PlNode *
fusion_producing (const PlGraph *g, const char *name, const char *kind)
{
  PlValue *v = pl_graph_find_value (g, name);
  g_assert_nonnull (v);
  g_assert_nonnull (v->producer);
  g_assert_cmpint (v->producer->op, ==, PL_OP_Fusion);
  g_assert_cmpstr (pl_node_attr_string (v->producer, "kind", NULL), ==, kind);
  g_assert_true (g_str_has_prefix (v->producer->name, "fusion_"));
  return v->producer;
}

static void
assert_fusion (const PlGraph *g, const char *value, const char *kind, const char *nodes, const char *inputs,
               const char *outputs)
{
  PlNode *f = fusion_producing (g, value, kind);
  g_autofree char *b = body_nodes (f);
  g_autofree char *in = value_names (f->inputs, f->n_inputs);
  g_autofree char *out = value_names (f->outputs, f->n_outputs);
  g_assert_cmpstr (b, ==, nodes);
  if (inputs)
    g_assert_cmpstr (in, ==, inputs);
  if (outputs)
    g_assert_cmpstr (out, ==, outputs);
  /* the body's interface has the node's names */
  g_autofree char *bin = value_names ((PlValue *const *) f->body->inputs->pdata, (int) f->body->inputs->len);
  g_autofree char *bout = value_names ((PlValue *const *) f->body->outputs->pdata, (int) f->body->outputs->len);
  g_assert_cmpstr (bin, ==, in);
  g_assert_cmpstr (bout, ==, out);
}

/* Fusion nodes survive the text format: printed, parsed and printed again. */
static void
assert_round_trip (const PlGraph *g)
{
  g_autofree char *text = pl_text_print (g);
  g_autoptr (PlGraph) back = pl_test_parse (text);
  g_autofree char *again = pl_text_print (back);
  g_assert_cmpstr (text, ==, again);
  assert_verifies (back);
}

static int
count_op (const PlGraph *g, PlOp op)
{
  int n = 0;
  for (guint i = 0; i < g->nodes->len; i++)
    n += ((PlNode *) g->nodes->pdata[i])->op == op;
  return n;
}

static void
assert_same_results (const PlGraph *before, const PlGraph *after)
{
  g_autoptr (GError) error = NULL;
  double errors[16];
  g_assert_cmpuint (before->outputs->len, <=, G_N_ELEMENTS (errors));
  g_assert_true (pl_check_graphs (before, after, 3, 1, errors, &error));
  g_assert_no_error (error);
  for (guint i = 0; i < before->outputs->len; i++)
    g_assert_cmpfloat (errors[i], <=, 1e-6);
}

/* --- pl_fusion_create ---------------------------------------------------------- */

static void
test_create (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t {\n"
                                 "  input x: f32[2, 3]\n"
                                 "  input y: f32[2, 3]\n"
                                 "  const k: f32[] = 2.0\n"
                                 "  a = Relu(x)\n"
                                 "  b = Exp(a)\n"
                                 "  c = Add(b, y)\n"
                                 "  e = Mul(c, k)\n"
                                 "  d = Neg(a)\n"
                                 "  output e, d\n"
                                 "}\n");
  g_autoptr (PlGraph) before = pl_graph_copy (g);
  g_autoptr (GError) error = NULL;
  PlNode *f = pl_fusion_create (g, (PlNode *[]) { node (g, "e"), node (g, "b"), node (g, "a"), node (g, "c") }, 4,
                                PL_FUSION_KIND_LOOP, &error);
  g_assert_no_error (error);
  g_assert_nonnull (f);
  assert_verifies (g);
  g_assert_cmpstr (f->name, ==, "fusion_0");
  g_assert_cmpstr (f->op_type, ==, "Fusion");
  g_assert_cmpstr (f->domain, ==, "");
  /* body in topological order; `a` is read outside (by d), e is a graph output */
  assert_fusion (g, "e", "loop", "a,b,c,e", "x,y", "a,e");
  g_assert_cmpuint (g->nodes->len, ==, 2);
  g_assert_true (node (g, "d")->inputs[0] == f->outputs[0]);
  g_assert_true (g->outputs->pdata[0] == f->outputs[1]);
  /* the scalar constant moved into the body and left the outer graph */
  g_assert_null (pl_graph_find_value (g, "k"));
  PlValue *k = pl_graph_find_value (f->body, "k");
  g_assert_nonnull (k);
  g_assert_nonnull (k->constant);
  g_assert_true (pl_shape_equal (&f->outputs[1]->shape, &((PlValue *) before->outputs->pdata[0])->shape));
  assert_same_results (before, g);

  /* a second fusion takes the next name; fusions are never fused again by
   * the passes, but pl_fusion_create may nest them */
  PlNode *f2 = pl_fusion_create (g, (PlNode *[]) { f, node (g, "d") }, 2, PL_FUSION_KIND_LOOP, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (f2->name, ==, "fusion_1");
  g_assert_nonnull (node (f2->body, "fusion_0")->body);
  assert_verifies (g);
  assert_same_results (before, g);
}

static void
test_create_errors (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t {\n"
                                 "  input x: f32[6]\n"
                                 "  input w: f32[6, 6]\n"
                                 "  input z: f32[2, 3]\n"
                                 "  a = Relu(x)\n"
                                 "  m = MatMul(a, w)\n"
                                 "  c = Add(a, m)\n"
                                 "  dead = Neg(x)\n"
                                 "  s = Shape(z)\n"
                                 "  r: f32[2, 3] = Reshape(x, s)\n"
                                 "  t = Tanh(r)\n"
                                 "  output c, t\n"
                                 "}\n");
  guint n_nodes = g->nodes->len;
  g_autoptr (GError) error = NULL;

  g_assert_null (pl_fusion_create (g, (PlNode *[]) { node (g, "a"), node (g, "c") }, 2, "loop", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "cycle"));
  g_clear_error (&error);

  g_assert_null (pl_fusion_create (g, NULL, 0, "loop", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_clear_error (&error);

  g_assert_null (pl_fusion_create (g, (PlNode *[]) { node (g, "dead") }, 1, "loop", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "reads their results"));
  g_clear_error (&error);

  g_assert_null (pl_fusion_create (g, (PlNode *[]) { node (g, "a"), node (g, "a") }, 2, "loop", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_clear_error (&error);

  /* r's shape came from Shape(z) outside: inside a body it could not be known */
  g_assert_null (pl_fusion_create (g, (PlNode *[]) { node (g, "r"), node (g, "t") }, 2, "loop", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "'r'"));
  g_clear_error (&error);

  g_autoptr (PlGraph) other = pl_test_parse ("graph o { input x: f32[6]\n y = Relu(x)\n output y }");
  g_assert_null (pl_fusion_create (g, (PlNode *[]) { node (g, "a"), node (other, "y") }, 2, "loop", &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_clear_error (&error);

  /* nothing changed */
  g_assert_cmpuint (g->nodes->len, ==, n_nodes);
  g_assert_cmpint (count_op (g, PL_OP_Fusion), ==, 0);
  assert_verifies (g);
}

static void
test_create_controls (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t {\n"
                                 "  input x: f32[4]\n"
                                 "  e = Sigmoid(x)\n"
                                 "  a = Relu(x) after(serialize: e)\n"
                                 "  b = Exp(a)\n"
                                 "  c = Neg(x) after(prefetch: b)\n"
                                 "  output b, c\n"
                                 "}\n");
  g_autoptr (PlGraph) g2 = pl_graph_copy (g);
  g_autoptr (GError) error = NULL;

  /* edges into and out of the set move to the fusion node */
  PlNode *f = pl_fusion_create (g, (PlNode *[]) { node (g, "a"), node (g, "b") }, 2, "loop", &error);
  g_assert_no_error (error);
  assert_verifies (g);
  g_assert_cmpint (f->n_controls, ==, 1);
  g_assert_true (f->controls[0].node == node (g, "e"));
  g_assert_cmpint (f->controls[0].kind, ==, PL_CONTROL_SERIALIZE);
  PlNode *c = node (g, "c");
  g_assert_cmpint (c->n_controls, ==, 1);
  g_assert_true (c->controls[0].node == f);
  g_assert_cmpint (c->controls[0].kind, ==, PL_CONTROL_PREFETCH);
  g_assert_cmpuint (g->n_control_edges, ==, 2);

  /* an edge inside the set stays inside, in the body */
  f = pl_fusion_create (g2, (PlNode *[]) { node (g2, "e"), node (g2, "a") }, 2, "loop", &error);
  g_assert_no_error (error);
  assert_verifies (g2);
  g_assert_cmpint (f->n_controls, ==, 0);
  PlNode *inner_a = node (f->body, "a");
  g_assert_cmpint (inner_a->n_controls, ==, 1);
  g_assert_true (inner_a->controls[0].node == node (f->body, "e"));
  /* e is nobody's input outside: only a is an output */
  g_autofree char *outs = value_names (f->outputs, f->n_outputs);
  g_assert_cmpstr (outs, ==, "a");
}

/* --- cycle checks and the planner --------------------------------------------------- */

static void
test_would_cycle (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t {\n"
                                 "  input x: f32[6]\n"
                                 "  input w: f32[6, 6]\n"
                                 "  a = Relu(x)\n"
                                 "  m = MatMul(a, w)\n"
                                 "  c = Add(a, m)\n"
                                 "  output c\n"
                                 "}\n");
  PlNode *a = node (g, "a"), *m = node (g, "m"), *c = node (g, "c");
  g_assert_true (pl_fusion_would_cycle (g, (PlNode *[]) { a, c }, 2));
  g_assert_true (pl_fusion_would_cycle (g, (PlNode *[]) { c, a }, 2));
  g_assert_false (pl_fusion_would_cycle (g, (PlNode *[]) { a, m, c }, 3));
  g_assert_false (pl_fusion_would_cycle (g, (PlNode *[]) { a, m }, 2));
  g_assert_false (pl_fusion_would_cycle (g, (PlNode *[]) { a }, 1));

  /* control edges count: b waits on a, c reads both */
  g_autoptr (PlGraph) h = pl_test_parse ("graph t {\n"
                                 "  input x: f32[6]\n"
                                 "  a = Relu(x)\n"
                                 "  b = Neg(x) after(serialize: a)\n"
                                 "  c = Add(a, b)\n"
                                 "  output c\n"
                                 "}\n");
  g_assert_true (pl_fusion_would_cycle (h, (PlNode *[]) { node (h, "a"), node (h, "c") }, 2));
  g_assert_false (pl_fusion_would_cycle (h, (PlNode *[]) { node (h, "b"), node (h, "c") }, 2));

  g_autoptr (PlFusionPlan) p = pl_fusion_plan_new (g, NULL);
  g_assert_true (pl_fusion_plan_would_cycle (p, (PlNode *[]) { a, c }, 2));
  g_assert_false (pl_fusion_plan_merge (p, (PlNode *[]) { a, c }, 2));
  g_assert_cmpint (pl_fusion_plan_group_size (p, a), ==, 1);
  g_assert_true (pl_fusion_plan_merge (p, (PlNode *[]) { c, m }, 2));
  g_assert_true (pl_fusion_plan_merge (p, (PlNode *[]) { a, c }, 2));
  g_assert_cmpint (pl_fusion_plan_group_size (p, m), ==, 3);
  g_assert_true (pl_fusion_plan_same_group (p, a, c));
  g_autoptr (GPtrArray) members = pl_fusion_plan_members (p, c);
  g_assert_cmpuint (members->len, ==, 3);
  g_assert_true (members->pdata[0] == a && members->pdata[1] == m && members->pdata[2] == c);
}

/* Two groups that are each fine but make a cycle together: only a planner
 * that contracts the first group sees it. */
static void
test_plan_cross_groups (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t {\n"
                                 "  input x: f32[6]\n"
                                 "  a1 = Relu(x)\n"
                                 "  b1 = Exp(a1)\n"
                                 "  b2 = Neg(x)\n"
                                 "  a2 = Add(b2, a1)\n"
                                 "  c = Add(b1, a2)\n"
                                 "  output c\n"
                                 "}\n");
  PlNode *a1 = node (g, "a1"), *a2 = node (g, "a2"), *b1 = node (g, "b1"), *b2 = node (g, "b2");
  g_assert_false (pl_fusion_would_cycle (g, (PlNode *[]) { b1, b2 }, 2));
  g_autoptr (PlFusionPlan) p = pl_fusion_plan_new (g, NULL);
  g_assert_true (pl_fusion_plan_merge (p, (PlNode *[]) { a1, a2 }, 2));
  g_assert_true (pl_fusion_plan_would_cycle (p, (PlNode *[]) { b1, b2 }, 2));
  g_assert_false (pl_fusion_plan_merge (p, (PlNode *[]) { b2, b1 }, 2));
  g_autoptr (GPtrArray) groups = pl_fusion_plan_groups (p, 2);
  g_assert_cmpuint (groups->len, ==, 1);
}

/* Whether the groups (node -> group index) of g form a DAG; Kahn's algorithm
 * on the contracted graph, independent of the planner. */
static bool
groups_acyclic (const PlGraph *g, GHashTable *group_of, int n_groups)
{
  g_autofree int *pending = g_new0 (int, n_groups);
  g_autoptr (GHashTable) edges = g_hash_table_new (NULL, NULL);   /* 1 + from * n + to */
  g_autoptr (GPtrArray) succ = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  for (int i = 0; i < n_groups; i++)
    g_ptr_array_add (succ, g_array_new (FALSE, FALSE, sizeof (int)));
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *n = g->nodes->pdata[i];
      int to = GPOINTER_TO_INT (g_hash_table_lookup (group_of, n)) - 1;
      for (int k = 0; k < n->n_inputs; k++)
        {
          if (!n->inputs[k] || !n->inputs[k]->producer)
            continue;
          int from = GPOINTER_TO_INT (g_hash_table_lookup (group_of, n->inputs[k]->producer)) - 1;
          if (from != to && g_hash_table_add (edges, GINT_TO_POINTER (1 + from * n_groups + to)))
            {
              g_array_append_val ((GArray *) succ->pdata[from], to);
              pending[to]++;
            }
        }
    }
  g_autoptr (GArray) ready = g_array_new (FALSE, FALSE, sizeof (int));
  for (int i = 0; i < n_groups; i++)
    if (pending[i] == 0)
      g_array_append_val (ready, i);
  int done = 0;
  while (ready->len > 0)
    {
      int x = g_array_index (ready, int, ready->len - 1);
      g_array_set_size (ready, ready->len - 1);
      done++;
      GArray *s = succ->pdata[x];
      for (guint i = 0; i < s->len; i++)
        if (--pending[g_array_index (s, int, i)] == 0)
          g_array_append_val (ready, g_array_index (s, int, i));
    }
  return done == n_groups;
}

/* node -> 1 + group index, per the plan's current groups. */
static int
plan_assignment (PlFusionPlan *p, GHashTable *group_of)
{
  g_autoptr (GPtrArray) groups = pl_fusion_plan_groups (p, 1);
  g_hash_table_remove_all (group_of);
  for (guint i = 0; i < groups->len; i++)
    {
      GPtrArray *m = groups->pdata[i];
      for (guint k = 0; k < m->len; k++)
        g_hash_table_insert (group_of, m->pdata[k], GINT_TO_POINTER (i + 1));
    }
  return (int) groups->len;
}

/* Random DAGs, random merges: every merge the planner makes leaves the
 * groups acyclic, every merge it refuses would have made a cycle (checked
 * independently), and building all groups at once computes the same. */
static void
test_plan_random (void)
{
  GRand *rand = g_rand_new_with_seed (42);
  int refused_total = 0;
  for (int round = 0; round < 30; round++)
    {
      int n = 40 + g_rand_int_range (rand, 0, 40);
      GString *text = g_string_new ("graph r {\n  input x: f32[3]\n");
      for (int i = 0; i < n; i++)
        {
          /* reads one or two earlier values; a few long-range edges */
          int a = i == 0 ? -1 : g_rand_int_range (rand, MAX (-1, i - 6), i);
          int b = i == 0 ? -1 : g_rand_int_range (rand, -1, i);
          g_autofree char *na = a < 0 ? g_strdup ("x") : g_strdup_printf ("n%d", a);
          g_autofree char *nb = b < 0 ? g_strdup ("x") : g_strdup_printf ("n%d", b);
          if (g_rand_boolean (rand))
            g_string_append_printf (text, "  n%d = Add(%s, %s)\n", i, na, nb);
          else
            g_string_append_printf (text, "  n%d = Tanh(%s)\n", i, na);
        }
      g_string_append_printf (text, "  output n%d", n - 1);
      for (int i = 0; i < n - 1; i += 7)
        g_string_append_printf (text, ", n%d", i);
      g_string_append (text, "\n}\n");
      g_autoptr (PlGraph) g = pl_test_parse (text->str);
      g_string_free (text, TRUE);

      g_autoptr (PlFusionPlan) p = pl_fusion_plan_new (g, NULL);
      g_autoptr (GHashTable) group_of = g_hash_table_new (NULL, NULL);
      int merged = 0, refused = 0;
      for (int t = 0; t < 3 * n; t++)
        {
          PlNode *u = g->nodes->pdata[g_rand_int_range (rand, 0, n)];
          PlNode *v = g->nodes->pdata[g_rand_int_range (rand, 0, n)];
          if (pl_fusion_plan_same_group (p, u, v))
            continue;
          /* the independent answer: join the two groups and look for a cycle */
          int k = plan_assignment (p, group_of);
          gpointer gu = g_hash_table_lookup (group_of, u), gv = g_hash_table_lookup (group_of, v);
          GHashTableIter it;
          gpointer key, val;
          g_hash_table_iter_init (&it, group_of);
          while (g_hash_table_iter_next (&it, &key, &val))
            if (val == gv)
              g_hash_table_iter_replace (&it, gu);
          bool cycle = !groups_acyclic (g, group_of, k);
          bool ok = pl_fusion_plan_merge (p, (PlNode *[]) { u, v }, 2);
          g_assert_cmpint (ok, ==, !cycle);
          merged += ok;
          refused += !ok;
          k = plan_assignment (p, group_of);
          g_assert_true (groups_acyclic (g, group_of, k));
        }
      g_assert_cmpint (merged, >, 0);
      refused_total += refused;

      /* build every group of two or more at once */
      g_autoptr (PlGraph) before = pl_graph_copy (g);
      g_autoptr (GPtrArray) groups = pl_fusion_plan_groups (p, 2);
      g_autoptr (GPtrArray) kinds = g_ptr_array_new ();
      g_autoptr (GPtrArray) live = g_ptr_array_new ();
      for (guint i = 0; i < groups->len; i++)
        {
          /* a group whose results nobody reads is dead code: skip it */
          GPtrArray *m = groups->pdata[i];
          g_autoptr (GHashTable) in = g_hash_table_new (NULL, NULL);
          for (guint k = 0; k < m->len; k++)
            g_hash_table_add (in, m->pdata[k]);
          bool used = false;
          for (guint k = 0; k < m->len && !used; k++)
            {
              PlValue *v = ((PlNode *) m->pdata[k])->outputs[0];
              used = pl_value_is_output (v);
              for (int u = 0; u < v->n_uses && !used; u++)
                used = !g_hash_table_contains (in, v->uses[u].node);
            }
          if (used)
            {
              g_ptr_array_add (live, m);
              g_ptr_array_add (kinds, (gpointer) PL_FUSION_KIND_LOOP);
            }
        }
      g_autoptr (GError) error = NULL;
      g_autoptr (GPtrArray) made = pl_fusion_create_many (g, live, (const char *const *) kinds->pdata, NULL, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (made->len, ==, live->len);
      assert_verifies (g);
      assert_same_results (before, g);
    }
  g_assert_cmpint (refused_total, >, 0);
  g_rand_free (rand);
}

/* --- fuse-loops --------------------------------------------------------------------- */

/* a feeds both the MatMul and b; fusing a with b, c, d would go out through
 * the MatMul and back in. */
static void
test_loops_diamond (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t {\n"
                                 "  input x: f32[4, 8]\n"
                                 "  input w: f32[8, 8]\n"
                                 "  a = Relu(x)\n"
                                 "  b = Sigmoid(a)\n"
                                 "  m = MatMul(a, w)\n"
                                 "  c = Add(b, m)\n"
                                 "  d = Tanh(c)\n"
                                 "  output d\n"
                                 "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "fuse-loops", NULL);
  PlGraph *out = last_graph (h);
  g_assert_cmpint (count_op (out, PL_OP_Fusion), ==, 1);
  assert_fusion (out, "d", "loop", "b,c,d", "a,m", "d");
  g_assert_cmpint (node (out, "a")->op, ==, PL_OP_Relu);
  g_assert_cmpint (node (out, "m")->op, ==, PL_OP_MatMul);
  PlStep *s = pl_history_step (h, 1);
  g_assert_cmpint (pl_pass_report_get (s->counters, "fusions"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (s->counters, "kernels before"), ==, 5);
  g_assert_cmpint (pl_pass_report_get (s->counters, "kernels after"), ==, 3);
  g_assert_nonnull (strstr (s->report, "kernels 5 -> 3"));
}

/* A chain whose last value has a declared static shape while its inputs'
 * shapes are unknown (ONNX's expanded HannWindow: Range of a computed
 * length, then Cast to the output, declared f32[10]). Fused, the body could
 * not know that shape: fuse-loops leaves the chain unfused and says so,
 * instead of failing the pipeline. */
static void
test_left_unfused (void)
{
  const char *path = "/usr/share/libonnx-testdata/data/node/test_hannwindow_expanded/model.onnx";
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_test_skip ("libonnx-testdata is not installed");
      return;
    }
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_graph_load (path, &error);
  g_assert_no_error (error);
  g_autoptr (PlHistory) h = run_checked (g, "fuse-loops", NULL);
  PlStep *s = pl_history_step (h, 1);
  g_assert_nonnull (strstr (s->report, "left unfused, from '"));
  g_assert_nonnull (strstr (s->report, "would lose its type"));
  g_assert_cmpint (count_op (s->graph, PL_OP_Fusion), ==, 0);
  g_assert_cmpuint (s->graph->nodes->len, ==, g->nodes->len);
  g_assert_false (s->changed);
}

static const char layer_norm_text[] =
  "graph ln opset 17 {\n"
  "  input x: f32[4, 16]\n"
  "  const two: f32[] = 2.0\n"
  "  const eps: f32[] = 1e-05\n"
  "  const gamma: f32[16] = random(seed=1)\n"
  "  const beta: f32[16] = random(seed=2)\n"
  "  mean = ReduceMean(x) {axes=[-1], keepdims=1}\n"
  "  d = Sub(x, mean)\n"
  "  d2 = Pow(d, two)\n"
  "  var = ReduceMean(d2) {axes=[-1], keepdims=1}\n"
  "  var_eps = Add(var, eps)\n"
  "  std = Sqrt(var_eps)\n"
  "  normalized = Div(d, std)\n"
  "  scaled = Mul(normalized, gamma)\n"
  "  out = Add(scaled, beta)\n"
  "  output out\n"
  "}\n";

static void
test_loops_layer_norm (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (layer_norm_text);
  g_autoptr (PlHistory) h = run_checked (g, "fuse-loops", NULL);
  PlGraph *out = last_graph (h);
  g_assert_cmpuint (out->nodes->len, ==, 2);
  /* mean sits inside the variance's input fusion (same rows); the
   * normalization after the variance is a loop fusion */
  assert_fusion (out, "var", "input", "mean,d,d2,var", "x", "d,var");
  assert_fusion (out, "out", "loop", "var_eps,std,normalized,scaled,out", "d,var", "out");
  /* the small constants went into the bodies */
  PlNode *in = fusion_producing (out, "var", "input");
  g_assert_nonnull (pl_graph_find_value (in->body, "two"));
  PlStep *s = pl_history_step (h, 1);
  g_assert_cmpint (pl_pass_report_get (s->counters, "input fusions"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (s->counters, "loop fusions"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (s->counters, "ops fused"), ==, 9);
  g_assert_cmpint (s->stats.kernels, ==, 2);
  assert_round_trip (out);

  /* without input fusion the reductions stay out */
  const char *params[] = { "fuse-loops.input_fusion=false", NULL };
  g_autoptr (PlHistory) h2 = run_checked (g, "fuse-loops", params);
  out = last_graph (h2);
  g_assert_cmpint (node (out, "mean")->op, ==, PL_OP_ReduceMean);
  g_assert_cmpint (node (out, "var")->op, ==, PL_OP_ReduceMean);
  assert_fusion (out, "d2", "loop", "d,d2", "x,mean", "d,d2");
  assert_fusion (out, "out", "loop", "var_eps,std,normalized,scaled,out", "d,var", "out");
}

static void
test_loops_softmax (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph sm opset 17 {\n"
                                 "  input x: f32[3, 10]\n"
                                 "  m = ReduceMax(x) {axes=[1], keepdims=1}\n"
                                 "  s = Sub(x, m)\n"
                                 "  e = Exp(s)\n"
                                 "  z = ReduceSum(e) {axes=[1], keepdims=1}\n"
                                 "  y = Div(e, z)\n"
                                 "  output y\n"
                                 "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "fuse-loops", NULL);
  PlGraph *out = last_graph (h);
  assert_fusion (out, "z", "input", "m,s,e,z", "x", "e,z");
  g_assert_cmpint (node (out, "y")->op, ==, PL_OP_Div);   /* alone: not fused */

  /* a reduction over other rows does not join */
  g_autoptr (PlGraph) g2 = pl_test_parse ("graph t opset 17 {\n"
                                  "  input x: f32[3, 10]\n"
                                  "  m = ReduceMax(x) {axes=[0], keepdims=1}\n"
                                  "  s = Sub(x, m)\n"
                                  "  e = Exp(s)\n"
                                  "  z = ReduceSum(e) {axes=[1], keepdims=1}\n"
                                  "  output z\n"
                                  "}\n");
  g_autoptr (PlHistory) h2 = run_checked (g2, "fuse-loops", NULL);
  out = last_graph (h2);
  assert_fusion (out, "z", "input", "s,e,z", "x,m", "z");
  g_assert_cmpint (node (out, "m")->op, ==, PL_OP_ReduceMax);

  /* Softmax itself may end an input fusion */
  g_autoptr (PlGraph) g3 = pl_test_parse ("graph t opset 17 {\n"
                                  "  input x: f32[3, 10]\n"
                                  "  const k: f32[] = 0.5\n"
                                  "  s = Mul(x, k)\n"
                                  "  p = Softmax(s) {axis=-1}\n"
                                  "  output p\n"
                                  "}\n");
  g_autoptr (PlHistory) h3 = run_checked (g3, "fuse-loops", NULL);
  assert_fusion (last_graph (h3), "p", "input", "s,p", "x", "p");
}

static void
test_loops_siblings (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t {\n"
                                 "  input x: f32[4, 8]\n"
                                 "  input w: f32[8, 8]\n"
                                 "  m = MatMul(x, w)\n"
                                 "  r = Relu(m)\n"
                                 "  s = Sigmoid(m)\n"
                                 "  q = Neg(x)\n"
                                 "  t = Tanh(x)\n"
                                 "  k = ReduceSum(x) {axes=[1], keepdims=1}\n"
                                 "  output r, s, q, t, k\n"
                                 "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "fuse-loops", NULL);
  PlGraph *out = last_graph (h);
  /* two readers of the MatMul's result, two of x with x's shape */
  assert_fusion (out, "r", "loop", "r,s", "m", "r,s");
  assert_fusion (out, "q", "loop", "q,t", "x", "q,t");
  g_assert_cmpint (node (out, "k")->op, ==, PL_OP_ReduceSum);  /* another shape */
  g_assert_cmpint (count_op (out, PL_OP_Fusion), ==, 2);
}

static void
test_loops_max_ops (void)
{
  GString *text = g_string_new ("graph chain {\n  input x: f32[5]\n  n0 = Neg(x)\n");
  for (int i = 1; i < 10; i++)
    g_string_append_printf (text, "  n%d = %s(n%d)\n", i, i % 2 ? "Tanh" : "Neg", i - 1);
  g_string_append (text, "  output n9\n}\n");
  g_autoptr (PlGraph) g = pl_test_parse (text->str);
  g_string_free (text, TRUE);

  const char *params[] = { "fuse-loops.max_ops=4", NULL };
  g_autoptr (PlHistory) h = run_checked (g, "fuse-loops", params);
  PlGraph *out = last_graph (h);
  g_assert_cmpint (count_op (out, PL_OP_Fusion), ==, 3);
  assert_fusion (out, "n9", "loop", "n6,n7,n8,n9", "n5", "n9");
  assert_fusion (out, "n5", "loop", "n2,n3,n4,n5", "n1", "n5");
  assert_fusion (out, "n1", "loop", "n0,n1", "x", "n1");

  g_autoptr (PlHistory) h2 = run_checked (g, "fuse-loops", NULL);
  g_assert_cmpint (count_op (last_graph (h2), PL_OP_Fusion), ==, 1);
  g_assert_cmpuint (last_graph (h2)->nodes->len, ==, 1);
}

static void
test_loops_index_functions (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t opset 17 {\n"
                                 "  input x: f32[2, 12]\n"
                                 "  input y: f32[2, 3, 4]\n"
                                 "  const shape: i64[3] = [2, 3, 4]\n"
                                 "  const axes: i64[1] = [0]\n"
                                 "  const big: i64[3] = [2, 3, 4]\n"
                                 "  r = Reshape(x, shape)\n"
                                 "  t = Transpose(r) {perm=[0, 2, 1]}\n"
                                 "  a = Relu(t)\n"
                                 "  u = Unsqueeze(a, axes)\n"
                                 "  e = Expand(y, big)\n"
                                 "  s = Shape(y)\n"
                                 "  r2: f32[2, 3, 4] = Reshape(x, s)\n"
                                 "  b = Add(r2, e)\n"
                                 "  output u, b\n"
                                 "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "fuse-loops", NULL);
  PlGraph *out = last_graph (h);
  assert_fusion (out, "u", "loop", "r,t,a,u", "x", "u");
  /* Expand with a constant shape folds in; a Reshape whose shape is computed does not */
  assert_fusion (out, "b", "loop", "e,b", "r2,y", "b");
  g_assert_cmpint (node (out, "r2")->op, ==, PL_OP_Reshape);
  g_assert_cmpint (pl_history_step (h, 1)->stats.reshape_bytes, ==, 2 * 12 * 4);
}

static void
test_loops_never (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t opset 17 {\n"
                                 "  input x: f32[2, 6]\n"
                                 "  input w: f32[6, 6]\n"
                                 "  const shape: i64[3] = [2, 2, 3]\n"
                                 "  const axes: i64[1] = [0]\n"
                                 "  m = MatMul(x, w)\n"
                                 "  r = Relu(m)\n"
                                 "  v = Reshape(x, shape)\n"
                                 "  q = Unsqueeze(v, axes)\n"
                                 "  output r, q\n"
                                 "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "fuse-loops", NULL);
  /* MatMul never loop-fuses, a single op alone gains nothing, and views
   * alone launch no kernel to save */
  g_assert_false (pl_history_step (h, 1)->changed);
  g_assert_cmpint (count_op (last_graph (h), PL_OP_Fusion), ==, 0);

  /* fusion nodes are left alone: library fusions stay, the bias add behind
   * one is not pulled out of it */
  g_autoptr (PlGraph) g2 = pl_test_parse ("graph t opset 17 {\n"
                                  "  input x: f32[2, 6]\n"
                                  "  input w: f32[6, 6]\n"
                                  "  const b: f32[6] = random(seed=3)\n"
                                  "  m = MatMul(x, w)\n"
                                  "  y = Add(m, b)\n"
                                  "  z = Tanh(y)\n"
                                  "  q = Neg(z)\n"
                                  "  output q\n"
                                  "}\n");
  g_autoptr (PlHistory) h2 = run_checked (g2, "fuse-library,fuse-loops", NULL);
  PlGraph *out = last_graph (h2);
  PlNode *lib = fusion_producing (out, "z", "output");
  g_assert_cmpstr (pl_node_attr_string (lib, "library", NULL), ==, "gemm");
  g_autofree char *b = body_nodes (lib);
  g_assert_cmpstr (b, ==, "m,y,z");
  g_assert_cmpint (node (out, "q")->op, ==, PL_OP_Neg);
}

/* Kernels of the largest memory-bound region: the graph cut at
 * compute-intensive nodes (MatMul, Gemm, Conv, ..., and library/output
 * fusions); each connected piece of the rest is a region. */
static int
max_region_kernels (const PlGraph *g)
{
  g_autoptr (GHashTable) parent = g_hash_table_new (NULL, NULL);
  g_autoptr (GHashTable) kernels = g_hash_table_new (NULL, NULL);
#define COMPUTE(n) (pl_op_info ((n)->op)->category == PL_CAT_COMPUTE || \
                    ((n)->op == PL_OP_Fusion && (g_str_equal (pl_node_attr_string ((n), "kind", ""), "output") || \
                                                 g_str_equal (pl_node_attr_string ((n), "kind", ""), "library"))))
  for (guint i = 0; i < g->nodes->len; i++)
    g_hash_table_insert (parent, g->nodes->pdata[i], g->nodes->pdata[i]);
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *n = g->nodes->pdata[i];
      if (COMPUTE (n))
        continue;
      for (int k = 0; k < n->n_inputs; k++)
        {
          PlNode *p = n->inputs[k] ? n->inputs[k]->producer : NULL;
          if (!p || COMPUTE (p))
            continue;
          PlNode *ra = n, *rb = p;
          while (g_hash_table_lookup (parent, ra) != ra)
            ra = g_hash_table_lookup (parent, ra);
          while (g_hash_table_lookup (parent, rb) != rb)
            rb = g_hash_table_lookup (parent, rb);
          g_hash_table_insert (parent, ra, rb);
        }
    }
  int worst = 0;
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *n = g->nodes->pdata[i];
      if (COMPUTE (n) || pl_node_is_metadata_only (n))
        continue;
      PlNode *r = n;
      while (g_hash_table_lookup (parent, r) != r)
        r = g_hash_table_lookup (parent, r);
      int k = GPOINTER_TO_INT (g_hash_table_lookup (kernels, r)) + 1;
      g_hash_table_insert (kernels, r, GINT_TO_POINTER (k));
      worst = MAX (worst, k);
    }
#undef COMPUTE
  return worst;
}

static void
test_loops_samples (void)
{
  static const char *const samples[] = { "data/graphs/layer_norm.graph", "data/graphs/gelu_mlp.graph" };
  for (guint i = 0; i < G_N_ELEMENTS (samples); i++)
    {
      g_autofree char *path = pl_test_source_path (samples[i]);
      if (!g_file_test (path, G_FILE_TEST_EXISTS))
        {
          g_test_message ("%s is missing; skipped", samples[i]);
          continue;
        }
      g_autoptr (PlGraph) g = load_graph (samples[i]);
      int before = max_region_kernels (g);
      const char *spec = pl_pass_find ("decompose") ? "decompose,fuse-loops" : "fuse-loops";
      g_autoptr (PlHistory) h = run_checked (g, spec, NULL);
      PlGraph *out = last_graph (h);
      int after = max_region_kernels (out);
      g_test_message ("%s: largest memory-bound region %d -> %d kernels", samples[i], before, after);
      g_assert_cmpint (after, <=, 2);
      g_assert_cmpint (after, <, before);
      PlGraphStats st;
      pl_graph_stats (out, 1, &st);
      g_assert_cmpint (st.kernels, ==, pl_history_step (h, pl_history_n_steps (h) - 1)->stats.kernels);
    }
}

/* --- fuse-library ------------------------------------------------------------------ */

static void
test_library_gemm (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t opset 17 {\n"
                                 "  input a: f32[2, 8, 4]\n"
                                 "  input b: f32[2, 8, 5]\n"
                                 "  input c: f32[6, 5]\n"
                                 "  input d: f32[6, 3]\n"
                                 "  input e: f32[3, 4]\n"
                                 "  at = Transpose(a) {perm=[0, 2, 1]}\n"
                                 "  mm = MatMul(at, b)\n"
                                 "  ct = Transpose(c)\n"
                                 "  mm2 = MatMul(b, ct)\n"
                                 "  dt = Transpose(d)\n"
                                 "  gm = Gemm(dt, e) {transA=1, alpha=0.5}\n"
                                 "  bad = Transpose(b) {perm=[1, 0, 2]}\n"
                                 "  mm3 = MatMul(d, e)\n"
                                 "  output mm, mm2, gm, bad, mm3\n"
                                 "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "fuse-library", NULL);
  PlGraph *out = last_graph (h);
  /* the body keeps the Transpose, the flag says the library transposes */
  assert_fusion (out, "mm", "library", "at,mm", "a,b", "mm");
  PlNode *f = fusion_producing (out, "mm", "library");
  g_assert_cmpstr (pl_node_attr_string (f, "library", NULL), ==, "gemm");
  g_assert_cmpint (pl_node_attr_int (f, "transA", -1), ==, 1);
  g_assert_cmpint (pl_node_attr_int (f, "transB", -1), ==, 0);
  g_assert_cmpfloat (pl_node_attr_float (f, "alpha", 0), ==, 1.0);
  g_assert_cmpfloat (pl_node_attr_float (f, "beta", -1), ==, 0.0);
  g_assert_null (pl_node_attr (f, "epilogue"));

  /* operands in the library's order even when only B is transposed */
  assert_fusion (out, "mm2", "library", "ct,mm2", "b,c", "mm2");
  f = fusion_producing (out, "mm2", "library");
  g_assert_cmpint (pl_node_attr_int (f, "transA", -1), ==, 0);
  g_assert_cmpint (pl_node_attr_int (f, "transB", -1), ==, 1);

  /* Gemm's own transA=1 and the Transpose cancel */
  assert_fusion (out, "gm", "library", "dt,gm", "d,e", "gm");
  f = fusion_producing (out, "gm", "library");
  g_assert_cmpint (pl_node_attr_int (f, "transA", -1), ==, 0);
  g_assert_cmpfloat (pl_node_attr_float (f, "alpha", 0), ==, 0.5);

  /* not the last two dims; no transpose at all: left alone */
  g_assert_cmpint (node (out, "bad")->op, ==, PL_OP_Transpose);
  g_assert_cmpint (node (out, "mm3")->op, ==, PL_OP_MatMul);
  g_assert_cmpint (pl_pass_report_get (pl_history_step (h, 1)->counters, "gemm"), ==, 3);
}

static void
test_library_epilogue (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph t opset 17 {\n"
                                 "  input x: f32[2, 4, 16]\n"
                                 "  input img: f32[1, 3, 6, 6]\n"
                                 "  const w: f32[16, 5] = random(seed=1)\n"
                                 "  const bias: f32[5] = random(seed=2)\n"
                                 "  const full: f32[4, 5] = random(seed=3)\n"
                                 "  const k: f32[4, 3, 3, 3] = random(seed=4)\n"
                                 "  const cb: f32[4, 1, 1] = random(seed=5)\n"
                                 "  const lo: f32[] = -0.25\n"
                                 "  const hi: f32[] = 0.25\n"
                                 "  h = MatMul(x, w)\n"
                                 "  hb = Add(h, bias)\n"
                                 "  hr = Relu(hb)\n"
                                 "  hs = Neg(hr)\n"
                                 "  g = MatMul(x, w)\n"
                                 "  gf = Add(full, g)\n"
                                 "  two = MatMul(x, w)\n"
                                 "  two_a = Tanh(two)\n"
                                 "  two_b = Sigmoid(two)\n"
                                 "  c = Conv(img, k) {strides=[2, 2], pads=[1, 1, 1, 1]}\n"
                                 "  cbias = Add(cb, c)\n"
                                 "  cclip = Clip(cbias, lo, hi)\n"
                                 "  output hs, gf, two_a, two_b, cclip\n"
                                 "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "fuse-library", NULL);
  PlGraph *out = last_graph (h);

  /* MatMul + bias + Relu: an output fusion; the Neg after is no epilogue op.
   * The weight (80 elements) stays outside, the small bias goes into the body. */
  assert_fusion (out, "hr", "output", "h,hb,hr", "x,w", "hr");
  PlNode *f = fusion_producing (out, "hr", "output");
  g_assert_cmpstr (pl_node_attr_string (f, "library", NULL), ==, "gemm");
  const PlAttr *ep = pl_node_attr (f, "epilogue");
  g_assert_nonnull (ep);
  g_assert_cmpint (ep->type, ==, PL_ATTR_STRINGS);
  g_assert_cmpint (ep->strings.n, ==, 2);
  g_assert_cmpstr (ep->strings.v[0], ==, "bias");
  g_assert_cmpstr (ep->strings.v[1], ==, "relu");
  g_assert_cmpint (node (out, "hs")->op, ==, PL_OP_Neg);

  /* adding a full matrix is no bias; a result read twice takes no epilogue */
  g_assert_cmpint (node (out, "g")->op, ==, PL_OP_MatMul);
  g_assert_cmpint (node (out, "gf")->op, ==, PL_OP_Add);
  g_assert_cmpint (node (out, "two")->op, ==, PL_OP_MatMul);

  /* Conv + per-channel bias (either operand order) + Clip with constant bounds */
  assert_fusion (out, "cclip", "output", "c,cbias,cclip", "img,k", "cclip");
  f = fusion_producing (out, "cclip", "output");
  g_assert_cmpstr (pl_node_attr_string (f, "library", NULL), ==, "conv");
  ep = pl_node_attr (f, "epilogue");
  g_assert_cmpint (ep->strings.n, ==, 2);
  g_assert_cmpstr (ep->strings.v[0], ==, "bias");
  g_assert_cmpstr (ep->strings.v[1], ==, "clip");
  const int64_t *v;
  int n;
  g_assert_true (pl_node_attr_ints (f, "strides", &v, &n));
  g_assert_cmpint (n, ==, 2);
  g_assert_cmpint (v[0], ==, 2);
  g_assert_true (pl_node_attr_ints (f, "pads", &v, &n));
  g_assert_cmpint (n, ==, 4);
  g_assert_cmpint (v[0], ==, 1);
  g_assert_true (pl_node_attr_ints (f, "kernel_shape", &v, &n));
  g_assert_cmpint (v[0], ==, 3);
  g_assert_cmpint (pl_node_attr_int (f, "group", 0), ==, 1);
  assert_round_trip (out);

  /* a transposed operand and an epilogue together */
  g_autoptr (PlGraph) g2 = pl_test_parse ("graph t opset 17 {\n"
                                  "  input a: f32[8, 4]\n"
                                  "  input b: f32[8, 5]\n"
                                  "  const bias: f32[1, 5] = random(seed=2)\n"
                                  "  at = Transpose(a)\n"
                                  "  m = MatMul(at, b)\n"
                                  "  mb = Add(m, bias)\n"
                                  "  y = Sigmoid(mb)\n"
                                  "  output y\n"
                                  "}\n");
  g_autoptr (PlHistory) h2 = run_checked (g2, "fuse-library", NULL);
  assert_fusion (last_graph (h2), "y", "output", "at,m,mb,y", "a,b", "y");
  f = fusion_producing (last_graph (h2), "y", "output");
  g_assert_cmpint (pl_node_attr_int (f, "transA", -1), ==, 1);
  ep = pl_node_attr (f, "epilogue");
  g_assert_cmpint (ep->strings.n, ==, 2);
  g_assert_cmpstr (ep->strings.v[1], ==, "sigmoid");
}

/* dW and dX of a 2-D convolution (dilation 1, group 1) straight from the
 * definition: y[n,co,oh,ow] = sum x[n,ci,oh*s-p+kh,ow*s-p+kw] * w[co,ci,kh,kw]. */
static void
conv_gradients (const PlTensor *x, const PlTensor *w, const PlTensor *dy, int s, int p, PlTensor *dw, PlTensor *dx)
{
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  int64_t CO = w->dims[0], K = w->dims[2], OH = dy->dims[2], OW = dy->dims[3];
  for (int64_t i = 0; i < dw->numel; i++)
    pl_tensor_set_f64 (dw, i, 0);
  for (int64_t i = 0; i < dx->numel; i++)
    pl_tensor_set_f64 (dx, i, 0);
  for (int64_t n = 0; n < N; n++)
    for (int64_t co = 0; co < CO; co++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++)
          {
            double g = pl_tensor_get_f64 (dy, ((n * CO + co) * OH + oh) * OW + ow);
            for (int64_t ci = 0; ci < C; ci++)
              for (int64_t kh = 0; kh < K; kh++)
                for (int64_t kw = 0; kw < K; kw++)
                  {
                    int64_t hh = oh * s - p + kh, ww = ow * s - p + kw;
                    if (hh < 0 || hh >= H || ww < 0 || ww >= W)
                      continue;
                    int64_t xi = ((n * C + ci) * H + hh) * W + ww, wi = ((co * C + ci) * K + kh) * K + kw;
                    pl_tensor_set_f64 (dw, wi, pl_tensor_get_f64 (dw, wi) + g * pl_tensor_get_f64 (x, xi));
                    pl_tensor_set_f64 (dx, xi, pl_tensor_get_f64 (dx, xi) + g * pl_tensor_get_f64 (w, wi));
                  }
          }
}

static void
assert_window (const PlNode *f, const char *library, const int64_t *strides, const int64_t *pads,
               const int64_t *dilations)
{
  g_assert_cmpstr (pl_node_attr_string (f, "library", NULL), ==, library);
  const int64_t *v;
  int n;
  g_assert_true (pl_node_attr_ints (f, "strides", &v, &n));
  g_assert_cmpint (n, ==, 2);
  g_assert_cmpint (v[0], ==, strides[0]);
  g_assert_cmpint (v[1], ==, strides[1]);
  g_assert_true (pl_node_attr_ints (f, "pads", &v, &n));
  g_assert_cmpint (n, ==, 4);
  for (int i = 0; i < 4; i++)
    g_assert_cmpint (v[i], ==, pads[i]);
  g_assert_true (pl_node_attr_ints (f, "dilations", &v, &n));
  g_assert_cmpint (v[0], ==, dilations[0]);
  g_assert_cmpint (v[1], ==, dilations[1]);
  g_assert_true (pl_node_attr_ints (f, "kernel_shape", &v, &n));
  g_assert_cmpint (n, ==, 2);
  g_assert_cmpint (v[0], ==, 3);
  g_assert_cmpint (pl_node_attr_int (f, "group", 0), ==, 1);
}

static void
test_library_conv_backward (void)
{
  g_autoptr (PlGraph) g = load_graph ("tests/data/graphs/conv_backward.graph");

  /* the patterns really are the gradients */
  g_autoptr (GError) error = NULL;
  PlTensor **in = pl_random_inputs (g, 5, 1, &error);
  g_assert_no_error (error);
  PlTensor **out = pl_interp_run (g, in, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (PlTensor) dw = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (4, 3, 3, 3), NULL);
  g_autoptr (PlTensor) dx = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (2, 3, 7, 7), NULL);
  g_autoptr (PlTensor) dw2 = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (4, 3, 3, 3), NULL);
  g_autoptr (PlTensor) dx2 = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (2, 3, 7, 7), NULL);
  conv_gradients (in[0], in[1], in[2], 2, 1, dw, dx);   /* outputs: y, dw, dx, y2, dx2, dx2_p */
  pl_test_assert_close (out[1], dw, 1e-4, 1e-5);
  pl_test_assert_close (out[2], dx, 1e-4, 1e-5);
  conv_gradients (in[0], in[1], in[3], 1, 1, dw2, dx2);
  pl_test_assert_close (out[4], dx2, 1e-4, 1e-5);
  pl_test_assert_close (out[5], dx2, 1e-4, 1e-5);
  pl_interp_free_outputs (out, (int) g->outputs->len);
  pl_interp_free_outputs (in, (int) g->inputs->len);

  g_autoptr (PlHistory) h = run_checked (g, "fuse-library", NULL);
  PlGraph *res = last_graph (h);
  g_assert_cmpint (count_op (res, PL_OP_Fusion), ==, 4);
  g_assert_cmpint (node (res, "y")->op, ==, PL_OP_Conv);    /* the forward convolutions stay */
  g_assert_cmpint (node (res, "y2")->op, ==, PL_OP_Conv);

  assert_fusion (res, "dw", "library", "x_t,dy_t,dw_t,dw", "x,dy", "dw");
  assert_window (fusion_producing (res, "dw", "library"), "conv_backward_filter", PL_DIMS (2, 2),
                 PL_DIMS (1, 1, 1, 1), PL_DIMS (1, 1));
  assert_fusion (res, "dx", "library", "dx", "dy,w", "dx");
  assert_window (fusion_producing (res, "dx", "library"), "conv_backward_input", PL_DIMS (2, 2),
                 PL_DIMS (1, 1, 1, 1), PL_DIMS (1, 1));
  assert_fusion (res, "dx2", "library", "w_t,w_tf,dx2", "dy2,w", "dx2");
  assert_window (fusion_producing (res, "dx2", "library"), "conv_backward_input", PL_DIMS (1, 1),
                 PL_DIMS (1, 1, 1, 1), PL_DIMS (1, 1));
  assert_fusion (res, "dx2_p", "library", "dy2_p,w_f,w_ft,dx2_p", "dy2,w", "dx2_p");
  assert_window (fusion_producing (res, "dx2_p", "library"), "conv_backward_input", PL_DIMS (1, 1),
                 PL_DIMS (1, 1, 1, 1), PL_DIMS (1, 1));
  PlStep *s = pl_history_step (h, 1);
  g_assert_cmpint (pl_pass_report_get (s->counters, "conv_backward_filter"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (s->counters, "conv_backward_input"), ==, 3);
  /* the flip constants moved into the bodies */
  g_assert_null (pl_graph_find_value (res, "flip_steps"));
  assert_round_trip (res);
}

/* The dW pattern fuses only when a forward convolution with the recorded
 * attributes really has dY's size. */
static void
test_library_conv_backward_mismatch (void)
{
  /* a 5x5 kernel and a 1x1 output: Conv(x [5x5], w [5x5]) is 1x1, it matches */
  g_autoptr (PlGraph) g = pl_test_parse ("graph t opset 17 {\n"
                                 "  input x: f32[1, 2, 5, 5]\n"
                                 "  input dy: f32[1, 3, 1, 1]\n"
                                 "  x_t = Transpose(x) {perm=[1, 0, 2, 3]}\n"
                                 "  dy_t = Transpose(dy) {perm=[1, 0, 2, 3]}\n"
                                 "  dw_t = Conv(x_t, dy_t)\n"
                                 "  dw = Transpose(dw_t) {perm=[1, 0, 2, 3]}\n"
                                 "  output dw\n"
                                 "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "fuse-library", NULL);
  assert_fusion (last_graph (h), "dw", "library", "x_t,dy_t,dw_t,dw", "x,dy", "dw");
  PlNode *f = fusion_producing (last_graph (h), "dw", "library");
  const int64_t *v;
  int n;
  g_assert_true (pl_node_attr_ints (f, "kernel_shape", &v, &n));
  g_assert_cmpint (v[0], ==, 5);

  /* inner stride 3 = forward dilation 3 with a 2x2 kernel: over 5 columns
   * that forward conv gives 2 outputs, not dY's 1 — no conv gradient */
  g_autoptr (PlGraph) g2 = pl_test_parse ("graph t opset 17 {\n"
                                  "  input x: f32[1, 2, 5, 5]\n"
                                  "  input dy: f32[1, 3, 1, 1]\n"
                                  "  x_t = Transpose(x) {perm=[1, 0, 2, 3]}\n"
                                  "  dy_t = Transpose(dy) {perm=[1, 0, 2, 3]}\n"
                                  "  dw_t: f32[2, 3, 2, 2] = Conv(x_t, dy_t) {strides=[3, 3]}\n"
                                  "  dw = Transpose(dw_t) {perm=[1, 0, 2, 3]}\n"
                                  "  output dw\n"
                                  "}\n");
  g_autoptr (PlHistory) h2 = run_checked (g2, "fuse-library", NULL);
  g_assert_cmpint (count_op (last_graph (h2), PL_OP_Fusion), ==, 0);

  /* the outer transpose must swap the first two axes */
  g_autoptr (PlGraph) g3 = pl_test_parse ("graph t opset 17 {\n"
                                  "  input x: f32[1, 2, 5, 5]\n"
                                  "  input dy: f32[1, 3, 1, 1]\n"
                                  "  x_t = Transpose(x) {perm=[1, 0, 2, 3]}\n"
                                  "  dy_t = Transpose(dy) {perm=[1, 0, 2, 3]}\n"
                                  "  dw_t = Conv(x_t, dy_t)\n"
                                  "  dw = Transpose(dw_t) {perm=[0, 1, 3, 2]}\n"
                                  "  output dw\n"
                                  "}\n");
  g_autoptr (PlHistory) h3 = run_checked (g3, "fuse-library", NULL);
  g_assert_cmpint (count_op (last_graph (h3), PL_OP_Fusion), ==, 0);
}

/* Many blocks (MatMul + bias + ReLU, a layer norm, views, a residual):
 * both passes, checked and verified, with the structure repeated per block. */
static void
test_many_blocks (void)
{
  int blocks = 120;
  GString *t = g_string_new ("graph big opset 17 {\n"
                             "  input x: f32[4, 16]\n"
                             "  const w: f32[16, 16] = random(seed=1, lo=-0.3, hi=0.3)\n"
                             "  const b: f32[16] = random(seed=2)\n"
                             "  const two: f32[] = 2.0\n"
                             "  const eps: f32[] = 1e-05\n"
                             "  const shp: i64[3] = [4, 4, 4]\n"
                             "  const shp2: i64[2] = [4, 16]\n");
  const char *cur = "x";
  g_autofree char *prev = NULL;
  for (int i = 0; i < blocks; i++)
    {
      g_string_append_printf (t,
                              "  b%1$d_mm = MatMul(%2$s, w)\n  b%1$d_h = Add(b%1$d_mm, b)\n  b%1$d_r = Relu(b%1$d_h)\n"
                              "  b%1$d_mean = ReduceMean(b%1$d_r) {axes=[-1], keepdims=1}\n"
                              "  b%1$d_d = Sub(b%1$d_r, b%1$d_mean)\n  b%1$d_d2 = Pow(b%1$d_d, two)\n"
                              "  b%1$d_var = ReduceMean(b%1$d_d2) {axes=[-1], keepdims=1}\n"
                              "  b%1$d_ve = Add(b%1$d_var, eps)\n  b%1$d_std = Sqrt(b%1$d_ve)\n"
                              "  b%1$d_n = Div(b%1$d_d, b%1$d_std)\n  b%1$d_rs = Reshape(b%1$d_n, shp)\n"
                              "  b%1$d_t = Transpose(b%1$d_rs) {perm=[0, 2, 1]}\n  b%1$d_rs2 = Reshape(b%1$d_t, shp2)\n"
                              "  b%1$d_res = Add(b%1$d_rs2, %2$s)\n",
                              i, cur);
      g_free (prev);
      prev = g_strdup_printf ("b%d_res", i);
      cur = prev;
    }
  g_string_append_printf (t, "  output %s\n}\n", cur);
  g_autoptr (PlGraph) g = pl_test_parse (t->str);
  g_string_free (t, TRUE);
  g_assert_cmpuint (g->nodes->len, ==, 14u * blocks);

  g_autoptr (PlHistory) h = run_checked (g, "fuse-library,fuse-loops", NULL);
  PlGraph *out = last_graph (h);
  /* per block: MatMul+bias+ReLU (library), mean..var (input), the rest (loop) */
  g_assert_cmpuint (out->nodes->len, ==, 3u * blocks);
  g_assert_cmpint (count_op (out, PL_OP_Fusion), ==, 3 * blocks);
  assert_fusion (out, "b7_r", "output", "b7_mm,b7_h,b7_r", "b6_res,w", "b7_r");
  assert_fusion (out, "b7_var", "input", "b7_mean,b7_d,b7_d2,b7_var", "b7_r", "b7_d,b7_var");
  assert_fusion (out, "b7_res", "loop", "b7_ve,b7_std,b7_n,b7_rs,b7_t,b7_rs2,b7_res", "b7_d,b7_var,b6_res", "b7_res");
  g_assert_cmpint (pl_history_step (h, 2)->stats.kernels, ==, 3 * blocks);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_passes_init ();
  g_test_add_func ("/Passlab/PassFusion/create", test_create);
  g_test_add_func ("/Passlab/PassFusion/create-errors", test_create_errors);
  g_test_add_func ("/Passlab/PassFusion/create-controls", test_create_controls);
  g_test_add_func ("/Passlab/PassFusion/would-cycle", test_would_cycle);
  g_test_add_func ("/Passlab/PassFusion/plan-cross-groups", test_plan_cross_groups);
  g_test_add_func ("/Passlab/PassFusion/plan-random", test_plan_random);
  g_test_add_func ("/Passlab/PassFusion/loops-diamond", test_loops_diamond);
  g_test_add_func ("/Passlab/PassFusion/loops-layer-norm", test_loops_layer_norm);
  g_test_add_func ("/Passlab/PassFusion/loops-softmax", test_loops_softmax);
  g_test_add_func ("/Passlab/PassFusion/loops-siblings", test_loops_siblings);
  g_test_add_func ("/Passlab/PassFusion/loops-max-ops", test_loops_max_ops);
  g_test_add_func ("/Passlab/PassFusion/loops-index-functions", test_loops_index_functions);
  g_test_add_func ("/Passlab/PassFusion/loops-never", test_loops_never);
  g_test_add_func ("/Passlab/PassFusion/loops-samples", test_loops_samples);
  g_test_add_func ("/Passlab/PassFusion/library-gemm", test_library_gemm);
  g_test_add_func ("/Passlab/PassFusion/library-epilogue", test_library_epilogue);
  g_test_add_func ("/Passlab/PassFusion/library-conv-backward", test_library_conv_backward);
  g_test_add_func ("/Passlab/PassFusion/library-conv-backward-mismatch", test_library_conv_backward_mismatch);
  g_test_add_func ("/Passlab/PassFusion/many-blocks", test_many_blocks);
  g_test_add_func ("/Passlab/PassFusion/left-unfused", test_left_unfused);
  return g_test_run ();
}
