#define _GNU_SOURCE
#include "AllocationCounter.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>

// glibc's own allocator, under the names it exports for wrappers like this one.
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static atomic_long allocations;
// Initial-exec: the counter sits in the thread's static TLS block, so reading it never allocates.
static _Thread_local long threadAllocations __attribute__((tls_model("initial-exec")));
static _Thread_local long threadFrees __attribute__((tls_model("initial-exec")));
static _Thread_local long threadLocks __attribute__((tls_model("initial-exec")));
static _Thread_local long threadContendedLocks __attribute__((tls_model("initial-exec")));

static void count(void) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    threadAllocations += 1;
}

void *malloc(size_t size) { count(); return __libc_malloc(size); }
void *calloc(size_t number, size_t size) { count(); return __libc_calloc(number, size); }
void *realloc(void *pointer, size_t size) { count(); return __libc_realloc(pointer, size); }
void free(void *pointer) {
    if (pointer != NULL) threadFrees += 1;
    __libc_free(pointer);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    count();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }

long room_allocation_count(void) { return atomic_load_explicit(&allocations, memory_order_relaxed); }

long room_thread_allocation_count(void) { return threadAllocations; }

long room_thread_free_count(void) { return threadFrees; }

// The C library's own pthread_mutex_lock, found once the program is loaded.
static int (*libraryLock)(pthread_mutex_t *);

__attribute__((constructor)) static void findLibraryLock(void) {
    libraryLock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
}

// Every lock is tried first: one that is held by another thread is a wait, and counted.
int pthread_mutex_lock(pthread_mutex_t *mutex) {
    threadLocks += 1;
    int tried = pthread_mutex_trylock(mutex);
    if (tried != EBUSY) return tried;
    threadContendedLocks += 1;
    if (libraryLock != NULL) return libraryLock(mutex);
    // Before the constructor has run: wait without the library's lock.
    while ((tried = pthread_mutex_trylock(mutex)) == EBUSY) sched_yield();
    return tried;
}

long room_thread_lock_count(void) { return threadLocks; }

long room_thread_contended_lock_count(void) { return threadContendedLocks; }
