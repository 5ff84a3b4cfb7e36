/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Tracepoints of the Rust iw_cm (tracefs events/iw_cm/), called from Rust
 * through the rust_do_trace_* helpers (trace.rs).  "id" is the
 * cm_id's number in debugfs iw_cm/cm_ids, never a kernel address.  The
 * event types are enum iw_cm_event_type.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM iw_cm

#if !defined(_TRACE_IW_CM_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_IW_CM_H

#include <linux/tracepoint.h>
#include <rdma/iw_cm.h>

#define show_iw_cm_event(t)						\
	__print_symbolic(t,						\
		{ IW_CM_EVENT_CONNECT_REQUEST, "CONNECT_REQUEST" },	\
		{ IW_CM_EVENT_CONNECT_REPLY, "CONNECT_REPLY" },		\
		{ IW_CM_EVENT_ESTABLISHED, "ESTABLISHED" },		\
		{ IW_CM_EVENT_DISCONNECT, "DISCONNECT" },		\
		{ IW_CM_EVENT_CLOSE, "CLOSE" })

DECLARE_EVENT_CLASS(iw_cm_id_class,
	TP_PROTO(u64 id, const char *dev),
	TP_ARGS(id, dev),
	TP_STRUCT__entry(
		__field(u64, id)
		__string(dev, dev)
	),
	TP_fast_assign(
		__entry->id = id;
		__assign_str(dev);
	),
	TP_printk("id=%llu dev=%s", __entry->id, __get_str(dev))
);

DEFINE_EVENT(iw_cm_id_class, iw_cm_id_create,
	TP_PROTO(u64 id, const char *dev),
	TP_ARGS(id, dev));

DEFINE_EVENT(iw_cm_id_class, iw_cm_id_destroy,
	TP_PROTO(u64 id, const char *dev),
	TP_ARGS(id, dev));

TRACE_EVENT(iw_cm_event_queued,
	TP_PROTO(u64 id, int event, int status),
	TP_ARGS(id, event, status),
	TP_STRUCT__entry(
		__field(u64, id)
		__field(int, event)
		__field(int, status)
	),
	TP_fast_assign(
		__entry->id = id;
		__entry->event = event;
		__entry->status = status;
	),
	TP_printk("id=%llu event=%s status=%d", __entry->id,
		  show_iw_cm_event(__entry->event), __entry->status)
);

TRACE_EVENT(iw_cm_event_delivered,
	TP_PROTO(u64 id, int event, int status, int ret, u64 duration_ns),
	TP_ARGS(id, event, status, ret, duration_ns),
	TP_STRUCT__entry(
		__field(u64, id)
		__field(int, event)
		__field(int, status)
		__field(int, ret)
		__field(u64, duration_ns)
	),
	TP_fast_assign(
		__entry->id = id;
		__entry->event = event;
		__entry->status = status;
		__entry->ret = ret;
		__entry->duration_ns = duration_ns;
	),
	TP_printk("id=%llu event=%s status=%d ret=%d duration_us=%llu",
		  __entry->id, show_iw_cm_event(__entry->event),
		  __entry->status, __entry->ret, __entry->duration_ns / 1000)
);

TRACE_EVENT(iw_cm_qp_ref,
	TP_PROTO(u64 id, u32 qpn, bool taken),
	TP_ARGS(id, qpn, taken),
	TP_STRUCT__entry(
		__field(u64, id)
		__field(u32, qpn)
		__field(bool, taken)
	),
	TP_fast_assign(
		__entry->id = id;
		__entry->qpn = qpn;
		__entry->taken = taken;
	),
	TP_printk("id=%llu qpn=%u %s", __entry->id, __entry->qpn,
		  __entry->taken ? "taken" : "dropped")
);

TRACE_EVENT(iw_cm_provider_fault,
	TP_PROTO(const char *dev, const char *site),
	TP_ARGS(dev, site),
	TP_STRUCT__entry(
		__string(dev, dev)
		__string(site, site)
	),
	TP_fast_assign(
		__assign_str(dev);
		__assign_str(site);
	),
	TP_printk("dev=%s site=%s", __get_str(dev), __get_str(site))
);

#endif /* _TRACE_IW_CM_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE iw_cm
#include <trace/define_trace.h>
