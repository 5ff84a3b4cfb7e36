// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * C side of the Rust iw_cm: symbol exports of the nine functions of
 * include/rdma/iw_cm.h (implemented in Rust, iw_cm_main.rs), and the tables
 * that are C data by nature: the net/iw_cm sysctl, the RDMA netlink callback
 * table of the kernel's port mapper client (iwpm_*.c), the workqueue
 * allocation (the Rust workqueue API cannot allocate one in 7.3), the
 * cm_id table's XArray (7.3's Rust XArray owns its entries and has no
 * allocating store, interrupt-safe lock or marks) and the debugfs files
 * (the Rust debugfs API has no seq_file iterator).
 *
 * Mirrors the init/exit and table parts of drivers/infiniband/core/iwcm.c.
 */
#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/module.h>
#include <linux/ratelimit.h>
#include <linux/seq_file.h>
#include <linux/sysctl.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <kunit/visibility.h>
#include <net/net_namespace.h>
#include <rdma/iw_cm.h>
#include <rdma/iw_portmap.h>
#include <rdma/rdma_netlink.h>

#include "iw_cm_c.h"

EXPORT_SYMBOL(iwcm_reject_msg);
EXPORT_SYMBOL(iw_create_cm_id);
EXPORT_SYMBOL(iw_destroy_cm_id);
EXPORT_SYMBOL(iw_cm_disconnect);
EXPORT_SYMBOL(iw_cm_listen);
EXPORT_SYMBOL(iw_cm_reject);
EXPORT_SYMBOL(iw_cm_accept);
EXPORT_SYMBOL(iw_cm_connect);
EXPORT_SYMBOL(iw_cm_init_qp_attr);

MODULE_ALIAS_RDMA_NETLINK(RDMA_NL_IWCM, 2);

static unsigned int default_backlog = 256;

static struct ctl_table_header *iwcm_ctl_table_hdr;
static struct ctl_table iwcm_ctl_table[] = {
	{
		.procname	= "default_backlog",
		.data		= &default_backlog,
		.maxlen		= sizeof(default_backlog),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		/* Any positive value: iw_cm_listen() clamps it. */
		.extra1		= SYSCTL_ONE,
		.extra2		= SYSCTL_INT_MAX,
	},
};

static struct rdma_nl_cbs iwcm_nl_cb_table[RDMA_NL_IWPM_NUM_OPS] = {
	[RDMA_NL_IWPM_REG_PID] = {.dump = iwpm_register_pid_cb},
	[RDMA_NL_IWPM_ADD_MAPPING] = {.dump = iwpm_add_mapping_cb},
	[RDMA_NL_IWPM_QUERY_MAPPING] = {.dump = iwpm_add_and_query_mapping_cb},
	[RDMA_NL_IWPM_REMOTE_INFO] = {.dump = iwpm_remote_info_cb},
	[RDMA_NL_IWPM_HANDLE_ERR] = {.dump = iwpm_mapping_error_cb},
	[RDMA_NL_IWPM_MAPINFO] = {.dump = iwpm_mapping_info_cb},
	[RDMA_NL_IWPM_MAPINFO_NUM] = {.dump = iwpm_ack_mapping_info_cb},
	[RDMA_NL_IWPM_HELLO] = {.dump = iwpm_hello_cb}
};

static struct workqueue_struct *iwcm_wq;

/* net/iw_cm/default_backlog: the backlog of iw_cm_listen(id, 0). */
unsigned int iwcm_c_default_backlog(void)
{
	return READ_ONCE(default_backlog);
}

/*
 * The event delivery workqueue: WQ_MEM_RECLAIM (nvme-rdma reconnects and
 * tears down queues under memory pressure) and NOT ordered, so that the
 * work items of different cm_ids run concurrently.  Each cm_id has one work
 * item, so a cm_id's events still run one at a time and in order.
 */
struct workqueue_struct *iwcm_c_wq(void)
{
	return iwcm_wq;
}

/*
 * Copies LEN bytes of a provider event's private data from SRC, an
 * untrusted pointer (a buggy provider hands iw_cm NULL + 4 when it has no
 * buffer): copy_from_kernel_nofault() returns an error for a user-space,
 * unmapped or otherwise unreadable address instead of oopsing.  Any
 * context (it does not sleep).  0 or -EFAULT.
 */
int iwcm_c_copy_pdata(void *dst, const void *src, size_t len)
{
	if ((unsigned long)src < PAGE_SIZE)
		return -EFAULT;
	return copy_from_kernel_nofault(dst, src, len) ? -EFAULT : 0;
}

/* "%ps" of FN (the ULP's handler) into BUF: snprintf()'s return. */
int iwcm_c_format_symbol(char *buf, size_t len, const void *fn)
{
	return snprintf(buf, len, "%ps", fn);
}

/* "%pISpc" (address:port, IPv6 compressed in brackets) of A, "-" when unset. */
int iwcm_c_format_addr(char *buf, size_t len, const struct sockaddr_storage *a)
{
	if (a->ss_family != AF_INET && a->ss_family != AF_INET6)
		return snprintf(buf, len, "-");
	return snprintf(buf, len, "%pISpc", a);
}

/*
 * The table of live cm_ids (cm_id/table.rs): an allocating XArray whose
 * index is the cm_id's number in debugfs iw_cm/cm_ids, the stuck-handler
 * report and the tracepoints.  Numbers are handed out cyclically from 1,
 * so one is not reused soon after its cm_id went.  An entry is the address
 * of a cm_id, not a reference: the cm_id's destructor erases it, first
 * thing, under the XArray's lock, so whoever holds that lock may read the
 * cm_id an entry points to.  XA_MARK_1 marks the cm_ids whose delivery is
 * in a ULP handler, the stuck-handler watch's set (XA_MARK_0 is the
 * allocator's free mark).
 *
 * The lock is taken with interrupts saved: a cm_id's last reference, and
 * so its destructor, may go in any context the provider calls from (siw's
 * softirq upcall, a caller with interrupts off).  Every critical section
 * is one XArray operation, or a reader's look at one cm_id: none grows
 * with the table.
 *
 * The keeper: numbers are cyclic, so with churn (create, destroy, create:
 * a ULP's retry loop, the scale benchmark) the cursor runs ahead into
 * leaves (64 numbers) where nothing else lives, and erasing the last entry
 * of a leaf frees it (and its parent, when that empties too) only for the
 * next reservation to allocate it again: a radix_tree_node allocation per
 * iw_create_cm_id, as costly as the cm_id's own (measured: twice iwcm.c's
 * create, three times at 65,536 live ids, where a parent went with the
 * leaf).  So the last entry of the cursor's leaf is not erased but left
 * reserved (a zero entry: no cm_id, invisible to readers and not counted,
 * its number simply not handed out again), which keeps the leaf; at most
 * one number is kept so, and it is erased once the cursor has left its
 * leaf (the next reservation elsewhere) or at module exit.
 */
static DEFINE_XARRAY_FLAGS(iwcm_ids, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
#define IWCM_ID_RUNNING XA_MARK_1
/*
 * Under the lock: the next number to try, the cm_ids published, and the
 * next creation sequence number (given at publication, never wraps: a
 * read lists the cm_ids published before its count line, table_window.rs).
 */
static u32 iwcm_ids_next = 1;
static unsigned long iwcm_ids_count;
static u64 iwcm_ids_seq;
/* Under the lock: the number kept reserved to keep its leaf (0: none). */
static u32 iwcm_ids_keeper;

/* Whether numbers A and B share a leaf of the XArray. */
static bool iwcm_ids_same_leaf(u32 a, u32 b)
{
	return (a >> XA_CHUNK_SHIFT) == (b >> XA_CHUNK_SHIFT);
}

/* With the lock held: erases the kept number, if any (its leaf may go). */
static void iwcm_ids_drop_keeper(void)
{
	lockdep_assert_held(&iwcm_ids.xa_lock);
	if (iwcm_ids_keeper)
		__xa_erase(&iwcm_ids, iwcm_ids_keeper);
	iwcm_ids_keeper = 0;
}

/* With the lock held, after a reservation of ID: the cursor left the keeper's leaf. */
static void iwcm_ids_reserved(u32 id)
{
	if (iwcm_ids_keeper && !iwcm_ids_same_leaf(iwcm_ids_keeper, id))
		iwcm_ids_drop_keeper();
}

int iwcm_c_ids_reserve(u32 *id, bool may_sleep)
{
	unsigned long flags;
	int ret;

	if (may_sleep) {
		/* May drop the lock (spin_unlock_irq) to allocate. */
		might_sleep();
		xa_lock_irq(&iwcm_ids);
		ret = __xa_alloc_cyclic(&iwcm_ids, id, NULL, XA_LIMIT(1, U32_MAX),
					&iwcm_ids_next, GFP_KERNEL);
		if (ret >= 0)
			iwcm_ids_reserved(*id);
		xa_unlock_irq(&iwcm_ids);
	} else {
		xa_lock_irqsave(&iwcm_ids, flags);
		ret = __xa_alloc_cyclic(&iwcm_ids, id, NULL, XA_LIMIT(1, U32_MAX),
					&iwcm_ids_next, GFP_NOWAIT | __GFP_NOWARN);
		if (ret >= 0)
			iwcm_ids_reserved(*id);
		xa_unlock_irqrestore(&iwcm_ids, flags);
	}
	return ret < 0 ? ret : 0;
}

void iwcm_c_ids_publish(u32 id, const void *entry, u64 *seq)
{
	unsigned long flags;
	void *old;

	xa_lock_irqsave(&iwcm_ids, flags);
	/* Readers read it under the lock, once they find the entry. */
	*seq = iwcm_ids_seq;
	/* The index is reserved: its slot exists, nothing is allocated. */
	old = __xa_store(&iwcm_ids, id, (void *)entry, GFP_NOWAIT);
	if (!xa_is_err(old)) {
		iwcm_ids_count++;
		iwcm_ids_seq++;
	}
	xa_unlock_irqrestore(&iwcm_ids, flags);
	WARN_ON_ONCE(xa_is_err(old) || old);
}

void iwcm_c_ids_erase(u32 id)
{
	XA_STATE(xas, &iwcm_ids, id);
	unsigned long flags;
	void *entry;

	xas_lock_irqsave(&xas, flags);
	entry = xas_load(&xas);
	if (!entry)
		goto out;
	/* A zero entry is a number only reserved: not counted. */
	if (!xa_is_zero(entry))
		iwcm_ids_count--;
	if (xas_top(xas.xa_node) || xas.xa_node->count != 1 ||
	    !iwcm_ids_same_leaf(id, iwcm_ids_next)) {
		xas_store(&xas, NULL);
		goto out;
	}
	/*
	 * The last entry of the cursor's leaf: kept as a zero entry, the
	 * keeper (see above; any previous one is in another leaf, which
	 * this one's count of 1 shows).
	 */
	xas_clear_mark(&xas, IWCM_ID_RUNNING);
	xas_store(&xas, XA_ZERO_ENTRY);
	iwcm_ids_drop_keeper();
	iwcm_ids_keeper = id;
out:
	xas_unlock_irqrestore(&xas, flags);
}

void iwcm_c_ids_exit(void)
{
	unsigned long flags;

	xa_lock_irqsave(&iwcm_ids, flags);
	iwcm_ids_drop_keeper();
	xa_unlock_irqrestore(&iwcm_ids, flags);
}

void iwcm_c_ids_set_running(u32 id, bool running)
{
	unsigned long flags;

	xa_lock_irqsave(&iwcm_ids, flags);
	if (running)
		__xa_set_mark(&iwcm_ids, id, IWCM_ID_RUNNING);
	else
		__xa_clear_mark(&iwcm_ids, id, IWCM_ID_RUNNING);
	xa_unlock_irqrestore(&iwcm_ids, flags);
}

unsigned long iwcm_c_ids_lock(void)
{
	unsigned long flags;

	xa_lock_irqsave(&iwcm_ids, flags);
	return flags;
}

void iwcm_c_ids_unlock(unsigned long flags)
{
	xa_unlock_irqrestore(&iwcm_ids, flags);
}

const void *iwcm_c_ids_find(unsigned long *index, bool running)
{
	lockdep_assert_held(&iwcm_ids.xa_lock);
	return xa_find(&iwcm_ids, index, U32_MAX,
		       running ? IWCM_ID_RUNNING : XA_PRESENT);
}

void iwcm_c_ids_state(unsigned long *count, u64 *next_seq)
{
	lockdep_assert_held(&iwcm_ids.xa_lock);
	*count = iwcm_ids_count;
	*next_seq = iwcm_ids_seq;
}

/*
 * debugfs iw_cm/: "cm_ids", the table, served by a seq_file iterator
 * (cm_id/table.rs) that looks at one cm_id at a time, and "count", the
 * number of live cm_ids.  The Rust debugfs API has no seq_file iterator.
 */
static void *iwcm_ids_seq_start(struct seq_file *m, loff_t *pos)
{
	return iwcm_table_start(m->private, pos);
}

static void *iwcm_ids_seq_next(struct seq_file *m, void *v, loff_t *pos)
{
	return iwcm_table_next(m->private, v, pos);
}

static void iwcm_ids_seq_stop(struct seq_file *m, void *v)
{
	if (!IS_ERR_OR_NULL(v))
		iwcm_table_stop(v);
}

static int iwcm_ids_seq_show(struct seq_file *m, void *v)
{
	return iwcm_table_show(m, v);
}

static const struct seq_operations iwcm_ids_sops = {
	.start	= iwcm_ids_seq_start,
	.next	= iwcm_ids_seq_next,
	.stop	= iwcm_ids_seq_stop,
	.show	= iwcm_ids_seq_show,
};

static int iwcm_ids_open(struct inode *inode, struct file *file)
{
	return seq_open_private(file, &iwcm_ids_sops, sizeof(struct iwcm_table_read));
}

static const struct file_operations iwcm_ids_fops = {
	.owner		= THIS_MODULE,
	.open		= iwcm_ids_open,
	.read		= seq_read,
	.llseek		= seq_lseek,
	.release	= seq_release_private,
};

static int iwcm_count_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%zu\n", iwcm_live_count());
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(iwcm_count);

static int iwcm_provider_faults_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%zu\n", iwcm_provider_fault_count());
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(iwcm_provider_faults);

static struct dentry *iwcm_debugfs_dir;

void iwcm_c_debugfs_init(void)
{
	iwcm_debugfs_dir = debugfs_create_dir("iw_cm", NULL);
	debugfs_create_file("count", 0444, iwcm_debugfs_dir, NULL, &iwcm_count_fops);
	debugfs_create_file("cm_ids", 0444, iwcm_debugfs_dir, NULL, &iwcm_ids_fops);
	debugfs_create_file("provider_faults", 0444, iwcm_debugfs_dir, NULL,
			    &iwcm_provider_faults_fops);
}

void iwcm_c_debugfs_exit(void)
{
	debugfs_remove_recursive(iwcm_debugfs_dir);
}

/*
 * The stuck-handler report (Documentation/iw_cm.rst, "Observing cm_ids"):
 * a delivery into a ULP handler that has run for stuck_handler_ms is named
 * once, and again when it returns.  The watch is a delayed work that runs
 * once a second while any delivery is in progress (iwcm_stuck_scan() visits
 * the cm_ids marked running in the table below); a delivery that finds it
 * idle arms it.  0 turns the report off.
 */
static unsigned int stuck_handler_ms = 10000;
module_param(stuck_handler_ms, uint, 0644);
MODULE_PARM_DESC(stuck_handler_ms,
		 "Report a ULP event handler that has run this long, in ms (default 10000; 0: off)");

static void iwcm_stuck_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(iwcm_stuck_work, iwcm_stuck_fn);
static DEFINE_RATELIMIT_STATE(iwcm_stuck_rs, 5 * HZ, 10);

/* Any context: whether the next stuck-handler line may be printed. */
bool iwcm_c_stuck_ratelimit(void)
{
	return __ratelimit(&iwcm_stuck_rs);
}

static void iwcm_stuck_fn(struct work_struct *work)
{
	unsigned int t = READ_ONCE(stuck_handler_ms);

	if (t && iwcm_stuck_scan(t))
		queue_delayed_work(system_dfl_wq, &iwcm_stuck_work, HZ);
}

/* Any context: queue_delayed_work() does nothing when it is pending. */
void iwcm_c_stuck_arm(void)
{
	if (READ_ONCE(stuck_handler_ms) && !delayed_work_pending(&iwcm_stuck_work))
		queue_delayed_work(system_dfl_wq, &iwcm_stuck_work, HZ);
}

/* Module exit: no cm_id (so no delivery) is left to arm it again. */
void iwcm_c_stuck_exit(void)
{
	cancel_delayed_work_sync(&iwcm_stuck_work);
}

/* Process context; the caller took the rate limit's decision. */
void iwcm_c_report_stuck(u64 id, const char *state, const char *event,
			 const void *handler, const char *dev, u64 ms, bool done)
{
	if (done)
		pr_info("iw_cm: cm_id %llu (%s, %s): handler %ps returned from %s after %llu ms\n",
			id, dev, state, handler, event, ms);
	else
		pr_warn("iw_cm: cm_id %llu (%s, %s): handler %ps has been handling %s for %llu ms\n",
			id, dev, state, handler, event, ms);
}

/*
 * Fault injection (Documentation/fault-injection/fault-injection.rst):
 * /sys/kernel/debug/fail_iw_cm/ with the usual probability, interval,
 * times, space, verbose and task-filter knobs.  It fails iw_cm's own
 * allocations (cm_id creation and the event slots that listen and connect
 * reserve; a CONNECT_REQUEST's child cm_id and its slots, in the
 * provider's upcall), whose -ENOMEM reaches the caller (the provider,
 * for the upcall): unlike failslab, it touches nothing outside the RDMA
 * stack.
 */
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
static DECLARE_FAULT_ATTR(iwcm_fail_alloc);
static struct dentry *iwcm_fail_dir;

void iwcm_c_fault_init(void)
{
	iwcm_fail_dir = fault_create_debugfs_attr("fail_iw_cm", NULL,
						  &iwcm_fail_alloc);
	if (IS_ERR(iwcm_fail_dir)) {
		pr_warn("iw_cm: no fail_iw_cm fault injection (%ld)\n",
			PTR_ERR(iwcm_fail_dir));
		iwcm_fail_dir = NULL;
	}
}

void iwcm_c_fault_exit(void)
{
	debugfs_remove_recursive(iwcm_fail_dir);
}

/* True when fail_iw_cm says this allocation of SIZE bytes must fail. */
bool iwcm_c_should_fail_alloc(size_t size)
{
	return should_fail(&iwcm_fail_alloc, size);
}
#else
void iwcm_c_fault_init(void) { }
void iwcm_c_fault_exit(void) { }
bool iwcm_c_should_fail_alloc(size_t size) { return false; }
#endif


/*
 * Every cm_id holds a reference on this module (cm_id.rs, ModulePin), so
 * rmmod answers "in use" while a provider can still call into it.
 */
bool iwcm_c_module_get(void)
{
	return try_module_get(THIS_MODULE);
}

void iwcm_c_module_put(void)
{
	module_put(THIS_MODULE);
}

/*
 * The registrations of iw_cm_init() in iwcm.c, one pair each: the module
 * state (iw_cm_main.rs) owns each as a field and undoes it when dropped,
 * so a failed init unwinds what was done, in reverse order.
 */
int iwcm_c_wq_alloc(void)
{
	iwcm_wq = alloc_workqueue("iw_cm_wq", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	return iwcm_wq ? 0 : -ENOMEM;
}

/* Every cm_id (and so every work item) is gone when this runs. */
void iwcm_c_wq_destroy(void)
{
	destroy_workqueue(iwcm_wq);
	iwcm_wq = NULL;
}

int iwcm_c_sysctl_register(void)
{
	iwcm_ctl_table_hdr = register_net_sysctl(&init_net, "net/iw_cm",
						 iwcm_ctl_table);
	if (!iwcm_ctl_table_hdr) {
		pr_err("iw_cm: couldn't register sysctl paths\n");
		return -ENOMEM;
	}
	return 0;
}

void iwcm_c_sysctl_unregister(void)
{
	unregister_net_sysctl_table(iwcm_ctl_table_hdr);
}

void iwcm_c_nl_register(void)
{
	rdma_nl_register(RDMA_NL_IWCM, iwcm_nl_cb_table);
}

void iwcm_c_nl_unregister(void)
{
	rdma_nl_unregister(RDMA_NL_IWCM);
}

/*
 * The test-only interface of iw_cm_kunit.ko (kunit_iface.rs), exported
 * into the EXPORTED_FOR_KUNIT_TESTING namespace when the kernel has KUnit
 * (EXPORT_SYMBOL_IF_KUNIT, as in-tree code under test does); nothing of
 * it runs unless the test module calls it.
 */
#if IS_ENABLED(CONFIG_KUNIT)
size_t iwcm_kunit_live_cm_ids(void);
size_t iwcm_kunit_provider_faults(void);
bool iwcm_kunit_settled(struct iw_cm_id *cm_id);
void iwcm_kunit_expect_faults(const void *connect_op, bool quiet);
ssize_t iwcm_kunit_table_line(struct iw_cm_id *cm_id, u8 *buf, size_t len);
size_t iwcm_kunit_table_read(struct iwcm_table_read *r, long long *pos, u32 *ids,
			     size_t cap, size_t *count);
size_t iwcm_kunit_running_ids(u32 *ids, size_t cap);
ssize_t iwcm_kunit_event_slots(u32 id);
size_t iwcm_kunit_queued_children_slots(struct iw_cm_id *cm_id, size_t *slots,
					size_t cap);
EXPORT_SYMBOL_IF_KUNIT(iwcm_kunit_event_slots);
EXPORT_SYMBOL_IF_KUNIT(iwcm_kunit_queued_children_slots);
EXPORT_SYMBOL_IF_KUNIT(iwcm_kunit_table_read);
EXPORT_SYMBOL_IF_KUNIT(iwcm_kunit_running_ids);
EXPORT_SYMBOL_IF_KUNIT(iwcm_kunit_table_line);
EXPORT_SYMBOL_IF_KUNIT(iwcm_kunit_live_cm_ids);
EXPORT_SYMBOL_IF_KUNIT(iwcm_kunit_provider_faults);
EXPORT_SYMBOL_IF_KUNIT(iwcm_kunit_settled);
EXPORT_SYMBOL_IF_KUNIT(iwcm_kunit_expect_faults);

/*
 * The numbers from FROM (at least 1) on reserved in the table with no cm_id at them
 * (zero entries: a reservation of a cm_id being created, or the keeper):
 * how many, the lowest and the highest into *FIRST and *LAST (0: none),
 * the keeper wherever it is into *KEEPER (0: none), and the bits of a
 * number that index a leaf (XA_CHUNK_SHIFT) into *LEAF_SHIFT.  Walks the
 * table with its lock held (interrupts off): for the KUnit suite only.
 */
size_t iwcm_kunit_ids_reserved(u32 from, u32 *first, u32 *last, u32 *keeper,
			       u32 *leaf_shift);
size_t iwcm_kunit_ids_reserved(u32 from, u32 *first, u32 *last, u32 *keeper,
			       u32 *leaf_shift)
{
	/*
	 * Not index 0: an XA_FLAGS_ALLOC1 array keeps a zero entry of its
	 * own there (XA_FLAGS_ZERO_BUSY), never a number of ours.
	 */
	XA_STATE(xas, &iwcm_ids, max(from, 1U));
	unsigned long flags;
	size_t n = 0;
	void *entry;

	*first = 0;
	*last = 0;
	*leaf_shift = XA_CHUNK_SHIFT;
	xas_lock_irqsave(&xas, flags);
	*keeper = iwcm_ids_keeper;
	/* Unlike xa_for_each, the xas walk returns zero entries. */
	xas_for_each(&xas, entry, U32_MAX) {
		if (xa_is_zero(entry)) {
			if (!n++)
				*first = xas.xa_index;
			*last = xas.xa_index;
		}
	}
	xas_unlock_irqrestore(&xas, flags);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(iwcm_kunit_ids_reserved);
#endif
