/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * vtpu: emulated TPU cores as a DRM compute-accel device.
 *
 * This header is the contract between vtpu.ko and userspace. It follows
 * Documentation/process/botching-up-ioctls.rst: fixed-width types only,
 * explicit padding that must be zero, user pointers as __u64, flags that
 * must be known, ioctl numbers that are only ever appended. A struct may
 * grow at its end; the DRM core zero-extends what an older userspace
 * passes and truncates what an older userspace reads back.
 *
 * Errors common to every ioctl below:
 *  -EINVAL  unknown flag, nonzero Input padding or reserved field, unknown
 *           enum value
 *  -ENOENT  unknown GEM handle (handles are private to one open file)
 *  -EFAULT  bad user pointer
 * Output fields are ignored on input and always written. When a request
 * has several faults, which errno wins is unspecified.
 *
 * Buffers are destroyed with DRM_IOCTL_GEM_CLOSE, which fails with -EINVAL
 * (the DRM core's errno) for an unknown handle. They are mapped with
 * mmap(MAP_SHARED) on the file that created them, at the offset
 * DRM_IOCTL_VTPU_BO_INFO reports and for at most the buffer's size:
 * private mappings and lengths past the end fail with -EINVAL, another
 * file's offset with -EACCES. A buffer's memory stays allocated, and
 * counted, until its last handle, mapping and job are gone.
 */
#ifndef _UAPI_VTPU_ACCEL_H_
#define _UAPI_VTPU_ACCEL_H_

#include <linux/const.h>

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

/* uAPI version reported by DRM_IOCTL_VERSION (major.minor). */
/*
 * 1.1: at most DRM_VTPU_MAX_JOBS jobs per file; a failed in-sync cancels
 * the job; unused io_uring SQE fields must be zero; the out-syncobj's
 * fence keeps the module loaded.
 * 1.2: program objects (PROGRAM_CREATE, PROGRAM_DESTROY, SUBMIT with
 * DRM_VTPU_SUBMIT_PROGRAM), DRM_VTPU_FEATURE_PROGRAM.
 */
#define DRM_VTPU_UAPI_MAJOR		1
#define DRM_VTPU_UAPI_MINOR		2

#define DRM_VTPU_QUERY			0x00
#define DRM_VTPU_BO_CREATE		0x01
#define DRM_VTPU_BO_INFO		0x02
#define DRM_VTPU_SUBMIT			0x03
#define DRM_VTPU_JOB_WAIT		0x04
#define DRM_VTPU_PROGRAM_CREATE		0x05
#define DRM_VTPU_PROGRAM_DESTROY	0x06

#define DRM_IOCTL_VTPU_QUERY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VTPU_QUERY, struct drm_vtpu_query)
#define DRM_IOCTL_VTPU_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VTPU_BO_CREATE, struct drm_vtpu_bo_create)
#define DRM_IOCTL_VTPU_BO_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VTPU_BO_INFO, struct drm_vtpu_bo_info)
#define DRM_IOCTL_VTPU_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VTPU_SUBMIT, struct drm_vtpu_submit)
#define DRM_IOCTL_VTPU_JOB_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VTPU_JOB_WAIT, struct drm_vtpu_job_wait)
#define DRM_IOCTL_VTPU_PROGRAM_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VTPU_PROGRAM_CREATE, \
		 struct drm_vtpu_program_create)
#define DRM_IOCTL_VTPU_PROGRAM_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VTPU_PROGRAM_DESTROY, \
		struct drm_vtpu_program_destroy)

/**
 * enum drm_vtpu_placement - where the memory of a buffer object lives
 * @DRM_VTPU_PLACEMENT_AUTO: device memory (HBM) when a contiguous range
 *	is free, otherwise the shmem backing store. Only valid as a request.
 * @DRM_VTPU_PLACEMENT_HBM: device memory only; fails with -ENOSPC when
 *	HBM cannot hold the buffer.
 * @DRM_VTPU_PLACEMENT_HOST: shmem backing store (system memory).
 */
enum drm_vtpu_placement {
	DRM_VTPU_PLACEMENT_AUTO = 0,
	DRM_VTPU_PLACEMENT_HBM = 1,
	DRM_VTPU_PLACEMENT_HOST = 2,
};

/*
 * Feature bits reported in &drm_vtpu_query.features. Version 1.0 of the
 * uAPI always reports HBM, HOST, SUBMIT and SYNCOBJ; later versions add
 * bits, and userspace checks them before using what they name.
 */
#define DRM_VTPU_FEATURE_HBM		_BITULL(0)	/* HBM placement */
#define DRM_VTPU_FEATURE_HOST		_BITULL(1)	/* shmem placement */
#define DRM_VTPU_FEATURE_SUBMIT		_BITULL(2)	/* SUBMIT, JOB_WAIT */
#define DRM_VTPU_FEATURE_SYNCOBJ	_BITULL(3)	/* syncobjs, timelines */
#define DRM_VTPU_FEATURE_PROGRAM	_BITULL(4)	/* program objects (1.2) */

/* &drm_vtpu_bo_create.device_addr of a buffer without one (HOST). */
#define DRM_VTPU_NO_DEVICE_ADDR		(~0ULL)

/**
 * struct drm_vtpu_query - describe the device behind this file
 *
 * Every field but @flags is Output. Memory figures are a snapshot: other
 * files may allocate or free at any time.
 */
struct drm_vtpu_query {
	/** @flags: Input. Must be zero. */
	__u32 flags;
	/** @pad: Input. Must be zero. */
	__u32 pad;

	/** @device_index: Output. Index of this device, 0..@device_count-1. */
	__u32 device_index;
	/** @device_count: Output. Number of vtpu devices in the system. */
	__u32 device_count;
	/** @core_count: Output. Emulated TPU cores on this device. */
	__u32 core_count;
	/** @isa_version: Output. Version of the instruction set executed. */
	__u32 isa_version;
	/** @vmem_size: Output. Bytes of vector memory (VMEM) per core. */
	__u64 vmem_size;

	/** @hbm_total: Output. Bytes of device memory (HBM). */
	__u64 hbm_total;
	/** @hbm_free: Output. Bytes of HBM not allocated to any buffer. */
	__u64 hbm_free;
	/**
	 * @hbm_largest_free: Output. Largest contiguous free HBM range in
	 * bytes: the largest HBM buffer that can be created right now.
	 */
	__u64 hbm_largest_free;
	/**
	 * @host_bytes: Output. Bytes of backing-store (HOST) buffers of the
	 * whole device, every file's.
	 */
	__u64 host_bytes;
	/**
	 * @max_bo_size: Output. Largest size DRM_IOCTL_VTPU_BO_CREATE
	 * accepts, for any placement: a multiple of the page size, at least
	 * @hbm_total.
	 */
	__u64 max_bo_size;

	/** @timestamp_unit_ns: Output. Nanoseconds per device timestamp tick. */
	__u32 timestamp_unit_ns;
	/** @pad2: Output. Zero. */
	__u32 pad2;
	/** @features: Output. DRM_VTPU_FEATURE_* bits. */
	__u64 features;
};

/**
 * struct drm_vtpu_bo_create - create a buffer object
 *
 * The buffer's memory reads as zeros, whichever placement it gets. Sizes
 * are rounded up to the page size. Destroy it with DRM_IOCTL_GEM_CLOSE.
 *
 * Errors: -EINVAL @size is 0, unknown @placement, nonzero @flags;
 * -E2BIG @size exceeds &drm_vtpu_query.max_bo_size; -ENOSPC placement HBM
 * and no contiguous HBM range of @size is free; -ENOMEM out of memory.
 */
struct drm_vtpu_bo_create {
	/** @size: Input. Size in bytes, 1..max_bo_size. */
	__u64 size;
	/** @placement: Input. One of &enum drm_vtpu_placement. */
	__u32 placement;
	/** @flags: Input. Must be zero. */
	__u32 flags;
	/** @handle: Output. GEM handle, valid in this file only. */
	__u32 handle;
	/** @placed: Output. HBM or HOST: where the buffer really lives. */
	__u32 placed;
	/**
	 * @device_addr: Output. For HBM, the byte offset of the buffer in
	 * the device's HBM; DRM_VTPU_NO_DEVICE_ADDR for HOST.
	 */
	__u64 device_addr;
};

/**
 * struct drm_vtpu_bo_info - describe a buffer object
 *
 * Errors: -EINVAL nonzero @flags; -ENOENT unknown @handle.
 */
struct drm_vtpu_bo_info {
	/** @handle: Input. GEM handle in this file. */
	__u32 handle;
	/** @flags: Input. Must be zero. */
	__u32 flags;
	/** @size: Output. Size in bytes (a multiple of the page size). */
	__u64 size;
	/** @mmap_offset: Output. Offset to pass to mmap() on this file. */
	__u64 mmap_offset;
	/** @device_addr: Output. As in &drm_vtpu_bo_create.device_addr. */
	__u64 device_addr;
	/** @placed: Output. HBM or HOST. */
	__u32 placed;
	/** @pad: Output. Zero. */
	__u32 pad;
};

/* &drm_vtpu_binding.flags */
/**
 * struct drm_vtpu_program_binding - what a program needs of one binding
 */
struct drm_vtpu_program_binding {
	/**
	 * @size: Output. Bytes from the start of the bound range the
	 * program touches; a range bound to it must be at least this long.
	 */
	__u64 size;
	/**
	 * @flags: Output. DRM_VTPU_BIND_READ and/or DRM_VTPU_BIND_WRITE as
	 * the program reads or writes the binding; 0 if it never touches
	 * it. A SUBMIT must grant at least these.
	 */
	__u32 flags;
	/** @pad: Output. Zero. */
	__u32 pad;
};

/*
 * Most program objects one open file may hold. Their memory is charged
 * to the creator's memory cgroup.
 */
#define DRM_VTPU_MAX_PROGRAMS		4096

/**
 * struct drm_vtpu_program_create - load a program once, run it many times
 *
 * The kernel copies @size bytes at @program into memory userspace can
 * neither map nor write, validates the copy completely (everything but
 * the bound buffers' sizes and rights, which it works out and reports
 * in @bindings), and returns a handle. SUBMIT with
 * DRM_VTPU_SUBMIT_PROGRAM then costs O(bindings), whatever the program's
 * size: each binding is checked against what the program needs of it.
 * Jobs hold their program: destroying the handle with jobs queued is
 * safe. Handles are private to the file.
 *
 * Errors: -EINVAL nonzero @flags or @pad, a program that fails
 * validation (the reason goes to the kernel log at debug level); -E2BIG
 * @size beyond the largest program (see vtpu_isa.h); -EFAULT; -ENOMEM;
 * -EMFILE DRM_VTPU_MAX_PROGRAMS programs on this file already.
 */
struct drm_vtpu_program_create {
	/** @program: Input. Pointer to the program (vtpu_isa.h format). */
	__u64 program;
	/** @size: Input. Bytes at @program. */
	__u64 size;
	/**
	 * @bindings: Input. Pointer to @max_bindings
	 * &drm_vtpu_program_binding the kernel fills (the first
	 * min(@max_bindings, @binding_count)), or 0.
	 */
	__u64 bindings;
	/** @max_bindings: Input. Entries at @bindings. */
	__u32 max_bindings;
	/** @flags: Input. Must be zero. */
	__u32 flags;
	/** @handle: Output. The program's handle, never 0. */
	__u32 handle;
	/** @binding_count: Output. Bindings every SUBMIT must give. */
	__u32 binding_count;
	/** @trace_count: Output. TRACE records a profile buffer needs. */
	__u32 trace_count;
	/** @pad: Input. Must be zero. */
	__u32 pad;
};

/**
 * struct drm_vtpu_program_destroy - drop a program handle
 *
 * The program is freed once no queued or running job holds it.
 * Errors: -EINVAL nonzero @flags; -ENOENT unknown @handle.
 */
struct drm_vtpu_program_destroy {
	/** @handle: Input. As PROGRAM_CREATE returned it. */
	__u32 handle;
	/** @flags: Input. Must be zero. */
	__u32 flags;
};

#define DRM_VTPU_BIND_READ		0x1	/* the program may read */
#define DRM_VTPU_BIND_WRITE		0x2	/* the program may write */

/**
 * struct drm_vtpu_binding - a buffer range bound to a program
 *
 * Binding i of the array is what the program's DMA instructions call
 * binding i. The job holds a reference on the buffer until it ends, even
 * if userspace closes the handle meanwhile.
 */
struct drm_vtpu_binding {
	/** @handle: Input. GEM handle of the buffer. */
	__u32 handle;
	/** @flags: Input. DRM_VTPU_BIND_READ and/or DRM_VTPU_BIND_WRITE. */
	__u32 flags;
	/** @offset: Input. Byte offset of the range in the buffer. */
	__u64 offset;
	/** @size: Input. Bytes of the range, >= 1, within the buffer. */
	__u64 size;
};

/**
 * struct drm_vtpu_sync - a syncobj and timeline point
 */
struct drm_vtpu_sync {
	/** @handle: Input. Syncobj handle. */
	__u32 handle;
	/** @flags: Input. Must be zero. */
	__u32 flags;
	/** @point: Input. Timeline point, 0 for a binary syncobj. */
	__u64 point;
};

/*
 * &drm_vtpu_submit.flags: @program_handle names a program object
 * (DRM_IOCTL_VTPU_PROGRAM_CREATE): nothing is copied or validated but
 * the bindings. Without it, the program is copied out of a buffer and
 * validated for this job alone.
 */
#define DRM_VTPU_SUBMIT_PROGRAM		0x1

/* Most in-fences and bindings one SUBMIT takes. */
#define DRM_VTPU_MAX_IN_SYNCS		64
#define DRM_VTPU_MAX_BINDINGS		64
/*
 * Most jobs one open file may have queued, running or not yet released,
 * whichever way they were submitted (their memory is charged to the
 * submitter's memory cgroup too).
 */
#define DRM_VTPU_MAX_JOBS		1024

/**
 * struct drm_vtpu_submit - run a program on one of the device's cores
 *
 * The program (see vtpu_isa.h) is copied out of its buffer and validated
 * completely, with the bindings' sizes and access rights, before the job
 * is queued; nothing runs unless all of it is valid. The job waits for
 * @in_syncs, runs on whichever core of the device is free first, then
 * signals @out_sync. If an in-sync's fence carries an error, the job does
 * not run and ends with -ECANCELED. When its file is closed (or its
 * owner killed), a job not yet started is not run and ends with -ESRCH;
 * a running one runs to its end. The fence @out_sync receives keeps
 * vtpu.ko loaded for as long as it exists (a sync_file, say). The job's
 * id can be waited on with DRM_IOCTL_VTPU_JOB_WAIT until a wait reports
 * its completion. Only the bound ranges of backing-store buffers are
 * pinned; the last range a job bound of a buffer stays mapped for the
 * next job that binds it, until a job binds another range of it or the
 * buffer is freed (drm-resident-host in fdinfo counts those pages).
 *
 * Errors: -EINVAL nonzero @flags or padding, bad sync/binding flags, a
 * range outside its buffer, a program that fails validation (the reason
 * goes to the kernel log at debug level), a binding smaller than or
 * without the rights its program object needs, a nonzero
 * @program_offset or @program_size with DRM_VTPU_SUBMIT_PROGRAM, a too
 * small profile buffer; -E2BIG more than DRM_VTPU_MAX_BINDINGS bindings
 * or DRM_VTPU_MAX_IN_SYNCS in-syncs; -ENOENT unknown buffer, program or
 * syncobj handle; -EBUSY DRM_VTPU_MAX_JOBS jobs of this file not yet ended, or
 * too many un-waited jobs on this file (wait some); -ENOMEM.
 */
struct drm_vtpu_submit {
	/** @flags: Input. DRM_VTPU_SUBMIT_*. */
	__u32 flags;
	/**
	 * @program_handle: Input. Buffer holding the program; with
	 * DRM_VTPU_SUBMIT_PROGRAM, a program object's handle.
	 */
	__u32 program_handle;
	/**
	 * @program_offset: Input. Byte offset of the program in its buffer;
	 * 0 with DRM_VTPU_SUBMIT_PROGRAM.
	 */
	__u64 program_offset;
	/**
	 * @program_size: Input. Bytes of the program; 0 with
	 * DRM_VTPU_SUBMIT_PROGRAM.
	 */
	__u64 program_size;
	/** @bindings: Input. Pointer to @binding_count &drm_vtpu_binding. */
	__u64 bindings;
	/** @binding_count: Input. Must equal the program's binding count. */
	__u32 binding_count;
	/** @in_sync_count: Input. Entries at @in_syncs. */
	__u32 in_sync_count;
	/** @in_syncs: Input. Pointer to &drm_vtpu_sync the job waits for. */
	__u64 in_syncs;
	/** @out_sync: Input. Syncobj signalled when the job ends; 0: none. */
	__u32 out_sync;
	/**
	 * @profile_handle: Input. Buffer that receives the job's
	 * &drm_vtpu_profile at @profile_offset when it ends; 0: none.
	 */
	__u32 profile_handle;
	/** @out_sync_point: Input. Timeline point for @out_sync, or 0. */
	__u64 out_sync_point;
	/** @profile_offset: Input. 8-byte aligned. */
	__u64 profile_offset;
	/**
	 * @job_id: Output. Id of the job: per file, increasing, never 0.
	 * Ignored on input.
	 */
	__u64 job_id;
};

/**
 * struct drm_vtpu_profile_trace - one TRACE instruction's record
 */
struct drm_vtpu_profile_trace {
	/** @id: the TRACE instruction's op id */
	__u32 id;
	/** @pad: zero */
	__u32 pad;
	/** @timestamp: device time when the TRACE executed */
	__u64 timestamp;
};

/**
 * struct drm_vtpu_profile - what a job writes to its profile buffer
 *
 * Timestamps are device ticks of &drm_vtpu_query.timestamp_unit_ns on
 * the CLOCK_MONOTONIC time base. The buffer must hold the struct plus one
 * &drm_vtpu_profile_trace per TRACE instruction of the program.
 */
struct drm_vtpu_profile {
	/** @queued: when SUBMIT queued the job */
	__u64 queued;
	/** @start: when a core started it */
	__u64 start;
	/** @end: when it ended */
	__u64 end;
	/** @insns: instructions executed */
	__u64 insns;
	/** @flops: floating-point operations the program performs */
	__u64 flops;
	/** @dma_bytes: bytes moved by DMA to and from bindings */
	__u64 dma_bytes;
	/** @core: index of the core that ran the job */
	__u32 core;
	/**
	 * @status: 0, or the job's -errno (-ETIMEDOUT: it was aborted;
	 * -ERANGE: a DMA_GATHER index was outside its table)
	 */
	__s32 status;
	/** @trace_count: entries written to @trace */
	__u32 trace_count;
	/** @pad: zero */
	__u32 pad;
	/** @trace: one record per TRACE executed, in program order */
	struct drm_vtpu_profile_trace trace[];
};

/**
 * struct drm_vtpu_job_wait - wait for a job of this file to end
 *
 * Returns 0 once the job has ended, its result in @status; the id is then
 * forgotten. Jobs submitted through io_uring report through their CQE
 * and have no record here. Errors: -EINVAL nonzero @flags; -ENOENT unknown @job_id (or
 * already reported); -ETIME @timeout_ns passed first; -ERESTARTSYS or
 * -EINTR when a signal came first.
 */
struct drm_vtpu_job_wait {
	/** @job_id: Input. As returned by SUBMIT. */
	__u64 job_id;
	/**
	 * @timeout_ns: Input. Absolute CLOCK_MONOTONIC deadline in ns; 0
	 * polls.
	 */
	__s64 timeout_ns;
	/** @flags: Input. Must be zero. */
	__u32 flags;
	/**
	 * @status: Output. 0 when the job succeeded, else its -errno:
	 * -ETIMEDOUT (ran past the job timeout and was aborted), -ERANGE
	 * (stopped at a DMA_GATHER index outside its table), -ECANCELED
	 * (never ran: an in-sync failed), -ESRCH (never ran: its file was
	 * closed first).
	 */
	__s32 status;
};

/*
 * io_uring passthrough: IORING_OP_URING_CMD on an open accel file, with
 * sqe->cmd_op one of the values below (ioctl-encoded, like the ioctls).
 * The request is checked exactly as DRM_IOCTL_VTPU_SUBMIT checks it.
 *
 * DRM_VTPU_URING_SUBMIT needs an IORING_SETUP_SQE128 ring: the whole
 * struct drm_vtpu_submit (80 bytes) sits inline in sqe->cmd.
 * DRM_VTPU_URING_SUBMIT_PTR works on any ring: sqe->cmd holds a
 * struct drm_vtpu_uring_submit_ptr naming the request in user memory;
 * it is read before the submission's io_uring_enter() returns.
 * SQE fields these commands do not use (addr, len, buf_index,
 * file_index) must be zero, and registered buffers
 * (IORING_URING_CMD_FIXED) are refused: -EINVAL.
 *
 * The CQE is posted when the job ends, not when it is queued:
 *   res     0 when the job succeeded, else its -errno (as JOB_WAIT's
 *           status), or the submission's -errno if nothing was queued
 *   big_cqe[0] (IORING_SETUP_CQE32 rings): bits 0-31 the low 32 bits of
 *           the job id, bits 32-63 the time the job spent on its core in
 *           microseconds, saturated at 0xffffffff
 * Small jobs of one batch run chained: the commands one io_uring_enter()
 * submits (a batch, when there are more than two) that wait for no
 * in-sync and whose programs together do at most 2^21 of the executor's
 * work units (about 0.2 ms) may go to a core as one scheduler job, up to
 * 32 of them, and run there back to back. Each still has its own job id,
 * result, CQE, profile, out-syncobj fence and job timeout; a batch costs
 * the scheduler one hand-over instead of one per job. Commands are
 * ordered only when linked (IOSQE_IO_LINK), as io_uring orders them: a
 * job of the batch that does not chain may start before those that do.
 * Commands still in flight when their ring goes away complete with
 * -ECANCELED; their jobs end as SUBMIT describes (a running job runs to
 * its end; once the file is closed, queued ones never start) and release
 * everything.
 * IORING_SETUP_IOPOLL rings are refused with -EOPNOTSUPP.
 */
#define DRM_VTPU_URING_SUBMIT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VTPU_SUBMIT, struct drm_vtpu_submit)
#define DRM_VTPU_URING_SUBMIT_PTR \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VTPU_SUBMIT, \
		struct drm_vtpu_uring_submit_ptr)

/**
 * struct drm_vtpu_uring_submit_ptr - sqe->cmd of DRM_VTPU_URING_SUBMIT_PTR
 */
struct drm_vtpu_uring_submit_ptr {
	/** @submit: Input. Pointer to a struct drm_vtpu_submit. */
	__u64 submit;
	/** @pad: Input. Must be zero. */
	__u64 pad;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_VTPU_ACCEL_H_ */
