// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kselftest harness runs each test in a forked child that ends with
 * _exit(), which skips LeakSanitizer's check at exit: a test could leak
 * and pass. Linked into the unit tests with -Wl,--wrap=_exit, this runs
 * the check first, so a test that passed but leaked fails.
 */
#include <sanitizer/lsan_interface.h>

#define KSFT_FAIL	1

long __real_sysconf(int name);
long __wrap_sysconf(int name);
unsigned long test_sysconf_calls;

long __wrap_sysconf(int name)
{
	__atomic_add_fetch(&test_sysconf_calls, 1, __ATOMIC_RELAXED);
	return __real_sysconf(name);
}

void __real__exit(int status) __attribute__((noreturn));
void __wrap__exit(int status) __attribute__((noreturn));

void __wrap__exit(int status)
{
	if (status == 0 && __lsan_do_recoverable_leak_check())
		status = KSFT_FAIL;
	__real__exit(status);
}
