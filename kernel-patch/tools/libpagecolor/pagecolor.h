/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * libpagecolor - user-space access to the page colouring system calls of the
 * mccdb page colouring series (kernel-patch/patches/, Linux 6.12;
 * patches-6.1/, Linux 6.1).
 *
 * The library is plain C99 and keeps no state except a cached result of the
 * support probe.  Every function reports errors through its return value
 * (-1, or a negative count) and errno; nothing here prints or exits.
 *
 * On kernels without the patch the system call numbers used here (600-602 on
 * x86_64 and i386) are either unassigned (ENOSYS) or, on future kernels,
 * something else entirely.  That is why pagecolor_supported() first checks for
 * /sys/kernel/mm/page_coloring and only then issues a harmless
 * get_color_policy() call; the wrappers below refuse to issue the raw system
 * calls unless the probe succeeded (errno = EOPNOTSUPP when the kernel has
 * colouring switched off, as its system calls answer then; ENOSYS when it
 * has none).
 */
#ifndef PAGECOLOR_H
#define PAGECOLOR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Copy of <linux/page_color.h> (uapi), so that this library builds against
 * host headers that do not have it.  Values must stay identical to the
 * kernel's; identical macro redefinitions are harmless in C.
 */
#ifndef PAGE_COLOR_MAX_COLORS
#define PAGE_COLOR_MAX_COLORS	1024
#endif
#ifndef COLOR_MODE_DEFAULT
#define COLOR_MODE_DEFAULT	0	/* remove policy */
#define COLOR_MODE_BIND		1	/* strict */
#define COLOR_MODE_PREFERRED	2	/* fall back to any colour when exhausted */
#endif
#ifndef COLOR_MBIND_MIGRATE
#define COLOR_MBIND_MIGRATE	(1U << 0)
#endif
#ifndef COLOR_MBIND_MIGRATE_ALL
#define COLOR_MBIND_MIGRATE_ALL	(1U << 1)	/* pages others map too; CAP_SYS_NICE */
#endif
#ifndef COLOR_POLICY_ADDR
#define COLOR_POLICY_ADDR	(1U << 0)
#endif

/*
 * System call numbers: x86_64 and i386 (a 32-bit program on an x86_64
 * kernel); the kernel also wires them in the generic table (arm64, riscv),
 * not defined here because no test runs there.  x32 and other
 * architectures get ENOSYS.
 */
#if (defined(__x86_64__) && !defined(__ILP32__)) || defined(__i386__)
#ifndef __NR_set_color_policy
#define __NR_set_color_policy	600
#endif
#ifndef __NR_color_mbind
#define __NR_color_mbind	601
#endif
#ifndef __NR_get_color_policy
#define __NR_get_color_policy	602
#endif
#endif

#define PAGECOLOR_SYSFS_DIR	"/sys/kernel/mm/page_coloring"

/* A set of colours: a bitmap of PAGE_COLOR_MAX_COLORS bits. */
#define PAGECOLOR_BITS_PER_LONG	(8 * sizeof(unsigned long))
#define PAGECOLOR_SET_LONGS \
	((PAGE_COLOR_MAX_COLORS + 8 * sizeof(unsigned long) - 1) / \
	 (8 * sizeof(unsigned long)))

typedef struct pagecolor_set {
	unsigned long bits[PAGECOLOR_SET_LONGS];
} pagecolor_set_t;

void pagecolor_set_zero(pagecolor_set_t *set);
/* Set colours 0..n-1 (n is clamped to PAGE_COLOR_MAX_COLORS). */
void pagecolor_set_fill(pagecolor_set_t *set, int n);
/* These three return -1/EINVAL for colours outside [0, PAGE_COLOR_MAX_COLORS). */
int pagecolor_set_add(pagecolor_set_t *set, int color);
int pagecolor_set_del(pagecolor_set_t *set, int color);
int pagecolor_set_test(const pagecolor_set_t *set, int color);
int pagecolor_set_count(const pagecolor_set_t *set);
int pagecolor_set_equal(const pagecolor_set_t *a, const pagecolor_set_t *b);
/* Highest colour in the set + 1, 0 for the empty set. */
int pagecolor_set_width(const pagecolor_set_t *set);
/*
 * Parse list syntax "0-3,8,10-11" (whitespace around items allowed; "" is the
 * empty set; "all" means 0..limit-1).  Colours must be < limit, where limit
 * is typically pagecolor_nr_colors() (<= 0 means PAGE_COLOR_MAX_COLORS).
 * Returns 0, or -1 with errno EINVAL (syntax) or ERANGE (colour >= limit).
 */
int pagecolor_set_parse(pagecolor_set_t *set, const char *str, int limit);
/*
 * Format as list syntax into buf.  Returns the length the full string needs
 * (like snprintf); the output is truncated (and NUL-terminated) if len is
 * too small.
 */
int pagecolor_set_format(const pagecolor_set_t *set, char *buf, size_t len);

/*
 * Probe: 1 when the running kernel supports page colouring and it is
 * enabled, 0 when not (errno says why: ENOENT no sysfs directory, ENOSYS no
 * system call, ENODEV disabled at boot (sysfs enabled 0), EOPNOTSUPP the
 * system call says colouring is off).  The result is cached.
 */
int pagecolor_supported(void);
/* Forget the cached probe result (tests only). */
void pagecolor_reset_probe(void);
/* Number of colours the kernel uses, or -1 (errno) when not supported. */
int pagecolor_nr_colors(void);

/* Wrappers; return 0 or -1 with errno.  They call pagecolor_supported() first. */
int pagecolor_set_policy(int mode, const pagecolor_set_t *set);
int pagecolor_mbind(void *addr, size_t len, int mode,
		    const pagecolor_set_t *set, unsigned int flags);
/*
 * Task default policy (flags 0) or the policy of the VMA containing addr
 * (flags COLOR_POLICY_ADDR).  set may be NULL.
 */
int pagecolor_get_policy(int *mode, pagecolor_set_t *set, void *addr,
			 unsigned int flags);

/*
 * Raw system calls, no probe, no argument checking (for tests).
 * pagecolor_sys_set_color_policy() passes flags 0 (the only value the
 * kernel accepts today); _flags() passes any.
 */
long pagecolor_sys_set_color_policy(int mode, const unsigned long *mask,
				    unsigned long maxcolor);
long pagecolor_sys_set_color_policy_flags(int mode, const unsigned long *mask,
					  unsigned long maxcolor, unsigned int flags);
long pagecolor_sys_color_mbind(unsigned long start, unsigned long len,
			       int mode, const unsigned long *mask,
			       unsigned long maxcolor, unsigned int flags);
long pagecolor_sys_get_color_policy(int *mode, unsigned long *mask,
				    unsigned long maxcolor, unsigned long addr,
				    unsigned int flags);

/*
 * Physical frame number of the page mapped at addr (of the calling process),
 * from /proc/self/pagemap.  Returns 0 and stores the PFN, or -1 with errno:
 * ENOENT page not present (or swapped), EPERM no PFNs visible (needs
 * CAP_SYS_ADMIN), others from open/pread.
 */
int pagecolor_pfn(const void *addr, uint64_t *pfn);
/* Same for a whole range, one open; pfns[i] = 0 for absent pages. */
int pagecolor_pfns(const void *addr, size_t npages, uint64_t *pfns);
/* Same for another process (pid 0: this one); needs ptrace access to it. */
int pagecolor_pid_pfns(pid_t pid, uintptr_t addr, size_t npages, uint64_t *pfns);
/* Colour of a PFN given nr_colors (power of two or not: pfn % nr_colors). */
int pagecolor_pfn_color(uint64_t pfn, int nr_colors);
/*
 * Colour of the page at addr: >= 0, or -1 with errno (ENOENT not present,
 * EPERM no PFN, ENOSYS or EOPNOTSUPP colouring unsupported or off, so no
 * colour count known).
 */
int pagecolor_page_color(const void *addr);

/*
 * Per-colour free page counts from /sys/kernel/mm/page_coloring/free_pages:
 * the pages parked in the per-colour free lists (they also count as free
 * memory in MemFree).  Fills counts[0..n-1] (n = min(max, nr_colors)),
 * returns n or -1 (errno).
 */
int pagecolor_free_pages(unsigned long *counts, int max);
/* The parser behind it (modifies text); nr = size of counts. */
int pagecolor_parse_free_pages(char *text, unsigned long *counts, int nr);
/* Give every parked page back to the buddy allocator (writes "drain"; root). */
int pagecolor_drain(void);
/*
 * A single numeric counter from /sys/kernel/mm/page_coloring/<name>
 * (enabled, nr_colors, colored_allocs, fallbacks, refills, failures,
 * drained, reclaimed, parked).  Returns 0 or -1.
 */
int pagecolor_read_counter(const char *name, unsigned long long *value);

/* Last-level cache geometry from /sys/devices/system/cpu/cpu0/cache. */
struct pagecolor_geometry {
	int level;			/* cache level, e.g. 3 */
	long long size;			/* bytes */
	int ways;			/* associativity */
	int line_size;			/* bytes */
	int sets;			/* number_of_sets, 0 if unknown */
	long page_size;			/* bytes */
	int colors;			/* size / (ways * page_size), 0 if unknown */
	char shared_cpus[64];		/* shared_cpu_list, e.g. "0-1" */
};
/* Returns 0, or -1 with errno ENOENT when no unified/data cache is listed. */
int pagecolor_geometry(struct pagecolor_geometry *geo);

/*
 * The one reader of sysfs cache descriptions, shared with the mccdb
 * extension (which reads every CPU's, under a root tests can move).
 * cache_dir is laid out like /sys/devices/system/cpu/cpuN/cache.
 */
#define PAGECOLOR_CPU0_CACHE_DIR "/sys/devices/system/cpu/cpu0/cache"
#define PAGECOLOR_MAX_CACHE_INDEX 16	/* index0..index15 */
/* pagecolor_geometry() of the cache described under cache_dir. */
int pagecolor_geometry_dir(const char *cache_dir, struct pagecolor_geometry *geo);
/*
 * The last-level cache under cache_dir: the indexN of the highest level
 * whose type is not Instruction, and that level.  0, or -1 with errno
 * ENOENT when none is listed.
 */
int pagecolor_llc_index(const char *cache_dir, int *index, int *level);
/*
 * A cache size as sysfs prints it: decimal digits, then an optional unit
 * K, M or G (either case, powers of 1024), then optional white space (the
 * newline).  "32K", "1024K\n", "8M" and "8192K" are sizes; "-1", "8 M",
 * "8MB" and "" are not.  0 with *bytes set, or -1 with errno EINVAL (not a
 * size) or ERANGE (too large).
 */
int pagecolor_parse_size(const char *text, long long *bytes);

#ifdef __cplusplus
}
#endif

#endif /* PAGECOLOR_H */
