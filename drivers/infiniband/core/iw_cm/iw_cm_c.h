/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The C helpers of the Rust iw_cm (defined in iw_cm_exports.c), declared
 * once: iw_cm_exports.c includes this header, and bindgen reads it for
 * this module's `bindings` (rust/rdma/rdma.mk, RDMA_BINDGEN_HEADER;
 * rust/rdma/bindgen_parameters allowlists iwcm_c_*).  Their safe wrappers
 * are in c_helpers.rs.
 */
#ifndef IW_CM_C_H
#define IW_CM_C_H

#include <linux/socket.h>
#include <linux/types.h>

struct seq_file;
struct workqueue_struct;

/*
 * The largest backlog a listener gets: iw_cm_listen() clamps a larger one
 * (the ULP's or net/iw_cm/default_backlog's) to it.  One event slot per
 * backlog entry is reserved at listen (Documentation/iw_cm.rst, "Other
 * differences").
 */
#define IWCM_MAX_BACKLOG 65536

/* net/iw_cm/default_backlog: the backlog of iw_cm_listen(id, 0). */
unsigned int iwcm_c_default_backlog(void);

/* The event delivery workqueue "iw_cm_wq" (NULL before iwcm_c_wq_alloc()). */
struct workqueue_struct *iwcm_c_wq(void);

/* The registrations of iw_cm_init() (iwcm.c): module init and exit only. */
int iwcm_c_wq_alloc(void);
void iwcm_c_wq_destroy(void);
int iwcm_c_sysctl_register(void);
void iwcm_c_sysctl_unregister(void);
void iwcm_c_nl_register(void);
void iwcm_c_nl_unregister(void);
void iwcm_c_fault_init(void);
void iwcm_c_fault_exit(void);

/* True when fail_iw_cm says this allocation of SIZE bytes must fail. */
bool iwcm_c_should_fail_alloc(size_t size);

/* try_module_get(THIS_MODULE) and module_put(THIS_MODULE). */
bool iwcm_c_module_get(void);
void iwcm_c_module_put(void);

/*
 * copy_from_kernel_nofault() of LEN bytes from SRC, an untrusted provider
 * pointer, into DST: 0, or -EFAULT for an unreadable (or first-page) SRC.
 */
int iwcm_c_copy_pdata(void *dst, const void *src, size_t len);

/* snprintf(buf, len, "%ps", fn). */
int iwcm_c_format_symbol(char *buf, size_t len, const void *fn);

/* snprintf(buf, len, "%pISpc", a), or "-" for an address of no IP family. */
int iwcm_c_format_addr(char *buf, size_t len, const struct sockaddr_storage *a);

/*
 * The table of live cm_ids (an allocating XArray, cm_id/table.rs): reserve
 * a number (GFP_KERNEL with MAY_SLEEP, in process context; else
 * GFP_NOWAIT | __GFP_NOWARN, anywhere), publish a cm_id at it (its
 * creation sequence number written to *SEQ under the lock first), erase
 * it (a reservation too; the last number of the allocation cursor's leaf
 * stays reserved, unused, to keep the leaf); mark a cm_id whose delivery
 * is in a ULP handler.  Any context but a reservation that may sleep.
 */
int iwcm_c_ids_reserve(u32 *id, bool may_sleep);
void iwcm_c_ids_publish(u32 id, const void *entry, u64 *seq);
void iwcm_c_ids_erase(u32 id);
/* Module exit, no cm_id left: erases the number kept for its leaf. */
void iwcm_c_ids_exit(void);
void iwcm_c_ids_set_running(u32 id, bool running);
/* The table's lock, interrupts saved: take, release. */
unsigned long iwcm_c_ids_lock(void);
void iwcm_c_ids_unlock(unsigned long flags);
/*
 * With the lock held: the first cm_id published at a number >= *INDEX
 * (marked running, with RUNNING), its number in *INDEX; NULL if none.
 */
const void *iwcm_c_ids_find(unsigned long *index, bool running);
/* With the lock held: the cm_ids published, and the next sequence number. */
void iwcm_c_ids_state(unsigned long *count, u64 *next_seq);

/* debugfs iw_cm/ (count and cm_ids): create, remove. */
void iwcm_c_debugfs_init(void);
void iwcm_c_debugfs_exit(void);

/*
 * A read of iw_cm/cm_ids (the seq_file's private data): the count line
 * gave the number of cm_ids published at its time; the read lists none
 * published after it (sequence numbers from END_SEQ on).
 */
struct iwcm_table_read {
	u64 end_seq;
};

/* The stuck-handler watch: rate limit (10 lines per 5 s), arm, cancel, report. */
bool iwcm_c_stuck_ratelimit(void);
void iwcm_c_stuck_arm(void);
void iwcm_c_stuck_exit(void);
void iwcm_c_report_stuck(u64 id, const char *state, const char *event,
			 const void *handler, const char *dev, u64 ms, bool done);

/* In Rust (cm_id/table.rs): the watch's scan. */
bool iwcm_stuck_scan(unsigned int threshold_ms);

/*
 * In Rust (cm_id/table.rs): the seq_file iterator of iw_cm/cm_ids.  An
 * iterator value is one line, the count and header or a copy of one
 * cm_id's row; next() reuses it, or frees it and returns NULL at the end;
 * stop() frees one that is left.  start() returns ERR_PTR(-ENOMEM) when
 * it cannot allocate one.
 */
void *iwcm_table_start(struct iwcm_table_read *r, long long *pos);
void *iwcm_table_next(struct iwcm_table_read *r, void *v, long long *pos);
void iwcm_table_stop(void *v);
int iwcm_table_show(struct seq_file *m, void *v);

/* In Rust (cm_id.rs): the number of live cm_ids (debugfs iw_cm/count) and
 * of provider faults seen (debugfs iw_cm/provider_faults). */
size_t iwcm_live_count(void);
size_t iwcm_provider_fault_count(void);

#endif /* IW_CM_C_H */
