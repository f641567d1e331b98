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

typedef struct {
  int   *choice;          /* per node, the chosen index */
  double cost;            /* total: op costs + transforms */
  bool   chain;           /* the problem was a chain: solved by DP */
  bool   exact;           /* the optimum was proved (false: node budget ran out, best found) */
  int64_t states;         /* DP states or search nodes visited */
} PlLsSolution;

/* Solves the problem; max_visits bounds the branch and bound (0: 10^7). */
PlLsSolution *pl_ls_solve         (const PlLsProblem *p, int64_t max_visits);
/* Exhaustive enumeration (tests; n_choices^n_nodes must be small). */
PlLsSolution *pl_ls_brute_force   (const PlLsProblem *p);
double        pl_ls_cost          (const PlLsProblem *p, const int *choice);
void          pl_ls_solution_free (PlLsSolution *s);

G_END_DECLS
