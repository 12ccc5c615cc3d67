/* SPDX-License-Identifier: GPL-2.0-only */
/* Copyright (C) 2026 The vtpu authors */

#ifndef __VTPU_PROGRAM_H__
#define __VTPU_PROGRAM_H__

#include <linux/kref.h>

#include "vtpu_prog.h"

struct drm_device;
struct drm_file;
struct vtpu_file;

/**
 * struct vtpu_program - a program loaded once, run by many jobs
 * @ref: the handle's reference and one per job
 * @data: the kernel's copy; userspace can neither map nor write it
 * @info: @data, validated
 * @need: what the program needs of each binding, from the validator
 */
struct vtpu_program {
	struct kref ref;
	void *data;
	struct vtpu_prog_info info;
	struct vtpu_binding_desc need[VTPU_MAX_BINDINGS];
};

struct vtpu_program *vtpu_program_get(struct vtpu_file *vfile, u32 handle);
void vtpu_program_put(struct vtpu_program *program);
void vtpu_programs_fini(struct vtpu_file *vfile);

int vtpu_ioctl_program_create(struct drm_device *drm, void *data,
			      struct drm_file *file);
int vtpu_ioctl_program_destroy(struct drm_device *drm, void *data,
			       struct drm_file *file);

#endif /* __VTPU_PROGRAM_H__ */
