/* ops-util.h — helpers shared by the op family files (ops-*.c): output
 * typing, attribute/axis checks, constant inputs, and broadcast indexing.
 * Implemented in ops-util.c. Not part of the public API. */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

/* Sets output i's dtype and shape (ignored when the slot is NULL). */
void      pl_set_output         (PlNode *node, int i, PlDType dtype, const PlShape *shape);
/* Input i's value, or NULL when omitted or out of range. */
PlValue  *pl_input              (const PlNode *node, int i);
/* Input i's constant data when it is a constant, else NULL. */
PlTensor *pl_input_constant     (const PlNode *node, int i);
/* Reads an integer constant input into a g_malloc'd array (*n elements).
 * False when the input is absent or not a constant. */
bool      pl_input_const_ints   (const PlNode *node, int i, int64_t **v, int *n);
/* Reads a tensor of integers (any int dtype) into a g_malloc'd array. */
int64_t  *pl_tensor_to_ints     (const PlTensor *t, int *n);

/* Maps axis in [-rank, rank) to [0, rank); error "axis 5 out of range for rank 3". */
bool      pl_normalize_axis     (int64_t axis, int rank, int *out, GError **error);
/* Fails with "input N must have a known rank" when rank is unknown. */
bool      pl_require_rank       (const PlNode *node, int input, GError **error);
/* Fails unless input's dtype is one of the allowed (terminated by PL_DTYPE_UNDEFINED). */
bool      pl_require_dtype      (const PlNode *node, int input, const PlDType *allowed, GError **error);

/* Row-major strides of dims (elements). */
void      pl_strides            (int rank, const int64_t *dims, int64_t *strides);
/* dims seen as [outer, n, inner] around axis (the ops that work along one axis). */
void      pl_split_at_axis      (int rank, const int64_t *dims, int axis, int64_t *outer, int64_t *n, int64_t *inner);
/* Strides for reading a tensor of (in_rank, in_dims) broadcast to
 * (out_rank, out_dims): right-aligned, 0 where the input dim is 1 or missing. */
void      pl_broadcast_strides  (int in_rank, const int64_t *in_dims, int out_rank,
                                 const int64_t *out_dims, int64_t *strides);
/* Offset of the element with row-major linear index `linear` in an
 * iteration space of (rank, dims) under the given strides. */
int64_t   pl_offset_of          (int64_t linear, int rank, const int64_t *dims,
                                 const int64_t *strides);
/* Broadcasts the dims of two tensors; false with a message when they do not. */
bool      pl_broadcast_dims     (int ra, const int64_t *a, int rb, const int64_t *b,
                                 int *rank, int64_t *out, GError **error);

/* A Slice that is a window of its input the kernels can index: static
 * input shape, constant starts, ends, axes and steps (a negative step reads
 * the axis backwards). Input element along axis k = start[k] + step[k] * output coordinate k
 * (after ONNX clamping; step 1 and start 0 on axes not sliced). False
 * otherwise. */
bool      pl_slice_static_window   (const PlNode *node, int64_t *start, int64_t *step);
/* A constant-mode Pad of a static input whose pads (and axes) and pad value
 * are constants: the elements added before and after each axis (negative:
 * cropped) and the value. False otherwise. */
bool      pl_pad_static_constant   (const PlNode *node, int64_t *begin, int64_t *end, double *fill);
typedef enum { PL_PAD_CONSTANT, PL_PAD_EDGE, PL_PAD_REFLECT, PL_PAD_WRAP } PlPadMode;
/* The input index that Pad of `mode` ("constant", "edge", "reflect",
 * "wrap") reads at padded coordinate i (i - begin, may lie outside [0, d))
 * along an axis of d; -1: the constant. reflect mirrors without repeating
 * the edge, like numpy (periodic for pads longer than the axis). */
int64_t   pl_pad_source_index      (const char *mode, int64_t i, int64_t d);
/* The same for a Pad of any mode: its mode too (*fill only for constant). */
bool      pl_pad_static            (const PlNode *node, int64_t *begin, int64_t *end, double *fill,
                                    PlPadMode *mode);
/* A nearest-mode Resize of a static input whose scales or sizes (and roi)
 * are constants and whose every axis copies input element b + (m o + o0) / q
 * to output coordinate o (an integer factor down or up, or none): those
 * numbers per axis. False when any of it is unknown or has another form. */
typedef struct {
  int64_t b, m, o, q;
} PlResizeAxis;
bool      pl_resize_nearest_form   (const PlNode *node, PlResizeAxis *axes);
/* A linear or cubic Resize of a static input with constant scales or sizes
 * (no antialias or tf_crop_and_resize; a linear one without
 * exclude_outside) whose every axis maps output coordinate o to source
 * coordinate x = (a o + b) / c (a >= 0, c >= 1, b any integer; a = c and
 * b = 0 where the axis is not resized): those numbers per axis. The
 * reference's taps are then, with q = floor ((a o + b - 1) / c) (ties to
 * the left) and r = (((a o + b - 1) mod c) + 1) / c in (0, 1]: linear q
 * and q + 1, weighted 1 - r and r; cubic q - 1 .. q + 2, weighted by the
 * cubic kernel at 1 + r, r, 1 - r and 2 - r; clamped into the input. False
 * when any of it is unknown. */
typedef struct {
  int64_t a, b, c;
} PlResizeSampleAxis;
bool      pl_resize_sample_form    (const PlNode *node, PlResizeSampleAxis *axes);

/* RoiAlign's attributes as its reference reads them (opset 16 changed the
 * default coordinate mode): false, with *error set, when it has others. */
typedef struct {
  bool    avg;            /* mode avg, else max */
  bool    half_pixel;     /* coordinate_transformation_mode half_pixel, else output_half_pixel */
  int64_t height, width;  /* output_height, output_width */
  int64_t sampling_ratio; /* samples per bin and axis; 0: adaptive (as many as the bin is pixels) */
  double  spatial_scale;
} PlRoiAlignAttrs;
bool      pl_roi_align_attrs       (const PlNode *node, PlRoiAlignAttrs *ra, GError **error);

/* A new output tensor; like pl_tensor_new. */
PlTensor *pl_out_new            (PlDType dtype, int rank, const int64_t *dims, GError **error);

G_END_DECLS
