// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: PRIME (dma-buf) sharing of buffers. An HBM or a
 * backing-store buffer exported from one open file and imported by
 * another file of the same device is the same memory: the same size,
 * placement and device address, data written through one mapping is
 * read through the other and through the dma-buf's own mapping, and a
 * job can use the imported handle. The memory stays allocated while
 * any handle, mapping or dma-buf holds it, and is returned after.
 * Another device cannot import it (vtpu imports only its own buffers).
 */
#include "vtpu_job_util.h"

#include "kselftest_harness.h"

#define SZ	(3 * 4096)

FIXTURE(prime) {
	int fd, other;
	int minor;
	__u64 hbm_used;
};

FIXTURE_VARIANT(prime) {
	__u32 placement;
};

FIXTURE_VARIANT_ADD(prime, hbm) {
	.placement = DRM_VTPU_PLACEMENT_HBM,
};

FIXTURE_VARIANT_ADD(prime, host) {
	.placement = DRM_VTPU_PLACEMENT_HOST,
};

FIXTURE_SETUP(prime)
{
	self->fd = vtpu_open(0);
	self->other = vtpu_open(0);
	ASSERT_LE(0, self->fd) TH_LOG("no vtpu device");
	ASSERT_LE(0, self->other);
	self->minor = vtpu_minor(self->fd);
	ASSERT_EQ(0, vtpu_sysfs_u64(self->minor, "hbm_used", &self->hbm_used));
}

FIXTURE_TEARDOWN(prime)
{
	close(self->other);
	close(self->fd);
}

TEST_F(prime, import_is_the_same_memory)
{
	struct drm_vtpu_bo_create c;
	struct drm_vtpu_bo_info a, b;
	__u32 imported;
	int dmabuf;
	void *ma, *mb, *md;

	ASSERT_EQ(0, vtpu_bo_create(self->fd, SZ, variant->placement, &c));
	ASSERT_EQ(0, drmPrimeHandleToFD(self->fd, c.handle,
					DRM_CLOEXEC | DRM_RDWR, &dmabuf))
		TH_LOG("export: %s", strerror(errno));
	ASSERT_EQ(0, drmPrimeFDToHandle(self->other, dmabuf, &imported))
		TH_LOG("import: %s", strerror(errno));
	ASSERT_EQ(0, vtpu_bo_info(self->fd, c.handle, &a));
	ASSERT_EQ(0, vtpu_bo_info(self->other, imported, &b));
	EXPECT_EQ(a.size, b.size);
	EXPECT_EQ(variant->placement, b.placed);
	EXPECT_EQ(a.device_addr, b.device_addr);

	ma = vtpu_bo_mmap(self->fd, c.handle, SZ);
	mb = vtpu_bo_mmap(self->other, imported, SZ);
	ASSERT_NE(NULL, ma);
	ASSERT_NE(NULL, mb);
	vtpu_fill_pattern(ma, SZ, 7);
	EXPECT_TRUE(vtpu_check_pattern(mb, SZ, 7));
	vtpu_fill_pattern(mb, SZ, 8);
	EXPECT_TRUE(vtpu_check_pattern(ma, SZ, 8));

	/* The dma-buf maps too. */
	md = mmap(NULL, SZ, PROT_READ, MAP_SHARED, dmabuf, 0);
	ASSERT_NE(MAP_FAILED, md) TH_LOG("dma-buf mmap: %s", strerror(errno));
	EXPECT_EQ(0, memcmp(md, ma, SZ));
	munmap(md, SZ);
	/*
	 * From a page inside the buffer: HBM maps it; backing-store
	 * buffers refuse, as the shmem helper would map the wrong pages.
	 */
	md = mmap(NULL, 4096, PROT_READ, MAP_SHARED, dmabuf, 4096);
	if (variant->placement == DRM_VTPU_PLACEMENT_HBM) {
		ASSERT_NE(MAP_FAILED, md) TH_LOG("%s", strerror(errno));
		EXPECT_EQ(0, memcmp(md, (char *)ma + 4096, 4096));
		munmap(md, 4096);
	} else {
		EXPECT_EQ(MAP_FAILED, md);
		EXPECT_EQ(EINVAL, errno);
	}
	/* Past its end it does not. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, dmabuf,
				   SZ));
	munmap(ma, SZ);
	munmap(mb, SZ);
	close(dmabuf);
	EXPECT_EQ(0, vtpu_bo_close(self->other, imported));
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

/* Through the DRM file, the DRM core wants mappings from the start. */
TEST_F(prime, gem_mmap_must_start_at_the_buffer)
{
	struct drm_vtpu_bo_create c;
	struct drm_vtpu_bo_info info;

	ASSERT_EQ(0, vtpu_bo_create(self->fd, SZ, variant->placement, &c));
	ASSERT_EQ(0, vtpu_bo_info(self->fd, c.handle, &info));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
				   info.mmap_offset + 2 * 4096));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

TEST_F(prime, memory_lives_while_any_holder_does)
{
	struct drm_vtpu_bo_create c;
	__u64 used;
	__u32 imported;
	int dmabuf;
	void *m;

	ASSERT_EQ(0, vtpu_bo_create(self->fd, SZ, variant->placement, &c));
	ASSERT_EQ(0, drmPrimeHandleToFD(self->fd, c.handle, DRM_CLOEXEC,
					&dmabuf));
	m = vtpu_bo_mmap(self->fd, c.handle, SZ);
	ASSERT_NE(NULL, m);
	vtpu_fill_pattern(m, SZ, 9);
	munmap(m, SZ);
	/* The exporter lets go of everything but the dma-buf. */
	ASSERT_EQ(0, vtpu_bo_close(self->fd, c.handle));
	ASSERT_EQ(0, drmPrimeFDToHandle(self->other, dmabuf, &imported));
	close(dmabuf);
	m = vtpu_bo_mmap(self->other, imported, SZ);
	ASSERT_NE(NULL, m);
	EXPECT_TRUE(vtpu_check_pattern(m, SZ, 9));
	munmap(m, SZ);
	if (variant->placement == DRM_VTPU_PLACEMENT_HBM) {
		ASSERT_EQ(0, vtpu_sysfs_u64(self->minor, "hbm_used", &used));
		EXPECT_EQ(self->hbm_used + SZ, used);
	}
	EXPECT_EQ(0, vtpu_bo_close(self->other, imported));
	ASSERT_EQ(0, vtpu_sysfs_u64(self->minor, "hbm_used", &used));
	EXPECT_EQ(self->hbm_used, used);
}

TEST_F(prime, a_job_writes_through_the_imported_handle)
{
	struct vtpu_buf prog;
	struct drm_vtpu_bo_create c;
	struct drm_vtpu_binding b;
	__u32 imported;
	int dmabuf, status = -1, i;
	size_t size;
	float *m;
	__u64 id;
	void *p;

	/* 16 x 16 ones times halves, accumulated 2 times: 16 everywhere. */
	p = vtpu_prog_spin(16, 2, &size);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vtpu_buf_prog(self->other, p, size, &prog));
	free(p);
	ASSERT_EQ(0, vtpu_bo_create(self->fd, 16 * 16 * 4, variant->placement,
				    &c));
	ASSERT_EQ(0, drmPrimeHandleToFD(self->fd, c.handle, DRM_CLOEXEC,
					&dmabuf));
	ASSERT_EQ(0, drmPrimeFDToHandle(self->other, dmabuf, &imported));
	close(dmabuf);
	b = (struct drm_vtpu_binding){ imported, DRM_VTPU_BIND_WRITE, 0,
				       16 * 16 * 4 };

	struct vtpu_submit_args a = {
		.prog = &prog, .prog_size = size, .bind = &b, .nbind = 1,
	};

	ASSERT_EQ(0, vtpu_submit(self->other, &a, &id));
	ASSERT_EQ(0, vtpu_job_wait(self->other, id, 60, &status));
	ASSERT_EQ(0, status);
	/* The exporter sees the job's result. */
	m = vtpu_bo_mmap(self->fd, c.handle, 4096);
	ASSERT_NE(NULL, m);
	for (i = 0; i < 16 * 16; i++)
		ASSERT_EQ(16.0f, m[i]) TH_LOG("element %d", i);
	munmap(m, 4096);
	vtpu_buf_free(self->other, &prog);
	EXPECT_EQ(0, vtpu_bo_close(self->other, imported));
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

TEST_F(prime, another_device_cannot_import)
{
	struct drm_vtpu_bo_create c;
	int dev1 = vtpu_open(1), dmabuf;
	__u32 imported = 0;

	if (dev1 < 0)
		SKIP(return, "one vtpu device only");
	ASSERT_EQ(0, vtpu_bo_create(self->fd, SZ, variant->placement, &c));
	ASSERT_EQ(0, drmPrimeHandleToFD(self->fd, c.handle, DRM_CLOEXEC,
					&dmabuf));
	EXPECT_NE(0, drmPrimeFDToHandle(dev1, dmabuf, &imported));
	EXPECT_EQ(EINVAL, errno);
	close(dmabuf);
	close(dev1);
	EXPECT_EQ(0, vtpu_bo_close(self->fd, c.handle));
}

/*
 * Another driver imports an HBM buffer: vgem attaches to the dma-buf and
 * maps it for its device, which takes our sg table of the HBM pages.
 * (The DRM core maps no imported object through dumb mmap, so vgem
 * cannot show the data; the import itself is what is tested.) Once vgem
 * lets go, the HBM range is free again.
 */
TEST(vgem_imports_an_hbm_buffer)
{
	struct drm_vtpu_bo_create c;
	int fd = vtpu_open(0), vgem = vtpu_vgem_open(), dmabuf, minor;
	__u64 before, used;
	__u32 imported;

	ASSERT_LE(0, fd);
	if (vgem < 0)
		SKIP(return, "no vgem driver to import into");
	minor = vtpu_minor(fd);
	ASSERT_EQ(0, vtpu_sysfs_u64(minor, "hbm_used", &before));
	ASSERT_EQ(0, vtpu_bo_create(fd, SZ, DRM_VTPU_PLACEMENT_HBM, &c));
	ASSERT_EQ(0, drmPrimeHandleToFD(fd, c.handle, DRM_CLOEXEC | DRM_RDWR,
					&dmabuf));
	ASSERT_EQ(0, drmPrimeFDToHandle(vgem, dmabuf, &imported))
		TH_LOG("vgem import: %s", strerror(errno));
	close(dmabuf);
	EXPECT_EQ(0, vtpu_bo_close(fd, c.handle));
	/* vgem's import still holds the buffer. */
	ASSERT_EQ(0, vtpu_sysfs_u64(minor, "hbm_used", &used));
	EXPECT_EQ(before + SZ, used);
	EXPECT_EQ(0, vtpu_bo_close(vgem, imported));
	ASSERT_EQ(0, vtpu_sysfs_u64(minor, "hbm_used", &used));
	EXPECT_EQ(before, used);
	close(vgem);
	close(fd);
}

TEST_HARNESS_MAIN
