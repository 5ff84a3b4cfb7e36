// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * C side of iw_cm_kunit.ko, the KUnit suite of the Rust iw_cm (kunit.rs):
 * the stress's module parameters and kernel threads, and the import of
 * iw_cm.ko's test-only interface (EXPORTED_FOR_KUNIT_TESTING).
 */
#include <linux/cpumask.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/nmi.h>
#include <linux/sched/task.h>
#include <linux/slab.h>

MODULE_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING");

/*
 * The KUnit concurrency stress (kunit/stress.rs, concurrency_stress): its
 * seed and size as module parameters, and kernel threads, which the Rust
 * kernel crate of 7.3 cannot start.
 *
 *   insmod iw_cm_kunit.ko stress_seed=0x...      replays a printed seed
 *   insmod iw_cm_kunit.ko stress_lifecycles=N    N lifecycles (0, default: skip)
 */
static unsigned long stress_seed;
module_param(stress_seed, ulong, 0444);
MODULE_PARM_DESC(stress_seed,
		 "KUnit concurrency stress: seed to replay (0: taken from ktime and printed)");
/*
 * 0 by default: the stress takes up to two minutes under TCG.  make check's
 * KUnit boot loads the module with stress_lifecycles=75000 (each an active
 * cm_id, or a listener and its children: about 106,000 cm_ids); kunit.sh
 * fails when it did not run or drove fewer than 100,000 cm_ids.
 */
static unsigned int stress_lifecycles;
module_param(stress_lifecycles, uint, 0444);
MODULE_PARM_DESC(stress_lifecycles,
		 "KUnit concurrency stress: lifecycles to run, each an active cm_id or a listener and its children (default 0: skipped, says so)");

struct iwcm_kthread {
	struct task_struct *task;
	struct completion done;
	int (*fn)(void *data);
	void *data;
	int ret;
};

u64 iwcm_c_stress_seed(void);
unsigned int iwcm_c_stress_lifecycles(void);
unsigned int iwcm_c_nr_online_cpus(void);
struct iwcm_kthread *iwcm_c_kthread_start(int (*fn)(void *), void *data,
					  unsigned int idx);
bool iwcm_c_kthread_wait(struct iwcm_kthread *k, unsigned int ms);
int iwcm_c_kthread_join(struct iwcm_kthread *k);
void iwcm_c_hung_task_reset(void);
bool iwcm_kunit_set_fail_nth(unsigned int n);
unsigned int iwcm_kunit_fail_nth(void);

/* The seed to use: the parameter, or one taken from the clock (never 0). */
u64 iwcm_c_stress_seed(void)
{
	return stress_seed ? stress_seed : ktime_get_ns() | 1;
}

unsigned int iwcm_c_stress_lifecycles(void)
{
	return stress_lifecycles;
}

unsigned int iwcm_c_nr_online_cpus(void)
{
	return num_online_cpus();
}

static int iwcm_kthread_fn(void *arg)
{
	struct iwcm_kthread *k = arg;

	k->ret = k->fn(k->data);
	/* All: iwcm_c_kthread_wait() and the join both wait for it. */
	complete_all(&k->done);
	return 0;
}

/*
 * Runs FN(DATA) on a new kernel thread "iwcm_stress/IDX", bound to the
 * IDX-th online CPU (not bound when there are fewer CPUs).  Returns the
 * handle for iwcm_c_kthread_wait() and iwcm_c_kthread_join(), or NULL.
 */
struct iwcm_kthread *iwcm_c_kthread_start(int (*fn)(void *), void *data,
					  unsigned int idx)
{
	struct iwcm_kthread *k = kzalloc(sizeof(*k), GFP_KERNEL);
	unsigned int cpu;

	if (!k)
		return NULL;
	init_completion(&k->done);
	k->fn = fn;
	k->data = data;
	k->task = kthread_create(iwcm_kthread_fn, k, "iwcm_stress/%u", idx);
	if (IS_ERR(k->task)) {
		kfree(k);
		return NULL;
	}
	/* For kthread_stop() after the function returned (the join). */
	get_task_struct(k->task);
	cpu = cpumask_nth(idx, cpu_online_mask);
	if (cpu < nr_cpu_ids)
		kthread_bind(k->task, cpu);
	wake_up_process(k->task);
	return k;
}

/* Whether K's function returned within MS milliseconds. */
bool iwcm_c_kthread_wait(struct iwcm_kthread *k, unsigned int ms)
{
	return wait_for_completion_timeout(&k->done, msecs_to_jiffies(ms)) != 0;
}

/*
 * Waits for K's function, then for its thread to exit (no code of this
 * module runs on it afterwards), frees K and returns the function's result.
 */
int iwcm_c_kthread_join(struct iwcm_kthread *k)
{
	int ret;

	wait_for_completion(&k->done);
	kthread_stop_put(k->task);
	ret = k->ret;
	kfree(k);
	return ret;
}

/*
 * The stress runs for longer than the test kernel's hung-task timeout
 * (30 s) while the KUnit runner (insmod) waits for it in D state.  Called
 * by the stress only while its lifecycles make progress; once they stop,
 * the detector reports the blocked tasks as usual.
 */
void iwcm_c_hung_task_reset(void)
{
	reset_hung_task_detector();
}

/*
 * The current task's fail_nth (Documentation/fault-injection/
 * fault-injection.rst, /proc/<pid>/fail-nth): the Nth fault point the task
 * reaches fails, iw_cm's fail_iw_cm included.  False (nothing set) without
 * CONFIG_FAULT_INJECTION.
 */
bool iwcm_kunit_set_fail_nth(unsigned int n)
{
#ifdef CONFIG_FAULT_INJECTION
	WRITE_ONCE(current->fail_nth, n);
	return true;
#else
	return false;
#endif
}

unsigned int iwcm_kunit_fail_nth(void)
{
#ifdef CONFIG_FAULT_INJECTION
	return READ_ONCE(current->fail_nth);
#else
	return 0;
#endif
}
