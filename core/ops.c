/* ops.c — the op registry table, built from PL_OP_LIST and filled in by the
 * op family files; plus the control-flow ops, which are loaded and shown but
 * not executed. */
#define G_LOG_DOMAIN "passlab"
#include "ops-util.h"

#include <string.h>

static const struct {
  const char   *name;
  PlOpCategory  category;
} op_names[] = {
  [PL_OP_OPAQUE] = { "Opaque", PL_CAT_OPAQUE },
#define PL_OP_NAME_(name, cat) [PL_OP_##name] = { #name, PL_CAT_##cat },
  PL_OP_LIST (PL_OP_NAME_)
#undef PL_OP_NAME_
};
/* The table and the enum come from one list; this guards hand edits. */
G_STATIC_ASSERT (G_N_ELEMENTS (op_names) == PL_OP_COUNT);

static const char *const category_names[] = {
  [PL_CAT_ELEMENTWISE] = "elementwise",
  [PL_CAT_BROADCAST] = "broadcast",
  [PL_CAT_REDUCE] = "reduce",
  [PL_CAT_SHAPE] = "shape",
  [PL_CAT_COMPUTE] = "compute",
  [PL_CAT_MEMORY] = "memory",
  [PL_CAT_CONTROL] = "control",
  [PL_CAT_FUSION] = "fusion",
  [PL_CAT_OPAQUE] = "opaque",
};
G_STATIC_ASSERT (G_N_ELEMENTS (category_names) == PL_CAT_COUNT);

static PlOpInfo registry[PL_OP_COUNT];
static bool registered[PL_OP_COUNT];
static GHashTable *by_name;

void
pl_ops_register (const PlOpEntry *entries, int n_entries)
{
  for (int i = 0; i < n_entries; i++)
    {
      const PlOpEntry *e = &entries[i];
      g_assert (e->op > PL_OP_OPAQUE && e->op < PL_OP_COUNT);
      if (registered[e->op])
        g_error ("op %s registered twice", op_names[e->op].name);
      registry[e->op] = (PlOpInfo) {
        .name = op_names[e->op].name,
        .category = op_names[e->op].category,
        .min_inputs = e->min_inputs, .max_inputs = e->max_inputs,
        .min_outputs = e->min_outputs, .max_outputs = e->max_outputs,
        .infer = e->infer, .eval = e->eval,
        .domain = e->domain != NULL ? e->domain : "",
      };
      registered[e->op] = true;
    }
}

/* Control-flow nodes keep their nested graphs as attributes; their outputs'
 * shapes are unknown and they do not run. */
static bool
infer_control (PlNode *node, GError **error)
{
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i])
      node->outputs[i]->shape = pl_shape_unknown ();
  return true;
}

/* A fusion node's types are its body's: the body's inputs take the node's
 * input types, the body is inferred, and its outputs give the node's. */
static bool
infer_fusion (PlNode *node, GError **error)
{
  PlGraph *body = node->body;
  if (!body)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "a Fusion node needs a body");
      return false;
    }
  if ((int) body->inputs->len != node->n_inputs || (int) body->outputs->len != node->n_outputs)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "the body has %u inputs and %u outputs, the node %d and %d",
                   body->inputs->len, body->outputs->len, node->n_inputs, node->n_outputs);
      return false;
    }
  for (int i = 0; i < node->n_inputs; i++)
    {
      PlValue *outer = node->inputs[i], *inner = body->inputs->pdata[i];
      if (!outer)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "input %d of a Fusion node is missing", i);
          return false;
        }
      inner->dtype = outer->dtype;
      inner->shape = outer->shape;
    }
  GError *local = NULL;
  if (!pl_graph_infer_shapes (body, &local))
    {
      g_set_error (error, PL_ERROR, local->code, "in the body: %s", local->message);
      g_error_free (local);
      return false;
    }
  for (int i = 0; i < node->n_outputs; i++)
    {
      PlValue *inner = body->outputs->pdata[i];
      pl_set_output (node, i, inner->dtype, &inner->shape);
    }
  return true;
}

void
pl_ops_register_control (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_If, 1, 1, 1, -1, infer_control, NULL },
    { PL_OP_Loop, 2, -1, 1, -1, infer_control, NULL },
    /* opset 8 Scan starts with an optional sequence_lens, so no input is required */
    { PL_OP_Scan, 0, -1, 1, -1, infer_control, NULL },
    /* executed by the interpreter through its body, not an eval function */
    { PL_OP_Fusion, 0, -1, 1, -1, infer_fusion, NULL },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}

static gpointer
init_once (gpointer data)
{
  registry[PL_OP_OPAQUE] = (PlOpInfo) {
    .name = "Opaque", .category = PL_CAT_OPAQUE,
    .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1, .domain = "",
  };
  registered[PL_OP_OPAQUE] = true;

  pl_ops_register_elementwise ();
  pl_ops_register_reduce ();
  pl_ops_register_nn ();
  pl_ops_register_shape ();
  pl_ops_register_control ();
  pl_ops_register_memory ();
  pl_ops_register_quant ();
  pl_ops_register_rnn ();
  pl_ops_register_linalg ();
  pl_ops_register_training ();
  pl_ops_register_vision ();
  pl_ops_register_signal ();

  by_name = g_hash_table_new (g_str_hash, g_str_equal);
  for (int op = 1; op < PL_OP_COUNT; op++)
    {
      if (!registered[op])
        {
          /* Families still being written leave ops out; they then behave as
           * known-but-not-executable ops with unknown output shapes. */
          registry[op] = (PlOpInfo) {
            .name = op_names[op].name, .category = op_names[op].category,
            .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1, .domain = "",
          };
        }
      g_hash_table_insert (by_name, (gpointer) op_names[op].name, GINT_TO_POINTER (op));
    }
  return NULL;
}

void
pl_ops_init (void)
{
  static GOnce once = G_ONCE_INIT;
  g_once (&once, init_once, NULL);
}

const PlOpInfo *
pl_op_info (PlOp op)
{
  pl_ops_init ();
  g_return_val_if_fail ((int) op >= 0 && op < PL_OP_COUNT, &registry[PL_OP_OPAQUE]);
  return &registry[op];
}

const char *
pl_op_name (PlOp op)
{
  g_return_val_if_fail ((int) op >= 0 && op < PL_OP_COUNT, "Opaque");
  return op_names[op].name;
}

PlOp
pl_op_from_name (const char *op_type, const char *domain)
{
  pl_ops_init ();
  if (domain == NULL || strcmp (domain, "ai.onnx") == 0)
    domain = "";
  /* An op resolves only in the domain it was registered under: an op of
   * the default domain named in a custom one, or a custom domain's op
   * (Adam of ai.onnx.preview.training) named elsewhere, stays unknown. */
  PlOp op = (PlOp) GPOINTER_TO_INT (g_hash_table_lookup (by_name, op_type));
  return strcmp (registry[op].domain, domain) == 0 ? op : PL_OP_OPAQUE;
}

const char *
pl_op_category_name (PlOpCategory cat)
{
  g_return_val_if_fail ((int) cat >= 0 && cat < PL_CAT_COUNT, "?");
  return category_names[cat];
}
