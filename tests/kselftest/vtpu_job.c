// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: jobs on the emulated cores — SUBMIT, JOB_WAIT, syncobjs,
 * profiles, timeouts, concurrency, loops on the device (ISA version 4),
 * the fused multiply-add (ISA version 5), the DMA's element step
 * (ISA version 6), and what happens to a job's
 * resources when its file or process goes away. Results must equal, bit
 * for bit, the userspace executor's on the same program and inputs.
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include <xf86drm.h>

#include "vtpu_job_util.h"

#include "kselftest_harness.h"

FIXTURE(job) {
	int fd;
	int minor;
	struct vtpu_params params;
	struct drm_vtpu_query q;
};

FIXTURE_SETUP(job)
{
	vtpu_params_get(&self->params);
	self->fd = vtpu_open(0);
	ASSERT_LE(0, self->fd) TH_LOG("no vtpu device");
	self->minor = vtpu_minor(self->fd);
	ASSERT_EQ(0, vtpu_query(self->fd, &self->q));
	ASSERT_TRUE(self->q.features & DRM_VTPU_FEATURE_SUBMIT);
}

FIXTURE_TEARDOWN(job)
{
	close(self->fd);
}

TEST_F(job, end_only_program_completes)
{
	struct vtpu_buf prog;
	struct vtpu_asm as;
	size_t size;
	__u64 id;
	int status = -1;
	void *p;

	vtpu_asm_init(&as, 0, 0);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, &size);
	vtpu_asm_free(&as);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, size, &prog));
	free(p);

	struct vtpu_submit_args a = { .prog = &prog, .prog_size = size };

	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id));
	ASSERT_NE(0, id);
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 30, &status));
	EXPECT_EQ(0, status);
	/* Reported once: the id is forgotten. */
	EXPECT_EQ(-ENOENT, vtpu_job_wait(self->fd, id, 0, NULL));
	vtpu_buf_free(self->fd, &prog);
}

/*
 * DMA_GATHER: rows of a table chosen by indices in another buffer; an
 * index outside the table fails that job alone with -ERANGE, before its
 * store, and the file's next job runs.
 */
TEST_F(job, gather_out_of_range_index_fails_the_job_with_erange)
{
	struct vtpu_tile idx = vtpu_tile_s32(0, 1, 4, 4);
	struct vtpu_tile rows = vtpu_tile_f32(64, 4, 8, 8);
	struct vtpu_buf prog, ib, tb, ob;
	struct drm_vtpu_binding b[3];
	const float *out, *table;
	struct vtpu_asm as;
	int status = -1, i, j;
	size_t size;
	__u64 id;
	void *p;

	vtpu_asm_init(&as, 64 + 4 * 8 * 4, 3);
	vtpu_asm_dma_load(&as, idx, 0, 0, 16, VTPU_DT_S32);
	vtpu_asm_dma_gather(&as, rows, 1, 0, 32, VTPU_DT_F32, idx.addr, 16,
			    VTPU_F_INDEX_WRAP);
	vtpu_asm_dma_store(&as, rows, 2, 0, 32, VTPU_DT_F32);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, &size);
	vtpu_asm_free(&as);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, size, &prog));
	free(p);
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 16, DRM_VTPU_PLACEMENT_HOST, &ib));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 16 * 32, DRM_VTPU_PLACEMENT_AUTO,
				  &tb));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4 * 32, DRM_VTPU_PLACEMENT_HOST,
				  &ob));
	vtpu_fill_random(tb.map, 16 * 8, 77);
	table = tb.map;
	out = ob.map;
	b[0] = (struct drm_vtpu_binding){ ib.handle, DRM_VTPU_BIND_READ, 0, 16 };
	b[1] = (struct drm_vtpu_binding){ tb.handle, DRM_VTPU_BIND_READ, 0,
					  16 * 32 };
	b[2] = (struct drm_vtpu_binding){ ob.handle, DRM_VTPU_BIND_WRITE, 0,
					  4 * 32 };

	struct vtpu_submit_args a = {
		.prog = &prog, .prog_size = size, .bind = b, .nbind = 3,
	};

	memcpy(ib.map, (int32_t[4]){ 3, -1, 0, 15 }, 16);
	memset(ob.map, 0xab, 4 * 32);
	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 30, &status));
	EXPECT_EQ(0, status);
	for (i = 0; i < 4; i++) {
		int row = ((int32_t[4]){ 3, 15, 0, 15 })[i];

		for (j = 0; j < 8; j++)
			EXPECT_EQ(table[row * 8 + j], out[i * 8 + j])
				TH_LOG("row %d [%d]", i, j);
	}

	/* 16 is one past the table, -17 one before it once wrapped */
	for (i = 0; i < 2; i++) {
		memcpy(ib.map, (int32_t[4]){ 1, i ? -17 : 16, 2, 3 }, 16);
		memset(ob.map, 0xab, 4 * 32);
		ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id));
		ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 30, &status));
		EXPECT_EQ(-ERANGE, status);
		for (j = 0; j < 4 * 32; j++)
			if (((uint8_t *)ob.map)[j] != 0xab)
				break;
		EXPECT_EQ(4 * 32, j) TH_LOG("the store ran: byte %d written", j);
	}
	memcpy(ib.map, (int32_t[4]){ 0, 1, 2, 3 }, 16);
	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 30, &status));
	EXPECT_EQ(0, status);
	EXPECT_EQ(table[3 * 8 + 7], out[3 * 8 + 7]);

	vtpu_buf_free(self->fd, &prog);
	vtpu_buf_free(self->fd, &ib);
	vtpu_buf_free(self->fd, &tb);
	vtpu_buf_free(self->fd, &ob);
}

TEST_F(job, results_equal_userspace_executor_bit_for_bit)
{
	static float ref[N * (N + 1)];
	__u32 placements[] = { DRM_VTPU_PLACEMENT_HBM, DRM_VTPU_PLACEMENT_HOST };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		struct compute c;
		int status = -1;
		__u64 id;

		ASSERT_EQ(0, compute_setup(self->fd, &c, 7 + i, placements[i]));
		ASSERT_EQ(0, compute_reference(&c, self->q.vmem_size, ref));
		ASSERT_EQ(0, compute_submit(self->fd, &c, 0, &id));
		ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 60, &status));
		ASSERT_EQ(0, status);
		EXPECT_EQ(0, memcmp(ref, c.out.map, sizeof(ref)))
			TH_LOG("placement %u: kernel and userspace differ",
			       placements[i]);
		/* And the result is not trivially zero. */
		EXPECT_FALSE(vtpu_mem_is(c.out.map, 0, sizeof(ref)));
		compute_teardown(self->fd, &c);
	}
}

/*
 * A program of two bindings (@in read, @out written) on the kernel and
 * on the userspace executor. @out starts as the bytes it holds and ends
 * as the kernel's result; @t keeps the buffers and the SUBMIT for the
 * refusals a test tries next. Returns 1 when the executor's result
 * differs, a -errno (or the job's status) when a step fails.
 */
struct two_bind {
	struct vtpu_buf prog, ib, ob;
	struct drm_vtpu_binding bind[2];
	struct vtpu_submit_args sa;
};

static int run_two_bind(int fd, __u64 vmem_size, void *p, size_t size,
			float *in, size_t insz, float *out, size_t outsz,
			struct two_bind *t)
{
	static const __u32 access[2] = { VTPU_ACCESS_READ, VTPU_ACCESS_WRITE };
	float *ref = malloc(outsz);
	struct vtpu_exec_binding eb[2] = { { in, insz }, { ref, outsz } };
	int status = -1, ret = ref ? 0 : -ENOMEM;
	__u64 id;

	memset(t, 0, sizeof(*t));
	if (!ret)
		ret = vtpu_buf_prog(fd, p, size, &t->prog);
	if (!ret)
		ret = vtpu_buf_new(fd, insz, DRM_VTPU_PLACEMENT_AUTO, &t->ib);
	if (!ret)
		ret = vtpu_buf_new(fd, outsz, DRM_VTPU_PLACEMENT_HOST, &t->ob);
	if (!ret) {
		memcpy(ref, out, outsz);
		memcpy(t->ib.map, in, insz);
		memcpy(t->ob.map, out, outsz);
		t->bind[0] = (struct drm_vtpu_binding){
			t->ib.handle, DRM_VTPU_BIND_READ, 0, insz };
		t->bind[1] = (struct drm_vtpu_binding){
			t->ob.handle, DRM_VTPU_BIND_WRITE, 0, outsz };
		t->sa = (struct vtpu_submit_args){
			.prog = &t->prog, .prog_size = size, .bind = t->bind,
			.nbind = 2,
		};
		ret = vtpu_submit(fd, &t->sa, &id);
	}
	if (!ret)
		ret = vtpu_job_wait(fd, id, 30, &status);
	if (!ret)
		ret = status;
	if (!ret)
		ret = vtpu_ref_run(p, size, eb, access, 2, vmem_size);
	if (!ret) {
		ret = memcmp(ref, t->ob.map, outsz) ? 1 : 0;
		memcpy(out, t->ob.map, outsz);
	}
	free(ref);
	return ret;
}

/*
 * BINARY MADD (ISA version 5) in the kernel: d = a b + d with b a column
 * broadcast is libm's fmaf() of each element, rounded once, and the
 * userspace executor's bits; the same program marked ISA version 4 is
 * refused at SUBMIT.
 */
TEST_F(job, madd_is_fmaf_and_needs_isa_version_5)
{
	const unsigned int n = 24, nn = n * n;
	struct vtpu_tile a = vtpu_tile_f32(0, n, n, n);
	struct vtpu_tile d = vtpu_tile_f32(nn * 4, n, n, n);
	struct vtpu_tile b = vtpu_tile_f32(2 * nn * 4, n, 1, 1);
	static float in[2 * 24 * 24 + 24], out[24 * 24];
	struct vtpu_prog_header *h;
	struct two_bind t;
	struct vtpu_asm as;
	unsigned int i, j;
	int ret, bad = 0;
	size_t size;
	__u64 id;
	void *p;

	vtpu_asm_init(&as, (2 * nn + n) * 4, 2);
	vtpu_asm_dma_load(&as, a, 0, 0, n * 4, VTPU_DT_F32);
	vtpu_asm_dma_load(&as, d, 0, nn * 4, n * 4, VTPU_DT_F32);
	vtpu_asm_dma_load(&as, b, 0, 2 * nn * 4, 4, VTPU_DT_F32);
	vtpu_asm_binary(&as, VTPU_BINARY_MADD, d, a, b, VTPU_F_BCAST_COL);
	vtpu_asm_dma_store(&as, d, 1, 0, n * 4, VTPU_DT_F32);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, &size);
	vtpu_asm_free(&as);
	ASSERT_NE(NULL, p);
	vtpu_fill_random(in, ARRAY_SIZE(in), 5);
	ret = run_two_bind(self->fd, self->q.vmem_size, p, size, in,
			   sizeof(in), out, sizeof(out), &t);
	ASSERT_LE(0, ret) TH_LOG("the job: %d", ret);
	EXPECT_EQ(0, ret) TH_LOG("kernel and userspace differ");
	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++) {
			float want = fmaf(in[i * n + j], in[2 * nn + i],
					  in[nn + i * n + j]);

			if (!memcmp(&want, &out[i * n + j], sizeof(want)) ||
			    bad++)
				continue;
			TH_LOG("[%u][%u]: %a, want %a", i, j, out[i * n + j],
			       want);
		}
	}
	EXPECT_EQ(0, bad);

	/* The same bytes as an ISA version 4 program. */
	vtpu_buf_free(self->fd, &t.prog);
	h = p;
	h->isa_version = 4;
	vtpu_asm_checksum(p, size);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, size, &t.prog));
	free(p);
	EXPECT_EQ(-EINVAL, vtpu_submit(self->fd, &t.sa, &id));
	vtpu_buf_free(self->fd, &t.prog);
	vtpu_buf_free(self->fd, &t.ib);
	vtpu_buf_free(self->fd, &t.ob);
}

/*
 * The DMA's element step (ISA version 6) in the kernel: a block loaded
 * from every second float of its rows and stored to every third; the
 * elements between them keep what they held, the userspace executor
 * gives the same bytes, and the program is refused at SUBMIT when marked
 * ISA version 5, or when a binding ends one element short of the last
 * one a stepped row reaches.
 */
TEST_F(job, dma_step_reads_and_writes_every_nth_element)
{
	enum { R = 8, C = 20, IN = R * 2 * C, OUT = R * 3 * C };
	struct vtpu_tile v = vtpu_tile_f32(0, R, C, C);
	static float in[IN], out[OUT];
	struct vtpu_prog_header *h;
	struct two_bind t;
	struct vtpu_asm as;
	unsigned int i, j;
	int ret, bad = 0;
	size_t size;
	__u64 id;
	void *p;

	vtpu_asm_init(&as, R * C * 4, 2);
	vtpu_asm_dma_step(&as, false, v, 0, 0, 2 * C * 4, VTPU_DT_F32, 2);
	vtpu_asm_dma_step(&as, true, v, 1, 0, 3 * C * 4, VTPU_DT_F32, 3);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, &size);
	vtpu_asm_free(&as);
	ASSERT_NE(NULL, p);
	vtpu_fill_random(in, IN, 7);
	memset(out, 0x5a, sizeof(out));
	ret = run_two_bind(self->fd, self->q.vmem_size, p, size, in,
			   sizeof(in), out, sizeof(out), &t);
	ASSERT_LE(0, ret) TH_LOG("the job: %d", ret);
	EXPECT_EQ(0, ret) TH_LOG("kernel and userspace differ");
	for (i = 0; i < R; i++) {
		for (j = 0; j < 3 * C; j++) {
			float want = in[i * 2 * C + j / 3 * 2];

			if (j % 3)	/* untouched: the fill's bytes */
				memset(&want, 0x5a, sizeof(want));
			if (!memcmp(&want, &out[i * 3 * C + j], sizeof(want)) ||
			    bad++)
				continue;
			TH_LOG("[%u][%u]: %a, want %a", i, j,
			       out[i * 3 * C + j], want);
		}
	}
	EXPECT_EQ(0, bad);

	/* A store binding one float short of the last element stored. */
	t.bind[1].size = sizeof(out) - 2 * 4 - 4;
	EXPECT_EQ(-EINVAL, vtpu_submit(self->fd, &t.sa, &id));
	t.bind[1].size = sizeof(out);

	/* The same bytes as an ISA version 5 program. */
	vtpu_buf_free(self->fd, &t.prog);
	h = p;
	h->isa_version = 5;
	vtpu_asm_checksum(p, size);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, size, &t.prog));
	free(p);
	EXPECT_EQ(-EINVAL, vtpu_submit(self->fd, &t.sa, &id));
	vtpu_buf_free(self->fd, &t.prog);
	vtpu_buf_free(self->fd, &t.ib);
	vtpu_buf_free(self->fd, &t.ob);
}

/*
 * A program on @vmem bytes of VMEM split among @lanes lanes (0: none)
 * whose tiles of VM_R x VM_C floats start at each of @addrs: each lane
 * loads its tiles from binding 0 (@load) or stores them, unwritten, to
 * binding 1, the i-th at i tiles' bytes. malloc'd; NULL on ENOMEM.
 */
enum { VM_R = 16, VM_C = 32, VM_TILE = VM_R * VM_C * 4 };

static void *vmem_prog(__u32 vmem, __u32 lanes, const __u32 *addrs, int n,
		       bool load, size_t *size)
{
	__u32 share = lanes > 1 ? vmem / lanes & ~63u : 0;
	struct vtpu_prog_header *h;
	struct vtpu_asm as;
	void *p;
	int i;

	vtpu_asm_init(&as, vmem, 2);
	for (i = 0; i < n; i++) {
		struct vtpu_tile t = vtpu_tile_f32(addrs[i], VM_R, VM_C, VM_C);

		if (share)
			vtpu_asm_op(&as, VTPU_OP_LANE, 0, 0, addrs[i] / share,
				    vtpu_no_tile, vtpu_no_tile, vtpu_no_tile);
		if (load)
			vtpu_asm_dma_load(&as, t, 0, 0, VM_C * 4, VTPU_DT_F32);
		else
			vtpu_asm_dma_store(&as, t, 1, (__u64)i * VM_TILE,
					   VM_C * 4, VTPU_DT_F32);
	}
	vtpu_asm_op(&as, VTPU_OP_BARRIER, 0, 0, 0, vtpu_no_tile, vtpu_no_tile,
		    vtpu_no_tile);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, size);
	vtpu_asm_free(&as);
	if (p) {
		h = p;
		h->lanes = lanes;
		vtpu_asm_checksum(p, *size);
	}
	return p;
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

/* Runs @p with bindings @ib and @ob; the core it ran on in @core. */
static int vmem_run(int fd, void *p, size_t size, struct vtpu_buf *ib,
		    struct vtpu_buf *ob, struct vtpu_buf *prof, __u32 *core)
{
	struct drm_vtpu_binding bind[2] = {
		{ ib->handle, DRM_VTPU_BIND_READ, 0, ib->size },
		{ ob->handle, DRM_VTPU_BIND_WRITE, 0, ob->size },
	};
	struct vtpu_submit_args a = { .prog_size = size, .bind = bind,
				      .nbind = 2, .profile = prof->handle };
	struct vtpu_buf prog;
	int ret, status = -1;
	__u64 id;

	ret = vtpu_buf_prog(fd, p, size, &prog);
	if (ret)
		return ret;
	a.prog = &prog;
	ret = vtpu_submit(fd, &a, &id);
	if (!ret)
		ret = vtpu_job_wait(fd, id, 30, &status);
	if (!ret)
		ret = status;
	*core = ((struct drm_vtpu_profile *)prof->map)->core;
	vtpu_buf_free(fd, &prog);
	return ret;
}

/*
 * Nothing passes from one job to the next through VMEM, whatever either
 * program's lanes. The core clears only what a program's tiles reach
 * from the start of each lane's share, so a job of two lanes fills the
 * start of both shares, and jobs of four lanes and of none, run after it
 * on the same core, store those bytes without writing them: all zeros.
 */
TEST_F(job, vmem_keeps_nothing_of_the_job_before)
{
	__u32 v = (__u32)self->q.vmem_size, s2 = v / 2 & ~63u,
	      s4 = v / 4 & ~63u, core, after_writer[2] = { 0, 0 };
	__u32 wr[] = { 0, s2 }, four[] = { 0, s4, 2 * s4, 3 * s4 };
	struct vtpu_buf ib, ob, prof;
	bool last_wrote[64] = { false };
	int round, ret, bad = 0;
	size_t size[3];
	unsigned int i, r;
	void *p[3];

	ASSERT_LE(4u * VM_TILE, s4) TH_LOG("VMEM of %u bytes", v);
	ASSERT_GE(ARRAY_SIZE(last_wrote), self->q.core_count);
	p[0] = vmem_prog(v, 4, four, 4, false, &size[0]);
	p[1] = vmem_prog(v, 0, wr, 2, false, &size[1]);
	p[2] = vmem_prog(v, 2, wr, 2, true, &size[2]);	/* the writer */
	ASSERT_TRUE(p[0] && p[1] && p[2]);
	ASSERT_EQ(0, vtpu_buf_new(self->fd, VM_TILE, DRM_VTPU_PLACEMENT_AUTO,
				  &ib));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4 * VM_TILE,
				  DRM_VTPU_PLACEMENT_HOST, &ob));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096, DRM_VTPU_PLACEMENT_HOST,
				  &prof));
	memset(ib.map, 0x5a, VM_TILE);
	/*
	 * The writer, then both readers, in turns; until each reader has
	 * run on a core whose last job was the writer's a few times.
	 */
	for (round = 0; round < 64; round++) {
		if (after_writer[0] >= 4 && after_writer[1] >= 4)
			break;
		ret = vmem_run(self->fd, p[2], size[2], &ib, &ob, &prof, &core);
		ASSERT_EQ(0, ret);
		ASSERT_GT(self->q.core_count, core);
		last_wrote[core] = true;
		for (i = 0; i < 2; i++) {
			r = (i + round / 2) % 2;
			memset(ob.map, 0xff, ob.size);
			ret = vmem_run(self->fd, p[r], size[r], &ib, &ob, &prof,
				       &core);
			ASSERT_EQ(0, ret);
			ASSERT_GT(self->q.core_count, core);
			after_writer[r] += last_wrote[core];
			last_wrote[core] = false;
			if (!all_zero(ob.map, (r ? 2 : 4) * VM_TILE) && !bad++)
				TH_LOG("round %d, reader %u: VMEM not clear",
				       round, r);
		}
	}
	EXPECT_EQ(0, bad);
	EXPECT_LE(4u, after_writer[0]);
	EXPECT_LE(4u, after_writer[1]);
	vtpu_buf_free(self->fd, &prof);
	vtpu_buf_free(self->fd, &ib);
	vtpu_buf_free(self->fd, &ob);
	for (i = 0; i < 3; i++)
		free(p[i]);
}

TEST_F(job, profile_records_the_job)
{
	struct drm_vtpu_profile *p;
	struct vtpu_buf prof;
	struct compute c;
	int status = -1;
	__s64 before;
	__u64 id;
	unsigned int i;

	ASSERT_EQ(0, compute_setup(self->fd, &c, 3, DRM_VTPU_PLACEMENT_AUTO));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096, DRM_VTPU_PLACEMENT_HOST,
				  &prof));
	memset(prof.map, 0xff, prof.size);
	before = vtpu_now_ns();
	ASSERT_EQ(0, compute_submit(self->fd, &c, prof.handle, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 60, &status));
	ASSERT_EQ(0, status);

	p = prof.map;
	EXPECT_EQ(0, p->status);
	EXPECT_LT(p->core, self->q.core_count);
	EXPECT_LE((__u64)before, p->queued);
	EXPECT_LE(p->queued, p->start);
	EXPECT_LE(p->start, p->end);
	EXPECT_LE(p->end, (__u64)vtpu_now_ns());
	EXPECT_EQ(12, p->insns);	/* every instruction, END included */
	/* 2*N^3 for the matmul plus elementwise and reduce work. */
	EXPECT_LE(2ULL * N * N * N, p->flops);
	EXPECT_EQ(2ULL * N * N * 4 + (N * N + N) * 4, p->dma_bytes);
	ASSERT_EQ(3, p->trace_count);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(i, p->trace[i].id);
		EXPECT_LE(p->start, p->trace[i].timestamp);
		EXPECT_GE(p->end, p->trace[i].timestamp);
		if (i)
			EXPECT_LE(p->trace[i - 1].timestamp, p->trace[i].timestamp);
	}
	vtpu_buf_free(self->fd, &prof);
	compute_teardown(self->fd, &c);
}

TEST_F(job, profile_buffer_too_small_is_einval)
{
	struct vtpu_state before;
	struct vtpu_buf prof;
	struct compute c;
	struct drm_vtpu_submit s;

	ASSERT_EQ(0, compute_setup(self->fd, &c, 3, DRM_VTPU_PLACEMENT_AUTO));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096, DRM_VTPU_PLACEMENT_HOST,
				  &prof));
	ASSERT_EQ(0, vtpu_state_get(self->fd, &before));
	memset(&s, 0, sizeof(s));
	s.program_handle = c.prog.handle;
	s.program_size = c.prog_size;
	s.bindings = (__u64)(uintptr_t)c.bind;
	s.binding_count = 3;
	s.profile_handle = prof.handle;
	/* The header and three trace records need more than 4096 - 4032. */
	s.profile_offset = 4096 - sizeof(struct drm_vtpu_profile) - 8;
	EXPECT_EQ(-EINVAL, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_SUBMIT, &s));
	s.profile_offset = 4; /* misaligned */
	EXPECT_EQ(-EINVAL, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_SUBMIT, &s));
	EXPECT_STATE_UNCHANGED(self->fd, &before);
	EXPECT_EQ(0, vtpu_jobs_alive(self->minor));
	vtpu_buf_free(self->fd, &prof);
	compute_teardown(self->fd, &c);
}

/* Job B reads what job A wrote, ordered only by a syncobj. */
TEST_F(job, syncobj_chains_job_a_before_job_b)
{
	struct vtpu_buf pa, pb, x, y;
	struct drm_vtpu_binding ba, bb[2];
	struct drm_vtpu_sync in;
	struct vtpu_asm as;
	__u32 sync;
	size_t sa, sb;
	void *p;
	__u64 ida, idb;
	int status = -1;
	unsigned int i;
	struct vtpu_tile t = vtpu_tile_f32(0, 64, 64, 64);
	struct vtpu_tile u = vtpu_tile_f32(64 * 64 * 4, 64, 64, 64);

	/* A: x = 100 x (ones . halves) = 3200 everywhere, after some work. */
	p = vtpu_prog_spin(64, 100, &sa);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, sa, &pa));
	free(p);
	/* B: y = x + 1. */
	vtpu_asm_init(&as, 2 * 64 * 64 * 4, 2);
	vtpu_asm_dma_load(&as, t, 0, 0, 64 * 4, VTPU_DT_F32);
	vtpu_asm_binary_imm(&as, VTPU_BINARY_ADD, u, t, 1.0f);
	vtpu_asm_dma_store(&as, u, 1, 0, 64 * 4, VTPU_DT_F32);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, &sb);
	vtpu_asm_free(&as);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, sb, &pb));
	free(p);

	ASSERT_EQ(0, vtpu_buf_new(self->fd, 64 * 64 * 4,
				  DRM_VTPU_PLACEMENT_HBM, &x));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 64 * 64 * 4,
				  DRM_VTPU_PLACEMENT_HOST, &y));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &sync));

	ba = (struct drm_vtpu_binding){ x.handle, DRM_VTPU_BIND_WRITE, 0,
					x.size };
	bb[0] = (struct drm_vtpu_binding){ x.handle, DRM_VTPU_BIND_READ, 0,
					   x.size };
	bb[1] = (struct drm_vtpu_binding){ y.handle, DRM_VTPU_BIND_WRITE, 0,
					   y.size };
	in = (struct drm_vtpu_sync){ .handle = sync };

	struct vtpu_submit_args a = {
		.prog = &pa, .prog_size = sa, .bind = &ba, .nbind = 1,
		.out_sync = sync,
	};
	struct vtpu_submit_args b = {
		.prog = &pb, .prog_size = sb, .bind = bb, .nbind = 2,
		.in = &in, .nin = 1,
	};

	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &ida));
	ASSERT_EQ(0, vtpu_submit(self->fd, &b, &idb));
	/* Waiting on B alone must be enough. */
	ASSERT_EQ(0, vtpu_job_wait(self->fd, idb, 60, &status));
	ASSERT_EQ(0, status);
	for (i = 0; i < 64 * 64; i++)
		if (((float *)y.map)[i] != 3201.0f)
			break;
	EXPECT_EQ(64 * 64, i) TH_LOG("y[%u] = %f, want 3201", i,
				     ((float *)y.map)[i]);
	/* The syncobj carries A's fence: signalled by now. */
	EXPECT_EQ(0, drmSyncobjWait(self->fd, &sync, 1, 0, 0, NULL));
	EXPECT_EQ(0, vtpu_job_wait(self->fd, ida, 60, &status));
	EXPECT_EQ(0, status);

	drmSyncobjDestroy(self->fd, sync);
	vtpu_buf_free(self->fd, &pa);
	vtpu_buf_free(self->fd, &pb);
	vtpu_buf_free(self->fd, &x);
	vtpu_buf_free(self->fd, &y);
}

TEST_F(job, timeline_syncobj_point_signals)
{
	struct vtpu_buf prog;
	struct vtpu_asm as;
	uint64_t point = 5;
	__u64 id;
	__u32 sync;
	size_t size;
	void *p;

	vtpu_asm_init(&as, 0, 0);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, &size);
	vtpu_asm_free(&as);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, size, &prog));
	free(p);
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &sync));

	struct drm_vtpu_submit s = {
		.program_handle = prog.handle, .program_size = size,
		.out_sync = sync, .out_sync_point = point,
	};

	ASSERT_EQ(0, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_SUBMIT, &s));
	id = s.job_id;
	EXPECT_EQ(0, drmSyncobjTimelineWait(self->fd, &sync, &point, 1,
					    vtpu_now_ns() + 30000000000LL,
					    0, NULL));
	EXPECT_EQ(0, vtpu_job_wait(self->fd, id, 30, NULL));
	drmSyncobjDestroy(self->fd, sync);
	vtpu_buf_free(self->fd, &prog);
}

TEST_F(job, job_wait_errors)
{
	struct drm_vtpu_job_wait w = { .job_id = 1, .flags = 1 };

	EXPECT_EQ(-EINVAL, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_JOB_WAIT, &w));
	w.flags = 0;
	w.job_id = 0;
	EXPECT_EQ(-ENOENT, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_JOB_WAIT, &w));
	w.job_id = 999999;
	EXPECT_EQ(-ENOENT, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_JOB_WAIT, &w));
	w.job_id = ~0ULL;
	EXPECT_EQ(-ENOENT, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_JOB_WAIT, &w));
}

/* Every malformed SUBMIT fails with its errno and leaves nothing behind. */
TEST_F(job, bad_submit_is_rejected_without_state_change)
{
	struct drm_vtpu_binding bind[DRM_VTPU_MAX_BINDINGS + 1];
	struct drm_vtpu_sync sync = { .handle = 12345 };
	struct vtpu_state before;
	struct compute c;
	struct drm_vtpu_submit s, good;
	struct vtpu_prog_header *h;
	struct vtpu_buf bad;
	unsigned int i;

	ASSERT_EQ(0, compute_setup(self->fd, &c, 1, DRM_VTPU_PLACEMENT_AUTO));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, c.prog.size,
				  DRM_VTPU_PLACEMENT_HOST, &bad));
	ASSERT_EQ(0, vtpu_state_get(self->fd, &before));
	memset(&good, 0, sizeof(good));
	good.program_handle = c.prog.handle;
	good.program_size = c.prog_size;
	good.bindings = (__u64)(uintptr_t)c.bind;
	good.binding_count = 3;

#define EXPECT_SUBMIT(err, edit) do {					\
		s = good;						\
		edit;							\
		EXPECT_EQ(err, vtpu_ioctl(self->fd,			\
					  DRM_IOCTL_VTPU_SUBMIT, &s))	\
			TH_LOG("%s", #edit);				\
	} while (0)

	EXPECT_SUBMIT(-EINVAL, s.flags = 1);
	EXPECT_SUBMIT(-EINVAL, s.flags = 0x80000000);
	EXPECT_SUBMIT(-E2BIG, s.binding_count = DRM_VTPU_MAX_BINDINGS + 1);
	EXPECT_SUBMIT(-E2BIG, s.in_sync_count = DRM_VTPU_MAX_IN_SYNCS + 1);
	EXPECT_SUBMIT(-EINVAL, s.binding_count = 2);	/* program wants 3 */
	EXPECT_SUBMIT(-EFAULT, s.bindings = 8);
	EXPECT_SUBMIT(-ENOENT, s.program_handle = 999999);
	EXPECT_SUBMIT(-EINVAL, s.program_size = 16);
	EXPECT_SUBMIT(-EINVAL, s.program_size = c.prog_size - 1);
	EXPECT_SUBMIT(-EINVAL, s.program_size = c.prog.size + 64);
	EXPECT_SUBMIT(-EINVAL, s.program_offset = ~0ULL - 8);
	EXPECT_SUBMIT(-EINVAL, s.program_size = ~0ULL);
	EXPECT_SUBMIT(-ENOENT, s.out_sync = 999999);
	EXPECT_SUBMIT(-EINVAL, s.out_sync_point = 1);	/* point without sync */
	EXPECT_SUBMIT(-ENOENT, s.profile_handle = 999999);
	EXPECT_SUBMIT(-EINVAL, s.profile_offset = 8);	/* offset without buffer */
	EXPECT_SUBMIT(-ENOENT, (s.in_syncs = (__u64)(uintptr_t)&sync,
				s.in_sync_count = 1));
	sync.handle = 0;
	sync.flags = 1;
	EXPECT_SUBMIT(-EINVAL, (s.in_syncs = (__u64)(uintptr_t)&sync,
				s.in_sync_count = 1));

	/* Bindings: flags, handles and ranges. */
	memcpy(bind, c.bind, sizeof(c.bind));
	bind[0].flags = 0;
	EXPECT_SUBMIT(-EINVAL, s.bindings = (__u64)(uintptr_t)bind);
	bind[0].flags = 4;
	EXPECT_SUBMIT(-EINVAL, s.bindings = (__u64)(uintptr_t)bind);
	memcpy(bind, c.bind, sizeof(c.bind));
	bind[1].handle = 999999;
	EXPECT_SUBMIT(-ENOENT, s.bindings = (__u64)(uintptr_t)bind);
	memcpy(bind, c.bind, sizeof(c.bind));
	bind[2].size = 0;
	EXPECT_SUBMIT(-EINVAL, s.bindings = (__u64)(uintptr_t)bind);
	memcpy(bind, c.bind, sizeof(c.bind));
	bind[2].offset = c.out.size - 4;	/* range past the buffer */
	EXPECT_SUBMIT(-EINVAL, s.bindings = (__u64)(uintptr_t)bind);
	memcpy(bind, c.bind, sizeof(c.bind));
	bind[2].offset = ~0ULL;
	EXPECT_SUBMIT(-EINVAL, s.bindings = (__u64)(uintptr_t)bind);
	/* In range of the buffer, but smaller than the program's DMA. */
	memcpy(bind, c.bind, sizeof(c.bind));
	bind[2].size -= 4;
	EXPECT_SUBMIT(-EINVAL, s.bindings = (__u64)(uintptr_t)bind);
	/* Write-only input: the program reads binding 0. */
	memcpy(bind, c.bind, sizeof(c.bind));
	bind[0].flags = DRM_VTPU_BIND_WRITE;
	EXPECT_SUBMIT(-EINVAL, s.bindings = (__u64)(uintptr_t)bind);

	/* Malformed programs: bad checksum, unknown opcode (rechecksummed). */
	memcpy(bad.map, c.prog.map, c.prog_size);
	((__u8 *)bad.map)[sizeof(*h) + 5] ^= 1;
	EXPECT_SUBMIT(-EINVAL, s.program_handle = bad.handle);
	memcpy(bad.map, c.prog.map, c.prog_size);
	((struct vtpu_insn *)((__u8 *)bad.map + sizeof(*h)))[1].op = 0xee;
	vtpu_asm_checksum(bad.map, c.prog_size);
	EXPECT_SUBMIT(-EINVAL, s.program_handle = bad.handle);
	memcpy(bad.map, c.prog.map, c.prog_size);
	h = bad.map;
	h->vmem_size = self->q.vmem_size + 4;
	vtpu_asm_checksum(bad.map, c.prog_size);
	EXPECT_SUBMIT(-EINVAL, s.program_handle = bad.handle);
#undef EXPECT_SUBMIT

	EXPECT_STATE_UNCHANGED(self->fd, &before);
	EXPECT_EQ(0, vtpu_jobs_alive(self->minor));

	/* And the good request still works after all that. */
	for (i = 0; i < 1; i++) {
		__u64 id;
		int status = -1;

		s = good;
		ASSERT_EQ(0, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_SUBMIT, &s));
		id = s.job_id;
		ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 60, &status));
		EXPECT_EQ(0, status);
	}
	vtpu_buf_free(self->fd, &bad);
	compute_teardown(self->fd, &c);
}

/* A program that runs far past the job timeout. */
static void *runaway_program(size_t *size)
{
	/* 256^3 MACs per MATMUL; thousands of them take minutes. */
	return vtpu_prog_spin(256, 4000, size);
}

TEST_F(job, runaway_job_times_out_while_other_files_jobs_complete)
{
	struct vtpu_buf prog, out, prof, oprof;
	struct drm_vtpu_profile *rp, *op;
	struct drm_vtpu_binding b;
	__u64 other_end[5];
	long timeouts_before;
	size_t size;
	__u64 id;
	int other, status = 0, i;
	void *p;

	timeouts_before = vtpu_core_timeouts(self->minor);
	ASSERT_LE(0, timeouts_before);
	p = runaway_program(&size);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, size, &prog));
	free(p);
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 256 * 256 * 4,
				  DRM_VTPU_PLACEMENT_AUTO, &out));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096, DRM_VTPU_PLACEMENT_HOST,
				  &prof));
	b = (struct drm_vtpu_binding){ out.handle, DRM_VTPU_BIND_WRITE, 0,
				       out.size };

	struct vtpu_submit_args a = {
		.prog = &prog, .prog_size = size, .bind = &b, .nbind = 1,
		.profile = prof.handle,
	};

	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id));

	/* Meanwhile another file's jobs run on the other core(s). */
	other = vtpu_open(0);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, vtpu_buf_new(other, 4096, DRM_VTPU_PLACEMENT_HOST,
				  &oprof));
	op = oprof.map;
	for (i = 0; i < 5; i++) {
		static float ref[N * (N + 1)];
		struct compute c;
		int st = -1;
		__u64 oid;

		ASSERT_EQ(0, compute_setup(other, &c, 40 + i,
					   DRM_VTPU_PLACEMENT_AUTO));
		ASSERT_EQ(0, compute_reference(&c, self->q.vmem_size, ref));
		ASSERT_EQ(0, compute_submit(other, &c, oprof.handle, &oid));
		ASSERT_EQ(0, vtpu_job_wait(other, oid, 60, &st));
		EXPECT_EQ(0, st);
		EXPECT_EQ(0, memcmp(ref, c.out.map, sizeof(ref)));
		other_end[i] = op->end;
		compute_teardown(other, &c);
	}
	vtpu_buf_free(other, &oprof);
	close(other);

	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 120, &status));
	EXPECT_EQ(-ETIMEDOUT, status);
	rp = prof.map;
	EXPECT_EQ(-ETIMEDOUT, rp->status);
	EXPECT_LT(rp->insns, 4000);
	EXPECT_LT(0, rp->insns);
	/*
	 * The core's watchdog stops it at the timeout, give or take one
	 * instruction; the scheduler's backstop would take twice as long.
	 */
	TH_LOG("runaway: %llu instructions in %llu ms (timeout %lu ms)",
	       (unsigned long long)rp->insns,
	       (unsigned long long)(rp->end - rp->start) / 1000000,
	       vtpu_env_ulong("VTPU_JOB_TIMEOUT_MS", 2000));
	EXPECT_LE(vtpu_env_ulong("VTPU_JOB_TIMEOUT_MS", 2000) * 1000000ULL,
		  rp->end - rp->start);
	EXPECT_GT(vtpu_env_ulong("VTPU_JOB_TIMEOUT_MS", 2000) * 1500000ULL,
		  rp->end - rp->start);
	EXPECT_EQ(timeouts_before + 1, vtpu_core_timeouts(self->minor));
	/* The other file's jobs all ended while the runaway still ran. */
	for (i = 0; i < 5; i++)
		EXPECT_LT(other_end[i], rp->end);

	/* The core went on: the same file's next job runs normally. */
	{
		static float ref[N * (N + 1)];
		struct compute c;
		int st = -1;
		__u64 nid;

		ASSERT_EQ(0, compute_setup(self->fd, &c, 99,
					   DRM_VTPU_PLACEMENT_AUTO));
		ASSERT_EQ(0, compute_reference(&c, self->q.vmem_size, ref));
		ASSERT_EQ(0, compute_submit(self->fd, &c, 0, &nid));
		ASSERT_EQ(0, vtpu_job_wait(self->fd, nid, 60, &st));
		EXPECT_EQ(0, st);
		EXPECT_EQ(0, memcmp(ref, c.out.map, sizeof(ref)));
		compute_teardown(self->fd, &c);
	}
	vtpu_buf_free(self->fd, &prog);
	vtpu_buf_free(self->fd, &out);
	vtpu_buf_free(self->fd, &prof);
}

/*
 * Loops on the device (ISA version 4): a counted loop adds 1.5 to a tile
 * 37 times; a while loop triples x from the input until it reaches 100,
 * its condition read from VMEM by SLOAD. The results prove the trip
 * counts, and equal the userspace executor's.
 */
static void *loop_program(size_t *size)
{
	struct vtpu_tile acc = vtpu_tile_f32(0, 4, 8, 8);
	struct vtpu_tile x = vtpu_tile_f32(128, 1, 1, 1);
	struct vtpu_tile c = vtpu_tile_f32(192, 1, 1, 1);
	struct vtpu_tile n = vtpu_tile_s32(256, 1, 1, 1);
	struct vtpu_asm as;
	__u32 top;
	void *p;

	vtpu_asm_init(&as, 512, 2);
	vtpu_asm_fill_f32(&as, acc, 0.0f);
	vtpu_asm_sset(&as, 0, 37);
	top = vtpu_asm_here(&as);
	vtpu_asm_binary_imm(&as, VTPU_BINARY_ADD, acc, acc, 1.5f);
	vtpu_asm_sadd(&as, 0, -1);
	vtpu_asm_brnz(&as, 0, top);
	vtpu_asm_dma_load(&as, x, 0, 0, 4, VTPU_DT_F32);
	top = vtpu_asm_here(&as);
	vtpu_asm_binary_imm(&as, VTPU_BINARY_MUL, x, x, 3.0f);
	vtpu_asm_cmp_imm(&as, VTPU_CMP_LT, c, x, 100.0f);
	vtpu_asm_convert(&as, n, c);
	vtpu_asm_sload(&as, 5, n.addr);
	vtpu_asm_brnz(&as, 5, top);
	vtpu_asm_dma_store(&as, acc, 1, 0, 32, VTPU_DT_F32);
	vtpu_asm_dma_store(&as, x, 1, 128, 4, VTPU_DT_F32);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, size);
	vtpu_asm_free(&as);
	return p;
}

TEST_F(job, loop_program_runs_its_passes)
{
	static const __u32 access[2] = { VTPU_ACCESS_READ, VTPU_ACCESS_WRITE };
	struct vtpu_buf prog, in, out, prof;
	struct vtpu_exec_binding ref[2];
	struct drm_vtpu_binding b[2];
	float x0 = 1.0f, *o, r[33];
	size_t size;
	int status = -1, i;
	__u64 id;
	void *p;

	p = loop_program(&size);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, size, &prog));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096, DRM_VTPU_PLACEMENT_AUTO, &in));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096, DRM_VTPU_PLACEMENT_AUTO,
				  &out));
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096, DRM_VTPU_PLACEMENT_HOST,
				  &prof));
	memcpy(in.map, &x0, 4);
	b[0] = (struct drm_vtpu_binding){ in.handle, DRM_VTPU_BIND_READ, 0, 4 };
	b[1] = (struct drm_vtpu_binding){ out.handle, DRM_VTPU_BIND_WRITE, 0,
					  132 };

	struct vtpu_submit_args a = {
		.prog = &prog, .prog_size = size, .bind = b, .nbind = 2,
		.profile = prof.handle,
	};

	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 60, &status));
	EXPECT_EQ(0, status);
	o = out.map;
	for (i = 0; i < 32; i++)
		EXPECT_EQ(37 * 1.5f, o[i]);
	EXPECT_EQ(243.0f, o[32]);
	/* FILL SSET 37x(BINARY SADD BRNZ) LOAD 5x(MUL CMP CONVERT SLOAD BRNZ) 2xSTORE END */
	EXPECT_EQ(2 + 37 * 3 + 1 + 5 * 5 + 3,
		  ((struct drm_vtpu_profile *)prof.map)->insns);

	/* bit for bit the userspace executor's */
	memset(r, 0, sizeof(r));
	ref[0] = (struct vtpu_exec_binding){ &x0, 4 };
	ref[1] = (struct vtpu_exec_binding){ r, 132 };
	ASSERT_EQ(0, vtpu_ref_run(p, size, ref, access, 2, self->q.vmem_size));
	EXPECT_EQ(0, memcmp(r, o, sizeof(r)));
	free(p);
	vtpu_buf_free(self->fd, &prof);
	vtpu_buf_free(self->fd, &out);
	vtpu_buf_free(self->fd, &in);
	vtpu_buf_free(self->fd, &prog);
}

/* A one-instruction program and END, edited by @edit, then submitted. */
static int submit_scalar(int fd, __u8 op, __u8 sub, __u32 imm, int edit)
{
	struct vtpu_prog_header *h;
	struct vtpu_insn in = { .op = op, .sub = sub, .imm = imm };
	struct vtpu_buf prog;
	struct vtpu_asm as;
	int ret, status = -1;
	size_t size;
	__u64 id;
	void *p;

	vtpu_asm_init(&as, 256, 0);
	vtpu_asm_emit(&as, &in);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, &size);
	vtpu_asm_free(&as);
	if (!p)
		return -ENOMEM;
	h = p;
	if (edit == 1)
		h->isa_version = 3;
	else if (edit == 2)
		h->lanes = 2;
	else if (edit == 3)
		((struct vtpu_insn *)(h + 1))->t.b.rows = 1;
	vtpu_asm_checksum(p, size);
	ret = vtpu_buf_prog(fd, p, size, &prog);
	free(p);
	if (ret)
		return ret;

	struct vtpu_submit_args a = { .prog = &prog, .prog_size = size };

	ret = vtpu_submit(fd, &a, &id);
	if (!ret) {
		ret = vtpu_job_wait(fd, id, 60, &status);
		ret = ret ? ret : status;
	}
	vtpu_buf_free(fd, &prog);
	return ret;
}

/* Every broken rule of the scalar unit and branches: -EINVAL at SUBMIT. */
TEST_F(job, malformed_scalar_and_branch_programs_are_rejected)
{
	static const __u8 ops[] = {
		VTPU_OP_SLOAD, VTPU_OP_SSET, VTPU_OP_SADD,
		VTPU_OP_BRZ, VTPU_OP_BRNZ, VTPU_OP_JUMP,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		/* SLOAD of VMEM byte 4, a branch to END: each runs and ends */
		__u32 imm = ops[i] >= VTPU_OP_BRZ ? 1 : 4;

		EXPECT_EQ(0, submit_scalar(self->fd, ops[i], 0, imm, 0));
		EXPECT_EQ(-EINVAL, submit_scalar(self->fd, ops[i], 0, imm, 1))
			TH_LOG("op %u in an ISA version 3 program", ops[i]);
		EXPECT_EQ(-EINVAL, submit_scalar(self->fd, ops[i], 0, imm, 3))
			TH_LOG("op %u with an operand", ops[i]);
		EXPECT_EQ(-EINVAL, submit_scalar(self->fd, ops[i], VTPU_SREGS,
						 imm, 0));
	}
	for (i = 3; i < ARRAY_SIZE(ops); i++) {
		EXPECT_EQ(0, submit_scalar(self->fd, ops[i], 0, 1, 0));
		EXPECT_EQ(-EINVAL, submit_scalar(self->fd, ops[i], 0, 2, 0))
			TH_LOG("op %u: target == insn_count", ops[i]);
		EXPECT_EQ(-EINVAL, submit_scalar(self->fd, ops[i], 0, ~0u, 0));
		EXPECT_EQ(-EINVAL, submit_scalar(self->fd, ops[i], 0, 1, 2))
			TH_LOG("op %u in a program of two lanes", ops[i]);
	}
	EXPECT_EQ(-EINVAL, submit_scalar(self->fd, VTPU_OP_JUMP, 1, 1, 0));
	EXPECT_EQ(0, submit_scalar(self->fd, VTPU_OP_SLOAD, 15, 252, 0));
	EXPECT_EQ(-EINVAL, submit_scalar(self->fd, VTPU_OP_SLOAD, 0, 2, 0));
	EXPECT_EQ(-EINVAL, submit_scalar(self->fd, VTPU_OP_SLOAD, 0, 256, 0));
	EXPECT_EQ(-EINVAL, submit_scalar(self->fd, VTPU_OP_SLOAD, 0,
					 0xfffffffcu, 0));
	EXPECT_EQ(0, vtpu_jobs_alive(self->minor));
}

/*
 * A loop that never ends (JUMP to itself) is stopped by the core's
 * watchdog at the job timeout, -ETIMEDOUT, every pass counted; the core
 * goes on with the next job.
 */
TEST_F(job, endless_loop_times_out_and_the_core_goes_on)
{
	unsigned long timeout_ms = vtpu_env_ulong("VTPU_JOB_TIMEOUT_MS", 2000);
	struct vtpu_buf prog, prof;
	struct drm_vtpu_profile *rp;
	long timeouts_before;
	int status = 0, i;
	size_t size;
	__u64 id;
	void *p;

	timeouts_before = vtpu_core_timeouts(self->minor);
	ASSERT_LE(0, timeouts_before);
	p = vtpu_prog_forever(&size);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, size, &prog));
	free(p);
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 4096, DRM_VTPU_PLACEMENT_HOST,
				  &prof));

	struct vtpu_submit_args a = {
		.prog = &prog, .prog_size = size, .profile = prof.handle,
	};

	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->fd, id, 120, &status));
	EXPECT_EQ(-ETIMEDOUT, status);
	rp = prof.map;
	EXPECT_EQ(-ETIMEDOUT, rp->status);
	/* a pass is one instruction, and a second holds millions */
	EXPECT_LT(1000000, rp->insns);
	TH_LOG("endless loop: %llu instructions in %llu ms (timeout %lu ms)",
	       (unsigned long long)rp->insns,
	       (unsigned long long)(rp->end - rp->start) / 1000000,
	       timeout_ms);
	EXPECT_LE(timeout_ms * 1000000ULL, rp->end - rp->start);
	EXPECT_GT(timeout_ms * 1500000ULL, rp->end - rp->start);
	EXPECT_EQ(timeouts_before + 1, vtpu_core_timeouts(self->minor));

	/* The core went on: the file's next jobs run normally. */
	for (i = 0; i < 2; i++) {
		static float ref[N * (N + 1)];
		struct compute c;
		int st = -1;
		__u64 nid;

		ASSERT_EQ(0, compute_setup(self->fd, &c, 77 + i,
					   DRM_VTPU_PLACEMENT_AUTO));
		ASSERT_EQ(0, compute_reference(&c, self->q.vmem_size, ref));
		ASSERT_EQ(0, compute_submit(self->fd, &c, 0, &nid));
		ASSERT_EQ(0, vtpu_job_wait(self->fd, nid, 60, &st));
		EXPECT_EQ(0, st);
		EXPECT_EQ(0, memcmp(ref, c.out.map, sizeof(ref)));
		compute_teardown(self->fd, &c);
	}
	vtpu_buf_free(self->fd, &prog);
	vtpu_buf_free(self->fd, &prof);
}

/* The job behind a runaway keeps its buffer alive after GEM_CLOSE. */
TEST_F(job, bo_closed_while_job_queued_lives_until_job_ends)
{
	struct vtpu_buf spin, prog, x, dummy;
	struct vtpu_bo_counts c0, c1, c2;
	struct drm_vtpu_binding bs, bx;
	struct drm_vtpu_sync in;
	struct vtpu_asm as;
	size_t ss, sp;
	__u32 sync;
	__u64 ids, idx;
	int status;
	void *p;

	p = runaway_program(&ss);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, ss, &spin));
	free(p);
	vtpu_asm_init(&as, 4096, 1);
	vtpu_asm_fill_f32(&as, vtpu_tile_f32(0, 1, 1024, 1024), 7.0f);
	vtpu_asm_dma_store(&as, vtpu_tile_f32(0, 1, 1024, 1024), 0, 0, 4096,
			   VTPU_DT_F32);
	vtpu_asm_end(&as);
	p = vtpu_asm_finish(&as, &sp);
	vtpu_asm_free(&as);
	ASSERT_EQ(0, vtpu_buf_prog(self->fd, p, sp, &prog));
	free(p);
	ASSERT_EQ(0, vtpu_buf_new(self->fd, 256 * 256 * 4,
				  DRM_VTPU_PLACEMENT_AUTO, &dummy));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &sync));

	/* X: created, bound to a job that waits behind the runaway. */
	ASSERT_EQ(0, vtpu_debugfs_counts(self->minor, &c0));
	{
		struct drm_vtpu_bo_create cr = {
			.size = 4096, .placement = DRM_VTPU_PLACEMENT_HOST,
		};

		ASSERT_EQ(0, vtpu_ioctl(self->fd, DRM_IOCTL_VTPU_BO_CREATE, &cr));
		x.handle = cr.handle;
	}
	bs = (struct drm_vtpu_binding){ dummy.handle, DRM_VTPU_BIND_WRITE, 0,
					dummy.size };
	bx = (struct drm_vtpu_binding){ x.handle, DRM_VTPU_BIND_WRITE, 0,
					4096 };
	in = (struct drm_vtpu_sync){ .handle = sync };

	struct vtpu_submit_args a = {
		.prog = &spin, .prog_size = ss, .bind = &bs, .nbind = 1,
		.out_sync = sync,
	};
	struct vtpu_submit_args b = {
		.prog = &prog, .prog_size = sp, .bind = &bx, .nbind = 1,
		.in = &in, .nin = 1,
	};

	ASSERT_EQ(0, vtpu_submit(self->fd, &a, &ids));
	ASSERT_EQ(0, vtpu_submit(self->fd, &b, &idx));
	ASSERT_EQ(0, vtpu_bo_close(self->fd, x.handle));

	/* Closed by userspace, still alive: the queued job holds it. */
	ASSERT_EQ(0, vtpu_debugfs_counts(self->minor, &c1));
	EXPECT_EQ(c0.host_bos + 1, c1.host_bos);
	EXPECT_EQ(-ETIME, vtpu_job_wait(self->fd, idx, 0, NULL));

	ASSERT_EQ(0, vtpu_job_wait(self->fd, ids, 120, &status));
	EXPECT_EQ(-ETIMEDOUT, status);
	ASSERT_EQ(0, vtpu_job_wait(self->fd, idx, 120, &status));
	/* The job ended: its buffer is gone once the job is freed. */
	ASSERT_TRUE(vtpu_wait_idle(self->minor, 30));
	ASSERT_EQ(0, vtpu_debugfs_counts(self->minor, &c2));
	EXPECT_EQ(c0.host_bos, c2.host_bos);

	drmSyncobjDestroy(self->fd, sync);
	vtpu_buf_free(self->fd, &spin);
	vtpu_buf_free(self->fd, &prog);
	vtpu_buf_free(self->fd, &dummy);
}

struct worker {
	int fd;
	unsigned int seed;
	unsigned int jobs;
	unsigned int ok;
	__u64 vmem;
};

/* Submits batches of jobs, waits, checks every result. */
static void *worker_main(void *arg)
{
	static __thread float ref[N * (N + 1)];
	struct worker *w = arg;
	struct compute c[4];
	unsigned int i, k;

	for (k = 0; k < 4; k++)
		if (compute_setup(w->fd, &c[k], w->seed + k,
				  k & 1 ? DRM_VTPU_PLACEMENT_HOST :
					  DRM_VTPU_PLACEMENT_AUTO))
			return NULL;
	for (i = 0; i < w->jobs; i += 4) {
		__u64 id[4];

		for (k = 0; k < 4; k++) {
			memset(c[k].out.map, 0, c[k].out.size);
			if (compute_submit(w->fd, &c[k], 0, &id[k]))
				return NULL;
		}
		for (k = 0; k < 4; k++) {
			int st = -1;

			if (vtpu_job_wait(w->fd, id[k], 120, &st) || st)
				return NULL;
			if (compute_reference(&c[k], w->vmem, ref))
				return NULL;
			if (!memcmp(ref, c[k].out.map, sizeof(ref)))
				w->ok++;
		}
	}
	for (k = 0; k < 4; k++)
		compute_teardown(w->fd, &c[k]);
	return NULL;
}

#define THREADS		4
#define JOBS		48

/* Runs in each of two processes; returns correct jobs. */
static unsigned int stress_process(unsigned int seed, __u64 vmem)
{
	struct worker w[THREADS];
	pthread_t t[THREADS];
	unsigned int i, ok = 0;
	int shared = vtpu_open(0);

	for (i = 0; i < THREADS; i++) {
		/* Half the threads share a file, half have their own. */
		w[i] = (struct worker){
			.fd = i & 1 ? vtpu_open(0) : shared,
			.seed = seed + 100 * i, .jobs = JOBS, .vmem = vmem,
		};
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		ok += w[i].ok;
		if (w[i].fd != shared)
			close(w[i].fd);
	}
	close(shared);
	return ok;
}

TEST_F(job, threads_and_processes_get_correct_results)
{
	unsigned int ok;
	int pfd[2], wst;
	pid_t pid;
	__u32 child_ok = 0;

	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		__u32 n = stress_process(5000, self->q.vmem_size);

		if (write(pfd[1], &n, sizeof(n)) != sizeof(n))
			_exit(2);
		_exit(0);
	}
	ok = stress_process(1, self->q.vmem_size);
	ASSERT_EQ(sizeof(child_ok), read(pfd[0], &child_ok, sizeof(child_ok)));
	ASSERT_EQ(pid, waitpid(pid, &wst, 0));
	EXPECT_TRUE(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	EXPECT_EQ(THREADS * JOBS, ok);
	EXPECT_EQ(THREADS * JOBS, child_ok);
	close(pfd[0]);
	close(pfd[1]);
	EXPECT_TRUE(vtpu_wait_idle(self->minor, 30));
}

/* A child submits a queue of jobs, then closes or dies: nothing leaks. */
static void queue_and_leave(int how)
{
	struct compute c[8];
	unsigned int i, k;
	int fd = vtpu_open(0);

	for (k = 0; k < 8; k++)
		if (compute_setup(fd, &c[k], k, DRM_VTPU_PLACEMENT_AUTO))
			_exit(3);
	for (i = 0; i < 8; i++)
		for (k = 0; k < 8; k++)
			if (compute_submit(fd, &c[k], 0, NULL))
				_exit(4);
	if (how == 0) {
		close(fd);	/* handles, mappings of the BOs stay */
		_exit(0);
	}
	kill(getpid(), SIGKILL);
}

static void leave_test(struct __test_metadata *_metadata, int minor, int how)
{
	struct vtpu_bo_counts before, after;
	pid_t pid;
	int wst;

	ASSERT_EQ(0, vtpu_debugfs_counts(minor, &before));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		queue_and_leave(how);
	ASSERT_EQ(pid, waitpid(pid, &wst, 0));
	if (how == 0) {
		ASSERT_TRUE(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	} else {
		ASSERT_TRUE(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL);
	}
	ASSERT_TRUE(vtpu_wait_idle(minor, 60)) TH_LOG("jobs still alive");
	ASSERT_EQ(0, vtpu_debugfs_counts(minor, &after));
	EXPECT_EQ(before.hbm_bos, after.hbm_bos);
	EXPECT_EQ(before.host_bos, after.host_bos);
	EXPECT_EQ(before.hbm_bytes, after.hbm_bytes);
	EXPECT_EQ(before.host_bytes, after.host_bytes);
}

TEST_F(job, closing_fd_with_jobs_queued_leaks_nothing)
{
	leave_test(_metadata, self->minor, 0);
}

TEST_F(job, killed_process_with_jobs_queued_leaks_nothing)
{
	leave_test(_metadata, self->minor, 1);
}

TEST_HARNESS_MAIN
