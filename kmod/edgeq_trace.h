/* SPDX-License-Identifier: GPL-2.0 */
/*
 * edgeq tracepoints. Every TP_PROTO takes only scalars, queue id first, so
 * BPF reaches them through raw_tp although a module built from headers has
 * no BTF (Documentation/userspace-api/edgeq.rst, "Tracepoints").
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM edgeq

#if !defined(EDGEQ_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define EDGEQ_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(edgeq_submit,
	TP_PROTO(u32 queue_id, u64 cookie, u32 op, u32 client_pid, u64 bytes),
	TP_ARGS(queue_id, cookie, op, client_pid, bytes),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(u32, op)
		__field(u64, cookie)
		__field(u32, client_pid)
		__field(u64, bytes)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->op = op;
		__entry->cookie = cookie;
		__entry->client_pid = client_pid;
		__entry->bytes = bytes;
	),
	TP_printk("queue=%u cookie=%llu op=%u pid=%u bytes=%llu",
		  __entry->queue_id, __entry->cookie, __entry->op,
		  __entry->client_pid, __entry->bytes)
);

TRACE_EVENT(edgeq_complete,
	TP_PROTO(u32 queue_id, u64 cookie, u32 op, s32 status, u64 busy_ns,
		 u64 latency_ns),
	TP_ARGS(queue_id, cookie, op, status, busy_ns, latency_ns),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(u32, op)
		__field(u64, cookie)
		__field(s32, status)
		__field(u64, busy_ns)
		__field(u64, latency_ns)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->op = op;
		__entry->cookie = cookie;
		__entry->status = status;
		__entry->busy_ns = busy_ns;
		__entry->latency_ns = latency_ns;
	),
	TP_printk("queue=%u cookie=%llu op=%u status=%d busy_ns=%llu latency_ns=%llu",
		  __entry->queue_id, __entry->cookie, __entry->op,
		  __entry->status, __entry->busy_ns, __entry->latency_ns)
);

TRACE_EVENT(edgeq_throttle,
	TP_PROTO(u32 queue_id, u32 old_state, u32 new_state, u32 max_inflight),
	TP_ARGS(queue_id, old_state, new_state, max_inflight),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(u32, old_state)
		__field(u32, new_state)
		__field(u32, max_inflight)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->old_state = old_state;
		__entry->new_state = new_state;
		__entry->max_inflight = max_inflight;
	),
	TP_printk("queue=%u state=%u->%u max_inflight=%u",
		  __entry->queue_id, __entry->old_state, __entry->new_state,
		  __entry->max_inflight)
);

TRACE_EVENT(edgeq_agent_attach,
	TP_PROTO(u32 queue_id, u32 agent_pid),
	TP_ARGS(queue_id, agent_pid),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(u32, agent_pid)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->agent_pid = agent_pid;
	),
	TP_printk("queue=%u pid=%u", __entry->queue_id, __entry->agent_pid)
);

TRACE_EVENT(edgeq_agent_detach,
	TP_PROTO(u32 queue_id, u32 agent_pid, u32 failed, u32 requeued),
	TP_ARGS(queue_id, agent_pid, failed, requeued),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(u32, agent_pid)
		__field(u32, failed)
		__field(u32, requeued)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->agent_pid = agent_pid;
		__entry->failed = failed;
		__entry->requeued = requeued;
	),
	TP_printk("queue=%u pid=%u failed=%u requeued=%u", __entry->queue_id,
		  __entry->agent_pid, __entry->failed, __entry->requeued)
);

TRACE_EVENT(edgeq_agent_timeout,
	TP_PROTO(u32 queue_id, u64 cookie, u32 op, u32 agent_pid),
	TP_ARGS(queue_id, cookie, op, agent_pid),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(u32, op)
		__field(u64, cookie)
		__field(u32, agent_pid)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->op = op;
		__entry->cookie = cookie;
		__entry->agent_pid = agent_pid;
	),
	TP_printk("queue=%u cookie=%llu op=%u agent_pid=%u",
		  __entry->queue_id, __entry->cookie, __entry->op,
		  __entry->agent_pid)
);

#endif /* EDGEQ_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE edgeq_trace
#include <trace/define_trace.h>
