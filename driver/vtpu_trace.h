/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

/*
 * Tracepoints of a job's life: submitted, started on a core, aborted by
 * the core's watchdog, done. Jobs are named as userspace knows them, by
 * the file's DRM client id (fdinfo's drm-client-id) and the job id
 * SUBMIT returned.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM vtpu

#if !defined(__VTPU_TRACE_H__) || defined(TRACE_HEADER_MULTI_READ)
#define __VTPU_TRACE_H__

#include <linux/tracepoint.h>

TRACE_EVENT(vtpu_job_submit,
	    TP_PROTO(unsigned int dev, u64 client, u64 job, u32 insns,
		     u32 bindings, bool uring),
	    TP_ARGS(dev, client, job, insns, bindings, uring),
	    TP_STRUCT__entry(__field(unsigned int, dev)
			     __field(u64, client)
			     __field(u64, job)
			     __field(u32, insns)
			     __field(u32, bindings)
			     __field(bool, uring)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->client = client;
			   __entry->job = job;
			   __entry->insns = insns;
			   __entry->bindings = bindings;
			   __entry->uring = uring;),
	    TP_printk("dev=%u client=%llu job=%llu insns=%u bindings=%u via=%s",
		      __entry->dev, __entry->client, __entry->job,
		      __entry->insns, __entry->bindings,
		      __entry->uring ? "io_uring" : "ioctl")
);

TRACE_EVENT(vtpu_job_run,
	    TP_PROTO(unsigned int dev, unsigned int core, u64 client, u64 job,
		     u64 wait_ns),
	    TP_ARGS(dev, core, client, job, wait_ns),
	    TP_STRUCT__entry(__field(unsigned int, dev)
			     __field(unsigned int, core)
			     __field(u64, client)
			     __field(u64, job)
			     __field(u64, wait_ns)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->core = core;
			   __entry->client = client;
			   __entry->job = job;
			   __entry->wait_ns = wait_ns;),
	    TP_printk("dev=%u core=%u client=%llu job=%llu queued_ns=%llu",
		      __entry->dev, __entry->core, __entry->client,
		      __entry->job, __entry->wait_ns)
);

TRACE_EVENT(vtpu_job_timeout,
	    TP_PROTO(unsigned int dev, unsigned int core, u64 client, u64 job,
		     u64 insns),
	    TP_ARGS(dev, core, client, job, insns),
	    TP_STRUCT__entry(__field(unsigned int, dev)
			     __field(unsigned int, core)
			     __field(u64, client)
			     __field(u64, job)
			     __field(u64, insns)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->core = core;
			   __entry->client = client;
			   __entry->job = job;
			   __entry->insns = insns;),
	    TP_printk("dev=%u core=%u client=%llu job=%llu insns=%llu",
		      __entry->dev, __entry->core, __entry->client,
		      __entry->job, __entry->insns)
);

TRACE_EVENT(vtpu_job_done,
	    TP_PROTO(unsigned int dev, unsigned int core, u64 client, u64 job,
		     int status, u64 run_ns, u64 insns),
	    TP_ARGS(dev, core, client, job, status, run_ns, insns),
	    TP_STRUCT__entry(__field(unsigned int, dev)
			     __field(unsigned int, core)
			     __field(u64, client)
			     __field(u64, job)
			     __field(int, status)
			     __field(u64, run_ns)
			     __field(u64, insns)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->core = core;
			   __entry->client = client;
			   __entry->job = job;
			   __entry->status = status;
			   __entry->run_ns = run_ns;
			   __entry->insns = insns;),
	    TP_printk("dev=%u core=%u client=%llu job=%llu status=%d run_ns=%llu insns=%llu",
		      __entry->dev, __entry->core, __entry->client,
		      __entry->job, __entry->status, __entry->run_ns,
		      __entry->insns)
);

#endif /* __VTPU_TRACE_H__ */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE vtpu_trace
#include <trace/define_trace.h>
