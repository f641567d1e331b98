/* graph.h — the graph IR: graphs own nodes and values.
 *
 * A PlValue is one tensor: dtype, shape, its producer (node, output index) and
 * its uses (node, input index) — the seed's hyperedge. Graph inputs and
 * constants have no producer; a constant holds refcounted data.
 *
 * A PlNode has an op, typed attributes, input and output values, typed
 * control inputs (serialize / prefetch) and a stable id: a node keeps its id
 * through every pass that does not replace it, and through pl_graph_copy.
 * A fusion node holds its fused subgraph in `body`.
 *
 * Read fields directly; change the graph only through these functions, which
 * keep producers, uses and name lookup consistent. pl_graph_verify() checks
 * every invariant.
 */
#pragma once

#include "layout.h"
#include "ops.h"
#include "tensor.h"

G_BEGIN_DECLS

typedef enum {
  PL_ATTR_INT,
  PL_ATTR_FLOAT,
  PL_ATTR_STRING,
  PL_ATTR_INTS,
  PL_ATTR_FLOATS,
  PL_ATTR_STRINGS,
  PL_ATTR_TENSOR,
  PL_ATTR_GRAPH,  /* nested graph (ONNX If/Loop bodies): kept, not executed */
} PlAttrType;

struct _PlAttr {
  char       *name;
  PlAttrType  type;
  union {
    int64_t   i;                                  /* INT */
    float     f;                                  /* FLOAT (ONNX floats are 32-bit) */
    char     *s;                                  /* STRING */
    struct { int64_t *v; int n; } ints;           /* INTS */
    struct { float *v; int n; } floats;           /* FLOATS */
    struct { char **v; int n; } strings;          /* STRINGS */
    PlTensor *t;                                  /* TENSOR (a reference) */
    PlGraph  *g;                                  /* GRAPH (owned) */
  };
};

typedef enum {
  PL_CONTROL_SERIALIZE, /* the node waits until `node` finished (swap-out before the next big allocation) */
  PL_CONTROL_PREFETCH,  /* the node may start only after `node` finished (a swap-in's trigger) */
} PlControlKind;

typedef struct {
  PlNode        *node;
  PlControlKind  kind;
} PlControl;

typedef struct {
  PlNode *node;
  int     index;   /* input slot of node */
} PlUse;

struct _PlValue {
  guint32    id;              /* unique in its graph, kept by pl_graph_copy */
  char      *name;            /* unique in its graph */
  PlDType    dtype;
  PlShape    shape;
  PlNode    *producer;        /* NULL for graph inputs and constants */
  int        producer_index;  /* output slot of producer */
  PlUse     *uses;
  int        n_uses;
  int        uses_cap;
  PlTensor  *constant;        /* data of a constant (initializer), else NULL */
  bool       is_input;        /* listed in graph->inputs */
  PlLayout   layout;          /* physical order in memory (layout.h); NCHW by default */
  PlGraph   *graph;
};

struct _PlNode {
  guint32     id;          /* stable id, unique in its graph */
  PlOp        op;          /* PL_OP_OPAQUE for ops we do not know */
  char       *op_type;     /* the op's name as loaded ("Add", or the unknown name) */
  char       *domain;      /* "" for the default ONNX domain */
  char       *name;        /* unique in its graph */
  PlAttr     *attrs;
  int         n_attrs;
  PlValue   **inputs;      /* an entry is NULL for an omitted optional input */
  int         n_inputs;
  PlValue   **outputs;     /* an entry is NULL for an omitted optional output */
  int         n_outputs;
  PlControl  *controls;
  int         n_controls;
  PlGraph    *body;        /* fused subgraph of a fusion node (owned), else NULL */
  PlGraph    *graph;
};

struct _PlGraph {
  char       *name;
  int         opset;         /* default-domain opset version, 0 if unspecified */
  GPtrArray  *nodes;         /* PlNode*, in insertion order (not necessarily topological) */
  GPtrArray  *values;        /* PlValue*, every value of the graph */
  GPtrArray  *inputs;        /* PlValue*, graph inputs in order (no constants) */
  GPtrArray  *outputs;       /* PlValue*, graph outputs in order */
  GHashTable *value_by_name; /* char* -> PlValue* */
  GHashTable *node_by_name;  /* char* -> PlNode* */
  GHashTable *node_by_id;    /* GUINT_TO_POINTER(id) -> PlNode* */
  GHashTable *value_by_id;   /* GUINT_TO_POINTER(id) -> PlValue* */
  guint32     next_node_id;
  guint32     next_value_id;
  guint       n_control_edges; /* all control edges, so removals skip the scan when there are none */
};

/* --- graphs --------------------------------------------------------------- */

PlGraph  *pl_graph_new           (const char *name);
void      pl_graph_free          (PlGraph *g);
/* A deep copy with the same node and value ids; constant data is shared. */
PlGraph  *pl_graph_copy          (const PlGraph *g);

PlValue  *pl_graph_add_input     (PlGraph *g, const char *name, PlDType dtype,
                                  const PlShape *shape, GError **error);
/* Adds a constant; takes a new reference to t. Shape and dtype come from t. */
PlValue  *pl_graph_add_constant  (PlGraph *g, const char *name, PlTensor *t, GError **error);
void      pl_graph_add_output    (PlGraph *g, PlValue *v);
void      pl_graph_set_output    (PlGraph *g, int index, PlValue *v);

PlValue  *pl_graph_find_value    (const PlGraph *g, const char *name);
PlNode   *pl_graph_find_node     (const PlGraph *g, const char *name);
PlNode   *pl_graph_node_by_id    (const PlGraph *g, guint32 id);
PlValue  *pl_graph_value_by_id   (const PlGraph *g, guint32 id);
/* base if unused as a value and node name, else base_1, base_2, ...; g_free it. */
char     *pl_graph_unique_name   (const PlGraph *g, const char *base);

/* Adds a node. op_type is resolved through the op registry (unknown ops
 * become PL_OP_OPAQUE); domain may be NULL for "". name may be NULL (a unique
 * one is made). inputs may contain NULL (omitted optional inputs).
 * output_names may be NULL or contain NULL entries: unique names are made;
 * an entry "" means an omitted optional output (the slot stays NULL).
 * Output dtypes/shapes are left unknown: call pl_node_infer().
 * Fails when a name is taken. */
PlNode   *pl_graph_add_node      (PlGraph *g, const char *op_type, const char *domain,
                                  const char *name, int n_inputs, PlValue *const *inputs,
                                  int n_outputs, const char *const *output_names,
                                  GError **error);
/* Removes a node whose outputs have no uses and are not graph outputs;
 * its output values are freed. */
void      pl_graph_remove_node   (PlGraph *g, PlNode *node);
/* Removes many nodes at once (same conditions as pl_graph_remove_node,
 * except that the nodes' outputs may be read by other nodes in the set);
 * linear in the graph size, where repeated single removals are quadratic. */
void      pl_graph_remove_nodes  (PlGraph *g, PlNode *const *nodes, int n);
/* Replaces the insertion order of g's nodes (which ties in the topological
 * order follow, so a topological `order` becomes the schedule). `order`
 * must hold exactly g's nodes. */
void      pl_graph_set_node_order (PlGraph *g, PlNode *const *order, int n);
/* Removes a value with no producer and no uses (an unused constant or input). */
void      pl_graph_remove_value  (PlGraph *g, PlValue *v);
/* Removes many such values with one compaction (linear, not quadratic). */
void      pl_graph_remove_values (PlGraph *g, PlValue *const *values, int n);
/* Renames a value; fails if the name is taken. */
bool      pl_value_rename        (PlValue *v, const char *name, GError **error);

/* Every use of old (node inputs and graph outputs) now reads new_value. */
void      pl_value_replace_uses  (PlValue *old_value, PlValue *new_value);
/* Sets input slot index (growing n_inputs with NULLs if needed); updates uses. */
void      pl_node_set_input      (PlNode *node, int index, PlValue *v);
void      pl_node_add_control    (PlNode *node, PlNode *after, PlControlKind kind);
void      pl_node_set_body       (PlNode *node, PlGraph *body);  /* takes ownership */
bool      pl_value_is_output     (const PlValue *v);
/* The constant data of v: a constant value's tensor, or the `value` tensor
 * of the Constant node producing it (exporters emit those); else NULL. */
PlTensor *pl_value_constant      (const PlValue *v);

/* --- attributes ----------------------------------------------------------- */

const PlAttr *pl_node_attr        (const PlNode *node, const char *name);
int64_t       pl_node_attr_int    (const PlNode *node, const char *name, int64_t def);
float         pl_node_attr_float  (const PlNode *node, const char *name, float def);
const char   *pl_node_attr_string (const PlNode *node, const char *name, const char *def);
/* Points *v at the INTS attribute's array; false (n = 0) when absent. */
bool          pl_node_attr_ints   (const PlNode *node, const char *name, const int64_t **v, int *n);
bool          pl_node_attr_floats (const PlNode *node, const char *name, const float **v, int *n);

/* Setters replace an attribute of the same name; they copy their arguments. */
void pl_node_set_attr_int     (PlNode *node, const char *name, int64_t v);
void pl_node_set_attr_float   (PlNode *node, const char *name, float v);
void pl_node_set_attr_string  (PlNode *node, const char *name, const char *v);
void pl_node_set_attr_ints    (PlNode *node, const char *name, const int64_t *v, int n);
void pl_node_set_attr_floats  (PlNode *node, const char *name, const float *v, int n);
void pl_node_set_attr_strings (PlNode *node, const char *name, const char *const *v, int n);
void pl_node_set_attr_tensor  (PlNode *node, const char *name, PlTensor *t); /* takes a new ref */
void pl_node_set_attr_graph   (PlNode *node, const char *name, PlGraph *g);  /* takes ownership */
void pl_node_remove_attr      (PlNode *node, const char *name);
void pl_attr_clear            (PlAttr *a);
/* Same name, type and value (tensors: the same data reference; graphs: same node count). */
bool pl_attr_equal            (const PlAttr *a, const PlAttr *b);
void pl_attr_copy             (PlAttr *dst, const PlAttr *src);

/* --- analysis --------------------------------------------------------------- */

/* Runs the op's shape inference, setting every output's dtype and shape.
 * Errors name the node: "node 'conv1' (Conv): ...". */
bool      pl_node_infer          (PlNode *node, GError **error);
/* Infers every node in topological order. */
bool      pl_graph_infer_shapes  (PlGraph *g, GError **error);
/* Nodes in a topological order honouring data and control edges; ties keep
 * insertion order. Returns NULL (PL_ERROR_INVALID naming a node on the cycle)
 * if the graph has a cycle. g_free the array. */
PlNode  **pl_graph_topo_order    (const PlGraph *g, int *n_nodes, GError **error);
/* Checks every IR invariant: uses match inputs, producers match outputs,
 * names unique and indexed, every value has a source, shapes re-infer to the
 * stored ones, no cycles (control edges included), fusion bodies closed. */
bool      pl_graph_verify        (const PlGraph *g, GError **error);
/* Bytes of all constant data. */
int64_t   pl_graph_param_bytes   (const PlGraph *g);
/* A description like "node 'conv1' (Conv)" for messages; g_free it. */
char     *pl_node_describe       (const PlNode *node);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlGraph, pl_graph_free)

G_END_DECLS
