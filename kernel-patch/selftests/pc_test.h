/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the page colouring selftests: TAP output in the
 * kselftest style, colour checks over /proc/self/pagemap, dmesg scanning.
 */
#ifndef PC_TEST_H
#define PC_TEST_H

#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/kernel-page-flags.h>	/* KPF_*: /proc/kpageflags bits */

#include "pagecolor.h"

/* kselftest exit codes */
#define KSFT_PASS	0
#define KSFT_FAIL	1
#define KSFT_SKIP	4

extern int pc_nr_colors;
extern long pc_page_size;

/* TAP */
void tap_plan(int n);
void tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print remaining "not ok" for a bailed-out plan and exit with the result. */
int tap_finish(void);
/*
 * Start a test program: print the TAP header.  When page colouring is not
 * supported, print "1..0 # SKIP ..." and exit KSFT_SKIP.
 */
void pc_init(int plan);

/* Result of checking a range against a colour set. */
struct pc_check {
	size_t pages;		/* pages examined */
	size_t absent;		/* not present in pagemap */
	size_t bad;		/* present with a colour outside the set */
	int distinct;		/* number of distinct colours seen */
	int first_bad_color;	/* -1 if none */
	size_t first_bad_page;
};
/*
 * Examine npages at addr.  Returns 0, or -1 if pagemap could not be read.
 * Pages found absent are read again, up to PC_ABSENT_TRIES times 5 ms
 * apart: a page that compaction (kcompactd, in the background) is moving
 * has a migration entry for a PTE for that moment, and pagemap shows no
 * frame.  Since patch 13 compaction moves coloured pages too.
 */
#define PC_ABSENT_TRIES	20
int pc_check_range(const void *addr, size_t npages, const pagecolor_set_t *allowed,
		   struct pc_check *res);
/* ok when every page is present and allowed; prints details otherwise. */
int pc_range_ok(const void *addr, size_t npages, const pagecolor_set_t *allowed,
		const char *what);

/*
 * A colour's share of memory in pages: all pages over nr_colors.  A
 * colour's free frames are somewhat fewer (what the kernel holds).
 */
size_t pc_color_share(void);
/*
 * How many colours hold @pages with half as much again to spare: the
 * fewest w with w * pc_color_share() >= 3 * pages / 2 (1 when one does).
 */
int pc_colors_holding(size_t pages);

/* CLOCK_MONOTONIC in seconds. */
double pc_now(void);

/*
 * The byte a test writes to page @i: never 0, so that no test page is all
 * zeroes (6.12 neither writes a zero page to swap nor keeps a split huge
 * page's zero-filled pages: it maps the shared zero page there).
 */
static inline char pc_page_byte(size_t i)
{
	return (char)(1 + i % 255);
}

/* Write one byte to every page (pc_page_byte()). */
void pc_touch(void *addr, size_t npages);

/*
 * Fork a child that runs fn(arg) (which _exits on failure), says it is
 * ready and then waits to be killed; returns its pid once it is ready,
 * -1 (the child reaped) when it is not.
 */
pid_t pc_start_holder(void (*fn)(void *), void *arg);

/*
 * Map npages private anonymous pages bound to the colours in list (pc_set
 * syntax) and touch them; NULL on error.
 */
char *pc_bound_pages(const char *list, size_t npages);

/* A child's exit status: a fault found no page of its colours (SIGBUS). */
#define PC_EXIT_SIGBUS	42

/*
 * In a child process: map npages private anonymous pages (MAP_NORESERVE)
 * bound to the colours in list.  Exits with @fail when the mapping or the
 * policy cannot be made; a later fault that finds no page of those colours
 * exits with PC_EXIT_SIGBUS.
 */
char *pc_child_bound(const char *list, size_t npages, int fail);
/* pc_child_bound(), then every page touched. */
char *pc_child_bound_touch(const char *list, size_t npages, int fail);

/*
 * In a child process: map @npages private anonymous pages (no THP) bound
 * to colour @color alone and touch them one by one, writing each page's
 * frame number to @out (a uint64_t) once touched, so that the parent
 * learns how far it got even when it is killed.  A fault that finds no
 * page of the colour kills it (SIGBUS).  With @hold >= 0 it then holds its
 * pages until @hold reads end of file (the parent closes its end).  Exits
 * 20 when the mapping or the policy cannot be made, 21 when a frame cannot
 * be read or written, else 0.
 */
void pc_child_touch_pfns(int color, size_t npages, int out, int hold)
	__attribute__((noreturn));

/*
 * The number after "@field:" in /proc/self/smaps for the VMA that starts at
 * @addr (e.g. "Swap" in kB, "THPeligible"); -1 when there is none.
 */
long pc_smaps_value(const void *addr, const char *field);

/* The start of @pid's VMA of @npages pages bound to @colours (color_maps), or NULL. */
char *pc_bound_vma(pid_t pid, const char *colours, size_t npages);

/*
 * A child the parent drives over two pipes: fork; the child runs
 * body(arg, cmd, ans) and _exits with what it returns.  body reads the
 * parent's requests from @cmd and writes its answers to @ans, the first of
 * them the address of its mapping, which the parent gets in *addr (NULL
 * when the child failed before sending it).  Returns the child's pid (-1
 * when it could not start); *cmd and *ans are the parent's ends.
 */
pid_t pc_child_start(int (*body)(void *arg, int cmd, int ans), void *arg,
		     char **addr, int *cmd, int *ans);
/*
 * Stop such a child: with @answer, first ask it once (a byte on cmd) and
 * put its size_t answer there ((size_t)-1 when none came); then close the
 * pipes, SIGKILL and reap it.
 */
void pc_child_stop(pid_t pid, int cmd, int ans, size_t *answer);

/* Make a set from list syntax; aborts the test on a bad list. */
pagecolor_set_t pc_set(const char *list);

/*
 * Count lines in the kernel log containing BUG:, WARNING:, Oops, KASAN,
 * "page allocation failure" is NOT counted.  Returns the count, -1 when the
 * log cannot be read.  Prints offending lines as TAP diagnostics.
 */
int pc_dmesg_trouble(void);
/*
 * Lines of the kernel log containing @needle: their number (-1 if the log
 * cannot be read); the last one is copied to @last when it is not NULL.
 */
int pc_dmesg_find(const char *needle, char *last, size_t len);

/* The largest order whose block has at most @pages pages (log2, rounded down). */
int pc_order_of(unsigned long pages);
/* Sum of per-colour free pages (the sysfs file), -1 on error. */
long long pc_free_total(unsigned long *counts, int max);
/* Free pages: MemFree plus the per-CPU free lists (/proc/zoneinfo), -1 on error. */
long long pc_memfree_pages(void);
/* A /proc/meminfo field ("Cached", "MemTotal", ...) in kB, -1 if absent. */
long long pc_meminfo_kb(const char *key);
/* A /proc/vmstat counter ("nr_free_pages", ...), -1 if absent. */
long long pc_vmstat(const char *key);
/* The /proc/vmstat counters @keys[0..n) into @v. */
void pc_vmstats(const char *const *keys, size_t n, long long *v);
/*
 * Print "# @what: key +growth ..." for @keys since @before (read then by
 * pc_vmstats()); the growths also go to @growth unless it is NULL.
 */
void pc_vmstats_growth(const char *what, const char *const *keys, size_t n,
		       const long long *before, long long *growth);
/*
 * Wait until no page is parked in the colour lists (the "parked" counter
 * is 0), at most @timeout_ms; with @drain, write "drain" first.  Returns
 * the last count read (0: done), -1 if the counter cannot be read.
 */
long long pc_wait_parked(int drain, int timeout_ms);
/*
 * Wait until no zone has a watermark boost and every kswapd thread sleeps,
 * at most @timeout_ms: 0 when it does, -1 otherwise (with a diagnostic of
 * what it saw).  A boost kswapd sleeps through for 2 s is one nothing woke
 * it for: the wait then takes free memory below the low watermark for a
 * moment, which does (kswapd reclaims some page cache for it).
 */
int pc_wait_kswapd_idle(int timeout_ms);
/*
 * Free pages above watermark @mark ("min", "low", "high"; boost included,
 * as /proc/zoneinfo prints them), summed over the zones user pages come
 * from (every zone but ZONE_DMA, which its lowmem reserve keeps from
 * them); negative below it, LLONG_MIN when /proc/zoneinfo is unreadable.
 */
long long pc_free_above(const char *mark);
/* Drop caches / compact if available, then sleep a little. */
void pc_settle(void);

/* Read [off, off + bytes) of @fd through the page cache: the bytes read. */
long long pc_read_range(int fd, long long off, long long bytes);

/* Write text to a sysfs or procfs file: 0, or -1 with errno. */
int pc_write_file(const char *path, const char *text);
/* The first line of @path, newline cut, into @buf; left as it is when unreadable. */
void pc_read_line(const char *path, char *buf, int len);

#define PC_CGROOT	"/sys/fs/cgroup"
/*
 * Make the cgroup v2 group @dir (a directory under /sys/fs/cgroup, which
 * is mounted when it is not) with the memory controller: 0, or -1 with a
 * diagnostic.
 */
int pc_cgroup_make(const char *dir);
/*
 * The number after "@key " in the group @dir's file @file (a file of one
 * number, as memory.current, with @key NULL), -1 if absent.
 */
long long pc_cgroup_value(const char *dir, const char *file, const char *key);

/*
 * A diagnostic line of what holds colour @color's frames (/proc/kpageflags):
 * when a reclaim aimed at the colour finds too little, what it met.
 */
void pc_color_census(int color);

/* sysfs "parked": the pages in the colour lists, -1 on error. */
long long pc_parked(void);

/* The frame's flags from /proc/kpageflags (KPF_* bits); 0 on error. */
uint64_t pc_kpageflags(uint64_t pfn);

#define PC_THP_DEFRAG	"/sys/kernel/mm/transparent_hugepage/defrag"
#define PC_HUGE		(2UL << 20)
/* Is the (resident) page at addr part of a transparent huge page? */
int pc_is_thp(const void *addr);
/*
 * @len bytes (a multiple of PC_HUGE) of anonymous memory, aligned to and
 * advised for transparent huge pages, nothing faulted in; NULL on error.
 * munmap(area, @len) frees all of it.
 */
char *pc_huge_area(size_t len);
/*
 * Fault in the huge pages of @h (from pc_huge_area()) in turn, each taking
 * a free block of a huge page's size, until @len is done or @misses of
 * them fell back to small pages.  Without @pfns every fallback counts;
 * with it only those while no such block is left outside ZONE_DMA (one
 * beside free blocks lost a race; kswapd may also free more), and
 * @pfns[i] is the frame of the i-th huge page, 0 where it fell back.
 * THP defrag should be "never" so that compaction does not make more
 * blocks.  Returns the huge pages taken.
 */
size_t pc_take_huge(char *h, size_t len, uint64_t *pfns, int misses);
/*
 * Take every free block a huge page fits in; the memory stays taken until
 * the process exits.  Returns the huge pages taken.
 */
size_t pc_eat_large_blocks(void);
/*
 * Free memory in blocks of at least @order, in units of 2^order pages
 * (from /proc/buddyinfo), over all zones but @skip_zone (NULL: none); -1
 * on error.
 */
long pc_free_blocks(int order, const char *skip_zone);

/*
 * Set the state a test that needs refills starts from: give parked pages
 * back, compact (vm.compact_memory) and, while fewer than @want free blocks
 * of @order or more are listed, drop caches and wait, at most @rounds
 * rounds.  Pages a process that just exited freed wait on per-cpu lists,
 * out of the buddy lists, until the kernel drains them: a refill's block
 * may not form at once.  Returns the rounds run; *@blocks the blocks
 * found last, *@parked (when not NULL) what was parked after the last
 * give-back.
 */
int pc_make_free_blocks(int order, long want, int rounds, long *blocks, long long *parked);

/* Pages per pageblock ("Pages per block" of /proc/pagetypeinfo), 0 if unreadable. */
unsigned long pc_pageblock_pages(void);
/*
 * Node 0's zone @zone (e.g. "DMA32") in /proc/pagetypeinfo: the free memory
 * of migratetype @type ("Movable", "HighAtomic", ...) in blocks of order
 * @order or more, in units of 2^@order pages (with @order 0: pages); -1 on
 * error.
 */
long long pc_pagetype_free(const char *zone, const char *type, int order);
/* The pageblocks of migratetype @type in node 0's zone @zone, -1 on error. */
int pc_pagetype_blocks(const char *zone, const char *type);
/*
 * One pass over page_owner (debugfs mounted, boot with page_owner=on),
 * which prints every allocated page, boot-time ones too, and never a free
 * one ("Page allocated via order N", then "PFN p type T Block b type T";
 * read() returns one record a call).  Marks in @used, one byte per frame
 * of [@start, @end), the frames an allocation holds; sets @types[b], for
 * each pageblock b below @nblocks an allocated page lies in, to the first
 * letter of its type ('U'nmovable, 'M'ovable, 'R'eclaimable, 'H'ighAtomic,
 * 'C'MA, 'I'solate; 0 where none does).  The records read, or -1 with
 * errno when page_owner cannot be opened.
 */
long pc_owner_scan(uint64_t start, uint64_t end, unsigned char *used, char *types,
		   size_t nblocks);
/* One page_owner record (pc_owner_at()). */
struct pc_owner {
	unsigned int order;		/* of the allocation */
	unsigned long long pfn;		/* its first frame */
	unsigned long long block;	/* pageblock number */
	long pid;			/* the allocating task, -1 if not printed */
	char type[32];			/* the pageblock's migratetype now */
};
/*
 * page_owner's record of allocated frame @pfn, read at offset @pfn from
 * @fd (/sys/kernel/debug/page_owner, open): 0 with @o filled in, -1 when
 * the frame is not allocated, @pfn is 0 or @fd is not open.
 */
int pc_owner_at(int fd, uint64_t pfn, struct pc_owner *o);
/*
 * The first letter of the type the pageblock of allocated frame @pfn has
 * now (page_owner read at offset @pfn: its record, as pc_owner_scan()
 * reads it); 0 when the frame is not allocated or page_owner cannot be read.
 */
char pc_owner_block_type(uint64_t pfn);

/* Node 0's zone from /proc/zoneinfo, in pages. */
struct pc_zone_info {
	long long free, min, low, high, spanned, start_pfn, protection;
	int found;
};

/*
 * Node 0's zone @name (e.g. "DMA32"); protection is the largest of the
 * zone's lowmem reserves, the one against the highest zone's allocations.
 * Allocates nothing (a test may sample it while memory runs out).
 * 0, or -1 when there is no such zone.
 */
int pc_zone_info(const char *name, struct pc_zone_info *zi);

/* The NUMA node whose zones span @pfn (/proc/zoneinfo), -1 if none. */
int pc_pfn_node(uint64_t pfn);
/* The first CPU of NUMA node @node, -1 if it has none. */
int pc_node_cpu(int node);
/* Run the calling process on @cpu only: 0, or -1 with errno. */
int pc_run_on(int cpu);
/* Fold the per-cpu vmstat counters into the global ones (vm.stat_refresh). */
void pc_stat_refresh(void);

#endif
