// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * Program objects: a program is copied into memory userspace can neither
 * map nor write and validated completely, once, when it is created (as
 * ethos-u validates a command stream when its buffer object is created).
 * Jobs then refer to it by handle, and SUBMIT only checks the bindings
 * against what the validator found the program needs of each: its cost
 * no longer grows with the program.
 */

#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include <drm/drm_file.h>
#include <drm/drm_print.h>
#include <drm/vtpu_accel.h>

#include "vtpu_drv.h"
#include "vtpu_job.h"
#include "vtpu_program.h"

static void vtpu_program_release(struct kref *ref)
{
	struct vtpu_program *program = container_of(ref, struct vtpu_program,
						    ref);

	kvfree(program->data);
	kfree(program);
}

/**
 * vtpu_program_put() - drop a reference to a program
 * @program: the program, or NULL
 */
void vtpu_program_put(struct vtpu_program *program)
{
	if (program)
		kref_put(&program->ref, vtpu_program_release);
}

/**
 * vtpu_program_get() - look up a program of a file
 * @vfile: the file
 * @handle: its handle
 *
 * Takes no lock that sleeps: io_uring's non-blocking attempt calls it.
 *
 * Return: a reference to the program, or NULL if @handle is unknown.
 */
struct vtpu_program *vtpu_program_get(struct vtpu_file *vfile, u32 handle)
{
	struct vtpu_program *program;

	xa_lock(&vfile->programs);
	program = xa_load(&vfile->programs, handle);
	if (program)
		kref_get(&program->ref);
	xa_unlock(&vfile->programs);
	return program;
}

/**
 * vtpu_programs_fini() - drop every program handle of a closing file
 * @vfile: the file; jobs still holding a program keep it alive
 */
void vtpu_programs_fini(struct vtpu_file *vfile)
{
	struct vtpu_program *program;
	unsigned long handle;

	xa_for_each(&vfile->programs, handle, program)
		vtpu_program_put(program);
	xa_destroy(&vfile->programs);
}

/* Tells userspace what each binding must be, before anything changes. */
static int vtpu_program_report(const struct vtpu_program *program,
			       const struct drm_vtpu_program_create *args)
{
	struct drm_vtpu_program_binding __user *out =
		u64_to_user_ptr(args->bindings);
	u32 i, n = min(args->max_bindings, program->info.binding_count);
	struct drm_vtpu_program_binding b = {};

	if (!args->bindings)
		return 0;
	for (i = 0; i < n; i++) {
		const struct vtpu_binding_desc *need = &program->need[i];

		b.size = need->size;
		b.flags = (need->access & VTPU_ACCESS_READ ?
			   DRM_VTPU_BIND_READ : 0) |
			  (need->access & VTPU_ACCESS_WRITE ?
			   DRM_VTPU_BIND_WRITE : 0);
		if (copy_to_user(&out[i], &b, sizeof(b)))
			return -EFAULT;
	}
	return 0;
}

static struct vtpu_program *vtpu_program_load(struct vtpu_device *vdev,
					      const struct drm_vtpu_program_create *args)
{
	struct vtpu_prog_error err = {};
	struct vtpu_program *program;
	int ret;

	program = kzalloc(sizeof(*program), GFP_KERNEL_ACCOUNT);
	if (!program)
		return ERR_PTR(-ENOMEM);
	kref_init(&program->ref);
	program->data = kvmalloc(args->size, GFP_KERNEL_ACCOUNT);
	if (!program->data) {
		ret = -ENOMEM;
		goto err;
	}
	if (copy_from_user(program->data, u64_to_user_ptr(args->program),
			   args->size)) {
		ret = -EFAULT;
		goto err;
	}
	ret = vtpu_prog_load(program->data, args->size, vdev->vmem_size,
			     &program->info, program->need, &err);
	if (ret) {
		drm_dbg(&vdev->drm, "program_create: invalid program: insn %d: %s\n",
			err.insn, err.why);
		goto err;
	}
	return program;

err:
	vtpu_program_put(program);
	return ERR_PTR(ret);
}

int vtpu_ioctl_program_create(struct drm_device *drm, void *data,
			      struct drm_file *file)
{
	struct vtpu_device *vdev = to_vtpu_device(drm);
	struct vtpu_file *vfile = file->driver_priv;
	struct drm_vtpu_program_create *args = data;
	struct vtpu_program *program;
	u32 handle;
	int ret;

	if (args->flags || args->pad) {
		drm_dbg(drm, "program_create: flags 0x%x pad 0x%x\n",
			args->flags, args->pad);
		return -EINVAL;
	}
	if (args->size < sizeof(struct vtpu_prog_header)) {
		drm_dbg(drm, "program_create: size %llu\n", args->size);
		return -EINVAL;
	}
	if (args->size > VTPU_MAX_PROG_SIZE) {
		drm_dbg(drm, "program_create: size %llu\n", args->size);
		return -E2BIG;
	}
	if (atomic_inc_return(&vfile->nprograms) > DRM_VTPU_MAX_PROGRAMS) {
		ret = -EMFILE;
		goto err_count;
	}

	program = vtpu_program_load(vdev, args);
	if (IS_ERR(program)) {
		ret = PTR_ERR(program);
		goto err_count;
	}
	ret = vtpu_program_report(program, args);
	if (ret)
		goto err_put;
	ret = xa_alloc(&vfile->programs, &handle, program, xa_limit_32b,
		       GFP_KERNEL_ACCOUNT);
	if (ret)
		goto err_put;

	args->handle = handle;
	args->binding_count = program->info.binding_count;
	args->trace_count = program->info.trace_count;
	return 0;

err_put:
	vtpu_program_put(program);
err_count:
	atomic_dec(&vfile->nprograms);
	return ret;
}

int vtpu_ioctl_program_destroy(struct drm_device *drm, void *data,
			       struct drm_file *file)
{
	struct vtpu_file *vfile = file->driver_priv;
	struct drm_vtpu_program_destroy *args = data;
	struct vtpu_program *program;

	if (args->flags) {
		drm_dbg(drm, "program_destroy: flags 0x%x\n", args->flags);
		return -EINVAL;
	}
	/* Handle 0 is never given out; erasing it would free the slot. */
	program = args->handle ? xa_erase(&vfile->programs, args->handle) :
				 NULL;
	if (!program) {
		drm_dbg(drm, "program_destroy: unknown handle %u\n",
			args->handle);
		return -ENOENT;
	}
	atomic_dec(&vfile->nprograms);
	vtpu_program_put(program);
	return 0;
}
