/* test-layout-search.c — the layout search (passes/layout-search.h) against
 * brute force on random chains and DAGs with random costs. */
#include "layout-search.h"

#include <math.h>

#define N_RANDOM 300

typedef struct {
  PlLsProblem p;
  GArray     *nodes, *edges;
} Problem;

static void
problem_init (Problem *P)
{
  P->nodes = g_array_new (FALSE, TRUE, sizeof (PlLsNode));
  P->edges = g_array_new (FALSE, TRUE, sizeof (PlLsEdge));
}

static void
problem_clear (Problem *P)
{
  g_array_unref (P->nodes);
  g_array_unref (P->edges);
}

static const PlLsProblem *
problem_get (Problem *P)
{
  P->p.n_nodes = (int) P->nodes->len;
  P->p.nodes = (PlLsNode *) (void *) P->nodes->data;
  P->p.n_edges = (int) P->edges->len;
  P->p.edges = (PlLsEdge *) (void *) P->edges->data;
  return &P->p;
}

/* A node with 1..max_choices choices (a quarter fixed), costs in [0, 10). */
static void
add_node (Problem *P, GRand *r, int max_choices)
{
  PlLsNode n = { 0 };
  n.n_choices = g_rand_int_range (r, 0, 4) == 0 ? 1 : g_rand_int_range (r, 1, max_choices + 1);
  for (int c = 0; c < n.n_choices; c++)
    {
      n.choice_layout[c] = c % 3;
      n.cost[c] = g_rand_double_range (r, 0, 10);
    }
  g_array_append_val (P->nodes, n);
}

/* An edge whose transform is 0 when the layouts agree, else random. */
static void
add_edge (Problem *P, GRand *r, int from, int to)
{
  const PlLsNode *a = &g_array_index (P->nodes, PlLsNode, from), *b = &g_array_index (P->nodes, PlLsNode, to);
  PlLsEdge e = { .from = from, .to = to };
  for (int i = 0; i < a->n_choices; i++)
    for (int j = 0; j < b->n_choices; j++)
      e.transform[i][j] = a->choice_layout[i] == b->choice_layout[j] ? 0 : g_rand_double_range (r, 0, 6);
  g_array_append_val (P->edges, e);
}

static void
random_chain (Problem *P, GRand *r, int n)
{
  for (int i = 0; i < n; i++)
    add_node (P, r, 4);
  for (int i = 0; i + 1 < n; i++)
    if (g_rand_int_range (r, 0, 5) != 0)
      add_edge (P, r, i, i + 1);
}

/* Random forward edges plus residual diamonds (a -> b -> c -> d, a -> d). */
static void
random_dag (Problem *P, GRand *r, int n)
{
  for (int i = 0; i < n; i++)
    add_node (P, r, 4);
  for (int i = 0; i + 1 < n; i++)
    add_edge (P, r, i, i + 1);
  for (int a = 0; a + 3 < n; a += 3)
    if (g_rand_boolean (r))
      add_edge (P, r, a, a + 3);
  int extra = g_rand_int_range (r, 0, 4);
  for (int k = 0; k < extra && n > 2; k++)
    {
      int from = g_rand_int_range (r, 0, n - 1);
      int to = g_rand_int_range (r, from + 1, n);
      add_edge (P, r, from, to);
    }
}

static void
assert_optimal (const PlLsProblem *p, const PlLsSolution *s, const PlLsSolution *brute)
{
  g_assert_true (s->exact);
  g_assert_cmpfloat_with_epsilon (s->cost, brute->cost, 1e-9);
  g_assert_cmpfloat_with_epsilon (pl_ls_cost (p, s->choice), s->cost, 1e-9);
  for (int i = 0; i < p->n_nodes; i++)
    g_assert_true (s->choice[i] >= 0 && s->choice[i] < p->nodes[i].n_choices);
}

static void
test_chains_vs_brute_force (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (7);
  for (int t = 0; t < N_RANDOM; t++)
    {
      Problem P;
      problem_init (&P);
      random_chain (&P, r, g_rand_int_range (r, 1, 9));
      const PlLsProblem *p = problem_get (&P);
      PlLsSolution *brute = pl_ls_brute_force (p);
      PlLsSolution *s = pl_ls_solve (p, 0);
      g_assert_true (s->chain);
      g_assert_cmpint (s->method, ==, PL_LS_CHAIN_DP);
      int64_t sum = 0;
      for (int i = 0; i < p->n_nodes; i++)
        sum += p->nodes[i].n_choices;
      g_assert_cmpint (s->states, ==, sum);
      assert_optimal (p, s, brute);
      /* the DAG methods agree on chains too */
      PlLsSolution *bb = pl_ls_solve_with (p, PL_LS_BRANCH_BOUND, 0);
      PlLsSolution *fr = pl_ls_solve_with (p, PL_LS_FRONTIER_DP, 0);
      g_assert_cmpint (bb->method, ==, PL_LS_BRANCH_BOUND);
      g_assert_cmpint (fr->method, ==, PL_LS_FRONTIER_DP);
      assert_optimal (p, bb, brute);
      assert_optimal (p, fr, brute);
      pl_ls_solution_free (bb);
      pl_ls_solution_free (fr);
      pl_ls_solution_free (s);
      pl_ls_solution_free (brute);
      problem_clear (&P);
    }
}

static void
test_dags_vs_brute_force (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (11);
  for (int t = 0; t < N_RANDOM; t++)
    {
      Problem P;
      problem_init (&P);
      random_dag (&P, r, g_rand_int_range (r, 3, 9));
      const PlLsProblem *p = problem_get (&P);
      PlLsSolution *brute = pl_ls_brute_force (p);
      PlLsSolution *s = pl_ls_solve (p, 0);
      if (!pl_ls_is_chain (p))
        g_assert_cmpint (s->method, ==, PL_LS_FRONTIER_DP);
      assert_optimal (p, s, brute);
      PlLsSolution *bb = pl_ls_solve_with (p, PL_LS_BRANCH_BOUND, 0);
      g_assert_cmpint (bb->method, ==, PL_LS_BRANCH_BOUND);
      assert_optimal (p, bb, brute);
      pl_ls_solution_free (bb);
      pl_ls_solution_free (s);
      pl_ls_solution_free (brute);
      problem_clear (&P);
    }
}

/* A residual network: per block three nodes of up to 6 choices and an Add
 * that also reads the block's input. */
static void
residual_stack (Problem *P, GRand *r, int blocks)
{
  add_node (P, r, 1);
  for (int b = 0; b < blocks; b++)
    {
      int in = (int) P->nodes->len - 1;
      for (int k = 0; k < 3; k++)
        {
          add_node (P, r, 6);
          add_edge (P, r, (int) P->nodes->len - 2, (int) P->nodes->len - 1);
        }
      add_node (P, r, 3);   /* the Add */
      add_edge (P, r, (int) P->nodes->len - 2, (int) P->nodes->len - 1);
      add_edge (P, r, in, (int) P->nodes->len - 1);
    }
}

/* 40 blocks: too big for brute force; the frontier DP and branch and bound
 * agree, and the frontier stays small. */
static void
test_residual_stack (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (3);
  Problem P;
  problem_init (&P);
  residual_stack (&P, r, 40);
  const PlLsProblem *p = problem_get (&P);
  g_assert_false (pl_ls_is_chain (p));
  g_assert_cmpint (pl_ls_frontier_states (p), <=, 3 * 6 * 6);   /* block input, previous node, this node */
  PlLsSolution *fr = pl_ls_solve (p, 0);
  g_assert_cmpint (fr->method, ==, PL_LS_FRONTIER_DP);
  g_assert_true (fr->exact);
  PlLsSolution *bb = pl_ls_solve_with (p, PL_LS_BRANCH_BOUND, 0);
  g_assert_true (bb->exact);
  g_assert_cmpfloat_with_epsilon (bb->cost, fr->cost, 1e-9);
  g_test_message ("residual stack of %d nodes: frontier DP %" G_GINT64_FORMAT " states, branch and bound %"
                  G_GINT64_FORMAT " visits", p->n_nodes, fr->states, bb->states);
  pl_ls_solution_free (bb);
  pl_ls_solution_free (fr);
  problem_clear (&P);
}

/* A budget of a few visits: the best found (at least the greedy one) comes
 * back, not proved optimal. */
static void
test_budget (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (3);
  Problem P;
  problem_init (&P);
  residual_stack (&P, r, 40);
  const PlLsProblem *p = problem_get (&P);
  PlLsSolution *bb = pl_ls_solve_with (p, PL_LS_BRANCH_BOUND, 3);
  PlLsSolution *fr = pl_ls_solve (p, 0);
  g_assert_false (bb->exact);
  g_assert_cmpint (bb->states, <=, 3);
  g_assert_cmpfloat (bb->cost, >=, fr->cost - 1e-9);
  g_assert_cmpfloat_with_epsilon (pl_ls_cost (p, bb->choice), bb->cost, 1e-9);
  pl_ls_solution_free (bb);
  pl_ls_solution_free (fr);
  problem_clear (&P);
}

/* A wide frontier (many nodes all read by the last one) falls back to branch and bound. */
static void
test_wide_frontier_falls_back (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (9);
  Problem P;
  problem_init (&P);
  int n = 14;
  for (int i = 0; i < n; i++)
    {
      PlLsNode nd = { .n_choices = 3 };
      for (int c = 0; c < 3; c++)
        {
          nd.choice_layout[c] = c;
          nd.cost[c] = g_rand_double_range (r, 0, 10);
        }
      g_array_append_val (P.nodes, nd);
    }
  for (int i = 0; i + 1 < n; i++)
    add_edge (&P, r, i, n - 1);
  const PlLsProblem *p = problem_get (&P);
  g_assert_cmpint (pl_ls_frontier_states (p), >, PL_LS_FRONTIER_MAX_STATES);
  PlLsSolution *s = pl_ls_solve (p, 0);
  g_assert_cmpint (s->method, ==, PL_LS_BRANCH_BOUND);
  g_assert_cmpstr (pl_ls_method_name (s->method), ==, "branch and bound");
  PlLsSolution *brute = pl_ls_brute_force (p);
  assert_optimal (p, s, brute);
  pl_ls_solution_free (brute);
  pl_ls_solution_free (s);
  problem_clear (&P);
}

static void
test_empty (void)
{
  PlLsProblem p = { 0 };
  PlLsSolution *s = pl_ls_solve (&p, 0);
  g_assert_cmpfloat (s->cost, ==, 0);
  g_assert_true (s->exact);
  pl_ls_solution_free (s);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/Passlab/LayoutSearch/chains", test_chains_vs_brute_force);
  g_test_add_func ("/Passlab/LayoutSearch/dags", test_dags_vs_brute_force);
  g_test_add_func ("/Passlab/LayoutSearch/residual-stack", test_residual_stack);
  g_test_add_func ("/Passlab/LayoutSearch/budget", test_budget);
  g_test_add_func ("/Passlab/LayoutSearch/wide-frontier", test_wide_frontier_falls_back);
  g_test_add_func ("/Passlab/LayoutSearch/empty", test_empty);
  return g_test_run ();
}
