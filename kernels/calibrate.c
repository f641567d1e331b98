/* calibrate.c — see calibrate.h. */
#define G_LOG_DOMAIN "passlab"
#include "calibrate.h"
