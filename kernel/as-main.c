// SPDX-License-Identifier: GPL-2.0
/*
 * Registers the two elevators built on the anticipation core:
 * "anticipatory" (Linux 2.6.20 AS, alias "as") and "wpcas" (AS with the
 * WPCAS paper's process classification and service-time evaluation).
 *
 * One module: both share every line of the core (as-core.c), so loading
 * one module gives both, and neither can be unloaded while a queue uses
 * either (selecting an elevator pins its module).
 *
 * Copyright (C) 2026 the iolab authors
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "as-iosched.h"

static struct as_elevator as_elv_anticipatory = {
	.type = {
		.ops			= AS_MQ_OPS,
		.icq_size		= sizeof(struct as_icq),
		.icq_align		= __alignof__(struct as_icq),
		.elevator_name		= "anticipatory",
		.elevator_alias		= "as",
		.elevator_owner		= THIS_MODULE,
	},
	.policy = &as_policy_as,
};

static struct as_elevator as_elv_wpcas = {
	.type = {
		.ops			= AS_MQ_OPS,
		.icq_size		= sizeof(struct as_icq),
		.icq_align		= __alignof__(struct as_icq),
		.elevator_name		= "wpcas",
		.elevator_owner		= THIS_MODULE,
	},
	.policy = &as_policy_wpcas,
};

static struct as_elevator *as_elevators[] = {
	&as_elv_anticipatory,
	&as_elv_wpcas,
};

static void as_iosched_unregister(int n)
{
	while (n-- > 0) {
		elv_unregister(&as_elevators[n]->type);
		kfree(as_elevators[n]->type.elevator_attrs);
		as_elevators[n]->type.elevator_attrs = NULL;
	}
}

/* Each elevator's files: the core's, then its policy's (as-sysfs.c). */
static int __init as_iosched_init(void)
{
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(as_elevators); i++) {
		struct as_elevator *ase = as_elevators[i];

		ase->type.elevator_attrs = as_sysfs_attrs(ase->policy);
		ret = ase->type.elevator_attrs ? elv_register(&ase->type) :
						 -ENOMEM;
		if (ret) {
			kfree(ase->type.elevator_attrs);
			ase->type.elevator_attrs = NULL;
			as_iosched_unregister(i);
			return ret;
		}
	}
	return 0;
}

static void __exit as_iosched_exit(void)
{
	as_iosched_unregister(ARRAY_SIZE(as_elevators));
}

module_init(as_iosched_init);
module_exit(as_iosched_exit);

MODULE_ALIAS("anticipatory-iosched");
MODULE_ALIAS("as-iosched");
MODULE_ALIAS("wpcas-iosched");
MODULE_AUTHOR("the iolab authors");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Anticipatory (Linux 2.6.20 AS) and WPCAS I/O schedulers");
