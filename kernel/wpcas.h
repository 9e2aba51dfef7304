/* SPDX-License-Identifier: GPL-2.0 */
/*
 * WPCAS's tunables and their defaults (iolab DESIGN.md and the
 * simulator's WPCAS_TUNABLES), shared by the policy and its sysfs files.
 *
 * Copyright (C) 2026 the iolab authors
 */
#ifndef _WPCAS_H
#define _WPCAS_H

#include <linux/types.h>

/* Think times kept per process; the simulator accepts up to 4096. */
#define WPCAS_HIST_MAX		256
#define WPCAS_HIST_LEN		32
/* Width of the densest-window search, whole ms. */
#define WPCAS_WINDOW_MS		2
/* p_ab at or above which P = b, in thousandths (0.5). */
#define WPCAS_GAMMA_MILLI	500
/* Below this many finished anticipations a process is judged by AS. */
#define WPCAS_MIN_SAMPLES	4
/* Cap on P: the paper's [0, 20] ms think-time range. */
#define WPCAS_MAX_WAIT_MS	20
/*
 * p_s of a process with no finished anticipation, in thousandths: the
 * paper does not say; 0 (with min_samples 4) starts WPCAS as AS starts.
 */
#define WPCAS_PRIOR_PS_MILLI	0

/*
 * The seek curve STE uses, as iolab's two-piece SeekCurve (Ruemmler &
 * Wilkes): seek(d) = sqrt_a + sqrt_b * sqrt(d) for 0 < d < linear_cyl
 * cylinders, lin_a + lin_b * d beyond, with a cylinder of cyl_sectors
 * sectors. Defaults: the HP 97560 of iolab's preset (19 surfaces x 72
 * sectors per track; the WPCAS paper's equation (2): 3.24 + 0.400 sqrt(d)
 * ms for d <= 383, 8.00 + 0.008 d ms beyond).
 */
#define WPCAS_SEEK_CYL_SECTORS	(19 * 72)
#define WPCAS_SEEK_LINEAR_CYL	384
#define WPCAS_SEEK_SQRT_A_NS	3240000ULL
#define WPCAS_SEEK_SQRT_B_NS	400000ULL
#define WPCAS_SEEK_LIN_A_NS	8000000ULL
#define WPCAS_SEEK_LIN_B_PS	8000000ULL

struct wpcas_data {
	u64 hist_len;
	u64 window_ms;
	u32 gamma_milli;
	u32 prior_ps_milli;
	u64 min_samples;
	u64 max_wait_ns;
	u64 seek_cyl_sectors;
	u64 seek_linear_cyl;
	u64 seek_sqrt_a_ns;
	u64 seek_sqrt_b_ns;
	u64 seek_lin_a_ns;
	u64 seek_lin_b_ps;
};

#endif /* _WPCAS_H */
