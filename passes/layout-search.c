/* layout-search.c — choosing one layout per op (seed 003, MACO §2: global
 * layout selection with pruning and backtracking; DESIGN.md §1.4).
 *
 * The problem (layout-search.h) is a graph whose nodes pick one of a few
 * choices, each with an op cost, and whose edges cost a transform when the
 * two ends' choices disagree. Minimizing the sum is NP-hard on general
 * graphs, but the graphs of CNNs are nearly chains, and three methods cover
 * them:
 *
 *   chain DP      every edge goes i -> i+1: Viterbi. best[i][c] is the
 *                 cheapest prefix ending with node i in choice c. Exact,
 *                 O(sum of choices^2).
 *   frontier DP   a DAG whose "frontier" stays small. Walking the nodes in
 *                 topological order, the frontier after node i is the set
 *                 of visited nodes that still have an edge to an unvisited
 *                 node; the cost of the rest depends on the visited part only
 *                 through the frontier's choices, so one DP entry per
 *                 assignment of the frontier is exact (the same idea as DP
 *                 over a path decomposition). A ResNet's frontier is the
 *                 block input plus the current node, so the steps hold tens
 *                 of states. It runs when no step holds more than
 *                 PL_LS_FRONTIER_MAX_STATES.
 *   branch and    depth-first over the topological order with backtracking,
 *   bound         most promising choice first; a branch is cut when cost so
 *                 far + a lower bound of the rest cannot beat the best found.
 *                 The bound relaxes the problem to its chain (edges i -> i+1
 *                 exact, every other edge at its cheapest transform, solved
 *                 backwards by Viterbi once): at least the cheapest op cost of
 *                 every remaining node plus the cheapest transform of every
 *                 remaining edge, and much tighter on near-chains. The first
 *                 upper bound comes from a greedy assignment. A visit budget
 *                 keeps it bounded: when it runs out the best found is
 *                 returned with exact = false.
 */
#define G_LOG_DOMAIN "passlab"
#include "layout-search.h"

#include <math.h>
#include <string.h>

#define DEFAULT_MAX_VISITS 10000000
/* Entries the frontier DP may keep over all steps (back pointers). */
#define FRONTIER_MAX_TOTAL 10000000

static PlLsSolution *
solution_new (const PlLsProblem *p, PlLsMethod method)
{
  PlLsSolution *s = g_new0 (PlLsSolution, 1);
  s->choice = g_new0 (int, MAX (p->n_nodes, 1));
  s->method = method;
  s->exact = true;
  return s;
}

void
pl_ls_solution_free (PlLsSolution *s)
{
  if (!s)
    return;
  g_free (s->choice);
  g_free (s);
}

const char *
pl_ls_method_name (PlLsMethod method)
{
  switch (method)
    {
    case PL_LS_AUTO: return "auto";
    case PL_LS_CHAIN_DP: return "chain DP";
    case PL_LS_FRONTIER_DP: return "frontier DP";
    case PL_LS_BRANCH_BOUND: return "branch and bound";
    case PL_LS_BRUTE_FORCE: return "brute force";
    }
  return "?";
}

double
pl_ls_cost (const PlLsProblem *p, const int *choice)
{
  double total = 0;
  for (int i = 0; i < p->n_nodes; i++)
    total += p->nodes[i].cost[choice[i]];
  for (int e = 0; e < p->n_edges; e++)
    total += p->edges[e].transform[choice[p->edges[e].from]][choice[p->edges[e].to]];
  return total;
}

bool
pl_ls_is_chain (const PlLsProblem *p)
{
  for (int e = 0; e < p->n_edges; e++)
    if (p->edges[e].to != p->edges[e].from + 1)
      return false;
  return true;
}

/* Edges into each node: in[i] holds edge indices (to == i). g_ptr_array of GArray. */
static GArray **
in_edges (const PlLsProblem *p)
{
  GArray **in = g_new (GArray *, MAX (p->n_nodes, 1));
  for (int i = 0; i < p->n_nodes; i++)
    in[i] = g_array_new (FALSE, FALSE, sizeof (int));
  for (int e = 0; e < p->n_edges; e++)
    g_array_append_val (in[p->edges[e].to], e);
  return in;
}

static void
in_edges_free (const PlLsProblem *p, GArray **in)
{
  for (int i = 0; i < p->n_nodes; i++)
    g_array_unref (in[i]);
  g_free (in);
}

/* --- chain DP ------------------------------------------------------------------------ */

static PlLsSolution *
solve_chain (const PlLsProblem *p)
{
  PlLsSolution *s = solution_new (p, PL_LS_CHAIN_DP);
  s->chain = true;
  if (p->n_nodes == 0)
    return s;
  g_autofree double *best = g_new (double, (gsize) p->n_nodes * PL_LS_MAX_CHOICES);
  g_autofree int *back = g_new0 (int, (gsize) p->n_nodes * PL_LS_MAX_CHOICES);
  GArray **in = in_edges (p);
  for (int i = 0; i < p->n_nodes; i++)
    {
      const PlLsNode *nd = &p->nodes[i];
      s->states += nd->n_choices;
      for (int c = 0; c < nd->n_choices; c++)
        {
          double here = INFINITY;
          int arg = 0;
          if (i == 0)
            here = 0;
          for (int a = 0; i > 0 && a < p->nodes[i - 1].n_choices; a++)
            {
              double v = best[(i - 1) * PL_LS_MAX_CHOICES + a];
              for (guint k = 0; k < in[i]->len; k++)
                v += p->edges[g_array_index (in[i], int, k)].transform[a][c];
              if (v < here)
                here = v, arg = a;
            }
          best[i * PL_LS_MAX_CHOICES + c] = here + nd->cost[c];
          back[i * PL_LS_MAX_CHOICES + c] = arg;
        }
    }
  in_edges_free (p, in);
  int last = p->n_nodes - 1, c = 0;
  for (int k = 1; k < p->nodes[last].n_choices; k++)
    if (best[last * PL_LS_MAX_CHOICES + k] < best[last * PL_LS_MAX_CHOICES + c])
      c = k;
  for (int i = last; i >= 0; i--)
    {
      s->choice[i] = c;
      c = back[i * PL_LS_MAX_CHOICES + c];
    }
  s->cost = pl_ls_cost (p, s->choice);
  return s;
}

/* --- frontier DP --------------------------------------------------------------------- */

/* last_out[j]: the largest `to` of j's out-edges (-1: none). */
static int *
last_out_edges (const PlLsProblem *p)
{
  int *last = g_new (int, MAX (p->n_nodes, 1));
  for (int i = 0; i < p->n_nodes; i++)
    last[i] = -1;
  for (int e = 0; e < p->n_edges; e++)
    last[p->edges[e].from] = MAX (last[p->edges[e].from], p->edges[e].to);
  return last;
}

/* Walks the frontier without solving: returns the largest step (states of
 * the frontier before node i x node i's choices), saturating, and the
 * entries the DP would keep over all steps in *total. */
static int64_t
frontier_sizes (const PlLsProblem *p, int64_t *total)
{
  g_autofree int *last = last_out_edges (p);
  int64_t states = 1, most = 1;
  *total = 0;
  g_autoptr (GArray) front = g_array_new (FALSE, FALSE, sizeof (int));
  for (int i = 0; i < p->n_nodes; i++)
    {
      int64_t step = states > G_MAXINT64 / PL_LS_MAX_CHOICES ? G_MAXINT64 : states * p->nodes[i].n_choices;
      most = MAX (most, step);
      g_array_append_val (front, i);
      states = 1;
      for (guint k = 0; k < front->len;)
        {
          int j = g_array_index (front, int, k);
          if (last[j] <= i)
            g_array_remove_index (front, k);
          else
            {
              states = states > G_MAXINT64 / PL_LS_MAX_CHOICES ? G_MAXINT64 : states * p->nodes[j].n_choices;
              k++;
            }
        }
      *total = *total > G_MAXINT64 - states ? G_MAXINT64 : *total + states;
    }
  return most;
}

int64_t
pl_ls_frontier_states (const PlLsProblem *p)
{
  int64_t total;
  return frontier_sizes (p, &total);
}

typedef struct {
  int64_t *parent;   /* state index in the previous step */
  guint8  *choice;   /* this step's node's choice */
} FrontierStep;

static PlLsSolution *
solve_frontier (const PlLsProblem *p)
{
  PlLsSolution *s = solution_new (p, PL_LS_FRONTIER_DP);
  if (p->n_nodes == 0)
    return s;
  g_autofree int *last = last_out_edges (p);
  GArray **in = in_edges (p);
  g_autofree FrontierStep *steps = g_new0 (FrontierStep, p->n_nodes);
  /* the frontier: node ids, and where each node sits in it (-1: not there) */
  g_autofree int *front = g_new (int, p->n_nodes), *pos = g_new (int, p->n_nodes);
  g_autofree int *next_front = g_new (int, p->n_nodes);
  g_autofree int64_t *stride = g_new (int64_t, p->n_nodes + 1);
  int n_front = 0;
  for (int i = 0; i < p->n_nodes; i++)
    pos[i] = -1;
  g_autofree double *cost = g_new (double, 1);
  cost[0] = 0;
  int64_t n_states = 1;
  g_autofree int *digit = g_new (int, p->n_nodes + 1);

  for (int i = 0; i < p->n_nodes; i++)
    {
      const PlLsNode *nd = &p->nodes[i];
      /* the next frontier: kept nodes of this one, then i if it has later uses */
      int n_next = 0;
      for (int k = 0; k < n_front; k++)
        if (last[front[k]] > i)
          next_front[n_next++] = front[k];
      if (last[i] > i)
        next_front[n_next++] = i;
      int64_t next_states = 1;
      for (int k = n_next - 1; k >= 0; k--)
        {
          stride[k] = next_states;
          next_states *= p->nodes[next_front[k]].n_choices;
        }
      double *next_cost = g_new (double, next_states);
      for (int64_t t = 0; t < next_states; t++)
        next_cost[t] = INFINITY;
      steps[i].parent = g_new0 (int64_t, next_states);
      steps[i].choice = g_new0 (guint8, next_states);
      /* stride of each next-frontier node, by node id, for the projection */
      g_autofree int64_t *next_stride_of = g_new0 (int64_t, n_front + 1);
      int64_t stride_i = 0;
      for (int k = 0; k < n_next; k++)
        {
          if (next_front[k] == i)
            stride_i = stride[k];
          else
            next_stride_of[pos[next_front[k]]] = stride[k];
        }
      for (int64_t st = 0; st < n_states; st++)
        {
          if (cost[st] == INFINITY)
            continue;
          int64_t rest = st, base = 0;
          for (int k = n_front - 1; k >= 0; k--)
            {
              int radix = p->nodes[front[k]].n_choices;
              digit[k] = (int) (rest % radix);
              rest /= radix;
              base += digit[k] * next_stride_of[k];
            }
          for (int c = 0; c < nd->n_choices; c++)
            {
              double v = cost[st] + nd->cost[c];
              for (guint k = 0; k < in[i]->len; k++)
                {
                  const PlLsEdge *e = &p->edges[g_array_index (in[i], int, k)];
                  v += e->transform[digit[pos[e->from]]][c];
                }
              int64_t t = base + c * stride_i;
              s->states++;
              if (v < next_cost[t])
                {
                  next_cost[t] = v;
                  steps[i].parent[t] = st;
                  steps[i].choice[t] = (guint8) c;
                }
            }
        }
      for (int k = 0; k < n_front; k++)
        pos[front[k]] = -1;
      memcpy (front, next_front, sizeof (int) * n_next);
      n_front = n_next;
      for (int k = 0; k < n_front; k++)
        pos[front[k]] = k;
      g_free (cost);
      cost = next_cost;
      n_states = next_states;
    }
  /* every edge has ended: one state left */
  g_assert (n_states == 1);
  int64_t st = 0;
  for (int i = p->n_nodes - 1; i >= 0; i--)
    {
      s->choice[i] = steps[i].choice[st];
      st = steps[i].parent[st];
    }
  for (int i = 0; i < p->n_nodes; i++)
    {
      g_free (steps[i].parent);
      g_free (steps[i].choice);
    }
  in_edges_free (p, in);
  s->cost = pl_ls_cost (p, s->choice);
  return s;
}

/* --- branch and bound ---------------------------------------------------------------- */

typedef struct {
  const PlLsProblem *p;
  GArray   **in;
  double    *tail;        /* [i * MAX + c]: lower bound of the nodes after i when i takes c */
  int       *assign;
} Search;

/* Cost node i adds in choice c, given the choices of the nodes before it. */
static double
increment (const Search *S, int i, int c)
{
  double v = S->p->nodes[i].cost[c];
  for (guint k = 0; k < S->in[i]->len; k++)
    {
      const PlLsEdge *e = &S->p->edges[g_array_index (S->in[i], int, k)];
      v += e->transform[S->assign[e->from]][c];
    }
  return v;
}

/* The bound of the rest: the problem relaxed to its chain. Edges i -> i+1
 * count exactly, every other edge its cheapest entry; then h[i][c] (the
 * cheapest completion from node i in choice c) is a backward Viterbi, and
 * tail[i][c] = min over c' of chain(i -> i+1)[c][c'] + h[i+1][c'].
 * On CNN graphs, nearly chains, this bound is close to the optimum. */
static double *
chain_relaxation (const PlLsProblem *p, GArray **in)
{
  int n = p->n_nodes;
  double *tail = g_new0 (double, (gsize) MAX (n, 1) * PL_LS_MAX_CHOICES);
  double h_next[PL_LS_MAX_CHOICES] = { 0 };
  for (int i = n - 1; i >= 0; i--)
    {
      const PlLsNode *nd = &p->nodes[i];
      double chain[PL_LS_MAX_CHOICES][PL_LS_MAX_CHOICES] = { { 0 } };
      if (i + 1 < n)
        for (guint k = 0; k < in[i + 1]->len; k++)
          {
            const PlLsEdge *e = &p->edges[g_array_index (in[i + 1], int, k)];
            if (e->from == i)
              for (int a = 0; a < nd->n_choices; a++)
                for (int b = 0; b < p->nodes[i + 1].n_choices; b++)
                  chain[a][b] += e->transform[a][b];
          }
      double loose = 0;   /* node i's other in-edges at their cheapest */
      for (guint k = 0; k < in[i]->len; k++)
        {
          const PlLsEdge *e = &p->edges[g_array_index (in[i], int, k)];
          if (e->from == i - 1)
            continue;
          double m = INFINITY;
          for (int a = 0; a < p->nodes[e->from].n_choices; a++)
            for (int b = 0; b < nd->n_choices; b++)
              m = MIN (m, e->transform[a][b]);
          loose += m;
        }
      double h[PL_LS_MAX_CHOICES];
      for (int c = 0; c < nd->n_choices; c++)
        {
          double t = i + 1 < n ? INFINITY : 0;
          for (int b = 0; i + 1 < n && b < p->nodes[i + 1].n_choices; b++)
            t = MIN (t, chain[c][b] + h_next[b]);
          tail[(gsize) i * PL_LS_MAX_CHOICES + c] = t;
          h[c] = nd->cost[c] + loose + t;
        }
      memcpy (h_next, h, sizeof h);
    }
  return tail;
}

/* One level of the depth-first search: node i's choices, best bound first. */
typedef struct {
  double inc[PL_LS_MAX_CHOICES];
  double bound[PL_LS_MAX_CHOICES];   /* inc + tail: the choice's lower bound beyond so_far */
  int    order[PL_LS_MAX_CHOICES];
  int    n, next;
  double so_far;       /* cost of nodes < i */
} Level;

static void
level_enter (const Search *S, Level *L, int i, double so_far)
{
  L->n = S->p->nodes[i].n_choices;
  L->next = 0;
  L->so_far = so_far;
  for (int c = 0; c < L->n; c++)
    {
      L->inc[c] = increment (S, i, c);
      L->bound[c] = L->inc[c] + S->tail[(gsize) i * PL_LS_MAX_CHOICES + c];
      L->order[c] = c;
    }
  /* insertion sort, stable: ties keep the lower choice */
  for (int a = 1; a < L->n; a++)
    for (int b = a; b > 0 && L->bound[L->order[b]] < L->bound[L->order[b - 1]]; b--)
      {
        int t = L->order[b];
        L->order[b] = L->order[b - 1];
        L->order[b - 1] = t;
      }
}

/* Iterative (a graph of many thousand nodes would overflow a recursive one).
 * best holds the greedy assignment on entry; returns false when the budget ran out. */
static bool
branch_and_bound (Search *S, int *best, double *best_cost, int64_t max_visits, int64_t *visits)
{
  const PlLsProblem *p = S->p;
  if (p->n_nodes == 0)
    return true;
  g_autofree Level *levels = g_new (Level, p->n_nodes);
  int i = 0;
  level_enter (S, &levels[0], 0, 0);
  while (i >= 0)
    {
      Level *L = &levels[i];
      if (L->next == L->n)
        {
          i--;
          continue;
        }
      int c = L->order[L->next++];
      double lb = L->so_far + L->bound[c];
      if (!(lb < *best_cost - 1e-12 * fabs (*best_cost)))
        {
          L->next = L->n;   /* sorted: the rest are no cheaper */
          continue;
        }
      if (++*visits > max_visits)
        return false;
      S->assign[i] = c;
      if (i + 1 == p->n_nodes)
        {
          *best_cost = L->so_far + L->inc[c];
          memcpy (best, S->assign, sizeof (int) * p->n_nodes);
          continue;
        }
      i++;
      level_enter (S, &levels[i], i, L->so_far + L->inc[c]);
    }
  return true;
}

static PlLsSolution *
solve_branch_bound (const PlLsProblem *p, int64_t max_visits)
{
  PlLsSolution *s = solution_new (p, PL_LS_BRANCH_BOUND);
  Search S = { .p = p };
  S.in = in_edges (p);
  S.tail = chain_relaxation (p, S.in);
  S.assign = g_new0 (int, MAX (p->n_nodes, 1));
  /* the first upper bound: greedy, each node's best bound in order */
  for (int i = 0; i < p->n_nodes; i++)
    {
      Level L;
      level_enter (&S, &L, i, 0);
      S.assign[i] = L.order[0];
    }
  memcpy (s->choice, S.assign, sizeof (int) * p->n_nodes);
  double best_cost = pl_ls_cost (p, s->choice);
  int64_t budget = max_visits > 0 ? max_visits : DEFAULT_MAX_VISITS;
  s->exact = branch_and_bound (&S, s->choice, &best_cost, budget, &s->states);
  s->states = MIN (s->states, budget);
  s->cost = pl_ls_cost (p, s->choice);
  in_edges_free (p, S.in);
  g_free (S.tail);
  g_free (S.assign);
  return s;
}

/* --- brute force and dispatch -------------------------------------------------------- */

PlLsSolution *
pl_ls_brute_force (const PlLsProblem *p)
{
  PlLsSolution *s = solution_new (p, PL_LS_BRUTE_FORCE);
  g_autofree int *cur = g_new0 (int, MAX (p->n_nodes, 1));
  s->cost = INFINITY;
  for (;;)
    {
      double v = pl_ls_cost (p, cur);
      s->states++;
      if (v < s->cost)
        {
          s->cost = v;
          memcpy (s->choice, cur, sizeof (int) * p->n_nodes);
        }
      int i = p->n_nodes - 1;
      while (i >= 0 && ++cur[i] == p->nodes[i].n_choices)
        cur[i--] = 0;
      if (i < 0)
        break;
    }
  return s;
}

static bool
problem_valid (const PlLsProblem *p)
{
  for (int i = 0; i < p->n_nodes; i++)
    if (p->nodes[i].n_choices < 1 || p->nodes[i].n_choices > PL_LS_MAX_CHOICES)
      return false;
  for (int e = 0; e < p->n_edges; e++)
    if (p->edges[e].from < 0 || p->edges[e].from >= p->edges[e].to || p->edges[e].to >= p->n_nodes)
      return false;
  return true;
}

PlLsSolution *
pl_ls_solve_with (const PlLsProblem *p, PlLsMethod method, int64_t max_visits)
{
  g_return_val_if_fail (p != NULL && problem_valid (p), NULL);
  bool chain = pl_ls_is_chain (p);
  int64_t total = 0, most = frontier_sizes (p, &total);
  bool frontier_ok = most <= PL_LS_FRONTIER_MAX_STATES && total <= FRONTIER_MAX_TOTAL;
  if (method == PL_LS_BRUTE_FORCE)
    return pl_ls_brute_force (p);
  if ((method == PL_LS_CHAIN_DP && !chain) || (method == PL_LS_FRONTIER_DP && !frontier_ok))
    method = PL_LS_AUTO;
  if (method == PL_LS_AUTO)
    method = chain ? PL_LS_CHAIN_DP : frontier_ok ? PL_LS_FRONTIER_DP : PL_LS_BRANCH_BOUND;
  PlLsSolution *s = method == PL_LS_CHAIN_DP ? solve_chain (p)
                    : method == PL_LS_FRONTIER_DP ? solve_frontier (p)
                    : solve_branch_bound (p, max_visits);
  s->chain = chain;
  return s;
}

PlLsSolution *
pl_ls_solve (const PlLsProblem *p, int64_t max_visits)
{
  return pl_ls_solve_with (p, PL_LS_AUTO, max_visits);
}
