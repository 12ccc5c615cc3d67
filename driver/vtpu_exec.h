/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

/*
 * The emulated TPU core: executes a validated program. Shared by vtpu.ko
 * and userspace. vtpu_exec.c is the only object built with kernel FPU
 * support; nothing declared here takes or returns a float, so non-FPU
 * files may include this header.
 */
#ifndef __VTPU_EXEC_H__
#define __VTPU_EXEC_H__

#include "vtpu_prog.h"

/**
 * struct vtpu_exec_binding - a bound buffer as the executor sees it
 * @data: mapping of the buffer (kernel or user address)
 * @size: bytes of @data, as given to the validator
 */
struct vtpu_exec_binding {
	void *data;
	u64 size;
};

/**
 * struct vtpu_exec - one program's execution on one core
 * @prog: the validated program
 * @bindings: its buffers, in binding order
 * @vmem: the core's vector memory, at least @prog->vmem_size bytes
 * @pc: next instruction
 * @insns: instructions executed so far
 * @trace: called for each TRACE with its id (may be NULL); runs inside
 *	the FPU section in the kernel, so it must not sleep
 * @trace_arg: passed to @trace
 */
struct vtpu_exec {
	const struct vtpu_prog_info *prog;
	const struct vtpu_exec_binding *bindings;
	u8 *vmem;
	u32 pc;
	u64 insns;
	void (*trace)(void *arg, u32 id);
	void *trace_arg;
};

void vtpu_exec_init(struct vtpu_exec *e, const struct vtpu_prog_info *prog,
		    const struct vtpu_exec_binding *bindings, void *vmem);

/*
 * Executes at most @max_insns instructions. Returns 1 once END has
 * executed, 0 when instructions remain. The kernel calls it inside
 * kernel_fpu_begin()/end() and reschedules between calls.
 */
int vtpu_exec_step(struct vtpu_exec *e, u32 max_insns);

#endif /* __VTPU_EXEC_H__ */
