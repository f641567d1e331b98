/* onnx-import.c — reads ONNX ModelProto and TensorProto files into the IR.
 *
 * The protobuf-c code generated from Debian's onnx.proto does the wire
 * decoding; this file checks everything a file can get wrong (sizes, ranks,
 * data lengths, names) before it allocates or builds anything, so a
 * truncated, corrupt or hostile file gives a GError naming the tensor or
 * node, never a crash or a huge allocation.
 *
 * A graph is built in two passes: first every node with its outputs and
 * attributes, then every node's inputs by name. That accepts files whose
 * nodes are not sorted (cycles are found later by shape inference).
 *
 * Nested graphs (If/Loop/Scan bodies) are imported recursively. A name the
 * body uses but does not define is an outer-scope reference: it becomes an
 * extra input of the body, after the declared ones, with the outer value's
 * name, dtype and shape. The exporter drops those trailing inputs again.
 *
 * passlab's own ops (LayoutTransform) come in the domain "ai.passlab" and
 * map onto the registry; a value_info whose doc_string reads
 * "passlab.layout=NHWC" gives that value its layout (see onnx-export.c),
 * checked by the verifier's rules once shapes are inferred.
 */
#define G_LOG_DOMAIN "passlab"

#include "onnx-io.h"

#include <string.h>

#include "onnx.pb-c.h"
#include "shape.h"
#include "text-format.h"

#define ONNX_OPSET_MIN 7
#define ONNX_OPSET_MAX 17
#define PASSLAB_OPS_DOMAIN "ai.passlab"
#define LAYOUT_DOC_PREFIX "passlab.layout="

/* Per-model import state: what to tell the user once the model is loaded. */
typedef struct {
  const char *what;        /* file name, for messages */
  int         opset;
  GPtrArray  *unknown_ops; /* char*, each op name once */
  GPtrArray  *notes;       /* char*, attributes or bodies we could not keep */
} ImportCtx;

/* The graphs enclosing a nested graph, innermost first. */
typedef struct ImportScope {
  PlGraph                  *graph;
  const struct ImportScope *outer;
} ImportScope;

static PlGraph *graph_from_proto (ImportCtx *ctx, const Onnx__GraphProto *gp,
                                  const ImportScope *outer, GError **error);

static const char *
nonnull (const char *s)
{
  return s != NULL ? s : "";
}

/* Names of TensorProto.DataType codes, for messages about types we lack. */
static const char *
onnx_type_name (int code)
{
  static const char *const names[] = {
    "undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64",
    "string", "bool", "float16", "double", "uint32", "uint64", "complex64",
    "complex128", "bfloat16",
  };
  if (code >= 0 && code < (int) G_N_ELEMENTS (names))
    return names[code];
  return "unknown";
}

/* --- tensors --------------------------------------------------------------- */

static void
swap_bytes (void *data, int64_t numel, size_t esize)
{
  guint8 *p = data;
  for (int64_t i = 0; i < numel; i++, p += esize)
    for (size_t a = 0, b = esize - 1; a < b; a++, b--)
      {
        guint8 tmp = p[a];
        p[a] = p[b];
        p[b] = tmp;
      }
}

/* Which typed field holds a dtype's values, and how many it has. */
static size_t
typed_count (const Onnx__TensorProto *tp, PlDType dtype)
{
  switch (dtype)
    {
    case PL_DTYPE_F32: return tp->n_float_data;
    case PL_DTYPE_F64: return tp->n_double_data;
    case PL_DTYPE_I64: return tp->n_int64_data;
    case PL_DTYPE_U32:
    case PL_DTYPE_U64: return tp->n_uint64_data;
    default:           return tp->n_int32_data;
    }
}

static void
copy_typed (const Onnx__TensorProto *tp, PlTensor *t)
{
  int64_t n = t->numel;
  switch (t->dtype)
    {
    case PL_DTYPE_F32:
      memcpy (t->data, tp->float_data, (size_t) n * sizeof (float));
      break;
    case PL_DTYPE_F64:
      memcpy (t->data, tp->double_data, (size_t) n * sizeof (double));
      break;
    case PL_DTYPE_I64:
      memcpy (t->data, tp->int64_data, (size_t) n * sizeof (int64_t));
      break;
    case PL_DTYPE_U64:
      memcpy (t->data, tp->uint64_data, (size_t) n * sizeof (uint64_t));
      break;
    case PL_DTYPE_U32:
      for (int64_t i = 0; i < n; i++)
        ((uint32_t *) t->data)[i] = (uint32_t) tp->uint64_data[i];
      break;
    case PL_DTYPE_I32:
      memcpy (t->data, tp->int32_data, (size_t) n * sizeof (int32_t));
      break;
    case PL_DTYPE_I16:
      for (int64_t i = 0; i < n; i++)
        ((int16_t *) t->data)[i] = (int16_t) tp->int32_data[i];
      break;
    case PL_DTYPE_U16:
    case PL_DTYPE_F16:   /* int32_data holds the 16-bit patterns */
    case PL_DTYPE_BF16:
      for (int64_t i = 0; i < n; i++)
        ((uint16_t *) t->data)[i] = (uint16_t) tp->int32_data[i];
      break;
    case PL_DTYPE_I8:
      for (int64_t i = 0; i < n; i++)
        ((int8_t *) t->data)[i] = (int8_t) tp->int32_data[i];
      break;
    case PL_DTYPE_U8:
      for (int64_t i = 0; i < n; i++)
        ((uint8_t *) t->data)[i] = (uint8_t) tp->int32_data[i];
      break;
    case PL_DTYPE_BOOL:
      for (int64_t i = 0; i < n; i++)
        ((uint8_t *) t->data)[i] = tp->int32_data[i] != 0;
      break;
    default:
      g_assert_not_reached ();
    }
}

/* Converts a TensorProto. `what` describes it for messages ("initializer
 * 'w'"). Sizes are checked against the data the file holds before anything
 * is allocated, so a bogus shape cannot make us allocate terabytes. */
static PlTensor *
tensor_from_proto (const Onnx__TensorProto *tp, const char *what, GError **error)
{
  if ((tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
      || tp->n_external_data > 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                   "%s: data stored in an external file is not supported "
                   "(re-save the model with its weights inside)", what);
      return NULL;
    }
  if (tp->segment != NULL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                   "%s: segmented tensors are not supported", what);
      return NULL;
    }
  int code = tp->has_data_type ? tp->data_type : 0;
  PlDType dtype = pl_dtype_from_onnx (code);
  if (dtype == PL_DTYPE_UNDEFINED)
    {
      if (code == ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED)
        g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s has no data type", what);
      else
        g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                     "%s: %s tensors are not supported", what, onnx_type_name (code));
      return NULL;
    }
  if (tp->n_dims > PL_MAX_RANK)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                   "%s has rank %zu; at most %d is supported", what, tp->n_dims, PL_MAX_RANK);
      return NULL;
    }
  int64_t numel = 1;
  for (size_t i = 0; i < tp->n_dims; i++)
    {
      if (tp->dims[i] < 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s has negative dimension %" G_GINT64_FORMAT,
                       what, tp->dims[i]);
          return NULL;
        }
      /* Each dim on its own too: a zero dim would hide a huge one. */
      if (tp->dims[i] > PL_MAX_NUMEL || !pl_mul_overflow (numel, tp->dims[i], &numel))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_OVERFLOW,
                       "%s has more than %" G_GINT64_FORMAT " elements", what, (int64_t) PL_MAX_NUMEL);
          return NULL;
        }
    }

  size_t esize = pl_dtype_size (dtype);
  size_t nbytes = (size_t) numel * esize;
  size_t n_typed = typed_count (tp, dtype);
  bool use_raw = tp->has_raw_data && (tp->raw_data.len > 0 || n_typed == 0);
  if (use_raw && tp->raw_data.len != nbytes)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT,
                   "%s: raw_data has %zu bytes but %" G_GINT64_FORMAT " %s elements need %zu",
                   what, tp->raw_data.len, numel, pl_dtype_name (dtype), nbytes);
      return NULL;
    }
  if (!use_raw && n_typed != (size_t) numel)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT,
                   "%s holds %zu values but its shape has %" G_GINT64_FORMAT " elements",
                   what, n_typed, numel);
      return NULL;
    }

  int64_t dims[PL_MAX_RANK];
  for (size_t i = 0; i < tp->n_dims; i++)
    dims[i] = tp->dims[i];
  PlTensor *t = pl_tensor_new (dtype, (int) tp->n_dims, dims, error);
  if (t == NULL)
    {
      g_prefix_error (error, "%s: ", what);
      return NULL;
    }
  if (numel == 0)
    return t;
  if (use_raw)
    {
      memcpy (t->data, tp->raw_data.data, nbytes);  /* raw_data is little-endian */
      if (G_BYTE_ORDER == G_BIG_ENDIAN)
        swap_bytes (t->data, numel, esize);
      if (dtype == PL_DTYPE_BOOL)
        for (int64_t i = 0; i < numel; i++)
          ((uint8_t *) t->data)[i] = ((uint8_t *) t->data)[i] != 0;
    }
  else
    copy_typed (tp, t);
  return t;
}

static Onnx__TensorProto *
unpack_tensor (const guint8 *data, gsize len, const char *what, GError **error)
{
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack (NULL, len, data);
  if (tp == NULL)
    g_set_error (error, PL_ERROR, PL_ERROR_FORMAT,
                 "%s is not a valid ONNX TensorProto (truncated or corrupt)", what);
  return tp;
}

PlTensor *
pl_onnx_load_tensor (const char *path, char **name, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autofree char *data = NULL;
  gsize len = 0;
  g_autoptr (GError) local = NULL;
  if (!g_file_get_contents (path, &data, &len, &local))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s", local->message);
      return NULL;
    }
  Onnx__TensorProto *tp = unpack_tensor ((const guint8 *) data, len, path, error);
  if (tp == NULL)
    return NULL;
  g_autofree char *what = tp->name != NULL && tp->name[0] != '\0'
    ? g_strdup_printf ("%s: tensor '%s'", path, tp->name)
    : g_strdup_printf ("%s: tensor", path);
  PlTensor *t = tensor_from_proto (tp, what, error);
  if (t != NULL && name != NULL)
    *name = g_strdup (nonnull (tp->name));
  onnx__tensor_proto__free_unpacked (tp, NULL);
  return t;
}

/* --- types ----------------------------------------------------------------- */

static const char *
type_case_name (Onnx__TypeProto__ValueCase c)
{
  switch (c)
    {
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:      return "a sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:           return "a map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:      return "an optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: return "a sparse tensor";
    default:                                         return "of no type";
    }
}

/* Reads a ValueInfo's type. With allow_missing, a missing type or element
 * type gives UNDEFINED / unknown rank (nested graphs often omit them);
 * otherwise it is an error. */
static bool
type_from_proto (const Onnx__TypeProto *type, const char *what, bool allow_missing,
                 PlDType *dtype, PlShape *shape, GError **error)
{
  *dtype = PL_DTYPE_UNDEFINED;
  *shape = pl_shape_unknown ();
  if (type == NULL || type->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
    {
      if (allow_missing)
        return true;
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s has no type", what);
      return false;
    }
  if (type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || type->tensor_type == NULL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s is %s, which is not supported",
                   what, type_case_name (type->value_case));
      return false;
    }
  const Onnx__TypeProto__Tensor *tt = type->tensor_type;
  int code = tt->has_elem_type ? tt->elem_type : 0;
  if (code != 0)
    {
      *dtype = pl_dtype_from_onnx (code);
      if (*dtype == PL_DTYPE_UNDEFINED)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                       "%s has element type %s, which is not supported", what, onnx_type_name (code));
          return false;
        }
    }
  else if (!allow_missing)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s has no element type", what);
      return false;
    }

  const Onnx__TensorShapeProto *sp = tt->shape;
  if (sp == NULL)
    return true;
  if (sp->n_dim > PL_MAX_RANK)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "%s has rank %zu; at most %d is supported",
                   what, sp->n_dim, PL_MAX_RANK);
      return false;
    }
  shape->rank = (int) sp->n_dim;
  int64_t numel = 1;
  for (size_t i = 0; i < sp->n_dim; i++)
    {
      const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
      PlDim dim = pl_dim_unknown ();
      if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
        {
          if (d->dim_value < 0)
            {
              g_set_error (error, PL_ERROR, PL_ERROR_FORMAT,
                           "%s has negative dimension %" G_GINT64_FORMAT, what, d->dim_value);
              return false;
            }
          if (d->dim_value > PL_MAX_NUMEL || !pl_mul_overflow (numel, d->dim_value, &numel))
            {
              g_set_error (error, PL_ERROR, PL_ERROR_OVERFLOW,
                           "%s has more than %" G_GINT64_FORMAT " elements", what,
                           (int64_t) PL_MAX_NUMEL);
              return false;
            }
          dim = pl_dim_static (d->dim_value);
        }
      else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
               && d->dim_param != NULL && d->dim_param[0] != '\0')
        dim = pl_dim_symbol (d->dim_param);
      shape->dims[i] = dim;
    }
  return true;
}

/* Fills what inference left unknown from a declared type: the dtype, the
 * rank, and single dims. Inferred knowledge always wins. */
static void
merge_declared (PlValue *v, PlDType dtype, const PlShape *declared)
{
  if (v->dtype == PL_DTYPE_UNDEFINED)
    v->dtype = dtype;
  if (declared->rank == PL_RANK_UNKNOWN)
    return;
  if (v->shape.rank == PL_RANK_UNKNOWN)
    {
      v->shape = *declared;
      return;
    }
  if (v->shape.rank != declared->rank)
    return;
  for (int i = 0; i < declared->rank; i++)
    if (v->shape.dims[i].size < 0 && v->shape.dims[i].sym == NULL)
      v->shape.dims[i] = declared->dims[i];
}

/* --- attributes ------------------------------------------------------------ */

/* Old files (IR < 2) have no attribute type; it follows from the field set. */
static Onnx__AttributeProto__AttributeType
attr_type (const Onnx__AttributeProto *a)
{
  if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
    return a->type;
  if (a->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
  if (a->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  if (a->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  if (a->t != NULL) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
  if (a->g != NULL) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
  if (a->n_floats > 0) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
  if (a->n_ints > 0) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  if (a->n_strings > 0) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
  return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

/* Attribute strings are bytes; ours are UTF-8 C strings. An empty value
 * has no data (exporters omit the field), and g_strndup (NULL) is NULL. */
static char *
attr_string (ProtobufCBinaryData b)
{
  g_autofree char *s = g_strndup (b.len > 0 ? (const char *) b.data : "", b.len);
  return g_utf8_make_valid (s, -1);
}

static bool
attr_from_proto (ImportCtx *ctx, const ImportScope *scope, PlNode *node,
                 const Onnx__AttributeProto *a, GError **error)
{
  g_autofree char *desc = pl_node_describe (node);
  if (a->name == NULL || a->name[0] == '\0')
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s has an attribute without a name", desc);
      return false;
    }
  if (pl_node_attr (node, a->name) != NULL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s has attribute '%s' twice", desc, a->name);
      return false;
    }
  if (a->n_floats > G_MAXINT || a->n_ints > G_MAXINT || a->n_strings > G_MAXINT)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_OVERFLOW, "%s: attribute '%s' is too long", desc, a->name);
      return false;
    }

  Onnx__AttributeProto__AttributeType type = attr_type (a);
  switch (type)
    {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
      pl_node_set_attr_float (node, a->name, a->f);
      return true;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
      pl_node_set_attr_int (node, a->name, a->i);
      return true;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
      {
        g_autofree char *s = attr_string (a->s);
        pl_node_set_attr_string (node, a->name, s);
        return true;
      }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
      pl_node_set_attr_floats (node, a->name, a->floats, (int) a->n_floats);
      return true;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
      pl_node_set_attr_ints (node, a->name, a->ints, (int) a->n_ints);
      return true;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
      {
        g_autoptr (GPtrArray) v = g_ptr_array_new_with_free_func (g_free);
        for (size_t i = 0; i < a->n_strings; i++)
          g_ptr_array_add (v, attr_string (a->strings[i]));
        pl_node_set_attr_strings (node, a->name, (const char *const *) v->pdata, (int) v->len);
        return true;
      }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
      {
        if (a->t == NULL)
          {
            g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s: tensor attribute '%s' has no tensor",
                         desc, a->name);
            return false;
          }
        g_autofree char *what = g_strdup_printf ("%s: attribute '%s'", desc, a->name);
        g_autoptr (PlTensor) t = tensor_from_proto (a->t, what, error);
        if (t == NULL)
          return false;
        pl_node_set_attr_tensor (node, a->name, t);
        return true;
      }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
      {
        if (a->g == NULL)
          {
            g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s: graph attribute '%s' has no graph",
                         desc, a->name);
            return false;
          }
        g_autoptr (GError) local = NULL;
        PlGraph *body = graph_from_proto (ctx, a->g, scope, &local);
        if (body == NULL)
          {
            /* A malformed body is a malformed file; a body we cannot
             * represent (sequence types, ...) only costs the attribute. */
            if (!g_error_matches (local, PL_ERROR, PL_ERROR_UNSUPPORTED))
              {
                g_propagate_prefixed_error (error, g_steal_pointer (&local), "%s: attribute '%s': ",
                                            desc, a->name);
                return false;
              }
            g_ptr_array_add (ctx->notes, g_strdup_printf ("%s: graph attribute '%s' dropped (%s)",
                                                          desc, a->name, local->message));
            return true;
          }
        pl_node_set_attr_graph (node, a->name, body);
        return true;
      }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED:
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s: attribute '%s' has no value", desc, a->name);
      return false;
    default:
      /* SPARSE_TENSOR(S), TENSORS, GRAPHS, TYPE_PROTO(S): no standard op we
       * know uses them, and PlAttr has no slot for them. */
      g_ptr_array_add (ctx->notes, g_strdup_printf ("%s: attribute '%s' of type %d dropped",
                                                    desc, a->name, (int) type));
      return true;
    }
}

/* --- graphs ---------------------------------------------------------------- */

static PlValue *
scope_find (const ImportScope *scope, const char *name)
{
  for (; scope != NULL; scope = scope->outer)
    {
      PlValue *v = pl_graph_find_value (scope->graph, name);
      if (v != NULL)
        return v;
    }
  return NULL;
}

/* Looks a name up in g, then in the enclosing graphs; an outer value becomes
 * an extra input of g (see the comment at the top). */
static PlValue *
resolve_name (PlGraph *g, const ImportScope *outer, const char *name, GError **error)
{
  PlValue *v = pl_graph_find_value (g, name);
  if (v != NULL)
    return v;
  PlValue *ov = scope_find (outer, name);
  if (ov == NULL)
    return NULL;
  return pl_graph_add_input (g, name, ov->dtype, &ov->shape, error);
}

static void
note_unknown_op (ImportCtx *ctx, const char *op_type, const char *domain)
{
  g_autofree char *full = domain[0] != '\0' ? g_strdup_printf ("%s.%s", domain, op_type)
                                            : g_strdup (op_type);
  for (guint i = 0; i < ctx->unknown_ops->len; i++)
    if (strcmp (ctx->unknown_ops->pdata[i], full) == 0)
      return;
  g_ptr_array_add (ctx->unknown_ops, g_steal_pointer (&full));
}

/* Pass 1 for one node: creates it with its outputs (inputs still NULL) and
 * its attributes. */
static PlNode *
node_from_proto (ImportCtx *ctx, PlGraph *g, const ImportScope *scope, size_t index,
                 const Onnx__NodeProto *np, GError **error)
{
  if (np->op_type == NULL || np->op_type[0] == '\0')
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "node %zu ('%s') has no op_type", index,
                   nonnull (np->name));
      return NULL;
    }
  if (np->n_input > G_MAXINT16 || np->n_output > G_MAXINT16)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "node '%s' (%s) has too many inputs or outputs",
                   nonnull (np->name), np->op_type);
      return NULL;
    }
  const char *domain = nonnull (np->domain);
  if (strcmp (domain, "ai.onnx") == 0)
    domain = "";
  if (strcmp (domain, PASSLAB_OPS_DOMAIN) == 0 && pl_op_from_name (np->op_type, "") == PL_OP_LayoutTransform)
    domain = "";

  /* ONNX does not require node names to be unique; ours are. */
  const char *name = np->name != NULL && np->name[0] != '\0' ? np->name : NULL;
  g_autofree char *unique = NULL;
  if (name != NULL && pl_graph_find_node (g, name) != NULL)
    name = unique = pl_graph_unique_name (g, name);

  for (size_t i = 0; i < np->n_output; i++)
    {
      const char *out = nonnull (np->output[i]);
      if (out[0] != '\0' && pl_graph_find_value (g, out) != NULL)
        {
          g_autofree char *desc = name != NULL ? g_strdup_printf ("node '%s'", name)
                                               : g_strdup_printf ("node %zu", index);
          g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s (%s): value '%s' is defined more than once",
                       desc, np->op_type, out);
          return NULL;
        }
    }
  g_autofree const char **out_names = g_new0 (const char *, np->n_output + 1);
  for (size_t i = 0; i < np->n_output; i++)
    out_names[i] = nonnull (np->output[i]);
  g_autofree PlValue **no_inputs = g_new0 (PlValue *, np->n_input + 1);

  g_autoptr (GError) local = NULL;
  PlNode *node = pl_graph_add_node (g, np->op_type, domain, name, (int) np->n_input, no_inputs,
                                    (int) np->n_output, out_names, &local);
  if (node == NULL)
    {
      /* e.g. a node listing the same output twice: a malformed file */
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "node '%s' (%s): %s", nonnull (name),
                   np->op_type, local->message);
      return NULL;
    }
  if (node->op == PL_OP_OPAQUE)
    note_unknown_op (ctx, np->op_type, domain);

  ImportScope inner = { g, scope };
  for (size_t i = 0; i < np->n_attribute; i++)
    if (!attr_from_proto (ctx, &inner, node, np->attribute[i], error))
      return NULL;
  return node;
}

/* Pass 2 for one node: connects its inputs by name. */
static bool
connect_inputs (PlGraph *g, const ImportScope *outer, PlNode *node, const Onnx__NodeProto *np,
                GError **error)
{
  for (size_t i = 0; i < np->n_input; i++)
    {
      const char *in = nonnull (np->input[i]);
      if (in[0] == '\0')
        continue;  /* an omitted optional input */
      PlValue *v = resolve_name (g, outer, in, error);
      if (v == NULL)
        {
          g_autofree char *desc = pl_node_describe (node);
          if (error != NULL && *error != NULL)
            g_prefix_error (error, "%s: ", desc);
          else
            g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s: input '%s' is not defined", desc, in);
          return false;
        }
      pl_node_set_input (node, (int) i, v);
    }
  return true;
}

static bool
add_inputs_and_constants (PlGraph *g, const Onnx__GraphProto *gp, bool nested, GError **error)
{
  g_autoptr (GHashTable) inits = g_hash_table_new (g_str_hash, g_str_equal);
  for (size_t i = 0; i < gp->n_initializer; i++)
    {
      const char *name = gp->initializer[i]->name;
      if (name == NULL || name[0] == '\0')
        {
          g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "initializer %zu has no name", i);
          return false;
        }
      if (!g_hash_table_add (inits, (gpointer) name))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "initializer '%s' is defined more than once",
                       name);
          return false;
        }
    }
  if (gp->n_sparse_initializer > 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "sparse initializers are not supported");
      return false;
    }

  /* Graph inputs that have an initializer are constants (IR < 4 lists
   * every weight as an input). */
  for (size_t i = 0; i < gp->n_input; i++)
    {
      const Onnx__ValueInfoProto *vi = gp->input[i];
      if (vi->name == NULL || vi->name[0] == '\0')
        {
          g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "graph input %zu has no name", i);
          return false;
        }
      if (g_hash_table_contains (inits, vi->name))
        continue;
      g_autofree char *what = g_strdup_printf ("input '%s'", vi->name);
      PlDType dtype;
      PlShape shape;
      if (!type_from_proto (vi->type, what, nested, &dtype, &shape, error))
        return false;
      if (pl_graph_find_value (g, vi->name) != NULL)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "input '%s' is listed more than once",
                       vi->name);
          return false;
        }
      if (pl_graph_add_input (g, vi->name, dtype, &shape, error) == NULL)
        return false;
    }

  for (size_t i = 0; i < gp->n_initializer; i++)
    {
      const Onnx__TensorProto *tp = gp->initializer[i];
      g_autofree char *what = g_strdup_printf ("initializer '%s'", tp->name);
      g_autoptr (PlTensor) t = tensor_from_proto (tp, what, error);
      if (t == NULL || pl_graph_add_constant (g, tp->name, t, error) == NULL)
        return false;
    }
  return true;
}

/* Gives values the layouts their value_info records (after inference, so
 * the rank is known; a declared type fills what inference left unknown). */
static bool
apply_layouts (PlGraph *g, const Onnx__GraphProto *gp, GError **error)
{
  for (size_t i = 0; i < gp->n_value_info; i++)
    {
      const Onnx__ValueInfoProto *vi = gp->value_info[i];
      const char *doc = nonnull (vi->doc_string);
      if (!g_str_has_prefix (doc, LAYOUT_DOC_PREFIX))
        continue;
      PlValue *v = pl_graph_find_value (g, nonnull (vi->name));
      PlLayout layout;
      if (v == NULL)
        continue;  /* like any value_info of a name the graph lacks */
      if (!pl_layout_parse (doc + strlen (LAYOUT_DOC_PREFIX), &layout))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "value '%s' has an unknown layout '%s'", v->name,
                       doc + strlen (LAYOUT_DOC_PREFIX));
          return false;
        }
      PlDType dtype;
      PlShape shape;
      g_autofree char *what = g_strdup_printf ("value_info '%s'", v->name);
      if (type_from_proto (vi->type, what, true, &dtype, &shape, NULL))
        merge_declared (v, dtype, &shape);
      g_autoptr (GError) local = NULL;
      if (!pl_layout_check_value (layout, v, false, &local))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s", local->message);
          return false;
        }
      v->layout = layout;
    }
  return true;
}

/* Builds one graph (the model's or a nested one). Nested graphs get the
 * enclosing graphs as `outer`; they may leave types unknown, and a failure
 * of their shape inference is not an error (their outer-scope values are
 * typed only as far as the outer graph was when they were read). */
static PlGraph *
graph_from_proto (ImportCtx *ctx, const Onnx__GraphProto *gp, const ImportScope *outer,
                  GError **error)
{
  bool nested = outer != NULL;
  g_autoptr (PlGraph) g = pl_graph_new (gp->name != NULL && gp->name[0] != '\0' ? gp->name : "graph");
  g->opset = ctx->opset;

  if (!add_inputs_and_constants (g, gp, nested, error))
    return NULL;

  g_autofree PlNode **nodes = g_new0 (PlNode *, gp->n_node + 1);
  for (size_t i = 0; i < gp->n_node; i++)
    if ((nodes[i] = node_from_proto (ctx, g, outer, i, gp->node[i], error)) == NULL)
      return NULL;
  for (size_t i = 0; i < gp->n_node; i++)
    if (!connect_inputs (g, outer, nodes[i], gp->node[i], error))
      return NULL;

  g_autofree PlDType *out_dtypes = g_new0 (PlDType, gp->n_output + 1);
  g_autofree PlShape *out_shapes = g_new0 (PlShape, gp->n_output + 1);
  for (size_t i = 0; i < gp->n_output; i++)
    {
      const Onnx__ValueInfoProto *vi = gp->output[i];
      const char *name = nonnull (vi->name);
      g_autofree char *what = g_strdup_printf ("output '%s'", name);
      if (!type_from_proto (vi->type, what, true, &out_dtypes[i], &out_shapes[i], error))
        return NULL;
      PlValue *v = name[0] != '\0' ? resolve_name (g, outer, name, error) : NULL;
      if (v == NULL)
        {
          if (error == NULL || *error == NULL)
            g_set_error (error, PL_ERROR, PL_ERROR_FORMAT,
                         "graph output '%s' is not an input, initializer or node output", name);
          return NULL;
        }
      pl_graph_add_output (g, v);
    }

  g_autoptr (GError) local = NULL;
  if (!pl_graph_infer_shapes (g, &local))
    {
      if (!nested)
        {
          g_propagate_error (error, g_steal_pointer (&local));
          return NULL;
        }
      g_ptr_array_add (ctx->notes, g_strdup_printf ("shapes of nested graph '%s' left unknown (%s)",
                                                    g->name, local->message));
    }
  for (size_t i = 0; i < gp->n_output; i++)
    merge_declared (g->outputs->pdata[i], out_dtypes[i], &out_shapes[i]);
  if (!apply_layouts (g, gp, error))
    return NULL;
  return g_steal_pointer (&g);
}

/* --- models ---------------------------------------------------------------- */

/* protobuf-c unpacks nested messages recursively without a depth limit, so
 * a small file of graphs nested 10,000 deep overflows the stack. Before
 * unpacking, this walks the wire format without recursion and follows only
 * the fields through which ONNX messages nest without bound (graphs inside
 * attributes, types inside types); malformed data stops the walk and is
 * left to protobuf-c to reject. */
#define PB_MAX_NESTING 256

typedef enum {
  PB_OTHER, PB_MODEL, PB_TRAINING, PB_FUNCTION, PB_GRAPH, PB_NODE, PB_ATTR,
  PB_VALUE_INFO, PB_TYPE, PB_TYPE_ELEM /* Sequence, Optional */, PB_TYPE_MAP,
} PbKind;

/* Field numbers from onnx.proto. */
static PbKind
pb_child (PbKind kind, guint64 field)
{
  switch (kind)
    {
    case PB_MODEL:      return field == 7 ? PB_GRAPH : field == 20 ? PB_TRAINING
                             : field == 25 ? PB_FUNCTION : PB_OTHER;
    case PB_TRAINING:   return field == 1 || field == 2 ? PB_GRAPH : PB_OTHER;
    case PB_FUNCTION:   return field == 7 ? PB_NODE : PB_OTHER;
    case PB_GRAPH:      return field == 1 ? PB_NODE : field >= 11 && field <= 13 ? PB_VALUE_INFO
                             : PB_OTHER;
    case PB_NODE:       return field == 5 ? PB_ATTR : PB_OTHER;
    case PB_ATTR:       return field == 6 || field == 11 ? PB_GRAPH
                             : field == 14 || field == 15 ? PB_TYPE : PB_OTHER;
    case PB_VALUE_INFO: return field == 2 ? PB_TYPE : PB_OTHER;
    case PB_TYPE:       return field == 4 || field == 9 ? PB_TYPE_ELEM
                             : field == 5 ? PB_TYPE_MAP : PB_OTHER;
    case PB_TYPE_ELEM:  return field == 1 ? PB_TYPE : PB_OTHER;
    case PB_TYPE_MAP:   return field == 2 ? PB_TYPE : PB_OTHER;
    default:            return PB_OTHER;
    }
}

static bool
pb_varint (const guint8 *data, gsize end, gsize *pos, guint64 *v)
{
  *v = 0;
  for (int shift = 0; shift < 64 && *pos < end; shift += 7)
    {
      guint8 b = data[(*pos)++];
      *v |= (guint64) (b & 0x7f) << shift;
      if ((b & 0x80) == 0)
        return true;
    }
  return false;
}

static bool
check_nesting (const guint8 *data, gsize len, const char *what, GError **error)
{
  struct { PbKind kind; gsize end; } stack[PB_MAX_NESTING];
  int depth = 1;
  stack[0].kind = PB_MODEL;
  stack[0].end = len;
  gsize pos = 0;
  while (depth > 0)
    {
      gsize end = stack[depth - 1].end;
      if (pos >= end)
        {
          depth--;
          continue;
        }
      guint64 tag, n;
      if (!pb_varint (data, end, &pos, &tag))
        return true;
      switch (tag & 7)
        {
        case 0:
          if (!pb_varint (data, end, &pos, &n))
            return true;
          break;
        case 1:
        case 5:
          n = (tag & 7) == 1 ? 8 : 4;
          if (n > end - pos)
            return true;
          pos += n;
          break;
        case 2:
          if (!pb_varint (data, end, &pos, &n) || n > end - pos)
            return true;
          PbKind child = pb_child (stack[depth - 1].kind, tag >> 3);
          if (child == PB_OTHER)
            {
              pos += n;
              break;
            }
          if (depth == PB_MAX_NESTING)
            {
              g_set_error (error, PL_ERROR, PL_ERROR_FORMAT,
                           "%s: graphs or types are nested more than %d levels deep",
                           what, PB_MAX_NESTING);
              return false;
            }
          stack[depth].kind = child;
          stack[depth].end = pos + n;
          depth++;
          break;
        default:
          return true;  /* groups or garbage: protobuf-c decides */
        }
    }
  return true;
}

static int
model_opset (const Onnx__ModelProto *m, const char *what)
{
  int opset = 0;
  for (size_t i = 0; i < m->n_opset_import; i++)
    {
      const Onnx__OperatorSetIdProto *o = m->opset_import[i];
      const char *d = nonnull (o->domain);
      if ((d[0] == '\0' || strcmp (d, "ai.onnx") == 0) && o->has_version)
        opset = (int) CLAMP (o->version, 0, G_MAXINT);
    }
  /* 0: the model declares no default-domain opset (IR 2, or only custom
   * domains); nothing to warn about. */
  if (opset != 0 && (opset < ONNX_OPSET_MIN || opset > ONNX_OPSET_MAX))
    g_message ("%s: opset %d of the default domain; passlab knows opsets %d to %d "
               "(loading anyway, some ops may differ)", what, opset, ONNX_OPSET_MIN, ONNX_OPSET_MAX);
  return opset;
}

static char *
join_ptr_array (GPtrArray *a, const char *sep)
{
  g_ptr_array_add (a, NULL);
  char *s = g_strjoinv (sep, (char **) a->pdata);
  g_ptr_array_set_size (a, a->len - 1);
  return s;
}

PlGraph *
pl_onnx_load_from_data (const guint8 *data, gsize len, const char *what, GError **error)
{
  g_return_val_if_fail (data != NULL || len == 0, NULL);
  if (what == NULL)
    what = "<data>";
  pl_ops_init ();

  if (!check_nesting (data, len, what, error))
    return NULL;
  Onnx__ModelProto *m = onnx__model_proto__unpack (NULL, len, data);
  if (m == NULL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT,
                   "%s is not a valid ONNX model (truncated or corrupt protobuf)", what);
      return NULL;
    }
  if (m->graph == NULL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FORMAT, "%s: the model has no graph", what);
      onnx__model_proto__free_unpacked (m, NULL);
      return NULL;
    }

  ImportCtx ctx = {
    .what = what,
    .opset = model_opset (m, what),
    .unknown_ops = g_ptr_array_new_with_free_func (g_free),
    .notes = g_ptr_array_new_with_free_func (g_free),
  };
  PlGraph *g = graph_from_proto (&ctx, m->graph, NULL, error);
  onnx__model_proto__free_unpacked (m, NULL);
  if (g == NULL)
    g_prefix_error (error, "%s: ", what);
  else
    {
      if (ctx.unknown_ops->len > 0)
        {
          g_autofree char *names = join_ptr_array (ctx.unknown_ops, ", ");
          g_message ("%s: unknown ops: %s (shown, not executable)", what, names);
        }
      for (guint i = 0; i < ctx.notes->len; i++)
        g_message ("%s: %s", what, (const char *) ctx.notes->pdata[i]);
    }
  g_ptr_array_unref (ctx.unknown_ops);
  g_ptr_array_unref (ctx.notes);
  return g;
}

PlGraph *
pl_onnx_load (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autoptr (GError) local = NULL;
  g_autoptr (GMappedFile) file = g_mapped_file_new (path, FALSE, &local);
  if (file == NULL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s", local->message);
      return NULL;
    }
  g_autofree char *base = g_path_get_basename (path);
  return pl_onnx_load_from_data ((const guint8 *) g_mapped_file_get_contents (file),
                                 g_mapped_file_get_length (file), base, error);
}

PlGraph *
pl_graph_load (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  if (g_str_has_suffix (path, ".onnx"))
    return pl_onnx_load (path, error);
  if (g_str_has_suffix (path, ".graph"))
    return pl_text_load (path, error);

  /* Unknown extension: ONNX first; if that fails and the file is text,
   * the text parser's error is the useful one. */
  g_autoptr (GError) onnx_error = NULL;
  PlGraph *g = pl_onnx_load (path, &onnx_error);
  if (g != NULL)
    return g;
  if (g_error_matches (onnx_error, PL_ERROR, PL_ERROR_IO))
    {
      g_propagate_error (error, g_steal_pointer (&onnx_error));
      return NULL;
    }
  g_autofree char *text = NULL;
  gsize len = 0;
  if (g_file_get_contents (path, &text, &len, NULL) && g_utf8_validate (text, (gssize) len, NULL))
    return pl_text_load (path, error);
  g_propagate_error (error, g_steal_pointer (&onnx_error));
  return NULL;
}
