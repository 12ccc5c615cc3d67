/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * Program validation, shared by vtpu.ko (SUBMIT) and userspace (the host
 * backend, the compiler's self-check, the tests). Integer code only: it
 * is built without kernel FPU support.
 */
#ifndef __VTPU_PROG_H__
#define __VTPU_PROG_H__

#include "vtpu_compat.h"

#include <drm/vtpu_isa.h>

/* Largest program: header, VTPU_MAX_INSNS instructions and both sections. */
#define VTPU_MAX_PROG_SIZE \
	(sizeof(struct vtpu_prog_header) + \
	 (u64)VTPU_MAX_INSNS * sizeof(struct vtpu_insn) + \
	 VTPU_MAX_CONST_SIZE + VTPU_MAX_META_SIZE)

#define VTPU_ACCESS_READ	0x1
#define VTPU_ACCESS_WRITE	0x2

/**
 * struct vtpu_binding_desc - what the validator knows of a bound buffer
 * @size: bytes the program may touch
 * @access: VTPU_ACCESS_* the submitter granted
 */
struct vtpu_binding_desc {
	u64 size;
	u32 access;
};

/**
 * struct vtpu_prog_info - a validated program, ready for the executor
 * @hdr: the header (inside the validated copy)
 * @code: the instructions
 * @consts: the constants section
 * @meta: the metadata section (NUL-terminated strings)
 * @insn_count: instructions, END included
 * @const_size: bytes of @consts
 * @meta_size: bytes of @meta
 * @vmem_size: bytes of VMEM the program uses
 * @lane_size: with lanes, the VMEM bytes of each lane's share; 0 without
 * @lane_reach: bytes from the start of a lane's share (or of VMEM, without
 *	lanes) up to the end of the furthest tile or scalar any lane's
 *	instructions name: what vtpu_prog_clear_vmem() clears of each share
 * @binding_count: buffers the program expects
 * @lanes: lanes its work is split among (1: none; see vtpu_isa.h)
 * @trace_count: TRACE instructions
 * @branch_count: BRZ, BRNZ and JUMP instructions (ISA version 4)
 * @flops: floating-point operations, counted statically (2*M*N*K per
 *	MATMUL, one per element for VPU instructions)
 * @dma_bytes: bytes DMA moves, counted on the binding side
 *
 * The static counts are those of one pass through the code: exact for
 * straight-line code, that is without branches. With branches a run may
 * execute any instruction any number of times, so nothing may budget a
 * run by them (vtpu_job_cost()), and a profile's TRACE records stop at
 * @trace_count.
 */
struct vtpu_prog_info {
	const struct vtpu_prog_header *hdr;
	const struct vtpu_insn *code;
	const u8 *consts;
	const char *meta;
	u32 insn_count;
	u32 const_size;
	u32 meta_size;
	u32 vmem_size;
	u32 lane_size;
	u32 lane_reach;
	u32 binding_count;
	u32 lanes;
	u32 trace_count;
	u32 branch_count;
	u64 flops;
	u64 dma_bytes;
};

/*
 * vtpu_prog_clear_vmem - zeroes every byte of @vmem the program can reach
 *
 * No data may pass from one job to the next through VMEM. A program's
 * instructions reach only their tiles and scalars, which the validator
 * checked and measured: in a program of lanes that is the start of each
 * lane's share, not the whole span up to the last lane's tiles.
 */
static inline void vtpu_prog_clear_vmem(const struct vtpu_prog_info *info,
					void *vmem)
{
	u32 lane;

	if (!info->lane_size) {
		memset(vmem, 0, info->lane_reach);
		return;
	}
	for (lane = 0; lane < info->lanes; lane++)
		memset((u8 *)vmem + (size_t)lane * info->lane_size, 0,
		       info->lane_reach);
}

/* The bytes vtpu_prog_clear_vmem() clears. */
static inline u64 vtpu_prog_vmem_cleared(const struct vtpu_prog_info *info)
{
	return (u64)info->lane_reach * (info->lane_size ? info->lanes : 1);
}

/**
 * struct vtpu_prog_error - why a program was rejected
 * @insn: index of the offending instruction, or -1 for the header/sections
 * @why: static string naming the rule broken
 */
struct vtpu_prog_error {
	s32 insn;
	const char *why;
};

u32 vtpu_prog_crc32(const void *buf, size_t len);

int vtpu_prog_validate(const void *prog, u64 size,
		       const struct vtpu_binding_desc *bindings, u32 nbindings,
		       u64 vmem_size, struct vtpu_prog_info *info,
		       struct vtpu_prog_error *err);
int vtpu_prog_load(const void *prog, u64 size, u64 vmem_size,
		   struct vtpu_prog_info *info, struct vtpu_binding_desc *need,
		   struct vtpu_prog_error *err);
int vtpu_prog_bindings_ok(const struct vtpu_binding_desc *need,
			  const struct vtpu_binding_desc *given, u32 n);

#endif /* __VTPU_PROG_H__ */
