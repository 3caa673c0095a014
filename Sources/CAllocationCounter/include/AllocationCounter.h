#ifndef ALLOCATION_COUNTER_H
#define ALLOCATION_COUNTER_H

/// Heap allocations made by the whole process since it started: every
/// malloc, calloc, realloc, posix_memalign and aligned_alloc. Linked into a
/// program, this target's definitions of those functions stand in for the C
/// library's and count each call before passing it on.
long room_allocation_count(void);

/// Heap allocations made by the calling thread since it started: what one
/// thread (a render thread) costs while others allocate as they please.
long room_thread_allocation_count(void);

/// Heap blocks the calling thread has freed since it started.
long room_thread_free_count(void);

/// pthread mutexes the calling thread has locked since it started, and how
/// many of those it found held by another thread and waited for. Linked
/// into a program, this target's pthread_mutex_lock tries each lock first
/// and counts a refusal before waiting as the C library does.
long room_thread_lock_count(void);
long room_thread_contended_lock_count(void);

#endif
