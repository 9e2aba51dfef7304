/* SPDX-License-Identifier: GPL-2.0 */
/* kshim: the block tracepoints (trace_block_rq_insert) are in kshim.h */
#include <kshim.h>
