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

struct workqueue_struct;

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

/* The stuck-handler watch: rate limit (10 lines per 5 s), arm, cancel, report. */
bool iwcm_c_stuck_ratelimit(void);
void iwcm_c_stuck_arm(void);
void iwcm_c_stuck_exit(void);
void iwcm_c_report_stuck(u64 id, const char *state, const char *event,
			 const void *handler, const char *dev, u64 ms, bool done);

/* In Rust (cm_id/table.rs): the watch's scan. */
bool iwcm_stuck_scan(unsigned int threshold_ms);

#endif /* IW_CM_C_H */
