// SPDX-License-Identifier: GPL-2.0-only
/* Copyright (C) 2026 The vtpu authors */

/*
 * vtpu: emulated TPU devices as DRM compute-accel devices.
 *
 * Module load creates num_devices devices, each a facade platform device
 * carrying a DRM accel device (/dev/accel/accelN). Unload tears them down
 * in exact reverse; a device stays alive while an open file holds it.
 */

#include <linux/device.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>

#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_print.h>
#include <drm/vtpu_accel.h>

#include "vtpu_core.h"
#include "vtpu_device.h"
#include "vtpu_drv.h"
#include "vtpu_exec.h"
#include "vtpu_gem.h"
#include "vtpu_job.h"
#include "vtpu_program.h"
#include "vtpu_uring.h"

#define VTPU_MAX_DEVICES	16
#define VTPU_MAX_CORES		64
#define VTPU_MAX_HBM_MIB	16384
#define VTPU_MAX_VMEM_KIB	(64 * 1024)

struct vtpu_params vtpu_params = {
	.num_devices = 1,
	.num_cores = 4,
	.hbm_mib = 64,
	.vmem_kib = 1024,
	.job_timeout_ms = 10000,
};

module_param_named(num_devices, vtpu_params.num_devices, uint, 0444);
MODULE_PARM_DESC(num_devices, "Number of emulated TPU devices (1-16, default 1)");
module_param_named(num_cores, vtpu_params.num_cores, uint, 0444);
MODULE_PARM_DESC(num_cores, "TPU cores per device (1-64, default 4)");
module_param_named(hbm_mib, vtpu_params.hbm_mib, uint, 0444);
MODULE_PARM_DESC(hbm_mib, "HBM per device in MiB, reserved at load (1-16384, default 64)");
module_param_named(vmem_kib, vtpu_params.vmem_kib, uint, 0444);
MODULE_PARM_DESC(vmem_kib, "Vector memory per core in KiB (4-65536, default 1024)");

module_param_named(job_timeout_ms, vtpu_params.job_timeout_ms, uint, 0444);
MODULE_PARM_DESC(job_timeout_ms, "A job running longer is aborted with -ETIMEDOUT (10-600000, default 10000)");

static struct vtpu_device **vtpu_devices;

#define VTPU_IOCTL(n, func) \
	DRM_IOCTL_DEF_DRV(VTPU_##n, vtpu_ioctl_##func, DRM_RENDER_ALLOW)

static const struct drm_ioctl_desc vtpu_ioctls[] = {
	VTPU_IOCTL(QUERY, query),
	VTPU_IOCTL(BO_CREATE, bo_create),
	VTPU_IOCTL(BO_INFO, bo_info),
	VTPU_IOCTL(SUBMIT, submit),
	VTPU_IOCTL(JOB_WAIT, job_wait),
	VTPU_IOCTL(PROGRAM_CREATE, program_create),
	VTPU_IOCTL(PROGRAM_DESTROY, program_destroy),
};

static const struct file_operations vtpu_fops = {
	.owner = THIS_MODULE,
	DRM_ACCEL_FOPS,
	.show_fdinfo = drm_show_fdinfo,
	.uring_cmd = vtpu_uring_cmd,
};

/* drm_show_fdinfo() prints the driver and client id, then this. */
static void vtpu_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	vtpu_gem_show_fdinfo(p, file);
	vtpu_job_show_fdinfo(p, file);
}

static const struct drm_driver vtpu_drm_driver = {
	.driver_features = DRIVER_COMPUTE_ACCEL | DRIVER_GEM |
			   DRIVER_SYNCOBJ | DRIVER_SYNCOBJ_TIMELINE,
	.open = vtpu_job_open,
	.postclose = vtpu_job_postclose,
	.gem_create_object = vtpu_gem_create_object,
	.show_fdinfo = vtpu_show_fdinfo,
	.ioctls = vtpu_ioctls,
	.num_ioctls = ARRAY_SIZE(vtpu_ioctls),
	.fops = &vtpu_fops,
	.name = VTPU_DRIVER_NAME,
	.desc = VTPU_DRIVER_DESC,
	.date = "20261129",
	.major = DRM_VTPU_UAPI_MAJOR,
	.minor = DRM_VTPU_UAPI_MINOR,
};

/*
 * Like vgem, everything a device allocates hangs off a devres group of its
 * platform device, so releasing the group undoes the whole probe.
 */
static struct vtpu_device *vtpu_device_create(unsigned int index)
{
	struct platform_device *pdev;
	struct vtpu_device *vdev;
	int ret;

	pdev = platform_device_register_simple(VTPU_DRIVER_NAME, index, NULL, 0);
	if (IS_ERR(pdev))
		return ERR_CAST(pdev);

	if (!devres_open_group(&pdev->dev, NULL, GFP_KERNEL)) {
		ret = -ENOMEM;
		goto err_unregister_pdev;
	}

	vdev = devm_drm_dev_alloc(&pdev->dev, &vtpu_drm_driver,
				  struct vtpu_device, drm);
	if (IS_ERR(vdev)) {
		ret = PTR_ERR(vdev);
		goto err_release_group;
	}
	vdev->pdev = pdev;
	vdev->index = index;
	platform_set_drvdata(pdev, vdev);

	ret = vtpu_device_init(vdev);
	if (ret)
		goto err_release_group;

	ret = devm_device_add_group(&pdev->dev, &vtpu_device_attr_group);
	if (ret)
		goto err_release_group;

	ret = drm_dev_register(&vdev->drm, 0);
	if (ret)
		goto err_release_group;

	vtpu_gem_debugfs_init(vdev);
	vtpu_cores_debugfs_init(vdev);
	drm_info(&vdev->drm, "%u cores, %llu MiB HBM, %llu KiB VMEM per core, %s executor\n",
		 vdev->num_cores, vdev->hbm_size >> 20, vdev->vmem_size >> 10,
		 vtpu_exec_isa_name(vtpu_exec_isa_best()));
	return vdev;

err_release_group:
	devres_release_group(&pdev->dev, NULL);
err_unregister_pdev:
	platform_device_unregister(pdev);
	return ERR_PTR(ret);
}

static void vtpu_device_destroy(struct vtpu_device *vdev)
{
	struct platform_device *pdev = vdev->pdev;

	drm_dev_unregister(&vdev->drm);
	/*
	 * No file is open any more (each holds a module reference), but the
	 * jobs of closed files may still be executing: the code they run
	 * goes away with the module.
	 */
	wait_var_event(&vdev->jobs_alive, !atomic_read(&vdev->jobs_alive));
	devres_release_group(&pdev->dev, NULL);
	platform_device_unregister(pdev);
}

static int vtpu_params_check(void)
{
	const struct vtpu_params *p = &vtpu_params;

	if (p->num_devices < 1 || p->num_devices > VTPU_MAX_DEVICES ||
	    p->num_cores < 1 || p->num_cores > VTPU_MAX_CORES ||
	    p->hbm_mib < 1 || p->hbm_mib > VTPU_MAX_HBM_MIB ||
	    p->vmem_kib < 4 || p->vmem_kib > VTPU_MAX_VMEM_KIB ||
	    !IS_ALIGNED(p->vmem_kib, 4) ||
	    p->job_timeout_ms < 10 || p->job_timeout_ms > 600000) {
		pr_err("vtpu: parameter out of range: num_devices=%u num_cores=%u hbm_mib=%u vmem_kib=%u job_timeout_ms=%u (see modinfo vtpu)\n",
		       p->num_devices, p->num_cores, p->hbm_mib, p->vmem_kib,
		       p->job_timeout_ms);
		return -EINVAL;
	}
	return 0;
}

static int __init vtpu_init(void)
{
	unsigned int i;
	int ret;

	ret = vtpu_params_check();
	if (ret)
		return ret;

	vtpu_devices = kcalloc(vtpu_params.num_devices, sizeof(*vtpu_devices),
			       GFP_KERNEL);
	if (!vtpu_devices)
		return -ENOMEM;

	for (i = 0; i < vtpu_params.num_devices; i++) {
		vtpu_devices[i] = vtpu_device_create(i);
		if (IS_ERR(vtpu_devices[i])) {
			ret = PTR_ERR(vtpu_devices[i]);
			pr_err("vtpu: creating device %u failed: %d\n", i, ret);
			goto err_destroy;
		}
	}
	return 0;

err_destroy:
	while (i--)
		vtpu_device_destroy(vtpu_devices[i]);
	kfree(vtpu_devices);
	return ret;
}

static void __exit vtpu_exit(void)
{
	unsigned int i = vtpu_params.num_devices;

	while (i--)
		vtpu_device_destroy(vtpu_devices[i]);
	kfree(vtpu_devices);
}

module_init(vtpu_init);
module_exit(vtpu_exit);

MODULE_DESCRIPTION("vtpu: emulated TPU cores as a DRM accel device");
MODULE_LICENSE("GPL");
