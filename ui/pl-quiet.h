/* pl-quiet.h — a window held still while a worker thread times kernels.
 *
 * Drawing a frame costs CPU time, and with software rendering (Xvfb, a
 * machine without a GPU: GL through llvmpipe, which spreads a frame over
 * threads of its own) a lot of it: on 2 cores a strided 1x1 conv timed at
 * 20 ms from the run panel when its timing overlapped the window's first
 * frames, and at 10.7 ms when it started 2 s later (the CLI: 11-12 ms).
 * So a worker that measures first waits until the window has drawn nothing
 * for a while, and counts the frames drawn while it measured, which the
 * panel then reports with the figures.
 *
 * Threads: new, frames and free on the main thread (free also disconnects
 * from the frame clock); wait and end on the worker, between them the
 * timing. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* The window drew nothing for this long: it is quiet. */
#define PL_QUIET_MS 200
/* A window that keeps drawing (an animation) is waited for this long at most. */
#define PL_QUIET_MAX_MS 2000

typedef struct _PlQuiet PlQuiet;

/* Watches the frames of widget's window. A widget in no window, or in one
 * not realized (no frame clock): nothing to wait for, no frames. */
PlQuiet *pl_quiet_new    (GtkWidget *widget);
void     pl_quiet_free   (PlQuiet *q);
/* Worker: blocks until the window has drawn no frame for PL_QUIET_MS
 * (PL_QUIET_MAX_MS at most, or until cancelled), then starts counting. */
void     pl_quiet_wait   (PlQuiet *q, GCancellable *cancellable);
/* Worker: stops counting (the timing is over). */
void     pl_quiet_end    (PlQuiet *q);
/* The frames drawn between wait and end; -1 before end. */
int      pl_quiet_frames (PlQuiet *q);
/* How long the wait took, ms. */
double   pl_quiet_waited_ms (PlQuiet *q);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlQuiet, pl_quiet_free)

G_END_DECLS
