/* cpython_test: a seam for tests and fuzz targets: the CPython reader
 * (cpython.h) walking memory a test serves instead of a live process's, so
 * hostile or torn interpreter state can be fed to it. Never used by sonde. */
#ifndef SONDE_CPYTHON_TEST_H
#define SONDE_CPYTHON_TEST_H

#include "cpython.h"

#include <stddef.h>
#include <stdint.h>

/* Fills buf with len bytes at addr: 0, or a negative errno (-EFAULT). */
typedef int (*cpython_test_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Every remote read goes to fn from now on (NULL: process_vm_readv again). */
void cpython_test_set_reader(cpython_test_read_fn fn, void *ctx);

/* A reader of CPython major.minor whose _PyRuntime is at runtime, in the
 * served memory (3.13 reads its _Py_DebugOffsets there). NULL when the
 * version is not one sonde knows or its debug offsets make no sense.
 * Free with cpython_close(). */
struct cpython_proc *cpython_test_open(int major, int minor, uint64_t runtime);

#endif
