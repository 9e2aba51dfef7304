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

#include "as-iosched.h"

static struct as_elevator as_elv_anticipatory = {
	.type = {
		.ops			= AS_MQ_OPS,
		.icq_size		= sizeof(struct as_icq),
		.icq_align		= __alignof__(struct as_icq),
		.elevator_attrs		= as_core_attrs_as,
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
		.elevator_attrs		= as_attrs_wpcas,
		.elevator_name		= "wpcas",
		.elevator_owner		= THIS_MODULE,
	},
	.policy = &as_policy_wpcas,
};

static int __init as_iosched_init(void)
{
	int ret;

	as_sysfs_init();
	ret = elv_register(&as_elv_anticipatory.type);
	if (ret)
		return ret;
	ret = elv_register(&as_elv_wpcas.type);
	if (ret)
		elv_unregister(&as_elv_anticipatory.type);
	return ret;
}

static void __exit as_iosched_exit(void)
{
	elv_unregister(&as_elv_wpcas.type);
	elv_unregister(&as_elv_anticipatory.type);
}

module_init(as_iosched_init);
module_exit(as_iosched_exit);

MODULE_ALIAS("anticipatory-iosched");
MODULE_ALIAS("as-iosched");
MODULE_ALIAS("wpcas-iosched");
MODULE_AUTHOR("the iolab authors");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Anticipatory (Linux 2.6.20 AS) and WPCAS I/O schedulers");
