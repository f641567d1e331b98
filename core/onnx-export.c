/* onnx-export.c — writes graphs as ONNX ModelProto and tensors as
 * TensorProto files.
 *
 * The protobuf-c structs are built in an arena (every allocation is freed
 * at once after packing); tensor data is not copied, raw_data points at the
 * PlTensor's bytes (ONNX raw_data is little-endian, as our hosts are).
 *
 * What ONNX cannot say:
 *  - a fusion node (node->body != NULL) is written as a single node of its
 *    op_type in the custom domain "passlab" (or its own domain if it has
 *    one); its body is not written, so other tools see an unknown op;
 *  - control edges (serialize / prefetch) are dropped;
 *  - layouts (layout.h): a LayoutTransform is written in the custom domain
 *    "ai.passlab" (attribute `to` kept), and each value with a non-default
 *    layout gets a value_info whose doc_string reads "passlab.layout=NHWC"
 *    (ValueInfoProto has no metadata_props in this onnx.proto); the
 *    importer reads both back. Conv's passlab attributes `impl` and `tile`
 *    are written as they are;
 *  - a nested graph's outer-scope references, which the importer keeps as
 *    trailing extra inputs of the nested graph, are written as plain
 *    references again (inputs whose name an enclosing graph defines).
 */
#define G_LOG_DOMAIN "passlab"

#include "onnx-io.h"

#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"

#define ONNX_IR_VERSION 8
#define ONNX_DEFAULT_OPSET 17
#define FUSION_DOMAIN "passlab"
#define PASSLAB_OPS_DOMAIN "ai.passlab"
#define LAYOUT_DOC_PREFIX "passlab.layout="

typedef struct {
  GPtrArray  *allocs;   /* everything the protobuf structs point at */
  GHashTable *domains;  /* custom domains the nodes use (char*, borrowed) */
} Arena;

/* The enclosing graphs of a nested graph, innermost first. */
typedef struct ExportScope {
  const PlGraph            *graph;
  const struct ExportScope *outer;
} ExportScope;

static Onnx__GraphProto *graph_to_proto (Arena *a, const PlGraph *g, const ExportScope *outer,
                                         GError **error);

static void *
arena_new0 (Arena *a, size_t size)
{
  void *p = g_malloc0 (MAX (size, 1));
  g_ptr_array_add (a->allocs, p);
  return p;
}

#define ARENA_NEW(a, type) ((type *) arena_new0 ((a), sizeof (type)))
#define ARENA_ARRAY(a, type, n) ((type *) arena_new0 ((a), sizeof (type) * (size_t) (n)))

static char *
arena_strdup (Arena *a, const char *s)
{
  char *p = g_strdup (s != NULL ? s : "");
  g_ptr_array_add (a->allocs, p);
  return p;
}

/* --- tensors and types ----------------------------------------------------- */

static Onnx__TensorProto *
tensor_to_proto (Arena *a, const PlTensor *t, const char *name)
{
  Onnx__TensorProto *tp = ARENA_NEW (a, Onnx__TensorProto);
  onnx__tensor_proto__init (tp);
  if (name != NULL)
    tp->name = arena_strdup (a, name);
  tp->n_dims = (size_t) t->rank;
  tp->dims = ARENA_ARRAY (a, int64_t, t->rank);
  memcpy (tp->dims, t->dims, sizeof (int64_t) * (size_t) t->rank);
  tp->has_data_type = TRUE;
  tp->data_type = pl_dtype_to_onnx (t->dtype);
  tp->has_raw_data = TRUE;
  tp->raw_data.len = pl_tensor_nbytes (t);
  tp->raw_data.data = t->data;
  if (G_BYTE_ORDER == G_BIG_ENDIAN && pl_dtype_size (t->dtype) > 1)
    {
      size_t esize = pl_dtype_size (t->dtype);
      guint8 *copy = arena_new0 (a, tp->raw_data.len);
      const guint8 *src = t->data;
      for (int64_t i = 0; i < t->numel; i++)
        for (size_t b = 0; b < esize; b++)
          copy[(size_t) i * esize + b] = src[(size_t) i * esize + esize - 1 - b];
      tp->raw_data.data = copy;
    }
  return tp;
}

static Onnx__ValueInfoProto *
value_info_to_proto (Arena *a, const PlValue *v)
{
  Onnx__ValueInfoProto *vi = ARENA_NEW (a, Onnx__ValueInfoProto);
  onnx__value_info_proto__init (vi);
  vi->name = arena_strdup (a, v->name);
  if (v->layout != PL_LAYOUT_NCHW)
    {
      g_autofree char *doc = g_strconcat (LAYOUT_DOC_PREFIX, pl_layout_name (v->layout), NULL);
      vi->doc_string = arena_strdup (a, doc);
    }
  if (v->dtype == PL_DTYPE_UNDEFINED && v->shape.rank == PL_RANK_UNKNOWN)
    return vi;

  Onnx__TypeProto *type = ARENA_NEW (a, Onnx__TypeProto);
  onnx__type_proto__init (type);
  Onnx__TypeProto__Tensor *tt = ARENA_NEW (a, Onnx__TypeProto__Tensor);
  onnx__type_proto__tensor__init (tt);
  type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  type->tensor_type = tt;
  vi->type = type;
  if (v->dtype != PL_DTYPE_UNDEFINED)
    {
      tt->has_elem_type = TRUE;
      tt->elem_type = pl_dtype_to_onnx (v->dtype);
    }
  if (v->shape.rank == PL_RANK_UNKNOWN)
    return vi;

  Onnx__TensorShapeProto *sp = ARENA_NEW (a, Onnx__TensorShapeProto);
  onnx__tensor_shape_proto__init (sp);
  sp->n_dim = (size_t) v->shape.rank;
  sp->dim = ARENA_ARRAY (a, Onnx__TensorShapeProto__Dimension *, v->shape.rank);
  for (int i = 0; i < v->shape.rank; i++)
    {
      PlDim d = v->shape.dims[i];
      Onnx__TensorShapeProto__Dimension *dp = ARENA_NEW (a, Onnx__TensorShapeProto__Dimension);
      onnx__tensor_shape_proto__dimension__init (dp);
      if (d.size >= 0)
        {
          dp->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
          dp->dim_value = d.size;
        }
      else if (d.sym != NULL)
        {
          dp->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
          dp->dim_param = arena_strdup (a, d.sym);
        }
      sp->dim[i] = dp;
    }
  tt->shape = sp;
  return vi;
}

/* --- nodes ----------------------------------------------------------------- */

static bool
attr_to_proto (Arena *a, const PlAttr *attr, const ExportScope *scope,
               Onnx__AttributeProto **out, GError **error)
{
  Onnx__AttributeProto *ap = ARENA_NEW (a, Onnx__AttributeProto);
  onnx__attribute_proto__init (ap);
  ap->name = arena_strdup (a, attr->name);
  ap->has_type = TRUE;
  switch (attr->type)
    {
    case PL_ATTR_INT:
      ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
      ap->has_i = TRUE;
      ap->i = attr->i;
      break;
    case PL_ATTR_FLOAT:
      ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
      ap->has_f = TRUE;
      ap->f = attr->f;
      break;
    case PL_ATTR_STRING:
      ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
      ap->has_s = TRUE;
      ap->s.data = (guint8 *) arena_strdup (a, attr->s);
      ap->s.len = strlen ((const char *) ap->s.data);
      break;
    case PL_ATTR_INTS:
      ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
      ap->n_ints = (size_t) attr->ints.n;
      ap->ints = attr->ints.v;
      break;
    case PL_ATTR_FLOATS:
      ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
      ap->n_floats = (size_t) attr->floats.n;
      ap->floats = attr->floats.v;
      break;
    case PL_ATTR_STRINGS:
      ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
      ap->n_strings = (size_t) attr->strings.n;
      ap->strings = ARENA_ARRAY (a, ProtobufCBinaryData, attr->strings.n);
      for (int i = 0; i < attr->strings.n; i++)
        {
          ap->strings[i].data = (guint8 *) attr->strings.v[i];
          ap->strings[i].len = strlen (attr->strings.v[i]);
        }
      break;
    case PL_ATTR_TENSOR:
      ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
      ap->t = tensor_to_proto (a, attr->t, NULL);
      break;
    case PL_ATTR_GRAPH:
      ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
      ap->g = graph_to_proto (a, attr->g, scope, error);
      if (ap->g == NULL)
        {
          g_prefix_error (error, "attribute '%s': ", attr->name);
          return false;
        }
      break;
    default:
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "attribute '%s' has unknown type %d",
                   attr->name, (int) attr->type);
      return false;
    }
  *out = ap;
  return true;
}

static Onnx__NodeProto *
node_to_proto (Arena *a, const PlNode *node, const ExportScope *scope, GError **error)
{
  Onnx__NodeProto *np = ARENA_NEW (a, Onnx__NodeProto);
  onnx__node_proto__init (np);
  np->name = arena_strdup (a, node->name);
  np->op_type = arena_strdup (a, node->op_type != NULL ? node->op_type : pl_op_name (node->op));
  const char *domain = node->domain != NULL ? node->domain : "";
  if (node->body != NULL && domain[0] == '\0')
    domain = FUSION_DOMAIN;
  if (node->op == PL_OP_LayoutTransform)
    domain = PASSLAB_OPS_DOMAIN;
  np->domain = arena_strdup (a, domain);
  if (domain[0] != '\0')
    g_hash_table_add (a->domains, np->domain);

  /* Omitted inputs and outputs are written as "", trailing ones too, so
   * the node keeps its slot counts through a round trip. */
  int n_in = node->n_inputs, n_out = node->n_outputs;
  np->n_input = (size_t) n_in;
  np->input = ARENA_ARRAY (a, char *, n_in);
  for (int i = 0; i < n_in; i++)
    np->input[i] = arena_strdup (a, node->inputs[i] != NULL ? node->inputs[i]->name : "");
  np->n_output = (size_t) n_out;
  np->output = ARENA_ARRAY (a, char *, n_out);
  for (int i = 0; i < n_out; i++)
    np->output[i] = arena_strdup (a, node->outputs[i] != NULL ? node->outputs[i]->name : "");

  ExportScope inner = { node->graph, scope };
  np->n_attribute = (size_t) node->n_attrs;
  np->attribute = ARENA_ARRAY (a, Onnx__AttributeProto *, node->n_attrs);
  for (int i = 0; i < node->n_attrs; i++)
    if (!attr_to_proto (a, &node->attrs[i], &inner, &np->attribute[i], error))
      {
        g_autofree char *desc = pl_node_describe (node);
        g_prefix_error (error, "%s: ", desc);
        return NULL;
      }
  return np;
}

/* --- graphs and models ----------------------------------------------------- */

static bool
defined_outside (const ExportScope *scope, const char *name)
{
  for (; scope != NULL; scope = scope->outer)
    if (pl_graph_find_value (scope->graph, name) != NULL)
      return true;
  return false;
}

static Onnx__GraphProto *
graph_to_proto (Arena *a, const PlGraph *g, const ExportScope *outer, GError **error)
{
  int n_nodes = 0;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n_nodes, error);
  if (order == NULL)
    return NULL;

  Onnx__GraphProto *gp = ARENA_NEW (a, Onnx__GraphProto);
  onnx__graph_proto__init (gp);
  gp->name = arena_strdup (a, g->name);

  gp->n_node = (size_t) n_nodes;
  gp->node = ARENA_ARRAY (a, Onnx__NodeProto *, n_nodes);
  for (int i = 0; i < n_nodes; i++)
    if ((gp->node[i] = node_to_proto (a, order[i], outer, error)) == NULL)
      return NULL;

  /* A nested graph's trailing inputs that an enclosing graph defines are
   * outer-scope references (see onnx-import.c), not declared inputs. */
  int n_inputs = (int) g->inputs->len;
  while (n_inputs > 0 && defined_outside (outer, ((PlValue *) g->inputs->pdata[n_inputs - 1])->name))
    n_inputs--;
  gp->n_input = (size_t) n_inputs;
  gp->input = ARENA_ARRAY (a, Onnx__ValueInfoProto *, n_inputs);
  for (int i = 0; i < n_inputs; i++)
    gp->input[i] = value_info_to_proto (a, g->inputs->pdata[i]);

  gp->n_output = g->outputs->len;
  gp->output = ARENA_ARRAY (a, Onnx__ValueInfoProto *, g->outputs->len);
  for (guint i = 0; i < g->outputs->len; i++)
    gp->output[i] = value_info_to_proto (a, g->outputs->pdata[i]);

  /* Constants become initializers; the types of intermediate values go
   * to value_info so other tools see what we inferred. */
  gp->initializer = ARENA_ARRAY (a, Onnx__TensorProto *, g->values->len);
  gp->value_info = ARENA_ARRAY (a, Onnx__ValueInfoProto *, g->values->len);
  for (guint i = 0; i < g->values->len; i++)
    {
      const PlValue *v = g->values->pdata[i];
      if (v->constant != NULL)
        gp->initializer[gp->n_initializer++] = tensor_to_proto (a, v->constant, v->name);
      else if (v->producer != NULL && !pl_value_is_output (v)
               && (v->dtype != PL_DTYPE_UNDEFINED || v->layout != PL_LAYOUT_NCHW))
        gp->value_info[gp->n_value_info++] = value_info_to_proto (a, v);
    }
  return gp;
}

static Onnx__OperatorSetIdProto *
opset_to_proto (Arena *a, const char *domain, int version)
{
  Onnx__OperatorSetIdProto *o = ARENA_NEW (a, Onnx__OperatorSetIdProto);
  onnx__operator_set_id_proto__init (o);
  o->domain = arena_strdup (a, domain);
  o->has_version = TRUE;
  o->version = version;
  return o;
}

/* Packs a message into a new buffer; protobuf's own limit is 2 GiB. */
static guint8 *
pack_message (const ProtobufCMessage *msg, gsize *len, GError **error)
{
  size_t size = protobuf_c_message_get_packed_size (msg);
  if (size > G_MAXINT32)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                   "the file would be %zu bytes; protobuf files are limited to 2 GiB", size);
      return NULL;
    }
  guint8 *buf = g_malloc (MAX (size, 1));
  protobuf_c_message_pack (msg, buf);
  *len = size;
  return buf;
}

static bool
write_file (const char *path, const guint8 *data, gsize len, GError **error)
{
  g_autoptr (GError) local = NULL;
  if (!g_file_set_contents (path, (const char *) data, (gssize) len, &local))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s", local->message);
      return false;
    }
  return true;
}

static int
compare_strings (const void *x, const void *y)
{
  return strcmp (*(const char *const *) x, *(const char *const *) y);
}

static void
arena_init (Arena *a)
{
  a->allocs = g_ptr_array_new_with_free_func (g_free);
  a->domains = g_hash_table_new (g_str_hash, g_str_equal);
}

static void
arena_clear (Arena *a)
{
  g_ptr_array_unref (a->allocs);
  g_hash_table_unref (a->domains);
}

bool
pl_onnx_save (const PlGraph *g, const char *path, GError **error)
{
  g_return_val_if_fail (g != NULL && path != NULL, false);

  Arena a;
  arena_init (&a);
  bool ok = false;
  Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
  m.has_ir_version = TRUE;
  m.ir_version = ONNX_IR_VERSION;
  m.producer_name = (char *) "passlab";
  m.producer_version = (char *) "0.1";
  m.graph = graph_to_proto (&a, g, NULL, error);
  if (m.graph != NULL)
    {
      /* One opset per domain the nodes use; custom domains get version 1. */
      m.n_opset_import = 1 + g_hash_table_size (a.domains);
      m.opset_import = ARENA_ARRAY (&a, Onnx__OperatorSetIdProto *, m.n_opset_import);
      m.opset_import[0] = opset_to_proto (&a, "", g->opset > 0 ? g->opset : ONNX_DEFAULT_OPSET);
      g_autofree gpointer *domains = g_hash_table_get_keys_as_array (a.domains, NULL);
      qsort (domains, m.n_opset_import - 1, sizeof (gpointer), compare_strings);
      for (guint i = 0; i + 1 < m.n_opset_import; i++)
        m.opset_import[i + 1] = opset_to_proto (&a, domains[i], 1);

      gsize len = 0;
      g_autofree guint8 *buf = pack_message (&m.base, &len, error);
      ok = buf != NULL && write_file (path, buf, len, error);
    }
  arena_clear (&a);
  return ok;
}

bool
pl_onnx_save_tensor (const PlTensor *t, const char *name, const char *path, GError **error)
{
  g_return_val_if_fail (t != NULL && path != NULL, false);

  Arena a;
  arena_init (&a);
  Onnx__TensorProto *tp = tensor_to_proto (&a, t, name);
  gsize len = 0;
  g_autofree guint8 *buf = pack_message (&tp->base, &len, error);
  bool ok = buf != NULL && write_file (path, buf, len, error);
  arena_clear (&a);
  return ok;
}
