/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * vtpu program format and instruction set (ISA version 6).
 *
 * This header is the contract between the compiler (which emits
 * programs), the kernel (which validates and executes them) and the
 * disassembler. One table, vtpu_isa_ops.h, lists every opcode with its
 * operand kinds and allowed flags; all of them expand it (X-macro).
 *
 * A program is, in this order and without gaps:
 *   struct vtpu_prog_header
 *   insn_count x struct vtpu_insn              (code)
 *   const_size bytes                           (read-only constants)
 *   meta_size bytes                            (op names, NUL-separated)
 * All multi-byte fields are in the host's byte order; programs are not
 * portable between hosts of different endianness (both ends are the
 * same machine: the compiler runs where the device is).
 *
 * Machine model, per core:
 *   VMEM  a private scratch memory of &drm_vtpu_query.vmem_size bytes;
 *         every compute operand is a 2-D tile of VMEM (struct vtpu_tile).
 *   DMA   moves 2-D strided blocks between a binding (a buffer bound at
 *         submit, or the program's constants) and VMEM, converting
 *         between f32 and bf16 when the two sides' types differ, and
 *         gathers rows of a binding chosen by indices in VMEM; (ISA
 *         version 6) a row's elements may lie a step apart in the
 *         binding, as a strided convolution or pooling reads its input.
 *   MXU   C (+)= op(A) . op(B), f32 or bf16 inputs, f32 accumulation,
 *         op = identity or transpose.
 *   VPU   elementwise unary and binary functions with scalar, row and
 *         column broadcast, compare and select, row/column reductions,
 *         fill, iota, convert, transpose; and (ISA version 5) the fused
 *         multiply-add BINARY MADD, d = a b + d rounded once, which reads
 *         d as well: one pass over VMEM where a MUL and an ADD take two,
 *         and one rounding where they take two. As for every elementwise
 *         instruction, d is exactly a, exactly b or disjoint from both,
 *         so every element's result depends on its own operands only.
 * SCALAR (ISA version 4) VTPU_SREGS s32 registers per core, zero when a
 *         job starts: loaded from VMEM (SLOAD), set and incremented
 *         (SSET, SADD), and tested by the branches (BRZ, BRNZ).
 * Programs run from instruction 0 to END, in order except where a branch
 * (BRZ, BRNZ, JUMP; ISA version 4) continues elsewhere: loops on the
 * device, whose trip count may depend on data. Every executed
 * instruction counts towards the job's work, so a loop that never ends
 * is stopped by the job timeout like any long job. Execution is
 * deterministic: the same program on the same inputs gives bit-identical
 * results on every core, in the kernel and in the userspace executor.
 *
 * Lanes (ISA version 3): a program may split its work among
 * &vtpu_prog_header.lanes lanes, for a device to run on that many cores
 * at once (a TPU's megacore). Lane l owns bytes [l * S, (l + 1) * S) of
 * VMEM, S = vmem_size / lanes rounded down to 64 bytes, and every tile
 * of an instruction in lane l lies there. LANE l makes the instructions
 * that follow lane l's, up to the next LANE or BARRIER; BARRIER returns
 * to lane 0, where TRACE and END must be. The meaning of a program is
 * its instructions in order, as one core runs them; a device with more
 * cores may run the lanes between two BARRIERs at the same time, which
 * gives the same results unless an instruction of one lane writes binding
 * bytes that another lane's instruction between the same BARRIERs reads
 * or writes: such bytes' values are then unspecified.
 *
 * Branches (ISA version 4): a branch's target, &vtpu_insn.imm, is the
 * index of an instruction of the program; a program with a branch has at
 * most one lane (&vtpu_prog_header.lanes 0 or 1). In a program of lanes,
 * SLOAD, SSET and SADD are lane 0's, and SLOAD reads lane 0's VMEM. A
 * job's profile holds as many TRACE records as the code has TRACEs: one
 * pass through a loop's; later ones are not recorded.
 */
#ifndef _UAPI_VTPU_ISA_H_
#define _UAPI_VTPU_ISA_H_

#include <linux/types.h>

#if defined(__cplusplus)
extern "C" {
#endif

#define VTPU_PROG_MAGIC			0x55505456	/* "VTPU" */
#define VTPU_PROG_FORMAT_VERSION	1
/*
 * ISA version 2 adds DMA_GATHER, version 3 lanes (LANE, BARRIER and
 * &vtpu_prog_header.lanes), version 4 scalar registers and branches
 * (SLOAD, SSET, SADD, BRZ, BRNZ, JUMP), version 5 BINARY's fused
 * multiply-add (VTPU_BINARY_MADD), version 6 the element step of
 * DMA_LOAD and DMA_STORE (&vtpu_dma.step); validators take programs of
 * versions 1 to 6, each with only what its version has.
 */
#define VTPU_ISA_VERSION		6
#define VTPU_ISA_VERSION_MIN		1

/* Limits every validator enforces. */
#define VTPU_MAX_INSNS			0x100000u
#define VTPU_MAX_BINDINGS		64
#define VTPU_MAX_CONST_SIZE		0x4000000u
#define VTPU_MAX_META_SIZE		0x100000u
#define VTPU_MAX_LANES			8
#define VTPU_SREGS			16	/* scalar registers */
#define VTPU_MAX_DMA_STEP		64	/* &vtpu_dma.step */

/* DMA binding index that names the program's constants section. */
#define VTPU_BINDING_CONSTANTS		0xffffffffu

/**
 * struct vtpu_prog_header - first bytes of every program
 * @magic: VTPU_PROG_MAGIC
 * @format_version: VTPU_PROG_FORMAT_VERSION
 * @isa_version: VTPU_ISA_VERSION the program was compiled for
 * @header_size: sizeof(struct vtpu_prog_header)
 * @insn_count: instructions in the code section, 1..VTPU_MAX_INSNS
 * @code_size: insn_count * sizeof(struct vtpu_insn)
 * @const_size: bytes of the constants section
 * @meta_size: bytes of the metadata section: op names for profiles, each
 *	NUL-terminated; TRACE id N names the Nth string (any id is valid
 *	when the section is empty)
 * @vmem_size: bytes of VMEM the program uses; every tile lies below it and
 *	it must not exceed the core's VMEM
 * @binding_count: buffers the program expects at submit, exactly
 * @flags: zero
 * @checksum: CRC-32 (IEEE 802.3, as zlib's crc32()) of the whole program
 *	computed with this field set to zero
 * @lanes: lanes the program's work is split among, 1..VTPU_MAX_LANES, or
 *	0, which is 1 (ISA version 3; zero before)
 * @reserved: zero
 */
struct vtpu_prog_header {
	__u32 magic;
	__u16 format_version;
	__u16 isa_version;
	__u32 header_size;
	__u32 insn_count;
	__u32 code_size;
	__u32 const_size;
	__u32 meta_size;
	__u32 vmem_size;
	__u32 binding_count;
	__u32 flags;
	__u32 checksum;
	__u32 lanes;
	__u32 reserved[4];
};

/**
 * enum vtpu_dtype - element types
 * @VTPU_DT_F32: IEEE binary32
 * @VTPU_DT_BF16: bfloat16 (upper half of binary32; conversions from f32
 *	round to nearest even, NaN stays NaN)
 * @VTPU_DT_S32: two's complement 32-bit integer
 */
enum vtpu_dtype {
	VTPU_DT_F32 = 1,
	VTPU_DT_BF16 = 2,
	VTPU_DT_S32 = 3,
};

/**
 * struct vtpu_tile - a 2-D tile of VMEM
 * @addr: byte offset of element [0][0] in VMEM, aligned to the element size
 * @rows: rows, >= 1
 * @cols: columns, >= 1
 * @stride: elements from the start of one row to the next, >= @cols
 * @dtype: enum vtpu_dtype
 * @pad: zero
 *
 * The tile covers bytes [addr, addr + ((rows - 1) * stride + cols) * esize).
 * An operand an opcode does not use must be all zero.
 */
struct vtpu_tile {
	__u32 addr;
	__u16 rows;
	__u16 cols;
	__u32 stride;
	__u8 dtype;
	__u8 pad[3];
};

/**
 * struct vtpu_dma - operands of DMA_LOAD, DMA_STORE and DMA_GATHER
 * @v: the VMEM side
 * @offset: byte offset of row 0 in the binding
 * @binding: index into the submit's bindings, or VTPU_BINDING_CONSTANTS
 *	(DMA_LOAD and DMA_GATHER only)
 * @stride: bytes from one row to the next in the binding; may be less
 *	than a row's bytes only for a single row (for DMA_GATHER: a table
 *	of one row)
 * @dtype: element type in the binding; equal to @v.dtype, or f32 and
 *	bf16 in either direction
 * @pad: zero
 * @index: DMA_GATHER: VMEM byte address of @v.rows s32 row indices, one
 *	after the other, not overlapping @v; zero otherwise
 * @rows: DMA_GATHER: rows of the table in the binding, >= 1; zero
 *	otherwise
 * @step: DMA_LOAD and DMA_STORE (ISA version 6): elements of a row lie
 *	@step elements apart in the binding, 0 and 1 meaning adjacent, at
 *	most VTPU_MAX_DMA_STEP; zero otherwise (and before version 6)
 *
 * DMA_LOAD and DMA_STORE: row r moves @v.cols elements between binding
 * bytes [offset + r * stride, ...) and VMEM row r of @v; element j of the
 * row lies at offset + r * stride + j * max(@step, 1) * esize(@dtype).
 * A row's bytes then span ((@v.cols - 1) * max(@step, 1) + 1) elements,
 * and @stride may be less than that only for a single row.
 * DMA_GATHER: row r of @v receives @v.cols elements from binding bytes
 * [offset + i * stride, ...), where i is the r-th index. With
 * VTPU_F_INDEX_WRAP a negative index counts from the end (i + @rows).
 * An index outside [0, @rows) ends the job with -ERANGE before anything
 * is read from the binding for that row.
 * Every byte touched lies inside the binding: the validator checks the
 * whole table, @rows rows, against the binding's size.
 */
struct vtpu_dma {
	struct vtpu_tile v;
	__u64 offset;
	__u32 binding;
	__u32 stride;
	__u8 dtype;
	__u8 pad[3];
	__u32 index;
	__u32 rows;
	__u32 step;
};

/**
 * struct vtpu_insn - one instruction (64 bytes)
 * @op: opcode (enum vtpu_opcode)
 * @sub: function selector: enum vtpu_unary, vtpu_binary, vtpu_cmp or
 *	vtpu_reduce, as the opcode says; zero otherwise
 * @flags: VTPU_F_* bits the opcode allows
 * @imm: immediate: f32 bits (FILL, BINARY/CMP/SELECT with
 *	VTPU_F_BCAST_IMM),
 *	s32 (IOTA start, FILL of s32) or an op id (TRACE)
 * @t: tile operands: destination @t.d and sources @t.a, @t.b
 * @dma: DMA operands
 * @reserved: zero
 */
struct vtpu_insn {
	__u8 op;
	__u8 sub;
	__u16 flags;
	__u32 imm;
	union {
		struct {
			struct vtpu_tile d;
			struct vtpu_tile a;
			struct vtpu_tile b;
		} t;
		struct vtpu_dma dma;
	};
	__u64 reserved;
};

/*
 * Operand kinds, for the table below.
 *   NONE  operand unused, must be all zero
 *   F32   tile of f32
 *   MXU   tile of f32 or bf16
 *   ANY   tile of any dtype
 *   DMA   the instruction uses struct vtpu_dma
 *   IO    like F32, read and written (SELECT's condition)
 */
#define VTPU_K_NONE	0
#define VTPU_K_F32	1
#define VTPU_K_MXU	2
#define VTPU_K_ANY	3
#define VTPU_K_DMA	4
#define VTPU_K_IO	5

/* Flags. Each opcode accepts only the ones its table row lists. */
#define VTPU_F_ACC		0x0001	/* MATMUL, REDUCE: d op= result */
#define VTPU_F_TRANS_A		0x0002	/* MATMUL: use A transposed */
#define VTPU_F_TRANS_B		0x0004	/* MATMUL: use B transposed */
#define VTPU_F_BCAST_MASK	0x0070	/* BINARY, CMP, SELECT: shape of b */
#define VTPU_F_BCAST_NONE	0x0000	/* b has d's shape */
#define VTPU_F_BCAST_SCALAR	0x0010	/* b is 1x1 */
#define VTPU_F_BCAST_ROW	0x0020	/* b is 1 x cols, used by every row */
#define VTPU_F_BCAST_COL	0x0030	/* b is rows x 1, used by every column */
#define VTPU_F_BCAST_IMM	0x0040	/* b is @imm (f32), operand b unused */
#define VTPU_F_AXIS_COLS	0x0100	/* REDUCE: over columns, d is rows x 1 */
#define VTPU_F_AXIS_ROWS	0x0200	/* REDUCE: over rows, d is 1 x cols;
					 * IOTA: value is the row index
					 */
#define VTPU_F_INDEX_WRAP	0x0400	/* DMA_GATHER: negative indices
					 * count from the table's end
					 */

#define VTPU_F_MATMUL	(VTPU_F_ACC | VTPU_F_TRANS_A | VTPU_F_TRANS_B)
#define VTPU_F_BCAST	VTPU_F_BCAST_MASK
#define VTPU_F_REDUCE	(VTPU_F_ACC | VTPU_F_AXIS_COLS | VTPU_F_AXIS_ROWS)

/*
 * Opcodes, function selectors: generated from vtpu_isa_ops.h, the one
 * table of the instruction set. Opcode numbers follow the table order;
 * entries are only ever appended. 0 is no opcode, so zeroed memory is
 * never valid code.
 */
enum vtpu_opcode {
	VTPU_OP_INVALID,
#define VTPU_OP(name, ...) VTPU_OP_##name,
#include "vtpu_isa_ops.h"
#undef VTPU_OP
	VTPU_OP_NR
};

enum vtpu_unary {
#define VTPU_UNARY(name) VTPU_UNARY_##name,
#include "vtpu_isa_ops.h"
#undef VTPU_UNARY
	VTPU_UNARY_NR
};

enum vtpu_binary {
#define VTPU_BINARY(name) VTPU_BINARY_##name,
#include "vtpu_isa_ops.h"
#undef VTPU_BINARY
	VTPU_BINARY_NR
};

/* CMP predicates are ordered: false when either side is NaN, except NE. */
enum vtpu_cmp {
#define VTPU_CMP(name) VTPU_CMP_##name,
#include "vtpu_isa_ops.h"
#undef VTPU_CMP
	VTPU_CMP_NR
};

enum vtpu_reduce {
#define VTPU_REDUCE(name) VTPU_REDUCE_##name,
#include "vtpu_isa_ops.h"
#undef VTPU_REDUCE
	VTPU_REDUCE_NR
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_VTPU_ISA_H_ */
