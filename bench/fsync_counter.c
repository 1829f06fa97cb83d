/* Counts fsync/fdatasync calls of the process it is preloaded into (bench/peers.py).
 *
 * SQLite calls these from C, where no Python hook sees them; LD_PRELOAD puts these
 * wrappers in front of libc's, and the bench reads the counters through ctypes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

long stepsaga_fsyncs = 0;
long stepsaga_fdatasyncs = 0;

int fsync(int fd) {
    static int (*real)(int) = 0;
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    __atomic_add_fetch(&stepsaga_fsyncs, 1, __ATOMIC_RELAXED);
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int) = 0;
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    __atomic_add_fetch(&stepsaga_fdatasyncs, 1, __ATOMIC_RELAXED);
    return real(fd);
}
