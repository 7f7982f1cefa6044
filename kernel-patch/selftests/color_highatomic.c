// SPDX-License-Identifier: GPL-2.0
/*
 * The colour allocator's frame search never takes a page from the
 * highatomic reserve (issue 29 item 5).
 *
 * The page allocator keeps a few pageblocks (MIGRATE_HIGHATOMIC) for
 * high-order atomic allocations and hands their pages to nobody else.
 * take_free_page_color() takes free pages off the buddy lists itself: its
 * free-list scan looks only at the lists a movable page may fall back to,
 * but its frame walk looks at every free frame of the allowed colours, and
 * the series before f31e7e6 took one from any pageblock that was not
 * isolated, the highatomic ones included.
 *
 * Run with page_owner=on (page_owner prints each page's pageblock type,
 * the only place user space sees it).  The test:
 *  1. makes highatomic pageblocks as the kernel does, by high-order
 *     GFP_ATOMIC allocations in the slow path: with most memory taken and
 *     vm.min_free_kbytes raised so that free memory lies between the min
 *     and low watermarks, it writes 256 ptys full (a pty's flip buffers are
 *     kmalloc-4k objects, GFP_ATOMIC, from order-3 slabs); then closes
 *     seven in eight of them, which frees most of those slabs into the
 *     reserved pageblocks as blocks smaller than a pageblock.  With the
 *     caches dropped, direct reclaim frees nothing, and the page allocator
 *     unreserves a highatomic pageblock only after a reclaim that freed
 *     something: the reserve stays as it is;
 *  2. picks the colour c the highatomic pageblocks have most free frames
 *     of, and holds every other free frame of c (mlocked, compaction of
 *     unevictable pages off) but what is left at the min watermark: one
 *     page in every nr_colors, so no free block of a refill's size is left
 *     either, and a search for c has to walk the frames;
 *  3. forks a child bound to c alone (OOM-killed first: oom_score_adj
 *     1000, the parent -1000) that touches as many pages as the free
 *     frames of c outside the reserve and the refill blocks left give,
 *     and as many again as the reserve holds of c, sending each page's
 *     frame to the parent.
 * None of the child's frames may lie in a pageblock that is highatomic
 * before and after the child.  The old walk takes the reserve's frames of
 * c once the others are gone; the fixed one leaves them, and the child is
 * killed.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define ZONE		"DMA32"
#define NPTY		256
#define KEEP_OPEN	8	/* one pty in this many stays open */
#define PAGE_OWNER	"/sys/kernel/debug/page_owner"
#define MIN_FREE	"/proc/sys/vm/min_free_kbytes"
#define UNEVICTABLE	"/proc/sys/vm/compact_unevictable_allowed"
#define PROACTIVE	"/proc/sys/vm/compaction_proactiveness"
#define CHUNK		256	/* pages a fill touches between two looks */
#define FLOOR_MARGIN	768	/* a fill stops this far above min */
#define DROP_CACHES	"/proc/sys/vm/drop_caches"
#define PLAN		4
#ifndef KPF_RESERVED
#define KPF_RESERVED	32	/* include/linux/kernel-page-flags.h: not in uapi */
#endif

static int pb_order, block_order, nblocks;
static unsigned long long zone_start, zone_end;

/* Anonymous memory a fill touches page by page. */
struct fill {
	char *p;
	size_t len;		/* pages mapped */
	size_t touched;
	size_t kept;		/* pages of the kept colour, mlocked */
};

/*
 * Zone ZONE's free pages as an allocation without ALLOC_HIGHATOMIC sees
 * them: the watermark check subtracts the whole reserve
 * (nr_reserved_highatomic: its pageblocks' pages), not only its free ones.
 */
static long long usable_free(struct pc_zone_info *zi)
{
	if (pc_zone_info(ZONE, zi))
		return -1;
	return zi->free - ((long long)pc_pagetype_blocks(ZONE, "HighAtomic") << pb_order);
}

/*
 * Touch pages of @f until ZONE's free pages outside the reserve are at
 * most @stop; never below min + FLOOR_MARGIN - CHUNK, where an allocation
 * would reclaim (and a failed reclaim unreserves highatomic pageblocks).
 */
static void fill_to(struct fill *f, long long stop)
{
	struct pc_zone_info zi;
	long long u;

	while (f->touched + CHUNK <= f->len) {
		u = usable_free(&zi);
		if (u < 0 || u <= stop || u <= zi.min + FLOOR_MARGIN)
			break;
		pc_touch(f->p + f->touched * pc_page_size, CHUNK);
		f->touched += CHUNK;
	}
}

static int fill_map(struct fill *f)
{
	f->len = (size_t)pc_meminfo_kb("MemTotal") * 1024 / pc_page_size;
	f->touched = f->kept = 0;
	f->p = mmap(NULL, f->len * pc_page_size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (f->p == MAP_FAILED)
		return -1;
	if (madvise(f->p, f->len * pc_page_size, MADV_NOHUGEPAGE))
		tap_diag("MADV_NOHUGEPAGE: %s", strerror(errno));
	return 0;
}

/* Keep (mlock) @f's pages of @color, give the others back. */
static void fill_keep(struct fill *f, int color)
{
	uint64_t *pfns = calloc(f->touched, sizeof(*pfns));
	size_t i, run = 0;

	if (!pfns || pagecolor_pfns(f->p, f->touched, pfns)) {
		tap_diag("pagemap: %s", strerror(errno));
		free(pfns);
		return;
	}
	for (i = 0; i <= f->touched; i++) {
		int keep = i < f->touched && pfns[i] &&
			   pagecolor_pfn_color(pfns[i], pc_nr_colors) == color;

		if (i < f->touched && !keep) {
			run++;
			continue;
		}
		if (run)
			madvise(f->p + (i - run) * pc_page_size, run * pc_page_size,
				MADV_DONTNEED);
		run = 0;
		if (keep)
			f->kept += !mlock(f->p + i * pc_page_size, pc_page_size);
	}
	free(pfns);
}

/* Write every pty master until it takes no more: its bytes. */
static long long fill_ptys(const int *fd, int n)
{
	static char buf[4096];
	long long bytes = 0;
	ssize_t w;
	int i;

	memset(buf, 'x', sizeof(buf));
	for (i = 0; i < n; i++)
		while ((w = write(fd[i], buf, sizeof(buf))) > 0)
			bytes += w;
	return bytes;
}

/*
 * Mark in @used the frames of ZONE an allocation holds and in @ha the
 * pageblocks page_owner calls highatomic; returns how many of those it saw
 * (a pageblock with no allocated page has no record).
 */
static int scan_owner(unsigned char *used, char *ha)
{
	int b, n = 0;

	if (pc_owner_scan(zone_start, zone_end, used, ha, nblocks) < 0)
		return -1;
	for (b = 0; b < nblocks; b++) {
		ha[b] = ha[b] == 'H';
		n += ha[b];
	}
	return n;
}

/*
 * Count the free frames of ZONE by colour (no allocation holds them, and
 * they are not reserved or a hole), those in the pageblocks marked in @ha
 * into @in, the others into @out.
 */
static void free_frames(const unsigned char *used, const char *ha, size_t *in, size_t *out)
{
	const uint64_t not_free = 1ULL << KPF_RESERVED | 1ULL << KPF_NOPAGE | 1ULL << KPF_SLAB;
	int fd = open("/proc/kpageflags", O_RDONLY);
	unsigned long long pfn;
	uint64_t flags[512];

	memset(in, 0, sizeof(*in) * pc_nr_colors);
	memset(out, 0, sizeof(*out) * pc_nr_colors);
	if (fd < 0)
		return;
	for (pfn = zone_start; pfn < zone_end; pfn += 512) {
		ssize_t n = pread(fd, flags, sizeof(flags), (off_t)(pfn * sizeof(uint64_t)));
		int i;

		for (i = 0; i < n / (ssize_t)sizeof(uint64_t) && pfn + i < zone_end; i++) {
			int c = pagecolor_pfn_color(pfn + i, pc_nr_colors);

			if (used[pfn + i - zone_start] || (flags[i] & not_free))
				continue;
			if (ha[(pfn + i) >> pb_order])
				in[c]++;
			else
				out[c]++;
		}
	}
	close(fd);
}

int main(void)
{
	static size_t in[PAGE_COLOR_MAX_COLORS], out[PAGE_COLOR_MAX_COLORS];
	char min_free[32] = "", unevictable[32] = "1", proactive[32] = "20";
	size_t want, got = 0, bad = 0, from_ha = 0, residue;
	long long refill_blocks;
	int fd[NPTY], npty = 0, i, c, blocks0, blocks1;
	long long bytes, ha_free0;
	struct fill f1, f2;
	struct pc_zone_info zi;
	char *ha0, *ha1, buf[32];
	unsigned char *used;
	int pipefd[2], st = -1;
	uint64_t *pfns;
	size_t k;
	pid_t pid;

	pc_init(PLAN);
	mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	if (access(PAGE_OWNER, R_OK) || pc_zone_info(ZONE, &zi)) {
		for (i = 0; i < PLAN; i++)
			tap_skip("%s: %s (boot with page_owner=on), or no zone %s", PAGE_OWNER,
				 strerror(errno), ZONE);
		return tap_finish();
	}
	pb_order = pc_order_of(pc_pageblock_pages());
	block_order = pc_order_of(pc_nr_colors);
	zone_start = zi.start_pfn;
	zone_end = zi.start_pfn + zi.spanned;
	nblocks = (int)(zone_end >> pb_order) + 1;
	ha0 = calloc(nblocks, 1);
	ha1 = calloc(nblocks, 1);
	used = calloc(zone_end - zone_start, 1);
	pc_write_file("/proc/self/oom_score_adj", "-1000");
	pc_wait_parked(1, 60000);
	pc_settle();
	pc_read_line(MIN_FREE, min_free, sizeof(min_free));
	pc_read_line(UNEVICTABLE, unevictable, sizeof(unevictable));
	pc_read_line(PROACTIVE, proactive, sizeof(proactive));
	pc_write_file(PROACTIVE, "0");
	pc_write_file(UNEVICTABLE, "0");

	/* 1. highatomic pageblocks, from pty flip buffers (ptmx needs devpts) */
	mkdir("/dev/pts", 0755);
	mount("devpts", "/dev/pts", "devpts", 0, "ptmxmode=0666");
	for (npty = 0; npty < NPTY; npty++) {
		int m = posix_openpt(O_RDWR | O_NOCTTY | O_NONBLOCK);

		if (m >= 0 && !grantpt(m) && !unlockpt(m)) {
			fd[npty] = m;
			continue;
		}
		tap_diag("pty %d: %s", npty, strerror(errno));
		if (m >= 0)
			close(m);
		break;
	}
	if (fill_map(&f1) || !ha0 || !ha1 || !used) {
		tap_diag("mmap/calloc: %s", strerror(errno));
		return tap_finish();
	}
	fill_to(&f1, zi.low + 13000);
	usable_free(&zi);
	snprintf(buf, sizeof(buf), "%lld", (zi.free * 4 / 5 + 50) * (pc_page_size / 1024));
	pc_write_file(MIN_FREE, buf);
	bytes = fill_ptys(fd, npty);
	pc_write_file(MIN_FREE, min_free);
	for (i = 0; i < npty; i++)
		if (i % KEEP_OPEN)
			close(fd[i]);
	blocks0 = pc_pagetype_blocks(ZONE, "HighAtomic");
	tap_diag("%d ptys written (%lld bytes) with min_free_kbytes %s, free %lld pages: "
		 "%d highatomic pageblocks, %lld free pages in them after closing %d of them",
		 npty, bytes, buf, zi.free, blocks0, pc_pagetype_free(ZONE, "HighAtomic", 0),
		 npty - (npty + KEEP_OPEN - 1) / KEEP_OPEN);

	munmap(f1.p, f1.len * pc_page_size);

	/* 2. every free frame of c outside the reserve held */
	pc_write_file(DROP_CACHES, "3");
	blocks1 = scan_owner(used, ha0);
	free_frames(used, ha0, in, out);
	for (c = 0, i = 1; i < pc_nr_colors; i++)
		if (in[i] > in[c])
			c = i;
	ha_free0 = pc_pagetype_free(ZONE, "HighAtomic", 0);
	if (fill_map(&f2)) {
		tap_diag("mmap: %s", strerror(errno));
		return tap_finish();
	}
	fill_to(&f2, 0);
	fill_keep(&f2, c);
	pc_write_file(DROP_CACHES, "3");
	scan_owner(used, ha1);
	free_frames(used, ha0, in, out);
	residue = out[c];
	refill_blocks = pc_pagetype_free(ZONE, "Unmovable", block_order) +
			pc_pagetype_free(ZONE, "Movable", block_order) +
			pc_pagetype_free(ZONE, "Reclaimable", block_order);
	if (refill_blocks < 0)
		refill_blocks = 0;
	want = residue + (size_t)refill_blocks + in[c] + 4;
	tap_ok(blocks1 >= 1 && in[c] >= 1,
	       "%d highatomic pageblocks (page_owner sees %d) hold %lld free pages, %zu of "
	       "colour %d (the child's); outside them %zu free frames of the colour and %lld "
	       "free blocks of %d pages (fill: %zu pages touched, %zu kept)",
	       blocks0, blocks1, ha_free0, in[c], c, residue, refill_blocks, pc_nr_colors,
	       f2.touched, f2.kept);

	/* 3. the child; its frames count where their pageblock stayed highatomic */
	pfns = calloc(want, sizeof(*pfns));
	if (!pfns || pipe(pipefd))
		return tap_finish();
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		pc_write_file("/proc/self/oom_score_adj", "1000");
		pc_child_touch_pfns(c, want, pipefd[1], -1);
	}
	close(pipefd[1]);
	while (pid > 0 && got < want && read(pipefd[0], &pfns[got], sizeof(*pfns)) == sizeof(*pfns))
		got++;
	close(pipefd[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	blocks1 = scan_owner(used, ha1);
	for (i = 0; i < nblocks; i++)
		ha0[i] &= ha1[i];
	for (k = 0; k < got; k++) {
		bad += pagecolor_pfn_color(pfns[k], pc_nr_colors) != c;
		from_ha += (pfns[k] >> pb_order) < (uint64_t)nblocks && ha0[pfns[k] >> pb_order];
	}
	free_frames(used, ha0, in, out);
	tap_diag("child: %zu of %zu pages (status 0x%x%s); highatomic pageblocks %d, their "
		 "free pages %lld -> %lld, of colour %d %zu", got, want, st,
		 WIFSIGNALED(st) ? (WTERMSIG(st) == SIGKILL ? ", killed" : ", signalled") : "",
		 blocks1, ha_free0, pc_pagetype_free(ZONE, "HighAtomic", 0), c, in[c]);
	tap_ok(bad == 0, "the child's %zu pages are all of colour %d (%zu not)",
	       got, c, bad);
	tap_ok(from_ha == 0, "none of them from a pageblock highatomic before and after "
	       "(%zu)", from_ha);

	munmap(f2.p, f2.len * pc_page_size);
	for (i = 0; i < npty; i += KEEP_OPEN)
		close(fd[i]);
	pc_write_file(UNEVICTABLE, unevictable);
	pc_write_file(PROACTIVE, proactive);
	pc_settle();
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
