// SPDX-License-Identifier: GPL-2.0
/*
 * The runtime test's power-off hook: prints the trace buffer to the
 * console with ftrace_dump() when the machine powers off, so that the
 * notifier events of the power-off path, which no task lives to read,
 * reach the console with their context flags.  It runs first among the
 * power-off handlers, before the firmware's, and cannot be unloaded.
 * ftrace_dump() turns tracing off for good: the handlers that run after
 * this one (the firmware's, which powers the machine off and does not
 * return) are not in the dump.
 */
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/reboot.h>

static int notifier_runtime_power_off(struct sys_off_data *data)
{
	pr_info("notifier_runtime: power-off events follow\n");
	ftrace_dump(DUMP_ALL);
	return NOTIFY_DONE;
}

static int __init notifier_runtime_init(void)
{
	return PTR_ERR_OR_ZERO(register_sys_off_handler(SYS_OFF_MODE_POWER_OFF,
							SYS_OFF_PRIO_FIRMWARE + 1,
							notifier_runtime_power_off,
							NULL));
}
module_init(notifier_runtime_init);

MODULE_DESCRIPTION("Dump the trace buffer when the machine powers off");
MODULE_LICENSE("GPL");
