/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
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

/*
 * Work is counted in units of about one f32 multiply-add of MATMUL (a few
 * tenths of a nanosecond natively); other operations weigh what they cost
 * in those units. A vtpu_exec_step() call stops once it has done
 * VTPU_EXEC_BUDGET of work, about 0.2 ms, in the middle of an
 * instruction if need be; it can go over by less than one piece of
 * instruction, at most VTPU_EXEC_PIECE_MAX.
 */
#define VTPU_EXEC_BUDGET	BIT(21)
#define VTPU_EXEC_PIECE_MAX	BIT(18)

/**
 * struct vtpu_exec_cursor - where a partly executed instruction resumes
 * @i: row (MATMUL: first row of the next block of d; TRANSPOSE: block row)
 * @j: column (MATMUL: first column of the next block of d)
 * @k: MATMUL: first step of k of the next block; BINARY: the instructions
 *	of the run of taps under way (vtpu_exec_taps())
 * @acc: REDUCE over columns: the row's partial result so far (f32 bits)
 *
 * All zero between instructions.
 */
struct vtpu_exec_cursor {
	u32 i;
	u32 j;
	u32 k;
	u32 acc;
};

/**
 * enum vtpu_exec_isa - the builds of the executor, by vector instructions
 * @VTPU_EXEC_SSE2: SSE2, what every x86-64 CPU has
 * @VTPU_EXEC_AVX2: AVX2 and FMA (256-bit vectors)
 * @VTPU_EXEC_AVX512: AVX-512F (512-bit vectors)
 * @VTPU_EXEC_ISA_NR: how many there are
 *
 * All of them give the same bits for every program (see vtpu_exec.c);
 * they differ only in speed.
 */
enum vtpu_exec_isa {
	VTPU_EXEC_SSE2,
	VTPU_EXEC_AVX2,
	VTPU_EXEC_AVX512,
	VTPU_EXEC_ISA_NR,
};

/*
 * MATMUL's blocking, at most (the AVX-512 build's): register blocks of
 * VTPU_EXEC_MR_MAX rows by VTPU_EXEC_NR_MAX columns, panels of b of
 * VTPU_EXEC_KC steps of k.
 */
#define VTPU_EXEC_MR_MAX	12
#define VTPU_EXEC_NR_MAX	32
#define VTPU_EXEC_KC		128

/* The most shards one instruction is cut into (see struct vtpu_exec_par). */
#define VTPU_EXEC_WAYS_MAX	8

/**
 * struct vtpu_exec_par - helpers that run parts of an execution's
 *	instructions on other CPUs (the host backend's threads)
 * @start: runs @shards[0..@n) at once, each with vtpu_exec_run() on a
 *	helper's own struct vtpu_exec, and returns without waiting; the
 *	shards stay valid until @wait returns
 * @wait: returns once every shard @start began is done: 0, or a fault
 *	one of them raised
 * @arg: passed to both
 * @meet: for a program with lanes run by several executors (see
 *	struct vtpu_exec's @lane_step): returns once every executor of the
 *	execution has reached the same BARRIER, 0; or a -errno to stop
 *	(another executor faulted)
 * @ways: how many parts to cut an instruction into at most: the helpers
 *	and the caller (which runs the first part); 1 or less never cuts
 * @min_work: the least work (VTPU_EXEC_BUDGET's units) an instruction
 *	must have to be cut; 0 is the executor's choice (tests cut small
 *	instructions with 1)
 *
 * The executor calls them only between instructions, from
 * vtpu_exec_step(), so the helpers' work ends before the next
 * instruction starts.
 */
struct vtpu_exec_par {
	void (*start)(void *arg, const struct vtpu_insn *shards, u32 n);
	int (*wait)(void *arg);
	int (*meet)(void *arg);
	void *arg;
	u32 ways;
	u64 min_work;
};

/**
 * struct vtpu_exec - one program's execution on one core
 * @prog: the validated program
 * @bindings: its buffers, in binding order
 * @vmem: the core's vector memory, at least @prog->vmem_size bytes
 * @pc: next instruction, or the one in progress
 * @insns: instructions completed so far
 * @budget: work after which a vtpu_exec_step() call returns; set to
 *	VTPU_EXEC_BUDGET by vtpu_exec_init() (tests lower it)
 * @work: work done by the last vtpu_exec_step() call
 * @cur: progress through instruction @pc
 * @par: helpers to share big instructions with, or NULL (the default,
 *	and always in the kernel); vtpu_exec_init() clears it
 * @lane: the lane the instructions at @pc are in (vtpu_isa.h)
 * @lane_first: with @lane_step > 1, this executor runs only the lanes
 *	@lane_first, @lane_first + @lane_step, ... of its program, and
 *	@lane_step - 1 others, which @par's meet() joins, run the rest;
 *	vtpu_exec_init() sets 0 and 1: one executor runs everything
 * @lane_step: see @lane_first
 * @trace: called for each TRACE with its id (may be NULL); runs inside
 *	the FPU section in the kernel, so it must not sleep
 * @trace_arg: passed to @trace
 * @isa: the build that runs it; vtpu_exec_init() sets the best one the
 *	CPU has, and tests may choose any vtpu_exec_isa_supported() one
 * @fault: 0, or why the program stopped: -ERANGE for a DMA_GATHER index
 *	outside its table; -EINVAL for a branch while @lane_step > 1, which
 *	a validated program never has
 * @sreg: the scalar registers (ISA version 4), zeroed by vtpu_exec_init()
 * @pack: MATMUL's packed panel of b, kept between resumed pieces
 * @edge: MATMUL's copy of a block narrower than its registers
 * @shards: the parts of the instruction being shared with @par
 *
 * It is too big for a kernel stack (@pack): the kernel keeps one per core.
 */
struct vtpu_exec {
	const struct vtpu_prog_info *prog;
	const struct vtpu_exec_binding *bindings;
	u8 *vmem;
	u32 pc;
	u64 insns;
	u64 budget;
	u64 work;
	struct vtpu_exec_cursor cur;
	const struct vtpu_exec_par *par;
	u32 lane;
	u32 lane_first;
	u32 lane_step;
	void (*trace)(void *arg, u32 id);
	void *trace_arg;
	enum vtpu_exec_isa isa;
	int fault;
	s32 sreg[VTPU_SREGS];
	u32 pack[VTPU_EXEC_KC * VTPU_EXEC_NR_MAX];
	u32 edge[VTPU_EXEC_MR_MAX * VTPU_EXEC_NR_MAX];
	struct vtpu_insn shards[VTPU_EXEC_WAYS_MAX];
};

/* Whether this CPU (and, in the kernel, its FPU state) runs @isa. */
bool vtpu_exec_isa_supported(enum vtpu_exec_isa isa);
/* The fastest build this CPU runs; vtpu_exec_init() chooses it. */
enum vtpu_exec_isa vtpu_exec_isa_best(void);
/* "sse2", "avx2" or "avx512". */
const char *vtpu_exec_isa_name(enum vtpu_exec_isa isa);

void vtpu_exec_init(struct vtpu_exec *e, const struct vtpu_prog_info *prog,
		    const struct vtpu_exec_binding *bindings, void *vmem);

/*
 * Runs instructions until END, until @max_insns instructions have been
 * started or resumed, or until @e->budget of work is done, whichever
 * comes first; a long instruction is left part done and the next call
 * resumes it. Returns 1 once END has executed, 0 while work remains, or
 * the program's fault (a -errno, @e->fault) once it has stopped on one.
 * The kernel calls it inside kernel_fpu_begin()/end() and reschedules
 * between calls.
 */
int vtpu_exec_step(struct vtpu_exec *e, u32 max_insns);

/*
 * Runs one shard of an instruction (see struct vtpu_exec_par) to its end
 * on a helper's @e. Returns 0 or the fault it raised.
 */
int vtpu_exec_run(struct vtpu_exec *e, const struct vtpu_insn *in);

/* vtpu_exec_step() and vtpu_exec_run() of each build. */
int vtpu_exec_step_sse2(struct vtpu_exec *e, u32 max_insns);
int vtpu_exec_step_avx2(struct vtpu_exec *e, u32 max_insns);
int vtpu_exec_step_avx512(struct vtpu_exec *e, u32 max_insns);
int vtpu_exec_run_sse2(struct vtpu_exec *e, const struct vtpu_insn *in);
int vtpu_exec_run_avx2(struct vtpu_exec *e, const struct vtpu_insn *in);
int vtpu_exec_run_avx512(struct vtpu_exec *e, const struct vtpu_insn *in);

#endif /* __VTPU_EXEC_H__ */
