/* SPDX-License-Identifier: MIT */
/* Copyright (C) 2026 The vtpu authors */

/*
 * plan.h - what plan.c, codegen.c and emit.c share: device element
 * sizes, kernel grouping and order, and the program emitter.
 */
#ifndef VTPU_PLAN_H
#define VTPU_PLAN_H

#include <drm/vtpu_isa.h>

#include "ir.h"

/* ---- plan.c ------------------------------------------------------------ */

/* Bytes per element on the device (pred: an f32 1.0/0.0); 0: none. */
int dev_type_size(enum vtpu_type t);
uint64_t dev_bytes(const struct vtpu_shape *s);
/* A key naming @v's kernel (each node with kernel -1 is its own). */
int node_kernel(const struct ir_graph *g, int v);
/* The node whose bytes @v uses (through RESHAPE aliases). */
int node_root(const struct ir_graph *g, int v);
/* knum[v] = emission position of v's kernel; returns the kernel count. */
int kernel_order(const struct ir_graph *g, int *knum);

/* ---- emit.c: the program writer ---------------------------------------- */

struct emit {
	struct vtpu_insn *code;
	uint32_t n, cap;
	uint8_t *consts;
	uint32_t const_size;
	char *meta;
	uint32_t meta_size, meta_cap, nstrings;
	uint32_t vmem_used;	/* high-water mark of VMEM */
	/*
	 * Lanes (uapi/drm/vtpu_isa.h): the lane instructions go to now,
	 * whose VMEM starts at @vmem_base (added to every tile emitted),
	 * and whether a lane other than 0 has had any since the last
	 * BARRIER.
	 */
	uint32_t lanes, lane_size, lane;
	uint32_t vmem_base;
	int lanes_used;
	int lanes_ever;		/* any lane but 0, ever: the header says lanes */
	uint32_t phase_at;	/* first instruction after the last BARRIER */
	uint32_t kernel_at;	/* first instruction of the current kernel */
	int failed;		/* allocation failure or too_many, sticky */
	int too_many;		/* past VTPU_MAX_INSNS: nothing more is kept */
	int too_wide;		/* a DMA stride beyond 32 bits, sticky */
};

void emit_init(struct emit *e);
void emit_fini(struct emit *e);
void emit_insn(struct emit *e, const struct vtpu_insn *in);
uint32_t emit_meta(struct emit *e, const char *name);
struct vtpu_tile vtile(uint32_t addr, uint32_t rows, uint32_t cols,
		       uint32_t stride, uint8_t dtype);
void emit_dma(struct emit *e, int store, struct vtpu_tile v, uint32_t binding,
	      uint64_t offset, uint64_t stride, uint8_t dtype);
/* The same, a row's elements @step apart in the binding (ISA version 6). */
void emit_dma_step(struct emit *e, int store, struct vtpu_tile v,
		   uint32_t binding, uint64_t offset, uint64_t stride,
		   uint8_t dtype, uint32_t step);
/* DMA_GATHER: @v's rows from the @rows-row table at @offset. */
void emit_gather(struct emit *e, struct vtpu_tile v, uint32_t binding,
		 uint64_t offset, uint64_t stride, uint8_t dtype,
		 uint32_t index, uint64_t rows, uint16_t flags);
/*
 * Lanes: what follows is lane @lane's work, on its own VMEM (tiles are
 * given from 0 as always); emit_barrier() ends the lanes' work, if any
 * lane but 0 had some, and returns to lane 0. Without lanes all three
 * do nothing.
 */
void emit_lane(struct emit *e, uint32_t lane);
/*
 * A kernel starts (or a kernel's second pass): what follows may read or
 * overwrite what any lane before it stored.
 */
void emit_kernel(struct emit *e);
void emit_barrier(struct emit *e);
/* The lane of work item @i of @n, in contiguous blocks of items. */
uint32_t emit_lane_of(const struct emit *e, int64_t i, int64_t n);
void emit_op(struct emit *e, uint8_t op, uint8_t sub, uint16_t flags,
	     uint32_t imm, struct vtpu_tile d, struct vtpu_tile a,
	     struct vtpu_tile b);
/* The finished program (header, code, constants, meta), checksummed. */
void *emit_finish(struct emit *e, uint32_t vmem_size, uint32_t nbindings,
		  size_t *size);

/* ---- codegen.c, copy.c: kernels ----------------------------------------- */

/*
 * Per-instruction work bounds. The kernel runs each instruction inside
 * one non-preemptible FPU section, so tiles stay modest however large
 * VMEM is: 64 Ki elements for VPU and DMA tiles, 256 per MXU dimension
 * (2 * 256^3 flops). Rows and columns also stay inside __u16.
 */
#define CG_TILE_ELEMS	(1 << 16)
#define CG_TILE_DIM	16384
#define CG_MM_DIM	256

/* Where a value's bytes are: a binding (or the constants), an offset. */
struct loc {
	uint32_t binding;
	uint64_t off;
	uint8_t dt;		/* enum vtpu_dtype in memory */
};

struct cg {
	struct ir_graph *g;
	struct emit e;
	uint32_t vmem;		/* bytes of VMEM kernels may use */
	int nparams, noutputs, scratch_binding, weights_binding;
	uint8_t *weights;	/* the program's weights, being filled */
	/* copy_block(): lanes by where a tile lands in [base, base + bytes) */
	uint32_t lane_dst_binding;
	uint64_t lane_dst_base, lane_dst_bytes;
	int lane_split;		/* few blocks: split each into bands */
	uint64_t weights_size;
	/* loop.c: the loops' programs; scratch, constants, weights with them */
	struct cg_loop *loops;
	int nloops;
	uint64_t loop_scratch, loop_consts, loop_weights;
	char *err;
	size_t errlen;
	int ret;		/* first error, sticky */
};

int cg_fail(struct cg *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));	/* sets c->ret, returns it */
uint8_t hbm_dtype(enum vtpu_type t);
int dt_size(uint8_t dt);
struct loc loc_of(struct cg *c, int v);
struct loc loc_add(struct loc l, uint64_t bytes);
/* Whether values @x and @y (their roots) share a byte of HBM. */
int cg_values_meet(struct cg *c, int x, int y);
/*
 * Lanes pay for the BARRIER after a kernel (about a microsecond) and for
 * reading what the other lane stored (another core's cache is a third as
 * fast as one's own) from ~10 us of copying, elementwise work or
 * depthwise taps: 128K elements or multiply-adds. A matmul reads each
 * input many times, and pays from 256K multiply-adds (its work counts 16
 * to the unit), a few microseconds.
 */
#define CG_LANES_MIN_WORK	(1 << 17)
#define CG_LANES_MIN_MM		(1 << 14)
int64_t cdiv(int64_t a, int64_t b);

/* fused.c: elementwise chains, P_MATMUL with its elementwise epilogue */
void gen_fused(struct cg *c, const int *nodes, int nn);

/* copy.c */
/*
 * dst[i][j] = src[i * s0 + j * s1] for i < rows, j < cols (element
 * strides; dst rows @d0 elements apart, contiguous within).
 */
void copy_block(struct cg *c, struct loc src, int64_t s0, int64_t s1,
		struct loc dst, int64_t d0, int64_t rows, int64_t cols);
void copy_flat(struct cg *c, struct loc src, struct loc dst, int64_t n);
void gen_p_copy(struct cg *c, int v);
void gen_concat(struct cg *c, int v);
void gen_pad(struct cg *c, int v);
/* PAD @n's value as a FILL of its type writes it: f32 bits, s32 saturated. */
uint32_t pad_bits(const struct ir_node *n);
void gen_gather(struct cg *c, int v);

/* dwconv.c */
void gen_dwconv(struct cg *c, int v);
/*
 * loop.c: WHILE nodes. loops_prepare() compiles every loop's graphs and
 * sizes scratch, constants and weights (given the graph's own) with
 * them; loops_fill() copies their constants and weights in; gen_while()
 * emits a loop; loops_free() releases it all.
 */
int loops_prepare(struct cg *c, const struct vtpu_device_params *dev,
		  uint64_t scratch, uint64_t consts, uint64_t weights);
void loops_fill(struct cg *c);
void gen_while(struct cg *c, int v);
void loops_free(struct cg *c);

#endif /* VTPU_PLAN_H */
