/* SPDX-License-Identifier: GPL-2.0 */
/* kshim: everything is in kshim.h */
#include <kshim.h>
