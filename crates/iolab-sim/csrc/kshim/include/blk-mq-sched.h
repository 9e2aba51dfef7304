/* SPDX-License-Identifier: GPL-2.0 */
/* kshim: the private block/ headers; everything is in kshim.h */
#include <kshim.h>
