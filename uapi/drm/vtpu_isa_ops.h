/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * The vtpu instruction set as one X-macro table: each user defines the
 * rows it needs and includes this file, which therefore has no include
 * guard. vtpu_isa.h builds the enums from it; the validator, the
 * executor, the disassembler and the compiler's emitter all expand it.
 *
 * VTPU_OP(name, nsub, d, a, b, flags)
 *   name       mnemonic (VTPU_OP_<name>); opcodes number rows from 1
 *   nsub       number of valid &vtpu_insn.sub values (0: sub must be 0)
 *   d, a, b    operand kinds (VTPU_K_*) of t.d, t.a, t.b; VTPU_K_DMA:
 *              the instruction uses struct vtpu_dma instead
 *   flags      VTPU_F_* flags the opcode accepts
 *
 * Semantics:
 *   END        last instruction of every program, and only there
 *   TRACE      record (imm, timestamp) in the job's profile, if any
 *   DMA_LOAD   VMEM tile <- binding block (converting f32 <-> bf16)
 *   DMA_STORE  binding block <- VMEM tile
 *   DMA_GATHER VMEM tile <- binding rows named by s32 indices in VMEM,
 *              bounds-checked at run time (ISA version 2)
 *   MATMUL     d (+)= op(a) . op(b); d is MxN f32, op(a) MxK, op(b) KxN
 *   UNARY      d = f(a), f = enum vtpu_unary; same shape
 *   BINARY     d = a f b, f = enum vtpu_binary; b broadcast per flags;
 *              MADD is d = a b + d, rounded once as C's fmaf() (ISA
 *              version 5)
 *   CMP        d = (a f b) ? 1.0 : 0.0, f = enum vtpu_cmp
 *   SELECT     d = d != 0 ? a : b, b broadcast per flags
 *   REDUCE     d (op)= reduce_f(a) along an axis, f = enum vtpu_reduce
 *   FILL       d = imm (f32 bits, or s32 for an s32 tile, or the f32
 *              rounded to bf16)
 *   IOTA       d[i][j] = imm + (AXIS_ROWS ? i : j), as d's dtype
 *   CONVERT    d = a converted to d's dtype (f32 -> s32 truncates toward
 *              zero and saturates, NaN -> 0); same shape
 *   TRANSPOSE  d = transpose(a); same dtype
 *   LANE       the instructions up to the next LANE or BARRIER are lane
 *              imm's (ISA version 3; see vtpu_isa.h)
 *   BARRIER    ends the lanes' part of the work: what follows is lane 0's,
 *              and runs once every lane's instruction before it has
 *              (ISA version 3)
 *   SLOAD      s[sub] = the s32 at VMEM byte address imm (4-aligned,
 *              imm + 4 <= vmem_size) (ISA version 4, as all below)
 *   SSET       s[sub] = imm (as s32)
 *   SADD       s[sub] += imm (as s32, wrapping)
 *   BRZ        if s[sub] == 0, continue at instruction imm
 *   BRNZ       if s[sub] != 0, continue at instruction imm
 *   JUMP       continue at instruction imm
 *              s[0..VTPU_SREGS-1] are the core's scalar registers, zero
 *              when a job starts; a branch target is an instruction index
 *              below insn_count (see vtpu_isa.h for the rules)
 *
 * VTPU_UNARY(name), VTPU_BINARY(name), VTPU_CMP(name), VTPU_REDUCE(name)
 *   the function selectors of UNARY, BINARY, CMP and REDUCE, in order.
 */

#ifdef VTPU_OP
VTPU_OP(END,       0,              VTPU_K_NONE, VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(TRACE,     0,              VTPU_K_NONE, VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(DMA_LOAD,  0,              VTPU_K_DMA,  VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(DMA_STORE, 0,              VTPU_K_DMA,  VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(MATMUL,    0,              VTPU_K_F32,  VTPU_K_MXU,  VTPU_K_MXU,  VTPU_F_MATMUL)
VTPU_OP(UNARY,     VTPU_UNARY_NR,  VTPU_K_F32,  VTPU_K_F32,  VTPU_K_NONE, 0)
VTPU_OP(BINARY,    VTPU_BINARY_NR, VTPU_K_F32,  VTPU_K_F32,  VTPU_K_F32,  VTPU_F_BCAST)
VTPU_OP(CMP,       VTPU_CMP_NR,    VTPU_K_F32,  VTPU_K_F32,  VTPU_K_F32,  VTPU_F_BCAST)
VTPU_OP(SELECT,    0,              VTPU_K_IO,   VTPU_K_F32,  VTPU_K_F32,  VTPU_F_BCAST)
VTPU_OP(REDUCE,    VTPU_REDUCE_NR, VTPU_K_F32,  VTPU_K_F32,  VTPU_K_NONE, VTPU_F_REDUCE)
VTPU_OP(FILL,      0,              VTPU_K_ANY,  VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(IOTA,      0,              VTPU_K_ANY,  VTPU_K_NONE, VTPU_K_NONE, VTPU_F_AXIS_ROWS)
VTPU_OP(CONVERT,   0,              VTPU_K_ANY,  VTPU_K_ANY,  VTPU_K_NONE, 0)
VTPU_OP(TRANSPOSE, 0,              VTPU_K_ANY,  VTPU_K_ANY,  VTPU_K_NONE, 0)
VTPU_OP(DMA_GATHER, 0,             VTPU_K_DMA,  VTPU_K_NONE, VTPU_K_NONE, VTPU_F_INDEX_WRAP)
VTPU_OP(LANE,      0,              VTPU_K_NONE, VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(BARRIER,   0,              VTPU_K_NONE, VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(SLOAD,     VTPU_SREGS,     VTPU_K_NONE, VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(SSET,      VTPU_SREGS,     VTPU_K_NONE, VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(SADD,      VTPU_SREGS,     VTPU_K_NONE, VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(BRZ,       VTPU_SREGS,     VTPU_K_NONE, VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(BRNZ,      VTPU_SREGS,     VTPU_K_NONE, VTPU_K_NONE, VTPU_K_NONE, 0)
VTPU_OP(JUMP,      0,              VTPU_K_NONE, VTPU_K_NONE, VTPU_K_NONE, 0)
#endif

#ifdef VTPU_UNARY
VTPU_UNARY(NEG)
VTPU_UNARY(ABS)
VTPU_UNARY(EXP)
VTPU_UNARY(LOG)
VTPU_UNARY(SQRT)
VTPU_UNARY(RSQRT)
VTPU_UNARY(RECIP)
VTPU_UNARY(TANH)
VTPU_UNARY(SIGMOID)
VTPU_UNARY(RELU)
VTPU_UNARY(GELU)
VTPU_UNARY(COPY)
#endif

#ifdef VTPU_BINARY
VTPU_BINARY(ADD)
VTPU_BINARY(SUB)
VTPU_BINARY(MUL)
VTPU_BINARY(DIV)
VTPU_BINARY(MAX)
VTPU_BINARY(MIN)
VTPU_BINARY(POW)
VTPU_BINARY(MADD)
#endif

#ifdef VTPU_CMP
VTPU_CMP(EQ)
VTPU_CMP(NE)
VTPU_CMP(LT)
VTPU_CMP(LE)
VTPU_CMP(GT)
VTPU_CMP(GE)
#endif

#ifdef VTPU_REDUCE
VTPU_REDUCE(SUM)
VTPU_REDUCE(MAX)
VTPU_REDUCE(MIN)
#endif
