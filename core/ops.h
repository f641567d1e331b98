/* ops.h — the op registry: one entry per op with its category, arity, shape
 * inference and reference implementation.
 *
 * PL_OP_LIST is the single list of known ops (ONNX names). The enum and the
 * registry table are generated from it; each op family file (ops-*.c) fills
 * in the arity, inference and evaluation of its ops through a register
 * function, and pl_ops_init() checks that every op got an entry.
 */
#pragma once

#include "passlab-types.h"

G_BEGIN_DECLS

typedef enum {
  PL_CAT_ELEMENTWISE, /* out[i] depends on in[i] (after broadcasting) */
  PL_CAT_BROADCAST,   /* replicates data: Expand */
  PL_CAT_REDUCE,      /* reduces along axes, incl. softmax, norms, pooling, losses */
  PL_CAT_SHAPE,       /* moves or indexes data, or computes shapes: Reshape, Transpose, Gather, ... */
  PL_CAT_COMPUTE,     /* compute-intensive, goes to a library: MatMul, Gemm, Conv */
  PL_CAT_MEMORY,      /* memory management: swap out / in, compression, layout transforms */
  PL_CAT_CONTROL,     /* control flow with nested graphs (If, Loop, Scan): not executable */
  PL_CAT_FUSION,      /* a fusion node with a body */
  PL_CAT_OPAQUE,      /* an op we do not know: shown, not executable */
  PL_CAT_COUNT
} PlOpCategory;

/* X(name, category). name is the ONNX op_type. */
#define PL_OP_LIST(X) \
  /* elementwise unary */ \
  X (Abs, ELEMENTWISE) X (Neg, ELEMENTWISE) X (Exp, ELEMENTWISE) X (Log, ELEMENTWISE) \
  X (Sqrt, ELEMENTWISE) X (Reciprocal, ELEMENTWISE) X (Sigmoid, ELEMENTWISE) \
  X (Tanh, ELEMENTWISE) X (Relu, ELEMENTWISE) X (LeakyRelu, ELEMENTWISE) X (Elu, ELEMENTWISE) \
  X (Selu, ELEMENTWISE) X (Celu, ELEMENTWISE) X (Gelu, ELEMENTWISE) X (Erf, ELEMENTWISE) \
  X (Sin, ELEMENTWISE) X (Cos, ELEMENTWISE) X (Tan, ELEMENTWISE) X (Asin, ELEMENTWISE) \
  X (Acos, ELEMENTWISE) X (Atan, ELEMENTWISE) X (Sinh, ELEMENTWISE) X (Cosh, ELEMENTWISE) \
  X (Asinh, ELEMENTWISE) X (Acosh, ELEMENTWISE) X (Atanh, ELEMENTWISE) X (Floor, ELEMENTWISE) \
  X (Ceil, ELEMENTWISE) X (Round, ELEMENTWISE) X (Sign, ELEMENTWISE) X (Softplus, ELEMENTWISE) \
  X (Softsign, ELEMENTWISE) X (HardSigmoid, ELEMENTWISE) X (HardSwish, ELEMENTWISE) \
  X (ThresholdedRelu, ELEMENTWISE) X (Shrink, ELEMENTWISE) X (Mish, ELEMENTWISE) \
  X (Not, ELEMENTWISE) X (IsNaN, ELEMENTWISE) X (IsInf, ELEMENTWISE) X (Clip, ELEMENTWISE) \
  X (Cast, ELEMENTWISE) X (CastLike, ELEMENTWISE) X (Identity, ELEMENTWISE) \
  X (Dropout, ELEMENTWISE) X (Trilu, ELEMENTWISE) \
  /* elementwise binary and variadic, with broadcasting */ \
  X (Add, ELEMENTWISE) X (Sub, ELEMENTWISE) X (Mul, ELEMENTWISE) X (Div, ELEMENTWISE) \
  X (Pow, ELEMENTWISE) X (Mod, ELEMENTWISE) X (BitShift, ELEMENTWISE) X (Max, ELEMENTWISE) \
  X (Min, ELEMENTWISE) X (Sum, ELEMENTWISE) X (Mean, ELEMENTWISE) X (Equal, ELEMENTWISE) \
  X (Less, ELEMENTWISE) X (LessOrEqual, ELEMENTWISE) X (Greater, ELEMENTWISE) \
  X (GreaterOrEqual, ELEMENTWISE) X (And, ELEMENTWISE) X (Or, ELEMENTWISE) X (Xor, ELEMENTWISE) \
  X (Where, ELEMENTWISE) X (PRelu, ELEMENTWISE) X (BatchNormalization, ELEMENTWISE) \
  /* quantization: elementwise with per-tensor or per-axis parameters */ \
  X (QuantizeLinear, ELEMENTWISE) X (DequantizeLinear, ELEMENTWISE) \
  /* broadcast */ \
  X (Expand, BROADCAST) \
  /* reductions and ops built around them */ \
  X (ReduceSum, REDUCE) X (ReduceMean, REDUCE) X (ReduceMax, REDUCE) X (ReduceMin, REDUCE) \
  X (ReduceProd, REDUCE) X (ReduceL1, REDUCE) X (ReduceL2, REDUCE) X (ReduceLogSum, REDUCE) \
  X (ReduceLogSumExp, REDUCE) X (ReduceSumSquare, REDUCE) X (ArgMax, REDUCE) X (ArgMin, REDUCE) \
  X (Softmax, REDUCE) X (LogSoftmax, REDUCE) X (Hardmax, REDUCE) \
  X (LayerNormalization, REDUCE) X (InstanceNormalization, REDUCE) \
  X (MeanVarianceNormalization, REDUCE) X (LpNormalization, REDUCE) X (LRN, REDUCE) \
  X (CumSum, REDUCE) X (TopK, REDUCE) X (DynamicQuantizeLinear, REDUCE) \
  X (MaxPool, REDUCE) X (AveragePool, REDUCE) X (GlobalAveragePool, REDUCE) \
  X (GlobalMaxPool, REDUCE) X (LpPool, REDUCE) \
  X (NegativeLogLikelihoodLoss, REDUCE) X (SoftmaxCrossEntropyLoss, REDUCE) \
  /* data movement, indexing and shape computation */ \
  X (Reshape, SHAPE) X (Transpose, SHAPE) X (Squeeze, SHAPE) X (Unsqueeze, SHAPE) \
  X (Flatten, SHAPE) X (Concat, SHAPE) X (Slice, SHAPE) X (Split, SHAPE) X (Pad, SHAPE) \
  X (Tile, SHAPE) X (Gather, SHAPE) X (GatherElements, SHAPE) X (GatherND, SHAPE) \
  X (ScatterElements, SHAPE) X (Scatter, SHAPE) X (ScatterND, SHAPE) X (DepthToSpace, SHAPE) \
  X (SpaceToDepth, SHAPE) X (Resize, SHAPE) X (Upsample, SHAPE) X (Compress, SHAPE) X (NonZero, SHAPE) \
  X (OneHot, SHAPE) X (ReverseSequence, SHAPE) X (Shape, SHAPE) X (Size, SHAPE) \
  X (Constant, SHAPE) X (ConstantOfShape, SHAPE) X (Range, SHAPE) X (EyeLike, SHAPE) \
  /* compute-intensive */ \
  X (MatMul, COMPUTE) X (Gemm, COMPUTE) X (Conv, COMPUTE) X (ConvTranspose, COMPUTE) \
  X (Einsum, COMPUTE) X (MatMulInteger, COMPUTE) X (ConvInteger, COMPUTE) X (QLinearMatMul, COMPUTE) \
  X (QLinearConv, COMPUTE) \
  /* recurrent: compute, run by the reference */ \
  X (RNN, COMPUTE) X (GRU, COMPUTE) X (LSTM, COMPUTE) \
  /* linear algebra and Unique: reference only, the backends fall back */ \
  X (Det, COMPUTE) X (Unique, COMPUTE) \
  /* optimizers of the domain ai.onnx.preview.training: reference only */ \
  X (Adagrad, COMPUTE) X (Adam, COMPUTE) X (Momentum, COMPUTE) \
  /* detection and spatial transformers: reference only, the backends fall back */ \
  X (NonMaxSuppression, COMPUTE) X (RoiAlign, COMPUTE) X (GridSample, COMPUTE) X (MaxUnpool, COMPUTE) \
  /* signal processing: reference only, the backends fall back */ \
  X (DFT, COMPUTE) X (STFT, COMPUTE) X (HannWindow, COMPUTE) X (HammingWindow, COMPUTE) \
  X (BlackmanWindow, COMPUTE) X (MelWeightMatrix, COMPUTE) \
  /* control flow: loaded and shown, not executed */ \
  X (If, CONTROL) X (Loop, CONTROL) X (Scan, CONTROL) \
  /* passlab's own: a fusion node runs its body graph */ \
  X (Fusion, FUSION) \
  /* passlab's own memory ops (swap insertion): move or compress a tensor and back */ \
  X (SwapOut, MEMORY) X (SwapIn, MEMORY) X (CompressFp16, MEMORY) X (DecompressFp16, MEMORY) \
  X (LayoutTransform, MEMORY)

typedef enum {
  PL_OP_OPAQUE = 0,
#define PL_OP_ENUM_(name, cat) PL_OP_##name,
  PL_OP_LIST (PL_OP_ENUM_)
#undef PL_OP_ENUM_
  PL_OP_COUNT
} PlOp;

/* Shape inference: reads the node's input values (dtype, shape, and constant
 * data where an input is a constant, e.g. Reshape's target shape) and sets
 * every non-NULL output's dtype and shape. Dims it cannot know become unknown.
 * Errors say what is wrong; the caller prefixes the node's description. */
typedef bool (*PlInferFunc) (PlNode *node, GError **error);

/* Reference evaluation: inputs[i] is NULL for omitted optional inputs.
 * Allocates outputs[0..node->n_outputs) (those whose node->outputs[i] is
 * NULL may be left NULL). Computes in double (int64 for integers) and stores
 * in the output dtype. Must not keep references to inputs it does not return. */
typedef bool (*PlEvalFunc) (const PlNode *node, PlTensor *const *inputs,
                            PlTensor **outputs, GError **error);

struct _PlOpInfo {
  const char   *name;
  PlOpCategory  category;
  gint8         min_inputs, max_inputs;   /* max_inputs -1: variadic */
  gint8         min_outputs, max_outputs;
  PlInferFunc   infer;
  PlEvalFunc    eval;                     /* NULL: not executable */
  const char   *domain;                   /* "" for the default ONNX domain */
};

/* Fills the registry once; safe to call many times. Aborts if an op in
 * PL_OP_LIST has no registered entry (a programming error). */
void               pl_ops_init          (void);
const PlOpInfo    *pl_op_info           (PlOp op);
const char        *pl_op_name           (PlOp op);
/* The op of op_type in domain (NULL, "" and "ai.onnx": the default domain);
 * PL_OP_OPAQUE unless the op was registered under that domain. */
PlOp               pl_op_from_name      (const char *op_type, const char *domain);
const char        *pl_op_category_name  (PlOpCategory cat);  /* "elementwise", ... */

/* Used by the family files: one entry per op they implement. */
typedef struct {
  PlOp        op;
  gint8       min_inputs, max_inputs;
  gint8       min_outputs, max_outputs;
  PlInferFunc infer;
  PlEvalFunc  eval;
  const char *domain;   /* NULL: the default ONNX domain */
} PlOpEntry;

void pl_ops_register (const PlOpEntry *entries, int n_entries);

/* The family files. Each registers the ops of its section of PL_OP_LIST. */
void pl_ops_register_elementwise (void); /* ops-elementwise.c: unary, binary, variadic, Where, Cast, Clip, Trilu, BatchNormalization */
void pl_ops_register_reduce      (void); /* ops-reduce.c: Reduce*, Arg*, softmax family, norms, CumSum, TopK */
void pl_ops_register_nn          (void); /* ops-nn.c: MatMul, Gemm, Conv, ConvTranspose, Einsum, pooling, losses */
void pl_ops_register_shape       (void); /* ops-shape.c: data movement, indexing, shape computation, Expand */
void pl_ops_register_control     (void); /* ops.c: If/Loop/Scan (infer only, not executable), Fusion */
void pl_ops_register_memory      (void); /* ops-memory.c: SwapOut, SwapIn, CompressFp16, DecompressFp16, LayoutTransform */
void pl_ops_register_quant       (void); /* ops-quant.c: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
                                          * MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv */
void pl_ops_register_rnn         (void); /* ops-rnn.c: RNN, GRU, LSTM */
void pl_ops_register_linalg      (void); /* ops-linalg.c: Det, Unique */
void pl_ops_register_training    (void); /* ops-training.c: Adagrad, Adam, Momentum (ai.onnx.preview.training) */
void pl_ops_register_vision      (void); /* ops-vision.c: NonMaxSuppression, RoiAlign, GridSample, MaxUnpool */
void pl_ops_register_signal      (void); /* ops-signal.c: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow,
                                          * MelWeightMatrix */

/* ops-conv.c: the pads (n begins, then n ends) a Conv or ConvTranspose
 * node with static shapes resolves auto_pad and output_shape to, as shape
 * inference does (a ConvTranspose's end pad may be negative: zeros past the
 * full output). */
bool pl_conv_resolved_pads (const PlNode *node, int64_t *pads, GError **error);

G_END_DECLS
