/* layout-search.h — choosing one layout per op to minimize op costs plus
 * transform costs on edges (seed 003): exact dynamic programming on chains,
 * branch and bound with backtracking on DAGs. Independent of the IR so it is
 * tested against brute force on random cost tables. Internal to passes/. */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

#define PL_LS_MAX_CHOICES 8

/* One decision: an op that takes one of n_choices layouts (fixed ops have 1). */
typedef struct {
  int    n_choices;
  int    choice_layout[PL_LS_MAX_CHOICES];  /* PlLayout of each choice */
  double cost[PL_LS_MAX_CHOICES];           /* op cost of each choice, ms */
} PlLsNode;

/* An edge: data from node `from` to node `to`; transform[a][b] is the cost
 * when from takes choice a and to takes choice b (0 when the layouts agree). */
typedef struct {
  int    from, to;
  double transform[PL_LS_MAX_CHOICES][PL_LS_MAX_CHOICES];
} PlLsEdge;

typedef struct {
  int      n_nodes;
  PlLsNode *nodes;   /* in topological order: every edge has from < to */
  int      n_edges;
  PlLsEdge *edges;
} PlLsProblem;

/* How a problem was solved. */
typedef enum {
  PL_LS_AUTO,           /* (request only) chain DP on chains, frontier DP when small, else B&B */
  PL_LS_CHAIN_DP,       /* Viterbi over the chain: exact; states = sum of choices */
  PL_LS_FRONTIER_DP,    /* DP over the topological order keyed by the choices of the nodes that
                         * still have unvisited out-edges: exact; states = (frontier, choice) pairs */
  PL_LS_BRANCH_BOUND,   /* depth-first over the topological order with a lower bound: exact unless
                         * the visit budget ran out; states = search nodes visited */
  PL_LS_BRUTE_FORCE,    /* every assignment (tests) */
} PlLsMethod;

typedef struct {
  int   *choice;          /* per node, the chosen index */
  double cost;            /* total: op costs + transforms */
  bool   chain;           /* the problem was a chain: solved by DP */
  bool   exact;           /* the optimum was proved (false: node budget ran out, best found) */
  int64_t states;         /* DP states or search nodes visited */
  PlLsMethod method;      /* what ran */
} PlLsSolution;

/* The frontier DP runs when no step holds more states than this. */
#define PL_LS_FRONTIER_MAX_STATES 100000

/* Solves the problem; max_visits bounds the branch and bound (0: 10^7). */
PlLsSolution *pl_ls_solve         (const PlLsProblem *p, int64_t max_visits);
/* The same with a chosen method (a method that does not apply — chain DP on
 * a DAG, frontier DP past PL_LS_FRONTIER_MAX_STATES — falls back as AUTO does). */
PlLsSolution *pl_ls_solve_with    (const PlLsProblem *p, PlLsMethod method, int64_t max_visits);
/* "chain DP", "frontier DP", "branch and bound", "brute force" */
const char   *pl_ls_method_name   (PlLsMethod method);
/* Whether every edge goes from node i to node i + 1. */
bool          pl_ls_is_chain      (const PlLsProblem *p);
/* The most states one step of the frontier DP would hold (saturates at INT64_MAX). */
int64_t       pl_ls_frontier_states (const PlLsProblem *p);
/* Exhaustive enumeration (tests; n_choices^n_nodes must be small). */
PlLsSolution *pl_ls_brute_force   (const PlLsProblem *p);
double        pl_ls_cost          (const PlLsProblem *p, const int *choice);
void          pl_ls_solution_free (PlLsSolution *s);

G_END_DECLS
